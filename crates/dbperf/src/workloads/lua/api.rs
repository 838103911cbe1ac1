//! The Rust half of dbperf's sysbench API: one Lua state per sysbench thread ([`new_state`]),
//! with the `sysbench` table (`tid`, `opt`, `cmdline`, `version`), the primitives the Lua
//! half (`prelude.lua`) builds the public API on — connections, prepared statements, bound
//! parameters, result sets, bulk inserts, random numbers — and the statement log the worker
//! hands to the engine after each event.
//!
//! Statements are timed here: each `con:query`, `stmt:execute` and bulk-insert flush logs its
//! service time under its name ([`Naming`]) and its sysbench counter (read when rows came
//! back, write when rows changed, other otherwise). Connections are dbperf's lean wire
//! sessions for both server families; `?` placeholders work on PostgreSQL as sysbench's pgsql
//! driver makes them.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use dbperf_engine::clock::now_ns;
use dbperf_engine::{ErrorClass, QueryClass, StatementNames};
use mlua::{AnyUserData, Function, Lua, LuaOptions, StdLib, Table, UserData, UserDataMethods, UserDataRefMut, Value};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::options::OptValue;
use super::Naming;
use crate::driver::any::AnySession;
use crate::driver::mysql::IgnoreErrors;
use crate::driver::target::Scheme;
use crate::driver::{DbError, Param, Rows, Session, StmtId, Target, TextStatement, ER_UNSUPPORTED_PS};
use crate::workloads::pgbench::lang::parse::statement_name;
use crate::workloads::sysbench::event::UniqueIds;
use crate::workloads::sysbench::rand::{Distribution, RandParams, RandType};
use crate::workloads::sysbench::strings::fill_template;

/// The Lua half of the API.
const PRELUDE: &str = include_str!("prelude.lua");

/// sysbench's `BULK_PACKET_SIZE`: a bulk insert is sent when its text would pass this.
const BULK_PACKET: usize = 512 * 1024;

/// What every state of a run shares.
pub struct Shared {
    /// The script's path (for `sysbench.cmdline.script_path`, `require` and errors).
    pub script: std::path::PathBuf,
    /// The command (`run`, `prepare`, ...).
    pub command: String,
    /// The whole command line, for `sysbench.cmdline.argv`.
    pub argv: Vec<String>,
    /// `sysbench.opt`: every option with its value.
    pub opt: Vec<(String, OptValue)>,
    /// Where connections go, and which errors are ignorable there.
    pub target: Option<Target>,
    /// `--mysql-ignore-errors` / `--pgsql-ignore-errors`.
    pub ignore: IgnoreErrors,
    /// `--db-ps-mode=disable`: statements are prepared client-side (values written in).
    pub ps_disabled: bool,
    /// `--rand-type` and its parameters, for `sysbench.rand.default`.
    pub rand: RandParams,
    /// `--rand-type`.
    pub rand_type: RandType,
    /// `--rand-seed`.
    pub seed: u64,
    /// `sysbench.rand.unique`'s sequence, one for the run.
    pub unique: UniqueIds,
    /// Statement kinds, shared by the run's workers.
    pub names: Arc<StatementNames>,
    /// How statements are named.
    pub naming: Naming,
    /// When a statement still waiting for its server gives up (ns on the engine's clock; the
    /// run's end plus its grace): past it, or after an interrupt, the connection is dropped
    /// and the statement fails as a lost connection. `u64::MAX`: never.
    pub give_up_at: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// Settings without a server, for loading a script to read what it declares (its
    /// options and commands) and nothing else.
    pub fn offline(script: &Path, command: &str, argv: Vec<String>, opt: Vec<(String, OptValue)>) -> Shared {
        Shared {
            script: script.to_owned(),
            command: command.to_string(),
            argv,
            opt,
            target: None,
            ignore: IgnoreErrors::sysbench_default(),
            ps_disabled: false,
            rand: RandParams::default(),
            rand_type: RandType::Uniform,
            seed: 1,
            unique: UniqueIds::new(1),
            names: Arc::new(StatementNames::after(0)),
            naming: Naming::Table,
            give_up_at: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }
}

/// One logged statement: kind, service time, class.
pub type Logged = (u16, u64, QueryClass);

/// A state's own context, kept in the Lua state's app data.
pub struct Ctx {
    shared: Arc<Shared>,
    /// Statements sent since the last [`take_log`].
    pub log: RefCell<Vec<Logged>>,
    /// Connections opened by this state, for [`reconnect_all`].
    conns: RefCell<Vec<std::rc::Weak<RefCell<ConnInner>>>>,
    /// Names already resolved to a kind, by SQL text (bounded).
    kinds: RefCell<HashMap<Box<str>, (u16, bool)>>,
    rng: RefCell<SmallRng>,
    /// sysbench.rand.default's distribution.
    dist: Distribution,
}

/// How many SQL texts a state remembers the kind of (dynamic SQL is named again past it).
const KIND_CACHE: usize = 4096;

impl Ctx {
    fn kind_of(&self, sql: &str) -> (u16, bool) {
        if let Some(k) = self.kinds.borrow().get(sql) {
            return *k;
        }
        let name = match self.shared.naming {
            Naming::Table => statement_name(sql),
            Naming::Shape => shape(sql),
        };
        let verb = name.split(' ').next().unwrap_or("");
        let read = matches!(
            verb,
            "SELECT" | "SHOW" | "WITH" | "VALUES" | "TABLE" | "EXPLAIN" | "DESCRIBE" | "DESC" | "CHECK" | "CALL"
        ) || (verb == "INSERT" || verb == "UPDATE" || verb == "DELETE") && returning(sql);
        let k = (self.shared.names.kind(&name), read);
        let mut cache = self.kinds.borrow_mut();
        if cache.len() < KIND_CACHE {
            cache.insert(sql.into(), k);
        }
        k
    }

    fn record(&self, kind: u16, started: u64, class: QueryClass) {
        self.log
            .borrow_mut()
            .push((kind, now_ns().saturating_sub(started), class));
    }
}

/// True when `sql` has a RETURNING clause (PostgreSQL: the write returns rows).
fn returning(sql: &str) -> bool {
    sql.to_ascii_lowercase().contains(" returning ")
}

/// A statement's shape: its text with numbers and quoted strings replaced by `?`, spaces
/// collapsed, cut at 80 characters.
pub fn shape(sql: &str) -> String {
    let mut out = String::new();
    let mut chars = sql.trim().chars().peekable();
    let mut last_space = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                }
                out.push('?');
                last_space = false;
            }
            c if c.is_ascii_digit() && !out.chars().last().is_some_and(|p| p.is_alphanumeric() || p == '_') => {
                while chars.peek().is_some_and(|d| d.is_ascii_digit() || *d == '.') {
                    chars.next();
                }
                out.push('?');
                last_space = false;
            }
            c if c.is_whitespace() => {
                if !last_space {
                    out.push(' ');
                }
                last_space = true;
            }
            c => {
                out.push(c);
                last_space = false;
            }
        }
        if out.len() >= 80 {
            break;
        }
    }
    out
}

/// A new state for sysbench thread `tid`: the API installed, `sysbench.opt` filled, the
/// script loaded and run (its top level defines the functions). `raw_target` false: no
/// connection may be opened (the option probe).
pub fn new_state(shared: &Arc<Shared>, tid: usize) -> Result<Lua, String> {
    // SAFETY: sysbench scripts may use LuaJIT's ffi library, as under sysbench; it is the
    // user's own script, run with the user's own rights.
    let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::new()) };
    let seed = shared.seed ^ (tid as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let dist = Distribution::new(shared.rand_type, shared.rand).map_err(|e| e.to_string())?;
    lua.set_app_data(Ctx {
        shared: shared.clone(),
        log: RefCell::new(Vec::with_capacity(64)),
        conns: RefCell::new(Vec::new()),
        kinds: RefCell::new(HashMap::new()),
        rng: RefCell::new(SmallRng::seed_from_u64(seed)),
        dist,
    });
    install(&lua, shared, tid).map_err(|e| format!("setting up the sysbench API: {e}"))?;
    load_script(&lua, &shared.script)?;
    // Options again after the script: values the script's own table may not override.
    set_opt(&lua, &shared.opt).map_err(|e| e.to_string())?;
    Ok(lua)
}

/// Loads and runs `script` in `lua`, errors as `file:line: message`.
pub fn load_script(lua: &Lua, script: &Path) -> Result<(), String> {
    let text = std::fs::read(script).map_err(|e| format!("{}: {e}", script.display()))?;
    let text = match text.strip_prefix(b"#!") {
        // A shebang line (scripts run as `#!/usr/bin/env sysbench`): keep the line count.
        Some(rest) => {
            let nl = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let mut t = b"--".to_vec();
            t.extend_from_slice(&rest[nl..]);
            t
        }
        None => text,
    };
    lua.load(&text[..])
        .set_name(format!("@{}", script.display()))
        .exec()
        .map_err(|e| lua_message(&e))
}

/// A Lua error as a person reads it: the message (which names `file:line`), and the script
/// frames of the traceback.
pub fn lua_message(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { traceback, cause } => {
            let cause = lua_message(cause);
            let frames: Vec<&str> = traceback
                .lines()
                .filter(|l| l.contains(".lua:") && !l.contains("[C]"))
                .map(str::trim)
                .collect();
            if frames.is_empty() {
                cause
            } else {
                format!("{cause}\n  {}", frames.join("\n  "))
            }
        }
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => {
            let mut lines = m.lines();
            let first = lines.next().unwrap_or("").to_string();
            let frames: Vec<&str> = lines
                .filter(|l| l.contains(".lua:") && !l.contains("[C]") && !l.contains("prelude"))
                .map(str::trim)
                .collect();
            if frames.is_empty() {
                first
            } else {
                format!("{first}\n  {}", frames.join("\n  "))
            }
        }
        mlua::Error::ExternalError(e) => e.to_string(),
        mlua::Error::WithContext { context, cause } => format!("{context}: {}", lua_message(cause)),
        other => other.to_string(),
    }
}

fn set_opt(lua: &Lua, opt: &[(String, OptValue)]) -> mlua::Result<()> {
    let sysbench: Table = lua.globals().get("sysbench")?;
    let t = match sysbench.get::<Option<Table>>("opt")? {
        Some(t) => t,
        None => lua.create_table()?,
    };
    for (name, v) in opt {
        let value = match v {
            OptValue::Bool(b) => Value::Boolean(*b),
            OptValue::Number(n) => Value::Number(*n),
            OptValue::Str(s) => Value::String(lua.create_string(s)?),
            OptValue::List(l) => Value::Table(lua.create_sequence_from(l.iter().map(String::as_str))?),
            OptValue::Nil => Value::Nil,
        };
        t.raw_set(name.as_str(), value.clone())?;
        if name.contains('-') {
            t.raw_set(name.replace('-', "_"), value)?;
        }
    }
    sysbench.set("opt", t)
}

fn install(lua: &Lua, shared: &Arc<Shared>, tid: usize) -> mlua::Result<()> {
    let g = lua.globals();
    // package.path: the script's directory first, then sysbench's own.
    let dir = shared
        .script
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let package: Table = g.get("package")?;
    let path: String = package.get("path")?;
    package.set(
        "path",
        format!(
            "{d}/?.lua;{d}/?/init.lua;./?.lua;/usr/share/sysbench/?.lua;/usr/local/share/sysbench/?.lua;{path}",
            d = dir.display()
        ),
    )?;

    let sysbench = lua.create_table()?;
    sysbench.set("tid", tid)?;
    sysbench.set("version", "1.0.20")?;
    sysbench.set(
        "version_string",
        format!("dbperf {} (sysbench 1.0.20 API)", env!("CARGO_PKG_VERSION")),
    )?;
    let cmdline = lua.create_table()?;
    let argv = lua.create_table()?;
    for (i, a) in shared.argv.iter().enumerate() {
        argv.raw_set(i, a.as_str())?;
    }
    cmdline.set("argv", argv)?;
    if !shared.command.is_empty() {
        cmdline.set("command", shared.command.as_str())?;
    }
    cmdline.set("script_path", shared.script.display().to_string())?;
    sysbench.set("cmdline", cmdline)?;
    g.set("sysbench", sysbench)?;
    set_opt(lua, &shared.opt)?;

    let raw = lua.create_table()?;
    raw.set("rand", rand_table(lua)?)?;
    // On a blocking-I/O thread statements complete inside the Lua call, without a coroutine
    // switch (`query_now`, `execute_now`).
    raw.set("blocking", dbperf_engine::blocking_io())?;
    raw.set(
        "rand_u32",
        lua.create_function(|lua, ()| Ok(ctx(lua).rng.borrow_mut().random::<u32>()))?,
    )?;
    let scheme = shared.target.as_ref().map(|t| t.scheme);
    raw.set(
        "driver",
        lua.create_function(move |_, name: Option<String>| {
            let have = match scheme {
                Some(Scheme::Postgres) => "pgsql",
                _ => "mysql",
            };
            match name.as_deref() {
                None | Some("") => Ok(have.to_string()),
                Some(n) if n == have => Ok(have.to_string()),
                Some("mysql" | "pgsql") => Err(mlua::Error::runtime(format!(
                    "sysbench.sql.driver({name:?}): the target is {have} (give a {} target with --target, or --db-driver={have})",
                    if have == "mysql" { "postgres://" } else { "mysql://" }
                ))),
                Some(n) => Err(mlua::Error::runtime(format!(
                    "invalid database driver name: {n:?}: dbperf runs mysql and pgsql (not supported by dbperf)"
                ))),
            }
        })?,
    )?;
    raw.set(
        "connect",
        lua.create_async_function(|lua, ()| async move { connect(&lua).await })?,
    )?;
    raw.set(
        "param",
        lua.create_function(|_, (btype, max_len): (i64, Option<i64>)| BindParam::new(btype, max_len))?,
    )?;
    lua.load(PRELUDE).set_name("=dbperf prelude").call::<()>(raw)?;
    Ok(())
}

fn ctx(lua: &Lua) -> mlua::AppDataRef<'_, Ctx> {
    lua.app_data_ref::<Ctx>()
        .expect("every dbperf Lua state has its context")
}

fn rand_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    fn range(a: i64, b: i64) -> mlua::Result<(u32, u32)> {
        let a = u32::try_from(a).map_err(|_| mlua::Error::runtime(format!("sysbench.rand: {a} is not a u32")))?;
        let b = u32::try_from(b).map_err(|_| mlua::Error::runtime(format!("sysbench.rand: {b} is not a u32")))?;
        if b < a {
            return Err(mlua::Error::runtime(format!("sysbench.rand: empty range {a}..{b}")));
        }
        Ok((a, b))
    }
    t.set(
        "uniform",
        lua.create_function(|lua, (a, b): (i64, i64)| {
            let (a, b) = range(a, b)?;
            Ok(ctx(lua).rng.borrow_mut().random_range(a..=b))
        })?,
    )?;
    t.set(
        "default",
        lua.create_function(|lua, (a, b): (i64, i64)| {
            let (a, b) = range(a, b)?;
            let c = ctx(lua);
            let v = c.dist.sample(&mut *c.rng.borrow_mut(), a, b);
            Ok(v)
        })?,
    )?;
    for (name, ty) in [
        ("gaussian", RandType::Gaussian),
        ("special", RandType::Special),
        ("pareto", RandType::Pareto),
        ("zipfian", RandType::Zipfian),
    ] {
        t.set(
            name,
            lua.create_function(move |lua, (a, b): (i64, i64)| {
                let (a, b) = range(a, b)?;
                let c = ctx(lua);
                let d = Distribution::new(ty, c.shared.rand).map_err(|e| mlua::Error::runtime(e.to_string()))?;
                let v = d.sample(&mut *c.rng.borrow_mut(), a, b);
                Ok(v)
            })?,
        )?;
    }
    t.set(
        "uniform_uint64",
        lua.create_function(|lua, ()| Ok(ctx(lua).rng.borrow_mut().random::<u64>() as f64))?,
    )?;
    t.set(
        "uniform_double",
        lua.create_function(|lua, ()| Ok(ctx(lua).rng.borrow_mut().random::<f64>()))?,
    )?;
    t.set(
        "unique",
        lua.create_function(|lua, ()| Ok(ctx(lua).shared.unique.next()))?,
    )?;
    t.set(
        "string",
        lua.create_function(|lua, fmt: mlua::LuaString| {
            let fmt = fmt.as_bytes();
            let mut out = vec![0u8; fmt.len()];
            fill_template(&mut *ctx(lua).rng.borrow_mut(), &fmt, &mut out);
            lua.create_string(&out)
        })?,
    )?;
    t.set(
        "varstring",
        lua.create_function(|lua, (min, max): (i64, i64)| {
            if min < 0 || max < min || max > 1 << 20 {
                return Err(mlua::Error::runtime(format!(
                    "sysbench.rand.varstring({min}, {max}): need 0 <= min <= max"
                )));
            }
            let c = ctx(lua);
            let mut rng = c.rng.borrow_mut();
            let n = rng.random_range(min..=max) as usize;
            let out: Vec<u8> = (0..n)
                .map(|_| {
                    let x = rng.random_range(0..62u8);
                    match x {
                        0..=9 => b'0' + x,
                        10..=35 => b'a' + x - 10,
                        _ => b'A' + x - 36,
                    }
                })
                .collect();
            lua.create_string(&out)
        })?,
    )?;
    Ok(t)
}

/// A connection's session and what it prepared.
struct ConnInner {
    session: Option<AnySession>,
    /// Prepared statements: SQL, server id (None: run as text), kind, read.
    stmts: Vec<StmtSlot>,
    bulk: Option<(String, String, usize)>,
    /// `con:disconnect()` was called.
    closed: bool,
    /// The rows of the last statement (a result is good until the next one, as in sysbench).
    last: RowData,
    /// Its number: a result table of an older statement fetches nothing.
    gen: u64,
}

struct StmtSlot {
    sql: String,
    id: Option<StmtId>,
    text: TextStatement,
    kind: u16,
    read: bool,
    open: bool,
}

/// `drv:connect()`'s handle.
struct Conn(Rc<RefCell<ConnInner>>);

async fn connect(lua: &Lua) -> mlua::Result<AnyUserData> {
    let (target, ignore) = {
        let c = ctx(lua);
        let Some(t) = c.shared.target.clone() else {
            return Err(mlua::Error::runtime(
                "no server to connect to: give --target (or --mysql-*/--pgsql-* options)",
            ));
        };
        (t, c.shared.ignore.clone())
    };
    let session = AnySession::connect(&target, ignore)
        .await
        .map_err(|e| mlua::Error::runtime(format!("connection creation failed: {e}")))?;
    let inner = Rc::new(RefCell::new(ConnInner {
        session: Some(session),
        stmts: Vec::new(),
        bulk: None,
        closed: false,
        last: RowData::None,
        gen: 0,
    }));
    ctx(lua).conns.borrow_mut().push(Rc::downgrade(&inner));
    lua.create_userdata(Conn(inner))
}

/// The Lua values of a failed statement: `false, errno, sqlstate, message, ignorable, class`.
/// What a statement primitive returns to the Lua half: its result, or `false` and the error's
/// errno, sqlstate, message, whether it is ignorable and its class (a tuple: no allocation).
type Ret = (Value, Value, Value, Value, Value, Value);

fn failure(lua: &Lua, e: &DbError) -> mlua::Result<Ret> {
    let ignorable = e.class != ErrorClass::Fatal;
    let errno = e.code.map_or(0.0, f64::from);
    let state = e.sqlstate.clone().unwrap_or_else(|| "HY000".into());
    Ok((
        Value::Boolean(false),
        Value::Number(errno),
        Value::String(lua.create_string(&state)?),
        Value::String(lua.create_string(&e.message)?),
        Value::Boolean(ignorable),
        Value::String(lua.create_string(e.class.name())?),
    ))
}

fn closed() -> DbError {
    DbError {
        class: ErrorClass::Fatal,
        code: None,
        sqlstate: None,
        message: "attempt to use an already closed connection".into(),
    }
}

fn ok_value(v: impl mlua::IntoLua, lua: &Lua) -> mlua::Result<Ret> {
    Ok((
        v.into_lua(lua)?,
        Value::Nil,
        Value::Nil,
        Value::Nil,
        Value::Nil,
        Value::Nil,
    ))
}

impl UserData for Conn {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_async_method("query", |lua, this, sql: mlua::LuaString| async move {
            let inner = this.0.clone();
            drop(this);
            let sql = sql.to_str()?.to_string();
            let (kind, read) = ctx(&lua).kind_of(&sql);
            let Some(mut s) = take_session(&inner) else {
                return failure(&lua, &closed());
            };
            let started = now_ns();
            let result = if read {
                s.query_rows(&sql)
                    .await
                    .map(|rows| (QueryClass::Read, ResultSet::from_text(rows)))
            } else {
                s.query(&sql)
                    .await
                    .map(|info| (write_class(info.affected_rows), ResultSet::affected(info.affected_rows)))
            };
            if let Err(e) = &result {
                after_error(&mut s, e).await;
            }
            put_session(&inner, s);
            match result {
                Ok((class, rs)) => {
                    ctx(&lua).record(kind, started, class);
                    publish(&inner, rs)
                }
                Err(e) => failure(&lua, &e),
            }
        });
        m.add_method("query_now", |lua, this, sql: mlua::LuaString| {
            let sql = sql.to_str()?;
            let c = ctx(lua);
            let (kind, read) = c.kind_of(&sql);
            let Some(mut s) = take_session(&this.0) else {
                return failure(lua, &closed());
            };
            let started = now_ns();
            let result = if read {
                run_now(&c, s.query_rows(&sql)).map(|r| r.map(|rows| (QueryClass::Read, ResultSet::from_text(rows))))
            } else {
                run_now(&c, s.query(&sql))
                    .map(|r| r.map(|info| (write_class(info.affected_rows), ResultSet::affected(info.affected_rows))))
            };
            let Some(result) = result else {
                return failure(lua, &gave_up());
            };
            if let Err(e) = &result {
                run_now(&c, after_error(&mut s, e));
            }
            put_session(&this.0, s);
            match result {
                Ok((class, rs)) => {
                    c.record(kind, started, class);
                    drop(c);
                    publish(&this.0, rs)
                }
                Err(e) => failure(lua, &e),
            }
        });
        m.add_async_method("prepare", |lua, this, sql: mlua::LuaString| async move {
            let inner = this.0.clone();
            drop(this);
            let sql = sql.to_str()?.to_string();
            let (kind, read) = ctx(&lua).kind_of(&sql);
            let ps_disabled = ctx(&lua).shared.ps_disabled;
            let Some(mut s) = take_session(&inner) else {
                return failure(&lua, &closed());
            };
            let id = if ps_disabled {
                Ok(None)
            } else {
                match s.prepare(&sql).await {
                    Ok(id) => Ok(Some(id)),
                    // MySQL will not prepare some statements (BEGIN on 8.0): run them as
                    // text, as sysbench's --db-ps-mode=auto does.
                    Err(e) if e.code == Some(ER_UNSUPPORTED_PS) => Ok(None),
                    Err(e) => Err(e),
                }
            };
            put_session(&inner, s);
            let id = match id {
                Ok(id) => id,
                Err(e) => return failure(&lua, &e),
            };
            let mut c = inner.borrow_mut();
            let index = c.stmts.len();
            c.stmts.push(StmtSlot {
                text: TextStatement::new(&sql),
                sql,
                id,
                kind,
                read,
                open: true,
            });
            drop(c);
            ok_value(
                Stmt {
                    conn: inner,
                    index,
                    params: Vec::new(),
                    buf: Vec::new(),
                    rows: Rc::new(RefCell::new(Rows::new())),
                },
                &lua,
            )
        });
        m.add_method("bulk_insert_init", |_, this, sql: String| {
            this.0.borrow_mut().bulk = Some((sql, String::new(), 0));
            Ok(true)
        });
        m.add_async_method("bulk_insert_next", |lua, this, values: mlua::LuaString| async move {
            let inner = this.0.clone();
            drop(this);
            let values = values.to_str()?.to_string();
            let full = {
                let mut c = inner.borrow_mut();
                let Some((prefix, buf, rows)) = c.bulk.as_mut() else {
                    return Err(mlua::Error::runtime(
                        "bulk_insert_next() without bulk_insert_init(): call con:bulk_insert_init(\"INSERT INTO t VALUES\") first",
                    ));
                };
                let mut out = None;
                if *rows > 0 && prefix.len() + buf.len() + values.len() + 1 > BULK_PACKET {
                    out = Some(format!("{prefix}{buf}"));
                    buf.clear();
                    *rows = 0;
                }
                if *rows > 0 {
                    buf.push(',');
                }
                buf.push_str(&values);
                *rows += 1;
                out
            };
            match full {
                Some(sql) => flush(&lua, &inner, &sql).await,
                None => ok_value(true, &lua),
            }
        });
        m.add_async_method("bulk_insert_done", |lua, this, ()| async move {
            let inner = this.0.clone();
            drop(this);
            let sql = {
                let mut c = inner.borrow_mut();
                match c.bulk.take() {
                    Some((prefix, buf, rows)) if rows > 0 => Some(format!("{prefix}{buf}")),
                    _ => None,
                }
            };
            match sql {
                Some(sql) => flush(&lua, &inner, &sql).await,
                None => ok_value(true, &lua),
            }
        });
        m.add_method("fetch_row", |lua, this, (gen, row): (u64, usize)| {
            fetch_row(lua, &this.0, gen, row)
        });
        m.add_method("disconnect", |_, this, ()| {
            let mut c = this.0.borrow_mut();
            c.session = None;
            c.closed = true;
            Ok(true)
        });
        m.add_async_method("reconnect", |lua, this, ()| async move {
            let inner = this.0.clone();
            drop(this);
            match reconnect_conn(&lua, &inner).await {
                Ok(()) => ok_value(true, &lua),
                Err(e) => Ok((
                    Value::Boolean(false),
                    Value::String(lua.create_string(e.to_string())?),
                    Value::Nil,
                    Value::Nil,
                    Value::Nil,
                    Value::Nil,
                )),
            }
        });
    }
}

async fn flush(lua: &Lua, inner: &Rc<RefCell<ConnInner>>, sql: &str) -> mlua::Result<Ret> {
    let (kind, _) = ctx(lua).kind_of(sql.split(" VALUES").next().unwrap_or(sql));
    let Some(mut s) = take_session(inner) else {
        return failure(lua, &closed());
    };
    let started = now_ns();
    let r = s.query(sql).await;
    if let Err(e) = &r {
        after_error(&mut s, e).await;
    }
    put_session(inner, s);
    match r {
        Ok(_) => {
            ctx(lua).record(kind, started, QueryClass::Write);
            ok_value(true, lua)
        }
        Err(e) => failure(lua, &e),
    }
}

/// After an ignorable error on PostgreSQL the transaction is aborted: roll it back so the
/// event can run again, as sysbench's pgsql driver does (MySQL has already rolled back a
/// deadlock victim, and sysbench leaves its other errors to the script).
async fn after_error(s: &mut AnySession, e: &DbError) {
    if s.scheme() == Scheme::Postgres && !matches!(e.class, ErrorClass::Fatal | ErrorClass::ConnectionLost) {
        let _ = s.query("ROLLBACK").await;
    }
}

/// Drives `fut` to completion on this thread (a blocking-I/O thread: each poll blocks in the
/// kernel for at most one slice). Gives up when the run is past its end or interrupted.
fn run_now<F: std::future::Future>(c: &Ctx, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
        let give_up = c.shared.give_up_at.load(std::sync::atomic::Ordering::Relaxed);
        if crate::run::session::interrupted() || now_ns() >= give_up {
            return None;
        }
    }
}

/// The error of a statement abandoned by [`run_now`]; its connection is dropped.
fn gave_up() -> DbError {
    DbError {
        class: ErrorClass::ConnectionLost,
        code: Some(2013),
        sqlstate: None,
        message: "no reply from the server before the run ended; the connection was dropped".into(),
    }
}

/// Takes a connection's session out for an await (no borrow is held across it).
fn take_session(inner: &Rc<RefCell<ConnInner>>) -> Option<AnySession> {
    inner.borrow_mut().session.take()
}

/// Puts it back, unless the script disconnected meanwhile.
fn put_session(inner: &Rc<RefCell<ConnInner>>, s: AnySession) {
    let mut c = inner.borrow_mut();
    if !c.closed {
        c.session = Some(s);
    }
}

/// sysbench's counter for a statement without rows: write when it changed rows.
fn write_class(affected: u64) -> QueryClass {
    if affected > 0 {
        QueryClass::Write
    } else {
        QueryClass::Other
    }
}

/// Makes `rs` its connection's current result; what the Lua half builds the script's result
/// table from: `nrows, nfields, generation`.
fn publish(inner: &Rc<RefCell<ConnInner>>, rs: ResultSet) -> mlua::Result<Ret> {
    let mut c = inner.borrow_mut();
    c.gen += 1;
    c.last = rs.data;
    Ok((
        Value::Number(rs.nrows as f64),
        Value::Integer(rs.nfields as i64),
        Value::Integer(c.gen as i64),
        Value::Nil,
        Value::Nil,
        Value::Nil,
    ))
}

/// Row `row` (0-based) of result `gen` of a connection, as sysbench's fetch_row gives it: a
/// table of strings, NULL as a hole; nil past the end or once another statement ran.
fn fetch_row(lua: &Lua, inner: &Rc<RefCell<ConnInner>>, gen: u64, row: usize) -> mlua::Result<Value> {
    let c = inner.borrow();
    if gen != c.gen {
        return Ok(Value::Nil);
    }
    match &c.last {
        RowData::None => Ok(Value::Nil),
        RowData::Text { cells, nfields } => {
            let start = row * nfields;
            if *nfields == 0 || start + nfields > cells.len() {
                return Ok(Value::Nil);
            }
            let t = lua.create_table_with_capacity(*nfields, 0)?;
            for (i, cell) in cells[start..start + nfields].iter().enumerate() {
                if let Some(b) = cell {
                    t.raw_set(i + 1, lua.create_string(b)?)?;
                }
            }
            Ok(Value::Table(t))
        }
        RowData::Rows(rows) => {
            let rows = rows.borrow();
            if row >= rows.len() {
                return Ok(Value::Nil);
            }
            let t = lua.create_table_with_capacity(rows.columns(), 0)?;
            for col in 0..rows.columns() {
                if let Some(b) = cell_text(&rows, row, col) {
                    t.raw_set(col + 1, lua.create_string(&b)?)?;
                }
            }
            Ok(Value::Table(t))
        }
    }
}

/// Reopens a connection and prepares its statements again.
async fn reconnect_conn(lua: &Lua, inner: &Rc<RefCell<ConnInner>>) -> Result<(), DbError> {
    let mut s = match take_session(inner) {
        Some(s) => s,
        // Dropped mid-statement: open a new one.
        None if !inner.borrow().closed => {
            let (target, ignore) = {
                let c = ctx(lua);
                match c.shared.target.clone() {
                    Some(t) => (t, c.shared.ignore.clone()),
                    None => return Ok(()),
                }
            };
            AnySession::connect(&target, ignore).await?
        }
        None => return Ok(()),
    };
    let sqls: Vec<(usize, String)> = inner
        .borrow()
        .stmts
        .iter()
        .enumerate()
        .filter(|(_, s)| s.open && s.id.is_some())
        .map(|(i, s)| (i, s.sql.clone()))
        .collect();
    let mut r = s.reconnect().await;
    let mut ids = Vec::new();
    if r.is_ok() {
        for (i, sql) in sqls {
            match s.prepare(&sql).await {
                Ok(id) => ids.push((i, id)),
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
    }
    put_session(inner, s);
    let mut c = inner.borrow_mut();
    for (i, id) in ids {
        c.stmts[i].id = Some(id);
    }
    r
}

/// Reopens every connection a state opened (after a lost connection), re-preparing their
/// statements.
pub async fn reconnect_all(lua: &Lua) -> Result<(), DbError> {
    let conns: Vec<_> = ctx(lua).conns.borrow().iter().filter_map(|w| w.upgrade()).collect();
    for c in conns {
        reconnect_conn(lua, &c).await?;
    }
    Ok(())
}

/// Takes the statements logged since the last call.
pub fn take_log(lua: &Lua, out: &mut dbperf_engine::StatementLog) {
    let c = ctx(lua);
    let mut log = c.log.borrow_mut();
    for &(kind, service, class) in log.iter() {
        out.push_timed(kind, service, class);
    }
    log.clear();
}

/// Forgets the statements logged (outside a measured event).
pub fn clear_log(lua: &Lua) {
    ctx(lua).log.borrow_mut().clear();
}

/// A bound parameter's value (`stmt:bind_create` / `param:set`).
#[derive(Clone, Debug)]
enum PVal {
    Null,
    Int(i64),
    Double(f64),
    Str(Vec<u8>),
}

/// `stmt:bind_create(type, max_len)`: a parameter slot shared with the statements it is
/// bound to.
#[derive(Clone)]
pub struct BindParam {
    v: Rc<RefCell<PVal>>,
    int: bool,
    double: bool,
    max_len: usize,
}

impl BindParam {
    fn new(btype: i64, max_len: Option<i64>) -> mlua::Result<BindParam> {
        let (int, double) = match btype {
            1..=4 => (true, false),
            5 | 6 => (false, true),
            11 | 12 => (false, false),
            other => {
                return Err(mlua::Error::runtime(format!(
                    "Unsupported argument type: {other} (use sysbench.sql.type INT, BIGINT, DOUBLE, CHAR or VARCHAR)"
                )))
            }
        };
        let max_len = if int || double {
            8
        } else {
            max_len.filter(|&n| n > 0).ok_or_else(|| {
                mlua::Error::runtime("bind_create(sysbench.sql.type.CHAR/VARCHAR, max_len): max_len is needed")
            })? as usize
        };
        Ok(BindParam {
            v: Rc::new(RefCell::new(PVal::Null)),
            int,
            double,
            max_len,
        })
    }
}

impl UserData for BindParam {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method("set", |_, this, v: Value| {
            let new = match v {
                Value::Nil => PVal::Null,
                Value::Integer(i) if this.int => PVal::Int(i),
                Value::Number(n) if this.int => PVal::Int(n as i64),
                Value::Integer(i) if this.double => PVal::Double(i as f64),
                Value::Number(n) if this.double => PVal::Double(n),
                Value::String(s) if this.int => PVal::Int(
                    s.to_str()?
                        .trim()
                        .parse()
                        .map_err(|_| mlua::Error::runtime("param:set(): not an integer"))?,
                ),
                Value::String(s) if this.double => PVal::Double(
                    s.to_str()?
                        .trim()
                        .parse()
                        .map_err(|_| mlua::Error::runtime("param:set(): not a number"))?,
                ),
                Value::String(s) => {
                    let b = s.as_bytes();
                    PVal::Str(b[..b.len().min(this.max_len)].to_vec())
                }
                Value::Integer(i) => PVal::Str(i.to_string().into_bytes()),
                Value::Number(n) => PVal::Str(lua_number(n).into_bytes()),
                Value::Boolean(b) => PVal::Int(b as i64),
                other => {
                    return Err(mlua::Error::runtime(format!(
                        "param:set(): cannot bind a {}",
                        other.type_name()
                    )))
                }
            };
            *this.v.borrow_mut() = new;
            Ok(())
        });
        m.add_method("set_rand_str", |lua, this, fmt: mlua::LuaString| {
            if this.int || this.double {
                return Err(mlua::Error::runtime(
                    "param:set_rand_str() needs a CHAR or VARCHAR parameter",
                ));
            }
            let fmt = fmt.as_bytes();
            let n = fmt.len().min(this.max_len);
            let mut v = this.v.borrow_mut();
            let mut buf = match std::mem::replace(&mut *v, PVal::Null) {
                PVal::Str(b) => b,
                _ => Vec::new(),
            };
            buf.resize(n, 0);
            fill_template(&mut *ctx(lua).rng.borrow_mut(), &fmt[..n], &mut buf);
            *v = PVal::Str(buf);
            Ok(())
        });
    }
}

/// Lua's text for a number (integers without a fraction).
fn lua_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// `con:prepare()`'s handle.
struct Stmt {
    conn: Rc<RefCell<ConnInner>>,
    index: usize,
    params: Vec<BindParam>,
    buf: Vec<u8>,
    /// The rows of its last read, reused (shared with the result handed to the script).
    rows: Rc<RefCell<Rows>>,
}

/// The parameters of one execution from the bound values (doubles written as text into
/// `doubles`); a NULL is refused.
fn bind_values<'a, I>(vals: I, doubles: &'a mut String) -> mlua::Result<Vec<Param<'a>>>
where
    I: Iterator<Item = &'a PVal> + Clone,
{
    for v in vals.clone() {
        if let PVal::Double(d) = v {
            doubles.push_str(&lua_number(*d));
            doubles.push('\0');
        }
    }
    let doubles: &'a String = doubles;
    let mut parts = doubles.split('\0');
    vals.map(|v| match v {
        PVal::Null => Err(mlua::Error::runtime(
            "a NULL parameter (param:set(nil)) is not supported by dbperf yet: bind a value, or write NULL in the statement",
        )),
        PVal::Int(i) => Ok(Param::Int(*i)),
        PVal::Double(_) => Ok(Param::Bytes(parts.next().unwrap_or("").as_bytes())),
        PVal::Str(b) => Ok(Param::Bytes(b)),
    })
    .collect()
}

/// Statement `index` of `conn`: its kind, whether it reads, and its server id (None: it runs
/// as text, which is rendered from `params` into `buf` here).
fn slot(
    conn: &RefCell<ConnInner>,
    index: usize,
    buf: &mut Vec<u8>,
    params: &[Param<'_>],
) -> mlua::Result<(u16, bool, Option<StmtId>)> {
    {
        let conn = conn.borrow();
        let Some(slot) = conn.stmts.get(index) else {
            return Err(mlua::Error::runtime("statement handle out of range"));
        };
        if !slot.open {
            return Err(mlua::Error::runtime("stmt:execute() after stmt:close()"));
        }
        if slot.id.is_none() {
            buf.clear();
            slot.text.render(params, buf);
        }
        Ok((slot.kind, slot.read, slot.id))
    }
}

impl UserData for Stmt {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut(
            "bind_param",
            |_, this, args: mlua::Variadic<mlua::UserDataRef<BindParam>>| {
                this.params = args.iter().map(|p| (**p).clone()).collect();
                Ok(0)
            },
        );
        m.add_method_mut("close", |_, this, ()| {
            if let Some(s) = this.conn.borrow_mut().stmts.get_mut(this.index) {
                s.open = false;
            }
            Ok(0)
        });
        m.add_method_mut("execute_now", |lua, this, ()| {
            let c = ctx(lua);
            let guards: Vec<std::cell::Ref<'_, PVal>> = this.params.iter().map(|p| p.v.borrow()).collect();
            let mut doubles = String::new();
            let params = bind_values(guards.iter().map(|g| &**g), &mut doubles)?;
            let (kind, read, id) = slot(&this.conn, this.index, &mut this.buf, &params)?;
            let Some(mut s) = take_session(&this.conn) else {
                return failure(lua, &closed());
            };
            let started = now_ns();
            let result = match id {
                Some(id) if read => {
                    let shared = this.rows.clone();
                    let mut rows = shared.borrow_mut();
                    let r = run_now(&c, s.exec_rows(id, &params, &mut rows));
                    drop(rows);
                    r.map(|r| r.map(|_| ResultSet::from_rows(shared)))
                }
                Some(id) => run_now(&c, s.exec(id, &params)).map(|r| r.map(|i| ResultSet::affected(i.affected_rows))),
                None => {
                    let sql = String::from_utf8_lossy(&this.buf).into_owned();
                    if read {
                        run_now(&c, s.query_rows(&sql)).map(|r| r.map(ResultSet::from_text))
                    } else {
                        run_now(&c, s.query(&sql)).map(|r| r.map(|i| ResultSet::affected(i.affected_rows)))
                    }
                }
            };
            drop(guards);
            let Some(result) = result else {
                return failure(lua, &gave_up());
            };
            if let Err(e) = &result {
                run_now(&c, after_error(&mut s, e));
            }
            put_session(&this.conn, s);
            match result {
                Ok(rs) => {
                    let class = if read { QueryClass::Read } else { write_class(rs.nrows) };
                    c.record(kind, started, class);
                    drop(c);
                    publish(&this.conn, rs)
                }
                Err(e) => failure(lua, &e),
            }
        });
        m.add_async_method_mut("execute", |lua, mut this: UserDataRefMut<Stmt>, ()| async move {
            let this = &mut *this;
            let vals: Vec<PVal> = this.params.iter().map(|p| p.v.borrow().clone()).collect();
            let mut doubles = String::new();
            let params = bind_values(vals.iter(), &mut doubles)?;
            let (kind, read, id) = slot(&this.conn, this.index, &mut this.buf, &params)?;
            let Some(mut s) = take_session(&this.conn) else {
                return failure(&lua, &closed());
            };
            let started = now_ns();
            let result = match id {
                Some(id) if read => {
                    let mut rows = Rows::new();
                    s.exec_rows(id, &params, &mut rows)
                        .await
                        .map(|_| ResultSet::from_rows(Rc::new(RefCell::new(rows))))
                }
                Some(id) => s.exec(id, &params).await.map(|i| ResultSet::affected(i.affected_rows)),
                None => {
                    let sql = String::from_utf8_lossy(&this.buf).into_owned();
                    if read {
                        s.query_rows(&sql).await.map(ResultSet::from_text)
                    } else {
                        s.query(&sql).await.map(|i| ResultSet::affected(i.affected_rows))
                    }
                }
            };
            if let Err(e) = &result {
                after_error(&mut s, e).await;
            }
            put_session(&this.conn, s);
            match result {
                Ok(rs) => {
                    let class = if read {
                        QueryClass::Read
                    } else if rs.nrows > 0 {
                        QueryClass::Write
                    } else {
                        QueryClass::Other
                    };
                    ctx(&lua).record(kind, started, class);
                    publish(&this.conn, rs)
                }
                Err(e) => failure(&lua, &e),
            }
        });
    }
}

/// A statement's result before it is published to its connection: its rows (a read) or the
/// rows it changed (a write).
struct ResultSet {
    nrows: u64,
    nfields: usize,
    data: RowData,
}

/// The rows of a connection's last result, converted to Lua strings only when fetched.
enum RowData {
    None,
    /// Text-protocol rows, row-major.
    Text {
        cells: Vec<Option<String>>,
        nfields: usize,
    },
    /// A prepared read's rows, in its statement's reused buffer.
    Rows(Rc<RefCell<Rows>>),
}

impl ResultSet {
    fn affected(n: u64) -> ResultSet {
        ResultSet {
            nrows: n,
            nfields: 0,
            data: RowData::None,
        }
    }

    fn from_text(rows: Vec<Vec<Option<String>>>) -> ResultSet {
        let nfields = rows.first().map_or(0, Vec::len);
        ResultSet {
            nrows: rows.len() as u64,
            nfields,
            data: RowData::Text {
                cells: rows.into_iter().flatten().collect(),
                nfields,
            },
        }
    }

    fn from_rows(rows: Rc<RefCell<Rows>>) -> ResultSet {
        let (nrows, nfields) = {
            let r = rows.borrow();
            (r.len() as u64, r.columns())
        };
        ResultSet {
            nrows,
            nfields,
            data: RowData::Rows(rows),
        }
    }
}

/// A cell as the text protocol would send it (NULL as None).
fn cell_text(rows: &Rows, r: usize, c: usize) -> Option<Vec<u8>> {
    match rows.cell(r, c) {
        crate::driver::rows::Cell::Null => None,
        crate::driver::rows::Cell::Int(i) => Some(i.to_string().into_bytes()),
        crate::driver::rows::Cell::Float(f) => Some(lua_number(f).into_bytes()),
        crate::driver::rows::Cell::Bytes(..) => rows.bytes(r, c).map(<[u8]>::to_vec),
    }
}

/// Calls global function `name` if the script defines it, in a coroutine (so it may use the
/// database); `Ok(None)` when it does not exist.
pub async fn call_global(lua: &Lua, name: &str, args: impl mlua::IntoLuaMulti) -> Result<Option<Value>, mlua::Error> {
    match lua.globals().get::<Value>(name)? {
        Value::Function(f) => f.call_async::<Value>(args).await.map(Some),
        _ => Ok(None),
    }
}

/// The function `f` called in a coroutine.
pub async fn call(f: &Function, args: impl mlua::IntoLuaMulti) -> Result<Value, mlua::Error> {
    f.call_async::<Value>(args).await
}
