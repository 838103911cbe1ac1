//! `dbperf compare`: the flags, and the runs they name (paths, or run ids and experiments via
//! the catalog, opened as `dbperf results` opens it); the comparison with its setup is
//! [`dbperf_report::publish::compare`]'s, printed here.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use super::results::open_existing;
use dbperf_report::compare::{CompareOptions, GroupBy, Metric, DEFAULT_THRESHOLD_PCT};
use dbperf_report::format::Format;
use dbperf_report::publish::{self, is_run_dir};

/// Compare runs side by side: rows = client threads, columns = servers, variants or runs.
#[derive(Debug, Args)]
#[command(after_long_help = COMPARE_HELP)]
pub struct CompareArgs {
    /// Runs: run directories, or run ids under --results-dir.
    #[arg(required_unless_present = "experiment")]
    pub runs: Vec<String>,
    /// All runs of this lab experiment (from the catalog), in addition to RUNS.
    #[arg(long)]
    pub experiment: Option<String>,
    /// Baseline column (a column label or a run id in it) [default: the first column].
    #[arg(long, value_name = "RUN|LABEL")]
    pub baseline: Option<String>,
    /// Columns: server (lab server, else server version), variant (lab variant), pinning (lab
    /// CPU pinning) or run [default: the first of server, variant, pinning that differs, else
    /// run].
    #[arg(long, value_enum)]
    pub by: Option<GroupBy>,
    /// Number in the cells, one of the runs' own figures: tps, qps, p95, p99; p95:TYPE or
    /// p99:TYPE (e.g. p99:ADD_LINK); rps (LinkBench); notpm, tpmc (TPC-C); q1..q22, geomean,
    /// power (TPC-H power); throughput (TPC-H throughput); queries (TPC-H: one row per query
    /// and the geomean).
    #[arg(long, value_name = "METRIC", default_value = "tps")]
    pub metric: Metric,
    /// Without repetitions, differences up to this many percent are draws.
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_THRESHOLD_PCT)]
    pub threshold: f64,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Directory holding the run directories and catalog.sqlite.
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

/// The rule and the warning, for `--help`.
const COMPARE_HELP: &str = "How draws are decided: a cell is the median over the samples of the runs that share it \
(one per run, or one per repetition inside a TPC-H run). A difference is called only when it is larger \
than --threshold percent of the baseline and, when both cells have 2 or more samples, their min..max \
ranges do not overlap. Anything else is a draw (~).\n\nThe output starts with a WARNING block when server variables known to distort \
results (performance_schema, sort_buffer_size, innodb_flush_log_at_trx_commit, sync_binlog, ...) \
differ between the runs, except those the experiment varies on purpose.";

/// Runs `dbperf compare`.
pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let paths = runs(&args)?;
    let opts = CompareOptions {
        by: args.by,
        metric: args.metric,
        threshold_pct: args.threshold,
        baseline: args.baseline,
    };
    print!("{}", publish::compare(&paths, &opts, args.format)?);
    Ok(ExitCode::SUCCESS)
}

/// The run directories RUNS and --experiment name, in that order.
fn runs(args: &CompareArgs) -> anyhow::Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = Vec::new();
    let needs_catalog = args.experiment.is_some() || args.runs.iter().any(|r| !is_run_dir(Path::new(r)));
    let catalog = if needs_catalog {
        Some(open_existing(&args.results_dir)?)
    } else {
        None
    };
    for given in &args.runs {
        let p = Path::new(given);
        if is_run_dir(p) {
            paths.push(p.to_path_buf());
            continue;
        }
        let catalog = catalog.as_ref().expect("opened when a run is not a directory");
        match catalog.run_path(given)? {
            Some(path) => paths.push(path),
            None => anyhow::bail!(
                "unknown run {given:?}: not a run directory (with manifest.json) and not a run id in {}; \
                 give the path of a run directory, or the --results-dir that holds it",
                catalog.path().display()
            ),
        }
    }
    if let Some(name) = &args.experiment {
        let catalog = catalog.as_ref().expect("opened for --experiment");
        let found = catalog.runs_of_experiment(name)?;
        if found.is_empty() {
            anyhow::bail!(
                "no runs of experiment {name:?} in {}: check the name (SELECT DISTINCT experiment FROM runs) and --results-dir",
                catalog.path().display()
            );
        }
        paths.extend(found);
    }
    Ok(paths)
}
