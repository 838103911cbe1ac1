//! The workload kinds an experiment's `[[workload]]` may name (`kind = "sysbench" | "tpcc" |
//! "linkbench" | "tpch" | "pgbench" | "lua"`), each kind's own keys and their checks, and how a
//! kind's data set is restored between points (`restore = "point" | "variant" | "none"`). Users' own
//! scripts (`lua`, pgbench's `files`) are found and checked in [`super::lua`].
//!
//! Keys map one to one onto the options of the child command the lab runs (`dbperf tpcc run
//! --warehouses`, `dbperf linkbench request --maxid1`, `dbperf tpch power --timeout`, ...) and
//! are checked with the same rules, so a value the command would refuse is refused here, at
//! its `file:line:column`. A key of one kind given to another is refused by name.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::{Spanned, Value};

use super::experiment::{DataSize, Secs};
pub use super::lua::{Lua, PgbenchScripts};
use dbperf_core::bounds;
use dbperf_workloads::sysbench::options::Test;

/// Which benchmark a workload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Sysbench,
    Tpcc,
    Linkbench,
    Tpch,
    Pgbench,
    Lua,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Sysbench,
        Kind::Tpcc,
        Kind::Linkbench,
        Kind::Tpch,
        Kind::Pgbench,
        Kind::Lua,
    ];

    /// As written in the file (and in manifests).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sysbench => "sysbench",
            Kind::Tpcc => "tpcc",
            Kind::Linkbench => "linkbench",
            Kind::Tpch => "tpch",
            Kind::Pgbench => "pgbench",
            Kind::Lua => "lua",
        }
    }

    pub fn parse(s: &str) -> Result<Kind, String> {
        Kind::ALL.into_iter().find(|k| k.name() == s.trim()).ok_or_else(|| {
            format!(
                "kind {s:?} is not a workload kind: use \"sysbench\" (the default), \"tpcc\", \"linkbench\", \"tpch\", \"pgbench\" or \"lua\" (a sysbench Lua script)"
            )
        })
    }

    /// The keys only this kind takes (besides `kind`, `users`, `duration`, `warmup`, `restore`
    /// and `checksum`, which every kind takes; `test` is both sysbench's and tpch's).
    fn own_keys(self) -> &'static [&'static str] {
        match self {
            Kind::Sysbench => &["test", "tables", "table_size", "data_vs_buffer_pool", "options"],
            Kind::Tpcc => &[
                "warehouses",
                "data_vs_buffer_pool",
                "mode",
                "warehouse_choice",
                "wait_scale",
                "schema",
            ],
            Kind::Linkbench => &["maxid1", "data_vs_buffer_pool", "mix", "requests_per_requester"],
            Kind::Tpch => &[
                "test",
                "scale_factor",
                "repeat",
                "queries",
                "streams",
                "cold",
                "timeout",
                "table_engine",
                "seed",
                "refresh",
            ],
            Kind::Pgbench => &["scale", "script", "files", "builtins", "define", "protocol"],
            Kind::Lua => &["script", "options"],
        }
    }

    /// Whether a run changes the data (so each point should start from the snapshot). A Lua
    /// workload decides by its script ([`Params::writes`]).
    pub fn writes(self) -> bool {
        matches!(self, Kind::Tpcc | Kind::Linkbench | Kind::Pgbench | Kind::Lua)
    }
}

/// When a prepared data set is copied back into the datadir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Restore {
    /// Before every point: every point starts from the same data.
    Point,
    /// Once per server start (variant): the points of one start see each other's changes.
    Variant,
    /// Never: every point runs on the data the points before it left. The only choice for a
    /// writing workload on a server that is already running (`target`), whose datadir the lab
    /// cannot copy; each point's manifest says its data was not restored.
    None,
}

/// How big a TPC-C or LinkBench data set is, as the file gives it: a count of the kind's unit
/// (`warehouses`, `maxid1`), or a multiple of the server's buffer pool (`data_vs_buffer_pool`),
/// which the plan turns into a count per server from that server's buffer pool setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    Count(u64),
    VsBufferPool(f64),
}

/// The largest `data_vs_buffer_pool`: data a thousand times the buffer pool.
pub const MAX_DATA_VS_BUFFER_POOL: f64 = 1000.0;

/// A `data_vs_buffer_pool` value, checked: above 0 and at most [`MAX_DATA_VS_BUFFER_POOL`].
pub fn vs_buffer_pool(d: &Spanned<f64>) -> Result<f64, (Range<usize>, String)> {
    let x = *d.get_ref();
    if x > 0.0 && x <= MAX_DATA_VS_BUFFER_POOL {
        Ok(x)
    } else {
        Err((
            d.span(),
            format!(
                "data_vs_buffer_pool must be above 0 and at most {MAX_DATA_VS_BUFFER_POOL} (times the buffer pool), got {x}"
            ),
        ))
    }
}

/// TPC-C's keys (`dbperf tpcc prepare|run`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tpcc {
    /// Warehouses, or as many as make the data a multiple of the buffer pool.
    pub warehouses: Scale,
    /// `max` (no waits, `users` connections) or `spec` (10 terminals per warehouse).
    pub mode: String,
    /// `max` mode: `fixed` (each connection keeps a home warehouse) or `per-transaction` (a
    /// warehouse drawn for every transaction, as tpcc-mysql does: the default with its schema).
    pub warehouse_choice: String,
    pub wait_scale: f64,
    /// `dbperf` or `tpcc-mysql` table spelling.
    pub schema: String,
}

/// LinkBench's keys (`dbperf linkbench load|request`).
#[derive(Debug, Clone, PartialEq)]
pub struct Linkbench {
    /// One past the last node id, or as many ids as make the data a multiple of the buffer pool.
    pub maxid1: Scale,
    /// `fb2011`, `fb2017` or a properties file.
    pub mix: String,
    /// 0: only the duration ends the run.
    pub requests_per_requester: u64,
}

/// TPC-H power or throughput test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpchTest {
    Power,
    Throughput,
}

impl TpchTest {
    pub fn name(self) -> &'static str {
        match self {
            TpchTest::Power => "power",
            TpchTest::Throughput => "throughput",
        }
    }
}

/// When TPC-H makes caches cold (`dbperf tpch power --cold`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cold {
    Off,
    /// Restart and drop the page cache before each query.
    Query,
    /// ... before each repetition.
    Run,
}

/// TPC-H's keys (`dbperf tpch prepare|power|throughput`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tpch {
    pub scale_factor: f64,
    pub test: TpchTest,
    /// Runs of the 22 queries inside one point (`--repeat`: median, min, max per query).
    pub repeat: u32,
    /// Only these queries (`--queries`; power only); empty: all 22.
    pub queries: Vec<u8>,
    /// Query streams of the throughput test.
    pub streams: u32,
    pub cold: Cold,
    /// Seconds after which a query is cancelled and recorded as timed out.
    pub timeout: Option<u64>,
    /// Storage engine the tables are converted to after loading (`InnoDB`, `MyISAM`, `Aria`).
    pub table_engine: Option<String>,
    /// qgen's seed (`seed`); `None`: the experiment's own ([`Tpch::qgen_seed`]).
    pub seed: Option<i64>,
    /// RF1 and RF2 run (`refresh = false`: not; Power@Size is then not computed).
    pub refresh: bool,
}

impl Tpch {
    /// The seed of the queries' parameters: the file's `seed`, else one made from the
    /// experiment's name, so every point of an experiment (every server, every rerun) runs the
    /// same query text, like for like, where a run of its own takes the time as DBT-3 does.
    pub fn qgen_seed(&self, experiment: &str) -> i64 {
        self.seed.unwrap_or_else(|| {
            // FNV-1a, stable across builds; kept within 1 ..= 2^31 - 2 (qgen's valid seeds).
            let h = experiment.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            (h % 2_147_483_646) as i64 + 1
        })
    }
}

/// pgbench's keys (`dbperf pgbench init|SCRIPT`, `dbperf pgbench -f FILE -b NAME -D -M`).
#[derive(Debug, Clone, PartialEq)]
pub struct Pgbench {
    pub scale: u32,
    /// `tpcb-like`, `simple-update` or `select-only`; empty when `scripts` has files or
    /// built-ins.
    pub script: String,
    /// Script files, weighted built-ins, variables and query mode.
    pub scripts: PgbenchScripts,
}

impl Pgbench {
    /// `tpcb-like`, or the script files and built-ins joined by `+` (`mine+select-only`).
    pub fn label(&self) -> &str {
        if self.script.is_empty() {
            &self.scripts.label
        } else {
            &self.script
        }
    }
}

/// sysbench's keys (`dbperf sysbench TEST prepare|run`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sysbench {
    pub test: Test,
    pub tables: u32,
    pub size: DataSize,
    /// Further sysbench options, passed as `--key=value`.
    pub options: Vec<(String, String)>,
}

/// The kind-specific part of a workload.
#[derive(Debug, Clone, PartialEq)]
pub enum Params {
    Sysbench(Sysbench),
    Tpcc(Tpcc),
    Linkbench(Linkbench),
    Tpch(Tpch),
    Pgbench(Pgbench),
    Lua(Lua),
}

impl Params {
    pub fn kind(&self) -> Kind {
        match self {
            Params::Sysbench(_) => Kind::Sysbench,
            Params::Tpcc(_) => Kind::Tpcc,
            Params::Linkbench(_) => Kind::Linkbench,
            Params::Tpch(_) => Kind::Tpch,
            Params::Pgbench(_) => Kind::Pgbench,
            Params::Lua(_) => Kind::Lua,
        }
    }

    /// Whether a run changes the data: the kind's rule, except that a Lua workload running
    /// one of sysbench's read-only scripts does not.
    pub fn writes(&self) -> bool {
        match self {
            Params::Lua(l) => !l.read_only,
            other => other.kind().writes(),
        }
    }

    /// Whether a run changes the data at all: [`Params::writes`], and sysbench's tests that
    /// write (whose default restore is still once per start, the points of a start sharing
    /// their changes). A server that is already running can only take such a workload with
    /// `restore = "none"`.
    pub fn changes_data(&self) -> bool {
        use dbperf_workloads::sysbench::options::Test;
        match self {
            Params::Sysbench(s) => !matches!(
                s.test,
                Test::ReadOnly | Test::PointSelect | Test::SelectRandomPoints | Test::SelectRandomRanges
            ),
            other => other.writes(),
        }
    }
}

/// The largest TPC-C scale the lab accepts (about 100 GB of data).
pub const MAX_WAREHOUSES: u32 = 1_000;
/// The largest LinkBench graph (`maxid1`).
pub const MAX_MAXID1: u64 = 1_000_000_000;
/// The largest TPC-H scale factor.
pub const MAX_SCALE_FACTOR: f64 = 1_000.0;
/// The largest pgbench scale (100,000 accounts a unit: 1.5 TB).
pub const MAX_PGBENCH_SCALE: u32 = 100_000;
/// The most TPC-H repetitions or streams in one point.
pub const MAX_TPCH_COUNT: u32 = 100;

/// TPC-H's table engines the lab can convert to (MySQL family).
pub const TPCH_ENGINES: &[&str] = &["InnoDB", "MyISAM", "Aria"];

/// A `[[workload]]` table as written, with spans. Every key is optional here; the kind
/// decides what is needed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub kind: Option<Spanned<String>>,
    pub users: Option<Spanned<Vec<u32>>>,
    pub duration: Option<Spanned<Secs>>,
    pub warmup: Option<Spanned<Secs>>,
    pub restore: Option<Spanned<Restore>>,
    pub checksum: Option<Spanned<bool>>,
    pub test: Option<Spanned<String>>,
    pub tables: Option<Spanned<u32>>,
    pub table_size: Option<Spanned<u32>>,
    pub data_vs_buffer_pool: Option<Spanned<f64>>,
    pub warehouses: Option<Spanned<i64>>,
    pub mode: Option<Spanned<String>>,
    pub warehouse_choice: Option<Spanned<String>>,
    pub wait_scale: Option<Spanned<f64>>,
    pub schema: Option<Spanned<String>>,
    pub maxid1: Option<Spanned<i64>>,
    pub mix: Option<Spanned<String>>,
    pub requests_per_requester: Option<Spanned<i64>>,
    pub scale_factor: Option<Spanned<f64>>,
    pub repeat: Option<Spanned<i64>>,
    pub queries: Option<Spanned<Vec<Spanned<i64>>>>,
    pub streams: Option<Spanned<i64>>,
    pub cold: Option<Spanned<Value>>,
    pub timeout: Option<Spanned<i64>>,
    pub table_engine: Option<Spanned<String>>,
    pub seed: Option<Spanned<i64>>,
    pub refresh: Option<Spanned<bool>>,
    pub scale: Option<Spanned<i64>>,
    pub script: Option<Spanned<String>>,
    pub files: Option<Spanned<Vec<Spanned<String>>>>,
    pub builtins: Option<Spanned<Vec<Spanned<String>>>>,
    pub define: Option<Spanned<BTreeMap<String, Spanned<Value>>>>,
    pub protocol: Option<Spanned<String>>,
    pub options: Option<Spanned<BTreeMap<String, Spanned<Value>>>>,
}

impl RawWorkload {
    /// Every kind-specific key that is present, with the start of its value.
    fn present(&self) -> Vec<(&'static str, Range<usize>)> {
        let mut out = Vec::new();
        macro_rules! key {
            ($($f:ident),*) => {$(
                if let Some(v) = &self.$f {
                    out.push((stringify!($f), v.span()));
                }
            )*};
        }
        key!(
            tables,
            table_size,
            data_vs_buffer_pool,
            warehouses,
            mode,
            warehouse_choice,
            wait_scale,
            schema,
            maxid1,
            mix,
            requests_per_requester,
            scale_factor,
            repeat,
            queries,
            streams,
            cold,
            timeout,
            table_engine,
            seed,
            refresh,
            scale,
            script,
            files,
            builtins,
            define,
            protocol,
            options
        );
        out
    }
}

/// The kind of a workload and its checked keys; `None` for sysbench, whose keys the experiment
/// reads itself. Paths in the keys are relative to `base`, the experiment file's directory.
/// `Err` is `(span, message)`.
pub(super) fn params(
    raw: &RawWorkload,
    workload_span: Range<usize>,
    base: &Path,
) -> Result<Option<Params>, (Range<usize>, String)> {
    let kind = match &raw.kind {
        Some(k) => Kind::parse(k.get_ref()).map_err(|m| (k.span(), m))?,
        None => Kind::Sysbench,
    };
    for (key, span) in raw.present() {
        if !kind.own_keys().contains(&key) {
            let owner: Vec<&str> = Kind::ALL
                .iter()
                .filter(|k| k.own_keys().contains(&key))
                .map(|k| k.name())
                .collect();
            return Err((
                span,
                format!(
                    "`{key}` is a {} key; this workload is kind = {:?}{}",
                    owner.join("/"),
                    kind.name(),
                    if raw.kind.is_none() {
                        " (the default): add `kind = \"...\"` or remove the key"
                    } else {
                        ": remove the key or change the kind"
                    }
                ),
            ));
        }
    }
    let int = |v: &Spanned<i64>, key: &str, min: i64, max: i64| -> Result<i64, (Range<usize>, String)> {
        let n = *v.get_ref();
        if n < min || n > max {
            return Err((v.span(), format!("{key} must be {min} to {max}, got {n}")));
        }
        Ok(n)
    };
    let one_of = |v: &Spanned<String>, key: &str, allowed: &[&str]| -> Result<String, (Range<usize>, String)> {
        let s = v.get_ref().trim();
        allowed
            .iter()
            .find(|a| a.eq_ignore_ascii_case(s))
            .map(|a| a.to_string())
            .ok_or_else(|| {
                let list: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
                (v.span(), format!("{key} {s:?} is not one of {}", list.join(", ")))
            })
    };
    Ok(Some(match kind {
        Kind::Sysbench => return Ok(None),
        Kind::Tpcc => {
            let warehouses = match (&raw.warehouses, &raw.data_vs_buffer_pool) {
                (Some(_), Some(d)) => {
                    return Err((
                        d.span(),
                        "give either warehouses or data_vs_buffer_pool, not both".into(),
                    ))
                }
                (Some(w), None) => Scale::Count(int(w, "warehouses", 1, i64::from(MAX_WAREHOUSES))? as u64),
                (None, Some(d)) => Scale::VsBufferPool(vs_buffer_pool(d)?),
                (None, None) => {
                    return Err((
                        workload_span,
                        "a tpcc workload needs `warehouses` (the scale), e.g. warehouses = 10, or \
                         data_vs_buffer_pool = 2.0 (as many warehouses as twice the buffer pool)"
                            .into(),
                    ))
                }
            };
            let wait_scale = match &raw.wait_scale {
                Some(w) if dbperf_workloads::tpcc::run::check_wait_scale(*w.get_ref()).is_err() => {
                    let e = dbperf_workloads::tpcc::run::check_wait_scale(*w.get_ref()).unwrap_err();
                    return Err((w.span(), e));
                }
                Some(w) => *w.get_ref(),
                None => 1.0,
            };
            let mode = match &raw.mode {
                Some(m) => one_of(m, "mode", &["max", "spec"])?,
                None => "max".into(),
            };
            let schema = match &raw.schema {
                Some(s) => one_of(s, "schema", &["dbperf", "tpcc-mysql"])?,
                None => "dbperf".into(),
            };
            let warehouse_choice = match &raw.warehouse_choice {
                Some(c) if mode == "spec" => {
                    return Err((
                        c.span(),
                        "warehouse_choice is for mode = \"max\"; in spec mode each terminal keeps its warehouse and district"
                            .into(),
                    ))
                }
                Some(c) => one_of(c, "warehouse_choice", &["fixed", "per-transaction"])?,
                // As tpcc-mysql draws them, with its tables; dbperf's own default otherwise.
                None if schema == "tpcc-mysql" => "per-transaction".into(),
                None => "fixed".into(),
            };
            Params::Tpcc(Tpcc {
                warehouses,
                mode,
                warehouse_choice,
                wait_scale,
                schema,
            })
        }
        Kind::Linkbench => {
            let maxid1 =
                match (&raw.maxid1, &raw.data_vs_buffer_pool) {
                    (Some(_), Some(d)) => {
                        return Err((d.span(), "give either maxid1 or data_vs_buffer_pool, not both".into()))
                    }
                    (Some(m), None) => Scale::Count(int(m, "maxid1", 2, MAX_MAXID1 as i64)? as u64),
                    (None, Some(d)) => Scale::VsBufferPool(vs_buffer_pool(d)?),
                    (None, None) => return Err((
                        workload_span,
                        "a linkbench workload needs `maxid1` (one past the last node id), e.g. maxid1 = 100001, or \
                         data_vs_buffer_pool = 2.0 (as many ids as twice the buffer pool)"
                            .into(),
                    )),
                };
            let mix = match &raw.mix {
                Some(m) if m.get_ref().trim().is_empty() => {
                    return Err((
                        m.span(),
                        "mix is empty: use \"fb2011\", \"fb2017\" or a properties file".into(),
                    ))
                }
                Some(m) => m.get_ref().trim().to_owned(),
                None => "fb2011".into(),
            };
            Params::Linkbench(Linkbench {
                maxid1,
                mix,
                requests_per_requester: match &raw.requests_per_requester {
                    Some(r) => int(r, "requests_per_requester", 0, 1_000_000_000_000)? as u64,
                    None => 0,
                },
            })
        }
        Kind::Tpch => {
            let scale_factor = match &raw.scale_factor {
                Some(s) if !(*s.get_ref() > 0.0 && *s.get_ref() <= MAX_SCALE_FACTOR) => {
                    return Err((
                        s.span(),
                        format!(
                            "scale_factor must be above 0 and at most {MAX_SCALE_FACTOR}, e.g. 0.1 or 1, got {}",
                            s.get_ref()
                        ),
                    ))
                }
                Some(s) => *s.get_ref(),
                None => {
                    return Err((
                        workload_span,
                        "a tpch workload needs `scale_factor`, e.g. scale_factor = 1".into(),
                    ))
                }
            };
            let test = match &raw.test {
                Some(t) => match one_of(t, "test", &["power", "throughput"])?.as_str() {
                    "power" => TpchTest::Power,
                    _ => TpchTest::Throughput,
                },
                None => TpchTest::Power,
            };
            let cold = match &raw.cold {
                None => Cold::Off,
                Some(c) => match c.get_ref() {
                    Value::Boolean(false) => Cold::Off,
                    Value::Boolean(true) => Cold::Query,
                    Value::String(s) if s == "query" => Cold::Query,
                    Value::String(s) if s == "run" => Cold::Run,
                    other => {
                        return Err((
                            c.span(),
                            format!("cold must be true (restart before each query), false, \"query\" or \"run\" (before each repetition), got {other}"),
                        ))
                    }
                },
            };
            if let (Some(s), TpchTest::Power) = (&raw.streams, test) {
                return Err((
                    s.span(),
                    "streams is for test = \"throughput\" (the power test is one stream)".into(),
                ));
            }
            if test == TpchTest::Throughput {
                if let (Some(c), false) = (&raw.cold, cold == Cold::Off) {
                    return Err((c.span(), "cold runs are for test = \"power\"".into()));
                }
                if let Some(r) = &raw.repeat {
                    return Err((r.span(), "repeat is for test = \"power\"".into()));
                }
                if let Some(q) = &raw.queries {
                    return Err((q.span(), "queries is for test = \"power\"".into()));
                }
            }
            Params::Tpch(Tpch {
                scale_factor,
                test,
                repeat: match &raw.repeat {
                    Some(r) => int(r, "repeat", 1, i64::from(MAX_TPCH_COUNT))? as u32,
                    None => 1,
                },
                queries: match &raw.queries {
                    Some(list) => {
                        let mut out: Vec<u8> = Vec::new();
                        for q in list.get_ref() {
                            let n = int(q, "queries", 1, 22)? as u8;
                            if out.contains(&n) {
                                return Err((q.span(), format!("query {n} is listed twice in queries")));
                            }
                            out.push(n);
                        }
                        if out.is_empty() {
                            return Err((
                                list.span(),
                                "queries is empty: list query numbers from 1 to 22, or leave the key out for all 22"
                                    .into(),
                            ));
                        }
                        out
                    }
                    None => Vec::new(),
                },
                streams: match &raw.streams {
                    Some(s) => int(s, "streams", 1, i64::from(MAX_TPCH_COUNT))? as u32,
                    None => 2,
                },
                cold,
                timeout: match &raw.timeout {
                    Some(t) => Some(int(t, "timeout", 1, bounds::MAX_SECS as i64)? as u64),
                    None => None,
                },
                table_engine: match &raw.table_engine {
                    Some(e) => Some(one_of(e, "table_engine", TPCH_ENGINES)?),
                    None => None,
                },
                seed: match &raw.seed {
                    Some(s) => {
                        dbperf_workloads::tpch::qgen::check_seed(*s.get_ref())
                            .map_err(|e| (s.span(), e.to_string().replace("--seed", "seed")))?;
                        Some(*s.get_ref())
                    }
                    None => None,
                },
                refresh: raw.refresh.as_ref().is_none_or(|r| *r.get_ref()),
            })
        }
        Kind::Pgbench => {
            let scripts = super::lua::pgbench_scripts(
                &super::lua::RawPgbenchScripts {
                    script: raw.script.as_ref(),
                    files: raw.files.as_ref(),
                    builtins: raw.builtins.as_ref(),
                    define: raw.define.as_ref(),
                    protocol: raw.protocol.as_ref(),
                },
                base,
            )?;
            Params::Pgbench(Pgbench {
                scale: match &raw.scale {
                    Some(s) => int(s, "scale", 1, i64::from(MAX_PGBENCH_SCALE))? as u32,
                    None => 1,
                },
                script: match &raw.script {
                    Some(s) => one_of(s, "script", &["tpcb-like", "simple-update", "select-only"])?,
                    None if !scripts.label.is_empty() => String::new(),
                    None => "tpcb-like".into(),
                },
                scripts,
            })
        }
        Kind::Lua => Params::Lua(super::lua::lua_keys(
            raw.script.as_ref(),
            raw.options.as_ref(),
            workload_span,
            base,
        )?),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_unknown_kinds_list_the_choices() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()), Ok(k));
        }
        let err = Kind::parse("tpc-c").unwrap_err();
        assert!(err.contains("\"tpcc\"") && err.contains("\"linkbench\""), "{err}");
    }

    #[test]
    fn every_kind_specific_key_belongs_to_a_kind() {
        let raw: RawWorkload = toml::from_str(
            "tables = 1\ntable_size = 1\ndata_vs_buffer_pool = 1.0\nwarehouses = 1\nmode = \"max\"\nwait_scale = 1.0\nschema = \"dbperf\"\nmaxid1 = 2\nmix = \"fb2011\"\nrequests_per_requester = 1\nscale_factor = 1.0\nrepeat = 1\nqueries = [1]\nstreams = 1\ncold = true\ntimeout = 1\ntable_engine = \"MyISAM\"\nscale = 1\nscript = \"select-only\"\nfiles = []\nbuiltins = []\ndefine = {}\nprotocol = \"simple\"\noptions = {}\n",
        )
        .unwrap();
        for (key, _) in raw.present() {
            assert!(Kind::ALL.iter().any(|k| k.own_keys().contains(&key)), "{key}");
        }
        assert_eq!(raw.present().len(), 24);
    }
}
