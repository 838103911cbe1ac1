//! `dbperf report RUN|EXPERIMENT|RUNS... [--html FILE] [--format text|json|csv|markdown]`: the
//! flags. What was named (a run directory, a run id, a lab experiment, or several runs) is
//! found and reported by [`dbperf_report::publish`], an experiment's finished points handed in
//! by [`dbperf_lab::finished`]; the page is written and the rest printed here ([`emit`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use dbperf_report::format::Format;
use dbperf_report::publish::{self, Options, Published, Subject};

/// `dbperf report` arguments.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory, a run id under --results-dir, an experiment name (as given to `lab
    /// run`) or its directory (RESULTS_DIR/lab/NAME), a directory of run directories, or several
    /// runs to report together.
    #[arg(required = true, value_name = "RUN|EXPERIMENT")]
    pub targets: Vec<String>,
    /// Also write a self-contained HTML report (interactive charts, plotly.js inside the file;
    /// works offline) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Format of what is printed: a run's summary and analysis, or an experiment's tables.
    /// For one run, `csv` prints its intervals and `json` its summary with the analysis.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// The window of a run's explanation (average and CV of the interval figure): the last
    /// this long of the measured phase (`900`, `15m`); default: its second half.
    #[arg(long, value_name = "DURATION", value_parser = dbperf_core::bounds::secs_flag)]
    pub last: Option<f64>,
    /// Directory holding the run directories and `lab/`.
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

/// Runs `dbperf report`.
pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let subject = Subject::resolve(&args.targets, &args.results_dir, |name| {
        // An experiment by its lab directory (`dbperf-results/lab/NAME`), or by name.
        match dbperf_lab::finished::run_set_at(Path::new(name))? {
            Some(set) => Ok(Some(set)),
            None => dbperf_lab::finished::run_set(&args.results_dir, name),
        }
    })?;
    // An experiment reads as `lab report` prints it (that command is its alias with more flags).
    let experiment = matches!(&subject, Subject::Runs(set) if set.order.is_some());
    let opts = Options {
        html: args.html.is_some(),
        last_s: args.last,
        ..if experiment {
            Options::experiment(args.format)
        } else {
            Options::new(args.format)
        }
    };
    emit(publish::report(&subject, &opts)?, args.html.as_deref())
}

/// Writes the HTML page to `html` first (what is printed may go to a pager or `head` that
/// closes early), then says what was skipped, then prints the report.
pub fn emit(out: Published, html: Option<&Path>) -> Result<ExitCode> {
    if let (Some(path), Some(page)) = (html, &out.html) {
        dbperf_core::nofollow::write_atomic(path, page.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("{}", Published::wrote(page, path));
    }
    for w in &out.warnings {
        eprintln!("warning: {w}");
    }
    print!("{}", out.stdout);
    Ok(ExitCode::SUCCESS)
}
