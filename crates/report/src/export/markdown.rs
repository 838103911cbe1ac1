//! Markdown to paste into a report: the setup block as a table, each comparison (the WARNING
//! line, the table, the inside-the-server table, the variables and versions as paragraphs,
//! the warnings, the notes and the draw rule), the TPC-H tables of an experiment; a run's text
//! in a fence.

use std::fmt::Write;

use super::text::Text;
use super::{Exporter, Format, Unsupported};
use crate::compare::variables::{VersionDiff, LACKING_SHOWN};
use crate::compare::view::{escape_md, named, per_version, INSIDE_TITLE};
use crate::compare::Comparison;
use crate::document::{AnalysisReport, RunReport, RunsReport};
use crate::setup::Setup;

/// Markdown.
pub struct Markdown;

impl Exporter for Markdown {
    fn comparison(&self, c: &Comparison, setup: Option<&Setup>, first: bool) -> String {
        match setup {
            Some(s) if first => format!("{}{}", setup_block(s), comparison(c, true)),
            _ => comparison(c, first),
        }
    }

    fn runs(&self, r: &RunsReport) -> String {
        let mut out = r.queries_not_finished.clone().unwrap_or_default();
        for w in &r.workloads {
            for (i, (c, setup)) in w.tables.iter().enumerate() {
                out.push_str(&self.comparison(c, Some(setup), i == 0));
            }
        }
        if let Some(t) = &r.tpch_points {
            let _ = writeln!(out, "{}", setup_block(&t.setup));
            out.push_str(&t.tables);
        }
        out
    }

    /// The run's text in a fence: its tables are laid out in columns.
    fn run(&self, r: &RunReport) -> String {
        format!("```\n{}```\n", Text.run(r))
    }

    fn analysis(&self, _: &AnalysisReport) -> Result<String, Unsupported> {
        Err(Unsupported {
            format: Format::Markdown.name(),
            what: "an analysis",
            offered: "text or json",
        })
    }
}

/// The setup block as a Markdown table.
pub fn setup_block(s: &Setup) -> String {
    let mut out = format!(
        "**{}**\n\n| setup | value |\n|---|---|\n",
        s.heading().trim_end_matches(':')
    );
    for f in &s.fields {
        let _ = writeln!(
            out,
            "| {} | {} |",
            f.name.replace('|', "\\|"),
            s.line(f).replace('|', "\\|")
        );
    }
    out.push('\n');
    out
}

/// A comparison; the runs' warnings only when `warnings` (the first table of a workload).
fn comparison(cmp: &Comparison, warnings: bool) -> String {
    let mut out = String::new();
    let v = &cmp.variables;
    if !v.warnings.is_empty() {
        let list: Vec<String> = v
            .warnings
            .iter()
            .map(|w| format!("`{}` ({})", w.name, w.values.join(" vs ")))
            .collect();
        let _ = writeln!(
            out,
            "> **WARNING**: server variables known to distort results differ: {}.\n",
            list.join(", ")
        );
    }
    let _ = writeln!(out, "**{}**\n", cmp.title());
    let header: Vec<String> = std::iter::once(cmp.metric.row_header().to_string())
        .chain(cmp.columns.iter().map(|c| escape_md(&c.label)))
        .collect();
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---:|".repeat(header.len()));
    for row in &cmp.rows {
        let cells: Vec<String> = std::iter::once(row.label.clone())
            .chain(
                row.cells
                    .iter()
                    .map(|c| c.as_ref().map_or("-".to_string(), |c| cmp.cell_text(c, true))),
            )
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
    if let Some(note) = cmp.spread_note() {
        let _ = writeln!(out, "_{note}._\n");
    }
    if let Some(inside) = inside_table(cmp) {
        let _ = writeln!(out, "_{INSIDE_TITLE}_\n\n{inside}");
    }
    if !v.differing.is_empty() {
        let names: Vec<&str> = v.differing.iter().map(|d| d.name.as_str()).collect();
        let _ = writeln!(out, "Other server variables that differ: {}.\n", names.join(", "));
    }
    if !v.follow_warnings.is_empty() {
        let _ = writeln!(out, "{}.\n", cmp.follow_warnings());
    }
    if let Some(versions) = &v.versions {
        out.push_str(&versions_paragraphs(cmp, versions));
    } else if !v.only_in_some.is_empty() {
        let _ = writeln!(out, "{}.\n", cmp.only_in_some());
    }
    if warnings {
        out.extend(cmp.warnings.iter().map(|w| format!("**{}**\n\n", w.line())));
    }
    for note in &cmp.notes {
        let _ = writeln!(out, "Note: {note}.\n");
    }
    if cmp.columns.len() > 1 {
        let _ = writeln!(out, "_{} Threshold: {}%._", cmp.rule, cmp.threshold_pct);
    }
    out
}

/// The versions section in Markdown: the same facts as the text's, as
/// paragraphs and one list.
fn versions_paragraphs(cmp: &Comparison, versions: &VersionDiff) -> String {
    let mut out = String::new();
    let (listed, warned) = cmp.defaults_for_reading(versions);
    if !listed.is_empty() || !warned.is_empty() {
        let items: Vec<String> = listed
            .iter()
            .map(|d| {
                let values: Vec<String> = versions
                    .servers
                    .iter()
                    .zip(&d.values)
                    .map(|(s, v)| format!("{}: {v}", s.display()))
                    .collect();
                format!("`{}` ({})", d.name, escape_md(&values.join(", ")))
            })
            .chain(warned.iter().map(|n| format!("`{n}` (warned above)")))
            .collect();
        let _ = writeln!(
            out,
            "{} ({}): {}.\n",
            if versions.settings_recorded {
                "Defaults that changed between versions (set by no server or variant setting of the experiment)"
            } else {
                "Differ with the server version (defaults that changed, unless a `--set` the runs do not record set them)"
            },
            items.len(),
            items.join(", ")
        );
    }
    if !versions.redo.is_empty() {
        let _ = writeln!(
            out,
            "Redo log size: {}{}.\n",
            escape_md(&per_version(versions, &versions.redo)),
            if versions.redo_same {
                " (the same size, set by different variables)"
            } else {
                ""
            }
        );
    }
    if !versions.lacking.is_empty() {
        let _ = writeln!(out, "Settings only some versions have:\n");
        for l in &versions.lacking {
            let _ = writeln!(
                out,
                "- in {}, not in {} ({}): {}",
                escape_md(&l.have.join(", ")),
                escape_md(&l.lack.join(", ")),
                l.names.len(),
                named(&l.names, LACKING_SHOWN)
            );
        }
        out.push('\n');
    }
    if !versions.set_on_purpose.is_empty() {
        let _ = writeln!(
            out,
            "Set differently on purpose by the servers' own settings: {}.\n",
            versions.set_on_purpose.join(", ")
        );
    }
    out
}

/// The inside-the-server table: one line per figure, one column per compared column.
fn inside_table(cmp: &Comparison) -> Option<String> {
    let (header, rows) = cmp.plain_inside()?;
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::compare::tests::sample;
    use crate::format::Format;

    #[test]
    fn markdown_golden() {
        let md = sample().render(Format::Markdown);
        let expected = "\
> **WARNING**: server variables known to distort results differ: `performance_schema` (OFF vs ON), `sort_buffer_size` (262144 vs 4194304).

**oltp_point_select: tps (trx/s, higher is better) by threads; baseline: A**

| threads | A | B |
|---:|---:|---:|
| 1 | 100.0 (1.00) | 103.0 (1.03, ~+3.0% draw) |
| 4 | 400.0 (1.00) | 300.0 (0.75, -25.0% worse) |

_1 repetition: no spread (each cell is a single run's value; repeat runs to see the noise)._

Differ with the server version (defaults that changed, unless a `--set` the runs do not record set them) (3): `max_connections` (A: 151, B: 200), `performance_schema` (warned above), `sort_buffer_size` (warned above).

";
        assert!(md.starts_with(expected), "{md}");
    }
}
