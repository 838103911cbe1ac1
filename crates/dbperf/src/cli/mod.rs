//! The command line: the command tree ([`args`]) and the dispatch of each command to the crate
//! that carries it out. The measuring commands are [`dbperf_commands`]'s, `kube` is
//! [`dbperf_kube`]'s; the files here hold the flags of the others and print what comes back.
//! Exit codes: [`dbperf_core::exit`].

pub mod analyze;
pub mod args;
pub mod compare;
pub mod host;
pub mod lab;
pub mod merge;
pub mod remote;
pub mod report;
pub mod results;
pub mod server;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use dbperf_commands::args::normalize;
use dbperf_commands::{linkbench, lua, pgbench, sysbench, tpcc, tpch};

/// Parses the process arguments and runs the command.
pub fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    // A Lua script's own options are known only once the script is loaded: set them aside.
    if argv.get(1).map(String::as_str) == Some("lua") {
        // sysbench's --help and --version, before anything else is read.
        if let Some(code) = dbperf_commands::lua_help::early(&argv) {
            return code;
        }
    }
    let (clap_argv, script_opts) = match argv.get(1).map(String::as_str) {
        Some("lua") => lua::split_argv(&argv),
        _ => (argv.clone(), Vec::new()),
    };
    let cli = match Cli::try_parse_from(normalize(clap_argv)) {
        Ok(c) => c,
        // pgbench's words and status for its command line's errors.
        Err(e) if argv.get(1).map(String::as_str) == Some("pgbench") => {
            use clap::CommandFactory as _;
            let cmd = Cli::command();
            return match cmd.find_subcommand("pgbench") {
                Some(sub) => dbperf_commands::pgbench_cli::parse_error(&e, sub),
                None => e.exit(),
            };
        }
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Sysbench(a) => sysbench::run(*a, &argv),
        Command::Tpcc(a) => tpcc::run(*a, &argv),
        Command::Server(a) => server::run(a).map(|()| ExitCode::SUCCESS),
        Command::Remote(a) => remote::run(a).map(|()| ExitCode::SUCCESS),
        Command::Host(a) => host::run(&a).map(|()| ExitCode::SUCCESS),
        Command::Lab(a) => lab::run(a),
        Command::Compare(a) => compare::run(*a),
        Command::Results(a) => results::run(a).map(|()| ExitCode::SUCCESS),
        Command::Analyze(a) => analyze::run(a),
        Command::Report(a) => report::run(a),
        Command::Tpch(a) => tpch::run(*a, &argv),
        Command::Pgbench(a) => pgbench::run(*a, &argv),
        Command::Linkbench(a) => linkbench::run(*a, &argv),
        Command::Lua(a) => lua::run(*a, script_opts, &argv),
        Command::Kube(a) => dbperf_kube::run(a, &argv),
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
