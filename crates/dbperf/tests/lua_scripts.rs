//! `dbperf lua` runs sysbench's own Lua scripts unchanged: every script sysbench ships in
//! /usr/share/sysbench is prepared, run for a fixed number of events and cleaned up by dbperf
//! on a sandboxed MariaDB and on PostgreSQL 15, and the statements its events sent (the
//! server's general log, `pg_stat_statements`) are the same, verb by verb, as sysbench 1.0's
//! own run of the same script with the same options. A script of our own checks what the
//! shipped ones do not use (query_row, fetch_row, custom parallel commands, an ignorable
//! error restarting the event through before_restart_event, event() ending its thread, report
//! hooks); broken
//! scripts fail naming file:line, never with a panic.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{dbperf, only_run_dir, program_available, read_json, run_ok, sandbox};

#[path = "support/pg.rs"]
mod pg;

const SCRIPTS_DIR: &str = "/usr/share/sysbench";

/// The scripts sysbench ships (oltp_common.lua is their shared module, not a test).
fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(SCRIPTS_DIR)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "lua") && !p.ends_with("oltp_common.lua"));
    v.sort();
    v
}

/// The verb of a statement that touches the benchmark's tables (or BEGIN/COMMIT), upper case.
fn event_verb(sql: &str) -> Option<String> {
    let verb = sql.split_whitespace().next()?.to_ascii_uppercase();
    let lower = sql.to_ascii_lowercase();
    match verb.as_str() {
        "BEGIN" | "COMMIT" => Some(verb),
        _ if lower.contains("sbtest") && !lower.contains("information_schema") => Some(verb),
        _ => None,
    }
}

/// Verb counts of the statements in a MariaDB general log (`Query` and `Execute` records; a
/// statement's later lines continue its record).
fn general_log_verbs(log: &Path) -> BTreeMap<String, u64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    // Each record: "[YYMMDD HH:MM:SS]\tID Command\tArgument"; other lines continue it.
    let mut records: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let mut rest = line.trim_start();
        if rest.len() > 16 && rest.as_bytes()[6] == b' ' && rest[..6].bytes().all(|b| b.is_ascii_digit()) {
            rest = rest[15..].trim_start();
        }
        let mut parts = rest.splitn(2, char::is_whitespace);
        let record = match (parts.next(), parts.next()) {
            (Some(id), Some(after)) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) => {
                let after = after.trim_start();
                let command = after.split(['\t', ' ']).next().unwrap_or("").to_string();
                let arg = after[command.len()..].trim().to_string();
                Some((command, arg))
            }
            _ => None,
        };
        match (record, records.last_mut()) {
            (Some(r), _) => records.push(r),
            (None, Some(last)) => {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
            (None, None) => {}
        }
    }
    let mut out = BTreeMap::new();
    for (command, sql) in records {
        if command == "Query" || command == "Execute" {
            if let Some(v) = event_verb(&sql) {
                *out.entry(v).or_insert(0) += 1;
            }
        }
    }
    out
}

struct Maria {
    sb: dbperf::server::testing::TempSandbox,
    log: PathBuf,
}

impl Maria {
    fn sql(&self, q: &str) -> String {
        let out = Command::new("mysql")
            .arg(format!("--defaults-file={}", self.sb.admin_cnf().display()))
            .args(["-N", "-B", "-e", q])
            .output()
            .expect("mysql client");
        assert!(out.status.success(), "{q}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn truncate_log(&self) {
        self.sql("FLUSH GENERAL LOGS");
        std::fs::write(&self.log, "").unwrap();
        self.sql("FLUSH GENERAL LOGS");
    }
}

fn sysbench_mysql_args(url: &str) -> Vec<String> {
    let u = url::Url::parse(url).unwrap();
    vec![
        "--db-driver=mysql".into(),
        format!("--mysql-host={}", u.host_str().unwrap()),
        format!("--mysql-port={}", u.port().unwrap()),
        format!("--mysql-user={}", u.username()),
        format!("--mysql-password={}", u.password().unwrap_or("")),
        format!("--mysql-db={}", u.path().trim_start_matches('/')),
    ]
}

const COMMON: [&str; 3] = ["--tables=1", "--table-size=200", "--rand-seed=11"];
const EVENTS: &str = "--events=12";

#[test]
fn every_shipped_script_sends_the_statements_sysbench_sends_on_mariadb() {
    if !program_available("sysbench", "sysbench") {
        return;
    }
    let scripts = shipped();
    if scripts.is_empty() {
        assert!(
            std::env::var_os("CI").is_none(),
            "sysbench's scripts are missing from {SCRIPTS_DIR}"
        );
        eprintln!("SKIPPED: no scripts in {SCRIPTS_DIR}");
        return;
    }
    let sb = sandbox();
    let url = sb.url();
    let mut m = Maria {
        sb,
        log: PathBuf::new(),
    };
    m.sql("SET GLOBAL general_log = ON");
    let file = m.sql("SELECT @@general_log_file");
    let datadir = m.sql("SELECT @@datadir");
    m.log = Path::new(&datadir).join(file);
    let results = tempfile::tempdir().unwrap();
    for script in &scripts {
        let name = script.display().to_string();
        // bulk_insert.lua declares no options (sysbench refuses unknown ones too); its
        // tables are one per thread.
        let bulk = name.ends_with("bulk_insert.lua");
        let common: &[&str] = if bulk { &[] } else { &COMMON };
        let lua = |cmd: &str, extra: &[&str]| {
            let mut c = dbperf();
            c.args(["lua", &name, cmd, "--target", &url, "--no-telemetry"])
                .args(common)
                .args(extra)
                .arg("--results-dir")
                .arg(results.path());
            c
        };
        run_ok(&mut lua("prepare", &["--threads=2"]));
        m.truncate_log();
        // Both ways a state waits for the server: inside the call on a blocking-I/O thread,
        // and a suspended coroutine on an event loop.
        run_ok(&mut lua(
            "run",
            &["--threads=1", EVENTS, "--time=0", "--client-io=blocking"],
        ));
        let ours = general_log_verbs(&m.log);
        m.truncate_log();
        run_ok(&mut lua(
            "run",
            &["--threads=1", EVENTS, "--time=0", "--client-io=async"],
        ));
        let suspended = general_log_verbs(&m.log);
        m.truncate_log();
        let out = Command::new("sysbench")
            .arg(script)
            .args(sysbench_mysql_args(&url))
            .args(common)
            .args(["--threads=1", EVENTS, "--time=0", "run"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "sysbench {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs = general_log_verbs(&m.log);
        assert!(
            !theirs.is_empty(),
            "{name}: sysbench's statements were not in the general log"
        );
        assert_eq!(ours, theirs, "{name}: statements by verb, dbperf vs sysbench");
        assert_eq!(
            suspended, theirs,
            "{name}: statements by verb, dbperf's event loop vs sysbench"
        );
        run_ok(&mut lua("cleanup", &["--threads=2"]));
        assert_eq!(
            m.sql("SHOW TABLES FROM sbtest LIKE 'sbtest%'"),
            "",
            "{name}: cleanup left tables"
        );
        eprintln!("{name}: {ours:?}");
    }
}

/// Statement counts by verb in `pg_stat_statements` for the benchmark's tables.
fn pg_verbs(pg: &pg::TempPg) -> BTreeMap<String, u64> {
    let rows = pg.psql(
        "SELECT calls, regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements \
         WHERE query ILIKE '%sbtest%' OR query IN ('BEGIN', 'COMMIT')",
    );
    let mut out = BTreeMap::new();
    for line in rows.lines() {
        let Some((calls, query)) = line.split_once('\t') else {
            continue;
        };
        if let (Ok(n), Some(v)) = (calls.trim().parse::<u64>(), event_verb(query.trim())) {
            if v != "CREATE" && v != "DROP" {
                *out.entry(v).or_insert(0) += n;
            }
        }
    }
    out
}

#[test]
fn the_oltp_scripts_send_the_statements_sysbench_sends_on_postgresql() {
    if !pg::available() || !program_available("sysbench", "sysbench") {
        return;
    }
    let pg = pg::TempPg::start(&[]);
    let url = pg.url();
    let u = url::Url::parse(&url).unwrap();
    let results = tempfile::tempdir().unwrap();
    for name in [
        "oltp_read_write",
        "oltp_point_select",
        "oltp_insert",
        "select_random_ranges",
    ] {
        let script = format!("{SCRIPTS_DIR}/{name}.lua");
        if !Path::new(&script).exists() {
            continue;
        }
        let lua = |cmd: &str, extra: &[&str]| {
            let mut c = dbperf();
            c.args(["lua", &script, cmd, "--target", &url, "--no-telemetry"])
                .args(COMMON)
                .args(extra)
                .arg("--results-dir")
                .arg(results.path());
            c
        };
        run_ok(&mut lua("prepare", &["--threads=2"]));
        pg.psql("SELECT pg_stat_statements_reset()");
        run_ok(&mut lua(
            "run",
            &["--threads=1", EVENTS, "--time=0", "--client-io=blocking"],
        ));
        let ours = pg_verbs(&pg);
        pg.psql("SELECT pg_stat_statements_reset()");
        run_ok(&mut lua(
            "run",
            &["--threads=1", EVENTS, "--time=0", "--client-io=async"],
        ));
        let suspended = pg_verbs(&pg);
        pg.psql("SELECT pg_stat_statements_reset()");
        let out = Command::new("sysbench")
            .arg(&script)
            .args([
                "--db-driver=pgsql".to_string(),
                format!("--pgsql-host={}", u.host_str().unwrap()),
                format!("--pgsql-port={}", u.port().unwrap()),
                format!("--pgsql-user={}", u.username()),
                format!("--pgsql-password={}", u.password().unwrap_or("")),
                format!("--pgsql-db={}", u.path().trim_start_matches('/')),
            ])
            .args(COMMON)
            .args(["--threads=1", EVENTS, "--time=0", "run"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "sysbench {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs = pg_verbs(&pg);
        assert!(
            !theirs.is_empty(),
            "{name}: sysbench's statements are not in pg_stat_statements"
        );
        assert_eq!(ours, theirs, "{name}: statements by verb, dbperf vs sysbench");
        assert_eq!(
            suspended, theirs,
            "{name}: statements by verb, dbperf's event loop vs sysbench"
        );
        run_ok(&mut lua("cleanup", &[]));
        eprintln!("{name}: {ours:?}");
    }
}

const OWN: &str = r####"
sysbench.cmdline.options = {
   rows = {"Rows in t", 50},
   fail_once = {"Raise a deadlock-like ignorable error in the first event", false},
   stop_after = {"End the thread after this many events (0: never)", 10},
}

function cmd_fill()
   local con = sysbench.sql.driver():connect()
   -- Each parallel thread fills its own share of the ids.
   for i = sysbench.tid + 1, sysbench.opt.rows, sysbench.opt.threads do
      con:query(string.format("INSERT INTO t (id, v) VALUES (%d, 0)", i))
   end
end

sysbench.cmdline.commands = {
   prepare = {function()
      local con = sysbench.sql.driver():connect()
      con:query("CREATE TABLE t (id INT PRIMARY KEY, v INT NOT NULL, note VARCHAR(20) NULL, d DOUBLE NULL)")
   end},
   fill = {cmd_fill, sysbench.cmdline.PARALLEL_COMMAND},
   cleanup = {function() sysbench.sql.driver():connect():query("DROP TABLE t") end},
}

local restarts = 0
function sysbench.hooks.before_restart_event(err)
   restarts = restarts + 1
   assert(err.sql_errno == 1062, "the restart carries the error: " .. tostring(err.sql_errno))
end

function thread_init()
   con = sysbench.sql.driver():connect()
   events = 0
   -- Bound parameters of every kind: VARCHAR (a value, a number, a random string, NULL),
   -- DOUBLE, INT (from a string).
   upd = con:prepare("UPDATE t SET note = ?, d = ? WHERE id = ?")
   p_note = upd:bind_create(sysbench.sql.type.VARCHAR, 20)
   p_d = upd:bind_create(sysbench.sql.type.DOUBLE)
   p_id = upd:bind_create(sysbench.sql.type.INT)
   upd:bind_param(p_note, p_d, p_id)
   sel = con:prepare("SELECT note, d FROM t WHERE id = ?")
   p_sel = sel:bind_create(sysbench.sql.type.BIGINT)
   sel:bind_param(p_sel)
   first = con:prepare("SELECT id, v FROM t WHERE id <= ? ORDER BY id")
   p_first = first:bind_create(sysbench.sql.type.INT)
   first:bind_param(p_first)
end

-- Sets row `id` through the bound parameters and reads it back through a prepared SELECT.
local function roundtrip(id, note, d)
   p_note:set(note)
   p_d:set(d)
   p_id:set(tostring(id))
   upd:execute()
   p_sel:set(id)
   local rs = sel:execute()
   assert(rs.nrows == 1, "rows " .. tostring(rs.nrows))
   return rs:fetch_row()
end

function check_params()
   local row = roundtrip(2, nil, 1.5)
   assert(row[1] == nil and tonumber(row[2]) == 1.5, "NULL note, d 1.5: " .. tostring(row[1]) .. " " .. tostring(row[2]))
   row = roundtrip(3, 42, 2)
   assert(row[1] == "42", "a number bound to VARCHAR: " .. tostring(row[1]))
   p_note:set_rand_str("###-@@@")
   p_d:set(nil)
   p_id:set(4)
   upd:execute()
   p_sel:set(4)
   row = sel:execute():fetch_row()
   assert(row[1]:match("^%d%d%d%-%l%l%l$") and row[2] == nil, "set_rand_str: " .. tostring(row[1]))
   row = roundtrip(5, string.rep("x", 30), -3)
   assert(row[1] == string.rep("x", 20), "cut at max_len: " .. tostring(row[1]))
   -- A prepared read of several rows, fetched one by one to the end.
   p_first:set(3)
   local rs = first:execute()
   assert(rs.nrows == 3 and rs.nfields == 2, "rows " .. tostring(rs.nrows))
   for id = 1, 3 do
      row = rs:fetch_row()
      assert(row[1] == tostring(id) and tonumber(row[2]) ~= nil, "row " .. id .. ": " .. tostring(row[1]))
   end
   assert(rs:fetch_row() == nil, "past the last row")
end

function event()
   events = events + 1
   check_params()
   local n = con:query_row("SELECT count(*) FROM t")
   assert(tonumber(n) == sysbench.opt.rows, "count(*) = " .. tostring(n))
   local rs = con:query("SELECT id, v FROM t ORDER BY id LIMIT 3")
   assert(rs.nrows == 3 and rs.nfields == 2)
   local row = rs:fetch_row()
   assert(row[1] == "1", "first id " .. tostring(row[1]))
   con:query("UPDATE t SET v = v + 1 WHERE id = " .. sysbench.rand.uniform(1, sysbench.opt.rows))
   if sysbench.opt.fail_once and restarts == 0 then
      -- A duplicate key, made ignorable with --mysql-ignore-errors=1062.
      con:query("INSERT INTO t (id, v) VALUES (1, 0)")
   end
   -- stop_after events, then this thread is done.
   return sysbench.opt.stop_after > 0 and events >= sysbench.opt.stop_after
end

function sysbench.hooks.report_intermediate(stat)
   print(string.format("own-report %d events", stat.events))
end

function sysbench.hooks.report_cumulative(stat)
   print(string.format("own-total %d events, %d errors", stat.events, stat.errors))
end

function thread_done()
   local v = con:query_row("SELECT sum(v) FROM t")
   print(string.format("thread %d done: sum %s, restarts %d", sysbench.tid, v, restarts))
end
"####;

#[test]
fn custom_commands_result_sets_restarts_and_errors_of_a_script_of_our_own() {
    let sb = sandbox();
    let url = sb.url();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("own.lua");
    std::fs::write(&script, OWN).unwrap();
    let results = tempfile::tempdir().unwrap();
    let lua = |args: &[&str]| {
        let mut c = dbperf();
        c.arg("lua")
            .arg(&script)
            .args(args)
            .args(["--target", &url, "--no-telemetry"]);
        c.arg("--results-dir").arg(results.path());
        c
    };
    run_ok(&mut lua(&["prepare"]));
    run_ok(&mut lua(&["fill", "--threads=3", "--rows=50"]));
    let out = run_ok(&mut lua(&[
        "run",
        "--threads=1",
        "--time=20",
        "--rows=50",
        "--fail-once",
        "--mysql-ignore-errors=1062",
        "--report-interval=1",
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("thread 0 done: sum 10, restarts 1"), "{stdout}");
    // The script's cumulative report hook prints before dbperf's report.
    assert!(stdout.contains("own-total 9 events, 1 errors"), "{stdout}");
    let summary = read_json(&only_run_dir(results.path()).join("summary.json"));
    std::fs::remove_dir_all(only_run_dir(results.path())).unwrap();
    // event() returned true on its tenth call, the run ended there, not at --time; the
    // first call was restarted, so nine completed.
    assert_eq!(summary["transactions"]["total"].as_u64(), Some(9), "{summary}");
    assert_eq!(
        summary["errors"]["by_class"]["unique_violation"].as_u64(),
        Some(1),
        "{summary}"
    );
    let per_type = &summary["per_type"];
    assert!(per_type["UPDATE t"]["count"].as_u64().unwrap() >= 10, "{per_type}");
    // The same on event-loop threads (open loop), where statements yield instead of blocking.
    let out = run_ok(&mut lua(&[
        "run",
        "--threads=1",
        "--time=20",
        "--rate=100",
        "--rows=50",
        "--fail-once",
        "--mysql-ignore-errors=1062",
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("thread 0 done: sum 20, restarts 1"), "{stdout}");
    std::fs::remove_dir_all(only_run_dir(results.path())).unwrap();
    // Its interval hook prints in place of dbperf's live line, once a second.
    let out = run_ok(&mut lua(&[
        "run",
        "--threads=1",
        "--time=2",
        "--rows=50",
        "--stop-after=0",
        "--report-interval=1",
    ]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reports = stdout.lines().filter(|l| l.starts_with("own-report ")).count();
    assert!(reports >= 2, "{stdout}");

    // Errors point at file:line, name what is unsupported, and never panic.
    let broken = [
        ("function event()\n  local x = \n", "own_broken.lua:3:"),
        (
            "function event()\n  sysbench.rand.triangular(1, 2)\nend\n",
            "sysbench.rand.triangular is not supported by dbperf",
        ),
        ("function event()\n  error('boom')\nend\n", "own_broken.lua:2: boom"),
        ("x = 1\n", "FATAL: cannot find the event() function in own_broken.lua"),
        (
            "function thread_init()\n  local s = sysbench.sql.driver():connect():prepare('SELECT ?')\n  s:bind_param(5)\nend\nfunction event() end\n",
            "own_broken.lua:3: stmt:bind_param(): argument 1 is not a parameter made by stmt:bind_create()",
        ),
        (
            "function thread_init()\n  local s = sysbench.sql.driver():connect():prepare('SELECT ?')\n  local p = s:bind_create(sysbench.sql.type.INT)\n  p:set('abc')\nend\nfunction event() end\n",
            "own_broken.lua:4: param:set(): \"abc\" is not an integer",
        ),
        (
            "function event()\n  sysbench.rand.uniform(5, 2)\nend\n",
            "own_broken.lua:2: sysbench.rand.uniform(5, 2): need 0 <= a <= b",
        ),
    ];
    for (text, want) in broken {
        let bad = dir.path().join("own_broken.lua");
        std::fs::write(&bad, text).unwrap();
        let out = dbperf()
            .arg("lua")
            .arg(&bad)
            .args(["run", "--target", &url, "--no-telemetry", "--time=1"])
            .arg("--results-dir")
            .arg(results.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{text}");
        assert!(stderr.contains(want), "{text}: want {want:?} in\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // os.exit() in event() ends the run with its reason (a fatal error) and keeps the summary,
    // rather than ending dbperf with neither.
    let exiting = dir.path().join("own_exit.lua");
    std::fs::write(
        &exiting,
        "local n = 0\nfunction event()\n  n = n + 1\n  if n == 5 then os.exit(0) end\nend\n",
    )
    .unwrap();
    let exit_results = tempfile::tempdir().unwrap();
    let out = dbperf()
        .arg("lua")
        .arg(&exiting)
        .args(["run", "--target", &url, "--no-telemetry", "--time=10"])
        .arg("--results-dir")
        .arg(exit_results.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("own_exit.lua:4: os.exit(0) called by the script"),
        "{stderr}"
    );
    let summary = read_json(&only_run_dir(exit_results.path()).join("summary.json"));
    assert_eq!(summary["transactions"]["total"].as_u64(), Some(4), "{summary}");
    let out = lua(&["run", "--rowz=3"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid option: --rowz=3\nhint: did you mean --rows?"),
        "{stderr}"
    );
    run_ok(&mut lua(&["cleanup"]));
}
