//! `dbperf tpch throughput`: the throughput test into its own run directory, with
//! Throughput@Size, and QphH@Size when a power run is named with `--power`; through the
//! client's network namespace (`--client-netns`), or as one shard of a test spread over
//! several clients (`--shard I/N --start-at TIME`: this client's share of the streams).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use dbperf_engine::RunConfig;

use super::tpch::{runtime, ConnArgs};
use super::tpch_run::timeout;
use dbperf_driver::any::AnySession;
use dbperf_driver::Session;
use dbperf_results::options::{TpchThroughputOptions, WorkloadOptions};
use dbperf_results::RunDir;
use dbperf_run::args::{PlaceArgs, RunOutputArgs};
use dbperf_run::measured::Measured;
use dbperf_run::{measured_run, Description, Drive, MeasuredRun, Measurer, OwnOutcome, Shared};
use dbperf_workloads::tpch::load::data_scale_factor_on;
use dbperf_workloads::tpch::metrics::min_streams;
use dbperf_workloads::tpch::power::{PowerReport, TPCH_FILE};
use dbperf_workloads::tpch::qgen::{seed_at, time_seed};
use dbperf_workloads::tpch::report;
use dbperf_workloads::tpch::throughput::{self, ThroughputConfig};
use dbperf_workloads::ReportFile;

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
    #[arg(long, value_name = "SECONDS", value_parser = dbperf_core::bounds::secs_flag)]
    pub timeout: Option<f64>,
    /// Skip the refresh stream.
    #[arg(long)]
    pub no_refresh: bool,
    /// A power run (directory or run id) of the same data, for QphH@Size.
    #[arg(long, value_name = "RUN")]
    pub power: Option<String>,
    /// Results directory, summary copy (of `tpch.json`), telemetry and settle.
    #[command(flatten)]
    pub out: RunOutputArgs,
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
            let path = if given.is_dir() {
                given
            } else {
                a.out.results_dir.join(run)
            };
            let report: PowerReport = RunDir::open(&path)?
                .read_json(TPCH_FILE)
                .with_context(|| format!("--power {run}: not a TPC-H power run directory"))?;
            Some(report)
        }
    };
    if a.streams == Some(0) {
        bail!("--streams 0: give at least 1 query stream");
    }
    let start_at = a.place.start_at()?;
    // Without --seed, the time as DBT-3 takes it: that of --start-at when given, so every
    // shard generates the queries of the same test.
    let seed = a.seed.unwrap_or_else(|| start_at.map_or_else(time_seed, seed_at));
    dbperf_workloads::tpch::qgen::check_seed(seed)?;
    if a.place.shard.is_some() && start_at.is_none() {
        bail!("--shard needs --start-at: the instant every shard starts its streams");
    }
    let mut plan = ThroughputRun {
        timeout: timeout(a.timeout)?,
        database: target.database.clone(),
        power,
        seed,
        start_at,
        sf: 0.0,
        streams: 0,
        args: a,
    };
    let (out, place) = (plan.args.out.clone(), plan.args.place.clone());
    measured_run(
        &mut plan,
        Shared::Own {
            out: &out,
            place: &place,
        },
        &target,
        argv,
    )
}

/// A validated `dbperf tpch throughput`.
struct ThroughputRun {
    timeout: Option<std::time::Duration>,
    database: String,
    /// The power run for QphH@Size.
    power: Option<PowerReport>,
    seed: i64,
    start_at: Option<std::time::SystemTime>,
    /// The loaded data's scale factor and the test's streams, known before the test.
    sf: f64,
    streams: u32,
    args: ThroughputArgs,
}

/// The throughput test: the streams (this shard's share of them) and the refresh stream,
/// `tpch.json` with Throughput@Size (and QphH@Size with `--power`).
impl MeasuredRun for ThroughputRun {
    fn name(&self) -> String {
        "tpch-throughput".into()
    }

    async fn before(&mut self, admin: &mut AnySession) -> Result<()> {
        self.sf = data_scale_factor_on(admin, &self.database, self.args.scale_factor).await?;
        self.streams = self.args.streams.unwrap_or_else(|| min_streams(self.sf));
        Ok(())
    }

    fn drive(&self) -> Drive {
        Drive::Own {
            users: u64::from(self.streams),
            unit: "query streams",
        }
    }

    fn options(&self, _run: Option<&RunConfig>) -> WorkloadOptions {
        WorkloadOptions::TpchThroughput(TpchThroughputOptions {
            scale_factor: self.sf,
            streams: self.streams,
            validation: self.args.validation,
            timeout_seconds: self.args.timeout,
            refresh: !self.args.no_refresh,
        })
    }

    fn seeds(&self) -> serde_json::Value {
        serde_json::json!({ "qgen": self.seed })
    }

    fn describe(&self) -> Description {
        Description {
            what: format!(
                "TPC-H throughput test, SF {}, {} streams, seed {}",
                self.sf, self.streams, self.seed
            ),
            users: "stream",
            rate_of: "queries",
            rand_type: String::new(),
            detail: String::new(),
        }
    }

    fn measure<S: Session + 'static>(&mut self, m: Measurer<'_>) -> Result<Measured> {
        let a = &self.args;
        let mut cfg = ThroughputConfig {
            target: m.target().clone(),
            sf: self.sf,
            seed: self.seed,
            streams: self.streams,
            shard: m.shard().cloned(),
            start_at: self.start_at,
            validation: a.validation,
            timeout: self.timeout,
            refresh: !a.no_refresh,
            stop: Arc::new(AtomicBool::new(false)),
        };
        let power = self.power.take();
        m.own(
            "Stopping each stream after its query in progress; the finished queries are kept",
            move |_target, stop| {
                cfg.stop = stop;
                if let Some(r) = &cfg.shard {
                    println!(
                        "Shard {}/{}: streams {}..{}{}; they start at {}",
                        r.index,
                        r.count,
                        cfg.stream_numbers().start(),
                        cfg.stream_numbers().end(),
                        if cfg.runs_refresh() {
                            " and the refresh stream"
                        } else {
                            ""
                        },
                        r.start_at
                    );
                }
                // The streams' runtime starts inside the client's namespace, so its threads are too.
                let report = runtime()?.block_on(throughput::run(&cfg, |line| eprintln!("{line}")))?;
                Ok(OwnOutcome {
                    text: report::throughput_text(&report, power.as_ref()),
                    files: vec![ReportFile::json(TPCH_FILE, &report)],
                    interrupted: report.interrupted,
                    check_failed: false,
                })
            },
        )
    }
}
