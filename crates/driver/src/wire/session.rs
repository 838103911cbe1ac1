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
use crate::mysql::IgnoreErrors;
use crate::{DbError, ExecInfo, Param, Rows, Session, StmtId, Target, TextStatement, ER_UNSUPPORTED_PS};

/// Binary-protocol parameter types.
const MYSQL_TYPE_NULL: u8 = 0x06;
const MYSQL_TYPE_LONGLONG: u8 = 0x08;
const MYSQL_TYPE_VAR_STRING: u8 = 0xFD;

/// COM_STMT_BULK_EXECUTE flag: the parameter types follow the statement id.
const BULK_SEND_TYPES: u16 = 128;
/// COM_STMT_BULK_EXECUTE parameter indicator: a value follows.
const BULK_INDICATOR_NONE: u8 = 0;
/// COM_STMT_BULK_EXECUTE parameter indicator: the value is NULL (none follows).
const BULK_INDICATOR_NULL: u8 = 1;

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
    /// the same kind of value or NULL. Returns the rows the statement changed.
    pub async fn exec_bulk(&mut self, stmt: StmtId, params: &[Param<'_>], per_row: usize) -> Result<ExecInfo, DbError> {
        if !self.bulk {
            return Err(misuse(
                "the server does not take COM_STMT_BULK_EXECUTE (MariaDB 10.2.7 or later does)".into(),
            ));
        }
        let st = match self.statements.get_mut(stmt.0 as usize) {
            Some(Statement::Server(st)) if st.types.len() == per_row => st,
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
        let types = bulk_types(params, per_row).map_err(|(r, c)| {
            misuse(format!(
                "row {} gives parameter {} a different type than the rows before it",
                r + 1,
                c + 1
            ))
        })?;
        // The bulk command binds these types on the server: the next execute sends its own.
        let id = st.id;
        st.types_sent = false;
        let r = async {
            let conn = start(&mut self.conn, &mut self.busy)?;
            let w = conn.command();
            w.push(COM_STMT_BULK_EXECUTE);
            w.extend_from_slice(&id.to_le_bytes());
            w.extend_from_slice(&BULK_SEND_TYPES.to_le_bytes());
            for t in &types {
                w.extend_from_slice(&[*t, 0]);
            }
            for p in params {
                match *p {
                    Param::Int(i) => {
                        w.push(BULK_INDICATOR_NONE);
                        w.extend_from_slice(&i.to_le_bytes())
                    }
                    Param::Bytes(b) => {
                        w.push(BULK_INDICATOR_NONE);
                        put_lenenc_bytes(w, b)
                    }
                    Param::Null => w.push(BULK_INDICATOR_NULL),
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
        st.write_execute(conn.command(), params);
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

impl Prepared {
    /// Writes the COM_STMT_EXECUTE of this statement with `params` (as many as it takes)
    /// into `w`: the NULL bitmap (bit `k % 8` of byte `k / 8` set when parameter `k` is
    /// NULL), the parameter types when the server does not know them yet, and the values of
    /// the parameters that are not NULL.
    fn write_execute(&mut self, w: &mut Vec<u8>, params: &[Param<'_>]) {
        w.push(COM_STMT_EXECUTE);
        w.extend_from_slice(&self.id.to_le_bytes());
        w.push(0); // CURSOR_TYPE_NO_CURSOR
        w.extend_from_slice(&1u32.to_le_bytes()); // iteration count
        if params.is_empty() {
            return;
        }
        let bitmap = w.len();
        w.resize(bitmap + params.len().div_ceil(8), 0);
        for (k, p) in params.iter().enumerate() {
            if p.is_null() {
                w[bitmap + k / 8] |= 1 << (k % 8);
            }
        }
        // Types go to the server the first time and when they change (as libmysqlclient).
        // The server reads no value and no type for a NULL parameter, so a NULL keeps the
        // type sent before (a script alternating NULL and a value resends nothing); one
        // never sent goes as MYSQL_TYPE_NULL.
        let changed = params
            .iter()
            .zip(&self.types)
            .any(|(p, &t)| !p.is_null() && type_of(p) != t);
        let send_types = changed || !self.types_sent;
        w.push(u8::from(send_types));
        if send_types {
            for (p, t) in params.iter().zip(self.types.iter_mut()) {
                if !p.is_null() || !self.types_sent {
                    *t = type_of(p);
                }
                w.extend_from_slice(&[*t, 0]);
            }
            self.types_sent = true;
        }
        for p in params {
            match *p {
                Param::Int(i) => w.extend_from_slice(&i.to_le_bytes()),
                Param::Bytes(b) => put_lenenc_bytes(w, b),
                Param::Null => {}
            }
        }
    }
}

/// The type of each column of a COM_STMT_BULK_EXECUTE of `params` in rows of `per_row`:
/// that of its first value that is not NULL (MYSQL_TYPE_NULL for a column all NULL). A
/// value of another type is refused as (row, column), both from 0.
fn bulk_types(params: &[Param<'_>], per_row: usize) -> Result<Vec<u8>, (usize, usize)> {
    let mut types = vec![MYSQL_TYPE_NULL; per_row];
    for (r, row) in params.chunks_exact(per_row).enumerate() {
        for (c, (p, t)) in row.iter().zip(types.iter_mut()).enumerate() {
            match (p.is_null(), *t == MYSQL_TYPE_NULL) {
                (true, _) => {}
                (false, true) => *t = type_of(p),
                (false, false) if type_of(p) != *t => return Err((r, c)),
                (false, false) => {}
            }
        }
    }
    Ok(types)
}

fn type_of(p: &Param<'_>) -> u8 {
    match p {
        Param::Int(_) => MYSQL_TYPE_LONGLONG,
        Param::Bytes(_) => MYSQL_TYPE_VAR_STRING,
        Param::Null => MYSQL_TYPE_NULL,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(n: usize) -> Prepared {
        Prepared {
            id: 7,
            types: vec![0; n],
            types_sent: false,
            columns: Vec::new(),
        }
    }

    /// The COM_STMT_EXECUTE of `params`, split after the fixed header (command, id, flags,
    /// iteration count): (NULL bitmap, new-params-bound flag and types, values).
    fn execute(st: &mut Prepared, params: &[Param<'_>]) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let mut w = Vec::new();
        st.write_execute(&mut w, params);
        assert_eq!(w[..10], [COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0]);
        let rest = &w[10..];
        let bitmap = params.len().div_ceil(8);
        let types = if rest[bitmap] == 1 { 1 + 2 * params.len() } else { 1 };
        (
            rest[..bitmap].to_vec(),
            rest[bitmap..bitmap + types].to_vec(),
            rest[bitmap + types..].to_vec(),
        )
    }

    #[test]
    fn null_parameters_set_their_bit_and_send_no_value() {
        const L: u8 = MYSQL_TYPE_LONGLONG;
        const S: u8 = MYSQL_TYPE_VAR_STRING;
        const N: u8 = MYSQL_TYPE_NULL;
        // NULL first, between values, last.
        let mut st = prepared(3);
        let (bitmap, types, values) = execute(&mut st, &[Param::Null, Param::Int(5), Param::Bytes(b"ab")]);
        assert_eq!(bitmap, [0b001]);
        assert_eq!(types, [1, N, 0, L, 0, S, 0]);
        assert_eq!(values, [5, 0, 0, 0, 0, 0, 0, 0, 2, b'a', b'b']);
        // The same statement with the NULL moved: the value that was NULL has a type the
        // server does not know yet, so the types go again; the NULL keeps the one sent.
        let (bitmap, types, values) = execute(&mut st, &[Param::Int(1), Param::Null, Param::Bytes(b"")]);
        assert_eq!(bitmap, [0b010]);
        assert_eq!(types, [1, L, 0, L, 0, S, 0]);
        assert_eq!(values, [1, 0, 0, 0, 0, 0, 0, 0, 0]);
        // Every type known: NULL or not, nothing is resent.
        let (bitmap, types, values) = execute(&mut st, &[Param::Null, Param::Int(2), Param::Null]);
        assert_eq!((bitmap, types), (vec![0b101], vec![0]));
        assert_eq!(values, [2, 0, 0, 0, 0, 0, 0, 0]);
        let (bitmap, types, _) = execute(&mut st, &[Param::Int(3), Param::Int(4), Param::Bytes(b"c")]);
        assert_eq!((bitmap, types), (vec![0], vec![0]));

        // Nine parameters: NULL at 0, 7 and 8 spans two bitmap bytes.
        let nine = |null: &[usize]| -> Vec<Param<'static>> {
            (0..9)
                .map(|k| {
                    if null.contains(&k) {
                        Param::Null
                    } else {
                        Param::Int(k as i64)
                    }
                })
                .collect()
        };
        let mut st = prepared(9);
        let (bitmap, types, values) = execute(&mut st, &nine(&[0, 7, 8]));
        assert_eq!(bitmap, [0b1000_0001, 0b0000_0001]);
        assert_eq!(types[0], 1);
        assert_eq!(
            types[1..].chunks(2).map(|t| t[0]).collect::<Vec<_>>(),
            [N, L, L, L, L, L, L, N, N]
        );
        assert_eq!(values.len(), 6 * 8, "only the six values that are not NULL");
        assert_eq!(values[..8], 1i64.to_le_bytes());
        let (bitmap, _, values) = execute(&mut st, &nine(&[8]));
        assert_eq!(bitmap, [0, 0b1]);
        assert_eq!(values.len(), 8 * 8);
        let (bitmap, _, _) = execute(&mut st, &nine(&[7]));
        assert_eq!(bitmap, [0b1000_0000, 0]);
        let (bitmap, types, values) = execute(&mut st, &nine(&[]));
        assert_eq!((bitmap, types), (vec![0, 0], vec![0]), "all types known by now");
        assert_eq!(values.len(), 9 * 8);

        // No parameters: no bitmap, no flag.
        let mut st = prepared(0);
        let mut w = Vec::new();
        st.write_execute(&mut w, &[]);
        assert_eq!(w.len(), 10);
    }

    #[test]
    fn bulk_columns_take_the_type_of_their_first_value() {
        const L: u8 = MYSQL_TYPE_LONGLONG;
        const S: u8 = MYSQL_TYPE_VAR_STRING;
        let rows = [
            Param::Null,
            Param::Int(1),
            Param::Null,
            Param::Bytes(b"a"),
            Param::Null,
            Param::Null,
        ];
        assert_eq!(bulk_types(&rows, 3), Ok(vec![S, L, MYSQL_TYPE_NULL]));
        let bad = [
            Param::Int(1),
            Param::Null,
            Param::Null,
            Param::Null,
            Param::Bytes(b"x"),
            Param::Int(2),
        ];
        assert_eq!(bulk_types(&bad, 2), Err((2, 0)));
    }
}
