//! Several runs, or an experiment's finished points ([`RunsReport`](crate::document::RunsReport)): per workload, one
//! comparison per figure it is judged by ([`Metric::own`], or the `--metric` given), each with
//! the setup of its columns (an experiment's columns in its file's order, when asked); each point's
//! explanation; TPC-H runs compared like every workload or, for an experiment, as the DBT-3
//! per-query tables ([`TpchTables`]); the HTML page of the runs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dbperf_results::manifest::Manifest;
use dbperf_results::tpch::{PowerReport, TpchReport};
use dbperf_results::{RunDir, RunRecords};

use super::{check_threshold, read_error, Options, OwnFigures, PublishError, Published, RunRef, RunSet, TpchTables};
use crate::analysis::across::{scaling, wait_profiles};
use crate::analysis::explain::{explain, table_row, ExplainOptions, Explanation};
use crate::compare::{compare_runs, CompareOptions, Metric, RunInfo};
use crate::document::{RunsReport, TpchPoints, WorkloadTables};
use crate::format::Format;
use crate::html::experiment::experiment_page;
use crate::html::tpch::tpch_page;
use crate::setup::Setup;
use crate::tpch::{lab_tables, table, Column, TpchPoint};

/// Runs read for comparing: each one's figures, and the manifests by run id (for the setup).
pub(super) struct ReadRuns {
    pub infos: Vec<RunInfo>,
    pub manifests: BTreeMap<String, Manifest>,
}

/// Reads the runs in `dirs` for comparing.
pub(super) fn read<'a>(dirs: impl Iterator<Item = &'a PathBuf>) -> Result<ReadRuns, PublishError> {
    let mut read = ReadRuns {
        infos: Vec::new(),
        manifests: BTreeMap::new(),
    };
    for dir in dirs {
        let records = RunRecords::read(dir).map_err(read_error(dir))?;
        let info = RunInfo::from_records(&records)?;
        read.manifests.insert(info.run_id.clone(), records.manifest);
        read.infos.push(info);
    }
    Ok(read)
}

/// The report of the runs of `set`.
pub(super) fn report(set: &RunSet, opts: &Options) -> Result<Published, PublishError> {
    check_threshold(opts.threshold_pct)?;
    let dirs: Vec<PathBuf> = set.runs.iter().map(|r| r.dir.clone()).collect();
    let mut out = Published::default();
    let mut report = RunsReport {
        unfinished: set.unfinished,
        ..RunsReport::default()
    };
    if opts.tpch == TpchTables::Compared {
        if let Some(power) = power_runs(&dirs)? {
            if opts.html {
                out.html = Some(tpch_page(&power)?);
            }
            report.queries_not_finished = queries_not_finished(&power, opts.threshold_pct);
            report.power = power;
        }
    }
    if opts.html && out.html.is_none() {
        out.html = Some(experiment_page(&set.name, &dirs)?);
    }

    // Each workload's runs, and an experiment's TPC-H points apart when they get their tables.
    let mut by_workload: BTreeMap<String, Vec<(RunInfo, &RunRef)>> = BTreeMap::new();
    let mut manifests = BTreeMap::new();
    let (mut tpch, mut tpch_manifests) = (Vec::new(), Vec::new());
    for run in &set.runs {
        let dir = &run.dir;
        if opts.tpch == TpchTables::PerVariant {
            if let Some(point) = TpchPoint::read(dir).map_err(read_error(dir))? {
                tpch.push(point);
                tpch_manifests.push(RunRecords::read(dir).map_err(read_error(dir))?.manifest);
                continue;
            }
        }
        let records = RunRecords::read(dir).map_err(read_error(dir))?;
        let info = RunInfo::from_records(&records)?;
        manifests.insert(info.run_id.clone(), records.manifest);
        by_workload.entry(info.workload.clone()).or_default().push((info, run));
    }
    for (workload, mut runs) in by_workload {
        // The file's order of servers, variants and pinnings, then users and repetitions (the
        // points' ids would sort `t16` before `t4`).
        if let Some(order) = set.order.as_ref().filter(|_| opts.file_order) {
            runs.sort_by_key(|(info, _)| {
                (
                    order.rank(info.lab.as_ref()),
                    info.threads,
                    info.lab.as_ref().map_or(0, |l| l.rep),
                )
            });
        }
        let explained = match opts.explanations && opts.format == Format::Text {
            true => explained(&runs),
            false => Vec::new(),
        };
        let explanations = explained
            .iter()
            .map(|(label, _, e)| table_row(label.clone(), e))
            .collect();
        let mut infos: Vec<RunInfo> = runs.into_iter().map(|(info, _)| info).collect();
        if let Some(order) = set.order.as_ref().filter(|_| opts.file_order) {
            infos.sort_by_key(|r| order.rank(r.lab.as_ref()));
        }
        let metrics = match (&opts.metric, opts.own) {
            (Some(m), _) => vec![m.clone()],
            // Text gets every figure the workload is judged by; a file one table, of the headline.
            (None, OwnFigures::HeadlineOutsideText) if opts.format != Format::Text => {
                Metric::own(&workload, &infos).into_iter().take(1).collect()
            }
            (None, _) => Metric::own(&workload, &infos),
        };
        let mut tables = Vec::with_capacity(metrics.len());
        for metric in metrics {
            let c = compare_runs(
                &infos,
                &CompareOptions {
                    by: opts.by,
                    metric,
                    threshold_pct: opts.threshold_pct,
                    baseline: opts.baseline.clone(),
                },
            )?;
            let setup = Setup::of_comparison(&c, &manifests);
            tables.push((c, setup));
        }
        // What the studies worked out by hand across the points (text, with the explanations).
        let mut across = Vec::new();
        if !explained.is_empty() {
            if let Some(headline) = Metric::own(&workload, &infos).first() {
                across.extend(scaling(headline, &infos));
            }
            let by_server: Vec<(String, &Explanation)> = explained.iter().map(|(_, s, e)| (s.clone(), e)).collect();
            across.extend(wait_profiles(&by_server));
        }
        report.workloads.push(WorkloadTables {
            workload,
            tables,
            explanations,
            across,
        });
    }
    if !tpch.is_empty() {
        let servers = set.order.as_ref().map(|o| o.servers.clone()).unwrap_or_default();
        report.tpch_points = Some(TpchPoints {
            setup: Setup::by_lab_server(&tpch_manifests, &servers),
            tables: lab_tables(&mut tpch, &servers, opts.threshold_pct, opts.baseline.as_deref()),
        });
    }
    out.stdout = opts.format.exporter().runs(&report);
    Ok(out)
}

/// Each run's power report when every run is a TPC-H power test; `None` otherwise.
fn power_runs(dirs: &[PathBuf]) -> Result<Option<Vec<(String, PowerReport)>>, PublishError> {
    let mut runs = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let d = RunDir::open(dir).map_err(read_error(dir))?;
        match TpchReport::read(&d).map_err(read_error(dir))? {
            Some(TpchReport::Power(p)) => runs.push((d.run_id().to_string(), p)),
            _ => return Ok(None),
        }
    }
    Ok((!runs.is_empty()).then_some(runs))
}

/// The DBT-3 table of power runs of which a query timed out or failed; `None` when every
/// query finished.
fn queries_not_finished(power: &[(String, PowerReport)], threshold_pct: f64) -> Option<String> {
    let unfinished = |p: &PowerReport| p.queries.iter().any(|q| q.timeouts > 0 || q.errors > 0);
    if !power.iter().any(|(_, p)| unfinished(p)) {
        return None;
    }
    let columns: Vec<Column<'_>> = power
        .iter()
        .map(|(id, report)| Column {
            label: format!("{} {id}", report.server_version),
            report,
        })
        .collect();
    Some(format!(
        "Per query, with the queries that timed out (>T) or failed:\n{}\n",
        table(&columns, threshold_pct)
    ))
}

/// Each run's explanation row (labelled by what varies: [`RunInfo::label`]), in the set's
/// order; runs that cannot be explained (no telemetry) are left out.
fn explained(runs: &[(RunInfo, &RunRef)]) -> Vec<(String, String, Explanation)> {
    runs.iter()
        .filter_map(|(info, run)| {
            let label = info.label();
            let server = info.lab.as_ref().map_or_else(
                || info.server_version.clone().unwrap_or_else(|| info.run_id.clone()),
                |l| l.server.clone(),
            );
            Some((label, server, explain(&run.dir, &ExplainOptions::default()).ok()?))
        })
        .collect()
}
