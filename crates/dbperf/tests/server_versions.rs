//! Integration tests for every known server version installed on this machine (`make deps-servers`
//! installs them all): start a sandbox in a temporary DBPERF_HOME on a free port, check the
//! version it reports, that a `--set` value and the version-specific redo default took effect,
//! that state.json names the version id, that a key the version does not know is refused before
//! anything starts, and stop it. A server that is not installed is skipped with a notice, except
//! under CI (`CI` set), where that is a failure.

use dbperf::server::testing::TempSandbox;
use dbperf::server::{lookup, RunState, ServerError};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};

mod common;
use common::{available, block_on};

/// `(VERSION(), @@max_connections, redo size as this version configures it)` over TCP as `sb`.
async fn probe(url: &str, redo_variable: &str) -> (String, u32, u64) {
    let mut conn = Conn::new(Opts::from_url(&format!("{url}?prefer_socket=false")).unwrap())
        .await
        .unwrap();
    let row: (String, u32, u64) = conn
        .query_first(format!("SELECT VERSION(), @@max_connections, @@{redo_variable}"))
        .await
        .unwrap()
        .unwrap();
    conn.disconnect().await.unwrap();
    row
}

/// Starts `id`, checks it, stops it; `version_prefix` is what `SELECT VERSION()` starts with and
/// `redo` the variable and value the test profile's 32 MiB redo becomes in this version.
fn start_check_stop(id: &str, version_prefix: &str, redo: (&str, u64)) {
    let sandbox =
        TempSandbox::start_server(id, &["max-connections=77"]).unwrap_or_else(|e| panic!("{id} sandbox starts: {e}"));
    assert_eq!(sandbox.record().server, id);
    assert_eq!(sandbox.record().kind, lookup(id).unwrap().product);
    let (version, max_connections, redo_size) = block_on(probe(&sandbox.url(), redo.0));
    assert!(version.starts_with(version_prefix), "{id}: VERSION() = {version}");
    assert!(
        sandbox.record().version.starts_with(version_prefix),
        "{:?}",
        sandbox.record()
    );
    assert_eq!(max_connections, 77, "{id}: --set max-connections=77 took effect");
    assert_eq!(redo_size, redo.1, "{id}: @@{}", redo.0);

    let listed = sandbox.home().list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].record.server, id);
    assert!(matches!(listed[0].state, RunState::Running { .. }));

    let pid = sandbox.pid();
    drop(sandbox);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "{id}: pid {pid} still runs"
    );
}

/// A misspelled key and `key` are refused before start, naming the key, the id and `hint`.
fn unknown_keys_are_refused_before_start(id: &str, key: &str, hint: &str) {
    for (item, key, hint) in [
        (
            "innodb_buffer_pool_sise=64M".to_owned(),
            "innodb_buffer_pool_sise",
            "innodb_buffer_pool_size",
        ),
        (format!("{key}=64M"), key, hint),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let err = TempSandbox::start_in_for(lookup(id).unwrap(), dir.path(), &[&item]).unwrap_err();
        assert!(matches!(err, ServerError::UnknownSetting { .. }), "{id}: {err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("{key} is not a setting of {id}")), "{msg}");
        assert!(msg.contains(hint), "{msg}");
        assert!(
            !dir.path().join("servers").exists(),
            "{id}: nothing may be created before the check"
        );
    }
}

const MIB: u64 = 1024 * 1024;

/// The rule every test that needs a server or a program goes by (`common::available`,
/// `pg::available`, `common::program_available`): missing is a failure under CI, naming what
/// is missing and how to install it, and a skip elsewhere.
#[test]
fn a_missing_server_or_program_fails_under_ci_and_is_skipped_elsewhere() {
    assert!(common::skip_unless(true, "nothing missing", true));
    assert!(!common::skip_unless(false, "postgres-15 is not installed", false));
    let under_ci = std::panic::catch_unwind(|| common::skip_unless(false, "postgres-15 is not installed", true));
    let message = under_ci.expect_err("under CI a missing server fails the test");
    let message = message.downcast_ref::<String>().expect("a formatted message");
    assert!(message.contains("postgres-15 is not installed"), "{message}");
    assert!(common::program_runs("true"));
    assert!(!common::program_runs("/nonexistent/sysbench"));
    // Starts, but fails: as Debian's pgbench wrapper does without PostgreSQL's programs.
    assert!(!common::program_runs("false"));
}

#[test]
fn debian_mariadb_10_11() {
    if !available("mariadb-10.11") {
        return;
    }
    start_check_stop("mariadb-10.11", "10.11.", ("innodb_log_file_size", 32 * MIB));
    unknown_keys_are_refused_before_start("mariadb-10.11", "innodb_redo_log_capacity", "innodb_log_file_size");
}

#[test]
fn maven_mariadb_10_11_5() {
    if !available("mariadb-10.11.5") {
        return;
    }
    start_check_stop("mariadb-10.11.5", "10.11.5-MariaDB", ("innodb_log_file_size", 32 * MIB));
    unknown_keys_are_refused_before_start("mariadb-10.11.5", "innodb_redo_log_capacity", "innodb_log_file_size");
}

#[test]
fn maven_mariadb_11_4_5() {
    if !available("mariadb-11.4.5") {
        return;
    }
    start_check_stop("mariadb-11.4.5", "11.4.5-MariaDB", ("innodb_log_file_size", 32 * MIB));
    unknown_keys_are_refused_before_start("mariadb-11.4.5", "innodb_redo_log_capacity", "innodb_log_file_size");
}

#[test]
fn maven_mysql_8_0_31() {
    if !available("mysql-8.0.31") {
        return;
    }
    start_check_stop("mysql-8.0.31", "8.0.31", ("innodb_redo_log_capacity", 32 * MIB));
    unknown_keys_are_refused_before_start("mysql-8.0.31", "aria_pagecache_buffer_size", "nearest known names");
}

#[test]
fn maven_mysql_8_0_15() {
    if !available("mysql-8.0.15") {
        return;
    }
    // Before 8.0.30 redo is innodb_log_files_in_group (2) files of innodb_log_file_size.
    start_check_stop("mysql-8.0.15", "8.0.15", ("innodb_log_file_size", 16 * MIB));
    unknown_keys_are_refused_before_start("mysql-8.0.15", "innodb_redo_log_capacity", "innodb_log_file_size");
}

#[test]
fn npm_mysql_5_6_24() {
    if !available("mysql-5.6.24") {
        return;
    }
    // A copy of the package's initialised datadir; two redo files of half the redo each.
    start_check_stop("mysql-5.6.24", "5.6.24", ("innodb_log_file_size", 16 * MIB));
    unknown_keys_are_refused_before_start("mysql-5.6.24", "innodb_redo_log_capacity", "innodb_log_file_size");
    // XtraDB's flushing options are not MySQL's.
    unknown_keys_are_refused_before_start("mysql-5.6.24", "innodb_cleaner_lsn_age_factor", "nearest known names");
}

#[test]
fn maven_mariadb_10_1_23_with_xtradb_settings() {
    if !available("mariadb-10.1.23") {
        return;
    }
    start_check_stop("mariadb-10.1.23", "10.1.23-MariaDB", ("innodb_log_file_size", 16 * MIB));
    unknown_keys_are_refused_before_start("mariadb-10.1.23", "innodb_redo_log_capacity", "innodb_log_file_size");
    // XtraDB's own flushing settings, as its `--verbose --help` lists them, take effect.
    let sandbox = TempSandbox::start_server(
        "mariadb-10.1.23",
        &[
            "innodb_cleaner_lsn_age_factor=legacy",
            "innodb_foreground_preflush=sync_preflush",
            "innodb_empty_free_list_algorithm=legacy",
            "innodb_flush_neighbors=0",
        ],
    )
    .unwrap();
    // Its slow mysql_install_db ran for the first sandbox only: later ones copy what it made.
    let dist = sandbox.home().dist_root().join("mariadb-10.1.23/base/initial-datadir");
    assert!(dist.join("mysql").is_dir(), "{}", dist.display());
    let log = std::fs::metadata(sandbox.dir().join("install.log")).map_or(0, |m| m.len());
    assert_eq!(log, 0, "the installer ran again");
    let values: Vec<String> = block_on(async {
        let mut conn = Conn::new(Opts::from_url(&sandbox.url()).unwrap()).await.unwrap();
        let row: (String, String, String, String, String) = conn
            .query_first(
                "SELECT @@innodb_cleaner_lsn_age_factor, @@innodb_foreground_preflush, \
                 @@innodb_empty_free_list_algorithm, @@innodb_flush_neighbors, @@innodb_version",
            )
            .await
            .unwrap()
            .unwrap();
        conn.disconnect().await.unwrap();
        vec![row.0, row.1, row.2, row.3, row.4]
    });
    assert_eq!(
        &values[..4],
        ["LEGACY", "SYNC_PREFLUSH", "LEGACY", "0"].map(|v| v.to_owned()),
        "{values:?}"
    );
    assert!(values[4].starts_with("5.6.35-80.0"), "XtraDB: {values:?}");
}

#[test]
fn maven_mariadb_10_2_11() {
    if !available("mariadb-10.2.11") {
        return;
    }
    start_check_stop("mariadb-10.2.11", "10.2.11-MariaDB", ("innodb_log_file_size", 16 * MIB));
    unknown_keys_are_refused_before_start("mariadb-10.2.11", "innodb_redo_log_capacity", "innodb_log_file_size");
}
