//! `dbperf pgbench`'s own command-line texts, in pgbench 15's shape: `--help` (pgbench's
//! sections, listing the options dbperf has), `-V`, option-parse errors in pgbench's words
//! (`invalid value "three" for option -c/--clients`, an unknown option with pgbench's
//! `Try "pgbench --help"` hint; exit 1), and the zero values pgbench refuses (`--progress=0`,
//! `--rate=0`), which dbperf's shared run flags read as "none".

use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// pgbench's hint after a command-line error.
const TRY_HELP: &str = "pgbench: hint: Try \"pgbench --help\" for more information.";

/// Prints a clap error of `dbperf pgbench`'s command line as pgbench words it, and gives
/// pgbench's status (1); help and version requests are clap's own (status 0).
pub fn parse_error(e: &clap::Error, command: &clap::Command) -> ExitCode {
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        e.exit();
    }
    eprintln!("{}", error_text(e, command));
    eprintln!("{TRY_HELP}");
    ExitCode::FAILURE
}

/// The first line pgbench prints for the error `e` (without the hint).
fn error_text(e: &clap::Error, command: &clap::Command) -> String {
    let context = |k: ContextKind| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(s)) => s.first().cloned(),
        _ => None,
    };
    let arg = context(ContextKind::InvalidArg).unwrap_or_default();
    match e.kind() {
        ErrorKind::UnknownArgument => format!("pgbench: unrecognized option '{arg}'"),
        ErrorKind::InvalidValue if context(ContextKind::InvalidValue).unwrap_or_default().is_empty() => {
            // getopt's words for an option given without its value.
            match spelling(&arg, command).split_once('/') {
                Some((short, _)) => format!("pgbench: option requires an argument -- '{}'", &short[1..]),
                None => format!("pgbench: option '{}' requires an argument", spelling(&arg, command)),
            }
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let value = context(ContextKind::InvalidValue).unwrap_or_default();
            format!(
                "pgbench: error: invalid value \"{value}\" for option {}",
                spelling(&arg, command)
            )
        }
        _ => {
            let text = e.kind().as_str().map_or_else(
                || e.to_string().lines().next().unwrap_or_default().to_string(),
                str::to_string,
            );
            let text = text.strip_prefix("error: ").unwrap_or(&text).to_string();
            match arg.is_empty() {
                true => format!("pgbench: error: {text}"),
                false => format!("pgbench: error: {text}: {}", spelling(&arg, command)),
            }
        }
    }
}

/// `--clients <CLIENTS>` (clap's name of an argument) as pgbench names it: `-c/--clients`.
fn spelling(arg: &str, command: &clap::Command) -> String {
    let long = arg.split([' ', '=']).next().unwrap_or(arg);
    let found = command.get_arguments().find(|a| {
        a.get_long().is_some_and(|l| long == format!("--{l}")) || a.get_short().is_some_and(|s| long == format!("-{s}"))
    });
    match found {
        Some(a) => match (a.get_short(), a.get_long()) {
            (Some(s), Some(l)) => format!("-{s}/--{l}"),
            (None, Some(l)) => format!("--{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, None) => long.to_string(),
        },
        None => long.to_string(),
    }
}

/// True when `argv` gives the option `short`/`long` (a value given to it, attached or not),
/// so that a value equal to the flag's default can be told from none.
pub fn given(argv: &[String], short: char, long: &str) -> bool {
    let (long_eq, short_s) = (format!("--{long}="), format!("-{short}"));
    argv.iter()
        .take_while(|a| a.as_str() != "--")
        .any(|a| a == &format!("--{long}") || a.starts_with(&long_eq) || a.starts_with(&short_s))
}

/// The version line: pgbench's shape (`pgbench (PostgreSQL) 15`), saying what answers.
pub fn version() -> String {
    format!(
        "pgbench (PostgreSQL) 15 compatible: dbperf pgbench {}",
        env!("CARGO_PKG_VERSION")
    )
}

/// `--help`: pgbench's sections, with the options dbperf has.
pub const HELP: &str = "\
dbperf pgbench is a benchmarking tool for PostgreSQL, run as pgbench 15 runs.

Usage:
  dbperf pgbench [OPTION]... [DBNAME]
  dbperf pgbench init|tpcb-like|simple-update|select-only|cleanup [OPTION]... [DBNAME]

Initialization options:
  -i, --initialize         invokes initialization mode
  -I, --init-steps=[dtgGvpf]+ (default \"dtgvp\")
                           run selected initialization steps
  -F, --fillfactor=NUM     set fill factor
  -n, --no-vacuum          do not run VACUUM during initialization
  -q, --quiet              accepted (dbperf shows a progress bar on a terminal only)
  -s, --scale=NUM          scaling factor
  --foreign-keys           create foreign key constraints between tables
  --index-tablespace=TABLESPACE
                           create indexes in the specified tablespace
  --partition-method=(range|hash)
                           partition pgbench_accounts with this method (default: range)
  --partitions=NUM         partition pgbench_accounts into NUM parts (default: 0)
  --tablespace=TABLESPACE  create tables in the specified tablespace
  --unlogged-tables        create tables as unlogged tables

Options to select what to run:
  -b, --builtin=NAME[@W]   add builtin script NAME weighted at W (default: 1)
                           (use \"-b list\" to list available scripts)
  -f, --file=FILENAME[@W]  add script FILENAME weighted at W (default: 1)
  -N, --skip-some-updates  skip updates of pgbench_tellers and pgbench_branches
                           (same as \"-b simple-update\")
  -S, --select-only        perform SELECT-only transactions
                           (same as \"-b select-only\")

Benchmarking options:
  -c, --client=NUM         number of concurrent database clients (default: 1)
  -C, --connect            establish new connection for each transaction
  -D, --define=VARNAME=VALUE
                           define variable for use by custom script
  -j, --jobs=NUM           number of threads (default: 1)
  -l, --log                write transaction times to log file
  -L, --latency-limit=NUM  count transactions lasting more than NUM ms as late
  -M, --protocol=simple|extended|prepared
                           protocol for submitting queries (default: simple)
  -n, --no-vacuum          do not run VACUUM before tests
  -P, --progress=NUM       show progress report every NUM seconds
  -r, --report-per-command report latencies per command
  -R, --rate=NUM           target rate in transactions per second
  -s, --scale=NUM          report this scale factor in output
  -t, --transactions=NUM   number of transactions each client runs (default: 10)
  -T, --time=NUM           duration of benchmark test in seconds
  -v, --vacuum-all         vacuum all four standard tables before tests
  --aggregate-interval=NUM aggregate data over NUM seconds
  --failures-detailed      report the failures grouped by basic types
  --log-prefix=PREFIX      prefix for transaction time log file
                           (default: \"pgbench_log\")
  --max-tries=NUM          max number of tries to run transaction (default: 1)
  --random-seed=SEED       set random seed (\"time\", \"rand\", integer)
  --sampling-rate=NUM      fraction of transactions to log (e.g., 0.01 for 1%)
  --show-script=NAME       show builtin script code, then exit
  --verbose-errors         print messages of all errors

Common options:
  --debug                  print debugging output
  -h, --host=HOSTNAME      database server host or socket directory
  -p, --port=PORT          database server port number
  -U, --username=USERNAME  connect as specified database user
  -d, --dbname=DBNAME      the database (the same as DBNAME)
  -V, --version            output version information, then exit
  -?, --help               show this help, then exit

dbperf's own options (details: dbperf help pgbench):
  --target=URL             where to connect: postgres://USER@HOST:PORT/DB or sandbox:NAME
  --client-impl=IMPL       wire (default) or tokio-postgres
  --client-io=HOW          auto, blocking or async
  --warmup-time=SEC        run before measuring
  --results-dir=DIR        where the run's record is written
  --no-telemetry           collect no server telemetry
  --pgsql-ignore-errors=SQLSTATES
                           errors retried under --max-tries (default: 40P01,40001)
  --force                  cleanup: also drop pgbench tables dbperf did not create
  not supported: --progress-timestamp with -P, \\shell and \\setshell

Report bugs to the dbperf project (see its README).
";

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Args as _;

    fn command() -> clap::Command {
        crate::pgbench::PgbenchArgs::augment_args(clap::Command::new("pgbench").disable_version_flag(true))
    }

    fn err(argv: &[&str]) -> String {
        let c = command();
        let e = c
            .clone()
            .try_get_matches_from(std::iter::once("pgbench").chain(argv.iter().copied()))
            .unwrap_err();
        error_text(&e, &c)
    }

    /// pgbench 15's words (run against /usr/bin/pgbench: `pgbench -c three` and the others
    /// of 002_pgbench_no_server.pl exit 1 with these lines).
    #[test]
    fn parse_errors_are_worded_as_pgbenchs() {
        assert_eq!(
            err(&["-c", "three"]),
            "pgbench: error: invalid value \"three\" for option -c/--clients"
        );
        assert!(err(&["-j", "eleven"]).ends_with("invalid value \"eleven\" for option -j/--jobs"));
        assert!(err(&["-i", "-s", "two"]).ends_with("invalid value \"two\" for option -s/--scale"));
        assert!(err(&["-t", "zil"]).ends_with("invalid value \"zil\" for option -t/--transactions"));
        assert!(err(&["-T", "ten"]).ends_with("invalid value \"ten\" for option -T/--time"));
        assert_eq!(err(&["--bad-option"]), "pgbench: unrecognized option '--bad-option'");
        assert_eq!(err(&["-h"]), "pgbench: option requires an argument -- 'h'");
    }

    #[test]
    fn zero_values_are_told_from_none() {
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(given(&argv(&["pgbench", "--rate=0.0"]), 'R', "rate"));
        assert!(given(&argv(&["pgbench", "-R", "0"]), 'R', "rate"));
        assert!(given(&argv(&["pgbench", "--progress", "0"]), 'P', "progress"));
        assert!(!given(&argv(&["pgbench", "--progress-timestamp"]), 'P', "progress"));
        assert!(!given(&argv(&["pgbench", "--random-seed=1"]), 'R', "rate"));
    }

    #[test]
    fn help_and_version_have_pgbenchs_shape() {
        for s in [
            "benchmarking tool for PostgreSQL",
            "Usage",
            "Initialization options:",
            "Common options:",
            "Report bugs to",
        ] {
            assert!(HELP.contains(s), "{s}");
        }
        assert!(version().starts_with("pgbench (PostgreSQL) "));
    }
}
