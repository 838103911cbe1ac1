//! Recording a run in the catalog from the run layer (`dbperf_run`'s `RunSession`): once as it
//! starts, so a killed run still shows up, and again at its end. A failure only warns, saying
//! what the run directory holds and how `dbperf results index` adds it later.

use std::path::Path;

use super::catalog::Catalog;
use super::RunDir;

/// What a run directory held when it was recorded in the catalog, for the warning when that fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunDirState {
    /// At the start of the run: the run is recorded again when it ends.
    Started,
    /// At the end, every file written.
    Complete,
    /// At the end, some file not (wholly) written: the warnings say which.
    Incomplete,
}

/// Records `dir` in the catalog of `root`. A failure only prints a warning: the catalog is an
/// index, and `dbperf results index` can add the run later.
pub fn record_in_catalog(root: &Path, dir: &RunDir, state: RunDirState) {
    if let Err(e) = Catalog::open(root).and_then(|mut c| c.record_run(dir)) {
        eprintln!("{}", catalog_warning(dir.run_id(), root, &e.to_string(), state));
    }
}

fn catalog_warning(run_id: &str, root: &Path, error: &str, state: RunDirState) -> String {
    let index = format!("`dbperf results index --results-dir {}`", root.display());
    let then = match state {
        RunDirState::Started => format!("it is recorded again when the run ends, and {index} adds it later"),
        RunDirState::Complete => format!("the run directory is complete, and {index} adds it later"),
        RunDirState::Incomplete => {
            format!("the run directory is incomplete (see the warnings), and {index} adds what it holds later")
        }
    };
    format!("warning: run {run_id} not recorded in the results catalog ({error}); {then}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_warning_claims_a_complete_run_directory_only_when_it_is() {
        let root = Path::new("/r");
        let at_start = catalog_warning("id", root, "disk full", RunDirState::Started);
        assert!(!at_start.contains("complete"), "{at_start}");
        assert!(at_start.contains("recorded again when the run ends"), "{at_start}");
        let lost = catalog_warning("id", root, "disk full", RunDirState::Incomplete);
        assert!(lost.contains("the run directory is incomplete"), "{lost}");
        let whole = catalog_warning("id", root, "disk full", RunDirState::Complete);
        assert!(whole.contains("the run directory is complete"), "{whole}");
    }
}
