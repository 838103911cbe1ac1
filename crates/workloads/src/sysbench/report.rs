//! The end of a sysbench run: sysbench's final report (with `--percentile`'s extra
//! percentile), the warning when the client's threads were the bottleneck, and
//! `--histogram`'s latency histogram.

use dbperf_engine::RunOutcome;

use crate::{FinalReport, ReportFile};
use dbperf_report as report;
use dbperf_results::Summary;

/// The end of a `sysbench ... run`.
pub struct SysbenchReport {
    /// `--percentile`: shown too when it is not one of p50/p90/p95/p99/p99.9.
    pub percentile: f64,
    /// The run's client threads (for the client-bound warning).
    pub client_threads: usize,
    /// `--histogram`.
    pub histogram: bool,
}

impl FinalReport for SysbenchReport {
    fn final_report(&self, outcome: &RunOutcome, summary: &Summary) -> (String, Vec<ReportFile>) {
        let p = self.percentile;
        let standard = [50.0, 90.0, 95.0, 99.0, 99.9];
        let extra =
            (!standard.contains(&p)).then(|| (p, outcome.total.response.value_at_quantile(p / 100.0) as f64 / 1000.0));
        let mut text = report::final_text(summary, extra);
        if let Some(line) = report::client_bound_warning(summary, self.client_threads) {
            text.push_str(&line);
            text.push('\n');
        }
        if self.histogram {
            text.push_str(&histogram_text(&outcome.total.response));
        }
        (text, Vec::new())
    }
}

/// sysbench's `--histogram`: latency buckets in milliseconds with a bar of stars.
pub fn histogram_text(h: &hdrhistogram::Histogram<u64>) -> String {
    use std::fmt::Write;
    let mut s = String::from(
        "\nLatency histogram (values in milliseconds)\n       value  ------------- distribution ------------- count\n",
    );
    let max = h
        .iter_log(1, 2.0)
        .map(|v| v.count_since_last_iteration())
        .max()
        .unwrap_or(1)
        .max(1);
    for v in h.iter_log(1, 2.0) {
        let n = v.count_since_last_iteration();
        if n == 0 {
            continue;
        }
        let bar = "*".repeat(((n * 40) / max) as usize);
        let _ = writeln!(s, "{:>12.3} |{:<40} {}", v.value_iterated_to() as f64 / 1000.0, bar, n);
    }
    s
}
