//! `ServerSampler` against real sandboxed servers under a write load from the test's own
//! connections: checkpoint age climbs near its maximum with a tiny redo log and stays low with a
//! large one (MariaDB), InnoDB mutex/rw-lock waits show up when performance_schema and the
//! instruments are on, and MySQL 8.0 reports checkpoint age both with (8.0.31) and without
//! (8.0.15) the `Innodb_redo_log_*` status variables; the classic servers (MySQL 5.6, MariaDB
//! 10.1 with XtraDB, 10.2) reach their checkpoint maximum with a small redo log, and 5.6 shows
//! InnoDB latch waits with the instruments on at startup. A known server version that is not installed is
//! skipped with a notice, except under CI (`CI` set), where that is a failure.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dbperf::driver::mysql::IgnoreErrors;
use dbperf::driver::wire::WireSession;
use dbperf::driver::{Session, Target};
use dbperf::server::testing::TempSandbox;
use dbperf::telemetry::server::{
    ServerSample, ServerSampler, ServerTelemetryOptions, PFS_STARTUP_INSTRUMENTS, SINGLE_FLUSH_METRIC,
};

mod common;
use common::available;

const ROWS: i64 = 20_000;
const BATCH: i64 = 500;

async fn connect(url: &str) -> WireSession {
    WireSession::connect(&Target::parse(url).unwrap(), IgnoreErrors::sysbench_default())
        .await
        .unwrap()
}

/// `ROWS` rows of about 300 bytes: a few MiB, far less than any test buffer pool.
async fn create_table(url: &str) {
    let mut s = connect(url).await;
    s.query("CREATE TABLE tele (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR(255) NOT NULL)")
        .await
        .unwrap();
    for start in (1..=ROWS).step_by(1000) {
        let values: Vec<String> = (start..start + 1000).map(|i| format!("({i},{i},MD5({i}))")).collect();
        s.query(&format!("INSERT INTO tele VALUES {}", values.join(",")))
            .await
            .unwrap();
    }
}

/// Rewrites every row's `pad` with random bytes, `BATCH` rows per statement, until `stop`.
async fn write_until(url: String, writer: i64, stop: Arc<AtomicBool>) {
    let mut s = connect(&url).await;
    // 7 × 32 random hex characters: fits CHAR(255) under strict mode.
    let pad = "CONCAT(MD5(RAND()),MD5(RAND()),MD5(RAND()),MD5(RAND()),MD5(RAND()),MD5(RAND()),MD5(RAND()))";
    let mut start = 1 + writer * BATCH;
    while !stop.load(Ordering::Relaxed) {
        let sql = format!(
            "UPDATE tele SET k = k + 1, pad = {pad} WHERE id BETWEEN {start} AND {}",
            start + BATCH - 1
        );
        // Deadlocks and lock waits between writers are fine here.
        if let Err(e) = s.query(&sql).await {
            assert!(e.class != dbperf_engine::ErrorClass::Fatal, "{sql}: {e}");
        }
        start = (start + BATCH * 4) % ROWS;
    }
}

/// Samples every `period` for `duration` (or until `enough` says so) while `writers` connections
/// write; returns the samples, the first (priming) one included.
async fn sample_under_load(
    url: &str,
    options: &ServerTelemetryOptions,
    writers: i64,
    duration: Duration,
    enough: impl Fn(&[ServerSample]) -> bool,
) -> Vec<ServerSample> {
    create_table(url).await;
    let mut sampler = ServerSampler::connect(&Target::parse(url).unwrap(), options)
        .await
        .unwrap();
    eprintln!("facts: {:?}", sampler.facts());
    let mut samples = vec![sampler.sample().await.unwrap()];
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..writers)
        .map(|w| tokio::spawn(write_until(url.to_owned(), w, stop.clone())))
        .collect();
    let started = Instant::now();
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    tick.tick().await;
    while started.elapsed() < duration && !enough(&samples) {
        tick.tick().await;
        samples.push(sampler.sample().await.unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let mut costs: Vec<f64> = samples.iter().map(|s| s.query_ms).collect();
    costs.sort_by(f64::total_cmp);
    eprintln!(
        "{} samples; sample() took median {:.2} ms, max {:.2} ms",
        samples.len(),
        costs[costs.len() / 2],
        costs[costs.len() - 1]
    );
    if let Some(last) = samples.last() {
        eprintln!("status_rates: {:?}", last.status_rates.keys().collect::<Vec<_>>());
    }
    for s in samples.iter().take(6) {
        eprintln!(
            "ckpt {:?}/{:?} = {:.1?}% dirty {:.1?}% written/s {:.0?} redo/s {:.0?} lru/s {:.0?} hist {:?} waits {}",
            s.checkpoint_age_bytes,
            s.checkpoint_max_bytes,
            s.checkpoint_pct,
            s.dirty_pages_pct,
            s.pages_written_s,
            s.redo_written_bytes_s,
            s.lru_flushes_s,
            s.history_list_length,
            s.waits.len()
        );
    }
    samples
}

/// The highest checkpoint_pct after the priming sample (the load starts after it).
fn max_checkpoint_pct(samples: &[ServerSample]) -> f64 {
    samples
        .iter()
        .skip(1)
        .filter_map(|s| s.checkpoint_pct)
        .fold(0.0, f64::max)
}

/// Bytes of redo written over the samples (rate × interval, the priming sample has neither).
fn redo_written(samples: &[ServerSample]) -> f64 {
    samples
        .iter()
        .filter_map(|s| Some(s.redo_written_bytes_s? * s.interval_s?))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_checkpoint_age_follows_redo_size() {
    if !available("mariadb-10.11") {
        return;
    }
    let options = ServerTelemetryOptions {
        innodb_metrics: true,
        ..ServerTelemetryOptions::default()
    };
    {
        let small = TempSandbox::start_with(&["innodb_log_file_size=8M", "innodb_buffer_pool_size=128M"]).unwrap();
        let samples = sample_under_load(&small.url(), &options, 2, Duration::from_secs(20), |s| {
            s.len() >= 6
                && max_checkpoint_pct(s) >= 75.0
                && s.iter().any(|s| s.pages_written_s.unwrap_or(0.0) > 0.0)
                && s.iter().any(|s| s.rows_updated_s.unwrap_or(0.0) > 0.0)
                && s.iter().any(|s| s.sync_flush_pages_s.unwrap_or(0.0) > 0.0)
        })
        .await;
        assert!(samples[0].interval_s.is_none() && samples[0].status_rates.is_empty());
        assert!(samples[0].checkpoint_max_bytes.is_some());
        assert!(
            max_checkpoint_pct(&samples) >= 75.0,
            "8M redo: checkpoint_pct peaked at {}",
            max_checkpoint_pct(&samples)
        );
        assert!(samples.iter().any(|s| s.pages_written_s.unwrap_or(0.0) > 0.0));
        assert!(samples.iter().any(|s| s.sync_flush_pages_s.unwrap_or(0.0) > 0.0));
        assert!(samples.iter().any(|s| s.dirty_pages_pct.unwrap_or(0.0) > 0.0));
        assert!(samples.iter().any(|s| s.redo_written_bytes_s.unwrap_or(0.0) > 0.0));
        assert!(samples.iter().any(|s| s.rows_updated_s.unwrap_or(0.0) > 0.0));
        assert!(samples
            .iter()
            .any(|s| s.status_rates.contains_key("Innodb_os_log_written")));
        // `innodb_metrics: true` enabled `buffer_flush%`, which MariaDB leaves off.
        assert!(samples
            .iter()
            .any(|s| s.innodb_metrics.keys().any(|k| k.starts_with("buffer_flush_"))));
        assert!(samples.iter().all(|s| s.waits.is_empty()), "performance_schema is off");
    }
    let large = TempSandbox::start_with(&["innodb_log_file_size=512M", "innodb_buffer_pool_size=128M"]).unwrap();
    // The 8M redo filled within the first 0.5 s interval. The same load stops here once it has
    // written 100 MiB of redo (or after 10 s): checkpoint age grows by no more than the redo
    // written, so even a fast machine's last 0.5 s overshoot keeps it far below 512M.
    let samples = sample_under_load(&large.url(), &options, 2, Duration::from_secs(10), |s| {
        redo_written(s) >= 100.0 * 1024.0 * 1024.0
    })
    .await;
    eprintln!(
        "512M redo: {:.0} MiB of redo written",
        redo_written(&samples) / 1048576.0
    );
    assert!(samples.iter().any(|s| s.rows_updated_s.unwrap_or(0.0) > 0.0));
    assert!(
        max_checkpoint_pct(&samples) < 50.0,
        "512M redo: checkpoint_pct peaked at {}",
        max_checkpoint_pct(&samples)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_innodb_waits_appear_with_performance_schema() {
    if !available("mariadb-10.11") {
        return;
    }
    let db = TempSandbox::start_with(&["performance_schema=ON"]).unwrap();
    let options = ServerTelemetryOptions {
        pfs_instruments: true,
        top_waits: 20,
        ..ServerTelemetryOptions::default()
    };
    let innodb_wait = |s: &ServerSample| {
        s.waits.iter().any(|w| {
            (w.event.starts_with("wait/synch/rwlock/innodb/")
                || w.event.starts_with("wait/synch/mutex/innodb/")
                || w.event.starts_with("wait/synch/sxlock/innodb/"))
                && w.count > 0
        })
    };
    let samples = sample_under_load(&db.url(), &options, 3, Duration::from_secs(10), |s| {
        s.iter().any(innodb_wait)
    })
    .await;
    for s in &samples {
        eprintln!("{:?}", s.waits.iter().take(5).collect::<Vec<_>>());
    }
    assert!(samples.iter().any(innodb_wait), "no InnoDB synch wait in any sample");
}

/// MySQL: checkpoint age from `Innodb_redo_log_*` (8.0.30+) or INNODB_METRICS (older).
async fn mysql_checkpoint_age(id: &str) {
    if !available(id) {
        return;
    }
    let db = TempSandbox::start_server(id, &[]).unwrap();
    let samples = sample_under_load(
        &db.url(),
        &ServerTelemetryOptions::default(),
        2,
        Duration::from_secs(8),
        |s| s.len() > 4 && s.iter().any(|s| s.checkpoint_pct.unwrap_or(0.0) > 0.0),
    )
    .await;
    assert!(samples.iter().all(|s| s.checkpoint_age_bytes.is_some()), "{id}");
    assert!(samples.iter().all(|s| s.checkpoint_max_bytes.unwrap_or(0) > 0), "{id}");
    assert!(
        samples.iter().any(|s| s.checkpoint_pct.unwrap_or(0.0) > 0.0),
        "{id}: no checkpoint age under writes"
    );
    assert!(samples.iter().any(|s| s.rows_updated_s.unwrap_or(0.0) > 0.0), "{id}");
    assert!(samples.iter().all(|s| s.history_list_length.is_some()), "{id}");
    // The sync flush batch counter is enabled and read (a rate from the second sample on).
    assert!(samples.iter().skip(1).all(|s| s.sync_flush_pages_s.is_some()), "{id}");
    assert!(samples.iter().skip(1).all(|s| s.lru_flushes_s.is_some()), "{id}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_8_0_31_checkpoint_age() {
    mysql_checkpoint_age("mysql-8.0.31").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_8_0_15_checkpoint_age() {
    mysql_checkpoint_age("mysql-8.0.15").await;
}

/// MySQL 5.6 and MariaDB 10.1 (XtraDB) / 10.2 with a small redo log (two files of 4 MiB):
/// checkpoint age climbs to its maximum, which is below the 8 MiB of the two files (the
/// maximum comes from `Innodb_checkpoint_max_age` on XtraDB, INNODB_METRICS
/// `log_max_modified_age_sync` on the others, which have no checkpoint status variables), and
/// dirty pages, pages read, LRU flushes and the single-page flush counter are sampled.
async fn classic_checkpoint_age_reaches_its_maximum(id: &str) {
    if !available(id) {
        return;
    }
    let db = TempSandbox::start_server(id, &["innodb_log_file_size=4M", "innodb_buffer_pool_size=64M"]).unwrap();
    let sampler = ServerSampler::connect(&Target::parse(&db.url()).unwrap(), &ServerTelemetryOptions::default())
        .await
        .unwrap();
    let facts = sampler.facts().clone();
    drop(sampler);
    assert_eq!(facts.redo_capacity_bytes, 8 * 1024 * 1024, "{id}: 2 files × 4 MiB");
    assert!(
        facts.enabled_metrics.iter().any(|m| m == SINGLE_FLUSH_METRIC),
        "{id}: {:?}",
        facts.enabled_metrics
    );
    let samples = sample_under_load(
        &db.url(),
        &ServerTelemetryOptions::default(),
        2,
        Duration::from_secs(20),
        |s| s.len() >= 4 && max_checkpoint_pct(s) >= 75.0,
    )
    .await;
    assert!(
        max_checkpoint_pct(&samples) >= 75.0,
        "{id}: checkpoint_pct peaked at {}",
        max_checkpoint_pct(&samples)
    );
    let max = samples[0].checkpoint_max_bytes.expect("a checkpoint maximum");
    assert!(
        (4 * 1024 * 1024..8 * 1024 * 1024).contains(&max),
        "{id}: checkpoint max {max} of an 8 MiB redo"
    );
    assert!(samples.iter().any(|s| s.dirty_pages_pct.unwrap_or(0.0) > 0.0), "{id}");
    assert!(samples.iter().skip(1).all(|s| s.pages_read_s.is_some()), "{id}");
    assert!(samples.iter().skip(1).all(|s| s.lru_flushes_s.is_some()), "{id}");
    assert!(samples.iter().all(|s| s.history_list_length.is_some()), "{id}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_5_6_checkpoint_age() {
    classic_checkpoint_age_reaches_its_maximum("mysql-5.6.24").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_10_1_xtradb_checkpoint_age() {
    classic_checkpoint_age_reaches_its_maximum("mariadb-10.1.23").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_10_2_checkpoint_age() {
    classic_checkpoint_age_reaches_its_maximum("mariadb-10.2.11").await;
}

/// MySQL 5.6 times InnoDB's latches only if their instruments are on at startup: with them on,
/// the 5.6 names (`index_tree_rw_lock`, `log_sys_mutex`, ...) head the waits; with only the
/// runtime switch (MariaDB 10.1 here), the sampler says how to restart instead of showing none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_innodb_latch_waits_need_startup_instruments() {
    if available("mysql-5.6.24") {
        let db =
            TempSandbox::start_server("mysql-5.6.24", &["performance_schema=ON", PFS_STARTUP_INSTRUMENTS]).unwrap();
        let options = ServerTelemetryOptions {
            pfs_instruments: true,
            top_waits: 20,
            ..ServerTelemetryOptions::default()
        };
        let latch = |s: &ServerSample| {
            s.waits.iter().any(|w| {
                (w.event.starts_with("wait/synch/rwlock/innodb/") || w.event.starts_with("wait/synch/mutex/innodb/"))
                    && w.count > 0
            })
        };
        let samples = sample_under_load(&db.url(), &options, 3, Duration::from_secs(10), |s| s.iter().any(latch)).await;
        assert!(samples.iter().any(latch), "mysql-5.6.24: no InnoDB latch wait");
    }
    if available("mariadb-10.1.23") {
        let db = TempSandbox::start_server("mariadb-10.1.23", &["performance_schema=ON"]).unwrap();
        let options = ServerTelemetryOptions {
            pfs_instruments: true,
            ..ServerTelemetryOptions::default()
        };
        let sampler = ServerSampler::connect(&Target::parse(&db.url()).unwrap(), &options)
            .await
            .unwrap();
        let warnings = &sampler.facts().warnings;
        assert!(
            warnings.iter().any(|w| w.contains(PFS_STARTUP_INSTRUMENTS)),
            "{warnings:?}"
        );
    }
}

/// What the server has switched on: enabled INNODB_METRICS counters, enabled InnoDB latch
/// instruments and enabled consumers, by name.
async fn switched_on(url: &str) -> Vec<Vec<Option<String>>> {
    let mut s = connect(url).await;
    let mut out = Vec::new();
    for sql in [
        "SELECT NAME FROM information_schema.INNODB_METRICS WHERE ENABLED = 1 ORDER BY NAME",
        "SELECT NAME FROM performance_schema.setup_instruments WHERE NAME LIKE 'wait/synch/%/innodb/%' \
         AND (ENABLED = 'YES' OR TIMED = 'YES') ORDER BY NAME",
        "SELECT NAME FROM performance_schema.setup_consumers WHERE ENABLED = 'YES' ORDER BY NAME",
    ] {
        out.extend(s.query_rows(sql).await.unwrap());
    }
    out
}

/// The sampler switches on counters and instruments for the run and off again after it:
/// the server's configuration after a run is what it was before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sampler_leaves_the_server_as_it_found_it() {
    if !available("mariadb-10.11") {
        return;
    }
    let db = TempSandbox::start_with(&["performance_schema=ON"]).unwrap();
    // A consumer off before the run, as a user may have left it.
    connect(&db.admin_url())
        .await
        .query("UPDATE performance_schema.setup_consumers SET ENABLED = 'NO' WHERE NAME = 'thread_instrumentation'")
        .await
        .unwrap();
    let before = switched_on(&db.admin_url()).await;
    let options = ServerTelemetryOptions {
        innodb_metrics: true,
        pfs_instruments: true,
        ..ServerTelemetryOptions::default()
    };
    let mut sampler = ServerSampler::connect(&Target::parse(&db.url()).unwrap(), &options)
        .await
        .unwrap();
    sampler.sample().await.unwrap();
    let during = switched_on(&db.admin_url()).await;
    assert!(
        during.len() > before.len() + 10,
        "the run switched counters and instruments on"
    );
    sampler.restore().await.unwrap();
    assert_eq!(switched_on(&db.admin_url()).await, before);
}
