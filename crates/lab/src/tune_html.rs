//! `tune.html`, the picture of a search: per parameter, every trial as a point (the figure at
//! the value it tried; those that broke a constraint apart from those that met them) and the
//! model's partial dependence, the figure a Gaussian process fitted to all trials predicts
//! at each value of that parameter, averaged over the other parameters' values as the trials
//! had them. Followed by `tune.md`'s text.

use egobox_gp::correlation_models::SquaredExponentialCorr;
use egobox_gp::mean_models::ConstantMean;
use egobox_gp::GaussianProcess;
use linfa::prelude::*;
use ndarray::{Array1, Array2};

use super::experiment::Experiment;
use super::search::{Domain, Search};
use super::tune::{Role, TuneState};
use super::tuner::{distinct, Observation, Space};
use dbperf_report::html::chart::{Chart, Scale, Series, PALETTE, STALL};
use dbperf_report::html::page::{escape, Page};

/// Points on each partial-dependence line.
const LINE_POINTS: usize = 40;

/// The page.
pub fn page(st: &TuneState, search: &Search, e: &Experiment, text: &str) -> String {
    let mut page = Page::new(&format!("dbperf lab tune: {}", e.name));
    let space = Space {
        params: search.parameters.clone(),
    };
    let unit = match search.objective {
        super::search::Objective::MaxTps => "tps",
        super::search::Objective::MaxNotpm => "NOTPM",
        super::search::Objective::MaxRps => "requests/s",
        super::search::Objective::MinP99 => "p99, ms",
    };
    let trials: Vec<(Vec<f64>, f64, bool)> = st
        .trials
        .iter()
        .filter(|t| !matches!(t.role, Role::ConfirmBest | Role::ConfirmDefaults))
        .filter_map(|t| {
            let m = t.measured.as_ref()?;
            let x = t.x.clone()?;
            let ok = search
                .constraints
                .iter()
                .all(|c| m.value_of(c.metric).is_none_or(|v| c.holds(v)));
            Some((x, m.figure, ok))
        })
        .collect();
    let model = Model::fit(&trials);
    page.heading("Each parameter's effect");
    page.paragraph(
        "Every trial of the search is a point at the value it tried (the other parameters at their own values); \
         the line is the model's partial dependence: what a Gaussian process fitted to all trials predicts at each \
         value, averaged over the other parameters as the trials had them.",
        Some("note"),
    );
    let bounds = space.bounds();
    for (j, p) in search.parameters.iter().enumerate() {
        let log = matches!(p.domain, Domain::LogInt { .. });
        // The chart's x: the value itself (sizes in MiB), choices by their position.
        let shown = |c: f64| -> f64 {
            match &p.domain {
                Domain::LogInt { size: true, .. } => c.exp() / (1u64 << 20) as f64,
                Domain::LogInt { .. } => c.exp(),
                Domain::Int { size: true, .. } => c / (1u64 << 20) as f64,
                _ => c,
            }
        };
        let x_label = match &p.domain {
            Domain::LogInt { size: true, .. } | Domain::Int { size: true, .. } => format!("{} (MiB)", p.name),
            Domain::Choice(v) => format!("{} (0 = {}, ...)", p.name, v.first().cloned().unwrap_or_default()),
            _ => p.name.clone(),
        };
        let mut chart = Chart::new(format!("{unit} by {}", p.name), x_label, unit);
        if log {
            chart.x_scale = Scale::Log;
        }
        let met: Vec<(f64, f64)> = trials.iter().filter(|t| t.2).map(|t| (shown(t.0[j]), t.1)).collect();
        let broke: Vec<(f64, f64)> = trials.iter().filter(|t| !t.2).map(|t| (shown(t.0[j]), t.1)).collect();
        if let Some(m) = &model {
            let (lo, hi) = bounds[j];
            let line: Vec<(f64, f64)> = (0..LINE_POINTS)
                .map(|i| lo + (hi - lo) * i as f64 / (LINE_POINTS - 1) as f64)
                .filter_map(|v| m.partial(j, v).map(|y| (shown(v), y)))
                .collect();
            chart
                .series
                .push(Series::new("model (partial dependence)", PALETTE[0], line));
        }
        chart
            .series
            .push(Series::new("trial, met the constraints", PALETTE[2], met).dots());
        if !broke.is_empty() {
            chart
                .series
                .push(Series::new("trial, broke a constraint", STALL, broke).dots());
        }
        if let Err(err) = page.chart(&chart) {
            page.paragraph(&err.to_string(), Some("note"));
        }
    }
    page.heading("Result");
    page.raw(&format!("<pre>{}</pre>\n", escape(text)));
    page.finish()
}

/// A Gaussian process of the figure over the space, and the trials' points it averages over.
struct Model {
    gp: GaussianProcess<f64, ConstantMean, SquaredExponentialCorr>,
    points: Vec<Vec<f64>>,
}

impl Model {
    /// Fitted to the trials' mean figure per setting; `None` with fewer than three settings
    /// or when the fit fails.
    fn fit(trials: &[(Vec<f64>, f64, bool)]) -> Option<Model> {
        let obs: Vec<Observation> = trials
            .iter()
            .map(|(x, y, _)| Observation {
                x: x.clone(),
                score: Some(*y),
                slack: Vec::new(),
            })
            .collect();
        let seen = distinct(&obs);
        if seen.len() < 3 {
            return None;
        }
        let dims = seen[0].0.len();
        let mut xs = Array2::zeros((seen.len(), dims));
        let mut ys = Array1::zeros(seen.len());
        for (i, (x, a)) in seen.iter().enumerate() {
            for (k, v) in x.iter().enumerate() {
                xs[[i, k]] = *v;
            }
            ys[i] = a.score?;
        }
        let gp = GaussianProcess::<f64, ConstantMean, SquaredExponentialCorr>::params(
            ConstantMean::default(),
            SquaredExponentialCorr::default(),
        )
        .nugget(1e-3)
        .fit(&Dataset::new(xs, ys))
        .ok()?;
        Some(Model {
            gp,
            points: seen.into_iter().map(|(x, _)| x).collect(),
        })
    }

    /// The mean prediction over the trials' points with coordinate `j` set to `v`.
    fn partial(&self, j: usize, v: f64) -> Option<f64> {
        let dims = self.points.first()?.len();
        let mut xs = Array2::zeros((self.points.len(), dims));
        for (i, p) in self.points.iter().enumerate() {
            for (k, c) in p.iter().enumerate() {
                xs[[i, k]] = if k == j { v } else { *c };
            }
        }
        let y = self.gp.predict(&xs).ok()?;
        let mean = y.mean()?;
        mean.is_finite().then_some(mean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_partial_dependence_follows_the_parameter_that_matters() {
        // The figure rises with the first coordinate and ignores the second.
        let trials: Vec<(Vec<f64>, f64, bool)> = (0..12)
            .map(|i| {
                let a = (i % 4) as f64 * 10.0;
                let b = (i / 4) as f64;
                (vec![a, b], 100.0 + 3.0 * a, true)
            })
            .collect();
        let m = Model::fit(&trials).unwrap();
        let (lo, hi) = (m.partial(0, 0.0).unwrap(), m.partial(0, 30.0).unwrap());
        assert!((lo - 100.0).abs() < 5.0 && (hi - 190.0).abs() < 5.0, "{lo} {hi}");
        let (b0, b2) = (m.partial(1, 0.0).unwrap(), m.partial(1, 2.0).unwrap());
        assert!((b0 - b2).abs() < 5.0, "{b0} {b2}");
    }
}
