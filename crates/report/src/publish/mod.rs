//! The one pipeline from run directories to what a person reads. Every command that reports
//! (`dbperf report`, `dbperf lab report`, `dbperf compare`, `dbperf analyze`) names its runs;
//! this reads them typed, compares each workload by its own figures ([`Metric::own`], or the
//! `--metric` given), puts the setup block to every table, adds each point's explanation and
//! the TPC-H tables, draws the HTML page when asked, and hands back the document, written in
//! the chosen format by its exporter ([`crate::export`]). The commands parse their flags and
//! print what comes back.
//!
//! | file | owns |
//! |---|---|
//! | `find.rs` | what a command named, as run directories: a run directory or a run id, several, or an experiment's finished points (a [`RunSet`] the lab hands in: this crate does not read the lab's files) |
//! | `run.rs` | one run ([`RunReport`](crate::document::RunReport)) and `dbperf analyze`'s report of it ([`AnalysisReport`](crate::document::AnalysisReport)) |
//! | `runs.rs` | several runs or an experiment ([`RunsReport`](crate::document::RunsReport)): each workload's comparisons, each point's explanation, TPC-H runs as comparisons or as DBT-3 tables |
//!
//! `dbperf report` and `lab report` differ in four ways, each an option here rather than a
//! second pipeline: which own figures get a table outside text ([`OwnFigures`]), whether each
//! point's explanation is printed ([`Options::explanations`]), how TPC-H runs are shown
//! ([`TpchTables`]), and whether an experiment's columns follow its file
//! ([`Options::file_order`]).

mod find;
mod run;
mod runs;

use std::path::{Path, PathBuf};

use dbperf_core::stats::DEFAULT_THRESHOLD_PCT;
use dbperf_results::ResultsError;

use crate::analysis::analyze::{AnalyzeError, AnalyzeOptions};
use crate::compare::{compare_runs, CompareError, CompareOptions, GroupBy, Metric};
use crate::format::{Format, Unsupported};
use crate::html::ReportError;
use crate::setup::Setup;

pub use find::{is_run_dir, run_dir, FileOrder, RunRef, RunSet, Subject};

/// Why a report could not be made. Each message names the file or the flag.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// A run directory could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The run directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: ResultsError,
    },
    /// A run directory could not be read for its HTML page.
    #[error("reading {}", path.display())]
    ReadRun {
        /// The run directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: ReportError,
    },
    /// The runs could not be compared.
    #[error(transparent)]
    Compare(#[from] CompareError),
    /// The HTML page could not be drawn.
    #[error(transparent)]
    Html(#[from] ReportError),
    /// `dbperf analyze` failed on a run.
    #[error("analysing {}", path.display())]
    Analyse {
        /// The run directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: AnalyzeError,
    },
    /// An option of the analysis or the explanation (`--last`).
    #[error(transparent)]
    Options(AnalyzeError),
    /// `--threshold` is not a percentage.
    #[error("--threshold {0} is not a percentage: give a number >= 0, e.g. 5")]
    Threshold(f64),
    /// `dbperf compare` of fewer than two runs.
    #[error("give at least two runs to compare (got {0})")]
    TooFewRuns(usize),
    /// The format has no form of what was asked for.
    #[error(transparent)]
    Format(#[from] Unsupported),
    /// An experiment that has not finished a point.
    #[error("experiment {0:?} has no finished run yet: run `dbperf lab run` first")]
    NothingFinished(String),
    /// A name that is no run and no experiment.
    #[error(
        "{given:?} is neither a run directory, nor a run id or an experiment under {results_dir}: \
         give a path, a run id (`ls {results_dir}`), or an experiment name (`ls {results_dir}/lab`), or set --results-dir"
    )]
    NotFound {
        /// What was given.
        given: String,
        /// Where it was looked for (`--results-dir`, as given).
        results_dir: String,
    },
    /// One of several names is no run.
    #[error("run {given:?} not found: give run directories or run ids under {results_dir}")]
    RunNotFound {
        /// What was given.
        given: String,
        /// Where it was looked for (`--results-dir`, as given).
        results_dir: String,
    },
    /// The lab could not say which runs an experiment finished.
    #[error(transparent)]
    Experiment(Box<dyn std::error::Error + Send + Sync>),
}

/// Which of a workload's own figures ([`Metric::own`]) get a table when no `--metric` is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnFigures {
    /// Every one, in every format (`dbperf report`).
    Every,
    /// Every one in text; in CSV, JSON and Markdown the headline figure's alone, one table
    /// per workload (`lab report`).
    HeadlineOutsideText,
}

/// How TPC-H runs are shown among several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TpchTables {
    /// By their own figures like every workload (the per-query table with the geometric mean,
    /// Power@Size, Throughput@Size); when every run is a power test, CSV and JSON give their
    /// reports, text first the DBT-3 table of the queries that timed out or failed, and the
    /// HTML page is the TPC-H one (`dbperf report`).
    Compared,
    /// An experiment's TPC-H points as the DBT-3 studies show them: one per-query table per
    /// workload and variant, the servers in the file's order (`lab report`).
    PerVariant,
}

/// How to report: the flags of the commands, with `dbperf report`'s defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// What is printed.
    pub format: Format,
    /// The figure in the cells (`--metric`); `None`: each workload's own.
    pub metric: Option<Metric>,
    /// The columns (`--by`); `None`: whichever differs.
    pub by: Option<GroupBy>,
    /// The baseline column (`--baseline`); `None`: the first.
    pub baseline: Option<String>,
    /// The draw band without repetitions, percent (`--threshold`).
    pub threshold_pct: f64,
    /// Which own figures get a table.
    pub own: OwnFigures,
    /// Each point's explanation after its workload's tables (text).
    pub explanations: bool,
    /// How TPC-H runs are shown.
    pub tpch: TpchTables,
    /// An experiment's columns in its file's order of servers, variants and pinnings, the
    /// file's first server the baseline (`lab report`), rather than in the order of the point
    /// ids, which the HTML page follows too (`dbperf report`).
    pub file_order: bool,
    /// Also draw the self-contained HTML page (`--html`).
    pub html: bool,
    /// The window of one run's explanation, seconds (`--last`; `None`: the second half).
    pub last_s: Option<f64>,
}

impl Options {
    /// `dbperf report`'s: each workload by every own figure, TPC-H runs compared, columns in
    /// the order of the runs.
    pub fn new(format: Format) -> Options {
        Options {
            format,
            metric: None,
            by: None,
            baseline: None,
            threshold_pct: DEFAULT_THRESHOLD_PCT,
            own: OwnFigures::Every,
            explanations: false,
            tpch: TpchTables::Compared,
            file_order: false,
            html: false,
            last_s: None,
        }
    }

    /// How an experiment is published (`dbperf report NAME`, `dbperf lab report NAME`): the
    /// workload's own figures (only the headline outside text), each point's explanation, TPC-H
    /// per variant, the columns in the file's order.
    pub fn experiment(format: Format) -> Options {
        Options {
            own: OwnFigures::HeadlineOutsideText,
            explanations: true,
            tpch: TpchTables::PerVariant,
            file_order: true,
            ..Options::new(format)
        }
    }
}

/// What a report hands back to print.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Published {
    /// For standard output, in the format asked for.
    pub stdout: String,
    /// The HTML page, when asked for.
    pub html: Option<String>,
    /// For standard error (records skipped because they were cut off, an explanation that
    /// could not be made).
    pub warnings: Vec<String>,
}

impl Published {
    /// `Wrote FILE (N charts, K KiB)`, said once the page is written to `path`.
    pub fn wrote(html: &str, path: &Path) -> String {
        let charts = html.matches("<div class=\"chart\"").count();
        format!("Wrote {} ({charts} charts, {} KiB)", path.display(), html.len() / 1024)
    }
}

/// The report of what `subject` names: one run's, or several runs' and an experiment's.
pub fn report(subject: &Subject, opts: &Options) -> Result<Published, PublishError> {
    match subject {
        Subject::Run(dir) if !dir.join(dbperf_results::TPCH_FILE).is_file() => run::report(dir, opts),
        // A TPC-H run is reported as its comparison by its own figures.
        Subject::Run(dir) => runs::report(&RunSet::of_dirs(String::new(), [dir.clone()]), opts),
        Subject::Runs(set) => runs::report(set, opts),
    }
}

/// `dbperf compare`: one table of `dirs` (two or more), with the setup of its columns.
pub fn compare(dirs: &[PathBuf], opts: &CompareOptions, format: Format) -> Result<String, PublishError> {
    check_threshold(opts.threshold_pct)?;
    if dirs.len() < 2 {
        return Err(PublishError::TooFewRuns(dirs.len()));
    }
    let read = runs::read(dirs.iter())?;
    let c = compare_runs(&read.infos, opts)?;
    let setup = Setup::of_comparison(&c, &read.manifests);
    Ok(format.exporter().comparison(&c, Some(&setup), true))
}

/// `dbperf analyze`: the stalls of the run in `dir` and what explains them.
pub fn analysis(
    dir: &Path,
    opts: &AnalyzeOptions,
    last_s: Option<f64>,
    format: Format,
) -> Result<Published, PublishError> {
    run::analysis(dir, opts, last_s, format)
}

fn check_threshold(pct: f64) -> Result<(), PublishError> {
    if pct >= 0.0 && pct.is_finite() {
        Ok(())
    } else {
        Err(PublishError::Threshold(pct))
    }
}

fn read_error(path: &Path) -> impl FnOnce(ResultsError) -> PublishError + '_ {
    move |source| PublishError::Read {
        path: path.to_path_buf(),
        source,
    }
}
