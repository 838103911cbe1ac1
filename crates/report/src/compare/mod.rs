//! Side-by-side comparison of runs, the table engineers publish: rows are client threads (or,
//! with `--metric queries`, TPC-H queries), columns are servers, variants or runs, cells the
//! median of one of the runs' own figures ([`Metric`], read by [`dbperf_results::figures`]) over
//! repetitions, each with its difference to the baseline column and whether that difference is
//! beyond the noise (the one draw rule of [`dbperf_core::stats`]).
//!
//! Pure logic, no I/O: callers read run directories ([`dbperf_results::RunRecords`]) and turn
//! them into [`RunInfo`]s (which analyses each run's intervals and telemetry, [`inside`]);
//! [`compare_runs`] builds a [`Comparison`]; [`crate::export`] formats it (one file per format),
//! in the words [`view`] gives every format.
//! The apples-to-apples check of server variables is in [`variables`]; the warnings about
//! artifacts of the measurement, per run and across runs, in [`warnings`].

pub mod inside;
pub mod metric;
pub mod variables;
pub mod view;
pub mod warnings;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use dbperf_core::stats;
pub use dbperf_core::stats::{Verdict, DEFAULT_THRESHOLD_PCT, DRAW_RULE};
use dbperf_results::figures::{self, Figures};
use dbperf_results::tpch::TpchReport;
use dbperf_results::{LabPoint, ResultsError, RunRecords};

pub use inside::{InsideColumn, RunInside};
pub use metric::{Metric, METRIC_FORMS};
pub use variables::{VariableDiff, VariableValues};

use crate::warnings::Warning;

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
    /// A run lacks the metric asked for.
    #[error(
        "--metric {metric}: run(s) {runs} do not have it; the selected runs all have: {available} \
         (choose one of those, or leave those runs out){unreadable}"
    )]
    MissingMetric {
        /// The metric.
        metric: String,
        /// The runs without it.
        runs: String,
        /// Metrics every selected run has.
        available: String,
        /// `; unreadable: ...` when a run's result file could not be read, else empty.
        unreadable: String,
    },
    /// A run's result files could not be read.
    #[error(transparent)]
    Results(#[from] ResultsError),
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
    /// The run's own figures by name ([`dbperf_results::figures`]), what `--metric` picks.
    pub figures: Figures,
    /// Result files of the run that could not be read, and why (their figures are missing).
    pub unreadable: Vec<String>,
    /// dbperf's CPU per transaction over the run, microseconds (`None`: not recorded).
    pub client_us_per_txn: Option<f64>,
    /// ... per query.
    pub client_us_per_query: Option<f64>,
    /// The run was open loop (`--rate`): its throughput is the rate asked for, not what the
    /// users could do.
    pub open_loop: bool,
}

impl RunInfo {
    /// What tells this run apart in a comparison's warnings: a lab run's server, variant,
    /// pinning (when it has one), users and repetition (`mariadb-10.11 · flush=2 · 8 users ·
    /// rep 2`); another run's workload and users with its id.
    pub fn label(&self) -> String {
        match &self.lab {
            Some(l) => self
                .parts()
                .into_iter()
                .filter(|(what, v)| match *what {
                    "pinning" => !l.pinning.is_empty() && v != "unpinned",
                    "repetition" => l.rep > 1,
                    _ => true,
                })
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
                .join(" · "),
            None => format!("{}, {} users ({})", self.workload, self.threads, self.run_id),
        }
    }

    /// The coordinates of the run, each named: a lab run's server, variant, pinning, users and
    /// repetition; another run's workload, server version and users.
    fn parts(&self) -> Vec<(&'static str, String)> {
        let users = ("users", users(self.threads));
        match &self.lab {
            Some(l) => vec![
                ("server", l.server.clone()),
                ("variant", l.variant.clone()),
                ("pinning", l.pinning.clone()),
                users,
                ("repetition", format!("rep {}", l.rep)),
            ],
            None => vec![
                ("workload", self.workload.clone()),
                ("server", self.server_version.clone().unwrap_or_default()),
                users,
            ],
        }
    }

    /// From a run's manifest and summary (a TPC-H run: its `tpch.json`; a run with neither is
    /// an error), its own figures, and the analysis of its intervals and telemetry.
    pub fn from_records(r: &RunRecords) -> Result<RunInfo, CompareError> {
        let run_id = r.dir.run_id().to_string();
        let facts = r.manifest.server.as_ref();
        let (mut figures, unreadable) = figures::read(&r.dir, r.summary.as_ref());
        let unreadable: Vec<String> = unreadable.iter().map(ToString::to_string).collect();
        let info = match &r.summary {
            Some(s) => RunInfo {
                run_id,
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
                figures,
                unreadable,
                client_us_per_txn: per(s.client.cpu_s, s.transactions.total),
                client_us_per_query: per(s.client.cpu_s, s.queries.total),
                open_loop: s.rate.is_some(),
            },
            None => {
                // A TPC-H test writes tpch.json, not summary.json.
                let Some(tpch) = TpchReport::read(&r.dir)? else {
                    return Err(CompareError::NoSummary { run_id });
                };
                figures.retain(|_, v| !v.is_empty());
                RunInfo {
                    run_id,
                    workload: r.manifest.workload.name.clone(),
                    threads: tpch.streams(),
                    server_version: Some(tpch.server_version().to_string()).filter(|v| !v.is_empty()),
                    lab: r.manifest.lab.clone(),
                    variables: facts.map(|f| f.variables.clone()),
                    tps: 0.0,
                    qps: 0.0,
                    p95_ms: 0.0,
                    p99_ms: 0.0,
                    interrupted: false,
                    inside: RunInside::read(r.dir.path()),
                    figures,
                    unreadable,
                    client_us_per_txn: None,
                    client_us_per_query: None,
                    open_loop: false,
                }
            }
        };
        Ok(info)
    }
}

/// `cpu_s` over `n` events in microseconds (`None` without events or CPU).
fn per(cpu_s: f64, n: u64) -> Option<f64> {
    (n > 0 && cpu_s > 0.0).then(|| cpu_s * 1e6 / n as f64)
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
    /// Client threads (TPC-H: query streams).
    pub threads: u32,
    /// The row's label: the threads, or with `--metric queries` the query (`Q5`, `geomean`).
    pub label: String,
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
    /// The median against the baseline's (`1.00` in the baseline column) with its spread
    /// ([`relative`]); `None` without a baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relative: Option<Relative>,
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

/// A number of users as text: `1 user`, `16 users`.
pub fn users(n: u32) -> String {
    match n {
        1 => "1 user".to_string(),
        n => format!("{n} users"),
    }
}

/// Each run's label by only what varies between `infos` (`flush=2 · 16 users · rep 1` when the
/// server and pinning are the same for all), in their order; a single run: its users.
pub fn labels_by_what_varies(infos: &[&RunInfo]) -> Vec<String> {
    let parts: Vec<Vec<(&'static str, String)>> = infos.iter().map(|i| i.parts()).collect();
    let varies = |what: &str| {
        let mut values = parts.iter().map(|p| p.iter().find(|(w, _)| *w == what).map(|(_, v)| v));
        let first = values.next().flatten();
        values.any(|v| v != first)
    };
    parts
        .iter()
        .map(|p| {
            let shown: Vec<&str> = p
                .iter()
                .filter(|(what, _)| varies(what))
                .map(|(_, v)| v.as_str())
                .collect();
            match shown.is_empty() {
                true => p
                    .iter()
                    .find(|(w, _)| *w == "users")
                    .map_or(String::new(), |(_, v)| v.clone()),
                false => shown.join(" · "),
            }
        })
        .collect()
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
    /// Artifacts of the measurement found in the runs or across them ([`warnings::of_runs`]).
    pub warnings: Vec<Warning>,
    /// How draws are decided ([`DRAW_RULE`]).
    pub rule: &'static str,
}

/// Applies the draw rule ([`stats::judge`]) to `cell` against `base`.
/// A cell's median against the baseline's, with its spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Relative {
    /// `median / baseline median`.
    pub ratio: f64,
    /// Half the width the two cells' ranges give the ratio (their half-ranges relative to
    /// their medians, added in quadrature); `None` when neither cell has 2 or more samples,
    /// and 0 for the baseline against itself.
    pub spread: Option<f64>,
}

/// `cell` against `base` ([`Relative`]); the baseline against itself is exactly 1.00 with no
/// spread. `None` when the baseline's median is 0.
pub fn relative(cell: &Cell, base: &Cell) -> Option<Relative> {
    if base.median == 0.0 || !base.median.is_finite() || !cell.median.is_finite() {
        return None;
    }
    if std::ptr::eq(cell, base) {
        return Some(Relative {
            ratio: 1.0,
            spread: None,
        });
    }
    let ratio = cell.median / base.median;
    let half = |c: &Cell| {
        if c.median == 0.0 {
            0.0
        } else {
            (c.max - c.min) / 2.0 / c.median.abs()
        }
    };
    let spread = (cell.n > 1 || base.n > 1).then(|| ratio.abs() * half(cell).hypot(half(base)));
    Some(Relative { ratio, spread })
}

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
    let missing: Vec<&str> = runs
        .iter()
        .filter(|r| !opts.metric.in_run(r))
        .map(|r| r.run_id.as_str())
        .collect();
    if !missing.is_empty() {
        let common: Vec<&str> = first
            .figures
            .keys()
            .filter(|k| runs.iter().all(|r| r.figures.contains_key(*k)))
            .map(String::as_str)
            .collect();
        return Err(CompareError::MissingMetric {
            metric: opts.metric.name(),
            runs: missing.join(", "),
            available: if common.is_empty() {
                "none in common".to_string()
            } else {
                common.join(", ")
            },
            unreadable: {
                let why: Vec<&str> = runs
                    .iter()
                    .filter(|r| !opts.metric.in_run(r))
                    .flat_map(|r| r.unreadable.iter().map(String::as_str))
                    .collect();
                match why.is_empty() {
                    true => String::new(),
                    false => format!("; could not read: {}", why.join("; ")),
                }
            },
        });
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
    // One row per threads; with `--metric queries` one per query (and the geomean) per threads.
    let mut row_keys: Vec<(u32, String, Metric)> = Vec::new();
    for &t in &threads {
        if opts.metric == Metric::Queries {
            let per_query = (1..=22u8).map(|q| (format!("Q{q}"), Metric::Query(q)));
            for (label, m) in per_query.chain([("geomean".to_string(), Metric::Geomean)]) {
                if runs.iter().any(|r| r.threads == t && m.of(r).is_some()) {
                    row_keys.push((t, label, m));
                }
            }
        } else {
            row_keys.push((t, t.to_string(), opts.metric.clone()));
        }
    }
    let rows = row_keys
        .into_iter()
        .map(|(t, label, metric)| {
            let mut cells: Vec<Option<Cell>> = (0..columns.len())
                .map(|col| {
                    let members: Vec<&RunInfo> = runs
                        .iter()
                        .zip(&column_of_run)
                        .filter(|(r, &c)| c == col && r.threads == t && metric.of(r).is_some())
                        .map(|(r, _)| r)
                        .collect();
                    let values: Vec<f64> = members
                        .iter()
                        .flat_map(|r| metric.of(r).unwrap_or_default())
                        .copied()
                        .collect();
                    let s = stats::Spread::of(&values)?;
                    Some(Cell {
                        median: s.median,
                        min: s.min,
                        max: s.max,
                        n: s.n,
                        runs: members.iter().map(|r| r.run_id.clone()).collect(),
                        diff_pct: None,
                        relative: None,
                        verdict: Verdict::NoBaseline,
                    })
                })
                .collect();
            let base = cells[0].clone();
            // One column has nothing to be relative to.
            let compared = cells.len() > 1;
            for (i, cell) in cells.iter_mut().enumerate() {
                let Some(cell) = cell else { continue };
                if i == 0 {
                    cell.verdict = Verdict::Baseline;
                    cell.relative = if compared { relative(cell, cell) } else { None };
                } else if let Some(base) = &base {
                    (cell.diff_pct, cell.verdict) = judge(cell, base, opts.threshold_pct, higher);
                    cell.relative = relative(cell, base);
                }
            }
            Row {
                threads: t,
                label,
                cells,
            }
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
    let groups: Vec<String> = runs.iter().map(|r| column_label(r, GroupBy::Server, differ)).collect();
    let labels: Vec<String> = columns.iter().map(|c| c.label.clone()).collect();
    let warnings = warnings::of_runs(runs, &groups, &labels, &variables);
    Ok(Comparison {
        schema: COMPARE_SCHEMA,
        workload: first.workload.clone(),
        metric: opts.metric.clone(),
        unit: opts.metric.unit(),
        higher_is_better: higher,
        by,
        columns,
        threshold_pct: opts.threshold_pct,
        rows,
        variables,
        inside,
        notes,
        warnings,
        rule: DRAW_RULE,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::format::Format;

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
            unreadable: Vec::new(),
            client_us_per_txn: None,
            client_us_per_query: None,
            open_loop: false,
            figures: [
                ("tps", tps),
                ("qps", tps * 10.0),
                ("p95", 1000.0 / tps),
                ("p99", 2000.0 / tps),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), vec![v]))
            .collect(),
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

    #[test]
    fn runs_are_labelled_by_what_varies_between_them() {
        let runs = [
            lab_run("a", "mariadb-10.11", "flush=1", 4, 1, 100.0),
            lab_run("b", "mariadb-10.11", "flush=2", 4, 2, 100.0),
            lab_run("c", "mariadb-10.11", "flush=2", 16, 1, 100.0),
        ];
        let refs: Vec<&RunInfo> = runs.iter().collect();
        assert_eq!(
            labels_by_what_varies(&refs),
            [
                "flush=1 · 4 users · rep 1",
                "flush=2 · 4 users · rep 2",
                "flush=2 · 16 users · rep 1"
            ]
        );
        // One run, or nothing varying: its users.
        assert_eq!(labels_by_what_varies(&refs[..1]), ["4 users"]);
        // The full label is unchanged.
        assert_eq!(runs[1].label(), "mariadb-10.11 · flush=2 · 4 users · rep 2");
        assert_eq!(runs[0].label(), "mariadb-10.11 · flush=1 · 4 users");
        let plain = [run("x", 1, 10.0), run("y", 8, 10.0)];
        let refs: Vec<&RunInfo> = plain.iter().collect();
        assert_eq!(labels_by_what_varies(&refs), ["1 user", "8 users"]);
    }

    /// Two columns of two runs each (A and B at 1 and 4 threads) whose distorting variables
    /// differ: what the formats' golden tests print.
    pub(crate) fn sample() -> Comparison {
        let vars = |sort: &str, ps: &str, conns: &str| {
            Some(
                [
                    ("sort_buffer_size", sort),
                    ("performance_schema", ps),
                    ("max_connections", conns),
                    ("pid_file", sort),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            )
        };
        let mut runs = vec![
            run("a", 1, 100.0),
            run("a", 4, 400.0),
            run("b", 1, 103.0),
            run("b", 4, 300.0),
        ];
        for (i, r) in runs.iter_mut().enumerate() {
            r.variables = if i < 2 {
                vars("262144", "OFF", "151")
            } else {
                vars("4194304", "ON", "200")
            };
        }
        // Two runs per column: "a" at 1 and 4 threads. Give them distinct ids and the column
        // by server label so repetitions show.
        runs[0].run_id = "a-t1".into();
        runs[1].run_id = "a-t4".into();
        runs[2].run_id = "b-t1".into();
        runs[3].run_id = "b-t4".into();
        for (r, s) in runs.iter_mut().zip(["A", "A", "B", "B"]) {
            r.server_version = Some(s.into());
        }
        compare_runs(&runs, &CompareOptions::default()).unwrap()
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
            relative: None,
            verdict: Verdict::NoBaseline,
        }
    }

    #[test]
    fn the_relative_figure_carries_both_cells_spread() {
        let base = cell(&[100.0, 102.0, 98.0]);
        let same = relative(&base, &base).unwrap();
        assert_eq!((same.ratio, same.spread), (1.0, None));
        let r = relative(&cell(&[93.0, 94.0, 92.0]), &base).unwrap();
        assert!((r.ratio - 0.93).abs() < 1e-9);
        // 1/93 and 2/100 in quadrature, times 0.93: 0.0209.
        assert!(
            (r.spread.unwrap() - 0.93 * (1.0f64 / 93.0).hypot(0.02)).abs() < 1e-9,
            "{r:?}"
        );
        let single = relative(&cell(&[50.0]), &cell(&[100.0])).unwrap();
        assert_eq!((single.ratio, single.spread), (0.5, None));
        assert_eq!(relative(&cell(&[1.0]), &cell(&[0.0])), None);
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
    fn metrics_parse_by_name_and_say_what_they_accept() {
        for (given, m) in [
            ("tps", Metric::Tps),
            ("NOTPM", Metric::Notpm),
            ("tpmc", Metric::Tpmc),
            ("rps", Metric::Rps),
            ("q5", Metric::Query(5)),
            ("Q22", Metric::Query(22)),
            ("geomean", Metric::Geomean),
            (
                "p99:ADD_LINK",
                Metric::TypeLatency {
                    pct: 99,
                    name: "ADD_LINK".into(),
                },
            ),
        ] {
            let parsed: Metric = given.parse().unwrap();
            assert_eq!(parsed, m, "{given}");
            // The name round-trips (the catalog's metrics table uses it).
            assert_eq!(parsed.name().parse::<Metric>().unwrap(), m);
        }
        for bad in ["q23", "q0", "p99:", "nopm"] {
            let e = bad.parse::<Metric>().unwrap_err();
            assert!(e.contains(&format!("{bad:?}")) && e.contains("notpm, tpmc"), "{e}");
        }
        assert!(!Metric::Query(1).higher_is_better() && Metric::Notpm.higher_is_better());
    }

    #[test]
    fn a_metric_a_run_lacks_is_an_error_naming_what_the_runs_have() {
        let mut tpcc = run("t1", 1, 100.0);
        tpcc.figures.insert("notpm".into(), vec![600.0]);
        let plain = run("t2", 1, 90.0);
        let opts = CompareOptions {
            metric: Metric::Notpm,
            ..CompareOptions::default()
        };
        let e = compare_runs(&[tpcc.clone(), plain], &opts).unwrap_err().to_string();
        assert!(
            e.contains("--metric notpm") && e.contains("t2") && !e.contains("t1,"),
            "{e}"
        );
        assert!(e.contains("p95, p99, qps, tps"), "{e}");
        // Samples inside a run (TPC-H repetitions) make the cell's median and range.
        let mut a = run("a", 1, 1.0);
        a.figures.insert("q5".into(), vec![2.0, 1.0, 3.0]);
        let mut b = run("b", 1, 1.0);
        b.figures.insert("q5".into(), vec![1.0, 1.1, 1.2]);
        let q5 = CompareOptions {
            metric: Metric::Query(5),
            ..CompareOptions::default()
        };
        let c = compare_runs(&[a, b], &q5).unwrap();
        let base = c.rows[0].cells[0].as_ref().unwrap();
        assert_eq!((base.median, base.min, base.max, base.n), (2.0, 1.0, 3.0, 3));
        // Overlapping ranges: a draw although 45% faster.
        assert_eq!(c.rows[0].cells[1].as_ref().unwrap().verdict, Verdict::Draw);
    }

    #[test]
    fn the_queries_metric_makes_one_row_per_query_and_the_geomean() {
        let tpch = |id: &str, server: &str, q2: &[f64]| {
            let mut r = lab_run(id, server, "default", 1, 1, 1.0);
            r.figures = [("q1", vec![1.0, 1.2]), ("q2", q2.to_vec()), ("geomean", vec![1.1])]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            r
        };
        let runs = [tpch("a", "mariadb", &[2.0, 2.1]), tpch("b", "mysql", &[4.0, 4.4])];
        let opts = CompareOptions {
            metric: "queries".parse().unwrap(),
            ..CompareOptions::default()
        };
        let c = compare_runs(&runs, &opts).unwrap();
        let labels: Vec<&str> = c.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["Q1", "Q2", "geomean"]);
        let q2 = c.rows[1].cells[1].as_ref().unwrap();
        assert_eq!((q2.median, q2.n, q2.verdict), (4.2, 2, Verdict::Worse));
        assert_eq!(c.rows[0].cells[1].as_ref().unwrap().verdict, Verdict::Draw);
        let text = c.render(Format::Text);
        assert!(text.contains("query") && text.contains("geomean"), "{text}");
        // Runs without query times: the error names what they have.
        let e = compare_runs(&[run("x", 1, 1.0), run("y", 1, 2.0)], &opts)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--metric queries") && e.contains("tps"), "{e}");
    }

    #[test]
    fn each_workload_is_compared_by_its_own_figures() {
        let with = |id: &str, figures: &[(&str, f64)]| {
            let mut r = run(id, 1, 100.0);
            r.figures.extend(figures.iter().map(|(k, v)| (k.to_string(), vec![*v])));
            r
        };
        let names =
            |w: &str, runs: &[RunInfo]| -> Vec<String> { Metric::own(w, runs).iter().map(Metric::name).collect() };
        let tpcc = [
            with("a", &[("notpm", 600.0)]),
            with("b", &[("notpm", 700.0), ("tpmc", 700.0)]),
        ];
        assert_eq!(names("tpcc", &tpcc), ["notpm"], "tpmc only when every run has it");
        let spec = [with("a", &[("notpm", 600.0), ("tpmc", 600.0)])];
        assert_eq!(names("tpcc", &spec), ["notpm", "tpmc"]);
        assert_eq!(names("linkbench", &[with("l", &[("rps", 9.0)])]), ["rps", "p99"]);
        let power = [with("p", &[("q1", 1.0), ("geomean", 1.0), ("power", 50.0)])];
        assert_eq!(names("tpch-power", &power), ["queries", "power"]);
        let through = [with("t", &[("q1", 1.0), ("throughput", 70.0)])];
        assert_eq!(names("tpch-throughput", &through), ["throughput"]);
        assert_eq!(names("tpch", &through), ["throughput"], "told apart by the figures too");
        assert_eq!(names("oltp_read_write", &[run("s", 1, 1.0)]), ["tps", "p99"]);
        assert_eq!(names("pgbench-tpcb-like", &[run("g", 1, 1.0)]), ["tps", "p99"]);
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
