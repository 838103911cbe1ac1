//! Carrying out a [`Plan`]: one sandbox per server, data sets prepared once per kind (`sysbench
//! prepare`, `tpcc prepare`, `linkbench load`, `tpch prepare`, `pgbench init`, `lua SCRIPT
//! prepare`) and copied into
//! place with the server stopped, a restart per group and, for `restore = "point"`, before every
//! point (the snapshot each point started from, and on request a checksum of its tables, go
//! into its manifest), CPU pinning, every run kept, and a state file that lets a rerun resume
//! where an interrupted one stopped.
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
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::experiment::{Cold, CpuSet, Experiment, Kind, Params, Server, TpchTest};
use super::host::{parse_settings, Sandboxes};
use super::plan::{eta, Data, DataSet, Group, Plan, Point};
use dbperf_core::stats;
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::{Session, Target};
use dbperf_results::manifest::NOT_RESTORED;
use dbperf_results::summary::Summary;
use dbperf_results::{LabPoint, RunDir};
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
struct Interrupt {
    stop: AtomicBool,
    /// The running children (one per shard), sent SIGINT on Ctrl-C.
    children: std::sync::Mutex<Vec<i32>>,
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
                        .map(|p| plan.point_estimate(p))
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
            None => format!(
                "{}/{}",
                server.label,
                golden.file_name().unwrap_or_default().to_string_lossy()
            ),
            // The lab cannot copy such a server's datadir: `not restored: SERVER/DATA+N`.
            Some(_) => format!("{NOT_RESTORED}{}/{}", server.label, group.data.key()),
        };
        let labels = super::plan::workload_labels(e);
        // Points run on the data since it was last copied in.
        let mut since_restore = 0u32;

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
                },
                &self.interrupt,
            );
            pace.spend(plan.point_estimate(point));
            let outcome = match outcome {
                Ok(PointOutcome::Done(d)) if server_host.is_some() => match lost_server_host(&d.run_dir) {
                    Some(why) => Ok(PointOutcome::Failed(anyhow!(
                        "{why}; the run is kept at {} but not counted",
                        d.run_dir.display()
                    ))),
                    None => Ok(PointOutcome::Done(d)),
                },
                other => other,
            };
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

/// Prepares `group`'s data set on a server that is already running, into its URL's database:
/// the workload's own prepare, which resumes the tables dbperf recorded creating there and
/// refuses tables of its names that it did not (`dbperf_workloads::ddl`).
fn prepare_on_running(plan: &Plan, group: &Group, url: &str, exe: &Path, lab_dir: &Path) -> Result<()> {
    let e = &plan.experiment;
    let server = &e.servers[group.server];
    let data = &group.data;
    println!(
        "== preparing data set {} on {} (a server already running: into its database, once per lab run; tables dbperf \
         did not create are refused, never dropped)",
        data.key(),
        server.label
    );
    let log = lab_dir
        .join("logs")
        .join(format!("prepare-{}-{}.log", safe(&server.label), data.key()));
    let mut cmd = child(exe, url);
    cmd.args(prepare_args(plan, data));
    let t0 = Instant::now();
    let status = run_logged(&mut cmd, &log)?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "preparing the data on {:?} failed ({status}):\n{}\n(the whole output: {})",
            server.label,
            tail.join("\n"),
            log.display()
        );
    }
    if let Data::Tpch {
        engine: Some(engine), ..
    } = &data.data
    {
        convert_tpch_tables(url, engine)?;
    }
    println!("   prepared in {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}

/// `lab-<experiment>-<n>`, short enough for a unix socket path.
fn sandbox_name(experiment: &str, server: usize) -> String {
    let short: String = super::name_safe(experiment, &['-', '_'], '-')
        .chars()
        .take(24)
        .collect();
    format!("lab-{short}-{}", server + 1)
}

/// Where a prepared data set is kept: per server and data set, with a fingerprint of
/// everything that shapes the prepared datadir (server id, its settings, the table options),
/// so editing those in the file prepares afresh instead of reusing stale tables.
fn golden_dir(root: &Path, plan: &Plan, group: &Group) -> PathBuf {
    let e = &plan.experiment;
    let server = &e.servers[group.server];
    let mut print = format!("{}|{:?}", server.id, server.settings);
    let w = &e.workloads[plan.prepare_workload(&group.data)];
    match &w.params {
        // As before kinds existed, so sysbench data sets prepared then are still found.
        Params::Sysbench(sb) => print.push_str(&format!("|{}|{:?}", sb.test.name(), sb.options)),
        // Who prepares the data and the options that shape it (not the run's other options).
        Params::Lua(_) => print.push_str(&format!("|lua|{:?}", group.data.data)),
        other => print.push_str(&format!("|{}", other.kind().name())),
    }
    // FNV-1a: stable across builds, unlike std's hasher.
    let hash = print.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    root.join("lab")
        .join(&e.name)
        .join("data")
        .join(safe(&server.label))
        .join(format!("{}-{:08x}", group.data.key(), hash as u32))
}

/// Installs every server the plan needs that is missing, then checks every server's and
/// variant's settings against that server's own option list, so a typo fails now and not
/// an hour into the experiment.
pub fn check_servers(e: &Experiment, home: &SandboxHome, install: bool) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    for s in &e.servers {
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
                        e.variants
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
            for (k, v) in e
                .variants
                .iter()
                .flat_map(|v| v.settings.iter().cloned())
                .chain(searched)
            {
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
        for (k, v) in e.variants.iter().flat_map(|v| &v.settings) {
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
            for v in &e.variants {
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

/// Settings a workload needs from the server beyond the experiment's: TPC-H's load and its
/// refresh functions stream `LOAD DATA LOCAL`, which MySQL refuses by default (MariaDB takes
/// it), so TPC-H on MySQL gets `local_infile = ON` unless the file sets it.
fn workload_settings(server: &super::experiment::ServerSpec, data: &DataSet) -> Vec<(String, String)> {
    let set = |key: &str| {
        server
            .settings
            .iter()
            .any(|(k, _)| k.replace('-', "_").eq_ignore_ascii_case(key))
    };
    if matches!(data.data, Data::Tpch { .. })
        && server.product() == Some(dbperf_driver::target::Product::Mysql)
        && !set("local_infile")
    {
        vec![("local_infile".into(), "ON".into())]
    } else {
        Vec::new()
    }
}

/// The `dbperf ...` arguments that load data set `data` (the first workload of the file on it
/// decides the table options).
fn prepare_args(plan: &Plan, data: &DataSet) -> Vec<String> {
    let e = &plan.experiment;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2) * 2;
    let w = &e.workloads[plan.prepare_workload(data)];
    let mut args: Vec<String> = Vec::new();
    match (&data.data, &w.params) {
        (Data::Sysbench { tables, rows }, Params::Sysbench(sb)) => {
            args.extend(["sysbench".into(), sb.test.name().into(), "prepare".into()]);
            args.push(format!("--tables={tables}"));
            args.push(format!("--table-size={rows}"));
            args.push(format!("--threads={threads}"));
            for (k, v) in &sb.options {
                args.push(format!("--{k}={v}"));
            }
        }
        (Data::Tpcc { warehouses, schema }, _) => {
            args.extend(["tpcc".into(), "prepare".into()]);
            args.push(format!("--warehouses={warehouses}"));
            args.push(format!("--schema={schema}"));
        }
        (Data::Linkbench { maxid1 }, _) => {
            args.extend(["linkbench".into(), "load".into()]);
            args.push(format!("--maxid1={maxid1}"));
        }
        (Data::Tpch { milli_sf, .. }, _) => {
            args.extend(["tpch".into(), "prepare".into()]);
            args.push(format!("--scale-factor={}", *milli_sf as f64 / 1000.0));
        }
        (Data::Pgbench { scale }, _) => {
            args.extend(["pgbench".into(), "init".into()]);
            args.push(format!("--scale={scale}"));
        }
        // The script's own prepare (sysbench's OLTP scripts: oltp_common's, one table per
        // thread), with the script's options; --threads is the parallelism of a prepare the
        // script marks parallel. No `cleanup` is run: a data set is a datadir of its own,
        // replaced whole by the next copy, so there is nothing to drop.
        (Data::Lua { .. }, Params::Lua(l)) => {
            args.extend(["lua".into(), l.script.display().to_string(), "prepare".into()]);
            args.push(format!("--threads={threads}"));
            args.extend(lua_option_args(l));
        }
        (Data::Sysbench { .. }, _) => unreachable!("a sysbench data set is prepared by a sysbench workload"),
        (Data::Lua { .. }, _) => unreachable!("a lua data set is prepared by a lua workload"),
    }
    args
}

/// Starts the server on a fresh datadir, prepares the data set, stops it and keeps a copy of
/// the datadir at `golden`.
fn prepare_data_set(
    plan: &Plan,
    group: &Group,
    sandboxes: &Sandboxes,
    sandbox: &str,
    golden: &Path,
    exe: &Path,
    lab_dir: &Path,
) -> Result<()> {
    let e = &plan.experiment;
    let server = &e.servers[group.server];
    let data = &group.data;
    println!(
        "== preparing data set {} on {} (once; later starts copy it)",
        data.key(),
        server.label
    );
    sandboxes.stop_quietly(sandbox);
    let mut settings = server.settings.clone();
    settings.extend(workload_settings(server, data));
    let url = sandboxes.start(sandbox, server, &settings, None, true)?;
    let log = lab_dir
        .join("logs")
        .join(format!("prepare-{}-{}.log", safe(&server.label), data.key()));
    let mut cmd = child(exe, &url);
    cmd.args(prepare_args(plan, data));
    let t0 = Instant::now();
    let status = run_logged(&mut cmd, &log)?;
    if !status.success() {
        sandboxes.stop_quietly(sandbox);
        bail!("preparing the data failed ({status}); see {}", log.display());
    }
    if let Data::Tpch {
        engine: Some(engine), ..
    } = &data.data
    {
        if let Err(err) = convert_tpch_tables(&url, engine) {
            sandboxes.stop_quietly(sandbox);
            return Err(err);
        }
    }
    sandboxes.stop_quietly(sandbox);
    sandboxes.save_snapshot(sandbox, golden)?;
    println!(
        "   prepared in {:.1} s, kept at {}",
        t0.elapsed().as_secs_f64(),
        golden.display()
    );
    Ok(())
}

/// The 8 TPC-H tables.
const TPCH_TABLES: &[&str] = &[
    "region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

/// Runs `f` on a runtime of its own (the lab's few SQL calls outside the points).
pub(crate) fn block_on<T>(f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting an async runtime")?
        .block_on(f)
}

/// `ALTER TABLE ... ENGINE=engine` for every TPC-H table (`table_engine`).
fn convert_tpch_tables(url: &str, engine: &str) -> Result<()> {
    println!("   converting the TPC-H tables to {engine}");
    block_on(async {
        let target = Target::parse(url)?;
        let mut s = AnySession::connect(&target, IgnoreErrors::Codes(Default::default()))
            .await
            .context("connecting to convert the TPC-H tables")?;
        for t in TPCH_TABLES {
            s.query(&format!("ALTER TABLE {t} ENGINE={engine}"))
                .await
                .with_context(|| {
                    format!("ALTER TABLE {t} ENGINE={engine} (table_engine): does the server have {engine}?")
                })?;
        }
        Ok(())
    })
}

/// `CHECKSUM TABLE` of every base table of the target's database, as one text:
/// `table=checksum` joined by spaces, in table name order.
fn checksum_tables(url: &str) -> Result<String> {
    block_on(async {
        let target = Target::parse(url)?;
        let mut s = AnySession::connect(&target, IgnoreErrors::Codes(Default::default()))
            .await
            .context("connecting to checksum the tables")?;
        let mut tables: Vec<String> = s
            .query_rows("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'")
            .await?
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect();
        tables.sort();
        let mut out = Vec::new();
        for chunk in tables.chunks(50) {
            let list: Vec<String> = chunk.iter().map(|t| format!("`{}`", t.replace('`', "``"))).collect();
            for row in s.query_rows(&format!("CHECKSUM TABLE {}", list.join(", "))).await? {
                let name = row.first().cloned().flatten().unwrap_or_default();
                let sum = row.get(1).cloned().flatten().unwrap_or_else(|| "NULL".into());
                // `db.table` → `table`.
                let name = name.rsplit('.').next().unwrap_or_default().to_owned();
                out.push(format!("{name}={sum}"));
            }
        }
        Ok(out.join(" "))
    })
}

/// `dbperf sysbench prewarm` after a start, so runs do not begin on a cold buffer pool
/// (sysbench data sets; the other kinds warm up with their own `warmup`).
fn prewarm(exe: &Path, url: &str, group: &Group, plan: &Plan, lab_dir: &Path) -> Result<()> {
    let e = &plan.experiment;
    let server = &e.servers[group.server];
    let w = &e.workloads[plan.prepare_workload(&group.data)];
    if let Params::Lua(l) = &w.params {
        return prewarm_lua(exe, url, group, plan, l, lab_dir);
    }
    let (Data::Sysbench { tables, rows }, Params::Sysbench(sb)) = (&group.data.data, &w.params) else {
        return Ok(());
    };
    let log = lab_dir
        .join("logs")
        .join(format!("prewarm-{}-{}.log", safe(&server.label), group.data.key()));
    let mut cmd = child(exe, url);
    cmd.args(["sysbench", sb.test.name(), "prewarm"])
        .arg(format!("--tables={tables}"))
        .arg(format!("--table-size={rows}"))
        .arg(format!("--threads={}", (*tables).min(4)));
    let status = run_logged(&mut cmd, &log)?;
    if !status.success() {
        bail!("prewarm failed ({status}); see {}", log.display());
    }
    Ok(())
}

fn run_logged(cmd: &mut Command, log: &Path) -> Result<std::process::ExitStatus> {
    let file = create_log(log)?;
    let err = file.try_clone()?;
    cmd.stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .status()
        .with_context(|| format!("running {:?}", cmd.get_program()))
}

/// A child's log file, started over; a link planted in its place is refused, not followed.
fn create_log(log: &Path) -> Result<std::fs::File> {
    dbperf_core::nofollow::open(log, dbperf_core::nofollow::Open::Truncate)
        .with_context(|| format!("creating {}", log.display()))
}

/// `s` as part of a file name: never `.`, `..` or a hidden name, which would leave the
/// directory it is joined to.
fn safe(s: &str) -> String {
    let name = super::name_safe(s, &['-', '.'], '_');
    if name.is_empty() || name.starts_with('.') {
        format!("_{name}")
    } else {
        name
    }
}

#[derive(Clone, Copy)]
struct RunPoint<'a> {
    exe: &'a Path,
    url: &'a str,
    sandbox: &'a str,
    plan: &'a Plan,
    group: &'a Group,
    point: &'a Point,
    lab: &'a LabPoint,
    client_cpus: Option<&'a CpuSet>,
    results_dir: &'a Path,
    lab_dir: &'a Path,
    /// The server is not dbperf's (`target`): `--telemetry-sql-only`.
    sql_only_telemetry: bool,
    /// The database host when it is not this one: `--server-host`.
    server_host: Option<&'a dbperf_server::remote::RemoteHost>,
}

enum PointOutcome {
    Done(DoneRun),
    Interrupted,
    Failed(anyhow::Error),
}

/// A child `dbperf` that connects to `url`, which it gets through `DBPERF_TARGET`: the
/// environment is readable by the same user only, where arguments show in everybody's `ps`.
fn child(exe: &Path, url: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("DBPERF_TARGET", url);
    cmd
}

/// The child command of one point: `dbperf sysbench TEST run`, `tpcc run`, `linkbench
/// request`, `tpch power|throughput` or `pgbench SCRIPT`, writing its summary to
/// `summary_path` (TPC-H writes `tpch.json` in its run directory instead).
fn point_command(r: &RunPoint<'_>, summary_path: &Path) -> Result<Command> {
    let e = &r.plan.experiment;
    let w = &e.workloads[r.point.workload];
    let cold = matches!(&w.params, Params::Tpch(t) if t.cold != Cold::Off);
    // A cold TPC-H run restarts the sandbox itself, so it needs the sandbox, not a URL; on
    // another host, the URL and the sandbox's name there.
    let sandbox_url = format!("sandbox:{}", r.sandbox);
    let here = cold && r.server_host.is_none();
    let mut cmd = child(r.exe, if here { &sandbox_url } else { r.url });
    let time = format!("--time={}", w.duration.as_secs());
    let warmup = format!("--warmup-time={}", w.warmup.as_secs());
    let interval = format!("--report-interval={}", e.report_interval.as_secs_f64());
    let results = format!("--results-dir={}", r.results_dir.display());
    let summary = format!("--summary-json={}", summary_path.display());
    let users = r.point.users;
    match (&w.params, &r.group.data.data) {
        (Params::Sysbench(sb), Data::Sysbench { tables, rows }) => {
            cmd.args(["sysbench", sb.test.name(), "run"])
                .arg(format!("--tables={tables}"))
                .arg(format!("--table-size={rows}"))
                .arg(format!("--threads={users}"))
                .args([&time, &warmup, &interval, &results, &summary]);
            for (k, v) in &sb.options {
                cmd.arg(format!("--{k}={v}"));
            }
        }
        (Params::Tpcc(t), _) => {
            cmd.args(["tpcc", "run"])
                .arg(format!("--warehouses={}", t.warehouses))
                .arg(format!("--mode={}", t.mode))
                .arg(format!("--wait-scale={}", t.wait_scale))
                .arg(format!("--schema={}", t.schema));
            if t.mode == "max" {
                cmd.arg(format!("--threads={users}"));
            }
            cmd.args([&time, &warmup, &interval, &results, &summary]);
        }
        (Params::Linkbench(l), _) => {
            cmd.args(["linkbench", "request"])
                .arg(format!("--maxid1={}", l.maxid1))
                .arg(format!("--requesters={users}"))
                .arg(format!("--mix={}", l.mix))
                .arg(format!("--requests-per-requester={}", l.requests_per_requester))
                .args([&time, &warmup, &interval, &results, &summary]);
        }
        (Params::Tpch(t), _) => {
            cmd.args(["tpch", t.test.name()])
                .arg(format!("--scale-factor={}", t.scale_factor))
                .arg(&results);
            match t.test {
                TpchTest::Power => {
                    cmd.arg(format!("--repeat={}", t.repeat));
                    if !t.queries.is_empty() {
                        let list: Vec<String> = t.queries.iter().map(u8::to_string).collect();
                        cmd.arg(format!("--queries={}", list.join(",")));
                    }
                    match t.cold {
                        Cold::Off => {}
                        Cold::Query => {
                            cmd.arg("--cold=query");
                        }
                        Cold::Run => {
                            cmd.arg("--cold=run");
                        }
                    }
                    if cold && !here {
                        cmd.arg(format!("--cold-sandbox={}", r.sandbox));
                    }
                }
                TpchTest::Throughput => {
                    cmd.arg(format!("--streams={}", t.streams));
                }
            }
            if let Some(secs) = t.timeout {
                cmd.arg(format!("--timeout={secs}"));
            }
        }
        (Params::Pgbench(p), _) => {
            cmd.arg("pgbench");
            if !p.script.is_empty() {
                cmd.arg(&p.script);
            }
            for f in &p.scripts.files {
                cmd.arg(format!("--file={f}"));
            }
            for b in &p.scripts.builtins {
                cmd.arg(format!("--builtin={b}"));
            }
            for (k, v) in &p.scripts.define {
                cmd.arg(format!("--define={k}={v}"));
            }
            if let Some(m) = &p.scripts.protocol {
                cmd.arg(format!("--protocol={m}"));
            }
            cmd.arg(format!("--scale={}", p.scale))
                .arg(format!("--clients={users}"))
                .arg(format!("--time={}", w.duration.as_secs()))
                .arg(&warmup)
                .arg(format!("--progress={}", e.report_interval.as_secs_f64()))
                .args([&results, &summary]);
        }
        (Params::Lua(l), _) => {
            cmd.arg("lua")
                .arg(&l.script)
                .arg("run")
                .arg(format!("--threads={users}"))
                .args([&time, &warmup, &interval, &results, &summary])
                .args(lua_option_args(l));
        }
        (Params::Sysbench(_), other) => bail!("a sysbench workload on data set {other:?}"),
    }
    if let Some(shaping) = &e.network.netns {
        cmd.arg(format!("--client-netns={shaping}"));
    }
    if r.sql_only_telemetry {
        cmd.arg("--telemetry-sql-only");
    }
    if let Some(h) = r.server_host {
        cmd.arg(format!("--server-host={}", h.url))
            .arg(format!("--server-host-ssh={}", h.ssh_line()))
            .arg(format!("--server-host-dbperf={}", h.dbperf));
        if let Some(home) = &h.home {
            cmd.arg(format!("--server-host-home={home}"));
        }
    }
    cmd.env("DBPERF_LAB_POINT", serde_json::to_string(r.lab)?);
    Ok(cmd)
}

/// A Lua workload's options as `dbperf lua` takes them: dbperf lua's general ones, then the
/// script's own.
fn lua_option_args(l: &super::experiment::Lua) -> Vec<String> {
    l.general
        .iter()
        .chain(&l.options)
        .map(|(k, v)| format!("--{k}={v}"))
        .collect()
}

/// Run directories directly under `root` (names only).
fn run_dirs(root: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join("manifest.json").is_file())
                .map(|e| e.file_name())
                .collect()
        })
        .unwrap_or_default()
}

fn run_point(r: &RunPoint<'_>, interrupt: &Interrupt) -> Result<PointOutcome> {
    let shards = r.plan.experiment.network.shards;
    if shards > 1 {
        return run_sharded(r, shards, interrupt);
    }
    let stem = safe(&r.point.id.replace('/', "~"));
    let log = r.lab_dir.join("logs").join(format!("{stem}.log"));
    let summary_path = r.lab_dir.join("logs").join(format!("{stem}.summary.json"));
    let _ = std::fs::remove_file(&summary_path);
    let w = &r.plan.experiment.workloads[r.point.workload];
    let cmd = point_command(r, &summary_path)?;
    let before = run_dirs(r.results_dir);
    let what = format!("dbperf {}", w.kind().name());
    let mut child = spawn_logged(cmd, &log, r.client_cpus, interrupt, &what)?;
    let status = child.wait();
    interrupt.children.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let status = status.with_context(|| format!("waiting for {what}"))?;
    if status.code() == Some(130) || interrupt.stop.load(Ordering::SeqCst) {
        return Ok(PointOutcome::Interrupted);
    }
    if !status.success() {
        return Ok(PointOutcome::Failed(anyhow!(
            "{what} exited with {status}{}; see {}",
            last_error(&log),
            log.display()
        )));
    }
    finished(r, &before, &summary_path, &log, &what)
}

/// The last `error: ...` line a failed child wrote to `log`, as `: error: ...` to append to
/// what the lab prints, or nothing.
fn last_error(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with("error:"))
        .map(|l| format!(": {}", l.chars().take(300).collect::<String>()))
        .unwrap_or_default()
}

/// Starts `cmd` with its output in `log`, on the client's CPUs, registered for Ctrl-C.
fn spawn_logged(
    mut cmd: Command,
    log: &Path,
    client_cpus: Option<&CpuSet>,
    interrupt: &Interrupt,
    what: &str,
) -> Result<std::process::Child> {
    if let Some(cpus) = client_cpus {
        let cpus = cpus.cpus.clone();
        // SAFETY: only sched_setaffinity (async-signal-safe) runs between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || dbperf_core::cpus::restrict(0, &cpus));
        }
    }
    let file = create_log(log)?;
    let err = file.try_clone()?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    interrupt
        .children
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(child.id() as i32);
    Ok(child)
}

/// A point spread over `shards` client processes: each runs `--shard I/N` with one shared
/// `--start-at` (its run directory under the lab's `shards/`), then `dbperf merge` makes the
/// point's run of them. A shard that fails fails the point (its figure would cover fewer
/// users), naming the shard and its log.
fn run_sharded(r: &RunPoint<'_>, shards: u32, interrupt: &Interrupt) -> Result<PointOutcome> {
    let stem = safe(&r.point.id.replace('/', "~"));
    let w = &r.plan.experiment.workloads[r.point.workload];
    let what = format!("dbperf {}", w.kind().name());
    let shard_root = r.lab_dir.join("shards");
    dbperf_core::nofollow::create_dir_all(&shard_root).with_context(|| format!("creating {}", shard_root.display()))?;
    let start =
        std::time::SystemTime::now() + Duration::from_secs(super::plan::shard_allowance(r.point.users)) + w.warmup;
    let start_at = dbperf_core::clock::unix_ms(start) as f64 / 1000.0;
    let mut running = Vec::new();
    let mut not_started = None;
    for i in 0..shards {
        let log = r.lab_dir.join("logs").join(format!("{stem}.shard{i}.log"));
        let summary_path = r.lab_dir.join("logs").join(format!("{stem}.shard{i}.summary.json"));
        let _ = std::fs::remove_file(&summary_path);
        let shard_point = RunPoint {
            results_dir: &shard_root,
            ..*r
        };
        let started = point_command(&shard_point, &summary_path).and_then(|mut cmd| {
            cmd.arg(format!("--shard={i}/{shards}"))
                .arg(format!("--start-at={start_at:.3}"));
            spawn_logged(cmd, &log, r.client_cpus, interrupt, &what)
        });
        match started {
            Ok(child) => running.push((i, child, log, summary_path)),
            Err(e) => {
                not_started = Some(e);
                break;
            }
        }
    }
    if not_started.is_some() {
        // The shards already started would measure a part of the point: stop them.
        for (_, child, _, _) in &running {
            // SAFETY: kill has no memory preconditions; the child may already be gone.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        }
    }
    // Every shard started is waited for before anything else happens.
    let ended: Vec<_> = running
        .into_iter()
        .map(|(i, mut child, log, summary_path)| (i, child.wait(), log, summary_path))
        .collect();
    interrupt.children.lock().unwrap_or_else(|e| e.into_inner()).clear();
    if let Some(e) = not_started {
        return Err(e);
    }
    let mut failures = Vec::new();
    let mut shard_dirs = Vec::new();
    for (i, status, log, summary_path) in ended {
        let status = status.with_context(|| format!("waiting for {what} shard {i}"))?;
        if !status.success() {
            failures.push(format!(
                "shard {i}/{shards} exited with {status}{}; see {}",
                last_error(&log),
                log.display()
            ));
            continue;
        }
        let summary: Summary = serde_json::from_slice(
            &std::fs::read(&summary_path).with_context(|| format!("reading {}", summary_path.display()))?,
        )
        .with_context(|| format!("reading {}", summary_path.display()))?;
        shard_dirs.push(shard_root.join(&summary.run_id));
    }
    if interrupt.stop.load(Ordering::SeqCst) {
        return Ok(PointOutcome::Interrupted);
    }
    if !failures.is_empty() {
        return Ok(PointOutcome::Failed(anyhow!("{}", failures.join("; "))));
    }
    let log = r.lab_dir.join("logs").join(format!("{stem}.log"));
    let before = run_dirs(r.results_dir);
    let mut merge = Command::new(r.exe);
    merge
        .arg("merge")
        .args(&shard_dirs)
        .arg(format!("--results-dir={}", r.results_dir.display()));
    let status = spawn_logged(merge, &log, None, interrupt, "dbperf merge")?
        .wait()
        .context("waiting for dbperf merge")?;
    interrupt.children.lock().unwrap_or_else(|e| e.into_inner()).clear();
    if !status.success() {
        return Ok(PointOutcome::Failed(anyhow!(
            "dbperf merge of the point's {shards} shards exited with {status}; see {}",
            log.display()
        )));
    }
    let Some(merged) = run_dirs(r.results_dir)
        .into_iter()
        .filter(|d| !before.contains(d))
        .max()
    else {
        return Ok(PointOutcome::Failed(anyhow!(
            "dbperf merge wrote no run directory under {}; see {}",
            r.results_dir.display(),
            log.display()
        )));
    };
    finished(
        r,
        &before,
        &r.results_dir.join(merged).join("summary.json"),
        &log,
        &what,
    )
}

/// The finished point: its run directory (TPC-H: the new one with a `tpch.json`; the others:
/// the one `summary_path` names) and its figure.
fn finished(
    r: &RunPoint<'_>,
    before: &[std::ffi::OsString],
    summary_path: &Path,
    log: &Path,
    what: &str,
) -> Result<PointOutcome> {
    let w = &r.plan.experiment.workloads[r.point.workload];
    let finished_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    if let Params::Tpch(t) = &w.params {
        // TPC-H writes no summary.json: its run is the new run directory with a tpch.json.
        let Some(run_id) = run_dirs(r.results_dir)
            .into_iter()
            .filter(|d| !before.contains(d))
            .filter(|d| r.results_dir.join(d).join(dbperf_results::TPCH_FILE).is_file())
            .max()
        else {
            return Ok(PointOutcome::Failed(anyhow!(
                "{what} wrote no run directory with {} under {}; see {}",
                dbperf_results::TPCH_FILE,
                r.results_dir.display(),
                log.display()
            )));
        };
        let run_dir = r.results_dir.join(&run_id);
        let metric = match t.test {
            TpchTest::Power => "geomean",
            TpchTest::Throughput => "throughput",
        };
        // A run where a query timed out has no geometric mean (nor Power@Size): it is still a
        // finished point, its progress figure 0; the report shows its queries.
        let value = figure(&run_dir, None, metric).unwrap_or(0.0);
        return Ok(PointOutcome::Done(DoneRun {
            run_id: run_id.to_string_lossy().into_owned(),
            run_dir,
            tps: 0.0,
            p95_ms: 0.0,
            finished_at,
            metric: metric.into(),
            value,
        }));
    }
    let summary: Summary = serde_json::from_slice(
        &std::fs::read(summary_path).with_context(|| format!("reading {}", summary_path.display()))?,
    )
    .with_context(|| format!("reading {}", summary_path.display()))?;
    let run_dir = r.results_dir.join(&summary.run_id);
    let tps = summary.transactions.per_sec;
    let metric = match w.kind() {
        Kind::Tpcc => "notpm",
        Kind::Linkbench => "rps",
        _ => "tps",
    };
    let value = figure(&run_dir, Some(&summary), metric)?;
    Ok(PointOutcome::Done(DoneRun {
        run_dir,
        run_id: summary.run_id.clone(),
        tps,
        p95_ms: summary.latency_ms.p95,
        finished_at,
        metric: metric.into(),
        value,
    }))
}

/// Why a run on another host's server lost that host: the first telemetry period with no OS
/// sample from there and the reason (the ssh connection cut: the lab could no longer see,
/// restart or restore that host while the run went on), or `None`.
fn lost_server_host(run_dir: &Path) -> Option<String> {
    let rows = dbperf_results::read_jsonl::<dbperf_results::telemetry::TelemetryRow>(
        &run_dir.join(dbperf_results::TELEMETRY_FILE),
    )
    .ok()?;
    rows.records.iter().filter(|r| r.server_host_lost).find_map(|r| {
        r.server_host_error
            .as_ref()
            .map(|why| format!("the server host was lost {:.0} s into the run: {why}", r.t_s))
    })
}

/// The median of a finished run's figure `name` (`notpm`, `geomean`, ...), read typed from
/// the files its workload wrote ([`dbperf_results::figures`]).
fn figure(run_dir: &Path, summary: Option<&Summary>, name: &str) -> Result<f64> {
    let dir = RunDir::open(run_dir)?;
    let (figures, unreadable) = dbperf_results::figures::read(&dir, summary);
    figures
        .get(name)
        .and_then(|v| stats::median(v))
        .ok_or_else(|| match unreadable.first() {
            Some(e) => anyhow!("{}: no {name}: {e}", run_dir.display()),
            None => anyhow!("{}: the run wrote no {name} figure", run_dir.display()),
        })
}

/// A Lua script's own `prewarm` after a start, where it has one (sysbench's OLTP scripts: MySQL
/// family only, so not on PostgreSQL). A failed prewarm is a warning: the run still measures,
/// only from a colder start.
fn prewarm_lua(
    exe: &Path,
    url: &str,
    group: &Group,
    plan: &Plan,
    l: &super::experiment::Lua,
    lab_dir: &Path,
) -> Result<()> {
    let server = &plan.experiment.servers[group.server];
    if !l.prewarm || (l.oltp_common && server.family() == dbperf_driver::target::Family::Postgres) {
        return Ok(());
    }
    let log = lab_dir
        .join("logs")
        .join(format!("prewarm-{}-{}.log", safe(&server.label), group.data.key()));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
    let mut cmd = child(exe, url);
    cmd.arg("lua")
        .arg(&l.script)
        .arg("prewarm")
        .arg(format!("--threads={threads}"))
        .args(lua_option_args(l));
    let status = run_logged(&mut cmd, &log)?;
    if !status.success() {
        eprintln!(
            "warning: {} prewarm failed ({status}); the runs start colder. See {}",
            l.script.display(),
            log.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_names_are_short_and_valid() {
        let n = sandbox_name("a very/long experiment name that goes on", 0);
        assert_eq!(n, "lab-a-very-long-experiment-n-1");
        assert!(n.len() <= 64);
    }

    #[test]
    fn children_get_the_target_through_the_environment_not_argv() {
        let text = "duration = 30\n[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\ntest = \"oltp_read_only\"\nusers = [4]\noptions = { range_size = 5 }\n";
        let plan = Plan::new(crate::Experiment::parse(text, Path::new("x.toml")).unwrap());
        let (group, point) = (&plan.groups[0], &plan.groups[0].points[0]);
        let url = "mysql://sb:S3cret-pw@127.0.0.1:3306/sbtest";
        let r = RunPoint {
            exe: Path::new("/usr/bin/dbperf"),
            url,
            sandbox: "lab-x-1",
            plan: &plan,
            group,
            point,
            lab: &LabPoint::default(),
            client_cpus: None,
            results_dir: Path::new("/r"),
            lab_dir: Path::new("/l"),
            sql_only_telemetry: false,
            server_host: None,
        };
        let cmd = point_command(&r, Path::new("/l/s.json")).unwrap();
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.iter().all(|a| !a.contains("S3cret")), "password in argv: {args:?}");
        assert!(args.iter().all(|a| !a.starts_with("--target")), "{args:?}");
        for want in ["--threads=4", "--time=30", "--warmup-time=0", "--range_size=5"] {
            assert!(args.iter().any(|a| a == want), "{want} missing: {args:?}");
        }
        let env = |cmd: &Command, key: &str| {
            cmd.get_envs()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v)
                .map(|v| v.to_string_lossy().into_owned())
        };
        assert_eq!(env(&cmd, "DBPERF_TARGET").as_deref(), Some(url));
        // Prepare and prewarm children are made by the same function.
        let prep = child(Path::new("/usr/bin/dbperf"), url);
        assert_eq!(prep.get_args().count(), 0);
        assert_eq!(env(&prep, "DBPERF_TARGET").as_deref(), Some(url));
    }

    /// The arguments of the child command of the first point of `text` (parsed as `dir/x.toml`).
    fn point_args(dir: &Path, text: &str) -> Vec<String> {
        let plan = Plan::new(crate::Experiment::parse(text, &dir.join("x.toml")).unwrap());
        let r = RunPoint {
            exe: Path::new("/usr/bin/dbperf"),
            url: "mysql://sb:sb@127.0.0.1:3306/sbtest",
            sandbox: "lab-x-1",
            plan: &plan,
            group: &plan.groups[0],
            point: &plan.groups[0].points[0],
            lab: &LabPoint::default(),
            client_cpus: None,
            results_dir: Path::new("/r"),
            lab_dir: Path::new("/l"),
            sql_only_telemetry: false,
            server_host: None,
        };
        let cmd = point_command(&r, Path::new("/l/s.json")).unwrap();
        cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn lua_and_pgbench_script_points_pass_their_scripts_and_options() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("mine.lua");
        std::fs::write(
            &script,
            "sysbench.cmdline.options = { rows = {\"Rows\", 10} }\nfunction prepare() end\nfunction event() end\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("q.sql"), "SELECT :n;\n").unwrap();
        let lua = "duration = 7\n[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"lua\"\nscript = \"mine.lua\"\noptions = { rows = 50, rand_type = \"uniform\" }\nusers = [3]\n";
        let args = point_args(dir.path(), lua);
        let script = std::path::absolute(&script).unwrap().display().to_string();
        assert_eq!(args[..3], ["lua", script.as_str(), "run"]);
        for want in [
            "--threads=3",
            "--time=7",
            "--warmup-time=0",
            "--rows=50",
            "--rand-type=uniform",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} missing: {args:?}");
        }
        let plan = Plan::new(crate::Experiment::parse(lua, &dir.path().join("x.toml")).unwrap());
        let prepare = prepare_args(&plan, &plan.datasets[0]);
        assert_eq!(prepare[..3], ["lua", script.as_str(), "prepare"]);
        assert!(prepare.iter().any(|a| a == "--rows=50") && prepare.iter().any(|a| a.starts_with("--threads=")));

        let pg = "[[server]]\nid = \"postgres-17\"\n[[workload]]\nkind = \"pgbench\"\nfiles = [\"q.sql@2\"]\nbuiltins = [\"select-only\"]\ndefine = { n = 5 }\nprotocol = \"simple\"\nusers = [2]\n";
        let args = point_args(dir.path(), pg);
        let file = std::path::absolute(dir.path().join("q.sql"))
            .unwrap()
            .display()
            .to_string();
        assert_eq!(args[0], "pgbench");
        for want in [
            format!("--file={file}@2"),
            "--builtin=select-only@1".into(),
            "--define=n=5".into(),
            "--protocol=simple".into(),
            "--clients=2".into(),
        ] {
            assert!(args.contains(&want), "{want} missing: {args:?}");
        }
        assert!(
            !args[1].starts_with("select"),
            "no built-in command with files: {args:?}"
        );
        let one = pg.replace(
            "files = [\"q.sql@2\"]\nbuiltins = [\"select-only\"]\ndefine = { n = 5 }\nprotocol = \"simple\"\n",
            "script = \"select-only\"\n",
        );
        let args = point_args(dir.path(), &one);
        assert_eq!(args[..2], ["pgbench", "select-only"]);
        assert!(
            !args
                .iter()
                .any(|a| a.starts_with("--file") || a.starts_with("--protocol")),
            "{args:?}"
        );
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
