//! The HTML report of an experiment (the finished runs of a `dbperf lab` experiment, or any set
//! of runs), with each study's charts chosen by the runs' workload (the manifest's):
//!
//! - every workload: the users x column tables of the workload's own figures
//!   ([`Metric::own`]: NOTPM for TPC-C, requests/s and p99 for LinkBench, TPS and p99 for
//!   sysbench and pgbench) with their verdicts and what the server did ("inside the server"),
//!   the headline figure and p99 against users on log-log axes (one line per column: server or
//!   variant), throughput over time and the latency spectrum of each column
//!   at the highest user count, each run's explanation ([`crate::analysis::explain`]),
//!   the server variables that differ, and the list of runs;
//! - per column, as the checkpoint and LRU studies draw them: the interval figure (New-Order
//!   transactions per 10 s for TPC-C, read from `intervals.hlog`; TPS otherwise), checkpoint
//!   age in MiB with its flush lines and dirty pages by InnoDB's own ratio against the limit,
//!   and pages read, freed and LRU-flushed per second;
//! - TPC-H runs (a `tpch.json`): the comparison by their own figures (power: the per-query
//!   table with the geometric mean, and Power@Size; throughput: Throughput@Size); for power
//!   runs each query's median relative to the first run with min/max whiskers and the ±5%
//!   draw band ([`super::tpch::query_bars`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::chart::{Chart, Scale, Series, PALETTE};
use super::page::{escape, table_html, Page};
use super::run::{buffer_pool_chart, checkpoint_chart, spectrum_chart, RunData};
use super::tpch::{query_bars, query_bars_zoomed};
use super::ReportError;
use crate::analysis::explain::{explain, new_orders_per_minute, table_row, ExplainOptions, Explanation, TABLE_HEADER};
use crate::compare::{compare_runs, CompareOptions, Comparison, Metric, RunInfo, DEFAULT_THRESHOLD_PCT};
use crate::tpch::{plan_differences, plan_differences_text, Column};
use dbperf_results::tpch::{PowerReport, TpchReport};
use dbperf_results::{RunDir, RunRecords};

/// The whole page for the runs in `run_dirs`, titled `name`.
pub fn experiment_page(name: &str, run_dirs: &[PathBuf]) -> Result<String, ReportError> {
    let mut by_workload: BTreeMap<String, Vec<(RunInfo, RunData)>> = BTreeMap::new();
    let mut tpch: BTreeMap<String, Vec<RunInfo>> = BTreeMap::new();
    let mut power: Vec<(String, PowerReport)> = Vec::new();
    for dir in run_dirs {
        let d = RunDir::open(dir)?;
        if let Some(report) = TpchReport::read(&d)? {
            let info = RunInfo::from_records(&RunRecords::read(dir)?)?;
            if let TpchReport::Power(p) = report {
                power.push((d.run_id().to_string(), p));
            }
            tpch.entry(info.workload.clone()).or_default().push(info);
            continue;
        }
        let data = RunData::read(dir)?;
        let info = RunInfo::from_records(&data.records)?;
        by_workload.entry(info.workload.clone()).or_default().push((info, data));
    }
    let mut page = Page::new(&format!("dbperf experiment: {name}"));
    page.paragraph(
        &format!(
            "{} finished run(s), {} workload(s). A cell is the median of a point's repetitions, with \
             their range when there are several; a difference is called only when it is beyond the \
             noise, else it is a draw (~).",
            run_dirs.len(),
            by_workload.len() + tpch.len()
        ),
        Some("note"),
    );
    for (workload, infos) in &tpch {
        page.heading(workload);
        let setup = super::setup::of_dirs(infos, run_dirs)?;
        if let Some(s) = &setup {
            super::setup::caption(&mut page, s);
        }
        comparison_tables(&mut page, infos)?;
        if let Some(s) = &setup {
            super::setup::block(&mut page, s);
        }
    }
    if !power.is_empty() {
        page.bar_chart(&query_bars(&power))?;
        if let Some(zoomed) = query_bars_zoomed(&power) {
            page.bar_chart(&zoomed)?;
        }
        plan_section(&mut page, &power);
    }
    for (workload, runs) in &by_workload {
        workload_section(&mut page, workload, runs)?;
    }
    Ok(page.finish())
}

/// The queries whose plans differ between the power runs: the shapes, then each plan whole.
fn plan_section(page: &mut Page, power: &[(String, PowerReport)]) {
    let columns: Vec<Column<'_>> = power
        .iter()
        .map(|(id, r)| Column {
            label: format!("{} {id}", r.server_version),
            report: r,
        })
        .collect();
    let diffs = plan_differences(&columns);
    if diffs.is_empty() {
        return;
    }
    page.heading("Plans that differ");
    page.raw(&format!("<pre>{}</pre>", escape(&plan_differences_text(&diffs))));
    for d in &diffs {
        for (label, plan) in &d.plans {
            page.details(
                &format!("Q{} on {label}", d.query),
                &format!(
                    "<pre>{}</pre>",
                    escape(&serde_json::to_string_pretty(plan).unwrap_or_default())
                ),
            );
        }
    }
}

/// The tables of the workload's own figures ([`Metric::own`]), each with its title; returns
/// the comparisons, the headline first.
fn comparison_tables(page: &mut Page, infos: &[RunInfo]) -> Result<Vec<Comparison>, ReportError> {
    let workload = infos.first().map_or("", |i| i.workload.as_str());
    let mut out = Vec::new();
    for metric in Metric::own(workload, infos) {
        let c = compare_runs(infos, &options(metric))?;
        page.paragraph(&c.title(), None);
        let (header, rows) = c.plain_table();
        page.table(&header, &rows);
        if let Some(note) = c.spread_note() {
            page.paragraph(note, Some("note"));
        }
        out.push(c);
    }
    Ok(out)
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
    page.heading(workload);
    // The results first, under a one-line setup; the setup in full after them.
    let setup = super::setup::of_manifests(
        &infos,
        runs.iter().map(|(i, d)| (i.run_id.as_str(), &d.records.manifest)),
    )?;
    if let Some(s) = &setup {
        super::setup::caption(page, s);
    }
    let warnings = compare_runs(&infos, &options(Metric::Tps))?.variables.warnings;
    for w in &warnings {
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
    let own = comparison_tables(page, &infos)?;
    if let Some(s) = &setup {
        super::setup::block(page, s);
    }
    // The headline figure (NOTPM, requests/s, TPS) for the charts; p99 for the latency one.
    let head = match own.into_iter().next() {
        Some(c) => c,
        None => compare_runs(&infos, &options(Metric::Tps))?,
    };
    let p99 = compare_runs(&infos, &options(Metric::P99))?;
    super::notes::warnings_section(page, &head.warnings);
    if let Some((header, rows)) = head.plain_inside() {
        page.paragraph(
            "Inside the server (dbperf analyze over each column's runs; telemetry of the measured phase):",
            None,
        );
        page.table(&header, &rows);
    }

    let threads: Vec<u32> = head.rows.iter().map(|r| r.threads).collect();
    let spread = threads.last().copied().unwrap_or(1) as f64 / threads.first().copied().unwrap_or(1).max(1) as f64;
    if threads.len() > 1 {
        let mut t = Chart::new(
            format!("{workload}: throughput by users (log-log)"),
            "users (connections)",
            format!("{} ({})", head.metric.name(), head.unit),
        );
        // Log-log, as the published users sweeps draw it: equal ratios look equal.
        if spread >= 4.0 {
            t.x_scale = Scale::Log2;
        }
        t.y_scale = Scale::Log;
        for (i, (label, points)) in per_column(&head).into_iter().enumerate() {
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
        for (i, col) in head.columns.iter().enumerate() {
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
        over_time.x_range = time_span(runs, top);
        over_time.x_group = Some(workload.to_string());
        page.chart(&over_time)?;
        if !spectra.is_empty() {
            let mut chart = spectrum_chart(&spectra);
            chart.title = format!("{workload}: response time by percentile at {top} users");
            page.chart(&chart)?;
        }
    }

    stability_panels(page, workload, &head, runs, threads.last().copied())?;
    explanations_table(page, runs);

    if !head.variables.differing.is_empty() {
        let rows: Vec<Vec<String>> = head
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
            .chain(head.columns.iter().map(|c| c.label.clone()))
            .collect();
        page.details(
            &format!("Other server variables that differ ({})", rows.len()),
            &table_html(&header, &rows),
        );
    }
    if let Some((header, rows)) = head.plain_defaults_changed() {
        page.details(
            &format!("Defaults that changed between server versions ({})", rows.len()),
            &table_html(&header, &rows),
        );
    }
    let lacking = head.plain_lacking();
    if !lacking.is_empty() {
        page.details(
            "Settings only some server versions have",
            &table_html(&["in", "not in", "how many", "variables"].map(String::from), &lacking),
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

/// The interval figure of a run over time: for TPC-C the New-Order transactions of each 10 s
/// (from `intervals.hlog`), as the TPC-C checkpoint studies plot them (NOTPM per interval for
/// a run under a minute); else TPS per interval.
fn interval_figure(workload: &str, dir: &std::path::Path, data: &RunData) -> (&'static str, Vec<(f64, f64)>) {
    let mid = |start: f64| {
        data.intervals
            .iter()
            .find(|r| r.start_s == start)
            .map_or(start, |r| (r.start_s + r.end_s) / 2.0)
    };
    if workload == "tpcc" {
        let all: Vec<_> = data.intervals.iter().collect();
        if let Ok(points) = new_orders_per_minute(&dir.join("intervals.hlog"), &all) {
            // Runs too short for six whole 10 s stretches keep their intervals.
            let tens = per_ten_seconds(&points, &all);
            if tens.len() >= 6 {
                return ("New-Order per 10 s", tens);
            }
            return (
                "NOTPM per interval",
                points.into_iter().map(|(s, v)| (mid(s), v)).collect(),
            );
        }
    }
    (
        "TPS",
        data.intervals
            .iter()
            .map(|r| ((r.start_s + r.end_s) / 2.0, r.tps))
            .collect(),
    )
}

/// New-Order transactions in each whole 10 s from NOTPM per interval (`(start, notpm)`), drawn
/// at the middle of its 10 s; a last stretch shorter than 10 s is left out.
fn per_ten_seconds(notpm: &[(f64, f64)], intervals: &[&dbperf_results::interval::IntervalRecord]) -> Vec<(f64, f64)> {
    let mut buckets: std::collections::BTreeMap<i64, (f64, f64)> = std::collections::BTreeMap::new();
    for (start, per_minute) in notpm {
        let Some(r) = intervals.iter().find(|r| r.start_s == *start) else {
            continue;
        };
        let length = r.end_s - r.start_s;
        let b = buckets.entry((start / 10.0).floor() as i64).or_default();
        b.0 += per_minute / 60.0 * length;
        b.1 += length;
    }
    buckets
        .into_iter()
        .filter(|(_, (_, covered))| *covered >= 9.5)
        .map(|(b, (count, _))| (b as f64 * 10.0 + 5.0, count))
        .collect()
}

/// Per column (its first run at `top` users), as the checkpoint and LRU studies draw them: the
/// interval figure over time; checkpoint age in MiB with its flush lines and dirty pages by
/// InnoDB's ratio against the limit; pages read, freed and LRU-flushed per second.
fn stability_panels(
    page: &mut Page,
    workload: &str,
    tps: &Comparison,
    runs: &[(RunInfo, RunData)],
    top: Option<u32>,
) -> Result<(), ReportError> {
    let Some(top) = top else { return Ok(()) };
    for col in &tps.columns {
        let Some((_, data)) = runs
            .iter()
            .find(|(info, _)| info.threads == top && col.runs.contains(&info.run_id))
        else {
            continue;
        };
        let dir = data.records.dir.path();
        let (figure, points) = interval_figure(workload, dir, data);
        let mut c = Chart::new(
            format!("{workload}: {figure}, {} at {top} users", col.label),
            "time since start (s)",
            match figure {
                "TPS" => "transactions/s",
                "NOTPM per interval" => "New-Order per minute",
                _ => "New-Order transactions",
            },
        );
        c.series.push(Series::new(figure, PALETTE[0], points));
        c.x_range = time_span(runs, top);
        c.x_group = Some(workload.to_string());
        page.chart(&c)?;
        if data.telemetry.iter().any(|s| s.server.is_some()) {
            let title = |what: &str| format!("{workload}: {what}, {} at {top} users", col.label);
            let pool = buffer_pool_chart(data, title("pages read, freed and LRU-flushed"));
            for mut chart in
                std::iter::once(checkpoint_chart(data, title("checkpoint age and dirty pages"))).chain(pool)
            {
                chart.x_range = c.x_range;
                chart.x_group = c.x_group.clone();
                page.chart(&chart)?;
            }
        }
    }
    Ok(())
}

/// From the start to the last interval or telemetry sample of the runs at `top` users, so
/// their time charts share one axis.
fn time_span(runs: &[(RunInfo, RunData)], top: u32) -> Option<(f64, f64)> {
    let end = runs
        .iter()
        .filter(|(info, _)| info.threads == top)
        .flat_map(|(_, d)| {
            let intervals = d.intervals.iter().map(|r| r.end_s);
            intervals.chain(d.telemetry.iter().map(|s| s.t_s))
        })
        .fold(0.0, f64::max);
    (end > 0.0).then_some((0.0, end))
}

/// Each run's explanation in one table: the figures the studies read.
fn explanations_table(page: &mut Page, runs: &[(RunInfo, RunData)]) {
    let explained: Vec<(&RunInfo, Explanation)> = runs
        .iter()
        .filter_map(|(info, data)| Some((info, explain(data.records.dir.path(), &ExplainOptions::default()).ok()?)))
        .collect();
    if explained.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = explained
        .iter()
        .map(|(info, e)| table_row(info.lab.as_ref().map_or(info.run_id.clone(), |l| l.point.clone()), e))
        .collect();
    page.paragraph(
        "Each run's explanation (second half of the measured phase; dbperf analyze RUN --last ... for another window):",
        None,
    );
    page.table(&TABLE_HEADER.map(String::from), &rows);
}
