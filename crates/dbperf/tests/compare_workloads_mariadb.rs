//! Each workload's own figures in `dbperf compare --metric` and in the catalog's `metrics`
//! table, from real runs on one sandboxed MariaDB: two short TPC-C runs (1 warehouse) and two
//! TPC-H power tests (SF 0.01, one of them repeated).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod common;
use common::{dbperf, read_json, run_dirs, run_ok, sandbox};

/// Runs `cmd` (which writes one run under `results`) and returns the new run directory.
fn new_run(results: &Path, cmd: &mut Command) -> PathBuf {
    let before = run_dirs(results);
    run_ok(cmd.arg("--results-dir").arg(results));
    let new: Vec<PathBuf> = run_dirs(results).into_iter().filter(|d| !before.contains(d)).collect();
    assert_eq!(new.len(), 1, "{new:?}");
    new[0].clone()
}

fn compare_json(a: &Path, b: &Path, metric: &str) -> Value {
    let out = run_ok(
        dbperf()
            .arg("compare")
            .arg(a)
            .arg(b)
            .args(["--metric", metric, "--by", "run", "--format", "json"]),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The catalog's value of `name` for the run in `dir`.
fn catalog_metric(results: &Path, dir: &Path, name: &str) -> f64 {
    let id = dir.file_name().unwrap().to_str().unwrap();
    let out = run_ok(
        dbperf()
            .args(["results", "sql"])
            .arg(format!(
                "SELECT value FROM metrics WHERE run_id = '{id}' AND name = '{name}'"
            ))
            .arg("--results-dir")
            .arg(results),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter_map(|l| l.trim().trim_matches('|').trim().parse::<f64>().ok())
        .next()
        .unwrap_or_else(|| panic!("no metric {name} for {id}: {text}"))
}

#[test]
fn tpcc_and_tpch_runs_compare_and_are_catalogued_by_their_own_figures() {
    let sb = sandbox();
    let url = sb.url();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");

    // TPC-C: NOTPM from tpcc.json, per run.
    run_ok(dbperf().args(["tpcc", "prepare", "--warehouses", "1", "--target", &url]));
    let tpcc = |threads: &str| {
        new_run(
            &results,
            dbperf().args([
                "tpcc",
                "run",
                "--warehouses",
                "1",
                "--threads",
                threads,
                "--time",
                "4",
                "--target",
                &url,
            ]),
        )
    };
    let (c1, c2) = (tpcc("1"), tpcc("2"));
    let notpm = |d: &Path| read_json(&d.join("tpcc.json"))["notpm"].as_f64().unwrap();
    assert!(notpm(&c1) > 0.0 && notpm(&c2) > 0.0);
    let v = compare_json(&c1, &c2, "notpm");
    assert_eq!(v["metric"], "notpm", "{v}");
    assert_eq!(v["unit"], "New-Orders/min", "{v}");
    let cells: Vec<f64> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["cells"].as_array().unwrap().iter())
        .filter_map(|c| c["median"].as_f64())
        .collect();
    let mut expected = vec![notpm(&c1), notpm(&c2)];
    let mut got = cells.clone();
    expected.sort_by(f64::total_cmp);
    got.sort_by(f64::total_cmp);
    assert_eq!(got, expected, "{v}");
    // A TPC-H figure on TPC-C runs: refused, naming what the runs do have.
    let out = dbperf()
        .arg("compare")
        .arg(&c1)
        .arg(&c2)
        .args(["--metric", "geomean"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("--metric geomean") && err.contains("notpm") && err.contains("tps"),
        "{err}"
    );
    // The catalog holds the same NOTPM, queryable with SQL.
    assert_eq!(catalog_metric(&results, &c1, "notpm"), notpm(&c1));
    assert!(catalog_metric(&results, &c2, "tps") > 0.0);

    // TPC-H power: per-query seconds (every repetition a sample) and the geometric mean.
    // (TPC-C's tables go first: both schemas have `customer` and `orders`.)
    run_ok(dbperf().args(["tpcc", "cleanup", "--target", &url]));
    run_ok(dbperf().args(["tpch", "prepare", "--sf", "0.01", "--target", &url]));
    let power = |repeat: &str| {
        new_run(
            &results,
            dbperf().args(["tpch", "power", "--no-explain", "--repeat", repeat, "--target", &url]),
        )
    };
    let (h1, h2) = (power("2"), power("1"));
    let v = compare_json(&h1, &h2, "q1");
    assert_eq!(
        (v["metric"].as_str(), v["unit"].as_str()),
        (Some("q1"), Some("s")),
        "{v}"
    );
    assert_eq!(v["higher_is_better"], false, "{v}");
    let base = &v["rows"][0]["cells"][0];
    assert_eq!(base["n"], 2, "two repetitions, two samples: {v}");
    let report = read_json(&h1.join("tpch.json"));
    let q1 = report["queries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["query"] == 1)
        .unwrap();
    assert_eq!(base["median"], q1["median"], "{v}");
    assert_eq!((&base["min"], &base["max"]), (&q1["min"], &q1["max"]), "{v}");
    let v = compare_json(&h1, &h2, "geomean");
    assert!(v["rows"][0]["cells"][1]["median"].as_f64().unwrap() > 0.0, "{v}");
    // The DBT-3 table: one row per query and the geometric mean, the first run the baseline.
    let v = compare_json(&h1, &h2, "queries");
    let labels: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels.len(), 23, "{labels:?}");
    assert_eq!((labels[0], labels[21], labels[22]), ("Q1", "Q22", "geomean"));
    assert_eq!(v["rows"][0]["cells"][0], *base, "{v}");
    // TPC-C and TPC-H in one table: refused.
    let out = dbperf().arg("compare").arg(&c1).arg(&h1).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("mix workloads"));
    // In the catalog: the median over the repetitions, and the geometric mean.
    assert_eq!(catalog_metric(&results, &h1, "q1"), q1["median"].as_f64().unwrap());
    assert!(catalog_metric(&results, &h2, "geomean") > 0.0);
}
