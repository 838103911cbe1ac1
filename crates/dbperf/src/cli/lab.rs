//! `dbperf lab plan|run FILE`: experiments from a TOML file (see [`crate::lab`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::lab::run::{run as run_lab, LabOptions, LabOutcome};
use crate::lab::{Experiment, Order, Plan};

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

fn load(file: &std::path::Path, shape: &Shape) -> Result<Plan> {
    let mut e = Experiment::load(file)?;
    if let Some(o) = shape.order {
        e.order = o;
    }
    if shape.quick {
        e = e.quick();
    }
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
            let plan = load(&file, &shape)?;
            print!("{}", plan.render());
            if points {
                println!();
                for (i, p) in plan.groups.iter().flat_map(|g| &g.points).enumerate() {
                    println!("{:>5}  {}", i + 1, p.id);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Run {
            file,
            shape,
            results_dir,
            restart,
            reprepare,
        } => {
            let plan = load(&file, &shape)?;
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
                    Ok(ExitCode::from(130))
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
