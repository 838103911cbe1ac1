//! The eight TPC-H tables and their rows in dbgen's `.tbl` format, from the `tpchgen` crate.
//!
//! `tpchgen` (datafusion-contrib/tpcgen-rs) is a port of dbgen whose output is byte-identical
//! to dbgen 2.17.3 at every scale factor its authors checked (SF 1..1000 SHA1s in their
//! TESTING.md); it is maintained, has no dependencies, and can generate any `part` of
//! `parts` of a table independently, which gives parallel generation for free. Our tests
//! check its output against the reference md5s at SF 0.01 (and SF 0.1, `--ignored`).

use std::io::Write as _;

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator, PartSuppGenerator,
    RegionGenerator, SupplierGenerator,
};

/// A TPC-H table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    Region,
    Nation,
    Supplier,
    Customer,
    Part,
    PartSupp,
    Orders,
    LineItem,
}

/// How each row ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowEnd {
    /// dbgen's official `|\n` (the reference md5s are of this form).
    Official,
    /// Just `\n` (dbgen built with `EOL_HANDLING`, DBT-3), for loading.
    Newline,
}

/// Bytes handed over at a time when streaming rows.
pub const BLOCK_BYTES: usize = 1 << 20;

impl Table {
    /// All tables, smallest first.
    pub const ALL: [Table; 8] = [
        Table::Region,
        Table::Nation,
        Table::Supplier,
        Table::Customer,
        Table::Part,
        Table::PartSupp,
        Table::Orders,
        Table::LineItem,
    ];

    /// The SQL (and `.tbl` file) name.
    pub fn name(self) -> &'static str {
        match self {
            Table::Region => "region",
            Table::Nation => "nation",
            Table::Supplier => "supplier",
            Table::Customer => "customer",
            Table::Part => "part",
            Table::PartSupp => "partsupp",
            Table::Orders => "orders",
            Table::LineItem => "lineitem",
        }
    }

    /// Rows at scale factor `sf` (lineitem: an estimate, 4 per order on average).
    pub fn approx_rows(self, sf: f64) -> u64 {
        let n = match self {
            Table::Region => 5,
            Table::Nation => 25,
            Table::Supplier => SupplierGenerator::calculate_row_count(sf, 1, 1),
            Table::Customer => CustomerGenerator::calculate_row_count(sf, 1, 1),
            Table::Part => PartGenerator::calculate_row_count(sf, 1, 1),
            Table::PartSupp => PartSuppGenerator::calculate_row_count(sf, 1, 1),
            Table::Orders => OrderGenerator::calculate_row_count(sf, 1, 1),
            Table::LineItem => OrderGenerator::calculate_row_count(sf, 1, 1) * 4,
        };
        n.max(0) as u64
    }

    /// How many independently generated parts to split the table into for loading:
    /// about 250,000 rows each (nation and region are one part).
    pub fn parts(self, sf: f64) -> u32 {
        match self {
            Table::Region | Table::Nation => 1,
            t => t.approx_rows(sf).div_ceil(250_000).clamp(1, 4096) as u32,
        }
    }

    /// Generates part `part` (from 1) of `parts` of the table at `sf`, calling `sink` with
    /// blocks of about [`BLOCK_BYTES`] of whole rows; returns the number of rows. Parts
    /// concatenated in order give exactly the whole table.
    pub fn generate<E>(
        self,
        sf: f64,
        part: u32,
        parts: u32,
        end: RowEnd,
        mut sink: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<u64, E> {
        let (p, n) = (part as i32, parts as i32);
        let mut buf = Vec::with_capacity(BLOCK_BYTES + 4096);
        let mut rows = 0u64;
        macro_rules! emit {
            ($gen:expr) => {
                for row in $gen.iter() {
                    let _ = write!(buf, "{row}");
                    if end == RowEnd::Newline {
                        buf.pop();
                    }
                    buf.push(b'\n');
                    rows += 1;
                    if buf.len() >= BLOCK_BYTES {
                        sink(&buf)?;
                        buf.clear();
                    }
                }
            };
        }
        match self {
            // dbgen writes nation and region whole whatever the part.
            Table::Region => emit!(RegionGenerator::new(sf, 1, 1)),
            Table::Nation => emit!(NationGenerator::new(sf, 1, 1)),
            Table::Supplier => emit!(SupplierGenerator::new(sf, p, n)),
            Table::Customer => emit!(CustomerGenerator::new(sf, p, n)),
            Table::Part => emit!(PartGenerator::new(sf, p, n)),
            Table::PartSupp => emit!(PartSuppGenerator::new(sf, p, n)),
            Table::Orders => emit!(OrderGenerator::new(sf, p, n)),
            Table::LineItem => emit!(LineItemGenerator::new(sf, p, n)),
        }
        if !buf.is_empty() {
            sink(&buf)?;
        }
        Ok(rows)
    }
}

impl std::str::FromStr for Table {
    type Err = String;

    fn from_str(s: &str) -> Result<Table, String> {
        Table::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown TPC-H table {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_concatenate_to_the_whole_table() {
        let whole = collect(Table::Customer, 0.01, 1, 1, RowEnd::Official);
        let mut joined = Vec::new();
        for p in 1..=3 {
            joined.extend(collect(Table::Customer, 0.01, p, 3, RowEnd::Official));
        }
        assert_eq!(whole, joined);
        assert!(whole.starts_with(b"1|Customer#000000001|IVhzIApeRb ot,c,E|15|25-989-741-2988|711.56|BUILDING|"));
        let loadable = collect(Table::Region, 0.01, 1, 1, RowEnd::Newline);
        assert!(loadable.starts_with(b"0|AFRICA|lar deposits. blithely final packages cajole. regular waters are final requests. regular accounts are according to \n"));
    }

    fn collect(t: Table, sf: f64, part: u32, parts: u32, end: RowEnd) -> Vec<u8> {
        let mut out = Vec::new();
        t.generate(sf, part, parts, end, |b| {
            out.extend_from_slice(b);
            Ok::<(), ()>(())
        })
        .unwrap();
        out
    }
}
