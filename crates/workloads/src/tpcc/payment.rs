//! Payment (clause 2.5): the home warehouse and district get the payment; the customer is
//! in the home district 85% of the time and otherwise in a random district of another
//! warehouse (when there are several); 60% of customers are chosen by last name (the
//! middle one of those sorted by first name), 40% by NURand(1023) id. A bad-credit
//! customer's C_DATA gets the payment's ids and amount in front, kept to 500 characters.

use std::io::Write;

use dbperf_engine::StatementLog;

use super::rand::{last_name, nurand, uniform};
use super::schema::Schema;
use super::worker::{Conn, St, Terminal, TpccWorker};
use dbperf_driver::{DbError, Param, Session};

/// The statements, in [`St`] order.
pub fn statements(_: &Schema) -> Vec<(St, String)> {
    let customer_update =
        "UPDATE customer SET c_balance = c_balance - ?/100, c_ytd_payment = c_ytd_payment + ?/100, c_payment_cnt = c_payment_cnt + 1";
    vec![
        (St::PayWarehouseUpdate, "UPDATE warehouse SET w_ytd = w_ytd + ?/100 WHERE w_id = ?".into()),
        (
            St::PayWarehouse,
            "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?".into(),
        ),
        (
            St::PayDistrictUpdate,
            "UPDATE district SET d_ytd = d_ytd + ?/100 WHERE d_w_id = ? AND d_id = ?".into(),
        ),
        (
            St::PayDistrict,
            "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ? AND d_id = ?".into(),
        ),
        (
            St::CustomerByName,
            "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first".into(),
        ),
        (
            St::PayCustomer,
            "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE".into(),
        ),
        (
            St::PayCustomerUpdate,
            format!("{customer_update} WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"),
        ),
        (
            St::PayCustomerUpdateBc,
            format!("{customer_update}, c_data = SUBSTRING(CONCAT(?, c_data), 1, 500) WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"),
        ),
        (
            St::PayHistoryInsert,
            "INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (?, ?, ?, ?, ?, NOW(), ?/100, ?)".into(),
        ),
    ]
}

/// Chooses the customer: 60% by last name (clause 2.5.2.2), else by id. Shared with
/// Order-Status. `name` is scratch space for the last name.
pub(super) async fn choose_customer<S: Session>(
    c: &mut Conn<S>,
    log: &mut StatementLog,
    t: &Terminal,
    rng: &mut rand::rngs::SmallRng,
    (w, d): (i64, i64),
    name: &mut Vec<u8>,
) -> Result<i64, DbError> {
    if uniform(rng, 1, 100) > 60 {
        return Ok(t.customer_id(rng));
    }
    last_name(nurand(rng, 255, 0, 999, t.c.c_last), name);
    let n = c
        .select(
            log,
            St::CustomerByName,
            &[Param::Int(w), Param::Int(d), Param::Bytes(name)],
        )
        .await?;
    // The row at position ceil(n / 2), counting from 1.
    Ok(if n == 0 {
        t.customer_id(rng)
    } else {
        c.rows.int(n.div_ceil(2) - 1, 0).unwrap_or(1)
    })
}

impl<S: Session> TpccWorker<S> {
    /// Runs the body of a Payment inside the open transaction.
    pub(super) async fn payment(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let rng = &mut self.rng;
        let (w, d) = (self.t.w, uniform(rng, 1, 10));
        let (c_w, c_d) = if self.t.warehouses > 1 && uniform(rng, 1, 100) > 85 {
            (self.t.other_warehouse(rng), uniform(rng, 1, 10))
        } else {
            (w, d)
        };
        let amount = uniform(rng, 100, 500_000);
        let c = &mut self.conn;
        c.exec(log, St::PayWarehouseUpdate, &[Param::Int(amount), Param::Int(w)])
            .await?;
        c.select(log, St::PayWarehouse, &[Param::Int(w)]).await?;
        // H_DATA = W_NAME, four spaces, D_NAME.
        let h_data = &mut self.buf2;
        h_data.clear();
        h_data.extend_from_slice(c.rows.bytes(0, 0).unwrap_or_default());
        h_data.extend_from_slice(b"    ");
        c.exec(
            log,
            St::PayDistrictUpdate,
            &[Param::Int(amount), Param::Int(w), Param::Int(d)],
        )
        .await?;
        c.select(log, St::PayDistrict, &[Param::Int(w), Param::Int(d)]).await?;
        h_data.extend_from_slice(c.rows.bytes(0, 0).unwrap_or_default());
        let c_id = choose_customer(c, log, &self.t, &mut self.rng, (c_w, c_d), &mut self.buf).await?;
        let key = [Param::Int(c_w), Param::Int(c_d), Param::Int(c_id)];
        c.select(log, St::PayCustomer, &key).await?;
        if c.rows.bytes(0, 10) == Some(b"BC") {
            let prefix = &mut self.buf;
            prefix.clear();
            let _ = write!(
                prefix,
                "{c_id} {c_d} {c_w} {d} {w} {}.{:02} ",
                amount / 100,
                amount % 100
            );
            let p = [
                Param::Int(amount),
                Param::Int(amount),
                Param::Bytes(prefix),
                key[0],
                key[1],
                key[2],
            ];
            c.exec(log, St::PayCustomerUpdateBc, &p).await?;
        } else {
            let p = [Param::Int(amount), Param::Int(amount), key[0], key[1], key[2]];
            c.exec(log, St::PayCustomerUpdate, &p).await?;
        }
        let p = [
            Param::Int(c_d),
            Param::Int(c_w),
            Param::Int(c_id),
            Param::Int(d),
            Param::Int(w),
            Param::Int(amount),
            Param::Bytes(h_data),
        ];
        c.exec(log, St::PayHistoryInsert, &p).await?;
        Ok(())
    }
}
