//! Loading TPC-H data: every table split into parts generated independently (so the bytes
//! do not depend on the number of connections), each part streamed from memory into the
//! server with `LOAD DATA LOCAL INFILE` while it is generated (no intermediate files), over
//! a pool of connections; then the secondary indexes and ANALYZE. Also `--write-tbl` and
//! `cleanup`.
//!
//! Resumable: each part goes in as one transaction with its row in [`LOADED_TABLE`], tables
//! are recorded as dbperf's before they are created ([`crate::ddl`]) and indexes
//! that exist are not built again, so a prepare killed anywhere finishes when run again with
//! the same `--sf`. `cleanup` drops only tables dbperf created, unless `--force`.
//!
//! Why LOAD DATA and not the prepared 1,000-row INSERTs of the sysbench loader: TPC-H rows
//! come out of the generator as `|`-separated text, which LOAD DATA takes as is, while
//! binding them as parameters means splitting every row into fields on the client (and
//! the server then converts the decimal and date strings anyway). Measured on MariaDB
//! 10.11 (README, "TPC-H"): at SF 0.1 LOAD DATA was 1.2–1.5× faster than the INSERT path
//! (`--load-method insert`, kept for comparison) in 3 of 3 alternating pairs, and SF 1
//! loaded in 96 s over 2 connections with the client using 30 s of CPU in all, so the
//! server, not the generator, sets the pace.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use indicatif::ProgressBar;

use super::schema::{secondary_indexes, TpchSql};
use super::table::{RowEnd, Table};
use super::TpchError;
use crate::ddl::{self, Object};
pub use crate::LoadMethod;
use dbperf_driver::any::AnySession;
use dbperf_driver::doing;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::target::Family;
use dbperf_driver::{Session, Target};

/// Bookkeeping: one row per part loaded, written in the part's transaction.
pub const LOADED_TABLE: &str = "dbperf_tpch_loaded";

/// What to load.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Scale factor.
    pub sf: f64,
    /// Where.
    pub target: Target,
    /// Loader connections.
    pub connections: u32,
    /// How rows go in.
    pub method: LoadMethod,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Rows loaded.
    pub rows: u64,
    /// Bytes of `.tbl` text streamed.
    pub bytes: u64,
    /// Time to create, generate and stream the rows.
    pub load: Duration,
    /// Time to build the secondary indexes.
    pub index: Duration,
    /// Time of ANALYZE.
    pub analyze: Duration,
}

impl LoadReport {
    /// `tpch prepare`'s summary line; `connections` is the loaders used.
    pub fn text(&self, connections: u32) -> String {
        let secs = self.load.as_secs_f64();
        format!(
            "Loaded {} rows ({:.0} MB of .tbl text) in {:.1} s ({} rows/s, {:.1} MB/s) over {} connection(s); indexes {:.1} s, ANALYZE {:.1} s",
            indicatif::HumanCount(self.rows),
            self.bytes as f64 / 1e6,
            secs,
            indicatif::HumanCount((self.rows as f64 / secs.max(1e-9)) as u64),
            self.bytes as f64 / 1e6 / secs.max(1e-9),
            connections,
            self.index.as_secs_f64(),
            self.analyze.as_secs_f64()
        )
    }
}

pub async fn connect(target: &Target) -> Result<AnySession, TpchError> {
    AnySession::connect(target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(|e| doing("connecting")(e).into())
}

/// The scale factor of the loaded data (supplier rows / 10,000), checked against `given`
/// (the `--scale-factor` of a command that runs on prepared data).
pub async fn data_scale_factor(target: &Target, given: Option<f64>) -> Result<f64, TpchError> {
    let mut s = connect(target).await?;
    data_scale_factor_on(&mut s, &target.database, given).await
}

/// [`data_scale_factor`] over a session already open on `database`.
pub async fn data_scale_factor_on<S: Session>(s: &mut S, database: &str, given: Option<f64>) -> Result<f64, TpchError> {
    let rows = s.query_rows("SELECT COUNT(*) FROM supplier").await.map_err(|e| {
        TpchError::NoData(format!(
            "{e}: no TPC-H data in {}? Run `dbperf tpch prepare --scale-factor SF` with the same --target first",
            database
        ))
    })?;
    let n: f64 = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let found = n / 10_000.0;
    match given {
        Some(sf) => {
            super::check_scale_factor(sf)?;
            if (sf - found).abs() > 1e-9 {
                return Err(TpchError::Invalid(format!(
                    "--scale-factor {sf} does not match the loaded data (supplier has {n} rows: SF {found}); \
                     give --scale-factor {found} or reload"
                )));
            }
            Ok(sf)
        }
        None if n > 0.0 => Ok(found),
        None => Err(TpchError::NoData(
            "the supplier table is empty: run `dbperf tpch prepare --scale-factor SF` first".into(),
        )),
    }
}

/// Creates the tables, loads them, builds the indexes and analyzes them.
pub async fn prepare(cfg: &LoadConfig) -> Result<LoadReport, TpchError> {
    if cfg.target.family == Family::Postgres && cfg.method == LoadMethod::Insert {
        return Err(TpchError::Invalid(
            "--load-method insert is for MySQL-protocol servers; PostgreSQL loads with COPY (the default)".into(),
        ));
    }
    if cfg.method == LoadMethod::Bulk {
        return Err(TpchError::Invalid(
            "--load-method bulk is implemented for `tpcc prepare` only; use load-data (the default) or insert".into(),
        ));
    }
    let mut admin = connect(&cfg.target).await?;
    let family = cfg.target.family;
    let inv = ddl::inventory(&mut admin, family).await?;
    let names: Vec<&str> = Table::ALL.iter().map(|t| t.name()).chain([LOADED_TABLE]).collect();
    let foreign = inv.foreign(names.iter().copied());
    if !foreign.is_empty() {
        return Err(ddl::refuse_foreign("dbperf tpch prepare", &foreign, &cfg.target.database).into());
    }
    let others = inv.others("tpch", names.iter().copied());
    if !others.is_empty() {
        return Err(ddl::refuse_others("dbperf tpch prepare", &others, &cfg.target.database).into());
    }
    let params = format!("sf={}", cfg.sf);
    if let Some(p) = names
        .iter()
        .filter(|n| inv.exists(n))
        .find_map(|n| inv.params(n).filter(|p| *p != params))
    {
        return Err(TpchError::Invalid(format!(
            "the TPC-H tables in {} come from an earlier prepare with {p}; repeat that --sf to resume it, \
             or run `dbperf tpch cleanup` first",
            cfg.target.database
        )));
    }
    let started = Instant::now();
    // Tables are recorded before they are created, and each part goes in as one transaction
    // with its row in LOADED_TABLE: a prepare interrupted anywhere resumes where it stopped.
    ddl::create_table(
        &mut admin,
        family,
        &inv,
        "tpch",
        &params,
        LOADED_TABLE,
        &format!("CREATE TABLE {LOADED_TABLE} (tbl VARCHAR(16) NOT NULL, part INT NOT NULL, PRIMARY KEY (tbl, part))"),
    )
    .await?;
    for t in Table::ALL {
        ddl::create_table(
            &mut admin,
            family,
            &inv,
            "tpch",
            &params,
            t.name(),
            &cfg.target.family.create_table(t),
        )
        .await?;
    }
    let done: Vec<(String, u32)> = admin
        .query_rows(&format!("SELECT tbl, part FROM {LOADED_TABLE}"))
        .await
        .map_err(doing(format!("reading {LOADED_TABLE}")))?
        .into_iter()
        .filter_map(|r| {
            let mut r = r.into_iter();
            Some((r.next().flatten()?, r.next().flatten()?.parse().ok()?))
        })
        .collect();
    if !done.is_empty() {
        eprintln!("Resuming: {} part(s) were loaded by an earlier prepare", done.len());
    }
    // Biggest tables first, so the last units to finish are small ones.
    let mut units = Vec::new();
    for t in Table::ALL.into_iter().rev() {
        let parts = t.parts(cfg.sf);
        units.extend(
            (1..=parts)
                .filter(|&p| !done.iter().any(|(n, d)| n == t.name() && *d == p))
                .map(|p| (t, p, parts)),
        );
    }
    let total: u64 = units
        .iter()
        .map(|&(t, _, parts)| t.approx_rows(cfg.sf) / parts as u64)
        .sum();
    if !units.is_empty() {
        eprintln!(
            "Loading TPC-H SF {} (about {total} rows, {} parts) over {} connection(s)",
            cfg.sf,
            units.len(),
            cfg.connections
        );
    }
    let bar = crate::load_progress(cfg.progress && !units.is_empty(), total, true);
    let units = Arc::new(units);
    let next = Arc::new(AtomicUsize::new(0));
    let bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let rows = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    // None when every part is in already.
    for _ in 0..cfg.connections.max(1).min(units.len() as u32) {
        let (units, next, bar, cfg) = (units.clone(), next.clone(), bar.clone(), cfg.clone());
        let (bytes, rows) = (bytes.clone(), rows.clone());
        tasks.spawn(async move {
            let mut s = connect(&cfg.target).await?;
            loop {
                let Some(&(t, part, parts)) = units.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return Ok::<(), TpchError>(());
                };
                let (b, r) = load_part(&mut s, &cfg, t, part, parts, &bar).await?;
                bytes.fetch_add(b, Ordering::Relaxed);
                rows.fetch_add(r, Ordering::Relaxed);
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("loader task panicked")?;
    }
    bar.finish_and_clear();
    let load = started.elapsed();
    let t0 = Instant::now();
    let family = cfg.target.family;
    drop(admin);
    // Only the indexes (and PostgreSQL primary keys) that are missing. A statement of a killed
    // prepare that the server finished meanwhile makes ours fail on a duplicate name: then
    // look again, and build what is still missing.
    let mut attempt = 0;
    loop {
        let missing = missing_indexes(cfg).await?;
        let todo = missing.iter().filter(|(_, sql)| sql.is_some()).count();
        let r = for_each_table(cfg, "Indexing", move |t| {
            missing
                .iter()
                .find(|(m, _)| *m == t)
                .and_then(|(_, sql)| sql.clone())
                .into_iter()
                .collect()
        })
        .await;
        attempt += 1;
        match r {
            Err(e) if attempt == 1 && todo > 0 => eprintln!("Indexing failed ({e}); looking again at what is missing"),
            r => break r?,
        }
    }
    let index = t0.elapsed();
    let t0 = Instant::now();
    for_each_table(cfg, "Analyzing", move |t| vec![family.analyze(t)]).await?;
    Ok(LoadReport {
        rows: rows.load(Ordering::Relaxed),
        bytes: bytes.load(Ordering::Relaxed),
        load,
        index,
        analyze: t0.elapsed(),
    })
}

/// Per table, the statement building its missing indexes (and PostgreSQL primary key).
async fn missing_indexes(cfg: &LoadConfig) -> Result<Vec<(Table, Option<String>)>, TpchError> {
    let mut s = connect(&cfg.target).await?;
    let family = cfg.target.family;
    let mut missing = Vec::new();
    for t in Table::ALL {
        let pk =
            cfg.target.family == Family::Postgres && !ddl::exists(&mut s, family, t.name(), Object::PrimaryKey).await?;
        let mut idx = Vec::new();
        for &(n, _) in secondary_indexes(t) {
            if !ddl::exists(&mut s, family, t.name(), Object::Index(n)).await? {
                idx.push(n);
            }
        }
        missing.push((t, cfg.target.family.create_indexes(t, pk, &idx)));
    }
    Ok(missing)
}

/// Streams part `part` of `parts` of `t` into the server as it is generated (on a
/// blocking thread, a few blocks ahead of the connection). Returns (bytes, rows).
async fn load_part(
    s: &mut AnySession,
    cfg: &LoadConfig,
    t: Table,
    part: u32,
    parts: u32,
    bar: &ProgressBar,
) -> Result<(u64, u64), TpchError> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(4);
    let sf = cfg.sf;
    let producer = tokio::task::spawn_blocking(move || {
        t.generate(sf, part, parts, RowEnd::Newline, |block| {
            tx.blocking_send(Bytes::copy_from_slice(block)).map_err(|_| ())
        })
    });
    let sent = Arc::new(std::sync::atomic::AtomicU64::new(0));
    s.query("BEGIN").await.map_err(doing("BEGIN"))?;
    let r = match cfg.method {
        LoadMethod::LoadData => {
            let (bar2, sent2) = (bar.clone(), sent.clone());
            let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) })
                .map(move |b: Bytes| {
                    bar2.inc(b.iter().filter(|&&c| c == b'\n').count() as u64);
                    sent2.fetch_add(b.len() as u64, Ordering::Relaxed);
                    Ok(b)
                })
                .boxed();
            s.stream_in(&cfg.target.family.load_statement(t), stream)
                .await
                .map(|_| ())
        }
        LoadMethod::Insert => match s {
            AnySession::Mysql(s) => super::insert::insert_blocks(s, t, rx, bar, &sent).await.map(|_| ()),
            AnySession::Pg(_) | AnySession::Dry(_) => unreachable!("refused before loading"),
        },
        LoadMethod::Bulk => unreachable!("refused before loading"),
    };
    // The producer stops on its own when the stream is dropped (its sends fail).
    let rows = producer.await.expect("generator thread panicked").unwrap_or(0);
    r.map_err(|e| {
        let hint = if matches!(e.code, Some(1148) | Some(3948) | Some(2068)) {
            " (the server refuses LOAD DATA LOCAL: start it with local_infile=ON, e.g. `dbperf server start ... --set local_infile=ON`, or SET GLOBAL local_infile=ON)"
        } else {
            ""
        };
        doing(format!("loading part {part}/{parts} of {}{hint}", t.name()))(e)
    })?;
    s.query(&format!(
        "INSERT INTO {LOADED_TABLE} (tbl, part) VALUES ('{}', {part})",
        t.name()
    ))
    .await
    .map_err(doing(format!("writing {LOADED_TABLE}")))?;
    s.query("COMMIT")
        .await
        .map_err(doing(format!("committing part {part}/{parts} of {}", t.name())))?;
    Ok((sent.load(Ordering::Relaxed), rows))
}

/// Runs `statements(t)` for every table over the loader's connections, biggest first.
async fn for_each_table(
    cfg: &LoadConfig,
    verb: &'static str,
    statements: impl Fn(Table) -> Vec<String> + Send + Sync + 'static,
) -> Result<(), TpchError> {
    let next = Arc::new(AtomicUsize::new(0));
    let statements = Arc::new(statements);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..cfg.connections.clamp(1, 8) {
        let (next, statements, target) = (next.clone(), statements.clone(), cfg.target.clone());
        tasks.spawn(async move {
            let mut s = connect(&target).await?;
            loop {
                let Some(&t) = Table::ALL.iter().rev().nth(next.fetch_add(1, Ordering::Relaxed)) else {
                    return Ok::<(), TpchError>(());
                };
                let sqls = statements(t);
                if !sqls.is_empty() {
                    eprintln!("{verb} {}...", t.name());
                }
                for sql in sqls {
                    s.query_rows(&sql).await.map_err(doing(sql.clone()))?;
                }
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("task panicked")?;
    }
    Ok(())
}

/// Writes `DIR/<table>.tbl` for every table in dbgen's exact format (rows ending in
/// `|\n`), tables in parallel on `threads` threads. Returns the files.
pub fn write_tbl(dir: &Path, sf: f64, threads: u32) -> Result<Vec<PathBuf>, TpchError> {
    std::fs::create_dir_all(dir).map_err(|source| TpchError::Io {
        what: "cannot create",
        path: dir.to_path_buf(),
        source,
    })?;
    let next = AtomicUsize::new(0);
    let results: Vec<Result<PathBuf, TpchError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.clamp(1, 8))
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    while let Some(&t) = Table::ALL.iter().rev().nth(next.fetch_add(1, Ordering::Relaxed)) {
                        done.push(write_one(dir, t, sf));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("writer thread panicked"))
            .collect()
    });
    results.into_iter().collect()
}

fn write_one(dir: &Path, t: Table, sf: f64) -> Result<PathBuf, TpchError> {
    use std::io::Write as _;
    let path = dir.join(format!("{}.tbl", t.name()));
    let io = |source| TpchError::Io {
        what: "cannot write",
        path: path.clone(),
        source,
    };
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io)?);
    t.generate(sf, 1, 1, RowEnd::Official, |b| f.write_all(b)).map_err(io)?;
    f.flush().map_err(io)?;
    Ok(path)
}

/// Drops the eight tables and the load's bookkeeping, those dbperf created (all of them
/// with `force`).
pub async fn cleanup(target: &Target, force: bool) -> Result<(), TpchError> {
    let mut s = connect(target).await?;
    let names: Vec<&str> = Table::ALL
        .iter()
        .rev()
        .map(|t| t.name())
        .chain([LOADED_TABLE])
        .collect();
    ddl::drop_created(
        &mut s,
        target.family,
        "tpch",
        &target.database,
        "dbperf tpch cleanup",
        &names,
        force,
    )
    .await?;
    Ok(())
}
