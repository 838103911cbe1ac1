//! `dbperf pgbench init|tpcb-like|simple-update|select-only|cleanup` and `dbperf pgbench -f
//! FILE[@W] -b NAME[@W] -D VAR=VALUE -M MODE`: pgbench's built-in workloads and users' own
//! pgbench scripts ([`dbperf_workloads::pgbench::lang`]), with pgbench's flags and defaults
//! (`-h -p -U -d` in [`super::pg_login`], `-M simple`, `-j 1`), validated into a plan and run
//! through the shared measured run ([`dbperf_run`], its report from
//! [`dbperf_workloads::pgbench::report`]).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dbperf_engine::{RunConfig, RunOutcome};

use super::args::TargetUrl;
use super::pg_login::PgLogin;
use dbperf_driver::any::AnySession;
use dbperf_driver::pg;
use dbperf_driver::target::Family;
use dbperf_driver::{Session, Target};
use dbperf_report::LiveLine;
use dbperf_results::options::{PgbenchOptions, WorkloadOptions};
use dbperf_results::Summary;
use dbperf_run::client::Client;
use dbperf_run::measured::Measured;
use dbperf_run::{measured_run, Description, Drive, MeasuredRun, Measurer, RunArgs, RunFlags, RunShape, Shared};
use dbperf_workloads::pgbench::init::{self, InitConfig};
use dbperf_workloads::pgbench::lang::exec::{Program, QueryMode, ScriptWorkload};
use dbperf_workloads::pgbench::lang::parse::Parsed;
use dbperf_workloads::pgbench::report::{PgbenchReport, ScriptShare, ScriptsReport};
use dbperf_workloads::pgbench::{PgbenchWorkload, Script};
use dbperf_workloads::{FinalReport, ReportFile};

/// pgbench's spellings and defaults of the shared run flags: `-T`, `-R`, `-P`/`--progress`,
/// `-j`/`--jobs` (default 1, as pgbench's).
#[derive(Debug, Clone)]
pub struct PgbenchFlags;

impl RunFlags for PgbenchFlags {
    const TIME_SHORT: Option<char> = Some('T');
    const TIME_DEFAULT: &'static str = "10";
    const TIME_HELP: &'static str = "Measured run time in seconds (0 = no limit; then --transactions is needed)";
    const WARMUP_HELP: &'static str = "Seconds to run before measuring";
    const RATE_SHORT: Option<char> = Some('R');
    const RATE_HELP: &'static str =
        "Open loop: total transactions per second, Poisson arrivals as pgbench's -R (0 = closed loop)";
    const INTERVAL_LONG: &'static str = "progress";
    const INTERVAL_VALUE: &'static str = "PROGRESS";
    const INTERVAL_SHORT: Option<char> = Some('P');
    const INTERVAL_DEFAULT: &'static str = "0";
    const INTERVAL_HELP: &'static str =
        "Seconds between live lines (pgbench's -P), each over the whole interval; 0 = none. \
        Intervals are stored each second (finer when this is under 1 s)";
    const THREADS_LONG: &'static str = "jobs";
    const THREADS_VALUE: &'static str = "JOBS";
    const THREADS_SHORT: Option<char> = Some('j');
    const THREADS_DEFAULT: Option<usize> = Some(1);
    const THREADS_HELP: &'static str = "Client threads, as pgbench's jobs [default: 1]: fewer jobs than clients \
        share the clients on event loops (one job: one thread for all clients, as pgbench -j 1); as many as the \
        clients (-j equal to -c) give each client a thread of its own, blocking on its replies under --client-io \
        auto; more are not started";
    const IO_HELP: &'static str = "How the client waits for replies: auto (each client blocking on its own thread \
        when there are as many --jobs as clients, in closed loop, up to 128 clients; else --jobs event loops), \
        blocking (a thread per client sleeping in the kernel until its reply arrives, whatever the default -j: \
        the least CPU per transaction; closed loop only), or async (--jobs event loops sharing the clients)";
    const IMPL_HELP: &'static str = "Client: wire (dbperf's lean session, default), tokio-postgres (PostgreSQL) or \
        mysql_async (script files on a MySQL target)";
}

const SCRIPT_HELP: &str = "Scripts: -f FILE[@WEIGHT] runs a pgbench script file (repeatable), -b NAME[@WEIGHT] \
a built-in (tpcb-like, simple-update, select-only, or a unique prefix); with several, each transaction \
picks one at random by weight (default 1). The language is pgbench's: SQL ending at ';' (\\; joins \
compound parts), :name variables (bound as parameters with -M prepared or extended, written in as text with \
-M simple, the default), automatic :scale, :client_id, :default_seed, :random_seed; meta-commands \\set NAME EXPR \
(pgbench's operators, CASE, abs debug double exp greatest hash hash_fnv1a hash_murmur2 int least ln \
mod permute pi pow random random_exponential random_gaussian random_zipfian sqrt), \\sleep N [us|ms|s] \
(before the first or after the last SQL command: a pause outside the latency; between SQL \
commands: inside it, as in pgbench), \\if/\\elif/\\else/\\endif, \\gset [PREFIX] and \\aset \
[PREFIX] after a query (columns named by the select list; name expressions with AS), \
\\startpipeline/\\endpipeline (accepted; dbperf sends the statements one at a time). \\shell and \
\\setshell are refused. Statements are reported by their first words (UPDATE pgbench_accounts). \
Script files run on mysql:// targets too (:name becomes ?), where their SQL is valid there. \
permute() is a permutation of its own: its values differ from pgbench's.";

/// `dbperf pgbench [COMMAND] [DBNAME]`, with pgbench's flags: `-h` is the host, as in pgbench,
/// so help is `--help` (or pgbench's `-?`) only.
#[derive(Debug, Args)]
#[command(after_long_help = SCRIPT_HELP, disable_help_flag = true)]
pub struct PgbenchArgs {
    /// init, tpcb-like, simple-update, select-only (or a unique prefix), or cleanup; without
    /// one: the -f/-b/-S/-N scripts, or tpcb-like. After -i, -S, -N, -f or -b, a word that is
    /// none of these is the database, as in pgbench.
    pub command: Option<String>,
    /// The database, as pgbench's last word (the same as -d DBNAME).
    #[arg(value_name = "DBNAME")]
    pub database: Option<String>,
    /// Initialize, as pgbench's -i: the same as the init command.
    #[arg(short = 'i', long)]
    pub initialize: bool,
    /// Select-only transactions, as pgbench's -S: the same as -b select-only.
    #[arg(short = 'S', long)]
    pub select_only: bool,
    /// Skip the updates of tellers and branches, as pgbench's -N: the same as -b simple-update.
    #[arg(short = 'N', long)]
    pub skip_some_updates: bool,
    /// No vacuum, as pgbench's -n: init skips its VACUUM ANALYZE; runs accept it, as dbperf never vacuums before a run.
    #[arg(short = 'n', long)]
    pub no_vacuum: bool,
    /// Print help (pgbench's -h is the host; see the Connection options).
    #[arg(long, short = '?', action = clap::ArgAction::HelpLong)]
    pub help: Option<bool>,
    /// A pgbench script file to run, optionally weighted: FILE or FILE@WEIGHT (repeatable; see --help).
    #[arg(short = 'f', long = "file", value_name = "FILE[@WEIGHT]")]
    pub file: Vec<String>,
    /// A built-in script, optionally weighted: tpcb-like, simple-update, select-only or a unique prefix, @WEIGHT (repeatable).
    #[arg(short = 'b', long = "builtin", value_name = "NAME[@WEIGHT]")]
    pub builtin: Vec<String>,
    /// Sets a script variable before the run: NAME=VALUE (repeatable; also default_seed).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub define: Vec<String>,
    /// Query mode, as pgbench's -M: simple (the default, as in pgbench: text, variables written in), extended (an unnamed statement parsed for every execution, variables bound; PostgreSQL with --client-impl wire only) or prepared (prepared once per connection, variables bound).
    #[arg(short = 'M', long = "protocol", default_value = "simple")]
    pub protocol: String,
    /// Where to connect (--target, DBPERF_TARGET or --target-file): postgres://USER:PASS@HOST:PORT/DB[?host=/socket/dir] or sandbox:NAME.
    #[command(flatten)]
    pub target: TargetUrl,
    /// pgbench's -h, -p, -U, -d: alone, or replacing those parts of --target.
    #[command(flatten)]
    pub login: PgLogin,
    /// init: scale factor (1 branch, 10 tellers, 100,000 accounts per unit; default 1). Runs:
    /// the value of :scale for script files (default 1); with a built-in in the mix it is read
    /// from pgbench_branches instead, as pgbench does.
    #[arg(short = 's', long)]
    pub scale: Option<u32>,
    /// init: fillfactor of accounts, tellers and branches (10..100).
    #[arg(short = 'F', long, default_value_t = 100)]
    pub fillfactor: u32,
    /// init: create unlogged tables.
    #[arg(long)]
    pub unlogged_tables: bool,
    /// Connections (pgbench's clients; also spelled --client, as pgbench does).
    #[arg(value_parser = clap::value_parser!(u32).range(1..=dbperf_core::bounds::MAX_CONNECTIONS as i64), short = 'c', long, visible_alias = "client", default_value_t = 1)]
    pub clients: u32,
    /// Time (-T), rate (-R), warmup, jobs (-j), client I/O, progress (-P), results directory and telemetry.
    #[command(flatten)]
    pub run: RunArgs<PgbenchFlags>,
    /// Transactions per client (pgbench's -t); 0 = no limit. The run still ends at -T (default
    /// 10 s): give -T 0 to run them all.
    #[arg(short = 't', long, default_value_t = 0)]
    pub transactions: u64,
    /// Seed of the random draws (pgbench's --random-seed); default: from the clock.
    #[arg(long)]
    pub random_seed: Option<u64>,
    /// SQLSTATEs to retry after a rollback, 'none' or 'all'.
    #[arg(long, default_value = "40P01,40001,23505")]
    pub pgsql_ignore_errors: String,
    /// cleanup: also drop pgbench tables dbperf did not create.
    #[arg(long)]
    pub force: bool,
}

/// Runs a pgbench command; `argv` is the whole command line, for the manifest.
pub fn run(a: PgbenchArgs, argv: &[String]) -> Result<ExitCode> {
    let a = pgbench_words(a)?;
    let target = server(&a)?;
    let command = a.command.clone().unwrap_or_default();
    if !matches!(command.as_str(), "init" | "cleanup") {
        let scripts = match script_plan(&a)? {
            Plan::Scripts(p) => Scripts::Parsed(p),
            Plan::Builtin(mode) => Scripts::Builtin(
                match command.as_str() {
                    "" => a
                        .builtin
                        .first()
                        .map_or(Ok(Script::TpcbLike), |b| builtin_weight(b).map(|(s, _)| s))?,
                    other => Script::by_prefix(other).map_err(not_a_command)?,
                },
                mode,
            ),
        };
        let mut plan = PgbenchRun::new(a, scripts, &target)?;
        let args = plan.args.run.clone();
        return measured_run(&mut plan, Shared::Engine(&args), &target, argv);
    }
    if target.family != Family::Postgres {
        bail!(
            "dbperf pgbench needs a PostgreSQL target: --target postgres://USER:PASS@HOST:PORT/DB (got {})",
            target.redacted()
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    if command == "init" {
        let r = rt.block_on(init::init(&InitConfig {
            target,
            scale: a.scale.unwrap_or(1),
            fillfactor: a.fillfactor,
            unlogged: a.unlogged_tables,
            vacuum: !a.no_vacuum,
        }))?;
        println!(
            "done in {:.2} s ({} accounts; generate {:.2} s, vacuum and primary keys {:.2} s)",
            r.elapsed.as_secs_f64(),
            r.accounts,
            r.generate.as_secs_f64(),
            (r.elapsed - r.generate).as_secs_f64()
        );
    } else {
        rt.block_on(init::cleanup(&target, a.force))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// pgbench's spellings as dbperf's: `-i` is the init command, `-S` and `-N` the built-ins
/// they name (`-b`), and once a flag has chosen what runs, a word that is neither a command
/// nor a built-in is the database (`pgbench -S -c 8 mydb`).
fn pgbench_words(mut a: PgbenchArgs) -> Result<PgbenchArgs> {
    let is_command = |w: &str| matches!(w, "init" | "cleanup") || Script::by_prefix(w).is_ok();
    let chosen = a.initialize || a.select_only || a.skip_some_updates || !a.file.is_empty() || !a.builtin.is_empty();
    if let (true, Some(word), None) = (chosen, &a.command, &a.database) {
        if !is_command(word) {
            a.database = a.command.take();
        }
    }
    if a.initialize {
        if a.select_only || a.skip_some_updates || !a.file.is_empty() || !a.builtin.is_empty() {
            bail!("-i initializes the tables; -S, -N, -f and -b choose what a run runs: give -i alone, then run");
        }
        match a.command.as_deref() {
            None | Some("init") => a.command = Some("init".into()),
            Some(other) => bail!("-i initializes the tables and {other} is another command: give one of them"),
        }
    }
    if a.select_only {
        a.builtin.push(Script::SelectOnly.name().into());
    }
    if a.skip_some_updates {
        a.builtin.push(Script::SimpleUpdate.name().into());
    }
    Ok(a)
}

/// Where to connect: `--target` (or `DBPERF_TARGET`, `--target-file`), with `-h -p -U -d`
/// (and DBNAME after the command) replacing its parts, or pgbench's defaults without one.
fn server(a: &PgbenchArgs) -> Result<Target> {
    let mut login = a.login.clone();
    match (&login.dbname, &a.database) {
        (Some(d), Some(word)) if d != word => {
            bail!("two databases: -d {d} and {word} after the command; give one")
        }
        (None, Some(word)) => login.dbname = Some(word.clone()),
        _ => {}
    }
    login.target(&a.target)
}

/// What a run runs: one built-in on its own fast path (simple or prepared), or parsed scripts.
enum Scripts {
    Builtin(Script, QueryMode),
    Parsed(Box<ScriptPlan>),
}

/// A validated pgbench run: its scripts, errors to retry, seed, and (once read) the scale.
struct PgbenchRun {
    scripts: Scripts,
    ignore: dbperf_driver::mysql::IgnoreErrors,
    seed: u64,
    scale: i64,
    shape: RunShape,
    args: PgbenchArgs,
}

impl PgbenchRun {
    fn new(a: PgbenchArgs, scripts: Scripts, target: &Target) -> Result<PgbenchRun> {
        if a.clients == 0 {
            bail!("--clients must be at least 1");
        }
        if a.run.time == 0 && a.transactions == 0 {
            bail!("the run has no end: give --time (seconds) or --transactions (per client)");
        }
        let ignore = match target.family {
            Family::Postgres => pg::parse_ignore(&a.pgsql_ignore_errors).map_err(|e| anyhow!(e))?,
            Family::Mysql => dbperf_driver::mysql::IgnoreErrors::sysbench_default(),
        };
        let client = Client::choose(&a.run.client_impl, target.family).map_err(|e| anyhow!(e))?;
        match &scripts {
            Scripts::Builtin(..) if target.family != Family::Postgres => bail!(
                "dbperf pgbench needs a PostgreSQL target: --target postgres://USER:PASS@HOST:PORT/DB (got {})",
                target.redacted()
            ),
            Scripts::Parsed(p) if target.family == Family::Mysql && p.uses_builtin => {
                bail!("the built-in scripts are PostgreSQL's (END, pgbench_* tables): run script files (-f) on a MySQL target")
            }
            Scripts::Parsed(p) if p.mode == QueryMode::Extended && client != Client::PgWire => {
                bail!("{}", dbperf_workloads::pgbench::lang::exec::EXTENDED_NEEDS)
            }
            _ => {}
        }
        let seed = a.random_seed.unwrap_or_else(|| a.run.default_seed());
        let events = match a.transactions {
            0 => None,
            n => Some(n.checked_mul(a.clients.into()).ok_or_else(|| {
                anyhow!(
                    "--transactions {n} x {} clients is more transactions than can be counted",
                    a.clients
                )
            })?),
        };
        let shape = RunShape {
            connections: a.clients as usize,
            events,
            rate_per_connection: false,
            seed,
        };
        // The run flags' errors before anything connects.
        a.run.config(&shape)?;
        Ok(PgbenchRun {
            scripts,
            ignore,
            seed,
            scale: 1,
            shape,
            args: a,
        })
    }

    /// The scripts as the command line named them.
    fn label(&self) -> String {
        match &self.scripts {
            Scripts::Builtin(s, _) => s.name().to_string(),
            Scripts::Parsed(p) => p.labels.join(" "),
        }
    }

    fn protocol(&self) -> &'static str {
        match &self.scripts {
            Scripts::Builtin(_, mode) => mode.name(),
            Scripts::Parsed(p) => p.mode.name(),
        }
    }
}

/// `dbperf pgbench`: the scale read (built-ins), the clients on the engine.
impl MeasuredRun for PgbenchRun {
    fn name(&self) -> String {
        match &self.scripts {
            Scripts::Builtin(s, _) => format!("pgbench_{}", s.name().replace('-', "_")),
            Scripts::Parsed(_) => "pgbench_script".into(),
        }
    }

    async fn before(&mut self, admin: &mut AnySession) -> Result<()> {
        self.scale = match (&self.scripts, self.args.scale) {
            // As pgbench: with a built-in in the mix, the tables' scale, whatever -s says.
            (Scripts::Builtin(..), _) => init::scale_of(admin).await?,
            (Scripts::Parsed(p), _) if p.uses_builtin => init::scale_of(admin).await?,
            (Scripts::Parsed(_), Some(n)) => n as i64,
            (Scripts::Parsed(_), None) => 1,
        };
        Ok(())
    }

    fn drive(&self) -> Drive {
        Drive::Engine(self.shape)
    }

    fn options(&self, run: Option<&RunConfig>) -> WorkloadOptions {
        WorkloadOptions::Pgbench(PgbenchOptions {
            script: self.label(),
            scale: self.scale,
            clients: self.args.clients.into(),
            jobs: run.map_or(0, |r| r.client_threads),
            transactions_per_client: self.args.transactions,
            protocol: self.protocol().into(),
            define: self.args.define.clone(),
        })
    }

    fn seeds(&self) -> serde_json::Value {
        serde_json::json!({ "random_seed": self.seed })
    }

    fn describe(&self) -> Description {
        Description {
            what: format!(
                "pgbench {} (scale {}, -M {})",
                self.label(),
                self.scale,
                self.protocol()
            ),
            users: "client",
            rate_of: "trx",
            rand_type: "uniform".into(),
            detail: String::new(),
        }
    }

    fn measure<S: Session + 'static>(&mut self, m: Measurer<'_>) -> Result<Measured> {
        let target = m.target().clone();
        match &mut self.scripts {
            Scripts::Builtin(script, mode) => {
                let w = PgbenchWorkload::<S>::new(*script, *mode, self.scale, target, self.ignore.clone(), self.seed)
                    .map_err(|e| anyhow!(e))?;
                m.engine(Arc::new(w), LiveLine::Standard)
            }
            Scripts::Parsed(p) => {
                let parsed = std::mem::take(&mut p.parsed);
                let clients = m.run().map_or(1, |r| r.connections);
                let program = Program::new(parsed, p.weights.clone(), p.mode, &p.defines, self.scale, self.seed)
                    .map_err(|e| anyhow!(e))?
                    .with_clients(clients);
                p.transactions = program.ops().transactions;
                let w = ScriptWorkload::<S>::new(Arc::new(program), target, self.ignore.clone());
                m.engine(Arc::new(w), LiveLine::Standard)
            }
        }
    }

    fn final_report(&self, outcome: &RunOutcome, summary: &Summary, run: &RunConfig) -> (String, Vec<ReportFile>) {
        let scripts = match &self.scripts {
            Scripts::Builtin(..) => Vec::new(),
            Scripts::Parsed(p) => p
                .transactions
                .iter()
                .zip(&p.labels)
                .zip(&p.weights)
                .map(|((name, label), &weight)| ScriptShare {
                    name: name.clone(),
                    label: label.clone(),
                    weight,
                })
                .collect(),
        };
        ScriptsReport {
            inner: PgbenchReport {
                client_threads: run.client_threads,
            },
            scripts,
        }
        .final_report(outcome, summary)
    }
}

/// How a run's scripts run: a single built-in on its own fast path (`-M simple` or
/// `prepared`), or parsed scripts.
enum Plan {
    Builtin(QueryMode),
    Scripts(Box<ScriptPlan>),
}

/// Parsed scripts with their weights, and what the options recorded say about them.
struct ScriptPlan {
    parsed: Parsed,
    weights: Vec<u64>,
    labels: Vec<String>,
    mode: QueryMode,
    defines: Vec<(String, String)>,
    uses_builtin: bool,
    /// Each script's transaction name, once the program is made.
    transactions: Vec<String>,
}

/// The error of a command word that is none: pgbench users put the database last.
fn not_a_command(e: String) -> anyhow::Error {
    anyhow!("{e}, or init / cleanup; a database name goes after the command (dbperf pgbench select-only DBNAME) or in -d DBNAME")
}

/// `NAME[@WEIGHT]` of `-b`.
fn builtin_weight(spec: &str) -> Result<(Script, u64)> {
    let (name, w) = split_weight(spec)?;
    Ok((Script::by_prefix(name).map_err(|e| anyhow!("-b {spec}: {e}"))?, w))
}

/// `X@WEIGHT` → (X, WEIGHT); without a number after the last `@`, all of it is X, weight 1.
fn split_weight(spec: &str) -> Result<(&str, u64)> {
    match spec.rsplit_once('@') {
        Some((x, w)) if !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()) => {
            let w: u64 = w
                .parse()
                .ok()
                .filter(|&w| w <= i32::MAX as u64)
                .ok_or_else(|| anyhow!("weight of {spec} is too large (at most {})", i32::MAX))?;
            Ok((x, w))
        }
        Some((_, w)) if w.starts_with('-') => bail!("weight of {spec} must be a number >= 0"),
        _ => Ok((spec, 1)),
    }
}

/// Reads `-f`, `-b`, `-D` and `-M` (and a built-in named as the command) into a plan.
fn script_plan(a: &PgbenchArgs) -> Result<Plan> {
    let mode = QueryMode::parse(&a.protocol).map_err(|e| anyhow!(e))?;
    let mut builtins = Vec::new();
    if let Some(c) = a.command.as_deref() {
        builtins.push((Script::by_prefix(c).map_err(not_a_command)?, 1));
    }
    for b in &a.builtin {
        builtins.push(builtin_weight(b)?);
    }
    if a.file.is_empty() && builtins.len() == 1 && builtins[0].1 == 0 {
        bail!("the only script has weight 0: give it a positive @WEIGHT (or none)");
    }
    if a.file.is_empty() && builtins.len() <= 1 && a.define.is_empty() && mode != QueryMode::Extended {
        return Ok(Plan::Builtin(mode));
    }
    let mut defines = Vec::new();
    for d in &a.define {
        let Some((name, value)) = d.split_once('=') else {
            bail!("-D {d}: write NAME=VALUE");
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            bail!("-D {d}: a variable name is letters, digits and _ (as in :name), got {name:?}");
        }
        defines.push((name.to_string(), value.to_string()));
    }
    let mut parsed = Parsed::default();
    let (mut weights, mut labels) = (Vec::new(), Vec::new());
    for (s, w) in &builtins {
        parsed
            .add(s.name(), &format!("builtin {}", s.name()), &s.text())
            .map_err(|e| anyhow!("{e}"))?;
        weights.push(*w);
        labels.push(format!("{}@{w}", s.name()));
    }
    for f in &a.file {
        let (path, w) = split_weight(f)?;
        let text = std::fs::read_to_string(path).map_err(|e| anyhow!("cannot read script file {path}: {e}"))?;
        let name = std::path::Path::new(path)
            .file_name()
            .map_or(path.to_string(), |n| n.to_string_lossy().into_owned());
        parsed.add(&name, path, &text).map_err(|e| anyhow!("{e}"))?;
        weights.push(w);
        labels.push(format!("{path}@{w}"));
    }
    if builtins.is_empty() && a.file.is_empty() {
        let s = Script::TpcbLike;
        parsed
            .add(s.name(), &format!("builtin {}", s.name()), &s.text())
            .map_err(|e| anyhow!("{e}"))?;
        weights.push(1);
        labels.push(format!("{}@1", s.name()));
    }
    Ok(Plan::Scripts(Box::new(ScriptPlan {
        parsed,
        weights,
        labels,
        mode,
        defines,
        uses_builtin: !builtins.is_empty() || a.file.is_empty(),
        transactions: Vec::new(),
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(argv: &[&str]) -> PgbenchArgs {
        use clap::{Args as _, FromArgMatches as _};
        let command = PgbenchArgs::augment_args(clap::Command::new("pgbench"));
        let matches = command
            .try_get_matches_from(std::iter::once("pgbench").chain(argv.iter().copied()))
            .unwrap();
        PgbenchArgs::from_arg_matches(&matches).unwrap()
    }

    #[test]
    fn scripts_plan_mixes_files_and_builtins_and_keeps_the_fast_path_alone() {
        // pgbench's default mode, simple, and prepared keep the fast path.
        assert!(matches!(
            script_plan(&args(&["tpcb-like"])).unwrap(),
            Plan::Builtin(QueryMode::Simple)
        ));
        assert!(matches!(
            script_plan(&args(&["-b", "sel", "-M", "prepared"])).unwrap(),
            Plan::Builtin(QueryMode::Prepared)
        ));
        assert!(matches!(script_plan(&args(&[])).unwrap(), Plan::Builtin(_)));
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("mine.sql");
        std::fs::write(&f, "\\set x random(1, :n)\nSELECT :x;\n").unwrap();
        let file = format!("{}@4", f.display());
        let Plan::Scripts(p) =
            script_plan(&args(&["-f", &file, "-b", "simple@2", "-D", "n=7", "-M", "simple"])).unwrap()
        else {
            panic!("scripts expected");
        };
        assert_eq!(p.weights, [2, 4]);
        assert_eq!(p.mode, QueryMode::Simple);
        assert_eq!(p.defines, [("n".to_string(), "7".to_string())]);
        assert!(p.uses_builtin);
        assert_eq!(p.parsed.scripts[1].name, "mine.sql");
        // -D alone moves a built-in to the script path, where :variables can be set.
        assert!(matches!(
            script_plan(&args(&["select-only", "-D", "x=1"])).unwrap(),
            Plan::Scripts(_)
        ));
        let e = |argv: &[&str]| match script_plan(&args(argv)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{argv:?} accepted"),
        };
        assert!(e(&["-b", "tpcb@0"]).contains("weight 0"));
        assert!(e(&["-D", "novalue"]).contains("NAME=VALUE"));
        assert!(e(&["-D", "=5"]).contains("variable name"));
        assert!(e(&["-D", "a b=5"]).contains("variable name"));
        assert!(e(&["-M", "fast"]).contains("simple, extended or prepared"));
        let Plan::Scripts(p) = script_plan(&args(&["-M", "extended"])).unwrap() else {
            panic!("-M extended runs the built-in as a script");
        };
        assert_eq!(p.mode, QueryMode::Extended);
        assert!(e(&["-f", "/nonexistent/x.sql"]).contains("cannot read script file /nonexistent/x.sql"));
    }

    #[test]
    fn pgbench_spellings_become_dbperfs() {
        let words = |argv: &[&str]| pgbench_words(args(argv));
        let a = words(&["-i", "-s", "10", "mydb"]).unwrap();
        assert_eq!(
            (a.command.as_deref(), a.database.as_deref()),
            (Some("init"), Some("mydb"))
        );
        let a = words(&["-S", "-c", "8", "mydb"]).unwrap();
        assert_eq!((a.command.as_deref(), a.database.as_deref()), (None, Some("mydb")));
        assert_eq!(a.builtin, ["select-only"]);
        assert!(matches!(script_plan(&a).unwrap(), Plan::Builtin(QueryMode::Simple)));
        let a = words(&["-N", "-b", "select-only@2"]).unwrap();
        assert_eq!(a.builtin, ["select-only@2", "simple-update"]);
        // A built-in's name stays a command; without a flag choosing, any word does.
        let a = words(&["-f", "x.sql", "select"]).unwrap();
        assert_eq!((a.command.as_deref(), a.database), (Some("select"), None));
        let a = words(&["mydb"]).unwrap();
        assert!(matches!(script_plan(&a), Err(e) if e.to_string().contains("-d DBNAME")));
        let e = |argv: &[&str]| words(argv).unwrap_err().to_string();
        assert!(e(&["-i", "-S"]).contains("give -i alone"));
        assert!(e(&["-i", "cleanup"]).contains("give one of them"));
    }

    #[test]
    fn weights_split_at_the_last_at_sign() {
        assert_eq!(split_weight("a.sql@3").unwrap(), ("a.sql", 3));
        assert_eq!(split_weight("dir@x/a.sql").unwrap(), ("dir@x/a.sql", 1));
        assert_eq!(split_weight("a.sql").unwrap(), ("a.sql", 1));
        assert!(split_weight("a.sql@99999999999")
            .unwrap_err()
            .to_string()
            .contains("too large"));
        assert_eq!(builtin_weight("sel@0").unwrap(), (Script::SelectOnly, 0));
        assert!(builtin_weight("s@2").unwrap_err().to_string().contains("ambiguous"));
    }
}
