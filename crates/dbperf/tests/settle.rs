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
    // A wait that lowered the dirty-page limit to make the page cleaner finish put it back.
    assert_eq!(global(&url, "innodb_max_dirty_pages_pct"), "90.000000", "{stdout}");
}

/// A global variable's value now.
fn global(url: &str, name: &str) -> String {
    use dbperf::driver::Session as _;
    block_on(async {
        let mut s = dbperf::driver::wire::WireSession::connect(
            &Target::parse(url).unwrap(),
            dbperf::driver::mysql::IgnoreErrors::Codes(Default::default()),
        )
        .await
        .unwrap();
        let rows = s.query_rows(&format!("SELECT @@GLOBAL.{name}")).await.unwrap();
        rows[0][0].clone().unwrap()
    })
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
    // Its start state, sampled after the CHECKPOINT: WAL since it, and the checkpointer idle.
    let manifest = common::read_json(&only_run_dir(results.path()).join("manifest.json"));
    let start = &manifest["start_state"];
    assert!(start["checkpoint_pct"].as_f64().is_some_and(|c| c < 5.0), "{start}");
    assert_eq!(start["checkpoint_in_progress"], false, "{start}");
}

/// The lab's settle policy: with `settle = "each"` a sweep of writing points waits before every
/// point (the first after the start, each one after a point that wrote), and the points start
/// from the same low state; with `settle = "off"` none waits.
#[test]
fn a_lab_sweep_settles_before_every_point_after_a_write_and_never_when_off() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let run = |policy: &str| -> Vec<String> {
        let name = format!("sweep-{policy}");
        let file = tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &file,
            format!(
                r#"name = "{name}"
duration = 3
report_interval = 1
settle = "{policy}"
settle_max = "90s"
[[server]]
id = "mariadb-10.11"
settings = {{ innodb_log_file_size = "16M", innodb_buffer_pool_size = "64M" }}
[[workload]]
test = "oltp_read_write"
tables = 2
table_size = 20000
users = [4, 8]
"#
            ),
        )
        .unwrap();
        let mut lab = dbperf();
        lab.env("DBPERF_HOME", &home)
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results);
        assert!(String::from_utf8_lossy(&run_ok(&mut lab).stdout).contains("complete: 2 run(s)"));
        let logs = results.join("lab").join(&name).join("logs");
        let mut points: Vec<String> = std::fs::read_dir(&logs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "log") && p.to_string_lossy().contains("oltp_read_write"))
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        points.sort();
        assert_eq!(points.len(), 2, "{logs:?}");
        points
    };
    let each = run("each");
    for log in &each {
        let line = log
            .lines()
            // The wait's last word: a wait over 10 s prints progress lines before it.
            .rfind(|l| l.starts_with("settle:"))
            .unwrap_or_else(|| panic!("{log}"));
        assert!(
            line.contains("settled after") || line.contains("stopped writing pages"),
            "{line}"
        );
    }
    let report = dbperf()
        .args(["lab", "report", "sweep-each", "--results-dir"])
        .arg(&results)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout).into_owned() + &String::from_utf8_lossy(&report.stderr);
    assert!(!text.contains("unequal_start_state"), "{text}");

    let off = run("off");
    assert!(off.iter().all(|log| !log.contains("settle:")), "{off:?}");
}

/// `--warmup-steady` after a settle: a small redo fills within seconds under oltp_read_write,
/// so the workload runs unmeasured until its first checkpoint cycle ended (or the age holds
/// level) and throughput stopped trending; the summary says how long and why, and the
/// measured run that follows has its usual warmup and length.
#[test]
fn warmup_steady_runs_until_the_start_up_transient_is_past() {
    let sandbox = TempSandbox::start_with(&[
        "innodb_log_file_size=16M",
        "innodb_buffer_pool_size=128M",
        "innodb_io_capacity=200",
    ])
    .expect("a sandboxed MariaDB starts (apt-get install -y mariadb-server)");
    let url = sandbox.url();
    let common = ["--tables=2", "--table-size=20000"];
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_read_write", "prepare"])
            .args(common)
            .args(["--target", &url]),
    );
    let results = tempfile::tempdir().unwrap();
    let out = run_ok(
        dbperf()
            .args([
                "sysbench",
                "oltp_read_write",
                "run",
                "--threads=4",
                "--time=3",
                "--warmup-time=1",
            ])
            .args(common)
            .args(["--settle=60", "--warmup-steady=90", "--target", &url, "--results-dir"])
            .arg(results.path()),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rfind(|l| l.starts_with("warmup: ") && l.contains(" after "))
        .unwrap_or_else(|| panic!("no end of the steady warmup:\n{stdout}"));
    let dir = only_run_dir(results.path());
    let summary = common::read_json(&dir.join("summary.json"));
    let steady = &summary["steady_warmup"];
    assert_eq!(steady["steady"], true, "{line}\n{summary}");
    let reason = steady["reason"].as_str().unwrap();
    assert!(
        reason.contains("first checkpoint cycle ended") || reason.contains("held level"),
        "{reason}"
    );
    assert!(line.contains(reason), "{line}");
    let secs = steady["seconds"].as_f64().unwrap();
    assert!((10.0..90.0).contains(&secs), "{secs}");
    // The measured run is the usual one after it: 1 s of warmup, 3 s measured.
    let manifest = common::read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["workload"]["options"]["warmup_steady_max_s"], 90, "{manifest}");
    assert!((summary["duration_s"].as_f64().unwrap() - 3.0).abs() < 0.5, "{summary}");
}
