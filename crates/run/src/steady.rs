//! `--warmup-steady[=MAX_SECONDS]`: a warmup that ends when the workload is past its start-up
//! transient, not after fixed seconds. After a restart (or a settle) a writing workload's
//! checkpoint age climbs from near 0 to its working level, often overshoots it and comes back
//! in a flush storm (its first checkpoint cycle), and its throughput moves with it: a run that
//! measures from inside that climb measures the transient. Before the fixed warmup
//! (`--warmup-time`), the workload runs unmeasured while the server is sampled each second, until
//! [`SteadyRule`] says both have settled or `MAX_SECONDS` pass. This module owns the rule and that
//! unmeasured run; what it found goes into the summary ([`SteadyWarmup`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dbperf_driver::Target;
use dbperf_engine::{IntervalReport, Observer, RunConfig, StopReason, StopSignal, Workload};
use dbperf_results::summary::SteadyWarmup;
use dbperf_telemetry::sampler::AnyServerSampler;
use dbperf_telemetry::server::ServerTelemetryOptions;

/// The longest `--warmup-steady` without a value.
pub const DEFAULT_STEADY_MAX_SECS: u64 = 300;
/// Seconds the workload runs before the rule is asked at all.
pub const MIN_SECS: usize = 10;
/// Seconds of throughput compared with the seconds before them: the last this many against
/// the this many before.
pub const TREND_SECS: usize = 5;
/// Throughput has stopped trending when the last [`TREND_SECS`] average within this many
/// percent of the [`TREND_SECS`] before.
pub const TREND_PCT: f64 = 10.0;
/// Checkpoint age (points of its maximum) it must climb from its first sample to a peak, then
/// fall from that peak by [`CYCLE_FALL_POINTS`], for a first checkpoint cycle to have ended.
pub const CYCLE_RISE_POINTS: f64 = 15.0;
/// See [`CYCLE_RISE_POINTS`].
pub const CYCLE_FALL_POINTS: f64 = 10.0;
/// Checkpoint age that moved within this many points over the last [`LEVEL_SECS`] is level
/// (a read-only load, or flushing that holds it): nothing more to wait for.
pub const LEVEL_POINTS: f64 = 3.0;
/// See [`LEVEL_POINTS`].
pub const LEVEL_SECS: usize = 10;

/// One-second samples of the unmeasured run, and the rule that says when they are steady.
#[derive(Debug, Default)]
pub struct SteadyRule {
    tps: Vec<f64>,
    checkpoint: Vec<f64>,
}

impl SteadyRule {
    /// A second's throughput and the checkpoint age sampled in it (percent of its maximum;
    /// `None` where the server has none, or the sample was late).
    pub fn push(&mut self, tps: f64, checkpoint_pct: Option<f64>) {
        self.tps.push(tps);
        self.checkpoint.extend(checkpoint_pct);
    }

    /// Why the run is steady now (`None`: not yet): throughput has stopped trending, and the
    /// checkpoint age has completed its first cycle or holds level (or the server has none).
    pub fn verdict(&self) -> Option<String> {
        let n = self.tps.len();
        if n < MIN_SECS.max(2 * TREND_SECS) {
            return None;
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (before, last) = (
            mean(&self.tps[n - 2 * TREND_SECS..n - TREND_SECS]),
            mean(&self.tps[n - TREND_SECS..]),
        );
        if before <= 0.0 || ((last - before) / before * 100.0).abs() > TREND_PCT {
            return None;
        }
        let c = &self.checkpoint;
        if c.is_empty() {
            return Some("throughput stopped trending (the server reports no checkpoint age)".into());
        }
        let (peak_at, peak) = c
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, 0.0));
        let now = c[c.len() - 1];
        if peak - c[0] >= CYCLE_RISE_POINTS && peak_at + 1 < c.len() && now <= peak - CYCLE_FALL_POINTS {
            return Some(format!(
                "the first checkpoint cycle ended (checkpoint age {:.0}% -> {peak:.0}% -> {now:.0}% of its maximum) and \
                 throughput stopped trending",
                c[0]
            ));
        }
        if c.len() >= LEVEL_SECS {
            let recent = &c[c.len() - LEVEL_SECS..];
            let (lo, hi) = recent.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
            if hi - lo <= LEVEL_POINTS {
                return Some(format!(
                    "checkpoint age held level at {now:.0}% of its maximum for {LEVEL_SECS} s and throughput stopped trending"
                ));
            }
        }
        None
    }
}

/// Watches the unmeasured run's intervals with the server's latest checkpoint age, and stops
/// it once [`SteadyRule::verdict`] says so, or when the command is interrupted.
struct Watch<'a> {
    rule: SteadyRule,
    latest: Arc<Mutex<Option<f64>>>,
    pre: Arc<StopSignal>,
    main: &'a StopSignal,
    reason: Option<String>,
}

impl Observer for Watch<'_> {
    fn on_interval(&mut self, r: &IntervalReport<'_>) {
        if self.main.is_stopped() {
            self.pre.stop(StopReason::Interrupted);
            return;
        }
        // A short last piece says nothing about a second's throughput.
        if r.len_s() < 0.5 {
            return;
        }
        let tps = super::record::interval_record(r).tps;
        let checkpoint = self.latest.lock().map(|l| *l).unwrap_or(None);
        self.rule.push(tps, checkpoint);
        if self.reason.is_none() {
            if let Some(why) = self.rule.verdict() {
                self.reason = Some(why);
                self.pre.stop(StopReason::Completed);
            }
        }
    }
}

/// Samples the server's checkpoint age each second into `latest` until `done`; the sampler's
/// switches are put back at the end. Without a server to sample, nothing.
fn sample_checkpoint(target: Option<Target>, latest: Arc<Mutex<Option<f64>>>, done: Arc<AtomicBool>) {
    let Some(target) = target else { return };
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return;
    };
    rt.block_on(async {
        let Ok(mut sampler) = AnyServerSampler::connect(&target, &ServerTelemetryOptions::default()).await else {
            return;
        };
        while !done.load(Ordering::SeqCst) {
            let level = sampler.sample().await.ok().and_then(|s| s.checkpoint_level_pct());
            if let Ok(mut l) = latest.lock() {
                *l = level;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(3), sampler.restore()).await;
    });
}

/// Runs `workload` as `run` says, unmeasured, for at most `max`, until it is steady; `main`
/// is the command's stop (Ctrl-C ends this run too); `server` the server to sample (`None`:
/// throughput alone decides). Prints a line when it ends.
pub fn run_until_steady<W: Workload>(
    run: &RunConfig,
    workload: Arc<W>,
    main: &StopSignal,
    max: Duration,
    server: Option<Target>,
) -> anyhow::Result<SteadyWarmup> {
    let mut pre_cfg = run.clone();
    pre_cfg.duration = Some(max);
    pre_cfg.warmup = Duration::ZERO;
    pre_cfg.events = None;
    pre_cfg.start_at = None;
    pre_cfg.interval = Duration::from_secs(1);
    pre_cfg.report_interval = None;
    let latest = Arc::new(Mutex::new(None));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (latest, done) = (Arc::clone(&latest), Arc::clone(&done));
        std::thread::spawn(move || sample_checkpoint(server, latest, done))
    };
    println!(
        "warmup: running until steady (checkpoint age past its first cycle or level, throughput not trending; at most {} s)",
        max.as_secs()
    );
    let started = Instant::now();
    let pre = StopSignal::new();
    let mut watch = Watch {
        rule: SteadyRule::default(),
        latest,
        pre: Arc::clone(&pre),
        main,
        reason: None,
    };
    let outcome = dbperf_engine::run(&pre_cfg, workload, pre, &mut watch);
    done.store(true, Ordering::SeqCst);
    let _ = sampler.join();
    outcome.map_err(|e| anyhow::anyhow!("the warmup until steady failed: {e}"))?;
    let seconds = started.elapsed().as_secs_f64();
    let steady = watch.reason.is_some();
    let reason = watch.reason.unwrap_or_else(|| {
        if main.is_stopped() {
            "interrupted".into()
        } else {
            format!("not steady after {} s (the limit): measuring anyway", max.as_secs())
        }
    });
    println!("warmup: {reason} after {seconds:.0} s");
    Ok(SteadyWarmup {
        seconds,
        steady,
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(tps: &[f64], checkpoint: &[f64]) -> SteadyRule {
        let mut r = SteadyRule::default();
        for (i, t) in tps.iter().enumerate() {
            r.push(*t, checkpoint.get(i).copied());
        }
        r
    }

    /// The TPC-C study's restart: checkpoint age 0 -> 95% in 20 s, a flush storm back to ~55%,
    /// throughput dipping with it. Steady only once the cycle ended and throughput stopped
    /// moving; a climb still under way is not; a level age is.
    #[test]
    fn steady_after_the_first_checkpoint_cycle_or_a_level_age() {
        let mut ckpt: Vec<f64> = (0..20).map(|i| f64::from(i) * 5.0).collect();
        let mut tps: Vec<f64> = vec![1000.0; 20];
        // The storm: age falls, throughput drops then recovers.
        ckpt.extend([80.0, 65.0, 58.0, 55.0, 56.0, 57.0, 55.0, 56.0, 55.0, 56.0, 55.0, 56.0]);
        tps.extend([
            300.0, 400.0, 600.0, 900.0, 950.0, 960.0, 955.0, 950.0, 960.0, 955.0, 950.0, 960.0,
        ]);
        // Still climbing at 19 s: not steady.
        assert_eq!(rule(&tps[..19], &ckpt[..19]).verdict(), None);
        // Right after the storm throughput is still recovering: not steady.
        assert_eq!(rule(&tps[..24], &ckpt[..24]).verdict(), None);
        let why = rule(&tps, &ckpt).verdict().unwrap();
        assert!(
            why.contains("first checkpoint cycle ended") && why.contains("0% -> 95%"),
            "{why}"
        );

        // A read-only load: the age does not move, throughput is flat from the start.
        let flat = rule(&[500.0; 12], &[3.0; 12]);
        assert!(flat.verdict().unwrap().contains("held level"));
        // Throughput still ramping (a cold buffer pool) is not steady, level age or not.
        let ramp: Vec<f64> = (0..12).map(|i| 100.0 + f64::from(i) * 40.0).collect();
        assert_eq!(rule(&ramp, &[3.0; 12]).verdict(), None);
        // No checkpoint age at all (a server without one): throughput alone.
        assert!(rule(&[500.0; 12], &[]).verdict().unwrap().contains("no checkpoint age"));
        // Too early to say anything.
        assert_eq!(rule(&[500.0; 5], &[3.0; 5]).verdict(), None);
    }
}
