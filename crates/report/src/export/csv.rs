//! CSV for machines, one header line and one line per item: a comparison one per cell
//! (threads or query, column, n, median, min, max, diff_pct, verdict, runs); a run one per
//! interval; TPC-H power runs one per run and query. The TPC-H tables of an experiment have no
//! CSV form and are printed as their text.

use super::{Exporter, Format, Unsupported};
use crate::compare::Comparison;
use crate::document::{AnalysisReport, RunReport, RunsReport};
use crate::setup::Setup;

/// CSV.
pub struct Csv;

impl Exporter for Csv {
    /// The table's cells; CSV has no setup block and no warnings.
    fn comparison(&self, c: &Comparison, _: Option<&Setup>, _: bool) -> String {
        let rows = c.rows.iter().flat_map(|row| {
            c.columns.iter().zip(&row.cells).filter_map(move |(col, cell)| {
                let cell = cell.as_ref()?;
                let verdict = serde_json::to_value(cell.verdict).expect("a verdict serializes");
                Some(vec![
                    row.label.clone(),
                    col.label.clone(),
                    cell.n.to_string(),
                    cell.median.to_string(),
                    cell.min.to_string(),
                    cell.max.to_string(),
                    cell.diff_pct.map_or(String::new(), |d| format!("{d:.3}")),
                    verdict.as_str().unwrap_or_default().to_string(),
                    cell.runs.join(" "),
                ])
            })
        });
        let header = [
            c.metric.row_header(),
            "column",
            "n",
            "median",
            "min",
            "max",
            "diff_pct",
            "verdict",
            "runs",
        ];
        lines(&header, rows)
    }

    /// TPC-H power runs: one line per run and query; else each comparison's cells.
    fn runs(&self, r: &RunsReport) -> String {
        if !r.power.is_empty() {
            let header = [
                "run", "server", "query", "median_s", "min_s", "max_s", "timeouts", "errors",
            ];
            let f = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
            let rows = r.power.iter().flat_map(|(id, p)| {
                p.queries.iter().map(move |q| {
                    vec![
                        id.clone(),
                        p.server_version.clone(),
                        q.query.to_string(),
                        f(q.median),
                        f(q.min),
                        f(q.max),
                        q.timeouts.to_string(),
                        q.errors.to_string(),
                    ]
                })
            });
            return lines(&header, rows);
        }
        let mut out: String = r
            .workloads
            .iter()
            .flat_map(|w| &w.tables)
            .map(|(c, _)| self.comparison(c, None, false))
            .collect();
        if let Some(t) = &r.tpch_points {
            out.push_str(&t.tables);
        }
        out
    }

    /// The run's intervals.
    fn run(&self, r: &RunReport) -> String {
        let header = [
            "index",
            "start_s",
            "end_s",
            "warmup",
            "threads",
            "tps",
            "qps",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "max_ms",
            "errors_per_sec",
        ];
        let rows = r.intervals.iter().map(|i| {
            vec![
                i.index.to_string(),
                i.start_s.to_string(),
                i.end_s.to_string(),
                i.warmup.to_string(),
                i.threads.to_string(),
                i.tps.to_string(),
                i.qps.to_string(),
                i.latency_ms.p50.to_string(),
                i.latency_ms.p95.to_string(),
                i.latency_ms.p99.to_string(),
                i.latency_ms.max.to_string(),
                i.errors_per_sec.to_string(),
            ]
        });
        lines(&header, rows)
    }

    fn analysis(&self, _: &AnalysisReport) -> Result<String, Unsupported> {
        Err(Unsupported {
            format: Format::Csv.name(),
            what: "an analysis",
            offered: "text or json (a run's intervals as CSV: `dbperf report RUN --format csv`)",
        })
    }
}

/// `header`, then one line per row.
fn lines(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let write = |w: &mut csv::Writer<Vec<u8>>| -> csv::Result<()> {
        w.write_record(header)?;
        for row in rows {
            w.write_record(&row)?;
        }
        w.flush()?;
        Ok(())
    };
    write(&mut w).expect("writing CSV to memory cannot fail");
    String::from_utf8(w.into_inner().expect("flushed")).expect("CSV of UTF-8 strings is UTF-8")
}

#[cfg(test)]
mod tests {
    use crate::compare::tests::sample;
    use crate::format::Format;

    #[test]
    fn csv_golden() {
        assert_eq!(
            sample().render(Format::Csv),
            "\
threads,column,n,median,min,max,diff_pct,verdict,runs
1,A,1,100,100,100,,baseline,a-t1
1,B,1,103,103,103,3.000,draw,b-t1
4,A,1,400,400,400,,baseline,a-t4
4,B,1,300,300,300,-25.000,worse,b-t4
"
        );
    }
}
