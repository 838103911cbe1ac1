//! LinkBench's own report from the run's histograms: per op, the count, the p25/p50/p75/
//! p95/p99 latency *buckets* (the reference keeps 128 buckets: 0.1 ms wide below 1 ms,
//! then 1 ms to 100 ms, 100 ms to 1 s, 1 s to 10 s, and one above), max and mean, as its
//! final log lines and as its `-csvstats` file; [`LinkbenchReport`] is the end of a
//! `linkbench request` run (`linkbench.json`, `linkbench-csvstats.csv`, the report text), and
//! [`interval_line`] its live line.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::config::OP_NAMES;

pub use dbperf_results::linkbench::OpStats;

const SUB_MS: usize = 10;
const MS: usize = 99;
const HUNDRED_MS: usize = 9;
const SEC: usize = 9;
/// Buckets of the reference's latency statistics.
pub const BUCKETS: usize = SUB_MS + MS + HUNDRED_MS + SEC + 1;
/// The `-csvstats` file's name in a run directory.
pub const CSVSTATS_FILE: &str = "linkbench-csvstats.csv";
/// Percentiles reported.
pub const PERCENTILES: [u32; 5] = [25, 50, 75, 95, 99];

/// The bucket of a latency in microseconds.
pub fn bucket_of(us: u64) -> usize {
    let ms = us / 1000;
    if ms == 0 {
        (us / 100) as usize
    } else if ms < 100 {
        SUB_MS + ms as usize - 1
    } else if ms < 1000 {
        SUB_MS + MS + (ms / 100) as usize - 1
    } else if ms < 10_000 {
        SUB_MS + MS + HUNDRED_MS + (ms / 1000) as usize - 1
    } else {
        BUCKETS - 1
    }
}

/// A bucket's bounds in microseconds: inclusive low, exclusive high.
pub fn bucket_bounds(b: usize) -> (u64, u64) {
    let (ms, s) = (1000u64, 1_000_000u64);
    if b < SUB_MS {
        (b as u64 * 100, (b as u64 + 1) * 100)
    } else if b < SUB_MS + MS {
        let i = (b - SUB_MS) as u64;
        ((i + 1) * ms, (i + 2) * ms)
    } else if b < SUB_MS + MS + HUNDRED_MS {
        let i = (b - SUB_MS - MS) as u64 + 1;
        (i * 100 * ms, (i + 1) * 100 * ms)
    } else if b < BUCKETS - 1 {
        let i = (b - SUB_MS - MS - HUNDRED_MS) as u64 + 1;
        (i * s, (i + 1) * s)
    } else {
        ((SEC as u64 + 1) * s, 100 * s)
    }
}

/// The stats of one histogram of microsecond latencies.
pub fn op_stats(op: &str, h: &Histogram<u64>) -> OpStats {
    let n = h.len();
    let mut buckets = [0u64; BUCKETS];
    for v in h.iter_recorded() {
        buckets[bucket_of(h.lowest_equivalent(v.value_iterated_to()))] += v.count_at_value();
    }
    let mut cumulative = [0u64; BUCKETS];
    let mut sum = 0;
    for (c, b) in cumulative.iter_mut().zip(buckets) {
        sum += b;
        *c = sum;
    }
    let percentiles = PERCENTILES
        .iter()
        .map(|&p| {
            // The rank is truncated, and the first bucket reaching it wins (even an empty
            // first bucket when the rank is 0), as in the reference.
            let rank = (p as f64 / 100.0 * n as f64) as u64;
            let b = cumulative.iter().position(|&c| rank <= c).unwrap_or(BUCKETS - 1);
            let (lo, hi) = bucket_bounds(b);
            (p, lo as f64 / 1000.0, hi as f64 / 1000.0)
        })
        .collect();
    OpStats {
        op: op.to_string(),
        count: n,
        percentiles,
        max_ms: h.max() as f64 / 1000.0,
        mean_ms: h.mean() / 1000.0,
    }
}

/// The stats of every op that ran, in the reference's op order: `per_op[i]` is the
/// histogram of `OP_NAMES[i]` (`None` or empty: the op did not run).
pub fn all_stats(per_op: &[Option<&Histogram<u64>>]) -> Vec<OpStats> {
    OP_NAMES
        .iter()
        .zip(per_op)
        .filter_map(|(op, h)| h.filter(|h| !h.is_empty()).map(|h| op_stats(op, h)))
        .collect()
}

/// A number as Java's `DecimalFormat("#.##")` prints it (at most two decimals, no
/// trailing zeros).
fn fmt2(v: f64) -> String {
    fmt_decimals(v, 2)
}

/// A number with at most `digits` decimals and no trailing zeros (Java's `#.##`, `#.###`).
fn fmt_decimals(v: f64, digits: usize) -> String {
    let s = format!("{v:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    if s.is_empty() || s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// The reference's final lines: `OP count = N  p25 = [lo,hi]ms  ...  max = x ms  mean = y ms`.
pub fn text(stats: &[OpStats]) -> String {
    let mut out = String::new();
    for s in stats {
        out.push_str(&format!("{} count = {}", s.op, s.count));
        for (p, lo, hi) in &s.percentiles {
            out.push_str(&format!("  p{p} = [{},{}]ms", fmt2(*lo), fmt2(*hi)));
        }
        out.push_str(&format!(
            "  max = {}ms  mean = {}ms\n",
            fmt_decimals(s.max_ms, 3),
            fmt_decimals(s.mean_ms, 3)
        ));
    }
    out
}

/// The `-csvstats` file: `op,count,p25_low,p25_high,...,p99_high,max,mean` (ms).
pub fn csv(stats: &[OpStats]) -> String {
    let mut out = String::from("op,count");
    for p in PERCENTILES {
        out.push_str(&format!(",p{p}_low,p{p}_high"));
    }
    out.push_str(",max,mean\n");
    for s in stats {
        out.push_str(&format!("{},{}", s.op, s.count));
        for (_, lo, hi) in &s.percentiles {
            out.push_str(&format!(",{},{}", fmt2(*lo), fmt2(*hi)));
        }
        out.push_str(&format!(",{},{}\n", fmt2(s.max_ms), fmt2(s.mean_ms)));
    }
    out
}

/// The live line of an interval: ops per second of each op, then p95 of all.
pub fn interval_line(r: &dbperf_engine::IntervalReport<'_>) -> String {
    let s = r.stats;
    let d = r.len_s();
    let mut line = format!("[ {:.0}s ] ops/s {:.1} |", r.end_s, s.transactions as f64 / d);
    for (t, name) in s.per_txn.iter().zip(OP_NAMES) {
        if !t.response.is_empty() {
            let _ = write!(line, " {name} {:.1}", t.response.len() as f64 / d);
        }
    }
    let _ = write!(
        line,
        " | p95 {:.2} ms | retry {} err {}",
        s.response.value_at_quantile(0.95) as f64 / 1000.0,
        s.retries,
        s.total_errors()
    );
    if r.warmup {
        line.push_str(" (warmup)");
    }
    line
}

/// The end of a `linkbench request` run: `linkbench.json`, the `-csvstats` file in the run
/// directory (and at `--csvstats`), the per-op report and the reference's closing line.
pub struct LinkbenchReport {
    /// `--csvstats`: another copy of the csvstats file.
    pub csvstats: Option<std::path::PathBuf>,
}

impl crate::FinalReport for LinkbenchReport {
    fn final_report(
        &self,
        outcome: &dbperf_engine::RunOutcome,
        _: &dbperf_results::Summary,
    ) -> (String, Vec<crate::ReportFile>) {
        use crate::{ReportFile, ReportPath};
        let per_op: Vec<_> = outcome.total.per_txn.iter().map(|t| Some(&t.response)).collect();
        let stats = all_stats(&per_op);
        let csv = csv(&stats);
        let mut files = vec![ReportFile {
            path: ReportPath::RunDir(CSVSTATS_FILE),
            bytes: csv.clone().into_bytes(),
        }];
        if let Some(path) = &self.csvstats {
            files.push(ReportFile {
                path: ReportPath::Elsewhere(path.clone()),
                bytes: csv.into_bytes(),
            });
        }
        files.push(ReportFile::json("linkbench.json", &stats));
        let mut out = text(&stats);
        let total = outcome.total.transactions;
        out.push_str(&format!(
            "REQUEST PHASE COMPLETED. {total} requests done in {:.0} seconds. Requests/second = {:.0}\n",
            outcome.measured_s,
            total as f64 / outcome.measured_s.max(1e-9)
        ));
        (out, files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_the_reference() {
        assert_eq!(BUCKETS, 128);
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(99), 0);
        assert_eq!(bucket_of(950), 9);
        assert_eq!(bucket_of(1000), 10);
        assert_eq!(bucket_of(99_999), 108);
        assert_eq!(bucket_of(100_000), 109);
        assert_eq!(bucket_of(9_999_999), 126);
        assert_eq!(bucket_of(60_000_000), 127);
        for us in [0, 150, 999, 1000, 5500, 99_000, 150_000, 2_500_000] {
            let (lo, hi) = bucket_bounds(bucket_of(us));
            assert!(lo <= us && us < hi, "{us}: [{lo},{hi})");
        }
    }

    #[test]
    fn percentiles_are_bucket_bounds() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for us in [150u64, 250, 250, 350, 5_500, 120_000, 150, 150] {
            h.record(us).unwrap();
        }
        let s = op_stats("GET_NODE", &h);
        assert_eq!(s.count, 8);
        // rank(p50) = 4: 150,150,150 in bucket 1, the 4th (250) in bucket 2.
        assert_eq!(s.percentiles[1], (50, 0.2, 0.3));
        assert_eq!(s.percentiles[4], (99, 5.0, 6.0));
        let c = csv(&[s]);
        assert!(c.starts_with("op,count,p25_low,p25_high,p50_low"), "{c}");
        assert!(c.contains("\nGET_NODE,8,0.1,0.2,0.2,0.3,"), "{c}");
        assert_eq!(fmt_decimals(100.0, 2), "100");
        assert_eq!(fmt_decimals(20.0349, 3), "20.035");
        assert_eq!(fmt_decimals(0.0, 2), "0");
    }
}
