//! The lab across a classic and a modern server: MySQL 5.6.24 against 8.0.31, two user counts,
//! run end to end, and the report's config guard explaining what differs between the versions
//! (defaults that changed, settings only one has, the redo log sized by different variables);
//! and `lab plan` refusing a variant key one of the servers lacks, naming both.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

mod common;
use common::{available, read_json, run_ok};

const SERVERS: [&str; 2] = ["mysql-5.6.24", "mysql-8.0.31"];

/// `dbperf` with a private `$DBPERF_HOME` and the installed servers of the default home.
fn dbperf(home: &Path) -> Command {
    let dist = dbperf::server::SandboxHome::from_env().unwrap().dist_root().to_owned();
    let mut c = common::dbperf();
    c.env("DBPERF_HOME", home).env("DBPERF_DIST", dist);
    c
}

/// A two-server experiment named `name` in `dir`, with `extra` appended.
fn experiment(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let f = dir.join(format!("{name}.toml"));
    std::fs::write(
        &f,
        format!(
            r#"name = "{name}"
duration = 2
report_interval = 1
prewarm = false
[[server]]
id = "mysql-8.0.31"
settings = {{ innodb_buffer_pool_size = "64M" }}
[[server]]
id = "mysql-5.6.24"
settings = {{ innodb_buffer_pool_size = "64M", query_cache_type = "OFF", query_cache_size = 0 }}
[[workload]]
test = "oltp_read_write"
tables = 1
table_size = 1000
users = [1, 2]
{extra}"#
        ),
    )
    .unwrap();
    f
}

#[test]
fn a_classic_and_a_modern_server_and_what_differs_between_them() {
    if !SERVERS.iter().all(|id| available(id)) {
        return;
    }
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));

    // A variant's settings go to every server: a key 5.6 lacks is refused before anything
    // starts, naming the server without it and the one with it.
    let bad = experiment(
        tmp.path(),
        "redo-variant",
        "[variants]\ninnodb_redo_log_capacity = [\"64M\", \"128M\"]\n",
    );
    let out = dbperf(&home).args(["lab", "plan"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("innodb_redo_log_capacity is not a setting of mysql-5.6.24")
            && err.contains("innodb_redo_log_capacity is a setting of mysql-8.0.31 but not of mysql-5.6.24")
            && err.contains("a variant's settings go to every server"),
        "{err}"
    );

    let file = experiment(tmp.path(), "classic", "");
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("complete: 4 run(s)"), "{text}");
    // The manifests record each server's own settings, which the guard counts as set.
    let state = read_json(&results.join("lab/classic/state.json"));
    for done in state["done"].as_object().unwrap().values() {
        let m = read_json(&Path::new(done["run_dir"].as_str().unwrap()).join("manifest.json"));
        assert_eq!(m["lab"]["server_settings"]["innodb_buffer_pool_size"], "64M", "{m}");
    }

    let report = |format: &str| {
        let out = run_ok(
            dbperf(&home)
                .args([
                    "lab",
                    "report",
                    "classic",
                    "--metric",
                    "tps",
                    "--no-explain",
                    "--format",
                    format,
                ])
                .arg("--results-dir")
                .arg(&results),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = report("text");
    eprintln!("{text}");
    // Columns in the file's order of servers (8.0.31 first, the baseline), not alphabetical.
    let header = text
        .lines()
        .find(|l| l.contains("mysql-5.6.24") && l.contains("mysql-8.0.31"))
        .unwrap();
    assert!(
        header.find("mysql-8.0.31").unwrap() < header.find("mysql-5.6.24").unwrap(),
        "{text}"
    );
    // A default that changed between 5.6 and 8.0 which no setting of the file touches.
    assert!(
        text.contains("Defaults that changed between versions (")
            && text.contains("  innodb_flush_neighbors: 0 (mysql-8.0.31) vs 1 (mysql-5.6.24)\n"),
        "{text}"
    );
    // Settings only one version has, the file's own first.
    assert!(
        text.contains("  in mysql-8.0.31, not in mysql-5.6.24 (") && text.contains("): innodb_redo_log_capacity, "),
        "{text}"
    );
    assert!(
        text.contains("  in mysql-5.6.24, not in mysql-8.0.31 (")
            && text.contains("; 2 set by the experiment): query_cache_size, query_cache_type, "),
        "{text}"
    );
    // The sandbox gives both 256 MiB of redo, as two files on 5.6 and a capacity on 8.0: not
    // a difference, and so no warning about innodb_log_file_size.
    assert!(
        text.contains(
            "Redo log size: 256 MiB (innodb_redo_log_capacity) (mysql-8.0.31) vs 256 MiB (2 x 128 MiB files) (mysql-5.6.24) (the same size"
        ),
        "{text}"
    );
    assert!(!text.contains("  innodb_log_file_size:"), "{text}");
    // The same, for machines.
    let json: Value = serde_json::from_str(&report("json")).unwrap();
    let versions = &json["variables"]["versions"];
    let neighbors = versions["defaults_changed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "innodb_flush_neighbors")
        .unwrap_or_else(|| panic!("{versions}"));
    assert_eq!(neighbors["values"], serde_json::json!(["0", "1"]));
    assert_eq!(versions["servers"][0]["version"], "8.0.31");
    eprintln!("lab_classic: {:.1} s", started.elapsed().as_secs_f64());
}
