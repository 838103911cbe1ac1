//! The end of a pgbench run: the final report (as sysbench's: pgbench's figures are the same
//! transactions per second and latency percentiles) and the client-bound warning.

use dbperf_engine::RunOutcome;

use crate::{FinalReport, ReportFile};
use dbperf_report as report;
use dbperf_results::Summary;

/// The end of a `pgbench SCRIPT` run.
pub struct PgbenchReport {
    /// The run's client threads (for the client-bound warning).
    pub client_threads: usize,
}

impl FinalReport for PgbenchReport {
    fn final_report(&self, _: &RunOutcome, summary: &Summary) -> (String, Vec<ReportFile>) {
        let mut text = report::final_text(summary, None);
        if let Some(line) = report::client_bound_warning(summary, self.client_threads) {
            text.push_str(&line);
            text.push('\n');
        }
        (text, Vec::new())
    }
}
