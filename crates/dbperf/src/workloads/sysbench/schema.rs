//! The sysbench table `sbtestN` in the MySQL dialect, its secondary index and cleanup.

use super::options::OltpOptions;

/// `CREATE TABLE sbtestN(...)` exactly as `oltp_common.lua` writes it for MySQL, so
/// `SHOW CREATE TABLE` is the same whichever tool prepared the table.
pub fn create_table(n: u32, o: &OltpOptions) -> String {
    let id_def = if o.auto_inc {
        "INTEGER NOT NULL AUTO_INCREMENT"
    } else {
        "INTEGER NOT NULL"
    };
    let id_index = if o.secondary { "KEY xid" } else { "PRIMARY KEY" };
    format!(
        "CREATE TABLE sbtest{n}(\n  id {id_def},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {id_index} (id)\n) /*! ENGINE = {} */ {}",
        o.mysql_storage_engine, o.create_table_options
    )
}

/// The secondary index on `k`, built after the load like sysbench does.
pub fn create_secondary_index(n: u32) -> String {
    format!("CREATE INDEX k_{n} ON sbtest{n}(k)")
}

/// Drops one table.
pub fn drop_table(n: u32) -> String {
    format!("DROP TABLE IF EXISTS sbtest{n}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_matches_oltp_common() {
        let ddl = create_table(3, &OltpOptions::default());
        assert_eq!(
            ddl,
            "CREATE TABLE sbtest3(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) /*! ENGINE = innodb */ "
        );
        let o = OltpOptions {
            auto_inc: false,
            secondary: true,
            ..OltpOptions::default()
        };
        let ddl = create_table(1, &o);
        assert!(
            ddl.contains("id INTEGER NOT NULL,") && ddl.contains("KEY xid (id)"),
            "{ddl}"
        );
        assert_eq!(create_secondary_index(2), "CREATE INDEX k_2 ON sbtest2(k)");
    }
}
