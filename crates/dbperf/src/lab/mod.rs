//! The lab: experiments that run many servers, configuration variants, workloads and user
//! counts in one command, and keep every run.
//!
//! | file | owns |
//! |---|---|
//! | `experiment.rs` | the TOML experiment file: parsing, checks, `file:line:column` errors |
//! | `workload.rs` | workload kinds (sysbench, tpcc, linkbench, tpch, pgbench, lua): their keys and checks, `restore` |
//! | `lua.rs` | users' scripts: Lua scripts (found, their declared options checked) and pgbench script files |
//! | `settings.rs` | server settings in experiment files: value syntax, sizes, `max_connections` vs `users` |
//! | `plan.rs` | expansion into server starts (groups) and runs (points), time estimates |
//! | `run.rs` | carrying a plan out: data sets prepared once and copied, restarts, pinning, resume |
//! | `mutations.rs` | (test) the example experiments mutated at random never panic the parser or the plan |

pub mod experiment;
pub mod lua;
pub mod plan;
pub mod run;
pub mod settings;
pub mod workload;

#[cfg(test)]
mod mutations;

pub use experiment::{Experiment, ExperimentError, Order};
pub use plan::Plan;

/// `text` with every character other than ASCII letters, digits and those in `keep` replaced
/// by `with`: names that are safe as file names and sandbox names.
pub(crate) fn name_safe(text: &str, keep: &[char], with: char) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || keep.contains(&c) {
                c
            } else {
                with
            }
        })
        .collect()
}
