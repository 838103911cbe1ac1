//! The latency spectrum of a run (response time at each percentile, out to the nines) from
//! its `intervals.hlog`: the measured intervals' response-time histograms of every
//! transaction type, merged. A last line cut off mid-write (a full disk, a killed run) is
//! skipped and named.

use std::path::Path;

use hdrhistogram::Histogram;

use super::ReportError;
use dbperf_results::hlog::{Hlog, HlogError};
use dbperf_results::TornRecord;

/// Percentiles drawn, where the run has enough values to resolve them.
const QUANTILES: [f64; 14] = [
    0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999, 0.99995, 0.99999, 0.999999,
];

/// Response time (ms) at increasing quantiles.
#[derive(Debug, Clone, PartialEq)]
pub struct Spectrum {
    /// `(quantile, ms)`, quantile in `0..1`.
    pub points: Vec<(f64, f64)>,
    /// Values merged.
    pub count: u64,
    /// Largest value, ms.
    pub max_ms: f64,
}

/// What [`latency_spectrum`] read from a log.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HlogSpectrum {
    /// The spectrum; `None` when the file is absent or holds no response histogram.
    pub spectrum: Option<Spectrum>,
    /// The last line, cut off mid-write, that was skipped.
    pub torn: Option<TornRecord>,
}

/// Merges the `response:*` histograms of `hlog` whose interval starts at or after
/// `measured_from_s`. Every line of the log ends with a newline, so a last line without one was
/// cut off mid-write: it is skipped and named in [`HlogSpectrum::torn`].
pub fn latency_spectrum(hlog: &Path, measured_from_s: f64) -> Result<HlogSpectrum, ReportError> {
    let bad = |what: String| ReportError::Hlog {
        path: hlog.to_path_buf(),
        what,
    };
    let log = match Hlog::read(hlog) {
        Ok(log) => log,
        Err(HlogError::Read { .. }) => return Ok(HlogSpectrum::default()),
        Err(HlogError::Malformed { line, what, .. }) => return Err(bad(format!("line {line}: {what}"))),
    };
    let mut merged: Option<Histogram<u64>> = None;
    for interval in &log.intervals {
        if !interval.tag.as_deref().is_some_and(|t| t.starts_with("response:")) {
            continue;
        }
        // Intervals are written with the run's start as BaseTime; allow for float rounding.
        if interval.start.as_secs_f64() + 1e-6 < measured_from_s {
            continue;
        }
        let hist = interval.histogram().map_err(bad)?;
        match &mut merged {
            Some(m) => m.add(&hist).map_err(|e| bad(format!("{e:?}")))?,
            None => {
                // Intervals are stored with the range they had grown to: let the merge grow.
                let mut first = hist;
                first.auto(true);
                merged = Some(first);
            }
        }
    }
    Ok(HlogSpectrum {
        spectrum: merged.filter(|m| !m.is_empty()).map(|m| spectrum_of(&m)),
        torn: log.torn,
    })
}

/// The spectrum of a histogram of microseconds.
pub fn spectrum_of(h: &Histogram<u64>) -> Spectrum {
    let count = h.len();
    let points = QUANTILES
        .iter()
        .filter(|q| **q == 0.0 || 1.0 / (1.0 - **q) <= count as f64)
        .map(|q| (*q, h.value_at_quantile(*q) as f64 / 1000.0))
        .collect();
    Spectrum {
        points,
        count,
        max_ms: h.max() as f64 / 1000.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_of_different_ranges_merge() {
        use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
        use hdrhistogram::serialization::V2DeflateSerializer;
        use std::time::{Duration, SystemTime};
        // The engine's histograms start at 2 ms of range and grow: a later interval may hold
        // far more range than the first one read.
        let mut small = dbperf_engine::stats::new_histogram();
        small.record(150).unwrap();
        let mut large = dbperf_engine::stats::new_histogram();
        large.record(4_000_000).unwrap();
        let mut bytes = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        {
            let mut w = IntervalLogWriterBuilder::new()
                .with_base_time(SystemTime::UNIX_EPOCH)
                .begin_log_with(&mut bytes, &mut serializer)
                .unwrap();
            let tag = Tag::new("response:t").unwrap();
            w.write_histogram(&small, Duration::ZERO, Duration::from_secs(1), Some(tag))
                .unwrap();
            w.write_histogram(&large, Duration::from_secs(1), Duration::from_secs(1), Some(tag))
                .unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("intervals.hlog");
        std::fs::write(&path, &bytes).unwrap();
        let read = latency_spectrum(&path, 0.0).unwrap();
        assert_eq!(read.torn, None);
        let s = read.spectrum.unwrap();
        assert_eq!(s.count, 2);
        assert!((s.max_ms - 4000.0).abs() < 4.0, "{}", s.max_ms);

        // The disk filled while the second interval was written: the first is kept and the
        // torn one named.
        let cut = bytes.len() - 30;
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let read = latency_spectrum(&path, 0.0).unwrap();
        assert_eq!(read.spectrum.unwrap().count, 1);
        let torn = read.torn.unwrap();
        let lines = bytes[..cut].iter().filter(|b| **b == b'\n').count();
        assert_eq!(torn.line, lines + 1);
        assert!(torn.to_string().contains("skipped a torn last record"), "{torn}");
    }

    #[test]
    fn quantiles_beyond_the_data_are_left_out() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 10).unwrap();
        }
        let s = spectrum_of(&h);
        assert_eq!(s.count, 1000);
        let qs: Vec<f64> = s.points.iter().map(|p| p.0).collect();
        assert_eq!(qs, [0.0, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999]);
        let p50 = s.points[2].1;
        assert!((p50 - 5.0).abs() < 0.01, "{p50}");
        assert!((s.max_ms - 10.0).abs() < 0.01);
    }

    #[test]
    fn a_missing_log_is_no_spectrum() {
        assert_eq!(
            latency_spectrum(Path::new("/nonexistent/intervals.hlog"), 0.0).unwrap(),
            HlogSpectrum::default()
        );
    }
}
