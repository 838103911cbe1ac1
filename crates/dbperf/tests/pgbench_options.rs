//! `dbperf pgbench` with pgbench 15's options (`-n -r -C -S -L --max-tries -l --sampling-rate
//! --log-prefix`, repeated options), run beside `/usr/bin/pgbench` on the same PostgreSQL: the
//! report lines PostgreSQL's `001_pgbench_with_server.pl` reads are the same (their numbers
//! where the run fixes them), and the `-l` files have pgbench's names and fields. Without
//! pgbench the comparisons are skipped with a notice.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{dbperf, run_ok};

#[path = "support/pg.rs"]
mod pg;
use pg::TempPg;

/// The report lines whose figures a run with these options fixes, as `name: value`.
fn fixed_lines(stdout: &str) -> Vec<String> {
    const FIXED: [&str; 12] = [
        "transaction type:",
        "scaling factor:",
        "query mode:",
        "number of clients:",
        "maximum number of tries:",
        "number of transactions per client:",
        "number of transactions actually processed:",
        "number of failed transactions:",
        "number of serialization failures:",
        "number of deadlock failures:",
        "number of transactions retried:",
        "total number of retries:",
    ];
    stdout
        .lines()
        .filter(|l| FIXED.iter().any(|f| l.starts_with(f)))
        .map(str::to_string)
        .collect()
}

/// Whether a report has a line starting with each of `starts` (the other report lines).
fn has_lines(stdout: &str, starts: &[&str]) -> bool {
    starts.iter().all(|s| stdout.lines().any(|l| l.starts_with(s)))
}

fn ours(pg: &TempPg, results: &Path, opts: &[&str]) -> Output {
    dbperf()
        .args(["pgbench", "--target", &pg.url(), "--no-telemetry", "--results-dir"])
        .arg(results)
        .args(opts)
        .output()
        .unwrap()
}

fn reference(pg: &TempPg, dir: &Path, opts: &[&str]) -> Output {
    Command::new("pgbench")
        .current_dir(dir)
        .args(["-h", "127.0.0.1", "-p", &pg.port().to_string(), "-U", "sb"])
        .args(opts)
        .arg("sbtest")
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `-l` files named `PREFIX.PID[.N]` in `dir`, with their lines.
fn logs(dir: &Path, prefix: &str) -> Vec<(String, Vec<String>)> {
    let mut found: Vec<(String, Vec<String>)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            let rest = name.strip_prefix(prefix)?.strip_prefix('.')?;
            let numbers = rest
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
            (numbers && rest.split('.').count() <= 2).then(|| {
                let lines = std::fs::read_to_string(dir.join(&name)).unwrap();
                (name, lines.lines().map(str::to_string).collect())
            })
        })
        .collect();
    found.sort();
    found
}

/// A `-l` line as 001_pgbench_with_server.pl's `^[01] \d{1,2} \d+ \d \d+ \d+$`.
fn pgbench_log_line(l: &str, clients: &[&str]) -> bool {
    let f: Vec<&str> = l.split(' ').collect();
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    f.len() == 6
        && clients.contains(&f[0])
        && digits(f[1])
        && f[1].len() <= 2
        && digits(f[2])
        && f[3].len() == 1
        && digits(f[3])
        && digits(f[4])
        && digits(f[5])
}

#[test]
fn options_and_report_lines_match_pgbench() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    run_ok(dbperf().args(["pgbench", "init", "--scale", "1", "--target", &pg.url()]));
    let results = tempfile::tempdir().unwrap();
    let with_reference = common::present_or_skip(
        common::program_available("pgbench", "postgresql-15"),
        "pgbench (postgresql-15) is not installed: dbperf's lines are checked against pgbench's \
         recorded words only",
    );
    let work = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        // A repeated option takes its last value; -n; select-only.
        (
            &["-n", "-t", "5", "-t", "10", "-c", "2", "-S"],
            &["number of threads: 1", "latency average = "],
        ),
        // 001's throttling case, per-command latencies.
        (
            &[
                "-t",
                "100",
                "-S",
                "--rate=100000",
                "--latency-limit=1000000",
                "-c",
                "2",
                "-n",
                "-r",
            ],
            &[
                "number of transactions above the 1000000.0 ms latency limit: 0/200 (0.000%)",
                "latency stddev = ",
            ],
        ),
        // A new connection per transaction.
        (&["-n", "-C", "-t", "3", "-b", "simple-update"], &["tps = "]),
        // Tries: the retried lines appear past --max-tries 1.
        (
            &["-n", "-t", "4", "-c", "2", "--max-tries", "3"],
            &["latency average = "],
        ),
    ];
    for (opts, also) in cases {
        let out = ours(&pg, results.path(), opts);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{opts:?}: {stdout}{}", text(&out.stderr));
        assert!(has_lines(&stdout, also), "{opts:?}: {stdout}");
        if with_reference {
            let r = reference(&pg, work.path(), opts);
            assert_eq!(r.status.code(), Some(0), "pgbench {opts:?}: {}", text(&r.stderr));
            let theirs = text(&r.stdout);
            assert_eq!(
                fixed_lines(&stdout),
                fixed_lines(&theirs),
                "{opts:?}\nours:\n{stdout}\npgbench:\n{theirs}"
            );
            assert!(has_lines(&theirs, also), "pgbench {opts:?}: {theirs}");
        }
    }

    // -l with --sampling-rate (001's "pgbench logs"): one file for one thread, 8..92 of the 100.
    let logdir = tempfile::tempdir().unwrap();
    let prefix = logdir.path().join("001_pgbench_log_2");
    let prefix_arg = format!("--log-prefix={}", prefix.display());
    let out = ours(
        &pg,
        results.path(),
        &[
            "-n",
            "-S",
            "-t",
            "50",
            "-c",
            "2",
            "--log",
            "--sampling-rate=0.5",
            &prefix_arg,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("processed: 100/100"));
    let files = logs(logdir.path(), "001_pgbench_log_2");
    assert_eq!(files.len(), 1, "{files:?}");
    let lines = &files[0].1;
    assert!((8..=92).contains(&lines.len()), "{} lines", lines.len());
    assert!(lines.iter().all(|l| pgbench_log_line(l, &["0", "1"])), "{lines:?}");
    // And every transaction without sampling (001's "pgbench logs contents").
    let prefix = logdir.path().join("001_pgbench_log_3");
    let prefix_arg = format!("--log-prefix={}", prefix.display());
    let out = ours(
        &pg,
        results.path(),
        &["-n", "-b", "select-only", "-t", "10", "-l", &prefix_arg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let files = logs(logdir.path(), "001_pgbench_log_3");
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(files[0].1.len(), 10);
    assert!(
        files[0].1.iter().all(|l| pgbench_log_line(l, &["0"])),
        "{:?}",
        files[0].1
    );
    let numbers: Vec<&str> = files[0].1.iter().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(
        numbers,
        ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"],
        "numbered from 1, as pgbench's"
    );
}

#[test]
fn option_errors_exit_1_as_pgbenchs() {
    // 002_pgbench_no_server.pl's cases that need no server: pgbench's words, exit code 1.
    let cases: &[(&[&str], &str)] = &[
        (&["-t", "1000", "-T", "1"], "specify either "),
        (&["--latency-limit=0.0"], "invalid latency limit"),
        (&["--max-tries", "-10"], "invalid number of maximum tries: \"-10\""),
        (
            &["--sampling-rate=0.01"],
            "log sampling (--sampling-rate) is allowed only when",
        ),
        (&["-l", "-T", "5", "--aggregate-interval=3"], "multiple"),
        (&["-b", "se@0", "-b", "si@0", "-b", "tpcb@0"], "weight must not be zero"),
    ];
    for (opts, words) in cases {
        let out = dbperf().arg("pgbench").args(*opts).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{opts:?}");
        assert!(out.stdout.is_empty(), "{opts:?}");
        assert!(text(&out.stderr).contains(words), "{opts:?}: {}", text(&out.stderr));
    }
    let out = dbperf().args(["pgbench", "-b", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = text(&out.stderr);
    for w in [
        "Available builtin scripts:",
        "tpcb-like",
        "simple-update",
        "select-only",
    ] {
        assert!(stderr.contains(w), "{stderr}");
    }
}

/// The command line's own errors, `--help` and `-V`, beside `/usr/bin/pgbench`: the same
/// status (1 for an error, 0 for help and version), nothing on stdout for an error, and on
/// the stream each case is read from, the words 002_pgbench_no_server.pl reads.
#[test]
fn command_line_errors_help_and_version_as_pgbenchs() {
    let with_reference = common::program_runs("pgbench");
    let cases: &[(&[&str], &str)] = &[
        (&["-c", "three"], "invalid value \"three\" for option -c/--clients"),
        (&["-j", "eleven"], "invalid value \"eleven\" for option -j/--jobs"),
        (&["-i", "-s", "two"], "invalid value \"two\" for option -s/--scale"),
        (&["-t", "zil"], "invalid value \"zil\" for option -t/--transactions"),
        (&["-T", "ten"], "invalid value \"ten\" for option -T/--time"),
        (
            &["-h", "home", "-U", "calvin", "--bad-option"],
            "Try \"pgbench --help\" for more information.",
        ),
        (&["--progress=0"], "-P/--progress must be in range"),
        (&["--rate=0.0"], "invalid rate limit"),
    ];
    for (opts, words) in cases {
        let mut runs = vec![("dbperf", dbperf().arg("pgbench").args(*opts).output().unwrap())];
        if with_reference {
            runs.push(("pgbench", Command::new("pgbench").args(*opts).output().unwrap()));
        }
        for (who, out) in runs {
            assert_eq!(out.status.code(), Some(1), "{who} {opts:?}: {}", text(&out.stderr));
            assert!(out.stdout.is_empty(), "{who} {opts:?}");
            assert!(
                text(&out.stderr).contains(words),
                "{who} {opts:?}: {}",
                text(&out.stderr)
            );
        }
    }
    let help: &[&str] = &[
        "benchmarking tool for PostgreSQL",
        "Usage",
        "Initialization options:",
        "Common options:",
        "Report bugs to",
    ];
    for (opts, words) in [(&["--help"][..], help), (&["-V"][..], &["pgbench (PostgreSQL) "][..])] {
        let mut runs = vec![("dbperf", dbperf().arg("pgbench").args(opts).output().unwrap())];
        if with_reference {
            runs.push(("pgbench", Command::new("pgbench").args(opts).output().unwrap()));
        }
        for (who, out) in runs {
            assert_eq!(out.status.code(), Some(0), "{who} {opts:?}");
            assert!(out.stderr.is_empty(), "{who} {opts:?}: {}", text(&out.stderr));
            let stdout = text(&out.stdout);
            assert!(words.iter().all(|w| stdout.contains(w)), "{who} {opts:?}: {stdout}");
        }
    }
}

/// The number after `prefix` on a report line (`number of transactions skipped: 37 (92.5%)`).
fn count_after(stdout: &str, prefix: &str) -> u64 {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{stdout}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

/// Every `-l` line of the files under `prefix`, split into fields.
fn log_fields(dir: &Path, prefix: &str) -> Vec<Vec<String>> {
    logs(dir, prefix)
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .map(|l| l.split(' ').map(str::to_string).collect())
        .collect()
}

/// A transaction that always ends in a serialization failure and transactions skipped under
/// `-R -L`: `summary.json` counts them as pgbench's report does (retried, failed, skipped), and
/// the `-l` lines (per transaction and per interval) have pgbench 15's fields for them.
#[test]
fn retried_failed_and_skipped_reach_the_summary_and_the_logs_as_pgbenchs() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    run_ok(dbperf().args(["pgbench", "init", "--scale", "1", "--target", &pg.url()]));
    let with_reference = common::present_or_skip(
        common::program_available("pgbench", "postgresql-15"),
        "pgbench (postgresql-15) is not installed: dbperf's counts are checked on their own",
    );
    let work = tempfile::tempdir().unwrap();
    let script = work.path().join("conflict.sql");
    std::fs::write(
        &script,
        "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$;\n",
    )
    .unwrap();
    let script = script.display().to_string();
    let summary_of = |results: &Path| common::read_json(&common::only_run_dir(results).join("summary.json"));

    // Each of the 2 transactions tries 3 times and fails: 2 retried, 4 retries, 2 failed.
    let results = tempfile::tempdir().unwrap();
    // The options of either tool's run, its log files named `name`.
    let failing = |name: &str| {
        let p = format!("--log-prefix={}", work.path().join(name).display());
        [
            "-n",
            "-t",
            "2",
            "-c",
            "1",
            "--max-tries",
            "3",
            "-f",
            &script,
            "-l",
            &p,
            "-r",
        ]
        .map(str::to_string)
    };
    let opts = failing("failing");
    let out = ours(&pg, results.path(), &opts.each_ref().map(String::as_str));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let s = summary_of(results.path());
    assert_eq!(
        (&s["retried"], &s["failed"], &s["retries"], &s["skipped"]),
        (&2.into(), &2.into(), &4.into(), &0.into()),
        "{s}"
    );
    assert_eq!(count_after(&stdout, "number of failed transactions: "), 2);
    assert_eq!(count_after(&stdout, "number of transactions retried: "), 2);
    // With no transaction done pgbench's report ends at its counts: no latency, no -r.
    assert!(!stdout.contains("latency average"), "{stdout}");
    assert_eq!(per_command_lines(&stdout), Vec::<String>::new(), "{stdout}");
    let mut shapes = vec![log_fields(work.path(), "failing")];
    if with_reference {
        let opts = failing("failing_pgbench");
        let r = reference(&pg, work.path(), &opts.each_ref().map(String::as_str));
        assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
        assert_eq!(fixed_lines(&text(&r.stdout)), fixed_lines(&stdout));
        assert_eq!(per_command_lines(&text(&r.stdout)), per_command_lines(&stdout));
        shapes.push(log_fields(work.path(), "failing_pgbench"));
    }
    for lines in shapes {
        // client, number, "failed", script, epoch s and us, retries: 2.
        let kept: Vec<Vec<&str>> = lines
            .iter()
            .map(|f| {
                vec![
                    f[0].as_str(),
                    f[1].as_str(),
                    f[2].as_str(),
                    f[3].as_str(),
                    f[6].as_str(),
                ]
            })
            .collect();
        assert_eq!(
            kept,
            [["0", "1", "failed", "0", "2"], ["0", "2", "failed", "0", "2"]],
            "{lines:?}"
        );
        assert!(lines.iter().all(|f| f.len() == 7), "{lines:?}");
    }

    // --failures-detailed: the failures by kind in the report, and in each failed line.
    let results = tempfile::tempdir().unwrap();
    let detailed = |name: &str| {
        let p = format!("--log-prefix={}", work.path().join(name).display());
        [
            "-n",
            "-t",
            "2",
            "--max-tries",
            "2",
            "--failures-detailed",
            "-f",
            &script,
            "-l",
            &p,
        ]
        .map(str::to_string)
    };
    let opts = detailed("detailed");
    let out = ours(&pg, results.path(), &opts.each_ref().map(String::as_str));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert_eq!(
        count_after(&stdout, "number of serialization failures: "),
        2,
        "{stdout}"
    );
    assert_eq!(count_after(&stdout, "number of deadlock failures: "), 0, "{stdout}");
    let mut shapes = vec![log_fields(work.path(), "detailed")];
    if with_reference {
        let opts = detailed("detailed_pgbench");
        let r = reference(&pg, work.path(), &opts.each_ref().map(String::as_str));
        assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
        assert_eq!(fixed_lines(&text(&r.stdout)), fixed_lines(&stdout));
        shapes.push(log_fields(work.path(), "detailed_pgbench"));
    }
    for lines in shapes {
        let latencies: Vec<&str> = lines.iter().map(|f| f[2].as_str()).collect();
        assert_eq!(latencies, ["serialization", "serialization"], "{lines:?}");
    }

    // Far later than a 0.01 ms limit at their turn: most transactions are skipped. Each has
    // its line, `skipped` with a lag of 0 (and 0 retries past --max-tries 1).
    let results = tempfile::tempdir().unwrap();
    let prefix = format!("--log-prefix={}", work.path().join("late").display());
    let late = [
        "-n",
        "-S",
        "-t",
        "20",
        "-c",
        "2",
        "-R",
        "100000",
        "-L",
        "0.01",
        "--max-tries",
        "2",
        "-l",
    ];
    let out = ours(&pg, results.path(), &[&late[..], &[prefix.as_str()]].concat());
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let skipped = count_after(&stdout, "number of transactions skipped: ");
    assert!(skipped > 0, "{stdout}");
    assert_eq!(summary_of(results.path())["skipped"], skipped, "{stdout}");
    let mut shapes = vec![(log_fields(work.path(), "late"), Some(skipped))];
    if with_reference {
        let prefix = format!("--log-prefix={}", work.path().join("late_pgbench").display());
        let r = reference(&pg, work.path(), &[&late[..], &[prefix.as_str()]].concat());
        assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
        shapes.push((log_fields(work.path(), "late_pgbench"), None));
    }
    for (lines, skipped) in shapes {
        assert_eq!(lines.len(), 40, "one line per transaction, skipped or not: {lines:?}");
        assert!(lines.iter().all(|f| f.len() == 8), "{lines:?}");
        let skips: Vec<&Vec<String>> = lines.iter().filter(|f| f[2] == "skipped").collect();
        assert!(
            !skips.is_empty() && skips.iter().all(|f| f[6] == "0" && f[7] == "0"),
            "{lines:?}"
        );
        if let Some(n) = skipped {
            assert_eq!(skips.len() as u64, n);
        }
    }

    // Per interval: pgbench 15 writes all 15 fields, the 11th the transactions skipped.
    let results = tempfile::tempdir().unwrap();
    let prefix = format!("--log-prefix={}", work.path().join("agg").display());
    let agg = [
        "-n",
        "-S",
        "-T",
        "2",
        "-c",
        "2",
        "-R",
        "20000",
        "-L",
        "0.01",
        "-l",
        "--aggregate-interval=1",
    ];
    let out = ours(&pg, results.path(), &[&agg[..], &[prefix.as_str()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let skipped = summary_of(results.path())["skipped"].as_u64().unwrap();
    let mut shapes = vec![(log_fields(work.path(), "agg"), Some(skipped))];
    if with_reference {
        let prefix = format!("--log-prefix={}", work.path().join("agg_pgbench").display());
        let r = reference(&pg, work.path(), &[&agg[..], &[prefix.as_str()]].concat());
        assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
        shapes.push((log_fields(work.path(), "agg_pgbench"), None));
    }
    for (lines, skipped) in shapes {
        assert!(!lines.is_empty() && lines.iter().all(|f| f.len() == 15), "{lines:?}");
        let in_lines: u64 = lines.iter().map(|f| f[10].parse::<u64>().unwrap()).sum();
        assert!(in_lines > 0, "{lines:?}");
        if let Some(n) = skipped {
            assert!(in_lines <= n, "{in_lines} skipped in the lines, {n} in the run");
        }
    }

    // An interval the run's end cuts short is not written: a run of a moment, no line.
    let short = |name: &str| {
        let p = format!("--log-prefix={}", work.path().join(name).display());
        ["-n", "-S", "-t", "5", "-l", "--aggregate-interval=60", &p].map(str::to_string)
    };
    let opts = short("short");
    let out = ours(&pg, results.path(), &opts.each_ref().map(String::as_str));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut found = vec![log_fields(work.path(), "short")];
    if with_reference {
        let opts = short("short_pgbench");
        let r = reference(&pg, work.path(), &opts.each_ref().map(String::as_str));
        assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
        found.push(log_fields(work.path(), "short_pgbench"));
    }
    for lines in found {
        assert!(lines.is_empty(), "{lines:?}");
    }
}

/// `-c 3 -j 2` gives the first thread clients 0 and 1 and the second client 2, as pgbench's
/// threads take them: the `-l` file of each thread holds its clients' lines.
#[test]
fn clients_split_over_threads_as_pgbenchs() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    run_ok(dbperf().args(["pgbench", "init", "--scale", "1", "--target", &pg.url()]));
    let with_reference = common::present_or_skip(
        common::program_available("pgbench", "postgresql-15"),
        "pgbench (postgresql-15) is not installed: dbperf's split is checked against pgbench's rule",
    );
    let work = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let clients_by_file = |prefix: &str| -> Vec<Vec<String>> {
        logs(work.path(), prefix)
            .into_iter()
            .map(|(_, lines)| {
                let mut ids: Vec<String> = lines.iter().map(|l| l.split(' ').next().unwrap().to_string()).collect();
                ids.sort();
                ids.dedup();
                ids
            })
            .collect()
    };
    let run = |prefix: &str| -> Vec<String> {
        let p = format!("--log-prefix={}", work.path().join(prefix).display());
        ["-n", "-S", "-t", "3", "-c", "3", "-j", "2", "-l", &p]
            .map(str::to_string)
            .to_vec()
    };
    let opts = run("split");
    let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
    let out = ours(&pg, results.path(), &opts);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(clients_by_file("split"), [vec!["0", "1"], vec!["2"]]);
    if with_reference {
        let opts = run("split_pgbench");
        let opts: Vec<&str> = opts.iter().map(String::as_str).collect();
        let r = reference(&pg, work.path(), &opts);
        assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
        assert_eq!(clients_by_file("split_pgbench"), clients_by_file("split"));
    }
}

/// `-r`'s blocks: each header, and each command's failures, retries and first line (the mean
/// latency masked), in order; with several scripts, each script's header, weight and counts.
fn per_command_lines(stdout: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for l in stdout.lines() {
        if l.trim_start().starts_with("- statement latencies") || l.starts_with("statement latencies") {
            inside = true;
            out.push(l.to_string());
        } else if inside && l.starts_with("   ") {
            let rest = l.trim_start();
            let (mean, rest) = rest.split_once("  ").unwrap_or((rest, ""));
            assert!(mean.parse::<f64>().is_ok(), "not a mean latency: {l:?}");
            out.push(format!("<ms>  {rest}"));
        } else {
            inside = false;
            let counts = [" - weight: ", " - number of ", " - total number of "];
            if l.starts_with("SQL script ") || counts.iter().any(|c| l.starts_with(c)) {
                out.push(l.to_string());
            }
        }
    }
    out
}

#[test]
fn per_command_latencies_list_the_scripts_commands_as_pgbench() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    run_ok(dbperf().args(["pgbench", "init", "--scale", "1", "--target", &pg.url()]));
    let results = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // Meta-commands, an SQL command on two lines, \gset after a space, \if branches, a
    // compound command, \sleep: each is one of pgbench's commands with its first line.
    std::fs::write(
        work.path().join("r.sql"),
        "\\set aid random(1, 100000 * :scale)\nBEGIN;\nSELECT abalance FROM pgbench_accounts\n   WHERE aid = :aid;\n\
         \\if :aid > 50000\nSELECT :aid AS x \\gset\n\\else\nSELECT 2 \\; SELECT 3;\n\\endif\n\\sleep 1 ms\nEND;\n",
    )
    .unwrap();
    let script = work.path().join("r.sql");
    let script = script.to_str().unwrap();
    let weighted = format!("{script}@2");
    // Half the transactions fail, the same ones for both tools (the same seed draws the same
    // numbers): the failures column counts them at the command they failed in.
    std::fs::write(
        work.path().join("half.sql"),
        "\\set r random(0, 1)\n\\if :r = 0\nDO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = 'serialization_failure'; END $$;\n\\else\nSELECT 1;\n\\endif\n",
    )
    .unwrap();
    let half = work.path().join("half.sql");
    let half = half.to_str().unwrap();
    // A block comment alone before a meta-command: a command of pgbench's, sent as an empty
    // query and listed by its first line.
    std::fs::write(
        work.path().join("comment.sql"),
        "\\set x 1\n/* a comment\n   on two lines */\n\\if :x = 1\nSELECT 1;\n\\endif\n",
    )
    .unwrap();
    let comment = work.path().join("comment.sql");
    let comment = comment.to_str().unwrap();
    let cases: [&[&str]; 9] = [
        &["-n", "-r", "-t", "20", "-f", script],
        // Several scripts: a block each; --max-tries adds the retries column.
        &[
            "-n",
            "-r",
            "-t",
            "20",
            "-b",
            "select-only@1",
            "-f",
            &weighted,
            "--max-tries=2",
        ],
        // A built-in alone is listed by its commands too.
        &["-n", "-r", "-t", "10", "-b", "tpcb-like"],
        &["-n", "-r", "-t", "40", "--random-seed=7", "-f", half],
        &["-n", "-r", "-t", "40", "--random-seed=7", "--max-tries=2", "-f", half],
        // Several scripts: each script's failures and retries, as pgbench counts them.
        &[
            "-n",
            "-r",
            "-t",
            "40",
            "--random-seed=7",
            "--max-tries=2",
            "-b",
            "select-only",
            "-f",
            half,
        ],
        &[
            "-n",
            "-r",
            "-t",
            "40",
            "--random-seed=7",
            "--failures-detailed",
            "-b",
            "select-only",
            "-f",
            half,
        ],
        &["-n", "-r", "-t", "3", "-f", comment],
        &["-n", "-r", "-t", "3", "-M", "prepared", "-f", comment],
    ];
    let with_reference = common::present_or_skip(
        common::program_available("pgbench", "postgresql-15"),
        "pgbench (postgresql-15) is not installed: -r's lines are checked for their shape only",
    );
    for opts in cases {
        let out = ours(&pg, results.path(), opts);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{opts:?}: {stdout}{}", text(&out.stderr));
        let mine = per_command_lines(&stdout);
        let first = [
            "\\set aid random(1, 100000 * :scale)",
            "\\set r random(0, 1)",
            "\\set x 1",
        ];
        assert!(
            mine.iter().any(|l| first.iter().any(|f| l.ends_with(f))),
            "{opts:?}: {stdout}"
        );
        if opts.contains(&half) {
            let failing = mine.iter().find(|l| l.contains("RAISE EXCEPTION")).unwrap();
            let failures: u64 = failing.split_whitespace().nth(1).unwrap().parse().unwrap();
            assert!((5..=35).contains(&failures), "{opts:?}: {stdout}");
        }
        if with_reference {
            let r = reference(&pg, work.path(), opts);
            assert_eq!(r.status.code(), Some(0), "pgbench {opts:?}: {}", text(&r.stderr));
            let theirs = text(&r.stdout);
            assert_eq!(
                mine,
                per_command_lines(&theirs),
                "{opts:?}\nours:\n{stdout}\npgbench:\n{theirs}"
            );
        }
    }
}
