//! A run directory opened for a run: [`OpenRun`] creates it, writes the manifest (with the lab
//! point, when `dbperf lab run` started the run) and records the catalog row when the run starts
//! and again when it ends, so a killed run still shows up.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use dbperf_driver::Target;
use dbperf_results::manifest::{NetworkRecord, ShardRecord};
use dbperf_results::options::RecordedOptions;
use dbperf_results::recording::{record_in_catalog, RunDirState};
use dbperf_results::{Manifest, ResultsError, RunDir, ServerFacts, WorkloadInfo, WriteLoss};

/// What every run records before it starts: the manifest's contents.
pub struct OpenRunSpec<'a> {
    /// Results root (`--results-dir`).
    pub results_dir: &'a Path,
    /// Workload name: run directory prefix, manifest `workload.name`.
    pub name: &'a str,
    /// The whole command line, for the manifest.
    pub argv: &'a [String],
    /// The workload's options, for the manifest.
    pub options: RecordedOptions,
    /// Seeds, for the manifest.
    pub seeds: serde_json::Value,
    /// The server (its URL is recorded without the password).
    pub target: &'a Target,
    /// Its version and variables.
    pub facts: ServerFacts,
    /// How the client reached the server (`None`: as the target says).
    pub network: Option<NetworkRecord>,
    /// The run's shard of a run on several clients.
    pub shard: Option<ShardRecord>,
    /// The database host, when it is not the client's (`--server-host`).
    pub server_host: Option<dbperf_results::manifest::ServerHostRecord>,
    /// The server's levels just before the workload starts.
    pub start_state: Option<dbperf_results::telemetry::StartState>,
}

/// A run directory with its manifest written and its catalog row recorded as started.
pub struct OpenRun {
    dir: RunDir,
    results_dir: PathBuf,
    server_version: String,
}

impl OpenRun {
    /// Creates the run directory under `spec.results_dir`, writes `manifest.json` (with the
    /// lab point from `DBPERF_LAB_POINT`, when a lab started the run) and records the run in
    /// the catalog as started, so a run that is killed still shows up.
    pub fn create(spec: OpenRunSpec<'_>) -> Result<OpenRun> {
        let dir = RunDir::create(spec.results_dir, spec.name)?;
        let mut manifest = Manifest::new(
            spec.argv,
            WorkloadInfo {
                name: spec.name.into(),
                options: spec.options,
            },
            &spec.target.redacted(),
        );
        manifest.seeds = spec.seeds;
        manifest.network = Some(
            spec.network
                .unwrap_or_else(|| super::place::ClientPath::direct(spec.target).record),
        );
        manifest.shard = spec.shard;
        manifest.server_host = spec.server_host;
        manifest.start_state = spec.start_state;
        if let Ok(point) = std::env::var("DBPERF_LAB_POINT") {
            manifest.lab = Some(
                serde_json::from_str(&point)
                    .context("DBPERF_LAB_POINT is not a lab point (set only by `dbperf lab run`)")?,
            );
        }
        let server_version = spec.facts.version.clone();
        manifest.server = Some(spec.facts);
        if let Err(e) = dir.write_json("manifest.json", &manifest) {
            // The directory was made just now, for this run: nothing of it is kept.
            let _ = std::fs::remove_dir_all(dir.path());
            let full =
                matches!(&e, ResultsError::Write { source, .. } if source.kind() == std::io::ErrorKind::StorageFull);
            if full {
                anyhow::bail!(
                    "the results directory {} is on a full disk ({e}): nothing was measured and nothing \
                     is left behind; free some space or give --results-dir on another disk",
                    spec.results_dir.display()
                );
            }
            return Err(e.into());
        }
        record_in_catalog(spec.results_dir, &dir, RunDirState::Started);
        Ok(OpenRun {
            dir,
            results_dir: spec.results_dir.to_path_buf(),
            server_version,
        })
    }

    /// The run directory.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// The server's version, as the manifest records it.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// Records the finished run in the catalog again (complete unless something was lost)
    /// and hands back its directory.
    pub fn end(self, losses: &[WriteLoss]) -> RunDir {
        let state = if losses.is_empty() {
            RunDirState::Complete
        } else {
            RunDirState::Incomplete
        };
        record_in_catalog(&self.results_dir, &self.dir, state);
        self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_results::catalog::Catalog;
    use dbperf_results::options::{TpchPowerOptions, WorkloadOptions};

    #[test]
    fn a_session_writes_the_manifest_and_records_the_run_at_start_and_end() {
        let tmp = tempfile::tempdir().unwrap();
        let target = Target::parse("mysql://sb:S3cret@127.0.0.1:3306/sbtest").unwrap();
        let argv = vec!["dbperf".to_string(), "tpch".into(), "power".into()];
        let options = RecordedOptions::new(
            None,
            WorkloadOptions::TpchPower(TpchPowerOptions {
                scale_factor: 0.01,
                ..Default::default()
            }),
        );
        let session = OpenRun::create(OpenRunSpec {
            results_dir: tmp.path(),
            name: "tpch-power",
            argv: &argv,
            options,
            seeds: serde_json::json!({ "qgen": 1 }),
            target: &target,
            facts: ServerFacts {
                version: "11.4.5-MariaDB".into(),
                variables: Default::default(),
            },

            network: None,
            shard: None,
            server_host: None,
            start_state: None,
        })
        .unwrap();
        let manifest = std::fs::read_to_string(session.dir().path().join("manifest.json")).unwrap();
        assert!(
            manifest.contains("tpch-power") && manifest.contains("11.4.5-MariaDB"),
            "{manifest}"
        );
        assert!(!manifest.contains("S3cret"), "{manifest}");
        let run_id = session.dir().run_id().to_string();
        let recorded = |catalog: &Catalog| {
            let (_, rows) = catalog
                .query(&format!("SELECT workload FROM runs WHERE run_id = '{run_id}'"))
                .unwrap();
            rows
        };
        // Recorded as soon as it starts, so a run killed midway still shows up.
        assert_eq!(
            recorded(&Catalog::open(tmp.path()).unwrap()),
            vec![vec!["tpch-power".to_string()]]
        );
        let dir = session.end(&[]);
        assert_eq!(dir.run_id(), run_id);
        assert_eq!(recorded(&Catalog::open(tmp.path()).unwrap()).len(), 1);
    }
}
