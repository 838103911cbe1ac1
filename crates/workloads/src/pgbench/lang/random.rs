//! pgbench 15's random numbers, so a script run with `--random-seed=N` draws the values
//! `pgbench --random-seed=N` draws: the generator ([`Prng`], xoroshiro128** seeded through
//! splitmix64, as PostgreSQL's `pg_prng`), how a run derives its streams from the seed
//! ([`Streams`]), the distributions (`random`, `random_exponential`, `random_gaussian`,
//! `random_zipfian`), the hashes (`hash_fnv1a`, `hash_murmur2`) and `permute`. Written from
//! the algorithms' published descriptions and checked against the pgbench binary's output.

/// Smallest `random_gaussian` parameter pgbench accepts.
pub const MIN_GAUSSIAN_PARAM: f64 = 2.0;
/// `random_zipfian`'s parameter range in pgbench (inclusive).
pub const ZIPFIAN_PARAM: (f64, f64) = (1.001, 1000.0);

/// xoroshiro128** (Blackman and Vigna), the generator of PostgreSQL's `pg_prng`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prng {
    s0: u64,
    s1: u64,
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut v = *state;
    v = (v ^ (v >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    v = (v ^ (v >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    v ^ (v >> 31)
}

impl Prng {
    /// The generator seeded with `seed`: two splitmix64 outputs (never the all-zero state).
    pub fn seed(mut seed: u64) -> Prng {
        let s0 = splitmix64(&mut seed);
        let s1 = splitmix64(&mut seed);
        if s0 == 0 && s1 == 0 {
            return Prng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            };
        }
        Prng { s0, s1 }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let v = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        v
    }

    /// Uniform in `[0, range]`, by bitmask rejection.
    pub fn up_to(&mut self, range: u64) -> u64 {
        if range == 0 {
            return 0;
        }
        let shift = range.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= range {
                return v;
            }
        }
    }

    /// Uniform in `[0, 1)`, 52 bits.
    pub fn double(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 / (1u64 << 52) as f64
    }
}

/// The streams of a run, all drawn in order from the generator seeded with the run's seed,
/// as pgbench draws them: one per client (its functions' random state), then the default
/// seed of the hash functions, then three per thread (the first picks the scripts).
#[derive(Clone, Copy, Debug)]
pub struct Streams {
    /// The run's seed (`--random-seed`).
    pub seed: u64,
    /// Number of clients.
    pub clients: usize,
}

impl Streams {
    fn draw(&self, k: usize) -> u64 {
        let mut base = Prng::seed(self.seed);
        for _ in 0..k {
            base.next_u64();
        }
        base.next_u64()
    }

    /// Client `c`'s random state for `random*` functions.
    pub fn client(&self, c: usize) -> Prng {
        Prng::seed(self.draw(c))
    }

    /// `:default_seed`.
    pub fn default_seed(&self) -> i64 {
        self.draw(self.clients) as i64
    }

    /// The state picking client `c`'s scripts: that of a thread serving client `c` alone.
    pub fn chooser(&self, c: usize) -> Prng {
        Prng::seed(self.draw(self.clients + 1 + 3 * c))
    }
}

/// `random(lb, ub)`: uniform in `[lb, ub]` (`ub - lb` checked by the caller).
pub fn uniform(rng: &mut Prng, lb: i64, ub: i64) -> i64 {
    lb.wrapping_add(rng.up_to(ub.wrapping_sub(lb) as u64) as i64)
}

/// `lb + (int64)(n * r)` for `r` in [0, 1) and the range's size `n`, as pgbench scales.
fn scaled(lb: i64, ub: i64, r: f64) -> i64 {
    let n = ub.wrapping_sub(lb).wrapping_add(1) as f64;
    lb.wrapping_add((n * r) as i64)
}

/// `random_exponential(lb, ub, parameter)`: `parameter > 0`, checked by the caller.
pub fn exponential(rng: &mut Prng, lb: i64, ub: i64, parameter: f64) -> i64 {
    let cut = (-parameter).exp();
    let u = 1.0 - rng.double();
    let r = -(cut + (1.0 - cut) * u).ln() / parameter;
    scaled(lb, ub, r)
}

/// `random_gaussian(lb, ub, parameter)`: a normal draw (Box-Muller) redrawn until it is
/// within `parameter` deviations, mapped onto the range; `parameter >= 2`.
pub fn gaussian(rng: &mut Prng, lb: i64, ub: i64, parameter: f64) -> i64 {
    let z = loop {
        let u1 = 1.0 - rng.double();
        let u2 = 1.0 - rng.double();
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin();
        if !(z < -parameter || z >= parameter) {
            break z;
        }
    };
    scaled(lb, ub, (z + parameter) / (parameter * 2.0))
}

/// `random_zipfian(lb, ub, s)`: value `lb + k - 1` with probability proportional to
/// `1 / k^s`, by rejection (Devroye, Non-Uniform Random Variate Generation, p. 550).
pub fn zipfian(rng: &mut Prng, lb: i64, ub: i64, s: f64) -> i64 {
    let n = ub.wrapping_sub(lb).wrapping_add(1);
    if n <= 1 {
        return lb;
    }
    let b = 2f64.powf(s - 1.0);
    let x = loop {
        let u = rng.double();
        let v = rng.double();
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
            break x as i64;
        }
    };
    lb.wrapping_sub(1).wrapping_add(x)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// `hash_fnv1a(v, seed)`: FNV-1a 64 over the 8 bytes of `v`, least significant first,
/// the offset basis xored with the seed.
pub fn fnv1a(v: i64, seed: i64) -> i64 {
    let mut h = FNV_OFFSET ^ seed as u64;
    for byte in (v as u64).to_le_bytes() {
        h ^= byte as u64;
        h = h.wrapping_mul(FNV_PRIME);
    }
    h as i64
}

const MURMUR_M: u64 = 0xc6a4_a793_5bd1_e995;
const MURMUR_R: u32 = 47;

/// `hash_murmur2(v, seed)` (and `hash`): MurmurHash64A of the 8-byte key `v`.
pub fn murmur2(v: i64, seed: i64) -> i64 {
    let mut h = seed as u64 ^ 8u64.wrapping_mul(MURMUR_M);
    let mut k = v as u64;
    k = k.wrapping_mul(MURMUR_M);
    k ^= k >> MURMUR_R;
    k = k.wrapping_mul(MURMUR_M);
    h ^= k;
    h = h.wrapping_mul(MURMUR_M);
    h ^= h >> MURMUR_R;
    h = h.wrapping_mul(MURMUR_M);
    h ^= h >> MURMUR_R;
    h as i64
}

/// `permute(i, size, seed)` (`size > 0`, checked by the caller): the position of
/// `i mod size` in a pseudorandom permutation of `[0, size)` chosen by `seed`. Six rounds,
/// each an odd multiply, xor and rotate modulo the largest power of two within the size,
/// applied to the low and to the high end of the range, then a random offset; the rounds'
/// constants come from the generator seeded with `seed`.
pub fn permute(i: i64, size: i64, seed: i64) -> i64 {
    if size < 2 {
        return 0;
    }
    let mut rng = Prng::seed(seed as u64);
    let size = size as u64;
    let mut v = (i as u64) % size;
    let bits = 63 - size.leading_zeros();
    let mask = (1u64 << bits) - 1;
    let mix = |x: u64, m: u64, r: u64| {
        let x = (x.wrapping_mul(m) ^ r) & mask;
        ((x << 1) & mask) | (x >> (bits - 1))
    };
    for _ in 0..6 {
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        if v <= mask {
            v = mix(v, m, r);
        }
        let m = (rng.next_u64() & mask) | 1;
        let r = rng.next_u64() & mask;
        let t = size - 1 - v;
        if t <= mask {
            v = size - 1 - mix(t, m, r);
        }
        let r = rng.up_to(size - 1);
        v = ((v as u128 + r as u128) % size as u128) as u64;
    }
    v as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_the_values_in_pgbenchs_documentation() {
        assert_eq!(murmur2(10, 5432), -5817877081768721676);
        assert_eq!(fnv1a(10, 5432), -7793829335365542153);
    }

    #[test]
    fn permute_gives_pgbenchs_values() {
        // pgbench's own test of permute's portability (001_pgbench_with_server.pl).
        let size = i64::MAX - 10;
        let want = [
            520382784483822430,
            1143715004660802862,
            447293596416496998,
            916527772266572956,
            2763809008686028849,
            8648551549198294572,
            4542876852200565125,
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(permute(size - 1 - k as i64, size, 5432), *w, "size-{}", k + 1);
        }
        assert_eq!((permute(0, 2, 5431), permute(1, 2, 5431)), (0, 1));
        assert_eq!((permute(0, 2, 5433), permute(1, 2, 5433)), (1, 0));
        for size in [1i64, 2, 3, 7, 10, 64, 1000] {
            let mut seen = vec![false; size as usize];
            for i in 0..size {
                let p = permute(i, size, 5432);
                assert!(!seen[p as usize], "size {size}: {p} twice");
                seen[p as usize] = true;
            }
        }
        assert_eq!(permute(7, 1, 3), 0);
    }

    /// What `pgbench --random-seed=5432 -t 1` prints for its own test script (one client):
    /// `random(10, 19)`, `random_exponential(100, 199, 10.0)`, `random_gaussian(1000, 1999,
    /// 10.0)`, then `random_zipfian(1, 9, 1.3)`, and `hash(10)` with the default seed.
    #[test]
    fn seeded_streams_draw_pgbenchs_values() {
        let streams = Streams { seed: 5432, clients: 1 };
        let mut rng = streams.client(0);
        assert_eq!(uniform(&mut rng, 10, 19), 17);
        assert_eq!(exponential(&mut rng, 100, 199, 10.0), 104);
        assert_eq!(gaussian(&mut rng, 1000, 1999, 10.0), 1498);
        assert_eq!(zipfian(&mut rng, 1, 9, 1.3), 3);
        assert_eq!(murmur2(10, streams.default_seed()), 4313776982099445391);
    }

    fn histogram(f: impl Fn(&mut Prng) -> i64, n: usize) -> Vec<usize> {
        let mut rng = Prng::seed(42);
        let mut h = vec![0; 10];
        for _ in 0..n {
            let v = f(&mut rng);
            assert!((1..=10).contains(&v), "{v} outside [1, 10]");
            h[(v - 1) as usize] += 1;
        }
        h
    }

    #[test]
    fn distributions_stay_in_range_with_their_shape() {
        let u = histogram(|r| uniform(r, 1, 10), 100_000);
        assert!(u.iter().all(|&c| (9_000..11_000).contains(&c)), "{u:?}");
        // exponential(5): each step is exp(-0.5) of the one before.
        let e = histogram(|r| exponential(r, 1, 10, 5.0), 100_000);
        let ratio = e[1] as f64 / e[0] as f64;
        assert!((ratio - (-0.5f64).exp()).abs() < 0.03, "{e:?}");
        // gaussian: symmetric, peaked in the middle.
        let g = histogram(|r| gaussian(r, 1, 10, 2.5), 100_000);
        assert!(g[4] > g[0] * 3 && g[5] > g[9] * 3, "{g:?}");
        assert!((g[4] as f64 / g[5] as f64 - 1.0).abs() < 0.05, "{g:?}");
        // zipfian(2): 1 is drawn 4 times as often as 2.
        let z = histogram(|r| zipfian(r, 1, 10, 2.0), 100_000);
        let ratio = z[0] as f64 / z[1] as f64;
        assert!((ratio - 4.0).abs() < 0.2, "{z:?}");
        let mut rng = Prng::seed(1);
        assert_eq!(uniform(&mut rng, 5, 5), 5);
        assert_eq!(zipfian(&mut rng, 5, 5, 1.5), 5);
    }
}
