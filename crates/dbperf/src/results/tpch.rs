//! `tpch.json`, the TPC-H result file of a run directory (written by `dbperf tpch power` and
//! `dbperf tpch throughput`), read typed: the `test` field says which report it is. The report
//! types are defined beside the tests that fill them (`workloads/tpch/power.rs`,
//! `workloads/tpch/throughput.rs`); every reader goes through [`TpchReport::read`].

use serde::Deserialize;

use super::{ResultsError, RunDir, TPCH_FILE};
pub use crate::workloads::tpch::power::{Cold, PowerReport, PowerRun, QuerySummary, QueryTiming};
pub use crate::workloads::tpch::runner::Status;
pub use crate::workloads::tpch::throughput::{RefreshPair, StreamRun, ThroughputReport};

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
