//! The end of a pgbench run: the final report (as sysbench's: pgbench's figures are the same
//! transactions per second and latency percentiles), the client-bound warning, and with several
//! scripts pgbench's per-script lines and `pgbench-scripts.json`.

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

/// One script of a run, for the per-script report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScriptShare {
    /// Its transaction name (in `summary.json`'s `per_type`).
    pub name: String,
    /// What the command line named: `FILE@W` or `BUILTIN@W`.
    pub label: String,
    pub weight: u64,
}

/// A script's row of `pgbench-scripts.json`.
#[derive(Debug, serde::Serialize)]
struct ScriptOutcome<'a> {
    #[serde(flatten)]
    script: &'a ScriptShare,
    /// Its weight over the sum of the weights.
    target_share: f64,
    transactions: u64,
    /// Its transactions over all the run's.
    share: f64,
    tps: f64,
    latency_ms: Option<&'a dbperf_results::summary::LatencyBlock>,
}

/// pgbench's report, then (with several scripts) pgbench's per-script lines: weight,
/// transactions, their share and rate, latency. `pgbench-scripts.json` keeps them.
pub struct ScriptsReport {
    pub inner: PgbenchReport,
    /// Each script's share (empty on the built-in fast path: then only `inner`'s report).
    pub scripts: Vec<ScriptShare>,
}

impl ScriptsReport {
    fn outcomes<'a>(&'a self, summary: &'a Summary) -> Vec<ScriptOutcome<'a>> {
        let weights: u64 = self.scripts.iter().map(|s| s.weight).sum();
        let total = summary.transactions.total;
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        self.scripts
            .iter()
            .map(|s| {
                let block = summary.per_type.get(&s.name);
                let transactions = block.map_or(0, |b| b.count);
                ScriptOutcome {
                    script: s,
                    target_share: ratio(s.weight, weights),
                    transactions,
                    share: ratio(transactions, total),
                    tps: if summary.duration_s > 0.0 {
                        transactions as f64 / summary.duration_s
                    } else {
                        0.0
                    },
                    latency_ms: block.map(|b| &b.latency_ms),
                }
            })
            .collect()
    }
}

impl FinalReport for ScriptsReport {
    fn final_report(&self, outcome: &RunOutcome, summary: &Summary) -> (String, Vec<ReportFile>) {
        let (mut text, mut files) = self.inner.final_report(outcome, summary);
        if self.scripts.is_empty() {
            return (text, files);
        }
        let rows = self.outcomes(summary);
        if rows.len() > 1 {
            text.push_str(&scripts_text(&rows));
        }
        files.push(ReportFile::json("pgbench-scripts.json", &rows));
        (text, files)
    }
}

/// pgbench's "SQL script N" lines.
fn scripts_text(rows: &[ScriptOutcome<'_>]) -> String {
    let mut text = String::new();
    for (k, r) in rows.iter().enumerate() {
        text.push_str(&format!(
            "SQL script {}: {}\n - weight: {} (targets {:.1}% of total)\n - {} transactions ({:.1}% of total, tps = {:.6})\n",
            k + 1,
            r.script.label.rsplit_once('@').map_or(r.script.label.as_str(), |(l, _)| l),
            r.script.weight,
            100.0 * r.target_share,
            r.transactions,
            100.0 * r.share,
            r.tps
        ));
        if let Some(l) = r.latency_ms {
            text.push_str(&format!(
                " - latency average = {:.3} ms, p95 = {:.3} ms, max = {:.3} ms\n",
                l.mean, l.p95, l.max
            ));
        }
    }
    text
}
