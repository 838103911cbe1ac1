//! Stock-Level (clause 2.8): the terminal's own district; how many distinct items of its
//! last 20 orders have stock below a threshold drawn from [10, 20]. Read-only.

use dbperf_engine::StatementLog;

use super::rand::uniform;
use super::schema::Schema;
use super::worker::{St, TpccWorker};
use dbperf_driver::{DbError, Param, Session};

/// The statements, in [`St`] order.
pub fn statements(_: &Schema) -> Vec<(St, String)> {
    vec![
        (St::SlDistrict, "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?".into()),
        (
            St::SlStockCount,
            "SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_quantity < ?".into(),
        ),
    ]
}

impl<S: Session> TpccWorker<S> {
    /// Runs the body of a Stock-Level inside the open transaction.
    pub(super) async fn stock_level(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let (w, d) = (self.t.w, self.t.d);
        let threshold = uniform(&mut self.rng, 10, 20);
        let c = &mut self.conn;
        c.select(log, St::SlDistrict, &[w, d].map(Param::Int)).await?;
        let next = c.rows.int(0, 0).unwrap_or(0);
        c.select(
            log,
            St::SlStockCount,
            &[w, d, next, next - 20, threshold].map(Param::Int),
        )
        .await?;
        Ok(())
    }
}
