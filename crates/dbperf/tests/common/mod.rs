//! Helpers shared by the integration tests: running the `dbperf` binary, reading what it
//! wrote, sandboxes, and skipping (or, under CI, failing) when a catalog server or a
//! program (sysbench, pgbench) is missing.

// Each test binary uses its own subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dbperf::server::testing::{installed, TempSandbox};
use serde_json::Value;

/// The `dbperf` binary under test.
pub fn dbperf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dbperf"))
}

/// Runs `cmd` and returns its output; fails the test with both streams when it fails.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("dbperf runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed ({})\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// The run directories under a results root (which also holds catalog.sqlite); none if it
/// does not exist.
pub fn run_dirs(results: &Path) -> Vec<PathBuf> {
    match std::fs::read_dir(results) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect(),
        Err(_) => Vec::new(),
    }
}

/// The one run directory under `results`.
pub fn only_run_dir(results: &Path) -> PathBuf {
    let dirs = run_dirs(results);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

/// A Debian MariaDB sandbox with the test profile.
pub fn sandbox() -> TempSandbox {
    TempSandbox::start().expect("a sandboxed MariaDB starts (apt-get install -y mariadb-server)")
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// False (after a notice) if catalog server `id` is not installed; panics under CI instead.
pub fn available(id: &str) -> bool {
    present_or_skip(
        installed(id),
        &format!("{id} is not installed; run `make deps-servers` (or `dbperf server install {id}`)"),
    )
}

/// False (after a notice) if `program` does not run; panics under CI instead. `package` is
/// what installs it.
pub fn program_available(program: &str, package: &str) -> bool {
    present_or_skip(
        program_runs(program),
        &format!("{program} is not installed (apt-get install -y {package})"),
    )
}

/// Whether `program --version` runs and succeeds. Debian's wrappers (`pgbench` from
/// postgresql-client-common) start even without the program behind them, so starting is not
/// enough.
pub fn program_runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The one rule for what a test needs from the machine: true if `present`; otherwise a
/// failure under CI (`CI` set), where a missing server or tool must not pass unseen, and a
/// skip with `missing` on stderr elsewhere.
pub fn present_or_skip(present: bool, missing: &str) -> bool {
    skip_unless(present, missing, std::env::var_os("CI").is_some())
}

/// [`present_or_skip`] with the CI setting given.
pub fn skip_unless(present: bool, missing: &str, ci: bool) -> bool {
    if present {
        return true;
    }
    if ci {
        panic!("{missing} (CI is set: a missing prerequisite fails the test)");
    }
    eprintln!("SKIPPED: {missing}");
    false
}

/// Waits until the one run under `results` has stored at least `n` intervals (its workers are
/// connected and measuring), and returns its directory and the number stored. Tests that
/// freeze, kill or interrupt something mid-run time it from here, not from the spawn, so a
/// slow start-up cannot move the event outside the run.
pub fn wait_for_intervals(results: &Path, n: usize) -> (PathBuf, usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(dir) = run_dirs(results).into_iter().next() {
            let stored = std::fs::read_to_string(dir.join("intervals.jsonl"))
                .map(|t| t.lines().count())
                .unwrap_or(0);
            if stored >= n {
                return (dir, stored);
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no run under {} stored {n} intervals within 60 s",
            results.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Moments to kill a command at: `n` of them in `[0, span)`, drawn from `seed` (a small LCG,
/// so a failure names moments that reproduce).
pub fn kill_moments(seed: u64, n: usize, span: std::time::Duration) -> Vec<std::time::Duration> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            span.mul_f64((x >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// Starts `cmd`, kills it with SIGKILL after `after` (if it is still running) and reaps it.
/// True when it was killed, false when it had finished on its own.
pub fn kill_after(cmd: &mut Command, after: std::time::Duration) -> bool {
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dbperf starts");
    let deadline = std::time::Instant::now() + after;
    while std::time::Instant::now() < deadline {
        if child.try_wait().expect("waiting for dbperf").is_some() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let killed = child.try_wait().expect("waiting for dbperf").is_none();
    let _ = child.kill();
    let _ = child.wait();
    killed
}

/// Runs each command and asserts that it fails refusing tables dbperf did not create:
/// prepares say so without advising `cleanup` (which would drop the user's tables); cleanups
/// name `--force`. `untouched` checks afterwards that the user's tables are still there.
pub fn assert_refuses_foreign_tables(prepares: Vec<Command>, cleanups: Vec<Command>, untouched: impl Fn()) {
    for mut prepare in prepares {
        let out = prepare.output().expect("dbperf runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{prepare:?} succeeded");
        assert!(err.contains("dbperf did not create"), "{err}");
        assert!(!err.contains("cleanup"), "a prepare refusal advises cleanup: {err}");
        untouched();
    }
    for mut cleanup in cleanups {
        let out = cleanup.output().expect("dbperf runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{cleanup:?} succeeded");
        assert!(
            err.contains("not created by dbperf") && err.contains("--force"),
            "{err}"
        );
        untouched();
    }
}

/// `GET path` over HTTP/1.0 from `addr`; the whole response.
pub fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// One histogram of every measured request a run directory's `intervals.hlog` holds: the
/// histograms tagged `prefix...` (`response:` for every transaction, `response:new_order` for
/// one type) of the intervals starting at or after `warmup_s`, read as any HdrHistogram tool
/// would.
pub fn measured_histogram(dir: &Path, warmup_s: f64, prefix: &str) -> hdrhistogram::Histogram<u64> {
    use base64::Engine;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let bytes = std::fs::read(dir.join("intervals.hlog")).unwrap();
    let mut all = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let Ok(LogEntry::Interval(h)) = entry else { continue };
        if !h.tag().is_some_and(|t| t.as_str().starts_with(prefix)) {
            continue;
        }
        if h.start_timestamp().as_secs_f64() + 1e-6 < warmup_s {
            continue;
        }
        let raw = base64::engine::general_purpose::STANDARD
            .decode(h.encoded_histogram())
            .unwrap();
        let one: hdrhistogram::Histogram<u64> = de.deserialize(&mut raw.as_slice()).unwrap();
        all.add(&one).unwrap();
    }
    all
}

/// Starts the `n` shards of one run together, as `n` clients would be: `command(i)` with
/// `--shard i/n`, one `--start-at` 3 s ahead and `--results-dir results`. Waits for every
/// shard, each of which must succeed, and returns their run directories in shard order with
/// what each printed.
pub fn run_shards(n: u32, results: &Path, command: impl Fn(u32) -> Command) -> Vec<(PathBuf, String)> {
    use std::time::{SystemTime, UNIX_EPOCH};
    let start_at = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 6).to_string();
    let children: Vec<_> = (0..n)
        .map(|i| {
            let mut c = command(i);
            c.arg(format!("--shard={i}/{n}"))
                .arg(format!("--start-at={start_at}"))
                .arg("--results-dir")
                .arg(results)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    let printed: Vec<String> = children
        .into_iter()
        .enumerate()
        .map(|(i, child)| {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "shard {i}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
        .collect();
    let mut dirs = run_dirs(results);
    dirs.sort_by_key(|d| read_json(&d.join("manifest.json"))["shard"]["index"].as_u64());
    assert_eq!(dirs.len(), n as usize, "{dirs:?}");
    dirs.into_iter().zip(printed).collect()
}

/// `dbperf merge DIRS --results-dir results`, which must succeed: what it printed and the
/// merged run directory.
pub fn merge_ok(dirs: &[PathBuf], results: &Path) -> (String, PathBuf) {
    let out = run_ok(dbperf().arg("merge").args(dirs).arg("--results-dir").arg(results));
    (String::from_utf8_lossy(&out.stdout).into_owned(), only_run_dir(results))
}
