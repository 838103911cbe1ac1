//! Loading sysbench tables fast, `prewarm`, and `cleanup`.
//!
//! The loader splits every table into chunks of ids and hands the chunks of all tables,
//! interleaved, to a pool of connections, so it is parallel within and across tables
//! (sysbench gives each table to one thread). Each chunk's rows come from an RNG
//! seeded by (seed, table, chunk): the data does not depend on how many connections
//! loaded it. On MySQL rows go in as prepared multi-row INSERTs with explicit ids and
//! binary parameters (on MariaDB, a one-row INSERT run in bulk for 1,000 rows at a time);
//! on PostgreSQL as `COPY ... FROM STDIN` (text format), after which the `SERIAL` sequence
//! is moved past the ids. The secondary index on `k` is built after
//! the load, as sysbench does.
//!
//! A prepare killed at any point resumes: dbperf records each table before creating it
//! ([`crate::ddl`], with the options, which a rerun must repeat), every range of
//! ids goes in as one transaction, so a rerun counts each range's rows and loads the ranges
//! that are not complete, and indexes that exist are not built again. `cleanup` drops only
//! tables dbperf created, unless `--force`.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::options::{OltpOptions, Test};
use super::rand::KeySampler;
use super::schema;
use super::strings::{fill_template, C_TEMPLATE, PAD_TEMPLATE};
use crate::ddl::{self, DdlError};
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::target::Family;
use dbperf_driver::wire::WireSession;
use dbperf_driver::{doing, DbError, ExecInfo, Failed, Param, Session, StmtId, Target};

/// Rows generated from one seed: row `id` of a table comes from the stream seeded by
/// (seed, table, (id - 1) / SEED_BLOCK_ROWS), so the data is the same however the table
/// is split among connections.
const SEED_BLOCK_ROWS: u32 = 10_000;
/// Smallest chunk of rows handed to one connection (a whole number of seed blocks).
const MIN_CHUNK_ROWS: u32 = SEED_BLOCK_ROWS;

/// Rows per unit of loading work: a whole table when tables are at least as many as
/// connections, else enough pieces that every connection gets several.
fn chunk_rows(rows_per_table: u32, tables: u32, connections: u32) -> u32 {
    if tables >= connections || rows_per_table <= MIN_CHUNK_ROWS {
        return rows_per_table.max(1);
    }
    let pieces = (connections * 2).div_ceil(tables);
    rows_per_table.div_ceil(pieces).div_ceil(SEED_BLOCK_ROWS).max(1) * SEED_BLOCK_ROWS
}

/// What to prepare.
#[derive(Clone, Debug)]
pub struct PrepareConfig {
    /// The test (oltp_insert with `--auto-inc=off` creates empty tables).
    pub test: Test,
    /// Table options.
    pub opts: OltpOptions,
    /// Where.
    pub target: Target,
    /// Loader connections.
    pub connections: u32,
    /// Distribution of `k` (sysbench uses `--rand-type` for it).
    pub k_sampler: KeySampler,
    /// Seed of the generated data.
    pub seed: u64,
    /// The seed was given (`--rand-seed`); else a resumed prepare takes the earlier one's.
    pub seed_given: bool,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

/// What a prepare did.
#[derive(Clone, Debug)]
pub struct PrepareReport {
    /// Tables created.
    pub tables: u32,
    /// Rows inserted.
    pub rows: u64,
    /// Wall time of the whole prepare.
    pub elapsed: Duration,
    /// Time spent building secondary indexes, summed over connections (they overlap
    /// with loading).
    pub index: Duration,
}

/// A prepare, prewarm or cleanup that failed.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// Tables in the way that dbperf did not create, or a cleanup refused.
    #[error(transparent)]
    Ddl(#[from] DdlError),
    /// An earlier prepare of these tables used other options.
    #[error("{0}")]
    Resume(String),
    /// The server refused a statement.
    #[error(transparent)]
    Db(#[from] Failed),
    /// A run found a table missing: prepare first.
    #[error("{0}")]
    NotPrepared(String),
}

/// Before a run: checks that the tables `test` uses (`sbtest1`..`sbtest<tables>`, or only
/// `sbtest1` for the single-table tests) exist in `database`.
pub async fn check_tables<S: Session>(
    s: &mut S,
    test: Test,
    tables: u32,
    family: Family,
    database: &str,
) -> Result<(), PrepareError> {
    let existing = s
        .query_rows(schema::list_tables(family))
        .await
        .map_err(doing("listing the tables"))?;
    let wanted = if test.single_table() { 1 } else { tables };
    for t in 1..=wanted {
        let name = format!("sbtest{t}");
        if !existing
            .iter()
            .any(|r| r.first().and_then(|c| c.as_deref()) == Some(name.as_str()))
        {
            return Err(PrepareError::NotPrepared(format!(
                "table {name} does not exist in {database}: run `dbperf sysbench {test} prepare --tables={tables}` (same --target) first"
            )));
        }
    }
    Ok(())
}

/// A loader's connection: the lean MySQL session or a PostgreSQL one.
enum Conn {
    Wire(WireSession),
    Pg(PgWireSession),
}

impl Conn {
    async fn query(&mut self, sql: &str) -> Result<ExecInfo, DbError> {
        match self {
            Conn::Wire(s) => s.query(sql).await,
            Conn::Pg(s) => s.query(sql).await,
        }
    }
}

async fn connect(target: &Target) -> Result<Conn, PrepareError> {
    let none = IgnoreErrors::Codes(Default::default());
    match target.family {
        Family::Mysql => WireSession::connect(target, none).await.map(Conn::Wire),
        Family::Postgres => PgWireSession::connect(target, none).await.map(Conn::Pg),
    }
    .map_err(|e| doing("connecting")(e).into())
}

/// What `prepare` records with each table it creates: a resumed prepare must have the same.
fn params(cfg: &PrepareConfig) -> String {
    let o = &cfg.opts;
    format!(
        "seed={} table_size={} auto_inc={} secondary={} create_secondary={} empty={} engine={} k={:?}",
        cfg.seed,
        o.table_size,
        o.auto_inc,
        o.secondary,
        o.create_secondary,
        cfg.test == Test::Insert && !o.auto_inc,
        o.mysql_storage_engine,
        cfg.k_sampler
    )
}

/// Creates and fills the tables, then builds the secondary indexes. Resumable: tables this
/// prepare's options created earlier are kept, ranges of ids found complete are skipped (each
/// range goes in as one transaction), and indexes that exist are not built again.
pub async fn prepare(cfg: &PrepareConfig) -> Result<PrepareReport, PrepareError> {
    let started = Instant::now();
    let mut admin = AnySession::connect(&cfg.target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(doing("connecting"))?;
    let family = cfg.target.family;
    let inv = ddl::inventory(&mut admin, family).await?;
    let names: Vec<String> = (1..=cfg.opts.tables).map(|t| format!("sbtest{t}")).collect();
    let foreign = inv.foreign(names.iter().map(String::as_str));
    if !foreign.is_empty() {
        return Err(ddl::refuse_foreign("dbperf sysbench prepare", &foreign, &cfg.target.database).into());
    }
    // Without --rand-seed the seed is the clock's: a resumed prepare keeps the first one's.
    let earlier_seed = names.iter().filter(|n| inv.exists(n)).find_map(|n| {
        inv.params(n)?
            .strip_prefix("seed=")?
            .split(' ')
            .next()?
            .parse::<u64>()
            .ok()
    });
    let cfg = &PrepareConfig {
        seed: match earlier_seed {
            Some(s) if !cfg.seed_given => s,
            _ => cfg.seed,
        },
        ..cfg.clone()
    };
    let o = &cfg.opts;
    let params = params(cfg);
    for name in &names {
        if let Some(p) = inv.params(name).filter(|p| *p != params) {
            if inv.exists(name) {
                return Err(PrepareError::Resume(format!(
                    "{name} in {} comes from an earlier prepare with other options ({p}; now {params}); \
                     repeat those options to resume it, or run `cleanup` with the same --tables first",
                    cfg.target.database
                )));
            }
        }
    }
    let resumed: Vec<u32> = (1..=o.tables).filter(|t| inv.exists(&names[*t as usize - 1])).collect();
    if !resumed.is_empty() {
        eprintln!(
            "Resuming: {} of {} table(s) exist from an earlier prepare with these options",
            resumed.len(),
            o.tables
        );
    }
    for name in &names {
        ddl::record(&mut admin, family, "sysbench", name, &params).await?;
    }
    // In parallel, as sysbench's threads do: each CREATE TABLE waits for its file to be made
    // and synced, about 5% of a 4 x 250k prepare when done one after another.
    let table_opts = o.clone();
    let existed = resumed.clone();
    for_each_table(cfg, "Creating table", move |t| {
        if existed.contains(&t) {
            Vec::new()
        } else {
            vec![schema::create_table(t, &table_opts, family)]
        }
    })
    .await?;
    // oltp_insert with client-side ids starts from empty tables, as in sysbench.
    let rows_per_table = if cfg.test == Test::Insert && !o.auto_inc {
        0
    } else {
        o.table_size
    };
    // Whole tables while there are at least as many tables as connections (each table
    // then goes in as one transaction into an empty table, which InnoDB loads without
    // per-row undo); otherwise split tables so every connection has work.
    let chunk = chunk_rows(rows_per_table, o.tables, cfg.connections);
    let chunks_per_table = rows_per_table.div_ceil(chunk);
    let mut units = Vec::new();
    for c in 0..chunks_per_table {
        for t in 1..=o.tables {
            let first = c * chunk + 1;
            let unit = (t, first, (first + chunk - 1).min(rows_per_table));
            if !resumed.contains(&t) || !range_loaded(&mut admin, unit).await? {
                units.push(unit);
            }
        }
    }
    drop(admin);
    let loaded_rows: u64 = units.iter().map(|&(_, f, l)| (l - f + 1) as u64).sum();
    let total_rows = loaded_rows;
    if total_rows > 0 {
        eprintln!(
            "Inserting {rows_per_table} records into each of {} table(s) over {} connection(s)",
            o.tables, cfg.connections
        );
    }
    let bar = crate::load_progress(cfg.progress && total_rows > 0, total_rows, false);
    let units = Arc::new(units);
    let next = Arc::new(AtomicUsize::new(0));
    // Chunks still to load per table; whoever loads a table's last chunk builds its index,
    // so index builds overlap with the loading of other tables (as in sysbench).
    let remaining: Arc<Vec<AtomicUsize>> = Arc::new(
        (1..=o.tables)
            .map(|t| AtomicUsize::new(units.iter().filter(|u| u.0 == t).count()))
            .collect(),
    );
    let build_index = o.create_secondary && !o.secondary;
    let sync_sequence = family == Family::Postgres && o.auto_inc;
    let index_time = Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..cfg.connections.min(units.len() as u32).max(1) {
        let (units, next, bar, cfg) = (units.clone(), next.clone(), bar.clone(), cfg.clone());
        let (remaining, index_time) = (remaining.clone(), index_time.clone());
        tasks.spawn(async move {
            let mut s = connect(&cfg.target).await?;
            // No `unique_checks=0, foreign_key_checks=0`: on MariaDB 10.11 that switches an
            // empty-table load into InnoDB's bulk-insert mode, measured 20-40% slower here.
            let mut stmts = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(table, first, last)) = units.get(i) else {
                    return Ok::<(), PrepareError>(());
                };
                match &mut s {
                    Conn::Wire(w) => load_chunk(w, &cfg, table, first, last, &mut stmts, &bar).await?,
                    Conn::Pg(p) => copy_chunk(p, &cfg, table, first, last, &bar).await?,
                }
                let last_chunk = remaining[table as usize - 1].fetch_sub(1, Ordering::AcqRel) == 1;
                if sync_sequence && last_chunk {
                    let sql = schema::sync_sequence(table);
                    s.query(&sql).await.map_err(doing(sql))?;
                }
                if build_index && last_chunk {
                    let t0 = Instant::now();
                    ensure_index(&mut s, &cfg.target, table).await?;
                    if let Ok(mut total) = index_time.lock() {
                        *total += t0.elapsed();
                    }
                }
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("loader task panicked")?;
    }
    bar.finish_and_clear();
    // Tables without rows to load had no last chunk to trigger their index (and their
    // sequence); both steps skip what is done.
    let mut admin = connect(&cfg.target).await?;
    for t in 1..=o.tables {
        if !units.iter().any(|u| u.0 == t) {
            if sync_sequence && chunks_per_table > 0 {
                let sql = schema::sync_sequence(t);
                admin.query(&sql).await.map_err(doing(sql))?;
            }
            if build_index {
                ensure_index(&mut admin, &cfg.target, t).await?;
            }
        }
    }
    let index = index_time.lock().map(|d| *d).unwrap_or_default();
    Ok(PrepareReport {
        tables: o.tables,
        rows: total_rows,
        elapsed: started.elapsed(),
        index,
    })
}

/// True when ids `first..=last` of `sbtest{t}` are all in. A range that is partly there (an
/// earlier prepare split the table differently and was interrupted) is emptied, to be loaded
/// again with the same rows.
async fn range_loaded(s: &mut AnySession, (t, first, last): (u32, u32, u32)) -> Result<bool, PrepareError> {
    let sql = format!("SELECT COUNT(*) FROM sbtest{t} WHERE id BETWEEN {first} AND {last}");
    let rows = s.query_rows(&sql).await.map_err(doing(sql))?;
    let n: u64 = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if n == (last - first + 1) as u64 {
        return Ok(true);
    }
    if n > 0 {
        let sql = format!("DELETE FROM sbtest{t} WHERE id BETWEEN {first} AND {last}");
        s.query(&sql).await.map_err(doing(sql))?;
    }
    Ok(false)
}

/// Builds the secondary index `k_{t}` unless it exists.
async fn ensure_index(s: &mut Conn, target: &Target, t: u32) -> Result<(), PrepareError> {
    let (table, index) = (format!("sbtest{t}"), format!("k_{t}"));
    let sql = schema::create_secondary_index(t);
    match s {
        Conn::Wire(w) => ddl::ensure(w, target.family, &table, ddl::Object::Index(&index), &sql).await?,
        Conn::Pg(p) => ddl::ensure(p, target.family, &table, ddl::Object::Index(&index), &sql).await?,
    };
    Ok(())
}

/// Rows per multi-row INSERT. 1,000 rows bind 4,000 parameters (the protocol allows
/// 65,535) in a packet of about 200 KB; 250 and 4,000 measured the same here.
const ROWS_PER_INSERT: usize = 1000;
/// Bytes of `c` and `pad` per row.
const ROW_TEXT: usize = 119 + 59;

/// Loads rows `first..=last` of `sbtest{table}` as one transaction of 1,000-row batches
/// bound as binary parameters of a prepared statement: on MariaDB a one-row INSERT run in
/// bulk (COM_STMT_BULK_EXECUTE, which binds the statement once for all rows), elsewhere a
/// multi-row INSERT. The server then parses no values: on MariaDB 10.11 the multi-row
/// INSERT took about a quarter less server CPU than `LOAD DATA LOCAL` of the same rows
/// (whose field reader copies byte by byte), and it needs no `local_infile`.
async fn load_chunk(
    s: &mut WireSession,
    cfg: &PrepareConfig,
    table: u32,
    first: u32,
    last: u32,
    stmts: &mut Vec<(u32, usize, StmtId)>,
    bar: &ProgressBar,
) -> Result<(), PrepareError> {
    let seed = cfg.seed ^ ((table as u64) << 40);
    let mut gen = RowGen::new(seed, cfg.k_sampler, first, last);
    let mut keys = Vec::with_capacity(ROWS_PER_INSERT);
    let mut text = Vec::with_capacity(ROWS_PER_INSERT * ROW_TEXT);
    s.query("BEGIN").await.map_err(doing("BEGIN"))?;
    loop {
        keys.clear();
        text.clear();
        while keys.len() < ROWS_PER_INSERT {
            let Some((id, k)) = gen.next_row() else { break };
            keys.push((id, k));
            text.extend_from_slice(&gen.c);
            text.extend_from_slice(&gen.pad);
        }
        if keys.is_empty() {
            break;
        }
        // Bulk execute runs the one-row INSERT for every row of the batch.
        let bulk = s.bulk_supported();
        let stmt = insert_statement(s, stmts, table, if bulk { 1 } else { keys.len() }).await?;
        // One small allocation per 1,000 rows: the parameters borrow this batch's text.
        let mut params = Vec::with_capacity(keys.len() * 4);
        for (&(id, k), row) in keys.iter().zip(text.chunks_exact(ROW_TEXT)) {
            let (c, pad) = row.split_at(119);
            params.extend([
                Param::Int(id.into()),
                Param::Int(k.into()),
                Param::Bytes(c),
                Param::Bytes(pad),
            ]);
        }
        if bulk {
            s.exec_bulk(stmt, &params, 4).await
        } else {
            s.exec(stmt, &params).await
        }
        .map_err(doing(format!("inserting into sbtest{table}")))?;
        bar.inc(keys.len() as u64);
    }
    s.query("COMMIT")
        .await
        .map_err(doing(format!("committing rows of sbtest{table}")))?;
    Ok(())
}

/// Rows per COPY data message (about 180 KB).
const ROWS_PER_COPY_CHUNK: usize = 1000;

/// Loads rows `first..=last` of `sbtest{table}` with one `COPY ... FROM STDIN` in text
/// format, generating each data message as the previous one is sent.
async fn copy_chunk(
    s: &mut PgWireSession,
    cfg: &PrepareConfig,
    table: u32,
    first: u32,
    last: u32,
    bar: &ProgressBar,
) -> Result<(), PrepareError> {
    let seed = cfg.seed ^ ((table as u64) << 40);
    let mut gen = RowGen::new(seed, cfg.k_sampler, first, last);
    let chunks = std::iter::from_fn(move || {
        let mut buf = Vec::with_capacity(ROWS_PER_COPY_CHUNK * (ROW_TEXT + 24));
        let mut rows = 0;
        while rows < ROWS_PER_COPY_CHUNK {
            let Some((id, k)) = gen.next_row() else { break };
            // The templates produce digits and dashes only: nothing to escape.
            let _ = write!(buf, "{id}\t{k}\t");
            buf.extend_from_slice(&gen.c);
            buf.push(b'\t');
            buf.extend_from_slice(&gen.pad);
            buf.push(b'\n');
            rows += 1;
        }
        (rows > 0).then(|| {
            bar.inc(rows as u64);
            bytes::Bytes::from(buf)
        })
    });
    s.copy_in(&format!("COPY sbtest{table} (id, k, c, pad) FROM STDIN"), chunks)
        .await
        .map_err(doing(format!("copying rows into sbtest{table}")))?;
    Ok(())
}

/// The prepared `INSERT INTO sbtest{table} ... VALUES` with `rows` row placeholders,
/// prepared on first use and kept for the session.
async fn insert_statement(
    s: &mut WireSession,
    stmts: &mut Vec<(u32, usize, StmtId)>,
    table: u32,
    rows: usize,
) -> Result<StmtId, PrepareError> {
    if let Some(&(_, _, id)) = stmts.iter().find(|&&(t, r, _)| t == table && r == rows) {
        return Ok(id);
    }
    let mut sql = format!("INSERT INTO sbtest{table}(id, k, c, pad) VALUES (?,?,?,?)");
    sql.push_str(&",(?,?,?,?)".repeat(rows - 1));
    let id = s
        .prepare(&sql)
        .await
        .map_err(doing(format!("preparing the INSERT into sbtest{table}")))?;
    stmts.push((table, rows, id));
    Ok(id)
}

/// The rows of one chunk, generated on demand from the chunk's own seed.
struct RowGen {
    seed: u64,
    rng: SmallRng,
    k: KeySampler,
    next: u32,
    last: u32,
    c: [u8; 119],
    pad: [u8; 59],
}

impl RowGen {
    fn new(seed: u64, k: KeySampler, first: u32, last: u32) -> RowGen {
        RowGen {
            seed,
            rng: SmallRng::seed_from_u64(block_seed(seed, first)),
            k,
            next: first,
            last,
            c: [0; 119],
            pad: [0; 59],
        }
    }

    /// Generates the next row: (id, k), with `c` and `pad` filled in.
    fn next_row(&mut self) -> Option<(u32, u32)> {
        if self.next > self.last {
            return None;
        }
        let id = self.next;
        self.next += 1;
        if (id - 1).is_multiple_of(SEED_BLOCK_ROWS) {
            self.rng = SmallRng::seed_from_u64(block_seed(self.seed, id));
        }
        let k = self.k.sample(&mut self.rng);
        fill_template(&mut self.rng, C_TEMPLATE.as_bytes(), &mut self.c);
        fill_template(&mut self.rng, PAD_TEMPLATE.as_bytes(), &mut self.pad);
        Some((id, k))
    }
}

/// The seed of the block holding row `id`.
fn block_seed(table_seed: u64, id: u32) -> u64 {
    table_seed ^ (((id - 1) / SEED_BLOCK_ROWS) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Runs `statements(t)` for every table, tables spread over the connections.
async fn for_each_table(
    cfg: &PrepareConfig,
    verb: &'static str,
    statements: impl Fn(u32) -> Vec<String> + Send + Sync + 'static,
) -> Result<(), PrepareError> {
    let tables = cfg.opts.tables;
    let next = Arc::new(AtomicUsize::new(1));
    let statements = Arc::new(statements);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..cfg.connections.min(tables).max(1) {
        let (next, statements, target) = (next.clone(), statements.clone(), cfg.target.clone());
        tasks.spawn(async move {
            let mut s = connect(&target).await?;
            loop {
                let t = next.fetch_add(1, Ordering::Relaxed) as u32;
                if t > tables {
                    return Ok::<(), PrepareError>(());
                }
                let sqls = statements(t);
                if !sqls.is_empty() {
                    eprintln!("{verb} 'sbtest{t}'...");
                }
                for sql in sqls {
                    s.query(&sql).await.map_err(doing(sql.clone()))?;
                }
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("task panicked")?;
    }
    Ok(())
}

/// sysbench's `prewarm`: ANALYZE, then read the primary key and the `k` index of every
/// table into the buffer pool.
pub async fn prewarm(cfg: &PrepareConfig) -> Result<(), PrepareError> {
    let size = cfg.opts.table_size;
    let family = cfg.target.family;
    for_each_table(cfg, "Prewarming table", move |t| match family {
        // sysbench's prewarm is MySQL only; on PostgreSQL: statistics, then the heap and
        // the `k` index read into shared buffers.
        Family::Postgres => vec![
            format!("ANALYZE sbtest{t}"),
            format!("SELECT AVG(id) FROM sbtest{t}"),
            format!("SELECT COUNT(*) FROM (SELECT k FROM sbtest{t} ORDER BY k LIMIT {size}) t"),
        ],
        Family::Mysql => vec![
            "SET tmp_table_size=2*1024*1024*1024".into(),
            "SET max_heap_table_size=2*1024*1024*1024".into(),
            format!("ANALYZE TABLE sbtest{t}"),
            format!("SELECT AVG(id) FROM (SELECT * FROM sbtest{t} FORCE KEY (PRIMARY) LIMIT {size}) t"),
            format!("SELECT COUNT(*) FROM (SELECT * FROM sbtest{t} WHERE k LIKE '%0%' LIMIT {size}) t"),
        ],
    })
    .await
}

/// Drops those of `sbtest1` .. `sbtestN` that dbperf created (all of them with `force`).
pub async fn cleanup(target: &Target, tables: u32, force: bool) -> Result<(), PrepareError> {
    let mut s = AnySession::connect(target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(doing("connecting"))?;
    let names: Vec<String> = (1..=tables).map(|t| format!("sbtest{t}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    ddl::drop_created(
        &mut s,
        target.family,
        "sysbench",
        &target.database,
        "dbperf sysbench cleanup",
        &names,
        force,
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_whole_tables_or_whole_seed_blocks() {
        assert_eq!(chunk_rows(250_000, 4, 4), 250_000);
        assert_eq!(chunk_rows(5_000, 1, 8), 5_000);
        let c = chunk_rows(1_000_000, 2, 8);
        assert_eq!(c % SEED_BLOCK_ROWS, 0);
        assert_eq!(c, 130_000, "8 pieces per table, rounded up to seed blocks");
    }

    #[test]
    fn a_chunk_starting_mid_table_reproduces_the_same_rows() {
        let k = crate::sysbench::rand::Distribution::new(Default::default(), Default::default())
            .unwrap()
            .sampler(1, 30_000)
            .unwrap();
        let mut whole = RowGen::new(42, k, 1, 30_000);
        let mut rows = Vec::new();
        while let Some((id, kv)) = whole.next_row() {
            rows.push((id, kv, whole.c, whole.pad));
        }
        let mut part = RowGen::new(42, k, 20_001, 30_000);
        while let Some((id, kv)) = part.next_row() {
            assert_eq!(rows[id as usize - 1], (id, kv, part.c, part.pad));
        }
    }
}
