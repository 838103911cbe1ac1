//! `dbperf pgbench` on a real PostgreSQL 15: `init` creates what `pgbench -i` creates
//! (compared table by table; without pgbench the comparison is skipped with a notice, and
//! under CI fails) with the right row counts;
//! `tpcb-like` keeps pgbench's balance invariant; `select-only` writes nothing.

use std::process::Command;

mod common;
use common::{dbperf, only_run_dir, read_json, run_ok};

#[path = "support/pg.rs"]
mod pg;
use pg::TempPg;

/// Columns, table options and indexes of the pgbench tables in `db`.
fn schema(pg: &TempPg, db: &str) -> String {
    let cols = pg.psql_as(
        "postgres",
        db,
        "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default \
         FROM information_schema.columns WHERE table_name LIKE 'pgbench%' ORDER BY table_name, ordinal_position",
    );
    let opts = pg.psql_as(
        "postgres",
        db,
        "SELECT relname, relkind, relpersistence, reloptions FROM pg_class WHERE relname LIKE 'pgbench%' ORDER BY 1",
    );
    let idx = pg.psql_as(
        "postgres",
        db,
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename LIKE 'pgbench%' ORDER BY 1, 2",
    );
    format!("{cols}\n{opts}\n{idx}")
}

fn balances(pg: &TempPg) -> String {
    pg.psql(
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(bbalance) FROM pgbench_branches), \
         (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT coalesce(sum(delta), 0) FROM pgbench_history), \
         (SELECT count(*) FROM pgbench_history)",
    )
}

fn pgbench(script: &str, url: &str, results: &std::path::Path, extra: &[&str]) {
    run_ok(
        dbperf()
            .args(["pgbench", script, "--target", url, "--no-telemetry", "--results-dir"])
            .arg(results)
            .args(extra),
    );
}

#[test]
fn init_then_tpcb_like_keeps_balances_and_select_only_writes_nothing() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    let url = pg.url();
    run_ok(dbperf().args(["pgbench", "init", "--scale", "1", "--target", &url]));
    assert_eq!(
        pg.psql(
            "SELECT (SELECT count(*) FROM pgbench_accounts), (SELECT count(*) FROM pgbench_branches), \
             (SELECT count(*) FROM pgbench_tellers), (SELECT count(*) FROM pgbench_history), \
             (SELECT count(DISTINCT bid) FROM pgbench_tellers), (SELECT count(*) FROM pgbench_accounts WHERE bid = 1 AND filler IS NOT NULL)"
        ),
        "100000\t1\t10\t0\t1\t100000"
    );
    let ours = schema(&pg, "sbtest");
    assert!(ours.contains("pgbench_accounts\tr\tp\t{fillfactor=100}"), "{ours}");
    assert!(ours.contains("pgbench_accounts_pkey"), "{ours}");

    // The same tables as pgbench -i.
    if common::program_available("pgbench", "postgresql-15") {
        pg.psql_as("postgres", "postgres", "CREATE DATABASE pgref OWNER sb");
        let out = Command::new("pgbench")
            .args([
                "-i",
                "-s",
                "1",
                "-q",
                "-h",
                "127.0.0.1",
                "-p",
                &pg.port().to_string(),
                "-U",
                "sb",
                "pgref",
            ])
            .env("PGPASSWORD", pg.password())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            schema(&pg, "pgref"),
            ours,
            "dbperf pgbench init and pgbench -i create the same tables"
        );
    }

    let results = tempfile::tempdir().unwrap();
    pgbench("tpcb-like", &url, results.path(), &["-c", "4", "-T", "3"]);
    let b = balances(&pg);
    let v: Vec<i64> = b.split('\t').map(|x| x.parse().unwrap()).collect();
    assert!(v[4] > 50, "history rows: {b}");
    assert!(
        v[0] == v[1] && v[1] == v[2] && v[2] == v[3],
        "sum(abalance) = sum(bbalance) = sum(tbalance) = sum(delta) must hold: {b}"
    );
    let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
    assert_eq!(summary["workload"], "pgbench_tpcb_like");
    let total = summary["transactions"]["total"].as_i64().unwrap();
    assert!((total - v[4]).abs() <= 4, "summary {total} vs {} history rows", v[4]);

    // select-only changes no row (with -n: without it, as pgbench, the run first truncates
    // pgbench_history; see below).
    let writes = "SELECT sum(n_tup_upd + n_tup_ins + n_tup_del) FROM pg_stat_user_tables WHERE relname LIKE 'pgbench%'";
    pg.wait_for_no_backends("sb");
    let before = (balances(&pg), pg.psql(writes));
    let results = tempfile::tempdir().unwrap();
    pgbench("select-only", &url, results.path(), &["-n", "-c", "2", "-T", "2"]);
    // The same on tokio-postgres, the session kept for A/B measurements.
    let reference = tempfile::tempdir().unwrap();
    pgbench(
        "select-only",
        &url,
        reference.path(),
        &["-n", "-c", "2", "-T", "1", "--client-impl", "tokio-postgres"],
    );
    let on_reference = read_json(&only_run_dir(reference.path()).join("summary.json"));
    assert!(on_reference["transactions"]["total"].as_i64().unwrap() > 100);
    // The statistics collector reports at transaction end; give it a moment.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    pg.wait_for_no_backends("sb");
    assert_eq!((balances(&pg), pg.psql(writes)), before);
    let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
    assert!(summary["transactions"]["total"].as_i64().unwrap() > 100);

    // simple-update: accounts and history only.
    let results = tempfile::tempdir().unwrap();
    pgbench("simple-update", &url, results.path(), &["-n", "-c", "2", "-T", "1"]);
    let after: Vec<i64> = balances(&pg).split('\t').map(|x| x.parse().unwrap()).collect();
    assert!(after[4] > v[4], "simple-update inserts history rows");
    assert_eq!(after[0], after[3], "every delta went to an account");
    assert_eq!((after[1], after[2]), (v[1], v[2]), "branches and tellers are untouched");

    // Without -n, a run begins as pgbench's does: vacuum branches and tellers, truncate history.
    let results = tempfile::tempdir().unwrap();
    let out = dbperf()
        .args([
            "pgbench",
            "select-only",
            "--target",
            &url,
            "--no-telemetry",
            "-t",
            "1",
            "--results-dir",
        ])
        .arg(results.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("starting vacuum...end."));
    assert_eq!(pg.psql("SELECT count(*) FROM pgbench_history"), "0");

    run_ok(dbperf().args(["pgbench", "cleanup", "--target", &url]));
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'pgbench%'"),
        "0"
    );
}

/// On PostgreSQL too, tables of the user's with pgbench and sysbench names are left alone:
/// `init` and `prepare` refuse them without advising `cleanup`, `cleanup` drops none of them
/// and says `--force` would, and `cleanup --force` drops them.
#[test]
fn tables_dbperf_did_not_create_are_left_alone_on_postgres() {
    if !pg::available() {
        eprintln!("skipped: PostgreSQL 15 is not installed (apt-get install -y postgresql-15)");
        return;
    }
    let pg = TempPg::start(&[]);
    let url = pg.url();
    let mine = ["pgbench_accounts", "sbtest1"];
    for t in mine {
        pg.psql_as(
            "sb",
            "sbtest",
            &format!("CREATE TABLE {t} (id int PRIMARY KEY, note text)"),
        );
        pg.psql_as("sb", "sbtest", &format!("INSERT INTO {t} VALUES (1, 'mine')"));
    }
    let all_there = || {
        for t in mine {
            assert_eq!(pg.psql(&format!("SELECT note FROM {t}")), "mine", "{t}");
        }
    };
    let sysbench = |command: &str, extra: &[&str]| {
        let mut c = dbperf();
        c.args([
            "sysbench",
            "oltp_read_write",
            command,
            "--db-driver",
            "pgsql",
            "--tables",
            "1",
        ])
        .args(["--table-size", "100", "--target", &url])
        .args(extra);
        c
    };
    let pgbench = |command: &str| {
        let mut c = dbperf();
        c.args(["pgbench", command, "--target", &url]);
        c
    };
    common::assert_refuses_foreign_tables(
        vec![pgbench("init"), sysbench("prepare", &[])],
        vec![pgbench("cleanup"), sysbench("cleanup", &[])],
        all_there,
    );
    run_ok(pgbench("cleanup").arg("--force"));
    run_ok(&mut sysbench("cleanup", &["--force"]));
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"),
        "0"
    );
    // What dbperf creates, it drops: init, then cleanup without --force.
    run_ok(&mut pgbench("init"));
    run_ok(&mut pgbench("cleanup"));
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"),
        "0"
    );
}
