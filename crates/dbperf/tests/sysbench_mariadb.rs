//! dbperf's sysbench tests against a real sandboxed MariaDB, run as a user runs them:
//! the binary, its files, and the server's own view (general log, table contents).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dbperf::server::testing::TempSandbox;
use serde_json::Value;

mod common;
use common::{dbperf, kill_after, kill_moments, only_run_dir, read_json, run_ok, sandbox, wait_for_intervals};

/// Runs SQL as root over the sandbox socket and returns tab-separated rows.
fn root_sql(sb: &TempSandbox, sql: &str) -> String {
    let out = Command::new("mariadb")
        .arg(format!("--defaults-file={}", sb.admin_cnf().display()))
        .args(["-N", "-B"])
        .args(["-e", sql])
        .output()
        .expect("mariadb client");
    assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sysbench_cmd(test: &str, command: &str, sb: &TempSandbox, extra: &[&str]) -> Command {
    let mut c = dbperf();
    c.args(["sysbench", test, command, "--target", &sb.url()]).args(extra);
    c
}

fn validate_summary(summary: &Value) {
    let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/summary.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(summary).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "summary.json violates the schema: {errors:?}");
}

#[test]
fn prepare_run_check_cleanup_read_write() {
    let sb = sandbox();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let summary_file = tmp.path().join("s.json");
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "prepare",
        &sb,
        &["--tables=2", "--table-size=5000", "--threads=3"],
    ));

    // The table is sysbench's: schema, ids 1..N, the c/pad shapes, the k index.
    let ddl = root_sql(&sb, "SHOW CREATE TABLE sbtest.sbtest2");
    for part in [
        "`id` int(11) NOT NULL AUTO_INCREMENT",
        "`k` int(11) NOT NULL DEFAULT 0",
        "`c` char(120) NOT NULL DEFAULT ''",
        "`pad` char(60) NOT NULL DEFAULT ''",
        "PRIMARY KEY (`id`)",
        "KEY `k_2` (`k`)",
        "ENGINE=InnoDB AUTO_INCREMENT=5001",
    ] {
        assert!(ddl.contains(part), "missing {part:?} in\n{ddl}");
    }
    let shape = root_sql(
        &sb,
        "SELECT COUNT(*), MIN(id), MAX(id), SUM(c REGEXP '^([0-9]{11}-){9}[0-9]{11}$'), SUM(pad REGEXP '^([0-9]{11}-){4}[0-9]{11}$'), MIN(k) >= 1, MAX(k) <= 5000 FROM sbtest.sbtest1",
    );
    assert_eq!(shape.trim(), "5000\t1\t5000\t5000\t5000\t1\t1");

    let commits = || -> u64 {
        root_sql(&sb, "SHOW GLOBAL STATUS LIKE 'Com_commit'")
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap()
    };
    let commits_before = commits();
    let out = run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "run",
        &sb,
        &[
            "--client-threads=2",
            "--tables=2",
            "--table-size=5000",
            "--threads=4",
            "--time=3",
            "--report-interval=1",
            "--results-dir",
            results.to_str().unwrap(),
            "--summary-json",
            summary_file.to_str().unwrap(),
        ],
    ));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("[ 1s ] thds: 4 tps:"), "{stdout}");
    assert!(stdout.contains("lat (ms,p50/p95/p99)"), "{stdout}");
    let dir = only_run_dir(&results);
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary, read_json(&summary_file));
    validate_summary(&summary);
    let trx = summary["transactions"]["total"].as_u64().unwrap();
    assert!(trx > 20, "{summary}");
    // The count is the server's: every reported transaction committed, once.
    assert_eq!(commits() - commits_before, trx);
    // sysbench's counters: 14 reads and 2 other (BEGIN/COMMIT) per event; 4 writes,
    // unless a delete found its row already deleted by another event (then "other").
    // Statements of attempts that failed (a rare deadlock between the 4 connections) are
    // counted too, as sysbench counts them; the counts are exact when nothing was retried.
    let q = &summary["queries"];
    let exact = summary["retries"] == 0;
    let (read, total) = (q["read"].as_u64().unwrap(), q["total"].as_u64().unwrap());
    let points = summary["per_type"]["point_select"]["count"].as_u64().unwrap();
    if exact {
        assert_eq!((read, total, points), (14 * trx, 20 * trx, 10 * trx), "{summary}");
    } else {
        assert!(read >= 14 * trx && total >= 20 * trx && points >= 10 * trx, "{summary}");
    }
    assert_eq!(
        q["read"].as_u64().unwrap() + q["write"].as_u64().unwrap() + q["other"].as_u64().unwrap(),
        total
    );
    assert!(q["write"].as_u64().unwrap() >= 4 * trx - trx / 10);
    assert_eq!(summary["rand_type"], "uniform");
    assert_eq!(summary["threads"], 4);
    assert!(summary["rate"].is_null() && summary["service_time_ms"].is_null());
    assert!((summary["duration_s"].as_f64().unwrap() - 3.0).abs() < 0.2);

    // Every interval was stored; the stored intervals add up to the summary.
    let lines: Vec<Value> = std::fs::read_to_string(dir.join("intervals.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 3, "{lines:?}");
    let sum: u64 = lines.iter().map(|l| l["transactions"].as_u64().unwrap()).sum();
    assert_eq!(sum, trx);
    // The raw histograms read back with an HdrHistogram library.
    let hlog = std::fs::read(dir.join("intervals.hlog")).unwrap();
    let mut count = 0u64;
    let mut deser = hdrhistogram::serialization::Deserializer::new();
    for item in hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&hlog) {
        if let hdrhistogram::serialization::interval_log::LogEntry::Interval(h) = item.unwrap() {
            // Timestamps are seconds since the log's BaseTime (the run's start).
            assert!(h.start_timestamp().as_secs_f64() < 10.0, "{:?}", h.start_timestamp());
            if h.tag().map(|t| t.as_str()) == Some("response:oltp_read_write") {
                let bytes = base64_decode(h.encoded_histogram());
                let hist: hdrhistogram::Histogram<u64> = deser.deserialize(&mut &bytes[..]).unwrap();
                count += hist.len();
            }
        }
    }
    assert_eq!(count, trx);
    let manifest = read_json(&dir.join("manifest.json"));
    assert!(
        manifest["server"]["variables"]["innodb_buffer_pool_size"].is_string(),
        "{manifest}"
    );
    assert!(manifest["server"]["version"].as_str().unwrap().contains("MariaDB"));
    assert!(
        !manifest.to_string().contains(&sb.bench_password()),
        "password leaked into the manifest"
    );

    // Consistency: each delete/insert pair keeps the row count.
    let rows = root_sql(
        &sb,
        "SELECT (SELECT COUNT(*) FROM sbtest.sbtest1) + (SELECT COUNT(*) FROM sbtest.sbtest2)",
    );
    assert_eq!(rows.trim(), "10000");

    run_ok(&mut sysbench_cmd("oltp_read_write", "cleanup", &sb, &["--tables=2"]));
    assert_eq!(
        root_sql(
            &sb,
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='sbtest'"
        )
        .trim(),
        "0"
    );
}

fn base64_decode(s: &str) -> Vec<u8> {
    // A small decoder so the test needs no extra crate.
    let table = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a' + 26) as u32,
            b'0'..=b'9' => (c - b'0' + 52) as u32,
            b'+' => 62,
            b'/' => 63,
            _ => 0,
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut v = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            v |= table(*c) << (18 - 6 * i);
        }
        let n = chunk.len() * 6 / 8;
        for i in 0..n {
            out.push((v >> (16 - 8 * i)) as u8);
        }
    }
    out
}

#[test]
fn general_log_shows_sysbench_statement_mix() {
    let sb = sandbox();
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "prepare",
        &sb,
        &["--tables=3", "--table-size=2000"],
    ));
    // Where the server (not root when dbperf is) may write.
    let log = sb.dir().join("general.log");
    root_sql(
        &sb,
        &format!(
            "SET GLOBAL general_log_file='{}'; SET GLOBAL general_log=ON",
            log.display()
        ),
    );
    let tmp = tempfile::tempdir().unwrap();
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "run",
        &sb,
        &[
            "--tables=3",
            "--table-size=2000",
            "--threads=1",
            "--events=25",
            "--time=0",
            "--results-dir",
            tmp.path().to_str().unwrap(),
        ],
    ));
    root_sql(&sb, "SET GLOBAL general_log=OFF");
    let text = std::fs::read_to_string(&log).unwrap();
    let executes: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once(" Execute\t").map(|(_, s)| s))
        .collect();
    let count = |pred: &dyn Fn(&str) -> bool| executes.iter().filter(|s| pred(s)).count();
    assert_eq!(count(&|s| s == "BEGIN"), 25);
    assert_eq!(count(&|s| s == "COMMIT"), 25);
    assert_eq!(
        count(&|s| s.starts_with("SELECT c FROM sbtest") && s.contains("WHERE id=")),
        250
    );
    assert_eq!(
        count(&|s| s.starts_with("SELECT c FROM sbtest") && s.ends_with("ORDER BY c") && !s.contains("DISTINCT")),
        25
    );
    assert_eq!(count(&|s| s.starts_with("SELECT DISTINCT c FROM sbtest")), 25);
    assert_eq!(count(&|s| s.starts_with("SELECT SUM(k) FROM sbtest")), 25);
    assert_eq!(
        count(&|s| s.starts_with("SELECT c FROM sbtest") && s.contains("BETWEEN") && !s.contains("ORDER")),
        25
    );
    assert_eq!(
        count(&|s| s.starts_with("UPDATE sbtest") && s.contains("SET k=k+1")),
        25
    );
    assert_eq!(count(&|s| s.starts_with("UPDATE sbtest") && s.contains("SET c='")), 25);
    assert_eq!(count(&|s| s.starts_with("DELETE FROM sbtest")), 25);
    assert_eq!(count(&|s| s.starts_with("INSERT INTO sbtest")), 25);
    assert_eq!(executes.len(), 25 * 20, "nothing else is executed");
    // Ranges span range_size rows, and all 10 point selects of an event hit one table.
    let range = executes.iter().find(|s| s.starts_with("SELECT SUM(k)")).unwrap();
    let nums: Vec<i64> = range
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(nums[nums.len() - 1] - nums[nums.len() - 2], 99, "{range}");
    let points: Vec<&&str> = executes
        .iter()
        .filter(|s| s.contains("WHERE id=") && s.starts_with("SELECT"))
        .take(10)
        .collect();
    let table = |s: &str| s.split_whitespace().nth(3).unwrap().to_string();
    assert!(points.iter().all(|p| table(p) == table(points[0])), "{points:?}");
}

#[test]
fn open_loop_shows_a_frozen_server_in_response_time() {
    let sb = sandbox();
    run_ok(&mut sysbench_cmd(
        "oltp_point_select",
        "prepare",
        &sb,
        &["--table-size=2000"],
    ));
    let tmp = tempfile::tempdir().unwrap();
    let pid = sb.pid();
    let summary_file = tmp.path().join("s.json");
    let mut child = sysbench_cmd(
        "oltp_point_select",
        "run",
        &sb,
        &[
            "--table-size=2000",
            "--threads=4",
            "--rate=200",
            "--arrival=fixed",
            "--time=7",
            "--report-interval=1",
            "--results-dir",
            tmp.path().to_str().unwrap(),
            "--summary-json",
            summary_file.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    // The server freezes for 2 s from the end of the run's second interval.
    wait_for_intervals(tmp.path(), 2);
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(2000));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(child.wait().unwrap().success());
    let s = read_json(&summary_file);
    validate_summary(&s);
    let rt = &s["latency_ms"];
    let st = &s["service_time_ms"];
    // Arrivals kept coming during the 2 s freeze: the ones that queued waited up to 2 s.
    assert!(rt["max"].as_f64().unwrap() > 1800.0, "{s}");
    assert!(
        rt["p90"].as_f64().unwrap() > 100.0,
        "about 2/7 of arrivals met the freeze: {s}"
    );
    // Their service time was short once they got a connection...
    assert!(st["p50"].as_f64().unwrap() < 20.0, "{s}");
    // ...but the backlog is not hidden: they are counted as late starts.
    assert!(s["late_starts"].as_u64().unwrap() > 300, "{s}");
    // Exactly the offered 7 s x 200/s: served, or still queued at the end.
    let offered = s["transactions"]["total"].as_u64().unwrap() + s["backlog_at_end"].as_u64().unwrap();
    assert!((1396..=1400).contains(&offered), "{s}");
}

#[test]
fn interrupt_and_kill_keep_what_was_measured() {
    let sb = sandbox();
    run_ok(&mut sysbench_cmd(
        "oltp_point_select",
        "prepare",
        &sb,
        &["--table-size=2000"],
    ));
    for (signal, expect_summary) in [(libc::SIGINT, true), (libc::SIGTERM, true), (libc::SIGKILL, false)] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = sysbench_cmd(
            "oltp_point_select",
            "run",
            &sb,
            &[
                "--table-size=2000",
                "--threads=2",
                "--time=60",
                "--results-dir",
                tmp.path().to_str().unwrap(),
            ],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
        // Three 1 s intervals measured, then the signal.
        let (dir, stored) = wait_for_intervals(tmp.path(), 3);
        let sent = Instant::now();
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        let stopped = sent.elapsed();
        // The README's promise: Ctrl-C stops within a second, summary written.
        assert!(
            stopped < Duration::from_secs(1),
            "signal {signal}: stopped in {stopped:?}"
        );
        assert_eq!(only_run_dir(tmp.path()), dir);
        let lines = std::fs::read_to_string(dir.join("intervals.jsonl")).unwrap();
        assert!(lines.lines().count() >= stored, "signal {signal}: {lines}");
        for l in lines.lines() {
            let _: Value = serde_json::from_str(l).expect("every stored line is whole");
        }
        if expect_summary {
            assert_eq!(status.code(), Some(130));
            let s = read_json(&dir.join("summary.json"));
            assert_eq!(s["interrupted"], true);
            assert!(s["transactions"]["total"].as_u64().unwrap() > 0);
            // Measured up to the signal: the stored intervals, the part of the next one
            // before the signal (under 1 s, plus the 20 ms poll), and no more than the stop.
            let d = s["duration_s"].as_f64().unwrap();
            let upper = stored as f64 + 1.1 + stopped.as_secs_f64();
            assert!(
                d >= stored as f64 && d < upper,
                "{d} s measured, {stored} intervals before the signal"
            );
        } else {
            assert!(!dir.join("summary.json").exists());
        }
    }
}

#[test]
fn lost_connections_reconnect_and_are_counted() {
    let sb = sandbox();
    run_ok(&mut sysbench_cmd(
        "oltp_read_only",
        "prepare",
        &sb,
        &["--table-size=2000"],
    ));
    let tmp = tempfile::tempdir().unwrap();
    let summary_file = tmp.path().join("s.json");
    let mut child = sysbench_cmd(
        "oltp_read_only",
        "run",
        &sb,
        &[
            "--table-size=2000",
            "--threads=3",
            "--time=4",
            "--results-dir",
            tmp.path().to_str().unwrap(),
            "--summary-json",
            summary_file.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    // The workers are connected once the first interval is stored.
    wait_for_intervals(tmp.path(), 1);
    let ids = root_sql(&sb, "SELECT id FROM information_schema.processlist WHERE user='sb'");
    for id in ids.split_whitespace() {
        let _ = Command::new("mariadb")
            .arg(format!("--defaults-file={}", sb.admin_cnf().display()))
            .args(["-e", &format!("KILL {id}")])
            .output();
    }
    assert!(child.wait().unwrap().success());
    let s = read_json(&summary_file);
    assert!(s["reconnects"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["errors"]["by_class"]["connection_lost"].as_u64().unwrap() >= 1, "{s}");
    assert!(s["transactions"]["total"].as_u64().unwrap() > 10);
}

#[test]
fn every_test_runs_with_its_own_shape() {
    let sb = sandbox();
    let tmp = tempfile::tempdir().unwrap();
    // (test, extra options, statements per event)
    let cases: [(&str, &[&str], u64); 10] = [
        ("oltp_read_only", &[], 16),
        ("oltp_write_only", &[], 6),
        ("oltp_point_select", &[], 1),
        ("oltp_update_index", &[], 1),
        ("oltp_update_non_index", &[], 1),
        ("oltp_insert", &[], 1),
        ("oltp_delete", &[], 1),
        ("select_random_points", &[], 1),
        ("select_random_ranges", &[], 1),
        ("oltp_read_write", &["--skip-trx=on", "--range_selects=off"], 14),
    ];
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "prepare",
        &sb,
        &["--table-size=3000"],
    ));
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "prewarm",
        &sb,
        &["--table-size=3000"],
    ));
    for (test, extra, per_event) in cases {
        let file = tmp.path().join(format!("{test}.json"));
        let mut cmd = sysbench_cmd(
            test,
            "run",
            &sb,
            &[
                "--table-size=3000",
                "--threads=2",
                "--events=60",
                "--time=0",
                "--summary-json",
                file.to_str().unwrap(),
            ],
        );
        cmd.args(extra)
            .args(["--results-dir", tmp.path().join("r").to_str().unwrap()]);
        run_ok(&mut cmd);
        let s = read_json(&file);
        assert_eq!(s["transactions"]["total"], 60, "{test}: {s}");
        let total = s["queries"]["total"].as_u64().unwrap();
        if s["retries"] == 0 {
            assert_eq!(total, 60 * per_event, "{test}: {s}");
        } else {
            assert!(
                total > 60 * per_event,
                "{test}: statements of retried attempts count too: {s}"
            );
        }
        assert_eq!(s["workload"], test);
    }
    // The mysql_async client runs the same events.
    let file = tmp.path().join("mysql_async.json");
    run_ok(
        sysbench_cmd(
            "oltp_read_write",
            "run",
            &sb,
            &[
                "--table-size=3000",
                "--threads=2",
                "--events=40",
                "--time=0",
                "--client-impl=mysql_async",
            ],
        )
        .args([
            "--summary-json",
            file.to_str().unwrap(),
            "--results-dir",
            tmp.path().join("r").to_str().unwrap(),
        ]),
    );
    let s = read_json(&file);
    assert_eq!(s["transactions"]["total"], 40, "{s}");
    if s["retries"] == 0 {
        assert_eq!(s["queries"]["total"], 40 * 20, "{s}");
    }
    // oltp_insert added 60 rows, oltp_delete removed up to 60, delete/insert pairs keep the count.
    let n: i64 = root_sql(&sb, "SELECT COUNT(*) FROM sbtest.sbtest1")
        .trim()
        .parse()
        .unwrap();
    assert!((2940..=3060).contains(&n), "{n}");
}

#[test]
fn bad_input_gets_a_clear_error() {
    let sb = sandbox();
    let cases: [(&[&str], &str); 5] = [
        (
            &["sysbench", "oltp_rw", "run", "--target", "mysql://sb:sb@127.0.0.1:1/x"],
            "the OLTP tests are",
        ),
        (&["sysbench", "oltp_read_only", "run"], "no server given"),
        (
            &["sysbench", "oltp_read_only", "run", "--target", "127.0.0.1:3306"],
            "Expected mysql://",
        ),
        (
            &["sysbench", "oltp_read_only", "run", "--target", "sandbox:nope"],
            "nope",
        ),
        (
            &[
                "sysbench",
                "select_random_points",
                "run",
                "--tables=2",
                "--target",
                "mysql://sb:sb@127.0.0.1:1/x",
            ],
            "--tables=1",
        ),
    ];
    for (args, needle) in cases {
        let out = dbperf().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let out = run_fail(&mut sysbench_cmd("oltp_read_only", "run", &sb, &["--tables=4"]));
    assert!(
        out.contains("sbtest1 does not exist") && out.contains("prepare"),
        "{out}"
    );
}

fn run_fail(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn sysbench_and_dbperf_run_on_each_others_tables() {
    if !common::program_available("sysbench", "sysbench") {
        return;
    }
    let sb = sandbox();
    let sysbench = |args: &[&str]| {
        let mut c = Command::new("sysbench");
        c.args(args).args([
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            &format!("--mysql-port={}", sb.port()),
            "--mysql-user=sb",
            &format!("--mysql-password={}", sb.bench_password()),
            "--mysql-db=sbtest",
        ]);
        run_ok(&mut c)
    };
    // dbperf prepares, sysbench runs.
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "prepare",
        &sb,
        &["--tables=2", "--table-size=3000"],
    ));
    let dbperf_ddl = root_sql(&sb, "SHOW CREATE TABLE sbtest.sbtest1");
    let out = sysbench(&[
        "oltp_read_write",
        "--tables=2",
        "--table-size=3000",
        "--threads=2",
        "--time=2",
        "run",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    // sysbench ran its own workload on dbperf's tables (an occasional retried deadlock is
    // normal with 2 threads on small tables).
    let trx: u64 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("transactions:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(trx > 10 && !text.contains("FATAL"), "{text}");
    sysbench(&["oltp_read_write", "--tables=2", "cleanup"]);
    // sysbench prepares, dbperf runs.
    sysbench(&[
        "oltp_read_write",
        "--tables=2",
        "--table-size=3000",
        "--rand-type=uniform",
        "prepare",
    ]);
    let sysbench_ddl = root_sql(&sb, "SHOW CREATE TABLE sbtest.sbtest1");
    assert_eq!(
        dbperf_ddl, sysbench_ddl,
        "SHOW CREATE TABLE is the same whichever tool prepared"
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.json");
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "run",
        &sb,
        &[
            "--tables=2",
            "--table-size=3000",
            "--threads=2",
            "--time=2",
            "--summary-json",
            file.to_str().unwrap(),
            "--results-dir",
            tmp.path().to_str().unwrap(),
        ],
    ));
    let s = read_json(&file);
    assert!(s["transactions"]["total"].as_u64().unwrap() > 10);
    // Only retryable classes (a deadlock now and then with 2 connections), never a fatal one.
    let by_class = s["errors"]["by_class"].as_object().unwrap();
    assert!(
        by_class.keys().all(|k| k == "deadlock" || k == "lock_wait_timeout"),
        "{s}"
    );
}

#[test]
fn a_hung_server_does_not_keep_the_run_alive() {
    let sb = sandbox();
    run_ok(&mut sysbench_cmd(
        "oltp_point_select",
        "prepare",
        &sb,
        &["--table-size=2000"],
    ));
    let pid = sb.pid();
    // Both ways of waiting for replies: a blocking read per connection thread, and the
    // event loop.
    for io in ["blocking", "async"] {
        let tmp = tempfile::tempdir().unwrap();
        let summary_file = tmp.path().join("s.json");
        let mut child = sysbench_cmd(
            "oltp_point_select",
            "run",
            &sb,
            &[
                "--table-size=2000",
                "--threads=2",
                "--time=3",
                "--shutdown-grace=1",
                &format!("--client-io={io}"),
                "--results-dir",
                tmp.path().to_str().unwrap(),
                "--summary-json",
                summary_file.to_str().unwrap(),
            ],
        )
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
        // Frozen once the first interval is stored: at most 2 s of the run are left.
        let (dir, _) = wait_for_intervals(tmp.path(), 1);
        let frozen = Instant::now();
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        let status = child.wait().unwrap();
        let took = frozen.elapsed();
        unsafe { libc::kill(pid, libc::SIGCONT) };
        // A server that does not answer right after the run makes it not clean (exit 5), as
        // one killed does: its last seconds measured nothing.
        assert_eq!(status.code(), Some(5), "{io}: {status}");
        // The rest of the 3 s run + 1 s grace + the 3 s probe for an answer + writing the
        // results; the frozen server never answered again, and neither the workers nor the
        // telemetry thread waited for it.
        assert!(took < Duration::from_secs(8), "{io}: took {took:?} after the freeze");
        let s = read_json(&summary_file);
        assert!(s["transactions"]["total"].as_u64().unwrap() > 0, "{io}: {s}");
        assert_eq!(s["server_lost"], true, "{io}: {s}");
        // Every interval up to the deadline was closed, the frozen ones too.
        assert!((2.9..3.2).contains(&s["duration_s"].as_f64().unwrap()), "{io}: {s}");
        let manifest = read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["workload"]["options"]["client_io"], io, "{manifest}");
    }
}

#[test]
fn prepare_does_not_need_local_infile() {
    let sb = TempSandbox::start_with(&["local_infile=OFF"]).expect("sandbox starts");
    assert_eq!(root_sql(&sb, "SELECT @@local_infile").trim(), "0");
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "prepare",
        &sb,
        &["--tables=2", "--table-size=3000", "--threads=2"],
    ));
    let shape = root_sql(
        &sb,
        "SELECT COUNT(*), MIN(id), MAX(id), SUM(c REGEXP '^([0-9]{11}-){9}[0-9]{11}$') FROM sbtest.sbtest2",
    );
    assert_eq!(shape.trim(), "3000\t1\t3000\t3000");
    assert!(root_sql(&sb, "SHOW CREATE TABLE sbtest.sbtest1").contains("KEY `k_1` (`k`)"));
}

#[test]
fn loaded_data_does_not_depend_on_the_number_of_connections() {
    let sb = sandbox();
    let checksum = |threads: &str| {
        run_ok(&mut sysbench_cmd(
            "oltp_read_write",
            "prepare",
            &sb,
            &["--tables=3", "--table-size=12000", "--rand-seed=7", threads],
        ));
        let sum = root_sql(&sb, "CHECKSUM TABLE sbtest.sbtest1, sbtest.sbtest2, sbtest.sbtest3");
        run_ok(&mut sysbench_cmd("oltp_read_write", "cleanup", &sb, &["--tables=3"]));
        sum
    };
    assert_eq!(checksum("--threads=1"), checksum("--threads=5"));
}

/// A prepare killed with SIGKILL at moments drawn from a fixed seed (each try from nothing,
/// alternately splitting the tables in 20,000-id ranges and loading them whole) resumes to the
/// rows of a prepare never interrupted (CHECKSUM TABLE) and both indexes; one killed after the
/// first secondary index was built builds only the second.
#[test]
fn a_prepare_killed_anywhere_resumes_to_the_same_rows() {
    let sb = sandbox();
    let prepare = |threads: &str| {
        sysbench_cmd(
            "oltp_read_write",
            "prepare",
            &sb,
            &["--tables=2", "--table-size=60000", "--rand-seed=11", threads],
        )
    };
    let checksum = || root_sql(&sb, "CHECKSUM TABLE sbtest.sbtest1, sbtest.sbtest2");
    let indexes = || {
        root_sql(
            &sb,
            "SELECT GROUP_CONCAT(index_name ORDER BY index_name) FROM information_schema.statistics \
             WHERE table_schema = 'sbtest' AND index_name LIKE 'k\\_%'",
        )
    };
    let t0 = Instant::now();
    run_ok(&mut prepare("--threads=4"));
    let span = t0.elapsed();
    let want = checksum();
    assert_eq!(indexes().trim(), "k_1,k_2");

    // As if killed after k_1 was built and before k_2 was.
    root_sql(&sb, "DROP INDEX k_2 ON sbtest.sbtest2");
    let out = run_ok(&mut prepare("--threads=4"));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Resuming"));
    assert_eq!(indexes().trim(), "k_1,k_2");
    assert_eq!(checksum(), want);

    // Each try starts from nothing, so every kill lands inside a whole prepare however fast
    // the machine is, and each resume is checked on its own.
    let moments = kill_moments(11, 6, span);
    let mut killed = 0;
    for (i, &m) in moments.iter().enumerate() {
        run_ok(&mut sysbench_cmd("oltp_read_write", "cleanup", &sb, &["--tables=2"]));
        let threads = if i % 2 == 0 { "--threads=4" } else { "--threads=1" };
        if kill_after(&mut prepare(threads), m) {
            killed += 1;
        }
        run_ok(&mut prepare("--threads=2"));
        assert_eq!(checksum(), want, "after a kill at {m:?} ({threads})");
        assert_eq!(indexes().trim(), "k_1,k_2");
    }
    assert!(
        killed >= 3,
        "only {killed} of the kills at {moments:?} landed before the prepare finished"
    );
    // Another table size is refused by name rather than resumed into a mix.
    let out = sysbench_cmd(
        "oltp_read_write",
        "prepare",
        &sb,
        &["--tables=2", "--table-size=100", "--rand-seed=11"],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("table_size=60000"));
    run_ok(&mut sysbench_cmd("oltp_read_write", "cleanup", &sb, &["--tables=2"]));
    assert_eq!(root_sql(&sb, "SHOW TABLES FROM sbtest").trim(), "");
}
