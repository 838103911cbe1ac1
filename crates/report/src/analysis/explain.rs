//! Each run's explanation, as the published studies give it (TPC-C checkpoint stability,
//! LinkBench across servers): the interval figure's average over the last N minutes and its
//! coefficient of variation (how flat the line is); the maximum checkpoint age against the redo
//! capacity and the redo size that would have held it (+25%); dirty pages held against
//! `innodb_max_dirty_pages_pct`; the top waits; single-page flushes; pages read and freed per
//! second; the stalls of [`super::analyze`].
//!
//! Computed from a run directory only (`manifest.json`, `intervals.jsonl`, `intervals.hlog`
//! for TPC-C's New-Order count per interval, the typed `telemetry.jsonl` rows), so the CLI, the
//! lab report and the HTML experiment report all call [`explain`]. A figure the server version
//! (or the run's telemetry) does not provide is [`Figure::NotAvailable`] with why, never 0.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::analyze::{analyze, AnalyzeError, AnalyzeOptions};
use super::pressure::ASYNC_FLUSH_PCT;
use dbperf_core::stats::{mean, mean_cv, median};
use dbperf_results::hlog::{Hlog, HlogError};
use dbperf_results::interval::IntervalRecord;
use dbperf_results::telemetry::{wait_totals, TelemetryRow, LRU_EVICT_METRIC, LRU_SCAN_METRICS, SINGLE_FLUSH_METRIC};
use dbperf_results::{read_jsonl, Manifest, RunDir, INTERVALS_FILE, TELEMETRY_FILE};

/// Head room over the largest checkpoint age seen: study 001 reads the redo size a run needs
/// as its maximum checkpoint age plus 25%.
pub const REDO_HEADROOM: f64 = 1.25;
/// Top waits listed.
pub const TOP_WAITS: usize = 5;

/// A figure, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure<T> {
    /// The figure.
    Value(T),
    /// Why the run has none (a server version without the counter, telemetry off, ...).
    NotAvailable(String),
}

impl<T> Figure<T> {
    /// The value, if there is one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Figure::Value(v) => Some(v),
            Figure::NotAvailable(_) => None,
        }
    }

    fn text(&self, f: impl Fn(&T) -> String) -> String {
        match self {
            Figure::Value(v) => f(v),
            Figure::NotAvailable(why) => format!("not available ({why})"),
        }
    }
}

/// What to explain over.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExplainOptions {
    /// The window of the average and CV: the last this many seconds of the measured phase
    /// (`None`: the second half of it).
    pub last_s: Option<f64>,
}

impl ExplainOptions {
    /// The window `--last` asks for (`None`: the second half); 0 is refused, the window would
    /// hold nothing.
    pub fn last(last_s: Option<f64>) -> Result<ExplainOptions, AnalyzeError> {
        if last_s == Some(0.0) {
            return Err(AnalyzeError::Options(
                "--last 0 leaves no interval to average: give a window such as 15m, or leave it out for the \
                 second half of the run"
                    .into(),
            ));
        }
        Ok(ExplainOptions { last_s })
    }
}

/// The interval figure over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Throughput {
    /// `tps`; `notpm` for TPC-C (New-Order per minute, from `intervals.hlog`); `rps` for
    /// LinkBench (requests per second).
    pub figure: String,
    /// The window: the last this many seconds of the measured phase.
    pub window_s: f64,
    /// Intervals in the window.
    pub intervals: usize,
    /// Average of the interval figure over the window.
    pub average: f64,
    /// Coefficient of variation of the interval figure over the window, percent (sample standard
    /// deviation over the mean: [`dbperf_core::stats::mean_cv`]).
    pub cv_pct: f64,
}

/// The checkpoint age against the redo.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checkpoint {
    /// Largest checkpoint age sampled, bytes.
    pub max_age_bytes: u64,
    /// ... in percent of its maximum (the sync flush point): the one percentage every report
    /// gives checkpoint age in ([`dbperf_results::telemetry::ServerSample::checkpoint_level_pct`]).
    pub max_age_pct: Option<f64>,
    /// The redo's size (`innodb_log_file_size` × files, or `innodb_redo_log_capacity`;
    /// PostgreSQL: `max_wal_size`), bytes; `None` when the manifest lacks the variables.
    pub capacity_bytes: Option<u64>,
    /// The redo size that would have held the largest age with [`REDO_HEADROOM`] to spare,
    /// only when the redo did not ([`redo_needed`]).
    pub redo_needed_bytes: Option<u64>,
}

/// Dirty pages against their limit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dirty {
    /// Average dirty pages over the window, percent of the buffer pool.
    pub average_pct: f64,
    /// Largest, percent.
    pub max_pct: f64,
    /// `innodb_max_dirty_pages_pct` (from the manifest's server variables, else the samples).
    pub limit_pct: Option<f64>,
}

/// What held InnoDB's flushing over the window, as the checkpoint studies read it by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlushBound {
    /// The checkpoint age sat at the async flush point or above: the redo is the limit
    /// (a larger redo, or faster flushing, moves it).
    CheckpointAge,
    /// Dirty pages sat at `innodb_max_dirty_pages_pct`: the limit paced the flushing.
    DirtyLimit,
    /// Page writes ran at `innodb_io_capacity` with neither above reached: the configured
    /// rate held it (raise it if the disk has room: see the io_capacity sizing).
    IoCapacity,
    /// None of them: flushing kept up.
    Nothing,
}

/// Which limit bound the flushing, and whether the dirty-page limit was kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flushing {
    pub bound: FlushBound,
    /// Percent of the window's samples with the checkpoint age at or past the async point.
    pub at_async_pct: f64,
    /// Percent of the samples with dirty pages within 2 points of their limit or above it.
    pub at_dirty_limit_pct: f64,
    /// Median pages written per second, and `innodb_io_capacity`.
    pub written_s: Option<f64>,
    pub io_capacity: Option<f64>,
    /// `Some(false)`: dirty pages went more than a point past their limit (the largest given):
    /// InnoDB could not keep it, as study 001 found at 50%.
    pub dirty_limit_kept: Option<bool>,
    pub max_dirty_pct: Option<f64>,
    pub dirty_limit_pct: Option<f64>,
}

/// `innodb_io_capacity` sized from what the disk took, as study 004 did with `iostat -x`: the
/// writes the device completed plus those merged into them (w/s + wrqm/s, what InnoDB
/// effectively issued) at their busiest, and 80% of that as the setting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IoSizing {
    /// The disk (the one written most over the window).
    pub disk: String,
    /// 95th percentile over the window's samples of w/s + wrqm/s.
    pub writes_s: f64,
    /// 80% of it, rounded to two significant digits.
    pub suggested: u64,
    /// `innodb_io_capacity` now.
    pub current: Option<f64>,
}

/// One wait event's share of the waiting over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitShare {
    pub event: String,
    /// Time waited over the window, ms (summed over threads).
    pub time_ms: f64,
    /// Percent of the time of all listed waits.
    pub share_pct: f64,
}

/// Stalls of the analysis, in short.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stalls {
    pub count: usize,
    /// Seconds stalled in all.
    pub seconds: f64,
    /// One line per stall: when, how deep, the first cause.
    pub lines: Vec<String>,
}

/// One run's explanation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub run_dir: PathBuf,
    /// The workload (manifest).
    pub workload: String,
    pub throughput: Figure<Throughput>,
    pub checkpoint: Figure<Checkpoint>,
    pub dirty_pages: Figure<Dirty>,
    pub top_waits: Figure<Vec<WaitShare>>,
    /// Single-page (LRU) flushes per second over the window.
    pub single_page_flushes_s: Figure<f64>,
    /// Pages read per second over the window.
    pub pages_read_s: Figure<f64>,
    /// Pages freed (evicted from the LRU) per second over the window.
    pub pages_freed_s: Figure<Freed>,
    /// Pages scanned in the LRU looking for pages to free (user threads' searches and the
    /// page cleaner's LRU batches) per second over the window.
    pub lru_scanned_s: Figure<f64>,
    /// Which limit bound the flushing.
    pub flushing: Figure<Flushing>,
    /// `innodb_io_capacity` from the disk's writes.
    pub io_capacity: Figure<IoSizing>,
    pub stalls: Figure<Stalls>,
}

impl Explanation {
    /// An explanation with every figure read from telemetry not available, for `why`.
    pub fn without_telemetry(
        run_dir: PathBuf,
        workload: String,
        throughput: Figure<Throughput>,
        stalls: Figure<Stalls>,
        why: &str,
    ) -> Explanation {
        fn na<T>(why: &str) -> Figure<T> {
            Figure::NotAvailable(why.to_string())
        }
        Explanation {
            run_dir,
            workload,
            throughput,
            checkpoint: na(why),
            dirty_pages: na(why),
            top_waits: na(why),
            single_page_flushes_s: na(why),
            pages_read_s: na(why),
            pages_freed_s: na(why),
            lru_scanned_s: na(why),
            flushing: na(why),
            io_capacity: na(why),
            stalls,
        }
    }
}

#[cfg(test)]
impl Explanation {
    /// A test's starting point: nothing available.
    pub(crate) fn blank() -> Explanation {
        Explanation::without_telemetry(
            PathBuf::new(),
            String::new(),
            Figure::NotAvailable("x".into()),
            Figure::NotAvailable("x".into()),
            "x",
        )
    }
}

/// Explains the run in `run_dir`.
pub fn explain(run_dir: &Path, opts: &ExplainOptions) -> Result<Explanation, AnalyzeError> {
    if let Some(s) = opts.last_s {
        if !(s > 0.0 && s.is_finite()) {
            return Err(AnalyzeError::Options(format!(
                "--last {s} is not a duration: give the window in seconds above 0, e.g. 900 for the last 15 minutes"
            )));
        }
    }
    let path = run_dir.join(INTERVALS_FILE);
    if !path.is_file() {
        return Err(AnalyzeError::NoIntervals { path });
    }
    let dir = RunDir::open(run_dir)?;
    let manifest: Option<Manifest> = dir.read_json("manifest.json").ok();
    let workload = manifest.as_ref().map(|m| m.workload.name.clone()).unwrap_or_default();
    let variables = manifest
        .as_ref()
        .and_then(|m| m.server.as_ref())
        .map(|s| s.variables.clone())
        .unwrap_or_default();
    let intervals: Vec<IntervalRecord> = read_jsonl::<IntervalRecord>(&path)?.records;
    let measured: Vec<&IntervalRecord> = intervals.iter().filter(|r| !r.warmup).collect();
    // A fragment (the last moments before the stop) has a meaningless rate, as in the analysis.
    let step = median(&measured.iter().map(|r| r.end_s - r.start_s).collect::<Vec<_>>()).unwrap_or(0.0);
    let measured: Vec<&IntervalRecord> = measured
        .into_iter()
        .filter(|r| r.end_s - r.start_s >= step / 2.0)
        .collect();
    if measured.is_empty() {
        return Err(AnalyzeError::NothingMeasured {
            path,
            count: intervals.len(),
        });
    }
    let (from, to) = (measured[0].start_s, measured[measured.len() - 1].end_s);
    let window_s = opts.last_s.unwrap_or((to - from) / 2.0).min(to - from);
    let window_from = to - window_s;

    let tpcc = workload == "tpcc";
    let series: Result<Vec<(f64, f64)>, String> = if tpcc {
        new_orders_per_minute(&run_dir.join("intervals.hlog"), &measured)
    } else {
        Ok(measured.iter().map(|r| (r.start_s, r.tps)).collect())
    };
    let throughput = match series {
        Ok(series) => {
            // An interval is in the window when its middle is.
            let values: Vec<f64> = series
                .iter()
                .zip(&measured)
                .filter(|(_, r)| (r.start_s + r.end_s) / 2.0 >= window_from)
                .map(|((_, v), _)| *v)
                .collect();
            match mean_cv(&values) {
                Some((average, cv_pct)) => Figure::Value(Throughput {
                    figure: match workload.as_str() {
                        "tpcc" => "notpm",
                        // A LinkBench request is one transaction: its figure is requests/s.
                        "linkbench" => "rps",
                        _ => "tps",
                    }
                    .into(),
                    window_s,
                    intervals: values.len(),
                    average,
                    cv_pct,
                }),
                None => Figure::NotAvailable("no measured interval in the window".into()),
            }
        }
        Err(why) => Figure::NotAvailable(why),
    };

    let tel_path = run_dir.join(TELEMETRY_FILE);
    let rows: Option<Vec<TelemetryRow>> = if tel_path.is_file() {
        Some(read_jsonl::<TelemetryRow>(&tel_path)?.records)
    } else {
        None
    };
    let window: Vec<&TelemetryRow> = rows
        .iter()
        .flatten()
        .filter(|r| r.mid_s(1.0) >= window_from && r.mid_s(1.0) <= to + 1.0)
        .collect();
    let stalls = match analyze(run_dir, &AnalyzeOptions::default()) {
        Ok(a) => Figure::Value(Stalls {
            count: a.stalls.len(),
            seconds: a.stalls.iter().map(|s| s.end_s - s.start_s).sum(),
            lines: a
                .stalls
                .iter()
                .map(|s| {
                    let cause = s.causes.first().map_or(String::new(), |c| format!(": {c}"));
                    format!("{:.0}-{:.0} s, TPS down {:.0}%{cause}", s.start_s, s.end_s, s.drop_pct)
                })
                .collect(),
        }),
        Err(e) => Figure::NotAvailable(e.to_string()),
    };
    Ok(match rows {
        None => Explanation::without_telemetry(
            run_dir.to_path_buf(),
            workload,
            throughput,
            stalls,
            &format!("no {TELEMETRY_FILE}: the run had --no-telemetry"),
        ),
        Some(_) => Explanation {
            run_dir: run_dir.to_path_buf(),
            workload,
            throughput,
            checkpoint: checkpoint(&window, &variables),
            dirty_pages: dirty(&window, &variables),
            top_waits: top_waits(
                &window,
                &variables,
                manifest
                    .as_ref()
                    .and_then(|m| m.workload.options.run.as_ref())
                    .map(|o| o.pfs_instruments),
            ),
            single_page_flushes_s: single_page_flushes(&window, &variables),
            pages_read_s: pages_read(&window),
            pages_freed_s: pages_freed(&window),
            lru_scanned_s: lru_scanned(&window),
            flushing: flushing(&window, &variables),
            io_capacity: {
                let pressed =
                    matches!(flushing(&window, &variables), Figure::Value(f) if f.bound != FlushBound::Nothing);
                io_capacity(&window, &variables, pressed)
            },
            stalls,
        },
    })
}

/// New-Order transactions per minute in each measured interval, from the
/// `response:new_order` histograms of `intervals.hlog` (`intervals.jsonl` holds only the
/// rate of all five transactions). An interval without one completed no New-Order.
pub fn new_orders_per_minute(hlog: &Path, measured: &[&IntervalRecord]) -> Result<Vec<(f64, f64)>, String> {
    let log = Hlog::read(hlog).map_err(|e| match e {
        HlogError::Read { source, .. } => format!(
            "{} cannot be read ({source}): New-Order per interval is kept there",
            hlog.display()
        ),
        e => e.to_string(),
    })?;
    let mut counts: BTreeMap<i64, u64> = BTreeMap::new();
    for interval in &log.intervals {
        if interval.tag.as_deref() != Some("response:new_order") {
            continue;
        }
        let hist = interval
            .histogram()
            .map_err(|e| format!("{}: a bad histogram: {e}", hlog.display()))?;
        *counts.entry(ms_key(interval.start.as_secs_f64())).or_default() += hist.len();
    }
    Ok(measured
        .iter()
        .map(|r| {
            let len = (r.end_s - r.start_s).max(1e-9);
            let n = counts.get(&ms_key(r.start_s)).copied().unwrap_or(0);
            (r.start_s, n as f64 * 60.0 / len)
        })
        .collect())
}

/// An interval start as a map key (milliseconds: the log stores it to the millisecond).
fn ms_key(s: f64) -> i64 {
    (s * 1000.0).round() as i64
}

fn var_f64(variables: &BTreeMap<String, String>, name: &str) -> Option<f64> {
    variables.get(name).and_then(|v| v.trim().parse::<f64>().ok())
}

/// The redo's size from the server variables: `innodb_redo_log_capacity` (MySQL 8.0.30+),
/// else `innodb_log_file_size` × `innodb_log_files_in_group` (1 where there is no such
/// variable: MariaDB 10.5+ has one file); PostgreSQL: `max_wal_size` (in MB).
pub fn redo_capacity(variables: &BTreeMap<String, String>) -> Option<u64> {
    if let Some(c) = var_f64(variables, "innodb_redo_log_capacity") {
        return Some(c as u64);
    }
    if let Some(size) = var_f64(variables, "innodb_log_file_size") {
        let files = var_f64(variables, "innodb_log_files_in_group").unwrap_or(1.0);
        return Some((size * files) as u64);
    }
    var_f64(variables, "max_wal_size").map(|mb| (mb * 1024.0 * 1024.0) as u64)
}

/// The largest checkpoint age of the window against the redo.
pub fn checkpoint(rows: &[&TelemetryRow], variables: &BTreeMap<String, String>) -> Figure<Checkpoint> {
    let Some(max_age) = rows
        .iter()
        .filter_map(|r| r.server.as_ref()?.checkpoint_age_bytes)
        .max()
    else {
        return Figure::NotAvailable(if rows.iter().all(|r| r.server.is_none()) {
            "the server was not sampled in the window".into()
        } else {
            "the server reports no checkpoint age (MySQL before 8.0.30 without the log_lsn metrics or \
             SHOW ENGINE INNODB STATUS access)"
                .into()
        });
    };
    let capacity = redo_capacity(variables);
    let max_age_pct = rows.iter().filter_map(|r| r.checkpoint_pct()).reduce(f64::max);
    Figure::Value(Checkpoint {
        max_age_bytes: max_age,
        max_age_pct,
        capacity_bytes: capacity,
        redo_needed_bytes: redo_needed(capacity, max_age_pct),
    })
}

/// The redo size that would have held a checkpoint age that reached `max_pct` of its maximum
/// with [`REDO_HEADROOM`] to spare, on a redo of `capacity` bytes: only when the age reached
/// the asynchronous flush point ([`ASYNC_FLUSH_PCT`]), where the redo no longer held it (below
/// it, this redo did). The maximum age is a fixed share of the redo, so the size scales with
/// the percentage: `capacity × max_pct / 100 × 1.25`.
pub fn redo_needed(capacity: Option<u64>, max_pct: Option<f64>) -> Option<u64> {
    let (capacity, pct) = (capacity?, max_pct?);
    (pct >= ASYNC_FLUSH_PCT).then(|| (capacity as f64 * pct / 100.0 * REDO_HEADROOM).ceil() as u64)
}

/// Dirty pages over the window against `innodb_max_dirty_pages_pct`.
pub fn dirty(rows: &[&TelemetryRow], variables: &BTreeMap<String, String>) -> Figure<Dirty> {
    let values: Vec<f64> = rows.iter().filter_map(|r| r.server.as_ref()?.dirty_pages_pct).collect();
    let Some((average_pct, _)) = mean_cv(&values) else {
        return Figure::NotAvailable(if rows.iter().any(|r| r.is_postgres()) {
            "PostgreSQL has no dirty-pages limit (its background writer and checkpoints bound them)".into()
        } else {
            "the server was not sampled in the window".into()
        });
    };
    Figure::Value(Dirty {
        average_pct,
        max_pct: values.iter().copied().fold(f64::MIN, f64::max),
        limit_pct: var_f64(variables, "innodb_max_dirty_pages_pct")
            .or_else(|| rows.iter().find_map(|r| r.server.as_ref()?.max_dirty_pages_pct)),
    })
}

/// The wait events with the most time over the window; `pfs_instruments`: whether the run
/// turned InnoDB's latch instruments on (`--pfs-instruments`; `None`: not recorded), so an
/// empty profile names its true cause.
pub fn top_waits(
    rows: &[&TelemetryRow],
    variables: &BTreeMap<String, String>,
    pfs_instruments: Option<bool>,
) -> Figure<Vec<WaitShare>> {
    let mut waits = wait_totals(rows.iter().copied());
    if waits.is_empty() {
        let pfs = variables.get("performance_schema");
        let pfs_off = pfs.is_some_and(|v| v.eq_ignore_ascii_case("OFF") || v == "0");
        let pfs_on = pfs.is_some_and(|v| v.eq_ignore_ascii_case("ON") || v == "1");
        return Figure::NotAvailable(if pfs_off {
            "performance_schema is OFF on this server".into()
        } else if rows.iter().any(|r| r.is_postgres()) {
            "no backend was seen waiting".into()
        } else if pfs_on && pfs_instruments == Some(false) {
            "performance_schema is ON, but the run left InnoDB's latch wait instruments off (no \
             --pfs-instruments) and no other instrument timed a wait in the window; run with --pfs-instruments \
             to see the latch waits"
                .into()
        } else if pfs_on {
            "performance_schema is ON, but none of its enabled wait instruments timed a wait in the window".into()
        } else {
            "no timed wait in the samples: the server's wait instruments are off (MariaDB times none by default); \
             run with --pfs-instruments, or in a lab file give the server `performance_schema = \"ON\"` in its \
             settings (the lab then turns InnoDB's latch instruments on)"
                .into()
        });
    }
    waits.truncate(TOP_WAITS);
    let total: f64 = waits.iter().map(|w| w.1).sum();
    Figure::Value(
        waits
            .into_iter()
            .map(|(event, time_ms)| WaitShare {
                event: event.to_string(),
                time_ms,
                share_pct: time_ms * 100.0 / total,
            })
            .collect(),
    )
}

/// Average of a per-second rate over the samples that have it.
fn rate(values: Vec<f64>) -> Option<f64> {
    mean(&values)
}

/// Looks a counter up by name, in whatever case the server spells it.
fn named<'a>(map: &'a BTreeMap<String, f64>, names: &[&str]) -> Option<&'a f64> {
    map.iter()
        .find(|(k, _)| names.iter().any(|n| k.eq_ignore_ascii_case(n)))
        .map(|(_, v)| v)
}

/// Single-page flushes: a thread that found no free page flushed one itself (InnoDB of MySQL
/// 5.6-8.0 and MariaDB before 10.5; INNODB_METRICS [`SINGLE_FLUSH_METRIC`], which the sampler
/// enables; runs recorded before it did need `--innodb-metrics`).
pub fn single_page_flushes(rows: &[&TelemetryRow], variables: &BTreeMap<String, String>) -> Figure<f64> {
    let values: Vec<f64> = rows
        .iter()
        .filter_map(|r| r.server.as_ref()?.innodb_metrics.get(SINGLE_FLUSH_METRIC).copied())
        .collect();
    if let Some(v) = rate(values) {
        return Figure::Value(v);
    }
    if rows.iter().any(|r| r.is_postgres()) {
        return Figure::NotAvailable("PostgreSQL has no LRU single-page flush".into());
    }
    let version = variables.get("version").map(String::as_str).unwrap_or("");
    let wait_free = rate(
        rows.iter()
            .filter_map(|r| named(&r.server.as_ref()?.status_rates, &["Innodb_buffer_pool_wait_free"]).copied())
            .collect(),
    );
    let also = wait_free.map_or(String::new(), |w| {
        format!("; threads waited for a free page {w:.1}/s (Innodb_buffer_pool_wait_free)")
    });
    Figure::NotAvailable(if mariadb_at_least(version, (10, 5)) {
        format!("MariaDB 10.5 and later have no single-page flush: the page cleaner frees pages{also}")
    } else {
        format!(
            "not sampled: the server has no buffer_LRU_single_flush_num_scan, or the run predates \
             dbperf enabling it (then --innodb-metrics){also}"
        )
    })
}

/// Whether `version` (`10.11.6-MariaDB-0+deb12u1`) is MariaDB at `min` (major, minor) or later.
fn mariadb_at_least(version: &str, min: (u32, u32)) -> bool {
    let mut parts = version
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => version.contains("MariaDB") && (major, minor) >= min,
        _ => false,
    }
}

/// Pages read per second over the window.
pub fn pages_read(rows: &[&TelemetryRow]) -> Figure<f64> {
    match rate(rows.iter().filter_map(|r| r.server.as_ref()?.pages_read_s).collect()) {
        Some(v) => Figure::Value(v),
        None => Figure::NotAvailable("the server reported no page reads in the window".into()),
    }
}

/// Which limit bound InnoDB's flushing over `rows` ([`FlushBound`], first that applies): the
/// checkpoint age at the async point in a quarter of the samples; else dirty pages at their
/// limit in a quarter; else pages written at 80% of `innodb_io_capacity` or more (median);
/// else nothing.
pub fn flushing(rows: &[&TelemetryRow], variables: &BTreeMap<String, String>) -> Figure<Flushing> {
    if rows.iter().any(|r| r.is_postgres()) {
        return Figure::NotAvailable(
            "PostgreSQL flushes by checkpoints and its background writer: no dirty limit or io_capacity".into(),
        );
    }
    let samples: Vec<&dbperf_results::telemetry::ServerSample> =
        rows.iter().filter_map(|r| r.server.as_ref()).collect();
    if samples.is_empty() {
        return Figure::NotAvailable("the server was not sampled in the window".into());
    }
    let share = |hit: &dyn Fn(&dbperf_results::telemetry::ServerSample) -> Option<bool>| {
        let seen: Vec<bool> = samples.iter().filter_map(|s| hit(s)).collect();
        if seen.is_empty() {
            0.0
        } else {
            seen.iter().filter(|h| **h).count() as f64 * 100.0 / seen.len() as f64
        }
    };
    let limit =
        var_f64(variables, "innodb_max_dirty_pages_pct").or_else(|| samples.iter().find_map(|s| s.max_dirty_pages_pct));
    let at_async_pct = share(&|s| Some(s.checkpoint_pct? >= ASYNC_FLUSH_PCT));
    let at_dirty_limit_pct = share(&|s| Some(s.dirty_pages_pct? >= limit? - 2.0));
    let written_s = median(&samples.iter().filter_map(|s| s.pages_written_s).collect::<Vec<_>>());
    let io_capacity = var_f64(variables, "innodb_io_capacity");
    let max_dirty_pct = samples.iter().filter_map(|s| s.dirty_pages_pct).reduce(f64::max);
    let bound = if at_async_pct >= 25.0 {
        FlushBound::CheckpointAge
    } else if at_dirty_limit_pct >= 25.0 {
        FlushBound::DirtyLimit
    } else if matches!((written_s, io_capacity), (Some(w), Some(c)) if c > 0.0 && w >= 0.8 * c) {
        FlushBound::IoCapacity
    } else {
        FlushBound::Nothing
    };
    Figure::Value(Flushing {
        bound,
        at_async_pct,
        at_dirty_limit_pct,
        written_s,
        io_capacity,
        dirty_limit_kept: max_dirty_pct.zip(limit).map(|(m, l)| m <= l + 1.0),
        max_dirty_pct,
        dirty_limit_pct: limit,
    })
}

impl Flushing {
    /// In a few words, for the explanations table: `checkpoint age (82% at async)`, `dirty
    /// limit`, `io_capacity (200/s)`, `nothing`; `; dirty 70% > limit 50%` when not kept.
    pub fn short(&self) -> String {
        let mut out = match self.bound {
            FlushBound::CheckpointAge => format!("checkpoint age ({:.0}% at async)", self.at_async_pct),
            FlushBound::DirtyLimit => format!("dirty limit ({:.0}% at it)", self.at_dirty_limit_pct),
            FlushBound::IoCapacity => format!("io_capacity ({:.0}/s)", self.io_capacity.unwrap_or(0.0)),
            FlushBound::Nothing => "nothing".into(),
        };
        if let (Some(false), Some(m), Some(l)) = (self.dirty_limit_kept, self.max_dirty_pct, self.dirty_limit_pct) {
            out.push_str(&format!("; dirty {m:.0}% > limit {l:.0}%"));
        }
        out
    }

    /// The whole sentence, for `dbperf analyze` and the run report.
    pub fn text(&self) -> String {
        let written = match (self.written_s, self.io_capacity) {
            (Some(w), Some(c)) => format!("pages written {w:.0}/s (median) against innodb_io_capacity {c:.0}"),
            (Some(w), None) => format!("pages written {w:.0}/s (median)"),
            _ => "no page writes sampled".into(),
        };
        let mut out = match self.bound {
            FlushBound::CheckpointAge => format!(
                "bound by the checkpoint age: at or past the async flush point in {:.0}% of the samples, so the redo \
                 is the limit (a larger redo, or flushing faster, moves it); {written}",
                self.at_async_pct
            ),
            FlushBound::DirtyLimit => format!(
                "bound by innodb_max_dirty_pages_pct: dirty pages at the limit in {:.0}% of the samples; {written}",
                self.at_dirty_limit_pct
            ),
            FlushBound::IoCapacity => format!(
                "bound by innodb_io_capacity: {written}, with the checkpoint age and dirty pages under their \
                 limits (raise it if the disk has room)"
            ),
            FlushBound::Nothing => {
                format!("not bound: the checkpoint age and dirty pages stayed under their limits and {written}")
            }
        };
        match (self.dirty_limit_kept, self.max_dirty_pct, self.dirty_limit_pct) {
            (Some(false), Some(m), Some(l)) => out.push_str(&format!(
                "; the dirty-page limit was not kept: up to {m:.0}% against {l:.0}%"
            )),
            (Some(true), _, Some(l)) => out.push_str(&format!("; the dirty-page limit ({l:.0}%) was kept")),
            _ => {}
        }
        out
    }
}

/// `innodb_io_capacity` from the writes of the disk written most ([`IoSizing`]), when the
/// flushing was `pressed` (bound by a limit): what a disk takes while nothing asks more of it
/// says nothing of what it can take, which is why the study read iostat during a stall.
pub fn io_capacity(rows: &[&TelemetryRow], variables: &BTreeMap<String, String>, pressed: bool) -> Figure<IoSizing> {
    let Some(disk) = dbperf_results::telemetry::disk_written_most(rows.iter().copied()) else {
        return Figure::NotAvailable("no disk writes sampled on the server's host in the window".into());
    };
    let mut writes: Vec<f64> = rows
        .iter()
        .filter_map(|r| {
            r.server_os()?
                .disks
                .iter()
                .find(|d| d.name == disk)
                .map(|d| d.w_s + d.wrqm_s)
        })
        .collect();
    writes.sort_by(f64::total_cmp);
    let Some(&p95) = writes.get(((writes.len() as f64 * 0.95).ceil() as usize).saturating_sub(1)) else {
        return Figure::NotAvailable("no disk writes sampled on the server's host in the window".into());
    };
    if p95 <= 0.0 {
        return Figure::NotAvailable(format!("disk {disk} took no writes in the window"));
    }
    if !pressed {
        return Figure::NotAvailable(format!(
            "not sized: no limit bound the flushing, so the {p95:.0} writes/s disk {disk} took (w/s + wrqm/s, 95th \
             percentile) are what was asked, not what it can take; size it from a run whose flushing is bound (a \
             stall, the checkpoint age at the async point)"
        ));
    }
    Figure::Value(IoSizing {
        disk: disk.to_string(),
        writes_s: p95,
        suggested: two_digits(0.8 * p95),
        current: var_f64(variables, "innodb_io_capacity"),
    })
}

/// `v` rounded to two significant digits (at least 100: InnoDB's minimum io_capacity).
fn two_digits(v: f64) -> u64 {
    let magnitude = 10f64.powi(v.max(1.0).log10().floor() as i32 - 1);
    ((v / magnitude).round() * magnitude).max(100.0) as u64
}

/// Pages freed per second, and whether it was derived rather than counted.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Freed {
    pub per_s: f64,
    /// Derived from the pages taken from the free list ([`pages_freed`]), not counted.
    pub derived: bool,
}

/// Pages freed per second: MariaDB's `Innodb_buffer_pool_pages_LRU_freed` and PostgreSQL's
/// `pg_stat_io` evictions count every page freed. InnoDB without that counter (MySQL, MariaDB
/// before 10.5) gets the free list's balance instead: every page read or created takes a free
/// page, so freed = read + created + (free pages at the end - at the start) / seconds, the "free
/// pages/s" a workload needs as study 000 reads it (a pool still filling frees nothing and the
/// balance says 0). MySQL's metric `buffer_LRU_batch_evict_total_pages` counts only the page
/// cleaner's LRU batches, not the pages user threads free themselves (on an I/O-bound
/// read-only run: 128/s counted against 12,900 pages read/s), so it is the last resort.
pub fn pages_freed(rows: &[&TelemetryRow]) -> Figure<Freed> {
    let (per_sample, derived) = freed_per_sample(rows);
    let (mut sum, mut seconds) = (0.0, 0.0);
    for (r, v) in rows.iter().zip(&per_sample) {
        if let (Some(v), Some(s)) = (v, r.server.as_ref()) {
            let dt = s.interval_s.unwrap_or(1.0);
            sum += v * dt;
            seconds += dt;
        }
    }
    if seconds > 0.0 {
        return Figure::Value(Freed {
            per_s: (sum / seconds).max(0.0),
            derived,
        });
    }
    let sampled = rows
        .iter()
        .any(|r| r.server.as_ref().is_some_and(|s| !s.status_rates.is_empty()));
    Figure::NotAvailable(if sampled {
        "no page was read or created and no LRU-freed counter moved in the window".into()
    } else {
        "the server was not sampled in the window".into()
    })
}

/// Pages freed per second in each of `rows` (`None`: not known for that sample), by the one
/// source [`pages_freed`] chooses for the whole window, and whether that source is the free
/// list's balance (derived) rather than a counter. A counter's sample where it did not move
/// (left out of the rates) freed nothing.
pub fn freed_per_sample(rows: &[&TelemetryRow]) -> (Vec<Option<f64>>, bool) {
    use dbperf_results::telemetry::ServerSample;
    let counter = |get: &dyn Fn(&ServerSample) -> Option<f64>| -> Option<Vec<Option<f64>>> {
        rows.iter().any(|r| r.server.as_ref().and_then(get).is_some()).then(|| {
            rows.iter()
                .map(|r| {
                    let s = r.server.as_ref()?;
                    // The first sample primes the rates: it has none.
                    s.interval_s?;
                    Some(get(s).unwrap_or(0.0))
                })
                .collect()
        })
    };
    let mariadb = |s: &ServerSample| named(&s.status_rates, &["Innodb_buffer_pool_pages_LRU_freed"]).copied();
    let postgres = |s: &ServerSample| {
        let ev: Vec<f64> =
            s.pg.as_ref()?
                .io
                .iter()
                .filter(|(k, _)| k.ends_with(".evictions"))
                .map(|(_, v)| *v)
                .collect();
        (!ev.is_empty()).then(|| ev.iter().sum())
    };
    if let Some(v) = counter(&mariadb).or_else(|| counter(&postgres)) {
        return (v, false);
    }
    // The free list's balance: a sample's pages read and created, plus its free list's growth.
    let mut previous_free: Option<u64> = None;
    let balance: Vec<Option<f64>> = rows
        .iter()
        .map(|r| {
            let s = r.server.as_ref()?;
            let before = std::mem::replace(&mut previous_free, s.free_pages);
            let (before, now, dt) = (before?, s.free_pages?, s.interval_s.filter(|d| *d > 0.0)?);
            let taken = s.pages_read_s.unwrap_or(0.0) + s.pages_created_s.unwrap_or(0.0);
            Some(taken + (now as f64 - before as f64) / dt)
        })
        .collect();
    let anything_taken = rows.iter().any(|r| {
        r.server
            .as_ref()
            .is_some_and(|s| s.pages_read_s.unwrap_or(0.0) + s.pages_created_s.unwrap_or(0.0) > 0.0)
    });
    if anything_taken && balance.iter().any(Option::is_some) {
        // A sample's balance can dip below 0 when its free list grew from pages freed in the
        // sample before: the window's sum is right, a chart clamps each sample at 0.
        return (balance, true);
    }
    match counter(&|s: &ServerSample| named(&s.innodb_metrics, &[LRU_EVICT_METRIC]).copied()) {
        Some(v) => (v, false),
        None => (vec![None; rows.len()], false),
    }
}

/// Pages scanned in the LRU per second: the INNODB_METRICS counters of LRU searches and LRU
/// batches ([`LRU_SCAN_METRICS`], enabled by the sampler), summed.
pub fn lru_scanned(rows: &[&TelemetryRow]) -> Figure<f64> {
    if rows.iter().any(|r| r.is_postgres()) {
        return Figure::NotAvailable("PostgreSQL has no LRU scan counter (its clock sweep is not counted)".into());
    }
    let sampled: Vec<&dbperf_results::telemetry::ServerSample> =
        rows.iter().filter_map(|r| r.server.as_ref()).collect();
    if sampled.is_empty() {
        return Figure::NotAvailable("the server was not sampled in the window".into());
    }
    // A counter that did not move in a sample is left out of its rates: that sample scanned
    // nothing. A run where none ever appeared had no such counter enabled.
    let per_sample: Vec<f64> = sampled
        .iter()
        .map(|s| LRU_SCAN_METRICS.iter().filter_map(|m| s.innodb_metrics.get(*m)).sum())
        .collect();
    let seen = sampled
        .iter()
        .any(|s| LRU_SCAN_METRICS.iter().any(|m| s.innodb_metrics.contains_key(*m)));
    if !seen {
        return Figure::NotAvailable(
            "no LRU scan counter moved in the window: nothing was scanned, or the server has no \
             buffer_LRU_search_scanned / buffer_LRU_batch_scanned (dbperf enables them for every run)"
                .into(),
        );
    }
    Figure::Value(per_sample.iter().sum::<f64>() / per_sample.len() as f64)
}

/// Bytes in MiB, with a decimal below 100 MiB (a 5.9 MiB age and its 7.4 MiB redo must not
/// both read as whole numbers that hide the +25%).
fn mib(bytes: u64) -> String {
    let m = bytes as f64 / (1024.0 * 1024.0);
    if m < 100.0 {
        format!("{m:.1} MiB")
    } else {
        format!("{m:.0} MiB")
    }
}

impl Explanation {
    /// Lines for a person.
    pub fn render_text(&self) -> String {
        let mut s = String::from("Explanation\n");
        let line = |s: &mut String, name: &str, text: String| {
            s.push_str(&format!("  {name:<22} {text}\n"));
        };
        line(
            &mut s,
            "throughput",
            self.throughput.text(|t| {
                format!(
                    "{} {:.1} averaged over the last {:.0} s ({} intervals), CV {:.1}%",
                    t.figure, t.average, t.window_s, t.intervals, t.cv_pct
                )
            }),
        );
        line(
            &mut s,
            "checkpoint age",
            self.checkpoint.text(|c| {
                let pct = c.max_age_pct.map_or(String::new(), |p| {
                    format!(" = {p:.0}% of its maximum (the sync flush point)")
                });
                let redo = c
                    .capacity_bytes
                    .map_or(" (redo size not in the manifest)".into(), |cap| {
                        format!("; redo {}", mib(cap))
                    });
                let held = match c.redo_needed_bytes {
                    Some(need) => format!(": a redo of {} would have held it (+25%)", mib(need)),
                    None if c.capacity_bytes.is_some() && c.max_age_pct.is_some() => ", which held it".into(),
                    None => String::new(),
                };
                format!("max {}{pct}{redo}{held}", mib(c.max_age_bytes))
            }),
        );
        line(
            &mut s,
            "dirty pages",
            self.dirty_pages.text(|d| {
                let limit = d.limit_pct.map_or(" (limit unknown)".into(), |l| {
                    format!(" against innodb_max_dirty_pages_pct {l:.0}")
                });
                format!("{:.1}% average, {:.1}% max{limit}", d.average_pct, d.max_pct)
            }),
        );
        line(
            &mut s,
            "top waits",
            self.top_waits.text(|w| {
                w.iter()
                    .map(|w| format!("{} {:.0}%", w.event, w.share_pct))
                    .collect::<Vec<_>>()
                    .join(", ")
            }),
        );
        line(
            &mut s,
            "single-page flushes",
            self.single_page_flushes_s.text(|v| format!("{v:.1}/s")),
        );
        line(&mut s, "pages read", self.pages_read_s.text(|v| format!("{v:.1}/s")));
        line(
            &mut s,
            "pages freed",
            self.pages_freed_s.text(|f| match f.derived {
                false => format!("{:.1}/s", f.per_s),
                true => format!(
                    "{:.1}/s (derived: pages read + created + the free list's growth; the server has no \
                     counter of every page freed)",
                    f.per_s
                ),
            }),
        );
        line(
            &mut s,
            "LRU pages scanned",
            self.lru_scanned_s.text(|v| format!("{v:.1}/s")),
        );
        line(&mut s, "flushing", self.flushing.text(Flushing::text));
        line(
            &mut s,
            "io_capacity",
            self.io_capacity.text(|z| {
                format!(
                    "disk {} took up to {:.0} writes/s (w/s + wrqm/s, 95th percentile): innodb_io_capacity = {} \
                     (80% of it){}",
                    z.disk,
                    z.writes_s,
                    z.suggested,
                    z.current.map_or(String::new(), |c| format!("; now {c:.0}"))
                )
            }),
        );
        line(
            &mut s,
            "stalls",
            self.stalls.text(|st| {
                if st.count == 0 {
                    "none".into()
                } else {
                    format!("{} ({:.0} s): {}", st.count, st.seconds, st.lines.join("; "))
                }
            }),
        );
        s
    }
}

/// The columns of the explanations table (one row per run: [`table_row`]), shared by the
/// HTML experiment report and `dbperf lab report`.
pub const TABLE_HEADER: [&str; 11] = [
    "run",
    "interval figure",
    "max checkpoint age → redo needed (+25%)",
    "dirty pages / limit",
    "flushing bound by",
    "top waits",
    "single-page flushes/s",
    "pages read/s",
    "pages freed/s",
    "LRU pages scanned/s",
    "stalls",
];

/// One run's row of the explanations table, labelled `label` (a lab point id or a run id).
/// A figure the server does not provide says why (`n/a: ...`, the reason's first clause: the
/// full text is in `dbperf analyze RUN`), never 0.
pub fn table_row(label: String, e: &Explanation) -> Vec<String> {
    let na = |why: String| format!("n/a: {}", why.split([':', ';']).next().unwrap_or(&why).trim());
    std::iter::once(label)
        .chain(table_cells(e).into_iter().map(|c| c.unwrap_or_else(na)))
        .collect()
}

/// The cells of one run's row of the explanations table after its label: each figure, or
/// (`Err`) the whole reason the run has none.
pub fn table_cells(e: &Explanation) -> Vec<Result<String, String>> {
    fn cell<T>(f: &Figure<T>, show: impl Fn(&T) -> String) -> Result<String, String> {
        match f {
            Figure::Value(v) => Ok(show(v)),
            Figure::NotAvailable(why) => Err(why.clone()),
        }
    }
    let rate = |v: &f64| format!("{v:.1}");
    vec![
        cell(&e.throughput, |t| {
            format!("{} {:.1}, CV {:.1}%", t.figure, t.average, t.cv_pct)
        }),
        cell(&e.checkpoint, |c| {
            format!(
                "{}{}{}",
                mib(c.max_age_bytes),
                c.max_age_pct.map_or(String::new(), |p| format!(" ({p:.0}% of max)")),
                c.redo_needed_bytes
                    .map_or(String::new(), |need| format!(" → redo {}", mib(need)))
            )
        }),
        cell(&e.dirty_pages, |d| {
            format!(
                "{:.0}% avg, {:.0}% max / limit {}",
                d.average_pct,
                d.max_pct,
                d.limit_pct.map_or("?".into(), |l| format!("{l:.0}%"))
            )
        }),
        cell(&e.flushing, |f| f.short()),
        cell(&e.top_waits, |w| {
            w.iter()
                .take(2)
                .map(|w| format!("{} {:.0}%", w.event.trim_start_matches("wait/synch/"), w.share_pct))
                .collect::<Vec<_>>()
                .join(", ")
        }),
        cell(&e.single_page_flushes_s, rate),
        cell(&e.pages_read_s, rate),
        cell(&e.pages_freed_s, |f| match f.derived {
            true => format!("{:.1} (derived)", f.per_s),
            false => format!("{:.1}", f.per_s),
        }),
        cell(&e.lru_scanned_s, rate),
        // `+ 0.0` turns a negative zero into "0".
        cell(&e.stalls, |s| format!("{} ({:.0} s)", s.count, s.seconds + 0.0)),
    ]
}

/// The median of the throughput averages of several runs (the lab's repetitions).
pub fn median_average(explanations: &[Explanation]) -> Option<f64> {
    median(
        &explanations
            .iter()
            .filter_map(|e| e.throughput.value().map(|t| t.average))
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_results::telemetry::{ServerSample, Wait};

    fn row(t: f64, server: ServerSample) -> TelemetryRow {
        TelemetryRow {
            t_s: t,
            interval_s: Some(1.0),
            server: Some(server),
            ..TelemetryRow::default()
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// Checkpoint age in percent of its maximum (the sync point, 800 MiB of a 1 GiB redo
    /// here): a redo is said to be needed only when the age reached the async point, and then
    /// it is larger than the redo that did not hold it.
    #[test]
    fn the_redo_needed_is_said_only_when_the_redo_did_not_hold_the_age() {
        let rows = |ages: &[u64]| -> Vec<TelemetryRow> {
            ages.iter()
                .enumerate()
                .map(|(i, mb)| {
                    row(
                        i as f64 + 1.0,
                        ServerSample {
                            checkpoint_age_bytes: Some(mb << 20),
                            checkpoint_max_bytes: Some(800 << 20),
                            ..ServerSample::default()
                        },
                    )
                })
                .collect()
        };
        let redo = vars(&[("innodb_log_file_size", "1073741824")]);
        let held = rows(&[100, 400, 200]);
        let Figure::Value(c) = checkpoint(&held.iter().collect::<Vec<_>>(), &redo) else {
            panic!()
        };
        assert_eq!(
            (c.max_age_bytes, c.max_age_pct, c.redo_needed_bytes),
            (400 << 20, Some(50.0), None)
        );
        assert_eq!(c.capacity_bytes, Some(1 << 30));
        let e = Explanation {
            checkpoint: Figure::Value(c),
            ..Explanation::blank()
        };
        let text = e.render_text();
        assert!(
            text.contains("max 400 MiB = 50% of its maximum (the sync flush point); redo 1024 MiB, which held it"),
            "{text}"
        );
        let full = rows(&[100, 760, 400]);
        let Figure::Value(c) = checkpoint(&full.iter().collect::<Vec<_>>(), &redo) else {
            panic!()
        };
        // 95% of the maximum: 1 GiB x 0.95 x 1.25.
        assert_eq!(
            c.redo_needed_bytes,
            Some(((1u64 << 30) as f64 * 0.95 * 1.25).ceil() as u64)
        );
        assert!(c.redo_needed_bytes.unwrap() > 1 << 30);
        // MySQL 5.x: two files of the size.
        assert_eq!(
            redo_capacity(&vars(&[
                ("innodb_log_file_size", "100"),
                ("innodb_log_files_in_group", "2")
            ])),
            Some(200)
        );
        assert_eq!(
            redo_capacity(&vars(&[
                ("innodb_redo_log_capacity", "300"),
                ("innodb_log_file_size", "100")
            ])),
            Some(300)
        );
    }

    #[test]
    fn without_a_checkpoint_age_it_says_why_not_zero() {
        let rows = [row(1.0, ServerSample::default())];
        let refs: Vec<&TelemetryRow> = rows.iter().collect();
        assert!(
            matches!(checkpoint(&refs, &BTreeMap::new()), Figure::NotAvailable(w) if w.contains("no checkpoint age"))
        );
        let none = [TelemetryRow::default()];
        let refs: Vec<&TelemetryRow> = none.iter().collect();
        assert!(matches!(checkpoint(&refs, &BTreeMap::new()), Figure::NotAvailable(w) if w.contains("not sampled")));
    }

    #[test]
    fn dirty_pages_are_held_against_the_configured_limit() {
        let rows: Vec<TelemetryRow> = [10.0, 30.0, 20.0]
            .iter()
            .map(|d| {
                row(
                    1.0,
                    ServerSample {
                        dirty_pages_pct: Some(*d),
                        max_dirty_pages_pct: Some(90.0),
                        ..ServerSample::default()
                    },
                )
            })
            .collect();
        let refs: Vec<&TelemetryRow> = rows.iter().collect();
        let Figure::Value(d) = dirty(&refs, &vars(&[("innodb_max_dirty_pages_pct", "15.000000")])) else {
            panic!()
        };
        assert_eq!((d.average_pct, d.max_pct, d.limit_pct), (20.0, 30.0, Some(15.0)));
        // Without the variable, the sampled limit.
        let Figure::Value(d) = dirty(&refs, &BTreeMap::new()) else {
            panic!()
        };
        assert_eq!(d.limit_pct, Some(90.0));
    }

    #[test]
    fn top_waits_rank_by_time_and_performance_schema_off_is_named() {
        let wait = |e: &str, t: f64| Wait {
            event: e.into(),
            count: 1,
            time_ms: t,
        };
        let rows = [
            row(
                1.0,
                ServerSample {
                    waits: vec![
                        wait("wait/synch/mutex/innodb/log_sys_mutex", 30.0),
                        wait("wait/io/table/sql/handler", 900.0),
                    ],
                    ..ServerSample::default()
                },
            ),
            row(
                2.0,
                ServerSample {
                    waits: vec![
                        wait("wait/synch/sxlock/innodb/index_tree_rw_lock", 10.0),
                        wait("wait/synch/mutex/innodb/log_sys_mutex", 30.0),
                    ],
                    ..ServerSample::default()
                },
            ),
        ];
        let refs: Vec<&TelemetryRow> = rows.iter().collect();
        let Figure::Value(w) = top_waits(&refs, &BTreeMap::new(), None) else {
            panic!()
        };
        assert_eq!(w[0].event, "wait/synch/mutex/innodb/log_sys_mutex");
        assert_eq!(w.len(), 2, "table I/O is no contention point: {w:?}");
        assert!((w[0].share_pct - 600.0 / 7.0).abs() < 1e-9);
        let quiet = [row(1.0, ServerSample::default())];
        let refs: Vec<&TelemetryRow> = quiet.iter().collect();
        assert!(matches!(
            top_waits(&refs, &vars(&[("performance_schema", "OFF")]), None),
            Figure::NotAvailable(w) if w.contains("performance_schema is OFF")
        ));
        // ON without the latch instruments: the reason says so, and does not ask to turn it ON.
        let on = vars(&[("performance_schema", "ON")]);
        let Figure::NotAvailable(why) = top_waits(&refs, &on, Some(false)) else {
            panic!()
        };
        assert!(
            why.starts_with("performance_schema is ON") && why.contains("--pfs-instruments"),
            "{why}"
        );
        assert!(!why.contains("= \"ON\""), "{why}");
        let Figure::NotAvailable(why) = top_waits(&refs, &on, Some(true)) else {
            panic!()
        };
        assert!(why.contains("none of its enabled wait instruments"), "{why}");
    }

    #[test]
    fn lru_scans_are_the_search_and_batch_counters_summed_or_say_why_not() {
        let scanned = |m: &[(&str, f64)]| {
            row(
                1.0,
                ServerSample {
                    innodb_metrics: m.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                    ..ServerSample::default()
                },
            )
        };
        let rows = [
            scanned(&[("buffer_LRU_search_scanned", 10.0), ("buffer_LRU_batch_scanned", 30.0)]),
            // A sample where neither moved scanned nothing.
            scanned(&[("buffer_LRU_single_flush_num_scan", 0.0)]),
        ];
        let refs: Vec<&TelemetryRow> = rows.iter().collect();
        assert_eq!(lru_scanned(&refs), Figure::Value(20.0));
        let none = [scanned(&[("buffer_LRU_single_flush_num_scan", 0.0)])];
        let refs: Vec<&TelemetryRow> = none.iter().collect();
        assert!(matches!(lru_scanned(&refs), Figure::NotAvailable(why) if why.contains("buffer_LRU_search_scanned")));
        assert!(matches!(lru_scanned(&[]), Figure::NotAvailable(why) if why.contains("not sampled")));
    }

    #[test]
    fn the_limit_that_bound_the_flushing_is_named() {
        let sample = |ckpt: f64, dirty: f64, written: f64| {
            row(
                1.0,
                ServerSample {
                    checkpoint_pct: Some(ckpt),
                    dirty_pages_pct: Some(dirty),
                    pages_written_s: Some(written),
                    ..ServerSample::default()
                },
            )
        };
        let v = vars(&[("innodb_max_dirty_pages_pct", "50"), ("innodb_io_capacity", "200")]);
        let bound = |rows: &[TelemetryRow]| {
            let refs: Vec<&TelemetryRow> = rows.iter().collect();
            match flushing(&refs, &v) {
                Figure::Value(f) => f,
                other => panic!("{other:?}"),
            }
        };
        // Study 001 at max_dirty_pages_pct=50: the checkpoint age at the async point, and dirty
        // pages up to 70% (the limit not kept).
        let f = bound(&[
            sample(90.0, 60.0, 900.0),
            sample(95.0, 70.0, 900.0),
            sample(40.0, 55.0, 900.0),
        ]);
        assert_eq!(f.bound, FlushBound::CheckpointAge);
        assert_eq!(f.dirty_limit_kept, Some(false));
        assert_eq!(f.short(), "checkpoint age (67% at async); dirty 70% > limit 50%");
        assert!(f.text().contains("not kept: up to 70% against 50%"), "{}", f.text());
        // At the dirty limit with the checkpoint age low: the limit paced it (and was kept).
        let f = bound(&[sample(30.0, 49.0, 900.0), sample(30.0, 50.5, 900.0)]);
        assert_eq!(f.bound, FlushBound::DirtyLimit);
        assert_eq!(f.dirty_limit_kept, Some(true));
        // Writes at io_capacity, both limits far: io_capacity.
        let f = bound(&[sample(30.0, 10.0, 190.0), sample(30.0, 10.0, 210.0)]);
        assert_eq!(f.bound, FlushBound::IoCapacity);
        assert_eq!(f.short(), "io_capacity (200/s)");
        let f = bound(&[sample(30.0, 10.0, 50.0)]);
        assert_eq!(f.bound, FlushBound::Nothing);
    }

    #[test]
    fn io_capacity_is_sized_from_writes_and_merged_writes() {
        use dbperf_results::telemetry::{DiskIo, OsSample};
        let rows: Vec<TelemetryRow> = (0..20)
            .map(|i| TelemetryRow {
                t_s: f64::from(i),
                os: Some(OsSample {
                    disks: vec![DiskIo {
                        name: "vda".into(),
                        w_s: 1000.0 + f64::from(i) * 100.0,
                        wrqm_s: 500.0,
                        ..DiskIo::default()
                    }],
                    ..OsSample::default()
                }),
                ..TelemetryRow::default()
            })
            .collect();
        let refs: Vec<&TelemetryRow> = rows.iter().collect();
        let Figure::Value(z) = io_capacity(&refs, &vars(&[("innodb_io_capacity", "200")]), true) else {
            panic!()
        };
        // Flushing under no limit: the writes say nothing of what the disk can take.
        assert!(
            matches!(io_capacity(&refs, &BTreeMap::new(), false), Figure::NotAvailable(why) if why.starts_with("not sized"))
        );
        // The 95th percentile of w/s + wrqm/s over 20 samples is the 19th: 1000 + 1800 + 500.
        assert_eq!(
            (z.disk.as_str(), z.writes_s, z.suggested, z.current),
            ("vda", 3300.0, 2600, Some(200.0))
        );
        assert_eq!(two_digits(20_000.0 * 0.8), 16_000);
        assert_eq!(two_digits(12.0), 100);
        assert!(matches!(
            io_capacity(&[], &BTreeMap::new(), true),
            Figure::NotAvailable(_)
        ));
    }

    #[test]
    fn pages_freed_are_counted_or_derived_from_the_free_list() {
        let sample = |free: u64, read: f64, created: f64, status: &[(&str, f64)]| {
            row(
                1.0,
                ServerSample {
                    interval_s: Some(1.0),
                    free_pages: Some(free),
                    pages_read_s: Some(read),
                    pages_created_s: Some(created),
                    status_rates: status.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                    ..ServerSample::default()
                },
            )
        };
        // MariaDB's counter, when it moved, is the figure.
        let counted = [
            sample(100, 50.0, 0.0, &[("Innodb_buffer_pool_pages_LRU_freed", 40.0)]),
            sample(100, 50.0, 0.0, &[("Innodb_buffer_pool_pages_LRU_freed", 60.0)]),
        ];
        let refs: Vec<&TelemetryRow> = counted.iter().collect();
        assert_eq!(
            pages_freed(&refs),
            Figure::Value(Freed {
                per_s: 50.0,
                derived: false
            })
        );
        // MySQL: no counter moved; a full pool reading 300 and creating 20 pages a second
        // with its free list at 1,000 freed 320 a second.
        // Its page cleaner's batch evictions (4/s) are not what the workload freed.
        let mut full = [
            sample(1000, 0.0, 0.0, &[("Innodb_rows_read", 1.0)]),
            sample(1000, 300.0, 20.0, &[("Innodb_rows_read", 1.0)]),
            sample(1000, 300.0, 20.0, &[("Innodb_rows_read", 1.0)]),
        ];
        for r in &mut full {
            r.server
                .as_mut()
                .unwrap()
                .innodb_metrics
                .insert(LRU_EVICT_METRIC.into(), 4.0);
        }
        let refs: Vec<&TelemetryRow> = full.iter().collect();
        assert_eq!(
            pages_freed(&refs),
            Figure::Value(Freed {
                per_s: 320.0,
                derived: true
            })
        );
        // A pool still filling takes its pages from the free list: nothing was freed.
        let filling = [
            sample(1000, 0.0, 0.0, &[("Innodb_rows_read", 1.0)]),
            sample(700, 300.0, 0.0, &[("Innodb_rows_read", 1.0)]),
            sample(400, 300.0, 0.0, &[("Innodb_rows_read", 1.0)]),
        ];
        let refs: Vec<&TelemetryRow> = filling.iter().collect();
        assert_eq!(
            pages_freed(&refs),
            Figure::Value(Freed {
                per_s: 0.0,
                derived: true
            })
        );
        // Nothing read or created, and no counter: why not, never 0.
        let idle = [
            sample(10, 0.0, 0.0, &[("Innodb_rows_read", 1.0)]),
            sample(10, 0.0, 0.0, &[("Innodb_rows_read", 1.0)]),
        ];
        let refs: Vec<&TelemetryRow> = idle.iter().collect();
        assert!(matches!(pages_freed(&refs), Figure::NotAvailable(_)));
        let e = table_row_freed(Figure::Value(Freed {
            per_s: 320.0,
            derived: true,
        }));
        assert_eq!(e, "320.0 (derived)");
    }

    /// The explanation table's pages-freed cell for `f`.
    fn table_row_freed(f: Figure<Freed>) -> String {
        let mut e = Explanation::blank();
        e.pages_freed_s = f;
        let i = TABLE_HEADER.iter().position(|h| *h == "pages freed/s").unwrap();
        table_row(String::new(), &e)[i].clone()
    }

    #[test]
    fn single_page_flushes_come_from_the_metric_or_say_why_not() {
        let rows = [row(
            1.0,
            ServerSample {
                innodb_metrics: [("buffer_LRU_single_flush_num_scan".to_string(), 4.0)].into(),
                ..ServerSample::default()
            },
        )];
        let refs: Vec<&TelemetryRow> = rows.iter().collect();
        assert_eq!(single_page_flushes(&refs, &BTreeMap::new()), Figure::Value(4.0));
        let rows = [row(
            1.0,
            ServerSample {
                status_rates: [("Innodb_buffer_pool_wait_free".to_string(), 2.0)].into(),
                ..ServerSample::default()
            },
        )];
        let refs: Vec<&TelemetryRow> = rows.iter().collect();
        let Figure::NotAvailable(why) = single_page_flushes(&refs, &vars(&[("version", "10.11.5-MariaDB")])) else {
            panic!()
        };
        assert!(why.contains("MariaDB 10.5") && why.contains("2.0/s"), "{why}");
        // MariaDB 10.4 has the counter: there it was not sampled.
        let Figure::NotAvailable(why) = single_page_flushes(&refs, &vars(&[("version", "10.4.34-MariaDB")])) else {
            panic!()
        };
        assert!(why.contains("--innodb-metrics"), "{why}");
    }

    fn interval(i: u32, start: f64, end: f64) -> IntervalRecord {
        IntervalRecord {
            index: i,
            start_s: start,
            end_s: end,
            warmup: false,
            threads: 1,
            transactions: 0,
            tps: 0.0,
            qps: 0.0,
            rwo_per_sec: [0.0; 3],
            errors: BTreeMap::new(),
            errors_per_sec: 0.0,
            reconnects_per_sec: 0.0,
            latency_ms: Default::default(),
            service_time_ms: Default::default(),
            late_starts: 0,
            backlog: 0,
            server_unreachable: false,
        }
    }

    #[test]
    fn notpm_per_interval_counts_the_new_order_histogram_of_each_interval() {
        use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
        use hdrhistogram::serialization::V2DeflateSerializer;
        use std::time::{Duration, SystemTime};
        let hist = |n: u64| {
            let mut h = dbperf_engine::stats::new_histogram();
            for _ in 0..n {
                h.record(1500).unwrap();
            }
            h
        };
        let mut bytes = Vec::new();
        let mut serializer = V2DeflateSerializer::new();
        {
            let mut w = IntervalLogWriterBuilder::new()
                .with_base_time(SystemTime::UNIX_EPOCH)
                .begin_log_with(&mut bytes, &mut serializer)
                .unwrap();
            let (no, pay) = (
                Tag::new("response:new_order").unwrap(),
                Tag::new("response:payment").unwrap(),
            );
            // 10 s intervals: 50 New-Order, then a payment only (no New-Order completed), then 20.
            w.write_histogram(&hist(50), Duration::ZERO, Duration::from_secs(10), Some(no))
                .unwrap();
            w.write_histogram(&hist(70), Duration::ZERO, Duration::from_secs(10), Some(pay))
                .unwrap();
            w.write_histogram(&hist(9), Duration::from_secs(10), Duration::from_secs(10), Some(pay))
                .unwrap();
            w.write_histogram(&hist(20), Duration::from_secs(20), Duration::from_secs(10), Some(no))
                .unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("intervals.hlog");
        std::fs::write(&path, &bytes).unwrap();
        let rows = [interval(0, 0.0, 10.0), interval(1, 10.0, 20.0), interval(2, 20.0, 30.0)];
        let refs: Vec<&IntervalRecord> = rows.iter().collect();
        assert_eq!(
            new_orders_per_minute(&path, &refs).unwrap(),
            [(0.0, 300.0), (10.0, 0.0), (20.0, 120.0)]
        );
        assert!(new_orders_per_minute(&dir.path().join("none"), &refs)
            .unwrap_err()
            .contains("cannot be read"));
    }

    #[test]
    fn the_last_n_seconds_are_averaged() {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = String::new();
        for i in 0..10u32 {
            let rec = IntervalRecord {
                index: i,
                start_s: f64::from(i),
                end_s: f64::from(i + 1),
                warmup: i < 2,
                threads: 1,
                transactions: 0,
                tps: if i < 6 { 10.0 } else { 100.0 + f64::from(i % 2) * 20.0 },
                qps: 0.0,
                rwo_per_sec: [0.0; 3],
                errors: BTreeMap::new(),
                errors_per_sec: 0.0,
                reconnects_per_sec: 0.0,
                latency_ms: Default::default(),
                service_time_ms: Default::default(),
                late_starts: 0,
                backlog: 0,
                server_unreachable: false,
            };
            lines.push_str(&serde_json::to_string(&rec).unwrap());
            lines.push('\n');
        }
        std::fs::write(dir.path().join(INTERVALS_FILE), lines).unwrap();
        // The last 4 s: 100, 120, 100, 120.
        let e = explain(dir.path(), &ExplainOptions { last_s: Some(4.0) }).unwrap();
        let Figure::Value(t) = &e.throughput else { panic!() };
        assert_eq!((t.figure.as_str(), t.intervals, t.average), ("tps", 4, 110.0));
        // Sample standard deviation (n - 1), as `dbperf analyze` computes it: sqrt(400 / 3).
        assert!((t.cv_pct - (400.0f64 / 3.0).sqrt() / 110.0 * 100.0).abs() < 1e-9);
        // Default: half of the 8 measured seconds, the same four.
        let e = explain(dir.path(), &ExplainOptions::default()).unwrap();
        assert_eq!(e.throughput.value().unwrap().average, 110.0);
        assert!(matches!(e.checkpoint, Figure::NotAvailable(w) if w.contains("no-telemetry")));
        assert!(explain(dir.path(), &ExplainOptions { last_s: Some(-1.0) }).is_err());
    }
}
