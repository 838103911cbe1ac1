//! One sysbench event (transaction) per test, executed by an [`OltpWorker`].
//!
//! The statements, their order, their parameters and the random draws follow the
//! 1.0.20 Lua scripts: each statement group picks one table, ranges run from a drawn
//! `x` to `x + range_size - 1`, the delete/insert pair reuses one id, and
//! `oltp_insert` sends its INSERT through the text protocol. On an error inside an
//! explicit transaction the worker rolls back before returning, so a retried event
//! never commits a partial one (sysbench's 1205 hazard).

use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use super::options::OltpRules;

use dbperf_engine::clock::now_ns;
use dbperf_engine::{ErrorClass, OpTable, QueryClass, StatementLog, TxnDone, TxnError, Worker, Workload};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::options::{OltpOptions, Test};
use super::rand::{uniform, Distribution, KeySampler};
use super::strings::{fill_template, C_TEMPLATE, PAD_TEMPLATE};
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::target::Family;
use dbperf_driver::{abort_transaction, DbError, Param, Session, StmtId, Target};

/// Statement kinds, in [`OpTable::statements`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Kind {
    /// `BEGIN`
    Begin,
    /// `COMMIT`
    Commit,
    /// `SELECT c FROM sbtestN WHERE id=?`
    PointSelect,
    /// `SELECT c ... BETWEEN`
    SimpleRange,
    /// `SELECT SUM(k) ... BETWEEN`
    SumRange,
    /// `SELECT c ... BETWEEN ... ORDER BY c`
    OrderRange,
    /// `SELECT DISTINCT c ... BETWEEN ... ORDER BY c`
    DistinctRange,
    /// `UPDATE ... SET k=k+1 WHERE id=?`
    IndexUpdate,
    /// `UPDATE ... SET c=? WHERE id=?`
    NonIndexUpdate,
    /// `DELETE ... WHERE id=?`
    Delete,
    /// `INSERT INTO sbtestN (id, k, c, pad) VALUES (...)`
    Insert,
    /// select_random_points' `k IN (...)`
    RandomPoints,
    /// select_random_ranges' `k BETWEEN ... OR ...`
    RandomRanges,
}

const KINDS: [(Kind, &str); 13] = [
    (Kind::Begin, "begin"),
    (Kind::Commit, "commit"),
    (Kind::PointSelect, "point_select"),
    (Kind::SimpleRange, "simple_range"),
    (Kind::SumRange, "sum_range"),
    (Kind::OrderRange, "order_range"),
    (Kind::DistinctRange, "distinct_range"),
    (Kind::IndexUpdate, "index_update"),
    (Kind::NonIndexUpdate, "non_index_update"),
    (Kind::Delete, "delete"),
    (Kind::Insert, "insert"),
    (Kind::RandomPoints, "random_points"),
    (Kind::RandomRanges, "random_ranges"),
];

/// The per-table statements, `%u` being the table number.
fn table_sql(kind: Kind, n: u32) -> String {
    match kind {
        Kind::PointSelect => format!("SELECT c FROM sbtest{n} WHERE id=?"),
        Kind::SimpleRange => format!("SELECT c FROM sbtest{n} WHERE id BETWEEN ? AND ?"),
        Kind::SumRange => format!("SELECT SUM(k) FROM sbtest{n} WHERE id BETWEEN ? AND ?"),
        Kind::OrderRange => format!("SELECT c FROM sbtest{n} WHERE id BETWEEN ? AND ? ORDER BY c"),
        Kind::DistinctRange => format!("SELECT DISTINCT c FROM sbtest{n} WHERE id BETWEEN ? AND ? ORDER BY c"),
        Kind::IndexUpdate => format!("UPDATE sbtest{n} SET k=k+1 WHERE id=?"),
        Kind::NonIndexUpdate => format!("UPDATE sbtest{n} SET c=? WHERE id=?"),
        Kind::Delete => format!("DELETE FROM sbtest{n} WHERE id=?"),
        Kind::Insert => format!("INSERT INTO sbtest{n} (id, k, c, pad) VALUES (?, ?, ?, ?)"),
        Kind::Begin => "BEGIN".into(),
        Kind::Commit => "COMMIT".into(),
        Kind::RandomPoints | Kind::RandomRanges => unreachable!("single-table statements are built separately"),
    }
}

/// select_random_points' statement, whitespace as in the Lua script.
fn random_points_sql(points: u32) -> String {
    let marks = vec!["?"; points as usize].join(", ");
    format!("\n        SELECT id, k, c, pad\n          FROM sbtest1\n          WHERE k IN ({marks})\n        ")
}

/// select_random_ranges' statement, whitespace as in the Lua script.
fn random_ranges_sql(ranges: u32) -> String {
    let cond = vec!["k BETWEEN ? AND ?"; ranges as usize].join(" OR ");
    format!("\n        SELECT count(k)\n          FROM sbtest1\n          WHERE {cond}")
}

/// Which statement kinds a test prepares, per table.
fn prepared_kinds(test: Test, o: &OltpOptions) -> Vec<Kind> {
    let reads = [Kind::PointSelect];
    let ranges = [Kind::SimpleRange, Kind::SumRange, Kind::OrderRange, Kind::DistinctRange];
    let writes = [Kind::IndexUpdate, Kind::NonIndexUpdate, Kind::Delete, Kind::Insert];
    let mut v = Vec::new();
    match test {
        Test::ReadOnly | Test::ReadWrite => {
            v.extend(reads);
            if o.range_selects {
                v.extend(ranges);
            }
            if test == Test::ReadWrite {
                v.extend(writes);
            }
        }
        Test::WriteOnly => v.extend(writes),
        Test::PointSelect => v.push(Kind::PointSelect),
        Test::UpdateIndex => v.push(Kind::IndexUpdate),
        Test::UpdateNonIndex => v.push(Kind::NonIndexUpdate),
        Test::Delete => v.push(Kind::Delete),
        Test::Insert | Test::SelectRandomPoints | Test::SelectRandomRanges => {}
    }
    v
}

/// Shared definition of a sysbench OLTP run, on sessions of type `S`.
pub struct OltpWorkload<S> {
    test: Test,
    opts: OltpOptions,
    target: Target,
    ignore: IgnoreErrors,
    dist: Distribution,
    keys: KeySampler,
    connections: u32,
    seed: u64,
    unique: UniqueIds,
    session: std::marker::PhantomData<fn() -> S>,
}

impl<S: Session + 'static> OltpWorkload<S> {
    /// A workload for `test` against `target`; `seed` makes every worker's draws
    /// reproducible.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        test: Test,
        opts: OltpOptions,
        target: Target,
        ignore: IgnoreErrors,
        dist: Distribution,
        connections: u32,
        seed: u64,
    ) -> Result<OltpWorkload<S>, String> {
        opts.validate(test)?;
        let keys = dist.sampler(1, opts.table_size.max(1)).map_err(|e| e.to_string())?;
        Ok(OltpWorkload {
            test,
            opts,
            target,
            ignore,
            dist,
            keys,
            connections,
            seed,
            unique: UniqueIds::new(seed),
            session: std::marker::PhantomData,
        })
    }
}

impl<S: Session + 'static> Workload for OltpWorkload<S> {
    type Worker = OltpWorker<S>;

    fn ops(&self) -> OpTable {
        OpTable {
            transactions: vec![self.test.name().to_string()],
            statements: KINDS.iter().map(|(_, n)| n.to_string()).collect(),
        }
    }

    async fn connect(&self, worker: usize) -> Result<Self::Worker, TxnError> {
        let session = S::connect(&self.target, self.ignore.clone()).await?;
        // select_random_*: each connection draws from its own slice of k values.
        let slice_len = self.opts.table_size / self.connections.max(1);
        let tid = worker as u32 % self.connections.max(1);
        let slice = self
            .dist
            .sampler(slice_len * tid, slice_len * tid + slice_len)
            .map_err(|e| {
                TxnError::new(
                    ErrorClass::Fatal,
                    None,
                    format!("cannot build the key distribution: {e}"),
                )
            })?;
        let mut w = OltpWorker {
            session,
            test: self.test,
            opts: self.opts.clone(),
            keys: self.keys,
            slice,
            rng: SmallRng::seed_from_u64(
                self.seed
                    .wrapping_add(0x5851_f42d_4c95_7f2d_u64.wrapping_mul(worker as u64 + 1)),
            ),
            stmts: Vec::new(),
            begin: None,
            commit: None,
            single: None,
            unique: self.unique.clone(),
            c: [0; 119],
            pad: [0; 59],
            sql: Vec::with_capacity(512),
            params: Vec::with_capacity(32),
            events: 0,
            family: self.target.family,
        };
        w.prepare_statements().await?;
        Ok(w)
    }
}

/// One connection running sysbench events.
pub struct OltpWorker<S: Session> {
    session: S,
    test: Test,
    opts: OltpOptions,
    keys: KeySampler,
    slice: KeySampler,
    rng: SmallRng,
    /// `stmts[table - 1][kind]`
    stmts: Vec<[Option<StmtId>; KINDS.len()]>,
    begin: Option<StmtId>,
    commit: Option<StmtId>,
    single: Option<StmtId>,
    unique: UniqueIds,
    c: [u8; 119],
    pad: [u8; 59],
    sql: Vec<u8>,
    /// Reused parameter list of the single-table statements (no allocation per event).
    params: Vec<Param<'static>>,
    events: u64,
    /// oltp_insert's text INSERT differs on PostgreSQL.
    family: Family,
}

impl<S: Session> OltpWorker<S> {
    async fn prepare_statements(&mut self) -> Result<(), DbError> {
        let explicit_trx =
            matches!(self.test, Test::ReadOnly | Test::ReadWrite | Test::WriteOnly) && !self.opts.skip_trx;
        if explicit_trx {
            self.begin = Some(self.session.prepare("BEGIN").await?);
            self.commit = Some(self.session.prepare("COMMIT").await?);
        }
        let kinds = prepared_kinds(self.test, &self.opts);
        self.stmts.clear();
        for t in 1..=self.opts.tables {
            let mut row = [None; KINDS.len()];
            for &k in &kinds {
                row[k as usize] = Some(self.session.prepare(&table_sql(k, t)).await.map_err(explain_prepare)?);
            }
            self.stmts.push(row);
        }
        self.single = match self.test {
            Test::SelectRandomPoints => Some(
                self.session
                    .prepare(&random_points_sql(self.opts.random_points))
                    .await?,
            ),
            Test::SelectRandomRanges => Some(
                self.session
                    .prepare(&random_ranges_sql(self.opts.number_of_ranges))
                    .await?,
            ),
            _ => None,
        };
        Ok(())
    }

    fn table(&mut self) -> u32 {
        uniform(&mut self.rng, 1, self.opts.tables)
    }

    fn stmt(&self, table: u32, kind: Kind) -> StmtId {
        self.stmts[table as usize - 1][kind as usize].expect("statement prepared for this test")
    }

    /// Executes one prepared statement and logs it.
    async fn exec(
        &mut self,
        log: &mut StatementLog,
        kind: Kind,
        stmt: StmtId,
        params: &[Param<'_>],
    ) -> Result<(), DbError> {
        let start = now_ns();
        let info = self.session.exec(stmt, params).await?;
        log.record(kind as u16, start, classify(kind, info.affected_rows));
        Ok(())
    }

    async fn point_selects(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let t = self.table();
        let stmt = self.stmt(t, Kind::PointSelect);
        let n = if self.test == Test::PointSelect {
            1
        } else {
            self.opts.point_selects
        };
        for _ in 0..n {
            let id = self.keys.sample(&mut self.rng) as i64;
            self.exec(log, Kind::PointSelect, stmt, &[Param::Int(id)]).await?;
        }
        Ok(())
    }

    async fn ranges(&mut self, log: &mut StatementLog, kind: Kind, count: u32) -> Result<(), DbError> {
        let t = self.table();
        let stmt = self.stmt(t, kind);
        for _ in 0..count {
            let x = self.keys.sample(&mut self.rng) as i64;
            let y = x + self.opts.range_size as i64 - 1;
            self.exec(log, kind, stmt, &[Param::Int(x), Param::Int(y)]).await?;
        }
        Ok(())
    }

    async fn index_updates(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let t = self.table();
        let stmt = self.stmt(t, Kind::IndexUpdate);
        for _ in 0..self.opts.index_updates {
            let id = self.keys.sample(&mut self.rng) as i64;
            self.exec(log, Kind::IndexUpdate, stmt, &[Param::Int(id)]).await?;
        }
        Ok(())
    }

    async fn non_index_updates(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let t = self.table();
        let stmt = self.stmt(t, Kind::NonIndexUpdate);
        for _ in 0..self.opts.non_index_updates {
            fill_template(&mut self.rng, C_TEMPLATE.as_bytes(), &mut self.c);
            let id = self.keys.sample(&mut self.rng) as i64;
            let c = self.c;
            self.exec(log, Kind::NonIndexUpdate, stmt, &[Param::Bytes(&c), Param::Int(id)])
                .await?;
        }
        Ok(())
    }

    async fn delete_inserts(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let t = self.table();
        let (del, ins) = (self.stmt(t, Kind::Delete), self.stmt(t, Kind::Insert));
        for _ in 0..self.opts.delete_inserts {
            let id = self.keys.sample(&mut self.rng) as i64;
            let k = self.keys.sample(&mut self.rng) as i64;
            fill_template(&mut self.rng, C_TEMPLATE.as_bytes(), &mut self.c);
            fill_template(&mut self.rng, PAD_TEMPLATE.as_bytes(), &mut self.pad);
            let (c, pad) = (self.c, self.pad);
            self.exec(log, Kind::Delete, del, &[Param::Int(id)]).await?;
            self.exec(
                log,
                Kind::Insert,
                ins,
                &[Param::Int(id), Param::Int(k), Param::Bytes(&c), Param::Bytes(&pad)],
            )
            .await?;
        }
        Ok(())
    }

    async fn delete(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let t = self.table();
        let stmt = self.stmt(t, Kind::Delete);
        let id = self.keys.sample(&mut self.rng) as i64;
        self.exec(log, Kind::Delete, stmt, &[Param::Int(id)]).await
    }

    /// oltp_insert: a text-protocol INSERT, as sysbench sends it.
    async fn insert_text(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let t = self.table();
        let k = self.keys.sample(&mut self.rng);
        fill_template(&mut self.rng, C_TEMPLATE.as_bytes(), &mut self.c);
        fill_template(&mut self.rng, PAD_TEMPLATE.as_bytes(), &mut self.pad);
        let id: i64 = if self.opts.auto_inc {
            0
        } else {
            self.unique.next() as i64 - 2_147_483_648
        };
        self.sql.clear();
        if self.family == Family::Postgres && self.opts.auto_inc {
            // sysbench's pgsql branch leaves the id to the SERIAL default.
            let _ = write!(self.sql, "INSERT INTO sbtest{t} (k, c, pad) VALUES ({k}, '");
        } else {
            let _ = write!(self.sql, "INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({id}, {k}, '");
        }
        self.sql.extend_from_slice(&self.c);
        self.sql.extend_from_slice(b"', '");
        self.sql.extend_from_slice(&self.pad);
        self.sql.extend_from_slice(b"')");
        // The template only produces ASCII digits and dashes.
        let sql = std::str::from_utf8(&self.sql).expect("ASCII statement");
        let start = now_ns();
        let info = self.session.query(sql).await?;
        log.record(Kind::Insert as u16, start, classify(Kind::Insert, info.affected_rows));
        Ok(())
    }

    async fn random_points(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let stmt = self.single.expect("prepared");
        self.params.clear();
        for _ in 0..self.opts.random_points {
            self.params.push(Param::Int(self.slice.sample(&mut self.rng) as i64));
        }
        let start = now_ns();
        self.session.exec(stmt, &self.params).await?;
        log.record(Kind::RandomPoints as u16, start, QueryClass::Read);
        Ok(())
    }

    async fn random_ranges(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let stmt = self.single.expect("prepared");
        self.params.clear();
        for _ in 0..self.opts.number_of_ranges {
            let v = self.slice.sample(&mut self.rng) as i64;
            self.params.push(Param::Int(v));
            self.params.push(Param::Int(v + self.opts.delta as i64));
        }
        let start = now_ns();
        self.session.exec(stmt, &self.params).await?;
        log.record(Kind::RandomRanges as u16, start, QueryClass::Read);
        Ok(())
    }

    /// The body of one event, without error handling.
    async fn event(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let o = &self.opts;
        let (ranges, point) = (o.range_selects, self.test);
        let counts = [o.simple_ranges, o.sum_ranges, o.order_ranges, o.distinct_ranges];
        if let Some(b) = self.begin {
            self.exec(log, Kind::Begin, b, &[]).await?;
        }
        match point {
            Test::ReadOnly | Test::ReadWrite | Test::WriteOnly => {
                if point != Test::WriteOnly {
                    self.point_selects(log).await?;
                    if ranges {
                        let kinds = [Kind::SimpleRange, Kind::SumRange, Kind::OrderRange, Kind::DistinctRange];
                        for (kind, n) in kinds.into_iter().zip(counts) {
                            self.ranges(log, kind, n).await?;
                        }
                    }
                }
                if point != Test::ReadOnly {
                    self.index_updates(log).await?;
                    self.non_index_updates(log).await?;
                    self.delete_inserts(log).await?;
                }
            }
            Test::PointSelect => self.point_selects(log).await?,
            Test::UpdateIndex => self.index_updates(log).await?,
            Test::UpdateNonIndex => self.non_index_updates(log).await?,
            Test::Delete => self.delete(log).await?,
            Test::Insert => self.insert_text(log).await?,
            Test::SelectRandomPoints => self.random_points(log).await?,
            Test::SelectRandomRanges => self.random_ranges(log).await?,
        }
        if let Some(c) = self.commit {
            self.exec(log, Kind::Commit, c, &[]).await?;
        }
        Ok(())
    }
}

impl<S: Session> Worker for OltpWorker<S> {
    async fn execute(&mut self, log: &mut StatementLog) -> Result<TxnDone, TxnError> {
        if self.opts.reconnect > 0 && self.events > 0 && self.events.is_multiple_of(self.opts.reconnect as u64) {
            self.reconnect().await?;
        }
        self.events += 1;
        match self.event(log).await {
            Ok(()) => Ok(TxnDone::committed(0)),
            Err(e) if self.begin.is_some() => Err(abort_transaction(&mut self.session, e).await),
            Err(e) => Err(e.into()),
        }
    }

    async fn reconnect(&mut self) -> Result<(), TxnError> {
        self.session.reconnect().await?;
        self.prepare_statements().await?;
        Ok(())
    }
}

/// sysbench's read/write/other rule for one statement.
fn classify(kind: Kind, affected_rows: u64) -> QueryClass {
    match kind {
        Kind::PointSelect
        | Kind::SimpleRange
        | Kind::SumRange
        | Kind::OrderRange
        | Kind::DistinctRange
        | Kind::RandomPoints
        | Kind::RandomRanges => QueryClass::Read,
        Kind::Begin | Kind::Commit => QueryClass::Other,
        _ if affected_rows > 0 => QueryClass::Write,
        _ => QueryClass::Other,
    }
}

/// Too many prepared statements is a server limit users can raise; say how.
fn explain_prepare(e: DbError) -> DbError {
    if e.code == Some(1461) {
        return DbError {
            message: format!(
                "{} — every connection prepares its statements on every table; raise max_prepared_stmt_count (SET GLOBAL max_prepared_stmt_count=1048576) or use fewer --threads or --tables",
                e.message
            ),
            ..e
        };
    }
    e
}

/// sysbench's `rand.unique()`: a duplicate-free sequence of 32-bit values, a quadratic
/// residue permutation of a shared counter (Preshing's construction).
#[derive(Clone, Debug)]
pub struct UniqueIds {
    index: Arc<AtomicU32>,
    offset: u32,
}

impl UniqueIds {
    const PRIME: u32 = 4_294_967_291;

    fn permute(x: u32) -> u32 {
        if x >= Self::PRIME {
            return x;
        }
        let residue = ((x as u64 * x as u64) % Self::PRIME as u64) as u32;
        if x <= Self::PRIME / 2 {
            residue
        } else {
            Self::PRIME - residue
        }
    }

    /// A sequence seeded from `seed`.
    pub fn new(seed: u64) -> UniqueIds {
        let (a, b) = (seed as u32, (seed >> 32) as u32 ^ 0x9e37_79b9);
        UniqueIds {
            index: Arc::new(AtomicU32::new(Self::permute(
                Self::permute(a).wrapping_add(0x682f_0161),
            ))),
            offset: Self::permute(Self::permute(b).wrapping_add(0x4679_0905)),
        }
    }

    /// The next value; never repeats within 2^32 calls.
    pub fn next(&self) -> u32 {
        let i = self.index.fetch_add(1, Ordering::Relaxed);
        Self::permute(Self::permute(i).wrapping_add(self.offset) ^ 0x5bf0_3635)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_texts_match_oltp_common() {
        assert_eq!(table_sql(Kind::PointSelect, 2), "SELECT c FROM sbtest2 WHERE id=?");
        assert_eq!(
            table_sql(Kind::DistinctRange, 1),
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c"
        );
        assert_eq!(
            table_sql(Kind::Insert, 8),
            "INSERT INTO sbtest8 (id, k, c, pad) VALUES (?, ?, ?, ?)"
        );
        assert_eq!(
            random_points_sql(3),
            "\n        SELECT id, k, c, pad\n          FROM sbtest1\n          WHERE k IN (?, ?, ?)\n        "
        );
        assert!(random_ranges_sql(2).ends_with("WHERE k BETWEEN ? AND ? OR k BETWEEN ? AND ?"));
    }

    #[test]
    fn kinds_table_is_in_enum_order() {
        for (i, (k, _)) in KINDS.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }

    #[test]
    fn unique_ids_do_not_repeat() {
        let u = UniqueIds::new(42);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            assert!(seen.insert(u.next()));
        }
    }

    #[test]
    fn read_write_other_rule() {
        assert_eq!(classify(Kind::PointSelect, 0), QueryClass::Read);
        assert_eq!(classify(Kind::Delete, 0), QueryClass::Other);
        assert_eq!(classify(Kind::Delete, 1), QueryClass::Write);
        assert_eq!(classify(Kind::Commit, 0), QueryClass::Other);
    }
}
