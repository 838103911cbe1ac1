//! `dbperf pgbench -f` evaluates pgbench's script language as pgbench 15 does, checked
//! against `/usr/bin/pgbench` on the same PostgreSQL 15 sandbox: the expression script of
//! PostgreSQL's own pgbench test (`001_pgbench_with_server.pl`, "pgbench expressions", in
//! `data/pgbench_lang/expressions.sql`) prints the same `debug()` lines byte for byte, and a
//! script of the random functions, `hash` and `permute` run with the same `--random-seed`
//! draws the same values, and says the seed as pgbench does. A script whose SQL lacks the ';'
//! before a meta-command, and one with a block comment alone before one, run as pgbench runs
//! them (public scripts are written so).

mod common;
use common::dbperf;

#[path = "support/pg.rs"]
mod pg;
use pg::TempPg;

use std::path::Path;
use std::process::Command;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/pgbench_lang");

/// The `debug(...)` lines a run printed on stderr, sorted (clients interleave), and the line
/// saying the seed.
fn debug_lines(stderr: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.starts_with("debug(") || l.starts_with("pgbench: setting random seed to "))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

fn reference(pg: &TempPg, script: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("pgbench")
        .args(["-n", "-h", "127.0.0.1", "-p", &pg.port().to_string(), "-U", "sb"])
        .args(args)
        .arg("-f")
        .arg(script)
        .arg("sbtest")
        .env("PGPASSWORD", pg.password())
        .output()
        .expect("pgbench runs");
    assert!(
        out.status.success(),
        "pgbench: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    debug_lines(&out.stderr)
}

fn ours(pg: &TempPg, script: &Path, args: &[&str]) -> Vec<String> {
    let results = tempfile::tempdir().unwrap();
    let out = dbperf()
        .args(["pgbench", "--target", &pg.url(), "--no-telemetry", "-n"])
        .args(args)
        .arg("-f")
        .arg(script)
        .arg("--results-dir")
        .arg(results.path())
        .output()
        .expect("dbperf runs");
    assert!(out.status.success(), "dbperf: {}", String::from_utf8_lossy(&out.stderr));
    debug_lines(&out.stderr)
}

#[test]
fn scripts_print_and_draw_what_pgbench_prints_and_draws() {
    if !pg::available() || !common::program_available("pgbench", "postgresql-15") {
        return;
    }
    let pg = TempPg::start(&[]);
    let expressions = Path::new(DATA).join("expressions.sql");
    let args = [
        "--random-seed=5432",
        "-t",
        "1",
        "-Dfoo=-10.1",
        "-Dbla=false",
        "-Di=+3",
        "-Dn=null",
        "-Dt=t",
        "-Df=of",
        "-Dd=1.0",
    ];
    let want = reference(&pg, &expressions, &args);
    assert!(want.len() > 70, "{want:?}");
    assert_eq!(ours(&pg, &expressions, &args), want);

    let random = Path::new(DATA).join("random.sql");
    // One client: dbperf's -t counts the run's transactions, pgbench's each client's, so
    // with several clients the two share the draws out differently (the unit tests of
    // lang/exec.rs check three clients' streams against pgbench's values).
    for seed in ["--random-seed=7", "--random-seed=42"] {
        let args = [seed, "-c", "1", "-t", "3"];
        let want = reference(&pg, &random, &args);
        assert_eq!(want.len(), 10, "{want:?}");
        assert_eq!(ours(&pg, &random, &args), want, "{args:?}");
    }
}

/// SQL without its ';' before a meta-command, and a block comment alone before one.
const SEMICOLONLESS: &str = "/* a note\n   on two lines */\n-- and a line\n\\set v 7\n\
                             INSERT INTO semicolonless VALUES (:v)\n\\set w :v + 1\n\
                             INSERT INTO semicolonless VALUES (:w);\n";

#[test]
fn sql_without_a_semicolon_before_a_meta_command_runs_as_pgbench_runs_it() {
    if !pg::available() || !common::program_available("pgbench", "postgresql-15") {
        return;
    }
    let pg = TempPg::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("semicolonless.sql");
    std::fs::write(&script, SEMICOLONLESS).unwrap();
    let rows = || pg.psql("SELECT count(*), sum(v) FROM semicolonless");
    pg.psql("CREATE TABLE semicolonless (v int); GRANT ALL ON semicolonless TO sb");
    reference(&pg, &script, &["-t", "3"]);
    let want = rows();
    assert_eq!(want, "6\t45", "pgbench's rows");
    pg.psql("TRUNCATE semicolonless");
    ours(&pg, &script, &["-t", "3"]);
    assert_eq!(rows(), want);
}
