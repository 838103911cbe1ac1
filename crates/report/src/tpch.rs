//! The per-query comparison of TPC-H power runs as text, like the published DBT-3 tables: for each
//! query the baseline's median seconds, then each other run's median relative to it, `draw`
//! by the one draw rule of [`dbperf_core::stats`] (within the band, in percent of the
//! baseline, or repetitions whose min–max ranges overlap), `>T` when it timed out, and min–max
//! when the runs were repeated. Only the rendering is here, from the `tpch.json` types of
//! [`dbperf_results::tpch`]; the statistics are in [`dbperf_core::stats`]. Used by
//! `dbperf tpch compare`, `dbperf report` and the HTML reports; [`lab_tables`] groups a lab
//! experiment's TPC-H points ([`TpchPoint`]) into one such table per workload and variant for
//! `dbperf lab report`.

use dbperf_core::stats::{judge, within_band, Spread, Verdict};
use dbperf_results::tpch::{PowerReport, QuerySummary, Status, TpchReport};
use dbperf_results::ResultsError;

/// One column of the table.
pub struct Column<'a> {
    /// Header (e.g. server version or run id).
    pub label: String,
    pub report: &'a PowerReport,
}

/// Renders the table: rows are queries (and Power@Size), columns the runs, the first the
/// baseline. `threshold_pct` is the draw band in percent of the baseline (5).
pub fn table(columns: &[Column<'_>], threshold_pct: f64) -> String {
    let Some(base) = columns.first() else {
        return String::new();
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header = vec!["query".to_string(), format!("{} (s)", base.label)];
    header.extend(columns[1..].iter().map(|c| c.label.clone()));
    rows.push(header);
    for q in 1..=22u8 {
        let mut row = vec![format!("Q{q}")];
        let b = base.report.queries.iter().find(|s| s.query == q);
        row.push(match b {
            Some(s) => cell_seconds(s.median, s.min, s.max, s.timeouts, base.report.timeout_seconds),
            None => "-".into(),
        });
        for c in &columns[1..] {
            let o = c.report.queries.iter().find(|s| s.query == q);
            row.push(match (b.and_then(|s| s.median), o) {
                (_, None) => "-".into(),
                (_, Some(o)) if o.median.is_none() => timeout_or_failed(o.timeouts, c.report.timeout_seconds),
                (None, Some(o)) => cell_seconds(o.median, o.min, o.max, 0, None),
                (Some(_), Some(o)) => relative(
                    spread_of(base.report, b.unwrap()),
                    spread_of(c.report, o),
                    threshold_pct,
                ),
            });
        }
        rows.push(row);
    }
    let mut power = vec!["Power@Size".to_string()];
    power.push(base.report.power_at_size.map_or("-".into(), |p| format!("{p:.1}")));
    for c in &columns[1..] {
        power.push(match (base.report.power_at_size, c.report.power_at_size) {
            (Some(b), Some(o)) => format!("{o:.1} ({:+.0}%)", (o / b - 1.0) * 100.0),
            (_, Some(o)) => format!("{o:.1}"),
            _ => "-".into(),
        });
    }
    rows.push(power);
    render(&rows)
}

fn cell_seconds(median: Option<f64>, min: Option<f64>, max: Option<f64>, timeouts: u32, limit: Option<f64>) -> String {
    match (median, min, max) {
        (Some(m), Some(lo), Some(hi)) if hi > lo => format!("{m:.2} [{lo:.2}-{hi:.2}]"),
        (Some(m), _, _) => format!("{m:.2}"),
        _ => timeout_or_failed(timeouts, limit),
    }
}

fn timeout_or_failed(timeouts: u32, limit: Option<f64>) -> String {
    match (timeouts, limit) {
        (t, Some(l)) if t > 0 => format!(">{l}"),
        _ => "failed".into(),
    }
}

/// A query's median seconds, min..max and how many repetitions finished.
fn spread_of(report: &PowerReport, s: &QuerySummary) -> Spread {
    let finished = report
        .runs
        .iter()
        .flat_map(|r| &r.queries)
        .filter(|t| t.query == s.query && t.status == Status::Ok)
        .count();
    let median = s.median.unwrap_or(0.0);
    Spread {
        median,
        min: s.min.unwrap_or(median),
        max: s.max.unwrap_or(median),
        n: finished.max(1),
    }
}

/// The other run's median seconds (with its range), and `+12%` (slower), `-30%` (faster) or
/// `draw` ([`judge`]; less time is better).
fn relative(base: Spread, other: Spread, threshold_pct: f64) -> String {
    let seconds = if other.max > other.min {
        format!("{:.2} [{:.2}-{:.2}]", other.median, other.min, other.max)
    } else {
        format!("{:.2}", other.median)
    };
    match judge(&other, &base, threshold_pct, false) {
        (Some(d), Verdict::Draw) if within_band(d, threshold_pct) => {
            format!("{seconds} draw ({d:+.0}%)")
        }
        (Some(d), Verdict::Draw) => format!("{seconds} draw ({d:+.0}%, ranges overlap)"),
        (Some(d), _) => format!("{seconds} {d:+.0}%"),
        (None, _) => seconds,
    }
}

fn render(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|v| v.len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(v, w)| format!("{v:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// A finished TPC-H point of an experiment.
pub struct TpchPoint {
    /// The point, from the run's manifest.
    pub lab: dbperf_results::LabPoint,
    /// A power test's report.
    pub report: Option<PowerReport>,
    /// Throughput@Size of a throughput test.
    pub throughput: Option<f64>,
}

impl TpchPoint {
    /// The TPC-H run in `dir` (`tpch.json`, no `summary.json`), `None` for other workloads;
    /// both files read typed.
    pub fn read(dir: &std::path::Path) -> Result<Option<TpchPoint>, ResultsError> {
        if dir.join("summary.json").is_file() {
            return Ok(None);
        }
        let run = dbperf_results::RunDir::open(dir)?;
        let Some(report) = TpchReport::read(&run)? else {
            return Ok(None);
        };
        let manifest: dbperf_results::Manifest = run.read_json("manifest.json")?;
        let lab = manifest.lab.unwrap_or_default();
        Ok(Some(match report {
            TpchReport::Power(p) => TpchPoint {
                lab,
                report: Some(p),
                throughput: None,
            },
            TpchReport::Throughput(t) => TpchPoint {
                lab,
                report: None,
                throughput: t.throughput_at_size,
            },
        }))
    }
}

/// The TPC-H points as the DBT-3 studies show them: per workload and variant, one column per
/// server (and repetition), each query's median relative to the baseline server (the first of
/// the file, or `baseline`), draws up to `threshold` percent; then throughput tests.
pub fn lab_tables(runs: &mut [TpchPoint], servers: &[String], threshold: f64, baseline: Option<&str>) -> String {
    use std::fmt::Write as _;
    let rank = |label: &str| {
        if baseline == Some(label) {
            0
        } else {
            1 + servers.iter().position(|s| s == label).unwrap_or(servers.len())
        }
    };
    runs.sort_by(|a, b| {
        (
            &a.lab.workload,
            &a.lab.variant,
            rank(&a.lab.server),
            &a.lab.server,
            a.lab.rep,
        )
            .cmp(&(
                &b.lab.workload,
                &b.lab.variant,
                rank(&b.lab.server),
                &b.lab.server,
                b.lab.rep,
            ))
    });
    let mut out = String::new();
    let reps = runs.iter().map(|r| r.lab.rep).max().unwrap_or(1);
    let mut i = 0;
    while i < runs.len() {
        let (workload, variant) = (runs[i].lab.workload.clone(), runs[i].lab.variant.clone());
        let group: Vec<&TpchPoint> = runs[i..]
            .iter()
            .take_while(|r| r.lab.workload == workload && r.lab.variant == variant)
            .collect();
        i += group.len();
        let label = |r: &TpchPoint| {
            if reps > 1 {
                format!("{} r{}", r.lab.server, r.lab.rep)
            } else {
                r.lab.server.clone()
            }
        };
        let columns: Vec<Column<'_>> = group
            .iter()
            .filter_map(|r| {
                r.report.as_ref().map(|report| Column {
                    label: label(r),
                    report,
                })
            })
            .collect();
        if !columns.is_empty() {
            let _ = writeln!(
                out,
                "## {workload} · {variant}: seconds per query (median of the repetitions inside each run, min-max), relative to {}; under {:.0}% is a draw\n",
                columns[0].label,
                threshold
            );
            out.push_str(&table(&columns, threshold));
            out.push('\n');
        }
        for r in group.iter().filter(|r| r.report.is_none()) {
            let _ = writeln!(
                out,
                "{workload} · {variant} · {}: Throughput@Size {}",
                label(r),
                r.throughput.map_or("-".into(), |t| format!("{t:.1}"))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_differences_and_draws() {
        let one = |median| Spread {
            median,
            min: median,
            max: median,
            n: 1,
        };
        let reps = |median, min, max| Spread { median, min, max, n: 3 };
        assert_eq!(relative(one(10.0), one(10.3), 5.0), "10.30 draw (+3%)");
        // The band's edge, in percent of the baseline as everywhere: a draw.
        assert_eq!(relative(one(10.0), one(10.5), 5.0), "10.50 draw (+5%)");
        assert_eq!(relative(one(10.0), one(13.0), 5.0), "13.00 +30%");
        assert_eq!(relative(one(10.0), one(5.0), 5.0), "5.00 -50%");
        // With repetitions: overlapping ranges are a draw whatever the medians say.
        assert_eq!(
            relative(reps(2.66, 2.31, 2.95), reps(2.94, 2.80, 3.10), 5.0),
            "2.94 [2.80-3.10] draw (+11%, ranges overlap)"
        );
        assert_eq!(
            relative(reps(0.32, 0.25, 0.34), reps(23.14, 22.9, 23.5), 5.0),
            "23.14 [22.90-23.50] +7131%"
        );
        assert_eq!(timeout_or_failed(1, Some(7200.0)), ">7200");
        assert_eq!(
            cell_seconds(Some(2.0), Some(1.0), Some(3.0), 0, None),
            "2.00 [1.00-3.00]"
        );
    }
}
