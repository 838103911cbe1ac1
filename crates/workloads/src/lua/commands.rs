//! What `dbperf lua` does with a loaded script, its command line already read: the script's
//! commands as sysbench runs them (its own `sysbench.cmdline.commands`, on `--threads` states
//! when marked parallel; `help`, `prepare`, `cleanup` as global functions), its help, and the
//! main state of a measured `run` (`init()`, the report hooks `report_intermediate` and
//! `report_cumulative`, `done()`, the counters the script bumps), and how a run records the
//! script's options.
//!
//! States are made as sysbench makes them, so a script's top-level code runs as often and
//! prints what it prints as often: the probe that read the options is sysbench's global state
//! (loaded in front of the user); a state standing for it again (the main state of `run`, the
//! one state of a command that is not parallel) loads silently ([`silently`]); workers, and
//! the reporting state of a run with `--report-interval`, print as they load.
//!
//! The command line itself is `dbperf_commands::lua`'s: everything here takes plain values.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Result};
use dbperf_engine::{ConnectionTally, IntervalReport, RunOutcome, Stats};
use mlua::{Lua, Table, Value};

use super::api::{self, lua_message, Shared};
use super::checkpoints::{Checkpoints, Since};
use super::options::{self, OptDef, OptValue};
use super::report;
use super::SCRIPT_COUNTERS;
use dbperf_report::LiveLine;

/// The probe's view: the script, its options and the server given, if any (a script's top
/// level may connect, as under sysbench, whose main thread runs it too).
pub fn shared_probe(s: &Shared) -> Shared {
    Shared {
        chunks: s.chunks.clone(),
        target: s.target.clone(),
        ..Shared::offline(&s.script, &s.command, s.argv.clone(), s.opt.clone())
    }
}

/// `dbperf lua SCRIPT help`, as sysbench: the script's `help()` when it has one (with
/// `sysbench.cmdline.print_test_options()` listing `defs`), else its options under
/// `NAME options:`; `false` when it has neither.
pub fn print_help(lua: &Lua, name: &str, defs: &[OptDef]) -> Result<bool> {
    let text = options::help_text(defs);
    if let Ok(Value::Function(help)) = lua.globals().get::<Value>("help") {
        let call = || -> mlua::Result<()> {
            let raw: Table = lua.globals().get::<Table>("sysbench")?.get("__dbperf")?;
            raw.set("test_options", text)?;
            help.call::<()>(())
        };
        call().map_err(|e| anyhow!("{}", lua_message(&e)))?;
        return Ok(true);
    }
    if defs.is_empty() {
        return Ok(false);
    }
    println!("{name} options:");
    print!("{text}");
    Ok(true)
}

/// Sets `values` (the script's options, resolved) in `lua`'s `sysbench.opt`, where the probe
/// made before they were known lacks them.
pub fn export_options(lua: &Lua, values: &[(String, OptValue)]) -> Result<()> {
    export(lua, values).map_err(|e| anyhow!("setting sysbench.opt: {}", lua_message(&e)))
}

fn export(lua: &Lua, values: &[(String, OptValue)]) -> mlua::Result<()> {
    let opt: Table = lua.globals().get::<Table>("sysbench")?.get("opt")?;
    super::options::set_values(lua, &opt, values)?;
    Ok(())
}

/// How a script carries out a command, as sysbench looks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// In `sysbench.cmdline.commands`, parallel or not.
    Defined { parallel: bool },
    /// A global function of that name (`prepare()`, `cleanup()`, old-style scripts' others).
    Global,
}

/// Whether the script loaded in `lua` defines the global function `name`.
pub fn has_function(lua: &Lua, name: &str) -> bool {
    matches!(lua.globals().get::<Value>(name), Ok(Value::Function(_)))
}

/// How the script loaded in `lua` carries out `command`, if it does.
pub fn command_kind(lua: &Lua, command: &str) -> Option<CommandKind> {
    let ask = |what: &str| -> bool {
        let f: mlua::Result<Value> = lua
            .load(format!("return sysbench.cmdline.{what}(...)"))
            .call(command.to_string());
        matches!(f, Ok(Value::Boolean(true)))
    };
    if ask("command_defined") {
        return Some(CommandKind::Defined {
            parallel: ask("command_parallel"),
        });
    }
    has_function(lua, command).then_some(CommandKind::Global)
}

/// Runs `f` with the process's standard output going nowhere (both the C library's, which
/// Lua's print uses, and Rust's are flushed first): a state standing for sysbench's global
/// state again loads so, its top-level output already printed once by the probe.
pub fn silently<T>(f: impl FnOnce() -> T) -> T {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let flush = || {
        let _ = std::io::stdout().flush();
        // SAFETY: fflush(NULL) flushes every C stdio stream; no stream is being closed.
        unsafe { libc::fflush(std::ptr::null_mut()) };
    };
    flush();
    // SAFETY: plain descriptor calls on fd 1 and descriptors this function owns.
    let saved = unsafe { libc::dup(1) };
    let null = std::fs::OpenOptions::new().write(true).open("/dev/null");
    let redirected = match &null {
        // SAFETY: as above.
        Ok(n) if saved >= 0 => (unsafe { libc::dup2(n.as_raw_fd(), 1) }) >= 0,
        _ => false,
    };
    let out = f();
    if redirected {
        flush();
        // SAFETY: `saved` is the descriptor dup'ed above.
        unsafe { libc::dup2(saved, 1) };
    }
    if saved >= 0 {
        // SAFETY: as above; closed once.
        unsafe { libc::close(saved) };
    }
    out
}

/// A script command (prepare, cleanup, its own) carried out as `kind` says: on `threads`
/// states at once when the script marks it parallel, else on one (loaded silently: it stands
/// for sysbench's global state, which the probe printed). Its error is the first thread's
/// Lua error (file:line, message, traceback).
pub fn run_command(shared: Arc<Shared>, command: &str, kind: CommandKind, threads: usize) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let (threads, states) = match kind {
            CommandKind::Defined { parallel: true } => {
                let states = (0..threads)
                    .map(|tid| api::new_state(&shared, tid).map_err(|e| anyhow!(e)))
                    .collect::<Result<Vec<_>>>()?;
                (threads, states)
            }
            _ => (
                1,
                vec![silently(|| api::new_state(&shared, 0)).map_err(|e| anyhow!(e))?],
            ),
        };
        debug_assert_eq!(states.len(), threads);
        let mut tasks = Vec::new();
        for lua in states {
            let command = command.to_string();
            tasks.push(tokio::task::spawn_local(async move {
                let r = if kind == CommandKind::Global {
                    let f: mlua::Function = lua.globals().get(command.as_str())?;
                    super::suspend::call(&lua, &f, ()).await
                } else {
                    let f: mlua::Function = lua
                        .load("return function(name) return sysbench.cmdline.call_command(name) end")
                        .eval()?;
                    super::suspend::call(&lua, &f, command.clone()).await
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
            Some(e) => Err(anyhow!("{e}")),
            None => Ok(()),
        }
    })
}

/// What a report hook's `stat` table is made of.
pub struct Stat<'a> {
    /// Threads still running (0 in the cumulative report: they have all finished).
    pub threads: usize,
    /// Seconds the stats cover.
    pub interval_s: f64,
    /// Seconds since the measurement began.
    pub total_s: f64,
    /// The engine's counts and latencies over `interval_s`.
    pub stats: &'a Stats,
    /// The cumulative report: `latency_min`, `_avg`, `_max` and `_sum` too, as sysbench's.
    pub cumulative: bool,
}

/// The script's report hook `name` (`report_intermediate`, `report_cumulative`), if it sets one.
pub fn report_hook(lua: &Lua, name: &str) -> Option<mlua::Function> {
    let hooks: Table = lua.globals().get::<Table>("sysbench").ok()?.get("hooks").ok()?;
    hooks.get::<mlua::Function>(name).ok()
}

/// Calls a report hook with sysbench's stat fields (`latency_pct` at `percentile`), as
/// sysbench does: what it prints goes straight out; a failing hook is said on stderr.
pub fn call_report(lua: &Lua, hook: &mlua::Function, s: &Stat<'_>, percentile: f64) {
    let call = || -> mlua::Result<()> {
        let t = lua.create_table()?;
        let q = s.stats.queries;
        let h = &s.stats.response;
        let secs = |us: f64| if h.is_empty() { 0.0 } else { us / 1e6 };
        t.set("threads_running", s.threads)?;
        t.set("time_interval", s.interval_s.max(1e-9))?;
        t.set("time_total", s.total_s)?;
        t.set("latency_pct", secs(h.value_at_quantile(percentile / 100.0) as f64))?;
        t.set("events", s.stats.transactions)?;
        t.set("reads", q[0])?;
        t.set("writes", q[1])?;
        t.set("other", q[2])?;
        t.set("errors", s.stats.total_errors())?;
        t.set("reconnects", s.stats.reconnects)?;
        if s.cumulative {
            t.set("latency_min", secs(h.min() as f64))?;
            t.set("latency_max", secs(h.max() as f64))?;
            t.set("latency_avg", secs(h.mean()))?;
            t.set("latency_sum", secs(h.mean() * h.len() as f64))?;
        } else {
            t.set("queue_length", 0)?;
            t.set("concurrency", s.threads)?;
        }
        hook.call::<()>(t)
    };
    if let Err(e) = call() {
        eprintln!("FATAL: the script's report hook failed: {}", lua_message(&e));
    }
}

/// A span of the run as a cumulative report covers it: the whole measurement, or the part of
/// it since the last checkpoint ([`super::checkpoints`]).
pub struct Span<'a> {
    /// Its counts and latencies, the statements and reconnects outside events added.
    pub stats: &'a Stats,
    /// Threads still running (0 at the end).
    pub threads: usize,
    /// Measured seconds since the start (sysbench's `total time`).
    pub total_s: f64,
    /// The seconds the span covers.
    pub interval_s: f64,
    /// Each connection's events and the time they took in the span.
    pub per_connection: &'a [ConnectionTally],
}

/// One cumulative report as sysbench prints it: the script's `report_cumulative` hook when
/// it sets one (called in `lua`, a state that loaded the script), else, with
/// `print_default`, sysbench's default report ([`report::cumulative`]).
pub fn print_cumulative(lua: Option<&Lua>, shared: &Shared, span: &Span<'_>, percentile: f64, print_default: bool) {
    if let Some((lua, f)) = lua.and_then(|l| report_hook(l, "report_cumulative").map(|f| (l, f))) {
        let stat = Stat {
            threads: span.threads,
            interval_s: span.interval_s,
            total_s: span.total_s,
            stats: span.stats,
            cumulative: true,
        };
        call_report(lua, &f, &stat, percentile);
    } else if print_default {
        print!(
            "{}",
            report::cumulative(&report::Cumulative {
                total_s: span.total_s,
                interval_s: span.interval_s,
                stats: span.stats,
                percentile,
                sql: shared.connected.load(Ordering::Relaxed),
                per_connection: span.per_connection,
            })
        );
    }
}

/// The main state of a measured `run`: sysbench's global state, where `init()` and `done()`
/// run and the cumulative report hook is called (with `sysbench.tid` one past the workers').
pub struct MainState {
    /// `--report-checkpoints`' reports, when given ([`MainState::report_checkpoints`]).
    checkpoints: Option<Rc<RefCell<Checkpoints>>>,
    // Dropped in this order: the state before the runtime its connections were made on.
    lua: Lua,
    local: tokio::task::LocalSet,
    rt: tokio::runtime::Runtime,
    script: String,
}

impl MainState {
    /// Loads the script in the main state, silently (the probe printed its top level), and
    /// runs its `init()`.
    pub fn init(shared: &Arc<Shared>, threads: usize) -> Result<MainState> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let local = tokio::task::LocalSet::new();
        let script = shared.script.display().to_string();
        let lua = silently(|| api::new_state(shared, threads)).map_err(|e| anyhow!(e))?;
        local
            .block_on(&rt, api::call_global(&lua, "init", ()))
            .map_err(|e| anyhow!("{script}: init(): {}", lua_message(&e)))?;
        api::clear_log(&lua);
        Ok(MainState {
            checkpoints: None,
            lua,
            local,
            rt,
            script,
        })
    }

    /// Sets up `--report-checkpoints` (`at`: seconds, sorted): the script's
    /// `report_cumulative` hook, when it sets one, called in a state of its own (sysbench's
    /// checkpoint thread, loaded here whether or not the script sets the hook, printing its
    /// top level as sysbench's does). The run hands its intervals to
    /// [`MainState::each_interval`].
    pub fn report_checkpoints(
        &mut self,
        shared: &Arc<Shared>,
        threads: usize,
        at: Vec<u64>,
        report_interval: f64,
        percentile: f64,
        print_default: bool,
    ) -> Result<()> {
        if at.is_empty() {
            return Ok(());
        }
        let lua = api::new_state(shared, threads).map_err(|e| anyhow!(e))?;
        self.checkpoints = Some(Rc::new(RefCell::new(Checkpoints::new(
            shared.clone(),
            lua,
            at,
            report_interval,
            percentile,
            print_default,
        ))));
        Ok(())
    }

    /// What the run does with each stored interval: counts it towards the next checkpoint
    /// and prints the checkpoint it reaches. `None`: no checkpoints.
    pub fn each_interval(&self) -> Option<dbperf_engine::EachInterval> {
        let cp = self.checkpoints.clone()?;
        Some(Box::new(move |r: &IntervalReport<'_>| cp.borrow_mut().interval(r)))
    }

    /// The run's live line: with `interval_s` (`--report-interval`), the script's
    /// `report_intermediate` hook, called in a state of its own (sysbench's reporting thread,
    /// loaded here whether or not the script sets the hook, printing its top level as
    /// sysbench's does), or else, with `print_default` (`--verbosity` 3 and more), sysbench's
    /// default line ([`report::intermediate`]); without it, nothing (dbperf still stores every
    /// interval).
    /// The hook's state closes with the line (report_json's closing bracket). A last interval
    /// cut short by the run's end is not reported, as sysbench does not.
    pub fn live_line(
        &self,
        shared: &Arc<Shared>,
        threads: usize,
        percentile: f64,
        interval_s: f64,
        print_default: bool,
    ) -> Result<LiveLine> {
        if interval_s <= 0.0 {
            return Ok(LiveLine::Custom(Box::new(|_| String::new())));
        }
        // A checkpoint reached in the interval the line ends is printed after it.
        let checkpoints = self.checkpoints.clone();
        let after = move || {
            if let Some(cp) = &checkpoints {
                cp.borrow_mut().flush();
            }
        };
        let cut_short = move |r: &IntervalReport<'_>| r.last && r.len_s() < interval_s * 0.9;
        let lua = api::new_state(shared, threads).map_err(|e| anyhow!(e))?;
        let hook = report_hook(&lua, "report_intermediate").map(|h| (lua, h));
        let Some((lua, hook)) = hook else {
            let shared = shared.clone();
            return Ok(LiveLine::Custom(Box::new(move |r: &IntervalReport<'_>| {
                if cut_short(r) || !print_default {
                    after();
                    return String::new();
                }
                print!(
                    "{}",
                    report::intermediate(&report::Interval {
                        total_s: r.end_s,
                        interval_s: r.len_s(),
                        threads: r.connections,
                        stats: r.stats,
                        percentile,
                        sql: shared.connected.load(Ordering::Relaxed),
                    })
                );
                after();
                String::new()
            })));
        };
        Ok(LiveLine::Custom(Box::new(move |r: &IntervalReport<'_>| {
            if !cut_short(r) {
                let stat = Stat {
                    threads: r.connections,
                    interval_s: r.len_s(),
                    total_s: r.end_s,
                    stats: r.stats,
                    cumulative: false,
                };
                call_report(&lua, &hook, &stat, percentile);
            }
            after();
            String::new()
        })))
    }

    /// After the run: the script's `report_cumulative` hook over the whole measurement (or,
    /// after checkpoints, the part since the last one), or sysbench's default report
    /// ([`report::cumulative`]) when `print_default`. The reconnects counted are the engine's
    /// and the script's own `con:reconnect()` calls; the queries, those of events and those
    /// sent outside them ([`Shared::outside`]). With `histogram` (and `print_default`),
    /// sysbench's `--histogram` comes first (over the whole measurement).
    pub fn report_cumulative(
        &self,
        shared: &Shared,
        outcome: &RunOutcome,
        percentile: f64,
        print_default: bool,
        histogram: bool,
    ) {
        if print_default && histogram {
            print!("{}", report::histogram(&outcome.total.response));
        }
        match &self.checkpoints {
            Some(cp) => cp.borrow_mut().last(&self.lua, outcome),
            None => {
                let mut total = outcome.total.clone();
                Since::start().add_outside(shared, &mut total);
                let span = Span {
                    stats: &total,
                    threads: 0,
                    total_s: outcome.measured_s,
                    interval_s: outcome.measured_s,
                    per_connection: &outcome.per_connection,
                };
                print_cumulative(Some(&self.lua), shared, &span, percentile, print_default);
            }
        }
    }

    /// After the final report: `done()` (a failure is a warning: the run has been measured),
    /// then the state closes; `chatty`: the counters the script bumped are said.
    pub fn done(self, chatty: bool) {
        if let Err(e) = self.local.block_on(&self.rt, api::call_global(&self.lua, "done", ())) {
            eprintln!("warning: {}: done(): {}", self.script, lua_message(&e));
        }
        drop(self);
        if let Some(line) = counters_line().filter(|_| chatty) {
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
        let probe = api::new_state(&Arc::new(shared_probe(&shared)), 0).unwrap();
        let kind = |c: &str| command_kind(&probe, c);
        assert_eq!(kind("wide"), Some(CommandKind::Defined { parallel: true }));
        assert_eq!(kind("narrow"), Some(CommandKind::Defined { parallel: false }));
        assert_eq!(kind("prewarm"), Some(CommandKind::Global));
        assert_eq!(kind("wied"), None);
        run_command(shared.clone(), "wide", kind("wide").unwrap(), 3).unwrap();
        assert_eq!(marks(dir.path()), ["wide.0", "wide.1", "wide.2"]);
        run_command(shared.clone(), "narrow", kind("narrow").unwrap(), 3).unwrap();
        run_command(shared.clone(), "prewarm", kind("prewarm").unwrap(), 3).unwrap();
        assert_eq!(
            marks(dir.path()),
            ["narrow.0", "prewarm.0", "wide.0", "wide.1", "wide.2"]
        );
        let err = run_command(shared.clone(), "refuse", kind("refuse").unwrap(), 2)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "command refuse failed");
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
    fn report_hooks_get_sysbench_stat_fields() {
        let body = r#"
sysbench.hooks.report_cumulative = function(stat)
  seen = string.format("%d threads, %d events, %d reads, %.3f s, max %.3f s", stat.threads_running,
    stat.events, stat.reads, stat.latency_pct, stat.latency_max)
end
function event() end
"#;
        let (_d, shared) = script(body, "run");
        let lua = api::new_state(&shared, 0).unwrap();
        assert!(report_hook(&lua, "report_intermediate").is_none());
        let hook = report_hook(&lua, "report_cumulative").expect("the script sets it");
        let ops = dbperf_engine::OpTable {
            transactions: vec!["event".into()],
            statements: vec![],
        };
        let mut stats = Stats::new(&ops);
        stats.record_txn(0, 2_000_000, 2_000_000, false);
        stats.queries = [7, 0, 0];
        let stat = Stat {
            threads: 0,
            interval_s: 1.0,
            total_s: 1.0,
            stats: &stats,
            cumulative: true,
        };
        call_report(&lua, &hook, &stat, 95.0);
        let seen: String = lua.globals().get("seen").unwrap();
        assert_eq!(seen, "0 threads, 1 events, 7 reads, 0.002 s, max 0.002 s");
    }
}
