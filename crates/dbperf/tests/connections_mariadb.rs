//! Connections against a real sandboxed MariaDB, run as a user runs them: a server killed
//! mid-run and never restarted (the run says for how long it was unreachable and exits 5, results incomplete), an
//! address where nothing listens (MySQL error 2003/2002 or PostgreSQL 08001, with a hint), and a
//! thousand connections opened at once over the socket and over TCP.

use std::process::{Command, Output, Stdio};

use dbperf::server::testing::TempSandbox;
use serde_json::Value;

mod common;
use common::{dbperf, only_run_dir, read_json, run_ok, sandbox, wait_for_intervals};

fn sysbench(target: &str, command: &str, extra: &[&str]) -> Command {
    let mut c = dbperf();
    c.args(["sysbench", "oltp_point_select", command, "--target", target])
        .args(extra);
    c
}

fn text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs point selects for `secs` seconds against a fresh sandbox and kills its server with
/// SIGKILL once `stored` intervals are on disk; the run's output and results directory.
fn killed_after(secs: u32, stored: usize, extra: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let sb = sandbox();
    run_ok(&mut sysbench(&sb.url(), "prepare", &["--table-size=1000"]));
    let tmp = tempfile::tempdir().unwrap();
    let time = format!("--time={secs}");
    let mut args = vec!["--table-size=1000", "--threads=2", time.as_str(), "--report-interval=1"];
    args.extend_from_slice(extra);
    args.extend(["--results-dir", tmp.path().to_str().unwrap()]);
    let child = sysbench(&sb.url(), "run", &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_intervals(tmp.path(), stored);
    unsafe { libc::kill(sb.pid(), libc::SIGKILL) };
    (child.wait_with_output().unwrap(), tmp)
}

#[test]
fn a_server_killed_in_the_last_second_makes_the_run_not_clean() {
    // Three of the four measured seconds stored: the kill comes in the last one.
    let (out, tmp) = killed_after(4, 3, &["--no-telemetry"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(5), "{all}");
    let s = read_json(&only_run_dir(tmp.path()).join("summary.json"));
    assert_eq!(s["server_lost"], true, "{s}");
    assert!(
        s["transactions"]["total"].as_u64().unwrap() > 0,
        "what was measured is kept"
    );
}

#[test]
fn a_server_killed_mid_run_and_never_restarted_makes_the_results_incomplete() {
    // Two intervals with the server up, then kill -9 and no restart.
    let (out, tmp) = killed_after(6, 2, &[]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(5), "{all}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("results incomplete: the server was still unreachable"),
        "{all}"
    );
    assert!(all.contains("Server unreachable: "), "{all}");
    assert!(
        all.contains("| server unreachable, reconnecting"),
        "the live line says so: {all}"
    );

    let dir = only_run_dir(tmp.path());
    let s = read_json(&dir.join("summary.json"));
    let down = s["server_unreachable_s"].as_f64().unwrap();
    // Killed after 2 of 6 s: down for about the last 3 (the interval of the kill still
    // completed some work).
    assert!((2.5..=4.1).contains(&down), "{s}");
    assert_eq!(s["server_unreachable_at_end"], true, "{s}");
    assert!(
        s["transactions"]["total"].as_u64().unwrap() > 0,
        "what was measured is kept"
    );
    let intervals: Vec<Value> = std::fs::read_to_string(dir.join("intervals.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(intervals[0]["server_unreachable"], false);
    assert_eq!(intervals[1]["server_unreachable"], false);
    let last = intervals.last().unwrap();
    assert_eq!(last["server_unreachable"], true, "{last}");
    assert_eq!(last["transactions"], 0);

    let analysis = run_ok(dbperf().arg("analyze").arg(&dir));
    let report = String::from_utf8_lossy(&analysis.stdout);
    assert!(report.contains("server unreachable: "), "{report}");
    assert!(report.contains("it had not come back when the run ended"), "{report}");
}

/// A loopback port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn an_address_where_nothing_listens_says_cannot_connect_and_what_to_check() {
    let port = closed_port();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("gone.sock");
    let cases = [
        (format!("mysql://sb:sb@127.0.0.1:{port}/sbtest"), "(MySQL error 2003)"),
        (
            format!("mysql://sb:sb@localhost/sbtest?socket={}", socket.display()),
            "(MySQL error 2002)",
        ),
        (format!("postgres://sb:sb@127.0.0.1:{port}/sbtest"), "PostgreSQL"),
    ];
    for (target, code) in cases {
        for command in ["prepare", "run"] {
            let out = sysbench(&target, command, &["--time=1"]).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{target} {command}: {}", text(&out));
            assert!(stderr.contains("cannot connect to "), "{stderr}");
            assert!(stderr.contains(code), "{target}: {stderr}");
            assert!(
                stderr.contains("is the server running? `dbperf server list` shows the sandboxes"),
                "{stderr}"
            );
            for wrong in ["2013", "lost connection", "os error", "error: error", "panicked"] {
                assert!(!stderr.contains(wrong), "{target} {command}: {wrong:?} in {stderr}");
            }
        }
    }
}

#[test]
fn a_thousand_connections_open_at_once_over_the_socket_and_over_tcp() {
    // Room for 1024 connections, and a listen queue (back_log) far shorter than that, as
    // MariaDB sizes it: connections opened all at once overflow it and must wait their turn.
    let sb = TempSandbox::start_with(&["max_connections=1100", "back_log=128", "thread_cache_size=1100"])
        .expect("a sandboxed MariaDB starts");
    run_ok(&mut sysbench(&sb.url(), "prepare", &["--table-size=1000"]));
    for target in [sb.socket_url(), sb.url()] {
        let tmp = tempfile::tempdir().unwrap();
        let out = sysbench(
            &target,
            "run",
            &[
                "--table-size=1000",
                "--threads=1024",
                "--time=2",
                "--no-telemetry",
                "--results-dir",
                tmp.path().to_str().unwrap(),
            ],
        )
        .output()
        .unwrap();
        assert!(out.status.success(), "{target}: {}", text(&out));
        let s = read_json(&only_run_dir(tmp.path()).join("summary.json"));
        assert_eq!(s["threads"], 1024);
        assert!(s["transactions"]["total"].as_u64().unwrap() > 1024, "{target}: {s}");
    }
}
