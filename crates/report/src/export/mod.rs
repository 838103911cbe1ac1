//! Output formats, one file each behind one trait (hyperfine's exporters): the [`Exporter`]
//! that turns a document the pipeline assembled (`crate::document`) into the text of one
//! [`Format`] (`crate::format`), and which exporter each format has.
//!
//! | file | owns |
//! |---|---|
//! | `text.rs` | tables and lines for the terminal: the setup block, comparisons with their variables, versions, warnings and the draw rule, a run's summary and analysis, the explanations table |
//! | `markdown.rs` | the same for a report: tables and paragraphs; a run's text in a fence |
//! | `csv.rs` | one line per comparison cell, per interval of a run, per TPC-H query of a run |
//! | `json.rs` | comparisons (schema `dbperf.compare/1`) with their setup, a run, an analysis, TPC-H power reports |
//!
//! What each part of a report says in words every format shares (a comparison's title, its
//! cells, the note on single runs) is [`crate::compare::view`]'s; a format decides only how it
//! is laid out, and which parts it has (the explanations table is for the terminal; JSON keeps
//! every comparison's warnings, the terminal tells them once per workload).

pub mod csv;
pub mod json;
pub mod markdown;
pub mod text;

use crate::compare::Comparison;
use crate::document::{AnalysisReport, RunReport, RunsReport};
use crate::format::{Format, Unsupported};
use crate::setup::Setup;

impl Format {
    /// The exporter of this format.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Text => &text::Text,
            Format::Json => &json::Json,
            Format::Csv => &csv::Csv,
            Format::Markdown => &markdown::Markdown,
        }
    }
}

impl Comparison {
    /// The comparison alone (without the setup block) in `format`: what
    /// [`Exporter::comparison`] prints as the first table of a report.
    pub fn render(&self, format: Format) -> String {
        format.exporter().comparison(self, None, true)
    }
}

/// One output format: how each document the pipeline assembles reads in it.
pub trait Exporter {
    /// A comparison table and what goes with it. `setup` (the block of its columns) comes
    /// before the first table of a group (`first`) in text and Markdown and with every JSON
    /// document; the runs' warnings are told with the first table only, except in JSON, where
    /// each document stands alone.
    fn comparison(&self, c: &Comparison, setup: Option<&Setup>, first: bool) -> String;

    /// Several runs or an experiment: each workload's comparisons, and what else the format has
    /// of them (explanations, TPC-H tables, points not finished).
    fn runs(&self, r: &RunsReport) -> String;

    /// One run: its setup, summary, analysis and explanation (CSV: its intervals).
    fn run(&self, r: &RunReport) -> String;

    /// `dbperf analyze`: the stalls and the stability verdict, the explanation, the setup.
    fn analysis(&self, a: &AnalysisReport) -> Result<String, Unsupported>;
}
