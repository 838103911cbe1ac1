//! `dbperf lab plan|run|tune FILE` and `dbperf lab report NAME`: the flags of experiments from a
//! TOML file (see [`dbperf_lab`]) and the dispatch. An experiment's published tables are
//! [`dbperf_report::publish`]'s, the pipeline `dbperf report` takes too (each workload by its own
//! figures, each point's explanation, TPC-H points as per-query tables relative to the baseline
//! server), from the finished points [`dbperf_lab::finished`] hands in.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use dbperf_lab::plan::Totals;
use dbperf_lab::run::{run as run_lab, LabOptions, LabOutcome};
use dbperf_lab::{Experiment, Order, Plan};
use dbperf_report::compare::{GroupBy, Metric, DEFAULT_THRESHOLD_PCT};
use dbperf_report::format::Format;
use dbperf_report::publish::{self, Options, Subject};

/// `dbperf lab ...`
#[derive(Debug, Args)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

/// Lab commands.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Print the expanded plan and its estimated time without running anything.
    Plan {
        /// The experiment file (TOML).
        file: PathBuf,
        #[command(flatten)]
        shape: Shape,
        /// Also list every run's id, in the order they would run.
        #[arg(long)]
        points: bool,
    },
    /// Print the published tables of an experiment: users x server (or variant) with the
    /// difference to the baseline, draws marked, and apples-to-apples warnings.
    Report(ReportArgs),
    /// Run an experiment; rerun the same command to resume after an interruption.
    Run {
        /// The experiment file (TOML).
        file: PathBuf,
        #[command(flatten)]
        shape: Shape,
        /// Root of the run directories; the lab's own files go to RESULTS_DIR/lab/NAME/.
        #[arg(long, default_value = "dbperf-results")]
        results_dir: PathBuf,
        /// Forget earlier progress and run every point again.
        #[arg(long)]
        restart: bool,
        /// Prepare the data sets again even when prepared copies exist.
        #[arg(long)]
        reprepare: bool,
    },
    /// Search the settings of a file's [search] section: trial after trial (each a lab run
    /// with its own server start), the best measured again, then confirmed against the
    /// defaults; prints the winner as a ready --set line. Rerun the same command to resume.
    Tune {
        /// The experiment file (TOML) with a [search] section.
        file: PathBuf,
        /// How trials are chosen: model (Bayesian optimisation), or the plain random or grid
        /// searches to compare it with [default: model, or the strategy of the search being resumed].
        #[arg(long, value_enum)]
        strategy: Option<dbperf_lab::tuner::Strategy>,
        /// A smoke test of the file: 2 s runs, at most 2,000 rows per table; named NAME-quick.
        #[arg(long)]
        quick: bool,
        /// Root of the run directories; the search's files go to RESULTS_DIR/lab/NAME/.
        #[arg(long, default_value = "dbperf-results")]
        results_dir: PathBuf,
        /// Forget the earlier search of this file and start again (its runs are kept).
        #[arg(long)]
        restart: bool,
        /// Prepare the data set again even when a prepared copy exists.
        #[arg(long)]
        reprepare: bool,
    },
}

/// `dbperf lab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The experiment's name (its `name`, or the file's stem; `-quick` for --quick runs).
    #[arg(value_parser = dbperf_lab::parse_experiment_name)]
    pub experiment: String,
    /// Columns: server, variant, pinning or run [default: whichever differs].
    #[arg(long, value_enum)]
    pub by: Option<GroupBy>,
    /// Number in the cells: tps, qps, p95, p99, p99:TYPE, rps, notpm, tpmc, q1..q22, geomean,
    /// power, throughput, queries (see `dbperf compare --help`) [default: each workload's
    /// own: notpm (and tpmc) for TPC-C, rps and p99 for LinkBench, tps and p99 otherwise; with
    /// --format csv/json/markdown only the first].
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<Metric>,
    /// Leave out the table of each point's explanation (checkpoint age, dirty pages, waits,
    /// flushes, stalls from its telemetry).
    #[arg(long)]
    pub no_explain: bool,
    /// Baseline column [default: the first].
    #[arg(long, value_name = "LABEL")]
    pub baseline: Option<String>,
    /// Without repetitions, differences up to this many percent are draws.
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_THRESHOLD_PCT)]
    pub threshold: f64,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Directory holding the run directories (as given to `lab run`).
    #[arg(long, default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

/// Prints one comparison per workload of an experiment, from the runs its state lists as done
/// (so runs cut short by an interruption, or superseded by `--restart`, are left out).
fn report(a: ReportArgs) -> Result<ExitCode> {
    let set = match dbperf_lab::finished::run_set(&a.results_dir, &a.experiment)? {
        Some(set) if !set.runs.is_empty() => set,
        _ => anyhow::bail!(
            "experiment {:?} has no finished runs under {}: check the name (`ls {}/lab`) and --results-dir",
            a.experiment,
            a.results_dir.display(),
            a.results_dir.display()
        ),
    };
    let opts = Options {
        metric: a.metric,
        by: a.by,
        baseline: a.baseline,
        threshold_pct: a.threshold,
        explanations: !a.no_explain,
        ..Options::experiment(a.format)
    };
    super::report::emit(publish::report(&Subject::Runs(set), &opts)?, None)
}

/// Options that change which points a plan has.
#[derive(Debug, Args)]
pub struct Shape {
    /// Override the file's `order` (`shuffled` spreads drift over the whole experiment).
    #[arg(long, value_enum)]
    order: Option<Order>,
    /// A smoke test of the file: 1 repetition, 2 s runs, the first two user counts, at most
    /// 2,000 rows per table; named NAME-quick so it never mixes with the real runs.
    #[arg(long)]
    quick: bool,
    /// Only the points whose id contains this text (repeatable; ids look like
    /// `SERVER/VARIANT/WORKLOAD/tUSERS/rREP`, as `lab plan` shows them).
    #[arg(long, value_name = "TEXT")]
    only: Vec<String>,
}

/// Plans of more runs, or more server starts, than these are summed up by `lab plan` without
/// being expanded (unless `--points` or `--only` asks for them).
const LIST_RUNS: u64 = 10_000;
const LIST_STARTS: u64 = 500;

/// The experiment of `file`, shaped by the flags.
fn experiment(file: &std::path::Path, shape: &Shape) -> Result<Experiment> {
    let mut e = Experiment::load(file)?;
    if let Some(o) = shape.order {
        e.order = o;
    }
    if shape.quick {
        e = e.quick();
    }
    Ok(e)
}

/// The plan of `e` (read from `file`), with only the points `--only` keeps.
fn plan(e: Experiment, file: &std::path::Path, shape: &Shape) -> Result<Plan> {
    let mut plan = Plan::new(e);
    plan.retain_points(&shape.only);
    if plan.points() == 0 {
        anyhow::bail!(
            "no point of {} matches --only {:?}; `dbperf lab plan {}` lists them",
            file.display(),
            shape.only,
            file.display()
        );
    }
    Ok(plan)
}

/// Runs a lab command.
pub fn run(args: LabArgs) -> Result<ExitCode> {
    match args.command {
        LabCommand::Plan { file, shape, points } => {
            let e = experiment(&file, &shape)?;
            let home = dbperf_server::SandboxHome::from_env()?;
            let notes = dbperf_lab::run::check_servers(&e, &home, false)?;
            let totals = Totals::of(&e);
            if (totals.runs > LIST_RUNS || totals.starts > LIST_STARTS) && !points && shape.only.is_empty() {
                // Totals only: listing the server starts one by one would bury them.
                print!("{}", totals.render(&e));
                println!(
                    "\n  ({} runs in {} server starts are too many to list: --only TEXT narrows the plan, --points lists every run)",
                    totals.runs, totals.starts
                );
                for n in notes {
                    println!("note: {n}");
                }
                return Ok(ExitCode::SUCCESS);
            }
            let plan = plan(e, &file, &shape)?;
            print!("{}", plan.render());
            for n in notes {
                println!("note: {n}");
            }
            if points {
                println!();
                for (i, p) in plan.groups.iter().flat_map(|g| &g.points).enumerate() {
                    println!("{:>5}  {}", i + 1, p.id);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Report(a) => report(a),
        LabCommand::Tune {
            file,
            strategy,
            quick,
            results_dir,
            restart,
            reprepare,
        } => {
            let mut e = Experiment::load(&file)?;
            if quick {
                e = e.quick();
            }
            if e.search.is_none() {
                anyhow::bail!(
                    "{} has no [search] section, so there is nothing to tune: `dbperf lab run {}` runs it as an \
                     experiment; see `dbperf lab tune --help` and examples/tune-dirty-pages.toml for a search",
                    file.display(),
                    file.display()
                );
            }
            let opts = dbperf_lab::tune::TuneOptions {
                lab: LabOptions {
                    results_dir,
                    restart,
                    reprepare,
                },
                strategy,
            };
            match dbperf_lab::tune::tune(&e, &opts)? {
                dbperf_lab::tune::TuneOutcome::Done { .. } => Ok(ExitCode::SUCCESS),
                dbperf_lab::tune::TuneOutcome::Interrupted => {
                    eprintln!(
                        "Interrupted; finished trials are kept in {}/lab/{}/tune.json. Run the same command again \
                         to resume.",
                        opts.lab.results_dir.display(),
                        e.name
                    );
                    Ok(ExitCode::from(dbperf_core::exit::INTERRUPTED))
                }
            }
        }
        LabCommand::Run {
            file,
            shape,
            results_dir,
            restart,
            reprepare,
        } => {
            let e = experiment(&file, &shape)?;
            if e.search.is_some() {
                anyhow::bail!(
                    "{} has a [search]: its trials are chosen as the search goes, so `lab run` cannot run \
                     them; `dbperf lab tune {}` runs the search (`dbperf lab plan {}` shows it)",
                    file.display(),
                    file.display(),
                    file.display()
                );
            }
            let plan = plan(e, &file, &shape)?;
            let opts = LabOptions {
                results_dir,
                restart,
                reprepare,
            };
            let name = plan.experiment.name.clone();
            match run_lab(&plan, &opts)? {
                LabOutcome::Complete { ran, skipped } => {
                    println!("Experiment {name} complete: {ran} run(s) now, {skipped} from before.");
                    Ok(ExitCode::SUCCESS)
                }
                LabOutcome::Interrupted { ran } => {
                    eprintln!(
                        "Interrupted after {ran} run(s) in this session; finished runs are kept. \
                         Run the same command again to resume."
                    );
                    Ok(ExitCode::from(dbperf_core::exit::INTERRUPTED))
                }
                LabOutcome::Failed { ran, failed } => {
                    eprintln!(
                        "{failed} run(s) failed ({ran} succeeded); the reasons are in {}/lab/{name}/state.json. \
                         Rerun the same command to retry them.",
                        opts.results_dir.display()
                    );
                    Ok(ExitCode::FAILURE)
                }
            }
        }
    }
}
