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

use std::cell::{Cell, RefCell, UnsafeCell};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::{Arc, Mutex, OnceLock};

use dbperf_engine::clock::now_ns;
use dbperf_engine::{ErrorClass, QueryClass, StatementNames};
use mlua::{
    chunk::ChunkMode, AnyUserData, Function, IntoLuaMulti, LightUserData, Lua, LuaOptions, MultiValue, StdLib, Table,
    UserData, UserDataMethods, Value,
};
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

use super::fast::{self, FfiResult, ParamBox};
use super::options::OptValue;
use super::suspend::{self, Pending};
use super::Naming;
use crate::pgbench::lang::parse::statement_name;
use crate::sysbench::event::UniqueIds;
use crate::sysbench::rand::{Distribution, RandParams, RandType};
use crate::sysbench::strings::fill_template;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::target::Family;
use dbperf_driver::{DbError, Param, Rows, Session, StmtId, Target, TextStatement, ER_UNSUPPORTED_PS};

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
    /// Where the measured run's connections go (its client threads' states: [`new_worker_state`]),
    /// when the client has a path of its own (`--client-netns`); `None`: [`Shared::target`].
    pub client_target: Option<Target>,
    /// `--mysql-ignore-errors` / `--pgsql-ignore-errors`.
    pub ignore: IgnoreErrors,
    /// `--db-ps-mode=disable`: statements are prepared client-side (values written in).
    pub ps_disabled: bool,
    /// `--mysql-dry-run`: connections are [`AnySession::dry`] sessions, which answer without a
    /// server; as under sysbench, no statement returns rows, so every one counts as other.
    pub dry_run: bool,
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
    /// The script and the modules it requires, compiled once for all of the run's states.
    pub chunks: Arc<Chunks>,
    /// A state made a driver (`sysbench.sql.driver()`): sysbench then reports SQL statistics.
    pub connected: std::sync::atomic::AtomicBool,
    /// `con:reconnect()` calls that reconnected (sysbench's `reconnects`).
    pub reconnects: std::sync::atomic::AtomicU64,
    /// Statements sent outside events (`thread_init`, `thread_done`: bulk_insert.lua's last
    /// rows), by class (read, write, other): sysbench's report counts them.
    pub outside: [std::sync::atomic::AtomicU64; 3],
}

/// Lua files compiled to bytecode by the first state that loaded them, for the next states:
/// a state per thread would otherwise lex and parse every file again (at 1024 threads, about
/// half a second of CPU for sysbench's oltp scripts). Bytecode keeps the file's name, so
/// errors still point at `file:line`.
#[derive(Default)]
pub struct Chunks(Mutex<HashMap<PathBuf, Arc<[u8]>>>);

impl Chunks {
    /// Whether `path` is compiled already.
    pub fn holds(&self, path: &Path) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).contains_key(path)
    }

    /// `path` as a function of `lua`, named `@path`: from its bytecode when an earlier state
    /// compiled it, else read (a leading `#!` line blanked, keeping line numbers) and compiled.
    pub fn load(&self, lua: &Lua, path: &Path) -> Result<Function, ChunkError> {
        let name = format!("@{}", path.display());
        let cached = self.0.lock().unwrap_or_else(|e| e.into_inner()).get(path).cloned();
        if let Some(bytecode) = cached {
            return lua
                .load(&bytecode[..])
                .set_mode(ChunkMode::Binary)
                .set_name(name)
                .into_function()
                .map_err(ChunkError::Lua);
        }
        let text = std::fs::read(path).map_err(ChunkError::Read)?;
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
        let f = lua
            .load(&text[..])
            .set_mode(ChunkMode::Text)
            .set_name(name)
            .into_function()
            .map_err(ChunkError::Lua)?;
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), f.dump(false).into());
        Ok(f)
    }
}

/// Why [`Chunks::load`] could not load a file.
pub enum ChunkError {
    Read(std::io::Error),
    Lua(mlua::Error),
}

/// The prelude as a function of `lua`, compiled once per process.
fn prelude(lua: &Lua) -> mlua::Result<Function> {
    static BYTECODE: OnceLock<Vec<u8>> = OnceLock::new();
    const NAME: &str = "=dbperf prelude";
    if let Some(bytecode) = BYTECODE.get() {
        return lua
            .load(&bytecode[..])
            .set_mode(ChunkMode::Binary)
            .set_name(NAME)
            .into_function();
    }
    let f = lua
        .load(PRELUDE)
        .set_mode(ChunkMode::Text)
        .set_name(NAME)
        .into_function()?;
    let _ = BYTECODE.set(f.dump(false));
    Ok(f)
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
            client_target: None,
            ignore: IgnoreErrors::sysbench_default(),
            ps_disabled: false,
            dry_run: false,
            rand: RandParams::default(),
            rand_type: RandType::Uniform,
            seed: 1,
            unique: UniqueIds::new(1),
            names: Arc::new(StatementNames::after(0)),
            naming: Naming::Table,
            give_up_at: std::sync::atomic::AtomicU64::new(u64::MAX),
            chunks: Arc::default(),
            connected: Default::default(),
            reconnects: Default::default(),
            outside: Default::default(),
        }
    }
}

/// One logged statement: kind, service time, class.
pub type Logged = (u16, u64, QueryClass);

/// A state's own context, kept in the Lua state's app data.
pub struct Ctx {
    pub(super) shared: Arc<Shared>,
    /// Where this state's connections go.
    target: Option<Target>,
    /// Statements sent since the last [`take_log`]; shared with the state's worker, which
    /// takes them after every event.
    pub log: Rc<RefCell<Vec<Logged>>>,
    /// Connections opened by this state, for [`reconnect_all`].
    conns: RefCell<Vec<std::rc::Weak<RefCell<ConnInner>>>>,
    /// Names already resolved to a kind, by SQL text (bounded).
    kinds: RefCell<HashMap<Box<str>, (u16, bool)>>,
    pub(super) rng: RefCell<SmallRng>,
    /// The distributions of sysbench.rand.uniform, default, gaussian, special, pareto and
    /// zipfian (`None`: its parameters are invalid; calling it says why).
    pub(super) dists: [Option<Distribution>; 6],
    /// Bound parameters made by `stmt:bind_create`, by number (never freed before the state).
    /// Boxed: the script holds their addresses, which must not move when the list grows.
    #[allow(clippy::vec_box)]
    pub(super) params: RefCell<Vec<Box<ParamBox>>>,
    /// The message of the last misuse seen by a [`fast`] entry point.
    fast_error: RefCell<Option<String>>,
    /// This state runs on a blocking-I/O thread, or its script's top level runs: primitives
    /// complete inside their call. Otherwise they leave their work here ([`suspend`]) and
    /// the coroutine yields.
    pub(super) blocking: Cell<bool>,
    pub(super) pending: RefCell<Option<Pending>>,
    /// A `*_start` primitive's answer, for `raw.take_answer()`.
    pub(super) answer: RefCell<Option<mlua::Result<MultiValue>>>,
}

/// How many SQL texts a state remembers the kind of (dynamic SQL is named again past it).
const KIND_CACHE: usize = 4096;

impl Ctx {
    pub(super) fn kind_of(&self, sql: &str) -> (u16, bool) {
        if let Some(k) = self.kinds.borrow().get(sql) {
            return *k;
        }
        let name = match self.shared.naming {
            Naming::Table => statement_name(sql),
            Naming::Shape => shape(sql),
        };
        let verb = name.split(' ').next().unwrap_or("");
        // A dry run's statements return nothing: sysbench counts them all as other.
        let read = !self.shared.dry_run
            && (matches!(
                verb,
                "SELECT" | "SHOW" | "WITH" | "VALUES" | "TABLE" | "EXPLAIN" | "DESCRIBE" | "DESC" | "CHECK" | "CALL"
            ) || (verb == "INSERT" || verb == "UPDATE" || verb == "DELETE") && returning(sql));
        let k = (self.shared.names.kind(&name), read);
        let mut cache = self.kinds.borrow_mut();
        if cache.len() < KIND_CACHE {
            cache.insert(sql.into(), k);
        }
        k
    }

    pub(super) fn set_fast_error(&self, message: String) {
        if let Ok(mut e) = self.fast_error.try_borrow_mut() {
            *e = Some(message);
        }
    }

    pub(super) fn record(&self, kind: u16, started: u64, class: QueryClass) {
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
    new_state_for(shared, tid, shared.target.clone())
}

/// A state for a measured run's worker `tid`: [`new_state`] whose connections go to
/// [`Shared::client_target`] when there is one.
pub fn new_worker_state(shared: &Arc<Shared>, tid: usize) -> Result<Lua, String> {
    new_state_for(
        shared,
        tid,
        shared.client_target.clone().or_else(|| shared.target.clone()),
    )
}

fn new_state_for(shared: &Arc<Shared>, tid: usize, target: Option<Target>) -> Result<Lua, String> {
    // SAFETY: sysbench scripts may use LuaJIT's ffi library, as under sysbench; it is the
    // user's own script, run with the user's own rights. (No pool of coroutines: events on
    // blocking-I/O threads are plain calls, and on event-loop threads, where connections are
    // many, a kept coroutine would cost each state its grown stack.)
    let lua = unsafe { Lua::unsafe_new_with(StdLib::ALL, LuaOptions::new()) };
    let seed = shared.seed ^ (tid as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    // The default distribution must work; the named ones fail when called (`rand_errors`).
    let made = [
        RandType::Uniform,
        shared.rand_type,
        RandType::Gaussian,
        RandType::Special,
        RandType::Pareto,
        RandType::Zipfian,
    ]
    .map(|t| Distribution::new(t, shared.rand).map_err(|e| e.to_string()));
    if let Err(e) = &made[1] {
        return Err(e.clone());
    }
    let rand_errors: Vec<(usize, String)> = made
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.as_ref().err().map(|e| (i, e.clone())))
        .collect();
    let dists = made.map(Result::ok);
    lua.set_app_data(Ctx {
        shared: shared.clone(),
        target,
        log: Rc::new(RefCell::new(Vec::with_capacity(64))),
        conns: RefCell::new(Vec::new()),
        kinds: RefCell::new(HashMap::new()),
        rng: RefCell::new(SmallRng::seed_from_u64(seed)),
        dists,
        params: RefCell::new(Vec::new()),
        fast_error: RefCell::new(None),
        blocking: Cell::new(dbperf_engine::blocking_io()),
        pending: RefCell::new(None),
        answer: RefCell::new(None),
    });
    install(&lua, shared, tid, rand_errors).map_err(|e| format!("setting up the sysbench API: {e}"))?;
    // The script's top level runs outside any event loop (in no coroutine): its statements
    // complete inside the call, on blocking sockets, as sysbench runs them.
    let threads_mode = ctx(&lua).blocking.get();
    set_blocking(&lua, true).map_err(|e| e.to_string())?;
    dbperf_engine::with_blocking_io(|| load_script(&lua, &shared.script, &shared.chunks))?;
    set_blocking(&lua, threads_mode).map_err(|e| e.to_string())?;
    // Options again after the script: values the script's own table may not override.
    set_opt(&lua, &shared.opt).map_err(|e| e.to_string())?;
    export_legacy_globals(&lua).map_err(|e| e.to_string())?;
    Ok(lua)
}

/// Whether `lua`'s statements complete inside the call (`raw.blocking`, [`Ctx::blocking`])
/// or leave their work pending for the event loop's coroutine.
fn set_blocking(lua: &Lua, blocking: bool) -> mlua::Result<()> {
    ctx(lua).blocking.set(blocking);
    let raw: Table = lua.globals().get::<Table>("sysbench")?.get("__dbperf")?;
    raw.set("blocking", blocking)
}

/// Loads and runs `script` in `lua` (compiled once for the run: `chunks`), errors as
/// `file:line: message`.
pub fn load_script(lua: &Lua, script: &Path, chunks: &Chunks) -> Result<(), String> {
    match chunks.load(lua, script) {
        Ok(f) => f.call::<()>(()).map_err(|e| lua_message(&e)),
        Err(ChunkError::Read(e)) => Err(format!("{}: {e}", script.display())),
        Err(ChunkError::Lua(e)) => Err(lua_message(&e)),
    }
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
            // The message may have lines of its own (`require`'s "no file ..." list), then
            // the traceback, of which the script's frames are kept.
            let (message, traceback) = m.split_once("stack traceback:").unwrap_or((m, ""));
            let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("").to_string();
            let rest = lines.chain(
                traceback
                    .lines()
                    .filter(|l| l.contains(".lua:") && !l.contains("[C]") && !l.contains("prelude"))
                    .map(str::trim),
            );
            rest.fold(first, |out, l| out + "\n  " + l)
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
    super::options::set_values(lua, &t, opt)?;
    // sysbench keeps its deprecated aliases as options of their own: a script finds them with
    // their defaults whatever --threads and the like say (0.5 scripts read `num_threads`).
    let absent: Vec<(String, OptValue)> = super::DEPRECATED_ALIASES
        .iter()
        .filter(|(name, _, _)| opt.iter().all(|(given, _)| given != name))
        .map(|(name, _, default)| (name.to_string(), OptValue::Number(*default)))
        .collect();
    super::options::set_values(lua, &t, &absent)?;
    sysbench.set("opt", t)
}

/// sysbench 1.0's rule for 0.5 scripts: a script that declares no options
/// (`sysbench.cmdline.options`) also finds every option as a global, named with `_` for `-`
/// (`oltp_table_size`), unless the name is taken by one of its functions or by a library.
fn export_legacy_globals(lua: &Lua) -> mlua::Result<()> {
    let g = lua.globals();
    let sysbench: Table = g.get("sysbench")?;
    let cmdline: Table = sysbench.get("cmdline")?;
    if !matches!(cmdline.get::<Value>("options")?, Value::Nil) {
        return Ok(());
    }
    let opt: Table = sysbench.get("opt")?;
    for pair in opt.pairs::<String, Value>() {
        let (name, value) = pair?;
        let name = name.replace('-', "_");
        if !matches!(g.raw_get::<Value>(name.as_str())?, Value::Function(_) | Value::Table(_)) {
            g.raw_set(name, value)?;
        }
    }
    Ok(())
}

fn install(lua: &Lua, shared: &Arc<Shared>, tid: usize, rand_errors: Vec<(usize, String)>) -> mlua::Result<()> {
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
    sysbench.set("version", super::SYSBENCH_VERSION)?;
    // sysbench's own string: scripts compare it (dbperf's version is in the header).
    sysbench.set("version_string", format!("sysbench {}", super::SYSBENCH_VERSION))?;
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
    // The context lives in the state's app data, which is never replaced: its address holds
    // for the state's life.
    let ctx_ptr: *const Ctx = &*ctx(lua);
    raw.set("fast", fast::entry_points(lua, ctx_ptr)?)?;
    raw.set(
        "fast_error",
        lua.create_function(|lua, ()| {
            Ok(ctx(lua)
                .fast_error
                .borrow_mut()
                .take()
                .unwrap_or_else(|| "unknown error".into()))
        })?,
    )?;
    // Why a distribution cannot be drawn from (its parameters), by its number.
    raw.set("rand_errors", lua.create_table_from(rand_errors)?)?;
    // On a blocking-I/O thread statements complete inside the Lua call, without a coroutine
    // switch (`query_now`, `execute_now`).
    raw.set("blocking", dbperf_engine::blocking_io())?;
    raw.set(
        "rand_u32",
        lua.create_function(|lua, ()| Ok(ctx(lua).rng.borrow_mut().random::<u32>()))?,
    )?;
    let family = shared.target.as_ref().map(|t| t.family);
    raw.set(
        "driver",
        lua.create_function(move |lua, name: Option<String>| {
            // sysbench reports SQL statistics once a script has made a driver.
            ctx(lua).shared.connected.store(true, std::sync::atomic::Ordering::Relaxed);
            let have = match family {
                Some(Family::Postgres) => "pgsql",
                _ => "mysql",
            };
            Ok(match name.as_deref() {
                None | Some("") => (Some(have.to_string()), None),
                Some(n) if n == have => (Some(have.to_string()), None),
                _ => (
                    None,
                    Some(format!(
                        "sysbench.sql.driver({name:?}): the target is {have} (give a {} target with --target, or --db-driver={have})",
                        if have == "mysql" { "postgres://" } else { "mysql://" }
                    )),
                ),
            })
        })?,
    )?;
    raw.set(
        "connect_start",
        lua.create_function(|lua, ()| {
            suspend::start(
                lua,
                Box::new(|lua| Box::pin(async move { connect(lua).await?.into_lua_multi(lua) })),
            );
            Ok(())
        })?,
    )?;
    raw.set(
        "take_answer",
        lua.create_function(|lua, ()| {
            ctx(lua)
                .answer
                .borrow_mut()
                .take()
                .unwrap_or_else(|| Err(mlua::Error::runtime("no answer to take: nothing was started")))
        })?,
    )?;
    raw.set(
        "connect_now",
        lua.create_function(|lua, ()| {
            let c = ctx(lua);
            run_now(&c, std::pin::pin!(connect(lua))).unwrap_or_else(|| {
                Ok((
                    None,
                    Some(vec![
                        "the run ended or was interrupted before the connection was made".into()
                    ]),
                ))
            })
        })?,
    )?;
    raw.set(
        "param_new",
        lua.create_function(|lua, (btype, max_len): (i64, Option<i64>)| {
            let c = ctx(lua);
            let mut params = c.params.borrow_mut();
            let p = ParamBox::new(btype, max_len, params.len()).map_err(mlua::Error::runtime)?;
            let ptr = LightUserData(p.ffi_ptr().cast());
            params.push(p);
            Ok(ptr)
        })?,
    )?;
    // `require` of a Lua module: found as Lua's own searcher finds it (package.path), and
    // compiled once for the run.
    let chunks = shared.chunks.clone();
    raw.set(
        "load_module",
        lua.create_function(move |lua, (name, path): (String, String)| {
            chunks.load(lua, Path::new(&path)).map_err(|e| {
                let why = match e {
                    ChunkError::Read(e) => format!("cannot read {path}: {e}"),
                    ChunkError::Lua(e) => lua_message(&e),
                };
                mlua::Error::runtime(format!("error loading module '{name}' from file '{path}':\n\t{why}"))
            })
        })?,
    )?;
    prelude(lua)?.call::<()>(raw)?;
    Ok(())
}

pub(super) fn ctx(lua: &Lua) -> mlua::AppDataRef<'_, Ctx> {
    lua.app_data_ref::<Ctx>()
        .expect("every dbperf Lua state has its context")
}

fn rand_table(lua: &Lua) -> mlua::Result<Table> {
    // uniform, default and the named distributions are the prelude's (through ffi).
    let t = lua.create_table()?;
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
pub(super) struct ConnInner {
    pub(super) session: Option<AnySession>,
    /// Prepared statements: SQL, server id (None: run as text), kind, read.
    stmts: Vec<StmtSlot>,
    bulk: Option<(String, String, usize)>,
    /// `con:disconnect()` was called.
    closed: bool,
    /// The rows of the last statement (a result is good until the next one, as in sysbench).
    last: RowData,
    /// Its number: a result table of an older statement fetches nothing.
    gen: u64,
    /// The last result's counts where the prelude reads them (`dbperf_result`).
    res: Box<UnsafeCell<FfiResult>>,
    /// The error of the last statement sent through [`fast`], for `con:last_error()`.
    pub(super) err: Option<DbError>,
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

/// `drv:connect()`: the connection, or the lines sysbench's driver logs when it cannot connect
/// (the prelude logs them and raises "connection creation failed").
async fn connect(lua: &Lua) -> mlua::Result<(Option<AnyUserData>, Option<Vec<String>>)> {
    let session = match open_session(lua).await {
        Ok(s) => s,
        Err(lines) => return Ok((None, Some(lines))),
    };
    let inner = Rc::new(RefCell::new(ConnInner {
        session: Some(session),
        stmts: Vec::new(),
        bulk: None,
        closed: false,
        last: RowData::None,
        gen: 0,
        res: Box::default(),
        err: None,
    }));
    ctx(lua).conns.borrow_mut().push(Rc::downgrade(&inner));
    Ok((Some(lua.create_userdata(Conn(inner))?), None))
}

/// A state's new session: a dry one under `--mysql-dry-run` (nothing is opened), else one
/// connected to the state's target; `Err`: the lines sysbench's driver logs when it cannot
/// connect.
async fn open_session(lua: &Lua) -> Result<AnySession, Vec<String>> {
    let (target, ignore) = {
        let c = ctx(lua);
        if c.shared.dry_run {
            return Ok(AnySession::dry(Family::Mysql));
        }
        let Some(t) = c.target.clone() else {
            return Err(vec![
                "no server to connect to: give --target (or --mysql-*/--pgsql-* options)".into(),
            ]);
        };
        (t, c.shared.ignore.clone())
    };
    AnySession::connect(&target, ignore)
        .await
        .map_err(|e| connect_failure(&target, &e))
}

/// What sysbench's drivers log when a connection cannot be made: where it went, then the
/// error (MySQL: its number; PostgreSQL: libpq's message, which ends with a new line).
fn connect_failure(target: &Target, e: &DbError) -> Vec<String> {
    match target.family {
        // A host name that does not resolve, in libpq's words (the resolver's reason after).
        Family::Postgres if e.message.contains("failed to lookup address") => {
            let why = e
                .message
                .split("failed to lookup address information: ")
                .nth(1)
                .and_then(|r| r.split(';').next())
                .unwrap_or("Name or service not known");
            vec![format!(
                "Connection to database failed: could not translate host name \"{}\" to address: {why}\n",
                target.host
            )]
        }
        Family::Postgres => vec![format!("Connection to database failed: {}\n", e.message)],
        Family::Mysql => vec![
            match &target.socket {
                Some(socket) => format!("unable to connect to MySQL server on socket '{socket}', aborting..."),
                None => format!(
                    "unable to connect to MySQL server on host '{}', port {}, aborting...",
                    target.host, target.port
                ),
            },
            // A host name that does not resolve is libmysqlclient's CR_UNKNOWN_HOST.
            match e.message.contains("failed to lookup address") {
                true => format!("error 2005: Unknown MySQL server host '{}' (0)", target.host),
                false => format!("error {}: {}", e.code.unwrap_or(2003), e.message),
            },
        ],
    }
}

/// What a statement primitive returns to the Lua half: its result, or `false` and the error's
/// errno, sqlstate, message, whether it is ignorable and its class (a tuple: no allocation).
type Ret = (Value, Value, Value, Value, Value, Value);

fn failure(lua: &Lua, e: &DbError) -> mlua::Result<Ret> {
    let (errno, state, message, ignorable, class) = error_values(lua, e)?;
    Ok((Value::Boolean(false), errno, state, message, ignorable, class))
}

/// An error as the prelude's `raise` takes it: errno, sqlstate, message, whether it is
/// ignorable, its class.
fn error_values(lua: &Lua, e: &DbError) -> mlua::Result<(Value, Value, Value, Value, Value)> {
    let ignorable = e.class != ErrorClass::Fatal;
    let errno = e.code.map_or(0.0, f64::from);
    // Neither a number nor a state: a misuse of the API (sysbench's "SQL API error").
    let state = match (&e.sqlstate, e.code) {
        (None, None) if !ignorable => Value::Nil,
        (Some(s), _) => Value::String(lua.create_string(s)?),
        (None, _) => Value::String(lua.create_string("HY000")?),
    };
    Ok((
        Value::Number(errno),
        state,
        Value::String(lua.create_string(primary_message(e))?),
        Value::Boolean(ignorable),
        Value::String(lua.create_string(e.class.name())?),
    ))
}

/// A server error's own words, as sysbench's drivers hand them to scripts: PostgreSQL's
/// primary message without the severity and SQLSTATE dbperf's sessions add around it.
fn primary_message(e: &DbError) -> &str {
    let Some(state) = &e.sqlstate else {
        return &e.message;
    };
    // The first line: the DETAIL/HINT/CONTEXT lines the server sent follow it.
    let inner = e
        .message
        .lines()
        .next()
        .unwrap_or_default()
        .strip_suffix(')')
        .and_then(|m| m.strip_suffix(state.as_str()))
        .and_then(|m| m.strip_suffix(" (SQLSTATE "));
    match inner.and_then(|m| m.split_once(": ")) {
        Some(("ERROR" | "FATAL" | "PANIC", message)) => message,
        _ => &e.message,
    }
}

pub(super) fn closed() -> DbError {
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
        m.add_method("prepare_start", |lua, this, sql: mlua::LuaString| {
            let inner = this.0.clone();
            suspend::start(
                lua,
                Box::new(move |lua| Box::pin(async move { prepare_on(lua, inner, sql).await?.into_lua_multi(lua) })),
            );
            Ok(())
        });
        m.add_method("prepare_now", |lua, this, sql: mlua::LuaString| {
            now(lua, prepare_on(lua, this.0.clone(), sql))
        });
        m.add_method("bulk_insert_init", |_, this, sql: String| {
            this.0.borrow_mut().bulk = Some((sql, String::new(), 0));
            Ok(true)
        });
        m.add_method("bulk_insert_next_start", |lua, this, values: mlua::LuaString| {
            let inner = this.0.clone();
            suspend::start(
                lua,
                Box::new(move |lua| {
                    Box::pin(async move { bulk_next_on(lua, inner, values).await?.into_lua_multi(lua) })
                }),
            );
            Ok(())
        });
        m.add_method("bulk_insert_next_now", |lua, this, values: mlua::LuaString| {
            now(lua, bulk_next_on(lua, this.0.clone(), values))
        });
        m.add_method("bulk_insert_done_start", |lua, this, ()| {
            let inner = this.0.clone();
            suspend::start(
                lua,
                Box::new(move |lua| Box::pin(async move { bulk_done_on(lua, inner).await?.into_lua_multi(lua) })),
            );
            Ok(())
        });
        m.add_method("bulk_insert_done_now", |lua, this, ()| {
            now(lua, bulk_done_on(lua, this.0.clone()))
        });
        m.add_method("fetch_row", |lua, this, (gen, row): (u64, usize)| {
            fetch_row(lua, &this.0, gen, row)
        });
        // The connection and its result where the prelude's ffi calls take them.
        m.add_method("ptrs", |_, this, ()| {
            let res = this.0.borrow().res.get();
            Ok((
                LightUserData(Rc::as_ptr(&this.0) as *mut std::ffi::c_void),
                LightUserData(res.cast()),
            ))
        });
        // The last error as libpq's PQerrorMessage words it (severity, message, the LINE and
        // caret of a position, DETAIL lines; a new line at its end), for sysbench's pgsql
        // driver log lines.
        m.add_method("libpq_error", |_, this, ()| {
            Ok(this
                .0
                .borrow()
                .err
                .as_ref()
                .map(|e| format!("{}\n", dbperf_driver::pg::libpq_text(e))))
        });
        // The error of the last statement sent through ffi.
        m.add_method("last_error", |lua, this, ()| {
            let e = this.0.borrow_mut().err.take().unwrap_or_else(|| DbError {
                class: ErrorClass::Fatal,
                code: None,
                sqlstate: None,
                message: "unknown error".into(),
            });
            error_values(lua, &e)
        });
        // Whether it was open.
        m.add_method("disconnect", |_, this, ()| {
            let mut c = this.0.borrow_mut();
            let was_open = !c.closed;
            c.session = None;
            c.closed = true;
            Ok(was_open)
        });
        m.add_method("reconnect_start", |lua, this, ()| {
            let inner = this.0.clone();
            suspend::start(
                lua,
                Box::new(move |lua| Box::pin(async move { reconnect_on(lua, inner).await?.into_lua_multi(lua) })),
            );
            Ok(())
        });
        m.add_method("reconnect_now", |lua, this, ()| {
            now(lua, reconnect_on(lua, this.0.clone()))
        });
    }
}

/// `con:prepare(sql)`.
async fn prepare_on(lua: &Lua, inner: Rc<RefCell<ConnInner>>, sql: mlua::LuaString) -> mlua::Result<Ret> {
    let sql = sql.to_str()?.to_string();
    let (kind, read) = ctx(lua).kind_of(&sql);
    let ps_disabled = ctx(lua).shared.ps_disabled;
    let Some(mut s) = take_session(&inner) else {
        return failure(lua, &closed());
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
        Err(e) => {
            let r = failure(lua, &e);
            // Kept for the driver's log line in libpq's words (`libpq_error`).
            inner.borrow_mut().err = Some(e);
            return r;
        }
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
        Stmt(Box::new(StmtCore {
            conn: inner,
            index,
            params: Vec::new(),
            buf: Vec::new(),
            rows: Rc::new(RefCell::new(Rows::deferred())),
        })),
        lua,
    )
}

/// `con:bulk_insert_next(values)`.
async fn bulk_next_on(lua: &Lua, inner: Rc<RefCell<ConnInner>>, values: mlua::LuaString) -> mlua::Result<Ret> {
    let values = values.to_str()?.to_string();
    let full = {
        let mut c = inner.borrow_mut();
        let Some((prefix, buf, rows)) = c.bulk.as_mut() else {
            return Ok((
                Value::Nil,
                Value::String(lua.create_string("attempt to call bulk_insert_next() before bulk_insert_init()")?),
                Value::Nil,
                Value::Nil,
                Value::Nil,
                Value::Nil,
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
        Some(sql) => flush(lua, &inner, &sql).await,
        None => ok_value(true, lua),
    }
}

/// `con:bulk_insert_done()`.
async fn bulk_done_on(lua: &Lua, inner: Rc<RefCell<ConnInner>>) -> mlua::Result<Ret> {
    let sql = {
        let mut c = inner.borrow_mut();
        match c.bulk.take() {
            Some((prefix, buf, rows)) if rows > 0 => Some(format!("{prefix}{buf}")),
            _ => None,
        }
    };
    match sql {
        Some(sql) => flush(lua, &inner, &sql).await,
        None => ok_value(true, lua),
    }
}

/// `con:reconnect()`.
async fn reconnect_on(lua: &Lua, inner: Rc<RefCell<ConnInner>>) -> mlua::Result<Ret> {
    match reconnect_conn(lua, &inner).await {
        Ok(()) => {
            ctx(lua)
                .shared
                .reconnects
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            ok_value(true, lua)
        }
        Err(e) => Ok((
            Value::Boolean(false),
            Value::String(lua.create_string(e.to_string())?),
            Value::Nil,
            Value::Nil,
            Value::Nil,
            Value::Nil,
        )),
    }
}

/// A primitive's future run to its end inside a plain call (a blocking-I/O thread); past the
/// run's end or after an interrupt, the statement's connection is given up.
fn now(lua: &Lua, fut: impl std::future::Future<Output = mlua::Result<Ret>>) -> mlua::Result<Ret> {
    let c = ctx(lua);
    match run_now(&c, std::pin::pin!(fut)) {
        Some(r) => r,
        None => failure(lua, &gave_up()),
    }
}

async fn flush(lua: &Lua, inner: &RefCell<ConnInner>, sql: &str) -> mlua::Result<Ret> {
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
        Ok(info) => {
            // A write when it stored rows (sysbench's rule for a statement without rows).
            let class = class_of(false, &ResultSet::affected(info.affected_rows));
            ctx(lua).record(kind, started, class);
            ok_value(true, lua)
        }
        Err(e) => failure(lua, &e),
    }
}

/// After an ignorable error on PostgreSQL the transaction is aborted: roll it back so the
/// event can run again, as sysbench's pgsql driver does (MySQL has already rolled back a
/// deadlock victim, and sysbench leaves its other errors to the script).
pub(super) async fn after_error(s: &mut AnySession, e: &DbError) {
    if s.family() == Family::Postgres && !matches!(e.class, ErrorClass::Fatal | ErrorClass::ConnectionLost) {
        let _ = s.query("ROLLBACK").await;
    }
}

/// Drives `fut` to completion on this thread (a blocking-I/O thread: each poll blocks in the
/// kernel for at most one slice). Gives up when the run is past its end or interrupted.
/// `fut` comes pinned by the caller (`pin!`), made in place: a statement's future is large, and
/// moving it in would copy it for every statement.
pub(super) fn run_now<F: std::future::Future>(c: &Ctx, mut fut: std::pin::Pin<&mut F>) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return Some(v);
        }
        let give_up = c.shared.give_up_at.load(std::sync::atomic::Ordering::Relaxed);
        if dbperf_core::interrupt::interrupted() || now_ns() >= give_up {
            return None;
        }
    }
}

/// The error of a statement abandoned by [`run_now`]; its connection is dropped.
pub(super) fn gave_up() -> DbError {
    DbError {
        class: ErrorClass::ConnectionLost,
        code: Some(2013),
        sqlstate: None,
        message: "no reply from the server before the run ended; the connection was dropped".into(),
    }
}

/// Takes a connection's session out for an await (no borrow is held across it).
pub(super) fn take_session(inner: &RefCell<ConnInner>) -> Option<AnySession> {
    inner.borrow_mut().session.take()
}

/// Puts it back, unless the script disconnected meanwhile.
pub(super) fn put_session(inner: &RefCell<ConnInner>, s: AnySession) {
    let mut c = inner.borrow_mut();
    if !c.closed {
        c.session = Some(s);
    }
}

/// sysbench's counter for a statement: read when it returns rows, write when it changed
/// rows, other otherwise.
pub(super) fn class_of(read: bool, rs: &ResultSet) -> QueryClass {
    if read {
        QueryClass::Read
    } else if rs.nrows > 0 {
        QueryClass::Write
    } else {
        QueryClass::Other
    }
}

/// What a statement primitive sends.
pub(super) enum Statement<'a> {
    /// A prepared statement with its parameters; a read's rows go into its reused buffer.
    Prepared(StmtId, &'a [Param<'a>], &'a Rc<RefCell<Rows>>),
    /// SQL text (a query, or a statement the server would not prepare, values written in).
    Text(std::borrow::Cow<'a, str>),
}

/// A prepared statement's [`Statement`]: by its server id, or as the text rendered into `buf`.
pub(super) fn statement<'a>(
    id: Option<StmtId>,
    params: &'a [Param<'a>],
    buf: &'a [u8],
    rows: &'a Rc<RefCell<Rows>>,
) -> Statement<'a> {
    match id {
        Some(id) => Statement::Prepared(id, params, rows),
        // Rendered from a Lua string and parameters, which may hold any bytes.
        None => Statement::Text(String::from_utf8_lossy(buf)),
    }
}

/// Sends `st` on `s`: a read's rows, or the rows a write changed. The one place both the
/// blocking ([`fast`]) and the event-loop paths send statements.
pub(super) async fn send(s: &mut AnySession, st: Statement<'_>, read: bool) -> Result<ResultSet, DbError> {
    match st {
        Statement::Prepared(id, params, rows) if read => {
            // Out of its cell for the await (no borrow held across it), then back.
            let mut taken = std::mem::replace(&mut *rows.borrow_mut(), Rows::new());
            let r = s.exec_rows(id, params, &mut taken).await;
            *rows.borrow_mut() = taken;
            r.map(|_| ResultSet::from_rows(rows.clone()))
        }
        Statement::Prepared(id, params, _) => s.exec(id, params).await.map(|i| ResultSet::affected(i.affected_rows)),
        Statement::Text(sql) if read => s.query_rows(&sql).await.map(ResultSet::from_text),
        Statement::Text(sql) => s.query(&sql).await.map(|i| ResultSet::affected(i.affected_rows)),
    }
}

/// Makes `rs` its connection's current result, its counts in the connection's
/// [`FfiResult`]: `nrows, nfields, generation`.
pub(super) fn publish(c: &mut ConnInner, rs: ResultSet) -> (f64, f64, u64) {
    c.gen += 1;
    c.last = rs.data;
    let counts = (rs.nrows as f64, rs.nfields as f64, c.gen);
    // SAFETY: the prelude reads the struct only from Lua code, not running now.
    unsafe {
        *c.res.get() = FfiResult {
            nrows: counts.0,
            gen: counts.2 as f64,
            nfields: counts.1,
        };
    }
    counts
}

/// Row `row` (0-based) of result `gen` of a connection, as sysbench's fetch_row gives it: a
/// table of strings, NULL as a hole; nil past the end or once another statement ran.
fn fetch_row(lua: &Lua, inner: &RefCell<ConnInner>, gen: u64, row: usize) -> mlua::Result<Value> {
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
            // Kept as received until the script reads them (most results are never read).
            rows.borrow_mut()
                .decode()
                .map_err(|e| mlua::Error::runtime(format!("fetch_row: {}", e.message)))?;
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
async fn reconnect_conn(lua: &Lua, inner: &RefCell<ConnInner>) -> Result<(), DbError> {
    let mut s = match take_session(inner) {
        Some(s) => s,
        // Dropped mid-statement: open a new one.
        None if !inner.borrow().closed => {
            let (dry, target, ignore) = {
                let c = ctx(lua);
                (c.shared.dry_run, c.target.clone(), c.shared.ignore.clone())
            };
            match target {
                _ if dry => AnySession::dry(Family::Mysql),
                Some(t) => AnySession::connect(&t, ignore).await?,
                None => return Ok(()),
            }
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
/// The state's statement log, for [`take_log`].
pub fn log_of(lua: &Lua) -> Rc<RefCell<Vec<Logged>>> {
    ctx(lua).log.clone()
}

/// Moves the statements of `log` (a state's, from [`log_of`]) to the engine's `out`.
pub fn take_log(log: &RefCell<Vec<Logged>>, out: &mut dbperf_engine::StatementLog) {
    let mut log = log.borrow_mut();
    for &(kind, service, class) in log.iter() {
        out.push_timed(kind, service, class);
    }
    log.clear();
}

/// Forgets the statements logged (outside a measured event).
pub fn clear_log(lua: &Lua) {
    ctx(lua).log.borrow_mut().clear();
}

/// Empties the state's statement log as [`clear_log`], counting what it held in
/// [`Shared::outside`]: statements of `thread_init` and `thread_done`, not of an event.
pub fn count_outside_events(lua: &Lua) {
    let c = ctx(lua);
    for (_, _, class) in c.log.borrow_mut().drain(..) {
        c.shared.outside[class as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Lua's text for a number (integers without a fraction).
pub(super) fn lua_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// `con:prepare()`'s handle; its core stays where it is (the prelude's ffi calls hold its
/// address).
struct Stmt(Box<StmtCore>);

/// A prepared statement of a connection, and what it is bound to.
pub(super) struct StmtCore {
    pub(super) conn: Rc<RefCell<ConnInner>>,
    pub(super) index: usize,
    /// The state's parameters bound to it, by number.
    pub(super) params: Vec<usize>,
    /// The statement's text with the values written in, when it runs as text.
    pub(super) buf: Vec<u8>,
    /// The rows of its last read, reused (shared with the result handed to the script).
    pub(super) rows: Rc<RefCell<Rows>>,
}

/// Statement `index` of `conn`: its kind, whether it reads, and its server id (None: it runs
/// as text, which is rendered from `params` into `buf` here).
pub(super) fn slot(
    conn: &ConnInner,
    index: usize,
    buf: &mut Vec<u8>,
    params: &[Param<'_>],
) -> Result<(u16, bool, Option<StmtId>), String> {
    let Some(slot) = conn.stmts.get(index) else {
        return Err("statement handle out of range".into());
    };
    if !slot.open {
        return Err("stmt:execute() after stmt:close()".into());
    }
    if slot.id.is_none() {
        buf.clear();
        slot.text.render(params, buf);
    }
    Ok((slot.kind, slot.read, slot.id))
}

impl UserData for Stmt {
    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        m.add_method_mut("bind_param", |lua, this, ids: mlua::Variadic<i64>| {
            let known = ctx(lua).params.borrow().len();
            let mut params = Vec::with_capacity(ids.len());
            for (n, id) in ids.iter().enumerate() {
                match usize::try_from(*id) {
                    Ok(i) if i < known => params.push(i),
                    _ => {
                        return Err(mlua::Error::runtime(format!(
                            "stmt:bind_param(): argument {} is not a parameter made by stmt:bind_create()",
                            n + 1
                        )))
                    }
                }
            }
            this.0.params = params;
            Ok(0)
        });
        m.add_method_mut("close", |_, this, ()| {
            if let Some(s) = this.0.conn.borrow_mut().stmts.get_mut(this.0.index) {
                s.open = false;
            }
            Ok(0)
        });
        // The statement where the prelude's ffi calls take it.
        m.add_method_mut("ptr", |_, this, ()| {
            let core: *mut StmtCore = &mut *this.0;
            Ok(LightUserData(core.cast()))
        });
    }
}

/// A statement's result before it is published to its connection: its rows (a read) or the
/// rows it changed (a write).
pub(super) struct ResultSet {
    pub(super) nrows: u64,
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
    pub(super) fn affected(n: u64) -> ResultSet {
        ResultSet {
            nrows: n,
            nfields: 0,
            data: RowData::None,
        }
    }

    pub(super) fn from_text(rows: Vec<Vec<Option<String>>>) -> ResultSet {
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

    pub(super) fn from_rows(rows: Rc<RefCell<Rows>>) -> ResultSet {
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
        dbperf_driver::rows::Cell::Null => None,
        dbperf_driver::rows::Cell::Int(i) => Some(i.to_string().into_bytes()),
        dbperf_driver::rows::Cell::Float(f) => Some(lua_number(f).into_bytes()),
        dbperf_driver::rows::Cell::Bytes(..) => rows.bytes(r, c).map(<[u8]>::to_vec),
    }
}

/// Calls global function `name` if the script defines it, in a coroutine (so it may use the
/// database); `Ok(None)` when it does not exist.
pub async fn call_global(lua: &Lua, name: &str, args: impl mlua::IntoLuaMulti) -> Result<Option<Value>, mlua::Error> {
    match lua.globals().get::<Value>(name)? {
        Value::Function(f) => suspend::call(lua, &f, args).await.map(Some),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(sqlstate: Option<&str>, message: &str) -> DbError {
        DbError {
            class: ErrorClass::Fatal,
            code: None,
            sqlstate: sqlstate.map(String::from),
            message: message.into(),
        }
    }

    #[test]
    fn scripts_get_a_server_error_in_its_own_words() {
        let pg = error(
            Some("23502"),
            "ERROR: null value in column \"a\" violates not-null constraint (SQLSTATE 23502)",
        );
        assert_eq!(
            primary_message(&pg),
            "null value in column \"a\" violates not-null constraint"
        );
        let mysql = error(Some("42S02"), "Table 'sbtest.t' doesn't exist");
        assert_eq!(primary_message(&mysql), "Table 'sbtest.t' doesn't exist");
        let detailed = error(
            Some("23505"),
            "ERROR: duplicate key value violates unique constraint \"t_pkey\" (SQLSTATE 23505)\nDETAIL:  Key (id)=(1) already exists.",
        );
        assert_eq!(
            primary_message(&detailed),
            "duplicate key value violates unique constraint \"t_pkey\""
        );
        let other_state = error(Some("42P01"), "ERROR: x (SQLSTATE 23502)");
        assert_eq!(primary_message(&other_state), "ERROR: x (SQLSTATE 23502)");
        assert_eq!(primary_message(&closed()), closed().message);
    }

    #[test]
    fn a_failed_connect_is_logged_as_sysbench_s_drivers_log_it() {
        let e = error(None, "cannot connect to db:3306 as sbtest: Connection refused");
        let mut t = Target::parse("mysql://sbtest@db:3306/sbtest").unwrap();
        assert_eq!(
            connect_failure(&t, &e),
            [
                "unable to connect to MySQL server on host 'db', port 3306, aborting...",
                "error 2003: cannot connect to db:3306 as sbtest: Connection refused",
            ]
        );
        t.family = Family::Postgres;
        assert_eq!(
            connect_failure(&t, &e),
            ["Connection to database failed: cannot connect to db:3306 as sbtest: Connection refused\n"]
        );
    }
}
