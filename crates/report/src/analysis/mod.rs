//! What a run's records mean, read beside the report and never inside the samplers: from
//! `intervals.jsonl` and the typed `telemetry.jsonl` rows ([`dbperf_results::telemetry`]).
//!
//! | file | owns |
//! |---|---|
//! | `pressure.rs` | run-wide pressure (checkpoint, dirty pages, top wait, client) and the figures the analysis reads off a telemetry row |
//! | `analyze.rs` | `dbperf analyze`: stalls, their causes, stability |
//! | `across.rs` | figures across an experiment's points: scaling over pinnings, wait profiles per server |
//! | `explain.rs` | each run's study explanation: last-N-minutes average and CV, checkpoint age against the redo, dirty pages against the limit, top waits, single-page flushes, page reads and frees |

pub mod across;
pub mod analyze;
pub mod explain;
pub mod pressure;
