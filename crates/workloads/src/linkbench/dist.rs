//! LinkBench's distributions, drawn from a [`JavaRandom`] in the reference's order: Zipf by
//! Gray et al.'s approximation, uniform, geometric (multiget sizes), log-normal (payload
//! sizes), the empirical out-degree of `Distribution.dat` (`nlinks`), the
//! [`InvertibleShuffler`] that scatters ids, and the motif payload generator.

use super::jrand::JavaRandom;

/// The generalized harmonic number H(n, m) summed from k = n down to 1, the reference's
/// order (it matters for the last bits).
fn harmonic(n: i64, m: f64) -> f64 {
    let mut v = 0.0;
    let mut k = n;
    while k > 0 {
        v += 1.0 / (k as f64).powf(m);
        k -= 1;
    }
    v
}

/// H(n, m) for 0 <= m <= 1: exact below 100,000, else the integral plus a 0.58
/// correction (the reference's `ApproxHarmonic`).
fn approx_harmonic(n: i64, m: f64) -> f64 {
    if n < 100_000 {
        return harmonic(n, m);
    }
    if m == 1.0 {
        // Integer division in the reference: 1 / (2 * n) is 0.
        return (n as f64).ln() + 0.577_215_664_901_532_9;
    }
    (1.0 / (1.0 - m)) * (n as f64).powf(1.0 - m) + (0.58 - 1.0 / (1.0 - m))
}

/// Zipf over `[min, max)` with shape θ, sampled with Gray et al.'s quantile approximation.
#[derive(Clone, Debug)]
pub struct Zipf {
    min: i64,
    max: i64,
    alpha: f64,
    eta: f64,
    zetan: f64,
    half_pow_theta: f64,
}

impl Zipf {
    /// Zipf over `[min, max)`; `shape` in (0, 1].
    pub fn new(min: i64, max: i64, shape: f64) -> Zipf {
        let n = max - min;
        let zetan = if shape <= 1.0 {
            approx_harmonic(n, shape)
        } else {
            harmonic(n, shape)
        };
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - shape)) / (1.0 - harmonic(2, shape) / zetan);
        Zipf {
            min,
            max,
            alpha: 1.0 / (1.0 - shape),
            eta,
            zetan,
            half_pow_theta: 0.5f64.powf(shape),
        }
    }

    /// The id at quantile `p`.
    pub fn quantile(&self, p: f64) -> i64 {
        let uz = p * self.zetan;
        let n = self.max - self.min;
        if uz < 1.0 {
            return self.min;
        }
        if uz < 1.0 + self.half_pow_theta {
            return self.min + 1;
        }
        let offset = (n as f64 * (self.eta * p - self.eta + 1.0).powf(self.alpha)) as i64;
        if offset >= n {
            return self.max - 1;
        }
        self.min + offset
    }
}

/// An id distribution of the request phase.
#[derive(Clone, Debug)]
pub enum IdDist {
    /// Zipf.
    Zipf(Zipf),
    /// Uniform over `[min, max)`.
    Uniform { min: i64, max: i64 },
}

impl IdDist {
    /// One draw.
    pub fn choose(&self, rng: &mut JavaRandom) -> i64 {
        match self {
            IdDist::Zipf(z) => z.quantile(rng.next_double()),
            IdDist::Uniform { min, max } => uniform(rng, *min, *max),
        }
    }
}

/// Uniform over `[min, max)` as the reference draws it (one `nextInt(n)` when n fits an
/// int; two-step draws beyond).
pub fn uniform(rng: &mut JavaRandom, min: i64, max: i64) -> i64 {
    let n = max - min;
    let int_max = i32::MAX as i64;
    let uint_range = int_max - i32::MIN as i64;
    let two_step = |rng: &mut JavaRandom, n: i64| -> i64 {
        if rng.next_double() < int_max as f64 / n as f64 {
            rng.next_int_bound(i32::MAX) as i64
        } else {
            int_max + rng.next_int_bound((n - int_max) as i32) as i64
        }
    };
    if n <= int_max {
        min + rng.next_int_bound(n as i32) as i64
    } else if n < uint_range {
        two_step(rng, n)
    } else {
        uint_range * rng.next_int_bound((n / uint_range) as i32) as i64 + two_step(rng, n % uint_range)
    }
}

/// Geometric over `[min, max)` with success probability `p`: the multiget size.
#[derive(Clone, Copy, Debug)]
pub struct Geometric {
    /// Smallest value (the effective smallest is min + 1 unless u is exactly 0).
    pub min: i64,
    /// One past the largest value.
    pub max: i64,
    /// Success probability.
    pub p: f64,
}

impl Geometric {
    /// One draw: min + ceil(ln(1-u) / ln(1-p)), capped at max - 1. As in the reference the
    /// ceiling makes min + 1 the usual smallest value.
    pub fn choose(&self, rng: &mut JavaRandom) -> i64 {
        let r = rng.next_double();
        if r == 0.0 {
            return self.min;
        }
        let x = self.min + ((1.0 - r).ln() / (1.0 - self.p).ln()).ceil() as i64;
        x.min(self.max - 1)
    }
}

/// Log-normal sizes in `[min, max)` with the given median and σ.
#[derive(Clone, Copy, Debug)]
pub struct LogNormal {
    min: i64,
    max: i64,
    mu: f64,
    sigma: f64,
}

impl LogNormal {
    /// Sizes in `[min, max)`.
    pub fn new(min: i64, max: i64, median: f64, sigma: f64) -> LogNormal {
        LogNormal {
            min,
            max,
            mu: median.ln(),
            sigma,
        }
    }

    /// round(exp(N(0,1)·σ + ln median)), clamped.
    pub fn choose(&self, rng: &mut JavaRandom) -> i64 {
        let v = (rng.next_gaussian() * self.sigma + self.mu).exp();
        // Java's Math.round: floor(x + 0.5).
        let c = (v + 0.5).floor() as i64;
        c.clamp(self.min, self.max - 1)
    }
}

/// The reference's invertible permutation of `[0, n)`: ids are split into residue classes
/// mod `groups`, and each class is rotated by its own random amount.
#[derive(Clone, Debug)]
pub struct InvertibleShuffler {
    params: Vec<i64>,
    groups: i64,
    n: i64,
    rounded_up: i64,
    rounded_down: i64,
    min_group: i64,
}

impl InvertibleShuffler {
    /// The shuffler of `n` ids with `groups` groups, its rotations drawn from `new Random(seed)`.
    pub fn new(seed: i64, groups: i64, n: i64) -> InvertibleShuffler {
        let mut rng = JavaRandom::new(seed);
        let groups = groups.min(n).max(1);
        // The reference casts n to int before dividing.
        let min_group = (n as i32 as i64) / groups;
        let params = (0..groups)
            .map(|_| (rng.next_int_bound(min_group.max(1) as i32) as i64).abs())
            .collect();
        let rounded_down = (n / groups) * groups;
        InvertibleShuffler {
            params,
            groups,
            n,
            rounded_up: if n == rounded_down { n } else { rounded_down + groups },
            rounded_down,
            min_group,
        }
    }

    /// The image of `i` in `[0, n)`.
    pub fn permute(&self, i: i64) -> i64 {
        self.map(i, false)
    }

    /// The preimage of `i`.
    pub fn invert(&self, i: i64) -> i64 {
        self.map(i, true)
    }

    fn map(&self, i: i64, inverse: bool) -> i64 {
        debug_assert!((0..self.n).contains(&i), "{i} outside [0, {})", self.n);
        let group = i % self.groups;
        let big = group < self.n % self.groups;
        let mut rotate = self.params[group as usize];
        if inverse {
            rotate = if big {
                self.min_group + 1 - rotate
            } else {
                self.min_group - rotate
            };
        }
        let j = i + self.groups * rotate;
        if j < self.n {
            return j;
        }
        let r = if big {
            j % self.rounded_up
        } else {
            j % self.rounded_down
        };
        if r >= self.n {
            group
        } else {
            r
        }
    }
}

/// One section of `Distribution.dat`: `value cumulative_percent` points.
#[derive(Clone, Debug)]
pub struct Cdf {
    /// (value, cumulative probability in [0, 1]).
    pub points: Vec<(i64, f64)>,
}

impl Cdf {
    /// The named section of a distribution file (`nlinks`, `link_nreads`, ...). Errors name
    /// the line.
    pub fn parse(text: &str, section: &str) -> Result<Cdf, String> {
        let mut points = Vec::new();
        let mut inside = false;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let first = words.next().unwrap_or("");
            if first.parse::<i64>().is_err() {
                if inside {
                    break;
                }
                inside = first == section;
                continue;
            }
            if !inside {
                continue;
            }
            let value: i64 = first.parse().map_err(|e| format!("line {}: {e}", n + 1))?;
            let pct: f64 = words
                .next()
                .ok_or_else(|| format!("line {}: a value without its cumulative percent", n + 1))?
                .parse()
                .map_err(|e| format!("line {}: cumulative percent: {e}", n + 1))?;
            points.push((value, pct / 100.0));
        }
        if points.is_empty() {
            return Err(format!("no section {section:?} in the distribution file"));
        }
        Ok(Cdf { points })
    }

    /// The first point whose probability is at least `p` (the reference's binary search).
    fn search(&self, p: f64) -> usize {
        let (mut left, mut right) = (0, self.points.len() - 1);
        while left < right {
            let mid = (left + right) / 2;
            if self.points[mid].1 >= p {
                right = mid;
            } else {
                left = mid + 1;
            }
        }
        if self.points[left].1 >= p {
            left
        } else {
            left + 1
        }
    }

    /// The mean of the distribution.
    pub fn expected_value(&self) -> f64 {
        let mut sum = self.points[0].1 * self.points[0].0 as f64;
        for w in self.points.windows(2) {
            sum += (w[1].1 - w[0].1) * w[1].0 as f64;
        }
        sum
    }
}

/// Out-degrees: id1 (after un-shuffling) maps to `u = 1 - (id - min)/n`, and takes the value of
/// the first CDF point with p >= u, so the lowest ids get the most links.
#[derive(Clone, Debug)]
pub struct LinkCounts {
    cdf: Cdf,
    shuffler: InvertibleShuffler,
    min: i64,
    max: i64,
    types: i64,
}

/// Seed of the shuffler of out-degrees and of correlated link accesses.
pub const NLINKS_SHUFFLER_SEED: i64 = 20343988438726021;
/// Seed of the shuffler of uncorrelated link accesses.
pub const UNCORR_SHUFFLER_SEED: i64 = 53238253823453;
/// Seed of the shuffler of node accesses.
pub const NODE_SHUFFLER_SEED: i64 = 4766565305853767165;
/// Groups of every shuffler.
pub const SHUFFLER_GROUPS: i64 = 1024;

impl LinkCounts {
    /// Out-degrees of ids `[min, max)` split over `types` link types.
    pub fn new(cdf: Cdf, min: i64, max: i64, types: i64) -> LinkCounts {
        LinkCounts {
            cdf,
            shuffler: InvertibleShuffler::new(NLINKS_SHUFFLER_SEED, SHUFFLER_GROUPS, max - min),
            min,
            max,
            types,
        }
    }

    /// Links of `id1` over all types.
    pub fn total(&self, id1: i64) -> i64 {
        let shuffled = self.min + self.shuffler.invert(id1 - self.min);
        let n = self.max - self.min;
        let u = 1.0 - (shuffled - self.min) as f64 / n as f64;
        let ix = self.cdf.search(u).min(self.cdf.points.len() - 1);
        // round(expectedCount) of an integer value.
        self.cdf.points[ix].0
    }

    /// Links of `id1` of type number `type_ix` (0-based). The reference computes the
    /// leftover as total - total/types where total % types was meant, and gives one more
    /// link to every type below it; reproduced, so totals inflate as in the reference.
    pub fn of_type(&self, id1: i64, type_ix: i64) -> i64 {
        let total = self.total(id1);
        let min_count = total / self.types;
        let left_over = total - min_count;
        if type_ix < left_over {
            min_count + 1
        } else {
            min_count
        }
    }
}

/// The reference's motif payload generator: bytes in `[start, end]`, each 128-byte chunk
/// either fresh random bytes (with probability `uniqueness`) or a slice of a 512-byte
/// motif built from the first call's generator. `*_motif_length` is ignored, as in the
/// reference (it looks the key up among the property values).
#[derive(Clone, Debug)]
pub struct MotifGen {
    start: u8,
    range: i32,
    uniqueness: f64,
    motif: Option<Vec<u8>>,
}

const MOTIF_BYTES: usize = 512;
const MAX_CHUNK: usize = 128;

impl MotifGen {
    /// Bytes in `[start, end]`; `start < end <= 255`.
    pub fn new(start: u8, end: u8, uniqueness: f64) -> MotifGen {
        MotifGen {
            start,
            range: end as i32 - start as i32 + 1,
            uniqueness,
            motif: None,
        }
    }

    fn byte(&self, rng: &mut JavaRandom) -> u8 {
        (self.start as i32 + rng.next_int_bound(self.range)) as u8
    }

    /// Fills `out` (its length is the payload size).
    pub fn fill(&mut self, rng: &mut JavaRandom, out: &mut [u8]) {
        if self.motif.is_none() {
            let m = (0..MOTIF_BYTES).map(|_| self.byte(rng)).collect();
            self.motif = Some(m);
        }
        let n = out.len();
        let mut i = 0;
        while i < n {
            let this = MAX_CHUNK.min(n - i);
            if rng.next_double() < self.uniqueness {
                for b in &mut out[i..i + this] {
                    *b = self.byte(rng);
                }
            } else {
                let k = rng.next_int_bound((MOTIF_BYTES - this + 1) as i32) as usize;
                let motif = self.motif.as_ref().expect("built above");
                out[i..i + this].copy_from_slice(&motif[k..k + this]);
            }
            i += MAX_CHUNK;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffler_is_a_permutation_and_inverts() {
        for n in [1, 7, 1000, 1024, 2000, 5000, 100_003] {
            let s = InvertibleShuffler::new(NLINKS_SHUFFLER_SEED, SHUFFLER_GROUPS, n);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let p = s.permute(i);
                assert!(!seen[p as usize], "n={n}: {p} twice");
                seen[p as usize] = true;
                assert_eq!(s.invert(p), i, "n={n} i={i}");
            }
        }
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let z = Zipf::new(1, 100_001, 0.8);
        let mut rng = JavaRandom::new(1);
        let mut first = 0;
        for _ in 0..100_000 {
            let v = z.quantile(rng.next_double());
            assert!((1..100_001).contains(&v));
            first += (v == 1) as u32;
        }
        // p(1) = 1/zetan; zetan(1e5, .8) is about 49.
        assert!((1500..2600).contains(&first), "{first}");
    }

    #[test]
    fn geometric_mean_is_about_3_6() {
        let g = Geometric {
            min: 1,
            max: 128,
            p: 0.382,
        };
        let mut rng = JavaRandom::new(7);
        let n = 200_000;
        let sum: i64 = (0..n).map(|_| g.choose(&mut rng)).sum();
        let mean = sum as f64 / n as f64;
        assert!((3.5..3.7).contains(&mean), "{mean}");
    }

    #[test]
    fn link_counts_follow_the_data_file_and_its_split_bug() {
        let cdf = Cdf::parse(include_str!("Distribution.dat"), "nlinks").unwrap();
        assert_eq!(cdf.points.len(), 19_951);
        assert!((cdf.expected_value() - 4.097).abs() < 0.01, "{}", cdf.expected_value());
        let lc = LinkCounts::new(cdf, 1, 2001, 2);
        for id in 1..2001 {
            let t = lc.total(id);
            let (a, b) = (lc.of_type(id, 0), lc.of_type(id, 1));
            // total/2 + 1 for each type below total - total/2.
            let want_a = t / 2 + (0 < t - t / 2) as i64;
            let want_b = t / 2 + (1 < t - t / 2) as i64;
            assert_eq!((a, b), (want_a, want_b), "id {id} total {t}");
            assert_ne!(a + b, 2, "id {id}: 2 links never happen");
        }
    }

    #[test]
    fn motif_bytes_stay_in_range() {
        let mut g = MotifGen::new(32, 100, 0.225);
        let mut rng = JavaRandom::new(3);
        let mut buf = vec![0u8; 1000];
        g.fill(&mut rng, &mut buf);
        assert!(buf.iter().all(|b| (32..=100).contains(b)));
    }
}
