//! The refresh functions' rows are dbgen 2.17.3's update sets byte for byte: checked against
//! the TPC's reference update files (gregrahn/tpch-kit `ref_data/<SF>/`, made by
//! `dbgen/reference/cmd_update_sf<SF>`: `dbgen -s SF -U n -S n -i 100 -d 100` for n = 1, 75,
//! 150, each file then cut to its first 100 lines). A few of those files are copied into
//! `tests/data/tpch/updates/sf<SF>/`.
//!
//! With `-i 100` dbgen splits set n's orders into 100 files `orders.tbl.u<n>.<k>` of
//! `rowcnt/100` orders each (lineitems alike, by order); with `-d 100` its delete keys go
//! into files `delete.u<n>.<k>` of `rowcnt/100 + 1` keys each.

use std::path::PathBuf;

use dbperf::workloads::tpch::table::RowEnd;
use dbperf::workloads::tpch::updates::UpdateSet;

fn reference(sf: u32, name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/tpch/updates/sf{sf}/{name}"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn first_lines(text: &[u8], n: usize) -> String {
    let text = std::str::from_utf8(text).unwrap();
    text.split_inclusive('\n').take(n).collect()
}

/// Checks insert segment `k` (from 1) of set `n` at `sf` against
/// `orders.tbl.u<n>.<k>` and `lineitem.tbl.u<n>.<k>`.
fn check_insert_segment(sf: u32, n: u64, k: u64) {
    let set = UpdateSet::new(sf as f64, n).unwrap();
    let per_segment = set.orders / 100;
    let first = (k - 1) * per_segment;
    // 100 reference lines need at most 100 orders.
    let orders = set.orders_rows(first, per_segment.min(100), RowEnd::Official).unwrap();
    assert_eq!(
        first_lines(&orders, 100),
        reference(sf, &format!("orders.tbl.u{n}.{k}")),
        "orders.tbl.u{n}.{k} at SF {sf}"
    );
    let items = set
        .lineitem_rows(first, per_segment.min(100), RowEnd::Official)
        .unwrap();
    assert_eq!(
        first_lines(&items, 100),
        reference(sf, &format!("lineitem.tbl.u{n}.{k}")),
        "lineitem.tbl.u{n}.{k} at SF {sf}"
    );
}

/// Checks delete segment `k` (from 1) of set `n` at `sf` against `delete.u<n>.<k>`.
fn check_delete_segment(sf: u32, n: u64, k: u64) {
    let set = UpdateSet::new(sf as f64, n).unwrap();
    let per_segment = (set.orders / 100 + 1) as usize;
    let keys: String = set
        .delete_keys()
        .iter()
        .skip((k as usize - 1) * per_segment)
        .take(per_segment.min(100))
        .map(|key| format!("{key}|\n"))
        .collect();
    assert_eq!(
        keys,
        reference(sf, &format!("delete.u{n}.{k}")),
        "delete.u{n}.{k} at SF {sf}"
    );
}

#[test]
fn sf1_update_sets_1_75_150_match_dbgen() {
    for n in [1, 75, 150] {
        for k in [1, 2, 100] {
            check_insert_segment(1, n, k);
        }
        for k in [1, 2, 94] {
            check_delete_segment(1, n, k);
        }
    }
}

#[test]
fn sf1_whole_set_is_its_segments_in_order() {
    let set = UpdateSet::new(1.0, 75).unwrap();
    let whole = set.orders_rows(0, 1500, RowEnd::Official).unwrap();
    let mut joined = Vec::new();
    for k in 0..100 {
        joined.extend(set.orders_rows(k * 15, 15, RowEnd::Official).unwrap());
    }
    assert_eq!(whole, joined);
    assert_eq!(set.delete_keys().len(), 1500);
}

#[test]
fn sf100_update_sets_1_75_150_match_dbgen() {
    for n in [1, 75, 150] {
        check_insert_segment(100, n, 1);
        check_delete_segment(100, n, 1);
    }
    check_insert_segment(100, 150, 100);
    check_delete_segment(100, 150, 100);
}
