//! `dbperf sysbench TEST COMMAND`: validating the arguments into a plan (second stage)
//! and carrying out prepare, prewarm and cleanup; `run` is the plan's measured run
//! ([`MeasuredRun`]: the tables checked, sysbench's events on the engine).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use dbperf_engine::{RunConfig, RunOutcome};

use super::args::SysbenchArgs;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::pg;
use dbperf_driver::target::Family;
use dbperf_driver::{Session, Target};
use dbperf_report::LiveLine;
use dbperf_results::options::{SysbenchOptions, WorkloadOptions};
use dbperf_results::Summary;
use dbperf_run::args::cpus;
use dbperf_run::measured::Measured;
use dbperf_run::{measured_run, Description, Drive, MeasuredRun, Measurer, RunShape, Shared};
use dbperf_workloads::sysbench::options::OltpRules;
use dbperf_workloads::sysbench::prepare::{self, PrepareConfig};
use dbperf_workloads::sysbench::rand::{Distribution, RandType};
use dbperf_workloads::sysbench::report::SysbenchReport;
use dbperf_workloads::sysbench::{OltpOptions, OltpWorkload, Test};
use dbperf_workloads::{FinalReport, ReportFile};

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
    ignore: IgnoreErrors,
    opts: OltpOptions,
    rand_type: RandType,
    dist: Distribution,
    seed: u64,
    connections: u32,
    shape: RunShape,
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
        let family = target.family;
        if a.db_driver == "pgsql" && family != Family::Postgres {
            bail!(
                "--db-driver=pgsql needs a PostgreSQL target: --target postgres://USER:PASS@HOST:PORT/DB (got {})",
                target.redacted()
            );
        }
        let ignore = match family {
            Family::Mysql => IgnoreErrors::parse(&a.mysql_ignore_errors),
            Family::Postgres => pg::parse_ignore(&a.pgsql_ignore_errors),
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
        opts.validate_for(test, family).map_err(|e| anyhow!(e))?;
        let rand_type: RandType = a.rand_type.parse().map_err(|e| anyhow!("--rand-type: {e}"))?;
        let params = a.rand.params()?;
        let dist = Distribution::new(rand_type, params)?;
        let seed = if a.rand.rand_seed != 0 {
            a.rand.rand_seed
        } else {
            a.run.default_seed()
        };
        let connections = match (&command, a.threads) {
            (_, Some(0)) => bail!("--threads must be at least 1"),
            (_, Some(n)) => n,
            (Command::Prepare | Command::Prewarm, None) => cpus() as u32,
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
        let shape = RunShape {
            connections: connections as usize,
            events: (a.events > 0).then_some(a.events),
            rate_per_connection: false,
            seed,
        };
        // The run flags' errors before anything connects.
        a.run.config(&shape)?;
        Ok(Plan {
            test,
            command,
            target,
            ignore,
            opts,
            rand_type,
            dist,
            seed,
            connections,
            shape,
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
    let mut plan = Plan::from_args(args)?;
    if let Command::Run = plan.command {
        let (target, args) = (plan.target.clone(), plan.args.run.clone());
        return measured_run(&mut plan, Shared::Engine(&args), &target, argv);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus().min(4))
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
        }
        Command::Prewarm => rt.block_on(prepare::prewarm(&plan.prepare_config()?))?,
        Command::Cleanup => rt.block_on(prepare::cleanup(&plan.target, plan.opts.tables, plan.args.force))?,
        Command::Run => unreachable!("measured above"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `dbperf sysbench TEST run`: the tables checked, sysbench's events on the engine.
impl MeasuredRun for Plan {
    fn name(&self) -> String {
        self.test.name().to_string()
    }

    async fn before(&mut self, admin: &mut AnySession) -> Result<()> {
        prepare::check_tables(
            admin,
            self.test,
            self.opts.tables,
            self.target.family,
            &self.target.database,
        )
        .await?;
        Ok(())
    }

    fn drive(&self) -> Drive {
        Drive::Engine(self.shape)
    }

    fn options(&self, _run: Option<&RunConfig>) -> WorkloadOptions {
        WorkloadOptions::Sysbench(SysbenchOptions {
            oltp: self.opts.clone(),
            rand_type: self.rand_type.name().to_string(),
            events: self.args.events,
        })
    }

    fn seeds(&self) -> serde_json::Value {
        serde_json::json!({ "rand_seed": self.seed })
    }

    fn describe(&self) -> Description {
        Description {
            what: self.test.to_string(),
            users: "connection",
            rate_of: "trx",
            rand_type: self.rand_type.name().to_string(),
            detail: format!("; --rand-type={}", self.rand_type.name()),
        }
    }

    fn measure<S: Session + 'static>(&mut self, m: Measurer<'_>) -> Result<Measured> {
        let workload = OltpWorkload::<S>::new(
            self.test,
            self.opts.clone(),
            m.target().clone(),
            self.ignore.clone(),
            self.dist,
            self.connections,
            self.seed,
        )
        .map_err(|e| anyhow!(e))?;
        m.engine(Arc::new(workload), LiveLine::Standard)
    }

    fn final_report(&self, outcome: &RunOutcome, summary: &Summary, run: &RunConfig) -> (String, Vec<ReportFile>) {
        SysbenchReport {
            percentile: self.percentile,
            client_threads: run.client_threads,
            histogram: self.args.histogram,
        }
        .final_report(outcome, summary)
    }
}
