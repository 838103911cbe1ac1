//! `WireSession` (dbperf's own MySQL wire protocol) against a real sandboxed MariaDB, and
//! against `MysqlSession` (mysql_async) as the reference: same results, and client CPU
//! per query (`point_select_cpu_wire_vs_mysql_async`, ignored; run it with
//! `cargo test --release -p dbperf --test wire_session -- --ignored --nocapture`).

use std::time::{Duration, Instant};

use bytes::Bytes;
use dbperf::driver::mysql::{IgnoreErrors, MysqlSession};
use dbperf::driver::wire::WireSession;
use dbperf::driver::{Param, Rows, Session, StmtId, Target};
use dbperf_engine::ErrorClass;
use futures_util::StreamExt;

mod common;
use common::{block_on, sandbox};

async fn wire(url: &str) -> WireSession {
    wire_with(url, IgnoreErrors::sysbench_default()).await
}

async fn wire_with(url: &str, ignore: IgnoreErrors) -> WireSession {
    WireSession::connect(&Target::parse(url).unwrap(), ignore)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"))
}

async fn one_value(s: &mut impl Session, sql: &str) -> Option<String> {
    let rows = s.query_rows(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
    rows[0][0].clone()
}

#[test]
fn connects_over_tcp_and_the_socket_and_runs_statements() {
    let sb = sandbox();
    block_on(async {
        for url in [sb.url(), sb.socket_url()] {
            let mut s = wire(&url).await;
            assert!(s.server_version().contains("MariaDB"), "{}", s.server_version());
            assert_eq!(one_value(&mut s, "SELECT VERSION()").await.unwrap(), s.server_version());
            // Exactly the transport the target names.
            let transport = one_value(
                &mut s,
                "SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()",
            )
            .await;
            assert_eq!(
                transport.as_deref().map(|h| h.starts_with("localhost")),
                Some(url.contains("socket=")),
                "{url}: {transport:?}"
            );
        }
        let mut s = wire(&sb.url()).await;
        s.query("CREATE TABLE t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(200))")
            .await
            .unwrap();
        let insert = s.prepare("INSERT INTO t VALUES (?, ?, ?)").await.unwrap();
        for id in 1..=1000 {
            let c = format!("row-{id}");
            let info = s
                .exec(
                    insert,
                    &[Param::Int(id), Param::Int(id % 7), Param::Bytes(c.as_bytes())],
                )
                .await
                .unwrap();
            assert_eq!(info.affected_rows, 1);
        }
        // Parameter types may change between executes of one statement.
        let info = s
            .exec(insert, &[Param::Bytes(b"1001"), Param::Int(0), Param::Int(42)])
            .await
            .unwrap();
        assert_eq!(info.affected_rows, 1);
        assert_eq!(
            one_value(&mut s, "SELECT c FROM t WHERE id = 1001").await.as_deref(),
            Some("42")
        );
        let info = s
            .exec(insert, &[Param::Int(1002), Param::Int(0), Param::Bytes(b"")])
            .await
            .unwrap();
        assert_eq!(info.affected_rows, 1);

        let update = s.prepare("UPDATE t SET k = k + ? WHERE id <= ?").await.unwrap();
        assert_eq!(
            s.exec(update, &[Param::Int(1), Param::Int(10)])
                .await
                .unwrap()
                .affected_rows,
            10
        );
        let delete = s.prepare("DELETE FROM t WHERE id > ?").await.unwrap();
        assert_eq!(s.exec(delete, &[Param::Int(1000)]).await.unwrap().affected_rows, 2);
        assert_eq!(
            s.query("UPDATE t SET c = 'x' WHERE id IN (1, 2, 3)")
                .await
                .unwrap()
                .affected_rows,
            3
        );

        // Result sets of 0, 1 and 1000 rows are drained; the next statement still works.
        let select = s
            .prepare("SELECT id, k, c FROM t WHERE id BETWEEN ? AND ?")
            .await
            .unwrap();
        let count = s.prepare("SELECT COUNT(*) FROM t").await.unwrap();
        for (lo, hi) in [(5000, 6000), (7, 7), (1, 1000), (1, 1000), (0, 0)] {
            s.exec(select, &[Param::Int(lo), Param::Int(hi)]).await.unwrap();
            s.exec(count, &[]).await.unwrap();
            s.query("SELECT * FROM t").await.unwrap();
            assert_eq!(one_value(&mut s, "SELECT 1").await.as_deref(), Some("1"));
        }
        let by_c = s.prepare("SELECT id FROM t WHERE c = ?").await.unwrap();
        s.exec(by_c, &[Param::Bytes(b"row-9")]).await.unwrap();

        // Text rows: NULLs and several columns; the first result of a multi-statement query.
        let rows = s
            .query_rows("SELECT id, NULL, c, k FROM t WHERE id IN (4, 5) ORDER BY id")
            .await
            .unwrap();
        let row =
            |id: &str, c: &str, k: &str| vec![Some(id.to_string()), None, Some(c.to_string()), Some(k.to_string())];
        assert_eq!(rows, vec![row("4", "row-4", "5"), row("5", "row-5", "6")]);
        assert!(s.query_rows("SELECT id FROM t WHERE id < 0").await.unwrap().is_empty());
        let rows = s.query_rows("SELECT 'a', 2; SELECT 3; DO 1").await.unwrap();
        assert_eq!(rows, vec![vec![Some("a".into()), Some("2".into())]]);
        assert_eq!(
            s.query("SET @x = 1; UPDATE t SET k = 0 WHERE id = 1")
                .await
                .unwrap()
                .affected_rows,
            1
        );
        assert_eq!(
            one_value(&mut s, "SELECT COUNT(*) FROM t").await.as_deref(),
            Some("1000")
        );
    });
}

#[test]
fn server_errors_are_classified_and_the_connection_survives() {
    let sb = sandbox();
    block_on(async {
        let mut s = wire(&sb.url()).await;
        s.query("CREATE TABLE u (id INT PRIMARY KEY)").await.unwrap();
        let insert = s.prepare("INSERT INTO u VALUES (?)").await.unwrap();
        s.exec(insert, &[Param::Int(1)]).await.unwrap();
        let e = s.exec(insert, &[Param::Int(1)]).await.unwrap_err();
        assert_eq!(
            (e.class, e.code, e.sqlstate.as_deref()),
            (ErrorClass::Fatal, Some(1062), Some("23000")),
            "{e}"
        );
        assert!(e.message.contains("Duplicate entry"), "{e}");

        let mut all = wire_with(&sb.url(), IgnoreErrors::All).await;
        let insert_all = all.prepare("INSERT INTO u VALUES (?)").await.unwrap();
        let e = all.exec(insert_all, &[Param::Int(1)]).await.unwrap_err();
        assert_eq!((e.class, e.code), (ErrorClass::UniqueViolation, Some(1062)), "{e}");

        let e = s.query("SELEKT 1").await.unwrap_err();
        assert_eq!((e.class, e.code), (ErrorClass::Fatal, Some(1064)), "{e}");
        assert!(e.message.contains("SELEKT"), "{e}");
        let e = s.prepare("SELECT * FROM no_such_table").await.unwrap_err();
        assert_eq!(e.code, Some(1146), "{e}");
        let e = s.query_rows("SELECT * FROM no_such_table").await.unwrap_err();
        assert_eq!(e.code, Some(1146), "{e}");
        // An error part way through a multi-statement query ends it.
        let e = s.query("DO 1; SELEKT 2; DO 3").await.unwrap_err();
        assert_eq!(e.code, Some(1064), "{e}");
        // Calling mistakes are reported, not sent.
        assert!(s
            .exec(insert, &[])
            .await
            .unwrap_err()
            .message
            .contains("takes 1 parameters"));
        assert_eq!(s.exec(insert, &[Param::Int(2)]).await.unwrap().affected_rows, 1);
        assert_eq!(one_value(&mut s, "SELECT COUNT(*) FROM u").await.as_deref(), Some("2"));
    });
}

#[test]
fn a_killed_connection_is_lost_and_reconnects() {
    let sb = sandbox();
    block_on(async {
        let mut s = wire(&sb.url()).await;
        let id = one_value(&mut s, "SELECT CONNECTION_ID()").await.unwrap();
        let stmt = s.prepare("SELECT ?").await.unwrap();
        s.exec(stmt, &[Param::Int(1)]).await.unwrap();
        // Another account's connection: root kills it (the benchmark account may not).
        let mut admin = wire(&sb.admin_url()).await;
        admin.query(&format!("KILL {id}")).await.unwrap();
        let e = s.exec(stmt, &[Param::Int(1)]).await.unwrap_err();
        assert_eq!(e.class, ErrorClass::ConnectionLost, "{e}");
        // Every later command says so too, until a reconnect.
        assert_eq!(s.query("SELECT 1").await.unwrap_err().class, ErrorClass::ConnectionLost);
        s.reconnect().await.unwrap();
        assert_ne!(one_value(&mut s, "SELECT CONNECTION_ID()").await.unwrap(), id);
        let stmt = s.prepare("SELECT ? + 1").await.unwrap();
        assert_eq!(stmt.0, 0, "statements are forgotten on reconnect");
        s.exec(stmt, &[Param::Int(1)]).await.unwrap();
        assert!(s.exec(StmtId(1), &[]).await.is_err());
    });
}

#[test]
fn an_abandoned_statement_retires_the_connection() {
    let sb = sandbox();
    block_on(async {
        let mut s = wire(&sb.socket_url()).await;
        let sleep = s.prepare("SELECT SLEEP(?)").await.unwrap();
        let timed_out = tokio::time::timeout(Duration::from_millis(50), s.exec(sleep, &[Param::Int(2)])).await;
        assert!(timed_out.is_err());
        // The response is still on its way: the connection is out of step.
        let e = s.query("SELECT 1").await.unwrap_err();
        assert_eq!(e.class, ErrorClass::ConnectionLost, "{e}");
        assert!(e.message.contains("abandoned"), "{e}");
        s.reconnect().await.unwrap();
        assert_eq!(one_value(&mut s, "SELECT 1").await.as_deref(), Some("1"));
    });
}

#[test]
fn statements_and_rows_over_16_mib_are_split_and_joined() {
    let sb = sandbox();
    block_on(async {
        wire(&sb.admin_url())
            .await
            .query("SET GLOBAL max_allowed_packet = 67108864")
            .await
            .unwrap();
        let mut s = wire(&sb.url()).await;
        s.query("CREATE TABLE big (id INT PRIMARY KEY, b LONGBLOB)")
            .await
            .unwrap();
        let blob: Vec<u8> = (0..17 * 1024 * 1024).map(|i| b'a' + (i % 26) as u8).collect();
        let insert = s.prepare("INSERT INTO big VALUES (?, ?)").await.unwrap();
        assert_eq!(
            s.exec(insert, &[Param::Int(1), Param::Bytes(&blob)])
                .await
                .unwrap()
                .affected_rows,
            1
        );
        let sql = format!("INSERT INTO big VALUES (2, '{}')", std::str::from_utf8(&blob).unwrap());
        assert_eq!(s.query(&sql).await.unwrap().affected_rows, 1);
        let rows = s.query_rows("SELECT id, b FROM big ORDER BY id").await.unwrap();
        assert_eq!(rows.len(), 2);
        for row in &rows {
            assert!(
                row[1].as_deref().map(str::as_bytes) == Some(&blob[..]),
                "row {:?} differs",
                row[0]
            );
        }
        let select = s.prepare("SELECT b FROM big WHERE id = ?").await.unwrap();
        s.exec(select, &[Param::Int(1)]).await.unwrap();

        // Payloads of exactly 16 MiB - 1 end with an empty packet, both ways.
        let n = 0xFF_FFFF - 4; // the text row is a 4-byte length + the value
        let v = one_value(&mut s, &format!("SELECT REPEAT('x', {n})")).await.unwrap();
        assert_eq!(v.len(), n);
        let prefix = "SELECT LENGTH('";
        let filler = 0xFF_FFFF - 1 - prefix.len() - 2; // COM_QUERY byte + the SQL
        let sql = format!("{prefix}{}')", "y".repeat(filler));
        assert_eq!(sql.len() + 1, 0xFF_FFFF);
        assert_eq!(one_value(&mut s, &sql).await, Some(filler.to_string()));
        // Small statements after big ones.
        assert_eq!(
            one_value(&mut s, "SELECT SUM(LENGTH(b)) FROM big").await,
            Some((2 * blob.len()).to_string())
        );
    });
}

#[test]
fn load_data_local_infile_streams_the_data() {
    let sb = sandbox();
    block_on(async {
        let mut s = wire(&sb.url()).await;
        s.query("CREATE TABLE ld (id INT PRIMARY KEY, v VARCHAR(40))")
            .await
            .unwrap();
        // 50 000 rows in chunks of 5 000 (about 150 KB each): several 512 KiB packets.
        let chunks: Vec<std::io::Result<Bytes>> = (0..10)
            .map(|c| {
                let text: String = (c * 5000 + 1..=(c + 1) * 5000)
                    .map(|i| format!("{i}\tvalue-{i}-abcdefghij\n"))
                    .collect();
                Ok(Bytes::from(text))
            })
            .collect();
        let sql = "LOAD DATA LOCAL INFILE 'stream' INTO TABLE ld";
        let info = s
            .load_data_local(sql, futures_util::stream::iter(chunks).boxed())
            .await
            .unwrap();
        assert_eq!(info.affected_rows, 50_000);
        assert_eq!(
            one_value(&mut s, "SELECT CONCAT(COUNT(*), ' ', SUM(id), ' ', MAX(v)) FROM ld")
                .await
                .as_deref(),
            Some("50000 1250025000 value-9999-abcdefghij")
        );

        // A failing stream fails the statement; the connection stays usable.
        let failing = futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"60001\tx\n")),
            Err(std::io::Error::other("disk on fire")),
        ]);
        s.query("BEGIN").await.unwrap();
        let e = s.load_data_local(sql, failing.boxed()).await.unwrap_err();
        assert!(e.message.contains("disk on fire"), "{e}");
        s.query("ROLLBACK").await.unwrap();
        // Without data the request is refused, and the server's response is still read.
        let e = s.query(sql).await.unwrap_err();
        assert!(e.message.contains("load_data_local"), "{e}");
        assert_eq!(
            one_value(&mut s, "SELECT COUNT(*) FROM ld").await.as_deref(),
            Some("50000")
        );
    });
}

/// COM_STMT_BULK_EXECUTE: one prepared one-row INSERT stores many rows per command, each
/// row's expressions evaluated on its own values; a failing row fails the command (and, the
/// statement being atomic, stores none of its rows) and the connection stays usable.
#[test]
fn bulk_execute_stores_every_row() {
    let sb = sandbox();
    block_on(async {
        let mut s = wire(&sb.url()).await;
        assert!(s.bulk_supported(), "MariaDB offers bulk execute");
        s.query("CREATE TABLE bulk (id INT PRIMARY KEY, cents DECIMAL(8,2), v VARCHAR(40), d DATETIME)")
            .await
            .unwrap();
        let stmt = s
            .prepare("INSERT INTO bulk (id, cents, v, d) VALUES (?, ?/100, ?, NULLIF(?, ''))")
            .await
            .unwrap();
        // 3 commands of 2,000 rows, with strings long enough that each is about 100 KB.
        let text: Vec<String> = (0..6000).map(|i| format!("value-{i}-{}", "x".repeat(20))).collect();
        for chunk in 0..3 {
            let mut params = Vec::new();
            for (i, v) in text.iter().enumerate().skip(chunk * 2000).take(2000) {
                params.push(Param::Int(i as i64 + 1));
                params.push(Param::Int(i as i64 * 7));
                params.push(Param::Bytes(v.as_bytes()));
                params.push(Param::Bytes(if i % 2 == 0 { b"2020-02-29 12:34:56" } else { b"" }));
            }
            let info = s.exec_bulk(stmt, &params, 4).await.unwrap();
            assert_eq!(info.affected_rows, 2000);
        }
        assert_eq!(
            one_value(
                &mut s,
                "SELECT CONCAT(COUNT(*), ' ', SUM(id), ' ', SUM(cents), ' ', MAX(v), ' ', COUNT(d), ' ', MIN(d)) FROM bulk"
            )
            .await
            .as_deref(),
            Some("6000 18003000 1259790.00 value-999-xxxxxxxxxxxxxxxxxxxx 3000 2020-02-29 12:34:56")
        );
        // Row 2 repeats a key: the command fails with the server's error and stores nothing.
        let dup = [
            Param::Int(10_001),
            Param::Int(1),
            Param::Bytes(b"a"),
            Param::Bytes(b""),
            Param::Int(5),
            Param::Int(1),
            Param::Bytes(b"b"),
            Param::Bytes(b""),
        ];
        let e = s.exec_bulk(stmt, &dup, 4).await.unwrap_err();
        assert_eq!(e.code, Some(1062), "{e}");
        assert_eq!(
            one_value(&mut s, "SELECT COUNT(*) FROM bulk WHERE id = 10001")
                .await
                .as_deref(),
            Some("0")
        );
        // Mistakes of the caller are refused before anything is sent.
        let e = s.exec_bulk(stmt, &dup[..6], 4).await.unwrap_err();
        assert!(e.message.contains("whole rows of 4"), "{e}");
        let e = s.exec_bulk(stmt, &dup[..6], 3).await.unwrap_err();
        assert!(e.message.contains("takes 4 parameters per row"), "{e}");
        let mixed = [
            dup[0],
            dup[1],
            dup[2],
            dup[3],
            Param::Bytes(b"7"),
            dup[5],
            dup[6],
            dup[7],
        ];
        let e = s.exec_bulk(stmt, &mixed, 4).await.unwrap_err();
        assert!(e.message.contains("row 2 gives parameter 1 a different type"), "{e}");
        assert_eq!(
            one_value(&mut s, "SELECT COUNT(*) FROM bulk").await.as_deref(),
            Some("6000")
        );
    });
}

/// Counts this thread's heap allocations, to check the hot path makes none.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations() -> u64 {
    ALLOCATIONS.with(|n| n.get())
}

#[test]
fn exec_allocates_nothing_in_steady_state() {
    let sb = sandbox();
    block_on(async {
        let mut s = wire(&sb.url()).await;
        s.query("CREATE TABLE a (id INT PRIMARY KEY, c VARCHAR(100))")
            .await
            .unwrap();
        s.query("INSERT INTO a SELECT seq, CONCAT('row-', seq) FROM seq_1_to_1000")
            .await
            .unwrap();
        let select = s.prepare("SELECT c FROM a WHERE id = ?").await.unwrap();
        let range = s.prepare("SELECT id, c FROM a WHERE id BETWEEN ? AND ?").await.unwrap();
        let update = s.prepare("UPDATE a SET c = ? WHERE id = ?").await.unwrap();
        for i in 0..100 {
            mixed_executes(&mut s, [select, range, update], i).await;
        }
        let before = allocations();
        for i in 0..1000 {
            mixed_executes(&mut s, [select, range, update], i).await;
        }
        assert_eq!(allocations() - before, 0, "heap allocations in 3000 executes");
        // Rows kept undecoded (a script's results) reuse their buffers too, decoded or not.
        let mut kept = Rows::deferred();
        let mut deferred_executes = async |s: &mut WireSession, n: i64| {
            for i in 0..n {
                s.exec_rows(range, &[Param::Int(i % 900 + 1), Param::Int(i % 900 + 101)], &mut kept)
                    .await
                    .unwrap();
                assert_eq!(kept.len(), 101);
                if i % 10 == 0 {
                    kept.decode().unwrap();
                    assert_eq!(kept.int(100, 0), Some(i % 900 + 101));
                }
            }
        };
        deferred_executes(&mut s, 100).await;
        let before = allocations();
        deferred_executes(&mut s, 2000).await;
        assert_eq!(allocations() - before, 0, "heap allocations in 2000 deferred executes");
        // Every third update wrote NULL: the last write of each row decides.
        assert_eq!(
            one_value(&mut s, "SELECT COUNT(*) FROM a WHERE c IS NULL")
                .await
                .as_deref(),
            Some("333")
        );
        // The counter does count: text rows are allocated.
        one_value(&mut s, "SELECT 1").await;
        assert!(allocations() > before);
    });
}

/// A point select, a 100-row range and an update with a string parameter (NULL every
/// third time).
async fn mixed_executes(s: &mut WireSession, [select, range, update]: [StmtId; 3], i: i64) {
    let value = match i % 3 {
        0 => Param::Bytes(b"zero"),
        1 => Param::Bytes(b"one"),
        _ => Param::Null,
    };
    s.exec(select, &[Param::Int(i % 1000 + 1)]).await.unwrap();
    s.exec(range, &[Param::Int(i % 900), Param::Int(i % 900 + 100)])
        .await
        .unwrap();
    s.exec(update, &[value, Param::Int(i % 1000 + 1)]).await.unwrap();
}

/// A small deterministic generator, so both drivers see the same operations.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn same_results_as_mysql_async() {
    let sb = sandbox();
    block_on(async {
        let target = Target::parse(&sb.url()).unwrap();
        let mut w = WireSession::connect(&target, IgnoreErrors::sysbench_default())
            .await
            .unwrap();
        let mut m = MysqlSession::connect(&target, IgnoreErrors::sysbench_default())
            .await
            .unwrap();
        assert_eq!(w.server_version(), m.server_version());
        for table in ["t_wire", "t_mysql"] {
            w.query(&format!(
                "CREATE TABLE {table} (id INT PRIMARY KEY, k INT NOT NULL, c CHAR(20), pad CHAR(10))"
            ))
            .await
            .unwrap();
            w.query(&format!("INSERT INTO {table} SELECT seq, seq % 10, IF(seq % 3 = 0, NULL, CONCAT('c', seq % 5)), 'p' FROM seq_1_to_100")).await.unwrap();
        }
        let ops = |table: &str| {
            [
                format!("SELECT c FROM {table} WHERE id = ?"),
                format!("UPDATE {table} SET k = k + 1 WHERE id = ?"),
                format!("UPDATE {table} SET c = ? WHERE id = ?"),
                format!("DELETE FROM {table} WHERE id = ? AND k > 12"),
            ]
        };
        let mut wire_stmts = Vec::new();
        let mut mysql_stmts = Vec::new();
        for (a, b) in ops("t_wire").iter().zip(ops("t_mysql").iter()) {
            wire_stmts.push(w.prepare(a).await.unwrap());
            mysql_stmts.push(m.prepare(b).await.unwrap());
        }
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let mut affected = 0;
        for i in 0..200 {
            let op = (rng.next() % 4) as usize;
            let id = (rng.next() % 110) as i64 + 1; // some ids are missing
            let c = format!("c{}", rng.next() % 5);
            let params = match op {
                2 => vec![Param::Bytes(c.as_bytes()), Param::Int(id)],
                _ => vec![Param::Int(id)],
            };
            let a = w.exec(wire_stmts[op], &params).await.unwrap();
            let b = m.exec(mysql_stmts[op], &params).await.unwrap();
            assert_eq!(a, b, "operation {i}: {op} with {params:?}");
            affected += a.affected_rows;
        }
        assert!(affected > 50, "the operations changed rows ({affected})");
        let contents = "SELECT id, k, c, pad FROM {} ORDER BY id";
        let a = w.query_rows(&contents.replace("{}", "t_wire")).await.unwrap();
        let b = m.query_rows(&contents.replace("{}", "t_mysql")).await.unwrap();
        assert_eq!(a, b);
        let both = "SELECT id, k, c, pad, NULL, 1.5, NOW() > 0 FROM t_wire ORDER BY id";
        assert_eq!(w.query_rows(both).await.unwrap(), m.query_rows(both).await.unwrap());
        // Prepared, binary rows: decoded at once, kept undecoded then decoded, and
        // mysql_async's, cell for cell.
        let typed = "SELECT id, k, c, pad, NULL, 1.5e0, CAST(-2 AS SIGNED), CAST(id AS UNSIGNED) \
                     FROM t_wire WHERE id <= ? ORDER BY id";
        let (ws, ms) = (w.prepare(typed).await.unwrap(), m.prepare(typed).await.unwrap());
        let (mut now, mut kept, mut theirs) = (Rows::new(), Rows::deferred(), Rows::new());
        w.exec_rows(ws, &[Param::Int(40)], &mut now).await.unwrap();
        w.exec_rows(ws, &[Param::Int(40)], &mut kept).await.unwrap();
        m.exec_rows(ms, &[Param::Int(40)], &mut theirs).await.unwrap();
        assert_eq!((kept.len(), kept.columns()), (40, 8), "counted before decoding");
        kept.decode().unwrap();
        for rows in [&kept, &theirs] {
            assert_eq!((rows.len(), rows.columns()), (now.len(), now.columns()));
            for r in 0..now.len() {
                for c in 0..now.columns() {
                    assert_eq!(rows.int(r, c), now.int(r, c), "({r}, {c})");
                    assert_eq!(rows.float(r, c), now.float(r, c), "({r}, {c})");
                    assert_eq!(rows.bytes(r, c), now.bytes(r, c), "({r}, {c})");
                }
            }
        }
        assert_eq!(now.int(2, 0), Some(3));
        assert_eq!(now.bytes(2, 2), None, "id 3's c is NULL");
        assert_eq!(now.int(2, 6), Some(-2));
    });
}

/// Client CPU (this thread: user + system) per point select, 8 connections on one
/// current-thread runtime, WireSession vs MysqlSession over TCP, alternating.
#[test]
#[ignore = "a 30 s measurement; run in release with --ignored --nocapture"]
fn point_select_cpu_wire_vs_mysql_async() {
    let secs: u64 = std::env::var("WIRE_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let sb = sandbox();
    let target = Target::parse(&sb.url()).unwrap();
    block_on(async {
        let mut s = wire(&sb.url()).await;
        s.query("CREATE TABLE sbtest1 (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60))")
            .await
            .unwrap();
        s.query("INSERT INTO sbtest1 SELECT seq, seq % 1000, REPEAT('c', 120), REPEAT('p', 60) FROM seq_1_to_100000")
            .await
            .unwrap();
    });
    println!("driver        queries   user_s   sys_s   us/query (user+sys)");
    for rep in 0..3 {
        for lean in [true, false] {
            let (queries, user, sys) = run_point_selects(&target, lean, Duration::from_secs(secs));
            println!(
                "{:<12} {:>8} {:>8.3} {:>7.3} {:>8.2} ({:.2}+{:.2})  rep {rep}",
                if lean { "wire" } else { "mysql_async" },
                queries,
                user,
                sys,
                (user + sys) * 1e6 / queries as f64,
                user * 1e6 / queries as f64,
                sys * 1e6 / queries as f64,
            );
        }
    }
}

fn run_point_selects(target: &Target, lean: bool, duration: Duration) -> (u64, f64, f64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let sql = "SELECT c FROM sbtest1 WHERE id=?";
        let mut tasks = Vec::new();
        let start_gate = std::rc::Rc::new(tokio::sync::Notify::new());
        let mut ready = Vec::new();
        for conn in 0..8u64 {
            let target = target.clone();
            let gate = start_gate.clone();
            let (tx, rx) = tokio::sync::oneshot::channel();
            ready.push(rx);
            tasks.push(tokio::task::spawn_local(async move {
                let mut rng = XorShift(0x2545_F491_4F6C_DD1D ^ (conn + 1));
                if lean {
                    let mut s = WireSession::connect(&target, IgnoreErrors::sysbench_default())
                        .await
                        .unwrap();
                    let stmt = s.prepare(sql).await.unwrap();
                    tx.send(()).unwrap();
                    gate.notified().await;
                    point_select_loop(&mut s, stmt, &mut rng, duration).await
                } else {
                    let mut s = MysqlSession::connect(&target, IgnoreErrors::sysbench_default())
                        .await
                        .unwrap();
                    let stmt = s.prepare(sql).await.unwrap();
                    tx.send(()).unwrap();
                    gate.notified().await;
                    point_select_loop(&mut s, stmt, &mut rng, duration).await
                }
            }));
        }
        for r in ready {
            r.await.unwrap();
        }
        let before = thread_cpu();
        start_gate.notify_waiters();
        let mut queries = 0;
        for t in tasks {
            queries += t.await.unwrap();
        }
        let after = thread_cpu();
        (queries, after.0 - before.0, after.1 - before.1)
    })
}

async fn point_select_loop(s: &mut impl Session, stmt: StmtId, rng: &mut XorShift, duration: Duration) -> u64 {
    let end = Instant::now() + duration;
    let mut n = 0;
    while Instant::now() < end {
        let id = (rng.next() % 100_000) as i64 + 1;
        s.exec(stmt, &[Param::Int(id)]).await.unwrap();
        n += 1;
    }
    n
}

/// This thread's user and system CPU seconds.
fn thread_cpu() -> (f64, f64) {
    // SAFETY: `rusage` is plain old data, so zeroed is valid; getrusage only writes into it.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(u.ru_utime), secs(u.ru_stime))
}
