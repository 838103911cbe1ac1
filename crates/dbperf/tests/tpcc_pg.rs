//! TPC-C on a real PostgreSQL 15: prepare loads with COPY (the rows the MySQL loaders store,
//! with amounts computed on the client) and passes every clause 3.3.2 condition; a max-mode
//! run commits all five transaction types with the deck's mix and no errors, and the
//! database still passes the conditions afterwards; tpcc-mysql's MySQL schema is refused.

mod common;
#[path = "support/pg.rs"]
mod pg;
#[path = "support/tpcc_checks.rs"]
mod tpcc_checks;

use common::{dbperf, only_run_dir, read_json, run_ok};

fn check_passes(out: &str) {
    tpcc_checks::assert_conditions_pass(out, true);
}

#[test]
fn prepare_run_and_check_on_postgres() {
    if !pg::available() {
        return;
    }
    let db = pg::TempPg::start(&[]);
    let url = db.url();
    run_ok(dbperf().args([
        "tpcc",
        "prepare",
        "--warehouses",
        "1",
        "--threads",
        "2",
        "--target",
        &url,
    ]));
    assert_eq!(db.psql("SELECT COUNT(*) FROM stock"), "100000");
    // Undelivered orders' lines have a NULL delivery date (NULLIF evaluated by the client).
    assert_eq!(
        db.psql("SELECT COUNT(*) FROM order_line WHERE ol_delivery_d IS NULL AND ol_o_id <= 2100"),
        "0"
    );
    assert_ne!(
        db.psql("SELECT COUNT(*) FROM order_line WHERE ol_delivery_d IS NULL"),
        "0"
    );
    // Prices went in as decimals (cents / 100), not truncated to whole units.
    assert_ne!(
        db.psql("SELECT COUNT(*) FROM item WHERE i_price <> ROUND(i_price)"),
        "0"
    );
    assert_eq!(
        db.psql("SELECT MIN(i_price) >= 1 AND MAX(i_price) <= 100 FROM item"),
        "t"
    );
    assert_eq!(
        db.psql("SELECT indexname FROM pg_indexes WHERE tablename = 'customer' ORDER BY 1"),
        "customer_name\ncustomer_pkey"
    );
    let out = run_ok(dbperf().args(["tpcc", "check", "--warehouses", "1", "--target", &url]));
    check_passes(&String::from_utf8_lossy(&out.stdout));

    let results = tempfile::tempdir().unwrap();
    let out = run_ok(
        dbperf()
            .args([
                "tpcc",
                "run",
                "--warehouses",
                "1",
                "--threads",
                "2",
                "--time",
                "6",
                "--report-interval",
                "2",
                "--check",
                "--target",
                &url,
                "--results-dir",
            ])
            .arg(results.path()),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    check_passes(&text);
    assert!(text.contains("errors: none"), "{text}");
    let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
    for t in ["new_order", "payment", "order_status", "delivery", "stock_level"] {
        let n = summary["per_type"][t]["count"].as_u64().unwrap_or(0);
        assert!(n > 0, "{t} never committed: {summary}");
    }
    assert!(
        summary["server"]["version"]
            .as_str()
            .unwrap_or("")
            .starts_with("PostgreSQL 15"),
        "{}",
        summary["server"]
    );
    // Payment's money reached the warehouse as cents / 100.
    assert_ne!(db.psql("SELECT w_ytd - 300000 FROM warehouse"), "0.00");

    let bad = dbperf()
        .args([
            "tpcc",
            "prepare",
            "--warehouses",
            "1",
            "--schema",
            "tpcc-mysql",
            "--target",
            &url,
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--schema dbperf"));
    run_ok(dbperf().args(["tpcc", "cleanup", "--target", &url]));
    assert_eq!(
        db.psql("SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'"),
        "0"
    );
}
