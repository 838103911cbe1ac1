//! The PostgreSQL session on `tokio-postgres` (`--client-impl tokio-postgres`, the
//! reference [`super::pgwire::PgWireSession`] is measured and tested against), and the
//! SQLSTATE → [`ErrorClass`] table both sessions classify by.
//!
//! Workloads write `?` placeholders; [`translate_placeholders`] turns them into `$1..$n`
//! outside strings, identifiers and comments. Parameters are encoded for the type the
//! server inferred for each placeholder (an `Int` bound to a `text` column goes as its
//! digits, `Bytes` bound to an `int4` as the parsed number), so a workload binds the same
//! [`Param`]s on MySQL and PostgreSQL. Result cells keep integers and floats binary;
//! `numeric` is decoded to its decimal text, everything else is kept as the bytes sent
//! (the encodings live in [`super::pgwire::types`], shared by both sessions).

use std::collections::BTreeSet;
use std::error::Error as _;

use bytes::{Bytes, BytesMut};
use dbperf_engine::ErrorClass;
use futures_util::{SinkExt, TryStreamExt};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};
use tokio_postgres::{Client, Config, NoTls, SimpleQueryMessage, Statement};

use super::mysql::IgnoreErrors;
use super::pgwire::types::{encode_param, push_cell};
use super::{DbError, ExecInfo, Param, Rows, Session, StmtId, Target};

/// SQLSTATEs sysbench's pgsql driver treats as ignorable, and dbperf's default for
/// PostgreSQL targets: deadlock, serialization failure, unique violation.
pub const DEFAULT_IGNORED: &[&str] = &["40P01", "40001", "23505"];

/// SQLSTATEs (and classes, as two-character prefixes) that mean the connection is gone:
/// connection exceptions, and the server terminating the backend or shutting down.
const CONNECTION_GONE: &[&str] = &["08", "57P01", "57P02", "57P03", "57P05"];

/// Classifies a SQLSTATE. Connection loss is always reconnected; any other state is
/// retried only when `ignore` lists it, and is then counted by kind.
pub fn classify(sqlstate: &str, ignore: &IgnoreErrors) -> ErrorClass {
    if CONNECTION_GONE.iter().any(|g| sqlstate.starts_with(g)) {
        return ErrorClass::ConnectionLost;
    }
    if !ignore.contains_sqlstate(sqlstate) {
        return ErrorClass::Fatal;
    }
    match sqlstate {
        "40P01" => ErrorClass::Deadlock,
        "40001" => ErrorClass::Serialization,
        // lock_not_available (lock_timeout, NOWAIT) and query_canceled (statement_timeout).
        "55P03" | "57014" => ErrorClass::LockWaitTimeout,
        "23505" => ErrorClass::UniqueViolation,
        _ => ErrorClass::Ignored,
    }
}

/// Rewrites `?` placeholders as `$1`, `$2`, ... outside quoted strings, quoted
/// identifiers, dollar-quoted strings and comments.
pub fn translate_placeholders(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 2;
            }
            b'$' => {
                // A dollar quote: $tag$ ... $tag$ (a `$1` parameter is not one).
                let tag_end = b[i + 1..]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
                    .map(|p| i + 1 + p);
                match tag_end {
                    Some(e) if b[e] == b'$' && !b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                        let tag = &sql[i..=e];
                        i = sql[e + 1..].find(tag).map_or(b.len(), |p| e + 1 + p + tag.len());
                    }
                    _ => i += 1,
                }
            }
            b'?' => {
                n += 1;
                out.push_str(&sql[copied..i]);
                out.push('$');
                out.push_str(&n.to_string());
                i += 1;
                copied = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[copied.min(sql.len())..]);
    out
}

/// A PostgreSQL session.
pub struct PgSession {
    client: Option<Client>,
    config: Config,
    statements: Vec<Statement>,
    ignore: IgnoreErrors,
    version: String,
}

/// A [`Param`] encoded for the type the server expects; [`Param::Null`] answers
/// [`IsNull::Yes`], as an `Option` that is `None` would.
#[derive(Debug)]
struct Bind<'a>(Param<'a>);

impl ToSql for Bind<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        encode_param(ty, self.0, out)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// A result cell's bytes as the server sent them (binary format).
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Raw<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Raw<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

impl PgSession {
    fn config(t: &Target) -> Config {
        let mut c = Config::new();
        c.user(&t.user)
            .dbname(&t.database)
            .port(t.port)
            .application_name("dbperf");
        // Server options from PGOPTIONS, as libpq sends them.
        if let Some(o) = std::env::var("PGOPTIONS").ok().filter(|o| !o.trim().is_empty()) {
            c.options(&o);
        }
        if !t.password.is_empty() {
            c.password(&t.password);
        }
        match &t.socket {
            Some(dir) => c.host_path(dir),
            None => c.host(&t.host),
        };
        c
    }

    async fn open(&mut self) -> Result<(), DbError> {
        let (client, connection) = self.config.connect(NoTls).await.map_err(|e| {
            // tokio-postgres names the failed connect in the error and the reason in its source.
            match e.source().and_then(|s| s.downcast_ref::<std::io::Error>()) {
                Some(io) if e.as_db_error().is_none() => {
                    super::cannot_connect_to(super::target::Family::Postgres, false, io)
                }
                _ => self.err(e),
            }
        })?;
        tokio::spawn(async move {
            // Errors surface on the client's next request as a closed connection.
            let _ = connection.await;
        });
        self.client = Some(client);
        self.statements.clear();
        let v = self.query_rows("SHOW server_version").await?;
        self.version = v.first().and_then(|r| r.first().cloned().flatten()).unwrap_or_default();
        Ok(())
    }

    fn client(&self) -> Result<&Client, DbError> {
        self.client.as_ref().ok_or_else(|| DbError {
            class: ErrorClass::ConnectionLost,
            code: None,
            sqlstate: None,
            message: "not connected".into(),
        })
    }

    fn statement(&self, stmt: StmtId) -> Result<&Statement, DbError> {
        self.statements.get(stmt.0 as usize).ok_or_else(|| DbError {
            class: ErrorClass::Fatal,
            code: None,
            sqlstate: None,
            message: format!("statement {} was not prepared on this session", stmt.0),
        })
    }

    /// Classifies a driver error: a server error by its SQLSTATE, a closed connection or
    /// an I/O failure as connection loss, anything else (a parameter that would not
    /// encode, a protocol surprise) as fatal.
    fn err(&self, e: tokio_postgres::Error) -> DbError {
        self.err_in(e, None)
    }

    /// [`Self::err`] of what `sql` was sent for: a server error's position is shown in it.
    fn err_in(&self, e: tokio_postgres::Error, sql: Option<&str>) -> DbError {
        if let Some(db) = e.as_db_error() {
            let position = match db.position() {
                Some(tokio_postgres::error::ErrorPosition::Original(p)) => Some(*p as usize),
                _ => None,
            };
            let state = db.code().code();
            return DbError {
                class: classify(state, &self.ignore),
                code: None,
                sqlstate: Some(state.to_string()),
                message: server_message(
                    db.severity(),
                    db.message(),
                    state,
                    sql.zip(position),
                    [db.detail(), db.hint(), db.where_()],
                ),
            };
        }
        let io = e.source().is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some());
        DbError {
            class: if e.is_closed() || io {
                ErrorClass::ConnectionLost
            } else {
                ErrorClass::Fatal
            },
            code: None,
            sqlstate: None,
            message: match e.source() {
                Some(s) => format!("{e}: {s}"),
                None => e.to_string(),
            },
        }
    }

    /// Runs `COPY ... FROM STDIN` statement `sql`, sending `chunks` (COPY text format) as
    /// they come; returns the rows copied.
    pub async fn copy_in(&mut self, sql: &str, chunks: impl Iterator<Item = Bytes>) -> Result<u64, DbError> {
        let client = self.client()?;
        let sink = client
            .copy_in::<_, Bytes>(sql)
            .await
            .map_err(|e| self.err_in(e, Some(sql)))?;
        futures_util::pin_mut!(sink);
        for chunk in chunks {
            sink.send(chunk).await.map_err(|e| self.err(e))?;
        }
        sink.as_mut().finish().await.map_err(|e| self.err(e))
    }

    /// Like [`PgSession::copy_in`], from a stream: a chunk is sent as soon as it is made,
    /// so a generator can run ahead of the connection without the whole table in memory.
    pub async fn copy_in_stream(
        &mut self,
        sql: &str,
        chunks: impl futures_util::Stream<Item = std::io::Result<Bytes>>,
    ) -> Result<u64, DbError> {
        let client = self.client()?;
        let sink = client
            .copy_in::<_, Bytes>(sql)
            .await
            .map_err(|e| self.err_in(e, Some(sql)))?;
        futures_util::pin_mut!(sink);
        futures_util::pin_mut!(chunks);
        while let Some(chunk) = futures_util::StreamExt::next(&mut chunks).await {
            let chunk = chunk.map_err(|e| DbError {
                class: dbperf_engine::ErrorClass::Fatal,
                code: None,
                sqlstate: None,
                message: format!("producing COPY data: {e}"),
            })?;
            sink.send(chunk).await.map_err(|e| self.err(e))?;
        }
        sink.as_mut().finish().await.map_err(|e| self.err(e))
    }
}

impl Session for PgSession {
    const MULTI_STATEMENT_QUERIES: bool = true;
    const EMPTY_QUERIES: bool = true;

    async fn connect(target: &Target, ignore: IgnoreErrors) -> Result<PgSession, DbError> {
        require_postgres(target)?;
        let mut s = PgSession {
            client: None,
            config: Self::config(target),
            statements: Vec::new(),
            ignore,
            version: String::new(),
        };
        s.open().await.map_err(|e| DbError {
            message: cannot_connect_message(target, &e),
            ..e
        })?;
        Ok(s)
    }

    async fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let sql = translate_placeholders(sql);
        let stmt = self
            .client()?
            .prepare(&sql)
            .await
            .map_err(|e| self.err_in(e, Some(&sql)))?;
        self.statements.push(stmt);
        Ok(StmtId(self.statements.len() as u32 - 1))
    }

    async fn exec(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<ExecInfo, DbError> {
        let (client, statement) = (self.client()?, self.statement(stmt)?);
        match client.execute_raw(statement, params.iter().map(|&p| Bind(p))).await {
            Ok(n) => Ok(ExecInfo { affected_rows: n }),
            Err(e) => Err(self.err(e)),
        }
    }

    async fn exec_rows(&mut self, stmt: StmtId, params: &[Param<'_>], rows: &mut Rows) -> Result<ExecInfo, DbError> {
        let (client, statement) = (self.client()?, self.statement(stmt)?);
        let stream = match client.query_raw(statement, params.iter().map(|&p| Bind(p))).await {
            Ok(s) => s,
            Err(e) => return Err(self.err(e)),
        };
        let types: Vec<Type> = statement.columns().iter().map(|c| c.type_().clone()).collect();
        rows.reset(types.len());
        futures_util::pin_mut!(stream);
        let mut n = 0;
        while let Some(row) = stream.try_next().await.map_err(|e| self.err(e))? {
            n += 1;
            for (i, ty) in types.iter().enumerate() {
                let Raw(v) = row.try_get::<_, Raw<'_>>(i).map_err(|e| self.err(e))?;
                push_cell(rows, ty, v);
            }
        }
        Ok(ExecInfo { affected_rows: n })
    }

    async fn query(&mut self, sql: &str) -> Result<ExecInfo, DbError> {
        let msgs = self
            .client()?
            .simple_query(sql)
            .await
            .map_err(|e| self.err_in(e, Some(sql)))?;
        let affected_rows = msgs
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::CommandComplete(n) => Some(*n),
                _ => None,
            })
            .last()
            .unwrap_or(0);
        Ok(ExecInfo { affected_rows })
    }

    async fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        let msgs = self
            .client()?
            .simple_query(sql)
            .await
            .map_err(|e| self.err_in(e, Some(sql)))?;
        Ok(msgs
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_owned)).collect()),
                _ => None,
            })
            .collect())
    }

    async fn reconnect(&mut self) -> Result<(), DbError> {
        // Dropping the client ends the old connection task without waiting for it.
        self.client = None;
        self.open().await
    }

    fn server_version(&self) -> String {
        self.version.clone()
    }
}

/// Refuses a target that is not PostgreSQL, naming what to do instead.
/// A PostgreSQL server error as dbperf's sessions word it: `SEVERITY: message (SQLSTATE
/// code)`, then, when the server sent them, its `DETAIL:  `, `HINT:  ` and `CONTEXT:  `
/// lines as libpq prints them ([`libpq_text`] gives the whole of it in libpq's shape).
/// With `at`, the SQL text sent and the error's position in it (the ErrorResponse's `P`: a
/// character, from 1), libpq's `LINE N: ...` line and caret follow the first line
/// ([`position_lines`]).
pub fn server_message(
    severity: &str,
    message: &str,
    sqlstate: &str,
    at: Option<(&str, usize)>,
    extra: [Option<&str>; 3],
) -> String {
    let mut out = format!("{severity}: {message} (SQLSTATE {sqlstate})");
    if let Some(lines) = at.and_then(|(sql, position)| position_lines(sql, position)) {
        out.push('\n');
        out.push_str(&lines);
    }
    for (label, text) in ["DETAIL", "HINT", "CONTEXT"].iter().zip(extra) {
        if let Some(t) = text {
            out.push_str(&format!("\n{label}:  {t}"));
        }
    }
    out
}

/// libpq's lines under a server error that has a position: the SQL's line holding it, as
/// `LINE N: text`, and a caret under the character (tabs shown as spaces). A line wider than
/// 60 columns is cut, with `...`, to keep the caret at least 10 columns from its right end, as
/// libpq cuts it. `None` for a position outside the text.
pub fn position_lines(sql: &str, position: usize) -> Option<String> {
    const WIDTH: usize = 60;
    const RIGHT_MARGIN: usize = 10;
    let at = position.checked_sub(1)?;
    let mut start = 0;
    for (n, line) in sql.split('\n').enumerate() {
        let line: Vec<char> = line.chars().map(|c| if c == '\t' { ' ' } else { c }).collect();
        if at > start + line.len() {
            start += line.len() + 1;
            continue;
        }
        let column = at - start;
        let (mut from, mut to) = (0, line.len());
        if to > WIDTH {
            if column + RIGHT_MARGIN < WIDTH {
                to = WIDTH;
            } else {
                to = to.min(column + RIGHT_MARGIN);
                from = to.saturating_sub(WIDTH);
            }
        }
        let head = format!("LINE {}: {}", n + 1, if from > 0 { "..." } else { "" });
        let text: String = line[from..to].iter().collect();
        let tail = if to < line.len() { "..." } else { "" };
        let pad = head.chars().count() + column - from;
        return Some(format!("{head}{text}{tail}\n{:pad$}^", ""));
    }
    None
}

/// A server error as libpq prints it (what pgbench shows): `ERROR:  message` (two spaces,
/// no SQLSTATE), then the `DETAIL:`/`HINT:`/`CONTEXT:` lines [`server_message`] kept. Any
/// other error's message is returned as it is.
pub fn libpq_text(e: &DbError) -> std::borrow::Cow<'_, str> {
    let Some(state) = &e.sqlstate else {
        return e.message.as_str().into();
    };
    let (first, rest) = match e.message.split_once('\n') {
        Some((f, r)) => (f, Some(r)),
        None => (e.message.as_str(), None),
    };
    let suffix = format!(" (SQLSTATE {state})");
    let Some((severity, message)) = first.strip_suffix(suffix.as_str()).and_then(|f| f.split_once(": ")) else {
        return e.message.as_str().into();
    };
    let mut out = format!("{severity}:  {message}");
    if let Some(r) = rest {
        out.push('\n');
        out.push_str(r);
    }
    out.into()
}

/// Why a session to `target` could not be opened, with libpq's words for the server's
/// answer (`connection to server on socket "/tmp/.s.PGSQL.5432" failed: FATAL:  database
/// "x" does not exist`), as pgbench prints it.
pub fn cannot_connect_message(target: &Target, e: &DbError) -> String {
    let at = match &target.socket {
        Some(dir) => format!("on socket \"{dir}/.s.PGSQL.{}\"", target.port),
        None => format!("at \"{}\", port {}", target.host, target.port),
    };
    format!(
        "cannot connect to PostgreSQL as {} (database {}): connection to server {at} failed: {}",
        target.user,
        target.database,
        libpq_text(e)
    )
}

pub fn require_postgres(target: &Target) -> Result<(), DbError> {
    match target.family {
        super::target::Family::Postgres => Ok(()),
        super::target::Family::Mysql => Err(DbError {
            class: ErrorClass::Fatal,
            code: None,
            sqlstate: None,
            message: format!(
                "{} is a MySQL-protocol target, and this needs PostgreSQL; use a postgres:// target",
                target.redacted()
            ),
        }),
    }
}

/// Parses `--pgsql-ignore-errors`: `all`, `none` or a comma-separated SQLSTATE list.
pub fn parse_ignore(s: &str) -> Result<IgnoreErrors, String> {
    let s = s.trim();
    if s.eq_ignore_ascii_case("all") {
        return Ok(IgnoreErrors::All);
    }
    if s.is_empty() || s.eq_ignore_ascii_case("none") {
        return Ok(IgnoreErrors::Sqlstates(BTreeSet::new()));
    }
    s.split(',')
        .map(|c| {
            let c = c.trim();
            if c.len() == 5 && c.bytes().all(|b| b.is_ascii_alphanumeric()) {
                Ok(c.to_ascii_uppercase())
            } else {
                Err(format!(
                    "--pgsql-ignore-errors: {c:?} is not a SQLSTATE; use five-character codes like 40P01,40001,23505, 'none' or 'all'"
                ))
            }
        })
        .collect::<Result<_, _>>()
        .map(IgnoreErrors::Sqlstates)
}

/// dbperf's default for PostgreSQL: [`DEFAULT_IGNORED`].
pub fn default_ignore() -> IgnoreErrors {
    IgnoreErrors::Sqlstates(DEFAULT_IGNORED.iter().map(|s| s.to_string()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_shown_as_libpq_shows_it() {
        // As psql 15 prints these errors.
        let at = |sql: &str, token: &str| position_lines(sql, sql.find(token).unwrap() + 1).unwrap();
        assert_eq!(at("SELECT 1 + ;", ";"), "LINE 1: SELECT 1 + ;\n                   ^");
        assert_eq!(at("select 1,\n  2 + ;", ";"), "LINE 2:   2 + ;\n              ^");
        assert_eq!(at("select\t1 +\t;", ";"), "LINE 1: select 1 + ;\n                   ^");
        let long =
            "select 1111111111, 2222222222, 3333333333, 4444444444, 5555555555, 6666666666, 7777777777, 888888888 + ;";
        assert_eq!(
            at(long, ";"),
            "LINE 1: ...444444444, 5555555555, 6666666666, 7777777777, 888888888 + ;\n\
             \x20                                                                     ^"
        );
        let long = "select nosuchcol, 1111111111, 2222222222, 3333333333, 4444444444, 5555555555, 6666666666, 7777777777, 888888888;";
        assert_eq!(
            at(long, "nosuchcol"),
            "LINE 1: select nosuchcol, 1111111111, 2222222222, 3333333333, 444444...\n               ^"
        );
        let long = "select 1111111111, 2222222222, 3333333333, 4444444444, nosuchcol, 5555555555, 6666666666, 7777777777, 888888888, 999999999999, 11111111111111111;";
        assert_eq!(
            at(long, "nosuchcol"),
            format!(
                "LINE 1: ...t 1111111111, 2222222222, 3333333333, 4444444444, nosuchcol,...\n{}^",
                " ".repeat(61)
            )
        );
        // The end of the input, and positions outside it.
        assert_eq!(
            position_lines("SELECT 1 +", 11).unwrap(),
            "LINE 1: SELECT 1 +\n                  ^"
        );
        assert_eq!(position_lines("SELECT", 0), None);
        assert_eq!(position_lines("SELECT", 9), None);
        // In the message, under its first line and before the server's DETAIL.
        let m = server_message(
            "ERROR",
            "syntax error at or near \";\"",
            "42601",
            Some(("SELECT 1 + ;", 12)),
            [Some("d"), None, None],
        );
        assert_eq!(
            m,
            "ERROR: syntax error at or near \";\" (SQLSTATE 42601)\nLINE 1: SELECT 1 + ;\n                   ^\nDETAIL:  d"
        );
    }

    #[test]
    fn placeholders_become_numbered_outside_quotes_and_comments() {
        assert_eq!(
            translate_placeholders("SELECT c FROM t WHERE id BETWEEN ? AND ?"),
            "SELECT c FROM t WHERE id BETWEEN $1 AND $2"
        );
        assert_eq!(
            translate_placeholders("SELECT '?', \"a?\", ? -- ?\n, ? /* ? */ , $$ ? $$, $x$?$x$, ?"),
            "SELECT '?', \"a?\", $1 -- ?\n, $2 /* ? */ , $$ ? $$, $x$?$x$, $3"
        );
        assert_eq!(translate_placeholders("SELECT 'it''s ?', ?"), "SELECT 'it''s ?', $1");
        assert_eq!(translate_placeholders("BEGIN"), "BEGIN");
        assert_eq!(translate_placeholders("SELECT $1, ?"), "SELECT $1, $1");
        let many = ["?"; 12].join(",");
        assert!(translate_placeholders(&many).ends_with("$11,$12"));
        // An unterminated quote does not panic.
        assert_eq!(translate_placeholders("SELECT '?"), "SELECT '?");
    }

    #[test]
    fn sqlstates_classify_by_table() {
        let d = default_ignore();
        assert_eq!(classify("40P01", &d), ErrorClass::Deadlock);
        assert_eq!(classify("40001", &d), ErrorClass::Serialization);
        assert_eq!(classify("23505", &d), ErrorClass::UniqueViolation);
        assert_eq!(classify("57P01", &d), ErrorClass::ConnectionLost);
        assert_eq!(classify("08006", &d), ErrorClass::ConnectionLost);
        assert_eq!(classify("42P01", &d), ErrorClass::Fatal);
        assert_eq!(classify("55P03", &d), ErrorClass::Fatal);
        let none = parse_ignore("none").unwrap();
        assert_eq!(classify("40P01", &none), ErrorClass::Fatal);
        assert_eq!(classify("57P01", &none), ErrorClass::ConnectionLost);
        let all = parse_ignore("all").unwrap();
        assert_eq!(classify("55P03", &all), ErrorClass::LockWaitTimeout);
        assert_eq!(classify("57014", &all), ErrorClass::LockWaitTimeout);
        assert_eq!(classify("22012", &all), ErrorClass::Ignored);
        let some = parse_ignore("40p01, 55P03").unwrap();
        assert_eq!(classify("55P03", &some), ErrorClass::LockWaitTimeout);
        assert_eq!(classify("40001", &some), ErrorClass::Fatal);
        let e = parse_ignore("40P01,1213").unwrap_err();
        assert!(e.contains("\"1213\""), "{e}");
    }
}
