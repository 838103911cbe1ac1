//! One `lab run` of an experiment at a time, and experiment names that stay inside their
//! directories: a second `lab run` of the same experiment while the first runs is refused at
//! once, naming the first's pid, start time and command, and the first finishes undisturbed;
//! a name of `..`, `.hidden`, `a/b` or nothing is refused by `lab plan`, `lab run` and
//! `lab report`, before anything is written into the results root or `$DBPERF_HOME`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::available;

fn dbperf(home: &Path) -> Command {
    let mut c = common::dbperf();
    c.env("DBPERF_HOME", home).env(
        "DBPERF_DIST",
        dbperf::server::SandboxHome::from_env().unwrap().dist_root(),
    );
    c
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn experiment(name: Option<&str>) -> String {
    let name = name.map_or_else(String::new, |n| format!("name = {n:?}\n"));
    format!(
        "{name}duration = 2\nreport_interval = 1\n[[server]]\nid = \"mariadb-10.11\"\n\
         [[workload]]\ntest = \"oltp_point_select\"\ntables = 1\ntable_size = 1000\nusers = [2]\n"
    )
}

#[test]
fn experiment_names_are_single_path_components() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    std::fs::create_dir(&results).unwrap();
    for bad in ["..", ".", ".hidden", "a/b", "../escape", ""] {
        let file = tmp.path().join("bad.toml");
        std::fs::write(&file, experiment(Some(bad))).unwrap();
        for command in ["plan", "run"] {
            let mut cmd = dbperf(&home);
            cmd.args(["lab", command]).arg(&file);
            if command == "run" {
                cmd.arg("--results-dir").arg(&results);
            }
            let out = cmd.output().unwrap();
            assert!(!out.status.success(), "lab {command} took name {bad:?}: {}", text(&out));
            assert!(text(&out).contains("name"), "lab {command} {bad:?}: {}", text(&out));
        }
        let out = dbperf(&home)
            .args(["lab", "report", bad, "--results-dir"])
            .arg(&results)
            .output()
            .unwrap();
        assert!(!out.status.success(), "lab report took {bad:?}: {}", text(&out));
        assert!(
            text(&out).contains("experiment name"),
            "lab report {bad:?}: {}",
            text(&out)
        );
    }
    // Nothing was written for them: no state file in the results root, no data in the home.
    assert!(!results.join("state.json").exists());
    assert!(!results.join("lab").exists());
    assert!(!home.join("data").exists() && !home.join("lab").exists());
}

#[test]
fn a_second_lab_run_of_an_experiment_says_who_runs_it() {
    if !available("mariadb-10.11") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = tmp.path().join("twice.toml");
    std::fs::write(&file, experiment(None)).unwrap();
    let lab_run = || {
        let mut c = dbperf(&home);
        c.args(["lab", "run"]).arg(&file).arg("--results-dir").arg(&results);
        c
    };
    let first = lab_run().stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let lock = results.join("lab/twice/.lock");
    let holder = format!("pid {}\n", first.id());
    let started = Instant::now();
    while !std::fs::read_to_string(&lock).is_ok_and(|t| t.starts_with(&holder)) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the first lab run took no lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = lab_run().output().unwrap();
    let said = text(&second);
    assert!(!second.status.success(), "a second lab run ran: {said}");
    assert!(
        said.contains(&format!("already being run by pid {}", first.id())),
        "{said}"
    );
    assert!(
        said.contains("lab run") && said.contains("twice.toml"),
        "the command: {said}"
    );
    assert!(said.contains("started 2"), "the start time: {said}");
    let first = first.wait_with_output().unwrap();
    assert!(
        first.status.success(),
        "the first lab run was disturbed: {}",
        text(&first)
    );
    // Once it has ended, the experiment runs again (every point done: it resumes to nothing).
    let again = lab_run().output().unwrap();
    assert!(again.status.success(), "{}", text(&again));
}
