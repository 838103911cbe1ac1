//! The end of a pgbench run: pgbench 15's final lines (what its own tests read: the
//! transaction type, "number of transactions actually processed: N/M", failures, retries,
//! the latency limit, "latency average", "tps"), with several scripts pgbench's per-script
//! lines, with `-r` the statements' latencies; then, under "dbperf's figures:", dbperf's own
//! report (percentiles, queries, errors by class) and the client-bound warning.
//! `pgbench-scripts.json` keeps the per-script rows.

use std::fmt::Write as _;

use std::sync::Arc;

use dbperf_engine::{RunOutcome, TxnStats};
use hdrhistogram::Histogram;

use super::lang::per_command::CommandStats;
use crate::{FinalReport, ReportFile};
use dbperf_report as report;
use dbperf_results::Summary;

/// What pgbench's lines say of the run, besides what was measured.
#[derive(Debug, Clone, Default)]
pub struct PgbenchReport {
    /// The run's client threads (pgbench's "number of threads", and the client-bound warning).
    pub client_threads: usize,
    /// pgbench's "transaction type": `<builtin: TPC-B (sort of)>`, a file's path, or
    /// "multiple scripts".
    pub transaction_type: String,
    pub scale: i64,
    /// `-M`: simple, extended or prepared.
    pub mode: String,
    pub clients: u32,
    /// `--max-tries` (0: unlimited).
    pub max_tries: u32,
    /// `--failures-detailed`: the failed transactions by kind, serialization or deadlock.
    pub failures_detailed: bool,
    /// `-t` (then "N/M" is printed), or the run's `-T` seconds.
    pub transactions_per_client: Option<u64>,
    pub duration_s: u64,
    /// `-L` in milliseconds.
    pub latency_limit_ms: Option<f64>,
    /// `-R` or `-P`: pgbench then prints the latency's standard deviation.
    pub with_stddev: bool,
    /// `-R`: an open loop.
    pub throttled: bool,
    /// `-C`: tps includes the reconnections.
    pub connect_each: bool,
    /// `-r`: every command's latency, failures and retries.
    pub per_command: Option<Arc<CommandStats>>,
}

impl PgbenchReport {
    /// pgbench's lines for what the engine measured.
    pub fn pgbench_text(&self, outcome: &RunOutcome, summary: &Summary) -> String {
        let total = &outcome.total;
        let (done, failed, skipped) = (total.transactions, total.failed, total.skipped);
        // pgbench's percentages are of every transaction: done, failed and skipped.
        let tried = done + failed + skipped;
        let pct = |n: u64, of: u64| if of == 0 { 0.0 } else { 100.0 * n as f64 / of as f64 };
        let mut t = String::new();
        let _ = writeln!(t, "transaction type: {}", self.transaction_type);
        let _ = writeln!(t, "scaling factor: {}", self.scale);
        let _ = writeln!(t, "query mode: {}", self.mode);
        let _ = writeln!(t, "number of clients: {}", self.clients);
        let _ = writeln!(t, "number of threads: {}", self.client_threads);
        if self.max_tries != 0 {
            let _ = writeln!(t, "maximum number of tries: {}", self.max_tries);
        }
        match self.transactions_per_client {
            Some(n) => {
                let _ = writeln!(t, "number of transactions per client: {n}");
                let _ = writeln!(
                    t,
                    "number of transactions actually processed: {done}/{}",
                    n * u64::from(self.clients)
                );
            }
            None => {
                let _ = writeln!(t, "duration: {} s", self.duration_s);
                let _ = writeln!(t, "number of transactions actually processed: {done}");
            }
        }
        let _ = writeln!(
            t,
            "number of failed transactions: {failed} ({:.3}%)",
            pct(failed, tried)
        );
        if self.failures_detailed {
            let deadlocks = total.failed_deadlocks;
            let _ = writeln!(
                t,
                "number of serialization failures: {} ({:.3}%)",
                failed - deadlocks,
                pct(failed - deadlocks, tried)
            );
            let _ = writeln!(
                t,
                "number of deadlock failures: {deadlocks} ({:.3}%)",
                pct(deadlocks, tried)
            );
        }
        if self.max_tries != 1 {
            let _ = writeln!(
                t,
                "number of transactions retried: {} ({:.3}%)",
                total.retried,
                pct(total.retried, tried)
            );
            let _ = writeln!(t, "total number of retries: {}", total.retries);
        }
        if !ran_any(outcome) {
            // pgbench prints nothing more when no transaction ran (all failed).
            return t;
        }
        if self.throttled && self.latency_limit_ms.is_some() {
            // Already later than the limit when their turn came: not run (RunConfig::skip_late).
            let _ = writeln!(
                t,
                "number of transactions skipped: {skipped} ({:.3}%)",
                pct(skipped, tried)
            );
        }
        if let Some(limit) = self.latency_limit_ms {
            let late = above(&total.response, limit);
            let _ = writeln!(
                t,
                "number of transactions above the {limit:.1} ms latency limit: {late}/{done} ({:.3}%)",
                pct(late, done)
            );
        }
        let (mean, stddev) = ms(&total.response);
        let _ = writeln!(t, "latency average = {mean:.3} ms");
        if self.with_stddev || self.latency_limit_ms.is_some() {
            let _ = writeln!(t, "latency stddev = {stddev:.3} ms");
        }
        let tps = if summary.duration_s > 0.0 {
            done as f64 / summary.duration_s
        } else {
            0.0
        };
        let _ = writeln!(
            t,
            "tps = {tps:.6} ({})",
            if self.connect_each {
                "including reconnection times"
            } else {
                "without initial connection time"
            }
        );
        t
    }

    /// `-r`: script `script`'s commands (`prefix` " - " inside a block of several scripts).
    fn commands_text(&self, script: usize, prefix: &str) -> String {
        match &self.per_command {
            Some(c) => c.text(script, prefix, self.max_tries != 1),
            None => String::new(),
        }
    }
}

/// Whether any transaction ran to its end or was skipped: without one, pgbench's report
/// ends after its counts.
fn ran_any(outcome: &RunOutcome) -> bool {
    outcome.total.transactions + outcome.total.skipped > 0
}

/// Mean and standard deviation in milliseconds of a histogram of microseconds.
fn ms(h: &Histogram<u64>) -> (f64, f64) {
    if h.is_empty() {
        return (0.0, 0.0);
    }
    (h.mean() / 1000.0, h.stdev() / 1000.0)
}

/// Transactions over `limit_ms` in a histogram of microseconds.
fn above(h: &Histogram<u64>, limit_ms: f64) -> u64 {
    let limit_us = (limit_ms * 1000.0) as u64;
    if h.is_empty() || h.max() <= limit_us {
        return 0;
    }
    h.iter_recorded()
        .filter(|v| v.value_iterated_to() > limit_us)
        .map(|v| v.count_at_value())
        .sum()
}

impl FinalReport for PgbenchReport {
    fn final_report(&self, outcome: &RunOutcome, summary: &Summary) -> (String, Vec<ReportFile>) {
        let mut text = self.pgbench_text(outcome, summary);
        if ran_any(outcome) {
            text.push_str(&self.commands_text(0, ""));
        }
        text.push_str(&self.dbperf_text(summary));
        (text, Vec::new())
    }
}

impl PgbenchReport {
    /// dbperf's own figures, after pgbench's lines.
    fn dbperf_text(&self, summary: &Summary) -> String {
        let mut text = String::from("\ndbperf's figures:\n");
        text.push_str(&report::final_text(summary, None));
        if let Some(line) = report::client_bound_warning(summary, self.client_threads) {
            text.push_str(&line);
            text.push('\n');
        }
        text
    }
}

/// One script of a run, for the per-script report.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScriptShare {
    /// Its transaction name (in `summary.json`'s `per_type`).
    pub name: String,
    /// What pgbench's per-script line names: a file's path or `<builtin: ...>`.
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
        let mut text = self.inner.pgbench_text(outcome, summary);
        let rows = self.outcomes(summary);
        if ran_any(outcome) && rows.len() > 1 {
            // pgbench's block per script, each with its commands under `-r`.
            for (k, r) in rows.iter().enumerate() {
                let stats = outcome.total.per_txn.get(k);
                text.push_str(&self.inner.script_text(k, r, stats));
                text.push_str(&self.inner.commands_text(k, " - "));
            }
        } else if ran_any(outcome) {
            text.push_str(&self.inner.commands_text(0, ""));
        }
        text.push_str(&self.inner.dbperf_text(summary));
        let files = match self.scripts.is_empty() {
            true => Vec::new(),
            false => vec![ReportFile::json("pgbench-scripts.json", &rows)],
        };
        (text, files)
    }
}

impl PgbenchReport {
    /// pgbench's "SQL script N" lines of script `k`: its share, its failures (and retries),
    /// its latency, from what the engine measured of its transactions (`stats`).
    fn script_text(&self, k: usize, r: &ScriptOutcome<'_>, stats: Option<&TxnStats>) -> String {
        let mut text = format!(
        "SQL script {}: {}\n - weight: {} (targets {:.1}% of total)\n - {} transactions ({:.1}% of total, tps = {:.6})\n",
        k + 1,
        r.script.label,
        r.script.weight,
        100.0 * r.target_share,
        r.transactions,
        100.0 * r.share,
        r.tps
    );
        let Some(s) = stats else {
            return text;
        };
        // pgbench's percentages are of the script's transactions: done, and failed.
        let all = r.transactions + s.failed;
        let pct = |n: u64| if all == 0 { 0.0 } else { 100.0 * n as f64 / all as f64 };
        let _ = writeln!(
            text,
            " - number of failed transactions: {} ({:.3}%)",
            s.failed,
            pct(s.failed)
        );
        if self.failures_detailed {
            let serialization = s.failed - s.failed_deadlocks;
            let _ = writeln!(
            text,
            " - number of serialization failures: {serialization} ({:.3}%)\n - number of deadlock failures: {} ({:.3}%)",
            pct(serialization),
            s.failed_deadlocks,
            pct(s.failed_deadlocks)
        );
        }
        if self.max_tries != 1 {
            let _ = writeln!(
                text,
                " - number of transactions retried: {} ({:.3}%)\n - total number of retries: {}",
                s.retried,
                pct(s.retried),
                s.retries
            );
        }
        let (mean, stddev) = ms(&s.response);
        let _ = writeln!(
            text,
            " - latency average = {mean:.3} ms\n - latency stddev = {stddev:.3} ms"
        );
        text
    }
}
