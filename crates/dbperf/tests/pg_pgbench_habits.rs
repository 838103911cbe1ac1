//! `dbperf pgbench` with pgbench's own habits (issue 41), on a real PostgreSQL 15: `-h -p -U
//! -d` (or the database last) connect as pgbench would, the password from `PGPASSWORD` and
//! never in the manifest or the output; `-i -n -S` mean what they mean there, and one command
//! line runs under both tools; the run records pgbench's defaults
//! (`-M simple`, one job: one event loop for the clients); the flags replace the parts of a
//! `--target`. Without a server: `--help` (and `-?`) is help, `-h` is the host, and `-h`
//! without a value, `-p 0` and `-h` with a sandbox target are clear errors.

use std::process::Command;

mod common;
use common::{dbperf, only_run_dir, read_json, run_ok};

#[path = "support/pg.rs"]
mod pg;
use pg::TempPg;

/// `dbperf pgbench ARGS` with no connection settings from the caller's environment but
/// `PGPASSWORD`.
fn pgbench(args: &[&str], password: &str) -> Command {
    let mut c = dbperf();
    c.arg("pgbench").args(args).env("PGPASSWORD", password);
    for var in [
        "DBPERF_TARGET",
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSFILE",
    ] {
        c.env_remove(var);
    }
    c
}

/// Runs and returns stderr; fails the test if the command succeeds or panics.
fn fails(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{cmd:?} succeeded");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn pgbench_flags_connect_and_pgbench_defaults_are_recorded() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    let password = pg.password();
    let port = pg.port().to_string();
    let login = ["-h", "127.0.0.1", "-p", port.as_str(), "-U", "sb", "-d", "sbtest"];
    // pgbench -i, with -n: no vacuum.
    run_ok(
        pgbench(&["-i", "-n", "-s", "1"], &password)
            .args(&login[..6])
            .arg("sbtest"),
    );
    assert_eq!(pg.psql("SELECT count(*) FROM pgbench_branches"), "1");

    let results = tempfile::tempdir().unwrap();
    let out = run_ok(
        pgbench(&["select-only"], &password)
            .args(login)
            .args(["-c", "2", "-T", "1", "--no-telemetry", "--results-dir"])
            .arg(results.path()),
    );
    let dir = only_run_dir(results.path());
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["workload"], "pgbench_select_only");
    assert!(summary["transactions"]["total"].as_i64().unwrap() > 20, "{summary}");
    let manifest_text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest_text).unwrap();
    let o = &manifest["workload"]["options"];
    assert_eq!(o["protocol"], "simple", "pgbench's default -M: {o}");
    assert_eq!(o["jobs"], 1, "pgbench's default -j: {o}");
    assert_eq!(o["client_threads"], 1, "{o}");
    assert_eq!(
        o["client_io"], "async",
        "one job serves both clients on an event loop: {o}"
    );
    assert_eq!(o["clients"], 2, "{o}");
    for text in [
        manifest_text.as_str(),
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
    ] {
        assert!(!text.contains(&password), "the password is never written");
    }

    // A pgbench command line, word for word: -n -S, -j = -c (each client its own thread), the
    // database last. The results directory comes from DBPERF_RESULTS, so Debian's pgbench
    // runs the same words.
    let words = [
        "-n",
        "-S",
        "-c",
        "2",
        "-j",
        "2",
        "-T",
        "1",
        "-M",
        "prepared",
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-U",
        "sb",
        "sbtest",
    ];
    let results = tempfile::tempdir().unwrap();
    run_ok(pgbench(&words, &password).env("DBPERF_RESULTS", results.path()));
    if common::program_available("pgbench", "postgresql-15") {
        let out = Command::new("pgbench")
            .args(words)
            .env("PGPASSWORD", &password)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let dir = only_run_dir(results.path());
    assert_eq!(read_json(&dir.join("summary.json"))["workload"], "pgbench_select_only");
    let manifest = read_json(&dir.join("manifest.json"));
    let o = &manifest["workload"]["options"];
    assert_eq!(
        (&o["protocol"], &o["jobs"], &o["client_io"]),
        (&"prepared".into(), &2.into(), &"blocking".into()),
        "{o}"
    );

    // Flags replace the parts of a --target: its port and database are wrong here.
    let results = tempfile::tempdir().unwrap();
    run_ok(
        pgbench(&["select-only"], &password)
            .args([
                "--target",
                "postgres://sb@127.0.0.1:1/nowhere",
                "-p",
                &port,
                "-d",
                "sbtest",
            ])
            .args(["-T", "1", "--no-telemetry", "--results-dir"])
            .arg(results.path()),
    );

    // A wrong password fails at the server, and the error does not show it.
    let err = fails({
        let mut c = pgbench(&["select-only"], "not-the-password");
        c.args(login).args(["-T", "1", "--no-telemetry", "--results-dir"]);
        c.arg(results.path());
        c
    });
    assert!(err.contains("sb"), "{err}");
    assert!(!err.contains("not-the-password"), "{err}");
}

#[test]
fn help_is_long_only_and_h_is_the_host() {
    for help in ["--help", "-?"] {
        let out = run_ok(dbperf().args(["pgbench", help]));
        let text = String::from_utf8_lossy(&out.stdout);
        // pgbench's shape of help (its section titles), with dbperf's options.
        assert!(text.contains("Usage:\n  dbperf pgbench [OPTION]... [DBNAME]"), "{text}");
        assert!(text.contains("-h, --host=HOSTNAME"), "{text}");
        assert!(text.contains("-U, --username=USERNAME"), "{text}");
        assert!(text.contains("(default: simple)"), "{text}");
        assert!(text.contains("Common options:"), "{text}");
    }
    // Every option in detail, from clap.
    let out = run_ok(dbperf().args(["help", "pgbench"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--client-impl"));
    let err = fails(pgbench(&["-h"], ""));
    assert!(err.contains("option requires an argument -- 'h'"), "{err}");
    let err = fails(pgbench(&["select-only", "-h", "127.0.0.1", "-p", "0"], ""));
    assert!(err.contains("--port") && err.contains("0"), "{err}");
    let err = fails(pgbench(
        &["select-only", "--target", "sandbox:nope", "-h", "127.0.0.1"],
        "",
    ));
    assert!(err.contains("-h and --target sandbox:nope"), "{err}");
    // A word that is no command is the database, as pgbench's only word.
    let err = fails(pgbench(&["mydb", "-h", "127.0.0.1", "-p", "1"], ""));
    assert!(err.contains("(database mydb)"), "{err}");
}
