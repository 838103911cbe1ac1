//! `dbperf pgbench init|tpcb-like|simple-update|select-only|cleanup`: pgbench's built-in
//! workloads on PostgreSQL, validated into a plan and run through the shared measured run
//! ([`crate::run`], its report from [`crate::workloads::pgbench::report`]); also the PostgreSQL server facts for the manifest, shared with
//! `dbperf sysbench` on a postgres:// target.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dbperf_engine::Arrival;

use super::args::TargetUrl;
use crate::driver::pg::{self, PgSession};
use crate::driver::pgwire::PgWireSession;
use crate::driver::target::Scheme;
use crate::driver::{Session, Target};
use crate::results::ServerFacts;
use crate::run::args::record_run_options;
use crate::run::client::Client;
use crate::run::record::LiveLine;
use crate::run::session::{self as measure, MeasureSpec};
use crate::run::{RunArgs, RunFlags, RunShape};
use crate::workloads::pgbench::init::{self, InitConfig};
use crate::workloads::pgbench::report::PgbenchReport;
use crate::workloads::pgbench::{PgbenchWorkload, Script};

/// `dbperf pgbench COMMAND`, with pgbench's short options where it has them.
/// pgbench's spellings of the shared run flags: `-T`, `-R`, `-P`/`--progress`, `-j`/`--jobs`.
#[derive(Debug, Clone)]
pub struct PgbenchFlags;

impl RunFlags for PgbenchFlags {
    const TIME_SHORT: Option<char> = Some('T');
    const TIME_DEFAULT: &'static str = "10";
    const TIME_HELP: &'static str = "Measured run time in seconds (0 = no limit; then --transactions is needed)";
    const WARMUP_HELP: &'static str = "Seconds to run before measuring";
    const RATE_SHORT: Option<char> = Some('R');
    const RATE_HELP: &'static str =
        "Open loop: total transactions per second, Poisson arrivals as pgbench's -R (0 = closed loop)";
    const INTERVAL_LONG: &'static str = "progress";
    const INTERVAL_VALUE: &'static str = "PROGRESS";
    const INTERVAL_SHORT: Option<char> = Some('P');
    const INTERVAL_DEFAULT: &'static str = "0";
    const INTERVAL_HELP: &'static str =
        "Seconds between live lines (pgbench's -P), each over the whole interval; 0 = none. \
        Intervals are stored each second (finer when this is under 1 s)";
    const THREADS_LONG: &'static str = "jobs";
    const THREADS_VALUE: &'static str = "JOBS";
    const THREADS_SHORT: Option<char> = Some('j');
    const THREADS_HELP: &'static str =
        "Client threads (pgbench's jobs) sharing the clients with --client-io async; default: the CPUs";
    const IO_HELP: &'static str = "How the client waits for replies: blocking (a thread per client sleeping in the \
        kernel until its reply arrives: the least CPU per transaction), async (--jobs event loops sharing the \
        clients: needed by --rate), or auto (blocking in closed loop up to 128 clients, unless --jobs is given)";
}

#[derive(Debug, Args)]
pub struct PgbenchArgs {
    /// init, tpcb-like, simple-update, select-only, or cleanup.
    pub command: String,
    /// Where to connect (--target, DBPERF_TARGET or --target-file): postgres://USER:PASS@HOST:PORT/DB[?host=/socket/dir] or sandbox:NAME.
    #[command(flatten)]
    pub target: TargetUrl,
    /// init: scale factor (1 branch, 10 tellers, 100,000 accounts per unit).
    #[arg(short = 's', long, default_value_t = 1)]
    pub scale: u32,
    /// init: fillfactor of accounts, tellers and branches (10..100).
    #[arg(short = 'F', long, default_value_t = 100)]
    pub fillfactor: u32,
    /// init: create unlogged tables.
    #[arg(long)]
    pub unlogged_tables: bool,
    /// Connections (pgbench's clients).
    #[arg(value_parser = clap::value_parser!(u32).range(1..=crate::bounds::MAX_CONNECTIONS as i64), short = 'c', long, default_value_t = 1)]
    pub clients: u32,
    /// Time (-T), rate (-R), warmup, jobs (-j), client I/O, progress (-P), results directory and telemetry.
    #[command(flatten)]
    pub run: RunArgs<PgbenchFlags>,
    /// Transactions per client (pgbench's -t); 0 = no limit.
    #[arg(short = 't', long, default_value_t = 0)]
    pub transactions: u64,
    /// Seed of the random draws (pgbench's --random-seed); default: from the clock.
    #[arg(long)]
    pub random_seed: Option<u64>,
    /// Client: wire (dbperf's lean PostgreSQL session, default) or tokio-postgres.
    #[arg(long, default_value = "wire")]
    pub client_impl: String,
    /// SQLSTATEs to retry after a rollback, 'none' or 'all'.
    #[arg(long, default_value = "40P01,40001,23505")]
    pub pgsql_ignore_errors: String,
    /// Seconds to wait for in-flight transactions at the end.
    #[arg(value_parser = crate::bounds::secs_flag, long, default_value_t = 5.0)]
    pub shutdown_grace: f64,
    /// cleanup: also drop pgbench tables dbperf did not create.
    #[arg(long)]
    pub force: bool,
}

/// Runs a pgbench command; `argv` is the whole command line, for the manifest.
pub fn run(a: PgbenchArgs, argv: &[String]) -> Result<ExitCode> {
    let Some(target) = a.target.resolve()? else {
        bail!("no server given: use --target postgres://USER:PASS@HOST:PORT/DB (or sandbox:NAME), DBPERF_TARGET or --target-file");
    };
    if target.scheme != Scheme::Postgres {
        bail!(
            "dbperf pgbench needs a PostgreSQL target: --target postgres://USER:PASS@HOST:PORT/DB (got {})",
            target.redacted()
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match a.command.as_str() {
        "init" => {
            let r = rt.block_on(init::init(&InitConfig {
                target,
                scale: a.scale,
                fillfactor: a.fillfactor,
                unlogged: a.unlogged_tables,
            }))?;
            println!(
                "done in {:.2} s ({} accounts; generate {:.2} s, vacuum and primary keys {:.2} s)",
                r.elapsed.as_secs_f64(),
                r.accounts,
                r.generate.as_secs_f64(),
                (r.elapsed - r.generate).as_secs_f64()
            );
            Ok(ExitCode::SUCCESS)
        }
        "cleanup" => {
            rt.block_on(init::cleanup(&target, a.force))?;
            Ok(ExitCode::SUCCESS)
        }
        other => {
            let script: Script = other.parse().map_err(|e: String| anyhow!("{e}, or init / cleanup"))?;
            let ignore = pg::parse_ignore(&a.pgsql_ignore_errors).map_err(|e| anyhow!(e))?;
            let client = Client::choose(&a.client_impl, target.scheme).map_err(|e| anyhow!(e))?;
            let (facts, scale) = rt.block_on(async {
                let mut s = PgWireSession::connect(&target, ignore.clone()).await?;
                let facts = measure::server_facts(&mut s, target.scheme).await?;
                let scale = init::scale_of(&mut s).await?;
                anyhow::Ok((facts, scale))
            })?;
            drop(rt);
            match client {
                Client::TokioPostgres => run_script::<PgSession>(&a, script, target, ignore, facts, scale, argv),
                // A MySQL client was refused by Client::choose for this PostgreSQL target.
                _ => run_script::<PgWireSession>(&a, script, target, ignore, facts, scale, argv),
            }
        }
    }
}

fn run_script<S: Session + 'static>(
    a: &PgbenchArgs,
    script: Script,
    target: Target,
    ignore: crate::driver::mysql::IgnoreErrors,
    facts: ServerFacts,
    scale: i64,
    argv: &[String],
) -> Result<ExitCode> {
    if a.clients == 0 {
        bail!("--clients must be at least 1");
    }
    if a.run.time == 0 && a.transactions == 0 {
        bail!("the run has no end: give --time (seconds) or --transactions (per client)");
    }
    let seed = a.random_seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let run = a.run.config(&RunShape {
        connections: a.clients as usize,
        events: (a.transactions > 0).then_some(a.transactions * a.clients as u64),
        arrival: "poisson",
        rate_per_connection: false,
        shutdown_grace: Some(a.shutdown_grace),
        seed,
    })?;
    let workload = Arc::new(PgbenchWorkload::<S>::new(script, scale, target.clone(), ignore, seed));
    let mut options = serde_json::Map::new();
    options.insert("script".into(), script.name().into());
    options.insert("scale".into(), scale.into());
    options.insert("clients".into(), a.clients.into());
    options.insert("jobs".into(), run.client_threads.into());
    record_run_options(&run, &mut options);
    options.insert("time_s".into(), a.run.time.into());
    options.insert("transactions_per_client".into(), a.transactions.into());
    options.insert("warmup_s".into(), a.run.warmup_time.into());
    options.insert("protocol".into(), "prepared".into());
    options.insert("client_impl".into(), a.client_impl.clone().into());
    a.run.out.record_options(&mut options);
    let name = format!("pgbench_{}", script.name().replace('-', "_"));
    let version = facts.version.clone();
    let banner = |dir: &std::path::Path| {
        format!(
            "dbperf {} — pgbench {} (scale {scale}) on {} (PostgreSQL {version}), {} client(s), {}; results in {}",
            env!("CARGO_PKG_VERSION"),
            script.name(),
            target.endpoint(),
            a.clients,
            match run.arrival {
                Arrival::Closed => "closed loop".to_string(),
                r => format!("open loop at {} trx/s (poisson arrivals)", r.rate().unwrap_or(0.0)),
            },
            dir.display()
        )
    };
    let spec = MeasureSpec {
        results_dir: &a.run.out.results_dir,
        name: &name,
        options,
        seeds: serde_json::json!({ "random_seed": seed }),
        target: &target,
        facts,
        run: &run,
        print_every: a.run.print_every(),
        telemetry: a.run.out.telemetry(&target),
        rand_type: "uniform",
        threads: a.clients,
        banner: &banner,
        live: LiveLine::Standard,
        metrics_addr: a.run.out.metrics_addr.as_deref(),
        settle: a.run.out.settle(),
    };
    let m = measure::measure(spec, workload, argv)?;
    let report = PgbenchReport {
        client_threads: run.client_threads,
    };
    Ok(measure::conclude(m, a.run.out.summary_json.as_ref(), &report))
}
