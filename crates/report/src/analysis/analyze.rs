//! `dbperf analyze RUN`: stall detection and attribution on a finished run directory.
//!
//! Reads `intervals.jsonl` and, when present, `telemetry.jsonl`; finds the stalls (runs of
//! measured intervals whose TPS fell by `--drop` below the run's sustained TPS, or whose p99
//! rose above `--p99-factor` times the median p99) and explains each with the telemetry samples taken
//! during it: checkpoint age, dirty pages, page writes, LRU flushes, top wait, iowait, disk
//! utilisation, client CPU. Also judges the run's stability (coefficient of variation of TPS),
//! and lists the spans where the server was unreachable (intervals marked
//! `server_unreachable`), which explain a stall before any telemetry does.
//!
//! PostgreSQL runs (samples with `checkpoint_trigger_pct`, from `pg.rs`) are explained in
//! PostgreSQL's terms: a checkpoint *requested* (by WAL volume) during a stall, or in the
//! sample just before it, is a checkpoint storm; checkpoint distance is compared with the
//! distance at which PostgreSQL requests a checkpoint rather than InnoDB's sync-flush point;
//! timed checkpoints, backends writing buffers themselves, full-page images and temp files are
//! named when they spike.
//!
//! A server that stopped answering (telemetry samples with [`NO_ANSWER_QUERY`] during a stall)
//! is the first explanation of that stall. A sample that covers less than half the usual
//! period (the catch-up after such a pause) keeps its levels but not its rates, which over a
//! few milliseconds read as spikes. A torn last record of either file is skipped and named.
//! Artifacts of the measurement are [`Warning`]s with a stable `kind` ([`crate::warnings`]):
//! `too_few_intervals` (no stability verdict from fewer than [`MIN_INTERVALS_TO_JUDGE`]),
//! `leftover_flushing` (the run measured the flushing of an earlier load) and `client_bound`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::pressure::{
    max_of, median_of, min_of, srv, srv_n, top_wait, Pressure, SyncFlush, TelemetryRow, ASYNC_FLUSH_PCT,
    CLIENT_SATURATED_PCT, SYNC_FLUSH_PCT,
};
use crate::warnings;
use dbperf_core::stats::{mean_cv, median, quantile};
use dbperf_results::telemetry::{busiest_disk_during, PgDetail, ServerSample, NO_ANSWER_CONNECT, NO_ANSWER_QUERY};
use dbperf_results::{read_jsonl, ResultsError, TornRecord, INTERVALS_FILE, TELEMETRY_FILE};

/// TPS coefficient of variation (percent) below which a run is stable.
const STABLE_CV_PCT: f64 = 5.0;
/// ... and below which it is only somewhat variable.
const VARIABLE_CV_PCT: f64 = 15.0;

/// What counts as a stall.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnalyzeOptions {
    /// An interval stalls when its TPS fell by at least this fraction of the sustained TPS
    /// (0.5: to half or less).
    pub drop: f64,
    /// ... or when its p99 is above this multiple of the median p99.
    pub p99_factor: f64,
}

impl Default for AnalyzeOptions {
    fn default() -> AnalyzeOptions {
        AnalyzeOptions {
            drop: 0.5,
            p99_factor: 3.0,
        }
    }
}

/// Why a run directory could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// The run directory has no `intervals.jsonl`.
    #[error(
        "{path} not found: give a run directory written by `dbperf sysbench ... run` \
         (it holds manifest.json and intervals.jsonl)"
    )]
    NoIntervals {
        /// The missing file.
        path: PathBuf,
    },
    /// Every interval is warmup (or the file is empty).
    #[error(
        "{path} has no measured interval (all {count} are warmup): nothing to analyse; run longer than --warmup-time"
    )]
    NothingMeasured {
        /// The interval file.
        path: PathBuf,
        /// Intervals in it.
        count: usize,
    },
    /// Invalid options.
    #[error("{0}")]
    Options(String),
    /// A file could not be read or parsed.
    #[error(transparent)]
    Read(#[from] ResultsError),
}

/// The analysis of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Measured (non-warmup) intervals.
    pub intervals: usize,
    /// Telemetry samples read (`None`: no `telemetry.jsonl`).
    pub telemetry_samples: Option<usize>,
    /// The stall thresholds used.
    pub drop: f64,
    /// The p99 factor used.
    pub p99_factor: f64,
    /// Stalls, in time order.
    pub stalls: Vec<Stall>,
    /// A dip at the very start of a run that had no warmup: the cold start (connections,
    /// buffer pool, statement caches) measured, reported apart and not counted as a stall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp_up: Option<Stall>,
    /// How steady TPS and p99 were.
    pub stability: Stability,
    /// Run-wide pressure from telemetry (`None`: no `telemetry.jsonl`).
    pub pressure: Option<Pressure>,
    /// Throughput with the checkpoint age in sync flush against without (MySQL/MariaDB runs
    /// with a checkpoint age in their telemetry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_flush: Option<SyncFlushCost>,
    /// Findings about the whole run (e.g. a saturated client).
    pub notes: Vec<String>,
    /// Last records cut off mid-write (a full disk, a killed run) that were skipped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub torn: Vec<TornRecord>,
    /// Spans of measured intervals in which the server was unreachable, in time order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<Outage>,
    /// Median share of the host's CPU time idle over the measured phase, percent (`None`: no
    /// OS telemetry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_idle_pct: Option<f64>,
    /// Artifacts of the measurement itself, each with its evidence and what to do.
    pub warnings: Vec<Warning>,
    /// The state the run started in (its first telemetry samples; `None`: no server telemetry).
    pub start: Option<StartState>,
}

pub use crate::warnings::{Warning, WarningKind, MIN_INTERVALS_TO_JUDGE};
pub use dbperf_results::telemetry::StartState;

/// Intervals needed below the sync flush point before their median is set against the
/// sync-flush intervals' median.
const SYNC_SPLIT_MIN: usize = 3;

/// What sync flushing cost: the measured intervals split by whether InnoDB's checkpoint age
/// was at or above [`SYNC_FLUSH_PCT`] of its maximum during them. A run held in sync flush
/// is throttled evenly on a quiet box, so no single interval falls far enough to be a stall;
/// the split shows the cost that a stall threshold misses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncFlushCost {
    /// Measured intervals with checkpoint-age samples.
    pub intervals: usize,
    /// ... of which in sync flush (at least half of their samples in it).
    pub sync_intervals: usize,
    /// Whether sync flush was told by InnoDB's sync-batch counter (else by checkpoint age).
    pub counted: bool,
    /// Median TPS of the intervals in sync flush (`None`: there were none).
    pub tps_sync: Option<f64>,
    /// Median TPS of the other intervals (`None`: there were none).
    pub tps_other: Option<f64>,
    /// How much lower the sync-flush median is, percent of the other median (negative: higher).
    pub cost_pct: Option<f64>,
}

impl SyncFlushCost {
    /// Splits `measured` intervals by whether the samples inside each were in sync flush
    /// ([`TelemetryRow::in_sync_flush`]: sync batches counted, else checkpoint age).
    fn of(measured: &[&IntervalRow], tel: &[TelemetryRow], step: f64) -> Option<SyncFlushCost> {
        let (mut sync, mut other) = (Vec::new(), Vec::new());
        let mut counted = false;
        for r in measured {
            let inside: Vec<&TelemetryRow> = tel
                .iter()
                .filter(|s| {
                    let mid = s.mid_s(step);
                    mid >= r.start_s && mid <= r.end_s
                })
                .collect();
            counted |= inside.iter().any(|s| s.sync_flush_pages().is_some());
            let states: Vec<bool> = inside.iter().filter_map(|s| s.in_sync_flush()).collect();
            if states.is_empty() {
                continue;
            }
            let at = states.iter().filter(|s| **s).count();
            if at * 2 >= states.len() {
                sync.push(r.tps);
            } else {
                other.push(r.tps);
            }
        }
        if sync.is_empty() && other.is_empty() {
            return None;
        }
        let (tps_sync, tps_other) = (median(&sync), median(&other));
        Some(SyncFlushCost {
            intervals: sync.len() + other.len(),
            sync_intervals: sync.len(),
            counted,
            tps_sync,
            tps_other,
            cost_pct: match (tps_sync, tps_other) {
                (Some(s), Some(o)) if o > 0.0 => Some((1.0 - s / o) * 100.0),
                _ => None,
            },
        })
    }

    /// The note line, or `None` when no interval was in sync flush.
    fn note(&self) -> Option<String> {
        let tps_sync = self.tps_sync?;
        let how = if self.counted {
            "sync flush batches counted".to_owned()
        } else {
            format!("checkpoint age >= {SYNC_FLUSH_PCT:.0}%")
        };
        let sync = format!(
            "{} of {} intervals in sync flush ({how})",
            self.sync_intervals, self.intervals
        );
        let others = self.intervals - self.sync_intervals;
        if others > 0 && others < SYNC_SPLIT_MIN {
            return Some(format!(
                "sync flush cost: {sync} (median {} TPS); {others} interval(s) below it are too few to measure \
                 its cost inside this run; compare with a run on a larger redo log (`dbperf compare`)",
                fmt_tps(tps_sync)
            ));
        }
        Some(match (self.tps_other, self.cost_pct) {
            (Some(other), Some(cost)) if cost > 0.0 => format!(
                "sync flush cost: {sync} ran at a median {} TPS, the {} below it at {} TPS: {cost:.0}% less throughput \
                 while writers waited for flushing",
                fmt_tps(tps_sync),
                self.intervals - self.sync_intervals,
                fmt_tps(other)
            ),
            (Some(other), _) => format!(
                "sync flush cost: none seen; {sync} ran at a median {} TPS, the {} below it at {} TPS",
                fmt_tps(tps_sync),
                self.intervals - self.sync_intervals,
                fmt_tps(other)
            ),
            (None, _) => format!(
                "sync flush cost: every interval was in sync flush (median {} TPS), so its cost cannot be seen \
                 inside this run; compare with a run on a larger redo log (`dbperf compare`)",
                fmt_tps(tps_sync)
            ),
        })
    }
}

/// One stall: consecutive intervals with TPS far below the run's sustained TPS or p99 far
/// above its median p99.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stall {
    /// Start of its first interval, seconds since the run started.
    pub start_s: f64,
    /// End of its last interval.
    pub end_s: f64,
    /// The reference: the measured phase's sustained TPS, its upper quartile of interval TPS.
    /// Not the median, which a run that stalls half the time drags down to the stalled level.
    pub tps_sustained: f64,
    /// Lowest TPS during the stall.
    pub tps_min: f64,
    /// How far TPS fell below the sustained TPS, percent (0 when it did not fall).
    pub drop_pct: f64,
    /// Highest p99 during the stall, ms.
    pub p99_ms: f64,
    /// Median p99 of the measured phase, ms.
    pub p99_median_ms: f64,
    /// Explanations from telemetry, strongest first; the last may be `top wait: ...`.
    pub causes: Vec<String>,
    /// Telemetry samples aligned with the stall.
    pub samples: usize,
}

/// Spread of the measured intervals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stability {
    /// TPS coefficient of variation (sample standard deviation / mean), percent.
    pub tps_cv_pct: f64,
    /// Lowest interval TPS.
    pub tps_min: f64,
    /// Median interval TPS.
    pub tps_median: f64,
    /// Upper quartile of interval TPS: what the run sustains when it does not stall.
    pub tps_sustained: f64,
    /// Highest interval TPS.
    pub tps_max: f64,
    /// Lowest interval p99, ms.
    pub p99_min_ms: f64,
    /// Median interval p99, ms.
    pub p99_median_ms: f64,
    /// Highest interval p99, ms.
    pub p99_max_ms: f64,
    /// `stable` (CV < 5%), `variable` (< 15%) or `unstable`; `too few intervals to judge`
    /// below [`MIN_INTERVALS_TO_JUDGE`] measured intervals.
    pub verdict: String,
}

/// The fields of an interval record used here (others are ignored).
#[derive(Debug, Deserialize)]
struct IntervalRow {
    start_s: f64,
    end_s: f64,
    #[serde(default)]
    warmup: bool,
    tps: f64,
    #[serde(default)]
    transactions: u64,
    #[serde(default)]
    latency_ms: P99,
    #[serde(default)]
    server_unreachable: bool,
}

#[derive(Debug, Default, Deserialize)]
struct P99 {
    #[serde(default)]
    p99: f64,
}

/// Analyses the run directory `run_dir`.
pub fn analyze(run_dir: &Path, opts: &AnalyzeOptions) -> Result<Analysis, AnalyzeError> {
    if !(opts.drop > 0.0 && opts.drop < 1.0) {
        return Err(AnalyzeError::Options(format!(
            "--drop {} is not a fraction: give a number between 0 and 1, e.g. 0.5 for a 50% fall",
            opts.drop
        )));
    }
    if !(opts.p99_factor > 1.0 && opts.p99_factor.is_finite()) {
        return Err(AnalyzeError::Options(format!(
            "--p99-factor {} must be above 1, e.g. 3",
            opts.p99_factor
        )));
    }
    let path = run_dir.join(INTERVALS_FILE);
    if !path.is_file() {
        return Err(AnalyzeError::NoIntervals { path });
    }
    let read = read_jsonl::<IntervalRow>(&path)?;
    let all = read.records;
    let mut torn: Vec<TornRecord> = read.torn.into_iter().collect();
    let measured: Vec<&IntervalRow> = all.iter().filter(|r| !r.warmup).collect();
    if measured.is_empty() {
        return Err(AnalyzeError::NothingMeasured { path, count: all.len() });
    }
    let unreachable = outages(&measured);
    // A fragment (e.g. the last few microseconds before the stop) has meaningless rates.
    let step = typical_step(&measured);
    let (measured, fragments): (Vec<&IntervalRow>, Vec<&IntervalRow>) =
        measured.into_iter().partition(|r| r.end_s - r.start_s >= step / 2.0);
    if measured.is_empty() {
        return Err(AnalyzeError::NothingMeasured { path, count: all.len() });
    }
    // Intervals are stored each second: where that holds only a few transactions (TPC-C's
    // paced terminals), they are judged in groups, or chance would read as stalls.
    let grouped = group_sparse(&measured);
    let group = grouped.as_ref().map_or(1, |g| g.1);
    let measured: Vec<&IntervalRow> = match &grouped {
        Some((rows, _)) => rows.iter().collect(),
        None => measured,
    };
    let tel_path = run_dir.join(TELEMETRY_FILE);
    let mut telemetry: Option<Vec<TelemetryRow>> = if tel_path.is_file() {
        let read = read_jsonl(&tel_path)?;
        torn.extend(read.torn);
        Some(read.records)
    } else {
        None
    };
    let partial = telemetry.as_mut().and_then(|t| drop_partial_rates(t));

    let tps: Vec<f64> = measured.iter().map(|r| r.tps).collect();
    let p99s: Vec<f64> = measured.iter().map(|r| r.latency_ms.p99).filter(|p| *p > 0.0).collect();
    let stability = stability(&tps, &p99s);
    let (tps_sustained, p99_median) = (stability.tps_sustained, stability.p99_median_ms);

    let stalled = |r: &IntervalRow| {
        (tps_sustained > 0.0 && r.tps <= tps_sustained * (1.0 - opts.drop))
            || (p99_median > 0.0 && r.latency_ms.p99 > p99_median * opts.p99_factor)
    };
    let mut spans = stall_spans(&measured.iter().map(|r| stalled(r)).collect::<Vec<_>>());
    // Without --warmup-time the first intervals hold the cold start; a dip there is the
    // ramp-up every such run has, not a stall of the steady state.
    let no_warmup = all.iter().all(|r| !r.warmup);
    let ramp_up_span = match spans.first() {
        Some(&(0, last)) if no_warmup && last + 1 < measured.len() => Some(spans.remove(0)),
        _ => None,
    };

    let measured_from = measured[0].start_s;
    let mut stalls = Vec::with_capacity(spans.len() + 1);
    for &(first, last) in ramp_up_span.iter().chain(&spans) {
        let rows = &measured[first..=last];
        let (start_s, end_s) = (rows[0].start_s, rows[rows.len() - 1].end_s);
        let tps_min = rows.iter().map(|r| r.tps).fold(f64::INFINITY, f64::min);
        let p99_ms = rows.iter().map(|r| r.latency_ms.p99).fold(0.0, f64::max);
        let mut stall = Stall {
            start_s,
            end_s,
            tps_sustained,
            tps_min,
            drop_pct: if tps_sustained > 0.0 {
                ((1.0 - tps_min / tps_sustained) * 100.0).max(0.0)
            } else {
                0.0
            },
            p99_ms,
            p99_median_ms: p99_median,
            causes: Vec::new(),
            samples: 0,
        };
        if let Some(tel) = &telemetry {
            let inside = |s: &&TelemetryRow| {
                let mid = s.mid_s(step);
                mid >= start_s && mid <= end_s
            };
            let during: Vec<&TelemetryRow> = tel.iter().filter(inside).collect();
            // The sample just before: a checkpoint counted there started as the stall began.
            let lead: Vec<&TelemetryRow> = tel
                .iter()
                .filter(|s| {
                    let mid = s.mid_s(step);
                    mid < start_s && mid >= start_s - step
                })
                .collect();
            let baseline: Vec<&TelemetryRow> = tel
                .iter()
                .filter(|s| {
                    let mid = s.mid_s(step);
                    mid >= measured_from
                        && !ramp_up_span
                            .iter()
                            .chain(&spans)
                            .any(|&(a, b)| mid >= measured[a].start_s && mid <= measured[b].end_s)
                })
                .collect();
            stall.samples = during.len();
            stall.causes = attribute(&during, &baseline, &lead);
        }
        stalls.push(stall);
    }
    let ramp_up = ramp_up_span.map(|_| stalls.remove(0));
    explain_by_outages(&mut stalls, &unreachable);

    let mut notes = Vec::new();
    if let Some((n, period)) = partial {
        notes.push(format!(
            "{n} telemetry sample(s) covered less than half the usual {}s (a catch-up after a pause): \
             their rates are left out, as over a few milliseconds they read as spikes",
            fmt_s(period)
        ));
    }
    if !fragments.is_empty() {
        notes.push(format!(
            "{} interval(s) shorter than half the usual {}s left out (rates over a fragment mean nothing)",
            fragments.len(),
            fmt_s(step)
        ));
    }
    if group > 1 {
        notes.push(format!(
            "intervals judged in groups of {group} ({} s): a stored interval held fewer than {} transactions \
             (median), too few for its TPS and p99 to mean much alone",
            fmt_s(step * group as f64),
            MIN_TRANSACTIONS_TO_JUDGE
        ));
    }
    // Redo, buffer pool and client pressure over the measured phase, stall or not.
    let manifest = manifest_json(run_dir);
    let pressure = telemetry.as_ref().map(|tel| {
        let measured_tel: Vec<&TelemetryRow> = tel.iter().filter(|s| s.mid_s(step) >= measured_from).collect();
        Pressure {
            redo_capacity_bytes: redo_capacity_of(&manifest),
            ..Pressure::of(&measured_tel)
        }
    });
    let postgres = telemetry
        .as_ref()
        .map(|tel| {
            tel.iter()
                .filter(|s| s.mid_s(step) >= measured_from)
                .collect::<Vec<_>>()
        })
        .filter(|rows| is_postgres(rows));
    match &postgres {
        // InnoDB's sync-flush wording does not fit PostgreSQL: say it in its terms.
        Some(rows) => {
            notes.extend(
                pressure
                    .iter()
                    .flat_map(Pressure::notes)
                    .filter(|n| !n.starts_with("checkpoint age:")),
            );
            notes.extend(pg_checkpoint_note(rows));
        }
        None => notes.extend(pressure.iter().flat_map(Pressure::notes)),
    }
    let sync_flush = match (&telemetry, &postgres) {
        (Some(tel), None) => SyncFlushCost::of(&measured, tel, step),
        _ => None,
    };
    notes.extend(sync_flush.as_ref().and_then(SyncFlushCost::note));
    let mut warnings: Vec<Warning> = warnings::too_few_intervals(measured.len(), step * group as f64)
        .into_iter()
        .collect();
    let measured_tel: Vec<&TelemetryRow> = telemetry
        .iter()
        .flatten()
        .filter(|s| s.mid_s(step) >= measured_from)
        .collect();
    let start = telemetry
        .as_deref()
        .and_then(|rows| StartState::of_run(sampled_start(&manifest).as_ref(), rows));
    warnings.extend(warnings::leftover_flushing(&measured_tel, start.as_ref()));
    let all_tel: Vec<&TelemetryRow> = telemetry.iter().flatten().collect();
    warnings.extend(warnings::startup_transient(
        &all_tel,
        start.as_ref(),
        measured_from,
        step,
    ));
    warnings.extend(warnings::client_bound(&measured_tel, client_threads(&manifest)));
    let summary = dbperf_results::RunRecords::read(run_dir).ok().and_then(|r| r.summary);
    warnings.extend(warnings::server_lost(summary.is_some_and(|s| s.server_lost)));
    let host_idle_pct = median_of(&measured_tel, TelemetryRow::idle);

    Ok(Analysis {
        run_dir: run_dir.to_path_buf(),
        intervals: measured.len(),
        telemetry_samples: telemetry.as_ref().map(Vec::len),
        drop: opts.drop,
        p99_factor: opts.p99_factor,
        stalls,
        ramp_up,
        stability,
        pressure,
        sync_flush,
        notes,
        torn,
        unreachable,
        host_idle_pct,
        warnings,
        start,
    })
}

/// The run's manifest as JSON (`Null` when it cannot be read: what it would have said is then
/// not known).
fn manifest_json(run_dir: &Path) -> serde_json::Value {
    std::fs::read_to_string(run_dir.join("manifest.json"))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// The redo's size from the manifest's server variables.
fn redo_capacity_of(manifest: &serde_json::Value) -> Option<u64> {
    let variables: std::collections::BTreeMap<String, String> =
        serde_json::from_value(manifest.get("server")?.get("variables")?.clone()).ok()?;
    super::explain::redo_capacity(&variables)
}

/// The run's client threads, from its manifest's workload options (`None`: not recorded).
fn client_threads(manifest: &serde_json::Value) -> Option<usize> {
    manifest["workload"]["options"]["client_threads"]
        .as_u64()
        .map(|n| n as usize)
}

/// The levels the run sampled just before its workload started (`None` in runs of older
/// versions, or without server telemetry).
fn sampled_start(manifest: &serde_json::Value) -> Option<StartState> {
    serde_json::from_value(manifest.get("start_state")?.clone()).ok()
}

/// Drops the rates of the samples that cover less than half the usual period
/// ([`TelemetryRow::drop_rates`]); returns how many there were and the usual period.
fn drop_partial_rates(rows: &mut [TelemetryRow]) -> Option<(usize, f64)> {
    let periods: Vec<f64> = rows.iter().filter_map(|r| r.interval_s).filter(|d| *d > 0.0).collect();
    let period = median(&periods)?;
    let mut n = 0;
    for r in rows.iter_mut() {
        let short = |d: Option<f64>| d.is_some_and(|d| d < period / 2.0);
        if short(r.interval_s) || (r.server.is_some() && short(r.server_interval_s())) {
            r.drop_rates();
            n += 1;
        }
    }
    (n > 0).then_some((n, period))
}

/// Whether a sample's server figures are missing because the server did not answer in time.
fn unanswered(row: &TelemetryRow) -> bool {
    row.server.is_none() && matches!(row.server_error.as_deref(), Some(NO_ANSWER_QUERY | NO_ANSWER_CONNECT))
}

/// A span of consecutive measured intervals in which the server was unreachable: nothing
/// completed while the connections were reconnecting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outage {
    /// Start of its first interval, seconds since the run started.
    pub start_s: f64,
    /// End of its last interval.
    pub end_s: f64,
    /// The run ended inside it: the server had not come back.
    pub at_end: bool,
}

impl Outage {
    /// One line: `3-8 s (5 s): server unreachable; it had not come back when the run ended`.
    pub fn render(&self) -> String {
        format!(
            "{}-{} s ({} s): server unreachable, no transaction completed while connections were reconnecting{}",
            fmt_s(self.start_s),
            fmt_s(self.end_s),
            fmt_s(self.end_s - self.start_s),
            if self.at_end {
                "; it had not come back when the run ended"
            } else {
                ""
            }
        )
    }
}

/// The spans of `measured` intervals marked `server_unreachable`.
fn outages(measured: &[&IntervalRow]) -> Vec<Outage> {
    let mut spans: Vec<Outage> = Vec::new();
    let mut previous = false;
    for (i, r) in measured.iter().enumerate() {
        if r.server_unreachable {
            let at_end = i + 1 == measured.len();
            match spans.last_mut() {
                Some(o) if previous => {
                    o.end_s = r.end_s;
                    o.at_end = at_end;
                }
                _ => spans.push(Outage {
                    start_s: r.start_s,
                    end_s: r.end_s,
                    at_end,
                }),
            }
        }
        previous = r.server_unreachable;
    }
    spans
}

/// A stall that overlaps an outage is explained by it first: telemetry cannot explain a
/// server that was not there.
fn explain_by_outages(stalls: &mut [Stall], outages: &[Outage]) {
    for stall in stalls {
        if outages
            .iter()
            .any(|o| o.start_s < stall.end_s && o.end_s > stall.start_s)
        {
            stall.causes.insert(0, "the server was unreachable".to_owned());
        }
    }
}

/// Index ranges `(first, last)` of stalled intervals; two stalls separated by a single normal
/// interval are one stall that briefly recovered.
fn stall_spans(stalled: &[bool]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for (i, &s) in stalled.iter().enumerate() {
        if !s {
            continue;
        }
        match spans.last_mut() {
            Some(last) if i <= last.1 + 2 => last.1 = i,
            _ => spans.push((i, i)),
        }
    }
    spans
}

/// Transactions a measured interval should hold to be judged alone (its TPS against the
/// sustained TPS, its p99 against the median): at 2 a second, a second with none is chance.
const MIN_TRANSACTIONS_TO_JUDGE: u64 = 50;

/// Longest group [`group_sparse`] makes: the 10 s intervals TPC-C and LinkBench stored before
/// intervals were stored each second.
const MAX_GROUP: usize = 10;

/// Consecutive intervals merged in groups of the size that holds [`MIN_TRANSACTIONS_TO_JUDGE`]
/// at the median rate (at most [`MAX_GROUP`]), and that size; `None` when the intervals hold
/// enough alone (or say nothing of their counts). A group's TPS is over its whole time, its
/// p99 the highest of its intervals', and it is unreachable only if all of them were.
fn group_sparse(rows: &[&IntervalRow]) -> Option<(Vec<IntervalRow>, usize)> {
    let counts: Vec<f64> = rows.iter().map(|r| r.transactions as f64).collect();
    let typical = median(&counts)?;
    if typical >= MIN_TRANSACTIONS_TO_JUDGE as f64 || counts.iter().all(|c| *c == 0.0) {
        return None;
    }
    let k = ((MIN_TRANSACTIONS_TO_JUDGE as f64 / typical.max(1.0)).ceil() as usize).clamp(1, MAX_GROUP);
    if k < 2 || rows.len() < 2 * k {
        return None;
    }
    // Groups as even as the count allows, so none is a stray second at the end.
    let n = ((rows.len() as f64 / k as f64).round() as usize).max(1);
    let groups = (0..n)
        .map(|i| &rows[i * rows.len() / n..(i + 1) * rows.len() / n])
        .map(|c| {
            let (first, last) = (c[0], c[c.len() - 1]);
            let time: f64 = c.iter().map(|r| r.end_s - r.start_s).sum();
            let done: f64 = c.iter().map(|r| r.tps * (r.end_s - r.start_s)).sum();
            IntervalRow {
                start_s: first.start_s,
                end_s: last.end_s,
                warmup: false,
                tps: if time > 0.0 { done / time } else { 0.0 },
                transactions: c.iter().map(|r| r.transactions).sum(),
                latency_ms: P99 {
                    p99: c.iter().map(|r| r.latency_ms.p99).fold(0.0, f64::max),
                },
                server_unreachable: c.iter().all(|r| r.server_unreachable),
            }
        })
        .collect();
    Some((groups, k))
}

/// The usual interval length, used when a telemetry sample does not say what it covers.
fn typical_step(rows: &[&IntervalRow]) -> f64 {
    let steps: Vec<f64> = rows.iter().map(|r| r.end_s - r.start_s).filter(|d| *d > 0.0).collect();
    median(&steps).unwrap_or(1.0)
}

fn stability(tps: &[f64], p99s: &[f64]) -> Stability {
    let cv = mean_cv(tps).map_or(0.0, |(_, cv)| cv);
    let verdict = if tps.len() < MIN_INTERVALS_TO_JUDGE {
        "too few intervals to judge"
    } else if cv < STABLE_CV_PCT {
        "stable"
    } else if cv < VARIABLE_CV_PCT {
        "variable"
    } else {
        "unstable"
    };
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    Stability {
        tps_cv_pct: cv,
        tps_min: min(tps),
        tps_median: median(tps).unwrap_or(0.0),
        tps_sustained: quantile(tps, 0.75).unwrap_or(0.0),
        tps_max: max(tps),
        p99_min_ms: if p99s.is_empty() { 0.0 } else { min(p99s) },
        p99_median_ms: median(p99s).unwrap_or(0.0),
        p99_max_ms: max(p99s),
        verdict: verdict.to_string(),
    }
}

/// A rate during the stall that is at least twice its usual value (or appears from nothing).
fn spiked(during: Option<f64>, usual: Option<f64>) -> bool {
    match (during, usual) {
        (Some(d), Some(u)) => d > 0.0 && d >= 2.0 * u,
        (Some(d), None) => d > 0.0,
        _ => false,
    }
}

/// Whether the samples come from PostgreSQL (`pg.rs` writes `checkpoint_trigger_pct`).
fn is_postgres(rows: &[&TelemetryRow]) -> bool {
    rows.iter().any(|r| r.is_postgres())
}

/// Picks one figure of the PostgreSQL detail.
type PgFigure = fn(&PgDetail) -> Option<f64>;

/// A figure of the PostgreSQL detail (`server.pg`).
fn pg(f: PgFigure) -> impl Fn(&TelemetryRow) -> Option<f64> {
    move |r: &TelemetryRow| r.server.as_ref()?.pg.as_ref().and_then(f)
}

/// Sum of a per-interval count over the samples.
fn total(rows: &[&TelemetryRow], f: impl Fn(&TelemetryRow) -> Option<f64>) -> f64 {
    rows.iter().filter_map(|r| f(r)).sum()
}

/// PostgreSQL's checkpoint causes for a stall: the `lead` sample (just before it) counts for
/// requested checkpoints, which hurt from their start (full-page images, backend writes).
fn pg_checkpoint_causes(during: &[&TelemetryRow], baseline: &[&TelemetryRow], lead: &[&TelemetryRow]) -> Vec<String> {
    let mut causes = Vec::new();
    let trigger = max_of(during, srv(|s| s.checkpoint_trigger_pct)).unwrap_or(100.0 / 1.9);
    let distance = max_of(during, TelemetryRow::checkpoint_pct);
    let requested = total(during, srv_n(|s| s.checkpoints_requested)) + total(lead, srv_n(|s| s.checkpoints_requested));
    if requested > 0.0 {
        let reached = distance.map_or_else(String::new, |d| {
            format!(", checkpoint distance {d:.0}% of max_wal_size (requested at {trigger:.0}%)")
        });
        causes.push(format!(
            "checkpoint storm: {requested:.0} requested checkpoint(s){reached}; raise max_wal_size"
        ));
    } else if let Some(d) = distance.filter(|d| *d >= trigger) {
        causes.push(format!(
            "checkpoint distance reached {d:.0}% of max_wal_size (a checkpoint is requested at {trigger:.0}%)"
        ));
    }
    let timed = total(during, srv_n(|s| s.checkpoints_timed));
    if timed > 0.0 {
        causes.push(format!("{timed:.0} timed checkpoint(s) ran (checkpoint_timeout)"));
    }
    let figures: [(PgFigure, &str); 2] = [
        (|p| p.buffers_backend_s, "buffers written by backends themselves"),
        (|p| p.wal_fpi_s, "WAL full-page images"),
    ];
    for (key, what) in figures {
        let (d, u) = (max_of(during, pg(key)), median_of(baseline, pg(key)));
        if spiked(d, u) {
            let d = d.unwrap_or(0.0);
            causes.push(match u {
                Some(u) => format!("{what} rose to {d:.0}/s (usually {u:.0}/s)"),
                None => format!("{what} were {d:.0}/s"),
            });
        }
    }
    let temp: PgFigure = |p| p.temp_files.map(|n| n as f64);
    let temp_files = total(during, pg(temp));
    if temp_files > 0.0 && spiked(max_of(during, pg(temp)), median_of(baseline, pg(temp))) {
        causes.push(format!("{temp_files:.0} temporary file(s) were written"));
    }
    causes
}

/// The run-wide checkpoint line of a PostgreSQL run. More requested checkpoints than timed
/// ones, at least two and at least one a minute, is a checkpoint storm: WAL outgrows `max_wal_size` and
/// every checkpoint is forced early, with its full-page-image burst after it.
fn pg_checkpoint_note(rows: &[&TelemetryRow]) -> Option<String> {
    let distance = max_of(rows, TelemetryRow::checkpoint_pct)?;
    let trigger = max_of(rows, srv(|s| s.checkpoint_trigger_pct)).unwrap_or(100.0 / 1.9);
    let (requested, timed) = (
        total(rows, srv_n(|s| s.checkpoints_requested)),
        total(rows, srv_n(|s| s.checkpoints_timed)),
    );
    let span = match (rows.first(), rows.last()) {
        (Some(a), Some(b)) => b.t_s - a.t_s + b.interval_s.unwrap_or(1.0),
        _ => 0.0,
    };
    let line = format!(
        "{requested:.0} requested, {timed:.0} timed; checkpoint distance at most {distance:.0}% of max_wal_size \
         (a checkpoint is requested at {trigger:.0}%)"
    );
    Some(
        if requested >= 2.0 && requested > timed && span > 0.0 && requested / span * 60.0 >= 1.0 {
            format!(
                "checkpoint storm: a requested checkpoint every {:.1} s over {span:.0} s, {line}; raise max_wal_size",
                span / requested
            )
        } else {
            format!("checkpoints: {line}")
        },
    )
}

/// Explanations for a stall from the samples taken `during` it, against the `baseline`
/// samples of the rest of the measured phase (`lead`: the sample just before it).
fn attribute(during: &[&TelemetryRow], baseline: &[&TelemetryRow], lead: &[&TelemetryRow]) -> Vec<String> {
    if during.is_empty() {
        return Vec::new();
    }
    let mut causes = Vec::new();

    // A server that does not answer its telemetry queries is not running transactions either
    // (stopped, frozen, swapping): that is the stall, whatever else the samples show.
    let silent: Vec<&TelemetryRow> = during.iter().copied().filter(|r| unanswered(r)).collect();
    if let (Some(first), Some(last)) = (silent.first(), silent.last()) {
        let from = first.t_s - first.interval_s.unwrap_or(0.0);
        causes.push(format!(
            "the server stopped answering: {} telemetry sample(s) from {from:.1} to {:.1} s got no answer within \
             the period",
            silent.len(),
            last.t_s
        ));
    }
    // Another failure (a refused or dropped connection) explains a stall only when the server
    // was sampled outside it, not when telemetry never reached it.
    let sampled_elsewhere = baseline.iter().any(|r| r.server.is_some());
    if let Some(e) = during
        .iter()
        .filter(|r| r.server.is_none() && !unanswered(r))
        .find_map(|r| r.server_error.as_deref())
        .filter(|_| sampled_elsewhere)
    {
        causes.push(format!("the server could not be sampled: {e}"));
    }

    if is_postgres(during) {
        causes.extend(pg_checkpoint_causes(during, baseline, lead));
    } else if let Some(pct) = max_of(during, TelemetryRow::checkpoint_pct) {
        let batches = max_of(during, TelemetryRow::sync_flush_pages).filter(|p| *p > 0.0);
        if let Some(pages) = batches {
            causes.push(format!(
                "checkpoint age reached {pct:.0}% of max (sync flush: {pages:.0} pages/s in sync batches)"
            ));
        } else if during.iter().any(|s| s.in_sync_flush() == Some(true)) {
            causes.push(format!("checkpoint age reached {pct:.0}% of max (sync flush)"));
        } else if pct >= ASYNC_FLUSH_PCT {
            causes.push(format!("checkpoint age reached {pct:.0}% of max (async flush)"));
        }
    }
    if let Some(dirty) = max_of(during, srv(|s| s.dirty_pages_pct)) {
        let limit = max_of(during, srv(|s| s.max_dirty_pages_pct));
        let high = match limit {
            Some(l) if l > 0.0 => dirty >= 0.9 * l,
            _ => dirty >= 70.0,
        };
        if high {
            match limit {
                Some(l) => causes.push(format!("dirty pages were {dirty:.0}% (max_dirty_pages_pct {l:.0})")),
                None => causes.push(format!("dirty pages were {dirty:.0}%")),
            }
        }
    }
    if min_of(during, srv_n(|s| s.free_pages)) == Some(0.0) {
        causes.push("the buffer pool ran out of free pages".to_string());
    }
    let rate_spike = |key: fn(&ServerSample) -> Option<f64>, what: &str, causes: &mut Vec<String>| {
        let (d, u) = (max_of(during, srv(key)), median_of(baseline, srv(key)));
        if spiked(d, u) {
            let d = d.unwrap_or(0.0);
            match u {
                Some(u) => causes.push(format!("{what} rose to {d:.0}/s (usually {u:.0}/s)")),
                None => causes.push(format!("{what} were {d:.0}/s")),
            }
        }
    };
    rate_spike(|s| s.pages_written_s, "pages written", &mut causes);
    rate_spike(|s| s.lru_flushes_s, "LRU flushes", &mut causes);
    rate_spike(|s| s.doublewrite_pages_s, "doublewrite pages", &mut causes);
    if let (Some(h), Some(u)) = (
        max_of(during, srv_n(|s| s.history_list_length)),
        median_of(baseline, srv_n(|s| s.history_list_length)),
    ) {
        if h >= 100_000.0 && h >= 2.0 * u {
            causes.push(format!("history list length grew to {h:.0} (usually {u:.0})"));
        }
    }
    if let Some(iowait) = max_of(during, TelemetryRow::iowait) {
        let usual = median_of(baseline, TelemetryRow::iowait).unwrap_or(0.0);
        if iowait >= 20.0 && iowait >= 2.0 * usual {
            causes.push(format!("CPU iowait was {iowait:.0}% (usually {usual:.0}%)"));
        }
    }
    if let Some(disk) = busiest_disk_during(during.iter().copied()) {
        if disk.util_pct >= 90.0 {
            causes.push(format!(
                "disk {} was {:.0}% busy (w_await {:.1} ms)",
                disk.name, disk.util_pct, disk.w_await_ms
            ));
        }
    }
    if let Some(idle) = min_of(during, TelemetryRow::idle) {
        if idle < 5.0 {
            causes.push(format!("the host's CPUs were saturated ({idle:.0}% idle)"));
        }
    }
    if let Some(cpu) = max_of(during, TelemetryRow::client_cpu) {
        if cpu >= CLIENT_SATURATED_PCT {
            causes.push(format!(
                "the client was saturated ({cpu:.0}% of a core): results are client-bound"
            ));
        }
    }
    if let Some(wait) = top_wait(during) {
        causes.push(format!("top wait: {wait}"));
    }
    causes
}

/// Formats a TPS figure: no decimals from 100 up.
fn fmt_tps(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Formats seconds: integral ones without decimals.
fn fmt_s(v: f64) -> String {
    if (v - v.round()).abs() < 0.005 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

impl Stall {
    /// One line: `340-352 s: TPS fell 94% (sustained 1250 → 75) while ...; top wait: ...`.
    pub fn render(&self, telemetry: bool) -> String {
        let mut line = format!("{}-{} s: ", fmt_s(self.start_s), fmt_s(self.end_s));
        let mut what = Vec::new();
        if self.drop_pct > 0.0 {
            what.push(format!(
                "TPS fell {:.0}% (sustained {} → {})",
                self.drop_pct,
                fmt_tps(self.tps_sustained),
                fmt_tps(self.tps_min)
            ));
        }
        if self.p99_median_ms > 0.0 && self.p99_ms > self.p99_median_ms * 1.5 {
            what.push(format!(
                "p99 rose to {:.1} ms ({:.1}x the median {:.1} ms)",
                self.p99_ms,
                self.p99_ms / self.p99_median_ms,
                self.p99_median_ms
            ));
        }
        line.push_str(&what.join(" and "));
        let (waits, causes): (Vec<&String>, Vec<&String>) =
            self.causes.iter().partition(|c| c.starts_with("top wait:"));
        if !causes.is_empty() {
            line.push_str(" while ");
            line.push_str(&causes.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(" and "));
        }
        for w in &waits {
            line.push_str("; ");
            line.push_str(w);
        }
        if causes.is_empty() {
            line.push_str(match (telemetry, self.samples) {
                (false, _) => "; no telemetry recorded",
                (true, 0) => "; no telemetry sample during it",
                (true, _) => "; no telemetry explains it",
            });
        }
        line
    }
}

impl Analysis {
    /// The stalls headline when there are none: why not, or that the run was held in sync
    /// flush throughout (throttled evenly, so no interval stands out).
    pub fn stalls_line(&self) -> String {
        let held = self
            .sync_flush
            .as_ref()
            .filter(|c| c.sync_intervals > 0 && c.sync_intervals * 2 >= c.intervals);
        match held {
            Some(c) => format!(
                "stalls: none distinct, because the run was held in sync flush: {} of {} intervals, writers \
                 waiting for page flushing throughout (checkpoint age up to {}% of max); see the sync flush cost below",
                c.sync_intervals,
                c.intervals,
                self.pressure
                    .as_ref()
                    .and_then(|p| p.checkpoint_max_pct)
                    .map_or("?".to_owned(), |p| format!("{p:.0}"))
            ),
            None => format!(
                "stalls: none (no interval fell {:.0}% below the sustained TPS or rose above {}x the median p99)",
                self.drop * 100.0,
                self.p99_factor
            ),
        }
    }

    /// The ramp-up, when the run had one, as one line.
    pub fn ramp_up_line(&self) -> Option<String> {
        self.ramp_up.as_ref().map(|r| {
            format!(
                "ramp-up (not a stall: the run had no --warmup-time, so its cold start was measured): {}",
                r.render(self.telemetry_samples.is_some())
            )
        })
    }

    /// The report as text, one stall per line.
    pub fn render_text(&self) -> String {
        let s = &self.stability;
        let mut out = format!(
            "run {}: {} measured intervals, {}\n",
            self.run_dir.display(),
            self.intervals,
            match self.telemetry_samples {
                Some(n) => format!("{n} telemetry samples"),
                None => format!("no {TELEMETRY_FILE}"),
            }
        );
        out.push_str(&format!(
            "stability: {} (TPS CV {:.1}%; min {} / median {} / sustained {} / max {}; p99 min {:.1} / median {:.1} / max {:.1} ms)\n",
            s.verdict,
            s.tps_cv_pct,
            fmt_tps(s.tps_min),
            fmt_tps(s.tps_median),
            fmt_tps(s.tps_sustained),
            fmt_tps(s.tps_max),
            s.p99_min_ms,
            s.p99_median_ms,
            s.p99_max_ms
        ));
        if self.stalls.is_empty() {
            out.push_str(&self.stalls_line());
            out.push('\n');
        } else {
            out.push_str(&format!("stalls: {}\n", self.stalls.len()));
            for stall in &self.stalls {
                out.push_str("  ");
                out.push_str(&stall.render(self.telemetry_samples.is_some()));
                out.push('\n');
            }
        }
        if let Some(line) = self.ramp_up_line() {
            out.push_str(&line);
            out.push('\n');
        }
        if !self.unreachable.is_empty() {
            let total: f64 = self.unreachable.iter().map(|o| o.end_s - o.start_s).sum();
            out.push_str(&format!("server unreachable: {} s in total\n", fmt_s(total)));
            for o in &self.unreachable {
                out.push_str("  ");
                out.push_str(&o.render());
                out.push('\n');
            }
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {}\n", w.message));
        }
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        for torn in &self.torn {
            out.push_str(&format!("note: {torn}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;

    /// Writes `tps[i]` (p99 `p99[i]`) as 1-second intervals after 2 warmup intervals.
    fn write_run(dir: &Path, tps: &[f64], p99: &[f64]) {
        let mut text = String::new();
        for i in 0..2 {
            let rec = json!({"index": i, "start_s": i as f64, "end_s": i as f64 + 1.0, "warmup": true,
                             "threads": 4, "tps": 10.0, "qps": 200.0, "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": 50.0, "max": 60.0}});
            text.push_str(&format!("{rec}\n"));
        }
        for (i, (t, p)) in tps.iter().zip(p99).enumerate() {
            let start = 2.0 + i as f64;
            let rec = json!({"index": i + 2, "start_s": start, "end_s": start + 1.0, "warmup": false,
                             "threads": 4, "tps": t, "qps": t * 20.0, "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": p, "max": p * 2.0}});
            text.push_str(&format!("{rec}\n"));
        }
        fs::write(dir.join(INTERVALS_FILE), text).unwrap();
    }

    /// 1 s intervals holding `counts[i]` transactions each (no warmup), p99 5 ms (50 when none).
    fn write_counts(dir: &Path, counts: &[u64]) {
        let text: String = counts
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let p99 = if *n == 0 { 0.0 } else { 5.0 + (i % 7) as f64 * 10.0 };
                format!(
                    "{}\n",
                    json!({"index": i, "start_s": i as f64, "end_s": i as f64 + 1.0, "warmup": false,
                           "threads": 10, "transactions": n, "tps": *n as f64, "qps": *n as f64 * 30.0,
                           "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": p99, "max": p99}})
                )
            })
            .collect();
        fs::write(dir.join(INTERVALS_FILE), text).unwrap();
    }

    /// TPC-C's paced terminals: a few transactions a second, their count left to chance.
    #[test]
    fn sparse_one_second_intervals_are_judged_in_groups_so_chance_is_no_stall() {
        let tmp = tempfile::tempdir().unwrap();
        // 60 s at about 3 a second, with seconds of 0 and 1 among them.
        let steady: Vec<u64> = (0..60).map(|i| [3, 0, 5, 2, 4, 1, 3, 6, 2, 4][i % 10]).collect();
        write_counts(tmp.path(), &steady);
        let a = analyze(tmp.path(), &AnalyzeOptions::default()).unwrap();
        assert!(a.stalls.is_empty(), "{:?}", a.stalls);
        assert_eq!(a.intervals, 6, "groups of 10 s");
        assert!(a.notes.iter().any(|n| n.contains("groups of 10")), "{:?}", a.notes);
        // A real stall, 20 s with nothing done, is still one.
        let mut stalled = steady.clone();
        stalled[30..50].fill(0);
        write_counts(tmp.path(), &stalled);
        let a = analyze(tmp.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.stalls.len(), 1, "{:?}", a.stalls);
        assert_eq!((a.stalls[0].start_s, a.stalls[0].end_s), (30.0, 50.0));
        // Busy intervals are judged alone.
        write_counts(tmp.path(), &[500; 20]);
        let a = analyze(tmp.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.intervals, 20);
    }

    fn write_telemetry(dir: &Path, samples: &[serde_json::Value]) {
        let text: String = samples.iter().map(|s| format!("{s}\n")).collect();
        fs::write(dir.join(TELEMETRY_FILE), text).unwrap();
    }

    /// 30 measured seconds at ~1000 TPS, with a stall at measured seconds 10..13 (run 12-15 s).
    fn stalled_tps() -> (Vec<f64>, Vec<f64>) {
        let tps: Vec<f64> = (0..30)
            .map(|i| {
                if (10..13).contains(&i) {
                    60.0
                } else {
                    1000.0 + (i % 3) as f64 * 10.0
                }
            })
            .collect();
        let p99 = tps.iter().map(|t| if *t < 100.0 { 400.0 } else { 5.0 }).collect();
        (tps, p99)
    }

    /// PostgreSQL samples: a requested checkpoint starting in `requested_at` (a run second),
    /// with backend writes and full-page images spiking during the stall (run 12-15 s).
    fn pg_samples(requested_at: Option<u64>, distance_in_stall: f64) -> Vec<serde_json::Value> {
        (1..=32)
            .map(|t| {
                let in_stall = (13..=15).contains(&t);
                json!({"t_s": t as f64, "interval_s": 1.0, "os": null, "client": {"cpu_pct": 30.0, "rss_bytes": 1000},
                       "server": {"checkpoint_pct": if in_stall { distance_in_stall } else { 20.0 },
                                  "checkpoint_trigger_pct": 52.6,
                                  "checkpoints_requested": u64::from(requested_at == Some(t)),
                                  "checkpoints_timed": 0,
                                  "pages_written_s": 500.0,
                                  "pg": {"buffers_backend_s": if in_stall { 4000.0 } else { 100.0 },
                                         "wal_fpi_s": if in_stall { 3000.0 } else { 50.0 }, "temp_files": 0},
                                  "waits": if in_stall { json!([{"event": "IO/WALSync", "count": 3, "time_ms": 3000.0}]) }
                                           else { json!([{"event": "Client/ClientRead", "count": 1, "time_ms": 1000.0}]) }}})
            })
            .collect()
    }

    #[test]
    fn requested_checkpoints_every_few_seconds_are_a_storm_without_any_stall() {
        let rows: Vec<TelemetryRow> = pg_samples(None, 20.0)
            .into_iter()
            .map(|mut v| {
                let t = v["t_s"].as_f64().unwrap();
                v["server"]["checkpoints_requested"] = json!(u64::from((t as u64).is_multiple_of(4)));
                v["server"]["checkpoint_pct"] = json!(if (t as u64).is_multiple_of(4) { 120.0 } else { 40.0 });
                serde_json::from_value(v).unwrap()
            })
            .collect();
        let rows: Vec<&TelemetryRow> = rows.iter().collect();
        assert_eq!(
            pg_checkpoint_note(&rows).unwrap(),
            "checkpoint storm: a requested checkpoint every 4.0 s over 32 s, 8 requested, 0 timed; \
             checkpoint distance at most 120% of max_wal_size (a checkpoint is requested at 53%); raise max_wal_size"
        );
    }

    #[test]
    fn a_requested_checkpoint_during_a_postgres_stall_is_a_checkpoint_storm() {
        let dir = tempfile::tempdir().unwrap();
        let (tps, p99) = stalled_tps();
        write_run(dir.path(), &tps, &p99);
        write_telemetry(dir.path(), &pg_samples(Some(14), 61.0));
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.stalls.len(), 1, "{a:?}");
        let causes = &a.stalls[0].causes;
        assert_eq!(
            causes[0],
            "checkpoint storm: 1 requested checkpoint(s), checkpoint distance 61% of max_wal_size \
             (requested at 53%); raise max_wal_size"
        );
        assert!(
            causes.contains(&"buffers written by backends themselves rose to 4000/s (usually 100/s)".to_string()),
            "{causes:?}"
        );
        assert!(
            causes
                .iter()
                .any(|c| c.starts_with("WAL full-page images rose to 3000/s")),
            "{causes:?}"
        );
        assert_eq!(causes.last().unwrap(), "top wait: IO/WALSync");
        assert!(!causes.iter().any(|c| c.contains("sync flush")), "{causes:?}");
        // The run-wide line speaks PostgreSQL too.
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("checkpoints: 1 requested, 0 timed; checkpoint distance at most 61%")),
            "{:?}",
            a.notes
        );
        assert!(
            !a.notes.iter().any(|n| n.starts_with("checkpoint age:")),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn a_checkpoint_requested_just_before_the_stall_counts_and_one_long_before_does_not() {
        let (tps, p99) = stalled_tps();
        for (requested_at, storm) in [(Some(12), true), (Some(5), false), (None, false)] {
            let dir = tempfile::tempdir().unwrap();
            write_run(dir.path(), &tps, &p99);
            write_telemetry(dir.path(), &pg_samples(requested_at, 40.0));
            let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
            let causes = &a.stalls[0].causes;
            assert_eq!(
                causes.iter().any(|c| c.starts_with("checkpoint storm")),
                storm,
                "{requested_at:?}: {causes:?}"
            );
            // Below the trigger and with no request: no checkpoint cause at all.
            if !storm {
                assert!(!causes.iter().any(|c| c.contains("checkpoint")), "{causes:?}");
            }
        }
    }

    /// `tps[i]` over 1-second intervals with one sample each at checkpoint age `ckpt[i]`.
    fn throttled_run(dir: &Path, tps: &[f64], ckpt: &[f64]) -> Analysis {
        write_run(dir, tps, &vec![5.0; tps.len()]);
        let samples: Vec<_> = ckpt
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"t_s": 3.0 + i as f64, "interval_s": 1.0, "server": {"checkpoint_pct": c}}))
            .collect();
        write_telemetry(dir, &samples);
        analyze(dir, &AnalyzeOptions::default()).unwrap()
    }

    #[test]
    fn an_evenly_throttled_run_has_no_stall_but_its_sync_flush_cost_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        // Sync flush in 8 of 12 intervals at ~650 TPS; the 4 others at ~900: never half.
        let tps = [
            900.0, 880.0, 640.0, 660.0, 650.0, 910.0, 630.0, 655.0, 645.0, 890.0, 670.0, 650.0,
        ];
        // 93% is async flushing (writers do not wait): not sync flush.
        let ckpt = [60.0, 70.0, 98.0, 99.0, 98.0, 80.0, 97.0, 99.5, 99.0, 93.0, 97.5, 100.0];
        let a = throttled_run(dir.path(), &tps, &ckpt);
        assert!(a.stalls.is_empty(), "{:?}", a.stalls);
        let cost = a.sync_flush.as_ref().unwrap();
        assert_eq!((cost.intervals, cost.sync_intervals), (12, 8));
        assert_eq!((cost.tps_sync, cost.tps_other), (Some(650.0), Some(895.0)));
        assert!((cost.cost_pct.unwrap() - 27.4).abs() < 0.1, "{cost:?}");
        assert!(
            a.render_text().contains(
                "note: sync flush cost: 8 of 12 intervals in sync flush (checkpoint age >= 97%) ran at a median 650 TPS, \
                 the 4 below it at 895 TPS: 27% less throughput while writers waited for flushing\n"
            ),
            "{}",
            a.render_text()
        );
    }

    #[test]
    fn sync_batches_counted_by_innodb_decide_over_the_checkpoint_age() {
        let dir = tempfile::tempdir().unwrap();
        // Sync batches run in the slow intervals whatever age the once-a-second sample read
        // (91%: just after a batch); 99% with no batch is not sync flush.
        let tps = [
            1000.0, 1010.0, 400.0, 990.0, 1000.0, 420.0, 1005.0, 1000.0, 410.0, 995.0,
        ];
        let ages = [60.0, 99.0, 91.0, 80.0, 85.0, 100.0, 70.0, 75.0, 93.0, 88.0];
        let pages = [0.0, 0.0, 5000.0, 0.0, 0.0, 7000.0, 0.0, 0.0, 6000.0, 0.0];
        write_run(dir.path(), &tps, &[5.0; 10]);
        let samples: Vec<_> = (0..10)
            .map(|i| {
                json!({"t_s": 3.0 + i as f64, "interval_s": 1.0,
                       "server": {"checkpoint_pct": ages[i], "sync_flush_pages_s": pages[i]}})
            })
            .collect();
        write_telemetry(dir.path(), &samples);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        let cost = a.sync_flush.as_ref().unwrap();
        assert!(cost.counted);
        assert_eq!((cost.intervals, cost.sync_intervals), (10, 3));
        assert_eq!((cost.tps_sync, cost.tps_other), (Some(410.0), Some(1000.0)));
        assert_eq!(a.stalls.len(), 3, "{:?}", a.stalls);
        assert_eq!(
            a.stalls[0].causes[0],
            "checkpoint age reached 91% of max (sync flush: 5000 pages/s in sync batches)"
        );
        let text = a.render_text();
        assert!(
            text.contains("3 of 10 intervals in sync flush (sync flush batches counted)"),
            "{text}"
        );
        assert!(
            text.contains("sync flush batches (writers wait) counted in 3 of 10 samples"),
            "{text}"
        );
    }

    #[test]
    fn a_run_in_sync_flush_throughout_says_its_cost_needs_another_run() {
        let dir = tempfile::tempdir().unwrap();
        let a = throttled_run(dir.path(), &[600.0; 6], &[99.0; 6]);
        let cost = a.sync_flush.as_ref().unwrap();
        assert_eq!((cost.sync_intervals, cost.tps_other, cost.cost_pct), (6, None, None));
        assert!(a
            .render_text()
            .contains("every interval was in sync flush (median 600 TPS)"));
        assert!(
            a.render_text().contains(
                "stalls: none distinct, because the run was held in sync flush: 6 of 6 intervals, writers waiting"
            ),
            "{}",
            a.render_text()
        );
        // Far from the sync flush point nothing is said about it.
        let dir = tempfile::tempdir().unwrap();
        let a = throttled_run(dir.path(), &[600.0; 6], &[30.0; 6]);
        assert_eq!(a.sync_flush.as_ref().unwrap().sync_intervals, 0);
        assert!(!a.render_text().contains("sync flush cost"), "{}", a.render_text());
        // One interval below the point is no baseline.
        let dir = tempfile::tempdir().unwrap();
        let a = throttled_run(dir.path(), &[600.0, 600.0, 600.0, 900.0], &[99.0, 99.0, 99.0, 50.0]);
        assert!(
            a.render_text()
                .contains("1 interval(s) below it are too few to measure its cost inside this run"),
            "{}",
            a.render_text()
        );
    }

    #[test]
    fn a_stall_with_checkpoint_age_at_97_percent_is_attributed_to_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let (tps, p99) = stalled_tps();
        write_run(dir.path(), &tps, &p99);
        let samples: Vec<_> = (1..=32)
            .map(|t| {
                let in_stall = (13..=15).contains(&t);
                json!({"t_s": t as f64, "interval_s": 1.0, "os": null, "client": {"cpu_pct": 30.0, "rss_bytes": 1000},
                       "server": {"checkpoint_pct": if in_stall { 97.0 } else { 40.0 },
                                  "dirty_pages_pct": if in_stall { 78.0 } else { 20.0 }, "max_dirty_pages_pct": 75.0,
                                  "pages_written_s": if in_stall { 9000.0 } else { 1000.0 },
                                  "waits": if in_stall { json!([{"event": "wait/synch/mutex/innodb/log_sys_mutex", "count": 5, "time_ms": 900.0},
                                                                {"event": "wait/io/file/innodb/innodb_data_file", "count": 9, "time_ms": 100.0}]) }
                                           else { json!([]) }}})
            })
            .collect();
        write_telemetry(dir.path(), &samples);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.stalls.len(), 1, "{a:?}");
        let s = &a.stalls[0];
        assert_eq!((s.start_s, s.end_s, s.samples), (12.0, 15.0, 3));
        assert_eq!(s.tps_min, 60.0);
        assert!((s.drop_pct - 94.0).abs() < 0.5, "{}", s.drop_pct);
        assert_eq!(s.causes[0], "checkpoint age reached 97% of max (sync flush)");
        assert!(
            s.causes
                .contains(&"dirty pages were 78% (max_dirty_pages_pct 75)".to_string()),
            "{:?}",
            s.causes
        );
        assert!(
            s.causes.iter().any(|c| c.starts_with("pages written rose to 9000/s")),
            "{:?}",
            s.causes
        );
        assert_eq!(
            s.causes.last().unwrap(),
            "top wait: wait/synch/mutex/innodb/log_sys_mutex"
        );
        let text = a.render_text();
        assert!(
            text.contains("12-15 s: TPS fell 94% (sustained 1020 → 60.0) and p99 rose to 400.0 ms (80.0x the median 5.0 ms) while checkpoint age reached 97% of max (sync flush) and dirty pages"),
            "{text}"
        );
        assert!(
            text.contains("; top wait: wait/synch/mutex/innodb/log_sys_mutex\n"),
            "{text}"
        );
    }

    /// A sample as the sampler writes it: `idle`% idle CPUs, `pages` pages written per second
    /// over `server_s` seconds (`None`: no server figures, with `error`).
    fn sigstop_sample(
        t: f64,
        interval: f64,
        idle: f64,
        server: Option<(f64, f64)>,
        error: Option<&str>,
    ) -> serde_json::Value {
        json!({"t_s": t, "interval_s": interval,
               "os": {"cpus": [{"cpu": "all", "user": 100.0 - idle, "idle": idle, "iowait": 0.0}]},
               "client": {"cpu_pct": 30.0, "rss_bytes": 1000},
               "server": server.map(|(pages, server_s)| json!({"interval_s": server_s, "checkpoint_pct": 30.0,
                                                               "pages_written_s": pages, "lru_flushes_s": pages / 10.0})),
               "server_error": error})
    }

    /// The telemetry of a run whose server got SIGSTOP at 12 s and SIGCONT at 15.5 s (period
    /// 1 s): the query at 12 s got no answer, the reconnect at 13 s none in 2 s, the reconnect
    /// at 15 s an answer at 15.5 s, and the samples after it covered 20 ms and 460 ms, with
    /// the pages the server flushed on waking counted over them.
    fn sigstop_samples() -> Vec<serde_json::Value> {
        let mut v: Vec<_> = (1..=12)
            .map(|t| sigstop_sample(t as f64, 1.0, 60.0, Some((500.0, 1.0)), None))
            .collect();
        v.push(sigstop_sample(13.0, 1.0, 95.0, None, Some(NO_ANSWER_QUERY)));
        v.push(sigstop_sample(15.0, 2.0, 95.0, None, Some(NO_ANSWER_CONNECT)));
        v.push(sigstop_sample(15.52, 0.52, 90.0, None, None));
        v.push(sigstop_sample(15.54, 0.02, 0.0, Some((3722.0, 0.03)), None));
        v.push(sigstop_sample(16.0, 0.46, 2.0, Some((2000.0, 0.46)), None));
        v.extend((17..=32).map(|t| sigstop_sample(t as f64, 1.0, 60.0, Some((500.0, 1.0)), None)));
        v
    }

    #[test]
    fn a_server_that_stopped_answering_is_the_first_cause_and_catch_up_rates_are_no_cause() {
        let dir = tempfile::tempdir().unwrap();
        // No transaction from 12 to 16 s.
        let tps: Vec<f64> = (0..30)
            .map(|i| if (10..14).contains(&i) { 0.0 } else { 1000.0 })
            .collect();
        let p99: Vec<f64> = tps.iter().map(|t| if *t == 0.0 { 0.0 } else { 5.0 }).collect();
        write_run(dir.path(), &tps, &p99);
        write_telemetry(dir.path(), &sigstop_samples());
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.stalls.len(), 1, "{a:?}");
        let s = &a.stalls[0];
        assert_eq!((s.start_s, s.end_s), (12.0, 16.0));
        assert_eq!(
            s.causes[0],
            "the server stopped answering: 2 telemetry sample(s) from 12.0 to 15.0 s got no answer within the period"
        );
        // 3722 pages/s over 20 ms and 0% idle over 20 ms are noise, not causes.
        assert_eq!(s.causes.len(), 1, "{:?}", s.causes);
        assert!(
            a.notes
                .iter()
                .any(|n| n.starts_with("2 telemetry sample(s) covered less than half the usual 1s")),
            "{:?}",
            a.notes
        );
        let text = a.render_text();
        assert!(
            text.contains("while the server stopped answering: 2 telemetry sample(s)"),
            "{text}"
        );
        assert!(!text.contains("pages written") && !text.contains("saturated"), "{text}");
    }

    #[test]
    fn a_sample_over_a_fraction_of_the_period_keeps_its_levels_but_not_its_rates() {
        let mut rows: Vec<TelemetryRow> = sigstop_samples()
            .into_iter()
            .map(|v| serde_json::from_value(v).unwrap())
            .collect();
        assert_eq!(drop_partial_rates(&mut rows), Some((2, 1.0)));
        let catch_up = rows.iter().find(|r| r.t_s == 15.54).unwrap();
        assert_eq!(srv(|s| s.pages_written_s)(catch_up), None);
        assert_eq!(srv(|s| s.lru_flushes_s)(catch_up), None);
        assert_eq!(catch_up.idle(), None);
        assert_eq!(catch_up.client_cpu(), None);
        assert_eq!(catch_up.checkpoint_pct(), Some(30.0));
        // A whole-period sample keeps its rates.
        let whole = rows.iter().find(|r| r.t_s == 17.0).unwrap();
        assert_eq!(srv(|s| s.pages_written_s)(whole), Some(500.0));
        assert_eq!(whole.idle(), Some(60.0));
    }

    #[test]
    fn torn_last_records_are_skipped_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let (tps, p99) = stalled_tps();
        write_run(dir.path(), &tps, &p99);
        write_telemetry(dir.path(), &sigstop_samples());
        for file in [INTERVALS_FILE, TELEMETRY_FILE] {
            let mut f = fs::OpenOptions::new().append(true).open(dir.path().join(file)).unwrap();
            std::io::Write::write_all(&mut f, b"{\"t_s\": 33.0, \"interv").unwrap();
        }
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.intervals, 30);
        assert_eq!(a.telemetry_samples, Some(33));
        assert_eq!(a.torn.len(), 2, "{:?}", a.torn);
        let text = a.render_text();
        for file in [INTERVALS_FILE, TELEMETRY_FILE] {
            let line = format!("note: {}:", dir.path().join(file).display());
            assert!(
                text.lines()
                    .any(|l| l.starts_with(&line) && l.contains("skipped a torn last record")),
                "{text}"
            );
        }
    }

    #[test]
    fn a_stall_without_telemetry_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let (tps, p99) = stalled_tps();
        write_run(dir.path(), &tps, &p99);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.stalls.len(), 1);
        assert!(a.stalls[0].causes.is_empty());
        assert!(
            a.render_text().contains("; no telemetry recorded"),
            "{}",
            a.render_text()
        );

        // Telemetry with nothing unusual in it.
        let samples: Vec<_> = (1..=32)
            .map(|t| json!({"t_s": t as f64, "interval_s": 1.0, "os": null, "server": {"checkpoint_pct": 30.0}, "client": {"cpu_pct": 20.0, "rss_bytes": 1}}))
            .collect();
        write_telemetry(dir.path(), &samples);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert!(
            a.render_text().contains("; no telemetry explains it"),
            "{}",
            a.render_text()
        );
    }

    #[test]
    fn a_cold_start_without_warmup_is_a_ramp_up_and_a_later_dip_still_a_stall() {
        let dir = tempfile::tempdir().unwrap();
        let mut tps = vec![1000.0; 30];
        tps[0] = 300.0;
        tps[1] = 450.0;
        tps[20] = 200.0;
        let p99 = vec![4.0; 30];
        write_run(dir.path(), &tps, &p99);
        // write_run adds warmup intervals: with them the first dip is a stall like any other.
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.stalls.len(), 2, "{:?}", a.stalls);
        assert!(a.ramp_up.is_none());
        // The same intervals with no warmup at all.
        let text = fs::read_to_string(dir.path().join(INTERVALS_FILE)).unwrap();
        let no_warmup: String = text
            .lines()
            .filter(|l| l.contains("\"warmup\":false"))
            .map(|l| format!("{l}\n"))
            .collect();
        fs::write(dir.path().join(INTERVALS_FILE), no_warmup).unwrap();
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        let ramp = a.ramp_up.as_ref().expect("a ramp-up");
        assert_eq!((ramp.start_s, ramp.end_s, ramp.tps_min), (2.0, 4.0, 300.0));
        assert_eq!(a.stalls.len(), 1, "{:?}", a.stalls);
        assert_eq!(a.stalls[0].start_s, 22.0);
        let out = a.render_text();
        assert!(out.contains("stalls: 1\n"), "{out}");
        assert!(out.contains("ramp-up (not a stall"), "{out}");
        // A run slow from its first to its last interval has no ramp-up to set apart.
        let slow = tempfile::tempdir().unwrap();
        fs::write(
            slow.path().join(INTERVALS_FILE),
            (0..3)
                .map(|i| {
                    let rec = json!({"index": i, "start_s": i as f64, "end_s": i as f64 + 1.0, "warmup": false,
                                     "threads": 4, "tps": 10.0, "qps": 200.0, "latency_ms": {"p99": 50.0}});
                    format!("{rec}\n")
                })
                .collect::<String>(),
        )
        .unwrap();
        let a = analyze(slow.path(), &AnalyzeOptions::default()).unwrap();
        assert!(a.ramp_up.is_none() && a.stalls.is_empty(), "{a:?}");
    }

    /// Five steady intervals are not "stable": too few to say, with a machine-readable warning.
    #[test]
    fn fewer_than_ten_intervals_get_no_verdict_but_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        write_run(dir.path(), &[1000.0, 1010.0, 990.0, 1000.0, 1005.0], &[4.0; 5]);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.stability.verdict, "too few intervals to judge");
        assert_eq!(a.warnings.len(), 1, "{:?}", a.warnings);
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["warnings"][0]["kind"], "too_few_intervals", "{json}");
        assert_eq!(json["warnings"][0]["evidence"]["intervals"], 5, "{json}");
        assert!(
            a.render_text()
                .contains("warning: 5 measured interval(s) of 1 s: too few"),
            "{}",
            a.render_text()
        );
        // Ten are enough.
        let dir = tempfile::tempdir().unwrap();
        write_run(dir.path(), &[1000.0; 10], &[4.0; 10]);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!((a.stability.verdict.as_str(), a.warnings.len()), ("stable", 0));
    }

    #[test]
    fn a_stable_run_has_no_stall_and_a_low_cv() {
        let dir = tempfile::tempdir().unwrap();
        let tps: Vec<f64> = (0..60).map(|i| 1000.0 + (i % 5) as f64 * 5.0).collect();
        write_run(dir.path(), &tps, &vec![4.0; 60]);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert!(a.stalls.is_empty());
        assert_eq!(a.intervals, 60);
        assert!(a.stability.tps_cv_pct < 1.0, "{:?}", a.stability);
        assert_eq!(a.stability.verdict, "stable");
        assert_eq!((a.stability.tps_min, a.stability.tps_max), (1000.0, 1020.0));
        assert!(a.render_text().contains("stalls: none"));
    }

    #[test]
    fn a_run_that_stalls_every_other_second_is_judged_against_its_sustained_tps() {
        // The sync-flush sawtooth: 1000 TPS, then 300 while the page cleaner catches up. The
        // median (650) sits between the two levels, so no interval is half of it; against the
        // sustained 1000 every dip is a stall.
        let dir = tempfile::tempdir().unwrap();
        let tps: Vec<f64> = (0..20).map(|i| if i % 4 < 2 { 1000.0 } else { 300.0 }).collect();
        write_run(dir.path(), &tps, &[20.0; 20]);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(a.stability.tps_median, 650.0);
        assert_eq!(a.stability.tps_sustained, 1000.0);
        assert_eq!(a.stalls.len(), 5, "{}", a.render_text());
        assert_eq!((a.stalls[0].start_s, a.stalls[0].end_s), (4.0, 6.0));
        assert!(a.render_text().contains("4-6 s: TPS fell 70% (sustained 1000 → 300)"));
    }

    #[test]
    fn client_saturation_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let (tps, p99) = stalled_tps();
        write_run(dir.path(), &tps, &p99);
        let samples: Vec<_> = (1..=32)
            .map(|t| json!({"t_s": t as f64, "interval_s": 1.0, "os": null, "server": null, "client": {"cpu_pct": 99.0, "rss_bytes": 1}}))
            .collect();
        write_telemetry(dir.path(), &samples);
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(
            a.stalls[0].causes,
            ["the client was saturated (99% of a core): results are client-bound"]
        );
        assert!(a.notes[0].contains("results are client-bound"), "{:?}", a.notes);
        assert!(a.render_text().contains("note: the client was saturated"));
    }

    #[test]
    fn a_directory_without_intervals_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = analyze(dir.path(), &AnalyzeOptions::default()).unwrap_err().to_string();
        assert!(
            e.contains("intervals.jsonl not found") && e.contains("run directory"),
            "{e}"
        );
    }

    #[test]
    fn a_trailing_fragment_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        write_run(dir.path(), &[1000.0; 10], &[4.0; 10]);
        let frag = json!({"index": 12, "start_s": 12.0, "end_s": 12.000000001, "warmup": false, "threads": 4,
                          "tps": 16e9, "qps": 1.0, "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": 4.0, "max": 5.0}});
        let path = dir.path().join(INTERVALS_FILE);
        fs::write(&path, format!("{}{frag}\n", fs::read_to_string(&path).unwrap())).unwrap();
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!((a.intervals, a.stability.tps_max), (10, 1000.0));
        assert!(a.notes[0].starts_with("1 interval(s) shorter"), "{:?}", a.notes);
    }

    #[test]
    fn stalls_one_interval_apart_are_merged() {
        assert_eq!(
            stall_spans(&[false, true, false, true, false, false, true]),
            [(1, 3), (6, 6)]
        );
    }

    #[test]
    fn intervals_with_the_server_unreachable_are_listed_and_explain_the_stall() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..10 {
            let down = i >= 6;
            let rec = json!({"index": i, "start_s": i as f64, "end_s": i as f64 + 1.0, "warmup": false,
                             "threads": 4, "tps": if down { 0.0 } else { 1000.0 }, "qps": 0.0,
                             "latency_ms": {"p50": 1.0, "p95": 2.0, "p99": 3.0, "max": 4.0},
                             "server_unreachable": down});
            text.push_str(&format!("{rec}\n"));
        }
        fs::write(dir.path().join(INTERVALS_FILE), text).unwrap();
        let a = analyze(dir.path(), &AnalyzeOptions::default()).unwrap();
        assert_eq!(
            a.unreachable,
            [Outage {
                start_s: 6.0,
                end_s: 10.0,
                at_end: true
            }]
        );
        assert_eq!(a.stalls.len(), 1);
        assert_eq!(a.stalls[0].causes[0], "the server was unreachable");
        let text = a.render_text();
        assert!(
            text.contains(
                "server unreachable: 4 s in total\n  6-10 s (4 s): server unreachable, no transaction completed \
                 while connections were reconnecting; it had not come back when the run ended"
            ),
            "{text}"
        );
        // Lines written before the key existed read as reachable.
        write_run(dir.path(), &[100.0; 5], &[3.0; 5]);
        assert!(analyze(dir.path(), &AnalyzeOptions::default())
            .unwrap()
            .unreachable
            .is_empty());
    }
}
