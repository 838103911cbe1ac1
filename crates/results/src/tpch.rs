//! `tpch.json`, the TPC-H result file of a run directory (written by `dbperf tpch power` and
//! `dbperf tpch throughput`) as types: [`PowerReport`] and [`ThroughputReport`] with their
//! parts. The tests that fill them are TPC-H's (`workloads/tpch/power.rs`, `throughput.rs`,
//! which re-export these types); every reader goes through [`TpchReport::read`], which picks
//! the type by the file's `test` field.

use serde::{Deserialize, Serialize};

use super::{ResultsError, RunDir, TPCH_FILE};

/// A run's `tpch.json`.
#[derive(Debug, Clone)]
pub enum TpchReport {
    /// `"test": "power"`.
    Power(PowerReport),
    /// `"test": "throughput"`.
    Throughput(ThroughputReport),
}

#[derive(Deserialize)]
struct Test {
    test: String,
}

impl TpchReport {
    /// The run's `tpch.json`, `None` when it has none (not a TPC-H run, or not finished).
    pub fn read(dir: &RunDir) -> Result<Option<TpchReport>, ResultsError> {
        if !dir.file(TPCH_FILE)?.is_file() {
            return Ok(None);
        }
        let Test { test } = dir.read_json(TPCH_FILE)?;
        Ok(Some(if test == "throughput" {
            TpchReport::Throughput(dir.read_json(TPCH_FILE)?)
        } else {
            TpchReport::Power(dir.read_json(TPCH_FILE)?)
        }))
    }

    /// Query streams: 1 for a power test.
    pub fn streams(&self) -> u32 {
        match self {
            TpchReport::Power(_) => 1,
            TpchReport::Throughput(t) => t.streams.len() as u32,
        }
    }

    /// The server version the report names.
    pub fn server_version(&self) -> &str {
        match self {
            TpchReport::Power(p) => &p.server_version,
            TpchReport::Throughput(t) => &t.server_version,
        }
    }
}

/// How a query ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It returned its rows.
    Ok,
    /// It ran past the timeout and was cancelled on the server.
    Timeout,
    /// The server returned an error.
    Error,
}

/// When to make the caches cold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cold {
    /// Never: warm runs.
    Off,
    /// Before each query.
    Query,
    /// Before each run (repetition).
    Run,
}

/// One query in one run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QueryTiming {
    /// Query number.
    pub query: u8,
    /// Position in the stream, from 1.
    pub position: usize,
    /// Seconds to the last row (the timeout, when it timed out).
    pub seconds: f64,
    /// How it ended.
    pub status: Status,
    /// The server's error, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Rows returned.
    pub rows: usize,
}

/// One run of the power test.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PowerRun {
    /// Repetition, from 1.
    pub rep: u32,
    /// Refresh set used, when refreshes ran.
    pub refresh_set: Option<u64>,
    /// RF1's and RF2's seconds, when they ran.
    pub rf1_seconds: Option<f64>,
    pub rf2_seconds: Option<f64>,
    /// The 22 queries in the order they ran.
    pub queries: Vec<QueryTiming>,
    /// Power@Size of this run; `None` when a query timed out or failed, or refreshes did not run.
    pub power_at_size: Option<f64>,
    /// Notes from making the caches cold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cold_notes: Vec<String>,
}

/// Per query over all runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct QuerySummary {
    /// Query number.
    pub query: u8,
    /// Its substitution parameters.
    pub params: Vec<String>,
    /// Median, min and max of the runs that finished; `None` if none did.
    pub median: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Runs that timed out.
    pub timeouts: u32,
    /// Runs that failed.
    pub errors: u32,
    /// `EXPLAIN FORMAT=JSON`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<serde_json::Value>,
    /// The text of its own it ran with (`--queries-dir`); `None`: the standard text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<OwnText>,
}

/// A query run with a text of its own (a hinted one) and whether it answers as the standard
/// text does, compared once after the measured runs so no extra run warms the caches first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnText {
    /// The file the text came from.
    pub file: String,
    /// `Some(true)`: the same answer as the standard text; `Some(false)`: another one (the
    /// run fails); `None`: not compared (the check says why).
    pub same_answer: Option<bool>,
    /// What was compared ("5 rows"), the first difference, or why it was not compared.
    pub check: String,
}

/// Value of `tpch.json`'s `schema` key.
pub const TPCH_SCHEMA: &str = "dbperf.tpch/1";

fn tpch_schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    crate::version::schema(d, TPCH_SCHEMA)
}

/// `tpch.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PowerReport {
    /// [`TPCH_SCHEMA`] when written; read up to it ([`crate::version`]).
    #[serde(deserialize_with = "tpch_schema")]
    pub schema: String,
    /// `power`.
    pub test: String,
    /// Scale factor.
    pub scale_factor: f64,
    /// qgen seed.
    pub seed: i64,
    /// True when the validation parameters were used.
    pub validation: bool,
    /// The server's version string.
    pub server_version: String,
    /// `--timeout`, if given.
    pub timeout_seconds: Option<f64>,
    /// When caches were made cold.
    pub cold: Cold,
    /// The query order (stream 0).
    pub stream_order: Vec<u8>,
    /// Every run.
    pub runs: Vec<PowerRun>,
    /// Per query over the runs, in query order.
    pub queries: Vec<QuerySummary>,
    /// Median Power@Size over the runs that have one.
    pub power_at_size: Option<f64>,
    /// Stopped by Ctrl-C: `runs` hold the queries that finished before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// One query stream.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StreamRun {
    /// Stream number, from 1.
    pub stream: u32,
    /// Seconds from the test's start to this stream's last query's end.
    pub seconds: f64,
    /// Its 22 queries in the order they ran.
    pub queries: Vec<QueryTiming>,
}

/// One refresh pair.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefreshPair {
    /// Refresh set number.
    pub set: u64,
    /// RF1's and RF2's seconds.
    pub rf1_seconds: f64,
    pub rf2_seconds: f64,
}

/// `tpch.json` of a throughput run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ThroughputReport {
    /// [`TPCH_SCHEMA`] when written; read up to it.
    #[serde(deserialize_with = "tpch_schema")]
    pub schema: String,
    /// `throughput`.
    pub test: String,
    /// Scale factor.
    pub scale_factor: f64,
    /// qgen seed.
    pub seed: i64,
    /// True when the validation parameters were used.
    pub validation: bool,
    /// The server's version string.
    pub server_version: String,
    /// `--timeout`, if given.
    pub timeout_seconds: Option<f64>,
    /// Every query stream.
    pub streams: Vec<StreamRun>,
    /// The refresh stream's pairs.
    pub refresh: Vec<RefreshPair>,
    /// Ts: first submission to last completion.
    pub ts_seconds: f64,
    /// `None` when a query timed out or failed, or the test was interrupted, and in a shard's
    /// report (the merged run has it).
    pub throughput_at_size: Option<f64>,
    /// Stopped by Ctrl-C: the streams hold the queries that finished before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The wall clock of the first submission, milliseconds since the Unix epoch (absent in
    /// reports of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_ms: Option<i64>,
    /// A shard's report (`--shard I/N`): the test's query streams over all shards, of which
    /// `streams` holds this shard's share. Absent for the whole test and a merged one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams_total: Option<u32>,
}
