//! Symbolic links planted where dbperf writes, by another local user (`nobody`, when the tests
//! run as root) who may write into a shared results directory: dbperf, running as root, never
//! writes through them, so the files they point at stay as they were.
//!
//! - `catalog.sqlite` (and SQLite's `-journal`) in a results directory: `results index` and
//!   `results sql` refuse it, and a run's catalog recording does not turn the target into a
//!   database;
//! - `results sql` opens the catalog read-only: `ATTACH` (which would create or read a file
//!   elsewhere), `VACUUM INTO`, `DROP TABLE` and `DELETE` are refused and the catalog stays
//!   whole;
//! - a lab's `state.json`, a point's `logs/<point>.summary.json` (the child's `--summary-json`)
//!   and `logs/<point>.log`: replaced or refused, never followed.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{available, run_ok};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A file only its owner may change, outside the results directory: what a link points at.
fn victim(dir: &Path, name: &str) -> PathBuf {
    let private = dir.join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = private.join(name);
    std::fs::write(&path, "untouched\n").unwrap();
    path
}

fn untouched(path: &Path) {
    let meta = std::fs::symlink_metadata(path).unwrap();
    assert!(meta.is_file(), "{} was replaced", path.display());
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        "untouched\n",
        "{} was written through a planted link",
        path.display()
    );
}

/// A directory anyone may write into (as a shared results directory may be).
fn shared_dir(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o1777)).unwrap();
}

/// Plants `link` → `target`, as `nobody` when root.
fn plant(target: &Path, link: &Path) {
    let mut ln = Command::new("ln");
    ln.arg("-s").arg(target).arg(link);
    if is_root() {
        ln.uid(NOBODY).gid(NOBODY);
    }
    assert!(ln.status().unwrap().success(), "planting {}", link.display());
}

fn dbperf(home: &Path) -> Command {
    let mut c = common::dbperf();
    c.env("DBPERF_HOME", home).env(
        "DBPERF_DIST",
        dbperf::server::SandboxHome::from_env().unwrap().dist_root(),
    );
    c
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_planted_catalog_link_is_refused_and_its_target_stays() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    shared_dir(&results);
    for planted in ["catalog.sqlite", "catalog.sqlite-journal"] {
        let target = victim(tmp.path(), planted);
        let link = results.join(planted);
        plant(&target, &link);
        for args in [
            vec!["results", "index"],
            vec!["results", "sql", "SELECT count(*) FROM runs"],
        ] {
            let out = dbperf(tmp.path())
                .args(&args)
                .arg("--results-dir")
                .arg(&results)
                .output()
                .unwrap();
            assert!(!out.status.success(), "{args:?} with {planted} planted: {}", text(&out));
            assert!(text(&out).contains("symbolic link"), "{args:?}: {}", text(&out));
        }
        untouched(&target);
        std::fs::remove_file(&link).unwrap();
    }
}

#[test]
fn results_sql_reads_only_and_attaches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir(&results).unwrap();
    run_ok(
        dbperf(tmp.path())
            .args(["results", "index", "--results-dir"])
            .arg(&results),
    );
    let elsewhere = tmp.path().join("elsewhere.db");
    let sql = |query: &str| {
        dbperf(tmp.path())
            .args(["results", "sql", query, "--results-dir"])
            .arg(&results)
            .output()
            .unwrap()
    };
    for query in [
        format!("ATTACH '{}' AS x", elsewhere.display()),
        format!("VACUUM INTO '{}'", elsewhere.display()),
        "DROP TABLE runs".to_owned(),
        "DELETE FROM meta".to_owned(),
        "CREATE TABLE mine (a)".to_owned(),
    ] {
        let out = sql(&query);
        assert!(!out.status.success(), "{query} was run: {}", text(&out));
    }
    assert!(!elsewhere.exists(), "a query created a file outside the catalog");
    let out = sql("SELECT count(*) FROM runs");
    assert!(out.status.success(), "the catalog is broken: {}", text(&out));
}

/// The log stem of a lab point (`run.rs`: the point id with `/` as `~`, file-name safe).
fn point_stem(id: &str) -> String {
    id.replace('/', "~")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

const EXPERIMENT: &str = "name = \"links\"\nduration = 2\nreport_interval = 1\n\
    [[server]]\nid = \"mariadb-10.11\"\n\
    [[workload]]\ntest = \"oltp_point_select\"\ntables = 1\ntable_size = 1000\nusers = [2]\n";

#[test]
fn lab_files_are_never_written_through_planted_links() {
    if !available("mariadb-10.11") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = tmp.path().join("links.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let logs = results.join("lab/links/logs");
    for dir in [&results, &results.join("lab"), &results.join("lab/links"), &logs] {
        shared_dir(dir);
    }
    let stem = point_stem("mariadb-10.11/default/oltp_point_select/t2/r1");
    let state = victim(tmp.path(), "state");
    let summary = victim(tmp.path(), "summary");
    let catalog = victim(tmp.path(), "catalog");
    // A planted state file is neither read nor written through.
    let state_link = results.join("lab/links/state.json");
    plant(&state, &state_link);
    let lab_run = || {
        dbperf(&home)
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results)
            .output()
            .unwrap()
    };
    let out = lab_run();
    assert!(
        !out.status.success() && text(&out).contains("symbolic link"),
        "{}",
        text(&out)
    );
    untouched(&state);
    std::fs::remove_file(&state_link).unwrap();

    plant(&summary, &logs.join(format!("{stem}.summary.json")));
    plant(&catalog, &results.join("catalog.sqlite"));
    let out = lab_run();
    assert!(out.status.success(), "{}", text(&out));
    for victim in [&state, &summary, &catalog] {
        untouched(victim);
    }
    let summary_file = logs.join(format!("{stem}.summary.json"));
    assert!(
        std::fs::symlink_metadata(&summary_file).unwrap().is_file(),
        "the summary replaced the link"
    );

    // A planted log is refused: the point fails, naming it, and the target stays.
    let log_victim = victim(tmp.path(), "log");
    let log = logs.join(format!("{stem}.log"));
    std::fs::remove_file(&log).unwrap();
    plant(&log_victim, &log);
    let out = dbperf(&home)
        .args(["lab", "run", "--restart"])
        .arg(&file)
        .arg("--results-dir")
        .arg(&results)
        .output()
        .unwrap();
    assert!(text(&out).contains(&format!("{stem}.log")), "{}", text(&out));
    untouched(&log_victim);
}
