//! Integration tests for `dbperf::server` against a real MariaDB started in a temporary
//! DBPERF_HOME: start, connect as `sb` over TCP and over the socket, check the server is
//! private and loopback-only, stop, restart with the data kept, and the error paths.

use std::path::Path;
use std::time::Instant;

use dbperf::server::testing::TempSandbox;
use dbperf::server::{Profile, RunState, SandboxHome, ServerError, Setting, StartRequest, StopOutcome};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};

mod common;
use common::block_on;

/// What a connection as `sb` sees of the server.
#[derive(Debug)]
struct Probe {
    version: String,
    /// `127.0.0.1:N` over TCP, `localhost` over the socket.
    client_host: String,
    /// NULL with skip-networking.
    bind_address: Option<String>,
    port: u16,
    datadir: String,
    socket: String,
    skip_networking: bool,
    max_connections: u32,
}

async fn probe(url: &str) -> Probe {
    let mut conn = Conn::new(Opts::from_url(url).unwrap()).await.unwrap();
    let version: String = conn.query_first("SELECT VERSION()").await.unwrap().unwrap();
    let client_host: String = conn
        .query_first("SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()")
        .await
        .unwrap()
        .unwrap();
    let (bind_address, port, datadir, socket): (Option<String>, u16, String, String) = conn
        .query_first("SELECT @@bind_address, @@port, @@datadir, @@socket")
        .await
        .unwrap()
        .unwrap();
    let (skip_networking, max_connections): (u8, u32) = conn
        .query_first("SELECT @@skip_networking, @@max_connections")
        .await
        .unwrap()
        .unwrap();
    conn.disconnect().await.unwrap();
    Probe {
        version,
        client_host,
        bind_address,
        port,
        datadir,
        socket,
        skip_networking: skip_networking == 1,
        max_connections,
    }
}

/// Stops a sandbox when a test ends, also when an assertion fails first.
struct StopOnDrop<'a>(&'a SandboxHome, &'static str);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        let _ = self.0.stop(self.1);
    }
}

fn process_gone(pid: i32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn start_connect_stop_restart() {
    let dir = tempfile::tempdir().unwrap();
    let home = SandboxHome::at(dir.path());
    let _stop = StopOnDrop(&home, "it");
    let request = StartRequest {
        profile: Profile::Test,
        settings: vec![Setting::parse("max_connections=123").unwrap()],
        ..StartRequest::mariadb("it")
    };

    let t = Instant::now();
    let report = home.start(&request).unwrap();
    eprintln!("first start (with init): {:?}", t.elapsed());
    assert!(report.initialized);
    let record = &report.record;
    let port = record.port.unwrap();
    assert!(record.version.contains("MariaDB"), "{}", record.version);
    assert!(record.datadir.starts_with(dir.path()));

    // TCP; prefer_socket=false stops mysql_async from silently switching to the socket.
    let tcp_url = record.tcp_url().unwrap();
    let password = record.bench_password().expect("a generated password").expose();
    assert_eq!(tcp_url, format!("mysql://sb:{password}@127.0.0.1:{port}/sbtest"));
    let tcp = block_on(probe(&format!("{tcp_url}?prefer_socket=false")));
    assert!(tcp.version.contains("MariaDB"));
    assert!(tcp.client_host.starts_with("127.0.0.1:"), "{tcp:?}");
    assert_eq!(tcp.bind_address.as_deref(), Some("127.0.0.1"));
    assert_eq!(tcp.port, port);
    assert_eq!(Path::new(&tcp.datadir), record.datadir, "private datadir");
    assert_eq!(Path::new(&tcp.socket), record.socket);
    assert!(!tcp.skip_networking);
    assert_eq!(tcp.max_connections, 123, "--set applied");

    // Unix socket, which is also what sandbox:NAME resolves to.
    let socket_url = home.resolve_target("it").unwrap();
    assert_eq!(socket_url, record.socket_url());
    let sock = block_on(probe(&socket_url));
    assert_eq!(sock.client_host, "localhost");

    // A second start reports the running server instead of starting another.
    match home.start(&request) {
        Err(ServerError::AlreadyRunning { pid, .. }) => assert_eq!(pid, report.pid),
        other => panic!("expected AlreadyRunning, got {other:?}"),
    }
    let listed = home.list().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state, RunState::Running { pid: report.pid }, "{listed:?}");

    // Data survives stop + start: the datadir is reused, not re-initialized.
    block_on(async {
        let mut conn = Conn::new(Opts::from_url(&socket_url).unwrap()).await.unwrap();
        conn.query_drop("CREATE TABLE keep_me (id INT PRIMARY KEY); INSERT INTO keep_me VALUES (7)")
            .await
            .unwrap();
        conn.disconnect().await.unwrap();
    });
    let t = Instant::now();
    let stopped = home.stop("it").unwrap();
    eprintln!("stop: {:?} ({stopped:?})", t.elapsed());
    assert!(matches!(stopped, StopOutcome::Terminated { pid, .. } if pid == report.pid));
    assert!(process_gone(report.pid), "pid {} still exists", report.pid);
    assert_eq!(home.list().unwrap()[0].state, RunState::Stopped);
    let err = home.resolve_target("it").unwrap_err().to_string();
    assert!(
        err.contains("not running") && err.contains("dbperf server start"),
        "{err}"
    );
    assert_eq!(home.stop("it").unwrap(), StopOutcome::NotRunning);

    let t = Instant::now();
    let again = home.start(&request).unwrap();
    eprintln!("restart (datadir reused): {:?}", t.elapsed());
    assert!(!again.initialized);
    assert_eq!(again.record.port, Some(port), "previous port reused");
    let kept: Option<i32> = block_on(async {
        let mut conn = Conn::new(Opts::from_url(&again.record.socket_url()).unwrap())
            .await
            .unwrap();
        let v = conn.query_first("SELECT id FROM keep_me").await.unwrap();
        conn.disconnect().await.unwrap();
        v
    });
    assert_eq!(kept, Some(7));
    assert!(matches!(home.stop("it").unwrap(), StopOutcome::Terminated { .. }));
    assert!(process_gone(again.pid));
}

#[test]
fn socket_only_sandbox_has_no_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let home = SandboxHome::at(dir.path());
    let _stop = StopOnDrop(&home, "sock");
    let request = StartRequest {
        profile: Profile::Test,
        socket_only: true,
        ..StartRequest::mariadb("sock")
    };
    let report = home.start(&request).unwrap();
    assert_eq!(report.record.tcp_url(), None);
    let p = block_on(probe(&report.record.socket_url()));
    assert!(p.skip_networking);
    assert_eq!(p.client_host, "localhost");
    home.stop("sock").unwrap();
    assert!(process_gone(report.pid));
}

#[test]
fn temp_sandbox_cleans_up_on_drop() {
    let t = Instant::now();
    let db = TempSandbox::start().unwrap();
    eprintln!("TempSandbox::start: {:?}", t.elapsed());
    let (pid, root) = (db.pid(), db.home().root().to_owned());
    let p = block_on(probe(&format!("{}?prefer_socket=false", db.url())));
    assert_eq!(p.port, db.port());
    assert!(p.client_host.starts_with("127.0.0.1:"));
    let p = block_on(probe(&db.socket_url()));
    assert_eq!(p.client_host, "localhost");
    drop(db);
    assert!(process_gone(pid), "pid {pid} still exists after drop");
    assert!(!root.exists(), "{} still exists after drop", root.display());
}

#[test]
fn errors_name_the_problem_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let home = SandboxHome::at(dir.path());
    let err = home.stop("ghost").unwrap_err().to_string();
    assert!(err.contains("no sandbox named \"ghost\""), "{err}");
    assert!(err.contains("known sandboxes: (none)"), "{err}");

    let err = home.start(&StartRequest::mariadb("../escape")).unwrap_err().to_string();
    assert!(err.contains("invalid sandbox name"), "{err}");

    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = busy.local_addr().unwrap().port();
    let request = StartRequest {
        port: Some(port),
        ..StartRequest::mariadb("busy")
    };
    match home.start(&request) {
        Err(ServerError::PortInUse { port: p }) => assert_eq!(p, port),
        other => panic!("expected PortInUse, got {other:?}"),
    }

    // A sandbox keeps the server it was created with: its datadir belongs to that version.
    std::fs::create_dir_all(dir.path().join("servers/m")).unwrap();
    std::fs::write(
        dir.path().join("servers/m/state.json"),
        r#"{"name":"m","kind":"mysql","server":"mysql-8.0.31","version":"8.0.31","port":null,
            "socket":"/s","datadir":"/d","my_cnf":"/c","error_log":"/e","settings":[],"started_at":""}"#,
    )
    .unwrap();
    let err = home.start(&StartRequest::mariadb("m")).unwrap_err().to_string();
    assert!(
        err.contains("holds a datadir of mysql-8.0.31, not mariadb-10.11")
            && err.contains("dbperf server start mysql-8.0.31 --name m"),
        "{err}"
    );
    let err = home.resolve_target("m").unwrap_err().to_string();
    assert!(err.contains("dbperf server start mysql-8.0.31 --name m"), "{err}");

    let err = TempSandbox::start_with(&["innodb_buffer_pool_size"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"innodb_buffer_pool_size\"") && err.contains("KEY=VALUE"),
        "{err}"
    );
}

#[test]
fn jemalloc_and_cpus_apply_from_the_server_start() {
    let dir = tempfile::tempdir().unwrap();
    let home = SandboxHome::at(dir.path());
    let _stop = StopOnDrop(&home, "jc");
    let request = StartRequest {
        profile: Profile::Test,
        jemalloc: true,
        cpus: Some(vec![0]),
        ..StartRequest::mariadb("jc")
    };
    let report = match home.start(&request) {
        Err(ServerError::MissingJemalloc) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped: libjemalloc2 is not installed");
            return;
        }
        r => r.unwrap(),
    };
    // Every thread, including those InnoDB started before accepting connections.
    for task in std::fs::read_dir(format!("/proc/{}/task", report.pid)).unwrap() {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap_or_default();
        if let Some(line) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
        }
    }
    let url = format!("{}?prefer_socket=false", report.record.tcp_url().unwrap());
    let malloc: String = block_on(async {
        let mut conn = Conn::new(Opts::from_url(&url).unwrap()).await.unwrap();
        let v: String = conn
            .query_first("SELECT @@version_malloc_library")
            .await
            .unwrap()
            .unwrap();
        conn.disconnect().await.unwrap();
        v
    });
    assert!(malloc.contains("jemalloc"), "{malloc}");
}
