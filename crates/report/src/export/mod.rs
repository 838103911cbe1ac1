//! Output formats, one file each behind one trait (hyperfine's exporters): the one [`Format`]
//! every command's `--format` takes, and the [`Exporter`] that turns what the pipeline
//! ([`crate::publish`]) assembled into that format's text.
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
use crate::publish::{AnalysisReport, RunReport, RunsReport};
use crate::setup::Setup;

/// The format of what a command prints (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Tables and lines for the terminal.
    Text,
    /// JSON for machines (a comparison: schema `dbperf.compare/1`, with its setup).
    Json,
    /// CSV: a comparison one line per cell (threads or query, column, n, median, min, max,
    /// diff_pct, verdict, runs); a run its intervals.
    Csv,
    /// Markdown tables to paste into a report.
    Markdown,
}

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

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Markdown => "markdown",
        }
    }

    /// A `--format` parser that takes only `formats`, for a command that prints fewer than
    /// all: clap refuses the others naming the flag and listing these, and `--help` lists
    /// only these.
    pub fn only(formats: &'static [Format]) -> impl clap::builder::TypedValueParser<Value = Format> {
        use clap::builder::TypedValueParser as _;
        use clap::ValueEnum as _;
        clap::builder::PossibleValuesParser::new(formats.iter().filter_map(|f| f.to_possible_value()))
            .map(|name| <Format as clap::ValueEnum>::from_str(&name, false).expect("one of the formats"))
    }
}

/// A format a document has no form in.
#[derive(Debug, thiserror::Error)]
#[error("--format {format}: {what} is printed as {offered}")]
pub struct Unsupported {
    /// The format asked for.
    pub format: &'static str,
    /// What was to be printed.
    pub what: &'static str,
    /// The formats it has.
    pub offered: &'static str,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Flags {
        #[arg(long, default_value = "text", value_parser = Format::only(&[Format::Text, Format::Json]))]
        format: Format,
    }

    #[test]
    fn a_command_that_prints_fewer_formats_refuses_the_others_naming_the_flag() {
        assert_eq!(Flags::parse_from(["x"]).format, Format::Text);
        assert_eq!(Flags::parse_from(["x", "--format", "json"]).format, Format::Json);
        let e = Flags::try_parse_from(["x", "--format", "csv"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--format") && e.contains("text, json"), "{e}");
        for f in [Format::Text, Format::Json, Format::Csv, Format::Markdown] {
            assert_eq!(<Format as clap::ValueEnum>::from_str(f.name(), false).unwrap(), f);
        }
    }
}
