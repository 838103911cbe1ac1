//! Recorders: latency histograms and counters for one interval on one client thread.
//!
//! A [`Stats`] is owned by a client thread and written without locks; at each interval
//! boundary the thread swaps it for an empty one and sends the full one to the
//! collector, which merges the threads' copies (`Stats::add`) and hands the emptied
//! structure back for reuse. Histograms count microseconds with 3 significant digits
//! from 1 µs to one hour; larger values saturate at the top.
//!
//! Histograms start covering 2 ms and grow when a longer latency arrives, and empty ones are
//! neither merged nor cleared: a thread's statistics then take tens of kilobytes, not the
//! megabytes of full-range histograms for every statement kind (a thread per connection
//! would pay that per connection, and the collector would merge it every interval).

use hdrhistogram::Histogram;

use crate::outcome::{ErrorClass, QueryClass};

/// Highest trackable latency: one hour in microseconds.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Names of what a workload measures: transaction types and statement kinds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpTable {
    /// Transaction types, e.g. `["oltp_read_write"]` or TPC-C's five.
    pub transactions: Vec<String>,
    /// Statement kinds, e.g. `["point_select", "begin", ...]`.
    pub statements: Vec<String>,
}

/// Statement kinds named while a run goes, for workloads whose statements are known only when
/// they are sent (a user's script): each name gets the next index after the
/// [`OpTable::statements`] given at the start, shared by every client thread. Workers cache
/// the index, so the lock is taken once per new name and worker, not per statement.
#[derive(Debug, Default)]
pub struct StatementNames {
    first: usize,
    names: std::sync::Mutex<(Vec<String>, std::collections::HashMap<String, u16>)>,
}

impl StatementNames {
    /// Names that follow the `first` statement kinds fixed at the start.
    pub fn after(first: usize) -> StatementNames {
        StatementNames {
            first,
            names: Default::default(),
        }
    }

    /// The kind index of `name`, given a new one the first time it is asked for (saturating at
    /// `u16::MAX`, whose statements are then counted but not timed apart).
    pub fn kind(&self, name: &str) -> u16 {
        let mut g = self.names.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&k) = g.1.get(name) {
            return k;
        }
        let k = (self.first + g.0.len()).min(u16::MAX as usize) as u16;
        g.0.push(name.to_string());
        g.1.insert(name.to_string(), k);
        k
    }

    /// The name of kind `index` if it was named here.
    pub fn name(&self, index: usize) -> Option<String> {
        let g = self.names.lock().unwrap_or_else(|p| p.into_inner());
        index.checked_sub(self.first).and_then(|i| g.0.get(i).cloned())
    }

    /// Every name given so far, in index order.
    pub fn all(&self) -> Vec<String> {
        self.names.lock().unwrap_or_else(|p| p.into_inner()).0.clone()
    }
}

/// Range a fresh histogram covers before it first grows: 2,048 µs, one bucket of counts.
const INITIAL_HIGH_US: u64 = 2048;

/// A fresh histogram: 3 significant digits from 1 µs, growing as far as [`MAX_LATENCY_US`].
pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, INITIAL_HIGH_US, 3).expect("static histogram bounds are valid");
    h.auto(true);
    h
}

/// Records `us`, saturating at [`MAX_LATENCY_US`] (the histogram grows to hold it).
#[inline]
fn record(h: &mut Histogram<u64>, us: u64) {
    // Growing to at most an hour of microseconds cannot overflow a u64 histogram's index.
    let _ = h.record(us.min(MAX_LATENCY_US));
}

/// Response and service time of one transaction type.
#[derive(Clone, Debug)]
pub struct TxnStats {
    /// From intended start to end, microseconds.
    pub response: Histogram<u64>,
    /// From actual start to end, microseconds.
    pub service: Histogram<u64>,
    /// Transactions of this type given up on after their tries (see [`Stats::failed`]).
    pub failed: u64,
    /// Those of them that ended in a deadlock ([`Stats::failed_deadlocks`]).
    pub failed_deadlocks: u64,
    /// Transactions of this type tried more than once ([`Stats::retried`]).
    pub retried: u64,
    /// Their tries after the first ([`Stats::retries`] of the retryable errors).
    pub retries: u64,
}

/// Everything measured in one interval (or, merged, in a whole run).
#[derive(Clone, Debug)]
pub struct Stats {
    /// Response time of every completed transaction.
    pub response: Histogram<u64>,
    /// Service time of every completed transaction.
    pub service: Histogram<u64>,
    /// Per transaction type, indexed like [`OpTable::transactions`], when there are several;
    /// empty for a workload of one type, whose times are [`Stats::response`] and
    /// [`Stats::service`] (recorded once, not twice, per transaction). [`Stats::per_type`]
    /// gives both cases alike.
    pub per_txn: Vec<TxnStats>,
    /// The workload has exactly one transaction type.
    single_type: bool,
    /// Service time per statement kind, indexed like [`OpTable::statements`].
    pub per_stmt: Vec<Histogram<u64>>,
    /// Completed transactions (including expected rollbacks).
    pub transactions: u64,
    /// Transactions that ended in a rollback the benchmark asks for.
    pub expected_rollbacks: u64,
    /// Statements by [`QueryClass`]: read, write, other.
    pub queries: [u64; 3],
    /// Failed attempts by [`ErrorClass`].
    pub errors: [u64; ErrorClass::COUNT],
    /// Attempts run again after a retryable error.
    pub retries: u64,
    /// Transactions run again at least once ([`crate::RunConfig::max_tries`]).
    pub retried: u64,
    /// Transactions given up after their last try ([`crate::RunConfig::max_tries`]).
    pub failed: u64,
    /// Of [`Stats::failed`], those whose last try ended in a deadlock; the others ended in
    /// a serialization failure or another retryable error (pgbench's `--failures-detailed`).
    pub failed_deadlocks: u64,
    /// Open-loop transactions not run because they were already too late at their turn
    /// ([`crate::RunConfig::skip_late`]).
    pub skipped: u64,
    /// Successful reconnects.
    pub reconnects: u64,
    /// Reconnect attempts the server refused or did not answer: it was down, not merely a
    /// connection killed.
    pub reconnect_failures: u64,
    /// Open-loop transactions that started later than the late threshold.
    pub late_starts: u64,
    /// Connection-nanoseconds spent reconnecting after a lost connection (a connection down
    /// for the whole of a 1 s interval adds 1e9): how long the server was unreachable.
    pub down_ns: u64,
}

impl Stats {
    /// Empty statistics shaped for `ops`.
    pub fn new(ops: &OpTable) -> Stats {
        Stats {
            response: new_histogram(),
            service: new_histogram(),
            per_txn: ops
                .transactions
                .iter()
                .filter(|_| ops.transactions.len() > 1)
                .map(|_| TxnStats {
                    response: new_histogram(),
                    service: new_histogram(),
                    failed: 0,
                    failed_deadlocks: 0,
                    retried: 0,
                    retries: 0,
                })
                .collect(),
            single_type: ops.transactions.len() == 1,
            per_stmt: ops.statements.iter().map(|_| new_histogram()).collect(),
            transactions: 0,
            expected_rollbacks: 0,
            queries: [0; 3],
            errors: [0; ErrorClass::COUNT],
            retries: 0,
            retried: 0,
            failed: 0,
            failed_deadlocks: 0,
            skipped: 0,
            reconnects: 0,
            reconnect_failures: 0,
            late_starts: 0,
            down_ns: 0,
        }
    }

    /// Response and service times per transaction type, indexed like
    /// [`OpTable::transactions`] (a workload of one type: the totals).
    pub fn per_type(&self) -> impl Iterator<Item = (&Histogram<u64>, &Histogram<u64>)> {
        let single = self.single_type.then_some((&self.response, &self.service));
        single
            .into_iter()
            .chain(self.per_txn.iter().map(|t| (&t.response, &t.service)))
    }

    /// Records a completed transaction. Times in nanoseconds.
    #[inline]
    pub fn record_txn(&mut self, kind: u16, response_ns: u64, service_ns: u64, expected_rollback: bool) {
        let (r, s) = (to_us(response_ns), to_us(service_ns));
        record(&mut self.response, r);
        record(&mut self.service, s);
        if let Some(t) = self.per_txn.get_mut(kind as usize) {
            record(&mut t.response, r);
            record(&mut t.service, s);
        }
        self.transactions += 1;
        self.expected_rollbacks += expected_rollback as u64;
    }

    /// Records the statements a transaction attempt logged.
    #[inline]
    pub fn record_statements(&mut self, log: &StatementLog) {
        for s in &log.samples {
            let k = s.kind as usize;
            if k >= self.per_stmt.len() {
                // A kind named during the run ([`StatementNames`]): its histogram is made the
                // first time this recorder sees it, and kept when the recorder is reused.
                self.per_stmt.resize_with(k + 1, new_histogram);
            }
            record(&mut self.per_stmt[k], to_us(s.service_ns));
            self.queries[s.class as usize] += 1;
        }
    }

    /// Total statements.
    pub fn total_queries(&self) -> u64 {
        self.queries.iter().sum()
    }

    /// Total failed attempts.
    pub fn total_errors(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Stats) {
        add_hist(&mut self.response, &other.response);
        add_hist(&mut self.service, &other.service);
        for (a, b) in self.per_txn.iter_mut().zip(&other.per_txn) {
            add_hist(&mut a.response, &b.response);
            add_hist(&mut a.service, &b.service);
            a.failed += b.failed;
            a.failed_deadlocks += b.failed_deadlocks;
            a.retried += b.retried;
            a.retries += b.retries;
        }
        if other.per_stmt.len() > self.per_stmt.len() {
            self.per_stmt.resize_with(other.per_stmt.len(), new_histogram);
        }
        for (a, b) in self.per_stmt.iter_mut().zip(&other.per_stmt) {
            add_hist(a, b);
        }
        self.transactions += other.transactions;
        self.expected_rollbacks += other.expected_rollbacks;
        for i in 0..3 {
            self.queries[i] += other.queries[i];
        }
        for i in 0..ErrorClass::COUNT {
            self.errors[i] += other.errors[i];
        }
        self.retries += other.retries;
        self.retried += other.retried;
        self.failed += other.failed;
        self.failed_deadlocks += other.failed_deadlocks;
        self.skipped += other.skipped;
        self.reconnects += other.reconnects;
        self.reconnect_failures += other.reconnect_failures;
        self.late_starts += other.late_starts;
        self.down_ns += other.down_ns;
    }

    /// Empties every histogram and counter, keeping the allocations (an empty histogram is
    /// not touched, so its pages are never made resident).
    pub fn reset(&mut self) {
        clear(&mut self.response);
        clear(&mut self.service);
        for t in &mut self.per_txn {
            clear(&mut t.response);
            clear(&mut t.service);
            (t.failed, t.failed_deadlocks, t.retried, t.retries) = (0, 0, 0, 0);
        }
        for h in &mut self.per_stmt {
            clear(h);
        }
        self.transactions = 0;
        self.expected_rollbacks = 0;
        self.queries = [0; 3];
        self.errors = [0; ErrorClass::COUNT];
        self.retries = 0;
        self.retried = 0;
        self.failed = 0;
        self.failed_deadlocks = 0;
        self.skipped = 0;
        self.reconnects = 0;
        self.reconnect_failures = 0;
        self.late_starts = 0;
        self.down_ns = 0;
    }

    /// Nothing completed while connections were down: the server was unreachable for this
    /// interval (or run), as opposed to idle, frozen or merely slow.
    pub fn server_unreachable(&self) -> bool {
        self.transactions == 0 && self.down_ns > 0
    }
}

fn add_hist(a: &mut Histogram<u64>, b: &Histogram<u64>) {
    if b.is_empty() {
        return;
    }
    // Every engine histogram grows (`new_histogram`), so `a` takes `b`'s range if it must.
    a.add(b).expect("engine histograms grow to hold each other");
}

fn clear(h: &mut Histogram<u64>) {
    if !h.is_empty() {
        h.reset();
    }
}

#[inline]
fn to_us(ns: u64) -> u64 {
    (ns + 500) / 1000
}

/// One statement's service time, as logged by a worker.
#[derive(Clone, Copy, Debug)]
pub struct StatementSample {
    /// Index into [`OpTable::statements`].
    pub kind: u16,
    /// Nanoseconds from send to the end of its result.
    pub service_ns: u64,
    /// Read, write or other.
    pub class: QueryClass,
}

/// The statements of one transaction attempt. Reused across transactions, so logging
/// does not allocate once it has reached the largest transaction's size.
#[derive(Debug, Default)]
pub struct StatementLog {
    samples: Vec<StatementSample>,
}

impl StatementLog {
    /// A log with room for `n` statements.
    pub fn with_capacity(n: usize) -> StatementLog {
        StatementLog {
            samples: Vec::with_capacity(n),
        }
    }

    /// Logs a statement of `kind` that was sent at `started_ns` and has just ended.
    #[inline]
    pub fn record(&mut self, kind: u16, started_ns: u64, class: QueryClass) {
        let service_ns = crate::clock::now_ns().saturating_sub(started_ns);
        self.samples.push(StatementSample {
            kind,
            service_ns,
            class,
        });
    }

    /// Logs a statement of `kind` whose service time was measured elsewhere.
    #[inline]
    pub fn push_timed(&mut self, kind: u16, service_ns: u64, class: QueryClass) {
        self.samples.push(StatementSample {
            kind,
            service_ns,
            class,
        });
    }

    /// The statements logged since the last clear.
    pub fn samples(&self) -> &[StatementSample] {
        &self.samples
    }

    /// Forgets the logged statements, keeping the allocation.
    pub fn clear(&mut self) {
        self.samples.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> OpTable {
        OpTable {
            transactions: vec!["t".into()],
            statements: vec!["a".into(), "b".into()],
        }
    }

    #[test]
    fn per_type_times_come_from_the_totals_for_one_type_and_apart_for_several() {
        let mut one = Stats::new(&ops());
        one.record_txn(0, 3_000, 2_000, false);
        let types: Vec<_> = one.per_type().map(|(r, s)| (r.len(), r.max(), s.max())).collect();
        assert_eq!(types, [(1, 3, 2)]);
        assert!(one.per_txn.is_empty(), "one type is recorded once");

        let mut two = Stats::new(&OpTable {
            transactions: vec!["x".into(), "y".into()],
            statements: Vec::new(),
        });
        two.record_txn(1, 5_000, 4_000, false);
        two.record_txn(1, 5_000, 4_000, false);
        let types: Vec<_> = two.per_type().map(|(r, _)| r.len()).collect();
        assert_eq!(types, [0, 2]);
        assert_eq!(two.response.len(), 2);
    }

    #[test]
    fn merge_adds_counts_and_histograms() {
        let mut a = Stats::new(&ops());
        let mut b = Stats::new(&ops());
        a.record_txn(0, 1_000_000, 900_000, false);
        b.record_txn(0, 3_000_000, 2_000_000, true);
        b.errors[ErrorClass::Deadlock.index()] += 2;
        let mut log = StatementLog::with_capacity(4);
        log.samples.push(StatementSample {
            kind: 1,
            service_ns: 5_000,
            class: QueryClass::Read,
        });
        log.samples.push(StatementSample {
            kind: 0,
            service_ns: 7_000,
            class: QueryClass::Other,
        });
        b.record_statements(&log);
        a.add(&b);
        assert_eq!(a.transactions, 2);
        assert_eq!(a.expected_rollbacks, 1);
        assert_eq!(a.response.len(), 2);
        assert_eq!(a.response.max(), a.response.highest_equivalent(3_000));
        assert_eq!(a.per_stmt[1].len(), 1);
        assert_eq!(a.queries, [1, 0, 1]);
        assert_eq!(a.total_errors(), 2);
        b.down_ns = 5;
        a.add(&b);
        assert_eq!(a.down_ns, 5);
        a.reset();
        assert_eq!(a.down_ns, 0);
        assert_eq!(a.transactions, 0);
        assert_eq!(a.response.len(), 0);
    }

    #[test]
    fn latency_rounds_to_microseconds_and_saturates() {
        let mut s = Stats::new(&ops());
        s.record_txn(0, 1_499, 1_500, false);
        assert_eq!(s.response.max(), 1);
        assert_eq!(s.service.max(), 2);
        s.record_txn(0, u64::MAX / 2, 1, false);
        assert!(s.response.max() >= MAX_LATENCY_US);
        assert!(s.response.max() <= MAX_LATENCY_US + MAX_LATENCY_US / 1000);
    }

    #[test]
    fn histograms_start_small_grow_on_demand_and_merge_across_sizes() {
        let mut a = Stats::new(&ops());
        let fresh = a.response.distinct_values();
        assert!(fresh <= 4096, "a fresh histogram holds {fresh} counters");
        a.record_txn(0, 100_000, 100_000, false); // 100 µs
        assert_eq!(a.response.distinct_values(), fresh, "no growth inside the first range");
        let mut b = Stats::new(&ops());
        b.record_txn(0, 5_000_000_000, 5_000_000_000, false); // 5 s
        assert!(b.response.distinct_values() > fresh);
        a.add(&b);
        assert_eq!(a.response.len(), 2);
        assert_eq!(a.response.min(), 100);
        let max = a.response.max() as f64;
        assert!((max - 5e6).abs() / 5e6 < 1e-3, "{max}");
        // The small one merged into a grown one, too.
        let mut c = Stats::new(&ops());
        c.record_txn(0, 7_000, 7_000, false);
        b.add(&c);
        assert_eq!(b.response.len(), 2);
        assert_eq!(b.response.min(), 7);
        a.reset();
        assert_eq!(a.response.len(), 0);
        a.record_txn(0, 1_000, 1_000, false);
        assert_eq!((a.response.len(), a.response.max()), (1, 1));
    }
}
