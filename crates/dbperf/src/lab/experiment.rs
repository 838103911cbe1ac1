//! The experiment file (TOML): what it may say, how it is read, and every check that can be
//! made without touching a server. Errors point at `file:line:column` and say what was
//! expected.
//!
//! ```toml
//! name = "checkpoint-stability"      # default: the file's stem
//! repetitions = 3
//! duration = "60s"                   # per point; also warmup, report_interval
//! warmup = "10s"
//! order = "shuffled"                 # or "stable" (the default)
//! prewarm = true                     # read the tables into memory after every start
//!
//! [[server]]
//! id = "mariadb-10.11"               # a `dbperf server list --available` id (postgres-17, ...)
//! settings = { innodb_buffer_pool_size = "1G" }
//! jemalloc = false
//!
//! [variants]                         # every combination of these values is a variant
//! innodb_doublewrite = ["ON", "OFF"]
//! innodb_io_capacity = [200, 2000]
//!
//! [[variant]]                        # or name variants one by one
//! name = "small-redo"
//! settings = { innodb_log_file_size = "64M" }
//!
//! [[pinning]]                        # optional: CPU sets as another axis
//! name = "separate"
//! server_cpus = "0"
//! client_cpus = "1"
//!
//! [[workload]]
//! test = "oltp_read_write"
//! tables = 8
//! table_size = 100000                # or data_vs_buffer_pool = 2.0
//! users = [1, 4, 16, 64]
//! options = { range_size = 100 }     # any other sysbench option
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::{Spanned, Value};

pub use crate::cpus::CpuSet;
use crate::workloads::sysbench::options::Test;

/// A file that could not be read or does not describe a valid experiment.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `file:line:column: message`.
    #[error("{path}:{line}:{column}: {message}")]
    At {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Whole { path: PathBuf, message: String },
}

/// How points are ordered inside the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Servers, variants and pinnings in file order; inside each, repetition by repetition.
    Stable,
    /// Groups and the points inside each group in a seeded random order, to spread drift.
    Shuffled,
}

/// A duration written as seconds (`60`) or with a unit (`"90s"`, `"5m"`, `"1h"`, `"500ms"`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Secs(f64);

impl<'de> Deserialize<'de> for Secs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Float(f64),
            Text(String),
        }
        let secs = match Raw::deserialize(d)? {
            Raw::Int(n) => n as f64,
            Raw::Float(f) => f,
            Raw::Text(s) => parse_duration(&s).map_err(serde::de::Error::custom)?,
        };
        if !(secs.is_finite() && secs >= 0.0) {
            return Err(serde::de::Error::custom("expected a duration of 0 or more seconds"));
        }
        Ok(Secs(secs))
    }
}

/// Parses `90`, `90s`, `1.5m`, `2h`, `250ms`.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("expected a duration like \"60s\", \"5m\" or 90, got {s:?}"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("unknown duration unit {u:?} in {s:?} (use ms, s, m or h)")),
    };
    Ok(n * scale)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Option<Spanned<String>>,
    description: Option<String>,
    repetitions: Option<Spanned<u32>>,
    duration: Option<Secs>,
    warmup: Option<Secs>,
    report_interval: Option<Secs>,
    order: Option<Order>,
    seed: Option<u64>,
    prewarm: Option<bool>,
    #[serde(default, rename = "server")]
    servers: Vec<Spanned<RawServer>>,
    variants: Option<Spanned<BTreeMap<String, Spanned<Vec<Value>>>>>,
    #[serde(default, rename = "variant")]
    variant_list: Vec<Spanned<RawVariant>>,
    #[serde(default, rename = "pinning")]
    pinnings: Vec<Spanned<RawPinning>>,
    #[serde(default, rename = "workload")]
    workloads: Vec<Spanned<RawWorkload>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    id: Spanned<String>,
    label: Option<String>,
    #[serde(default)]
    settings: BTreeMap<String, Spanned<Value>>,
    #[serde(default)]
    jemalloc: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: Spanned<String>,
    #[serde(default)]
    settings: BTreeMap<String, Spanned<Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinning {
    name: Spanned<String>,
    server_cpus: Option<Spanned<String>>,
    client_cpus: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkload {
    test: Spanned<String>,
    tables: Option<u32>,
    table_size: Option<u32>,
    data_vs_buffer_pool: Option<Spanned<f64>>,
    users: Spanned<Vec<u32>>,
    duration: Option<Secs>,
    warmup: Option<Secs>,
    #[serde(default)]
    options: BTreeMap<String, Spanned<Value>>,
}

/// One server of the experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Catalog id (`mariadb-10.11`, `mysql-8.0.31`, ...), aliases resolved.
    pub id: String,
    /// The catalog entry.
    pub spec: &'static crate::server::ServerSpec,
    /// Name in tables; the id unless the file gives a label.
    pub label: String,
    /// Settings for every start of this server, in file order.
    pub settings: Vec<(String, String)>,
    /// Start the server with Debian's libjemalloc2 preloaded.
    pub jemalloc: bool,
}

/// A named set of settings applied on top of the server's own.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub name: String,
    pub settings: Vec<(String, String)>,
}

/// Where server and client run. `None` means anywhere.
#[derive(Debug, Clone, PartialEq)]
pub struct Pinning {
    pub name: String,
    pub server_cpus: Option<CpuSet>,
    pub client_cpus: Option<CpuSet>,
}

/// How many rows each table gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DataSize {
    /// Exactly this many rows per table.
    Rows(u32),
    /// Data about this many times the server's buffer pool (rows computed per server).
    VsBufferPool(f64),
}

/// One workload of the experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    pub test: Test,
    pub tables: u32,
    pub size: DataSize,
    pub users: Vec<u32>,
    pub duration: Duration,
    pub warmup: Duration,
    /// Further sysbench options, passed as `--key=value`.
    pub options: Vec<(String, String)>,
}

/// A whole, checked experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    pub name: String,
    pub description: Option<String>,
    pub path: PathBuf,
    pub repetitions: u32,
    pub report_interval: Duration,
    pub order: Order,
    pub seed: u64,
    /// Run `prewarm` after every server start (default true).
    pub prewarm: bool,
    pub servers: Vec<ServerSpec>,
    pub variants: Vec<Variant>,
    pub pinnings: Vec<Pinning>,
    pub workloads: Vec<WorkloadSpec>,
}

/// Bytes one sysbench row takes in InnoDB with its `k` index (a table of 1M rows is about
/// 240 MB on disk); used only to turn `data_vs_buffer_pool` into rows.
pub const BYTES_PER_ROW: f64 = 240.0;

/// Sysbench options the lab sets itself, so a workload may not.
const LAB_OWNED_OPTIONS: &[&str] = &[
    "threads",
    "time",
    "warmup_time",
    "report_interval",
    "tables",
    "table_size",
    "target",
    "results_dir",
    "summary_json",
    "mysql_host",
    "mysql_port",
    "mysql_socket",
    "mysql_user",
    "mysql_password",
    "mysql_db",
    "pgsql_host",
    "pgsql_port",
    "pgsql_user",
    "pgsql_password",
    "pgsql_db",
    "events",
];

impl Experiment {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Experiment, ExperimentError> {
        let text = std::fs::read_to_string(path).map_err(|source| ExperimentError::Read {
            path: path.to_owned(),
            source,
        })?;
        Experiment::parse(&text, path)
    }

    /// Parses and checks the text of an experiment file; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Experiment, ExperimentError> {
        let at = |span: Range<usize>, message: String| {
            let (line, column) = line_col(text, span.start);
            ExperimentError::At {
                path: path.to_owned(),
                line,
                column,
                message,
            }
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let message = e.message().trim().to_owned();
            match e.span() {
                Some(span) => at(span, message),
                None => ExperimentError::Whole {
                    path: path.to_owned(),
                    message,
                },
            }
        })?;
        let whole = |message: &str| ExperimentError::Whole {
            path: path.to_owned(),
            message: message.to_owned(),
        };

        let name = match &raw.name {
            Some(n) => {
                check_name(n.get_ref()).map_err(|m| at(n.span(), m))?;
                n.get_ref().clone()
            }
            None => {
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("experiment");
                super::name_safe(stem, &['-', '_'], '-')
            }
        };
        let repetitions = match &raw.repetitions {
            Some(r) if *r.get_ref() == 0 => return Err(at(r.span(), "repetitions must be at least 1".into())),
            Some(r) => *r.get_ref(),
            None => 1,
        };
        let duration = raw.duration.map_or(60.0, |s| s.0);
        let warmup = raw.warmup.map_or(0.0, |s| s.0);
        let report_interval = raw.report_interval.map_or(10.0, |s| s.0);

        if raw.servers.is_empty() {
            return Err(whole(
                "no [[server]]: add at least one, e.g.\n  [[server]]\n  id = \"mariadb-10.11\"",
            ));
        }
        let mut servers: Vec<ServerSpec> = Vec::new();
        for s in &raw.servers {
            let r = s.get_ref();
            let id = r.id.get_ref().trim().to_owned();
            let spec = crate::server::lookup(&id).map_err(|e| at(r.id.span(), e.to_string()))?;
            let label = r.label.clone().unwrap_or_else(|| id.clone());
            if servers.iter().any(|o| o.label == label) {
                return Err(at(
                    s.span(),
                    format!("two servers are both called {label:?}: give one a different `label`"),
                ));
            }
            servers.push(ServerSpec {
                id: spec.id.to_owned(),
                spec,
                label,
                settings: settings(&r.settings, &at)?,
                jemalloc: r.jemalloc,
            });
        }

        let mut variants = Vec::new();
        if let Some(axes) = &raw.variants {
            let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
            for (key, values) in axes.get_ref() {
                if values.get_ref().is_empty() {
                    return Err(at(values.span(), format!("[variants] {key} has no values")));
                }
                let mut next = Vec::new();
                for combo in &combos {
                    for v in values.get_ref() {
                        let v = setting_value(v).map_err(|m| at(values.span(), format!("[variants] {key}: {m}")))?;
                        let mut c = combo.clone();
                        c.push((key.clone(), v));
                        next.push(c);
                    }
                }
                combos = next;
            }
            for c in combos {
                let name = c
                    .iter()
                    .map(|(k, v)| format!("{}={v}", short_key(k)))
                    .collect::<Vec<_>>()
                    .join(",");
                variants.push(Variant { name, settings: c });
            }
        }
        for v in &raw.variant_list {
            let r = v.get_ref();
            check_name(r.name.get_ref()).map_err(|m| at(r.name.span(), m))?;
            if variants.iter().any(|o: &Variant| &o.name == r.name.get_ref()) {
                return Err(at(
                    r.name.span(),
                    format!("two variants are called {:?}", r.name.get_ref()),
                ));
            }
            variants.push(Variant {
                name: r.name.get_ref().clone(),
                settings: settings(&r.settings, &at)?,
            });
        }
        if variants.is_empty() {
            variants.push(Variant {
                name: "default".into(),
                settings: Vec::new(),
            });
        }

        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut pinnings = Vec::new();
        for p in &raw.pinnings {
            let r = p.get_ref();
            check_name(r.name.get_ref()).map_err(|m| at(r.name.span(), m))?;
            let cpus = |c: &Option<Spanned<String>>| -> Result<Option<CpuSet>, ExperimentError> {
                match c {
                    None => Ok(None),
                    Some(s) if s.get_ref().trim() == "shared" || s.get_ref().trim().is_empty() => Ok(None),
                    Some(s) => CpuSet::parse(s.get_ref(), available)
                        .map(Some)
                        .map_err(|m| at(s.span(), m)),
                }
            };
            pinnings.push(Pinning {
                name: r.name.get_ref().clone(),
                server_cpus: cpus(&r.server_cpus)?,
                client_cpus: cpus(&r.client_cpus)?,
            });
        }
        if pinnings.is_empty() {
            pinnings.push(Pinning {
                name: "unpinned".into(),
                server_cpus: None,
                client_cpus: None,
            });
        }

        if raw.workloads.is_empty() {
            return Err(whole(
                "no [[workload]]: add at least one, e.g.\n  [[workload]]\n  test = \"oltp_read_only\"\n  tables = 8\n  table_size = 100000\n  users = [1, 8, 64]",
            ));
        }
        let mut workloads = Vec::new();
        for w in &raw.workloads {
            let r = w.get_ref();
            let test: Test = r.test.get_ref().parse().map_err(|e: String| at(r.test.span(), e))?;
            let size = match (r.table_size, &r.data_vs_buffer_pool) {
                (Some(_), Some(d)) => {
                    return Err(at(
                        d.span(),
                        "give either table_size or data_vs_buffer_pool, not both".into(),
                    ))
                }
                (Some(n), None) => DataSize::Rows(n),
                (None, Some(d)) if !(*d.get_ref() > 0.0 && d.get_ref().is_finite()) => {
                    return Err(at(d.span(), "data_vs_buffer_pool must be a positive number".into()))
                }
                (None, Some(d)) => DataSize::VsBufferPool(*d.get_ref()),
                (None, None) => DataSize::Rows(10_000),
            };
            let users = r.users.get_ref().clone();
            if users.is_empty() || users.contains(&0) {
                return Err(at(
                    r.users.span(),
                    "users must list one or more counts above 0, e.g. [1, 8, 64]".into(),
                ));
            }
            let mut options = Vec::new();
            for (k, v) in &r.options {
                let key = k.replace('-', "_");
                if LAB_OWNED_OPTIONS.contains(&key.as_str()) {
                    return Err(at(
                        v.span(),
                        format!("option {k:?} is set by the lab itself; use the workload's or the file's own keys (tables, table_size, users, duration, warmup)"),
                    ));
                }
                options.push((key, setting_value(v.get_ref()).map_err(|m| at(v.span(), m))?));
            }
            workloads.push(WorkloadSpec {
                test,
                tables: r.tables.unwrap_or(1).max(1),
                size,
                users,
                duration: Duration::from_secs_f64(r.duration.map_or(duration, |s| s.0)),
                warmup: Duration::from_secs_f64(r.warmup.map_or(warmup, |s| s.0)),
                options,
            });
        }

        Ok(Experiment {
            name,
            description: raw.description,
            path: path.to_owned(),
            repetitions,
            report_interval: Duration::from_secs_f64(report_interval.max(1.0)),
            order: raw.order.unwrap_or(Order::Stable),
            seed: raw.seed.unwrap_or(1),
            prewarm: raw.prewarm.unwrap_or(true),
            servers,
            variants,
            pinnings,
            workloads,
        })
    }
}

impl Experiment {
    /// The same experiment cut down to a smoke test: one repetition, 2 s runs without warmup,
    /// the first two user counts, at most 2,000 rows per table. Its name gets `-quick` so its
    /// runs and state stay apart from the real experiment's.
    pub fn quick(mut self) -> Experiment {
        self.name.push_str("-quick");
        self.repetitions = 1;
        self.report_interval = Duration::from_secs(1);
        for w in &mut self.workloads {
            w.duration = Duration::from_secs(2);
            w.warmup = Duration::ZERO;
            w.users.truncate(2);
            w.size = match w.size {
                DataSize::Rows(r) => DataSize::Rows(r.min(2000)),
                DataSize::VsBufferPool(_) => DataSize::Rows(2000),
            };
        }
        self
    }
}

/// `innodb_max_dirty_pages_pct` → `max_dirty_pages_pct`, for short variant names.
fn short_key(key: &str) -> &str {
    key.strip_prefix("innodb_").unwrap_or(key)
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '=' | ','))
    {
        return Err(format!(
            "{name:?} is not a usable name: use letters, digits, `-`, `_` and `.` only"
        ));
    }
    Ok(())
}

/// A TOML setting value as the server's option syntax: booleans become ON/OFF.
fn setting_value(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) if s.trim().is_empty() => Err("the value is empty".into()),
        Value::String(s) => Ok(s.trim().to_owned()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(if *b { "ON" } else { "OFF" }.into()),
        other => Err(format!(
            "expected a string, number or boolean, got a {}",
            other.type_str()
        )),
    }
}

fn settings(
    raw: &BTreeMap<String, Spanned<Value>>,
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Vec<(String, String)>, ExperimentError> {
    raw.iter()
        .map(|(k, v)| {
            let value = setting_value(v.get_ref()).map_err(|m| at(v.span(), format!("setting {k}: {m}")))?;
            crate::server::Setting::parse(&format!("{k}={value}")).map_err(|e| at(v.span(), e.to_string()))?;
            Ok((k.clone(), value))
        })
        .collect()
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Parses a size such as `512M`, `2G`, `1073741824` (the server's option syntax) into bytes.
pub fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    // PostgreSQL spells units with a B (`512MB`, `1GB`, `64kB`).
    let t = match t.strip_suffix('B') {
        Some(rest) if rest.ends_with(|c: char| "kKMGT".contains(c)) => rest,
        _ => t,
    };
    let (num, mult) = match t.chars().last()?.to_ascii_uppercase() {
        'K' => (&t[..t.len() - 1], 1u64 << 10),
        'M' => (&t[..t.len() - 1], 1 << 20),
        'G' => (&t[..t.len() - 1], 1 << 30),
        'T' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Experiment, ExperimentError> {
        Experiment::parse(text, Path::new("exp.toml"))
    }

    const MINIMAL: &str = r#"
[[server]]
id = "mariadb-10.11"

[[workload]]
test = "oltp_read_only"
tables = 2
table_size = 1000
users = [1, 4]
"#;

    #[test]
    fn minimal_file_gets_defaults() {
        let e = parse(MINIMAL).unwrap();
        assert_eq!(e.name, "exp");
        assert_eq!(e.repetitions, 1);
        assert_eq!(e.order, Order::Stable);
        assert_eq!(e.variants.len(), 1);
        assert_eq!(e.variants[0].name, "default");
        assert_eq!(e.pinnings[0].name, "unpinned");
        let w = &e.workloads[0];
        assert_eq!(
            (w.tables, w.size, w.users.clone()),
            (2, DataSize::Rows(1000), vec![1, 4])
        );
        assert_eq!(w.duration, Duration::from_secs(60));
    }

    #[test]
    fn variant_axes_make_every_combination() {
        let text = format!(
            "{MINIMAL}\n[variants]\ninnodb_doublewrite = [true, false]\ninnodb_io_capacity = [200, 2000, 20000]\n"
        );
        let e = parse(&text).unwrap();
        assert_eq!(e.variants.len(), 6);
        assert_eq!(e.variants[0].name, "doublewrite=ON,io_capacity=200");
        assert_eq!(
            e.variants[5].settings,
            vec![
                ("innodb_doublewrite".to_string(), "OFF".to_string()),
                ("innodb_io_capacity".to_string(), "20000".to_string())
            ]
        );
    }

    #[test]
    fn syntax_error_names_line_and_column() {
        let err = parse("repetitions = 3\nduration = \n").unwrap_err().to_string();
        assert!(err.starts_with("exp.toml:2:"), "{err}");
    }

    #[test]
    fn unknown_key_is_pointed_at() {
        let text = MINIMAL.replace("tables = 2", "tabels = 2");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.starts_with("exp.toml:7:1:"), "{err}");
        assert!(err.contains("tabels") && err.contains("expected"), "{err}");
    }

    #[test]
    fn semantic_errors_point_at_the_value() {
        let text = MINIMAL.replace("users = [1, 4]", "users = []");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.starts_with("exp.toml:9:9:"), "{err}");
        let text = MINIMAL.replace("oltp_read_only", "oltp_read_olny");
        let err = parse(&text).unwrap_err().to_string();
        assert!(
            err.starts_with("exp.toml:6:8:") && err.contains("oltp_read_olny"),
            "{err}"
        );
        let text = MINIMAL.replace("table_size = 1000", "table_size = 1000\noptions = { threads = 4 }");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("set by the lab itself"), "{err}");
        let text = MINIMAL.replace(
            "id = \"mariadb-10.11\"",
            "id = \"mariadb-10.11\"\nsettings = { datadir = \"/x\" }",
        );
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.starts_with("exp.toml:4:") && err.contains("datadir"), "{err}");
    }

    #[test]
    fn missing_sections_say_what_to_add() {
        let err = parse("repetitions = 2").unwrap_err().to_string();
        assert!(err.contains("[[server]]"), "{err}");
        let err = parse("[[server]]\nid = \"mariadb-10.11\"\n").unwrap_err().to_string();
        assert!(err.contains("[[workload]]"), "{err}");
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("90").unwrap(), 90.0);
        assert_eq!(parse_duration("1.5m").unwrap(), 90.0);
        assert_eq!(parse_duration("250ms").unwrap(), 0.25);
        assert!(parse_duration("5 fortnights").is_err());
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("1GB"), Some(1 << 30));
        assert_eq!(parse_size("64kB"), Some(64 << 10));
    }
}
