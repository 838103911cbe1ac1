//! One run: `dbperf report RUN` ([`RunReport`](crate::document::RunReport): the setup, the summary, the stalls and the
//! stability verdict, the explanation; the intervals for CSV; the run's HTML page) and
//! `dbperf analyze RUN` ([`AnalysisReport`](crate::document::AnalysisReport)).

use std::path::Path;

use dbperf_results::interval::IntervalRecord;
use dbperf_results::RunRecords;

use super::{read_error, Options, PublishError, Published};
use crate::analysis::analyze::{analyze, AnalyzeOptions};
use crate::analysis::explain::{explain, ExplainOptions};
use crate::document::{AnalysisReport, RunReport};
use crate::format::Format;
use crate::html::run::{run_page, RunData};
use crate::setup::Setup;

/// The report of the run in `dir`; its HTML page first when asked for.
pub(super) fn report(dir: &Path, opts: &Options) -> Result<Published, PublishError> {
    let mut out = Published::default();
    if opts.html {
        let data = RunData::read(dir).map_err(|source| PublishError::ReadRun {
            path: dir.to_path_buf(),
            source,
        })?;
        out.html = Some(run_page(&data)?);
        out.warnings.extend(data.torn.iter().map(ToString::to_string));
    }
    let records = RunRecords::read(dir).map_err(read_error(dir))?;
    let explain_opts = ExplainOptions::last(opts.last_s).map_err(PublishError::Options)?;
    let intervals = match opts.format {
        Format::Csv => {
            let read = records
                .dir
                .read_intervals::<IntervalRecord>()
                .map_err(read_error(dir))?;
            out.warnings.extend(read.torn.iter().map(ToString::to_string));
            read.records
        }
        _ => Vec::new(),
    };
    let report = RunReport {
        dir: dir.to_path_buf(),
        setup: Setup::of_run(records.dir.run_id(), &records.manifest),
        summary: records.summary,
        analysis: analyze(dir, &AnalyzeOptions::default()).ok(),
        explanation: explain(dir, &explain_opts).ok(),
        intervals,
    };
    out.stdout = opts.format.exporter().run(&report);
    Ok(out)
}

/// `dbperf analyze`'s report of the run in `dir`: the analysis stands on its own, so a run the
/// explanation cannot read still gets it (with a warning).
pub(super) fn analysis(
    dir: &Path,
    opts: &AnalyzeOptions,
    last_s: Option<f64>,
    format: Format,
) -> Result<Published, PublishError> {
    let analysis = analyze(dir, opts).map_err(|source| PublishError::Analyse {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut warnings = Vec::new();
    let explanation = match explain(dir, &ExplainOptions::last(last_s).map_err(PublishError::Options)?) {
        Ok(e) => Some(e),
        Err(e) => {
            warnings.push(format!("no explanation of {}: {e}", dir.display()));
            None
        }
    };
    let setup = RunRecords::read(dir)
        .ok()
        .map(|r| Setup::of_run(r.dir.run_id(), &r.manifest));
    let report = AnalysisReport {
        setup,
        analysis,
        explanation,
    };
    Ok(Published {
        stdout: format.exporter().analysis(&report)?,
        html: None,
        warnings,
    })
}
