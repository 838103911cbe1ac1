//! The run loop: client threads, workers, intervals and a bounded shutdown.
//!
//! [`run`] starts `client_threads` OS threads, each with a single-threaded tokio
//! runtime that owns a share of the connections. Every thread:
//!
//! 1. opens its connections (bounded by a connect timeout) and reports ready;
//! 2. waits for the common start time `t0`, chosen once every thread is ready;
//! 3. runs one task per connection — take an intended start (now, or the thread's
//!    open-loop schedule), execute, retry or reconnect by error class, record — and a
//!    ticker that swaps the thread's [`Stats`] out at every interval boundary;
//! 4. stops starting transactions at the deadline, on `--events`, on an interrupt or on
//!    a fatal error, gives in-flight transactions a bounded grace period, and sends
//!    its final interval (after a deadline, it runs to the last completion in the grace
//!    period: what is counted is timed).
//!
//! A panic in a worker, a client thread or the [`Observer`] is a bug, never a success: it
//! stops the run with [`StopReason::Crashed`] and its message in [`RunOutcome::crash`], and
//! every interval finished before it is still reported. Time that connections spend
//! reconnecting is counted ([`Stats::down_ns`]); an interval in which nothing completed while
//! they did is one where the server was unreachable ([`Stats::server_unreachable`]).
//!
//! With [`RunConfig::blocking_io`] every connection gets its own thread, on which drivers
//! may block in the kernel for replies ([`blocking_io`]); the worker then yields to the
//! runtime at interval boundaries and whenever a read times out (see [`BLOCKING_SLICE`]).
//!
//! The calling thread is the collector: it merges the threads' interval statistics
//! in order and hands each merged interval to an [`Observer`] (which stores it), so results
//! are written as the run goes; it also merges consecutive intervals into the live reports
//! of [`RunConfig::report_interval`] (which the observer prints), so a report covers its whole
//! span while the intervals stored stay short.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::clock::{now_ns, secs};
use crate::outcome::{Action, ErrorClass, TxnError};
use crate::schedule::{Arrival, ThreadSchedule};
use crate::stats::{OpTable, StatementLog, Stats};
use crate::timer::{set_thread_timer_slack, PreciseTimer};
use crate::{Worker, Workload};

/// How to run: load model, limits and measurement settings.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Connections (sysbench's `--threads`).
    pub connections: usize,
    /// OS threads that drive the connections.
    pub client_threads: usize,
    /// Closed or open loop.
    pub arrival: Arrival,
    /// Measured time after warmup (`--time`); `None` runs until `events` or a stop.
    pub duration: Option<Duration>,
    /// Time run before measuring (`--warmup-time`); its intervals are reported but not
    /// counted in the totals.
    pub warmup: Duration,
    /// Total transactions to start (`--events`), warmup included.
    pub events: Option<u64>,
    /// Length of a stored interval: each is handed to [`Observer::on_interval`] (1 s by
    /// default).
    pub interval: Duration,
    /// Length of a live report ([`Observer::on_report`]): the stored intervals it spans,
    /// merged. A report ends at the first interval boundary at or past each multiple of it
    /// (counted from the start of the warmup and again from the start of the measured phase),
    /// at the end of the warmup and at the end of the run, so a report interval that is not a
    /// multiple of [`RunConfig::interval`] still averages to it. `None`: one report per stored
    /// interval.
    pub report_interval: Option<Duration>,
    /// How long in-flight transactions may take to finish after the deadline.
    pub shutdown_grace: Duration,
    /// How long they may take after an interrupt (keep it under a second).
    pub interrupt_grace: Duration,
    /// Limit for opening one connection.
    pub connect_timeout: Duration,
    /// An open-loop start later than this after its intended time is a late start.
    pub late_threshold: Duration,
    /// Seed for the open-loop schedules.
    pub seed: u64,
    /// One OS thread per connection, whose driver blocks in the kernel for each reply
    /// instead of waiting in the runtime's event loop (closed loop only; `client_threads` is
    /// then ignored). On a 2-vCPU VM this halved the client's CPU per point select.
    pub blocking_io: bool,
    /// The number of this run's first connection among the connections of every client
    /// taking part (a shard of a run spread over several clients): connection `i` is opened
    /// as [`Workload::connect`]`(worker_offset + i)`, so each shard's connections are its
    /// share of one numbering. 0 for a run on one client.
    pub worker_offset: usize,
    /// The wall-clock instant time zero must fall on, instead of the moment every connection
    /// is open: shards on several clients then share interval boundaries. The collector waits
    /// for it once the connections are open; a run whose connections open after it fails with
    /// [`RunError::Config`] (nothing is measured).
    pub start_at: Option<std::time::SystemTime>,
    /// A network namespace (a file such as `/run/netns/NAME`) every client thread joins before
    /// it opens its connections, so the workload's sockets live there; the collector and the
    /// caller's other threads stay where they are.
    pub client_netns: Option<std::path::PathBuf>,
    /// Tries a transaction gets when it meets a retryable error (deadlock, serialization
    /// failure): past them it ends as failed ([`Stats::failed`]) and the worker goes on with
    /// the next one. `None`: retried until it succeeds or the run stops.
    pub max_tries: Option<u32>,
    /// Transactions each connection starts at most (pgbench's `-t`, per client), besides
    /// `events` (the run's total).
    pub events_per_connection: Option<u64>,
    /// Reconnect before every transaction (pgbench's `-C`); the connection is outside the
    /// transaction's service time, inside the run's.
    pub reconnect_each: bool,
    /// Told of every transaction as it ends (pgbench's `-l` logs).
    pub txn_log: Option<Arc<dyn TxnLog>>,
    /// Open loop: a transaction whose intended start is already more than this behind when
    /// its turn comes is not run but counted in [`Stats::skipped`] (pgbench's `-L` with
    /// `-R`); it still counts towards `events` and `events_per_connection`.
    pub skip_late: Option<Duration>,
}

/// One ended transaction, as a [`TxnLog`] is told of it.
#[derive(Clone, Copy, Debug)]
pub struct TxnEnd {
    /// The connection's number ([`Workload::connect`]'s).
    pub worker: usize,
    /// The client thread that ran it.
    pub thread: usize,
    /// Its type, indexed like [`OpTable::transactions`].
    pub kind: u16,
    /// When it was meant to start, started and ended (ns on [`now_ns`]'s clock).
    pub intended_ns: u64,
    pub started_ns: u64,
    pub end_ns: u64,
    /// Tries it took (1: no retry).
    pub tries: u32,
    /// The retryable error it ended in after its last try, if it did.
    pub failed: Option<ErrorClass>,
    /// It was not run: already later than [`RunConfig::skip_late`] at its turn. Its three
    /// instants are then the moment it was skipped, `tries` is 0 and `kind` is 0 (the
    /// transaction's type is chosen when it runs).
    pub skipped: bool,
}

/// A per-transaction record kept outside the engine's histograms (pgbench's `-l`). It is
/// called on the client threads, once per transaction: keep it cheap.
pub trait TxnLog: Send + Sync + std::fmt::Debug {
    fn record(&self, t: &TxnEnd);
}

/// How long a blocking read or write on a [`blocking_io`] thread waits before it yields to
/// the runtime once: the bound on how late a stop or an interval reaches a thread whose
/// server has stopped answering.
pub const BLOCKING_SLICE: Duration = Duration::from_millis(50);

thread_local! {
    static BLOCKING_IO: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is an engine client thread in blocking-I/O mode: it owns one
/// connection and nothing else, so a driver may block in `read`/`write`, provided each call
/// times out after [`BLOCKING_SLICE`] and the future then yields. False on every other
/// thread (loaders, telemetry, the collector).
pub fn blocking_io() -> bool {
    BLOCKING_IO.with(Cell::get)
}

/// Runs `f` as on a blocking-I/O thread: what it connects uses blocking sockets and waits in
/// the call (a script's top level, which runs outside any event loop, as sysbench runs it).
pub fn with_blocking_io<T>(f: impl FnOnce() -> T) -> T {
    let before = BLOCKING_IO.with(|b| b.replace(true));
    let out = f();
    BLOCKING_IO.with(|b| b.set(before));
    out
}

/// Part `index` of `total` things (connections, events) split into `parts` client threads, as
/// pgbench splits its clients over its threads: each part gets `total / parts`, and the first
/// `total % parts` parts one more (`-c 3 -j 2`: clients 0 and 1, then 2).
pub fn share(total: u64, parts: u64, index: u64) -> std::ops::Range<u64> {
    let parts = parts.max(1);
    let (each, extra) = (total / parts, total % parts);
    let start = index * each + index.min(extra);
    start..start + each + u64::from(index < extra)
}

impl RunConfig {
    /// Defaults for `connections` connections in closed loop for `duration`.
    pub fn new(connections: usize, duration: Option<Duration>) -> RunConfig {
        RunConfig {
            connections,
            client_threads: 1,
            arrival: Arrival::Closed,
            duration,
            warmup: Duration::ZERO,
            events: None,
            interval: Duration::from_secs(1),
            report_interval: None,
            shutdown_grace: Duration::from_secs(2),
            interrupt_grace: Duration::from_millis(500),
            connect_timeout: Duration::from_secs(30),
            late_threshold: Duration::from_millis(1),
            seed: 0,
            blocking_io: false,
            worker_offset: 0,
            start_at: None,
            client_netns: None,
            max_tries: None,
            events_per_connection: None,
            reconnect_each: false,
            skip_late: None,
            txn_log: None,
        }
    }
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// `--time` elapsed or `--events` were all started.
    Completed = 1,
    /// Ctrl-C or SIGTERM.
    Interrupted = 2,
    /// A worker hit an error of class [`ErrorClass::Fatal`].
    Fatal = 3,
    /// A worker, a client thread or the observer panicked (a bug): see [`RunOutcome::crash`].
    Crashed = 4,
}

/// A stop request shared by the signal handler, the workers and the collector.
#[derive(Debug, Default)]
pub struct StopSignal {
    stopped: AtomicBool,
    reason: AtomicU8,
    notify: Notify,
}

impl StopSignal {
    /// A signal that has not fired.
    pub fn new() -> Arc<StopSignal> {
        Arc::new(StopSignal::default())
    }

    /// Requests a stop; the first reason given wins.
    pub fn stop(&self, reason: StopReason) {
        let _ = self
            .reason
            .compare_exchange(0, reason as u8, Ordering::SeqCst, Ordering::SeqCst);
        self.stopped.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Whether a stop was requested.
    #[inline]
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// The reason given first, if any.
    pub fn reason(&self) -> Option<StopReason> {
        match self.reason.load(Ordering::SeqCst) {
            1 => Some(StopReason::Completed),
            2 => Some(StopReason::Interrupted),
            3 => Some(StopReason::Fatal),
            4 => Some(StopReason::Crashed),
            _ => None,
        }
    }

    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// One merged interval, as handed to the [`Observer`]: a stored interval
/// ([`Observer::on_interval`]) or a live report's span of them ([`Observer::on_report`]).
#[derive(Debug)]
pub struct IntervalReport<'a> {
    /// 0-based number: of the stored interval, or of the report.
    pub index: u32,
    /// Interval start, seconds since the run started (warmup included).
    pub start_s: f64,
    /// Interval end, seconds since the run started.
    pub end_s: f64,
    /// Part of the warmup: not counted in the totals.
    pub warmup: bool,
    /// The run's last interval (possibly shorter than the others).
    pub last: bool,
    /// What was measured in it, all client threads merged.
    pub stats: &'a Stats,
    /// Open-loop arrivals due at its end that had not started.
    pub backlog: u64,
    /// Connections in the run.
    pub connections: usize,
    /// Each connection's tally from the start (warmup included) to the interval's end, as its
    /// client thread cut it: for reports of a span ending here (sysbench's checkpoints), by
    /// difference. On a merged report, that of its last interval.
    pub per_connection: &'a [ConnectionTally],
}

impl IntervalReport<'_> {
    /// Interval length in seconds.
    pub fn len_s(&self) -> f64 {
        (self.end_s - self.start_s).max(1e-9)
    }
}

/// A function an [`Observer`] hands each stored interval to, for a workload's own use of them
/// as the run goes (sysbench's checkpoint reports under `dbperf lua`).
pub type EachInterval = Box<dyn FnMut(&IntervalReport<'_>)>;

/// Receives the run's progress on the collector thread.
pub trait Observer {
    /// Every connection is open; measuring starts now. `t0_ns` is the run's time zero on
    /// [`crate::clock::now_ns`]'s clock: interval times are seconds after it, so samples taken
    /// elsewhere on that clock line up with the intervals.
    fn on_start(&mut self, _connections: usize, _t0_ns: u64) {}
    /// Every connection is open and no transaction has started yet (the workers wait until
    /// this returns): for a line that must come before anything the workload prints. Keep it
    /// short: the run's time zero is already set.
    fn on_ready(&mut self) {}
    /// A stored interval is complete.
    fn on_interval(&mut self, report: &IntervalReport<'_>);
    /// A report interval is complete ([`RunConfig::report_interval`]): called after the
    /// [`Observer::on_interval`] of its last stored interval, with the counters and
    /// histograms of all its stored intervals merged. Never spans the end of the warmup.
    fn on_report(&mut self, _report: &IntervalReport<'_>) {}
}

/// What a run measured.
#[derive(Debug)]
pub struct RunOutcome {
    /// Totals over the measured (non-warmup) intervals.
    pub total: Stats,
    /// Length of the measured phase, seconds.
    pub measured_s: f64,
    /// Length of the warmup that actually ran, seconds.
    pub warmup_s: f64,
    /// Intervals reported, warmup included.
    pub intervals: u32,
    /// Why the run ended.
    pub reason: StopReason,
    /// The error that stopped the run, for [`StopReason::Fatal`].
    pub fatal: Option<TxnError>,
    /// Open-loop arrivals due before the end that never started.
    pub backlog_at_end: u64,
    /// Transactions still in flight when the grace period ran out.
    pub abandoned: u64,
    /// What panicked, for [`StopReason::Crashed`]: where and the panic's message.
    pub crash: Option<String>,
    /// Measured seconds in intervals where the server was unreachable
    /// ([`Stats::server_unreachable`]).
    pub unreachable_s: f64,
    /// The last measured interval was one of them: the server had not come back when the run
    /// ended.
    pub unreachable_at_end: bool,
    /// Each connection's completed transactions and the time they took (warmup included),
    /// indexed by connection: sysbench's "threads fairness".
    pub per_connection: Vec<ConnectionTally>,
}

/// One connection's share of a run: what sysbench's per-thread timer counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionTally {
    /// Transactions it completed.
    pub events: u64,
    /// Their service time, summed (ns).
    pub busy_ns: u64,
}

/// One connection's tally as it runs: stored by its worker after each transaction and read
/// at the end; copied by its client thread's ticker as it cuts an interval (between two
/// transactions of that thread, so the copy agrees with the interval's counts), which the
/// collector reads as it delivers the interval. A cache line of its own, so connections on
/// different client threads never write to one line.
#[repr(align(64))]
#[derive(Default)]
struct LiveTally {
    events: AtomicU64,
    busy_ns: AtomicU64,
    cut_events: AtomicU64,
    cut_busy_ns: AtomicU64,
}

impl LiveTally {
    fn store(&self, t: &ConnectionTally) {
        self.events.store(t.events, Ordering::Relaxed);
        self.busy_ns.store(t.busy_ns, Ordering::Relaxed);
    }

    fn read(&self) -> ConnectionTally {
        ConnectionTally {
            events: self.events.load(Ordering::Relaxed),
            busy_ns: self.busy_ns.load(Ordering::Relaxed),
        }
    }

    fn cut(&self) {
        let t = self.read();
        self.cut_events.store(t.events, Ordering::Relaxed);
        self.cut_busy_ns.store(t.busy_ns, Ordering::Relaxed);
    }

    /// The tally at its thread's last cut. A thread a whole interval ahead of the collector
    /// may have cut the next one already: the copy is then that one's.
    fn read_cut(&self) -> ConnectionTally {
        ConnectionTally {
            events: self.cut_events.load(Ordering::Relaxed),
            busy_ns: self.cut_busy_ns.load(Ordering::Relaxed),
        }
    }
}

/// Why a run could not start.
#[derive(Debug)]
pub enum RunError {
    /// A connection could not be opened.
    Connect(TxnError),
    /// A client thread or its runtime could not be created.
    Io(std::io::Error),
    /// The configuration cannot run.
    Config(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // The workload's message names the server and what to check.
            RunError::Connect(e) => match e.code {
                Some(code) => write!(f, "opening the run's connections: {} (error code {code})", e.message),
                None => write!(f, "opening the run's connections: {}", e.message),
            },
            RunError::Io(e) => write!(f, "cannot start client threads: {e}"),
            RunError::Config(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunError {}

/// Messages from client threads to the collector.
enum Msg {
    Ready {
        error: Option<TxnError>,
    },
    Interval {
        thread: usize,
        index: u32,
        stats: Box<Stats>,
        backlog: u64,
        last: Option<LastInfo>,
    },
    /// The thread panicked after the start; it sends nothing more.
    Crashed {
        thread: usize,
        message: String,
    },
}

struct LastInfo {
    end_ns: u64,
    abandoned: u64,
}

/// `d` in nanoseconds, `u64::MAX` for the durations beyond (584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Interval boundaries, relative to t0, with the warmup as its own interval(s).
#[derive(Clone, Copy, Debug)]
struct Boundaries {
    interval_ns: u64,
    warmup_ns: u64,
    warmup_intervals: u32,
}

impl Boundaries {
    fn new(interval: Duration, warmup: Duration) -> Boundaries {
        // Saturating: a warmup of centuries stays a (very long) warmup, never a wrapped one.
        let interval_ns = nanos(interval).max(1);
        let warmup_ns = nanos(warmup);
        let warmup_intervals = u32::try_from(warmup_ns.div_ceil(interval_ns)).unwrap_or(u32::MAX);
        Boundaries {
            interval_ns,
            warmup_ns,
            warmup_intervals,
        }
    }

    /// End of interval `i`, nanoseconds after t0.
    fn end(&self, i: u32) -> u64 {
        let w = self.warmup_intervals;
        let n = u64::from(i) + 1;
        match n.cmp(&u64::from(w)) {
            std::cmp::Ordering::Less => n.saturating_mul(self.interval_ns),
            std::cmp::Ordering::Equal => self.warmup_ns,
            std::cmp::Ordering::Greater => self
                .warmup_ns
                .saturating_add((n - u64::from(w)).saturating_mul(self.interval_ns)),
        }
    }

    fn start(&self, i: u32) -> u64 {
        if i == 0 {
            0
        } else {
            self.end(i - 1)
        }
    }

    fn is_warmup(&self, i: u32) -> bool {
        i < self.warmup_intervals
    }
}

/// The live report being gathered from stored intervals ([`RunConfig::report_interval`]).
struct ReportWindow {
    /// Report length (`None`: every stored interval is a report).
    every_ns: Option<u64>,
    /// The stored intervals merged so far (none while `spans` is 0).
    stats: Box<Stats>,
    /// Stored intervals merged into `stats`.
    spans: u32,
    /// Start of the report, nanoseconds after t0.
    start_ns: u64,
    /// Start of the phase (warmup or measured) the report's schedule counts from.
    phase_ns: u64,
    /// The report ends at the first interval boundary at or past this.
    due_ns: u64,
    /// Reports made.
    reports: u32,
}

impl ReportWindow {
    fn new(every: Option<Duration>, ops: &OpTable) -> ReportWindow {
        let every_ns = every.map(nanos).filter(|n| *n > 0);
        ReportWindow {
            every_ns,
            stats: Box::new(Stats::new(ops)),
            spans: 0,
            start_ns: 0,
            phase_ns: 0,
            due_ns: every_ns.unwrap_or(0),
            reports: 0,
        }
    }

    /// Whether the report ends with the stored interval whose nominal end is `end_ns`.
    fn ends_with(&self, end_ns: u64, phase_ends: bool, last: bool) -> bool {
        self.every_ns.is_none() || last || phase_ends || end_ns >= self.due_ns
    }

    /// Starts the next report at `end_ns` (a new phase when `phase_ends`).
    fn next(&mut self, end_ns: u64, phase_ends: bool) {
        if phase_ends {
            self.phase_ns = end_ns;
        }
        if let Some(every) = self.every_ns {
            // The first multiple of the report interval (from the phase's start) past `end_ns`.
            let k = (end_ns - self.phase_ns) / every + 1;
            self.due_ns = self.phase_ns.saturating_add(k.saturating_mul(every));
        }
        self.start_ns = end_ns;
        self.reports += 1;
        if self.spans > 0 {
            self.stats.reset();
            self.spans = 0;
        }
    }
}

/// Everything a client thread needs, moved into it.
struct ThreadCtx<W: Workload> {
    thread: usize,
    threads: usize,
    workers: std::ops::Range<usize>,
    workload: Arc<W>,
    cfg: RunConfig,
    ops: OpTable,
    stop: Arc<StopSignal>,
    fatal: Arc<Mutex<Option<TxnError>>>,
    crash: Arc<Mutex<Option<String>>>,
    tx: mpsc::Sender<Msg>,
    recycle: mpsc::Receiver<Box<Stats>>,
    barrier: Arc<Barrier>,
    t0: Arc<AtomicU64>,
    events: Option<u64>,
    /// Connection attempts in flight, over all client threads (see [`CONNECTS_IN_FLIGHT`]).
    connects: Arc<tokio::sync::Semaphore>,
    /// Each connection's tally, kept up to date by its worker.
    tallies: Arc<Vec<LiveTally>>,
}

/// At most this many connections are being opened at once. A server's listen queue
/// (`back_log`, 128 or less by default, and the kernel's `somaxconn`) drops what overflows it,
/// and a dropped TCP handshake is retried after 1, 2, 4, 8 and 16 s: a thousand connections
/// opened all at once can leave one waiting past the connect timeout for nothing.
pub const CONNECTS_IN_FLIGHT: usize = 64;

/// Per-thread state shared by that thread's tasks (never across threads).
struct Local {
    stats: RefCell<Box<Stats>>,
    schedule: Option<RefCell<ThreadSchedule>>,
    events_left: Cell<Option<u64>>,
    in_flight: Cell<u64>,
    /// Arrivals taken before the deadline whose worker woke only after it: due, never
    /// started, so part of the backlog at the end.
    unstarted: Cell<u64>,
    interval: Cell<u32>,
    /// When the ticker next swaps the statistics out (ns since the epoch of `now_ns`).
    next_boundary: Cell<u64>,
    /// When the last attempt recorded in `stats` ended: a run cut by its deadline is measured
    /// up to here, so the completions of the grace period have their time counted too.
    last_recorded: Cell<u64>,
    /// Workers reconnecting after a lost connection, and when their time down was last
    /// added to `stats` ([`Local::account_down`]).
    down: Cell<u64>,
    down_since: Cell<u64>,
}

impl Local {
    /// Adds the connection-time spent down since the last call to the current interval.
    fn account_down(&self, now: u64) {
        let since = self.down_since.get();
        if now <= since {
            return;
        }
        self.down_since.set(now);
        let down = self.down.get();
        if down > 0 {
            self.stats.borrow_mut().down_ns += down * (now - since);
        }
    }

    /// A worker starts (`+1`) or stops (`-1`) reconnecting.
    fn set_down(&self, delta: i64) {
        self.account_down(now_ns());
        self.down.set(self.down.get().saturating_add_signed(delta));
    }
}

/// The message of a panic's payload (`panic!` with a literal or with formatting).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Records the first crash and stops the run.
fn record_crash(crash: &Mutex<Option<String>>, stop: &StopSignal, message: String) {
    if let Ok(mut c) = crash.lock() {
        c.get_or_insert(message);
    }
    stop.stop(StopReason::Crashed);
}

/// Runs `workload` as `cfg` says, reporting intervals to `observer`, until the
/// duration or event count is reached or `stop` fires.
pub fn run<W: Workload>(
    cfg: &RunConfig,
    workload: Arc<W>,
    stop: Arc<StopSignal>,
    observer: &mut dyn Observer,
) -> Result<RunOutcome, RunError> {
    if cfg.connections == 0 {
        return Err(RunError::Config("at least one connection is needed (--threads)".into()));
    }
    if cfg.duration.is_none() && cfg.events.is_none() {
        return Err(RunError::Config("the run needs a limit: --time or --events".into()));
    }
    if let Some(rate) = cfg.arrival.rate() {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(RunError::Config(format!(
                "--rate must be a positive number, got {rate}"
            )));
        }
    }
    let too_long = || {
        RunError::Config(format!(
            "--warmup-time {} s plus --time {} s is longer than dbperf can time (about 290 years)",
            cfg.warmup.as_secs(),
            cfg.duration.unwrap_or_default().as_secs()
        ))
    };
    let planned = cfg
        .warmup
        .checked_add(cfg.duration.unwrap_or_default())
        .ok_or_else(too_long)?;
    if planned.as_nanos() >= u128::from(u64::MAX / 2) {
        return Err(too_long());
    }
    if cfg.blocking_io && cfg.arrival.rate().is_some() {
        return Err(RunError::Config(
            "blocking client I/O needs the closed loop: with --rate, arrivals queue per client \
             thread, so use --client-io=async"
                .into(),
        ));
    }
    let threads = if cfg.blocking_io {
        cfg.connections
    } else {
        cfg.client_threads.clamp(1, cfg.connections)
    };
    let ops = workload.ops();
    let (tx, rx) = mpsc::channel::<Msg>();
    let barrier = Arc::new(Barrier::new(threads + 1));
    let t0 = Arc::new(AtomicU64::new(0));
    let fatal = Arc::new(Mutex::new(None));
    let crash: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let mut recyclers = Vec::with_capacity(threads);
    let mut handles = Vec::with_capacity(threads);
    let connects = Arc::new(tokio::sync::Semaphore::new(CONNECTS_IN_FLIGHT));
    let tallies: Arc<Vec<LiveTally>> = Arc::new((0..cfg.connections).map(|_| LiveTally::default()).collect());

    for thread in 0..threads {
        let (rtx, rrx) = mpsc::channel();
        recyclers.push(rtx);
        let mine = share(cfg.connections as u64, threads as u64, thread as u64);
        let (lo, hi) = (mine.start as usize, mine.end as usize);
        let events = match cfg.events_per_connection {
            // Each connection its own count: the thread's share is its connections'.
            Some(each) => Some(each.saturating_mul((hi - lo) as u64)),
            None => cfg.events.map(|n| {
                let r = share(n, threads as u64, thread as u64);
                r.end - r.start
            }),
        };
        let ctx = ThreadCtx {
            thread,
            threads,
            workers: cfg.worker_offset + lo..cfg.worker_offset + hi,
            workload: workload.clone(),
            cfg: cfg.clone(),
            ops: ops.clone(),
            stop: stop.clone(),
            fatal: fatal.clone(),
            crash: crash.clone(),
            tx: tx.clone(),
            recycle: rrx,
            barrier: barrier.clone(),
            t0: t0.clone(),
            events,
            connects: connects.clone(),
            tallies: tallies.clone(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("dbperf-client-{thread}"))
            .spawn(move || client_thread(ctx))
            .map_err(RunError::Io)?;
        handles.push(handle);
    }
    drop(tx);

    // Wait until every thread has opened its connections.
    let mut connect_error = None;
    for _ in 0..threads {
        match rx.recv() {
            Ok(Msg::Ready { error }) => {
                if connect_error.is_none() {
                    connect_error = error;
                }
            }
            Ok(Msg::Interval { .. } | Msg::Crashed { .. }) => unreachable!("only follow the start"),
            Err(_) => break,
        }
    }
    let mut late = None;
    let start = match (&connect_error, cfg.start_at) {
        (Some(_), _) => u64::MAX,
        (None, None) => now_ns(),
        (None, Some(at)) => wait_for(at, cfg.warmup, &stop).unwrap_or_else(|e| {
            late = Some(e);
            u64::MAX
        }),
    };
    t0.store(start, Ordering::SeqCst);
    if start != u64::MAX {
        observer.on_ready();
    }
    barrier.wait();
    if start == u64::MAX {
        for h in handles {
            let _ = h.join();
        }
        return Err(match (late, connect_error) {
            (Some(late), _) => RunError::Config(late),
            (None, Some(e)) => RunError::Connect(e),
            (None, None) => unreachable!("time zero is unset only after an error"),
        });
    }
    // A panicking observer is a crash like a panicking worker: the run stops, and the
    // intervals it did record are kept.
    let observe = |what: &str, f: &mut dyn FnMut()| {
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            record_crash(
                &crash,
                &stop,
                format!("the collector panicked {what}: {}", panic_message(&*p)),
            );
        }
    };
    observe("when the run started", &mut || {
        observer.on_start(cfg.connections, t0.load(Ordering::SeqCst))
    });

    let bounds = Boundaries::new(cfg.interval, cfg.warmup);
    let mut total = Stats::new(&ops);
    // Interval → (merged stats, backlog, the thread whose box holds the merge). Every box goes
    // back to the thread that sent it, so no thread runs short and allocates while another's
    // spares pile up.
    let mut pending: BTreeMap<u32, (Box<Stats>, u64, usize)> = BTreeMap::new();
    let mut seen: Vec<Option<u32>> = vec![None; threads];
    let mut finished: Vec<Option<u32>> = vec![None; threads];
    let mut end_ns = 0u64;
    let mut abandoned = 0u64;
    let mut next = 0u32;
    let mut intervals = 0u32;
    // Each connection's tally as each interval is delivered.
    let mut snapshot: Vec<ConnectionTally> = Vec::with_capacity(cfg.connections);
    let mut measured_ns = 0u64;
    let mut warmup_ns = 0u64;
    let mut backlog_at_end = 0u64;
    let mut unreachable_ns = 0u64;
    let mut unreachable_at_end = false;
    let mut report = ReportWindow::new(cfg.report_interval, &ops);

    while let Ok(msg) = rx.recv() {
        let (thread, index, stats, backlog, last) = match msg {
            Msg::Interval {
                thread,
                index,
                stats,
                backlog,
                last,
            } => (thread, index, stats, backlog, last),
            Msg::Crashed { thread, message } => {
                record_crash(&crash, &stop, message);
                if finished[thread].is_some() {
                    continue;
                }
                // Its measurements since its last interval are lost with it; the run's other
                // intervals stop waiting for it after an empty last one.
                let last = LastInfo {
                    end_ns: now_ns(),
                    abandoned: 0,
                };
                let index = seen[thread].map_or(0, |s| s + 1);
                (thread, index, Box::new(Stats::new(&ops)), 0, Some(last))
            }
            Msg::Ready { .. } => continue,
        };
        seen[thread] = Some(index);
        if let Some(l) = last {
            finished[thread] = Some(index);
            end_ns = end_ns.max(l.end_ns);
            abandoned += l.abandoned;
        }
        match pending.get_mut(&index) {
            Some((acc, b, _)) => {
                acc.add(&stats);
                let mut stats = stats;
                stats.reset();
                *b += backlog;
                let _ = recyclers[thread].send(stats);
            }
            None => {
                pending.insert(index, (stats, backlog, thread));
            }
        }
        // Emit every interval that all threads have delivered.
        loop {
            let complete =
                (0..threads).all(|t| seen[t].is_some_and(|s| s >= next) || finished[t].is_some_and(|f| f < next));
            if !complete {
                break;
            }
            let Some((mut acc, backlog, owner)) = pending.remove(&next) else {
                break;
            };
            let all_done = finished.iter().all(Option::is_some);
            let last = all_done && pending.is_empty();
            let start = bounds.start(next);
            let nominal_end = bounds.end(next);
            // The last interval runs to the end of the run, which is past its nominal end when
            // the grace period completed transactions after the deadline.
            let end = if last {
                end_ns.saturating_sub(t0.load(Ordering::SeqCst)).max(start)
            } else {
                nominal_end
            };
            let warmup = bounds.is_warmup(next);
            if warmup {
                warmup_ns += end - start;
            } else {
                total.add(&acc);
                measured_ns += end - start;
                unreachable_at_end = acc.server_unreachable();
                if unreachable_at_end {
                    unreachable_ns += end - start;
                }
            }
            if last {
                backlog_at_end = backlog;
            }
            snapshot.clear();
            snapshot.extend(tallies.iter().map(LiveTally::read_cut));
            observe("while recording an interval", &mut || {
                observer.on_interval(&IntervalReport {
                    index: next,
                    start_s: secs(start),
                    end_s: secs(end.max(start + 1)),
                    warmup,
                    last,
                    stats: &acc,
                    backlog,
                    connections: cfg.connections,
                    per_connection: &snapshot,
                })
            });
            // The live report: this interval alone, or merged with the ones before it.
            let phase_ends = warmup && !bounds.is_warmup(next + 1);
            if report.ends_with(nominal_end, phase_ends, last) {
                let merged: &Stats = if report.spans == 0 {
                    &acc
                } else {
                    report.stats.add(&acc);
                    &report.stats
                };
                observe("while reporting an interval", &mut || {
                    observer.on_report(&IntervalReport {
                        index: report.reports,
                        start_s: secs(report.start_ns),
                        end_s: secs(end.max(start + 1)),
                        warmup,
                        last,
                        stats: merged,
                        backlog,
                        connections: cfg.connections,
                        per_connection: &snapshot,
                    })
                });
                report.next(nominal_end, phase_ends);
            } else {
                report.stats.add(&acc);
                report.spans += 1;
            }
            intervals += 1;
            next += 1;
            acc.reset();
            // Give the emptied structure back to the thread it came from, if it still runs.
            if finished[owner].is_none() {
                let _ = recyclers[owner].send(acc);
            }
        }
        if finished.iter().all(Option::is_some) && pending.is_empty() {
            break;
        }
    }
    for h in handles {
        let _ = h.join();
    }
    let reason = stop.reason().unwrap_or(StopReason::Completed);
    let fatal = fatal.lock().map(|mut f| f.take()).unwrap_or(None);
    let crash = crash.lock().map(|mut c| c.take()).unwrap_or(None);
    let per_connection = tallies.iter().map(LiveTally::read).collect();
    Ok(RunOutcome {
        total,
        measured_s: secs(measured_ns),
        warmup_s: secs(warmup_ns),
        intervals,
        reason,
        fatal,
        backlog_at_end,
        abandoned,
        crash,
        unreachable_s: secs(unreachable_ns),
        unreachable_at_end,
        per_connection,
    })
}

/// Waits until `warmup` before `measured_at` (a wall-clock instant) and returns that instant on
/// the monotonic clock: time zero. A stop ends the wait early (time zero is then now, and the
/// run stops at once). An instant already past is an error that says by how much.
fn wait_for(measured_at: std::time::SystemTime, warmup: Duration, stop: &StopSignal) -> Result<u64, String> {
    let zero = measured_at.checked_sub(warmup).unwrap_or(measured_at);
    let (wall, mono) = (std::time::SystemTime::now(), now_ns());
    let ahead = zero.duration_since(wall).map_err(|e| {
        format!(
            "the shared start time passed {:.1} s before this client's connections were open (the warmup of {} s \
             starts before it): give every shard a --start-at later by at least that",
            e.duration().as_secs_f64(),
            warmup.as_secs()
        )
    })?;
    let t0 = mono.saturating_add(ahead.as_nanos() as u64);
    loop {
        let now = now_ns();
        if now >= t0 {
            return Ok(t0);
        }
        if stop.is_stopped() {
            return Ok(now);
        }
        std::thread::sleep(Duration::from_nanos((t0 - now).min(50_000_000)));
    }
}

/// Joins the network namespace at `path` (the calling thread only; threads it starts after
/// are in it too).
pub fn join_netns(path: &std::path::Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot open the client's network namespace {}: {e}", path.display()))?;
    // SAFETY: setns on a descriptor we own; CLONE_NEWNET moves only this thread.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "cannot join the client's network namespace {}: {} (it needs CAP_SYS_ADMIN)",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// How far a client thread got, for what a panic must still do so nobody waits for it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Connecting,
    Ready,
    Started,
}

fn client_thread<W: Workload>(ctx: ThreadCtx<W>) {
    set_thread_timer_slack();
    if let Some(ns) = &ctx.cfg.client_netns {
        if let Err(e) = join_netns(ns) {
            let _ = ctx.tx.send(Msg::Ready {
                error: Some(TxnError::new(ErrorClass::Fatal, None, e)),
            });
            ctx.barrier.wait();
            return;
        }
    }
    BLOCKING_IO.with(|b| b.set(ctx.cfg.blocking_io));
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ctx.tx.send(Msg::Ready {
                error: Some(TxnError::new(ErrorClass::Fatal, None, e.to_string())),
            });
            ctx.barrier.wait();
            return;
        }
    };
    let (thread, tx, barrier, t0) = (ctx.thread, ctx.tx.clone(), ctx.barrier.clone(), ctx.t0.clone());
    let phase = Cell::new(Phase::Connecting);
    let local = tokio::task::LocalSet::new();
    let body = std::panic::AssertUnwindSafe(|| local.block_on(&rt, thread_body(ctx, &phase)));
    let Err(payload) = std::panic::catch_unwind(body) else {
        return;
    };
    let message = format!("client thread {thread} panicked: {}", panic_message(&*payload));
    // Whoever waits for this thread must not wait forever.
    match phase.get() {
        Phase::Connecting => {
            let _ = tx.send(Msg::Ready {
                error: Some(TxnError::new(ErrorClass::Fatal, None, message)),
            });
            barrier.wait();
        }
        Phase::Ready => {
            barrier.wait();
            if t0.load(Ordering::SeqCst) != u64::MAX {
                let _ = tx.send(Msg::Crashed { thread, message });
            }
        }
        Phase::Started => {
            let _ = tx.send(Msg::Crashed { thread, message });
        }
    }
}

async fn thread_body<W: Workload>(ctx: ThreadCtx<W>, phase: &Cell<Phase>) {
    let ctx = Rc::new(ctx);
    // 1. Connect this thread's share, concurrently.
    let mut connecting = Vec::new();
    for id in ctx.workers.clone() {
        let c = ctx.clone();
        connecting.push(tokio::task::spawn_local(async move {
            // The timeout counts from the attempt, not from the wait for a turn.
            let _turn = c.connects.acquire().await.ok();
            match tokio::time::timeout(c.cfg.connect_timeout, c.workload.connect(id)).await {
                Ok(r) => r,
                Err(_) => Err(TxnError::new(
                    ErrorClass::ConnectionLost,
                    None,
                    format!("connection {id} did not open within {:?}", c.cfg.connect_timeout),
                )),
            }
        }));
    }
    let mut workers = Vec::with_capacity(connecting.len());
    let mut error = None;
    for h in connecting {
        match h.await {
            Ok(Ok(w)) => workers.push(w),
            Ok(Err(e)) => error = error.or(Some(e)),
            Err(e) => {
                let message = match e.try_into_panic() {
                    Ok(p) => format!("opening a connection panicked: {}", panic_message(&*p)),
                    Err(e) => e.to_string(),
                };
                error = error.or(Some(TxnError::new(ErrorClass::Fatal, None, message)))
            }
        }
    }
    let _ = ctx.tx.send(Msg::Ready { error });
    phase.set(Phase::Ready);
    // 2. Wait for the common start.
    ctx.barrier.wait();
    phase.set(Phase::Started);
    let t0 = ctx.t0.load(Ordering::SeqCst);
    if t0 == u64::MAX {
        return;
    }
    let bounds = Boundaries::new(ctx.cfg.interval, ctx.cfg.warmup);
    let deadline = ctx
        .cfg
        .duration
        .map(|d| t0.saturating_add(nanos(ctx.cfg.warmup.saturating_add(d))));
    let local = Rc::new(Local {
        stats: RefCell::new(Box::new(Stats::new(&ctx.ops))),
        schedule: ThreadSchedule::new(ctx.cfg.arrival, ctx.thread, ctx.threads, t0, ctx.cfg.seed).map(RefCell::new),
        events_left: Cell::new(ctx.events),
        in_flight: Cell::new(0),
        unstarted: Cell::new(0),
        interval: Cell::new(0),
        next_boundary: Cell::new(t0.saturating_add(bounds.end(0))),
        last_recorded: Cell::new(0),
        down: Cell::new(0),
        down_since: Cell::new(t0),
    });

    // 3. Workers and the interval ticker.
    let mut tasks = tokio::task::JoinSet::new();
    for (w, id) in workers.into_iter().zip(ctx.workers.clone()) {
        tasks.spawn_local(worker_loop(ctx.clone(), local.clone(), w, id, deadline));
    }
    let mut ticker = {
        let (ctx, local) = (ctx.clone(), local.clone());
        tokio::task::spawn_local(async move {
            loop {
                let i = local.interval.get();
                let boundary = t0.saturating_add(bounds.end(i));
                local.next_boundary.set(boundary);
                if deadline.is_some_and(|d| boundary >= d) {
                    // The interval that reaches the deadline is the last: it is sent at the
                    // end with the transactions that complete in the grace period, instead of
                    // leaving them a fragment of an interval a few nanoseconds long.
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep(Duration::from_nanos(boundary.saturating_sub(now_ns()))).await;
                // tokio's timer may fire a little early or late; wait out the rest precisely.
                while now_ns() < boundary {
                    tokio::task::yield_now().await;
                }
                let spare = ctx
                    .recycle
                    .try_recv()
                    .unwrap_or_else(|_| Box::new(Stats::new(&ctx.ops)));
                local.account_down(boundary);
                let full = local.stats.replace(spare);
                cut_tallies(&ctx);
                let backlog = local.schedule.as_ref().map_or(0, |s| s.borrow().backlog(now_ns()));
                local.interval.set(i + 1);
                let _ = ctx.tx.send(Msg::Interval {
                    thread: ctx.thread,
                    index: i,
                    stats: full,
                    backlog,
                    last: None,
                });
            }
        })
    };

    // 4. Wait for the workers, but never past the grace periods. A worker that panics stops
    // the run as a crash.
    let crashed = |e: tokio::task::JoinError, what: &str| {
        if let Ok(p) = e.try_into_panic() {
            let message = format!(
                "{what} on client thread {} panicked: {}",
                ctx.thread,
                panic_message(&*p)
            );
            record_crash(&ctx.crash, &ctx.stop, message);
        }
    };
    let all_done = async {
        while let Some(r) = tasks.join_next().await {
            if let Err(e) = r {
                crashed(e, "a worker");
            }
        }
    };
    let after_deadline = async {
        match deadline {
            Some(d) => {
                let limit = d.saturating_add(nanos(ctx.cfg.shutdown_grace));
                tokio::time::sleep(Duration::from_nanos(limit.saturating_sub(now_ns()))).await
            }
            None => std::future::pending().await,
        }
    };
    let after_stop = async {
        ctx.stop.wait().await;
        let grace = match ctx.stop.reason() {
            Some(StopReason::Completed) => ctx.cfg.shutdown_grace,
            _ => ctx.cfg.interrupt_grace,
        };
        tokio::time::sleep(grace).await
    };
    tokio::select! {
        _ = all_done => {}
        _ = after_deadline => {}
        _ = after_stop => {}
        Err(e) = &mut ticker => crashed(e, "the interval ticker"),
    }
    ticker.abort();
    // Past the deadline, the measured time runs to the last completion counted in the grace
    // period (never to the grace's end): a transaction counted is a transaction timed.
    let end_ns = deadline.map_or(now_ns(), |d| now_ns().min(d.max(local.last_recorded.get())));
    local.account_down(end_ns);
    let backlog = local.schedule.as_ref().map_or(0, |s| s.borrow().backlog(end_ns)) + local.unstarted.get();
    let spare = Box::new(Stats::new(&ctx.ops));
    let full = local.stats.replace(spare);
    cut_tallies(&ctx);
    let last = LastInfo {
        end_ns,
        abandoned: local.in_flight.get(),
    };
    let _ = ctx.tx.send(Msg::Interval {
        thread: ctx.thread,
        index: local.interval.get(),
        stats: full,
        backlog,
        last: Some(last),
    });
}

/// Copies the tallies of a client thread's connections as it cuts an interval.
fn cut_tallies<W: Workload>(ctx: &ThreadCtx<W>) {
    let offset = ctx.cfg.worker_offset;
    for id in ctx.workers.clone() {
        if let Some(t) = ctx.tallies.get(id.wrapping_sub(offset)) {
            t.cut();
        }
    }
}

async fn worker_loop<W: Workload>(
    ctx: Rc<ThreadCtx<W>>,
    local: Rc<Local>,
    mut worker: W::Worker,
    id: usize,
    deadline: Option<u64>,
) {
    let mut tally = ConnectionTally::default();
    worker_body(&ctx, &local, &mut worker, id, deadline, &mut tally).await;
    worker.finish().await;
}

async fn worker_body<W: Workload>(
    ctx: &ThreadCtx<W>,
    local: &Local,
    worker: &mut W::Worker,
    id: usize,
    deadline: Option<u64>,
    tally: &mut ConnectionTally,
) {
    let timer = match local.schedule {
        Some(_) => match PreciseTimer::new() {
            Ok(t) => Some(t),
            Err(e) => {
                fail(
                    ctx,
                    TxnError::new(ErrorClass::Fatal, None, format!("cannot create a timerfd: {e}")),
                );
                return;
            }
        },
        None => None,
    };
    let late_ns = ctx.cfg.late_threshold.as_nanos() as u64;
    let skip_late_ns = ctx.cfg.skip_late.map(|d| d.as_nanos() as u64);
    let mut log = StatementLog::with_capacity(64);
    let mut mine = ctx.cfg.events_per_connection;
    let live = ctx.tallies.get(id.wrapping_sub(ctx.cfg.worker_offset));
    loop {
        if ctx.stop.is_stopped() {
            return;
        }
        if let Some(n) = &mut mine {
            if *n == 0 {
                return;
            }
            *n -= 1;
        }
        if let Some(n) = local.events_left.get() {
            if n == 0 {
                // This thread has started its share; the run ends when all have.
                return;
            }
            local.events_left.set(Some(n - 1));
        }
        if let Some(wait) = worker.pause() {
            // Keying and think time: before the intended start, so not in the response time.
            let until = now_ns() + wait.as_nanos() as u64;
            let until = deadline.map_or(until, |d| until.min(d));
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_nanos(until.saturating_sub(now_ns()))) => {}
                _ = ctx.stop.wait() => return,
            }
        }
        let intended = match &local.schedule {
            Some(s) => {
                let t = s.borrow_mut().take();
                if deadline.is_some_and(|d| t >= d) {
                    return;
                }
                if let Some(timer) = &timer {
                    tokio::select! {
                        r = timer.sleep_until(t) => if let Err(e) = r {
                            fail(ctx, TxnError::new(ErrorClass::Fatal, None, format!("timerfd: {e}")));
                            return;
                        },
                        _ = ctx.stop.wait() => return,
                    }
                }
                if let Some(limit) = skip_late_ns {
                    let now = now_ns();
                    if now.saturating_sub(t) > limit {
                        local.stats.borrow_mut().skipped += 1;
                        if let Some(sink) = &ctx.cfg.txn_log {
                            sink.record(&TxnEnd {
                                worker: id,
                                thread: ctx.thread,
                                kind: 0,
                                intended_ns: now,
                                started_ns: now,
                                end_ns: now,
                                tries: 0,
                                failed: None,
                                skipped: true,
                            });
                        }
                        continue;
                    }
                }
                Some(t)
            }
            None => None,
        };
        if ctx.cfg.reconnect_each {
            if let Err(e) = worker.reconnect().await {
                fail(ctx, e);
                return;
            }
        }
        let started = now_ns();
        // In closed loop a transaction is intended to start when it starts.
        let intended = intended.unwrap_or(started);
        if deadline.is_some_and(|d| started >= d) {
            if local.schedule.is_some() {
                local.unstarted.set(local.unstarted.get() + 1);
            }
            return;
        }
        local.in_flight.set(local.in_flight.get() + 1);
        let late = local.schedule.is_some() && started.saturating_sub(intended) > late_ns;
        let (mut tries, mut failed, mut kind) = (1u32, None, 0u16);
        loop {
            log.clear();
            let result = worker.execute(&mut log).await;
            let end = now_ns();
            local.last_recorded.set(end);
            let error = {
                let mut stats = local.stats.borrow_mut();
                stats.record_statements(&log);
                match result {
                    Ok(done) => {
                        kind = done.kind;
                        let (response, service) = (end - intended, end - started);
                        stats.record_txn(done.kind, response, service, done.expected_rollback);
                        tally.events += 1;
                        tally.busy_ns += service;
                        if let Some(slot) = live {
                            slot.store(tally);
                        }
                        stats.late_starts += late as u64;
                        None
                    }
                    Err(e) => {
                        stats.errors[e.class.index()] += 1;
                        Some(e)
                    }
                }
            };
            match error {
                None => break,
                Some(e) => match e.class.action() {
                    Action::Retry => {
                        if ctx.stop.is_stopped() {
                            break;
                        }
                        if ctx.cfg.max_tries.is_some_and(|m| tries >= m) {
                            let mut stats = local.stats.borrow_mut();
                            stats.failed += 1;
                            stats.failed_deadlocks += u64::from(e.class == ErrorClass::Deadlock);
                            failed = Some(e.class);
                            break;
                        }
                        tries += 1;
                        local.stats.borrow_mut().retries += 1;
                    }
                    Action::Reconnect => {
                        local.set_down(1);
                        let back = reconnect(ctx, local, worker, deadline).await;
                        local.set_down(-1);
                        if !back {
                            local.in_flight.set(local.in_flight.get() - 1);
                            return;
                        }
                        local.stats.borrow_mut().retries += 1;
                    }
                    Action::Abort => {
                        local.in_flight.set(local.in_flight.get() - 1);
                        fail(ctx, e);
                        return;
                    }
                },
            }
        }
        local.in_flight.set(local.in_flight.get() - 1);
        if failed.is_some() || tries > 1 {
            let mut stats = local.stats.borrow_mut();
            stats.retried += u64::from(tries > 1);
            // Under its type too: a success's, or the one the worker says it was running.
            if failed.is_some() {
                kind = worker.kind().unwrap_or(kind);
            }
            if let Some(t) = stats.per_txn.get_mut(kind as usize) {
                t.failed += u64::from(failed.is_some());
                t.failed_deadlocks += u64::from(failed == Some(ErrorClass::Deadlock));
                t.retried += u64::from(tries > 1);
                t.retries += u64::from(tries - 1);
            }
        }
        if let Some(sink) = &ctx.cfg.txn_log {
            sink.record(&TxnEnd {
                worker: id,
                thread: ctx.thread,
                kind,
                intended_ns: intended,
                started_ns: started,
                end_ns: local.last_recorded.get(),
                tries,
                failed,
                skipped: false,
            });
        }
        if worker.finished() {
            return;
        }
        if ctx.cfg.blocking_io && local.last_recorded.get() >= local.next_boundary.get() {
            // A blocking worker never waits in the runtime while its server answers: let
            // the ticker close the interval (and the shutdown select look at the clock).
            tokio::task::yield_now().await;
        }
    }
}

/// Reconnects with exponential backoff until it works, the run stops or its time is up.
async fn reconnect<W: Workload>(
    ctx: &ThreadCtx<W>,
    local: &Local,
    worker: &mut W::Worker,
    deadline: Option<u64>,
) -> bool {
    let mut backoff = Duration::from_millis(10);
    loop {
        if ctx.stop.is_stopped() || deadline.is_some_and(|d| now_ns() >= d) {
            return false;
        }
        match worker.reconnect().await {
            Ok(()) => {
                local.stats.borrow_mut().reconnects += 1;
                return true;
            }
            Err(e) if e.class == ErrorClass::ConnectionLost => {
                local.stats.borrow_mut().reconnect_failures += 1;
                let until_deadline = deadline.map_or(backoff, |d| Duration::from_nanos(d.saturating_sub(now_ns())));
                tokio::select! {
                    _ = tokio::time::sleep(backoff.min(until_deadline)) => {}
                    _ = ctx.stop.wait() => return false,
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
            Err(e) => {
                fail(ctx, e);
                return false;
            }
        }
    }
}

fn fail<W: Workload>(ctx: &ThreadCtx<W>, e: TxnError) {
    if let Ok(mut f) = ctx.fatal.lock() {
        if f.is_none() {
            *f = Some(e);
        }
    }
    ctx.stop.stop(StopReason::Fatal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_threads_get_the_extra_connections_as_pgbench_gives_them() {
        let parts = |total, threads| (0..threads).map(|i| share(total, threads, i)).collect::<Vec<_>>();
        assert_eq!(parts(3, 2), [0..2, 2..3]);
        assert_eq!(parts(10, 4), [0..3, 3..6, 6..8, 8..10]);
        assert_eq!(parts(2, 3), [0..1, 1..2, 2..2]);
        assert_eq!(parts(6, 3), [0..2, 2..4, 4..6]);
    }

    #[test]
    fn boundaries_put_warmup_in_its_own_intervals() {
        let b = Boundaries::new(Duration::from_secs(10), Duration::from_secs(25));
        let s = 1_000_000_000u64;
        assert_eq!(b.warmup_intervals, 3);
        assert_eq!(
            (b.end(0), b.end(1), b.end(2), b.end(3), b.end(4)),
            (10 * s, 20 * s, 25 * s, 35 * s, 45 * s)
        );
        assert!(b.is_warmup(2) && !b.is_warmup(3));
        let plain = Boundaries::new(Duration::from_secs(1), Duration::ZERO);
        assert_eq!((plain.start(0), plain.end(0), plain.end(4)), (0, s, 5 * s));
        assert!(!plain.is_warmup(0));
    }
}
