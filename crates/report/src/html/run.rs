//! The HTML report of one run: summary tables; throughput and response time over time with
//! the warmup shaded and stalls marked; checkpoint age against its flush limits with dirty
//! pages (0-100%) in a panel below; I/O, CPU and top-wait panels from telemetry, every time
//! chart on the same time axis; the latency spectrum from the interval histograms; the
//! analysis; the manifest.

use std::path::Path;

use super::chart::{warmup_band, Band, Chart, Limit, Scale, Series, INK, PALETTE, STALL};
use super::page::{escape, table_html, Page};
use super::spectrum::{latency_spectrum, Spectrum};
use super::ReportError;
use crate::analysis::analyze::{analyze, Analysis, AnalyzeOptions};
use crate::analysis::explain::{explain, freed_per_sample, ExplainOptions};
use crate::analysis::pressure::ASYNC_FLUSH_PCT;
use crate::setup::Setup;
use dbperf_results::interval::IntervalRecord;
use dbperf_results::summary::{LatencyBlock, Summary};
use dbperf_results::telemetry::{disk_written_most, CpuUsage, DiskIo, TelemetryRow};
use dbperf_results::{read_jsonl, RunRecords, TornRecord, TELEMETRY_FILE};
/// Waits shown in the top-waits panel.
const WAITS_SHOWN: usize = 5;

/// Everything the report of one run is drawn from.
pub struct RunData {
    /// Manifest and summary.
    pub records: RunRecords,
    /// `intervals.jsonl`.
    pub intervals: Vec<IntervalRecord>,
    /// `telemetry.jsonl` lines (empty without telemetry).
    pub telemetry: Vec<TelemetryRow>,
    /// `dbperf analyze` with default thresholds (`None` when nothing was measured).
    pub analysis: Option<Analysis>,
    /// Percentile spectrum of the measured intervals' response times.
    pub spectrum: Option<Spectrum>,
    /// Last records cut off mid-write (a full disk, a killed run) that were skipped.
    pub torn: Vec<TornRecord>,
}

impl RunData {
    /// Reads the run directory `dir`.
    pub fn read(dir: &Path) -> Result<RunData, ReportError> {
        let records = RunRecords::read(dir)?;
        let intervals = records.dir.read_intervals::<IntervalRecord>()?;
        let tel = dir.join(TELEMETRY_FILE);
        let telemetry = if tel.is_file() { Some(read_jsonl(&tel)?) } else { None };
        let analysis = analyze(dir, &AnalyzeOptions::default()).ok();
        let measured_from = intervals.records.iter().find(|r| !r.warmup).map(|r| r.start_s);
        let hlog = match measured_from {
            Some(from) => latency_spectrum(&dir.join("intervals.hlog"), from)?,
            None => Default::default(),
        };
        let torn = [
            intervals.torn,
            telemetry.as_ref().and_then(|t| t.torn.clone()),
            hlog.torn,
        ]
        .into_iter()
        .flatten()
        .collect();
        Ok(RunData {
            records,
            intervals: intervals.records,
            telemetry: telemetry.map(|t| t.records).unwrap_or_default(),
            analysis,
            spectrum: hlog.spectrum,
            torn,
        })
    }

    fn summary(&self) -> Option<&Summary> {
        self.records.summary.as_ref()
    }

    /// The end of the warmup, s since start: its last interval's end, else the summary's
    /// `warmup_s` (0: none).
    pub fn warmup_end_s(&self) -> f64 {
        let intervals = self
            .intervals
            .iter()
            .filter(|r| r.warmup)
            .map(|r| r.end_s)
            .fold(0.0, f64::max);
        match intervals > 0.0 {
            true => intervals,
            false => self.summary().map_or(0.0, |s| s.warmup_s),
        }
    }

    /// Warmup and stall bands for time charts.
    pub(super) fn bands(&self) -> Vec<Band> {
        let mut bands: Vec<Band> = warmup_band(self.warmup_end_s()).into_iter().collect();
        for s in self.analysis.iter().flat_map(|a| a.stalls.iter()) {
            bands.push(Band {
                from: s.start_s,
                to: s.end_s,
                color: STALL,
                label: "stall (dbperf analyze)".into(),
            });
        }
        bands
    }

    /// Points `(time, value)` of a telemetry figure picked by `f`, each at the middle of the
    /// time its sample covers (as `dbperf analyze` aligns samples with intervals).
    pub fn series(&self, f: impl Fn(&TelemetryRow) -> Option<f64>) -> Vec<(f64, f64)> {
        self.telemetry
            .iter()
            .filter_map(|s| Some((sample_mid(s), f(s)?)))
            .collect()
    }
}

/// The whole page for one run.
pub fn run_page(data: &RunData) -> Result<String, ReportError> {
    let m = &data.records.manifest;
    let run_id = data.records.dir.run_id().to_string();
    let mut page = Page::new(&format!("dbperf: {} — {run_id}", m.workload.name));
    // The results first, under a one-line setup; the run's facts and setup in full after them.
    let setup = Setup::of_run(&run_id, m);
    super::setup::caption(&mut page, &setup);
    if let Some(s) = data.summary() {
        page.heading("Summary");
        summary_tables(&mut page, s, &m.workload.name);
    } else {
        page.paragraph(
            "No summary.json: the run did not finish (the charts show the intervals it wrote).",
            Some("stall"),
        );
    }
    page.heading("Run and setup");
    facts(&mut page, data);
    super::setup::block(&mut page, &setup);
    page.heading("Over time");
    for chart in time_charts(data) {
        page.chart(&chart)?;
    }
    if let Some(spectrum) = &data.spectrum {
        page.heading("Latency distribution");
        page.chart(&spectrum_chart(&[(run_id.clone(), spectrum)]))?;
    }
    super::notes::warnings_section(&mut page, data.analysis.as_ref().map_or(&[][..], |a| &a.warnings));
    analysis_section(&mut page, data);
    explanation_section(&mut page, data);
    for torn in &data.torn {
        page.paragraph(&torn.to_string(), Some("note"));
    }
    manifest_section(&mut page, &data.records);
    Ok(page.finish())
}

fn facts(page: &mut Page, data: &RunData) {
    let m = &data.records.manifest;
    let mut rows = vec![
        vec!["started".to_string(), m.started_at.clone()],
        vec!["workload".into(), m.workload.name.clone()],
        vec![
            "server".into(),
            m.server.as_ref().map_or("unknown".into(), |s| s.version.clone()),
        ],
        vec!["target".into(), m.target.clone()],
    ];
    if let Some(s) = data.summary() {
        rows.push(vec![
            "threads / duration".into(),
            format!("{} / {:.0} s (warmup {:.0} s)", s.threads, s.duration_s, s.warmup_s),
        ]);
        rows.push(vec![
            "arrival".into(),
            match (s.rate, &s.arrival) {
                (Some(r), Some(a)) => format!("{a:?} at {r} per second (open loop)").to_lowercase(),
                _ => "closed loop (each connection waits for its reply)".into(),
            },
        ]);
        if !s.rand_type.is_empty() {
            rows.push(vec!["rand type".into(), s.rand_type.clone()]);
        }
    }
    let h = &m.host;
    rows.push(vec![
        "host".into(),
        format!(
            "{} · {} CPUs · {:.1} GiB · {}",
            h.cpu_model.as_deref().unwrap_or("?"),
            h.logical_cpus.map_or("?".into(), |n| n.to_string()),
            h.mem_total_bytes.unwrap_or(0) as f64 / (1u64 << 30) as f64,
            h.os.as_deref().unwrap_or("?")
        ),
    ]);
    if let Some(lab) = &m.lab {
        rows.push(vec!["lab point".into(), format!("{} · {}", lab.experiment, lab.point)]);
        if let Some(snapshot) = &lab.snapshot {
            rows.push(vec!["lab data".into(), snapshot.clone()]);
        }
    }
    page.table(&["".into(), "".into()], &rows);
}

fn latency_row(name: &str, l: &LatencyBlock) -> Vec<String> {
    let f = |v: f64| format!("{v:.3}");
    vec![
        name.to_string(),
        l.count.to_string(),
        f(l.min),
        f(l.mean),
        f(l.p50),
        f(l.p95),
        f(l.p99),
        f(l.p999),
        f(l.max),
    ]
}

fn summary_tables(page: &mut Page, s: &Summary, workload: &str) {
    let mut rows = vec![
        vec![
            "transactions".to_string(),
            s.transactions.total.to_string(),
            format!("{:.2}", s.transactions.per_sec),
        ],
        vec![
            "queries".into(),
            s.queries.total.to_string(),
            format!("{:.2}", s.queries.per_sec),
        ],
        vec![
            "errors (retried)".into(),
            s.errors.total.to_string(),
            format!("{:.2}", s.errors.total as f64 / s.duration_s.max(1e-9)),
        ],
    ];
    for (class, n) in &s.errors.by_class {
        rows.push(vec![format!("  {class}"), n.to_string(), String::new()]);
    }
    rows.push(vec![
        "client CPU".into(),
        format!("{:.2} s", s.client.cpu_s),
        format!(
            "{:.0}% of a core, peak RSS {:.1} MiB",
            s.client.cpu_s * 100.0 / s.duration_s.max(1e-9),
            s.client.max_rss_bytes as f64 / (1u64 << 20) as f64
        ),
    ]);
    page.table(&["".into(), "total".into(), "per second".into()], &rows);
    let header: Vec<String> = [
        "response time (ms)",
        "count",
        "min",
        "mean",
        "p50",
        "p95",
        "p99",
        "p99.9",
        "max",
    ]
    .map(String::from)
    .to_vec();
    // A workload of one transaction type has a type of its own name holding the same
    // figures as all transactions: one row, named both ways.
    let same = |l: &LatencyBlock| {
        let a = &s.latency_ms;
        (l.count, l.mean, l.p50, l.p99, l.max) == (a.count, a.mean, a.p50, a.p99, a.max)
    };
    let twin = s
        .per_type
        .iter()
        .find(|(name, t)| name.as_str() == workload && same(&t.latency_ms))
        .map(|(name, _)| name.clone());
    let all = match &twin {
        Some(name) => format!("all transactions ({name})"),
        None => "all transactions".to_string(),
    };
    let mut rows = vec![latency_row(&all, &s.latency_ms)];
    if let Some(service) = &s.service_time_ms {
        rows.push(latency_row("service time", service));
    }
    for (name, t) in s.per_type.iter().filter(|(name, _)| Some(*name) != twin.as_ref()) {
        rows.push(latency_row(name, &t.latency_ms));
    }
    page.table(&header, &rows);
}

/// Throughput, response time and the telemetry panels, each against run time, all over the
/// same span (from the start to the last interval or telemetry sample).
pub fn time_charts(data: &RunData) -> Vec<Chart> {
    let mut charts = time_charts_unaligned(data);
    let end = data
        .intervals
        .iter()
        .map(|r| r.end_s)
        .chain(data.telemetry.iter().map(|s| s.t_s))
        .fold(0.0, f64::max);
    for c in &mut charts {
        if end > 0.0 {
            c.x_range = Some((0.0, end));
        }
        c.x_group = Some("time".into());
    }
    charts
}

fn time_charts_unaligned(data: &RunData) -> Vec<Chart> {
    let bands = data.bands();
    let time = "time since start (s)";
    // An interval's rate is drawn at its middle, so a stall's dip sits inside its band.
    let mid = |r: &IntervalRecord| (r.start_s + r.end_s) / 2.0;
    let mut charts = Vec::new();

    let mut tps = Chart::new("Throughput per interval", time, "transactions/s");
    tps.series.push(Series::new(
        "TPS",
        PALETTE[0],
        data.intervals.iter().map(|r| (mid(r), r.tps)).collect(),
    ));
    tps.bands = bands.clone();
    charts.push(tps);

    let mut lat = Chart::new("Response time per interval", time, "response time (ms)");
    for (i, (name, f)) in [
        (
            "p50",
            (|r: &IntervalRecord| r.latency_ms.p50) as fn(&IntervalRecord) -> f64,
        ),
        ("p95", |r| r.latency_ms.p95),
        ("p99", |r| r.latency_ms.p99),
    ]
    .into_iter()
    .enumerate()
    {
        lat.series.push(Series::new(
            name,
            PALETTE[i],
            data.intervals
                .iter()
                .filter(|r| r.transactions > 0)
                .map(|r| (mid(r), f(r)))
                .collect(),
        ));
    }
    lat.bands = bands.clone();
    charts.push(lat);

    if data.telemetry.is_empty() {
        return charts;
    }
    let mut ckpt = checkpoint_chart(data, "Checkpoint age and dirty pages".into());
    ckpt.bands = bands.clone();
    charts.push(ckpt);
    if let Some(mut pool) = buffer_pool_chart(data, "Buffer pool: pages read, freed and flushed from the LRU".into()) {
        pool.bands = bands.clone();
        charts.push(pool);
    }

    let disk = disk_written_most(&data.telemetry).map(str::to_owned);
    let mut io = Chart::new(
        match &disk {
            Some(d) => format!("I/O: disk {d} and InnoDB page writes"),
            None => "I/O: InnoDB page writes".to_string(),
        },
        time,
        "operations/s",
    );
    if let Some(d) = &disk {
        let field = |name: fn(&DiskIo) -> f64| {
            let d = d.clone();
            move |s: &TelemetryRow| s.server_os()?.disks.iter().find(|x| x.name == d).map(name)
        };
        io.series
            .push(Series::new("disk w/s", PALETTE[0], data.series(field(|x| x.w_s))));
        io.series
            .push(Series::new("disk r/s", PALETTE[5], data.series(field(|x| x.r_s))));
        io.series
            .push(Series::new("disk wrqm/s", PALETTE[6], data.series(field(|x| x.wrqm_s))));
        io.series
            .push(Series::new("disk utilisation %", PALETTE[3], data.series(field(|x| x.util_pct))).below());
        io.y2_label = Some("disk busy (%)".into());
        io.y2_range = Some((0.0, 100.0));
    }
    io.series.push(Series::new(
        "InnoDB pages written/s",
        PALETTE[1],
        data.series(|s| s.server.as_ref()?.pages_written_s),
    ));
    io.series.push(Series::new(
        "doublewrite pages/s",
        PALETTE[2],
        data.series(|s| s.server.as_ref()?.doublewrite_pages_s),
    ));
    // Pages flushed while writers waited: where this line rises, the checkpoint caught up.
    let sync_pages = data.series(|s| s.server.as_ref()?.sync_flush_pages_s);
    if sync_pages.iter().any(|(_, v)| *v > 0.0) {
        io.series
            .push(Series::new("InnoDB sync flush pages/s", STALL, sync_pages));
    }
    io.bands = bands.clone();
    charts.push(io);

    let mut cpu = Chart::new(
        "CPU: host (% of all cores) and the dbperf client (% of one core)",
        time,
        "host CPU (% of all cores)",
    );
    cpu.y_range = Some((0.0, 100.0));
    cpu.y2_label = Some("client (% of a core)".into());
    let all = |field: fn(&CpuUsage) -> f64| {
        move |s: &TelemetryRow| s.os.as_ref()?.cpus.iter().find(|c| c.cpu == "all").map(field)
    };
    cpu.series
        .push(Series::new("host user %", PALETTE[0], data.series(all(|c| c.user))));
    cpu.series
        .push(Series::new("host sys %", PALETTE[1], data.series(all(|c| c.sys))));
    cpu.series
        .push(Series::new("host iowait %", PALETTE[2], data.series(all(|c| c.iowait))));
    cpu.series.push(
        Series::new(
            "client % of a core",
            PALETTE[3],
            data.series(|s| Some(s.client.as_ref()?.cpu_pct)),
        )
        .below(),
    );
    cpu.bands = bands.clone();
    charts.push(cpu);

    let waits = top_waits(&data.telemetry, WAITS_SHOWN);
    let mut w = Chart::new("Top waits (Performance Schema)", time, "wait time per second (ms/s)");
    for (i, event) in waits.iter().enumerate() {
        let points = data
            .telemetry
            .iter()
            .filter_map(|s| {
                let server = s.server.as_ref()?;
                let len = server.interval_s.unwrap_or(1.0).max(1e-3);
                let ms = server
                    .waits
                    .iter()
                    .find(|x| &x.event == event)
                    .map_or(0.0, |x| x.time_ms);
                Some((sample_mid(s), ms / len))
            })
            .collect();
        w.series.push(Series::new(
            event.trim_start_matches("wait/synch/"),
            PALETTE[i % PALETTE.len()],
            points,
        ));
    }
    w.bands = bands;
    charts.push(w);
    charts
}

/// The middle of the time a telemetry sample covers.
/// The run's `innodb_max_dirty_pages_pct`, as a line on the dirty pages panel.
pub fn dirty_pages_limit(data: &RunData) -> Option<Limit> {
    let l = data
        .records
        .manifest
        .server
        .as_ref()
        .and_then(|s| s.variables.get("innodb_max_dirty_pages_pct"))
        .and_then(|v| v.parse::<f64>().ok())?;
    Some(Limit {
        y: l,
        label: format!("innodb_max_dirty_pages_pct {l:.0}"),
        color: INK,
        secondary: true,
    })
}

/// Checkpoint age in MiB with the sync (max) and async flush lines, and dirty pages (InnoDB's
/// own ratio, the one its limit is held against) with `innodb_max_dirty_pages_pct` below: the
/// second graph of the checkpoint studies.
pub(super) fn checkpoint_chart(data: &RunData, title: String) -> Chart {
    let mib = |v: f64| v / (1u64 << 20) as f64;
    let mut ckpt = Chart::new(title, "time since start (s)", "checkpoint age (MiB)");
    ckpt.y2_label = Some("dirty pages (%)".into());
    ckpt.y2_range = Some((0.0, 100.0));
    ckpt.series.push(Series::new(
        "checkpoint age",
        PALETTE[0],
        data.series(|s| s.server.as_ref()?.checkpoint_age_bytes.map(|b| mib(b as f64))),
    ));
    ckpt.series.push(
        Series::new(
            "dirty pages (% of data + free pages, InnoDB's ratio)",
            PALETTE[1],
            data.series(|s| s.server.as_ref()?.dirty_pages_pct),
        )
        .below(),
    );
    ckpt.limits.extend(dirty_pages_limit(data));
    let max = data
        .telemetry
        .iter()
        .filter_map(|s| s.server.as_ref()?.checkpoint_max_bytes.map(|b| b as f64))
        .fold(0.0, f64::max);
    if max > 0.0 {
        for (pct, label, color) in [
            (100.0, "max checkpoint age (sync flush)".to_string(), STALL),
            (
                ASYNC_FLUSH_PCT,
                format!("async flush ({ASYNC_FLUSH_PCT:.1}% of max)"),
                PALETTE[4],
            ),
        ] {
            ckpt.limits.push(Limit {
                y: mib(max * pct / 100.0),
                label,
                color,
                secondary: false,
            });
        }
    }
    ckpt
}

/// Pages read, freed ([`freed_per_sample`]: counted, or the free list's balance) and flushed
/// from the LRU per second (study 000's free pages/s); `None` without server telemetry.
pub(super) fn buffer_pool_chart(data: &RunData, title: String) -> Option<Chart> {
    let rows: Vec<&TelemetryRow> = data.telemetry.iter().collect();
    if !rows.iter().any(|r| r.server.is_some()) {
        return None;
    }
    let mut c = Chart::new(title, "time since start (s)", "pages/s");
    c.series.push(Series::new(
        "pages read/s",
        PALETTE[0],
        data.series(|s| s.server.as_ref()?.pages_read_s),
    ));
    let (freed, derived) = freed_per_sample(&rows);
    c.series.push(Series::new(
        if derived {
            "pages freed/s (derived: read + created + free-list growth)"
        } else {
            "pages freed/s"
        },
        PALETTE[1],
        rows.iter()
            .zip(freed)
            // A derived rate's rounding (2e-16 pages/s) is none.
            .filter_map(|(r, v)| Some((sample_mid(r), if v? < 1e-9 { 0.0 } else { v? })))
            .collect(),
    ));
    c.series.push(Series::new(
        "LRU flushes/s",
        PALETTE[2],
        data.series(|s| s.server.as_ref()?.lru_flushes_s),
    ));
    Some(c)
}

fn sample_mid(s: &TelemetryRow) -> f64 {
    s.t_s - s.interval_s.unwrap_or(1.0) / 2.0
}

/// The `n` wait events with the most time over all samples.
fn top_waits(telemetry: &[TelemetryRow], n: usize) -> Vec<String> {
    dbperf_results::telemetry::wait_totals(telemetry)
        .into_iter()
        .take(n)
        .map(|(e, _)| e)
        .collect()
}

/// Response time by percentile, one line per named spectrum, on a nines axis.
pub fn spectrum_chart(spectra: &[(String, &Spectrum)]) -> Chart {
    let mut c = Chart::new(
        "Response time by percentile (measured phase)",
        "percentile",
        "response time (ms)",
    );
    c.x_scale = Scale::Nines;
    c.y_scale = Scale::Log;
    for (i, (name, s)) in spectra.iter().enumerate() {
        c.series.push(Series::new(
            name.clone(),
            PALETTE[i % PALETTE.len()],
            s.points.iter().map(|(q, ms)| (1.0 / (1.0 - q), *ms)).collect(),
        ));
    }
    c
}

fn analysis_section(page: &mut Page, data: &RunData) {
    let Some(a) = &data.analysis else { return };
    page.heading("Analysis (dbperf analyze)");
    let s = &a.stability;
    page.paragraph(
        &format!(
            "Stability: {} — TPS CV {:.1}%; TPS min {:.0} / median {:.0} / sustained {:.0} / max {:.0}; \
             p99 min {:.1} / median {:.1} / max {:.1} ms.",
            s.verdict,
            s.tps_cv_pct,
            s.tps_min,
            s.tps_median,
            s.tps_sustained,
            s.tps_max,
            s.p99_min_ms,
            s.p99_median_ms,
            s.p99_max_ms
        ),
        None,
    );
    if a.stalls.is_empty() {
        page.paragraph(&a.stalls_line(), None);
    }
    for stall in &a.stalls {
        page.paragraph(&stall.render(a.telemetry_samples.is_some()), Some("stall"));
    }
    if let Some(line) = a.ramp_up_line() {
        page.paragraph(&line, Some("note"));
    }
    for note in &a.notes {
        page.paragraph(note, Some("note"));
    }
}

/// The run's explanation (the figures the studies read), one line per figure.
fn explanation_section(page: &mut Page, data: &RunData) {
    let Ok(e) = explain(data.records.dir.path(), &ExplainOptions::default()) else {
        return;
    };
    page.heading("Explanation (second half of the measured phase)");
    for line in e.render_text().lines().skip(1) {
        page.paragraph(line.trim(), None);
    }
}

fn manifest_section(page: &mut Page, records: &RunRecords) {
    let m = &records.manifest;
    page.heading("How this run was made");
    page.paragraph(
        &format!("dbperf {} · {}", m.dbperf_version, m.command_line.join(" ")),
        Some("note"),
    );
    if let Some(server) = &m.server {
        let rows: Vec<Vec<String>> = server
            .variables
            .iter()
            .map(|(k, v)| vec![k.clone(), v.clone()])
            .collect();
        page.details(
            &format!("Server variables ({}, {} of them)", server.version, rows.len()),
            &table_html(&["variable".into(), "value".into()], &rows),
        );
    }
    page.details(
        "Seeds",
        &format!(
            "<pre>{}</pre>",
            escape(&serde_json::to_string_pretty(&m.seeds).unwrap_or_default())
        ),
    );
}
