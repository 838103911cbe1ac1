//! `dbperf lab tune FILE`: carrying out a `[search]`. Every trial is an ordinary lab point
//! (a server start with the trial's settings on a fresh copy of the prepared data, one run
//! with its run directory, telemetry and catalog entry), named `SERVER/trial-NNN/...`; the
//! first measures the server's defaults, the next follow the strategy ([`super::tuner`]), and
//! the model strategy measures a promising setting again before it may count as the best.
//! The best is then confirmed against the defaults, interleaved, and judged with the one draw
//! rule ([`dbperf_core::stats::judge`]).
//!
//! `tune.json` (beside the lab's `state.json`) records each trial before it runs, so Ctrl-C
//! loses nothing: the same command resumes with the same trial. `tune.md` is the result: the
//! winner as a ready `--set` line and config snippet, the gain over the defaults with its
//! spread, every trial, and which constraint ruled out which region, with the telemetry that
//! says why. `tune.html` plots each parameter's trials and the model's partial dependence.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::experiment::{Experiment, Variant};
use super::plan::{eta, hms, Group, Plan, Point};
use super::run::{LabBench, LabOptions, Pace};
use super::search::{Constraint, Domain, Metric, Objective, Op, Search};
use super::tuner::{Observation, Space, Strategy, Tuner};
use dbperf_core::stats::{self, judge, Spread, Verdict, DEFAULT_THRESHOLD_PCT};
use dbperf_report::compare::inside::RunInside;
use dbperf_results::manifest::Manifest;
use dbperf_results::summary::Summary;
use dbperf_results::RunDir;

/// The fewest runs each of the best and the defaults gets in the confirmation.
pub const MIN_CONFIRMATIONS: u32 = 3;
/// The most measurements of one setting during the search.
const MAX_MEASUREMENTS: usize = 3;

/// How a search behaves.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    pub lab: LabOptions,
    /// `None`: the strategy of an earlier, resumed search, else `model`.
    pub strategy: Option<Strategy>,
}

/// How a search ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TuneOutcome {
    /// The search and its confirmation are done; `tune.md` holds the result.
    Done { report: PathBuf },
    /// Stopped by Ctrl-C or SIGTERM; the same command resumes.
    Interrupted,
}

/// `tune.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TuneState {
    pub experiment: String,
    pub strategy: Strategy,
    pub seed: u64,
    /// The searched space, objective and constraints as text: an edited file does not resume
    /// an earlier search's trials.
    pub fingerprint: String,
    pub trials: Vec<Trial>,
    /// The server's own values of the parameters, read from the defaults trial's manifest.
    #[serde(default)]
    pub defaults: BTreeMap<String, String>,
    /// The trial number the confirmation confirms (fixed when it starts).
    #[serde(default)]
    pub confirming: Option<u32>,
}

/// Why a trial ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The server's defaults for every parameter.
    Defaults,
    /// The space-filling start of the model strategy.
    Design,
    /// The model's proposal.
    Model,
    /// The model proposed a setting already measured: a random one instead.
    Explore,
    Random,
    Grid,
    /// A promising setting measured again.
    Remeasure,
    /// The confirmation's runs of the best setting.
    ConfirmBest,
    /// The confirmation's runs of the defaults.
    ConfirmDefaults,
}

impl Role {
    fn of(why: &str) -> Role {
        match why {
            "design" => Role::Design,
            "model" => Role::Model,
            "explore" => Role::Explore,
            "random" => Role::Random,
            _ => Role::Grid,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Role::Defaults => "defaults",
            Role::Design => "design",
            Role::Model => "model",
            Role::Explore => "explore",
            Role::Random => "random",
            Role::Grid => "grid",
            Role::Remeasure => "again",
            Role::ConfirmBest => "confirm",
            Role::ConfirmDefaults => "confirm-defaults",
        }
    }

    /// A proposal of the strategy (not the defaults, a re-measurement or the confirmation).
    fn proposed(self) -> bool {
        matches!(
            self,
            Role::Design | Role::Model | Role::Explore | Role::Random | Role::Grid
        )
    }

    fn confirmation(self) -> bool {
        matches!(self, Role::ConfirmBest | Role::ConfirmDefaults)
    }
}

/// One trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    /// From 1, in the order run.
    pub n: u32,
    pub role: Role,
    /// The searched parameters' values (empty: the server's defaults).
    pub settings: Vec<(String, String)>,
    /// The setting in the tuner's coordinates (`None`: the defaults outside the space).
    pub x: Option<Vec<f64>>,
    /// The lab point id.
    pub point: String,
    #[serde(default)]
    pub measured: Option<Measured>,
    /// Why it failed (the server refused the settings, the run broke).
    #[serde(default)]
    pub failed: Option<String>,
}

/// What a trial's run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub run_id: String,
    pub run_dir: PathBuf,
    /// The objective's figure: tps, NOTPM, requests/s, or p99 in ms.
    pub figure: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub cv_pct: Option<f64>,
    pub stalls: Option<usize>,
    pub sync_flush_pct: Option<f64>,
    pub checkpoint_max_pct: Option<f64>,
    pub dirty_max_pct: Option<f64>,
    pub redo_needed_bytes: Option<u64>,
    /// Wall-clock seconds of the trial, server start included.
    pub secs: f64,
}

impl Measured {
    /// The value a constraint bounds; `None` where the run has no such measure (no
    /// telemetry, or no checkpoint age on PostgreSQL).
    pub(crate) fn value_of(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Cv => self.cv_pct,
            Metric::Stalls => self.stalls.map(|s| s as f64),
            Metric::SyncFlush => self.sync_flush_pct,
            Metric::P95 => Some(self.p95_ms),
            Metric::P99 => Some(self.p99_ms),
        }
    }
}

impl Constraint {
    /// Whether `value` meets the constraint.
    pub(crate) fn holds(&self, value: f64) -> bool {
        match self.op {
            Op::Le => value <= self.bound,
            Op::Lt => value < self.bound,
            Op::Eq => (value - self.bound).abs() < 0.5,
        }
    }

    /// How far past the bound `value` is, relative to the bound (`<= 0`: met), for the model.
    fn slack(&self, value: f64) -> f64 {
        let scale = self.bound.abs().max(1.0);
        match self.op {
            Op::Eq => ((value - self.bound).abs() - 0.5) / scale,
            Op::Lt if value >= self.bound => (value - self.bound) / scale + 1e-3,
            _ => (value - self.bound) / scale,
        }
    }
}

impl Objective {
    fn higher_is_better(self) -> bool {
        self != Objective::MinP99
    }

    fn unit(self) -> &'static str {
        match self {
            Objective::MaxTps => "tps",
            Objective::MaxNotpm => "NOTPM",
            Objective::MaxRps => "rps",
            Objective::MinP99 => "ms p99",
        }
    }
}

/// `search`'s space, objective, constraints and strategy as one line.
fn fingerprint(search: &Search) -> String {
    let params: Vec<String> = search
        .parameters
        .iter()
        .map(|p| format!("{}={}", p.name, p.domain))
        .collect();
    let cs: Vec<String> = search.constraints.iter().map(|c| c.to_string()).collect();
    format!(
        "{} | {} | {}",
        search.objective.text(),
        params.join("; "),
        cs.join(", ")
    )
}

fn load(path: &Path) -> Result<Option<TuneState>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(
            serde_json::from_slice(&bytes).with_context(|| format!("reading {}", path.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn save(path: &Path, st: &TuneState) -> Result<()> {
    dbperf_core::nofollow::write_atomic(path, &serde_json::to_vec_pretty(st)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Everything a search needs while it runs.
struct Tuning<'a> {
    e: &'a Experiment,
    search: &'a Search,
    bench: LabBench,
    plan: Plan,
    /// The base group (data set, pinning, server) every trial copies.
    base: Group,
    point: Point,
    path: PathBuf,
    st: TuneState,
    tuner: Tuner,
    pace: Pace,
}

/// Runs the search of `e` (which must have a `[search]`), resuming an earlier one.
pub fn tune(e: &Experiment, opts: &TuneOptions) -> Result<TuneOutcome> {
    let search = e
        .search
        .as_ref()
        .with_context(|| format!("{} has no [search]: `dbperf lab run` runs it", e.path.display()))?;
    let plan = Plan::new(e.clone());
    let (Some(base), Some(point)) = (
        plan.groups.first().cloned(),
        plan.groups.first().and_then(|g| g.points.first()).cloned(),
    ) else {
        bail!("{}: the search has no point to run", e.path.display());
    };
    let bench = LabBench::open(e, &opts.lab)?;
    let path = bench.dir.join("tune.json");
    let print = fingerprint(search);
    let earlier = if opts.lab.restart { None } else { load(&path)? };
    let st = match earlier {
        Some(st) if st.fingerprint != print || st.seed != search.seed => bail!(
            "{} holds a search of another space, objective, constraints or seed than {} has now \
             (was: {}, seed {}); rerun with --restart to start this search afresh (its trials' runs are kept)",
            path.display(),
            e.path.display(),
            st.fingerprint,
            st.seed
        ),
        Some(st) if opts.strategy.is_some_and(|s| s != st.strategy) => bail!(
            "{} holds a {} search; --strategy {} needs --restart (or a copy of the file under another name, to \
             keep both)",
            path.display(),
            st.strategy.name(),
            opts.strategy.map_or("", |s| s.name())
        ),
        Some(st) => st,
        None => TuneState {
            experiment: e.name.clone(),
            strategy: opts.strategy.unwrap_or(Strategy::Model),
            seed: search.seed,
            fingerprint: print,
            trials: Vec::new(),
            defaults: BTreeMap::new(),
            confirming: None,
        },
    };
    let trial_s = plan.group_overhead_estimate(&base) + plan.point_estimate(&base, &point);
    let budget = match (search.trials, search.time) {
        (Some(t), _) => t as usize,
        (None, Some(limit)) => (limit.as_secs_f64() / trial_s).floor().max(1.0) as usize,
        (None, None) => 1,
    };
    let tuner = Tuner {
        space: Space {
            params: search.parameters.clone(),
        },
        strategy: st.strategy,
        seed: search.seed,
        constraints: search.constraints.len(),
        budget,
    };
    let confirm = u64::from(e.repetitions.max(MIN_CONFIRMATIONS)) * 2;
    let done = st
        .trials
        .iter()
        .filter(|t| t.measured.is_some() || t.failed.is_some())
        .count();
    println!(
        "{} {}: a {} search of {} parameter(s), {}; {}",
        if done > 0 { "Resuming" } else { "Tuning" },
        e.name,
        st.strategy.name(),
        search.parameters.len(),
        match (search.trials, search.time) {
            (Some(t), Some(l)) => format!("{t} trials or {}", hms(l.as_secs_f64())),
            (Some(t), None) => format!("{t} trials"),
            (None, Some(l)) => hms(l.as_secs_f64()),
            (None, None) => String::new(),
        },
        if done > 0 {
            format!("{done} trial(s) already done")
        } else {
            format!(
                "estimated {}",
                eta(Duration::from_secs_f64((budget as u64 + confirm) as f64 * trial_s))
            )
        }
    );
    let pace = Pace::new((budget.saturating_sub(done) as u64 + confirm) as f64 * trial_s);
    let mut s = Tuning {
        e,
        search,
        bench,
        plan,
        base,
        point,
        path,
        st,
        tuner,
        pace,
    };
    save(&s.path, &s.st)?;
    if !s.search_trials()? || !s.confirm()? {
        save(&s.path, &s.st)?;
        return Ok(TuneOutcome::Interrupted);
    }
    let report = s.bench.dir.join("tune.md");
    let text = s.render();
    dbperf_core::nofollow::write_atomic(&report, text.as_bytes())
        .with_context(|| format!("writing {}", report.display()))?;
    let html = s.bench.dir.join("tune.html");
    dbperf_core::nofollow::write_atomic(&html, super::tune_html::page(&s.st, s.search, s.e, &text).as_bytes())
        .with_context(|| format!("writing {}", html.display()))?;
    println!("\n{text}");
    println!(
        "(also in {} and, with a chart per parameter, {})",
        report.display(),
        html.display()
    );
    Ok(TuneOutcome::Done { report })
}

impl Tuning<'_> {
    /// The search's trials, until the budget is spent; `false` when interrupted.
    fn search_trials(&mut self) -> Result<bool> {
        loop {
            let next = match self
                .st
                .trials
                .iter()
                .position(|t| t.measured.is_none() && t.failed.is_none())
            {
                // A trial Ctrl-C cut short runs again, with the same settings.
                Some(i) => i,
                None => {
                    if self.budget_spent() {
                        return Ok(true);
                    }
                    let t = self.next_trial();
                    self.st.trials.push(t);
                    save(&self.path, &self.st)?;
                    self.st.trials.len() - 1
                }
            };
            if self.st.trials[next].role.confirmation() {
                // The search ended earlier; the confirmation resumes.
                return Ok(true);
            }
            if !self.run_trial(next)? {
                return Ok(false);
            }
        }
    }

    /// Whether the budget allows no more search trials.
    fn budget_spent(&self) -> bool {
        let searched: Vec<&Trial> = self.st.trials.iter().filter(|t| !t.role.confirmation()).collect();
        if self.st.trials.iter().any(|t| t.role.confirmation()) {
            return true;
        }
        if let Some(n) = self.search.trials {
            if searched.len() >= n as usize {
                return true;
            }
        }
        if let Some(limit) = self.search.time {
            let secs: Vec<f64> = searched
                .iter()
                .filter_map(|t| t.measured.as_ref().map(|m| m.secs))
                .collect();
            let spent: f64 = secs.iter().sum();
            let mean = if secs.is_empty() {
                0.0
            } else {
                spent / secs.len() as f64
            };
            if spent + mean > limit.as_secs_f64() {
                return true;
            }
        }
        false
    }

    /// What the search measured, as the tuner sees it (trials with a place in the space).
    fn observations(&self) -> Vec<Observation> {
        self.st
            .trials
            .iter()
            .filter(|t| !t.role.confirmation())
            .filter_map(|t| {
                let x = t.x.clone()?;
                match (&t.measured, &t.failed) {
                    (Some(m), _) => Some(Observation {
                        x,
                        score: Some(self.score(m)),
                        slack: self
                            .search
                            .constraints
                            .iter()
                            .map(|c| m.value_of(c.metric).map_or(0.0, |v| c.slack(v)))
                            .collect(),
                    }),
                    (None, Some(_)) => Some(Observation {
                        x,
                        score: None,
                        slack: vec![1.0; self.search.constraints.len()],
                    }),
                    _ => None,
                }
            })
            .collect()
    }

    fn score(&self, m: &Measured) -> f64 {
        if self.search.objective.higher_is_better() {
            m.figure
        } else {
            -m.figure
        }
    }

    /// The next trial: the defaults first; with the model strategy, the best setting so far
    /// again while it has a single measurement; else the strategy's proposal.
    fn next_trial(&self) -> Trial {
        let n = self.st.trials.len() as u32 + 1;
        let make = |role: Role, settings: Vec<(String, String)>, x: Option<Vec<f64>>| Trial {
            n,
            role,
            settings,
            x,
            point: format!(
                "{}/trial-{n:03}/{}/t{}/r1",
                self.e.servers[0].label,
                super::plan::workload_labels(self.e)[0],
                self.point.users
            ),
            measured: None,
            failed: None,
        };
        if self.st.trials.is_empty() {
            return make(Role::Defaults, Vec::new(), None);
        }
        let k = self.st.trials.iter().filter(|t| t.role.proposed()).count();
        // Once the design has spread over the space, the best so far is measured again
        // before it may stay the best; never twice in a row, so that noise that keeps
        // changing the best spends at most every other trial on measuring again.
        let after_remeasure = self.st.trials.last().is_some_and(|t| t.role == Role::Remeasure);
        if self.st.strategy == Strategy::Model && k >= self.tuner.design_size() && !after_remeasure {
            if let Some(best) = self.best() {
                let measurements = measurements(&self.st, &best.settings);
                let left = self.search.trials.map_or(usize::MAX, |t| t as usize)
                    - self.st.trials.iter().filter(|t| !t.role.confirmation()).count();
                if measurements.len() < 2 && measurements.len() < MAX_MEASUREMENTS && left > 1 {
                    return make(Role::Remeasure, best.settings.clone(), best.x.clone());
                }
            }
        }
        let (x, why) = self.tuner.propose(&self.observations(), k);
        make(Role::of(why), self.tuner.space.settings(&x), Some(x))
    }

    /// The winning setting's first trial ([`winner`]).
    fn best(&self) -> Option<&Trial> {
        winner(&self.st, self.search).map(|(w, _)| w.first)
    }

    /// Runs trial `i` as a lab point and records what it measured; `false` when interrupted.
    fn run_trial(&mut self, i: usize) -> Result<bool> {
        let trial = self.st.trials[i].clone();
        let variant = trial.point.split('/').nth(1).unwrap_or("trial").to_string();
        let vi = match self.plan.experiment.variants.iter().position(|v| v.name == variant) {
            Some(vi) => {
                self.plan.experiment.variants[vi].settings = trial.settings.clone();
                vi
            }
            None => {
                self.plan
                    .experiment
                    .variants
                    .push(Variant::new(variant, trial.settings.clone()));
                self.plan.experiment.variants.len() - 1
            }
        };
        let rep: u32 = trial
            .point
            .rsplit('/')
            .next()
            .and_then(|r| r.strip_prefix('r'))
            .and_then(|r| r.parse().ok())
            .unwrap_or(1);
        let group = Group {
            variant: vi,
            points: vec![Point {
                id: trial.point.clone(),
                rep,
                ..self.point.clone()
            }],
            ..self.base.clone()
        };
        let started = Instant::now();
        let total = self.search.trials.map_or_else(|| "?".to_string(), |t| t.to_string());
        let role = trial.role.name();
        let settings = if trial.settings.is_empty() {
            "the server's defaults".to_string()
        } else {
            super::settings::settings_text(&trial.settings)
        };
        println!("trial {} ({role}): {settings}", trial.n);
        let n = trial.n;
        let confirmation = trial.role.confirmation();
        let end = self.bench.run_group(&self.plan, &group, &mut self.pace, &|_, _| {
            if confirmation {
                format!("[confirm {n}]")
            } else {
                format!("[trial {n}/{total}]")
            }
        });
        let end = match end {
            Err(_) if self.bench.interrupted() => return Ok(false),
            // A server that does not start with a trial's settings is that trial's result
            // (the model learns to avoid the region); with the defaults nothing can run.
            Err(err) if !trial.settings.is_empty() => {
                let why = format!("{err:#}");
                println!("    FAILED: {}", why.lines().next().unwrap_or(""));
                self.bench.state.failed.insert(trial.point.clone(), why);
                super::run::GroupEnd::default()
            }
            other => other?,
        };
        if end.interrupted || self.bench.interrupted() {
            return Ok(false);
        }
        let t = &mut self.st.trials[i];
        match self.bench.state.done.get(&trial.point) {
            Some(done) => {
                let m = measure(&done.run_dir, done.value, self.search.objective, started.elapsed())
                    .with_context(|| format!("reading trial {}'s run {}", trial.n, done.run_dir.display()))?;
                t.measured = Some(m);
            }
            None => {
                t.failed = Some(
                    self.bench
                        .state
                        .failed
                        .get(&trial.point)
                        .cloned()
                        .unwrap_or_else(|| "no run".into()),
                );
            }
        }
        if trial.role == Role::Defaults {
            if let Some(m) = &self.st.trials[i].measured {
                let vars = RunDir::open(&m.run_dir)
                    .ok()
                    .and_then(|d| d.read_json::<Manifest>("manifest.json").ok())
                    .and_then(|m| m.server)
                    .map(|s| s.variables)
                    .unwrap_or_default();
                let vars = in_bytes(vars, self.e.servers[0].family(), &self.search.parameters);
                for p in &self.search.parameters {
                    if let Some((_, v)) = vars.iter().find(|(k, _)| k.eq_ignore_ascii_case(&p.name)) {
                        self.st.defaults.insert(p.name.clone(), as_written(&p.domain, v));
                    }
                }
                self.st.trials[i].x = self.tuner.space.coords_of(&vars);
            }
        }
        if let Some(m) = &self.st.trials[i].measured {
            println!("    {}", self.verdicts(m).join(", "));
        }
        save(&self.path, &self.st)?;
        Ok(true)
    }

    /// `cv 3.1% (<= 5%) ok`, ... for each constraint.
    fn verdicts(&self, m: &Measured) -> Vec<String> {
        self.search
            .constraints
            .iter()
            .map(|c| match m.value_of(c.metric) {
                Some(v) => format!(
                    "{} {}{} ({c}) {}",
                    c.metric.name(),
                    number(v),
                    unit(c.metric),
                    if c.holds(v) { "ok" } else { "BROKEN" }
                ),
                None => format!("{} not measured ({c} counts as met)", c.metric.name()),
            })
            .collect()
    }

    /// The confirmation: the best setting and the defaults, interleaved, each in its own
    /// server start; `false` when interrupted.
    fn confirm(&mut self) -> Result<bool> {
        let Some(best) = self.best() else {
            return Ok(true);
        };
        if best.settings.is_empty() {
            // The defaults won: nothing to confirm against.
            return Ok(true);
        }
        let best_n = *self.st.confirming.get_or_insert(best.n);
        let Some(best) = self.st.trials.iter().find(|t| t.n == best_n).cloned() else {
            return Ok(true);
        };
        let reps = self.e.repetitions.max(MIN_CONFIRMATIONS);
        if !self.st.trials.iter().any(|t| t.role.confirmation()) {
            println!("Confirming trial {best_n} against the defaults: {reps} run(s) each, interleaved");
            let label = super::plan::workload_labels(self.e)[0].clone();
            for rep in 1..=reps {
                for (role, settings, name) in [
                    (Role::ConfirmDefaults, Vec::new(), "confirm-defaults"),
                    (Role::ConfirmBest, best.settings.clone(), "confirm-best"),
                ] {
                    let n = self.st.trials.len() as u32 + 1;
                    self.st.trials.push(Trial {
                        n,
                        role,
                        settings,
                        x: None,
                        point: format!(
                            "{}/{name}/{label}/t{}/r{rep}",
                            self.e.servers[0].label, self.point.users
                        ),
                        measured: None,
                        failed: None,
                    });
                }
            }
            save(&self.path, &self.st)?;
        }
        while let Some(i) = self
            .st
            .trials
            .iter()
            .position(|t| t.role.confirmation() && t.measured.is_none() && t.failed.is_none())
        {
            if !self.run_trial(i)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `tune.md`.
    fn render(&self) -> String {
        let mut out = String::new();
        let search = self.search;
        let obj = search.objective;
        let searched = self.st.trials.iter().filter(|t| !t.role.confirmation()).count();
        let server = &self.e.servers[0];
        let _ = writeln!(
            out,
            "# {}: {} on {}, {} search, {searched} trial(s), seed {}\n",
            self.e.name,
            obj.text(),
            server.label,
            self.st.strategy.name(),
            self.st.seed
        );
        let winner = winner(&self.st, self.search);
        let best = winner.as_ref().map(|(w, _)| w);
        match best {
            None => {
                let _ =
                    writeln!(
                    out,
                    "No setting met the constraints ({}); the nearest are listed below. Widen the ranges, relax the \
                     constraints or give the search more trials.\n",
                    search.constraints.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
                );
            }
            Some(b) if b.first.settings.is_empty() => {
                let _ = writeln!(
                    out,
                    "The server's defaults were the best setting found ({} {} over {} run(s)): no trial beat them \
                     while meeting the constraints.\n",
                    number(b.figure),
                    obj.unit(),
                    b.n
                );
            }
            Some(b) => {
                let _ = writeln!(
                    out,
                    "Best: trial {} ({} measurement(s), mean {} {})",
                    b.first.n,
                    b.n,
                    number(b.figure),
                    obj.unit()
                );
                for (k, v) in &b.first.settings {
                    let default = self
                        .st
                        .defaults
                        .get(k)
                        .map_or(String::new(), |d| format!("  (default {d})"));
                    let _ = writeln!(out, "    {k} = {v}{default}");
                }
                if let Some((_, Some(top))) = &winner {
                    let (band, noise) = draw_band_pct(&self.st);
                    let _ = writeln!(
                        out,
                        "  (trial {} measured {} {} with more memory or disk: within {band:.0}% of it, this is a draw, \
                         and the draw goes to the cheaper setting; the band is the draw rule's {DEFAULT_THRESHOLD_PCT}% \
                         or twice the run-to-run noise the re-measurements showed{}, whichever is larger)",
                        top.first.n,
                        number(top.figure),
                        obj.unit(),
                        noise.map_or(String::new(), |n| format!(" (CV {n:.1}%)"))
                    );
                }
                out.push('\n');
                out.push_str(&self.confirmation_text());
            }
        }
        out.push_str("## Trials\n\n");
        out.push_str(&self.trials_table());
        out.push('\n');
        let why = explain_constraints(&self.st, search);
        if !why.is_empty() {
            out.push_str("## What the constraints ruled out\n\n");
            out.push_str(&why);
            out.push('\n');
        }
        let effects = effects(&self.st, search);
        if !effects.is_empty() {
            out.push_str("## Each parameter's effect (trials that met the constraints)\n\n");
            out.push_str(&effects);
            out.push('\n');
        }
        if let Some(b) = best.filter(|b| !b.first.settings.is_empty()) {
            match self.confirmed_worth_it() {
                Some(true) => {
                    out.push_str("## Ready to use\n\n");
                    if self.confirmed().is_some_and(|c| c.3 != Verdict::Better) {
                        out.push_str(
                            "At the same figure as the defaults (a draw), it met the constraints the defaults broke.\n\n",
                        );
                    }
                }
                Some(false) => out.push_str(
                    "## Not shown to beat the defaults: keep them\n\nThe confirmation could not tell the best setting \
                     from the defaults (or found it worse), so the defaults are the answer at this noise. The setting, \
                     should you want to measure it longer:\n\n",
                ),
                None => out.push_str("## Unconfirmed\n\nThe confirmation did not finish; the best setting so far:\n\n"),
            }
            let set: Vec<String> = b.first.settings.iter().map(|(k, v)| format!("--set {k}={v}")).collect();
            let _ = writeln!(out, "    {}\n", set.join(" "));
            let (file, section) = match server.family() {
                dbperf_driver::target::Family::Postgres => ("postgresql.conf", None),
                _ => ("my.cnf", Some("[mysqld]")),
            };
            let _ = writeln!(out, "{file}:\n");
            if let Some(s) = section {
                let _ = writeln!(out, "    {s}");
            }
            for (k, v) in &b.first.settings {
                let v = if server.family() == dbperf_driver::target::Family::Postgres && v.parse::<f64>().is_err() {
                    format!("'{v}'")
                } else {
                    v.clone()
                };
                let _ = writeln!(out, "    {k} = {v}");
            }
            if !server.settings.is_empty() {
                let _ = writeln!(
                    out,
                    "\n(measured with the file's own settings too: {})",
                    super::settings::settings_text(&server.settings)
                );
            }
        }
        out
    }

    /// The confirmation's verdict: both spreads, the difference, the draw rule's call, and
    /// whether the best still met the constraints.
    /// The confirmation's spreads (the best's, the defaults') and the draw rule's call;
    /// `None` before both have runs.
    fn confirmed(&self) -> Option<(Spread, Spread, Option<f64>, Verdict)> {
        let figures = |role: Role| -> Vec<f64> {
            self.st
                .trials
                .iter()
                .filter(|t| t.role == role)
                .filter_map(|t| t.measured.as_ref().map(|m| m.figure))
                .collect()
        };
        let bs = Spread::of(&figures(Role::ConfirmBest))?;
        let ds = Spread::of(&figures(Role::ConfirmDefaults))?;
        let (diff, verdict) = judge(
            &bs,
            &ds,
            DEFAULT_THRESHOLD_PCT,
            self.search.objective.higher_is_better(),
        );
        Some((bs, ds, diff, verdict))
    }

    /// The constraints the confirmation runs of `role` broke: `cv <= 5% broken in 2 of 3 run(s)`.
    fn broken_in(&self, role: Role) -> Vec<String> {
        self.search
            .constraints
            .iter()
            .filter_map(|c| {
                let v: Vec<f64> = self
                    .st
                    .trials
                    .iter()
                    .filter(|t| t.role == role)
                    .filter_map(|t| t.measured.as_ref().and_then(|m| m.value_of(c.metric)))
                    .collect();
                let bad = v.iter().filter(|x| !c.holds(**x)).count();
                (bad > 0).then(|| format!("{c} broken in {bad} of {} run(s)", v.len()))
            })
            .collect()
    }

    /// Whether the confirmation shows the best worth using: better beyond the noise, or at
    /// the same figure (a draw) while meeting constraints the defaults broke.
    fn confirmed_worth_it(&self) -> Option<bool> {
        let verdict = self.confirmed()?.3;
        let best_ok = self.broken_in(Role::ConfirmBest).is_empty();
        Some(match verdict {
            Verdict::Better => true,
            Verdict::Draw => best_ok && !self.broken_in(Role::ConfirmDefaults).is_empty(),
            _ => false,
        })
    }

    fn confirmation_text(&self) -> String {
        let obj = self.search.objective;
        let Some((bs, ds, diff, verdict)) = self.confirmed() else {
            return "Not confirmed: the confirmation runs did not finish.\n\n".into();
        };
        let spread = |s: &Spread| format!("{} (n={}, {}..{})", number(s.median), s.n, number(s.min), number(s.max));
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Confirmed against the defaults, interleaved: {} {} vs {}: {}{}",
            spread(&bs),
            obj.unit(),
            spread(&ds),
            diff.map_or("-".to_string(), |d| format!("{d:+.1}%")),
            match verdict {
                Verdict::Better => ", better beyond the noise".to_string(),
                Verdict::Worse => ", worse beyond the noise: the search's best did not hold up".to_string(),
                _ => format!(
                    ", a draw (within {DEFAULT_THRESHOLD_PCT}% or overlapping ranges): the gain is not shown beyond the noise"
                ),
            }
        );
        let broken = self.broken_in(Role::ConfirmBest);
        if broken.is_empty() {
            if !self.search.constraints.is_empty() {
                let _ = writeln!(out, "Every confirmation run of the best met the constraints.");
            }
        } else {
            let _ = writeln!(
                out,
                "In the confirmation the best did not always meet the constraints: {}.",
                broken.join("; ")
            );
        }
        let defaults_broke = self.broken_in(Role::ConfirmDefaults);
        if !defaults_broke.is_empty() {
            let _ = writeln!(
                out,
                "The defaults broke constraints in the confirmation: {}.",
                defaults_broke.join("; ")
            );
        }
        let _ = writeln!(out, "(draw rule: {})\n", stats::DRAW_RULE);
        out
    }

    fn trials_table(&self) -> String {
        let mut rows = vec![{
            let mut h = vec!["n".to_string(), "role".into()];
            h.extend(self.search.parameters.iter().map(|p| p.name.clone()));
            h.push(self.search.objective.unit().into());
            h.extend(self.search.constraints.iter().map(|c| c.metric.name().to_string()));
            h.push("ok".into());
            h.push("run".into());
            h
        }];
        for t in &self.st.trials {
            let mut r = vec![t.n.to_string(), t.role.name().to_string()];
            for p in &self.search.parameters {
                let v = t
                    .settings
                    .iter()
                    .find(|(k, _)| *k == p.name)
                    .map(|(_, v)| v.clone())
                    .or_else(|| self.st.defaults.get(&p.name).map(|d| format!("({d})")))
                    .unwrap_or_else(|| "default".into());
                r.push(v);
            }
            match (&t.measured, &t.failed) {
                (Some(m), _) => {
                    r.push(number(m.figure));
                    let mut ok = true;
                    for c in &self.search.constraints {
                        match m.value_of(c.metric) {
                            Some(v) => {
                                ok &= c.holds(v);
                                r.push(format!("{}{}", number(v), unit(c.metric)));
                            }
                            None => r.push("-".into()),
                        }
                    }
                    r.push(if ok { "yes" } else { "no" }.into());
                    r.push(m.run_id.clone());
                }
                (None, Some(why)) => {
                    r.push("failed".into());
                    r.extend(self.search.constraints.iter().map(|_| "-".to_string()));
                    r.push("no".into());
                    r.push(why.lines().next().unwrap_or("").chars().take(60).collect());
                }
                _ => continue,
            }
            rows.push(r);
        }
        markdown(&rows)
    }
}

/// The measured (not failed) search trials of `settings`.
fn measurements<'a>(st: &'a TuneState, settings: &[(String, String)]) -> Vec<&'a Measured> {
    st.trials
        .iter()
        .filter(|t| !t.role.confirmation() && t.settings == settings)
        .filter_map(|t| t.measured.as_ref())
        .collect()
}

/// The setting with the best mean figure among those whose every measure meets the
/// constraints on average, except that a draw goes to the cheaper: among the settings
/// within the draw band ([`draw_band_pct`]) of the best, the one with the least memory and
/// disk (the sum of the size parameters, defaults counted at their value), so a search
/// stops paying for a bigger buffer pool or redo log that no longer buys throughput. With
/// the winner, the best-measured setting when it is another.
fn winner<'a>(st: &'a TuneState, search: &Search) -> Option<(Ranked<'a>, Option<Ranked<'a>>)> {
    let ranked = ranked(st, search);
    let cost = |t: &Trial| cost(st, search, t);
    let band = draw_band_pct(st).0;
    let top = ranked.iter().find(|r| r.feasible)?.clone();
    let draw = |figure: f64| {
        let higher = search.objective.higher_is_better();
        judge(&Spread::single(figure), &Spread::single(top.figure), band, higher).1 == Verdict::Draw
    };
    let cheapest = ranked
        .iter()
        .filter(|r| r.feasible && draw(r.figure))
        .min_by(|a, b| cost(a.first).total_cmp(&cost(b.first)))?
        .clone();
    if cheapest.first.n == top.first.n || cost(cheapest.first) >= cost(top.first) {
        Some((top, None))
    } else {
        Some((cheapest, Some(top)))
    }
}

/// The band within which two settings' mean figures are a draw during the search, percent
/// ([`dbperf_core::stats::draw_band_pct`]): the draw rule's threshold, or twice the run-to-run
/// noise the re-measurements showed, whichever is larger (the noise: the pooled coefficient
/// of variation of the settings measured more than once, `None` before any was).
fn draw_band_pct(st: &TuneState) -> (f64, Option<f64>) {
    let mut settings: Vec<&Vec<(String, String)>> = Vec::new();
    for t in st.trials.iter().filter(|t| !t.role.confirmation()) {
        if !settings.contains(&&t.settings) {
            settings.push(&t.settings);
        }
    }
    let figures: Vec<Vec<f64>> = settings
        .into_iter()
        .map(|s| measurements(st, s).iter().map(|m| m.figure).collect())
        .collect();
    let noise = stats::pooled_cv(figures.iter().map(Vec::as_slice));
    (stats::draw_band_pct(DEFAULT_THRESHOLD_PCT, noise), noise)
}

/// Bytes of memory and disk a setting asks for: its size parameters, each at the trial's
/// value or the server's default (0 when unknown).
fn cost(st: &TuneState, search: &Search, t: &Trial) -> f64 {
    search
        .parameters
        .iter()
        .filter(|p| {
            matches!(
                p.domain,
                Domain::Int { size: true, .. } | Domain::LogInt { size: true, .. }
            )
        })
        .filter_map(|p| param_value(t, st, &p.name).map(|(n, _)| n))
        .filter(|n| n.is_finite())
        .sum()
}

/// Every measured setting of the search with its mean figure and whether it meets the
/// constraints, best first (feasible ones before the others).
fn ranked<'a>(st: &'a TuneState, search: &Search) -> Vec<Ranked<'a>> {
    let mut out: Vec<Ranked<'a>> = Vec::new();
    for t in st.trials.iter().filter(|t| !t.role.confirmation()) {
        if out.iter().any(|r| r.first.settings == t.settings) {
            continue;
        }
        let ms = measurements(st, &t.settings);
        if ms.is_empty() {
            continue;
        }
        let mean = |f: &dyn Fn(&Measured) -> Option<f64>| {
            let v: Vec<f64> = ms.iter().filter_map(|m| f(m)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let figure = mean(&|m| Some(m.figure)).unwrap_or(0.0);
        let feasible = search
            .constraints
            .iter()
            .all(|c| mean(&|m| m.value_of(c.metric)).is_none_or(|v| c.holds(v)));
        out.push(Ranked {
            first: t,
            n: ms.len(),
            figure,
            feasible,
        });
    }
    let better = search.objective.higher_is_better();
    out.sort_by(|a, b| {
        b.feasible.cmp(&a.feasible).then_with(|| {
            if better {
                b.figure.total_cmp(&a.figure)
            } else {
                a.figure.total_cmp(&b.figure)
            }
        })
    });
    out
}

/// A measured setting in the ranking.
#[derive(Clone)]
struct Ranked<'a> {
    first: &'a Trial,
    n: usize,
    figure: f64,
    feasible: bool,
}

/// Reads what a trial's run measured: the lab's figure, the summary's percentiles, and what
/// `dbperf analyze` finds (CV, stalls, checkpoint age and sync flush from telemetry).
fn measure(run_dir: &Path, figure: f64, objective: Objective, took: Duration) -> Result<Measured> {
    let dir = RunDir::open(run_dir)?;
    let summary: Summary = dir.read_json(dbperf_results::summary::SUMMARY_FILE)?;
    let inside = RunInside::read(run_dir);
    let pressure = inside.as_ref().and_then(|i| i.pressure.as_ref());
    let sync_flush_pct = pressure
        .filter(|p| p.checkpoint_samples > 0)
        .map(|p| p.sync_flush_samples as f64 * 100.0 / p.checkpoint_samples as f64);
    Ok(Measured {
        run_id: summary.run_id.clone(),
        run_dir: run_dir.to_path_buf(),
        figure: if objective == Objective::MinP99 {
            summary.latency_ms.p99
        } else {
            figure
        },
        p95_ms: summary.latency_ms.p95,
        p99_ms: summary.latency_ms.p99,
        cv_pct: inside.as_ref().map(|i| i.tps_cv_pct),
        stalls: inside.as_ref().map(|i| i.stalls),
        sync_flush_pct,
        checkpoint_max_pct: pressure.and_then(|p| p.checkpoint_max_pct),
        dirty_max_pct: pressure.and_then(|p| p.dirty_max_pct),
        redo_needed_bytes: pressure
            .and_then(|p| dbperf_report::analysis::explain::redo_needed(p.redo_capacity_bytes, p.checkpoint_max_pct)),
        secs: took.as_secs_f64(),
    })
}

/// PostgreSQL's `pg_settings` gives sizes in each setting's own unit (`shared_buffers` in
/// 8 kB pages, `max_wal_size` in MB); the searched size parameters' values in bytes, for
/// the ones whose unit is known here (a size parameter of unknown unit is left out, so the
/// defaults are not placed in the space). MySQL and MariaDB give bytes already.
fn in_bytes(
    mut vars: BTreeMap<String, String>,
    family: dbperf_driver::target::Family,
    params: &[super::search::Parameter],
) -> BTreeMap<String, String> {
    if family != dbperf_driver::target::Family::Postgres {
        return vars;
    }
    const UNITS: &[(&str, u64)] = &[
        ("shared_buffers", 8 << 10),
        ("effective_cache_size", 8 << 10),
        ("wal_buffers", 8 << 10),
        ("temp_buffers", 8 << 10),
        ("work_mem", 1 << 10),
        ("maintenance_work_mem", 1 << 10),
        ("autovacuum_work_mem", 1 << 10),
        ("logical_decoding_work_mem", 1 << 10),
        ("max_wal_size", 1 << 20),
        ("min_wal_size", 1 << 20),
        ("checkpoint_flush_after", 8 << 10),
        ("bgwriter_flush_after", 8 << 10),
        ("backend_flush_after", 8 << 10),
        ("wal_writer_flush_after", 8 << 10),
    ];
    for p in params {
        if !matches!(
            p.domain,
            Domain::Int { size: true, .. } | Domain::LogInt { size: true, .. }
        ) {
            continue;
        }
        let unit = UNITS
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(&p.name))
            .map(|(_, u)| *u);
        let key = vars.keys().find(|k| k.eq_ignore_ascii_case(&p.name)).cloned();
        if let Some(key) = key {
            match (unit, vars[&key].trim().parse::<u64>()) {
                (Some(u), Ok(n)) => {
                    vars.insert(key, (n * u).to_string());
                }
                _ => {
                    vars.remove(&key);
                }
            }
        }
    }
    vars
}

/// A server's value as the parameter's range writes them: sizes as `512M`.
fn as_written(domain: &super::search::Domain, value: &str) -> String {
    use super::search::{size_text, Domain};
    match domain {
        Domain::Int { size: true, .. } | Domain::LogInt { size: true, .. } => value
            .trim()
            .parse::<u64>()
            .map_or_else(|_| value.to_string(), size_text),
        _ => value.to_string(),
    }
}

fn unit(m: Metric) -> &'static str {
    match m {
        Metric::Cv | Metric::SyncFlush => "%",
        Metric::Stalls => "",
        Metric::P95 | Metric::P99 => " ms",
    }
}

/// A figure with as many decimals as it needs (3 significant digits below 100).
fn number(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// A markdown table, columns padded.
fn markdown(rows: &[Vec<String>]) -> String {
    let width = super::plan::column_widths(rows);
    let cols = width.len();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = (0..cols)
            .map(|c| format!("{:w$}", r.get(c).map_or("", String::as_str), w = width[c]))
            .collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if i == 0 {
            let rule: Vec<String> = width.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "|-{}-|", rule.join("-|-"));
        }
    }
    out
}

/// A search trial's value of parameter `p` as a number (its own setting, else the server's
/// default), for the explanations.
fn param_value(t: &Trial, st: &TuneState, name: &str) -> Option<(f64, String)> {
    let text = t
        .settings
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .or_else(|| st.defaults.get(name).cloned())?;
    let n = text
        .parse::<f64>()
        .ok()
        .or_else(|| dbperf_core::size::parse_size(&text).map(|b| b as f64));
    Some((n.unwrap_or(f64::NAN), text))
}

/// For each constraint some trials broke: the parameter whose one threshold (or one choice)
/// best separates the trials that broke it from those that met it, when it separates nine in
/// ten or better, with what the broken trials' telemetry showed.
pub(crate) fn explain_constraints(st: &TuneState, search: &Search) -> String {
    let trials: Vec<(&Trial, &Measured)> = st
        .trials
        .iter()
        .filter(|t| !t.role.confirmation())
        .filter_map(|t| t.measured.as_ref().map(|m| (t, m)))
        .collect();
    let mut out = String::new();
    for c in &search.constraints {
        let judged: Vec<(&Trial, &Measured, bool)> = trials
            .iter()
            .filter_map(|(t, m)| m.value_of(c.metric).map(|v| (*t, *m, !c.holds(v))))
            .collect();
        let broken: Vec<&(&Trial, &Measured, bool)> = judged.iter().filter(|j| j.2).collect();
        if broken.is_empty() {
            if !judged.is_empty() {
                let _ = writeln!(out, "- `{c}`: met by every trial.");
            }
            continue;
        }
        let mut best_rule: Option<(f64, String)> = None;
        for p in &search.parameters {
            let mut points: Vec<(f64, String, bool)> = judged
                .iter()
                .filter_map(|(t, _, bad)| param_value(t, st, &p.name).map(|(n, s)| (n, s, *bad)))
                .collect();
            if points.len() < 3 {
                continue;
            }
            let numeric =
                points.iter().all(|(n, _, _)| n.is_finite()) && !matches!(p.domain, super::search::Domain::Choice(_));
            let total = points.len() as f64;
            if numeric {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                for i in 1..points.len() {
                    if points[i].0 == points[i - 1].0 {
                        continue;
                    }
                    let (lo_side, hi_side) = points.split_at(i);
                    for high_breaks in [true, false] {
                        let right = lo_side.iter().filter(|q| q.2 != high_breaks).count()
                            + hi_side.iter().filter(|q| q.2 == high_breaks).count();
                        let acc = right as f64 / total;
                        let (side, edge) = if high_breaks {
                            (hi_side, format!(">= {}", hi_side[0].1))
                        } else {
                            (lo_side, format!("<= {}", lo_side[lo_side.len() - 1].1))
                        };
                        let broke = side.iter().filter(|q| q.2).count();
                        let rule = format!("{} {edge} ({broke} of {} broke it)", p.name, side.len());
                        if best_rule.as_ref().is_none_or(|(a, _)| acc > *a) {
                            best_rule = Some((acc, rule));
                        }
                    }
                }
            } else {
                let values: Vec<String> = {
                    let mut v: Vec<String> = points.iter().map(|q| q.1.clone()).collect();
                    v.sort();
                    v.dedup();
                    v
                };
                for v in values {
                    let right = points.iter().filter(|q| (q.1 == v) == q.2).count();
                    let acc = right as f64 / total;
                    let side = points.iter().filter(|q| q.1 == v).count();
                    let broke = points.iter().filter(|q| q.1 == v && q.2).count();
                    let rule = format!("{} = {v} ({broke} of {side} broke it)", p.name);
                    if best_rule.as_ref().is_none_or(|(a, _)| acc > *a) {
                        best_rule = Some((acc, rule));
                    }
                }
            }
        }
        let range = |f: &dyn Fn(&Measured) -> Option<f64>, unit: &str| -> Option<String> {
            let v: Vec<f64> = broken.iter().filter_map(|j| f(j.1)).collect();
            let s = Spread::of(&v)?;
            Some(if s.min == s.max {
                format!("{}{unit}", number(s.min))
            } else {
                format!("{}..{}{unit}", number(s.min), number(s.max))
            })
        };
        let mut evidence = Vec::new();
        if let Some(r) = range(&|m| m.value_of(c.metric), unit(c.metric)) {
            evidence.push(format!("{} was {r}", c.metric.name()));
        }
        if let Some(r) = range(&|m| m.checkpoint_max_pct.filter(|v| *v >= 50.0), "%") {
            evidence.push(format!("checkpoint age reached {r} of its maximum"));
        }
        if let Some(r) = range(&|m| m.sync_flush_pct.filter(|v| *v > 0.0), "%") {
            evidence.push(format!("InnoDB flushed synchronously {r} of the time"));
        }
        if let Some(r) = range(&|m| m.dirty_max_pct.filter(|v| *v >= 10.0), "%") {
            evidence.push(format!("dirty pages peaked at {r} of the buffer pool"));
        }
        let stalls: Vec<usize> = broken.iter().filter_map(|j| j.1.stalls).filter(|s| *s > 0).collect();
        if let (Some(lo), Some(hi)) = (stalls.iter().min(), stalls.iter().max()) {
            evidence.push(if lo == hi {
                format!("{lo} stall(s) per run")
            } else {
                format!("{lo}..{hi} stalls per run")
            });
        }
        let _ = write!(out, "- `{c}`: broken by {} of {} trial(s)", broken.len(), judged.len());
        match best_rule {
            Some((acc, rule)) if acc >= 0.9 => {
                let _ = write!(out, ", the region {rule}");
            }
            _ => {
                let _ = write!(out, ", with no one parameter's range to blame");
            }
        }
        if !evidence.is_empty() {
            let _ = write!(out, "; in those runs {}", evidence.join(", "));
        }
        let _ = writeln!(out, ".");
    }
    out
}

/// Per parameter, the feasible trials' figures at each value range: where the figure
/// rose and where more stopped paying.
pub(crate) fn effects(st: &TuneState, search: &Search) -> String {
    let ok: Vec<(&Trial, &Measured)> = st
        .trials
        .iter()
        .filter(|t| !t.role.confirmation())
        .filter_map(|t| t.measured.as_ref().map(|m| (t, m)))
        .filter(|(_, m)| {
            search
                .constraints
                .iter()
                .all(|c| m.value_of(c.metric).is_none_or(|v| c.holds(v)))
        })
        .collect();
    let mut out = String::new();
    if ok.len() < 3 {
        return out;
    }
    for p in &search.parameters {
        let mut points: Vec<(f64, String, f64)> = ok
            .iter()
            .filter_map(|(t, m)| param_value(t, st, &p.name).map(|(n, s)| (n, s, m.figure)))
            .collect();
        if points.len() < 3 {
            continue;
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // One entry per value: the mean of its trials.
        let mut values: Vec<(String, f64, usize)> = Vec::new();
        for (_, text, figure) in &points {
            match values.last_mut() {
                Some((t, sum, n)) if t == text => {
                    *sum += figure;
                    *n += 1;
                }
                _ => values.push((text.clone(), *figure, 1)),
            }
        }
        let mean = |v: &(String, f64, usize)| v.1 / v.2 as f64;
        let best = values
            .iter()
            .max_by(|a, b| {
                if search.objective.higher_is_better() {
                    mean(a).total_cmp(&mean(b))
                } else {
                    mean(b).total_cmp(&mean(a))
                }
            })
            .map(|v| v.0.clone())
            .unwrap_or_default();
        let line: Vec<String> = values
            .iter()
            .map(|v| {
                if v.2 > 1 {
                    format!("{}: {} ({} runs)", v.0, number(mean(v)), v.2)
                } else {
                    format!("{}: {}", v.0, number(mean(v)))
                }
            })
            .collect();
        let _ = writeln!(out, "- `{}` (best at {best}): {}", p.name, line.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(parameters: &str, constraints: &str) -> Search {
        let text = format!(
            "[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\ntest = \"oltp_read_only\"\nusers = [4]\n\
             [search]\nobjective = \"max tps\"\ntrials = 10\nconstraints = [{constraints}]\n\
             [search.parameters]\n{parameters}\n"
        );
        Experiment::parse(&text, Path::new("t.toml")).unwrap().search.unwrap()
    }

    fn measured(figure: f64, cv: f64, checkpoint: Option<f64>) -> Measured {
        Measured {
            run_id: format!("run-{figure}"),
            run_dir: PathBuf::from("/nowhere"),
            figure,
            p95_ms: 1.0,
            p99_ms: 2.0,
            cv_pct: Some(cv),
            stalls: Some(0),
            sync_flush_pct: checkpoint.map(|c| if c > 90.0 { 20.0 } else { 0.0 }),
            checkpoint_max_pct: checkpoint,
            dirty_max_pct: None,
            redo_needed_bytes: None,
            secs: 10.0,
        }
    }

    fn state(name: &str, trials: &[(Option<&str>, Measured)]) -> TuneState {
        TuneState {
            experiment: "t".into(),
            strategy: Strategy::Model,
            seed: 1,
            fingerprint: String::new(),
            trials: trials
                .iter()
                .enumerate()
                .map(|(i, (v, m))| Trial {
                    n: i as u32 + 1,
                    role: if v.is_none() { Role::Defaults } else { Role::Model },
                    settings: v.map(|v| vec![(name.to_string(), v.to_string())]).unwrap_or_default(),
                    x: None,
                    point: String::new(),
                    measured: Some(m.clone()),
                    failed: None,
                })
                .collect(),
            defaults: [(name.to_string(), "128M".to_string())].into_iter().collect(),
            confirming: None,
        }
    }

    #[test]
    fn a_draw_goes_to_the_smaller_buffer_pool_and_a_broken_constraint_never_wins() {
        let s = search(
            "innodb_buffer_pool_size = { log_range = [\"16M\", \"2G\"] }",
            "\"cv <= 10%\"",
        );
        let st = state(
            "innodb_buffer_pool_size",
            &[
                (None, measured(1000.0, 3.0, None)),
                (Some("64M"), measured(1500.0, 3.0, None)),
                (Some("256M"), measured(2000.0, 3.0, None)),
                (Some("1G"), measured(2050.0, 3.0, None)),
                (Some("2G"), measured(2500.0, 30.0, None)),
            ],
        );
        let (w, top) = winner(&st, &s).unwrap();
        assert_eq!(w.first.settings[0].1, "256M");
        assert_eq!(top.unwrap().first.settings[0].1, "1G");
        // Beyond the band the bigger one wins.
        let mut st2 = st.clone();
        st2.trials[3].measured.as_mut().unwrap().figure = 2200.0;
        let (w, top) = winner(&st2, &s).unwrap();
        assert_eq!(w.first.settings[0].1, "1G");
        assert!(top.is_none());
        // Two measurements of one setting are judged by their mean.
        let mut st3 = st2.clone();
        let mut again = st3.trials[3].clone();
        again.n = 6;
        again.measured.as_mut().unwrap().figure = 1600.0;
        st3.trials.push(again);
        // ... and their spread widens the draw band: 2200 and 1600 are a CV of 22%, so
        // anything within 45% of the best (256M's 2000) is a draw, which 64M's 1500 is.
        let (band, noise) = draw_band_pct(&st3);
        assert!(
            (noise.unwrap() - 22.3).abs() < 0.1 && (band - 44.6).abs() < 0.2,
            "{band} {noise:?}"
        );
        let (w, top) = winner(&st3, &s).unwrap();
        assert_eq!(w.first.settings[0].1, "64M");
        assert_eq!(top.unwrap().first.settings[0].1, "256M", "1G's mean is 1900 now");
        assert_eq!(draw_band_pct(&st), (DEFAULT_THRESHOLD_PCT, None));
    }

    #[test]
    fn a_constraint_region_is_named_with_what_telemetry_saw_there() {
        let s = search("innodb_max_dirty_pages_pct = { range = [10, 90] }", "\"cv <= 5%\"");
        let trials: Vec<(Option<&str>, Measured)> = [
            ("20", 2.0, 40.0),
            ("40", 3.0, 50.0),
            ("55", 2.5, 60.0),
            ("60", 3.0, 70.0),
            ("72", 9.0, 99.0),
            ("80", 14.0, 100.0),
            ("88", 19.0, 100.0),
        ]
        .iter()
        .map(|(v, cv, ck)| (Some(*v), measured(1000.0 + v.parse::<f64>().unwrap(), *cv, Some(*ck))))
        .collect();
        let st = state("innodb_max_dirty_pages_pct", &trials);
        let text = explain_constraints(&st, &s);
        assert!(
            text.contains("broken by 3 of 7 trial(s), the region innodb_max_dirty_pages_pct >= 72 (3 of 3 broke it)"),
            "{text}"
        );
        assert!(text.contains("cv was 9.00..19.0%"), "{text}");
        assert!(text.contains("checkpoint age reached 99.0..100%"), "{text}");
        assert!(text.contains("InnoDB flushed synchronously 20.0%"), "{text}");
        let effects = effects(&st, &s);
        assert!(
            effects.contains("(best at 60): 20: 1020, 40: 1040, 55: 1055, 60: 1060"),
            "{effects}"
        );
    }

    #[test]
    fn postgres_sizes_come_in_their_units_and_leave_in_bytes() {
        let size = |name: &str| super::super::search::Parameter {
            name: name.into(),
            domain: Domain::LogInt {
                lo: 1 << 20,
                hi: 8 << 30,
                size: true,
            },
        };
        let params = vec![size("shared_buffers"), size("max_wal_size"), size("some_new_size")];
        let vars: BTreeMap<String, String> = [
            ("shared_buffers", "16384"),
            ("max_wal_size", "1024"),
            ("some_new_size", "7"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let pg = in_bytes(vars.clone(), dbperf_driver::target::Family::Postgres, &params);
        assert_eq!(pg["shared_buffers"], (128u64 << 20).to_string());
        assert_eq!(pg["max_wal_size"], (1u64 << 30).to_string());
        assert!(!pg.contains_key("some_new_size"), "an unknown unit is left out");
        assert_eq!(
            in_bytes(vars.clone(), dbperf_driver::target::Family::Mysql, &params),
            vars
        );
        assert_eq!(as_written(&params[0].domain, &pg["shared_buffers"]), "128M");
    }
}
