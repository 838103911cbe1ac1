//! Merges of synthetic shard directories: skewed latencies whose merged percentiles are those
//! of one histogram of every value (and not the average of the shards'), per-interval sums,
//! missing, killed and interrupted shards left out, shards of other runs refused by field,
//! misaligned intervals refused, and the written run directory read back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use serde_json::json;

use super::*;
use crate::catalog::Catalog;
use crate::hlog::Hlog;
use crate::interval::Percentiles;
use crate::manifest::{ServerFacts, ShardRecord, WorkloadInfo, MANIFEST_SCHEMA};
use crate::summary::{ClientUsage, ErrorCounts, Throughput, TypeBlock, TypeKind};
use crate::{HostInfo, LatencyBlock};

/// The run's time zero (`--start-at` minus the warmup), ms since the epoch.
const BASE_MS: i64 = 1_700_000_000_000;
/// Warmup intervals before the measured ones.
const WARMUP: usize = 1;
/// What the warmup records: so slow that counting it would show in every percentile.
const WARMUP_US: u64 = 9_000_000;

/// Response times (µs) shard `index` records in measured interval `i`: shard 0 many fast
/// requests, shard 1 few slow ones, shard 2 in between, so that averaging the shards'
/// percentiles is far from the percentiles of all requests.
fn values(index: u32, i: usize) -> Vec<u64> {
    let i = i as u64;
    match index {
        0 => (0..900).map(|k| 500 + k + 7 * i).collect(),
        1 => (0..60).map(|k| 20_000 + 300 * k + i).collect(),
        _ => (0..240).map(|k| 2_000 + 12 * k + i).collect(),
    }
}

fn histogram_of(values: &[u64]) -> Histogram<u64> {
    let mut h = dbperf_engine::stats::new_histogram();
    for v in values {
        h.record(*v).unwrap();
    }
    h
}

/// One shard's run directory, as `dbperf ... run --shard I/N` leaves it.
#[derive(Clone)]
struct Fixture {
    index: u32,
    count: u32,
    users: u64,
    /// `intervals.hlog`'s BaseTime, ms since the epoch.
    base_ms: i64,
    start_at_ms: i64,
    measured: usize,
    /// `summary.json` written (false: killed).
    finished: bool,
    interrupted: bool,
    workload: &'static str,
    options: serde_json::Value,
    version: &'static str,
    /// Extra files: (name, contents).
    files: Vec<(&'static str, String)>,
}

impl Fixture {
    fn shard(index: u32) -> Fixture {
        Fixture {
            index,
            count: 3,
            users: 4,
            base_ms: BASE_MS,
            start_at_ms: BASE_MS + 1000 * WARMUP as i64,
            measured: 3,
            finished: true,
            interrupted: false,
            workload: "oltp_read_only",
            options: json!({ "threads": 12, "time": 3, "warmup_time": 1 }),
            version: "11.4.5-MariaDB",
            files: vec![(TELEMETRY_FILE, format!("{{\"shard\":{index}}}\n"))],
        }
    }

    /// Every measured response time of this shard.
    fn measured_values(&self) -> Vec<u64> {
        (0..self.measured).flat_map(|i| values(self.index, i)).collect()
    }

    fn write(&self, root: &Path) -> PathBuf {
        let dir = RunDir::create(&root.join("shards"), self.workload).unwrap();
        let start_at = chrono::DateTime::from_timestamp_millis(self.start_at_ms).unwrap();
        let manifest = Manifest {
            schema: MANIFEST_SCHEMA.to_string(),
            dbperf_version: "0.0.0".to_string(),
            command_line: vec![
                "dbperf".into(),
                "--shard".into(),
                format!("{}/{}", self.index, self.count),
            ],
            started_at: crate::manifest::rfc3339_utc(
                chrono::DateTime::from_timestamp_millis(BASE_MS - 5_000 + i64::from(self.index)).unwrap(),
            ),
            seeds: serde_json::Value::Null,
            workload: WorkloadInfo::from_map(self.workload, self.options.as_object().unwrap()),
            server: Some(ServerFacts {
                version: self.version.to_string(),
                variables: BTreeMap::new(),
            }),
            host: HostInfo::default(),
            target: "mysql://sb:***@db1:3306/sbtest".to_string(),
            lab: None,
            network: None,
            shard: Some(ShardRecord {
                index: self.index,
                count: self.count,
                start_at: crate::manifest::rfc3339_utc(start_at),
                start_at_unix_ms: self.start_at_ms,
                users_total: u64::from(self.count) * self.users,
                first_user: u64::from(self.index) * self.users,
                users: self.users,
                rate_total: None,
                schedule_seed: u64::from(self.index),
            }),
            merged: None,
            server_host: None,
            start_state: None,
        };
        dir.write_json("manifest.json", &manifest).unwrap();
        let mut hlog = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        let base = SystemTime::UNIX_EPOCH + Duration::from_millis(self.base_ms as u64);
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment("dbperf test shard")
            .with_start_time(base)
            .with_base_time(base)
            .begin_log_with(&mut hlog, &mut serializer)
            .unwrap();
        let mut jsonl = String::new();
        for i in 0..WARMUP + self.measured {
            let warmup = i < WARMUP;
            let v = match warmup {
                true => vec![WARMUP_US; 3],
                false => values(self.index, i - WARMUP),
            };
            let h = histogram_of(&v);
            let statements = histogram_of(&v.iter().map(|us| us / 2).collect::<Vec<_>>());
            let start = Duration::from_secs(i as u64);
            let one = Duration::from_secs(1);
            log.write_histogram(&h, start, one, Tag::new("response:point_select"))
                .unwrap();
            log.write_histogram(&statements, start, one, Tag::new("statement:select"))
                .unwrap();
            let n = v.len() as u64;
            let record = IntervalRecord {
                index: i as u32,
                start_s: i as f64,
                end_s: (i + 1) as f64,
                warmup,
                threads: self.users as u32,
                transactions: n,
                tps: n as f64,
                qps: 2.0 * n as f64,
                rwo_per_sec: [n as f64, 0.0, n as f64],
                errors: BTreeMap::from([("deadlock".to_string(), 1)]),
                errors_per_sec: 1.0,
                reconnects_per_sec: 0.0,
                latency_ms: Percentiles::from_histogram(&h),
                service_time_ms: Percentiles::from_histogram(&h),
                late_starts: 0,
                backlog: 0,
                server_unreachable: false,
            };
            jsonl.push_str(&serde_json::to_string(&record).unwrap());
            jsonl.push('\n');
        }
        drop(log);
        std::fs::write(dir.path().join(HLOG_FILE), hlog).unwrap();
        std::fs::write(dir.path().join(INTERVALS_FILE), jsonl).unwrap();
        if self.finished {
            let all = self.measured_values();
            let h = histogram_of(&all);
            let d = self.measured as f64;
            let summary = Summary {
                duration_s: d,
                warmup_s: WARMUP as f64,
                threads: self.users as u32,
                transactions: Throughput::new(all.len() as u64, d),
                queries: crate::summary::QueryCounts::new(all.len() as u64, 0, all.len() as u64, d),
                errors: ErrorCounts::new(BTreeMap::from([("deadlock".to_string(), self.measured as u64)])),
                latency_ms: LatencyBlock::from_histogram(&h),
                per_type: BTreeMap::from([(
                    "point_select".to_string(),
                    TypeBlock {
                        kind: TypeKind::Transaction,
                        count: h.len(),
                        latency_ms: LatencyBlock::from_histogram(&h),
                        service_time_ms: None,
                    },
                )]),
                client: ClientUsage {
                    cpu_s: 1.5,
                    user_s: 1.0,
                    sys_s: 0.5,
                    max_rss_bytes: (u64::from(self.index) + 1) << 20,
                },
                interrupted: self.interrupted,
                intervals: self.measured as u32,
                ..crate::summary::sample(dir.run_id(), self.workload, 4, 1.0, 1.0)
            };
            dir.write_json(SUMMARY_FILE, &summary).unwrap();
        }
        for (name, text) in &self.files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir.path().to_path_buf()
    }
}

/// The error of a merge that must be refused.
fn refused(dirs: &[PathBuf]) -> String {
    match merge_shards(dirs) {
        Ok(run) => panic!("merged {} shards where a refusal was due", run.merged.len()),
        Err(e) => e.to_string(),
    }
}

fn write_all(root: &Path, shards: &[Fixture]) -> Vec<PathBuf> {
    shards.iter().map(|s| s.write(root)).collect()
}

fn three(root: &Path) -> Vec<PathBuf> {
    write_all(root, &[Fixture::shard(0), Fixture::shard(1), Fixture::shard(2)])
}

#[test]
fn merged_percentiles_are_those_of_every_request_not_an_average_of_the_shards() {
    let root = tempfile::tempdir().unwrap();
    let shards = [Fixture::shard(0), Fixture::shard(1), Fixture::shard(2)];
    let run = merge_shards(&write_all(root.path(), &shards)).unwrap();
    assert!(run.complete());
    let s = &run.summary;
    let all: Vec<u64> = shards.iter().flat_map(Fixture::measured_values).collect();
    assert_eq!(s.transactions.total, all.len() as u64);
    assert_eq!(s.transactions.total, 3 * (900 + 60 + 240));
    assert_eq!(s.threads, 12);
    assert_eq!(s.errors.by_class["deadlock"], 9);
    assert_eq!((s.client.cpu_s, s.client.max_rss_bytes), (4.5, 3 << 20));
    // One histogram into which every measured value was put directly.
    let one = LatencyBlock::from_histogram(&histogram_of(&all));
    assert_eq!(s.latency_ms, one);
    assert_eq!(s.per_type["point_select"].latency_ms, one);
    assert_eq!(s.per_type["point_select"].count, all.len() as u64);
    assert_eq!(s.per_type["select"].kind, TypeKind::Statement);
    // The warmup's 9 s requests are not counted.
    assert!(s.latency_ms.max < 1000.0, "{:?}", s.latency_ms);
    // Averaging the shards' percentiles would be far off: the data would catch it.
    let average = |p: fn(&LatencyBlock) -> f64| {
        shards
            .iter()
            .map(|f| p(&LatencyBlock::from_histogram(&histogram_of(&f.measured_values()))))
            .sum::<f64>()
            / 3.0
    };
    assert!(
        (average(|b| b.p50) - one.p50).abs() > 5.0,
        "{} vs {}",
        average(|b| b.p50),
        one.p50
    );
    assert!(
        (average(|b| b.p99) - one.p99).abs() > 5.0,
        "{} vs {}",
        average(|b| b.p99),
        one.p99
    );
}

#[test]
fn intervals_are_summed_per_interval_with_percentiles_of_the_added_histograms() {
    let root = tempfile::tempdir().unwrap();
    let run = merge_shards(&three(root.path())).unwrap();
    assert_eq!(run.intervals.len(), WARMUP + 3);
    assert_eq!(run.summary.intervals, 3);
    let warmup = &run.intervals[0];
    assert!(warmup.warmup);
    assert_eq!(warmup.transactions, 9);
    for (k, r) in run.intervals.iter().enumerate().skip(WARMUP) {
        let i = k - WARMUP;
        let values: Vec<u64> = (0..3).flat_map(|s| values(s, i)).collect();
        assert!(!r.warmup);
        assert_eq!((r.index as usize, r.start_s, r.end_s), (k, k as f64, k as f64 + 1.0));
        assert_eq!(r.transactions, 1200);
        assert_eq!(r.tps, 1200.0);
        assert_eq!(r.qps, 2400.0);
        assert_eq!(r.threads, 12);
        assert_eq!(r.errors["deadlock"], 3);
        assert_eq!(r.latency_ms, Percentiles::from_histogram(&histogram_of(&values)));
        // Closed loop: no service histograms, so the service time is the response time.
        assert_eq!(r.service_time_ms, r.latency_ms);
    }
    // The merged log: per interval, each tag once, holding every shard's values.
    let path = root.path().join(HLOG_FILE);
    std::fs::write(&path, &run.hlog).unwrap();
    let hlog = Hlog::read(&path).unwrap();
    assert_eq!(hlog.base_time, Some(Duration::from_millis(BASE_MS as u64)));
    let lines: Vec<(Duration, &str, u64)> = hlog
        .intervals
        .iter()
        .map(|i| (i.start, i.tag.as_deref().unwrap(), i.histogram().unwrap().len()))
        .collect();
    let second = Duration::from_secs;
    assert_eq!(lines.len(), 2 * (WARMUP + 3));
    assert_eq!(lines[0], (second(0), "response:point_select", 9));
    assert_eq!(lines[1], (second(0), "statement:select", 9));
    assert_eq!(lines[2], (second(1), "response:point_select", 1200));
    assert_eq!(lines[7], (second(3), "statement:select", 1200));
}

#[test]
fn the_written_run_directory_reads_back_and_is_in_the_catalog() {
    let root = tempfile::tempdir().unwrap();
    let mut shards = [Fixture::shard(0), Fixture::shard(1), Fixture::shard(2)];
    shards[1].files.push(("oltp.json", "{}".to_string()));
    let dirs = write_all(root.path(), &shards);
    let mut run = merge_shards(&dirs).unwrap();
    let results = root.path().join("results");
    let argv: Vec<String> = ["dbperf", "merge", "--password=hunter2", "a"]
        .map(String::from)
        .to_vec();
    let dir = run.write(&results, &argv).unwrap();

    let manifest: Manifest = dir.read_json("manifest.json").unwrap();
    assert_eq!(manifest.command_line[2], "--password=***");
    assert!(manifest.shard.is_none());
    assert_eq!(
        manifest.started_at, "2023-11-14T22:13:15.000Z",
        "the earliest shard's start"
    );
    let merged = manifest.merged.unwrap();
    assert_eq!((merged.count, merged.users, merged.users_total), (3, 12, 12));
    let ids: Vec<&str> = dirs.iter().map(|d| d.file_name().unwrap().to_str().unwrap()).collect();
    let shard_ids: Vec<(u32, &str)> = merged.shards.iter().map(|s| (s.index, s.run_id.as_str())).collect();
    assert_eq!(shard_ids, [(0, ids[0]), (1, ids[1]), (2, ids[2])]);
    assert!(merged.left_out.is_empty());

    let summary: Summary = dir.read_json(SUMMARY_FILE).unwrap();
    assert_eq!(summary.run_id, dir.run_id());
    assert_eq!(summary.transactions.total, 3600);
    let intervals = dir.read_intervals::<IntervalRecord>().unwrap().records;
    assert_eq!(intervals, run.intervals);

    let hlog = Hlog::read(&dir.file(HLOG_FILE).unwrap()).unwrap();
    assert_eq!(hlog.base_time, Some(Duration::from_millis(BASE_MS as u64)));
    let response: u64 = hlog
        .intervals
        .iter()
        .filter(|h| h.tag.as_deref() == Some("response:point_select") && h.start >= Duration::from_secs(1))
        .map(|h| h.histogram().unwrap().len())
        .sum();
    assert_eq!(response, 3600);

    let telemetry = std::fs::read_to_string(dir.file(TELEMETRY_FILE).unwrap()).unwrap();
    assert_eq!(telemetry, "{\"shard\":0}\n", "the first merged shard's");
    assert_eq!(run.not_merged, BTreeMap::from([("oltp.json".to_string(), vec![1])]));
    assert!(!dir.path().join("oltp.json").exists());

    let (_, rows) = Catalog::open(&results)
        .unwrap()
        .query(&format!(
            "SELECT threads, complete FROM runs WHERE run_id = '{}'",
            dir.run_id()
        ))
        .unwrap();
    assert_eq!(rows, [["12".to_string(), "1".to_string()]]);
}

#[test]
fn missing_killed_and_interrupted_shards_are_left_out_with_their_reasons() {
    let root = tempfile::tempdir().unwrap();
    let mut shards: Vec<Fixture> = (0..5)
        .map(|i| Fixture {
            count: 5,
            ..Fixture::shard(i)
        })
        .collect();
    shards[1].finished = false;
    shards[3].interrupted = true;
    shards.remove(4);
    let dirs = write_all(root.path(), &shards);
    let run = merge_shards(&dirs).unwrap();
    assert!(!run.complete());
    assert_eq!(run.covers(), "shards 0 and 2 of 5: 8 of 20 users");
    let merged: Vec<u32> = run.merged.iter().map(|s| s.index).collect();
    assert_eq!(merged, [0, 2]);
    let out: Vec<(u32, &str)> = run
        .record
        .left_out
        .iter()
        .map(|s| (s.index, s.run_id.as_str()))
        .collect();
    let id = |i: usize| dirs[i].file_name().unwrap().to_str().unwrap();
    assert_eq!(out, [(1, id(1)), (3, id(3)), (4, "")]);
    assert!(
        run.record.left_out[0].reason.contains("no summary.json"),
        "{:?}",
        run.record.left_out[0]
    );
    assert!(
        run.record.left_out[1].reason.contains("interrupted"),
        "{:?}",
        run.record.left_out[1]
    );
    assert!(
        run.record.left_out[2].reason.starts_with("missing"),
        "{:?}",
        run.record.left_out[2]
    );
    assert_eq!(
        run.summary.transactions.total,
        (shards[0].measured_values().len() + shards[2].measured_values().len()) as u64
    );
    assert_eq!(run.intervals[WARMUP].threads, 8);
}

#[test]
fn a_merge_with_no_finished_shard_is_refused_naming_each() {
    let root = tempfile::tempdir().unwrap();
    let killed = Fixture {
        finished: false,
        ..Fixture::shard(0)
    };
    let e = refused(&write_all(root.path(), &[killed]));
    assert!(e.starts_with("no shard of the 3 can be merged"), "{e}");
    assert!(e.contains("shard 0 (") && e.contains("no summary.json"), "{e}");
    assert!(e.contains("shard 1: missing") && e.contains("shard 2: missing"), "{e}");
}

#[test]
fn shards_of_different_runs_are_refused_naming_the_field_and_both_values() {
    type Change = fn(&mut Fixture);
    let cases: [(Change, &str, &str, &str); 6] = [
        (
            |f| f.start_at_ms += 60_000,
            "shard.start_at",
            "2023-11-14T22:14:21.000Z",
            "2023-11-14T22:13:21.000Z",
        ),
        (
            |f| f.workload = "oltp_read_write",
            "workload.name",
            "\"oltp_read_write\"",
            "\"oltp_read_only\"",
        ),
        (
            |f| f.options["threads"] = json!(16),
            "workload.options.threads",
            "16",
            "12",
        ),
        (|f| f.count = 4, "shard.count", "4", "3"),
        (
            |f| f.version = "10.11.6-MariaDB",
            "server.version",
            "\"10.11.6-MariaDB\"",
            "\"11.4.5-MariaDB\"",
        ),
        (
            |f| f.options["rate"] = json!(100),
            "workload.options.rate",
            "100",
            "absent",
        ),
    ];
    for (change, field, value, reference_value) in cases {
        let root = tempfile::tempdir().unwrap();
        let mut other = Fixture::shard(1);
        change(&mut other);
        let dirs = write_all(root.path(), &[Fixture::shard(0), other]);
        let e = refused(&dirs);
        let expected = format!("its {field} is {value}, not {reference_value};");
        assert!(e.contains(&expected), "{field}: {e}");
        assert!(e.contains(&format!("{} (shard 1)", dirs[1].display())), "{e}");
    }
}

#[test]
fn a_directory_that_is_not_a_shard_or_repeats_one_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let dirs = three(root.path());
    let mut manifest: Manifest = RunDir::open(&dirs[2]).unwrap().read_json("manifest.json").unwrap();
    manifest.shard = None;
    RunDir::open(&dirs[2])
        .unwrap()
        .write_json("manifest.json", &manifest)
        .unwrap();
    let e = refused(&dirs);
    assert!(e.starts_with(&format!("{} is not a shard", dirs[2].display())), "{e}");

    let twice = [dirs[0].clone(), dirs[1].clone(), dirs[1].clone()];
    let e = refused(&twice);
    assert!(e.starts_with("shard 1 is given twice"), "{e}");

    let e = refused(&[root.path().join("absent")]);
    assert!(e.contains("is not a run directory"), "{e}");
}

#[test]
fn an_interval_off_the_shared_clock_by_more_than_50_ms_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let late = Fixture {
        base_ms: BASE_MS + 200,
        ..Fixture::shard(2)
    };
    let dirs = write_all(root.path(), &[Fixture::shard(0), Fixture::shard(1), late]);
    let e = refused(&dirs);
    assert!(
        e.starts_with(&format!("{} (shard 2): interval 0 starts at", dirs[2].display())),
        "{e}"
    );
    assert!(e.contains("200 ms after shard 0's"), "{e}");

    // Within the tolerance, the shards merge on the first one's clock.
    let root = tempfile::tempdir().unwrap();
    let close = Fixture {
        base_ms: BASE_MS + 30,
        ..Fixture::shard(2)
    };
    let run = merge_shards(&write_all(root.path(), &[Fixture::shard(0), Fixture::shard(1), close])).unwrap();
    assert_eq!(run.intervals[1].start_s, 1.0);
    assert!(
        (run.intervals[1].end_s - 2.03).abs() < 1e-6,
        "{}",
        run.intervals[1].end_s
    );
}

#[test]
fn a_shard_whose_log_and_intervals_disagree_is_left_out() {
    let root = tempfile::tempdir().unwrap();
    let dirs = three(root.path());
    let jsonl = dirs[1].join(INTERVALS_FILE);
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let kept: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&jsonl, kept.join("\n") + "\n").unwrap();
    let run = merge_shards(&dirs).unwrap();
    assert_eq!(run.record.left_out.len(), 1);
    assert!(
        run.record.left_out[0].reason.contains("2.000 s"),
        "{:?}",
        run.record.left_out[0]
    );
    std::fs::write(dirs[2].join(HLOG_FILE), "no log\n").unwrap();
    let run = merge_shards(&dirs).unwrap();
    assert!(
        run.record.left_out[1].reason.contains("intervals.hlog cannot be read"),
        "{:?}",
        run.record.left_out
    );
}
