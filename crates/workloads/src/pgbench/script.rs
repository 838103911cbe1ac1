//! pgbench's built-in scripts as one [`Worker`] per connection, with pgbench's random
//! draws (`\set aid random(1, 100000 * :scale)` etc., uniform) and its statements sent as
//! `pgbench -M simple` (the default: the values written into the text) or `-M prepared`
//! (prepared once per connection, the values bound) sends them; `-M extended` runs the
//! built-ins as scripts ([`super::lang`]):
//!
//! ```text
//! tpcb-like:     BEGIN; UPDATE accounts; SELECT abalance; UPDATE tellers; UPDATE branches;
//!                INSERT INTO history; END;
//! simple-update: BEGIN; UPDATE accounts; SELECT abalance; INSERT INTO history; END;
//! select-only:   SELECT abalance;
//! ```
//!
//! On an error inside the transaction the worker rolls back before returning, so a retried
//! transaction never continues a failed one.

use std::fmt::Write as _;
use std::str::FromStr;

use dbperf_engine::clock::now_ns;
use dbperf_engine::{OpTable, QueryClass, StatementLog, TxnDone, TxnError, Worker, Workload};
use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::lang::exec::QueryMode;
use super::{ACCOUNTS_PER_SCALE, BRANCHES_PER_SCALE, TELLERS_PER_SCALE};
use crate::sysbench::rand::uniform;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::{abort_transaction, DbError, Param, Session, StmtId, Target};

/// A built-in script (`pgbench -b NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// TPC-B (sort of), pgbench's default.
    TpcbLike,
    /// No updates on tellers and branches (`-N`).
    SimpleUpdate,
    /// Only the account SELECT (`-S`).
    SelectOnly,
}

impl Script {
    /// Every script.
    pub const ALL: [Script; 3] = [Script::TpcbLike, Script::SimpleUpdate, Script::SelectOnly];

    /// pgbench's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Script::TpcbLike => "tpcb-like",
            Script::SimpleUpdate => "simple-update",
            Script::SelectOnly => "select-only",
        }
    }

    /// The statements of one transaction, in order.
    pub fn statements(self) -> &'static [Kind] {
        use Kind::*;
        match self {
            Script::TpcbLike => &[
                Begin,
                UpdateAccount,
                SelectAccount,
                UpdateTeller,
                UpdateBranch,
                InsertHistory,
                End,
            ],
            Script::SimpleUpdate => &[Begin, UpdateAccount, SelectAccount, InsertHistory, End],
            Script::SelectOnly => &[SelectAccount],
        }
    }
}

/// The `\set` lines pgbench's built-ins start with.
const DRAWS: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
";

impl Script {
    /// The script in pgbench's language (as `pgbench --show-script` prints it), for runs
    /// that mix it with script files (`-b NAME@W -f FILE@W`).
    pub fn text(self) -> String {
        let body = match self {
            Script::TpcbLike => {
                "BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"
            }
            Script::SimpleUpdate => {
                "BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"
            }
            Script::SelectOnly => return "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n".into(),
        };
        format!("{DRAWS}{body}")
    }

    /// pgbench's "transaction type" for it.
    pub fn description(self) -> &'static str {
        match self {
            Script::TpcbLike => "<builtin: TPC-B (sort of)>",
            Script::SimpleUpdate => "<builtin: simple update>",
            Script::SelectOnly => "<builtin: select only>",
        }
    }

    /// The built-in `name` abbreviates, as pgbench's `-b` takes a unique prefix
    /// (`tpcb`, `simple`, `select`).
    pub fn by_prefix(name: &str) -> Result<Script, String> {
        let found: Vec<Script> = Script::ALL
            .into_iter()
            .filter(|s| !name.is_empty() && s.name().starts_with(name))
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(format!(
                "no builtin script found for name \"{name}\": use tpcb-like, simple-update or select-only (or a unique prefix)"
            )),
            _ => Err(format!(
                "ambiguous builtin name: {} builtin scripts found for prefix \"{name}\" ({})",
                found.len(),
                found.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
            )),
        }
    }
}

impl FromStr for Script {
    type Err = String;

    fn from_str(s: &str) -> Result<Script, String> {
        Script::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| format!("unknown pgbench script {s:?}: use tpcb-like, simple-update or select-only"))
    }
}

/// `sql` with each `?` replaced by its value, into `out` (`-M simple`).
fn simple_text(sql: &str, values: &[i64], out: &mut String) {
    out.clear();
    let mut values = values.iter();
    for (i, piece) in sql.split('?').enumerate() {
        if i > 0 {
            if let Some(v) = values.next() {
                let _ = write!(out, "{v}");
            }
        }
        out.push_str(piece);
    }
}

/// Statement kinds, in [`OpTable::statements`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Kind {
    /// `BEGIN`
    Begin,
    /// `UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid`
    UpdateAccount,
    /// `SELECT abalance FROM pgbench_accounts WHERE aid = :aid`
    SelectAccount,
    /// `UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid`
    UpdateTeller,
    /// `UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid`
    UpdateBranch,
    /// `INSERT INTO pgbench_history ...`
    InsertHistory,
    /// `END`
    End,
}

const KINDS: [(Kind, &str, &str); 7] = [
    (Kind::Begin, "begin", "BEGIN"),
    (
        Kind::UpdateAccount,
        "update_account",
        "UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?",
    ),
    (
        Kind::SelectAccount,
        "select_account",
        "SELECT abalance FROM pgbench_accounts WHERE aid = ?",
    ),
    (
        Kind::UpdateTeller,
        "update_teller",
        "UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?",
    ),
    (
        Kind::UpdateBranch,
        "update_branch",
        "UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?",
    ),
    (
        Kind::InsertHistory,
        "insert_history",
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, CURRENT_TIMESTAMP)",
    ),
    (Kind::End, "end", "END"),
];

/// A pgbench run's definition, on sessions of type `S`.
pub struct PgbenchWorkload<S> {
    script: Script,
    mode: QueryMode,
    scale: i64,
    target: Target,
    ignore: IgnoreErrors,
    seed: u64,
    session: std::marker::PhantomData<fn() -> S>,
}

impl<S: Session + 'static> PgbenchWorkload<S> {
    /// `script` sent as `mode` (simple or prepared) on tables of `scale` (read from
    /// `pgbench_branches`) at `target`. `-M extended` is the scripts' ([`super::lang`]).
    pub fn new(
        script: Script,
        mode: QueryMode,
        scale: i64,
        target: Target,
        ignore: IgnoreErrors,
        seed: u64,
    ) -> Result<PgbenchWorkload<S>, String> {
        if mode == QueryMode::Extended {
            return Err(format!(
                "the built-in {} is sent simple or prepared here; -M extended runs it as a script",
                script.name()
            ));
        }
        Ok(PgbenchWorkload {
            script,
            mode,
            scale,
            target,
            ignore,
            seed,
            session: std::marker::PhantomData,
        })
    }
}

impl<S: Session + 'static> Workload for PgbenchWorkload<S> {
    type Worker = PgbenchWorker<S>;

    fn ops(&self) -> OpTable {
        OpTable {
            transactions: vec![self.script.name().to_string()],
            statements: KINDS.iter().map(|(_, n, _)| n.to_string()).collect(),
        }
    }

    async fn connect(&self, worker: usize) -> Result<PgbenchWorker<S>, TxnError> {
        let session = S::connect(&self.target, self.ignore.clone()).await?;
        let mut w = PgbenchWorker {
            session,
            script: self.script,
            scale: self.scale,
            rng: SmallRng::seed_from_u64(
                self.seed
                    .wrapping_add(0x5851_f42d_4c95_7f2d_u64.wrapping_mul(worker as u64 + 1)),
            ),
            stmts: [None; KINDS.len()],
            mode: self.mode,
            sql: String::with_capacity(256),
        };
        w.prepare_statements().await?;
        Ok(w)
    }
}

/// One pgbench client.
pub struct PgbenchWorker<S: Session> {
    session: S,
    script: Script,
    scale: i64,
    rng: SmallRng,
    stmts: [Option<StmtId>; KINDS.len()],
    mode: QueryMode,
    /// `-M simple`: the statement's text with its values, reused.
    sql: String,
}

impl<S: Session> PgbenchWorker<S> {
    async fn prepare_statements(&mut self) -> Result<(), DbError> {
        self.stmts = [None; KINDS.len()];
        if self.mode == QueryMode::Simple {
            return Ok(());
        }
        for &k in self.script.statements() {
            self.stmts[k as usize] = Some(self.session.prepare(KINDS[k as usize].2).await?);
        }
        Ok(())
    }

    /// `random(lo, hi)`, inclusive.
    fn random(&mut self, lo: i64, hi: i64) -> i64 {
        lo + uniform(&mut self.rng, 0, (hi - lo) as u32) as i64
    }

    async fn transaction(&mut self, log: &mut StatementLog) -> Result<(), DbError> {
        let aid = self.random(1, ACCOUNTS_PER_SCALE * self.scale);
        let bid = self.random(1, BRANCHES_PER_SCALE * self.scale);
        let tid = self.random(1, TELLERS_PER_SCALE * self.scale);
        let delta = self.random(-5000, 5000);
        for &k in self.script.statements() {
            let (buf, n) = match k {
                Kind::Begin | Kind::End => ([aid; 4], 0),
                Kind::UpdateAccount => ([delta, aid, aid, aid], 2),
                Kind::SelectAccount => ([aid; 4], 1),
                Kind::UpdateTeller => ([delta, tid, tid, tid], 2),
                Kind::UpdateBranch => ([delta, bid, bid, bid], 2),
                Kind::InsertHistory => ([tid, bid, aid, delta], 4),
            };
            let start = now_ns();
            let info = match self.stmts[k as usize] {
                Some(stmt) => {
                    let params = buf.map(Param::Int);
                    self.session.exec(stmt, &params[..n]).await?
                }
                None => {
                    simple_text(KINDS[k as usize].2, &buf[..n], &mut self.sql);
                    self.session.query(&self.sql).await?
                }
            };
            let class = match k {
                Kind::SelectAccount => QueryClass::Read,
                Kind::Begin | Kind::End => QueryClass::Other,
                _ if info.affected_rows > 0 => QueryClass::Write,
                _ => QueryClass::Other,
            };
            log.record(k as u16, start, class);
        }
        Ok(())
    }
}

impl<S: Session> Worker for PgbenchWorker<S> {
    async fn execute(&mut self, log: &mut StatementLog) -> Result<TxnDone, TxnError> {
        match self.transaction(log).await {
            Ok(()) => Ok(TxnDone::committed(0)),
            Err(e) if self.script != Script::SelectOnly => Err(abort_transaction(&mut self.session, e).await),
            Err(e) => Err(e.into()),
        }
    }

    async fn reconnect(&mut self) -> Result<(), TxnError> {
        self.session.reconnect().await?;
        self.prepare_statements().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_mode_writes_the_values_in() {
        let mut out = String::new();
        simple_text(KINDS[Kind::UpdateAccount as usize].2, &[-42, 7], &mut out);
        assert_eq!(
            out,
            "UPDATE pgbench_accounts SET abalance = abalance + -42 WHERE aid = 7"
        );
        simple_text(KINDS[Kind::Begin as usize].2, &[], &mut out);
        assert_eq!(out, "BEGIN");
    }

    #[test]
    fn kinds_table_is_in_enum_order() {
        for (i, (k, _, _)) in KINDS.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }

    #[test]
    fn script_names_round_trip() {
        for s in Script::ALL {
            assert_eq!(s.name().parse::<Script>().unwrap(), s);
        }
        assert!("tpcb".parse::<Script>().unwrap_err().contains("tpcb-like"));
        assert_eq!(Script::by_prefix("tpcb").unwrap(), Script::TpcbLike);
        assert_eq!(Script::by_prefix("sel").unwrap(), Script::SelectOnly);
        assert!(Script::by_prefix("s").unwrap_err().contains("ambiguous"));
        assert!(Script::by_prefix("x")
            .unwrap_err()
            .contains("no builtin script found for name \"x\""));
    }

    #[test]
    fn builtin_texts_parse_into_the_same_statements() {
        for s in Script::ALL {
            let mut p = crate::pgbench::lang::parse::Parsed::default();
            p.add(s.name(), s.name(), &s.text()).unwrap();
            assert_eq!(p.statements.len(), s.statements().len(), "{}", s.name());
            for (st, k) in p.statements.iter().zip(s.statements()) {
                let (_, _, sql) = KINDS[*k as usize];
                // Same SQL with :variables where the built-in binds parameters.
                assert_eq!(
                    st.placeholders.split('?').count(),
                    sql.split('?').count(),
                    "{}",
                    st.placeholders
                );
            }
        }
    }
}
