//! Nothing measured is lost on a full disk: a run whose results disk (a small tmpfs) fills up
//! mid-run, then is interrupted, still prints its report, writes `--summary-json` on another
//! disk, warns with each file and the bytes it lacks and exits with code 5. And `analyze`,
//! `report` and `report --html` on a run directory whose `intervals.jsonl`,
//! `telemetry.jsonl` and `intervals.hlog` end in a torn record succeed and name what they
//! skipped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use dbperf::server::testing::TempSandbox;
use serde_json::Value;

mod common;
use common::{dbperf, only_run_dir, read_json, run_ok, wait_for_intervals};

/// What `dbperf` exits with when results could not all be written (`cli/mod.rs`).
const EXIT_RESULTS_INCOMPLETE: i32 = 5;

fn point_select(command: &str, url: &str) -> Command {
    let mut c = dbperf();
    c.args([
        "sysbench",
        "oltp_point_select",
        command,
        "--target",
        url,
        "--tables=1",
        "--table-size=1000",
    ]);
    c
}

/// A tmpfs mounted on a temporary directory, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (`mount -o size=`), or `None` (after a notice) where this
    /// process may not mount; under CI, where tests run as root, that fails the test.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                    Err(e) => e.to_string(),
                };
                let msg = format!("cannot mount a tmpfs (needs root): {why}");
                if std::env::var_os("CI").is_some() {
                    panic!("{msg}");
                }
                eprintln!("SKIPPED: {msg}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills what is left of it with one file.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.path().join("filler")).unwrap();
        let block = [0u8; 4096];
        while f.write_all(&block).is_ok() {}
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn a_full_results_disk_keeps_the_report_and_the_summary_elsewhere_and_says_what_was_lost() {
    let Some(disk) = Tmpfs::mount("1m") else { return };
    let elsewhere = tempfile::tempdir().unwrap();
    let summary_json = elsewhere.path().join("summary.json");
    let sb = TempSandbox::start().expect("sandbox starts");
    let url = sb.url();
    run_ok(&mut point_select("prepare", &url));
    let child = point_select("run", &url)
        .args(["--threads=2", "--time=60", "--report-interval=1"])
        .arg("--results-dir")
        .arg(disk.path())
        .arg("--summary-json")
        .arg(&summary_json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The disk fills once the run measures, and Ctrl-C comes while it is full.
    let (dir, _) = wait_for_intervals(disk.path(), 1);
    disk.fill();
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: a plain signal to the child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let both = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(out.status.code(), Some(EXIT_RESULTS_INCOMPLETE), "{both}");
    // The report is printed in full.
    assert!(
        stdout.contains("SQL statistics") && stdout.contains("Latency (ms)"),
        "{both}"
    );
    assert!(stderr.contains("Interrupted: the summary covers"), "{both}");
    // --summary-json, on a disk with room, holds what was measured.
    let s = read_json(&summary_json);
    assert_eq!(s["interrupted"], true);
    assert!(s["transactions"]["total"].as_u64().unwrap() > 0, "{s}");
    assert!(s["duration_s"].as_f64().unwrap() >= 3.0, "{s}");
    // Each file the full disk cut short is named with the bytes it lacks: summary.json (a new
    // file needs a page the disk no longer has) and telemetry.jsonl (kilobytes a sample);
    // intervals.jsonl and intervals.hlog once the slack in their last page is used up.
    assert!(stderr.contains("warning: results incomplete: "), "{both}");
    let lost: Vec<&str> = stderr.lines().filter_map(|l| l.strip_prefix("warning:   ")).collect();
    for line in &lost {
        let (path, what) = line.split_once(": ").unwrap();
        assert!(Path::new(path).starts_with(&dir), "{line}");
        assert!(
            what.ends_with(" bytes not written (No space left on device (os error 28))"),
            "{line}"
        );
    }
    for file in ["summary.json", "telemetry.jsonl"] {
        let path = dir.join(file).display().to_string();
        assert!(
            lost.iter().any(|l| l.starts_with(&format!("{path}: "))),
            "{file} not named:\n{both}"
        );
    }
    assert!(!dir.join("summary.json").exists());
    // What the run directory holds is still readable.
    std::fs::remove_file(disk.path().join("filler")).unwrap();
    let text = String::from_utf8_lossy(&run_ok(dbperf().arg("analyze").arg(&dir)).stdout).into_owned();
    assert!(text.contains("stability:"), "{text}");
}

/// Appends `fragment` (no newline) to `file`: a record cut off mid-write.
#[test]
fn a_disk_full_before_the_run_is_named_and_leaves_nothing_behind() {
    let Some(disk) = Tmpfs::mount("1m") else { return };
    let sb = TempSandbox::start().expect("sandbox starts");
    let url = sb.url();
    run_ok(&mut point_select("prepare", &url));
    disk.fill();
    let out = point_select("run", &url)
        .args(["--threads=1", "--time=2"])
        .arg("--results-dir")
        .arg(disk.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is on a full disk")
            && stderr.contains("nothing was measured")
            && stderr.contains("--results-dir"),
        "{stderr}"
    );
    // No run directory half made: only the filler (and the catalog, when it fit) are there.
    let left: Vec<String> = std::fs::read_dir(disk.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "filler" && !n.starts_with("catalog.sqlite"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

fn tear(file: &Path, fragment: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    f.write_all(fragment.as_bytes()).unwrap();
}

#[test]
fn readers_skip_a_torn_last_record_of_every_file_and_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = TempSandbox::start().expect("sandbox starts");
    let url = sb.url();
    run_ok(&mut point_select("prepare", &url));
    run_ok(
        point_select("run", &url)
            .args(["--threads=2", "--time=3", "--warmup-time=1", "--report-interval=1"])
            .arg("--results-dir")
            .arg(tmp.path()),
    );
    drop(sb);
    let dir = only_run_dir(tmp.path());
    let files: [(PathBuf, &str); 3] = [
        (dir.join("intervals.jsonl"), "{\"index\":9,\"start_s\":4.0,\"end_"),
        (
            dir.join("telemetry.jsonl"),
            "{\"t_s\":9.0,\"interval_s\":1.0,\"os\":{\"cpus\":[{\"cpu",
        ),
        (
            dir.join("intervals.hlog"),
            "Tag=response:oltp_point_select,4.000,1.000,0.512,HISTFAAAA",
        ),
    ];
    for (file, fragment) in &files {
        tear(file, fragment);
    }
    let torn = |out: &str, file: &Path| {
        out.lines()
            .any(|l| l.contains(&format!("{}:", file.display())) && l.contains("skipped a torn last record"))
    };

    let out = run_ok(dbperf().arg("analyze").arg(&dir));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("stability:"), "{text}");
    for (file, _) in &files[..2] {
        assert!(torn(&text, file), "{}: {text}", file.display());
    }
    let json: Value =
        serde_json::from_slice(&run_ok(dbperf().arg("analyze").arg(&dir).args(["--format", "json"])).stdout).unwrap();
    assert_eq!(json["torn"].as_array().map(Vec::len), Some(2), "{json}");

    let html = tmp.path().join("report.html");
    let out = run_ok(dbperf().arg("report").arg(&dir).arg("--html").arg(&html));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("SQL statistics"), "{stdout}");
    for (file, _) in &files {
        assert!(torn(&stderr, file), "{}: {stderr}", file.display());
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Latency distribution"),
        "the spectrum is drawn from the whole records"
    );
    assert!(page.contains("skipped a torn last record"));
}
