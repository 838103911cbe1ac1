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
        /// Override the file's `order`.
        #[arg(long, value_enum)]
        order: Option<Order>,
    },
    /// Run an experiment; rerun the same command to resume after an interruption.
    Run {
        /// The experiment file (TOML).
        file: PathBuf,
        /// Override the file's `order` (`shuffled` spreads drift over the whole experiment).
        #[arg(long, value_enum)]
        order: Option<Order>,
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

fn load(file: &std::path::Path, order: Option<Order>) -> Result<Plan> {
    let mut e = Experiment::load(file)?;
    if let Some(o) = order {
        e.order = o;
    }
    Ok(Plan::new(e))
}

/// Runs a lab command.
pub fn run(args: LabArgs) -> Result<ExitCode> {
    match args.command {
        LabCommand::Plan { file, order } => {
            print!("{}", load(&file, order)?.render());
            Ok(ExitCode::SUCCESS)
        }
        LabCommand::Run {
            file,
            order,
            results_dir,
            restart,
            reprepare,
        } => {
            let plan = load(&file, order)?;
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
