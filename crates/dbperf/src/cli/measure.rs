//! The measured run every workload shares: run directory and manifest, the catalog row
//! written before and after, Ctrl-C, `intervals.hlog`/`intervals.jsonl` and live lines
//! through the [`Recorder`], telemetry, the engine's run, `summary.json`, and the exit code.
//! A workload's command (`sysbench.rs`, `tpcc.rs`) validates its arguments, builds its
//! [`Workload`], calls [`measure`], prints its own final report and ends with [`finish`].
//!
//! Once the run has started, a file that cannot be written (a full results disk) does not end
//! it: what was measured is still summarised and printed, each file's loss is kept in
//! [`Measured::losses`], and [`finish`] warns with the paths and bytes and exits with
//! [`super::EXIT_RESULTS_INCOMPLETE`].

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
use super::results::RunDirState;
use crate::driver::any::AnySession;
use crate::driver::mysql::IgnoreErrors;
use crate::driver::target::Scheme;
use crate::driver::{Session, Target};
use crate::report::metrics::{LiveMetrics, MetricsServer};
use crate::results::{
    client_usage, AppendFile, Manifest, ResultsError, RunDir, ServerFacts, Summary, WorkloadInfo, WriteLoss,
};
use crate::telemetry::sampler::{Telemetry, TelemetryConfig};

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
    /// What could not be written (a full disk), reported at the end by [`finish`].
    pub losses: Vec<WriteLoss>,
}

impl Measured {
    /// Writes `value` as JSON to `name` in the run directory; a failure is kept as a loss.
    pub fn write_json<T: serde::Serialize + ?Sized>(&mut self, name: &str, value: &T) {
        self.losses.extend(write_json_or_loss(&self.dir, name, value));
    }

    /// Writes `bytes` to `path` (in the run directory or not); a failure removes what part
    /// was written and is kept as a loss.
    pub fn write_file(&mut self, path: &Path, bytes: &[u8]) {
        if let Err(e) = std::fs::write(path, bytes) {
            let _ = std::fs::remove_file(path);
            self.losses.push(WriteLoss {
                path: path.to_path_buf(),
                bytes: bytes.len() as u64,
                error: e.to_string(),
            });
        }
    }
}

/// Writes `value` as pretty JSON to `name` in `dir` atomically; what could not be written.
fn write_json_or_loss<T: serde::Serialize + ?Sized>(dir: &RunDir, name: &str, value: &T) -> Option<WriteLoss> {
    let path = dir.path().join(name);
    let mut bytes = match serde_json::to_vec_pretty(value) {
        Ok(b) => b,
        Err(e) => {
            return Some(WriteLoss {
                path,
                bytes: 0,
                error: e.to_string(),
            })
        }
    };
    bytes.push(b'\n');
    let error = match dir.write_atomic(name, &bytes).err()? {
        ResultsError::Write { source, .. } => source.to_string(),
        e => e.to_string(),
    };
    Some(WriteLoss {
        path,
        bytes: bytes.len() as u64,
        error,
    })
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
    super::results::record_in_catalog(spec.results_dir, &dir, RunDirState::Started);
    println!("{}", (spec.banner)(dir.path()));

    let stop = StopSignal::new();
    install_signal_handler(stop.clone());
    let mut hlog_file = AppendFile::open(&dir.file("intervals.hlog")?)?;
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
    let (telemetry_loss, telemetry_crash) = recorder.telemetry.take().map(Telemetry::stop).unwrap_or_default();
    if let Some(e) = telemetry_crash {
        recorder.error.get_or_insert(e);
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
    let mut losses: Vec<WriteLoss> = [recorder.jsonl.loss(), telemetry_loss].into_iter().flatten().collect();
    let recorder_error = recorder.error.take();
    drop(recorder);
    losses.extend(hlog_file.loss());
    losses.extend(write_json_or_loss(&dir, "summary.json", &summary));
    let state = if losses.is_empty() {
        RunDirState::Complete
    } else {
        RunDirState::Incomplete
    };
    super::results::record_in_catalog(spec.results_dir, &dir, state);
    Ok(Measured {
        outcome,
        summary,
        dir,
        recorder_error,
        losses,
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
/// directory, and the exit code for how the run stopped (a fatal error first, then results
/// that could not all be written, then an interrupt).
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
    if let Some(line) = unreachable_line(&m.outcome) {
        println!("{line}");
    }
    println!("Run directory: {}", m.dir.path().display());
    let incomplete = !m.losses.is_empty();
    if incomplete {
        let bytes: u64 = m.losses.iter().map(|l| l.bytes).sum();
        eprintln!(
            "warning: results incomplete: {bytes} bytes could not be written (the report above is whole; \
             the files below lack what is missing):"
        );
        for loss in &m.losses {
            eprintln!("warning:   {loss}");
        }
    }
    let incomplete_or = |code: u8| {
        ExitCode::from(if incomplete {
            super::EXIT_RESULTS_INCOMPLETE
        } else {
            code
        })
    };
    match m.outcome.reason {
        StopReason::Completed if m.outcome.unreachable_at_end => {
            eprintln!(
                "error: results incomplete: the server was still unreachable when the run ended \
                 (is it running? `dbperf server list` shows the sandboxes)"
            );
            ExitCode::from(super::EXIT_RESULTS_INCOMPLETE)
        }
        StopReason::Completed => incomplete_or(0),
        StopReason::Crashed => {
            let what = m.outcome.crash.as_deref().unwrap_or("a panic");
            eprintln!(
                "error: the run stopped because dbperf crashed: {what}\n\
                 This is a bug in dbperf; please report it with the command line. The summary \
                 covers the {:.1} s measured before it.",
                m.outcome.measured_s
            );
            ExitCode::from(super::EXIT_CRASHED)
        }
        StopReason::Interrupted => {
            eprintln!(
                "Interrupted: the summary covers the {:.1} s measured before the stop.",
                m.outcome.measured_s
            );
            incomplete_or(130)
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

/// The final report's line on how long the server was unreachable, if it was.
fn unreachable_line(out: &RunOutcome) -> Option<String> {
    (out.unreachable_s > 0.0).then(|| {
        format!(
            "Server unreachable: {:.1} s of the {:.1} s measured (intervals with no completed \
             transaction while connections were reconnecting){}.",
            out.unreachable_s,
            out.measured_s,
            if out.unreachable_at_end {
                "; it had not come back when the run ended"
            } else {
                ""
            }
        )
    })
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

/// Copies the summary to `--summary-json`, if given; a failure is kept as a loss of `m`.
pub fn copy_summary(path: Option<&PathBuf>, m: &mut Measured) {
    if let Some(path) = path {
        match serde_json::to_vec_pretty(&m.summary) {
            Ok(bytes) => m.write_file(path, &bytes),
            Err(e) => m.losses.push(WriteLoss {
                path: path.clone(),
                bytes: 0,
                error: e.to_string(),
            }),
        }
    }
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
