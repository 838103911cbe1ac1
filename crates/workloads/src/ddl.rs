//! What dbperf created, and DDL that can be run again: the one record every workload keeps of
//! the tables it created (the table [`CREATED_TABLE`], one row per table), the check that
//! refuses to load into or drop a table dbperf did not create, and CREATE INDEX / ADD
//! CONSTRAINT that skip what already exists, so a prepare killed at any point resumes.
//!
//! | step | rule |
//! |---|---|
//! | create a table | record its name first, then create it: a kill in between leaves a record of a table that is not there, which the next prepare creates |
//! | prepare finds a table | recorded: dbperf's, resumed; not recorded: the user's, refused ([`refuse_foreign`]) |
//! | create an index or constraint | skipped when the catalog has it; an error is forgiven when the catalog has it afterwards (a killed client's statement that the server finished meanwhile) |
//! | cleanup | drops recorded tables only; a table of the same name that is not recorded is refused unless `--force` ([`drop_created`]) |
//! | another workload's table | TPC-C and TPC-H share `customer` and `orders`: a prepare refuses a table another workload recorded ([`Inventory::others`], [`refuse_others`]) and a cleanup keeps it |
//!
//! Tables that dbperf versions before this record created count as not created by dbperf:
//! `cleanup --force` drops them.

use dbperf_driver::target::Family;
use dbperf_driver::{doing, Failed, Session};

/// The record of tables dbperf created in this database (PostgreSQL: in this schema).
pub const CREATED_TABLE: &str = "dbperf_created";

/// A refusal or a server error.
#[derive(Debug, thiserror::Error)]
pub enum DdlError {
    /// Tables dbperf did not create are in the way; the message says which and what to do.
    #[error("{0}")]
    Refused(String),
    /// The server refused a statement.
    #[error(transparent)]
    Db(#[from] Failed),
}

/// The tables of the current database and which of them dbperf created.
#[derive(Clone, Debug, Default)]
pub struct Inventory {
    /// Every table of the current database (schema).
    pub existing: Vec<String>,
    /// Names recorded in [`CREATED_TABLE`] (some may have been dropped by hand since), each
    /// with the parameters of the prepare that created it.
    pub created: Vec<(String, String)>,
    /// The workload that recorded each name in `created` (`tpcc`, `tpch`, ...).
    pub workloads: Vec<(String, String)>,
}

impl Inventory {
    /// True when table `t` exists.
    pub fn exists(&self, t: &str) -> bool {
        self.existing.iter().any(|e| e.eq_ignore_ascii_case(t))
    }

    /// True when dbperf recorded creating `t`.
    pub fn ours(&self, t: &str) -> bool {
        self.created.iter().any(|(e, _)| e.eq_ignore_ascii_case(t))
    }

    /// The parameters recorded with `t` when dbperf created it.
    pub fn params(&self, t: &str) -> Option<&str> {
        self.created
            .iter()
            .find(|(e, _)| e.eq_ignore_ascii_case(t))
            .map(|(_, p)| p.as_str())
    }

    /// The tables among `names` that exist and that dbperf did not create.
    pub fn foreign<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
        names.into_iter().filter(|t| self.exists(t) && !self.ours(t)).collect()
    }

    /// The workload that recorded `t`, if any.
    pub fn workload(&self, t: &str) -> Option<&str> {
        self.workloads
            .iter()
            .find(|(e, _)| e.eq_ignore_ascii_case(t))
            .map(|(_, w)| w.as_str())
    }

    /// The tables among `names` that exist and that dbperf created for a workload other than
    /// `workload`, each with that workload (TPC-C and TPC-H both have `customer` and `orders`).
    pub fn others<'a>(&self, workload: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<(&'a str, String)> {
        names
            .into_iter()
            .filter(|t| self.exists(t))
            .filter_map(|t| match self.workload(t) {
                Some(w) if w != workload => Some((t, w.to_string())),
                _ => None,
            })
            .collect()
    }
}

fn list_tables(family: Family) -> &'static str {
    match family {
        Family::Mysql => "SHOW TABLES",
        Family::Postgres => "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()",
    }
}

fn first_column(rows: Vec<Vec<Option<String>>>) -> Vec<String> {
    rows.into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .collect()
}

/// Reads the tables of the current database and the record of those dbperf created.
pub async fn inventory<S: Session>(s: &mut S, family: Family) -> Result<Inventory, Failed> {
    let existing = first_column(
        s.query_rows(list_tables(family))
            .await
            .map_err(doing("listing tables"))?,
    );
    let mut inv = Inventory {
        existing,
        ..Inventory::default()
    };
    if inv.exists(CREATED_TABLE) {
        let rows = s
            .query_rows(&format!("SELECT name, params, workload FROM {CREATED_TABLE}"))
            .await
            .map_err(doing(format!("reading {CREATED_TABLE}")))?;
        for r in rows {
            let mut r = r.into_iter();
            let Some(name) = r.next().flatten() else { continue };
            let params = r.next().flatten().unwrap_or_default();
            let workload = r.next().flatten().unwrap_or_default();
            inv.workloads.push((name.clone(), workload));
            inv.created.push((name, params));
        }
    }
    Ok(inv)
}

/// The refusal of a prepare or load that found `foreign` (tables it did not create) in
/// `database`. It never advises `cleanup`, which would not drop them either.
pub fn refuse_foreign(command: &str, foreign: &[&str], database: &str) -> DdlError {
    let (them, list) = match foreign {
        [one] => ("it", format!("table {one} already exists")),
        many => ("them", format!("tables {} already exist", many.join(", "))),
    };
    DdlError::Refused(format!(
        "{list} in {database} and dbperf did not create {them} (not listed in {CREATED_TABLE}); \
         `{command}` does not load into tables it did not create: point --target at another database, \
         or drop {them} yourself if the data is not needed"
    ))
}

/// The refusal of a prepare or load that found tables another workload created (`others`,
/// each with its workload) in `database`: that workload's cleanup is the way out.
pub fn refuse_others(command: &str, others: &[(&str, String)], database: &str) -> DdlError {
    let names: Vec<&str> = others.iter().map(|(t, _)| *t).collect();
    let mut workloads: Vec<&str> = others.iter().map(|(_, w)| w.as_str()).collect();
    workloads.sort_unstable();
    workloads.dedup();
    let (list, verb) = match names.as_slice() {
        [one] => (format!("table {one}"), "holds"),
        many => (format!("tables {}", many.join(", ")), "hold"),
    };
    let cleanups: Vec<String> = workloads.iter().map(|w| format!("`dbperf {w} cleanup`")).collect();
    DdlError::Refused(format!(
        "{list} in {database} {verb} the data of dbperf {} (listed in {CREATED_TABLE}), and `{command}` \
         does not load into another workload's tables: run {} first (same --target), or point --target at another database",
        workloads.join(", "),
        cleanups.join(" and ")
    ))
}

/// Records that dbperf creates table `name` (for `workload`, with the prepare's `params`, which
/// a resuming prepare compares with its own), before creating it.
pub async fn record<S: Session>(
    s: &mut S,
    family: Family,
    workload: &str,
    name: &str,
    params: &str,
) -> Result<(), Failed> {
    let (ts, insert, tail) = match family {
        Family::Mysql => ("DATETIME", "INSERT IGNORE INTO", ""),
        Family::Postgres => ("TIMESTAMP", "INSERT INTO", " ON CONFLICT (name) DO NOTHING"),
    };
    s.query(&format!(
        "CREATE TABLE IF NOT EXISTS {CREATED_TABLE} (name VARCHAR(64) NOT NULL PRIMARY KEY, \
         workload VARCHAR(32) NOT NULL, params VARCHAR(1000) NOT NULL, created_at {ts} NOT NULL)"
    ))
    .await
    .map_err(doing(format!("creating {CREATED_TABLE}")))?;
    s.query(&format!(
        "{insert} {CREATED_TABLE} (name, workload, params, created_at) \
         VALUES ('{name}', '{workload}', '{}', CURRENT_TIMESTAMP){tail}",
        params.replace('\'', "''")
    ))
    .await
    .map_err(doing(format!("writing {CREATED_TABLE}")))?;
    Ok(())
}

/// Creates table `name` with `ddl` unless it exists, recording it first. The caller has
/// refused tables dbperf did not create ([`Inventory::foreign`]).
pub async fn create_table<S: Session>(
    s: &mut S,
    family: Family,
    inv: &Inventory,
    workload: &str,
    params: &str,
    name: &str,
    ddl: &str,
) -> Result<(), Failed> {
    if inv.ours(name) && !inv.exists(name) && inv.workload(name).is_some_and(|w| w != workload) {
        // Another workload's record of a table that is gone: the name is free again.
        s.query(&format!("DELETE FROM {CREATED_TABLE} WHERE name = '{name}'"))
            .await
            .map_err(doing(format!("writing {CREATED_TABLE}")))?;
        record(s, family, workload, name, params).await?;
    } else if !inv.ours(name) {
        record(s, family, workload, name, params).await?;
    }
    if !inv.exists(name) {
        s.query(ddl).await.map_err(doing(ddl.to_string()))?;
    }
    Ok(())
}

/// Where the server's catalog lists an index, a key or a constraint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object<'a> {
    /// A (secondary) index of this name.
    Index(&'a str),
    /// The table's primary key.
    PrimaryKey,
    /// A constraint (foreign key) of this name.
    Constraint(&'a str),
}

fn schema_fn(family: Family) -> &'static str {
    match family {
        Family::Mysql => "DATABASE()",
        Family::Postgres => "current_schema()",
    }
}

/// True when `table` has `object`.
pub async fn exists<S: Session>(s: &mut S, family: Family, table: &str, object: Object<'_>) -> Result<bool, Failed> {
    let schema = schema_fn(family);
    let sql = match (object, family) {
        (Object::Index(i), Family::Mysql) => format!(
            "SELECT 1 FROM information_schema.statistics WHERE table_schema = {schema} \
             AND table_name = '{table}' AND index_name = '{i}' LIMIT 1"
        ),
        (Object::Index(i), Family::Postgres) => format!(
            "SELECT 1 FROM pg_indexes WHERE schemaname = {schema} AND tablename = '{table}' AND indexname = '{i}'"
        ),
        (Object::PrimaryKey, _) => format!(
            "SELECT 1 FROM information_schema.table_constraints WHERE table_schema = {schema} \
             AND table_name = '{table}' AND constraint_type = 'PRIMARY KEY'"
        ),
        (Object::Constraint(c), _) => format!(
            "SELECT 1 FROM information_schema.table_constraints WHERE table_schema = {schema} \
             AND table_name = '{table}' AND constraint_name = '{c}'"
        ),
    };
    let rows = s
        .query_rows(&sql)
        .await
        .map_err(doing(format!("looking up {object:?} of {table}")))?;
    Ok(!rows.is_empty())
}

/// Runs `sql`, which creates `object` on `table`, unless the table has it already. When the
/// statement fails but the object is there afterwards (an interrupted prepare's statement
/// that the server finished meanwhile), that is success. True when `sql` ran.
pub async fn ensure<S: Session>(
    s: &mut S,
    family: Family,
    table: &str,
    object: Object<'_>,
    sql: &str,
) -> Result<bool, Failed> {
    if exists(s, family, table, object).await? {
        return Ok(false);
    }
    match s.query(sql).await {
        Ok(_) => Ok(true),
        Err(e) => {
            if exists(s, family, table, object).await.unwrap_or(false) {
                Ok(false)
            } else {
                Err(doing(sql.to_string())(e))
            }
        }
    }
}

/// Drops the tables among `names` that dbperf created for `workload` (and forgets them), and
/// with `force` also those it did not create. Without `force` a table dbperf did not create
/// refuses the whole cleanup before anything is dropped; a table dbperf created for another
/// workload is kept, with a notice, `force` or not. [`CREATED_TABLE`] goes when it lists
/// nothing more. Returns the tables dropped.
pub async fn drop_created<S: Session>(
    s: &mut S,
    family: Family,
    workload: &str,
    database: &str,
    command: &str,
    names: &[&str],
    force: bool,
) -> Result<Vec<String>, DdlError> {
    let inv = inventory(s, family).await?;
    let foreign = inv.foreign(names.iter().copied());
    if !foreign.is_empty() && !force {
        let (them, list) = match foreign.as_slice() {
            [one] => ("it", format!("table {one}")),
            many => ("them", format!("tables {}", many.join(", "))),
        };
        return Err(DdlError::Refused(format!(
            "{list} in {database} {} not created by dbperf (not listed in {CREATED_TABLE}), so `{command}` \
             drops nothing; add --force to drop {them} anyway (also for tables an older dbperf created), \
             or drop {them} yourself",
            if foreign.len() == 1 { "was" } else { "were" }
        )));
    }
    let cascade = if family == Family::Postgres { " CASCADE" } else { "" };
    if family == Family::Mysql {
        s.query("SET foreign_key_checks = 0")
            .await
            .map_err(doing("SET foreign_key_checks = 0"))?;
    }
    let mut dropped = Vec::new();
    for &t in names {
        if let Some(other) = inv.workload(t).filter(|w| *w != workload) {
            if inv.exists(t) {
                eprintln!("Keeping table '{t}': dbperf {other} created it (`dbperf {other} cleanup` drops it)");
            }
            continue;
        }
        if inv.exists(t) && (inv.ours(t) || force) {
            eprintln!("Dropping table '{t}'...");
            s.query(&format!("DROP TABLE IF EXISTS {t}{cascade}"))
                .await
                .map_err(doing(format!("dropping {t}")))?;
            dropped.push(t.to_string());
        }
        if inv.ours(t) {
            s.query(&format!("DELETE FROM {CREATED_TABLE} WHERE name = '{t}'"))
                .await
                .map_err(doing(format!("writing {CREATED_TABLE}")))?;
        }
    }
    if inv.exists(CREATED_TABLE) {
        let left = s
            .query_rows(&format!("SELECT name FROM {CREATED_TABLE} LIMIT 1"))
            .await
            .map_err(doing(format!("reading {CREATED_TABLE}")))?;
        if left.is_empty() {
            s.query(&format!("DROP TABLE IF EXISTS {CREATED_TABLE}"))
                .await
                .map_err(doing(format!("dropping {CREATED_TABLE}")))?;
        }
    }
    Ok(dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_tables_are_those_that_exist_unrecorded() {
        let inv = Inventory {
            existing: vec!["sbtest1".into(), "sbtest2".into(), "orders".into()],
            created: vec![("sbtest2".into(), "seed=1".into()), ("sbtest3".into(), String::new())],
            workloads: vec![
                ("sbtest2".into(), "sysbench".into()),
                ("sbtest3".into(), "sysbench".into()),
            ],
        };
        assert_eq!(inv.foreign(["sbtest1", "sbtest2", "sbtest3"]), vec!["sbtest1"]);
        assert!(inv.ours("SBTEST2") && !inv.exists("sbtest3"));
        assert_eq!(inv.params("sbtest2"), Some("seed=1"));
    }

    #[test]
    fn another_workloads_tables_are_named_with_its_cleanup() {
        let inv = Inventory {
            existing: vec!["customer".into(), "orders".into(), "warehouse".into(), "nation".into()],
            created: ["customer", "orders", "warehouse", "nation", "lineitem"]
                .map(|t| (t.to_string(), String::new()))
                .to_vec(),
            workloads: [
                ("customer", "tpch"),
                ("orders", "tpch"),
                ("warehouse", "tpcc"),
                ("nation", "tpch"),
                ("lineitem", "tpch"),
            ]
            .map(|(t, w)| (t.to_string(), w.to_string()))
            .to_vec(),
        };
        let tpcc = ["warehouse", "customer", "orders", "stock"];
        let others = inv.others("tpcc", tpcc);
        assert_eq!(
            others,
            vec![("customer", "tpch".to_string()), ("orders", "tpch".to_string())]
        );
        assert!(inv.others("tpch", ["customer", "orders", "lineitem"]).is_empty());
        let msg = refuse_others("dbperf tpcc prepare", &others, "sbtest").to_string();
        assert!(
            msg.contains("tables customer, orders in sbtest hold the data of dbperf tpch"),
            "{msg}"
        );
        assert!(msg.contains("run `dbperf tpch cleanup` first"), "{msg}");
    }

    #[test]
    fn a_prepare_refusal_never_advises_cleanup() {
        let msg = refuse_foreign("dbperf tpcc prepare", &["warehouse", "orders"], "sbtest").to_string();
        assert!(
            msg.contains("tables warehouse, orders already exist in sbtest"),
            "{msg}"
        );
        assert!(!msg.contains("cleanup"), "{msg}");
    }
}
