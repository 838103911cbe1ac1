//! dbperf: a database performance lab in one tool.
//!
//! The binary (`main.rs`) only parses arguments and calls into these modules:
//!
//! | module | owns |
//! |---|---|
//! | [`cli`] | argument structs (sysbench-compatible spellings) and their validation into plans |
//! | [`driver`] | connections, prepared statements, server error → [`dbperf_engine::ErrorClass`] |
//! | [`workloads`] | benchmark definitions: schema, loaders, transaction mixes |
//! | [`lab`] | experiments: many servers x variants x workloads x users, planned and run |
//! | [`server`] | sandboxed database servers under `$DBPERF_HOME` |
//! | [`results`] | the run directory: manifest, interval logs, `summary.json` |
//! | [`report`] | what a person reads: live interval lines and the final summary |
//! | [`telemetry`] | what the server does while a run runs, sampled every interval |

pub mod cli;
pub mod driver;
pub mod lab;
pub mod report;
pub mod results;
pub mod server;
pub mod telemetry;
pub mod workloads;
