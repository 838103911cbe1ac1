//! An experiment's finished points as the report pipeline takes them
//! ([`dbperf_report::publish::RunSet`]): the run directory of each point `state.json` lists as
//! done (so runs cut short by an interruption, or superseded by `--restart`, are left out), in
//! the order of the point ids; the file's order of servers, variants and pinnings from the
//! copy of the experiment file beside it; how many points failed. `dbperf lab report` and
//! `dbperf report NAME` both read an experiment through here.

use std::path::Path;

use anyhow::Result;

use dbperf_report::publish::{FileOrder, RunRef, RunSet};

use super::run::{lab_dir, load_state};
use super::Experiment;

/// The finished points of the experiment whose lab directory (`RESULTS_DIR/lab/NAME`, with its
/// `state.json`) is `dir`; `None` when `dir` is not one.
pub fn run_set_at(dir: &Path) -> Result<Option<RunSet>> {
    let (Some(name), Some(lab)) = (dir.file_name().and_then(|n| n.to_str()), dir.parent()) else {
        return Ok(None);
    };
    match lab.parent() {
        Some(results_dir) if lab.file_name().is_some_and(|n| n == "lab") && dir.join("state.json").is_file() => {
            run_set(results_dir, name)
        }
        _ => Ok(None),
    }
}

/// The finished points of experiment `name` under `results_dir`; `None` when it never ran
/// (no `state.json`).
pub fn run_set(results_dir: &Path, name: &str) -> Result<Option<RunSet>> {
    let dir = lab_dir(results_dir, name);
    if !dir.join("state.json").is_file() {
        return Ok(None);
    }
    let state = load_state(results_dir, name)?;
    // A file that no longer reads only costs the order: the columns then come as the runs do.
    let order = Experiment::load(&dir.join("experiment.toml")).ok().map(|e| FileOrder {
        servers: e.servers.iter().map(|s| s.label.clone()).collect(),
        variants: e.variants.iter().map(|v| v.name.clone()).collect(),
        pinnings: e.pinnings.iter().map(|p| p.name.clone()).collect(),
    });
    Ok(Some(RunSet {
        name: name.to_owned(),
        runs: state
            .done
            .into_iter()
            .map(|(point, done)| RunRef {
                dir: done.run_dir,
                point: Some(point),
            })
            .collect(),
        order,
        unfinished: state.failed.len(),
    }))
}
