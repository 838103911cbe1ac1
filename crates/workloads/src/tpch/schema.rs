//! The TPC-H schema per server [`Family`] ([`TpchSql`]): tables with their primary keys, the
//! secondary indexes built after loading, and the statements that load, analyze and drop them.
//!
//! On MySQL primary keys are part of `CREATE TABLE`: InnoDB clusters rows by the primary
//! key, so adding it after the load would rebuild every table; the parts are loaded in key
//! order, so the clustered index only ever grows at its end. On PostgreSQL, whose tables
//! are heaps, the primary key is built after `COPY` with the secondary indexes (DBT-3's
//! set on the join and date columns), as DBT-3's PostgreSQL scripts do. Column types are
//! the same in both families.

use super::table::Table;
use dbperf_driver::target::Family;

/// Columns of each table, as `name type`.
fn columns(t: Table) -> &'static [&'static str] {
    match t {
        Table::Region => &[
            "r_regionkey INTEGER NOT NULL",
            "r_name CHAR(25) NOT NULL",
            "r_comment VARCHAR(152)",
        ],
        Table::Nation => &[
            "n_nationkey INTEGER NOT NULL",
            "n_name CHAR(25) NOT NULL",
            "n_regionkey INTEGER NOT NULL",
            "n_comment VARCHAR(152)",
        ],
        Table::Supplier => &[
            "s_suppkey INTEGER NOT NULL",
            "s_name CHAR(25) NOT NULL",
            "s_address VARCHAR(40) NOT NULL",
            "s_nationkey INTEGER NOT NULL",
            "s_phone CHAR(15) NOT NULL",
            "s_acctbal DECIMAL(15,2) NOT NULL",
            "s_comment VARCHAR(101) NOT NULL",
        ],
        Table::Customer => &[
            "c_custkey INTEGER NOT NULL",
            "c_name VARCHAR(25) NOT NULL",
            "c_address VARCHAR(40) NOT NULL",
            "c_nationkey INTEGER NOT NULL",
            "c_phone CHAR(15) NOT NULL",
            "c_acctbal DECIMAL(15,2) NOT NULL",
            "c_mktsegment CHAR(10) NOT NULL",
            "c_comment VARCHAR(117) NOT NULL",
        ],
        Table::Part => &[
            "p_partkey INTEGER NOT NULL",
            "p_name VARCHAR(55) NOT NULL",
            "p_mfgr CHAR(25) NOT NULL",
            "p_brand CHAR(10) NOT NULL",
            "p_type VARCHAR(25) NOT NULL",
            "p_size INTEGER NOT NULL",
            "p_container CHAR(10) NOT NULL",
            "p_retailprice DECIMAL(15,2) NOT NULL",
            "p_comment VARCHAR(23) NOT NULL",
        ],
        Table::PartSupp => &[
            "ps_partkey INTEGER NOT NULL",
            "ps_suppkey INTEGER NOT NULL",
            "ps_availqty INTEGER NOT NULL",
            "ps_supplycost DECIMAL(15,2) NOT NULL",
            "ps_comment VARCHAR(199) NOT NULL",
        ],
        Table::Orders => &[
            "o_orderkey BIGINT NOT NULL",
            "o_custkey INTEGER NOT NULL",
            "o_orderstatus CHAR(1) NOT NULL",
            "o_totalprice DECIMAL(15,2) NOT NULL",
            "o_orderdate DATE NOT NULL",
            "o_orderpriority CHAR(15) NOT NULL",
            "o_clerk CHAR(15) NOT NULL",
            "o_shippriority INTEGER NOT NULL",
            "o_comment VARCHAR(79) NOT NULL",
        ],
        Table::LineItem => &[
            "l_orderkey BIGINT NOT NULL",
            "l_partkey INTEGER NOT NULL",
            "l_suppkey INTEGER NOT NULL",
            "l_linenumber INTEGER NOT NULL",
            "l_quantity DECIMAL(15,2) NOT NULL",
            "l_extendedprice DECIMAL(15,2) NOT NULL",
            "l_discount DECIMAL(15,2) NOT NULL",
            "l_tax DECIMAL(15,2) NOT NULL",
            "l_returnflag CHAR(1) NOT NULL",
            "l_linestatus CHAR(1) NOT NULL",
            "l_shipdate DATE NOT NULL",
            "l_commitdate DATE NOT NULL",
            "l_receiptdate DATE NOT NULL",
            "l_shipinstruct CHAR(25) NOT NULL",
            "l_shipmode CHAR(10) NOT NULL",
            "l_comment VARCHAR(44) NOT NULL",
        ],
    }
}

/// Number of columns of `t`.
pub fn column_count(t: Table) -> usize {
    columns(t).len()
}

/// The primary key columns.
fn primary_key(t: Table) -> &'static str {
    match t {
        Table::Region => "r_regionkey",
        Table::Nation => "n_nationkey",
        Table::Supplier => "s_suppkey",
        Table::Customer => "c_custkey",
        Table::Part => "p_partkey",
        Table::PartSupp => "ps_partkey, ps_suppkey",
        Table::Orders => "o_orderkey",
        Table::LineItem => "l_orderkey, l_linenumber",
    }
}

/// Secondary indexes as (name, columns): DBT-3's foreign-key and date indexes.
pub fn secondary_indexes(t: Table) -> &'static [(&'static str, &'static str)] {
    match t {
        Table::Region => &[],
        Table::Nation => &[("i_n_regionkey", "n_regionkey")],
        Table::Supplier => &[("i_s_nationkey", "s_nationkey")],
        Table::Customer => &[("i_c_nationkey", "c_nationkey")],
        Table::Part => &[],
        Table::PartSupp => &[("i_ps_suppkey", "ps_suppkey")],
        Table::Orders => &[("i_o_orderdate", "o_orderdate"), ("i_o_custkey", "o_custkey")],
        Table::LineItem => &[
            ("i_l_shipdate", "l_shipdate"),
            ("i_l_partkey_suppkey", "l_partkey, l_suppkey"),
            ("i_l_suppkey", "l_suppkey"),
            ("i_l_receiptdate", "l_receiptdate"),
        ],
    }
}

/// TPC-H's statements as a server family spells them.
pub trait TpchSql {
    /// `CREATE TABLE` with the primary key.
    fn create_table(self, t: Table) -> String;
    /// One statement building the indexes of `t` not built with the table: the secondary
    /// ones named in `only`, and on PostgreSQL with `pk` the primary key (`None` when that
    /// leaves nothing to build).
    fn create_indexes(self, t: Table, pk: bool, only: &[&str]) -> Option<String>;
    /// The statement that streams a table's rows (`\n`-terminated, `|`-separated) in.
    fn load_statement(self, t: Table) -> String;
    /// Refreshes optimizer statistics of `t`.
    fn analyze(self, t: Table) -> String;
    /// Server variables as (name, value) rows.
    fn show_variables(self) -> &'static str;
}

impl TpchSql for Family {
    fn create_table(self, t: Table) -> String {
        match self {
            Family::Mysql => format!(
                "CREATE TABLE {} (\n  {},\n  PRIMARY KEY ({})\n) ENGINE=InnoDB DEFAULT CHARSET=latin1",
                t.name(),
                columns(t).join(",\n  "),
                primary_key(t)
            ),
            Family::Postgres => format!("CREATE TABLE {} (\n  {}\n)", t.name(), columns(t).join(",\n  ")),
        }
    }

    fn create_indexes(self, t: Table, pk: bool, only: &[&str]) -> Option<String> {
        let idx: Vec<_> = secondary_indexes(t).iter().filter(|(n, _)| only.contains(n)).collect();
        if self == Family::Postgres {
            let mut sql: Vec<String> = Vec::new();
            if pk {
                sql.push(format!("ALTER TABLE {} ADD PRIMARY KEY ({})", t.name(), primary_key(t)));
            }
            for (n, c) in idx {
                sql.push(format!("CREATE INDEX {n} ON {} ({c})", t.name()));
            }
            return (!sql.is_empty()).then(|| sql.join(";\n"));
        }
        if idx.is_empty() {
            return None;
        }
        match self {
            Family::Postgres => unreachable!("handled above"),
            Family::Mysql => Some(format!(
                "ALTER TABLE {} {}",
                t.name(),
                idx.iter()
                    .map(|(n, c)| format!("ADD INDEX {n} ({c})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn load_statement(self, t: Table) -> String {
        match self {
            Family::Mysql => format!(
                "LOAD DATA LOCAL INFILE '{}.tbl' INTO TABLE {} CHARACTER SET latin1 FIELDS TERMINATED BY '|' LINES TERMINATED BY '\\n'",
                t.name(),
                t.name()
            ),
            Family::Postgres => format!("COPY {} FROM STDIN WITH (FORMAT text, DELIMITER '|')", t.name()),
        }
    }

    fn analyze(self, t: Table) -> String {
        match self {
            Family::Mysql => format!("ANALYZE TABLE {}", t.name()),
            Family::Postgres => format!("ANALYZE {}", t.name()),
        }
    }

    fn show_variables(self) -> &'static str {
        match self {
            Family::Mysql => "SHOW GLOBAL VARIABLES",
            Family::Postgres => "SHOW ALL",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_names_every_column_and_key() {
        let sql = Family::Mysql.create_table(Table::LineItem);
        assert!(sql.contains("l_comment VARCHAR(44) NOT NULL"));
        assert!(sql.contains("PRIMARY KEY (l_orderkey, l_linenumber)"));
        let all = |t: Table| secondary_indexes(t).iter().map(|(n, _)| *n).collect::<Vec<_>>();
        assert_eq!(Family::Mysql.create_indexes(Table::Region, false, &[]), None);
        assert_eq!(
            Family::Mysql
                .create_indexes(Table::Orders, false, &all(Table::Orders))
                .unwrap(),
            "ALTER TABLE orders ADD INDEX i_o_orderdate (o_orderdate), ADD INDEX i_o_custkey (o_custkey)"
        );
        // A resumed prepare builds only what is missing.
        assert_eq!(
            Family::Mysql
                .create_indexes(Table::Orders, false, &["i_o_custkey"])
                .unwrap(),
            "ALTER TABLE orders ADD INDEX i_o_custkey (o_custkey)"
        );
        assert_eq!(Family::Postgres.create_indexes(Table::PartSupp, false, &[]), None);
        let pg = Family::Postgres.create_table(Table::Orders);
        assert!(
            pg.contains("o_totalprice DECIMAL(15,2) NOT NULL") && !pg.contains("PRIMARY KEY"),
            "{pg}"
        );
        assert_eq!(
            Family::Postgres.create_indexes(Table::Region, true, &[]).unwrap(),
            "ALTER TABLE region ADD PRIMARY KEY (r_regionkey)"
        );
        assert_eq!(
            Family::Postgres.create_indexes(Table::PartSupp, true, &all(Table::PartSupp)).unwrap(),
            "ALTER TABLE partsupp ADD PRIMARY KEY (ps_partkey, ps_suppkey);\nCREATE INDEX i_ps_suppkey ON partsupp (ps_suppkey)"
        );
    }
}
