//! `dbperf sysbench TEST COMMAND`: validating the arguments into a plan (second stage)
//! and carrying out prepare, prewarm, run and cleanup.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use dbperf_engine::{Arrival, RunConfig};

use super::args::SysbenchArgs;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::{IgnoreErrors, MysqlSession};
use dbperf_driver::pg::{self, PgSession};
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::wire::WireSession;
use dbperf_driver::{Session, Target};
use dbperf_report::LiveLine;
use dbperf_results::ServerFacts;
use dbperf_run::args::record_run_options;
use dbperf_run::client::Client;
use dbperf_run::session::{self as measure, MeasureSpec};
use dbperf_run::RunShape;
use dbperf_workloads::sysbench::prepare::{self, PrepareConfig};
use dbperf_workloads::sysbench::rand::{Distribution, RandType};
use dbperf_workloads::sysbench::report::SysbenchReport;
use dbperf_workloads::sysbench::schema::Dialect;
use dbperf_workloads::sysbench::{OltpOptions, OltpWorkload, Test};

/// What the user asked for, validated.
#[derive(Debug)]
enum Command {
    Prepare,
    Prewarm,
    Run,
    Cleanup,
}

/// A validated sysbench invocation.
struct Plan {
    test: Test,
    command: Command,
    target: Target,
    client: Client,
    ignore: IgnoreErrors,
    opts: OltpOptions,
    rand_type: RandType,
    dist: Distribution,
    seed: u64,
    connections: u32,
    run: RunConfig,
    report_every: u32,
    percentile: f64,
    args: SysbenchArgs,
}

impl Plan {
    fn from_args(a: SysbenchArgs) -> Result<Plan> {
        let test: Test = a.test.parse().map_err(|e: String| anyhow!(e))?;
        let command = match a.command.as_str() {
            "prepare" => Command::Prepare,
            "prewarm" | "warmup" => Command::Prewarm,
            "run" => Command::Run,
            "cleanup" => Command::Cleanup,
            other => bail!("unknown command {other:?}: use prepare, run, cleanup or prewarm"),
        };
        if !matches!(a.db_driver.as_str(), "mysql" | "pgsql") {
            bail!(
                "--db-driver={} is not supported: use mysql (MySQL, MariaDB, Percona Server) or pgsql (PostgreSQL)",
                a.db_driver
            );
        }
        if a.db_ps_mode != "auto" {
            bail!(
                "--db-ps-mode={} is not supported: dbperf always uses server-side prepared statements (auto)",
                a.db_ps_mode
            );
        }
        let target = resolve_target(&a)?;
        let client = Client::choose(&a.client_impl, target.scheme).map_err(|e| anyhow!(e))?;
        let dialect = Dialect::of(target.scheme);
        if a.db_driver == "pgsql" && dialect != Dialect::Postgres {
            bail!(
                "--db-driver=pgsql needs a PostgreSQL target: --target postgres://USER:PASS@HOST:PORT/DB (got {})",
                target.redacted()
            );
        }
        let ignore = match dialect {
            Dialect::Mysql => IgnoreErrors::parse(&a.mysql_ignore_errors),
            Dialect::Postgres => pg::parse_ignore(&a.pgsql_ignore_errors),
        }
        .map_err(|e| anyhow!(e))?;
        if let Some(v) = &a.pgsql_variant {
            eprintln!(
                "note: --pgsql-variant={v} changes nothing, as in sysbench 1.0.20 (its oltp_common.lua never reads the option)"
            );
        }
        let opts = OltpOptions {
            tables: a.tables,
            table_size: a.table_size,
            range_size: a.range_size,
            point_selects: a.point_selects,
            simple_ranges: a.simple_ranges,
            sum_ranges: a.sum_ranges,
            order_ranges: a.order_ranges,
            distinct_ranges: a.distinct_ranges,
            index_updates: a.index_updates,
            non_index_updates: a.non_index_updates,
            delete_inserts: a.delete_inserts,
            range_selects: a.range_selects,
            auto_inc: a.auto_inc,
            skip_trx: a.skip_trx,
            secondary: a.secondary,
            create_secondary: a.create_secondary,
            mysql_storage_engine: a.mysql_storage_engine.clone(),
            create_table_options: a.create_table_options.clone(),
            reconnect: a.reconnect,
            random_points: a.random_points,
            number_of_ranges: a.number_of_ranges,
            delta: a.delta,
        };
        opts.validate_for(test, dialect).map_err(|e| anyhow!(e))?;
        let rand_type: RandType = a.rand_type.parse().map_err(|e| anyhow!("--rand-type: {e}"))?;
        let params = a.rand.params()?;
        let dist = Distribution::new(rand_type, params)?;
        let seed = if a.rand.rand_seed != 0 {
            a.rand.rand_seed
        } else {
            a.run.default_seed()
        };
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let connections = match (&command, a.threads) {
            (_, Some(0)) => bail!("--threads must be at least 1"),
            (_, Some(n)) => n,
            (Command::Prepare | Command::Prewarm, None) => cpus as u32,
            (_, None) => 1,
        };
        if a.run.time == 0 && a.events == 0 && matches!(command, Command::Run) {
            bail!("the run has no end: give --time (seconds) or --events (count)");
        }
        if !(a.percentile > 0.0 && a.percentile < 100.0) {
            bail!(
                "--percentile must be between 0 and 100 (exclusive), got {}",
                a.percentile
            );
        }
        let run = a.run.config(&RunShape {
            connections: connections as usize,
            events: (a.events > 0).then_some(a.events),
            arrival: &a.arrival,
            rate_per_connection: false,
            shutdown_grace: Some(a.shutdown_grace),
            seed,
        })?;
        Ok(Plan {
            test,
            command,
            target,
            client,
            ignore,
            opts,
            rand_type,
            dist,
            seed,
            connections,
            run,
            report_every: a.run.print_every(),
            percentile: a.percentile,
            args: a,
        })
    }

    fn prepare_config(&self) -> Result<PrepareConfig> {
        Ok(PrepareConfig {
            test: self.test,
            opts: self.opts.clone(),
            target: self.target.clone(),
            connections: self.connections,
            k_sampler: self.dist.sampler(1, self.opts.table_size.max(1))?,
            seed: self.seed,
            seed_given: self.args.rand.rand_seed != 0,
            progress: true,
        })
    }
}

fn resolve_target(a: &SysbenchArgs) -> Result<Target> {
    a.server.resolve()
}

/// Runs a sysbench command; `argv` is the whole command line, for the manifest.
pub fn run(args: SysbenchArgs, argv: &[String]) -> Result<ExitCode> {
    let plan = Plan::from_args(args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2)
                .min(4),
        )
        .enable_all()
        .build()?;
    match plan.command {
        Command::Prepare => {
            let cfg = plan.prepare_config()?;
            let r = rt.block_on(prepare::prepare(&cfg))?;
            let secs = r.elapsed.as_secs_f64();
            println!(
                "Prepared {} table(s), {} rows in {:.1} s ({:.0} rows/s) with {} connection(s); secondary index builds took {:.1} s in total, overlapping the load",
                r.tables,
                r.rows,
                secs,
                r.rows as f64 / secs.max(1e-9),
                plan.connections,
                r.index.as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Prewarm => {
            rt.block_on(prepare::prewarm(&plan.prepare_config()?))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Cleanup => {
            rt.block_on(prepare::cleanup(&plan.target, plan.opts.tables, plan.args.force))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Run => {
            let facts = rt.block_on(server_facts(&plan))?;
            drop(rt);
            match plan.client {
                Client::MysqlWire => run_benchmark::<WireSession>(plan, facts, argv),
                Client::MysqlAsync => run_benchmark::<MysqlSession>(plan, facts, argv),
                Client::PgWire => run_benchmark::<PgWireSession>(plan, facts, argv),
                Client::TokioPostgres => run_benchmark::<PgSession>(plan, facts, argv),
            }
        }
    }
}

/// Server version and variables, and a check that the tables exist.
async fn server_facts(plan: &Plan) -> Result<ServerFacts> {
    let dialect = Dialect::of(plan.target.scheme);
    let mut s = AnySession::connect(&plan.target, plan.ignore.clone()).await?;
    let facts = measure::server_facts(&mut s, plan.target.scheme).await?;
    prepare::check_tables(&mut s, plan.test, plan.opts.tables, dialect, &plan.target.database).await?;
    Ok(facts)
}

fn run_benchmark<S: Session + 'static>(mut plan: Plan, facts: ServerFacts, argv: &[String]) -> Result<ExitCode> {
    let mut options = serde_json::to_value(&plan.opts)?
        .as_object()
        .cloned()
        .unwrap_or_default();
    options.insert("rand_type".into(), plan.rand_type.name().into());
    options.insert("connections".into(), plan.connections.into());
    record_run_options(&plan.run, &mut options);
    options.insert("client_impl".into(), plan.args.client_impl.clone().into());
    options.insert("time_s".into(), plan.args.run.time.into());
    options.insert("warmup_s".into(), plan.args.run.warmup_time.into());
    options.insert("events".into(), plan.args.events.into());
    plan.args.run.out.record_options(&mut options);
    let place = plan.args.run.place(&plan.target, &facts, &mut plan.run)?;
    let workload = Arc::new(
        OltpWorkload::<S>::new(
            plan.test,
            plan.opts.clone(),
            place.path.target.clone(),
            plan.ignore.clone(),
            plan.dist,
            plan.connections,
            plan.seed,
        )
        .map_err(|e| anyhow!(e))?,
    );
    let server_version = facts.version.clone();
    let banner = |dir: &std::path::Path| {
        format!(
            "dbperf {} — {} on {} ({}), {} connection(s), {}; --rand-type={}; results in {}",
            env!("CARGO_PKG_VERSION"),
            plan.test,
            plan.target.endpoint(),
            server_version,
            plan.connections,
            match plan.run.arrival {
                Arrival::Closed => "closed loop".to_string(),
                a => format!("open loop at {} trx/s ({} arrivals)", a.rate().unwrap_or(0.0), a.name()),
            },
            plan.rand_type.name(),
            dir.display()
        )
    };
    let a = &plan.args;
    let spec = MeasureSpec {
        results_dir: &a.run.out.results_dir,
        name: plan.test.name(),
        options,
        seeds: serde_json::json!({ "rand_seed": plan.seed }),
        target: &plan.target,
        facts,
        run: &plan.run,
        print_every: plan.report_every,
        telemetry: a.run.out.telemetry(&plan.target),
        rand_type: plan.rand_type.name(),
        threads: plan.connections,
        banner: &banner,
        live: LiveLine::Standard,
        metrics_addr: a.run.out.metrics_addr.as_deref(),
        settle: a.run.out.settle(),
        place,
    };
    let m = measure::measure(spec, workload, argv)?;
    let report = SysbenchReport {
        percentile: plan.percentile,
        client_threads: plan.run.client_threads,
        histogram: plan.args.histogram,
    };
    Ok(measure::conclude(m, a.run.out.summary_json.as_ref(), &report))
}
