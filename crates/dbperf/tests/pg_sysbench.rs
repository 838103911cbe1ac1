//! dbperf's sysbench OLTP tests on a real PostgreSQL 15, run as a user runs them: prepare
//! gives sysbench's pgsql-dialect schema (compared with what sysbench's own pgsql driver
//! creates; without it that comparison is skipped with a notice, and under CI fails) and the
//! rows it should; a run sends the
//! `oltp_read_write` statement mix (counted by `pg_stat_statements` on the server);
//! sysbench runs on dbperf's tables; cleanup drops them; MySQL-only commands refuse.

use std::collections::BTreeMap;
use std::process::Command;

mod common;
use common::{dbperf, only_run_dir, read_json, run_ok};

#[path = "support/pg.rs"]
mod pg;
use pg::TempPg;

const ROWS: u32 = 5000;

fn sysbench_cmd(test: &str, command: &str, url: &str, extra: &[&str]) -> Command {
    let mut c = dbperf();
    c.args(["sysbench", test, command, "--target", url]).args(extra);
    c
}

/// Columns and indexes of the sbtest tables in `db`, as rows of text.
fn schema(pg: &TempPg, db: &str) -> String {
    let cols = pg.psql_as(
        "postgres",
        db,
        "SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default \
         FROM information_schema.columns WHERE table_name LIKE 'sbtest%' ORDER BY table_name, ordinal_position",
    );
    let idx = pg.psql_as(
        "postgres",
        db,
        "SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename LIKE 'sbtest%' ORDER BY 1, 2",
    );
    format!("{cols}\n{idx}")
}

fn sysbench_has_pgsql() -> bool {
    Command::new("sysbench")
        .arg("--help")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("pgsql - PostgreSQL driver"))
        .unwrap_or(false)
}

fn sysbench_pgsql(pg: &TempPg, db: &str, args: &[&str]) -> String {
    let port = pg.port().to_string();
    let out = Command::new("sysbench")
        .args(["oltp_read_write", "--db-driver=pgsql", "--pgsql-host=127.0.0.1"])
        .arg(format!("--pgsql-port={port}"))
        .arg("--pgsql-user=sb")
        .arg(format!("--pgsql-password={}", pg.password()))
        .arg(format!("--pgsql-db={db}"))
        .args(args)
        .output()
        .expect("sysbench runs");
    assert!(
        out.status.success(),
        "sysbench {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Calls per statement kind from pg_stat_statements, summed over the tables.
fn statement_calls(pg: &TempPg) -> BTreeMap<String, i64> {
    let rows = pg.psql("SELECT query, calls FROM pg_stat_statements");
    let mut m = BTreeMap::new();
    for line in rows.lines() {
        let Some((q, calls)) = line.rsplit_once('\t') else {
            continue;
        };
        let kind = if q == "BEGIN" {
            "begin"
        } else if q == "COMMIT" {
            "commit"
        } else if q == "ROLLBACK" {
            "rollback"
        } else if q.starts_with("SELECT c FROM sbtest") && q.ends_with("WHERE id=$1") {
            "point_select"
        } else if q.starts_with("SELECT DISTINCT c FROM") {
            "distinct_range"
        } else if q.starts_with("SELECT SUM(k) FROM") {
            "sum_range"
        } else if q.starts_with("SELECT c FROM sbtest") && q.ends_with("ORDER BY c") {
            "order_range"
        } else if q.starts_with("SELECT c FROM sbtest") && q.contains("BETWEEN") {
            "simple_range"
        } else if q.starts_with("UPDATE sbtest") && q.contains("k=k+") {
            "index_update"
        } else if q.starts_with("UPDATE sbtest") && q.contains("SET c=") {
            "non_index_update"
        } else if q.starts_with("DELETE FROM sbtest") {
            "delete"
        } else if q.starts_with("INSERT INTO sbtest") {
            "insert"
        } else {
            continue;
        };
        *m.entry(kind.to_string()).or_insert(0) += calls.parse::<i64>().unwrap();
    }
    m
}

#[test]
fn oltp_on_postgres_prepare_run_cleanup() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    let url = pg.url();
    let size = ROWS.to_string();
    run_ok(&mut sysbench_cmd(
        "oltp_read_write",
        "prepare",
        &url,
        &["--tables=2", "--table-size", &size, "--threads=2", "--rand-seed=7"],
    ));

    // sysbench's pgsql dialect: SERIAL id, CHAR columns, primary key, k_N after the load.
    let ours = schema(&pg, "sbtest");
    for t in 1..=2 {
        assert!(
            ours.contains(&format!(
                "sbtest{t}\tid\tinteger\t\tNO\tnextval('sbtest{t}_id_seq'::regclass)"
            )),
            "{ours}"
        );
        assert!(ours.contains(&format!("sbtest{t}\tk\tinteger\t\tNO\t0")), "{ours}");
        assert!(
            ours.contains(&format!("sbtest{t}\tc\tcharacter\t120\tNO\t''::bpchar")),
            "{ours}"
        );
        assert!(
            ours.contains(&format!("sbtest{t}\tpad\tcharacter\t60\tNO\t''::bpchar")),
            "{ours}"
        );
        assert!(
            ours.contains(&format!(
                "sbtest{t}\tk_{t}\tCREATE INDEX k_{t} ON public.sbtest{t} USING btree (k)"
            )),
            "{ours}"
        );
        assert!(
            ours.contains(&format!(
                "sbtest{t}\tsbtest{t}_pkey\tCREATE UNIQUE INDEX sbtest{t}_pkey ON public.sbtest{t} USING btree (id)"
            )),
            "{ours}"
        );
        let shape = pg.psql(&format!(
            "SELECT count(*), min(id), max(id), min(k) >= 1 AND max(k) <= {ROWS}, \
             bool_and(length(c) = 119 AND c::text ~ '^([0-9]{{11}}-){{9}}[0-9]{{11}}$'), \
             bool_and(length(pad) = 59 AND pad::text ~ '^([0-9]{{11}}-){{4}}[0-9]{{11}}$'), \
             (SELECT last_value FROM sbtest{t}_id_seq) FROM sbtest{t}"
        ));
        assert_eq!(shape, format!("{ROWS}\t1\t{ROWS}\tt\tt\tt\t{ROWS}"), "sbtest{t}");
    }

    // The same DDL as sysbench's own pgsql driver, and sysbench runs on our tables.
    if common::present_or_skip(
        sysbench_has_pgsql(),
        "sysbench with its pgsql driver is not installed (apt-get install -y sysbench)",
    ) {
        pg.psql_as("postgres", "postgres", "CREATE DATABASE sbref OWNER sb");
        sysbench_pgsql(&pg, "sbref", &["--tables=2", "--table-size=100", "prepare"]);
        assert_eq!(schema(&pg, "sbref"), ours, "dbperf and sysbench create the same tables");
        let out = sysbench_pgsql(
            &pg,
            "sbtest",
            &[
                "--tables=2",
                &format!("--table-size={ROWS}"),
                "--threads=2",
                "--time=2",
                "run",
            ],
        );
        // (Deadlocks between its threads are sysbench's own ignored errors.)
        let txns: u64 = out
            .lines()
            .find_map(|l| l.trim().strip_prefix("transactions:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        assert!(txns > 10, "{out}");
    }

    // The statement mix of oltp_read_write, as the server counted it: statements from
    // pg_stat_statements (which does not count prepared BEGIN/COMMIT), transactions and
    // row changes from the statistics views.
    let counters = || -> Vec<i64> {
        pg.psql(
            "SELECT xact_commit, (SELECT sum(n_tup_upd) FROM pg_stat_user_tables WHERE relname LIKE 'sbtest%'), \
             (SELECT sum(n_tup_ins) FROM pg_stat_user_tables WHERE relname LIKE 'sbtest%'), \
             (SELECT sum(n_tup_del) FROM pg_stat_user_tables WHERE relname LIKE 'sbtest%') \
             FROM pg_stat_database WHERE datname = 'sbtest'",
        )
        .split('\t')
        .map(|v| v.parse().unwrap())
        .collect()
    };
    pg.wait_for_no_backends("sb");
    let before = counters();
    pg.psql("SELECT pg_stat_statements_reset()");
    let results = tempfile::tempdir().unwrap();
    run_ok(
        sysbench_cmd(
            "oltp_read_write",
            "run",
            &url,
            &[
                "--tables=2",
                "--table-size",
                &size,
                "--threads=2",
                "--time=3",
                "--no-telemetry",
            ],
        )
        .arg("--results-dir")
        .arg(results.path()),
    );
    // dbperf has exited, so its backends have reported their statistics.
    std::thread::sleep(std::time::Duration::from_millis(500));
    pg.wait_for_no_backends("sb");
    let after = counters();
    let calls = statement_calls(&pg);
    let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
    let txns = summary["transactions"]["total"].as_i64().unwrap();
    let rollbacks = calls.get("rollback").copied().unwrap_or(0);
    assert!(txns > 20, "{summary}");
    let expect = [
        ("point_select", 10),
        ("simple_range", 1),
        ("sum_range", 1),
        ("order_range", 1),
        ("distinct_range", 1),
        ("index_update", 1),
        ("non_index_update", 1),
        ("delete", 1),
        ("insert", 1),
    ];
    // A transaction rolled back after a deadlock ran part of its statements once more, and
    // those in flight when the clock stopped finish uncounted by the summary.
    let slack = |per_txn: i64| per_txn * (rollbacks + 4);
    for (kind, per_txn) in expect {
        let got = calls.get(kind).copied().unwrap_or(0);
        assert!(
            (got - per_txn * txns).abs() <= slack(per_txn),
            "{kind}: {got} calls for {txns} transactions ({per_txn} per transaction expected): {calls:?}"
        );
    }
    let delta: Vec<i64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    // Commits: one per transaction, plus the session setup of dbperf's connections.
    assert!(
        delta[0] >= txns && delta[0] <= txns + 100,
        "xact_commit grew by {} for {txns} transactions",
        delta[0]
    );
    assert!(
        (delta[1] - 2 * txns).abs() <= slack(2),
        "rows updated {} for {txns}",
        delta[1]
    );
    assert!(
        (delta[2] - txns).abs() <= slack(1),
        "rows inserted {} for {txns}",
        delta[2]
    );
    assert!(
        (delta[3] - txns).abs() <= slack(1),
        "rows deleted {} for {txns}",
        delta[3]
    );

    // The Unix socket directory works too.
    run_ok(
        sysbench_cmd(
            "oltp_point_select",
            "run",
            &pg.socket_url(),
            &[
                "--tables=2",
                "--table-size",
                &size,
                "--time=1",
                "--no-telemetry",
                "--results-dir",
            ],
        )
        .arg(results.path()),
    );

    run_ok(&mut sysbench_cmd("oltp_read_write", "cleanup", &url, &["--tables=2"]));
    assert_eq!(
        pg.psql("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'sbtest%'"),
        "0"
    );
}

#[test]
fn postgres_only_options_and_mysql_only_commands_fail_clearly() {
    let url = "postgres://sb:sb@127.0.0.1:1/sbtest";
    let out = sysbench_cmd("oltp_read_write", "prepare", url, &["--secondary=on"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--secondary"), "{err}");
    let out = sysbench_cmd("oltp_read_write", "run", url, &["--pgsql-ignore-errors=40P01,oops"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("\"oops\""), "{err}");
    // A MySQL client is refused on a PostgreSQL target, and the other way round.
    let out = sysbench_cmd("oltp_read_write", "run", url, &["--client-impl=mysql_async"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("mysql_async is a MySQL client"),
        "{err}"
    );
    let out = dbperf()
        .args([
            "pgbench",
            "select-only",
            "--client-impl",
            "mysql_async",
            "--target",
            url,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--client-impl"), "{err}");
    let out = sysbench_cmd(
        "oltp_read_write",
        "run",
        "mysql://root@127.0.0.1:1/x",
        &["--client-impl=tokio-postgres"],
    )
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("tokio-postgres is a PostgreSQL client"),
        "{err}"
    );
    let out = dbperf()
        .args(["tpcc", "prepare", "--warehouses", "1", "--target", url])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("PostgreSQL"), "{err}");
    let out = dbperf()
        .args(["pgbench", "init", "--target", "mysql://root@127.0.0.1:1/x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("needs a PostgreSQL target"),
        "{err}"
    );
}
