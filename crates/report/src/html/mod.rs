//! Self-contained HTML reports (`dbperf report ... --html FILE`): interactive charts (plotly.js's
//! basic bundle, inlined once), tables, the analysis and the manifest, in one file that needs no network to view.
//!
//! | file | owns |
//! |---|---|
//! | `bars.rs` | grouped bars with min/max whiskers (TPC-H queries normalised to a baseline) |
//! | `chart.rs` | one chart description made into a plotly figure (log axes with 1-2-5 ticks, a lower panel sharing x, fixed ranges, bands, limits) |
//! | `notes.rs` | the "Warnings" section: each artifact of the measurement, its message and evidence |
//! | `page.rs` | the HTML page: escaping, headings, tables, charts (plotly.js's basic bundle, fetched and checked by `build.rs`, inlined once), collapsible sections, the print stylesheet (charts whole, tables within the page, sections opened) |
//! | `spectrum.rs` | the latency spectrum of a run from its `intervals.hlog` |
//! | `setup.rs` | the setup block: host, server and its key settings, data, duration, client |
//! | `run.rs` | the report of one run |
//! | `experiment.rs` | the report of a lab experiment |
//! | `tpch.rs` | the report of TPC-H power runs: per-query bars normalised to a baseline |

pub mod bars;
pub mod chart;
pub mod experiment;
pub mod notes;
pub mod page;
pub mod run;
pub mod setup;
pub mod spectrum;
pub mod tpch;

use std::path::PathBuf;

use dbperf_results::ResultsError;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A run file could not be read.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// The interval histogram log is damaged.
    #[error("{path}: not a readable HdrHistogram interval log ({what})")]
    Hlog {
        /// The file.
        path: PathBuf,
        /// What failed.
        what: String,
    },
    /// A chart could not be drawn.
    #[error(transparent)]
    Chart(#[from] chart::ChartError),
    /// The runs could not be compared.
    #[error(transparent)]
    Compare(#[from] crate::compare::CompareError),
}
