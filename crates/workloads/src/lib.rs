//! Benchmark definitions, one folder per benchmark: schema per server family, data
//! generation and loading, transaction mixes and checks, and each benchmark's own end of a
//! measured run ([`FinalReport`], in `<name>/report.rs`: its result files and final text);
//! and the loaders' shared progress bar.

use std::time::Duration;

use indicatif::{HumanCount, ProgressBar, ProgressState, ProgressStyle};

pub mod ddl;
pub mod linkbench;
pub mod lua;
pub mod merged;
pub mod pgbench;
pub mod sysbench;
pub mod tpcc;
pub mod tpch;

/// A file a workload adds to its run at the end.
pub struct ReportFile {
    /// A name in the run directory (written atomically), or a path elsewhere
    /// (`linkbench --csvstats`).
    pub path: ReportPath,
    /// Its contents.
    pub bytes: Vec<u8>,
}

/// Where a [`ReportFile`] goes.
pub enum ReportPath {
    /// In the run directory.
    RunDir(&'static str),
    /// Where the user asked.
    Elsewhere(std::path::PathBuf),
}

impl ReportFile {
    /// `value` as pretty JSON (and a newline) named `name` in the run directory.
    pub fn json<T: serde::Serialize + ?Sized>(name: &'static str, value: &T) -> ReportFile {
        let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
        bytes.push(b'\n');
        ReportFile {
            path: ReportPath::RunDir(name),
            bytes,
        }
    }
}

/// A workload's end of a measured run, which the run layer
/// (`dbperf_run`'s conclusion of a run) writes and prints: the one place each workload's
/// final report text comes from.
pub trait FinalReport {
    /// The workload's result files (`tpcc.json`, `linkbench.json`, ...) and the text printed
    /// after the run, from what the engine measured and `summary.json`.
    fn final_report(
        &self,
        outcome: &dbperf_engine::RunOutcome,
        summary: &dbperf_results::Summary,
    ) -> (String, Vec<ReportFile>);
}

/// How a loader sends rows to a MySQL-protocol server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadMethod {
    /// `LOAD DATA LOCAL INFILE` streamed from memory (needs `local_infile` on the server).
    LoadData,
    /// Prepared multi-row INSERTs.
    Insert,
    /// A prepared one-row INSERT executed for many rows per command
    /// (COM_STMT_BULK_EXECUTE, MariaDB only).
    Bulk,
}

/// A loader's progress bar on stderr: elapsed, bar, rows done/total (`~` before the total
/// when it is an estimate), whole rows per second and the ETA; hidden when not `enabled`.
pub fn load_progress(enabled: bool, total: u64, estimate: bool) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let about = if estimate { "~" } else { "" };
    let template =
        format!("{{elapsed_precise}} [{{bar:40}}] {{human_pos}}/{about}{{human_len}} rows ({{rate}}/s, ETA {{eta}})");
    let style = ProgressStyle::with_template(&template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", HumanCount(s.per_sec() as u64));
        });
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(250));
    if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        print_when_piped(&bar, about);
    }
    bar
}

/// Seconds between the progress lines of a load whose stderr is not a terminal (a log, CI).
pub const PIPED_PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Without a terminal the bar does not draw: a line every [`PIPED_PROGRESS_EVERY`] says how
/// far the load is, until the bar is finished or dropped.
fn print_when_piped(bar: &ProgressBar, about: &'static str) {
    let weak = bar.downgrade();
    let alive = move || weak.upgrade().filter(|b| !b.is_finished());
    let _ = std::thread::Builder::new()
        .name("dbperf-load-progress".into())
        .spawn(move || loop {
            let step = Duration::from_millis(200);
            let mut waited = Duration::ZERO;
            while waited < PIPED_PROGRESS_EVERY {
                std::thread::sleep(step);
                waited += step;
                if alive().is_none() {
                    return;
                }
            }
            let Some(b) = alive() else { return };
            eprintln!(
                "{}: {}/{about}{} rows ({}/s)",
                indicatif::HumanDuration(b.elapsed()),
                HumanCount(b.position()),
                HumanCount(b.length().unwrap_or(0)),
                HumanCount(b.per_sec() as u64)
            );
        });
}
