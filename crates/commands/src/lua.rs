//! `dbperf lua SCRIPT.lua [prepare|run|cleanup|prewarm|help|COMMAND] [options]`: a sysbench
//! 1.0 Lua script run unchanged ([`dbperf_workloads::lua`]), with sysbench's command line.
//!
//! The command line has three kinds of options: dbperf's and sysbench's general ones (clap,
//! [`LuaArgs`]), and the script's own (`--tables=4`), known only once the script has declared
//! them in `sysbench.cmdline.options`. [`split_argv`] sets the latter aside before clap parses
//! the rest; [`run`] loads the script once to read its declarations and checks them.
//! This file owns the command line: parsing it, finding the script, the target, sysbench.opt's
//! general options, and the measured run's setup (run directory, manifest, report); what is
//! done with the script (its commands, its help, its main state and report hooks) is
//! [`dbperf_workloads::lua::commands`]'s.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use dbperf_engine::{RunConfig, RunOutcome, StatementNames};
use dbperf_report::LiveLine;

use super::args::{RandArgs, SysbenchFlags, TargetArgs};
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::target::Family;
use dbperf_driver::{pg, Session, Target};
use dbperf_results::options::{LuaOptions, WorkloadOptions};
use dbperf_results::Summary;
use dbperf_run::measured::Measured;
use dbperf_run::{measured_run, Description, Drive, MeasuredRun, Measurer, RunArgs, RunShape, Shared};
use dbperf_workloads::lua::api::{self, Shared as ScriptShared};
use dbperf_workloads::lua::checkpoints;
use dbperf_workloads::lua::commands;
use dbperf_workloads::lua::options::{self, OptValue};
use dbperf_workloads::lua::report;
use dbperf_workloads::lua::worker::LuaWorkload;
use dbperf_workloads::lua::Naming;
use dbperf_workloads::lua::DEPRECATED_ALIASES as ALIASES;
use dbperf_workloads::sysbench::event::UniqueIds;
use dbperf_workloads::sysbench::rand::RandType;
use dbperf_workloads::sysbench::report::SysbenchReport;
use dbperf_workloads::{FinalReport, ReportFile, ReportPath};

const LUA_HELP: &str = "\
The script is a path, or the name of one of sysbench's own (oltp_read_write, or \
oltp_read_write.lua: looked up in /usr/share/sysbench). Options may come before or after the \
script and command, as `--name=value`; the script's own options (`dbperf lua SCRIPT help` \
lists them) go with the others. `require` finds modules beside the script, then in \
/usr/share/sysbench.

As under sysbench: an option given twice takes its last value; stdout is sysbench's (its \
options block and final report, filled with dbperf's measurements; --dbperf-report adds \
dbperf's own, which the run directory's report.txt always holds); --verbosity below 3 leaves \
it to the script; --test=SCRIPT, --max-requests, --max-time, --num-threads and --tx-rate still \
work; --help and --version are sysbench-shaped (-h is this list).

Commands: run is measured by dbperf (intervals every second, per-statement latency, telemetry, \
a run directory in the catalog; with no server given, or none answering, or \
--mysql-dry-run (every statement answered at once, with no rows, by no server), the script \
runs alone and nothing is recorded); prepare, cleanup, prewarm and the script's own commands run as \
the script defines them (on --threads connections when it marks them PARALLEL_COMMAND), or its \
global function of that name (old-style scripts).

The script sees sysbench 1.0's API: sysbench.opt, sysbench.tid, sysbench.cmdline (options, \
commands, command, call_command, PARALLEL_COMMAND, argv, script_path), sysbench.rand (uniform, \
default, gaussian, special, pareto, zipfian, uniform_uint64, uniform_double, unique, string, \
varstring), sysbench.sql (driver, connect, query, query_row, prepare, bind_create, bind_param, \
set, set_rand_str, execute, close, bulk_insert_init/next/done, fetch_row, nrows, nfields, \
type, error), sysbench.hooks (before_restart_event, sql_error_ignorable, report_intermediate \
and report_cumulative: their output, sysbench's byte for byte, replaces sysbench's default \
reports; dbperf stores every interval either way), \
sysbench.error, thread_init/event/thread_done/init/done, LuaJIT's ffi (ffi.C.sb_counter_inc \
too). An ignorable SQL error (--mysql-ignore-errors, --pgsql-ignore-errors, a lost \
connection) restarts the event; any other error stops the run naming file:line. Statements \
are timed one by one and named by verb and table (SELECT sbtest1) or, with \
--statement-names=shape, by their text with values as ?.";

/// `dbperf lua`: the script, the command and every option dbperf or sysbench knows. As under
/// sysbench, an option given twice takes its last value.
#[derive(Debug, Args)]
#[command(after_long_help = LUA_HELP, args_override_self = true)]
pub struct LuaArgs {
    /// The sysbench Lua script: a path, a module along LUA_PATH, or a script of
    /// /usr/share/sysbench by name; none or `-`: read from stdin, run, and end (as sysbench).
    pub script: Option<String>,
    /// prepare, run, cleanup, prewarm, help, or a command the script defines.
    pub command: Option<String>,
    /// Anything after the command, which sysbench refuses by name.
    #[arg(hide = true)]
    pub unexpected: Vec<String>,

    /// The server (MySQL family).
    #[command(flatten)]
    pub server: TargetArgs,
    /// PostgreSQL server host (with --db-driver=pgsql).
    #[arg(long, help_heading = "Connection")]
    pub pgsql_host: Option<String>,
    /// PostgreSQL port.
    #[arg(long, help_heading = "Connection")]
    pub pgsql_port: Option<u16>,
    /// PostgreSQL user.
    #[arg(long, help_heading = "Connection")]
    pub pgsql_user: Option<String>,
    /// PostgreSQL password. Visible to other local users in the process list: prefer DBPERF_TARGET or --target-file.
    #[arg(long, help_heading = "Connection")]
    pub pgsql_password: Option<String>,
    /// PostgreSQL database.
    #[arg(long, help_heading = "Connection")]
    pub pgsql_db: Option<String>,
    /// Database driver: mysql or pgsql (default: the target's family).
    #[arg(long, help_heading = "Connection")]
    pub db_driver: Option<String>,
    /// Prepared statements: auto (server-side, as sysbench) or disable (values written into the text).
    #[arg(long, default_value = "auto", help_heading = "Connection")]
    pub db_ps_mode: String,
    /// MySQL error numbers that restart the event, or 'all'.
    #[arg(long, default_value = "1213,1020,1205", help_heading = "Connection")]
    pub mysql_ignore_errors: String,
    /// PostgreSQL SQLSTATEs that restart the event, 'none' or 'all'.
    #[arg(long, default_value = "40P01,40001,23505", help_heading = "Connection")]
    pub pgsql_ignore_errors: String,
    /// Dry run (the mysql driver's, as sysbench's): connect to nothing and answer every
    /// statement at once with no rows, to measure the client's own cost.
    #[arg(long, value_parser = super::args::parse_bool, num_args = 0..=1, require_equals = true, default_missing_value = "on", default_value = "off", help_heading = "Connection")]
    pub mysql_dry_run: bool,

    /// Connections: sysbench threads, each with its own Lua state.
    #[arg(value_parser = clap::value_parser!(u32).range(1..=dbperf_core::bounds::MAX_CONNECTIONS as i64), long, default_value_t = 1, help_heading = "Load")]
    pub threads: u32,
    /// Time, rate, warmup, client I/O, report interval, results directory and telemetry.
    #[command(flatten)]
    pub run: RunArgs<SysbenchFlags>,
    /// Total events to start (0 = no limit).
    #[arg(long, default_value_t = 0, help_heading = "Load")]
    pub events: u64,
    /// sysbench's forced shutdown; dbperf always shuts down within --shutdown-grace.
    #[arg(long, help_heading = "Load", hide = true)]
    pub forced_shutdown: Option<String>,

    /// Extra percentile in the final report (and sysbench.opt.percentile).
    #[arg(long, default_value_t = 95.0, help_heading = "Reporting")]
    pub percentile: f64,
    /// Seconds since the start (comma-separated) at which sysbench's full report is printed
    /// for the time since the previous one, its counters then starting again; the run
    /// directory keeps every interval either way.
    #[arg(long, help_heading = "Reporting")]
    pub report_checkpoints: Option<String>,
    /// Print the latency histogram in the final report.
    #[arg(long, value_parser = super::args::parse_bool, num_args = 0..=1, require_equals = true, default_missing_value = "on", default_value = "off", help_heading = "Reporting")]
    pub histogram: bool,
    /// What dbperf prints of its own, as sysbench's levels: 0-1 nothing but errors and the
    /// script's output, 2 warnings too, 3 (default) to 5 dbperf's banner and reports.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=5), help_heading = "Reporting")]
    pub verbosity: u32,
    /// Also print dbperf's own report after sysbench's (its banner, percentiles, per-type
    /// latencies, client and run directory); it is written to the run directory
    /// (report.txt) either way.
    #[arg(long, help_heading = "Reporting")]
    pub dbperf_report: bool,
    /// How statements are named in the latencies: table (verb and table) or shape (the SQL, values as ?).
    #[arg(long, default_value = "table", help_heading = "Reporting")]
    pub statement_names: String,

    /// sysbench.rand.default's distribution: uniform, gaussian, special (sysbench 1.0's default), pareto, zipfian.
    #[arg(long, default_value = "special", help_heading = "Random numbers")]
    pub rand_type: String,
    /// The seed (0 = from the clock; the manifest records it) and the distributions' parameters.
    #[command(flatten)]
    pub rand: RandArgs,
}

/// A script option set aside from clap: the name as typed (without `--`) and its value.
pub type ScriptOpt = (String, Option<String>);

/// Splits `dbperf lua ...`'s command line: what clap parses (dbperf's and sysbench's general
/// options, the script and the command) and the script's own `--name[=value]` options.
pub fn split_argv(argv: &[String]) -> (Vec<String>, Vec<ScriptOpt>) {
    let lua = LuaArgs::augment_args(clap::Command::new("lua"));
    let known = |name: &str| -> Option<bool> {
        if name == "help" || name == "version" {
            return Some(false);
        }
        lua.get_arguments()
            .find(|a| a.get_long() == Some(name))
            .map(|a| a.get_action().takes_values() && a.get_num_args().is_none_or(|n| n.min_values() > 0))
    };
    let mut clap_argv = Vec::new();
    let mut script = Vec::new();
    let mut it = argv.iter().cloned();
    // Up to and including "lua".
    for a in it.by_ref() {
        let end = a == "lua";
        clap_argv.push(a);
        if end {
            break;
        }
    }
    let positionals_at = clap_argv.len();
    let mut test = None;
    let mut aliases: [Option<String>; 4] = Default::default();
    // Where the aliases go: the end, or before a `--` that ends the options.
    let mut options_end = None;
    while let Some(a) = it.next() {
        match legacy(&a) {
            Legacy::Keep => {}
            Legacy::Script(path) => {
                test = Some(path);
                continue;
            }
            Legacy::Alias(i, value) => {
                aliases[i] = Some(value);
                continue;
            }
        }
        let Some(body) = a.strip_prefix("--") else {
            clap_argv.push(a);
            continue;
        };
        if body.is_empty() {
            options_end = Some(clap_argv.len());
            clap_argv.push(a);
            clap_argv.extend(it.by_ref());
            break;
        }
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        match known(&name.replace('_', "-")) {
            Some(takes_value) => {
                let next_is_value = takes_value && value.is_none();
                clap_argv.push(a);
                if next_is_value {
                    if let Some(v) = it.next() {
                        clap_argv.push(v);
                    }
                }
            }
            None => script.push((name, value)),
        }
    }
    let read = aliases_read(&aliases);
    let at = options_end.unwrap_or(clap_argv.len());
    clap_argv.splice(at..at, read);
    if let Some(path) = test {
        clap_argv.insert(positionals_at, path);
    }
    (clap_argv, script)
}

/// What [`split_argv`] does with one of sysbench's deprecated spellings.
enum Legacy {
    /// Not one: as given.
    Keep,
    /// `--test=SCRIPT`: the script.
    Script(String),
    /// `--max-requests=N` and the like: the alias (its index in [`ALIASES`]) and its value.
    Alias(usize, String),
}

/// sysbench 1.0's deprecated options, which it still accepts: `--test=SCRIPT` names the script
/// (warned at once, on stderr, as sysbench does), and the [`ALIASES`].
fn legacy(arg: &str) -> Legacy {
    let Some((name, value)) = arg.strip_prefix("--").and_then(|b| b.split_once('=')) else {
        return Legacy::Keep;
    };
    let name = name.replace('_', "-");
    if name == "test" {
        eprintln!(
            "WARNING: the --test option is deprecated. You can pass a script name or path on the command line without any options."
        );
        return Legacy::Script(value.to_string());
    }
    match ALIASES.iter().position(|(alias, ..)| *alias == name) {
        Some(i) => Legacy::Alias(i, value.to_string()),
        None => Legacy::Keep,
    }
}

/// The aliases' last values, as sysbench reads them after the whole command line: an alias set
/// above its floor is warned once (stdout, before anything else is printed, whatever the
/// verbosity) and stands for today's option, over that option's own value.
fn aliases_read(last: &[Option<String>; 4]) -> Vec<String> {
    let mut args = Vec::new();
    for ((alias, new, floor), value) in ALIASES.iter().zip(last) {
        let Some(value) = value else { continue };
        if value.trim().parse::<f64>().is_ok_and(|v| v <= *floor) {
            continue;
        }
        println!("WARNING: --{alias} is deprecated, use --{new} instead");
        args.push(format!("--{new}={value}"));
    }
    args
}

/// `sysbench.cmdline.argv` as sysbench's: the program, then the arguments after `lua`.
fn script_argv(argv: &[String]) -> Vec<String> {
    let after = argv.iter().position(|a| a == "lua").map_or(1, |i| i + 1);
    argv.iter().take(1).chain(argv.iter().skip(after)).cloned().collect()
}

/// A script given on stdin, kept in a temporary file while it runs.
fn read_stdin_script() -> Result<tempfile::NamedTempFile> {
    use std::io::{IsTerminal, Read, Write};
    if std::io::stdin().is_terminal() {
        eprintln!("Reading the script from the standard input:");
    }
    let mut text = Vec::new();
    std::io::stdin()
        .read_to_end(&mut text)
        .map_err(|e| anyhow!("reading the script from stdin: {e}"))?;
    let mut file = tempfile::Builder::new()
        .prefix("dbperf-stdin-")
        .suffix(".lua")
        .tempfile()?;
    file.write_all(&text)?;
    Ok(file)
}

/// Finds the script as sysbench does: a path (relative to the current directory), else a
/// module name looked up along `LUA_PATH` (`?` replaced by the name), else one of sysbench's
/// own scripts by name. `None`: none of them.
fn find_script(name: &str) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.is_file() {
        return Some(p.to_path_buf());
    }
    let mut candidates: Vec<String> = std::env::var("LUA_PATH")
        .unwrap_or_default()
        .split(';')
        .filter(|t| t.contains('?'))
        .map(|t| t.replace('?', &name.replace('.', "/")))
        .collect();
    if !name.contains('/') {
        for dir in ["/usr/share/sysbench", "/usr/local/share/sysbench"] {
            candidates.push(format!("{dir}/{name}"));
            candidates.push(format!("{dir}/{name}.lua"));
        }
    }
    candidates.into_iter().map(PathBuf::from).find(|c| c.is_file())
}

/// Whether a server was given at all: --target (or its environment variable and file), or
/// any of sysbench's --mysql-*/--pgsql-* connection options.
fn target_given(a: &LuaArgs) -> Result<bool> {
    let s = &a.server;
    let parts = [
        &s.mysql_host,
        &s.mysql_user,
        &s.mysql_password,
        &s.mysql_db,
        &s.mysql_socket,
        &a.pgsql_host,
        &a.pgsql_user,
        &a.pgsql_password,
        &a.pgsql_db,
    ];
    Ok(s.url.url()?.is_some() || parts.iter().any(|p| p.is_some()) || s.mysql_port.is_some() || a.pgsql_port.is_some())
}

/// The target from --target or sysbench's --mysql-*/--pgsql-* options.
fn target(a: &LuaArgs) -> Result<Target> {
    let pg_parts = a.pgsql_host.is_some()
        || a.pgsql_port.is_some()
        || a.pgsql_user.is_some()
        || a.pgsql_password.is_some()
        || a.pgsql_db.is_some();
    // --db-driver chooses between the two sets of options, as sysbench's driver reads its
    // own; without it, the --pgsql-* options name a PostgreSQL server.
    let use_pg = match a.db_driver.as_deref() {
        Some("pgsql") => true,
        Some("mysql") => false,
        _ => pg_parts,
    };
    let t = if use_pg && a.server.url.url()?.is_none() {
        let mut u = url::Url::parse("postgres://localhost/").map_err(|e| anyhow!(e))?;
        let host = a.pgsql_host.clone().unwrap_or_else(|| "localhost".into());
        u.set_host(Some(&host))
            .map_err(|e| anyhow!("--pgsql-host {host:?}: {e}"))?;
        let _ = u.set_port(Some(a.pgsql_port.unwrap_or(5432)));
        let _ = u.set_username(a.pgsql_user.as_deref().unwrap_or("sbtest"));
        let _ = u.set_password(a.pgsql_password.as_deref());
        u.set_path(a.pgsql_db.as_deref().unwrap_or("sbtest"));
        Target::parse(u.as_str()).map_err(|e| anyhow!("the --pgsql-* options: {e}"))?
    } else {
        a.server.resolve()?
    };
    match (a.db_driver.as_deref(), t.family) {
        (None, _) | (Some("mysql"), Family::Mysql) | (Some("pgsql"), Family::Postgres) => Ok(t),
        (Some("mysql"), Family::Postgres) => bail!("--db-driver=mysql but the target is PostgreSQL: give a mysql:// target or --db-driver=pgsql"),
        (Some("pgsql"), Family::Mysql) => bail!("--db-driver=pgsql but the target speaks the MySQL protocol: give a postgres:// target (or --pgsql-host ...)"),
        // sysbench's driver check (the script's sysbench.sql.driver() says it in its words).
        (Some(_), _) => Ok(t),
    }
}

/// sysbench.opt's general options.
fn general_opt(a: &LuaArgs, driver: &str, seed: u64) -> Vec<(String, OptValue)> {
    let n = |v: f64| OptValue::Number(v);
    let s = |v: &str| OptValue::Str(v.to_string());
    let o = |v: &Option<String>| OptValue::Str(v.clone().unwrap_or_default());
    vec![
        ("threads".into(), n(a.threads as f64)),
        ("events".into(), n(a.events as f64)),
        ("time".into(), n(a.run.time as f64)),
        ("rate".into(), n(a.run.rate)),
        ("warmup-time".into(), n(a.run.warmup_time as f64)),
        ("report-interval".into(), n(a.run.report_interval)),
        ("percentile".into(), n(a.percentile)),
        ("histogram".into(), OptValue::Bool(a.histogram)),
        ("verbosity".into(), n(a.verbosity as f64)),
        (
            "report-checkpoints".into(),
            OptValue::List(
                a.report_checkpoints
                    .iter()
                    .flat_map(|l| l.split(','))
                    .filter(|v| !v.is_empty())
                    .map(String::from)
                    .collect(),
            ),
        ),
        ("debug".into(), OptValue::Bool(false)),
        ("validate".into(), OptValue::Bool(false)),
        ("rand-type".into(), s(&a.rand_type)),
        ("rand-seed".into(), n(seed as f64)),
        ("rand-spec-iter".into(), n(a.rand.rand_spec_iter as f64)),
        ("rand-spec-pct".into(), n(a.rand.rand_spec_pct as f64)),
        ("rand-spec-res".into(), n(a.rand.rand_spec_res as f64)),
        ("rand-pareto-h".into(), n(a.rand.rand_pareto_h)),
        ("rand-zipfian-exp".into(), n(a.rand.rand_zipfian_exp)),
        ("db-driver".into(), s(driver)),
        ("db-ps-mode".into(), s(&a.db_ps_mode)),
        ("db-debug".into(), OptValue::Bool(false)),
        ("mysql-host".into(), o(&a.server.mysql_host)),
        ("mysql-port".into(), n(a.server.mysql_port.unwrap_or(3306) as f64)),
        (
            "mysql-user".into(),
            s(a.server.mysql_user.as_deref().unwrap_or("sbtest")),
        ),
        ("mysql-db".into(), s(a.server.mysql_db.as_deref().unwrap_or("sbtest"))),
        ("mysql-socket".into(), o(&a.server.mysql_socket)),
        ("mysql-dry-run".into(), OptValue::Bool(a.mysql_dry_run)),
        (
            "mysql-ignore-errors".into(),
            OptValue::List(a.mysql_ignore_errors.split(',').map(String::from).collect()),
        ),
        ("pgsql-host".into(), o(&a.pgsql_host)),
        ("pgsql-port".into(), n(a.pgsql_port.unwrap_or(5432) as f64)),
        ("pgsql-user".into(), s(a.pgsql_user.as_deref().unwrap_or("sbtest"))),
        ("pgsql-db".into(), s(a.pgsql_db.as_deref().unwrap_or("sbtest"))),
    ]
}

/// Says a failure in sysbench's words (stderr) and gives its exit code: the suite's own tests
/// read them, and they name what is wrong.
fn refuse(message: impl std::fmt::Display) -> Result<ExitCode> {
    eprintln!("{message}");
    Ok(ExitCode::FAILURE)
}

/// Runs `dbperf lua`; `script_opts` are the options [`split_argv`] set aside, `argv` the
/// whole command line (for the manifest; passwords are not in it when given as advised).
/// The commands are sysbench's, found as it finds them: the script's own
/// (`sysbench.cmdline.commands`) first, then `help`, `prepare`, `cleanup` (its global
/// functions), `run`; any other global function of the script is dbperf's extension (old-style
/// scripts' `prewarm()`). No command loads the script and ends.
pub fn run(a: LuaArgs, script_opts: Vec<ScriptOpt>, argv: &[String]) -> Result<ExitCode> {
    if let Some(extra) = a.unexpected.first() {
        return refuse(format_args!("Unrecognized command line argument: {extra}"));
    }
    // Read with the command line, before anything is printed, as sysbench reads it.
    let checkpoints = match a.report_checkpoints.as_deref().map(checkpoints::parse).transpose() {
        Ok(at) => at.unwrap_or_default(),
        Err(e) => return refuse(e),
    };
    // sysbench's header, after the command line is read and before anything else, as sysbench
    // prints it (a blank line after it).
    if a.verbosity >= 3 {
        println!("{}\n", dbperf_workloads::lua::header());
    }
    // No script, or `-`: the script is read from stdin and only loaded (sysbench's rule).
    let stdin_script = match a.script.as_deref() {
        None | Some("-") => Some(read_stdin_script()?),
        Some(_) => None,
    };
    let given = a.script.clone().unwrap_or_else(|| "-".into());
    let found = match &stdin_script {
        Some(file) => Some(file.path().to_path_buf()),
        None => find_script(&given),
    };
    let Some(script) = found else {
        return refuse(format_args!(
            "FATAL: Cannot find benchmark '{given}': no such built-in test, file or module"
        ));
    };
    // sysbench names the script by its file name in its messages.
    let sname = Path::new(&given)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| given.clone());
    let script_name = script
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "script".into());
    let command = match stdin_script {
        Some(_) => String::new(),
        None => a.command.clone().unwrap_or_default(),
    };
    // A command other than run connects only if the script does, as under sysbench: without a
    // server given, its connect fails then.
    let target = match command.as_str() {
        "help" => None,
        _ if !target_given(&a)? => None,
        _ => Some(target(&a)?),
    };
    let family = target.as_ref().map(|t| t.family);
    let driver = match family {
        Some(Family::Postgres) => "pgsql",
        _ => a.db_driver.as_deref().unwrap_or("mysql"),
    };
    // The mysql driver's option, as under sysbench: with --db-driver=pgsql it does nothing.
    let dry_run = a.mysql_dry_run && driver == "mysql";
    let ignore = match family {
        Some(Family::Postgres) => pg::parse_ignore(&a.pgsql_ignore_errors).map_err(|e| anyhow!(e))?,
        _ => IgnoreErrors::parse(&a.mysql_ignore_errors).map_err(|e| anyhow!(e))?,
    };
    let ps_disabled = match a.db_ps_mode.as_str() {
        "auto" => false,
        "disable" => true,
        other => bail!("--db-ps-mode={other}: use auto (server-side prepared statements) or disable"),
    };
    let rand_type: RandType = a.rand_type.parse().map_err(|e| anyhow!("--rand-type: {e}"))?;
    let rand = a.rand.params().map_err(|e| anyhow!(e.to_string()))?;
    let naming = Naming::parse(&a.statement_names).map_err(|e| anyhow!(e))?;
    if !(a.percentile > 0.0 && a.percentile < 100.0) {
        bail!(
            "--percentile must be between 0 and 100 (exclusive), got {}",
            a.percentile
        );
    }
    let seed = if a.rand.rand_seed == 0 {
        a.run.default_seed()
    } else {
        a.rand.rand_seed
    };
    let general = general_opt(&a, driver, seed);
    let mut shared = ScriptShared {
        script: script.clone(),
        command: command.clone(),
        argv: script_argv(argv),
        opt: general.clone(),
        target: target.clone(),
        client_target: None,
        ignore,
        ps_disabled,
        dry_run,
        rand,
        rand_type,
        seed,
        unique: UniqueIds::new(seed),
        names: Arc::new(StatementNames::after(0)),
        naming,
        give_up_at: std::sync::atomic::AtomicU64::new(u64::MAX),
        chunks: Arc::default(),
        connected: Default::default(),
        reconnects: Default::default(),
        outside: Default::default(),
    };
    // The probe is sysbench's global state: loaded once, in front of the user (its top level
    // prints what it prints), to read the options the script declares; `help` runs in it.
    let probe = match api::new_state(&Arc::new(commands::shared_probe(&shared)), 0) {
        Ok(p) => p,
        // sysbench's message is the error's first line (file:line and what); the
        // traceback's frames after it are said at --verbosity above 3.
        Err(e) if a.verbosity > 3 => return refuse(format_args!("FATAL: {e}")),
        Err(e) => return refuse(format_args!("FATAL: {}", e.lines().next().unwrap_or_default())),
    };
    if command.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let defs = match options::script_options(&probe) {
        Ok(d) => d,
        Err(e) => {
            return refuse(format_args!(
                "FATAL: `sysbench.cmdline.read_cmdline_options' function failed: {e}"
            ))
        }
    };
    let values = match options::resolve(&defs, &script_opts) {
        Ok(v) => v,
        Err(e) => {
            if let Some(close) = &e.suggestion {
                eprintln!("{e}\nhint: did you mean {close}?");
                return Ok(ExitCode::FAILURE);
            }
            return refuse(e);
        }
    };
    let kind = commands::command_kind(&probe, &command);
    if command == "help" && !matches!(kind, Some(commands::CommandKind::Defined { .. })) {
        commands::export_options(&probe, &values)?;
        return match commands::print_help(&probe, &sname, &defs) {
            Ok(true) => Ok(ExitCode::SUCCESS),
            Ok(false) => refuse(format_args!("'{sname}' test does not implement the 'help' command.")),
            Err(e) => refuse(format_args!("FATAL: {e}")),
        };
    }
    shared.opt.extend(values.iter().cloned());
    if command == "run" && !matches!(kind, Some(commands::CommandKind::Defined { .. })) {
        if !commands::has_function(&probe, "event") {
            return refuse(format_args!("FATAL: cannot find the event() function in {sname}"));
        }
        drop(probe);
        if a.run.client_impl != "wire" {
            bail!(
                "--client-impl {}: a script's statements go through dbperf's own sessions (wire), which its sysbench.sql API drives; drop --client-impl",
                a.run.client_impl
            );
        }
        let shape = RunShape {
            connections: a.threads as usize,
            events: (a.events > 0).then_some(a.events),
            rate_per_connection: false,
            seed: shared.seed,
        };
        // The run flags' errors before anything connects.
        a.run.config(&shape)?;
        let args = a.run.clone();
        let mut plan = LuaRun {
            a,
            shape,
            shared: Some(shared),
            script_name,
            values,
            checkpoints,
            main: None,
        };
        // A dry run opens no connection: nothing is asked of a server, and none is recorded.
        if dry_run {
            return run_serverless(plan);
        }
        // As sysbench's, a run needs no server of its own: the script connects if it wants
        // to. Without a server given, or one that does not answer, the script runs alone
        // (its drv:connect() fails as sysbench's does), measured but not recorded.
        let Some(target) = target else {
            return run_serverless(plan);
        };
        if !answers(&target, &plan.shared.as_ref().expect("the plan holds its state").ignore) {
            return run_serverless(plan);
        }
        return measured_run(&mut plan, Shared::Engine(&args), &target, argv);
    }
    drop(probe);
    let kind = match kind {
        Some(k) => k,
        None if command == "prepare" || command == "cleanup" => {
            return refuse(format_args!(
                "'{sname}' test does not implement the '{command}' command."
            ));
        }
        None => return refuse(format_args!("Unknown command: {command}")),
    };
    if a.verbosity >= 3 && kind == (commands::CommandKind::Defined { parallel: true }) && a.threads > 1 {
        println!("Initializing worker threads...\n");
    }
    match commands::run_command(Arc::new(shared), &command, kind, a.threads as usize) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // sysbench's words; the traceback's frames only above --verbosity 3.
        Err(e) if a.verbosity > 3 => refuse(format_args!("FATAL: `{command}' function failed: {e}")),
        Err(e) => {
            let e = e.to_string();
            refuse(format_args!(
                "FATAL: `{command}' function failed: {}",
                e.lines().next().unwrap_or_default()
            ))
        }
    }
}

/// Whether `target` answers: a connection opened and closed. A run whose server does not
/// answer is the script's to fail (its `drv:connect()`), as under sysbench.
fn answers(target: &Target, ignore: &IgnoreErrors) -> bool {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
        return true;
    };
    rt.block_on(dbperf_driver::any::AnySession::connect(target, ignore.clone()))
        .is_ok()
}

/// `run`'s main state (the script's `init`), then sysbench's options block (at `--verbosity` 3
/// and more), and the run given up on if it outlasts its length, counted generously from now
/// (connecting and `settle`, the wait before the run, come first).
fn main_state(
    a: &LuaArgs,
    shared: &Arc<ScriptShared>,
    threads: usize,
    checkpoints: &[u64],
    settle: Duration,
) -> Result<commands::MainState> {
    let mut main = commands::MainState::init(shared, threads)?;
    if a.verbosity >= 3 {
        print!(
            "{}",
            report::run_mode(&report::RunMode {
                threads,
                rate: a.run.rate,
                report_interval: a.run.report_interval,
                checkpoints,
                seed: a.rand.rand_seed,
            })
        );
    }
    main.report_checkpoints(
        shared,
        threads,
        checkpoints.to_vec(),
        a.run.report_interval,
        a.percentile,
        a.verbosity >= 3,
    )?;
    if a.run.time > 0 {
        let secs = a.run.warmup_time + a.run.time + a.run.shutdown_grace.ceil() as u64 + 60;
        commands::give_up_after(shared, Duration::from_secs(secs).saturating_add(settle));
    }
    Ok(main)
}

/// `dbperf lua SCRIPT run` without a server: the script's threads and events measured by the
/// engine as with one (sysbench's options block, live lines and report on stdout), with no
/// run directory (a run is recorded with its server's facts). Its `drv:connect()` fails as
/// sysbench's does when no server answers.
fn run_serverless(mut plan: LuaRun) -> Result<ExitCode> {
    let a = &plan.a;
    let mut shared = plan
        .shared
        .take()
        .ok_or_else(|| anyhow!("the script's state is used once"))?;
    shared.client_target = shared.target.clone();
    let shared = Arc::new(shared);
    let threads = a.threads as usize;
    let cfg = a.run.config(&plan.shape)?;
    let main = main_state(a, &shared, threads, &plan.checkpoints, Duration::ZERO)?;
    let mut watch = Serverless {
        started: if a.verbosity >= 3 { report::STARTED } else { "" },
        live: main.live_line(&shared, threads, a.percentile, a.run.report_interval, a.verbosity >= 3)?,
        each_interval: main.each_interval(),
    };
    let stop = dbperf_engine::StopSignal::new();
    let handler_stop = stop.clone();
    dbperf_core::interrupt::on_interrupt("Stopping: finishing the events in progress", "exiting now", move || {
        handler_stop.stop(dbperf_engine::StopReason::Interrupted)
    });
    let workload = Arc::new(LuaWorkload::new(shared.clone(), plan.script_name.clone()));
    let outcome = match dbperf_engine::run(&cfg, workload, stop, &mut watch) {
        Ok(o) => o,
        Err(dbperf_engine::RunError::Connect(e)) => {
            // A thread's thread_init failed: sysbench's two lines.
            let why = e.message.strip_prefix("thread_init: ").unwrap_or(&e.message);
            // The traceback's frames only above --verbosity 3, as sysbench's.
            let why = match a.verbosity > 3 {
                true => why,
                false => why.lines().next().unwrap_or_default(),
            };
            return refuse(format_args!(
                "FATAL: `thread_init' function failed: {why}\nFATAL: Thread initialization failed!"
            ));
        }
        Err(e) => bail!("{e}"),
    };
    drop(watch);
    main.report_cumulative(&shared, &outcome, a.percentile, a.verbosity >= 3, a.histogram);
    main.done(a.verbosity >= 3);
    Ok(match outcome.reason {
        dbperf_engine::StopReason::Fatal => {
            let e = outcome.fatal.as_ref().map(|e| e.to_string()).unwrap_or_default();
            eprintln!("error: the run stopped on a fatal error: {e}");
            ExitCode::from(dbperf_core::exit::FATAL_SERVER_ERROR)
        }
        dbperf_engine::StopReason::Interrupted => ExitCode::from(dbperf_core::exit::INTERRUPTED),
        _ => ExitCode::SUCCESS,
    })
}

/// What a run without a server prints as it goes: sysbench's `Threads started!`, the live
/// line ([`commands::MainState::live_line`]) and the checkpoint reports
/// ([`commands::MainState::each_interval`]).
struct Serverless {
    started: &'static str,
    live: LiveLine,
    each_interval: Option<dbperf_engine::EachInterval>,
}

impl dbperf_engine::Observer for Serverless {
    fn on_ready(&mut self) {
        print!("{}", self.started);
    }

    fn on_interval(&mut self, r: &dbperf_engine::IntervalReport<'_>) {
        if let Some(f) = &mut self.each_interval {
            f(r);
        }
    }

    fn on_report(&mut self, r: &dbperf_engine::IntervalReport<'_>) {
        if let LiveLine::Custom(f) = &self.live {
            print!("{}", f(r));
        }
    }
}

/// `dbperf lua SCRIPT run`: `init()` in the script's main state, the measured run of `event()`
/// on every thread with the script's report hooks, `done()` ([`commands::MainState`]), dbperf's
/// final report.
struct LuaRun {
    a: LuaArgs,
    shape: RunShape,
    /// The script's shared state, until the run takes it.
    shared: Option<ScriptShared>,
    script_name: String,
    values: Vec<(String, OptValue)>,
    /// `--report-checkpoints`, sorted.
    checkpoints: Vec<u64>,
    /// The main state between the measurement and `done()`, which runs after dbperf's final
    /// report, as sysbench's after its own.
    main: Option<commands::MainState>,
}

impl MeasuredRun for LuaRun {
    fn name(&self) -> String {
        format!("lua_{}", self.script_name)
    }

    fn drive(&self) -> Drive {
        Drive::Engine(self.shape)
    }

    fn options(&self, _run: Option<&RunConfig>) -> WorkloadOptions {
        let a = &self.a;
        let script = self
            .shared
            .as_ref()
            .map(|s| s.script.display().to_string())
            .unwrap_or_default();
        WorkloadOptions::Lua(LuaOptions {
            script,
            script_options: commands::script_options_record(&self.values),
            command: "run".into(),
            threads: a.threads.into(),
            events: a.events,
            rand_type: a.rand_type.clone(),
            db_ps_mode: a.db_ps_mode.clone(),
            statement_names: a.statement_names.clone(),
        })
    }

    fn seeds(&self) -> serde_json::Value {
        serde_json::json!({ "rand_seed": self.shared.as_ref().map_or(0, |s| s.seed) })
    }

    fn describe(&self) -> Description {
        let shared = self.shared.as_ref();
        Description {
            what: shared.map(|s| s.script.display().to_string()).unwrap_or_default(),
            users: "thread",
            rate_of: "events",
            rand_type: shared.map_or("special", |s| s.rand_type.name()).to_string(),
            detail: String::new(),
        }
    }

    fn measure<S: Session + 'static>(&mut self, m: Measurer<'_>) -> Result<Measured> {
        let a = &self.a;
        let mut shared = self
            .shared
            .take()
            .ok_or_else(|| anyhow!("the script's state is used once"))?;
        shared.client_target = Some(m.target().clone());
        let shared = Arc::new(shared);
        let threads = a.threads as usize;
        let settle = a.run.out.settle().unwrap_or_default();
        let main = main_state(a, &shared, threads, &self.checkpoints, settle)?;
        let live = main.live_line(&shared, threads, a.percentile, a.run.report_interval, a.verbosity >= 3)?;
        let workload = Arc::new(LuaWorkload::new(shared.clone(), self.script_name.clone()));
        let m = match main.each_interval() {
            Some(f) => m.on_each_interval(f),
            None => m,
        };
        let measured = m.engine(workload, live)?;
        if let Some(outcome) = measured.engine_outcome() {
            main.report_cumulative(&shared, outcome, a.percentile, a.verbosity >= 3, a.histogram);
        }
        self.main = Some(main);
        Ok(measured)
    }

    fn after(&mut self, code: ExitCode) -> Result<ExitCode> {
        if let Some(main) = self.main.take() {
            main.done(!self.quiet());
        }
        Ok(code)
    }

    /// stdout is sysbench's: dbperf's banner, lines and report only with --dbperf-report.
    fn quiet(&self) -> bool {
        self.a.verbosity < 3 || !self.a.dbperf_report
    }

    fn started_line(&self) -> Option<String> {
        Some(if self.a.verbosity >= 3 {
            report::STARTED.into()
        } else {
            String::new()
        })
    }

    fn final_report(&self, outcome: &RunOutcome, summary: &Summary, run: &RunConfig) -> (String, Vec<ReportFile>) {
        let (text, files) = SysbenchReport {
            percentile: self.a.percentile,
            client_threads: run.client_threads,
            histogram: self.a.histogram,
        }
        .final_report(outcome, summary);
        // Printed only with --dbperf-report (see quiet); kept in the run directory always.
        let mut files = files;
        files.push(ReportFile {
            path: ReportPath::RunDir("report.txt"),
            bytes: text.clone().into_bytes(),
        });
        (text, files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(args: &[&str]) -> (Vec<String>, Vec<ScriptOpt>) {
        let argv: Vec<String> = ["dbperf", "lua"].iter().chain(args).map(|s| s.to_string()).collect();
        split_argv(&argv)
    }

    #[test]
    fn sysbench_deprecated_options_become_todays() {
        let (clap, script) = split(&[
            "--max-requests=5",
            "run",
            "--test=t.lua",
            "--max-time=0",
            "--num-threads=1",
            "--tx_rate=10",
            "--tables=2",
        ]);
        assert_eq!(clap, ["dbperf", "lua", "t.lua", "run", "--events=5", "--rate=10"]);
        assert_eq!(script, [("tables".to_string(), Some("2".to_string()))]);
        // As sysbench reads them: the last value, over today's option wherever it stands,
        // and not at all when at or below the alias's floor.
        let (clap, _) = split(&["--max-requests=5", "--events=3", "t.lua", "run", "--max-requests=7"]);
        assert_eq!(clap, ["dbperf", "lua", "--events=3", "t.lua", "run", "--events=7"]);
        let (clap, _) = split(&["--max-requests=5", "t.lua", "run", "--max-requests=0", "--", "x"]);
        assert_eq!(clap, ["dbperf", "lua", "t.lua", "run", "--", "x"]);
    }

    #[test]
    fn the_last_value_wins_and_a_bare_histogram_is_a_flag() {
        let parse = |args: &[&str]| {
            let (clap_argv, _) = split(args);
            let cmd = LuaArgs::augment_args(clap::Command::new("lua").no_binary_name(true));
            let m = cmd.try_get_matches_from(&clap_argv[2..]).unwrap();
            LuaArgs::from_arg_matches(&m).unwrap()
        };
        use clap::FromArgMatches;
        let a = parse(&[
            "--threads=2",
            "--histogram",
            "t.lua",
            "run",
            "--threads=3",
            "--events=1",
            "--events=4",
        ]);
        assert_eq!((a.threads, a.events, a.histogram), (3, 4, true));
        assert_eq!(
            (a.script.as_deref(), a.command.as_deref()),
            (Some("t.lua"), Some("run"))
        );
        let a = parse(&["t.lua", "--histogram=off", "run"]);
        assert!(!a.histogram);
    }
}
