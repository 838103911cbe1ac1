//! The HTML report of TPC-H power runs: the facts of each run, the per-query table of
//! `dbperf tpch compare`, the per-query bars (seconds for one run; for several, each query's
//! median normalised to the first run with min/max whiskers, draws under the threshold
//! shaded, timeouts marked `>T`), and each query's plan.

use serde_json::Value;

use super::bars::{Bar, BarChart, BarSeries};
use super::page::{escape, Page};
use super::ReportError;
use crate::tpch::{table, Column};
use dbperf_results::tpch::{PowerReport, QuerySummary};

/// Relative differences under this are draws (the published studies' 5%).
pub const DRAW_THRESHOLD: f64 = dbperf_core::stats::DEFAULT_THRESHOLD_PCT / 100.0;

/// A label for a run: its server version and run id.
fn label(run_id: &str, r: &PowerReport) -> String {
    format!("{} {run_id}", r.server_version)
}

fn timeout_text(r: &PowerReport) -> String {
    r.timeout_seconds.map_or("timed out".to_string(), |t| format!(">{t}s"))
}

/// The per-query chart: seconds for one run, relative to the first run for several.
pub fn query_bars(runs: &[(String, PowerReport)]) -> BarChart {
    let categories: Vec<String> = (1..=22).map(|q| format!("Q{q}")).collect();
    let find = |r: &PowerReport, q: u8| -> Option<QuerySummary> { r.queries.iter().find(|s| s.query == q).cloned() };
    let Some((base_id, base)) = runs.first() else {
        return BarChart {
            title: "TPC-H queries".into(),
            y_label: String::new(),
            categories,
            series: Vec::new(),
            reference: None,
            band: None,
            zoom: None,
        };
    };
    let relative = runs.len() > 1;
    let series = runs
        .iter()
        .map(|(id, r)| BarSeries {
            name: label(id, r),
            bars: (1..=22u8)
                .map(|q| {
                    let s = find(r, q)?;
                    let scale = if relative { find(base, q)?.median? } else { 1.0 };
                    match (s.median, s.min, s.max) {
                        (Some(m), Some(lo), Some(hi)) if scale > 0.0 => Some(Bar {
                            value: m / scale,
                            low: lo / scale,
                            high: hi / scale,
                            timed_out: None,
                        }),
                        _ if s.timeouts > 0 => Some(Bar {
                            value: 0.0,
                            low: 0.0,
                            high: 0.0,
                            timed_out: Some(timeout_text(r)),
                        }),
                        _ => None,
                    }
                })
                .collect(),
        })
        .collect();
    if relative {
        BarChart {
            title: format!(
                "TPC-H power test: query time relative to {} (median of repetitions, min/max whiskers)",
                label(base_id, base)
            ),
            y_label: "time relative to the baseline (lower is faster)".into(),
            categories,
            series,
            reference: Some((1.0, "baseline".into())),
            band: Some((1.0 - DRAW_THRESHOLD, 1.0 + DRAW_THRESHOLD)),
            zoom: None,
        }
    } else {
        BarChart {
            title: format!(
                "TPC-H power test at SF {}: query times (median of repetitions, min/max whiskers)",
                base.scale_factor
            ),
            y_label: "seconds".into(),
            categories,
            series,
            reference: None,
            band: None,
            zoom: None,
        }
    }
}

/// The studies' second per-query chart: the relative bars zoomed to 0.5-1.5 around the
/// baseline, where differences of a few percent show; bars beyond are cut and labelled.
/// `None` for a single run (its bars are seconds, not relative).
pub fn query_bars_zoomed(runs: &[(String, PowerReport)]) -> Option<BarChart> {
    let full = query_bars(runs);
    (runs.len() > 1).then(|| BarChart {
        title: format!("{}, zoomed to 0.5-1.5", full.title),
        zoom: Some((0.5, 1.5)),
        ..full
    })
}

/// The whole page for TPC-H power runs (`(run id, tpch.json)`, the first is the baseline).
pub fn tpch_page(runs: &[(String, PowerReport)]) -> Result<String, ReportError> {
    let mut page = Page::new(&format!("dbperf: TPC-H power test, {} run(s)", runs.len()));
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(id, r)| {
            vec![
                id.clone(),
                r.server_version.clone(),
                format!("{}", r.scale_factor),
                if r.validation {
                    "validation".into()
                } else {
                    r.seed.to_string()
                },
                r.runs.len().to_string(),
                format!("{:?}", r.cold).to_lowercase(),
                r.timeout_seconds.map_or("-".into(), |t| format!("{t} s")),
                r.power_at_size.map_or("-".into(), |p| format!("{p:.1}")),
            ]
        })
        .collect();
    page.table(
        &[
            "run",
            "server",
            "SF",
            "seed",
            "repetitions",
            "cold",
            "timeout",
            "Power@Size",
        ]
        .map(String::from),
        &rows,
    );
    page.bar_chart(&query_bars(runs))?;
    if let Some(zoomed) = query_bars_zoomed(runs) {
        page.bar_chart(&zoomed)?;
    }
    page.heading("Per query");
    let columns: Vec<Column<'_>> = runs
        .iter()
        .map(|(id, r)| Column {
            label: label(id, r),
            report: r,
        })
        .collect();
    page.details(
        &format!(
            "Seconds on the baseline, the others relative to it (draw under {:.0}%)",
            DRAW_THRESHOLD * 100.0
        ),
        &format!("<pre>{}</pre>", escape(&table(&columns, DRAW_THRESHOLD * 100.0))),
    );
    page.heading("Plans");
    for (id, r) in runs {
        for s in r.queries.iter().filter(|s| s.plan.is_some()) {
            let plan = s.plan.as_ref().map_or(String::new(), |p: &Value| {
                serde_json::to_string_pretty(p).unwrap_or_default()
            });
            page.details(
                &format!("Q{} on {} — parameters {}", s.query, label(id, r), s.params.join(", ")),
                &format!("<pre>{}</pre>", escape(&plan)),
            );
        }
    }
    Ok(page.finish())
}
