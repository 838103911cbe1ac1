//! `dbperf tpcc prepare|run|check|cleanup`: the arguments (first stage), their validation
//! into a plan (second stage), and the commands. `run` goes through the shared measured-run
//! layer ([`dbperf_run`]); its TPC-C lines and report are in [`dbperf_workloads::tpcc::report`].

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dbperf_engine::{Arrival, RunConfig};

use super::args::TargetUrl;
use dbperf_driver::mysql::{IgnoreErrors, MysqlSession};
use dbperf_driver::pg::PgSession;
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::target::Scheme;
use dbperf_driver::wire::WireSession;
use dbperf_driver::{Session, Target};
use dbperf_report::LiveLine;
use dbperf_results::ServerFacts;
use dbperf_run::args::{cpus, record_run_options};
use dbperf_run::client::Client;
use dbperf_run::session::{self as measure, MeasureSpec};
use dbperf_run::{RunArgs, RunFlags, RunShape};
use dbperf_workloads::tpcc::check;
use dbperf_workloads::tpcc::prepare::{self, PrepareConfig};
use dbperf_workloads::tpcc::rand::NuConstants;
use dbperf_workloads::tpcc::report::{self, TpccReport};
use dbperf_workloads::tpcc::schema::{Schema, SchemaKind};
use dbperf_workloads::tpcc::{Mode, TpccWorkload, WarehouseChoice};
use dbperf_workloads::LoadMethod;

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

/// Exit code of `check` (and `run --check`) when a consistency condition fails.
pub const EXIT_CHECK_FAILED: u8 = 4;

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
    const THREADS_HELP: &'static str =
        "OS threads driving the connections with --client-io async (default: one per CPU)";
    const IO_HELP: &'static str =
        "How the client waits for replies: blocking (a thread per connection sleeping in the \
        kernel until its reply arrives: the least CPU per transaction), async (--client-threads event loops sharing \
        the connections: needed by --rate, lighter for very many connections), or auto (blocking in closed loop up to \
        128 connections)";
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
    /// Open-loop arrivals: poisson or fixed.
    #[arg(long, default_value = "poisson")]
    pub arrival: String,
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
    /// Client: wire (dbperf's lean session, default), mysql_async (MySQL) or tokio-postgres (PostgreSQL).
    #[arg(long, default_value = "wire")]
    pub client_impl: String,
    /// Seconds in-flight transactions may take to finish after --time.
    #[arg(value_parser = dbperf_core::bounds::secs_flag, long, default_value_t = 5.0)]
    pub shutdown_grace: f64,
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
    client: Client,
    schema: Schema,
    warehouses: Option<u32>,
    connections: u32,
    mode: Mode,
    warehouse_choice: WarehouseChoice,
    seed: u64,
    ignore: IgnoreErrors,
    run: RunConfig,
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
        if kind == SchemaKind::TpccMysql && target.scheme == Scheme::Postgres {
            bail!("--schema tpcc-mysql is tpcc-mysql's MySQL schema; on PostgreSQL use the default --schema dbperf");
        }
        let schema = Schema {
            kind,
            history_pk: a.history_pk,
            scheme: target.scheme,
        };
        let mode: Mode = a.mode.parse().map_err(|e: String| anyhow!(e))?;
        let warehouse_choice: WarehouseChoice = a.warehouse_choice.parse().map_err(|e: String| anyhow!(e))?;
        if warehouse_choice == WarehouseChoice::PerTransaction && mode == Mode::Spec {
            bail!(
                "--warehouse-choice per-transaction is for --mode max; spec mode's terminals each keep \
                 their warehouse and district (clause 2.4.1.1)"
            );
        }
        if matches!(command, Command::Prepare | Command::Run) && a.warehouses.is_none() {
            bail!("--warehouses is needed for {}: e.g. --warehouses 10", a.command);
        }
        if a.warehouses == Some(0) {
            bail!("--warehouses must be at least 1");
        }
        if a.threads == Some(0) {
            bail!("--threads must be at least 1");
        }
        if !(a.wait_scale.is_finite() && a.wait_scale >= 0.0) {
            bail!("--wait-scale must be a number >= 0 (1 = the spec's keying and think times)");
        }
        if a.run.report_interval <= 0.0 || !a.run.report_interval.is_finite() {
            bail!("--report-interval must be a positive number of seconds (default 10)");
        }
        if command == Command::Run && a.run.time == 0 {
            bail!("--time must be at least 1 second");
        }
        let w = a.warehouses.unwrap_or(1);
        let connections = match (command, mode, a.threads) {
            (Command::Run, Mode::Spec, Some(n)) if n != 10 * w => bail!(
                "--mode spec runs 10 terminals per warehouse ({}); drop --threads, or use --mode max for {n} connections",
                10 * w
            ),
            (Command::Run, Mode::Spec, _) => 10 * w,
            (Command::Run, Mode::Max, t) => t.unwrap_or(w),
            (_, _, t) => t.unwrap_or(cpus() as u32),
        };
        if a.run.rate > 0.0 && mode == Mode::Spec {
            bail!("--rate is for --mode max; spec mode paces each terminal with keying and think times")
        }
        let seed = match (command, a.seed) {
            (_, Some(s)) if s != 0 => s,
            (Command::Prepare, _) => 1,
            _ => a.run.default_seed(),
        };
        let ignore = IgnoreErrors::parse(&a.mysql_ignore_errors).map_err(|e| anyhow!(e))?;
        let client = Client::choose(&a.client_impl, target.scheme).map_err(|e| anyhow!(e))?;
        let run = a.run.config(&RunShape {
            connections: connections as usize,
            events: None,
            arrival: &a.arrival,
            rate_per_connection: false,
            shutdown_grace: Some(a.shutdown_grace),
            seed,
        })?;
        Ok(Plan {
            command,
            target,
            client,
            schema,
            warehouses: a.warehouses,
            connections,
            mode,
            warehouse_choice,
            seed,
            ignore,
            run,
            args: a,
        })
    }
}

/// Runs a tpcc command; `argv` is the whole command line, for the manifest.
pub fn run(args: TpccArgs, argv: &[String]) -> Result<ExitCode> {
    let plan = Plan::from_args(args)?;
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
        Command::Run => {
            let (facts, c_last_load) = rt.block_on(before_run(&plan))?;
            let code = match plan.client {
                Client::MysqlWire => run_benchmark::<WireSession>(&plan, facts, c_last_load, argv)?,
                Client::MysqlAsync => run_benchmark::<MysqlSession>(&plan, facts, c_last_load, argv)?,
                Client::PgWire => run_benchmark::<PgWireSession>(&plan, facts, c_last_load, argv)?,
                Client::TokioPostgres => run_benchmark::<PgSession>(&plan, facts, c_last_load, argv)?,
            };
            if plan.args.check && code == ExitCode::SUCCESS {
                println!();
                return rt.block_on(run_check(&plan, plan.warehouses.expect("validated")));
            }
            Ok(code)
        }
    }
}

/// Warehouses to check: `--warehouses`, else those loaded.
async fn loaded_warehouses(plan: &Plan) -> Result<u32> {
    if let Some(w) = plan.warehouses {
        return Ok(w);
    }
    let mut s = measure::admin_session(&plan.target).await?;
    Ok(check::loaded_warehouses(&mut s, &plan.target.database).await?)
}

async fn run_check(plan: &Plan, warehouses: u32) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let results = check::check(&plan.target, &plan.schema, warehouses, plan.connections.max(1)).await?;
    print!("{}", check::check_text(&results, warehouses, started.elapsed()));
    Ok(if check::all_passed(&results) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_CHECK_FAILED)
    })
}

/// Server facts, a check that the data is there, C_LAST of the load, and the run counted
/// in the bookkeeping (so `check` knows 3.3.2.11 no longer applies).
async fn before_run(plan: &Plan) -> Result<(ServerFacts, Option<i64>)> {
    let w = plan.warehouses.expect("validated");
    let mut s = measure::admin_session(&plan.target).await?;
    let facts = measure::server_facts(&mut s, plan.target.scheme).await?;
    let c_last_load = prepare::ready_for_run(&mut s, &plan.schema, w, &plan.target.database).await?;
    if c_last_load.is_none() {
        eprintln!("note: no dbperf bookkeeping in {}: C_LAST of the load is unknown, so the C-Run/C-Load delta rule (clause 2.1.6.1) is applied against a guess", plan.target.database);
    }
    Ok((facts, c_last_load))
}

fn run_benchmark<S: Session + 'static>(
    plan: &Plan,
    facts: ServerFacts,
    c_last_load: Option<i64>,
    argv: &[String],
) -> Result<ExitCode> {
    let w = plan.warehouses.expect("validated");
    let load_c = c_last_load.unwrap_or_else(|| NuConstants::for_load(plan.seed).c_last);
    let constants = NuConstants::for_run(plan.seed, load_c);
    let a = &plan.args;
    let mut options = serde_json::Map::new();
    options.insert("warehouses".into(), w.into());
    options.insert("mode".into(), serde_json::to_value(plan.mode)?);
    options.insert("warehouse_choice".into(), serde_json::to_value(plan.warehouse_choice)?);
    options.insert("schema".into(), plan.schema.kind.to_string().into());
    options.insert("connections".into(), plan.connections.into());
    record_run_options(&plan.run, &mut options);
    options.insert("wait_scale".into(), a.wait_scale.into());
    options.insert("client_impl".into(), a.client_impl.clone().into());
    a.run.out.record_options(&mut options);
    options.insert("time_s".into(), a.run.time.into());
    options.insert("warmup_s".into(), a.run.warmup_time.into());
    options.insert("delivery".into(), "inline".into());
    let mut run = plan.run.clone();
    let place = a.run.place(&plan.target, &facts, &mut run)?;
    let workload = Arc::new(TpccWorkload::<S> {
        target: place.path.target.clone(),
        ignore: plan.ignore.clone(),
        schema: plan.schema,
        warehouses: w,
        mode: plan.mode,
        warehouse_choice: plan.warehouse_choice,
        wait_scale: plan.args.wait_scale,
        constants,
        seed: plan.seed,
        session: std::marker::PhantomData,
    });
    let seeds = serde_json::json!({
        "rand_seed": plan.seed,
        "c_last_load": c_last_load,
        "c_last_run": constants.c_last,
        "c_id": constants.c_id,
        "ol_i_id": constants.ol_i_id,
    });
    let version = facts.version.clone();
    let banner = |dir: &std::path::Path| {
        format!(
            "dbperf {} — TPC-C {} mode, {w} warehouse(s), {} terminal(s) on {} ({version}){}; results in {}",
            env!("CARGO_PKG_VERSION"),
            a.mode,
            plan.connections,
            plan.target.endpoint(),
            match plan.run.arrival {
                Arrival::Closed => String::new(),
                r => format!(", open loop at {} trx/s", r.rate().unwrap_or(0.0)),
            },
            dir.display()
        )
    };
    let spec = MeasureSpec {
        results_dir: &a.run.out.results_dir,
        name: "tpcc",
        options,
        seeds,
        target: &plan.target,
        facts,
        run: &run,
        print_every: 1,
        telemetry: a.run.out.telemetry(&plan.target),
        rand_type: "nurand",
        threads: plan.connections,
        banner: &banner,
        live: LiveLine::Custom(Box::new(report::interval_line)),
        metrics_addr: a.run.out.metrics_addr.as_deref(),
        settle: a.run.out.settle(),
        place,
    };
    let m = measure::measure(spec, workload, argv)?;
    let report = TpccReport {
        warehouses: w,
        terminals: run.connections,
        spec_waits: plan.mode == Mode::Spec && a.wait_scale == 1.0,
    };
    Ok(measure::conclude(m, a.run.out.summary_json.as_ref(), &report))
}
