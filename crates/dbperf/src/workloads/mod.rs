//! Benchmark definitions, one folder per benchmark: schema per dialect, data
//! generation and loading, transaction mixes and checks; and the loaders' shared progress bar.

use std::time::Duration;

use indicatif::{HumanCount, ProgressBar, ProgressState, ProgressStyle};

pub mod ddl;
pub mod linkbench;
pub mod pgbench;
pub mod sysbench;
pub mod tpcc;
pub mod tpch;

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
    bar
}
