//! The wall clock as numbers: milliseconds since the epoch, a seed taken from the clock, and the
//! instant a run's measured phase starts (`--start-at`), read from a Unix time or RFC 3339.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch (0 before it).
pub fn unix_ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// A seed from the clock (nanoseconds since the epoch), for a seed option left at "from the
/// clock" (`--rand-seed=0`, no `--random-seed`); the manifest records the seed used.
pub fn clock_seed() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// `--start-at`: a Unix time in seconds (`1796122800`, fractions allowed) or an RFC 3339
/// timestamp (`2026-11-27T15:00:00Z`).
pub fn parse_start_at(s: &str) -> Result<SystemTime, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<f64>() {
        if !(secs.is_finite() && (0.0..4.0e9).contains(&secs)) {
            return Err(format!(
                "--start-at {s}: a Unix time in seconds is 0 to 4000000000 (or give an RFC 3339 timestamp such as 2026-11-27T15:00:00Z)"
            ));
        }
        return Ok(UNIX_EPOCH + Duration::from_secs_f64(secs));
    }
    let at = chrono::DateTime::parse_from_rfc3339(t).map_err(|e| {
        format!("--start-at takes a Unix time in seconds or an RFC 3339 timestamp such as 2026-11-27T15:00:00Z, got {s:?} ({e})")
    })?;
    let ms = at.timestamp_millis();
    if ms < 0 {
        return Err(format!("--start-at {s}: before 1970"));
    }
    Ok(UNIX_EPOCH + Duration::from_millis(ms as u64))
}
