//! How a Lua state on an event-loop thread waits for the server. A primitive leaves what it
//! needs in the state's context ([`Pending`]) and the prelude yields the state's coroutine
//! with no values; the driver here does the work and resumes the coroutine with its status.
//! (mlua's async callbacks would box a future per statement that lives until Lua's garbage
//! collector finds its handle: about 160 KB of dead futures per state at 1,024 connections.)
//!
//! Owns [`Pending`], [`perform`], [`call`] (any call that may use the database: thread_init,
//! thread_done, hooks, a script's commands) and [`EventLoop`] (the hot path: one coroutine
//! per connection running event after event, resumed through LuaJIT's C API).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;

use mlua::thread::ThreadStatus;
use mlua::{ffi, Function, Lua, MultiValue, Thread, Value};

use super::api::{ctx, ConnInner, Ctx, StmtCore};
use super::fast;

/// Makes a primitive's future; its answer is what `raw.take_answer()` gives the prelude.
pub(super) type MakeFuture =
    Box<dyn for<'a> FnOnce(&'a Lua) -> Pin<Box<dyn Future<Output = mlua::Result<MultiValue>> + 'a>>>;

/// The work a suspended coroutine waits for.
pub(super) enum Pending {
    /// `con:query(sql)` through ffi. `sql` is the bytes of a Lua string that the suspended
    /// query function holds in a local, so they stay put until it is resumed.
    Query {
        ctx: *const Ctx,
        conn: *const RefCell<ConnInner>,
        sql: *const u8,
        len: usize,
    },
    /// `stmt:execute()` through ffi.
    Execute { ctx: *const Ctx, stmt: *mut StmtCore },
    /// Any other primitive: connect, prepare, bulk inserts, reconnect.
    Other(MakeFuture),
}

/// Leaves `make`'s work pending in `lua`'s context (the `*_start` primitives).
pub(super) fn start(lua: &Lua, make: MakeFuture) {
    *ctx(lua).pending.borrow_mut() = Some(Pending::Other(make));
}

/// Does the work the state's coroutine yielded for and answers with its status (an ffi
/// entry point's, or 0 with the answer kept for `raw.take_answer()`); `None` when it yielded
/// for nothing of dbperf's (a script's own `coroutine.yield` outside a coroutine of its own).
pub(super) async fn perform(lua: &Lua) -> Option<i32> {
    let pending = ctx(lua).pending.borrow_mut().take()?;
    Some(match pending {
        Pending::Query { ctx, conn, sql, len } => {
            // SAFETY: the context lives as long as the state; the connection and the SQL
            // string are held by the suspended query function, and nothing else of this
            // state runs until it is resumed (after this).
            let (c, conn, sql) = unsafe { (&*ctx, &*conn, std::slice::from_raw_parts(sql, len)) };
            fast::query_async(c, conn, sql).await
        }
        Pending::Execute { ctx, stmt } => {
            // SAFETY: as above; the statement is held by the suspended execute method.
            let (c, core) = unsafe { (&*ctx, &mut *stmt) };
            fast::execute_async(c, core).await
        }
        Pending::Other(make) => {
            let answer = make(lua).await;
            *ctx(lua).answer.borrow_mut() = Some(answer);
            0
        }
    })
}

fn stray_yield() -> mlua::Error {
    mlua::Error::runtime("coroutine.yield() outside a coroutine of the script's own")
}

/// Calls `f` in a coroutine of its own, doing the work it waits for, until it returns: its
/// first result.
pub async fn call(lua: &Lua, f: &Function, args: impl mlua::IntoLuaMulti) -> mlua::Result<Value> {
    let t = lua.create_thread(f.clone())?;
    let mut out: MultiValue = t.resume(args)?;
    while t.status() == ThreadStatus::Resumable {
        let status = perform(lua).await.ok_or_else(stray_yield)?;
        out = t.resume(status)?;
    }
    Ok(out.into_iter().next().unwrap_or(Value::Nil))
}

/// A connection's events on an event-loop thread: the prelude's `event_loop(tid)` in one
/// coroutine for the run, resumed once per event and once per statement.
pub(super) struct EventLoop {
    function: Function,
    thread: Option<Thread>,
    /// A statement's work was under way when the last event was dropped (the run stopped
    /// mid-await): the coroutine waits for an answer that will never come, so it is replaced.
    waiting: bool,
}

impl EventLoop {
    pub(super) fn new(function: Function) -> EventLoop {
        EventLoop {
            function,
            thread: None,
            waiting: false,
        }
    }

    /// Runs one event: `run_event(tid)`'s code.
    pub(super) async fn event(&mut self, lua: &Lua, tid: usize) -> Result<u8, mlua::Error> {
        if self.waiting {
            self.thread = None;
            self.waiting = false;
        }
        let mut nargs = 0;
        if self.thread.is_none() {
            self.thread = Some(lua.create_thread(self.function.clone())?);
            nargs = 1;
        }
        let l = self.thread.as_ref().map(Thread::state).expect("made above");
        // SAFETY: `l` is this loop's coroutine, alive while `self.thread` holds it, resumed
        // only here, on the state's only OS thread. A fresh coroutine's stack holds
        // `event_loop` (mlua put it there) and gets `tid`; a suspended one gets the status
        // it waits for (one value; its stack emptied first). A yield with one value is an
        // event's end, with none a wait; any other status ends the coroutine (an error
        // escaped `run_event`), which is replaced at the next event.
        unsafe {
            if nargs == 1 {
                ffi::lua_pushinteger(l, tid as ffi::lua_Integer);
            }
            loop {
                let status = ffi::lua_resume_(l, nargs);
                if status == ffi::LUA_YIELD && ffi::lua_gettop(l) == 1 {
                    let code = ffi::lua_tointeger(l, -1);
                    ffi::lua_settop(l, 0);
                    return Ok(code as u8);
                }
                if status == ffi::LUA_YIELD && ffi::lua_gettop(l) == 0 {
                    self.waiting = true;
                    let status = perform(lua).await;
                    self.waiting = false;
                    let Some(status) = status else {
                        self.thread = None;
                        return Err(stray_yield());
                    };
                    ffi::lua_pushinteger(l, status as ffi::lua_Integer);
                    nargs = 1;
                    continue;
                }
                let message = match status {
                    ffi::LUA_YIELD => "event() yielded values of its own outside a coroutine of its own".to_string(),
                    _ => {
                        let mut len = 0;
                        let p = ffi::lua_tolstring(l, -1, &mut len);
                        match p.is_null() {
                            true => format!("event() failed (Lua status {status})"),
                            false => {
                                String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
                            }
                        }
                    }
                };
                ffi::lua_settop(l, 0);
                self.thread = None;
                return Err(mlua::Error::runtime(message));
            }
        }
    }
}
