//! The LinkBench tables and every statement, per server [`Family`]. All SQL that differs
//! between servers lives here, in [`LinkbenchSql`]; the loader and the requesters only pick
//! statements by name ([`St`]) and bind parameters.
//!
//! [`Family::Mysql`] is the reference's `LinkStoreMysql`. [`Family::Postgres`] follows the
//! PostgreSQL port of the mdcallag fork: bigint columns, `bytea` payloads, the same primary
//! keys and covering `id1_type` index, no partitioning, `ON CONFLICT` upserts, `OFFSET/LIMIT`
//! and no index hint. Its link INSERT reports with `RETURNING` what MySQL's affected-rows
//! value says (inserted, unchanged, visibility flipped), and its read-write transactions
//! start with an explicit `BEGIN` (PostgreSQL has no autocommit switch).

use dbperf_driver::target::Family;

/// Table of load parameters, so `request` knows the id range the load used, and whether
/// the load finished (`complete`).
pub const META_TABLE: &str = "dbperf_linkbench";

/// Request-phase statements, in [`STATEMENT_NAMES`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum St {
    /// INSERT ... ON DUPLICATE KEY UPDATE visibility (add and update link).
    LinkInsert,
    /// counttable upsert after a link became visible.
    CountIncrement,
    /// The data UPDATE when the link existed.
    LinkUpdateData,
    /// COMMIT on the read-write session.
    Commit,
    /// ROLLBACK after an error.
    Rollback,
    /// delete link: SELECT visibility ... FOR UPDATE.
    LinkLockVisibility,
    /// delete link: UPDATE ... SET visibility = 0.
    LinkHide,
    /// delete link: counttable decrement.
    CountDecrement,
    /// count link.
    CountSelect,
    /// multiget link (the IN list has 1..=128 ids; one prepared statement per length).
    LinkMultiget,
    /// get link list (and its history variant).
    LinkList,
    /// add node.
    NodeInsert,
    /// update node.
    NodeUpdate,
    /// delete node.
    NodeDelete,
    /// get node.
    NodeSelect,
}

/// Names of [`St`], as reported.
pub const STATEMENT_NAMES: [&str; 15] = [
    "link_insert",
    "count_increment",
    "link_update_data",
    "commit",
    "rollback",
    "link_lock_visibility",
    "link_hide",
    "count_decrement",
    "count_select",
    "link_multiget",
    "link_list",
    "node_insert",
    "node_update",
    "node_delete",
    "node_select",
];

/// Columns of a link, in the order of every link INSERT and SELECT.
pub const LINK_COLUMNS: &str = "id1, id2, link_type, visibility, data, time, version";

/// The LinkBench statements as a server family spells them: MySQL and MariaDB as the
/// reference's `LinkStoreMysql`, PostgreSQL as the mdcallag fork's `LinkStorePgsql` schema.
pub trait LinkbenchSql {
    /// CREATE TABLE statements; `partitions` 0 leaves linktable unpartitioned.
    fn create_tables(self, partitions: u32) -> Vec<String>;
    /// Run once after the data load: PostgreSQL's node id sequence moves past the loaded
    /// ids (MySQL's AUTO_INCREMENT does so by itself), and the planner gets statistics.
    fn after_load(self) -> Vec<String>;
    /// Starts a read-write transaction, where the session does not start one itself.
    fn begin(self) -> Option<&'static str>;
    /// [`St::LinkInsert`] returns a row (1 inserted, 2 visibility flipped; none when the
    /// link was there unchanged) instead of reporting that as affected rows.
    fn link_insert_returns_rows(self) -> bool;
    /// Run once on every session: payloads are latin-1 bytes, sent and read unconverted.
    fn session_setup(self) -> &'static [&'static str];
    /// Run once on the read-write session of a requester: it works in transactions ended by
    /// an explicit COMMIT, as the reference's `conn_rw` (autocommit off).
    fn rw_setup(self) -> &'static [&'static str];
    /// The COPY statement that loads `table` with the loader's column order, where the
    /// family loads by COPY rather than multi-row INSERTs (PostgreSQL).
    fn copy_into(self, table: &str) -> Option<String>;
    /// Bulk load of `rows` links (the reference's statement with `rows` value tuples).
    fn bulk_links(self, rows: usize) -> String;
    /// Bulk load of `rows` counts.
    fn bulk_counts(self, rows: usize) -> String;
    /// Bulk load of `rows` nodes (ids given, so loaders can work in parallel).
    fn bulk_nodes(self, rows: usize) -> String;
    /// The multiget statement for `n` id2s.
    fn multiget(self, n: usize) -> String;
    /// A request statement (not [`St::LinkMultiget`], see [`LinkbenchSql::multiget`]).
    fn sql(self, st: St) -> String;
}

impl LinkbenchSql for Family {
    fn create_tables(self, partitions: u32) -> Vec<String> {
        match self {
            Family::Mysql => {
                let part = if partitions > 0 {
                    format!(" PARTITION BY KEY(id1) PARTITIONS {partitions}")
                } else {
                    String::new()
                };
                vec![
                    format!(
                        "CREATE TABLE linktable (\
                         id1 bigint unsigned NOT NULL DEFAULT 0, \
                         id2 bigint unsigned NOT NULL DEFAULT 0, \
                         link_type bigint unsigned NOT NULL DEFAULT 0, \
                         visibility tinyint NOT NULL DEFAULT 0, \
                         data varchar(255) NOT NULL DEFAULT '', \
                         time bigint unsigned NOT NULL DEFAULT 0, \
                         version int unsigned NOT NULL DEFAULT 0, \
                         PRIMARY KEY (link_type, id1, id2), \
                         KEY id1_type (id1, link_type, visibility, time, id2, version, data)\
                         ) ENGINE=InnoDB DEFAULT CHARSET=latin1{part}"
                    ),
                    "CREATE TABLE counttable (\
                     id bigint unsigned NOT NULL DEFAULT 0, \
                     link_type bigint unsigned NOT NULL DEFAULT 0, \
                     count int unsigned NOT NULL DEFAULT 0, \
                     time bigint unsigned NOT NULL DEFAULT 0, \
                     version bigint unsigned NOT NULL DEFAULT 0, \
                     PRIMARY KEY (id, link_type)\
                     ) ENGINE=InnoDB DEFAULT CHARSET=latin1"
                        .into(),
                    "CREATE TABLE nodetable (\
                     id bigint unsigned NOT NULL AUTO_INCREMENT, \
                     type int unsigned NOT NULL, \
                     version bigint unsigned NOT NULL, \
                     time int unsigned NOT NULL, \
                     data mediumtext NOT NULL, \
                     PRIMARY KEY (id)\
                     ) ENGINE=InnoDB DEFAULT CHARSET=latin1"
                        .into(),
                    format!("CREATE TABLE {META_TABLE} (name varchar(64) NOT NULL PRIMARY KEY, value bigint NOT NULL)"),
                ]
            }
            // Partitioning is refused for PostgreSQL before we get here (see the CLI).
            Family::Postgres => vec![
                "CREATE TABLE linktable (\
                 id1 bigint NOT NULL DEFAULT 0, \
                 id2 bigint NOT NULL DEFAULT 0, \
                 link_type bigint NOT NULL DEFAULT 0, \
                 visibility smallint NOT NULL DEFAULT 0, \
                 data bytea NOT NULL, \
                 time bigint NOT NULL DEFAULT 0, \
                 version int NOT NULL DEFAULT 0, \
                 PRIMARY KEY (link_type, id1, id2))"
                    .into(),
                "CREATE INDEX id1_type ON linktable (id1, link_type, visibility, time, id2, version, data)".into(),
                "CREATE TABLE counttable (\
                 id bigint NOT NULL DEFAULT 0, \
                 link_type bigint NOT NULL DEFAULT 0, \
                 count bigint NOT NULL DEFAULT 0, \
                 time bigint NOT NULL DEFAULT 0, \
                 version bigint NOT NULL DEFAULT 0, \
                 PRIMARY KEY (id, link_type))"
                    .into(),
                "CREATE TABLE nodetable (\
                 id bigserial NOT NULL, \
                 type int NOT NULL, \
                 version bigint NOT NULL, \
                 time int NOT NULL, \
                 data bytea NOT NULL, \
                 PRIMARY KEY (id))"
                    .into(),
                format!("CREATE TABLE {META_TABLE} (name varchar(64) NOT NULL PRIMARY KEY, value bigint NOT NULL)"),
            ],
        }
    }

    fn after_load(self) -> Vec<String> {
        match self {
            Family::Mysql => Vec::new(),
            Family::Postgres => vec![
                "SELECT setval(pg_get_serial_sequence('nodetable', 'id'), (SELECT max(id) FROM nodetable))".into(),
                "ANALYZE linktable, counttable, nodetable".into(),
            ],
        }
    }

    fn begin(self) -> Option<&'static str> {
        match self {
            Family::Mysql => None,
            Family::Postgres => Some("BEGIN"),
        }
    }

    fn link_insert_returns_rows(self) -> bool {
        self == Family::Postgres
    }

    fn session_setup(self) -> &'static [&'static str] {
        match self {
            Family::Mysql => &["SET NAMES latin1"],
            Family::Postgres => &[],
        }
    }

    fn rw_setup(self) -> &'static [&'static str] {
        match self {
            Family::Mysql => &["SET autocommit = 0"],
            Family::Postgres => &[],
        }
    }

    fn copy_into(self, table: &str) -> Option<String> {
        let cols = match table {
            "linktable" => LINK_COLUMNS,
            "counttable" => "id, link_type, count, time, version",
            "nodetable" => "id, type, version, time, data",
            _ => return None,
        };
        match self {
            Family::Mysql => None,
            Family::Postgres => Some(format!("COPY {table} ({cols}) FROM STDIN")),
        }
    }

    fn bulk_links(self, rows: usize) -> String {
        let mut s = format!("INSERT INTO linktable ({LINK_COLUMNS}) VALUES ");
        push_tuples(&mut s, rows, "(?, ?, ?, ?, ?, ?, ?)");
        s.push_str(match self {
            Family::Mysql => " ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)",
            Family::Postgres => " ON CONFLICT (link_type, id1, id2) DO UPDATE SET visibility = EXCLUDED.visibility",
        });
        s
    }

    fn bulk_counts(self, rows: usize) -> String {
        let verb = match self {
            Family::Mysql => "REPLACE",
            Family::Postgres => "INSERT",
        };
        let mut s = format!("{verb} INTO counttable (id, link_type, count, time, version) VALUES ");
        push_tuples(&mut s, rows, "(?, ?, ?, ?, ?)");
        if self == Family::Postgres {
            s.push_str(
                " ON CONFLICT (id, link_type) DO UPDATE SET count = EXCLUDED.count, time = EXCLUDED.time, \
                 version = EXCLUDED.version",
            );
        }
        s
    }

    fn bulk_nodes(self, rows: usize) -> String {
        let mut s = "INSERT INTO nodetable (id, type, version, time, data) VALUES ".to_string();
        push_tuples(&mut s, rows, "(?, ?, ?, ?, ?)");
        s
    }

    fn multiget(self, n: usize) -> String {
        let mut s = format!("SELECT {LINK_COLUMNS} FROM linktable WHERE id1 = ? AND link_type = ? AND id2 IN (");
        for i in 0..n {
            s.push_str(if i == 0 { "?" } else { ", ?" });
        }
        s.push(')');
        s
    }

    fn sql(self, st: St) -> String {
        use Family::{Mysql, Postgres};
        match (st, self) {
            (St::LinkInsert, Mysql) => format!(
                "INSERT INTO linktable ({LINK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) \
                 ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)"
            ),
            // A row back when inserted (xmax 0) or when the visibility changed; none when
            // the link was there with the same visibility.
            (St::LinkInsert, Postgres) => format!(
                "INSERT INTO linktable ({LINK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (link_type, id1, id2) DO UPDATE SET visibility = EXCLUDED.visibility \
                 WHERE linktable.visibility <> EXCLUDED.visibility \
                 RETURNING CASE WHEN xmax = 0 THEN 1 ELSE 2 END"
            ),
            (St::CountIncrement, Mysql) => "INSERT INTO counttable (id, link_type, count, time, version) \
                 VALUES (?, ?, ?, ?, 0) ON DUPLICATE KEY UPDATE count = count + ?, version = version + 1, time = ?"
                .into(),
            (St::CountIncrement, Postgres) => "INSERT INTO counttable (id, link_type, count, time, version) \
                 VALUES (?, ?, ?, ?, 0) ON CONFLICT (id, link_type) DO UPDATE \
                 SET count = counttable.count + ?, version = counttable.version + 1, time = ?"
                .into(),
            (St::LinkUpdateData, _) => "UPDATE linktable SET visibility = ?, data = ?, time = ?, version = ? \
                 WHERE id1 = ? AND id2 = ? AND link_type = ?"
                .into(),
            (St::Commit, _) => "COMMIT".into(),
            (St::Rollback, _) => "ROLLBACK".into(),
            (St::LinkLockVisibility, _) => {
                "SELECT visibility FROM linktable WHERE id1 = ? AND id2 = ? AND link_type = ? FOR UPDATE".into()
            }
            (St::LinkHide, _) => "UPDATE linktable SET visibility = 0 WHERE id1 = ? AND id2 = ? AND link_type = ?".into(),
            (St::CountDecrement, Mysql) => "INSERT INTO counttable (id, link_type, count, time, version) \
                 VALUES (?, ?, 0, ?, 0) ON DUPLICATE KEY UPDATE count = IF(count = 0, 0, count - 1), time = ?, version = version + 1"
                .into(),
            (St::CountDecrement, Postgres) => "INSERT INTO counttable (id, link_type, count, time, version) \
                 VALUES (?, ?, 0, ?, 0) ON CONFLICT (id, link_type) DO UPDATE \
                 SET count = CASE WHEN counttable.count = 0 THEN 0 ELSE counttable.count - 1 END, time = ?, \
                 version = counttable.version + 1"
                .into(),
            (St::CountSelect, _) => "SELECT count FROM counttable WHERE id = ? AND link_type = ?".into(),
            (St::LinkMultiget, _) => self.multiget(1),
            (St::LinkList, Mysql) => format!(
                "SELECT {LINK_COLUMNS} FROM linktable FORCE INDEX(id1_type) \
                 WHERE id1 = ? AND link_type = ? AND time >= ? AND time <= ? AND visibility = 1 \
                 ORDER BY time DESC LIMIT ?, ?"
            ),
            // Same parameters (offset, then count) as MySQL's LIMIT ?, ?.
            (St::LinkList, Postgres) => format!(
                "SELECT {LINK_COLUMNS} FROM linktable \
                 WHERE id1 = ? AND link_type = ? AND time >= ? AND time <= ? AND visibility = 1 \
                 ORDER BY time DESC OFFSET ? LIMIT ?"
            ),
            (St::NodeInsert, _) => "INSERT INTO nodetable (type, version, time, data) VALUES (?, ?, ?, ?)".into(),
            (St::NodeUpdate, _) => "UPDATE nodetable SET version = ?, time = ?, data = ? WHERE id = ? AND type = ?".into(),
            (St::NodeDelete, _) => "DELETE FROM nodetable WHERE id = ? AND type = ?".into(),
            (St::NodeSelect, _) => "SELECT id, type, version, time, data FROM nodetable WHERE id = ?".into(),
        }
    }
}

fn push_tuples(s: &mut String, rows: usize, tuple: &str) {
    for i in 0..rows {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(tuple);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_statement_has_sql_and_a_name() {
        assert_eq!(STATEMENT_NAMES.len(), St::NodeSelect as usize + 1);
        assert!(Family::Mysql
            .sql(St::LinkList)
            .contains("ORDER BY time DESC LIMIT ?, ?"));
        assert_eq!(Family::Mysql.multiget(3).matches('?').count(), 5);
        assert_eq!(Family::Mysql.bulk_links(2).matches('?').count(), 14);
        assert!(Family::Mysql.create_tables(16)[0].ends_with("PARTITIONS 16"));
        assert!(!Family::Mysql.create_tables(0)[0].contains("PARTITION"));
    }

    #[test]
    fn postgres_statements_take_the_same_parameters() {
        let count = |s: &str| s.matches('?').count();
        for i in 0..STATEMENT_NAMES.len() as u16 {
            let st = ALL[i as usize];
            assert_eq!(st as u16, i);
            assert_eq!(
                count(&Family::Mysql.sql(st)),
                count(&Family::Postgres.sql(st)),
                "{st:?}"
            );
        }
        assert_eq!(Family::Postgres.bulk_links(3).matches('?').count(), 21);
        assert!(Family::Postgres.bulk_counts(1).starts_with("INSERT INTO counttable"));
        assert!(Family::Postgres
            .sql(St::LinkList)
            .ends_with("ORDER BY time DESC OFFSET ? LIMIT ?"));
        assert!(!Family::Postgres.sql(St::LinkList).contains("FORCE"));
        let ddl = Family::Postgres.create_tables(0).join(";");
        assert!(ddl.contains("data bytea") && !ddl.contains("unsigned") && !ddl.contains("PARTITION"));
        assert!(Family::Postgres.link_insert_returns_rows() && !Family::Mysql.link_insert_returns_rows());
        assert_eq!(
            Family::Postgres.copy_into("nodetable").unwrap(),
            "COPY nodetable (id, type, version, time, data) FROM STDIN"
        );
        assert!(Family::Mysql.copy_into("linktable").is_none());
    }

    const ALL: [St; 15] = [
        St::LinkInsert,
        St::CountIncrement,
        St::LinkUpdateData,
        St::Commit,
        St::Rollback,
        St::LinkLockVisibility,
        St::LinkHide,
        St::CountDecrement,
        St::CountSelect,
        St::LinkMultiget,
        St::LinkList,
        St::NodeInsert,
        St::NodeUpdate,
        St::NodeDelete,
        St::NodeSelect,
    ];
}
