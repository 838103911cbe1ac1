//! The statistics every report uses, once: the median with its min..max range, the mean and
//! coefficient of variation, the geometric mean, the relative difference to a baseline, and the
//! one draw rule with its one threshold unit (percent of the baseline).
//!
//! [`dbperf_report::compare`] (runs side by side, `dbperf compare` and `dbperf lab report`) and
//! [`dbperf_report::tpch`] (the DBT-3 per-query table) both judge differences with [`judge`];
//! the TPC-H power test's per-query median and the telemetry analysis
//! ([`dbperf_report::analysis`]) use [`Spread::of`], [`median`] and [`mean_cv`].
//! `lab tune` judges its trials with the same [`judge`], its band widened by the noise the
//! re-measurements showed ([`draw_band_pct`] of [`pooled_cv`]).

use serde::Serialize;

/// The default draw band: differences up to this many percent of the baseline are draws.
pub const DEFAULT_THRESHOLD_PCT: f64 = 5.0;

/// The draw rule, as printed under every comparison and in `--help`.
pub const DRAW_RULE: &str = "A cell is the median over its samples (n, range min..max). A difference to the \
baseline is called only when it is larger than the threshold (--threshold, percent of the baseline; a \
difference of exactly the threshold is a draw) and, when both cells have 2 or more samples, their \
min..max ranges do not overlap. Anything else is a draw (~).";

/// The median (mean of the middle two for an even count); `None` for no values.
pub fn median(values: &[f64]) -> Option<f64> {
    Spread::of(values).map(|s| s.median)
}

/// The arithmetic mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The mean and the coefficient of variation: the sample standard deviation (n - 1 in the
/// denominator; 0 for one value) over the mean, in percent (0 when the mean is not > 0).
/// `None` for no values. `dbperf analyze`'s stability verdict and each run's explanation
/// both use it, so their CVs agree.
pub fn mean_cv(values: &[f64]) -> Option<(f64, f64)> {
    let mean = mean(values)?;
    let n = values.len();
    let var = if n > 1 {
        values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
    } else {
        0.0
    };
    let cv = if mean > 0.0 { var.sqrt() / mean * 100.0 } else { 0.0 };
    Some((mean, cv))
}

/// The `q` quantile (0..=1), interpolated linearly between the two nearest ranks; `None` for
/// no values.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (rank - lo as f64))
}

/// The geometric mean of positive values (`None` when there are none or one is not > 0).
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan() || *v <= 0.0) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

/// `(value - base) / base` in percent; `None` when `base` is 0.
pub fn relative_diff_pct(value: f64, base: f64) -> Option<f64> {
    (base != 0.0).then(|| (value - base) / base * 100.0)
}

/// A set of samples summarised: median, smallest, largest and how many.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Number of samples.
    pub n: usize,
}

impl Spread {
    /// The spread of `values`; `None` when empty.
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            n,
        })
    }

    /// One sample.
    pub fn single(value: f64) -> Spread {
        Spread {
            median: value,
            min: value,
            max: value,
            n: 1,
        }
    }

    /// Whether both have repetitions and their min..max ranges overlap.
    fn overlaps(&self, other: &Spread) -> bool {
        self.n >= 2 && other.n >= 2 && self.min <= other.max && other.min <= self.max
    }
}

/// A difference's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The baseline cell itself.
    Baseline,
    /// Within the noise.
    Draw,
    /// Beyond the noise, in the good direction (more throughput, less time).
    Better,
    /// Beyond the noise, in the bad direction.
    Worse,
    /// No baseline value (or it is 0): nothing to compare with.
    NoBaseline,
}

/// Whether a difference of `diff_pct` (percent of the baseline) is inside the draw band of
/// `threshold_pct`; exactly the threshold is inside. A relative tolerance keeps 105 against
/// 100 at 5% the draw the rule promises rather than calling it on a rounding error.
pub fn within_band(diff_pct: f64, threshold_pct: f64) -> bool {
    diff_pct.abs() <= threshold_pct * (1.0 + 1e-9) + 1e-12
}

/// The draw band for single measurements whose run-to-run noise is known, percent of the
/// baseline: `threshold_pct`, or twice the noise (`noise_cv_pct`, a coefficient of variation),
/// whichever is larger; the threshold alone while the noise is unknown. A value measured once
/// may be off by its noise, so a difference inside twice of it says nothing. [`judge`] takes
/// the result as its threshold: the rule stays one, only its band widens (`lab tune` judges
/// its trials, measured once or twice each, with it).
pub fn draw_band_pct(threshold_pct: f64, noise_cv_pct: Option<f64>) -> f64 {
    noise_cv_pct.map_or(threshold_pct, |n| (2.0 * n).max(threshold_pct))
}

/// The run-to-run noise of repeated measurements: the coefficients of variation ([`mean_cv`])
/// of the groups (each one setting measured several times) pooled by their degrees of freedom
/// (n - 1), percent; groups of one value add nothing; `None` before any group has two.
pub fn pooled_cv<'a>(groups: impl IntoIterator<Item = &'a [f64]>) -> Option<f64> {
    let (mut sum_sq, mut df) = (0.0, 0usize);
    for values in groups.into_iter().filter(|g| g.len() >= 2) {
        if let Some((_, cv)) = mean_cv(values) {
            sum_sq += cv * cv * (values.len() - 1) as f64;
            df += values.len() - 1;
        }
    }
    (df > 0).then(|| (sum_sq / df as f64).sqrt())
}

/// Applies [`DRAW_RULE`] to `cell` against `base` with the band `threshold_pct` (percent of the
/// baseline's median). Returns the difference in percent and the verdict.
pub fn judge(cell: &Spread, base: &Spread, threshold_pct: f64, higher_is_better: bool) -> (Option<f64>, Verdict) {
    let Some(diff) = relative_diff_pct(cell.median, base.median) else {
        return (None, Verdict::NoBaseline);
    };
    let beyond_noise = !within_band(diff, threshold_pct) && !cell.overlaps(base);
    let verdict = match (beyond_noise, (diff > 0.0) == higher_is_better) {
        (false, _) => Verdict::Draw,
        (true, true) => Verdict::Better,
        (true, false) => Verdict::Worse,
    };
    (Some(diff), verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(values: &[f64]) -> Spread {
        Spread::of(values).unwrap()
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(
            s(&[3.0, 1.0, 2.0]),
            Spread {
                median: 2.0,
                min: 1.0,
                max: 3.0,
                n: 3
            }
        );
        assert_eq!(
            s(&[4.0, 1.0, 2.0, 10.0]),
            Spread {
                median: 3.0,
                min: 1.0,
                max: 10.0,
                n: 4
            }
        );
        assert_eq!(
            s(&[7.0]),
            Spread {
                median: 7.0,
                min: 7.0,
                max: 7.0,
                n: 1
            }
        );
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
    }

    #[test]
    fn mean_and_coefficient_of_variation() {
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean(&[]), None);
        // Sample standard deviation: sqrt(4 * 10^2 / 3) over 100.
        let (m, cv) = mean_cv(&[90.0, 110.0, 90.0, 110.0]).unwrap();
        assert_eq!(m, 100.0);
        assert!((cv - 11.547_005).abs() < 1e-5, "{cv}");
        assert_eq!(mean_cv(&[5.0, 5.0]).unwrap().1, 0.0);
        assert_eq!(mean_cv(&[7.0]), Some((7.0, 0.0)));
        // A zero mean has no meaningful CV: 0 rather than a division by zero.
        assert_eq!(mean_cv(&[-1.0, 1.0]), Some((0.0, 0.0)));
        assert_eq!(mean_cv(&[]), None);
    }

    #[test]
    fn quantiles_interpolate_between_ranks() {
        assert_eq!(quantile(&[4.0, 1.0, 3.0, 2.0, 5.0], 0.75), Some(4.0));
        assert_eq!(quantile(&[1.0, 2.0], 0.75), Some(1.75));
        assert_eq!(quantile(&[3.0, 1.0, 2.0], 0.5), median(&[3.0, 1.0, 2.0]));
        assert_eq!(quantile(&[9.0], 0.75), Some(9.0));
        assert_eq!(quantile(&[], 0.75), None);
    }

    #[test]
    fn geometric_mean() {
        assert!((geomean(&[1.0, 100.0]).unwrap() - 10.0).abs() < 1e-9);
        assert!((geomean(&[2.0, 8.0, 4.0]).unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
    }

    #[test]
    fn relative_difference_in_percent() {
        assert!((relative_diff_pct(110.0, 100.0).unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(relative_diff_pct(50.0, 100.0), Some(-50.0));
        assert_eq!(relative_diff_pct(1.0, 0.0), None);
    }

    #[test]
    fn the_band_edge_is_a_draw_and_just_beyond_it_is_called() {
        let base = s(&[100.0]);
        for (value, higher, verdict) in [
            (105.0, true, Verdict::Draw),
            (95.0, true, Verdict::Draw),
            (105.01, true, Verdict::Better),
            (94.99, true, Verdict::Worse),
            // Time: lower is better.
            (94.99, false, Verdict::Better),
            (105.01, false, Verdict::Worse),
        ] {
            assert_eq!(judge(&s(&[value]), &base, 5.0, higher).1, verdict, "{value}");
        }
        // The band is relative to the baseline, whatever the scale.
        assert_eq!(judge(&s(&[0.315]), &s(&[0.3]), 5.0, false).1, Verdict::Draw);
        assert_eq!(judge(&s(&[0.316]), &s(&[0.3]), 5.0, false).1, Verdict::Worse);
        assert_eq!(judge(&s(&[1.0]), &s(&[0.0]), 5.0, true), (None, Verdict::NoBaseline));
    }

    #[test]
    fn with_repetitions_overlapping_ranges_are_a_draw_even_beyond_the_band() {
        let base = s(&[100.0, 90.0, 110.0]);
        let (diff, v) = judge(&s(&[120.0, 108.0, 130.0]), &base, 5.0, true);
        assert_eq!((diff.map(|d| d.round()), v), (Some(20.0), Verdict::Draw));
        // Apart: called.
        assert_eq!(judge(&s(&[120.0, 115.0, 130.0]), &base, 5.0, true).1, Verdict::Better);
        // Apart but within the band: a draw.
        let tight = s(&[100.0, 100.5, 99.5]);
        assert_eq!(judge(&s(&[102.0, 101.0, 103.0]), &tight, 5.0, true).1, Verdict::Draw);
        // One side without repetitions: the band alone decides.
        assert_eq!(judge(&s(&[120.0]), &base, 5.0, true).1, Verdict::Better);
    }

    #[test]
    fn the_band_widens_with_the_noise_and_the_rule_stays_one() {
        assert_eq!(draw_band_pct(DEFAULT_THRESHOLD_PCT, None), 5.0);
        assert_eq!(draw_band_pct(5.0, Some(1.0)), 5.0, "noise under half the threshold");
        assert_eq!(draw_band_pct(5.0, Some(10.0)), 20.0);
        // 2200 and 1600: a CV of 22.3%; a single value adds no degree of freedom.
        let noise = pooled_cv([&[2200.0, 1600.0][..], &[1000.0][..]]).unwrap();
        assert!((noise - 22.33).abs() < 0.01, "{noise}");
        assert_eq!(pooled_cv([&[7.0][..]]), None);
        let band = draw_band_pct(5.0, Some(noise));
        let one = Spread::single;
        assert_eq!(judge(&one(1500.0), &one(2000.0), band, true).1, Verdict::Draw);
        assert_eq!(judge(&one(1000.0), &one(2000.0), band, true).1, Verdict::Worse);
    }
}
