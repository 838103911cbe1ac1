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

/// A run of `script` with `opts` by `pgbench` (`reference`) or dbperf: status, stdout, stderr.
fn run_script(pg: &TempPg, reference: bool, script: &Path, opts: &[&str]) -> (Option<i32>, String, String) {
    let out = if reference {
        Command::new("pgbench")
            .args(["-h", "127.0.0.1", "-p", &pg.port().to_string(), "-U", "sb"])
            .args(opts)
            .arg("-f")
            .arg(script)
            .arg("sbtest")
            .env("PGPASSWORD", pg.password())
            .output()
            .expect("pgbench runs")
    } else {
        let results = tempfile::tempdir().unwrap();
        dbperf()
            .args(["pgbench", "--target", &pg.url(), "--no-telemetry"])
            .args(opts)
            .arg("-f")
            .arg(script)
            .arg("--results-dir")
            .arg(results.path())
            .output()
            .expect("dbperf runs")
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Errors a client meets while it runs, beside `/usr/bin/pgbench` on the same server: the
/// same status (2 after the report, 1 for a script pgbench refuses before running), the same
/// count of processed transactions, and in stderr the words 001_pgbench_with_server.pl reads
/// (server errors as libpq prints them, with their DETAIL and CONTEXT lines; parameters sent
/// as text, so the server reports a value it cannot convert).
#[test]
fn run_time_and_server_errors_as_pgbenchs() {
    if !pg::available() || !common::program_available("pgbench", "postgresql-15") {
        return;
    }
    let pg = TempPg::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let many = format!("\\set i 0\nSELECT LEAST({});\n", vec![":i"; 256].join(", "));
    // name, script, options, status, processed (in stdout), words (in stderr)
    type Case<'a> = (&'a str, &'a str, &'a [&'a str], i32, Option<&'a str>, &'a [&'a str]);
    let cases: &[Case] = &[
        ("twice", "\\startpipeline\n\\startpipeline\n", &["-M", "extended"], 2, Some("processed: 0/1"), &["already in pipeline mode"]),
        ("unbegun", "\\endpipeline\n", &["-M", "extended"], 2, Some("processed: 0/1"), &["not in pipeline mode"]),
        ("setname", "\\set . 1\n", &[], 2, Some("processed: 0/1"), &["invalid variable name"]),
        ("nonselect", "DROP TABLE IF EXISTS no_such_table \\gset\n", &[], 2, Some("processed: 0/1"), &["expected one row, got 0"]),
        ("badname", "SELECT 1 AS \"bad name!\" \\gset\n", &[], 2, Some("processed: 0/1"), &["error storing into variable bad name!"]),
        // Sent with its ';', as pgbench sends it: the server's words are the same, and its
        // error position is shown as libpq shows it.
        ("syntax", "SELECT 1 + ;\n", &["-M", "prepared"], 2, Some("processed: 0/1"), &["ERROR:  syntax error at or near \";\"\nLINE 1: SELECT 1 + ;\n                   ^\n", "prepared statement"]),
        ("syntax_simple", "SELECT 1 + ;\n", &[], 2, Some("processed: 0/1"), &["ERROR:  syntax error at or near \";\"", "\nLINE 1: SELECT 1 + ;\n                   ^\n"]),
        ("position", "select 1,\n  nosuchcol;\n", &["-M", "extended"], 2, Some("processed: 0/1"), &["ERROR:  column \"nosuchcol\" does not exist", "\nLINE 2:   nosuchcol;\n          ^\n"]),
        (
            "json",
            "select '{ invalid ' as value \\gset\nselect $$'Valame' dijo; 'no'$$ as long \\gset\nselect column1::jsonb from (values (:value), (:long)) as q;\n",
            &["-M", "prepared"],
            2,
            Some("processed: 0/1"),
            &["ERROR:  invalid input syntax for type json", "DETAIL:  Token \"invalid\" is invalid.", "CONTEXT:  JSON data, line 1: { invalid..."],
        ),
        (
            "smallint",
            "select 42 as value1, '1a' as value2 \\gset\nselect :value1::smallint, :value2::smallint;\n",
            &["-M", "prepared"],
            2,
            Some("processed: 0/1"),
            &["ERROR:  invalid input syntax for type smallint: \"1a\""],
        ),
        ("open", "BEGIN;SELECT 1;\n", &["-t", "10"], 2, Some("processed: 1/10"), &["end of script reached without completing the last transaction"]),
        ("many", &many, &["-M", "prepared"], 1, None, &["statement has too many arguments (maximum is 255)"]),
    ];
    for (name, text, opts, status, processed, words) in cases {
        let script = dir.path().join(name);
        std::fs::write(&script, text).unwrap();
        let mut args = vec!["-n"];
        if !opts.contains(&"-t") {
            args.extend(["-t", "1"]);
        }
        args.extend(opts.iter());
        for reference in [true, false] {
            let who = if reference { "pgbench" } else { "dbperf" };
            let (code, stdout, stderr) = run_script(&pg, reference, &script, &args);
            assert_eq!(code, Some(*status), "{who} {name}: {stdout}{stderr}");
            if let Some(p) = processed {
                assert!(stdout.contains(p), "{who} {name}: {stdout}");
            }
            for w in *words {
                assert!(stderr.contains(w), "{who} {name}: {w:?} not in {stderr}");
            }
        }
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

/// `--debug`'s lines for the SQL a client sends, beside pgbench's: the text in simple mode,
/// the text with `$N` parameters in extended mode, and under `-M prepared` the statement's
/// name (`P_N`, numbered over the scripts' SQL commands) after a `preparing P_N` line.
#[test]
fn debug_says_what_is_sent_as_pgbench_says_it() {
    if !pg::available() || !common::program_available("pgbench", "postgresql-15") {
        return;
    }
    let pg = TempPg::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sent.sql");
    std::fs::write(&script, "\\set a 1\nselect :a, :client_id;\nselect 2 as x;\n").unwrap();
    let sent = |stderr: &str| -> Vec<String> {
        stderr
            .lines()
            .filter(|l| l.starts_with("pgbench: client ") && (l.contains(" sending ") || l.contains(" preparing ")))
            .map(str::to_string)
            .collect()
    };
    for mode in ["simple", "extended", "prepared"] {
        let args = ["-n", "-t", "1", "-c", "1", "-M", mode, "--debug"];
        let (code, _, theirs) = run_script(&pg, true, &script, &args);
        assert_eq!(code, Some(0), "pgbench -M {mode}: {theirs}");
        let (code, _, mine) = run_script(&pg, false, &script, &args);
        assert_eq!(code, Some(0), "dbperf -M {mode}: {mine}");
        let (mut theirs, mut mine) = (sent(&theirs), sent(&mine));
        assert!(!theirs.is_empty(), "{mode}");
        if mode == "prepared" {
            // pgbench prepares each statement when it first reaches it, dbperf all of them
            // when the connection opens: the same lines, in another order.
            theirs.sort();
            mine.sort();
        }
        assert_eq!(mine, theirs, "-M {mode}");
    }
}

/// A server error's position is shown under it as libpq shows it (`LINE N: ...` and a caret),
/// by either client, in simple and prepared mode: the same two lines as pgbench's.
#[test]
fn error_positions_are_shown_as_libpq_shows_them_by_either_client() {
    if !pg::available() || !common::program_available("pgbench", "postgresql-15") {
        return;
    }
    let pg = TempPg::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("position.sql");
    std::fs::write(&script, "select 1,\n  nosuchcol;\n").unwrap();
    let position = |stderr: &str| -> Vec<String> {
        let lines: Vec<&str> = stderr.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("LINE "))
            .unwrap_or_else(|| panic!("{stderr}"));
        lines[at..=at + 1].iter().map(|l| l.to_string()).collect()
    };
    for mode in ["simple", "prepared"] {
        let (code, _, theirs) = run_script(&pg, true, &script, &["-n", "-t", "1", "-M", mode]);
        assert_eq!(code, Some(2), "pgbench -M {mode}: {theirs}");
        let theirs = position(&theirs);
        assert_eq!(theirs, ["LINE 2:   nosuchcol;", "          ^"]);
        for client in ["wire", "tokio-postgres"] {
            let args = ["-n", "-t", "1", "-M", mode, "--client-impl", client];
            let (code, _, mine) = run_script(&pg, false, &script, &args);
            assert_eq!(code, Some(2), "dbperf -M {mode} {client}: {mine}");
            assert_eq!(position(&mine), theirs, "-M {mode} --client-impl {client}");
        }
    }
}

/// A compound command (`\;`) in simple mode is one query, as pgbench sends it: one implicit
/// transaction, so a failing part takes the others' changes back with it. Beside pgbench:
/// the same exit, the same rows left; and a compound that succeeds writes each part's rows.
#[test]
fn a_compound_command_is_one_query_in_simple_mode_as_pgbenchs() {
    if !pg::available() || !common::program_available("pgbench", "postgresql-15") {
        return;
    }
    let pg = TempPg::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    pg.psql("CREATE TABLE compound (v int); GRANT ALL ON compound TO sb");
    let rows = || pg.psql("SELECT count(*) FROM compound");
    for (text, want_status, want_rows) in [
        ("INSERT INTO compound VALUES (1) \\; SELECT 1/0;\n", Some(2), "0"),
        (
            "INSERT INTO compound VALUES (1) \\; INSERT INTO compound VALUES (2);\n",
            Some(0),
            "4",
        ),
    ] {
        let script = dir.path().join("compound.sql");
        std::fs::write(&script, text).unwrap();
        for reference in [true, false] {
            pg.psql("TRUNCATE compound");
            let (status, out, err) = run_script(&pg, reference, &script, &["-n", "-t", "2", "-M", "simple"]);
            let who = if reference { "pgbench" } else { "dbperf" };
            assert_eq!(status, want_status, "{who} {text:?}: {out}{err}");
            assert_eq!(rows(), want_rows, "{who} {text:?}: {out}{err}");
        }
    }
}
