//! `summary.json`: the versioned end-of-run numbers (schema `dbperf.summary/1`, described by
//! `docs/summary.schema.json`), the conversion of HDR histograms into latency blocks, and the
//! client's own CPU and memory cost.
//!
//! Units are in the key names: `_s` seconds, `_ms` milliseconds, `_bytes` bytes; rates are per
//! second of the measured phase. Histograms given to [`LatencyBlock::from_histogram`] hold
//! microseconds.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Value of the summary's `schema` key; bumped when a key changes meaning or disappears.
pub const SUMMARY_SCHEMA: &str = "dbperf.summary/1";

/// File name of the summary inside a run directory.
pub const SUMMARY_FILE: &str = "summary.json";

fn summary_schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    crate::version::schema(d, SUMMARY_SCHEMA)
}

/// The contents of `summary.json`. Every key is always present; `Option`s are written as `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// [`SUMMARY_SCHEMA`] when written; read up to it ([`crate::version`]).
    #[serde(deserialize_with = "summary_schema")]
    pub schema: String,
    /// Workload name.
    pub workload: String,
    /// The run directory's name.
    pub run_id: String,
    /// Length of the measured phase, seconds (warmup excluded).
    pub duration_s: f64,
    /// Length of the warmup phase, seconds.
    pub warmup_s: f64,
    /// Client threads (connections) driving the workload.
    pub threads: u32,
    /// Target transactions per second in open loop; `None` in closed loop.
    pub rate: Option<f64>,
    /// Arrival process in open loop; `None` in closed loop.
    pub arrival: Option<Arrival>,
    /// Random distribution for keys (`uniform`, `special`, `pareto`, `zipfian`, …).
    pub rand_type: String,
    /// Committed transactions.
    pub transactions: Throughput,
    /// Statements sent.
    pub queries: QueryCounts,
    /// Failed operations by class.
    pub errors: ErrorCounts,
    /// Attempts run again after a retryable error or a lost connection.
    pub retries: u64,
    /// Transactions run again at least once after a retryable error (pgbench's "number of
    /// transactions retried"). Absent, so 0, in summaries written before it existed.
    #[serde(default)]
    pub retried: u64,
    /// Transactions given up after their last try (`--max-tries`; pgbench's "number of failed
    /// transactions"). Absent, so 0, in older summaries.
    #[serde(default)]
    pub failed: u64,
    /// Open-loop transactions not run because they were already later than the limit at their
    /// turn (pgbench's `-R` with `-L`: "number of transactions skipped"). Absent, so 0, in older
    /// summaries.
    #[serde(default)]
    pub skipped: u64,
    /// Connections re-established after being lost.
    pub reconnects: u64,
    /// Response time of transactions, from the intended start (the send, in closed loop).
    pub latency_ms: LatencyBlock,
    /// Service time (from the actual send) in open loop; `None` in closed loop, where it equals
    /// `latency_ms`.
    pub service_time_ms: Option<LatencyBlock>,
    /// Operations that started after their intended start time (open loop).
    pub late_starts: u64,
    /// Operations due but not started when the measured phase ended (open loop).
    pub backlog_at_end: u64,
    /// Per transaction or statement type, by name.
    pub per_type: BTreeMap<String, TypeBlock>,
    /// The client process's own cost.
    pub client: ClientUsage,
    /// Server facts repeated from the manifest.
    pub server: ServerSummary,
    /// True if the run was stopped early (signal or fatal error); numbers cover what finished.
    pub interrupted: bool,
    /// Finished intervals in `intervals.jsonl` for the measured phase.
    pub intervals: u32,
    /// Measured seconds in intervals where the server was unreachable (nothing completed while
    /// connections were reconnecting). Absent, so 0, in summaries written before it existed.
    #[serde(default)]
    pub server_unreachable_s: f64,
    /// The server was still unreachable when the run ended: the results are incomplete.
    #[serde(default)]
    pub server_unreachable_at_end: bool,
    /// The server was lost at some moment of the measured phase, its last second included:
    /// connections were lost or down, or it did not answer right after the run. Such a run is
    /// not clean (exit code 5 when it otherwise completed). Absent, so false, in older summaries.
    #[serde(default)]
    pub server_lost: bool,
    /// `--warmup-steady`: how long the unmeasured run before the warmup took, and whether the
    /// workload was steady at its end. Absent without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_warmup: Option<SteadyWarmup>,
}

/// The warmup that ran until the workload was past its start-up transient (`--warmup-steady`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SteadyWarmup {
    /// Seconds it ran.
    pub seconds: f64,
    /// Whether it ended steady (else at its limit, or interrupted).
    pub steady: bool,
    /// Why it ended: what was steady, or the limit.
    pub reason: String,
}

/// Open-loop arrival process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced intended starts.
    Fixed,
    /// Exponentially distributed gaps (a Poisson process).
    Poisson,
}

/// A count and its rate over the measured phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Count over the measured phase.
    pub total: u64,
    /// `total / duration_s` (0 when the duration is 0).
    pub per_sec: f64,
}

impl Throughput {
    /// `total` over `duration_s` seconds.
    pub fn new(total: u64, duration_s: f64) -> Throughput {
        Throughput {
            total,
            per_sec: per_sec(total, duration_s),
        }
    }
}

/// Statements sent, split as sysbench splits them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryCounts {
    /// All statements (`read + write + other`).
    pub total: u64,
    /// `total / duration_s`.
    pub per_sec: f64,
    /// `SELECT`s.
    pub read: u64,
    /// `INSERT`/`UPDATE`/`DELETE`/`REPLACE`.
    pub write: u64,
    /// Everything else (`BEGIN`, `COMMIT`, …).
    pub other: u64,
}

impl QueryCounts {
    /// Counts with `total` and `per_sec` derived.
    pub fn new(read: u64, write: u64, other: u64, duration_s: f64) -> QueryCounts {
        let total = read + write + other;
        QueryCounts {
            total,
            per_sec: per_sec(total, duration_s),
            read,
            write,
            other,
        }
    }
}

/// Errors by class (`deadlock`, `lock_wait_timeout`, `ignored`, `connection_lost`, `fatal`, …).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// Sum of `by_class`.
    pub total: u64,
    /// Count per class name; classes that never happened may be absent.
    pub by_class: BTreeMap<String, u64>,
}

impl ErrorCounts {
    /// Counts with `total` derived from `by_class`.
    pub fn new(by_class: BTreeMap<String, u64>) -> ErrorCounts {
        ErrorCounts {
            total: by_class.values().sum(),
            by_class,
        }
    }
}

/// A latency distribution in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyBlock {
    /// Smallest value.
    pub min: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
    /// Number of values.
    pub count: u64,
}

impl LatencyBlock {
    /// Summarises a histogram of MICROSECONDS into milliseconds. Percentiles are HdrHistogram's
    /// (the highest value equivalent to the quantile's bucket). An empty histogram gives all
    /// zeros and `count` 0.
    pub fn from_histogram(h: &Histogram<u64>) -> LatencyBlock {
        if h.is_empty() {
            return LatencyBlock::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        let q = |quantile: f64| ms(h.value_at_quantile(quantile));
        LatencyBlock {
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: ms(h.max()),
            count: h.len(),
        }
    }
}

/// Numbers for one transaction or statement type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeBlock {
    /// Whether the name is a transaction (TPC-C `new_order`) or a statement (`point_select`).
    pub kind: TypeKind,
    /// Completed operations of this type.
    pub count: u64,
    /// Response time.
    pub latency_ms: LatencyBlock,
    /// Service time in open loop; `None` in closed loop.
    pub service_time_ms: Option<LatencyBlock>,
}

/// What a [`TypeBlock`] measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TypeKind {
    /// A whole transaction.
    Transaction,
    /// One statement.
    Statement,
}

/// CPU and memory used by the dbperf process itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientUsage {
    /// `user_s + sys_s`.
    pub cpu_s: f64,
    /// User-mode CPU seconds.
    pub user_s: f64,
    /// Kernel-mode CPU seconds.
    pub sys_s: f64,
    /// Peak resident set size, bytes.
    pub max_rss_bytes: u64,
}

/// The server as far as the summary needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSummary {
    /// Server version string, when known.
    pub version: Option<String>,
}

/// The whole process's CPU time and peak RSS so far (`getrusage(RUSAGE_SELF)`); all zeros if
/// the call fails.
pub fn client_usage() -> ClientUsage {
    // SAFETY: `rusage` is plain old data, so zeroed is valid; getrusage only writes into it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return ClientUsage::default();
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let user_s = seconds(usage.ru_utime);
    let sys_s = seconds(usage.ru_stime);
    ClientUsage {
        cpu_s: user_s + sys_s,
        user_s,
        sys_s,
        // Linux reports ru_maxrss in KiB.
        max_rss_bytes: u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024,
    }
}

fn per_sec(total: u64, duration_s: f64) -> f64 {
    if duration_s > 0.0 && duration_s.is_finite() {
        total as f64 / duration_s
    } else {
        0.0
    }
}

/// A plausible summary for tests of readers (catalog, comparison): `threads` closed-loop
/// connections at `tps` for 10 s, with `p95_ms` as the 95th percentile.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub fn sample(run_id: &str, workload: &str, threads: u32, tps: f64, p95_ms: f64) -> Summary {
    let latency = LatencyBlock {
        p50: p95_ms / 2.0,
        p95: p95_ms,
        p99: p95_ms * 1.5,
        max: p95_ms * 3.0,
        ..LatencyBlock::default()
    };
    Summary {
        schema: SUMMARY_SCHEMA.to_string(),
        workload: workload.to_string(),
        run_id: run_id.to_string(),
        duration_s: 10.0,
        warmup_s: 0.0,
        threads,
        rate: None,
        arrival: None,
        rand_type: "uniform".to_string(),
        transactions: Throughput::new((tps * 10.0) as u64, 10.0),
        queries: QueryCounts::new((tps * 10.0) as u64, 0, 0, 10.0),
        errors: ErrorCounts::default(),
        retries: 0,
        retried: 0,
        failed: 0,
        skipped: 0,
        reconnects: 0,
        latency_ms: latency,
        service_time_ms: None,
        late_starts: 0,
        backlog_at_end: 0,
        per_type: BTreeMap::new(),
        client: ClientUsage::default(),
        server: ServerSummary {
            version: Some("10.11.6-MariaDB".to_string()),
        },
        interrupted: false,
        intervals: 10,
        server_unreachable_s: 0.0,
        server_unreachable_at_end: false,
        server_lost: false,
        steady_warmup: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_histogram_is_all_zeros() {
        let h = Histogram::<u64>::new(3).unwrap();
        assert_eq!(LatencyBlock::from_histogram(&h), LatencyBlock::default());
    }

    #[test]
    fn histogram_microseconds_become_milliseconds() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for us in 1..=1000u64 {
            h.record(us * 10).unwrap(); // 10 µs .. 10 ms
        }
        let b = LatencyBlock::from_histogram(&h);
        assert_eq!(b.count, 1000);
        assert!((b.min - 0.010).abs() < 1e-9, "{b:?}");
        assert!((b.max - 10.0).abs() < 0.01, "{b:?}");
        assert!((b.mean - 5.005).abs() < 0.01, "{b:?}");
        assert!((b.p50 - 5.0).abs() < 0.01, "{b:?}");
        assert!((b.p99 - 9.9).abs() < 0.01, "{b:?}");
        assert!(b.min <= b.p50 && b.p50 <= b.p90 && b.p90 <= b.p95);
        assert!(b.p95 <= b.p99 && b.p99 <= b.p999 && b.p999 <= b.max);
    }

    #[test]
    fn rates_guard_against_zero_duration() {
        assert_eq!(Throughput::new(10, 0.0).per_sec, 0.0);
        assert_eq!(Throughput::new(10, 4.0).per_sec, 2.5);
        let q = QueryCounts::new(7, 2, 1, 2.0);
        assert_eq!((q.total, q.per_sec), (10, 5.0));
        let e = ErrorCounts::new(BTreeMap::from([("deadlock".into(), 3), ("fatal".into(), 1)]));
        assert_eq!(e.total, 4);
    }

    #[test]
    fn enums_serialize_as_lowercase_words() {
        assert_eq!(serde_json::to_value(Arrival::Poisson).unwrap(), "poisson");
        assert_eq!(serde_json::to_value(Arrival::Fixed).unwrap(), "fixed");
        assert_eq!(serde_json::to_value(TypeKind::Transaction).unwrap(), "transaction");
    }

    #[test]
    fn client_usage_reports_this_process() {
        let u = client_usage();
        assert!(u.max_rss_bytes > 1024 * 1024, "{u:?}");
        assert!((u.cpu_s - (u.user_s + u.sys_s)).abs() < 1e-9);
    }
}
