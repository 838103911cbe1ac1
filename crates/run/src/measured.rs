//! The one measured-run path every workload takes, the engine-driven ones (sysbench, TPC-C,
//! LinkBench, pgbench, Lua scripts) and those that measure themselves (TPC-H's power and
//! throughput tests). A workload describes its run through [`MeasuredRun`]; [`measured_run`]
//! does the rest, in this order:
//!
//! | step | what happens |
//! |---|---|
//! | server facts | version and every variable, on an administrative session; the workload's own checks ([`MeasuredRun::before`]) |
//! | engine config | the shared flags with the workload's [`RunShape`] ([`RunArgs::config`]) |
//! | options record | the shared options ([`RunArgs::record`]) and the workload's own, typed ([`RecordedOptions`]) |
//! | placement | the client's path to the server (`--client-netns`) and its shard (`--shard`, `--start-at`) |
//! | measure | the settle wait, the run directory and manifest, the banner, then the engine's run with the recorder and telemetry ([`Measurer::engine`]) or the workload's own ([`Measurer::own`]); the client implementation is dispatched here, once |
//! | conclude | `summary.json` and its copy, the workload's result files and final text, the catalog row, the exit code ([`dbperf_core::exit`]) |
//!
//! Once the run has started, a file that cannot be written (a full results disk) does not end
//! it: what was measured is still summarised and printed, each file's loss is kept, and the run
//! exits with [`dbperf_core::exit::RESULTS_INCOMPLETE`] after naming the paths and bytes lost.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{anyhow, Context, Result};
use dbperf_core::exit;
use dbperf_core::interrupt::on_interrupt;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::{IgnoreErrors, MysqlSession};
use dbperf_driver::pg::PgSession;
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::target::Family;
use dbperf_driver::wire::WireSession;
use dbperf_driver::{Session, Target};
use dbperf_engine::{Arrival, RunConfig, RunOutcome, StopReason, StopSignal, Workload};
use dbperf_report::metrics::{LiveMetrics, MetricsServer};
use dbperf_report::LiveLine;
use dbperf_results::manifest::ShardRecord;
use dbperf_results::options::{RecordedOptions, RunOptions, WorkloadOptions};
use dbperf_results::recording::{record_in_catalog, RunDirState};
use dbperf_results::{client_usage, AppendFile, ResultsError, RunDir, ServerFacts, Summary, WriteLoss};
use dbperf_telemetry::sampler::{Telemetry, TelemetryConfig};
use dbperf_workloads::{ReportFile, ReportPath};
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::args::{PlaceArgs, Placement, RunArgs, RunFlags, RunOutputArgs, RunShape};
use super::client::Client;
use super::open::{OpenRun, OpenRunSpec};
use super::place::{shard_record, ClientPath};
use super::record::{self, Recorder, SummaryContext};
use super::settle::{settle, SettleEnd};

/// A workload's measured run, as [`measured_run`] carries it out. Each measuring command's plan
/// implements it (`dbperf-commands`); every method but [`MeasuredRun::measure`] describes, the
/// run layer does.
pub trait MeasuredRun {
    /// The run's name: the run directory's prefix, `workload` in the manifest and the summary.
    fn name(&self) -> String;

    /// Before anything is configured, on an administrative session to the server: checks that
    /// the data the run needs is there and reads what the run takes from it (TPC-C's C_LAST of
    /// the load, LinkBench's graph, TPC-H's scale factor).
    fn before(&mut self, _admin: &mut AnySession) -> impl Future<Output = Result<()>> {
        async { Ok(()) }
    }

    /// How it is driven: by the engine ([`Drive::Engine`], its connections and events), or by the
    /// workload itself ([`Drive::Own`]: TPC-H's streams).
    fn drive(&self) -> Drive;

    /// What the workload sets in the engine's configuration beyond the shared flags (pgbench's
    /// `--max-tries`, `-C`, `-l`). Default: nothing.
    fn configure(&mut self, _run: &mut RunConfig) -> Result<()> {
        Ok(())
    }

    /// The workload's own options, for the manifest (`run`: the engine's configuration, for
    /// engine runs).
    fn options(&self, run: Option<&RunConfig>) -> WorkloadOptions;

    /// Every seed the run uses, for the manifest.
    fn seeds(&self) -> serde_json::Value;

    /// What the first line says of the run.
    fn describe(&self) -> Description;

    /// Measures the run: an engine workload builds its workload over sessions of type `S` (the
    /// client `--client-impl` chose, dispatched in [`measured_run`] and nowhere else) and hands
    /// it to [`Measurer::engine`]; a workload that measures itself calls [`Measurer::own`].
    fn measure<S: Session + 'static>(&mut self, m: Measurer<'_>) -> Result<Measured>;

    /// An engine run's result files and final text, from what the engine measured (its
    /// `FinalReport`). Workloads that measure themselves return theirs from [`Measurer::own`].
    fn final_report(&self, _outcome: &RunOutcome, _summary: &Summary, _run: &RunConfig) -> (String, Vec<ReportFile>) {
        (String::new(), Vec::new())
    }

    /// Whether dbperf keeps its own lines off stdout (banner, live lines, final report, run
    /// directory), leaving it to the workload's own output: `dbperf lua --verbosity` below 3,
    /// as sysbench's. The run's files are written all the same; errors still go to stderr.
    fn quiet(&self) -> bool {
        false
    }

    /// What the run prints once every connection is open and measuring starts, in place of
    /// dbperf's `Threads started! (N connections)` (printed quiet or not): sysbench's
    /// `Threads started!`. Default: dbperf's line.
    fn started_line(&self) -> Option<String> {
        None
    }

    /// After the run concluded with `code`: TPC-C's `--check`. Default: `code`.
    fn after(&mut self, code: ExitCode) -> Result<ExitCode> {
        Ok(code)
    }
}

/// How a run is driven.
#[derive(Debug, Clone, Copy)]
pub enum Drive {
    /// By the engine, shaped so; the shared flags give the rest.
    Engine(RunShape),
    /// By the workload itself, with `users` units that a shard divides (`unit` names them:
    /// "query streams").
    Own { users: u64, unit: &'static str },
}

/// What the first line of a run says, after `dbperf VERSION — `: `what` runs, on which server
/// (the run layer adds it), with how many of `users` (`connection`, `terminal`, `client`).
#[derive(Debug, Clone)]
pub struct Description {
    /// `oltp_read_write, --rand-type=uniform`; `TPC-C max mode, 10 warehouse(s)`.
    pub what: String,
    /// What a connection is called in this workload, singular.
    pub users: &'static str,
    /// What the open-loop rate counts (`trx`, `events`, `ops`).
    pub rate_of: &'static str,
    /// The summary's `rand_type` (the workload's random distribution).
    pub rand_type: String,
    /// What the line says after the connections (`; --rand-type=special`), or nothing.
    pub detail: String,
}

/// The shared flags a measured run takes: the engine's (a command's `RunArgs`, whatever its
/// spellings), or, for a run that measures itself, only where its results go and where its
/// client stands.
pub enum Shared<'a> {
    Engine(&'a dyn EngineFlags),
    Own {
        out: &'a RunOutputArgs,
        place: &'a PlaceArgs,
    },
}

impl Shared<'_> {
    fn out(&self) -> &RunOutputArgs {
        match self {
            Shared::Engine(a) => a.out(),
            Shared::Own { out, .. } => out,
        }
    }
    fn place(&self) -> &PlaceArgs {
        match self {
            Shared::Engine(a) => a.place_args(),
            Shared::Own { place, .. } => place,
        }
    }
}

/// The shared run flags as the measured run reads them, whatever a command calls them
/// ([`RunArgs`] of any [`RunFlags`]).
pub trait EngineFlags {
    /// The engine's configuration for a run shaped so ([`RunArgs::config`]).
    fn config(&self, shape: &RunShape) -> Result<RunConfig>;
    /// The manifest's record of the shared options ([`RunArgs::record`]).
    fn record(&self, run: &RunConfig) -> RunOptions;
    /// The client's path and shard ([`RunArgs::place`]).
    fn place(&self, target: &Target, facts: &ServerFacts, run: &mut RunConfig) -> Result<Placement>;
    /// Live lines printed every this many reports.
    fn print_every(&self) -> u32;
    /// Results directory, summary copy, live metrics, telemetry, settle.
    fn out(&self) -> &RunOutputArgs;
    /// `--shard`, `--start-at`, `--client-netns`.
    fn place_args(&self) -> &PlaceArgs;
    /// `--client-impl`.
    fn client_impl(&self) -> &str;
    /// `--warmup-steady`: the longest unmeasured run until the workload is steady.
    fn warmup_steady(&self) -> Option<std::time::Duration>;
}

impl<F: RunFlags> EngineFlags for RunArgs<F> {
    fn config(&self, shape: &RunShape) -> Result<RunConfig> {
        RunArgs::config(self, shape)
    }
    fn record(&self, run: &RunConfig) -> RunOptions {
        RunArgs::record(self, run)
    }
    fn place(&self, target: &Target, facts: &ServerFacts, run: &mut RunConfig) -> Result<Placement> {
        RunArgs::place(self, target, facts, run)
    }
    fn print_every(&self) -> u32 {
        RunArgs::print_every(self)
    }
    fn out(&self) -> &RunOutputArgs {
        &self.out
    }
    fn place_args(&self) -> &PlaceArgs {
        &self.place
    }
    fn client_impl(&self) -> &str {
        &self.client_impl
    }
    fn warmup_steady(&self) -> Option<std::time::Duration> {
        self.warmup_steady.map(std::time::Duration::from_secs)
    }
}

/// The one measured-run path: server facts → the workload's checks → engine config → options
/// record → placement and network → (settle, run directory, banner) measure → conclude → the
/// workload's after-step. `argv` is the whole command line, for the manifest.
pub fn measured_run<P: MeasuredRun>(
    plan: &mut P,
    shared: Shared<'_>,
    target: &Target,
    argv: &[String],
) -> Result<ExitCode> {
    let (client, ignore) = match &shared {
        Shared::Engine(a) => (
            Client::choose(a.client_impl(), target.family).map_err(|e| anyhow!(e))?,
            IgnoreErrors::Codes(Default::default()),
        ),
        Shared::Own { .. } => (
            Client::default_for(target.family),
            IgnoreErrors::Codes(Default::default()),
        ),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let facts = rt.block_on(async {
        let mut admin = AnySession::connect(target, ignore).await?;
        let facts = server_facts(&mut admin, target.family).await?;
        plan.before(&mut admin).await?;
        anyhow::Ok(facts)
    })?;
    drop(rt);
    // How it is driven may depend on what `before` read (TPC-H's streams); the commands have
    // checked the engine's flags before anything connected.
    let drive = plan.drive();
    let (mut run, run_options) = match (&shared, drive) {
        (Shared::Engine(a), Drive::Engine(shape)) => {
            let mut run = a.config(&shape)?;
            plan.configure(&mut run)?;
            let record = a.record(&run);
            (Some(run), Some(record))
        }
        (Shared::Own { .. }, Drive::Own { .. }) => (None, None),
        _ => anyhow::bail!("{}: the run's flags do not match how it is driven (a bug)", plan.name()),
    };
    let options = RecordedOptions::new(run_options, plan.options(run.as_ref()));
    let place = match (&mut run, drive) {
        (Some(run), _) => match &shared {
            Shared::Engine(a) => a.place(target, &facts, run)?,
            Shared::Own { .. } => unreachable!("engine runs have the engine's flags"),
        },
        (None, Drive::Own { users, unit }) => place_own(shared.place(), target, &facts, users, unit)?,
        (None, Drive::Engine(_)) => unreachable!("an engine run has its configuration"),
    };
    let out = shared.out();
    if run.is_none() && out.metrics_addr.is_some() {
        anyhow::bail!(
            "--metrics-addr serves the engine's intervals, which {} does not have: drop it",
            plan.name()
        );
    }
    let name = plan.name();
    let server_host = out.server_host_record()?;
    let print_every = match &shared {
        Shared::Engine(a) => a.print_every(),
        Shared::Own { .. } => 0,
    };
    let steady = match &shared {
        Shared::Engine(a) => a.warmup_steady(),
        Shared::Own { .. } => None,
    };
    if steady.is_some_and(|d| d.is_zero()) {
        anyhow::bail!("--warmup-steady=0 would stop before the workload ran: give the longest wait, 1 second or more (300 without a value)");
    }
    if steady.is_some() && shared.place().shard.is_some() {
        anyhow::bail!(
            "--warmup-steady ends when this client's workload is steady, and shards start measuring together at \
             --start-at: give the shards a fixed --warmup-time instead"
        );
    }
    let m = Measurer {
        results_dir: &out.results_dir,
        name: &name,
        options,
        seeds: plan.seeds(),
        target,
        facts,
        run: run.as_ref(),
        print_every,
        telemetry: out.telemetry(target),
        metrics_addr: out.metrics_addr.as_deref(),
        settle: out.settle(),
        steady,
        place,
        start_at: shared.place().start_at()?,
        description: plan.describe(),
        argv,
        server_host,
        quiet: plan.quiet(),
        started: plan.started_line(),
        each_interval: None,
    };
    let measured = match client {
        Client::MysqlWire => plan.measure::<WireSession>(m)?,
        Client::MysqlAsync => plan.measure::<MysqlSession>(m)?,
        Client::PgWire => plan.measure::<PgWireSession>(m)?,
        Client::TokioPostgres => plan.measure::<PgSession>(m)?,
    };
    let code = conclude(plan, measured, out.summary_json.as_ref(), run.as_ref());
    plan.after(code)
}

/// Where a run that measures itself stands: its client path and, with `--shard`, its share of
/// `users` (named `unit` in errors).
fn place_own(p: &PlaceArgs, target: &Target, facts: &ServerFacts, users: u64, unit: &'static str) -> Result<Placement> {
    let shard = match (p.shard, p.start_at()?) {
        (Some(s), Some(at)) => Some(shard_record(users, s, at, unit).map_err(anyhow::Error::msg)?),
        (Some(_), None) => anyhow::bail!("--shard needs --start-at: the instant every shard starts measuring"),
        (None, _) => None,
    };
    let path = ClientPath::open(target, p.client_netns.as_ref(), facts)?;
    Ok(Placement { path, shard })
}

/// What a workload's [`MeasuredRun::measure`] is handed: everything the run layer set up, and
/// the two ways to measure.
pub struct Measurer<'a> {
    results_dir: &'a Path,
    name: &'a str,
    options: RecordedOptions,
    seeds: serde_json::Value,
    target: &'a Target,
    facts: ServerFacts,
    run: Option<&'a RunConfig>,
    print_every: u32,
    telemetry: Option<TelemetryConfig>,
    metrics_addr: Option<&'a str>,
    settle: Option<std::time::Duration>,
    /// `--warmup-steady`.
    steady: Option<std::time::Duration>,
    place: Placement,
    /// `--start-at`: when the measured phase starts.
    start_at: Option<SystemTime>,
    description: Description,
    argv: &'a [String],
    /// `--server-host`: the database host's address and facts.
    server_host: Option<dbperf_results::manifest::ServerHostRecord>,
    /// [`MeasuredRun::quiet`].
    quiet: bool,
    /// [`MeasuredRun::started_line`].
    started: Option<String>,
    /// Called with every stored interval after it is recorded ([`Measurer::on_each_interval`]).
    each_interval: Option<dbperf_engine::EachInterval>,
}

/// What the workload's own measurement hands back ([`Measurer::own`]).
pub struct OwnOutcome {
    /// The final text.
    pub text: String,
    /// Its result files (`tpch.json`).
    pub files: Vec<ReportFile>,
    /// Ctrl-C cut it short (what finished is in the files).
    pub interrupted: bool,
    /// A check of what it measured failed (a hinted TPC-H query answered otherwise than the
    /// standard text); the text says which. Exits with [`exit::CHECK_FAILED`].
    pub check_failed: bool,
}

/// What a measurement ended with.
pub enum Outcome {
    /// The engine's totals and `summary.json`.
    Engine {
        outcome: Box<RunOutcome>,
        summary: Box<Summary>,
    },
    /// The workload's own.
    Own(OwnOutcome),
}

/// A measured run, before its conclusion.
pub struct Measured {
    /// What the measurement ended with.
    pub outcome: Outcome,
    dir: RunDir,
    /// A write error of the recorder (or the telemetry), reported at the end.
    recorder_error: Option<String>,
    /// What could not be written (a full disk), reported at the end.
    losses: Vec<WriteLoss>,
    results_dir: PathBuf,
    /// [`MeasuredRun::quiet`].
    quiet: bool,
}

impl Measured {
    /// The run directory.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// Seconds measured (engine runs; 0 for the others).
    pub fn measured_s(&self) -> f64 {
        match &self.outcome {
            Outcome::Engine { outcome, .. } => outcome.measured_s,
            Outcome::Own(_) => 0.0,
        }
    }

    /// The engine's totals (engine runs).
    pub fn engine_outcome(&self) -> Option<&RunOutcome> {
        match &self.outcome {
            Outcome::Engine { outcome, .. } => Some(outcome),
            Outcome::Own(_) => None,
        }
    }
}

impl Measurer<'_> {
    /// The target the workload's connections use (through the client's namespace, when it has one).
    pub fn target(&self) -> &Target {
        &self.place.path.target
    }

    /// The engine's configuration (engine runs), this shard's share when sharded.
    pub fn run(&self) -> Option<&RunConfig> {
        self.run
    }

    /// This run's shard of a run spread over several clients (`--shard`).
    pub fn shard(&self) -> Option<&ShardRecord> {
        self.place.shard.as_ref()
    }

    /// Waits for the server to settle (`--settle`), creates the run directory with its manifest
    /// and prints the banner. Nothing is left behind when the wait fails or is interrupted.
    fn open(&self, stop: &StopSignal) -> Result<OpenRun> {
        if let Some(limit) = self.settle {
            let settled = settle(self.target, limit, stop)?;
            if settled.end == SettleEnd::Stopped {
                anyhow::bail!("interrupted while waiting for the server to settle: nothing was measured");
            }
        }
        let open = OpenRun::create(OpenRunSpec {
            results_dir: self.results_dir,
            name: self.name,
            argv: self.argv,
            options: self.options.clone(),
            seeds: self.seeds.clone(),
            target: self.target,
            facts: self.facts.clone(),
            network: Some(self.place.path.record.clone()),
            shard: self.place.shard.clone(),
            server_host: self.server_host.clone(),
            start_state: self.telemetry.as_ref().and_then(dbperf_telemetry::sampler::start_state),
        })?;
        if self.quiet {
            return Ok(open);
        }
        println!("{}", self.banner(open.dir().path()));
        if self.place.path.record.netns.is_some() {
            println!("Network: {}", self.place.path.describe());
        }
        // A run that measures itself says what its share is in its own terms (TPC-H's streams).
        if let (Some(s), Some(run)) = (&self.place.shard, self.run) {
            let now = dbperf_core::clock::unix_ms(SystemTime::now());
            let warmup = run.warmup.as_secs();
            println!(
                "Shard {}/{}: {} {}..{} of {}; its measured phase starts at {} (in {:.0} s; the {} s warmup before it)",
                s.index,
                s.count,
                self.description.users,
                s.first_user,
                s.first_user + s.users,
                s.users_total,
                s.start_at,
                ((s.start_at_unix_ms - now) as f64 / 1000.0).max(0.0),
                warmup
            );
        }
        Ok(open)
    }

    /// `dbperf VERSION — WHAT on ENDPOINT (SERVER), N USERS, LOOP; results in DIR`.
    fn banner(&self, dir: &Path) -> String {
        let d = &self.description;
        let how = match self.run {
            Some(run) => format!(
                ", {} {}(s), {}",
                run.connections,
                d.users,
                match run.arrival {
                    Arrival::Closed => "closed loop".to_string(),
                    a => format!(
                        "open loop at {} {}/s ({} arrivals)",
                        a.rate().unwrap_or(0.0),
                        d.rate_of,
                        a.name()
                    ),
                }
            ),
            None => String::new(),
        };
        format!(
            "dbperf {} — {} on {} ({}){how}{}; results in {}",
            env!("CARGO_PKG_VERSION"),
            d.what,
            self.target.endpoint(),
            self.facts.version,
            d.detail,
            dir.display()
        )
    }

    /// [`Measurer::engine`] also hands every stored interval to `f`, once it is recorded and
    /// before the live line of a report it ends.
    pub fn on_each_interval(mut self, f: dbperf_engine::EachInterval) -> Self {
        self.each_interval = Some(f);
        self
    }

    /// Measures `workload` in the engine, printing `live` lines: Ctrl-C, the recorder
    /// (`intervals.jsonl`, `intervals.hlog`, live lines and metrics), telemetry, `summary.json`.
    pub fn engine<W: Workload>(self, workload: Arc<W>, live: LiveLine) -> Result<Measured> {
        let run = self
            .run
            .ok_or_else(|| anyhow!("{}: an engine run without the engine's flags (a bug)", self.name))?;
        let mut ops = workload.ops();
        let names = workload.statement_names();
        let stop = StopSignal::new();
        let handler_stop = stop.clone();
        on_interrupt(
            "Stopping: finishing in-flight transactions and writing the summary",
            "exiting without a summary",
            move || handler_stop.stop(StopReason::Interrupted),
        );
        let open = self.open(&stop)?;
        let steady = match self.steady {
            Some(max) => Some(super::steady::run_until_steady(
                run,
                Arc::clone(&workload),
                &stop,
                max,
                self.telemetry.as_ref().and_then(|t| t.target.clone()),
            )?),
            None => None,
        };
        let server_version = self.facts.version.clone();
        let dir = open.dir();
        let mut hlog_file = AppendFile::open(&dir.file("intervals.hlog")?)?;
        let mut serializer = V2DeflateSerializer::new();
        // The log's base time is the run's time zero: for a run with a start time (a shard),
        // the shared instant minus the warmup, so the shards' interval timestamps line up.
        let started = match run.start_at {
            Some(at) => at.checked_sub(run.warmup).unwrap_or(at),
            None => SystemTime::now(),
        };
        let hlog = IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "dbperf {} {} latency in microseconds",
                env!("CARGO_PKG_VERSION"),
                self.name
            ))
            .with_start_time(started)
            .with_base_time(started)
            .begin_log_with(&mut hlog_file, &mut serializer)
            .map_err(|e| anyhow!("writing intervals.hlog: {e:?}"))?;
        let metrics = self
            .metrics_addr
            .map(|addr| {
                let m = LiveMetrics::new(dir.run_id(), self.name, &server_version);
                MetricsServer::start(addr, Arc::clone(&m)).map(|server| (m, server))
            })
            .transpose()?;
        if let Some((_, server)) = &metrics {
            println!("Metrics: http://{}/metrics", server.addr());
        }
        let mut recorder = Recorder {
            jsonl: dir.interval_writer()?,
            hlog,
            ops: ops.clone(),
            names: names.clone(),
            print_every: self.print_every,
            open_loop: run.arrival.rate().is_some(),
            cpu_at_start: client_usage(),
            error: None,
            telemetry_cfg: self
                .telemetry
                .clone()
                .map(|c| (c, dir.path().join(dbperf_results::TELEMETRY_FILE))),
            telemetry: None,
            live,
            quiet: self.quiet,
            started: self.started.clone(),
            metrics: metrics.as_ref().map(|(m, _)| Arc::clone(m)),
            progress: progress_bar(run).filter(|_| !self.quiet),
            warmup: !run.warmup.is_zero(),
            each_interval: self.each_interval,
        };
        let outcome = dbperf_engine::run(run, workload, stop, &mut recorder);
        if let Some(p) = recorder.progress.take() {
            p.finish_and_clear();
        }
        let (telemetry_loss, telemetry_crash) = recorder.telemetry.take().map(Telemetry::stop).unwrap_or_default();
        if let Some(e) = telemetry_crash {
            recorder.error.get_or_insert(e);
        }
        let outcome = outcome?;
        let cx = SummaryContext {
            workload: self.name,
            run_id: dir.run_id(),
            threads: run.connections as u32,
            arrival: run.arrival,
            rand_type: &self.description.rand_type,
            server_version: Some(server_version),
            cpu_at_start: recorder.cpu_at_start,
        };
        if let Some(n) = &names {
            ops.statements.extend(n.all());
        }
        let mut summary = record::summary(&outcome, &ops, &cx);
        summary.steady_warmup = steady;
        // A server lost in the run's last moment may have left no trace in its counters: it
        // must still answer now.
        if !summary.server_lost && outcome.reason == StopReason::Completed && !answers(self.target) {
            summary.server_lost = true;
        }
        let mut losses: Vec<WriteLoss> = [recorder.jsonl.loss(), telemetry_loss].into_iter().flatten().collect();
        let recorder_error = recorder.error.take();
        drop(recorder);
        losses.extend(hlog_file.loss());
        losses.extend(write_json_or_loss(dir, "summary.json", &summary));
        let results_dir = self.results_dir.to_path_buf();
        let dir = open.end(&losses);
        Ok(Measured {
            outcome: Outcome::Engine {
                outcome: Box::new(outcome),
                summary: Box::new(summary),
            },
            dir,
            recorder_error,
            losses,
            results_dir,
            quiet: self.quiet,
        })
    }

    /// Measures with the workload's own runner: `run` gets the client's target and a flag that
    /// Ctrl-C raises (it should stop after what is in progress and keep what finished; `stopping`
    /// is what the first Ctrl-C prints). Telemetry samples the run as for the engine's.
    /// `run` is started inside the client's network namespace, when it has one.
    pub fn own(
        self,
        stopping: &'static str,
        run: impl FnOnce(&Target, Arc<AtomicBool>) -> Result<OwnOutcome> + Send,
    ) -> Result<Measured> {
        let stop = StopSignal::new();
        let flag = Arc::new(AtomicBool::new(false));
        let (handler_stop, handler_flag) = (stop.clone(), Arc::clone(&flag));
        on_interrupt(
            stopping,
            "exiting now; the run's result file is not written",
            move || {
                handler_flag.store(true, Ordering::Relaxed);
                handler_stop.stop(StopReason::Interrupted);
            },
        );
        let open = self.open(&stop)?;
        let dir = open.dir();
        // Telemetry starts with the measurement: at `--start-at` when given (the shards' shared
        // instant, so their samples line up, and not while the streams connect), else now.
        let telemetry = self.telemetry.clone().map(|cfg| {
            let path = dir.path().join(dbperf_results::TELEMETRY_FILE);
            let (start_at, stopped) = (self.start_at, Arc::clone(&flag));
            std::thread::spawn(move || {
                if let Some(at) = start_at {
                    while SystemTime::now() < at && !stopped.load(Ordering::Relaxed) {
                        std::thread::sleep(std::time::Duration::from_millis(50));
                    }
                }
                Telemetry::start(cfg, &path, dbperf_engine::clock::now_ns())
            })
        });
        let target = self.place.path.target.clone();
        let result = self.place.path.run_inside(move || run(&target, flag));
        let mut error = None;
        let (telemetry_loss, telemetry_crash) = match telemetry.map(|t| t.join()) {
            None => (None, None),
            Some(Ok(Ok(t))) => t.stop(),
            Some(Ok(Err(e))) => (None, Some(format!("telemetry is off: {e}"))),
            Some(Err(_)) => (None, Some("telemetry is off: its thread panicked".to_string())),
        };
        if let Some(e) = telemetry_crash {
            error.get_or_insert(e);
        }
        let own = result??;
        let losses: Vec<WriteLoss> = telemetry_loss.into_iter().collect();
        let results_dir = self.results_dir.to_path_buf();
        let dir = open.end(&losses);
        Ok(Measured {
            outcome: Outcome::Own(own),
            dir,
            recorder_error: error,
            losses,
            results_dir,
            quiet: self.quiet,
        })
    }
}

/// The end of a measured run: the summary copied to `summary_json` (if given), the workload's
/// result files written and its final report printed, the catalog row again (with the result
/// files' figures), then [`finish`]'s lines and exit code. What could not be written is
/// reported, never fatal.
fn conclude<P: MeasuredRun>(
    plan: &P,
    mut m: Measured,
    summary_json: Option<&PathBuf>,
    run: Option<&RunConfig>,
) -> ExitCode {
    let (text, files) = match &mut m.outcome {
        Outcome::Engine { outcome, summary } => {
            if let Some(path) = summary_json {
                match serde_json::to_vec_pretty(summary) {
                    Ok(bytes) => m.losses.extend(write_file_or_loss(path, &bytes)),
                    Err(e) => m.losses.push(WriteLoss {
                        path: path.clone(),
                        bytes: 0,
                        error: e.to_string(),
                    }),
                }
            }
            match run {
                Some(run) => plan.final_report(outcome, summary, run),
                None => (String::new(), Vec::new()),
            }
        }
        Outcome::Own(own) => {
            // A run without a summary.json copies its result file (`tpch.json`).
            if let (Some(path), Some(first)) = (summary_json, own.files.first()) {
                m.losses.extend(write_file_or_loss(path, &first.bytes));
            }
            (own.text.clone(), std::mem::take(&mut own.files))
        }
    };
    for file in files {
        let loss = match file.path {
            ReportPath::RunDir(name) => write_or_loss(&m.dir, name, &file.bytes),
            ReportPath::Elsewhere(path) => write_file_or_loss(&path, &file.bytes),
        };
        m.losses.extend(loss);
    }
    // The catalog recorded the run before the workload's result files (tpcc.json's NOTPM,
    // linkbench.json's rps, tpch.json) existed: again, so their figures are indexed.
    let state = if m.losses.is_empty() {
        RunDirState::Complete
    } else {
        RunDirState::Incomplete
    };
    record_in_catalog(&m.results_dir, &m.dir, state);
    if !m.quiet {
        println!();
        print!("{text}");
    }
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
/// that are incomplete, then an interrupt).
fn finish(m: &Measured) -> ExitCode {
    if let Some(e) = &m.recorder_error {
        eprintln!("warning: {e}");
    }
    if let (false, Outcome::Engine { outcome, .. }) = (m.quiet, &m.outcome) {
        if outcome.abandoned > 0 {
            println!(
                "{} transaction(s) were still running at the end and were abandoned.",
                outcome.abandoned
            );
        }
        if let Some(line) = unreachable_line(outcome) {
            println!("{line}");
        }
    }
    if !m.quiet {
        println!("Run directory: {}", m.dir.path().display());
    }
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
    let incomplete_or = |code: u8| ExitCode::from(if incomplete { exit::RESULTS_INCOMPLETE } else { code });
    let outcome = match &m.outcome {
        Outcome::Engine { outcome, .. } => outcome,
        Outcome::Own(own) => {
            return incomplete_or(match own {
                o if o.interrupted => exit::INTERRUPTED,
                o if o.check_failed => exit::CHECK_FAILED,
                _ => 0,
            });
        }
    };
    let lost = matches!(&m.outcome, Outcome::Engine { summary, .. } if summary.server_lost);
    match outcome.reason {
        StopReason::Completed if outcome.unreachable_at_end => {
            eprintln!(
                "error: results incomplete: the server was still unreachable when the run ended \
                 (is it running? `dbperf server list` shows the sandboxes)"
            );
            ExitCode::from(exit::RESULTS_INCOMPLETE)
        }
        StopReason::Completed if lost => {
            eprintln!(
                "error: results not clean: the server was lost during the measured phase (connections lost, \
                 or no answer right after the run); summary.json says server_lost"
            );
            ExitCode::from(exit::RESULTS_INCOMPLETE)
        }
        StopReason::Completed => incomplete_or(0),
        StopReason::Crashed => {
            let what = outcome.crash.as_deref().unwrap_or("a panic");
            eprintln!(
                "error: the run stopped because dbperf crashed: {what}\n\
                 This is a bug in dbperf; please report it with the command line. The summary \
                 covers the {:.1} s measured before it.",
                outcome.measured_s
            );
            ExitCode::from(exit::CRASHED)
        }
        StopReason::Interrupted => {
            eprintln!(
                "Interrupted: the summary covers the {:.1} s measured before the stop.",
                outcome.measured_s
            );
            incomplete_or(exit::INTERRUPTED)
        }
        StopReason::Fatal => {
            let e = outcome.fatal.as_ref().map(|e| e.to_string()).unwrap_or_default();
            eprintln!("error: the run stopped on a fatal error: {e}");
            if e.contains("(error ") {
                eprintln!("hint: add the error number to --mysql-ignore-errors to retry it instead");
            }
            ExitCode::from(exit::FATAL_SERVER_ERROR)
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

/// Writes `bytes` to `path` (outside the run directory: `--summary-json`, `--csvstats`); a
/// failure removes what part was written.
fn write_file_or_loss(path: &Path, bytes: &[u8]) -> Option<WriteLoss> {
    let e = dbperf_core::nofollow::write_atomic(path, bytes).err()?;
    let _ = std::fs::remove_file(path);
    Some(WriteLoss {
        path: path.to_path_buf(),
        bytes: bytes.len() as u64,
        error: e.to_string(),
    })
}

/// Server version and all global variables (PostgreSQL: `pg_settings`), for the manifest.
pub async fn server_facts<S: Session>(s: &mut S, family: Family) -> Result<ServerFacts> {
    let sql = match family {
        Family::Mysql => "SHOW GLOBAL VARIABLES",
        Family::Postgres => "SELECT name, setting FROM pg_settings",
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
        version: match family {
            Family::Postgres if !version.contains("PostgreSQL") => format!("PostgreSQL {version}"),
            _ => version,
        },
        variables,
    })
}

/// How long a server has to answer right after a run.
const ANSWER_WITHIN: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether the server takes a connection and answers a query within [`ANSWER_WITHIN`]: a
/// server that cannot, right after a run, was hung or gone at its end.
fn answers(target: &Target) -> bool {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return false;
    };
    rt.block_on(async {
        let probe = async {
            let mut s = admin_session(target).await.ok()?;
            s.query_rows("SELECT 1").await.ok()
        };
        matches!(tokio::time::timeout(ANSWER_WITHIN, probe).await, Ok(Some(_)))
    })
}

/// Connects an administrative session (no errors retried).
pub async fn admin_session(target: &Target) -> Result<AnySession> {
    Ok(AnySession::connect(target, IgnoreErrors::Codes(Default::default())).await?)
}
