//! Random numbers exactly as the Java reference draws them: `java.util.Random` (the 48-bit
//! linear congruential generator and its `nextInt`, `nextInt(bound)`, `nextLong`,
//! `nextDouble` and `nextGaussian`) and the `SHA1PRNG` `SecureRandom` that seeds it.
//!
//! LinkBench seeds one SHA1PRNG "master" per phase with the 8-byte big-endian seed; every
//! loader and requester then gets a `java.util.Random` seeded with the master's next
//! `nextLong`. With `--java-compatible-rng` dbperf does the same, so a single-loader,
//! single-requester run draws the same numbers as the reference.

use sha1::{Digest, Sha1};

const MULTIPLIER: u64 = 0x5_DEEC_E66D;
const ADDEND: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

/// `java.util.Random`.
#[derive(Clone, Debug)]
pub struct JavaRandom {
    seed: u64,
    next_gaussian: Option<f64>,
}

impl JavaRandom {
    /// `new Random(seed)`.
    pub fn new(seed: i64) -> JavaRandom {
        JavaRandom {
            seed: (seed as u64 ^ MULTIPLIER) & MASK,
            next_gaussian: None,
        }
    }

    /// `next(bits)`: the top `bits` of the advanced state, as a signed int.
    fn next(&mut self, bits: u32) -> i32 {
        self.seed = self.seed.wrapping_mul(MULTIPLIER).wrapping_add(ADDEND) & MASK;
        (self.seed >> (48 - bits)) as i64 as i32
    }

    /// `nextInt()`.
    pub fn next_int(&mut self) -> i32 {
        self.next(32)
    }

    /// `nextInt(bound)`: uniform in `[0, bound)`, with Java's rejection loop. `bound` must
    /// be positive.
    pub fn next_int_bound(&mut self, bound: i32) -> i32 {
        assert!(bound > 0, "nextInt bound must be positive, got {bound}");
        let mut r = self.next(31);
        let m = bound - 1;
        if bound & m == 0 {
            return ((bound as i64 * r as i64) >> 31) as i32;
        }
        let mut u = r;
        loop {
            r = u % bound;
            if u.wrapping_sub(r).wrapping_add(m) >= 0 {
                return r;
            }
            u = self.next(31);
        }
    }

    /// `nextLong()`.
    pub fn next_long(&mut self) -> i64 {
        let hi = self.next(32) as i64;
        let lo = self.next(32) as i64;
        (hi << 32).wrapping_add(lo)
    }

    /// `nextDouble()`: 53 random bits in `[0, 1)`.
    pub fn next_double(&mut self) -> f64 {
        let hi = self.next(26) as i64;
        let lo = self.next(27) as i64;
        ((hi << 27) + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `nextGaussian()`: Marsaglia's polar method, the second value of each pair kept for
    /// the next call.
    pub fn next_gaussian(&mut self) -> f64 {
        if let Some(g) = self.next_gaussian.take() {
            return g;
        }
        loop {
            let v1 = 2.0 * self.next_double() - 1.0;
            let v2 = 2.0 * self.next_double() - 1.0;
            let s = v1 * v1 + v2 * v2;
            if s < 1.0 && s != 0.0 {
                let multiplier = (-2.0 * s.ln() / s).sqrt();
                self.next_gaussian = Some(v2 * multiplier);
                return v1 * multiplier;
            }
        }
    }
}

/// `SecureRandom.getInstance("SHA1PRNG")` after one `setSeed`, as LinkBench uses it.
#[derive(Clone, Debug)]
pub struct Sha1Prng {
    state: [u8; 20],
    remainder: [u8; 20],
    rem_count: usize,
}

impl Sha1Prng {
    /// A fresh instance given `setSeed(seed)`.
    pub fn new(seed: &[u8]) -> Sha1Prng {
        Sha1Prng {
            state: Sha1::digest(seed).into(),
            remainder: [0; 20],
            rem_count: 0,
        }
    }

    /// The master LinkBench creates from a configured seed (8 bytes, big-endian). The
    /// reference logs one `nextLong` of it at debug level; Java evaluates the argument
    /// whatever the level, so that number is drawn and dropped here too.
    pub fn linkbench_master(seed: i64) -> Sha1Prng {
        let mut m = Sha1Prng::new(&seed.to_be_bytes());
        m.next_long();
        m
    }

    /// `nextBytes`.
    pub fn next_bytes(&mut self, out: &mut [u8]) {
        let mut index = 0;
        if self.rem_count > 0 {
            let todo = out.len().min(20 - self.rem_count);
            for b in out.iter_mut().take(todo) {
                *b = self.remainder[self.rem_count];
                self.remainder[self.rem_count] = 0;
                self.rem_count += 1;
            }
            index = todo;
        }
        while index < out.len() {
            let output: [u8; 20] = Sha1::digest(self.state).into();
            self.update_state(&output);
            self.remainder = output;
            let todo = (out.len() - index).min(20);
            for i in 0..todo {
                out[index] = self.remainder[i];
                self.remainder[i] = 0;
                index += 1;
            }
            self.rem_count += todo;
        }
        self.rem_count %= 20;
    }

    /// The state becomes state + output + 1, as little-endian bytes; if that left it
    /// unchanged its first byte is bumped.
    fn update_state(&mut self, output: &[u8; 20]) {
        let mut last: i32 = 1;
        let mut changed = false;
        for (s, &o) in self.state.iter_mut().zip(output) {
            let v = *s as i8 as i32 + o as i8 as i32 + last;
            let t = v as u8;
            changed |= *s != t;
            *s = t;
            last = v >> 8;
        }
        if !changed {
            self.state[0] = self.state[0].wrapping_add(1);
        }
    }

    /// `next(32)` of `SecureRandom`: four bytes, big-endian.
    fn next_int(&mut self) -> i32 {
        let mut b = [0u8; 4];
        self.next_bytes(&mut b);
        i32::from_be_bytes(b)
    }

    /// `nextLong()`.
    pub fn next_long(&mut self) -> i64 {
        let hi = self.next_int() as i64;
        let lo = self.next_int() as i64;
        (hi << 32).wrapping_add(lo)
    }
}

/// A seed for stream `n` of `seed`, for dbperf's own (not Java-compatible) streams:
/// SplitMix64's finalizer, so nearby inputs give unrelated seeds.
pub fn derive_seed(seed: u64, n: u64) -> i64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(n.wrapping_add(1)));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values printed by OpenJDK 17 (`java.util.Random`, `SecureRandom`).

    #[test]
    fn next_int_matches_java() {
        assert_eq!(JavaRandom::new(42).next_int(), -1170105035);
        let mut r = JavaRandom::new(42);
        let v: Vec<i32> = (0..7).map(|_| r.next_int_bound(10)).collect();
        assert_eq!(v, [0, 3, 8, 4, 0, 5, 5]);
    }

    #[test]
    fn double_long_gaussian_and_bounds_match_java() {
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next_double().to_bits(), 4604728530581845079);
        assert_eq!(r.next_long(), -5843495416241995736);
        assert_eq!(r.next_gaussian().to_bits() as i64, -4616641179245592382);
        assert_eq!(r.next_gaussian().to_bits() as i64, -4615707776640798080);
        assert_eq!(r.next_int_bound(1 << 20), 697878);
        assert_eq!(r.next_int_bound(1_000_000_007), 196118093);
    }

    #[test]
    fn sha1prng_matches_java() {
        let mut s = Sha1Prng::new(&12345i64.to_be_bytes());
        assert_eq!(
            [s.next_long(), s.next_long(), s.next_long()],
            [1683928760597952207, -7018833430379821243, -3857986826158688662]
        );
        // 40 longs cross many 20-byte digest boundaries.
        let mut s = Sha1Prng::new(&424242i64.to_be_bytes());
        let v: Vec<i64> = (0..40).map(|_| s.next_long()).collect();
        assert_eq!(
            v[..4],
            [
                5462720186600935058,
                -3102152722795122802,
                2412976526758828357,
                -1704750509774927830
            ]
        );
        assert_eq!(v[39], -6755337327439032757);
        assert_eq!(v[20], 4785551005362019843);
    }
}
