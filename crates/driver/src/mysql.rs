//! The MySQL-protocol session (MySQL, MariaDB, Percona Server) on `mysql_async`, and
//! the errno → [`ErrorClass`] table.
//!
//! Connections never silently switch transport: `mysql_async` would otherwise move a
//! TCP connection to 127.0.0.1 onto the server's Unix socket, and the two differ by up
//! to 2x in throughput (sysbench #552), so we connect exactly where the user said.

use std::collections::BTreeSet;

use dbperf_engine::ErrorClass;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Statement, Value};

use super::{DbError, ExecInfo, Param, Rows, Session, StmtId, Target, TextStatement, ER_UNSUPPORTED_PS};

/// Which server errors a workload tolerates (`--mysql-ignore-errors`, and for
/// PostgreSQL `--pgsql-ignore-errors`, parsed by [`super::pg::parse_ignore`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IgnoreErrors {
    /// These errnos are retried; any other server error is fatal.
    Codes(BTreeSet<u32>),
    /// These PostgreSQL SQLSTATEs are retried (`--pgsql-ignore-errors`); any other
    /// server error is fatal.
    Sqlstates(BTreeSet<String>),
    /// Every server error is retried (`all`).
    All,
}

impl IgnoreErrors {
    /// sysbench's default: deadlock (1213), record changed (1020), lock wait timeout (1205).
    pub fn sysbench_default() -> IgnoreErrors {
        IgnoreErrors::Codes([1213, 1020, 1205].into_iter().collect())
    }

    /// Parses `all`, `none` or a comma-separated errno list.
    pub fn parse(s: &str) -> Result<IgnoreErrors, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("all") {
            return Ok(IgnoreErrors::All);
        }
        if s.is_empty() || s.eq_ignore_ascii_case("none") {
            return Ok(IgnoreErrors::Codes(BTreeSet::new()));
        }
        s.split(',')
            .map(|c| {
                c.trim().parse::<u32>().map_err(|_| {
                    format!("--mysql-ignore-errors: {c:?} is not an error number; use a list like 1213,1205 or 'all'")
                })
            })
            .collect::<Result<_, _>>()
            .map(IgnoreErrors::Codes)
    }

    fn contains(&self, code: u32) -> bool {
        match self {
            IgnoreErrors::All => true,
            IgnoreErrors::Codes(c) => c.contains(&code),
            IgnoreErrors::Sqlstates(_) => false,
        }
    }

    /// True when PostgreSQL SQLSTATE `state` is to be retried.
    pub fn contains_sqlstate(&self, state: &str) -> bool {
        match self {
            IgnoreErrors::All => true,
            IgnoreErrors::Sqlstates(s) => s.contains(state),
            IgnoreErrors::Codes(_) => false,
        }
    }
}

/// Server errors that mean the connection is gone (the server killed it or is
/// shutting down); client-side codes 2006/2013/2055 arrive as I/O errors instead.
const CONNECTION_GONE: &[u32] = &[1053, 1927, 2006, 2011, 2013, 2055, 4031];

/// Classifies a server error code. Connection loss is always reconnected; otherwise a
/// code is retried only when the ignore list allows it, and then counted by kind.
pub fn classify(code: u32, ignore: &IgnoreErrors) -> ErrorClass {
    if CONNECTION_GONE.contains(&code) {
        return ErrorClass::ConnectionLost;
    }
    if !ignore.contains(code) {
        return ErrorClass::Fatal;
    }
    match code {
        1213 => ErrorClass::Deadlock,
        1205 => ErrorClass::LockWaitTimeout,
        1062 => ErrorClass::UniqueViolation,
        _ => ErrorClass::Ignored,
    }
}

/// A MySQL-protocol session.
pub struct MysqlSession {
    conn: Option<Conn>,
    opts: Opts,
    statements: Vec<Prepared>,
    ignore: IgnoreErrors,
    params: Vec<Value>,
    version: String,
}

/// A statement on the server, or one it would not prepare (run as text).
#[derive(Clone)]
enum Prepared {
    Server(Statement),
    Text(TextStatement),
}

impl MysqlSession {
    /// Connects to `target`, treating errors per `ignore`.
    pub async fn connect(target: &Target, ignore: IgnoreErrors) -> Result<MysqlSession, DbError> {
        super::require_mysql(target)?;
        let opts: Opts = Self::opts(target).into();
        let mut s = MysqlSession {
            conn: None,
            opts,
            statements: Vec::new(),
            ignore,
            params: Vec::new(),
            version: String::new(),
        };
        s.open().await.map_err(|e| DbError {
            message: format!(
                "cannot connect to {} as {}: {}",
                target.endpoint(),
                target.user,
                e.message
            ),
            ..e
        })?;
        Ok(s)
    }

    fn opts(t: &Target) -> OptsBuilder {
        let b = OptsBuilder::default()
            .user(Some(t.user.clone()))
            .pass(Some(t.password.clone()))
            .db_name(Some(t.database.clone()))
            .prefer_socket(false)
            .tcp_nodelay(true)
            .stmt_cache_size(0);
        match &t.socket {
            Some(sock) => b.socket(Some(sock.clone())),
            None => b.ip_or_hostname(t.host.clone()).tcp_port(t.port),
        }
    }

    async fn open(&mut self) -> Result<(), DbError> {
        let conn = Conn::new(self.opts.clone()).await.map_err(|e| match e {
            mysql_async::Error::Io(mysql_async::IoError::Io(io)) => {
                super::cannot_connect_to(super::target::Family::Mysql, self.opts.socket().is_some(), &io)
            }
            e => self.err(e),
        })?;
        let (a, b, c) = conn.server_version();
        self.version = format!("{a}.{b}.{c}");
        self.conn = Some(conn);
        self.statements.clear();
        if let Ok(rows) = self.query_rows("SELECT VERSION()").await {
            if let Some(Some(v)) = rows.first().and_then(|r| r.first()) {
                self.version = v.clone();
            }
        }
        Ok(())
    }

    fn conn(&mut self) -> Result<&mut Conn, DbError> {
        self.conn.as_mut().ok_or_else(|| DbError {
            class: ErrorClass::ConnectionLost,
            code: None,
            sqlstate: None,
            message: "not connected".into(),
        })
    }

    fn err(&self, e: mysql_async::Error) -> DbError {
        match e {
            mysql_async::Error::Server(s) => DbError {
                class: classify(s.code as u32, &self.ignore),
                code: Some(s.code as u32),
                sqlstate: Some(s.state),
                message: s.message,
            },
            mysql_async::Error::Io(io) => DbError {
                class: ErrorClass::ConnectionLost,
                code: Some(2013),
                sqlstate: None,
                message: io.to_string(),
            },
            mysql_async::Error::Driver(d) => {
                let msg = d.to_string();
                // A closed or unusable connection surfaces as a driver error too.
                let lost = matches!(
                    d,
                    mysql_async::DriverError::ConnectionClosed | mysql_async::DriverError::PoolDisconnected
                );
                DbError {
                    class: if lost {
                        ErrorClass::ConnectionLost
                    } else {
                        ErrorClass::Fatal
                    },
                    code: lost.then_some(2013),
                    sqlstate: None,
                    message: msg,
                }
            }
            other => DbError {
                class: ErrorClass::Fatal,
                code: None,
                sqlstate: None,
                message: other.to_string(),
            },
        }
    }
}

impl MysqlSession {
    /// Runs `LOAD DATA LOCAL INFILE` statement `sql`, streaming the file's bytes from
    /// `data` (no file on disk). Fails with the server's error when `local_infile` is off.
    pub async fn load_data_local(
        &mut self,
        sql: &str,
        data: futures_util::stream::BoxStream<'static, std::io::Result<bytes::Bytes>>,
    ) -> Result<ExecInfo, DbError> {
        let conn = self.conn()?;
        // The handler must be Sync; a Mutex makes the (Send) stream so.
        let slot = std::sync::Mutex::new(Some(data));
        conn.set_infile_handler(async move {
            slot.lock()
                .ok()
                .and_then(|mut s| s.take())
                .ok_or_else(|| mysql_async::Error::Other("LOCAL INFILE data already consumed".into()))
        });
        match conn.query_drop(sql).await {
            Ok(()) => Ok(ExecInfo {
                affected_rows: conn.affected_rows(),
            }),
            Err(e) => Err(self.err(e)),
        }
    }
}

/// `p` as `mysql_async` binds it (NULL sets the parameter's bit in the NULL bitmap).
fn value(p: &Param<'_>) -> Value {
    match *p {
        Param::Int(i) => Value::Int(i),
        Param::Bytes(b) => Value::Bytes(b.to_vec()),
        Param::Null => Value::NULL,
    }
}

impl Session for MysqlSession {
    async fn connect(target: &Target, ignore: IgnoreErrors) -> Result<MysqlSession, DbError> {
        MysqlSession::connect(target, ignore).await
    }

    async fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let conn = self.conn()?;
        let stmt = match conn.prep(sql).await {
            Ok(s) => Prepared::Server(s),
            Err(e) => match self.err(e) {
                e if e.code == Some(ER_UNSUPPORTED_PS) => Prepared::Text(TextStatement::new(sql)),
                e => return Err(e),
            },
        };
        self.statements.push(stmt);
        Ok(StmtId(self.statements.len() as u32 - 1))
    }

    async fn exec(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<ExecInfo, DbError> {
        // Reuse the parameter vector's allocation; the driver takes ownership per call.
        let mut values = std::mem::take(&mut self.params);
        values.clear();
        values.extend(params.iter().map(value));
        let statement = self.statements.get(stmt.0 as usize).cloned().ok_or_else(|| DbError {
            class: ErrorClass::Fatal,
            code: None,
            sqlstate: None,
            message: format!("statement {} was not prepared on this session", stmt.0),
        })?;
        let statement = match statement {
            Prepared::Server(s) => s,
            Prepared::Text(t) => {
                let mut sql = Vec::new();
                t.render(params, &mut sql);
                self.params = values;
                return self.query(&String::from_utf8_lossy(&sql)).await;
            }
        };
        let conn = self.conn()?;
        let params = if values.is_empty() {
            mysql_async::Params::Empty
        } else {
            mysql_async::Params::Positional(values)
        };
        match conn.exec_drop(&statement, params).await {
            Ok(()) => Ok(ExecInfo {
                affected_rows: conn.affected_rows(),
            }),
            Err(e) => Err(self.err(e)),
        }
    }

    async fn exec_rows(&mut self, stmt: StmtId, params: &[Param<'_>], rows: &mut Rows) -> Result<ExecInfo, DbError> {
        let values: Vec<Value> = params.iter().map(value).collect();
        let statement = match self.statements.get(stmt.0 as usize).cloned() {
            Some(Prepared::Server(s)) => s,
            Some(Prepared::Text(t)) => {
                let mut sql = Vec::new();
                t.render(params, &mut sql);
                let text = self.query_rows(&String::from_utf8_lossy(&sql)).await?;
                rows.reset(text.first().map_or(0, Vec::len));
                for cell in text.iter().flatten() {
                    match cell {
                        Some(v) => rows.push_bytes(v.as_bytes()),
                        None => rows.push_null(),
                    }
                }
                return Ok(ExecInfo::default());
            }
            None => {
                return Err(DbError {
                    class: ErrorClass::Fatal,
                    code: None,
                    sqlstate: None,
                    message: format!("statement {} was not prepared on this session", stmt.0),
                })
            }
        };
        let conn = self.conn()?;
        let params = if values.is_empty() {
            mysql_async::Params::Empty
        } else {
            mysql_async::Params::Positional(values)
        };
        let result: Vec<mysql_async::Row> = match conn.exec(&statement, params).await {
            Ok(r) => r,
            Err(e) => return Err(self.err(e)),
        };
        rows.reset(statement.num_columns() as usize);
        for row in result {
            for v in row.unwrap() {
                match v {
                    Value::NULL => rows.push_null(),
                    Value::Int(i) => rows.push_int(i),
                    Value::UInt(u) => rows.push_int(u as i64),
                    Value::Float(f) => rows.push_float(f as f64),
                    Value::Double(f) => rows.push_float(f),
                    Value::Bytes(b) => rows.push_bytes(&b),
                    other => rows.push_bytes(other.as_sql(true).trim_matches('\'').as_bytes()),
                }
            }
        }
        Ok(ExecInfo::default())
    }

    async fn query(&mut self, sql: &str) -> Result<ExecInfo, DbError> {
        let conn = self.conn()?;
        match conn.query_drop(sql).await {
            Ok(()) => Ok(ExecInfo {
                affected_rows: conn.affected_rows(),
            }),
            Err(e) => Err(self.err(e)),
        }
    }

    async fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        let conn = self.conn()?;
        let rows: Vec<mysql_async::Row> = match conn.query(sql).await {
            Ok(r) => r,
            Err(e) => return Err(self.err(e)),
        };
        Ok(rows
            .into_iter()
            .map(|row| {
                row.unwrap()
                    .into_iter()
                    .map(|v| match v {
                        Value::NULL => None,
                        Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
                    })
                    .collect()
            })
            .collect())
    }

    async fn reconnect(&mut self) -> Result<(), DbError> {
        if let Some(conn) = self.conn.take() {
            // The old connection may be half dead; do not wait for a clean goodbye.
            drop(conn);
        }
        self.open().await
    }

    fn server_version(&self) -> String {
        self.version.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_follows_the_ignore_list() {
        let d = IgnoreErrors::sysbench_default();
        assert_eq!(classify(1213, &d), ErrorClass::Deadlock);
        assert_eq!(classify(1205, &d), ErrorClass::LockWaitTimeout);
        assert_eq!(classify(1020, &d), ErrorClass::Ignored);
        assert_eq!(classify(1062, &d), ErrorClass::Fatal);
        assert_eq!(classify(2013, &d), ErrorClass::ConnectionLost);
        assert_eq!(
            classify(1927, &IgnoreErrors::Codes(BTreeSet::new())),
            ErrorClass::ConnectionLost
        );
        let all = IgnoreErrors::parse("all").unwrap();
        assert_eq!(classify(1062, &all), ErrorClass::UniqueViolation);
        assert_eq!(classify(1146, &all), ErrorClass::Ignored);
        let none = IgnoreErrors::parse("none").unwrap();
        assert_eq!(classify(1213, &none), ErrorClass::Fatal);
    }

    #[test]
    fn ignore_list_parsing_names_the_bad_item() {
        assert_eq!(
            IgnoreErrors::parse("1213, 1062").unwrap(),
            IgnoreErrors::Codes([1213, 1062].into_iter().collect())
        );
        let e = IgnoreErrors::parse("1213,deadlock").unwrap_err();
        assert!(e.contains("\"deadlock\""), "{e}");
    }
}
