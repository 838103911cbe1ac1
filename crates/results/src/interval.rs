//! One line of `intervals.jsonl`: what was measured in one interval, as rates and
//! percentiles. The raw histograms of the same interval are in `intervals.hlog`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One interval of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    /// 0-based interval number.
    pub index: u32,
    /// Start, seconds since the run started (warmup included).
    pub start_s: f64,
    /// End, seconds since the run started.
    pub end_s: f64,
    /// Part of the warmup (not in the summary's totals).
    pub warmup: bool,
    /// Connections.
    pub threads: u32,
    /// Completed transactions.
    pub transactions: u64,
    /// Transactions per second.
    pub tps: f64,
    /// Statements per second.
    pub qps: f64,
    /// Reads, writes and other statements per second.
    pub rwo_per_sec: [f64; 3],
    /// Failed attempts by class (only classes that occurred).
    pub errors: BTreeMap<String, u64>,
    /// Failed attempts per second.
    pub errors_per_sec: f64,
    /// Reconnects per second.
    pub reconnects_per_sec: f64,
    /// Response time percentiles of transactions completed in the interval, ms.
    pub latency_ms: Percentiles,
    /// Service time percentiles, ms (same as `latency_ms` in closed loop).
    pub service_time_ms: Percentiles,
    /// Open-loop late starts.
    pub late_starts: u64,
    /// Open-loop arrivals due but not started at the interval's end.
    pub backlog: u64,
    /// Nothing completed while connections were reconnecting: the server was unreachable
    /// (absent, so false, in runs recorded before dbperf wrote it).
    #[serde(default)]
    pub server_unreachable: bool,
}

/// The percentiles shown per interval, in milliseconds (0 when nothing completed).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

impl Percentiles {
    /// From a histogram of microseconds.
    pub fn from_histogram(h: &hdrhistogram::Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Percentiles {
            p50: ms(h.value_at_quantile(0.50)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        }
    }
}
