//! What `dbperf lua` does with a loaded script, its command line already read: running a
//! script command (prepare, cleanup, prewarm or its own, on `--threads` states when the script
//! marks it parallel), the commands a script offers and its help, and the main state of a
//! measured `run` (`init()`, the report hooks `report_intermediate` and `report_cumulative`,
//! `done()`, the counters the script bumps), and how a run records the script's options.
//!
//! The command line itself is `dbperf_commands::lua`'s: everything here takes plain values.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use dbperf_engine::{IntervalReport, Stats};
use mlua::{Lua, Table, Value};

use super::api::{self, lua_message, Shared};
use super::options::{self, OptDef, OptValue};
use super::SCRIPT_COUNTERS;
use dbperf_report::LiveLine;

/// The probe's view: no server (nothing may connect while options are read).
pub fn shared_probe(s: &Shared) -> Shared {
    Shared {
        chunks: s.chunks.clone(),
        ..Shared::offline(&s.script, &s.command, s.argv.clone(), s.opt.clone())
    }
}

/// `dbperf lua SCRIPT help`: the script's commands and its own options.
pub fn print_help(lua: &Lua, script: &str, defs: &[OptDef]) {
    let commands = script_commands(lua);
    println!("Usage: dbperf lua {script} COMMAND [options]");
    println!(
        "Commands: run{}",
        commands.iter().map(|c| format!(", {c}")).collect::<String>()
    );
    if defs.is_empty() {
        println!("{script} declares no options of its own.");
    } else {
        println!("{script} options:");
        print!("{}", options::help_text(defs));
    }
    println!("dbperf's and sysbench's general options: dbperf lua --help");
}

/// The commands a script offers: `sysbench.cmdline.commands` and old-style global functions.
pub fn script_commands(lua: &Lua) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(t) = lua
        .globals()
        .get::<Table>("sysbench")
        .and_then(|s| s.get::<Table>("cmdline"))
        .and_then(|c| c.get::<Table>("commands"))
    {
        for (k, _) in t.pairs::<String, Value>().flatten() {
            out.push(k);
        }
    }
    for f in ["prepare", "cleanup", "prewarm"] {
        if matches!(lua.globals().get::<Value>(f), Ok(Value::Function(_))) && !out.iter().any(|c| c == f) {
            out.push(f.to_string());
        }
    }
    out.sort();
    out
}

/// A script command (prepare, cleanup, prewarm, its own): on `threads` states at once when
/// the script marks it parallel, else on one.
pub fn run_command(shared: Arc<Shared>, command: &str, threads: usize) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let script = shared.script.display().to_string();
    local.block_on(&rt, async {
        let first = api::new_state(&shared, 0).map_err(|e| anyhow!(e))?;
        let is_defined = |lua: &Lua, what: &str| -> bool {
            let f: mlua::Result<Value> = lua
                .load(format!("return sysbench.cmdline.{what}(...)"))
                .call(command.to_string());
            matches!(f, Ok(Value::Boolean(true)))
        };
        let defined = is_defined(&first, "command_defined");
        let parallel = defined && is_defined(&first, "command_parallel");
        let global = matches!(first.globals().get::<Value>(command), Ok(Value::Function(_)));
        if !defined && !global {
            let known = script_commands(&first);
            bail!(
                "{script} has no command {command:?}: it offers run{}",
                known.iter().map(|c| format!(", {c}")).collect::<String>()
            );
        }
        let threads = if parallel { threads } else { 1 };
        let mut states = vec![first];
        for tid in 1..threads {
            states.push(api::new_state(&shared, tid).map_err(|e| anyhow!(e))?);
        }
        let mut tasks = Vec::new();
        for lua in states {
            let command = command.to_string();
            tasks.push(tokio::task::spawn_local(async move {
                let r = if defined {
                    let f: mlua::Function = lua
                        .load("return function(name) return sysbench.cmdline.call_command(name) end")
                        .eval()?;
                    api::call(&f, command.clone()).await
                } else {
                    let f: mlua::Function = lua.globals().get(command.as_str())?;
                    api::call(&f, ()).await
                };
                api::clear_log(&lua);
                match r {
                    Ok(Value::Boolean(false)) => Err(mlua::Error::runtime(format!("command {command} failed"))),
                    Ok(_) => Ok(()),
                    Err(e) => Err(e),
                }
            }));
        }
        let mut first_error = None;
        for t in tasks {
            match t.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_error.get_or_insert(lua_message(&e));
                }
                Err(e) => {
                    first_error.get_or_insert(e.to_string());
                }
            }
        }
        match first_error {
            Some(e) => Err(anyhow!("{script} {command}: {e}")),
            None => Ok(()),
        }
    })
}

/// What a report hook's `stat` table is made of.
pub struct Stat<'a> {
    /// Connections running.
    pub threads: usize,
    /// Seconds the stats cover.
    pub interval_s: f64,
    /// Seconds since the measurement began.
    pub total_s: f64,
    /// The engine's counts and latencies over `interval_s`.
    pub stats: &'a Stats,
}

/// The script's report hook `name` (`report_intermediate`, `report_cumulative`), if it sets one.
pub fn report_hook(lua: &Lua, name: &str) -> Option<mlua::Function> {
    let hooks: Table = lua.globals().get::<Table>("sysbench").ok()?.get("hooks").ok()?;
    hooks.get::<mlua::Function>(name).ok()
}

/// Calls a report hook with sysbench's stat fields (`latency_pct` at `percentile`); returns
/// what it printed (a failing hook is reported in the line instead).
pub fn call_report(lua: &Lua, hook: &mlua::Function, s: &Stat<'_>, percentile: f64) -> String {
    let build = || -> mlua::Result<String> {
        let t = lua.create_table()?;
        let q = s.stats.queries;
        let latency_us = if s.stats.response.is_empty() {
            0
        } else {
            s.stats.response.value_at_quantile(percentile / 100.0)
        };
        t.set("threads_running", s.threads)?;
        t.set("time_interval", s.interval_s.max(1e-9))?;
        t.set("time_total", s.total_s)?;
        t.set("latency_pct", latency_us as f64 / 1e6)?;
        t.set("events", s.stats.transactions)?;
        t.set("reads", q[0])?;
        t.set("writes", q[1])?;
        t.set("other", q[2])?;
        t.set("errors", s.stats.total_errors())?;
        t.set("reconnects", s.stats.reconnects)?;
        t.set("queue_length", 0)?;
        t.set("concurrency", s.threads)?;
        let capture: mlua::Function = lua
            .globals()
            .get::<Table>("sysbench")?
            .get::<Table>("__dbperf")?
            .get("capture")?;
        capture.call::<String>((hook.clone(), t))
    };
    build().unwrap_or_else(|e| format!("(the script's report hook failed: {})", lua_message(&e)))
}

/// The main state of a measured `run`: sysbench's, with `sysbench.tid` one past the workers',
/// where `init()` and `done()` run and the report hooks are called.
pub struct MainState {
    // Dropped in this order: the state before the runtime its connections were made on.
    lua: Lua,
    local: tokio::task::LocalSet,
    rt: tokio::runtime::Runtime,
    script: String,
}

impl MainState {
    /// Loads the script in the main state (`threads` workers come before it) and runs its
    /// `init()`.
    pub fn init(shared: &Arc<Shared>, threads: usize) -> Result<MainState> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let local = tokio::task::LocalSet::new();
        let script = shared.script.display().to_string();
        let lua = api::new_state(shared, threads).map_err(|e| anyhow!(e))?;
        local
            .block_on(&rt, api::call_global(&lua, "init", ()))
            .map_err(|e| anyhow!("{script}: init(): {}", lua_message(&e)))?;
        api::clear_log(&lua);
        Ok(MainState { lua, local, rt, script })
    }

    /// The run's live line: the script's `report_intermediate` hook when it sets one (its
    /// lines replace dbperf's), else dbperf's own.
    pub fn live_line(&self, percentile: f64) -> LiveLine {
        report_hook(&self.lua, "report_intermediate").map_or(LiveLine::Standard, |f| {
            let main = self.lua.clone();
            LiveLine::Custom(Box::new(move |r: &IntervalReport<'_>| {
                let stat = Stat {
                    threads: r.connections,
                    interval_s: r.len_s(),
                    total_s: r.end_s,
                    stats: r.stats,
                };
                call_report(&main, &f, &stat, percentile)
            }))
        })
    }

    /// After the run: the script's `report_cumulative` hook over the whole measurement (its
    /// text printed before dbperf's final report), then `done()` (a failure is a warning: the
    /// run has been measured), then the counters the script bumped.
    pub fn finish(self, threads: usize, measured_s: f64, total: &Stats, percentile: f64) {
        if let Some(f) = report_hook(&self.lua, "report_cumulative") {
            let stat = Stat {
                threads,
                interval_s: measured_s,
                total_s: measured_s,
                stats: total,
            };
            let text = call_report(&self.lua, &f, &stat, percentile);
            if !text.is_empty() {
                println!("{text}");
            }
        }
        if let Err(e) = self.local.block_on(&self.rt, api::call_global(&self.lua, "done", ())) {
            eprintln!("warning: {}: done(): {}", self.script, lua_message(&e));
        }
        if let Some(line) = counters_line() {
            println!("{line}");
        }
    }
}

/// The counters scripts bumped through `ffi.C.sb_counter_inc`, as a line, if any.
fn counters_line() -> Option<String> {
    let counted: Vec<String> = ["other", "read", "write", "transaction", "error", "reconnect"]
        .iter()
        .zip(SCRIPT_COUNTERS.iter())
        .filter_map(|(n, c)| {
            let v = c.load(Ordering::Relaxed);
            (v > 0).then(|| format!("{n} {v}"))
        })
        .collect();
    (!counted.is_empty()).then(|| format!("Counted by the script (sb_counter_inc): {}", counted.join(", ")))
}

/// A statement still waiting on its server gives up `after` from now (the run's end and grace,
/// counted generously).
pub fn give_up_after(shared: &Shared, after: Duration) {
    let ns = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
    let at = dbperf_engine::clock::now_ns().saturating_add(ns);
    shared.give_up_at.store(at, Ordering::Relaxed);
}

/// The script's own options at their values for the run, as a run's manifest records them
/// (`script_options`): the report's setup block reads the data set from them
/// (`oltp_read_write.lua, 4 tables x 20,000 rows`).
pub fn script_options_record(values: &[(String, OptValue)]) -> serde_json::Map<String, serde_json::Value> {
    values
        .iter()
        .map(|(k, v)| {
            let v = match v {
                OptValue::Bool(b) => (*b).into(),
                OptValue::Number(n) => serde_json::json!(n),
                OptValue::Str(s) => s.clone().into(),
                OptValue::List(l) => l.clone().into(),
                OptValue::Nil => serde_json::Value::Null,
            };
            (k.clone(), v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// `body` as `t.lua` in a temporary directory, with the offline settings of `command`.
    fn script(body: &str, command: &str) -> (tempfile::TempDir, Arc<Shared>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.lua");
        std::fs::write(&path, body).unwrap();
        let shared = Shared::offline(&path, command, vec![], vec![]);
        (dir, Arc::new(shared))
    }

    /// A script whose commands leave a file per thread that ran them.
    const MARKS: &str = r#"
local function mark(name)
  local f = assert(io.open(DIR .. "/" .. name .. "." .. sysbench.tid, "w"))
  f:close()
end
sysbench.cmdline.commands = {
  wide = {function() mark("wide") end, sysbench.cmdline.PARALLEL_COMMAND},
  narrow = {function() mark("narrow") end},
  refuse = {function() return false end},
}
function prewarm() mark("prewarm") end
function event() end
"#;

    fn marks(dir: &Path) -> Vec<String> {
        let mut out: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "t.lua")
            .collect();
        out.sort();
        out
    }

    #[test]
    fn commands_run_on_every_thread_only_when_parallel() {
        let dir = tempfile::tempdir().unwrap();
        let body = format!("DIR = {:?}\n{MARKS}", dir.path().display().to_string());
        let (_d, shared) = script(&body, "wide");
        run_command(shared.clone(), "wide", 3).unwrap();
        assert_eq!(marks(dir.path()), ["wide.0", "wide.1", "wide.2"]);
        run_command(shared.clone(), "narrow", 3).unwrap();
        run_command(shared.clone(), "prewarm", 3).unwrap();
        assert_eq!(
            marks(dir.path()),
            ["narrow.0", "prewarm.0", "wide.0", "wide.1", "wide.2"]
        );
        let err = run_command(shared.clone(), "refuse", 2).unwrap_err().to_string();
        assert!(err.contains("t.lua refuse: command refuse failed"), "{err}");
        let err = run_command(shared.clone(), "wied", 2).unwrap_err().to_string();
        assert!(
            err.contains("has no command \"wied\": it offers run, narrow, prewarm, refuse, wide"),
            "{err}"
        );
        let probe = api::new_state(&Arc::new(shared_probe(&shared)), 0).unwrap();
        assert_eq!(script_commands(&probe), ["narrow", "prewarm", "refuse", "wide"]);
    }

    #[test]
    fn states_after_the_first_load_the_script_and_its_modules_compiled_and_errors_keep_file_line() {
        let body = "local m = require('helper')\nfunction event() return m.twice(21) end\n";
        let (dir, shared) = script(body, "run");
        std::fs::write(
            dir.path().join("helper.lua"),
            "local M = {}\nfunction M.twice(x)\n  if x > 100 then error('too big') end\n  return 2 * x\nend\nreturn M\n",
        )
        .unwrap();
        let first = api::new_state(&shared, 0).unwrap();
        // The probe's Shared shares the cache, as a run's probe does.
        let second = api::new_state(&Arc::new(shared_probe(&shared)), 1).unwrap();
        // Both files were compiled once (the second state found them cached) and work.
        let cached = ["t.lua", "helper.lua"].map(|f| dir.path().join(f));
        assert!(cached.iter().all(|p| shared.chunks.holds(p)));
        for lua in [&first, &second] {
            let event: mlua::Function = lua.globals().get("event").unwrap();
            assert_eq!(event.call::<i64>(()).unwrap(), 42);
            let m: mlua::Table = lua.load("return require('helper')").eval().unwrap();
            let twice: mlua::Function = m.get("twice").unwrap();
            let err = api::lua_message(&twice.call::<i64>(500).unwrap_err());
            assert!(err.contains("helper.lua:3: too big"), "{err}");
        }
        // A module that does not compile names its file and line; a missing one where it
        // was looked for.
        let (d2, fresh) = script("require('broken')\n", "run");
        std::fs::write(d2.path().join("broken.lua"), "local x = = 1\n").unwrap();
        let err = api::new_state(&fresh, 0).err().unwrap();
        assert!(
            err.contains("error loading module 'broken' from file") && err.contains("broken.lua:1:"),
            "{err}"
        );
        let (_d3, missing) = script("require('nowhere')\n", "run");
        let err = api::new_state(&missing, 0).err().unwrap();
        assert!(
            err.contains("module 'nowhere' not found") && err.contains("no file") && err.contains("nowhere.lua'"),
            "{err}"
        );
    }

    #[test]
    fn report_hooks_get_sysbench_stat_fields_and_their_output_is_the_line() {
        let body = r#"
sysbench.hooks.report_intermediate = function(stat)
  print(string.format("%d threads, %d events, %d reads, %.3f s", stat.threads_running,
    stat.events, stat.reads, stat.latency_pct))
end
function event() end
"#;
        let (_d, shared) = script(body, "run");
        let lua = api::new_state(&shared, 0).unwrap();
        assert!(report_hook(&lua, "report_cumulative").is_none());
        let hook = report_hook(&lua, "report_intermediate").expect("the script sets it");
        let ops = dbperf_engine::OpTable {
            transactions: vec!["event".into()],
            statements: vec![],
        };
        let mut stats = Stats::new(&ops);
        stats.record_txn(0, 2_000_000, 2_000_000, false);
        stats.queries = [7, 0, 0];
        let stat = Stat {
            threads: 4,
            interval_s: 1.0,
            total_s: 1.0,
            stats: &stats,
        };
        let line = call_report(&lua, &hook, &stat, 95.0);
        assert!(line.starts_with("4 threads, 1 events, 7 reads, 0.002 s"), "{line:?}");
    }
}
