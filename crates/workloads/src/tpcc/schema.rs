//! The TPC-C tables in two spellings: dbperf's (`new_order`, spec-width integers and
//! DECIMAL(4,4) rates) and tpcc-mysql's (`new_orders`, TINYINT/SMALLINT ids, DECIMAL(4,2)
//! rates, its index names), so a run can use a database tpcc-mysql loaded. Column names
//! are the specification's in both. Also: the secondary indexes and optional foreign keys
//! built after the data, and dbperf's own bookkeeping tables for resumable loading.

use std::fmt;
use std::str::FromStr;

use dbperf_driver::target::Family;

/// Which spelling of the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchemaKind {
    /// dbperf's own.
    Dbperf,
    /// tpcc-mysql's `create_table.sql` and `add_fkey_idx.sql`.
    TpccMysql,
}

impl FromStr for SchemaKind {
    type Err = String;
    fn from_str(s: &str) -> Result<SchemaKind, String> {
        match s {
            "dbperf" => Ok(SchemaKind::Dbperf),
            "tpcc-mysql" | "tpcc_mysql" => Ok(SchemaKind::TpccMysql),
            other => Err(format!("--schema must be dbperf or tpcc-mysql, got {other:?}")),
        }
    }
}

impl fmt::Display for SchemaKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SchemaKind::Dbperf => "dbperf",
            SchemaKind::TpccMysql => "tpcc-mysql",
        })
    }
}

/// Bookkeeping: one row per finished unit of loading (warehouse id, 0 for ITEM).
pub const LOADED_TABLE: &str = "dbperf_tpcc_loaded";
/// Bookkeeping: load parameters (warehouses, seed, C_LAST of the load, indexes built).
pub const META_TABLE: &str = "dbperf_tpcc_meta";

/// A schema spelling with its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schema {
    /// The spelling.
    pub kind: SchemaKind,
    /// HISTORY gets an auto-increment primary key (Group Replication, Galera).
    pub history_pk: bool,
    /// The server family: MySQL/MariaDB, or PostgreSQL (the dbperf spelling only).
    pub family: Family,
}

impl Schema {
    /// The NEW-ORDER table's name.
    pub fn new_order(&self) -> &'static str {
        match self.kind {
            SchemaKind::Dbperf => "new_order",
            SchemaKind::TpccMysql => "new_orders",
        }
    }

    /// Every TPC-C table, in load order.
    pub fn tables(&self) -> [&'static str; 9] {
        [
            "item",
            "warehouse",
            "district",
            "stock",
            "customer",
            "history",
            "orders",
            self.new_order(),
            "order_line",
        ]
    }

    /// True on PostgreSQL.
    pub fn postgres(&self) -> bool {
        self.family == Family::Postgres
    }

    /// A transaction statement as this server takes it. On PostgreSQL an amount sent in
    /// cents (`?/100`) is cast to BIGINT and divided by a numeric (`100.0`): PostgreSQL would
    /// otherwise type the parameter from the integer divisor and divide as integers; and
    /// `CONCAT(?, ...)`'s parameter is typed TEXT, which PostgreSQL cannot infer.
    pub fn sql(&self, sql: &str) -> String {
        if self.postgres() {
            sql.replace("?/100", "CAST(? AS BIGINT)/100.0")
                .replace("CONCAT(?,", "CONCAT(CAST(? AS TEXT),")
        } else {
            sql.to_string()
        }
    }

    /// CREATE TABLE statements (primary keys only; secondary indexes come after the data).
    /// PostgreSQL gets the same columns with TIMESTAMP for DATETIME and no engine.
    pub fn create_tables(&self, engine: &str) -> Vec<String> {
        let ddl = self.create_tables_mysql(engine);
        if !self.postgres() {
            return ddl;
        }
        let tail = format!(") ENGINE={engine}");
        ddl.into_iter()
            .map(|s| {
                s.replace(" DATETIME", " TIMESTAMP")
                    .replace("BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY", "BIGSERIAL PRIMARY KEY")
                    .replace(&tail, ")")
            })
            .collect()
    }

    fn create_tables_mysql(&self, engine: &str) -> Vec<String> {
        let (wid, did, rate) = match self.kind {
            SchemaKind::Dbperf => ("INT", "INT", "DECIMAL(4,4)"),
            SchemaKind::TpccMysql => ("SMALLINT", "TINYINT", "DECIMAL(4,2)"),
        };
        let addr = |p: &str| {
            format!(
                "{p}_street_1 VARCHAR(20), {p}_street_2 VARCHAR(20), {p}_city VARCHAR(20), {p}_state CHAR(2), {p}_zip CHAR(9)"
            )
        };
        let history_pk = if self.history_pk {
            "h_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
        } else {
            ""
        };
        let no = self.new_order();
        let tail = format!(") ENGINE={engine}");
        vec![
            format!("CREATE TABLE item (i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2), i_data VARCHAR(50), PRIMARY KEY (i_id){tail}"),
            format!("CREATE TABLE warehouse (w_id {wid} NOT NULL, w_name VARCHAR(10), {}, w_tax {rate}, w_ytd DECIMAL(12,2), PRIMARY KEY (w_id){tail}", addr("w")),
            format!("CREATE TABLE district (d_id {did} NOT NULL, d_w_id {wid} NOT NULL, d_name VARCHAR(10), {}, d_tax {rate}, d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id){tail}", addr("d")),
            format!("CREATE TABLE stock (s_i_id INT NOT NULL, s_w_id {wid} NOT NULL, s_quantity SMALLINT, {}, s_ytd DECIMAL(8,0), s_order_cnt SMALLINT, s_remote_cnt SMALLINT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id){tail}",
                (1..=10).map(|d| format!("s_dist_{d:02} CHAR(24)")).collect::<Vec<_>>().join(", ")),
            format!("CREATE TABLE customer (c_id INT NOT NULL, c_d_id {did} NOT NULL, c_w_id {wid} NOT NULL, c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16), {}, c_phone CHAR(16), c_since DATETIME, c_credit CHAR(2), c_credit_lim DECIMAL(12,2), c_discount {rate}, c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), c_payment_cnt SMALLINT, c_delivery_cnt SMALLINT, c_data TEXT, PRIMARY KEY (c_w_id, c_d_id, c_id){tail}", addr("c")),
            format!("CREATE TABLE history ({history_pk}h_c_id INT, h_c_d_id {did}, h_c_w_id {wid}, h_d_id {did}, h_w_id {wid}, h_date DATETIME, h_amount DECIMAL(6,2), h_data VARCHAR(24){tail}"),
            format!("CREATE TABLE orders (o_id INT NOT NULL, o_d_id {did} NOT NULL, o_w_id {wid} NOT NULL, o_c_id INT, o_entry_d DATETIME, o_carrier_id {did}, o_ol_cnt {did}, o_all_local {did}, PRIMARY KEY (o_w_id, o_d_id, o_id){tail}"),
            format!("CREATE TABLE {no} (no_o_id INT NOT NULL, no_d_id {did} NOT NULL, no_w_id {wid} NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id){tail}"),
            format!("CREATE TABLE order_line (ol_o_id INT NOT NULL, ol_d_id {did} NOT NULL, ol_w_id {wid} NOT NULL, ol_number {did} NOT NULL, ol_i_id INT, ol_supply_w_id {wid}, ol_delivery_d DATETIME, ol_quantity {did}, ol_amount DECIMAL(6,2), ol_dist_info CHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number){tail}"),
        ]
    }

    /// Secondary indexes, built after the data, as (table, index, statement): the two the
    /// transactions need (customer by last name, a customer's last order), and with
    /// tpcc-mysql's spelling its other ones.
    pub fn create_indexes(&self) -> Vec<(&'static str, &'static str, String)> {
        let indexes: &[(&str, &str, &str)] = match self.kind {
            _ if self.postgres() => &[
                ("customer", "customer_name", "c_w_id, c_d_id, c_last, c_first"),
                ("orders", "orders_customer", "o_w_id, o_d_id, o_c_id, o_id"),
            ],
            SchemaKind::Dbperf => &[
                ("customer", "customer_name", "c_w_id, c_d_id, c_last, c_first"),
                ("orders", "orders_customer", "o_w_id, o_d_id, o_c_id, o_id"),
            ],
            SchemaKind::TpccMysql => &[
                ("customer", "idx_customer", "c_w_id, c_d_id, c_last, c_first"),
                ("orders", "idx_orders", "o_w_id, o_d_id, o_c_id, o_id"),
                ("stock", "fkey_stock_2", "s_i_id"),
                ("order_line", "fkey_order_line_2", "ol_supply_w_id, ol_i_id"),
                ("history", "fkey_history_1", "h_c_w_id, h_c_d_id, h_c_id"),
                ("history", "fkey_history_2", "h_w_id, h_d_id"),
            ],
        };
        indexes
            .iter()
            .map(|&(t, name, cols)| {
                let sql = if self.postgres() {
                    format!("CREATE INDEX {name} ON {t} ({cols})")
                } else {
                    format!("ALTER TABLE {t} ADD INDEX {name} ({cols})")
                };
                (t, name, sql)
            })
            .collect()
    }

    /// Foreign keys (`--fk`), added after the data and indexes, as (table, constraint,
    /// statement).
    pub fn create_foreign_keys(&self) -> Vec<(&'static str, &'static str, String)> {
        let no = self.new_order();
        [
            ("district", "fkey_district_1", "d_w_id", "warehouse (w_id)"),
            (
                "customer",
                "fkey_customer_1",
                "c_w_id, c_d_id",
                "district (d_w_id, d_id)",
            ),
            (
                "history",
                "fkey_history_1",
                "h_c_w_id, h_c_d_id, h_c_id",
                "customer (c_w_id, c_d_id, c_id)",
            ),
            ("history", "fkey_history_2", "h_w_id, h_d_id", "district (d_w_id, d_id)"),
            (
                no,
                "fkey_new_orders_1",
                "no_w_id, no_d_id, no_o_id",
                "orders (o_w_id, o_d_id, o_id)",
            ),
            (
                "orders",
                "fkey_orders_1",
                "o_w_id, o_d_id, o_c_id",
                "customer (c_w_id, c_d_id, c_id)",
            ),
            (
                "order_line",
                "fkey_order_line_1",
                "ol_w_id, ol_d_id, ol_o_id",
                "orders (o_w_id, o_d_id, o_id)",
            ),
            (
                "order_line",
                "fkey_order_line_2",
                "ol_supply_w_id, ol_i_id",
                "stock (s_w_id, s_i_id)",
            ),
            ("stock", "fkey_stock_1", "s_w_id", "warehouse (w_id)"),
            ("stock", "fkey_stock_2", "s_i_id", "item (i_id)"),
        ]
        .into_iter()
        .map(|(t, name, cols, refs)| {
            (
                t,
                name,
                format!("ALTER TABLE {t} ADD CONSTRAINT {name} FOREIGN KEY ({cols}) REFERENCES {refs}"),
            )
        })
        .collect()
    }

    /// Sets `name` to `value` in the bookkeeping table.
    pub fn set_meta(&self, name: &str, value: i64) -> String {
        if self.postgres() {
            format!(
                "INSERT INTO {META_TABLE} (name, value) VALUES ('{name}', {value}) \
                 ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value"
            )
        } else {
            format!("REPLACE INTO {META_TABLE} (name, value) VALUES ('{name}', {value})")
        }
    }

    /// The bookkeeping tables, as (table, statement).
    pub fn create_bookkeeping(&self) -> [(&'static str, String); 2] {
        let datetime = if self.postgres() { "TIMESTAMP" } else { "DATETIME" };
        [
            (META_TABLE, format!("CREATE TABLE IF NOT EXISTS {META_TABLE} (name VARCHAR(32) NOT NULL PRIMARY KEY, value BIGINT NOT NULL)")),
            (LOADED_TABLE, format!("CREATE TABLE IF NOT EXISTS {LOADED_TABLE} (w_id INT NOT NULL PRIMARY KEY, loaded_at {datetime} NOT NULL)")),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_create_every_table() {
        for kind in [SchemaKind::Dbperf, SchemaKind::TpccMysql] {
            let s = Schema {
                kind,
                history_pk: true,
                family: Family::Mysql,
            };
            let ddl = s.create_tables("InnoDB");
            for (t, sql) in s.tables().iter().zip(&ddl) {
                assert!(sql.starts_with(&format!("CREATE TABLE {t} (")), "{sql}");
            }
            assert!(ddl[5].contains("h_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY"));
        }
        let pg = Schema {
            kind: SchemaKind::Dbperf,
            history_pk: true,
            family: Family::Postgres,
        };
        let ddl = pg.create_tables("InnoDB").join("\n");
        assert!(
            !ddl.contains("ENGINE") && !ddl.contains("DATETIME") && ddl.contains("h_id BIGSERIAL PRIMARY KEY"),
            "{ddl}"
        );
        assert_eq!(
            pg.sql("UPDATE warehouse SET w_ytd = w_ytd + ?/100 WHERE w_id = ?"),
            "UPDATE warehouse SET w_ytd = w_ytd + CAST(? AS BIGINT)/100.0 WHERE w_id = ?"
        );
        assert_eq!("tpcc-mysql".parse::<SchemaKind>().unwrap(), SchemaKind::TpccMysql);
        assert!("tpcc".parse::<SchemaKind>().unwrap_err().contains("--schema"));
    }
}
