//! Runs parsed scripts: [`ScriptWorkload`] (the run's definition: scripts, weights, query
//! mode, `-D` variables) and [`ScriptWorker`], one per connection, which picks a script per
//! transaction by weight (as pgbench does), evaluates its meta-commands and sends its SQL
//! (`prepared`: prepared once per connection, variables bound as parameters; `extended`: an
//! unnamed statement parsed for every execution, variables bound; `simple`: text with the
//! variables' values written into it). A NULL variable is bound as SQL NULL.
//! `-M extended` needs a session with unnamed statements ([`Session::UNNAMED_STATEMENTS`]).
//!
//! The hot path allocates nothing in steady state: the program is borrowed (not cloned)
//! per transaction, parameters borrow the variables, and text forms and rows go to
//! buffers each client reuses.
//!
//! `\sleep` before the script's first SQL command or after its last is a pause outside the
//! response time ([`Worker::pause`]); a `\sleep` between SQL commands is inside it, as in
//! pgbench. Pipelines run their statements one at a time.

use std::sync::Arc;
use std::time::Duration;

use super::expr::{eval, Env, Value};
use super::parse::{atoi, Amount, Op, Parsed, Piece};
use super::per_command::{CommandStats, Ending};
use super::random::{Prng, Streams};
use super::{CLIENT_ID, RANDOM_SEED, SCALE};
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::{abort_transaction, Cell, DbError, ExecInfo, Param, Rows, Session, StmtId, Target};
use dbperf_engine::clock::now_ns;
use smallvec::SmallVec;

use dbperf_engine::{ErrorClass, OpTable, QueryClass, StatementLog, TxnDone, TxnError, Worker, Workload};

/// pgbench's `-M`: how statements go to the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueryMode {
    /// Text queries, variables written in as their values.
    Simple,
    /// Prepared once per connection, variables bound as parameters.
    Prepared,
    /// An unnamed statement parsed for every execution, variables bound as parameters.
    Extended,
}

impl QueryMode {
    /// Parses `-M`.
    pub fn parse(s: &str) -> Result<QueryMode, String> {
        match s {
            "simple" => Ok(QueryMode::Simple),
            "prepared" => Ok(QueryMode::Prepared),
            "extended" => Ok(QueryMode::Extended),
            other => Err(format!(
                "unknown query mode -M {other:?}: use simple, extended or prepared"
            )),
        }
    }

    /// pgbench's name for it.
    pub fn name(self) -> &'static str {
        match self {
            QueryMode::Simple => "simple",
            QueryMode::Prepared => "prepared",
            QueryMode::Extended => "extended",
        }
    }
}

/// Everything the workers share: the scripts, their weights, the mode and the starting
/// variables.
#[derive(Debug)]
pub struct Program {
    /// The scripts, variables and statements.
    pub parsed: Parsed,
    /// Each script's weight.
    pub weights: Vec<u64>,
    /// Their sum.
    total_weight: u64,
    /// How statements are sent.
    pub mode: QueryMode,
    /// `-D name=value`, and the automatic variables, by slot.
    pub initial: Vec<Option<Value>>,
    /// Statement names (the [`OpTable`] statements) and each statement's index among them.
    names: Vec<String>,
    kinds: Vec<u16>,
    /// Statements that read (their verb is SELECT, WITH, SHOW, VALUES or TABLE).
    reads: Vec<bool>,
    /// For each script, the index of its last SQL command (a `\sleep` after it is a pause).
    last_sql: Vec<usize>,
    /// `-M extended`: each statement with `$1..$n` placeholders.
    unnamed: Vec<String>,
    /// The random streams of the run (its seed and number of clients).
    streams: Streams,
    /// `-D default_seed=...` was given.
    seed_defined: bool,
    /// `--debug`: each client says on stderr what it executes, sends and receives.
    pub debug: bool,
    /// `--verbose-errors`: each server error a transaction meets is said on stderr, the
    /// ones retried too.
    pub verbose_errors: bool,
    /// `--max-tries` (0: unlimited): a transaction retried after a serialization failure or
    /// deadlock runs the same script with the same random draws, as pgbench's.
    pub max_tries: u32,
    /// `-r`: every command's latency, failures and retries (timed only when asked).
    pub per_command: Option<Arc<CommandStats>>,
}

impl Program {
    /// A run of `parsed` with `weights` (one per script, not all zero), `-D` `defines`,
    /// `scale` and the run's `seed`.
    pub fn new(
        mut parsed: Parsed,
        weights: Vec<u64>,
        mode: QueryMode,
        defines: &[(String, String)],
        scale: i64,
        seed: u64,
    ) -> Result<Program, String> {
        if weights.iter().sum::<u64>() == 0 {
            return Err("every script has weight 0: give at least one a positive @WEIGHT".into());
        }
        if mode == QueryMode::Simple {
            if let Some(c) = parsed
                .scripts
                .iter()
                .flat_map(|s| &s.cmds)
                .find(|c| matches!(c.op, Op::StartPipeline))
            {
                return Err(format!(
                    "{}: \\startpipeline needs -M prepared (pgbench refuses pipelines in simple mode)",
                    c.loc
                ));
            }
        }
        let mut initial = vec![None; parsed.vars.len()];
        initial[SCALE as usize] = Some(Value::Int(scale));
        let streams = Streams { seed, clients: 1 };
        initial[parsed.vars.default_seed as usize] = Some(Value::Int(streams.default_seed()));
        initial[RANDOM_SEED as usize] = Some(Value::Int(seed as i64));
        let mut seed_defined = false;
        for (name, value) in defines {
            if !super::valid_name(name) {
                return Err(format!(
                    "-D {name}=...: option: invalid variable name: \"{name}\" (letters, digits and underscores)"
                ));
            }
            let slot = parsed.vars.slot(name) as usize;
            seed_defined |= slot == parsed.vars.default_seed as usize;
            initial.resize(parsed.vars.len(), None);
            // Kept as text, as pgbench keeps it: SQL gets it as written, an expression
            // reads it typed (expr::typed).
            initial[slot] = Some(Value::Str(value.clone()));
        }
        let (names, kinds) = parsed.statement_kinds();
        let reads = parsed
            .statements
            .iter()
            .map(|s| {
                let v = s.name.split(' ').next().unwrap_or("");
                matches!(v, "SELECT" | "WITH" | "SHOW" | "VALUES" | "TABLE")
            })
            .collect();
        let last_sql = parsed
            .scripts
            .iter()
            .map(|s| s.cmds.iter().rposition(|c| matches!(c.op, Op::Sql { .. })).unwrap_or(0))
            .collect();
        let unnamed = match mode {
            QueryMode::Extended => parsed
                .statements
                .iter()
                .map(|s| dbperf_driver::pg::translate_placeholders(&s.placeholders))
                .collect(),
            _ => Vec::new(),
        };
        Ok(Program {
            parsed,
            total_weight: weights.iter().sum(),
            weights,
            mode,
            initial,
            names,
            kinds,
            reads,
            last_sql,
            unnamed,
            streams,
            seed_defined,
            debug: false,
            verbose_errors: false,
            max_tries: 1,
            per_command: None,
        })
    }

    /// The run has `clients` clients: each client's random numbers and `:default_seed`
    /// are drawn from the run's seed as pgbench draws them for that many clients.
    pub fn with_clients(mut self, clients: usize) -> Program {
        self.streams.clients = clients.max(1);
        if !self.seed_defined {
            let slot = self.parsed.vars.default_seed as usize;
            self.initial[slot] = Some(Value::Int(self.streams.default_seed()));
        }
        self
    }

    /// The transaction and statement names.
    pub fn ops(&self) -> OpTable {
        let mut transactions: Vec<String> = Vec::new();
        for s in &self.parsed.scripts {
            let mut name = s.name.clone();
            let mut k = 2;
            while transactions.contains(&name) {
                name = format!("{}#{k}", s.name);
                k += 1;
            }
            transactions.push(name);
        }
        OpTable {
            transactions,
            statements: self.names.clone(),
        }
    }
}

/// Why `-M extended` is refused where it is.
pub const EXTENDED_NEEDS: &str = "-M extended (an unnamed statement parsed for every execution) is \
    PostgreSQL's extended query protocol and needs dbperf's own PostgreSQL client (--client-impl wire, \
    the default) on a postgres:// target; MySQL has no unnamed statements: use -M prepared or -M simple";

/// A run of scripts on sessions of type `S`.
pub struct ScriptWorkload<S> {
    program: Arc<Program>,
    target: Target,
    ignore: IgnoreErrors,
    session: std::marker::PhantomData<fn() -> S>,
}

impl<S: Session + 'static> ScriptWorkload<S> {
    /// `program` against `target`.
    pub fn new(program: Arc<Program>, target: Target, ignore: IgnoreErrors) -> ScriptWorkload<S> {
        ScriptWorkload {
            program,
            target,
            ignore,
            session: std::marker::PhantomData,
        }
    }
}

impl<S: Session + 'static> Workload for ScriptWorkload<S> {
    type Worker = ScriptWorker<S>;

    fn ops(&self) -> OpTable {
        self.program.ops()
    }

    async fn connect(&self, worker: usize) -> Result<ScriptWorker<S>, TxnError> {
        if self.program.mode == QueryMode::Extended && !S::UNNAMED_STATEMENTS {
            return Err(TxnError::new(ErrorClass::Fatal, None, EXTENDED_NEEDS.to_string()));
        }
        let mut session = S::connect(&self.target, self.ignore.clone()).await?;
        if self.program.mode == QueryMode::Prepared {
            // As pgbench binds them: text, the server converting (and refusing) the values.
            session.send_params_as_text();
        }
        let mut values = self.program.initial.clone();
        values[CLIENT_ID as usize] = Some(Value::Int(worker as i64));
        let mut w = ScriptWorker {
            program: self.program.clone(),
            st: State {
                session,
                values,
                rng: self.program.streams.client(worker),
                chooser: self.program.streams.chooser(worker),
                stmts: Vec::new(),
                rows: Rows::new(),
                sql: String::new(),
                texts: Vec::new(),
                next: None,
                retry: Retry::default(),
                failed: None,
                failed_in: 0,
                script: 0,
                deferred_us: 0,
                columnless_rows: None,
            },
        };
        w.st.prepare_all(&w.program).await?;
        Ok(w)
    }
}

/// One pgbench client running scripts: the shared program, and its own state (kept apart
/// so the hot path borrows the program without touching its reference count).
pub struct ScriptWorker<S: Session> {
    program: Arc<Program>,
    st: State<S>,
}

/// A client's session, variables and reused buffers.
struct State<S: Session> {
    session: S,
    values: Vec<Option<Value>>,
    /// The random state of the script's functions.
    rng: Prng,
    /// The random state picking scripts by weight.
    chooser: Prng,
    stmts: Vec<StmtId>,
    rows: Rows,
    sql: String,
    /// Text forms of the parameters that are neither integers nor strings.
    texts: Vec<String>,
    /// The script chosen and the command to continue at, once [`Worker::pause`] ran its
    /// leading meta-commands.
    next: Option<(usize, usize)>,
    /// An error found by `pause`, reported by the next `execute`.
    failed: Option<TxnError>,
    /// `\sleep` after the last SQL command, waited before the next transaction.
    deferred_us: u64,
    /// The rows of the last `-M simple` query that returned no columns (`SELECT \gset`),
    /// which [`Rows`] cannot count.
    columnless_rows: Option<usize>,
    /// What a retried transaction runs again.
    retry: Retry,
    /// `-r`: pgbench's number of the command a failed transaction stopped in.
    failed_in: u32,
    /// The script of the transaction under way (or last run).
    script: usize,
}

/// The script and random state a transaction began with (kept only when `--max-tries` is
/// not 1), and the tries it has had.
#[derive(Default)]
struct Retry {
    start: Option<(usize, Prng)>,
    again: Option<(usize, Prng)>,
    tries: u32,
}

/// Why a transaction stopped: the script (an expression, a variable) or the server.
enum Fail {
    Script(TxnError),
    Db(DbError),
}

impl From<TxnError> for Fail {
    fn from(e: TxnError) -> Fail {
        Fail::Script(e)
    }
}

impl From<DbError> for Fail {
    fn from(e: DbError) -> Fail {
        Fail::Db(e)
    }
}

/// A server error that stopped a client: `FILE:LINE: ` and the server's text as libpq
/// prints it (`ERROR:  message`, then its `DETAIL:`/`CONTEXT:` lines), the command's line
/// after the first line.
fn located(loc: &super::parse::Loc, text: &str) -> String {
    let (first, rest) = text.split_once('\n').map_or((text, None), |(f, r)| (f, Some(r)));
    let mut out = format!("{loc}: {first} (in: {})", loc.text.trim());
    if let Some(r) = rest {
        out.push('\n');
        out.push_str(r);
    }
    out
}

/// `-r`: the meta-command `running` has ended (`extra_ns` more: its sleep).
fn close(t: &CommandStats, script: usize, running: &mut Option<(u32, u64)>, extra_ns: u64) {
    if let Some((number, began)) = running.take() {
        t.add(
            script,
            number,
            now_ns().saturating_sub(began).saturating_add(extra_ns),
            true,
        );
    }
}

/// Where the SQL command starting at `pc` ends: after its last part when it is a compound
/// (`\\;`) none of whose parts stores rows, else after `pc`.
fn compound_end(cmds: &[super::parse::Cmd], pc: usize) -> usize {
    let number = cmds[pc].number;
    let mut end = pc;
    while let Some(Op::Sql { store, .. }) = cmds.get(end).filter(|c| c.number == number).map(|c| &c.op) {
        if store.is_some() {
            return pc + 1;
        }
        end += 1;
    }
    end.max(pc + 1)
}

/// A statement the server would not prepare.
const UNPREPARED: StmtId = StmtId(u32::MAX);

/// A script error at run time: `FILE:LINE: message`, with the line.
fn script_error(loc: &super::parse::Loc, message: &str) -> TxnError {
    TxnError::new(
        ErrorClass::Fatal,
        None,
        format!("{loc}: {message} (in: {})", loc.text.trim()),
    )
}

impl<S: Session> State<S> {
    /// `--debug`'s line: `pgbench: client N WHAT`, as pgbench's.
    #[cold]
    fn debug(&self, what: std::fmt::Arguments<'_>) {
        let id = match self.values[CLIENT_ID as usize] {
            Some(Value::Int(i)) => i,
            _ => 0,
        };
        eprintln!("pgbench: client {id} {what}");
    }

    /// The script of the next transaction: the one a retry runs again, with its random
    /// state, or one chosen by weight.
    fn begin(&mut self, program: &Program) -> usize {
        let script = match self.retry.again.take() {
            Some((script, rng)) => {
                self.rng = rng;
                script
            }
            None => self.choose(program),
        };
        if program.max_tries != 1 {
            self.retry.start = Some((script, self.rng.clone()));
        }
        if program.debug {
            self.debug(format_args!(
                "executing script \"{}\"",
                program.parsed.scripts[script].name
            ));
        }
        script
    }

    /// After a transaction: a serialization failure or deadlock with tries left is run
    /// again as it began (the engine retries it).
    fn after(&mut self, program: &Program, class: Option<ErrorClass>) {
        match class {
            Some(ErrorClass::Deadlock | ErrorClass::Serialization) if program.max_tries != 1 => {
                self.retry.tries += 1;
                if program.max_tries == 0 || self.retry.tries < program.max_tries {
                    self.retry.again = self.retry.start.take();
                } else {
                    self.retry.tries = 0;
                }
            }
            _ => self.retry.tries = 0,
        }
    }

    /// Prepares every statement (`-M prepared`). One the server refuses is said on stderr
    /// in libpq's words and left unprepared, as pgbench leaves it: the client stops when it
    /// reaches it.
    async fn prepare_all(&mut self, program: &Program) -> Result<(), DbError> {
        self.stmts.clear();
        if program.mode == QueryMode::Prepared {
            for (i, s) in program.parsed.statements.iter().enumerate() {
                if s.comment_only && !S::EMPTY_QUERIES {
                    // Never sent (`transaction` passes over it).
                    self.stmts.push(UNPREPARED);
                    continue;
                }
                if program.debug {
                    self.debug(format_args!("preparing P_{i}"));
                }
                let id = match self.session.prepare(&s.placeholders).await {
                    Ok(id) => id,
                    Err(e) if e.sqlstate.is_some() && e.class != ErrorClass::ConnectionLost => {
                        eprintln!("pgbench: error: {}", dbperf_driver::pg::libpq_text(&e));
                        UNPREPARED
                    }
                    Err(e) => return Err(e),
                };
                self.stmts.push(id);
            }
        }
        Ok(())
    }

    fn choose(&mut self, program: &Program) -> usize {
        let w = &program.weights;
        if w.len() == 1 {
            return 0;
        }
        let mut r = self.chooser.up_to(program.total_weight - 1);
        for (i, &x) in w.iter().enumerate() {
            if r < x {
                return i;
            }
            r -= x;
        }
        w.len() - 1
    }

    /// Runs the meta-commands of `script` from `pc` until SQL (or the end), which
    /// need no server; returns where it stopped and the microseconds of `\sleep` met.
    /// A `\sleep` between SQL commands stops it when `sleep_inline` (the caller sleeps in
    /// the transaction): returns the next command, that sleep and the sleeps that are pauses.
    fn run_local(
        &mut self,
        program: &Program,
        script: usize,
        mut pc: usize,
        sleep_inline: bool,
    ) -> Result<(usize, u64, u64), TxnError> {
        let cmds = &program.parsed.scripts[script].cmds;
        let mut paused = 0u64;
        // `-r`: the meta-command running (its number and start), timed once the next begins.
        let timed = program.per_command.as_deref();
        let mut running: Option<(u32, u64)> = None;
        while pc < cmds.len() {
            let c = &cmds[pc];
            if let Some(t) = timed {
                close(t, script, &mut running, 0);
                if !matches!(c.op, Op::Sql { .. }) {
                    running = Some((c.number, now_ns()));
                }
            }
            if program.debug && !matches!(c.op, Op::Sql { .. }) {
                self.debug(format_args!("executing {}", c.loc.text.trim()));
            }
            let mut env = Env {
                values: &self.values,
                vars: &program.parsed.vars,
                rng: &mut self.rng,
                script,
                command: c.number,
            };
            match &c.op {
                Op::Sql { .. } => break,
                Op::Set { var, expr } => {
                    let v = eval(expr, &mut env)
                        .map_err(|m| script_error(&c.loc, &format!("{m}; evaluation of meta-command failed")))?;
                    self.values[*var as usize] = Some(v);
                }
                Op::Sleep { amount, unit_us } => {
                    let n = match amount {
                        Amount::Const(n) => *n,
                        // pgbench reads the variable's text form as C's atoi does.
                        Amount::Var(slot) => {
                            let name = program.parsed.vars.name(*slot);
                            let Some(Some(v)) = self.values.get(*slot as usize) else {
                                return Err(script_error(
                                    &c.loc,
                                    &format!("sleep: undefined variable \"{name}\"; execution of meta-command failed"),
                                ));
                            };
                            let text = v.to_string();
                            let n = atoi(&text);
                            if n == 0 && !text.starts_with(|c: char| c.is_ascii_digit()) {
                                return Err(script_error(
                                    &c.loc,
                                    &format!(
                                        "sleep: invalid sleep time \"{text}\" for variable \"{name}\"; execution of meta-command failed"
                                    ),
                                ));
                            }
                            n
                        }
                    };
                    let us = (n.max(0) as u64).saturating_mul(*unit_us);
                    if let Some(t) = timed {
                        // pgbench's time for a \sleep includes the sleep.
                        close(t, script, &mut running, us.saturating_mul(1000));
                    }
                    if sleep_inline && pc < program.last_sql[script] {
                        // Between SQL commands: the caller sleeps, inside the transaction.
                        return Ok((pc + 1, us, paused));
                    }
                    paused = paused.saturating_add(us);
                }
                Op::JumpUnless { cond, to } => {
                    let v = eval(cond, &mut env)
                        .map_err(|m| script_error(&c.loc, &format!("{m}; evaluation of meta-command failed")))?;
                    if !v.is_true() {
                        pc = *to;
                        continue;
                    }
                }
                Op::Jump(to) => {
                    pc = *to;
                    continue;
                }
                Op::StartPipeline | Op::EndPipeline => {}
                Op::Fail(m) => return Err(script_error(&c.loc, m)),
            }
            pc += 1;
        }
        if let Some(t) = timed {
            close(t, script, &mut running, 0);
        }
        Ok((pc, 0, paused))
    }

    async fn transaction(
        &mut self,
        program: &Program,
        script: usize,
        mut pc: usize,
        log: &mut StatementLog,
    ) -> Result<(), Fail> {
        let cmds = &program.parsed.scripts[script].cmds;
        while pc < cmds.len() {
            let c = &cmds[pc];
            let Op::Sql { stmt, store } = &c.op else {
                let (next, inline, paused) = self.run_local(program, script, pc, true)?;
                self.deferred_us = self.deferred_us.saturating_add(paused);
                if inline > 0 {
                    tokio::time::sleep(Duration::from_micros(inline)).await;
                }
                pc = next;
                continue;
            };
            if program.parsed.statements[*stmt].comment_only && !S::EMPTY_QUERIES {
                // A block comment alone, which this server would refuse: nothing to send.
                if let Some(t) = &program.per_command {
                    t.add(script, c.number, 0, true);
                }
                pc += 1;
                continue;
            }
            if program.debug {
                // pgbench's words: a prepared statement by its name (numbered over the
                // scripts' SQL commands), an extended query by its text with $N parameters.
                match program.mode {
                    QueryMode::Prepared => self.debug(format_args!("sending P_{stmt}")),
                    QueryMode::Extended => self.debug(format_args!(
                        "sending {}",
                        dbperf_driver::pg::translate_placeholders(&program.parsed.statements[*stmt].placeholders)
                    )),
                    QueryMode::Simple => {}
                }
            }
            // A compound command (`\\;`) in simple mode is one query, as pgbench sends it (one
            // round trip, one implicit transaction), unless a part stores its rows.
            let end = match program.mode {
                QueryMode::Simple if S::MULTI_STATEMENT_QUERIES => compound_end(cmds, pc),
                _ => pc + 1,
            };
            let start = now_ns();
            let result = match program.mode {
                QueryMode::Prepared | QueryMode::Extended => self.exec_bound(program, *stmt, store.is_some()).await,
                QueryMode::Simple if end > pc + 1 => {
                    let parts: SmallVec<[usize; 8]> = cmds[pc..end]
                        .iter()
                        .filter_map(|c| match c.op {
                            Op::Sql { stmt, .. } => Some(stmt),
                            _ => None,
                        })
                        .collect();
                    self.exec_simple(program, &parts, false).await
                }
                QueryMode::Simple => {
                    self.exec_simple(program, std::slice::from_ref(stmt), store.is_some())
                        .await
                }
            };
            if program.debug {
                self.debug(format_args!("receiving"));
            }
            if result.is_err() {
                self.failed_in = c.number;
            }
            let result = match result {
                Ok(r) => r,
                // An error that stops the run says which command of which script failed.
                Err(Fail::Db(mut e)) if e.class == ErrorClass::Fatal => {
                    e.message = located(&c.loc, &dbperf_driver::pg::libpq_text(&e));
                    return Err(Fail::Db(e));
                }
                Err(Fail::Db(e)) if program.verbose_errors => {
                    // pgbench's words: commands counted from 0, scripts too.
                    self.debug(format_args!(
                        "got an error in command {} (SQL) of script {script}; {}",
                        c.number.saturating_sub(1),
                        dbperf_driver::pg::libpq_text(&e)
                    ));
                    return Err(Fail::Db(e));
                }
                Err(e) => return Err(e),
            };
            let class = if program.reads[*stmt] {
                QueryClass::Read
            } else if result.affected_rows > 0 {
                QueryClass::Write
            } else {
                QueryClass::Other
            };
            log.record(program.kinds[*stmt], start, class);
            if let Some(store) = store {
                self.store(store, &c.loc)?;
            }
            if let Some(t) = &program.per_command {
                // A compound command's parts add up and count once, at its last part.
                let last = !cmds
                    .get(end)
                    .is_some_and(|n| n.number == c.number && matches!(n.op, Op::Sql { .. }));
                t.add(script, c.number, now_ns().saturating_sub(start), last);
            }
            pc = end;
        }
        Ok(())
    }

    /// Sends statement `stmt` with its variables bound as parameters: prepared (`-M
    /// prepared`) or as an unnamed statement (`-M extended`). NULL variables are bound as
    /// SQL NULL.
    async fn exec_bound(&mut self, program: &Program, stmt: usize, rows: bool) -> Result<ExecInfo, Fail> {
        let s = &program.parsed.statements[stmt];
        let n = s.params.len();
        // Text forms of values that are neither integers nor strings, in reused strings.
        if self.texts.len() < n {
            self.texts.resize(n, String::new());
        }
        for (k, slot) in s.params.iter().enumerate() {
            use std::fmt::Write as _;
            match &self.values[*slot as usize] {
                // An undefined variable is bound as NULL, as pgbench binds it.
                None | Some(Value::Null | Value::Int(_) | Value::Str(_)) => {}
                Some(v) => {
                    self.texts[k].clear();
                    let _ = write!(self.texts[k], "{v}");
                }
            }
        }
        let mut small = [Param::Int(0); 16];
        let mut big = Vec::new();
        let params: &[Param<'_>] = {
            let values = &self.values;
            let texts = &self.texts;
            let param = |k: usize, slot: &u32| match &values[*slot as usize] {
                Some(Value::Int(i)) => Param::Int(*i),
                Some(Value::Str(t)) => Param::Bytes(t.as_bytes()),
                Some(Value::Null) | None => Param::Null,
                Some(_) => Param::Bytes(texts[k].as_bytes()),
            };
            if n <= small.len() {
                for (k, slot) in s.params.iter().enumerate() {
                    small[k] = param(k, slot);
                }
                &small[..n]
            } else {
                big.extend(s.params.iter().enumerate().map(|(k, slot)| param(k, slot)));
                &big
            }
        };
        let out = rows.then_some(&mut self.rows);
        let r = match program.mode {
            QueryMode::Extended => self.session.exec_unnamed(&program.unnamed[stmt], params, out).await,
            _ => {
                let id = self.stmts[stmt];
                if id == UNPREPARED {
                    return Err(Fail::Db(DbError {
                        class: ErrorClass::Fatal,
                        code: None,
                        sqlstate: None,
                        message: format!(
                            "prepared statement \"P_{stmt}\" does not exist: the server refused to prepare it (its error is above)"
                        ),
                    }));
                }
                match out {
                    Some(rows) => self.session.exec_rows(id, params, rows).await,
                    None => self.session.exec(id, params).await,
                }
            }
        };
        Ok(r?)
    }

    /// Sends `stmts` as one query (the parts of a compound command joined by `;`), with the
    /// variables' values written in; `rows`: the (one) statement's rows are kept for `\\gset`.
    async fn exec_simple(&mut self, program: &Program, stmts: &[usize], rows: bool) -> Result<ExecInfo, Fail> {
        self.sql.clear();
        for (k, &stmt) in stmts.iter().enumerate() {
            if k > 0 {
                self.sql.push(';');
            }
            self.render(program, stmt);
        }
        if program.debug {
            self.debug(format_args!("sending {}", self.sql));
        }
        if !rows {
            return Ok(self.session.query(&self.sql).await?);
        }
        let got = self.session.query_rows(&self.sql).await?;
        self.rows.reset(got.first().map_or(0, |r| r.len()));
        self.columnless_rows = got.first().is_some_and(|r| r.is_empty()).then_some(got.len());
        for row in &got {
            for cell in row {
                match cell {
                    Some(t) => self.rows.push_bytes(t.as_bytes()),
                    None => self.rows.push_null(),
                }
            }
        }
        Ok(ExecInfo::default())
    }

    /// Appends statement `stmt`'s text, its variables' values written in, to `self.sql`.
    fn render(&mut self, program: &Program, stmt: usize) {
        use std::fmt::Write as _;
        let s = &program.parsed.statements[stmt];
        for p in &s.pieces {
            match p {
                Piece::Text(t) => self.sql.push_str(t),
                Piece::Quoted(slot, written) => match &self.values[*slot as usize] {
                    Some(v) => {
                        let _ = write!(self.sql, "{v}");
                    }
                    None => self.sql.push_str(written),
                },
                Piece::Var(slot) => match &self.values[*slot as usize] {
                    // pgbench leaves an undefined variable's name in the text.
                    None => {
                        self.sql.push(':');
                        self.sql.push_str(program.parsed.vars.name(*slot));
                    }
                    Some(v) => {
                        let _ = write!(self.sql, "{v}");
                    }
                },
            }
        }
    }

    fn store(&mut self, store: &super::parse::Store, loc: &super::parse::Loc) -> Result<(), TxnError> {
        let n = self.columnless_rows.take().unwrap_or_else(|| self.rows.len());
        if !store.all_rows && n != 1 {
            return Err(script_error(loc, &format!("expected one row, got {n}")));
        }
        if n > 0 && self.rows.columns() != store.vars.len() {
            return Err(script_error(
                loc,
                &format!(
                    "the query returned {} column(s), and dbperf read {} name(s) from its select list",
                    self.rows.columns(),
                    store.vars.len()
                ),
            ));
        }
        for r in 0..n {
            for (col, slot) in store.vars.iter().enumerate() {
                let s = *slot as usize;
                if s >= self.values.len() {
                    self.values.resize(s + 1, None);
                }
                let v = match self.rows.cell(r, col) {
                    Cell::Null => Value::Null,
                    Cell::Int(i) => Value::Int(i),
                    Cell::Float(f) => Value::Double(f),
                    Cell::Bytes(..) => {
                        let b = self.rows.bytes(r, col).unwrap_or_default();
                        let t = String::from_utf8_lossy(b);
                        match t.parse::<i64>() {
                            Ok(i) => Value::Int(i),
                            Err(_) => {
                                // Reuses the string the variable held, if it held one.
                                if let Some(Value::Str(old)) = &mut self.values[s] {
                                    old.clear();
                                    old.push_str(&t);
                                    continue;
                                }
                                Value::Str(t.into_owned())
                            }
                        }
                    }
                };
                self.values[s] = Some(v);
            }
        }
        Ok(())
    }
}

impl<S: Session> Worker for ScriptWorker<S> {
    fn pause(&mut self) -> Option<Duration> {
        let ScriptWorker { program, st } = self;
        if st.next.is_some() || st.failed.is_some() {
            return None;
        }
        let script = st.begin(program);
        let mut us = std::mem::take(&mut st.deferred_us);
        match st.run_local(program, script, 0, false) {
            Ok((pc, _, paused)) => {
                st.next = Some((script, pc));
                us = us.saturating_add(paused);
            }
            Err(e) => st.failed = Some(e),
        }
        (us > 0).then(|| Duration::from_micros(us))
    }

    async fn execute(&mut self, log: &mut StatementLog) -> Result<TxnDone, TxnError> {
        let ScriptWorker { program, st } = self;
        if let Some(e) = st.failed.take() {
            return Err(e);
        }
        if st.session.in_transaction() {
            // The last script ended inside BEGIN: pgbench stops the client there.
            let _ = st.session.query("ROLLBACK").await;
            let id = match st.values[CLIENT_ID as usize] {
                Some(Value::Int(i)) => i,
                _ => 0,
            };
            return Err(TxnError::new(
                ErrorClass::Fatal,
                None,
                format!("client {id} aborted: end of script reached without completing the last transaction"),
            ));
        }
        let (script, pc) = match st.next.take() {
            Some(x) => x,
            None => {
                let script = st.begin(program);
                let (pc, _, paused) = st.run_local(program, script, 0, false)?;
                st.deferred_us = st.deferred_us.saturating_add(paused);
                (script, pc)
            }
        };
        st.script = script;
        let r = st.transaction(program, script, pc, log).await;
        let class = r.as_ref().err().map(|e| match e {
            Fail::Db(e) => e.class,
            Fail::Script(_) => ErrorClass::Fatal,
        });
        st.after(program, class);
        if let (Some(t), Some(class)) = (&program.per_command, class) {
            if class != ErrorClass::Fatal {
                let ending = match st.retry.again {
                    Some(_) => Ending::Retried,
                    None => Ending::Failed,
                };
                t.failed(script, st.failed_in, ending);
            }
        }
        match r {
            Ok(()) => Ok(TxnDone::committed(script as u16)),
            Err(Fail::Script(e)) => {
                // Roll back whatever the script had begun, then stop: the script is wrong.
                let _ = st.session.query("ROLLBACK").await;
                Err(e)
            }
            Err(Fail::Db(e)) => Err(abort_transaction(&mut st.session, e).await),
        }
    }

    fn kind(&self) -> Option<u16> {
        Some(self.st.script as u16)
    }

    async fn reconnect(&mut self) -> Result<(), TxnError> {
        let ScriptWorker { program, st } = self;
        st.next = None;
        st.session.reconnect().await?;
        st.prepare_all(program).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_driver::ExecInfo;

    /// A session that logs what it is sent and answers `exec_rows` with one row `(7, 'x')`.
    #[derive(Default)]
    struct Fake {
        prepared: Vec<String>,
        sent: Vec<String>,
        fail_next: bool,
        /// The next exec is sent, then fails as a serialization failure.
        serialization_next: bool,
    }

    impl Session for Fake {
        const UNNAMED_STATEMENTS: bool = true;

        async fn exec_unnamed(
            &mut self,
            sql: &str,
            params: &[Param<'_>],
            rows: Option<&mut Rows>,
        ) -> Result<ExecInfo, DbError> {
            self.sent.push(format!("unnamed {sql} {}", shown(params)));
            if let Some(rows) = rows {
                rows.reset(2);
                rows.push_null();
                rows.push_bytes(b"x");
            }
            Ok(ExecInfo { affected_rows: 1 })
        }

        async fn connect(_: &Target, _: IgnoreErrors) -> Result<Fake, DbError> {
            Ok(Fake::default())
        }
        async fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
            self.prepared.push(sql.to_string());
            Ok(StmtId(self.prepared.len() as u32 - 1))
        }
        async fn exec(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<ExecInfo, DbError> {
            if std::mem::take(&mut self.fail_next) {
                return Err(DbError {
                    class: ErrorClass::Fatal,
                    code: None,
                    sqlstate: Some("42P01".into()),
                    message: "relation \"t\" does not exist".into(),
                });
            }
            let sent = format!("{} {}", self.prepared[stmt.0 as usize], shown(params));
            self.sent.push(sent);
            if std::mem::take(&mut self.serialization_next) {
                return Err(DbError {
                    class: ErrorClass::Serialization,
                    code: None,
                    sqlstate: Some("40001".into()),
                    message: "could not serialize access due to concurrent update".into(),
                });
            }
            Ok(ExecInfo { affected_rows: 1 })
        }
        async fn exec_rows(
            &mut self,
            stmt: StmtId,
            params: &[Param<'_>],
            rows: &mut Rows,
        ) -> Result<ExecInfo, DbError> {
            self.exec(stmt, params).await?;
            rows.reset(2);
            rows.push_int(7);
            rows.push_bytes(b"x");
            Ok(ExecInfo::default())
        }
        async fn query(&mut self, sql: &str) -> Result<ExecInfo, DbError> {
            self.sent.push(sql.to_string());
            Ok(ExecInfo::default())
        }
        async fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
            self.sent.push(sql.to_string());
            Ok(vec![vec![Some("7".into()), Some("x".into())]])
        }
        async fn reconnect(&mut self) -> Result<(), DbError> {
            Ok(())
        }
        fn server_version(&self) -> String {
            "fake".into()
        }
    }

    /// `[a,NULL,'b']`: what a statement was sent.
    fn shown(params: &[Param<'_>]) -> String {
        let ps: Vec<String> = params
            .iter()
            .map(|p| match p {
                Param::Null => "NULL".to_string(),
                Param::Int(i) => i.to_string(),
                Param::Bytes(b) => format!("'{}'", String::from_utf8_lossy(b)),
            })
            .collect();
        format!("[{}]", ps.join(","))
    }

    fn worker(scripts: &[(&str, u64)], mode: QueryMode, defines: &[(&str, &str)]) -> ScriptWorker<Fake> {
        let mut parsed = Parsed::default();
        for (k, (text, _)) in scripts.iter().enumerate() {
            let name = format!("s{k}.sql");
            parsed.add(&name, &name, text).unwrap_or_else(|e| panic!("{e}"));
        }
        let defines: Vec<(String, String)> = defines.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let program =
            Arc::new(Program::new(parsed, scripts.iter().map(|s| s.1).collect(), mode, &defines, 2, 42).unwrap());
        let target = Target::parse("postgres://u:p@127.0.0.1:1/db").unwrap();
        let wl = ScriptWorkload::<Fake>::new(program, target, dbperf_driver::pg::default_ignore());
        rt().block_on(wl.connect(3)).unwrap_or_else(|e| panic!("{}", e.message))
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn var(w: &ScriptWorker<Fake>, name: &str) -> Option<Value> {
        w.st.values
            .get(w.program.parsed.vars.find(name)? as usize)
            .cloned()
            .flatten()
    }

    fn txn(w: &mut ScriptWorker<Fake>) -> Result<TxnDone, TxnError> {
        let pause = w.pause();
        assert!(pause.is_none_or(|p| p < Duration::from_secs(1)));
        let mut log = StatementLog::with_capacity(8);
        rt().block_on(w.execute(&mut log))
    }

    const SCRIPT: &str = "\\set aid random(1, 10 * :scale)\n\
        \\if :aid > 100\n\
        SELECT 'never';\n\
        \\else\n\
        SELECT abalance, filler FROM pgbench_accounts WHERE aid = :aid \\gset\n\
        \\endif\n\
        \\set twice :abalance * 2 + :client_id\n\
        UPDATE t SET v = :twice, w = :label, d = :half WHERE id = :aid;\n";

    #[test]
    fn prepared_mode_binds_variables_and_stores_gset_columns() {
        let mut w = worker(
            &[(SCRIPT, 1)],
            QueryMode::Prepared,
            &[("label", "abc"), ("half", "0.5")],
        );
        assert_eq!(w.st.session.prepared.len(), 3);
        assert_eq!(
            w.st.session.prepared[1],
            "SELECT abalance, filler FROM pgbench_accounts WHERE aid = ?"
        );
        let done = txn(&mut w).unwrap();
        assert_eq!(done.kind, 0);
        let aid = match var(&w, "aid") {
            Some(Value::Int(i)) => i,
            v => panic!("{v:?}"),
        };
        assert!((1..=20).contains(&aid));
        assert_eq!(var(&w, "abalance"), Some(Value::Int(7)));
        assert_eq!(var(&w, "filler"), Some(Value::Str("x".into())));
        assert_eq!(var(&w, "twice"), Some(Value::Int(17)));
        assert_eq!(
            w.st.session.sent,
            [
                format!("SELECT abalance, filler FROM pgbench_accounts WHERE aid = ? [{aid}]"),
                format!("UPDATE t SET v = ?, w = ?, d = ? WHERE id = ?; [17,'abc','0.5',{aid}]"),
            ]
        );
    }

    #[test]
    fn null_variables_are_bound_as_sql_null() {
        // Extended mode: every statement is sent with $n placeholders; the \gset stores
        // the NULL column as NULL, and the next statement binds it as NULL, not as text.
        let mut w = worker(
            &[(
                "SELECT v, w FROM t WHERE id = :client_id \\gset\nUPDATE t SET v = :v, w = :w WHERE id = 1;\n",
                1,
            )],
            QueryMode::Extended,
            &[],
        );
        assert!(w.st.session.prepared.is_empty());
        txn(&mut w).unwrap();
        assert_eq!(var(&w, "v"), Some(Value::Null));
        assert_eq!(
            w.st.session.sent,
            [
                "unnamed SELECT v, w FROM t WHERE id = $1 [3]",
                "unnamed UPDATE t SET v = $1, w = $2 WHERE id = 1; [NULL,'x']",
            ]
        );
        // Prepared mode: a NULL from -D-free state (the \set of a NULL) goes as NULL too.
        let mut w = worker(
            &[("\\set n NULL\nUPDATE t SET v = :n WHERE id = :client_id;\n", 1)],
            QueryMode::Prepared,
            &[],
        );
        txn(&mut w).unwrap();
        assert_eq!(w.st.session.sent, ["UPDATE t SET v = ? WHERE id = ?; [NULL,3]"]);
    }

    #[test]
    fn simple_mode_writes_the_values_into_the_text() {
        let mut w = worker(
            &[(SCRIPT, 1)],
            QueryMode::Simple,
            &[("label", "'abc'"), ("half", "0.5")],
        );
        assert!(w.st.session.prepared.is_empty());
        txn(&mut w).unwrap();
        let aid = var(&w, "aid").unwrap();
        assert_eq!(
            w.st.session.sent,
            [
                format!("SELECT abalance, filler FROM pgbench_accounts WHERE aid = {aid}"),
                format!("UPDATE t SET v = 17, w = 'abc', d = 0.5 WHERE id = {aid};"),
            ]
        );
    }

    #[test]
    fn run_time_errors_name_the_file_line_and_variable() {
        let mut w = worker(
            &[("SELECT 1;\n\\set y :nope + 1\nSELECT 2;\n", 1)],
            QueryMode::Prepared,
            &[],
        );
        let e = txn(&mut w).unwrap_err();
        assert_eq!(e.class, ErrorClass::Fatal);
        assert!(
            e.message
                .starts_with("s0.sql:2: undefined variable \"nope\"; evaluation of meta-command failed"),
            "{}",
            e.message
        );
        // The first statement ran; the failed transaction was rolled back.
        assert_eq!(w.st.session.sent.last().map(String::as_str), Some("ROLLBACK"));

        let mut w = worker(
            &[("\\set x 1\n\\set y :x / (:x - 1)\nSELECT :y;\n", 1)],
            QueryMode::Prepared,
            &[],
        );
        let e = txn(&mut w).unwrap_err();
        assert!(e.message.starts_with("s0.sql:2: division by zero"), "{}", e.message);
        assert!(e.message.contains("\\set y :x / (:x - 1)"), "{}", e.message);
    }

    /// pgbench sends an undefined variable as its name in simple mode and binds it as NULL
    /// otherwise; `-D` values go as written; `debug()` numbers commands as pgbench does.
    #[test]
    fn undefined_variables_and_defines_go_to_sql_as_pgbench_sends_them() {
        let script = "SELECT :nope, :i, :d;\n";
        let defines = [("i", "+3"), ("d", "1.0")];
        let mut w = worker(&[(script, 1)], QueryMode::Simple, &defines);
        txn(&mut w).unwrap();
        assert_eq!(w.st.session.sent, ["SELECT :nope, +3, 1.0;"]);
        let mut w = worker(&[(script, 1)], QueryMode::Prepared, &defines);
        txn(&mut w).unwrap();
        assert_eq!(w.st.session.sent, ["SELECT ?, ?, ?; [NULL,'+3','1.0']"]);
        let mut w = worker(&[("\\set x :i + :d\nSELECT :x;\n", 1)], QueryMode::Simple, &defines);
        txn(&mut w).unwrap();
        assert_eq!(w.st.session.sent, ["SELECT 4;"]);
    }

    #[test]
    fn sleep_reads_a_variables_text_as_atoi_does() {
        let mut w = worker(
            &[("\\set one 1.9\n\\sleep :one ms\nSELECT 1;\n", 1)],
            QueryMode::Prepared,
            &[],
        );
        assert_eq!(w.pause(), Some(Duration::from_millis(1)));
        let mut w = worker(
            &[("\\set b true\n\\sleep :b\nSELECT 1;\n", 1)],
            QueryMode::Prepared,
            &[],
        );
        let e = txn(&mut w).unwrap_err();
        assert!(
            e.message
                .starts_with("s0.sql:2: sleep: invalid sleep time \"true\" for variable \"b\""),
            "{}",
            e.message
        );
    }

    /// The values pgbench 15 gives with `--random-seed=42 -c 3` for this script (its
    /// `debug()` lines, sorted; run beside /usr/bin/pgbench).
    #[test]
    fn seeded_random_functions_give_pgbenchs_values() {
        let script = "\\set x random(1, 1000)\n\\set g random_gaussian(1, 1000, 2.5)\n\
            \\set e random_exponential(1, 1000, 3.0)\n\\set z random_zipfian(1, 1000, 1.07)\n\
            \\set h hash(:x) % 1000 + permute(:x, 1000) * 1000\n";
        let mut parsed = Parsed::default();
        parsed.add("r.sql", "r.sql", script).unwrap();
        let program = Arc::new(
            Program::new(parsed, vec![1], QueryMode::Prepared, &[], 1, 42)
                .unwrap()
                .with_clients(3),
        );
        let target = Target::parse("postgres://u:p@127.0.0.1:1/db").unwrap();
        let wl = ScriptWorkload::<Fake>::new(program, target, dbperf_driver::pg::default_ignore());
        let mut got = Vec::new();
        for client in 0..3 {
            let mut w = rt()
                .block_on(wl.connect(client))
                .unwrap_or_else(|e| panic!("{}", e.message));
            for _ in 0..2 {
                w.pause();
                let int = |w: &ScriptWorker<Fake>, n: &str| match var(w, n) {
                    Some(Value::Int(i)) => i,
                    v => panic!("{n}: {v:?}"),
                };
                got.push((
                    client as i64 * 100_000_000 + int(&w, "x") * 100_000 + int(&w, "g") * 100 + int(&w, "e") % 100,
                    client as i64 * 100_000_000 + int(&w, "z"),
                    int(&w, "h"),
                ));
                w.st.next = None;
            }
        }
        let mut first: Vec<i64> = got.iter().map(|g| g.0).collect();
        let mut second: Vec<i64> = got.iter().map(|g| g.1).collect();
        let mut third: Vec<i64> = got.iter().map(|g| g.2).collect();
        first.sort();
        second.sort();
        third.sort();
        assert_eq!(first, [61221467, 65377720, 104862635, 182560005, 205466678, 278459460]);
        assert_eq!(second, [5, 134, 100000001, 100000009, 200000016, 200000075]);
        assert_eq!(third, [21607, 370866, 487851, 554399, 648851, 860219]);
    }

    #[test]
    fn a_retried_transaction_draws_the_same_values_and_the_next_one_new_ones() {
        let mut parsed = Parsed::default();
        parsed
            .add("s0.sql", "s0.sql", "\\set d random(1, 1000000000)\nSELECT :d;\n")
            .unwrap();
        let mut program = Program::new(parsed, vec![1], QueryMode::Prepared, &[], 1, 42).unwrap();
        program.max_tries = 3;
        let target = Target::parse("postgres://u:p@127.0.0.1:1/db").unwrap();
        let wl = ScriptWorkload::<Fake>::new(Arc::new(program), target, dbperf_driver::pg::default_ignore());
        let mut w = rt().block_on(wl.connect(0)).unwrap_or_else(|e| panic!("{}", e.message));
        w.st.session.serialization_next = true;
        assert_eq!(txn(&mut w).unwrap_err().class, ErrorClass::Serialization);
        txn(&mut w).unwrap();
        txn(&mut w).unwrap();
        let sent: Vec<&String> = w.st.session.sent.iter().filter(|s| s.starts_with("SELECT")).collect();
        assert_eq!(sent.len(), 3, "{sent:?}");
        assert_eq!(sent[0], sent[1], "the retry sends what the first try sent");
        assert_ne!(sent[1], sent[2], "a new transaction draws anew");
    }

    #[test]
    fn a_server_error_that_stops_the_run_names_the_command() {
        let mut w = worker(&[("\\set x 1\nSELECT :x;\n", 1)], QueryMode::Prepared, &[]);
        w.st.session.fail_next = true;
        let e = txn(&mut w).unwrap_err();
        assert_eq!(e.message, "s0.sql:2: relation \"t\" does not exist (in: SELECT :x;)");
        assert_eq!(w.st.session.sent.last().map(String::as_str), Some("ROLLBACK"));
    }

    #[test]
    fn leading_and_trailing_sleeps_are_pauses_and_middle_ones_are_not() {
        let mut w = worker(
            &[("\\sleep 3 ms\nSELECT 1;\n\\sleep 1 ms\nSELECT 2;\n\\sleep 5 ms\n", 1)],
            QueryMode::Prepared,
            &[],
        );
        assert_eq!(w.pause(), Some(Duration::from_millis(3)));
        let mut log = StatementLog::with_capacity(8);
        let t = std::time::Instant::now();
        rt().block_on(w.execute(&mut log)).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(1));
        assert_eq!(log.samples().len(), 2);
        // The trailing 5 ms come before the next transaction, with its leading 3 ms.
        assert_eq!(w.pause(), Some(Duration::from_millis(8)));
    }

    #[test]
    fn scripts_are_picked_by_weight() {
        let mut w = worker(
            &[("SELECT 1;\n", 3), ("SELECT 2;\n", 1), ("SELECT 3;\n", 0)],
            QueryMode::Prepared,
            &[],
        );
        let mut n = [0usize; 3];
        for _ in 0..40_000 {
            n[w.st.choose(&w.program)] += 1;
        }
        assert_eq!(n[2], 0);
        let ratio = n[0] as f64 / n[1] as f64;
        assert!((2.8..3.2).contains(&ratio), "{n:?}");
        let ops = w.program.ops();
        assert_eq!(ops.transactions, ["s0.sql", "s1.sql", "s2.sql"]);
        assert_eq!(ops.statements, ["SELECT"]);
    }

    #[test]
    fn modes_and_weights_are_checked() {
        assert_eq!(QueryMode::parse("extended"), Ok(QueryMode::Extended));
        assert!(QueryMode::parse("fast")
            .unwrap_err()
            .contains("simple, extended or prepared"));
        let mut parsed = Parsed::default();
        parsed.add("a", "a.sql", "SELECT 1;\n").unwrap();
        assert!(Program::new(parsed.clone(), vec![0], QueryMode::Prepared, &[], 1, 1)
            .unwrap_err()
            .contains("weight 0"));
        let bad = [("x-y".to_string(), "1".to_string())];
        assert!(Program::new(parsed, vec![1], QueryMode::Prepared, &bad, 1, 1)
            .unwrap_err()
            .contains("-D x-y"));
        let mut parsed = Parsed::default();
        parsed
            .add("a", "a.sql", "\\startpipeline\nSELECT 1;\n\\endpipeline\n")
            .unwrap();
        let e = Program::new(parsed, vec![1], QueryMode::Simple, &[], 1, 1).unwrap_err();
        assert!(e.starts_with("a.sql:1: \\startpipeline needs -M prepared"), "{e}");
    }
}
