//! `dbperf lua SCRIPT COMMAND [options]` behaves as `sysbench [options] SCRIPT COMMAND` 1.0.20
//! at the command line and in its report hooks: the cases of sysbench's own cram tests
//! (tests/t/cmdline.t, commands.t, cmd_*.t, api_basic.t, api_reports.t, opt_histogram.t,
//! script_oltp_help.t), each asserting the output those tests expect of sysbench, byte for byte
//! where they give it (their globs and patterns where they do not). sysbench's version header
//! (`sysbench * (glob)` and a blank line in the tests) is checked once and then set aside.
//!
//! Commands that need no server run without one, as sysbench's do; `run` is measured against a
//! sandboxed MariaDB.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{dbperf, sandbox};

/// `dbperf lua ARGS` in `dir` (scripts named as the tests name them, without `./`), with
/// sysbench's tests' LUA_PATH (the directory itself) and no server unless `url`.
fn lua(dir: &Path, url: Option<&str>, args: &[&str]) -> Output {
    let mut c: Command = dbperf();
    c.current_dir(dir)
        .env("LUA_PATH", format!("{}/?.lua;;", dir.display()))
        .env_remove("DBPERF_TARGET")
        .arg("lua")
        .args(args);
    if let Some(url) = url {
        c.args(["--target", url, "--no-telemetry", "--results-dir"])
            .arg(dir.join("results"));
    }
    c.output().expect("dbperf runs")
}

/// stdout and stderr, as the cram tests read them (stderr after stdout: each case here
/// writes to one of them only), and the exit code.
fn text(o: &Output) -> (String, i32) {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let mut s = stdout.strip_prefix(&header()).unwrap_or(&stdout).to_string();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    (s, o.status.code().unwrap_or(-1))
}

/// What sysbench prints first at the default verbosity, with the blank line after it.
fn header() -> String {
    format!("{}\n\n", dbperf::workloads::lua::header())
}

fn script(dir: &Path, name: &str, body: &str) {
    std::fs::write(dir.join(name), body).unwrap();
}

/// cmdline.t's script declaring one option of each type.
const OPTIONS_SCRIPT: &str = r#"sysbench.cmdline.options = {
  str_opt1 = {"str_opt1 description"},
  str_opt2 = {"str_opt2 description", "opt2"},
  str_opt3 = {"str_opt3 description", "opt3", sysbench.cmdline.ARG_STRING},
  bool_opt1 = {"bool_opt1 description", false},
  bool_opt2 = {"bool_opt2 description", true},
  bool_opt3 = {"bool_opt3 description", nil, sysbench.cmdline.ARG_BOOL},
  int_opt1 = {"int_opt1 description", 10},
  int_opt2 = {"int_opt2 description", nil, sysbench.cmdline.ARG_INT},
  int_opt3 = {"int_opt3 description", 20, sysbench.cmdline.ARG_INT},
  float_opt1 = {"float_opt1 description", 3.14, sysbench.cmdline.ARG_DOUBLE},
  float_opt2 = {"float_opt2 description", 0.2},
  list_opt1 = {"list_opt1 description", {"foo", "bar"}},
  list_opt2 = {"list_opt2 description", nil, sysbench.cmdline.ARG_LIST},
  ["dash-opt"] = {"dash-opt desc", "dash-opt val"}
}
function help()
   print("function help()")
   print("Available options:")
   sysbench.cmdline.print_test_options()
end
function event() end
"#;

const OPTIONS_HELP: &str = "function help()
Available options:
  --bool_opt1[=on|off]   bool_opt1 description [off]
  --bool_opt2[=on|off]   bool_opt2 description [on]
  --bool_opt3[=on|off]   bool_opt3 description
  --dash-opt=STRING      dash-opt desc [dash-opt val]
  --float_opt1=N         float_opt1 description [3.14]
  --float_opt2=N         float_opt2 description [0.2]
  --int_opt1=N           int_opt1 description [10]
  --int_opt2=N           int_opt2 description
  --int_opt3=N           int_opt3 description [20]
  --list_opt1=[LIST,...] list_opt1 description [foo,bar]
  --list_opt2=[LIST,...] list_opt2 description
  --str_opt1=STRING      str_opt1 description
  --str_opt2=STRING      str_opt2 description [opt2]
  --str_opt3=STRING      str_opt3 description [opt3]

";

/// commands.t's custom commands, one of them parallel.
const COMMANDS_SCRIPT: &str = r#"function cmd1_func()
 print("cmd1, sysbench.tid = " .. sysbench.tid)
end
function cmd2_func()
  print("cmd2, sysbench.tid = " .. sysbench.tid)
end
sysbench.cmdline.commands = {
 cmd1 = { cmd1_func },
 cmd2 = { cmd2_func, sysbench.cmdline.PARALLEL_COMMAND },
}
"#;

#[test]
fn commands_help_and_options_as_sysbench_without_a_server() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let run = |args: &[&str]| text(&lua(dir, None, args));

    // cmdline.t: help() with print_test_options(); no command loads the script and ends.
    script(dir, "cmdline.lua", OPTIONS_SCRIPT);
    assert_eq!(run(&["cmdline.lua", "help"]), (OPTIONS_HELP.to_string(), 0));
    assert_eq!(run(&["cmdline.lua"]), (String::new(), 0));
    // cmdline.t: the header comes first, then the script's output; --verbosity=0 prints neither
    // the header nor anything else of dbperf's.
    let raw = lua(dir, None, &["cmdline.lua"]);
    let shown = String::from_utf8_lossy(&raw.stdout).into_owned();
    assert!(shown.starts_with("sysbench ") && shown == header(), "{shown:?}");
    let quiet = lua(dir, None, &["--verbosity=0", "cmdline.lua"]);
    assert_eq!(String::from_utf8_lossy(&quiet.stdout), "");
    assert_eq!(
        run(&["cmdline.lua", "prepare"]),
        (
            "'cmdline.lua' test does not implement the 'prepare' command.\n".to_string(),
            1
        )
    );
    assert_eq!(
        run(&["cmdline.lua", "cleanup"]),
        (
            "'cmdline.lua' test does not implement the 'cleanup' command.\n".to_string(),
            1
        )
    );
    assert_eq!(
        run(&["--non-existing-option=3", "cmdline.lua", "prepare"]),
        ("invalid option: --non-existing-option=3\n".to_string(), 1)
    );
    script(dir, "cmdline.lua", "\n");
    assert_eq!(
        run(&["cmdline.lua", "help"]),
        (
            "'cmdline.lua' test does not implement the 'help' command.\n".to_string(),
            1
        )
    );

    // cmdline.t: boolean values; the last of an option given twice wins (sysbench's rule).
    script(
        dir,
        "cmdline.lua",
        "sysbench.cmdline.options = { bool_opt = {\"Flag\", false} }\n\
         function prepare() print(\"bool_opt = \" .. tostring(sysbench.opt.bool_opt)) end\n",
    );
    for (value, shown) in [
        ("on", "true"),
        ("off", "false"),
        ("true", "true"),
        ("false", "false"),
        ("1", "true"),
        ("0", "false"),
    ] {
        let opt = format!("--bool-opt={value}");
        assert_eq!(
            run(&["--verbosity=0", "cmdline.lua", &opt, "prepare"]),
            (format!("bool_opt = {shown}\n"), 0)
        );
    }
    for bad in ["5", "foo"] {
        let opt = format!("--bool-opt={bad}");
        assert_eq!(
            run(&["--verbosity=0", "cmdline.lua", &opt, "prepare"]),
            (format!("invalid option: {opt}\n"), 1)
        );
    }
    assert_eq!(
        run(&[
            "cmdline.lua",
            "--bool-opt=on",
            "--bool-opt=off",
            "prepare",
            "--verbosity=1",
            "--verbosity=0"
        ]),
        ("bool_opt = false\n".to_string(), 0)
    );

    // commands.t: custom commands, a parallel one on --threads states, an unknown one.
    script(dir, "cmdline.lua", COMMANDS_SCRIPT);
    assert_eq!(
        run(&["--threads=2", "cmdline.lua", "cmd1"]),
        ("cmd1, sysbench.tid = 0\n".to_string(), 0)
    );
    let (out, code) = run(&["--threads=2", "cmdline.lua", "cmd2"]);
    let threads = out
        .strip_prefix("Initializing worker threads...\n\n")
        .unwrap_or_default();
    let mut lines: Vec<&str> = threads.lines().collect();
    lines.sort();
    assert_eq!(
        (lines, code),
        (vec!["cmd2, sysbench.tid = 0", "cmd2, sysbench.tid = 1"], 0)
    );
    assert_eq!(
        run(&["--threads=2", "cmdline.lua", "cmd3"]),
        ("Unknown command: cmd3\n".to_string(), 1)
    );

    // commands.t: the script's top level runs once in the global state, then the command.
    script(
        dir,
        "cmdline.lua",
        "function prepare() print('prepare') end\nprint('global')\n",
    );
    assert_eq!(run(&["cmdline.lua", "prepare"]), ("global\nprepare\n".to_string(), 0));

    // cmd_cleanup.t, cmd_help.t, cmd_prepare.t: the global functions.
    for cmd in ["cleanup", "help", "prepare"] {
        let name = format!("cmd_{cmd}.lua");
        script(
            dir,
            &name,
            &format!("function {cmd}()\n  print('function {cmd}()')\nend\n"),
        );
        assert_eq!(run(&[&name, cmd]), (format!("function {cmd}()\n"), 0));
    }

    // cmdline.t: a script found as a module along LUA_PATH, named without .lua.
    script(
        dir,
        "cmdline_module.lua",
        "print(\"cmdline_module loaded\")\nfunction event()\n  print(\"cmdline_module event\")\nend\n",
    );
    assert_eq!(
        run(&["cmdline_module", "--verbosity=0"]),
        ("cmdline_module loaded\n".to_string(), 0)
    );
    assert_eq!(
        run(&["nowhere", "bar"]),
        (
            "FATAL: Cannot find benchmark 'nowhere': no such built-in test, file or module\n".to_string(),
            1
        )
    );

    // cmdline.t: a third word is refused by name; no script (or `-`) reads it from stdin,
    // runs its top level and ends, whatever the command.
    assert_eq!(
        run(&["foo", "bar", "baz"]),
        ("Unrecognized command line argument: baz\n".to_string(), 1)
    );
    let piped = |args: &[&str], input: &str| {
        use std::io::Write;
        let mut c = dbperf();
        c.current_dir(dir)
            .env_remove("DBPERF_TARGET")
            .arg("lua")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        text(&child.wait_with_output().unwrap())
    };
    assert_eq!(piped(&["--verbosity=0"], "print('test')\n"), ("test\n".to_string(), 0));
    assert_eq!(
        piped(
            &["-", "prepare"],
            "function prepare()\n  print(\"prepare\")\nend\nprint(\"global\")\n"
        ),
        ("global\n".to_string(), 0)
    );

    // The deprecated --test=SCRIPT still names the script, with sysbench's warning.
    let (out, code) = run(&["--test=cmd_prepare.lua", "prepare"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("function prepare()\n"), "{out}");
    assert!(out.contains("WARNING: the --test option is deprecated."), "{out}");

    // script_oltp_help.t: a script without help() lists its options.
    if Path::new("/usr/share/sysbench/oltp_read_write.lua").is_file() {
        let (out, code) = run(&["/usr/share/sysbench/oltp_read_write.lua", "help"]);
        assert_eq!(code, 0, "{out}");
        assert!(out.starts_with("oltp_read_write.lua options:\n  --auto_inc[=on|off]           Use AUTO_INCREMENT column as Primary Key (for MySQL), or its alternatives in other DBMS. When disabled, use client-generated IDs [on]\n"), "{out}");
        assert!(
            out.ends_with("  --tables=N                    Number of tables [1]\n\n"),
            "{out}"
        );
    }
}

/// api_basic.t's script: every function says which thread called it.
const BASIC_SCRIPT: &str = r#"function init(thread_id)
  print("tid:" .. (thread_id or "(nil)") .. " init()")
end
function prepare(thread_id)
  print("tid:" .. (thread_id or "(nil)") .. " prepare()")
end
function cleanup(thread_id)
  print("tid:" .. (thread_id or "(nil)") .. " cleanup()")
end
function help(thread_id)
  print("tid:" .. (thread_id or "(nil)") .. " help()")
end
function thread_init(thread_id)
  print(string.format("tid:%d thread_init()", thread_id))
end
function event(thread_id)
  print(string.format("tid:%d event()", thread_id))
end
function thread_done(thread_id)
  print(string.format("tid:%d thread_done()", thread_id))
end
function done(thread_id)
  print("tid:" .. (thread_id or "(nil)") .. " done()")
end
"#;

/// api_reports.t's script, with its hooks set to `format`.
fn reports_script(format: &str) -> String {
    format!(
        "ffi.cdef[[int usleep(unsigned int);]]\nfunction event()\n  ffi.C.usleep(1000)\nend\n\
         sysbench.hooks.report_intermediate = sysbench.report_{format}\n\
         sysbench.hooks.report_cumulative = sysbench.report_{format}\n"
    )
}

/// Whether `line` is a report_csv line of time `t` and `threads` threads, with events, a
/// latency above 1 ms and nothing else (no dbperf figures appended).
fn csv_line(line: &str, t: u32, threads: u32) -> bool {
    let f: Vec<&str> = line.split(',').collect();
    let two = |s: &str| s.split_once('.').is_some_and(|(_, d)| d.len() == 2) && s.parse::<f64>().is_ok();
    f.len() == 10
        && f[0] == t.to_string()
        && f[1] == threads.to_string()
        && two(f[2])
        && f[3..7] == ["0.00"; 4]
        && two(f[7])
        && f[7].parse::<f64>().unwrap() >= 1.0
        && f[8..] == ["0.00", "0.00"]
}

#[test]
fn run_prints_the_scripts_output_and_its_report_hooks_as_sysbench() {
    let sb = sandbox();
    let url = sb.url();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let run = |args: &[&str]| text(&lua(dir, Some(&url), args));

    // api_basic.t: the order of the script's functions, and nothing of dbperf's at --verbosity=0.
    script(dir, "api_basic.lua", BASIC_SCRIPT);
    let basic = ["--verbosity=0", "--events=2", "--db-driver=mysql", "api_basic.lua"];
    let with = |cmd: &'static str| [&basic[..], &[cmd]].concat();
    assert_eq!(run(&with("prepare")), ("tid:(nil) prepare()\n".to_string(), 0));
    assert_eq!(
        run(&with("run")),
        (
            "tid:(nil) init()\ntid:0 thread_init()\ntid:0 event()\ntid:0 event()\ntid:0 thread_done()\ntid:(nil) done()\n"
                .to_string(),
            0
        )
    );
    assert_eq!(run(&with("cleanup")), ("tid:(nil) cleanup()\n".to_string(), 0));
    assert_eq!(run(&with("help")), ("tid:(nil) help()\n".to_string(), 0));

    // api_basic.t: event() ends its thread when it returns anything but nil or false.
    script(
        dir,
        "api_basic.lua",
        "sysbench.cmdline.options = { param = {\"param\", 0} }\nfunction event()\n  i = (i or 0) + 1\n  print(i)\n\
         local r = ({0, 1, true, {}, false, nil})[sysbench.opt.param]\n  if sysbench.opt.param > 6 then error('x') end\n  return r\nend\n",
    );
    for (param, want) in [
        ("1", "1\n"),
        ("2", "1\n"),
        ("3", "1\n"),
        ("4", "1\n"),
        ("5", "1\n2\n"),
        ("6", "1\n2\n"),
    ] {
        let p = format!("--param={param}");
        assert_eq!(
            run(&[&with("run")[..], &[&p]].concat()),
            (want.to_string(), 0),
            "--param={param}"
        );
    }
    assert_eq!(
        run(&with("run")[..3]
            .iter()
            .chain(&["--events=1", "nothing_here.lua", "run"])
            .copied()
            .collect::<Vec<_>>()),
        (
            "FATAL: Cannot find benchmark 'nothing_here.lua': no such built-in test, file or module\n".to_string(),
            1
        )
    );
    script(dir, "api_basic.lua", "function foo()\nend\n");
    assert_eq!(
        run(&with("run")),
        (
            "FATAL: cannot find the event() function in api_basic.lua\n".to_string(),
            1
        )
    );

    // opt_histogram.t: a bare --histogram is a flag, not the script's path.
    script(dir, "histogram.lua", "function event() end\n");
    assert_eq!(
        run(&[
            "--histogram",
            "histogram.lua",
            "--events=2",
            "--threads=2",
            "run",
            "--verbosity=0"
        ]),
        (String::new(), 0)
    );

    // api_reports.t: the hooks print sysbench's lines byte for byte, an intermediate report
    // every 2 s (none for the run's last second) and the cumulative one at the end.
    let reports = [
        "api_reports.lua",
        "--time=5",
        "--report-interval=2",
        "--verbosity=1",
        "run",
    ];
    script(dir, "api_reports.lua", &reports_script("csv"));
    let (out, code) = run(&reports);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(code, 0, "{out}");
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        csv_line(lines[0], 2, 1) && csv_line(lines[1], 4, 1) && csv_line(lines[2], 5, 0),
        "{out}"
    );

    script(dir, "api_reports.lua", &reports_script("json"));
    let (out, code) = run(&reports);
    assert_eq!(code, 0, "{out}");
    // sysbench's JSON: an array of the intermediate reports, closed when the run ends, then
    // an array of the cumulative one; numbers as %4.2f, the time as %4.0f.
    let object = |time: &str, threads: u32| {
        format!(
            "  {{\n    \"time\": {time:>4},\n    \"threads\": {threads},\n    \"tps\": TPS,\n    \"qps\": {{\n      \"total\": 0.00,\n      \"reads\": 0.00,\n      \"writes\": 0.00,\n      \"other\": 0.00\n    }},\n    \"latency\": LAT,\n    \"errors\": 0.00,\n    \"reconnects\": 0.00\n  }}"
        )
    };
    let want = format!(
        "[\n{},\n{}\n]\n[\n{}\n]\n",
        object("2", 1),
        object("4", 1),
        object("5", 0)
    );
    let masked: String = out
        .lines()
        .map(|l| match l.trim_start() {
            t if t.starts_with("\"tps\": ") => "    \"tps\": TPS,".to_string(),
            t if t.starts_with("\"latency\": ") => "    \"latency\": LAT,".to_string(),
            _ => l.to_string(),
        })
        .map(|l| l + "\n")
        .collect();
    assert_eq!(masked, want, "{out}");
    let parsed: Vec<serde_json::Value> = out
        .split_inclusive("]\n")
        .map(|a| serde_json::from_str(a).expect("each array is JSON"))
        .collect();
    assert_eq!(parsed.len(), 2, "{out}");
    assert!(parsed[1][0]["latency"].as_f64().unwrap() >= 1.0, "{out}");
}

/// `program ARGS` in `dir` with no server variables: stdout then stderr, and the exit code.
fn reference(dir: &Path, program: &str, args: &[&str]) -> (String, i32) {
    let o = Command::new(program)
        .current_dir(dir)
        .env("LUA_PATH", format!("{}/?.lua;;", dir.display()))
        .args(args)
        .output()
        .expect("the reference runs");
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    (s, o.status.code().unwrap_or(-1))
}

/// A run's output with its numbers as `N` and its spaces as one, the version header left
/// out: what sysbench's and dbperf's must share.
fn shape(out: &str) -> Vec<String> {
    let out = match out.split_once('\n') {
        Some((first, rest)) if first.starts_with("sysbench 1.0.20") => rest.strip_prefix('\n').unwrap_or(rest),
        _ => out,
    };
    out.lines()
        .map(|l| {
            let mut s = String::new();
            let mut in_number = false;
            for c in l.chars() {
                let digit = c.is_ascii_digit() || (in_number && c == '.');
                if digit && !in_number {
                    s.push('N');
                }
                in_number = digit;
                if !digit {
                    s.push(c);
                }
            }
            s.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect()
}

#[test]
fn run_without_a_server_prints_sysbenchs_blocks_and_report() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    script(dir, "e.lua", "function event() end\n");
    script(
        dir,
        "c.lua",
        "function thread_init() drv = sysbench.sql.driver(); con = drv:connect() end\nfunction event() end\n",
    );
    script(
        dir,
        "p.lua",
        "function event()\n  local ok, e = pcall(function() return sysbench.sql.driver():connect() end)\n  print(ok, e)\n  return false\nend\n",
    );
    // A closed port: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let host = ["--mysql-host=127.0.0.1", &format!("--mysql-port={port}")].map(String::from);
    let host: Vec<&str> = host.iter().map(String::as_str).collect();
    let cases: Vec<Vec<&str>> = vec![
        vec!["e.lua", "--events=100", "--threads=2", "run"],
        vec!["--histogram", "e.lua", "--events=10", "run"],
        [&["c.lua", "--events=10"][..], &host, &["run"]].concat(),
        [&["p.lua", "--events=1"][..], &host, &["run"]].concat(),
    ];
    let (out, code) = text(&lua(dir, None, &cases[0]));
    // Without a server the run is the script's: sysbench's block, its report (no SQL
    // statistics: no driver was made), two threads sharing the hundred events.
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with(
            "Running the test with following options:\nNumber of threads: 2\n\
             Initializing random number generator from current time\n\n\n\
             Initializing worker threads...\n\nThreads started!\n\n\nGeneral statistics:\n"
        ),
        "{out}"
    );
    assert!(out.contains("    total number of events:              100\n"), "{out}");
    assert!(out.contains("         95th percentile: "), "{out}");
    assert!(
        out.contains("Threads fairness:\n    events (avg/stddev):           50.0000/"),
        "{out}"
    );
    assert!(
        !out.contains("SQL statistics") && !out.contains("Run directory"),
        "{out}"
    );
    let (out, code) = text(&lua(dir, None, &cases[2]));
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&format!(
            "FATAL: unable to connect to MySQL server on host '127.0.0.1', port {port}, aborting...\nFATAL: error 2003: "
        )) && out.ends_with(
            "FATAL: `thread_init' function failed: c.lua:1: connection creation failed\nFATAL: Thread initialization failed!\n"
        ),
        "{out}"
    );
    // A failed connect is the script's to catch; a driver made means SQL statistics.
    let (out, code) = text(&lua(dir, None, &cases[3]));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("false\tconnection creation failed\nSQL statistics:\n"),
        "{out}"
    );
    // cmd_run.t: a script's own thread_run() replaces the loop of event() calls, once per
    // thread.
    script(
        dir,
        "t.lua",
        "function thread_run(id)\n  print('function thread_run() ' .. id)\nend\nfunction event()\n  print('event')\nend\n",
    );
    let own = ["--verbosity=0", "--threads=2", "t.lua", "run"];
    let (out, code) = text(&lua(dir, None, &own));
    assert_eq!(code, 0, "{out}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["function thread_run() 0", "function thread_run() 1"], "{out}");
    // The same runs under sysbench: the same lines, numbers aside.
    if !common::program_available("sysbench", "sysbench") {
        return;
    }
    // One thread: sysbench's threads print without a lock, so two may share a line.
    let one = ["--verbosity=0", "--threads=1", "t.lua", "run"];
    assert_eq!(text(&lua(dir, None, &one)), reference(dir, "sysbench", &one));
    for args in &cases {
        let (ours, code) = text(&lua(dir, None, args));
        let (theirs, their_code) = reference(dir, "sysbench", args);
        assert_eq!(code, their_code, "{args:?}:\n{ours}\n---\n{theirs}");
        let (mut a, mut b) = (shape(&ours), shape(&theirs));
        // The error of a refused connection is worded by each client library.
        for s in [&mut a, &mut b] {
            s.retain(|l| !l.starts_with("FATAL: error N:"));
        }
        // The histogram's rows: one per latency bucket, which the two tools cut differently.
        for s in [&mut a, &mut b] {
            s.retain(|l| !l.contains(" |*"));
        }
        assert_eq!(a, b, "{args:?}:\n{ours}\n---\n{theirs}");
    }
    // --help and --version as the cram tests read them (opt_version.t, commands.t,
    // cmdline.t, the driver list of opt_help.t).
    let drivers = |help: &str| -> Vec<String> {
        help.split("Compiled-in database drivers:\n")
            .nth(1)
            .unwrap_or("")
            .lines()
            .take_while(|l| !l.is_empty())
            .map(|l| l.split(' ').nth(2).unwrap_or("").to_string())
            .collect()
    };
    let commands = |help: &str| {
        help.lines()
            .find(|l| l.contains("Commands"))
            .map(|l| l.split(' ').skip(5).collect::<Vec<_>>().join(" "))
    };
    let (ours, _) = text(&lua(dir, None, &["--help", "foo"]));
    let (theirs, _) = reference(dir, "sysbench", &["--help", "foo"]);
    assert_eq!(drivers(&ours), drivers(&theirs));
    assert_eq!(commands(&ours), commands(&theirs));
    assert!(ours.lines().any(|l| l == "Usage:") && theirs.lines().any(|l| l == "Usage:"));
    let (ours, _) = text(&lua(dir, None, &["--version"]));
    let (theirs, _) = reference(dir, "sysbench", &["--version"]);
    let first_two = |s: &str| s.split(' ').take(2).collect::<Vec<_>>().join(" ");
    assert_eq!(first_two(ours.trim()), first_two(theirs.trim()));
}

#[test]
fn run_on_a_server_prints_sysbenchs_sql_statistics_and_keeps_dbperfs_report_in_the_run_directory() {
    let sb = sandbox();
    let url = sb.url();
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    script(
        dir,
        "q.lua",
        "function thread_init() con = sysbench.sql.driver():connect() end\n\
         function event()\n  con:query('SELECT 1')\n  con:query('BEGIN')\n  con:query('COMMIT')\nend\n\
         function thread_done() con:query('SELECT 2') end\n",
    );
    let args = ["q.lua", "--events=20", "--threads=2", "run"];
    let (out, code) = text(&lua(dir, Some(&url), &args));
    assert_eq!(code, 0, "{out}");
    // sysbench's counts: reads of the events and of thread_done, the events' BEGIN/COMMIT.
    let want = "Threads started!\n\nSQL statistics:\n    queries performed:\n        read:                            22\n        write:                           0\n        other:                           40\n        total:                           62\n    transactions:                        20     (";
    assert!(out.contains(want), "{out}");
    assert!(
        !out.contains("Run directory:") && !out.contains("dbperf 0.1.0 —"),
        "{out}"
    );
    let runs: Vec<_> = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    let report = runs
        .iter()
        .map(|e| e.path().join("report.txt"))
        .find(|p| p.is_file())
        .expect("report.txt in the run directory");
    assert!(!std::fs::read_to_string(report).unwrap().is_empty());
    // --dbperf-report prints dbperf's after sysbench's.
    let (out, code) = text(&lua(dir, Some(&url), &[&args[..], &["--dbperf-report"]].concat()));
    assert_eq!(code, 0, "{out}");
    let (sysbench_at, dbperf_at) = (
        out.find("Threads fairness:").unwrap(),
        out.find("Run directory:").unwrap(),
    );
    assert!(sysbench_at < dbperf_at, "{out}");
    // --report-checkpoints on a measured run: sysbench's reports each cover their span on
    // stdout, while the run directory keeps the whole run.
    let timed = ["q.lua", "--time=3", "--threads=2", "--report-checkpoints=1", "run"];
    let results = dir.join("results");
    let before: Vec<_> = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let (out, code) = text(&lua(dir, Some(&url), &timed));
    assert_eq!(code, 0, "{out}");
    let marks = grep(&out, |l| {
        l.contains("Checkpoint report") || l.contains("SQL statistics")
    });
    assert_eq!(
        marks,
        ["[ 1s ] Checkpoint report:", "SQL statistics:", "SQL statistics:"],
        "{out}"
    );
    let spans: u64 = grep(&out, |l| l.starts_with("    transactions:"))
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    let run_dir = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && !before.contains(p))
        .expect("the run's directory");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["transactions"]["total"].as_u64(), Some(spans), "{out}");
    // The same run under sysbench, on the same server: the same lines, numbers aside.
    if !common::program_available("sysbench", "sysbench") {
        return;
    }
    let u = url::Url::parse(&url).unwrap();
    let conn = [
        format!("--mysql-host={}", u.host_str().unwrap()),
        format!("--mysql-port={}", u.port().unwrap()),
        format!("--mysql-user={}", u.username()),
        format!("--mysql-password={}", u.password().unwrap_or("")),
        format!("--mysql-db={}", u.path().trim_start_matches('/')),
    ];
    let theirs_args: Vec<&str> = conn.iter().map(String::as_str).chain(args).collect();
    let (theirs, their_code) = reference(dir, "sysbench", &theirs_args);
    assert_eq!(their_code, 0, "{theirs}");
    let (ours, _) = text(&lua(dir, Some(&url), &args));
    assert_eq!(shape(&ours), shape(&theirs), "{ours}\n---\n{theirs}");
}

/// The lines of `out` that `keep` selects, as the cram tests grep them.
fn grep(out: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    out.lines().filter(|l| keep(l)).map(String::from).collect()
}

/// A script in the shape of sysbench's oltp scripts: a connection made in thread_init,
/// prepared reads and writes and text statements in each event; what it saw of a SELECT's
/// result is printed once (a result, as sysbench's `<sql_result>`, with no row: under
/// sysbench a NULL one, which `rs == nil` also finds, under dbperf one with no rows).
const DRY_SCRIPT: &str = r#"function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  st = con:prepare("SELECT c FROM sbtest1 WHERE id=?")
  p = st:bind_create(sysbench.sql.type.INT)
  st:bind_param(p)
  up = con:prepare("UPDATE sbtest1 SET k=k+1 WHERE id=?")
  q = up:bind_create(sysbench.sql.type.INT)
  up:bind_param(q)
end
function event()
  con:query("BEGIN")
  p:set(1)
  local rs = st:execute()
  q:set(1)
  up:execute()
  local row = con:query_row("SELECT 1")
  con:query("COMMIT")
  if not shown then
    shown = true
    print(drv:name(), tostring(rs), tostring(row))
  end
end
"#;

#[test]
fn mysql_dry_run_and_report_checkpoints_as_sysbench() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    script(dir, "dry.lua", DRY_SCRIPT);
    // A closed port: a dry run asks nothing of it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = format!("--mysql-port={port}");
    let dry = [
        "dry.lua",
        "--mysql-dry-run",
        "--mysql-host=127.0.0.1",
        &closed,
        "--events=50",
        "run",
    ];
    let (out, code) = text(&lua(dir, None, &dry));
    assert_eq!(code, 0, "{out}");
    // Every call succeeds with no rows, and every statement counts as other (no statement
    // returned rows or changed any), as sysbench's dry run counts them.
    assert!(out.contains("mysql\t<sql_result>\tnil\n"), "{out}");
    assert!(
        out.contains(
            "SQL statistics:\n    queries performed:\n        read:                            0\n        \
             write:                           0\n        other:                           250\n        \
             total:                           250\n    transactions:                        50     ("
        ),
        "{out}"
    );
    // --mysql-dry-run=off: the connection is made, and refused.
    let (out, code) = text(&lua(dir, None, &[&dry[..5], &["--mysql-dry-run=off", "run"]].concat()));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("connection creation failed"), "{out}");

    // The report hooks see each checkpoint's span: the time since the start and since the
    // last checkpoint, in a state of their own.
    script(
        dir,
        "hook.lua",
        "sysbench.hooks.report_cumulative = function(stat)\n  \
         print(string.format('cumulative %.0f %.0f %s', stat.time_total, stat.time_interval, tostring(stat.events > 0)))\n\
         end\nfunction event() end\n",
    );
    let hook = ["hook.lua", "--time=3", "--report-checkpoints=2,1", "run"];
    let (out, code) = text(&lua(dir, None, &hook));
    assert_eq!(code, 0, "{out}");
    let hooked = |out: &str| grep(out, |l| l.contains("Checkpoint report") || l.starts_with("cumulative "));
    let want = [
        "[ 1s ] Checkpoint report:",
        "cumulative 1 1 true",
        "[ 2s ] Checkpoint report:",
        "cumulative 2 1 true",
        "cumulative 3 1 true",
    ];
    assert_eq!(hooked(&out), want, "{out}");
    assert!(out.contains("Report checkpoint(s) at 1, 2 seconds\n"), "{out}");

    // The default reports: each checkpoint's counts are its own second's.
    let cps = [
        "dry.lua",
        "--mysql-dry-run",
        "--time=3",
        "--report-checkpoints=1,2",
        "run",
    ];
    let (out, code) = text(&lua(dir, None, &cps));
    assert_eq!(code, 0, "{out}");
    let checkpoints_and_stats =
        |out: &str| grep(out, |l| l.contains("Checkpoint report") || l.contains("SQL statistics"));
    let cram = [
        "[ 1s ] Checkpoint report:",
        "SQL statistics:",
        "[ 2s ] Checkpoint report:",
        "SQL statistics:",
        "SQL statistics:",
    ];
    assert_eq!(checkpoints_and_stats(&out), cram, "{out}");
    let total_times = grep(&out, |l| l.starts_with("    total time:"));
    assert_eq!(total_times.len(), 3, "{out}");
    for (line, secs) in total_times.iter().zip([1.0, 2.0, 3.0]) {
        let t: f64 = line
            .trim()
            .trim_start_matches("total time:")
            .trim()
            .trim_end_matches('s')
            .parse()
            .unwrap();
        assert!((t - secs).abs() < 0.1, "{line}\n{out}");
    }
    // A span of one second: its events per second are its events.
    for line in grep(&out, |l| l.starts_with("    transactions:")) {
        let n: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let rate: f64 = line
            .split('(')
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(n > 0.0 && (rate / n - 1.0).abs() < 0.1, "{line}\n{out}");
    }
    let events: Vec<String> = grep(&out, |l| l.starts_with("    total number of events:"));
    let fairness: Vec<String> = grep(&out, |l| l.starts_with("    events (avg/stddev):"));
    for (e, f) in events.iter().zip(&fairness) {
        // One thread: its events are the span's.
        let n = e.split_whitespace().last().unwrap();
        assert!(f.contains(&format!("{n}.0000/0.00")), "{e} / {f}\n{out}");
    }
    // After dbperf's --warmup-time (sysbench 1.0 has none) the seconds are the measurement's,
    // and so is the first span: its threads fairness leaves the warmup's events out.
    let warm = [
        "dry.lua",
        "--mysql-dry-run",
        "--warmup-time=1",
        "--time=2",
        "--report-checkpoints=1",
        "run",
    ];
    let (out, code) = text(&lua(dir, None, &warm));
    assert_eq!(code, 0, "{out}");
    assert_eq!(checkpoints_and_stats(&out)[0], "[ 2s ] Checkpoint report:", "{out}");
    let first = out.split("[ 2s ] Checkpoint report:").nth(1).unwrap();
    let n = grep(first, |l| l.starts_with("    total number of events:"))[0]
        .split_whitespace()
        .last()
        .unwrap()
        .to_string();
    assert!(
        first.contains(&format!("    events (avg/stddev):           {n}.0000/0.00\n")),
        "{out}"
    );
    assert!(first.contains("    total time:                          1.0"), "{out}");
    // The reporting and the checkpoint threads load the script, hooks or not (its top level
    // runs four times: probe, worker, and those two); --verbosity=0 leaves stdout to it.
    script(dir, "top.lua", "print('top')\nfunction event() end\n");
    let top = [
        "top.lua",
        "--time=2",
        "--report-interval=1",
        "--report-checkpoints=1",
        "--verbosity=0",
        "run",
    ];
    assert_eq!(text(&lua(dir, None, &top)), ("top\n".repeat(4), 0));
    let bad = ["dry.lua", "--mysql-dry-run", "--report-checkpoints=1,x", "run"];
    let (out, code) = text(&lua(dir, None, &bad));
    assert_eq!(
        (out.as_str(), code),
        ("FATAL: Invalid value for --report-checkpoints: 'x'\n", 1)
    );

    if !common::program_available("sysbench", "sysbench") {
        return;
    }
    // The same runs under sysbench: the same lines (numbers aside), the same hook output, the
    // same error.
    for args in [&dry[..], &cps[..]] {
        let (ours, code) = text(&lua(dir, None, args));
        let (theirs, their_code) = reference(dir, "sysbench", args);
        assert_eq!(
            (code, shape(&ours)),
            (their_code, shape(&theirs)),
            "{args:?}:\n{ours}\n---\n{theirs}"
        );
    }
    let (theirs, _) = reference(dir, "sysbench", &hook);
    assert_eq!(hooked(&theirs), want, "{theirs}");
    assert_eq!(text(&lua(dir, None, &bad)), reference(dir, "sysbench", &bad));
    assert_eq!(text(&lua(dir, None, &top)), reference(dir, "sysbench", &top));
    // --db-driver=pgsql: a mysql driver's option, which changes nothing there.
    let pg = ["dry.lua", "--db-driver=pgsql", "--mysql-dry-run", "--events=1", "run"];
    let (theirs, _) = reference(dir, "sysbench", &pg);
    assert!(theirs.contains("connection creation failed"), "{theirs}");
    let (ours, _) = text(&lua(dir, None, &pg));
    assert!(ours.contains("connection creation failed"), "{ours}");
    // The cram tests, opt_report_checkpoints.t and opt_report_interval.t, with sysbench's own
    // script.
    if !Path::new("/usr/share/sysbench/oltp_read_write.lua").is_file() {
        return;
    }
    let oltp = [
        "/usr/share/sysbench/oltp_read_write.lua",
        "--db-driver=mysql",
        "--mysql-dry-run",
        "--time=3",
        "--events=0",
    ];
    for tool in ["dbperf", "sysbench"] {
        let run = |extra: &str| {
            let args = [&oltp[..], &[extra, "run"]].concat();
            match tool {
                "dbperf" => text(&lua(dir, None, &args)).0,
                _ => reference(dir, "sysbench", &args).0,
            }
        };
        let out = run("--report-checkpoints=1,2");
        assert_eq!(checkpoints_and_stats(&out), cram, "{tool}:\n{out}");
        let out = run("--report-interval=1");
        let second = grep(&out, |l| l.contains("[ 2s ]"));
        assert_eq!(second.len(), 1, "{tool}:\n{out}");
        let s = shape(&second[0]);
        assert_eq!(
            s,
            ["[ Ns ] thds: N tps: N qps: N (r/w/o: N/N/N) lat (ms,N%): N err/s: N reconn/s: N"],
            "{tool}: {second:?}"
        );
        assert!(second[0].ends_with(" err/s: 0.00 reconn/s: 0.00"), "{tool}: {second:?}");
    }
}
