//! One run of any workload: [`RunSession`] creates the run directory, writes the manifest
//! (with the lab point, when `dbperf lab run` started the run) and records the catalog row
//! when the run starts and again when it ends; TPC-H's power and throughput tests use it as
//! it is. An engine-driven workload (sysbench, TPC-C, LinkBench, pgbench) calls [`measure`]:
//! Ctrl-C, `intervals.hlog`/`intervals.jsonl` and live lines through the [`Recorder`],
//! telemetry, the engine's run and `summary.json`; it then prints its workload's report and
//! ends with [`finish`], the exit code of every measured run.
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

use super::record::{self, Recorder, SummaryContext};
use super::Placement;
use dbperf_core::interrupt::on_interrupt;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::target::Scheme;
use dbperf_driver::{Session, Target};
use dbperf_report::metrics::{LiveMetrics, MetricsServer};
use dbperf_report::LiveLine;
use dbperf_results::manifest::{NetworkRecord, ShardRecord};
use dbperf_results::recording::{record_in_catalog, RunDirState};
use dbperf_results::{
    client_usage, AppendFile, Manifest, ResultsError, RunDir, ServerFacts, Summary, WorkloadInfo, WriteLoss,
};
use dbperf_telemetry::sampler::{Telemetry, TelemetryConfig};
use dbperf_workloads::{FinalReport, ReportPath};

/// What every run records before it starts: the manifest's contents.
pub struct SessionSpec<'a> {
    /// Results root (`--results-dir`).
    pub results_dir: &'a Path,
    /// Workload name: run directory prefix, manifest `workload.name`.
    pub name: &'a str,
    /// The whole command line, for the manifest.
    pub argv: &'a [String],
    /// The workload's options, for the manifest.
    pub options: serde_json::Map<String, serde_json::Value>,
    /// Seeds, for the manifest.
    pub seeds: serde_json::Value,
    /// The server (its URL is recorded without the password).
    pub target: &'a Target,
    /// Its version and variables.
    pub facts: ServerFacts,
    /// How the client reached the server (`None`: as the target says).
    pub network: Option<NetworkRecord>,
    /// The run's shard of a run on several clients.
    pub shard: Option<ShardRecord>,
}

/// A run directory with its manifest written and its catalog row recorded as started.
pub struct RunSession {
    dir: RunDir,
    results_dir: PathBuf,
    server_version: String,
}

impl RunSession {
    /// Creates the run directory under `spec.results_dir`, writes `manifest.json` (with the
    /// lab point from `DBPERF_LAB_POINT`, when a lab started the run) and records the run in
    /// the catalog as started, so a run that is killed still shows up.
    pub fn create(spec: SessionSpec<'_>) -> Result<RunSession> {
        let dir = RunDir::create(spec.results_dir, spec.name)?;
        let mut manifest = Manifest::new(
            spec.argv,
            WorkloadInfo {
                name: spec.name.into(),
                options: spec.options,
            },
            &spec.target.redacted(),
        );
        manifest.seeds = spec.seeds;
        manifest.network = Some(
            spec.network
                .unwrap_or_else(|| super::place::ClientPath::direct(spec.target).record),
        );
        manifest.shard = spec.shard;
        if let Ok(point) = std::env::var("DBPERF_LAB_POINT") {
            manifest.lab = Some(
                serde_json::from_str(&point)
                    .context("DBPERF_LAB_POINT is not a lab point (set only by `dbperf lab run`)")?,
            );
        }
        let server_version = spec.facts.version.clone();
        manifest.server = Some(spec.facts);
        dir.write_json("manifest.json", &manifest)?;
        record_in_catalog(spec.results_dir, &dir, RunDirState::Started);
        Ok(RunSession {
            dir,
            results_dir: spec.results_dir.to_path_buf(),
            server_version,
        })
    }

    /// The run directory.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// The server's version, as the manifest records it.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// Records the finished run in the catalog again (complete unless something was lost)
    /// and hands back its directory.
    pub fn end(self, losses: &[WriteLoss]) -> RunDir {
        let state = if losses.is_empty() {
            RunDirState::Complete
        } else {
            RunDirState::Incomplete
        };
        record_in_catalog(&self.results_dir, &self.dir, state);
        self.dir
    }
}

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
    /// Print a live line every this many reports ([`RunConfig::report_interval`]; 0 = never).
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
    /// Wait up to this long for the server to settle before measuring (`--settle`).
    pub settle: Option<Duration>,
    /// The client's path to the server and its shard ([`super::RunArgs::place`]); a network
    /// namespace lives until the run ends.
    pub place: Placement,
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
    /// The results root whose catalog recorded the run.
    pub results_dir: PathBuf,
}

impl Measured {
    /// Writes `value` as JSON to `name` in the run directory; a failure is kept as a loss.
    pub fn write_json<T: serde::Serialize + ?Sized>(&mut self, name: &str, value: &T) {
        self.losses.extend(write_json_or_loss(&self.dir, name, value));
    }

    /// Writes `bytes` to `path` (in the run directory or not); a failure removes what part
    /// was written and is kept as a loss.
    pub fn write_file(&mut self, path: &Path, bytes: &[u8]) {
        if let Err(e) = dbperf_core::nofollow::write_atomic(path, bytes) {
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
    match serde_json::to_vec_pretty(value) {
        Ok(mut bytes) => {
            bytes.push(b'\n');
            write_or_loss(dir, name, &bytes)
        }
        Err(e) => Some(WriteLoss {
            path: dir.path().join(name),
            bytes: 0,
            error: e.to_string(),
        }),
    }
}

/// Writes `bytes` to `name` in `dir` atomically; what could not be written.
fn write_or_loss(dir: &RunDir, name: &str, bytes: &[u8]) -> Option<WriteLoss> {
    let error = match dir.write_atomic(name, bytes).err()? {
        ResultsError::Write { source, .. } => source.to_string(),
        e => e.to_string(),
    };
    Some(WriteLoss {
        path: dir.path().join(name),
        bytes: bytes.len() as u64,
        error,
    })
}

/// Runs `workload` as `spec` says, writing the run directory as it goes.
pub fn measure<W: Workload>(spec: MeasureSpec<'_>, workload: Arc<W>, argv: &[String]) -> Result<Measured> {
    let mut ops = workload.ops();
    let names = workload.statement_names();
    let stop = StopSignal::new();
    install_signal_handler(stop.clone());
    // Before the run directory exists: a wait that fails or is interrupted leaves nothing
    // half made.
    if let Some(limit) = spec.settle {
        let settled = super::settle::settle(spec.target, limit, &stop)?;
        if settled.end == super::settle::SettleEnd::Stopped {
            anyhow::bail!("interrupted while waiting for the server to settle: nothing was measured");
        }
    }
    let place = spec.place;
    let session = RunSession::create(SessionSpec {
        results_dir: spec.results_dir,
        name: spec.name,
        argv,
        options: spec.options,
        seeds: spec.seeds,
        target: spec.target,
        facts: spec.facts,
        network: Some(place.path.record.clone()),
        shard: place.shard.clone(),
    })?;
    let server_version = session.server_version().to_string();
    let dir = session.dir();
    println!("{}", (spec.banner)(dir.path()));
    if place.path.record.netns.is_some() {
        println!("Network: {}", place.path.describe());
    }
    if let Some(s) = &place.shard {
        let now = dbperf_core::clock::unix_ms(SystemTime::now());
        println!(
            "Shard {}/{}: users {}..{} of {}; its measured phase starts at {} (in {:.0} s; the {} s warmup before it)",
            s.index,
            s.count,
            s.first_user,
            s.first_user + s.users,
            s.users_total,
            s.start_at,
            ((s.start_at_unix_ms - now) as f64 / 1000.0).max(0.0),
            spec.run.warmup.as_secs()
        );
    }

    let mut hlog_file = AppendFile::open(&dir.file("intervals.hlog")?)?;
    let mut serializer = V2DeflateSerializer::new();
    // The log's base time is the run's time zero: for a run with a start time (a shard), the
    // shared instant minus the warmup, so the shards' interval timestamps line up.
    let started = match spec.run.start_at {
        Some(at) => at.checked_sub(spec.run.warmup).unwrap_or(at),
        None => SystemTime::now(),
    };
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
        names: names.clone(),
        print_every: spec.print_every,
        open_loop: spec.run.arrival.rate().is_some(),
        cpu_at_start: client_usage(),
        error: None,
        telemetry_cfg: spec
            .telemetry
            .map(|c| (c, dir.path().join(dbperf_results::TELEMETRY_FILE))),
        telemetry: None,
        live: spec.live,
        metrics: metrics.as_ref().map(|(m, _)| Arc::clone(m)),
        progress,
        warmup: !spec.run.warmup.is_zero(),
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
        threads: match place.shard {
            Some(_) => spec.run.connections as u32,
            None => spec.threads,
        },
        arrival: spec.run.arrival,
        rand_type: spec.rand_type,
        server_version: Some(server_version),
        cpu_at_start: recorder.cpu_at_start,
    };
    if let Some(n) = &names {
        ops.statements.extend(n.all());
    }
    let summary = record::summary(&outcome, &ops, &cx);
    let mut losses: Vec<WriteLoss> = [recorder.jsonl.loss(), telemetry_loss].into_iter().flatten().collect();
    let recorder_error = recorder.error.take();
    drop(recorder);
    losses.extend(hlog_file.loss());
    losses.extend(write_json_or_loss(dir, "summary.json", &summary));
    let results_dir = session.results_dir.clone();
    let dir = session.end(&losses);
    Ok(Measured {
        outcome,
        summary,
        dir,
        recorder_error,
        losses,
        results_dir,
    })
}

/// The end of a measured run: the summary copied to `summary_json` (if given), the
/// workload's result files written and its final report printed, then [`finish`]'s lines and
/// exit code. What could not be written is reported, never fatal.
pub fn conclude(mut m: Measured, summary_json: Option<&PathBuf>, report: &dyn FinalReport) -> ExitCode {
    copy_summary(summary_json, &mut m);
    let (text, files) = report.final_report(&m.outcome, &m.summary);
    for file in files {
        match file.path {
            ReportPath::RunDir(name) => {
                let loss = write_or_loss(&m.dir, name, &file.bytes);
                m.losses.extend(loss);
            }
            ReportPath::Elsewhere(path) => m.write_file(&path, &file.bytes),
        }
    }
    // The catalog recorded the run before the workload's result files (tpcc.json's NOTPM,
    // linkbench.json's rps) existed: again, so their figures are indexed.
    let state = if m.losses.is_empty() {
        RunDirState::Complete
    } else {
        RunDirState::Incomplete
    };
    record_in_catalog(&m.results_dir, &m.dir, state);
    println!();
    print!("{text}");
    finish(&m)
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

fn install_signal_handler(stop: Arc<StopSignal>) {
    on_interrupt(
        "Stopping: finishing in-flight transactions and writing the summary",
        "exiting without a summary",
        move || stop.stop(StopReason::Interrupted),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_results::catalog::Catalog;

    #[test]
    fn a_session_writes_the_manifest_and_records_the_run_at_start_and_end() {
        let tmp = tempfile::tempdir().unwrap();
        let target = Target::parse("mysql://sb:S3cret@127.0.0.1:3306/sbtest").unwrap();
        let argv = vec!["dbperf".to_string(), "tpch".into(), "power".into()];
        let mut options = serde_json::Map::new();
        options.insert("scale_factor".into(), 0.01.into());
        let session = RunSession::create(SessionSpec {
            results_dir: tmp.path(),
            name: "tpch-power",
            argv: &argv,
            options,
            seeds: serde_json::json!({ "qgen": 1 }),
            target: &target,
            facts: ServerFacts {
                version: "11.4.5-MariaDB".into(),
                variables: Default::default(),
            },

            network: None,
            shard: None,
        })
        .unwrap();
        let manifest = std::fs::read_to_string(session.dir().path().join("manifest.json")).unwrap();
        assert!(
            manifest.contains("tpch-power") && manifest.contains("11.4.5-MariaDB"),
            "{manifest}"
        );
        assert!(!manifest.contains("S3cret"), "{manifest}");
        let run_id = session.dir().run_id().to_string();
        let recorded = |catalog: &Catalog| {
            let (_, rows) = catalog
                .query(&format!("SELECT workload FROM runs WHERE run_id = '{run_id}'"))
                .unwrap();
            rows
        };
        // Recorded as soon as it starts, so a run killed midway still shows up.
        assert_eq!(
            recorded(&Catalog::open(tmp.path()).unwrap()),
            vec![vec!["tpch-power".to_string()]]
        );
        let dir = session.end(&[]);
        assert_eq!(dir.run_id(), run_id);
        assert_eq!(recorded(&Catalog::open(tmp.path()).unwrap()).len(), 1);
    }
}
