//! The engine's side of a Lua script: [`LuaWorkload`] makes one LuaJIT state per connection
//! (sysbench's thread), runs its `thread_init` when the worker connects, one `event` per
//! transaction and `thread_done` at the end. An ignorable SQL error ends the event as a
//! retryable error of its class (a lost connection reconnects every connection the state
//! opened and prepares their statements again); the script's `before_restart_event` hook runs
//! before the event runs again. Any other error stops the run with the script's `file:line`.

use std::sync::Arc;

use dbperf_engine::{ErrorClass, OpTable, StatementLog, StatementNames, TxnDone, TxnError, Worker, Workload};
use mlua::{Function, Lua, Table, Value};

use super::api::{self, lua_message, Shared};

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

/// One connection's state.
pub struct LuaWorker {
    lua: Lua,
    runner: Function,
    tid: usize,
    /// This is a blocking-I/O thread (see the prelude's `*_now` primitives).
    blocking: bool,
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
        let lua = api::new_state(&self.shared, worker).map_err(fatal)?;
        let script = self.shared.script.display().to_string();
        if !matches!(lua.globals().get::<Value>("event"), Ok(Value::Function(_))) {
            return Err(fatal(format!(
                "{script} defines no event() function, so it has nothing to run (sysbench calls event() once per transaction)"
            )));
        }
        let runner: Function = lua
            .globals()
            .get::<Table>("sysbench")
            .and_then(|s| s.get::<Table>("__dbperf"))
            .and_then(|r| r.get("run_event"))
            .map_err(|e| fatal(e.to_string()))?;
        api::call_global(&lua, "thread_init", worker)
            .await
            .map_err(|e| fatal(format!("thread_init: {}", lua_message(&e))))?;
        api::clear_log(&lua);
        Ok(LuaWorker {
            lua,
            runner,
            tid: worker,
            blocking: dbperf_engine::blocking_io(),
            done: false,
            restart: None,
        })
    }

    fn statement_names(&self) -> Option<Arc<StatementNames>> {
        Some(self.shared.names.clone())
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
                    api::call(&f, err).await
                };
                api::take_log(&self.lua, log);
                if let Err(e) = r {
                    return Err(fatal(format!("before_restart_event: {}", lua_message(&e))));
                }
            }
        }
        // On a blocking-I/O thread every primitive completes inside its call, so the event
        // is a plain call (no coroutine to make and resume).
        let r = if self.blocking {
            self.runner.call::<(Value, Value)>(self.tid)
        } else {
            self.runner.call_async::<(Value, Value)>(self.tid).await
        };
        api::take_log(&self.lua, log);
        match r {
            Ok((Value::Boolean(true), ret)) => {
                // sysbench: an event that returns anything but nil or false ends its thread.
                if !matches!(ret, Value::Nil | Value::Boolean(false)) {
                    self.done = true;
                }
                Ok(TxnDone::committed(0))
            }
            Ok((Value::Boolean(false), Value::Table(err))) => {
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
            Ok((_, Value::String(msg))) => Err(fatal(msg.to_string_lossy())),
            Ok((_, other)) => Err(fatal(format!("event() failed with {other:?}"))),
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
        api::clear_log(&self.lua);
    }
}
