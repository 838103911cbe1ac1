//! The LinkBench tables and every statement, per SQL dialect. All SQL that differs between
//! servers lives here, in [`Dialect`]; the loader and the requesters only pick statements
//! by name ([`St`]) and bind parameters.

/// Table of load parameters, so `request` knows the id range the load used.
pub const META_TABLE: &str = "dbperf_linkbench";

/// A server family's spelling of the LinkBench statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// MySQL and MariaDB: the reference's `LinkStoreMysql`.
    Mysql,
}

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

impl Dialect {
    /// CREATE TABLE statements; `partitions` 0 leaves linktable unpartitioned.
    pub fn create_tables(self, partitions: u32) -> Vec<String> {
        match self {
            Dialect::Mysql => {
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
        }
    }

    /// DROP TABLE statements for a fresh load.
    pub fn drop_tables(self) -> Vec<String> {
        ["linktable", "counttable", "nodetable", META_TABLE]
            .iter()
            .map(|t| format!("DROP TABLE IF EXISTS {t}"))
            .collect()
    }

    /// Run once on every session: payloads are latin-1 bytes, sent and read unconverted.
    pub fn session_setup(self) -> &'static [&'static str] {
        match self {
            Dialect::Mysql => &["SET NAMES latin1"],
        }
    }

    /// Run once on the read-write session of a requester: it works in transactions ended by
    /// an explicit COMMIT, as the reference's `conn_rw` (autocommit off).
    pub fn rw_setup(self) -> &'static [&'static str] {
        match self {
            Dialect::Mysql => &["SET autocommit = 0"],
        }
    }

    /// Bulk load of `rows` links (the reference's statement with `rows` value tuples).
    pub fn bulk_links(self, rows: usize) -> String {
        let mut s = format!("INSERT INTO linktable ({LINK_COLUMNS}) VALUES ");
        push_tuples(&mut s, rows, "(?, ?, ?, ?, ?, ?, ?)");
        s.push_str(" ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)");
        s
    }

    /// Bulk load of `rows` counts.
    pub fn bulk_counts(self, rows: usize) -> String {
        let mut s = "REPLACE INTO counttable (id, link_type, count, time, version) VALUES ".to_string();
        push_tuples(&mut s, rows, "(?, ?, ?, ?, ?)");
        s
    }

    /// Bulk load of `rows` nodes (ids given, so loaders can work in parallel).
    pub fn bulk_nodes(self, rows: usize) -> String {
        let mut s = "INSERT INTO nodetable (id, type, version, time, data) VALUES ".to_string();
        push_tuples(&mut s, rows, "(?, ?, ?, ?, ?)");
        s
    }

    /// The multiget statement for `n` id2s.
    pub fn multiget(self, n: usize) -> String {
        let mut s = format!("SELECT {LINK_COLUMNS} FROM linktable WHERE id1 = ? AND link_type = ? AND id2 IN (");
        for i in 0..n {
            s.push_str(if i == 0 { "?" } else { ", ?" });
        }
        s.push(')');
        s
    }

    /// A request statement (not [`St::LinkMultiget`], see [`Dialect::multiget`]).
    pub fn sql(self, st: St) -> String {
        match (self, st) {
            (Dialect::Mysql, St::LinkInsert) => format!(
                "INSERT INTO linktable ({LINK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) \
                 ON DUPLICATE KEY UPDATE visibility = VALUES(visibility)"
            ),
            (Dialect::Mysql, St::CountIncrement) => "INSERT INTO counttable (id, link_type, count, time, version) \
                 VALUES (?, ?, ?, ?, 0) ON DUPLICATE KEY UPDATE count = count + ?, version = version + 1, time = ?"
                .into(),
            (Dialect::Mysql, St::LinkUpdateData) => "UPDATE linktable SET visibility = ?, data = ?, time = ?, version = ? \
                 WHERE id1 = ? AND id2 = ? AND link_type = ?"
                .into(),
            (Dialect::Mysql, St::Commit) => "COMMIT".into(),
            (Dialect::Mysql, St::Rollback) => "ROLLBACK".into(),
            (Dialect::Mysql, St::LinkLockVisibility) => {
                "SELECT visibility FROM linktable WHERE id1 = ? AND id2 = ? AND link_type = ? FOR UPDATE".into()
            }
            (Dialect::Mysql, St::LinkHide) => {
                "UPDATE linktable SET visibility = 0 WHERE id1 = ? AND id2 = ? AND link_type = ?".into()
            }
            (Dialect::Mysql, St::CountDecrement) => "INSERT INTO counttable (id, link_type, count, time, version) \
                 VALUES (?, ?, 0, ?, 0) ON DUPLICATE KEY UPDATE count = IF(count = 0, 0, count - 1), time = ?, version = version + 1"
                .into(),
            (Dialect::Mysql, St::CountSelect) => "SELECT count FROM counttable WHERE id = ? AND link_type = ?".into(),
            (Dialect::Mysql, St::LinkMultiget) => self.multiget(1),
            (Dialect::Mysql, St::LinkList) => format!(
                "SELECT {LINK_COLUMNS} FROM linktable FORCE INDEX(id1_type) \
                 WHERE id1 = ? AND link_type = ? AND time >= ? AND time <= ? AND visibility = 1 \
                 ORDER BY time DESC LIMIT ?, ?"
            ),
            (Dialect::Mysql, St::NodeInsert) => "INSERT INTO nodetable (type, version, time, data) VALUES (?, ?, ?, ?)".into(),
            (Dialect::Mysql, St::NodeUpdate) => {
                "UPDATE nodetable SET version = ?, time = ?, data = ? WHERE id = ? AND type = ?".into()
            }
            (Dialect::Mysql, St::NodeDelete) => "DELETE FROM nodetable WHERE id = ? AND type = ?".into(),
            (Dialect::Mysql, St::NodeSelect) => "SELECT id, type, version, time, data FROM nodetable WHERE id = ?".into(),
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
        assert!(Dialect::Mysql
            .sql(St::LinkList)
            .contains("ORDER BY time DESC LIMIT ?, ?"));
        assert_eq!(Dialect::Mysql.multiget(3).matches('?').count(), 5);
        assert_eq!(Dialect::Mysql.bulk_links(2).matches('?').count(), 14);
        assert!(Dialect::Mysql.create_tables(16)[0].ends_with("PARTITIONS 16"));
        assert!(!Dialect::Mysql.create_tables(0)[0].contains("PARTITION"));
    }
}
