//! The statistics every comparison uses, once: the median with its min..max range, the
//! geometric mean, the relative difference to a baseline, and the one draw rule with its one
//! threshold unit (percent of the baseline).
//!
//! [`crate::report::compare`] (runs side by side, `dbperf compare` and `dbperf lab report`) and
//! [`crate::report::tpch`] (the DBT-3 per-query table) both judge differences with [`judge`];
//! the TPC-H power test's per-query median and the telemetry analysis can use [`Spread::of`]
//! and [`median`].

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

/// Applies [`DRAW_RULE`] to `cell` against `base` with the band `threshold_pct` (percent of the
/// baseline's median). Returns the difference in percent and the verdict.
pub fn judge(cell: &Spread, base: &Spread, threshold_pct: f64, higher_is_better: bool) -> (Option<f64>, Verdict) {
    let Some(diff) = relative_diff_pct(cell.median, base.median) else {
        return (None, Verdict::NoBaseline);
    };
    // A relative tolerance so that 105 against 100 at 5% is the draw the rule promises, not
    // called on a rounding error.
    let beyond_threshold = diff.abs() > threshold_pct * (1.0 + 1e-9) + 1e-12;
    let beyond_noise = beyond_threshold && !cell.overlaps(base);
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
}
