//! Formats a [`Comparison`]: a text table for the terminal, Markdown to publish, CSV (one line
//! per cell) and JSON (the whole comparison, schema `dbperf.compare/1`) for machines.
//!
//! Text and Markdown print the WARNING block first, then the table, then the other differing
//! variables, between server versions what the versions explain (defaults that changed, the
//! redo log, settings only some versions have), the notes and the draw rule.

use std::fmt::Write;

use comfy_table::{presets, CellAlignment, Table};

use super::variables::{distortion, VariableValues, VersionDiff, VersionName, LACKING_SHOWN};
use super::{Cell, Comparison, Metric, Verdict};

/// Output format of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A table for the terminal.
    Text,
    /// The whole comparison as JSON (schema `dbperf.compare/1`).
    Json,
    /// One line per cell: threads (or query), column, n, median, min, max, diff_pct, verdict, runs.
    Csv,
    /// A Markdown table to paste into a report.
    Markdown,
}

/// Heading of the inside-the-server table.
const INSIDE_TITLE: &str =
    "Inside the server (dbperf analyze over each column's runs; telemetry of the measured phase):";

/// How many names are printed of a long list of variables (present in only some runs, or
/// differing along with a warned one).
const NAMES_SHOWN: usize = 5;

impl Comparison {
    /// The comparison in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Text => self.text(),
            Format::Json => {
                let mut s = serde_json::to_string_pretty(self).expect("a comparison serializes");
                s.push('\n');
                s
            }
            Format::Csv => self.csv(),
            Format::Markdown => self.markdown(),
        }
    }

    /// The main table as plain text cells: a header (`threads`, then the column labels) and
    /// one row per thread count, each cell `median [min..max, n=N] (+d% verdict)`.
    pub fn plain_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = std::iter::once(self.metric.row_header().to_string())
            .chain(self.columns.iter().map(|c| c.label.clone()))
            .collect();
        let rows = self
            .rows
            .iter()
            .map(|row| {
                std::iter::once(row.label.clone())
                    .chain(
                        row.cells
                            .iter()
                            .map(|c| c.as_ref().map_or("-".to_string(), |c| self.cell_text(c, true))),
                    )
                    .collect()
            })
            .collect();
        (header, rows)
    }

    /// The inside-the-server table as plain text cells (`None` when no run was analysed).
    pub fn plain_inside(&self) -> Option<(Vec<String>, Vec<Vec<String>>)> {
        if self.inside.is_empty() {
            return None;
        }
        let lines: Vec<Vec<(&str, String)>> = self.inside.iter().map(|c| c.lines()).collect();
        let header = std::iter::once(String::new())
            .chain(self.columns.iter().map(|c| c.label.clone()))
            .collect();
        // A figure only one server family has (sync flush and dirty pages: InnoDB; requested
        // checkpoints: PostgreSQL) is left out when no column measured it; and when every
        // column is PostgreSQL, the checkpoint row says what it measures there.
        let sampled = self.inside.iter().any(|c| c.with_telemetry > 0);
        let postgres = sampled
            && self
                .inside
                .iter()
                .all(|c| c.with_telemetry == 0 || c.checkpoints_requested.is_some());
        let rows = (0..lines[0].len())
            .filter(|&i| {
                let family_only = matches!(
                    lines[0][i].0,
                    "time in sync flush" | "dirty pages max" | "requested checkpoints"
                );
                !(sampled && family_only && lines.iter().all(|l| l[i].1 == "-"))
            })
            .map(|i| {
                let label = match lines[0][i].0 {
                    "checkpoint age max" if postgres => "checkpoint distance max (of max_wal_size)",
                    l => l,
                };
                std::iter::once(label.to_string())
                    .chain(lines.iter().map(|l| l[i].1.clone()))
                    .collect()
            })
            .collect();
        Some((header, rows))
    }

    /// The title line: workload, metric, unit, direction, and the baseline when there are
    /// columns to compare with it.
    pub fn title(&self) -> String {
        let better = if self.higher_is_better { "higher" } else { "lower" };
        let baseline = match self.columns.as_slice() {
            [first, _, ..] => format!("; baseline: {}", first.label),
            _ => String::new(),
        };
        format!(
            "{}: {} ({}, {better} is better) by {}{baseline}",
            self.workload,
            self.metric.name(),
            self.unit,
            self.metric.row_header(),
        )
    }

    /// Said once under the table when no cell has more than one sample: the cells are single
    /// values, with no range to judge the noise by.
    pub fn spread_note(&self) -> Option<&'static str> {
        let cells = || self.rows.iter().flat_map(|r| r.cells.iter().flatten());
        (cells().next().is_some() && cells().all(|c| c.n <= 1))
            .then_some("1 repetition: no spread (each cell is a single run's value; repeat runs to see the noise)")
    }

    fn value(&self, v: f64) -> String {
        match self.metric {
            Metric::Query(_) | Metric::Geomean | Metric::Queries => format!("{v:.3}"),
            Metric::P95 | Metric::P99 | Metric::TypeLatency { .. } => format!("{v:.2}"),
            _ => format!("{v:.1}"),
        }
    }

    fn cell_text(&self, cell: &Cell, markdown: bool) -> String {
        let mut s = self.value(cell.median);
        if cell.n > 1 {
            let _ = write!(s, " [{}..{}, n={}]", self.value(cell.min), self.value(cell.max), cell.n);
        }
        let Some(d) = cell.diff_pct else { return s };
        let (mark, word) = match cell.verdict {
            Verdict::Baseline => return s,
            Verdict::Draw => ("~", "draw"),
            Verdict::Better => ("", "better"),
            Verdict::Worse => ("", "worse"),
            Verdict::NoBaseline => ("", ""),
        };
        let diff = format!("{mark}{d:+.1}%");
        if markdown {
            format!("{s} ({diff} {word})")
        } else {
            // Fixed widths, so right-aligned columns line up on the value and on the verdict.
            format!("{s} {diff:>8} {word:<6}")
        }
    }

    fn text(&self) -> String {
        let mut out = String::new();
        let v = &self.variables;
        if !v.warnings.is_empty() {
            let _ = writeln!(
                out,
                "WARNING: server variables known to distort results differ between the compared runs:"
            );
            for w in &v.warnings {
                let _ = writeln!(
                    out,
                    "  {}: {} ({}){}",
                    w.name,
                    self.per_column(w),
                    distortion(&w.name).unwrap_or(""),
                    match (self.default_changed(&w.name), self.settings_recorded()) {
                        (true, true) => " [a default that changed between versions: nobody set it]",
                        (true, false) => " [differs with the version; the runs record no setting of it]",
                        (false, _) => "",
                    }
                );
            }
            let _ = writeln!(
                out,
                "  The comparison is not apples to apples: use the same settings, or make the difference the experiment's variant.{}\n",
                if v.warnings.iter().any(|w| self.default_changed(&w.name)) && self.settings_recorded() {
                    "\n  A default that changed between versions is made the same by setting it in every server's `settings`."
                } else {
                    ""
                }
            );
        }
        let _ = writeln!(out, "{}", self.title());
        let mut table = Table::new();
        table.load_style(presets::ASCII_FULL_CONDENSED);
        let mut header = vec![self.metric.row_header().to_string()];
        header.extend(self.columns.iter().map(|c| c.label.clone()));
        table.set_header(header);
        for row in &self.rows {
            let mut line = vec![row.label.clone()];
            line.extend(
                row.cells
                    .iter()
                    .map(|c| c.as_ref().map_or("-".to_string(), |c| self.cell_text(c, false))),
            );
            table.add_row(line);
        }
        for i in 0..=self.columns.len() {
            if let Some(col) = table.column_mut(i) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(out, "{table}");
        if let Some(note) = self.spread_note() {
            let _ = writeln!(out, "{note}");
        }
        if let Some(inside) = self.inside_table(false) {
            let _ = writeln!(out, "{INSIDE_TITLE}\n{inside}");
        }
        if !v.differing.is_empty() {
            let _ = writeln!(out, "Other server variables that differ ({}):", v.differing.len());
            for d in v.differing.iter().take(MAX_LISTED) {
                let _ = writeln!(out, "  {}: {}", d.name, shorten(&self.per_column(d)));
            }
            if v.differing.len() > MAX_LISTED {
                let _ = writeln!(
                    out,
                    "  ... and {} more: {} (--format json has every value)",
                    v.differing.len() - MAX_LISTED,
                    v.differing[MAX_LISTED..]
                        .iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        if !v.follow_warnings.is_empty() {
            let _ = writeln!(out, "{}", self.follow_warnings());
        }
        if let Some(versions) = &v.versions {
            out.push_str(&self.versions_text(versions));
        } else if !v.only_in_some.is_empty() {
            let _ = writeln!(out, "{}", self.only_in_some());
        }
        if !v.varied_on_purpose.is_empty() {
            let _ = writeln!(
                out,
                "Varied on purpose by the experiment: {}",
                v.varied_on_purpose.join(", ")
            );
        }
        out.push_str(&crate::warnings::render_text(&self.warnings));
        for note in &self.notes {
            let _ = writeln!(out, "Note: {note}");
        }
        if self.columns.len() > 1 {
            let _ = writeln!(out, "Rule: {} Threshold: {}%.", self.rule, self.threshold_pct);
        }
        out
    }

    /// The inside-the-server table: one line per figure, one column per compared column.
    fn inside_table(&self, markdown: bool) -> Option<String> {
        let (header, rows) = self.plain_inside()?;
        if markdown {
            let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
            for row in rows {
                let _ = writeln!(out, "| {} |", row.join(" | "));
            }
            return Some(out);
        }
        let mut table = Table::new();
        table.load_style(presets::ASCII_FULL_CONDENSED);
        table.set_header(header);
        for row in rows {
            table.add_row(row);
        }
        Some(table.to_string())
    }

    fn per_column(&self, v: &VariableValues) -> String {
        self.columns
            .iter()
            .zip(&v.values)
            .map(|(c, val)| format!("{val} ({})", c.label))
            .collect::<Vec<_>>()
            .join(" vs ")
    }

    /// Whether the runs record every setting they were started with (lab runs).
    fn settings_recorded(&self) -> bool {
        self.variables.versions.as_ref().is_some_and(|v| v.settings_recorded)
    }

    /// Whether `name` is a default that changed between the compared versions.
    fn default_changed(&self, name: &str) -> bool {
        self.variables
            .versions
            .as_ref()
            .is_some_and(|v| v.defaults_changed.iter().any(|d| d.name == name))
    }

    /// The versions section of the text output: defaults that changed, the redo log, settings
    /// only some versions have, those set differently on purpose.
    fn versions_text(&self, versions: &VersionDiff) -> String {
        let mut out = String::new();
        let servers: Vec<String> = versions
            .servers
            .iter()
            .map(|s| match s.name.contains(&s.version) {
                true => s.name.clone(),
                false => format!("{} ({})", s.name, s.version),
            })
            .collect();
        let _ = writeln!(
            out,
            "The runs are on {} server versions: {}.",
            servers.len(),
            servers.join(", ")
        );
        let (listed, warned) = self.defaults_for_reading(versions);
        if !listed.is_empty() || !warned.is_empty() {
            let n = listed.len() + warned.len();
            let _ = match versions.settings_recorded {
                true => writeln!(
                    out,
                    "Defaults that changed between versions ({n}; no server or variant setting of the experiment sets them):"
                ),
                false => writeln!(
                    out,
                    "Differ with the server version ({n}; defaults that changed, unless a `--set` the runs do not record set them):"
                ),
            };
            let (sized, plain): (Vec<&VariableValues>, Vec<&VariableValues>) =
                listed.iter().partition(|d| d.name.starts_with("performance_schema_"));
            for d in plain.iter().take(MAX_LISTED) {
                let _ = writeln!(out, "  {}: {}", d.name, shorten(&per_version(versions, &d.values)));
            }
            if plain.len() > MAX_LISTED {
                let _ = writeln!(
                    out,
                    "  ... and {} more: {} (--format json has every value)",
                    plain.len() - MAX_LISTED,
                    plain[MAX_LISTED..]
                        .iter()
                        .map(|d| d.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            if !sized.is_empty() {
                let names: Vec<String> = sized.iter().map(|d| d.name.clone()).collect();
                let _ = writeln!(
                    out,
                    "  Performance Schema sizes, autosized by each version: {}",
                    compact(&names)
                );
            }
            if !warned.is_empty() {
                let _ = writeln!(out, "  Warned above as well: {}", warned.join(", "));
            }
        }
        if !versions.redo.is_empty() {
            let _ = writeln!(
                out,
                "Redo log size: {}{}",
                per_version(versions, &versions.redo),
                if versions.redo_same {
                    " (the same size, set by different variables: innodb_log_file_size and innodb_log_files_in_group are not compared)"
                } else {
                    ""
                }
            );
        }
        if !versions.lacking.is_empty() {
            let total: usize = versions.lacking.iter().map(|l| l.names.len()).sum();
            let _ = writeln!(out, "Settings only some versions have ({total}):");
            for l in &versions.lacking {
                let _ = writeln!(
                    out,
                    "  in {}, not in {} ({}{}): {}",
                    l.have.join(", "),
                    l.lack.join(", "),
                    l.names.len(),
                    if l.set > 0 {
                        format!("; {} set by the experiment", l.set)
                    } else {
                        String::new()
                    },
                    named(&l.names, LACKING_SHOWN)
                );
            }
        }
        let covered: std::collections::BTreeSet<&str> = versions
            .lacking
            .iter()
            .flat_map(|l| l.names.iter().map(String::as_str))
            .collect();
        let rest: Vec<String> = self
            .variables
            .only_in_some
            .iter()
            .filter(|n| !covered.contains(n.as_str()))
            .cloned()
            .collect();
        if !rest.is_empty() {
            let _ = writeln!(
                out,
                "Server variables present in only some runs of one version: {}",
                compact(&rest)
            );
        }
        if !versions.set_on_purpose.is_empty() {
            let _ = writeln!(
                out,
                "Set differently on purpose by the servers' own settings: {}",
                versions.set_on_purpose.join(", ")
            );
        }
        out
    }

    /// The defaults that changed, in reading order (those known to distort first, then
    /// InnoDB's, then the rest), without the warned ones, whose names come second.
    fn defaults_for_reading<'a>(&self, versions: &'a VersionDiff) -> (Vec<&'a VariableValues>, Vec<String>) {
        let warned: Vec<String> = versions
            .defaults_changed
            .iter()
            .filter(|d| self.variables.warnings.iter().any(|w| w.name == d.name))
            .map(|d| d.name.clone())
            .collect();
        let mut listed: Vec<&VariableValues> = versions
            .defaults_changed
            .iter()
            .filter(|d| !warned.contains(&d.name))
            .collect();
        listed.sort_by_key(|d| (!d.name.starts_with("innodb_"), d.name.clone()));
        (listed, warned)
    }

    fn only_in_some(&self) -> String {
        format!(
            "Server variables present in only some of the runs (different versions): {}",
            compact(&self.variables.only_in_some)
        )
    }

    fn follow_warnings(&self) -> String {
        format!(
            "Server variables that differ along with the ones above: {}",
            compact(&self.variables.follow_warnings)
        )
    }

    fn markdown(&self) -> String {
        let mut out = String::new();
        let v = &self.variables;
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
        let _ = writeln!(out, "**{}**\n", self.title());
        let header: Vec<String> = std::iter::once(self.metric.row_header().to_string())
            .chain(self.columns.iter().map(|c| escape_md(&c.label)))
            .collect();
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---:|".repeat(header.len()));
        for row in &self.rows {
            let cells: Vec<String> = std::iter::once(row.label.clone())
                .chain(
                    row.cells
                        .iter()
                        .map(|c| c.as_ref().map_or("-".to_string(), |c| self.cell_text(c, true))),
                )
                .collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out.push('\n');
        if let Some(note) = self.spread_note() {
            let _ = writeln!(out, "_{note}._\n");
        }
        if let Some(inside) = self.inside_table(true) {
            let _ = writeln!(out, "_{INSIDE_TITLE}_\n\n{inside}");
        }
        if !v.differing.is_empty() {
            let names: Vec<&str> = v.differing.iter().map(|d| d.name.as_str()).collect();
            let _ = writeln!(out, "Other server variables that differ: {}.\n", names.join(", "));
        }
        if !v.follow_warnings.is_empty() {
            let _ = writeln!(out, "{}.\n", self.follow_warnings());
        }
        if let Some(versions) = &v.versions {
            out.push_str(&self.versions_markdown(versions));
        } else if !v.only_in_some.is_empty() {
            let _ = writeln!(out, "{}.\n", self.only_in_some());
        }
        out.extend(self.warnings.iter().map(|w| format!("**{}**\n\n", w.line())));
        for note in &self.notes {
            let _ = writeln!(out, "Note: {note}.\n");
        }
        if self.columns.len() > 1 {
            let _ = writeln!(out, "_{} Threshold: {}%._", self.rule, self.threshold_pct);
        }
        out
    }

    /// The versions section in Markdown: the same facts as [`Self::versions_text`], as
    /// paragraphs and one list.
    fn versions_markdown(&self, versions: &VersionDiff) -> String {
        let mut out = String::new();
        let (listed, warned) = self.defaults_for_reading(versions);
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

    /// A table of the defaults that changed between versions: the header (`variable`, then the
    /// versions) and one row per variable, warned ones first, then in reading order; `None`
    /// when there are none.
    pub fn plain_defaults_changed(&self) -> Option<(Vec<String>, Vec<Vec<String>>)> {
        let versions = self.variables.versions.as_ref()?;
        let (listed, warned) = self.defaults_for_reading(versions);
        let warned = versions.defaults_changed.iter().filter(|d| warned.contains(&d.name));
        let rows: Vec<Vec<String>> = warned
            .chain(listed)
            .map(|d| {
                std::iter::once(d.name.clone())
                    .chain(d.values.iter().cloned())
                    .collect()
            })
            .collect();
        let header = std::iter::once("variable".to_string())
            .chain(versions.servers.iter().map(VersionName::display))
            .collect();
        (!rows.is_empty()).then_some((header, rows))
    }

    /// Rows for a table of the settings only some versions have: have, lack, how many, names.
    pub fn plain_lacking(&self) -> Vec<Vec<String>> {
        self.variables.versions.as_ref().map_or_else(Vec::new, |v| {
            v.lacking
                .iter()
                .map(|l| {
                    vec![
                        l.have.join(", "),
                        l.lack.join(", "),
                        l.names.len().to_string(),
                        l.names.join(", "),
                    ]
                })
                .collect()
        })
    }

    fn csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let header = [
            self.metric.row_header(),
            "column",
            "n",
            "median",
            "min",
            "max",
            "diff_pct",
            "verdict",
            "runs",
        ];
        let write = |w: &mut csv::Writer<Vec<u8>>| -> csv::Result<()> {
            w.write_record(header)?;
            for row in &self.rows {
                for (col, cell) in self.columns.iter().zip(&row.cells) {
                    let Some(c) = cell else { continue };
                    let verdict = serde_json::to_value(c.verdict).expect("a verdict serializes");
                    w.write_record([
                        row.label.clone(),
                        col.label.clone(),
                        c.n.to_string(),
                        c.median.to_string(),
                        c.min.to_string(),
                        c.max.to_string(),
                        c.diff_pct.map_or(String::new(), |d| format!("{d:.3}")),
                        verdict.as_str().unwrap_or_default().to_string(),
                        c.runs.join(" "),
                    ])?;
                }
            }
            w.flush()?;
            Ok(())
        };
        write(&mut w).expect("writing CSV to memory cannot fail");
        String::from_utf8(w.into_inner().expect("flushed")).expect("CSV of UTF-8 strings is UTF-8")
    }
}

/// `value (server) vs value (server)`, one per version.
fn per_version(versions: &VersionDiff, values: &[String]) -> String {
    versions
        .servers
        .iter()
        .zip(values)
        .map(|(s, v)| format!("{v} ({})", s.display()))
        .collect::<Vec<_>>()
        .join(" vs ")
}

/// `N (a, b, c, d, e, ...)`: a count and the first few names.
fn compact(list: &[String]) -> String {
    let shown: Vec<&str> = list.iter().take(NAMES_SHOWN).map(String::as_str).collect();
    let more = if list.len() > shown.len() { ", ..." } else { "" };
    format!("{} ({}{more})", list.len(), shown.join(", "))
}

/// The first `shown` names, then `and N more`.
fn named(list: &[String], shown: usize) -> String {
    let first = list
        .iter()
        .take(shown)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if list.len() > shown {
        format!("{first} and {} more", list.len() - shown)
    } else {
        first
    }
}

fn escape_md(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Variables listed with their values in text output; the rest are named only.
const MAX_LISTED: usize = 15;
/// Longest value line in text output (optimizer_switch spans hundreds of characters).
const MAX_LINE: usize = 160;

fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX_LINE - 3).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::super::{compare_runs, CompareOptions, InsideColumn};
    use super::*;

    fn inside_column(pg: bool) -> InsideColumn {
        InsideColumn {
            runs: 1,
            analysed: 1,
            with_telemetry: 1,
            stalls: 0,
            tps_cv_pct: Some(4.0),
            checkpoint_max_pct: Some(60.0),
            sync_flush_pct: (!pg).then_some(0.0),
            checkpoints_requested: pg.then_some(3.0),
            dirty_max_pct: (!pg).then_some(5.0),
            dirty_limit_pct: None,
            redo_needed_bytes: None,
            top_wait: Some(if pg { "IO/WALSync" } else { "mutex/innodb/log_sys_mutex" }.into()),
            client_cpu_max_pct: Some(50.0),
            client_bound_runs: 0,
        }
    }

    #[test]
    fn inside_rows_a_family_does_not_measure_are_left_out() {
        let labels =
            |c: &Comparison| -> Vec<String> { c.plain_inside().unwrap().1.into_iter().map(|r| r[0].clone()).collect() };
        let mut c = sample();
        c.inside = vec![inside_column(true), inside_column(true)];
        let pg = labels(&c);
        assert!(
            pg.contains(&"checkpoint distance max (of max_wal_size)".to_string()),
            "{pg:?}"
        );
        assert!(pg.contains(&"requested checkpoints".to_string()), "{pg:?}");
        assert!(
            !pg.iter().any(|l| l == "time in sync flush" || l == "dirty pages max"),
            "{pg:?}"
        );
        c.inside = vec![inside_column(false), inside_column(false)];
        let my = labels(&c);
        assert!(my.contains(&"checkpoint age max".to_string()) && my.contains(&"time in sync flush".to_string()));
        assert!(!my.contains(&"requested checkpoints".to_string()), "{my:?}");
        // Mixed families keep every row, with dashes where a column has no such figure.
        c.inside = vec![inside_column(false), inside_column(true)];
        assert_eq!(labels(&c).len(), c.inside[0].lines().len());
    }

    fn sample() -> Comparison {
        let vars = |sort: &str, ps: &str, conns: &str| {
            Some(
                [
                    ("sort_buffer_size", sort),
                    ("performance_schema", ps),
                    ("max_connections", conns),
                    ("pid_file", sort),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            )
        };
        let mut runs = vec![
            run("a", 1, 100.0),
            run("a", 4, 400.0),
            run("b", 1, 103.0),
            run("b", 4, 300.0),
        ];
        for (i, r) in runs.iter_mut().enumerate() {
            r.variables = if i < 2 {
                vars("262144", "OFF", "151")
            } else {
                vars("4194304", "ON", "200")
            };
        }
        // Two runs per column: "a" at 1 and 4 threads. Give them distinct ids and the column
        // by server label so repetitions show.
        runs[0].run_id = "a-t1".into();
        runs[1].run_id = "a-t4".into();
        runs[2].run_id = "b-t1".into();
        runs[3].run_id = "b-t4".into();
        for (r, s) in runs.iter_mut().zip(["A", "A", "B", "B"]) {
            r.server_version = Some(s.into());
        }
        compare_runs(&runs, &CompareOptions::default()).unwrap()
    }

    #[test]
    fn text_golden() {
        let expected = "\
WARNING: server variables known to distort results differ between the compared runs:
  performance_schema: OFF (A) vs ON (B) (instrumentation costs CPU on every statement) [differs with the version; the runs record no setting of it]
  sort_buffer_size: 262144 (A) vs 4194304 (B) (allocated per sort; large values slow every ORDER BY) [differs with the version; the runs record no setting of it]
  The comparison is not apples to apples: use the same settings, or make the difference the experiment's variant.

oltp_point_select: tps (trx/s, higher is better) by threads; baseline: A
+---------+-------+-----------------------+
| threads |     A |                     B |
+=========================================+
|       1 | 100.0 | 103.0   ~+3.0% draw   |
|       4 | 400.0 | 300.0   -25.0% worse  |
+---------+-------+-----------------------+
";
        let text = sample().render(Format::Text);
        assert!(text.starts_with(expected), "{text}");
        // A and B are two versions, and plain runs record no settings: the variables that
        // differ are told as differing with the version.
        assert!(
            text.contains(
                "The runs are on 2 server versions: A, B.\nDiffer with the server version (3; defaults that changed, unless a `--set` the runs do not record set them):\n  max_connections: 151 (A) vs 200 (B)\n  Warned above as well: performance_schema, sort_buffer_size\n"
            ),
            "{text}"
        );
        assert!(!text.contains("Other server variables that differ"), "{text}");
        assert!(text.contains("Rule: A cell is the median") && text.ends_with("Threshold: 5%.\n"));
        assert!(!text.contains("pid_file"));
    }

    #[test]
    fn markdown_golden() {
        let md = sample().render(Format::Markdown);
        let expected = "\
> **WARNING**: server variables known to distort results differ: `performance_schema` (OFF vs ON), `sort_buffer_size` (262144 vs 4194304).

**oltp_point_select: tps (trx/s, higher is better) by threads; baseline: A**

| threads | A | B |
|---:|---:|---:|
| 1 | 100.0 | 103.0 (~+3.0% draw) |
| 4 | 400.0 | 300.0 (-25.0% worse) |

_1 repetition: no spread (each cell is a single run's value; repeat runs to see the noise)._

Differ with the server version (defaults that changed, unless a `--set` the runs do not record set them) (3): `max_connections` (A: 151, B: 200), `performance_schema` (warned above), `sort_buffer_size` (warned above).

";
        assert!(md.starts_with(expected), "{md}");
    }

    #[test]
    fn csv_golden() {
        assert_eq!(
            sample().render(Format::Csv),
            "\
threads,column,n,median,min,max,diff_pct,verdict,runs
1,A,1,100,100,100,,baseline,a-t1
1,B,1,103,103,103,3.000,draw,b-t1
4,A,1,400,400,400,,baseline,a-t4
4,B,1,300,300,300,-25.000,worse,b-t4
"
        );
    }

    #[test]
    fn json_has_the_schema_and_the_cells() {
        let v: serde_json::Value = serde_json::from_str(&sample().render(Format::Json)).unwrap();
        assert_eq!(v["schema"], "dbperf.compare/1");
        assert_eq!(v["by"], "server");
        assert_eq!(v["metric"], "tps");
        assert_eq!(v["rows"][1]["cells"][1]["verdict"], "worse");
        assert_eq!(v["rows"][1]["cells"][1]["diff_pct"], -25.0);
        assert_eq!(v["variables"]["warnings"][0]["name"], "performance_schema");
        assert_eq!(v["columns"][0]["runs"], serde_json::json!(["a-t1", "a-t4"]));
    }

    #[test]
    fn one_column_names_no_baseline_and_single_runs_say_there_is_no_spread() {
        let c = compare_runs(&[run("a", 1, 100.0), run("b", 2, 180.0)], &CompareOptions::default()).unwrap();
        assert_eq!(c.columns.len(), 1);
        let text = c.render(Format::Text);
        assert!(!text.contains("baseline"), "{text}");
        assert!(!text.contains(".."), "no range from one run: {text}");
        assert_eq!(text.matches("1 repetition: no spread").count(), 1, "{text}");
        // Two columns: the first is the baseline.
        assert!(sample().title().ends_with("; baseline: A"));
        let mut reps = sample();
        reps.rows[0].cells[1].as_mut().unwrap().n = 3;
        assert_eq!(reps.spread_note(), None);
    }

    #[test]
    fn repetitions_show_their_range() {
        let mut c = sample();
        let cell = c.rows[0].cells[1].as_mut().unwrap();
        (cell.min, cell.max, cell.n) = (101.0, 105.0, 3);
        assert_eq!(
            c.cell_text(c.rows[0].cells[1].as_ref().unwrap(), true),
            "103.0 [101.0..105.0, n=3] (~+3.0% draw)"
        );
    }
}
