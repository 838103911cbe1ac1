//! PostgreSQL telemetry on real servers: a sandbox with a tiny `max_wal_size` (32MB) and an
//! hour-long `checkpoint_timeout`, written to by Debian's pgbench (`-i -s 5`, then 6 s of the
//! TPC-B-like mix on 4 clients) while the run's telemetry thread samples it every second.
//! Asserts that requested checkpoints are counted (and no timed one), that WAL bytes/s and
//! full-page images are positive, that checkpoint distance is reported against max_wal_size,
//! that wait events are read from pg_stat_activity, and that the live line shows the
//! checkpoint figures. PostgreSQL 15 reads pg_stat_bgwriter; 16 adds pg_stat_io; 17
//! reads pg_stat_checkpointer; 18 has no WAL write/sync columns in pg_stat_wal (the Maven
//! versions are skipped with a notice when not installed, a failure under CI).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use dbperf::driver::Target;
use dbperf::server::testing::TempSandbox;
use dbperf::telemetry::sampler::{live_suffix, Sample, Telemetry, TelemetryConfig};
use dbperf::telemetry::server::ServerTelemetryOptions;
use dbperf_engine::clock::now_ns;

mod common;
use common::available;

/// Debian's pgbench: the wrapper in /usr/bin, else the 15 package's own.
fn pgbench() -> PathBuf {
    ["/usr/bin/pgbench", "/usr/lib/postgresql/15/bin/pgbench"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("pgbench is installed (apt-get install -y postgresql-15)")
}

fn run_pgbench(sandbox: &TempSandbox, args: &[&str]) {
    let out = Command::new(pgbench())
        .args(["-h", "127.0.0.1", "-p", &sandbox.port().to_string(), "-U", "sb"])
        .args(args)
        .arg("sbtest")
        .env("PGPASSWORD", sandbox.bench_password())
        .output()
        .expect("pgbench runs");
    assert!(
        out.status.success(),
        "pgbench {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn checkpoints_and_wal_are_sampled(id: &str) {
    let sandbox = TempSandbox::start_server(
        id,
        &[
            "max_wal_size=32MB",
            "min_wal_size=32MB",
            "checkpoint_timeout=1h",
            "synchronous_commit=on",
        ],
    )
    .unwrap_or_else(|e| panic!("{id} sandbox starts: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("telemetry.jsonl");
    let telemetry = Telemetry::start(
        TelemetryConfig {
            period: Duration::from_secs(1),
            target: Some(Target::parse(&sandbox.url()).unwrap()),
            server: ServerTelemetryOptions::default(),
            server_host: None,
            os: true,
        },
        &path,
        now_ns(),
    )
    .unwrap();
    run_pgbench(&sandbox, &["-i", "-s", "5", "-q"]);
    run_pgbench(&sandbox, &["-c", "4", "-j", "2", "-T", "6"]);
    // At least 8 samples, however quickly `pgbench -i` ran.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while telemetry.latest().is_none_or(|s| s.t_s < 8.5) {
        assert!(std::time::Instant::now() < deadline, "{id}: telemetry stopped sampling");
        std::thread::sleep(Duration::from_millis(100));
    }
    let live = telemetry.latest().map(|s| live_suffix(&s));
    let (loss, crash) = telemetry.stop();
    assert!(loss.is_none() && crash.is_none(), "{loss:?} {crash:?}");

    let samples: Vec<Sample> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(samples.len() >= 8, "{id}: {} samples", samples.len());
    // Two servers under pgbench share two CPUs here, so a sample may miss its period; any
    // other error is a failure.
    let errors: Vec<&String> = samples
        .iter()
        .filter_map(|s| s.server_error.as_ref())
        .filter(|e| !e.contains("did not answer"))
        .collect();
    assert!(errors.is_empty(), "{id}: {errors:?}");
    let server: Vec<_> = samples.iter().filter_map(|s| s.server.as_ref()).collect();
    assert!(
        server.len() >= 6,
        "{id}: {} of {} samples with server figures",
        server.len(),
        samples.len()
    );

    let requested: u64 = server.iter().filter_map(|s| s.checkpoints_requested).sum();
    let timed: u64 = server.iter().filter_map(|s| s.checkpoints_timed).sum();
    assert!(requested >= 1, "{id}: no requested checkpoint counted");
    assert_eq!(timed, 0, "{id}: checkpoint_timeout is an hour");
    let wal = server.iter().filter_map(|s| s.redo_written_bytes_s).fold(0.0, f64::max);
    assert!(wal > 0.0, "{id}: WAL bytes/s");
    let fpi = server
        .iter()
        .filter_map(|s| s.pg.as_ref()?.wal_fpi_s)
        .fold(0.0, f64::max);
    assert!(fpi > 0.0, "{id}: full-page images/s");
    let max_wal = server.iter().find_map(|s| s.checkpoint_max_bytes);
    assert_eq!(
        max_wal,
        Some(32 << 20),
        "{id}: checkpoint distance is measured against max_wal_size"
    );
    let distance = server.iter().filter_map(|s| s.checkpoint_pct).fold(0.0, f64::max);
    assert!(distance > 0.0, "{id}: checkpoint distance %");
    let trigger = server.iter().find_map(|s| s.checkpoint_trigger_pct).unwrap();
    assert!((trigger - 100.0 / 1.9).abs() < 0.1, "{id}: trigger {trigger}");
    let written = server.iter().filter_map(|s| s.pages_written_s).fold(0.0, f64::max);
    assert!(written > 0.0, "{id}: buffers written/s");
    let rows = server.iter().filter_map(|s| s.rows_updated_s).fold(0.0, f64::max);
    assert!(rows > 0.0, "{id}: rows updated/s");

    // Waits are read every sample: active backends are either waiting or on CPU.
    let seen: u64 = server
        .iter()
        .map(|s| s.waits.iter().map(|w| w.count).sum::<u64>() + s.pg.as_ref().and_then(|p| p.on_cpu).unwrap_or(0))
        .sum();
    assert!(seen > 0, "{id}: no active backend seen in pg_stat_activity");
    let events: Vec<&str> = server
        .iter()
        .flat_map(|s| s.waits.iter().map(|w| w.event.as_str()))
        .collect();
    // Four pgbench clients on two busy CPUs usually show WAL or lock waits, but a run of
    // samples can find every active backend on CPU; what is checked is that every wait
    // sampled is named "type/event".
    assert!(events.iter().all(|e| e.contains('/')), "{id}: {events:?}");
    eprintln!(
        "{id}: {} samples, {requested} requested checkpoints, WAL up to {:.1} MB/s, FPI up to {fpi:.0}/s, \
         distance up to {distance:.0}%, waits {:?}",
        samples.len(),
        wal / 1e6,
        events.iter().collect::<std::collections::BTreeSet<_>>()
    );
    if id != "postgres-15" {
        // pg_stat_io (16+): client backends' writes per second are there.
        let io = server
            .iter()
            .filter_map(|s| s.pg.as_ref()?.io.get("client backend.writes").copied())
            .fold(0.0, f64::max);
        assert!(io > 0.0, "{id}: pg_stat_io client backend writes");
    }
    let mut query_ms: Vec<f64> = server.iter().map(|s| s.query_ms).collect();
    query_ms.sort_by(f64::total_cmp);
    eprintln!(
        "{id}: telemetry queries took {:.1} ms median, {:.1} ms max per sample",
        query_ms[query_ms.len() / 2],
        query_ms[query_ms.len() - 1]
    );
    let live = live.expect("a latest sample");
    assert!(live.contains("ckpt "), "{id}: live line {live}");
}

#[test]
fn debian_postgres_15_checkpoints_and_wal() {
    if !available("postgres-15") {
        return;
    }
    checkpoints_and_wal_are_sampled("postgres-15");
}

#[test]
fn maven_postgres_16_bgwriter_and_io() {
    if !available("postgres-16") {
        return;
    }
    checkpoints_and_wal_are_sampled("postgres-16");
}

#[test]
fn maven_postgres_17_checkpointer_and_io() {
    if !available("postgres-17") {
        return;
    }
    checkpoints_and_wal_are_sampled("postgres-17");
}

#[test]
fn maven_postgres_18_checkpointer_and_io() {
    if !available("postgres-18") {
        return;
    }
    checkpoints_and_wal_are_sampled("postgres-18");
}
