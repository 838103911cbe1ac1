//! The run directory on disk: choosing a unique, sortable run id, writing whole files atomically
//! (never through a link planted in a file's place: `dbperf_core::nofollow`),
//! the append-only files that survive a killed run and a full disk ([`AppendFile`] under
//! `intervals.jsonl`, `intervals.hlog` and `telemetry.jsonl`, counting what they could not
//! write), and reading JSON Lines back with a torn last record skipped and named
//! ([`TornRecord`]).

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::ResultsError;

/// Name of the per-interval JSON Lines log inside a run directory.
pub const INTERVALS_FILE: &str = "intervals.jsonl";
/// Name of the telemetry samples inside a run directory (written by the run's telemetry thread).
pub const TELEMETRY_FILE: &str = "telemetry.jsonl";
/// A TPC-H power or throughput test's results, in place of `summary.json`.
pub const TPCH_FILE: &str = "tpch.json";

/// How many random suffixes [`RunDir::create`] tries before giving up.
const CREATE_ATTEMPTS: u32 = 32;

/// Longest workload name kept in a run id (longer names are cut).
const MAX_WORKLOAD_IN_ID: usize = 48;

/// One run's directory, `<results-root>/<run-id>/`.
#[derive(Debug, Clone)]
pub struct RunDir {
    path: PathBuf,
    run_id: String,
}

impl RunDir {
    /// Creates `<results_root>/<run-id>/` (and `results_root` if missing).
    ///
    /// The run id is `YYYYMMDD-HHMMSS-<workload>-<4 hex>` with the time in UTC, so ids sort by
    /// start time. Characters of `workload` outside `[A-Za-z0-9_-]` become `_`. The directory is
    /// created with `create_dir` (not `_all`), so two runs never share one; on a collision
    /// another random suffix is tried.
    pub fn create(results_root: &Path, workload: &str) -> Result<RunDir, ResultsError> {
        Self::create_at(results_root, workload, Utc::now())
    }

    /// As [`RunDir::create`], with the start time given (for tests and resumed plans).
    pub fn create_at(results_root: &Path, workload: &str, started: DateTime<Utc>) -> Result<RunDir, ResultsError> {
        fs::create_dir_all(results_root).map_err(|source| ResultsError::CreateDir {
            path: results_root.to_path_buf(),
            source,
        })?;
        let prefix = format!("{}-{}", started.format("%Y%m%d-%H%M%S"), sanitize_workload(workload));
        for _ in 0..CREATE_ATTEMPTS {
            let run_id = format!("{prefix}-{:04x}", rand::random::<u16>());
            let path = results_root.join(&run_id);
            match fs::create_dir(&path) {
                Ok(()) => return Ok(RunDir { path, run_id }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(ResultsError::CreateDir { path, source }),
            }
        }
        Err(ResultsError::RunIdExhausted {
            root: results_root.to_path_buf(),
            attempts: CREATE_ATTEMPTS,
        })
    }

    /// Opens an existing run directory (to read it, or to add files after the run).
    pub fn open(path: &Path) -> Result<RunDir, ResultsError> {
        let meta = fs::metadata(path).map_err(|source| ResultsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(ResultsError::Read {
                path: path.to_path_buf(),
                source: io::Error::new(io::ErrorKind::NotADirectory, "not a run directory"),
            });
        }
        let run_id = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(RunDir {
            path: path.to_path_buf(),
            run_id,
        })
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run id (the directory's name).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Path of a file inside the run directory; `name` must be a plain file name.
    pub fn file(&self, name: &str) -> Result<PathBuf, ResultsError> {
        check_file_name(name)?;
        Ok(self.path.join(name))
    }

    /// Writes `value` as pretty JSON (with a final newline) to `name`, atomically: a reader sees
    /// the old file or the whole new one, never a part.
    pub fn write_json<T: Serialize + ?Sized>(&self, name: &str, value: &T) -> Result<PathBuf, ResultsError> {
        let mut bytes = serde_json::to_vec_pretty(value).map_err(|source| ResultsError::Serialize {
            what: name.to_string(),
            source,
        })?;
        bytes.push(b'\n');
        self.write_atomic(name, &bytes)
    }

    /// Writes `bytes` to `name` atomically: into a fresh temporary file beside it, synced (so
    /// a crash cannot leave an empty file under the final name), then renamed over `name`; a
    /// link in `name`'s place is replaced, never written through.
    pub fn write_atomic(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, ResultsError> {
        let target = self.file(name)?;
        dbperf_core::nofollow::write_atomic(&target, bytes).map_err(|source| ResultsError::Write {
            path: target.clone(),
            source,
        })?;
        Ok(target)
    }

    /// Reads and parses a JSON file written by [`RunDir::write_json`].
    pub fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<T, ResultsError> {
        let path = self.file(name)?;
        let text = fs::read_to_string(&path).map_err(|source| ResultsError::Read {
            path: path.clone(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ResultsError::Parse {
            path,
            line: source.line(),
            source,
        })
    }

    /// Opens `intervals.jsonl` for appending (creating it if missing).
    pub fn interval_writer(&self) -> Result<IntervalWriter, ResultsError> {
        IntervalWriter::open(&self.path.join(INTERVALS_FILE))
    }

    /// Reads every complete record of `intervals.jsonl` (see [`read_jsonl`]).
    pub fn read_intervals<T: DeserializeOwned>(&self) -> Result<Jsonl<T>, ResultsError> {
        read_jsonl(&self.path.join(INTERVALS_FILE))
    }
}

/// An append-only file that keeps going when the disk does not: at its first failed write (a
/// full disk, a quota, an I/O error) it stops writing and from then on only counts the bytes
/// it was given, so a run goes on measuring and says at the end what its files lack
/// ([`AppendFile::loss`]). What was written before stays as it was; the record being written
/// when the disk filled may be cut short, and readers skip such a torn last record.
#[derive(Debug)]
pub struct AppendFile {
    file: File,
    path: PathBuf,
    failure: Option<String>,
    lost: u64,
}

impl AppendFile {
    /// Opens `path` for appending (`O_APPEND`), creating it if missing; a link in its place
    /// is refused (`O_NOFOLLOW`).
    pub fn open(path: &Path) -> Result<AppendFile, ResultsError> {
        let file = dbperf_core::nofollow::open(path, dbperf_core::nofollow::Open::Append).map_err(|source| {
            ResultsError::Write {
                path: path.to_path_buf(),
                source,
            }
        })?;
        Ok(AppendFile::on(file, path))
    }

    /// Writes to `file`, opened at `path` by the caller.
    fn on(file: File, path: &Path) -> AppendFile {
        AppendFile {
            file,
            path: path.to_path_buf(),
            failure: None,
            lost: 0,
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What could not be written, once a write has failed.
    pub fn loss(&self) -> Option<WriteLoss> {
        self.failure.as_ref().map(|error| WriteLoss {
            path: self.path.clone(),
            bytes: self.lost,
            error: error.clone(),
        })
    }

    fn fail(&mut self, error: &io::Error, unwritten: usize) -> io::Error {
        self.failure.get_or_insert_with(|| error.to_string());
        self.lost += unwritten as u64;
        io::Error::new(error.kind(), error.to_string())
    }
}

impl Write for AppendFile {
    /// Writes as much of `buf` as the OS takes; after a failure, refuses everything (counting it).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(first) = &self.failure {
            let e = io::Error::other(format!("not written after an earlier failure: {first}"));
            self.lost += buf.len() as u64;
            return Err(e);
        }
        match self.file.write(buf) {
            Ok(0) if !buf.is_empty() => {
                let e = io::Error::new(io::ErrorKind::WriteZero, "the file takes no more bytes");
                Err(self.fail(&e, buf.len()))
            }
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => Err(self.fail(&e, buf.len())),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// What a run could not write to one of its files: a warning at the end of the run, and the
/// reason its exit code says the results are incomplete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteLoss {
    /// The file.
    pub path: PathBuf,
    /// Bytes that were not written to it.
    pub bytes: u64,
    /// The first error (`No space left on device (os error 28)`).
    pub error: String,
}

impl fmt::Display for WriteLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} bytes not written ({})",
            self.path.display(),
            self.bytes,
            self.error
        )
    }
}

/// Append-only JSON Lines writer for `intervals.jsonl`.
///
/// Each [`IntervalWriter::append`] hands one whole line to the OS in a single `write` on a file
/// opened with `O_APPEND`, with no user-space buffer in between: if the process is killed, every
/// line appended so far is in the file (the OS page cache survives a process crash; a power loss
/// is not guarded against, as no `fdatasync` is done). On a full disk it stops at the first
/// failed line, as [`AppendFile`] does.
#[derive(Debug)]
pub struct IntervalWriter {
    file: AppendFile,
    line: Vec<u8>,
    lines: u64,
}

impl IntervalWriter {
    /// Opens `path` for appending, creating it if missing.
    pub fn open(path: &Path) -> Result<IntervalWriter, ResultsError> {
        Ok(IntervalWriter {
            file: AppendFile::open(path)?,
            line: Vec::with_capacity(4096),
            lines: 0,
        })
    }

    /// Appends `record` as one compact JSON line and hands it to the OS before returning.
    pub fn append<T: Serialize + ?Sized>(&mut self, record: &T) -> Result<(), ResultsError> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record).map_err(|source| ResultsError::Serialize {
            what: format!("a record for {}", self.file.path().display()),
            source,
        })?;
        // Compact serde_json output escapes control characters, so the record has no newline.
        self.line.push(b'\n');
        self.file.write_all(&self.line).map_err(|source| ResultsError::Write {
            path: self.file.path().to_path_buf(),
            source,
        })?;
        self.lines += 1;
        Ok(())
    }

    /// Lines appended through this writer.
    pub fn lines_written(&self) -> u64 {
        self.lines
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// What could not be written, once an append has failed.
    pub fn loss(&self) -> Option<WriteLoss> {
        self.file.loss()
    }
}

/// A last record that a reader skipped because it was cut off mid-write (a full disk, a killed
/// process): the line has no final newline and does not parse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TornRecord {
    /// The file.
    pub path: PathBuf,
    /// 1-based line number of the torn record.
    pub line: usize,
    /// Its length in bytes.
    pub bytes: usize,
}

impl TornRecord {
    /// The torn last line of `text` (read from `path`), if its last line has no final newline.
    pub fn at_end_of(path: &Path, text: &[u8]) -> Option<TornRecord> {
        if text.is_empty() || text.ends_with(b"\n") {
            return None;
        }
        let start = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        Some(TornRecord {
            path: path.to_path_buf(),
            line: text[..start].iter().filter(|b| **b == b'\n').count() + 1,
            bytes: text.len() - start,
        })
    }
}

impl fmt::Display for TornRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: skipped a torn last record ({} bytes without a line end: the write was cut off, \
             e.g. by a full disk or a killed run)",
            self.path.display(),
            self.line,
            self.bytes
        )
    }
}

/// The records of a JSON Lines file, and the torn last record skipped, if any.
#[derive(Debug, Clone)]
pub struct Jsonl<T> {
    /// Every complete record.
    pub records: Vec<T>,
    /// The last line, cut off mid-write, that was left out.
    pub torn: Option<TornRecord>,
}

/// Reads a JSON Lines file into records, skipping blank lines.
///
/// A last line without its final newline is a write torn by a crash or a full disk: it is
/// skipped, and named in [`Jsonl::torn`], if it does not parse. Any other bad line is an error
/// naming the line.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Jsonl<T>, ResultsError> {
    let text = fs::read_to_string(path).map_err(|source| ResultsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut records = Vec::with_capacity(lines.len());
    let mut torn = None;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(record) => records.push(record),
            Err(_) if !complete && i + 1 == lines.len() => {
                torn = TornRecord::at_end_of(path, text.as_bytes());
                break;
            }
            Err(source) => {
                return Err(ResultsError::Parse {
                    path: path.to_path_buf(),
                    line: i + 1,
                    source,
                })
            }
        }
    }
    Ok(Jsonl { records, torn })
}

fn sanitize_workload(workload: &str) -> String {
    let cleaned: String = workload
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_WORKLOAD_IN_ID)
        .collect();
    if cleaned.is_empty() {
        "run".to_string()
    } else {
        cleaned
    }
}

fn check_file_name(name: &str) -> Result<(), ResultsError> {
    let plain = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
    if plain {
        Ok(())
    } else {
        Err(ResultsError::InvalidFileName { name: name.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::{json, Value};

    #[test]
    fn run_id_is_sortable_and_names_the_workload() {
        let root = tempfile::tempdir().unwrap();
        let t = Utc.with_ymd_and_hms(2024, 3, 9, 7, 5, 1).unwrap();
        let dir = RunDir::create_at(root.path(), "oltp_read_write", t).unwrap();
        let id = dir.run_id();
        assert!(id.starts_with("20240309-070501-oltp_read_write-"), "{id}");
        let suffix = id.rsplit('-').next().unwrap();
        assert_eq!(suffix.len(), 4);
        assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(dir.path().is_dir());
        assert_eq!(dir.path(), root.path().join(id));
    }

    #[test]
    fn run_ids_are_unique_within_one_second() {
        let root = tempfile::tempdir().unwrap();
        let t = Utc.with_ymd_and_hms(2024, 3, 9, 7, 5, 1).unwrap();
        let mut ids: Vec<String> = (0..50)
            .map(|_| RunDir::create_at(root.path(), "tpcc", t).unwrap().run_id().to_string())
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 50);
    }

    #[test]
    fn workload_names_are_made_safe_for_a_directory() {
        assert_eq!(sanitize_workload("./my/script.lua"), "__my_script_lua");
        assert_eq!(sanitize_workload(""), "run");
        assert_eq!(sanitize_workload(&"x".repeat(100)).len(), MAX_WORKLOAD_IN_ID);
    }

    #[test]
    fn creates_missing_results_root() {
        let root = tempfile::tempdir().unwrap();
        let nested = root.path().join("a/b");
        let dir = RunDir::create(&nested, "tpch").unwrap();
        assert!(dir.path().starts_with(&nested));
    }

    #[test]
    fn write_json_replaces_whole_file_and_leaves_no_temporary() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunDir::create(root.path(), "w").unwrap();
        dir.write_json("summary.json", &json!({"a": 1})).unwrap();
        dir.write_json("summary.json", &json!({"a": 2})).unwrap();
        let back: Value = dir.read_json("summary.json").unwrap();
        assert_eq!(back, json!({"a": 2}));
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["summary.json".to_string()]);
    }

    #[test]
    fn rejects_names_that_leave_the_directory() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunDir::create(root.path(), "w").unwrap();
        for bad in ["", ".", "..", "../x.json", "a/b.json"] {
            let err = dir.write_json(bad, &json!({})).unwrap_err();
            assert!(matches!(err, ResultsError::InvalidFileName { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn interval_lines_survive_a_writer_that_is_never_dropped() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunDir::create(root.path(), "w").unwrap();
        let mut writer = dir.interval_writer().unwrap();
        for i in 0..3 {
            writer.append(&json!({"interval": i, "tps": 10.5})).unwrap();
        }
        assert_eq!(writer.lines_written(), 3);
        std::mem::forget(writer); // a crash: no drop, no final flush
        let text = fs::read_to_string(dir.path().join(INTERVALS_FILE)).unwrap();
        assert_eq!(text.lines().count(), 3);
        let back: Vec<Value> = dir.read_intervals().unwrap().records;
        assert_eq!(back[2], json!({"interval": 2, "tps": 10.5}));
    }

    #[test]
    fn reopening_appends_instead_of_truncating() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunDir::create(root.path(), "w").unwrap();
        dir.interval_writer().unwrap().append(&json!(1)).unwrap();
        dir.interval_writer().unwrap().append(&json!(2)).unwrap();
        let back: Vec<u32> = dir.read_intervals().unwrap().records;
        assert_eq!(back, vec![1, 2]);
    }

    #[test]
    fn reader_skips_a_torn_last_line_names_it_but_not_a_bad_middle_line() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("x.jsonl");
        fs::write(&path, "{\"a\":1}\n{\"a\":2}\n{\"a\":").unwrap();
        let back = read_jsonl::<Value>(&path).unwrap();
        assert_eq!(back.records.len(), 2);
        let torn = back.torn.unwrap();
        assert_eq!((torn.line, torn.bytes), (3, 5));
        assert!(
            torn.to_string()
                .starts_with(&format!("{}:3: skipped a torn last record (5 bytes", path.display())),
            "{torn}"
        );

        // Whole lines: nothing torn.
        fs::write(&path, "{\"a\":1}\n{\"a\":2}\n").unwrap();
        assert_eq!(read_jsonl::<Value>(&path).unwrap().torn, None);

        fs::write(&path, "{\"a\":1}\n{\"a\":\n{\"a\":3}\n").unwrap();
        let err = read_jsonl::<Value>(&path).unwrap_err();
        assert!(matches!(err, ResultsError::Parse { line: 2, .. }), "{err}");
    }

    /// /dev/full fails every write with ENOSPC, as a full results disk does.
    #[test]
    fn a_full_disk_stops_the_writer_and_counts_every_byte_not_written() {
        // A device, which `open` refuses as any non-regular file: opened here as a disk file
        // would be.
        let full = Path::new("/dev/full");
        let mut writer = IntervalWriter {
            file: AppendFile::on(fs::OpenOptions::new().append(true).open(full).unwrap(), full),
            line: Vec::new(),
            lines: 0,
        };
        assert_eq!(writer.loss(), None);
        let record = json!({"interval": 1});
        let line = serde_json::to_vec(&record).unwrap().len() as u64 + 1;
        for _ in 0..3 {
            let err = writer.append(&record).unwrap_err();
            assert!(matches!(err, ResultsError::Write { .. }), "{err}");
        }
        assert_eq!(writer.lines_written(), 0);
        let loss = writer.loss().unwrap();
        assert_eq!(loss.bytes, 3 * line);
        assert!(loss.error.contains("No space left on device"), "{loss}");
        assert_eq!(
            loss.to_string(),
            format!("/dev/full: {} bytes not written ({})", 3 * line, loss.error)
        );
    }

    #[test]
    fn after_a_failed_write_nothing_more_is_written() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("x.log");
        let mut file = AppendFile::open(&path).unwrap();
        file.write_all(b"first\n").unwrap();
        // A failure as the disk filling up gives: the file refuses from then on, even when the
        // disk would take bytes again, so no record is written after a torn one.
        let enospc = io::Error::from_raw_os_error(libc::ENOSPC);
        let _ = file.fail(&enospc, 4);
        assert!(file.write_all(b"second\n").is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), "first\n");
        assert_eq!(file.loss().unwrap().bytes, 4 + 7);
    }

    #[test]
    fn open_reads_back_the_run_id() {
        let root = tempfile::tempdir().unwrap();
        let made = RunDir::create(root.path(), "w").unwrap();
        let opened = RunDir::open(made.path()).unwrap();
        assert_eq!(opened.run_id(), made.run_id());
        assert!(RunDir::open(&root.path().join("missing")).is_err());
    }
}
