//! A database host reached with ssh: a network namespace running Debian's sshd with keys made
//! for the test (`support/sshd.rs`). `remote check` before dbperf is there, `remote install`
//! (once copied, then recognised; never writing through a link planted at the target),
//! `remote check` showing both hosts, and a host whose sshd was killed, refused as unreachable.

use std::process::Command;

mod common;
use common::{present_or_skip, run_ok};
#[path = "support/sshd.rs"]
mod sshd;

fn remote(args: &[&str], host: &sshd::SshHost, dbperf_there: &str) -> Command {
    let mut c = common::dbperf();
    c.arg("remote")
        .args(args)
        .arg(host.url())
        .args(["--ssh", &host.ssh(), "--dbperf", dbperf_there]);
    c
}

#[test]
fn install_and_check_a_host_over_ssh_and_notice_it_gone() {
    if !present_or_skip(sshd::possible().is_ok(), &format!("{:?}", sshd::possible().err())) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut host = sshd::SshHost::start(tmp.path());
    let there = tmp.path().join("there/bin/dbperf");
    let there_s = there.to_str().unwrap();

    let out = run_ok(&mut remote(&["check"], &host, there_s));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("does not run there") && text.contains("dbperf remote install"),
        "{text}"
    );

    // A link planted where the binary goes is replaced, never written through.
    std::fs::create_dir_all(there.parent().unwrap()).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "not yours").unwrap();
    std::os::unix::fs::symlink(&victim, &there).unwrap();
    let out = run_ok(&mut remote(&["install"], &host, there_s));
    assert!(String::from_utf8_lossy(&out.stdout).contains("copied this dbperf"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "not yours");
    let meta = std::fs::symlink_metadata(&there).unwrap();
    assert!(meta.is_file(), "the link was replaced by the binary");
    assert_eq!(
        std::fs::read(&there).unwrap(),
        std::fs::read(env!("CARGO_BIN_EXE_dbperf")).unwrap()
    );
    let out = run_ok(&mut remote(&["install"], &host, there_s));
    assert!(String::from_utf8_lossy(&out.stdout).contains("is this build already"));

    let out = run_ok(&mut remote(&["check"], &host, there_s));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("reachable over ssh") && text.contains("this host (client)"),
        "{text}"
    );
    let cpus = text.lines().find(|l| l.starts_with("CPUs")).unwrap();
    assert!(cpus.matches("logical").count() == 2, "both hosts' CPUs: {text}");

    host.kill_sshd();
    let out = remote(&["check"], &host, there_s).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot reach") && err.contains(&host.url()), "{err}");
    assert!(err.contains("dbperf never types a password"), "{err}");
}

/// The `--target` URL a `server start` printed for TCP on `addr`.
fn tcp_target(printed: &str, addr: &str) -> String {
    printed
        .lines()
        .filter_map(|l| l.trim().strip_prefix("--target "))
        .find(|u| u.contains(&format!("@{addr}:")))
        .unwrap_or_else(|| panic!("no TCP target on {addr} in:\n{printed}"))
        .to_owned()
}

#[test]
fn a_sandbox_on_the_database_host_serves_the_client_host_and_no_one_else() {
    if !present_or_skip(sshd::possible().is_ok(), &format!("{:?}", sshd::possible().err())) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let host = sshd::SshHost::start(tmp.path());
    let far_home = tmp.path().join("far-home");
    let exe = env!("CARGO_BIN_EXE_dbperf");
    let on_host = |args: &str| {
        host.run(&format!(
            "env DBPERF_HOME={} DBPERF_DIST={} {exe} {args}",
            far_home.display(),
            dbperf::server::SandboxHome::from_env().unwrap().dist_root().display()
        ))
    };
    for (server, name) in [("mariadb", "far"), ("postgres-15", "farpg")] {
        let printed = on_host(&format!(
            "server start {server} --name {name} --listen {} --allow-from {}",
            host.addr, host.here
        ));
        let url = tcp_target(&printed, &host.addr.to_string());
        // The client host runs the workload against the database host, sampling that host's
        // OS through ssh.
        let results = tmp.path().join(format!("results-{name}"));
        for step in ["prepare", "run"] {
            let mut c = common::dbperf();
            c.args([
                "sysbench",
                "oltp_point_select",
                step,
                "--tables=1",
                "--table-size=500",
                "--time=4",
            ])
            .env("DBPERF_TARGET", &url)
            .arg("--results-dir")
            .arg(&results);
            if step == "run" {
                c.args([
                    "--server-host",
                    &host.url(),
                    "--server-host-ssh",
                    &host.ssh(),
                    "--server-host-dbperf",
                    exe,
                ]);
            }
            let out = run_ok(&mut c);
            if step == "run" {
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(text.contains("transactions:"), "{text}");
            }
        }
        let run = common::only_run_dir(&results);
        let m = common::read_json(&run.join("manifest.json"));
        assert_eq!(m["server_host"]["url"], host.url(), "{m}");
        assert!(m["server_host"]["host"]["logical_cpus"].as_u64().unwrap() > 0, "{m}");
        // The server host's OS is the namespace's: its network is the veth peer, not ours.
        let telemetry = std::fs::read_to_string(run.join("telemetry.jsonl")).unwrap();
        let rows: Vec<serde_json::Value> = telemetry.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let sampled: Vec<&serde_json::Value> = rows.iter().filter(|r| r["server_host_os"].is_object()).collect();
        assert!(sampled.len() + 1 >= rows.len() && sampled.len() >= 3, "{telemetry}");
        let ifaces = |os: &serde_json::Value| -> Vec<String> {
            os["net"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["iface"].as_str().unwrap().to_owned())
                .collect()
        };
        let (there, here) = (ifaces(&sampled[0]["server_host_os"]), ifaces(&sampled[0]["os"]));
        assert!(
            there.iter().any(|i| i.starts_with("dbs") && i.ends_with('c')),
            "{there:?}"
        );
        assert!(
            !here.iter().any(|i| i.starts_with("dbs") && i.ends_with('c')),
            "{here:?}"
        );
        // The report shows both hosts.
        let out = run_ok(common::dbperf().args(["report"]).arg(&run));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&host.url()) && text.contains("server CPUs"), "{text}");
        // From an address that was not allowed (the database host's own), the account does not exist.
        let password = url.split(':').nth(2).unwrap().split('@').next().unwrap();
        let refused = match server {
            "mariadb" => format!(
                "MYSQL_PWD={password} ip netns exec {} mariadb --no-defaults -h {} -P {} -u sb -e 'SELECT 1' sbtest",
                host.ns,
                host.addr,
                url.rsplit(':').next().unwrap().split('/').next().unwrap()
            ),
            _ => format!(
                "PGPASSWORD={password} ip netns exec {} psql -h {} -p {} -U sb -c 'SELECT 1' sbtest",
                host.ns,
                host.addr,
                url.rsplit(':').next().unwrap().split('/').next().unwrap()
            ),
        };
        let out = Command::new("sh").arg("-c").arg(&refused).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{server}: a client not allowed got in");
        assert!(
            err.contains("Access denied") || err.contains("is not allowed") || err.contains("no pg_hba.conf entry"),
            "{server}: {err}"
        );
        on_host(&format!("server stop {name}"));
        // The data set kept there and copied back, as the lab does between points.
        let snap = tmp.path().join(format!("kept/{name}"));
        on_host(&format!("server snapshot save {name} {}", snap.display()));
        assert!(on_host(&format!("server snapshot ready {}", snap.display())).contains("a complete snapshot"));
        on_host(&format!("server snapshot restore {name} {}", snap.display()));
    }
}
