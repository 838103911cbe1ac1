//! dbperf: a database performance lab in one tool.
//!
//! The binary (`main.rs`) only parses arguments and calls into these modules:
//!
//! | module | owns |
//! |---|---|
//! | [`bounds`] | the allowed range of every duration and count (flags, experiment files), the duration parser |
//! | [`cli`] | argument structs (sysbench-compatible spellings) and their validation into plans |
//! | [`cpus`] | CPU lists (`0-3,6`) and pinning processes to them |
//! | [`driver`] | connections, prepared statements, server error → [`dbperf_engine::ErrorClass`] |
//! | [`workloads`] | benchmark definitions: schema, loaders, transaction mixes |
//! | [`lab`] | experiments: many servers x variants x workloads x users, planned and run |
//! | [`server`] | sandboxed database servers under `$DBPERF_HOME` |
//! | [`run`] | the run layer under every workload: shared run flags → engine config, run directory + manifest + catalog row, Ctrl-C, exit codes |
//! | [`results`] | the run directory: manifest, interval logs, `summary.json` |
//! | [`report`] | what a person reads: live interval lines and the final summary |
//! | [`telemetry`] | OS and server counters per interval; stall detection and attribution (`dbperf analyze`) |

pub mod bounds;
pub mod cli;
pub mod cpus;
pub mod driver;
pub mod lab;
pub mod report;
pub mod results;
pub mod run;
pub mod server;
pub mod telemetry;
pub mod workloads;
