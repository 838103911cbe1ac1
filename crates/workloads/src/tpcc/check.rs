//! The consistency conditions of clause 3.3.2.1 to 3.3.2.12, each named by its clause,
//! evaluated per warehouse over a pool of connections. Each query counts the rows (or
//! warehouses, districts, customers) that violate the condition: zero is a pass, and a count
//! the server answers with anything but a number is an error, never a pass.
//!
//! Before any condition, the database must hold the warehouses to check whole: an empty
//! one, a load that has not finished, or tables short of the rows the load puts and no
//! transaction removes (ITEM, WAREHOUSE, DISTRICT, CUSTOMER, STOCK, and the initial ORDERs)
//! is refused, since conditions over missing rows compare with nothing and pass.
//!
//! 3.3.2.11 (orders minus new orders = 2,100 per district) holds only for the initial
//! population: it is judged when dbperf's bookkeeping says no `tpcc run` touched the data,
//! skipped when it says one did, and on a database dbperf did not load (tpcc-mysql's) it
//! passes if it holds and is skipped, saying why, if it does not.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::load::{CUSTOMERS, DISTRICTS, ITEMS};
use super::prepare::{connect, meta, PrepareError};
use super::schema::{Schema, LOADED_TABLE};
use dbperf_driver::{doing, Failed, Session, Target};

/// Why the conditions were not evaluated.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The database does not hold the warehouses to check, whole.
    #[error("{0}")]
    NotLoaded(String),
    /// The server answered a count with something that is not a count.
    #[error("{what}: the server answered {got:?}, not a count")]
    Unreadable {
        /// Which count.
        what: String,
        /// The cell, `None` for no row or NULL.
        got: Option<String>,
    },
    /// The server refused a statement.
    #[error(transparent)]
    Db(#[from] Failed),
}

impl From<PrepareError> for CheckError {
    fn from(e: PrepareError) -> CheckError {
        match e {
            PrepareError::Conflict(m) => CheckError::NotLoaded(m),
            PrepareError::Db(f) | PrepareError::Ddl(crate::ddl::DdlError::Db(f)) => CheckError::Db(f),
            PrepareError::Ddl(crate::ddl::DdlError::Refused(m)) => CheckError::NotLoaded(m),
        }
    }
}

/// The one number `sql` answers; an error, naming `what`, when it is not a count.
pub async fn count<S: Session>(s: &mut S, sql: &str, what: &str) -> Result<u64, CheckError> {
    let rows = s.query_rows(sql).await.map_err(doing(what))?;
    let cell = rows.into_iter().next().and_then(|r| r.into_iter().next()).flatten();
    match cell.as_deref().map(str::parse::<u64>) {
        Some(Ok(n)) => Ok(n),
        _ => Err(CheckError::Unreadable {
            what: what.to_string(),
            got: cell,
        }),
    }
}

/// One condition: clause, what it says, and its per-warehouse query (`{w}` the warehouse,
/// `{no}` the NEW-ORDER table).
pub struct Condition {
    /// `3.3.2.x`
    pub clause: &'static str,
    /// The condition in words.
    pub text: &'static str,
    sql: &'static str,
}

/// Clause 3.3.2.1 to 3.3.2.12.
pub const CONDITIONS: [Condition; 12] = [
    Condition {
        clause: "3.3.2.1",
        text: "W_YTD = sum(D_YTD)",
        sql: "SELECT COUNT(*) FROM warehouse WHERE w_id = {w} AND w_ytd <> (SELECT COALESCE(SUM(d_ytd), 0) FROM district WHERE d_w_id = {w})",
    },
    Condition {
        clause: "3.3.2.2",
        text: "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
        sql: "SELECT COUNT(*) FROM district d WHERE d_w_id = {w} AND (d_next_o_id - 1 <> (SELECT COALESCE(MAX(o_id), 0) FROM orders WHERE o_w_id = {w} AND o_d_id = d.d_id) OR d_next_o_id - 1 <> (SELECT MAX(no_o_id) FROM {no} WHERE no_w_id = {w} AND no_d_id = d.d_id))",
    },
    Condition {
        clause: "3.3.2.3",
        text: "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER, per district",
        sql: "SELECT COUNT(*) FROM (SELECT MAX(no_o_id) - MIN(no_o_id) + 1 AS span, COUNT(*) AS n FROM {no} WHERE no_w_id = {w} GROUP BY no_d_id) x WHERE span <> n",
    },
    Condition {
        clause: "3.3.2.4",
        text: "sum(O_OL_CNT) = rows in ORDER-LINE, per district",
        sql: "SELECT COUNT(*) FROM district d WHERE d_w_id = {w} AND (SELECT COALESCE(SUM(o_ol_cnt), 0) FROM orders WHERE o_w_id = {w} AND o_d_id = d.d_id) <> (SELECT COUNT(*) FROM order_line WHERE ol_w_id = {w} AND ol_d_id = d.d_id)",
    },
    Condition {
        clause: "3.3.2.5",
        text: "O_CARRIER_ID is null iff the order is in NEW-ORDER",
        sql: "SELECT COUNT(*) FROM orders o LEFT JOIN {no} n ON n.no_w_id = o.o_w_id AND n.no_d_id = o.o_d_id AND n.no_o_id = o.o_id WHERE o.o_w_id = {w} AND (o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL)",
    },
    Condition {
        clause: "3.3.2.6",
        text: "O_OL_CNT = the order's rows in ORDER-LINE",
        sql: "SELECT COUNT(*) FROM orders o LEFT JOIN (SELECT ol_d_id, ol_o_id, COUNT(*) AS n FROM order_line WHERE ol_w_id = {w} GROUP BY ol_d_id, ol_o_id) l ON l.ol_d_id = o.o_d_id AND l.ol_o_id = o.o_id WHERE o.o_w_id = {w} AND COALESCE(l.n, 0) <> o.o_ol_cnt",
    },
    Condition {
        clause: "3.3.2.7",
        text: "OL_DELIVERY_D is null iff the order's O_CARRIER_ID is null",
        sql: "SELECT COUNT(*) FROM order_line l JOIN orders o ON o.o_w_id = l.ol_w_id AND o.o_d_id = l.ol_d_id AND o.o_id = l.ol_o_id WHERE l.ol_w_id = {w} AND (l.ol_delivery_d IS NULL) <> (o.o_carrier_id IS NULL)",
    },
    Condition {
        clause: "3.3.2.8",
        text: "W_YTD = sum(H_AMOUNT) of the warehouse",
        sql: "SELECT COUNT(*) FROM warehouse WHERE w_id = {w} AND w_ytd <> (SELECT COALESCE(SUM(h_amount), 0) FROM history WHERE h_w_id = {w})",
    },
    Condition {
        clause: "3.3.2.9",
        text: "D_YTD = sum(H_AMOUNT) of the district",
        sql: "SELECT COUNT(*) FROM district d WHERE d_w_id = {w} AND d_ytd <> (SELECT COALESCE(SUM(h_amount), 0) FROM history WHERE h_w_id = {w} AND h_d_id = d.d_id)",
    },
    Condition {
        clause: "3.3.2.10",
        text: "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)",
        sql: "SELECT COUNT(*) FROM customer c LEFT JOIN (SELECT o_d_id AS d, o_c_id AS c, SUM(ol_amount) AS s FROM orders JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE o_w_id = {w} AND ol_delivery_d IS NOT NULL GROUP BY o_d_id, o_c_id) a ON a.d = c.c_d_id AND a.c = c.c_id LEFT JOIN (SELECT h_c_d_id AS d, h_c_id AS c, SUM(h_amount) AS s FROM history WHERE h_c_w_id = {w} GROUP BY h_c_d_id, h_c_id) h ON h.d = c.c_d_id AND h.c = c.c_id WHERE c.c_w_id = {w} AND c.c_balance <> COALESCE(a.s, 0) - COALESCE(h.s, 0)",
    },
    Condition {
        clause: "3.3.2.11",
        text: "rows in ORDER - rows in NEW-ORDER = 2100, per district (initial population only)",
        sql: "SELECT COUNT(*) FROM district d WHERE d_w_id = {w} AND (SELECT COUNT(*) FROM orders WHERE o_w_id = {w} AND o_d_id = d.d_id) - (SELECT COUNT(*) FROM {no} WHERE no_w_id = {w} AND no_d_id = d.d_id) <> 2100",
    },
    Condition {
        clause: "3.3.2.12",
        text: "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)",
        sql: "SELECT COUNT(*) FROM customer c LEFT JOIN (SELECT o_d_id AS d, o_c_id AS c, SUM(ol_amount) AS s FROM orders JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id WHERE o_w_id = {w} AND ol_delivery_d IS NOT NULL GROUP BY o_d_id, o_c_id) a ON a.d = c.c_d_id AND a.c = c.c_id WHERE c.c_w_id = {w} AND c.c_balance + c.c_ytd_payment <> COALESCE(a.s, 0)",
    },
];

/// The outcome of one condition over all warehouses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No violation.
    Pass,
    /// Violations: (warehouse, violating rows), warehouses in order.
    Fail(Vec<(u32, u64)>),
    /// Not applicable, with the reason.
    Skip(&'static str),
}

/// One line of the check's report.
#[derive(Clone, Debug)]
pub struct CheckResult {
    /// Which condition.
    pub clause: &'static str,
    /// Its text.
    pub text: &'static str,
    /// The verdict.
    pub verdict: Verdict,
}

/// What dbperf's bookkeeping says about the data since it was loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum History {
    /// dbperf loaded it and no run has touched it.
    Initial,
    /// dbperf loaded it and a run has changed it.
    Changed,
    /// Another tool loaded it: no record.
    Unknown,
}

/// Evaluates every condition for warehouses `1..=warehouses` over up to `connections`
/// connections, once [`require_population`] finds them loaded.
pub async fn check(
    target: &Target,
    schema: &Schema,
    warehouses: u32,
    connections: u32,
) -> Result<Vec<CheckResult>, CheckError> {
    let mut admin = connect(target).await?;
    require_population(&mut admin, &target.database, warehouses).await?;
    // Only dbperf's load records its seed; `tpcc run` counts itself in `runs`.
    let history = match meta(&mut admin, "seed").await {
        None => History::Unknown,
        Some(_) if meta(&mut admin, "runs").await.unwrap_or(0) == 0 => History::Initial,
        Some(_) => History::Changed,
    };
    let jobs: Vec<(usize, u32)> = (0..CONDITIONS.len())
        .filter(|&i| history != History::Changed || CONDITIONS[i].clause != "3.3.2.11")
        .flat_map(|i| (1..=warehouses).map(move |w| (i, w)))
        .collect();
    let jobs = Arc::new(jobs);
    let next = Arc::new(AtomicUsize::new(0));
    let found = Arc::new(Mutex::new(Vec::<(usize, u32, u64)>::new()));
    let no = schema.new_order();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..(connections as usize).min(jobs.len()).max(1) {
        let (jobs, next, found, target) = (jobs.clone(), next.clone(), found.clone(), target.clone());
        tasks.spawn(async move {
            let mut s = connect(&target).await?;
            while let Some(&(i, w)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                let c = &CONDITIONS[i];
                let sql = c.sql.replace("{w}", &w.to_string()).replace("{no}", no);
                let bad = count(&mut s, &sql, &format!("checking {} on warehouse {w}", c.clause)).await?;
                if bad > 0 {
                    found.lock().expect("not poisoned").push((i, w, bad));
                }
            }
            Ok::<(), CheckError>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("check task panicked")?;
    }
    let mut found = found.lock().expect("not poisoned").clone();
    found.sort_unstable();
    Ok(CONDITIONS
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let bad: Vec<(u32, u64)> = found.iter().filter(|f| f.0 == i).map(|f| (f.1, f.2)).collect();
            let initial_only = c.clause == "3.3.2.11";
            let verdict = if initial_only && history == History::Changed {
                Verdict::Skip("applies to the initial population only, and a run has changed the data")
            } else if initial_only && history == History::Unknown && !bad.is_empty() {
                Verdict::Skip(
                    "does not hold, but it applies to the initial population only and dbperf did not load this \
                     database, so it cannot tell whether a run has changed it",
                )
            } else if bad.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Fail(bad)
            };
            CheckResult {
                clause: c.clause,
                text: c.text,
                verdict,
            }
        })
        .collect())
}

/// Refuses to check warehouses `1..=warehouses` of `database` unless they are all there:
/// at least one, a dbperf load (if dbperf loaded it) that finished, and every table the
/// transactions never shrink holding at least the rows the load puts in it (exactly, for
/// those they never grow).
pub async fn require_population<S: Session>(s: &mut S, database: &str, warehouses: u32) -> Result<(), CheckError> {
    let load = "load it with `dbperf tpcc prepare --warehouses N` (same --target and --schema)";
    if warehouses == 0 {
        return Err(CheckError::NotLoaded(format!(
            "{database} holds no warehouse: there is nothing to check; {load}"
        )));
    }
    if meta(s, "seed").await.is_some() && meta(s, "ready").await != Some(1) {
        let done = count(
            s,
            &format!("SELECT COUNT(*) FROM {LOADED_TABLE}"),
            "reading load progress",
        )
        .await?;
        let planned = meta(s, "warehouses").await.unwrap_or(0);
        return Err(CheckError::NotLoaded(format!(
            "the load of {database} has not finished ({done} of {} unit(s) in, indexes last): run the same \
             `dbperf tpcc prepare --warehouses {planned}` again to finish it, then check",
            planned + 1
        )));
    }
    let w = i64::from(warehouses);
    let in_range = |col: &str| format!("{col} BETWEEN 1 AND {w}");
    // (table, rows counted, rows the load puts, exact: no transaction adds any)
    let tables = [
        ("item", "SELECT COUNT(*) FROM item".to_string(), ITEMS, true),
        (
            "warehouse",
            format!("SELECT COUNT(*) FROM warehouse WHERE {}", in_range("w_id")),
            w,
            true,
        ),
        (
            "district",
            format!("SELECT COUNT(*) FROM district WHERE {}", in_range("d_w_id")),
            w * DISTRICTS,
            true,
        ),
        (
            "customer",
            format!("SELECT COUNT(*) FROM customer WHERE {}", in_range("c_w_id")),
            w * DISTRICTS * CUSTOMERS,
            true,
        ),
        (
            "stock",
            format!("SELECT COUNT(*) FROM stock WHERE {}", in_range("s_w_id")),
            w * ITEMS,
            true,
        ),
        (
            "orders",
            format!("SELECT COUNT(*) FROM orders WHERE {}", in_range("o_w_id")),
            w * DISTRICTS * CUSTOMERS,
            false,
        ),
    ];
    for (table, sql, loaded, exact) in tables {
        let n = count(s, &sql, &format!("counting the rows of {table}")).await? as i64;
        if n < loaded || (exact && n > loaded) {
            let which = if table == "item" {
                String::new()
            } else {
                format!(" for warehouses 1 to {w}")
            };
            let want = if exact { "" } else { "at least " };
            return Err(CheckError::NotLoaded(if table == "warehouse" {
                format!("{database} holds {n} of warehouses 1 to {w}: check fewer with --warehouses, or {load}")
            } else {
                format!(
                    "{table} in {database} holds {n} rows{which}, where the load puts {want}{loaded}: the data is \
                     partial, so the conditions would compare with missing rows; finish the load (the same \
                     `dbperf tpcc prepare`) or redo it (`dbperf tpcc cleanup`, then `prepare`)"
                )
            }));
        }
    }
    Ok(())
}

/// The report: one line per condition.
pub fn report(results: &[CheckResult], warehouses: u32) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for r in results {
        let verdict = match &r.verdict {
            Verdict::Pass => format!("PASS ({warehouses} warehouse(s))"),
            Verdict::Skip(why) => format!("SKIP ({why})"),
            Verdict::Fail(bad) => {
                let list: Vec<String> = bad.iter().take(5).map(|(w, n)| format!("w_id {w}: {n}")).collect();
                format!("FAIL (violations by warehouse: {})", list.join(", "))
            }
        };
        let _ = writeln!(s, "{:<9} {:<70} {verdict}", r.clause, r.text);
    }
    s
}

/// The whole text of `tpcc check`: the heading, one line per condition ([`report`]) and
/// the verdict with the time the check took.
pub fn check_text(results: &[CheckResult], warehouses: u32, took: std::time::Duration) -> String {
    format!(
        "Consistency conditions (TPC-C clause 3.3.2), {warehouses} warehouse(s):\n{}{} in {:.1} s\n",
        report(results, warehouses),
        if all_passed(results) {
            "All conditions hold"
        } else {
            "Some conditions FAILED"
        },
        took.as_secs_f64()
    )
}

/// The warehouses a database holds (`tpcc check` without `--warehouses`); a database without
/// a warehouse table is refused with the command that loads one.
pub async fn loaded_warehouses<S: Session>(s: &mut S, database: &str) -> Result<u32, CheckError> {
    let n = count(s, "SELECT COUNT(*) FROM warehouse", "counting warehouses")
        .await
        .map_err(|e| {
            CheckError::NotLoaded(format!(
                "{e}: is {database} a TPC-C database? run `dbperf tpcc prepare` first"
            ))
        })?;
    u32::try_from(n).map_err(|_| CheckError::Unreadable {
        what: "counting warehouses".into(),
        got: Some(n.to_string()),
    })
}

/// True when no condition failed.
pub fn all_passed(results: &[CheckResult]) -> bool {
    results.iter().all(|r| !matches!(r.verdict, Verdict::Fail(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(verdict: Verdict) -> CheckResult {
        CheckResult {
            clause: "3.3.2.1",
            text: "W_YTD = sum(D_YTD)",
            verdict,
        }
    }

    #[test]
    fn the_check_text_gives_each_condition_and_the_verdict() {
        let took = std::time::Duration::from_millis(1500);
        let ok = check_text(
            &[result(Verdict::Pass), result(Verdict::Skip("a run changed the data"))],
            2,
            took,
        );
        assert!(
            ok.starts_with("Consistency conditions (TPC-C clause 3.3.2), 2 warehouse(s):\n"),
            "{ok}"
        );
        assert!(
            ok.contains("PASS (2 warehouse(s))") && ok.contains("SKIP (a run changed the data)"),
            "{ok}"
        );
        assert!(ok.ends_with("All conditions hold in 1.5 s\n"), "{ok}");
        let bad = check_text(&[result(Verdict::Pass), result(Verdict::Fail(vec![(2, 3)]))], 2, took);
        assert!(bad.contains("FAIL (violations by warehouse: w_id 2: 3)"), "{bad}");
        assert!(bad.ends_with("Some conditions FAILED in 1.5 s\n"), "{bad}");
    }
}
