//! The rows of `telemetry.jsonl`, as types: what the telemetry thread (`telemetry/sampler.rs`)
//! writes once per period and what the analysis, the reports and the catalog read back. One
//! [`TelemetryRow`] holds the OS's figures ([`OsSample`]), the server's ([`ServerSample`],
//! with [`PgDetail`] on PostgreSQL) and dbperf's own ([`ClientSample`]).
//! The figures readers take off rows are here once: the top waits ([`wait_totals`]) and the
//! disks, one function per question ([`OsSample::busiest_disk`] in one sample,
//! [`busiest_disk_during`] a window such as a stall, [`disk_written_most`] over a run).
//!
//! A figure a server version does not offer stays `None`; readers show it as not available,
//! never as 0. A file written by an older dbperf lacks some fields: every optional part
//! defaults, so such files still read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What dbperf itself used in the period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientSample {
    /// CPU time of the dbperf process over the period, percent of one core.
    pub cpu_pct: f64,
    /// Resident memory at the sample, bytes.
    pub rss_bytes: u64,
}

/// One line of `telemetry.jsonl`. Every part but `t_s` may be missing in a file written by
/// an older dbperf (or cut short), so each is optional here; the sampler fills them all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetryRow {
    /// End of the period, seconds since the run's time zero (the intervals' clock).
    pub t_s: f64,
    /// Length of the period, seconds.
    #[serde(default)]
    pub interval_s: Option<f64>,
    #[serde(default)]
    pub os: Option<OsSample>,
    #[serde(default)]
    pub server: Option<ServerSample>,
    #[serde(default)]
    pub client: Option<ClientSample>,
    /// Why `server` is missing, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_error: Option<String>,
    /// The database host's OS over the period, when it is not the client's (`--server-host`):
    /// its newest sample, streamed from `dbperf host --stream` there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host_os: Option<OsSample>,
    /// Why `server_host_os` is missing, when a server host was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host_error: Option<String>,
    /// The stream from the server host has ended (its ssh connection lost, or never made): no
    /// sample comes from there for the rest of the run. A period that only lacks a late
    /// sample has `server_host_error` without this.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server_host_lost: bool,
}

/// One wait event's share of an interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wait {
    /// Performance Schema event name, e.g. `wait/synch/sxlock/innodb/index_tree_rw_lock`.
    pub event: String,
    /// Waits in the interval.
    pub count: u64,
    /// Time waited in the interval, summed over threads, in milliseconds.
    pub time_ms: f64,
}

/// One sample. Rates (`*_s`, the maps, `waits`) are per second over the interval since the
/// previous sample and are absent in the first (priming) sample, where `interval_s` is `None`.
/// A field the server version does not offer stays `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerSample {
    /// Seconds since the previous sample (monotonic); `None` for the first sample.
    pub interval_s: Option<f64>,
    /// Wall time this sample's queries took, in milliseconds.
    pub query_ms: f64,
    pub checkpoint_age_bytes: Option<u64>,
    pub checkpoint_max_bytes: Option<u64>,
    /// `checkpoint_age_bytes / checkpoint_max_bytes × 100`.
    pub checkpoint_pct: Option<f64>,
    pub redo_written_bytes_s: Option<f64>,
    pub dirty_pages_pct: Option<f64>,
    pub max_dirty_pages_pct: Option<f64>,
    pub free_pages: Option<u64>,
    pub pages_read_s: Option<f64>,
    pub pages_created_s: Option<f64>,
    pub pages_written_s: Option<f64>,
    pub lru_flushes_s: Option<f64>,
    /// Pages written by InnoDB's sync flush batches (INNODB_METRICS
    /// `buffer_flush_sync_total_pages`, which the sampler enables): above 0, writers waited
    /// for flushing in the interval. `None` where the counter could not be enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_flush_pages_s: Option<f64>,
    pub doublewrite_pages_s: Option<f64>,
    pub history_list_length: Option<u64>,
    /// PostgreSQL: the checkpointer was writing a checkpoint at the sample (its wait event was
    /// not `CheckpointerMain`, where it idles between checkpoints).
    pub checkpoint_in_progress: Option<bool>,
    pub rows_read_s: Option<f64>,
    pub rows_inserted_s: Option<f64>,
    pub rows_updated_s: Option<f64>,
    pub rows_deleted_s: Option<f64>,
    pub threads_running: Option<u64>,
    /// Rate of every numeric `SHOW GLOBAL STATUS` counter that changed (gauges left out).
    pub status_rates: BTreeMap<String, f64>,
    /// Rate of every enabled INNODB_METRICS counter that changed (`TYPE='value'` gauges left out).
    pub innodb_metrics: BTreeMap<String, f64>,
    /// Top wait events by time in the interval; empty when performance_schema is OFF.
    /// (PostgreSQL: sampled from `pg_stat_activity`, see `pg.rs`.)
    pub waits: Vec<Wait>,
    /// PostgreSQL: checkpoints requested in the interval (by WAL volume — the distance passed
    /// [`ServerSample::checkpoint_trigger_pct`] — or by a `CHECKPOINT` command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints_requested: Option<u64>,
    /// PostgreSQL: checkpoints started by `checkpoint_timeout` in the interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints_timed: Option<u64>,
    /// PostgreSQL: the `checkpoint_pct` at which a checkpoint is requested
    /// (`100 / (1 + checkpoint_completion_target)`); what sync flush is to InnoDB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_trigger_pct: Option<f64>,
    /// PostgreSQL only: checkpointer, WAL, I/O, temp files, vacuum (`pg.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pg: Option<PgDetail>,
}

impl ServerSample {
    /// Checkpoint age in percent of its maximum (the sync flush point): as the server gave it,
    /// else from the bytes. The one definition the reports' percentages use.
    pub fn checkpoint_level_pct(&self) -> Option<f64> {
        self.checkpoint_pct.or_else(|| {
            let (age, max) = (self.checkpoint_age_bytes?, self.checkpoint_max_bytes?);
            (max > 0).then(|| age as f64 * 100.0 / max as f64)
        })
    }
}

/// What only PostgreSQL reports, per interval (rates per second, counts in the interval) or
/// at the sample (gauges). Absent for the MySQL family.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PgDetail {
    /// Checkpoint write and sync time spent in the interval, ms.
    pub checkpoint_write_ms: Option<f64>,
    pub checkpoint_sync_ms: Option<f64>,
    /// Buffers written by the checkpointer, the background writer and client backends, per second.
    pub buffers_checkpoint_s: Option<f64>,
    pub buffers_clean_s: Option<f64>,
    pub buffers_backend_s: Option<f64>,
    pub buffers_alloc_s: Option<f64>,
    pub wal_records_s: Option<f64>,
    /// Full-page images written to WAL per second (high right after a checkpoint).
    pub wal_fpi_s: Option<f64>,
    /// Times WAL buffers were full and a backend had to write WAL itself.
    pub wal_buffers_full_s: Option<f64>,
    /// Temporary files created in the interval and bytes written to them per second.
    pub temp_files: Option<u64>,
    pub temp_bytes_s: Option<f64>,
    /// Dead tuples in the sampled database's tables (`pg_stat_all_tables.n_dead_tup`), gauge.
    pub dead_tuples: Option<u64>,
    /// Autovacuum workers running at the sample.
    pub autovacuum_workers: Option<u64>,
    /// Autovacuum and autoanalyze runs finished in the interval (sampled database).
    pub autovacuum_runs: Option<u64>,
    /// Active client backends not waiting (on CPU) at the sample.
    pub on_cpu: Option<u64>,
    /// `pg_stat_io` rates (16+) summed per backend type: `BACKEND_TYPE.reads|writes|extends|fsyncs|evictions`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub io: BTreeMap<String, f64>,
}

/// What the OS did between two calls of `OsSampler::sample`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OsSample {
    /// `all` first, then `cpu0`, `cpu1`, ...
    pub cpus: Vec<CpuUsage>,
    /// Context switches per second, all CPUs.
    pub ctxt_per_s: f64,
    /// Runnable tasks at the end of the interval.
    pub procs_running: u64,
    /// Tasks blocked on I/O at the end of the interval.
    pub procs_blocked: u64,
    /// Memory at the end of the interval.
    pub mem: MemInfo,
    /// Whole disks (partitions, loop and ram devices left out while a whole disk exists).
    pub disks: Vec<DiskIo>,
    /// Every network interface, loopback included.
    pub net: Vec<NetIo>,
}

/// Share of one CPU's (or all CPUs') time in each state over the interval, percent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuUsage {
    /// `all`, or `cpu0`, `cpu1`, ...
    pub cpu: String,
    /// User mode (guest time included, as the kernel counts it).
    pub user: f64,
    /// User mode at low priority.
    pub nice: f64,
    /// Kernel mode.
    pub sys: f64,
    /// Idle with I/O outstanding.
    pub iowait: f64,
    /// Hardware interrupts.
    pub irq: f64,
    /// Software interrupts.
    pub softirq: f64,
    /// Taken by the hypervisor.
    pub steal: f64,
    /// Idle.
    pub idle: f64,
}

/// Memory, from `/proc/meminfo`, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemInfo {
    /// `MemTotal`.
    pub total_bytes: u64,
    /// `MemAvailable`: what can be allocated without swapping.
    pub available_bytes: u64,
    /// `MemFree`.
    pub free_bytes: u64,
    /// `Cached`: page cache.
    pub cached_bytes: u64,
    /// `Dirty`: page cache waiting to be written back.
    pub dirty_bytes: u64,
}

/// One block device over the interval, with `iostat -x`'s columns and formulas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DiskIo {
    /// Device name (`vda`, `nvme0n1`, ...).
    pub name: String,
    /// Reads completed per second.
    pub r_s: f64,
    /// Writes completed per second.
    pub w_s: f64,
    /// Reads merged per second.
    pub rrqm_s: f64,
    /// Writes merged per second.
    pub wrqm_s: f64,
    /// KiB read per second (sectors are 512 bytes whatever the device's block size).
    pub rkb_s: f64,
    /// KiB written per second.
    pub wkb_s: f64,
    /// Mean time a read took, queueing included, ms (0 without reads).
    pub r_await_ms: f64,
    /// Mean time a write took, queueing included, ms (0 without writes).
    pub w_await_ms: f64,
    /// Mean number of requests in flight (weighted time in queue / elapsed time).
    pub aqu_sz: f64,
    /// Share of the time the device had I/O in flight, percent.
    pub util_pct: f64,
}

/// One network interface over the interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetIo {
    /// Interface name (`lo`, `eth0`, ...).
    pub iface: String,
    /// Bytes received per second.
    pub rx_bytes_s: f64,
    /// Bytes sent per second.
    pub tx_bytes_s: f64,
    /// Packets received per second.
    pub rx_packets_s: f64,
    /// Packets sent per second.
    pub tx_packets_s: f64,
}

/// `server_error` of a sample whose server queries got no answer within the period (a hung or
/// stopped server).
pub const NO_ANSWER_QUERY: &str = "the server did not answer the telemetry queries within the period";
/// `server_error` of a sample whose reconnect got no answer in time.
pub const NO_ANSWER_CONNECT: &str = "the server did not answer the telemetry connection in time";

/// INNODB_METRICS counter of single-page flushes (one per user thread that found no free page
/// and flushed a page itself); the sampler enables it wherever the server has it.
pub const SINGLE_FLUSH_METRIC: &str = "buffer_LRU_single_flush_num_scan";

/// INNODB_METRICS counter of pages evicted from the LRU: `pages freed/s` where no status
/// variable counts them (MySQL); the sampler enables it wherever the server has it.
pub const LRU_EVICT_METRIC: &str = "buffer_LRU_batch_evict_total_pages";

/// INNODB_METRICS counters of pages scanned looking for a page to free, by user threads'
/// searches and by the page cleaner's LRU batches (`LRU pages scanned/s`: study 000's
/// "excessive page scanning"); enabled by the sampler wherever the server has them.
pub const LRU_SCAN_METRICS: [&str; 2] = ["buffer_LRU_search_scanned", "buffer_LRU_batch_scanned"];

/// Wait classes left out of the top waits: `wait/io/table/` and `wait/lock/table/` time every
/// row access of every statement (the handler call itself, with any mutex, lock or file wait
/// inside it nested under it), so they would head the list in any busy interval and hide the
/// contended mutex, rw-lock or file below them.
pub const NOT_A_CONTENTION_POINT: [&str; 2] = ["wait/io/table/", "wait/lock/table/"];

/// Whether `event` can head the top waits (see [`NOT_A_CONTENTION_POINT`]).
pub fn is_contention_point(event: &str) -> bool {
    !NOT_A_CONTENTION_POINT.iter().any(|p| event.starts_with(p))
}

/// Milliseconds waited per contention point over `rows`, the longest first (ties by name);
/// events with no time are left out. Runs recorded before the per-row table waits were left
/// out of the samples still have them: they are dropped here.
pub fn wait_totals<'a>(rows: impl IntoIterator<Item = &'a TelemetryRow>) -> Vec<(String, f64)> {
    let mut time: std::collections::BTreeMap<&str, f64> = std::collections::BTreeMap::new();
    for w in rows
        .into_iter()
        .filter_map(|r| r.server.as_ref())
        .flat_map(|s| &s.waits)
    {
        if is_contention_point(&w.event) {
            *time.entry(w.event.as_str()).or_default() += w.time_ms;
        }
    }
    let mut waits: Vec<(String, f64)> = time
        .into_iter()
        .filter(|(_, t)| *t > 0.0)
        .map(|(e, t)| (e.to_owned(), t))
        .collect();
    waits.sort_by(|a, b| b.1.total_cmp(&a.1));
    waits
}

impl OsSample {
    /// The disk that had I/O in flight for the largest share of the sample's period (the
    /// highest `util_pct`), `None` without disks: the catalog's `disk` column of each row.
    pub fn busiest_disk(&self) -> Option<&DiskIo> {
        self.disks.iter().max_by(|a, b| a.util_pct.total_cmp(&b.util_pct))
    }
}

/// The disk at its busiest in any one sample of `rows` (a stall's samples): the highest
/// [`OsSample::busiest_disk`] of them, with that sample's figures (its `w_await_ms`).
pub fn busiest_disk_during<'a>(rows: impl IntoIterator<Item = &'a TelemetryRow>) -> Option<&'a DiskIo> {
    rows.into_iter()
        .filter_map(|r| r.server_os()?.busiest_disk())
        .max_by(|a, b| a.util_pct.total_cmp(&b.util_pct))
}

/// The disk written most over `rows` (the sum of its writes per second over the samples): the
/// disk the run's data went to, which a run's I/O chart draws.
pub fn disk_written_most<'a>(rows: impl IntoIterator<Item = &'a TelemetryRow>) -> Option<&'a str> {
    let mut writes: BTreeMap<&str, f64> = BTreeMap::new();
    for d in rows
        .into_iter()
        .filter_map(TelemetryRow::server_os)
        .flat_map(|os| &os.disks)
    {
        *writes.entry(d.name.as_str()).or_default() += d.w_s;
    }
    writes.into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|(n, _)| n)
}

/// The figures a reader takes off a row.
/// The state a run started in, from its first telemetry samples (before any warmup): what the
/// server was still doing when the workload began. Points of one comparison should start alike;
/// a point that starts where the previous one left its flushing measures that flushing too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StartState {
    /// Checkpoint age, percent of its maximum (PostgreSQL: WAL since the last checkpoint,
    /// percent of `max_wal_size`), in the first sample.
    pub checkpoint_pct: Option<f64>,
    /// Dirty pages, percent (InnoDB's ratio), in the first sample.
    pub dirty_pct: Option<f64>,
    /// Pages written per second in the first sample that has a rate (the first primes them).
    pub pages_written_s: Option<f64>,
    /// InnoDB's history list length in the first sample.
    pub history_list_length: Option<u64>,
    /// PostgreSQL: a checkpoint was being written when the run began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_in_progress: Option<bool>,
}

impl StartState {
    /// The levels of one server sample (its rates are not kept): the sample a run takes just
    /// before its workload starts, recorded in its manifest.
    pub fn of_sample(s: &ServerSample) -> StartState {
        StartState {
            checkpoint_pct: s.checkpoint_level_pct(),
            dirty_pct: s.dirty_pages_pct,
            pages_written_s: None,
            history_list_length: s.history_list_length,
            checkpoint_in_progress: s.checkpoint_in_progress,
        }
    }

    /// A run's start: the levels sampled before its workload began (`before`, from its
    /// manifest; runs of older versions have none) with the rate of pages written of its first
    /// telemetry rows, else what its first rows say ([`StartState::of`]).
    pub fn of_run(before: Option<&StartState>, rows: &[TelemetryRow]) -> Option<StartState> {
        let from_rows = StartState::of(rows);
        match before {
            Some(b) => Some(StartState {
                pages_written_s: from_rows.as_ref().and_then(|r| r.pages_written_s),
                ..b.clone()
            }),
            None => from_rows,
        }
    }

    /// From a run's telemetry rows in time order; `None` without a server sample.
    pub fn of(rows: &[TelemetryRow]) -> Option<StartState> {
        let first = rows.iter().find(|r| r.server.is_some())?;
        let server = first.server.as_ref()?;
        Some(StartState {
            checkpoint_pct: first.checkpoint_pct(),
            dirty_pct: server.dirty_pages_pct,
            pages_written_s: rows.iter().take(3).find_map(|r| r.server.as_ref()?.pages_written_s),
            history_list_length: server.history_list_length,
            checkpoint_in_progress: server.checkpoint_in_progress,
        })
    }

    /// `checkpoint age 93%, dirty pages 41%, 3500 pages written/s` (what it has).
    pub fn text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = self.checkpoint_pct {
            parts.push(format!("checkpoint age {c:.0}%"));
        }
        if let Some(d) = self.dirty_pct {
            parts.push(format!("dirty pages {d:.0}%"));
        }
        if let Some(w) = self.pages_written_s {
            parts.push(format!("{w:.0} pages written/s"));
        }
        if let Some(h) = self.history_list_length {
            parts.push(format!("history list {h}"));
        }
        if self.checkpoint_in_progress == Some(true) {
            parts.push("a checkpoint being written".into());
        }
        if parts.is_empty() {
            "no checkpoint age or dirty pages sampled".into()
        } else {
            parts.join(", ")
        }
    }
}

impl TelemetryRow {
    /// Pages written by sync flush batches per second (`None`: the counter was not sampled).
    pub fn sync_flush_pages(&self) -> Option<f64> {
        self.server.as_ref()?.sync_flush_pages_s
    }

    /// Whether the row comes from PostgreSQL (`pg.rs` writes `checkpoint_trigger_pct`).
    pub fn is_postgres(&self) -> bool {
        self.server.as_ref().is_some_and(|s| s.checkpoint_trigger_pct.is_some())
    }

    /// Checkpoint age, percent of its maximum (PostgreSQL: checkpoint distance, percent of
    /// `max_wal_size`).
    pub fn checkpoint_pct(&self) -> Option<f64> {
        self.server.as_ref()?.checkpoint_level_pct()
    }

    /// The OS sample of the host the server ran on: the database host's when the run had
    /// one apart from the client's (`--server-host`; `None` for a period its sample missed,
    /// never the client's in its place), else this host's, which client and server shared.
    /// The server's disks and iowait are read from it.
    pub fn server_os(&self) -> Option<&OsSample> {
        if self.server_host_os.is_some() || self.server_host_error.is_some() {
            self.server_host_os.as_ref()
        } else {
            self.os.as_ref()
        }
    }

    /// CPU iowait on the server's host ([`TelemetryRow::server_os`]), percent.
    pub fn iowait(&self) -> Option<f64> {
        Some(self.server_os()?.cpus.iter().find(|c| c.cpu == "all")?.iowait)
    }

    pub fn idle(&self) -> Option<f64> {
        Some(self.os.as_ref()?.cpus.iter().find(|c| c.cpu == "all")?.idle)
    }

    pub fn client_cpu(&self) -> Option<f64> {
        Some(self.client.as_ref()?.cpu_pct)
    }

    /// Forgets the figures that are rates over the sample's period (OS CPU states, disks and
    /// network, client CPU, the server's per-second counters and waits) and keeps the levels
    /// (checkpoint age, dirty and free pages, history length). For a sample that covers a
    /// fraction of its period (the catch-up after a pause) a rate is noise: 30 pages written
    /// in 10 ms read as 3000/s.
    pub fn drop_rates(&mut self) {
        self.os = None;
        self.client = None;
        if let Some(s) = &mut self.server {
            for rate in [
                &mut s.redo_written_bytes_s,
                &mut s.pages_read_s,
                &mut s.pages_created_s,
                &mut s.pages_written_s,
                &mut s.lru_flushes_s,
                &mut s.sync_flush_pages_s,
                &mut s.doublewrite_pages_s,
                &mut s.rows_read_s,
                &mut s.rows_inserted_s,
                &mut s.rows_updated_s,
                &mut s.rows_deleted_s,
            ] {
                *rate = None;
            }
            s.status_rates.clear();
            s.innodb_metrics.clear();
            s.waits.clear();
            if let Some(pg) = &mut s.pg {
                for rate in [
                    &mut pg.buffers_checkpoint_s,
                    &mut pg.buffers_clean_s,
                    &mut pg.buffers_backend_s,
                    &mut pg.buffers_alloc_s,
                    &mut pg.wal_records_s,
                    &mut pg.wal_fpi_s,
                    &mut pg.wal_buffers_full_s,
                    &mut pg.temp_bytes_s,
                ] {
                    *rate = None;
                }
            }
        }
    }

    /// The time the server's figures cover: its own `interval_s` (since the server sampler's
    /// previous sample, which after a reconnect is moments ago), else the sample's.
    pub fn server_interval_s(&self) -> Option<f64> {
        self.server.as_ref().and_then(|s| s.interval_s).or(self.interval_s)
    }

    /// Middle of the time the sample covers.
    pub fn mid_s(&self, default_interval: f64) -> f64 {
        self.t_s - self.interval_s.unwrap_or(default_interval) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_state_is_the_first_samples() {
        let sample = |ckpt: f64, dirty: f64, written: Option<f64>| TelemetryRow {
            server: Some(ServerSample {
                checkpoint_pct: Some(ckpt),
                dirty_pages_pct: Some(dirty),
                pages_written_s: written,
                history_list_length: Some(12),
                ..ServerSample::default()
            }),
            ..TelemetryRow::default()
        };
        // The first sample primes the rates: the writes come from the next one.
        let rows = [
            TelemetryRow::default(),
            sample(85.0, 40.0, None),
            sample(80.0, 38.0, Some(3500.0)),
        ];
        let s = StartState::of(&rows).unwrap();
        assert_eq!(
            s,
            StartState {
                checkpoint_pct: Some(85.0),
                dirty_pct: Some(40.0),
                pages_written_s: Some(3500.0),
                history_list_length: Some(12),
                checkpoint_in_progress: None,
            }
        );
        assert_eq!(
            s.text(),
            "checkpoint age 85%, dirty pages 40%, 3500 pages written/s, history list 12"
        );
        assert_eq!(StartState::of(&[TelemetryRow::default()]), None);
    }

    fn row(waits: &[(&str, f64)]) -> TelemetryRow {
        TelemetryRow {
            server: Some(ServerSample {
                waits: waits
                    .iter()
                    .map(|(event, time_ms)| Wait {
                        event: (*event).to_owned(),
                        count: 1,
                        time_ms: *time_ms,
                    })
                    .collect(),
                ..ServerSample::default()
            }),
            ..TelemetryRow::default()
        }
    }

    /// Summed over samples, longest first; per-row table waits and waits without time left out.
    #[test]
    fn wait_totals_sum_contention_points_longest_first() {
        let rows = [
            row(&[
                ("wait/io/table/sql/handler", 900.0),
                ("wait/synch/mutex/innodb/log_sys_mutex", 5.0),
                ("wait/synch/rwlock/innodb/index_tree_rw_lock", 4.0),
            ]),
            row(&[
                ("wait/synch/rwlock/innodb/index_tree_rw_lock", 3.0),
                ("wait/synch/mutex/innodb/fil_system_mutex", 0.0),
            ]),
        ];
        assert_eq!(
            wait_totals(&rows),
            [
                ("wait/synch/rwlock/innodb/index_tree_rw_lock".to_owned(), 7.0),
                ("wait/synch/mutex/innodb/log_sys_mutex".to_owned(), 5.0),
            ]
        );
    }

    fn disks(d: &[(&str, f64, f64)]) -> TelemetryRow {
        TelemetryRow {
            os: Some(OsSample {
                disks: d
                    .iter()
                    .map(|(name, w_s, util_pct)| DiskIo {
                        name: (*name).to_owned(),
                        w_s: *w_s,
                        util_pct: *util_pct,
                        ..DiskIo::default()
                    })
                    .collect(),
                ..OsSample::default()
            }),
            ..TelemetryRow::default()
        }
    }

    /// Each question its own disk: the busiest in one sample, at its busiest over a window,
    /// and the one written most over the run.
    #[test]
    fn the_busiest_disk_and_the_disk_written_most_are_told_apart() {
        let rows = [
            disks(&[("vda", 900.0, 20.0), ("vdb", 10.0, 95.0)]),
            disks(&[("vda", 800.0, 40.0), ("vdb", 0.0, 5.0)]),
        ];
        let names = |rows: &[TelemetryRow]| {
            rows.iter()
                .map(|r| r.os.as_ref().unwrap().busiest_disk().unwrap().name.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&rows), ["vdb", "vda"]);
        let during = busiest_disk_during(&rows).unwrap();
        assert_eq!((during.name.as_str(), during.util_pct), ("vdb", 95.0));
        assert_eq!(busiest_disk_during(&rows[1..]).unwrap().name, "vda");
        assert_eq!(disk_written_most(&rows), Some("vda"));
        assert_eq!(disk_written_most(&[TelemetryRow::default()]), None);
        assert!(busiest_disk_during(&[]).is_none());
    }

    /// With the server on another host, its disks and iowait are that host's; a period whose
    /// sample from there is missing has none, not the client's.
    #[test]
    fn the_servers_disks_are_read_on_the_server_host() {
        let mut far = disks(&[("nvme0n1", 500.0, 97.0)]);
        far.server_host_os = far.os.take();
        far.os = disks(&[("vda", 5.0, 1.0)]).os;
        let mut missed = disks(&[("vda", 5.0, 99.0)]);
        missed.server_host_error = Some("no sample from the server host in this period".into());
        let rows = [far, missed];
        assert_eq!(busiest_disk_during(&rows).unwrap().name, "nvme0n1");
        assert_eq!(disk_written_most(&rows), Some("nvme0n1"));
        assert!(rows[1].server_os().is_none() && rows[1].iowait().is_none());
        let here = disks(&[("vda", 5.0, 50.0)]);
        assert_eq!(here.server_os().unwrap().disks[0].name, "vda", "one host: its own");
    }
}
