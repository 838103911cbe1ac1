//! The telemetry thread of a run: every period, on the engine's clock (aligned to the run's
//! time zero), it samples the OS, the server (from a connection of its own) and dbperf itself,
//! appends one line to `telemetry.jsonl` and keeps the newest sample for the live lines.
//!
//! It never holds up the run: a server that does not answer within the period gives a sample
//! with `server: null` and [`NO_ANSWER_QUERY`] (then a reconnect); stopping takes at most
//! 50 ms, even while a query or connect to a hung server is outstanding. Every sample covers
//! at least half a period, so none holds rates over the few milliseconds of a catch-up after
//! a pause. A full disk stops the writing, not the sampling: [`Telemetry::stop`] says what
//! `telemetry.jsonl` lacks.

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use dbperf_engine::clock::now_ns;

use super::os::OsSampler;
use super::pg::PgSampler;
use super::server::{ServerSample, ServerSampler, ServerTelemetryOptions};
use dbperf_driver::target::Family;
use dbperf_driver::{DbError, Target};
pub use dbperf_results::telemetry::{ClientSample, TelemetryRow as Sample, NO_ANSWER_CONNECT, NO_ANSWER_QUERY};
use dbperf_results::{AppendFile, ResultsError, WriteLoss};

/// The server sampler for the target's protocol: `mysql://` → [`ServerSampler`] (MariaDB,
/// MySQL), `postgres://` → [`PgSampler`].
pub enum AnyServerSampler {
    Mysql(Box<ServerSampler>),
    Postgres(Box<PgSampler>),
}

impl AnyServerSampler {
    /// Connects the sampler that fits `target.family`.
    pub async fn connect(target: &Target, options: &ServerTelemetryOptions) -> Result<AnyServerSampler, DbError> {
        Ok(match target.family {
            Family::Mysql => AnyServerSampler::Mysql(Box::new(ServerSampler::connect(target, options).await?)),
            Family::Postgres => {
                AnyServerSampler::Postgres(Box::new(PgSampler::connect(target, options.top_waits).await?))
            }
        })
    }

    /// What the sampler could not switch on or will not see, learned at connect.
    pub fn warnings(&self) -> &[String] {
        match self {
            AnyServerSampler::Mysql(s) => &s.facts().warnings,
            AnyServerSampler::Postgres(_) => &[],
        }
    }

    /// Undoes what connect switched on in the server (MySQL family; PostgreSQL changes nothing).
    pub async fn restore(&mut self) -> Result<(), DbError> {
        match self {
            AnyServerSampler::Mysql(s) => s.restore().await,
            AnyServerSampler::Postgres(_) => Ok(()),
        }
    }

    /// One sample (the first primes the rates).
    pub async fn sample(&mut self) -> Result<ServerSample, DbError> {
        match self {
            AnyServerSampler::Mysql(s) => s.sample().await,
            AnyServerSampler::Postgres(s) => s.sample().await,
        }
    }
}

/// The longest a run waits for its start state ([`start_state`]) before going on without it.
const START_STATE_WAIT: Duration = Duration::from_secs(5);

/// The server's levels now (checkpoint age, dirty pages, history list), sampled once just
/// before a run's workload starts: its start state, which its first telemetry row (a period
/// into the workload) no longer shows. `None` without a server to sample, or when it does not
/// answer within [`START_STATE_WAIT`] (the run's telemetry says why).
pub fn start_state(cfg: &TelemetryConfig) -> Option<dbperf_results::telemetry::StartState> {
    let target = cfg.target.as_ref()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    rt.block_on(async {
        tokio::time::timeout(START_STATE_WAIT, async {
            let mut sampler = AnyServerSampler::connect(target, &cfg.server).await.ok()?;
            let sample = sampler.sample().await.ok();
            let _ = sampler.restore().await;
            sample.as_ref().map(dbperf_results::telemetry::StartState::of_sample)
        })
        .await
        .ok()
        .flatten()
    })
}

/// What to sample.
#[derive(Debug, Clone)]
pub struct TelemetryConfig {
    /// Sampling period.
    pub period: Duration,
    /// The server to sample; `None` samples only the OS and the client.
    pub target: Option<Target>,
    /// Sample this machine's OS too (`false`: the server is not on this machine, or not
    /// dbperf's, and its OS figures would be another machine's or mixed with others').
    pub os: bool,
    pub server: ServerTelemetryOptions,
    /// The database host when it is not this one (`--server-host`): its OS is sampled there.
    pub server_host: Option<dbperf_server::remote::RemoteHost>,
}

/// A running telemetry thread.
pub struct Telemetry {
    stop: Arc<AtomicBool>,
    latest: Arc<Mutex<Option<Sample>>>,
    handle: Option<JoinHandle<AppendFile>>,
}

impl Telemetry {
    /// Starts sampling into `path` every `cfg.period` after `t0_ns` (on [`now_ns`]'s clock).
    pub fn start(cfg: TelemetryConfig, path: &Path, t0_ns: u64) -> Result<Telemetry, ResultsError> {
        let file = AppendFile::open(path)?;
        let stop = Arc::new(AtomicBool::new(false));
        let latest = Arc::new(Mutex::new(None));
        let (stop2, latest2) = (stop.clone(), latest.clone());
        let handle = std::thread::Builder::new()
            .name("dbperf-telemetry".into())
            .spawn(move || sample_loop(cfg, file, t0_ns, &stop2, &latest2))
            .map_err(|source| ResultsError::Write {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Telemetry {
            stop,
            latest,
            handle: Some(handle),
        })
    }

    /// The newest sample, for the live interval line.
    pub fn latest(&self) -> Option<Sample> {
        self.latest.lock().ok().and_then(|l| l.clone())
    }

    /// Stops the thread (waits for the sample in progress, at most about one period). Returns
    /// what `telemetry.jsonl` could not take, if a write failed, and says so if the thread had
    /// panicked: `telemetry.jsonl` then ends early, the run's own figures are whole.
    pub fn stop(mut self) -> (Option<WriteLoss>, Option<String>) {
        self.stop.store(true, Ordering::SeqCst);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(writer)) => (writer.loss(), None),
            Some(Err(p)) => {
                let message = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let crash = format!(
                    "the telemetry thread crashed ({message}): a bug in dbperf; {TELEMETRY} ends at its last sample",
                    TELEMETRY = dbperf_results::TELEMETRY_FILE
                );
                (None, Some(crash))
            }
            None => (None, None),
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Process CPU seconds so far (user + system).
fn process_cpu_s() -> f64 {
    dbperf_results::client_usage().cpu_s
}

/// Current resident set size, from /proc/self/statm.
fn rss_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * u64::try_from(page).unwrap_or(4096)
}

/// When the sample after one that ended at `t_before` is due: the next tick of the period
/// (tick `k`, counted from `t0`), but no sooner than half a period after `t_before`, so a
/// sample never covers a fraction of a period (after a slow sample, or a reconnect that
/// waited for a stopped server).
fn next_due(t0_ns: u64, k: u64, period_ns: u64, t_before: u64) -> u64 {
    (t0_ns + k * period_ns).max(t_before + period_ns / 2)
}

fn sample_loop(
    cfg: TelemetryConfig,
    mut file: AppendFile,
    t0_ns: u64,
    stop: &AtomicBool,
    latest: &Mutex<Option<Sample>>,
) -> AppendFile {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("warning: telemetry is off: cannot start its runtime: {e}");
            return file;
        }
    };
    let period_ns = cfg.period.as_nanos().max(1) as u64;
    let mut os = OsSampler::new();
    let remote_os = cfg.server_host.as_ref().map(|h| {
        super::remote::RemoteOs::start(h, cfg.period).map_err(|e| format!("cannot run ssh for {}: {e}", h.url))
    });
    let mut server: Option<AnyServerSampler> = None;
    let mut server_error: Option<String> = None;
    let mut warned = false;
    // Every wait on the server also ends when the run stops: a hung server must not hold up
    // the end of the run by more than one 50 ms slice.
    let mut connect = |server: &mut Option<AnyServerSampler>, error: &mut Option<String>| {
        if let Some(target) = &cfg.target {
            let limit = cfg.period.max(Duration::from_secs(2));
            match unless_stopped(&rt, stop, limit, AnyServerSampler::connect(target, &cfg.server)) {
                Waited::Done(Ok(mut s)) => {
                    if !warned {
                        // Once per run: a reconnect finds the same server.
                        for w in s.warnings() {
                            eprintln!("warning: telemetry: {w}");
                        }
                        warned = true;
                    }
                    // Prime the rates so the first sample has them.
                    if let Waited::Stopped = unless_stopped(&rt, stop, cfg.period, s.sample()) {
                        return;
                    }
                    *server = Some(s);
                    *error = None;
                }
                Waited::Done(Err(e)) => *error = Some(format!("cannot connect for telemetry: {e}")),
                Waited::TimedOut => *error = Some(NO_ANSWER_CONNECT.into()),
                Waited::Stopped => {}
            }
        }
    };
    connect(&mut server, &mut server_error);
    let mut cpu_before = process_cpu_s();
    let mut t_before = now_ns();
    let mut k = now_ns().saturating_sub(t0_ns) / period_ns + 1;
    while !stop.load(Ordering::SeqCst) {
        let due = next_due(t0_ns, k, period_ns, t_before);
        let now = now_ns();
        if now < due {
            // Sleep in slices so a stop is seen within 50 ms.
            std::thread::sleep(Duration::from_nanos((due - now).min(50_000_000)));
            continue;
        }
        k = (now - t0_ns) / period_ns + 1;
        let os_sample = cfg.os.then(|| os.sample());
        let server_sample = match server.as_mut() {
            Some(s) => match unless_stopped(&rt, stop, cfg.period, s.sample()) {
                Waited::Done(Ok(v)) => Some(v),
                Waited::Done(Err(e)) => {
                    server_error = Some(format!("telemetry query failed: {e}"));
                    server = None;
                    None
                }
                Waited::TimedOut => {
                    server_error = Some(NO_ANSWER_QUERY.into());
                    server = None;
                    None
                }
                Waited::Stopped => break,
            },
            None => {
                if cfg.target.is_some() && !stop.load(Ordering::SeqCst) {
                    connect(&mut server, &mut server_error);
                }
                None
            }
        };
        let t_now = now_ns();
        let cpu_now = process_cpu_s();
        let elapsed = (t_now - t_before) as f64 / 1e9;
        let client = ClientSample {
            cpu_pct: if elapsed > 0.0 {
                (cpu_now - cpu_before) / elapsed * 100.0
            } else {
                0.0
            },
            rss_bytes: rss_bytes(),
        };
        (cpu_before, t_before) = (cpu_now, t_now);
        let (server_host_os, server_host_error, server_host_lost) = match &remote_os {
            None => (None, None, false),
            Some(Err(e)) => (None, Some(e.clone()), true),
            Some(Ok(r)) => match r.take() {
                Ok(Some(s)) => (Some(s), None, false),
                Ok(None) => (
                    None,
                    Some("no sample from the server host in this period".to_owned()),
                    false,
                ),
                Err(e) => (None, Some(e), true),
            },
        };
        let sample = Sample {
            server_host_os,
            server_host_error,
            server_host_lost,
            t_s: t_now.saturating_sub(t0_ns) as f64 / 1e9,
            interval_s: Some(elapsed),
            os: os_sample,
            server_error: if server_sample.is_none() {
                server_error.clone()
            } else {
                None
            },
            server: server_sample,
            client: Some(client),
        };
        if let Ok(mut line) = serde_json::to_string(&sample) {
            // One write per line; after a failed one the file counts what it could not take.
            line.push('\n');
            let _ = file.write_all(line.as_bytes());
        }
        if let Ok(mut l) = latest.lock() {
            *l = Some(sample);
        }
    }
    // Leave the server as it was: the counters and instruments the sampler turned on go off
    // again (a server that does not answer within the limit keeps them; the next run's
    // sampler finds them on and leaves them so).
    if let Some(s) = server.as_mut() {
        match rt.block_on(async { tokio::time::timeout(RESTORE_LIMIT, s.restore()).await }) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("warning: telemetry could not switch off what it turned on in the server: {e}"),
            Err(_) => eprintln!(
                "warning: telemetry could not switch off what it turned on in the server: no answer within {} s",
                RESTORE_LIMIT.as_secs()
            ),
        }
    }
    file
}

/// How long the end of a run waits for the server to take back the sampler's changes.
const RESTORE_LIMIT: Duration = Duration::from_secs(3);

/// How a wait on the server ended.
enum Waited<T> {
    Done(T),
    TimedOut,
    Stopped,
}

/// Runs `fut` on `rt` for at most `limit`, giving up as soon as `stop` is set (seen within
/// 50 ms).
fn unless_stopped<F: std::future::Future>(
    rt: &tokio::runtime::Runtime,
    stop: &AtomicBool,
    limit: Duration,
    fut: F,
) -> Waited<F::Output> {
    rt.block_on(async {
        let stopped = async {
            while !stop.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::select! {
            r = tokio::time::timeout(limit, fut) => match r {
                Ok(v) => Waited::Done(v),
                Err(_) => Waited::TimedOut,
            },
            () = stopped => Waited::Stopped,
        }
    })
}

/// The compact telemetry part of a live interval line: `ckpt 45% dirty 12% cpu(client) 35%
/// wait index_tree_rw_lock` (`ckpt 99% sync` while InnoDB runs sync flush batches).
pub fn live_suffix(s: &Sample) -> String {
    let mut parts = Vec::new();
    if let Some(srv) = &s.server {
        if let Some(p) = srv.checkpoint_pct {
            // "sync": InnoDB ran sync flush batches in the interval (writers waited).
            match srv.sync_flush_pages_s {
                Some(pages) if pages > 0.0 => parts.push(format!("ckpt {p:.0}% sync")),
                _ => parts.push(format!("ckpt {p:.0}%")),
            }
        }
        if let Some(n) = srv.checkpoints_requested.filter(|n| *n > 0) {
            parts.push(format!("ckpt req {n}"));
        }
        if let Some(d) = srv.dirty_pages_pct {
            parts.push(format!("dirty {d:.0}%"));
        }
        if let Some(w) = srv.waits.first() {
            // `wait/synch/rwlock/innodb/index_tree_rw_lock` → `innodb/index_tree_rw_lock`.
            let short: Vec<&str> = w.event.rsplitn(3, '/').take(2).collect();
            let short = if short.len() == 2 {
                format!("{}/{}", short[1], short[0])
            } else {
                w.event.clone()
            };
            parts.push(format!("wait {short}"));
        }
    } else if s.server_error.is_some() {
        parts.push("server telemetry: none".into());
    }
    if let Some(client) = &s.client {
        parts.push(format!("client cpu {:.0}%", client.cpu_pct));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_sample_is_due_on_the_period_tick() {
        // The previous sample ended at 3.1 s: the next is at tick 4.
        assert_eq!(next_due(0, 4, S, 3 * S + S / 10), 4 * S);
    }

    #[test]
    fn after_a_slow_sample_or_reconnect_the_next_covers_at_least_half_a_period() {
        // A reconnect to a server stopped by SIGSTOP ended at 15.98 s, just before tick 16:
        // sampling at 16 s would give rates over 20 ms. The sample waits until 16.48 s.
        let ended = 15 * S + 980 * S / 1000;
        assert_eq!(next_due(0, 16, S, ended), ended + S / 2);
    }
}
