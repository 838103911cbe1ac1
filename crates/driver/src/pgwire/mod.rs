//! A lean PostgreSQL session for the benchmark hot path: [`PgWireSession`], dbperf's
//! default for `postgres://` targets.
//!
//! It owns the socket (TCP or the Unix socket the target names) with one reused read
//! buffer and one reused write buffer, and runs every request in the caller's task: an
//! execute is one write (Bind + Execute + Sync) and reads until ReadyForQuery, with no
//! background connection task and no channel in between. Messages are built and parsed,
//! and passwords answered (cleartext, md5, SCRAM-SHA-256), by the `postgres-protocol`
//! crate; this module owns the conversation. [`super::pg::PgSession`] (on
//! `tokio-postgres`) is the reference it is tested against and stays selectable with
//! `--client-impl tokio-postgres`.
//!
//! Files: `conn` is the transport and the startup/login exchange, `session` the
//! [`super::Session`] implementation, `types` the parameter and cell encodings both
//! PostgreSQL sessions share.

mod conn;
mod session;
pub(crate) mod types;

use dbperf_engine::ErrorClass;
use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::ErrorResponseBody;

pub use session::PgWireSession;

use super::mysql::IgnoreErrors;
use super::pg::classify;
use super::DbError;

/// An I/O error or end of stream: the connection is gone.
pub(crate) fn lost(e: std::io::Error) -> DbError {
    DbError {
        class: ErrorClass::ConnectionLost,
        code: None,
        sqlstate: None,
        message: format!("lost connection to the PostgreSQL server: {e}"),
    }
}

/// The server said something the protocol does not allow here; the connection is
/// dropped afterwards.
pub(crate) fn protocol(what: String) -> DbError {
    DbError {
        class: ErrorClass::ConnectionLost,
        code: None,
        sqlstate: None,
        message: format!("PostgreSQL protocol violation: {what}"),
    }
}

/// A mistake of the calling code or a value that would not encode: fatal, the
/// connection unaffected.
pub(crate) fn misuse(message: String) -> DbError {
    DbError {
        class: ErrorClass::Fatal,
        code: None,
        sqlstate: None,
        message,
    }
}

/// Decodes an ErrorResponse into a [`DbError`] classified by its SQLSTATE, worded as
/// [`super::pg::PgSession`] words it; with the `sql` text it answers, an error with a
/// position shows it under its first line, as libpq does.
pub(crate) fn server_error(body: &ErrorResponseBody, ignore: &IgnoreErrors, sql: Option<&str>) -> DbError {
    let (mut severity, mut code, mut message) = (String::new(), String::new(), String::new());
    let (mut detail, mut hint, mut context, mut position) = (None, None, None, None);
    let mut fields = body.fields();
    loop {
        match fields.next() {
            Ok(Some(f)) => {
                let value = || String::from_utf8_lossy(f.value_bytes()).into_owned();
                match f.type_() {
                    b'S' => severity = value(),
                    b'C' => code = value(),
                    b'M' => message = value(),
                    b'D' => detail = Some(value()),
                    b'H' => hint = Some(value()),
                    b'W' => context = Some(value()),
                    b'P' => position = value().parse::<usize>().ok(),
                    _ => {}
                }
            }
            Ok(None) => break,
            Err(e) => return protocol(format!("malformed ErrorResponse: {e}")),
        }
    }
    DbError {
        class: classify(&code, ignore),
        code: None,
        message: super::pg::server_message(
            &severity,
            &message,
            &code,
            sql.zip(position),
            [detail.as_deref(), hint.as_deref(), context.as_deref()],
        ),
        sqlstate: Some(code),
    }
}

#[cfg(test)]
mod tests {
    use bytes::{BufMut, BytesMut};
    use postgres_protocol::message::backend::Message;

    use super::*;

    fn error_response(fields: &[(u8, &str)]) -> ErrorResponseBody {
        let mut body = BytesMut::new();
        for (t, v) in fields {
            body.put_u8(*t);
            body.put_slice(v.as_bytes());
            body.put_u8(0);
        }
        body.put_u8(0);
        let mut m = BytesMut::new();
        m.put_u8(b'E');
        m.put_i32(body.len() as i32 + 4);
        m.put_slice(&body);
        match Message::parse(&mut m) {
            Ok(Some(Message::ErrorResponse(b))) => b,
            _ => panic!("not an ErrorResponse"),
        }
    }

    #[test]
    fn error_responses_decode_and_classify() {
        let b = error_response(&[
            (b'S', "ERROR"),
            (b'V', "ERROR"),
            (b'C', "23505"),
            (b'M', "duplicate key value violates unique constraint \"t_pkey\""),
        ]);
        let e = server_error(&b, &super::super::pg::default_ignore(), None);
        assert_eq!(e.class, ErrorClass::UniqueViolation);
        assert_eq!(e.sqlstate.as_deref(), Some("23505"));
        assert_eq!(
            e.message,
            "ERROR: duplicate key value violates unique constraint \"t_pkey\" (SQLSTATE 23505)"
        );
        // DETAIL, HINT and CONTEXT follow on lines of their own, and libpq's shape of it
        // all is what pgbench prints (as libpq 15 prints this error).
        let b = error_response(&[
            (b'S', "ERROR"),
            (b'C', "22P02"),
            (b'M', "invalid input syntax for type json"),
            (b'D', "Token \"invalid\" is invalid."),
            (
                b'W',
                "JSON data, line 1: { invalid...\nunnamed portal with parameters: $1 = '{ invalid '",
            ),
        ]);
        let e = server_error(&b, &super::super::pg::default_ignore(), None);
        assert!(e
            .message
            .starts_with("ERROR: invalid input syntax for type json (SQLSTATE 22P02)\n"));
        assert_eq!(
            crate::pg::libpq_text(&e),
            "ERROR:  invalid input syntax for type json\n\
             DETAIL:  Token \"invalid\" is invalid.\n\
             CONTEXT:  JSON data, line 1: { invalid...\n\
             unnamed portal with parameters: $1 = '{ invalid '"
        );
        let b = error_response(&[(b'S', "FATAL"), (b'C', "57P01"), (b'M', "terminating connection")]);
        let e = server_error(&b, &IgnoreErrors::Sqlstates(Default::default()), None);
        assert_eq!(e.class, ErrorClass::ConnectionLost);
        let b = error_response(&[(b'S', "ERROR"), (b'C', "23505"), (b'M', "dup")]);
        assert_eq!(
            server_error(&b, &IgnoreErrors::Sqlstates(Default::default()), None).class,
            ErrorClass::Fatal
        );
    }
}
