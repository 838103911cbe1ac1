//! Stored intervals against live lines on a real sandboxed MariaDB: intervals are stored each
//! second whatever `--report-interval` is, the live lines keep the report interval with figures
//! over all of it, and the live metrics move every second from the start of a run whose report
//! interval is long (TPC-C's 10 s).

use std::io::BufRead;
use std::process::Stdio;
use std::time::{Duration, Instant};

use dbperf::server::testing::TempSandbox;
use serde_json::Value;

mod common;
use common::{dbperf, http_get, only_run_dir, program_available, read_json, run_ok};

/// The tests take turns: the metrics test times its first two seconds, which a second server
/// loading beside it on a small box could stretch.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn sandbox() -> Option<TempSandbox> {
    program_available("mariadbd", "mariadb-server")
        .then(|| TempSandbox::start().expect("a sandboxed MariaDB starts (apt-get install -y mariadb-server)"))
}

#[test]
fn a_two_second_report_interval_stores_one_second_intervals_and_prints_lines_over_two() {
    let Some(sb) = sandbox() else { return };
    let _turn = serial();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let url = sb.url();
    let common = ["--tables=1", "--table-size=2000"];
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_read_only", "prepare", "--target", &url])
            .args(common),
    );
    let out = run_ok(
        dbperf()
            .args(["sysbench", "oltp_read_only", "run", "--target", &url])
            .args(common)
            .args(["--threads=2", "--time=4", "--report-interval=2", "--results-dir"])
            .arg(&results),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("[ ")).collect();
    assert_eq!(lines.len(), 2, "one line per 2 s:\n{stdout}");
    // The last line ends at the last transaction of the grace period: "[ 4s ]", or "[ 4.0s ]"
    // when that came more than 5 ms after the deadline (a loaded machine).
    assert!(
        lines[0].starts_with("[ 2s ]") && (lines[1].starts_with("[ 4s ]") || lines[1].starts_with("[ 4.0s ]")),
        "{stdout}"
    );

    let dir = only_run_dir(&results);
    let rows: Vec<Value> = std::fs::read_to_string(dir.join("intervals.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap();
    // Four 1 s intervals; the last runs to the last transaction of the grace period.
    assert_eq!(rows.len(), 4, "{rows:?}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(f(r, "start_s"), i as f64, "{r}");
        if i < 3 {
            assert_eq!(f(r, "end_s"), i as f64 + 1.0, "{r}");
        }
    }
    let whole = &rows;
    // The first line's figure is over both seconds it covers, not the last one's.
    let tps_of_line = |line: &str| -> f64 {
        let rest = &line[line.find("tps: ").unwrap() + 5..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    let two_seconds = (f(&whole[0], "transactions") + f(&whole[1], "transactions")) / 2.0;
    assert!(two_seconds > 10.0, "{rows:?}");
    assert!(
        (tps_of_line(lines[0]) - two_seconds).abs() < 0.01,
        "{} against {two_seconds} (rows {rows:?})",
        lines[0]
    );
    // The totals are the intervals' sum.
    let summary = read_json(&dir.join("summary.json"));
    let stored: f64 = rows.iter().map(|r| f(r, "transactions")).sum();
    assert_eq!(summary["transactions"]["total"].as_f64().unwrap(), stored);
    assert_eq!(summary["intervals"].as_u64().unwrap(), rows.len() as u64);
}

/// The value of the metric line starting with `prefix` in a scrape (`None`: not there).
fn metric(scrape: &str, prefix: &str) -> Option<f64> {
    scrape
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn tpcc_metrics_move_within_two_seconds_of_the_start_despite_a_ten_second_report_interval() {
    let Some(sb) = sandbox() else { return };
    let _turn = serial();
    let tmp = tempfile::tempdir().unwrap();
    let url = sb.url();
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
    let mut child = dbperf()
        .args(["tpcc", "run", "--warehouses", "1", "--mode", "max", "--threads", "2"])
        .args(["--time", "4", "--report-interval", "10", "--no-telemetry"])
        .args(["--metrics-addr", "127.0.0.1:0", "--target", &url, "--results-dir"])
        .arg(tmp.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut addr = None;
    // The run starts when its connections are open.
    loop {
        let line = lines.next().expect("the run starts").unwrap();
        if let Some(rest) = line.strip_prefix("Metrics: http://") {
            addr = Some(rest.trim_end_matches("/metrics").to_string());
        }
        if line.starts_with("Threads started!") {
            break;
        }
    }
    let started = Instant::now();
    let addr = addr.expect("a Metrics: line before the start");
    let (mut threads, mut transactions, mut scrape);
    loop {
        scrape = http_get(&addr, "/metrics");
        threads = metric(&scrape, "dbperf_threads ").unwrap_or(0.0);
        transactions = metric(&scrape, "dbperf_transactions_total ").unwrap_or(0.0);
        if (threads > 0.0 && transactions > 0.0) || started.elapsed() > Duration::from_secs(3) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = started.elapsed();
    assert!(
        threads == 2.0 && transactions > 0.0 && took <= Duration::from_secs(2),
        "after {took:?}: threads {threads}, transactions {transactions}\n{scrape}"
    );
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(child.wait().unwrap().success(), "{rest:?}");
    // One live line (the run is shorter than the report interval: its end), 1 s intervals stored.
    assert_eq!(rest.iter().filter(|l| l.starts_with("[ ")).count(), 1, "{rest:?}");
    let dir = only_run_dir(tmp.path());
    let rows = std::fs::read_to_string(dir.join("intervals.jsonl")).unwrap();
    assert!(rows.lines().count() >= 4, "{rows}");
}
