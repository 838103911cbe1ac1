//! TPC-H's final report text: the power test's per-query medians (with the run's RF1/RF2
//! and cold-run notes) and the throughput test's streams, refreshes, Ts, Throughput@Size
//! and QphH@Size.

use std::fmt::Write as _;

use super::compare::{table, Column};
use super::metrics::qphh;
use super::power::{Cold, PowerReport};
use super::throughput::ThroughputReport;

/// The power test's final report: the per-query medians, RF1/RF2 per run, cold-run notes.
pub fn power_text(r: &PowerReport) -> String {
    let mut out = format!(
        "TPC-H power test  SF {}  seed {}{}  server {}  runs {}{}\n",
        r.scale_factor,
        r.seed,
        if r.validation { " (validation parameters)" } else { "" },
        r.server_version,
        r.runs.len(),
        match r.cold {
            Cold::Off => String::new(),
            c => format!("  cold per {c:?}").to_lowercase(),
        }
    );
    out.push_str(&table(
        &[Column {
            label: "median".into(),
            report: r,
        }],
        dbperf_core::stats::DEFAULT_THRESHOLD_PCT,
    ));
    out.push_str(&dbperf_report::tpch::own_texts(r));
    for run in &r.runs {
        if let (Some(a), Some(b)) = (run.rf1_seconds, run.rf2_seconds) {
            out.push_str(&format!("run {}: RF1 {a:.2} s, RF2 {b:.2} s\n", run.rep));
        }
        for n in &run.cold_notes {
            out.push_str(&format!("run {}: {n}\n", run.rep));
        }
    }
    if r.interrupted {
        let finished: usize = r.runs.iter().map(|run| run.queries.len()).sum();
        let _ = writeln!(
            out,
            "Interrupted: the figures cover the {finished} queries that finished, in {} run(s)",
            r.runs.len()
        );
    }
    if r.power_at_size.is_none() {
        out.push_str(
            "Power@Size not computed (a query timed out or failed, refreshes were skipped, or the test was interrupted)\n",
        );
    }
    out
}

/// The throughput test's final report; QphH@Size when `power` (the `--power` run) has a
/// Power@Size.
pub fn throughput_text(report: &ThroughputReport, power: Option<&PowerReport>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "TPC-H throughput test  SF {}  {} streams  seed {}  server {}",
        report.scale_factor,
        report.streams.len(),
        report.seed,
        report.server_version
    );
    for s in &report.streams {
        let timeouts = s
            .queries
            .iter()
            .filter(|q| q.status != crate::tpch::runner::Status::Ok)
            .count();
        let _ = writeln!(
            out,
            "stream {}: {:.2} s{}",
            s.stream,
            s.seconds,
            if timeouts > 0 {
                format!(", {timeouts} queries timed out or failed")
            } else {
                String::new()
            }
        );
    }
    for p in &report.refresh {
        let _ = writeln!(
            out,
            "refresh set {}: RF1 {:.2} s, RF2 {:.2} s",
            p.set, p.rf1_seconds, p.rf2_seconds
        );
    }
    let _ = writeln!(out, "Ts {:.2} s", report.ts_seconds);
    match report.throughput_at_size {
        Some(t) => {
            let _ = writeln!(out, "Throughput@Size {t:.1}");
            if let Some(p) = power.and_then(|p| p.power_at_size) {
                let _ = writeln!(out, "QphH@Size {:.1} (with Power@Size {p:.1} from --power)", qphh(p, t));
            }
        }
        None if report.interrupted => {
            let finished: usize = report.streams.iter().map(|s| s.queries.len()).sum();
            let _ = writeln!(
                out,
                "Interrupted: the streams cover the {finished} queries that finished; Throughput@Size not computed"
            );
        }
        None => match report.streams_total {
            Some(total) => {
                let _ = writeln!(
                    out,
                    "Throughput@Size not computed: these are {} of the test's {total} streams (a shard's share, or a \
                     merge that left shards out); merge every shard's run directory with dbperf merge",
                    report.streams.len()
                );
            }
            None => {
                let _ = writeln!(out, "Throughput@Size not computed (a query timed out or failed)");
            }
        },
    }
    out
}
