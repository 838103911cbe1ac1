//! `dbperf merge`: one run directory made from the run directories of a sharded run's shards
//! (`--shard I/N --start-at TIME` on several clients), which `dbperf report`, `analyze`,
//! `compare` and the catalog then read like any run.
//!
//! | file | owns |
//! |---|---|
//! | [`shards`] | reading the directories given; refusing those that are not shards of one run; which shards are missing or failed (left out, with their reasons) |
//! | [`combine`] | the arithmetic: intervals aligned on the shared clock, histograms added tag by tag, counts and rates summed; percentiles from the added histograms |
//! | this file | the merged run directory: its files, the manifest's `merged` record, the catalog row |
//!
//! The merged directory holds `intervals.jsonl`, `intervals.hlog` and `summary.json` merged,
//! and `manifest.json`: the first merged shard's, with the merge's command line, the earliest
//! shard's `started_at`, no `shard`, and `merged` saying which shards it covers and which it
//! leaves out. `telemetry.jsonl` is the first merged shard's, copied: its server rows are the
//! server every shard ran against, but its OS and client rows are that one shard's host. A
//! workload's own files (`tpcc.json`, `linkbench.json`, ...) are merged by the workload
//! ([`dbperf_workloads::merged`], through [`MergedRun::add_own_file`]) from
//! [`MergedRun::measured`]; the others stay in each shard's directory.

pub mod combine;
pub mod shards;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

pub use combine::ALIGNMENT_TOLERANCE_S;
pub use shards::ShardSet;

use super::hlog::HLOG_FILE;
use super::interval::IntervalRecord;
use super::manifest::{redact_args, Manifest, MergeRecord, MergedShard};
use super::recording::{record_in_catalog, RunDirState};
use super::summary::SUMMARY_FILE;
use super::{ResultsError, RunDir, Summary, INTERVALS_FILE, TELEMETRY_FILE};

/// Why a merge was refused. Nothing is written when it is.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No directory was given.
    #[error(
        "no run directory given: name each shard's run directory, e.g. `dbperf merge RESULTS/RUN-A RESULTS/RUN-B`"
    )]
    NoDirectories,
    /// A directory is not a run directory.
    #[error(
        "{dir} is not a run directory ({source}): give the directories the shards' runs wrote (each has manifest.json)"
    )]
    NotARunDirectory {
        /// The directory given.
        dir: PathBuf,
        /// Why its manifest cannot be read.
        source: ResultsError,
    },
    /// A run directory is not a shard's.
    #[error(
        "{dir} is not a shard: its manifest.json has no `shard` (the run was not started with --shard I/N); \
         give only the run directories of one sharded run"
    )]
    NotAShard {
        /// The directory given.
        dir: PathBuf,
    },
    /// A shard count no run can have.
    #[error(
        "{dir}: shard.count {count} in manifest.json is not a number of shards (1 to {max}): the manifest is damaged"
    )]
    BadCount {
        /// The directory given.
        dir: PathBuf,
        /// Its `shard.count`.
        count: u32,
        /// The largest count (a shard has at least one connection).
        max: u32,
    },
    /// A shard is not part of the same run as the first directory given.
    #[error("{0}")]
    DoesNotBelong(Box<Mismatch>),
    /// A shard index outside `0..count`.
    #[error("{dir}: shard.index {index} in manifest.json is outside 0..{count}: the manifest is damaged")]
    IndexOutOfRange {
        /// The directory given.
        dir: PathBuf,
        /// Its `shard.index`.
        index: u32,
        /// Its `shard.count`.
        count: u32,
    },
    /// Two directories are the same shard.
    #[error("shard {index} is given twice: {first} and {second}; give one run directory per shard")]
    DuplicateIndex {
        /// The shard index.
        index: u32,
        /// The first directory holding it.
        first: PathBuf,
        /// The second.
        second: PathBuf,
    },
    /// Every shard is missing or failed.
    #[error("no shard of the {count} can be merged: {}", left_out_text(.left_out))]
    NothingToMerge {
        /// Shards in the run.
        count: u32,
        /// Each shard and why it cannot be merged.
        left_out: Vec<MergedShard>,
    },
    /// A shard's interval is not where the others' are on the shared clock.
    #[error(
        "{dir} (shard {index}): interval {interval} {what}; the shards did not measure on one clock: check that \
         every client's clock is synchronised (chronyc tracking, timedatectl) and that every shard was started \
         with the same --start-at"
    )]
    Misaligned {
        /// The shard's directory.
        dir: PathBuf,
        /// Its shard index.
        index: u32,
        /// The interval (its `index` in `intervals.jsonl`).
        interval: u32,
        /// How it differs.
        what: String,
    },
    /// Histograms could not be added (one too large for this machine's memory).
    #[error("cannot add the shards' histograms: {0}")]
    Histogram(String),
    /// The merged run directory could not be written; what was written of it was removed.
    #[error("cannot write the merged run directory {dir} (removed again): {what}")]
    Write {
        /// The merged run directory.
        dir: PathBuf,
        /// What failed.
        what: String,
    },
    /// The merged run directory could not be created.
    #[error(transparent)]
    Create(ResultsError),
}

/// A directory whose manifest differs from the first one's in a field that shards of one run
/// share.
#[derive(Debug, thiserror::Error)]
#[error(
    "{dir} (shard {index}) is not part of the same run as {reference_dir} (shard {reference_index}): \
     its {field} is {value}, not {reference_value}; give only the run directories of one sharded run \
     (the same --shard count, --start-at, workload options, server and target)"
)]
pub struct Mismatch {
    /// The directory that does not belong.
    pub dir: PathBuf,
    /// Its shard index.
    pub index: u32,
    /// The manifest field that differs (`shard.start_at`, `workload.options.threads`, ...).
    pub field: String,
    /// Its value there.
    pub value: String,
    /// The first directory given, which the others are compared with.
    pub reference_dir: PathBuf,
    /// Its shard index.
    pub reference_index: u32,
    /// The field's value there.
    pub reference_value: String,
}

/// `shard 0 (RUN-ID): reason; shard 1: reason`.
fn left_out_text(left_out: &[MergedShard]) -> String {
    left_out
        .iter()
        .map(|s| match s.run_id.is_empty() {
            true => format!("shard {}: {}", s.index, s.reason),
            false => format!("shard {} ({}): {}", s.index, s.run_id, s.reason),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A shard that was merged, for the report.
#[derive(Debug, Clone)]
pub struct MergedShardLine {
    /// Shard index.
    pub index: u32,
    /// Its run id.
    pub run_id: String,
    /// Its run directory.
    pub dir: PathBuf,
    /// Its measured transactions.
    pub transactions: u64,
    /// Its users (connections).
    pub users: u64,
}

/// A merged run, in memory until [`MergedRun::write`].
#[derive(Debug)]
pub struct MergedRun {
    /// What the merge covers and leaves out, for the manifest's `merged`.
    pub record: MergeRecord,
    /// The shards merged, in index order.
    pub merged: Vec<MergedShardLine>,
    /// `intervals.jsonl`.
    pub intervals: Vec<IntervalRecord>,
    /// `intervals.hlog`, encoded.
    pub hlog: Vec<u8>,
    /// `summary.json`; its `run_id` is set by [`MergedRun::write`].
    pub summary: Summary,
    /// `manifest.json`; its `command_line` and `merged` are set by [`MergedRun::write`].
    pub manifest: Manifest,
    /// The `telemetry.jsonl` copied (the first merged shard's), if it has one.
    pub telemetry_from: Option<PathBuf>,
    /// The workload's own files the shards have, which are not merged, and which shards have each.
    pub not_merged: BTreeMap<String, Vec<u32>>,
    /// The measured histograms of every shard added up, by tag (`response:TYPE`, ...).
    pub measured: BTreeMap<String, Histogram<u64>>,
    /// The workload's own files merged (name, bytes), written beside the merged run's own.
    pub own_files: Vec<(String, Vec<u8>)>,
    /// What reading the shards skipped (torn last records) or could not do.
    pub notes: Vec<String>,
}

/// Reads the shards' run directories `dirs`, checks that they belong together and merges the
/// shards that finished. Nothing is written: see [`MergedRun::write`].
pub fn merge_shards(dirs: &[PathBuf]) -> Result<MergedRun, MergeError> {
    merge_given(shards::GivenShards::read(dirs)?)
}

/// Merges the shards `given` (already checked to belong together) that finished.
pub fn merge_given(given: shards::GivenShards) -> Result<MergedRun, MergeError> {
    let set = ShardSet::load(given)?;
    let combined = combine::combine(&set.usable)?;
    let Some(first) = set.usable.first() else {
        return Err(MergeError::NothingToMerge {
            count: set.count,
            left_out: set.left_out,
        });
    };
    let mut manifest = first.manifest.clone();
    manifest.shard = None;
    // The earliest shard's start (a start that does not parse is not a candidate).
    if let Some(earliest) = set
        .usable
        .iter()
        .filter_map(|s| chrono::DateTime::parse_from_rfc3339(&s.manifest.started_at).ok())
        .min()
    {
        manifest.started_at = super::manifest::rfc3339_utc(earliest.with_timezone(&chrono::Utc));
    }
    let record = MergeRecord {
        count: set.count,
        shards: set
            .usable
            .iter()
            .map(|s| MergedShard {
                index: s.shard.index,
                run_id: s.run_id.clone(),
                reason: String::new(),
            })
            .collect(),
        left_out: set.left_out,
        users: set.usable.iter().map(|s| s.shard.users).sum(),
        users_total: set.users_total,
    };
    let mut not_merged: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for s in &set.usable {
        for f in &s.own_files {
            not_merged.entry(f.clone()).or_default().push(s.shard.index);
        }
    }
    let telemetry = first.dir.join(TELEMETRY_FILE);
    Ok(MergedRun {
        record,
        merged: set
            .usable
            .iter()
            .map(|s| MergedShardLine {
                index: s.shard.index,
                run_id: s.run_id.clone(),
                dir: s.dir.clone(),
                transactions: s.summary.transactions.total,
                users: s.shard.users,
            })
            .collect(),
        intervals: combined.intervals,
        hlog: combined.hlog,
        summary: combined.summary,
        manifest,
        telemetry_from: telemetry.is_file().then_some(telemetry),
        not_merged,
        measured: combined.measured,
        own_files: Vec::new(),
        notes: set.usable.iter().flat_map(|s| s.notes.iter().cloned()).collect(),
    })
}

/// Creates a merged run directory of `workload` under `results_dir`, fills it with `write`
/// (on an error it is removed again, and the error names what failed) and records it in the
/// catalog: complete when every shard was merged.
pub fn write_merged_dir(
    results_dir: &Path,
    workload: &str,
    complete: bool,
    write: impl FnOnce(&RunDir) -> Result<(), String>,
) -> Result<RunDir, MergeError> {
    let dir = RunDir::create(results_dir, workload).map_err(MergeError::Create)?;
    if let Err(what) = write(&dir) {
        let _ = std::fs::remove_dir_all(dir.path());
        return Err(MergeError::Write {
            dir: dir.path().to_path_buf(),
            what,
        });
    }
    let state = match complete {
        true => RunDirState::Complete,
        false => RunDirState::Incomplete,
    };
    record_in_catalog(results_dir, &dir, state);
    Ok(dir)
}

impl MergedRun {
    /// True when every shard of the run was merged.
    pub fn complete(&self) -> bool {
        self.record.left_out.is_empty()
    }

    /// Adds a workload's own file, merged from the shards' (`tpcc.json`, ...): it is written
    /// into the merged run directory and no longer listed as not merged.
    pub fn add_own_file(&mut self, name: &str, bytes: Vec<u8>) {
        self.not_merged.remove(name);
        self.own_files.retain(|(n, _)| n != name);
        self.own_files.push((name.to_string(), bytes));
    }

    /// `shards 0 and 2 of 3: 8 of 12 users`.
    pub fn covers(&self) -> String {
        let indexes: Vec<String> = self.merged.iter().map(|s| s.index.to_string()).collect();
        let list = match indexes.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("shards {} and {last}", rest.join(", ")),
            _ => format!("shard {}", indexes.join("")),
        };
        let r = &self.record;
        format!("{list} of {}: {} of {} users", r.count, r.users, r.users_total)
    }

    /// Creates the merged run directory under `results_dir`, writes its files (the manifest's
    /// command line is `argv`, redacted) and records it in the catalog: complete when every
    /// shard was merged. On a write error the directory is removed again.
    pub fn write(&mut self, results_dir: &Path, argv: &[String]) -> Result<RunDir, MergeError> {
        let (workload, complete) = (self.manifest.workload.name.clone(), self.complete());
        write_merged_dir(results_dir, &workload, complete, |dir| {
            self.summary.run_id = dir.run_id().to_string();
            self.manifest.command_line = redact_args(argv);
            self.manifest.merged = Some(self.record.clone());
            self.write_files(dir)
        })
    }

    fn write_files(&mut self, dir: &RunDir) -> Result<(), String> {
        let text = |e: ResultsError| e.to_string();
        dir.write_json("manifest.json", &self.manifest).map_err(text)?;
        let mut lines = Vec::new();
        for r in &self.intervals {
            serde_json::to_writer(&mut lines, r).map_err(|e| format!("{INTERVALS_FILE}: {e}"))?;
            lines.push(b'\n');
        }
        dir.write_atomic(INTERVALS_FILE, &lines).map_err(text)?;
        dir.write_atomic(HLOG_FILE, &self.hlog).map_err(text)?;
        for (name, bytes) in &self.own_files {
            dir.write_atomic(name, bytes).map_err(text)?;
        }
        if let Some(from) = &self.telemetry_from {
            let to = dir.file(TELEMETRY_FILE).map_err(text)?;
            if let Err(e) = dbperf_core::nofollow::copy(from, &to) {
                let _ = std::fs::remove_file(&to);
                self.notes.push(format!(
                    "{} not copied: {e}; the merged run has no telemetry",
                    from.display()
                ));
            }
        }
        dir.write_json(SUMMARY_FILE, &self.summary).map_err(text)?;
        Ok(())
    }
}
