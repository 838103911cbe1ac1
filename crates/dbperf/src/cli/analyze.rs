//! `dbperf analyze RUN`: the flags; the run (a path, or a run id under --results-dir) is
//! analysed and explained by [`dbperf_report::publish::analysis`] (the stalls and the stability
//! verdict of [`dbperf_report::analysis::analyze`], then the run's explanation), and printed.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use dbperf_report::analysis::analyze::AnalyzeOptions;
use dbperf_report::format::Format;
use dbperf_report::publish;

/// Stalls in a finished run and what explains them, from intervals.jsonl and telemetry.jsonl.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The run: a run directory, or a run id under --results-dir.
    pub run: String,
    /// Output format: lines for a person, or the whole analysis as JSON.
    #[arg(long, default_value = "text", value_parser = Format::only(&[Format::Text, Format::Json]))]
    pub format: Format,
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

/// Runs `dbperf analyze`.
pub fn run(args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = publish::run_dir(&args.run, &args.results_dir) else {
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
    super::report::emit(publish::analysis(&dir, &opts, args.last, args.format)?, None)
}
