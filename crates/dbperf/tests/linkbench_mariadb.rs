//! LinkBench against a real sandboxed MariaDB, as a user runs it: a load checked for
//! consistency (counts equal visible links, dense node ids, the reference's out-degrees and
//! payload sizes), a request run whose per-op counts must fit the configured mix (per-op
//! binomial bounds and a chi-square test) and whose statements in the general log have the
//! reference's shapes and transactions, java-compatible determinism (equal seeds give
//! equal table fingerprints and statement streams, different seeds differ), and a
//! java-compatible load whose tables equal the Java reference's (md5 fingerprints taken
//! from the reference, `support/linkbench_checks.rs`).

use std::collections::BTreeMap;
use std::process::Command;

use dbperf::server::testing::TempSandbox;
use dbperf::workloads::linkbench::config::Op;
use md5::{Digest, Md5};

#[path = "support/linkbench_checks.rs"]
mod checks;
mod common;
use common::{dbperf, only_run_dir, read_json, run_ok};

/// One sandbox at a time: on a 2-core box parallel servers only slow each other down.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn sandbox() -> TempSandbox {
    TempSandbox::start_with(&["innodb_buffer_pool_size=256M", "innodb_log_file_size=128M"])
        .expect("a sandboxed MariaDB starts (apt-get install -y mariadb-server)")
}

fn sql(sb: &TempSandbox, q: &str) -> String {
    let out = Command::new("mariadb")
        .arg(format!("--defaults-file={}", sb.admin_cnf().display()))
        .args(["-N", "-B"])
        .args(["-D", "sbtest", "-e", q])
        .output()
        .expect("mariadb client");
    assert!(out.status.success(), "{q}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

fn linkbench(sb: &TempSandbox, args: &[&str]) -> Command {
    let mut c = dbperf();
    c.arg("linkbench").args(args).args(["--target", &sb.url()]);
    c
}

const MAXID1: i64 = 2001;

/// md5 of a query's output (rows in the query's ORDER BY).
fn fingerprint(sb: &TempSandbox, q: &str) -> String {
    format!("{:x}", Md5::digest(sql(sb, q).as_bytes()))
}

/// Fingerprints of the loaded tables: link keys, full links (time aside), counts, nodes.
fn fingerprints(sb: &TempSandbox) -> [String; 4] {
    [
        fingerprint(
            sb,
            "SELECT id1, link_type, id2 FROM linktable ORDER BY link_type, id1, id2",
        ),
        fingerprint(
            sb,
            "SELECT id1, link_type, id2, visibility, HEX(data), version FROM linktable ORDER BY link_type, id1, id2",
        ),
        fingerprint(
            sb,
            "SELECT id, link_type, count, version FROM counttable ORDER BY id, link_type",
        ),
        fingerprint(sb, "SELECT id, type, version, HEX(data) FROM nodetable ORDER BY id"),
    ]
}

/// The load has the reference's shape and is consistent (`support/linkbench_checks.rs`).
fn assert_loaded_graph(sb: &TempSandbox) {
    let run = |q: &str| sql(sb, q);
    checks::assert_loaded_graph(
        &checks::Db {
            sql: &run,
            hex: |c| format!("HEX({c})"),
        },
        MAXID1,
    );
}

/// counttable equals the visible links.
fn assert_counts_match_links(sb: &TempSandbox) {
    let run = |q: &str| sql(sb, q);
    checks::assert_counts_match_links(&checks::Db {
        sql: &run,
        hex: |c| format!("HEX({c})"),
    });
}

/// The request-phase statements of the general log, per connection, in order.
fn general_log(sb: &TempSandbox) -> BTreeMap<i64, Vec<String>> {
    let rows = sql(
        sb,
        "SELECT thread_id, REPLACE(REPLACE(CONVERT(argument USING latin1), '\\n', ' '), '\\t', ' ') FROM mysql.general_log \
         WHERE command_type IN ('Execute', 'Query')",
    );
    let mut by_thread: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for line in rows.lines() {
        let (t, s) = line.split_once('\t').unwrap_or((line, ""));
        by_thread.entry(t.parse().unwrap()).or_default().push(s.to_string());
    }
    by_thread
}

/// Per-op counts of a run directory's summary.
#[test]
fn load_is_consistent_and_requests_follow_the_mix_and_sql() {
    let _turn = serial();
    let sb = sandbox();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let out = run_ok(&mut linkbench(
        &sb,
        &["load", "--maxid1", &MAXID1.to_string(), "--loaders", "2"],
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("LOAD PHASE COMPLETED"), "{text}");
    assert!(sql(&sb, "SHOW CREATE TABLE linktable").contains("PARTITIONS 16"));
    assert_loaded_graph(&sb);

    sql(
        &sb,
        "TRUNCATE mysql.general_log; SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = ON",
    );
    let requesters = 2;
    let per = 6000;
    let csv = tmp.path().join("stats.csv");
    let out = run_ok(
        linkbench(
            &sb,
            &[
                "request",
                "--requesters",
                &requesters.to_string(),
                "--requests-per-requester",
                &per.to_string(),
                "--time",
                "120",
                "--report-interval",
                "1",
                "--seed",
                "424242",
            ],
        )
        .arg("--results-dir")
        .arg(&results)
        .arg("--csvstats")
        .arg(&csv),
    );
    sql(&sb, "SET GLOBAL general_log = OFF");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("REQUEST PHASE COMPLETED"), "{text}");
    assert!(text.contains("GET_LINKS_LIST count = "), "{text}");
    let dir = only_run_dir(&results);

    // The op counts fit the mix.
    let counts = checks::op_counts(&dir);
    checks::assert_fits_fb2011(&counts, requesters * per);

    // The CSV in LinkBench's -csvstats shape, in the run directory and where asked.
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        csv_text,
        std::fs::read_to_string(dir.join("linkbench-csvstats.csv")).unwrap()
    );
    let mut lines = csv_text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "op,count,p25_low,p25_high,p50_low,p50_high,p75_low,p75_high,p95_low,p95_high,p99_low,p99_high,max,mean"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 10, "{csv_text}");
    let gll = rows.iter().find(|r| r.starts_with("GET_LINKS_LIST,")).unwrap();
    assert_eq!(
        gll.split(',').nth(1).unwrap(),
        (counts[Op::GetLinksList as usize] as u64).to_string()
    );
    assert_eq!(gll.split(',').count(), 14);

    // Statements as the reference's LinkStoreMysql sends them.
    let log = general_log(&sb);
    let all: Vec<&String> = log.values().flatten().collect();
    let count = |pred: &dyn Fn(&str) -> bool| all.iter().filter(|s| pred(s)).count() as f64;
    let c = |op: Op| counts[op as usize];
    let link_list = count(&|s| {
        s.contains("FROM linktable FORCE INDEX(id1_type)") && s.contains("visibility = 1 ORDER BY time DESC LIMIT")
    });
    assert_eq!(link_list, c(Op::GetLinksList));
    let inserts = count(&|s| {
        s.starts_with("INSERT INTO linktable (id1, id2, link_type, visibility, data, time, version) VALUES (")
            && s.ends_with("ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)")
            && !s.contains("), (")
    });
    assert_eq!(inserts, c(Op::AddLink) + c(Op::UpdateLink));
    let increments = count(&|s| s.contains("ON DUPLICATE KEY UPDATE count = count + 1, version = version + 1"));
    let data_updates = count(&|s| s.starts_with("UPDATE linktable SET visibility = 1, data = "));
    // An insert either added a row (count +1), found it unchanged (data update), or made a
    // hidden link visible again (both); the last happens at most once per hide.
    let flips = increments + data_updates - inserts;
    assert!(increments > 0.0 && data_updates > 0.0);
    let locks = count(&|s| s.starts_with("SELECT visibility FROM linktable WHERE") && s.ends_with("FOR UPDATE"));
    assert_eq!(locks, c(Op::DeleteLink));
    let hides = count(&|s| s.starts_with("UPDATE linktable SET visibility = 0 WHERE"));
    let decrements = count(&|s| s.contains("count = IF(count = 0, 0, count - 1)"));
    assert_eq!(hides, decrements);
    assert!(hides > 0.0 && hides < locks);
    assert!(
        (0.0..=hides).contains(&flips),
        "{flips} re-shown links for {hides} hidden"
    );
    assert_eq!(
        count(&|s| s.starts_with("SELECT count FROM counttable WHERE id = ")),
        c(Op::CountLink)
    );
    assert_eq!(count(&|s| s.contains("AND id2 IN (")), c(Op::MultigetLink));
    assert_eq!(
        count(&|s| s.starts_with("INSERT INTO nodetable (type, version, time, data) VALUES (2048, 1, ")),
        c(Op::AddNode)
    );
    assert_eq!(
        count(&|s| s.starts_with("UPDATE nodetable SET version = 2, time = ")),
        c(Op::UpdateNode)
    );
    assert_eq!(
        count(&|s| s.starts_with("DELETE FROM nodetable WHERE id = ")),
        c(Op::DeleteNode)
    );
    assert_eq!(
        count(&|s| s.starts_with("SELECT id, type, version, time, data FROM nodetable WHERE id = ")),
        c(Op::GetNode)
    );
    let writes = [
        Op::AddLink,
        Op::UpdateLink,
        Op::DeleteLink,
        Op::AddNode,
        Op::UpdateNode,
        Op::DeleteNode,
    ]
    .iter()
    .map(|&o| c(o))
    .sum::<f64>();
    assert_eq!(count(&|s| s == "COMMIT"), writes);
    // Transactions: on each read-write connection (autocommit off), every statement group
    // ending in COMMIT is one write op, in one of the reference's shapes.
    let mut rw_threads = 0;
    let mut flip_groups = 0.0;
    for stmts in log.values() {
        if !stmts.iter().any(|s| s == "SET autocommit = 0") {
            assert!(!stmts.iter().any(|s| s == "COMMIT"), "a read-only connection committed");
            continue;
        }
        rw_threads += 1;
        let work: Vec<&String> = stmts
            .iter()
            .skip_while(|s| {
                !s.starts_with("INSERT")
                    && !s.starts_with("SELECT")
                    && !s.starts_with("UPDATE")
                    && !s.starts_with("DELETE")
            })
            .collect();
        for group in work.split(|s| *s == "COMMIT") {
            let shape: Vec<&str> = group
                .iter()
                .map(|s| s.split_whitespace().next().unwrap_or(""))
                .collect();
            flip_groups += (shape == ["INSERT", "INSERT", "UPDATE"]) as u8 as f64;
            let ok = matches!(
                shape.as_slice(),
                [] | ["INSERT"]
                    | ["INSERT", "INSERT"]
                    | ["INSERT", "UPDATE"]
                    | ["INSERT", "INSERT", "UPDATE"]
                    | ["SELECT"]
                    | ["SELECT", "UPDATE", "INSERT"]
                    | ["UPDATE"]
                    | ["DELETE"]
            );
            assert!(ok, "a transaction of shape {shape:?}: {group:?}");
        }
    }
    assert_eq!(rw_threads, requesters);
    assert_eq!(flip_groups, flips);
    assert_counts_match_links(&sb);

    sharded_request_phase_merges(&sb, tmp.path());
    assert_counts_match_links(&sb);
}

/// Two shards of one request phase, started together as two clients would be, merged by
/// `dbperf merge`: `linkbench.json` and the csvstats file of the merged run are LinkBench's
/// report of one histogram per op of every request in the shards' raw interval logs.
fn sharded_request_phase_merges(sb: &TempSandbox, tmp: &std::path::Path) {
    let request = ["request", "--requesters", "2", "--time", "3", "--report-interval", "1"];
    let shards = common::run_shards(2, &tmp.join("shards"), |_| linkbench(sb, &request));
    let dirs: Vec<std::path::PathBuf> = shards.into_iter().map(|(d, _)| d).collect();
    let (text, merged) = common::merge_ok(&dirs, &tmp.join("merged"));
    assert!(
        text.contains("Merged: linkbench.json") && text.contains("GET_LINKS_LIST count = "),
        "{text}"
    );
    let stats = read_json(&merged.join("linkbench.json"));
    let stats = stats.as_array().unwrap();
    assert!(stats.len() >= 5, "{stats:?}");
    for op in stats {
        let name = op["op"].as_str().unwrap();
        let mut all = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for d in &dirs {
            all.add(common::measured_histogram(d, 0.0, &format!("response:{name}")))
                .unwrap();
        }
        let expected = serde_json::to_value(dbperf::workloads::linkbench::report::op_stats(name, &all)).unwrap();
        assert_eq!(op, &expected, "{name}");
        let shard_counts: u64 = dirs
            .iter()
            .map(|d| {
                read_json(&d.join("linkbench.json"))
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|o| o["op"] == name)
                    .map_or(0, |o| o["count"].as_u64().unwrap())
            })
            .sum();
        assert_eq!(op["count"].as_u64().unwrap(), shard_counts, "{name}");
    }
    let csv = std::fs::read_to_string(merged.join("linkbench-csvstats.csv")).unwrap();
    assert_eq!(csv.lines().count(), stats.len() + 1, "{csv}");
}

/// Runs a java-compatible request phase with one requester and returns its statements with
/// the clock's numbers (10-13 digits) masked.
fn java_request_stream(sb: &TempSandbox, load_seed: &str, seed: &str, results: &std::path::Path) -> Vec<String> {
    run_ok(&mut linkbench(
        sb,
        &[
            "load",
            "--maxid1",
            &MAXID1.to_string(),
            "--java-compatible-rng",
            "--seed",
            load_seed,
        ],
    ));
    sql(sb, "SET GLOBAL general_log = OFF; TRUNCATE mysql.general_log; SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = ON");
    run_ok(
        linkbench(
            sb,
            &[
                "request",
                "--requesters",
                "1",
                "--requests-per-requester",
                "2500",
                "--time",
                "120",
                "--java-compatible-rng",
                "--seed",
                seed,
                "--no-telemetry",
            ],
        )
        .arg("--results-dir")
        .arg(results),
    );
    sql(sb, "SET GLOBAL general_log = OFF");
    let log = general_log(sb);
    let mut out = Vec::new();
    for stmts in log.values() {
        for s in stmts {
            if s.starts_with("SHOW") || s.starts_with("SELECT @@") || s.contains("general_log") {
                continue;
            }
            out.push(mask_clock(s));
        }
    }
    out
}

fn mask_clock(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut digits = String::new();
    let flush = |digits: &mut String, out: &mut String| {
        if (10..=13).contains(&digits.len()) {
            out.push_str("<T>");
        } else {
            out.push_str(digits);
        }
        digits.clear();
    };
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            digits.push(ch);
        } else {
            flush(&mut digits, &mut out);
            out.push(ch);
        }
    }
    flush(&mut digits, &mut out);
    out
}

#[test]
fn seeded_loads_and_requests_are_deterministic() {
    let _turn = serial();
    let sb = sandbox();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let maxid = MAXID1.to_string();

    // Java-compatible loads: same seed, same tables; another seed, other payloads on the
    // same keys (which depend only on the distribution file and the shufflers).
    run_ok(&mut linkbench(
        &sb,
        &["load", "--maxid1", &maxid, "--java-compatible-rng", "--seed", "12345"],
    ));
    assert_loaded_graph(&sb);
    let a = fingerprints(&sb);
    run_ok(&mut linkbench(
        &sb,
        &["load", "--maxid1", &maxid, "--java-compatible-rng", "--seed", "12345"],
    ));
    assert_eq!(fingerprints(&sb), a);
    run_ok(&mut linkbench(
        &sb,
        &["load", "--maxid1", &maxid, "--java-compatible-rng", "--seed", "54321"],
    ));
    let b = fingerprints(&sb);
    assert_eq!(a[0], b[0], "link keys depend only on the distributions");
    assert_eq!(a[2], b[2], "counts depend only on the distributions");
    assert_ne!(a[1], b[1]);
    assert_ne!(a[3], b[3]);

    // dbperf's own streams: the rows do not depend on the number of loaders.
    run_ok(&mut linkbench(
        &sb,
        &["load", "--maxid1", &maxid, "--loaders", "1", "--seed", "9"],
    ));
    let one = fingerprints(&sb);
    run_ok(&mut linkbench(
        &sb,
        &["load", "--maxid1", &maxid, "--loaders", "3", "--seed", "9"],
    ));
    assert_eq!(fingerprints(&sb), one);
    assert_ne!(one[1], a[1]);

    // A java-compatible request phase on the same data gives the same statement stream.
    let s1 = java_request_stream(&sb, "12345", "777", &results);
    let s2 = java_request_stream(&sb, "12345", "777", &results);
    assert!(s1.len() > 2500, "{}", s1.len());
    assert_eq!(s1, s2);
    let s3 = java_request_stream(&sb, "12345", "778", &results);
    assert_ne!(s1, s3);

    // Not only reproducible: the tables equal the Java reference's, keys, counts and
    // payloads (fingerprints taken from the reference's own load on MariaDB).
    run_ok(&mut linkbench(&sb, &checks::JAVA_REFERENCE_LOAD));
    let run = |q: &str| sql(&sb, q);
    checks::assert_java_reference_load(&checks::Db {
        sql: &run,
        hex: |c| format!("HEX({c})"),
    });

    // Bad input is named.
    let out = linkbench(
        &sb,
        &["load", "--maxid1", &maxid, "--java-compatible-rng", "--loaders", "4"],
    )
    .output()
    .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--loaders 1"));
}

/// Starts a load of a graph far too big to finish, with SIGINT ignored on entry (as for a
/// background job of a script: the load must still stop on it, since it installs its own
/// handler).
fn big_load(sb: &TempSandbox) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = linkbench(sb, &["load", "--maxid1", "20000001", "--loaders", "2"]);
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            Ok(())
        });
    }
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends SIGINT to `child` and waits: it exits with 130 within a second, saying the load was
/// interrupted.
fn interrupt_promptly(child: std::process::Child) {
    use std::time::{Duration, Instant};
    let sent = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let took = sent.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("LOAD PHASE INTERRUPTED"), "{stdout}");
    assert!(took < Duration::from_secs(1), "stopped in {took:?}");
}

/// Ctrl-C stops a load within a second with exit status 130, both early (0.7 s in, while the
/// tables are created) and while rows flow; every id sent has its links and counts; the load
/// stays marked incomplete, so `request` refuses it, naming the way out, unless
/// `--allow-incomplete-load`.
#[test]
fn interrupted_load_stops_within_a_second_and_request_refuses_it() {
    use std::time::{Duration, Instant};
    let _serial = serial();
    let sb = sandbox();
    let child = big_load(&sb);
    std::thread::sleep(Duration::from_millis(700));
    interrupt_promptly(child);

    let child = big_load(&sb);
    let started = Instant::now();
    while sql(
        &sb,
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'sbtest' AND table_name = 'nodetable'",
    ) != "1"
        || sql(&sb, "SELECT COUNT(*) FROM nodetable") == "0"
    {
        assert!(started.elapsed() < Duration::from_secs(60), "no rows after a minute");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    interrupt_promptly(child);
    assert_counts_match_links(&sb);
    let nodes: i64 = sql(&sb, "SELECT COUNT(*) FROM nodetable").parse().unwrap();
    assert!(nodes > 0 && nodes < 20_000_000, "{nodes}");
    assert_eq!(
        sql(&sb, "SELECT COUNT(*) FROM dbperf_linkbench WHERE name = 'complete'"),
        "0"
    );

    let results = tempfile::tempdir().unwrap();
    let request = |extra: &[&str]| {
        let mut c = linkbench(&sb, &["request", "--requesters", "1", "--time", "1"]);
        c.arg("--results-dir").arg(results.path()).args(extra);
        c.output().unwrap()
    };
    let out = request(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "request ran on an incomplete load");
    assert!(
        err.contains("did not finish") && err.contains("--allow-incomplete-load") && err.contains("--maxid1 20000001"),
        "{err}"
    );
    let out = request(&["--allow-incomplete-load"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("incomplete graph"), "{err}");

    // A finished load is marked complete, and cleanup drops what load created.
    run_ok(&mut linkbench(&sb, &["load", "--maxid1", "2001", "--loaders", "2"]));
    assert_eq!(
        sql(&sb, "SELECT value FROM dbperf_linkbench WHERE name = 'complete'"),
        "1"
    );
    run_ok(&mut linkbench(&sb, &["cleanup"]));
    assert_eq!(sql(&sb, "SHOW TABLES"), "");
}
