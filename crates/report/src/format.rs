//! The one output format every command's `--format` takes ([`Format`]), and the error of a
//! document that has no form in the format asked for ([`Unsupported`]). Which exporter writes
//! each format is `crate::export`'s. Also the rule every table follows for figures that are not
//! available: "n/a" and a number in the cell, each reason once under the table ([`Footnotes`]).

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

/// The reasons of a table's "n/a" cells, numbered by first appearance: the same reason, the
/// same number, each listed once under the table (text and HTML alike).
#[derive(Debug, Default)]
pub struct Footnotes {
    reasons: Vec<String>,
}

impl Footnotes {
    /// The number of `why` (from 1), numbering it if it is new.
    pub fn number(&mut self, why: &str) -> usize {
        match self.reasons.iter().position(|r| r == why) {
            Some(i) => i + 1,
            None => {
                self.reasons.push(why.to_owned());
                self.reasons.len()
            }
        }
    }

    /// The reasons, in number order.
    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }
}

/// A text table's "n/a: REASON" cells as "n/a [k]" ([`Footnotes`]): the rows, and the reasons
/// to print once under the table.
pub fn footnote_not_available(rows: &[Vec<String>]) -> (Vec<Vec<String>>, Vec<String>) {
    let mut notes = Footnotes::default();
    let rows = rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|cell| match cell.strip_prefix("n/a: ") {
                    Some(why) => format!("n/a [{}]", notes.number(why)),
                    None => cell.clone(),
                })
                .collect()
        })
        .collect();
    (rows, notes.reasons)
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

    #[test]
    fn each_not_available_reason_is_numbered_once() {
        let rows = vec![
            vec!["a".to_string(), "n/a: no timer".to_string(), "n/a: off".to_string()],
            vec!["b".to_string(), "n/a: no timer".to_string(), "3".to_string()],
        ];
        let (cells, reasons) = footnote_not_available(&rows);
        assert_eq!(cells[0], ["a", "n/a [1]", "n/a [2]"]);
        assert_eq!(cells[1], ["b", "n/a [1]", "3"]);
        assert_eq!(reasons, ["no timer", "off"]);
    }
}
