//! TPC-H against a real sandboxed MariaDB: load SF 0.01 with `dbperf tpch prepare`, check
//! the row counts, the 22 validation answers against the golden answers in
//! `tests/data/tpch/sf0.01` (made by the pipeline validated against the official SF 1
//! answers) and against answers SQLite computes on the same data (an independent engine:
//! `support/tpch_sqlite.rs`), a power test, and a timeout that cancels the query on the
//! server.

mod common;
#[path = "support/tpch_checks.rs"]
mod tpch_checks;
#[path = "support/tpch_sqlite.rs"]
mod tpch_sqlite;

use std::time::{Duration, Instant};

use common::{dbperf, kill_after, kill_moments, only_run_dir, read_json, run_ok, sandbox};
use dbperf::driver::mysql::IgnoreErrors;
use dbperf::driver::wire::WireSession;
use dbperf::driver::{Session, Target};
use dbperf::workloads::tpch::power::stream_params;
use dbperf::workloads::tpch::queries::Rendered;
use dbperf::workloads::tpch::runner::{QueryRunner, Status};

fn count(rt: &tokio::runtime::Runtime, s: &mut WireSession, sql: &str) -> i64 {
    let rows = rt.block_on(s.query_rows(sql)).unwrap();
    rows[0][0].as_deref().unwrap().parse().unwrap()
}

/// A prepare killed with SIGKILL at moments drawn from a fixed seed, each rerun resuming the
/// one before, ends with dbgen's row counts and every index; one killed after some indexes
/// were built builds the others.
#[test]
fn a_prepare_killed_anywhere_resumes() {
    let db = sandbox();
    let url = db.url();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let prepare = || {
        let mut c = dbperf();
        c.args(["tpch", "prepare", "--sf", "0.01", "--threads", "3", "--target", &url]);
        c
    };
    let indexes = "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() \
                   AND index_name LIKE 'i\\_%'";
    let t0 = Instant::now();
    run_ok(&mut prepare());
    let span = t0.elapsed();
    let target = Target::parse(&url).unwrap();
    let mut s = rt
        .block_on(WireSession::connect(&target, IgnoreErrors::Codes(Default::default())))
        .unwrap();
    let all_indexes = count(&rt, &mut s, indexes);
    // As if killed after orders' indexes were built and before lineitem's were.
    rt.block_on(s.query("ALTER TABLE lineitem DROP INDEX i_l_shipdate, DROP INDEX i_l_suppkey"))
        .unwrap();
    run_ok(&mut prepare());
    assert_eq!(count(&rt, &mut s, indexes), all_indexes);

    // Each try starts from nothing, so every kill lands inside a whole prepare however fast
    // the machine is, and each resume is checked on its own.
    let moments = kill_moments(3, 5, span);
    let mut killed = 0;
    for &m in &moments {
        run_ok(dbperf().args(["tpch", "cleanup", "--target", &url]));
        if kill_after(&mut prepare(), m) {
            killed += 1;
        }
        run_ok(&mut prepare());
        for (table, rows) in tpch_checks::SF001_ROWS {
            assert_eq!(
                count(&rt, &mut s, &format!("SELECT COUNT(*) FROM {table}")) as u64,
                rows,
                "{table} after a kill at {m:?}"
            );
        }
        assert_eq!(count(&rt, &mut s, indexes), all_indexes);
    }
    assert!(
        killed >= 2,
        "only {killed} of the kills at {moments:?} landed before the prepare finished"
    );
}

#[test]
fn load_validate_power_and_timeouts() {
    let db = sandbox();
    let url = db.url();
    let results = tempfile::tempdir().unwrap();
    // One runtime for the test: a session's socket belongs to the runtime that opened it.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let target = Target::parse(&url).unwrap();
    let mut s = rt
        .block_on(WireSession::connect(&target, IgnoreErrors::Codes(Default::default())))
        .unwrap();
    tpch_checks::prepare_sf001(&url, &mut |sql| count(&rt, &mut s, sql) as u64);
    assert_eq!(
        count(&rt, &mut s, "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND index_name = 'i_l_shipdate'"),
        1
    );
    // Loading again finds every part in and loads nothing; another scale is refused,
    // naming the one to repeat.
    let again = run_ok(dbperf().args(["tpch", "prepare", "--sf", "0.01", "--target", &url]));
    assert!(String::from_utf8_lossy(&again.stderr).contains("Resuming"));
    for (table, rows) in tpch_checks::SF001_ROWS {
        assert_eq!(
            count(&rt, &mut s, &format!("SELECT COUNT(*) FROM {table}")) as u64,
            rows,
            "{table}"
        );
    }
    let other = dbperf()
        .args(["tpch", "prepare", "--sf", "0.02", "--target", &url])
        .output()
        .unwrap();
    assert!(!other.status.success());
    assert!(String::from_utf8_lossy(&other.stderr).contains("sf=0.01"));

    // All 22 validation answers match the golden ones.
    tpch_checks::validate_golden(&url);

    // ... and those SQLite computes on the same data with the same parameters.
    tpch_sqlite::validate_against_sqlite(&url);

    // A power test: RF1, 22 queries, RF2, Power@Size, plans stored, the summary says seed,
    // SF and server version.
    let out = run_ok(
        dbperf()
            .args([
                "tpch",
                "power",
                "--seed",
                "101000000",
                "--target",
                &url,
                "--results-dir",
            ])
            .arg(results.path()),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("seed 101000000") && stdout.contains("SF 0.01") && stdout.contains("MariaDB"),
        "{stdout}"
    );
    assert!(stdout.contains("Power@Size "), "{stdout}");
    let run = only_run_dir(results.path());
    let tpch = read_json(&run.join("tpch.json"));
    assert_eq!(tpch["runs"][0]["queries"].as_array().unwrap().len(), 22);
    assert_eq!(
        tpch["runs"][0]["queries"][0]["query"], 14,
        "the power stream starts with Q14"
    );
    assert_eq!(tpch["runs"][0]["refresh_set"], 1);
    assert!(tpch["power_at_size"].as_f64().unwrap() > 0.0);
    assert!(tpch["queries"][0]["plan"].is_object(), "EXPLAIN FORMAT=JSON stored");
    assert_eq!(
        tpch["queries"][3]["params"][0], "1997-09-01",
        "qgen 2.17.3's Q4 for this seed"
    );
    assert_eq!(read_json(&run.join("manifest.json"))["seeds"]["qgen"], 101000000);
    // The run is in the results catalog, complete, with its 22 queries and 2 refreshes.
    let catalog = rusqlite::Connection::open(results.path().join("catalog.sqlite")).unwrap();
    let (queries, complete): (i64, i64) = catalog
        .query_row(
            "SELECT (SELECT COUNT(*) FROM tpch_queries), (SELECT complete FROM runs)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((queries, complete), (24, 1));
    // RF1 + RF2 leave as many orders as before.
    assert_eq!(count(&rt, &mut s, "SELECT COUNT(*) FROM orders"), 15000);

    // The throughput test: 2 streams and 2 refresh pairs; QphH@Size with the power run.
    let tp_results = tempfile::tempdir().unwrap();
    let out = run_ok(
        dbperf()
            .args([
                "tpch",
                "throughput",
                "--streams",
                "2",
                "--seed",
                "7",
                "--target",
                &url,
                "--power",
            ])
            .arg(&run)
            .arg("--results-dir")
            .arg(tp_results.path()),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Throughput@Size ") && stdout.contains("QphH@Size "),
        "{stdout}"
    );
    let tp = read_json(&only_run_dir(tp_results.path()).join("tpch.json"));
    assert_eq!(tp["streams"].as_array().unwrap().len(), 2);
    assert_eq!(
        tp["streams"][0]["queries"][0]["query"], 21,
        "stream 1's order starts with Q21"
    );
    assert_eq!(tp["refresh"].as_array().unwrap().len(), 2);
    assert_eq!(tp["refresh"][0]["set"], 2, "set 1 was used by the power run");
    assert_eq!(count(&rt, &mut s, "SELECT COUNT(*) FROM orders"), 15000);
    // dbgen's update sets 1..3 (10 orders each at SF 0.01) are in, their base orders gone.
    assert_eq!(
        count(&rt, &mut s, "SELECT COUNT(*) FROM orders WHERE (o_orderkey & 8) <> 0"),
        30
    );
    assert_eq!(
        count(
            &rt,
            &mut s,
            "SELECT COUNT(*) FROM orders WHERE o_orderkey < 100 AND (o_orderkey & 8) = 0"
        ),
        0
    );

    sharded_throughput_merges(&url, &tp);
    assert_eq!(count(&rt, &mut s, "SELECT COUNT(*) FROM orders"), 15000);

    // A tiny timeout: every query is cancelled on the server and the next one still runs.
    let (timed, tpch) = tpch_checks::power_with_tiny_timeout(&url, results.path(), &run);
    let timed = &timed;
    // The comparison table shows the timeouts as >T.
    let out = run_ok(dbperf().args(["tpch", "compare"]).arg(&run).arg(timed));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains(">0.000001"), "{table}");
    // The HTML report: per-query bars relative to the first run, timeouts marked.
    let html_path = results.path().join("tpch.html");
    let out = run_ok(
        dbperf()
            .arg("report")
            .arg(&run)
            .arg(timed)
            .arg("--html")
            .arg(&html_path),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(">0.000001"));
    let html = std::fs::read_to_string(&html_path).unwrap();
    let island = html
        .split("class=\"chart-data\" id=\"chart-1-data\">")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .expect("the bar chart's data");
    let bars: serde_json::Value = serde_json::from_str(island).unwrap();
    assert_eq!(bars["categories"].as_array().unwrap().len(), 22);
    assert_eq!(bars["band"], serde_json::json!([0.95, 1.05]));
    let baseline = bars["series"][0]["bars"].as_array().unwrap();
    assert!(
        baseline.iter().all(|b| b["value"] == 1.0),
        "the baseline is 1 on every query"
    );
    let other = bars["series"][1]["bars"].as_array().unwrap();
    let timeouts = tpch["queries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["timeouts"].as_u64() > Some(0));
    for q in timeouts {
        let i = q["query"].as_u64().unwrap() as usize - 1;
        assert_eq!(other[i]["timed_out"], ">0.000001s", "Q{}", i + 1);
    }

    // A query that would run for hours is killed on the server within its timeout.
    rt.block_on(async {
        let mut runner = QueryRunner::connect(&target).await.unwrap();
        let forever = Rendered {
            query: 9,
            setup: vec![],
            main: "SELECT COUNT(*) FROM lineitem a, lineitem b, lineitem c WHERE a.l_comment <> c.l_comment".into(),
            teardown: vec![],
        };
        let t0 = Instant::now();
        let e = runner.run(&forever, Some(Duration::from_millis(500))).await.unwrap();
        assert_eq!(e.status, Status::Timeout);
        assert!(t0.elapsed() < Duration::from_secs(60), "cancelled, not waited for");
        let running = s
            .query_rows("SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE '%lineitem a, lineitem b%' AND id <> CONNECTION_ID()")
            .await
            .unwrap();
        assert_eq!(
            running[0][0].as_deref(),
            Some("0"),
            "the statement is gone from the server"
        );
        let next = Rendered {
            query: 6,
            setup: vec![],
            main: "SELECT COUNT(*) FROM region".into(),
            teardown: vec![],
        };
        let e = runner.run(&next, Some(Duration::from_secs(60))).await.unwrap();
        assert_eq!((e.status, e.rows), (Status::Ok, vec![vec!["5".to_string()]]));
    });

    // --cold run: the sandbox is restarted (and the page cache dropped, or the result says
    // why not) before the run, and the queries run on the new server.
    let cold_results = tempfile::tempdir().unwrap();
    let pid_before = std::fs::read_to_string(db.home().root().join("servers/test/mysqld.pid")).ok();
    run_ok(
        dbperf()
            .env("DBPERF_HOME", db.home().root())
            .args([
                "tpch",
                "power",
                "--cold",
                "run",
                "--validation",
                "--no-refresh",
                "--no-explain",
            ])
            .args(["--target", "sandbox:test", "--results-dir"])
            .arg(cold_results.path()),
    );
    let cold = read_json(&only_run_dir(cold_results.path()).join("tpch.json"));
    assert_eq!(cold["cold"], "run");
    assert!(
        cold["runs"][0]["queries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|q| q["status"] == "ok"),
        "{cold}"
    );
    let pid_after = std::fs::read_to_string(db.home().root().join("servers/test/mysqld.pid")).ok();
    assert_ne!(pid_before, pid_after, "the server was restarted");
    // The old session is gone with the old server.
    s = rt
        .block_on(WireSession::connect(&target, IgnoreErrors::Codes(Default::default())))
        .unwrap();

    // --queries: only those, in the power test's order (Q6 comes before Q1), no Power@Size.
    let some_results = tempfile::tempdir().unwrap();
    run_ok(
        dbperf()
            .args(["tpch", "power", "--queries", "1,6", "--validation", "--no-explain"])
            .args(["--target", &url, "--results-dir"])
            .arg(some_results.path()),
    );
    let some = read_json(&only_run_dir(some_results.path()).join("tpch.json"));
    let ran: Vec<u64> = some["runs"][0]["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["query"].as_u64().unwrap())
        .collect();
    assert_eq!(ran, vec![6, 1], "{some}");
    assert_eq!(some["queries"].as_array().unwrap().len(), 2, "{some}");
    assert!(some["power_at_size"].is_null(), "{some}");
    let bad = dbperf()
        .args(["tpch", "power", "--queries", "1,23", "--target", &url])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("23 is not a TPC-H query"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );

    run_ok(dbperf().args(["tpch", "cleanup", "--target", &url]));
    assert_eq!(
        count(
            &rt,
            &mut s,
            "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()"
        ),
        0
    );
}

/// The reference is independent and the comparison can fail: SQLite's answers on the
/// generated SF 0.01 data equal the golden answers (dbperf's, from MariaDB) under the
/// spec's rules, and one value altered in any query's SQLite answer is a mismatch.
#[test]
fn sqlite_answers_match_the_golden_ones_and_one_altered_value_fails() {
    let params = stream_params(0.01, 0, 0, true);
    let sqlite = tpch_sqlite::answers(&tpch_sqlite::load(0.01), &params);
    let golden = tpch_checks::golden();
    assert_eq!(tpch_sqlite::mismatches(&sqlite, &golden), Vec::<String>::new());
    for q in 1..=22u8 {
        let mut wrong = sqlite.clone();
        let i = usize::from(q) - 1;
        wrong[i] = tpch_sqlite::altered(q, &sqlite[i]);
        let found = tpch_sqlite::mismatches(&wrong, &golden);
        assert_eq!(found.len(), 1, "Q{q} altered: {found:?}");
        assert!(found[0].starts_with(&format!("Q{q}: ")), "{found:?}");
    }
}

/// Ctrl-C during `tpch power --repeat N` keeps what was measured: the command stops after
/// the query in progress with status 130, `tpch.json` holds the queries that finished (no
/// Power@Size for the cut run) and says it was interrupted, and the catalog has the run with
/// the finished queries' figures.
#[test]
fn an_interrupted_power_test_keeps_its_finished_queries() {
    use std::io::{BufRead, BufReader};
    let db = sandbox();
    let url = db.url();
    let results = tempfile::tempdir().unwrap();
    run_ok(dbperf().args(["tpch", "prepare", "--sf", "0.01", "--target", &url]));
    let mut child = dbperf()
        .args(["tpch", "power", "--seed", "101000000", "--repeat", "50", "--no-explain"])
        .args(["--target", &url, "--results-dir"])
        .arg(results.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut finished = 0;
    let mut seen = Vec::new();
    while finished < 5 {
        let line = stderr.next().expect("power test ended before 5 queries").unwrap();
        finished += usize::from(line.starts_with("run 1: Q"));
        seen.push(line);
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let rest: Vec<String> = stderr.map_while(Result::ok).collect();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{stdout}\n{}\n{}",
        seen.join("\n"),
        rest.join("\n")
    );
    assert!(stdout.contains("Interrupted: the figures cover the"), "{stdout}");

    let run = only_run_dir(results.path());
    let tpch = read_json(&run.join("tpch.json"));
    assert_eq!(tpch["interrupted"], true, "{tpch}");
    let runs = tpch["runs"].as_array().unwrap();
    assert!(!runs.is_empty() && runs.len() < 50, "{} runs", runs.len());
    let first = runs[0]["queries"].as_array().unwrap();
    assert!(first.len() >= 5, "{} queries kept", first.len());
    assert_eq!(first[0]["query"], 14, "the power stream starts with Q14");
    assert!(tpch["queries"][13]["median"].as_f64().unwrap() > 0.0, "Q14's median");
    let last = runs.last().unwrap();
    if last["queries"].as_array().unwrap().len() < 22 {
        assert!(last["power_at_size"].is_null(), "{last}");
    }
    // RF1 ran, so RF2 ran too: the data is as loaded.
    assert_eq!(last["rf1_seconds"].is_null(), last["rf2_seconds"].is_null(), "{last}");

    let id = run.file_name().unwrap().to_str().unwrap();
    let sql = run_ok(
        dbperf()
            .args(["results", "sql"])
            .arg(format!(
                "SELECT name, value FROM metrics WHERE run_id = '{id}' AND name = 'q14'"
            ))
            .arg("--results-dir")
            .arg(results.path()),
    );
    let text = String::from_utf8_lossy(&sql.stdout);
    assert!(text.contains("q14"), "the catalog row and Q14's figure: {text}");
}

/// A 3-stream throughput test spread over two clients started together (shard 0: stream 1
/// and the refresh stream; shard 1: streams 2 and 3), merged by `dbperf merge` into one test:
/// every stream in the order the unsharded test `whole` gave it, Ts over both shards, and
/// Throughput@Size computed for the 3 streams, which neither shard's own report has. Merging
/// only one shard names the other as missing and exits 5.
fn sharded_throughput_merges(url: &str, whole: &serde_json::Value) {
    let tmp = tempfile::tempdir().unwrap();
    let shards = common::run_shards(2, &tmp.path().join("shards"), |_| {
        let mut c = dbperf();
        c.args(["tpch", "throughput", "--streams", "3", "--seed", "7", "--target", url]);
        c
    });
    for (_, text) in &shards {
        assert!(text.contains("Throughput@Size not computed: these are"), "{text}");
    }
    let dirs: Vec<std::path::PathBuf> = shards.into_iter().map(|(d, _)| d).collect();
    let own: Vec<serde_json::Value> = dirs.iter().map(|d| read_json(&d.join("tpch.json"))).collect();
    let streams_of = |r: &serde_json::Value| -> Vec<u64> {
        r["streams"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stream"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(streams_of(&own[0]), [1]);
    assert_eq!(streams_of(&own[1]), [2, 3]);
    assert_eq!(own[0]["refresh"].as_array().unwrap().len(), 3);
    assert!(own[1]["refresh"].as_array().unwrap().is_empty());
    assert!(own
        .iter()
        .all(|r| r["throughput_at_size"].is_null() && r["streams_total"] == 3));

    let (text, merged_dir) = common::merge_ok(&dirs, &tmp.path().join("merged"));
    assert!(
        text.contains("Throughput@Size ") && text.contains("3 of 3 streams"),
        "{text}"
    );
    let merged = read_json(&merged_dir.join("tpch.json"));
    assert_eq!(streams_of(&merged), [1, 2, 3]);
    let order = |r: &serde_json::Value, i: usize| -> Vec<u64> {
        r["streams"][i]["queries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["query"].as_u64().unwrap())
            .collect()
    };
    // Streams 1 and 2 run the orders (and seeds) of the unsharded test's streams 1 and 2.
    assert_eq!(order(&merged, 0), order(whole, 0));
    assert_eq!(order(&merged, 1), order(whole, 1));
    let ts = merged["ts_seconds"].as_f64().unwrap();
    let longest = merged["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["seconds"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(
        ts >= longest && ts < longest + 60.0,
        "Ts {ts}, longest stream {longest}"
    );
    let expected = 3.0 * 22.0 * 3600.0 * 0.01 / ts;
    let got = merged["throughput_at_size"].as_f64().unwrap();
    assert!((got - expected).abs() < 1e-6 * expected, "{got} vs {expected}");
    assert_eq!(merged["refresh"].as_array().unwrap().len(), 3);

    let partial = run_ok_or_5(
        dbperf()
            .arg("merge")
            .arg(&dirs[1])
            .arg("--results-dir")
            .arg(tmp.path().join("partial")),
    );
    let text = String::from_utf8_lossy(&partial.stdout);
    assert!(
        text.contains("shard 0  missing") && text.contains("Throughput@Size not computed"),
        "{text}"
    );
}

/// Runs `cmd`, which must exit with 5 (results incomplete).
fn run_ok_or_5(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(5), "{}", String::from_utf8_lossy(&out.stderr));
    out
}
