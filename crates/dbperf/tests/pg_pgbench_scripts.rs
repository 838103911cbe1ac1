//! `dbperf pgbench -f FILE@W` on a real PostgreSQL 15: two weighted script files using
//! `\set`, `-D`, `\if`, `\gset` and `\sleep` run for 2 s, and `pg_stat_statements` shows
//! their statements in the weights' proportions (and `\gset` really carried each value into
//! the next statement), in `-M prepared` and `-M simple`, and the report's per-script lines
//! and `pgbench-scripts.json` count them; a broken script exits non-zero with `FILE:LINE` and
//! no panic. `-M extended` leaves no named statement on the server (each execution is an
//! unnamed Parse/Bind/Execute) where `-M prepared` leaves one per statement, and in both (and
//! with `--client-impl tokio-postgres`) a variable `\gset` from a NULL column, or `\set` to
//! NULL, is bound as SQL NULL.

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
    let out = run_ok(
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
                "-M",
                "prepared",
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
    // pgbench's per-script lines, and the same counts in pgbench-scripts.json.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "SQL script 1: {}\n - weight: 3 (targets 75.0% of total)",
            counter.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("SQL script 2: "), "{stdout}");
    let scripts = read_json(&only_run_dir(results.path()).join("pgbench-scripts.json"));
    let n = |k: usize| scripts[k]["transactions"].as_i64().unwrap();
    assert_eq!(scripts[0]["name"], "counter.sql");
    assert_eq!(scripts[1]["weight"], 1);
    assert_eq!(n(0) + n(1), done);
    assert!(
        (n(0) - updates).abs() <= 1,
        "{} counter transactions, {updates} updates",
        n(0)
    );
    assert!(stdout.contains(&format!(" - {} transactions (", n(1))), "{stdout}");

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
        err.contains(&format!("{}:2: syntax error in command \"set\"", broken.display())),
        "{err}"
    );
    assert!(err.contains('^'), "{err}");
    assert!(!err.contains("panicked"), "{err}");

    // An undefined variable in an expression, found while running (in SQL, pgbench sends it
    // as written).
    std::fs::write(&broken, "SELECT 1;\n\\set y :nope + 1\n").unwrap();
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

/// Reads how many named statements the session has, and a NULL, then writes both and a
/// NULL from `\set`.
const NAMED: &str = "SELECT count(*) AS named, NULL::int AS nothing FROM pg_prepared_statements \\gset
\\set none NULL
INSERT INTO seen (named, v, w) VALUES (:named, :nothing, :none);
";

#[test]
fn extended_mode_parses_every_execution_and_null_variables_bind_as_null() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    let url = pg.url();
    pg.psql_as(
        "sb",
        "sbtest",
        "CREATE TABLE seen (named bigint NOT NULL, v int, w text)",
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("named.sql");
    std::fs::write(&script, NAMED).unwrap();
    let run = |mode: &str, client: &str| {
        pg.psql("SELECT pg_stat_statements_reset()");
        pg.psql_as("sb", "sbtest", "TRUNCATE seen");
        let results = tempfile::tempdir().unwrap();
        run_ok(
            dbperf()
                .args([
                    "pgbench",
                    "--target",
                    &url,
                    "--no-telemetry",
                    "-c",
                    "2",
                    "-T",
                    "1",
                    "-M",
                    mode,
                    "--client-impl",
                    client,
                    "-f",
                ])
                .arg(&script)
                .arg("--results-dir")
                .arg(results.path()),
        );
        let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
        let done = summary["transactions"]["total"].as_i64().unwrap();
        let row = pg.psql_as(
            "sb",
            "sbtest",
            "SELECT count(*), count(*) FILTER (WHERE v IS NULL AND w IS NULL), min(named), max(named) FROM seen",
        );
        let got: Vec<i64> = row.split('\t').map(|x| x.parse().unwrap()).collect();
        let inserts = calls(&pg, "INSERT INTO seen (named, v, w) VALUES ($1, $2, $3)");
        eprintln!("-M {mode} --client-impl {client}: {done} transactions, seen {got:?}, {inserts} inserts");
        assert!(done > 50, "-M {mode}: {done} transactions");
        assert!(
            (got[0] - done).abs() <= 2,
            "-M {mode}: {} rows for {done} transactions",
            got[0]
        );
        assert_eq!(got[1], got[0], "-M {mode}: every NULL variable was bound as NULL");
        assert_eq!(inserts, got[0], "-M {mode}: each insert a bound statement");
        (got[2], got[3])
    };
    // Prepared: both statements are named on the server from the first transaction on.
    assert_eq!(run("prepared", "wire"), (2, 2));
    // Extended: nothing named, ever; each statement went as an unnamed Parse/Bind/Execute.
    assert_eq!(run("extended", "wire"), (0, 0));
    // tokio-postgres prepares both statements too, and binds the NULLs as NULL.
    assert_eq!(run("prepared", "tokio-postgres"), (2, 2));
}
