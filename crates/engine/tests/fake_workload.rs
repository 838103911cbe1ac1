//! The engine's arithmetic checked against a fake workload with scripted latencies:
//! counts, limits, warmup exclusion, open-loop response vs service time through a
//! freeze, retries, fatal errors and bounded shutdown, in both client I/O models (a blocking
//! fake sleeps its thread the way a blocking socket read does); panics in a worker or the
//! observer, and a server that becomes unreachable; stored intervals shorter than the live
//! reports, which merge them.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dbperf_engine::clock::now_ns;
use dbperf_engine::{
    blocking_io, run, Arrival, ErrorClass, IntervalReport, Observer, OpTable, QueryClass, RunConfig, StatementLog,
    StopReason, StopSignal, TxnDone, TxnError, Worker, Workload,
};

/// What the fake server does.
#[derive(Clone, Copy)]
struct Script {
    /// Service time of one transaction.
    service: Duration,
    /// Every n-th attempt fails with this class (0 = never).
    fail_every: u64,
    fail_class: ErrorClass,
    /// The server is frozen between these offsets from the first transaction (ns).
    freeze: Option<(u64, u64)>,
    /// Every transaction hangs forever.
    hang: bool,
    /// Waits by blocking the thread (as a blocking socket does) instead of in the runtime.
    blocking: bool,
    /// A transaction starting this long after the first one panics.
    panic_after: Option<Duration>,
    /// The server is unreachable between these offsets from the first transaction (ns):
    /// transactions fail with a lost connection and reconnects fail.
    down: Option<(u64, u64)>,
}

impl Default for Script {
    fn default() -> Script {
        Script {
            service: Duration::from_millis(2),
            fail_every: 0,
            fail_class: ErrorClass::Deadlock,
            freeze: None,
            hang: false,
            blocking: false,
            panic_after: None,
            down: None,
        }
    }
}

struct Fake {
    script: Script,
    attempts: Arc<AtomicU64>,
    origin: u64,
    /// (thread, blocking_io() there) of every connect.
    connected_on: Mutex<Vec<(std::thread::ThreadId, bool)>>,
    /// The number of every connection opened.
    ids: Mutex<Vec<usize>>,
}

struct FakeWorker {
    script: Script,
    attempts: Arc<AtomicU64>,
    origin: u64,
}

impl FakeWorker {
    fn server_down(&self) -> bool {
        let rel = now_ns() - self.origin;
        self.script.down.is_some_and(|(from, to)| (from..to).contains(&rel))
    }
}

fn lost() -> TxnError {
    TxnError::new(ErrorClass::ConnectionLost, Some(2003), "scripted: server unreachable")
}

impl Workload for Fake {
    type Worker = FakeWorker;
    fn ops(&self) -> OpTable {
        OpTable {
            transactions: vec!["txn".into()],
            statements: vec!["stmt".into()],
        }
    }
    async fn connect(&self, worker: usize) -> Result<FakeWorker, TxnError> {
        self.ids.lock().unwrap().push(worker);
        self.connected_on
            .lock()
            .unwrap()
            .push((std::thread::current().id(), blocking_io()));
        Ok(FakeWorker {
            script: self.script,
            attempts: self.attempts.clone(),
            origin: self.origin,
        })
    }
}

impl Worker for FakeWorker {
    async fn execute(&mut self, log: &mut StatementLog) -> Result<TxnDone, TxnError> {
        let n = self.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        let sent = now_ns();
        if self
            .script
            .panic_after
            .is_some_and(|p| sent - self.origin >= p.as_nanos() as u64)
        {
            panic!("scripted panic in transaction {n}");
        }
        if self.server_down() {
            return Err(lost());
        }
        if self.script.hang && self.script.blocking {
            // A blocking read that times out every slice and yields, as the driver's does.
            loop {
                std::thread::sleep(dbperf_engine::BLOCKING_SLICE);
                tokio::task::yield_now().await;
            }
        }
        if self.script.hang {
            std::future::pending::<()>().await;
        }
        if self.script.blocking {
            std::thread::sleep(self.script.service);
            log.record(0, sent, QueryClass::Read);
            return Ok(TxnDone::committed(0));
        }
        if let Some((from, to)) = self.script.freeze {
            let rel = sent - self.origin;
            if rel < to && rel + self.script.service.as_nanos() as u64 >= from {
                tokio::time::sleep(Duration::from_nanos(to - rel)).await;
            }
        }
        tokio::time::sleep(self.script.service).await;
        log.record(0, sent, QueryClass::Read);
        if self.script.fail_every > 0 && n.is_multiple_of(self.script.fail_every) {
            return Err(TxnError::new(self.script.fail_class, Some(1213), "scripted failure"));
        }
        Ok(TxnDone::committed(0))
    }
    async fn reconnect(&mut self) -> Result<(), TxnError> {
        if self.server_down() {
            return Err(lost());
        }
        Ok(())
    }
}

/// An interval as collected: index, start, end, warmup, last, transactions, backlog, server
/// unreachable.
type Seen = (u32, f64, f64, bool, bool, u64, u64, bool);

/// A live report as collected: start, end, warmup, last, transactions, response times
/// recorded in its merged histogram, statements.
type Reported = (f64, f64, bool, bool, u64, u64, u64);

#[derive(Default)]
struct Collect {
    intervals: Vec<Seen>,
    /// Per stored interval: response times recorded, statements.
    recorded: Vec<(u64, u64)>,
    /// Per stored interval: the connections' tallies of events, added up.
    tallied: Vec<u64>,
    reports: Vec<Reported>,
    /// The wall clock when the run started.
    started: Option<std::time::SystemTime>,
}

impl Observer for Collect {
    fn on_start(&mut self, _connections: usize, _t0_ns: u64) {
        self.started = Some(std::time::SystemTime::now());
    }

    fn on_report(&mut self, r: &IntervalReport<'_>) {
        self.reports.push((
            r.start_s,
            r.end_s,
            r.warmup,
            r.last,
            r.stats.transactions,
            r.stats.response.len(),
            r.stats.total_queries(),
        ));
    }

    fn on_interval(&mut self, r: &IntervalReport<'_>) {
        self.intervals.push((
            r.index,
            r.start_s,
            r.end_s,
            r.warmup,
            r.last,
            r.stats.transactions,
            r.backlog,
            r.stats.server_unreachable(),
        ));
        self.recorded.push((r.stats.response.len(), r.stats.total_queries()));
        self.tallied.push(r.per_connection.iter().map(|t| t.events).sum());
    }
}

fn fake(script: Script) -> Arc<Fake> {
    Arc::new(Fake {
        script,
        attempts: Arc::new(AtomicU64::new(0)),
        origin: now_ns(),
        connected_on: Mutex::new(Vec::new()),
        ids: Mutex::new(Vec::new()),
    })
}

#[test]
fn blocking_io_gives_each_connection_its_thread_and_keeps_intervals_on_time() {
    let script = Script {
        blocking: true,
        ..Script::default()
    };
    let mut cfg = RunConfig::new(3, Some(Duration::from_millis(1000)));
    cfg.interval = Duration::from_millis(100);
    cfg.client_threads = 1; // ignored: one thread per connection
    cfg.blocking_io = true;
    let workload = fake(script);
    let mut obs = Collect::default();
    let out = run(&cfg, workload.clone(), StopSignal::new(), &mut obs).unwrap();
    let connected = workload.connected_on.lock().unwrap().clone();
    let threads: HashSet<_> = connected.iter().map(|c| c.0).collect();
    assert_eq!(threads.len(), 3, "{connected:?}");
    assert!(
        connected.iter().all(|c| c.1),
        "blocking_io() is true on the client threads"
    );
    assert!(!blocking_io(), "and false elsewhere");
    // The workers never wait in the runtime, yet every interval closes on time with its
    // own transactions: they yield at each boundary.
    assert_eq!(obs.intervals.len(), 10, "{:?}", obs.intervals);
    for i in &obs.intervals {
        assert!(
            i.5 >= 30,
            "interval {} has {} transactions: {:?}",
            i.0,
            i.5,
            obs.intervals
        );
    }
    let sum: u64 = obs.intervals.iter().map(|i| i.5).sum();
    assert_eq!(sum, out.total.transactions);
    assert!((out.measured_s - 1.0).abs() < 0.05, "{}", out.measured_s);
}

#[test]
fn a_hung_server_cannot_keep_a_blocking_run_alive() {
    let script = Script {
        hang: true,
        blocking: true,
        ..Script::default()
    };
    let mut cfg = RunConfig::new(3, Some(Duration::from_millis(300)));
    cfg.shutdown_grace = Duration::from_millis(200);
    cfg.blocking_io = true;
    let started = Instant::now();
    let mut obs = Collect::default();
    let out = run(&cfg, fake(script), StopSignal::new(), &mut obs).unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1000), "took {took:?}");
    assert_eq!(out.abandoned, 3);
    assert_eq!(out.total.transactions, 0);
    assert!((out.measured_s - 0.3).abs() < 0.05, "{}", out.measured_s);
}

#[test]
fn blocking_io_refuses_the_open_loop() {
    let mut cfg = RunConfig::new(2, Some(Duration::from_millis(100)));
    cfg.arrival = Arrival::Fixed { rate: 100.0 };
    cfg.blocking_io = true;
    let e = run(
        &cfg,
        fake(Script::default()),
        StopSignal::new(),
        &mut Collect::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("closed loop"), "{e}");
}

#[test]
fn closed_loop_counts_and_intervals_add_up() {
    let mut cfg = RunConfig::new(4, Some(Duration::from_millis(1000)));
    cfg.interval = Duration::from_millis(250);
    cfg.client_threads = 2;
    let mut obs = Collect::default();
    let out = run(&cfg, fake(Script::default()), StopSignal::new(), &mut obs).unwrap();
    assert_eq!(out.reason, StopReason::Completed);
    // 4 connections, ~2-3 ms each (tokio's 1 ms timer tick) for 1 s.
    assert!(
        (900..=2100).contains(&out.total.transactions),
        "{}",
        out.total.transactions
    );
    let sum: u64 = obs.intervals.iter().map(|i| i.5).sum();
    assert_eq!(sum, out.total.transactions, "totals are the sum of the intervals");
    // Each interval carries the connections' tallies as their threads cut it: at least the
    // transactions up to it (a thread may cut the next one before the interval is delivered),
    // and exactly the run's with the last one.
    let mut upto = 0;
    for (i, tallied) in obs.intervals.iter().zip(&obs.tallied) {
        upto += i.5;
        assert!(*tallied >= upto, "{tallied} < {upto}: {:?}", obs.tallied);
    }
    assert_eq!(obs.tallied.last(), Some(&out.total.transactions), "{:?}", obs.tallied);
    let per: u64 = out.per_connection.iter().map(|t| t.events).sum();
    assert_eq!(per, out.total.transactions);
    // A run that ends on an interval boundary has exactly its whole intervals: the last one
    // takes the grace period's completions (and their few milliseconds) instead of leaving a
    // nanosecond-long fragment.
    assert_eq!(obs.intervals.len(), 4, "{:?}", obs.intervals);
    let last = obs.intervals.last().unwrap();
    assert!(last.4, "last interval is flagged");
    assert!(
        (last.1 - 0.75).abs() < 1e-6 && (1.0..1.02).contains(&last.2),
        "{last:?}"
    );
    assert!((out.measured_s - 1.0).abs() < 0.05, "{}", out.measured_s);
    assert_eq!(out.total.queries[QueryClass::Read as usize], out.total.transactions);
    assert_eq!(out.total.response.len(), out.total.service.len());
    let p50 = out.total.response.value_at_quantile(0.5);
    assert!((1900..=20_000).contains(&p50), "p50 {p50} us");
}

/// Transactions that finish in the grace period after the deadline are counted, and so is
/// the time they took: with 1 s transactions a 2.5 s run completes 3 per connection by 3 s, a
/// rate of 1/s per connection (dividing by the 2.5 s to the deadline would say 1.2/s).
#[test]
fn grace_period_completions_are_counted_with_their_time() {
    let script = Script {
        service: Duration::from_secs(1),
        ..Script::default()
    };
    let mut cfg = RunConfig::new(4, Some(Duration::from_millis(2500)));
    cfg.client_threads = 2;
    let mut obs = Collect::default();
    let out = run(&cfg, fake(script), StopSignal::new(), &mut obs).unwrap();
    assert_eq!(out.total.transactions, 12, "{:?}", obs.intervals);
    assert_eq!(out.abandoned, 0);
    assert!((3.0..3.05).contains(&out.measured_s), "{}", out.measured_s);
    let tps = out.total.transactions as f64 / out.measured_s;
    assert!((tps - 4.0).abs() < 0.07, "{tps} trx/s from 4 connections of 1 trx/s");
    // The last interval (from 2 s: the ticker stops at the deadline) holds those completing
    // at 2 s and at 3 s, and runs to the last completion.
    let last = obs.intervals.last().unwrap();
    assert!(
        last.4 && last.5 == 8 && (3.0..3.05).contains(&last.2),
        "{:?}",
        obs.intervals
    );
}

#[test]
fn totals_equal_what_the_server_executed_over_many_intervals() {
    // Many short intervals on several threads exercise the recycling of interval
    // statistics between the collector and the client threads.
    for threads in [1, 2, 3] {
        let mut cfg = RunConfig::new(6, Some(Duration::from_millis(1200)));
        cfg.interval = Duration::from_millis(50);
        cfg.client_threads = threads;
        let w = fake(Script {
            service: Duration::from_micros(300),
            ..Script::default()
        });
        let attempts = w.attempts.clone();
        let mut obs = Collect::default();
        let out = run(&cfg, w, StopSignal::new(), &mut obs).unwrap();
        let executed = attempts.load(Ordering::SeqCst);
        assert_eq!(out.total.transactions, executed, "{threads} client threads");
        let sum: u64 = obs.intervals.iter().map(|i| i.5).sum();
        assert_eq!(sum, executed);
        assert!(obs.intervals.len() >= 20, "{}", obs.intervals.len());
    }
}

#[test]
fn open_loop_runs_exactly_the_offered_load() {
    let script = Script {
        service: Duration::from_micros(200),
        ..Script::default()
    };
    let mut cfg = RunConfig::new(4, Some(Duration::from_millis(2000)));
    cfg.arrival = Arrival::Fixed { rate: 300.0 };
    cfg.client_threads = 2;
    cfg.interval = Duration::from_millis(100);
    let out = run(&cfg, fake(script), StopSignal::new(), &mut Collect::default()).unwrap();
    assert_eq!(out.total.transactions + out.backlog_at_end + out.abandoned, 600);
}

#[test]
fn events_limit_runs_exactly_that_many() {
    let mut cfg = RunConfig::new(3, None);
    cfg.events = Some(101);
    cfg.client_threads = 2;
    let out = run(
        &cfg,
        fake(Script::default()),
        StopSignal::new(),
        &mut Collect::default(),
    )
    .unwrap();
    assert_eq!(out.total.transactions, 101);
}

#[test]
fn a_ten_year_warmup_with_an_events_limit_runs_without_overflow() {
    // The longest durations the flags accept (10 years): deadlines and interval boundaries
    // saturate instead of overflowing, and the run ends on --events inside the warmup.
    let mut cfg = RunConfig::new(2, Some(Duration::from_secs(10 * 365 * 86_400)));
    cfg.warmup = Duration::from_secs(10 * 365 * 86_400);
    cfg.events = Some(50);
    cfg.client_threads = 2;
    let out = run(
        &cfg,
        fake(Script::default()),
        StopSignal::new(),
        &mut Collect::default(),
    )
    .unwrap();
    assert_eq!(out.total.transactions, 0);
    assert!(out.warmup_s > 0.0);
}

#[test]
fn warmup_intervals_are_reported_but_not_counted() {
    let mut cfg = RunConfig::new(2, Some(Duration::from_millis(600)));
    cfg.warmup = Duration::from_millis(400);
    cfg.interval = Duration::from_millis(300);
    let mut obs = Collect::default();
    let out = run(&cfg, fake(Script::default()), StopSignal::new(), &mut obs).unwrap();
    let warm: Vec<_> = obs.intervals.iter().filter(|i| i.3).collect();
    assert_eq!(warm.len(), 2, "{:?}", obs.intervals);
    assert!((warm[1].2 - 0.4).abs() < 1e-9, "warmup ends exactly at 0.4 s");
    let measured: u64 = obs.intervals.iter().filter(|i| !i.3).map(|i| i.5).sum();
    assert!(warm.iter().map(|i| i.5).sum::<u64>() > 0);
    assert_eq!(out.total.transactions, measured);
    assert!(
        (out.warmup_s - 0.4).abs() < 1e-6 && (out.measured_s - 0.6).abs() < 0.05,
        "{} {}",
        out.warmup_s,
        out.measured_s
    );
}

#[test]
fn open_loop_response_time_shows_a_freeze_that_service_time_hides() {
    // 500/s over 2 connections; each transaction takes 1-2 ms; the server freezes for
    // 600 ms starting 300 ms in. Arrivals keep coming during the freeze.
    let script = Script {
        service: Duration::from_millis(1),
        freeze: Some((300_000_000, 900_000_000)),
        ..Script::default()
    };
    let mut cfg = RunConfig::new(2, Some(Duration::from_millis(1500)));
    cfg.arrival = Arrival::Fixed { rate: 500.0 };
    cfg.interval = Duration::from_millis(500);
    let mut obs = Collect::default();
    let out = run(&cfg, fake(script), StopSignal::new(), &mut obs).unwrap();
    let t = &out.total;
    // Everything offered (1.5 s x 500/s) was done or is still queued at the end.
    let offered = t.transactions + out.backlog_at_end + out.abandoned;
    assert!(
        (735..=755).contains(&offered),
        "{} + {} + {}",
        t.transactions,
        out.backlog_at_end,
        out.abandoned
    );
    // Arrivals queued behind the freeze waited up to ~600 ms: response time shows it.
    let resp_p90 = t.response.value_at_quantile(0.90);
    let resp_max = t.response.max();
    assert!(resp_max >= 550_000, "response max {resp_max} us");
    assert!(resp_p90 >= 100_000, "response p90 {resp_p90} us");
    // Service time of the queued ones was short: only the 2 in flight saw the freeze.
    let svc_p90 = t.service.value_at_quantile(0.90);
    assert!(svc_p90 < 10_000, "service p90 {svc_p90} us");
    assert!(t.late_starts >= 250, "late starts {}", t.late_starts);
    // The backlog was visible at the interval boundary inside the freeze (t=0.5 s).
    assert!(obs.intervals[0].6 >= 50, "backlog at 0.5 s: {:?}", obs.intervals);
}

/// How many of `n` wake-ups of a plain thread sleeping to absolute times 5 ms apart came more
/// than `threshold` late: how punctual this machine lets any thread be right now.
fn machine_late_wakeups(n: u32, threshold: Duration) -> u64 {
    let start = Instant::now();
    (1..=n)
        .filter(|&k| {
            let due = start + Duration::from_millis(5) * k;
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            Instant::now().duration_since(due) > threshold
        })
        .count() as u64
}

#[test]
fn open_loop_starts_are_as_punctual_as_the_machine() {
    let script = Script {
        service: Duration::from_micros(200),
        ..Script::default()
    };
    let mut cfg = RunConfig::new(4, Some(Duration::from_millis(1000)));
    cfg.arrival = Arrival::Poisson { rate: 200.0 };
    // A plain thread's wake-ups over the same second, for comparison.
    let threshold = cfg.late_threshold;
    let machine = std::thread::spawn(move || machine_late_wakeups(200, threshold));
    let out = run(&cfg, fake(script), StopSignal::new(), &mut Collect::default()).unwrap();
    let machine_late = machine.join().unwrap();
    let (late, n) = (out.total.late_starts, out.total.transactions);
    assert!((140..=260).contains(&n), "{n}");
    // The timerfd wakes within microseconds of the intended start: a start is late only when
    // the machine keeps the client thread off the CPU, as often as it keeps a plain thread off
    // (at most twice the plain thread's share, plus 2% for chance). On an idle machine that
    // is 2%, where a timer that wakes over a millisecond late makes every start late.
    let allowed = 2.0 * machine_late as f64 / 200.0 + 0.02;
    assert!(
        late as f64 <= allowed * n as f64,
        "{late} of {n} starts late; a plain thread woke late {machine_late} times in 200"
    );
}

#[test]
fn retryable_errors_are_counted_and_retried() {
    let script = Script {
        fail_every: 5,
        ..Script::default()
    };
    let mut cfg = RunConfig::new(2, None);
    cfg.events = Some(100);
    let out = run(&cfg, fake(script), StopSignal::new(), &mut Collect::default()).unwrap();
    assert_eq!(out.total.transactions, 100);
    let deadlocks = out.total.errors[ErrorClass::Deadlock.index()];
    assert_eq!(deadlocks, out.total.retries);
    assert!((20..=30).contains(&deadlocks), "{deadlocks}");
}

#[test]
fn max_tries_ends_a_transaction_as_failed_and_the_log_sees_each_end() {
    #[derive(Debug, Default)]
    struct Ends(Mutex<Vec<dbperf_engine::TxnEnd>>);
    impl dbperf_engine::TxnLog for Ends {
        fn record(&self, t: &dbperf_engine::TxnEnd) {
            self.0.lock().unwrap().push(*t);
        }
    }
    // One connection, every second attempt fails: with two tries each transaction after the
    // first needs one retry; with one try, every second transaction fails.
    let script = Script {
        fail_every: 2,
        fail_class: ErrorClass::Serialization,
        service: Duration::from_micros(100),
        ..Script::default()
    };
    for (tries, committed, failed, retried) in [(2, 10, 0, 9), (1, 5, 5, 0)] {
        let ends = Arc::new(Ends::default());
        let mut cfg = RunConfig::new(1, None);
        cfg.events = Some(10);
        cfg.max_tries = Some(tries);
        cfg.txn_log = Some(ends.clone());
        let out = run(&cfg, fake(script), StopSignal::new(), &mut Collect::default()).unwrap();
        let t = &out.total;
        assert_eq!(
            (t.transactions, t.failed, t.retried, t.retries),
            (committed, failed, retried, retried)
        );
        let ends = ends.0.lock().unwrap();
        assert_eq!(ends.len(), 10, "every transaction ends once");
        assert_eq!(ends.iter().filter(|e| e.failed.is_some()).count() as u64, failed);
        assert_eq!(ends.iter().filter(|e| e.tries > 1).count() as u64, retried);
        assert!(ends
            .iter()
            .all(|e| e.intended_ns <= e.started_ns && e.started_ns < e.end_ns));
    }
}

#[test]
fn late_transactions_are_skipped_and_still_count_towards_the_limit() {
    // pgbench -t 10 --rate=100000 --latency-limit=1 with 2 ms transactions: after the first,
    // every arrival is more than 1 ms behind when its turn comes, so it is skipped, not run;
    // the 10 per connection are run or skipped, never more.
    let mut cfg = RunConfig::new(1, None);
    cfg.arrival = Arrival::Fixed { rate: 100_000.0 };
    cfg.events = Some(10);
    cfg.events_per_connection = Some(10);
    cfg.skip_late = Some(Duration::from_millis(1));
    #[derive(Debug, Default)]
    struct Skips(Mutex<Vec<bool>>);
    impl dbperf_engine::TxnLog for Skips {
        fn record(&self, t: &dbperf_engine::TxnEnd) {
            self.0.lock().unwrap().push(t.skipped);
        }
    }
    let told = Arc::new(Skips::default());
    cfg.txn_log = Some(told.clone());
    let script = Script {
        service: Duration::from_millis(2),
        ..Script::default()
    };
    let out = run(&cfg, fake(script), StopSignal::new(), &mut Collect::default()).unwrap();
    let t = &out.total;
    assert_eq!(
        t.transactions + t.skipped,
        10,
        "{} run, {} skipped",
        t.transactions,
        t.skipped
    );
    assert!(t.transactions <= 1, "{} run", t.transactions);
    // The transaction log is told of each, skipped ones too (pgbench's -l "skipped" lines).
    let told = told.0.lock().unwrap().clone();
    assert_eq!(told.len(), 10);
    assert_eq!(told.iter().filter(|&&s| s).count() as u64, t.skipped);
    cfg.txn_log = None;
    // Without the limit all 10 run, late as they are.
    cfg.skip_late = None;
    let out = run(
        &cfg,
        fake(Script {
            service: Duration::from_millis(2),
            ..Script::default()
        }),
        StopSignal::new(),
        &mut Collect::default(),
    )
    .unwrap();
    assert_eq!((out.total.transactions, out.total.skipped), (10, 0));
}

#[test]
fn events_per_connection_gives_each_connection_its_count() {
    #[derive(Debug, Default)]
    struct Ends(Mutex<Vec<(usize, usize)>>);
    impl dbperf_engine::TxnLog for Ends {
        fn record(&self, t: &dbperf_engine::TxnEnd) {
            self.0.lock().unwrap().push((t.worker, t.thread));
        }
    }
    // Three connections on two threads, 5 each (pgbench's -c 3 -j 2 -t 5).
    let ends = Arc::new(Ends::default());
    let mut cfg = RunConfig::new(3, None);
    cfg.client_threads = 2;
    cfg.events = Some(15);
    cfg.events_per_connection = Some(5);
    cfg.txn_log = Some(ends.clone());
    let script = Script {
        service: Duration::from_micros(100),
        ..Script::default()
    };
    let out = run(&cfg, fake(script), StopSignal::new(), &mut Collect::default()).unwrap();
    assert_eq!(out.total.transactions, 15);
    let ends = ends.0.lock().unwrap();
    for w in 0..3 {
        assert_eq!(ends.iter().filter(|e| e.0 == w).count(), 5, "connection {w}");
    }
    // As pgbench's threads take them: connections 0 and 1 on the first thread, 2 on the second.
    for &(w, thread) in ends.iter() {
        assert_eq!(thread, usize::from(w == 2), "connection {w}");
    }
    // Each connection's tally (sysbench's threads fairness): its 5 events and their time.
    assert_eq!(out.per_connection.len(), 3);
    for (w, t) in out.per_connection.iter().enumerate() {
        assert_eq!(t.events, 5, "connection {w}");
        assert!(t.busy_ns >= 5 * 100_000, "connection {w}: {t:?}");
    }
}

#[test]
fn fatal_error_stops_the_run_and_is_reported() {
    let script = Script {
        fail_every: 10,
        fail_class: ErrorClass::Fatal,
        ..Script::default()
    };
    let cfg = RunConfig::new(2, Some(Duration::from_secs(30)));
    let started = Instant::now();
    let out = run(&cfg, fake(script), StopSignal::new(), &mut Collect::default()).unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(out.reason, StopReason::Fatal);
    assert_eq!(out.fatal.unwrap().code, Some(1213));
}

#[test]
fn a_hung_server_cannot_keep_the_run_alive() {
    let script = Script {
        hang: true,
        ..Script::default()
    };
    let mut cfg = RunConfig::new(3, Some(Duration::from_millis(300)));
    cfg.shutdown_grace = Duration::from_millis(200);
    let started = Instant::now();
    let out = run(&cfg, fake(script), StopSignal::new(), &mut Collect::default()).unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(900), "took {took:?}");
    assert_eq!(out.abandoned, 3);
    assert_eq!(out.total.transactions, 0);
}

#[test]
fn an_interrupt_stops_within_the_interrupt_grace_and_keeps_intervals() {
    let script = Script {
        service: Duration::from_millis(1),
        ..Script::default()
    };
    let mut cfg = RunConfig::new(2, Some(Duration::from_secs(60)));
    cfg.interval = Duration::from_millis(100);
    let stop = StopSignal::new();
    let s2 = stop.clone();
    let interrupter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(450));
        s2.stop(StopReason::Interrupted);
        Instant::now()
    });
    let mut obs = Collect::default();
    let out = run(&cfg, fake(script), stop, &mut obs).unwrap();
    let returned = Instant::now();
    // In-flight transactions get at most the interrupt grace (and these take 1 ms).
    let took = returned.duration_since(interrupter.join().unwrap());
    assert!(
        took < cfg.interrupt_grace,
        "the run returned {took:?} after the interrupt"
    );
    assert_eq!(out.reason, StopReason::Interrupted);
    assert!(obs.intervals.len() >= 4, "{:?}", obs.intervals);
    assert!(out.total.transactions > 100);
    assert!((out.measured_s - 0.45).abs() < 0.1, "{}", out.measured_s);
}

#[test]
fn a_panicking_worker_ends_the_run_as_a_crash_and_keeps_the_intervals_before_it() {
    for blocking in [false, true] {
        let script = Script {
            panic_after: Some(Duration::from_millis(350)),
            blocking,
            ..Script::default()
        };
        let mut cfg = RunConfig::new(3, Some(Duration::from_secs(30)));
        cfg.interval = Duration::from_millis(100);
        cfg.client_threads = 2;
        cfg.blocking_io = blocking;
        let started = Instant::now();
        let mut obs = Collect::default();
        let out = run(&cfg, fake(script), StopSignal::new(), &mut obs).unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "blocking {blocking}: the run stops"
        );
        assert_eq!(out.reason, StopReason::Crashed, "blocking {blocking}");
        let crash = out.crash.unwrap();
        assert!(
            crash.contains("worker") && crash.contains("scripted panic in transaction"),
            "{crash}"
        );
        assert!(obs.intervals.len() >= 3, "{:?}", obs.intervals);
        assert!(obs.intervals[..3].iter().all(|i| i.5 > 0), "{:?}", obs.intervals);
        assert!(obs.intervals.last().unwrap().4, "the last interval is flagged");
        let sum: u64 = obs.intervals.iter().map(|i| i.5).sum();
        assert_eq!(sum, out.total.transactions);
    }
}

#[test]
fn a_panicking_observer_ends_the_run_as_a_crash() {
    struct Panicky(Collect);
    impl Observer for Panicky {
        fn on_interval(&mut self, r: &IntervalReport<'_>) {
            if r.index == 2 {
                panic!("observer bug");
            }
            self.0.on_interval(r);
        }
    }
    let mut cfg = RunConfig::new(2, Some(Duration::from_secs(30)));
    cfg.interval = Duration::from_millis(100);
    let mut obs = Panicky(Collect::default());
    let started = Instant::now();
    let out = run(&cfg, fake(Script::default()), StopSignal::new(), &mut obs).unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(out.reason, StopReason::Crashed);
    assert!(out.crash.unwrap().contains("observer bug"));
    assert_eq!(obs.0.intervals[..2].iter().map(|i| i.0).collect::<Vec<_>>(), [0, 1]);
}

#[test]
fn a_panicking_connect_is_an_error_naming_the_panic() {
    struct Broken;
    impl Workload for Broken {
        type Worker = FakeWorker;
        fn ops(&self) -> OpTable {
            OpTable::default()
        }
        async fn connect(&self, _worker: usize) -> Result<FakeWorker, TxnError> {
            panic!("connect bug")
        }
    }
    for blocking in [false, true] {
        let mut cfg = RunConfig::new(2, Some(Duration::from_secs(1)));
        cfg.blocking_io = blocking;
        let e = run(&cfg, Arc::new(Broken), StopSignal::new(), &mut Collect::default()).unwrap_err();
        assert!(e.to_string().contains("connect bug"), "{e}");
    }
}

#[test]
fn a_warmup_too_long_to_time_is_a_config_error_not_a_panic() {
    let mut cfg = RunConfig::new(1, Some(Duration::from_secs(1)));
    cfg.warmup = Duration::from_secs(u64::MAX);
    let e = run(
        &cfg,
        fake(Script::default()),
        StopSignal::new(),
        &mut Collect::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("--warmup-time"), "{e}");
}

#[test]
fn intervals_without_work_while_the_server_is_unreachable_are_marked() {
    let ms = 1_000_000u64;
    for blocking in [false, true] {
        // Down from 0.25 s to the end of a 1 s run.
        let script = Script {
            down: Some((250 * ms, u64::MAX)),
            blocking,
            ..Script::default()
        };
        let mut cfg = RunConfig::new(2, Some(Duration::from_millis(1000)));
        cfg.interval = Duration::from_millis(100);
        cfg.blocking_io = blocking;
        let started = Instant::now();
        let mut obs = Collect::default();
        let out = run(&cfg, fake(script), StopSignal::new(), &mut obs).unwrap();
        assert!(
            started.elapsed() < Duration::from_millis(1500),
            "reconnecting stops at the deadline"
        );
        assert_eq!(out.abandoned, 0);
        let marks: Vec<bool> = obs.intervals.iter().map(|i| i.7).collect();
        assert_eq!(
            marks,
            [false, false, false, true, true, true, true, true, true, true],
            "blocking {blocking}: {:?}",
            obs.intervals
        );
        assert!((out.unreachable_s - 0.7).abs() < 1e-6, "{}", out.unreachable_s);
        assert!(out.unreachable_at_end);
        assert_eq!(out.reason, StopReason::Completed);

        // Down from 0.25 s to 0.55 s: marked, but back before the end.
        let script = Script {
            down: Some((250 * ms, 550 * ms)),
            blocking,
            ..Script::default()
        };
        let mut obs = Collect::default();
        let out = run(&cfg, fake(script), StopSignal::new(), &mut obs).unwrap();
        let marked: Vec<u32> = obs.intervals.iter().filter(|i| i.7).map(|i| i.0).collect();
        assert!(
            marked.starts_with(&[3, 4]) && marked.iter().all(|i| (3..=5).contains(i)),
            "{:?}",
            obs.intervals
        );
        assert!(!out.unreachable_at_end);
        assert!(out.total.reconnects >= 2, "{}", out.total.reconnects);
    }
}

#[test]
fn one_second_intervals_are_stored_and_a_five_second_report_merges_five_of_them() {
    let mut cfg = RunConfig::new(2, Some(Duration::from_secs(6)));
    cfg.report_interval = Some(Duration::from_secs(5));
    let mut obs = Collect::default();
    let out = run(&cfg, fake(Script::default()), StopSignal::new(), &mut obs).unwrap();
    assert_eq!(obs.intervals.len(), 6, "{:?}", obs.intervals);
    for (i, iv) in obs.intervals.iter().enumerate() {
        assert!((iv.1 - i as f64).abs() < 1e-9, "{:?}", obs.intervals);
        if i < 5 {
            assert!((iv.2 - iv.1 - 1.0).abs() < 1e-9, "{:?}", obs.intervals);
        }
    }
    // A report at 5 s with the first five seconds' counts and latencies, and the last second's
    // at the end.
    assert_eq!(obs.reports.len(), 2, "{:?}", obs.reports);
    let first = obs.reports[0];
    let five: Vec<&(u64, u64)> = obs.recorded.iter().take(5).collect();
    let txns: u64 = obs.intervals.iter().take(5).map(|i| i.5).sum();
    assert_eq!((first.0, first.1, first.3), (0.0, 5.0, false), "{first:?}");
    assert!(txns > 1000, "{txns} transactions in 5 s over 2 connections of 2 ms");
    assert_eq!(first.4, txns);
    assert_eq!(
        first.5,
        five.iter().map(|r| r.0).sum::<u64>(),
        "the histograms are merged"
    );
    assert_eq!(first.6, five.iter().map(|r| r.1).sum::<u64>());
    let last = obs.reports[1];
    assert!(last.3 && (last.0 - 5.0).abs() < 1e-9, "{last:?}");
    assert_eq!(last.4, obs.intervals[5].5);
    assert_eq!(first.4 + last.4, out.total.transactions);
}

#[test]
fn reports_end_at_the_warmup_and_keep_their_pace_when_not_a_multiple_of_the_interval() {
    // Intervals of 100 ms, reports of 250 ms, a 300 ms warmup and 500 ms measured: reports end
    // at the first boundary past each 250 ms of a phase, and at the warmup's end.
    let mut cfg = RunConfig::new(2, Some(Duration::from_millis(500)));
    cfg.interval = Duration::from_millis(100);
    cfg.report_interval = Some(Duration::from_millis(250));
    cfg.warmup = Duration::from_millis(300);
    let mut obs = Collect::default();
    let out = run(&cfg, fake(Script::default()), StopSignal::new(), &mut obs).unwrap();
    assert_eq!(obs.intervals.len(), 8, "{:?}", obs.intervals);
    let spans: Vec<(f64, f64, bool)> = obs
        .reports
        .iter()
        .map(|r| ((r.0 * 10.0).round() / 10.0, (r.1 * 10.0).round() / 10.0, r.2))
        .collect();
    assert_eq!(
        spans,
        [(0.0, 0.3, true), (0.3, 0.6, false), (0.6, 0.8, false)],
        "{:?}",
        obs.reports
    );
    assert!(obs.reports[2].3, "the last report is the run's end");
    let measured: u64 = obs.reports.iter().filter(|r| !r.2).map(|r| r.4).sum();
    assert_eq!(measured, out.total.transactions);
    let warmup: u64 = obs.intervals.iter().filter(|i| i.3).map(|i| i.5).sum();
    assert_eq!(obs.reports[0].4, warmup);
}

/// A shard of a run on several clients: its connections are numbered from its offset, and
/// time zero falls on the shared start minus the warmup, not when its connections opened; a
/// start already past is refused before anything is measured.
#[test]
fn a_shard_starts_on_the_shared_clock_with_its_own_connection_numbers() {
    let mut cfg = RunConfig::new(3, Some(Duration::from_millis(300)));
    cfg.interval = Duration::from_millis(100);
    cfg.warmup = Duration::from_millis(200);
    cfg.worker_offset = 5;
    let at = std::time::SystemTime::now() + Duration::from_millis(700);
    cfg.start_at = Some(at);
    let workload = fake(Script::default());
    let mut obs = Collect::default();
    let out = run(&cfg, workload.clone(), StopSignal::new(), &mut obs).unwrap();
    let mut ids = workload.ids.lock().unwrap().clone();
    ids.sort_unstable();
    assert_eq!(ids, [5, 6, 7]);
    let zero = at - cfg.warmup;
    let started = obs.started.unwrap();
    let off = match started.duration_since(zero) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    };
    assert!((0.0..0.03).contains(&off), "time zero {off} s off the shared clock");
    assert!(out.total.transactions > 0);
    assert!(obs.intervals.iter().any(|i| i.3) && obs.intervals.iter().any(|i| !i.3));

    cfg.start_at = Some(std::time::SystemTime::now() - Duration::from_secs(1));
    let mut obs = Collect::default();
    match run(&cfg, fake(Script::default()), StopSignal::new(), &mut obs) {
        Err(dbperf_engine::RunError::Config(m)) => {
            assert!(m.contains("start time passed") && m.contains("--start-at"), "{m}")
        }
        Err(e) => panic!("a past start is a configuration error, got {e}"),
        Ok(_) => panic!("a past start must not run"),
    }
    assert!(obs.intervals.is_empty());
}
