//! Choosing each trial's settings for `dbperf lab tune`: the search space in the coordinates
//! an optimizer works in (whole numbers, logarithms of sizes, indexes of choices), snapped to
//! values a person would write, and three strategies:
//!
//! - `model`: Bayesian optimisation. A Latin hypercube spreads the first trials over the
//!   space; after it, egobox's EGO fits a Gaussian process to the measured figure and one per
//!   constraint and proposes the setting with the most expected improvement among those
//!   where the constraint models predict every constraint met.
//! - `random` and `grid`: the plain searches, to compare the model with on the same budget.
//!
//! Pure: measurements come in as [`Observation`]s and settings go out. Every random choice is
//! drawn from the seed and the proposal's number, so the same seed and the same
//! measurements give the same proposals (a search resumed after Ctrl-C continues where it
//! was). Repeated measurements of one setting are averaged before the model sees them, which
//! is how noise reaches it: the tuner ([`super::tune`]) re-measures promising settings.

use std::collections::BTreeMap;

use egobox_doe::{Lhs, LhsKind, SamplingMethod};
use egobox_ego::{EgorServiceBuilder, InfillStrategy, XType};
use ndarray::Array2;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_xoshiro::rand_core::SeedableRng as _;
use rand_xoshiro::Xoshiro256Plus;
use serde::{Deserialize, Serialize};

use super::search::{size_text, Domain, Parameter};
use dbperf_core::size::parse_size;

/// How trials are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Bayesian optimisation: a Gaussian-process model of the figure and the constraints.
    Model,
    /// Settings drawn uniformly (log-uniformly for log ranges) from the space.
    Random,
    /// An even grid over the space, visited in a shuffled order.
    Grid,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Model => "model",
            Strategy::Random => "random",
            Strategy::Grid => "grid",
        }
    }
}

/// The searched parameters as coordinates: one number per parameter.
#[derive(Debug, Clone)]
pub struct Space {
    pub params: Vec<Parameter>,
}

/// What one measurement of one setting gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The setting, in [`Space`] coordinates.
    pub x: Vec<f64>,
    /// Higher is better (a minimised figure comes negated); `None`: the trial failed (the
    /// server did not start with these settings, the run broke).
    pub score: Option<f64>,
    /// Per constraint, how far past its bound the measurement was, relative to the bound:
    /// `<= 0` met it.
    pub slack: Vec<f64>,
}

impl Space {
    pub fn dims(&self) -> usize {
        self.params.len()
    }

    /// Each coordinate's `(low, high)`.
    pub fn bounds(&self) -> Vec<(f64, f64)> {
        self.params
            .iter()
            .map(|p| match &p.domain {
                Domain::Int { lo, hi, .. } => (*lo as f64, *hi as f64),
                Domain::LogInt { lo, hi, .. } => ((*lo as f64).ln(), (*hi as f64).ln()),
                Domain::Float { lo, hi } => (*lo, *hi),
                Domain::Choice(v) => (0.0, (v.len() - 1) as f64),
            })
            .collect()
    }

    /// The coordinate types the model is told about.
    fn xtypes(&self) -> Vec<XType> {
        self.params
            .iter()
            .zip(self.bounds())
            .map(|(p, (lo, hi))| match &p.domain {
                Domain::Int { lo, hi, size: false } if i32::try_from(*lo).is_ok() && i32::try_from(*hi).is_ok() => {
                    XType::Int(*lo as i32, *hi as i32)
                }
                Domain::Choice(v) => XType::Enum(v.len()),
                _ => XType::Float(lo, hi),
            })
            .collect()
    }

    /// `x` clamped into the space and rounded to a value a person would write: whole numbers,
    /// sizes to a sixteenth of their power of two (1408M, not 1437.3M), log-scale numbers to
    /// two significant digits, choices to an index.
    pub fn snap(&self, x: &[f64]) -> Vec<f64> {
        self.params
            .iter()
            .zip(self.bounds())
            .zip(x)
            .map(|((p, (lo, hi)), v)| {
                let v = if v.is_finite() { v.clamp(lo, hi) } else { lo };
                match &p.domain {
                    Domain::Int { lo, hi, size } => {
                        let n = if *size {
                            round_size(v.round() as u64) as f64
                        } else {
                            v.round()
                        };
                        n.clamp(*lo as f64, *hi as f64)
                    }
                    Domain::LogInt { lo, hi, size } => {
                        let n = v.exp().round() as u64;
                        let n = if *size { round_size(n) } else { round_digits(n, 2) };
                        (n.clamp(*lo, *hi) as f64).ln()
                    }
                    Domain::Float { .. } => v,
                    Domain::Choice(_) => v.round(),
                }
            })
            .collect()
    }

    /// The settings of the point `x` (snapped), in the server's option syntax.
    pub fn settings(&self, x: &[f64]) -> Vec<(String, String)> {
        self.params
            .iter()
            .zip(self.snap(x))
            .map(|(p, v)| {
                let text = match &p.domain {
                    Domain::Int { size: true, .. } => size_text(v as u64),
                    Domain::Int { .. } => format!("{}", v as i64),
                    Domain::LogInt { size: true, .. } => size_text(v.exp().round() as u64),
                    Domain::LogInt { .. } => format!("{}", v.exp().round() as u64),
                    Domain::Float { .. } if v.abs() < 1e9 => format!("{}", (v * 1e6).round() / 1e6),
                    Domain::Float { .. } => format!("{v}"),
                    Domain::Choice(values) => values[v as usize].clone(),
                };
                (p.name.clone(), text)
            })
            .collect()
    }

    /// The point of the server's own values (`variables`: its global variables by name, as a
    /// run's manifest keeps them); `None` when a parameter's value is missing or outside its
    /// range (the defaults are still measured, only not shown to the model).
    pub fn coords_of(&self, variables: &BTreeMap<String, String>) -> Option<Vec<f64>> {
        let mut x = Vec::new();
        for (p, (lo, hi)) in self.params.iter().zip(self.bounds()) {
            let value = variables
                .iter()
                .find(|(k, _)| k.replace('-', "_").eq_ignore_ascii_case(&p.name.replace('-', "_")))
                .map(|(_, v)| v.trim())?;
            let number = || {
                value
                    .parse::<f64>()
                    .ok()
                    .or_else(|| parse_size(value).map(|b| b as f64))
            };
            let c = match &p.domain {
                Domain::Choice(values) => {
                    let same = |a: &str, b: &str| {
                        let norm = |s: &str| match s.to_ascii_lowercase().as_str() {
                            "on" | "true" | "yes" => "1".to_string(),
                            "off" | "false" | "no" => "0".to_string(),
                            other => other.to_string(),
                        };
                        norm(a) == norm(b)
                    };
                    values.iter().position(|v| same(v, value))? as f64
                }
                Domain::LogInt { .. } => number()?.ln(),
                _ => number()?,
            };
            if !(lo - 1e-9..=hi + 1e-9).contains(&c) {
                return None;
            }
            x.push(c);
        }
        Some(x)
    }
}

/// Bytes rounded to a sixteenth of their power of two, in whole KiB, and whole MiB from 1M.
fn round_size(bytes: u64) -> u64 {
    if bytes < 16 << 10 {
        return bytes.div_ceil(1 << 10) << 10;
    }
    let step = (1u64 << (63 - bytes.leading_zeros() - 4)).max(if bytes >= 1 << 20 { 1 << 20 } else { 1 });
    ((bytes + step / 2) / step) * step
}

/// `n` rounded to `digits` significant digits.
fn round_digits(n: u64, digits: u32) -> u64 {
    let len = n.checked_ilog10().map_or(1, |l| l + 1);
    if len <= digits {
        return n;
    }
    let unit = 10u64.pow(len - digits);
    ((n + unit / 2) / unit) * unit
}

/// Proposes trials.
#[derive(Debug, Clone)]
pub struct Tuner {
    pub space: Space,
    pub strategy: Strategy,
    pub seed: u64,
    /// How many constraints each observation's `slack` has.
    pub constraints: usize,
    /// The trials the search expects to have (sizes the grid and the first design).
    pub budget: usize,
}

impl Tuner {
    /// Proposals the model strategy makes from its Latin hypercube before fitting a model:
    /// enough to see every dimension twice, a third of the budget at most.
    pub fn design_size(&self) -> usize {
        (self.space.dims() + 3).min((self.budget / 3).max(3))
    }

    /// The `k`-th proposal (from 0; the defaults and re-measurements are not proposals) given
    /// everything measured so far, and what it came from (`design`, `model`, `random`,
    /// `grid`, `explore` when the model proposed a setting already measured).
    pub fn propose(&self, history: &[Observation], k: usize) -> (Vec<f64>, &'static str) {
        match self.strategy {
            Strategy::Random => (self.random_point(k), "random"),
            Strategy::Grid => {
                let grid = self.grid();
                (grid[k % grid.len()].clone(), "grid")
            }
            Strategy::Model => {
                let seen = distinct(history);
                let design = self.design_size();
                if k < design {
                    let lhs = self.design(design);
                    let x = lhs[k].clone();
                    if !seen.iter().any(|(p, _)| *p == x) {
                        return (x, "design");
                    }
                    return (self.unseen_random(&seen, k), "design");
                }
                match self.model_point(&seen) {
                    Some(x) if !seen.iter().any(|(p, _)| *p == x) => (x, "model"),
                    _ => (self.unseen_random(&seen, k), "explore"),
                }
            }
        }
    }

    /// A random point not measured yet (a few draws, then whatever came).
    fn unseen_random(&self, seen: &[(Vec<f64>, Averaged)], k: usize) -> Vec<f64> {
        let mut x = self.random_point(k);
        for attempt in 1..=20 {
            if !seen.iter().any(|(p, _)| *p == x) {
                break;
            }
            x = self.random_point(k + attempt * 1_000_003);
        }
        x
    }

    /// A point drawn uniformly in coordinates (log-uniform on log ranges), from the seed and `k`.
    fn random_point(&self, k: usize) -> Vec<f64> {
        let mut rng = SmallRng::seed_from_u64(mix(self.seed, k as u64));
        let x: Vec<f64> = self
            .space
            .bounds()
            .iter()
            .map(|(lo, hi)| lerp(*lo, *hi, rng.random_range(0.0..=1.0)))
            .collect();
        self.space.snap(&x)
    }

    /// The first `n` points: a Latin hypercube (maximin, from the seed), snapped.
    fn design(&self, n: usize) -> Vec<Vec<f64>> {
        let bounds = self.space.bounds();
        // Choices get a cell per value: spread over [-0.5, n - 0.5] so each is as likely.
        let limits: Vec<[f64; 2]> = self
            .space
            .params
            .iter()
            .zip(&bounds)
            .map(|(p, (lo, hi))| match &p.domain {
                Domain::Choice(_) => [lo - 0.499, hi + 0.499],
                _ => [*lo, *hi],
            })
            .collect();
        let xlimits = Array2::from(limits);
        let lhs = Lhs::new(&xlimits)
            .kind(LhsKind::Maximin)
            .with_rng(Xoshiro256Plus::seed_from_u64(self.seed));
        lhs.sample(n)
            .rows()
            .into_iter()
            .map(|r| self.space.snap(&r.to_vec()))
            .collect()
    }

    /// An even grid: levels per coordinate so that their product fits the budget (at least
    /// two each; every value of a choice when it fits), in an order shuffled by the seed.
    pub fn grid(&self) -> Vec<Vec<f64>> {
        let bounds = self.space.bounds();
        let cardinality: Vec<usize> = self
            .space
            .params
            .iter()
            .map(|p| match &p.domain {
                Domain::Choice(v) => v.len(),
                Domain::Int { lo, hi, .. } => usize::try_from(hi.abs_diff(*lo))
                    .unwrap_or(usize::MAX)
                    .saturating_add(1),
                Domain::LogInt { lo, hi, .. } => usize::try_from(hi - lo).unwrap_or(usize::MAX).saturating_add(1),
                Domain::Float { .. } => usize::MAX,
            })
            .collect();
        let mut levels: Vec<usize> = cardinality.iter().map(|c| (*c).min(2)).collect();
        loop {
            let product = |l: &[usize]| l.iter().try_fold(1usize, |a, b| a.checked_mul(*b));
            // The coordinate with the fewest levels that can take one more.
            let Some(i) = (0..levels.len())
                .filter(|i| levels[*i] < cardinality[*i])
                .min_by_key(|i| (levels[*i], *i))
            else {
                break;
            };
            let mut more = levels.clone();
            more[i] += 1;
            match product(&more) {
                Some(p) if p <= self.budget.max(1) => levels = more,
                _ => break,
            }
        }
        let axes: Vec<Vec<f64>> = levels
            .iter()
            .zip(&bounds)
            .map(|(l, (lo, hi))| {
                if *l <= 1 {
                    vec![(lo + hi) / 2.0]
                } else {
                    (0..*l).map(|j| lerp(*lo, *hi, j as f64 / (*l - 1) as f64)).collect()
                }
            })
            .collect();
        let mut points: Vec<Vec<f64>> = vec![Vec::new()];
        for axis in &axes {
            points = points
                .into_iter()
                .flat_map(|p| {
                    axis.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push(*v);
                        q
                    })
                })
                .collect();
        }
        let mut points: Vec<Vec<f64>> = points.iter().map(|p| self.space.snap(p)).collect();
        points.dedup();
        points.shuffle(&mut SmallRng::seed_from_u64(self.seed));
        points
    }

    /// The model's proposal: EGO (expected improvement, constraints modelled) on the averaged
    /// measurements; `None` when there is nothing to fit.
    fn model_point(&self, seen: &[(Vec<f64>, Averaged)]) -> Option<Vec<f64>> {
        if seen.len() < 2 {
            return None;
        }
        let scores: Vec<f64> = seen.iter().filter_map(|(_, a)| a.score).collect();
        // Failed trials count as worse than the worst measured, by a tenth of the spread.
        let (worst, best) = scores.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
            (lo.min(*s), hi.max(*s))
        });
        let spread = if scores.is_empty() {
            1.0
        } else {
            (best - worst).max(best.abs() * 0.01).max(1e-9)
        };
        let floor = if scores.is_empty() { 0.0 } else { worst - spread / 10.0 };
        // Scaled so the model works with numbers near 1.
        let scale = if scores.is_empty() { 1.0 } else { spread };
        let ncols = 1 + self.constraints;
        let mut xs = Array2::zeros((seen.len(), self.space.dims()));
        let mut ys = Array2::zeros((seen.len(), ncols));
        for (i, (x, a)) in seen.iter().enumerate() {
            for (j, v) in x.iter().enumerate() {
                xs[[i, j]] = *v;
            }
            ys[[i, 0]] = -(a.score.unwrap_or(floor) - best) / scale;
            for c in 0..self.constraints {
                ys[[i, 1 + c]] = if a.score.is_none() {
                    1.0
                } else {
                    a.slack.get(c).copied().unwrap_or(0.0)
                };
            }
        }
        let ego = EgorServiceBuilder::optimize()
            .configure(|c| {
                c.n_cstr(self.constraints)
                    .infill_strategy(InfillStrategy::LogEI)
                    .seed(self.seed)
            })
            .min_within_mixint_space(&self.space.xtypes())
            .ok()?;
        let suggested = ego.suggest(&xs, &ys);
        let row = suggested.rows().into_iter().next()?.to_vec();
        (row.len() == self.space.dims()).then(|| self.space.snap(&row))
    }
}

/// The point `t` (0..=1) of the way from `lo` to `hi`, without overflowing on ranges as wide
/// as `f64` allows.
fn lerp(lo: f64, hi: f64, t: f64) -> f64 {
    lo * (1.0 - t) + hi * t
}

/// The mean of one setting's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Averaged {
    pub n: usize,
    /// `None` when every measurement failed.
    pub score: Option<f64>,
    pub slack: Vec<f64>,
}

/// The history grouped by setting, in first-measured order, each with its mean.
pub fn distinct(history: &[Observation]) -> Vec<(Vec<f64>, Averaged)> {
    let mut out: Vec<(Vec<f64>, Vec<&Observation>)> = Vec::new();
    for o in history {
        match out.iter_mut().find(|(x, _)| *x == o.x) {
            Some((_, list)) => list.push(o),
            None => out.push((o.x.clone(), vec![o])),
        }
    }
    out.into_iter()
        .map(|(x, list)| {
            let ok: Vec<&&Observation> = list.iter().filter(|o| o.score.is_some()).collect();
            let score = (!ok.is_empty()).then(|| ok.iter().filter_map(|o| o.score).sum::<f64>() / ok.len() as f64);
            let width = list.iter().map(|o| o.slack.len()).max().unwrap_or(0);
            let slack = (0..width)
                .map(|c| {
                    let v: Vec<f64> = ok.iter().filter_map(|o| o.slack.get(c).copied()).collect();
                    if v.is_empty() {
                        1.0
                    } else {
                        v.iter().sum::<f64>() / v.len() as f64
                    }
                })
                .collect();
            (
                x,
                Averaged {
                    n: list.len(),
                    score,
                    slack,
                },
            )
        })
        .collect()
}

/// A seed for draw `k` of a search seeded `seed` (splitmix64 of the two).
fn mix(seed: u64, k: u64) -> u64 {
    let mut z = seed ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> Space {
        Space {
            params: vec![
                Parameter {
                    name: "innodb_max_dirty_pages_pct".into(),
                    domain: Domain::Int {
                        lo: 10,
                        hi: 90,
                        size: false,
                    },
                },
                Parameter {
                    name: "innodb_io_capacity".into(),
                    domain: Domain::LogInt {
                        lo: 100,
                        hi: 20000,
                        size: false,
                    },
                },
                Parameter {
                    name: "innodb_flush_neighbors".into(),
                    domain: Domain::Choice(vec!["0".into(), "1".into()]),
                },
            ],
        }
    }

    /// A server whose answer is known: throughput peaks at 60% dirty pages and 2000 IOPS
    /// with flush_neighbors off; above 70% the checkpoint age reaches the sync point (the
    /// throughput line is no longer flat), below 50% the flushing cannot hold the limit.
    /// Measurements carry 2% noise drawn from `noise_seed`.
    fn measure(x: &[f64], rng: &mut SmallRng) -> Observation {
        let (tps, slack) = measure_exact(x);
        Observation {
            x: x.to_vec(),
            score: Some(tps * (1.0 + rng.random_range(-0.02..0.02))),
            slack: vec![slack],
        }
    }

    /// The best that meets the constraint: 65% dirty, 2000 IOPS, neighbours off.
    fn optimum() -> f64 {
        measure_exact(&[65.0, 2000f64.ln(), 0.0]).0
    }

    /// Proposals until one feasible trial comes within 2% of the optimum (the budget + 1 if
    /// none does).
    fn trials_to_answer(strategy: Strategy, seed: u64, budget: usize) -> (usize, Vec<Vec<f64>>) {
        let tuner = Tuner {
            space: space(),
            strategy,
            seed,
            constraints: 1,
            budget,
        };
        let mut rng = SmallRng::seed_from_u64(seed + 100);
        let mut history = Vec::new();
        let mut xs = Vec::new();
        for k in 0..budget {
            let (x, _) = tuner.propose(&history, k);
            let o = measure(&x, &mut rng);
            xs.push(x.clone());
            history.push(o);
            // Judged by the noise-free figure of what was tried.
            let exact = measure_exact(&x);
            if exact.1 <= 0.0 && exact.0 >= optimum() * 0.98 {
                return (k + 1, xs);
            }
        }
        (budget + 1, xs)
    }

    fn measure_exact(x: &[f64]) -> (f64, f64) {
        let dirty = x[0];
        let io = x[1].exp();
        let tps = 1000.0
            * (0.7 + 0.3 * dirty / 90.0)
            * (1.0 - 0.15 * ((io / 2000.0).ln()).powi(2).min(4.0))
            * if x[2] == 0.0 { 1.0 } else { 0.9 };
        let cv = if dirty > 65.0 {
            5.0 + (dirty - 65.0)
        } else if dirty < 55.0 {
            5.0 + (55.0 - dirty) / 2.0
        } else {
            2.0
        };
        (tps, (cv - 5.0) / 5.0)
    }

    #[test]
    fn values_snap_to_what_a_person_would_write() {
        let s = Space {
            params: vec![
                Parameter {
                    name: "innodb_buffer_pool_size".into(),
                    domain: Domain::LogInt {
                        lo: 128 << 20,
                        hi: 8 << 30,
                        size: true,
                    },
                },
                Parameter {
                    name: "innodb_io_capacity".into(),
                    domain: Domain::LogInt {
                        lo: 100,
                        hi: 20000,
                        size: false,
                    },
                },
                Parameter {
                    name: "innodb_flush_neighbors".into(),
                    domain: Domain::Choice(vec!["0".into(), "1".into(), "2".into()]),
                },
            ],
        };
        let x = vec![((1437u64 << 20) as f64).ln(), 1234f64.ln(), 1.7];
        assert_eq!(
            s.settings(&x),
            vec![
                ("innodb_buffer_pool_size".to_string(), "1408M".to_string()),
                ("innodb_io_capacity".to_string(), "1200".to_string()),
                ("innodb_flush_neighbors".to_string(), "2".to_string()),
            ]
        );
        // Out of range values are clamped, and a snapped point snaps to itself.
        let y = s.snap(&[0.0, 1e9, -3.0]);
        assert_eq!(s.settings(&y)[0].1, "128M");
        assert_eq!(s.settings(&y)[1].1, "20000");
        assert_eq!(s.snap(&y), y);
        // The server's own values place the defaults in the space.
        let vars: BTreeMap<String, String> = [
            ("innodb_buffer_pool_size", "134217728"),
            ("innodb_io_capacity", "200"),
            ("innodb_flush_neighbors", "1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let d = s.coords_of(&vars).unwrap();
        assert_eq!(s.settings(&d)[0].1, "128M");
        assert_eq!(d[2], 1.0);
        let mut outside = vars.clone();
        outside.insert("innodb_io_capacity".into(), "50".into());
        assert_eq!(s.coords_of(&outside), None);
    }

    #[test]
    fn the_same_seed_and_measurements_give_the_same_trials_and_another_seed_others() {
        for strategy in [Strategy::Model, Strategy::Random, Strategy::Grid] {
            let (_, a) = trials_to_answer(strategy, 7, 12);
            let (_, b) = trials_to_answer(strategy, 7, 12);
            let (_, c) = trials_to_answer(strategy, 8, 12);
            assert_eq!(a, b, "{strategy:?}");
            assert_ne!(a, c, "{strategy:?}");
            for x in &a {
                assert_eq!(&tuner_space_snap(x), x);
            }
        }
    }

    fn tuner_space_snap(x: &[f64]) -> Vec<f64> {
        space().snap(x)
    }

    #[test]
    fn the_grid_fits_the_budget_and_covers_every_choice() {
        let t = Tuner {
            space: space(),
            strategy: Strategy::Grid,
            seed: 1,
            constraints: 0,
            budget: 30,
        };
        let g = t.grid();
        assert!(g.len() <= 30 && g.len() >= 18, "{}", g.len());
        assert!(g.iter().any(|x| x[2] == 0.0) && g.iter().any(|x| x[2] == 1.0));
        let dirty: std::collections::BTreeSet<i64> = g.iter().map(|x| x[0] as i64).collect();
        assert!(dirty.contains(&10) && dirty.contains(&90), "{dirty:?}");
    }

    #[test]
    fn the_model_reaches_the_known_answer_in_fewer_trials_than_random_or_grid() {
        let budget = 30;
        let seeds = 1..=6u64;
        let mean = |s: Strategy| {
            let n: usize = seeds.clone().map(|seed| trials_to_answer(s, seed, budget).0).sum();
            n as f64 / seeds.clone().count() as f64
        };
        let (model, random, grid) = (mean(Strategy::Model), mean(Strategy::Random), mean(Strategy::Grid));
        eprintln!("trials to within 2% of the optimum: model {model}, random {random}, grid {grid}");
        assert!(
            model < random && model < grid,
            "model {model}, random {random}, grid {grid}"
        );
    }

    #[test]
    fn the_widest_ranges_give_finite_settings_without_panicking() {
        let s = Space {
            params: vec![Parameter {
                name: "some_float".into(),
                domain: Domain::Float { lo: -1e308, hi: 1e308 },
            }],
        };
        for strategy in [Strategy::Model, Strategy::Random, Strategy::Grid] {
            let t = Tuner {
                space: s.clone(),
                strategy,
                seed: 1,
                constraints: 0,
                budget: 5,
            };
            for k in 0..3 {
                let (x, _) = t.propose(&[], k);
                assert!(x[0].is_finite(), "{strategy:?} {x:?}");
                assert!(s.settings(&x)[0].1.parse::<f64>().unwrap().is_finite());
            }
        }
    }
}
