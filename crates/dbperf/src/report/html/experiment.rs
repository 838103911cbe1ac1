//! The HTML report of an experiment (the finished runs of a `dbperf lab` experiment, or any set
//! of runs): per workload, the users x column tables of TPS and p99 with their verdicts and
//! what the server did, TPS against users, p99 against users on log-log axes, throughput over
//! time and the latency spectrum of each column at the highest user count, the server
//! variables that differ, and the list of runs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::chart::{Chart, Scale, Series, PALETTE};
use super::page::{table_html, Page};
use super::run::{spectrum_chart, RunData};
use super::ReportError;
use crate::report::compare::{compare_runs, CompareOptions, Comparison, Metric, RunInfo, DEFAULT_THRESHOLD_PCT};

/// The whole page for the runs in `run_dirs`, titled `name`.
pub fn experiment_page(name: &str, run_dirs: &[PathBuf]) -> Result<String, ReportError> {
    let mut by_workload: BTreeMap<String, Vec<(RunInfo, RunData)>> = BTreeMap::new();
    for dir in run_dirs {
        let data = RunData::read(dir)?;
        let info = RunInfo::from_records(&data.records)?;
        by_workload.entry(info.workload.clone()).or_default().push((info, data));
    }
    let mut page = Page::new(&format!("dbperf experiment: {name}"));
    page.paragraph(
        &format!(
            "{} finished run(s), {} workload(s). A cell is the median over repetitions with its range; \
             a difference is called only when it is beyond the noise, else it is a draw (~).",
            run_dirs.len(),
            by_workload.len()
        ),
        Some("note"),
    );
    for (workload, runs) in &by_workload {
        workload_section(&mut page, workload, runs)?;
    }
    Ok(page.finish())
}

fn options(metric: Metric) -> CompareOptions {
    CompareOptions {
        by: None,
        metric,
        threshold_pct: DEFAULT_THRESHOLD_PCT,
        baseline: None,
    }
}

/// `(column label, [(threads, median)])` from a comparison.
fn per_column(c: &Comparison) -> Vec<(String, Vec<(f64, f64)>)> {
    c.columns
        .iter()
        .enumerate()
        .map(|(i, col)| {
            let points = c
                .rows
                .iter()
                .filter_map(|r| r.cells[i].as_ref().map(|cell| (r.threads as f64, cell.median)))
                .collect();
            (col.label.clone(), points)
        })
        .collect()
}

fn workload_section(page: &mut Page, workload: &str, runs: &[(RunInfo, RunData)]) -> Result<(), ReportError> {
    let infos: Vec<RunInfo> = runs.iter().map(|(i, _)| i.clone()).collect();
    let tps = compare_runs(&infos, &options(Metric::Tps))?;
    let p99 = compare_runs(&infos, &options(Metric::P99))?;
    page.heading(workload);
    for w in &tps.variables.warnings {
        page.paragraph(
            &format!(
                "WARNING: {} differs between the columns ({}) without being what the experiment varies: \
                 the comparison is not apples to apples.",
                w.name,
                w.values.join(" vs ")
            ),
            Some("stall"),
        );
    }
    for c in [&tps, &p99] {
        page.paragraph(&c.title(), None);
        let (header, rows) = c.plain_table();
        page.table(&header, &rows);
    }
    if let Some((header, rows)) = tps.plain_inside() {
        page.paragraph(
            "Inside the server (dbperf analyze over each column's runs; telemetry of the measured phase):",
            None,
        );
        page.table(&header, &rows);
    }

    let threads: Vec<u32> = tps.rows.iter().map(|r| r.threads).collect();
    let spread = threads.last().copied().unwrap_or(1) as f64 / threads.first().copied().unwrap_or(1).max(1) as f64;
    if threads.len() > 1 {
        let mut t = Chart::new(
            format!("{workload}: throughput by users"),
            "users (connections)",
            "transactions/s",
        );
        if spread >= 4.0 {
            t.x_scale = Scale::Log2;
        }
        for (i, (label, points)) in per_column(&tps).into_iter().enumerate() {
            t.series
                .push(Series::new(label, PALETTE[i % PALETTE.len()], points).with_markers());
        }
        page.chart(&t)?;
        let mut l = Chart::new(
            format!("{workload}: 99th percentile response time by users (log-log)"),
            "users (connections)",
            "p99 response time (ms)",
        );
        l.x_scale = Scale::Log2;
        l.y_scale = Scale::Log;
        for (i, (label, points)) in per_column(&p99).into_iter().enumerate() {
            l.series
                .push(Series::new(label, PALETTE[i % PALETTE.len()], points).with_markers());
        }
        page.chart(&l)?;
    }

    // At the highest user count: one run per column (its first repetition) over time, and
    // each column's spectrum.
    if let Some(&top) = threads.last() {
        let mut over_time = Chart::new(
            format!("{workload}: throughput per interval at {top} users (first repetition of each column)"),
            "time since start (s)",
            "transactions/s",
        );
        let mut spectra = Vec::new();
        for (i, col) in tps.columns.iter().enumerate() {
            let Some((_, data)) = runs
                .iter()
                .find(|(info, _)| info.threads == top && col.runs.contains(&info.run_id))
            else {
                continue;
            };
            over_time.series.push(Series::new(
                col.label.clone(),
                PALETTE[i % PALETTE.len()],
                data.intervals
                    .iter()
                    .map(|r| ((r.start_s + r.end_s) / 2.0, r.tps))
                    .collect(),
            ));
            if let Some(s) = &data.spectrum {
                spectra.push((col.label.clone(), s));
            }
        }
        page.chart(&over_time)?;
        if !spectra.is_empty() {
            let mut chart = spectrum_chart(&spectra);
            chart.title = format!("{workload}: response time by percentile at {top} users");
            page.chart(&chart)?;
        }
    }

    if !tps.variables.differing.is_empty() {
        let rows: Vec<Vec<String>> = tps
            .variables
            .differing
            .iter()
            .map(|d| {
                std::iter::once(d.name.clone())
                    .chain(d.values.iter().cloned())
                    .collect()
            })
            .collect();
        let header: Vec<String> = std::iter::once("variable".to_string())
            .chain(tps.columns.iter().map(|c| c.label.clone()))
            .collect();
        page.details(
            &format!("Other server variables that differ ({})", rows.len()),
            &table_html(&header, &rows),
        );
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(info, _)| {
            vec![
                info.run_id.clone(),
                info.lab.as_ref().map_or("-".into(), |l| l.point.clone()),
                info.server_version.clone().unwrap_or_default(),
                info.threads.to_string(),
                format!("{:.1}", info.tps),
                format!("{:.2}", info.p99_ms),
            ]
        })
        .collect();
    page.details(
        &format!("Runs ({})", rows.len()),
        &table_html(
            &["run", "lab point", "server", "threads", "TPS", "p99 (ms)"].map(String::from),
            &rows,
        ),
    );
    Ok(())
}
