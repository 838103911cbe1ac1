//! `tpcc prepare` and `tpcc cleanup`: parallel, resumable loading.
//!
//! The work is ITEM plus one unit per warehouse, taken in order by a pool of connections.
//! A unit is one transaction that also inserts its row into [`LOADED_TABLE`], so a unit is
//! either wholly loaded and recorded or (after an interruption, which the server rolls
//! back) absent: a second `prepare` with the same arguments loads only what is missing,
//! starting at the first incomplete warehouse. On MariaDB rows go by default as bulk
//! executes of a prepared one-row INSERT, 1,000 rows of binary parameters per command
//! (COM_STMT_BULK_EXECUTE: the server parses and binds once, then only converts values,
//! which costs it about a fifth less CPU per row than LOAD DATA's text reader). Elsewhere,
//! or with `--load-method load-data`, they go as `LOAD DATA LOCAL INFILE` of 10,000
//! tab-separated rows generated in memory (no file); with `--load-method insert` or when
//! the server has `local_infile` off, as prepared 1,000-row INSERTs. PostgreSQL takes
//! COPY. Secondary indexes, then foreign keys (`--fk`), are built once every unit is
//! in, each looked up first so that a prepare killed while building them resumes too. Tables
//! are recorded as dbperf's before they are created ([`crate::ddl`]): `prepare`
//! refuses TPC-C tables dbperf did not create, and `cleanup` leaves them alone unless
//! `--force`. A unit the server picks as a deadlock victim (or whose lock wait times out) is
//! rolled back whole, its completion row with it, and loaded again ([`UNIT_ATTEMPTS`]): a
//! prepare resumed right after an interrupted one meets the server still rolling back the
//! interrupted one's units, and its first inserts deadlock with those rollbacks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use indicatif::ProgressBar;

use super::load::{Batch, InsertShape, LoadParams, OrderPlan, RowGen, Table, ITEMS, ROWS_PER_WAREHOUSE};
use super::rand::NuConstants;
use super::schema::{Schema, LOADED_TABLE, META_TABLE};
use crate::ddl::{self, DdlError};
use crate::LoadMethod;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::{doing, Failed, Session, StmtId, Target};
use dbperf_engine::ErrorClass;

/// Rows per INSERT (17,000 parameters for STOCK, under the protocol's 65,535).
const ROWS_PER_INSERT: usize = 1000;

/// Rows per bulk execute: about 300 KB of STOCK.
const ROWS_PER_BULK: usize = 1000;

/// Rows per LOAD DATA statement: about 3 MB of STOCK, so a loader's memory stays small.
const ROWS_PER_LOAD: usize = 10_000;

/// How many times a unit is loaded before a deadlock or lock wait timeout fails the prepare.
const UNIT_ATTEMPTS: u32 = 5;

/// What to load.
#[derive(Clone, Debug)]
pub struct PrepareConfig {
    /// Where.
    pub target: Target,
    /// Schema spelling and options.
    pub schema: Schema,
    /// Warehouses.
    pub warehouses: u32,
    /// Loader connections.
    pub connections: u32,
    /// Seed of the data.
    pub seed: u64,
    /// Add foreign keys after the data.
    pub foreign_keys: bool,
    /// Storage engine.
    pub engine: String,
    /// Progress bar on stderr.
    pub progress: bool,
    /// Bulk execute, LOAD DATA or INSERT on MySQL-protocol servers; `None` takes the
    /// cheapest the server offers. PostgreSQL always loads with COPY.
    pub method: Option<LoadMethod>,
}

/// What a prepare did.
#[derive(Clone, Debug)]
pub struct PrepareReport {
    /// Units loaded by this call (warehouses, plus ITEM as one).
    pub units_loaded: usize,
    /// Warehouses already loaded by an earlier, interrupted call.
    pub resumed_from: Option<u32>,
    /// Rows inserted by this call.
    pub rows: u64,
    /// Time loading rows.
    pub load: Duration,
    /// Time building indexes and foreign keys.
    pub index: Duration,
    /// How the rows went in, in words ("bulk execute", "COPY", ...).
    pub method: &'static str,
}

impl PrepareReport {
    /// `tpcc prepare`'s summary line; `foreign_keys` when they were built too.
    pub fn text(&self, foreign_keys: bool) -> String {
        let secs = self.load.as_secs_f64();
        format!(
            "Loaded {} unit(s), {} rows in {:.1} s ({} rows/s, {}){}; indexes{} took {:.1} s",
            self.units_loaded,
            indicatif::HumanCount(self.rows),
            secs,
            indicatif::HumanCount((self.rows as f64 / secs.max(1e-9)) as u64),
            self.method,
            self.resumed_from
                .map_or(String::new(), |w| format!(", resumed at warehouse {w}")),
            if foreign_keys { " and foreign keys" } else { "" },
            self.index.as_secs_f64()
        )
    }
}

/// A failed prepare or cleanup.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// TPC-C tables are there but not from a dbperf prepare with these arguments.
    #[error("{0}")]
    Conflict(String),
    /// The server refused a statement.
    #[error(transparent)]
    Db(#[from] Failed),
    /// A cleanup refused to drop tables dbperf did not create.
    #[error(transparent)]
    Ddl(#[from] DdlError),
}

/// Connects a loading or administrative session.
pub async fn connect(target: &Target) -> Result<AnySession, PrepareError> {
    AnySession::connect(target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(|e| doing("connecting")(e).into())
}

/// Connects a loading session, on which a deadlock, lock wait timeout or serialization
/// failure is classified as such (and the unit loaded again) rather than fatal.
async fn connect_loader(target: &Target) -> Result<AnySession, PrepareError> {
    let retried = match target.family {
        dbperf_driver::target::Family::Mysql => IgnoreErrors::Codes([1213, 1205].into_iter().collect()),
        dbperf_driver::target::Family::Postgres => {
            IgnoreErrors::Sqlstates(["40P01", "40001", "55P03"].into_iter().map(String::from).collect())
        }
    };
    AnySession::connect(target, retried)
        .await
        .map_err(|e| doing("connecting")(e).into())
}

/// Before a run: checks that `database` holds `warehouses` warehouses in `schema`'s spelling,
/// and counts the run in the bookkeeping (so `check` knows 3.3.2.11 no longer applies).
/// C_LAST of the load, `None` when the database has no dbperf bookkeeping.
pub async fn ready_for_run<S: Session>(
    s: &mut S,
    schema: &Schema,
    warehouses: u32,
    database: &str,
) -> Result<Option<i64>, PrepareError> {
    let w = warehouses;
    let loaded = match super::check::count(s, "SELECT COUNT(*) FROM warehouse", "counting warehouses").await {
        Ok(n) => n,
        Err(super::check::CheckError::Db(_)) => 0,
        Err(e) => return Err(PrepareError::Conflict(e.to_string())),
    };
    if loaded < u64::from(w) {
        return Err(PrepareError::Conflict(format!(
            "{database} holds {loaded} warehouse(s), fewer than --warehouses {w}: run `dbperf tpcc prepare --warehouses {w}` (same --target{}) first",
            if schema.kind == super::schema::SchemaKind::TpccMysql { ", --schema tpcc-mysql" } else { "" }
        )));
    }
    if s.query_rows(&format!("SELECT COUNT(*) FROM {}", schema.new_order()))
        .await
        .is_err()
    {
        return Err(PrepareError::Conflict(format!(
            "table {} is missing: the database looks like the other --schema spelling (dbperf or tpcc-mysql)",
            schema.new_order()
        )));
    }
    let c_last_load = meta(s, "c_last_load").await;
    if c_last_load.is_some() {
        let bump = if schema.postgres() {
            format!("INSERT INTO {META_TABLE} AS m (name, value) VALUES ('runs', 1) ON CONFLICT (name) DO UPDATE SET value = m.value + 1")
        } else {
            format!(
                "INSERT INTO {META_TABLE} (name, value) VALUES ('runs', 1) ON DUPLICATE KEY UPDATE value = value + 1"
            )
        };
        s.query(&bump)
            .await
            .map_err(doing("recording the run in the bookkeeping table"))?;
    }
    Ok(c_last_load)
}

/// Reads `name` from the bookkeeping table, `None` when the table or row is missing.
pub async fn meta<S: Session>(s: &mut S, name: &str) -> Option<i64> {
    let rows = s
        .query_rows(&format!("SELECT value FROM {META_TABLE} WHERE name = '{name}'"))
        .await
        .ok()?;
    rows.first()?.first()?.as_deref()?.parse().ok()
}

async fn set_meta(s: &mut AnySession, schema: &Schema, name: &str, value: i64) -> Result<(), PrepareError> {
    s.query(&schema.set_meta(name, value))
        .await
        .map_err(doing(format!("writing {META_TABLE}")))?;
    Ok(())
}

/// Creates the schema (or checks the one an earlier call left), loads what is missing,
/// then builds indexes and foreign keys.
pub async fn prepare(cfg: &PrepareConfig) -> Result<PrepareReport, PrepareError> {
    let mut admin = connect(&cfg.target).await?;
    // Before anything is created: an impossible method changes nothing.
    let (method, infile_off) = choose_method(&mut admin, cfg).await?;
    let family = cfg.target.family;
    let inv = ddl::inventory(&mut admin, family).await?;
    let tables = cfg.schema.tables();
    let foreign = inv.foreign(tables.iter().copied().chain([META_TABLE, LOADED_TABLE]));
    if !foreign.is_empty() {
        let mut e = ddl::refuse_foreign("dbperf tpcc prepare", &foreign, &cfg.target.database).to_string();
        e.push_str("; if tpcc-mysql loaded them, `dbperf tpcc run --schema tpcc-mysql` runs on them as they are");
        return Err(PrepareError::Conflict(e));
    }
    let others = inv.others("tpcc", tables.iter().copied());
    if !others.is_empty() {
        return Err(ddl::refuse_others("dbperf tpcc prepare", &others, &cfg.target.database).into());
    }
    // Every step below can be interrupted and run again: bookkeeping and tables are
    // recorded before they are created, the load parameters are checked once written.
    for (t, sql) in cfg.schema.create_bookkeeping() {
        ddl::create_table(&mut admin, family, &inv, "tpcc", "", t, &sql).await?;
    }
    let (w, seed) = (meta(&mut admin, "warehouses").await, meta(&mut admin, "seed").await);
    match (w, seed) {
        (Some(w), Some(seed)) if w == cfg.warehouses as i64 && seed == cfg.seed as i64 => {}
        (None, _) => {
            let load = NuConstants::for_load(cfg.seed);
            set_meta(&mut admin, &cfg.schema, "seed", cfg.seed as i64).await?;
            set_meta(&mut admin, &cfg.schema, "c_last_load", load.c_last).await?;
            // Written last: its presence says the other two are there.
            set_meta(&mut admin, &cfg.schema, "warehouses", cfg.warehouses as i64).await?;
        }
        (w, seed) => {
            return Err(PrepareError::Conflict(format!(
                "an earlier prepare in {} used --warehouses {} --seed {}; repeat those to resume it, or run `dbperf tpcc cleanup` first",
                cfg.target.database,
                w.map_or("?".into(), |v| v.to_string()),
                seed.map_or("?".into(), |v| v.to_string()),
            )));
        }
    }
    if meta(&mut admin, "ready").await == Some(1) {
        eprintln!("All {} warehouses are already loaded and indexed.", cfg.warehouses);
        return Ok(PrepareReport {
            units_loaded: 0,
            resumed_from: Some(cfg.warehouses + 1),
            rows: 0,
            load: Duration::ZERO,
            index: Duration::ZERO,
            method: "nothing to load",
        });
    }
    let ddl_sql = cfg.schema.create_tables(&cfg.engine);
    for (t, sql) in tables.iter().zip(&ddl_sql) {
        ddl::create_table(&mut admin, family, &inv, "tpcc", "", t, sql).await?;
    }
    let c_last = meta(&mut admin, "c_last_load").await.ok_or_else(|| {
        PrepareError::Conflict(format!(
            "{META_TABLE} has no c_last_load; run `dbperf tpcc cleanup` and prepare again"
        ))
    })?;
    let done: Vec<i64> = admin
        .query_rows(&format!("SELECT w_id FROM {LOADED_TABLE}"))
        .await
        .map_err(doing("reading load progress"))?
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten()?.parse().ok())
        .collect();
    // Unit 0 is ITEM.
    let units: Vec<i64> = (0..=cfg.warehouses as i64).filter(|w| !done.contains(w)).collect();
    let resumed_from = (!done.is_empty()).then(|| units.iter().copied().find(|&w| w > 0).unwrap_or(0) as u32);
    if let Some(w) = resumed_from {
        eprintln!(
            "Resuming: {} of {} unit(s) were loaded earlier; loading from warehouse {w}",
            done.len(),
            cfg.warehouses + 1
        );
    }
    let total: u64 = units
        .iter()
        .map(|&w| if w == 0 { ITEMS as u64 } else { ROWS_PER_WAREHOUSE })
        .sum();
    if infile_off && total > 0 {
        eprintln!(
            "The server has local_infile=OFF, so rows go as INSERTs (slower); \
             `SET GLOBAL local_infile=ON` or `--set local_infile=ON` on a sandbox enables LOAD DATA"
        );
    }
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S").to_string();
    let params = Arc::new(LoadParams {
        seed: cfg.seed,
        c_last,
        now,
    });
    let started = Instant::now();
    let bar = crate::load_progress(cfg.progress && total > 0, total, true);
    let units = Arc::new(units);
    let next = Arc::new(AtomicUsize::new(0));
    let rows = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..(cfg.connections as usize).min(units.len()).max(1) {
        let (units, next, bar, cfg, params, rows) = (
            units.clone(),
            next.clone(),
            bar.clone(),
            cfg.clone(),
            params.clone(),
            rows.clone(),
        );
        tasks.spawn(async move {
            let mut s = connect_loader(&cfg.target).await?;
            let mut loader = Loader::new(cfg.schema, method);
            while let Some(&w) = units.get(next.fetch_add(1, Ordering::Relaxed)) {
                let n = loader.unit_again_if_deadlocked(&mut s, w, &params, &bar).await?;
                rows.fetch_add(n, Ordering::Relaxed);
            }
            Ok::<(), PrepareError>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("loader task panicked")?;
    }
    bar.finish_and_clear();
    let load = started.elapsed();
    let t0 = Instant::now();
    // Each index and key is looked up before it is built: an interrupted build resumes
    // with the ones that are missing.
    if meta(&mut admin, "indexes").await != Some(1) {
        eprintln!("Building secondary indexes...");
        run_parallel(&cfg.target, cfg.schema.create_indexes(), cfg.connections).await?;
        set_meta(&mut admin, &cfg.schema, "indexes", 1).await?;
    }
    if cfg.foreign_keys && meta(&mut admin, "foreign_keys").await != Some(1) {
        eprintln!("Adding foreign keys...");
        for (t, name, sql) in cfg.schema.create_foreign_keys() {
            ddl::ensure(&mut admin, family, t, ddl::Object::Constraint(name), &sql).await?;
        }
        set_meta(&mut admin, &cfg.schema, "foreign_keys", 1).await?;
    }
    set_meta(&mut admin, &cfg.schema, "ready", 1).await?;
    Ok(PrepareReport {
        units_loaded: units.len(),
        resumed_from,
        rows: rows.load(Ordering::Relaxed),
        load,
        index: t0.elapsed(),
        method: if cfg.schema.postgres() {
            "COPY"
        } else {
            method_name(method)
        },
    })
}

/// The method `cfg` asks for, or (for `None`) the cheapest the server offers: bulk
/// execute on MariaDB, then LOAD DATA LOCAL, then INSERT. An explicit LOAD DATA on a
/// server with `local_infile` off falls back to INSERT (true in the second place: the
/// caller says so).
async fn choose_method(admin: &mut AnySession, cfg: &PrepareConfig) -> Result<(LoadMethod, bool), PrepareError> {
    if cfg.schema.postgres() {
        return match cfg.method {
            Some(LoadMethod::Bulk) => Err(PrepareError::Conflict(
                "--load-method bulk is MariaDB's bulk execute; PostgreSQL loads with COPY (use --load-method auto)"
                    .into(),
            )),
            // COPY whatever the method.
            _ => Ok((LoadMethod::LoadData, false)),
        };
    }
    let bulk = admin.bulk_supported();
    match cfg.method {
        Some(LoadMethod::Bulk) if !bulk => Err(PrepareError::Conflict(format!(
            "--load-method bulk needs MariaDB 10.2.7 or later (COM_STMT_BULK_EXECUTE), and the server is {}; \
             use --load-method auto, load-data or insert",
            admin.server_version()
        ))),
        None if bulk => Ok((LoadMethod::Bulk, false)),
        None | Some(LoadMethod::LoadData) => Ok(if local_infile(admin).await {
            (LoadMethod::LoadData, false)
        } else {
            (LoadMethod::Insert, true)
        }),
        Some(m) => Ok((m, false)),
    }
}

fn method_name(m: LoadMethod) -> &'static str {
    match m {
        LoadMethod::Bulk => "bulk execute",
        LoadMethod::LoadData => "LOAD DATA LOCAL",
        LoadMethod::Insert => "INSERT",
    }
}

/// True when the server accepts `LOAD DATA LOCAL INFILE`.
async fn local_infile(s: &mut AnySession) -> bool {
    let v = s.query_rows("SELECT @@GLOBAL.local_infile").await;
    matches!(v.as_deref(), Ok([row]) if matches!(row.first(), Some(Some(v)) if v == "1" || v.eq_ignore_ascii_case("ON")))
}

/// One connection's loading state: prepared INSERTs by (table, rows) and a reused batch.
struct Loader {
    schema: Schema,
    method: LoadMethod,
    stmts: Vec<(&'static str, usize, StmtId)>,
    batch: Batch,
}

impl Loader {
    fn new(schema: Schema, method: LoadMethod) -> Loader {
        Loader {
            schema,
            method,
            stmts: Vec::new(),
            batch: Batch::default(),
        }
    }

    /// [`Loader::unit`], again (up to [`UNIT_ATTEMPTS`] times) when the server rolled it back
    /// as a deadlock victim or after a lock wait timeout: the whole unit went with it, its
    /// completion row included, so loading it again loads nothing twice.
    async fn unit_again_if_deadlocked(
        &mut self,
        s: &mut AnySession,
        w: i64,
        p: &LoadParams,
        bar: &ProgressBar,
    ) -> Result<u64, PrepareError> {
        let mut attempt = 1;
        loop {
            let mut shown = 0;
            match self.unit(s, w, p, bar, &mut shown).await {
                Err(PrepareError::Db(f))
                    if attempt < UNIT_ATTEMPTS
                        && matches!(
                            f.error.class,
                            ErrorClass::Deadlock | ErrorClass::LockWaitTimeout | ErrorClass::Serialization
                        ) =>
                {
                    // InnoDB has rolled the transaction back already; PostgreSQL needs it.
                    let _ = s.query("ROLLBACK").await;
                    bar.dec(shown);
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
                }
                other => return other,
            }
        }
    }

    /// Loads warehouse `w` (ITEM for 0) in one transaction with its completion row; `shown`
    /// counts the rows added to the progress bar so far.
    async fn unit(
        &mut self,
        s: &mut AnySession,
        w: i64,
        p: &LoadParams,
        bar: &ProgressBar,
        shown: &mut u64,
    ) -> Result<u64, PrepareError> {
        s.query("BEGIN").await.map_err(doing("BEGIN"))?;
        let plan = if w == 0 {
            OrderPlan::default()
        } else {
            OrderPlan::new(p.seed, w)
        };
        let tables: &[Table] = if w == 0 { &[Table::Item] } else { &Table::WAREHOUSE };
        let mut rows = 0u64;
        for &t in tables {
            let shape = t.shape(&self.schema);
            let mut gen = RowGen::new(t, w, p, &plan);
            let method = if self.schema.postgres() {
                LoadMethod::LoadData
            } else {
                self.method
            };
            let per_statement = match method {
                LoadMethod::LoadData => ROWS_PER_LOAD,
                LoadMethod::Insert => ROWS_PER_INSERT,
                LoadMethod::Bulk => ROWS_PER_BULK,
            };
            loop {
                self.batch.clear();
                let more = gen.fill(&mut self.batch, per_statement);
                if self.batch.rows > 0 {
                    match method {
                        LoadMethod::LoadData => self.load_data(s, shape).await?,
                        LoadMethod::Insert => self.flush(s, shape).await?,
                        LoadMethod::Bulk => self.flush_bulk(s, shape).await?,
                    }
                    rows += self.batch.rows as u64;
                    bar.inc(self.batch.rows as u64);
                    *shown += self.batch.rows as u64;
                }
                if !more {
                    break;
                }
            }
        }
        s.query(&format!(
            "INSERT INTO {LOADED_TABLE} (w_id, loaded_at) VALUES ({w}, NOW())"
        ))
        .await
        .map_err(doing("recording a loaded warehouse"))?;
        s.query("COMMIT")
            .await
            .map_err(doing(format!("committing warehouse {w}")))?;
        Ok(rows)
    }

    /// Sends the batch as one `LOAD DATA LOCAL INFILE` (MySQL) or `COPY` (PostgreSQL).
    async fn load_data(&mut self, s: &mut AnySession, shape: InsertShape) -> Result<(), PrepareError> {
        let mut tsv = Vec::with_capacity(self.batch.text.len() + self.batch.vals.len() * 8);
        let sql = if self.schema.postgres() {
            shape.write_copy(&self.batch, &mut tsv);
            shape.copy_sql()
        } else {
            self.batch.write_tsv(&mut tsv);
            shape.load_data_sql()
        };
        let data = futures_util::stream::once(async move { Ok(bytes::Bytes::from(tsv)) }).boxed();
        s.stream_in(&sql, data)
            .await
            .map_err(doing(format!("loading {}", shape.table)))?;
        Ok(())
    }

    /// Sends the batch as one bulk execute of the table's prepared one-row INSERT.
    async fn flush_bulk(&mut self, s: &mut AnySession, shape: InsertShape) -> Result<(), PrepareError> {
        let stmt = self.statement(s, shape, 1).await?;
        let params = self.batch.params();
        let per_row = params.len() / self.batch.rows;
        s.exec_bulk(stmt, &params, per_row)
            .await
            .map_err(doing(format!("inserting into {}", shape.table)))?;
        Ok(())
    }

    /// Sends the batch as one prepared multi-row INSERT.
    async fn flush(&mut self, s: &mut AnySession, shape: InsertShape) -> Result<(), PrepareError> {
        let stmt = self.statement(s, shape, self.batch.rows).await?;
        s.exec(stmt, &self.batch.params())
            .await
            .map_err(doing(format!("inserting into {}", shape.table)))?;
        Ok(())
    }

    /// The table's INSERT of `rows` rows, prepared on first use.
    async fn statement(&mut self, s: &mut AnySession, shape: InsertShape, rows: usize) -> Result<StmtId, PrepareError> {
        if let Some(&(_, _, id)) = self.stmts.iter().find(|(t, r, _)| *t == shape.table && *r == rows) {
            return Ok(id);
        }
        let id = s
            .prepare(&shape.sql(rows))
            .await
            .map_err(doing(format!("preparing the INSERT into {}", shape.table)))?;
        self.stmts.push((shape.table, rows, id));
        Ok(id)
    }
}

/// Builds independent indexes, (table, index, statement), over up to `connections`
/// connections, skipping those that exist.
async fn run_parallel(
    target: &Target,
    statements: Vec<(&'static str, &'static str, String)>,
    connections: u32,
) -> Result<(), PrepareError> {
    let statements = Arc::new(statements);
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..(connections as usize).min(statements.len()).max(1) {
        let (statements, next, target) = (statements.clone(), next.clone(), target.clone());
        tasks.spawn(async move {
            let mut s = connect(&target).await?;
            while let Some((t, name, sql)) = statements.get(next.fetch_add(1, Ordering::Relaxed)) {
                ddl::ensure(&mut s, target.family, t, ddl::Object::Index(name), sql).await?;
            }
            Ok::<(), PrepareError>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("DDL task panicked")?;
    }
    Ok(())
}

/// Drops the TPC-C tables of `schema` and dbperf's bookkeeping tables that dbperf created
/// (all of these names with `force`).
pub async fn cleanup(target: &Target, schema: &Schema, force: bool) -> Result<(), PrepareError> {
    let mut s = connect(target).await?;
    let names: Vec<&str> = schema.tables().into_iter().chain([LOADED_TABLE, META_TABLE]).collect();
    ddl::drop_created(
        &mut s,
        target.family,
        "tpcc",
        &target.database,
        "dbperf tpcc cleanup",
        &names,
        force,
    )
    .await?;
    Ok(())
}
