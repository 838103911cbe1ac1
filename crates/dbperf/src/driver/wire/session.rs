//! [`WireSession`]: the [`Session`] implementation over [`PacketConn`].

use bytes::Bytes;
use dbperf_engine::ErrorClass;
use futures_util::stream::BoxStream;

use super::handshake;
use super::packet::{put_lenenc_bytes, PacketConn, Reader};
use super::result::{column_type, read_response, ColType, Proto, Sink, TextRows};
use super::{
    breaks_connection, caps, protocol, server_error, COM_QUERY, COM_STMT_BULK_EXECUTE, COM_STMT_EXECUTE,
    COM_STMT_PREPARE, CR_SERVER_LOST,
};
use crate::driver::mysql::IgnoreErrors;
use crate::driver::{DbError, ExecInfo, Param, Rows, Session, StmtId, Target, TextStatement, ER_UNSUPPORTED_PS};

/// Binary-protocol parameter types.
const MYSQL_TYPE_LONGLONG: u8 = 0x08;
const MYSQL_TYPE_VAR_STRING: u8 = 0xFD;

/// COM_STMT_BULK_EXECUTE flag: the parameter types follow the statement id.
const BULK_SEND_TYPES: u16 = 128;
/// COM_STMT_BULK_EXECUTE parameter indicator: a value follows.
const BULK_INDICATOR_NONE: u8 = 0;

/// A MySQL-protocol session on dbperf's own wire code (see the [module](super) docs).
pub struct WireSession {
    target: Target,
    ignore: IgnoreErrors,
    /// `None` after the connection broke; [`Session::reconnect`] opens a new one.
    conn: Option<PacketConn>,
    proto: Proto,
    statements: Vec<Statement>,
    /// Reused buffer for statements run as text.
    text: Vec<u8>,
    version: String,
    /// The server takes COM_STMT_BULK_EXECUTE (MariaDB 10.2.7 and later).
    bulk: bool,
    /// A command was sent and its response not read to the end: its future was
    /// dropped, so the connection is out of step and must not be used.
    busy: bool,
}

/// A statement of this session.
enum Statement {
    Server(Prepared),
    /// Refused by the server's prepare (ER_UNSUPPORTED_PS): run through the text protocol.
    Text(TextStatement),
}

/// A statement prepared on the server.
struct Prepared {
    id: u32,
    /// The parameter types of the last execute (one byte per parameter).
    types: Vec<u8>,
    /// False until an execute has sent `types` to the server.
    types_sent: bool,
    /// Result columns, as the prepare (or the last execute with metadata) described them.
    columns: Vec<ColType>,
}

impl WireSession {
    /// Connects to `target`, treating server errors per `ignore`.
    pub async fn connect(target: &Target, ignore: IgnoreErrors) -> Result<WireSession, DbError> {
        super::super::require_mysql(target)?;
        let mut s = WireSession {
            target: target.clone(),
            ignore,
            conn: None,
            proto: Proto::default(),
            statements: Vec::new(),
            text: Vec::new(),
            version: String::new(),
            bulk: false,
            busy: false,
        };
        s.open().await?;
        Ok(s)
    }

    async fn open(&mut self) -> Result<(), DbError> {
        self.close();
        self.statements.clear();
        let (conn, negotiated) = handshake::connect(&self.target, &self.ignore)
            .await
            .map_err(|e| DbError {
                message: format!(
                    "cannot connect to {} as {}: {}",
                    self.target.endpoint(),
                    self.target.user,
                    e.message
                ),
                ..e
            })?;
        self.proto = Proto {
            deprecate_eof: negotiated.caps & caps::DEPRECATE_EOF != 0,
            cache_metadata: negotiated.mariadb_caps & caps::MARIADB_CACHE_METADATA != 0,
        };
        self.version = negotiated.version;
        self.bulk = negotiated.mariadb_caps & caps::MARIADB_STMT_BULK_OPERATIONS != 0;
        self.conn = Some(conn);
        self.busy = false;
        Ok(())
    }

    /// Drops the connection, saying goodbye only if that needs no waiting.
    fn close(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            if !self.busy {
                conn.quit_now();
            }
        }
    }

    /// Records the end of a command: a broken connection is dropped.
    fn finish<T>(&mut self, r: Result<T, DbError>) -> Result<T, DbError> {
        self.busy = false;
        if let Err(e) = &r {
            if breaks_connection(e) {
                self.conn = None;
            }
        }
        r
    }

    /// Runs `LOAD DATA LOCAL INFILE` statement `sql`, streaming the file's bytes from
    /// `data` (no file on disk). Fails with the server's error when `local_infile` is off.
    pub async fn load_data_local(
        &mut self,
        sql: &str,
        data: BoxStream<'static, std::io::Result<Bytes>>,
    ) -> Result<ExecInfo, DbError> {
        let r = async {
            let conn = start(&mut self.conn, &mut self.busy)?;
            write_query(conn, sql);
            conn.send().await?;
            read_response(conn, self.proto, &self.ignore, Sink::Discard, Some(data)).await
        }
        .await;
        self.finish(r)
    }

    /// True when the server executes a prepared INSERT for many rows in one command
    /// ([`exec_bulk`](Self::exec_bulk)): MariaDB from 10.2.7, not MySQL.
    pub fn bulk_supported(&self) -> bool {
        self.bulk
    }

    /// Executes prepared statement `stmt` (typically a one-row INSERT) once per row of
    /// `params`, `per_row` values each, in one COM_STMT_BULK_EXECUTE: the server parses
    /// and binds the statement once and then only converts each row's binary values,
    /// which makes it MariaDB's cheapest way to store rows. Every row must give a column
    /// the same kind of value. Returns the rows the statement changed.
    pub async fn exec_bulk(&mut self, stmt: StmtId, params: &[Param<'_>], per_row: usize) -> Result<ExecInfo, DbError> {
        if !self.bulk {
            return Err(misuse(
                "the server does not take COM_STMT_BULK_EXECUTE (MariaDB 10.2.7 or later does)".into(),
            ));
        }
        let id = match self.statements.get(stmt.0 as usize) {
            Some(Statement::Server(st)) if st.types.len() == per_row => st.id,
            Some(Statement::Server(st)) => {
                return Err(misuse(format!(
                    "statement {} takes {} parameters per row, {per_row} given",
                    stmt.0,
                    st.types.len()
                )))
            }
            Some(Statement::Text(_)) => {
                return Err(misuse(format!(
                    "statement {} was refused by the server's prepare and cannot run in bulk",
                    stmt.0
                )))
            }
            None => return Err(misuse(format!("statement {} was not prepared on this session", stmt.0))),
        };
        if per_row == 0 || params.is_empty() || !params.len().is_multiple_of(per_row) {
            return Err(misuse(format!(
                "{} values do not make whole rows of {per_row}",
                params.len()
            )));
        }
        let first = &params[..per_row];
        let differs = |row: &[Param<'_>]| row.iter().zip(first).position(|(p, q)| type_of(p) != type_of(q));
        if let Some((r, c)) = params
            .chunks_exact(per_row)
            .enumerate()
            .find_map(|(r, row)| differs(row).map(|c| (r, c)))
        {
            return Err(misuse(format!(
                "row {} gives parameter {} a different type than row 1",
                r + 1,
                c + 1
            )));
        }
        let r = async {
            let conn = start(&mut self.conn, &mut self.busy)?;
            let w = conn.command();
            w.push(COM_STMT_BULK_EXECUTE);
            w.extend_from_slice(&id.to_le_bytes());
            w.extend_from_slice(&BULK_SEND_TYPES.to_le_bytes());
            for p in first {
                w.extend_from_slice(&[type_of(p), 0]);
            }
            for p in params {
                w.push(BULK_INDICATOR_NONE);
                match *p {
                    Param::Int(i) => w.extend_from_slice(&i.to_le_bytes()),
                    Param::Bytes(b) => put_lenenc_bytes(w, b),
                }
            }
            conn.send().await?;
            read_response(conn, self.proto, &self.ignore, Sink::Discard, None).await
        }
        .await;
        self.finish(r)
    }

    async fn prepare_on_server(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let conn = start(&mut self.conn, &mut self.busy)?;
        let w = conn.command();
        w.push(COM_STMT_PREPARE);
        w.extend_from_slice(sql.as_bytes());
        conn.send().await?;
        conn.recv().await?;
        let p = conn.payload();
        match p.first() {
            Some(0x00) => {}
            Some(0xFF) => return Err(server_error(p, &self.ignore)),
            _ => return Err(protocol("unexpected response to COM_STMT_PREPARE".into())),
        }
        let mut r = Reader::new(&p[1..]);
        let (Some(id), Some(columns), Some(params)) = (r.u32(), r.u16(), r.u16()) else {
            return Err(protocol("truncated COM_STMT_PREPARE response".into()));
        };
        // Parameter definitions, then column definitions, each followed by an EOF packet
        // unless CLIENT_DEPRECATE_EOF.
        let mut column_types = Vec::with_capacity(usize::from(columns));
        for (n, are_columns) in [(params, false), (columns, true)] {
            if n == 0 {
                continue;
            }
            for _ in 0..n {
                conn.recv().await?;
                if are_columns {
                    column_types.push(column_type(conn.payload())?);
                }
            }
            if !self.proto.deprecate_eof {
                conn.recv().await?;
                if conn.payload().first() != Some(&0xFE) {
                    return Err(protocol(
                        "no EOF packet after the definitions of a prepared statement".into(),
                    ));
                }
            }
        }
        self.statements.push(Statement::Server(Prepared {
            id,
            types: vec![0; usize::from(params)],
            types_sent: false,
            columns: column_types,
        }));
        Ok(StmtId(self.statements.len() as u32 - 1))
    }

    async fn exec_on_server(
        &mut self,
        stmt: StmtId,
        params: &[Param<'_>],
        rows: Option<&mut Rows>,
    ) -> Result<ExecInfo, DbError> {
        let st = match self.statements.get_mut(stmt.0 as usize) {
            Some(Statement::Server(st)) => st,
            Some(Statement::Text(t)) => {
                if params.len() != t.placeholders() {
                    return Err(misuse(format!(
                        "statement {} takes {} parameters, {} given",
                        stmt.0,
                        t.placeholders(),
                        params.len()
                    )));
                }
                let conn = start(&mut self.conn, &mut self.busy)?;
                self.text.clear();
                t.render(params, &mut self.text);
                let w = conn.command();
                w.push(COM_QUERY);
                w.extend_from_slice(&self.text);
                conn.send().await?;
                let mut types = Vec::new();
                let sink = match rows {
                    Some(rows) => Sink::Cells {
                        rows,
                        types: &mut types,
                        binary: false,
                    },
                    None => Sink::Discard,
                };
                return read_response(conn, self.proto, &self.ignore, sink, None).await;
            }
            None => return Err(misuse(format!("statement {} was not prepared on this session", stmt.0))),
        };
        if params.len() != st.types.len() {
            return Err(misuse(format!(
                "statement {} takes {} parameters, {} given",
                stmt.0,
                st.types.len(),
                params.len()
            )));
        }
        let conn = start(&mut self.conn, &mut self.busy)?;
        let w = conn.command();
        w.push(COM_STMT_EXECUTE);
        w.extend_from_slice(&st.id.to_le_bytes());
        w.push(0); // CURSOR_TYPE_NO_CURSOR
        w.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        if !params.is_empty() {
            // NULL bitmap: no parameter is NULL.
            w.resize(w.len() + params.len().div_ceil(8), 0);
            // Types go to the server the first time and when they change (as libmysqlclient).
            let changed = params.iter().zip(&st.types).any(|(p, &t)| type_of(p) != t);
            let send_types = changed || !st.types_sent;
            w.push(u8::from(send_types));
            if send_types {
                for (p, t) in params.iter().zip(st.types.iter_mut()) {
                    *t = type_of(p);
                    w.extend_from_slice(&[*t, 0]);
                }
                st.types_sent = true;
            }
            for p in params {
                match *p {
                    Param::Int(i) => w.extend_from_slice(&i.to_le_bytes()),
                    Param::Bytes(b) => put_lenenc_bytes(w, b),
                }
            }
        }
        conn.send().await?;
        let sink = match rows {
            Some(rows) => Sink::Cells {
                rows,
                types: &mut st.columns,
                binary: true,
            },
            None => Sink::Discard,
        };
        read_response(conn, self.proto, &self.ignore, sink, None).await
    }
}

fn type_of(p: &Param<'_>) -> u8 {
    match p {
        Param::Int(_) => MYSQL_TYPE_LONGLONG,
        Param::Bytes(_) => MYSQL_TYPE_VAR_STRING,
    }
}

/// A mistake in the calling code, not the server's: fatal, connection unaffected.
fn misuse(message: String) -> DbError {
    DbError {
        class: ErrorClass::Fatal,
        code: None,
        sqlstate: None,
        message,
    }
}

/// The connection, marked busy until [`WireSession::finish`]; an error when there is
/// none or an earlier command was abandoned half way.
fn start<'c>(conn: &'c mut Option<PacketConn>, busy: &mut bool) -> Result<&'c mut PacketConn, DbError> {
    if *busy {
        *conn = None;
    }
    let Some(c) = conn.as_mut() else {
        return Err(DbError {
            class: ErrorClass::ConnectionLost,
            code: Some(CR_SERVER_LOST),
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

fn write_query(conn: &mut PacketConn, sql: &str) {
    let w = conn.command();
    w.push(COM_QUERY);
    w.extend_from_slice(sql.as_bytes());
}

impl Session for WireSession {
    async fn connect(target: &Target, ignore: IgnoreErrors) -> Result<WireSession, DbError> {
        WireSession::connect(target, ignore).await
    }

    async fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let r = self.prepare_on_server(sql).await;
        match self.finish(r) {
            Err(e) if e.code == Some(ER_UNSUPPORTED_PS) => {
                self.statements.push(Statement::Text(TextStatement::new(sql)));
                Ok(StmtId(self.statements.len() as u32 - 1))
            }
            r => r,
        }
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
        let r = async {
            let conn = start(&mut self.conn, &mut self.busy)?;
            write_query(conn, sql);
            conn.send().await?;
            read_response(conn, self.proto, &self.ignore, Sink::Discard, None).await
        }
        .await;
        self.finish(r)
    }

    async fn query_rows(&mut self, sql: &str) -> Result<TextRows, DbError> {
        let mut rows = Vec::new();
        let r = async {
            let conn = start(&mut self.conn, &mut self.busy)?;
            write_query(conn, sql);
            conn.send().await?;
            read_response(conn, self.proto, &self.ignore, Sink::Text(&mut rows), None).await
        }
        .await;
        self.finish(r).map(|_| rows)
    }

    async fn reconnect(&mut self) -> Result<(), DbError> {
        self.open().await
    }

    fn server_version(&self) -> String {
        self.version.clone()
    }
}

impl Drop for WireSession {
    fn drop(&mut self) {
        self.close();
    }
}
