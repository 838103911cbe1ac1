//! Order-Status (clause 2.6): a customer of the home warehouse (60% by last name), their
//! most recent order, and that order's lines. Read-only.

use dbperf_engine::StatementLog;

use super::payment::choose_customer;
use super::rand::uniform;
use super::schema::Schema;
use super::worker::{St, TpccWorker};
use dbperf_driver::{DbError, Param, Session};

/// The statements, in [`St`] order.
pub fn statements(_: &Schema) -> Vec<(St, String)> {
    vec![
        (
            St::OsCustomer,
            "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        ),
        (
            St::OsLastOrder,
            "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1".into(),
        ),
        (
            St::OsOrderLines,
            "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?".into(),
        ),
    ]
}

impl<S: Session> TpccWorker<S> {
    /// Runs the body of an Order-Status inside the open transaction.
    pub(super) async fn order_status(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let (w, d) = (self.t.w, uniform(&mut self.rng, 1, 10));
        let c = &mut self.conn;
        let c_id = choose_customer(c, log, &self.t, &mut self.rng, (w, d), &mut self.buf).await?;
        let key = [w, d, c_id].map(Param::Int);
        c.select(log, St::OsCustomer, &key).await?;
        if c.select(log, St::OsLastOrder, &key).await? > 0 {
            let o_id = c.rows.int(0, 0).unwrap_or(0);
            c.select(log, St::OsOrderLines, &[w, d, o_id].map(Param::Int)).await?;
        }
        Ok(())
    }
}
