//! Telemetry: what the OS and the server did during each interval of a run, and the analysis
//! that explains stalls with it ([`analyze`]). [`os`] samples `/proc`.

pub mod analyze;
pub mod os;
