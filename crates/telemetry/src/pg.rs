//! Server telemetry for PostgreSQL 14–18: [`PgSampler`] owns a tokio-postgres connection of its
//! own and turns a handful of catalog-view reads per sample into the same [`ServerSample`] the
//! MySQL family fills, plus a [`PgDetail`] of what only PostgreSQL has.
//!
//! | signal | 14–16 | 17+ |
//! |---|---|---|
//! | checkpoints requested / timed, write and sync time, buffers written | `pg_stat_bgwriter` | `pg_stat_checkpointer` |
//! | buffers written by backends | `pg_stat_bgwriter.buffers_backend` | `pg_stat_io` (client backend, relation, writes) |
//! | I/O by backend type (`pg_stat_io`) | 16 only | yes |
//! | WAL bytes, records, full-page images | `pg_stat_wal` | same |
//!
//! How the generic fields map: checkpoint *age* is the checkpoint *distance*, the WAL written
//! since the last checkpoint's redo point (`pg_current_wal_lsn() − pg_control_checkpoint().redo_lsn`),
//! and its maximum is `max_wal_size` (a checkpoint is requested once the distance passes about
//! `max_wal_size / (1 + checkpoint_completion_target)`, [`PgFacts::checkpoint_trigger_pct`]);
//! redo written is WAL bytes; pages written are buffers written by the checkpointer, the
//! background writer and backends; rows are `pg_stat_database`'s `tup_*`; threads running are
//! active client backends.
//!
//! Wait events are sampled, not timed: each sample reads `pg_stat_activity` once and counts the
//! active client backends per `wait_event_type/wait_event` (`IO/WALSync`, `LWLock/WALWrite`,
//! `Lock/transactionid`, ...). A backend seen waiting stands for one period of waiting, so a
//! [`Wait`]'s `time_ms` is sessions × period — an estimate, like Oracle's ASH, good for ranking.
//! Backends on CPU (active, no wait event) are counted in [`PgDetail::on_cpu`], not as a wait.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use dbperf_engine::ErrorClass;
use serde::{Deserialize, Serialize};
use tokio_postgres::{Client, SimpleQueryMessage};

use dbperf_driver::{DbError, Target};
pub use dbperf_results::telemetry::PgDetail;
use dbperf_results::telemetry::{ServerSample, Wait};

/// What the sampler learned once, at connect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgFacts {
    /// `SHOW server_version`.
    pub version: String,
    /// `server_version_num` (170011 for 17.11).
    pub version_num: u32,
    pub max_wal_size_bytes: u64,
    pub checkpoint_timeout_s: f64,
    pub checkpoint_completion_target: f64,
    /// Checkpoint distance (percent of `max_wal_size`) at which a checkpoint is requested:
    /// `100 / (1 + checkpoint_completion_target)`.
    pub checkpoint_trigger_pct: f64,
    pub shared_buffers_bytes: u64,
}

/// Cumulative counters and gauges at one instant.
#[derive(Debug, Clone)]
struct Snapshot {
    at: Instant,
    /// `view.column` (and `pg_stat_io.BACKEND.column`) → cumulative value.
    counters: BTreeMap<String, f64>,
    /// Bytes of WAL since the last checkpoint's redo point.
    distance: Option<u64>,
    dead_tuples: Option<u64>,
    autovacuum_workers: u64,
    on_cpu: u64,
    active: u64,
    /// `type/event` → active client backends waiting on it.
    waits: BTreeMap<String, u64>,
    /// The checkpointer was writing a checkpoint (`None`: not seen).
    checkpointing: Option<bool>,
}

/// Samples one PostgreSQL server over its own connection.
pub struct PgSampler {
    client: Client,
    facts: PgFacts,
    /// What each statement of `batch_sql` reads, in order.
    batch: Vec<Part>,
    batch_sql: String,
    top_waits: usize,
    previous: Option<Snapshot>,
}

/// The first version with `pg_stat_io`.
const IO_SINCE: u32 = 160_000;
/// The first version with `pg_stat_checkpointer`.
const CHECKPOINTER_SINCE: u32 = 170_000;
/// The first version without `pg_stat_wal`'s write/sync columns.
const WAL_IO_MOVED_SINCE: u32 = 180_000;

impl PgSampler {
    /// Connects (TCP, or the socket directory of `target.socket`) and reads the static facts.
    /// On a dbperf sandbox it logs in as the superuser over the owner-only socket
    /// ([`dbperf_server::admin_target`]): the benchmark role does not see every backend's
    /// statistics; elsewhere as `target`'s user.
    pub async fn connect(target: &Target, top_waits: usize) -> Result<PgSampler, DbError> {
        let admin = dbperf_server::admin_target(target);
        let target = admin.as_ref().unwrap_or(target);
        let mut cfg = tokio_postgres::Config::new();
        match &target.socket {
            Some(dir) => cfg.host_path(dir),
            None => cfg.host(&target.host),
        };
        cfg.port(target.port)
            .user(&target.user)
            .password(&target.password)
            .dbname(&target.database)
            .application_name("dbperf-telemetry")
            .connect_timeout(Duration::from_secs(5));
        let (client, connection) = cfg.connect(tokio_postgres::NoTls).await.map_err(db_error)?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let row = first_row(
            &client,
            "SELECT current_setting('server_version'), current_setting('server_version_num'), \
             pg_size_bytes(current_setting('max_wal_size')), \
             extract(epoch FROM current_setting('checkpoint_timeout')::interval), \
             current_setting('checkpoint_completion_target'), \
             pg_size_bytes(current_setting('shared_buffers'))",
        )
        .await?;
        let num = |i: usize| {
            row.get(i)
                .and_then(|v| v.as_deref())
                .and_then(|v| v.parse::<f64>().ok())
        };
        let target_fraction = num(4).unwrap_or(0.9);
        let facts = PgFacts {
            version: row.first().cloned().flatten().unwrap_or_default(),
            version_num: num(1).unwrap_or(0.0) as u32,
            max_wal_size_bytes: num(2).unwrap_or(0.0) as u64,
            checkpoint_timeout_s: num(3).unwrap_or(0.0),
            checkpoint_completion_target: target_fraction,
            checkpoint_trigger_pct: 100.0 / (1.0 + target_fraction),
            shared_buffers_bytes: num(5).unwrap_or(0.0) as u64,
        };
        let batch = batch_for(facts.version_num);
        let batch_sql = batch.iter().map(Part::sql).collect::<Vec<_>>().join(";\n");
        Ok(PgSampler {
            client,
            facts,
            batch,
            batch_sql,
            top_waits,
            previous: None,
        })
    }

    pub fn facts(&self) -> &PgFacts {
        &self.facts
    }

    /// Takes one sample: every view in one round trip (a multi-statement simple query). The
    /// first call primes: its rates and interval counts are `None`, its gauges (checkpoint
    /// distance, dead tuples, waits at the sample) filled.
    pub async fn sample(&mut self) -> Result<ServerSample, DbError> {
        let started = Instant::now();
        let messages = self.client.simple_query(&self.batch_sql).await.map_err(db_error)?;
        // One group of rows per statement; each statement ends with a CommandComplete.
        let mut results: Vec<Vec<Vec<Option<String>>>> = vec![Vec::new()];
        for m in messages {
            match m {
                SimpleQueryMessage::Row(row) => results
                    .last_mut()
                    .expect("never empty")
                    .push((0..row.len()).map(|i| row.get(i).map(str::to_owned)).collect()),
                SimpleQueryMessage::CommandComplete(_) => results.push(Vec::new()),
                _ => {}
            }
        }
        let mut counters = BTreeMap::new();
        let mut read = |view: &str, names: &[&str], row: &[Option<String>]| {
            for (name, value) in names.iter().zip(row) {
                if let Some(x) = value.as_deref().and_then(|s| s.parse::<f64>().ok()) {
                    counters.insert(format!("{view}.{name}"), x);
                }
            }
        };
        let mut distance = None;
        let mut waits = BTreeMap::new();
        let (mut on_cpu, mut active, mut autovacuum_workers) = (0, 0, 0);
        let mut checkpointing = None;
        for (part, rows) in self.batch.iter().zip(&results) {
            match part {
                Part::Counters { view, columns, .. } => {
                    if let Some(row) = rows.first() {
                        read(view, columns, row);
                    }
                }
                Part::IoByBackend => {
                    for row in rows {
                        let Some(Some(backend)) = row.first() else { continue };
                        read(&format!("pg_stat_io.{backend}"), &IO_COLUMNS, &row[1..]);
                    }
                }
                Part::Distance => {
                    distance = rows
                        .first()
                        .and_then(|r| r.first())
                        .and_then(|v| v.as_deref())
                        .and_then(|v| v.parse::<f64>().ok())
                        .map(|d| d.max(0.0) as u64);
                }
                Part::Activity => {
                    for row in rows {
                        let text = |i: usize| row.get(i).cloned().flatten();
                        let n = text(3).and_then(|c| c.parse::<u64>().ok()).unwrap_or(0);
                        match text(0).as_deref() {
                            Some("autovacuum worker") => autovacuum_workers += n,
                            // Between checkpoints it waits on CheckpointerMain; anything else
                            // (CheckpointWriteDelay, a data file write, on CPU) is a checkpoint.
                            Some("checkpointer") => {
                                checkpointing = Some(text(2).as_deref() != Some(CHECKPOINTER_IDLE));
                            }
                            Some("client backend") => {
                                active += n;
                                match (text(1), text(2)) {
                                    (Some(kind), Some(event)) => {
                                        *waits.entry(format!("{kind}/{event}")).or_default() += n
                                    }
                                    _ => on_cpu += n,
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
        let dead_tuples = counters.remove("pg_stat_all_tables.n_dead_tup").map(|d| d as u64);
        let now = Snapshot {
            at: started,
            counters,
            distance,
            dead_tuples,
            autovacuum_workers,
            on_cpu,
            active,
            waits,
            checkpointing,
        };
        let query_ms = started.elapsed().as_secs_f64() * 1e3;
        let sample = build_sample(&self.facts, self.top_waits, self.previous.as_ref(), &now, query_ms);
        self.previous = Some(now);
        Ok(sample)
    }
}

/// The checkpointer's wait event between checkpoints.
const CHECKPOINTER_IDLE: &str = "CheckpointerMain";

/// `pg_stat_io` columns summed per backend type.
const IO_COLUMNS: [&str; 5] = ["reads", "writes", "extends", "fsyncs", "evictions"];

/// One statement of the per-sample batch and how its rows are read.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    /// One row of cumulative counters, stored as `view.column`.
    Counters {
        view: &'static str,
        columns: Vec<&'static str>,
        /// The statement (with `sum(...)` where the view has a row per database).
        from: String,
    },
    /// `pg_stat_io` summed per backend type (16+).
    IoByBackend,
    /// Checkpoint distance in bytes.
    Distance,
    /// Active backends by type and wait event.
    Activity,
}

impl Part {
    fn counters(view: &'static str, columns: &[&'static str]) -> Part {
        Part::Counters {
            view,
            columns: columns.to_vec(),
            from: format!("SELECT {} FROM {view}", columns.join(", ")),
        }
    }

    fn sql(&self) -> String {
        match self {
            Part::Counters { from, .. } => from.clone(),
            Part::IoByBackend => format!(
                "SELECT backend_type, {} FROM pg_stat_io GROUP BY backend_type",
                IO_COLUMNS.map(|c| format!("coalesce(sum({c}), 0)")).join(", ")
            ),
            Part::Distance => "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn) FROM pg_control_checkpoint() \
                               WHERE NOT pg_is_in_recovery()"
                .to_owned(),
            Part::Activity => "SELECT backend_type, wait_event_type, wait_event, count(*) FROM pg_stat_activity \
                               WHERE pid <> pg_backend_pid() AND (state = 'active' OR backend_type IN ('autovacuum worker', 'checkpointer')) \
                               GROUP BY 1, 2, 3"
                .to_owned(),
        }
    }
}

/// The statements one sample runs on server version `v` (`server_version_num`).
fn batch_for(v: u32) -> Vec<Part> {
    let mut batch = Vec::new();
    if v >= CHECKPOINTER_SINCE {
        batch.push(Part::counters(
            "pg_stat_checkpointer",
            &[
                "num_timed",
                "num_requested",
                "write_time",
                "sync_time",
                "buffers_written",
            ],
        ));
        batch.push(Part::counters(
            "pg_stat_bgwriter",
            &["buffers_clean", "maxwritten_clean", "buffers_alloc"],
        ));
    } else {
        batch.push(Part::counters(
            "pg_stat_bgwriter",
            &[
                "checkpoints_timed",
                "checkpoints_req",
                "checkpoint_write_time",
                "checkpoint_sync_time",
                "buffers_checkpoint",
                "buffers_clean",
                "maxwritten_clean",
                "buffers_backend",
                "buffers_backend_fsync",
                "buffers_alloc",
            ],
        ));
    }
    let mut wal = vec!["wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full"];
    if v < WAL_IO_MOVED_SINCE {
        wal.extend(["wal_write", "wal_sync", "wal_write_time", "wal_sync_time"]);
    }
    batch.push(Part::counters("pg_stat_wal", &wal));
    let db = [
        "xact_commit",
        "xact_rollback",
        "blks_read",
        "blks_hit",
        "tup_returned",
        "tup_fetched",
        "tup_inserted",
        "tup_updated",
        "tup_deleted",
        "temp_files",
        "temp_bytes",
        "deadlocks",
    ];
    batch.push(Part::Counters {
        view: "pg_stat_database",
        columns: db.to_vec(),
        from: format!(
            "SELECT {} FROM pg_stat_database",
            db.map(|c| format!("sum({c})")).join(", ")
        ),
    });
    if v >= IO_SINCE {
        batch.push(Part::IoByBackend);
        // Writes of relation pages by client backends: what buffers_backend counted.
        batch.push(Part::Counters {
            view: "pg_stat_io",
            columns: vec!["client_backend_relation_writes"],
            from: "SELECT coalesce(sum(writes), 0) FROM pg_stat_io \
                   WHERE backend_type = 'client backend' AND object = 'relation'"
                .to_owned(),
        });
    }
    batch.push(Part::Counters {
        view: "pg_stat_all_tables",
        columns: vec!["n_dead_tup", "autovacuum_runs"],
        from: "SELECT coalesce(sum(n_dead_tup), 0), coalesce(sum(autovacuum_count + autoanalyze_count), 0) \
               FROM pg_stat_all_tables"
            .to_owned(),
    });
    batch.push(Part::Distance);
    batch.push(Part::Activity);
    batch
}

async fn text_rows(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
    let messages = client.simple_query(sql).await.map_err(db_error)?;
    Ok(messages
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some((0..row.len()).map(|i| row.get(i).map(str::to_owned)).collect()),
            _ => None,
        })
        .collect())
}

async fn first_row(client: &Client, sql: &str) -> Result<Vec<Option<String>>, DbError> {
    Ok(text_rows(client, sql).await?.into_iter().next().unwrap_or_default())
}

fn db_error(e: tokio_postgres::Error) -> DbError {
    let (sqlstate, message) = match e.as_db_error() {
        Some(db) => (Some(db.code().code().to_owned()), db.message().to_owned()),
        None => (None, e.to_string()),
    };
    DbError {
        class: if e.is_closed() {
            ErrorClass::ConnectionLost
        } else {
            ErrorClass::Fatal
        },
        code: None,
        sqlstate,
        message,
    }
}

/// Everything that is arithmetic on two snapshots, apart from the queries.
fn build_sample(
    facts: &PgFacts,
    top_waits: usize,
    previous: Option<&Snapshot>,
    now: &Snapshot,
    query_ms: f64,
) -> ServerSample {
    let interval_s = previous
        .map(|p| now.at.duration_since(p.at).as_secs_f64())
        .filter(|s| *s > 0.0);
    // The change of the first counter present of `names` (they are one figure's names in
    // different versions), `None` without a baseline or after a reset.
    let delta = |names: &[&str]| -> Option<f64> {
        let p = previous?;
        names.iter().find_map(|name| {
            let (b, n) = (p.counters.get(*name)?, now.counters.get(*name)?);
            (n >= b).then(|| n - b)
        })
    };
    let rate = |names: &[&str]| -> Option<f64> { Some(delta(names)? / interval_s?) };
    let count = |names: &[&str]| delta(names).map(|d| d.round() as u64);

    let buffers_checkpoint_s = rate(&[
        "pg_stat_checkpointer.buffers_written",
        "pg_stat_bgwriter.buffers_checkpoint",
    ]);
    let buffers_clean_s = rate(&["pg_stat_bgwriter.buffers_clean"]);
    let buffers_backend_s = rate(&[
        "pg_stat_bgwriter.buffers_backend",
        "pg_stat_io.client_backend_relation_writes",
    ]);
    let pages_written_s = match (buffers_checkpoint_s, buffers_clean_s, buffers_backend_s) {
        (None, None, None) => None,
        (a, b, c) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0) + c.unwrap_or(0.0)),
    };
    let max = (facts.max_wal_size_bytes > 0).then_some(facts.max_wal_size_bytes);
    let mut io = BTreeMap::new();
    if let (Some(p), Some(s)) = (previous, interval_s) {
        for (name, value) in &now.counters {
            let Some(rest) = name.strip_prefix("pg_stat_io.") else {
                continue;
            };
            if rest == "client_backend_relation_writes" {
                continue;
            }
            if let Some(before) = p.counters.get(name).filter(|b| value > *b) {
                io.insert(rest.to_owned(), (value - before) / s);
            }
        }
    }
    let detail = PgDetail {
        checkpoint_write_ms: delta(&[
            "pg_stat_checkpointer.write_time",
            "pg_stat_bgwriter.checkpoint_write_time",
        ]),
        checkpoint_sync_ms: delta(&[
            "pg_stat_checkpointer.sync_time",
            "pg_stat_bgwriter.checkpoint_sync_time",
        ]),
        buffers_checkpoint_s,
        buffers_clean_s,
        buffers_backend_s,
        buffers_alloc_s: rate(&["pg_stat_bgwriter.buffers_alloc"]),
        wal_records_s: rate(&["pg_stat_wal.wal_records"]),
        wal_fpi_s: rate(&["pg_stat_wal.wal_fpi"]),
        wal_buffers_full_s: rate(&["pg_stat_wal.wal_buffers_full"]),
        temp_files: count(&["pg_stat_database.temp_files"]),
        temp_bytes_s: rate(&["pg_stat_database.temp_bytes"]),
        dead_tuples: now.dead_tuples,
        autovacuum_workers: Some(now.autovacuum_workers),
        autovacuum_runs: count(&["pg_stat_all_tables.autovacuum_runs"]),
        on_cpu: Some(now.on_cpu),
        io,
    };
    let mut sample = ServerSample {
        interval_s,
        query_ms,
        checkpoint_age_bytes: now.distance,
        checkpoint_max_bytes: max,
        checkpoint_pct: now.distance.zip(max).map(|(d, m)| d as f64 / m as f64 * 100.0),
        redo_written_bytes_s: rate(&["pg_stat_wal.wal_bytes"]),
        pages_read_s: rate(&["pg_stat_database.blks_read"]),
        pages_written_s,
        rows_read_s: rate(&["pg_stat_database.tup_fetched"]),
        rows_inserted_s: rate(&["pg_stat_database.tup_inserted"]),
        rows_updated_s: rate(&["pg_stat_database.tup_updated"]),
        rows_deleted_s: rate(&["pg_stat_database.tup_deleted"]),
        threads_running: Some(now.active),
        checkpoints_requested: count(&["pg_stat_checkpointer.num_requested", "pg_stat_bgwriter.checkpoints_req"]),
        checkpoints_timed: count(&["pg_stat_checkpointer.num_timed", "pg_stat_bgwriter.checkpoints_timed"]),
        checkpoint_trigger_pct: Some(facts.checkpoint_trigger_pct),
        checkpoint_in_progress: now.checkpointing,
        pg: Some(detail),
        ..ServerSample::default()
    };
    if let (Some(p), Some(s)) = (previous, interval_s) {
        sample.status_rates = now
            .counters
            .iter()
            .filter_map(|(name, value)| {
                let before = p.counters.get(name)?;
                (value > before).then(|| (name.clone(), (value - before) / s))
            })
            .collect();
    }
    // Waits are what this sample saw; the first sample has no period to weigh them by.
    if let Some(s) = interval_s {
        let mut waits: Vec<Wait> = now
            .waits
            .iter()
            .map(|(event, n)| Wait {
                event: event.clone(),
                count: *n,
                time_ms: *n as f64 * s * 1e3,
            })
            .collect();
        waits.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.event.cmp(&b.event)));
        waits.truncate(top_waits);
        sample.waits = waits;
    }
    sample
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(version_num: u32) -> PgFacts {
        PgFacts {
            version: "x".into(),
            version_num,
            max_wal_size_bytes: 32 << 20,
            checkpoint_timeout_s: 3600.0,
            checkpoint_completion_target: 0.9,
            checkpoint_trigger_pct: 100.0 / 1.9,
            shared_buffers_bytes: 128 << 20,
        }
    }

    fn snapshot(at: Instant, counters: &[(&str, f64)], distance: u64, waits: &[(&str, u64)]) -> Snapshot {
        Snapshot {
            at,
            counters: counters.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            distance: Some(distance),
            dead_tuples: Some(7),
            autovacuum_workers: 1,
            on_cpu: 2,
            active: 2 + waits.iter().map(|(_, n)| n).sum::<u64>(),
            waits: waits.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            checkpointing: Some(false),
        }
    }

    #[test]
    fn the_batch_follows_the_version() {
        let sql = |v: u32| batch_for(v).iter().map(Part::sql).collect::<Vec<_>>().join(";\n");
        let (v15, v16, v17, v18) = (sql(150_018), sql(160_015), sql(170_011), sql(180_006));
        assert!(
            v15.contains("checkpoints_req") && !v15.contains("pg_stat_io") && !v15.contains("pg_stat_checkpointer")
        );
        assert!(v16.contains("checkpoints_req") && v16.contains("pg_stat_io"));
        assert!(v17.contains("num_requested") && !v17.contains("checkpoints_req") && v17.contains("wal_sync_time"));
        assert!(v18.contains("num_requested") && !v18.contains("wal_sync_time"));
        assert_eq!(batch_for(150_018).last(), Some(&Part::Activity));
    }

    #[test]
    fn pg15_counters_become_the_generic_fields() {
        let t0 = Instant::now();
        let a = snapshot(
            t0,
            &[
                ("pg_stat_bgwriter.checkpoints_req", 3.0),
                ("pg_stat_bgwriter.checkpoints_timed", 1.0),
                ("pg_stat_bgwriter.buffers_checkpoint", 100.0),
                ("pg_stat_bgwriter.buffers_clean", 10.0),
                ("pg_stat_bgwriter.buffers_backend", 50.0),
                ("pg_stat_bgwriter.checkpoint_write_time", 1000.0),
                ("pg_stat_wal.wal_bytes", 1e6),
            ],
            8 << 20,
            &[],
        );
        let first = build_sample(&facts(150_018), 5, None, &a, 1.0);
        assert_eq!(first.interval_s, None);
        assert_eq!(first.checkpoints_requested, None);
        assert_eq!(first.checkpoint_pct, Some(25.0));
        assert!(first.waits.is_empty());

        let b = snapshot(
            t0 + Duration::from_secs(2),
            &[
                ("pg_stat_bgwriter.checkpoints_req", 5.0),
                ("pg_stat_bgwriter.checkpoints_timed", 1.0),
                ("pg_stat_bgwriter.buffers_checkpoint", 300.0),
                ("pg_stat_bgwriter.buffers_clean", 30.0),
                ("pg_stat_bgwriter.buffers_backend", 450.0),
                ("pg_stat_bgwriter.checkpoint_write_time", 3500.0),
                ("pg_stat_wal.wal_bytes", 5e6),
            ],
            16 << 20,
            &[("IO/WALSync", 3), ("LWLock/WALWrite", 1)],
        );
        let s = build_sample(&facts(150_018), 5, Some(&a), &b, 1.0);
        assert_eq!(s.interval_s, Some(2.0));
        assert_eq!(s.checkpoints_requested, Some(2));
        assert_eq!(s.checkpoints_timed, Some(0));
        assert_eq!(s.checkpoint_pct, Some(50.0));
        assert_eq!(s.redo_written_bytes_s, Some(2e6));
        assert_eq!(s.pages_written_s, Some(100.0 + 10.0 + 200.0));
        let pg = s.pg.as_ref().unwrap();
        assert_eq!(pg.checkpoint_write_ms, Some(2500.0));
        assert_eq!(pg.buffers_backend_s, Some(200.0));
        assert_eq!(s.threads_running, Some(6));
        let waits: Vec<_> = s.waits.iter().map(|w| (w.event.as_str(), w.count, w.time_ms)).collect();
        assert_eq!(waits, [("IO/WALSync", 3, 6000.0), ("LWLock/WALWrite", 1, 2000.0)]);
        assert_eq!(s.status_rates["pg_stat_bgwriter.checkpoints_req"], 1.0);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<ServerSample>(&json).unwrap(), s);
    }

    #[test]
    fn pg17_reads_the_checkpointer_and_io_views() {
        let t0 = Instant::now();
        let a = snapshot(
            t0,
            &[
                ("pg_stat_checkpointer.num_requested", 0.0),
                ("pg_stat_checkpointer.buffers_written", 0.0),
                ("pg_stat_io.client_backend_relation_writes", 10.0),
                ("pg_stat_io.client backend.writes", 10.0),
            ],
            0,
            &[],
        );
        let b = snapshot(
            t0 + Duration::from_secs(1),
            &[
                ("pg_stat_checkpointer.num_requested", 1.0),
                ("pg_stat_checkpointer.buffers_written", 40.0),
                ("pg_stat_io.client_backend_relation_writes", 30.0),
                ("pg_stat_io.client backend.writes", 35.0),
            ],
            1 << 20,
            &[],
        );
        let s = build_sample(&facts(170_011), 5, Some(&a), &b, 1.0);
        assert_eq!(s.checkpoints_requested, Some(1));
        let pg = s.pg.unwrap();
        assert_eq!(pg.buffers_checkpoint_s, Some(40.0));
        assert_eq!(pg.buffers_backend_s, Some(20.0));
        assert_eq!(pg.io.get("client backend.writes"), Some(&25.0));
        assert!(!pg.io.contains_key("client_backend_relation_writes"));
    }
}
