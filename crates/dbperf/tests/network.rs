//! The client on "another host" (`--client-netns`) against a real sandboxed MariaDB, as a user
//! runs it: the same point-select run over the Unix socket, over loopback and through a
//! network namespace of its own, with rates that bind; what the manifest records; `delay=`
//! where the kernel lacks netem; what a run killed with SIGKILL leaves and the next run
//! removes; and the refusal without root. Needs root (CI runs as root); skipped elsewhere.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use dbperf::server::testing::TempSandbox;
use serde_json::Value;

mod common;
use common::{dbperf, read_json, run_dirs, run_ok, sandbox, skip_unless, wait_for_intervals};

fn root_or_skip() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    skip_unless(
        root,
        "not root: --client-netns creates network namespaces",
        std::env::var_os("CI").is_some(),
    )
}

/// A sandbox with one 10,000-row sysbench table.
fn prepared() -> TempSandbox {
    let sb = sandbox();
    run_ok(dbperf().args([
        "sysbench",
        "oltp_point_select",
        "prepare",
        "--target",
        &sb.url(),
        "--tables=1",
        "--table-size=10000",
    ]));
    sb
}

/// `dbperf sysbench oltp_point_select run` on the prepared table with `threads` connections
/// for `secs` seconds, its output piped.
fn point_select_cmd(target: &str, results: &Path, threads: u32, secs: u32, extra: &[&str]) -> Command {
    let mut c = dbperf();
    c.args(["sysbench", "oltp_point_select", "run", "--target", target])
        .args(["--tables=1", "--table-size=10000"])
        .arg(format!("--threads={threads}"))
        .arg(format!("--time={secs}"))
        .arg("--results-dir")
        .arg(results)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// A 4-connection point-select run of `secs` seconds against `target` with `extra` flags;
/// returns the run directory and the dbperf process id.
fn point_select(target: &str, results: &Path, secs: u32, extra: &[&str]) -> (PathBuf, u32) {
    let before = run_dirs(results);
    let child = point_select_cmd(target, results, 4, secs, extra).spawn().unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{extra:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = run_dirs(results)
        .into_iter()
        .find(|d| !before.contains(d))
        .expect("a new run directory");
    (dir, pid)
}

/// What a dbperf process `pid` made and did not remove: its namespace, host veth end, nat
/// table, and anything else named after it.
fn leftovers_of(pid: u32) -> Vec<String> {
    let mut left = Vec::new();
    let show = |prog: &str, args: &[&str]| {
        String::from_utf8_lossy(&Command::new(prog).args(args).output().unwrap().stdout).into_owned()
    };
    if show("ip", &["netns", "list"])
        .lines()
        .any(|l| l.split_whitespace().next() == Some(&format!("dbperf-{pid}")))
    {
        left.push(format!("namespace dbperf-{pid}"));
    }
    if show("ip", &["-o", "link", "show"]).contains(&format!("dbp{pid}h")) {
        left.push(format!("veth dbp{pid}h"));
    }
    if show("nft", &["list", "tables"]).contains(&format!("dbperf_{pid}")) {
        left.push(format!("nft table dbperf_{pid}"));
    }
    if show("tc", &["qdisc", "show"]).contains(&format!("dbp{pid}")) {
        left.push(format!("qdisc on dbp{pid}h"));
    }
    left
}

fn tps(dir: &Path) -> f64 {
    read_json(&dir.join("summary.json"))["transactions"]["per_sec"]
        .as_f64()
        .unwrap()
}

fn p50(dir: &Path) -> f64 {
    read_json(&dir.join("summary.json"))["latency_ms"]["p50"]
        .as_f64()
        .unwrap()
}

fn network(dir: &Path) -> Value {
    read_json(&dir.join("manifest.json"))["network"].clone()
}

/// The same run over the socket, loopback and a namespace: each manifest shows its path;
/// through the namespace a rate that binds sets the throughput (a quarter of the bandwidth, a
/// quarter of the transactions) and the queueing the latency; nothing is left behind.
#[test]
fn the_same_run_over_socket_loopback_and_a_namespace_whose_rate_binds() {
    if !root_or_skip() {
        return;
    }
    let sb = prepared();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");

    let (socket, _) = point_select(&sb.socket_url(), &results, 3, &[]);
    assert_eq!(network(&socket)["path"], "unix-socket");
    let (loopback, _) = point_select(&sb.url(), &results, 3, &[]);
    assert_eq!(network(&loopback)["path"], "loopback");
    assert_eq!(network(&loopback)["address"], format!("127.0.0.1:{}", sb.port()));

    let mut runs = Vec::new();
    for shaping in ["", "rate=8mbit", "rate=2mbit"] {
        let flag = match shaping {
            "" => "--client-netns".to_string(),
            s => format!("--client-netns={s}"),
        };
        // From the socket target too: the server's TCP port comes from its variables.
        let (dir, pid) = point_select(&sb.socket_url(), &results, 4, &[&flag]);
        let net = network(&dir);
        assert_eq!(net["path"], "netns", "{net}");
        let ns = &net["netns"];
        assert_eq!(ns["namespace"], format!("dbperf-{pid}"));
        assert_eq!(ns["forwards_to"], format!("127.0.0.1:{}", sb.port()));
        let host = ns["host_address"].as_str().unwrap();
        assert!(host.starts_with("198.1"), "{host}");
        assert_eq!(
            net["address"],
            format!("{}:{}", host.trim_end_matches("/30"), sb.port())
        );
        let qdiscs = ns["qdiscs"].to_string();
        match shaping {
            "" => assert!(!qdiscs.contains("tbf"), "{qdiscs}"),
            s => {
                let rate = s.trim_start_matches("rate=").trim_end_matches("mbit");
                assert!(qdiscs.matches("tbf").count() == 2, "{qdiscs}");
                assert!(qdiscs.contains(&format!("rate {rate}Mbit")), "{qdiscs}");
                assert_eq!(ns["shaping"]["rate"], s.trim_start_matches("rate="));
            }
        }
        assert_eq!(leftovers_of(pid), Vec::<String>::new(), "after {flag}");
        runs.push(dir);
    }
    let (free, fast, slow) = (tps(&runs[0]), tps(&runs[1]), tps(&runs[2]));
    eprintln!(
        "socket {:.0} tps, loopback {:.0}, namespace {free:.0}, 8mbit {fast:.0} (p50 {} ms), 2mbit {slow:.0} (p50 {} ms)",
        tps(&socket),
        tps(&loopback),
        p50(&runs[1]),
        p50(&runs[2])
    );
    assert!(
        fast < 0.6 * free,
        "8mbit does not bind: {fast:.0} vs {free:.0} tps unshaped"
    );
    let ratio = fast / slow;
    assert!(
        (2.8..5.2).contains(&ratio),
        "a quarter of the bandwidth should give about a quarter of the throughput: {fast:.0} vs {slow:.0} tps"
    );
    assert!(
        p50(&runs[2]) > 2.0 * p50(&runs[1]),
        "queueing behind 2mbit should show in the latency: p50 {} vs {} ms",
        p50(&runs[2]),
        p50(&runs[1])
    );
}

/// `delay=` needs netem: refused with a message naming it where the kernel lacks it (before
/// any run directory), and adding the delay to every round trip where it has it.
#[test]
fn delay_needs_netem_and_says_so() {
    if !root_or_skip() {
        return;
    }
    let sb = prepared();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let child = point_select_cmd(&sb.url(), &results, 2, 2, &["--client-netns=delay=2ms"])
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        // This kernel has netem: 2 ms each way is at least 4 ms a transaction.
        let dir = run_dirs(&results).pop().unwrap();
        assert!(p50(&dir) >= 4.0, "p50 {} ms with delay=2ms", p50(&dir));
    } else {
        assert!(err.contains("netem") && err.contains("rate= alone"), "{err}");
        assert!(run_dirs(&results).is_empty(), "nothing is measured");
    }
    assert_eq!(leftovers_of(pid), Vec::<String>::new());
}

/// A run killed with SIGKILL cannot clean up: its namespace stays until the next
/// `--client-netns` run removes it (and only the leftovers of processes that are gone).
#[test]
fn what_a_killed_run_leaves_the_next_run_removes() {
    if !root_or_skip() {
        return;
    }
    let sb = prepared();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let mut child = point_select_cmd(&sb.url(), &results, 2, 60, &["--client-netns=rate=50mbit"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let killed = child.id();
    wait_for_intervals(&results, 2);
    child.kill().unwrap();
    child.wait().unwrap();
    let left = leftovers_of(killed);
    assert!(
        left.iter().any(|l| l.starts_with("namespace")) && left.iter().any(|l| l.starts_with("nft")),
        "a SIGKILL leaves the namespace and nat table: {left:?}"
    );
    let (_, next) = point_select(&sb.url(), &tmp.path().join("again"), 1, &["--client-netns"]);
    assert_eq!(leftovers_of(killed), Vec::<String>::new(), "the next run removes them");
    assert_eq!(leftovers_of(next), Vec::<String>::new());
}

/// Without root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) the flag is refused, saying why.
#[test]
fn without_root_the_namespace_is_refused() {
    if !root_or_skip() {
        return;
    }
    let Ok(setpriv) = which("setpriv") else {
        panic!("setpriv (util-linux) is missing");
    };
    let sb = prepared();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let out = Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_dbperf"))
        .args(["sysbench", "oltp_point_select", "run", "--target", &sb.url()])
        .args(["--tables=1", "--table-size=10000", "--threads=1", "--time=1"])
        .arg("--results-dir")
        .arg(tmp.path().join("results"))
        .arg("--client-netns")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--client-netns needs root"), "{err}");
}

fn which(prog: &str) -> Result<PathBuf, ()> {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file())
        .ok_or(())
}

/// Three shards in three namespaces against one sandbox, started together: each runs its
/// share of the users on the shared clock; `dbperf merge` gives one run whose transactions
/// are the sum of the shards' and whose percentiles are those of one histogram of every request
/// in the shards' raw interval logs. A shard killed mid-run is named by the merge, which says
/// what it covers. Nothing is left behind.
#[test]
fn three_shards_in_three_namespaces_merge_into_one_run() {
    if !root_or_skip() {
        return;
    }
    let sb = prepared();
    let tmp = tempfile::tempdir().unwrap();
    let shards_at = |results: &Path, time: u32| {
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 8;
        (0..3)
            .map(|i| {
                let (shard, start) = (format!("--shard={i}/3"), format!("--start-at={start}"));
                let extra = ["--warmup-time=1", &shard, &start, "--client-netns=rate=20mbit"];
                point_select_cmd(&sb.url(), results, 7, time, &extra).spawn().unwrap()
            })
            .collect::<Vec<_>>()
    };
    let results = tmp.path().join("shards");
    let children = shards_at(&results, 3);
    let pids: Vec<u32> = children.iter().map(|c| c.id()).collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let dirs = run_dirs(&results);
    assert_eq!(dirs.len(), 3);
    let mut all = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    let mut total = 0;
    let mut users = Vec::new();
    for d in &dirs {
        let m = read_json(&d.join("manifest.json"));
        let s = read_json(&d.join("summary.json"));
        assert_eq!(m["shard"]["users_total"], 7);
        users.push((
            m["shard"]["first_user"].as_u64().unwrap(),
            m["shard"]["users"].as_u64().unwrap(),
        ));
        assert_eq!(m["network"]["path"], "netns");
        let h = common::measured_histogram(d, 1.0, "response:");
        assert_eq!(
            h.len(),
            s["transactions"]["total"].as_u64().unwrap(),
            "{}: the interval log holds every measured transaction",
            d.display()
        );
        total += h.len();
        all.add(&h).unwrap();
    }
    users.sort_unstable();
    assert_eq!(users, [(0, 2), (2, 2), (4, 3)]);
    let merged_root = tmp.path().join("merged");
    let out = dbperf()
        .arg("merge")
        .args(&dirs)
        .arg("--results-dir")
        .arg(&merged_root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    let merged = run_dirs(&merged_root).pop().unwrap();
    let s = read_json(&merged.join("summary.json"));
    assert_eq!(s["transactions"]["total"].as_u64().unwrap(), total);
    let ms = |q: f64| all.value_at_quantile(q) as f64 / 1000.0;
    assert_eq!(s["latency_ms"]["p50"].as_f64().unwrap(), ms(0.50), "{s}");
    assert_eq!(s["latency_ms"]["p99"].as_f64().unwrap(), ms(0.99), "{s}");
    assert_eq!(s["threads"], 7);

    // A shard killed mid-run: the merge names it and covers the other two.
    let results = tmp.path().join("killed");
    let mut children = shards_at(&results, 6);
    let victim = children.remove(1);
    let victim_pid = victim.id();
    // Two seconds into the measured phase (8 s ahead, 1 s of warmup).
    std::thread::sleep(Duration::from_secs(10));
    // SAFETY: kill has no memory preconditions.
    unsafe { libc::kill(victim_pid as i32, libc::SIGKILL) };
    let _ = victim.wait_with_output();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let dirs = run_dirs(&results);
    assert_eq!(
        dirs.len(),
        3,
        "the killed shard's run directory is there, without a summary"
    );
    let merged_root = tmp.path().join("merged-killed");
    let out = dbperf()
        .arg("merge")
        .args(&dirs)
        .arg("--results-dir")
        .arg(&merged_root)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(5), "{text}");
    assert!(text.contains("shard 1"), "{text}");
    let merged = run_dirs(&merged_root).pop().expect("the merge of the other two");
    let m = read_json(&merged.join("manifest.json"));
    let left: Vec<u64> = m["merged"]["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["index"].as_u64().unwrap())
        .collect();
    assert_eq!(left, [1], "{m}");
    // The killed shard's namespace goes with the next --client-netns run.
    point_select(&sb.url(), &tmp.path().join("after"), 1, &["--client-netns"]);
    for pid in pids.iter().chain([&victim_pid]) {
        assert_eq!(leftovers_of(*pid), Vec::<String>::new());
    }
}

/// TPC-H's own streams through the namespace: a throughput test whose streams are connected
/// from inside it (seen there with `ss` while the test waits for its --start-at), whose
/// manifest shows the path and whose Throughput@Size is computed; a power test through it; a
/// cold power test and a sharded power test refused, saying why. Nothing is left behind.
#[test]
fn tpch_streams_run_inside_the_namespace() {
    if !root_or_skip() {
        return;
    }
    let sb = sandbox();
    let url = sb.url();
    run_ok(dbperf().args(["tpch", "prepare", "--sf", "0.01", "--target", &url]));
    let tmp = tempfile::tempdir().unwrap();
    let start_at = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 5)
    .to_string();
    let child = dbperf()
        .args([
            "tpch",
            "throughput",
            "--streams",
            "2",
            "--seed",
            "7",
            "--no-refresh",
            "--target",
            &url,
        ])
        .args(["--start-at", &start_at, "--client-netns", "rate=100mbit"])
        .arg("--results-dir")
        .arg(tmp.path().join("throughput"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // While the test waits for its start, its connections (the admin one and a stream each)
    // are open from inside the namespace, to the host end of the pair.
    let mut inside = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(4);
    while std::time::Instant::now() < deadline && inside < 3 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &format!("dbperf-{pid}"),
                "ss",
                "-Htn",
                "state",
                "established",
            ])
            .output()
            .unwrap();
        inside = String::from_utf8_lossy(&out.stdout).lines().count();
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(inside, 3, "connections seen inside the namespace");
    assert!(text.contains("Throughput@Size "), "{text}");
    let dir = run_dirs(&tmp.path().join("throughput")).pop().unwrap();
    let net = network(&dir);
    assert_eq!(net["path"], "netns", "{net}");
    assert_eq!(net["netns"]["shaping"]["rate"], "100mbit", "{net}");
    assert_eq!(leftovers_of(pid), Vec::<String>::new());

    let child = dbperf()
        .args([
            "tpch",
            "power",
            "--queries",
            "1,6",
            "--no-refresh",
            "--seed",
            "7",
            "--target",
            &url,
        ])
        .arg("--client-netns")
        .arg("--results-dir")
        .arg(tmp.path().join("power"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = run_dirs(&tmp.path().join("power")).pop().unwrap();
    assert_eq!(network(&dir)["path"], "netns");
    let tpch = read_json(&dir.join("tpch.json"));
    let statuses: Vec<&Value> = tpch["runs"][0]["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| &q["status"])
        .collect();
    assert_eq!(statuses, [&Value::from("ok"), &Value::from("ok")], "{tpch}");
    assert_eq!(leftovers_of(pid), Vec::<String>::new());

    for (extra, says) in [
        (
            vec!["--cold", "query", "--client-netns"],
            "--cold restarts the server from the client",
        ),
        (
            vec!["--shard", "0/2", "--start-at", &start_at],
            "the power test is one query stream",
        ),
    ] {
        let out = dbperf()
            .args(["tpch", "power", "--target", &url])
            .args(&extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{extra:?}: {err}");
    }
}
