//! dbperf-run: the one measured-run path under every measuring command, and the flags every
//! measuring command shares.
//!
//! | file | owns |
//! |---|---|
//! | [`args`] | [`args::RunArgs`]: time, warmup, rate, arrivals, report interval, client implementation, client threads and I/O, shutdown grace, results dir, telemetry, flattened into every measuring command (each keeps its own spellings through [`args::RunFlags`]); the one function that turns them into the engine's [`dbperf_engine::RunConfig`], and their record in the manifest |
//! | [`measured`] | [`measured::MeasuredRun`], what a workload says of its run, and [`measured::measured_run`], the one path: server facts → engine config → options record → placement → settle, run directory, banner, measure → conclude, exit code |
//! | [`open`] | [`open::OpenRun`]: the run directory, the manifest and the catalog row of every run |
//! | [`place`] | where the client stands: its path to the server (socket, loopback, another host, a namespace of its own), and its shard of a run on several clients (`--shard`, `--start-at`) |
//! | [`network`] | `--client-netns`: the namespace, veth pair, shaping and forwarding, removed after the run and after killed runs |
//! | [`client`] | `--client-impl` (which session, checked against the target's family) and `--client-io` (blocking threads or event loops) |
//! | [`settle`] | `--settle`: waiting before the measurement for the flushing an earlier load left (InnoDB checkpoint age, dirty pages; PostgreSQL `CHECKPOINT`) |
//! | [`steady`] | `--warmup-steady`: the unmeasured run before the warmup until the workload is past its start-up transient (checkpoint age's first cycle, throughput's trend), and the rule that says so |
//! | [`record`] | what the engine measured, as run-directory files while the run goes: `intervals.jsonl`, `intervals.hlog`, live lines, `summary.json` |

pub mod args;
pub mod client;
pub mod measured;
pub mod network;
pub mod open;
pub mod place;
pub mod record;
pub mod settle;
pub mod steady;

pub use args::{Placement, RunArgs, RunFlags, RunShape};
pub use measured::{measured_run, Description, Drive, EngineFlags, MeasuredRun, Measurer, OwnOutcome, Shared};
