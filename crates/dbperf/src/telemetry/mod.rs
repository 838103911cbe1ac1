//! Telemetry: what the OS and the server did during each interval of a run. [`os`] samples
//! `/proc`.

pub mod os;
