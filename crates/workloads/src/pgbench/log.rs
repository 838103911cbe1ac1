//! pgbench's `-l` transaction logs: one file per client thread, `PREFIX.PID` for the first and
//! `PREFIX.PID.N` for thread N, each line one transaction (`--sampling-rate` of them) or, with
//! `--aggregate-interval`, one interval, in pgbench 15's field order (the aggregate line has
//! all its fields whatever the options, as pgbench 15 writes it; an interval's line is written
//! once it has ended, so the last one, cut short by the run's end, is not):
//!
//! ```text
//! client_id transaction_no latency_us script_no epoch_s epoch_us [lag_us] [retries]
//! interval_start count sum sum2 min max lag_sum lag_sum2 lag_min lag_max skipped retried retries
//!     serialization_failures deadlock_failures
//! ```
//!
//! A transaction given up after its last try has `failed` for its latency (`serialization` or
//! `deadlock` with `--failures-detailed`), one skipped under `-R` with `-L` has `skipped`; both
//! have a lag of 0, as pgbench writes them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use dbperf_engine::clock::now_ns;
use dbperf_engine::{ErrorClass, TxnEnd, TxnLog};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// What `-l` writes and how.
#[derive(Debug, Clone, PartialEq)]
pub struct LogSpec {
    /// `--log-prefix` (pgbench's default `pgbench_log`).
    pub prefix: String,
    /// `--sampling-rate`: the fraction of transactions logged (1 = all).
    pub sampling_rate: f64,
    /// `--aggregate-interval` in seconds (0 = a line per transaction).
    pub aggregate_s: u64,
    /// The run is open loop (`-R`): lines carry the schedule lag.
    pub throttled: bool,
    /// `--max-tries` is not 1: lines carry the retries.
    pub with_retries: bool,
    /// `--failures-detailed`: a failed transaction's latency says which failure it was.
    pub failures_detailed: bool,
}

/// Sums of one aggregation interval.
#[derive(Debug, Default, Clone, Copy)]
struct Agg {
    count: u64,
    sum: f64,
    sum2: f64,
    min: f64,
    max: f64,
    lag_sum: f64,
    lag_sum2: f64,
    lag_min: f64,
    lag_max: f64,
    skipped: u64,
    retried: u64,
    retries: u64,
    serialization: u64,
    deadlock: u64,
}

impl Agg {
    fn add(&mut self, latency: f64, lag: f64) {
        let first = self.count == 0;
        self.count += 1;
        self.sum += latency;
        self.sum2 += latency * latency;
        self.lag_sum += lag;
        self.lag_sum2 += lag * lag;
        if first || latency < self.min {
            self.min = latency;
        }
        if first || latency > self.max {
            self.max = latency;
        }
        if first || lag < self.lag_min {
            self.lag_min = lag;
        }
        if first || lag > self.lag_max {
            self.lag_max = lag;
        }
    }
}

/// One thread's file.
#[derive(Debug)]
struct ThreadFile {
    out: BufWriter<File>,
    rng: SmallRng,
    /// The interval being summed (`--aggregate-interval`): its start in Unix seconds.
    interval_start: u64,
    agg: Agg,
    error: Option<String>,
}

/// The `-l` logs of a run, told of each transaction by the engine.
#[derive(Debug)]
pub struct TxnLogFiles {
    spec: LogSpec,
    files: Vec<Mutex<ThreadFile>>,
    /// Transactions each connection has ended (pgbench's transaction_no counts from 1).
    counts: Vec<AtomicU64>,
    /// The engine's clock at `epoch_us` on the wall clock.
    clock_at: u64,
    epoch_us: u64,
}

impl TxnLogFiles {
    /// Creates the files of `threads` client threads for `connections` connections.
    pub fn create(spec: LogSpec, threads: usize, connections: usize, seed: u64) -> Result<TxnLogFiles, String> {
        let pid = std::process::id();
        let epoch_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let mut files = Vec::with_capacity(threads);
        for t in 0..threads.max(1) {
            let path = PathBuf::from(match t {
                0 => format!("{}.{pid}", spec.prefix),
                t => format!("{}.{pid}.{t}", spec.prefix),
            });
            // Never through a link planted in the (often shared) current directory.
            let file = dbperf_core::nofollow::open(&path, dbperf_core::nofollow::Open::Truncate)
                .map_err(|e| format!("could not open logfile \"{}\": {e}", path.display()))?;
            files.push(Mutex::new(ThreadFile {
                out: BufWriter::new(file),
                rng: SmallRng::seed_from_u64(seed ^ (t as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                interval_start: epoch_us / 1_000_000,
                agg: Agg::default(),
                error: None,
            }));
        }
        Ok(TxnLogFiles {
            spec,
            files,
            counts: (0..connections).map(|_| AtomicU64::new(0)).collect(),
            clock_at: now_ns(),
            epoch_us,
        })
    }

    /// Unix microseconds at `ns` on the engine's clock.
    fn epoch_us(&self, ns: u64) -> u64 {
        (self.epoch_us as i128 + (ns as i128 - self.clock_at as i128) / 1000).max(0) as u64
    }

    /// Writes the intervals (`--aggregate-interval`) that have ended, as pgbench does at the
    /// end of a run (the last one, cut short by the run's end, is not written), and flushes
    /// every file; the first write error, if any.
    pub fn finish(&self) -> Result<(), String> {
        let mut first = None;
        let now_s = self.epoch_us(now_ns()) / 1_000_000;
        for f in &self.files {
            let Ok(mut f) = f.lock() else { continue };
            if self.spec.aggregate_s > 0 {
                self.write_ended(&mut f, now_s);
            }
            if let Err(e) = f.out.flush() {
                f.error.get_or_insert(e.to_string());
            }
            if let Some(e) = &f.error {
                first.get_or_insert(e.clone());
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl TxnLogFiles {
    /// Writes the line of every interval of `f` that ended by `now_s` (Unix seconds), empty
    /// ones included, as pgbench writes them.
    fn write_ended(&self, f: &mut ThreadFile, now_s: u64) {
        while now_s >= f.interval_start + self.spec.aggregate_s {
            let line = agg_line(f.interval_start, &f.agg);
            write_line(f, &line);
            f.agg = Agg::default();
            f.interval_start += self.spec.aggregate_s;
        }
    }
}

fn write_line(f: &mut ThreadFile, line: &str) {
    if f.error.is_none() {
        if let Err(e) = f.out.write_all(line.as_bytes()) {
            f.error = Some(e.to_string());
        }
    }
}

/// An interval's line, sums rounded as pgbench prints them (`%.0f`).
fn agg_line(start: u64, a: &Agg) -> String {
    format!(
        "{start} {} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {:.0} {} {} {} {} {}\n",
        a.count,
        a.sum,
        a.sum2,
        a.min,
        a.max,
        a.lag_sum,
        a.lag_sum2,
        a.lag_min,
        a.lag_max,
        a.skipped,
        a.retried,
        a.retries,
        a.serialization,
        a.deadlock
    )
}

impl TxnLog for TxnLogFiles {
    fn record(&self, t: &TxnEnd) {
        let n = match self.counts.get(t.worker) {
            Some(c) => c.fetch_add(1, Ordering::Relaxed) + 1,
            None => 0,
        };
        let Some(file) = self.files.get(t.thread).or_else(|| self.files.first()) else {
            return;
        };
        let Ok(mut f) = file.lock() else { return };
        let latency_us = t.end_ns.saturating_sub(t.intended_ns) / 1000;
        let lag_us = t.started_ns.saturating_sub(t.intended_ns) / 1000;
        let end_us = self.epoch_us(t.end_ns);
        if self.spec.aggregate_s > 0 {
            self.write_ended(&mut f, end_us / 1_000_000);
            let agg = &mut f.agg;
            match t.failed {
                _ if t.skipped => agg.skipped += 1,
                Some(ErrorClass::Deadlock) => agg.deadlock += 1,
                Some(_) => agg.serialization += 1,
                None => agg.add(latency_us as f64, lag_us as f64),
            }
            if t.tries > 1 {
                agg.retried += 1;
                agg.retries += u64::from(t.tries - 1);
            }
            return;
        }
        if self.spec.sampling_rate < 1.0 && f.rng.random::<f64>() >= self.spec.sampling_rate {
            return;
        }
        let (latency, lag) = match t.failed {
            _ if t.skipped => ("skipped".to_string(), 0),
            Some(ErrorClass::Deadlock) if self.spec.failures_detailed => ("deadlock".to_string(), 0),
            Some(_) if self.spec.failures_detailed => ("serialization".to_string(), 0),
            Some(_) => ("failed".to_string(), 0),
            None => (latency_us.to_string(), lag_us),
        };
        let mut line = format!(
            "{} {n} {latency} {} {} {}",
            t.worker,
            t.kind,
            end_us / 1_000_000,
            end_us % 1_000_000
        );
        if self.spec.throttled {
            line.push_str(&format!(" {lag}"));
        }
        if self.spec.with_retries {
            line.push_str(&format!(" {}", t.tries.saturating_sub(1)));
        }
        line.push('\n');
        write_line(&mut f, &line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(worker: usize, intended: u64, started: u64, end: u64, failed: Option<ErrorClass>, tries: u32) -> TxnEnd {
        TxnEnd {
            worker,
            thread: 0,
            kind: 0,
            intended_ns: intended,
            started_ns: started,
            end_ns: end,
            tries,
            failed,
            skipped: false,
        }
    }

    #[test]
    fn lines_have_pgbench_fields() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("lg").display().to_string();
        let spec = LogSpec {
            prefix: prefix.clone(),
            sampling_rate: 1.0,
            aggregate_s: 0,
            throttled: true,
            with_retries: true,
            failures_detailed: false,
        };
        let log = TxnLogFiles::create(spec, 1, 2, 1).unwrap();
        let t0 = now_ns();
        log.record(&end(1, t0, t0 + 2_000, t0 + 5_000_000, None, 1));
        log.record(&end(1, t0, t0, t0 + 1_000, Some(ErrorClass::Serialization), 2));
        log.record(&TxnEnd {
            skipped: true,
            ..end(0, t0 + 9_000, t0 + 9_000, t0 + 9_000, None, 0)
        });
        log.finish().unwrap();
        let text = std::fs::read_to_string(format!("{prefix}.{}", std::process::id())).unwrap();
        let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split(' ').collect()).collect();
        // As pgbench's 001 test reads them: client, transaction number from 1, latency in
        // microseconds, script, epoch seconds and microseconds, lag, retries.
        assert_eq!(lines[0][..4], ["1", "1", "5000", "0"]);
        assert_eq!(lines[0][6..], ["2", "0"]);
        // A failed and a skipped transaction have no lag, as pgbench writes them.
        assert_eq!(lines[1][..4], ["1", "2", "failed", "0"]);
        assert_eq!(lines[1][6..], ["0", "1"]);
        assert_eq!(lines[2][..4], ["0", "1", "skipped", "0"]);
        assert_eq!(lines[2][6..], ["0", "0"]);
        let epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert!(lines[0][4].parse::<u64>().unwrap().abs_diff(epoch) < 5);
    }

    #[test]
    fn a_link_planted_where_a_log_goes_is_refused_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("lg").display().to_string();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, format!("{prefix}.{}", std::process::id())).unwrap();
        let spec = LogSpec {
            prefix,
            sampling_rate: 1.0,
            aggregate_s: 0,
            throttled: false,
            with_retries: false,
            failures_detailed: false,
        };
        let err = TxnLogFiles::create(spec, 1, 1, 1).unwrap_err();
        assert!(err.starts_with("could not open logfile"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    }

    #[test]
    fn aggregation_sums_an_interval() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("ag").display().to_string();
        let spec = LogSpec {
            prefix: prefix.clone(),
            sampling_rate: 1.0,
            aggregate_s: 60,
            throttled: false,
            with_retries: false,
            failures_detailed: false,
        };
        let log = TxnLogFiles::create(spec, 2, 1, 1).unwrap();
        let t0 = now_ns();
        log.record(&end(0, t0, t0, t0 + 3_000, None, 1));
        log.record(&end(0, t0, t0, t0 + 5_000, None, 3));
        log.record(&end(0, t0, t0, t0 + 5_000, Some(ErrorClass::Deadlock), 1));
        log.record(&TxnEnd {
            skipped: true,
            ..end(0, t0, t0, t0, None, 0)
        });
        // A minute later: the first interval has ended and is written; the second has not
        // ended when the run does, and is not written, as pgbench leaves it.
        let later = t0 + 61_000_000_000;
        log.record(&end(0, later, later, later + 1_000, None, 1));
        log.finish().unwrap();
        let text = std::fs::read_to_string(format!("{prefix}.{}", std::process::id())).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let f: Vec<&str> = text.trim_end().split(' ').collect();
        assert_eq!(f.len(), 15, "{text}");
        assert_eq!(f[1..6], ["2", "8", "34", "3", "5"]);
        assert_eq!(
            f[10..],
            ["1", "1", "2", "0", "1"],
            "skipped retried retries serialization deadlock"
        );
        // The second thread's file exists, empty.
        let second = std::fs::read_to_string(format!("{prefix}.{}.1", std::process::id())).unwrap();
        assert!(second.is_empty());
    }
}
