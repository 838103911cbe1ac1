//! The script's hot path without mlua's call crossing: the C entry points the prelude calls
//! through LuaJIT's ffi, as sysbench's own API is called, so that LuaJIT compiles a script's
//! loop with them inside. Owns bound parameters ([`ParamBox`]: the script writes them itself
//! through ffi, statements read them here), random numbers from the state's generator, and
//! statements and queries: on a blocking-I/O thread the statement completes inside the call;
//! on an event-loop thread the call leaves it pending and [`super::suspend`] sends it
//! ([`query_async`], [`execute_async`]) while the script's coroutine waits.
//!
//! Nothing here touches the Lua state: an entry point gets the state's context, a statement
//! or a connection as a pointer the prelude was handed when the object was made, and answers
//! with a status; the result lands in the connection's [`FfiResult`], an error in the
//! connection (`con:last_error()`) or, for misuse, in the context (`raw.fast_error()`). A
//! panic is caught here (unwinding into LuaJIT would abort) and becomes such a message.

use std::cell::{RefCell, UnsafeCell};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;

use dbperf_engine::clock::now_ns;
use mlua::{LightUserData, Lua, Table};
use rand::RngExt;
use smallvec::SmallVec;

use super::api::{self, ConnInner, Ctx, ResultSet, StmtCore};
use super::suspend::Pending;
use crate::sysbench::strings::fill_template;
use dbperf_driver::{DbError, Param};

/// A bound parameter as the prelude sees it (`dbperf_param` in its `ffi.cdef`): the script's
/// `param:set()` writes `state` and the value; Rust reads it when a statement runs.
#[repr(C)]
pub struct FfiParam {
    /// 0 NULL, 1 integer (`i`), 2 double (`d`), 3 bytes (`buf`, `len`).
    pub state: i32,
    /// What `bind_create` made it: 1 integer types, 2 FLOAT/DOUBLE, 3 CHAR/VARCHAR.
    pub btype: i32,
    pub len: u32,
    pub cap: u32,
    pub i: i64,
    pub d: f64,
    pub buf: *mut u8,
    /// Its number in the state's parameters (what `stmt:bind_param` passes).
    pub id: i32,
}

/// A parameter and its bytes, owned by the state's context for the state's life (scripts
/// make their parameters once, in thread_init). Rust reads the bytes through its own pointer
/// and capacity, never through what the script could overwrite.
pub struct ParamBox {
    c: UnsafeCell<FfiParam>,
    data: *mut u8,
    cap: usize,
    _storage: Vec<u8>,
}

/// A parameter's value while a statement is sent.
#[derive(Clone, Copy)]
pub enum ParamView<'a> {
    Null,
    Int(i64),
    Double(f64),
    Bytes(&'a [u8]),
}

impl ParamBox {
    /// `stmt:bind_create(btype, max_len)`: sysbench's type codes (1-4 integers, 5-6 FLOAT and
    /// DOUBLE, 11-12 CHAR and VARCHAR).
    pub fn new(btype: i64, max_len: Option<i64>, id: usize) -> Result<Box<ParamBox>, String> {
        let kind = match btype {
            1..=4 => 1,
            5 | 6 => 2,
            11 | 12 => 3,
            other => {
                return Err(format!(
                    "Unsupported argument type: {other} (use sysbench.sql.type INT, BIGINT, DOUBLE, CHAR or VARCHAR)"
                ))
            }
        };
        let cap = if kind == 3 {
            match max_len {
                Some(n) if n > 0 && n <= 1 << 24 => n as usize,
                _ => {
                    return Err(
                        "bind_create(sysbench.sql.type.CHAR/VARCHAR, max_len): max_len (1 to 16777216) is needed"
                            .into(),
                    )
                }
            }
        } else {
            0
        };
        let mut storage = vec![0u8; cap];
        let data = storage.as_mut_ptr();
        Ok(Box::new(ParamBox {
            c: UnsafeCell::new(FfiParam {
                state: 0,
                btype: kind,
                len: 0,
                cap: cap as u32,
                i: 0,
                d: 0.0,
                buf: data,
                id: id as i32,
            }),
            data,
            cap,
            _storage: storage,
        }))
    }

    /// The pointer the prelude casts to `dbperf_param *`.
    pub fn ffi_ptr(&self) -> *mut FfiParam {
        self.c.get()
    }

    /// Its value now.
    pub fn view(&self) -> ParamView<'_> {
        // SAFETY: the script writes the struct only from Lua code, which is not running while
        // Rust reads it (both run on the state's one thread); the bytes are read through the
        // box's own pointer and capacity.
        let p = unsafe { &*self.c.get() };
        match p.state {
            1 => ParamView::Int(p.i),
            2 => ParamView::Double(p.d),
            3 => {
                let n = (p.len as usize).min(self.cap);
                ParamView::Bytes(unsafe { std::slice::from_raw_parts(self.data, n) })
            }
            _ => ParamView::Null,
        }
    }

    /// `param:set_rand_str(fmt)`: the template filled from `rng`, cut at the capacity.
    fn fill(&self, rng: &mut impl rand::Rng, fmt: &[u8]) {
        let n = fmt.len().min(self.cap);
        // SAFETY: as in `view`; the slice is the box's own storage.
        let out = unsafe { std::slice::from_raw_parts_mut(self.data, n) };
        fill_template(rng, &fmt[..n], out);
        let p = unsafe { &mut *self.c.get() };
        p.len = n as u32;
        p.state = 3;
    }
}

/// A connection's last result as the prelude reads it (`dbperf_result`).
#[repr(C)]
#[derive(Default)]
pub struct FfiResult {
    pub nrows: f64,
    pub gen: f64,
    pub nfields: f64,
}

/// What a statement's parameters are bound as: NULL, integers and bytes as they are, doubles
/// as their text (written into `doubles`).
/// Into `out`, not returned: moving a parameter list copies all of its inline space.
pub fn bind_values<'a>(
    vals: impl Iterator<Item = ParamView<'a>> + Clone,
    doubles: &'a mut String,
    out: &mut SmallVec<[Param<'a>; 16]>,
) {
    for v in vals.clone() {
        if let ParamView::Double(d) = v {
            doubles.push_str(&api::lua_number(d));
            doubles.push('\0');
        }
    }
    let doubles: &'a String = doubles;
    let mut parts = doubles.split('\0');
    out.extend(vals.map(|v| match v {
        ParamView::Null => Param::Null,
        ParamView::Int(i) => Param::Int(i),
        ParamView::Double(_) => Param::Bytes(parts.next().unwrap_or("").as_bytes()),
        ParamView::Bytes(b) => Param::Bytes(b),
    }));
}

/// Status of an entry point: done, an SQL error (in the connection), misuse (in the context),
/// or left pending (the prelude yields; the status comes with the resume).
const OK: i32 = 0;
const SQL_ERROR: i32 = 1;
const MISUSE: i32 = 2;
const SUSPENDED: i32 = 3;

/// Runs `f`, turning a panic into a misuse message (unwinding must not reach LuaJIT).
fn guarded(ctx: &Ctx, f: impl FnOnce() -> Result<i32, String>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(status)) => status,
        Ok(Err(message)) => {
            ctx.set_fast_error(message);
            MISUSE
        }
        Err(p) => {
            let what = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            ctx.set_fast_error(format!("dbperf internal error in a statement: {what}"));
            MISUSE
        }
    }
}

/// `stmt:execute()`.
extern "C" fn execute(ctx: *const Ctx, stmt: *mut StmtCore) -> i32 {
    // SAFETY: the prelude passes the pointers it was handed with the state and the statement,
    // which live as long as the Lua objects that hold them; this thread is the state's.
    let (c, core) = unsafe { (&*ctx, &mut *stmt) };
    if !c.blocking.get() {
        *c.pending.borrow_mut() = Some(Pending::Execute { ctx, stmt });
        return SUSPENDED;
    }
    guarded(c, || execute_now(c, core))
}

fn execute_now(c: &Ctx, core: &mut StmtCore) -> Result<i32, String> {
    let arena = c.params.try_borrow().map_err(|e| e.to_string())?;
    let mut doubles = String::new();
    let mut params = SmallVec::new();
    bind_values(core.params.iter().map(|&i| arena[i].view()), &mut doubles, &mut params);
    // The connection stays borrowed for the whole statement (nothing else runs on this
    // thread meanwhile), its session used in place.
    let mut conn = core.conn.try_borrow_mut().map_err(|e| e.to_string())?;
    let conn = &mut *conn;
    let (kind, read, id) = api::slot(conn, core.index, &mut core.buf, &params)?;
    let Some(s) = conn.session.as_mut() else {
        return Ok(failed(conn, api::closed()));
    };
    let started = now_ns();
    let result = api::run_now(
        c,
        pin!(api::send(s, api::statement(id, &params, &core.buf, &core.rows), read)),
    );
    Ok(finish(c, conn, result, kind, read, started))
}

/// `stmt:execute()` on an event-loop thread, once the script's coroutine waits for it.
pub(super) async fn execute_async(c: &Ctx, core: &mut StmtCore) -> i32 {
    // SAFETY: parameters are boxed and kept for the state's life, and the list grows only
    // from Lua code (`bind_create`), which waits for this statement: no borrow of the cell
    // is held across the await, and nothing changes the list meanwhile.
    let arena = unsafe { &*c.params.as_ptr() };
    let mut doubles = String::new();
    let mut params = SmallVec::new();
    bind_values(core.params.iter().map(|&i| arena[i].view()), &mut doubles, &mut params);
    let slot = api::slot(&core.conn.borrow(), core.index, &mut core.buf, &params);
    let (kind, read, id) = match slot {
        Ok(s) => s,
        Err(m) => {
            c.set_fast_error(m);
            return MISUSE;
        }
    };
    let Some(mut s) = api::take_session(&core.conn) else {
        return failed(&mut core.conn.borrow_mut(), api::closed());
    };
    let started = now_ns();
    let result = api::send(&mut s, api::statement(id, &params, &core.buf, &core.rows), read).await;
    if let Err(e) = &result {
        api::after_error(&mut s, e).await;
    }
    api::put_session(&core.conn, s);
    settle(c, &mut core.conn.borrow_mut(), result, kind, read, started)
}

/// `con:query(sql)` on an event-loop thread, once the script's coroutine waits for it.
pub(super) async fn query_async(c: &Ctx, conn: &RefCell<ConnInner>, sql: &[u8]) -> i32 {
    let Ok(sql) = std::str::from_utf8(sql) else {
        c.set_fast_error("con:query(): the query is not UTF-8 text".into());
        return MISUSE;
    };
    let (kind, read) = c.kind_of(sql);
    let Some(mut s) = api::take_session(conn) else {
        return failed(&mut conn.borrow_mut(), api::closed());
    };
    let started = now_ns();
    let result = api::send(&mut s, api::Statement::Text(sql.into()), read).await;
    if let Err(e) = &result {
        api::after_error(&mut s, e).await;
    }
    api::put_session(conn, s);
    settle(c, &mut conn.borrow_mut(), result, kind, read, started)
}

/// `con:query(sql)`.
extern "C" fn query(ctx: *const Ctx, conn: *const RefCell<ConnInner>, sql: *const u8, len: usize) -> i32 {
    // SAFETY: as in `execute`; `sql` is a Lua string the caller holds for the call (and, when
    // left pending, while its coroutine waits).
    let c = unsafe { &*ctx };
    if !c.blocking.get() {
        *c.pending.borrow_mut() = Some(Pending::Query { ctx, conn, sql, len });
        return SUSPENDED;
    }
    let (conn, sql) = unsafe { (&*conn, std::slice::from_raw_parts(sql, len)) };
    guarded(c, || {
        let sql = std::str::from_utf8(sql).map_err(|_| "con:query(): the query is not UTF-8 text".to_string())?;
        let (kind, read) = c.kind_of(sql);
        let mut conn = conn.try_borrow_mut().map_err(|e| e.to_string())?;
        let conn = &mut *conn;
        let Some(s) = conn.session.as_mut() else {
            return Ok(failed(conn, api::closed()));
        };
        let started = now_ns();
        let result = api::run_now(c, pin!(api::send(s, api::Statement::Text(sql.into()), read)));
        Ok(finish(c, conn, result, kind, read, started))
    })
}

/// After a statement: logged and its result published, or its error kept for
/// `con:last_error()`. A statement given up on (`None`) drops its session.
fn finish(
    c: &Ctx,
    conn: &mut ConnInner,
    result: Option<Result<ResultSet, DbError>>,
    kind: u16,
    read: bool,
    started: u64,
) -> i32 {
    let Some(result) = result else {
        conn.session = None;
        return failed(conn, api::gave_up());
    };
    if let (Err(e), Some(s)) = (&result, conn.session.as_mut()) {
        api::run_now(c, pin!(api::after_error(s, e)));
    }
    settle(c, conn, result, kind, read, started)
}

/// A statement's outcome, the connection's error handling done: logged and its result
/// published, or its error kept for `con:last_error()`.
fn settle(
    c: &Ctx,
    conn: &mut ConnInner,
    result: Result<ResultSet, DbError>,
    kind: u16,
    read: bool,
    started: u64,
) -> i32 {
    match result {
        Ok(rs) => {
            c.record(kind, started, api::class_of(read, &rs));
            api::publish(conn, rs);
            OK
        }
        Err(e) => failed(conn, e),
    }
}

fn failed(conn: &mut ConnInner, e: DbError) -> i32 {
    conn.err = Some(e);
    SQL_ERROR
}

/// `sysbench.rand.*` (0 uniform, 1 default, 2 gaussian, 3 special, 4 pareto, 5 zipfian) over
/// `[a, b]`; the prelude has checked the range and that the distribution exists.
extern "C" fn rand(ctx: *const Ctx, which: i32, a: u32, b: u32) -> u32 {
    // SAFETY: as in `execute`.
    let c = unsafe { &*ctx };
    let (a, b) = (a.min(b), a.max(b));
    let Ok(mut rng) = c.rng.try_borrow_mut() else {
        return a;
    };
    match usize::try_from(which).ok().and_then(|w| c.dists.get(w)) {
        Some(Some(d)) => d.sample(&mut *rng, a, b),
        _ => rng.random_range(a..=b),
    }
}

/// `param:set_rand_str(fmt)` of parameter `id`.
extern "C" fn rand_str(ctx: *const Ctx, id: i32, fmt: *const u8, len: usize) -> i32 {
    // SAFETY: as in `query`.
    let (c, fmt) = unsafe { (&*ctx, std::slice::from_raw_parts(fmt, len)) };
    guarded(c, || {
        let params = c.params.try_borrow().map_err(|e| e.to_string())?;
        let p = usize::try_from(id)
            .ok()
            .and_then(|i| params.get(i))
            .ok_or("param:set_rand_str(): not a parameter from stmt:bind_create()")?;
        let mut rng = c.rng.try_borrow_mut().map_err(|e| e.to_string())?;
        p.fill(&mut *rng, fmt);
        Ok(OK)
    })
}

fn ptr<T>(p: *const T) -> LightUserData {
    LightUserData(p as *mut c_void)
}

/// The table the prelude takes its entry points from: `ctx` (this state's context), and
/// `execute`, `query`, `rand`, `rand_str` (function pointers for `ffi.cast`).
pub fn entry_points(lua: &Lua, ctx: *const Ctx) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("ctx", ptr(ctx))?;
    t.set("execute", ptr(execute as *const ()))?;
    t.set("query", ptr(query as *const ()))?;
    t.set("rand", ptr(rand as *const ()))?;
    t.set("rand_str", ptr(rand_str as *const ()))?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_is_read_within_its_own_capacity_whatever_the_script_wrote() {
        let p = ParamBox::new(12, Some(4), 0).unwrap();
        // SAFETY: the test is the only user of the struct, as the script would be.
        unsafe {
            let f = &mut *p.ffi_ptr();
            assert_eq!((f.btype, f.cap, f.state), (3, 4, 0));
            std::ptr::copy_nonoverlapping(b"abcd".as_ptr(), f.buf, 4);
            f.len = 1000;
            f.state = 3;
        }
        assert!(matches!(p.view(), ParamView::Bytes(b"abcd")));
        unsafe { (*p.ffi_ptr()).state = 0 };
        assert!(matches!(p.view(), ParamView::Null));
    }

    #[test]
    fn bind_create_refuses_unknown_types_and_strings_without_a_length() {
        assert!(ParamBox::new(7, None, 0)
            .err()
            .unwrap()
            .contains("Unsupported argument type: 7"));
        assert!(ParamBox::new(11, None, 0).err().unwrap().contains("max_len"));
        assert!(ParamBox::new(11, Some(0), 0).is_err());
        let p = ParamBox::new(4, None, 3).unwrap();
        assert_eq!(unsafe { ((*p.ffi_ptr()).btype, (*p.ffi_ptr()).id) }, (1, 3));
    }

    #[test]
    fn values_bind_as_null_integers_bytes_and_doubles_as_text() {
        let mut doubles = String::new();
        let vals = [
            ParamView::Int(7),
            ParamView::Null,
            ParamView::Double(1.5),
            ParamView::Bytes(b"x"),
            ParamView::Double(2.0),
        ];
        let mut params = SmallVec::new();
        bind_values(vals.iter().copied(), &mut doubles, &mut params);
        assert_eq!(
            params.as_slice(),
            &[
                Param::Int(7),
                Param::Null,
                Param::Bytes(b"1.5"),
                Param::Bytes(b"x"),
                Param::Bytes(b"2")
            ]
        );
    }
}
