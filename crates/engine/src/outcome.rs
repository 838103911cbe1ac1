//! What can happen to a transaction: its type on success, or an error class.
//!
//! Drivers map server error codes (MySQL errno, PostgreSQL SQLSTATE) to an
//! [`ErrorClass`] through a table; the engine decides from the class alone whether to
//! retry, reconnect or stop, and counts each class separately.

use std::fmt;

/// Why a transaction attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorClass {
    /// The server chose this transaction as a deadlock victim (MySQL 1213, PG 40P01).
    Deadlock,
    /// A row lock wait timed out (MySQL 1205).
    LockWaitTimeout,
    /// Serialization failure (PG 40001).
    Serialization,
    /// A duplicate key that the user asked to tolerate (MySQL 1062, PG 23505).
    UniqueViolation,
    /// Any other server error the user listed as ignorable (`--mysql-ignore-errors`).
    Ignored,
    /// The connection broke; the worker reconnects and the transaction is retried.
    ConnectionLost,
    /// Anything else: the run stops and reports it.
    Fatal,
}

/// What the engine does about an error of a given class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Roll back (the worker already did) and run the transaction again.
    Retry,
    /// Reconnect, then run the transaction again.
    Reconnect,
    /// Stop the run.
    Abort,
}

impl ErrorClass {
    /// Every class, in the order used for counter arrays.
    pub const ALL: [ErrorClass; 7] = [
        ErrorClass::Deadlock,
        ErrorClass::LockWaitTimeout,
        ErrorClass::Serialization,
        ErrorClass::UniqueViolation,
        ErrorClass::Ignored,
        ErrorClass::ConnectionLost,
        ErrorClass::Fatal,
    ];
    /// Number of classes.
    pub const COUNT: usize = Self::ALL.len();

    /// Stable name used in reports and `summary.json`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Deadlock => "deadlock",
            ErrorClass::LockWaitTimeout => "lock_wait_timeout",
            ErrorClass::Serialization => "serialization",
            ErrorClass::UniqueViolation => "unique_violation",
            ErrorClass::Ignored => "ignored",
            ErrorClass::ConnectionLost => "connection_lost",
            ErrorClass::Fatal => "fatal",
        }
    }

    /// Index into counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// What the engine does about this class.
    pub fn action(self) -> Action {
        match self {
            ErrorClass::ConnectionLost => Action::Reconnect,
            ErrorClass::Fatal => Action::Abort,
            _ => Action::Retry,
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed transaction attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxnError {
    /// How the engine treats it.
    pub class: ErrorClass,
    /// The server's error code, when there is one (MySQL errno).
    pub code: Option<u32>,
    /// The server's or client's message.
    pub message: String,
}

impl TxnError {
    /// Builds an error of `class`.
    pub fn new(class: ErrorClass, code: Option<u32>, message: impl Into<String>) -> TxnError {
        TxnError {
            class,
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for TxnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "{} (error {code}): {}", self.class, self.message),
            None => write!(f, "{}: {}", self.class, self.message),
        }
    }
}

impl std::error::Error for TxnError {}

/// A completed transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxnDone {
    /// Index of the transaction type in the workload's [`crate::OpTable`].
    pub kind: u16,
    /// The transaction ended in a rollback the benchmark asks for (TPC-C's 1% New-Order
    /// rollback): it counts as done, and separately, never as an error.
    pub expected_rollback: bool,
}

impl TxnDone {
    /// A committed transaction of type `kind`.
    pub fn committed(kind: u16) -> TxnDone {
        TxnDone {
            kind,
            expected_rollback: false,
        }
    }
}

/// How a statement counts in the read/write/other tally (sysbench's rule: a result set
/// is a read, affected rows make a write, anything else is other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryClass {
    /// Returned a result set.
    Read = 0,
    /// Changed at least one row.
    Write = 1,
    /// BEGIN, COMMIT, or a write that matched nothing.
    Other = 2,
}
