//! `dbperf linkbench load|request|cleanup`: the arguments (first stage), their validation into a
//! plan (second stage), and the two phases. `request` goes through the shared measured-run
//! pipeline ([`dbperf_run`]); LinkBench's bucket report and `-csvstats` file come from
//! [`dbperf_workloads::linkbench::report`].
//! The target's family picks the SQL spelling and the session: MySQL's wire (or mysql_async)
//! session, or [`PgWireSession`] (or `tokio-postgres`'s [`PgSession`]) for `postgres://` targets.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dbperf_core::exit;
use dbperf_engine::{RunConfig, RunOutcome};

use super::args::TargetArgs;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::pg;
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::target::Family;
use dbperf_driver::wire::WireSession;
use dbperf_driver::{Session, Target};
use dbperf_report::LiveLine;
use dbperf_results::options::{LinkbenchOptions, WorkloadOptions};
use dbperf_results::Summary;
use dbperf_run::client::Client;
use dbperf_run::measured::Measured;
use dbperf_run::{measured_run, Description, Drive, MeasuredRun, Measurer, RunArgs, RunFlags, RunShape, Shared};
use dbperf_workloads::linkbench::config;
use dbperf_workloads::linkbench::load::{self, LoadConfig};
use dbperf_workloads::linkbench::loaded::{self, LoadedGraph};
use dbperf_workloads::linkbench::{report, requester_rngs, LinkBenchWorkload, Model, Seeding};
use dbperf_workloads::{FinalReport, ReportFile};

/// `dbperf linkbench COMMAND [OPTIONS]`.
/// `dbperf linkbench`'s spellings of the shared run flags (`--rate` counts per requester).
#[derive(Debug, Clone)]
pub struct LinkbenchFlags;

impl RunFlags for LinkbenchFlags {
    const TIME_DEFAULT: &'static str = "60";
    const TIME_HELP: &'static str = "request: measured seconds (the reference's maxtime)";
    const WARMUP_HELP: &'static str = "request: seconds run before measuring";
    const RATE_HELP: &'static str = "request: ops/s per requester with exponential gaps (the reference's requestrate; \
        0 = as fast as possible)";
    const INTERVAL_DEFAULT: &'static str = "10";
    const INTERVAL_HELP: &'static str = "request: seconds between live lines, each over the whole interval (intervals \
        are stored each second, finer when this is under 1 s)";
    const THREADS_HELP: &'static str = "Event-loop threads sharing the requesters, with --client-io async or, when \
        fewer than the requesters, auto (default: one per CPU, at most one per requester)";
    const IO_HELP: &'static str = "request: how the client waits for replies: blocking (a thread per requester \
        sleeping in the kernel until its reply arrives: the least CPU per request), async (--client-threads event \
        loops sharing the requesters: needed by --rate), or auto (blocking in closed loop up to 128 requesters, \
        unless --client-threads is fewer than the requesters)";
    const GRACE_DEFAULT: &'static str = "2";
}

#[derive(Debug, Args)]
pub struct LinkbenchArgs {
    /// load (create the tables and load the graph), request (run the operation mix) or
    /// cleanup (drop the tables load created).
    pub command: String,
    /// The server.
    #[command(flatten)]
    pub server: TargetArgs,
    /// One past the last node id (the graph's size; the reference's maxid1). load needs it;
    /// request defaults to what load recorded.
    #[arg(long)]
    pub maxid1: Option<i64>,
    /// First node id.
    #[arg(long, default_value_t = 1)]
    pub startid1: i64,
    /// load: loader connections, each on its own thread.
    #[arg(long)]
    pub loaders: Option<usize>,
    /// load: rows per multi-row INSERT (the reference's mysql_bulk_insert_batch), or per
    /// COPY on PostgreSQL.
    #[arg(long, default_value_t = 1024)]
    pub batch: usize,
    /// load: linktable partitions (PARTITION BY KEY(id1)); 0 for none. Default 16 on
    /// MySQL; PostgreSQL's linktable is not partitioned (as the mdcallag fork's).
    #[arg(long)]
    pub partitions: Option<u32>,
    /// request: requester threads (each has a read-write and a read-only connection).
    #[arg(value_parser = clap::value_parser!(u32).range(1..=dbperf_core::bounds::MAX_CONNECTIONS as i64), long, default_value_t = 10)]
    pub requesters: u32,
    /// Time, rate, warmup, client I/O, report interval, results directory and telemetry.
    #[command(flatten)]
    pub run: RunArgs<LinkbenchFlags>,
    /// request: stop after this many requests per requester (the reference's requests;
    /// 0 = only --time). The total is exact; with several requesters the split between them is not.
    #[arg(long, default_value_t = 0)]
    pub requests_per_requester: u64,
    /// The workload: fb2011 (FBWorkload.properties), fb2017, or a properties file whose keys override fb2011's.
    #[arg(long, default_value = "fb2011")]
    pub mix: String,
    /// Seed of the load (default 1) or of the requesters (default: the clock).
    #[arg(long)]
    pub seed: Option<i64>,
    /// Seed every stream as the Java reference does (SHA1PRNG master, java.util.Random per
    /// thread): with one loader, or one requester, the rows and statements equal the reference's.
    #[arg(long)]
    pub java_compatible_rng: bool,
    /// request: run even on a load that did not finish (interrupted, or from a dbperf that
    /// did not record completion); the graph then lacks nodes and links.
    #[arg(long)]
    pub allow_incomplete_load: bool,
    /// cleanup: also drop LinkBench tables dbperf did not create.
    #[arg(long)]
    pub force: bool,
    /// request: also write LinkBench's -csvstats file here (it is always in the run directory).
    #[arg(long)]
    pub csvstats: Option<PathBuf>,
    /// Server errors to roll back and retry ('all' or a list); the reference retries deadlocks and lock wait timeouts.
    #[arg(long, default_value = "1213,1205")]
    pub mysql_ignore_errors: String,
    /// PostgreSQL SQLSTATEs to roll back and retry, 'none' or 'all' (default: deadlock and serialization failure).
    #[arg(long, default_value = "40P01,40001")]
    pub pgsql_ignore_errors: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Load,
    Request,
    Cleanup,
}

/// A validated invocation.
struct Plan {
    command: Command,
    target: Target,
    partitions: u32,
    mix: config::Workload,
    seeding: Seeding,
    seed: i64,
    ignore: IgnoreErrors,
    shape: RunShape,
    /// What the load left, read before the request phase.
    graph: Option<LoadedGraph>,
    args: LinkbenchArgs,
}

fn cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

impl Plan {
    fn from_args(a: LinkbenchArgs) -> Result<Plan> {
        let command = match a.command.as_str() {
            "load" => Command::Load,
            "request" => Command::Request,
            "cleanup" => Command::Cleanup,
            other => bail!("unknown linkbench command {other:?}: use load, request or cleanup"),
        };
        let target = a.server.resolve()?;
        let family = target.family;
        let partitions = match (family, a.partitions) {
            (Family::Mysql, p) => p.unwrap_or(16),
            (Family::Postgres, None | Some(0)) => 0,
            (Family::Postgres, Some(n)) => bail!(
                "--partitions {n}: linktable is not partitioned on PostgreSQL (the schema of the mdcallag \
                 fork's PostgreSQL port); drop --partitions or give 0"
            ),
        };
        let props = config::mix_props(&a.mix).map_err(|e| anyhow!(e))?;
        let mix = config::Workload::from_props(&props).map_err(|e| anyhow!("--mix {}: {e}", a.mix))?;
        if command == Command::Load && a.maxid1.is_none() {
            bail!("--maxid1 is needed for load: one past the last node id, e.g. --maxid1 100001 for 100,000 nodes");
        }
        if a.startid1 < 1 {
            bail!("--startid1 must be at least 1");
        }
        if a.loaders == Some(0) {
            bail!("--loaders must be at least 1");
        }
        if !(1..=8192).contains(&a.batch) {
            bail!("--batch must be 1..8192 rows per INSERT (default 1024)");
        }
        if a.requesters == 0 {
            bail!("--requesters must be at least 1");
        }
        if command == Command::Request && a.run.time == 0 && a.requests_per_requester == 0 {
            bail!("the request phase needs a limit: --time SECONDS and/or --requests-per-requester N");
        }
        if !(a.run.rate.is_finite() && a.run.rate >= 0.0) {
            bail!("--rate must be 0 (as fast as possible) or a positive number of ops/s per requester");
        }
        if a.run.report_interval <= 0.0 || !a.run.report_interval.is_finite() {
            bail!("--report-interval must be a positive number of seconds (default 10)");
        }
        let seeding = if a.java_compatible_rng {
            if command == Command::Load && a.loaders.is_some_and(|l| l > 1) {
                bail!(
                    "--java-compatible-rng loads with one link loader (the reference shares one generator \
                     between its loader threads, so only one loader is reproducible): drop --loaders or use --loaders 1"
                );
            }
            Seeding::JavaCompatible
        } else {
            Seeding::PerStream
        };
        let seed = match (command, a.seed) {
            (_, Some(s)) => s,
            (Command::Load | Command::Cleanup, None) => 1,
            (Command::Request, None) => a.run.default_seed() as i64,
        };
        let ignore = match family {
            Family::Mysql => IgnoreErrors::parse(&a.mysql_ignore_errors),
            Family::Postgres => pg::parse_ignore(&a.pgsql_ignore_errors),
        }
        .map_err(|e| anyhow!(e))?;
        let requesters = a.requesters as usize;
        let events = match a.requests_per_requester {
            0 => None,
            n => Some(n.checked_mul(requesters as u64).ok_or_else(|| {
                anyhow!("--requests-per-requester {n} x {requesters} requesters is more requests than can be counted")
            })?),
        };
        let shape = RunShape {
            connections: requesters,
            events,
            rate_per_connection: true,
            seed: seed as u64,
        };
        if command == Command::Request {
            // The run flags' errors before anything connects.
            a.run.config(&shape)?;
            Client::choose(&a.run.client_impl, target.family).map_err(|e| anyhow!(e))?;
        }
        Ok(Plan {
            command,
            target,
            partitions,
            mix,
            seeding,
            seed,
            ignore,
            shape,
            graph: None,
            args: a,
        })
    }
}

/// Runs a linkbench command; `argv` is the whole command line, for the manifest.
pub fn run(args: LinkbenchArgs, argv: &[String]) -> Result<ExitCode> {
    let mut plan = Plan::from_args(args)?;
    match plan.command {
        Command::Load => run_load(&plan),
        Command::Cleanup => {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            match plan.target.family {
                Family::Mysql => rt.block_on(load::cleanup::<WireSession>(&plan.target, plan.args.force))?,
                Family::Postgres => rt.block_on(load::cleanup::<PgWireSession>(&plan.target, plan.args.force))?,
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Request => {
            let (target, args) = (plan.target.clone(), plan.args.run.clone());
            measured_run(&mut plan, Shared::Engine(&args), &target, argv)
        }
    }
}

fn run_load(plan: &Plan) -> Result<ExitCode> {
    let a = &plan.args;
    let maxid1 = a.maxid1.expect("validated");
    let model = Model::new(plan.mix.clone(), a.startid1, maxid1).map_err(|e| anyhow!(e))?;
    let loaders = match plan.seeding {
        Seeding::JavaCompatible => 1,
        Seeding::PerStream => a.loaders.unwrap_or(cpus()),
    };
    let cfg = LoadConfig {
        target: plan.target.clone(),
        family: plan.target.family,
        model: Arc::new(model),
        loaders,
        seeding: plan.seeding,
        seed: plan.seed,
        partitions: plan.partitions,
        batch: a.batch,
        progress: Some(Duration::from_secs(5)),
        stop: Arc::new(AtomicBool::new(false)),
    };
    let stop = Arc::clone(&cfg.stop);
    dbperf_core::interrupt::on_interrupt(
        "Stopping: each loader quits after the id in progress, and the load stays marked incomplete",
        "exiting now",
        move || stop.store(true, Ordering::Relaxed),
    );
    eprintln!("{}", loaded::load_banner(&cfg));
    let r = loaded::load_phase(&cfg)?;
    println!("{}", loaded::load_text(&r, maxid1 - a.startid1));
    Ok(if r.interrupted {
        ExitCode::from(exit::INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

impl Plan {
    /// The graph's id range, as the load recorded it (known after [`MeasuredRun::before`]).
    fn ids(&self) -> (i64, i64) {
        self.graph
            .as_ref()
            .map_or((self.args.startid1, self.args.maxid1.unwrap_or(0)), |g| {
                (g.startid1, g.maxid1)
            })
    }
}

/// `linkbench request`: the loaded graph read back and checked, the requesters on the engine.
impl MeasuredRun for Plan {
    fn name(&self) -> String {
        "linkbench".into()
    }

    async fn before(&mut self, admin: &mut AnySession) -> Result<()> {
        let a = &self.args;
        let graph = LoadedGraph::read(
            admin,
            &self.target.database,
            a.maxid1,
            a.startid1,
            self.mix.link_types,
            a.allow_incomplete_load,
        )
        .await?;
        for w in &graph.warnings {
            eprintln!("warning: {w}");
        }
        self.graph = Some(graph);
        Ok(())
    }

    fn drive(&self) -> Drive {
        Drive::Engine(self.shape)
    }

    fn options(&self, _run: Option<&RunConfig>) -> WorkloadOptions {
        let a = &self.args;
        let (startid1, maxid1) = self.ids();
        WorkloadOptions::Linkbench(LinkbenchOptions {
            mix: a.mix.clone(),
            startid1,
            maxid1,
            requesters: a.requesters.into(),
            requests_per_requester: a.requests_per_requester,
            rate_per_requester: a.run.rate,
            java_compatible_rng: a.java_compatible_rng,
        })
    }

    fn seeds(&self) -> serde_json::Value {
        serde_json::json!({ "request_seed": self.seed, "java_compatible": self.args.java_compatible_rng })
    }

    fn describe(&self) -> Description {
        let (startid1, maxid1) = self.ids();
        Description {
            what: format!("LinkBench {} request phase, ids [{startid1}, {maxid1})", self.args.mix),
            users: "requester",
            rate_of: "ops",
            rand_type: "linkbench".into(),
            detail: String::new(),
        }
    }

    fn measure<S: Session + 'static>(&mut self, m: Measurer<'_>) -> Result<Measured> {
        let (startid1, maxid1) = self.ids();
        let model = Arc::new(Model::new(self.mix.clone(), startid1, maxid1).map_err(|e| anyhow!(e))?);
        let rngs = requester_rngs(self.seeding, self.seed, self.args.requesters as usize);
        let workload = Arc::new(LinkBenchWorkload::<S> {
            target: m.target().clone(),
            ignore: self.ignore.clone(),
            model,
            rngs: Mutex::new(rngs.into_iter().map(Some).collect()),
            session: std::marker::PhantomData,
        });
        m.engine(workload, LiveLine::Custom(Box::new(report::interval_line)))
    }

    fn final_report(&self, outcome: &RunOutcome, summary: &Summary, _run: &RunConfig) -> (String, Vec<ReportFile>) {
        report::LinkbenchReport {
            csvstats: self.args.csvstats.clone(),
        }
        .final_report(outcome, summary)
    }
}
