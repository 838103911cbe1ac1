//! `dbperf analyze RUN`: finds the run directory (a path, or a run id under --results-dir),
//! runs [`dbperf_report::analysis::analyze`] on it and prints the stalls and the stability verdict,
//! then the run's explanation ([`dbperf_report::analysis::explain`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use dbperf_report::analysis::analyze::{analyze, Analysis, AnalyzeOptions};
use dbperf_report::analysis::explain::{explain, ExplainOptions, Explanation};
use dbperf_report::setup::Setup;

/// Stalls in a finished run and what explains them, from intervals.jsonl and telemetry.jsonl.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The run: a run directory, or a run id under --results-dir.
    pub run: String,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: AnalyzeFormat,
    /// An interval stalls when its TPS fell by at least this fraction of the run's sustained TPS
    /// (its upper quartile of interval TPS).
    #[arg(long, value_name = "FRACTION", default_value_t = AnalyzeOptions::default().drop)]
    pub drop: f64,
    /// ... or when its p99 is above this multiple of the median p99.
    #[arg(long, value_name = "FACTOR", default_value_t = AnalyzeOptions::default().p99_factor)]
    pub p99_factor: f64,
    /// The window of the explanation's average and CV: the last this long of the measured
    /// phase (`900`, `15m`); default: its second half.
    #[arg(long, value_name = "DURATION", value_parser = dbperf_core::bounds::secs_flag)]
    pub last: Option<f64>,
    /// Directory holding the run directories (for a run id).
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

/// Output formats of `dbperf analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnalyzeFormat {
    /// Lines for a person.
    Text,
    /// The whole analysis as JSON.
    Json,
}

/// Runs `dbperf analyze`.
pub fn run(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let given = PathBuf::from(&args.run);
    let dir = if given.is_dir() {
        given
    } else if args.results_dir.join(&args.run).is_dir() {
        args.results_dir.join(&args.run)
    } else {
        anyhow::bail!(
            "run {:?} not found: give a run directory, or a run id under --results-dir ({})",
            args.run,
            args.results_dir.display()
        );
    };
    let opts = AnalyzeOptions {
        drop: args.drop,
        p99_factor: args.p99_factor,
    };
    let analysis = analyze(&dir, &opts).with_context(|| format!("analysing {}", dir.display()))?;
    // The analysis stands on its own: a run the explanation cannot read still gets it.
    let explanation = match explain(&dir, &explain_options(args.last)?) {
        Ok(e) => Some(e),
        Err(e) => {
            eprintln!("warning: no explanation of {}: {e}", dir.display());
            None
        }
    };
    let setup = dbperf_results::RunRecords::read(&dir)
        .ok()
        .map(|r| Setup::of_run(r.dir.run_id(), &r.manifest));
    match args.format {
        AnalyzeFormat::Text => {
            if let Some(s) = &setup {
                println!("{}", s.render_text());
            }
            print!("{}", analysis.render_text());
            if let Some(e) = &explanation {
                print!("\n{}", e.render_text());
            }
        }
        AnalyzeFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&AnalysisJson {
                analysis: &analysis,
                explanation: explanation.as_ref(),
                setup: setup.as_ref(),
            })?
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// `--last` as explain options (0 is refused: the window would hold nothing).
pub fn explain_options(last: Option<f64>) -> anyhow::Result<ExplainOptions> {
    if last == Some(0.0) {
        anyhow::bail!("--last 0 leaves no interval to average: give a window such as 15m, or leave it out for the second half of the run");
    }
    Ok(ExplainOptions { last_s: last })
}

/// `dbperf analyze --format json`: the analysis's fields, and the explanation beside them.
#[derive(serde::Serialize)]
struct AnalysisJson<'a> {
    #[serde(flatten)]
    analysis: &'a Analysis,
    explanation: Option<&'a Explanation>,
    setup: Option<&'a Setup>,
}
