//! `intervals.hlog` read back as types: the log's `BaseTime` and each interval histogram with
//! its tag, start and length. A last line cut off mid-write (a killed run, a full disk) is
//! skipped and named ([`TornRecord`]); any other line that does not parse is an error naming
//! its line.
//!
//! The log itself is written by the run's recorder (`run/record.rs`) and, for a merged run, by
//! [`super::merge`]: each interval's start is seconds since `BaseTime`, the wall clock of the
//! run's time zero.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry, LogIteratorError};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::TornRecord;

/// Name of the interval log inside a run directory.
pub const HLOG_FILE: &str = "intervals.hlog";

/// An interval log, read whole.
#[derive(Debug, Clone)]
pub struct Hlog {
    /// `#[BaseTime: ...]`: the wall clock (since the Unix epoch) that interval starts count from.
    pub base_time: Option<Duration>,
    /// Every interval histogram, in the order of the file.
    pub intervals: Vec<HlogInterval>,
    /// The last line, cut off mid-write, that was left out.
    pub torn: Option<TornRecord>,
}

/// One histogram of an interval log, kept encoded (a run of hours holds hundreds of thousands
/// of them) until [`HlogInterval::histogram`] decodes it.
#[derive(Debug, Clone)]
pub struct HlogInterval {
    /// `response:TYPE`, `service:TYPE`, `statement:NAME`; `None` for an untagged line.
    pub tag: Option<String>,
    /// Start, since the log's `BaseTime` (to the millisecond, as the format stores it).
    pub start: Duration,
    /// Length of the interval.
    pub length: Duration,
    /// Its line in the file, from 1.
    pub line: usize,
    /// The histogram as the line holds it: base64 of a V2 (deflate) serialization.
    encoded: String,
}

impl HlogInterval {
    /// The histogram (values in microseconds); the error names the line and what is wrong.
    pub fn histogram(&self) -> Result<Histogram<u64>, String> {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&self.encoded)
            .map_err(|e| format!("line {}: the histogram is not base64: {e}", self.line))?;
        Deserializer::new()
            .deserialize(&mut &raw[..])
            .map_err(|e| format!("line {}: the histogram does not decode: {e:?}", self.line))
    }
}

/// Why an interval log could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HlogError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The log.
        path: PathBuf,
        /// Underlying OS error.
        source: io::Error,
    },
    /// A line is not part of an HdrHistogram interval log.
    #[error("{path}:{line}: {what}")]
    Malformed {
        /// The log.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
}

impl Hlog {
    /// Reads the interval log at `path`: its lines, each histogram still encoded.
    pub fn read(path: &Path) -> Result<Hlog, HlogError> {
        let mut bytes = std::fs::read(path).map_err(|source| HlogError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let torn = TornRecord::at_end_of(path, &bytes);
        if let Some(t) = &torn {
            bytes.truncate(bytes.len() - t.bytes);
        }
        let malformed = |line: usize, what: String| HlogError::Malformed {
            path: path.to_path_buf(),
            line,
            what,
        };
        let mut base_time = None;
        let mut intervals = Vec::new();
        // Line by line, so that an error names its line (the parser skips comments unseen).
        for (i, text) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
            let line = i + 1;
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let h = match IntervalLogIterator::new(text).next() {
                None | Some(Ok(LogEntry::StartTime(_))) => continue,
                Some(Ok(LogEntry::BaseTime(t))) => {
                    base_time = Some(t);
                    continue;
                }
                Some(Ok(LogEntry::Interval(h))) => h,
                Some(Err(LogIteratorError::ParseError { .. })) => {
                    return Err(malformed(
                        line,
                        "not a line of an HdrHistogram interval log".to_string(),
                    ))
                }
            };
            intervals.push(HlogInterval {
                tag: h.tag().map(|t| t.as_str().to_string()),
                start: h.start_timestamp(),
                length: h.duration(),
                line,
                encoded: h.encoded_histogram().to_string(),
            });
        }
        Ok(Hlog {
            base_time,
            intervals,
            torn,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
    use hdrhistogram::serialization::V2DeflateSerializer;
    use std::time::SystemTime;

    fn log(base_s: u64) -> Vec<u8> {
        let mut a = dbperf_engine::stats::new_histogram();
        a.record(150).unwrap();
        let mut b = dbperf_engine::stats::new_histogram();
        b.record_n(2_000, 3).unwrap();
        let mut bytes = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        let base = SystemTime::UNIX_EPOCH + Duration::from_secs(base_s);
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment("a comment")
            .with_start_time(base)
            .with_base_time(base)
            .begin_log_with(&mut bytes, &mut serializer)
            .unwrap();
        let one = Duration::from_secs(1);
        w.write_histogram(&a, Duration::ZERO, one, Tag::new("response:a"))
            .unwrap();
        w.write_histogram(&b, one, one, Tag::new("statement:b")).unwrap();
        drop(w);
        bytes
    }

    #[test]
    fn a_log_reads_back_with_its_base_time_tags_and_values() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HLOG_FILE);
        std::fs::write(&path, log(1_700_000_000)).unwrap();
        let hlog = Hlog::read(&path).unwrap();
        assert_eq!(hlog.base_time, Some(Duration::from_secs(1_700_000_000)));
        assert!(hlog.torn.is_none());
        let seen: Vec<(Option<&str>, Duration, u64, u64)> = hlog
            .intervals
            .iter()
            .map(|i| {
                let h = i.histogram().unwrap();
                (i.tag.as_deref(), i.start, h.len(), h.max())
            })
            .collect();
        assert_eq!(
            seen,
            [
                (Some("response:a"), Duration::ZERO, 1, 150),
                (Some("statement:b"), Duration::from_secs(1), 3, 2_000)
            ]
        );
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HLOG_FILE);
        let mut bytes = log(0);
        bytes.extend_from_slice(b"Tag=response:a,2.000,1.000,0.150,HIST");
        std::fs::write(&path, &bytes).unwrap();
        let hlog = Hlog::read(&path).unwrap();
        assert_eq!(hlog.intervals.len(), 2);
        let torn = hlog.torn.expect("the cut line is named");
        assert_eq!(torn.bytes, "Tag=response:a,2.000,1.000,0.150,HIST".len());
    }

    #[test]
    fn a_histogram_that_does_not_decode_names_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HLOG_FILE);
        let mut bytes = log(0);
        let lines = bytes.iter().filter(|b| **b == b'\n').count();
        bytes.extend_from_slice(b"Tag=response:a,2.000,1.000,0.150,HISTnotbase64!\n");
        std::fs::write(&path, &bytes).unwrap();
        let hlog = Hlog::read(&path).unwrap();
        let e = hlog.intervals[2].histogram().unwrap_err();
        assert!(
            e.starts_with(&format!("line {}: the histogram is not base64", lines + 1)),
            "{e}"
        );
    }

    #[test]
    fn a_bad_line_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HLOG_FILE);
        let mut bytes = log(0);
        let lines = bytes.iter().filter(|b| **b == b'\n').count();
        bytes.extend_from_slice(b"not a histogram\n");
        std::fs::write(&path, &bytes).unwrap();
        let e = Hlog::read(&path).unwrap_err().to_string();
        assert!(e.contains(&format!("{}:{}:", path.display(), lines + 1)), "{e}");
        assert!(Hlog::read(&dir.path().join("absent"))
            .unwrap_err()
            .to_string()
            .contains("cannot read"));
    }
}
