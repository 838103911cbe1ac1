//! New-Order (clause 2.4): 5 to 15 order lines, items by NURand(8191), 1% of lines
//! supplied by a remote warehouse (when there are several), and 1% of transactions
//! rolled back on an unused item number — counted as an expected rollback, not an error.
//!
//! Lines are processed in (supply warehouse, item) order, so concurrent New-Orders lock
//! stock rows in one order and deadlock less; the unused item stays the last line, as
//! clause 2.4.1.4 requires, even when a remote line would sort after it.

use dbperf_engine::StatementLog;

use super::load::ITEMS;
use super::rand::{nurand, uniform};
use super::schema::Schema;
use super::worker::{cents, St, TpccWorker};
use dbperf_driver::{DbError, Param, Session};

/// The statements, in [`St`] order.
pub fn statements(s: &Schema) -> Vec<(St, String)> {
    vec![
        (St::NoWarehouse, "SELECT w_tax FROM warehouse WHERE w_id = ?".into()),
        (
            St::NoDistrict,
            "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ? FOR UPDATE".into(),
        ),
        (
            St::NoDistrictUpdate,
            "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?".into(),
        ),
        (
            St::NoCustomer,
            "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        ),
        (
            St::NoOrderInsert,
            "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES (?, ?, ?, ?, NOW(), ?, ?)".into(),
        ),
        (
            St::NoNewOrderInsert,
            format!("INSERT INTO {} (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)", s.new_order()),
        ),
        (St::NoItem, "SELECT i_price, i_name, i_data FROM item WHERE i_id = ?".into()),
        (
            St::NoStockUpdate,
            "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ? WHERE s_w_id = ? AND s_i_id = ?".into(),
        ),
        (
            St::NoOrderLineInsert,
            "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, ?, ?/100, ?)".into(),
        ),
    ]
}

/// The stock SELECT for district `d` (1..=10), which reads that district's S_DIST_xx.
pub fn stock_sql(d: usize) -> String {
    format!("SELECT s_quantity, s_data, s_dist_{d:02} FROM stock WHERE s_w_id = ? AND s_i_id = ? FOR UPDATE")
}

/// One order line's input: item, supplying warehouse, quantity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Line {
    supply_w: i64,
    item: i64,
    quantity: i64,
}

/// Sorts lines into the order their stock rows are locked: by supplying warehouse, then
/// item, with the unused item last whatever its supplying warehouse.
fn lock_order(lines: &mut [Line]) {
    lines.sort_unstable_by_key(|l| (l.item > ITEMS, l.supply_w, l.item));
}

impl<S: Session> TpccWorker<S> {
    /// Runs the body of a New-Order inside the open transaction; true when it rolled back
    /// on the unused item.
    pub(super) async fn new_order(&mut self, log: &mut StatementLog) -> Result<bool, DbError> {
        let rng = &mut self.rng;
        let (w, d) = (self.t.w, uniform(rng, 1, 10));
        let c_id = self.t.customer_id(rng);
        let count = uniform(rng, 5, 15) as usize;
        let rollback = uniform(rng, 1, 100) == 1;
        let mut lines = [Line::default(); 15];
        let mut all_local = 1;
        for (n, line) in lines.iter_mut().take(count).enumerate() {
            line.item = if rollback && n == count - 1 {
                ITEMS + 1
            } else {
                nurand(rng, 8191, 1, ITEMS, self.t.c.ol_i_id)
            };
            line.supply_w = if self.t.warehouses > 1 && uniform(rng, 1, 100) == 1 {
                all_local = 0;
                self.t.other_warehouse(rng)
            } else {
                w
            };
            line.quantity = uniform(rng, 1, 10);
        }
        let lines = &mut lines[..count];
        lock_order(lines);

        let c = &mut self.conn;
        c.select(log, St::NoWarehouse, &[Param::Int(w)]).await?;
        c.select(log, St::NoDistrict, &[Param::Int(w), Param::Int(d)]).await?;
        let o_id = c.rows.int(0, 1).unwrap_or(0);
        c.exec(log, St::NoDistrictUpdate, &[Param::Int(w), Param::Int(d)])
            .await?;
        c.select(log, St::NoCustomer, &[Param::Int(w), Param::Int(d), Param::Int(c_id)])
            .await?;
        let p = [o_id, d, w, c_id, count as i64, all_local].map(Param::Int);
        c.exec(log, St::NoOrderInsert, &p).await?;
        c.exec(log, St::NoNewOrderInsert, &[o_id, d, w].map(Param::Int)).await?;
        for (n, line) in lines.iter().enumerate() {
            if c.select(log, St::NoItem, &[Param::Int(line.item)]).await? == 0 {
                // Clause 2.4.2.3: the unused item ends the transaction in a rollback.
                c.control(log, super::worker::St::Rollback).await?;
                return Ok(true);
            }
            let price = cents(&c.rows, 0, 0);
            c.select_stock(log, d, &[Param::Int(line.supply_w), Param::Int(line.item)])
                .await?;
            let s_quantity = c.rows.int(0, 0).unwrap_or(0);
            let mut dist = [0u8; 24];
            let info = c.rows.bytes(0, 2).unwrap_or_default();
            let len = info.len().min(24);
            dist[..len].copy_from_slice(&info[..len]);
            let quantity = if s_quantity >= line.quantity + 10 {
                s_quantity - line.quantity
            } else {
                s_quantity - line.quantity + 91
            };
            let remote = i64::from(line.supply_w != w);
            let p = [quantity, line.quantity, remote, line.supply_w, line.item].map(Param::Int);
            c.exec(log, St::NoStockUpdate, &p).await?;
            let amount = line.quantity * price;
            c.exec(
                log,
                St::NoOrderLineInsert,
                &[
                    Param::Int(o_id),
                    Param::Int(d),
                    Param::Int(w),
                    Param::Int(n as i64 + 1),
                    Param::Int(line.item),
                    Param::Int(line.supply_w),
                    Param::Int(line.quantity),
                    Param::Int(amount),
                    Param::Bytes(&dist[..len]),
                ],
            )
            .await?;
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unused_item_is_locked_last_even_behind_a_remote_line() {
        let line = |supply_w, item| Line {
            supply_w,
            item,
            quantity: 1,
        };
        let mut lines = [line(3, 7), line(1, 90_000), line(1, ITEMS + 1), line(1, 5)];
        lock_order(&mut lines);
        let order: Vec<(i64, i64)> = lines.iter().map(|l| (l.supply_w, l.item)).collect();
        assert_eq!(order, [(1, 5), (1, 90_000), (3, 7), (1, ITEMS + 1)]);
    }
}
