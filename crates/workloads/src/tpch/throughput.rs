//! The throughput test (spec §5.3.4): `streams` query sessions, each running the 22
//! queries in its own order (stream `s` uses `PERMUTATION[s]` and seed + s), concurrently
//! with one refresh session running `streams` RF1/RF2 pairs one after another. Ts runs
//! from the first query's submission to the last completion.
//!
//! Spread over several clients (`--shard I/N --start-at TIME`), each client runs its share of
//! the query streams, numbered as in the whole test (so each keeps its order and its seed),
//! and the first shard runs the refresh stream; every client starts its clock at the same
//! wall-clock instant, and [`merge`] makes one test of the shards' reports.

use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::metrics::throughput_at_size;
use super::power::{stream_params, QueryTiming};
use super::qgen::stream_order;
use super::queries::render;
use super::refresh::{next_set, RefreshSet};
use super::runner::{QueryRunner, Status};
use super::TpchError;
use dbperf_driver::Target;
use dbperf_results::manifest::ShardRecord;
pub use dbperf_results::tpch::{RefreshPair, StreamRun, ThroughputReport};

/// What to run.
#[derive(Clone, Debug)]
pub struct ThroughputConfig {
    /// Where.
    pub target: Target,
    /// Scale factor of the loaded data.
    pub sf: f64,
    /// qgen seed; stream `s` uses seed + s.
    pub seed: i64,
    /// Query streams of the whole test.
    pub streams: u32,
    /// This client's shard of a test spread over several clients (`users` are streams): it
    /// runs its share of the streams, and Throughput@Size is the merged run's.
    pub shard: Option<ShardRecord>,
    /// When the test's clock starts, on the wall clock (every shard's the same); `None`: as
    /// soon as every stream is connected.
    pub start_at: Option<SystemTime>,
    /// Use the validation parameters in every stream.
    pub validation: bool,
    /// Cancel a query after this long.
    pub timeout: Option<Duration>,
    /// Run the refresh stream (`streams` RF1/RF2 pairs; in a sharded test the first shard
    /// does: [`ThroughputConfig::runs_refresh`]).
    pub refresh: bool,
    /// Set (by Ctrl-C) to stop: each stream after its query in progress, the refresh
    /// stream after its pair in progress; the report keeps what finished.
    pub stop: Arc<AtomicBool>,
}

impl ThroughputConfig {
    /// The streams this client runs, numbered from 1 as in the whole test: all of them, or
    /// its shard's share (contiguous, never empty).
    pub fn stream_numbers(&self) -> RangeInclusive<u32> {
        match &self.shard {
            Some(r) => (r.first_user as u32 + 1)..=((r.first_user + r.users) as u32),
            None => 1..=self.streams,
        }
    }

    /// True when this client runs the refresh stream: asked for, and not a shard other than
    /// the first.
    pub fn runs_refresh(&self) -> bool {
        self.refresh && self.shard.as_ref().is_none_or(|r| r.index == 0)
    }
}

/// Runs the throughput test; `progress` gets one line per step.
pub async fn run(
    cfg: &ThroughputConfig,
    progress: impl Fn(&str) + Send + Sync + Clone + 'static,
) -> Result<ThroughputReport, TpchError> {
    let mut admin = QueryRunner::connect(&cfg.target).await?;
    let server_version = admin.server_version();
    // Generate every refresh set before the clock starts.
    let mut sets = Vec::new();
    if cfg.runs_refresh() {
        let first = next_set(admin.session(), cfg.sf).await?;
        for n in first..first + u64::from(cfg.streams) {
            sets.push(RefreshSet::generate(cfg.sf, n)?);
        }
    }
    let sets_planned = sets.len();
    let mut runners = Vec::new();
    for s in cfg.stream_numbers() {
        runners.push((s, QueryRunner::connect(&cfg.target).await?));
    }
    if let Some(at) = cfg.start_at {
        if let Ok(ahead) = at.duration_since(SystemTime::now()) {
            progress(&format!("waiting {:.1} s for --start-at", ahead.as_secs_f64()));
        }
        super::wait_until(at, &cfg.stop).await.map_err(|late| {
            TpchError::Invalid(format!(
                "--start-at passed {:.1} s ago, before this shard's streams were connected: give every shard a \
                 start far enough ahead for all of them to connect",
                late.as_secs_f64()
            ))
        })?;
    }
    let started = Instant::now();
    let started_unix_ms = dbperf_core::clock::unix_ms(SystemTime::now());
    let mut tasks = tokio::task::JoinSet::new();
    for (s, mut runner) in runners {
        let (cfg, progress) = (cfg.clone(), progress.clone());
        tasks.spawn(async move {
            let params = stream_params(cfg.sf, cfg.seed, s, cfg.validation);
            let mut queries = Vec::new();
            for (i, &q) in stream_order(s).iter().enumerate() {
                if cfg.stop.load(Ordering::Relaxed) {
                    break;
                }
                let e = runner
                    .run(&render(cfg.target.family, &params[usize::from(q) - 1], s), cfg.timeout)
                    .await?;
                progress(&format!("stream {s}: Q{q} {:.2} s {:?}", e.seconds, e.status));
                queries.push(QueryTiming {
                    query: q,
                    position: i + 1,
                    seconds: e.seconds,
                    status: e.status,
                    error: e.error,
                    rows: e.rows.len(),
                });
            }
            Ok::<_, TpchError>(Stream(StreamRun {
                stream: s,
                seconds: started.elapsed().as_secs_f64(),
                queries,
            }))
        });
    }
    {
        let family = cfg.target.family;
        let progress = progress.clone();
        let stop = Arc::clone(&cfg.stop);
        tasks.spawn(async move {
            let mut pairs = Vec::new();
            for set in &sets {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let t0 = Instant::now();
                set.rf1(admin.session(), family).await?;
                let rf1 = t0.elapsed().as_secs_f64();
                let t0 = Instant::now();
                set.rf2(admin.session()).await?;
                let rf2 = t0.elapsed().as_secs_f64();
                progress(&format!("refresh set {}: RF1 {rf1:.2} s, RF2 {rf2:.2} s", set.n));
                pairs.push(RefreshPair {
                    set: set.n,
                    rf1_seconds: rf1,
                    rf2_seconds: rf2,
                });
            }
            Ok(Refresh(pairs))
        });
    }
    let mut streams = Vec::new();
    let mut refresh = Vec::new();
    while let Some(r) = tasks.join_next().await {
        match r.expect("stream task panicked")? {
            Stream(s) => streams.push(s),
            Refresh(p) => refresh = p,
        }
    }
    let ts = started.elapsed().as_secs_f64();
    streams.sort_by_key(|s| s.stream);
    let interrupted = streams.iter().any(|s| s.queries.len() < 22) || refresh.len() < sets_planned;
    let all_ok = !interrupted && streams.iter().all(|s| s.queries.iter().all(|q| q.status == Status::Ok));
    Ok(ThroughputReport {
        schema: super::power::TPCH_SCHEMA.into(),
        test: "throughput".into(),
        scale_factor: cfg.sf,
        seed: cfg.seed,
        validation: cfg.validation,
        server_version,
        timeout_seconds: cfg.timeout.map(|t| t.as_secs_f64()),
        streams,
        refresh,
        ts_seconds: ts,
        throughput_at_size: (all_ok && cfg.shard.is_none()).then(|| throughput_at_size(cfg.sf, cfg.streams, ts)),
        interrupted,
        started_unix_ms: Some(started_unix_ms),
        streams_total: cfg.shard.as_ref().map(|_| cfg.streams),
    })
}

/// What a task of the test returns.
enum Done {
    Stream(StreamRun),
    Refresh(Vec<RefreshPair>),
}
use Done::{Refresh, Stream};
