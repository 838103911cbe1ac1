//! `tpcc.json`, the TPC-C result file of a run directory (written by `dbperf tpcc run`): the
//! run in TPC-C's terms (NOTPM, tpmC when the run qualifies, the mix, each type's p90 against
//! its limit). The types only; computing them from the engine's outcome and the report text
//! are TPC-C's own (`cli/tpcc_report.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// File name in the run directory.
pub const TPCC_FILE: &str = "tpcc.json";

/// How the mix compares with the spec's minimum shares (clause 5.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mix {
    /// Every type at or above its minimum, or under it by no more than partial decks explain.
    Holds,
    /// A type further under its minimum than partial decks can explain.
    Below,
    /// Fewer than one deck (100 transactions) per terminal: partial decks explain any mix.
    TooShort,
}

/// One transaction type's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeResult {
    /// Completed (New-Order: including the expected rollbacks).
    pub count: u64,
    /// Share of all completed transactions.
    pub share: f64,
    /// The spec's minimum share (clause 5.2.3).
    pub min_share: f64,
    /// Response-time percentiles, milliseconds.
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The 90th-percentile limit, seconds (clause 5.2.5.3).
    pub limit_s: f64,
    /// p90 within the limit.
    pub within_limit: bool,
}

/// `tpcc.json`: the run in TPC-C's terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TpccResult {
    /// Warehouses.
    pub warehouses: u32,
    /// Measured seconds.
    pub measured_s: f64,
    /// New-Order transactions per minute (rolled-back ones included, as the spec counts them).
    pub notpm: f64,
    /// tpmC: NOTPM of a spec-mode run with the spec's keying and think times whose mix holds
    /// and whose p90s are within their limits; else null, and `why_no_tpmc` says why.
    pub tpmc: Option<f64>,
    /// What keeps the NOTPM from being a tpmC (empty when `tpmc` is set).
    pub why_no_tpmc: Vec<String>,
    /// All transactions per minute.
    pub tpm_total: f64,
    /// Per type, by name.
    pub types: BTreeMap<String, TypeResult>,
    /// New-Orders rolled back on the unused item (clause 2.4.2.3).
    pub rollbacks: u64,
    /// Attempts retried after a retryable error.
    pub retries: u64,
    /// Failed attempts by class.
    pub errors: BTreeMap<String, u64>,
    /// The mix against the minimum shares.
    pub mix: Mix,
    /// Every type's p90 within its limit.
    pub response_times_ok: bool,
    /// How Delivery runs.
    pub delivery: String,
}
