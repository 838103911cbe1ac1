//! The spec's metrics (TPC-H 2.17.3 §5.4): Power@Size, Throughput@Size and QphH@Size.
//!
//! Power@Size = 3600·SF / (∏ QI(i,0) · ∏ RI(j,0))^(1/24) over the 22 query and 2 refresh
//! intervals in seconds, each rounded to 0.1 s with a minimum of 0.1 s; when the longest query
//! interval is more than 1000 times the shortest, the query intervals under max/1000 are raised
//! to it (5.4.1.4). The refresh intervals are neither raised nor part of that ratio.
//! Throughput@Size = S·22·3600·SF / Ts, QphH@Size = √(Power · Throughput).

use dbperf_core::stats::geomean;

/// An interval as the spec counts it: rounded to 0.1 s, at least 0.1 s.
pub fn spec_interval(seconds: f64) -> f64 {
    ((seconds * 10.0).round() / 10.0).max(0.1)
}

/// Power@Size from the 22 query times and the 2 refresh times (seconds). `None` unless
/// exactly 24 intervals are given.
pub fn power_at_size(sf: f64, queries: &[f64], refreshes: &[f64]) -> Option<f64> {
    if queries.len() != 22 || refreshes.len() != 2 {
        return None;
    }
    let mut q: Vec<f64> = queries.iter().map(|&s| spec_interval(s)).collect();
    let max = q.iter().cloned().fold(0.0, f64::max);
    let min = q.iter().cloned().fold(f64::INFINITY, f64::min);
    if max / min > 1000.0 {
        // max/1000 counts as a timing interval itself: rounded like one.
        let floor = spec_interval(max / 1000.0);
        for v in &mut q {
            *v = v.max(floor);
        }
    }
    let t = q
        .iter()
        .chain(refreshes.iter())
        .map(|&s| spec_interval(s))
        .collect::<Vec<f64>>();
    // Every interval is at least 0.1 s, so the geometric mean exists.
    Some(3600.0 * sf / geomean(&t)?)
}

/// Throughput@Size for `streams` query streams that took `ts` seconds in all.
pub fn throughput_at_size(sf: f64, streams: u32, ts: f64) -> f64 {
    f64::from(streams) * 22.0 * 3600.0 * sf / ts.max(1e-9)
}

/// QphH@Size.
pub fn qphh(power: f64, throughput: f64) -> f64 {
    (power * throughput).sqrt()
}

/// The spec's minimum number of throughput streams for a scale factor.
pub fn min_streams(sf: f64) -> u32 {
    match sf {
        s if s >= 100_000.0 => 11,
        s if s >= 30_000.0 => 10,
        s if s >= 10_000.0 => 9,
        s if s >= 3_000.0 => 8,
        s if s >= 1_000.0 => 7,
        s if s >= 300.0 => 6,
        s if s >= 100.0 => 5,
        s if s >= 30.0 => 4,
        s if s >= 10.0 => 3,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_is_a_geometric_mean_with_the_spec_rounding() {
        // All 24 intervals 1 s: 3600·SF.
        assert_eq!(power_at_size(1.0, &[1.0; 22], &[1.0, 1.0]), Some(3600.0));
        // 0.01 s counts as 0.1 s.
        let p = power_at_size(10.0, &[0.01; 22], &[0.04, 0.0]).unwrap();
        assert!((p - 360_000.0).abs() < 1e-6, "{p}");
        // One 1000 s query: the other queries are raised to 1 s, the refreshes stay 0.1 s.
        let mut q = [0.1; 22];
        q[0] = 1000.0;
        let p = power_at_size(1.0, &q, &[0.1, 0.1]).unwrap();
        let expected = 3600.0 / ((1000f64 * 0.1 * 0.1).ln() / 24.0).exp();
        assert!((p - expected).abs() < 1e-6, "{p} vs {expected}");
    }

    #[test]
    fn the_thousandfold_rule_looks_at_query_intervals_only() {
        // A 200 s RF1 makes no query interval short: queries span 0.1 to 50 s (500x).
        let mut q = [0.1; 22];
        q[0] = 50.0;
        let p = power_at_size(1.0, &q, &[200.0, 0.1]).unwrap();
        let expected = 3600.0 / ((50f64 * 0.1f64.powi(21) * 200.0 * 0.1).ln() / 24.0).exp();
        assert!((p - expected).abs() < 1e-6, "{p} vs {expected}");
        // max/1000 is rounded like any interval (1234 s / 1000 counts as 1.2 s), and refreshes
        // shorter than it are not raised.
        let mut q = [0.01; 22];
        q[0] = 1234.0;
        let p = power_at_size(1.0, &q, &[0.01, 0.01]).unwrap();
        let expected = 3600.0 / ((1234f64 * 1.2f64.powi(21) * 0.1 * 0.1).ln() / 24.0).exp();
        assert!((p - expected).abs() < 1e-6, "{p} vs {expected}");
    }

    #[test]
    fn throughput_qphh_and_streams() {
        assert_eq!(power_at_size(1.0, &[1.0; 21], &[1.0, 1.0]), None);
        assert!((throughput_at_size(1.0, 2, 44.0 * 3600.0) - 1.0).abs() < 1e-12);
        assert_eq!(qphh(4.0, 9.0), 6.0);
        assert_eq!(min_streams(1.0), 2);
        assert_eq!(min_streams(100.0), 5);
    }
}
