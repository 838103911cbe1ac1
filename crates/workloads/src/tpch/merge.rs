//! `dbperf merge` of a TPC-H throughput test spread over several clients (`tpch throughput
//! --shard I/N --start-at TIME`): the shards' `tpch.json` made into the one test's. Every
//! shard started its clock at the same wall-clock instant; each stream's end and each shard's
//! Ts are moved onto the earliest shard's clock, Ts is the last completion on it, and
//! Throughput@Size is computed for all the test's streams, only when every shard finished
//! and every query succeeded. The merged run directory holds `manifest.json` (with `merged`),
//! `tpch.json` and the first merged shard's telemetry, and enters the catalog.

use std::path::{Path, PathBuf};

use super::metrics::throughput_at_size;
use super::power::TPCH_FILE;
use super::runner::Status;
use dbperf_results::manifest::{redact_args, Manifest, MergeRecord, MergedShard};
use dbperf_results::merge::shards::{Given, GivenShards};
use dbperf_results::merge::{write_merged_dir, MergeError};
use dbperf_results::tpch::ThroughputReport;
use dbperf_results::{RunDir, TELEMETRY_FILE};

/// The workload name of a throughput test's run directory.
pub const THROUGHPUT_WORKLOAD: &str = "tpch-throughput";

/// A merged throughput test, in memory until [`MergedThroughput::write`].
#[derive(Debug)]
pub struct MergedThroughput {
    /// What the merge covers and leaves out.
    pub record: MergeRecord,
    /// The merged `tpch.json`.
    pub report: ThroughputReport,
    /// The first merged shard's manifest, made the merged run's by [`MergedThroughput::write`].
    pub manifest: Manifest,
    /// The first merged shard's telemetry, copied.
    pub telemetry_from: Option<PathBuf>,
    /// Each merged shard, in index order.
    pub merged: Vec<ShardStreams>,
}

/// A merged shard of a throughput test.
#[derive(Debug)]
pub struct ShardStreams {
    /// Shard index.
    pub index: u32,
    /// Its run id.
    pub run_id: String,
    /// The streams it ran.
    pub streams: Vec<u32>,
    /// How long after the earliest shard's its clock started, seconds.
    pub after_s: f64,
}

/// A shard's report, read.
struct Finished {
    given: Given,
    report: ThroughputReport,
    started_ms: i64,
}

/// Merges the throughput test's shards `set` (already checked to be shards of one run).
pub fn merge_throughput(set: GivenShards) -> Result<MergedThroughput, MergeError> {
    let (count, users_total) = (set.count, set.users_total);
    let (loaded, left_out) = set.load(|g| read_report(&g.dir))?;
    let finished: Vec<Finished> = loaded
        .into_iter()
        .map(|(given, (report, started_ms))| Finished {
            given,
            report,
            started_ms,
        })
        .collect();
    let Some(first) = finished.first() else {
        return Err(MergeError::NothingToMerge { count, left_out });
    };
    if let Some(other) = finished.iter().find(|f| f.report.seed != first.report.seed) {
        return Err(MergeError::DoesNotBelong(Box::new(dbperf_results::merge::Mismatch {
            dir: other.given.dir.clone(),
            index: other.given.shard.index,
            field: "tpch.json seed".into(),
            value: other.report.seed.to_string(),
            reference_dir: first.given.dir.clone(),
            reference_index: first.given.shard.index,
            reference_value: first.report.seed.to_string(),
        })));
    }
    let t0 = finished.iter().map(|f| f.started_ms).min().unwrap_or(first.started_ms);
    let offset = |f: &Finished| (f.started_ms - t0) as f64 / 1000.0;
    let mut streams = Vec::new();
    let mut refresh = Vec::new();
    let mut ts: f64 = 0.0;
    for f in &finished {
        let after = offset(f);
        for s in &f.report.streams {
            let mut s = s.clone();
            s.seconds += after;
            streams.push(s);
        }
        refresh.extend(f.report.refresh.iter().cloned());
        ts = ts.max(after + f.report.ts_seconds);
    }
    streams.sort_by_key(|s| s.stream);
    let total = u32::try_from(users_total).unwrap_or(u32::MAX);
    let complete = left_out.is_empty();
    let all_ok = streams.iter().all(|s| s.queries.iter().all(|q| q.status == Status::Ok));
    let sf = first.report.scale_factor;
    let report = ThroughputReport {
        streams,
        refresh,
        ts_seconds: ts,
        throughput_at_size: (complete && all_ok).then(|| throughput_at_size(sf, total, ts)),
        interrupted: false,
        started_unix_ms: Some(t0),
        streams_total: (!complete).then_some(total),
        ..first.report.clone()
    };
    let mut manifest = first.given.manifest.clone();
    manifest.shard = None;
    if let Some(start) = chrono::DateTime::from_timestamp_millis(t0) {
        manifest.started_at = dbperf_results::manifest::rfc3339_utc(start);
    }
    let telemetry = first.given.dir.join(TELEMETRY_FILE);
    Ok(MergedThroughput {
        record: MergeRecord {
            count,
            shards: finished
                .iter()
                .map(|f| MergedShard {
                    index: f.given.shard.index,
                    run_id: f.given.run_id.clone(),
                    reason: String::new(),
                })
                .collect(),
            left_out,
            users: finished.iter().map(|f| f.given.shard.users).sum(),
            users_total,
        },
        merged: finished
            .iter()
            .map(|f| ShardStreams {
                index: f.given.shard.index,
                run_id: f.given.run_id.clone(),
                streams: f.report.streams.iter().map(|s| s.stream).collect(),
                after_s: offset(f),
            })
            .collect(),
        report,
        manifest,
        telemetry_from: telemetry.is_file().then_some(telemetry),
    })
}

/// A shard's `tpch.json` and the wall clock of its start; the reason it is left out when it
/// has none or did not finish.
fn read_report(dir: &Path) -> Result<(ThroughputReport, i64), String> {
    if !dir.join(TPCH_FILE).is_file() {
        return Err(format!(
            "failed: it has no {TPCH_FILE}, so it did not reach its end (killed, or still running)"
        ));
    }
    let report: ThroughputReport = RunDir::open(dir)
        .and_then(|d| d.read_json(TPCH_FILE))
        .map_err(|e| format!("failed: its {TPCH_FILE} cannot be read: {e}"))?;
    if report.interrupted {
        return Err(format!(
            "failed: its {TPCH_FILE} says it was interrupted (Ctrl-C) before every stream finished"
        ));
    }
    let Some(started) = report.started_unix_ms else {
        return Err(format!(
            "failed: its {TPCH_FILE} does not say when its clock started (written by an earlier dbperf)"
        ));
    };
    Ok((report, started))
}

impl MergedThroughput {
    /// True when every shard was merged.
    pub fn complete(&self) -> bool {
        self.record.left_out.is_empty()
    }

    /// What `dbperf merge` prints: the merged test's report, the shards merged (their
    /// streams and clocks) and left out, and the run directory `dir`.
    pub fn text(&self, dir: &Path) -> String {
        use std::fmt::Write as _;
        let mut out = super::report::throughput_text(&self.report, None);
        let indexes: Vec<String> = self.merged.iter().map(|s| s.index.to_string()).collect();
        let r = &self.record;
        let _ = writeln!(
            out,
            "Merged {THROUGHPUT_WORKLOAD} (shards {} of {}: {} of {} streams):",
            indexes.join(", "),
            r.count,
            r.users,
            r.users_total
        );
        for s in &self.merged {
            let list: Vec<String> = s.streams.iter().map(u32::to_string).collect();
            let _ = writeln!(
                out,
                "  shard {}  {}  streams {}, clock started {:.3} s after the first",
                s.index,
                s.run_id,
                list.join(", "),
                s.after_s
            );
        }
        if !self.complete() {
            let _ = writeln!(out, "Left out:");
            for s in &r.left_out {
                let _ = writeln!(out, "  shard {}  {}", s.index, s.reason);
            }
        }
        if let Some(from) = &self.telemetry_from {
            let _ = writeln!(out, "Telemetry: copied from {}", from.display());
        }
        let _ = writeln!(out, "Run directory: {}", dir.display());
        out
    }

    /// Writes the merged run directory under `results_dir` (the manifest's command line is
    /// `argv`, redacted) and records it in the catalog. On a write error the directory is
    /// removed again.
    pub fn write(&mut self, results_dir: &Path, argv: &[String]) -> Result<RunDir, MergeError> {
        self.manifest.command_line = redact_args(argv);
        self.manifest.merged = Some(self.record.clone());
        write_merged_dir(results_dir, THROUGHPUT_WORKLOAD, self.complete(), |dir| {
            dir.write_json("manifest.json", &self.manifest)
                .map_err(|e| e.to_string())?;
            dir.write_json(TPCH_FILE, &self.report).map_err(|e| e.to_string())?;
            if let Some(from) = &self.telemetry_from {
                let to = dir.file(TELEMETRY_FILE).map_err(|e| e.to_string())?;
                std::fs::copy(from, &to).map_err(|e| format!("{}: {e}", from.display()))?;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_results::manifest::ShardRecord;
    use dbperf_results::tpch::{QueryTiming, RefreshPair, StreamRun};

    fn stream(n: u32, seconds: f64) -> StreamRun {
        StreamRun {
            stream: n,
            seconds,
            queries: (1..=22)
                .map(|q| QueryTiming {
                    query: q,
                    position: usize::from(q),
                    seconds: seconds / 22.0,
                    status: Status::Ok,
                    error: None,
                    rows: 1,
                })
                .collect(),
        }
    }

    /// Shard `index` of 2 of a 4-stream test at SF 1: streams `2 index + 1` and `2 index + 2`,
    /// started `late_ms` after the first, the first shard with the refresh stream.
    fn shard(root: &Path, index: u32, late_ms: i64, seed: i64) -> PathBuf {
        let dir = RunDir::create(root, THROUGHPUT_WORKLOAD).unwrap();
        let mut options = serde_json::Map::new();
        options.insert("streams".into(), 4.into());
        let manifest = Manifest {
            schema: dbperf_results::manifest::MANIFEST_SCHEMA.into(),
            dbperf_version: "0.0.0".into(),
            command_line: vec!["dbperf".into()],
            started_at: "2026-11-27T12:00:00.000Z".into(),
            seeds: serde_json::json!({ "qgen": seed }),
            workload: dbperf_results::manifest::WorkloadInfo::from_map(THROUGHPUT_WORKLOAD, &options),
            server: None,
            host: dbperf_results::HostInfo::default(),
            target: "mysql://root:***@db:3306/tpch".into(),
            lab: None,
            network: None,
            merged: None,
            server_host: None,
            start_state: None,
            shard: Some(ShardRecord {
                index,
                count: 2,
                start_at: "2026-11-27T12:00:00.000Z".into(),
                start_at_unix_ms: 1_800_000_000_000,
                users_total: 4,
                first_user: 2 * u64::from(index),
                users: 2,
                rate_total: None,
                schedule_seed: 0,
            }),
        };
        dir.write_json("manifest.json", &manifest).unwrap();
        let first = 2 * index + 1;
        let report = ThroughputReport {
            schema: "dbperf.tpch/1".into(),
            test: "throughput".into(),
            scale_factor: 1.0,
            seed,
            validation: false,
            server_version: "11.4.5-MariaDB".into(),
            timeout_seconds: None,
            streams: vec![stream(first, 100.0), stream(first + 1, 120.0 + f64::from(index))],
            refresh: match index {
                0 => (1..=4)
                    .map(|set| RefreshPair {
                        set,
                        rf1_seconds: 1.0,
                        rf2_seconds: 1.0,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            ts_seconds: 120.0 + f64::from(index),
            throughput_at_size: None,
            interrupted: false,
            started_unix_ms: Some(1_800_000_000_000 + late_ms),
            streams_total: Some(4),
        };
        dir.write_json(TPCH_FILE, &report).unwrap();
        dir.path().to_path_buf()
    }

    #[test]
    fn shards_make_one_test_on_the_earliest_clock() {
        let root = tempfile::tempdir().unwrap();
        let dirs = vec![shard(root.path(), 1, 500, 7), shard(root.path(), 0, 0, 7)];
        let mut m = merge_throughput(GivenShards::read(&dirs).unwrap()).unwrap();
        assert!(m.complete());
        let streams: Vec<u32> = m.report.streams.iter().map(|s| s.stream).collect();
        assert_eq!(streams, [1, 2, 3, 4]);
        // Shard 1 started 0.5 s later: its streams end 0.5 s later on the test's clock.
        assert_eq!(m.report.streams[3].seconds, 121.5);
        assert_eq!(m.report.ts_seconds, 121.5);
        assert_eq!(m.report.refresh.len(), 4);
        assert_eq!(m.report.throughput_at_size, Some(throughput_at_size(1.0, 4, 121.5)));
        assert_eq!(m.report.streams_total, None);
        let out = tempfile::tempdir().unwrap();
        let dir = m.write(out.path(), &["dbperf".into(), "merge".into()]).unwrap();
        let written: ThroughputReport = dir.read_json(TPCH_FILE).unwrap();
        assert_eq!(written.ts_seconds, 121.5);
        let manifest: Manifest = dir.read_json("manifest.json").unwrap();
        assert!(manifest.shard.is_none() && manifest.merged.is_some_and(|r| r.users == 4));
    }

    #[test]
    fn a_missing_shard_leaves_throughput_uncomputed_and_other_seeds_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let only = vec![shard(root.path(), 0, 0, 7)];
        let m = merge_throughput(GivenShards::read(&only).unwrap()).unwrap();
        assert!(!m.complete());
        assert_eq!(m.record.left_out[0].index, 1);
        assert!(m.record.left_out[0].reason.starts_with("missing"));
        assert_eq!((m.report.throughput_at_size, m.report.streams_total), (None, Some(4)));
        let text = super::super::report::throughput_text(&m.report, None);
        assert!(text.contains("2 of the test's 4 streams"), "{text}");

        let other = vec![shard(root.path(), 0, 0, 7), shard(root.path(), 1, 0, 8)];
        let err = merge_throughput(GivenShards::read(&other).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("tpch.json seed is 8, not 7"), "{err}");
    }
}
