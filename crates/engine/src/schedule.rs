//! Arrival schedules: when each transaction is meant to start.
//!
//! Closed loop has no schedule: a connection starts its next transaction when the last
//! one ends. Open loop spreads a total rate over the client threads; each thread owns
//! a generator of intended start times that its connections take from in order. The
//! "queue" of arrivals that found every connection busy is never stored: it is the gap
//! between the next intended time and now, so an overload costs no memory.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

/// How transactions arrive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    /// Each connection runs transactions back to back (sysbench's default).
    Closed,
    /// Open loop at `rate` transactions per second in total, evenly spaced.
    Fixed {
        /// Transactions per second across all connections.
        rate: f64,
    },
    /// Open loop at `rate` transactions per second in total, exponential gaps.
    Poisson {
        /// Transactions per second across all connections.
        rate: f64,
    },
}

impl Arrival {
    /// The total rate, or `None` in closed loop.
    pub fn rate(&self) -> Option<f64> {
        match *self {
            Arrival::Closed => None,
            Arrival::Fixed { rate } | Arrival::Poisson { rate } => Some(rate),
        }
    }

    /// `"closed"`, `"fixed"` or `"poisson"`.
    pub fn name(&self) -> &'static str {
        match self {
            Arrival::Closed => "closed",
            Arrival::Fixed { .. } => "fixed",
            Arrival::Poisson { .. } => "poisson",
        }
    }
}

/// One client thread's share of an open-loop schedule.
#[derive(Debug)]
pub(crate) struct ThreadSchedule {
    poisson: bool,
    /// Nanoseconds between arrivals (fixed) or the mean gap (Poisson) for this thread.
    gap_ns: f64,
    /// Time of the first arrival for this thread.
    origin_ns: u64,
    /// Arrivals taken so far (fixed), used to avoid accumulating rounding drift.
    taken: u64,
    next_ns: u64,
    rng: SmallRng,
}

impl ThreadSchedule {
    /// The schedule of thread `thread` of `threads`, starting at `t0_ns`.
    /// Returns `None` in closed loop.
    pub(crate) fn new(
        arrival: Arrival,
        thread: usize,
        threads: usize,
        t0_ns: u64,
        seed: u64,
    ) -> Option<ThreadSchedule> {
        let (rate, poisson) = match arrival {
            Arrival::Closed => return None,
            Arrival::Fixed { rate } => (rate, false),
            Arrival::Poisson { rate } => (rate, true),
        };
        let gap_ns = 1e9 * threads as f64 / rate;
        let mut rng = SmallRng::seed_from_u64(seed ^ (0x9e37_79b9_7f4a_7c15u64.wrapping_mul(thread as u64 + 1)));
        let origin_ns = if poisson {
            t0_ns + exp_gap(&mut rng, gap_ns)
        } else {
            // Thread j's arrivals are offset by j/rate so the threads interleave evenly.
            t0_ns + (1e9 * thread as f64 / rate) as u64
        };
        Some(ThreadSchedule {
            poisson,
            gap_ns,
            origin_ns,
            taken: 0,
            next_ns: origin_ns,
            rng,
        })
    }

    /// Takes the next intended start time.
    pub(crate) fn take(&mut self) -> u64 {
        let t = self.next_ns;
        self.taken += 1;
        self.next_ns = if self.poisson {
            t + exp_gap(&mut self.rng, self.gap_ns)
        } else {
            self.origin_ns + (self.taken as f64 * self.gap_ns) as u64
        };
        t
    }

    /// Arrivals due at `now_ns` that no connection has taken yet.
    pub(crate) fn backlog(&self, now_ns: u64) -> u64 {
        if self.next_ns > now_ns {
            return 0;
        }
        1 + ((now_ns - self.next_ns) as f64 / self.gap_ns) as u64
    }
}

fn exp_gap(rng: &mut SmallRng, mean_ns: f64) -> u64 {
    let u: f64 = rng.random();
    (-(1.0 - u).ln() * mean_ns) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_loop_has_no_schedule() {
        assert!(ThreadSchedule::new(Arrival::Closed, 0, 1, 0, 1).is_none());
    }

    #[test]
    fn fixed_rate_threads_interleave_without_drift() {
        // 1000/s over 2 threads: thread 0 at 0, 2, 4 ms...; thread 1 at 1, 3, 5 ms...
        let mut a = ThreadSchedule::new(Arrival::Fixed { rate: 1000.0 }, 0, 2, 0, 1).unwrap();
        let mut b = ThreadSchedule::new(Arrival::Fixed { rate: 1000.0 }, 1, 2, 0, 1).unwrap();
        let ta: Vec<u64> = (0..3).map(|_| a.take()).collect();
        let tb: Vec<u64> = (0..3).map(|_| b.take()).collect();
        assert_eq!(ta, vec![0, 2_000_000, 4_000_000]);
        assert_eq!(tb, vec![1_000_000, 3_000_000, 5_000_000]);
        for _ in 0..999_997 {
            a.take();
        }
        // The millionth arrival lands exactly where 1e6 gaps put it.
        assert_eq!(a.take(), 2_000_000_000_000);
    }

    #[test]
    fn poisson_mean_gap_matches_rate() {
        let mut s = ThreadSchedule::new(Arrival::Poisson { rate: 10_000.0 }, 0, 1, 0, 7).unwrap();
        let n = 200_000;
        let first = s.take();
        let mut last = first;
        for _ in 1..n {
            last = s.take();
        }
        let mean_gap = (last - first) as f64 / (n - 1) as f64;
        assert!((mean_gap - 100_000.0).abs() < 1_000.0, "mean gap {mean_gap} ns");
    }

    #[test]
    fn backlog_counts_due_arrivals() {
        let mut s = ThreadSchedule::new(Arrival::Fixed { rate: 100.0 }, 0, 1, 0, 1).unwrap();
        assert_eq!(s.backlog(0), 1);
        s.take();
        assert_eq!(s.backlog(5_000_000), 0);
        // At 1 s, arrivals at 10 ms .. 1000 ms are due: 100 of them.
        assert_eq!(s.backlog(1_000_000_000), 100);
    }
}
