//! Telemetry: what the server is doing while a benchmark runs, sampled every interval.

pub mod server;
