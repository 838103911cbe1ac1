//! `--settle` against real servers: after a sysbench load with a small redo log, MariaDB's
//! checkpoint age is high; a run with `--settle` waits until InnoDB's flushing is done (the
//! checkpoint age and dirty pages low, or no page written for 3 s) before it measures, so the
//! run's first telemetry sample no longer shows the load's flushing. On PostgreSQL the wait is a
//! `CHECKPOINT`, which the sandbox's non-superuser role may issue (`pg_checkpoint`).

use dbperf::driver::Target;
use dbperf::server::testing::TempSandbox;
use dbperf::telemetry::server::{ServerSampler, ServerTelemetryOptions};

mod common;
#[path = "support/pg.rs"]
mod pg;
use common::{block_on, dbperf, only_run_dir, run_ok};

/// The checkpoint age (% of its maximum) and dirty pages (%) now.
fn innodb_state(url: &str) -> (f64, f64) {
    block_on(async {
        let mut s = ServerSampler::connect(&Target::parse(url).unwrap(), &ServerTelemetryOptions::default())
            .await
            .unwrap();
        let sample = s.sample().await.unwrap();
        s.restore().await.unwrap();
        (sample.checkpoint_pct.unwrap(), sample.dirty_pages_pct.unwrap())
    })
}

#[test]
fn a_run_with_settle_waits_for_the_loads_flushing_to_end() {
    let sandbox = TempSandbox::start_with(&["innodb_log_file_size=16M", "innodb_buffer_pool_size=64M"])
        .expect("a sandboxed MariaDB starts (apt-get install -y mariadb-server)");
    let url = sandbox.url();
    run_ok(
        dbperf()
            .args([
                "sysbench",
                "oltp_read_write",
                "prepare",
                "--tables=2",
                "--table-size=40000",
            ])
            .args(["--target", &url]),
    );
    let (checkpoint, dirty) = innodb_state(&url);
    assert!(
        checkpoint > 10.0 || dirty > 5.0,
        "the load should leave flushing to do (checkpoint age {checkpoint:.1}%, dirty {dirty:.1}%)"
    );

    let results = tempfile::tempdir().unwrap();
    let out = run_ok(
        dbperf()
            .args([
                "sysbench",
                "oltp_read_only",
                "run",
                "--tables=2",
                "--table-size=40000",
                "--threads=1",
            ])
            .args(["--time=2", "--settle=120", "--target", &url, "--results-dir"])
            .arg(results.path()),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout
        .lines()
        .rfind(|l| l.starts_with("settle:"))
        .unwrap_or_else(|| panic!("no settle line:\n{stdout}"));
    assert!(
        last.contains("settled after") || last.contains("stopped writing pages"),
        "{last}\n{stdout}"
    );
    // The settle lines come before the run's banner: nothing was measured while waiting.
    let banner = stdout.find("oltp_read_only on").expect("banner");
    assert!(stdout.find("settle:").unwrap() < banner, "{stdout}");

    // The measured run starts where the wait ended: a read-only run writes nothing, so the
    // state afterwards is the state the run started in.
    let (checkpoint, dirty) = innodb_state(&url);
    if last.contains("settled after") {
        assert!(
            checkpoint <= 10.0 && dirty <= 5.0,
            "{checkpoint:.1}% / {dirty:.1}%: {last}"
        );
    }
    let manifest = common::read_json(&only_run_dir(results.path()).join("manifest.json"));
    assert_eq!(manifest["workload"]["options"]["settle_max_s"], 120, "{manifest}");
}

#[test]
fn settle_on_postgres_is_a_checkpoint_the_benchmark_role_may_issue() {
    if !pg::available() {
        return;
    }
    let server = pg::TempPg::start(&[]);
    let url = server.url();
    run_ok(dbperf().args(["pgbench", "init", "--scale", "1", "--target", &url]));
    let results = tempfile::tempdir().unwrap();
    let out = run_ok(
        dbperf()
            .args(["pgbench", "select-only", "-T", "1", "--settle"])
            .args(["--target", &url, "--results-dir"])
            .arg(results.path()),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("settle: CHECKPOINT done"), "{stdout}");
}
