//! The dbperf engine: it drives a workload and measures it, knowing nothing about SQL.
//!
//! A run is one loop ([`run::run`]) where four things meet:
//!
//! * a **schedule** ([`schedule`]): closed loop (each connection starts its next
//!   transaction when the last one ends) or open loop (a total `--rate` with fixed or
//!   Poisson arrivals);
//! * a **stop condition**: `--time`, `--events`, an interrupt, or a fatal error, all
//!   with a bounded shutdown so a hung server cannot keep a run alive;
//! * a **workload** ([`Workload`]/[`Worker`]): opens connections and executes one
//!   transaction at a time, reporting statement service times into a [`StatementLog`];
//! * **recorders** ([`stats`]): HdrHistograms owned by each client thread, swapped out
//!   once per interval and merged by the collector. The hot path takes no lock that
//!   another thread contends and does not allocate.
//!
//! Latency has two clocks. *Response time* runs from a transaction's intended start
//! (its arrival in open loop) to its end, so queueing behind a slow server is counted
//! (coordinated omission is measured, not assumed away). *Service time* runs from the
//! moment the client actually started it. In closed loop the two are the same.

pub mod clock;
pub mod outcome;
pub mod run;
pub mod schedule;
pub mod stats;
mod timer;

pub use outcome::{ErrorClass, QueryClass, TxnDone, TxnError};
pub use run::{
    blocking_io, join_netns, run, with_blocking_io, ConnectionTally, EachInterval, IntervalReport, Observer, RunConfig,
    RunError, RunOutcome, StopReason, StopSignal, TxnEnd, TxnLog, BLOCKING_SLICE,
};
pub use schedule::Arrival;
pub use stats::{OpTable, StatementLog, StatementNames, Stats, TxnStats};

use std::future::Future;

/// A benchmark definition shared by every client thread.
///
/// `connect` runs on the client thread that will own the worker, so the worker (and
/// the futures it returns) need not be `Send`.
pub trait Workload: Send + Sync + 'static {
    /// One connection's state: session, prepared statements, random generators.
    type Worker: Worker + 'static;

    /// Names of transaction types and statement kinds; indices are used on the hot path.
    fn ops(&self) -> OpTable;

    /// Opens connection number `worker` (0-based, unique within the run).
    fn connect(&self, worker: usize) -> impl Future<Output = Result<Self::Worker, TxnError>>;

    /// Statement kinds named during the run, after [`OpTable::statements`], for workloads
    /// that learn their statements as they send them. None (the default): all are in `ops`.
    fn statement_names(&self) -> Option<std::sync::Arc<StatementNames>> {
        None
    }
}

/// One connection executing transactions, one at a time.
pub trait Worker {
    /// Executes one transaction (one sysbench "event"). Statements it sends are logged
    /// into `log`. On an error the worker leaves its session clean (it rolls back an
    /// open transaction) before returning, so the engine may retry.
    fn execute(&mut self, log: &mut StatementLog) -> impl Future<Output = Result<TxnDone, TxnError>>;

    /// Re-establishes the session after [`ErrorClass::ConnectionLost`], including any
    /// prepared statements.
    fn reconnect(&mut self) -> impl Future<Output = Result<(), TxnError>>;

    /// How long to wait before the next transaction: a terminal's think time after the last
    /// one and keying time before the next (TPC-C clause 5.2.5). The wait is not part of
    /// the next transaction's response time. The default is none.
    fn pause(&mut self) -> Option<std::time::Duration> {
        None
    }

    /// The transaction type of the transaction under way (a workload that chooses it before
    /// the transaction begins, as pgbench chooses a script), for a transaction that fails:
    /// its failure and retries are then counted under it, and its log line names it. The
    /// default, `None`: a failure is counted for the run only.
    fn kind(&self) -> Option<u16> {
        None
    }

    /// True when this worker has finished its work and runs no more transactions (a script
    /// whose `event` asked to stop); the run ends when every worker has. The default: never.
    fn finished(&self) -> bool {
        false
    }

    /// Runs once when the worker stops taking transactions within the run's time (a
    /// script's `thread_done`). Not called for a worker still busy when the grace period
    /// ends. The default does nothing.
    fn finish(&mut self) -> impl Future<Output = ()> {
        async {}
    }
}
