//! `dbperf pgbench -f FILE@W` on a real PostgreSQL 15: two weighted script files using
//! `\set`, `-D`, `\if`, `\gset` and `\sleep` run for 2 s, and `pg_stat_statements` shows
//! their statements in the weights' proportions (and `\gset` really carried each value into
//! the next statement), in `-M prepared` and `-M simple`; a broken script exits non-zero
//! with `FILE:LINE` and no panic.

mod common;
use common::{dbperf, only_run_dir, read_json, run_ok};

#[path = "support/pg.rs"]
mod pg;
use pg::TempPg;

const COUNTER: &str = "-- read a counter, add :step to it
\\set id random(1, 50)
\\if :id > 0
SELECT v AS cur, id
  FROM kv WHERE id = :id \\gset
\\else
SELECT 'never' AS never;
\\endif
\\set nv :cur + :step
UPDATE kv SET v = :nv WHERE id = :id;
\\sleep 0 ms
";

const COUNT: &str = "SELECT count(*) AS n FROM kv;\n";

fn calls(pg: &TempPg, like: &str) -> i64 {
    pg.psql(&format!(
        "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '{like}'"
    ))
    .parse()
    .unwrap()
}

#[test]
fn weighted_script_files_run_in_proportion_and_broken_ones_point_at_file_and_line() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    let url = pg.url();
    pg.psql_as(
        "sb",
        "sbtest",
        "CREATE TABLE kv (id int PRIMARY KEY, v bigint NOT NULL)",
    );
    pg.psql_as(
        "sb",
        "sbtest",
        "INSERT INTO kv SELECT g, 0 FROM generate_series(1, 50) g",
    );
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter.sql");
    let count = dir.path().join("count.sql");
    std::fs::write(&counter, COUNTER).unwrap();
    std::fs::write(&count, COUNT).unwrap();
    pg.psql("SELECT pg_stat_statements_reset()");

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
                "2",
                "-D",
                "step=2",
            ])
            .arg("-f")
            .arg(format!("{}@3", counter.display()))
            .arg("-f")
            .arg(format!("{}@1", count.display()))
            .arg("--results-dir")
            .arg(results.path()),
    );
    let selects = calls(&pg, "SELECT v AS cur, id%");
    let updates = calls(&pg, "UPDATE kv SET v = $1 WHERE id = $2");
    let counts = calls(&pg, "SELECT count(*) AS n FROM kv");
    eprintln!("pg_stat_statements: {selects} selects, {updates} updates, {counts} counts");
    assert_eq!(calls(&pg, "SELECT $1 AS never"), 0, "\\if took the \\else branch");
    assert!(updates > 200, "too few transactions to compare: {updates} updates");
    assert_eq!(selects, updates, "each counter transaction reads, then writes");
    let ratio = updates as f64 / counts as f64;
    assert!(
        (2.5..3.6).contains(&ratio),
        "weights 3:1, got {updates} counter and {counts} count transactions"
    );
    // One client: each update wrote the value it read plus 2, so the total is 2 per update.
    let total: i64 = pg.psql("SELECT sum(v) FROM kv").parse().unwrap();
    assert_eq!(total, 2 * updates, "\\gset carried :cur into the UPDATE");
    let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
    let done = summary["transactions"]["total"].as_i64().unwrap();
    assert!(
        (done - updates - counts).abs() <= 1,
        "summary {done} vs {updates} + {counts}"
    );

    // -M simple: the values written into the text, \gset read from a text result.
    pg.psql("SELECT pg_stat_statements_reset()");
    pg.psql_as("sb", "sbtest", "UPDATE kv SET v = 0");
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
                "-M",
                "simple",
            ])
            .args(["-D", "step=3", "-f"])
            .arg(&counter)
            .arg("--results-dir")
            .arg(results.path()),
    );
    // The statements arrive with literals, which pg_stat_statements normalizes back to $n.
    let updates = calls(&pg, "UPDATE kv SET v = $1 WHERE id = $2");
    assert!(updates > 100, "{updates} updates in simple mode");
    let total: i64 = pg.psql("SELECT sum(v) FROM kv").parse().unwrap();
    assert_eq!(total, 3 * updates, "simple mode: \\gset carried :cur into the UPDATE");

    // A syntax error: refused before connecting, with the file, the line and a caret.
    let broken = dir.path().join("broken.sql");
    std::fs::write(&broken, "SELECT 1;\n\\set x 1 + * 2\n").unwrap();
    let out = dbperf()
        .args(["pgbench", "--target", &url, "--no-telemetry", "-T", "1", "-f"])
        .arg(&broken)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("{}:2: syntax error in expression", broken.display())),
        "{err}"
    );
    assert!(err.contains('^'), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // An undefined variable, found while running.
    std::fs::write(&broken, "SELECT 1;\nSELECT :nope;\n").unwrap();
    let results = tempfile::tempdir().unwrap();
    let out = dbperf()
        .args(["pgbench", "--target", &url, "--no-telemetry", "-T", "2", "-f"])
        .arg(&broken)
        .arg("--results-dir")
        .arg(results.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("{}:2: undefined variable \"nope\"", broken.display())),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    eprintln!("{err}");
}
