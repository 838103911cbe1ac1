//! Telemetry: what the OS, the server and dbperf itself did during each second of a run, on
//! the run's own clock, and the analysis that explains stalls with it.
//!
//! | file | owns |
//! |---|---|
//! | `os.rs` | `/proc`: CPU per core, context switches, memory, iostat-style disks, network |
//! | `server.rs` | MariaDB/MySQL, version-aware: checkpoint age, dirty pages, flushing, counters, top waits |
//! | `sampler.rs` | the run's telemetry thread: `telemetry.jsonl` and the live-line figures |
//! | `pressure.rs` | `telemetry.jsonl` read back; run-wide pressure (checkpoint, dirty pages, top wait, client) |
//! | `analyze.rs` | `dbperf analyze`: stalls, their causes, stability |

pub mod analyze;
pub mod os;
pub mod pressure;
pub mod sampler;
pub mod server;
