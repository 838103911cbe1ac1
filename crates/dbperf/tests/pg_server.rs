//! Integration tests for PostgreSQL sandboxes on real servers: Debian's PostgreSQL 15 and the
//! zonky PostgreSQL 17 (skipped with a notice when `dbperf server install postgres-17` has not
//! run, a failure under CI). Each starts a sandbox in a temporary DBPERF_HOME and checks that
//! `sb`/`sb` logs in to `sbtest` over TCP and over the socket, that `--set` values took effect
//! (`SHOW shared_buffers`), that the port is not 5432 and the datadir is the sandbox's own,
//! that `--target sandbox:NAME` resolves to the TCP URL, that a misspelled or other-version key
//! is refused with a suggestion before anything is created, and that stopping leaves no
//! process. The CLI test runs `dbperf server create|list|stop` as a user would.

use std::path::Path;

use dbperf::driver::target::Product;
use dbperf::server::testing::TempSandbox;
use dbperf::server::{lookup, RunState, ServerError};

mod common;
use common::{available, block_on, dbperf, run_ok};

/// `(SHOW server_version, SHOW shared_buffers, SHOW max_wal_size, current_user)` as `sb`.
async fn probe(url: &str) -> (String, String, String, String) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect {url}: {e}"));
    let conn = tokio::spawn(conn);
    let mut out = Vec::new();
    for sql in [
        "SHOW server_version",
        "SHOW shared_buffers",
        "SHOW max_wal_size",
        "SELECT current_user || '@' || current_database()",
    ] {
        let row = client.query_one(sql, &[]).await.unwrap();
        out.push(row.get::<_, String>(0));
    }
    drop(client);
    let _ = conn.await;
    (out[0].clone(), out[1].clone(), out[2].clone(), out[3].clone())
}

fn start_check_stop(id: &str, major: &str) {
    let sandbox = TempSandbox::start_server(id, &["shared_buffers=48MB", "max-wal-size=64MB"])
        .unwrap_or_else(|e| panic!("{id} sandbox starts: {e}"));
    let record = sandbox.record().clone();
    assert_eq!(record.server, id);
    assert_eq!(record.kind, Product::Postgres);
    assert_ne!(sandbox.port(), 5432, "never the well-known port");
    assert!(
        record.datadir.starts_with(sandbox.home().root()),
        "private datadir: {}",
        record.datadir.display()
    );
    assert!(!record.datadir.starts_with("/var/lib/postgresql"));
    assert!(
        sandbox.socket().join(format!(".s.PGSQL.{}", sandbox.port())).exists(),
        "socket in the sandbox directory"
    );

    let url = sandbox.url();
    let password = sandbox.bench_password();
    assert_eq!(
        url,
        format!("postgres://sb:{password}@127.0.0.1:{}/sbtest", sandbox.port())
    );
    assert_eq!(sandbox.home().resolve_target(sandbox.name()).unwrap(), url);
    let (version, buffers, max_wal, who) = block_on(probe(&url));
    assert!(version.starts_with(major), "{id}: server_version {version}");
    assert!(record.version.starts_with(major), "{record:?}");
    assert_eq!(buffers, "48MB", "{id}: --set shared_buffers took effect");
    assert_eq!(max_wal, "64MB", "{id}: --set max-wal-size (dashes) took effect");
    assert_eq!(who, "sb@sbtest");
    // The socket URL works too (the directory form libpq's host=/dir takes).
    let (_, _, _, who) = block_on(probe(&format!(
        "host={} port={} user=sb password={password} dbname=sbtest",
        sandbox.socket().display(),
        sandbox.port()
    )));
    assert_eq!(who, "sb@sbtest");

    let conf = std::fs::read_to_string(&record.my_cnf).unwrap();
    assert!(conf.contains("listen_addresses = '127.0.0.1'"), "{conf}");
    let listed = sandbox.home().list().unwrap();
    assert_eq!(listed.len(), 1);
    assert!(matches!(listed[0].state, RunState::Running { .. }));

    let pid = sandbox.pid();
    drop(sandbox);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "{id}: pid {pid} still runs"
    );
}

/// `bad` is refused before anything is created, naming the key, the id and `hint`.
fn refused_before_start(id: &str, item: &str, key: &str, hint: &str) {
    let dir = tempfile::tempdir().unwrap();
    let err = TempSandbox::start_in_for(lookup(id).unwrap(), dir.path(), &[item]).unwrap_err();
    assert!(matches!(err, ServerError::UnknownSetting { .. }), "{id}: {err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&format!("{key} is not a setting of {id}")), "{msg}");
    assert!(msg.contains(hint), "{msg}");
    assert!(
        !dir.path().join("servers").exists(),
        "{id}: nothing may be created before the check"
    );
}

#[test]
fn debian_postgres_15() {
    if !available("postgres-15") {
        return;
    }
    start_check_stop("postgres-15", "15.");
    refused_before_start(
        "postgres-15",
        "shared_bufers=1GB",
        "shared_bufers",
        "nearest known names are shared_buffers",
    );
    // PostgreSQL 17 added summarize_wal: version-aware, 15 refuses it.
    refused_before_start(
        "postgres-15",
        "summarize_wal=on",
        "summarize_wal",
        "nearest known names",
    );
    refused_before_start(
        "postgres-15",
        "checkpoint_segments=10",
        "checkpoint_segments",
        "did you mean max_wal_size",
    );
}

#[test]
fn maven_postgres_17() {
    if !available("postgres-17") {
        return;
    }
    start_check_stop("postgres-17", "17.");
    refused_before_start("postgres-17", "max_wal_sise=1GB", "max_wal_sise", "max_wal_size");
}

#[test]
fn layout_keys_are_refused_with_a_hint() {
    let err = TempSandbox::start_server("postgres-15", &["listen_addresses=*"]).unwrap_err();
    assert!(matches!(err, ServerError::ReservedSetting { .. }), "{err:?}");
    assert!(err.to_string().contains("127.0.0.1 only"), "{err}");
}

#[test]
fn cli_create_list_stop() {
    if !available("postgres-15") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let dist = dbperf::server::SandboxHome::from_env().unwrap().dist_root().to_owned();
    let cmd = || {
        let mut c = dbperf();
        c.env("DBPERF_HOME", home.path()).env("DBPERF_DIST", &dist);
        c
    };
    let out = run_ok(cmd().args([
        "server",
        "create",
        "pg",
        "--server",
        "postgres-15",
        "--set",
        "shared_buffers=32MB",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--target postgres://sb:"), "{text}");
    assert!(!text.contains("postgres://sb:sb@"), "the fixed password: {text}");
    let out = run_ok(cmd().args(["server", "list", "--json"]));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["state"], "running", "{line}");
    assert_eq!(line["kind"], "postgres");
    let url = line["target"].as_str().unwrap().to_owned();
    let (_, buffers, _, _) = block_on(probe(&url));
    assert_eq!(buffers, "32MB");
    let pid = line["pid"].as_i64().unwrap();

    // create refuses an existing name and says how to start it.
    let out = cmd()
        .args(["server", "create", "pg", "--server", "postgres-15"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("dbperf server start postgres-15 --name pg"), "{err}");

    let out = run_ok(cmd().args(["server", "stop", "pg"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("stopped cleanly"));
    // Not our child: it may linger as a zombie of init for a moment, but it no longer runs.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').map(|(_, r)| r.trim_start().chars().next());
    assert!(
        matches!(state, None | Some(Some('Z' | 'X'))),
        "pid {pid} still runs: {stat}"
    );
}

/// A lab experiment comparing PostgreSQL versions plans, sizes its data from shared_buffers
/// and has every server's and variant's settings checked against that version's parameters
/// (`lab run` does this before it starts anything).
#[test]
fn lab_checks_postgres_servers_and_variants() {
    let mut ids = vec!["postgres-15"];
    if dbperf::server::testing::installed("postgres-17") {
        ids.push("postgres-17");
    }
    if !available("postgres-15") {
        return;
    }
    let servers: String = ids
        .iter()
        .map(|id| format!("[[server]]\nid = \"{id}\"\nsettings = {{ shared_buffers = \"256MB\" }}\n"))
        .collect();
    let experiment = |variants: &str| {
        let text = format!(
            "name = \"pg-versions\"\nduration = \"10s\"\nwarmup = \"2s\"\n{servers}\n[variants]\n{variants}\n\n\
             [[workload]]\ntest = \"oltp_read_write\"\ntables = 2\ndata_vs_buffer_pool = 0.5\nusers = [4]\n"
        );
        dbperf::lab::Experiment::parse(&text, Path::new("pg-versions.toml")).unwrap()
    };
    let home = dbperf::server::SandboxHome::from_env().unwrap();
    let plan = dbperf::lab::Plan::new(experiment("max_wal_size = [\"64MB\", \"1GB\"]"));
    assert_eq!(plan.groups.len(), 2 * ids.len());
    // 256MB × 0.5 over 2 tables of ~240-byte rows.
    assert_eq!(
        plan.datasets[0].data,
        dbperf::lab::plan::Data::Sysbench {
            tables: 2,
            rows: ((256u64 << 20) as f64 * 0.5 / 240.0 / 2.0).round() as u32
        }
    );
    dbperf::lab::run::check_servers(&plan.experiment, &home, false).unwrap();

    let plan = dbperf::lab::Plan::new(experiment("max_wal_sizes = [\"64MB\"]"));
    let err = format!(
        "{:#}",
        dbperf::lab::run::check_servers(&plan.experiment, &home, false).unwrap_err()
    );
    assert!(err.contains("max_wal_sizes is not a setting of postgres-15"), "{err}");
    assert!(err.contains("max_wal_size"), "{err}");
}
