//! The sysbench table `sbtestN` as sysbench's MySQL and PostgreSQL (`pgsql` driver) write
//! it for a server [`Family`], its secondary index, listing and cleanup.

use super::options::OltpOptions;
use dbperf_driver::target::Family;

/// A query whose first column lists the `sbtest%` tables of the current database.
pub fn list_tables(family: Family) -> &'static str {
    match family {
        Family::Mysql => "SHOW TABLES LIKE 'sbtest%'",
        Family::Postgres => {
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'sbtest%'"
        }
    }
}

/// `CREATE TABLE sbtestN(...)` exactly as `oltp_common.lua` writes it for the family (its
/// `mysql` or its `pgsql` driver), so `SHOW CREATE TABLE` (or `\d sbtestN`) is the same
/// whichever tool prepared the table.
/// On PostgreSQL sysbench has no engine clause and no table options; `--secondary` is
/// refused by [`super::options::OltpRules::validate_for`].
pub fn create_table(n: u32, o: &OltpOptions, family: Family) -> String {
    let id_index = if o.secondary { "KEY xid" } else { "PRIMARY KEY" };
    let (id_def, tail) = match family {
        Family::Mysql => (
            if o.auto_inc {
                "INTEGER NOT NULL AUTO_INCREMENT"
            } else {
                "INTEGER NOT NULL"
            },
            format!("/*! ENGINE = {} */ {}", o.mysql_storage_engine, o.create_table_options),
        ),
        Family::Postgres => (if o.auto_inc { "SERIAL" } else { "INTEGER NOT NULL" }, " ".to_string()),
    };
    format!(
        "CREATE TABLE sbtest{n}(\n  id {id_def},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {id_index} (id)\n) {tail}"
    )
}

/// After a PostgreSQL load with explicit ids, moves the `SERIAL` sequence past them, where
/// sysbench's id-less INSERTs would have left it.
pub fn sync_sequence(n: u32) -> String {
    format!("SELECT setval(pg_get_serial_sequence('sbtest{n}', 'id'), (SELECT max(id) FROM sbtest{n}))")
}

/// The secondary index on `k`, built after the load like sysbench does.
pub fn create_secondary_index(n: u32) -> String {
    format!("CREATE INDEX k_{n} ON sbtest{n}(k)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_matches_oltp_common() {
        let ddl = create_table(3, &OltpOptions::default(), Family::Mysql);
        assert_eq!(
            ddl,
            "CREATE TABLE sbtest3(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) /*! ENGINE = innodb */ "
        );
        let o = OltpOptions {
            auto_inc: false,
            secondary: true,
            ..OltpOptions::default()
        };
        let ddl = create_table(1, &o, Family::Mysql);
        assert!(
            ddl.contains("id INTEGER NOT NULL,") && ddl.contains("KEY xid (id)"),
            "{ddl}"
        );
        assert_eq!(create_secondary_index(2), "CREATE INDEX k_2 ON sbtest2(k)");
    }

    #[test]
    fn ddl_matches_oltp_common_pgsql() {
        assert_eq!(
            create_table(2, &OltpOptions::default(), Family::Postgres),
            "CREATE TABLE sbtest2(\n  id SERIAL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n)  "
        );
        let o = OltpOptions {
            auto_inc: false,
            ..OltpOptions::default()
        };
        assert!(create_table(1, &o, Family::Postgres).contains("id INTEGER NOT NULL,"));
    }
}
