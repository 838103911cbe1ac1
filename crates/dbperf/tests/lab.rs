//! `dbperf lab` as a user runs it: the shipped example experiments planned and run short
//! against real sandboxed servers, interrupted and resumed, and malformed files refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{available, read_json, run_ok};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// `dbperf` with a private `$DBPERF_HOME`.
fn dbperf(home: &Path) -> Command {
    let mut c = common::dbperf();
    c.env("DBPERF_HOME", home);
    c
}

/// [`dbperf`] with the servers installed in the default home (none installed again).
fn dbperf_installed(home: &Path) -> Command {
    let dist = dbperf::server::SandboxHome::from_env().unwrap().dist_root().to_owned();
    let mut c = dbperf(home);
    c.env("DBPERF_DIST", dist);
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

#[test]
fn every_example_plans() {
    let home = tempfile::tempdir().unwrap();
    for f in std::fs::read_dir(examples()).unwrap() {
        let f = f.unwrap().path();
        if f.extension().is_some_and(|e| e == "toml") {
            let out = run_ok(dbperf(home.path()).args(["lab", "plan"]).arg(&f));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("estimated time"), "{}: {text}", f.display());
        }
    }
}

#[test]
fn a_search_file_plans_is_not_run_by_lab_run_and_its_parameters_are_checked_against_the_server() {
    let home = tempfile::tempdir().unwrap();
    let file = examples().join("tune-dirty-pages.toml");
    let out = run_ok(dbperf(home.path()).args(["lab", "plan"]).arg(&file));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "a settings search",
        "max notpm on mariadb-10.11, tpcc at 32 users",
        "innodb_io_capacity          100 .. 20000, whole numbers, log scale",
        "budget: 30 trials; seed 1",
    ] {
        assert!(text.contains(line), "{line:?} missing from\n{text}");
    }
    let out = dbperf(home.path()).args(["lab", "run"]).arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("has a [search]") && err.contains("`lab run` cannot run them"),
        "{err}"
    );
    // A misspelt parameter is named, with the server's nearest names, where the server is
    // installed (the plan of an uninstalled server only notes it).
    let dir = tempfile::tempdir().unwrap();
    let misspelt = dir.path().join("tune.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &misspelt,
        text.replace("innodb_flush_neighbors =", "innodb_flush_neighbours ="),
    )
    .unwrap();
    if available("mariadb-10.11") {
        let out = dbperf(home.path())
            .args(["lab", "plan"])
            .arg(&misspelt)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("[search] parameters") && err.contains("innodb_flush_neighbors"),
            "{err}"
        );
    }
}

/// A variant that applies to named servers only is checked on those servers only: a setting
/// one product has (MariaDB's Aria page cache) plans when the variant names the MariaDB server,
/// and is refused, naming the variant and the server, when it would run on MySQL too.
#[test]
fn a_variant_setting_is_checked_only_on_the_servers_it_runs_on() {
    if !available("mysql-8.0.31") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("only.toml");
    let file = |servers: &str| {
        format!(
            "[[server]]\nid = \"mariadb-10.11\"\n[[server]]\nid = \"mysql-8.0.31\"\n[[variant]]\nname = \"aria\"\n\
             {servers}settings = {{ aria_pagecache_buffer_size = \"8M\" }}\n[[variant]]\nname = \"plain\"\n\
             [[workload]]\ntest = \"oltp_read_only\"\ntables = 1\ntable_size = 1000\nusers = [1]\n"
        )
    };
    std::fs::write(&f, file("servers = [\"mariadb-10.11\"]\n")).unwrap();
    run_ok(dbperf_installed(tmp.path()).args(["lab", "plan"]).arg(&f));
    std::fs::write(&f, file("")).unwrap();
    let out = dbperf_installed(tmp.path())
        .args(["lab", "plan"])
        .arg(&f)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("variant \"aria\" on server \"mysql-8.0.31\"") && err.contains("aria_pagecache_buffer_size"),
        "{err}"
    );
}

#[test]
fn malformed_files_get_file_line_column() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(
        &f,
        "repetitions = 2\n[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\ntest = \"oltp_read_only\"\nuser = [1, 8]\n",
    )
    .unwrap();
    let out = dbperf(dir.path()).args(["lab", "plan"]).arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml:6:1:") && err.contains("unknown field `user`"),
        "{err}"
    );
    assert!(err.contains("`users`"), "the message lists what was expected: {err}");
}

#[test]
fn pinning_example_runs_short_and_labels_its_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "run", "--quick"])
            .arg(examples().join("pinning.toml"))
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("complete: 4 run(s)"), "{text}");
    let m = manifests(&results);
    assert_eq!(m.len(), 4);
    let mut seen: Vec<(String, u64)> = m
        .iter()
        .map(|m| {
            let lab = &m["lab"];
            assert_eq!(lab["experiment"], "pinning-quick");
            (
                lab["pinning"].as_str().unwrap().to_owned(),
                lab["threads"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("separate".to_string(), 1),
            ("separate".to_string(), 4),
            ("shared".to_string(), 1),
            ("shared".to_string(), 4)
        ]
    );
    let separate = m.iter().find(|m| m["lab"]["pinning"] == "separate").unwrap();
    assert_eq!(separate["lab"]["server_cpus"], "0");
    assert_eq!(separate["lab"]["client_cpus"], "1");
    // The report's setup block names the host's CPUs, the buffer pool the runs had (the
    // example's 512M) and each column's pinning.
    let cpus = separate["host"]["logical_cpus"].as_u64().unwrap();
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "report", "pinning-quick", "--results-dir"])
            .arg(&results),
    );
    let report = String::from_utf8_lossy(&out.stdout);
    let setup = report.split("\n\n").next().unwrap();
    assert!(setup.starts_with("Setup (4 runs"), "{report}");
    assert!(
        setup.contains("CPUs  ") && setup.contains(&format!("{cpus} logical")),
        "{setup}"
    );
    assert!(
        setup
            .lines()
            .any(|l| l.contains("innodb_buffer_pool_size") && l.ends_with(" 512 MiB")),
        "{setup}"
    );
    assert!(
        setup.contains("separate: server CPUs 0, client CPUs 1 (separate)"),
        "{setup}"
    );
    // The sandbox is stopped at the end.
    let list = run_ok(dbperf(&home).args(["server", "list"]));
    assert!(!String::from_utf8_lossy(&list.stdout).contains("running"));
}

/// The demo (`make demo` runs examples/demo.toml): its smoke test runs both settings twice
/// at two user counts, each point after a write settled first; the finished experiment reopens
/// by name, by its directory and through `compare --experiment`, with a relative column for
/// flush=2 against flush=1 and no unequal start states.
#[test]
fn the_demo_is_an_experiment_that_reopens_by_name_directory_and_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "run", "--quick"])
            .arg(examples().join("demo.toml"))
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("complete: 4 run(s)"), "{text}");
    let logs = results.join("lab").join("demo-quick").join("logs");
    let settled = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .filter(|log| log.lines().any(|l| l.starts_with("settle: settled after")))
        .count();
    assert_eq!(settled, 4, "every point of a writing workload settles first");
    let html = tmp.path().join("demo.html");
    let by_name = run_ok(
        dbperf(&home)
            .args(["report", "demo-quick", "--html"])
            .arg(&html)
            .arg("--results-dir")
            .arg(&results),
    );
    let report = String::from_utf8_lossy(&by_name.stdout).into_owned();
    let warnings = String::from_utf8_lossy(&by_name.stderr).into_owned();
    assert!(
        report.contains("baseline: flush=1") && report.contains("flush=2"),
        "{report}"
    );
    assert!(
        !report.contains("unequal_start_state") && !report.contains("started in different states"),
        "{report}"
    );
    assert!(!warnings.contains("error"), "{warnings}");
    let size = std::fs::metadata(&html).unwrap().len();
    assert!(size < 1_500_000, "the HTML report is {size} bytes");
    let by_dir = run_ok(dbperf(&home).arg("report").arg(results.join("lab").join("demo-quick")));
    assert_eq!(String::from_utf8_lossy(&by_dir.stdout), report);
    let compared = run_ok(
        dbperf(&home)
            .args(["compare", "--experiment", "demo-quick", "--results-dir"])
            .arg(&results),
    );
    let compared = String::from_utf8_lossy(&compared.stdout);
    assert!(compared.contains("flush=2"), "{compared}");
}

/// What the studies worked out by hand across points, in `lab report`: the headline figure's
/// gain over the server CPUs added from one pinning to the other (study 003), and each server's
/// wait profile beside the other's (study 000), from the runs' own telemetry.
#[test]
fn scaling_over_pinnings_and_wait_profiles_are_worked_out_across_points() {
    if !available("mysql-8.0.31") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let f = tmp.path().join("across.toml");
    std::fs::write(
        &f,
        r#"name = "across"
duration = 3
report_interval = 1
[[server]]
id = "mariadb-10.11"
settings = { performance_schema = "ON" }
[[server]]
id = "mysql-8.0.31"
[[pinning]]
name = "one"
server_cpus = "0"
client_cpus = "1"
[[pinning]]
name = "two"
server_cpus = "0-1"
client_cpus = "1"
[[workload]]
test = "oltp_read_write"
tables = 1
table_size = 5000
users = [2]
"#,
    )
    .unwrap();
    let out = run_ok(
        dbperf_installed(&home)
            .args(["lab", "run"])
            .arg(&f)
            .arg("--results-dir")
            .arg(&results),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("complete: 4 run(s)"));
    let out = run_ok(
        dbperf_installed(&home)
            .args(["lab", "report", "across", "--results-dir"])
            .arg(&results),
    );
    let report = String::from_utf8_lossy(&out.stdout);
    let after = |title: &str| -> Vec<String> {
        report
            .split(title)
            .nth(1)
            .unwrap_or_else(|| panic!("no {title:?} in {report}"))
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .map(str::to_owned)
            .collect()
    };
    let scaling = after("Scaling across pinnings");
    assert_eq!(scaling.len(), 2, "{report}");
    for (line, server) in scaling.iter().zip(["mariadb-10.11", "mysql-8.0.31"]) {
        assert!(
            line.starts_with(&format!(
                "  {server} · default · 2 users: two (2 CPUs) against one (1): "
            )) && line.contains("tps for +100% CPUs")
                && line.ends_with("% efficient"),
            "{line}"
        );
    }
    let waits = after("Wait profile by server");
    assert!(
        waits[0].contains("mariadb-10.11") && waits[0].contains("mysql-8.0.31"),
        "{report}"
    );
    assert!(
        waits.len() >= 2 && waits[1..].iter().all(|l| l.contains('%')),
        "{report}"
    );
}

#[test]
fn an_interrupted_sweep_resumes_where_it_stopped() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = examples().join("checkpoint-stability.toml");
    // Three variants (io_capacity 200 with doublewrite OFF) x 2 user counts.
    let args = |c: &mut Command| {
        c.args(["lab", "run", "--quick", "--only", "doublewrite=OFF,io_capacity=200,"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results);
    };
    let mut cmd = dbperf(&home);
    args(&mut cmd);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let state_file = results.join("lab/checkpoint-stability-quick/state.json");
    let started = Instant::now();
    loop {
        let done = std::fs::read(&state_file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map_or(0, |s| s["done"].as_object().map_or(0, |d| d.len()));
        if done >= 2 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: plain kill of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let first: Value = read_json(&state_file);
    let done_first = first["done"].as_object().unwrap().len();
    assert!((2..6).contains(&done_first), "{first}");

    let mut cmd = dbperf(&home);
    args(&mut cmd);
    let out = run_ok(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{done_first} of 6 runs already done")), "{text}");
    assert!(
        !text.contains("== preparing"),
        "the data set is reused, not prepared again: {text}"
    );
    let state = read_json(&state_file);
    let done = state["done"].as_object().unwrap();
    assert_eq!(done.len(), 6);
    // The runs from before the interruption are the same runs, not redone.
    for (id, run) in first["done"].as_object().unwrap() {
        assert_eq!(done[id]["run_id"], run["run_id"]);
    }
    // Every finished point has its run directory; the run the interrupt cut short is kept too.
    let dirs = manifests(&results).len();
    assert!((6..=7).contains(&dirs), "{dirs} run directories");
    for d in done.values() {
        let dir = PathBuf::from(d["run_dir"].as_str().unwrap());
        let summary = read_json(&dir.join("summary.json"));
        assert!(summary["transactions"]["total"].as_u64().unwrap() > 0);
        let manifest = read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["server"]["variables"]["innodb_doublewrite"], "OFF");
        assert_eq!(manifest["server"]["variables"]["innodb_io_capacity"], "200");
        let dirty = &manifest["lab"]["variant_settings"]["innodb_max_dirty_pages_pct"];
        let pct: f64 = manifest["server"]["variables"]["innodb_max_dirty_pages_pct"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(pct, dirty.as_str().unwrap().parse::<f64>().unwrap());
    }
}

#[test]
fn versions_example_runs_short_on_three_servers_and_reports_them() {
    if !["mariadb-11.4.5", "mysql-8.0.31"].iter().all(|id| available(id)) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    // Installed servers live in the default home's dist (where `make deps-servers` put them);
    // sandboxes and prepared data go to a private home.
    let home = tmp.path().join("home");
    let dist = dbperf::server::SandboxHome::from_env().unwrap().dist_root().to_owned();
    let run = |args: &[&str]| {
        let mut c = dbperf(&home);
        c.env("DBPERF_DIST", &dist)
            .args(args)
            .arg("--results-dir")
            .arg(&results);
        run_ok(&mut c)
    };
    let file = examples().join("oltp-ro-versions.toml");
    let out = run(&["lab", "run", "--quick", file.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("complete: 6 run(s)"));
    let versions: Vec<String> = manifests(&results)
        .iter()
        .map(|m| m["server"]["version"].as_str().unwrap().to_owned())
        .collect();
    assert!(versions.iter().any(|v| v.starts_with("8.0.31")), "{versions:?}");
    assert!(versions.iter().any(|v| v.starts_with("11.4.5")), "{versions:?}");
    assert!(versions.iter().any(|v| v.starts_with("10.11.")), "{versions:?}");

    let out = run(&["lab", "report", "oltp-ro-versions-quick", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&out.stdout);
    for server in ["mariadb-10.11", "mariadb-11.4.5", "mysql-8.0.31"] {
        assert_eq!(
            csv.matches(&format!(",{server},")).count(),
            2,
            "{server} at 2 user counts:\n{csv}"
        );
    }
    // The example sets the distorting defaults alike, so there is nothing to warn about.
    let out = run(&["lab", "report", "oltp-ro-versions-quick"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("WARNING"), "{text}");
}

/// The `dbperf` children of process `parent` running now: (argv, environment), from `/proc`.
fn dbperf_children(parent: u32) -> Vec<(Vec<String>, Vec<String>)> {
    let split = |bytes: Vec<u8>| -> Vec<String> {
        bytes
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    };
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let dir = entry.path();
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let ppid = stat[stat.rfind(')').unwrap_or(0) + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid != Some(parent) {
            continue;
        }
        let (Ok(cmdline), Ok(environ)) = (std::fs::read(dir.join("cmdline")), std::fs::read(dir.join("environ")))
        else {
            continue;
        };
        let argv = split(cmdline);
        if argv.get(1).map(String::as_str) == Some("sysbench") {
            out.push((argv, split(environ)));
        }
    }
    out
}

#[test]
fn lab_children_get_their_target_from_the_environment_not_argv() {
    if !available("mariadb-10.11") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = tmp.path().join("argv.toml");
    std::fs::write(
        &file,
        "duration = 2\nreport_interval = 1\n[[server]]\nid = \"mariadb-10.11\"\n\
         [[workload]]\ntest = \"oltp_point_select\"\ntables = 1\ntable_size = 1000\nusers = [2]\n",
    )
    .unwrap();
    let mut lab = dbperf(&home)
        .args(["lab", "run"])
        .arg(&file)
        .arg("--results-dir")
        .arg(&results)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let started = Instant::now();
    let status = loop {
        for child in dbperf_children(lab.id()) {
            if !seen.iter().any(|(argv, _)| *argv == child.0) {
                seen.push(child);
            }
        }
        if let Some(status) = lab.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(240), "the lab run does not end");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "lab run failed: {status}");
    let commands: Vec<&str> = seen.iter().map(|(argv, _)| argv[3].as_str()).collect();
    assert!(commands.contains(&"run"), "no run child seen: {commands:?}");
    for (argv, env) in &seen {
        // Neither the URL nor any part of it: a password would show in everybody's `ps`.
        assert!(
            argv.iter()
                .all(|a| !a.starts_with("--target") && !a.contains("://") && !a.contains("password")),
            "{argv:?}"
        );
        assert!(
            env.iter().any(|v| v.starts_with("DBPERF_TARGET=mysql://")),
            "{argv:?} got no DBPERF_TARGET"
        );
    }
}

/// A short search: the buffer pool and flush_neighbors for read-only sysbench, four trials.
const SMOKE_SEARCH: &str = r#"name = "tune-smoke"
duration = "2s"
warmup = "0s"
report_interval = "1s"

[[server]]
id = "mariadb-10.11"

[[workload]]
test = "oltp_read_only"
tables = 1
table_size = 2000
users = [2]

[search]
objective = "max tps"
trials = 4
seed = 11
constraints = ["cv <= 90%"]

[search.parameters]
innodb_buffer_pool_size = { log_range = ["16M", "256M"] }
innodb_flush_neighbors = { choice = [0, 1] }
"#;

/// `innodb_buffer_pool_size=48M` -> its bytes; other values as they are.
fn setting_value(name: &str, text: &str) -> String {
    if name != "innodb_buffer_pool_size" {
        return text.to_string();
    }
    let (n, unit) = text.split_at(text.len() - 1);
    let shift = match unit {
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return text.to_string(),
    };
    (n.parse::<u64>().unwrap() << shift).to_string()
}

#[test]
fn a_search_runs_its_trials_as_lab_points_resumes_after_ctrl_c_and_prints_the_winner() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = tmp.path().join("tune-smoke.toml");
    std::fs::write(&file, SMOKE_SEARCH).unwrap();
    // The plan lists the trials the seed fixes: the defaults, then the design.
    let plan = run_ok(dbperf(&home).args(["lab", "plan"]).arg(&file));
    let plan = String::from_utf8_lossy(&plan.stdout).into_owned();
    let planned: Vec<String> = plan
        .lines()
        .filter_map(|l| l.trim().strip_prefix("trial "))
        .filter(|l| !l.contains("defaults"))
        .map(|l| l.split_once(": ").unwrap().1.to_string())
        .collect();
    assert_eq!(planned.len(), 3, "{plan}");

    let args = |c: &mut Command| {
        c.args(["lab", "tune"]).arg(&file).arg("--results-dir").arg(&results);
    };
    let mut cmd = dbperf(&home);
    args(&mut cmd);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let tune_file = results.join("lab/tune-smoke/tune.json");
    let measured = |v: &Value| {
        v["trials"]
            .as_array()
            .map_or(0, |t| t.iter().filter(|t| !t["measured"].is_null()).count())
    };
    let started = Instant::now();
    loop {
        let v = std::fs::read(&tune_file)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        if v.as_ref().is_some_and(|v| measured(v) >= 2) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(240), "no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: plain kill of our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let first = read_json(&tune_file);
    let before: Vec<Value> = first["trials"].as_array().unwrap().clone();

    let mut cmd = dbperf(&home);
    args(&mut cmd);
    let out = run_ok(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Resuming tune-smoke"), "{text}");
    let st = read_json(&tune_file);
    let trials = st["trials"].as_array().unwrap();
    // The trials from before Ctrl-C are the same trials, their runs not redone.
    for (a, b) in before.iter().zip(trials) {
        assert_eq!(a["settings"], b["settings"]);
        if !a["measured"].is_null() {
            assert_eq!(a["measured"]["run_id"], b["measured"]["run_id"]);
        }
    }
    // The defaults first, then the design the plan showed.
    let roles: Vec<&str> = trials.iter().map(|t| t["role"].as_str().unwrap()).collect();
    assert_eq!(&roles[..4], ["defaults", "design", "design", "design"], "{st}");
    let tried: Vec<String> = trials[1..4]
        .iter()
        .map(|t| {
            t["settings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|kv| format!("{}={}", kv[0].as_str().unwrap(), kv[1].as_str().unwrap()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(tried, planned);
    // Every trial is a lab point whose server ran with the trial's settings.
    for t in trials {
        let m = &t["measured"];
        assert!(!m.is_null(), "every trial finished: {t}");
        assert!(m["figure"].as_f64().unwrap() > 0.0);
        let dir = PathBuf::from(m["run_dir"].as_str().unwrap());
        let manifest = read_json(&dir.join("manifest.json"));
        assert_eq!(manifest["lab"]["point"], t["point"]);
        for kv in t["settings"].as_array().unwrap() {
            let (k, v) = (kv[0].as_str().unwrap(), kv[1].as_str().unwrap());
            assert_eq!(
                manifest["server"]["variables"][k].as_str().unwrap(),
                setting_value(k, v),
                "trial {} ran with {k}={v}",
                t["n"]
            );
        }
    }
    // The best was confirmed against the defaults (three runs each), or the defaults won.
    let confirms = roles.iter().filter(|r| r.starts_with("confirm")).count();
    if text.contains("The server's defaults were the best") {
        assert_eq!(confirms, 0, "{text}");
    } else {
        assert_eq!(confirms, 6, "{text}");
        assert!(text.contains("Confirmed against the defaults, interleaved"), "{text}");
        assert!(text.contains("--set innodb_buffer_pool_size="), "{text}");
        assert!(text.contains("[mysqld]"), "{text}");
    }
    let dir = results.join("lab/tune-smoke");
    let md = std::fs::read_to_string(dir.join("tune.md")).unwrap();
    assert!(md.contains("## Trials"), "{md}");
    let html = std::fs::read_to_string(dir.join("tune.html")).unwrap();
    assert!(html.contains("tps by innodb_buffer_pool_size") && html.contains("partial dependence"));
    // The sandbox is stopped at the end.
    let list = run_ok(dbperf(&home).args(["server", "list"]));
    assert!(!String::from_utf8_lossy(&list.stdout).contains("running"));
}

/// `[network]` with shards: each point runs as two `--shard` processes, each in a network
/// namespace of its own, merged into the point's run (the run the lab's state and report
/// use); the shards' run directories stay under the lab's `shards/`. Needs root.
#[test]
fn remote_client_example_runs_each_point_as_merged_shards_in_namespaces() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !common::skip_unless(
        root,
        "not root: [network] client = \"netns\"",
        std::env::var_os("CI").is_some(),
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "run", "--quick"])
            .arg(examples().join("remote-client.toml"))
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("complete: 2 run(s)"), "{text}");
    let points = manifests(&results);
    assert_eq!(points.len(), 2, "the two merged runs, not their shards");
    for m in &points {
        assert_eq!(m["merged"]["count"], 2, "{m}");
        assert_eq!(m["merged"]["shards"].as_array().unwrap().len(), 2);
        assert!(m["merged"]["left_out"].as_array().unwrap().is_empty());
        assert_eq!(m["lab"]["experiment"], "remote-client-quick");
    }
    let shards = manifests(&results.join("lab/remote-client-quick/shards"));
    assert_eq!(shards.len(), 4);
    for s in &shards {
        assert_eq!(s["network"]["path"], "netns", "{s}");
        assert_eq!(s["shard"]["count"], 2);
    }
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "report", "remote-client-quick", "--results-dir"])
            .arg(&results),
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("16") && report.contains("64"), "{report}");
}
