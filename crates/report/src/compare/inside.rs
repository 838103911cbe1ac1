//! The "inside the server" part of a comparison: per column, what telemetry and `dbperf
//! analyze` saw over its runs (stalls, TPS stability, checkpoint age and time in sync flush,
//! dirty pages, the top wait, client CPU), so the table that says which column won also shows
//! what the server was doing while it did.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::analysis::analyze::{analyze, AnalyzeOptions};
use crate::analysis::explain::redo_needed;
use crate::analysis::pressure::Pressure;
use crate::warnings::Warning;
use dbperf_core::stats::median;

/// What `dbperf analyze` (default thresholds) found in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInside {
    /// Stalls found.
    pub stalls: usize,
    /// Coefficient of variation of interval TPS, percent.
    pub tps_cv_pct: f64,
    /// Run-wide pressure (`None`: the run has no telemetry).
    pub pressure: Option<Pressure>,
    /// Median share of the host's CPU idle over the measured phase, percent.
    pub host_idle_pct: Option<f64>,
    /// Measured intervals.
    pub intervals: usize,
    /// The run's own warnings (`dbperf analyze`'s).
    pub warnings: Vec<Warning>,
    /// The state it started in.
    pub start: Option<dbperf_results::telemetry::StartState>,
}

impl RunInside {
    /// Analyses the run directory `dir`; `None` when it cannot be analysed (no measured
    /// interval, unreadable files): the comparison then shows the run as not analysed.
    pub fn read(dir: &Path) -> Option<RunInside> {
        let a = analyze(dir, &AnalyzeOptions::default()).ok()?;
        Some(RunInside {
            stalls: a.stalls.len(),
            tps_cv_pct: a.stability.tps_cv_pct,
            pressure: a.pressure,
            host_idle_pct: a.host_idle_pct,
            intervals: a.intervals,
            warnings: a.warnings,
            start: a.start,
        })
    }
}

/// One column's runs, summarised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InsideColumn {
    /// Runs in the column.
    pub runs: usize,
    /// ... of which could be analysed.
    pub analysed: usize,
    /// ... of which had telemetry.
    pub with_telemetry: usize,
    /// Stalls over all its analysed runs.
    pub stalls: usize,
    /// Median over its runs of the TPS coefficient of variation, percent.
    pub tps_cv_pct: Option<f64>,
    /// Highest checkpoint age in any run, percent of its maximum.
    pub checkpoint_max_pct: Option<f64>,
    /// Share of all its samples taken in sync flush (checkpoint age at or above
    /// [`crate::analysis::pressure::SYNC_FLUSH_PCT`] of its maximum), percent.
    pub sync_flush_pct: Option<f64>,
    /// Requested checkpoints over all its runs (PostgreSQL).
    pub checkpoints_requested: Option<f64>,
    /// Highest dirty pages in any run, percent of the buffer pool.
    pub dirty_max_pct: Option<f64>,
    /// `innodb_max_dirty_pages_pct` of its runs (the lowest, if they differ).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dirty_limit_pct: Option<f64>,
    /// The redo that would have held the highest checkpoint age of the runs whose redo did
    /// not hold it, with 25% to spare (study 001's reading, [`redo_needed`]), bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redo_needed_bytes: Option<u64>,
    /// The top wait named by most runs (ties: the first run's).
    pub top_wait: Option<String>,
    /// Highest client CPU in any run, percent of one core.
    pub client_cpu_max_pct: Option<f64>,
    /// Runs whose client was saturated (results client-bound).
    pub client_bound_runs: usize,
}

impl InsideColumn {
    /// Summarises `runs` (one column's).
    pub fn of(runs: &[Option<&RunInside>]) -> InsideColumn {
        let analysed: Vec<&RunInside> = runs.iter().flatten().copied().collect();
        let pressures: Vec<&Pressure> = analysed.iter().filter_map(|r| r.pressure.as_ref()).collect();
        let max = |f: fn(&Pressure) -> Option<f64>| pressures.iter().filter_map(|p| f(p)).reduce(f64::max);
        let checkpoint_samples: usize = pressures.iter().map(|p| p.checkpoint_samples).sum();
        let sync_samples: usize = pressures.iter().map(|p| p.sync_flush_samples).sum();
        let cvs: Vec<f64> = analysed.iter().map(|r| r.tps_cv_pct).collect();
        InsideColumn {
            runs: runs.len(),
            analysed: analysed.len(),
            with_telemetry: pressures.len(),
            stalls: analysed.iter().map(|r| r.stalls).sum(),
            tps_cv_pct: median(&cvs),
            checkpoint_max_pct: max(|p| p.checkpoint_max_pct),
            sync_flush_pct: (checkpoint_samples > 0).then(|| sync_samples as f64 * 100.0 / checkpoint_samples as f64),
            checkpoints_requested: pressures
                .iter()
                .filter_map(|p| p.checkpoints_requested)
                .reduce(|a, b| a + b),
            dirty_max_pct: max(|p| p.dirty_max_pct),
            dirty_limit_pct: pressures.iter().filter_map(|p| p.max_dirty_pages_pct).reduce(f64::min),
            redo_needed_bytes: pressures
                .iter()
                .filter_map(|p| redo_needed(p.redo_capacity_bytes, p.checkpoint_max_pct))
                .max(),
            top_wait: most_named(pressures.iter().filter_map(|p| p.top_wait.as_deref())),
            client_cpu_max_pct: max(|p| p.client_cpu_max_pct),
            client_bound_runs: pressures.iter().filter(|p| p.client_bound()).count(),
        }
    }

    /// The lines of the inside table, as `(label, value)`; `-` where nothing was measured.
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}%"));
        vec![
            (
                "stalls (analyze)",
                if self.analysed == 0 {
                    "-".to_string()
                } else {
                    format!("{} in {} run(s)", self.stalls, self.analysed)
                },
            ),
            (
                "TPS CV",
                self.tps_cv_pct.map_or("-".to_string(), |v| format!("{v:.1}%")),
            ),
            ("checkpoint age max (% of max)", pct(self.checkpoint_max_pct)),
            ("time in sync flush", pct(self.sync_flush_pct)),
            (
                "requested checkpoints",
                self.checkpoints_requested
                    .map_or("-".to_string(), |n| format!("{n:.0}")),
            ),
            (
                "dirty pages max",
                match (self.dirty_max_pct, self.dirty_limit_pct) {
                    (Some(d), Some(l)) => format!("{d:.0}% (limit {l:.0}%)"),
                    (d, _) => pct(d),
                },
            ),
            (
                "top wait",
                self.top_wait
                    .as_deref()
                    .map_or("-".to_string(), |w| w.trim_start_matches("wait/synch/").to_string()),
            ),
            (
                "client CPU max",
                match self.client_cpu_max_pct {
                    Some(v) if self.client_bound_runs > 0 => {
                        format!("{v:.0}% (client-bound in {} run(s))", self.client_bound_runs)
                    }
                    Some(v) => format!("{v:.0}%"),
                    None => "-".to_string(),
                },
            ),
            (
                "redo needed (+25%)",
                self.redo_needed_bytes.map_or_else(
                    // Below the async flush point the redo held the age: nothing is needed.
                    || {
                        if self.checkpoint_max_pct.is_some() {
                            "- (held)".to_string()
                        } else {
                            "-".to_string()
                        }
                    },
                    |b| format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64),
                ),
            ),
        ]
    }
}

/// The name that occurs most often (ties: the one seen first).
fn most_named<'a>(names: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, n) in names.enumerate() {
        counts.entry(n).or_insert((0, i)).0 += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.1 .1.cmp(&a.1 .1)))
        .map(|(n, _)| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pressure(ckpt: (usize, usize), top: &str, client: f64) -> Pressure {
        Pressure {
            samples: ckpt.0,
            checkpoint_max_pct: Some(if ckpt.1 > 0 { 100.0 } else { 40.0 }),
            redo_capacity_bytes: Some(8 << 20),
            checkpoint_max_bytes: Some(if ckpt.1 > 0 { 8 << 20 } else { 4 << 20 }),
            checkpoint_samples: ckpt.0,
            sync_flush_samples: ckpt.1,
            sync_flush_counted: false,
            checkpoints_requested: None,
            dirty_max_pct: Some(12.0),
            max_dirty_pages_pct: Some(90.0),
            top_wait: Some(top.to_string()),
            client_cpu_max_pct: Some(client),
            client_samples: ckpt.0,
            client_saturated_samples: if client >= 90.0 { ckpt.0 } else { 0 },
        }
    }

    #[test]
    fn a_column_sums_stalls_and_sync_flush_samples_and_names_the_usual_top_wait() {
        let log = "wait/synch/mutex/innodb/log_sys_mutex";
        let tree = "wait/synch/sxlock/innodb/index_tree_rw_lock";
        let runs = [
            RunInside {
                stalls: 2,
                tps_cv_pct: 30.0,
                pressure: Some(pressure((10, 8), log, 40.0)),
                host_idle_pct: None,
                intervals: 10,
                warnings: Vec::new(),
                start: None,
            },
            RunInside {
                stalls: 1,
                tps_cv_pct: 20.0,
                pressure: Some(pressure((10, 6), tree, 95.0)),
                host_idle_pct: None,
                intervals: 10,
                warnings: Vec::new(),
                start: None,
            },
            RunInside {
                stalls: 0,
                tps_cv_pct: 10.0,
                pressure: Some(pressure((20, 0), log, 50.0)),
                host_idle_pct: None,
                intervals: 10,
                warnings: Vec::new(),
                start: None,
            },
        ];
        let column = InsideColumn::of(&[Some(&runs[0]), None, Some(&runs[1]), Some(&runs[2])]);
        assert_eq!((column.runs, column.analysed, column.with_telemetry), (4, 3, 3));
        assert_eq!(column.stalls, 3);
        assert_eq!(column.tps_cv_pct, Some(20.0));
        assert_eq!(column.sync_flush_pct, Some(35.0));
        assert_eq!(column.top_wait.as_deref(), Some(log));
        assert_eq!(column.client_bound_runs, 1);
        let lines = column.lines();
        assert_eq!(lines[0], ("stalls (analyze)", "3 in 3 run(s)".to_string()));
        assert_eq!(lines[3], ("time in sync flush", "35%".to_string()));
        assert_eq!(lines[4], ("requested checkpoints", "-".to_string()));
        assert_eq!(lines[6], ("top wait", "mutex/innodb/log_sys_mutex".to_string()));
        assert_eq!(
            lines[7],
            ("client CPU max", "95% (client-bound in 1 run(s))".to_string())
        );
        // Dirty pages against their limit; the redo that holds the largest age + 25%: the 8 MiB
        // redo at 100% of its maximum needed 10 MiB.
        assert_eq!(lines[5], ("dirty pages max", "12% (limit 90%)".to_string()));
        assert_eq!(lines[8], ("redo needed (+25%)", "10 MiB".to_string()));
        // A column whose age stayed under the async point: its redo held it.
        let held = InsideColumn::of(&[Some(&runs[2])]);
        assert_eq!(held.lines()[8], ("redo needed (+25%)", "- (held)".to_string()));
    }

    #[test]
    fn runs_without_telemetry_show_dashes() {
        let run = RunInside {
            stalls: 0,
            tps_cv_pct: 3.0,
            pressure: None,
            host_idle_pct: None,
            intervals: 10,
            warnings: Vec::new(),
            start: None,
        };
        let column = InsideColumn::of(&[Some(&run)]);
        let lines = column.lines();
        assert_eq!(lines[1].1, "3.0%");
        assert!(lines[2..].iter().all(|(_, v)| v == "-"), "{lines:?}");
    }

    #[test]
    fn ties_go_to_the_name_seen_first() {
        assert_eq!(most_named(["b", "a", "a", "b"].into_iter()).as_deref(), Some("b"));
        assert_eq!(most_named(std::iter::empty()), None);
    }
}
