//! The HTML report of an experiment (the finished runs of a `dbperf lab` experiment, or any set
//! of runs), with each study's charts chosen by the runs' workload (the manifest's):
//!
//! - every workload, under a one-line caption of the setup: the users x column tables of the
//!   workload's own figures ([`Metric::own`]: NOTPM for TPC-C, requests/s and p99 for
//!   LinkBench, TPS and p99 for sysbench and pgbench) with their verdicts and what the server
//!   did ("inside the server"), then the setup in full; the headline figure and p99 against
//!   users on log-log axes (one line per column: server or variant); the interval figure
//!   (New-Order transactions per 10 s for TPC-C, read from `intervals.hlog`; TPS otherwise)
//!   over time at every user count, as small multiples with a line per column (its
//!   repetition nearest the point's median) and the warmup shaded; the latency spectrum of
//!   each column at the highest user count; each run's explanation
//!   ([`crate::analysis::explain`]), the server variables that differ, and the list of runs,
//!   rows labelled by what varies between the runs;
//! - per user count (a selector; printed, all) and column, as the checkpoint and LRU studies
//!   draw them: checkpoint age in MiB with its flush lines and dirty pages by InnoDB's own
//!   ratio against the limit, and pages read, freed and LRU-flushed per second;
//! - TPC-H runs (a `tpch.json`): the comparison by their own figures (power: the per-query
//!   table with the geometric mean, and Power@Size; throughput: Throughput@Size); for power
//!   runs each query's median relative to the first run with min/max whiskers and the ±5%
//!   draw band ([`super::tpch::query_bars`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::chart::{warmup_band, Chart, Scale, Series, PALETTE};
use super::page::{cells_table_html, escape, table_html, Cell, Page};
use super::run::{buffer_pool_chart, checkpoint_chart, spectrum_chart, RunData};
use super::tpch::{query_bars, query_bars_zoomed};
use super::ReportError;
use crate::analysis::explain::{
    explain, new_orders_per_minute, table_cells, ExplainOptions, Explanation, TABLE_HEADER,
};
use crate::compare::{
    compare_runs, labels_by_what_varies, users, CompareOptions, Comparison, Metric, RunInfo, DEFAULT_THRESHOLD_PCT,
};
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

    over_time(page, workload, &head, runs)?;
    // At the highest user count, each column's spectrum (its repetition nearest the median).
    if let Some(&top) = threads.last() {
        let spectra: Vec<(String, &super::spectrum::Spectrum)> = head
            .columns
            .iter()
            .enumerate()
            .filter_map(|(i, col)| Some((col.label.clone(), median_run(&head, runs, i, top)?.1.spectrum.as_ref()?)))
            .collect();
        if !spectra.is_empty() {
            let mut chart = spectrum_chart(&spectra);
            chart.title = format!("{workload}: response time by percentile at {}", users(top));
            page.chart(&chart)?;
        }
    }

    stability_panels(page, workload, &head, runs)?;
    explanations_table(page, &head, runs);

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
    let ordered = in_table_order(&head, runs);
    let labels = row_labels(&ordered);
    let rows: Vec<Vec<Cell>> = ordered
        .iter()
        .zip(labels)
        .map(|((info, _), label)| {
            vec![
                label,
                Cell::Text(info.server_version.clone().unwrap_or_default()),
                Cell::Text(format!("{:.1}", info.tps)),
                Cell::Text(format!("{:.2}", info.p99_ms)),
            ]
        })
        .collect();
    page.details(
        &format!("Runs ({})", rows.len()),
        &cells_table_html(&["run".into(), "server".into(), "TPS".into(), "p99 (ms)".into()], &rows),
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

/// The run of a point (column `col` of `head` at `users`) whose headline figure is nearest the
/// point's median: the repetition its time charts draw.
fn median_run<'a>(
    head: &Comparison,
    runs: &'a [(RunInfo, RunData)],
    col: usize,
    users: u32,
) -> Option<&'a (RunInfo, RunData)> {
    let cell = head.rows.iter().find(|r| r.threads == users)?.cells[col].as_ref()?;
    let value = |info: &RunInfo| {
        let v = head.metric.of(info).unwrap_or_default();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    runs.iter()
        .filter(|(info, _)| cell.runs.contains(&info.run_id))
        .min_by(|a, b| {
            let d = |r: &(RunInfo, RunData)| (value(&r.0) - cell.median).abs();
            d(a).total_cmp(&d(b))
        })
}

/// The interval figure over time at every user count: small multiples, one chart per user
/// count with each column's line (its repetition nearest the point's median), all on one time
/// axis and one y range, the warmup shaded.
fn over_time(
    page: &mut Page,
    workload: &str,
    head: &Comparison,
    runs: &[(RunInfo, RunData)],
) -> Result<(), ReportError> {
    let span = time_span(runs);
    let mut charts = Vec::new();
    let mut figure = "TPS";
    for row in &head.rows {
        let users = row.threads;
        let mut c = Chart::new(String::new(), "time since start (s)", "");
        for (i, col) in head.columns.iter().enumerate() {
            let Some((_, data)) = median_run(head, runs, i, users) else {
                continue;
            };
            let (name, points) = interval_figure(workload, data.records.dir.path(), data);
            figure = name;
            c.series
                .push(Series::new(col.label.clone(), PALETTE[i % PALETTE.len()], points));
            let band = warmup_band(data.warmup_end_s());
            if let Some(b) = band.filter(|b| !c.bands.iter().any(|o| o.to == b.to)) {
                c.bands.push(b);
            }
        }
        (c.x_range, c.x_group, c.small) = (span, Some(workload.to_string()), true);
        charts.push(c);
    }
    let top = charts
        .iter()
        .flat_map(|c| c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    for (c, row) in charts.iter_mut().zip(&head.rows) {
        c.title = format!("{workload}: {figure} at {}", users(row.threads));
        c.y_label = y_label_of(figure).to_string();
        c.y_range = (top > 0.0).then_some((0.0, top * 1.05));
    }
    if charts.iter().all(Chart::is_empty) {
        return Ok(());
    }
    page.paragraph(
        &format!(
            "{workload}: {figure} over time at each user count (each column's repetition nearest its median; \
             the same scales in every chart):"
        ),
        Some("chart-title"),
    );
    page.begin_multiples();
    for c in &charts {
        page.chart(c)?;
    }
    page.end_block();
    Ok(())
}

/// The y axis of an interval figure ([`interval_figure`]).
fn y_label_of(figure: &str) -> &'static str {
    match figure {
        "TPS" => "transactions/s",
        "NOTPM per interval" => "New-Order per minute",
        _ => "New-Order transactions",
    }
}

/// At each user count (chosen by a selector; printed, all), per column (its repetition nearest
/// the point's median), as the checkpoint and LRU studies draw them: checkpoint age in MiB
/// with its flush lines and dirty pages by InnoDB's ratio against the limit; pages read, freed
/// and LRU-flushed per second; the warmup and stalls shaded.
fn stability_panels(
    page: &mut Page,
    workload: &str,
    head: &Comparison,
    runs: &[(RunInfo, RunData)],
) -> Result<(), ReportError> {
    let sampled = |d: &RunData| d.telemetry.iter().any(|s| s.server.is_some());
    let Some(top) = head.rows.last().map(|r| r.threads) else {
        return Ok(());
    };
    if !runs.iter().any(|(_, d)| sampled(d)) {
        return Ok(());
    }
    let span = time_span(runs);
    let group = format!("{workload}-inside");
    let options: Vec<(String, String)> = head
        .rows
        .iter()
        .map(|r| (r.threads.to_string(), users(r.threads)))
        .collect();
    page.paragraph(
        &format!("{workload}: inside the server over time, per column, at each user count:"),
        Some("chart-title"),
    );
    page.point_selector(&group, "Users:", &options, &top.to_string());
    for row in &head.rows {
        let n = row.threads;
        page.begin_point(&group, &n.to_string(), &format!("{workload} at {}", users(n)));
        for (i, col) in head.columns.iter().enumerate() {
            let Some((_, data)) = median_run(head, runs, i, n).filter(|(_, d)| sampled(d)) else {
                continue;
            };
            let title = |what: &str| format!("{workload}: {what}, {} at {}", col.label, users(n));
            let pool = buffer_pool_chart(data, title("pages read, freed and LRU-flushed"));
            for mut chart in
                std::iter::once(checkpoint_chart(data, title("checkpoint age and dirty pages"))).chain(pool)
            {
                chart.bands = data.bands();
                (chart.x_range, chart.x_group) = (span, Some(workload.to_string()));
                page.chart(&chart)?;
            }
        }
        page.end_block();
    }
    Ok(())
}

/// From the start to the last interval or telemetry sample of the runs, so their time charts
/// share one axis.
fn time_span(runs: &[(RunInfo, RunData)]) -> Option<(f64, f64)> {
    let end = runs
        .iter()
        .flat_map(|(_, d)| {
            let intervals = d.intervals.iter().map(|r| r.end_s);
            intervals.chain(d.telemetry.iter().map(|s| s.t_s))
        })
        .fold(0.0, f64::max);
    (end > 0.0).then_some((0.0, end))
}

/// The runs as the per-run tables list them: by column, then users, repetition and run id.
fn in_table_order<'a>(head: &Comparison, runs: &'a [(RunInfo, RunData)]) -> Vec<&'a (RunInfo, RunData)> {
    let column = |info: &RunInfo| head.columns.iter().position(|c| c.runs.contains(&info.run_id));
    let mut ordered: Vec<&(RunInfo, RunData)> = runs.iter().collect();
    let rep = |info: &RunInfo| info.lab.as_ref().map(|l| l.rep);
    ordered.sort_by_key(|(info, _)| (column(info), info.threads, rep(info), info.run_id.clone()));
    ordered
}

/// Each run's row label: what varies between the runs ([`labels_by_what_varies`]) over its id.
fn row_labels(runs: &[&(RunInfo, RunData)]) -> Vec<Cell> {
    let infos: Vec<&RunInfo> = runs.iter().map(|(i, _)| i).collect();
    labels_by_what_varies(&infos)
        .into_iter()
        .zip(&infos)
        .map(|(text, info)| Cell::Label {
            text,
            detail: info.run_id.clone(),
        })
        .collect()
}

/// Each run's explanation in one table, labelled by what varies between the runs: the figures
/// the studies read, a figure a run lacks as `n/a` with its reason once under the table.
fn explanations_table(page: &mut Page, head: &Comparison, runs: &[(RunInfo, RunData)]) {
    let explained: Vec<(&(RunInfo, RunData), Explanation)> = in_table_order(head, runs)
        .into_iter()
        .filter_map(|run| Some((run, explain(run.1.records.dir.path(), &ExplainOptions::default()).ok()?)))
        .collect();
    if explained.is_empty() {
        return;
    }
    let ordered: Vec<&(RunInfo, RunData)> = explained.iter().map(|(r, _)| *r).collect();
    let rows: Vec<Vec<Cell>> = row_labels(&ordered)
        .into_iter()
        .zip(&explained)
        .map(|(label, (_, e))| {
            std::iter::once(label)
                .chain(table_cells(e).into_iter().map(|c| match c {
                    Ok(text) => Cell::Text(text),
                    Err(why) => Cell::NotAvailable(why),
                }))
                .collect()
        })
        .collect();
    page.paragraph(
        "Each run's explanation (second half of the measured phase; dbperf analyze RUN --last ... for another window):",
        None,
    );
    page.cells_table(&TABLE_HEADER.map(String::from), &rows);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::Path;

    /// A lab run of `testdata/lab-run` (a MariaDB oltp_read_write run with telemetry, Performance
    /// Schema on without the latch instruments) at `users`, variant `flush=<flush>`, repetition
    /// `rep`, its throughput scaled by `scale`.
    fn lab_run(root: &Path, flush: u32, users: u32, rep: u32, scale: f64) -> PathBuf {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/lab-run");
        let dir = root.join(format!(
            "20261129-06{flush}{users:02}{rep}-oltp_read_write-{flush}{users}{rep}"
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let read = |f: &str| std::fs::read_to_string(fixture.join(f)).unwrap();
        let mut m: Value = serde_json::from_str(&read("manifest.json")).unwrap();
        let point = format!("mariadb-10.11/flush={flush}/oltp_read_write/t{users}/r{rep}");
        m["lab"]["point"] = point.into();
        m["lab"]["variant"] = format!("flush={flush}").into();
        m["lab"]["variant_settings"] = serde_json::json!({ "innodb_flush_log_at_trx_commit": flush.to_string() });
        (m["lab"]["threads"], m["lab"]["rep"]) = (users.into(), rep.into());
        m["server"]["variables"]["innodb_flush_log_at_trx_commit"] = flush.to_string().into();
        std::fs::write(dir.join("manifest.json"), m.to_string()).unwrap();
        let mut s: Value = serde_json::from_str(&read("summary.json")).unwrap();
        s["threads"] = users.into();
        s["run_id"] = dir.file_name().unwrap().to_string_lossy().into_owned().into();
        let tps = s["transactions"]["per_sec"].as_f64().unwrap() * scale;
        s["transactions"]["per_sec"] = tps.into();
        std::fs::write(dir.join("summary.json"), s.to_string()).unwrap();
        let intervals: String = read("intervals.jsonl")
            .lines()
            .map(|l| {
                let mut r: Value = serde_json::from_str(l).unwrap();
                r["threads"] = users.into();
                r["tps"] = (r["tps"].as_f64().unwrap() * scale).into();
                format!("{r}\n")
            })
            .collect();
        std::fs::write(dir.join("intervals.jsonl"), intervals).unwrap();
        std::fs::copy(fixture.join("telemetry.jsonl"), dir.join("telemetry.jsonl")).unwrap();
        dir
    }

    /// The data island of each chart on the page.
    fn charts(html: &str) -> Vec<Value> {
        html.split("class=\"chart-data\"")
            .skip(1)
            .map(|rest| {
                let json = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
                serde_json::from_str(&json.replace("<\\/", "</")).unwrap()
            })
            .collect()
    }

    /// The plotly figure of the chart titled `title`.
    fn figure(html: &str, title: &str) -> Value {
        let attribute = format!("data-title=\"{}\"", escape(title));
        let at = html
            .match_indices("class=\"chart-figure\"")
            .map(|(i, _)| i)
            .find(|i| html[*i..].split('>').next().unwrap().contains(&attribute))
            .unwrap_or_else(|| panic!("no figure {title}"));
        let rest = &html[at..];
        let json = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
        serde_json::from_str(&json.replace("<\\/", "</")).unwrap()
    }

    fn titled<'a>(charts: &'a [Value], start: &str) -> Vec<&'a Value> {
        charts
            .iter()
            .filter(|c| c["title"].as_str().unwrap().starts_with(start))
            .collect()
    }

    /// Two variants at 1 and 4 users, two repetitions each.
    fn sweep() -> (tempfile::TempDir, String) {
        let tmp = tempfile::tempdir().unwrap();
        let mut dirs = Vec::new();
        for (flush, scale) in [(1, 0.8), (2, 1.0)] {
            for users in [1, 4] {
                for rep in [1, 2] {
                    dirs.push(lab_run(
                        tmp.path(),
                        flush,
                        users,
                        rep,
                        scale * (1.0 + rep as f64 / 100.0),
                    ));
                }
            }
        }
        let html = experiment_page("demo", &dirs).unwrap();
        (tmp, html)
    }

    #[test]
    fn every_user_count_has_its_time_series_with_the_warmup_shaded() {
        let (_tmp, html) = sweep();
        let charts = charts(&html);
        for users in [1, 4] {
            let title = format!("oltp_read_write: TPS at {}", super::users(users));
            let c = titled(&charts, &title);
            assert_eq!(c.len(), 1, "{title}: one small chart per user count");
            let names: Vec<&str> = c[0]["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["name"].as_str().unwrap())
                .collect();
            assert_eq!(names.len(), 2, "one line per column: {names:?}");
            assert_ne!(names[0], names[1]);
            // The warmup, 0 to its end, as a filled band in the figure.
            let f = figure(&html, &title);
            let warm = f["data"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == "warmup")
                .expect("a warmup band");
            assert_eq!(warm["fill"], "toself");
            let xs: Vec<f64> = warm["x"].as_array().unwrap().iter().filter_map(Value::as_f64).collect();
            assert_eq!(xs.iter().copied().fold(f64::NAN, f64::min), 0.0);
            assert!((xs.iter().copied().fold(0.0, f64::max) - 3.0).abs() < 0.1, "{xs:?}");
        }
        // The small multiples share their y range.
        let ranges: Vec<&Value> = titled(&charts, "oltp_read_write: TPS at ")
            .iter()
            .map(|c| &c["y_range"])
            .collect();
        assert!(
            ranges.windows(2).all(|w| w[0] == w[1]) && !ranges[0].is_null(),
            "{ranges:?}"
        );
        // Inside the server: a block per user count (a selector on screen, all printed), each
        // with a checkpoint panel per column, shaded.
        assert!(html.contains("<select class=\"points\""));
        for users in [1, 4] {
            assert!(html.contains(&format!("<option value=\"{users}\"")));
            assert!(html.contains(&format!(
                "class=\"point\" data-points=\"oltp_read_write-inside\" data-value=\"{users}\""
            )));
            let panels = titled(&charts, "oltp_read_write: checkpoint age and dirty pages, ");
            let at: Vec<_> = panels
                .iter()
                .filter(|c| {
                    c["title"]
                        .as_str()
                        .unwrap()
                        .ends_with(&format!(" at {}", super::users(users)))
                })
                .collect();
            assert_eq!(at.len(), 2, "one per column at {users} users");
            for c in at {
                assert!(c["bands"].as_array().unwrap().iter().any(|b| b["label"] == "warmup"));
            }
        }
        assert!(
            html.contains(".point[hidden]{display:block!important}"),
            "printed, every block shows"
        );
        assert!(
            html.len() < super::super::page::MAX_REPORT_BYTES,
            "{} bytes",
            html.len()
        );
    }

    #[test]
    fn each_reference_line_is_on_the_panel_of_its_metric() {
        let (_tmp, html) = sweep();
        let charts = charts(&html);
        let c = titled(&charts, "oltp_read_write: checkpoint age and dirty pages, ")[0];
        let limits = c["limits"].as_array().unwrap();
        let panel_of = |start: &str| {
            let l = limits
                .iter()
                .find(|l| l["label"].as_str().unwrap().starts_with(start))
                .unwrap_or_else(|| panic!("{start}: {limits:?}"));
            l["secondary"].as_bool().unwrap()
        };
        // Checkpoint age above, dirty pages below.
        assert!(!panel_of("max checkpoint age (sync flush)"));
        assert!(!panel_of("async flush"));
        assert!(panel_of("innodb_max_dirty_pages_pct"));
        let dirty = c["series"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["secondary"] == true)
            .unwrap();
        assert!(dirty["name"].as_str().unwrap().starts_with("dirty pages"));
    }

    #[test]
    fn one_column_draws_each_line_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = [1, 4]
            .iter()
            .map(|u| lab_run(tmp.path(), 2, *u, 1, 1.0 + *u as f64 / 10.0))
            .collect();
        let html = experiment_page("demo", &dirs).unwrap();
        let charts = charts(&html);
        for dir in &dirs {
            // The run's TPS per interval, at each interval's middle.
            let tps: Vec<Value> = std::fs::read_to_string(dir.join("intervals.jsonl"))
                .unwrap()
                .lines()
                .map(|l| {
                    let r: Value = serde_json::from_str(l).unwrap();
                    let mid = (r["start_s"].as_f64().unwrap() + r["end_s"].as_f64().unwrap()) / 2.0;
                    serde_json::json!([mid, r["tps"].as_f64().unwrap()])
                })
                .collect();
            let drawn = charts
                .iter()
                .flat_map(|c| c["series"].as_array().unwrap())
                .filter(|s| s["points"].as_array().unwrap() == &tps)
                .count();
            assert_eq!(drawn, 1, "{}", dir.display());
        }
        assert_eq!(titled(&charts, "oltp_read_write: TPS at ").len(), 2);
    }

    #[test]
    fn run_tables_are_labelled_by_what_varies_and_say_n_a_once() {
        let (_tmp, html) = sweep();
        // Setup's caption, then the key table, before anything else.
        let caption = html.find("Setup: ").unwrap();
        let first_table = html.find("<table").unwrap();
        let first_chart = html.find("class=\"chart\"").unwrap();
        assert!(caption < first_table && first_table < first_chart);
        let explanations = &html[html.find("Each run&#39;s explanation").unwrap()..];
        let table = &explanations[..explanations.find("</table>").unwrap()];
        let labels: Vec<&str> = table
            .split("<tr><td>")
            .skip(1)
            .map(|row| row.split("<br>").next().unwrap())
            .collect();
        assert_eq!(labels.len(), 8);
        assert_eq!(labels[0], "flush=1 · 1 user · rep 1", "{labels:?}");
        for l in &labels {
            assert!(
                l.contains(" user") && !l.contains("oltp_read_write") && !l.contains("mariadb"),
                "{l}"
            );
        }
        assert!(table.contains("<span class=\"detail\">20261129-"), "the run id below");
        // n/a cells are numbered; each reason is listed once, under the table.
        assert!(!table.contains("n/a:"), "no reason repeated in the cells");
        assert!(table.contains("n/a<sup>1</sup>"));
        let notes = &explanations[explanations.find("</table>").unwrap()..];
        let notes = &notes[..notes.find("</ol>").expect("a footnote list")];
        let reasons: Vec<&str> = notes.split("<li>").skip(1).collect();
        let mut distinct = reasons.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(reasons.len(), distinct.len(), "{reasons:?}");
        assert!(!reasons.is_empty());
        // The waits' reason is the true one: Performance Schema was on, the latch instruments were not.
        let waits = reasons
            .iter()
            .find(|r| r.contains("performance_schema"))
            .expect("{reasons:?}");
        assert!(
            waits.contains("performance_schema is ON") && !waits.contains("= &quot;ON&quot;"),
            "{waits}"
        );
        // The list of runs, too.
        let runs = &html[html.find("Runs (8)").unwrap()..];
        assert!(runs.contains("<td>flush=2 · 4 users · rep 2<br><span class=\"detail\">20261129-"));
    }
}
