//! A TPC-C terminal: one connection, its home warehouse and district, its card deck,
//! keying and think times in `spec` mode, and the statements every transaction uses.
//!
//! Statements are prepared once per connection and identified by [`St`] (the engine's
//! statement kinds); rows come back into one reused [`Rows`]. On an error inside a
//! transaction the terminal rolls back before returning, so a retry never builds on a
//! partial transaction; the retry repeats the same transaction type with fresh inputs.

use std::time::Duration;

use dbperf_engine::clock::now_ns;
use dbperf_engine::{QueryClass, StatementLog, TxnDone, TxnError, Worker};
use rand::rngs::SmallRng;

use super::rand::{nurand, think_time, uniform, Deck, NuConstants, TxnType};
use super::schema::Schema;
use super::{delivery, new_order, order_status, payment, stock_level, Mode};
use dbperf_driver::{abort_transaction, DbError, Param, Rows, Session, StmtId};

/// Statement kinds, in [`STATEMENT_NAMES`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum St {
    Begin,
    Commit,
    Rollback,
    NoWarehouse,
    NoDistrict,
    NoDistrictUpdate,
    NoCustomer,
    NoOrderInsert,
    NoNewOrderInsert,
    NoItem,
    NoStockUpdate,
    NoOrderLineInsert,
    PayWarehouseUpdate,
    PayWarehouse,
    PayDistrictUpdate,
    PayDistrict,
    CustomerByName,
    PayCustomer,
    PayCustomerUpdate,
    PayCustomerUpdateBc,
    PayHistoryInsert,
    OsCustomer,
    OsLastOrder,
    OsOrderLines,
    DlNewOrder,
    DlNewOrderDelete,
    DlOrder,
    DlOrderUpdate,
    DlOrderLineUpdate,
    DlOrderLineSum,
    DlCustomerUpdate,
    SlDistrict,
    SlStockCount,
    /// The per-district stock SELECTs (prepared apart, ten of them).
    NoStock,
}

/// Names of [`St`], as reported.
pub const STATEMENT_NAMES: [&str; 34] = [
    "begin",
    "commit",
    "rollback",
    "no_select_warehouse",
    "no_select_district",
    "no_update_district",
    "no_select_customer",
    "no_insert_orders",
    "no_insert_new_order",
    "no_select_item",
    "no_update_stock",
    "no_insert_order_line",
    "pay_update_warehouse",
    "pay_select_warehouse",
    "pay_update_district",
    "pay_select_district",
    "select_customer_by_name",
    "pay_select_customer",
    "pay_update_customer",
    "pay_update_customer_bc",
    "pay_insert_history",
    "os_select_customer",
    "os_select_last_order",
    "os_select_order_lines",
    "dl_select_new_order",
    "dl_delete_new_order",
    "dl_select_orders",
    "dl_update_orders",
    "dl_update_order_line",
    "dl_sum_order_line",
    "dl_update_customer",
    "sl_select_district",
    "sl_count_stock",
    "no_select_stock",
];

/// Every statement's SQL, in [`St`] order, and the ten per-district stock selects.
fn all_statements(schema: &Schema) -> (Vec<(St, String)>, Vec<String>) {
    let mut v = vec![
        (St::Begin, "BEGIN".to_string()),
        (St::Commit, "COMMIT".to_string()),
        (St::Rollback, "ROLLBACK".to_string()),
    ];
    v.extend(new_order::statements(schema));
    v.extend(payment::statements(schema));
    v.extend(order_status::statements(schema));
    v.extend(delivery::statements(schema));
    v.extend(stock_level::statements(schema));
    (v, (1..=10).map(new_order::stock_sql).collect())
}

/// A connection with its prepared statements and a reused result buffer.
pub struct Conn<S> {
    pub session: S,
    pub rows: Rows,
    stmts: Vec<StmtId>,
    stock: Vec<StmtId>,
}

impl<S: Session> Conn<S> {
    async fn prepare_all(&mut self, schema: &Schema) -> Result<(), DbError> {
        let (statements, stock) = all_statements(schema);
        self.stmts.clear();
        for (i, (st, sql)) in statements.iter().enumerate() {
            debug_assert_eq!(*st as usize, i);
            self.stmts.push(self.session.prepare(&schema.sql(sql)).await?);
        }
        self.stock.clear();
        for sql in &stock {
            self.stock.push(self.session.prepare(&schema.sql(sql)).await?);
        }
        Ok(())
    }

    /// Executes a statement that returns no rows; returns the affected rows.
    pub async fn exec(&mut self, log: &mut StatementLog, st: St, params: &[Param<'_>]) -> Result<u64, DbError> {
        let start = now_ns();
        let info = self.session.exec(self.stmts[st as usize], params).await?;
        let class = if info.affected_rows > 0 {
            QueryClass::Write
        } else {
            QueryClass::Other
        };
        log.record(st as u16, start, class);
        Ok(info.affected_rows)
    }

    /// Executes a SELECT into [`Conn::rows`]; returns the number of rows.
    pub async fn select(&mut self, log: &mut StatementLog, st: St, params: &[Param<'_>]) -> Result<usize, DbError> {
        self.select_id(log, st, self.stmts[st as usize], params).await
    }

    /// The stock SELECT of district `d`, whose S_DIST_xx column it reads.
    pub async fn select_stock(
        &mut self,
        log: &mut StatementLog,
        d: i64,
        params: &[Param<'_>],
    ) -> Result<usize, DbError> {
        let id = self.stock[d as usize - 1];
        self.select_id(log, St::NoStock, id, params).await
    }

    async fn select_id(
        &mut self,
        log: &mut StatementLog,
        st: St,
        id: StmtId,
        params: &[Param<'_>],
    ) -> Result<usize, DbError> {
        let start = now_ns();
        self.session.exec_rows(id, params, &mut self.rows).await?;
        log.record(st as u16, start, QueryClass::Read);
        Ok(self.rows.len())
    }

    /// BEGIN, COMMIT or ROLLBACK.
    pub async fn control(&mut self, log: &mut StatementLog, st: St) -> Result<(), DbError> {
        let start = now_ns();
        self.session.exec(self.stmts[st as usize], &[]).await?;
        log.record(st as u16, start, QueryClass::Other);
        Ok(())
    }
}

/// Where a terminal works and how it draws.
#[derive(Clone, Debug)]
pub struct Terminal {
    /// Home warehouse.
    pub w: i64,
    /// The terminal's district (Stock-Level's, clause 2.8.1.2).
    pub d: i64,
    /// Warehouses in the run.
    pub warehouses: i64,
    /// NURand constants of the run.
    pub c: NuConstants,
}

impl Terminal {
    /// A warehouse other than the home one, uniformly (only when there are several).
    pub fn other_warehouse(&self, rng: &mut SmallRng) -> i64 {
        let o = uniform(rng, 1, self.warehouses - 1);
        if o >= self.w {
            o + 1
        } else {
            o
        }
    }

    /// A customer id by NURand(1023, 1, 3000).
    pub fn customer_id(&self, rng: &mut SmallRng) -> i64 {
        nurand(rng, 1023, 1, 3000, self.c.c_id)
    }
}

/// One TPC-C terminal on a session of type `S`.
pub struct TpccWorker<S> {
    pub(super) conn: Conn<S>,
    pub(super) rng: SmallRng,
    pub(super) t: Terminal,
    /// Scratch space for names and strings built per transaction (no allocation once grown).
    pub(super) buf: Vec<u8>,
    pub(super) buf2: Vec<u8>,
    schema: Schema,
    mode: Mode,
    wait_scale: f64,
    deck: Deck,
    next: Option<TxnType>,
    last: Option<TxnType>,
    warehouse_choice: super::WarehouseChoice,
}

impl<S: Session> TpccWorker<S> {
    /// A terminal on `session`, with its statements prepared.
    pub async fn new(
        session: S,
        schema: Schema,
        t: Terminal,
        mode: Mode,
        wait_scale: f64,
        rng: SmallRng,
    ) -> Result<TpccWorker<S>, DbError> {
        let mut conn = Conn {
            session,
            rows: Rows::new(),
            stmts: Vec::new(),
            stock: Vec::new(),
        };
        conn.prepare_all(&schema).await?;
        Ok(TpccWorker {
            conn,
            rng,
            t,
            buf: Vec::with_capacity(64),
            buf2: Vec::with_capacity(64),
            schema,
            mode,
            wait_scale,
            deck: Deck::default(),
            next: None,
            last: None,
            warehouse_choice: super::WarehouseChoice::Fixed,
        })
    }

    /// Draws the warehouse and district per transaction instead of keeping the home ones.
    pub fn with_warehouse_choice(mut self, choice: super::WarehouseChoice) -> TpccWorker<S> {
        self.warehouse_choice = choice;
        self
    }

    async fn run(&mut self, t: TxnType, log: &mut StatementLog) -> Result<bool, DbError> {
        self.conn.control(log, St::Begin).await?;
        let rolled_back = match t {
            TxnType::NewOrder => self.new_order(log).await?,
            TxnType::Payment => {
                self.payment(log).await?;
                false
            }
            TxnType::OrderStatus => {
                self.order_status(log).await?;
                false
            }
            TxnType::Delivery => {
                self.delivery(log).await?;
                false
            }
            TxnType::StockLevel => {
                self.stock_level(log).await?;
                false
            }
        };
        if !rolled_back {
            self.conn.control(log, St::Commit).await?;
        }
        Ok(rolled_back)
    }
}

impl<S: Session> Worker for TpccWorker<S> {
    async fn execute(&mut self, log: &mut StatementLog) -> Result<TxnDone, TxnError> {
        let t = match self.next {
            Some(t) => t,
            None => {
                let t = self.deck.deal(&mut self.rng);
                self.next = Some(t);
                if self.warehouse_choice == super::WarehouseChoice::PerTransaction {
                    // A retried transaction keeps its warehouse; a new one draws again.
                    self.t.w = uniform(&mut self.rng, 1, self.t.warehouses);
                    self.t.d = uniform(&mut self.rng, 1, 10);
                }
                t
            }
        };
        match self.run(t, log).await {
            Ok(rolled_back) => {
                self.next = None;
                self.last = Some(t);
                Ok(TxnDone {
                    kind: t as u16,
                    expected_rollback: rolled_back,
                })
            }
            Err(e) => Err(abort_transaction(&mut self.conn.session, e).await),
        }
    }

    async fn reconnect(&mut self) -> Result<(), TxnError> {
        self.conn.session.reconnect().await?;
        self.conn.prepare_all(&self.schema).await?;
        Ok(())
    }

    fn pause(&mut self) -> Option<Duration> {
        if self.mode != Mode::Spec || self.next.is_some() {
            return None;
        }
        let think = self.last.take().map_or(0.0, |t| think_time(&mut self.rng, t.think_s()));
        let t = self.deck.deal(&mut self.rng);
        self.next = Some(t);
        Some(Duration::from_secs_f64((think + t.keying_s()) * self.wait_scale))
    }
}

/// Cents from a DECIMAL cell (money is kept in cents on the client).
pub fn cents(rows: &Rows, row: usize, col: usize) -> i64 {
    rows.float(row, col).map_or(0, |v| (v * 100.0).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_names_follow_the_enum() {
        assert_eq!(STATEMENT_NAMES.len(), St::NoStock as usize + 1);
        let schema = Schema {
            kind: super::super::schema::SchemaKind::Dbperf,
            history_pk: false,
            family: dbperf_driver::target::Family::Mysql,
        };
        let (v, stock) = all_statements(&schema);
        for (i, (st, _)) in v.iter().enumerate() {
            assert_eq!(*st as usize, i, "{st:?}");
        }
        assert_eq!(v.len() + 1, STATEMENT_NAMES.len());
        assert!(stock[9].contains("s_dist_10"));
    }
}
