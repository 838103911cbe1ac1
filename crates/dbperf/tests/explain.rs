//! Each run's explanation against a real sandboxed MariaDB: a short TPC-C run with a small redo
//! log and a low `innodb_max_dirty_pages_pct`, explained by `dbperf analyze` (JSON) and
//! `dbperf report` (text): NOTPM per interval from `intervals.hlog` agreeing with `tpcc.json`,
//! a checkpoint age above 0 against the 8 MiB redo with the redo needed +25%, and the
//! dirty-pages limit equal to the server's variable; the same on the run's HTML page.

use std::path::Path;

use serde_json::Value;

mod common;
use common::{dbperf, only_run_dir, read_json, run_ok};

fn tpcc(url: &str, args: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["tpcc"].iter().chain(args).map(|s| s.to_string()).collect();
    v.extend(["--target".to_string(), url.to_string()]);
    v
}

fn analyze_json(dir: &Path, last: &str) -> Value {
    let out = run_ok(
        dbperf()
            .arg("analyze")
            .arg(dir)
            .args(["--format", "json", "--last", last]),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_tpcc_run_is_explained_with_notpm_checkpoint_age_and_the_dirty_limit() {
    let sb = dbperf::server::testing::TempSandbox::start_with(&[
        "innodb_log_file_size=8M",
        "innodb_buffer_pool_size=64M",
        "innodb_max_dirty_pages_pct=30",
    ])
    .expect("a sandboxed MariaDB starts");
    let url = sb.url();
    run_ok(dbperf().args(tpcc(&url, &["prepare", "--warehouses", "1", "--threads", "2"])));
    let results = tempfile::tempdir().unwrap();
    run_ok(
        dbperf()
            .args(tpcc(
                &url,
                &[
                    "run",
                    "--warehouses",
                    "1",
                    "--threads",
                    "4",
                    "--time",
                    "10",
                    "--report-interval",
                    "1",
                ],
            ))
            .arg("--results-dir")
            .arg(results.path()),
    );
    let dir = only_run_dir(results.path());
    let variable = |name: &str| -> String {
        read_json(&dir.join("manifest.json"))["server"]["variables"][name]
            .as_str()
            .unwrap()
            .to_string()
    };

    // The whole run: the average NOTPM per interval is the run's NOTPM.
    let whole = analyze_json(&dir, "10");
    let e = &whole["explanation"];
    let t = &e["throughput"]["value"];
    assert_eq!(t["figure"], "notpm", "{e}");
    let notpm = read_json(&dir.join("tpcc.json"))["notpm"].as_f64().unwrap();
    let average = t["average"].as_f64().unwrap();
    assert!(
        notpm > 0.0 && (average - notpm).abs() <= 0.1 * notpm,
        "NOTPM per interval averages {average}, tpcc.json says {notpm}: {e}"
    );
    assert!(t["cv_pct"].as_f64().unwrap() >= 0.0);
    // The analysis is still there beside it.
    assert!(whole["stability"].is_object(), "{whole}");

    // The last 4 s only.
    let last = analyze_json(&dir, "4s");
    let t = &last["explanation"]["throughput"]["value"];
    assert!((3..=5).contains(&t["intervals"].as_u64().unwrap()), "{t}");

    let c = &e["checkpoint"]["value"];
    let age = c["max_age_bytes"].as_u64().unwrap_or(0);
    assert!(age > 0, "a TPC-C run writes redo: {e}");
    let log_file_size: u64 = variable("innodb_log_file_size").parse().unwrap();
    assert_eq!(log_file_size, 8 << 20);
    assert_eq!(c["capacity_bytes"].as_u64(), Some(log_file_size), "{c}");
    // Checkpoint age in percent of its maximum; a redo is named only when this one did not
    // hold the age (it reached the async flush point, 87.5%), and then it is larger.
    let pct = c["max_age_pct"].as_f64().unwrap();
    match c["redo_needed_bytes"].as_u64() {
        Some(need) => {
            assert!(pct >= 87.5, "{c}");
            assert_eq!(need, (log_file_size as f64 * pct / 100.0 * 1.25).ceil() as u64, "{c}");
            assert!(need > log_file_size, "{c}");
        }
        None => assert!(pct < 87.5, "{c}"),
    }
    let redo_words = if c["redo_needed_bytes"].is_null() {
        "which held it"
    } else {
        "would have held it"
    };

    let d = &e["dirty_pages"]["value"];
    let limit: f64 = variable("innodb_max_dirty_pages_pct").parse().unwrap();
    assert_eq!(limit, 30.0);
    assert_eq!(d["limit_pct"].as_f64(), Some(limit), "{e}");
    // Figures the server does not provide are named, not 0.
    assert!(e["single_page_flushes_s"]["not_available"].is_string(), "{e}");

    let html = results.path().join("run.html");
    let out = run_ok(dbperf().arg("report").arg(&dir).arg("--html").arg(&html));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Explanation")
            && text.contains("notpm")
            && text.contains("against innodb_max_dirty_pages_pct 30")
            && text.contains("of its maximum (the sync flush point)")
            && text.contains(redo_words),
        "{text}"
    );
    // The run's HTML page has it too.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Explanation (second half of the measured phase)") && page.contains(redo_words),
        "the HTML run page shows the explanation"
    );
}
