//! `dbperf tpcc prepare|run|check|cleanup`: the arguments (first stage), their validation
//! into a plan (second stage), and the commands. `run` goes through the shared measured-run
//! layer ([`dbperf_run`]); its TPC-C lines and report are in [`dbperf_workloads::tpcc::report`].

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dbperf_core::exit;
use dbperf_engine::{RunConfig, RunOutcome};

use super::args::TargetUrl;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::target::Family;
use dbperf_driver::{Session, Target};
use dbperf_report::LiveLine;
use dbperf_results::options::WorkloadOptions;
use dbperf_results::Summary;
use dbperf_run::args::cpus;
use dbperf_run::client::Client;
use dbperf_run::measured::{admin_session, Measured};
use dbperf_run::{measured_run, Description, Drive, MeasuredRun, Measurer, RunArgs, RunFlags, RunShape, Shared};
use dbperf_workloads::tpcc::check;
use dbperf_workloads::tpcc::prepare::{self, PrepareConfig};
use dbperf_workloads::tpcc::rand::NuConstants;
use dbperf_workloads::tpcc::report::{self, TpccReport};
use dbperf_workloads::tpcc::run as tpcc_run;
use dbperf_workloads::tpcc::schema::{Schema, SchemaKind};
use dbperf_workloads::tpcc::{Mode, TpccWorkload, WarehouseChoice};
use dbperf_workloads::{FinalReport, LoadMethod, ReportFile};

/// `tpcc prepare --load-method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TpccLoadMethodArg {
    /// The cheapest for the server: bulk on MariaDB, else load-data, else insert.
    Auto,
    /// MariaDB: a prepared one-row INSERT executed for 1,000 rows per command
    /// (COM_STMT_BULK_EXECUTE).
    Bulk,
    /// LOAD DATA LOCAL INFILE generated in memory (falls back to insert when the server
    /// has local_infile=OFF).
    LoadData,
    /// Prepared 1,000-row INSERTs.
    Insert,
}

impl TpccLoadMethodArg {
    /// The method asked for; `None` lets the loader choose.
    fn method(self) -> Option<LoadMethod> {
        match self {
            TpccLoadMethodArg::Auto => None,
            TpccLoadMethodArg::Bulk => Some(LoadMethod::Bulk),
            TpccLoadMethodArg::LoadData => Some(LoadMethod::LoadData),
            TpccLoadMethodArg::Insert => Some(LoadMethod::Insert),
        }
    }
}

/// `dbperf tpcc`'s spellings of the shared run flags.
#[derive(Debug, Clone)]
pub struct TpccFlags;

impl RunFlags for TpccFlags {
    const TIME_DEFAULT: &'static str = "60";
    const TIME_HELP: &'static str = "Measured run time in seconds";
    const WARMUP_HELP: &'static str = "Seconds run before measuring";
    const RATE_HELP: &'static str = "Open loop (max mode): total transactions per second (0 = closed loop)";
    const INTERVAL_DEFAULT: &'static str = "10";
    const INTERVAL_HELP: &'static str = "Seconds between interval lines, each over the whole interval (intervals are \
        stored each second, finer when this is under 1 s)";
    const THREADS_HELP: &'static str = "Event-loop threads sharing the connections, with --client-io async or, when \
        fewer than the connections, auto (default: one per CPU, at most one per connection)";
    const IO_HELP: &'static str =
        "How the client waits for replies: blocking (a thread per connection sleeping in the \
        kernel until its reply arrives: the least CPU per transaction), async (--client-threads event loops sharing \
        the connections: needed by --rate, lighter for very many connections), or auto (blocking in closed loop up to \
        128 connections, unless --client-threads is fewer than the connections)";
}

/// `dbperf tpcc COMMAND [OPTIONS]`.
#[derive(Debug, Args)]
pub struct TpccArgs {
    /// prepare, run, check or cleanup.
    pub command: String,
    /// Where to connect (--target, DBPERF_TARGET or --target-file).
    #[command(flatten)]
    pub target: TargetUrl,
    /// Warehouses (the scale). prepare and run need it; check defaults to what prepare loaded.
    #[arg(long)]
    pub warehouses: Option<u32>,
    /// Connections: loaders for prepare/check (default: CPUs), terminals for `run --mode max` (default 1 per warehouse).
    #[arg(value_parser = clap::value_parser!(u32).range(1..=dbperf_core::bounds::MAX_CONNECTIONS as i64), long)]
    pub threads: Option<u32>,
    /// Time, rate, warmup, client I/O, report interval, results directory and telemetry.
    #[command(flatten)]
    pub run: RunArgs<TpccFlags>,
    /// max: no waits, --threads connections with a home warehouse each; spec: 10 terminals per warehouse with keying and think times.
    #[arg(long, default_value = "max")]
    pub mode: String,
    /// max mode: fixed (each connection keeps a home warehouse and district) or
    /// per-transaction (a uniform warehouse and district for every transaction, as
    /// tpcc-mysql and sysbench-tpcc draw them).
    #[arg(long, default_value = "fixed")]
    pub warehouse_choice: String,
    /// Multiplies keying and think times in spec mode (1 = the spec's; tpmC is reported only at 1).
    #[arg(long, default_value_t = 1.0)]
    pub wait_scale: f64,
    /// Table spelling: dbperf, or tpcc-mysql to use a database tpcc-mysql loaded.
    #[arg(long, default_value = "dbperf")]
    pub schema: String,
    /// prepare: give HISTORY an auto-increment primary key (Group Replication, Galera).
    #[arg(long)]
    pub history_pk: bool,
    /// prepare: add foreign keys after the data.
    #[arg(long)]
    pub fk: bool,
    /// cleanup: also drop TPC-C tables dbperf did not create (by default cleanup drops only
    /// the tables dbperf's prepare created).
    #[arg(long)]
    pub force: bool,
    /// prepare: storage engine.
    #[arg(long, default_value = "InnoDB")]
    pub engine: String,
    /// prepare: how rows go in (MySQL protocol; PostgreSQL always uses COPY). auto: the
    /// cheapest the server offers, bulk on MariaDB, else load-data, else insert.
    #[arg(long, value_enum, default_value = "auto")]
    pub load_method: TpccLoadMethodArg,
    /// Seed: of the data for prepare (default 1), of the terminals and C constants for run (0 = clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// run: check consistency (clause 3.3.2) at the end.
    #[arg(long)]
    pub check: bool,
    /// Server errors to roll back and retry ('all' or a list).
    #[arg(long, default_value = "1213,1205,1020")]
    pub mysql_ignore_errors: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Prepare,
    Run,
    Check,
    Cleanup,
}

/// A validated `tpcc` invocation.
struct Plan {
    command: Command,
    target: Target,
    schema: Schema,
    warehouses: Option<u32>,
    connections: u32,
    mode: Mode,
    warehouse_choice: WarehouseChoice,
    seed: u64,
    ignore: IgnoreErrors,
    shape: RunShape,
    /// The load's C_LAST, read before the run.
    c_last_load: Option<i64>,
    args: TpccArgs,
}

impl Plan {
    fn from_args(a: TpccArgs) -> Result<Plan> {
        let command = match a.command.as_str() {
            "prepare" => Command::Prepare,
            "run" => Command::Run,
            "check" => Command::Check,
            "cleanup" => Command::Cleanup,
            other => bail!("unknown tpcc command {other:?}: use prepare, run, check or cleanup"),
        };
        let Some(target) = a.target.resolve()? else {
            bail!("no server given: use --target mysql://USER:PASS@HOST:PORT/DB (or sandbox:NAME, see `dbperf server start`), DBPERF_TARGET or --target-file")
        };
        let kind: SchemaKind = a.schema.parse().map_err(|e: String| anyhow!(e))?;
        if kind == SchemaKind::TpccMysql && target.family == Family::Postgres {
            bail!("--schema tpcc-mysql is tpcc-mysql's MySQL schema; on PostgreSQL use the default --schema dbperf");
        }
        let schema = Schema {
            kind,
            history_pk: a.history_pk,
            family: target.family,
        };
        let mode: Mode = a.mode.parse().map_err(|e: String| anyhow!(e))?;
        let warehouse_choice: WarehouseChoice = a.warehouse_choice.parse().map_err(|e: String| anyhow!(e))?;
        tpcc_run::check_mode(mode, warehouse_choice, a.run.rate > 0.0).map_err(|e| anyhow!(e))?;
        if matches!(command, Command::Prepare | Command::Run) && a.warehouses.is_none() {
            bail!("--warehouses is needed for {}: e.g. --warehouses 10", a.command);
        }
        if a.warehouses == Some(0) {
            bail!("--warehouses must be at least 1");
        }
        if a.threads == Some(0) {
            bail!("--threads must be at least 1");
        }
        tpcc_run::check_wait_scale(a.wait_scale)
            .map_err(|e| anyhow!("--{}", e.replacen("wait_scale", "wait-scale", 1)))?;
        if a.run.report_interval <= 0.0 || !a.run.report_interval.is_finite() {
            bail!("--report-interval must be a positive number of seconds (default 10)");
        }
        if command == Command::Run && a.run.time == 0 {
            bail!("--time must be at least 1 second");
        }
        let w = a.warehouses.unwrap_or(1);
        let connections = match command {
            Command::Run => tpcc_run::terminals(mode, w, a.threads).map_err(|e| anyhow!(e))?,
            _ => a.threads.unwrap_or(cpus() as u32),
        };
        let seed = match (command, a.seed) {
            (_, Some(s)) if s != 0 => s,
            (Command::Prepare, _) => 1,
            _ => a.run.default_seed(),
        };
        let ignore = IgnoreErrors::parse(&a.mysql_ignore_errors).map_err(|e| anyhow!(e))?;
        let shape = RunShape {
            connections: connections as usize,
            events: None,
            rate_per_connection: false,
            seed,
        };
        if command == Command::Run {
            // The run flags' errors before anything connects.
            a.run.config(&shape)?;
            Client::choose(&a.run.client_impl, target.family).map_err(|e| anyhow!(e))?;
        }
        Ok(Plan {
            command,
            target,
            schema,
            warehouses: a.warehouses,
            connections,
            mode,
            warehouse_choice,
            seed,
            ignore,
            shape,
            c_last_load: None,
            args: a,
        })
    }

    fn constants(&self) -> NuConstants {
        tpcc_run::constants(self.seed, self.c_last_load)
    }
}

/// Runs a tpcc command; `argv` is the whole command line, for the manifest.
pub fn run(args: TpccArgs, argv: &[String]) -> Result<ExitCode> {
    let mut plan = Plan::from_args(args)?;
    if plan.command == Command::Run {
        let (target, args) = (plan.target.clone(), plan.args.run.clone());
        return measured_run(&mut plan, Shared::Engine(&args), &target, argv);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus().min(4))
        .enable_all()
        .build()?;
    match plan.command {
        Command::Prepare => {
            let w = plan.warehouses.expect("validated");
            let cfg = PrepareConfig {
                target: plan.target.clone(),
                schema: plan.schema,
                warehouses: w,
                connections: plan.connections,
                seed: plan.seed,
                foreign_keys: plan.args.fk,
                engine: plan.args.engine.clone(),
                progress: true,
                method: plan.args.load_method.method(),
            };
            eprintln!(
                "Loading {w} warehouse(s) into {} over {} connection(s), --seed {}",
                plan.target.database, plan.connections, plan.seed
            );
            let r = rt.block_on(prepare::prepare(&cfg))?;
            println!("{}", r.text(cfg.foreign_keys));
            Ok(ExitCode::SUCCESS)
        }
        Command::Cleanup => {
            rt.block_on(prepare::cleanup(&plan.target, &plan.schema, plan.args.force))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Check => {
            let w = rt.block_on(loaded_warehouses(&plan))?;
            Ok(rt.block_on(run_check(&plan, w))?)
        }
        Command::Run => unreachable!("measured above"),
    }
}

/// Warehouses to check: `--warehouses`, else those loaded.
async fn loaded_warehouses(plan: &Plan) -> Result<u32> {
    if let Some(w) = plan.warehouses {
        return Ok(w);
    }
    let mut s = admin_session(&plan.target).await?;
    Ok(check::loaded_warehouses(&mut s, &plan.target.database).await?)
}

async fn run_check(plan: &Plan, warehouses: u32) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let results = check::check(&plan.target, &plan.schema, warehouses, plan.connections.max(1)).await?;
    print!("{}", check::check_text(&results, warehouses, started.elapsed()));
    Ok(if check::all_passed(&results) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit::CHECK_FAILED)
    })
}

/// `dbperf tpcc run`: the data checked and the run counted, terminals on the engine, and
/// `--check` after a clean run.
impl MeasuredRun for Plan {
    fn name(&self) -> String {
        "tpcc".into()
    }

    async fn before(&mut self, admin: &mut AnySession) -> Result<()> {
        let w = self.warehouses.expect("validated");
        self.c_last_load = tpcc_run::ready(admin, &self.schema, w, &self.target.database).await?;
        Ok(())
    }

    fn drive(&self) -> Drive {
        Drive::Engine(self.shape)
    }

    fn options(&self, _run: Option<&RunConfig>) -> WorkloadOptions {
        let w = self.warehouses.expect("validated");
        WorkloadOptions::Tpcc(tpcc_run::options(
            &self.schema,
            w,
            self.mode,
            self.warehouse_choice,
            self.args.wait_scale,
        ))
    }

    fn seeds(&self) -> serde_json::Value {
        tpcc_run::seeds(self.seed, self.c_last_load, &self.constants())
    }

    fn describe(&self) -> Description {
        Description {
            what: format!(
                "TPC-C {} mode, {} warehouse(s)",
                self.args.mode,
                self.warehouses.expect("validated")
            ),
            users: "terminal",
            rate_of: "trx",
            rand_type: "nurand".into(),
            detail: String::new(),
        }
    }

    fn measure<S: Session + 'static>(&mut self, m: Measurer<'_>) -> Result<Measured> {
        let workload = Arc::new(TpccWorkload::<S> {
            target: m.target().clone(),
            ignore: self.ignore.clone(),
            schema: self.schema,
            warehouses: self.warehouses.expect("validated"),
            mode: self.mode,
            warehouse_choice: self.warehouse_choice,
            wait_scale: self.args.wait_scale,
            constants: self.constants(),
            seed: self.seed,
            session: std::marker::PhantomData,
        });
        m.engine(workload, LiveLine::Custom(Box::new(report::interval_line)))
    }

    fn final_report(&self, outcome: &RunOutcome, summary: &Summary, run: &RunConfig) -> (String, Vec<ReportFile>) {
        TpccReport {
            warehouses: self.warehouses.expect("validated"),
            terminals: run.connections,
            spec_waits: self.mode == Mode::Spec && self.args.wait_scale == 1.0,
        }
        .final_report(outcome, summary)
    }

    fn after(&mut self, code: ExitCode) -> Result<ExitCode> {
        if !(self.args.check && code == ExitCode::SUCCESS) {
            return Ok(code);
        }
        println!();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cpus().min(4))
            .enable_all()
            .build()?;
        rt.block_on(run_check(self, self.warehouses.expect("validated")))
    }
}
