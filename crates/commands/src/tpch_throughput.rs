//! `dbperf tpch throughput`: the throughput test into its own run directory, with
//! Throughput@Size, and QphH@Size when a power run is named with `--power`; through the
//! client's network namespace (`--client-netns`), or as one shard of a test spread over
//! several clients (`--shard I/N --start-at TIME`: this client's share of the streams).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::tpch::{runtime, ConnArgs};
use super::tpch_run::{exit_code, server_facts, timeout};
use dbperf_core::interrupt::on_interrupt;
use dbperf_results::RunDir;
use dbperf_run::args::PlaceArgs;
use dbperf_run::place::{shard_record, ClientPath};
use dbperf_run::{RunSession, SessionSpec};
use dbperf_workloads::tpch::load::data_scale_factor;
use dbperf_workloads::tpch::metrics::min_streams;
use dbperf_workloads::tpch::power::{PowerReport, TPCH_FILE};
use dbperf_workloads::tpch::qgen::{seed_at, time_seed};
use dbperf_workloads::tpch::report;
use dbperf_workloads::tpch::throughput::{self, ThroughputConfig};

/// `dbperf tpch throughput`.
#[derive(Debug, Args)]
pub struct ThroughputArgs {
    /// Query streams (default: the spec's minimum for the scale factor, 2 at SF 1).
    #[arg(value_parser = clap::value_parser!(u32).range(1..=dbperf_core::bounds::MAX_CONNECTIONS as i64), long)]
    pub streams: Option<u32>,
    /// Scale factor of the loaded data (default: read from the supplier table).
    #[arg(long, visible_alias = "sf")]
    pub scale_factor: Option<f64>,
    /// qgen seed; stream s uses seed + s (default: the time as MMDDhhmmss; with --start-at,
    /// that time, the same in every shard).
    #[arg(long)]
    pub seed: Option<i64>,
    /// Use the spec's validation parameters in every stream.
    #[arg(long)]
    pub validation: bool,
    /// Cancel a query on the server after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Skip the refresh stream.
    #[arg(long)]
    pub no_refresh: bool,
    /// A power run (directory or run id) of the same data, for QphH@Size.
    #[arg(long, value_name = "RUN")]
    pub power: Option<String>,
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Where the client stands.
    #[command(flatten)]
    pub place: PlaceArgs,
}

/// Runs `dbperf tpch throughput`.
pub fn run(a: ThroughputArgs, argv: &[String]) -> Result<ExitCode> {
    let target = a.conn.target()?;
    let power = match &a.power {
        None => None,
        Some(run) => {
            let given = PathBuf::from(run);
            let path = if given.is_dir() { given } else { a.results_dir.join(run) };
            let report: PowerReport = RunDir::open(&path)?
                .read_json(TPCH_FILE)
                .with_context(|| format!("--power {run}: not a TPC-H power run directory"))?;
            Some(report)
        }
    };
    let rt = runtime()?;
    let sf = rt.block_on(data_scale_factor(&target, a.scale_factor))?;
    let streams = a.streams.unwrap_or_else(|| min_streams(sf));
    if streams == 0 {
        bail!(
            "--streams 0: give at least 1 query stream (the spec's minimum at SF {sf} is {})",
            min_streams(sf)
        );
    }
    let start_at = a.place.start_at()?;
    // Without --seed, the time as DBT-3 takes it: that of --start-at when given, so every
    // shard generates the queries of the same test.
    let seed = a.seed.unwrap_or_else(|| start_at.map_or_else(time_seed, seed_at));
    dbperf_workloads::tpch::qgen::check_seed(seed)?;
    let shard = match (a.place.shard, start_at) {
        (Some(s), Some(at)) => {
            Some(shard_record(u64::from(streams), s, at, "query streams").map_err(anyhow::Error::msg)?)
        }
        (Some(_), None) => bail!("--shard needs --start-at: the instant every shard starts its streams"),
        (None, _) => None,
    };
    let facts = rt.block_on(server_facts(&target))?;
    let path = ClientPath::open(&target, a.place.client_netns.as_ref(), &facts)?;
    let cfg = ThroughputConfig {
        target: path.target.clone(),
        dialect: a.conn.dialect()?,
        sf,
        seed,
        streams,
        shard: shard.clone(),
        start_at,
        validation: a.validation,
        timeout: timeout(a.timeout)?,
        refresh: !a.no_refresh,
        stop: Arc::new(AtomicBool::new(false)),
    };
    let mut options = serde_json::Map::new();
    options.insert("scale_factor".into(), sf.into());
    options.insert("streams".into(), streams.into());
    options.insert("validation".into(), a.validation.into());
    options.insert("timeout_seconds".into(), a.timeout.into());
    options.insert("refresh".into(), cfg.refresh.into());
    let session = RunSession::create(SessionSpec {
        results_dir: &a.results_dir,
        name: "tpch-throughput",
        argv,
        options,
        seeds: serde_json::json!({ "qgen": seed }),
        target: &target,
        facts,
        network: Some(path.record.clone()),
        shard: shard.clone(),
    })?;
    let dir = session.dir();
    let share = match &shard {
        Some(r) => format!(
            ", shard {}/{}: streams {}..{}{}",
            r.index,
            r.count,
            cfg.stream_numbers().start(),
            cfg.stream_numbers().end(),
            if cfg.runs_refresh() {
                " and the refresh stream"
            } else {
                ""
            }
        ),
        None => String::new(),
    };
    eprintln!(
        "TPC-H throughput test: SF {sf}, {streams} streams{share}, seed {seed}, {}, run directory {}",
        path.describe(),
        dir.path().display()
    );
    let stop = Arc::clone(&cfg.stop);
    on_interrupt(
        "Stopping each stream after its query in progress; the finished queries are kept",
        "exiting now; tpch.json is not written",
        move || stop.store(true, Ordering::Relaxed),
    );
    let report = path.run_inside(|| -> Result<_> {
        // The streams' runtime is started inside the client's namespace, so its threads are too.
        Ok(runtime()?.block_on(throughput::run(&cfg, |line| eprintln!("{line}")))?)
    })??;
    dir.write_json(TPCH_FILE, &report)?;
    let dir = session.end(&[]);
    print!("{}", report::throughput_text(&report, power.as_ref()));
    println!("run directory: {}", dir.path().display());
    Ok(exit_code(report.interrupted))
}
