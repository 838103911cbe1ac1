//! Warnings about artifacts of the measurement against real runs: a 1- and a 2-connection
//! read-only run on one sandbox, each a few seconds long. `dbperf analyze`, `dbperf compare`
//! and `dbperf report --html` name the short runs (`too_few_intervals`) with their evidence,
//! and the telemetry's own switches on the server (InnoDB monitors, Performance Schema
//! consumers) are never a configuration difference.

use std::path::PathBuf;

use serde_json::Value;

mod common;
use common::{dbperf, run_dirs, run_ok, sandbox};

const KINDS: [&str; 8] = [
    "too_few_intervals",
    "superlinear_scaling",
    "client_bound",
    "leftover_flushing",
    "unequal_start_state",
    "startup_transient",
    "pfs_mismatch",
    "config_differs",
];

#[test]
fn short_runs_are_named_with_their_evidence_and_dbperfs_own_switches_are_not_differences() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let sb = sandbox();
    let common = ["--tables=1", "--table-size=1000", "--target"];
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_read_only", "prepare"])
            .args(common)
            .arg(sb.url()),
    );
    let mut runs: Vec<PathBuf> = Vec::new();
    for threads in ["--threads=1", "--threads=2"] {
        let before = run_dirs(&results);
        run_ok(
            dbperf()
                .args(["sysbench", "oltp_read_only", "run", "--time=3", threads])
                .args(common)
                .arg(sb.url())
                .arg("--results-dir")
                .arg(&results),
        );
        runs.extend(run_dirs(&results).into_iter().filter(|d| !before.contains(d)));
    }
    drop(sb);
    assert_eq!(runs.len(), 2, "{runs:?}");

    // One run: 3 one-second intervals are too few to judge, said with the figures.
    let out = run_ok(dbperf().args(["analyze", "--format", "json"]).arg(&runs[0]));
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    let short = a["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "too_few_intervals")
        .unwrap_or_else(|| panic!("no too_few_intervals: {a}"));
    let n = short["evidence"]["intervals"].as_u64().unwrap();
    assert!((1..10).contains(&n), "{short}");
    assert_eq!(short["evidence"]["needed"], 10);

    // The comparison: every warning has a known kind, a message and evidence; both runs are
    // named as short; nothing about the configuration, which is one server's.
    let out = run_ok(dbperf().args(["compare", "--format", "json"]).args(&runs));
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = c["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings array: {c}"));
    eprintln!("{}", serde_json::to_string_pretty(warnings).unwrap());
    for w in warnings {
        let kind = w["kind"].as_str().unwrap();
        assert!(KINDS.contains(&kind), "{w}");
        assert!(w["message"].as_str().is_some_and(|m| m.len() > 40), "{w}");
        assert!(w["evidence"].is_object(), "{w}");
        assert!(kind != "config_differs" && kind != "pfs_mismatch", "{w}");
    }
    let short = warnings.iter().find(|w| w["kind"] == "too_few_intervals").unwrap();
    assert_eq!(short["evidence"]["runs"].as_array().map(Vec::len), Some(2), "{short}");
    if let Some(s) = warnings.iter().find(|w| w["kind"] == "superlinear_scaling") {
        assert_eq!(s["evidence"]["users"], serde_json::json!([1, 2]), "{s}");
    }
    let out = run_ok(dbperf().arg("compare").args(&runs));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("warning: all 2 runs ("), "{text}");
    assert!(!text.contains("innodb_monitor"), "{text}");

    // The HTML report of both has the Warnings section.
    let html = tmp.path().join("r.html");
    run_ok(dbperf().arg("report").args(&runs).arg("--html").arg(&html));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2>Warnings</h2>") && page.contains("too_few_intervals: "),
        "no Warnings section"
    );
}
