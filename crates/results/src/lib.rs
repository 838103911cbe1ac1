//! The run directory: everything a run leaves on disk, and the versioned formats of those files.
//!
//! One run writes one directory, `<results-root>/<run-id>/`, described in `docs/results.md`:
//!
//! | file | written by | module |
//! |---|---|---|
//! | `manifest.json` | at start, before any load | [`manifest`] (facts from [`host`]; the workload's options typed in [`options`]) |
//! | `intervals.jsonl` | one line per finished interval, as the run goes | [`rundir::IntervalWriter`] |
//! | `intervals.hlog` | HdrHistogram interval log (`run/record.rs`, through an [`AppendFile`]) | read back: [`hlog`] |
//! | `telemetry.jsonl` | the telemetry thread (`telemetry/sampler.rs`, through an [`AppendFile`]) | [`telemetry`] |
//! | `summary.json` | at the end, derived from the intervals | [`summary`] |
//! | `tpcc.json` | at the end of `dbperf tpcc run` | [`tpcc`] |
//! | `tpch.json` | at the end of `dbperf tpch power` / `throughput` | [`tpch`] |
//! | `linkbench.json` | at the end of `dbperf linkbench request` | [`linkbench`] |
//! | (figures by name: `notpm`, `q5`, `geomean`, ...) | read from the files above | [`figures`] |
//! | a merged run's directory (all of the above but the workload files) | `dbperf merge`, from the run directories of a sharded run's shards | [`merge`] |
//! | `<results-root>/catalog.sqlite` | at each run's start and end ([`recording`]), and by `dbperf results index` | [`catalog`] |
//!
//! Every whole file is written atomically (temporary file + rename), and the interval log is
//! handed to the OS after every line, so an interrupted run keeps every finished interval. On a
//! full disk the appended files stop at their first failed write and count the bytes they
//! could not take ([`WriteLoss`]); readers skip a torn last record and name it ([`TornRecord`]).

pub mod catalog;
pub mod figures;
pub mod hlog;
pub mod host;
pub mod interval;
pub mod linkbench;
pub mod manifest;
pub mod merge;
pub mod options;
pub mod recording;
pub mod rundir;
pub mod summary;
pub mod telemetry;
pub mod tpcc;
pub mod tpch;
pub mod version;

use std::io;
use std::path::{Path, PathBuf};

pub use host::HostInfo;
pub use manifest::{redact_args, redact_text, LabPoint, Manifest, ServerFacts, WorkloadInfo};
pub use rundir::{
    read_jsonl, AppendFile, IntervalWriter, Jsonl, RunDir, TornRecord, WriteLoss, INTERVALS_FILE, TELEMETRY_FILE,
    TPCH_FILE,
};
pub use summary::{client_usage, LatencyBlock, Summary};

/// What a finished (or stopped) run left behind, read back: its manifest, and its summary
/// when the run got far enough to write one.
#[derive(Debug, Clone)]
pub struct RunRecords {
    /// The run directory.
    pub dir: RunDir,
    /// `manifest.json`.
    pub manifest: Manifest,
    /// `summary.json`, `None` when the run never wrote it (still running, or killed).
    pub summary: Option<Summary>,
}

impl RunRecords {
    /// Reads `manifest.json` and, if present, `summary.json` of the run directory at `path`.
    pub fn read(path: &Path) -> Result<RunRecords, ResultsError> {
        let dir = RunDir::open(path)?;
        let manifest = dir.read_json("manifest.json")?;
        let summary = if dir.file(summary::SUMMARY_FILE)?.exists() {
            Some(dir.read_json(summary::SUMMARY_FILE)?)
        } else {
            None
        };
        Ok(RunRecords { dir, manifest, summary })
    }
}

/// Why reading or writing a run directory failed. Every variant names the path or file involved.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// The run directory (or the results root above it) could not be created.
    #[error("cannot create run directory {path}: {source}")]
    CreateDir {
        /// Directory that could not be created.
        path: PathBuf,
        /// Underlying OS error.
        source: io::Error,
    },
    /// Every candidate run id was already taken (astronomically unlikely unless the clock is stuck).
    #[error("no free run id under {root} after {attempts} attempts; check the system clock")]
    RunIdExhausted {
        /// Results root searched.
        root: PathBuf,
        /// How many random suffixes were tried.
        attempts: u32,
    },
    /// A file name given to the run directory was not a plain name (empty, `.`/`..`, or with a
    /// path separator).
    #[error("invalid result file name {name:?}: use a plain file name such as \"summary.json\"")]
    InvalidFileName {
        /// The rejected name.
        name: String,
    },
    /// Writing, syncing or renaming a file failed.
    #[error("cannot write {path}: {source}")]
    Write {
        /// File being written.
        path: PathBuf,
        /// Underlying OS error.
        source: io::Error,
    },
    /// Reading a file failed.
    #[error("cannot read {path}: {source}")]
    Read {
        /// File being read.
        path: PathBuf,
        /// Underlying OS error.
        source: io::Error,
    },
    /// A value could not be turned into JSON.
    #[error("cannot serialize {what} as JSON: {source}")]
    Serialize {
        /// What was being serialized (usually the file name).
        what: String,
        /// Underlying serde error.
        source: serde_json::Error,
    },
    /// A JSON Lines file holds a line that is not valid JSON for the expected record (other than
    /// a torn last line, which readers skip).
    #[error("{path}:{line}: invalid record: {source}")]
    Parse {
        /// File being read.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Underlying serde error.
        source: serde_json::Error,
    },
}
