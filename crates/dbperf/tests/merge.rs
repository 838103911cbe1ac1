//! `dbperf merge` as a user runs it, on synthetic shard run directories (no server): three
//! shards with skewed latencies merge into one run whose percentiles are those of every
//! request, which `dbperf results sql` then finds; a missing and a killed shard are named and
//! the command exits 5; shards of different runs and shards off the shared clock are refused
//! with nothing written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use dbperf::results::interval::{IntervalRecord, Percentiles};
use dbperf::results::manifest::{ServerFacts, ShardRecord, WorkloadInfo, MANIFEST_SCHEMA};
use dbperf::results::summary::{
    ClientUsage, ErrorCounts, QueryCounts, ServerSummary, Throughput, TypeBlock, TypeKind, SUMMARY_SCHEMA,
};
use dbperf::results::{HostInfo, LatencyBlock, Manifest, RunDir, Summary};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

mod common;
use common::{dbperf, read_json, run_dirs, run_ok};

/// The run's time zero, ms since the epoch; the measured phase starts a second later.
const BASE_MS: i64 = 1_700_000_000_000;
const MEASURED: usize = 2;

/// Response times (µs) of shard `index` in each measured second: many fast, few slow, some
/// in between.
fn values(index: u32) -> Vec<u64> {
    match index {
        0 => (0..800).map(|k| 400 + k).collect(),
        1 => (0..50).map(|k| 30_000 + 200 * k).collect(),
        _ => (0..200).map(|k| 3_000 + 10 * k).collect(),
    }
}

fn histogram(values: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 60_000_000, 3).unwrap();
    for v in values {
        h.record(*v).unwrap();
    }
    h
}

/// Writes shard `index` of `count` as `dbperf ... run --shard index/count` leaves it: one
/// second of warmup, then [`MEASURED`] seconds. `base_ms` is its log's BaseTime; `finished`
/// false leaves out summary.json (a killed shard).
fn shard(root: &Path, index: u32, count: u32, base_ms: i64, start_at_ms: i64, finished: bool) -> PathBuf {
    let dir = RunDir::create(&root.join("shards"), "oltp_point_select").unwrap();
    let mut options = serde_json::Map::new();
    options.insert("threads".into(), 16.into());
    let start_at = chrono::DateTime::from_timestamp_millis(start_at_ms).unwrap();
    let manifest = Manifest {
        schema: MANIFEST_SCHEMA.into(),
        dbperf_version: "0.0.0".into(),
        command_line: vec!["dbperf".into(), format!("--shard={index}/{count}")],
        started_at: "2023-11-14T22:13:10.000Z".into(),
        seeds: serde_json::Value::Null,
        workload: WorkloadInfo::from_map("oltp_point_select", &options),
        server: Some(ServerFacts {
            version: "11.4.5-MariaDB".into(),
            variables: BTreeMap::new(),
        }),
        host: HostInfo::default(),
        target: "mysql://sb:***@db:3306/sbtest".into(),
        lab: None,
        network: None,
        shard: Some(ShardRecord {
            index,
            count,
            start_at: start_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            start_at_unix_ms: start_at_ms,
            users_total: 4 * u64::from(count),
            first_user: 4 * u64::from(index),
            users: 4,
            rate_total: None,
            schedule_seed: 0,
        }),
        merged: None,
        server_host: None,
        start_state: None,
    };
    dir.write_json("manifest.json", &manifest).unwrap();
    let mut hlog = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let base = SystemTime::UNIX_EPOCH + Duration::from_millis(base_ms as u64);
    let mut log = IntervalLogWriterBuilder::new()
        .with_start_time(base)
        .with_base_time(base)
        .begin_log_with(&mut hlog, &mut serializer)
        .unwrap();
    let mut jsonl = String::new();
    for i in 0..=MEASURED {
        let v = if i == 0 { vec![5_000_000] } else { values(index) };
        let h = histogram(&v);
        log.write_histogram(
            &h,
            Duration::from_secs(i as u64),
            Duration::from_secs(1),
            Tag::new("response:point_select"),
        )
        .unwrap();
        let rec = IntervalRecord {
            index: i as u32,
            start_s: i as f64,
            end_s: i as f64 + 1.0,
            warmup: i == 0,
            threads: 4,
            transactions: v.len() as u64,
            tps: v.len() as f64,
            qps: v.len() as f64,
            rwo_per_sec: [v.len() as f64, 0.0, 0.0],
            errors: BTreeMap::new(),
            errors_per_sec: 0.0,
            reconnects_per_sec: 0.0,
            latency_ms: Percentiles::from_histogram(&h),
            service_time_ms: Percentiles::from_histogram(&h),
            late_starts: 0,
            backlog: 0,
            server_unreachable: false,
        };
        jsonl.push_str(&serde_json::to_string(&rec).unwrap());
        jsonl.push('\n');
    }
    drop(log);
    std::fs::write(dir.path().join("intervals.hlog"), hlog).unwrap();
    std::fs::write(dir.path().join("intervals.jsonl"), jsonl).unwrap();
    if finished {
        let all: Vec<u64> = (0..MEASURED).flat_map(|_| values(index)).collect();
        let latency = LatencyBlock::from_histogram(&histogram(&all));
        let n = all.len() as u64;
        let d = MEASURED as f64;
        let summary = Summary {
            schema: SUMMARY_SCHEMA.into(),
            workload: "oltp_point_select".into(),
            run_id: dir.run_id().into(),
            duration_s: d,
            warmup_s: 1.0,
            threads: 4,
            rate: None,
            arrival: None,
            rand_type: "uniform".into(),
            transactions: Throughput::new(n, d),
            queries: QueryCounts::new(n, 0, 0, d),
            errors: ErrorCounts::default(),
            retries: 0,
            retried: 0,
            failed: 0,
            skipped: 0,
            reconnects: 0,
            latency_ms: latency,
            service_time_ms: None,
            late_starts: 0,
            backlog_at_end: 0,
            per_type: BTreeMap::from([(
                "point_select".to_string(),
                TypeBlock {
                    kind: TypeKind::Transaction,
                    count: n,
                    latency_ms: latency,
                    service_time_ms: None,
                },
            )]),
            client: ClientUsage::default(),
            server: ServerSummary {
                version: Some("11.4.5-MariaDB".into()),
            },
            interrupted: false,
            intervals: MEASURED as u32,
            server_unreachable_s: 0.0,
            server_unreachable_at_end: false,
            server_lost: false,
            steady_warmup: None,
        };
        dir.write_json("summary.json", &summary).unwrap();
    }
    dir.path().to_path_buf()
}

/// A finished shard on the shared clock.
fn on_time(root: &Path, index: u32, count: u32) -> PathBuf {
    shard(root, index, count, BASE_MS, BASE_MS + 1000, true)
}

fn merge(results: &Path, dirs: &[PathBuf]) -> Output {
    dbperf()
        .arg("merge")
        .args(dirs)
        .arg("--results-dir")
        .arg(results)
        .output()
        .unwrap()
}

fn id(dir: &Path) -> &str {
    dir.file_name().unwrap().to_str().unwrap()
}

#[test]
fn three_shards_merge_into_one_run_with_the_percentiles_of_every_request() {
    let root = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..3).map(|i| on_time(root.path(), i, 3)).collect();
    let results = root.path().join("results");
    let out = run_ok(dbperf().arg("merge").args(&dirs).arg("--results-dir").arg(&results));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("shards 0, 1 and 2 of 3: 12 of 12 users"), "{stdout}");
    for (i, dir) in dirs.iter().enumerate() {
        let line = format!("shard {i}  {}  {} transactions", id(dir), 2 * values(i as u32).len());
        assert!(stdout.contains(&line), "{line}\n{stdout}");
    }
    assert!(stdout.contains("Transactions: 2100 in 2.0 s"), "{stdout}");

    let merged = run_dirs(&results);
    assert_eq!(merged.len(), 1, "{merged:?}");
    assert!(
        stdout.contains(&format!("Run directory: {}", merged[0].display())),
        "{stdout}"
    );
    let summary = read_json(&merged[0].join("summary.json"));
    assert_eq!(summary["transactions"]["total"], 2100);
    assert_eq!(summary["threads"], 12);
    // The percentiles of one histogram holding every measured value, not the shards' average.
    let all: Vec<u64> = (0..3)
        .flat_map(|i| (0..MEASURED).flat_map(move |_| values(i)))
        .collect();
    let one = LatencyBlock::from_histogram(&histogram(&all));
    let shards: Vec<LatencyBlock> = (0..3)
        .map(|i| LatencyBlock::from_histogram(&histogram(&values(i))))
        .collect();
    for (key, want, average) in [
        ("p50", one.p50, shards.iter().map(|b| b.p50).sum::<f64>() / 3.0),
        ("p99", one.p99, shards.iter().map(|b| b.p99).sum::<f64>() / 3.0),
    ] {
        assert_eq!(
            summary["latency_ms"][key].as_f64(),
            Some(want),
            "{key}: {}",
            summary["latency_ms"]
        );
        assert!((want - average).abs() > 1.0, "{key}: the data must tell the two apart");
        assert!(stdout.contains(&format!("{key} {want:.3}")), "{key} {want}\n{stdout}");
    }
    // Per interval: the warmup's 5 s requests are in interval 0 only; counts add up.
    let lines = std::fs::read_to_string(merged[0].join("intervals.jsonl")).unwrap();
    let intervals: Vec<IntervalRecord> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let counts: Vec<(bool, u64, u32)> = intervals
        .iter()
        .map(|r| (r.warmup, r.transactions, r.threads))
        .collect();
    assert_eq!(counts, [(true, 3, 12), (false, 1050, 12), (false, 1050, 12)]);

    let manifest = read_json(&merged[0].join("manifest.json"));
    assert_eq!(manifest["merged"]["count"], 3);
    assert_eq!(manifest["merged"]["shards"][2]["run_id"], id(&dirs[2]));
    assert!(manifest.get("shard").is_none(), "{manifest}");

    let sql = format!("SELECT threads, complete FROM runs WHERE run_id = '{}'", id(&merged[0]));
    let out = run_ok(dbperf().args(["results", "sql", &sql, "--results-dir"]).arg(&results));
    let rows = String::from_utf8_lossy(&out.stdout);
    assert!(rows.contains("12") && rows.contains('1'), "{rows}");
}

#[test]
fn a_missing_and_a_killed_shard_are_named_and_the_merge_exits_5() {
    let root = tempfile::tempdir().unwrap();
    let dirs = vec![
        on_time(root.path(), 0, 4),
        shard(root.path(), 1, 4, BASE_MS, BASE_MS + 1000, false),
        on_time(root.path(), 2, 4),
    ];
    let results = root.path().join("results");
    let out = merge(&results, &dirs);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(5), "{stdout}\n{stderr}");
    assert!(stdout.contains("shards 0 and 2 of 4: 8 of 16 users"), "{stdout}");
    assert!(
        stdout.contains(&format!("shard 1  {}  failed: it has no summary.json", id(&dirs[1]))),
        "{stdout}"
    );
    assert!(stdout.contains("shard 3  missing"), "{stdout}");
    assert!(stderr.contains("results incomplete"), "{stderr}");

    let merged = run_dirs(&results);
    assert_eq!(merged.len(), 1, "written all the same: {merged:?}");
    let manifest = read_json(&merged[0].join("manifest.json"));
    let left_out = &manifest["merged"]["left_out"];
    assert_eq!(left_out[0]["index"], 1);
    assert_eq!(left_out[0]["run_id"], id(&dirs[1]));
    assert_eq!(left_out[1]["index"], 3);
    let summary = read_json(&merged[0].join("summary.json"));
    assert_eq!(summary["transactions"]["total"], 2 * (800 + 200));
}

#[test]
fn shards_of_different_runs_or_off_the_shared_clock_are_refused_with_nothing_written() {
    let root = tempfile::tempdir().unwrap();
    let results = root.path().join("results");
    let first = on_time(root.path(), 0, 3);
    let cases = [
        (
            shard(root.path(), 1, 3, BASE_MS, BASE_MS + 61_000, true),
            "its shard.start_at is 2023-11-14T22:14:21.000Z, not 2023-11-14T22:13:21.000Z",
        ),
        (on_time(root.path(), 1, 2), "its shard.count is 2, not 3"),
        (
            shard(root.path(), 1, 3, BASE_MS + 120, BASE_MS + 1000, true),
            "interval 0 starts at 2023-11-14T22:13:20.120Z on the wall clock, 120 ms after shard 0's",
        ),
    ];
    for (other, expected) in cases {
        let out = merge(&results, &[first.clone(), other.clone()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{expected}\n{stderr}");
        assert!(stderr.contains(&other.display().to_string()), "{stderr}");
        assert!(!results.exists(), "nothing written");
    }
}
