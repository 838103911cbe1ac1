//! `linkbench.json`, LinkBench's result file in a run directory (written by `dbperf linkbench
//! request`): per operation, the count, the reference's latency buckets at p25/p50/p75/p95/p99,
//! max and mean. Computing them from the histograms is LinkBench's own
//! (`workloads/linkbench/report.rs`). Exact per-operation percentiles are in `summary.json`'s
//! `per_type` (the figures `p99:ADD_LINK` etc. of [`super::figures`]).

use serde::{Deserialize, Serialize};

/// File name in the run directory.
pub const LINKBENCH_FILE: &str = "linkbench.json";

/// One op's line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    /// LinkBench's name.
    pub op: String,
    /// Operations.
    pub count: u64,
    /// (percentile, bucket low ms, bucket high ms).
    pub percentiles: Vec<(u32, f64, f64)>,
    /// Largest latency, ms.
    pub max_ms: f64,
    /// Mean latency, ms.
    pub mean_ms: f64,
}
