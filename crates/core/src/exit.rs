//! The exit codes of every dbperf command, in one table (`dbperf --help` prints it too).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | an error before or while running (message on stderr) |
//! | 2 | bad arguments |
//! | 3 | a run stopped on a fatal server error (summary written) ([`FATAL_SERVER_ERROR`]) |
//! | 4 | `tpcc check` (or `tpcc run --check`): a consistency condition failed; `tpch power --queries-dir`: a query text of its own answered otherwise than the standard text (run kept) ([`CHECK_FAILED`]) |
//! | 5 | a run's results are incomplete: some could not be written (a full disk: the warnings name each file and the bytes lost), or the server was unreachable at some moment of the measured phase (`server_unreachable_s` says for how long); the report was printed and the summary written where the disk allowed; `dbperf merge` left a shard out (missing or failed: the merged run covers the others, and says which) ([`RESULTS_INCOMPLETE`]) |
//! | 6 | a run stopped because part of dbperf crashed (a panic: a bug to report; summary written with the intervals finished before it) ([`CRASHED`]) |
//! | 130 | a run was interrupted (summary written) ([`INTERRUPTED`]) |

/// A run stopped on a fatal server error; its summary was written.
pub const FATAL_SERVER_ERROR: u8 = 3;
/// `tpcc check` (or `tpcc run --check`): a consistency condition failed; `tpch power
/// --queries-dir`: a hinted query answered otherwise than the standard text.
pub const CHECK_FAILED: u8 = 4;
/// A run measured and printed its report, but its results are incomplete: a file could not be
/// written whole (a full disk), the server was lost during the measured phase, or a merge left
/// a shard out. Before "interrupted" (130), after "fatal server error" (3).
pub const RESULTS_INCOMPLETE: u8 = 5;
/// A run stopped because part of dbperf crashed (a panic).
pub const CRASHED: u8 = 6;
/// A run was interrupted (Ctrl-C, SIGTERM); what finished is kept.
pub const INTERRUPTED: u8 = 130;
