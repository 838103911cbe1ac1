//! The run layer, below the CLI: what every measuring command shares once its arguments are
//! validated.
//!
//! | file | owns |
//! |---|---|
//! | [`args`] | [`args::RunArgs`]: time, warmup, rate, report interval, client I/O, results dir, telemetry, flattened into every measuring command (each keeps its own spellings through [`args::RunFlags`]); the one function that turns them into the engine's [`dbperf_engine::RunConfig`] |
//! | [`session`] | [`session::RunSession`]: the run directory, the manifest and the catalog row of every workload (TPC-H power and throughput too); the engine run ([`session::measure`]), Ctrl-C, and the exit code ([`session::finish`]) |
//! | [`place`] | where the client stands: its path to the server (socket, loopback, another host, a namespace of its own), and its shard of a run on several clients (`--shard`, `--start-at`) |
//! | [`network`] | `--client-netns`: the namespace, veth pair, shaping and forwarding, removed after the run and after killed runs |
//! | [`client`] | `--client-impl` (which session, checked against the target's family) and `--client-io` (blocking threads or event loops) |
//! | [`settle`] | `--settle`: waiting before the measurement for the flushing an earlier load left (InnoDB checkpoint age, dirty pages; PostgreSQL `CHECKPOINT`) |
//! | [`record`] | what the engine measured, as run-directory files while the run goes: `intervals.jsonl`, `intervals.hlog`, live lines, `summary.json` |
//!
//! A workload's final report text comes from the workload (`workloads/<name>/report.rs`);
//! the run layer prints what it is given and ends with the exit code.

pub mod args;
pub mod client;
pub mod network;
pub mod place;
pub mod record;
pub mod session;
pub mod settle;

pub use args::{Placement, RunArgs, RunFlags, RunShape};
pub use session::{RunSession, SessionSpec};

/// Exit code of a run that measured, printed its report, and could not write all of its
/// results (a full disk), or whose server was still unreachable at the end: before
/// "interrupted" (130), after "fatal server error" (3).
pub const EXIT_RESULTS_INCOMPLETE: u8 = 5;
/// Exit code of a run that stopped because part of dbperf crashed (a panic).
pub const EXIT_CRASHED: u8 = 6;
