//! Text for the terminal: the setup block (a heading, one indented line per fact), each
//! comparison (the WARNING block first, then the table, the inside-the-server table, the other
//! differing variables, what the server versions explain, the warnings, the notes and the draw
//! rule), a workload heading between the workloads of a report, each point's explanation in one
//! table, the TPC-H tables of an experiment, the points not finished; a run's setup, summary,
//! analysis and explanation; `dbperf analyze`'s stalls and verdict.

use std::fmt::Write;

use comfy_table::{presets, CellAlignment, Table};

use super::{Exporter, Unsupported};
use crate::analysis::explain::TABLE_HEADER;
use crate::compare::variables::{distortion, VariableValues, VersionDiff, LACKING_SHOWN};
use crate::compare::view::{compact, named, per_version, shorten, INSIDE_TITLE, MAX_LISTED};
use crate::compare::Comparison;
use crate::document::{AnalysisReport, RunReport, RunsReport};
use crate::final_text;
use crate::setup::Setup;

/// Text for the terminal.
pub struct Text;

impl Exporter for Text {
    fn comparison(&self, c: &Comparison, setup: Option<&Setup>, first: bool) -> String {
        match setup {
            Some(s) if first => format!("{}\n{}", setup_block(s), comparison(c, true)),
            _ => comparison(c, first),
        }
    }

    fn runs(&self, r: &RunsReport) -> String {
        let mut out = r.queries_not_finished.clone().unwrap_or_default();
        for w in &r.workloads {
            if r.workloads.len() > 1 {
                let _ = writeln!(out, "## {}\n", w.workload);
            }
            for (i, (c, setup)) in w.tables.iter().enumerate() {
                out.push_str(&self.comparison(c, Some(setup), i == 0));
                out.push('\n');
            }
            out.push_str(&explanations(&w.explanations));
            for block in &w.across {
                let _ = writeln!(out, "{block}");
            }
        }
        if let Some(t) = &r.tpch_points {
            let _ = writeln!(out, "{}", setup_block(&t.setup));
            out.push_str(&t.tables);
        }
        if r.unfinished > 0 {
            let _ = writeln!(
                out,
                "{} point(s) have no finished run yet (rerun `dbperf lab run` to finish them).",
                r.unfinished
            );
        }
        out
    }

    fn run(&self, r: &RunReport) -> String {
        let mut out = format!("{}\n", setup_block(&r.setup));
        match &r.summary {
            Some(s) => out.push_str(&final_text(s, None)),
            None => out.push_str("No summary.json: the run did not finish.\n"),
        }
        if let Some(a) = &r.analysis {
            let _ = write!(out, "\n{}", a.render_text());
        }
        if let Some(e) = &r.explanation {
            let _ = write!(out, "\n{}", e.render_text());
        }
        out
    }

    fn analysis(&self, a: &AnalysisReport) -> Result<String, Unsupported> {
        let mut out = a
            .setup
            .as_ref()
            .map_or(String::new(), |s| format!("{}\n", setup_block(s)));
        out.push_str(&a.analysis.render_text());
        if let Some(e) = &a.explanation {
            let _ = write!(out, "\n{}", e.render_text());
        }
        Ok(out)
    }
}

/// The setup block: a heading, then one indented line per fact.
pub fn setup_block(s: &Setup) -> String {
    let width = s.fields.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let mut out = format!("{}\n", s.heading());
    for f in &s.fields {
        let _ = writeln!(out, "  {:<width$}  {}", f.name, s.line(f));
    }
    out
}

/// Each point's explanation in one table (nothing when no point could be explained).
fn explanations(rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let (rows, reasons) = crate::format::footnote_not_available(rows);
    let mut table = Table::new();
    table.load_style(presets::ASCII_FULL_CONDENSED);
    table.set_header(TABLE_HEADER.to_vec());
    for row in rows {
        table.add_row(row);
    }
    let notes: String = reasons
        .iter()
        .enumerate()
        .map(|(i, why)| format!("  [{}] n/a: {why}\n", i + 1))
        .collect();
    format!(
        "Each point's explanation (second half of the measured phase; `dbperf analyze RUN --last ...` for another window):\n{table}\n{notes}\n"
    )
}

/// A comparison; the runs' warnings only when `warnings` (the first table of a workload).
fn comparison(cmp: &Comparison, warnings: bool) -> String {
    let mut out = String::new();
    let v = &cmp.variables;
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
                cmp.per_column(w),
                distortion(&w.name).unwrap_or(""),
                match (cmp.default_changed(&w.name), cmp.settings_recorded()) {
                    (true, true) => " [a default that changed between versions: nobody set it]",
                    (true, false) => " [differs with the version; the runs record no setting of it]",
                    (false, _) => "",
                }
            );
        }
        let _ = writeln!(
            out,
            "  The comparison is not apples to apples: use the same settings, or make the difference the experiment's variant.{}\n",
            if v.warnings.iter().any(|w| cmp.default_changed(&w.name)) && cmp.settings_recorded() {
                "\n  A default that changed between versions is made the same by setting it in every server's `settings`."
            } else {
                ""
            }
        );
    }
    let _ = writeln!(out, "{}", cmp.title());
    let mut table = Table::new();
    table.load_style(presets::ASCII_FULL_CONDENSED);
    let mut header = vec![cmp.metric.row_header().to_string()];
    header.extend(cmp.columns.iter().map(|c| c.label.clone()));
    table.set_header(header);
    for row in &cmp.rows {
        let mut line = vec![row.label.clone()];
        line.extend(
            row.cells
                .iter()
                .map(|c| c.as_ref().map_or("-".to_string(), |c| cmp.cell_text(c, false))),
        );
        table.add_row(line);
    }
    for i in 0..=cmp.columns.len() {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(out, "{table}");
    if let Some(note) = cmp.spread_note() {
        let _ = writeln!(out, "{note}");
    }
    if let Some(inside) = inside_table(cmp) {
        let _ = writeln!(out, "{INSIDE_TITLE}\n{inside}");
    }
    if !v.differing.is_empty() {
        let _ = writeln!(out, "Other server variables that differ ({}):", v.differing.len());
        for d in v.differing.iter().take(MAX_LISTED) {
            let _ = writeln!(out, "  {}: {}", d.name, shorten(&cmp.per_column(d)));
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
        let _ = writeln!(out, "{}", cmp.follow_warnings());
    }
    if let Some(versions) = &v.versions {
        out.push_str(&versions_text(cmp, versions));
    } else if !v.only_in_some.is_empty() {
        let _ = writeln!(out, "{}", cmp.only_in_some());
    }
    if !v.varied_on_purpose.is_empty() {
        let _ = writeln!(
            out,
            "Varied on purpose by the experiment: {}",
            v.varied_on_purpose.join(", ")
        );
    }
    if warnings {
        out.push_str(&crate::warnings::render_text(&cmp.warnings));
    }
    for note in &cmp.notes {
        let _ = writeln!(out, "Note: {note}");
    }
    if cmp.columns.len() > 1 {
        let _ = writeln!(out, "Rule: {} Threshold: {}%.", cmp.rule, cmp.threshold_pct);
    }
    out
}

/// The inside-the-server table: one line per figure, one column per compared column.
fn inside_table(cmp: &Comparison) -> Option<String> {
    let (header, rows) = cmp.plain_inside()?;
    let mut table = Table::new();
    table.load_style(presets::ASCII_FULL_CONDENSED);
    table.set_header(header);
    for row in rows {
        table.add_row(row);
    }
    Some(table.to_string())
}

/// The versions section of the text output: defaults that changed, the redo log, settings
/// only some versions have, those set differently on purpose.
fn versions_text(cmp: &Comparison, versions: &VersionDiff) -> String {
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
    let (listed, warned) = cmp.defaults_for_reading(versions);
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
    let rest: Vec<String> = cmp
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

#[cfg(test)]
mod tests {
    use crate::compare::tests::sample;
    use crate::format::Format;

    #[test]
    fn text_golden() {
        let expected = "\
WARNING: server variables known to distort results differ between the compared runs:
  performance_schema: OFF (A) vs ON (B) (instrumentation costs CPU on every statement) [differs with the version; the runs record no setting of it]
  sort_buffer_size: 262144 (A) vs 4194304 (B) (allocated per sort; large values slow every ORDER BY) [differs with the version; the runs record no setting of it]
  The comparison is not apples to apples: use the same settings, or make the difference the experiment's variant.

oltp_point_select: tps (trx/s, higher is better) by threads; baseline: A
+---------+----------------------------+-----------------------------------+
| threads |                          A |                                 B |
+==========================================================================+
|       1 | 100.0                 1.00 | 103.0         1.03, ~+3.0% draw   |
|       4 | 400.0                 1.00 | 300.0         0.75, -25.0% worse  |
+---------+----------------------------+-----------------------------------+
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
}
