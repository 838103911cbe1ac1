//! `dbperf lua` gives scripts sysbench 1.0.20's Lua API down to its edges: the scripts of
//! sysbench's own API tests (`tests/t/api_sql_mysql.t`, `api_histogram.t`, `api_legacy_sql.t`,
//! `api_legacy_rand.t`) run on a sandboxed MariaDB, and their output holds the lines sysbench's
//! test expects, in order: error messages and return values of misused calls, the driver's log
//! lines (`FATAL: ...`, `ALERT: ...`, a repeat counted), a failing connect the script catches,
//! a script's own histogram, and the sysbench 0.5 API (`db_query`, `db_prepare`, `sb_rand`).
//! dbperf's own report may surround the script's lines; nothing may come between them.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{dbperf, run_ok, sandbox};

/// `dbperf lua SCRIPT ARGS` on `url`, results in `results`, without telemetry.
fn lua(script: &Path, url: &str, results: &Path, args: &[&str]) -> Command {
    let mut c = dbperf();
    c.arg("lua")
        .arg(script)
        .args(args)
        .args(["--target", url, "--no-telemetry", "--verbosity=1"]);
    c.arg("--results-dir").arg(results);
    c
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `expected` appears in `text` as consecutive lines; `*` in an expected line matches any run
/// of characters (cram's glob).
fn assert_lines(text: &str, expected: &[&str]) {
    let lines: Vec<&str> = text.lines().collect();
    let found = (0..lines.len()).any(|start| {
        start + expected.len() <= lines.len() && expected.iter().zip(&lines[start..]).all(|(e, l)| glob(e, l))
    });
    assert!(
        found,
        "expected these lines together:\n{}\n--- in:\n{text}",
        expected.join("\n")
    );
}

fn glob(pattern: &str, line: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, p) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(p);
        }
        match rest.find(p) {
            Some(at) => rest = &rest[at + p.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The first script of sysbench's api_sql_common.sh (its `inspect` calls left out: dbperf has
/// no copy of that module).
const API_SQL: &str = r#"
function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
end

function event()
  local e, m
  print("drv:name() = " .. drv:name())
  e, m = pcall(sysbench.sql.driver, "non-existing")
  print(m)

  con:query("DROP TABLE IF EXISTS t")
  con:query("CREATE TABLE t(a INT)")
  con:bulk_insert_init("INSERT INTO t VALUES")
  for i = 1,100 do
    con:bulk_insert_next(string.format("(%d)", i))
  end
  con:bulk_insert_done()
  print(con:query_row("SELECT COUNT(DISTINCT a) FROM t"))
  print('--')
  local rs = con:query("SELECT * FROM t ORDER BY a")
  print(rs.nrows)
  con:query("ALTER TABLE t ADD COLUMN b CHAR(10)")

  e, m = pcall(con.prepare, con, "SELECT * FROM nonexisting")
  print(m)
  print('--')

  local stmt = con:prepare("UPDATE t SET a = a + ?, b = ?")
  local a = stmt:bind_create(sysbench.sql.type.INT)
  local b = stmt:bind_create(sysbench.sql.type.CHAR, 10)

  print(a)
  print(b)

  e, m = pcall(stmt.bind_create, stmt, sysbench.sql.type.DATE)
  print(m)

  print(stmt:bind_param())

  stmt:bind_param(a, b)
  a:set(100)
  rs1 = stmt:execute()
  print(rs1)
  a:set(200)
  b:set("01234567890")
  rs2 = stmt:execute()
  print(rs2)

  e, m = pcall(rs2.free, rs)
  print(m)

  e, m = pcall(rs1.free, rs)
  print(m)

  stmt:close()

  print('--')
  con:disconnect()
  e, m = pcall(con.query, con, "SELECT 1")
  print(m)

  con:disconnect()

  print('--')
  con = drv:connect()
  rs = con:query("SELECT MIN(a), MAX(a), MIN(b), MAX(b) FROM t")
  print(rs.nfields)
  for i = 1, rs.nrows do
     print(string.format("%s %s %s %s", unpack(rs:fetch_row(), 1, rs.nfields)))
  end
  con:query("DROP TABLE t")
  print('--')
end
"#;

/// sysbench's error hooks test (api_sql_common.sh), the error descriptor printed field by
/// field in place of `inspect`.
const ERROR_HOOKS: &str = r#"
function sysbench.hooks.sql_error_ignorable(e)
  print("Got an error descriptor:")
  print(e.query, e.sql_errno, e.sql_state, e.sql_errmsg, tostring(e.connection))
end

function event()
  local drv = sysbench.sql.driver()
  local con = drv:connect()
  local queries = {
    "CREATE TABLE t(a CHAR(1) NOT NULL)",
    "INSERT INTO t VALUES (1)",
    "INSERT INTO t VALUES (NULL)",
    [[INSERT INTO t VALUES ('test')]],
    "DROP TABLE t",
    "DROP TABLE t"
  }
  print('--')
  con:query("DROP TABLE IF EXISTS t")
  con:query("SET sql_mode='STRICT_TRANS_TABLES'")
  for i = 1, #queries do
    local e, m = pcall(function () con:query(queries[i]) end)
    if not e then print(m) end
  end
  print('--')
end
"#;

#[test]
fn sql_api_misuse_gets_sysbench_s_messages_and_return_values() {
    let sb = sandbox();
    let url = sb.url();
    let dir = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let script = dir.path().join("api_sql.lua");
    std::fs::write(&script, API_SQL).unwrap();
    // Closed loop (statements complete inside the Lua call) and open loop (they yield).
    for extra in [&[][..], &["--rate=100"][..]] {
        let mut args = vec!["run", "--events=1"];
        args.extend_from_slice(extra);
        let out = stdout(&run_ok(&mut lua(&script, &url, results.path(), &args)));
        assert_lines(
            &out,
            &[
                "drv:name() = mysql",
                "FATAL: invalid database driver name: 'non-existing'",
                "failed to initialize the DB driver",
                "100",
                "--",
                "100",
                "FATAL: mysql_stmt_prepare() failed",
                "FATAL: MySQL error: 1146 \"Table 'sbtest.nonexisting' doesn't exist\"",
                "SQL API error",
                "--",
                "<sql_param>",
                "<sql_param>",
                "Unsupported argument type: 8",
                "nil",
                "<sql_result>",
                "<sql_result>",
                "ALERT: attempt to free an invalid result set",
                "db_free_results() failed",
                "db_free_results() failed",
                "--",
                "(last message repeated 1 times)",
                "ALERT: attempt to use an already closed connection",
                "*/api_sql.lua:*: SQL API error",
                "ALERT: attempt to close an already closed connection",
                "--",
                "4",
                "301 400 0123456789 0123456789",
                "--",
            ],
        );
    }

    std::fs::write(&script, ERROR_HOOKS).unwrap();
    let out = stdout(&run_ok(&mut lua(&script, &url, results.path(), &["run", "--events=1"])));
    assert_lines(
        &out,
        &[
            "--",
            "FATAL: mysql_drv_query() returned error 1048 (Column 'a' cannot be null) for query 'INSERT INTO t VALUES (NULL)'",
            "Got an error descriptor:",
            "INSERT INTO t VALUES (NULL)\t1048\t23000\tColumn 'a' cannot be null\t<sql_connection>",
            "*/api_sql.lua:*: SQL error, errno = 1048, state = '23000': Column 'a' cannot be null",
            "FATAL: mysql_drv_query() returned error 1406 (Data too long for column 'a' at row 1) for query 'INSERT INTO t VALUES ('test')'",
            "Got an error descriptor:",
            "INSERT INTO t VALUES ('test')\t1406\t22001\tData too long for column 'a' at row 1\t<sql_connection>",
            "*/api_sql.lua:*: SQL error, errno = 1406, state = '22001': Data too long for column 'a' at row 1",
            "FATAL: mysql_drv_query() returned error 1051 (Unknown table '*t') for query 'DROP TABLE t'",
            "Got an error descriptor:",
            "DROP TABLE t\t1051\t42S02\tUnknown table 'sbtest.t'\t<sql_connection>",
            "*/api_sql.lua:*: SQL error, errno = 1051, state = '42S02': Unknown table '*t'",
            "--",
        ],
    );
}

/// Connections open when the script asks, so it can catch a failing one; the bulk API misused,
/// an empty `query_row` and `fetch_row` to the end, as sysbench's api_sql tests use them.
const LAZY: &str = r#"
function fail()
  local drv = sysbench.sql.driver()
  local e, m = pcall(drv.connect, drv)
  print(m)
end

function edges()
  local c = sysbench.sql.driver():connect()
  c:query("DROP TABLE IF EXISTS t1")
  c:query("CREATE TABLE t1(a INT)")
  c:bulk_insert_init("INSERT INTO t1 VALUES")
  c:bulk_insert_next("(1)")
  c:bulk_insert_done()
  local e, m = pcall(function () c:bulk_insert_next("(2)") end)
  print(m)
  c:bulk_insert_done()
  c:query("DELETE FROM t1")
  print(c:query_row("SELECT * FROM t1"))
  c:query("DROP TABLE t1")
  local rows = c:query("select 1 union select 2")
  local r = rows:fetch_row()
  while r do
    print(r[1])
    r = rows:fetch_row()
  end
end

sysbench.cmdline.commands = { fail = { fail }, edges = { edges } }
"#;

#[test]
fn connections_open_when_the_script_asks_and_a_failing_one_can_be_caught() {
    let sb = sandbox();
    let url = sb.url();
    let dir = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let script = dir.path().join("api_sql.lua");
    std::fs::write(&script, LAZY).unwrap();
    let out = run_ok(dbperf().arg("lua").arg(&script).args([
        "fail",
        "--mysql-host=non-existing.invalid",
        "--mysql-port=3306",
    ]));
    assert_lines(
        &stdout(&out),
        &[
            "FATAL: unable to connect to MySQL server on host 'non-existing.invalid', port 3306, aborting...",
            "FATAL: error *",
            "connection creation failed",
        ],
    );
    // As a command, and at the script's top level with no command (sysbench's api_sql tests):
    // the top level runs outside any event loop, its statements completing inside the calls.
    for (text, args) in [
        (LAZY.to_string(), &["edges"][..]),
        (format!("{LAZY}\nedges()\n"), &[][..]),
    ] {
        std::fs::write(&script, text).unwrap();
        let out = stdout(&run_ok(&mut lua(&script, &url, results.path(), args)));
        assert_lines(
            &out,
            &[
                "ALERT: attempt to call bulk_insert_next() before bulk_insert_init()",
                "*/api_sql.lua:*: db_bulk_insert_next() failed",
                "nil",
                "1",
                "2",
            ],
        );
    }
}

#[test]
fn a_script_s_own_histogram_prints_as_sysbench_s() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hist.lua");
    std::fs::write(
        &script,
        "function draw()\n  h = sysbench.histogram.new(1000, 1, 10)\n  for _, v in ipairs({1, 2, 0, 10, 100, 5.001}) do\n    h:update(v)\n  end\n  h:print()\nend\nsysbench.cmdline.commands = { draw = { draw } }\n",
    )
    .unwrap();
    let sb = sandbox();
    let results = tempfile::tempdir().unwrap();
    let out = stdout(&run_ok(&mut lua(&script, &sb.url(), results.path(), &["draw"])));
    assert_lines(
        &out,
        &[
            "       value  ------------- distribution ------------- count",
            "       1.000 |**************************************** 2",
            "       2.001 |********************                     1",
            "       4.997 |********************                     1",
            "      10.000 |**************************************** 2",
        ],
    );
}

/// sysbench's api_legacy_sql.t and api_legacy_rand.t scripts: the 0.5 API.
const LEGACY: &str = r#"
function event(thread_id)
  db_query("CREATE TABLE t(a INT)")

  db_bulk_insert_init("INSERT INTO t VALUES")
  for i = 1,100 do
    db_bulk_insert_next(string.format("(%d)", i))
  end
  db_bulk_insert_done()

  db_connect()
  db_query("SELECT 1")
  db_disconnect()
  db_query("SELECT 1")
  db_connect()

  local stmt = db_prepare("UPDATE t SET a = a + ?")
  db_bind_param(stmt, {100})
  rs = db_execute(stmt)
  db_store_results(rs)
  db_free_results(rs)
  db_close(stmt)

  print("DB_ERROR_NONE = " .. DB_ERROR_NONE)
  print("DB_ERROR_RESTART_TRANSACTION = " .. DB_ERROR_RESTART_TRANSACTION)
  print("DB_ERROR_FAILED = " .. DB_ERROR_FAILED)
  print("sb_rand(0, 9) = " .. sb_rand(0, 9))
  print("sb_rand_uniq(0, 4294967295) = " .. sb_rand_uniq(0, 4294967295))
  print("sb_rnd() = " .. sb_rnd())
  print([[sb_rand_str("abc-###-@@@-xyz") = ]] .. sb_rand_str("abc-###-@@@-xyz"))
  print("sb_rand_uniform(0, 9) = " .. sb_rand_uniform(0, 9))
  print("sb_rand_gaussian(0, 9) = " .. sb_rand_gaussian(0, 9))
  print("sb_rand_special(0, 9) = " .. sb_rand_special(0, 9))
  print("test = " .. test)
  print("db_driver = " .. db_driver)
end
"#;

#[test]
fn sysbench_0_5_scripts_run_on_the_legacy_api() {
    let sb = sandbox();
    let url = sb.url();
    let dir = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let script = dir.path().join("api_legacy_sql.lua");
    std::fs::write(&script, LEGACY).unwrap();
    let out = stdout(&run_ok(&mut lua(&script, &url, results.path(), &["run", "--events=1"])));
    assert_lines(
        &out,
        &[
            "DB_ERROR_NONE = 0",
            "DB_ERROR_RESTART_TRANSACTION = 1",
            "DB_ERROR_FAILED = 2",
            "sb_rand(0, 9) = *",
            "sb_rand_uniq(0, 4294967295) = *",
            "sb_rnd() = *",
            "sb_rand_str(\"abc-###-@@@-xyz\") = abc-*-*-xyz",
            "sb_rand_uniform(0, 9) = *",
            "sb_rand_gaussian(0, 9) = *",
            "sb_rand_special(0, 9) = *",
            "test = */api_legacy_sql.lua",
            "db_driver = mysql",
        ],
    );
    let sql = |q: &str| {
        let out = Command::new("mysql")
            .arg(format!("--defaults-file={}", sb.admin_cnf().display()))
            .args(["-N", "-B", "sbtest", "-e", q])
            .output()
            .expect("mysql client");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // As api_legacy_sql.t checks: 100 distinct rows, each moved up by the bound 100.
    assert_eq!(sql("SELECT COUNT(DISTINCT a), MIN(a), MAX(a) FROM t"), "100\t101\t200");
}

/// A 0.5 script that reads sysbench's deprecated aliases as globals, as old scripts do to
/// split their threads (`if thread_id < num_threads - 1`).
const ALIASES: &str = r#"
function event(thread_id)
  local readers = thread_id < num_threads - 1 and "some" or "none"
  print(string.format("num_threads = %d, max_requests = %d, max_time = %d, tx_rate = %d, readers: %s",
                      num_threads, max_requests, max_time, tx_rate, readers))
  print("sysbench.opt.num_threads = " .. sysbench.opt.num_threads)
end
"#;

#[test]
fn a_0_5_script_finds_the_deprecated_aliases_with_sysbench_s_values() {
    let sb = sandbox();
    let dir = tempfile::tempdir().unwrap();
    let results = tempfile::tempdir().unwrap();
    let script = dir.path().join("aliases.lua");
    std::fs::write(&script, ALIASES).unwrap();
    let args = ["run", "--threads=2", "--events=2"];
    let out = stdout(&run_ok(&mut lua(&script, &sb.url(), results.path(), &args)));
    // sysbench 1.0.20 with --threads=2: the aliases keep their own defaults (--num-threads is
    // 1 unless given), so every thread takes the "none" branch.
    for expected in [
        "num_threads = 1, max_requests = 0, max_time = 0, tx_rate = 0, readers: none",
        "sysbench.opt.num_threads = 1",
    ] {
        assert_eq!(
            out.lines().filter(|l| *l == expected).count(),
            2,
            "{expected:?} twice in:\n{out}"
        );
    }
}
