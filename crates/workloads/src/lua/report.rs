//! What `dbperf lua SCRIPT run` prints on stdout where sysbench 1.0.20 prints its own: the
//! `Running the test with following options:` block, the default intermediate line (with
//! `--report-interval` and no `report_intermediate` hook) and the default cumulative report
//! (`SQL statistics:` when the script connected, `General statistics:`, `Latency (ms):`,
//! `Threads fairness:`), filled with dbperf's measured numbers. The one formatter of these
//! texts: a run with a server, a run without one and the checkpoint reports
//! ([`super::checkpoints`]) all print through it.

use std::fmt::Write;

use dbperf_engine::{ConnectionTally, Stats};

/// The run's settings sysbench's block names.
pub struct RunMode<'a> {
    /// `--threads`.
    pub threads: usize,
    /// `--rate` (0: none).
    pub rate: f64,
    /// `--report-interval` in seconds (0: none).
    pub report_interval: f64,
    /// `--report-checkpoints`, sorted.
    pub checkpoints: &'a [u64],
    /// `--rand-seed` as given (0: from the clock).
    pub seed: u64,
}

/// sysbench's block before a run, up to and including `Initializing worker threads...` and its
/// blank line; `Threads started!` ([`STARTED`]) follows once every thread has run `thread_init`.
pub fn run_mode(m: &RunMode<'_>) -> String {
    let mut s = String::from("Running the test with following options:\n");
    let _ = writeln!(s, "Number of threads: {}", m.threads);
    if m.rate > 0.0 {
        let _ = writeln!(s, "Target transaction rate: {}/sec", m.rate as u64);
    }
    if m.report_interval > 0.0 {
        let _ = writeln!(
            s,
            "Report intermediate results every {} second(s)",
            m.report_interval as u64
        );
    }
    if !m.checkpoints.is_empty() {
        let list: Vec<String> = m.checkpoints.iter().map(u64::to_string).collect();
        let _ = writeln!(s, "Report checkpoint(s) at {} seconds", list.join(", "));
    }
    match m.seed {
        0 => s.push_str("Initializing random number generator from current time\n\n"),
        seed => {
            let _ = write!(s, "Initializing random number generator from seed ({seed}).\n\n");
        }
    }
    s.push_str("\nInitializing worker threads...\n\n");
    s
}

/// What sysbench prints once every thread has started (a blank line after it).
pub const STARTED: &str = "Threads started!\n\n";

/// An interval as sysbench's default hook reports it.
pub struct Interval<'a> {
    /// Seconds since the run started.
    pub total_s: f64,
    /// The interval's length, seconds.
    pub interval_s: f64,
    /// Threads still running.
    pub threads: usize,
    /// The interval's counts and latencies.
    pub stats: &'a Stats,
    /// `--percentile`.
    pub percentile: f64,
    /// The script opened a connection: sysbench's SQL line, else its plain one.
    pub sql: bool,
}

/// sysbench's default intermediate line (a newline at its end).
pub fn intermediate(i: &Interval<'_>) -> String {
    let s = i.interval_s.max(1e-9);
    let st = i.stats;
    let pct = ms(st.response.value_at_quantile(i.percentile / 100.0) as f64, st);
    let p = i.percentile as u32;
    if !i.sql {
        return format!(
            "[ {:.0}s ] thds: {} eps: {:4.2} lat (ms,{p}%): {pct:4.2}\n",
            i.total_s,
            i.threads,
            st.transactions as f64 / s
        );
    }
    let [r, w, o] = st.queries.map(|q| q as f64 / s);
    format!(
        "[ {:.0}s ] thds: {} tps: {:4.2} qps: {:4.2} (r/w/o: {r:4.2}/{w:4.2}/{o:4.2}) lat (ms,{p}%): {pct:4.2} \
         err/s: {:4.2} reconn/s: {:4.2}\n",
        i.total_s,
        i.threads,
        st.transactions as f64 / s,
        r + w + o,
        st.total_errors() as f64 / s,
        st.reconnects as f64 / s
    )
}

/// A whole run, or the part of it since the last checkpoint, as sysbench's default cumulative
/// report gives it.
pub struct Cumulative<'a> {
    /// The measured seconds so far (sysbench's `total time`).
    pub total_s: f64,
    /// The seconds `stats` cover, which the rates divide by: `total_s` but after a checkpoint.
    pub interval_s: f64,
    /// The counts and latencies.
    pub stats: &'a Stats,
    /// `--percentile`.
    pub percentile: f64,
    /// The script opened a connection: the `SQL statistics:` section comes first.
    pub sql: bool,
    /// Each thread's events and the time they took.
    pub per_connection: &'a [ConnectionTally],
}

/// sysbench's `--histogram`, printed before its cumulative report: latencies (ms) on a log
/// scale of about 1.8 % steps (sysbench's 1,024 buckets from 0.001 ms to 100 s), a bar of up to
/// 40 stars each, and a line holding one space after it.
pub fn histogram(h: &hdrhistogram::Histogram<u64>) -> String {
    let mut s = String::from("Latency histogram (values are in milliseconds)\n");
    let rows: Vec<(f64, u64)> = match h.is_empty() {
        true => Vec::new(),
        false => h
            .iter_log(1, 1.018)
            .map(|v| (v.value_iterated_to() as f64 / 1000.0, v.count_since_last_iteration()))
            .filter(|(_, n)| *n > 0)
            .collect(),
    };
    let max = rows.iter().map(|(_, n)| *n).max().unwrap_or(0);
    if max > 0 {
        s.push_str("       value  ------------- distribution ------------- count\n");
        for (value, n) in rows {
            let width = (n as f64 * 40.0 / max as f64 + 0.5).floor() as usize;
            let _ = writeln!(s, "{value:12.3} |{:<40} {n}", "*".repeat(width.min(40)));
        }
    }
    s.push_str(" \n");
    s
}

/// A latency of the response histogram (microseconds) in milliseconds; 0 when it is empty.
fn ms(us: f64, st: &Stats) -> f64 {
    if st.response.is_empty() {
        0.0
    } else {
        us / 1000.0
    }
}

/// sysbench's default cumulative report, from its first line to the blank line that ends it.
pub fn cumulative(c: &Cumulative<'_>) -> String {
    let st = c.stats;
    let secs = c.interval_s.max(1e-9);
    let mut s = String::new();
    if c.sql {
        let [r, w, o] = st.queries;
        let q = r + w + o;
        let per = |n: u64| n as f64 / secs;
        s.push_str("SQL statistics:\n    queries performed:\n");
        let _ = writeln!(s, "        read:                            {r}");
        let _ = writeln!(s, "        write:                           {w}");
        let _ = writeln!(s, "        other:                           {o}");
        let _ = writeln!(s, "        total:                           {q}");
        let ev = st.transactions;
        let _ = writeln!(
            s,
            "    transactions:                        {ev:<6} ({:.2} per sec.)",
            per(ev)
        );
        let _ = writeln!(
            s,
            "    queries:                             {q:<6} ({:.2} per sec.)",
            per(q)
        );
        let err = st.total_errors();
        let _ = writeln!(
            s,
            "    ignored errors:                      {err:<6} ({:.2} per sec.)",
            per(err)
        );
        let rc = st.reconnects;
        let _ = writeln!(
            s,
            "    reconnects:                          {rc:<6} ({:.2} per sec.)",
            per(rc)
        );
    }
    let h = &st.response;
    let sum_ms = ms(h.mean() * h.len() as f64, st);
    s.push_str("\nGeneral statistics:\n");
    let _ = writeln!(s, "    total time:                          {:.4}s", c.total_s);
    let _ = writeln!(s, "    total number of events:              {}", st.transactions);
    s.push_str("\nLatency (ms):\n");
    let _ = writeln!(s, "         min: {:39.2}", ms(h.min() as f64, st));
    let _ = writeln!(s, "         avg: {:39.2}", ms(h.mean(), st));
    let _ = writeln!(s, "         max: {:39.2}", ms(h.max() as f64, st));
    let p = c.percentile as i64;
    if p > 0 {
        let _ = writeln!(
            s,
            "        {p:3}th percentile: {:27.2}",
            ms(h.value_at_quantile(c.percentile / 100.0) as f64, st)
        );
    } else {
        s.push_str("         percentile stats:               disabled\n");
    }
    let _ = writeln!(s, "         sum: {sum_ms:39.2}");
    s.push('\n');
    let n = c.per_connection.len().max(1) as f64;
    let events: u64 = c.per_connection.iter().map(|t| t.events).sum();
    let events_avg = events as f64 / n;
    let time_avg = sum_ms / 1000.0 / n;
    let sd = |f: &dyn Fn(&ConnectionTally) -> f64, avg: f64| {
        (c.per_connection.iter().map(|t| (f(t) - avg).powi(2)).sum::<f64>() / n).sqrt()
    };
    let events_sd = sd(&|t| t.events as f64, events_avg);
    let time_sd = sd(&|t| t.busy_ns as f64 / 1e9, time_avg);
    s.push_str("Threads fairness:\n");
    let _ = writeln!(s, "    events (avg/stddev):           {events_avg:.4}/{events_sd:3.2}");
    let _ = writeln!(s, "    execution time (avg/stddev):   {time_avg:.4}/{time_sd:3.2}");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_engine::OpTable;

    fn stats() -> Stats {
        let ops = OpTable {
            transactions: vec!["event".into()],
            statements: vec![],
        };
        let mut st = Stats::new(&ops);
        for us in [1000, 3000] {
            st.record_txn(0, us * 1000, us * 1000, false);
        }
        st.queries = [4, 2, 0];
        st
    }

    #[test]
    fn the_run_mode_block_is_sysbenchs() {
        let m = RunMode {
            threads: 2,
            rate: 0.0,
            report_interval: 0.0,
            checkpoints: &[],
            seed: 0,
        };
        assert_eq!(
            run_mode(&m),
            "Running the test with following options:\nNumber of threads: 2\n\
             Initializing random number generator from current time\n\n\nInitializing worker threads...\n\n"
        );
        let m = RunMode {
            threads: 1,
            rate: 10.0,
            report_interval: 2.0,
            checkpoints: &[1, 3],
            seed: 7,
        };
        assert!(run_mode(&m).contains(
            "Target transaction rate: 10/sec\nReport intermediate results every 2 second(s)\n\
             Report checkpoint(s) at 1, 3 seconds\nInitializing random number generator from seed (7).\n"
        ));
    }

    #[test]
    fn the_cumulative_report_has_sysbenchs_layout() {
        let st = stats();
        let per = [
            ConnectionTally {
                events: 1,
                busy_ns: 1_000_000,
            },
            ConnectionTally {
                events: 1,
                busy_ns: 3_000_000,
            },
        ];
        let text = cumulative(&Cumulative {
            total_s: 2.0,
            interval_s: 2.0,
            stats: &st,
            percentile: 95.0,
            sql: true,
            per_connection: &per,
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "SQL statistics:");
        assert_eq!(lines[2], "        read:                            4");
        assert_eq!(
            lines[6],
            "    transactions:                        2      (1.00 per sec.)"
        );
        assert!(text.contains("\nGeneral statistics:\n    total time:                          2.0000s\n"));
        assert!(
            text.contains("         95th percentile:                        3.00\n"),
            "{text}"
        );
        assert!(
            text.contains("         sum:                                    4.00\n"),
            "{text}"
        );
        assert!(text.contains("    events (avg/stddev):           1.0000/0.00\n"));
        assert!(
            text.contains("    execution time (avg/stddev):   0.0020/0.00\n"),
            "{text}"
        );
        // Without a connection: sysbench's plain report.
        let plain = cumulative(&Cumulative {
            sql: false,
            ..Cumulative {
                total_s: 2.0,
                interval_s: 2.0,
                stats: &st,
                percentile: 95.0,
                sql: true,
                per_connection: &per,
            }
        });
        assert!(plain.starts_with("\nGeneral statistics:\n"));
    }

    #[test]
    fn intermediate_lines_are_sysbenchs() {
        let st = stats();
        let i = Interval {
            total_s: 2.0,
            interval_s: 2.0,
            threads: 1,
            stats: &st,
            percentile: 95.0,
            sql: true,
        };
        assert_eq!(
            intermediate(&i),
            "[ 2s ] thds: 1 tps: 1.00 qps: 3.00 (r/w/o: 2.00/1.00/0.00) lat (ms,95%): 3.00 err/s: 0.00 reconn/s: 0.00\n"
        );
        let plain = Interval { sql: false, ..i };
        let h = histogram(&st.response);
        let rows: Vec<&str> = h.lines().collect();
        assert_eq!(rows[0], "Latency histogram (values are in milliseconds)");
        assert_eq!(rows.len(), 5, "{h}");
        assert!(rows[2].ends_with(&format!("|{} 1", "*".repeat(40))), "{h}");
        assert_eq!(rows[4], " ");
        assert_eq!(intermediate(&plain), "[ 2s ] thds: 1 eps: 1.00 lat (ms,95%): 3.00\n");
    }
}
