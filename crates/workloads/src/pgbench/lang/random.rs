//! pgbench's random functions and hashes, written from the definitions in PostgreSQL's
//! pgbench documentation: `random` (uniform), `random_exponential`, `random_gaussian`,
//! `random_zipfian` (Devroye's rejection method), `hash_fnv1a` (FNV-1a over the value's 8
//! bytes, least significant first), `hash_murmur2` (MurmurHash64A of the 8 bytes) and
//! `permute` (a keyed bijection of `[0, size)`; pgbench does not document its algorithm, so
//! dbperf's permutation is its own and its values differ from pgbench's).

use rand::rngs::SmallRng;
use rand::{Rng, RngExt};

/// Smallest `random_gaussian` parameter pgbench accepts.
pub const MIN_GAUSSIAN_PARAM: f64 = 2.0;
/// `random_zipfian`'s parameter range in pgbench (inclusive).
pub const ZIPFIAN_PARAM: (f64, f64) = (1.001, 1000.0);

/// A double in [0, 1).
pub fn unit(rng: &mut SmallRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Number of values in `[lb, ub]`, or an error naming the function.
fn span(f: &str, lb: i64, ub: i64) -> Result<u64, String> {
    if ub < lb {
        return Err(format!("empty range given to {f}: {lb} > {ub}"));
    }
    let n = (ub as i128 - lb as i128 + 1) as u128;
    if n > i64::MAX as u128 {
        return Err(format!("random range is too large in {f}({lb}, {ub})"));
    }
    Ok(n as u64)
}

/// `random(lb, ub)`: uniform in `[lb, ub]`.
pub fn uniform(rng: &mut SmallRng, lb: i64, ub: i64) -> Result<i64, String> {
    let n = span("random", lb, ub)?;
    Ok(lb + rng.random_range(0..n) as i64)
}

/// `random_exponential(lb, ub, parameter)`: value `i` drawn with probability proportional
/// to `exp(-parameter * (i - lb) / (ub - lb + 1))`; `parameter > 0`.
pub fn exponential(rng: &mut SmallRng, lb: i64, ub: i64, parameter: f64) -> Result<i64, String> {
    let n = span("random_exponential", lb, ub)?;
    if parameter.is_nan() || parameter <= 0.0 {
        return Err(format!(
            "exponential parameter must be greater than zero (got {parameter})"
        ));
    }
    let cut = (-parameter).exp();
    // u in (0, 1], so the logarithm is finite.
    let u = 1.0 - unit(rng);
    let r = -(cut + (1.0 - cut) * u).ln() / parameter;
    Ok(lb + ((n as f64 * r) as u64).min(n - 1) as i64)
}

/// `random_gaussian(lb, ub, parameter)`: a normal distribution centred on the middle of
/// the range, cut at `parameter` standard deviations either side; `parameter >= 2`.
pub fn gaussian(rng: &mut SmallRng, lb: i64, ub: i64, parameter: f64) -> Result<i64, String> {
    let n = span("random_gaussian", lb, ub)?;
    if parameter.is_nan() || parameter < MIN_GAUSSIAN_PARAM {
        return Err(format!(
            "gaussian parameter must be at least {MIN_GAUSSIAN_PARAM} (got {parameter})"
        ));
    }
    let z = loop {
        // Box-Muller: u1 in (0, 1] keeps ln finite.
        let u1 = 1.0 - unit(rng);
        let u2 = unit(rng);
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin();
        if -parameter <= z && z < parameter {
            break z;
        }
    };
    let r = (z + parameter) / (2.0 * parameter);
    Ok(lb + ((n as f64 * r) as u64).min(n - 1) as i64)
}

/// `random_zipfian(lb, ub, s)`: value `lb + k - 1` with probability proportional to
/// `1 / k^s`, by rejection (Devroye, Non-Uniform Random Variate Generation, p. 550);
/// `s` in [1.001, 1000].
pub fn zipfian(rng: &mut SmallRng, lb: i64, ub: i64, s: f64) -> Result<i64, String> {
    let n = span("random_zipfian", lb, ub)?;
    if !(ZIPFIAN_PARAM.0..=ZIPFIAN_PARAM.1).contains(&s) {
        return Err(format!(
            "zipfian parameter must be in range [{}, {}] (got {s})",
            ZIPFIAN_PARAM.0, ZIPFIAN_PARAM.1
        ));
    }
    let b = 2f64.powf(s - 1.0);
    let x = loop {
        let u = 1.0 - unit(rng);
        let v = unit(rng);
        let x = u.powf(-1.0 / (s - 1.0)).floor();
        let t = (1.0 + 1.0 / x).powf(s - 1.0);
        if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
            break x as u64;
        }
    };
    Ok(lb + x as i64 - 1)
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

/// `permute(i, size, seed)`: the position of `i mod size` in a pseudorandom permutation
/// of `[0, size)` chosen by `seed`. A balanced Feistel network on the smallest even
/// number of bits covering `size`, walked until the value falls inside the range (each
/// step is a bijection of the power-of-two domain, so the walk is one of `[0, size)`).
pub fn permute(i: i64, size: i64, seed: i64) -> Result<i64, String> {
    if size <= 0 {
        return Err(format!(
            "pseudorandom permutation size must be greater than zero (got {size})"
        ));
    }
    let size = size as u64;
    let v = i.rem_euclid(size as i64) as u64;
    if size == 1 {
        return Ok(0);
    }
    let bits = 64 - (size - 1).leading_zeros();
    let half = bits.div_ceil(2).max(1);
    let mask = (1u64 << half) - 1;
    let round = |r: u64, x: u64| -> u64 { (murmur2((x | (r << 40)) as i64, seed) as u64) & mask };
    let mut x = v;
    loop {
        let (mut l, mut r) = (x >> half, x & mask);
        for k in 0..4 {
            let f = round(k, r);
            (l, r) = (r, l ^ f);
        }
        x = (l << half) | r;
        if x < size {
            return Ok(x as i64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn hashes_match_the_values_in_pgbenchs_documentation() {
        assert_eq!(murmur2(10, 5432), -5817877081768721676);
        assert_eq!(fnv1a(10, 5432), -7793829335365542153);
    }

    #[test]
    fn permute_is_a_bijection_of_the_range_and_depends_on_the_seed() {
        for size in [1i64, 2, 3, 7, 10, 64, 1000] {
            let mut seen = vec![false; size as usize];
            for i in 0..size {
                let p = permute(i, size, 5432).unwrap();
                assert!(!seen[p as usize], "size {size}: {p} twice");
                seen[p as usize] = true;
            }
        }
        assert_eq!(permute(-1, 10, 7).unwrap(), permute(9, 10, 7).unwrap());
        let a: Vec<i64> = (0..100).map(|i| permute(i, 100, 1).unwrap()).collect();
        let b: Vec<i64> = (0..100).map(|i| permute(i, 100, 2).unwrap()).collect();
        assert_ne!(a, b);
        assert_ne!(a, (0..100).collect::<Vec<_>>());
        assert!(permute(0, 0, 1).unwrap_err().contains("greater than zero"));
    }

    fn histogram(f: impl Fn(&mut SmallRng) -> i64, n: usize) -> Vec<usize> {
        let mut rng = SmallRng::seed_from_u64(42);
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
        let u = histogram(|r| uniform(r, 1, 10).unwrap(), 100_000);
        assert!(u.iter().all(|&c| (9_000..11_000).contains(&c)), "{u:?}");
        // exponential(5): each step is exp(-0.5) of the one before.
        let e = histogram(|r| exponential(r, 1, 10, 5.0).unwrap(), 100_000);
        let ratio = e[1] as f64 / e[0] as f64;
        assert!((ratio - (-0.5f64).exp()).abs() < 0.03, "{e:?}");
        // gaussian: symmetric, peaked in the middle.
        let g = histogram(|r| gaussian(r, 1, 10, 2.5).unwrap(), 100_000);
        assert!(g[4] > g[0] * 3 && g[5] > g[9] * 3, "{g:?}");
        assert!((g[4] as f64 / g[5] as f64 - 1.0).abs() < 0.05, "{g:?}");
        // zipfian(2): 1 is drawn 4 times as often as 2.
        let z = histogram(|r| zipfian(r, 1, 10, 2.0).unwrap(), 100_000);
        let ratio = z[0] as f64 / z[1] as f64;
        assert!((ratio - 4.0).abs() < 0.2, "{z:?}");
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(uniform(&mut rng, 5, 5).unwrap(), 5);
        assert!(uniform(&mut rng, i64::MIN, i64::MAX).unwrap_err().contains("too large"));
    }

    #[test]
    fn parameters_outside_pgbenchs_rules_are_refused() {
        let mut rng = SmallRng::seed_from_u64(1);
        assert!(uniform(&mut rng, 2, 1).unwrap_err().contains("empty range"));
        assert!(gaussian(&mut rng, 1, 10, 1.9).unwrap_err().contains("at least 2"));
        assert!(exponential(&mut rng, 1, 10, 0.0)
            .unwrap_err()
            .contains("greater than zero"));
        assert!(zipfian(&mut rng, 1, 10, 1.0).unwrap_err().contains("[1.001, 1000]"));
        assert!(zipfian(&mut rng, 1, 10, 1001.0).is_err());
    }
}
