//! Database sessions: connecting, prepared statements, and classifying server errors.
//!
//! Workloads talk to a [`Session`]; they never see a driver crate's types. A server
//! error becomes a [`DbError`] whose [`ErrorClass`] comes from one table per server
//! family ([`mysql::classify`]), never from matching message strings at call sites.
//! PostgreSQL will implement the same trait.

pub mod mysql;
pub mod target;
pub mod wire;

use std::fmt;
use std::future::Future;

use dbperf_engine::{ErrorClass, TxnError};

pub use target::{Target, TargetError};

/// A parameter bound to a prepared statement. Borrowed, so binding does not allocate
/// on our side of the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param<'a> {
    /// An integer.
    Int(i64),
    /// A string or binary value.
    Bytes(&'a [u8]),
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
        match (self.code, &self.sqlstate) {
            (Some(c), Some(s)) => write!(f, "error {c} ({s}): {}", self.message),
            (Some(c), None) => write!(f, "error {c}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for DbError {}

impl From<DbError> for TxnError {
    fn from(e: DbError) -> TxnError {
        TxnError {
            class: e.class,
            code: e.code,
            message: e.message,
        }
    }
}

/// One connection to a database server.
pub trait Session: Sized {
    /// Connects to `target`; server errors are classified with `ignore`.
    fn connect(target: &Target, ignore: mysql::IgnoreErrors) -> impl Future<Output = Result<Self, DbError>>;

    /// Prepares `sql` on the server; the id is valid until the session reconnects.
    fn prepare(&mut self, sql: &str) -> impl Future<Output = Result<StmtId, DbError>>;

    /// Executes a prepared statement, draining and discarding any rows.
    fn exec(&mut self, stmt: StmtId, params: &[Param<'_>]) -> impl Future<Output = Result<ExecInfo, DbError>>;

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
}
