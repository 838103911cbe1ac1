//! `dbperf lua --help` and `--version` as sysbench's are shaped (scripts and tools read them):
//! sysbench's usage line, command list, section names, option spellings and column layout,
//! with dbperf's own descriptions of the options `dbperf lua` takes. dbperf's complete option
//! list (clap's) stays at `dbperf lua -h` and `dbperf help lua`.

use std::fmt::Write;
use std::process::ExitCode;

use dbperf_workloads::lua::SYSBENCH_VERSION;

/// One section: its heading (empty: none) and its options with their descriptions.
type Section = (&'static str, &'static [(&'static str, &'static str)]);

const SECTIONS: &[Section] = &[
    (
        "General options:",
        &[
            ("--threads=N", "threads (each a connection and a Lua state) [1]"),
            ("--events=N", "stop after this many events, 0 for no limit [0]"),
            ("--time=N", "stop after this many seconds, 0 for no limit [10]"),
            (
                "--forced-shutdown=STRING",
                "accepted; dbperf ends within --shutdown-grace [off]",
            ),
            (
                "--rate=N",
                "events per second over all threads (open loop), 0 for closed loop [0]",
            ),
            ("--report-interval=N", "print a line every N seconds, 0 for none [0]"),
            (
                "--report-checkpoints=[LIST,...]",
                "seconds from the start at which the full report is printed for the time since the last one, whose counts then start again []",
            ),
            ("--help[=on|off]", "print this help and exit [off]"),
            (
                "--version[=on|off]",
                "print the version of sysbench's API and exit [off]",
            ),
            ("--tx-rate=N", "old name of --rate [0]"),
            ("--max-requests=N", "old name of --events [0]"),
            ("--max-time=N", "old name of --time [0]"),
            ("--num-threads=N", "old name of --threads [1]"),
        ],
    ),
    (
        "Pseudo-Random Numbers Generator options:",
        &[
            (
                "--rand-type=STRING",
                "sysbench.rand.default's distribution {uniform,gaussian,special,pareto,zipfian} [special]",
            ),
            ("--rand-spec-iter=N", "special: iterations per number [12]"),
            ("--rand-spec-pct=N", "special: percent of the range that is special [1]"),
            ("--rand-spec-res=N", "special: percent of numbers drawn from it [75]"),
            (
                "--rand-seed=N",
                "seed of the generators, 0 to take one from the clock [0]",
            ),
            ("--rand-pareto-h=N", "pareto: its h [0.2]"),
            ("--rand-zipfian-exp=N", "zipfian: its exponent [0.8]"),
        ],
    ),
    (
        "Log options:",
        &[("--verbosity=N", "how much is printed, 0 (errors only) to 5 [3]")],
    ),
    (
        "",
        &[
            ("--percentile=N", "the latency percentile reported [95]"),
            (
                "--histogram[=on|off]",
                "print a latency histogram before the report [off]",
            ),
            (
                "--dbperf-report",
                "print dbperf's own report after sysbench's (report.txt has it always)",
            ),
        ],
    ),
    (
        "General database options:\n",
        &[
            ("--db-driver=STRING", "the driver, mysql or pgsql [mysql]"),
            (
                "--db-ps-mode=STRING",
                "server-side prepared statements {auto, disable} [auto]",
            ),
        ],
    ),
];

const DRIVERS: &[Section] = &[
    (
        "mysql options:",
        &[
            ("--mysql-host=[LIST,...]", "server host [localhost]"),
            ("--mysql-port=[LIST,...]", "server port [3306]"),
            ("--mysql-socket=[LIST,...]", "Unix socket"),
            ("--mysql-user=STRING", "user [sbtest]"),
            (
                "--mysql-password=STRING",
                "password (visible to other users: prefer DBPERF_TARGET) []",
            ),
            ("--mysql-db=STRING", "database [sbtest]"),
            (
                "--mysql-ignore-errors=[LIST,...]",
                "error numbers that restart the event, or \"all\" [1213,1020,1205]",
            ),
            (
                "--mysql-dry-run[=on|off]",
                "connect to nothing and answer every statement at once with no rows: the client's own cost [off]",
            ),
        ],
    ),
    (
        "pgsql options:",
        &[
            ("--pgsql-host=STRING", "server host [localhost]"),
            ("--pgsql-port=N", "server port [5432]"),
            ("--pgsql-user=STRING", "user [sbtest]"),
            (
                "--pgsql-password=STRING",
                "password (visible to other users: prefer DBPERF_TARGET) []",
            ),
            ("--pgsql-db=STRING", "database [sbtest]"),
        ],
    ),
];

/// A section: its heading, then its options in a column as wide as the longest plus one.
fn section(out: &mut String, (heading, options): &Section) {
    if !heading.is_empty() {
        let _ = writeln!(out, "{heading}");
    }
    let width = options.iter().map(|(o, _)| o.len()).max().unwrap_or(0);
    for (option, what) in options.iter() {
        let _ = writeln!(out, "  {option:<width$} {what}");
    }
    out.push('\n');
}

/// The help text.
pub fn help_text() -> String {
    let mut s = String::from(
        "Usage:\n  sysbench [options]... [testname] [command]\n\n\
         Commands implemented by most tests: prepare run cleanup help\n\n",
    );
    for sec in SECTIONS {
        section(&mut s, sec);
    }
    s.push_str("\nCompiled-in database drivers:\n  mysql - MySQL and MariaDB\n  pgsql - PostgreSQL\n\n");
    for sec in DRIVERS {
        section(&mut s, sec);
    }
    // No built-in tests: dbperf lua runs Lua scripts (the list is empty, as tools read it).
    s.push_str(
        "Compiled-in tests:\n\n\
         See 'sysbench <testname> help' for a list of options for each test.\n\n\
         This is dbperf lua: it runs Lua scripts (sysbench's built-in tests are not here); \
         `dbperf lua -h` lists all of its options.\n",
    );
    s
}

/// `--help` or `--version` among `dbperf lua`'s options (after `lua`, before `--`), carried
/// out as sysbench does: the exit code, or `None` when neither is given.
pub fn early(argv: &[String]) -> Option<ExitCode> {
    let after = argv.iter().position(|a| a == "lua").map_or(argv.len(), |i| i + 1);
    let opts = argv[after..].iter().take_while(|a| *a != "--");
    let on = |a: &str, name: &str| {
        a == name
            || a.strip_prefix(name)
                .and_then(|v| v.strip_prefix('='))
                .is_some_and(|v| v != "off")
    };
    for a in opts {
        if on(a, "--help") {
            print!("{}", help_text());
            return Some(ExitCode::SUCCESS);
        }
        if on(a, "--version") {
            println!("sysbench {SYSBENCH_VERSION}");
            return Some(ExitCode::SUCCESS);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_has_sysbenchs_shape() {
        let h = help_text();
        assert!(h.starts_with("Usage:\n  sysbench [options]... [testname] [command]\n\n"));
        assert!(h.contains("\nCommands implemented by most tests: prepare run cleanup help\n"));
        // Drivers as sysbench lists them (name third, split on spaces), each with its section.
        let drivers: Vec<&str> = h
            .split("Compiled-in database drivers:\n")
            .nth(1)
            .unwrap()
            .lines()
            .take_while(|l| !l.is_empty())
            .map(|l| l.split(' ').nth(2).unwrap())
            .collect();
        assert_eq!(drivers, ["mysql", "pgsql"]);
        assert!(h.contains("pgsql options:\n  --pgsql-host=STRING     server host [localhost]\n"));
        assert!(h.contains("  --db-driver=STRING  the driver"));
        // No built-in test is listed (tests.t reads the list).
        assert!(h.contains("Compiled-in tests:\n\n"));
    }

    #[test]
    fn help_and_version_are_found_among_the_options() {
        let argv = |a: &[&str]| -> Vec<String> { a.iter().map(|s| s.to_string()).collect() };
        assert!(early(&argv(&["dbperf", "lua", "--version"])).is_some());
        assert!(early(&argv(&["dbperf", "lua", "--help", "foo"])).is_some());
        assert!(early(&argv(&["dbperf", "lua", "--help=off", "t.lua"])).is_none());
        assert!(early(&argv(&["dbperf", "lua", "t.lua", "help"])).is_none());
        assert!(early(&argv(&["dbperf", "lua", "t.lua", "--", "--help"])).is_none());
    }
}
