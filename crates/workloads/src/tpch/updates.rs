//! dbgen's update sets, generated in memory: update set `n` is what `dbgen -s SF -U n -S n`
//! (2.17.3) writes to `orders.tbl.u<n>`, `lineitem.tbl.u<n>` and `delete.<n>`, byte for
//! byte. RF1 inserts the first two, RF2 deletes the orders whose keys the third lists.
//!
//! How dbgen makes them (driver.c, build.c, print.c, speed_seed.c of 2.17.3):
//!
//! * A set holds `rowcnt` orders: `orders_base / 10000 · scale · 10` in integer arithmetic,
//!   i.e. SF·1500 at integer SF ≥ 1 but 10 at SF 0.01 and none below SF 0.007
//!   ([`orders_per_set`]).
//! * Set `n` covers the order indexes `i = (n-1)·rowcnt + 1 ..= n·rowcnt`. Its new orders
//!   have the sparse key of `i` with update sequence `1 + n/1000` in the two sparse bits
//!   (`mk_sparse`), so they never collide with a base key (sequence 0); its deleted keys
//!   are the sparse keys of the same `i` with sequence `n/1000`, i.e. base orders.
//! * The rows' random streams continue where the base data's orders ended: dbgen seeds
//!   them as if it had generated all base orders, then `(n-1)·rowcnt` more. So row `i` of
//!   the update space is `tpchgen`'s order (and lineitems) at index `base + i`, with only
//!   the key changed. We reach that index with `tpchgen`'s own parts (a part of size `d`
//!   starts `d·(part-1)` rows in, positioned by skipping its streams ahead), so nothing
//!   of dbgen's row generation is written again here.
//!
//! [`write_files`] writes them as files (`dbperf tpch prepare --write-tbl DIR --updates N`).
//! Sets stop at 999 (from set 1000 on dbgen's delete keys are no longer base orders) and
//! where the base orders run out (`n·rowcnt` ≤ base orders).
//! `tests/tpch_updates.rs` checks the rows against the TPC's reference update files.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use tpchgen::generators::{LineItemGenerator, OrderGenerator};

use super::table::{RowEnd, Table};
use super::TpchError;

/// The last update set whose delete keys are base orders.
pub const MAX_SET: u64 = 999;

/// Orders in one update set at `sf`, computed as dbgen 2.17.3 does: below SF 1 its base
/// row counts are `(int)(1000·SF)·base/1000` and the set is `base/10000·10` in integers
/// (SF 0.01: 10, SF 0.1: 150, below SF 0.007: 0); from SF 1 on it is SF·1500 (dbgen only
/// knows integer scale factors there; a fractional one gives `(int)(SF·1500)` here).
pub fn orders_per_set(sf: f64) -> u64 {
    if sf < 1.0 {
        let int_scale = (1000.0 * sf) as i64;
        let base_orders = int_scale * 1_500_000 / 1000;
        (base_orders / 10_000 * 10) as u64
    } else {
        (sf * 1500.0) as u64
    }
}

/// The sparse order key of order index `index` (from 1) with update sequence `seq`
/// (dbgen's `mk_sparse`): the index's low 3 bits stay, `seq` goes into the next 2.
pub fn sparse_key(index: i64, seq: i64) -> i64 {
    OrderGenerator::make_order_key(index) + (seq << 3)
}

/// Update set `n` at scale factor `sf`: a range of order indexes whose rows and keys are
/// produced on demand.
#[derive(Clone, Copy, Debug)]
pub struct UpdateSet {
    sf: f64,
    /// Set number, from 1.
    pub n: u64,
    /// Orders in the set.
    pub orders: u64,
    /// Base orders at `sf` (where the update rows' random streams continue).
    base: u64,
}

impl UpdateSet {
    /// Set `n` at `sf`, or why it does not exist.
    pub fn new(sf: f64, n: u64) -> Result<UpdateSet, TpchError> {
        let orders = orders_per_set(sf);
        let base = Table::Orders.approx_rows(sf);
        if orders == 0 {
            return Err(TpchError::Invalid(format!(
                "at SF {sf} dbgen's update sets are empty (they hold (int)(1000·SF)·1500/1000/10000·10 orders): use SF 0.007 or more for refreshes, or run with --no-refresh"
            )));
        }
        let last = MAX_SET.min(base / orders);
        if n == 0 || n > last {
            return Err(TpchError::Invalid(format!(
                "refresh set {n} does not exist at SF {sf}: there are {last} sets of {orders} orders; reload the data (`dbperf tpch cleanup` then `prepare`)"
            )));
        }
        Ok(UpdateSet { sf, n, orders, base })
    }

    /// The key sequence of the set's new orders (`1 + n/1000`, dbgen's `mk_order`).
    fn insert_seq(&self) -> i64 {
        1 + (self.n / 1000) as i64
    }

    /// The update-space index (from 1) of the set's order `j` (from 0).
    fn index(&self, j: u64) -> i64 {
        ((self.n - 1) * self.orders + j + 1) as i64
    }

    /// RF2's keys, in dbgen's order (`delete.<n>`): the base orders with the set's indexes.
    pub fn delete_keys(&self) -> Vec<i64> {
        let seq = (self.n / 1000) as i64;
        (0..self.orders).map(|j| sparse_key(self.index(j), seq)).collect()
    }

    /// The set's orders `first .. first + count` (from 0) as `.tbl` rows, as in
    /// `orders.tbl.u<n>`.
    pub fn orders_rows(&self, first: u64, count: u64, end: RowEnd) -> Result<Vec<u8>, TpchError> {
        let mut out = Vec::with_capacity(count as usize * 120);
        for (part, parts) in self.parts(first, count)? {
            for mut o in OrderGenerator::new(self.sf, part, parts).iter() {
                o.o_orderkey = self.rekey(o.o_orderkey);
                push_row(&mut out, &o, end);
            }
        }
        Ok(out)
    }

    /// The lineitems of the set's orders `first .. first + count` as `.tbl` rows, as in
    /// `lineitem.tbl.u<n>`.
    pub fn lineitem_rows(&self, first: u64, count: u64, end: RowEnd) -> Result<Vec<u8>, TpchError> {
        let mut out = Vec::with_capacity(count as usize * 4 * 130);
        for (part, parts) in self.parts(first, count)? {
            for mut l in LineItemGenerator::new(self.sf, part, parts).iter() {
                l.l_orderkey = self.rekey(l.l_orderkey);
                push_row(&mut out, &l, end);
            }
        }
        Ok(out)
    }

    /// The key in the update space of the row `tpchgen` generated with base key `key`.
    fn rekey(&self, key: i64) -> i64 {
        let generated_index = ((key >> 5) << 3) | (key & 7);
        sparse_key(generated_index - self.base as i64, self.insert_seq())
    }

    /// `tpchgen` parts (`(part, parts)`, both from 1) that together generate exactly the
    /// base-space rows of the set's orders `first .. first + count`: equal parts of `d`
    /// rows, `d` dividing the base row count (so part `k` of `base/d` starts at `d·(k-1)`),
    /// the start and the count.
    fn parts(&self, first: u64, count: u64) -> Result<Vec<(i32, i32)>, TpchError> {
        if first + count > self.orders {
            return Err(TpchError::Invalid(format!(
                "update set {}: orders {first}..{} are beyond its {} orders",
                self.n,
                first + count,
                self.orders
            )));
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        let start = self.base + (self.n - 1) * self.orders + first;
        let d = gcd(gcd(self.base, start), count);
        let (parts, first_part) = (self.base / d, start / d + 1);
        let last_part = first_part + count / d - 1;
        if i32::try_from(parts).is_err() || i32::try_from(last_part).is_err() {
            return Err(TpchError::Invalid(format!(
                "update set {} at SF {}: cannot position the generator (part {last_part} of {parts})",
                self.n, self.sf
            )));
        }
        Ok((first_part..=last_part).map(|p| (p as i32, parts as i32)).collect())
    }
}

/// Writes update sets `1..=sets` into `dir` as `dbgen -s SF -U sets` does (without `-i`/`-d`
/// segments): `orders.tbl.u<n>`, `lineitem.tbl.u<n>` and `delete.<n>`. Returns the files.
pub fn write_files(dir: &Path, sf: f64, sets: u64) -> Result<Vec<PathBuf>, TpchError> {
    std::fs::create_dir_all(dir).map_err(|source| TpchError::Io {
        what: "cannot create",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut files = Vec::new();
    for n in 1..=sets {
        let set = UpdateSet::new(sf, n)?;
        let keys: String = set.delete_keys().iter().map(|k| format!("{k}|\n")).collect();
        for (name, bytes) in [
            (
                format!("orders.tbl.u{n}"),
                set.orders_rows(0, set.orders, RowEnd::Official)?,
            ),
            (
                format!("lineitem.tbl.u{n}"),
                set.lineitem_rows(0, set.orders, RowEnd::Official)?,
            ),
            (format!("delete.{n}"), keys.into_bytes()),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, bytes).map_err(|source| TpchError::Io {
                what: "cannot write",
                path: path.clone(),
                source,
            })?;
            files.push(path);
        }
    }
    Ok(files)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Appends `row` (whose text ends in `|`) with the row end.
fn push_row(out: &mut Vec<u8>, row: &impl std::fmt::Display, end: RowEnd) {
    let _ = write!(out, "{row}");
    if end == RowEnd::Newline {
        out.pop();
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_sizes_follow_dbgens_integer_arithmetic() {
        assert_eq!(orders_per_set(1.0), 1500);
        assert_eq!(orders_per_set(100.0), 150_000);
        assert_eq!(orders_per_set(0.1), 150);
        assert_eq!(orders_per_set(0.01), 10);
        assert_eq!(orders_per_set(0.05), 70);
        assert_eq!(orders_per_set(0.006), 0);
        assert!(UpdateSet::new(0.001, 1).is_err());
        assert!(UpdateSet::new(0.01, 0).is_err());
        assert!(UpdateSet::new(0.01, 999).is_ok());
        assert!(UpdateSet::new(0.01, 1000).is_err());
        assert!(UpdateSet::new(1.0, 1000).is_err());
    }

    #[test]
    fn keys_use_the_sparse_bits() {
        assert_eq!(sparse_key(1, 1), 9);
        assert_eq!(sparse_key(8, 1), 40);
        assert_eq!(sparse_key(9, 0), 33);
        let set = UpdateSet::new(0.01, 2).unwrap();
        assert_eq!(
            set.delete_keys(),
            [11, 12, 13, 14, 15, 16, 17, 18, 19, 20].map(|i| sparse_key(i, 0))
        );
    }

    #[test]
    fn pieces_concatenate_to_the_whole_set() {
        // SF 0.05: 70 orders a set, 75,000 base orders, so parts of 10.
        let set = UpdateSet::new(0.05, 3).unwrap();
        let whole = set.orders_rows(0, 70, RowEnd::Official).unwrap();
        let mut pieces = set.orders_rows(0, 7, RowEnd::Official).unwrap();
        pieces.extend(set.orders_rows(7, 63, RowEnd::Official).unwrap());
        assert_eq!(whole, pieces);
        let text = String::from_utf8(whole).unwrap();
        let keys: Vec<i64> = text
            .lines()
            .map(|l| l.split('|').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(keys, (141..=210).map(|i| sparse_key(i, 1)).collect::<Vec<_>>());
        let items = set.lineitem_rows(0, 70, RowEnd::Newline).unwrap();
        let items = String::from_utf8(items).unwrap();
        assert!(items.lines().all(|l| !l.ends_with('|')));
        assert!(items.lines().count() >= 70);
    }

    #[test]
    fn files_are_named_as_dbgen_names_them() {
        let dir = tempfile::tempdir().unwrap();
        let files = write_files(dir.path(), 0.01, 2).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "orders.tbl.u1",
                "lineitem.tbl.u1",
                "delete.1",
                "orders.tbl.u2",
                "lineitem.tbl.u2",
                "delete.2"
            ]
        );
        let deletes = std::fs::read_to_string(&files[2]).unwrap();
        assert!(deletes.starts_with("1|\n2|\n") && deletes.lines().count() == 10);
        let orders = std::fs::read_to_string(&files[0]).unwrap();
        assert!(orders.starts_with("9|") && orders.lines().all(|l| l.ends_with('|')));
    }
}
