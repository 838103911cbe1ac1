//! The lab driving every workload kind against real sandboxed servers: the study examples
//! (TPC-C checkpoint stability, LinkBench across servers, DBT-3 power across servers) planned
//! and run with `--quick`, TPC-C points that all start from identical data and pass
//! `dbperf tpcc check`, a TPC-C lab interrupted with Ctrl-C and resumed, pgbench on two
//! PostgreSQL versions, and a sysbench Lua script (`kind = "lua"`) run through `dbperf lua`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{available, read_json, run_ok};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// `dbperf` with a private `$DBPERF_HOME` and the installed servers of the default home.
fn dbperf(home: &Path) -> Command {
    let dist = dbperf::server::SandboxHome::from_env().unwrap().dist_root().to_owned();
    let mut c = common::dbperf();
    c.env("DBPERF_HOME", home).env("DBPERF_DIST", dist);
    c
}

/// Manifests of every run directory under `results`.
fn manifests(results: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(results).unwrap() {
        let p = e.unwrap().path().join("manifest.json");
        if p.is_file() {
            out.push(read_json(&p));
        }
    }
    out
}

/// `lab run [ARGS] FILE` into `results`: its standard output.
fn lab_run(home: &Path, results: &Path, file: &Path, args: &[&str]) -> String {
    let out = run_ok(
        dbperf(home)
            .args(["lab", "run"])
            .args(args)
            .arg(file)
            .arg("--results-dir")
            .arg(results),
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `lab run --quick FILE [ARGS]` into `results`: its standard output.
fn lab_quick(home: &Path, results: &Path, file: &Path, args: &[&str]) -> String {
    let mut all = vec!["--quick"];
    all.extend_from_slice(args);
    lab_run(home, results, file, &all)
}

/// The `done` map of an experiment's state file.
fn done(results: &Path, experiment: &str) -> serde_json::Map<String, Value> {
    let state = read_json(&results.join("lab").join(experiment).join("state.json"));
    state["done"].as_object().unwrap().clone()
}

#[test]
fn the_study_examples_plan_with_prepares_and_restores() {
    let home = tempfile::tempdir().unwrap();
    for (name, want) in [
        ("tpcc-checkpoint-stability", "12 restore(s) between points"),
        ("linkbench-versions", "2 data set(s)"),
        ("dbt3-power-versions", "3 data set(s)"),
        ("sysbench-oltp-ro-versions", "3 server(s) x 3 variant(s) x 2 pinning(s)"),
        ("xtradb-flushing", "3 server(s) x 4 variant(s) x 1 pinning(s)"),
        ("remote-host", "3 server(s) x 1 variant(s) x 2 pinning(s)"),
        ("remote-client", "1 data set(s)"),
    ] {
        let f = examples().join(format!("{name}.toml"));
        let out = run_ok(dbperf(home.path()).args(["lab", "plan"]).arg(&f));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("estimated time") && text.contains("prepares"),
            "{name}: {text}"
        );
        assert!(text.contains(want), "{name}: {text}");
        let head = std::fs::read_to_string(&f).unwrap();
        assert!(head.starts_with("# Reproduces"), "{name}: the header names the study");
    }
}

#[test]
fn tpcc_example_runs_quick_and_reports_notpm() {
    if !["mariadb-10.1.23", "mysql-5.6.24"].iter().all(|id| available(id)) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let text = lab_quick(&home, &results, &examples().join("tpcc-checkpoint-stability.toml"), &[]);
    assert!(text.contains("complete: 12 run(s)"), "{text}");
    assert!(text.contains(" NOTPM ("), "the progress line shows NOTPM: {text}");
    let runs = done(&results, "tpcc-checkpoint-stability-quick");
    assert_eq!(runs.len(), 12);
    for r in runs.values() {
        assert_eq!(r["metric"], "notpm");
        assert!(r["value"].as_f64().unwrap() > 0.0, "{r}");
    }
    for m in manifests(&results) {
        assert_eq!(m["lab"]["kind"], "tpcc");
        assert_eq!(m["workload"]["name"], "tpcc");
        let snapshot = m["lab"]["snapshot"].as_str().unwrap();
        // One copy per server version (mysql-5.6.24; mariadb-10.1.23, shared by its two labels).
        assert!(
            snapshot.starts_with("mysql/tpcc-w1-") || snapshot.starts_with("xtradb-mysql-mode/tpcc-w1-"),
            "{snapshot}"
        );
    }
    // Without --metric the report judges TPC-C by NOTPM and explains every point.
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "report", "tpcc-checkpoint-stability-quick", "--results-dir"])
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}");
    assert!(text.contains("notpm (New-Orders/min"), "{text}");
    assert!(!text.contains("tps (trx/s"), "{text}");
    assert!(text.contains("max checkpoint age"), "{text}");
    for point in runs.keys() {
        // Rows are named by what varies: `SERVER · VARIANT · N users` (SERVER/VARIANT/tpcc/tN/r1).
        let parts: Vec<&str> = point.split('/').collect();
        let users = match &parts[3][1..] {
            "1" => "1 user".to_string(),
            n => format!("{n} users"),
        };
        let label = format!("| {} · {} · {users} ", parts[0], parts[1]);
        assert!(
            text.lines().any(|l| l.starts_with(&label) && l.contains("| notpm ")),
            "{point} has an explanation row ({label}) with its NOTPM average and CV: {text}"
        );
    }
}

#[test]
fn linkbench_example_runs_quick_on_two_servers() {
    if !["mariadb-10.1.23", "mysql-8.0.31"].iter().all(|id| available(id)) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let text = lab_quick(&home, &results, &examples().join("linkbench-versions.toml"), &[]);
    // mysql: 2 pool sizes x doublewrite OFF/ON; mariadb: the same and multi-threaded flushing
    // (its atomic-writes variants are excluded: this storage has none).
    assert!(text.contains("complete: 9 run(s)"), "{text}");
    assert!(text.contains(" rps, p95 "), "the progress line shows rps: {text}");
    let mut seen: Vec<(String, String)> = manifests(&results)
        .iter()
        .map(|m| {
            assert_eq!(m["lab"]["kind"], "linkbench");
            (
                m["lab"]["server"].as_str().unwrap().to_owned(),
                m["server"]["variables"]["innodb_doublewrite"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(seen.len(), 9);
    assert_eq!(seen[0].0, "mariadb");
    assert_eq!(seen[4].0, "mariadb");
    assert_eq!(seen[5].0, "mysql");
    assert_eq!(seen[8].0, "mysql");
    assert_ne!(
        seen[0].1, seen[4].1,
        "doublewrite differs between the variants: {seen:?}"
    );
}

#[test]
fn dbt3_example_runs_quick_cold_on_three_servers() {
    if !["mariadb-10.1.23", "mysql-5.6.24", "mysql-8.0.31"]
        .iter()
        .all(|id| available(id))
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let text = lab_quick(
        &home,
        &results,
        &examples().join("dbt3-power-versions.toml"),
        &["--only", "/default/"],
    );
    assert!(text.contains("complete: 3 run(s)"), "{text}");
    assert!(
        text.contains("geomean "),
        "the progress line shows the geometric mean: {text}"
    );
    let runs = done(&results, "dbt3-power-versions-quick");
    assert_eq!(runs.len(), 3);
    // Like for like: one qgen seed for the experiment, so every server ran the same query
    // text; no refresh functions (refresh = false in the file).
    let mut params = Vec::new();
    for r in runs.values() {
        assert_eq!(r["metric"], "geomean");
        assert!(r["value"].as_f64().unwrap() > 0.0, "{r}");
        let dir = PathBuf::from(r["run_dir"].as_str().unwrap());
        let tpch = read_json(&dir.join("tpch.json"));
        assert_eq!(tpch["cold"], "run", "quick makes caches cold per run");
        assert_eq!(tpch["queries"].as_array().unwrap().len(), 22);
        assert!(tpch["runs"][0]["rf1_seconds"].is_null(), "{}", tpch["runs"][0]);
        params.push((
            tpch["seed"].clone(),
            tpch["queries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|q| q["params"].clone())
                .collect::<Vec<_>>(),
        ));
        let manifest = read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["lab"]["kind"], "tpch");
        assert_eq!(manifest["lab"]["workload"], "tpch-power");
    }
    assert!(params.iter().all(|p| *p == params[0]), "{params:?}");
    // The report: per query, each server relative to the file's first server.
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "report", "dbt3-power-versions-quick", "--results-dir"])
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("relative to mariadb-10.1.23; under 5% is a draw"),
        "{text}"
    );
    let header = text.lines().find(|l| l.starts_with("query")).unwrap();
    let (a, b, c) = (
        header.find("mariadb-10.1.23 (s)").unwrap(),
        header.find("mysql-5.6.24").unwrap(),
        header.find("mysql-8.0.31").unwrap(),
    );
    assert!(a < b && b < c, "{header}");
    assert!(text.contains("Q22"), "{text}");
}

/// A TPC-C experiment of two variants and two user counts: four points on one data set.
fn tpcc_file(dir: &Path, name: &str, restore: &str) -> PathBuf {
    let f = dir.join(format!("{name}.toml"));
    std::fs::write(
        &f,
        format!(
            r#"name = "{name}"
duration = 2
report_interval = 1
prewarm = false
[[server]]
id = "mariadb-10.11"
settings = {{ innodb_buffer_pool_size = "128M" }}
[variants]
innodb_doublewrite = ["ON", "OFF"]
[[workload]]
kind = "tpcc"
warehouses = 1
users = [2, 4]
restore = "{restore}"
checksum = true
"#
        ),
    )
    .unwrap();
    f
}

/// Two labels of one server version with different buffer pools and doublewrite: one
/// LinkBench load, copied into both (the second label starts on the first one's copy and
/// logs in with its own benchmark account).
#[test]
fn labels_of_one_version_prepare_their_data_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let f = tmp.path().join("shared.toml");
    std::fs::write(
        &f,
        r#"name = "shared"
duration = 2
report_interval = 1
[[server]]
id = "mariadb-10.11"
label = "big"
settings = { innodb_buffer_pool_size = "128M" }
[[server]]
id = "mariadb-10.11"
label = "small"
settings = { innodb_buffer_pool_size = "32M", innodb_doublewrite = "OFF" }
[[workload]]
kind = "linkbench"
maxid1 = 2001
users = [2]
"#,
    )
    .unwrap();
    let text = lab_run(&home, &results, &f, &[]);
    assert_eq!(text.matches("== preparing data set").count(), 1, "{text}");
    assert!(text.contains("complete: 2 run(s)"), "{text}");
    let snapshots: Vec<String> = manifests(&results)
        .iter()
        .map(|m| m["lab"]["snapshot"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(snapshots.len(), 2);
    assert!(snapshots.iter().all(|s| s.starts_with("big/")), "{snapshots:?}");
}

/// Study 004's hinted query: one label of a server runs Q7 from its own `queries_dir` with
/// STRAIGHT_JOIN forcing a join order. Both labels share one data set and the experiment's qgen
/// seed; the hinted text's answer is checked against the standard text's, and `lab report`
/// names the text and shows that the plans differ. A hinted text that answers otherwise fails
/// its point (exit 4 of `tpch power`), and the lab says so.
#[test]
fn a_hinted_tpch_query_is_checked_and_its_plan_difference_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let hints = tmp.path().join("hints");
    std::fs::create_dir(&hints).unwrap();
    let standard = dbperf::workloads::tpch::queries::template(dbperf::driver::target::Family::Mysql, 7);
    // STRAIGHT_JOIN on the outer select: the derived table is merged into it, so the FROM
    // order below is the join order.
    let forced = standard
        .replacen("select supp_nation", "select straight_join supp_nation", 1)
        .replacen(
            "from supplier, lineitem, orders, customer, nation n1, nation n2",
            "from lineitem, orders, customer, supplier, nation n1, nation n2",
            1,
        );
    assert_ne!(forced, standard);
    std::fs::write(hints.join("7.sql"), &forced).unwrap();
    let f = tmp.path().join("hinted.toml");
    let file = |dir: &str| {
        format!(
            r#"name = "hinted"
[[server]]
id = "mariadb-10.11"
label = "plain"
[[server]]
id = "mariadb-10.11"
label = "hinted"
queries_dir = "{dir}"
[[workload]]
kind = "tpch"
scale_factor = 0.01
refresh = false
queries = [3, 7]
"#
        )
    };
    std::fs::write(&f, file("hints")).unwrap();
    let text = lab_run(&home, &results, &f, &[]);
    assert_eq!(text.matches("== preparing data set").count(), 1, "{text}");
    assert!(text.contains("complete: 2 run(s)"), "{text}");
    let mut queries = Vec::new();
    for r in done(&results, "hinted").values() {
        let tpch = read_json(&PathBuf::from(r["run_dir"].as_str().unwrap()).join("tpch.json"));
        let q: Vec<(Value, Value)> = tpch["queries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| (q["params"].clone(), q["text"]["same_answer"].clone()))
            .collect();
        queries.push(q);
    }
    assert_eq!(queries.len(), 2);
    let params = |q: &Vec<(Value, Value)>| q.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(
        params(&queries[0]),
        params(&queries[1]),
        "one seed: the same parameters"
    );
    let checked: Vec<&Value> = queries
        .iter()
        .flatten()
        .map(|(_, c)| c)
        .filter(|c| !c.is_null())
        .collect();
    assert_eq!(checked, vec![&Value::Bool(true)], "{queries:?}");
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "report", "hinted", "--results-dir"])
            .arg(&results),
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.contains(&format!("hinted: Q7 ran the text of {}", hints.join("7.sql").display())),
        "{report}"
    );
    assert!(report.contains("rows, as the standard text's"), "{report}");
    assert!(report.contains("Q7: the plans differ"), "{report}");
    assert!(!report.contains("Q3: the plans differ"), "{report}");
    let shapes: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("  plain: ") || l.starts_with("  hinted: "))
        .collect();
    assert_eq!(shapes.len(), 2, "{report}");
    assert!(
        shapes.iter().any(|l| l.starts_with("  hinted: lineitem:ALL")),
        "{shapes:?}"
    );

    // A text that answers otherwise: the point fails, its run kept, and the lab says why.
    let wrong = standard.replacen("and l_shipdate between", "and l_quantity < 0 and l_shipdate between", 1);
    std::fs::write(hints.join("7.sql"), wrong).unwrap();
    let out = dbperf(&home)
        .args(["lab", "run", "--restart"])
        .arg(&f)
        .arg("--results-dir")
        .arg(&results)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{all}");
    assert!(all.contains("another answer than the standard text's"), "{all}");
}

/// With tpcc-mysql's tables the lab draws a warehouse per transaction, as tpcc-mysql does: one
/// connection's payments reach every warehouse (each adds to its `w_ytd`), so the data set
/// (sized from the buffer pool: 3.6 x 128 MiB is 4 warehouses) is all in play.
#[test]
fn a_tpcc_mysql_lab_point_spreads_one_connection_over_every_warehouse() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let f = tmp.path().join("spread.toml");
    std::fs::write(
        &f,
        r#"name = "spread"
duration = 4
report_interval = 1
prewarm = false
[[server]]
id = "mariadb-10.11"
settings = { innodb_buffer_pool_size = "128M" }
[[workload]]
kind = "tpcc"
schema = "tpcc-mysql"
data_vs_buffer_pool = 3.6
users = [1]
"#,
    )
    .unwrap();
    let plan = String::from_utf8_lossy(&run_ok(dbperf(&home).args(["lab", "plan"]).arg(&f)).stdout).into_owned();
    assert!(plan.contains("tpcc-w4-tpcc-mysql"), "{plan}");
    run_ok(
        dbperf(&home)
            .args(["lab", "run"])
            .arg(&f)
            .arg("--results-dir")
            .arg(&results),
    );
    let m = &manifests(&results)[0];
    assert_eq!(m["workload"]["options"]["warehouse_choice"], "per-transaction", "{m}");
    assert_eq!(m["workload"]["options"]["warehouses"], 4, "{m}");
    let sandbox = "lab-spread-1";
    run_ok(dbperf(&home).args(["server", "start", "mariadb-10.11", "--name", sandbox]));
    let admin = dbperf::server::SandboxHome::at(&home).admin_defaults_file(sandbox);
    let paid = Command::new("mariadb")
        .arg(format!("--defaults-file={}", admin.display()))
        .args([
            "-N",
            "-e",
            "SELECT COUNT(*) FROM sbtest.warehouse WHERE w_ytd <> 300000",
        ])
        .output()
        .unwrap();
    let _ = dbperf(&home).args(["server", "stop", sandbox]).output();
    assert_eq!(
        String::from_utf8_lossy(&paid.stdout).trim(),
        "4",
        "payments reached every warehouse: {}",
        String::from_utf8_lossy(&paid.stderr)
    );
}

#[test]
fn tpcc_points_start_from_identical_data_and_pass_check() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let run = |name: &str, restore: &str| {
        let f = tpcc_file(tmp.path(), name, restore);
        let out = run_ok(
            dbperf(&home)
                .args(["lab", "run"])
                .arg(&f)
                .arg("--results-dir")
                .arg(&results),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = run("same-data", "point");
    assert!(text.contains("complete: 4 run(s)"), "{text}");
    let checksums = |experiment: &str| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = manifests(&results)
            .into_iter()
            .filter(|m| m["lab"]["experiment"] == experiment)
            .map(|m| {
                (
                    m["lab"]["snapshot"].as_str().unwrap().to_owned(),
                    m["lab"]["data_checksum"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let same = checksums("same-data");
    assert_eq!(same.len(), 4);
    for (snapshot, sum) in &same {
        assert!(
            !snapshot.contains('+'),
            "every point starts on a fresh copy: {snapshot}"
        );
        assert!(sum.contains("order_line=") && sum.contains("stock="), "{sum}");
        assert_eq!(sum, &same[0].1, "every point starts from identical tables: {same:?}");
    }

    // The last point's data is consistent (TPC-C clause 3.3.2).
    let sandbox = "lab-same-data-1";
    run_ok(dbperf(&home).args(["server", "start", "mariadb-10.11", "--name", sandbox]));
    let check = dbperf(&home)
        .args(["tpcc", "check", "--target"])
        .arg(format!("sandbox:{sandbox}"))
        .output()
        .unwrap();
    let _ = dbperf(&home).args(["server", "stop", sandbox]).output();
    assert!(
        check.status.success(),
        "tpcc check after the lab: {}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );

    // Without a restore per point, the second point of a server start sees the first one's
    // changes: the checksum tells them apart (so the check above can fail).
    let text = run("changed-data", "variant");
    assert!(text.contains("complete: 4 run(s)"), "{text}");
    let changed = checksums("changed-data");
    let fresh: Vec<&(String, String)> = changed.iter().filter(|(s, _)| !s.contains('+')).collect();
    let after: Vec<&(String, String)> = changed.iter().filter(|(s, _)| s.ends_with("+1")).collect();
    assert_eq!((fresh.len(), after.len()), (2, 2), "{changed:?}");
    // (Another experiment prepares its own copy: TPC-C's load stamps rows with the time.)
    assert_eq!(
        fresh[0].1, fresh[1].1,
        "each server start begins on the snapshot: {changed:?}"
    );
    for (_, sum) in &after {
        assert_ne!(sum, &fresh[0].1, "{changed:?}");
    }
}

#[test]
fn an_interrupted_tpcc_lab_resumes_where_it_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = tpcc_file(tmp.path(), "tpcc-resume", "point");
    let mut cmd = dbperf(&home);
    cmd.args(["lab", "run"]).arg(&file).arg("--results-dir").arg(&results);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let state_file = results.join("lab/tpcc-resume/state.json");
    let started = Instant::now();
    loop {
        let n = std::fs::read(&state_file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map_or(0, |s| s["done"].as_object().map_or(0, |d| d.len()));
        if n >= 1 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: plain kill of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let first = done(&results, "tpcc-resume");
    assert!((1..4).contains(&first.len()), "{first:?}");

    let text = lab_run(&home, &results, &file, &[]);
    assert!(
        text.contains(&format!("{} of 4 runs already done", first.len())),
        "{text}"
    );
    assert!(!text.contains("== preparing"), "the data set is reused: {text}");
    let all = done(&results, "tpcc-resume");
    assert_eq!(all.len(), 4);
    for (id, run) in &first {
        assert_eq!(all[id]["run_id"], run["run_id"], "finished points are not run again");
    }
    // Every point of the resumed lab, before and after the interruption, started from the
    // same data.
    let sums: Vec<String> = all
        .values()
        .map(|r| {
            let m = read_json(&PathBuf::from(r["run_dir"].as_str().unwrap()).join("manifest.json"));
            m["lab"]["data_checksum"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(sums.iter().all(|s| s == &sums[0]), "{sums:?}");
}

/// pgbench in the lab on two PostgreSQL versions: each server's data set initialised once,
/// every point restored from it (the manifest names the snapshot), judged by tps.
#[test]
fn a_pgbench_lab_runs_on_two_postgres_versions() {
    if !["postgres-15", "postgres-17"].iter().all(|id| available(id)) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = tmp.path().join("pgbench-versions.toml");
    std::fs::write(
        &file,
        r#"name = "pgbench-versions"
duration = 2
report_interval = 1
prewarm = false
[[server]]
id = "postgres-17"
settings = { shared_buffers = "64MB" }
[[server]]
id = "postgres-15"
settings = { shared_buffers = "64MB" }
[[workload]]
kind = "pgbench"
scale = 1
script = "tpcb-like"
users = [1, 2]
"#,
    )
    .unwrap();
    let text = lab_run(&home, &results, &file, &[]);
    assert!(text.contains("complete: 4 run(s)"), "{text}");
    let runs = done(&results, "pgbench-versions");
    assert_eq!(runs.len(), 4);
    for r in runs.values() {
        assert_eq!(r["metric"], "tps", "{r}");
        assert!(r["value"].as_f64().unwrap() > 0.0, "{r}");
    }
    let ms = manifests(&results);
    assert_eq!(ms.len(), 4);
    for m in &ms {
        assert_eq!(m["lab"]["kind"], "pgbench", "{m}");
        let snapshot = m["lab"]["snapshot"].as_str().unwrap_or_default();
        let server = m["lab"]["server"].as_str().unwrap();
        assert!(snapshot.starts_with(&format!("{server}/")), "{m}");
    }
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "report", "pgbench-versions", "--no-explain", "--results-dir"])
            .arg(&results),
    );
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{report}");
    let header = report
        .lines()
        .find(|l| l.contains("postgres-15") && l.contains("postgres-17"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        header.find("postgres-17").unwrap() < header.find("postgres-15").unwrap(),
        "the file's first server is the first column: {report}"
    );
}

/// A sysbench Lua script in the lab: its data set prepared by the script's own prepare, the run
/// a `dbperf lua` run directory that counted transactions, and `lab report` showing it.
#[test]
fn a_lua_script_runs_in_the_lab_and_is_reported() {
    let script = Path::new("/usr/share/sysbench/oltp_point_select.lua");
    if !available("mariadb-10.11")
        || !common::present_or_skip(
            script.is_file(),
            "sysbench's scripts are not installed (apt-get install -y sysbench)",
        )
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = tmp.path().join("lua-point-select.toml");
    std::fs::write(
        &file,
        r#"name = "lua-point-select"
duration = 2
report_interval = 1
[[server]]
id = "mariadb-10.11"
settings = { innodb_buffer_pool_size = "64M" }
[[workload]]
kind = "lua"
script = "oltp_point_select"
options = { table_size = 1000 }
users = [1]
"#,
    )
    .unwrap();
    let started = Instant::now();
    let text = lab_run(&home, &results, &file, &[]);
    assert!(text.contains("complete: 1 run(s)"), "{text}");
    assert!(
        text.contains("== preparing data set lua-oltp_common-table_size=1000"),
        "{text}"
    );
    let runs = done(&results, "lua-point-select");
    let run = &runs["mariadb-10.11/default/lua-oltp_point_select/t1/r1"];
    let dir = PathBuf::from(run["run_dir"].as_str().unwrap());
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["workload"], "lua_oltp_point_select", "{summary}");
    let trx = summary["transactions"]["total"].as_u64().unwrap();
    assert!(trx > 0, "{summary}");
    // Every transaction is one primary-key SELECT on the prepared table.
    assert!(summary["queries"]["read"].as_u64().unwrap() >= trx, "{summary}");
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["lab"]["kind"], "lua", "{m}");
    assert_eq!(m["workload"]["options"]["script_options"]["table_size"], 1000.0, "{m}");
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "report", "lua-point-select", "--no-explain", "--results-dir"])
            .arg(&results),
    );
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{report}");
    assert!(report.contains("lua_oltp_point_select: tps (trx/s"), "{report}");
    let row = report
        .lines()
        .find(|l| l.starts_with("|       1 |"))
        .unwrap_or_else(|| panic!("no row for 1 thread: {report}"));
    let tps: f64 = row
        .trim_matches(|c| c == '|' || c == ' ')
        .rsplit('|')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let recorded = summary["transactions"]["per_sec"].as_f64().unwrap();
    assert!(
        (tps - recorded).abs() <= 0.1,
        "the report shows the run's tps: {tps} vs {recorded}"
    );
    eprintln!("lua lab test took {:?}", started.elapsed());
}
