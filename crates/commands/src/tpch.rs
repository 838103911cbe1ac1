//! `dbperf tpch ...`: TPC-H data, queries, validation and the power test. Arguments are
//! parsed here, checked (each error names the flag and the fix) and handed to
//! [`dbperf_workloads::tpch`]; `validate`, `power` and `compare` are in [`super::tpch_run`].

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand, ValueEnum};

use super::args::TargetArgs;

use dbperf_driver::target::Family;
use dbperf_driver::Target;
use dbperf_workloads::tpch::check_scale_factor;
use dbperf_workloads::tpch::load::{self, LoadConfig, LoadMethod};
use dbperf_workloads::tpch::power::stream_params;
use dbperf_workloads::tpch::qgen::{check_seed, stream_order};
use dbperf_workloads::tpch::queries::QueryTexts;
use dbperf_workloads::tpch::updates;

/// TPC-H (DBT-3): data identical to dbgen 2.17.3, qgen parameters, validation, power test.
#[derive(Debug, Args)]
pub struct TpchArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: TpchCommand,
}

/// `dbperf tpch` subcommands.
#[derive(Debug, Subcommand)]
pub enum TpchCommand {
    /// Create the 8 tables and stream generated data into them in parallel, then index and ANALYZE.
    Prepare(PrepareArgs),
    /// Drop the 8 tables (those dbperf created, unless --force).
    Cleanup(CleanupArgs),
    /// Print the 22 queries of a stream with qgen 2.17.3's parameters (or the validation ones).
    Qgen(QgenArgs),
    /// Run the 22 queries with the validation parameters and compare every answer (PASS/FAIL).
    Validate(crate::tpch_run::ValidateArgs),
    /// The power test: RF1, the 22 queries in stream 0's order, RF2; Power@Size.
    Power(Box<crate::tpch_run::PowerArgs>),
    /// The throughput test: S concurrent query streams plus the refresh stream; Throughput@Size.
    Throughput(Box<crate::tpch_throughput::ThroughputArgs>),
    /// Compare power-test runs per query: baseline seconds, relative differences, draws, timeouts.
    Compare(crate::tpch_run::CompareArgs),
}

/// Where to connect.
#[derive(Debug, Clone, Args)]
pub struct ConnArgs {
    /// The server.
    #[command(flatten)]
    pub server: TargetArgs,
    /// SQL dialect of the schema and queries [default: the target's: mysql for mysql://,
    /// postgres for postgres://].
    #[arg(long, value_parser = dialect_parser(), help_heading = "Connection")]
    pub dialect: Option<Family>,
}

/// `dbperf tpch cleanup`.
#[derive(Debug, Clone, Args)]
pub struct CleanupArgs {
    /// Where.
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Also drop TPC-H tables dbperf did not create (by default cleanup drops only the tables
    /// dbperf's prepare created).
    #[arg(long)]
    pub force: bool,
}

/// `--dialect`'s values: each family by its URL scheme's name, with its help.
const DIALECTS: [(Family, &str); 2] = [
    (Family::Mysql, "MySQL, MariaDB, Percona Server"),
    (Family::Postgres, "PostgreSQL"),
];

/// Parses `--dialect mysql|postgres` into the [`Family`] whose SQL to write.
fn dialect_parser() -> impl TypedValueParser<Value = Family> {
    PossibleValuesParser::new(DIALECTS.map(|(f, help)| PossibleValue::new(f.as_str()).help(help))).map(|s| {
        DIALECTS
            .into_iter()
            .map(|(f, _)| f)
            .find(|f| f.as_str() == s)
            .expect("clap passes only a possible value")
    })
}

impl ConnArgs {
    /// The target, as `dbperf sysbench` resolves it (`sandbox:NAME`, URL, `--mysql-*`); its
    /// family is the SQL written. A `--dialect` the target's server does not speak is refused.
    pub fn target(&self) -> Result<Target> {
        let target = self.server.resolve()?;
        match self.dialect {
            Some(d) if d != target.family => anyhow::bail!(
                "--dialect {d:?} does not match the target, which speaks {:?}; drop --dialect to use the target's",
                target.family
            ),
            _ => Ok(target),
        }
    }

    /// The sandbox name when the target is `sandbox:NAME`.
    pub fn sandbox(&self) -> Option<String> {
        self.server.sandbox()
    }
}

/// `dbperf tpch prepare`.
#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// Scale factor (1 = 1 GB of .tbl text, 6 million lineitem rows).
    #[arg(long, visible_alias = "sf")]
    pub scale_factor: f64,
    /// Loader connections (default: one per CPU, at least 2).
    #[arg(value_parser = clap::value_parser!(u32).range(1..=dbperf_core::bounds::MAX_CONNECTIONS as i64), long)]
    pub threads: Option<u32>,
    /// Also write dbgen's .tbl files (rows ending in `|`) into DIR.
    #[arg(long, value_name = "DIR")]
    pub write_tbl: Option<PathBuf>,
    /// How rows go in: LOAD DATA LOCAL INFILE streamed from memory (needs local_infile=ON),
    /// or prepared 1,000-row INSERTs.
    #[arg(long, value_enum, default_value = "load-data")]
    pub load_method: LoadMethodArg,
    /// Also write dbgen's update sets 1..N into the --write-tbl DIR, as `dbgen -U N` does:
    /// orders.tbl.u<n>, lineitem.tbl.u<n> (RF1's rows) and delete.<n> (RF2's keys).
    #[arg(long, value_name = "N", requires = "write_tbl")]
    pub updates: Option<u64>,
    /// Only write the .tbl files (with --write-tbl); no server needed.
    #[arg(long, requires = "write_tbl")]
    pub no_load: bool,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `--load-method` (tpch and tpcc prepare).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadMethodArg {
    /// LOAD DATA LOCAL INFILE streamed from memory.
    LoadData,
    /// Prepared 1,000-row INSERTs.
    Insert,
}

impl From<LoadMethodArg> for LoadMethod {
    fn from(a: LoadMethodArg) -> LoadMethod {
        match a {
            LoadMethodArg::LoadData => LoadMethod::LoadData,
            LoadMethodArg::Insert => LoadMethod::Insert,
        }
    }
}

/// `dbperf tpch qgen`.
#[derive(Debug, Args)]
pub struct QgenArgs {
    /// Scale factor (changes Q11's fraction only).
    #[arg(long, visible_alias = "sf", default_value_t = 1.0)]
    pub scale_factor: f64,
    /// qgen's seed (`qgen -r`; default: the time as MMDDhhmmss, as DBT-3).
    #[arg(long)]
    pub seed: Option<i64>,
    /// Stream (`qgen -p`): its query order, and seed + stream as the seed.
    #[arg(long, default_value_t = 0)]
    pub stream: u32,
    /// The spec's validation parameters (`qgen -d`).
    #[arg(long)]
    pub validation: bool,
    /// Print one line per query with its parameters (like `qgen -l`) instead of the SQL.
    #[arg(long)]
    pub params_only: bool,
    /// SQL dialect of the queries.
    #[arg(long, value_parser = dialect_parser(), default_value = "mysql")]
    pub dialect: Family,
    /// Print query Q's template (`:1`... for its parameters, `:s` for the stream): the text to
    /// start a hinted query file from (`tpch power --queries-dir`).
    #[arg(long, value_name = "Q", value_parser = clap::value_parser!(u8).range(1..=22), conflicts_with_all = ["params_only", "validation"])]
    pub template: Option<u8>,
    /// Use the query texts in DIR (`N.sql`) where it has one, as `tpch power --queries-dir`.
    #[arg(long, value_name = "DIR")]
    pub queries_dir: Option<std::path::PathBuf>,
}

/// Runs `dbperf tpch`; `argv` is the whole command line, for the manifest.
pub fn run(args: TpchArgs, argv: &[String]) -> Result<ExitCode> {
    match args.command {
        TpchCommand::Prepare(a) => prepare(a),
        TpchCommand::Cleanup(c) => {
            let target = c.conn.target()?;
            runtime()?.block_on(load::cleanup(&target, c.force))?;
            Ok(ExitCode::SUCCESS)
        }
        TpchCommand::Qgen(a) => qgen(a),
        TpchCommand::Validate(a) => crate::tpch_run::validate(a),
        TpchCommand::Power(a) => crate::tpch_run::power(*a, argv),
        TpchCommand::Throughput(a) => crate::tpch_throughput::run(*a, argv),
        TpchCommand::Compare(a) => crate::tpch_run::compare(a),
    }
}

/// A multi-threaded runtime of up to 4 threads.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.clamp(2, 4))
        .enable_all()
        .build()?)
}

fn prepare(a: PrepareArgs) -> Result<ExitCode> {
    check_scale_factor(a.scale_factor)?;
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(2);
    let threads = a.threads.unwrap_or(cpus.max(2));
    if threads == 0 {
        bail!("--threads 0: give at least 1 loader connection");
    }
    if let Some(dir) = &a.write_tbl {
        let t0 = std::time::Instant::now();
        let files = load::write_tbl(dir, a.scale_factor, threads)?;
        println!(
            "Wrote {} .tbl files into {} in {:.1} s",
            files.len(),
            dir.display(),
            t0.elapsed().as_secs_f64()
        );
        if let Some(sets) = a.updates {
            let t0 = std::time::Instant::now();
            let files = updates::write_files(dir, a.scale_factor, sets)?;
            println!(
                "Wrote {} update files (sets 1..{sets}) into {} in {:.1} s",
                files.len(),
                dir.display(),
                t0.elapsed().as_secs_f64()
            );
        }
        if a.no_load {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let cfg = LoadConfig {
        sf: a.scale_factor,
        target: a.conn.target()?,
        connections: threads,
        method: a.load_method.into(),
        progress: true,
    };
    let r = runtime()?
        .block_on(load::prepare(&cfg))
        .with_context(|| format!("loading TPC-H SF {} into {}", cfg.sf, cfg.target.endpoint()))?;
    println!("{}", r.text(threads));
    Ok(ExitCode::SUCCESS)
}

fn qgen(a: QgenArgs) -> Result<ExitCode> {
    check_scale_factor(a.scale_factor)?;
    if let Some(q) = a.template {
        println!("{};", dbperf_workloads::tpch::queries::template(a.dialect, q));
        return Ok(ExitCode::SUCCESS);
    }
    let texts = match &a.queries_dir {
        Some(dir) => QueryTexts::load(dir)?,
        None => QueryTexts::default(),
    };
    let seed = a.seed.unwrap_or_else(dbperf_workloads::tpch::qgen::time_seed);
    check_seed(seed)?;
    if !a.validation {
        println!("-- using {seed} as a seed to the RNG");
    }
    let params = stream_params(a.scale_factor, seed, a.stream, a.validation);
    for q in stream_order(a.stream) {
        let p = &params[usize::from(q) - 1];
        if a.params_only {
            println!("{q}\t{}", p.values.join("\t"));
            continue;
        }
        let r = texts.render(a.dialect, p, a.stream);
        match texts.file(q) {
            Some(f) => println!("-- Q{q} (from {})", f.display()),
            None => println!("-- Q{q}"),
        }
        for s in r.setup.iter().chain([&r.main]).chain(&r.teardown) {
            println!("{s};");
        }
        println!();
    }
    Ok(ExitCode::SUCCESS)
}
