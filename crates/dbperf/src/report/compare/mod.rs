//! Side-by-side comparison of runs, the table engineers publish: rows are client threads,
//! columns are servers, variants or runs, cells the median of a metric over repetitions, each
//! with its difference to the baseline column and whether that difference is beyond the noise.
//!
//! Pure logic, no I/O: callers read run directories ([`crate::results::RunRecords`]) and turn
//! them into [`RunInfo`]s (which analyses each run's intervals and telemetry, [`inside`]);
//! [`compare_runs`] builds a [`Comparison`]; [`Comparison::render`] formats it ([`render`]).
//! The apples-to-apples check of server variables is in [`variables`].

pub mod inside;
pub mod render;
pub mod variables;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::stats;
pub use super::stats::{Verdict, DEFAULT_THRESHOLD_PCT, DRAW_RULE};
use crate::results::{LabPoint, RunRecords};

pub use inside::{InsideColumn, RunInside};
pub use render::Format;
pub use variables::{VariableDiff, VariableValues};

/// Value of the `schema` key of `--format json` output.
pub const COMPARE_SCHEMA: &str = "dbperf.compare/1";

/// Why runs cannot be compared. Each message says what to change.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// Nothing to compare.
    #[error("no runs to compare: give two or more run directories or run ids")]
    NoRuns,
    /// A run never wrote `summary.json`.
    #[error(
        "run {run_id} has no summary.json (it is still running, or was killed before the end): \
         leave it out, or run it again"
    )]
    NoSummary {
        /// The run.
        run_id: String,
    },
    /// Runs of different workloads in one table.
    #[error("the runs mix workloads ({0}): compare one workload at a time")]
    MixedWorkloads(String),
    /// `--baseline` names no column and no run.
    #[error("--baseline {given:?} is neither a column nor a run of this comparison; columns: {columns}")]
    UnknownBaseline {
        /// What was given.
        given: String,
        /// The columns there are.
        columns: String,
    },
}

/// What a comparison needs to know about one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// The run directory's name.
    pub run_id: String,
    /// Workload name.
    pub workload: String,
    /// Client threads (connections).
    pub threads: u32,
    /// Server version string, when known.
    pub server_version: Option<String>,
    /// Lab coordinates, for runs made by `dbperf lab run`.
    pub lab: Option<LabPoint>,
    /// Global server variables from the manifest; `None` when the server could not be queried.
    pub variables: Option<BTreeMap<String, String>>,
    /// Transactions per second.
    pub tps: f64,
    /// Statements per second.
    pub qps: f64,
    /// 95th percentile response time, ms.
    pub p95_ms: f64,
    /// 99th percentile response time, ms.
    pub p99_ms: f64,
    /// The run stopped before its planned end.
    pub interrupted: bool,
    /// What `dbperf analyze` found in it (`None`: it could not be analysed).
    pub inside: Option<RunInside>,
}

impl RunInfo {
    /// From a run's manifest and summary (a run without summary is an error), and the analysis
    /// of its intervals and telemetry.
    pub fn from_records(r: &RunRecords) -> Result<RunInfo, CompareError> {
        let s = r.summary.as_ref().ok_or_else(|| CompareError::NoSummary {
            run_id: r.dir.run_id().to_string(),
        })?;
        let facts = r.manifest.server.as_ref();
        Ok(RunInfo {
            run_id: r.dir.run_id().to_string(),
            workload: s.workload.clone(),
            threads: s.threads,
            server_version: s.server.version.clone().or_else(|| facts.map(|f| f.version.clone())),
            lab: r.manifest.lab.clone(),
            variables: facts.map(|f| f.variables.clone()),
            tps: s.transactions.per_sec,
            qps: s.queries.per_sec,
            p95_ms: s.latency_ms.p95,
            p99_ms: s.latency_ms.p99,
            interrupted: s.interrupted,
            inside: RunInside::read(r.dir.path()),
        })
    }
}

/// The number compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Transactions per second (higher is better).
    Tps,
    /// Statements per second (higher is better).
    Qps,
    /// 95th percentile response time, ms (lower is better).
    P95,
    /// 99th percentile response time, ms (lower is better).
    P99,
}

impl Metric {
    /// `tps`, `qps`, `p95`, `p99`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Tps => "tps",
            Metric::Qps => "qps",
            Metric::P95 => "p95",
            Metric::P99 => "p99",
        }
    }

    /// Unit of the cells: `trx/s`, `statements/s` or `ms`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Tps => "trx/s",
            Metric::Qps => "statements/s",
            Metric::P95 | Metric::P99 => "ms",
        }
    }

    /// Throughput: higher is better; latency: lower is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Tps | Metric::Qps)
    }

    /// The metric's value in one run.
    pub fn of(self, r: &RunInfo) -> f64 {
        match self {
            Metric::Tps => r.tps,
            Metric::Qps => r.qps,
            Metric::P95 => r.p95_ms,
            Metric::P99 => r.p99_ms,
        }
    }
}

/// What the columns are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// The lab's server label (outside the lab: the server version).
    Server,
    /// The lab's configuration variant.
    Variant,
    /// The lab's CPU pinning.
    Pinning,
    /// Each run its own column.
    Run,
}

/// How to compare.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// Columns; `None` chooses: servers if they differ, else variants if they differ, else runs.
    pub by: Option<GroupBy>,
    /// The number in the cells.
    pub metric: Metric,
    /// Without repetitions, differences up to this many percent are draws.
    pub threshold_pct: f64,
    /// Baseline column: a column label or a run id in it; `None` = the first column.
    pub baseline: Option<String>,
}

impl Default for CompareOptions {
    fn default() -> CompareOptions {
        CompareOptions {
            by: None,
            metric: Metric::Tps,
            threshold_pct: DEFAULT_THRESHOLD_PCT,
            baseline: None,
        }
    }
}

/// One column of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    /// Header text.
    pub label: String,
    /// Runs in the column, in input order.
    pub runs: Vec<String>,
}

/// One row: a number of client threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Client threads.
    pub threads: u32,
    /// One per column, `None` where the column has no run at these threads.
    pub cells: Vec<Option<Cell>>,
}

/// The runs of one column at one number of threads.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// Median of the metric over the runs.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Number of runs (repetitions).
    pub n: usize,
    /// Their ids.
    pub runs: Vec<String>,
    /// `(median - baseline median) / baseline median`, percent.
    pub diff_pct: Option<f64>,
    /// Whether the difference is beyond the noise.
    pub verdict: Verdict,
}

impl Cell {
    fn spread(&self) -> stats::Spread {
        stats::Spread {
            median: self.median,
            min: self.min,
            max: self.max,
            n: self.n,
        }
    }
}

/// A finished comparison, ready to render.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Always [`COMPARE_SCHEMA`].
    pub schema: &'static str,
    /// The workload of every run.
    pub workload: String,
    /// The number in the cells.
    pub metric: Metric,
    /// Its unit.
    pub unit: &'static str,
    /// Whether more is better.
    pub higher_is_better: bool,
    /// What the columns are.
    pub by: GroupBy,
    /// Columns, the baseline first.
    pub columns: Vec<Column>,
    /// Threshold used for cells without repetitions, percent.
    pub threshold_pct: f64,
    /// Rows by increasing threads.
    pub rows: Vec<Row>,
    /// Server variables that differ between the runs.
    pub variables: VariableDiff,
    /// Per column (same order), what the server did during its runs; empty when no run
    /// could be analysed.
    pub inside: Vec<InsideColumn>,
    /// Other things the reader should know (interrupted runs, differing versions, ...).
    pub notes: Vec<String>,
    /// How draws are decided ([`DRAW_RULE`]).
    pub rule: &'static str,
}

/// Applies the draw rule ([`stats::judge`]) to `cell` against `base`.
fn judge(cell: &Cell, base: &Cell, threshold_pct: f64, higher_is_better: bool) -> (Option<f64>, Verdict) {
    stats::judge(&cell.spread(), &base.spread(), threshold_pct, higher_is_better)
}

fn distinct<'a>(values: impl Iterator<Item = &'a str>) -> usize {
    values.collect::<BTreeSet<_>>().len()
}

fn server_of(r: &RunInfo) -> &str {
    match &r.lab {
        Some(l) => &l.server,
        None => r.server_version.as_deref().unwrap_or("unknown server"),
    }
}

fn variant_of(r: &RunInfo) -> &str {
    r.lab.as_ref().map_or("default", |l| l.variant.as_str())
}

fn pinning_of(r: &RunInfo) -> &str {
    r.lab.as_ref().map_or("unpinned", |l| {
        if l.pinning.is_empty() {
            "unpinned"
        } else {
            l.pinning.as_str()
        }
    })
}

fn choose_by(runs: &[RunInfo]) -> GroupBy {
    let all_lab = runs.iter().all(|r| r.lab.is_some());
    if distinct(runs.iter().map(server_of)) > 1 {
        GroupBy::Server
    } else if all_lab && distinct(runs.iter().map(variant_of)) > 1 {
        GroupBy::Variant
    } else if all_lab && distinct(runs.iter().map(pinning_of)) > 1 {
        GroupBy::Pinning
    } else if all_lab || runs.iter().map(|r| r.threads).collect::<BTreeSet<_>>().len() == runs.len() {
        // One server, and (outside the lab) a users sweep with one run per user count: a
        // single column, one row per user count.
        GroupBy::Server
    } else {
        GroupBy::Run
    }
}

/// The chosen dimension first, then every other lab dimension that differs between the runs.
fn column_label(r: &RunInfo, by: GroupBy, differ: [bool; 3]) -> String {
    if by == GroupBy::Run {
        return r.run_id.clone();
    }
    let dims = [
        (GroupBy::Server, server_of(r), differ[0]),
        (GroupBy::Variant, variant_of(r), differ[1]),
        (GroupBy::Pinning, pinning_of(r), differ[2]),
    ];
    let mut parts: Vec<&str> = dims.iter().filter(|d| d.0 == by).map(|d| d.1).collect();
    parts.extend(dims.iter().filter(|d| d.0 != by && d.2).map(|d| d.1));
    parts.join(" / ")
}

/// Builds the comparison table of `runs` (all of one workload, each with a summary).
pub fn compare_runs(runs: &[RunInfo], opts: &CompareOptions) -> Result<Comparison, CompareError> {
    let first = runs.first().ok_or(CompareError::NoRuns)?;
    let mut workloads: BTreeMap<&str, usize> = BTreeMap::new();
    for r in runs {
        *workloads.entry(r.workload.as_str()).or_default() += 1;
    }
    if workloads.len() > 1 {
        let list: Vec<String> = workloads.iter().map(|(w, n)| format!("{w}: {n} run(s)")).collect();
        return Err(CompareError::MixedWorkloads(list.join(", ")));
    }
    let by = opts.by.unwrap_or_else(|| choose_by(runs));
    let servers_differ = distinct(runs.iter().map(server_of)) > 1;
    let variants_differ = distinct(runs.iter().map(variant_of)) > 1;
    let differ = [
        servers_differ,
        variants_differ,
        distinct(runs.iter().map(pinning_of)) > 1,
    ];

    // Columns in order of first appearance; each run belongs to exactly one.
    let mut columns: Vec<Column> = Vec::new();
    let mut column_of_run = Vec::with_capacity(runs.len());
    for r in runs {
        let label = column_label(r, by, differ);
        let i = match columns.iter().position(|c| c.label == label) {
            Some(i) => i,
            None => {
                columns.push(Column {
                    label,
                    runs: Vec::new(),
                });
                columns.len() - 1
            }
        };
        columns[i].runs.push(r.run_id.clone());
        column_of_run.push(i);
    }
    if let Some(given) = &opts.baseline {
        let pos = columns
            .iter()
            .position(|c| &c.label == given)
            .or_else(|| columns.iter().position(|c| c.runs.contains(given)))
            .ok_or_else(|| CompareError::UnknownBaseline {
                given: given.clone(),
                columns: columns.iter().map(|c| c.label.as_str()).collect::<Vec<_>>().join(", "),
            })?;
        let base = columns.remove(pos);
        columns.insert(0, base);
        for c in column_of_run.iter_mut() {
            *c = match *c {
                c if c == pos => 0,
                c if c < pos => c + 1,
                c => c,
            };
        }
    }

    let threads: BTreeSet<u32> = runs.iter().map(|r| r.threads).collect();
    let higher = opts.metric.higher_is_better();
    let rows = threads
        .into_iter()
        .map(|t| {
            let mut cells: Vec<Option<Cell>> = (0..columns.len())
                .map(|col| {
                    let members: Vec<&RunInfo> = runs
                        .iter()
                        .zip(&column_of_run)
                        .filter(|(r, &c)| c == col && r.threads == t)
                        .map(|(r, _)| r)
                        .collect();
                    if members.is_empty() {
                        return None;
                    }
                    let values: Vec<f64> = members.iter().map(|r| opts.metric.of(r)).collect();
                    let s = stats::Spread::of(&values)?;
                    Some(Cell {
                        median: s.median,
                        min: s.min,
                        max: s.max,
                        n: s.n,
                        runs: members.iter().map(|r| r.run_id.clone()).collect(),
                        diff_pct: None,
                        verdict: Verdict::NoBaseline,
                    })
                })
                .collect();
            let base = cells[0].clone();
            for (i, cell) in cells.iter_mut().enumerate() {
                let Some(cell) = cell else { continue };
                if i == 0 {
                    cell.verdict = Verdict::Baseline;
                } else if let Some(base) = &base {
                    (cell.diff_pct, cell.verdict) = judge(cell, base, opts.threshold_pct, higher);
                }
            }
            Row { threads: t, cells }
        })
        .collect();

    let labels: Vec<&str> = column_of_run.iter().map(|&c| columns[c].label.as_str()).collect();
    let variables = variables::diff(runs, &labels, &columns);
    let inside = if runs.iter().any(|r| r.inside.is_some()) {
        (0..columns.len())
            .map(|col| {
                let members: Vec<Option<&RunInside>> = runs
                    .iter()
                    .zip(&column_of_run)
                    .filter(|(_, &c)| c == col)
                    .map(|(r, _)| r.inside.as_ref())
                    .collect();
                InsideColumn::of(&members)
            })
            .collect()
    } else {
        Vec::new()
    };
    let mut notes = Vec::new();
    for r in runs.iter().filter(|r| r.interrupted) {
        notes.push(format!(
            "run {} was interrupted: its numbers cover only what finished",
            r.run_id
        ));
    }
    let versions: BTreeSet<&str> = runs.iter().filter_map(|r| r.server_version.as_deref()).collect();
    if versions.len() > 1 && by != GroupBy::Server {
        let list: Vec<&str> = versions.into_iter().collect();
        notes.push(format!(
            "the runs are on different server versions: {}",
            list.join(", ")
        ));
    }
    for r in runs.iter().filter(|r| r.variables.is_none()) {
        notes.push(format!(
            "run {} has no server variables in its manifest: it is left out of the variable check",
            r.run_id
        ));
    }
    Ok(Comparison {
        schema: COMPARE_SCHEMA,
        workload: first.workload.clone(),
        metric: opts.metric,
        unit: opts.metric.unit(),
        higher_is_better: higher,
        by,
        columns,
        threshold_pct: opts.threshold_pct,
        rows,
        variables,
        inside,
        notes,
        rule: DRAW_RULE,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A run for tests: `id` at `threads` with `tps`, p95 = 1000 / tps.
    pub(crate) fn run(id: &str, threads: u32, tps: f64) -> RunInfo {
        RunInfo {
            run_id: id.to_string(),
            workload: "oltp_point_select".to_string(),
            threads,
            server_version: Some("10.11.6-MariaDB".to_string()),
            lab: None,
            variables: Some(BTreeMap::new()),
            tps,
            qps: tps * 10.0,
            p95_ms: 1000.0 / tps,
            p99_ms: 2000.0 / tps,
            interrupted: false,
            inside: None,
        }
    }

    pub(crate) fn lab_run(id: &str, server: &str, variant: &str, threads: u32, rep: u32, tps: f64) -> RunInfo {
        RunInfo {
            lab: Some(LabPoint {
                experiment: "e".into(),
                point: format!("{server}/{variant}/t{threads}/r{rep}"),
                server: server.into(),
                variant: variant.into(),
                workload: "oltp_point_select".into(),
                threads,
                rep,
                ..LabPoint::default()
            }),
            ..run(id, threads, tps)
        }
    }

    fn cell(values: &[f64]) -> Cell {
        let s = stats::Spread::of(values).unwrap();
        Cell {
            median: s.median,
            min: s.min,
            max: s.max,
            n: s.n,
            runs: vec![],
            diff_pct: None,
            verdict: Verdict::NoBaseline,
        }
    }

    #[test]
    fn cells_are_judged_by_the_one_draw_rule() {
        let base = cell(&[100.0]);
        assert_eq!(judge(&cell(&[105.0]), &base, 5.0, true).1, Verdict::Draw);
        assert_eq!(judge(&cell(&[106.0]), &base, 5.0, true).1, Verdict::Better);
        assert_eq!(judge(&cell(&[90.0]), &base, 5.0, false).1, Verdict::Better);
        // Repetitions on both sides whose ranges overlap: a draw despite 20%.
        let (diff, v) = judge(&cell(&[120.0, 108.0, 130.0]), &cell(&[100.0, 90.0, 110.0]), 5.0, true);
        assert_eq!((diff.map(|d| d.round()), v), (Some(20.0), Verdict::Draw));
    }

    #[test]
    fn lab_runs_are_grouped_by_server_with_medians() {
        let runs = vec![
            lab_run("a1", "mariadb", "default", 1, 1, 100.0),
            lab_run("a2", "mariadb", "default", 1, 2, 104.0),
            lab_run("a3", "mariadb", "default", 1, 3, 90.0),
            lab_run("b1", "mysql", "default", 1, 1, 80.0),
            lab_run("b2", "mysql", "default", 1, 2, 82.0),
            lab_run("b3", "mysql", "default", 8, 1, 500.0),
        ];
        let c = compare_runs(&runs, &CompareOptions::default()).unwrap();
        assert_eq!(c.by, GroupBy::Server);
        let labels: Vec<_> = c.columns.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["mariadb", "mysql"]);
        assert_eq!(c.rows.len(), 2);
        let a = c.rows[0].cells[0].as_ref().unwrap();
        assert_eq!((a.median, a.n, a.verdict), (100.0, 3, Verdict::Baseline));
        let b = c.rows[0].cells[1].as_ref().unwrap();
        assert_eq!((b.median, b.verdict), (81.0, Verdict::Worse));
        assert!(c.rows[1].cells[0].is_none());
        assert_eq!(c.rows[1].cells[1].as_ref().unwrap().verdict, Verdict::NoBaseline);
    }

    #[test]
    fn baseline_by_label_or_run_moves_first() {
        let runs = vec![run("r1", 1, 100.0), run("r2", 1, 120.0)];
        let opts = CompareOptions {
            baseline: Some("r2".into()),
            ..CompareOptions::default()
        };
        let c = compare_runs(&runs, &opts).unwrap();
        assert_eq!(c.by, GroupBy::Run);
        assert_eq!(c.columns[0].label, "r2");
        let other = c.rows[0].cells[1].as_ref().unwrap();
        assert_eq!((other.median, other.verdict), (100.0, Verdict::Worse));
        let e = compare_runs(
            &runs,
            &CompareOptions {
                baseline: Some("zz".into()),
                ..CompareOptions::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("\"zz\"") && e.contains("r1, r2"), "{e}");
    }

    #[test]
    fn a_users_sweep_outside_the_lab_is_one_column_and_two_runs_at_one_count_are_two() {
        let sweep = [run("a", 1, 100.0), run("b", 2, 180.0), run("c", 4, 300.0)];
        let c = compare_runs(&sweep, &CompareOptions::default()).unwrap();
        assert_eq!((c.by, c.columns.len(), c.rows.len()), (GroupBy::Server, 1, 3));
        let pair = [run("a", 8, 100.0), run("b", 8, 180.0)];
        let c = compare_runs(&pair, &CompareOptions::default()).unwrap();
        assert_eq!((c.by, c.columns.len()), (GroupBy::Run, 2));
    }

    #[test]
    fn mixed_workloads_are_refused() {
        let mut other = run("r2", 1, 1.0);
        other.workload = "oltp_read_only".into();
        let e = compare_runs(&[run("r1", 1, 1.0), other], &CompareOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("oltp_point_select: 1 run(s), oltp_read_only: 1 run(s)"),
            "{e}"
        );
        assert!(matches!(
            compare_runs(&[], &CompareOptions::default()),
            Err(CompareError::NoRuns)
        ));
    }

    #[test]
    fn servers_and_variants_both_varying_make_combined_columns() {
        let runs = vec![
            lab_run("a", "mariadb", "dw-on", 1, 1, 100.0),
            lab_run("b", "mariadb", "dw-off", 1, 1, 120.0),
            lab_run("c", "mysql", "dw-on", 1, 1, 90.0),
        ];
        let c = compare_runs(&runs, &CompareOptions::default()).unwrap();
        let labels: Vec<_> = c.columns.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["mariadb / dw-on", "mariadb / dw-off", "mysql / dw-on"]);
        let by_variant = CompareOptions {
            by: Some(GroupBy::Variant),
            ..CompareOptions::default()
        };
        let c = compare_runs(&runs, &by_variant).unwrap();
        let labels: Vec<_> = c.columns.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["dw-on / mariadb", "dw-off / mariadb", "dw-on / mysql"]);
    }
}
