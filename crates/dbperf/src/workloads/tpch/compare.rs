//! The per-query comparison of TPC-H runs, like the published DBT-3 tables: for each query
//! the baseline's median seconds, then each other run's median relative to it, `draw` when
//! the difference is under the noise threshold or the repetitions' min–max ranges overlap,
//! `>T` when it timed out, and min–max when the runs were repeated.

use super::power::{PowerReport, QuerySummary};

/// One column of the table.
pub struct Column<'a> {
    /// Header (e.g. server version or run id).
    pub label: String,
    pub report: &'a PowerReport,
}

/// Renders the table: rows are queries (and Power@Size), columns the runs, the first the
/// baseline. `threshold` is the relative difference under which a result is a draw (0.05).
pub fn table(columns: &[Column<'_>], threshold: f64) -> String {
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
                (Some(_), Some(o)) => relative(Spread::of(b.unwrap()), Spread::of(o), threshold),
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

/// A query's median seconds and, over two or more finished runs, their range.
#[derive(Clone, Copy, Debug)]
struct Spread {
    median: f64,
    range: Option<(f64, f64)>,
}

impl Spread {
    fn of(s: &QuerySummary) -> Spread {
        Spread {
            median: s.median.unwrap_or(0.0),
            range: match (s.min, s.max) {
                (Some(lo), Some(hi)) if hi > lo => Some((lo, hi)),
                _ => None,
            },
        }
    }
}

/// The other run's median seconds (with its range), and `+12%` (slower), `-30%` (faster) or
/// `draw`: a difference under `threshold`, or between runs whose min..max ranges overlap
/// (the noise of repetitions is larger than the difference).
fn relative(base: Spread, other: Spread, threshold: f64) -> String {
    let d = other.median / base.median.max(1e-9) - 1.0;
    let seconds = match other.range {
        Some((lo, hi)) => format!("{:.2} [{lo:.2}-{hi:.2}]", other.median),
        None => format!("{:.2}", other.median),
    };
    let overlap = matches!((base.range, other.range), (Some((a, b)), Some((c, e))) if a <= e && c <= b);
    if d.abs() < threshold {
        format!("{seconds} draw ({:+.0}%)", d * 100.0)
    } else if overlap {
        format!("{seconds} draw ({:+.0}%, ranges overlap)", d * 100.0)
    } else {
        format!("{seconds} {:+.0}%", d * 100.0)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_differences_and_draws() {
        let one = |median| Spread { median, range: None };
        let reps = |median, lo, hi| Spread {
            median,
            range: Some((lo, hi)),
        };
        assert_eq!(relative(one(10.0), one(10.3), 0.05), "10.30 draw (+3%)");
        assert_eq!(relative(one(10.0), one(13.0), 0.05), "13.00 +30%");
        assert_eq!(relative(one(10.0), one(5.0), 0.05), "5.00 -50%");
        // With repetitions: overlapping ranges are a draw whatever the medians say.
        assert_eq!(
            relative(reps(2.66, 2.31, 2.95), reps(2.94, 2.80, 3.10), 0.05),
            "2.94 [2.80-3.10] draw (+11%, ranges overlap)"
        );
        assert_eq!(
            relative(reps(0.32, 0.25, 0.34), reps(23.14, 22.9, 23.5), 0.05),
            "23.14 [22.90-23.50] +7131%"
        );
        assert_eq!(timeout_or_failed(1, Some(7200.0)), ">7200");
        assert_eq!(
            cell_seconds(Some(2.0), Some(1.0), Some(3.0), 0, None),
            "2.00 [1.00-3.00]"
        );
    }
}
