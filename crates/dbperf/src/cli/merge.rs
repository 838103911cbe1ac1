//! `dbperf merge DIR...`: one run from the run directories of a sharded run's shards. Finds
//! each directory (a path, or a run id under --results-dir), merges them with
//! [`dbperf_results::merge`] (the workload's own files with [`dbperf_workloads::merged`]),
//! writes the merged run directory and prints the workload's report, what was merged, the
//! totals, and what was left out. Exit code 0 when every shard was merged, 5
//! ([`dbperf_core::exit::RESULTS_INCOMPLETE`]) when a shard was missing or failed (the merged
//! run covers the others).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use dbperf_results::merge::shards::GivenShards;
use dbperf_results::merge::{merge_given, MergedRun};
use dbperf_workloads::tpch::merge::{merge_throughput, THROUGHPUT_WORKLOAD};

/// Merge the run directories of a sharded run (`--shard I/N`) into one run.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' run directories (or run ids under --results-dir), one per shard.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<String>,
    /// Where to write the merged run directory (and where run ids are looked up).
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

/// Runs `dbperf merge`.
pub fn run(args: MergeArgs, argv: &[String]) -> anyhow::Result<ExitCode> {
    let dirs = args
        .dirs
        .iter()
        .map(|d| find_dir(d, &args.results_dir))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let given = GivenShards::read(&dirs)?;
    let workload = given
        .by_index
        .values()
        .next()
        .map_or(String::new(), |g| g.manifest.workload.name.clone());
    if workload == THROUGHPUT_WORKLOAD {
        return merge_tpch(given, &args.results_dir, argv);
    }
    let mut merged = merge_given(given)?;
    let workload_text = dbperf_workloads::merged::merge_own_files(&mut merged);
    let dir = merged.write(&args.results_dir, argv)?;
    if !workload_text.is_empty() {
        println!("{workload_text}");
    }
    print!("{}", report_text(&merged, dir.path()));
    if merged.complete() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "warning: results incomplete: the merged run covers {}; {} shard(s) left out (listed above)",
        merged.covers(),
        merged.record.left_out.len()
    );
    Ok(ExitCode::from(dbperf_core::exit::RESULTS_INCOMPLETE))
}

/// `dbperf merge` of a TPC-H throughput test's shards: the merged test's report, the shards
/// merged and left out, the run directory.
fn merge_tpch(given: GivenShards, results_dir: &Path, argv: &[String]) -> anyhow::Result<ExitCode> {
    let mut m = merge_throughput(given)?;
    let dir = m.write(results_dir, argv)?;
    print!("{}", m.text(dir.path()));
    if m.complete() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "warning: results incomplete: the merged test covers {} of {} streams; {} shard(s) left out (listed above)",
        m.record.users,
        m.record.users_total,
        m.record.left_out.len()
    );
    Ok(ExitCode::from(dbperf_core::exit::RESULTS_INCOMPLETE))
}

/// A directory given: a path, or a run id under `results_dir`.
fn find_dir(given: &str, results_dir: &Path) -> anyhow::Result<PathBuf> {
    let path = PathBuf::from(given);
    if path.is_dir() {
        return Ok(path);
    }
    let under = results_dir.join(given);
    if under.is_dir() {
        return Ok(under);
    }
    anyhow::bail!(
        "run directory {given:?} not found: give a shard's run directory, or its run id under --results-dir ({})",
        results_dir.display()
    )
}

/// What `dbperf merge` prints: the shards merged, the totals from the merged histograms, what
/// was left out and why, and the merged run directory.
pub fn report_text(m: &MergedRun, dir: &Path) -> String {
    let mut out = String::new();
    let s = &m.summary;
    let _ = writeln!(out, "Merged {} ({}):", s.workload, m.covers());
    for shard in &m.merged {
        let _ = writeln!(
            out,
            "  shard {}  {}  {} transactions, {} users",
            shard.index, shard.run_id, shard.transactions, shard.users
        );
    }
    if !m.complete() {
        let _ = writeln!(out, "Left out:");
        for shard in &m.record.left_out {
            let id = match shard.run_id.is_empty() {
                true => String::new(),
                false => format!("  {}", shard.run_id),
            };
            let _ = writeln!(out, "  shard {}{id}  {}", shard.index, shard.reason);
        }
    }
    let _ = writeln!(
        out,
        "Transactions: {} in {:.1} s ({:.2} per second)",
        s.transactions.total, s.duration_s, s.transactions.per_sec
    );
    let l = &s.latency_ms;
    let _ = writeln!(
        out,
        "Latency (ms, every request of the merged shards): p50 {:.3}  p95 {:.3}  p99 {:.3}  max {:.3}",
        l.p50, l.p95, l.p99, l.max
    );
    for (file, _) in &m.own_files {
        let _ = writeln!(out, "Merged: {file} (from every merged shard's requests)");
    }
    for (file, shards) in &m.not_merged {
        let list: Vec<String> = shards.iter().map(u32::to_string).collect();
        let _ = writeln!(
            out,
            "Not merged: {file} (shards {}): a workload's own results stay in each shard's run directory",
            list.join(", ")
        );
    }
    if let Some(from) = &m.telemetry_from {
        let _ = writeln!(
            out,
            "Telemetry: copied from {} (server rows: the shared server; OS and client rows: that shard's host only)",
            from.display()
        );
    }
    for note in &m.notes {
        let _ = writeln!(out, "Note: {note}");
    }
    let _ = writeln!(out, "Run directory: {}", dir.display());
    out
}
