//! A lab whose server is on another host (`[[server]] host = "ssh://..."`): a network
//! namespace running Debian's sshd with keys the test made (`support/sshd.rs`) is the database
//! host. The lab prepares the data set there, keeps its copy there, starts the sandbox there
//! listening on the host's address for this host only, and runs each point from here with the
//! host's OS telemetry streamed back. ssh is cut in the middle of a point: that point fails
//! with the reason, the rest run, and a second `lab run` runs the failed one.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{available, present_or_skip, read_json, run_ok};
#[path = "support/sshd.rs"]
mod sshd;

fn dbperf(home: &Path) -> Command {
    let mut c = common::dbperf();
    c.env("DBPERF_HOME", home);
    c
}

/// Telemetry rows of `run` that carry the server host's OS.
fn host_rows(run: &Path) -> usize {
    std::fs::read_to_string(run.join("telemetry.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["server_host_os"].is_object())
        .count()
}

#[test]
fn a_lab_runs_its_points_against_a_server_on_another_host_and_survives_losing_ssh() {
    if !present_or_skip(sshd::possible().is_ok(), &format!("{:?}", sshd::possible().err()))
        || !present_or_skip(available("mariadb-10.11"), "mariadb-10.11")
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut host = sshd::SshHost::start(tmp.path());
    let (home, far_home, results) = (
        tmp.path().join("home"),
        tmp.path().join("far-home"),
        tmp.path().join("results"),
    );
    let exe = env!("CARGO_BIN_EXE_dbperf");
    let file = tmp.path().join("remote.toml");
    std::fs::write(
        &file,
        format!(
            r#"name = "far"
repetitions = 1
duration = "7s"
warmup = "0s"
report_interval = "1s"

[[server]]
id = "mariadb-10.11"
host = "{}"
ssh = "{}"
dbperf = "{exe}"
home = "{}"
settings = {{ innodb_buffer_pool_size = "64M" }}

[[workload]]
test = "oltp_read_only"
tables = 1
table_size = 2000
users = [1, 2, 3]

# Cold: the client's TPC-H run restarts the sandbox there, over ssh, before its run.
[[workload]]
kind = "tpch"
test = "power"
scale_factor = 0.01
queries = [1, 6]
cold = "run"
"#,
            host.url(),
            host.ssh(),
            far_home.display()
        ),
    )
    .unwrap();

    // A host without dbperf is refused with the command that copies it there.
    let bare = tmp.path().join("bare.toml");
    std::fs::write(
        &bare,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace(&format!("dbperf = \"{exe}\""), "dbperf = \"/nowhere/dbperf\""),
    )
    .unwrap();
    let out = dbperf(&home).args(["lab", "run"]).arg(&bare).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("has no dbperf at /nowhere/dbperf")
            && err.contains(&format!("dbperf remote install {} --ssh", host.url()))
            && err.contains("--dbperf /nowhere/dbperf"),
        "{err}"
    );

    // The plan checks the settings there; a misspelt one is named by that host's server.
    let out = run_ok(dbperf(&home).args(["lab", "plan"]).arg(&file));
    assert!(String::from_utf8_lossy(&out.stdout).contains("estimated time"));
    let typo = tmp.path().join("typo.toml");
    std::fs::write(
        &typo,
        std::fs::read_to_string(&file)
            .unwrap()
            .replace("innodb_buffer_pool_size", "innodb_bufer_pool_size"),
    )
    .unwrap();
    let out = dbperf(&home).args(["lab", "plan"]).arg(&typo).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&host.url()) && err.contains("innodb_bufer_pool_size"),
        "{err}"
    );

    let log = tmp.path().join("lab.log");
    let mut lab = dbperf(&home)
        .args(["lab", "run"])
        .arg(&file)
        .arg("--results-dir")
        .arg(&results)
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Into the first point, with the host's samples arriving: ssh is cut, then comes back.
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let sampling = common::run_dirs(&results).iter().any(|d| host_rows(d) >= 2);
        if sampling {
            break;
        }
        assert!(
            Instant::now() < deadline && lab.try_wait().unwrap().is_none(),
            "no point sampled the server host: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    host.cut_ssh();
    std::thread::sleep(Duration::from_secs(1));
    host.restore_ssh();
    let out = lab.wait_with_output().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a point failed, so the lab did: {text}\n{err}");
    let failed: Vec<&str> = text.lines().filter(|l| l.contains("FAILED")).collect();
    assert_eq!(failed.len(), 1, "{text}");
    assert!(
        failed[0].contains("the server host was lost") && failed[0].contains(&host.url()),
        "{text}"
    );
    let state = read_json(&results.join("lab/far/state.json"));
    assert_eq!(state["done"].as_object().unwrap().len(), 3, "{state}");
    assert_eq!(state["failed"].as_object().unwrap().len(), 1, "{state}");

    // The data set was prepared and kept on that host, and nothing was started here.
    let kept = far_home.join("lab/far/data/mariadb-10.11");
    let sets: Vec<_> = std::fs::read_dir(&kept).unwrap().map(|e| e.unwrap().path()).collect();
    assert!(sets.iter().any(|d| d.join(".dbperf-prepared").is_file()), "{sets:?}");
    assert!(!home.join("servers").join("lab-far-1").exists());

    // A second run runs the failed point; every point ran against that host's server,
    // listening on its address, with its OS in every telemetry row.
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results),
    );
    let again = String::from_utf8_lossy(&out.stdout);
    assert!(again.contains("3 of 4 runs already done, 1 to go"), "{again}");
    let state = read_json(&results.join("lab/far/state.json"));
    assert_eq!(state["done"].as_object().unwrap().len(), 4, "{state}");
    for done in state["done"].as_object().unwrap().values() {
        let run = Path::new(done["run_dir"].as_str().unwrap());
        let m = read_json(&run.join("manifest.json"));
        if run.join("tpch.json").is_file() {
            let tpch = read_json(&run.join("tpch.json"));
            assert_eq!(tpch["cold"], "run", "{tpch}");
            // Restarted there as root, so the page cache was dropped too.
            assert!(tpch["runs"][0]["cold_notes"].is_null(), "{tpch}");
            assert_eq!(m["server_host"]["url"], host.url(), "{m}");
            continue;
        }
        assert_eq!(m["server_host"]["url"], host.url(), "{m}");
        assert!(
            m["target"].as_str().unwrap().contains(&format!("@{}:", host.addr)),
            "the client reached the host's address: {m}"
        );
        let route = &m["network"]["route"];
        assert_eq!(route["server_address"], host.addr.to_string(), "{m}");
        assert_eq!(route["client_address"], host.here.to_string(), "{m}");
        assert_eq!(route["interface"], host.veth, "{m}");
        let rows = std::fs::read_to_string(run.join("telemetry.jsonl")).unwrap();
        let n = rows.lines().count();
        // The first period or two may end before the first sample from there arrives.
        assert!(host_rows(run) + 2 >= n && n >= 5, "{rows}");
        assert!(!rows.contains("server_host_lost"), "{rows}");
    }
    let out = run_ok(
        dbperf(&home)
            .args(["lab", "report", "far"])
            .arg("--results-dir")
            .arg(&results),
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains(&host.url()), "{report}");
    assert!(
        report.contains(&format!("{} → {} via {}", host.here, host.addr, host.veth)),
        "the network path: {report}"
    );
    // Stopped at the end, there.
    let listed = host.run(&format!(
        "env DBPERF_HOME={} {exe} server list --json",
        far_home.display()
    ));
    assert!(listed.contains("\"state\":\"stopped\""), "{listed}");
}

/// A build added on the database host only (`server add` there): the lab asks that host what
/// it is, plans and runs it there under its name; a name neither host knows is refused with
/// the names that host has.
#[test]
fn a_build_added_on_the_database_host_only_is_used_by_its_name() {
    let base = dbperf::server::SandboxHome::from_env()
        .unwrap()
        .dist_root()
        .join("mariadb-10.11.5/base");
    if !present_or_skip(sshd::possible().is_ok(), &format!("{:?}", sshd::possible().err()))
        || !present_or_skip(
            base.join("bin").is_dir(),
            "mariadb-10.11.5 (dbperf server install mariadb-10.11.5)",
        )
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let host = sshd::SshHost::start(tmp.path());
    let (home, far_home, results) = (
        tmp.path().join("home"),
        tmp.path().join("far-home"),
        tmp.path().join("results"),
    );
    let exe = env!("CARGO_BIN_EXE_dbperf");
    let added = host.run(&format!(
        "env DBPERF_HOME={} {exe} server add mine --basedir {}",
        far_home.display(),
        base.display()
    ));
    assert!(added.contains("mine: mariadb 10.11.5"), "{added}");
    let lab = |id: &str| {
        let file = tmp.path().join(format!("{id}.toml"));
        std::fs::write(
            &file,
            format!(
                r#"name = "mine"
repetitions = 1
duration = "3s"
warmup = "0s"
report_interval = "1s"

[[server]]
id = "{id}"
host = "{}"
ssh = "{}"
dbperf = "{exe}"
home = "{}"

[[workload]]
test = "oltp_point_select"
tables = 1
table_size = 1000
users = [2]
"#,
                host.url(),
                host.ssh(),
                far_home.display()
            ),
        )
        .unwrap();
        file
    };
    let out = dbperf(&home)
        .args(["lab", "plan"])
        .arg(lab("nothere"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("unknown server \"nothere\" here and on") && err.contains("mine"),
        "{err}"
    );
    let out = run_ok(dbperf(&home).args(["lab", "plan"]).arg(lab("mine")));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("mine on {}", host.addr)), "{text}");
    run_ok(
        dbperf(&home)
            .args(["lab", "run"])
            .arg(lab("mine"))
            .arg("--results-dir")
            .arg(&results),
    );
    let state = read_json(&results.join("lab/mine/state.json"));
    let done: Vec<&Value> = state["done"].as_object().unwrap().values().collect();
    assert_eq!(done.len(), 1, "{state}");
    let m = read_json(&Path::new(done[0]["run_dir"].as_str().unwrap()).join("manifest.json"));
    assert!(
        m["server"]["version"].as_str().unwrap().starts_with("10.11.5"),
        "{}",
        m["server"]["version"]
    );
}
