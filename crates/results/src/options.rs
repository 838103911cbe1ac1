//! The options a run recorded in its manifest (`workload.options`), as types: those every
//! measured run shares ([`RunOptions`]) and each workload's own ([`WorkloadOptions`], one
//! structure per workload). On disk they are one flat JSON object, as they have always been;
//! what is typed here is what the keys mean.
//!
//! | manifest | what `workload.options` holds |
//! |---|---|
//! | `dbperf.manifest/1` | the same keys, but the client connections under the workload's own name (`connections`, `clients`, `requesters`, `threads` or `streams`) and no `kind`: read through [`WorkloadOptions::read`], which infers the kind from the workload's name and the connections from whichever name is there |
//! | `dbperf.manifest/2` | `kind` and, for every engine-driven run, `connections` (beside the workload's own name for it, which its users know) |
//!
//! A run of a kind this dbperf does not know keeps its options as they are
//! ([`WorkloadOptions::Other`]), so nothing recorded is lost on the way through a merge.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What every engine-driven run records, whatever its workload: how long it ran, how the
/// client drove it, what was sampled. Keys as in every manifest since the first; a key older
/// manifests lack reads as `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunOptions {
    /// Client connections (users) of the run, of every shard when sharded.
    pub connections: u64,
    /// Measured seconds (0: until the workload's events).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_s: Option<u64>,
    /// Seconds run before measuring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<u64>,
    /// Length of a stored interval, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
    /// Seconds between live lines (`Some(None)`, `null` on disk: none printed). Absent in the
    /// oldest manifests, where the stored and the printed interval were one.
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub report_interval_s: Option<Option<f64>>,
    /// Client threads driving the connections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_threads: Option<usize>,
    /// `blocking` or `async`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_io: Option<String>,
    /// `closed`, `poisson` or `fixed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrival: Option<String>,
    /// Total arrivals per second in open loop (`null`: closed loop).
    pub rate: Option<f64>,
    /// The session implementation (`wire`, `mysql_async`, `tokio-postgres`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_impl: Option<String>,
    /// Seconds between telemetry samples (`Some(None)`, `null` on disk: `--no-telemetry`).
    #[serde(deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub telemetry_interval_s: Option<Option<f64>>,
    /// `--innodb-metrics`.
    pub innodb_metrics: bool,
    /// `--pfs-instruments`.
    pub pfs_instruments: bool,
    /// `--telemetry-sql-only`: the server was sampled through SQL only, this machine's OS not at
    /// all (a server on another host, or one dbperf did not start: the lab's `target` servers).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub telemetry_sql_only: bool,
    /// `--settle`: the longest wait for the server to settle, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settle_max_s: Option<u64>,
    /// `--warmup-steady`: the longest unmeasured run before the warmup, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_steady_max_s: Option<u64>,
}

/// A key that is present, `null` or not: `Some`.
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Every option of sysbench's `oltp_common.lua` (and the two single-table tests), with
/// sysbench's defaults (their rules are `dbperf_workloads::sysbench::options`'s).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OltpOptions {
    /// `--tables`
    pub tables: u32,
    /// `--table-size`
    pub table_size: u32,
    /// `--range-size`
    pub range_size: u32,
    /// `--point-selects`
    pub point_selects: u32,
    /// `--simple-ranges`
    pub simple_ranges: u32,
    /// `--sum-ranges`
    pub sum_ranges: u32,
    /// `--order-ranges`
    pub order_ranges: u32,
    /// `--distinct-ranges`
    pub distinct_ranges: u32,
    /// `--index-updates`
    pub index_updates: u32,
    /// `--non-index-updates`
    pub non_index_updates: u32,
    /// `--delete-inserts`
    pub delete_inserts: u32,
    /// `--range-selects`
    pub range_selects: bool,
    /// `--auto-inc`
    pub auto_inc: bool,
    /// `--skip-trx`
    pub skip_trx: bool,
    /// `--secondary`
    pub secondary: bool,
    /// `--create-secondary`
    pub create_secondary: bool,
    /// `--mysql-storage-engine`
    pub mysql_storage_engine: String,
    /// `--create-table-options` (sysbench master)
    pub create_table_options: String,
    /// `--reconnect`: reconnect every N events (sysbench master; 0 = never)
    pub reconnect: u32,
    /// `--random-points` (select_random_points)
    pub random_points: u32,
    /// `--number-of-ranges` (select_random_ranges)
    pub number_of_ranges: u32,
    /// `--delta` (select_random_ranges)
    pub delta: u32,
}

impl Default for OltpOptions {
    fn default() -> OltpOptions {
        OltpOptions {
            tables: 1,
            table_size: 10_000,
            range_size: 100,
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            auto_inc: true,
            skip_trx: false,
            secondary: false,
            create_secondary: true,
            mysql_storage_engine: "innodb".into(),
            create_table_options: String::new(),
            reconnect: 0,
            random_points: 10,
            number_of_ranges: 10,
            delta: 5,
        }
    }
}

/// `dbperf sysbench TEST run`: the test's options and the run's random-number choice.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SysbenchOptions {
    #[serde(flatten)]
    pub oltp: OltpOptions,
    /// `--rand-type`.
    pub rand_type: String,
    /// `--events` (0: until the time is up).
    pub events: u64,
}

/// `dbperf tpcc run`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TpccOptions {
    pub warehouses: u32,
    /// `max` or `spec`.
    pub mode: String,
    /// `fixed` or `per-transaction`.
    #[serde(default)]
    pub warehouse_choice: String,
    /// `dbperf` or `tpcc-mysql`.
    pub schema: String,
    /// Keying and think times multiplied by this in spec mode.
    pub wait_scale: f64,
    /// How Delivery runs (`inline`).
    pub delivery: String,
}

/// `dbperf linkbench request`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkbenchOptions {
    /// The operation mix (`fb2011` or a properties file).
    pub mix: String,
    pub startid1: i64,
    pub maxid1: i64,
    /// Requester threads (the reference's name for the connections).
    pub requesters: u64,
    /// Requests per requester (0: until the time is up).
    pub requests_per_requester: u64,
    /// Operations per second per requester (0: as fast as possible).
    pub rate_per_requester: f64,
    /// The reference's Java random streams.
    pub java_compatible_rng: bool,
}

/// `dbperf pgbench` (a built-in script or script files).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PgbenchOptions {
    /// The scripts as given: `tpcb-like`, `FILE@W BUILTIN@W`.
    pub script: String,
    /// pgbench's scale (`:scale`).
    pub scale: i64,
    /// Clients (pgbench's name for the connections).
    pub clients: u64,
    /// Client threads (pgbench's `-j`).
    pub jobs: usize,
    /// `-t` (0: until the time is up).
    #[serde(default)]
    pub transactions_per_client: u64,
    /// `-M`: `prepared`, `extended` or `simple`.
    pub protocol: String,
    /// `-D NAME=VALUE`, as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub define: Vec<String>,
}

/// `dbperf lua SCRIPT run`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LuaOptions {
    /// The script's path.
    pub script: String,
    /// Every option the script declares, at its value for the run.
    pub script_options: Map<String, Value>,
    /// The script's command (`run`).
    pub command: String,
    /// `--threads` (sysbench's name for the connections).
    pub threads: u64,
    /// `--events` (0: until the time is up).
    pub events: u64,
    pub rand_type: String,
    pub db_ps_mode: String,
    /// How statements are named in the results.
    pub statement_names: String,
}

/// `dbperf tpch power`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TpchPowerOptions {
    pub scale_factor: f64,
    /// The spec's validation parameters instead of generated ones.
    pub validation: bool,
    /// Seconds before a query is cancelled (`null`: never).
    pub timeout_seconds: Option<f64>,
    /// Runs of the whole test.
    pub repeat: u32,
    /// `off`, `query` or `run`.
    pub cold: String,
    /// RF1 and RF2 ran.
    pub refresh: bool,
    /// The directory of the query texts of its own (`--queries-dir`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queries_dir: Option<String>,
}

/// `dbperf tpch throughput`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TpchThroughputOptions {
    pub scale_factor: f64,
    /// Query streams of the whole test (every shard's).
    pub streams: u32,
    pub validation: bool,
    pub timeout_seconds: Option<f64>,
    /// The refresh stream ran.
    pub refresh: bool,
}

/// A workload's own options, one structure per workload.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadOptions {
    Sysbench(SysbenchOptions),
    Tpcc(TpccOptions),
    Linkbench(LinkbenchOptions),
    Pgbench(PgbenchOptions),
    Lua(LuaOptions),
    TpchPower(TpchPowerOptions),
    TpchThroughput(TpchThroughputOptions),
    /// A kind this dbperf does not know, or options that do not read as their kind's (written
    /// by hand, or by a dbperf that recorded less): kept as they are.
    Other(Map<String, Value>),
}

impl Default for WorkloadOptions {
    fn default() -> WorkloadOptions {
        WorkloadOptions::Other(Map::new())
    }
}

/// `workload.options`: the shared run options (engine-driven runs) and the workload's own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RecordedOptions {
    /// `None` for runs the engine did not drive (TPC-H's power and throughput tests) and for
    /// options that do not read as the shared ones.
    pub run: Option<RunOptions>,
    pub workload: WorkloadOptions,
    /// The object as read from a manifest, written back as it was (a merged run's manifest
    /// keeps every key of its shards', even those this dbperf does not type).
    stored: Option<Map<String, Value>>,
}

/// The value of `kind` for each workload.
impl WorkloadOptions {
    /// The kind's name, as `kind` records it.
    pub fn kind(&self) -> &'static str {
        match self {
            WorkloadOptions::Sysbench(_) => "sysbench",
            WorkloadOptions::Tpcc(_) => "tpcc",
            WorkloadOptions::Linkbench(_) => "linkbench",
            WorkloadOptions::Pgbench(_) => "pgbench",
            WorkloadOptions::Lua(_) => "lua",
            WorkloadOptions::TpchPower(_) => "tpch-power",
            WorkloadOptions::TpchThroughput(_) => "tpch-throughput",
            WorkloadOptions::Other(_) => "other",
        }
    }

    /// Reads the options of workload `name` from the flat object `map` of a manifest: by its
    /// `kind` (version 2), else by the workload's name (version 1). Options that do not read
    /// as their kind's are kept as [`WorkloadOptions::Other`].
    pub fn read(name: &str, map: &Map<String, Value>) -> RecordedOptions {
        let kind = match map.get("kind").and_then(Value::as_str) {
            Some(k) => k.to_string(),
            None => kind_of_v1(name, map).to_string(),
        };
        fn typed<T: DeserializeOwned>(map: &Map<String, Value>) -> Option<T> {
            serde_json::from_value(Value::Object(map.clone())).ok()
        }
        let workload = match kind.as_str() {
            "sysbench" => typed(map).map(WorkloadOptions::Sysbench),
            "tpcc" => typed(map).map(WorkloadOptions::Tpcc),
            "linkbench" => typed(map).map(WorkloadOptions::Linkbench),
            "pgbench" => typed(map).map(WorkloadOptions::Pgbench),
            "lua" => typed(map).map(WorkloadOptions::Lua),
            "tpch-power" => typed(map).map(WorkloadOptions::TpchPower),
            "tpch-throughput" => typed(map).map(WorkloadOptions::TpchThroughput),
            _ => None,
        }
        .unwrap_or_else(|| WorkloadOptions::Other(map.clone()));
        let run = match &workload {
            WorkloadOptions::TpchPower(_) | WorkloadOptions::TpchThroughput(_) => None,
            _ => {
                // Version 1 named the connections as each workload's users know them.
                let mut with_connections = map.clone();
                if !with_connections.contains_key("connections") {
                    if let Some(n) = ["clients", "requesters", "threads"].iter().find_map(|k| map.get(*k)) {
                        with_connections.insert("connections".into(), n.clone());
                    }
                }
                with_connections
                    .contains_key("connections")
                    .then(|| typed::<RunOptions>(&with_connections))
                    .flatten()
            }
        };
        RecordedOptions {
            run,
            workload,
            stored: Some(map.clone()),
        }
    }

    /// The client connections the workload names in its own terms (pgbench's clients,
    /// LinkBench's requesters, a script's threads, TPC-H's streams), if it has them.
    pub fn own_connections(&self) -> Option<u64> {
        match self {
            WorkloadOptions::Linkbench(o) => Some(o.requesters),
            WorkloadOptions::Pgbench(o) => Some(o.clients),
            WorkloadOptions::Lua(o) => Some(o.threads),
            WorkloadOptions::TpchPower(_) => Some(1),
            WorkloadOptions::TpchThroughput(o) => Some(u64::from(o.streams)),
            WorkloadOptions::Sysbench(_) | WorkloadOptions::Tpcc(_) | WorkloadOptions::Other(_) => None,
        }
    }
}

/// The kind of a version-1 manifest's workload, from its name and keys.
fn kind_of_v1(name: &str, map: &Map<String, Value>) -> &'static str {
    match name {
        "tpcc" => "tpcc",
        "linkbench" => "linkbench",
        "tpch-power" => "tpch-power",
        "tpch-throughput" => "tpch-throughput",
        _ if name.starts_with("lua_") => "lua",
        _ if name.starts_with("pgbench") => "pgbench",
        _ if map.contains_key("table_size") => "sysbench",
        _ => "other",
    }
}

impl RecordedOptions {
    /// The options of a run about to start.
    pub fn new(run: Option<RunOptions>, workload: WorkloadOptions) -> RecordedOptions {
        RecordedOptions {
            run,
            workload,
            stored: None,
        }
    }

    /// Client connections of the run: the shared record's, else the workload's own name for them.
    pub fn connections(&self) -> Option<u64> {
        self.run
            .as_ref()
            .map(|r| r.connections)
            .or_else(|| self.workload.own_connections())
    }

    /// The options as the manifest stores them: one flat object (as read, for options read).
    pub fn to_map(&self) -> Map<String, Value> {
        if let Some(stored) = &self.stored {
            return stored.clone();
        }
        let mut map = Map::new();
        let mut put = |value: Value| {
            if let Value::Object(o) = value {
                map.extend(o);
            }
        };
        let workload = match &self.workload {
            WorkloadOptions::Sysbench(o) => serde_json::to_value(o),
            WorkloadOptions::Tpcc(o) => serde_json::to_value(o),
            WorkloadOptions::Linkbench(o) => serde_json::to_value(o),
            WorkloadOptions::Pgbench(o) => serde_json::to_value(o),
            WorkloadOptions::Lua(o) => serde_json::to_value(o),
            WorkloadOptions::TpchPower(o) => serde_json::to_value(o),
            WorkloadOptions::TpchThroughput(o) => serde_json::to_value(o),
            WorkloadOptions::Other(m) => Ok(Value::Object(m.clone())),
        };
        if !matches!(self.workload, WorkloadOptions::Other(_)) {
            put(serde_json::json!({ "kind": self.workload.kind() }));
        }
        if let Some(run) = &self.run {
            put(serde_json::to_value(run).unwrap_or(Value::Null));
        }
        put(workload.unwrap_or(Value::Null));
        map
    }
}

impl Serialize for RecordedOptions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_map().serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_version_1_pgbench_record_reads_typed_with_its_clients_as_the_connections() {
        let v1 = obj(json!({
            "script": "tpcb-like", "scale": 10, "clients": 8, "jobs": 8, "interval_s": 1.0,
            "report_interval_s": null, "client_threads": 8, "client_io": "blocking", "arrival": "closed",
            "rate": null, "time_s": 60, "transactions_per_client": 0, "warmup_s": 0, "protocol": "prepared",
            "client_impl": "wire", "telemetry_interval_s": 1.0, "innodb_metrics": false, "pfs_instruments": false
        }));
        let r = WorkloadOptions::read("pgbench_tpcb_like", &v1);
        assert!(matches!(&r.workload, WorkloadOptions::Pgbench(p) if p.clients == 8 && p.scale == 10));
        assert_eq!(r.connections(), Some(8));
        assert_eq!(r.run.as_ref().unwrap().time_s, Some(60));
        // Written by this version: the same keys, with `kind` and `connections` added.
        let v2 = RecordedOptions::new(r.run.clone(), r.workload.clone()).to_map();
        assert_eq!(v2["kind"], "pgbench");
        assert_eq!(v2["connections"], 8);
        for (k, v) in &v1 {
            assert_eq!(&v2[k], v, "{k}");
        }
        let again = WorkloadOptions::read("pgbench_tpcb_like", &v2);
        assert_eq!((again.run, again.workload), (r.run, r.workload));
    }

    #[test]
    fn tpch_records_have_no_run_options_and_their_streams_as_connections() {
        let t = obj(
            json!({"scale_factor": 1.0, "streams": 4, "validation": false, "timeout_seconds": null, "refresh": true}),
        );
        let r = WorkloadOptions::read("tpch-throughput", &t);
        assert!(r.run.is_none());
        assert_eq!(r.connections(), Some(4));
    }

    #[test]
    fn what_does_not_read_as_its_kind_is_kept_as_it_is() {
        let odd = obj(json!({"kind": "sysbench", "tables": "many"}));
        let r = WorkloadOptions::read("oltp_read_only", &odd);
        assert_eq!(r.workload, WorkloadOptions::Other(odd.clone()));
        assert_eq!(RecordedOptions::new(None, r.workload).to_map(), odd);
        let unknown = obj(json!({"kind": "ycsb", "records": 1000}));
        assert_eq!(WorkloadOptions::read("ycsb-a", &unknown).to_map(), unknown);
    }
}
