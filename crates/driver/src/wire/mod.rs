//! A lean MySQL wire-protocol session for the benchmark hot path: [`WireSession`].
//!
//! It speaks just what dbperf needs — handshake and login, COM_QUERY, COM_STMT_PREPARE,
//! COM_STMT_EXECUTE, LOAD DATA LOCAL INFILE — over exactly the transport the target
//! names. In steady state an execute allocates nothing: parameters are written straight
//! into a reused write buffer, and result rows are drained from a reused 64 KiB read
//! buffer without being decoded. [`super::mysql::MysqlSession`] (on `mysql_async`) is
//! the reference it is tested against.
//!
//! Files: `packet` frames packets, `handshake` logs in, `session` is the
//! [`super::Session`] implementation, `result` reads OK/ERR/result-set responses.

mod handshake;
mod packet;
mod result;
mod session;

use dbperf_engine::ErrorClass;

pub use session::WireSession;

use super::mysql::{classify, IgnoreErrors};
use super::DbError;

/// Capability flags (the subset dbperf sends or reads).
pub(crate) mod caps {
    pub const LONG_PASSWORD: u32 = 0x0000_0001;
    /// The same bit as [`LONG_PASSWORD`]: a MariaDB server clears it to say it has
    /// extended capabilities.
    pub const CLIENT_MYSQL: u32 = 0x0000_0001;
    pub const LONG_FLAG: u32 = 0x0000_0004;
    pub const CONNECT_WITH_DB: u32 = 0x0000_0008;
    pub const LOCAL_FILES: u32 = 0x0000_0080;
    pub const PROTOCOL_41: u32 = 0x0000_0200;
    pub const TRANSACTIONS: u32 = 0x0000_2000;
    pub const SECURE_CONNECTION: u32 = 0x0000_8000;
    pub const MULTI_STATEMENTS: u32 = 0x0001_0000;
    pub const MULTI_RESULTS: u32 = 0x0002_0000;
    pub const PS_MULTI_RESULTS: u32 = 0x0004_0000;
    pub const PLUGIN_AUTH: u32 = 0x0008_0000;
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 0x0020_0000;
    pub const DEPRECATE_EOF: u32 = 0x0100_0000;
    /// MariaDB extended capability: executes may skip unchanged column metadata.
    pub const MARIADB_CACHE_METADATA: u32 = 0x0000_0010;
    /// MariaDB extended capability: COM_STMT_BULK_EXECUTE (one prepared statement, many
    /// rows of parameters, one command).
    pub const MARIADB_STMT_BULK_OPERATIONS: u32 = 0x0000_0004;
}

/// Server status flag: another result follows this one.
pub(crate) const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;

pub(crate) const COM_QUIT: u8 = 0x01;
pub(crate) const COM_QUERY: u8 = 0x03;
pub(crate) const COM_STMT_PREPARE: u8 = 0x16;
pub(crate) const COM_STMT_EXECUTE: u8 = 0x17;
pub(crate) const COM_STMT_BULK_EXECUTE: u8 = 0xFA;

/// libmysqlclient's client-side error codes, for errors that are not the server's.
pub(crate) const CR_SERVER_LOST: u32 = 2013;
pub(crate) const CR_MALFORMED_PACKET: u32 = 2027;
pub(crate) const CR_AUTH_PLUGIN_CANNOT_LOAD: u32 = 2059;
pub(crate) const CR_AUTH_PLUGIN_ERR: u32 = 2061;

/// An I/O error or end of stream: the connection is gone.
pub(crate) fn lost(e: std::io::Error) -> DbError {
    DbError {
        class: ErrorClass::ConnectionLost,
        code: Some(CR_SERVER_LOST),
        sqlstate: None,
        message: format!("lost connection to the server: {e}"),
    }
}

/// The server said something the protocol does not allow here; the connection is
/// unusable afterwards.
pub(crate) fn protocol(what: String) -> DbError {
    client_error(CR_MALFORMED_PACKET, format!("MySQL protocol violation: {what}"))
}

/// A client-side error that stops the run.
pub(crate) fn client_error(code: u32, message: String) -> DbError {
    DbError {
        class: ErrorClass::Fatal,
        code: Some(code),
        sqlstate: None,
        message,
    }
}

/// True when the connection cannot be used after `e`.
pub(crate) fn breaks_connection(e: &DbError) -> bool {
    e.class == ErrorClass::ConnectionLost || e.code == Some(CR_MALFORMED_PACKET)
}

/// Decodes an ERR packet (`0xFF`, errno, optional `#` + SQLSTATE, message).
pub(crate) fn server_error(p: &[u8], ignore: &IgnoreErrors) -> DbError {
    let mut r = packet::Reader::new(p.get(1..).unwrap_or_default());
    let Some(code) = r.u16() else {
        return protocol("truncated ERR packet".into());
    };
    let code = u32::from(code);
    let sqlstate = if r.peek() == Some(b'#') {
        r.u8();
        r.bytes(5).map(|s| String::from_utf8_lossy(s).into_owned())
    } else {
        None
    };
    DbError {
        class: classify(code, ignore),
        code: Some(code),
        sqlstate,
        message: String::from_utf8_lossy(r.rest()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn err_packets_decode_and_classify() {
        let e = server_error(
            b"\xff\x26\x04#23000Duplicate entry '1' for key 'PRIMARY'",
            &IgnoreErrors::All,
        );
        assert_eq!(e.code, Some(1062));
        assert_eq!(e.class, ErrorClass::UniqueViolation);
        assert_eq!(e.sqlstate.as_deref(), Some("23000"));
        assert_eq!(e.message, "Duplicate entry '1' for key 'PRIMARY'");
        // Errors before protocol 4.1 is agreed carry no SQLSTATE.
        let e = server_error(b"\xff\x10\x04Too many connections", &IgnoreErrors::sysbench_default());
        assert_eq!((e.code, e.sqlstate, e.class), (Some(1040), None, ErrorClass::Fatal));
        assert!(breaks_connection(&server_error(b"\xff", &IgnoreErrors::All)));
    }
}
