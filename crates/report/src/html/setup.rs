//! The setup of the HTML reports ([`crate::setup::Setup`]): a one-line caption over the
//! results ([`caption`]), so the first result is on the first screen and printed page, and
//! after them the block ([`block`]): a table with one column per compared column, where a fact
//! the columns share spans them all, so what differs stands out.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use super::page::{escape, Page};
use super::ReportError;
use crate::compare::{compare_runs, CompareOptions, Metric, RunInfo, DEFAULT_THRESHOLD_PCT};
use crate::setup::Setup;
use dbperf_results::{Manifest, RunDir};

/// The setup as an HTML table (cells escaped).
pub fn setup_html(setup: &Setup) -> String {
    let n = setup.columns.len();
    let mut out = String::from("<table class=\"setup\">\n");
    if n > 1 {
        out.push_str("<tr><th></th>");
        for c in &setup.columns {
            let _ = write!(out, "<th>{}</th>", escape(c));
        }
        out.push_str("</tr>\n");
    }
    for f in &setup.fields {
        let _ = write!(out, "<tr><td>{}</td>", escape(&f.name));
        match &f.value {
            Some(v) if n > 1 => {
                let _ = write!(
                    out,
                    "<td colspan=\"{n}\" style=\"text-align:center\">{}</td>",
                    escape(v)
                );
            }
            Some(v) => {
                let _ = write!(out, "<td style=\"text-align:left\">{}</td>", escape(v));
            }
            None => {
                for i in 0..n {
                    let _ = write!(out, "<td><b>{}</b></td>", escape(f.value_of(i)));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// The setup in one line, over the results it was measured with.
pub fn caption(page: &mut Page, setup: &Setup) {
    page.paragraph(
        &format!("Setup: {} (in full below the results).", setup.caption()),
        Some("note"),
    );
}

/// The setup block: its heading line and table.
pub fn block(page: &mut Page, setup: &Setup) {
    let bold = match setup.fields.iter().any(|f| f.differs()) {
        true => "; what differs between the columns is in bold",
        false => "",
    };
    let heading = setup.heading();
    page.paragraph(
        &format!("{}, from the manifests{bold}:", heading.trim_end_matches(':')),
        None,
    );
    page.raw(&setup_html(setup));
}

/// The setup of a workload's runs, with the columns of its comparison tables; the manifests
/// are read from `run_dirs` (those of other runs are skipped).
pub fn of_dirs(infos: &[RunInfo], run_dirs: &[PathBuf]) -> Result<Option<Setup>, ReportError> {
    let mut manifests = Vec::new();
    for dir in run_dirs {
        let d = RunDir::open(dir)?;
        if infos.iter().any(|i| i.run_id == d.run_id()) {
            manifests.push((d.run_id().to_string(), d.read_json::<Manifest>("manifest.json")?));
        }
    }
    of_manifests(infos, manifests.iter().map(|(id, m)| (id.as_str(), m)))
}

/// The setup of a workload's runs, with the columns of its comparison tables, from the runs'
/// manifests `(run id, manifest)`; `None` without runs.
pub fn of_manifests<'a>(
    infos: &[RunInfo],
    manifests: impl IntoIterator<Item = (&'a str, &'a Manifest)>,
) -> Result<Option<Setup>, ReportError> {
    let Some(first) = infos.first() else { return Ok(None) };
    let metric = Metric::own(&first.workload, infos)
        .into_iter()
        .next()
        .unwrap_or(Metric::Tps);
    let c = compare_runs(
        infos,
        &CompareOptions {
            by: None,
            metric,
            threshold_pct: DEFAULT_THRESHOLD_PCT,
            baseline: None,
        },
    )?;
    let manifests: BTreeMap<String, Manifest> = manifests
        .into_iter()
        .map(|(id, m)| (id.to_string(), m.clone()))
        .collect();
    Ok(Some(Setup::of_comparison(&c, &manifests)))
}
