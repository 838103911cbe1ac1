//! The engine's side of a Lua script: [`LuaWorkload`] makes one LuaJIT state per connection
//! (sysbench's thread), runs its `thread_init` when the worker connects, one `event` per
//! transaction and `thread_done` at the end. An ignorable SQL error ends the event as a
//! retryable error of its class (a lost connection reconnects every connection the state
//! opened and prepares their statements again); the script's `before_restart_event` hook runs
//! before the event runs again. Any other error stops the run with the script's `file:line`.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use dbperf_engine::{ErrorClass, OpTable, StatementLog, StatementNames, TxnDone, TxnError, Worker, Workload};
use mlua::{Function, Lua, Table, Thread, Value};

use super::api::{self, lua_message, Shared};
use super::suspend::{self, EventLoop};

/// A script's run.
pub struct LuaWorkload {
    shared: Arc<Shared>,
    name: String,
}

impl LuaWorkload {
    /// The run of `shared.script`, its transactions named `name`.
    pub fn new(shared: Arc<Shared>, name: String) -> LuaWorkload {
        LuaWorkload { shared, name }
    }
}

/// How a state's events run.
enum Events {
    /// On a blocking-I/O thread: a Lua thread whose stack holds `run_event`, which
    /// [`run_event_raw`] calls (every primitive completes inside its call).
    Blocking(Thread),
    /// On an event-loop thread: the coroutine that runs the events and waits for the server.
    Loop(EventLoop),
}

/// One connection's state.
pub struct LuaWorker {
    lua: Lua,
    /// The prelude's table (`sysbench.__dbperf`): `run_event`'s failure is left there.
    raw: Table,
    /// The state's statement log.
    log: Rc<RefCell<Vec<api::Logged>>>,
    tid: usize,
    /// This is a blocking-I/O thread (see the prelude's `*_now` primitives).
    blocking: bool,
    events: Events,
    done: bool,
    /// The error description of the last ignorable error: the next attempt runs the script's
    /// `before_restart_event(err)` first.
    restart: Option<Table>,
}

fn fatal(message: String) -> TxnError {
    TxnError::new(ErrorClass::Fatal, None, message)
}

impl Workload for LuaWorkload {
    type Worker = LuaWorker;

    fn ops(&self) -> OpTable {
        OpTable {
            transactions: vec![self.name.clone()],
            statements: Vec::new(),
        }
    }

    async fn connect(&self, worker: usize) -> Result<LuaWorker, TxnError> {
        let lua = api::new_worker_state(&self.shared, worker).map_err(fatal)?;
        let script = self.shared.script.display().to_string();
        let defines = |name: &str| matches!(lua.globals().get::<Value>(name), Ok(Value::Function(_)));
        if !defines("event") && !defines("thread_run") {
            return Err(fatal(format!(
                "{script} defines no event() function, so it has nothing to run (sysbench calls event() once per transaction, or the script's own thread_run() once per thread)"
            )));
        }
        let blocking = dbperf_engine::blocking_io();
        let raw: Table = lua
            .globals()
            .get::<Table>("sysbench")
            .and_then(|s| s.get::<Table>("__dbperf"))
            .map_err(|e| fatal(e.to_string()))?;
        let events = match blocking {
            true => {
                let runner: Function = raw
                    .get::<Function>("runner")
                    .and_then(|choose| choose.call(()))
                    .map_err(|e| fatal(e.to_string()))?;
                Events::Blocking(lua.create_thread(runner).map_err(|e| fatal(e.to_string()))?)
            }
            false => Events::Loop(EventLoop::new(raw.get("event_loop").map_err(|e| fatal(e.to_string()))?)),
        };
        api::call_global(&lua, "thread_init", worker)
            .await
            .map_err(|e| fatal(format!("thread_init: {}", lua_message(&e))))?;
        api::count_outside_events(&lua);
        let log = api::log_of(&lua);
        Ok(LuaWorker {
            lua,
            raw,
            log,
            tid: worker,
            blocking,
            events,
            done: false,
            restart: None,
        })
    }

    fn statement_names(&self) -> Option<Arc<StatementNames>> {
        Some(self.shared.names.clone())
    }
}

/// `run_event(tid)` called on `t` (whose stack holds just `run_event`) through LuaJIT's C API:
/// one event costs a `lua_pcall` and no conversions, where mlua's call would move the function
/// and the results between stacks. A plain call: right for a blocking-I/O thread, whose events
/// complete inside the call.
fn run_event_raw(t: &Thread, tid: usize) -> Result<u8, mlua::Error> {
    use mlua::ffi;
    let l = t.state();
    // SAFETY: `t` is a thread of this worker's state, alive while `t` is, used by nothing
    // else, never resumed (so not suspended), on this state's only OS thread. Its stack holds
    // `run_event` at 1 (lua_newthread's stack has room for the three values pushed here); the
    // call is protected, so a Lua error stops at lua_pcall; the stack is cut back to 1 after.
    unsafe {
        ffi::lua_pushvalue(l, 1);
        ffi::lua_pushinteger(l, tid as ffi::lua_Integer);
        let status = ffi::lua_pcall(l, 1, 1, 0);
        let r = if status == 0 {
            Ok(ffi::lua_tointeger(l, -1) as u8)
        } else {
            let mut len = 0;
            let p = ffi::lua_tolstring(l, -1, &mut len);
            let message = match p.is_null() {
                true => format!("event() failed (Lua status {status})"),
                false => String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned(),
            };
            Err(mlua::Error::runtime(message))
        };
        ffi::lua_settop(l, 1);
        r
    }
}

/// The engine's class of an error description's `dbperf_class`.
fn class_of(name: &str) -> ErrorClass {
    ErrorClass::ALL
        .into_iter()
        .find(|c| c.name() == name)
        .unwrap_or(ErrorClass::Ignored)
}

impl Worker for LuaWorker {
    async fn execute(&mut self, log: &mut StatementLog) -> Result<TxnDone, TxnError> {
        if let Some(err) = self.restart.take() {
            let hook = self
                .lua
                .globals()
                .get::<Table>("sysbench")
                .and_then(|s| s.get::<Table>("hooks"))
                .and_then(|h| h.get::<Value>("before_restart_event"));
            if let Ok(Value::Function(f)) = hook {
                let r = if self.blocking {
                    f.call::<Value>(err)
                } else {
                    suspend::call(&self.lua, &f, err).await
                };
                api::take_log(&self.log, log);
                if let Err(e) = r {
                    return Err(fatal(format!("before_restart_event: {}", lua_message(&e))));
                }
            }
        }
        // On a blocking-I/O thread every primitive completes inside its call, so the event
        // is a plain call (no coroutine to make and resume).
        let r = match &mut self.events {
            Events::Blocking(t) => run_event_raw(t, self.tid),
            Events::Loop(l) => l.event(&self.lua, self.tid).await,
        };
        api::take_log(&self.log, log);
        // Taken, not read: a later failure must not find this one's description.
        let failure = || {
            let v = self.raw.get::<Value>("failure");
            let _ = self.raw.set("failure", Value::Nil);
            v
        };
        match r {
            Ok(0) => Ok(TxnDone::committed(0)),
            Ok(1) => {
                self.done = true;
                Ok(TxnDone::committed(0))
            }
            Ok(2) => {
                let Ok(Value::Table(err)) = failure() else {
                    return Err(fatal("event() failed without its error description".into()));
                };
                let class = class_of(&err.get::<String>("dbperf_class").unwrap_or_default());
                let errno: f64 = err.get("sql_errno").unwrap_or(0.0);
                let msg: String = err.get("sql_errmsg").unwrap_or_default();
                self.restart = Some(err);
                Err(TxnError::new(
                    if class == ErrorClass::Fatal {
                        ErrorClass::Ignored
                    } else {
                        class
                    },
                    (errno > 0.0).then_some(errno as u32),
                    msg,
                ))
            }
            Ok(_) => Err(fatal(match failure() {
                Ok(Value::String(msg)) => msg.to_string_lossy(),
                other => format!("event() failed with {other:?}"),
            })),
            Err(e) => Err(fatal(lua_message(&e))),
        }
    }

    async fn reconnect(&mut self) -> Result<(), TxnError> {
        api::reconnect_all(&self.lua)
            .await
            .map_err(|e| TxnError::new(e.class, e.code, e.message))
    }

    fn finished(&self) -> bool {
        self.done
    }

    async fn finish(&mut self) {
        if let Err(e) = api::call_global(&self.lua, "thread_done", self.tid).await {
            eprintln!("warning: thread_done() of thread {}: {}", self.tid, lua_message(&e));
        }
        api::count_outside_events(&self.lua);
    }
}
