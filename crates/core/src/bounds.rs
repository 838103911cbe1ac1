//! The allowed range of every duration and count a user gives, on the command line or in an
//! experiment file, and the one duration parser both use. A value outside its range is
//! refused where it is parsed, with the range in the message, so nothing overflows, wraps or
//! runs away later (a `Duration` of 1e30 s, an `Instant` past the end of time, a plan of a
//! billion runs).
//!
//! | bound | value |
//! |---|---|
//! | any duration | 0 to [`MAX_SECS`] (10 years) |
//! | an interval between live lines or samples | 0 (none) or [`MIN_INTERVAL_SECS`] and up |
//! | connections (`--threads`, `users`, ...) | 1 to [`MAX_CONNECTIONS`] |
//! | experiment repetitions | 1 to [`MAX_REPETITIONS`] |
//! | experiment variants, runs | at most [`MAX_VARIANTS`], [`MAX_POINTS`] |
//! | shards of one run (`--shard I/N`, `kube job --shards`, `[network] shards`) | 1 to [`MAX_SHARDS`] |

use std::time::Duration;

/// The longest duration anything takes: 10 years, in seconds (fits a `u32`).
pub const MAX_SECS: u64 = 10 * 365 * 86_400;

/// The most connections a run may open: more than any server's `max_connections` takes.
pub const MAX_CONNECTIONS: u32 = 100_000;

/// The most repetitions of an experiment.
pub const MAX_REPETITIONS: u32 = 1_000;

/// The most variants an experiment may have (`[variants]` axes multiplied, plus `[[variant]]`s).
pub const MAX_VARIANTS: u64 = 10_000;

/// The most runs (points) one experiment may plan.
pub const MAX_POINTS: u64 = 100_000;

/// The most shards (client processes) one run may be spread over.
pub const MAX_SHARDS: u32 = 10_000;

/// The most tables of a sysbench data set.
pub const MAX_TABLES: u32 = 100_000;

/// `0 to 315360000 seconds (10 years)`, for messages.
pub fn secs_range() -> String {
    format!("0 to {MAX_SECS} seconds (10 years)")
}

/// Checks a number of seconds against 0..=[`MAX_SECS`].
pub fn secs(secs: f64) -> Result<Duration, String> {
    in_range(secs).ok_or_else(|| format!("a duration must be {}, got {secs}", secs_range()))
}

/// Parses `90`, `90s`, `1.5m`, `2h`, `250ms` into a duration of at most [`MAX_SECS`].
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(n) = t.parse::<f64>() {
        return in_range(n).ok_or_else(|| format!("a duration must be {}, got {s:?}", secs_range()));
    }
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("expected a duration like \"60s\", \"5m\" or 90, got {s:?}"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 0.001,
        "us" | "µs" => 0.000_001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => return Err(format!("unknown duration unit {u:?} in {s:?} (use us, ms, s, m or h)")),
    };
    in_range(n * scale).ok_or_else(|| format!("a duration must be {}, got {s:?}", secs_range()))
}

fn in_range(secs: f64) -> Option<Duration> {
    (secs.is_finite() && (0.0..=MAX_SECS as f64).contains(&secs)).then(|| Duration::from_secs_f64(secs))
}

/// clap parser of a flag in whole seconds (`--time`, `--warmup-time`): `60`, `5m`, `1h`, at
/// most [`MAX_SECS`].
pub fn whole_secs_flag(s: &str) -> Result<u64, String> {
    let d = parse_duration(s)?;
    if d.subsec_nanos() != 0 {
        return Err(format!("expected whole seconds ({}), got {s:?}", secs_range()));
    }
    Ok(d.as_secs())
}

/// clap parser of a flag in seconds that may have a fraction (`--shutdown-grace`): `0.5`,
/// `10`, `2m`, at most [`MAX_SECS`].
pub fn secs_flag(s: &str) -> Result<f64, String> {
    parse_duration(s).map(|d| d.as_secs_f64())
}

/// The shortest interval between live lines or telemetry samples: shorter ones would spend
/// the run printing and sampling.
pub const MIN_INTERVAL_SECS: f64 = 0.1;

/// clap parser of an interval flag (`--report-interval`, `-P`, `--telemetry-interval`):
/// 0 (none, where the flag allows it) or [`MIN_INTERVAL_SECS`] to [`MAX_SECS`].
pub fn interval_flag(s: &str) -> Result<f64, String> {
    let secs = secs_flag(s)?;
    if secs != 0.0 && secs < MIN_INTERVAL_SECS {
        return Err(format!(
            "an interval must be 0 or {MIN_INTERVAL_SECS} to {MAX_SECS} seconds, got {s:?}"
        ));
    }
    Ok(secs)
}

/// clap parser of an interval that cannot be off (`dbperf host --stream`):
/// [`MIN_INTERVAL_SECS`] to [`MAX_SECS`].
pub fn period_flag(s: &str) -> Result<f64, String> {
    let secs = interval_flag(s)?;
    if secs == 0.0 {
        return Err(format!(
            "a period must be {MIN_INTERVAL_SECS} to {MAX_SECS} seconds, got {s:?}"
        ));
    }
    Ok(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_is_never_zero() {
        assert!(period_flag("0").unwrap_err().contains("0.1 to"));
        assert!(period_flag("0.01").is_err());
        assert_eq!(period_flag("1").unwrap(), 1.0);
    }

    #[test]
    fn durations_with_units() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration(" 2h ").unwrap(), Duration::from_secs(7200));
        assert!(parse_duration("5 fortnights")
            .unwrap_err()
            .contains("unknown duration unit"));
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn durations_out_of_range_name_the_range() {
        for bad in [
            "6000000000000000h",
            "-1",
            "315360001",
            "18446744073709551615",
            "99999999999m",
        ] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains("0 to 315360000 seconds (10 years)"), "{bad}: {e}");
        }
        for bad in ["1e30", "NaN", "inf", "-inf"] {
            assert!(parse_duration(bad).unwrap_err().contains("10 years"), "{bad}");
        }
        assert_eq!(parse_duration("315360000").unwrap().as_secs(), MAX_SECS);
        assert!(secs(1e30).unwrap_err().contains("10 years"));
        assert!(secs(f64::NAN).is_err());
        assert_eq!(secs(1.5).unwrap(), Duration::from_millis(1500));
    }

    #[test]
    fn flag_parsers() {
        assert_eq!(whole_secs_flag("60"), Ok(60));
        assert_eq!(whole_secs_flag("2m"), Ok(120));
        assert!(whole_secs_flag("1.5").unwrap_err().contains("whole seconds"));
        assert!(whole_secs_flag("18446744073").unwrap_err().contains("10 years"));
        assert_eq!(secs_flag("0.5"), Ok(0.5));
        assert!(secs_flag("18446744073709551615").unwrap_err().contains("10 years"));
        assert_eq!(interval_flag("0"), Ok(0.0));
        assert_eq!(interval_flag("0.1"), Ok(0.1));
        assert!(interval_flag("0.000000001").unwrap_err().contains("0.1 to 315360000"));
    }
}
