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
        // Queries no run selected (`--queries`) get no row.
        if columns.iter().all(|c| c.report.queries.iter().all(|s| s.query != q)) {
            continue;
        }
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

/// One line per query that ran with a text of its own (`--queries-dir`): its file and
/// whether it answered as the standard text; an answer of its own starts with `error:`.
pub fn own_texts(report: &PowerReport) -> String {
    let mut out = String::new();
    for s in &report.queries {
        if let Some(t) = &s.text {
            let lead = if t.same_answer == Some(false) { "error: " } else { "" };
            out.push_str(&format!("{lead}Q{} ran the text of {}: {}\n", s.query, t.file, t.check));
        }
    }
    out
}

/// A plan's shape: the tables it reads in the order the plan lists them (the join order), each
/// with how it is read — MySQL's and MariaDB's `table_name` and `access_type` (`ALL`, `ref`,
/// `eq_ref`, `range`, ...), PostgreSQL's relation (its alias when it has one) and node type
/// (`Seq Scan`, `Index Scan`, ...): `nation n1:ALL`. Two plans with the same shape may still differ in
/// costs and row estimates; two with different shapes joined or read the tables otherwise.
pub fn plan_shape(plan: &serde_json::Value) -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(o) => {
                let text = |k: &str| o.get(k).and_then(|x| x.as_str());
                if let Some(table) = text("table_name") {
                    out.push(format!("{table}:{}", text("access_type").unwrap_or("?")));
                } else if let Some(relation) = text("Relation Name") {
                    let name = match text("Alias") {
                        Some(a) if a != relation => format!("{relation} {a}"),
                        _ => relation.to_string(),
                    };
                    out.push(format!("{name}:{}", text("Node Type").unwrap_or("?")));
                }
                for x in o.values() {
                    walk(x, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(plan, &mut out);
    out
}

/// A query whose plans differ between runs: each shape with the labels of the runs that had
/// it, and each run's whole plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanDifference {
    pub query: u8,
    /// `(labels, shape)`, in the columns' order of first appearance.
    pub shapes: Vec<(Vec<String>, Vec<String>)>,
    /// `(label, plan)` of every column with a plan.
    pub plans: Vec<(String, serde_json::Value)>,
}

/// The queries whose plan shapes ([`plan_shape`]) differ between the columns, comparing only
/// plans of one kind (MySQL-family with MySQL-family, PostgreSQL with PostgreSQL).
pub fn plan_differences(columns: &[Column<'_>]) -> Vec<PlanDifference> {
    let mut out = Vec::new();
    for q in 1..=22u8 {
        let plans: Vec<(&str, &serde_json::Value)> = columns
            .iter()
            .filter_map(|c| {
                let s = c.report.queries.iter().find(|s| s.query == q)?;
                Some((c.label.as_str(), s.plan.as_ref()?))
            })
            .collect();
        for postgres in [false, true] {
            let kind: Vec<&(&str, &serde_json::Value)> =
                plans.iter().filter(|(_, p)| is_postgres_plan(p) == postgres).collect();
            let mut shapes: Vec<(Vec<String>, Vec<String>)> = Vec::new();
            for (label, plan) in &kind {
                let shape = plan_shape(plan);
                match shapes.iter_mut().find(|(_, s)| *s == shape) {
                    Some((labels, _)) => labels.push(label.to_string()),
                    None => shapes.push((vec![label.to_string()], shape)),
                }
            }
            if shapes.len() > 1 {
                out.push(PlanDifference {
                    query: q,
                    shapes,
                    plans: kind.iter().map(|(l, p)| (l.to_string(), (*p).clone())).collect(),
                });
            }
        }
    }
    out
}

/// PostgreSQL's `EXPLAIN (FORMAT JSON)` is a list of `{"Plan": ...}`.
fn is_postgres_plan(plan: &serde_json::Value) -> bool {
    plan.get(0).and_then(|p| p.get("Plan")).is_some() || plan.get("Plan").is_some()
}

/// [`plan_differences`] as text: per query, each shape and the runs that had it.
pub fn plan_differences_text(diffs: &[PlanDifference]) -> String {
    let mut out = String::new();
    for d in diffs {
        out.push_str(&format!(
            "Q{}: the plans differ (tables in plan order, each with how it is read):\n",
            d.query
        ));
        for (labels, shape) in &d.shapes {
            out.push_str(&format!("  {}: {}\n", labels.join(", "), shape.join(" > ")));
        }
    }
    out
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
            for c in &columns {
                for line in own_texts(c.report).lines() {
                    let _ = writeln!(out, "{}: {line}", c.label);
                }
            }
            let diffs = plan_differences(&columns);
            if !diffs.is_empty() {
                out.push_str(&plan_differences_text(&diffs));
                out.push_str("(`dbperf report EXPERIMENT --html FILE` shows each plan whole.)\n");
            }
            if diffs.len()
                + columns
                    .iter()
                    .filter(|c| c.report.queries.iter().any(|q| q.text.is_some()))
                    .count()
                > 0
            {
                out.push('\n');
            }
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
    fn plan_shapes_follow_the_join_order_and_differences_are_found() {
        let mysql = |first: &str, access: &str| {
            serde_json::json!({"query_block": {"select_id": 1, "nested_loop": [
                {"table": {"table_name": first, "access_type": access}},
                {"table": {"table_name": "orders", "access_type": "eq_ref"}},
            ]}})
        };
        assert_eq!(
            plan_shape(&mysql("lineitem", "ALL")),
            vec!["lineitem:ALL".to_string(), "orders:eq_ref".into()]
        );
        let pg = serde_json::json!([{"Plan": {"Node Type": "Hash Join", "Plans": [
            {"Node Type": "Seq Scan", "Relation Name": "nation", "Alias": "n1"},
            {"Node Type": "Index Scan", "Relation Name": "orders", "Alias": "orders"},
        ]}}]);
        assert_eq!(
            plan_shape(&pg),
            vec!["nation n1:Seq Scan".to_string(), "orders:Index Scan".into()]
        );
        let report = |plan: serde_json::Value| PowerReport {
            queries: vec![QuerySummary {
                query: 7,
                params: Vec::new(),
                median: Some(1.0),
                min: Some(1.0),
                max: Some(1.0),
                timeouts: 0,
                errors: 0,
                plan: Some(plan),
                text: None,
            }],
            schema: dbperf_results::tpch::TPCH_SCHEMA.into(),
            test: "power".into(),
            scale_factor: 0.01,
            seed: 1,
            validation: false,
            server_version: "x".into(),
            timeout_seconds: None,
            cold: dbperf_results::tpch::Cold::Off,
            stream_order: vec![7],
            runs: Vec::new(),
            power_at_size: None,
            interrupted: false,
        };
        let (a, b, c, d) = (
            report(mysql("lineitem", "ALL")),
            report(mysql("lineitem", "ALL")),
            report(mysql("supplier", "ALL")),
            report(pg),
        );
        let col = |label: &str, report| Column {
            label: label.into(),
            report,
        };
        // The same shape everywhere, and a PostgreSQL plan (never compared with MySQL's): none.
        assert!(plan_differences(&[col("a", &a), col("b", &b), col("pg", &d)]).is_empty());
        let diffs = plan_differences(&[col("a", &a), col("b", &b), col("c", &c)]);
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].query, 7);
        assert_eq!(diffs[0].shapes[0].0, vec!["a".to_string(), "b".into()]);
        assert_eq!(diffs[0].plans.len(), 3);
        let text = plan_differences_text(&diffs);
        assert!(text.contains("Q7: the plans differ"), "{text}");
        assert!(text.contains("  c: supplier:ALL > orders:eq_ref"), "{text}");
    }

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
