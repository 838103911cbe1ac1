//! The load phase: tables created fresh, then nodes, links and counts generated id by id
//! and sent in batches of `batch` rows by `loaders` connections, each on its own thread (as
//! multi-row INSERTs on MySQL, as `COPY ... FROM STDIN` in text format with hex `bytea`
//! payloads on PostgreSQL, see [`LoadSession`]), then the family's after-load statements (PostgreSQL: the node id sequence and
//! ANALYZE). Memory stays bounded whatever `maxid1` is: one batch per table per loader,
//! and the queue of units is computed from a unit's index, not stored.
//!
//! A load always starts over: it drops the tables an earlier load created (recorded in
//! [`crate::ddl`]; tables dbperf did not create are refused) and creates them
//! afresh, so a load killed at any point is finished by running it again. Only a load that
//! sent every row writes `complete` into [`META_TABLE`]; on [`LoadConfig::stop`] (Ctrl-C)
//! every loader sends the rows of the ids it generated (each id with its links and counts)
//! and quits, and the load stays incomplete, which `linkbench request` refuses.
//!
//! Work comes in chunks of 2,048 ids, link chunks in reverse order as the reference queues
//! them. With [`Seeding::PerStream`] every chunk draws from its own stream, so the rows do
//! not depend on the number of loaders. With [`Seeding::JavaCompatible`] one link loader
//! shares one `java.util.Random` over all chunks and one node loader has its own, both
//! seeded from a SHA1PRNG master as the reference does, so the rows equal the reference's
//! (times aside, which follow the clock).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::dist::MotifGen;
use super::jrand::{derive_seed, JavaRandom, Sha1Prng};
use super::schema::{LinkbenchSql, META_TABLE};
use super::{Model, Seeding, LINK_TYPE_BASE, NODE_TYPE};
use crate::ddl::{self, DdlError};
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::pg::PgSession;
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::target::Family;
use dbperf_driver::wire::WireSession;
use dbperf_driver::{doing, DbError, Failed, Param, Session, StmtId, Target};

/// A loader's session: a [`Session`] that can also take a COPY, where the family loads by
/// COPY ([`LinkbenchSql::copy_into`]).
pub trait LoadSession: Session {
    /// Runs `sql` (a `COPY ... FROM STDIN`) with `data` in COPY text format; returns rows.
    fn copy_text(&mut self, sql: &str, data: Vec<u8>) -> impl std::future::Future<Output = Result<u64, DbError>>;
}

impl LoadSession for PgSession {
    async fn copy_text(&mut self, sql: &str, data: Vec<u8>) -> Result<u64, DbError> {
        self.copy_in(sql, std::iter::once(bytes::Bytes::from(data))).await
    }
}

impl LoadSession for PgWireSession {
    async fn copy_text(&mut self, sql: &str, data: Vec<u8>) -> Result<u64, DbError> {
        self.copy_in(sql, std::iter::once(bytes::Bytes::from(data))).await
    }
}

impl LoadSession for WireSession {
    async fn copy_text(&mut self, sql: &str, _: Vec<u8>) -> Result<u64, DbError> {
        Err(DbError {
            class: dbperf_engine::ErrorClass::Fatal,
            code: None,
            sqlstate: None,
            message: format!("{sql}: COPY is PostgreSQL's; MySQL loads by INSERT"),
        })
    }
}

/// Appends `v` as a COPY text-format `bytea` field: `\\x` and two hex digits a byte (the
/// backslash doubled, as COPY text unescapes it once).
fn push_copy_bytea(out: &mut Vec<u8>, v: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\\\x");
    for &b in v {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

/// Ids per unit of work (the reference's `loader_chunk_size`).
pub const CHUNK: i64 = 2048;

/// What to load.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// Where.
    pub target: Target,
    /// SQL spelling.
    pub family: Family,
    /// Ids, out-degrees, payload sizes.
    pub model: Arc<Model>,
    /// Loader connections (threads).
    pub loaders: usize,
    /// How streams are seeded.
    pub seeding: Seeding,
    /// The seed.
    pub seed: i64,
    /// linktable partitions (0: none).
    pub partitions: u32,
    /// Rows per INSERT.
    pub batch: usize,
    /// Print progress lines on stderr every this often (None: quiet).
    pub progress: Option<Duration>,
    /// Set (by a signal handler) to stop: each loader sends the rows of the ids it generated
    /// and quits (within a batch's INSERT); the load stays marked incomplete.
    pub stop: Arc<AtomicBool>,
}

/// What a load did.
#[derive(Clone, Debug, Default)]
pub struct LoadReport {
    /// Rows inserted.
    pub nodes: u64,
    pub links: u64,
    pub counts: u64,
    /// Wall time of the data load (table creation excluded).
    pub elapsed: Duration,
    /// Stopped by [`LoadConfig::stop`] before every id was loaded.
    pub interrupted: bool,
}

/// A failed load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// LinkBench tables exist that dbperf did not create.
    #[error(transparent)]
    Conflict(#[from] DdlError),
    /// The server refused a statement.
    #[error(transparent)]
    Db(#[from] Failed),
    /// A loader thread failed outside the database.
    #[error("{0}")]
    Internal(String),
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A unit of work.
#[derive(Clone, Copy, Debug)]
enum Work {
    Links { chunk: i64, start: i64, end: i64 },
    Nodes { chunk: i64, start: i64, end: i64 },
}

/// The units of work over ids `[start, max)`, CHUNK ids each, found from their index in a
/// queue rather than stored, so the load's memory does not grow with `maxid1`.
#[derive(Clone, Copy, Debug)]
struct Units {
    start: i64,
    max: i64,
    chunks: i64,
}

/// The order in which a loader thread takes units.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// Link chunks, last chunk first (the reference's link queue).
    Links,
    /// Node chunks, first chunk first.
    Nodes,
    /// Link and node units alternating, so that loaders stay busy until the end.
    Mixed,
}

impl Units {
    fn new(start: i64, max: i64) -> Units {
        Units {
            start,
            max,
            chunks: ((max - start).max(0) + CHUNK - 1) / CHUNK,
        }
    }

    fn span(&self, chunk: i64) -> (i64, i64) {
        let start = self.start + chunk * CHUNK;
        (start, (start + CHUNK).min(self.max))
    }

    /// The `i`-th unit in `order`, `None` past the last.
    fn get(&self, order: Order, i: usize) -> Option<Work> {
        let i = i as i64;
        let (links, k) = match order {
            Order::Links => (true, i),
            Order::Nodes => (false, i),
            Order::Mixed => (i % 2 == 0, i / 2),
        };
        if k >= self.chunks {
            return None;
        }
        Some(if links {
            let chunk = self.chunks - 1 - k;
            let (start, end) = self.span(chunk);
            Work::Links { chunk, start, end }
        } else {
            let (start, end) = self.span(k);
            Work::Nodes { chunk: k, start, end }
        })
    }
}

/// Counters shared by loaders and the progress printer.
#[derive(Default)]
struct Progress {
    id1s: AtomicU64,
    links: AtomicU64,
    nodes: AtomicU64,
    counts: AtomicU64,
    failed: AtomicBool,
    /// A loader stopped (on [`LoadConfig::stop`]) with work left.
    incomplete: AtomicBool,
}

/// Rows of one table waiting for their INSERT: integer columns and payload bytes.
struct Batch {
    ints: Vec<i64>,
    data: Vec<u8>,
    ends: Vec<usize>,
    per_row: usize,
    full: Option<StmtId>,
}

impl Batch {
    fn new(per_row: usize, batch: usize) -> Batch {
        Batch {
            ints: Vec::with_capacity(per_row * batch),
            data: Vec::new(),
            ends: Vec::with_capacity(batch),
            per_row,
            full: None,
        }
    }

    fn rows(&self) -> usize {
        self.ints.len() / self.per_row
    }
}

/// The tables' shapes: integer columns per row and where the payload goes.
#[derive(Clone, Copy)]
enum Table {
    /// id1, id2, link_type, visibility, [data], time, version
    Links,
    /// id, link_type, count, time, version
    Counts,
    /// id, type, version, time, [data]
    Nodes,
}

impl Table {
    fn ints(self) -> usize {
        match self {
            Table::Links => 6,
            Table::Counts => 5,
            Table::Nodes => 4,
        }
    }

    /// Index among the columns where the payload sits, if any.
    fn data_at(self) -> Option<usize> {
        match self {
            Table::Links => Some(4),
            Table::Counts => None,
            Table::Nodes => Some(4),
        }
    }

    fn sql(self, d: Family, rows: usize) -> String {
        match self {
            Table::Links => d.bulk_links(rows),
            Table::Counts => d.bulk_counts(rows),
            Table::Nodes => d.bulk_nodes(rows),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Table::Links => "linktable",
            Table::Counts => "counttable",
            Table::Nodes => "nodetable",
        }
    }
}

/// One loader: its session, batches and generators.
struct Loader<S> {
    session: S,
    family: Family,
    batch: usize,
    links: Batch,
    counts: Batch,
    nodes: Batch,
}

impl<S: LoadSession> Loader<S> {
    async fn flush(&mut self, table: Table) -> Result<(), LoadError> {
        let (b, d, size) = match table {
            Table::Links => (&mut self.links, self.family, self.batch),
            Table::Counts => (&mut self.counts, self.family, self.batch),
            Table::Nodes => (&mut self.nodes, self.family, self.batch),
        };
        let rows = b.rows();
        if rows == 0 {
            return Ok(());
        }
        if let Some(copy) = d.copy_into(table.name()) {
            let n = table.ints();
            let mut text = Vec::with_capacity(rows * (n * 12 + 2) + b.data.len() * 2 + rows * 4);
            let mut data_start = 0;
            for r in 0..rows {
                for c in 0..=n {
                    if table.data_at() == Some(c) {
                        if c > 0 {
                            text.push(b'\t');
                        }
                        let end = b.ends[r];
                        push_copy_bytea(&mut text, &b.data[data_start..end]);
                        data_start = end;
                    }
                    if c < n {
                        if c > 0 || table.data_at() == Some(0) {
                            text.push(b'\t');
                        }
                        text.extend_from_slice(b.ints[r * n + c].to_string().as_bytes());
                    }
                }
                text.push(b'\n');
            }
            self.session
                .copy_text(&copy, text)
                .await
                .map_err(doing(format!("copying {rows} rows into {}", table.name())))?;
            b.ints.clear();
            b.data.clear();
            b.ends.clear();
            return Ok(());
        }
        let stmt = if rows == size {
            match b.full {
                Some(s) => s,
                None => {
                    let s = self.session.prepare(&table.sql(d, rows)).await.map_err(doing(format!(
                        "preparing the {}-row INSERT into {}",
                        rows,
                        table.name()
                    )))?;
                    b.full = Some(s);
                    s
                }
            }
        } else {
            self.session
                .prepare(&table.sql(d, rows))
                .await
                .map_err(doing(format!("preparing the {rows}-row INSERT into {}", table.name())))?
        };
        let n = table.ints();
        let mut params: Vec<Param<'_>> = Vec::with_capacity(rows * (n + 1));
        let mut data_start = 0;
        for r in 0..rows {
            let ints = &b.ints[r * n..(r + 1) * n];
            for (c, &v) in ints.iter().enumerate() {
                if table.data_at() == Some(c) {
                    let end = b.ends[r];
                    params.push(Param::Bytes(&b.data[data_start..end]));
                    data_start = end;
                }
                params.push(Param::Int(v));
            }
            if table.data_at() == Some(n) {
                let end = b.ends[r];
                params.push(Param::Bytes(&b.data[data_start..end]));
                data_start = end;
            }
        }
        self.session
            .exec(stmt, &params)
            .await
            .map_err(doing(format!("inserting {rows} rows into {}", table.name())))?;
        drop(params);
        b.ints.clear();
        b.data.clear();
        b.ends.clear();
        Ok(())
    }
}

/// Random streams of a loader for one unit of work.
struct Streams {
    rng: JavaRandom,
    links: MotifGen,
    nodes: MotifGen,
}

fn streams(model: &Model, rng: JavaRandom) -> Streams {
    let m = &model.mix;
    Streams {
        rng,
        links: MotifGen::new(m.link_add.start, m.link_add.end, m.link_add.uniqueness),
        nodes: MotifGen::new(m.node_add.start, m.node_add.end, m.node_add.uniqueness),
    }
}

async fn load_links<S: LoadSession>(
    l: &mut Loader<S>,
    model: &Model,
    s: &mut Streams,
    start: i64,
    end: i64,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<bool, LoadError> {
    let now = now_ms();
    let mut links = 0;
    for id1 in start..end {
        if stop.load(Ordering::Relaxed) {
            progress.links.fetch_add(links, Ordering::Relaxed);
            return Ok(false);
        }
        for t in 0..model.mix.link_types {
            let n = model.links.of_type(id1, t);
            let link_type = LINK_TYPE_BASE + t;
            let mut max_time = 0;
            for j in 0..n {
                let size = model.link_size.choose(&mut s.rng) as usize;
                let from = l.links.data.len();
                l.links.data.resize(from + size, 0);
                s.links.fill(&mut s.rng, &mut l.links.data[from..]);
                let time = now - (i32::MAX as i64) - 1 + s.rng.next_int() as i64;
                max_time = max_time.max(time);
                l.links.ends.push(l.links.data.len());
                l.links.ints.extend_from_slice(&[id1, id1 + j, link_type, 1, time, 0]);
                links += 1;
                if l.links.rows() >= l.batch {
                    l.flush(Table::Links).await?;
                }
            }
            if n > 0 {
                l.counts.ints.extend_from_slice(&[id1, link_type, n, max_time, 0]);
                progress.counts.fetch_add(1, Ordering::Relaxed);
                if l.counts.rows() >= l.batch {
                    l.flush(Table::Counts).await?;
                }
            }
        }
    }
    progress.links.fetch_add(links, Ordering::Relaxed);
    progress.id1s.fetch_add((end - start) as u64, Ordering::Relaxed);
    Ok(true)
}

async fn load_nodes<S: LoadSession>(
    l: &mut Loader<S>,
    model: &Model,
    s: &mut Streams,
    start: i64,
    end: i64,
    progress: &Progress,
    stop: &AtomicBool,
) -> Result<bool, LoadError> {
    let now_s = now_ms() / 1000;
    for id in start..end {
        if stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let size = model.node_size.choose(&mut s.rng) as usize;
        let from = l.nodes.data.len();
        l.nodes.data.resize(from + size, 0);
        s.nodes.fill(&mut s.rng, &mut l.nodes.data[from..]);
        l.nodes.ends.push(l.nodes.data.len());
        l.nodes.ints.extend_from_slice(&[id, NODE_TYPE, 1, now_s]);
        if l.nodes.rows() >= l.batch {
            l.flush(Table::Nodes).await?;
            progress.nodes.fetch_add(l.batch as u64, Ordering::Relaxed);
        }
    }
    Ok(true)
}

async fn connect<S: LoadSession>(cfg: &LoadConfig) -> Result<Loader<S>, LoadError> {
    let mut session = S::connect(&cfg.target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(doing("connecting a loader"))?;
    for sql in cfg.family.session_setup() {
        session.query(sql).await.map_err(doing(*sql))?;
    }
    Ok(Loader {
        session,
        family: cfg.family,
        batch: cfg.batch,
        links: Batch::new(Table::Links.ints(), cfg.batch),
        counts: Batch::new(Table::Counts.ints(), cfg.batch),
        nodes: Batch::new(Table::Nodes.ints(), cfg.batch),
    })
}

/// One loader thread's work: units from the shared queue, each with its own streams
/// (per-stream seeding), or the fixed shared streams (Java-compatible).
async fn run_loader<S: LoadSession>(
    cfg: &LoadConfig,
    (units, order): (Units, Order),
    next: &AtomicUsize,
    mut shared: Option<Streams>,
    progress: &Progress,
) -> Result<(), LoadError> {
    let mut l = connect::<S>(cfg).await?;
    let model = &cfg.model;
    loop {
        if progress.failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(w) = units.get(order, i) else { break };
        // Stopped with work left: the rows pending in batches (whole ids) still go, so
        // that every id sent has its links and counts.
        if cfg.stop.load(Ordering::Relaxed) {
            progress.incomplete.store(true, Ordering::Relaxed);
            break;
        }
        let finished = match w {
            Work::Links { chunk, start, end } => {
                let mut own;
                let s = match shared.as_mut() {
                    Some(s) => s,
                    None => {
                        own = streams(model, JavaRandom::new(derive_seed(cfg.seed as u64, chunk as u64)));
                        &mut own
                    }
                };
                load_links(&mut l, model, s, start, end, progress, &cfg.stop).await?
            }
            Work::Nodes { chunk, start, end } => {
                let mut own;
                let s = match shared.as_mut() {
                    Some(s) => s,
                    None => {
                        own = streams(
                            model,
                            JavaRandom::new(derive_seed(cfg.seed as u64, (1 << 40) + chunk as u64)),
                        );
                        &mut own
                    }
                };
                load_nodes(&mut l, model, s, start, end, progress, &cfg.stop).await?
            }
        };
        if !finished {
            progress.incomplete.store(true, Ordering::Relaxed);
            break;
        }
    }
    let pending = l.nodes.rows() as u64;
    l.flush(Table::Links).await?;
    l.flush(Table::Counts).await?;
    l.flush(Table::Nodes).await?;
    progress.nodes.fetch_add(pending, Ordering::Relaxed);
    Ok(())
}

/// The tables a load creates, in drop order.
const TABLES: [&str; 4] = ["linktable", "counttable", "nodetable", META_TABLE];

/// Drops the tables an earlier load created and creates them afresh (a load always starts
/// over: after an interruption, running it again loads the whole graph), then records the
/// load parameters. Tables dbperf did not create are refused. The load is marked complete
/// only at its end ([`mark_complete`]).
pub async fn create_tables<S: Session>(cfg: &LoadConfig) -> Result<(), LoadError> {
    let mut admin = S::connect(&cfg.target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(doing("connecting"))?;
    let family = cfg.target.family;
    let inv = ddl::inventory(&mut admin, family).await?;
    let foreign = inv.foreign(TABLES);
    if !foreign.is_empty() {
        return Err(ddl::refuse_foreign("dbperf linkbench load", &foreign, &cfg.target.database).into());
    }
    for t in TABLES.into_iter().filter(|t| inv.exists(t)) {
        let sql = format!("DROP TABLE IF EXISTS {t}");
        admin.query(&sql).await.map_err(doing(sql))?;
    }
    let fresh = ddl::Inventory {
        existing: Vec::new(),
        created: inv.created.clone(),
        workloads: inv.workloads.clone(),
    };
    for sql in cfg.family.create_tables(cfg.partitions) {
        match sql
            .strip_prefix("CREATE TABLE ")
            .and_then(|r| r.split([' ', '(']).next())
        {
            Some(t) => ddl::create_table(&mut admin, family, &fresh, "linkbench", "", t, &sql).await?,
            None => {
                admin.query(&sql).await.map_err(doing(sql.clone()))?;
            }
        }
    }
    let m = &cfg.model;
    for (k, v) in [
        ("startid1", m.startid1),
        ("maxid1", m.maxid1),
        ("link_type_count", m.mix.link_types),
        ("seed", cfg.seed),
    ] {
        admin
            .query(&format!("INSERT INTO {META_TABLE} (name, value) VALUES ('{k}', {v})"))
            .await
            .map_err(doing(format!("writing {META_TABLE}")))?;
    }
    Ok(())
}

/// Records in [`META_TABLE`] that every id was loaded (`complete` = 1), which `request` checks.
async fn mark_complete<S: Session>(cfg: &LoadConfig) -> Result<(), LoadError> {
    let mut admin = S::connect(&cfg.target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(doing("connecting"))?;
    admin
        .query(&format!(
            "INSERT INTO {META_TABLE} (name, value) VALUES ('complete', 1)"
        ))
        .await
        .map_err(doing(format!("writing {META_TABLE}")))?;
    Ok(())
}

/// Drops the LinkBench tables dbperf created (all of them with `force`).
pub async fn cleanup<S: Session>(target: &Target, force: bool) -> Result<(), LoadError> {
    let mut s = S::connect(target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(doing("connecting"))?;
    ddl::drop_created(
        &mut s,
        target.family,
        "linkbench",
        &target.database,
        "dbperf linkbench cleanup",
        &TABLES,
        force,
    )
    .await?;
    Ok(())
}

/// Runs the family's statements that follow the data load.
async fn after_load<S: Session>(cfg: &LoadConfig) -> Result<(), LoadError> {
    let stmts = cfg.family.after_load();
    if stmts.is_empty() {
        return Ok(());
    }
    let mut admin = S::connect(&cfg.target, IgnoreErrors::Codes(Default::default()))
        .await
        .map_err(doing("connecting"))?;
    for sql in stmts {
        admin.query(&sql).await.map_err(doing(sql.clone()))?;
    }
    Ok(())
}

/// Reads a load parameter back (`None` when the table or the row is missing).
pub async fn meta<S: Session>(s: &mut S, name: &str) -> Option<i64> {
    let rows = s
        .query_rows(&format!("SELECT value FROM {META_TABLE} WHERE name = '{name}'"))
        .await
        .ok()?;
    rows.first()?.first()?.as_deref()?.parse().ok()
}

/// Creates the tables and loads them.
pub fn load<S: LoadSession>(cfg: &LoadConfig) -> Result<LoadReport, LoadError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LoadError::Internal(format!("starting a runtime: {e}")))?;
    rt.block_on(create_tables::<S>(cfg))?;
    let m = &cfg.model;
    if cfg.stop.load(Ordering::Relaxed) {
        return Ok(LoadReport {
            interrupted: true,
            ..LoadReport::default()
        });
    }
    let units = Units::new(m.startid1, m.maxid1);
    let progress = Progress::default();
    let started = Instant::now();
    let done = AtomicBool::new(false);
    let (ln, nn, next) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    let result: Result<(), LoadError> = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        match cfg.seeding {
            Seeding::JavaCompatible => {
                let mut master = Sha1Prng::linkbench_master(cfg.seed);
                let node_rng = JavaRandom::new(master.next_long());
                let chunk_rng = JavaRandom::new(master.next_long());
                let (lw, nw) = ((units, Order::Links), (units, Order::Nodes));
                let (ln, nn) = (&ln, &nn);
                let progress = &progress;
                let link_streams = streams(m, chunk_rng);
                let node_streams = streams(m, node_rng);
                handles.push(scope.spawn(move || thread_main::<S>(cfg, lw, ln, Some(link_streams), progress)));
                handles.push(scope.spawn(move || thread_main::<S>(cfg, nw, nn, Some(node_streams), progress)));
                finish(handles, &done, progress, cfg, started)
            }
            Seeding::PerStream => {
                let (queue, next, progress) = ((units, Order::Mixed), &next, &progress);
                for _ in 0..cfg.loaders.max(1) {
                    handles.push(scope.spawn(move || thread_main::<S>(cfg, queue, next, None, progress)));
                }
                finish(handles, &done, progress, cfg, started)
            }
        }
    });
    result?;
    let interrupted = progress.incomplete.load(Ordering::Relaxed);
    if !interrupted {
        rt.block_on(after_load::<S>(cfg))?;
        rt.block_on(mark_complete::<S>(cfg))?;
    }
    Ok(LoadReport {
        nodes: progress.nodes.load(Ordering::Relaxed),
        links: progress.links.load(Ordering::Relaxed),
        counts: progress.counts.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        interrupted,
    })
}

fn thread_main<S: LoadSession>(
    cfg: &LoadConfig,
    queue: (Units, Order),
    next: &AtomicUsize,
    shared: Option<Streams>,
    progress: &Progress,
) -> Result<(), LoadError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| LoadError::Internal(format!("starting a runtime: {e}")))?;
    let r = rt.block_on(run_loader::<S>(cfg, queue, next, shared, progress));
    if r.is_err() {
        progress.failed.store(true, Ordering::Relaxed);
    }
    r
}

/// Waits for the loader threads, printing progress meanwhile; the first error wins.
fn finish(
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<(), LoadError>>>,
    done: &AtomicBool,
    progress: &Progress,
    cfg: &LoadConfig,
    started: Instant,
) -> Result<(), LoadError> {
    let total = (cfg.model.maxid1 - cfg.model.startid1) as u64;
    let mut last = Instant::now();
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(Duration::from_millis(50));
        if let Some(every) = cfg.progress {
            if last.elapsed() >= every {
                last = Instant::now();
                let s = started.elapsed().as_secs_f64().max(1e-9);
                let (ids, links, nodes) = (
                    progress.id1s.load(Ordering::Relaxed),
                    progress.links.load(Ordering::Relaxed),
                    progress.nodes.load(Ordering::Relaxed),
                );
                eprintln!(
                    "{ids}/{total} id1s loaded ({:.1}% complete) at {:.0} id1s/s; {links} links at {:.0} links/s; {nodes} nodes",
                    100.0 * ids as f64 / total as f64,
                    ids as f64 / s,
                    links as f64 / s
                );
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let mut first = None;
    for h in handles {
        let r = h
            .join()
            .unwrap_or_else(|_| Err(LoadError::Internal("a loader thread panicked".into())));
        if let Err(e) = r {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every unit of a queue, in order.
    fn all(u: Units, order: Order) -> Vec<(bool, i64, i64, i64)> {
        (0..)
            .map_while(|i| u.get(order, i))
            .map(|w| match w {
                Work::Links { chunk, start, end } => (true, chunk, start, end),
                Work::Nodes { chunk, start, end } => (false, chunk, start, end),
            })
            .collect()
    }

    #[test]
    fn units_cover_the_ids_in_the_reference_order() {
        // 2.5 chunks from id 1: links last chunk first, nodes first chunk first.
        let u = Units::new(1, 1 + 2 * CHUNK + CHUNK / 2);
        let links = all(u, Order::Links);
        assert_eq!(
            links,
            vec![
                (true, 2, 1 + 2 * CHUNK, 1 + 2 * CHUNK + CHUNK / 2),
                (true, 1, 1 + CHUNK, 1 + 2 * CHUNK),
                (true, 0, 1, 1 + CHUNK),
            ]
        );
        let nodes = all(u, Order::Nodes);
        assert_eq!(nodes.iter().map(|w| w.1).collect::<Vec<_>>(), [0, 1, 2]);
        // The shared queue alternates them and holds each unit once.
        let mixed = all(u, Order::Mixed);
        assert_eq!(mixed.len(), 6);
        for (i, w) in mixed.iter().enumerate() {
            let want = if i % 2 == 0 { links[i / 2] } else { nodes[i / 2] };
            assert_eq!(*w, want, "unit {i}");
        }
        assert!(all(Units::new(5, 5), Order::Mixed).is_empty());
    }

    #[test]
    fn units_need_no_memory_per_id() {
        // The largest supported graph: the queue is three numbers, its last unit is found
        // from its index and ends at maxid1.
        let max = 1 + i32::MAX as i64;
        let u = Units::new(1, max);
        assert_eq!(std::mem::size_of::<Units>(), 24);
        let last = (2 * u.chunks - 1) as usize;
        assert!(matches!(u.get(Order::Mixed, last), Some(Work::Nodes { end, .. }) if end == max));
        assert!(matches!(
            u.get(Order::Mixed, last - 1),
            Some(Work::Links { start: 1, chunk: 0, .. })
        ));
        assert!(u.get(Order::Mixed, last + 1).is_none());
    }

    #[test]
    fn copy_bytea_is_escaped_hex() {
        let mut out = Vec::new();
        push_copy_bytea(&mut out, &[0, b'\\', b'\t', 0xff]);
        assert_eq!(out, b"\\\\x005c09ff");
    }
}
