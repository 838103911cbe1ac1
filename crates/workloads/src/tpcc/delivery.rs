//! Delivery (clause 2.7): for each of the home warehouse's 10 districts, the oldest
//! undelivered order gets a carrier, its lines a delivery date, and its customer the
//! order's amount. A district without an undelivered order is skipped.
//!
//! The spec lets Delivery run deferred (queued, 80 s limit for the 90th percentile);
//! dbperf runs it inline as one transaction on the terminal's connection, as tpcc-mysql
//! and go-tpc do, so its response time is the execution time.

use dbperf_engine::StatementLog;

use super::rand::uniform;
use super::schema::Schema;
use super::worker::{cents, St, TpccWorker};
use dbperf_driver::{DbError, Param, Session};

/// The statements, in [`St`] order.
pub fn statements(s: &Schema) -> Vec<(St, String)> {
    let no = s.new_order();
    vec![
        (
            St::DlNewOrder,
            format!("SELECT no_o_id FROM {no} WHERE no_w_id = ? AND no_d_id = ? ORDER BY no_o_id LIMIT 1 FOR UPDATE"),
        ),
        (
            St::DlNewOrderDelete,
            format!("DELETE FROM {no} WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?"),
        ),
        (
            St::DlOrder,
            "SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?".into(),
        ),
        (
            St::DlOrderUpdate,
            "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?".into(),
        ),
        (
            St::DlOrderLineUpdate,
            "UPDATE order_line SET ol_delivery_d = NOW() WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?".into(),
        ),
        (
            St::DlOrderLineSum,
            "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?".into(),
        ),
        (
            St::DlCustomerUpdate,
            "UPDATE customer SET c_balance = c_balance + ?/100, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?".into(),
        ),
    ]
}

impl<S: Session> TpccWorker<S> {
    /// Runs the body of a Delivery inside the open transaction.
    pub(super) async fn delivery(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let w = self.t.w;
        let carrier = uniform(&mut self.rng, 1, 10);
        let c = &mut self.conn;
        for d in 1..=10 {
            if c.select(log, St::DlNewOrder, &[w, d].map(Param::Int)).await? == 0 {
                continue;
            }
            let o_id = c.rows.int(0, 0).unwrap_or(0);
            let order = [w, d, o_id].map(Param::Int);
            c.exec(log, St::DlNewOrderDelete, &order).await?;
            c.select(log, St::DlOrder, &order).await?;
            let c_id = c.rows.int(0, 0).unwrap_or(0);
            c.exec(log, St::DlOrderUpdate, &[carrier, w, d, o_id].map(Param::Int))
                .await?;
            c.exec(log, St::DlOrderLineUpdate, &order).await?;
            c.select(log, St::DlOrderLineSum, &order).await?;
            let amount = cents(&c.rows, 0, 0);
            c.exec(log, St::DlCustomerUpdate, &[amount, w, d, c_id].map(Param::Int))
                .await?;
        }
        Ok(())
    }
}
