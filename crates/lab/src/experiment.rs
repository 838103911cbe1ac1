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
//! settle = "each"                    # wait for flushing before points: each (after a write or a restore), first, off
//! settle_max = "5m"                  # the longest wait before one point
//! warmup_steady = "5m"               # before each warmup, run until past the start-up transient (at most)
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
//!
//! [[workload]]
//! kind = "lua"                       # a sysbench 1.0 Lua script, run by `dbperf lua`
//! script = "my_oltp.lua"             # relative to this file, or "oltp_read_write" (sysbench's)
//! options = { tables = 4, table_size = 10000 }   # the script's own options
//! users = [1, 16]
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::{Spanned, Value};

use super::search::Search;
use super::settings::{check_max_connections, setting, setting_value};
use super::workload::RawWorkload;
pub use super::workload::{Cold, Kind, Lua, Params, PgbenchScripts, Restore, Scale, Sysbench, TpchTest};
use dbperf_core::bounds;
pub use dbperf_core::cpus::CpuSet;
pub use dbperf_core::size::parse_size;
use dbperf_workloads::sysbench::options::Test;

/// A file that could not be read or does not describe a valid experiment.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The message names the cause itself, so the cause is not also chained (it would print twice).
    #[error("cannot read {path}: {cause}")]
    Read { path: PathBuf, cause: std::io::Error },
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

/// Which points wait for the server to settle (its flushing to end) before they start, so that
/// the points of one comparison start from the same state (`settle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SettlePolicy {
    /// Every point that follows a write or a restore (the default): a point after a read-only
    /// one on the same server start finds nothing to wait for and does not ask.
    Each,
    /// Only the first point after each server start with its settings.
    First,
    /// None: every point starts in whatever state the one before left.
    Off,
}

/// `settle` and `settle_max`: which points wait, and for how long at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settle {
    pub policy: SettlePolicy,
    /// The longest wait before one point; the point is measured anyway after it (and its
    /// start state says how far from settled it was).
    pub max: Duration,
}

/// The longest settle wait before one point when `settle_max` is not given: the run commands'
/// `--settle` without a value.
pub const DEFAULT_SETTLE_MAX: Duration = Duration::from_secs(300);

impl Settle {
    /// Whether a point waits: `first_of_start` for the first point after the group's server
    /// start, `after_change` when the server was started on a restored copy since the point
    /// before, or that point changed the data.
    pub fn before(&self, first_of_start: bool, after_change: bool) -> bool {
        match self.policy {
            SettlePolicy::Each => first_of_start || after_change,
            SettlePolicy::First => first_of_start,
            SettlePolicy::Off => false,
        }
    }

    /// How the plan states it.
    pub fn describe(&self) -> String {
        match self.policy {
            SettlePolicy::Each => format!(
                "settle: before every point after a write or a restore, at most {} s each",
                self.max.as_secs()
            ),
            SettlePolicy::First => {
                format!(
                    "settle: before the first point of each server start, at most {} s",
                    self.max.as_secs()
                )
            }
            SettlePolicy::Off => "settle: off (each point starts in the state the one before left)".into(),
        }
    }
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

/// A duration written as seconds (`60`) or with a unit (`"90s"`, `"5m"`, `"1h"`, `"500ms"`),
/// within [`bounds::MAX_SECS`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Secs(pub(super) Duration);

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
            Raw::Int(n) => bounds::secs(n as f64),
            Raw::Float(f) => bounds::secs(f),
            Raw::Text(s) => bounds::parse_duration(&s),
        };
        secs.map(Secs).map_err(serde::de::Error::custom)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: Option<Spanned<String>>,
    description: Option<String>,
    repetitions: Option<Spanned<u32>>,
    duration: Option<Spanned<Secs>>,
    warmup: Option<Spanned<Secs>>,
    report_interval: Option<Spanned<Secs>>,
    order: Option<Order>,
    seed: Option<u64>,
    prewarm: Option<bool>,
    settle: Option<SettlePolicy>,
    settle_max: Option<Spanned<Secs>>,
    warmup_steady: Option<Spanned<Secs>>,
    #[serde(default, rename = "server")]
    servers: Vec<Spanned<RawServer>>,
    variants: Option<Spanned<BTreeMap<String, Spanned<Vec<Value>>>>>,
    #[serde(default, rename = "variant")]
    variant_list: Vec<Spanned<RawVariant>>,
    #[serde(default, rename = "pinning")]
    pinnings: Vec<Spanned<RawPinning>>,
    #[serde(default, rename = "exclude")]
    excludes: Vec<Spanned<RawExclude>>,
    #[serde(default, rename = "workload")]
    workloads: Vec<Spanned<RawWorkload>>,
    search: Option<Spanned<super::search::RawSearch>>,
    network: Option<Spanned<RawNetwork>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    client: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    burst: Option<Spanned<String>>,
    queue: Option<Spanned<String>>,
    delay: Option<Spanned<String>>,
    loss: Option<Spanned<f64>>,
    shards: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    id: Option<Spanned<String>>,
    target: Option<Spanned<String>>,
    target_file: Option<Spanned<String>>,
    label: Option<String>,
    #[serde(default)]
    settings: BTreeMap<String, Spanned<Value>>,
    jemalloc: Option<Spanned<bool>>,
    /// `ssh://USER@HOST[:PORT]`: the database host (this machine when absent).
    host: Option<Spanned<String>>,
    ssh: Option<Spanned<String>>,
    dbperf: Option<Spanned<String>>,
    home: Option<Spanned<String>>,
    listen: Option<Spanned<String>>,
    allow_from: Option<Spanned<Vec<String>>>,
    /// TPC-H query texts of this server's own (hinted ones), relative to this file.
    queries_dir: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: Spanned<String>,
    #[serde(default)]
    settings: BTreeMap<String, Spanned<Value>>,
    /// The points of this variant run this long (the workloads' `duration` otherwise).
    duration: Option<Spanned<Secs>>,
    /// The labels of the servers this variant applies to (all when absent).
    servers: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `[[exclude]]`: combinations the plan leaves out; each key given must match.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExclude {
    server: Option<Spanned<String>>,
    variant: Option<Spanned<String>>,
    pinning: Option<Spanned<String>>,
    workload: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinning {
    name: Spanned<String>,
    server_cpus: Option<Spanned<String>>,
    client_cpus: Option<Spanned<String>>,
}

/// One server of the experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// Catalog id (`mariadb-10.11`, `mysql-8.0.31`, ...), aliases resolved; for a server that
    /// is already running, its URL as the file gives it (never with a password).
    pub id: String,
    /// A sandbox dbperf starts, or a server that is already running.
    pub server: Server,
    /// Name in tables; the id unless the file gives a label (a running server: its
    /// `host:port`).
    pub label: String,
    /// Settings for every start of this server, in file order (a running server: applied
    /// with `SET GLOBAL` / `ALTER SYSTEM` before each of its points, like a variant's).
    pub settings: Vec<(String, String)>,
    /// Start the server with Debian's libjemalloc2 preloaded.
    pub jemalloc: bool,
    /// The database host when it is not this machine (`host = "ssh://..."`).
    pub host: Option<ServerHost>,
    /// TPC-H power points run the query texts in this directory where it has one
    /// (`queries_dir`, absolute; `tpch power --queries-dir`), checked for the same answers.
    pub queries_dir: Option<PathBuf>,
}

/// A `[[server]]`'s database host reached with ssh: a sandbox is started, stopped, copied and
/// restored there by `dbperf server ...` run over ssh (`run.rs` through `host.rs`); every point
/// samples its OS (`--server-host`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerHost {
    /// The host with its ssh command line, the `dbperf` there and its `DBPERF_HOME`
    /// (`.dbperf` under the login's home unless `home` says).
    pub remote: dbperf_server::remote::RemoteHost,
    /// The host's address the sandbox listens on; `None`: the one the ssh connection arrives at.
    pub listen: Option<std::net::IpAddr>,
    /// The client addresses its benchmark account allows; empty: the one ssh comes from.
    pub allow_from: Vec<std::net::IpAddr>,
}

/// Where a `[[server]]` comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Server {
    /// `id = "..."`: a sandbox of this catalog entry, started, restarted and stopped by the lab.
    Sandbox(&'static dbperf_server::ServerSpec),
    /// `target = "..."`: a server that is already running, which the lab never starts or stops.
    Running(super::target::RunningServer),
}

impl ServerSpec {
    /// The catalog entry of a sandbox server; `None` for a running server.
    pub fn sandbox(&self) -> Option<&'static dbperf_server::ServerSpec> {
        match &self.server {
            Server::Sandbox(spec) => Some(spec),
            Server::Running(_) => None,
        }
    }

    /// The server that is already running (`target = ...`), if this is one.
    pub fn running(&self) -> Option<&super::target::RunningServer> {
        match &self.server {
            Server::Sandbox(_) => None,
            Server::Running(r) => Some(r),
        }
    }

    /// The protocol and SQL the server takes.
    pub fn family(&self) -> dbperf_driver::target::Family {
        match &self.server {
            Server::Sandbox(spec) => spec.product.family(),
            Server::Running(r) => r.family,
        }
    }

    /// The product, where the catalog says it (a running server's is learned at connect).
    pub fn product(&self) -> Option<dbperf_driver::target::Product> {
        self.sandbox().map(|s| s.product)
    }
}

/// A named set of settings applied on top of the server's own.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub name: String,
    pub settings: Vec<(String, String)>,
    /// Its points' duration, when it has one of its own (`[[variant]] duration`).
    pub duration: Option<Duration>,
    /// The servers (indices) it applies to; empty: every server.
    pub servers: Vec<usize>,
}

impl Variant {
    /// A variant of `settings` on every server with the workloads' durations.
    pub fn new(name: String, settings: Vec<(String, String)>) -> Variant {
        Variant {
            name,
            settings,
            duration: None,
            servers: Vec::new(),
        }
    }
}

/// A combination `[[exclude]]` leaves out: the indices of what it names (`None`: any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclude {
    pub server: Option<usize>,
    pub variant: Option<usize>,
    pub pinning: Option<usize>,
    pub workload: Option<usize>,
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
    /// The kind and its own keys.
    pub params: Params,
    /// Client connections, one point per count (sysbench threads, TPC-C terminals in max mode,
    /// LinkBench requesters, pgbench clients; `[1]` for TPC-H, whose streams are its own key).
    pub users: Vec<u32>,
    pub duration: Duration,
    pub warmup: Duration,
    /// When the prepared data is copied back (default: before every point for kinds that
    /// write, once per server start otherwise).
    pub restore: Restore,
    /// Record a checksum of every table before each point (`CHECKSUM TABLE`, MySQL family).
    pub checksum: bool,
}

impl WorkloadSpec {
    pub fn kind(&self) -> Kind {
        self.params.kind()
    }

    /// The sysbench keys, for a sysbench workload.
    pub fn sysbench(&self) -> Option<&Sysbench> {
        match &self.params {
            Params::Sysbench(s) => Some(s),
            _ => None,
        }
    }
}

/// The longest settle wait of a `--quick` smoke test.
const QUICK_SETTLE_MAX: Duration = Duration::from_secs(5);

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
    /// Which points wait for the server's flushing first (`settle`, `settle_max`).
    pub settle: Settle,
    /// `warmup_steady`: before each point's warmup, its workload runs unmeasured until past its
    /// start-up transient, at most this long (`--warmup-steady`; not TPC-H's, which has no
    /// warmup, nor sharded points').
    pub warmup_steady: Option<Duration>,
    pub servers: Vec<ServerSpec>,
    pub variants: Vec<Variant>,
    pub pinnings: Vec<Pinning>,
    pub workloads: Vec<WorkloadSpec>,
    /// Combinations left out (`[[exclude]]`).
    pub excludes: Vec<Exclude>,
    /// A settings search (`[search]`, run by `dbperf lab tune`).
    pub search: Option<Search>,
    /// Where the client stands (`[network]`): its own network namespace, shaped, and how many
    /// client processes share each point.
    pub network: Network,
}

/// `[network]`: the client's path to the server and the shards of every point.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Network {
    /// `client = "netns"`: each point's client runs in a network namespace of its own, with
    /// this `--client-netns` value (the shaping; empty: none). `None`: as the server's URL says.
    pub netns: Option<String>,
    /// Client processes each point is spread over (`--shard I/N`), merged into the point's
    /// run; 1: one client.
    pub shards: u32,
}

/// Bytes one sysbench row takes in InnoDB with its `k` index (a table of 1M rows is about
/// 240 MB on disk); used only to turn `data_vs_buffer_pool` into rows.
pub const BYTES_PER_ROW: f64 = 240.0;

/// A sysbench workload's own keys that are also sysbench options: the lab passes them, so
/// `options` may not (beside [`super::LAB_OWNED_OPTIONS`]).
const SYSBENCH_DATA_KEYS: &[&str] = &["tables", "table_size"];

/// The first line of the copy `lab run` keeps of an experiment file, followed by the original's
/// path: relative paths in the copy (scripts, pgbench files) are read from the original's
/// directory.
pub const ORIGIN_LINE: &str = "# dbperf lab: a copy of ";

impl Experiment {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Experiment, ExperimentError> {
        let text = std::fs::read_to_string(path).map_err(|cause| ExperimentError::Read {
            path: path.to_owned(),
            cause,
        })?;
        let origin = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix(ORIGIN_LINE))
            .map(PathBuf::from);
        match origin.as_ref().and_then(|o| o.parent()) {
            Some(base) => Experiment::parse_in(&text, path, base),
            None => Experiment::parse(&text, path),
        }
    }

    /// Parses and checks the text of an experiment file; `path` names it in errors, and
    /// relative paths in it are read from its directory.
    pub fn parse(text: &str, path: &Path) -> Result<Experiment, ExperimentError> {
        Experiment::parse_in(text, path, path.parent().unwrap_or(Path::new("")))
    }

    /// [`Experiment::parse`] with relative paths read from `base`.
    pub fn parse_in(text: &str, path: &Path, base: &Path) -> Result<Experiment, ExperimentError> {
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
                super::check_experiment_name(n.get_ref()).map_err(|m| at(n.span(), m))?;
                n.get_ref().clone()
            }
            None => {
                let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("experiment");
                let name = super::name_safe(stem, &['-', '_'], '-');
                super::check_experiment_name(&name).map_err(|m| whole(&format!("{m}; give it a `name`")))?;
                name
            }
        };
        let repetitions = match &raw.repetitions {
            Some(r) if !(1..=bounds::MAX_REPETITIONS).contains(r.get_ref()) => {
                return Err(at(
                    r.span(),
                    format!(
                        "repetitions must be 1 to {}, got {}",
                        bounds::MAX_REPETITIONS,
                        r.get_ref()
                    ),
                ))
            }
            Some(r) => *r.get_ref(),
            None => 1,
        };
        let duration = whole_secs(&raw.duration, "duration", 1, &at)?.unwrap_or(Duration::from_secs(60));
        let warmup = whole_secs(&raw.warmup, "warmup", 0, &at)?.unwrap_or(Duration::ZERO);
        let report_interval = match &raw.report_interval {
            Some(r) if r.get_ref().0 < Duration::from_secs(1) => {
                return Err(at(
                    r.span(),
                    format!(
                        "report_interval must be 1 s to {} s (the time between a run's live lines; intervals are \
                         stored each second whatever it is), got {:?}",
                        bounds::MAX_SECS,
                        r.get_ref().0
                    ),
                ))
            }
            Some(r) => r.get_ref().0,
            None => Duration::from_secs(10),
        };

        if raw.servers.is_empty() {
            return Err(whole(
                "no [[server]]: add at least one, e.g.\n  [[server]]\n  id = \"mariadb-10.11\"",
            ));
        }
        let mut servers: Vec<ServerSpec> = Vec::new();
        for s in &raw.servers {
            let r = s.get_ref();
            let host = server_host(r, r.target.is_some(), &at)?;
            let (id, server) = match (&r.id, &r.target) {
                (Some(id), None) => {
                    if let Some(f) = &r.target_file {
                        return Err(at(
                            f.span(),
                            "target_file names the URL of a server that is already running: it goes with `target`, not `id`"
                                .into(),
                        ));
                    }
                    let name = id.get_ref().trim();
                    let spec = match (dbperf_server::lookup(name), &host) {
                        (Ok(spec), _) => spec,
                        // A build added on that host only: that host says what it is.
                        (Err(_), Some(h)) => dbperf_server::remote_spec(&h.remote, name).map_err(|m| at(id.span(), m))?,
                        (Err(e), None) => return Err(at(id.span(), e.to_string())),
                    };
                    (spec.id.to_owned(), Server::Sandbox(spec))
                }
                (None, Some(t)) => {
                    let running = super::target::RunningServer::parse(
                        t.get_ref(),
                        r.target_file.as_ref().map(|f| base.join(f.get_ref())),
                    )
                    .map_err(|m| at(t.span(), m))?;
                    if let Some(j) = r.jemalloc.as_ref().filter(|j| *j.get_ref()) {
                        return Err(at(
                            j.span(),
                            "jemalloc preloads a library into a server dbperf starts; this server is already running \
                             (`target`): remove jemalloc, or start the server with it yourself"
                                .into(),
                        ));
                    }
                    (running.shown.clone(), Server::Running(running))
                }
                (Some(_), Some(t)) => {
                    return Err(at(
                        t.span(),
                        "a [[server]] has `id` (a sandbox dbperf starts) or `target` (a server that is already running), not both"
                            .into(),
                    ))
                }
                (None, None) => {
                    return Err(at(
                        s.span(),
                        "a [[server]] needs `id = \"mariadb-10.11\"` (a sandbox dbperf starts) or \
                         `target = \"mysql://USER@HOST:PORT/DB\"` (a server that is already running)"
                            .into(),
                    ))
                }
            };
            let label = r.label.clone().unwrap_or_else(|| match &server {
                Server::Running(running) => running.endpoint.clone(),
                Server::Sandbox(_) => id.clone(),
            });
            if servers.iter().any(|o| o.label == label) {
                return Err(at(
                    s.span(),
                    format!("two servers are both called {label:?}: give one a different `label`"),
                ));
            }
            servers.push(ServerSpec {
                id,
                server,
                label,
                settings: settings(&r.settings, &at)?,
                jemalloc: r.jemalloc.as_ref().is_some_and(|j| *j.get_ref()),
                host,
                queries_dir: match &r.queries_dir {
                    Some(d) => {
                        let dir = base.join(d.get_ref());
                        dbperf_workloads::tpch::queries::QueryTexts::load(&dir)
                            .map_err(|e| at(d.span(), format!("queries_dir: {e}")))?;
                        Some(dir)
                    }
                    None => None,
                },
            });
        }

        let mut variants = Vec::new();
        if let Some(axes) = &raw.variants {
            // Counted before any combination is made, so a file cannot ask for billions.
            let combinations = axes
                .get_ref()
                .values()
                .fold(1u64, |n, v| n.saturating_mul(v.get_ref().len() as u64));
            if combinations.saturating_add(raw.variant_list.len() as u64) > bounds::MAX_VARIANTS {
                let sizes: Vec<String> = axes.get_ref().values().map(|v| v.get_ref().len().to_string()).collect();
                return Err(at(
                    axes.span(),
                    format!(
                        "[variants] makes {combinations} combinations ({} values); an experiment may have at most {} variants: use fewer values, or split the experiment",
                        sizes.join(" x "),
                        bounds::MAX_VARIANTS
                    ),
                ));
            }
            let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
            for (key, values) in axes.get_ref() {
                if values.get_ref().is_empty() {
                    return Err(at(values.span(), format!("[variants] {key} has no values")));
                }
                let axis: Vec<String> = values
                    .get_ref()
                    .iter()
                    .map(|v| setting(key, v).map_err(|m| at(values.span(), format!("[variants] {m}"))))
                    .collect::<Result<_, _>>()?;
                let mut next = Vec::new();
                for combo in &combos {
                    for v in &axis {
                        let mut c = combo.clone();
                        c.push((key.clone(), v.clone()));
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
                variants.push(Variant::new(name, c));
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
            let mut only = Vec::new();
            for label in r.servers.iter().flat_map(|l| l.get_ref()) {
                let si = servers
                    .iter()
                    .position(|s| &s.label == label.get_ref())
                    .ok_or_else(|| {
                        let known: Vec<&str> = servers.iter().map(|s| s.label.as_str()).collect();
                        at(
                            label.span(),
                            format!(
                                "no server is labelled {:?}; the servers are: {}",
                                label.get_ref(),
                                known.join(", ")
                            ),
                        )
                    })?;
                only.push(si);
            }
            if let Some(list) = r.servers.as_ref().filter(|l| l.get_ref().is_empty()) {
                return Err(at(
                    list.span(),
                    "servers is empty: name the servers this variant applies to, or leave the key out for all".into(),
                ));
            }
            variants.push(Variant {
                name: r.name.get_ref().clone(),
                settings: settings(&r.settings, &at)?,
                duration: whole_secs(&r.duration, "duration", 1, &at)?,
                servers: only,
            });
        }
        if variants.is_empty() {
            variants.push(Variant::new("default".into(), Vec::new()));
        }

        let available = std::thread::available_parallelism().map_or(1, |n| n.get());
        // The server's CPUs are its host's: when every server dbperf starts is on another
        // host, that host's `server start --cpus` checks them (this machine may have fewer).
        let server_available = if servers.iter().all(|s| s.host.is_some() || s.running().is_some()) {
            dbperf_core::cpus::MAX_CPUS
        } else {
            available
        };
        let mut pinnings = Vec::new();
        for p in &raw.pinnings {
            let r = p.get_ref();
            check_name(r.name.get_ref()).map_err(|m| at(r.name.span(), m))?;
            let cpus = |c: &Option<Spanned<String>>, available: usize| -> Result<Option<CpuSet>, ExperimentError> {
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
                server_cpus: cpus(&r.server_cpus, server_available)?,
                client_cpus: cpus(&r.client_cpus, available)?,
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
        // Per workload: the span of its `users`, for the max_connections check below.
        let mut users_spans = Vec::new();
        for w in &raw.workloads {
            let r = w.get_ref();
            let params = match super::workload::params(r, w.span(), base).map_err(|(span, m)| at(span, m))? {
                Some(p) => p,
                None => Params::Sysbench(sysbench_keys(r, w.span(), &at)?),
            };
            let kind = params.kind();
            let writes = params.writes();
            let users = match (&r.users, kind) {
                (Some(u), Kind::Tpch) => return Err(at(
                    u.span(),
                    "a tpch workload has no `users`: the power test is one stream, the throughput test takes `streams`"
                        .into(),
                )),
                (None, Kind::Tpch) => vec![1],
                (None, _) => {
                    return Err(at(
                        w.span(),
                        format!(
                        "this {} workload needs `users` (connection counts, one point each), e.g. users = [1, 8, 64]",
                        kind.name()
                    ),
                    ))
                }
                (Some(u), _) => {
                    let users = u.get_ref().clone();
                    if let Some(bad) = users.iter().find(|n| !(1..=bounds::MAX_CONNECTIONS).contains(*n)) {
                        return Err(at(
                            u.span(),
                            format!(
                                "users must list connection counts from 1 to {}, e.g. [1, 8, 64]; got {bad}",
                                bounds::MAX_CONNECTIONS
                            ),
                        ));
                    }
                    if users.is_empty() {
                        return Err(at(
                            u.span(),
                            "users must list one or more connection counts, e.g. [1, 8, 64]".into(),
                        ));
                    }
                    if let Some(twice) = users.iter().enumerate().find(|(i, n)| users[..*i].contains(n)) {
                        return Err(at(
                            u.span(),
                            format!("users lists {} twice: each count makes one run per repetition", twice.1),
                        ));
                    }
                    users
                }
            };
            if let Some(c) = r.checksum.as_ref().filter(|c| *c.get_ref()) {
                if let Some(pg) = servers
                    .iter()
                    .find(|s| s.family() == dbperf_driver::target::Family::Postgres)
                {
                    return Err(at(
                        c.span(),
                        format!("checksum uses CHECKSUM TABLE, which {} (PostgreSQL) does not have: remove it or the server", pg.label),
                    ));
                }
            }
            if let Params::Tpch(t) = &params {
                if let Some(engine) = &t.table_engine {
                    if let Some(pg) = servers
                        .iter()
                        .find(|s| s.family() == dbperf_driver::target::Family::Postgres)
                    {
                        let span = r.table_engine.as_ref().map_or(w.span(), |e| e.span());
                        return Err(at(
                            span,
                            format!("table_engine = {engine:?} is a MySQL-family table engine; {} is PostgreSQL: remove the key or the server", pg.label),
                        ));
                    }
                }
            }
            if kind == Kind::Pgbench {
                if let Some(other) = servers
                    .iter()
                    .find(|s| s.family() != dbperf_driver::target::Family::Postgres)
                {
                    return Err(at(
                        r.kind.as_ref().map_or(w.span(), |k| k.span()),
                        format!("pgbench runs on PostgreSQL only, and server {:?} is not PostgreSQL: use a postgres-NN server", other.label),
                    ));
                }
            }
            users_spans.push(r.users.as_ref().map_or(w.span(), |u| u.span()));
            workloads.push(WorkloadSpec {
                params,
                users,
                duration: whole_secs(&r.duration, "duration", 1, &at)?.unwrap_or(duration),
                warmup: whole_secs(&r.warmup, "warmup", 0, &at)?.unwrap_or(warmup),
                restore: match &r.restore {
                    Some(x) => *x.get_ref(),
                    None if writes => Restore::Point,
                    None => Restore::Variant,
                },
                checksum: r.checksum.as_ref().is_some_and(|c| *c.get_ref()),
            });
        }
        if let Some(d) = raw
            .servers
            .iter()
            .find_map(|s| s.get_ref().queries_dir.as_ref())
            .filter(|_| {
                !workloads
                    .iter()
                    .any(|w| matches!(&w.params, Params::Tpch(t) if t.test == TpchTest::Power))
            })
        {
            return Err(at(
                d.span(),
                "queries_dir gives TPC-H power points a server's own query texts, and this file has no \
                 `kind = \"tpch\"` power workload: remove the key or add the workload"
                    .into(),
            ));
        }
        check_max_connections(&servers, &variants, &workloads, &users_spans, &at)?;
        check_running_servers(&raw, &servers, &pinnings, &workloads, &at)?;
        let search = match &raw.search {
            Some(s) => Some(super::search::parse(
                s, &servers, &variants, &pinnings, &workloads, &at,
            )?),
            None => None,
        };

        let network = match &raw.network {
            Some(n) => network(n, &workloads, &users_spans, &at)?,
            None => Network { netns: None, shards: 1 },
        };
        if let (Some(_), Some(s)) = (
            &network.netns,
            servers.iter().find(|s| s.host.is_some() && s.running().is_none()),
        ) {
            let span = raw
                .network
                .as_ref()
                .map_or(0..0, |n| n.get_ref().client.as_ref().map_or(n.span(), |c| c.span()));
            return Err(at(
                span,
                format!(
                    "[network] client = \"netns\" puts the client in a namespace whose path leads to a server on this \
                     machine's loopback, and server {:?} is on {}: the client is already across a real network from it. \
                     Remove client = \"netns\" (and its shaping), or shape that network with tc yourself",
                    s.label,
                    s.host.as_ref().map_or("", |h| h.remote.url.as_str())
                ),
            ));
        }
        let excludes = excludes(&raw, &servers, &variants, &pinnings, &workloads, &at)?;
        let experiment = Experiment {
            name,
            description: raw.description,
            path: path.to_owned(),
            repetitions,
            report_interval,
            order: raw.order.unwrap_or(Order::Stable),
            seed: raw.seed.unwrap_or(1),
            prewarm: raw.prewarm.unwrap_or(true),
            settle: Settle {
                policy: raw.settle.unwrap_or(SettlePolicy::Each),
                max: whole_secs(&raw.settle_max, "settle_max", 1, &at)?.unwrap_or(DEFAULT_SETTLE_MAX),
            },
            warmup_steady: whole_secs(&raw.warmup_steady, "warmup_steady", 1, &at)?,
            servers,
            variants,
            pinnings,
            workloads,
            excludes,
            search,
            network,
        };
        if !experiment.excludes.is_empty() || experiment.variants.iter().any(|v| !v.servers.is_empty()) {
            let e = &experiment;
            for (si, s) in e.servers.iter().enumerate() {
                let any = (0..e.variants.len()).any(|vi| {
                    (0..e.pinnings.len()).any(|pi| (0..e.workloads.len()).any(|wi| e.includes(si, vi, pi, wi)))
                });
                if !any {
                    return Err(at(
                        raw.servers[si].span(),
                        format!(
                            "server {:?} has no runs: the variants' `servers` and the [[exclude]]s leave out every combination with it",
                            s.label
                        ),
                    ));
                }
            }
        }
        let runs = experiment.runs();
        if runs > bounds::MAX_POINTS {
            let e = &experiment;
            let message = format!(
                "the experiment makes {runs} runs ({} server(s) x {} variant(s) x {} pinning(s) x {} user count(s) x {} repetition(s)); at most {} fit in one experiment: use fewer values, or split it into several files",
                e.servers.len(),
                e.variants.len(),
                e.pinnings.len(),
                e.workloads.iter().map(|w| w.users.len()).sum::<usize>(),
                e.repetitions,
                bounds::MAX_POINTS
            );
            return Err(match &raw.repetitions {
                Some(r) => at(r.span(), message),
                None => whole(&message),
            });
        }
        Ok(experiment)
    }
}

/// A `[[server]]`'s `host` with its `ssh`, `dbperf`, `home`, `listen` and `allow_from`; the
/// others without `host` are refused, as are those a running server (`target`, whose host
/// only gives OS telemetry) has no use for.
fn server_host(
    r: &RawServer,
    running: bool,
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Option<ServerHost>, ExperimentError> {
    let Some(url) = &r.host else {
        let stray = [
            ("ssh", &r.ssh),
            ("dbperf", &r.dbperf),
            ("home", &r.home),
            ("listen", &r.listen),
        ]
        .into_iter()
        .find_map(|(k, v)| v.as_ref().map(|v| (k, v.span())))
        .or_else(|| r.allow_from.as_ref().map(|v| ("allow_from", v.span())));
        return match stray {
            Some((key, span)) => Err(at(
                span,
                format!(
                    "{key} goes with host = \"ssh://USER@HOST\" (a server on another host); this server has no host"
                ),
            )),
            None => Ok(None),
        };
    };
    let mut remote =
        dbperf_server::remote::RemoteHost::parse(url.get_ref(), r.ssh.as_ref().map(|s| s.get_ref().as_str())).map_err(
            |e| {
                let span = match (&e, &r.ssh) {
                    (dbperf_server::remote::RemoteError::BadSsh { .. }, Some(ssh)) => ssh.span(),
                    _ => url.span(),
                };
                at(span, e.to_string())
            },
        )?;
    if let Some(d) = &r.dbperf {
        if d.get_ref().trim().is_empty() {
            return Err(at(
                d.span(),
                "dbperf is the path of dbperf on that host; it is empty".into(),
            ));
        }
        remote.dbperf = d.get_ref().clone();
    }
    if running {
        if let Some((key, span)) = [("home", &r.home), ("listen", &r.listen)]
            .into_iter()
            .find_map(|(k, v)| v.as_ref().map(|v| (k, v.span())))
            .or_else(|| r.allow_from.as_ref().map(|v| ("allow_from", v.span())))
        {
            return Err(at(
                span,
                format!(
                    "{key} is for a sandbox the lab starts on that host; this server is already running (`target`), \
                     and its host only gives the OS telemetry: remove {key}"
                ),
            ));
        }
    }
    if let Some(h) = &r.home {
        if h.get_ref().trim().is_empty() {
            return Err(at(h.span(), "home is DBPERF_HOME on that host; it is empty".into()));
        }
    }
    remote.home = Some(r.home.as_ref().map_or(".dbperf".to_owned(), |h| h.get_ref().clone()));
    let addr = |text: &str, span: Range<usize>, key: &str| {
        let a: std::net::IpAddr = text.trim().parse().map_err(|_| {
            at(
                span.clone(),
                format!("{key} {text:?} is not an IP address (give an address such as 192.0.2.10, not a name)"),
            )
        })?;
        if a.is_unspecified() {
            return Err(at(
                span,
                format!("{key} {text:?} is every address; give one address of the host"),
            ));
        }
        Ok(a)
    };
    let listen = match &r.listen {
        Some(l) => Some(addr(l.get_ref(), l.span(), "listen")?),
        None => None,
    };
    let allow_from = match &r.allow_from {
        Some(list) => list
            .get_ref()
            .iter()
            .map(|a| addr(a, list.span(), "allow_from"))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    Ok(Some(ServerHost {
        remote,
        listen,
        allow_from,
    }))
}

/// What a server that is already running (`target`) cannot do, named at the key that asks
/// for it: the lab does not control its process (no `server_cpus`, TPC-H `cold`, `[search]`
/// starts) nor copy its datadir (a writing workload needs `restore = "none"`, which is for
/// such servers only).
fn check_running_servers(
    raw: &RawFile,
    servers: &[ServerSpec],
    pinnings: &[Pinning],
    workloads: &[WorkloadSpec],
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<(), ExperimentError> {
    let running = servers.iter().find(|s| s.running().is_some());
    for (w, rw) in workloads.iter().zip(&raw.workloads) {
        let r = rw.get_ref();
        let span = r.restore.as_ref().map_or(rw.span(), |x| x.span());
        match (running, w.restore) {
            (None, Restore::None) => {
                return Err(at(
                    span,
                    "restore = \"none\" is for servers that are already running (`target`), whose data the lab cannot \
                     copy back; a sandbox's data is restored at every start: use \"variant\" or \"point\""
                        .into(),
                ))
            }
            (Some(s), restore) if w.params.changes_data() && restore != Restore::None => {
                return Err(at(
                    span,
                    format!(
                        "this {} workload changes the data, and server {:?} is already running (`target`): the lab cannot \
                         copy its data back between points. Add restore = \"none\" (every point runs on the data the \
                         points before it left, and its manifest says the data was not restored), or use a sandbox (`id`)",
                        w.kind().name(),
                        s.label
                    ),
                ))
            }
            _ => {}
        }
        if let (Some(s), Params::Tpch(t)) = (running, &w.params) {
            if t.cold != Cold::Off {
                return Err(at(
                    r.cold.as_ref().map_or(rw.span(), |c| c.span()),
                    format!(
                        "cold restarts the server, and server {:?} is already running (`target`), not dbperf's to restart: remove cold",
                        s.label
                    ),
                ));
            }
        }
    }
    let Some(s) = running else { return Ok(()) };
    for (p, rp) in pinnings.iter().zip(&raw.pinnings) {
        if p.server_cpus.is_some() {
            let span = rp.get_ref().server_cpus.as_ref().map_or(rp.span(), |c| c.span());
            return Err(at(
                span,
                format!(
                    "server_cpus pins the server's process, and server {:?} is already running (`target`), not dbperf's \
                     to pin: remove server_cpus (client_cpus may stay)",
                    s.label
                ),
            ));
        }
    }
    if let Some(search) = &raw.search {
        return Err(at(
            search.span(),
            format!(
                "a [search] starts the server for every trial, and server {:?} is already running (`target`): search on a sandbox (`id`)",
                s.label
            ),
        ));
    }
    Ok(())
}

/// Checks `[network]`: the client kind, the shaping (as `--client-netns` reads it), and shards
/// that every workload can be split over.
fn network(
    raw: &Spanned<RawNetwork>,
    workloads: &[WorkloadSpec],
    users_spans: &[Range<usize>],
    at: &dyn Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Network, ExperimentError> {
    let n = raw.get_ref();
    let netns = match n.client.as_ref().map(|c| (c.get_ref().as_str(), c.span())) {
        None | Some(("local", _)) => false,
        Some(("netns", _)) => true,
        Some((other, span)) => {
            return Err(at(
                span,
                format!("[network] client must be \"netns\" (a network namespace of its own, root only) or \"local\" (as the server's URL says), got {other:?}"),
            ))
        }
    };
    let mut shaping = Vec::new();
    for (key, value) in [
        ("rate", &n.rate),
        ("burst", &n.burst),
        ("queue", &n.queue),
        ("delay", &n.delay),
    ] {
        if let Some(v) = value {
            shaping.push((v.span(), format!("{key}={}", v.get_ref().trim())));
        }
    }
    if let Some(l) = &n.loss {
        shaping.push((l.span(), format!("loss={}", l.get_ref())));
    }
    if let Some((span, _)) = shaping.first().filter(|_| !netns) {
        return Err(at(
            span.clone(),
            "[network] shapes the client's own namespace: add client = \"netns\"".into(),
        ));
    }
    for (span, item) in &shaping {
        item.parse::<dbperf_run::network::NetSpec>().map_err(|m| {
            at(
                span.clone(),
                format!("[network] {}", m.trim_start_matches("--client-netns ")),
            )
        })?;
    }
    let spec: Vec<String> = shaping.into_iter().map(|(_, i)| i).collect();
    let spec = spec.join(",");
    spec.parse::<dbperf_run::network::NetSpec>()
        .map_err(|m| at(raw.span(), format!("[network] {m}")))?;
    let shards = match &n.shards {
        Some(s) if !(1..=dbperf_core::bounds::MAX_SHARDS).contains(s.get_ref()) => {
            return Err(at(
                s.span(),
                format!(
                    "[network] shards must be 1 to {}, got {}",
                    dbperf_core::bounds::MAX_SHARDS,
                    s.get_ref()
                ),
            ))
        }
        Some(s) => *s.get_ref(),
        None => 1,
    };
    for (w, span) in workloads.iter().zip(users_spans) {
        if w.kind() == Kind::Tpch && shards > 1 {
            return Err(at(
                span.clone(),
                "[network] shards applies to the workloads the engine runs (sysbench, tpcc, linkbench, pgbench, lua); \
                 a TPC-H point runs on one client (spread a throughput test by hand: dbperf tpch throughput \
                 --shard I/N --start-at TIME on each client, then dbperf merge): move it to an experiment without shards"
                    .into(),
            ));
        }
        if let (super::workload::Params::Tpch(t), true) = (&w.params, netns) {
            if t.cold != super::workload::Cold::Off {
                return Err(at(
                    span.clone(),
                    "cold TPC-H runs restart the server from the client, which [network] client = \"netns\" puts in \
                     a namespace of its own: run cold tests in an experiment without the netns client"
                        .into(),
                ));
            }
        }
        if let Some(u) = w.users.iter().find(|u| **u < shards) {
            return Err(at(
                span.clone(),
                format!("{u} user(s) cannot be spread over [network] shards = {shards}: every shard needs one"),
            ));
        }
    }
    Ok(Network {
        netns: netns.then_some(spec),
        shards,
    })
}

impl Experiment {
    /// How many runs the plan of this experiment has (at most [`bounds::MAX_POINTS`]).
    pub fn runs(&self) -> u64 {
        let user_counts: u64 = self.workloads.iter().map(|w| w.users.len() as u64).sum();
        let every = [
            self.servers.len() as u64,
            self.variants.len() as u64,
            self.pinnings.len() as u64,
            user_counts,
            u64::from(self.repetitions),
        ]
        .iter()
        .fold(1u64, |n, m| n.saturating_mul(*m));
        let restricted = !self.excludes.is_empty() || self.variants.iter().any(|v| !v.servers.is_empty());
        if !restricted || every > bounds::MAX_POINTS.saturating_mul(100) {
            // Unrestricted, or too many to count one by one: the product is an upper bound.
            return every;
        }
        let mut runs = 0u64;
        for si in 0..self.servers.len() {
            for vi in 0..self.variants.len() {
                for pi in 0..self.pinnings.len() {
                    for (wi, w) in self.workloads.iter().enumerate() {
                        if self.includes(si, vi, pi, wi) {
                            runs += w.users.len() as u64 * u64::from(self.repetitions);
                        }
                    }
                }
            }
        }
        runs
    }

    /// Whether server `si`, variant `vi`, pinning `pi` and workload `wi` make points: the
    /// variant applies to the server and no `[[exclude]]` names the combination.
    pub fn includes(&self, si: usize, vi: usize, pi: usize, wi: usize) -> bool {
        let v = &self.variants[vi];
        (v.servers.is_empty() || v.servers.contains(&si))
            && !self.excludes.iter().any(|x| {
                x.server.is_none_or(|s| s == si)
                    && x.variant.is_none_or(|v| v == vi)
                    && x.pinning.is_none_or(|p| p == pi)
                    && x.workload.is_none_or(|w| w == wi)
            })
    }

    /// The variants that make points on server `si` ([`Experiment::includes`] with some
    /// pinning and workload): the ones whose settings that server must take.
    pub fn variants_on(&self, si: usize) -> impl Iterator<Item = &Variant> + '_ {
        (0..self.variants.len())
            .filter(move |&vi| {
                (0..self.pinnings.len()).any(|pi| (0..self.workloads.len()).any(|wi| self.includes(si, vi, pi, wi)))
            })
            .map(|vi| &self.variants[vi])
    }

    /// How long the points of variant `vi` and workload `wi` run: the variant's own
    /// `duration`, else the workload's.
    pub fn duration(&self, vi: usize, wi: usize) -> Duration {
        self.variants[vi].duration.unwrap_or(self.workloads[wi].duration)
    }

    /// The same experiment cut down to a smoke test: one repetition, 2 s runs without warmup,
    /// the first two user counts, and the smallest data: at most 2,000 rows per sysbench
    /// table, 1 TPC-C warehouse, a LinkBench graph of 2,000 nodes, TPC-H SF 0.01 once with
    /// cold restarts per run rather than per query and a 60 s timeout, pgbench scale 1. Its name gets `-quick` so its
    /// runs and state stay apart from the real experiment's.
    pub fn quick(mut self) -> Experiment {
        self.name.push_str("-quick");
        self.repetitions = 1;
        self.report_interval = Duration::from_secs(1);
        self.settle.max = self.settle.max.min(QUICK_SETTLE_MAX);
        self.warmup_steady = self.warmup_steady.map(|d| d.min(QUICK_SETTLE_MAX));
        for v in &mut self.variants {
            v.duration = None;
        }
        for w in &mut self.workloads {
            w.duration = Duration::from_secs(2);
            w.warmup = Duration::ZERO;
            w.users.truncate(2);
            match &mut w.params {
                Params::Sysbench(s) => {
                    s.size = match s.size {
                        DataSize::Rows(r) => DataSize::Rows(r.min(2000)),
                        DataSize::VsBufferPool(_) => DataSize::Rows(2000),
                    }
                }
                Params::Tpcc(t) => t.warehouses = Scale::Count(1),
                Params::Linkbench(l) => {
                    l.maxid1 = match l.maxid1 {
                        Scale::Count(n) => Scale::Count(n.min(2001)),
                        Scale::VsBufferPool(_) => Scale::Count(2001),
                    };
                    l.requests_per_requester = l.requests_per_requester.min(500);
                }
                Params::Tpch(t) => {
                    t.scale_factor = t.scale_factor.min(0.01);
                    t.repeat = 1;
                    t.streams = t.streams.min(2);
                    t.timeout = Some(t.timeout.unwrap_or(60).min(60));
                    if t.cold == Cold::Query {
                        t.cold = Cold::Run;
                    }
                }
                Params::Pgbench(p) => p.scale = 1,
                Params::Lua(l) => l.quick(),
            }
        }
        self
    }
}

/// A sysbench workload's own keys (`test`, `tables`, `table_size` or `data_vs_buffer_pool`,
/// `options`).
fn sysbench_keys(
    r: &RawWorkload,
    whole: Range<usize>,
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Sysbench, ExperimentError> {
    let test: Test = match &r.test {
        Some(t) => t.get_ref().parse().map_err(|e: String| at(t.span(), e))?,
        None => {
            return Err(at(
                whole,
                "this sysbench workload needs `test`, e.g. test = \"oltp_read_only\" (or give another `kind`)".into(),
            ))
        }
    };
    let tables = match &r.tables {
        Some(t) if !(1..=bounds::MAX_TABLES).contains(t.get_ref()) => {
            return Err(at(
                t.span(),
                format!("tables must be 1 to {}, got {}", bounds::MAX_TABLES, t.get_ref()),
            ))
        }
        Some(t) => *t.get_ref(),
        None => 1,
    };
    let size = match (&r.table_size, &r.data_vs_buffer_pool) {
        (Some(_), Some(d)) => {
            return Err(at(
                d.span(),
                "give either table_size or data_vs_buffer_pool, not both".into(),
            ))
        }
        (Some(n), None) if *n.get_ref() == 0 => {
            return Err(at(
                n.span(),
                format!("table_size must be 1 to {} rows, got 0", u32::MAX),
            ))
        }
        (Some(n), None) => DataSize::Rows(*n.get_ref()),
        (None, Some(d)) => DataSize::VsBufferPool(super::workload::vs_buffer_pool(d).map_err(|(s, m)| at(s, m))?),
        (None, None) => DataSize::Rows(10_000),
    };
    let mut options = Vec::new();
    for (k, v) in r.options.as_ref().map(|o| o.get_ref().iter()).into_iter().flatten() {
        let key = k.replace('-', "_");
        if super::LAB_OWNED_OPTIONS.contains(&key.as_str()) || SYSBENCH_DATA_KEYS.contains(&key.as_str()) {
            return Err(at(
                v.span(),
                format!("option {k:?} is set by the lab itself; use the workload's or the file's own keys (tables, table_size, users, duration, warmup)"),
            ));
        }
        let value = setting_value(v.get_ref()).map_err(|m| at(v.span(), format!("option {k}: {m}")))?;
        dbperf_commands::args::check_sysbench_option(test.name(), &key, &value).map_err(|m| at(v.span(), m))?;
        options.push((key, value));
    }
    Ok(Sysbench {
        test,
        tables,
        size,
        options,
    })
}

/// The `[[exclude]]` tables as indices, each name checked against the file's servers (labels),
/// variants, pinnings and workloads (as `lab plan` names them: `oltp_read_only`, `tpcc`,
/// `oltp_point_select#2`).
fn excludes(
    raw: &RawFile,
    servers: &[ServerSpec],
    variants: &[Variant],
    pinnings: &[Pinning],
    workloads: &[WorkloadSpec],
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Vec<Exclude>, ExperimentError> {
    let workload_names = super::plan::labels_of(workloads);
    let find =
        |value: &Option<Spanned<String>>, what: &str, names: &[&str]| -> Result<Option<usize>, ExperimentError> {
            let Some(v) = value else { return Ok(None) };
            names.iter().position(|n| n == v.get_ref()).map(Some).ok_or_else(|| {
                at(
                    v.span(),
                    format!(
                        "[[exclude]] {what} {:?} is not one of the file's: {}",
                        v.get_ref(),
                        names.join(", ")
                    ),
                )
            })
        };
    let mut out = Vec::new();
    for x in &raw.excludes {
        let r = x.get_ref();
        let server_names: Vec<&str> = servers.iter().map(|s| s.label.as_str()).collect();
        let variant_names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
        let pinning_names: Vec<&str> = pinnings.iter().map(|p| p.name.as_str()).collect();
        let workload_refs: Vec<&str> = workload_names.iter().map(String::as_str).collect();
        let ex = Exclude {
            server: find(&r.server, "server", &server_names)?,
            variant: find(&r.variant, "variant", &variant_names)?,
            pinning: find(&r.pinning, "pinning", &pinning_names)?,
            workload: find(&r.workload, "workload", &workload_refs)?,
        };
        if ex
            == (Exclude {
                server: None,
                variant: None,
                pinning: None,
                workload: None,
            })
        {
            return Err(at(
                x.span(),
                "an [[exclude]] names at least one of server, variant, pinning and workload (it leaves out their combination)"
                    .into(),
            ));
        }
        out.push(ex);
    }
    Ok(out)
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

fn settings(
    raw: &BTreeMap<String, Spanned<Value>>,
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Vec<(String, String)>, ExperimentError> {
    raw.iter()
        .map(|(k, v)| Ok((k.clone(), setting(k, v.get_ref()).map_err(|m| at(v.span(), m))?)))
        .collect()
}

/// A duration the lab passes as `--time` or `--warmup-time`: whole seconds, `min` or more.
fn whole_secs(
    value: &Option<Spanned<Secs>>,
    key: &str,
    min: u64,
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Option<Duration>, ExperimentError> {
    let Some(v) = value else { return Ok(None) };
    let d = v.get_ref().0;
    if d.subsec_nanos() != 0 || d.as_secs() < min {
        return Err(at(
            v.span(),
            format!(
                "{key} must be whole seconds, {min} to {} (e.g. 90, \"90s\" or \"5m\"), got {d:?}",
                bounds::MAX_SECS
            ),
        ));
    }
    Ok(Some(d))
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
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
    fn the_network_section_gives_the_client_namespace_shaping_and_shards() {
        assert_eq!(parse(MINIMAL).unwrap().network, Network { netns: None, shards: 1 });
        let with = |extra: &str| format!("{MINIMAL}\n[network]\n{extra}\n");
        let n = parse(&with("client = \"netns\"\nrate = \"1gbit\"\nloss = 0.5"))
            .unwrap()
            .network;
        assert_eq!(n.netns.as_deref(), Some("rate=1gbit,loss=0.5"));
        assert_eq!(
            parse(&with("client = \"netns\"")).unwrap().network.netns.as_deref(),
            Some("")
        );
        let shards = with("shards = 4");
        let e = error(&shards);
        assert!(
            e.contains("1 user(s) cannot be spread over [network] shards = 4"),
            "{e}"
        );
        let ok = with("shards = 1");
        assert_eq!(parse(&ok).unwrap().network.shards, 1);
        for (extra, says, at) in [
            ("client = \"remote\"", "must be \"netns\"", "\"remote\""),
            ("rate = \"1gbit\"", "add client = \"netns\"", "\"1gbit\""),
            ("client = \"netns\"\nrate = \"fast\"", "expected a rate", "\"fast\""),
            ("client = \"netns\"\ndelay = \"soon\"", "delay=soon", "\"soon\""),
            ("shards = 0", "shards must be 1 to", "0"),
            ("hosts = 3", "unknown field `hosts`", "hosts"),
        ] {
            let text = with(extra);
            let e = error(&text);
            assert!(e.contains(says), "{extra}: {e}");
            let needle = &text[text.find("[network]").unwrap()..];
            let pos = text.len() - needle.len() + needle.find(at).unwrap();
            let (line, _) = line_col(&text, pos);
            assert!(e.starts_with(&format!("exp.toml:{line}:")), "{extra}: {e}");
        }
    }

    #[test]
    fn a_tpch_point_takes_the_netns_client_but_not_shards_or_cold_runs() {
        let tpch = |workload: &str, network: &str| {
            format!("[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"tpch\"\nscale_factor = 0.1\n{workload}\n[network]\n{network}\n")
        };
        let n = parse(&tpch("", "client = \"netns\"\nrate = \"1gbit\""))
            .unwrap()
            .network;
        assert_eq!(n.netns.as_deref(), Some("rate=1gbit"));
        let e = error(&tpch("test = \"throughput\"\nstreams = 2", "shards = 2"));
        assert!(
            e.contains("a TPC-H point runs on one client") && e.contains("--shard I/N"),
            "{e}"
        );
        let e = error(&tpch("cold = true", "client = \"netns\""));
        assert!(e.contains("cold TPC-H runs restart the server"), "{e}");
    }

    #[test]
    fn variant_servers_durations_and_excludes_are_checked_by_name() {
        let base = "[[server]]\nid = \"mariadb-10.11\"\nlabel = \"a\"\n[[server]]\nid = \"mysql-8.0.31\"\nlabel = \"b\"\n[[variant]]\nname = \"v\"\n{V}\n[[workload]]\ntest = \"oltp_read_only\"\ntables = 1\ntable_size = 1000\nusers = [1]\n{X}";
        let file = |v: &str, x: &str| base.replace("{V}", v).replace("{X}", x);
        let e = parse(&file(
            "servers = [\"b\"]\nduration = \"1h\"",
            "[[variant]]\nname = \"w\"",
        ))
        .unwrap();
        assert_eq!(e.variants[0].servers, [1]);
        assert_eq!(e.variants[0].duration, Some(Duration::from_secs(3600)));
        // The variants whose settings each server must take: `v` runs on b only.
        let names = |si| e.variants_on(si).map(|v| v.name.as_str()).collect::<Vec<_>>();
        assert_eq!((names(0), names(1)), (vec!["w"], vec!["v", "w"]));
        let e = parse(&file(
            "",
            "[[variant]]\nname = \"w\"\n[[exclude]]\nserver = \"a\"\nvariant = \"v\"",
        ))
        .unwrap();
        assert_eq!(e.variants_on(0).map(|v| v.name.as_str()).collect::<Vec<_>>(), vec!["w"]);
        for (v, x, says, line) in [
            (
                "servers = [\"c\"]",
                "",
                "no server is labelled \"c\"; the servers are: a, b",
                9,
            ),
            ("servers = []", "", "servers is empty", 9),
            ("duration = 0", "", "duration must be whole seconds", 9),
            (
                "",
                "[[exclude]]\nworkload = \"tpcc\"",
                "[[exclude]] workload \"tpcc\" is not one of the file's: oltp_read_only",
                16,
            ),
            (
                "",
                "[[exclude]]\nvariant = \"w\"",
                "[[exclude]] variant \"w\" is not one of the file's: v",
                16,
            ),
            (
                "",
                "[[exclude]]\n",
                "names at least one of server, variant, pinning and workload",
                15,
            ),
            ("", "[[exclude]]\nserver = \"b\"", "server \"b\" has no runs", 4),
            ("servers = [\"a\"]", "", "server \"b\" has no runs", 4),
        ] {
            let e = error(&file(v, x));
            assert!(
                e.contains(says) && e.starts_with(&format!("exp.toml:{line}:")),
                "{v} {x}: {e}"
            );
        }
    }

    #[test]
    fn a_server_on_another_host_is_read_and_its_keys_checked() {
        let w = "[[workload]]\ntest = \"oltp_read_only\"\ntables = 1\ntable_size = 1000\nusers = [1]\n";
        let server = |keys: &str| format!("[[server]]\nid = \"mariadb-10.11\"\n{keys}\n{w}");
        // The server's CPUs are that host's (study 003's 16 and 24 cores), the client's this
        // machine's; with a server here, its CPUs are this machine's too.
        let pinning = "[[pinning]]\nname = \"cores24\"\nserver_cpus = \"0-23\"\n";
        let e = parse(&format!("{}{pinning}", server("host = \"ssh://bench@db1\""))).unwrap();
        assert_eq!(e.pinnings[0].server_cpus.as_ref().map(|c| c.cpus.len()), Some(24));
        let here = std::thread::available_parallelism().map_or(1, |n| n.get());
        if here < 24 {
            assert!(
                error(&format!("{}{pinning}", server(""))).contains("CPU"),
                "a CPU this machine lacks"
            );
            let client = "[[pinning]]\nname = \"c\"\nclient_cpus = \"0-23\"\n";
            assert!(error(&format!("{}{client}", server("host = \"ssh://bench@db1\""))).contains("CPU"));
        }
        let e = parse(&server(
            "host = \"ssh://bench@db1:2222\"\nssh = \"ssh -i '/k/lab key'\"\nlisten = \"10.0.0.2\"\nallow_from = [\"10.0.0.1\"]",
        ))
        .unwrap();
        let h = e.servers[0].host.as_ref().unwrap();
        assert_eq!((h.remote.host.as_str(), h.remote.port), ("db1", Some(2222)));
        assert_eq!(h.remote.ssh_line(), "ssh -i '/k/lab key'");
        assert_eq!(
            h.remote.home.as_deref(),
            Some(".dbperf"),
            "the login's default, said explicitly"
        );
        assert_eq!(h.listen.unwrap().to_string(), "10.0.0.2");
        assert_eq!(h.allow_from.len(), 1);
        for (keys, says, line) in [
            ("ssh = \"ssh -i k\"", "ssh goes with host", 3),
            ("allow_from = [\"10.0.0.1\"]", "allow_from goes with host", 3),
            ("host = \"db1\"", "ssh://", 3),
            ("host = \"ssh://u:pw@db1\"", "a password does not go here", 3),
            ("host = \"ssh://db1\"\nssh = \"ssh -i 'open\"", "quotes do not close", 4),
            ("host = \"ssh://db1\"\nlisten = \"db1.lab\"", "not an IP address", 4),
            ("host = \"ssh://db1\"\nlisten = \"0.0.0.0\"", "every address", 4),
        ] {
            let e = error(&server(keys));
            assert!(
                e.contains(says) && e.contains(&format!("exp.toml:{line}:")),
                "{keys}: {e}"
            );
        }
        let running =
            format!("[[server]]\ntarget = \"mysql://u@db1:3306/b\"\nhost = \"ssh://db1\"\nhome = \"/srv\"\n{w}");
        let e = error(&running);
        assert!(e.contains("home is for a sandbox") && e.contains("exp.toml:4:"), "{e}");
        let netns = server("host = \"ssh://db1\"\n[network]\nclient = \"netns\"");
        let e = error(&netns);
        assert!(
            e.contains("already across a real network") && e.contains("exp.toml:5:"),
            "{e}"
        );
        let telemetry_only = format!("[[server]]\ntarget = \"mysql://u@db1:3306/b\"\nhost = \"ssh://db1\"\n{w}");
        assert!(parse(&telemetry_only).unwrap().servers[0].host.is_some());
    }

    #[test]
    fn a_server_is_a_sandbox_or_a_running_server_never_both_or_neither() {
        let w = "[[workload]]\ntest = \"oltp_read_only\"\ntables = 1\ntable_size = 1000\nusers = [1]\n";
        let both = format!("[[server]]\nid = \"mariadb-10.11\"\ntarget = \"mysql://u@db1:3306/b\"\n{w}");
        let err = error(&both);
        assert!(
            err.contains("exp.toml:3:") && err.contains("`id`") && err.contains("not both"),
            "{err}"
        );
        let neither = format!("[[server]]\nlabel = \"x\"\n{w}");
        let err = error(&neither);
        assert!(err.contains("needs `id = ") && err.contains("target = "), "{err}");
        let ok = parse(&format!(
            "[[server]]\ntarget = \"mysql://u@db1:3307/b\"\nsettings = {{ innodb_io_capacity = 500 }}\n{w}"
        ))
        .unwrap();
        let s = &ok.servers[0];
        assert_eq!((s.label.as_str(), s.id.as_str()), ("db1:3307", "mysql://u@db1:3307/b"));
        assert!(s.running().is_some() && s.sandbox().is_none());
        let file = format!("[[server]]\nid = \"mariadb-10.11\"\ntarget_file = \"t\"\n{w}");
        assert!(error(&file).contains("target_file names the URL"), "{}", error(&file));
        let secret = format!("[[server]]\ntarget = \"mysql://u:hunter2@db1/b\"\n{w}");
        let err = error(&secret);
        assert!(
            err.contains("target holds a password") && !err.contains("hunter2"),
            "{err}"
        );
    }

    #[test]
    fn a_running_server_refuses_what_needs_its_process_naming_the_key() {
        let server = "[[server]]\ntarget = \"mysql://u@db1:3306/b\"\n";
        let ro = "[[workload]]\ntest = \"oltp_read_only\"\ntables = 1\ntable_size = 1000\nusers = [1]\n";
        let err = error(&format!("{server}jemalloc = true\n{ro}"));
        assert!(
            err.contains("exp.toml:3:") && err.contains("jemalloc") && err.contains("already running"),
            "{err}"
        );
        assert!(parse(&format!("{server}jemalloc = false\n{ro}")).is_ok());
        let err = error(&format!("{server}{ro}[[pinning]]\nname = \"p\"\nserver_cpus = \"0\"\n"));
        assert!(err.contains("server_cpus pins the server's process"), "{err}");
        let rw = "[[workload]]\ntest = \"oltp_read_write\"\ntables = 1\ntable_size = 1000\nusers = [1]\n";
        let err = error(&format!("{server}{rw}"));
        assert!(err.contains("restore = \"none\"") && err.contains("cannot"), "{err}");
        let none = parse(&format!("{server}{rw}restore = \"none\"\n")).unwrap();
        assert_eq!(none.workloads[0].restore, Restore::None);
        let err = error(&format!("[[server]]\nid = \"mariadb-10.11\"\n{rw}restore = \"none\"\n"));
        assert!(
            err.contains("restore = \"none\" is for servers that are already running"),
            "{err}"
        );
        let tpch = "[[workload]]\nkind = \"tpch\"\nscale_factor = 0.01\ncold = true\n";
        let err = error(&format!("{server}{tpch}"));
        assert!(err.contains("cold restarts the server"), "{err}");
    }

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
            (
                w.sysbench().unwrap().tables,
                w.sysbench().unwrap().size,
                w.users.clone()
            ),
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

    /// The error of `text`, which must fail.
    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn huge_durations_are_refused_with_the_range() {
        for line in [
            "duration = 1e30",
            "warmup = \"6000000000000000h\"",
            "report_interval = 1e30",
            "duration = -5",
        ] {
            let err = error(&format!("{line}\n{MINIMAL}"));
            let column = line.find('=').unwrap() + 3;
            assert!(err.starts_with(&format!("exp.toml:1:{column}:")), "{line}: {err}");
            assert!(err.contains("0 to 315360000 seconds (10 years)"), "{line}: {err}");
        }
        let err = error(&MINIMAL.replace("users = [1, 4]", "users = [1, 4]\nwarmup = \"99999999999h\""));
        assert!(err.starts_with("exp.toml:10:10:") && err.contains("10 years"), "{err}");
    }

    #[test]
    fn durations_the_lab_cannot_pass_on_are_refused() {
        let err = error(&format!("duration = \"90.5s\"\n{MINIMAL}"));
        assert!(
            err.starts_with("exp.toml:1:12:") && err.contains("whole seconds"),
            "{err}"
        );
        let err = error(&format!("duration = 0\n{MINIMAL}"));
        assert!(
            err.starts_with("exp.toml:1:12:") && err.contains("1 to 315360000"),
            "{err}"
        );
        let err = error(&format!("report_interval = 0\n{MINIMAL}"));
        assert!(
            err.starts_with("exp.toml:1:19:") && err.contains("report_interval must be 1 s"),
            "{err}"
        );
        let e = parse(&format!("report_interval = \"2.5s\"\nwarmup = \"1m\"\n{MINIMAL}")).unwrap();
        assert_eq!(e.report_interval, Duration::from_millis(2500));
        assert_eq!(e.workloads[0].warmup, Duration::from_secs(60));
    }

    #[test]
    fn counts_are_range_checked_where_written() {
        let err = error(&MINIMAL.replace("tables = 2", "tables = 0"));
        assert!(
            err.starts_with("exp.toml:7:10:") && err.contains("tables must be 1 to"),
            "{err}"
        );
        let err = error(&MINIMAL.replace("table_size = 1000", "table_size = 0"));
        assert!(err.starts_with("exp.toml:8:14:") && err.contains("table_size"), "{err}");
        let err = error(&MINIMAL.replace("users = [1, 4]", "users = [1, 100000000]"));
        assert!(err.starts_with("exp.toml:9:9:") && err.contains("1 to 100000"), "{err}");
        let err = error(&MINIMAL.replace("users = [1, 4]", "users = [4, 1, 4]"));
        assert!(err.starts_with("exp.toml:9:9:") && err.contains("4 twice"), "{err}");
        let err = error(&format!("repetitions = 1000000000\n{MINIMAL}"));
        assert!(err.starts_with("exp.toml:1:15:") && err.contains("1 to 1000"), "{err}");
        let err = error(&MINIMAL.replace("table_size = 1000", "data_vs_buffer_pool = 1e300"));
        assert!(
            err.starts_with("exp.toml:8:23:") && err.contains("at most 1000"),
            "{err}"
        );
    }

    #[test]
    fn plans_too_large_are_refused_before_they_are_made() {
        // 1,000 repetitions x 200 user counts = 200,000 runs.
        let users: Vec<String> = (1..=200).map(|u| u.to_string()).collect();
        let text = format!(
            "repetitions = 1000\n{}",
            MINIMAL.replace("users = [1, 4]", &format!("users = [{}]", users.join(", ")))
        );
        let err = error(&text);
        assert!(
            err.starts_with("exp.toml:1:15:") && err.contains("200000 runs") && err.contains("at most 100000"),
            "{err}"
        );
        // Six axes of ten values would be a million variants: refused before any is made.
        let mut axes = String::from("\n[variants]\n");
        for k in ["a_1", "a_2", "a_3", "a_4", "a_5", "a_6"] {
            axes.push_str(&format!("innodb_{k} = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n"));
        }
        let started = std::time::Instant::now();
        let err = error(&format!("{MINIMAL}{axes}"));
        assert!(
            err.contains("1000000 combinations") && err.contains("at most 10000 variants"),
            "{err}"
        );
        assert!(err.starts_with("exp.toml:11:"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn workload_options_must_be_sysbench_options() {
        let with = |opts: &str| {
            MINIMAL.replace(
                "table_size = 1000",
                &format!("table_size = 1000\noptions = {{ {opts} }}"),
            )
        };
        let err = error(&with("rnage_size = 100"));
        assert!(
            err.starts_with("exp.toml:9:26:") && err.contains("\"rnage_size\" is not a sysbench option"),
            "{err}"
        );
        let err = error(&with("target-file = \"/elsewhere\""));
        assert!(err.contains("set by the lab itself"), "{err}");
        let err = error(&with("range_size = \"wide\""));
        assert!(
            err.starts_with("exp.toml:9:26:") && err.contains("range_size") && err.contains("wide"),
            "{err}"
        );
        let e = parse(&with("range-size = 5, skip_trx = true")).unwrap();
        assert_eq!(
            e.workloads[0].sysbench().unwrap().options,
            vec![
                ("range_size".to_string(), "5".to_string()),
                ("skip_trx".to_string(), "ON".to_string())
            ]
        );
    }

    #[test]
    fn size_settings_must_be_sizes() {
        let text = MINIMAL.replace(
            "id = \"mariadb-10.11\"",
            "id = \"mariadb-10.11\"\nsettings = { innodb_buffer_pool_size = \"lots\" }",
        );
        let err = error(&text);
        assert!(
            err.starts_with("exp.toml:4:40:") && err.contains("\"lots\" is not a size"),
            "{err}"
        );
        let err = error(&format!(
            "{MINIMAL}\n[variants]\ninnodb_log_file_size = [\"64M\", \"big\"]\n"
        ));
        assert!(
            err.starts_with("exp.toml:12:24:") && err.contains("\"big\" is not a size"),
            "{err}"
        );
        let ok = MINIMAL.replace(
            "id = \"mariadb-10.11\"",
            "id = \"mariadb-10.11\"\nsettings = { innodb_buffer_pool_size = \"2G\", innodb_log_file_size = 67108864 }",
        );
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn users_beyond_max_connections_are_refused() {
        let text = MINIMAL
            .replace(
                "id = \"mariadb-10.11\"",
                "id = \"mariadb-10.11\"\nsettings = { max_connections = 100 }",
            )
            .replace("users = [1, 4]", "users = [1, 99]");
        let err = error(&text);
        assert!(err.starts_with("exp.toml:10:9:"), "{err}");
        assert!(
            err.contains("max_connections = 100") && err.contains("at least 101"),
            "{err}"
        );
        // A variant's max_connections wins over the server's.
        let text = format!("{text}\n[[variant]]\nname = \"many\"\nsettings = {{ max_connections = 1000 }}\n");
        assert!(parse(&text).is_ok());
        let err = error(&MINIMAL.replace(
            "id = \"mariadb-10.11\"",
            "id = \"mariadb-10.11\"\nsettings = { max_connections = \"lots\" }",
        ));
        assert!(err.contains("not a number of connections"), "{err}");
    }

    const TPCC: &str = r#"
[[server]]
id = "mariadb-10.11"

[[workload]]
kind = "tpcc"
warehouses = 2
users = [4, 8]
"#;

    #[test]
    fn workload_kinds_get_their_keys_and_defaults() {
        let e = parse(TPCC).unwrap();
        let w = &e.workloads[0];
        assert_eq!(w.kind(), Kind::Tpcc);
        assert_eq!(
            w.restore,
            Restore::Point,
            "tpcc writes: every point starts from the snapshot"
        );
        assert_eq!(
            w.params,
            Params::Tpcc(super::super::workload::Tpcc {
                warehouses: Scale::Count(2),
                mode: "max".into(),
                warehouse_choice: "fixed".into(),
                wait_scale: 1.0,
                schema: "dbperf".into()
            })
        );
        // tpcc-mysql's tables: a warehouse per transaction, as tpcc-mysql draws them.
        let e = parse(&TPCC.replace("warehouses = 2", "warehouses = 2\nschema = \"tpcc-mysql\"")).unwrap();
        assert!(matches!(&e.workloads[0].params, Params::Tpcc(t) if t.warehouse_choice == "per-transaction"));
        let e = parse(&TPCC.replace(
            "warehouses = 2",
            "data_vs_buffer_pool = 2.0\nschema = \"tpcc-mysql\"\nwarehouse_choice = \"fixed\"",
        ))
        .unwrap();
        assert!(matches!(&e.workloads[0].params,
            Params::Tpcc(t) if t.warehouse_choice == "fixed" && t.warehouses == Scale::VsBufferPool(2.0)));
        for (extra, says) in [
            (
                "warehouses = 2\nmode = \"spec\"\nwarehouse_choice = \"per-transaction\"",
                "warehouse_choice is for mode = \"max\"",
            ),
            (
                "warehouses = 2\nwarehouse_choice = \"random\"",
                "is not one of \"fixed\", \"per-transaction\"",
            ),
            (
                "warehouses = 2\ndata_vs_buffer_pool = 2.0",
                "either warehouses or data_vs_buffer_pool",
            ),
            ("data_vs_buffer_pool = 0.0", "must be above 0"),
        ] {
            let err = error(&TPCC.replace("warehouses = 2", extra));
            assert!(err.contains(says), "{extra}: {err}");
        }
        // sysbench stays the default kind, restored once per server start.
        let e = parse(MINIMAL).unwrap();
        assert_eq!(
            (e.workloads[0].kind(), e.workloads[0].restore),
            (Kind::Sysbench, Restore::Variant)
        );
        let e = parse(&TPCC.replace(
            "warehouses = 2",
            "warehouses = 2\nrestore = \"variant\"\nmode = \"spec\"\nwait_scale = 0.5\nchecksum = true",
        ))
        .unwrap();
        assert_eq!(e.workloads[0].restore, Restore::Variant);
        assert!(e.workloads[0].checksum);
        let lb = "[[server]]\nid = \"mysql-8.0.31\"\n[[workload]]\nkind = \"linkbench\"\nmaxid1 = 10001\nusers = [16]\nmix = \"fb2017\"\nrequests_per_requester = 100\n";
        match &parse(lb).unwrap().workloads[0].params {
            Params::Linkbench(l) => assert_eq!(
                (l.maxid1, l.mix.as_str(), l.requests_per_requester),
                (Scale::Count(10001), "fb2017", 100)
            ),
            other => panic!("{other:?}"),
        }
        let h = "[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"tpch\"\nscale_factor = 0.1\ncold = true\ntimeout = 600\ntable_engine = \"myisam\"\nrepeat = 5\n";
        let e = parse(h).unwrap();
        assert_eq!(e.workloads[0].users, vec![1]);
        match &e.workloads[0].params {
            Params::Tpch(t) => {
                assert_eq!(
                    (t.test, t.cold, t.timeout, t.repeat),
                    (TpchTest::Power, Cold::Query, Some(600), 5)
                );
                assert_eq!(t.table_engine.as_deref(), Some("MyISAM"));
            }
            other => panic!("{other:?}"),
        }
        let pg = "[[server]]\nid = \"postgres-17\"\n[[workload]]\nkind = \"pgbench\"\nscale = 10\nscript = \"select-only\"\nusers = [1, 8]\n";
        assert_eq!(parse(pg).unwrap().workloads[0].restore, Restore::Point);
    }

    #[test]
    fn tpch_queries_are_a_subset_of_the_22_for_power_only() {
        let h = "[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"tpch\"\nscale_factor = 0.01\nqueries = [18, 1, 9]\n";
        match &parse(h).unwrap().workloads[0].params {
            Params::Tpch(t) => assert_eq!(t.queries, vec![18, 1, 9]),
            other => panic!("{other:?}"),
        }
        let all = h.replace("queries = [18, 1, 9]\n", "");
        match &parse(&all).unwrap().workloads[0].params {
            Params::Tpch(t) => assert!(t.queries.is_empty(), "none given: all 22"),
            other => panic!("{other:?}"),
        }
        let err = error(&h.replace("[18, 1, 9]", "[1, 23]"));
        assert!(
            err.contains(":6:") && err.contains("queries must be 1 to 22, got 23"),
            "{err}"
        );
        let err = error(&h.replace("[18, 1, 9]", "[3, 3]"));
        assert!(err.contains("query 3 is listed twice"), "{err}");
        let err = error(&h.replace("[18, 1, 9]", "[]"));
        assert!(err.contains("queries is empty"), "{err}");
        let err = error(&h.replace("queries", "test = \"throughput\"\nqueries"));
        assert!(err.contains("queries is for test = \"power\""), "{err}");
        let err = error(&h.replace(
            "kind = \"tpch\"\nscale_factor = 0.01",
            "kind = \"tpcc\"\nwarehouses = 1",
        ));
        assert!(err.contains("`queries` is a tpch key"), "{err}");
    }

    #[test]
    fn keys_of_another_kind_are_refused_by_name_and_position() {
        let err = error(&TPCC.replace("kind = \"tpcc\"", "kind = \"linkbench\"\nmaxid1 = 1001"));
        assert!(err.starts_with("exp.toml:8:14:"), "{err}");
        assert!(
            err.contains("`warehouses` is a tpcc key; this workload is kind = \"linkbench\""),
            "{err}"
        );
        // The default kind is sysbench.
        let err = error(&MINIMAL.replace("tables = 2", "warehouses = 2"));
        assert!(
            err.starts_with("exp.toml:7:14:") && err.contains("`warehouses` is a tpcc key"),
            "{err}"
        );
        assert!(err.contains("(the default)"), "{err}");
        let err = error(&TPCC.replace("warehouses = 2", "warehouses = 2\ntable_size = 100"));
        assert!(
            err.starts_with("exp.toml:8:14:") && err.contains("`table_size` is a sysbench key"),
            "{err}"
        );
        let err = error(&TPCC.replace("warehouses = 2", "warehouses = 2\nscale_factor = 1"));
        assert!(err.contains("`scale_factor` is a tpch key"), "{err}");
        let err = error(&TPCC.replace("warehouses = 2", "warehouses = 2\nwarehuoses = 2"));
        assert!(err.starts_with("exp.toml:8:1:") && err.contains("warehuoses"), "{err}");
    }

    #[test]
    fn workload_values_are_checked_where_written() {
        let cases: &[(&str, &str, &str)] = &[
            ("kind = \"tpcc\"", "kind = \"tpc-c\"", "exp.toml:6:8:"),
            ("warehouses = 2", "warehouses = 0", "exp.toml:7:14:"),
            ("warehouses = 2", "warehouses = 2\nmode = \"fast\"", "exp.toml:8:8:"),
            ("warehouses = 2", "warehouses = 2\nwait_scale = -1.0", "exp.toml:8:14:"),
            ("warehouses = 2", "warehouses = 2\nschema = \"tpcc\"", "exp.toml:8:10:"),
            (
                "warehouses = 2",
                "warehouses = 2\nrestore = \"never\"",
                "exp.toml:8:11:",
            ),
            ("users = [4, 8]", "users = [0]", "exp.toml:8:9:"),
        ];
        for (from, to, at) in cases {
            let err = error(&TPCC.replace(from, to));
            assert!(err.starts_with(at), "{to}: {err}");
        }
        let err = error(&TPCC.replace("warehouses = 2\n", ""));
        assert!(err.contains("needs `warehouses`"), "{err}");
        let err = error(&TPCC.replace("users = [4, 8]\n", ""));
        assert!(err.contains("needs `users`"), "{err}");
        let h = "[[server]]\nid = \"postgres-17\"\n[[workload]]\nkind = \"tpch\"\nscale_factor = 1\ntable_engine = \"MyISAM\"\n";
        let err = error(h);
        assert!(err.starts_with("exp.toml:6:16:") && err.contains("PostgreSQL"), "{err}");
        let err = error(&h.replace("table_engine = \"MyISAM\"", "streams = 4"));
        assert!(err.starts_with("exp.toml:6:11:") && err.contains("throughput"), "{err}");
        let err = error(&h.replace("table_engine = \"MyISAM\"", "cold = \"always\""));
        assert!(err.starts_with("exp.toml:6:8:") && err.contains("\"query\""), "{err}");
        let err = error(
            &h.replace("scale_factor = 1", "scale_factor = 0")
                .replace("table_engine = \"MyISAM\"\n", ""),
        );
        assert!(
            err.starts_with("exp.toml:5:16:") && err.contains("scale_factor"),
            "{err}"
        );
        let err = error(&h.replace("table_engine = \"MyISAM\"", "users = [2]"));
        assert!(err.starts_with("exp.toml:6:9:") && err.contains("streams"), "{err}");
        let err = error(
            &TPCC
                .replace("warehouses = 2", "warehouses = 2\nchecksum = true")
                .replace("mariadb-10.11", "postgres-17"),
        );
        assert!(err.contains("CHECKSUM TABLE"), "{err}");
        let pg = "[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"pgbench\"\nusers = [1]\n";
        let err = error(pg);
        assert!(
            err.starts_with("exp.toml:4:8:") && err.contains("PostgreSQL only"),
            "{err}"
        );
        let err = error(
            &pg.replace("mariadb-10.11", "postgres-17")
                .replace("users", "script = \"tpcc\"\nusers"),
        );
        assert!(
            err.starts_with("exp.toml:5:10:") && err.contains("select-only"),
            "{err}"
        );
    }

    #[test]
    fn settle_is_each_by_default_and_takes_a_policy_and_a_cap() {
        let e = parse(MINIMAL).unwrap();
        assert_eq!(
            e.settle,
            Settle {
                policy: SettlePolicy::Each,
                max: DEFAULT_SETTLE_MAX
            }
        );
        let e = parse(&format!("settle = \"first\"\nsettle_max = \"90s\"\n{MINIMAL}")).unwrap();
        assert_eq!(
            e.settle,
            Settle {
                policy: SettlePolicy::First,
                max: Duration::from_secs(90)
            }
        );
        assert_eq!(e.clone().quick().settle.max, QUICK_SETTLE_MAX);
        let err = error(&format!("settle = \"always\"\n{MINIMAL}"));
        assert!(
            err.contains("each") && err.contains("first") && err.contains("off"),
            "{err}"
        );
        let err = error(&format!("settle_max = \"0s\"\n{MINIMAL}"));
        assert!(err.contains("settle_max must be whole seconds, 1 to"), "{err}");
    }

    #[test]
    fn quick_shrinks_every_kind() {
        let h = "[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"tpch\"\nscale_factor = 10\ncold = true\nrepeat = 5\n[[workload]]\nkind = \"tpcc\"\nwarehouses = 100\nusers = [1, 2, 4]\n";
        let e = parse(h).unwrap().quick();
        match &e.workloads[0].params {
            Params::Tpch(t) => assert_eq!((t.scale_factor, t.repeat, t.cold), (0.01, 1, Cold::Run)),
            other => panic!("{other:?}"),
        }
        match &e.workloads[1].params {
            Params::Tpcc(t) => assert_eq!(t.warehouses, Scale::Count(1)),
            other => panic!("{other:?}"),
        }
        assert_eq!(e.workloads[1].users, vec![1, 2]);
    }

    #[test]
    fn missing_sections_say_what_to_add() {
        let err = parse("repetitions = 2").unwrap_err().to_string();
        assert!(err.contains("[[server]]"), "{err}");
        let err = parse("[[server]]\nid = \"mariadb-10.11\"\n").unwrap_err().to_string();
        assert!(err.contains("[[workload]]"), "{err}");
    }

    /// A directory with an experiment file `exp.toml` (its text given later) and the scripts
    /// it may name: `bench.lua` (options rows, mode, hot; a prepare), `noprep.lua` (no
    /// prepare), `broken.lua` (a syntax error on line 2), `sql/a.sql`, `b.sql`, `shell.sql`.
    fn script_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::write(
            p.join("bench.lua"),
            "sysbench.cmdline.options = {\n  rows = {\"Rows per table\", 100},\n  mode = {\"Mode\", \"fast\"},\n  hot = {\"Hot rows only\", false},\n}\nfunction prepare() end\nfunction event() end\n",
        )
        .unwrap();
        std::fs::write(p.join("noprep.lua"), "function event() end\n").unwrap();
        std::fs::write(p.join("broken.lua"), "function event()\n  local = 1\nend\n").unwrap();
        std::fs::create_dir(p.join("sql")).unwrap();
        std::fs::write(
            p.join("sql/a.sql"),
            "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
        )
        .unwrap();
        std::fs::write(p.join("b.sql"), "SELECT :n;\n").unwrap();
        std::fs::write(p.join("shell.sql"), "\\shell ls\nSELECT 1;\n").unwrap();
        dir
    }

    const LUA: &str = r#"duration = 30
[[server]]
id = "mariadb-10.11"

[[workload]]
kind = "lua"
script = "bench.lua"
options = { rows = 500, hot = true }
users = [1, 4]
warmup = 5
"#;

    /// `text` as `exp.toml` in `dir`, parsed.
    fn parse_at(dir: &Path, text: &str) -> Result<Experiment, ExperimentError> {
        Experiment::parse(text, &dir.join("exp.toml"))
    }

    /// The error of `text` in `dir`, with the directory cut from its start: `exp.toml:L:C: ...`.
    fn error_at(dir: &Path, text: &str) -> String {
        let err = parse_at(dir, text).unwrap_err().to_string();
        err.strip_prefix(&format!("{}/", dir.display()))
            .unwrap_or(&err)
            .to_owned()
    }

    /// `exp.toml:LINE:COLUMN:` of the first `needle` in `text`.
    fn where_is(text: &str, needle: &str) -> String {
        let (line, column) = line_col(text, text.find(needle).unwrap());
        format!("exp.toml:{line}:{column}:")
    }

    #[test]
    fn lua_workloads_take_a_script_beside_the_file_its_options_and_the_shared_keys() {
        let dir = script_dir();
        let e = parse_at(dir.path(), LUA).unwrap();
        let w = &e.workloads[0];
        assert_eq!(w.kind(), Kind::Lua);
        assert_eq!(
            (w.users.clone(), w.duration, w.warmup),
            (vec![1, 4], Duration::from_secs(30), Duration::from_secs(5))
        );
        let Params::Lua(l) = &w.params else {
            panic!("{:?}", w.params)
        };
        assert_eq!(l.script, std::path::absolute(dir.path().join("bench.lua")).unwrap());
        assert!(l.script.is_absolute(), "the child runs elsewhere: {:?}", l.script);
        assert_eq!(l.name, "bench");
        assert_eq!(
            l.options,
            vec![
                ("hot".to_string(), "on".to_string()),
                ("rows".to_string(), "500".to_string())
            ]
        );
        assert!(l.general.is_empty() && !l.oltp_common && !l.prewarm);
        assert_eq!(w.restore, Restore::Point, "a user's script is taken to write");
        // Given at its default, an option does not make another data set.
        let (by, data) = l.data();
        assert_eq!(by, l.script.display().to_string());
        assert_eq!(data, l.options);
        let at_default = parse_at(dir.path(), &LUA.replace("rows = 500", "rows = 100")).unwrap();
        let Params::Lua(d) = &at_default.workloads[0].params else {
            panic!()
        };
        assert_eq!(d.data().1, vec![("hot".to_string(), "on".to_string())]);
        // dbperf lua's general options pass through, `restore` overrides, --quick keeps it.
        let e = parse_at(
            dir.path(),
            &LUA.replace(
                "hot = true",
                "hot = true, rand_type = \"uniform\", db-ps-mode = \"disable\"",
            )
            .replace("warmup = 5", "warmup = 5\nrestore = \"variant\""),
        )
        .unwrap();
        let Params::Lua(l) = &e.workloads[0].params else {
            panic!()
        };
        assert_eq!(
            l.general,
            vec![
                ("db-ps-mode".to_string(), "disable".to_string()),
                ("rand-type".to_string(), "uniform".to_string())
            ]
        );
        assert_eq!(e.workloads[0].restore, Restore::Variant);
        assert_eq!(e.clone().quick().workloads[0].kind(), Kind::Lua);
        // The plan labels it by the script and keys its data by the script and options.
        let plan = super::super::Plan::new(e);
        assert_eq!(plan.groups[0].points[0].id, "mariadb-10.11/default/lua-bench/t1/r1");
        assert!(
            plan.datasets[0].key().starts_with("lua-bench-hot=on-rows=500"),
            "{}",
            plan.datasets[0].key()
        );
    }

    #[test]
    fn sysbench_scripts_by_name_share_oltp_data_and_read_only_ones_restore_once() {
        if !Path::new("/usr/share/sysbench/oltp_common.lua").is_file() {
            eprintln!("SKIPPED: sysbench's scripts are not installed (apt-get install -y sysbench)");
            return;
        }
        let text = "[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"lua\"\nscript = \"oltp_point_select\"\noptions = { tables = 2, table_size = 1000, range_size = 5 }\nusers = [1]\n[[workload]]\nkind = \"lua\"\nscript = \"/usr/share/sysbench/oltp_write_only.lua\"\noptions = { tables = 2, table_size = 1000 }\nusers = [2]\n";
        let e = parse(text).unwrap();
        let (Params::Lua(ro), Params::Lua(rw)) = (&e.workloads[0].params, &e.workloads[1].params) else {
            panic!()
        };
        assert_eq!(ro.script, Path::new("/usr/share/sysbench/oltp_point_select.lua"));
        assert!(ro.read_only && ro.oltp_common && ro.prewarm, "{ro:?}");
        assert!(!rw.read_only && rw.oltp_common, "{rw:?}");
        assert_eq!(
            (e.workloads[0].restore, e.workloads[1].restore),
            (Restore::Variant, Restore::Point)
        );
        // range_size does not shape the tables: both scripts prepare one data set.
        assert_eq!(ro.data(), rw.data());
        let plan = super::super::Plan::new(e.clone());
        assert_eq!(plan.datasets.len(), 1);
        assert_eq!(plan.datasets[0].key(), "lua-oltp_common-table_size=1000-tables=2");
        let quick = e.quick();
        let Params::Lua(q) = &quick.workloads[0].params else {
            panic!()
        };
        assert!(q.options.contains(&("table_size".to_string(), "1000".to_string())));
        // The script's own option checks apply.
        let err = error(&text.replace("range_size = 5", "range_size = \"wide\""));
        assert!(
            err.starts_with(&where_is(text, "5 }")) && err.contains("expected a number"),
            "{err}"
        );
    }

    #[test]
    fn lua_mistakes_are_errors_where_written_saying_what_to_do() {
        let dir = script_dir();
        let d = dir.path();
        let cases: &[(&str, &str, &str, &str)] = &[
            // (replace, with, where the error points, what it says)
            (
                "\"bench.lua\"",
                "\"nope.lua\"",
                "\"nope.lua\"",
                "read from the experiment file's directory",
            ),
            (
                "\"bench.lua\"",
                "\"nope\"",
                "\"nope\"",
                "a sysbench script's name such as \"oltp_read_write\"",
            ),
            (
                "\"bench.lua\"",
                "\"noprep.lua\"",
                "\"noprep.lua\"",
                "has no prepare command",
            ),
            ("\"bench.lua\"", "\"broken.lua\"", "\"broken.lua\"", "broken.lua:2"),
            ("rows = 500", "rwos = 500", "500", "did you mean --rows?"),
            (
                "rows = 500",
                "rows = \"many\"",
                "\"many\"",
                "--rows=many: expected a number",
            ),
            ("rows = 500", "threads = 8", "8", "set by the lab itself"),
            ("rows = 500", "percentile = \"high\"", "\"high\"", "option percentile"),
            (
                "rows = 500",
                "rows = { a = 1 }",
                "{ a = 1 }",
                "option rows: expected a string, number",
            ),
        ];
        for (from, to, at, says) in cases {
            let text = LUA.replace(from, to);
            let err = error_at(d, &text);
            assert!(err.starts_with(&where_is(&text, at)), "{to}: {err}");
            assert!(err.contains(says), "{to}: {err}");
        }
        // A misspelt key of the workload, a missing script, another kind's key.
        let text = LUA.replace("script =", "scirpt =");
        let err = error_at(d, &text);
        assert!(
            err.starts_with(&where_is(&text, "scirpt")) && err.contains("unknown field `scirpt`"),
            "{err}"
        );
        let err = error_at(d, &LUA.replace("script = \"bench.lua\"\n", ""));
        assert!(
            err.contains("a lua workload needs `script`") && err.contains("oltp_read_write"),
            "{err}"
        );
        let text = LUA.replace("users = [1, 4]", "users = [1, 4]\nwarehouses = 2");
        let err = error_at(d, &text);
        assert!(
            err.starts_with(&where_is(&text, "2\n"))
                && err.contains("`warehouses` is a tpcc key; this workload is kind = \"lua\""),
            "{err}"
        );
        let text = LUA.replace("kind = \"lua\"", "kind = \"tpcc\"\nwarehouses = 1");
        let err = error_at(d, &text);
        assert!(err.contains("`script` is a pgbench/lua key"), "{err}");
        assert!(error_at(d, &LUA.replace("kind = \"lua\"", "kind = \"luajit\""))
            .contains("\"lua\" (a sysbench Lua script)"));
    }

    #[test]
    fn sysbench_and_lua_workloads_refuse_the_same_lab_owned_options() {
        let dir = script_dir();
        let d = dir.path();
        for key in super::super::LAB_OWNED_OPTIONS {
            let lua = LUA.replace("rows = 500", &format!("{key} = \"1\""));
            let err = error_at(d, &lua);
            assert!(err.contains("set by the lab itself"), "lua {key}: {err}");
            let sysbench = MINIMAL.replace(
                "table_size = 1000",
                &format!("table_size = 1000\noptions = {{ {} = \"1\" }}", key.replace('_', "-")),
            );
            let err = error(&sysbench);
            assert!(err.contains("set by the lab itself"), "sysbench {key}: {err}");
        }
        // A sysbench workload's own keys, not a Lua script's: `tables` is the script's option
        // here, checked against what it declares.
        let err = error(&MINIMAL.replace("table_size = 1000", "table_size = 1000\noptions = { tables = 3 }"));
        assert!(err.contains("set by the lab itself"), "{err}");
        let err = error_at(d, &LUA.replace("rows = 500", "tables = 3"));
        assert!(err.contains("unknown option --tables"), "{err}");
    }

    const PG_FILES: &str = r#"[[server]]
id = "postgres-17"

[[workload]]
kind = "pgbench"
scale = 2
files = ["sql/a.sql@3", "b.sql"]
builtins = ["select@1"]
define = { n = 7, name = "x" }
protocol = "simple"
users = [1, 8]
"#;

    #[test]
    fn pgbench_takes_script_files_builtins_defines_and_a_protocol() {
        let dir = script_dir();
        let d = dir.path();
        let e = parse_at(d, PG_FILES).unwrap();
        let Params::Pgbench(p) = &e.workloads[0].params else {
            panic!()
        };
        let abs = |f: &str| std::path::absolute(d.join(f)).unwrap().display().to_string();
        assert_eq!(
            p.scripts.files,
            vec![format!("{}@3", abs("sql/a.sql")), format!("{}@1", abs("b.sql"))]
        );
        assert_eq!(p.scripts.builtins, vec!["select-only@1"]);
        assert_eq!(
            p.scripts.define,
            vec![
                ("n".to_string(), "7".to_string()),
                ("name".to_string(), "x".to_string())
            ]
        );
        assert_eq!(p.scripts.protocol.as_deref(), Some("simple"));
        assert_eq!((p.scale, p.script.as_str(), p.label()), (2, "", "select-only+a+b"));
        assert_eq!(e.workloads[0].restore, Restore::Point);
        let plan = super::super::Plan::new(e);
        assert_eq!(
            plan.groups[0].points[0].id,
            "postgres-17/default/pgbench-select-only+a+b/t1/r1"
        );
        // `script` alone still names one built-in.
        let one = "[[server]]\nid = \"postgres-17\"\n[[workload]]\nkind = \"pgbench\"\nscript = \"select-only\"\nusers = [1]\n";
        let Params::Pgbench(p) = &parse(one).unwrap().workloads[0].params else {
            panic!()
        };
        assert_eq!((p.script.as_str(), p.label()), ("select-only", "select-only"));
        assert_eq!(
            p.scripts,
            PgbenchScripts {
                label: String::new(),
                ..Default::default()
            }
        );

        let cases: &[(&str, &str, &str, &str)] = &[
            ("\"b.sql\"", "\"c.sql\"", "\"c.sql\"", "c.sql is not a file"),
            ("\"b.sql\"", "\"shell.sql\"", "\"shell.sql\"", "shell"),
            (
                "\"sql/a.sql@3\"",
                "\"sql/a.sql@-1\"",
                "\"sql/a.sql@-1\"",
                "must be a number >= 0",
            ),
            ("\"select@1\"", "\"tpcc\"", "\"tpcc\"", "builtins:"),
            (
                "protocol = \"simple\"",
                "protocol = \"pipelined\"",
                "\"pipelined\"",
                "protocol:",
            ),
            ("n = 7", "\"a b\" = 7", "7, name", "letters, digits and _"),
            ("n = 7", "n = [7]", "[7]", "define n: expected a string or a number"),
            (
                "scale = 2",
                "scale = 2\nscript = \"select-only\"",
                "\"select-only\"",
                "give either `script`",
            ),
            ("builtins = [\"select@1\"]", "builtins = []", "[]", "the list is empty"),
            (
                "@3\", \"b.sql\"",
                "@0\", \"b.sql@0\"",
                "[\"sql",
                "every script has weight 0",
            ),
            (
                "kind = \"pgbench\"",
                "kind = \"pgbench\"\nprotocl = \"simple\"",
                "protocl",
                "unknown field `protocl`",
            ),
        ];
        for (from, to, at, says) in cases {
            let text = PG_FILES.replace(from, to);
            assert_ne!(text, PG_FILES, "{from}");
            // Every weight 0: the built-in (weight 1) goes too.
            let text = if *from == "@3\", \"b.sql\"" {
                text.replace("builtins = [\"select@1\"]\n", "")
            } else {
                text
            };
            let err = error_at(d, &text);
            assert!(err.starts_with(&where_is(&text, at)), "{to}: {err}");
            assert!(err.contains(says), "{to}: {err}");
        }
    }

    #[test]
    fn the_lab_copy_of_a_file_reads_its_scripts_from_the_original_directory() {
        let dir = script_dir();
        let copy = tempfile::tempdir().unwrap();
        let path = copy.path().join("experiment.toml");
        let original = dir.path().join("exp.toml");
        std::fs::write(&path, format!("{ORIGIN_LINE}{}\n{LUA}", original.display())).unwrap();
        let e = Experiment::load(&path).unwrap();
        let Params::Lua(l) = &e.workloads[0].params else {
            panic!()
        };
        assert_eq!(l.script, std::path::absolute(dir.path().join("bench.lua")).unwrap());
        // Without the line, the copy's own directory is searched.
        std::fs::write(&path, LUA).unwrap();
        assert!(Experiment::load(&path)
            .unwrap_err()
            .to_string()
            .contains("bench.lua is not a file"));
    }
}
