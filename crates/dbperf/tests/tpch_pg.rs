//! TPC-H against a real PostgreSQL 15: `dbperf tpch prepare` loads SF 0.01 with COPY and
//! builds the keys and indexes after it, the 22 validation answers match the golden ones
//! (made on MariaDB by the pipeline validated against the official SF 1 answers) and those
//! SQLite computes on the same data (`support/tpch_sqlite.rs`), a power
//! test with its refresh pair leaves the data as it was, and a tiny timeout cancels every
//! query on the server (`pg_cancel_backend`) while the next one still runs.

mod common;
#[path = "support/pg.rs"]
mod pg;
#[path = "support/tpch_checks.rs"]
mod tpch_checks;
#[path = "support/tpch_sqlite.rs"]
mod tpch_sqlite;

use common::{dbperf, only_run_dir, read_json, run_ok};

#[test]
fn load_validate_power_and_timeouts_on_postgres() {
    if !pg::available() {
        return;
    }
    let db = pg::TempPg::start(&[]);
    let url = db.url();
    tpch_checks::prepare_sf001(&url, &mut |sql| db.psql(sql).parse().unwrap());
    // Keys and DBT-3's indexes are built after COPY; ANALYZE ran.
    let indexes = db.psql("SELECT indexname FROM pg_indexes WHERE tablename = 'lineitem' ORDER BY 1");
    assert_eq!(
        indexes.lines().collect::<Vec<_>>(),
        [
            "i_l_partkey_suppkey",
            "i_l_receiptdate",
            "i_l_shipdate",
            "i_l_suppkey",
            "lineitem_pkey"
        ]
    );
    assert_ne!(
        db.psql("SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'orders'"),
        "f"
    );
    // A dialect the target does not speak is refused by name.
    let wrong = dbperf()
        .args(["tpch", "cleanup", "--dialect", "mysql", "--target", &url])
        .output()
        .unwrap();
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("--dialect"));

    tpch_checks::validate_golden(&url);
    tpch_sqlite::validate_against_sqlite(&url);

    let results = tempfile::tempdir().unwrap();
    let out = run_ok(
        dbperf()
            .args([
                "tpch",
                "power",
                "--seed",
                "101000000",
                "--target",
                &url,
                "--results-dir",
            ])
            .arg(results.path()),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Power@Size ") && stdout.contains("server PostgreSQL 15."),
        "{stdout}"
    );
    let run = only_run_dir(results.path());
    let tpch = read_json(&run.join("tpch.json"));
    assert_eq!(tpch["runs"][0]["queries"].as_array().unwrap().len(), 22);
    assert!(tpch["power_at_size"].as_f64().unwrap() > 0.0);
    assert!(
        tpch["queries"][0]["plan"][0]["Plan"].is_object(),
        "EXPLAIN (FORMAT JSON) stored: {}",
        tpch["queries"][0]["plan"]
    );
    // RF1 then RF2 leave as many orders as before: dbgen's update set 1 (10 orders at SF
    // 0.01, keys with bit 3 set) is in, base orders 1..10 are gone.
    assert_eq!(db.psql("SELECT COUNT(*) FROM orders"), "15000");
    assert_eq!(db.psql("SELECT COUNT(*) FROM orders WHERE (o_orderkey & 8) <> 0"), "10");
    assert_eq!(db.psql("SELECT MIN(o_orderkey) FROM orders"), "9");
    assert_eq!(
        db.psql("SELECT COUNT(*) FROM orders WHERE o_orderkey IN (1, 2, 3, 4, 5, 6, 7, 32, 33, 34)"),
        "0"
    );

    tpch_checks::power_with_tiny_timeout(&url, results.path(), &run);
    // Nothing is left running on the server.
    assert_eq!(
        db.psql("SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query ILIKE '%lineitem%' AND pid <> pg_backend_pid()"),
        "0"
    );
    run_ok(dbperf().args(["tpch", "cleanup", "--target", &url]));
    assert_eq!(
        db.psql("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'"),
        "0"
    );
}
