//! Telemetry: the samplers of what the OS, the server and dbperf itself did during each second
//! of a run, on the run's own clock. The rows they write are types of
//! [`dbperf_results::telemetry`]; what is read into them (stalls, pressure, each run's
//! explanation) is in [`dbperf_report::analysis`].
//!
//! | file | owns |
//! |---|---|
//! | `os.rs` | `/proc`: CPU per core, context switches, memory, iostat-style disks, network |
//! | `server.rs` | MariaDB/MySQL, version-aware: checkpoint age, dirty pages, flushing, counters, top waits; the [`server::ServerSample`] row every product fills |
//! | `pg.rs` | PostgreSQL 14–18, version-aware: checkpoints (requested/timed), checkpoint distance, WAL, pg_stat_io, temp files, vacuum, sampled wait events |
//! | `remote.rs` | the database host's OS when it is not the client's: `dbperf host --stream` there, read through ssh |
//! | `sampler.rs` | the run's telemetry thread: `telemetry.jsonl` and the live-line figures |

pub mod os;
pub mod pg;
pub mod remote;
pub mod sampler;
pub mod server;
