//! The command line: raw arguments ([`args`]), their validation into plans and the
//! commands that carry them out. Exit codes:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done |
//! | 1 | an error before or while running (message on stderr) |
//! | 2 | bad arguments |
//! | 3 | a run stopped on a fatal server error (summary written) |
//! | 4 | `tpcc check` (or `tpcc run --check`): a consistency condition failed |
//! | 5 | a run's results are incomplete: some could not be written (a full disk: the warnings name each file and the bytes lost), or the server was still unreachable when the run ended (`server_unreachable_s` says for how long); the report was printed and the summary written where the disk allowed ([`EXIT_RESULTS_INCOMPLETE`]); `dbperf merge` left a shard out (missing or failed: the merged run covers the others, and says which) |
//! | 6 | a run stopped because part of dbperf crashed (a panic: a bug to report; summary written with the intervals finished before it) ([`EXIT_CRASHED`]) |
//! | 130 | a run was interrupted (summary written) |

pub mod analyze;
pub mod args;
pub mod compare;
pub mod kube;
pub mod kube_check;
pub mod kube_manifest;
pub mod lab;
pub mod linkbench;
pub mod lua;
pub mod merge;
pub mod pgbench;
pub mod report;
pub mod results;
pub mod server;
pub mod sysbench;
pub mod tpcc;
pub mod tpch;
pub mod tpch_run;
pub mod tpch_throughput;

use std::process::ExitCode;

use clap::Parser;

pub use crate::run::{EXIT_CRASHED, EXIT_RESULTS_INCOMPLETE};

use args::{normalize, Cli, Command};

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    // A Lua script's own options are known only once the script is loaded: set them aside.
    let (clap_argv, script_opts) = match argv.get(1).map(String::as_str) {
        Some("lua") => lua::split_argv(&argv),
        _ => (argv.clone(), Vec::new()),
    };
    let cli = match Cli::try_parse_from(normalize(clap_argv)) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Sysbench(a) => sysbench::run(*a, &argv),
        Command::Tpcc(a) => tpcc::run(*a, &argv),
        Command::Server(a) => server::run(a).map(|()| ExitCode::SUCCESS),
        Command::Lab(a) => lab::run(a),
        Command::Compare(a) => compare::run(*a),
        Command::Results(a) => results::run(a).map(|()| ExitCode::SUCCESS),
        Command::Analyze(a) => analyze::run(a),
        Command::Report(a) => report::run(a),
        Command::Tpch(a) => tpch::run(*a, &argv),
        Command::Pgbench(a) => pgbench::run(*a, &argv),
        Command::Linkbench(a) => linkbench::run(*a, &argv),
        Command::Lua(a) => lua::run(*a, script_opts, &argv),
        Command::Kube(a) => kube::run(a, &argv),
        Command::Merge(a) => merge::run(a, &argv),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
