//! `PgWireSession`, dbperf's own PostgreSQL session, against a real PostgreSQL 15 and
//! against `PgSession` (on `tokio-postgres`) as the reference: the same `Rows` for a table
//! of typed columns with NULLs, the same row counts and text rows (a NULL parameter
//! included); SCRAM-SHA-256 login
//! (and a wrong password refused); COPY FROM STDIN in many chunks, with bad data and with
//! a failing producer; a request abandoned half way (its future dropped) leaves the
//! session unusable until `reconnect`; a cancel from another task; parameters of a type
//! dbperf does not bind refused without breaking the session; md5 and cleartext logins
//! when pg_hba.conf asks for them.

use std::time::Duration;

use bytes::Bytes;
use dbperf::driver::any::AnySession;
use dbperf::driver::mysql::IgnoreErrors;
use dbperf::driver::pg::{default_ignore, PgSession};
use dbperf::driver::pgwire::PgWireSession;
use dbperf::driver::{Cell, Param, Rows, Session, Target};
use dbperf_engine::ErrorClass;

mod common;
#[path = "support/pg.rs"]
mod pg;
use pg::TempPg;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn connect<S: Session>(url: &str) -> S {
    S::connect(&Target::parse(url).unwrap(), default_ignore())
        .await
        .unwrap()
}

/// A cell owned, to compare rows of two sessions.
#[derive(Debug, PartialEq)]
enum Value {
    Null,
    Int(i64),
    Float(f64),
    Bytes(Vec<u8>),
}

fn values(rows: &Rows) -> Vec<Vec<Value>> {
    (0..rows.len())
        .map(|r| {
            (0..rows.columns())
                .map(|c| match rows.cell(r, c) {
                    Cell::Null => Value::Null,
                    Cell::Int(i) => Value::Int(i),
                    Cell::Float(f) => Value::Float(f),
                    Cell::Bytes(..) => Value::Bytes(rows.bytes(r, c).unwrap().to_vec()),
                })
                .collect()
        })
        .collect()
}

const TYPED: &str = "CREATE TABLE typed (id int4 PRIMARY KEY, s int2, b int8, n numeric(14,4), \
     f4 float4, f8 float8, t text, c char(6), v varchar(10), y bytea, ts timestamp, d date, ok bool)";
const ROWS: &str = "INSERT INTO typed VALUES \
     (1, -3, 9000000000, 12345.6789, 1.5, -2.25, 'it''s ?', 'ab', 'vv', '\\x00ff10', '2026-11-22 20:30:00', '2026-11-22', true), \
     (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), \
     (3, 32767, -1, -0.0001, 'NaN', 1e300, '', 'x', '', '', '1999-12-31 23:59:59.5', '2000-01-01', false)";

/// What one session sees of `typed`: rows by `exec_rows`, text rows, and row counts.
async fn observe<S: Session>(url: &str) -> (Vec<Vec<Value>>, Vec<Vec<Option<String>>>, Vec<u64>) {
    let mut s: S = connect(url).await;
    let sel = s
        .prepare("SELECT * FROM typed WHERE id >= ? AND coalesce(t, '') LIKE ? ORDER BY id")
        .await
        .unwrap();
    let mut rows = Rows::new();
    let n = s
        .exec_rows(sel, &[Param::Bytes(b"1"), Param::Bytes(b"%")], &mut rows)
        .await
        .unwrap();
    assert_eq!(n.affected_rows, 3);
    // Rows a driver may keep as received (a script's) read the same once decoded.
    let mut kept = Rows::deferred();
    s.exec_rows(sel, &[Param::Bytes(b"1"), Param::Bytes(b"%")], &mut kept)
        .await
        .unwrap();
    assert_eq!((kept.len(), kept.columns()), (3, 13), "counted before decoding");
    kept.decode().unwrap();
    // Debug text, as NaN is not equal to itself.
    assert_eq!(format!("{:?}", values(&kept)), format!("{:?}", values(&rows)));
    let text = s.query_rows("SELECT * FROM typed ORDER BY id").await.unwrap();
    let up = s.prepare("UPDATE typed SET s = s WHERE id <= ?").await.unwrap();
    // NULL binds as NULL even for a type dbperf cannot bind a value of.
    let null_ts = s
        .prepare("SELECT id FROM typed WHERE ts IS NOT DISTINCT FROM ?")
        .await
        .unwrap();
    let counts = vec![
        s.exec(up, &[Param::Int(3)]).await.unwrap().affected_rows,
        s.exec(sel, &[Param::Int(2), Param::Bytes(b"%")])
            .await
            .unwrap()
            .affected_rows,
        s.query("UPDATE typed SET s = s WHERE id = 1")
            .await
            .unwrap()
            .affected_rows,
        s.query("SELECT 1; UPDATE typed SET s = s").await.unwrap().affected_rows,
        s.query("").await.unwrap().affected_rows,
        s.exec(null_ts, &[Param::Null]).await.unwrap().affected_rows,
    ];
    (values(&rows), text, counts)
}

#[test]
fn wire_session_matches_tokio_postgres() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    pg.psql_as("sb", "sbtest", TYPED);
    pg.psql_as("sb", "sbtest", ROWS);
    let (wire, reference) = rt().block_on(async {
        (
            observe::<PgWireSession>(&pg.socket_url()).await,
            observe::<PgSession>(&pg.url()).await,
        )
    });
    assert_eq!(wire.0.len(), 3);
    // NaN is not equal to itself; compare it apart.
    let nan = |rows: &[Vec<Value>]| matches!(rows[2][4], Value::Float(f) if f.is_nan());
    assert!(nan(&wire.0) && nan(&reference.0), "{:?}", wire.0[2]);
    let strip = |mut rows: Vec<Vec<Value>>| {
        rows[2][4] = Value::Null;
        rows
    };
    assert_eq!(strip(wire.0), strip(reference.0));
    assert_eq!(wire.1, reference.1);
    assert_eq!(wire.2, reference.2);
    assert_eq!(wire.2, vec![3, 2, 1, 3, 0, 1]);
    let first = &wire.1[0];
    assert_eq!(first[3].as_deref(), Some("12345.6789"));
    assert_eq!(first[9].as_deref(), Some("\\x00ff10"));
}

#[test]
fn scram_login_copy_abandon_and_cancel() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    assert_eq!(pg.psql("SHOW password_encryption"), "scram-sha-256");
    pg.psql("CREATE ROLE scrammer LOGIN PASSWORD 'p@ss w:rd'; GRANT ALL ON SCHEMA public TO scrammer");
    let port = pg.port();
    rt().block_on(async {
        // SCRAM-SHA-256 over TCP (the sandbox's pg_hba), with a password that needs escaping.
        let url = format!("postgres://scrammer:p%40ss%20w%3Ard@127.0.0.1:{port}/sbtest");
        let mut s: PgWireSession = connect(&url).await;
        let who = s.query_rows("SELECT current_user, pg_backend_pid()").await.unwrap();
        assert_eq!(who[0][0].as_deref(), Some("scrammer"));
        assert_eq!(who[0][1].as_deref(), Some(s.backend_pid().to_string().as_str()));
        let wrong = format!("postgres://scrammer:nope@127.0.0.1:{port}/sbtest");
        let e = PgWireSession::connect(&Target::parse(&wrong).unwrap(), default_ignore())
            .await
            .err()
            .expect("a wrong password is refused");
        assert_eq!(
            (e.class, e.sqlstate.as_deref()),
            (ErrorClass::Fatal, Some("28P01")),
            "{e}"
        );

        // COPY in many small chunks, gathered into large CopyData messages.
        s.query("CREATE TABLE c (id int PRIMARY KEY, t text)").await.unwrap();
        let chunks = (0..20_000).map(|i| Bytes::from(format!("{i}\trow {i}\n")));
        assert_eq!(s.copy_in("COPY c FROM STDIN", chunks).await.unwrap(), 20_000);
        let n = s.query_rows("SELECT count(*), sum(id) FROM c").await.unwrap();
        assert_eq!(n[0][0].as_deref(), Some("20000"));
        assert_eq!(n[0][1].as_deref(), Some("199990000"));
        // Bad data: the server's error, and the session stays usable.
        let e = s
            .copy_in(
                "COPY c FROM STDIN",
                ["20000\tok\n", "x\tbad\n"].into_iter().map(Bytes::from),
            )
            .await
            .unwrap_err();
        assert_eq!(
            (e.class, e.sqlstate.as_deref()),
            (ErrorClass::Fatal, Some("22P02")),
            "{e}"
        );
        // A producer that fails: the COPY is abandoned with CopyFail.
        let failing = futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"30000\tx\n")),
            Err(std::io::Error::other("generator broke")),
        ]);
        let e = s.copy_in_stream("COPY c FROM STDIN", failing).await.unwrap_err();
        assert!(e.message.contains("generator broke"), "{e}");
        assert_eq!(s.query("SELECT 1").await.unwrap().affected_rows, 1);
        assert_eq!(
            s.query_rows("SELECT count(*) FROM c").await.unwrap()[0][0].as_deref(),
            Some("20000")
        );

        // A parameter type dbperf does not bind: refused, session still usable.
        let ts = s.prepare("SELECT ?::timestamp").await.unwrap();
        let e = s.exec(ts, &[Param::Int(0)]).await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Fatal);
        assert!(e.message.contains("CAST(? AS TEXT)"), "{e}");
        let e = s.exec(ts, &[]).await.unwrap_err();
        assert!(e.message.contains("takes 1 parameters, 0 given"), "{e}");
        assert_eq!(s.query("SELECT 1").await.unwrap().affected_rows, 1);

        // Cancel from another task: the statement ends with 57014, the session goes on.
        let token = s.cancel_token().unwrap();
        let sleep = s.prepare("SELECT pg_sleep(?)").await.unwrap();
        let (watch_url, pid) = (url.clone(), s.backend_pid());
        let canceller = tokio::spawn(async move {
            // Cancel once the server runs the sleep (a cancel before it would be ignored).
            let mut watcher: PgWireSession = connect(&watch_url).await;
            let running = format!(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND state = 'active' AND query LIKE '%pg_sleep%'"
            );
            for _ in 0..500 {
                if watcher.query_rows(&running).await.unwrap()[0][0].as_deref() == Some("1") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            token.cancel().await
        });
        let e = s.exec(sleep, &[Param::Int(30)]).await.unwrap_err();
        canceller.await.unwrap().unwrap();
        assert_eq!(e.sqlstate.as_deref(), Some("57014"), "{e}");
        assert_eq!(
            e.class,
            ErrorClass::Fatal,
            "57014 is not in the default ignore list: {e}"
        );
        assert_eq!(s.exec(sleep, &[Param::Int(0)]).await.unwrap().affected_rows, 1);

        // A dropped future leaves the connection out of step: the next request says so
        // as connection loss, and reconnect recovers.
        let abandoned = tokio::time::timeout(Duration::from_millis(100), s.exec(sleep, &[Param::Int(2)])).await;
        assert!(abandoned.is_err(), "the sleep outlives the timeout");
        let e = s.query("SELECT 1").await.unwrap_err();
        assert_eq!(e.class, ErrorClass::ConnectionLost, "{e}");
        assert!(e.message.contains("abandoned"), "{e}");
        let pid = s.backend_pid();
        s.reconnect().await.unwrap();
        assert_ne!(s.backend_pid(), pid);
        let again = s.prepare("SELECT count(*) FROM c WHERE id < ?").await.unwrap();
        let mut rows = Rows::new();
        s.exec_rows(again, &[Param::Int(10)], &mut rows).await.unwrap();
        assert_eq!(rows.int(0, 0), Some(10));

        // AnySession names the server and knows the backend without asking.
        let mut any: AnySession = AnySession::connect(&Target::parse(&url).unwrap(), IgnoreErrors::All)
            .await
            .unwrap();
        assert!(
            any.server_version().starts_with("PostgreSQL 15"),
            "{}",
            any.server_version()
        );
        let id = any.backend_id().await.unwrap();
        assert_eq!(
            any.query_rows("SELECT pg_backend_pid()").await.unwrap()[0][0].as_deref(),
            Some(id.as_str())
        );
    });
}

#[test]
fn md5_and_cleartext_logins() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    pg.psql("SET password_encryption = 'md5'; CREATE ROLE md5er LOGIN PASSWORD 'm d5'");
    pg.psql("CREATE ROLE plainer LOGIN PASSWORD 'pl@in'");
    // The server writes its own pg_hba.conf (it owns the datadir), then reloads it.
    let hba = pg.psql("SHOW hba_file");
    pg.psql(&format!(
        "COPY (SELECT l FROM (VALUES (1, 'local all all trust'), (2, 'host all md5er 127.0.0.1/32 md5'), \
         (3, 'host all plainer 127.0.0.1/32 password'), (4, 'host all all 127.0.0.1/32 scram-sha-256')) v(n, l) \
         ORDER BY n) TO '{hba}' WITH (FORMAT csv, QUOTE '\x01', DELIMITER '\x02')"
    ));
    pg.psql("SELECT pg_reload_conf()");
    let port = pg.port();
    rt().block_on(async {
        for (user, password) in [("md5er", "m%20d5"), ("plainer", "pl%40in")] {
            let url = format!("postgres://{user}:{password}@127.0.0.1:{port}/sbtest");
            // The reload is asynchronous: until the postmaster has read the new file, the old
            // scram-sha-256 rule refuses these logins.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            let mut s = loop {
                match PgWireSession::connect(&Target::parse(&url).unwrap(), default_ignore()).await {
                    Ok(s) => break s,
                    Err(e) if std::time::Instant::now() < deadline => {
                        assert_eq!(e.sqlstate.as_deref(), Some("28P01"), "{user}: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    Err(e) => panic!("{user} cannot log in 10 s after the reload: {e}"),
                }
            };
            let who = s.query_rows("SELECT current_user").await.unwrap();
            assert_eq!(who[0][0].as_deref(), Some(user));
            let wrong = format!("postgres://{user}:wrong@127.0.0.1:{port}/sbtest");
            let e = PgWireSession::connect(&Target::parse(&wrong).unwrap(), default_ignore())
                .await
                .err()
                .expect("a wrong password is refused");
            assert_eq!(e.sqlstate.as_deref(), Some("28P01"), "{user}: {e}");
        }
        let e = PgWireSession::connect(
            &Target::parse(&format!("postgres://md5er@127.0.0.1:{port}/sbtest")).unwrap(),
            default_ignore(),
        )
        .await
        .err()
        .expect("no password given");
        assert!(e.message.contains("gives none"), "{e}");
    });
}
