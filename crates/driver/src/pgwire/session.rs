//! [`PgWireSession`]: the [`Session`] implementation over [`Conn`].
//!
//! A prepare is Parse + Describe + Sync, once, learning the parameter types the server
//! inferred and the result columns; an execute is Bind + Execute + Sync in one write
//! (parameters and results in binary), then the response is read to ReadyForQuery in
//! place. [`PgWireSession::exec_unnamed`] is Parse + Bind + Execute + Sync of an unnamed
//! statement (text parameters and results), for `pgbench -M extended`; both share
//! `bind_execute`. A [`Param::Null`] is bound as NULL (length -1).
//! `query` and `query_rows` use the simple-query protocol; `copy_in` runs
//! `COPY ... FROM STDIN`.

use std::io;

use bytes::Bytes;
use dbperf_engine::ErrorClass;
use fallible_iterator::FallibleIterator;
use futures_util::{Stream, StreamExt};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend::{self, BindError};
use postgres_protocol::IsNull;
use postgres_types::{Kind, Type};

use super::conn::{connect, CancelToken, Conn};
use super::types::{encode_param, push_cell};
use super::{misuse, protocol, server_error};
use crate::mysql::IgnoreErrors;
use crate::pg::{require_postgres, translate_placeholders};
use crate::{DbError, ExecInfo, Param, Rows, Session, StmtId, Target};

/// COPY data is sent once this much has been gathered (or the input ends).
const COPY_BATCH: usize = 256 * 1024;

/// A PostgreSQL session on dbperf's own protocol code (see the [module](super) docs).
pub struct PgWireSession {
    target: Target,
    ignore: IgnoreErrors,
    /// `None` after the connection broke; [`Session::reconnect`] opens a new one.
    conn: Option<Conn>,
    statements: Vec<Statement>,
    version: String,
    cancel: Option<CancelToken>,
    /// A request was sent and its response not read to ReadyForQuery: its future was
    /// dropped (or the response made no sense), so the connection is out of step.
    busy: bool,
    /// Prepared statements' parameters go as text, for the server to convert
    /// ([`Session::send_params_as_text`]).
    text_params: bool,
}

/// A statement prepared on the server.
struct Statement {
    name: String,
    /// Parameter types the server inferred.
    params: Vec<Type>,
    /// Result column types.
    columns: Vec<Type>,
}

impl PgWireSession {
    /// Connects to `target`, treating server errors per `ignore`.
    pub async fn connect(target: &Target, ignore: IgnoreErrors) -> Result<PgWireSession, DbError> {
        require_postgres(target)?;
        let mut s = PgWireSession {
            target: target.clone(),
            ignore,
            conn: None,
            statements: Vec::new(),
            version: String::new(),
            cancel: None,
            busy: false,
            text_params: false,
        };
        s.open().await?;
        Ok(s)
    }

    async fn open(&mut self) -> Result<(), DbError> {
        self.close();
        self.statements.clear();
        let (conn, startup) = connect(&self.target, &self.ignore).await.map_err(|e| DbError {
            message: crate::pg::cannot_connect_message(&self.target, &e),
            ..e
        })?;
        self.version = startup.version;
        self.cancel = Some(startup.cancel);
        self.conn = Some(conn);
        self.busy = false;
        Ok(())
    }

    /// Drops the connection, saying goodbye only if that needs no waiting.
    fn close(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            if !self.busy {
                conn.terminate_now();
            }
        }
    }

    /// Records the end of a request: a lost connection, or one left out of step, is
    /// dropped, so the next request reports it as lost.
    fn finish<T>(&mut self, r: Result<T, DbError>) -> Result<T, DbError> {
        let lost = matches!(&r, Err(e) if e.class == ErrorClass::ConnectionLost);
        if self.busy || lost {
            self.conn = None;
            self.busy = false;
        } else if let Some(c) = self.conn.as_mut() {
            c.shrink();
        }
        r
    }

    /// The backend's process id (`pg_backend_pid()`), from the startup exchange.
    pub fn backend_pid(&self) -> i32 {
        self.cancel.as_ref().map_or(0, |c| c.pid)
    }

    /// What another task uses to cancel this session's running statement.
    pub fn cancel_token(&self) -> Option<CancelToken> {
        self.cancel.clone()
    }

    /// Runs `COPY ... FROM STDIN` statement `sql`, sending `chunks` (COPY text format);
    /// returns the rows copied.
    pub async fn copy_in(&mut self, sql: &str, chunks: impl Iterator<Item = Bytes>) -> Result<u64, DbError> {
        self.copy_in_stream(sql, futures_util::stream::iter(chunks.map(Ok)))
            .await
    }

    /// Like [`PgWireSession::copy_in`], from a stream: chunks are gathered into CopyData
    /// messages of up to [`COPY_BATCH`] bytes and sent as they fill, so a generator can
    /// run ahead of the connection without the whole table in memory.
    pub async fn copy_in_stream(
        &mut self,
        sql: &str,
        chunks: impl Stream<Item = io::Result<Bytes>>,
    ) -> Result<u64, DbError> {
        let r = self.copy(sql, chunks).await;
        self.finish(r)
    }

    async fn copy(&mut self, sql: &str, chunks: impl Stream<Item = io::Result<Bytes>>) -> Result<u64, DbError> {
        let PgWireSession { conn, busy, ignore, .. } = self;
        let c = start(conn, busy)?;
        frontend::query(sql, c.out()).map_err(encoding)?;
        c.send().await?;
        match c.recv().await? {
            Message::CopyInResponse(_) => {}
            Message::ErrorResponse(b) => {
                let e = server_error(&b, ignore, Some(sql));
                drain(c, busy, Asked::sql(ignore, sql), |_| Ok(())).await?;
                return Err(e);
            }
            _ => return Err(protocol(format!("{sql:?} did not start COPY FROM STDIN"))),
        }
        futures_util::pin_mut!(chunks);
        let mut failure = None;
        while let Some(chunk) = chunks.next().await {
            match chunk {
                Ok(b) if b.is_empty() => {}
                Ok(b) => {
                    frontend::CopyData::new(b).map_err(encoding)?.write(c.out());
                    if c.pending() >= COPY_BATCH {
                        c.send().await?;
                    }
                }
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        match &failure {
            None => frontend::copy_done(c.out()),
            Some(e) => {
                frontend::copy_fail(&format!("dbperf could not produce the data: {e}"), c.out()).map_err(encoding)?
            }
        }
        c.send().await?;
        let mut copied = 0;
        let r = drain(c, busy, Asked::sql(ignore, sql), |m| {
            if let Message::CommandComplete(b) = m {
                copied = affected(b.tag().map_err(|e| protocol(e.to_string()))?);
            }
            Ok(())
        })
        .await;
        if let Some(e) = failure {
            return Err(misuse(format!("producing COPY data: {e}")));
        }
        r.map(|()| copied)
    }

    async fn prepare_on_server(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let sql = translate_placeholders(sql);
        let name = format!("dbperf_{}", self.statements.len());
        let PgWireSession { conn, busy, ignore, .. } = self;
        let c = start(conn, busy)?;
        frontend::parse(&name, &sql, std::iter::empty(), c.out()).map_err(encoding)?;
        frontend::describe(b'S', &name, c.out()).map_err(encoding)?;
        frontend::sync(c.out());
        c.send().await?;
        let (mut params, mut columns) = (Vec::new(), Vec::new());
        drain(c, busy, Asked::sql(ignore, &sql), |m| {
            let bad = |e: io::Error| protocol(format!("malformed statement description: {e}"));
            match m {
                Message::ParameterDescription(b) => {
                    params = b.parameters().map(|oid| Ok(type_of(oid))).collect().map_err(bad)?;
                }
                Message::RowDescription(b) => {
                    columns = b.fields().map(|f| Ok(type_of(f.type_oid()))).collect().map_err(bad)?;
                }
                Message::ParseComplete | Message::NoData => {}
                _ => return Err(protocol("unexpected message in the response to Parse/Describe".into())),
            }
            Ok(())
        })
        .await?;
        self.statements.push(Statement { name, params, columns });
        Ok(StmtId(self.statements.len() as u32 - 1))
    }

    async fn exec_on_server(
        &mut self,
        stmt: StmtId,
        params: &[Param<'_>],
        rows: Option<&mut Rows>,
    ) -> Result<ExecInfo, DbError> {
        let PgWireSession {
            conn,
            busy,
            ignore,
            statements,
            text_params,
            ..
        } = self;
        let st = statements
            .get(stmt.0 as usize)
            .ok_or_else(|| misuse(format!("statement {} was not prepared on this session", stmt.0)))?;
        if params.len() != st.params.len() {
            return Err(misuse(format!(
                "statement {} takes {} parameters, {} given",
                stmt.0,
                st.params.len(),
                params.len()
            )));
        }
        let c = start(conn, busy)?;
        let typed = Typed {
            params: &st.params,
            columns: &st.columns,
            text_params: *text_params,
        };
        let asked = Asked { ignore, sql: None };
        bind_execute(c, busy, asked, &st.name, params, Some(typed), rows).await
    }

    /// Runs `sql` (with `$1..$n` placeholders) as an unnamed statement: Parse, Bind,
    /// Execute and Sync in one write, the statement parsed again on every call, as
    /// `pgbench -M extended` does. Parameters go as text for the server to read as the
    /// types it infers ([`Param::Null`] as NULL); rows come back as text into `rows` when
    /// given.
    pub async fn exec_unnamed(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        rows: Option<&mut Rows>,
    ) -> Result<ExecInfo, DbError> {
        let r = self.unnamed_on_server(sql, params, rows).await;
        self.finish(r)
    }

    async fn unnamed_on_server(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        rows: Option<&mut Rows>,
    ) -> Result<ExecInfo, DbError> {
        let PgWireSession { conn, busy, ignore, .. } = self;
        let c = start(conn, busy)?;
        frontend::parse("", sql, std::iter::empty(), c.out()).map_err(encoding)?;
        bind_execute(c, busy, Asked::sql(ignore, sql), "", params, None, rows).await
    }

    /// Runs `sql` as a simple query; rows go to `text` as strings when it is given.
    async fn simple(
        &mut self,
        sql: &str,
        mut text: Option<&mut Vec<Vec<Option<String>>>>,
    ) -> Result<ExecInfo, DbError> {
        let PgWireSession { conn, busy, ignore, .. } = self;
        let c = start(conn, busy)?;
        frontend::query(sql, c.out()).map_err(encoding)?;
        c.send().await?;
        let mut affected_rows = 0;
        drain(c, busy, Asked::sql(ignore, sql), |m| {
            match m {
                Message::DataRow(body) => {
                    if let Some(out) = text.as_deref_mut() {
                        let mut row = Vec::new();
                        let mut cells = body.ranges();
                        while let Some(r) = cells.next().map_err(|e| protocol(e.to_string()))? {
                            row.push(r.map(|r| String::from_utf8_lossy(&body.buffer()[r]).into_owned()));
                        }
                        out.push(row);
                    }
                }
                Message::CommandComplete(b) => {
                    affected_rows = affected(b.tag().map_err(|e| protocol(e.to_string()))?);
                }
                Message::CopyInResponse(_) => {
                    return Err(misuse(format!(
                        "{sql:?} reads COPY data; run it with copy_in, not as a query"
                    )))
                }
                // Rows of a COPY TO STDOUT are read and dropped.
                _ => {}
            }
            Ok(())
        })
        .await?;
        Ok(ExecInfo { affected_rows })
    }
}

/// The type for `oid`; one dbperf does not know keeps its oid in the name for messages.
fn type_of(oid: u32) -> Type {
    Type::from_oid(oid).unwrap_or_else(|| Type::new(format!("oid {oid}"), oid, Kind::Simple, "pg_catalog".into()))
}

/// Makes `rows` keep the DataRows to come undecoded: binary cells described by their type
/// oids (4 bytes each), or text cells (`columns` `None`). False when the rows must be
/// decoded now.
fn defer(rows: &mut Rows, columns: Option<&[Type]>) -> bool {
    match columns {
        Some(types) => {
            let oids: smallvec::SmallVec<[u8; 64]> = types.iter().flat_map(|t| t.oid().to_le_bytes()).collect();
            rows.defer(&oids, |received, rows| {
                let types: Vec<Type> = received
                    .columns
                    .chunks_exact(4)
                    .map(|b| type_of(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                    .collect();
                received.rows().try_for_each(|body| push_row(rows, Some(&types), body))
            })
        }
        None => rows.defer(&[], |received, rows| {
            received.rows().try_for_each(|body| push_row(rows, None, body))
        }),
    }
}

/// Pushes the cells of one DataRow body into `rows`: binary cells of `columns`' types, or
/// text cells (`columns` `None`).
fn push_row(rows: &mut Rows, columns: Option<&[Type]>, body: &[u8]) -> Result<(), DbError> {
    let short = || protocol("a DataRow cut short".into());
    let count = u16::from_be_bytes([*body.first().ok_or_else(short)?, *body.get(1).ok_or_else(short)?]) as usize;
    if columns.is_some_and(|c| c.len() != count) {
        return Err(protocol(format!(
            "a row of {count} columns where {} were described",
            columns.map_or(0, <[Type]>::len)
        )));
    }
    let mut at = 2;
    for k in 0..count {
        let len = body.get(at..at + 4).ok_or_else(short)?;
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        at += 4;
        let cell = if len < 0 {
            None
        } else {
            let v = body.get(at..at + len as usize).ok_or_else(short)?;
            at += len as usize;
            Some(v)
        };
        match (columns, cell) {
            (Some(types), v) => push_cell(rows, &types[k], v),
            (None, Some(v)) => rows.push_bytes(v),
            (None, None) => rows.push_null(),
        }
    }
    Ok(())
}

/// Writes `p` as text, for the server to read as the type it infers; NULL writes nothing
/// and says so.
fn encode_text(p: Param<'_>, buf: &mut bytes::BytesMut) -> IsNull {
    use std::fmt::Write as _;
    match p {
        Param::Int(i) => {
            let _ = write!(buf, "{i}");
        }
        Param::Bytes(b) => bytes::BufMut::put_slice(buf, b),
        Param::Null => return IsNull::Yes,
    }
    IsNull::No
}

/// What the server told of a prepared statement: its parameters go and its rows come in
/// binary, as these types.
#[derive(Clone, Copy)]
struct Typed<'t> {
    params: &'t [Type],
    columns: &'t [Type],
    /// The parameters go as text all the same, for the server to convert.
    text_params: bool,
}

/// Appends Bind (of `statement` to the unnamed portal), Execute and Sync to what `c` is
/// about to send, sends it all and reads the response into `rows` (see [`read_result`]).
/// With `typed`, parameters and rows are binary, of its types; without, text, for the
/// server to read (and write) as the types it infers. [`Param::Null`] is bound as NULL
/// (length -1) either way. Writes into the connection's buffer, allocating nothing.
async fn bind_execute(
    c: &mut Conn,
    busy: &mut bool,
    asked: Asked<'_>,
    statement: &str,
    params: &[Param<'_>],
    typed: Option<Typed<'_>>,
    rows: Option<&mut Rows>,
) -> Result<ExecInfo, DbError> {
    let format = i16::from(typed.is_some());
    let param_format = i16::from(typed.is_some_and(|t| !t.text_params));
    let bound = frontend::bind(
        "",
        statement,
        Some(param_format),
        params.iter().enumerate(),
        |(i, p), buf| match typed {
            Some(t) if t.text_params => Ok(encode_text(*p, buf)),
            Some(t) => match encode_param(&t.params[i], *p, buf) {
                Ok(postgres_types::IsNull::Yes) => Ok(IsNull::Yes),
                Ok(postgres_types::IsNull::No) => Ok(IsNull::No),
                Err(e) => Err(format!("parameter {} ({}): {e}", i + 1, t.params[i]).into()),
            },
            None => Ok(encode_text(*p, buf)),
        },
        Some(format),
        c.out(),
    );
    if let Err(e) = bound {
        return Err(unbound(c, busy, e));
    }
    frontend::execute("", 0, c.out()).map_err(encoding)?;
    frontend::sync(c.out());
    c.send().await?;
    read_result(c, busy, asked, typed.map(|t| t.columns), rows).await
}

/// A Bind that would not encode: the request is dropped unsent, the connection usable.
fn unbound(c: &mut Conn, busy: &mut bool, e: BindError) -> DbError {
    c.discard();
    *busy = false;
    misuse(match e {
        BindError::Conversion(e) => format!("error serializing {e}"),
        BindError::Serialization(e) => e.to_string(),
    })
}

/// Reads the response to an execute (BindComplete, rows, CommandComplete, ReadyForQuery;
/// ParseComplete first for an unnamed statement) in place. With `rows`, the rows go there
/// (binary cells of `columns`' types, or text without them) and their count is returned;
/// without, the count the command tag reports.
async fn read_result(
    c: &mut Conn,
    busy: &mut bool,
    asked: Asked<'_>,
    columns: Option<&[Type]>,
    mut rows: Option<&mut Rows>,
) -> Result<ExecInfo, DbError> {
    if let Some(rows) = rows.as_deref_mut() {
        rows.reset(columns.map_or(0, <[Type]>::len));
    }
    let (mut n, mut tagged) = (0u64, 0u64);
    let mut failed: Option<DbError> = None;
    let mut deferred = false;
    loop {
        let (tag, len) = match c.recv_frame().await {
            Ok(f) => f,
            Err(e) => return Err(failed.unwrap_or(e)),
        };
        match tag {
            b'Z' => {
                c.in_transaction = c.body(len).first().is_some_and(|&s| s != b'I');
                c.consume(len);
                *busy = false;
                return match failed {
                    Some(e) => Err(e),
                    None => Ok(ExecInfo {
                        affected_rows: if rows.is_some() { n } else { tagged },
                    }),
                };
            }
            b'E' => {
                let m = c.take_message()?;
                if let (None, Message::ErrorResponse(b)) = (&failed, m) {
                    failed = Some(asked.error(&b));
                }
                continue;
            }
            _ if failed.is_some() => {}
            b'D' => {
                n += 1;
                if let Some(rows) = rows.as_deref_mut() {
                    let body = c.body(len);
                    if n == 1 {
                        if columns.is_none() {
                            let count = body.get(..2).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]) as usize);
                            rows.reset(count);
                        }
                        // Rows that allow it are kept as received, decoded only if read.
                        deferred = defer(rows, columns);
                    }
                    if deferred {
                        rows.push_undecoded(body);
                    } else {
                        push_row(rows, columns, body)?;
                    }
                }
            }
            b'C' => tagged = affected_bytes(c.body(len)),
            b'1' | b'2' | b'I' | b'n' => {}
            other => {
                return Err(protocol(format!(
                    "unexpected message {:?} in the response to Bind/Execute",
                    other as char
                )))
            }
        }
        c.consume(len);
    }
}

/// [`affected`] of a CommandComplete body (the tag, NUL-terminated), read in place.
fn affected_bytes(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let digits = match tag.iter().rposition(|&b| b == b' ') {
        Some(p) => &tag[p + 1..],
        None => tag,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    digits
        .iter()
        .fold(0u64, |a, &d| a.wrapping_mul(10).wrapping_add((d - b'0') as u64))
}

/// Rows a command tag reports (`UPDATE 3`, `INSERT 0 1`, `SELECT 10`); 0 when it has none.
fn affected(tag: &str) -> u64 {
    tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// A message that would not encode (a statement longer than the protocol allows).
fn encoding(e: io::Error) -> DbError {
    misuse(format!("cannot encode the request: {e}"))
}

/// The connection, marked busy until its response is read to ReadyForQuery; an error
/// when there is none or an earlier request was abandoned half way.
fn start<'c>(conn: &'c mut Option<Conn>, busy: &mut bool) -> Result<&'c mut Conn, DbError> {
    if *busy {
        *conn = None;
    }
    let Some(c) = conn.as_mut() else {
        return Err(DbError {
            class: ErrorClass::ConnectionLost,
            code: None,
            sqlstate: None,
            message: if *busy {
                "an earlier statement on this connection was abandoned before its response arrived; reconnect".into()
            } else {
                "not connected (the connection was lost; reconnect)".into()
            },
        });
    };
    *busy = true;
    Ok(c)
}

/// What the replies being read answer: the errors the run retries or ignores, and the SQL
/// text sent (when there is one at hand), for a server error's position.
#[derive(Clone, Copy)]
struct Asked<'a> {
    ignore: &'a IgnoreErrors,
    sql: Option<&'a str>,
}

impl<'a> Asked<'a> {
    fn sql(ignore: &'a IgnoreErrors, sql: &'a str) -> Asked<'a> {
        Asked { ignore, sql: Some(sql) }
    }

    fn error(self, body: &postgres_protocol::message::backend::ErrorResponseBody) -> DbError {
        server_error(body, self.ignore, self.sql)
    }
}

/// Reads the response to ReadyForQuery, handing each message but errors to `each`. The
/// first server error is returned once ReadyForQuery arrives (or, when the server closes
/// the connection after it, at once).
async fn drain(
    c: &mut Conn,
    busy: &mut bool,
    asked: Asked<'_>,
    mut each: impl FnMut(Message) -> Result<(), DbError>,
) -> Result<(), DbError> {
    let mut failed: Option<DbError> = None;
    loop {
        let m = match c.recv().await {
            Ok(m) => m,
            Err(e) => return Err(failed.unwrap_or(e)),
        };
        match m {
            Message::ReadyForQuery(b) => {
                c.in_transaction = b.status() != b'I';
                *busy = false;
                return failed.map_or(Ok(()), Err);
            }
            Message::ErrorResponse(b) if failed.is_none() => failed = Some(asked.error(&b)),
            m if failed.is_none() => each(m)?,
            _ => {}
        }
    }
}

impl Session for PgWireSession {
    const UNNAMED_STATEMENTS: bool = true;
    const MULTI_STATEMENT_QUERIES: bool = true;
    const EMPTY_QUERIES: bool = true;

    fn send_params_as_text(&mut self) {
        self.text_params = true;
    }

    fn in_transaction(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| c.in_transaction)
    }

    async fn exec_unnamed(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        rows: Option<&mut Rows>,
    ) -> Result<ExecInfo, DbError> {
        PgWireSession::exec_unnamed(self, sql, params, rows).await
    }

    async fn connect(target: &Target, ignore: IgnoreErrors) -> Result<PgWireSession, DbError> {
        PgWireSession::connect(target, ignore).await
    }

    async fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let r = self.prepare_on_server(sql).await;
        self.finish(r)
    }

    async fn exec(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<ExecInfo, DbError> {
        let r = self.exec_on_server(stmt, params, None).await;
        self.finish(r)
    }

    async fn exec_rows(&mut self, stmt: StmtId, params: &[Param<'_>], rows: &mut Rows) -> Result<ExecInfo, DbError> {
        rows.reset(0);
        let r = self.exec_on_server(stmt, params, Some(rows)).await;
        self.finish(r)
    }

    async fn query(&mut self, sql: &str) -> Result<ExecInfo, DbError> {
        let r = self.simple(sql, None).await;
        self.finish(r)
    }

    async fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        let mut rows = Vec::new();
        let r = self.simple(sql, Some(&mut rows)).await;
        self.finish(r).map(|_| rows)
    }

    async fn reconnect(&mut self) -> Result<(), DbError> {
        self.open().await
    }

    fn server_version(&self) -> String {
        self.version.clone()
    }
}

impl Drop for PgWireSession {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tags_give_row_counts() {
        assert_eq!(affected("UPDATE 3"), 3);
        assert_eq!(affected("INSERT 0 1"), 1);
        assert_eq!(affected("SELECT 10"), 10);
        assert_eq!(affected("COPY 1000"), 1000);
        assert_eq!(affected("BEGIN"), 0);
        assert_eq!(affected(""), 0);
        for tag in ["UPDATE 3", "INSERT 0 1", "SELECT 10", "BEGIN", ""] {
            let mut body = tag.as_bytes().to_vec();
            body.push(0);
            assert_eq!(affected_bytes(&body), affected(tag), "{tag}");
        }
    }

    #[test]
    fn unknown_types_keep_their_oid() {
        assert_eq!(type_of(23), Type::INT4);
        assert_eq!(type_of(987_654).to_string(), "oid 987654");
    }
}
