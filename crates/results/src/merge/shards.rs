//! The run directories given to `dbperf merge`, read and judged: they must all be shards of one
//! run (same shard count and start, same users, workload and options, same server and target,
//! no index twice), or the merge is refused with the directory and the field that differs. A
//! shard that no directory holds is *missing*; one that was killed (no `summary.json`),
//! interrupted, or whose interval files cannot be read is *failed*. Both are left out, each with
//! its reason, and the others are merged.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{MergeError, Mismatch};
use crate::hlog::{Hlog, HlogInterval, HLOG_FILE};
use crate::interval::IntervalRecord;
use crate::manifest::{Manifest, MergedShard, ShardRecord};
use crate::summary::SUMMARY_FILE;
use crate::{RunDir, Summary, INTERVALS_FILE, TELEMETRY_FILE};

/// The files of a run directory that a merge combines (or, for telemetry, copies); any other
/// file is the workload's own (`tpcc.json`, ...) and is not merged.
const MERGED_FILES: [&str; 5] = ["manifest.json", INTERVALS_FILE, HLOG_FILE, SUMMARY_FILE, TELEMETRY_FILE];

/// The shards of one run, read from their run directories and sorted into those that can be
/// merged and those left out.
#[derive(Debug)]
pub struct ShardSet {
    /// Shards the run was split into.
    pub count: u32,
    /// The run's users over all shards.
    pub users_total: u64,
    /// The shards that can be merged, in index order.
    pub usable: Vec<UsableShard>,
    /// The shards missing or failed, in index order, each with its reason.
    pub left_out: Vec<MergedShard>,
}

/// A shard that finished: its records, and its intervals with their histograms.
#[derive(Debug)]
pub struct UsableShard {
    /// Its run directory, as given.
    pub dir: PathBuf,
    /// Its run id (the directory's name).
    pub run_id: String,
    /// `manifest.json`.
    pub manifest: Manifest,
    /// `manifest.shard`.
    pub shard: ShardRecord,
    /// `summary.json`.
    pub summary: Summary,
    /// The wall clock of the shard's time zero (`intervals.hlog`'s `BaseTime`), seconds since
    /// the Unix epoch.
    pub base_s: f64,
    /// Every interval of `intervals.jsonl`, in order, with the histograms `intervals.hlog` holds
    /// for it.
    pub intervals: Vec<ShardInterval>,
    /// Files of the run directory that are the workload's own and are not merged.
    pub own_files: Vec<String>,
    /// What the reading skipped (a torn last record), to say so.
    pub notes: Vec<String>,
}

/// One interval of one shard.
#[derive(Debug)]
pub struct ShardInterval {
    /// Its `intervals.jsonl` line.
    pub record: IntervalRecord,
    /// Its histograms by tag (`response:TYPE`, `service:TYPE`, `statement:NAME`), in the
    /// order of the log, still encoded.
    pub histograms: Vec<(String, HlogInterval)>,
}

/// A directory given, with the manifest that says which shard it is.
#[derive(Debug)]
pub struct Given {
    /// The directory, as given.
    pub dir: PathBuf,
    /// Its run id (the directory's name).
    pub run_id: String,
    /// `manifest.json`.
    pub manifest: Manifest,
    /// `manifest.shard`.
    pub shard: ShardRecord,
}

/// The shards [`GivenShards::load`] loaded (each with what it loaded), and those it left out.
pub type Sorted<T> = (Vec<(Given, T)>, Vec<MergedShard>);

/// The directories given, checked to be shards of one run, before anything else of theirs
/// is read.
#[derive(Debug)]
pub struct GivenShards {
    /// Shards the run was split into.
    pub count: u32,
    /// The run's users over all shards.
    pub users_total: u64,
    /// The directories by shard index.
    pub by_index: BTreeMap<u32, Given>,
}

impl GivenShards {
    /// Reads the manifest of every directory in `dirs` and checks that they are shards of one
    /// run: refused when one is not a shard, does not belong with the first, or repeats an
    /// index.
    pub fn read(dirs: &[PathBuf]) -> Result<GivenShards, MergeError> {
        let given: Vec<Given> = dirs.iter().map(|d| read_given(d)).collect::<Result<_, _>>()?;
        let Some(reference) = given.first() else {
            return Err(MergeError::NoDirectories);
        };
        let count = reference.shard.count;
        if count == 0 || count > dbperf_core::bounds::MAX_CONNECTIONS {
            return Err(MergeError::BadCount {
                dir: reference.dir.clone(),
                count,
                max: dbperf_core::bounds::MAX_CONNECTIONS,
            });
        }
        let mut by_index: BTreeMap<u32, Given> = BTreeMap::new();
        for g in given.iter().skip(1) {
            check_belongs(reference, g)?;
        }
        let users_total = reference.shard.users_total;
        for g in given {
            if g.shard.index >= count {
                return Err(MergeError::IndexOutOfRange {
                    dir: g.dir,
                    index: g.shard.index,
                    count,
                });
            }
            if let Some(first) = by_index.get(&g.shard.index) {
                return Err(MergeError::DuplicateIndex {
                    index: g.shard.index,
                    first: first.dir.clone(),
                    second: g.dir,
                });
            }
            by_index.insert(g.shard.index, g);
        }
        Ok(GivenShards {
            count,
            users_total,
            by_index,
        })
    }

    /// Loads each shard with `load`, in index order: the shards it loads, and those left out
    /// with their reason (missing: no directory holds it; failed: `load`'s reason). Refused
    /// (nothing to merge) when none loads.
    pub fn load<T>(self, mut load: impl FnMut(&Given) -> Result<T, String>) -> Result<Sorted<T>, MergeError> {
        let GivenShards {
            count, mut by_index, ..
        } = self;
        let mut loaded = Vec::new();
        let mut left_out = Vec::new();
        for index in 0..count {
            let Some(g) = by_index.remove(&index) else {
                left_out.push(MergedShard {
                    index,
                    run_id: String::new(),
                    reason: "missing: no run directory of this shard was given".to_string(),
                });
                continue;
            };
            match load(&g) {
                Ok(t) => loaded.push((g, t)),
                Err(reason) => left_out.push(MergedShard {
                    index,
                    run_id: g.run_id,
                    reason,
                }),
            }
        }
        if loaded.is_empty() {
            return Err(MergeError::NothingToMerge { count, left_out });
        }
        Ok((loaded, left_out))
    }
}

impl ShardSet {
    /// Reads every directory in `dirs` and checks that they are shards of one run. Refused
    /// (nothing to merge) when one is not a shard, does not belong with the first, repeats an
    /// index, or when no shard finished.
    pub fn read(dirs: &[PathBuf]) -> Result<ShardSet, MergeError> {
        ShardSet::load(GivenShards::read(dirs)?)
    }

    /// Loads the shards `given` (checked to be of one run): their summaries, intervals and
    /// histograms. Refused (nothing to merge) when no shard finished.
    pub fn load(given: GivenShards) -> Result<ShardSet, MergeError> {
        let (count, users_total) = (given.count, given.users_total);
        let (loaded, left_out) = given.load(load_files)?;
        Ok(ShardSet {
            count,
            users_total,
            usable: loaded.into_iter().map(|(g, l)| UsableShard::new(g, l)).collect(),
            left_out,
        })
    }
}

/// The manifest of `dir`, which must be a shard's.
fn read_given(dir: &Path) -> Result<Given, MergeError> {
    let not_a_run = |source| MergeError::NotARunDirectory {
        dir: dir.to_path_buf(),
        source,
    };
    let run_dir = RunDir::open(dir).map_err(not_a_run)?;
    let manifest: Manifest = run_dir.read_json("manifest.json").map_err(not_a_run)?;
    let Some(shard) = manifest.shard.clone() else {
        return Err(MergeError::NotAShard { dir: dir.to_path_buf() });
    };
    Ok(Given {
        dir: dir.to_path_buf(),
        run_id: run_dir.run_id().to_string(),
        manifest,
        shard,
    })
}

/// Checks that `other` is a shard of the same run as `reference`: the first field that
/// differs is the error.
fn check_belongs(reference: &Given, other: &Given) -> Result<(), MergeError> {
    let (a, b) = (&reference.shard, &other.shard);
    let (ma, mb) = (&reference.manifest, &other.manifest);
    let version = |m: &Manifest| {
        m.server
            .as_ref()
            .map_or_else(|| "unknown".to_string(), |s| format!("{:?}", s.version))
    };
    let start = |s: &ShardRecord| s.start_at.clone();
    let mut fields: Vec<(String, String, String)> = vec![
        ("shard.count".into(), b.count.to_string(), a.count.to_string()),
        ("shard.start_at".into(), start(b), start(a)),
        (
            "shard.users_total".into(),
            b.users_total.to_string(),
            a.users_total.to_string(),
        ),
        (
            "workload.name".into(),
            format!("{:?}", mb.workload.name),
            format!("{:?}", ma.workload.name),
        ),
    ];
    let (oa, ob) = (ma.workload.options.to_map(), mb.workload.options.to_map());
    let keys: std::collections::BTreeSet<&String> = oa.keys().chain(ob.keys()).collect();
    let option =
        |o: &serde_json::Map<String, Value>, key: &str| o.get(key).map_or("absent".to_string(), Value::to_string);
    fields.extend(
        keys.into_iter()
            .map(|k| (format!("workload.options.{k}"), option(&ob, k), option(&oa, k))),
    );
    fields.push(("server.version".into(), version(mb), version(ma)));
    fields.push(("target".into(), format!("{:?}", mb.target), format!("{:?}", ma.target)));
    // Two start times that name the same instant agree, whatever their spelling.
    let same = |field: &str, here: &str, there: &str| match field {
        "shard.start_at" => a.start_at_unix_ms == b.start_at_unix_ms,
        _ => here == there,
    };
    match fields.into_iter().find(|(f, here, there)| !same(f, here, there)) {
        None => Ok(()),
        Some((field, value, reference_value)) => Err(MergeError::DoesNotBelong(Box::new(Mismatch {
            dir: other.dir.clone(),
            index: b.index,
            field,
            value,
            reference_dir: reference.dir.clone(),
            reference_index: a.index,
            reference_value,
        }))),
    }
}

impl UsableShard {
    fn new(g: Given, (summary, base_s, intervals, notes): Loaded) -> UsableShard {
        UsableShard {
            own_files: own_files(&g.dir),
            dir: g.dir,
            run_id: g.run_id,
            manifest: g.manifest,
            shard: g.shard,
            summary,
            base_s,
            intervals,
            notes,
        }
    }
}

/// A shard's summary, base time, intervals and notes.
type Loaded = (Summary, f64, Vec<ShardInterval>, Vec<String>);

/// What a shard that finished left, read; the reason it is left out when it did not finish or
/// its files cannot be read.
fn load_files(g: &Given) -> Result<Loaded, String> {
    let dir = RunDir::open(&g.dir).map_err(|e| e.to_string())?;
    if !g.dir.join(SUMMARY_FILE).exists() {
        return Err(format!(
            "failed: it has no {SUMMARY_FILE}, so it did not reach its end (killed, or still running)"
        ));
    }
    let summary: Summary = dir
        .read_json(SUMMARY_FILE)
        .map_err(|e| format!("failed: its {SUMMARY_FILE} cannot be read: {e}"))?;
    if summary.interrupted {
        return Err(format!(
            "failed: its {SUMMARY_FILE} says it was interrupted (Ctrl-C, a fatal error or a crash) before its end"
        ));
    }
    let jsonl = dir
        .read_intervals::<IntervalRecord>()
        .map_err(|e| format!("failed: its {INTERVALS_FILE} cannot be read: {e}"))?;
    let hlog =
        Hlog::read(&g.dir.join(HLOG_FILE)).map_err(|e| format!("failed: its {HLOG_FILE} cannot be read: {e}"))?;
    let notes: Vec<String> = [jsonl.torn.as_ref(), hlog.torn.as_ref()]
        .into_iter()
        .flatten()
        .map(ToString::to_string)
        .collect();
    let Some(base) = hlog.base_time else {
        return Err(format!(
            "failed: its {HLOG_FILE} has no BaseTime line, so its intervals cannot be put on the run's clock"
        ));
    };
    let intervals = pair_histograms(jsonl.records, hlog)?;
    Ok((summary, base.as_secs_f64(), intervals, notes))
}

/// Puts each histogram of the log with the `intervals.jsonl` line of the interval it starts
/// (the log stores starts to the millisecond).
fn pair_histograms(records: Vec<IntervalRecord>, hlog: Hlog) -> Result<Vec<ShardInterval>, String> {
    let ms = |s: f64| (s * 1000.0).round() as i64;
    let by_start: HashMap<i64, usize> = records.iter().enumerate().map(|(i, r)| (ms(r.start_s), i)).collect();
    let mut intervals: Vec<ShardInterval> = records
        .into_iter()
        .map(|record| ShardInterval {
            record,
            histograms: Vec::new(),
        })
        .collect();
    for h in hlog.intervals {
        let start = ms(h.start.as_secs_f64());
        // A start exactly between two milliseconds may round either way.
        let Some(&i) = [start, start - 1, start + 1].iter().find_map(|k| by_start.get(k)) else {
            return Err(format!(
                "failed: its {HLOG_FILE} has histograms for an interval starting at {:.3} s, which \
                 {INTERVALS_FILE} does not have: the two files disagree",
                h.start.as_secs_f64()
            ));
        };
        // Decoded once here, so that a log that cannot be read leaves the shard out.
        h.histogram()
            .map_err(|e| format!("failed: its {HLOG_FILE} cannot be read: {e}"))?;
        let Some(tag) = h.tag.clone() else {
            return Err(format!(
                "failed: its {HLOG_FILE} has an untagged histogram at {:.3} s (dbperf tags each one \
                 response:, service: or statement:)",
                h.start.as_secs_f64()
            ));
        };
        intervals[i].histograms.push((tag, h));
    }
    Ok(intervals)
}

/// The files of `dir` a merge does not combine: the workload's own results.
fn own_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && !MERGED_FILES.contains(&n.as_str()))
        .collect();
    names.sort();
    names
}
