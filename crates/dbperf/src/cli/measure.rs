//! The measured run every workload shares: run directory and manifest, the catalog row
//! written before and after, Ctrl-C, `intervals.hlog`/`intervals.jsonl` and live lines
//! through the [`Recorder`], telemetry, the engine's run, `summary.json`, and the exit code.
//! A workload's command (`sysbench.rs`, `tpcc.rs`) validates its arguments, builds its
//! [`Workload`], calls [`measure`], prints its own final report and ends with [`finish`].

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, Context, Result};
use dbperf_engine::{RunConfig, RunOutcome, StopReason, StopSignal, Workload};
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::record::{self, LiveLine, Recorder, SummaryContext};
use crate::driver::any::AnySession;
use crate::driver::mysql::IgnoreErrors;
use crate::driver::target::Scheme;
use crate::driver::{Session, Target};
use crate::report::metrics::{LiveMetrics, MetricsServer};
use crate::results::{client_usage, Manifest, RunDir, ServerFacts, Summary, WorkloadInfo};
use crate::telemetry::sampler::TelemetryConfig;

/// What a measured run needs besides the workload.
pub struct MeasureSpec<'a> {
    /// Results root (`--results-dir`).
    pub results_dir: &'a Path,
    /// Workload name: run directory prefix, manifest and summary `workload`.
    pub name: &'a str,
    /// The workload's options, for the manifest.
    pub options: serde_json::Map<String, serde_json::Value>,
    /// Seeds, for the manifest.
    pub seeds: serde_json::Value,
    /// The server.
    pub target: &'a Target,
    /// Its version and variables.
    pub facts: ServerFacts,
    /// Engine settings.
    pub run: &'a RunConfig,
    /// Print a live line every this many intervals (0 = never).
    pub print_every: u32,
    /// Telemetry, unless `--no-telemetry`.
    pub telemetry: Option<TelemetryConfig>,
    /// `rand_type` in the summary.
    pub rand_type: &'a str,
    /// Connections, for the summary.
    pub threads: u32,
    /// The first line printed, given the run directory.
    pub banner: &'a dyn Fn(&Path) -> String,
    /// The live line, when the workload has its own.
    pub live: LiveLine,
    /// Serve live metrics for Prometheus here (`--metrics-addr`).
    pub metrics_addr: Option<&'a str>,
}

/// What [`measure`] hands back.
pub struct Measured {
    /// The engine's totals.
    pub outcome: RunOutcome,
    /// `summary.json` as written.
    pub summary: Summary,
    /// The run directory.
    pub dir: RunDir,
    /// A write error of the recorder, reported at the end.
    pub recorder_error: Option<String>,
}

/// Runs `workload` as `spec` says, writing the run directory as it goes.
pub fn measure<W: Workload>(spec: MeasureSpec<'_>, workload: Arc<W>, argv: &[String]) -> Result<Measured> {
    let ops = workload.ops();
    let dir = RunDir::create(spec.results_dir, spec.name)?;
    let mut manifest = Manifest::new(
        argv,
        WorkloadInfo {
            name: spec.name.into(),
            options: spec.options,
        },
        &spec.target.redacted(),
    );
    manifest.seeds = spec.seeds;
    if let Ok(point) = std::env::var("DBPERF_LAB_POINT") {
        manifest.lab = Some(
            serde_json::from_str(&point)
                .context("DBPERF_LAB_POINT is not a lab point (set only by `dbperf lab run`)")?,
        );
    }
    let server_version = spec.facts.version.clone();
    manifest.server = Some(spec.facts);
    dir.write_json("manifest.json", &manifest)?;
    // Recorded now as incomplete, so a run that is killed still shows up; again at the end.
    super::results::record_in_catalog(spec.results_dir, &dir);
    println!("{}", (spec.banner)(dir.path()));

    let stop = StopSignal::new();
    install_signal_handler(stop.clone());
    let mut hlog_file = File::create(dir.file("intervals.hlog")?)?;
    let mut serializer = V2DeflateSerializer::new();
    let started = SystemTime::now();
    let hlog = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "dbperf {} {} latency in microseconds",
            env!("CARGO_PKG_VERSION"),
            spec.name
        ))
        .with_start_time(started)
        .with_base_time(started)
        .begin_log_with(&mut hlog_file, &mut serializer)
        .map_err(|e| anyhow!("writing intervals.hlog: {e:?}"))?;
    let metrics = spec
        .metrics_addr
        .map(|addr| {
            let m = LiveMetrics::new(dir.run_id(), spec.name, &server_version);
            MetricsServer::start(addr, Arc::clone(&m)).map(|server| (m, server))
        })
        .transpose()?;
    if let Some((_, server)) = &metrics {
        println!("Metrics: http://{}/metrics", server.addr());
    }
    let progress = progress_bar(spec.run);
    let mut recorder = Recorder {
        jsonl: dir.interval_writer()?,
        hlog,
        ops: ops.clone(),
        print_every: spec.print_every,
        open_loop: spec.run.arrival.rate().is_some(),
        cpu_at_start: client_usage(),
        error: None,
        telemetry_cfg: spec
            .telemetry
            .map(|c| (c, dir.path().join(crate::results::TELEMETRY_FILE))),
        telemetry: None,
        live: spec.live,
        metrics: metrics.as_ref().map(|(m, _)| Arc::clone(m)),
        progress,
    };
    let outcome = dbperf_engine::run(spec.run, workload, stop, &mut recorder);
    if let Some(p) = recorder.progress.take() {
        p.finish_and_clear();
    }
    if let Some(t) = recorder.telemetry.take() {
        t.stop();
    }
    let outcome = outcome?;
    let cx = SummaryContext {
        workload: spec.name,
        run_id: dir.run_id(),
        threads: spec.threads,
        arrival: spec.run.arrival,
        rand_type: spec.rand_type,
        server_version: Some(server_version),
        cpu_at_start: recorder.cpu_at_start,
    };
    let summary = record::summary(&outcome, &ops, &cx);
    dir.write_json("summary.json", &summary)?;
    super::results::record_in_catalog(spec.results_dir, &dir);
    Ok(Measured {
        outcome,
        summary,
        dir,
        recorder_error: recorder.error,
    })
}

/// A bar of the run's planned seconds (warmup included) with the ETA, drawn on stderr when it
/// is a terminal; `None` for a run without a time limit.
fn progress_bar(run: &RunConfig) -> Option<ProgressBar> {
    let total = run.duration?.as_secs() + run.warmup.as_secs();
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{elapsed_precise} [{wide_bar}] {pos}/{len} s, ETA {eta}") {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

/// The end of every measured run's output: write problems, abandoned transactions, the run
/// directory, and the exit code for how the run stopped.
pub fn finish(m: &Measured) -> ExitCode {
    if let Some(e) = &m.recorder_error {
        eprintln!("warning: {e}");
    }
    if m.outcome.abandoned > 0 {
        println!(
            "{} transaction(s) were still running at the end and were abandoned.",
            m.outcome.abandoned
        );
    }
    println!("Run directory: {}", m.dir.path().display());
    match m.outcome.reason {
        StopReason::Completed => ExitCode::SUCCESS,
        StopReason::Interrupted => {
            eprintln!(
                "Interrupted: the summary covers the {:.1} s measured before the stop.",
                m.outcome.measured_s
            );
            ExitCode::from(130)
        }
        StopReason::Fatal => {
            let e = m.outcome.fatal.as_ref().map(|e| e.to_string()).unwrap_or_default();
            eprintln!("error: the run stopped on a fatal error: {e}");
            if e.contains("(error ") {
                eprintln!("hint: add the error number to --mysql-ignore-errors to retry it instead");
            }
            ExitCode::from(3)
        }
    }
}

/// Server version and all global variables (PostgreSQL: `pg_settings`), for the manifest.
pub async fn server_facts<S: Session>(s: &mut S, scheme: Scheme) -> Result<ServerFacts> {
    let sql = match scheme {
        Scheme::Mysql => "SHOW GLOBAL VARIABLES",
        Scheme::Postgres => "SELECT name, setting FROM pg_settings",
    };
    let rows = s.query_rows(sql).await.context("reading server variables")?;
    let variables = rows
        .into_iter()
        .filter_map(|r| match (r.first(), r.get(1)) {
            (Some(Some(k)), Some(v)) => Some((k.clone(), v.clone().unwrap_or_default())),
            _ => None,
        })
        .collect();
    let version = s.server_version();
    Ok(ServerFacts {
        version: match scheme {
            Scheme::Postgres if !version.contains("PostgreSQL") => format!("PostgreSQL {version}"),
            _ => version,
        },
        variables,
    })
}

/// Connects an administrative session (no errors retried).
pub async fn admin_session(target: &Target) -> Result<AnySession> {
    Ok(AnySession::connect(target, IgnoreErrors::Codes(Default::default())).await?)
}

/// Where `--summary-json` copies the summary, if given.
pub fn copy_summary(path: Option<&PathBuf>, summary: &Summary) -> Result<()> {
    if let Some(path) = path {
        std::fs::write(path, serde_json::to_vec_pretty(summary)?)
            .with_context(|| format!("writing --summary-json {}", path.display()))?;
    }
    Ok(())
}

/// A telemetry configuration from the common flags.
/// Where a measured run's results go and what it samples: the options every run command
/// (tpcc, pgbench, linkbench) shares, flattened into each one's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct RunOutputArgs {
    /// Directory for run directories.
    #[arg(
        long,
        env = "DBPERF_RESULTS",
        default_value = "dbperf-results",
        help_heading = "Reporting"
    )]
    pub results_dir: PathBuf,
    /// Also write summary.json here.
    #[arg(long, help_heading = "Reporting")]
    pub summary_json: Option<PathBuf>,
    /// Serve live metrics for Prometheus at http://ADDR/metrics during the run (throughput,
    /// latency quantiles, errors, telemetry), e.g. 127.0.0.1:9187.
    #[arg(long, value_name = "ADDR", help_heading = "Reporting")]
    pub metrics_addr: Option<String>,
    /// Do not sample the server, the OS and the client during the run (telemetry.jsonl).
    #[arg(long, help_heading = "Telemetry")]
    pub no_telemetry: bool,
    /// Seconds between telemetry samples (on the run's clock).
    #[arg(value_parser = crate::bounds::interval_flag, long, default_value_t = 1.0, value_name = "SECONDS", help_heading = "Telemetry")]
    pub telemetry_interval: f64,
    /// Enable the InnoDB metrics that are off by default (`log%`, `buffer_flush%`) for the run
    /// (`buffer_flush_sync_total_pages`, which tells sync flushing, is enabled regardless).
    #[arg(long, help_heading = "Telemetry")]
    pub innodb_metrics: bool,
    /// Enable the InnoDB mutex and rw-lock instruments of the Performance Schema at run start
    /// (when performance_schema is ON), so the top waits include them.
    #[arg(long, help_heading = "Telemetry")]
    pub pfs_instruments: bool,
    /// Wait events kept per telemetry sample (by time waited).
    #[arg(long, default_value_t = 5, value_name = "N", help_heading = "Telemetry")]
    pub top_waits: usize,
}

impl RunOutputArgs {
    /// The telemetry of a run against `target` (`None` with `--no-telemetry`).
    pub fn telemetry(&self, target: &Target) -> Option<TelemetryConfig> {
        telemetry_config(
            self.no_telemetry,
            self.telemetry_interval,
            target,
            crate::telemetry::server::ServerTelemetryOptions {
                innodb_metrics: self.innodb_metrics,
                pfs_instruments: self.pfs_instruments,
                top_waits: self.top_waits,
            },
        )
    }

    /// Records the telemetry settings among the manifest's workload options.
    pub fn record_options(&self, options: &mut serde_json::Map<String, serde_json::Value>) {
        options.insert(
            "telemetry_interval_s".into(),
            if self.no_telemetry {
                serde_json::Value::Null
            } else {
                self.telemetry_interval.into()
            },
        );
        options.insert("innodb_metrics".into(), self.innodb_metrics.into());
        options.insert("pfs_instruments".into(), self.pfs_instruments.into());
    }
}

pub fn telemetry_config(
    off: bool,
    interval_s: f64,
    target: &Target,
    server: crate::telemetry::server::ServerTelemetryOptions,
) -> Option<TelemetryConfig> {
    (!off).then(|| TelemetryConfig {
        period: Duration::from_secs_f64(interval_s.max(0.1)),
        target: Some(target.clone()),
        server,
    })
}

fn install_signal_handler(stop: Arc<StopSignal>) {
    on_interrupt(
        "Stopping: finishing in-flight transactions and writing the summary",
        "exiting without a summary",
        move || stop.stop(StopReason::Interrupted),
    );
}

/// Ctrl-C (SIGINT, SIGTERM) handling for a long command: the first interrupt says `stopping`
/// and calls `stop`, so what is finished is kept; a second one exits at once (status 130),
/// saying `second`. Installed rather than left to the default action, so that a command also
/// stops when its parent started it with SIGINT ignored (a background job of a script).
pub fn on_interrupt(stopping: &'static str, second: &'static str, mut stop: impl FnMut() + Send + 'static) {
    let mut hits = 0;
    let _ = ctrlc::set_handler(move || {
        hits += 1;
        if hits > 1 {
            eprintln!("\nSecond interrupt: {second}.");
            std::process::exit(130);
        }
        eprintln!("\n{stopping} (interrupt again to exit now)...");
        stop();
    });
}
