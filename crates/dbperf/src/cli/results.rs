//! `dbperf results index|sql`: the results catalog from the command line. The catalog itself
//! is [`dbperf_results::catalog`]; this file parses flags and prints what comes back. Runs
//! record themselves through [`dbperf_results::recording`].

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use comfy_table::{presets, Table};

use dbperf_results::catalog::Catalog;

/// The results catalog (<results-dir>/catalog.sqlite): an SQLite index of every run directory.
#[derive(Debug, Args)]
pub struct ResultsArgs {
    #[command(subcommand)]
    pub command: ResultsCommand,
}

#[derive(Debug, Subcommand)]
pub enum ResultsCommand {
    /// Index run directories not in the catalog yet, or recorded before a table the catalog
    /// gained since (creates the catalog if needed).
    Index(IndexArgs),
    /// Run one read-only SQL query on the catalog and print the rows (tables: runs, variables,
    /// run_options, intervals, telemetry, tpch, tpch_queries, metrics; see docs/results.md).
    /// Statements that write, and ATTACH, are refused.
    Sql(SqlArgs),
}

/// Where the results live.
#[derive(Debug, Args)]
pub struct RootArg {
    /// Directory holding the run directories and catalog.sqlite.
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    #[command(flatten)]
    pub root: RootArg,
}

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The query, e.g. "SELECT run_id, threads, tps FROM runs ORDER BY started_at".
    pub query: String,
    #[command(flatten)]
    pub root: RootArg,
}

/// Runs `dbperf results ...`.
pub fn run(args: ResultsArgs) -> anyhow::Result<()> {
    match args.command {
        ResultsCommand::Index(a) => {
            let root = &a.root.results_dir;
            if !root.is_dir() {
                anyhow::bail!(
                    "results directory {} does not exist: give the directory that holds the run directories with --results-dir",
                    root.display()
                );
            }
            let mut catalog = Catalog::open(root)?;
            let report = catalog.rescan()?;
            for (path, why) in &report.failed {
                eprintln!("warning: {} not indexed: {why}", path.display());
            }
            println!(
                "{}: {} run(s) recorded, {} already indexed, {} failed",
                catalog.path().display(),
                report.recorded.len(),
                report.unchanged,
                report.failed.len()
            );
            Ok(())
        }
        ResultsCommand::Sql(a) => {
            // Indexed first (as dbperf writes it), then queried read-only: a query may only
            // read, and may not attach other files.
            drop(open_existing(&a.root.results_dir)?);
            let catalog = Catalog::open_read_only(&a.root.results_dir)?;
            let (names, rows) = catalog.query(&a.query)?;
            let mut table = Table::new();
            table.load_style(presets::ASCII_BORDERS_ONLY_CONDENSED);
            table.set_header(names);
            table.add_rows(rows);
            println!("{table}");
            Ok(())
        }
    }
}

/// Opens the catalog of `root`, indexing any run directory not in it yet.
pub fn open_existing(root: &Path) -> anyhow::Result<Catalog> {
    if !root.is_dir() {
        anyhow::bail!(
            "results directory {} does not exist: give the directory that holds the run directories with --results-dir",
            root.display()
        );
    }
    let mut catalog = Catalog::open(root)?;
    let report = catalog
        .rescan()
        .with_context(|| format!("indexing {}", root.display()))?;
    for (path, why) in &report.failed {
        eprintln!("warning: {} not indexed: {why}", path.display());
    }
    Ok(catalog)
}
