//! What every output of a [`Comparison`] says, in the words the formats share: the title,
//! the cells (`median [min..max, n=N] (+d% verdict)`), the note on single runs, the
//! inside-the-server rows, the variables per column and per version in reading order. The
//! formats themselves are [`crate::export`]'s, one file each; the HTML experiment page takes
//! its plain tables from here too.

use std::fmt::Write;

use super::variables::{VariableValues, VersionDiff, VersionName};
use super::{Cell, Comparison, Metric, Verdict};

/// Heading of the inside-the-server table.
pub(crate) const INSIDE_TITLE: &str =
    "Inside the server (dbperf analyze over each column's runs; telemetry of the measured phase):";

/// How many names are printed of a long list of variables (present in only some runs, or
/// differing along with a warned one).
const NAMES_SHOWN: usize = 5;

impl Comparison {
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
                    "checkpoint age max (% of max)" if postgres => "checkpoint distance max (of max_wal_size)",
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

    /// A figure with the decimals its metric is read at.
    pub(crate) fn value(&self, v: f64) -> String {
        match self.metric {
            Metric::Query(_) | Metric::Geomean | Metric::Queries => format!("{v:.3}"),
            Metric::P95 | Metric::P99 | Metric::TypeLatency { .. } => format!("{v:.2}"),
            _ => format!("{v:.1}"),
        }
    }

    /// A cell: `median [min..max, n=N]` and the difference with its verdict; in Markdown in
    /// parentheses, in text at fixed widths.
    pub(crate) fn cell_text(&self, cell: &Cell, markdown: bool) -> String {
        let mut s = self.value(cell.median);
        if cell.n > 1 {
            let _ = write!(s, " [{}..{}, n={}]", self.value(cell.min), self.value(cell.max), cell.n);
        }
        let rel = cell.relative.map(|r| match r.spread {
            Some(pm) => format!("{:.2} ± {pm:.2}", r.ratio),
            None => format!("{:.2}", r.ratio),
        });
        if cell.verdict == Verdict::Baseline {
            return match rel {
                Some(rel) if markdown => format!("{s} ({rel})"),
                Some(rel) => format!("{s} {rel:>20}"),
                None => s,
            };
        }
        let Some(d) = cell.diff_pct else { return s };
        let (mark, word) = match cell.verdict {
            Verdict::Baseline => unreachable!("returned above"),
            Verdict::Draw => ("~", "draw"),
            Verdict::Better => ("", "better"),
            Verdict::Worse => ("", "worse"),
            Verdict::NoBaseline => ("", ""),
        };
        let diff = format!("{mark}{d:+.1}%");
        let rel = rel.map_or(String::new(), |r| format!("{r}, "));
        if markdown {
            format!("{s} ({rel}{diff} {word})")
        } else {
            // Fixed widths, so right-aligned columns line up on the value and on the verdict.
            format!("{s} {:>20} {word:<6}", format!("{rel}{diff}"))
        }
    }

    /// `value (column) vs value (column)`.
    pub(crate) fn per_column(&self, v: &VariableValues) -> String {
        self.columns
            .iter()
            .zip(&v.values)
            .map(|(c, val)| format!("{val} ({})", c.label))
            .collect::<Vec<_>>()
            .join(" vs ")
    }

    /// Whether the runs record every setting they were started with (lab runs).
    pub(crate) fn settings_recorded(&self) -> bool {
        self.variables.versions.as_ref().is_some_and(|v| v.settings_recorded)
    }

    /// Whether `name` is a default that changed between the compared versions.
    pub(crate) fn default_changed(&self, name: &str) -> bool {
        self.variables
            .versions
            .as_ref()
            .is_some_and(|v| v.defaults_changed.iter().any(|d| d.name == name))
    }

    /// The defaults that changed, in reading order (those known to distort first, then
    /// InnoDB's, then the rest), without the warned ones, whose names come second.
    pub(crate) fn defaults_for_reading<'a>(&self, versions: &'a VersionDiff) -> (Vec<&'a VariableValues>, Vec<String>) {
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

    /// The variables only some runs have (different versions), counted and the first named.
    pub(crate) fn only_in_some(&self) -> String {
        format!(
            "Server variables present in only some of the runs (different versions): {}",
            compact(&self.variables.only_in_some)
        )
    }

    /// The variables that differ along with a warned one, counted and the first named.
    pub(crate) fn follow_warnings(&self) -> String {
        format!(
            "Server variables that differ along with the ones above: {}",
            compact(&self.variables.follow_warnings)
        )
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
}

/// `value (server) vs value (server)`, one per version.
pub(crate) fn per_version(versions: &VersionDiff, values: &[String]) -> String {
    versions
        .servers
        .iter()
        .zip(values)
        .map(|(s, v)| format!("{v} ({})", s.display()))
        .collect::<Vec<_>>()
        .join(" vs ")
}

/// `N (a, b, c, d, e, ...)`: a count and the first few names.
pub(crate) fn compact(list: &[String]) -> String {
    let shown: Vec<&str> = list.iter().take(NAMES_SHOWN).map(String::as_str).collect();
    let more = if list.len() > shown.len() { ", ..." } else { "" };
    format!("{} ({}{more})", list.len(), shown.join(", "))
}

/// The first `shown` names, then `and N more`.
pub(crate) fn named(list: &[String], shown: usize) -> String {
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

/// `|` escaped for a Markdown table cell.
pub(crate) fn escape_md(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Variables listed with their values in text output; the rest are named only.
pub(crate) const MAX_LISTED: usize = 15;
/// Longest value line in text output (optimizer_switch spans hundreds of characters).
const MAX_LINE: usize = 160;

/// `line` cut at [`MAX_LINE`] characters, with `...`.
pub(crate) fn shorten(line: &str) -> String {
    if line.chars().count() <= MAX_LINE {
        return line.to_owned();
    }
    let cut: String = line.chars().take(MAX_LINE - 3).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{run, sample};
    use super::super::{compare_runs, CompareOptions, InsideColumn};
    use super::*;
    use crate::format::Format;

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
        assert!(
            my.contains(&"checkpoint age max (% of max)".to_string()) && my.contains(&"time in sync flush".to_string())
        );
        assert!(!my.contains(&"requested checkpoints".to_string()), "{my:?}");
        // Mixed families keep every row, with dashes where a column has no such figure.
        c.inside = vec![inside_column(false), inside_column(true)];
        assert_eq!(labels(&c).len(), c.inside[0].lines().len());
    }

    #[test]
    fn one_column_names_no_baseline_and_single_runs_say_there_is_no_spread() {
        let c = compare_runs(&[run("a", 1, 100.0), run("b", 2, 180.0)], &CompareOptions::default()).unwrap();
        assert_eq!(c.columns.len(), 1);
        let text = c.render(Format::Text);
        assert!(!text.contains("baseline"), "{text}");
        assert!(!text.contains(".."), "no range from one run: {text}");
        assert!(!text.contains("1.00"), "nothing to be relative to: {text}");
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
            "103.0 [101.0..105.0, n=3] (1.03, ~+3.0% draw)"
        );
        // Computed with the ranges: the ratio carries both cells' spread.
        let cell = c.rows[0].cells[1].as_mut().unwrap();
        cell.relative = Some(crate::compare::Relative {
            ratio: 0.93,
            spread: Some(0.02),
        });
        assert_eq!(
            c.cell_text(c.rows[0].cells[1].as_ref().unwrap(), true),
            "103.0 [101.0..105.0, n=3] (0.93 ± 0.02, ~+3.0% draw)"
        );
        assert_eq!(c.cell_text(c.rows[0].cells[0].as_ref().unwrap(), true), "100.0 (1.00)");
    }
}
