//! Both PostgreSQL sessions — `PgWireSession` (the default) and `PgSession` (on
//! `tokio-postgres`) — against a real PostgreSQL 15 with injected faults: a forced deadlock
//! (40P01) and a serialization failure (40001) are classified retryable, a duplicate key
//! (23505) as its own class (fatal when not ignored), a lock timeout (55P03) by the ignore
//! list, a terminated backend as connection loss that `reconnect` recovers from; and
//! parameters bind to int4/int8/text/char columns from either `Param` kind.

use dbperf::driver::mysql::IgnoreErrors;
use dbperf::driver::pg::{default_ignore, parse_ignore, PgSession};
use dbperf::driver::pgwire::PgWireSession;
use dbperf::driver::{Param, Rows, Session, Target};
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

async fn connect<S: Session>(url: &str, ignore: IgnoreErrors) -> S {
    S::connect(&Target::parse(url).unwrap(), ignore).await.unwrap()
}

#[test]
fn faults_are_classified_and_connection_loss_recovers() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&["deadlock_timeout=100ms"]);
    faults::<PgWireSession>(&pg);
    pg.psql("DROP TABLE t");
    faults::<PgSession>(&pg);
}

fn faults<S: Session>(pg: &TempPg) {
    let url = pg.url();
    rt().block_on(async {
        let mut a: S = connect(&url, default_ignore()).await;
        let mut b: S = connect(&pg.socket_url(), default_ignore()).await;
        assert!(a.server_version().starts_with("15"), "{}", a.server_version());
        a.query("CREATE TABLE t (id int PRIMARY KEY, v int)").await.unwrap();
        a.query("INSERT INTO t VALUES (1, 0), (2, 0)").await.unwrap();

        // Deadlock: each holds one row and wants the other's.
        let up_a = a.prepare("UPDATE t SET v = v + 1 WHERE id = ?").await.unwrap();
        let up_b = b.prepare("UPDATE t SET v = v + 1 WHERE id = ?").await.unwrap();
        a.query("BEGIN").await.unwrap();
        b.query("BEGIN").await.unwrap();
        assert_eq!(a.exec(up_a, &[Param::Int(1)]).await.unwrap().affected_rows, 1);
        b.exec(up_b, &[Param::Int(2)]).await.unwrap();
        let (ra, rb) = tokio::join!(a.exec(up_a, &[Param::Int(2)]), b.exec(up_b, &[Param::Int(1)]));
        let errors: Vec<_> = [ra.err(), rb.err()].into_iter().flatten().collect();
        assert_eq!(errors.len(), 1, "exactly one victim: {errors:?}");
        assert_eq!(errors[0].class, ErrorClass::Deadlock, "{}", errors[0]);
        assert_eq!(errors[0].sqlstate.as_deref(), Some("40P01"));
        a.query("ROLLBACK").await.unwrap();
        b.query("ROLLBACK").await.unwrap();

        // Serialization failure: a REPEATABLE READ snapshot updates a row changed since.
        a.query("BEGIN ISOLATION LEVEL REPEATABLE READ").await.unwrap();
        a.query("SELECT * FROM t").await.unwrap();
        b.exec(up_b, &[Param::Int(1)]).await.unwrap();
        let e = a.exec(up_a, &[Param::Int(1)]).await.unwrap_err();
        assert_eq!(
            (e.class, e.sqlstate.as_deref()),
            (ErrorClass::Serialization, Some("40001")),
            "{e}"
        );
        a.query("ROLLBACK").await.unwrap();

        // Unique violation: its own class by default, fatal when not listed.
        let ins = a.prepare("INSERT INTO t (id, v) VALUES (?, ?)").await.unwrap();
        let e = a.exec(ins, &[Param::Int(1), Param::Int(0)]).await.unwrap_err();
        assert_eq!(e.class, ErrorClass::UniqueViolation, "{e}");
        let mut strict: S = connect(&url, parse_ignore("none").unwrap()).await;
        let e = strict.query("INSERT INTO t VALUES (1, 0)").await.unwrap_err();
        assert_eq!((e.class, e.sqlstate.as_deref()), (ErrorClass::Fatal, Some("23505")));
        assert!(e.message.contains("23505"), "the message names the SQLSTATE: {e}");

        // Lock timeout: fatal unless ignored, then its class.
        let mut all: S = connect(&url, IgnoreErrors::All).await;
        b.query("BEGIN").await.unwrap();
        b.exec(up_b, &[Param::Int(2)]).await.unwrap();
        for (s, class) in [
            (&mut strict, ErrorClass::Fatal),
            (&mut all, ErrorClass::LockWaitTimeout),
        ] {
            s.query("SET lock_timeout = '50ms'").await.unwrap();
            let e = s.query("UPDATE t SET v = 0 WHERE id = 2").await.unwrap_err();
            assert_eq!((e.class, e.sqlstate.as_deref()), (class, Some("55P03")), "{e}");
        }
        b.query("ROLLBACK").await.unwrap();

        // A terminated backend: connection lost, then reconnect and prepare again.
        let pid = a.query_rows("SELECT pg_backend_pid()").await.unwrap()[0][0]
            .clone()
            .unwrap();
        b.query(&format!("SELECT pg_terminate_backend({pid})")).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let e = a.exec(up_a, &[Param::Int(1)]).await.unwrap_err();
        assert_eq!(e.class, ErrorClass::ConnectionLost, "{e}");
        a.reconnect().await.unwrap();
        let up = a.prepare("UPDATE t SET v = v + 1 WHERE id = ?").await.unwrap();
        assert_eq!(a.exec(up, &[Param::Int(1)]).await.unwrap().affected_rows, 1);
        assert_ne!(
            a.query_rows("SELECT pg_backend_pid()").await.unwrap()[0][0]
                .clone()
                .unwrap(),
            pid
        );
    });
}

#[test]
fn parameters_bind_by_column_type_and_rows_decode() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    parameters::<PgWireSession>(&pg);
    pg.psql("DROP TABLE p");
    parameters::<PgSession>(&pg);
}

fn parameters<S: Session>(pg: &TempPg) {
    rt().block_on(async {
        let mut s: S = connect(&pg.url(), default_ignore()).await;
        s.query("CREATE TABLE p (i int4, b int8, s int2, t text, c char(10), v varchar(20), n numeric(12,2))")
            .await
            .unwrap();
        let ins = s.prepare("INSERT INTO p VALUES (?, ?, ?, ?, ?, ?, ?)").await.unwrap();
        s.exec(
            ins,
            &[
                Param::Int(7),
                Param::Bytes(b"9000000000"),
                Param::Int(-3),
                Param::Int(42),
                Param::Bytes(b"it's ?"),
                Param::Bytes(b"v"),
                Param::Bytes(b"12.5"),
            ],
        )
        .await
        .expect_err("numeric parameters are not bound yet");
        let ins = s
            .prepare("INSERT INTO p VALUES (?, ?, ?, ?, ?, ?, ?::text::numeric)")
            .await
            .unwrap();
        let params = [
            Param::Int(7),
            Param::Bytes(b"9000000000"),
            Param::Int(-3),
            Param::Int(42),
            Param::Bytes(b"it's ?"),
            Param::Bytes(b"v"),
            Param::Bytes(b"12.5"),
        ];
        assert_eq!(s.exec(ins, &params).await.unwrap().affected_rows, 1);
        let e = s.exec(ins, &[Param::Int(1 << 40); 7]).await.unwrap_err();
        assert_eq!(e.class, ErrorClass::Fatal, "an int4 out of range is refused: {e}");
        let sel = s
            .prepare("SELECT i, b, s, t, c, v, n, NULL::int, '?' FROM p WHERE i = ? AND t = ?")
            .await
            .unwrap();
        let mut rows = Rows::new();
        s.exec_rows(sel, &[Param::Bytes(b"7"), Param::Int(42)], &mut rows)
            .await
            .unwrap();
        assert_eq!((rows.len(), rows.columns()), (1, 9));
        assert_eq!(rows.int(0, 0), Some(7));
        assert_eq!(rows.int(0, 1), Some(9_000_000_000));
        assert_eq!(rows.int(0, 2), Some(-3));
        assert_eq!(rows.bytes(0, 3), Some(&b"42"[..]));
        assert_eq!(rows.bytes(0, 4), Some(&b"it's ?    "[..]));
        assert_eq!(rows.bytes(0, 6), Some(&b"12.50"[..]));
        assert_eq!(rows.float(0, 6), Some(12.5));
        assert_eq!(rows.int(0, 7), None);
        assert_eq!(rows.bytes(0, 8), Some(&b"?"[..]));
        let text = s.query_rows("SELECT c, n FROM p").await.unwrap();
        assert_eq!(
            text,
            vec![vec![Some("it's ?    ".to_string()), Some("12.50".to_string())]]
        );
    });
}
