//! What a command named, as run directories. A run is a directory with a `manifest.json`
//! (every run writes it first), given as a path or as a run id under `--results-dir`; an
//! experiment is the lab's, which hands its finished points in as a [`RunSet`] (the lab's
//! state file is the lab's own: this crate, below the lab, does not read it).

use std::path::{Path, PathBuf};

use dbperf_results::LabPoint;

use super::PublishError;

/// Whether `p` is a run directory.
pub fn is_run_dir(p: &Path) -> bool {
    p.join("manifest.json").is_file()
}

/// The run directory `given` names: itself, or the run id under `results_dir`.
pub fn run_dir(given: &str, results_dir: &Path) -> Option<PathBuf> {
    let path = PathBuf::from(given);
    if is_run_dir(&path) {
        return Some(path);
    }
    let under = results_dir.join(given);
    is_run_dir(&under).then_some(under)
}

/// The run directories directly inside `dir`, or inside its `runs/` (a directory a script
/// gathered runs into, such as an older demo's), sorted; `None` when there are none.
pub fn runs_under(dir: &Path) -> Option<Vec<PathBuf>> {
    [dir.to_path_buf(), dir.join("runs")].into_iter().find_map(|d| {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(&d)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| is_run_dir(p))
            .collect();
        runs.sort();
        (!runs.is_empty()).then_some(runs)
    })
}

/// One run of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRef {
    /// Its directory.
    pub dir: PathBuf,
    /// The lab point it finished, when it is an experiment's.
    pub point: Option<String>,
}

/// An experiment file's order of its servers, variants and pinnings (by label): the columns of
/// an experiment's tables come in it, the file's first server the baseline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileOrder {
    /// Server labels.
    pub servers: Vec<String>,
    /// Variant names.
    pub variants: Vec<String>,
    /// Pinning names.
    pub pinnings: Vec<String>,
}

impl FileOrder {
    /// Where a run's server, variant and pinning come in the file (unknown ones last); a stable
    /// sort by it keeps the runs' order within each.
    pub fn rank(&self, lab: Option<&LabPoint>) -> (usize, usize, usize) {
        let Some(lab) = lab else {
            return (usize::MAX, usize::MAX, usize::MAX);
        };
        let at = |list: &[String], name: &str| list.iter().position(|s| s == name).unwrap_or(usize::MAX);
        (
            at(&self.servers, &lab.server),
            at(&self.variants, &lab.variant),
            at(&self.pinnings, &lab.pinning),
        )
    }
}

/// The runs of one report: an experiment's finished points, or runs named one by one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSet {
    /// What the report is titled: the experiment's name, `N runs`, or nothing for one run.
    pub name: String,
    /// The runs (an experiment's in the order of its point ids).
    pub runs: Vec<RunRef>,
    /// The experiment file's order, when the runs are an experiment's and its file could be read.
    pub order: Option<FileOrder>,
    /// Points of the experiment with no finished run yet.
    pub unfinished: usize,
}

impl RunSet {
    /// Runs named one by one, titled `name`.
    pub fn of_dirs(name: String, dirs: impl IntoIterator<Item = PathBuf>) -> RunSet {
        RunSet {
            name,
            runs: dirs.into_iter().map(|dir| RunRef { dir, point: None }).collect(),
            ..RunSet::default()
        }
    }
}

/// What `dbperf report` was given.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    /// One run.
    Run(PathBuf),
    /// Several runs, or an experiment.
    Runs(RunSet),
}

impl Subject {
    /// `targets` as `dbperf report` takes them: one run directory or run id, an experiment's
    /// name (looked up by `experiment`, which says which runs the experiment finished, `None`
    /// when there is no such experiment), or several runs.
    pub fn resolve<E>(
        targets: &[String],
        results_dir: &Path,
        experiment: impl FnOnce(&str) -> Result<Option<RunSet>, E>,
    ) -> Result<Subject, PublishError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if let [one] = targets {
            if let Some(dir) = run_dir(one, results_dir) {
                return Ok(Subject::Run(dir));
            }
            if let Some(dirs) = runs_under(Path::new(one)) {
                return Ok(Subject::Runs(RunSet::of_dirs(one.clone(), dirs)));
            }
            return match experiment(one).map_err(|e| PublishError::Experiment(e.into()))? {
                Some(set) if set.runs.is_empty() => Err(PublishError::NothingFinished(one.clone())),
                Some(set) => Ok(Subject::Runs(set)),
                None => Err(PublishError::NotFound {
                    given: one.clone(),
                    results_dir: results_dir.display().to_string(),
                }),
            };
        }
        let dirs = targets
            .iter()
            .map(|t| {
                run_dir(t, results_dir).ok_or_else(|| PublishError::RunNotFound {
                    given: t.clone(),
                    results_dir: results_dir.display().to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Subject::Runs(RunSet::of_dirs(format!("{} runs", dirs.len()), dirs)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(root: &Path, id: &str) -> PathBuf {
        let dir = root.join(id);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("manifest.json"), "{}").unwrap();
        dir
    }

    fn none(_: &str) -> Result<Option<RunSet>, std::io::Error> {
        Ok(None)
    }

    #[test]
    fn a_directory_of_runs_is_reported_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let runs = tmp.path().join("old-demo").join("runs");
        let (a, b) = (run(&runs, "a"), run(&runs, "b"));
        let given = tmp.path().join("old-demo").display().to_string();
        match Subject::resolve(std::slice::from_ref(&given), Path::new("/nonexistent"), none).unwrap() {
            Subject::Runs(set) => {
                assert_eq!(set.name, given);
                let dirs: Vec<PathBuf> = set.runs.into_iter().map(|r| r.dir).collect();
                assert_eq!(dirs, [a, b]);
            }
            other => panic!("{other:?}"),
        }
        // A directory with no runs is for the experiment lookup to find, or not.
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert!(Subject::resolve(&[empty.display().to_string()], tmp.path(), none).is_err());
    }

    #[test]
    fn runs_are_found_by_path_or_id_and_an_experiment_through_the_lab() {
        let tmp = tempfile::tempdir().unwrap();
        let a = run(tmp.path(), "a");
        run(tmp.path(), "b");
        assert_eq!(
            Subject::resolve(&["a".into()], tmp.path(), none).unwrap(),
            Subject::Run(a.clone())
        );
        let path = a.display().to_string();
        assert_eq!(
            Subject::resolve(&[path], Path::new("/nonexistent"), none).unwrap(),
            Subject::Run(a.clone())
        );
        let Subject::Runs(set) = Subject::resolve(&["a".into(), "b".into()], tmp.path(), none).unwrap() else {
            panic!()
        };
        assert_eq!((set.name.as_str(), set.runs.len()), ("2 runs", 2));
        let e = Subject::resolve(&["a".into(), "zz".into()], tmp.path(), none).unwrap_err();
        assert!(e.to_string().starts_with("run \"zz\" not found"), "{e}");
        let e = Subject::resolve(&["zz".into()], tmp.path(), none)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"zz\" is neither a run directory") && e.contains("/lab`)"),
            "{e}"
        );
        let lab = |name: &str| -> Result<Option<RunSet>, std::io::Error> {
            Ok((name == "sweep").then(|| RunSet::of_dirs(name.into(), [a.clone()])))
        };
        assert!(matches!(
            Subject::resolve(&["sweep".into()], tmp.path(), lab).unwrap(),
            Subject::Runs(s) if s.name == "sweep"
        ));
        let empty = |_: &str| -> Result<Option<RunSet>, std::io::Error> { Ok(Some(RunSet::default())) };
        let e = Subject::resolve(&["sweep".into()], tmp.path(), empty).unwrap_err();
        assert!(e.to_string().contains("has no finished run yet"), "{e}");
    }

    #[test]
    fn the_file_order_ranks_servers_then_variants_then_pinnings() {
        let order = FileOrder {
            servers: vec!["mysql".into(), "mariadb".into()],
            variants: vec!["on".into(), "off".into()],
            pinnings: Vec::new(),
        };
        let point = |server: &str, variant: &str| LabPoint {
            server: server.into(),
            variant: variant.into(),
            ..LabPoint::default()
        };
        assert_eq!(order.rank(Some(&point("mariadb", "on"))), (1, 0, usize::MAX));
        assert!(order.rank(Some(&point("mysql", "off"))) < order.rank(Some(&point("mariadb", "on"))));
        assert_eq!(order.rank(None), (usize::MAX, usize::MAX, usize::MAX));
    }
}
