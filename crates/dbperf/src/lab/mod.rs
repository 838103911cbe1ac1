//! The lab: experiments that run many servers, configuration variants, workloads and user
//! counts in one command, and keep every run.
//!
//! | file | owns |
//! |---|---|
//! | `experiment.rs` | the TOML experiment file: parsing, checks, `file:line:column` errors |
//! | `plan.rs` | expansion into server starts (groups) and runs (points), time estimates |
//! | `run.rs` | carrying a plan out: data sets prepared once and copied, restarts, pinning, resume |

pub mod experiment;
pub mod plan;
pub mod run;

pub use experiment::{Experiment, ExperimentError, Order};
pub use plan::Plan;
