//! A LinkBench requester: two sessions (read-write with autocommit off, read-only with
//! autocommit on, as the reference's `conn_rw` and `conn_ro`), the op draw, the id1, link
//! type and id2 choices in the reference's order of random draws, the ten operations, and
//! the getlinklist history cache.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use dbperf_engine::clock::now_ns;
use dbperf_engine::{QueryClass, StatementLog, TxnDone, TxnError, Worker};

use super::config::Op;
use super::dist::MotifGen;
use super::jrand::JavaRandom;
use super::schema::{LinkbenchSql, St};
use super::{Access, Model, LINK_TYPE_BASE, NODE_TYPE, RANGE_LIMIT};
use dbperf_driver::target::Family;
use dbperf_driver::{abort_transaction, DbError, Param, Rows, Session, StmtId};

/// Share of add-link id2s that already exist, and of update, delete and get.
const P_ADD_EXIST: f64 = 0.05;
const P_UPDATE_EXIST: f64 = 0.9;
const P_DELETE_EXIST: f64 = 0.9;
const P_GET_EXIST: f64 = 0.5;
/// Tries to find a new id2 for a multiget before accepting a duplicate.
const MAX_UNIQ_ITERS: u32 = 100;
/// Entries of the getlinklist history cache.
const HISTORY_LIMIT: usize = 2048;
/// Largest IN list a multiget sends (geometric sizes are capped below this).
const MAX_MULTIGET: usize = 1024;

/// Statements of the read-write session.
const RW_STATEMENTS: [St; 11] = [
    St::LinkInsert,
    St::CountIncrement,
    St::LinkUpdateData,
    St::Commit,
    St::Rollback,
    St::LinkLockVisibility,
    St::LinkHide,
    St::CountDecrement,
    St::NodeInsert,
    St::NodeUpdate,
    St::NodeDelete,
];
/// Statements of the read-only session (multigets are prepared per IN-list length, on use).
const RO_STATEMENTS: [St; 3] = [St::CountSelect, St::LinkList, St::NodeSelect];

/// One session and its prepared statements.
pub struct Conn<S> {
    session: S,
    stmts: Vec<Option<StmtId>>,
    multiget: Vec<Option<StmtId>>,
    rw: bool,
}

impl<S: Session> Conn<S> {
    async fn setup(&mut self, family: Family) -> Result<(), DbError> {
        for sql in family.session_setup() {
            self.session.query(sql).await?;
        }
        if self.rw {
            for sql in family.rw_setup() {
                self.session.query(sql).await?;
            }
        }
        self.stmts = vec![None; super::schema::STATEMENT_NAMES.len()];
        self.multiget = vec![None; MAX_MULTIGET + 1];
        let list: &[St] = if self.rw { &RW_STATEMENTS } else { &RO_STATEMENTS };
        for &st in list {
            self.stmts[st as usize] = Some(self.session.prepare(&family.sql(st)).await?);
        }
        Ok(())
    }

    fn id(&self, st: St) -> StmtId {
        self.stmts[st as usize].expect("statement prepared on this session")
    }

    /// Executes a statement without rows; returns the affected rows.
    async fn exec(&mut self, log: &mut StatementLog, st: St, params: &[Param<'_>]) -> Result<u64, DbError> {
        let start = now_ns();
        let info = self.session.exec(self.id(st), params).await?;
        log.record(st as u16, start, class(st));
        Ok(info.affected_rows)
    }

    /// Executes a statement that returns rows (a SELECT, or PostgreSQL's link INSERT ...
    /// RETURNING) into `rows`; returns the row count.
    async fn select(
        &mut self,
        log: &mut StatementLog,
        st: St,
        params: &[Param<'_>],
        rows: &mut Rows,
    ) -> Result<usize, DbError> {
        let start = now_ns();
        self.session.exec_rows(self.id(st), params, rows).await?;
        log.record(st as u16, start, class(st));
        Ok(rows.len())
    }

    /// A multiget of `params.len() - 2` id2s.
    async fn multiget(
        &mut self,
        log: &mut StatementLog,
        family: Family,
        params: &[Param<'_>],
        rows: &mut Rows,
    ) -> Result<usize, DbError> {
        let n = params.len() - 2;
        let id = match self.multiget[n] {
            Some(id) => id,
            None => {
                let id = self.session.prepare(&family.multiget(n)).await?;
                self.multiget[n] = Some(id);
                id
            }
        };
        let start = now_ns();
        self.session.exec_rows(id, params, rows).await?;
        log.record(St::LinkMultiget as u16, start, QueryClass::Read);
        Ok(rows.len())
    }
}

/// The payload generators of one requester (each builds its motif on first use).
struct Gens {
    link_add: MotifGen,
    link_up: MotifGen,
    node_add: MotifGen,
    node_up: MotifGen,
}

/// A remembered link list that hit the range limit: where the next page starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tail {
    id1: i64,
    link_type: i64,
    time: i64,
}

/// The reference's cache of link lists that may have more history: a list with random
/// eviction and an index by (id1, type). Its quirks are kept: an evicted or moved entry's
/// key can stay in the index, which then blocks that key from being added again.
#[derive(Default)]
struct History {
    list: Vec<Tail>,
    index: HashMap<(i64, i64), usize>,
}

impl History {
    fn add(&mut self, t: Tail, rng: &mut JavaRandom) {
        if self.index.contains_key(&(t.id1, t.link_type)) {
            return;
        }
        if self.list.len() < HISTORY_LIMIT {
            self.list.push(t);
            self.index.insert((t.id1, t.link_type), self.list.len() - 1);
        } else {
            let choice = rng.next_int_bound(self.list.len() as i32) as usize;
            self.remove(choice, Some(t));
        }
    }

    fn remove(&mut self, pos: usize, repl: Option<Tail>) {
        let last = self.list.len() - 1;
        if pos == last {
            let entry = self.list[pos];
            self.index.remove(&(entry.id1, entry.link_type));
            match repl {
                None => {
                    self.list.pop();
                }
                Some(r) => {
                    self.list[last] = r;
                    self.index.insert((r.id1, r.link_type), last);
                }
            }
        } else {
            let r = match repl {
                Some(r) => r,
                None => self.list.pop().expect("not empty"),
            };
            self.list[pos] = r;
            self.index.insert((r.id1, r.link_type), pos);
        }
    }
}

/// One LinkBench requester on sessions of type `S`.
pub struct Requester<S> {
    rw: Conn<S>,
    ro: Conn<S>,
    family: Family,
    model: Arc<Model>,
    rng: JavaRandom,
    /// Cumulative percentages in draw order.
    cumulative: [(Op, f64); 10],
    gens: Gens,
    data: Vec<u8>,
    rows: Rows,
    id2s: Vec<i64>,
    history: History,
    /// The read-write session has statements not yet committed.
    in_txn: bool,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// An id from `main`, or (with probability `blend`) from the uncorrelated distribution,
/// shuffled: the reference's `chooseRequestID`.
fn choose_id(rng: &mut JavaRandom, startid1: i64, main: &Access, uncorr: &Option<(Access, f64)>) -> i64 {
    let a = match uncorr {
        Some((u, blend)) if rng.next_double() < *blend => u,
        _ => main,
    };
    let id = a.dist.choose(rng);
    startid1 + a.shuffler.permute(id - startid1)
}

fn id2_range(model: &Model, id1: i64, link_type: i64, p_exist: f64) -> i64 {
    let nlinks = model.links.of_type(id1, link_type - LINK_TYPE_BASE);
    (((1.0 / p_exist) * nlinks as f64).ceil() as i64).max(1)
}

impl<S: Session> Requester<S> {
    /// A requester on sessions `rw` and `ro`, statements prepared.
    pub async fn new(
        rw: S,
        ro: S,
        family: Family,
        model: Arc<Model>,
        rng: JavaRandom,
    ) -> Result<Requester<S>, DbError> {
        let mut rw = Conn {
            session: rw,
            stmts: Vec::new(),
            multiget: Vec::new(),
            rw: true,
        };
        let mut ro = Conn {
            session: ro,
            stmts: Vec::new(),
            multiget: Vec::new(),
            rw: false,
        };
        rw.setup(family).await?;
        ro.setup(family).await?;
        let mut cumulative = [(Op::AddLink, 0.0); 10];
        let mut sum = 0.0;
        for (i, op) in Op::DRAW_ORDER.into_iter().enumerate() {
            sum += model.mix.mix[op as usize];
            cumulative[i] = (op, sum);
        }
        let m = &model.mix;
        let gens = Gens {
            link_add: MotifGen::new(m.link_add.start, m.link_add.end, m.link_add.uniqueness),
            link_up: MotifGen::new(m.link_up.start, m.link_up.end, m.link_up.uniqueness),
            node_add: MotifGen::new(m.node_add.start, m.node_add.end, m.node_add.uniqueness),
            node_up: MotifGen::new(m.node_up.start, m.node_up.end, m.node_up.uniqueness),
        };
        Ok(Requester {
            rw,
            ro,
            family,
            model,
            rng,
            cumulative,
            gens,
            data: Vec::with_capacity(256),
            rows: Rows::new(),
            id2s: Vec::with_capacity(16),
            history: History::default(),
            in_txn: false,
        })
    }

    /// The next op: `nextDouble() * 100` against the cumulative mix in draw order.
    fn draw_op(&mut self) -> Option<Op> {
        let r = self.rng.next_double() * 100.0;
        self.cumulative.iter().find(|(_, pc)| r <= *pc).map(|(op, _)| *op)
    }

    fn link_type(&mut self) -> i64 {
        LINK_TYPE_BASE + self.rng.next_int_bound(self.model.mix.link_types as i32) as i64
    }

    /// A payload of log-normal size into `self.data`.
    fn payload(&mut self, node: bool, update: bool) {
        let m = &self.model;
        let size = if node {
            m.node_size.choose(&mut self.rng)
        } else {
            m.link_size.choose(&mut self.rng)
        };
        self.data.clear();
        self.data.resize(size as usize, 0);
        let g = match (node, update) {
            (false, false) => &mut self.gens.link_add,
            (false, true) => &mut self.gens.link_up,
            (true, false) => &mut self.gens.node_add,
            (true, true) => &mut self.gens.node_up,
        };
        g.fill(&mut self.rng, &mut self.data);
    }

    /// Marks the read-write session as in a transaction, starting one where the family
    /// needs an explicit BEGIN (PostgreSQL; MySQL's session runs with autocommit off).
    async fn begin(&mut self) -> Result<(), DbError> {
        self.in_txn = true;
        if let Some(sql) = self.family.begin() {
            self.rw.session.query(sql).await?;
        }
        Ok(())
    }

    async fn commit(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        self.rw.exec(log, St::Commit, &[]).await?;
        self.in_txn = false;
        Ok(())
    }

    /// ADD_LINK and UPDATE_LINK (the reference runs the same statements for both).
    async fn add_link(&mut self, log: &mut StatementLog, update: bool) -> Result<(), DbError> {
        let m = Arc::clone(&self.model);
        let id1 = choose_id(&mut self.rng, m.startid1, &m.write, &m.write_uncorr);
        let link_type = self.link_type();
        let p = if update { P_UPDATE_EXIST } else { P_ADD_EXIST };
        let id2 = id1 + self.rng.next_int_bound(id2_range(&m, id1, link_type, p) as i32) as i64;
        let time = now_ms();
        self.payload(false, update);
        self.begin().await?;
        let data = Param::Bytes(&self.data);
        let (id1p, id2p, tp) = (Param::Int(id1), Param::Int(id2), Param::Int(link_type));
        let insert = [id1p, id2p, tp, Param::Int(1), data, Param::Int(time), Param::Int(0)];
        let n = if self.family.link_insert_returns_rows() {
            match self.rw.select(log, St::LinkInsert, &insert, &mut self.rows).await? {
                0 => 0,
                _ => self.rows.int(0, 0).unwrap_or(1) as u64,
            }
        } else {
            self.rw.exec(log, St::LinkInsert, &insert).await?
        };
        // Affected rows: 1 inserted, 0 present and unchanged, 2 visibility flipped.
        let (update_count, update_data) = match n {
            1 => (true, false),
            0 => (false, true),
            _ => (true, true),
        };
        if update_count {
            let now = Param::Int(now_ms());
            self.rw
                .exec(
                    log,
                    St::CountIncrement,
                    &[id1p, tp, Param::Int(1), now, Param::Int(1), now],
                )
                .await?;
        }
        if update_data {
            self.rw
                .exec(
                    log,
                    St::LinkUpdateData,
                    &[Param::Int(1), data, Param::Int(time), Param::Int(0), id1p, id2p, tp],
                )
                .await?;
        }
        self.commit(log).await
    }

    async fn delete_link(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let m = Arc::clone(&self.model);
        let id1 = choose_id(&mut self.rng, m.startid1, &m.write, &m.write_uncorr);
        let link_type = self.link_type();
        let id2 = id1
            + self
                .rng
                .next_int_bound(id2_range(&m, id1, link_type, P_DELETE_EXIST) as i32) as i64;
        let key = [Param::Int(id1), Param::Int(id2), Param::Int(link_type)];
        self.begin().await?;
        let found = self
            .rw
            .select(log, St::LinkLockVisibility, &key, &mut self.rows)
            .await?;
        if found > 0 && self.rows.int(0, 0) != Some(0) {
            self.rw.exec(log, St::LinkHide, &key).await?;
            let now = Param::Int(now_ms());
            self.rw
                .exec(
                    log,
                    St::CountDecrement,
                    &[Param::Int(id1), Param::Int(link_type), now, now],
                )
                .await?;
        }
        self.commit(log).await
    }

    async fn count_link(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let m = Arc::clone(&self.model);
        let id1 = choose_id(&mut self.rng, m.startid1, &m.read, &m.read_uncorr);
        let link_type = self.link_type();
        self.ro
            .select(
                log,
                St::CountSelect,
                &[Param::Int(id1), Param::Int(link_type)],
                &mut self.rows,
            )
            .await?;
        Ok(())
    }

    async fn multiget_link(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let m = Arc::clone(&self.model);
        let id1 = choose_id(&mut self.rng, m.startid1, &m.read, &m.read_uncorr);
        let link_type = self.link_type();
        let n = (m.mix.multiget.choose(&mut self.rng) as usize).clamp(1, MAX_MULTIGET);
        let range = id2_range(&m, id1, link_type, P_GET_EXIST);
        self.id2s.clear();
        if range <= n as i64 {
            self.id2s.extend((0..n as i64).map(|i| id1 + i));
        } else {
            for _ in 0..n {
                let mut iters = 0;
                let id2 = loop {
                    let id2 = id1 + self.rng.next_int_bound(range as i32) as i64;
                    iters += 1;
                    if !self.id2s.contains(&id2) || iters > MAX_UNIQ_ITERS {
                        break id2;
                    }
                };
                self.id2s.push(id2);
            }
        }
        let mut params = Vec::with_capacity(n + 2);
        params.push(Param::Int(id1));
        params.push(Param::Int(link_type));
        params.extend(self.id2s.iter().map(|&i| Param::Int(i)));
        self.ro.multiget(log, self.family, &params, &mut self.rows).await?;
        Ok(())
    }

    async fn get_links_list(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let m = Arc::clone(&self.model);
        if self.rng.next_double() < m.mix.history && !self.history.list.is_empty() {
            let choice = self.rng.next_int_bound(self.history.list.len() as i32) as usize;
            let t = self.history.list[choice];
            let params = [
                Param::Int(t.id1),
                Param::Int(t.link_type),
                Param::Int(0),
                Param::Int(t.time),
                Param::Int(1),
                Param::Int(RANGE_LIMIT),
            ];
            let n = self.ro.select(log, St::LinkList, &params, &mut self.rows).await?;
            match self.last_link(n) {
                Some(last) if n as i64 == RANGE_LIMIT => self.history.list[choice] = last,
                _ => self.history.remove(choice, None),
            }
            return Ok(());
        }
        let id1 = choose_id(&mut self.rng, m.startid1, &m.read, &m.read_uncorr);
        let link_type = self.link_type();
        let params = [
            Param::Int(id1),
            Param::Int(link_type),
            Param::Int(0),
            Param::Int(i64::MAX),
            Param::Int(0),
            Param::Int(RANGE_LIMIT),
        ];
        let n = self.ro.select(log, St::LinkList, &params, &mut self.rows).await?;
        if n as i64 >= RANGE_LIMIT {
            if let Some(last) = self.last_link(n) {
                self.history.add(last, &mut self.rng);
            }
        }
        Ok(())
    }

    /// The last row of a link list, as a history entry.
    fn last_link(&self, n: usize) -> Option<Tail> {
        let r = n.checked_sub(1)?;
        Some(Tail {
            id1: self.rows.int(r, 0)?,
            link_type: self.rows.int(r, 2)?,
            time: self.rows.int(r, 5)?,
        })
    }

    async fn add_node(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        self.payload(true, false);
        let now_s = now_ms() / 1000;
        self.begin().await?;
        self.rw
            .exec(
                log,
                St::NodeInsert,
                &[
                    Param::Int(NODE_TYPE),
                    Param::Int(1),
                    Param::Int(now_s),
                    Param::Bytes(&self.data),
                ],
            )
            .await?;
        self.commit(log).await
    }

    async fn update_node(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let m = Arc::clone(&self.model);
        let id = choose_id(&mut self.rng, m.startid1, &m.node_update, &None);
        self.payload(true, true);
        let now_s = now_ms() / 1000;
        self.begin().await?;
        self.rw
            .exec(
                log,
                St::NodeUpdate,
                &[
                    Param::Int(2),
                    Param::Int(now_s),
                    Param::Bytes(&self.data),
                    Param::Int(id),
                    Param::Int(NODE_TYPE),
                ],
            )
            .await?;
        self.commit(log).await
    }

    async fn delete_node(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let m = Arc::clone(&self.model);
        let id = choose_id(&mut self.rng, m.startid1, &m.node_delete, &None);
        self.begin().await?;
        self.rw
            .exec(log, St::NodeDelete, &[Param::Int(id), Param::Int(NODE_TYPE)])
            .await?;
        self.commit(log).await
    }

    async fn get_node(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let m = Arc::clone(&self.model);
        let id = choose_id(&mut self.rng, m.startid1, &m.node_read, &None);
        self.ro
            .select(log, St::NodeSelect, &[Param::Int(id)], &mut self.rows)
            .await?;
        Ok(())
    }

    async fn run(&mut self, op: Op, log: &mut StatementLog) -> Result<(), DbError> {
        match op {
            Op::AddLink => self.add_link(log, false).await,
            Op::UpdateLink => self.add_link(log, true).await,
            Op::DeleteLink => self.delete_link(log).await,
            Op::CountLink => self.count_link(log).await,
            Op::MultigetLink => self.multiget_link(log).await,
            Op::GetLinksList => self.get_links_list(log).await,
            Op::AddNode => self.add_node(log).await,
            Op::UpdateNode => self.update_node(log).await,
            Op::DeleteNode => self.delete_node(log).await,
            Op::GetNode => self.get_node(log).await,
        }
    }
}

/// sysbench's read/write/other rule for a statement: SELECTs (the locking one too) read,
/// COMMIT and ROLLBACK are other, the rest write.
fn class(st: St) -> QueryClass {
    match st {
        St::LinkLockVisibility | St::CountSelect | St::LinkMultiget | St::LinkList | St::NodeSelect => QueryClass::Read,
        St::Commit | St::Rollback => QueryClass::Other,
        _ => QueryClass::Write,
    }
}

impl<S: Session> Worker for Requester<S> {
    async fn execute(&mut self, log: &mut StatementLog) -> Result<TxnDone, TxnError> {
        let Some(op) = self.draw_op() else {
            // Only when the percentages add up to a little under 100 (within 1e-5).
            return Ok(TxnDone {
                kind: Op::GetNode as u16,
                expected_rollback: false,
            });
        };
        match self.run(op, log).await {
            Ok(()) => Ok(TxnDone {
                kind: op as u16,
                expected_rollback: false,
            }),
            Err(e) if std::mem::take(&mut self.in_txn) => Err(abort_transaction(&mut self.rw.session, e).await),
            Err(e) => Err(e.into()),
        }
    }

    async fn reconnect(&mut self) -> Result<(), TxnError> {
        self.in_txn = false;
        self.rw.session.reconnect().await?;
        self.ro.session.reconnect().await?;
        self.rw.setup(self.family).await?;
        self.ro.setup(self.family).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail(i: i64) -> Tail {
        Tail {
            id1: i,
            link_type: LINK_TYPE_BASE,
            time: i,
        }
    }

    #[test]
    fn history_evicts_at_random_and_keeps_stale_keys() {
        let mut h = History::default();
        let mut rng = JavaRandom::new(1);
        for i in 0..HISTORY_LIMIT as i64 {
            h.add(tail(i), &mut rng);
        }
        assert_eq!(h.list.len(), HISTORY_LIMIT);
        h.add(tail(5000), &mut rng);
        assert_eq!(h.list.len(), HISTORY_LIMIT);
        assert!(h.list.contains(&tail(5000)));
        // Removing the middle moves the last entry into the gap; the removed key stays
        // indexed, as in the reference, so it cannot be added again.
        let gone = h.list[3];
        h.remove(3, None);
        assert_eq!(h.list.len(), HISTORY_LIMIT - 1);
        h.add(gone, &mut rng);
        assert!(!h.list.contains(&gone));
    }
}
