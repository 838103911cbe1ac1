//! The sysbench OLTP tests and their options (`oltp_common.lua`, sysbench 1.0.20, plus
//! master's `reconnect` and `create_table_options`), with sysbench's defaults.

use std::fmt;
use std::str::FromStr;

use dbperf_driver::target::Family;

/// One of sysbench's bundled OLTP tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// BEGIN, 10 point selects, 4 range selects, COMMIT.
    ReadOnly,
    /// read_only plus an index update, a non-index update and a delete/insert pair.
    ReadWrite,
    /// BEGIN, the four writes, COMMIT.
    WriteOnly,
    /// One point select, no transaction.
    PointSelect,
    /// One `UPDATE ... SET k=k+1`, autocommit.
    UpdateIndex,
    /// One `UPDATE ... SET c=?`, autocommit.
    UpdateNonIndex,
    /// One text-protocol INSERT.
    Insert,
    /// One DELETE of a random id (the table drains over the run).
    Delete,
    /// `SELECT ... WHERE k IN (10 values)` on sbtest1.
    SelectRandomPoints,
    /// `SELECT count(k) ... WHERE k BETWEEN ... OR ...` (10 ranges) on sbtest1.
    SelectRandomRanges,
}

impl Test {
    /// Every test, in sysbench's documentation order.
    pub const ALL: [Test; 10] = [
        Test::ReadOnly,
        Test::ReadWrite,
        Test::WriteOnly,
        Test::PointSelect,
        Test::UpdateIndex,
        Test::UpdateNonIndex,
        Test::Insert,
        Test::Delete,
        Test::SelectRandomPoints,
        Test::SelectRandomRanges,
    ];

    /// sysbench's name for the test.
    pub fn name(self) -> &'static str {
        match self {
            Test::ReadOnly => "oltp_read_only",
            Test::ReadWrite => "oltp_read_write",
            Test::WriteOnly => "oltp_write_only",
            Test::PointSelect => "oltp_point_select",
            Test::UpdateIndex => "oltp_update_index",
            Test::UpdateNonIndex => "oltp_update_non_index",
            Test::Insert => "oltp_insert",
            Test::Delete => "oltp_delete",
            Test::SelectRandomPoints => "select_random_points",
            Test::SelectRandomRanges => "select_random_ranges",
        }
    }

    /// Tests that only ever touch `sbtest1` and require `--tables=1`.
    pub fn single_table(self) -> bool {
        matches!(self, Test::SelectRandomPoints | Test::SelectRandomRanges)
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Test {
    type Err = String;
    fn from_str(s: &str) -> Result<Test, String> {
        let s = s.trim_end_matches(".lua");
        Test::ALL.into_iter().find(|t| t.name() == s).ok_or_else(|| {
            let names: Vec<_> = Test::ALL.iter().map(|t| t.name()).collect();
            format!("unknown sysbench test {s:?}; the OLTP tests are: {}", names.join(", "))
        })
    }
}

/// Every option of `oltp_common.lua` (and the two single-table tests): the manifest's record of
/// them is their type (`dbperf_results::options`); the rules are here.
pub use dbperf_results::options::OltpOptions;

/// What sysbench's tests require of their options.
pub trait OltpRules {
    /// Checks the options against the test; errors name the option and the fix.
    fn validate(&self, test: Test) -> Result<(), String>;
    /// What `validate` checks, plus what the server family cannot do: sysbench's
    /// `--secondary` writes MySQL's `KEY xid (id)`, which PostgreSQL rejects.
    fn validate_for(&self, test: Test, family: Family) -> Result<(), String>;
    /// The events of `test` with these options: statements per kind, for the docs and
    /// the general-log test. Keys are statement kind names.
    fn statements_per_event(&self, test: Test) -> Vec<(&'static str, u32)>;
}

impl OltpRules for OltpOptions {
    fn validate(&self, test: Test) -> Result<(), String> {
        if self.tables == 0 {
            return Err("--tables must be at least 1".into());
        }
        if test.single_table() && self.tables != 1 {
            return Err(format!(
                "{test} works on sbtest1 only: use --tables=1 (sysbench asserts the same)"
            ));
        }
        if self.table_size == 0 && !matches!(test, Test::Insert) {
            return Err(format!("--table-size must be at least 1 for {test}"));
        }
        if self.table_size > i32::MAX as u32 {
            return Err(format!(
                "--table-size {} exceeds the INTEGER id column (max {})",
                self.table_size,
                i32::MAX
            ));
        }
        if self.range_size == 0 {
            return Err("--range-size must be at least 1".into());
        }
        if test.single_table() && (self.random_points == 0 || self.number_of_ranges == 0) {
            return Err("--random-points and --number-of-ranges must be at least 1".into());
        }
        let engine = &self.mysql_storage_engine;
        if engine.is_empty() || !engine.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("--mysql-storage-engine {engine:?} is not an engine name"));
        }
        Ok(())
    }

    fn validate_for(&self, test: Test, family: Family) -> Result<(), String> {
        self.validate(test)?;
        if family == Family::Postgres && self.secondary {
            return Err(
                "--secondary=on declares MySQL's `KEY xid (id)`, which PostgreSQL does not accept; drop --secondary for a postgres:// target".into(),
            );
        }
        Ok(())
    }

    fn statements_per_event(&self, test: Test) -> Vec<(&'static str, u32)> {
        let trx = if self.skip_trx { 0 } else { 1 };
        let ranges = if self.range_selects { 1 } else { 0 };
        let reads = |v: &mut Vec<(&'static str, u32)>| {
            v.push(("point_select", self.point_selects));
            v.push(("simple_range", self.simple_ranges * ranges));
            v.push(("sum_range", self.sum_ranges * ranges));
            v.push(("order_range", self.order_ranges * ranges));
            v.push(("distinct_range", self.distinct_ranges * ranges));
        };
        let writes = |v: &mut Vec<(&'static str, u32)>| {
            v.push(("index_update", self.index_updates));
            v.push(("non_index_update", self.non_index_updates));
            v.push(("delete", self.delete_inserts));
            v.push(("insert", self.delete_inserts));
        };
        let mut v = Vec::new();
        match test {
            Test::ReadOnly | Test::ReadWrite | Test::WriteOnly => {
                v.push(("begin", trx));
                if test != Test::WriteOnly {
                    reads(&mut v);
                }
                if test != Test::ReadOnly {
                    writes(&mut v);
                }
                v.push(("commit", trx));
            }
            Test::PointSelect => v.push(("point_select", 1)),
            Test::UpdateIndex => v.push(("index_update", self.index_updates)),
            Test::UpdateNonIndex => v.push(("non_index_update", self.non_index_updates)),
            Test::Insert => v.push(("insert", 1)),
            Test::Delete => v.push(("delete", 1)),
            Test::SelectRandomPoints => v.push(("random_points", 1)),
            Test::SelectRandomRanges => v.push(("random_ranges", 1)),
        }
        v.retain(|(_, n)| *n > 0);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_tests() {
        for t in Test::ALL {
            assert_eq!(t.name().parse::<Test>().unwrap(), t);
        }
        assert_eq!("oltp_read_write.lua".parse::<Test>().unwrap(), Test::ReadWrite);
        let e = "oltp_rw".parse::<Test>().unwrap_err();
        assert!(
            e.contains("oltp_read_only") && e.contains("select_random_ranges"),
            "{e}"
        );
    }

    #[test]
    fn event_shapes_match_sysbench() {
        let o = OltpOptions::default();
        let count = |t| o.statements_per_event(t).iter().map(|(_, n)| n).sum::<u32>();
        // 14 reads + 2 other = 16; + 4 writes = 20 (sysbench_tpcc.md §1.3).
        assert_eq!(count(Test::ReadOnly), 16);
        assert_eq!(count(Test::ReadWrite), 20);
        assert_eq!(count(Test::WriteOnly), 6);
        assert_eq!(count(Test::PointSelect), 1);
        let skip = OltpOptions {
            skip_trx: true,
            range_selects: false,
            ..OltpOptions::default()
        };
        assert_eq!(skip.statements_per_event(Test::ReadOnly), vec![("point_select", 10)]);
    }

    #[test]
    fn validation_names_the_option() {
        let o = OltpOptions {
            tables: 2,
            ..OltpOptions::default()
        };
        assert!(o.validate(Test::SelectRandomPoints).unwrap_err().contains("--tables=1"));
        assert!(o.validate(Test::ReadWrite).is_ok());
        let bad = OltpOptions {
            mysql_storage_engine: "innodb; drop".into(),
            ..OltpOptions::default()
        };
        assert!(bad
            .validate(Test::ReadWrite)
            .unwrap_err()
            .contains("--mysql-storage-engine"));
    }
}
