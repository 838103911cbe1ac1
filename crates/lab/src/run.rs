//! Carrying out a [`Plan`]: one sandbox per server (here or on its database host:
//! `host.rs`), data sets prepared once per kind (`sysbench prepare`, `tpcc prepare`,
//! `linkbench load`, `tpch prepare`, `pgbench init`, `lua SCRIPT prepare`: `data.rs`)
//! and copied into place with the server stopped, a restart per group and, for
//! `restore = "point"`, before every point (the snapshot each point started from, and on
//! request a checksum of its tables, go into its manifest), CPU pinning, every run kept
//! (`point.rs`), and a state file that lets a rerun resume where an interrupted one
//! stopped.
//!
//! Each run is a child `dbperf sysbench ... run`, `tpcc run`, `linkbench request`, `tpch
//! power|throughput`, `pgbench SCRIPT` (or `pgbench -f FILE ...`) or `lua SCRIPT run` (the same
//! binary), so every run has its own
//! process: its client CPU and memory are its own, its run directory is written exactly as a
//! hand-typed run's, and Ctrl-C reaches it directly and still writes its summary. The lab
//! tells the child which point it is through `DBPERF_LAB_POINT` (JSON of
//! [`dbperf_results::LabPoint`]), which the child's run stores in its manifest, and where to connect
//! through `DBPERF_TARGET`: never on its command line, where a password would show in `ps`.
//!
//! Files under `<results-dir>/lab/<experiment>/`: `experiment.toml` (a copy of the file of the
//! last `lab run`, its first line naming the original so that relative script paths in it
//! still resolve: [`super::experiment::ORIGIN_LINE`]), `state.json` (points done, with their run ids), `logs/` (each child's
//! output), `.lock` ([`super::ExperimentLock`]: one run of an experiment at a time). Prepared
//! data sets live under `$DBPERF_HOME/lab/<experiment>/data/` (with a `.lock` beside `data/`).
//! Every file the lab writes there is written without following a link planted in its place
//! (`dbperf_core::nofollow`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::data::{checksum_tables, golden_dir, prepare_data_set, prepare_on_running, prewarm, workload_settings};
use super::experiment::{Experiment, Server, Settle};
use super::host::{parse_settings, Sandboxes};
use super::plan::{eta, DataSet, Group, Plan, Point};
use super::point::{run_point, PointOutcome, RunPoint};
use dbperf_results::manifest::NOT_RESTORED;
use dbperf_results::LabPoint;
use dbperf_server::SandboxHome;

/// Where a lab run keeps things and how it behaves.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Root of the run directories (the runs land here like any other run).
    pub results_dir: PathBuf,
    /// Forget earlier progress and run every point again.
    pub restart: bool,
    /// Prepare data sets again even when a prepared copy exists.
    pub reprepare: bool,
}

/// `state.json`: what has been done.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct LabState {
    pub experiment: String,
    /// Point id → its finished run.
    pub done: BTreeMap<String, DoneRun>,
    /// Point id → how it failed last time (it is retried on the next `lab run`).
    #[serde(default)]
    pub failed: BTreeMap<String, String>,
}

/// A finished point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DoneRun {
    pub run_id: String,
    pub run_dir: PathBuf,
    /// Transactions (LinkBench: requests) per second; 0 for TPC-H.
    pub tps: f64,
    pub p95_ms: f64,
    pub finished_at: String,
    /// The workload's own figure: `tps` (sysbench, pgbench), `notpm` (TPC-C), `rps`
    /// (LinkBench), `geomean` (TPC-H power: the geometric mean of the query seconds, median
    /// over the repetitions), `throughput` (TPC-H throughput: Throughput@Size). Empty in older state files (sysbench: tps).
    #[serde(default)]
    pub metric: String,
    #[serde(default)]
    pub value: f64,
}

impl DoneRun {
    /// The progress line's figure: `1234 NOTPM (45.6 tps)`, `812.3 rps, p95 4.10 ms`, ...
    pub fn figure_text(&self) -> String {
        match self.metric.as_str() {
            "notpm" => format!(
                "{:.0} NOTPM ({:.1} tps, p95 {:.2} ms)",
                self.value, self.tps, self.p95_ms
            ),
            "rps" => format!("{:.1} rps, p95 {:.2} ms", self.value, self.p95_ms),
            "geomean" => format!("geomean {:.3} s per query", self.value),
            "throughput" => format!("Throughput@Size {:.1}", self.value),
            _ => format!("{:.1} tps, p95 {:.2} ms", self.tps, self.p95_ms),
        }
    }
}

/// How a lab run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabOutcome {
    /// Every point has a finished run.
    Complete { ran: usize, skipped: usize },
    /// Stopped by Ctrl-C or SIGTERM; a rerun resumes.
    Interrupted { ran: usize },
    /// Everything was attempted, some points failed (listed in the state file).
    Failed { ran: usize, failed: usize },
}

/// The directory of an experiment's lab files.
pub fn lab_dir(results_dir: &Path, experiment: &str) -> PathBuf {
    results_dir.join("lab").join(experiment)
}

/// Reads an experiment's state (empty when it has never run).
pub fn load_state(results_dir: &Path, experiment: &str) -> Result<LabState> {
    super::check_experiment_name(experiment).map_err(|m| anyhow!(m))?;
    let path = lab_dir(results_dir, experiment).join("state.json");
    // A link planted in its place is not read either: it would feed the lab another file.
    dbperf_core::nofollow::regular_or_absent(&path).with_context(|| format!("reading {}", path.display()))?;
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| format!("reading {}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LabState {
            experiment: experiment.to_owned(),
            ..LabState::default()
        }),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn save_state(dir: &Path, state: &LabState) -> Result<()> {
    let path = dir.join("state.json");
    dbperf_core::nofollow::write_atomic(&path, &serde_json::to_vec_pretty(state)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Set by Ctrl-C or SIGTERM; the pid of the running child gets the signal forwarded.
pub(crate) struct Interrupt {
    pub(crate) stop: AtomicBool,
    /// The running children (one per shard), sent SIGINT on Ctrl-C.
    pub(crate) children: std::sync::Mutex<Vec<i32>>,
}

fn install_interrupt() -> Arc<Interrupt> {
    let it = Arc::new(Interrupt {
        stop: AtomicBool::new(false),
        children: std::sync::Mutex::new(Vec::new()),
    });
    let handler = it.clone();
    let _ = ctrlc::set_handler(move || {
        handler.stop.store(true, Ordering::SeqCst);
        for &pid in handler.children.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            // SAFETY: kill has no memory preconditions; the child may already be gone.
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
    });
    it
}

/// Runs `plan`, resuming from its state file unless `opts.restart`.
pub fn run(plan: &Plan, opts: &LabOptions) -> Result<LabOutcome> {
    let e = &plan.experiment;
    let mut bench = LabBench::open(e, opts)?;
    let total = plan.points();
    let todo: usize = plan
        .groups
        .iter()
        .flat_map(|g| &g.points)
        .filter(|p| !bench.state.done.contains_key(&p.id))
        .count();
    let skipped = total - todo;
    if skipped > 0 {
        println!(
            "Resuming {}: {skipped} of {total} runs already done, {todo} to go",
            e.name
        );
    } else {
        println!(
            "Running {}: {total} runs, estimated {}",
            e.name,
            eta(Duration::from_secs_f64(plan.estimate()))
        );
    }
    let mut pace = Pace::new(
        plan.groups
            .iter()
            .filter(|g| g.points.iter().any(|p| !bench.state.done.contains_key(&p.id)))
            .map(|g| {
                (1 + plan.restores_in(g)) as f64 * plan.group_overhead_estimate(g)
                    + g.points
                        .iter()
                        .filter(|p| !bench.state.done.contains_key(&p.id))
                        .map(|p| plan.point_estimate(g, p))
                        .sum::<f64>()
            })
            .sum(),
    );
    let (mut ran, mut failed) = (0usize, 0usize);
    for group in &plan.groups {
        let end = bench.run_group(plan, group, &mut pace, &|_, done| format!("[{}/{total}]", done + 1))?;
        ran += end.ran;
        failed += end.failed;
        if end.interrupted {
            return Ok(LabOutcome::Interrupted { ran });
        }
    }
    if failed > 0 {
        Ok(LabOutcome::Failed { ran, failed })
    } else {
        Ok(LabOutcome::Complete { ran, skipped })
    }
}

/// The estimate of what is left, scaled by how fast things went so far (the ETA).
pub(crate) struct Pace {
    started: Instant,
    remaining: f64,
    spent: f64,
}

impl Pace {
    /// `remaining`: the estimated seconds of all that is to be done.
    pub(crate) fn new(remaining: f64) -> Pace {
        Pace {
            started: Instant::now(),
            remaining,
            spent: 0.0,
        }
    }

    /// Adds `secs` to the work (a data set that had to be prepared, more trials).
    pub(crate) fn add(&mut self, secs: f64) {
        self.remaining += secs;
    }

    /// Counts `secs` of the estimate as done.
    fn spend(&mut self, secs: f64) {
        self.spent += secs;
    }

    /// What is left, at the pace so far.
    pub(crate) fn left(&self) -> Duration {
        let left = (self.remaining - self.spent).max(0.0);
        let pace = if self.spent > 0.0 {
            self.started.elapsed().as_secs_f64() / self.spent
        } else {
            1.0
        };
        Duration::from_secs_f64(left * pace.clamp(0.5, 3.0))
    }
}

/// How a group's runs went.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct GroupEnd {
    pub ran: usize,
    pub failed: usize,
    /// Ctrl-C or SIGTERM: the caller stops, what finished is in the state file.
    pub interrupted: bool,
}

/// An open lab: its directory and state file, the sandbox home, the servers checked, Ctrl-C
/// caught. `lab run` runs a plan's groups through it; `lab tune` one trial's group at a time.
pub(crate) struct LabBench {
    pub dir: PathBuf,
    /// Held while the bench lives: no other `lab run` or `lab tune` of this experiment.
    _lock: super::ExperimentLock,
    pub state: LabState,
    pub home: SandboxHome,
    exe: PathBuf,
    interrupt: Arc<Interrupt>,
    results_dir: PathBuf,
    reprepare: bool,
    prepared: Vec<DataSet>,
}

impl LabBench {
    /// Creates the lab directory, copies the experiment file in, reads the state (forgotten
    /// with `opts.restart`), installs missing servers and checks their settings.
    pub(crate) fn open(e: &Experiment, opts: &LabOptions) -> Result<LabBench> {
        super::check_experiment_name(&e.name).map_err(|m| anyhow!(m))?;
        let dir = lab_dir(&opts.results_dir, &e.name);
        let home = SandboxHome::from_env()?;
        let lock = super::ExperimentLock::acquire(&e.name, &[&dir, &home.root().join("lab").join(&e.name)])?;
        let logs = dir.join("logs");
        dbperf_core::nofollow::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
        if let Ok(text) = std::fs::read_to_string(&e.path) {
            let origin = std::path::absolute(&e.path).unwrap_or_else(|_| e.path.clone());
            let _ = dbperf_core::nofollow::write_atomic(
                &dir.join("experiment.toml"),
                format!("{}{}\n{text}", super::experiment::ORIGIN_LINE, origin.display()).as_bytes(),
            );
        }
        let mut state = if opts.restart {
            LabState {
                experiment: e.name.clone(),
                ..LabState::default()
            }
        } else {
            load_state(&opts.results_dir, &e.name)?
        };
        // A point whose run directory has gone is not done.
        // (TPC-H's runs have a tpch.json where the others have a summary.json.)
        state.done.retain(|_, d| {
            d.run_dir.join("summary.json").is_file() || d.run_dir.join(dbperf_results::TPCH_FILE).is_file()
        });
        save_state(&dir, &state)?;
        if e.network.netns.is_some() {
            dbperf_run::network::check_privileges().map_err(|m| anyhow!("[network] client = \"netns\": {m}"))?;
        }
        check_servers(e, &home, true)?;
        Ok(LabBench {
            dir,
            _lock: lock,
            state,
            home,
            exe: std::env::current_exe().context("finding the dbperf binary")?,
            interrupt: install_interrupt(),
            results_dir: opts.results_dir.clone(),
            reprepare: opts.reprepare,
            prepared: Vec::new(),
        })
    }

    /// Whether Ctrl-C or SIGTERM arrived.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupt.stop.load(Ordering::SeqCst)
    }

    /// Runs the points of `group` not done yet: prepares its data set if no prepared copy
    /// exists, starts the server on a fresh copy with the group's settings, runs each point
    /// as a child and records it in the state file. `label(point, done)` starts each
    /// progress line (`done`: points finished so far).
    pub(crate) fn run_group(
        &mut self,
        plan: &Plan,
        group: &Group,
        pace: &mut Pace,
        label: &dyn Fn(&Point, usize) -> String,
    ) -> Result<GroupEnd> {
        let e = &plan.experiment;
        let mut end = GroupEnd::default();
        let todo: Vec<&Point> = group
            .points
            .iter()
            .filter(|p| !self.state.done.contains_key(&p.id))
            .collect();
        if todo.is_empty() {
            return Ok(end);
        }
        if self.interrupted() {
            end.interrupted = true;
            return Ok(end);
        }
        let (home, dir) = (&self.home, self.dir.clone());
        let server = &e.servers[group.server];
        let sandbox = sandbox_name(&e.name, group.server);
        let running = server.running();
        let sandboxes = match Sandboxes::of(server, home) {
            Ok(s) => s,
            Err(err) if super::host::unreachable(&err) => {
                return Ok(host_lost(&mut self.state, &dir, group, &todo, &err))
            }
            Err(err) => return Err(err),
        };
        let golden = golden_dir(&sandboxes.root(), plan, group);
        let server_host = server.host.as_ref().map(|h| &h.remote);
        if let (Some(r), false) = (running, self.prepared.contains(&group.data)) {
            if self.reprepare {
                bail!(
                    "--reprepare: server {:?} is already running (target), and the lab drops no tables there; drop the \
                     workload's tables yourself (`dbperf ... cleanup` drops only those dbperf created) and run again",
                    server.label
                );
            }
            prepare_on_running(plan, group, &r.url()?, &self.exe, &dir)?;
            self.prepared.push(group.data.clone());
        }
        if !self.prepared.contains(&group.data) {
            let prepared = (|| {
                if self.reprepare || !sandboxes.snapshot_ready(&golden)? {
                    prepare_data_set(plan, group, &sandboxes, &sandbox, &golden, &self.exe, &dir)?;
                    pace.add(plan.prepare_estimate(&group.data));
                    pace.spend(plan.prepare_estimate(&group.data));
                }
                Ok(())
            })();
            match prepared {
                Err(err) if super::host::unreachable(&err) => {
                    return Ok(host_lost(&mut self.state, &dir, group, &todo, &err))
                }
                other => other?,
            }
            self.prepared.push(group.data.clone());
        }
        if self.interrupted() {
            end.interrupted = true;
            return Ok(end);
        }
        let variant = &e.variants[group.variant];
        let pinning = &e.pinnings[group.pinning];
        println!(
            "== {} · {} · {} · data {} ({} runs)",
            server.label,
            variant.name,
            pinning.name,
            group.data.key(),
            todo.len()
        );
        pace.spend(plan.group_overhead_estimate(group));
        let fresh = Fresh {
            sandboxes: &sandboxes,
            sandbox: &sandbox,
            golden: &golden,
            server,
            variant,
            pinning,
            exe: &self.exe,
            plan,
            group,
            lab_dir: &dir,
        };
        // A running server: its settings as found are read before anything changes, and put
        // back when `applied` drops, whichever way this function returns (the end, an error,
        // Ctrl-C).
        let mut settings: Vec<(String, String)> = server.settings.clone();
        settings.extend(variant.settings.iter().cloned());
        let (mut url, applied) = match running {
            None => match fresh.start() {
                Ok(url) => (url, None),
                Err(err) if super::host::unreachable(&err) => {
                    return Ok(host_lost(&mut self.state, &dir, group, &todo, &err))
                }
                Err(err) => return Err(err),
            },
            Some(r) => {
                let applied = super::target::Applied::read(&server.label, r, &settings, &dir)?;
                applied.apply(&settings)?;
                let url = r.url()?;
                if e.prewarm {
                    prewarm(&self.exe, &url, group, plan, &dir)?;
                }
                (url, Some(applied))
            }
        };
        let stop = |sandboxes: &Sandboxes| {
            if running.is_none() {
                sandboxes.stop_quietly(&sandbox);
            }
        };
        let snapshot = match running {
            // The copy's own name: the label that prepared it (labels may share one).
            None => format!(
                "{}/{}",
                e.servers[group.data.server].label,
                golden.file_name().unwrap_or_default().to_string_lossy()
            ),
            // The lab cannot copy such a server's datadir: `not restored: SERVER/DATA+N`.
            Some(_) => format!("{NOT_RESTORED}{}/{}", server.label, group.data.key()),
        };
        let labels = super::plan::workload_labels(e);
        // Points run on the data since it was last copied in.
        let mut since_restore = 0u32;
        let mut settles = SettleTrack::new(e.settle);

        for point in todo {
            if self.interrupted() {
                stop(&sandboxes);
                save_state(&dir, &self.state)?;
                end.interrupted = true;
                return Ok(end);
            }
            let w = &e.workloads[point.workload];
            if let Some(applied) = &applied {
                applied.apply(&settings)?;
            } else if since_restore > 0 && plan.restores_before(point) {
                pace.spend(plan.group_overhead_estimate(group));
                url = match fresh.start() {
                    Ok(url) => url,
                    Err(err) if super::host::unreachable(&err) => {
                        let rest: Vec<&Point> = group
                            .points
                            .iter()
                            .filter(|p| !self.state.done.contains_key(&p.id))
                            .collect();
                        let lost = host_lost(&mut self.state, &dir, group, &rest, &err);
                        end.failed += lost.failed;
                        return Ok(end);
                    }
                    Err(err) => return Err(err),
                };
                since_restore = 0;
                settles.restored();
            }
            let data_checksum = if w.checksum {
                Some(checksum_tables(&url).with_context(|| format!("checksumming the tables before {}", point.id))?)
            } else {
                None
            };
            let lab = LabPoint {
                experiment: e.name.clone(),
                point: point.id.clone(),
                server: server.label.clone(),
                variant: variant.name.clone(),
                variant_settings: variant.settings.iter().cloned().collect(),
                server_settings: server
                    .settings
                    .iter()
                    .cloned()
                    .chain(workload_settings(server, &group.data))
                    .collect(),
                pinning: pinning.name.clone(),
                server_cpus: pinning.server_cpus.as_ref().map(|c| c.text.clone()),
                client_cpus: pinning.client_cpus.as_ref().map(|c| c.text.clone()),
                workload: labels[point.workload].clone(),
                kind: w.kind().name().to_string(),
                threads: point.users,
                rep: point.rep,
                snapshot: Some(if since_restore == 0 {
                    snapshot.clone()
                } else {
                    format!("{snapshot}+{since_restore}")
                }),
                data_checksum,
            };
            since_restore += 1;
            let settle = settles.next(w.params.changes_data());
            print!("{} {} ... ", label(point, self.state.done.len()), point.id);
            let _ = std::io::stdout().flush();
            let outcome = run_point(
                &RunPoint {
                    exe: &self.exe,
                    url: &url,
                    sandbox: &sandbox,
                    plan,
                    group,
                    point,
                    lab: &lab,
                    client_cpus: pinning.client_cpus.as_ref(),
                    results_dir: &self.results_dir,
                    lab_dir: &dir,
                    sql_only_telemetry: running.is_some(),
                    server_host,
                    settle,
                },
                &self.interrupt,
            );
            pace.spend(plan.point_estimate(group, point));
            match outcome {
                Ok(PointOutcome::Done(d)) => {
                    println!("{}  (ETA {})", d.figure_text(), eta(pace.left()));
                    self.state.failed.remove(&point.id);
                    self.state.done.insert(point.id.clone(), d);
                    end.ran += 1;
                }
                Ok(PointOutcome::Interrupted) => {
                    println!("interrupted");
                    self.state.failed.insert(point.id.clone(), "interrupted".into());
                    save_state(&dir, &self.state)?;
                    stop(&sandboxes);
                    end.interrupted = true;
                    return Ok(end);
                }
                Ok(PointOutcome::Failed(why)) | Err(why) => {
                    let why = format!("{why:#}");
                    println!("FAILED: {why}");
                    self.state.failed.insert(point.id.clone(), why);
                    end.failed += 1;
                }
            }
            save_state(&dir, &self.state)?;
        }
        stop(&sandboxes);
        drop(applied);
        Ok(end)
    }
}

/// Which points of one server start wait for the server to settle ([`Settle::before`]): it
/// follows the first point, the restores and the points that change the data.
struct SettleTrack {
    settle: Settle,
    first_of_start: bool,
    after_change: bool,
}

impl SettleTrack {
    fn new(settle: Settle) -> SettleTrack {
        SettleTrack {
            settle,
            first_of_start: true,
            after_change: true,
        }
    }

    /// The server was restarted on a restored copy of the data.
    fn restored(&mut self) {
        self.after_change = true;
    }

    /// The wait before the next point (`None`: it does not wait); `changes_data` when that
    /// point writes.
    fn next(&mut self, changes_data: bool) -> Option<Duration> {
        let wait = self.settle.before(self.first_of_start, self.after_change);
        (self.first_of_start, self.after_change) = (false, changes_data);
        wait.then_some(self.settle.max)
    }
}

/// The server host could not be reached to start `group`'s server: its points not done yet
/// fail with the reason, and the lab goes on with the next group (a later run retries them).
fn host_lost(state: &mut LabState, dir: &Path, group: &Group, todo: &[&Point], err: &anyhow::Error) -> GroupEnd {
    let why = format!("{err:#}");
    println!(
        "== FAILED: {} run(s) of data set {} not run: {why}",
        todo.len(),
        group.data.key()
    );
    for p in todo {
        state.failed.insert(p.id.clone(), why.clone());
    }
    if let Err(e) = save_state(dir, state) {
        eprintln!("warning: {e:#}");
    }
    GroupEnd {
        failed: todo.len(),
        ..GroupEnd::default()
    }
}

/// `lab-<experiment>-<n>`, short enough for a unix socket path.
fn sandbox_name(experiment: &str, server: usize) -> String {
    let short: String = super::name_safe(experiment, &['-', '_'], '-')
        .chars()
        .take(24)
        .collect();
    format!("lab-{short}-{}", server + 1)
}

/// Installs every server the plan needs that is missing, then checks every server's and
/// variant's settings against that server's own option list, so a typo fails now and not
/// an hour into the experiment.
pub fn check_servers(e: &Experiment, home: &SandboxHome, install: bool) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for (si, s) in e.servers.iter().enumerate() {
        // Only the variants that run on this server (`servers`, `[[exclude]]`): a setting one
        // server has is checked on that server alone.
        let variants: Vec<&super::experiment::Variant> = e.variants_on(si).collect();
        let spec = match &s.server {
            Server::Sandbox(spec) => *spec,
            Server::Running(running) => {
                // Every name the experiment changes on it, with where the file sets it.
                let mut names: Vec<(String, String)> = Vec::new();
                let whence = s
                    .settings
                    .iter()
                    .map(|(k, _)| (k, "the server's settings".to_owned()))
                    .chain(
                        variants
                            .iter()
                            .flat_map(|v| v.settings.iter().map(|(k, _)| (k, format!("variant {:?}", v.name)))),
                    );
                for (k, w) in whence {
                    if !names.iter().any(|(n, _)| n == k) {
                        names.push((k.clone(), w));
                    }
                }
                super::target::check_settings(&s.label, running, &names)?;
                continue;
            }
        };
        if let Some(host) = &s.host {
            // That host's own copy of the server's option list: every name of the server, its
            // variants and the search, checked in one ssh round trip.
            let mut all: Vec<(String, String)> = s.settings.clone();
            let searched = e.search.iter().flat_map(|search| {
                search
                    .parameters
                    .iter()
                    .map(|p| (p.name.clone(), p.domain.first_value()))
            });
            for (k, v) in variants.iter().flat_map(|v| v.settings.iter().cloned()).chain(searched) {
                if !all.iter().any(|(n, _)| *n == k) {
                    all.push((k, v));
                }
            }
            notes.extend(super::host::check_remote(s, &host.remote, &all, install)?);
            continue;
        }
        if home.installed(spec).is_none() {
            if let dbperf_server::Source::Added { .. } = spec.source {
                return Err(dbperf_server::ServerError::AddedMissing {
                    id: s.id.clone(),
                    dir: home.dist_root().join(&s.id),
                })
                .with_context(|| format!("server {:?}", s.label));
            }
            if !install {
                notes.push(format!(
                    "{} is not installed: `dbperf server install {}` (lab run installs it)",
                    s.id, s.id
                ));
                continue;
            }
            println!("Installing {} ...", s.id);
            home.install(spec).with_context(|| format!("installing {}", s.id))?;
        }
        home.check_settings(spec, &parse_settings(&s.settings)?)
            .map_err(|err| anyhow!("{err}{}", lacked_by(e, home, s, &s.settings, &err, false)))
            .with_context(|| format!("settings of server {:?}", s.label))?;
        // Only names are checked, so one setting per name of every variant, all at once: a
        // [variants] table makes thousands of variants out of a few names. The variant is
        // looked for only when a name is refused.
        let mut names: Vec<(String, String)> = Vec::new();
        for (k, v) in variants.iter().flat_map(|v| &v.settings) {
            if !names.iter().any(|(n, _)| n == k) {
                names.push((k.clone(), v.clone()));
            }
        }
        if let Some(search) = &e.search {
            // The searched settings, each at one of its values: only the names are checked.
            let searched: Vec<(String, String)> = search
                .parameters
                .iter()
                .map(|p| (p.name.clone(), p.domain.first_value()))
                .collect();
            home.check_settings(spec, &parse_settings(&searched)?)
                .with_context(|| format!("[search] parameters on server {:?}", s.label))?;
        }
        if home.check_settings(spec, &parse_settings(&names)?).is_err() {
            for v in &variants {
                home.check_settings(spec, &parse_settings(&v.settings)?)
                    .map_err(|err| anyhow!("{err}{}", lacked_by(e, home, s, &v.settings, &err, true)))
                    .with_context(|| format!("variant {:?} on server {:?}", v.name, s.label))?;
            }
        }
    }
    Ok(notes)
}

/// When `err` refuses a key that other servers of the experiment have (a setting one version
/// lacks: `innodb_redo_log_capacity` before MySQL 8.0.30, `innodb_log_files_in_group` in
/// MariaDB 10.5+), says which have it and where such a setting belongs, as a sentence to
/// append; otherwise nothing.
fn lacked_by(
    e: &Experiment,
    home: &SandboxHome,
    server: &super::experiment::ServerSpec,
    settings: &[(String, String)],
    err: &dbperf_server::ServerError,
    variant: bool,
) -> String {
    let dbperf_server::ServerError::UnknownSetting { key, .. } = err else {
        return String::new();
    };
    let Some(value) = settings
        .iter()
        .find(|(k, _)| k.replace('-', "_").eq_ignore_ascii_case(key))
        .map(|(_, v)| v.clone())
    else {
        return String::new();
    };
    let one = [(key.clone(), value)];
    let Ok(one) = parse_settings(&one) else {
        return String::new();
    };
    let have: Vec<&str> = e
        .servers
        .iter()
        .filter_map(|o| Some((o, o.sandbox()?)))
        .filter(|(o, spec)| o.id != server.id && o.host.is_none() && home.installed(spec).is_some())
        .filter(|(_, spec)| home.check_settings(spec, &one).is_ok())
        .map(|(o, _)| o)
        .map(|o| o.label.as_str())
        .collect();
    if have.is_empty() {
        return String::new();
    }
    let whose = format!(
        ". {key} is a setting of {} but not of {}",
        have.join(", "),
        server.label
    );
    if variant {
        format!(
            "{whose}, and a variant's settings go to every server: set it in the `settings` of the \
             server(s) that have it, or vary a setting every server has instead"
        )
    } else {
        whose
    }
}

/// Whether the file switches the Performance Schema on for this server and variant (a
/// sandbox: a running server's settings are its own): its points then record InnoDB's latch
/// waits (`--pfs-instruments`, on from the server's start), so the wait profiles have them.
pub(crate) fn waits_asked(server: &super::experiment::ServerSpec, variant: &super::experiment::Variant) -> bool {
    server.family() == dbperf_driver::target::Family::Mysql
        && server.running().is_none()
        && dbperf_server::asks_for_waits(
            server
                .settings
                .iter()
                .chain(&variant.settings)
                .map(|(k, v)| (k.as_str(), v.as_str())),
        )
}

/// What a (re)start of a group's server on a fresh copy of its data set needs.
struct Fresh<'a> {
    sandboxes: &'a Sandboxes<'a>,
    sandbox: &'a str,
    golden: &'a Path,
    server: &'a super::experiment::ServerSpec,
    variant: &'a super::experiment::Variant,
    pinning: &'a super::experiment::Pinning,
    exe: &'a Path,
    plan: &'a Plan,
    group: &'a Group,
    lab_dir: &'a Path,
}

impl Fresh<'_> {
    /// Stops the server, copies the data set back from its golden copy, starts the server
    /// with the group's settings and pinning (and prewarms sysbench tables): returns the URL.
    fn start(&self) -> Result<String> {
        self.sandboxes.stop_quietly(self.sandbox);
        self.sandboxes.restore_snapshot(self.sandbox, self.golden)?;
        let mut settings: Vec<(String, String)> = self.server.settings.clone();
        settings.extend(self.variant.settings.iter().cloned());
        settings.extend(workload_settings(self.server, &self.group.data));
        if waits_asked(self.server, self.variant) {
            // The latches register with the Performance Schema only if their instruments are
            // on as InnoDB creates them (MySQL 5.6, MariaDB 10.1/10.2): on from the start.
            let (k, v) = dbperf_server::PFS_STARTUP_INSTRUMENTS
                .split_once('=')
                .unwrap_or_default();
            settings.push((k.to_string(), v.to_string()));
        }
        let url = self.sandboxes.start(
            self.sandbox,
            self.server,
            &settings,
            self.pinning.server_cpus.as_ref(),
            false,
        )?;
        if self.plan.experiment.prewarm {
            prewarm(self.exe, &url, self.group, self.plan, self.lab_dir)?;
        }
        Ok(url)
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_settle_after_a_write_or_a_restore_as_the_policy_says() {
        use crate::experiment::SettlePolicy;
        let max = Duration::from_secs(60);
        // Points: read-only, writing, read-only, (restore) read-only, read-only.
        let waits = |policy| {
            let mut t = SettleTrack::new(Settle { policy, max });
            let mut out = vec![t.next(false), t.next(true), t.next(false)];
            t.restored();
            out.extend([t.next(false), t.next(false)]);
            out.iter().map(Option::is_some).collect::<Vec<_>>()
        };
        assert_eq!(waits(SettlePolicy::Each), [true, false, true, true, false]);
        assert_eq!(waits(SettlePolicy::First), [true, false, false, false, false]);
        assert_eq!(waits(SettlePolicy::Off), [false; 5]);
        let mut t = SettleTrack::new(Settle {
            policy: SettlePolicy::Each,
            max,
        });
        assert_eq!(t.next(true), Some(max));
    }

    #[test]
    fn sandbox_names_are_short_and_valid() {
        let n = sandbox_name("a very/long experiment name that goes on", 0);
        assert_eq!(n, "lab-a-very-long-experiment-n-1");
        assert!(n.len() <= 64);
    }

    #[test]
    fn state_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let lab = lab_dir(dir.path(), "x");
        std::fs::create_dir_all(&lab).unwrap();
        let mut s = LabState {
            experiment: "x".into(),
            ..LabState::default()
        };
        s.done.insert(
            "a/b".into(),
            DoneRun {
                run_id: "r1".into(),
                run_dir: dir.path().join("r1"),
                tps: 1.5,
                p95_ms: 2.0,
                finished_at: "now".into(),
                metric: "tps".into(),
                value: 1.5,
            },
        );
        save_state(&lab, &s).unwrap();
        let back = load_state(dir.path(), "x").unwrap();
        assert_eq!(back.done["a/b"].run_id, "r1");
        assert!(load_state(dir.path(), "never").unwrap().done.is_empty());
    }
}
