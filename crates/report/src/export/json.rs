//! JSON for machines, one pretty-printed document per item: each comparison (schema
//! `dbperf.compare/1`) with its `setup` and its runs' warnings; a run (`run_dir`, `setup`,
//! `summary`, `analysis`, `explanation`); an analysis (its fields, with `explanation` and
//! `setup` beside them); TPC-H power runs as their reports. The TPC-H tables of an experiment
//! have no JSON form and are printed as their text.

use serde::Serialize;

use super::{Exporter, Unsupported};
use crate::analysis::analyze::Analysis;
use crate::analysis::explain::Explanation;
use crate::compare::Comparison;
use crate::document::{AnalysisReport, RunReport, RunsReport};
use crate::setup::Setup;

/// JSON.
pub struct Json;

impl Exporter for Json {
    fn comparison(&self, c: &Comparison, setup: Option<&Setup>, _: bool) -> String {
        #[derive(Serialize)]
        struct WithSetup<'a> {
            #[serde(flatten)]
            comparison: &'a Comparison,
            setup: &'a Setup,
        }
        match setup {
            Some(setup) => pretty(&WithSetup { comparison: c, setup }),
            None => pretty(c),
        }
    }

    /// TPC-H power runs: their reports; else each comparison.
    fn runs(&self, r: &RunsReport) -> String {
        if !r.power.is_empty() {
            let reports: Vec<_> = r.power.iter().map(|(_, p)| p).collect();
            return pretty(&reports);
        }
        let mut out: String = r
            .workloads
            .iter()
            .flat_map(|w| &w.tables)
            .map(|(c, setup)| self.comparison(c, Some(setup), true))
            .collect();
        if let Some(t) = &r.tpch_points {
            out.push_str(&t.tables);
        }
        out
    }

    fn run(&self, r: &RunReport) -> String {
        pretty(&serde_json::json!({
            "run_dir": r.dir,
            "setup": r.setup,
            "summary": r.summary,
            "analysis": r.analysis,
            "explanation": r.explanation,
        }))
    }

    fn analysis(&self, a: &AnalysisReport) -> Result<String, Unsupported> {
        /// The analysis's fields, and the explanation and the setup beside them.
        #[derive(Serialize)]
        struct AnalysisJson<'a> {
            #[serde(flatten)]
            analysis: &'a Analysis,
            explanation: Option<&'a Explanation>,
            setup: Option<&'a Setup>,
        }
        Ok(pretty(&AnalysisJson {
            analysis: &a.analysis,
            explanation: a.explanation.as_ref(),
            setup: a.setup.as_ref(),
        }))
    }
}

/// `value` pretty-printed, with a final newline.
fn pretty(value: &impl Serialize) -> String {
    let mut s = serde_json::to_string_pretty(value).expect("a report serializes");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use crate::compare::tests::sample;
    use crate::format::Format;

    #[test]
    fn json_has_the_schema_and_the_cells() {
        let v: serde_json::Value = serde_json::from_str(&sample().render(Format::Json)).unwrap();
        assert_eq!(v["schema"], "dbperf.compare/1");
        assert_eq!(v["by"], "server");
        assert_eq!(v["metric"], "tps");
        assert_eq!(v["rows"][1]["cells"][1]["verdict"], "worse");
        assert_eq!(v["rows"][1]["cells"][1]["diff_pct"], -25.0);
        assert_eq!(v["variables"]["warnings"][0]["name"], "performance_schema");
        assert_eq!(v["columns"][0]["runs"], serde_json::json!(["a-t1", "a-t4"]));
    }
}
