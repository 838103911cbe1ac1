//! dbperf: a database performance lab in one tool. This crate is the binary's command line
//! ([`cli`]: the command tree and the dispatch); everything it runs lives in the layered crates
//! below it, re-exported here under their short names so that the integration tests (and anyone
//! embedding dbperf) reach them through one path. `ARCHITECTURE.md` has the layer table.

pub mod cli;

pub use dbperf_commands as commands;
pub use dbperf_driver as driver;
pub use dbperf_engine as engine;
pub use dbperf_kube as kube;
pub use dbperf_lab as lab;
pub use dbperf_report as report;
pub use dbperf_results as results;
pub use dbperf_run as run;
pub use dbperf_server as server;
pub use dbperf_telemetry as telemetry;
pub use dbperf_workloads as workloads;
