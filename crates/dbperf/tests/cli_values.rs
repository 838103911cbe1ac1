//! Hostile values for every option of every measuring command never make dbperf panic.
//!
//! The options are read from each command's own `--help`, so a new option is covered the day
//! it is added. Each gets extreme, malformed and (from a fixed seed) random values; dbperf
//! must answer each with a clear error (exit 1 or 2) or with the target's refusal, never with
//! a panic (exit 101) or a hang. The target is a closed port on 127.0.0.1, so a value that is
//! accepted ends at the connection: no server is needed.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::dbperf;

/// Commands that take `--target` and measure or load something.
const COMMANDS: &[&[&str]] = &[
    &["sysbench", "oltp_read_write", "run"],
    &["sysbench", "oltp_point_select", "prepare"],
    &["tpcc", "run"],
    &["tpcc", "prepare"],
    &["pgbench", "tpcb-like"],
    &["linkbench", "request"],
    &["linkbench", "load"],
    &["tpch", "power"],
];

/// Values every option gets.
const NASTY: &[&str] = &[
    "0",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "1e30",
    "NaN",
    "inf",
    "abc",
    "",
    "6000000000000000h",
];

/// The long options of `args --help` that take a value (`--name <VALUE>`). `dbperf pgbench
/// --help` is pgbench's shape, so pgbench's full list is `dbperf help pgbench`'s.
fn value_options(args: &[&str]) -> Vec<String> {
    let out = match args.first() {
        Some(&"pgbench") => dbperf().args(["help", "pgbench"]).output().unwrap(),
        _ => dbperf().args(args).arg("--help").output().unwrap(),
    };
    assert!(
        out.status.success(),
        "{args:?} --help: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let help = String::from_utf8_lossy(&out.stdout);
    let mut options: Vec<String> = help
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            // `--name <V>` or `-n, --name <V>`
            let l = if l.starts_with("--") {
                l
            } else if l.starts_with('-') && l.get(2..4) == Some(", ") {
                &l[4..]
            } else {
                return None;
            };
            let rest = l.strip_prefix("--")?;
            let name = rest.split([' ', '=', '[']).next()?;
            rest[name.len()..]
                .trim_start()
                .starts_with('<')
                .then(|| format!("--{name}"))
        })
        .filter(|o| {
            ![
                "--target",
                "--target-file",
                "--results-dir",
                "--summary-json",
                "--answers",
                "--write-answers",
                "--metrics-addr",
            ]
            .contains(&o.as_str())
        })
        .collect();
    options.sort();
    options.dedup();
    options
}

/// A small deterministic generator (xorshift), so a failure names a reproducible value.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn value(&mut self) -> String {
        match self.next() % 5 {
            0 => self.next().to_string(),
            1 => format!("-{}", self.next() % 1_000_000),
            2 => format!("{}e{}", self.next() % 100, self.next() % 400),
            3 => format!("{}.{}", self.next() % 1000, self.next()),
            _ => format!(
                "{}{}",
                self.next() % 100_000,
                ["s", "ms", "m", "h", "x", "%"][(self.next() % 6) as usize]
            ),
        }
    }
}

#[test]
fn no_option_value_makes_a_command_panic() {
    let target = "mysql://sb:sb@127.0.0.1:1/sbtest";
    let mut rng = Rng(0x5eed_dbf1);
    let mut tried = 0;
    for args in COMMANDS {
        let options = value_options(args);
        assert!(options.len() >= 3, "{args:?}: options read from --help: {options:?}");
        for option in &options {
            let mut values: Vec<String> = NASTY.iter().map(|v| (*v).to_owned()).collect();
            values.extend((0..2).map(|_| rng.value()));
            for value in values {
                let started = Instant::now();
                let mut child = dbperf()
                    .args(*args)
                    .arg(format!("{option}={value}"))
                    .args(["--target", target])
                    .env("DBPERF_HOME", std::env::temp_dir().join("dbperf-cli-values"))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                let status = loop {
                    if let Some(status) = child.try_wait().unwrap() {
                        break status;
                    }
                    if started.elapsed() > Duration::from_secs(20) {
                        let _ = child.kill();
                        panic!("{args:?} {option}={value:?} still ran after 20 s");
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                let stderr = child.wait_with_output().map(|o| o.stderr).unwrap_or_default();
                let stderr = String::from_utf8_lossy(&stderr);
                assert!(
                    status.code() != Some(101) && !stderr.contains("panicked"),
                    "{args:?} {option}={value:?} panicked:\n{stderr}"
                );
                tried += 1;
            }
        }
    }
    eprintln!("{tried} invocations");
    assert!(tried > 500, "only {tried} invocations");
}

#[test]
fn a_run_command_names_a_bad_duration_with_its_range() {
    let out = Command::new(env!("CARGO_BIN_EXE_dbperf"))
        .args([
            "sysbench",
            "oltp_read_only",
            "run",
            "--time",
            "18446744073",
            "--target",
            "mysql://sb:sb@127.0.0.1:1/x",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--time"), "{stderr}");
}
