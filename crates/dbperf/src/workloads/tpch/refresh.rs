//! The refresh functions: RF1 inserts new sales (SF·1500 orders with their lineitems),
//! RF2 deletes as many old ones. Each is one transaction.
//!
//! Refresh set `n` (from 1) is derived from the base data, not from dbgen's `-U` files
//! (which this release does not reproduce byte for byte): RF1 inserts copies of the base
//! orders with indexes `(n-1)·count .. n·count` under new keys (the base key with dbgen's
//! sparse-key sequence bits set to 1: `key | 8`, never a base key), and RF2 deletes those
//! base orders. So every pair leaves the row counts and value distributions as they were.
//! The next set is found from the data itself (RF1 keys present / count + 1), so pairs are
//! never reused, even across runs.

use bytes::Bytes;
use tpchgen::generators::{LineItemGenerator, OrderGenerator};

use super::schema::Dialect;
use super::table::Table;
use super::{ctx, TpchError};
use crate::driver::any::AnySession;
use crate::driver::Session;

/// The bit dbgen's sparse keys use for the first update sequence.
const RF_KEY_BIT: i64 = 8;

/// Orders per refresh function at `sf`: SF·1500, at least 1.
pub fn refresh_count(sf: f64) -> u64 {
    ((sf * 1500.0).round() as u64).max(1)
}

/// One refresh set, generated ahead of the timed refresh.
#[derive(Clone, Debug)]
pub struct RefreshSet {
    /// Set number, from 1.
    pub n: u64,
    /// RF1's orders rows (`|`-separated, `\n`-terminated).
    pub orders: Bytes,
    /// RF1's lineitem rows.
    pub lineitems: Bytes,
    /// RF2's order keys.
    pub delete_keys: Vec<i64>,
}

impl RefreshSet {
    /// Generates set `n` at `sf`.
    pub fn generate(sf: f64, n: u64) -> Result<RefreshSet, TpchError> {
        let count = refresh_count(sf);
        let total = Table::Orders.approx_rows(sf);
        let first = (n - 1) * count;
        if n == 0 || first + count > total {
            return Err(TpchError::Invalid(format!(
                "refresh set {n} does not exist at SF {sf}: the base data holds {} sets; reload the data (`dbperf tpch cleanup` then `prepare`)",
                total / count
            )));
        }
        let mut orders = Vec::new();
        let mut keys = Vec::with_capacity(count as usize);
        for o in OrderGenerator::new(sf, 1, 1)
            .iter()
            .skip(first as usize)
            .take(count as usize)
        {
            keys.push(o.o_orderkey);
            push_rekeyed(&mut orders, &o.to_string());
        }
        let (lo, hi) = (keys[0], *keys.last().unwrap_or(&keys[0]));
        let mut lineitems = Vec::new();
        for l in LineItemGenerator::new(sf, 1, 1).iter() {
            if l.l_orderkey < lo {
                continue;
            }
            if l.l_orderkey > hi {
                break;
            }
            push_rekeyed(&mut lineitems, &l.to_string());
        }
        Ok(RefreshSet {
            n,
            orders: orders.into(),
            lineitems: lineitems.into(),
            delete_keys: keys,
        })
    }

    /// RF1: inserts the new orders and lineitems in one transaction.
    pub async fn rf1(&self, s: &mut AnySession, dialect: Dialect) -> Result<(), TpchError> {
        s.query("BEGIN").await.map_err(ctx("RF1: BEGIN"))?;
        for (t, rows) in [(Table::Orders, &self.orders), (Table::LineItem, &self.lineitems)] {
            let data = futures_util::stream::iter([Ok(rows.clone())]);
            let r = s
                .stream_in(&dialect.load_statement(t), Box::pin(data))
                .await
                .map_err(ctx(format!("RF1: inserting into {}", t.name())));
            if let Err(e) = r {
                let _ = s.query("ROLLBACK").await;
                return Err(e);
            }
        }
        s.query("COMMIT").await.map_err(ctx("RF1: COMMIT"))?;
        Ok(())
    }

    /// RF2: deletes the old orders and their lineitems in one transaction.
    pub async fn rf2(&self, s: &mut AnySession) -> Result<(), TpchError> {
        let list = self
            .delete_keys
            .iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(",");
        s.query("BEGIN").await.map_err(ctx("RF2: BEGIN"))?;
        for sql in [
            format!("DELETE FROM lineitem WHERE l_orderkey IN ({list})"),
            format!("DELETE FROM orders WHERE o_orderkey IN ({list})"),
        ] {
            if let Err(e) = s.query(&sql).await {
                let _ = s.query("ROLLBACK").await;
                return Err(ctx("RF2: deleting old sales")(e));
            }
        }
        s.query("COMMIT").await.map_err(ctx("RF2: COMMIT"))?;
        Ok(())
    }
}

/// The next unused refresh set: RF1 orders present / count + 1.
pub async fn next_set(s: &mut AnySession, sf: f64) -> Result<u64, TpchError> {
    let rows = s
        .query_rows(&format!(
            "SELECT COUNT(*) FROM orders WHERE (o_orderkey & {RF_KEY_BIT}) <> 0"
        ))
        .await
        .map_err(ctx("counting refreshed orders"))?;
    let present: u64 = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok(present / refresh_count(sf) + 1)
}

/// Appends a `.tbl` row (ending in `|`) with its first field (the order key) moved into
/// the refresh key space, without the trailing `|`.
fn push_rekeyed(out: &mut Vec<u8>, row: &str) {
    let (key, rest) = row.split_once('|').unwrap_or((row, ""));
    let key: i64 = key.parse().unwrap_or(0);
    out.extend_from_slice((key | RF_KEY_BIT).to_string().as_bytes());
    out.push(b'|');
    out.extend_from_slice(rest.strip_suffix('|').unwrap_or(rest).as_bytes());
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_rows_use_new_keys_of_the_chosen_orders() {
        let set = RefreshSet::generate(0.01, 2).unwrap();
        assert_eq!(set.delete_keys.len(), 15);
        assert!(set.delete_keys.iter().all(|k| k & RF_KEY_BIT == 0));
        let text = std::str::from_utf8(&set.orders).unwrap();
        assert_eq!(text.lines().count(), 15);
        let first: i64 = text.split('|').next().unwrap().parse().unwrap();
        assert_eq!(first, set.delete_keys[0] | RF_KEY_BIT);
        let items = std::str::from_utf8(&set.lineitems).unwrap();
        assert!(items.lines().count() >= 15);
        assert!(!items.contains("|\n"));
        assert!(RefreshSet::generate(0.01, 1001).is_err());
    }
}
