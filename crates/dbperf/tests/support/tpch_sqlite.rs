//! An independent reference for TPC-H answers: SQLite (bundled with rusqlite) loads the same
//! tpchgen rows dbperf loads, into memory, and computes the 22 queries in dbperf's SQLite
//! rendering (`tests/data/tpch/sqlite_queries.sql`) with the substitution parameters dbperf
//! used. A server's answers are then compared with SQLite's under the spec's precision
//! rules (`dbperf::workloads::tpch::answers::compare`, with SQLite's answer as the
//! expected one). Nothing here comes from dbperf's query texts or from answers dbperf wrote.

#![allow(dead_code)]

use std::path::Path;

use dbperf::workloads::tpch::answers::{self, kinds, Kind};
use dbperf::workloads::tpch::power::stream_params;
use dbperf::workloads::tpch::qgen::QueryParams;
use dbperf::workloads::tpch::table::RowEnd;
use dbperf::workloads::tpch::Table;
use rusqlite::types::ValueRef;

use super::common::{dbperf, run_ok};

/// One query's rows, values as text (NULL as `NULL`, as dbperf's runner writes it).
pub type Answer = Vec<Vec<String>>;

const SCRIPT: &str = include_str!("../data/tpch/sqlite_queries.sql");
const INDEXES: &str = "-- indexes (created after the load)";

/// The schema, the indexes, and the 22 query templates of the fixture file.
fn script() -> (&'static str, &'static str, Vec<String>) {
    let (head, queries) = SCRIPT.split_at(SCRIPT.find("\n-- Q1 ").expect("the fixture has -- Q1"));
    let (schema, indexes) = head.split_at(head.find(INDEXES).expect("the fixture has its indexes"));
    let mut texts: Vec<String> = Vec::new();
    for line in queries.lines() {
        if line.starts_with("-- Q") {
            texts.push(String::new());
        } else if let Some(t) = texts.last_mut() {
            t.push_str(line);
            t.push('\n');
        }
    }
    assert_eq!(texts.len(), 22, "the fixture holds Q1..Q22");
    (schema, indexes, texts)
}

/// qgen's tags `:1`..`:10` replaced by the values (`:10` before `:1`).
fn substitute(template: &str, values: &[String]) -> String {
    let mut text = template.to_string();
    for (i, v) in values.iter().enumerate().rev() {
        text = text.replace(&format!(":{}", i + 1), v);
    }
    assert!(!text.contains(":1"), "a parameter left unfilled: {text}");
    text.trim().trim_end_matches(';').to_string()
}

/// An in-memory SQLite database holding the eight tables at `sf`, from the generator
/// `dbperf tpch prepare` loads with.
pub fn load(sf: f64) -> rusqlite::Connection {
    let (schema, indexes, _) = script();
    let mut db = rusqlite::Connection::open_in_memory().unwrap();
    db.execute_batch("PRAGMA case_sensitive_like = ON").unwrap();
    db.execute_batch(schema).unwrap();
    let tx = db.transaction().unwrap();
    for t in Table::ALL {
        let columns = dbperf::workloads::tpch::schema::column_count(t);
        let marks = vec!["?"; columns].join(", ");
        let mut insert = tx
            .prepare(&format!("INSERT INTO {} VALUES ({marks})", t.name()))
            .unwrap();
        t.generate(sf, 1, 1, RowEnd::Newline, |block| {
            for line in std::str::from_utf8(block).unwrap().lines() {
                let values: Vec<&str> = line.split('|').collect();
                assert_eq!(values.len(), columns, "{}: {line}", t.name());
                insert.execute(rusqlite::params_from_iter(values)).unwrap();
            }
            Ok::<(), ()>(())
        })
        .unwrap();
    }
    tx.commit().unwrap();
    db.execute_batch(indexes).unwrap();
    db
}

/// SQLite's answers to the queries with parameters `params` (in query order).
pub fn answers(db: &rusqlite::Connection, params: &[QueryParams]) -> Vec<Answer> {
    let (_, _, texts) = script();
    params
        .iter()
        .map(|p| {
            let sql = substitute(&texts[usize::from(p.query) - 1], &p.values);
            let mut stmt = db.prepare(&sql).unwrap_or_else(|e| panic!("Q{}: {e}\n{sql}", p.query));
            let n = stmt.column_count();
            let mut rows = stmt.query([]).unwrap();
            let mut out = Vec::new();
            while let Some(row) = rows.next().unwrap() {
                out.push(
                    (0..n)
                        .map(|i| match row.get_ref(i).unwrap() {
                            ValueRef::Null => "NULL".to_string(),
                            ValueRef::Integer(v) => v.to_string(),
                            ValueRef::Real(v) => v.to_string(),
                            ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
                        })
                        .collect(),
                );
            }
            out
        })
        .collect()
}

/// The queries whose answer in `dir` (`q<N>.out`, as `tpch validate --write-answers`
/// writes them) does not match SQLite's, each with why.
pub fn mismatches(sqlite: &[Answer], dir: &Path) -> Vec<String> {
    (1..=22u8)
        .filter_map(|q| {
            let got = answers::read_dir(dir, q).unwrap();
            answers::compare(q, &sqlite[usize::from(q) - 1], &got)
                .err()
                .map(|m| format!("Q{q}: {m}"))
        })
        .collect()
}

/// `dbperf tpch validate --write-answers` against the SF 0.01 data loaded at `url`: every
/// one of the 22 answers matches SQLite's on the same data with the same (validation)
/// parameters.
pub fn validate_against_sqlite(url: &str) {
    let written = tempfile::tempdir().unwrap();
    run_ok(
        dbperf()
            .args(["tpch", "validate", "--write-answers"])
            .arg(written.path())
            .args(["--target", url]),
    );
    let sqlite = answers(&load(0.01), &stream_params(0.01, 0, 0, true));
    assert_eq!(mismatches(&sqlite, written.path()), Vec::<String>::new());
}

/// `answer` with one value changed beyond its column's tolerance (first row; the first
/// column that is not a string, else the first): a number moved by half of itself plus
/// 1,000, a string or NULL given another value; an empty answer gains a row.
pub fn altered(q: u8, answer: &Answer) -> Answer {
    let mut a = answer.clone();
    let Some(row) = a.first_mut() else {
        return vec![vec!["1".to_string()]];
    };
    let kinds = kinds(q);
    let c = (0..row.len())
        .find(|&c| kinds.get(c).is_some_and(|k| *k != Kind::Str) && row[c].parse::<f64>().is_ok())
        .unwrap_or(0);
    row[c] = match row[c].parse::<f64>() {
        Ok(v) => (v * 1.5 + 1000.0).to_string(),
        Err(_) if row[c] == "NULL" => "1".to_string(),
        Err(_) => format!("{}x", row[c]),
    };
    a
}
