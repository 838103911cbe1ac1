//! The lab: experiments that run many servers, configuration variants, workloads and user
//! counts in one command, and keep every run.
//!
//! | file | owns |
//! |---|---|
//! | `experiment.rs` | the TOML experiment file: parsing, checks, `file:line:column` errors |
//! | `workload.rs` | workload kinds (sysbench, tpcc, linkbench, tpch, pgbench, lua): their keys and checks, `restore` |
//! | `lua.rs` | users' scripts: Lua scripts (found, their declared options checked) and pgbench script files |
//! | `settings.rs` | server settings in experiment files: value syntax, sizes, `max_connections` vs `users` |
//! | `target.rs` | servers that are already running (`target`): the URL and its password, settings applied in SQL and put back as found, settings that need a restart refused |
//! | `search.rs` | the `[search]` section (`lab tune`): parameters and their ranges, objective, constraints, budget |
//! | `tuner.rs` | choosing trials: the space as coordinates, the model (Bayesian optimisation), random and grid strategies |
//! | `tune.rs` | carrying a search out (`lab tune`): trials as lab points, re-measurement, confirmation, `tune.md` |
//! | `tune_html.rs` | `tune.html`: each parameter's trials and the model's partial dependence |
//! | `host.rs` | where a sandbox runs: this machine, or a database host driven over ssh (`host = "ssh://..."`) |
//! | `plan.rs` | expansion into server starts (groups) and runs (points), time estimates |
//! | `run.rs` | carrying a plan out: groups of points on a server started on a copy of their data set, restarts, pinning, state and resume |
//! | `data.rs` | data sets: prepared once (on a new datadir and kept, or into a running server), converted, checksummed, prewarmed |
//! | `point.rs` | one point as a child `dbperf`: its command line, one process or shards and a merge, its run directory and figure, why it failed |
//! | `finished.rs` | an experiment's finished points, for its report (`lab report`, `dbperf report NAME`) |
//! | `lock.rs` | one run of an experiment at a time (a lock saying who holds it); experiment names as single path components |
//! | `mutations.rs` | (test) the example experiments mutated at random never panic the parser or the plan |

mod data;
pub mod experiment;
pub mod finished;
mod host;
pub mod lock;
pub mod lua;
pub mod plan;
mod point;
pub mod run;
pub mod search;
pub mod settings;
pub mod target;
pub mod tune;
mod tune_html;
pub mod tuner;
pub mod workload;

#[cfg(test)]
mod mutations;

pub use experiment::{Experiment, ExperimentError, Order};
pub use lock::{check_experiment_name, parse_experiment_name, ExperimentLock};
pub use plan::Plan;

/// Options of the child `dbperf sysbench` or `dbperf lua` that the lab sets itself, per point
/// (threads, time, results) or from the server (target, driver, connection), so a workload's
/// `options` may not; `help` and `version` would print instead of running. Checked for the
/// sysbench and lua kinds alike; a sysbench workload also keeps `tables` and `table_size`
/// (its own keys).
pub(crate) const LAB_OWNED_OPTIONS: &[&str] = &[
    "threads",
    "time",
    "warmup_time",
    "report_interval",
    "results_dir",
    "summary_json",
    "target",
    "target_file",
    "events",
    "db_driver",
    "mysql_host",
    "mysql_port",
    "mysql_socket",
    "mysql_user",
    "mysql_password",
    "mysql_db",
    "pgsql_host",
    "pgsql_port",
    "pgsql_user",
    "pgsql_password",
    "pgsql_db",
    "help",
    "version",
];

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

/// Runs `f` on a runtime of its own (the lab's few SQL calls outside the points).
pub(crate) fn block_on<T>(f: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("starting an async runtime: {e}"))?
        .block_on(f)
}

/// `s` as part of a file name: never `.`, `..` or a hidden name, which would leave the
/// directory it is joined to.
pub(crate) fn safe(s: &str) -> String {
    let name = name_safe(s, &['-', '.'], '_');
    if name.is_empty() || name.starts_with('.') {
        format!("_{name}")
    } else {
        name
    }
}
