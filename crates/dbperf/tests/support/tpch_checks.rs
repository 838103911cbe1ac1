//! The TPC-H steps both server families share in their tests: load SF 0.01 and find the
//! dbgen row counts, validate against the golden answers, and a power test with a tiny
//! timeout whose every query is cancelled on the server while the next one still runs.
//! Each test file passes its own SQL runner.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::common::{dbperf, read_json, run_dirs, run_ok};

/// Rows per table at SF 0.01 (dbgen 2.17.3).
pub const SF001_ROWS: [(&str, u64); 8] = [
    ("region", 5),
    ("nation", 25),
    ("supplier", 100),
    ("customer", 1500),
    ("part", 2000),
    ("partsupp", 8000),
    ("orders", 15000),
    ("lineitem", 60175),
];

/// Golden answers at SF 0.01, made by the pipeline validated against the official SF 1 set.
pub fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tpch/sf0.01")
}

/// `dbperf tpch prepare` at SF 0.01 over 3 connections, then every table's row count
/// (`count` runs a `SELECT COUNT(*)`) must be dbgen's.
pub fn prepare_sf001(url: &str, count: &mut dyn FnMut(&str) -> u64) {
    run_ok(dbperf().args([
        "tpch",
        "prepare",
        "--scale-factor",
        "0.01",
        "--threads",
        "3",
        "--target",
        url,
    ]));
    for (table, rows) in SF001_ROWS {
        assert_eq!(count(&format!("SELECT COUNT(*) FROM {table}")), rows, "{table}");
    }
}

/// `dbperf tpch validate` against the golden answers: 22 PASS.
pub fn validate_golden(url: &str) {
    let out = run_ok(
        dbperf()
            .args(["tpch", "validate", "--answers"])
            .arg(golden())
            .args(["--target", url]),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("PASS").count(), 22, "{text}");
}

/// A power test with a 1 µs timeout into `results`, where `earlier` is the only run so
/// far: every query ends as a timeout or in time (never an error), at least one times out.
/// Returns the new run's directory and its `tpch.json`.
pub fn power_with_tiny_timeout(url: &str, results: &Path, earlier: &Path) -> (PathBuf, Value) {
    run_ok(
        dbperf()
            .args([
                "tpch",
                "power",
                "--timeout",
                "0.000001",
                "--no-refresh",
                "--no-explain",
                "--target",
                url,
            ])
            .arg("--results-dir")
            .arg(results),
    );
    let timed = run_dirs(results)
        .into_iter()
        .find(|d| d != earlier)
        .expect("the timed-out run's directory");
    let tpch = read_json(&timed.join("tpch.json"));
    let statuses: Vec<&str> = tpch["runs"][0]["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.len(), 22);
    assert!(statuses.iter().all(|s| *s != "error"), "{statuses:?}");
    assert!(statuses.contains(&"timeout"), "{statuses:?}");
    (timed, tpch)
}
