//! sysbench's `--report-checkpoints=LIST` under `dbperf lua SCRIPT run`: at each listed
//! second of the measurement, `[ Ns ] Checkpoint report:` and the full cumulative report (the
//! script's `report_cumulative` hook, or sysbench's default: `SQL statistics:`, `General
//! statistics:`, ...) for the time since the previous checkpoint, whose counts then start
//! again; the report at the end covers the time after the last one. `total time` stays the
//! time since the start, as sysbench's does; the rates divide by the span's own length.
//!
//! [`Checkpoints`] is handed every stored interval (1 s) as the run goes; what dbperf itself
//! records (the run directory, its own report) keeps covering the whole run. [`parse`] reads
//! the list as sysbench does.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use dbperf_engine::{ConnectionTally, IntervalReport, RunOutcome, Stats};
use mlua::Lua;

use super::api::Shared;
use super::commands::{print_cumulative, Span};

/// sysbench's limit on the number of checkpoints.
pub const MAX_CHECKPOINTS: usize = 256;

/// `--report-checkpoints`' list as sysbench reads it: comma-separated whole seconds (empty
/// items skipped), at most [`MAX_CHECKPOINTS`], sorted. The error is sysbench's message.
pub fn parse(list: &str) -> Result<Vec<u64>, String> {
    let mut at = Vec::new();
    for item in list.split(',').filter(|i| !i.is_empty()) {
        let v: u64 = item
            .trim_start()
            .parse()
            .ok()
            .filter(|v| *v <= i32::MAX as u64)
            .ok_or_else(|| format!("FATAL: Invalid value for --report-checkpoints: '{item}'"))?;
        at.push(v);
        if at.len() > MAX_CHECKPOINTS {
            return Err(format!(
                "FATAL: Too many checkpoints in --report-checkpoints (up to {MAX_CHECKPOINTS} can be defined)"
            ));
        }
    }
    at.sort_unstable();
    Ok(at)
}

/// Where the last report left the counts that are not the engine's per-interval ones: the
/// statements and reconnects outside events, the measured time, each connection's tally.
#[derive(Clone, Debug, Default)]
pub struct Since {
    outside: [u64; 3],
    reconnects: u64,
    measured_s: f64,
    tallies: Vec<ConnectionTally>,
}

impl Since {
    /// The start of the run.
    pub fn start() -> Since {
        Since::default()
    }

    /// Adds to `stats` the statements sent outside events ([`Shared::outside`]) and the
    /// script's own reconnects since this point.
    pub fn add_outside(&self, shared: &Shared, stats: &mut Stats) {
        stats.reconnects += shared
            .reconnects
            .load(Ordering::Relaxed)
            .saturating_sub(self.reconnects);
        for ((q, n), was) in stats.queries.iter_mut().zip(&shared.outside).zip(self.outside) {
            *q += n.load(Ordering::Relaxed).saturating_sub(was);
        }
    }

    /// Each connection's share since this point, from its tally `now`.
    fn tallies_since(&self, now: &[ConnectionTally]) -> Vec<ConnectionTally> {
        now.iter()
            .enumerate()
            .map(|(i, t)| {
                let was = self.tallies.get(i).copied().unwrap_or_default();
                ConnectionTally {
                    events: t.events.saturating_sub(was.events),
                    busy_ns: t.busy_ns.saturating_sub(was.busy_ns),
                }
            })
            .collect()
    }

    /// This point.
    fn now(shared: &Shared, measured_s: f64, tallies: &[ConnectionTally]) -> Since {
        Since {
            outside: std::array::from_fn(|i| shared.outside[i].load(Ordering::Relaxed)),
            reconnects: shared.reconnects.load(Ordering::Relaxed),
            measured_s,
            tallies: tallies.to_vec(),
        }
    }
}

/// The checkpoints of a run and what has been measured since the last one.
pub struct Checkpoints {
    shared: Arc<Shared>,
    /// The state whose `report_cumulative` hook, if the script sets one, the checkpoints call
    /// (sysbench's checkpoint thread's).
    lua: Lua,
    /// The checkpoints, sorted; `next` is the first not reached.
    at: Vec<u64>,
    next: usize,
    /// The measured intervals since the last checkpoint, merged.
    period: Option<Stats>,
    /// Measured seconds so far.
    measured_s: f64,
    /// Each connection's tally with the last interval.
    tallies: Vec<ConnectionTally>,
    /// Connections in the run.
    threads: usize,
    since: Since,
    /// A checkpoint reached (its time on the run's clock, as the live lines give it), printed
    /// after the live line of the interval that reached it, as sysbench's line comes first.
    due: Option<f64>,
    report_interval: f64,
    percentile: f64,
    print_default: bool,
}

impl Checkpoints {
    /// The checkpoints `at` (seconds, sorted; 0 is never reached, as under sysbench), the
    /// hook's state `lua`, `--report-interval`, `--percentile`; `print_default`: sysbench's
    /// `Checkpoint report:` line and default report are printed (`--verbosity` 3 and more).
    pub fn new(
        shared: Arc<Shared>,
        lua: Lua,
        at: Vec<u64>,
        report_interval: f64,
        percentile: f64,
        print_default: bool,
    ) -> Checkpoints {
        let at: Vec<u64> = at.into_iter().filter(|&s| s > 0).collect();
        Checkpoints {
            shared,
            lua,
            at,
            next: 0,
            period: None,
            measured_s: 0.0,
            tallies: Vec::new(),
            threads: 0,
            since: Since::start(),
            due: None,
            report_interval,
            percentile,
            print_default,
        }
    }

    /// A stored interval: counted, and the checkpoint it reaches printed, now or, when a live
    /// line ends with this interval, after it ([`Checkpoints::flush`]). The run's last
    /// interval reaches none: the report at the end covers it.
    pub fn interval(&mut self, r: &IntervalReport<'_>) {
        // One still due: the live line it waited for did not come.
        self.flush();
        match &mut self.period {
            Some(p) if !r.warmup => p.add(r.stats),
            Some(_) => {}
            None => {
                let mut p = r.stats.clone();
                if r.warmup {
                    p.reset();
                }
                self.period = Some(p);
            }
        }
        match r.warmup {
            false => self.measured_s += r.end_s - r.start_s,
            // The first span's threads fairness starts after the warmup, as its counts do.
            true => self.since.tallies = r.per_connection.to_vec(),
        }
        self.tallies.clear();
        self.tallies.extend_from_slice(r.per_connection);
        self.threads = r.connections;
        // Seconds of the measurement (dbperf's --warmup-time, which sysbench 1.0 has not, comes
        // before them), reached at the end of a stored interval (whole seconds).
        let reached = self.at[self.next..]
            .iter()
            .take_while(|&&s| s as f64 <= self.measured_s + 0.001)
            .count();
        if reached == 0 || r.last || r.warmup {
            return;
        }
        self.next += reached;
        self.due = Some(r.end_s);
        let ri = self.report_interval;
        let line_follows = ri > 0.0 && ((r.end_s / ri).round() * ri - r.end_s).abs() < 0.01;
        if !line_follows {
            self.flush();
        }
    }

    /// Prints the checkpoint reached, if one is due, and starts the next span.
    pub fn flush(&mut self) {
        let Some(at) = self.due.take() else { return };
        let Some(period) = &mut self.period else { return };
        let mut stats = period.clone();
        period.reset();
        self.since.add_outside(&self.shared, &mut stats);
        if self.print_default {
            println!("[ {at:.0}s ] Checkpoint report:");
        }
        let per_connection = self.since.tallies_since(&self.tallies);
        let span = Span {
            stats: &stats,
            threads: self.threads,
            total_s: self.measured_s,
            interval_s: self.measured_s - self.since.measured_s,
            per_connection: &per_connection,
        };
        print_cumulative(
            Some(&self.lua),
            &self.shared,
            &span,
            self.percentile,
            self.print_default,
        );
        self.since = Since::now(&self.shared, self.measured_s, &self.tallies);
    }

    /// The report at the end of the run, in the main state `main`: the time after the last
    /// checkpoint.
    pub fn last(&mut self, main: &Lua, outcome: &RunOutcome) {
        self.flush();
        let mut stats = self.period.clone().unwrap_or_else(|| outcome.total.clone());
        self.since.add_outside(&self.shared, &mut stats);
        let per_connection = self.since.tallies_since(&outcome.per_connection);
        let span = Span {
            stats: &stats,
            threads: 0,
            total_s: outcome.measured_s,
            interval_s: outcome.measured_s - self.since.measured_s,
            per_connection: &per_connection,
        };
        print_cumulative(Some(main), &self.shared, &span, self.percentile, self.print_default);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_read_as_sysbench_reads_it() {
        assert_eq!(parse("3,1").unwrap(), [1, 3]);
        assert_eq!(parse("1,,2").unwrap(), [1, 2]);
        assert_eq!(parse("").unwrap(), Vec::<u64>::new());
        assert_eq!(
            parse("1,x").unwrap_err(),
            "FATAL: Invalid value for --report-checkpoints: 'x'"
        );
        assert_eq!(
            parse("-1").unwrap_err(),
            "FATAL: Invalid value for --report-checkpoints: '-1'"
        );
        assert!(parse("2147483648").is_err());
        let many = vec!["1"; MAX_CHECKPOINTS + 1].join(",");
        assert!(parse(&many).unwrap_err().contains("Too many checkpoints"));
    }
}
