//! Telemetry: what the OS, the server and dbperf itself did during each second of a run, on
//! the run's own clock, and the analysis that explains stalls with it.
//!
//! | file | owns |
//! |---|---|
//! | `os.rs` | `/proc`: CPU per core, context switches, memory, iostat-style disks, network |
//! | `server.rs` | MariaDB/MySQL, version-aware: checkpoint age, dirty pages, flushing, counters, top waits; the [`server::ServerSample`] row every flavor fills |
//! | `pg.rs` | PostgreSQL 14–18, version-aware: checkpoints (requested/timed), checkpoint distance, WAL, pg_stat_io, temp files, vacuum, sampled wait events |
//! | `sampler.rs` | the run's telemetry thread: `telemetry.jsonl` and the live-line figures |
//! | `pressure.rs` | `telemetry.jsonl` read back; run-wide pressure (checkpoint, dirty pages, top wait, client) |
//! | `analyze.rs` | `dbperf analyze`: stalls, their causes, stability |

pub mod analyze;
pub mod os;
pub mod pg;
pub mod pressure;
pub mod sampler;
pub mod server;
