//! `dbperf server start` interrupted at many instants (SIGTERM and SIGINT, from 0.2 s to
//! 2 s after it began; for MySQL 8 later too) on MariaDB, PostgreSQL and MySQL 8.0.31, each on
//! a fresh sandbox in a temporary `$DBPERF_HOME`:
//!
//! - while it runs, no login over TCP works without a password dbperf generated: root without
//!   a password (MySQL family) and `sb`/`sb` are tried every few milliseconds on the port the
//!   start was given, from before the server exists until the end;
//! - an interrupted start exits 130 and leaves nothing running (no process started with the
//!   sandbox's config file, no process holding its datadir), and `server list` says stopped;
//!   a start the signal came too late for exits 0 and `list` says running;
//! - the next `server start` works and runs exactly one server on the datadir.
//!
//! The "other local user" of the TCP probes is `nobody` when the tests run as root.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
use common::{available, dbperf, run_ok};

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A login over TCP that must never work: program, arguments, and an environment variable.
type Login = (String, Vec<String>, Option<(&'static str, &'static str)>);

fn forbidden_logins(server: &str, port: u16) -> Vec<Login> {
    let port = port.to_string();
    if server.starts_with("postgres") {
        let psql = "/usr/lib/postgresql/15/bin/psql".to_owned();
        let login = |user: &str| {
            [
                "-w",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                user,
                "-d",
                "postgres",
                "-c",
                "SELECT 1",
            ]
            .map(str::to_owned)
            .to_vec()
        };
        vec![
            (psql.clone(), login("sb"), Some(("PGPASSWORD", "sb"))),
            (psql, login("postgres"), None),
        ]
    } else {
        let login = |user: &str, password: Option<&str>| {
            let mut args = [
                "--no-defaults",
                "--connect-timeout=1",
                "-h",
                "127.0.0.1",
                "-P",
                &port,
                "-u",
                user,
            ]
            .map(str::to_owned)
            .to_vec();
            if let Some(p) = password {
                args.push(format!("-p{p}"));
            }
            args.extend(["-e".to_owned(), "SELECT 1".to_owned()]);
            args
        };
        vec![
            ("mariadb".to_owned(), login("root", None), None),
            ("mariadb".to_owned(), login("sb", Some("sb")), None),
        ]
    }
}

/// Tries the forbidden logins in a loop until `stop`; the first that succeeds, if any.
fn probe(server: &str, port: u16, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Option<String>> {
    let logins = forbidden_logins(server, port);
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            for (program, args, env) in &logins {
                let mut cmd = Command::new(program);
                cmd.args(args).stdin(Stdio::null()).env_remove("PGPASSWORD");
                if let Some((k, v)) = env {
                    cmd.env(k, v);
                }
                if is_root() {
                    cmd.uid(NOBODY).gid(NOBODY);
                }
                if cmd.output().is_ok_and(|o| o.status.success()) {
                    return Some(format!("{program} {}", args.join(" ")));
                }
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        None
    })
}

/// Every process whose command line mentions `marker`.
fn processes_mentioning(marker: &Path) -> Vec<i32> {
    let marker = marker.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let state = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let zombie = state
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            (!zombie && cmdline.windows(marker.len()).any(|w| w == marker)).then_some(pid)
        })
        .collect()
}

/// `server list --json`'s state of sandbox `x`, or "none" without a record.
fn listed_state(home: &Path) -> String {
    let out = run_ok(in_home(home).args(["server", "list", "--json"]));
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["name"] == "x")
        .map_or_else(|| "none".to_owned(), |v| v["state"].as_str().unwrap_or("?").to_owned())
}

fn in_home(home: &Path) -> Command {
    let mut cmd = dbperf();
    cmd.env("DBPERF_HOME", home).env(
        "DBPERF_DIST",
        dbperf::server::SandboxHome::from_env().unwrap().dist_root(),
    );
    cmd
}

/// One interrupted start of `server` after `delay` with `signal`, and everything checked.
fn interrupt_once(server: &str, delay: Duration, signal: libc::c_int) {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("servers/x").join(if server.starts_with("postgres") {
        "postgresql.conf"
    } else {
        "my.cnf"
    });
    let port = free_port();
    let stop = Arc::new(AtomicBool::new(false));
    let prober = probe(server, port, stop.clone());
    let child = in_home(home.path())
        .args(["server", "start", server, "--name", "x", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    // SAFETY: kill has no memory effects; the child is ours.
    unsafe { libc::kill(child.id() as i32, signal) };
    let out = child.wait_with_output().unwrap();
    let what = format!(
        "{server} signal {signal} after {delay:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // A moment more of probing after the start's end.
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let leaked = prober.join().unwrap();
    assert_eq!(leaked, None, "a login over TCP worked during the start: {what}");
    match out.status.code() {
        Some(130) => {
            assert_eq!(
                processes_mentioning(&config),
                Vec::<i32>::new(),
                "an interrupted start left a server running: {what}"
            );
            let state = listed_state(home.path());
            assert!(
                ["stopped", "none"].contains(&state.as_str()),
                "list says {state}: {what}"
            );
        }
        Some(0) => assert_eq!(listed_state(home.path()), "running", "{what}"),
        _ => panic!("neither interrupted (130) nor started (0): {what}"),
    }

    // The next start works, and one server runs on the datadir.
    let again = in_home(home.path())
        .args(["server", "start", server, "--name", "x", "--port", &port.to_string()])
        .output()
        .unwrap();
    let again_text = format!(
        "{}{}",
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr)
    );
    let already = again_text.contains("is already running");
    assert!(
        again.status.success() || (out.status.code() == Some(0) && already),
        "the next start failed after {what}\n{again_text}"
    );
    assert_eq!(
        processes_mentioning(&config).len(),
        1,
        "not exactly one server after {what}\n{again_text}"
    );
    assert_eq!(listed_state(home.path()), "running");
    run_ok(in_home(home.path()).args(["server", "stop", "x"]));
}

fn interrupts(server: &str, delays_ms: &[u64]) {
    let started = Instant::now();
    for (i, ms) in delays_ms.iter().enumerate() {
        let signal = if i % 2 == 0 { libc::SIGTERM } else { libc::SIGINT };
        interrupt_once(server, Duration::from_millis(*ms), signal);
    }
    eprintln!(
        "{server}: {} interrupted starts in {:?}",
        delays_ms.len(),
        started.elapsed()
    );
}

const EARLY: [u64; 7] = [200, 500, 800, 1100, 1400, 1700, 2000];

#[test]
fn mariadb_start_is_safe_to_interrupt() {
    interrupts("mariadb-10.11", &EARLY);
}

#[test]
fn postgres_start_is_safe_to_interrupt() {
    if !available("postgres-15") {
        return;
    }
    interrupts("postgres-15", &EARLY);
}

/// MySQL 8 initialises its datadir for several seconds before the first server start.
#[test]
fn mysql_8_start_is_safe_to_interrupt() {
    if !available("mysql-8.0.31") {
        return;
    }
    interrupts("mysql-8.0.31", &[1000, 6000, 9000, 12_000]);
}
