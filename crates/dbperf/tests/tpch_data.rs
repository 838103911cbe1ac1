//! TPC-H data is byte-identical to the reference dbgen 2.17.3 (md5 of each official `.tbl`
//! file, rows ending in `|`, from `linkbench_tpch.md` B1), whole and split into parts.

use dbperf::workloads::tpch::table::RowEnd;
use dbperf::workloads::tpch::Table;
use md5::{Digest, Md5};

const NATION: &str = "2f588e0b7fa72939b498c2abecd9fbbe";
const REGION: &str = "c235841b00d29ad4f817771fcc851207";

fn md5_of(t: Table, sf: f64, parts: u32) -> String {
    let mut h = Md5::new();
    for p in 1..=parts {
        t.generate(sf, p, parts, RowEnd::Official, |b| {
            h.update(b);
            Ok::<(), ()>(())
        })
        .unwrap();
    }
    format!("{:x}", h.finalize())
}

fn check(sf: f64, expected: &[(Table, &str)], parts: u32) {
    for &(t, md5) in expected {
        assert_eq!(md5_of(t, sf, parts), md5, "{} at SF {sf} in {parts} part(s)", t.name());
    }
}

#[test]
fn sf_0_01_matches_dbgen_byte_for_byte() {
    let expected = [
        (Table::Region, REGION),
        (Table::Nation, NATION),
        (Table::Customer, "a8aa97edad6d47b183a569759fbd3eec"),
        (Table::LineItem, "4c6d44350a1f7974f56f5d3d7091c2be"),
        (Table::Orders, "c8d2008fb47f47f9e56543d4cb0f4e6a"),
        (Table::Part, "9cce16188c241c25617ca5ed6191e37e"),
        (Table::PartSupp, "c6889c3ed0939ca02475f7fb410cbb50"),
        (Table::Supplier, "56e0621c472064c2a998757c70b44043"),
    ];
    check(0.01, &expected, 1);
    // The loader's parallel parts concatenate to the same bytes.
    check(0.01, &expected[2..], 7);
}

#[test]
fn sf_0_1_matches_dbgen_byte_for_byte() {
    check(
        0.1,
        &[
            (Table::Region, REGION),
            (Table::Nation, NATION),
            (Table::Customer, "8f279b30fee7203e32886be01efd823b"),
            (Table::LineItem, "dec17abbc566d431f5808c5c9f81b8a5"),
            (Table::Orders, "2520d48234df183e47c57027a52007ee"),
            (Table::Part, "3f5dc86fbedff28bf1a88bea8341aa6f"),
            (Table::PartSupp, "e3bd40ee500c9cc88fd14a4dc904c09e"),
            (Table::Supplier, "85f567a75bd806f3ccff89341866ab1c"),
        ],
        1,
    );
}

#[test]
fn write_tbl_writes_the_official_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = dbperf::workloads::tpch::load::write_tbl(dir.path(), 0.01, 2).unwrap();
    assert_eq!(files.len(), 8);
    let orders = std::fs::read(dir.path().join("orders.tbl")).unwrap();
    assert_eq!(
        format!("{:x}", Md5::digest(&orders)),
        "c8d2008fb47f47f9e56543d4cb0f4e6a"
    );
    let region = std::fs::read(dir.path().join("region.tbl")).unwrap();
    assert_eq!(format!("{:x}", Md5::digest(&region)), REGION);
}
