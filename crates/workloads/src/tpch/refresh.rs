//! The refresh functions: RF1 inserts new sales, RF2 deletes old ones, each in one
//! transaction. Their rows are dbgen's update sets (see [`super::updates`]): RF1 of set `n`
//! inserts the orders and lineitems of `orders.tbl.u<n>` / `lineitem.tbl.u<n>` (keys with
//! the update sequence in dbgen's sparse-key bits, never a base key) and RF2 of set `n`
//! deletes the orders listed in `delete.<n>` (base orders) with their lineitems, as the
//! spec and DBT-3 run them. A pair leaves as many orders as before (lineitems differ by a
//! few rows: the new orders have their own line counts).
//!
//! The next set is found from the data itself: the orders RF1 has inserted carry key bit 3
//! (`o_orderkey & 8`), so `count / orders_per_set + 1` is the first unused set, even across
//! runs and after a failed RF2. Sets are never reused; when they run out (set 999, or the
//! base orders at small SF) reload the data.

use bytes::Bytes;

use super::schema::TpchSql;
use super::table::{RowEnd, Table};
use super::updates::{orders_per_set, UpdateSet};
use super::TpchError;
use dbperf_driver::any::AnySession;
use dbperf_driver::doing;
use dbperf_driver::target::Family;
use dbperf_driver::Session;

/// The key bit of RF1's orders (update sequence 1 in dbgen's sparse bits).
const RF_KEY_BIT: i64 = 8;

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
    /// Generates set `n` at `sf` (dbgen's update set `n`), rows ready for loading.
    pub fn generate(sf: f64, n: u64) -> Result<RefreshSet, TpchError> {
        let set = UpdateSet::new(sf, n)?;
        Ok(RefreshSet {
            n,
            orders: set.orders_rows(0, set.orders, RowEnd::Newline)?.into(),
            lineitems: set.lineitem_rows(0, set.orders, RowEnd::Newline)?.into(),
            delete_keys: set.delete_keys(),
        })
    }

    /// RF1: inserts the new orders and lineitems in one transaction.
    pub async fn rf1(&self, s: &mut AnySession, family: Family) -> Result<(), TpchError> {
        s.query("BEGIN").await.map_err(doing("RF1: BEGIN"))?;
        for (t, rows) in [(Table::Orders, &self.orders), (Table::LineItem, &self.lineitems)] {
            let data = futures_util::stream::iter([Ok(rows.clone())]);
            let r = s
                .stream_in(&family.load_statement(t), Box::pin(data))
                .await
                .map_err(doing(format!("RF1: inserting into {}", t.name())));
            if let Err(e) = r {
                let _ = s.query("ROLLBACK").await;
                return Err(e.into());
            }
        }
        s.query("COMMIT").await.map_err(doing("RF1: COMMIT"))?;
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
        s.query("BEGIN").await.map_err(doing("RF2: BEGIN"))?;
        for sql in [
            format!("DELETE FROM lineitem WHERE l_orderkey IN ({list})"),
            format!("DELETE FROM orders WHERE o_orderkey IN ({list})"),
        ] {
            if let Err(e) = s.query(&sql).await {
                let _ = s.query("ROLLBACK").await;
                return Err(doing("RF2: deleting old sales")(e).into());
            }
        }
        s.query("COMMIT").await.map_err(doing("RF2: COMMIT"))?;
        Ok(())
    }
}

/// The next unused refresh set: RF1 orders present / orders per set + 1.
pub async fn next_set(s: &mut AnySession, sf: f64) -> Result<u64, TpchError> {
    let rows = s
        .query_rows(&format!(
            "SELECT COUNT(*) FROM orders WHERE (o_orderkey & {RF_KEY_BIT}) <> 0"
        ))
        .await
        .map_err(doing("counting refreshed orders"))?;
    let present: u64 = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Ok(present / orders_per_set(sf).max(1) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpch::updates::sparse_key;

    #[test]
    fn refresh_set_holds_dbgens_update_rows_ready_for_loading() {
        let set = RefreshSet::generate(0.01, 2).unwrap();
        assert_eq!(set.delete_keys, (11..=20).map(|i| sparse_key(i, 0)).collect::<Vec<_>>());
        assert!(set.delete_keys.iter().all(|k| k & RF_KEY_BIT == 0));
        let text = std::str::from_utf8(&set.orders).unwrap();
        let keys: Vec<i64> = text
            .lines()
            .map(|l| l.split('|').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(keys, set.delete_keys.iter().map(|k| k | RF_KEY_BIT).collect::<Vec<_>>());
        let items = std::str::from_utf8(&set.lineitems).unwrap();
        assert!(items.lines().count() >= 10);
        assert!(items
            .lines()
            .all(|l| keys.contains(&l.split('|').next().unwrap().parse().unwrap())));
        assert!(!items.contains("|\n"));
        assert!(RefreshSet::generate(0.01, 1000).is_err());
    }
}
