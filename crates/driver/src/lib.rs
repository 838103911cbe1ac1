//! Database sessions: connecting, prepared statements, and classifying server errors.
//!
//! Workloads talk to a [`Session`]; they never see a driver crate's types. A server
//! error becomes a [`DbError`] whose [`ErrorClass`] comes from one table per server
//! family ([`mysql::classify`], [`pg::classify`]), never from matching message strings at
//! call sites. [`pgwire::PgWireSession`] is the PostgreSQL session ([`pg::PgSession`], on
//! `tokio-postgres`, stays selectable for comparison). [`dry::DrySession`] answers without a
//! server (sysbench's `--mysql-dry-run`).

pub mod any;
pub mod dry;
pub mod mysql;
pub mod pg;
pub mod pgwire;
pub mod rows;
mod stream;
pub mod target;
pub mod wire;

use std::fmt;
use std::future::Future;

use dbperf_engine::{ErrorClass, TxnError};

pub use rows::{Cell, Rows};
pub use target::{Target, TargetError};

/// A parameter bound to a prepared statement. Borrowed, so binding does not allocate
/// on our side of the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    /// An integer.
    Int(i64),
    /// A string or binary value.
    Bytes(&'a [u8]),
    /// SQL NULL.
    Null,
}

impl Param<'_> {
    /// True for [`Param::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Param::Null)
    }
}

/// MySQL's ER_UNSUPPORTED_PS: "This command is not supported in the prepared statement
/// protocol yet" (MySQL 8.0 refuses to prepare `BEGIN`). Sessions then run the statement as
/// text, as sysbench's `--db-ps-mode=auto` does.
pub const ER_UNSUPPORTED_PS: u32 = 1295;

/// A statement the server would not prepare, kept as SQL with `?` placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextStatement {
    sql: String,
    placeholders: usize,
}

impl TextStatement {
    /// Counts the `?` placeholders of `sql` outside quoted strings and identifiers.
    pub fn new(sql: &str) -> TextStatement {
        let mut placeholders = 0;
        let mut quote: Option<char> = None;
        let mut chars = sql.chars();
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some(_), '\\') => {
                    chars.next();
                }
                (Some(q), c) if c == q => quote = None,
                (None, '\'' | '"' | '`') => quote = Some(c),
                (None, '?') => placeholders += 1,
                _ => {}
            }
        }
        TextStatement {
            sql: sql.to_owned(),
            placeholders,
        }
    }

    /// Number of parameters it takes.
    pub fn placeholders(&self) -> usize {
        self.placeholders
    }

    /// The SQL with each `?` replaced by its parameter as a literal (strings quoted and
    /// escaped, NULL as the keyword `NULL`), into `out`.
    pub fn render(&self, params: &[Param<'_>], out: &mut Vec<u8>) {
        let mut next = params.iter();
        let mut quote: Option<u8> = None;
        let mut bytes = self.sql.bytes();
        while let Some(b) = bytes.next() {
            match (quote, b) {
                (Some(_), b'\\') => {
                    out.push(b);
                    if let Some(n) = bytes.next() {
                        out.push(n);
                    }
                }
                (Some(q), b) if b == q => {
                    quote = None;
                    out.push(b);
                }
                (None, b'\'' | b'"' | b'`') => {
                    quote = Some(b);
                    out.push(b);
                }
                (None, b'?') => match next.next() {
                    Some(Param::Int(i)) => out.extend_from_slice(i.to_string().as_bytes()),
                    Some(Param::Null) => out.extend_from_slice(b"NULL"),
                    Some(Param::Bytes(v)) => {
                        out.push(b'\'');
                        for &c in *v {
                            match c {
                                0 => out.extend_from_slice(b"\\0"),
                                b'\'' => out.extend_from_slice(b"\\'"),
                                b'\\' => out.extend_from_slice(b"\\\\"),
                                b'\n' => out.extend_from_slice(b"\\n"),
                                b'\r' => out.extend_from_slice(b"\\r"),
                                0x1a => out.extend_from_slice(b"\\Z"),
                                c => out.push(c),
                            }
                        }
                        out.push(b'\'');
                    }
                    None => out.push(b'?'),
                },
                _ => out.push(b),
            }
        }
    }
}

/// Refuses a target that does not speak the MySQL protocol, naming what to do instead.
pub fn require_mysql(target: &Target) -> Result<(), DbError> {
    match target.family {
        target::Family::Mysql => Ok(()),
        target::Family::Postgres => Err(DbError {
            class: ErrorClass::Fatal,
            code: None,
            sqlstate: None,
            message: format!(
                "{} is a PostgreSQL target, and this command speaks only the MySQL protocol so far; \
                 use a mysql:// target or a MariaDB/MySQL sandbox",
                target.redacted()
            ),
        }),
    }
}

/// What a statement did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecInfo {
    /// Rows changed (writes) as the server reports them.
    pub affected_rows: u64,
}

/// A statement prepared on one session: an index into that session's statements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StmtId(pub u32);

/// A server or connection error, classified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbError {
    /// What the engine does about it.
    pub class: ErrorClass,
    /// MySQL errno (or a client-side code), when there is one.
    pub code: Option<u32>,
    /// SQLSTATE, when the server sent one.
    pub sqlstate: Option<String>,
    /// The message.
    pub message: String,
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The message first: it is what a person reads after `error: ` and a context.
        match (self.code, &self.sqlstate) {
            (Some(c), Some(s)) => write!(f, "{} (MySQL error {c}, SQLSTATE {s})", self.message),
            (Some(c), None) => write!(f, "{} (MySQL error {c})", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for DbError {}

/// libmysqlclient's code for a Unix socket nothing accepts on (CR_CONNECTION_ERROR).
pub(crate) const CR_CONNECTION_ERROR: u32 = 2002;
/// libmysqlclient's code for a TCP address nothing accepts on (CR_CONN_HOST_ERROR).
pub(crate) const CR_CONN_HOST_ERROR: u32 = 2003;

/// The socket to `target` could not be opened (refused, no socket file, unreachable): a
/// connection never made, unlike a lost one, though the engine treats both alike (it keeps
/// reconnecting while a run lasts). MySQL targets get libmysqlclient's 2002 (socket) or 2003
/// (TCP), PostgreSQL ones SQLSTATE 08001; the message says what to check.
pub(crate) fn cannot_connect(target: &Target, e: &std::io::Error) -> DbError {
    cannot_connect_to(target.family, target.socket.is_some(), e)
}

/// [`cannot_connect`] for a session that kept the family and transport, not the target.
pub(crate) fn cannot_connect_to(family: target::Family, socket: bool, e: &std::io::Error) -> DbError {
    let (code, sqlstate) = match (family, socket) {
        (target::Family::Postgres, _) => (None, Some("08001".to_string())),
        (target::Family::Mysql, true) => (Some(CR_CONNECTION_ERROR), None),
        (target::Family::Mysql, false) => (Some(CR_CONN_HOST_ERROR), None),
    };
    DbError {
        class: ErrorClass::ConnectionLost,
        code,
        sqlstate,
        message: if e.kind() == std::io::ErrorKind::WouldBlock {
            format!(
                "{}: the server's listen queue stayed full; raise its back_log (and max_connections) \
                 or open fewer connections at once",
                os_reason(e)
            )
        } else {
            format!(
                "{}; is the server running? `dbperf server list` shows the sandboxes and where they listen",
                os_reason(e)
            )
        },
    }
}

/// An I/O error's text without Rust's ` (os error N)` suffix: `Connection refused`.
pub(crate) fn os_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match (e.raw_os_error(), text.rfind(" (os error ")) {
        (Some(_), Some(at)) => text[..at].to_string(),
        _ => text,
    }
}

impl From<DbError> for TxnError {
    fn from(e: DbError) -> TxnError {
        TxnError {
            class: e.class,
            code: e.code,
            message: e.message,
        }
    }
}

/// A server error with what dbperf was doing when it came, e.g. `creating table sbtest1:
/// Table 'sbtest1' already exists (MySQL error 1050, SQLSTATE 42S01)`.
///
/// The server's error is part of the message, not a `source`: a chain printed with `{:#}`
/// would say it twice.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {error}")]
pub struct Failed {
    /// What dbperf was doing.
    pub what: String,
    /// The server's error.
    pub error: DbError,
}

/// For `map_err(doing("creating tables"))?`: wraps a [`DbError`] with what dbperf was doing;
/// `?` then turns the [`Failed`] into the caller's error type.
pub fn doing(what: impl Into<String>) -> impl FnOnce(DbError) -> Failed {
    let what = what.into();
    move |error| Failed { what, error }
}

/// Ends a transaction one of whose statements failed with `e`: rolls it back, so the next
/// BEGIN never commits the partial transaction implicitly, unless the connection is already
/// gone. Returns the error for the engine; a connection lost during the rollback wins, so
/// the engine reconnects.
pub async fn abort_transaction<S: Session>(session: &mut S, e: DbError) -> TxnError {
    if e.class != ErrorClass::ConnectionLost {
        if let Err(rb) = session.query("ROLLBACK").await {
            if rb.class == ErrorClass::ConnectionLost {
                return rb.into();
            }
        }
    }
    e.into()
}

/// One connection to a database server.
pub trait Session: Sized {
    /// Connects to `target`; server errors are classified with `ignore`.
    fn connect(target: &Target, ignore: mysql::IgnoreErrors) -> impl Future<Output = Result<Self, DbError>>;

    /// Prepares `sql` on the server; the id is valid until the session reconnects.
    fn prepare(&mut self, sql: &str) -> impl Future<Output = Result<StmtId, DbError>>;

    /// Executes a prepared statement, draining and discarding any rows.
    fn exec(&mut self, stmt: StmtId, params: &[Param<'_>]) -> impl Future<Output = Result<ExecInfo, DbError>>;

    /// Executes a prepared statement and keeps the rows of its first result set in `rows`
    /// (emptied first), for workloads that read what they select.
    fn exec_rows(
        &mut self,
        stmt: StmtId,
        params: &[Param<'_>],
        rows: &mut Rows,
    ) -> impl Future<Output = Result<ExecInfo, DbError>>;

    /// Runs a statement through the text protocol, discarding any rows.
    fn query(&mut self, sql: &str) -> impl Future<Output = Result<ExecInfo, DbError>>;

    /// Runs a query and returns its rows as strings (NULL as `None`). For setup and
    /// inspection, not for the hot path.
    fn query_rows(&mut self, sql: &str) -> impl Future<Output = Result<Vec<Vec<Option<String>>>, DbError>>;

    /// Drops the connection and opens a new one with the same options. Prepared
    /// statements are gone afterwards.
    fn reconnect(&mut self) -> impl Future<Output = Result<(), DbError>>;

    /// The server's version string.
    fn server_version(&self) -> String;

    /// From now on, prepared statements' parameters go as text, for the server to convert
    /// to the types it inferred, as pgbench (libpq's `PQexecPrepared` with text values)
    /// sends them: a value that does not convert is the server's error, in its words.
    /// Sessions that bind typed values only keep doing so (the default).
    fn send_params_as_text(&mut self) {}

    /// Whether the server said, at the end of the last request, that a transaction block is
    /// open (PostgreSQL's ReadyForQuery status); sessions that do not track it say no.
    fn in_transaction(&self) -> bool {
        false
    }

    /// Whether [`Session::exec_unnamed`] works: only dbperf's own PostgreSQL session has
    /// unnamed statements (PostgreSQL's extended query protocol).
    const UNNAMED_STATEMENTS: bool = false;

    /// Whether the server answers a query of comments alone (PostgreSQL's empty query), where
    /// MySQL refuses it ("Query was empty").
    const EMPTY_QUERIES: bool = false;

    /// Whether [`Session::query`] runs several statements separated by `;` as one query
    /// (PostgreSQL's simple query protocol: one round trip, one implicit transaction).
    const MULTI_STATEMENT_QUERIES: bool = false;

    /// Runs `sql` (`$1..$n` placeholders) as an unnamed statement parsed for this one
    /// execution (what `pgbench -M extended` does); sessions without them refuse.
    fn exec_unnamed(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        rows: Option<&mut Rows>,
    ) -> impl Future<Output = Result<ExecInfo, DbError>> {
        let _ = (sql, params, rows);
        async {
            Err(DbError {
                class: dbperf_engine::ErrorClass::Fatal,
                code: None,
                sqlstate: None,
                message: "unnamed statements are PostgreSQL's extended query protocol, which only dbperf's own \
                          PostgreSQL session (--client-impl wire) sends"
                    .into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_never_made_is_2003_or_2002_with_a_hint_and_no_os_error_noise() {
        let refused = std::io::Error::from_raw_os_error(libc::ECONNREFUSED);
        let tcp = Target::parse("mysql://sb:sb@127.0.0.1:1/sbtest").unwrap();
        let e = cannot_connect(&tcp, &refused);
        assert_eq!((e.class, e.code), (ErrorClass::ConnectionLost, Some(2003)));
        assert_eq!(
            e.to_string(),
            "Connection refused; is the server running? `dbperf server list` shows the sandboxes and \
             where they listen (MySQL error 2003)"
        );
        let socket = Target::parse("mysql://sb:sb@localhost/sbtest?socket=/nowhere/mysqld.sock").unwrap();
        assert_eq!(cannot_connect(&socket, &refused).code, Some(2002));
        let pg = Target::parse("postgres://sb:sb@127.0.0.1:1/sbtest").unwrap();
        let e = cannot_connect(&pg, &refused);
        assert_eq!((e.code, e.sqlstate.as_deref()), (None, Some("08001")));
        assert!(e.to_string().starts_with("Connection refused; is the server running?"));
        assert_eq!(os_reason(&std::io::Error::other("plain")), "plain");
        let busy = cannot_connect(&socket, &std::io::Error::from_raw_os_error(libc::EAGAIN));
        assert!(busy.message.contains("raise its back_log"), "{busy}");
        // With what dbperf was doing, printed as `main` prints errors: the reason once.
        let shown = format!("{:#}", anyhow::Error::from(doing("connecting")(e)));
        assert_eq!(shown.matches("Connection refused").count(), 1, "{shown}");
        assert!(shown.starts_with("connecting: Connection refused;"), "{shown}");
    }

    #[test]
    fn text_statements_count_and_fill_placeholders() {
        let t = TextStatement::new("SELECT c FROM t WHERE id = ? AND c = '?' AND pad = ?");
        assert_eq!(t.placeholders(), 2);
        let mut out = Vec::new();
        t.render(&[Param::Int(-7), Param::Bytes(b"it's a\\b\0")], &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "SELECT c FROM t WHERE id = -7 AND c = '?' AND pad = 'it\\'s a\\\\b\\0'"
        );
        assert_eq!(TextStatement::new("BEGIN").placeholders(), 0);
        // NULL goes unquoted, wherever it is; a `?` inside quotes stays a `?`.
        let t = TextStatement::new("INSERT INTO t VALUES (?, '?', ?, ?)");
        assert_eq!(t.placeholders(), 3);
        let mut out = Vec::new();
        t.render(&[Param::Null, Param::Bytes(b"NULL"), Param::Null], &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "INSERT INTO t VALUES (NULL, '?', 'NULL', NULL)"
        );
    }
}
