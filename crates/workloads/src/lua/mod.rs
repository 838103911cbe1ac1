//! Users' sysbench Lua scripts, run unchanged: `dbperf lua SCRIPT.lua [prepare|run|cleanup|
//! prewarm|help|COMMAND]`.
//!
//! sysbench 1.0 runs a script in one LuaJIT state per thread, and so does dbperf: each engine
//! worker owns a state ([`worker`]), whose `thread_init` opens the script's connections, whose
//! `event` is one transaction and whose `thread_done` runs at the end. The script sees
//! sysbench's API ([`api`] in Rust, `prelude.lua` in Lua): `sysbench.opt` from the command line
//! and the script's own options ([`options`]), `sysbench.rand.*`, `sysbench.sql.*` with
//! connections, prepared statements and result sets, `sysbench.hooks`, and LuaJIT's `ffi`.
//! What dbperf adds is the run around it: open or closed loop with latency from the intended
//! start, HDR latency per transaction and per statement (named from the SQL text), error
//! classes and retries, telemetry, the run directory and the catalog.
//! [`commands`] runs the script's commands and the main state of `run` (init, report hooks, done);
//! [`report`] formats what sysbench prints around a run (its options block, its default reports);
//! [`checkpoints`] prints `--report-checkpoints`' reports as the run goes.
//! [`fast`] is the hot path the prelude calls through LuaJIT's ffi (parameters, random numbers,
//! statements on blocking-I/O threads), so a script's loops compile as they do under sysbench.
//! [`suspend`] is how a state on an event-loop thread waits for the server: the coroutine
//! yields, dbperf does the pending work and resumes it.

pub mod api;
pub mod checkpoints;
pub mod commands;
pub mod fast;
pub mod options;
pub mod report;
pub mod suspend;
pub mod worker;

/// The sysbench release whose Lua API, command line and output dbperf follows
/// (`sysbench.version`).
pub const SYSBENCH_VERSION: &str = "1.0.20";

/// sysbench 1.0's deprecated aliases, in the order it checks them once the command line is
/// read: the alias, today's option, and the alias's default, at or below which it is not read.
/// sysbench keeps them as options of their own, so `sysbench.opt` and a 0.5 script's globals
/// hold them (`num_threads` is 1 unless `--num-threads` is given, whatever `--threads`).
pub const DEPRECATED_ALIASES: [(&str, &str, f64); 4] = [
    ("num-threads", "threads", 1.0),
    ("max-requests", "events", 0.0),
    ("max-time", "time", 0.0),
    ("tx-rate", "rate", 0.0),
];

/// The header sysbench prints first at `--verbosity` 3 and more (its version), said as what it
/// is here: sysbench's API, run by dbperf.
pub fn header() -> String {
    format!(
        "sysbench {SYSBENCH_VERSION} Lua API, run by dbperf {}",
        env!("CARGO_PKG_VERSION")
    )
}

/// How statements are named in the per-statement latencies (`--statement-names`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// Verb and table: `SELECT sbtest1`, `UPDATE warehouse1`, `BEGIN`.
    Table,
    /// The statement's text with its values replaced by `?` (cut at 80 characters).
    Shape,
}

impl Naming {
    /// Parses `--statement-names`.
    pub fn parse(s: &str) -> Result<Naming, String> {
        match s {
            "table" => Ok(Naming::Table),
            "shape" => Ok(Naming::Shape),
            other => Err(format!(
                "--statement-names {other:?}: use table (verb and table: SELECT sbtest1) or shape (the SQL with values as ?)"
            )),
        }
    }
}

/// Counters a script bumps itself through LuaJIT's ffi (`ffi.C.sb_counter_inc(tid, type)`, as
/// sysbench-tpcc does), indexed like sysbench's `sb_counter_type`; shown after the run.
pub static SCRIPT_COUNTERS: [std::sync::atomic::AtomicU64; 6] = [const { std::sync::atomic::AtomicU64::new(0) }; 6];

/// sysbench's `sb_counter_inc`, callable from scripts through `ffi.C` (the binary exports it).
#[no_mangle]
pub extern "C" fn sb_counter_inc(_thread: std::ffi::c_int, counter: std::ffi::c_int) {
    if let Some(c) = usize::try_from(counter).ok().and_then(|i| SCRIPT_COUNTERS.get(i)) {
        c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}
