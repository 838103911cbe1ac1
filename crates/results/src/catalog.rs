//! The results catalog, `<results-root>/catalog.sqlite`: one SQLite index of every run directory
//! under a results root, so runs can be found by id or experiment and queried with plain SQL
//! (`sqlite3 dbperf-results/catalog.sqlite`). The run directories stay the source of truth: the
//! catalog can be deleted and rebuilt at any time with [`Catalog::rescan`].
//!
//! Tables (documented with example queries in `docs/results.md`): `meta` (schema version),
//! `runs` (one row per run), `variables` (server variables from the manifest), `run_options`
//! (workload options), `intervals` (the lines of `intervals.jsonl`), `telemetry`, `tpch` and
//! `tpch_queries` (a TPC-H run's `tpch.json`), and `metrics` (each run's own figures by name:
//! `tps`, `notpm`, `rps`, `q5`, `geomean`, ... from [`super::figures`]). The schema is versioned
//! in `meta`; [`Catalog::open`] applies the migrations a catalog lacks, and
//! [`Catalog::rescan`] fills the tables a migration added for the runs already recorded.
//! Every result file is read typed (`telemetry.jsonl` as [`TelemetryRow`]s); only the
//! manifest's free-form workload options are JSON values, stored as text in `run_options`.
//!
//! The catalog is opened only when it and its `-journal`, `-wal` and `-shm` files are regular
//! files or absent, never through a symbolic link (one planted in a results directory would
//! turn its target into a database); `dbperf results sql` opens it read-only
//! ([`Catalog::open_read_only`]), where statements may only read and `ATTACH` is refused.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction};
use serde_json::Value;

use super::figures::{self, Figures};
use super::interval::IntervalRecord;
use super::telemetry::{OsSample, TelemetryRow};
use super::tpch::{Cold, QueryTiming, Status, TpchReport};
use super::{ResultsError, RunDir, RunRecords, TELEMETRY_FILE};
use dbperf_core::stats::Spread;

/// File name of the catalog inside a results root.
pub const CATALOG_FILE: &str = "catalog.sqlite";

/// Migrations, in order: `MIGRATIONS[i]` takes a catalog from schema version `i` to `i + 1`.
/// Never edit a released entry; append a new one.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    path            TEXT NOT NULL,
    started_at      TEXT,
    workload        TEXT,
    server_version  TEXT,
    threads         INTEGER,
    rate            REAL,
    duration_s      REAL,
    tps             REAL,
    qps             REAL,
    latency_p50_ms  REAL,
    latency_p95_ms  REAL,
    latency_p99_ms  REAL,
    latency_max_ms  REAL,
    errors_total    INTEGER,
    interrupted     INTEGER,
    complete        INTEGER NOT NULL,
    experiment      TEXT,
    point           TEXT,
    server          TEXT,
    variant         TEXT,
    rep             INTEGER,
    dbperf_version  TEXT,
    indexed_at      TEXT NOT NULL
);
CREATE INDEX runs_by_experiment ON runs (experiment, server, variant, threads, rep);
CREATE TABLE variables (
    run_id  TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    value   TEXT NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE run_options (
    run_id  TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    value   TEXT,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE intervals (
    run_id          TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    idx             INTEGER NOT NULL,
    t_s             REAL NOT NULL,
    warmup          INTEGER NOT NULL,
    threads         INTEGER NOT NULL,
    tps             REAL NOT NULL,
    qps             REAL NOT NULL,
    errors_per_sec  REAL NOT NULL,
    latency_p50_ms  REAL NOT NULL,
    latency_p95_ms  REAL NOT NULL,
    latency_p99_ms  REAL NOT NULL,
    latency_max_ms  REAL NOT NULL,
    PRIMARY KEY (run_id, idx)
);
"#,
    r#"
ALTER TABLE runs ADD COLUMN pinning TEXT;
CREATE TABLE telemetry (
    run_id                TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    idx                   INTEGER NOT NULL,
    t_s                   REAL NOT NULL,
    interval_s            REAL,
    checkpoint_pct        REAL,
    dirty_pages_pct       REAL,
    pages_written_s       REAL,
    redo_written_bytes_s  REAL,
    history_list_length   REAL,
    threads_running       REAL,
    top_wait              TEXT,
    top_wait_ms           REAL,
    cpu_user_pct          REAL,
    cpu_sys_pct           REAL,
    cpu_iowait_pct        REAL,
    disk                  TEXT,
    disk_w_s              REAL,
    disk_wkb_s            REAL,
    disk_util_pct         REAL,
    client_cpu_pct        REAL,
    client_rss_bytes      INTEGER,
    PRIMARY KEY (run_id, idx)
);
"#,
    r#"
CREATE TABLE tpch (
    run_id              TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
    test                TEXT NOT NULL,
    scale_factor        REAL NOT NULL,
    seed                INTEGER,
    validation          INTEGER,
    cold                TEXT,
    timeout_s           REAL,
    streams             INTEGER,
    power_at_size       REAL,
    throughput_at_size  REAL
);
CREATE TABLE tpch_queries (
    run_id    TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    rep       INTEGER NOT NULL,
    stream    INTEGER NOT NULL,
    query     TEXT NOT NULL,
    position  INTEGER,
    seconds   REAL,
    status    TEXT NOT NULL,
    PRIMARY KEY (run_id, rep, stream, query)
);
"#,
    r#"
ALTER TABLE telemetry ADD COLUMN sync_flush_pages_s REAL;
"#,
    r#"
CREATE TABLE metrics (
    run_id  TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    name    TEXT NOT NULL,
    value   REAL NOT NULL,
    min     REAL NOT NULL,
    max     REAL NOT NULL,
    n       INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
);
"#,
];

/// The schema version this dbperf writes and reads.
pub const CATALOG_SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Why the catalog could not be opened, read or written. Each variant names the catalog file.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// SQLite refused an operation.
    #[error("results catalog {path}: {source}")]
    Sqlite {
        /// The catalog file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The catalog was written by a newer dbperf.
    #[error(
        "results catalog {path} has schema version {found}, newer than the {supported} this dbperf knows: \
         upgrade dbperf, or delete the file and run `dbperf results index` to rebuild it"
    )]
    NewerSchema {
        /// The catalog file.
        path: PathBuf,
        /// Version found in `meta`.
        found: i64,
        /// [`CATALOG_SCHEMA_VERSION`].
        supported: i64,
    },
    /// The catalog file (or one of SQLite's files beside it) is a symbolic link or not a
    /// regular file, so it is not opened.
    #[error("results catalog {path}: {source}")]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: std::io::Error,
    },
    /// `results sql` on a results directory without a catalog.
    #[error("results catalog {path} does not exist: run `dbperf results index` first")]
    Missing {
        /// The catalog file.
        path: PathBuf,
    },
    /// A run directory could not be read.
    #[error(transparent)]
    Results(#[from] ResultsError),
}

/// What [`Catalog::rescan`] did.
#[derive(Debug, Default)]
pub struct RescanReport {
    /// Run ids recorded (new, or incomplete before and re-read).
    pub recorded: Vec<String>,
    /// Runs already in the catalog and complete, left alone.
    pub unchanged: usize,
    /// Directories with a manifest that could not be recorded, and why.
    pub failed: Vec<(PathBuf, String)>,
}

/// An open results catalog.
#[derive(Debug)]
pub struct Catalog {
    conn: Connection,
    path: PathBuf,
    root: PathBuf,
}

impl Catalog {
    /// Opens (creating if needed) `<results_root>/catalog.sqlite`, creating the root too, and
    /// brings its schema up to [`CATALOG_SCHEMA_VERSION`].
    pub fn open(results_root: &Path) -> Result<Catalog, CatalogError> {
        fs::create_dir_all(results_root).map_err(|source| ResultsError::CreateDir {
            path: results_root.to_path_buf(),
            source,
        })?;
        let path = results_root.join(CATALOG_FILE);
        check_files(&path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(&path, flags).map_err(|source| CatalogError::Sqlite {
            path: path.clone(),
            source,
        })?;
        let mut catalog = Catalog {
            conn,
            path,
            root: results_root.to_path_buf(),
        };
        catalog.migrate()?;
        Ok(catalog)
    }

    /// Opens an existing `<results_root>/catalog.sqlite` to read it only, for queries typed by
    /// a user (`dbperf results sql`): SQLite opens it read-only, every statement may only read
    /// (an authorizer refuses anything else: writes, schema changes, `PRAGMA`s, `VACUUM`) and
    /// no other database may be attached (`SQLITE_LIMIT_ATTACHED` is 0), so a query can
    /// neither change the catalog nor create or read files elsewhere.
    pub fn open_read_only(results_root: &Path) -> Result<Catalog, CatalogError> {
        let path = results_root.join(CATALOG_FILE);
        if !check_files(&path)? {
            return Err(CatalogError::Missing { path });
        }
        let flags =
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let err = |source| CatalogError::Sqlite {
            path: path.clone(),
            source,
        };
        let conn = Connection::open_with_flags(&path, flags).map_err(err)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(err)?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0).map_err(err)?;
        conn.authorizer(Some(|ctx: AuthContext<'_>| match ctx.action {
            AuthAction::Select | AuthAction::Read { .. } | AuthAction::Function { .. } | AuthAction::Recursive => {
                Authorization::Allow
            }
            _ => Authorization::Deny,
        }))
        .map_err(err)?;
        Ok(Catalog {
            conn,
            path,
            root: results_root.to_path_buf(),
        })
    }

    /// The catalog file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The results root it indexes.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The schema version stored in `meta`.
    pub fn schema_version(&self) -> Result<i64, CatalogError> {
        read_version(&self.conn).map_err(|e| self.err(e))
    }

    fn err(&self, source: rusqlite::Error) -> CatalogError {
        CatalogError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn migrate(&mut self) -> Result<(), CatalogError> {
        let setup = || -> rusqlite::Result<()> {
            // Several runs may finish at once: wait for the writer instead of failing.
            self.conn.busy_timeout(Duration::from_secs(10))?;
            self.conn.execute_batch("PRAGMA foreign_keys = ON;")
        };
        setup().map_err(|e| self.err(e))?;
        let found = self.schema_version()?;
        if found > CATALOG_SCHEMA_VERSION {
            return Err(CatalogError::NewerSchema {
                path: self.path.clone(),
                found,
                supported: CATALOG_SCHEMA_VERSION,
            });
        }
        if found == CATALOG_SCHEMA_VERSION {
            return Ok(());
        }
        let path = self.path.clone();
        let apply = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            // Another process may have migrated while this one waited for the lock.
            let now = read_version(&tx)?;
            for sql in &MIGRATIONS[now as usize..] {
                tx.execute_batch(sql)?;
            }
            tx.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![CATALOG_SCHEMA_VERSION.to_string()],
            )?;
            tx.commit()
        };
        apply(&mut self.conn).map_err(|source| CatalogError::Sqlite { path, source })
    }

    /// Records one run (insert or replace: recording the same run twice gives the same rows).
    /// Reads `manifest.json`, `summary.json` (a run without it is recorded with `complete = 0`),
    /// `intervals.jsonl`, `telemetry.jsonl`, `tpch.json` and the figures of [`super::figures`]
    /// (each skipped if missing or unreadable).
    pub fn record_run(&mut self, dir: &RunDir) -> Result<(), CatalogError> {
        let records = RunRecords::read(dir.path())?;
        let intervals: Vec<IntervalRecord> = dir.read_intervals().map(|j| j.records).unwrap_or_default();
        let telemetry = read_telemetry(dir);
        let tpch = TpchReport::read(dir).ok().flatten();
        let (figures, _unreadable) = figures::read(dir, records.summary.as_ref());
        let path = fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
        let result = (|| -> rusqlite::Result<()> {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            write_run(&tx, dir.run_id(), &path, &records, &intervals, tpch.is_some())?;
            write_telemetry(&tx, dir.run_id(), &telemetry)?;
            write_tpch(&tx, dir.run_id(), tpch.as_ref())?;
            write_metrics(&tx, dir.run_id(), &figures)?;
            tx.commit()
        })();
        result.map_err(|e| self.err(e))
    }

    /// Records every run directory directly under the results root that is not in the catalog
    /// yet, was recorded incomplete and may have finished since, or has no `metrics` rows (it
    /// was recorded before the catalog had that table). A directory without
    /// `manifest.json` is not a run and is skipped silently; one that cannot be read is listed
    /// in [`RescanReport::failed`] and the scan goes on.
    pub fn rescan(&mut self) -> Result<RescanReport, CatalogError> {
        let mut report = RescanReport::default();
        let entries = fs::read_dir(&self.root).map_err(|source| ResultsError::Read {
            path: self.root.clone(),
            source,
        })?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.join("manifest.json").is_file())
            .collect();
        dirs.sort();
        for path in dirs {
            let id = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let complete: Option<bool> = self
                .conn
                .query_row(
                    "SELECT complete AND EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = runs.run_id)
                     FROM runs WHERE run_id = ?1",
                    params![id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| self.err(e))?;
            if complete == Some(true) {
                report.unchanged += 1;
                continue;
            }
            match RunDir::open(&path)
                .map_err(CatalogError::from)
                .and_then(|d| self.record_run(&d))
            {
                Ok(()) => report.recorded.push(id),
                Err(e) => report.failed.push((path, e.to_string())),
            }
        }
        Ok(report)
    }

    /// Where the run `run_id` is, if the catalog knows it.
    pub fn run_path(&self, run_id: &str) -> Result<Option<PathBuf>, CatalogError> {
        self.conn
            .query_row("SELECT path FROM runs WHERE run_id = ?1", params![run_id], |r| {
                r.get::<_, String>(0)
            })
            .optional()
            .map(|p| p.map(PathBuf::from))
            .map_err(|e| self.err(e))
    }

    /// The run directories of lab experiment `experiment`, ordered by server, variant, threads
    /// and repetition. Empty if the catalog has none (run `rescan` first to be sure).
    pub fn runs_of_experiment(&self, experiment: &str) -> Result<Vec<PathBuf>, CatalogError> {
        let query = || -> rusqlite::Result<Vec<PathBuf>> {
            let mut stmt = self.conn.prepare(
                "SELECT path FROM runs WHERE experiment = ?1
                 ORDER BY server, variant, threads, rep, run_id",
            )?;
            let rows = stmt.query_map(params![experiment], |r| r.get::<_, String>(0))?;
            rows.map(|r| r.map(PathBuf::from)).collect()
        };
        query().map_err(|e| self.err(e))
    }

    /// Runs one SQL statement and returns its column names and rows, every value as text
    /// (`NULL` as an empty string), for `dbperf results sql`.
    pub fn query(&self, sql: &str) -> Result<(Vec<String>, Vec<Vec<String>>), CatalogError> {
        let run = || -> rusqlite::Result<(Vec<String>, Vec<Vec<String>>)> {
            let mut stmt = self.conn.prepare(sql)?;
            let names: Vec<String> = stmt.column_names().into_iter().map(String::from).collect();
            let n = names.len();
            let mut rows = stmt.query([])?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let mut values = Vec::with_capacity(n);
                for i in 0..n {
                    values.push(match row.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => String::new(),
                        rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                        rusqlite::types::ValueRef::Real(v) => v.to_string(),
                        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                    });
                }
                out.push(values);
            }
            Ok((names, out))
        };
        run().map_err(|e| self.err(e))
    }
}

/// Checks that the catalog at `path` and SQLite's files beside it (`-journal`, `-wal`,
/// `-shm`) are regular files or absent; true if the catalog exists.
fn check_files(path: &Path) -> Result<bool, CatalogError> {
    let mut exists = false;
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        let regular = dbperf_core::nofollow::regular_or_absent(&file)
            .map_err(|source| CatalogError::NotAFile { path: file, source })?;
        exists |= suffix.is_empty() && regular;
    }
    Ok(exists)
}

fn read_version(conn: &Connection) -> rusqlite::Result<i64> {
    let has_meta: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta')",
        [],
        |r| r.get(0),
    )?;
    if !has_meta {
        return Ok(0);
    }
    let v: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
        .optional()?;
    Ok(v.and_then(|v| v.parse().ok()).unwrap_or(0))
}

fn write_run(
    tx: &Transaction<'_>,
    run_id: &str,
    path: &Path,
    records: &RunRecords,
    intervals: &[IntervalRecord],
    tpch: bool,
) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM runs WHERE run_id = ?1", params![run_id])?;
    let m = &records.manifest;
    let s = records.summary.as_ref();
    let lab = m.lab.as_ref();
    let threads = s
        .map(|s| s.threads)
        .or(lab.map(|l| l.threads))
        .or_else(|| m.workload.options.connections().map(|t| t as u32));
    let server_version = s
        .and_then(|s| s.server.version.clone())
        .or_else(|| m.server.as_ref().map(|f| f.version.clone()));
    let indexed_at = super::manifest::rfc3339_utc(chrono::Utc::now());
    tx.execute(
        "INSERT INTO runs (run_id, path, started_at, workload, server_version, threads, rate,
             duration_s, tps, qps, latency_p50_ms, latency_p95_ms, latency_p99_ms, latency_max_ms,
             errors_total, interrupted, complete, experiment, point, server, variant, rep,
             dbperf_version, indexed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
             ?19, ?20, ?21, ?22, ?23, ?24)",
        params![
            run_id,
            path.to_string_lossy(),
            m.started_at,
            m.workload.name,
            server_version,
            threads,
            s.and_then(|s| s.rate),
            s.map(|s| s.duration_s),
            s.map(|s| s.transactions.per_sec),
            s.map(|s| s.queries.per_sec),
            s.map(|s| s.latency_ms.p50),
            s.map(|s| s.latency_ms.p95),
            s.map(|s| s.latency_ms.p99),
            s.map(|s| s.latency_ms.max),
            s.map(|s| i64::try_from(s.errors.total).unwrap_or(i64::MAX)),
            s.map(|s| s.interrupted),
            // A TPC-H run has no summary.json: its tpch.json is written when it finished.
            s.is_some() || tpch,
            lab.map(|l| &l.experiment),
            lab.map(|l| &l.point),
            lab.map(|l| &l.server),
            lab.map(|l| &l.variant),
            lab.map(|l| l.rep),
            m.dbperf_version,
            indexed_at,
        ],
    )?;
    tx.execute(
        "UPDATE runs SET pinning = ?2 WHERE run_id = ?1",
        params![run_id, lab.map(|l| &l.pinning).filter(|p| !p.is_empty())],
    )?;
    if let Some(facts) = &m.server {
        let mut stmt = tx.prepare("INSERT INTO variables (run_id, name, value) VALUES (?1, ?2, ?3)")?;
        for (name, value) in &facts.variables {
            stmt.execute(params![run_id, name, value])?;
        }
    }
    let mut stmt = tx.prepare("INSERT INTO run_options (run_id, name, value) VALUES (?1, ?2, ?3)")?;
    for (name, value) in &m.workload.options.to_map() {
        let text = match value {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        };
        stmt.execute(params![run_id, name, text])?;
    }
    let mut stmt = tx.prepare(
        "INSERT OR REPLACE INTO intervals (run_id, idx, t_s, warmup, threads, tps, qps, errors_per_sec,
             latency_p50_ms, latency_p95_ms, latency_p99_ms, latency_max_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?;
    for r in intervals {
        stmt.execute(params![
            run_id,
            r.index,
            r.end_s,
            r.warmup,
            r.threads,
            r.tps,
            r.qps,
            r.errors_per_sec,
            r.latency_ms.p50,
            r.latency_ms.p95,
            r.latency_ms.p99,
            r.latency_ms.max,
        ])?;
    }
    Ok(())
}

/// One `telemetry` row per line of `telemetry.jsonl`: the headline figures (the whole-machine
/// CPU, the busiest disk, the top wait); the file keeps everything else.
/// The `tpch` row and the `tpch_queries` rows of a TPC-H run's `tpch.json` (power or
/// throughput test).
fn write_tpch(tx: &Transaction<'_>, run_id: &str, report: Option<&TpchReport>) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM tpch_queries WHERE run_id = ?1", params![run_id])?;
    tx.execute("DELETE FROM tpch WHERE run_id = ?1", params![run_id])?;
    let Some(report) = report else { return Ok(()) };
    let insert_row = "INSERT INTO tpch (run_id, test, scale_factor, seed, validation, cold, timeout_s, streams,
             power_at_size, throughput_at_size)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
    let mut stmt = tx.prepare(
        "INSERT OR REPLACE INTO tpch_queries (run_id, rep, stream, query, position, seconds, status)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    let mut refreshes: Vec<(i64, &'static str, Option<f64>)> = Vec::new();
    match report {
        TpchReport::Power(p) => {
            let cold = match p.cold {
                Cold::Off => "off",
                Cold::Query => "query",
                Cold::Run => "run",
            };
            tx.execute(
                insert_row,
                params![
                    run_id,
                    "power",
                    p.scale_factor,
                    p.seed,
                    p.validation,
                    cold,
                    p.timeout_seconds,
                    None::<i64>,
                    p.power_at_size,
                    None::<f64>,
                ],
            )?;
            // Its repetitions on stream 0, with RF1 and RF2 around them.
            for run in &p.runs {
                let rep = i64::from(run.rep);
                insert_queries(&mut stmt, run_id, rep, 0, &run.queries)?;
                refreshes.push((rep, "RF1", run.rf1_seconds));
                refreshes.push((rep, "RF2", run.rf2_seconds));
            }
        }
        TpchReport::Throughput(t) => {
            tx.execute(
                insert_row,
                params![
                    run_id,
                    "throughput",
                    t.scale_factor,
                    t.seed,
                    t.validation,
                    None::<String>,
                    t.timeout_seconds,
                    t.streams.len() as i64,
                    None::<f64>,
                    t.throughput_at_size,
                ],
            )?;
            // S streams once; the refresh stream's pairs on stream 0, rep = pair.
            for s in &t.streams {
                insert_queries(&mut stmt, run_id, 1, i64::from(s.stream), &s.queries)?;
            }
            for (i, pair) in t.refresh.iter().enumerate() {
                refreshes.push((i as i64 + 1, "RF1", Some(pair.rf1_seconds)));
                refreshes.push((i as i64 + 1, "RF2", Some(pair.rf2_seconds)));
            }
        }
    }
    for (rep, name, seconds) in refreshes {
        if let Some(seconds) = seconds {
            stmt.execute(params![run_id, rep, 0, name, None::<i64>, seconds, "ok"])?;
        }
    }
    Ok(())
}

/// One `tpch_queries` row per query timing.
fn insert_queries(
    stmt: &mut rusqlite::Statement<'_>,
    run_id: &str,
    rep: i64,
    stream: i64,
    queries: &[QueryTiming],
) -> rusqlite::Result<()> {
    for q in queries {
        let status = match q.status {
            Status::Ok => "ok",
            Status::Timeout => "timeout",
            Status::Error => "error",
        };
        stmt.execute(params![
            run_id,
            rep,
            stream,
            format!("Q{}", q.query),
            q.position as i64,
            q.seconds,
            status,
        ])?;
    }
    Ok(())
}

/// One `metrics` row per figure: the median of its samples, min, max and how many.
fn write_metrics(tx: &Transaction<'_>, run_id: &str, figures: &Figures) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM metrics WHERE run_id = ?1", params![run_id])?;
    let mut stmt =
        tx.prepare("INSERT INTO metrics (run_id, name, value, min, max, n) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
    for (name, samples) in figures {
        if let Some(s) = Spread::of(samples) {
            stmt.execute(params![run_id, name, s.median, s.min, s.max, s.n as i64])?;
        }
    }
    Ok(())
}

/// The rows of `telemetry.jsonl`, typed (none if the file is missing or unreadable; a torn
/// last row is skipped, as every reader does).
fn read_telemetry(dir: &RunDir) -> Vec<TelemetryRow> {
    dir.file(TELEMETRY_FILE)
        .ok()
        .and_then(|p| super::read_jsonl::<TelemetryRow>(&p).ok())
        .map(|j| j.records)
        .unwrap_or_default()
}

fn write_telemetry(tx: &Transaction<'_>, run_id: &str, rows: &[TelemetryRow]) -> rusqlite::Result<()> {
    tx.execute("DELETE FROM telemetry WHERE run_id = ?1", params![run_id])?;
    let mut stmt = tx.prepare(
        "INSERT INTO telemetry (run_id, idx, t_s, interval_s, checkpoint_pct, dirty_pages_pct,
             pages_written_s, redo_written_bytes_s, history_list_length, threads_running, top_wait,
             top_wait_ms, cpu_user_pct, cpu_sys_pct, cpu_iowait_pct, disk, disk_w_s, disk_wkb_s,
             disk_util_pct, client_cpu_pct, client_rss_bytes, sync_flush_pages_s)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
             ?19, ?20, ?21, ?22)",
    )?;
    for (idx, row) in rows.iter().enumerate() {
        let srv = row.server.as_ref();
        // The sampler writes the waits busiest first.
        let wait = srv.and_then(|s| s.waits.first());
        let all_cpu = row.os.as_ref().and_then(|os| os.cpus.iter().find(|c| c.cpu == "all"));
        // The server's disk: on the database host when the run had one apart.
        let disk = row.server_os().and_then(OsSample::busiest_disk);
        stmt.execute(params![
            run_id,
            idx as i64,
            row.t_s,
            row.interval_s,
            srv.and_then(|s| s.checkpoint_pct),
            srv.and_then(|s| s.dirty_pages_pct),
            srv.and_then(|s| s.pages_written_s),
            srv.and_then(|s| s.redo_written_bytes_s),
            srv.and_then(|s| s.history_list_length).map(|v| v as f64),
            srv.and_then(|s| s.threads_running).map(|v| v as f64),
            wait.map(|w| w.event.as_str()),
            wait.map(|w| w.time_ms),
            all_cpu.map(|c| c.user),
            all_cpu.map(|c| c.sys),
            all_cpu.map(|c| c.iowait),
            disk.map(|d| d.name.as_str()),
            disk.map(|d| d.w_s),
            disk.map(|d| d.wkb_s),
            disk.map(|d| d.util_pct),
            row.client.as_ref().map(|c| c.cpu_pct),
            row.client.as_ref().map(|c| c.rss_bytes as i64),
            srv.and_then(|s| s.sync_flush_pages_s),
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interval::Percentiles;
    use crate::{summary, LabPoint, Manifest, ServerFacts, WorkloadInfo, TPCH_FILE};

    fn make_run(root: &Path, threads: u32, tps: Option<f64>, lab: Option<LabPoint>) -> RunDir {
        let dir = RunDir::create(root, "oltp_point_select").unwrap();
        let mut options = serde_json::Map::new();
        options.insert("tables".into(), 1.into());
        options.insert("connections".into(), threads.into());
        options.insert("rand_type".into(), "uniform".into());
        options.insert("rate".into(), Value::Null);
        let mut m = Manifest::new(
            &["dbperf".to_string()],
            WorkloadInfo::from_map("oltp_point_select", &options),
            "sandbox:c",
        );
        m.server = Some(ServerFacts {
            version: "10.11.6-MariaDB".into(),
            variables: [("sort_buffer_size", "2097152"), ("performance_schema", "OFF")]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .into(),
        });
        m.lab = lab;
        dir.write_json("manifest.json", &m).unwrap();
        let mut w = dir.interval_writer().unwrap();
        for i in 0..3 {
            w.append(&IntervalRecord {
                index: i,
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                warmup: false,
                threads,
                transactions: 100,
                tps: 100.0,
                qps: 100.0,
                rwo_per_sec: [100.0, 0.0, 0.0],
                errors: Default::default(),
                errors_per_sec: 0.0,
                reconnects_per_sec: 0.0,
                latency_ms: Percentiles {
                    p50: 1.0,
                    p95: 2.0,
                    p99: 3.0,
                    max: 4.0,
                },
                service_time_ms: Percentiles::default(),
                late_starts: 0,
                backlog: 0,
                server_unreachable: false,
            })
            .unwrap();
        }
        if let Some(tps) = tps {
            let s = summary::sample(dir.run_id(), "oltp_point_select", threads, tps, 2.0);
            dir.write_json("summary.json", &s).unwrap();
        }
        dir
    }

    fn count(c: &Catalog, sql: &str) -> i64 {
        c.conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn open_creates_a_versioned_schema_and_reopens() {
        let root = tempfile::tempdir().unwrap();
        let c = Catalog::open(root.path()).unwrap();
        assert_eq!(c.schema_version().unwrap(), CATALOG_SCHEMA_VERSION);
        drop(c);
        let c = Catalog::open(root.path()).unwrap();
        assert_eq!(c.schema_version().unwrap(), CATALOG_SCHEMA_VERSION);
    }

    #[test]
    fn a_planted_link_is_never_opened_as_the_catalog() {
        for planted in ["catalog.sqlite", "catalog.sqlite-journal", "catalog.sqlite-wal"] {
            let root = tempfile::tempdir().unwrap();
            let victim = root.path().join("victim");
            std::fs::write(&victim, "untouched").unwrap();
            std::os::unix::fs::symlink(&victim, root.path().join(planted)).unwrap();
            let err = Catalog::open(root.path()).unwrap_err().to_string();
            assert!(err.contains("symbolic link"), "{planted}: {err}");
            assert!(Catalog::open_read_only(root.path()).is_err(), "{planted}");
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched", "{planted}");
        }
    }

    #[test]
    fn read_only_queries_may_only_read() {
        let root = tempfile::tempdir().unwrap();
        make_run(root.path(), 4, Some(250.0), None);
        Catalog::open(root.path()).unwrap().rescan().unwrap();
        let c = Catalog::open_read_only(root.path()).unwrap();
        let (_, rows) = c.query("SELECT count(*) FROM runs").unwrap();
        assert_eq!(rows, [["1"]]);
        let elsewhere = root.path().join("elsewhere.db");
        for sql in [
            format!("ATTACH '{}' AS x", elsewhere.display()),
            format!("VACUUM INTO '{}'", elsewhere.display()),
            "DROP TABLE runs".to_owned(),
            "DELETE FROM runs".to_owned(),
            "CREATE TABLE t (a)".to_owned(),
            "PRAGMA journal_mode = WAL".to_owned(),
        ] {
            assert!(c.query(&sql).is_err(), "{sql} was allowed");
        }
        assert!(!elsewhere.exists(), "a file was created outside the catalog");
        let (_, rows) = c.query("SELECT count(*) FROM runs").unwrap();
        assert_eq!(rows, [["1"]]);
        let missing = tempfile::tempdir().unwrap();
        let err = Catalog::open_read_only(missing.path()).unwrap_err().to_string();
        assert!(err.contains("results index"), "{err}");
    }

    #[test]
    fn a_catalog_of_the_previous_version_gains_metrics_and_index_fills_them() {
        let root = tempfile::tempdir().unwrap();
        let dir = make_run(root.path(), 4, Some(250.0), None);
        let previous = MIGRATIONS.len() - 1;
        {
            // The catalog as the previous dbperf left it, the run recorded complete.
            let conn = Connection::open(root.path().join(CATALOG_FILE)).unwrap();
            for sql in &MIGRATIONS[..previous] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)",
                params![previous.to_string()],
            )
            .unwrap();
            conn.execute(
                "INSERT INTO runs (run_id, path, workload, tps, complete, dbperf_version, indexed_at)
                 VALUES (?1, ?2, 'oltp_point_select', 250, 1, '0.1.0', '2026-01-01T00:00:00Z')",
                params![dir.run_id(), dir.path().to_string_lossy()],
            )
            .unwrap();
        }
        let mut c = Catalog::open(root.path()).unwrap();
        assert_eq!(c.schema_version().unwrap(), CATALOG_SCHEMA_VERSION);
        assert_eq!(
            count(&c, "SELECT COUNT(*) FROM runs"),
            1,
            "the migration keeps the runs"
        );
        assert_eq!(count(&c, "SELECT COUNT(*) FROM metrics"), 0);
        // `dbperf results index`: the complete run is read again because it has no metrics yet.
        let report = c.rescan().unwrap();
        assert_eq!((report.recorded.len(), report.unchanged), (1, 0), "{report:?}");
        let tps: f64 = c
            .conn
            .query_row("SELECT value FROM metrics WHERE name = 'tps'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(tps, 250.0);
        // Now complete with its metrics: left alone.
        let report = c.rescan().unwrap();
        assert_eq!((report.recorded.len(), report.unchanged), (0, 1));
    }

    #[test]
    fn a_newer_catalog_is_refused_with_advice() {
        let root = tempfile::tempdir().unwrap();
        let c = Catalog::open(root.path()).unwrap();
        c.conn
            .execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'", [])
            .unwrap();
        drop(c);
        let e = Catalog::open(root.path()).unwrap_err().to_string();
        assert!(
            e.contains("schema version 99") && e.contains("dbperf results index"),
            "{e}"
        );
    }

    #[test]
    fn tpch_runs_are_recorded_with_every_query_and_refresh() {
        let root = tempfile::tempdir().unwrap();
        let dir = RunDir::create(root.path(), "tpch-power").unwrap();
        let m = Manifest::new(
            &["dbperf".to_string()],
            WorkloadInfo {
                name: "tpch-power".into(),
                options: Default::default(),
            },
            "sandbox:c",
        );
        dir.write_json("manifest.json", &m).unwrap();
        let mut c = Catalog::open(root.path()).unwrap();
        // Still running: no tpch.json, so the run is incomplete and has no TPC-H rows.
        c.record_run(&dir).unwrap();
        let count = |c: &Catalog, sql: &str| -> i64 { c.conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(count(&c, "SELECT complete FROM runs"), 0);
        let queries = |rep: u32, slow: f64| {
            (1..=22u8)
                .map(|q| {
                    serde_json::json!({"query": q, "position": q, "seconds": if q == 9 { slow } else { 0.5 },
                                       "status": if slow > 100.0 && q == 9 { "timeout" } else { "ok" }, "rows": 1, "rep": rep})
                })
                .collect::<Vec<_>>()
        };
        let report = serde_json::json!({
            "schema": "dbperf.tpch/1", "test": "power", "scale_factor": 0.01, "seed": 7, "validation": false,
            "server_version": "11.4.5-MariaDB", "timeout_seconds": 120.0, "cold": "query", "stream_order": [],
            "runs": [
                {"rep": 1, "refresh_set": 1, "rf1_seconds": 0.2, "rf2_seconds": 0.1, "queries": queries(1, 3.0), "power_at_size": 50.0},
                {"rep": 2, "refresh_set": 2, "rf1_seconds": 0.3, "rf2_seconds": 0.1, "queries": queries(2, 120.0), "power_at_size": null}
            ],
            "queries": [], "power_at_size": 50.0
        });
        dir.write_json(TPCH_FILE, &report).unwrap();
        c.record_run(&dir).unwrap();
        c.record_run(&dir).unwrap();
        assert_eq!(count(&c, "SELECT complete FROM runs"), 1);
        assert_eq!(
            c.conn
                .query_row("SELECT test, scale_factor, cold, power_at_size FROM tpch", [], |r| Ok(
                    (
                        r.get::<_, String>(0)?,
                        r.get::<_, f64>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, f64>(3)?
                    )
                ))
                .unwrap(),
            ("power".to_string(), 0.01, "query".to_string(), 50.0)
        );
        assert_eq!(count(&c, "SELECT COUNT(*) FROM tpch_queries"), 2 * 24);
        // Figures by name: Q9 finished once (3 s), the others twice; one repetition had every
        // query finish, so one geometric mean and one Power@Size.
        let metric = |name: &str| -> (f64, f64, f64, i64) {
            c.conn
                .query_row(
                    "SELECT value, min, max, n FROM metrics WHERE name = ?1",
                    params![name],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .unwrap()
        };
        assert_eq!(metric("q9"), (3.0, 3.0, 3.0, 1));
        assert_eq!(metric("q1"), (0.5, 0.5, 0.5, 2));
        assert_eq!(metric("power"), (50.0, 50.0, 50.0, 1));
        let geomean = metric("geomean").0;
        assert!((geomean - (3f64.ln() / 22.0 + 21.0 * 0.5f64.ln() / 22.0).exp()).abs() < 1e-9);
        assert_eq!(
            count(
                &c,
                "SELECT COUNT(*) FROM tpch_queries WHERE query = 'Q9' AND status = 'timeout'"
            ),
            1
        );
        let rf1: f64 = c
            .conn
            .query_row(
                "SELECT seconds FROM tpch_queries WHERE rep = 2 AND query = 'RF1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rf1, 0.3);
        // A rescan leaves the complete run alone; a rebuilt catalog has the same rows.
        assert_eq!(c.rescan().unwrap().unchanged, 1);
        drop(c);
        std::fs::remove_file(root.path().join(CATALOG_FILE)).unwrap();
        let mut c = Catalog::open(root.path()).unwrap();
        c.rescan().unwrap();
        assert_eq!(count(&c, "SELECT COUNT(*) FROM tpch_queries"), 48);
    }

    #[test]
    fn record_run_is_idempotent_and_fills_every_table() {
        let root = tempfile::tempdir().unwrap();
        let dir = make_run(root.path(), 4, Some(1234.5), None);
        let mut c = Catalog::open(root.path()).unwrap();
        c.record_run(&dir).unwrap();
        c.record_run(&dir).unwrap();
        assert_eq!(count(&c, "SELECT COUNT(*) FROM runs"), 1);
        assert_eq!(count(&c, "SELECT COUNT(*) FROM variables"), 2);
        assert_eq!(count(&c, "SELECT COUNT(*) FROM run_options"), 4);
        assert_eq!(count(&c, "SELECT COUNT(*) FROM intervals"), 3);
        let (names, rows) = c
            .query("SELECT threads, tps, complete, experiment, latency_p95_ms FROM runs")
            .unwrap();
        assert_eq!(names, ["threads", "tps", "complete", "experiment", "latency_p95_ms"]);
        assert_eq!(rows, vec![vec!["4", "1234.5", "1", "", "2"]]);
        let (_, opts) = c.query("SELECT name, value FROM run_options ORDER BY name").unwrap();
        assert_eq!(opts[1], ["rand_type", "uniform"]);
        assert_eq!(opts[2], ["rate", ""]);
    }

    #[test]
    fn telemetry_lines_become_rows_with_the_headline_figures() {
        let root = tempfile::tempdir().unwrap();
        let dir = make_run(root.path(), 4, Some(100.0), None);
        let lines = [
            r#"{"t_s":1.0,"interval_s":1.0,"os":{"cpus":[{"cpu":"all","user":40.0,"sys":10.0,"iowait":5.0},{"cpu":"cpu0","user":80.0}],"disks":[{"name":"vda","w_s":10.0,"wkb_s":400.0,"util_pct":12.0},{"name":"vdb","w_s":90.0,"wkb_s":9000.0,"util_pct":70.0}]},"server":{"checkpoint_pct":97.5,"dirty_pages_pct":78.0,"sync_flush_pages_s":2400.0,"waits":[{"event":"wait/synch/mutex/innodb/log_sys_mutex","count":9,"time_ms":12.5}]},"client":{"cpu_pct":35.0,"rss_bytes":1000}}"#,
            r#"{"t_s":2.0,"interval_s":1.0,"os":null,"server":null,"server_error":"timeout","client":{"cpu_pct":30.0,"rss_bytes":1000}}"#,
        ];
        std::fs::write(dir.path().join(TELEMETRY_FILE), lines.join("\n") + "\n").unwrap();
        let mut c = Catalog::open(root.path()).unwrap();
        c.record_run(&dir).unwrap();
        c.record_run(&dir).unwrap();
        let (_, rows) = c
            .query("SELECT t_s, checkpoint_pct, top_wait, cpu_user_pct, disk, disk_util_pct, client_cpu_pct, sync_flush_pages_s FROM telemetry ORDER BY idx")
            .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0],
            [
                "1",
                "97.5",
                "wait/synch/mutex/innodb/log_sys_mutex",
                "40",
                "vdb",
                "70",
                "35",
                "2400"
            ]
        );
        assert_eq!(rows[1], ["2", "", "", "", "", "", "30", ""]);
    }

    #[test]
    fn a_run_without_summary_is_incomplete_until_rescanned() {
        let root = tempfile::tempdir().unwrap();
        let dir = make_run(root.path(), 2, None, None);
        std::fs::create_dir(root.path().join("not-a-run")).unwrap();
        let mut c = Catalog::open(root.path()).unwrap();
        let r = c.rescan().unwrap();
        assert_eq!((r.recorded.len(), r.unchanged, r.failed.len()), (1, 0, 0));
        assert_eq!(count(&c, "SELECT complete FROM runs"), 0);
        assert_eq!(count(&c, "SELECT threads FROM runs"), 2, "threads from the options");
        let s = summary::sample(dir.run_id(), "oltp_point_select", 2, 10.0, 1.0);
        dir.write_json("summary.json", &s).unwrap();
        let r = c.rescan().unwrap();
        assert_eq!(r.recorded, [dir.run_id()]);
        assert_eq!(count(&c, "SELECT complete FROM runs"), 1);
        let r = c.rescan().unwrap();
        assert_eq!((r.recorded.len(), r.unchanged), (0, 1));
    }

    #[test]
    fn runs_of_an_experiment_come_in_point_order() {
        let root = tempfile::tempdir().unwrap();
        let point = |server: &str, threads: u32, rep: u32| LabPoint {
            experiment: "dw".into(),
            point: format!("{server}/default/oltp_point_select/t{threads}/r{rep}"),
            server: server.into(),
            variant: "default".into(),
            workload: "oltp_point_select".into(),
            threads,
            rep,
            ..LabPoint::default()
        };
        let b = make_run(root.path(), 1, Some(1.0), Some(point("mysql", 1, 1)));
        let a2 = make_run(root.path(), 1, Some(1.0), Some(point("mariadb", 1, 2)));
        let a1 = make_run(root.path(), 1, Some(1.0), Some(point("mariadb", 1, 1)));
        make_run(root.path(), 1, Some(1.0), None);
        let mut c = Catalog::open(root.path()).unwrap();
        c.rescan().unwrap();
        let paths = c.runs_of_experiment("dw").unwrap();
        let ids: Vec<_> = paths.iter().map(|p| p.file_name().unwrap().to_str().unwrap()).collect();
        assert_eq!(ids, [a1.run_id(), a2.run_id(), b.run_id()]);
        assert!(c.runs_of_experiment("nope").unwrap().is_empty());
        assert_eq!(c.run_path(b.run_id()).unwrap(), Some(paths[2].clone()));
        assert_eq!(c.run_path("nope").unwrap(), None);
    }
}
