//! Telemetry during real sysbench runs on sandboxed MariaDB: `telemetry.jsonl` on the run's
//! clock, the live line, the catalog rows, sync flushing with a tiny redo log (every stall found
//! put down to the checkpoint) and none with a large one, InnoDB waits with Performance Schema
//! instruments, a frozen server found as a stall by `dbperf analyze`, and `--no-telemetry`; the
//! same checkpoint analysis on the classic servers (MySQL 5.6, MariaDB 10.1 with XtraDB).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use dbperf::server::testing::TempSandbox;
use serde_json::Value;

mod common;
use common::{available, dbperf, only_run_dir, run_ok, wait_for_intervals};

fn telemetry(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("telemetry.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Prepares 4 x 50k rows (45 MB, 2,800 pages: enough distinct pages that a sync flush has real
/// work) and runs oltp_write_only for `secs` at 8 connections.
fn write_run(sb: &TempSandbox, results: &Path, secs: u32, extra: &[&str]) -> (Output, PathBuf) {
    let url = sb.url();
    let common = ["--tables=4", "--table-size=50000"];
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_write_only", "prepare", "--target", &url])
            .args(common),
    );
    let out = run_ok(
        dbperf()
            .args([
                "sysbench",
                "oltp_write_only",
                "run",
                "--target",
                &url,
                "--threads=8",
                "--report-interval=1",
            ])
            .arg(format!("--time={secs}"))
            .arg("--results-dir")
            .arg(results)
            .args(common)
            .args(extra),
    );
    (out, only_run_dir(results))
}

/// `dbperf sysbench oltp_point_select COMMAND` on one table of 1,000 rows at `url`.
fn point_select(command: &str, url: &str) -> Command {
    let mut c = dbperf();
    c.args([
        "sysbench",
        "oltp_point_select",
        command,
        "--target",
        url,
        "--tables=1",
        "--table-size=1000",
    ]);
    c
}

fn max_of(samples: &[Value], key: &str) -> f64 {
    samples
        .iter()
        .filter_map(|s| s["server"][key].as_f64())
        .fold(f64::MIN, f64::max)
}

/// The flushing settings of `examples/redo-stalls.toml`: the page cleaner does little in the
/// background, so redo space is reclaimed by sync flushes that writers wait for.
const LAZY_FLUSHING: [&str; 4] = [
    "innodb_buffer_pool_size=256M",
    "innodb_io_capacity=100",
    "innodb_io_capacity_max=100",
    "innodb_adaptive_flushing=OFF",
];

fn sandbox_with_redo(size: &str) -> TempSandbox {
    let redo = format!("innodb_log_file_size={size}");
    let mut settings = vec![redo.as_str()];
    settings.extend(LAZY_FLUSHING);
    TempSandbox::start_with(&settings).expect("sandbox starts")
}

fn analysis(dir: &Path) -> Value {
    serde_json::from_slice(&run_ok(dbperf().args(["analyze", "--format", "json"]).arg(dir)).stdout).unwrap()
}

/// Stalls one of whose causes is the checkpoint age.
fn checkpoint_stalls(analysis: &Value) -> Vec<&Value> {
    analysis["stalls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["causes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c.as_str().unwrap().starts_with("checkpoint age reached"))
        })
        .collect()
}

#[test]
fn a_tiny_redo_log_holds_the_checkpoint_at_its_maximum_and_a_large_one_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let small = sandbox_with_redo("8M");
    let (out, dir) = write_run(&small, &tmp.path().join("small"), 10, &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| ckpt "), "the live line shows checkpoint age:\n{text}");
    let samples = telemetry(&dir);
    // One sample a second on the intervals' clock (t_s counts from the run's time zero).
    assert!((8..=12).contains(&samples.len()), "{} samples", samples.len());
    let mut previous = 0.0;
    for (i, s) in samples.iter().enumerate() {
        let t = s["t_s"].as_f64().unwrap();
        // Taken at whole seconds of the run (plus what the server's queries took, which a
        // loaded CI box can stretch), in order.
        assert!(t > previous && t - t.floor() < 0.9, "sample {i} at {t} s");
        previous = t;
        assert!(s["os"]["cpus"].as_array().is_some_and(|c| !c.is_empty()));
        assert!(s["client"]["cpu_pct"].as_f64().unwrap() > 0.0);
    }
    assert!(max_of(&samples, "checkpoint_pct") >= 95.0, "{samples:?}");
    assert!(max_of(&samples, "pages_written_s") > 0.0);
    let small_analysis = analysis(&dir);
    let notes = small_analysis["notes"].to_string();
    assert!(notes.contains("checkpoint age: at most"), "{small_analysis}");
    // Writers wait for sync flushes: checkpoint age sits at its maximum for most of the run.
    // Whether that shows as distinct stalls (TPS at half its sustained level) depends on the
    // box: under load they come every few seconds, on a quiet VM the same run is throttled
    // evenly. So: sync flush in most samples, and every stall found put down to it.
    // InnoDB's own counter of sync flush batches tells it (the checkpoint age read once a
    // second swings between the async point and the maximum around each batch).
    let pages: Vec<f64> = samples
        .iter()
        .skip(1)
        .map(|s| {
            s["server"]["sync_flush_pages_s"]
                .as_f64()
                .expect("sync flush counter sampled")
        })
        .collect();
    let sync = pages.iter().filter(|p| **p > 0.0).count();
    assert!(
        sync * 2 >= pages.len(),
        "sync flush batches in {sync} samples: {pages:?}"
    );
    // Evenly throttled or not, the split of intervals by checkpoint age is reported.
    let cost = &small_analysis["sync_flush"];
    assert!(
        cost["sync_intervals"].as_u64().unwrap() * 2 >= cost["intervals"].as_u64().unwrap(),
        "{small_analysis}"
    );
    assert!(notes.contains("sync flush cost:"), "{small_analysis}");
    let stalls = small_analysis["stalls"].as_array().unwrap();
    assert_eq!(
        checkpoint_stalls(&small_analysis).len(),
        stalls.len(),
        "every stall is attributed to the checkpoint:\n{}",
        String::from_utf8_lossy(&run_ok(dbperf().arg("analyze").arg(&dir)).stdout)
    );
    // The catalog has a row per sample.
    let catalog = rusqlite::Connection::open(tmp.path().join("small/catalog.sqlite")).unwrap();
    let rows: i64 = catalog
        .query_row(
            "SELECT COUNT(*) FROM telemetry WHERE checkpoint_pct IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows as usize, samples.len());
    // ...and the samples with sync flush batches are the same ones there.
    let synced: i64 = catalog
        .query_row(
            "SELECT COUNT(*) FROM telemetry WHERE idx > 0 AND sync_flush_pages_s > 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(synced as usize, sync);
    drop(small);

    let large = sandbox_with_redo("1G");
    // 10 s, but no more than 30,000 transactions (about 60 MB of redo): checkpoint age cannot
    // grow by more than the redo written, however fast the machine.
    let (_, dir) = write_run(&large, &tmp.path().join("large"), 10, &["--events=30000"]);
    let samples = telemetry(&dir);
    assert!(max_of(&samples, "checkpoint_pct") < 50.0, "{samples:?}");
    let large_analysis = analysis(&dir);
    assert!(checkpoint_stalls(&large_analysis).is_empty(), "{large_analysis}");
    assert_eq!(large_analysis["sync_flush"]["sync_intervals"], 0, "{large_analysis}");
    assert_eq!(large_analysis["sync_flush"]["counted"], true, "{large_analysis}");
    assert!(
        !large_analysis["notes"].to_string().contains("sync flush cost"),
        "{large_analysis}"
    );
}

/// MySQL 5.6 and MariaDB 10.1 with two 4 MiB redo files and lazy flushing: checkpoint age
/// reaches its maximum and `dbperf analyze` says so. MySQL 5.6 reclaims redo with sync flush
/// batches, as 10.11 does, and every stall found is put down to the checkpoint; XtraDB flushes
/// ahead of the sync point its own way (`innodb_foreground_preflush`), so there only the
/// checkpoint figures are checked.
#[test]
fn classic_servers_explain_a_tiny_redo_log_as_10_11_does() {
    let tmp = tempfile::tempdir().unwrap();
    for id in ["mysql-5.6.24", "mariadb-10.1.23"] {
        if !available(id) {
            continue;
        }
        let mut settings = vec!["innodb_log_file_size=4M"];
        settings.extend(LAZY_FLUSHING);
        let sb = TempSandbox::start_server(id, &settings).unwrap_or_else(|e| panic!("{id}: {e}"));
        let (_, dir) = write_run(&sb, &tmp.path().join(id), 10, &[]);
        let samples = telemetry(&dir);
        assert!(max_of(&samples, "checkpoint_pct") >= 90.0, "{id}: {samples:?}");
        let analysis = analysis(&dir);
        let e = &analysis["explanation"];
        assert_eq!(e["checkpoint"]["value"]["capacity_bytes"], 8 << 20, "{id}: {e}");
        let notes = analysis["notes"].to_string();
        assert!(notes.contains("checkpoint age: at most"), "{id}: {analysis}");
        if id == "mysql-5.6.24" {
            let cost = &analysis["sync_flush"];
            assert_eq!(cost["counted"], true, "{id}: {analysis}");
            assert!(
                cost["sync_intervals"].as_u64().unwrap() * 2 >= cost["intervals"].as_u64().unwrap(),
                "{id}: {analysis}"
            );
            assert_eq!(
                checkpoint_stalls(&analysis).len(),
                analysis["stalls"].as_array().unwrap().len(),
                "{id}: every stall is attributed to the checkpoint:\n{}",
                String::from_utf8_lossy(&run_ok(dbperf().arg("analyze").arg(&dir)).stdout)
            );
        }
    }
}

#[test]
fn innodb_waits_head_the_top_waits_with_performance_schema_instruments() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = TempSandbox::start_with(&["performance_schema=ON"]).expect("sandbox starts");
    let url = sb.url();
    let common = ["--tables=2", "--table-size=10000"];
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_read_write", "prepare", "--target", &url])
            .args(common),
    );
    let out = run_ok(
        dbperf()
            .args(["sysbench", "oltp_read_write", "run", "--target", &url])
            .args(["--threads=8", "--time=4", "--report-interval=1", "--pfs-instruments"])
            .arg("--results-dir")
            .arg(tmp.path())
            .args(common),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let samples = telemetry(&only_run_dir(tmp.path()));
    let waits: Vec<&str> = samples
        .iter()
        .flat_map(|s| s["server"]["waits"].as_array().into_iter().flatten())
        .map(|w| w["event"].as_str().unwrap())
        .collect();
    // The B-tree latch every index lookup takes (an sx-lock in MariaDB 10.6+, an rw-lock in
    // MySQL), and no per-row table wait hiding it.
    assert!(
        waits.iter().any(|w| w.ends_with("/innodb/index_tree_rw_lock")),
        "{waits:?}"
    );
    assert!(waits.iter().all(|w| !w.starts_with("wait/io/table/")), "{waits:?}");
    assert!(
        text.contains("wait innodb/"),
        "the live line names the top wait:\n{text}"
    );
}

#[test]
fn a_frozen_server_is_found_as_a_stall_and_telemetry_does_not_hang() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = TempSandbox::start().expect("sandbox starts");
    let url = sb.url();
    let results = tmp.path().join("r");
    run_ok(&mut point_select("prepare", &url));
    let pid = sb.pid();
    let child = point_select("run", &url)
        .args(["--threads=2", "--time=8", "--report-interval=1"])
        .arg("--results-dir")
        .arg(&results)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Frozen for 2.5 s from the end of the run's third interval.
    wait_for_intervals(&results, 3);
    // SAFETY: plain signals to the sandbox's server process.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(2500));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let dir = only_run_dir(&results);
    let samples = telemetry(&dir);
    assert!(
        samples
            .iter()
            .any(|s| s["server"].is_null() && s["server_error"].is_string()),
        "a frozen server gives samples without server figures: {samples:?}"
    );
    let text = String::from_utf8_lossy(&run_ok(dbperf().arg("analyze").arg(&dir)).stdout).into_owned();
    // A stall covers the freeze (3 to 5.5 s) and starts at most one interval before it: other
    // stalls, such as a p99 spike while another test loads the box, may come before it, and
    // a dip just before the freeze on a loaded box merges with it.
    let frozen = text
        .lines()
        .filter(|l| l.contains("TPS fell"))
        .find(|l| {
            let range = l.trim().split(" s:").next().unwrap_or("");
            let mut ends = range.split('-').map(|v| v.trim().parse::<f64>().ok());
            matches!(
                (ends.next().flatten(), ends.next().flatten()),
                (Some(a), Some(b)) if (2.0..=4.0).contains(&a) && b >= 5.0
            )
        })
        .unwrap_or_else(|| panic!("no stall covers the freeze (3-5.5 s):\n{text}"));
    // ... and is explained first by the server not answering (not by rates of the catch-up
    // samples after SIGCONT, which the sampler no longer takes over a fraction of a period).
    assert!(
        frozen.contains(" while the server stopped answering: "),
        "{frozen}\n{text}"
    );
    let short = samples
        .iter()
        .filter(|s| s["interval_s"].as_f64().is_some_and(|d| d < 0.5))
        .count();
    assert_eq!(short, 0, "no sample covers less than half a period: {samples:?}");
}

#[test]
fn no_telemetry_writes_no_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = TempSandbox::start().expect("sandbox starts");
    let url = sb.url();
    run_ok(&mut point_select("prepare", &url));
    let out = run_ok(
        point_select("run", &url)
            .args(["--time=2", "--report-interval=1", "--no-telemetry"])
            .arg("--results-dir")
            .arg(tmp.path()),
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("| ckpt"));
    assert!(!only_run_dir(tmp.path()).join("telemetry.jsonl").exists());
}
