//! The engine's clock: CLOCK_MONOTONIC in nanoseconds.
//!
//! Every timestamp in a run (intended starts, actual starts, interval boundaries) is on
//! this one clock, so they can be subtracted freely and fed to `timerfd` as absolute
//! deadlines.

/// Nanoseconds on CLOCK_MONOTONIC (the clock `std::time::Instant` uses on Linux).
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Converts a duration in nanoseconds to seconds.
#[inline]
pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Converts seconds to nanoseconds.
#[inline]
pub fn ns(secs: f64) -> u64 {
    (secs * 1e9).round() as u64
}
