//! What the server and the host were under over a run, from `telemetry.jsonl`: the rows as
//! read back ([`TelemetryRow`]), and [`Pressure`], the run-wide figures (checkpoint age, time
//! in sync flush, dirty pages, top wait, client CPU) that `dbperf analyze` notes and
//! comparisons put side by side.

use serde::Serialize;

use dbperf_core::stats::median;
use dbperf_results::telemetry::wait_totals;
use dbperf_results::telemetry::ServerSample;
pub(crate) use dbperf_results::telemetry::TelemetryRow;

/// Client CPU (percent of one core) from which results are called client-bound.
pub const CLIENT_SATURATED_PCT: f64 = 90.0;
/// Checkpoint age (percent of its maximum) read as "in sync flush".
///
/// The maximum dbperf records is the sync point itself: MariaDB's `Innodb_checkpoint_max_age`
/// (log_sys.max_checkpoint_age) and MySQL's `log_max_modified_age_sync`. Past it every writer
/// waits for page flushing ("furious flushing"), which holds the age just under the maximum,
/// so a once-a-second sample taken during sync flush reads 97-100%.
pub const SYNC_FLUSH_PCT: f64 = 97.0;
/// Checkpoint age (percent of its maximum) from which InnoDB flushes ahead asynchronously:
/// MariaDB's max_modified_age_async is the maximum less an eighth (87.5%); MySQL 8.0's
/// log_max_modified_age_async is about 93% of its sync point. Writers do not wait there.
pub const ASYNC_FLUSH_PCT: f64 = 87.5;

/// Run-wide pressure over a set of telemetry samples (the measured phase of a run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pressure {
    /// Samples it was computed from.
    pub samples: usize,
    /// Highest checkpoint age, percent of its maximum (`None`: not reported by the server).
    pub checkpoint_max_pct: Option<f64>,
    /// The redo's size from the run's server variables ([`super::explain::redo_capacity`]),
    /// bytes; `None` when they do not say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redo_capacity_bytes: Option<u64>,
    /// Highest checkpoint age, bytes (`None`: not reported by the server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_max_bytes: Option<u64>,
    /// Samples with a checkpoint age (MySQL/MariaDB only: PostgreSQL has no sync flush
    /// point, its checkpoint distance goes past 100% as WAL outgrows `max_wal_size`).
    pub checkpoint_samples: usize,
    /// ... of which in sync flush ([`TelemetryRow::in_sync_flush`]).
    pub sync_flush_samples: usize,
    /// Whether sync flush was told by InnoDB's sync-batch counter (else by checkpoint age).
    pub sync_flush_counted: bool,
    /// Requested (not timed) checkpoints over the samples (PostgreSQL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoints_requested: Option<f64>,
    /// Highest dirty pages, percent of the buffer pool.
    pub dirty_max_pct: Option<f64>,
    /// The server's `innodb_max_dirty_pages_pct`.
    pub max_dirty_pages_pct: Option<f64>,
    /// The wait event with the most time over the samples (Performance Schema).
    pub top_wait: Option<String>,
    /// Highest client CPU, percent of one core.
    pub client_cpu_max_pct: Option<f64>,
    /// Samples with a client CPU figure.
    pub client_samples: usize,
    /// ... of which at or above [`CLIENT_SATURATED_PCT`].
    pub client_saturated_samples: usize,
}

impl Pressure {
    /// Summarises `rows`.
    pub(crate) fn of(rows: &[&TelemetryRow]) -> Pressure {
        let ckpt: Vec<f64> = rows.iter().filter_map(|s| s.checkpoint_pct()).collect();
        let cpus: Vec<f64> = rows.iter().filter_map(|s| s.client_cpu()).collect();
        let requested: Vec<f64> = rows
            .iter()
            .filter_map(|r| srv_n(|s| s.checkpoints_requested)(r))
            .collect();
        let postgres = rows.iter().any(|r| r.is_postgres());
        let age = if postgres { &[][..] } else { &ckpt[..] };
        Pressure {
            samples: rows.len(),
            checkpoint_max_pct: ckpt.iter().copied().reduce(f64::max),
            redo_capacity_bytes: None,
            checkpoint_max_bytes: rows
                .iter()
                .filter_map(|r| r.server.as_ref()?.checkpoint_age_bytes)
                .max(),
            checkpoint_samples: age.len(),
            sync_flush_samples: rows.iter().filter(|r| r.in_sync_flush() == Some(true)).count(),
            sync_flush_counted: rows.iter().any(|r| r.sync_flush_pages().is_some()),
            checkpoints_requested: (!requested.is_empty()).then(|| requested.iter().sum()),
            dirty_max_pct: max_of(rows, srv(|s| s.dirty_pages_pct)),
            max_dirty_pages_pct: rows.iter().find_map(|r| srv(|s| s.max_dirty_pages_pct)(r)),
            top_wait: top_wait(rows),
            client_cpu_max_pct: cpus.iter().copied().reduce(f64::max),
            client_samples: cpus.len(),
            client_saturated_samples: cpus.iter().filter(|c| **c >= CLIENT_SATURATED_PCT).count(),
        }
    }

    /// Percent of the samples with a checkpoint age that were in sync flush.
    pub fn sync_flush_pct(&self) -> Option<f64> {
        (self.checkpoint_samples > 0).then(|| self.sync_flush_samples as f64 * 100.0 / self.checkpoint_samples as f64)
    }

    /// Whether the client was saturated in at least a quarter of the samples.
    pub fn client_bound(&self) -> bool {
        self.client_saturated_samples > 0 && self.client_saturated_samples * 4 >= self.client_samples
    }

    /// Findings worth a line of their own: checkpoint pressure, dirty pages, a saturated client.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        // A checkpoint age held near its maximum means the server flushes synchronously to
        // keep up, stall or not.
        if let Some(max) = self.checkpoint_max_pct {
            let how = if self.sync_flush_counted {
                "sync flush batches (writers wait) counted".to_owned()
            } else {
                format!("at or above {SYNC_FLUSH_PCT:.0}% (sync flush, writers wait)")
            };
            notes.push(format!(
                "checkpoint age: at most {max:.0}% of its maximum (the sync flush point); {how} in {} of {} samples",
                self.sync_flush_samples, self.checkpoint_samples
            ));
        }
        if let Some(max) = self.dirty_max_pct {
            notes.push(match self.max_dirty_pages_pct {
                Some(l) => {
                    format!("dirty pages: at most {max:.0}% of the buffer pool (innodb_max_dirty_pages_pct {l:.0})")
                }
                None => format!("dirty pages: at most {max:.0}% of the buffer pool"),
            });
        }
        if self.client_bound() {
            notes.push(format!(
                "the client was saturated (CPU >= {CLIENT_SATURATED_PCT:.0}% of a core) in {} of {} samples: \
                 results are client-bound",
                self.client_saturated_samples, self.client_samples
            ));
        }
        notes
    }
}

/// Whether a telemetry row shows InnoDB in sync flush (the analysis's rule).
pub(crate) trait SyncFlush {
    /// Whether InnoDB was in sync flush (writers waiting for page flushing) during this
    /// sample: sync flush batches counted when the counter was sampled, else a checkpoint age
    /// at or above [`SYNC_FLUSH_PCT`]. `None` without either (and on PostgreSQL).
    fn in_sync_flush(&self) -> Option<bool>;
}

impl SyncFlush for TelemetryRow {
    fn in_sync_flush(&self) -> Option<bool> {
        if self.is_postgres() {
            return None;
        }
        match self.sync_flush_pages() {
            Some(pages) => Some(pages > 0.0),
            None => self.checkpoint_pct().map(|p| p >= SYNC_FLUSH_PCT),
        }
    }
}

/// A server figure of a row, for [`max_of`] and friends: `srv(|s| s.dirty_pages_pct)`.
pub(crate) fn srv(f: impl Fn(&ServerSample) -> Option<f64>) -> impl Fn(&TelemetryRow) -> Option<f64> {
    move |r: &TelemetryRow| r.server.as_ref().and_then(&f)
}

/// A server count or gauge of a row, as a float: `srv_n(|s| s.free_pages)`.
pub(crate) fn srv_n(f: impl Fn(&ServerSample) -> Option<u64>) -> impl Fn(&TelemetryRow) -> Option<f64> {
    move |r: &TelemetryRow| r.server.as_ref().and_then(&f).map(|v| v as f64)
}

pub(crate) fn max_of(rows: &[&TelemetryRow], f: impl Fn(&TelemetryRow) -> Option<f64>) -> Option<f64> {
    rows.iter().filter_map(|r| f(r)).reduce(f64::max)
}

pub(crate) fn min_of(rows: &[&TelemetryRow], f: impl Fn(&TelemetryRow) -> Option<f64>) -> Option<f64> {
    rows.iter().filter_map(|r| f(r)).reduce(f64::min)
}

pub(crate) fn median_of(rows: &[&TelemetryRow], f: impl Fn(&TelemetryRow) -> Option<f64>) -> Option<f64> {
    median(&rows.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
}

/// The wait event with the most time over the samples.
pub(crate) fn top_wait(rows: &[&TelemetryRow]) -> Option<String> {
    wait_totals(rows.iter().copied()).into_iter().next().map(|(e, _)| e)
}
