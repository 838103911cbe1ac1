//! `dbperf compare` and the results catalog against real runs: two short runs on sandboxes
//! that differ only in `sort_buffer_size` and `performance_schema` (one server at a time).

use std::path::{Path, PathBuf};

use dbperf::server::testing::TempSandbox;
use serde_json::Value;

mod common;
use common::{dbperf, run_dirs, run_ok};

/// Starts a sandbox with `settings`, prepares a tiny table, runs 2 s, stops the sandbox, and
/// returns the new run directory under `results`.
fn short_run(results: &Path, settings: &[&str]) -> PathBuf {
    let before = run_dirs(results);
    let sb = TempSandbox::start_with(settings).expect("a sandboxed MariaDB starts (apt-get install -y mariadb-server)");
    let common = ["--tables=1", "--table-size=1000", "--target"];
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_point_select", "prepare"])
            .args(common)
            .arg(sb.url()),
    );
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_point_select", "run", "--time=2", "--threads=2"])
            .args(common)
            .arg(sb.url())
            .arg("--results-dir")
            .arg(results),
    );
    drop(sb);
    let new: Vec<PathBuf> = run_dirs(results).into_iter().filter(|d| !before.contains(d)).collect();
    assert_eq!(new.len(), 1, "{new:?}");
    new[0].clone()
}

#[test]
fn compare_warns_on_exactly_the_distorting_differences_and_the_catalog_has_both_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let a = short_run(&results, &["sort_buffer_size=262144", "performance_schema=OFF"]);
    let b = short_run(&results, &["sort_buffer_size=4194304", "performance_schema=ON"]);

    // By path: the setup block comes first, with the host's CPUs, the buffer pool the runs
    // had, and what differs per column.
    let out = run_ok(dbperf().arg("compare").arg(&a).arg(&b));
    let all = String::from_utf8(out.stdout).unwrap();
    eprintln!("{all}");
    let (setup, text) = all.split_once("\n\n").unwrap();
    let manifest = common::read_json(&a.join("manifest.json"));
    let cpus = manifest["host"]["logical_cpus"].as_u64().unwrap();
    let pool: u64 = manifest["server"]["variables"]["innodb_buffer_pool_size"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(setup.starts_with("Setup (2 runs; shown per column"), "{setup}");
    assert!(setup.contains(&format!("{cpus} logical")), "{setup}");
    let pool_line = setup.lines().find(|l| l.contains("innodb_buffer_pool_size")).unwrap();
    assert!(
        pool_line.ends_with(&format!(" {}", dbperf::report::setup::bytes(pool))),
        "{setup}"
    );
    let ps_line = setup.lines().find(|l| l.contains("performance_schema")).unwrap();
    assert!(ps_line.contains("OFF (") && ps_line.contains(" vs ON ("), "{setup}");
    // Then the WARNING block, naming exactly the two variables.
    assert!(text.starts_with("WARNING"), "{text}");
    let block: Vec<&str> = text
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.contains("apples to apples"))
        .collect();
    let named: Vec<&str> = block.iter().map(|l| l.trim().split(':').next().unwrap()).collect();
    assert_eq!(named, ["performance_schema", "sort_buffer_size"], "{text}");
    // Nothing else differs between the two sandboxes but paths and ids, which are not listed;
    // the performance_schema_* sizes follow performance_schema and are folded into one line.
    assert!(!text.contains("Other server variables that differ"), "{text}");
    assert!(
        !text.contains("pid_file") && !text.contains("datadir") && !text.contains("server_uid"),
        "{text}"
    );
    assert!(text.contains("differ along with the ones above"), "{text}");
    assert!(text.contains("Rule: "), "{text}");
    // What each run's server did, from its telemetry, beside the numbers.
    assert!(text.contains("Inside the server"), "{text}");
    for figure in [
        "stalls (analyze)",
        "checkpoint age max (% of max)",
        "time in sync flush",
        "client CPU max",
    ] {
        assert!(text.contains(figure), "{figure}: {text}");
    }

    // By run id, through the catalog, as JSON.
    let id = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
    let out = run_ok(
        dbperf()
            .args(["compare", &id(&a), &id(&b), "--format", "json", "--results-dir"])
            .arg(&results),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warned: Vec<&str> = v["variables"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(warned, ["performance_schema", "sort_buffer_size"]);
    assert_eq!(v["by"], "run");
    assert_eq!(v["rows"][0]["threads"], 2);
    let inside = v["inside"].as_array().unwrap();
    assert_eq!(inside.len(), 2, "{v}");
    for column in inside {
        assert_eq!(
            (&column["runs"], &column["analysed"], &column["with_telemetry"]),
            (&1.into(), &1.into(), &1.into())
        );
        assert!(column["checkpoint_max_pct"].as_f64().is_some(), "{column}");
    }

    // The catalog, as a user would query it with sqlite3.
    let db = rusqlite::Connection::open(results.join("catalog.sqlite")).unwrap();
    let mut stmt = db
        .prepare("SELECT run_id, tps FROM runs WHERE complete = 1 AND workload = 'oltp_point_select' ORDER BY run_id")
        .unwrap();
    let rows: Vec<(String, f64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut ids = vec![id(&a), id(&b)];
    ids.sort();
    assert_eq!(rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(), ids);
    assert!(rows.iter().all(|r| r.1 > 0.0), "{rows:?}");
    let sort: String = db
        .query_row(
            "SELECT value FROM variables WHERE run_id = ?1 AND name = 'sort_buffer_size'",
            [id(&b)],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(sort, "4194304");

    // Bad input: an unknown run id is named, with the fix.
    let out = dbperf()
        .args(["compare", &id(&a), "no-such-run", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("unknown run \"no-such-run\""), "{err}");
}
