//! `dbperf pgbench -f FILE` on a sandboxed MariaDB: the same script language on a MySQL
//! target (`:name` bound as `?`), `\gset` carrying a value read into the next statement;
//! NULL variables (`\gset` from a NULL column, `\set` to NULL) bound as SQL NULL through
//! the binary protocol by both MySQL clients; the built-ins (PostgreSQL's SQL) and `-M
//! extended` (PostgreSQL's unnamed statements) are refused there with a hint.

use dbperf::driver::mysql::IgnoreErrors;
use dbperf::driver::wire::WireSession;
use dbperf::driver::{Session, Target};

mod common;
use common::{block_on, dbperf, only_run_dir, read_json, run_ok, sandbox};

/// Its block comment alone before a meta-command is a command of pgbench's (an empty query
/// on PostgreSQL), which MariaDB would refuse ("Query was empty"): it is not sent here.
const COUNTER: &str = "/* one counter of twenty,
   moved by a step */
\\set id random(1, 20)
SELECT v AS cur FROM kv WHERE id = :id \\gset
UPDATE kv SET v = :cur + :step WHERE id = :id;
";

/// Writes a NULL read from a column and a NULL `\set`, next to a value that is not NULL.
const NULLS: &str = "SELECT NULL AS nothing, 1 AS one \\gset
\\set none NULL
INSERT INTO seen (one, v, w) VALUES (:one, :nothing, :none);
";

#[test]
fn a_script_file_runs_on_mariadb_with_gset() {
    let sb = sandbox();
    let url = sb.url();
    let target = Target::parse(&url).unwrap();
    let sum = || {
        block_on(async {
            let mut s = WireSession::connect(&target, IgnoreErrors::sysbench_default())
                .await
                .unwrap();
            let rows = s.query_rows("SELECT sum(v) FROM kv").await.unwrap();
            rows[0][0].clone().unwrap().parse::<i64>().unwrap()
        })
    };
    block_on(async {
        let mut s = WireSession::connect(&target, IgnoreErrors::sysbench_default())
            .await
            .unwrap();
        s.query("CREATE TABLE kv (id INT PRIMARY KEY, v BIGINT NOT NULL)")
            .await
            .unwrap();
        let values: Vec<String> = (1..=20).map(|i| format!("({i}, 0)")).collect();
        s.query(&format!("INSERT INTO kv VALUES {}", values.join(",")))
            .await
            .unwrap();
    });
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("counter.sql");
    std::fs::write(&script, COUNTER).unwrap();
    let results = tempfile::tempdir().unwrap();
    run_ok(
        dbperf()
            .args([
                "pgbench",
                "--target",
                &url,
                "--no-telemetry",
                "-c",
                "1",
                "-T",
                "1",
                "-D",
                "step=5",
                "-f",
            ])
            .arg(&script)
            .arg("--results-dir")
            .arg(results.path()),
    );
    let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
    let done = summary["transactions"]["total"].as_i64().unwrap();
    assert!(done > 100, "{done} transactions");
    let total = sum();
    assert_eq!(total % 5, 0);
    assert!(
        (total / 5 - done).abs() <= 1,
        "sum {total} after {done} transactions of +5"
    );

    // NULL variables: prepared INSERTs (COM_STMT_EXECUTE, the NULL bitmap) by either client
    // leave rows whose two columns are NULL.
    let nulls = dir.path().join("nulls.sql");
    std::fs::write(&nulls, NULLS).unwrap();
    // The second column of the first row `sql` returns (none for a statement without rows).
    let server = |sql: &str| {
        block_on(async {
            let mut s = WireSession::connect(&target, IgnoreErrors::sysbench_default())
                .await
                .unwrap();
            let rows = s.query_rows(sql).await.unwrap();
            rows.first().map(|r| r[1].clone().unwrap().parse::<i64>().unwrap())
        })
    };
    server("CREATE TABLE seen (id INT AUTO_INCREMENT PRIMARY KEY, one INT NOT NULL, v INT, w VARCHAR(10))");
    for client in ["wire", "mysql_async"] {
        server("TRUNCATE seen");
        let stmt_executes = || server("SHOW GLOBAL STATUS LIKE 'Com_stmt_execute'").unwrap();
        let before = stmt_executes();
        let results = tempfile::tempdir().unwrap();
        run_ok(
            dbperf()
                .args(["pgbench", "--target", &url, "--no-telemetry", "-c", "1", "-T", "1"])
                .args(["-M", "prepared", "--client-impl", client, "-f"])
                .arg(&nulls)
                .arg("--results-dir")
                .arg(results.path()),
        );
        let executes = stmt_executes() - before;
        let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
        let done = summary["transactions"]["total"].as_i64().unwrap();
        let rows = server("SELECT 0, count(*) FROM seen").unwrap();
        let null = server("SELECT 0, count(*) FROM seen WHERE v IS NULL AND w IS NULL AND one = 1").unwrap();
        eprintln!("--client-impl {client}: {done} transactions, {rows} rows, {null} with NULLs, {executes} executes");
        assert!(done > 50, "{client}: {done} transactions");
        assert!(
            (rows - done).abs() <= 1,
            "{client}: {rows} rows for {done} transactions"
        );
        assert_eq!(null, rows, "{client}: every NULL variable was bound as NULL");
        assert!(
            executes >= 2 * rows,
            "{client}: {executes} COM_STMT_EXECUTEs for {rows} rows"
        );
    }

    let out = dbperf()
        .args(["pgbench", "tpcb-like", "-f"])
        .arg(&script)
        .args(["--target", &url, "-T", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("run script files (-f) on a MySQL target"), "{err}");

    let out = dbperf()
        .args(["pgbench", "-M", "extended", "-f"])
        .arg(&script)
        .args(["--target", &url, "-T", "1", "--no-telemetry"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("MySQL has no unnamed statements"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
