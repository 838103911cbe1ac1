//! `dbperf pgbench init|tpcb-like|simple-update|select-only|cleanup` and `dbperf pgbench -f
//! FILE[@W] -b NAME[@W] -D VAR=VALUE -M MODE`: pgbench's built-in workloads and users' own
//! pgbench scripts ([`dbperf_workloads::pgbench::lang`]), with pgbench 15's flags, defaults and
//! option errors (`-h -p -U` in [`super::pg_login`], `-M simple`, `-j 1`, `-t 10`, `--max-tries
//! 1`; `-n -r -C -S -N -L -l --log-prefix --sampling-rate --aggregate-interval`; a repeated flag
//! takes its last value), validated into a plan and run through the shared measured run
//! ([`dbperf_run`], its report in pgbench's lines from [`dbperf_workloads::pgbench::report`],
//! `-l` logs from [`dbperf_workloads::pgbench::log`]). Exit codes as pgbench's: 1 for a bad
//! option, 2 when a client stopped on an error during the run.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dbperf_engine::{RunConfig, RunOutcome};

use super::args::TargetUrl;
use super::pg_login::PgLogin;
use dbperf_core::exit;
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
use dbperf_workloads::pgbench::lang::per_command::CommandStats;
use dbperf_workloads::pgbench::log::{LogSpec, TxnLogFiles};
use dbperf_workloads::pgbench::report::{PgbenchReport, ScriptShare, ScriptsReport};
use dbperf_workloads::pgbench::{PgbenchWorkload, Script};
use dbperf_workloads::{FinalReport, ReportFile};

/// pgbench's spellings and defaults of the shared run flags: `-T`, `-R`, `-P`/`--progress`,
/// `-j`/`--jobs` (default 1, as pgbench's).
#[derive(Debug, Clone)]
pub struct PgbenchFlags;

impl RunFlags for PgbenchFlags {
    const TIME_SHORT: Option<char> = Some('T');
    const TIME_DEFAULT: &'static str = "0";
    const TIME_HELP: &'static str =
        "Duration of the run in seconds, as pgbench's -T (without it and without -t: 10 transactions per client)";
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
#[command(
    after_long_help = SCRIPT_HELP,
    disable_help_flag = true,
    disable_version_flag = true,
    args_override_self = true
)]
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
    /// Select-only transactions, as pgbench's -S: the same as -b select-only (each -S adds one).
    #[arg(short = 'S', long, action = clap::ArgAction::Count)]
    pub select_only: u8,
    /// Skip the updates of tellers and branches, as pgbench's -N: the same as -b simple-update (each -N adds one).
    #[arg(short = 'N', long, action = clap::ArgAction::Count)]
    pub skip_some_updates: u8,
    /// No vacuum, as pgbench's -n: init skips its VACUUM ANALYZE; a run skips pgbench's vacuum of branches and tellers and truncate of history before it.
    #[arg(short = 'n', long)]
    pub no_vacuum: bool,
    /// Each statement's mean latency in the final report, as pgbench's -r.
    #[arg(short = 'r', long = "report-per-command")]
    pub report_per_command: bool,
    /// A new connection for each transaction, as pgbench's -C (the connecting is outside each transaction's latency, inside tps).
    #[arg(short = 'C', long = "connect")]
    pub connect: bool,
    /// Count transactions lasting more than MS milliseconds as late, as pgbench's -L (reported as "above the latency limit").
    #[arg(short = 'L', long = "latency-limit", value_name = "MS", allow_hyphen_values = true)]
    pub latency_limit: Option<String>,
    /// Tries of a transaction that ends in a serialization failure or deadlock, as pgbench's --max-tries [default: 1]: past them it is counted as failed and the client goes on; 0 = unlimited (with -T or -L only).
    #[arg(long = "max-tries", value_name = "NUM", allow_hyphen_values = true)]
    pub max_tries: Option<String>,
    /// Write each transaction to a log file, as pgbench's -l: PREFIX.PID for the first client thread, PREFIX.PID.N for thread N.
    #[arg(short = 'l', long = "log")]
    pub log: bool,
    /// The log files' prefix, as pgbench's --log-prefix [default: pgbench_log].
    #[arg(long = "log-prefix", value_name = "PREFIX")]
    pub log_prefix: Option<String>,
    /// The fraction of transactions -l logs, as pgbench's --sampling-rate (0.01 = 1%).
    #[arg(long = "sampling-rate", value_name = "NUM", allow_hyphen_values = true)]
    pub sampling_rate: Option<String>,
    /// Show a built-in script's code, then exit, as pgbench's --show-script.
    #[arg(long = "show-script", value_name = "NAME")]
    pub show_script: Option<String>,
    /// Refused with -P for now (dbperf's live lines carry the run's seconds); without -P, pgbench's error.
    #[arg(long = "progress-timestamp")]
    pub progress_timestamp: bool,
    /// -l writes one line per NUM seconds instead of per transaction, as pgbench's --aggregate-interval.
    #[arg(long = "aggregate-interval", value_name = "NUM", allow_hyphen_values = true)]
    pub aggregate_interval: Option<String>,
    /// pgbench-shaped help, as pgbench's --help and -? (every option in detail: dbperf help pgbench).
    #[arg(long, short = '?')]
    pub help: bool,
    /// pgbench's version line (its shape, saying dbperf), as pgbench's -V.
    #[arg(long, short = 'V')]
    pub version: bool,
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
    /// init: fillfactor of accounts, tellers and branches (10..100) [default: 100].
    #[arg(short = 'F', long)]
    pub fillfactor: Option<u32>,
    /// init: create unlogged tables.
    #[arg(long)]
    pub unlogged_tables: bool,
    /// init: the steps, as pgbench's -I [default: dtgvp]: d drop, t create tables, g generate client-side, G server-side, v vacuum, p primary keys, f foreign keys.
    #[arg(short = 'I', long = "init-steps", value_name = "[dtgGvpf]+")]
    pub init_steps: Option<String>,
    /// init: partition pgbench_accounts into NUM parts, as pgbench's --partitions [default: 0].
    #[arg(long, value_name = "NUM", allow_hyphen_values = true)]
    pub partitions: Option<String>,
    /// init: range or hash partitions, as pgbench's --partition-method [default: range].
    #[arg(long = "partition-method", value_name = "(range|hash)")]
    pub partition_method: Option<String>,
    /// init: create the tables in this tablespace, as pgbench's --tablespace.
    #[arg(long, value_name = "TABLESPACE")]
    pub tablespace: Option<String>,
    /// init: create the primary keys' indexes in this tablespace, as pgbench's --index-tablespace.
    #[arg(long = "index-tablespace", value_name = "TABLESPACE")]
    pub index_tablespace: Option<String>,
    /// Before the run, also VACUUM ANALYZE pgbench_accounts, as pgbench's -v (with the pre-run vacuum; -n drops both).
    #[arg(short = 'v', long = "vacuum-all")]
    pub vacuum_all: bool,
    /// Print what each client executes, sends and receives on stderr, as pgbench's --debug (runs the script path).
    #[arg(long)]
    pub debug: bool,
    /// Say each error a transaction met, retried or not, as pgbench's --verbose-errors (dbperf always says the one that stops a client).
    #[arg(long = "verbose-errors")]
    pub verbose_errors: bool,
    /// Report the failed transactions by kind, serialization or deadlock, as pgbench's --failures-detailed (in the report and in -l's lines).
    #[arg(long = "failures-detailed")]
    pub failures_detailed: bool,
    /// init: add pgbench's foreign keys (step f).
    #[arg(long = "foreign-keys")]
    pub foreign_keys: bool,
    /// init: accepted, as pgbench's -q (dbperf's load progress is a bar on a terminal only).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Connections (pgbench's clients; also spelled --client, as pgbench does).
    #[arg(value_parser = clap::value_parser!(u32).range(1..=dbperf_core::bounds::MAX_CONNECTIONS as i64), short = 'c', long, visible_alias = "client", default_value_t = 1)]
    pub clients: u32,
    /// Time (-T), rate (-R), warmup, jobs (-j), client I/O, progress (-P), results directory and telemetry.
    #[command(flatten)]
    pub run: RunArgs<PgbenchFlags>,
    /// Transactions per client, as pgbench's -t [default: 10, without -T]; give -t or -T, not both.
    #[arg(short = 't', long)]
    pub transactions: Option<u64>,
    /// Seed of the random draws, as pgbench's --random-seed: an unsigned integer, "time" (the default) or "rand".
    #[arg(long, value_name = "SEED")]
    pub random_seed: Option<String>,
    /// SQLSTATEs that --max-tries retries (and counts as failures past it), 'none' or 'all'; pgbench's are serialization failures and deadlocks.
    #[arg(long, default_value = "40P01,40001")]
    pub pgsql_ignore_errors: String,
    /// cleanup: also drop pgbench tables dbperf did not create.
    #[arg(long)]
    pub force: bool,
}

/// Runs a pgbench command; `argv` is the whole command line, for the manifest.
pub fn run(a: PgbenchArgs, argv: &[String]) -> Result<ExitCode> {
    if a.help {
        print!("{}", crate::pgbench_cli::HELP);
        return Ok(ExitCode::SUCCESS);
    }
    if a.version {
        println!("{}", crate::pgbench_cli::version());
        return Ok(ExitCode::SUCCESS);
    }
    // Zero means "none" to dbperf's shared run flags; pgbench refuses it when given.
    if crate::pgbench_cli::given(argv, 'P', "progress") && a.run.report_interval <= 0.0 {
        bail!("-P/--progress must be in range 1..{}", i32::MAX);
    }
    if crate::pgbench_cli::given(argv, 'R', "rate") && a.run.rate <= 0.0 {
        bail!("invalid rate limit: \"{}\"", a.run.rate);
    }
    if a.builtin.iter().any(|b| b == "list") {
        eprintln!("Available builtin scripts:");
        for s in Script::ALL {
            eprintln!("{:>13}: {}", s.name(), s.description());
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(name) = &a.show_script {
        let s = Script::by_prefix(name).map_err(|e| anyhow!(e))?;
        eprintln!("{}: {}\n{}", s.name(), s.description(), s.text());
        return Ok(ExitCode::SUCCESS);
    }
    let a = pgbench_words(a)?;
    let command = a.command.clone().unwrap_or_default();
    let opts = match command.as_str() {
        "init" | "cleanup" => None,
        _ => Some(RunOpts::check(&a)?),
    };
    let target = server(&a)?;
    if let Some(opts) = opts {
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
        let mut plan = PgbenchRun::new(a, opts, scripts, &target)?;
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
        let steps = init::init_steps(a.init_steps.as_deref(), a.no_vacuum, a.foreign_keys).map_err(|e| anyhow!(e))?;
        let (partitions, partition_method) = partitioning(&a)?;
        let r = rt.block_on(init::init(&InitConfig {
            target,
            scale: a.scale.unwrap_or(1),
            fillfactor: a.fillfactor.unwrap_or(100),
            unlogged: a.unlogged_tables,
            steps,
            partitions,
            partition_method,
            tablespace: a.tablespace.clone(),
            index_tablespace: a.index_tablespace.clone(),
        }))?;
        // On stderr with pgbench's other init lines, as pgbench.
        let steps: Vec<String> = r
            .steps
            .iter()
            .map(|(name, d)| format!("{name} {:.2} s", d.as_secs_f64()))
            .collect();
        eprintln!("done in {:.2} s ({}).", r.elapsed.as_secs_f64(), steps.join(", "));
    } else {
        rt.block_on(init::cleanup(&target, a.force))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// pgbench's spellings as dbperf's: `-i` is the init command, `-S` and `-N` the built-ins
/// they name (`-b`), and a word that is neither a command nor a built-in is the database, as
/// pgbench's only word is (`pgbench -S -c 8 mydb`, `pgbench mydb`).
fn pgbench_words(mut a: PgbenchArgs) -> Result<PgbenchArgs> {
    // `-d` without a database is pgbench's own `-d`: --debug.
    if a.login.dbname.as_deref() == Some("") {
        a.login.dbname = None;
        a.debug = true;
    }
    let is_command = |w: &str| matches!(w, "init" | "cleanup") || Script::by_prefix(w).is_ok();
    if let (Some(word), None) = (&a.command, &a.database) {
        if !is_command(word) {
            a.database = a.command.take();
        }
    }
    if let Some(f) = a.fillfactor.filter(|f| !(10..=100).contains(f)) {
        bail!("-F/--fillfactor must be in range 10..100 (got {f})");
    }
    let init_only = a.fillfactor.is_some()
        || a.tablespace.is_some()
        || a.index_tablespace.is_some()
        || a.unlogged_tables
        || a.init_steps.is_some()
        || a.foreign_keys
        || a.quiet
        || a.partitions.is_some()
        || a.partition_method.is_some();
    let run_only = a.select_only > 0
        || a.skip_some_updates > 0
        || !a.file.is_empty()
        || !a.builtin.is_empty()
        || !a.define.is_empty()
        || a.connect
        || a.vacuum_all
        || a.verbose_errors
        || a.failures_detailed
        || a.log
        || a.report_per_command
        || a.latency_limit.is_some()
        || a.max_tries.is_some()
        || a.sampling_rate.is_some()
        || a.aggregate_interval.is_some()
        || a.log_prefix.is_some()
        || a.transactions.is_some();
    let init = a.initialize || a.command.as_deref() == Some("init");
    if init && run_only {
        bail!("some of the specified options cannot be used in initialization (-i) mode");
    }
    if !init && a.command.as_deref() != Some("cleanup") && init_only {
        bail!(
            "some of the specified options cannot be used in benchmarking mode (-F, -I, -q, --foreign-keys and --unlogged-tables are init's)"
        );
    }
    if init {
        // The steps' and partitions' errors before anything connects.
        init::init_steps(a.init_steps.as_deref(), a.no_vacuum, a.foreign_keys).map_err(|e| anyhow!(e))?;
        partitioning(&a)?;
    }
    if a.initialize {
        match a.command.as_deref() {
            None | Some("init") => a.command = Some("init".into()),
            Some(other) => bail!("-i initializes the tables and {other} is another command: give one of them"),
        }
    }
    for _ in 0..a.select_only {
        a.builtin.push(Script::SelectOnly.name().into());
    }
    for _ in 0..a.skip_some_updates {
        a.builtin.push(Script::SimpleUpdate.name().into());
    }
    if a.builtin.len() + a.file.len() > MAX_SCRIPTS {
        bail!("at most {MAX_SCRIPTS} SQL scripts are allowed");
    }
    Ok(a)
}

/// `--partitions` and `--partition-method`, as pgbench checks them.
fn partitioning(a: &PgbenchArgs) -> Result<(u32, init::PartitionMethod)> {
    let n = match &a.partitions {
        None => 0,
        Some(v) => match v.parse::<i64>() {
            Ok(n) if (0..=i32::MAX as i64).contains(&n) => n as u32,
            Ok(_) => bail!("--partitions must be in range 0..{}", i32::MAX),
            Err(_) => bail!("invalid value \"{v}\" for option --partitions"),
        },
    };
    let method = match &a.partition_method {
        None => init::PartitionMethod::Range,
        Some(m) => init::PartitionMethod::parse(m).map_err(|e| anyhow!(e))?,
    };
    if n == 0 && a.partition_method.is_some() {
        bail!("--partition-method requires greater than zero --partitions");
    }
    Ok((n, method))
}

/// pgbench's limit on the scripts of a run.
const MAX_SCRIPTS: usize = 128;

/// pgbench's run options, checked as pgbench checks them (its messages).
#[derive(Debug, Clone, PartialEq)]
struct RunOpts {
    /// `-t` per client (pgbench's 10 without `-t` and `-T`), or `None` with `-T`.
    transactions: Option<u64>,
    /// `--max-tries` (0: unlimited).
    max_tries: u32,
    /// `-L` in milliseconds.
    latency_limit_ms: Option<f64>,
    /// `-l` and its sub-options.
    log: Option<LogSpec>,
    /// `--random-seed` as a number (`None`: "time", from the clock).
    seed: Option<u64>,
}

impl RunOpts {
    fn check(a: &PgbenchArgs) -> Result<RunOpts> {
        let transactions = match (a.transactions, a.run.time) {
            (Some(_), t) if t > 0 => bail!("specify either a number of transactions (-t) or a duration (-T), not both"),
            (Some(n), _) => Some(n),
            (None, 0) => Some(10),
            (None, _) => None,
        };
        if a.progress_timestamp {
            if a.run.report_interval <= 0.0 {
                bail!("--progress-timestamp is allowed only under -P/--progress");
            }
            bail!("--progress-timestamp: dbperf's -P lines give the seconds since the start, not Unix timestamps; drop it");
        }
        let latency_limit_ms = match &a.latency_limit {
            None => None,
            Some(v) => match v.parse::<f64>() {
                Ok(ms) if ms > 0.0 && ms.is_finite() => Some(ms),
                _ => bail!("invalid latency limit: \"{v}\" (give milliseconds above 0)"),
            },
        };
        let max_tries = match &a.max_tries {
            None => 1,
            Some(v) => match v.parse::<i64>() {
                Ok(n) if (0..=u32::MAX as i64).contains(&n) => n as u32,
                _ => bail!("invalid number of maximum tries: \"{v}\" (give a whole number, 0 for unlimited)"),
            },
        };
        if max_tries == 0 && latency_limit_ms.is_none() && a.run.time == 0 {
            bail!("an unlimited number of transaction tries can only be used with --latency-limit or a duration (-T)");
        }
        let sampling_rate = match &a.sampling_rate {
            None => 1.0,
            Some(v) => match v.parse::<f64>() {
                Ok(r) if r > 0.0 && r <= 1.0 => r,
                _ => bail!("invalid sampling rate: \"{v}\" (give a fraction above 0, at most 1)"),
            },
        };
        let aggregate_s = match &a.aggregate_interval {
            None => 0,
            Some(v) => match v.parse::<i64>() {
                Ok(n) if (1..=i32::MAX as i64).contains(&n) => n as u64,
                Ok(_) => bail!("--aggregate-interval must be in range 1..{}", i32::MAX),
                Err(_) => bail!("invalid value \"{v}\" for option --aggregate-interval"),
            },
        };
        if !a.log {
            if a.sampling_rate.is_some() {
                bail!("log sampling (--sampling-rate) is allowed only when logging transactions (-l)");
            }
            if aggregate_s > 0 {
                bail!("log aggregation is allowed only when actually logging transactions (-l)");
            }
            if a.log_prefix.is_some() {
                bail!("log file prefix (--log-prefix) is allowed only when logging transactions (-l)");
            }
        }
        if aggregate_s > 0 && a.sampling_rate.is_some() {
            bail!("sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time");
        }
        let duration = a.run.time;
        if aggregate_s > 0 && duration > 0 {
            if aggregate_s > duration {
                bail!("number of seconds for aggregation ({aggregate_s}) must not be higher than test duration ({duration})");
            }
            if !duration.is_multiple_of(aggregate_s) {
                bail!("duration ({duration}) must be a multiple of aggregation interval ({aggregate_s})");
            }
        }
        let seed = match a.random_seed.as_deref() {
            None | Some("time") => None,
            Some("rand") => Some(rand::random::<u64>()),
            Some(v) => Some(v.parse::<u64>().map_err(|_| {
                anyhow!(
                    "unrecognized random seed option \"{v}\"\n\
                     Expecting an unsigned integer, \"time\" or \"rand\"\n\
                     error while setting random seed from --random-seed option"
                )
            })?),
        };
        let log = a.log.then(|| LogSpec {
            prefix: a.log_prefix.clone().unwrap_or_else(|| "pgbench_log".into()),
            sampling_rate,
            aggregate_s,
            throttled: a.run.rate > 0.0,
            with_retries: max_tries != 1,
            failures_detailed: a.failures_detailed,
        });
        Ok(RunOpts {
            transactions,
            max_tries,
            latency_limit_ms,
            log,
            seed,
        })
    }
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
    opts: RunOpts,
    /// `-r`'s figures, once the program is made.
    per_command: Option<Arc<CommandStats>>,
    /// `-l`'s files, once the engine's threads are known.
    log: Option<Arc<TxnLogFiles>>,
    args: PgbenchArgs,
}

impl PgbenchRun {
    fn new(a: PgbenchArgs, opts: RunOpts, scripts: Scripts, target: &Target) -> Result<PgbenchRun> {
        if a.clients == 0 {
            bail!("--clients must be at least 1");
        }
        if a.run.time == 0 && opts.transactions == Some(0) {
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
        let seed = opts.seed.unwrap_or_else(|| a.run.default_seed());
        // As pgbench: a seed asked for (even "time") is said, so a run can be drawn again.
        if a.random_seed.is_some() {
            eprintln!("pgbench: setting random seed to {seed}");
        }
        let events = match opts.transactions.unwrap_or(0) {
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
            opts,
            per_command: None,
            log: None,
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

    /// pgbench's "transaction type".
    fn transaction_type(&self) -> String {
        match &self.scripts {
            Scripts::Builtin(s, _) => s.description().to_string(),
            Scripts::Parsed(p) if p.labels.len() == 1 => p.labels[0].clone(),
            Scripts::Parsed(_) => "multiple scripts".into(),
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
        let builtin = match &self.scripts {
            Scripts::Builtin(..) => true,
            Scripts::Parsed(p) => p.uses_builtin,
        };
        let vacuum = !self.args.no_vacuum && matches!(admin, AnySession::Pg(_));
        if builtin {
            self.scale = init::scale_of(admin).await?;
            if self.args.scale.is_some() {
                eprintln!(
                    "pgbench: warning: scale option ignored, using count from pgbench_branches table ({})",
                    self.scale
                );
            }
            if vacuum {
                init::vacuum_before_run(admin, self.args.vacuum_all).await;
            }
            return Ok(());
        }
        if vacuum {
            init::vacuum_before_run(admin, self.args.vacuum_all).await;
        }
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

    fn configure(&mut self, run: &mut RunConfig) -> Result<()> {
        run.max_tries = (self.opts.max_tries > 0).then_some(self.opts.max_tries);
        // -t is per client, as pgbench's.
        run.events_per_connection = self.opts.transactions.filter(|&n| n > 0);
        run.reconnect_each = self.args.connect;
        // -L with -R: a transaction already later than the limit at its turn is skipped.
        if run.arrival.rate().is_some() {
            run.skip_late = self
                .opts
                .latency_limit_ms
                .map(|ms| std::time::Duration::from_secs_f64(ms / 1000.0));
        }
        if let Some(spec) = &self.opts.log {
            let files = TxnLogFiles::create(spec.clone(), run.client_threads, run.connections, self.seed)
                .map_err(|e| anyhow!(e))?;
            let files = Arc::new(files);
            run.txn_log = Some(files.clone());
            self.log = Some(files);
        }
        Ok(())
    }

    fn after(&mut self, code: ExitCode) -> Result<ExitCode> {
        if let Some(log) = &self.log {
            if let Err(e) = log.finish() {
                eprintln!("pgbench: error: writing the transaction log (-l): {e}");
                return Ok(ExitCode::from(exit::RESULTS_INCOMPLETE));
            }
        }
        // pgbench's code for a run in which a client stopped on an error.
        Ok(match code == ExitCode::from(exit::FATAL_SERVER_ERROR) {
            true => ExitCode::from(2),
            false => code,
        })
    }

    fn options(&self, run: Option<&RunConfig>) -> WorkloadOptions {
        WorkloadOptions::Pgbench(PgbenchOptions {
            script: self.label(),
            scale: self.scale,
            clients: self.args.clients.into(),
            jobs: run.map_or(0, |r| r.client_threads),
            transactions_per_client: self.opts.transactions.unwrap_or(0),
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
                let mut program = Program::new(parsed, p.weights.clone(), p.mode, &p.defines, self.scale, self.seed)
                    .map_err(|e| anyhow!(e))?
                    .with_clients(clients);
                program.debug = self.args.debug;
                program.verbose_errors = self.args.verbose_errors;
                program.max_tries = self.opts.max_tries;
                if self.args.report_per_command {
                    let stats = Arc::new(CommandStats::new(&program.parsed));
                    program.per_command = Some(stats.clone());
                    self.per_command = Some(stats);
                }
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
                transaction_type: self.transaction_type(),
                scale: self.scale,
                mode: self.protocol().into(),
                clients: self.args.clients,
                max_tries: self.opts.max_tries,
                failures_detailed: self.args.failures_detailed,
                transactions_per_client: self.opts.transactions,
                duration_s: self.args.run.time,
                latency_limit_ms: self.opts.latency_limit_ms,
                with_stddev: run.arrival.rate().is_some() || self.args.run.report_interval > 0.0,
                throttled: run.arrival.rate().is_some(),
                connect_each: self.args.connect,
                per_command: self.per_command.clone(),
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

/// `NAME[@WEIGHT]` of `-b`: as in pgbench, what follows an `@` must be a weight.
fn builtin_weight(spec: &str) -> Result<(Script, u64)> {
    let (name, w) = match spec.rsplit_once('@') {
        Some((name, w)) => match w.parse::<i64>() {
            Ok(n) if (0..=i32::MAX as i64).contains(&n) => (name, n as u64),
            Ok(n) => bail!("weight specification out of range (0 .. {}): {n}", i32::MAX),
            Err(_) => bail!("invalid weight specification: @{w}"),
        },
        None => (spec, 1),
    };
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
        Some((_, w)) if w.starts_with('-') => bail!("weight specification out of range (0 .. {}): {w}", i32::MAX),
        _ => Ok((spec, 1)),
    }
}

/// Reads `-f`, `-b`, `-D` and `-M` (and a built-in named as the command) into a plan.
fn script_plan(a: &PgbenchArgs) -> Result<Plan> {
    let mode =
        QueryMode::parse(&a.protocol).map_err(|e| anyhow!("invalid query mode (-M): \"{}\" ({e})", a.protocol))?;
    let mut builtins = Vec::new();
    if let Some(c) = a.command.as_deref() {
        builtins.push((Script::by_prefix(c).map_err(not_a_command)?, 1));
    }
    for b in &a.builtin {
        builtins.push(builtin_weight(b)?);
    }
    let mut file_weights = Vec::new();
    for f in &a.file {
        file_weights.push(split_weight(f)?);
    }
    let total: u64 = builtins
        .iter()
        .map(|b| b.1)
        .chain(file_weights.iter().map(|f| f.1))
        .sum();
    if total == 0 && !(builtins.is_empty() && file_weights.is_empty()) {
        bail!("total script weight must not be zero: give a script a positive @WEIGHT (or none)");
    }
    // -r and --debug speak of the script's commands: the built-in runs as its script.
    if a.file.is_empty()
        && builtins.len() <= 1
        && a.define.is_empty()
        && mode != QueryMode::Extended
        && !a.debug
        && !a.report_per_command
    {
        return Ok(Plan::Builtin(mode));
    }
    let mut defines = Vec::new();
    for d in &a.define {
        let Some((name, value)) = d.split_once('=') else {
            bail!("invalid variable definition: \"{d}\" (write NAME=VALUE)");
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
        labels.push(s.description().to_string());
    }
    for f in &a.file {
        let (path, w) = split_weight(f)?;
        let text = std::fs::read_to_string(path).map_err(|e| anyhow!("could not open file \"{path}\": {e}"))?;
        let name = std::path::Path::new(path)
            .file_name()
            .map_or(path.to_string(), |n| n.to_string_lossy().into_owned());
        parsed.add(&name, path, &text).map_err(|e| anyhow!("{e}"))?;
        weights.push(w);
        labels.push(path.to_string());
    }
    if mode != QueryMode::Simple {
        use dbperf_workloads::pgbench::lang::parse::MAX_PARAMS;
        if let Some(s) = parsed.statements.iter().find(|s| s.params.len() > MAX_PARAMS) {
            bail!(
                "statement has too many arguments (maximum is {MAX_PARAMS}): {}",
                s.placeholders
            );
        }
    }
    if builtins.is_empty() && a.file.is_empty() {
        let s = Script::TpcbLike;
        parsed
            .add(s.name(), &format!("builtin {}", s.name()), &s.text())
            .map_err(|e| anyhow!("{e}"))?;
        weights.push(1);
        labels.push(s.description().to_string());
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
        assert!(e(&["-b", "tpcb@0"]).contains("weight must not be zero"));
        assert!(e(&["-D", "novalue"]).contains("NAME=VALUE"));
        assert!(e(&["-D", "=5"]).contains("variable name"));
        assert!(e(&["-D", "a b=5"]).contains("variable name"));
        assert!(e(&["-M", "fast"]).contains("simple, extended or prepared"));
        let Plan::Scripts(p) = script_plan(&args(&["-M", "extended"])).unwrap() else {
            panic!("-M extended runs the built-in as a script");
        };
        assert_eq!(p.mode, QueryMode::Extended);
        assert!(e(&["-f", "/nonexistent/x.sql"]).contains("could not open file \"/nonexistent/x.sql\""));
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
        // pgbench's only word is the database, whatever it is.
        let a = words(&["mydb"]).unwrap();
        assert_eq!((a.command, a.database.as_deref()), (None, Some("mydb")));
        let e = |argv: &[&str]| words(argv).unwrap_err().to_string();
        assert!(e(&["-i", "-S"]).contains("cannot be used in initialization"));
        assert!(e(&["-i", "cleanup"]).contains("give one of them"));
    }

    /// pgbench 15's option errors of its 002_pgbench_no_server.pl, each with the words its
    /// test reads (run against /usr/bin/pgbench: the same words, exit code 1).
    #[test]
    fn option_errors_in_pgbenchs_words() {
        let err = |argv: &[&str]| -> String {
            let a = match pgbench_words(args(argv)) {
                Ok(a) => a,
                Err(e) => return e.to_string(),
            };
            if let Err(e) = RunOpts::check(&a) {
                return e.to_string();
            }
            match script_plan(&a) {
                Err(e) => e.to_string(),
                Ok(_) => panic!("{argv:?} accepted"),
            }
        };
        let cases: &[(&[&str], &str)] = &[
            (
                &["-b", "no-such-builtin"],
                "no builtin script found for name \"no-such-builtin\"",
            ),
            (&["--builtin=select-only@one"], "invalid weight specification: @one"),
            (
                &["-b", "select-only@-1"],
                "weight specification out of range (0 .. 2147483647): -1",
            ),
            (&["-f", "no-such-file"], "could not open file \"no-such-file\":"),
            (
                &[
                    "-N",
                    "-l",
                    "--aggregate-interval=5",
                    "--log-prefix=notused",
                    "-t",
                    "1000",
                    "-T",
                    "1",
                ],
                "specify either ",
            ),
            (&["--define", "foobla"], "invalid variable definition"),
            (&["-F", "1"], "-F/--fillfactor must be in range"),
            (&["-i", "-F", "1"], "-F/--fillfactor must be in range"),
            (&["-M", "no-such-mode"], "invalid query mode"),
            (&["--latency-limit=0.0"], "invalid latency limit"),
            (&["--sampling-rate=0"], "invalid sampling rate"),
            (
                &["-l", "--aggregate-interval=-3"],
                "--aggregate-interval must be in range",
            ),
            (&["-b", "se@0", "-b", "si@0", "-b", "tpcb@0"], "weight must not be zero"),
            (&["-i", "-S"], "cannot be used in initialization"),
            (&["-S", "-F", "90"], "cannot be used in benchmarking"),
            (&["-b", "s"], "ambiguous"),
            (&["--random-seed=one"], "unrecognized random seed option \"one\""),
            (
                &["--random-seed=one"],
                "Expecting an unsigned integer, \"time\" or \"rand\"",
            ),
            (&["--max-tries", "-10"], "invalid number of maximum tries: \"-10\""),
            (
                &["--max-tries", "0"],
                "an unlimited number of transaction tries can only be used with --latency-limit or a duration",
            ),
            (
                &["--sampling-rate=0.01"],
                "log sampling (--sampling-rate) is allowed only when",
            ),
            (
                &["-l", "--sampling-rate=0.1", "--aggregate-interval=3"],
                "sampling (--sampling-rate) and aggregation (--aggregate-interval) cannot be used at the same time",
            ),
            (&["--aggregate-interval=3"], "aggregation is allowed only when"),
            (&["--log-prefix=x"], "prefix (--log-prefix) is allowed only when"),
            (
                &["-l", "-T", "1", "--aggregate-interval=3"],
                "must not be higher than test duration",
            ),
            (
                &["-l", "-T", "5", "--aggregate-interval=3"],
                "must be a multiple of aggregation interval",
            ),
            (&["-I", "dtg"], "cannot be used in benchmarking mode"),
            (&["-i", "-I", "dta"], "unrecognized initialization step \"a\""),
            (&["-i", "-I", "dta"], "Allowed step characters are"),
            (&["--progress-timestamp"], "allowed only under"),
            (
                &["-i", "--partition-method=BAD"],
                "expecting \"range\" or \"hash\", got: \"BAD\"",
            ),
            (&["-i", "--partitions", "-1"], "--partitions must be in range"),
            (
                &["-i", "--partition-method=hash"],
                "partition-method requires greater than zero --partitions",
            ),
            (
                &[
                    "-P",
                    "1",
                    "--progress-timestamp",
                    "-l",
                    "--sampling-rate=0.001",
                    "-T",
                    "10",
                    "-t",
                    "1000",
                ],
                "specify either ",
            ),
        ];
        for (argv, words) in cases {
            let e = err(argv);
            assert!(e.contains(words), "{argv:?}: {e}");
        }
        let many: Vec<&str> = std::iter::repeat_n("-S", 129).collect();
        assert!(err(&many).contains("at most 128 SQL scripts"));
    }

    #[test]
    fn defaults_and_last_values_are_pgbenchs() {
        let opts = |argv: &[&str]| RunOpts::check(&pgbench_words(args(argv)).unwrap()).unwrap();
        // Neither -t nor -T: 10 transactions per client; one try; no log.
        let o = opts(&[]);
        assert_eq!((o.transactions, o.max_tries, o.latency_limit_ms), (Some(10), 1, None));
        assert_eq!(o.log, None);
        assert_eq!(opts(&["-T", "5"]).transactions, None);
        // A repeated option takes its last value, as pgbench's getopt.
        assert_eq!(opts(&["-t", "5", "-t", "10"]).transactions, Some(10));
        let a = args(&["-c", "2", "-c", "3", "-n", "-n", "-M", "simple", "-M", "prepared"]);
        assert_eq!((a.clients, a.protocol.as_str()), (3, "prepared"));
        let o = opts(&[
            "-l",
            "--sampling-rate=0.5",
            "--max-tries=3",
            "-L",
            "2.5",
            "--random-seed=5432",
        ]);
        assert_eq!(o.max_tries, 3);
        assert_eq!(o.latency_limit_ms, Some(2.5));
        assert_eq!(o.seed, Some(5432));
        let log = o.log.unwrap();
        assert_eq!(
            (log.prefix.as_str(), log.sampling_rate, log.with_retries),
            ("pgbench_log", 0.5, true)
        );
        assert_eq!(opts(&["--random-seed=time"]).seed, None);
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
