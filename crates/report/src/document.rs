//! The documents the report pipeline (`crate::publish`) assembles and every exporter
//! (`crate::export`) writes out: one run ([`RunReport`]), `dbperf analyze`'s ([`AnalysisReport`]),
//! several runs or an experiment ([`RunsReport`], per workload [`WorkloadTables`], an
//! experiment's TPC-H points [`TpchPoints`]). Plain data: what they say is decided upstream,
//! how it reads downstream.

use std::path::PathBuf;

use dbperf_results::interval::IntervalRecord;
use dbperf_results::summary::Summary;
use dbperf_results::tpch::PowerReport;

use crate::analysis::analyze::Analysis;
use crate::analysis::explain::Explanation;
use crate::compare::Comparison;
use crate::setup::Setup;

/// What the report of one run holds.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// The run directory.
    pub dir: PathBuf,
    /// What the run was measured on.
    pub setup: Setup,
    /// `summary.json` (`None`: the run did not finish).
    pub summary: Option<Summary>,
    /// The stalls and the stability verdict (`None`: nothing to analyse).
    pub analysis: Option<Analysis>,
    /// The explanation of the run's figure (`None`: it cannot be explained).
    pub explanation: Option<Explanation>,
    /// The intervals, read for CSV only (empty otherwise).
    pub intervals: Vec<IntervalRecord>,
}

/// What `dbperf analyze` reports of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalysisReport {
    /// What the run was measured on (`None`: its manifest could not be read).
    pub setup: Option<Setup>,
    /// The stalls and the stability verdict.
    pub analysis: Analysis,
    /// The explanation (`None`: it could not be made; the warning says why).
    pub explanation: Option<Explanation>,
}

/// What the report of several runs holds, in the order it is printed.
#[derive(Debug, Clone, Default)]
pub struct RunsReport {
    /// When every run is a TPC-H power test and a query timed out or failed: the DBT-3
    /// per-query table that shows them (`>T`, `failed`), which the comparisons' cells
    /// (finished queries only) cannot.
    pub queries_not_finished: Option<String>,
    /// Every run a TPC-H power test (`TpchTables::Compared`): `(run id, its report)`.
    pub power: Vec<(String, PowerReport)>,
    /// Per workload (by name), its tables.
    pub workloads: Vec<WorkloadTables>,
    /// An experiment's TPC-H points (`TpchTables::PerVariant`).
    pub tpch_points: Option<TpchPoints>,
    /// Points of the experiment with no finished run yet.
    pub unfinished: usize,
}

/// One workload's tables.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadTables {
    /// The workload.
    pub workload: String,
    /// One comparison per figure, the headline first, each with the setup of its columns.
    pub tables: Vec<(Comparison, Setup)>,
    /// Each point's explanation, one row of [`crate::analysis::explain::TABLE_HEADER`] per run
    /// that could be explained (empty when not asked for).
    pub explanations: Vec<Vec<String>>,
    /// Figures across the points, each a titled text block
    /// ([`crate::analysis::across`]: scaling over pinnings, wait profiles per server).
    pub across: Vec<String>,
}

/// An experiment's TPC-H points: the setup with one column per server, then one DBT-3 table
/// per workload and variant.
#[derive(Debug, Clone, PartialEq)]
pub struct TpchPoints {
    /// The setup, per server.
    pub setup: Setup,
    /// The tables' text (`crate::tpch::lab_tables`).
    pub tables: String,
}
