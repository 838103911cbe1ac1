//! Key distributions of sysbench's `--rand-type`: which row id a transaction touches.
//!
//! This module owns the five distributions (`uniform`, `gaussian`, `special`, `pareto`,
//! `zipfian`), their options (`--rand-spec-iter`, `--rand-spec-pct`, `--rand-spec-res`,
//! `--rand-pareto-h`, `--rand-zipfian-exp`) and the `--help` text that explains how they
//! differ between sysbench versions. The formulas are sysbench's (`src/sb_rand.c`,
//! reimplemented); the random stream is not, so individual draws never match sysbench's.
//!
//! Configuration is two-stage: [`RandParams`] holds the raw option values, and
//! [`Distribution::new`] validates them into precomputed constants. The hot path is a
//! [`KeySampler`], built once per key range: sampling from it allocates nothing and does no
//! per-call setup (a worker draws ~20 ids per OLTP transaction).

use std::fmt;
use std::str::FromStr;

use ::rand::Rng;
use rand_distr::{Distribution as _, Zipf};

/// `--help` text for `--rand-type` and the options that shape it.
pub const RAND_TYPE_HELP: &str = "\
Distribution of row ids (and of k at prepare time): uniform (default), gaussian, special, \
pareto or zipfian.
  uniform   every id in [1, table_size] is equally likely.
  gaussian  mean of --rand-spec-iter (12) uniform draws (Irwin-Hall): a bell around the middle \
id with sd ~ range/12.
  special   --rand-spec-res (75) % of draws are uniform over the middle --rand-spec-pct (1) % of \
ids; the rest are gaussian over all ids.
  pareto    a + n*u^(ln h/ln(1-h)) with h = --rand-pareto-h (0.2): 80% of draws hit the lowest \
20% of ids.
  zipfian   Zipf over ids with exponent --rand-zipfian-exp (0.8); the lowest id is the most \
popular.
Pitfalls when comparing with sysbench: (a) sysbench 1.0.20, the release distros ship, defaults \
to special, which sends 75% of draws to the middle 1% of ids. That is a hot spot, and it also \
skews k at prepare time. sysbench master and dbperf default to uniform; pass --rand-type=special \
to reproduce 1.0.20. (b) sysbench master's gaussian is broken: --rand-spec-iter is no longer \
registered, so iter is 0 and every draw returns the lower bound (fix pending in sysbench PR \
#455). dbperf's gaussian is the working 1.0.20 version with iter=12.";

/// The names [`RandType::from_str`] accepts, in the order of [`RandType::ALL`].
const VALID_NAMES: &str = "uniform, gaussian, special, pareto, zipfian";

/// A `--rand-type` value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RandType {
    /// Every id equally likely. The default of sysbench master and of dbperf.
    #[default]
    Uniform,
    /// Irwin–Hall: the mean of `--rand-spec-iter` uniforms, scaled to the range.
    Gaussian,
    /// sysbench 1.0.20's default: a hot spot in the middle of the range.
    Special,
    /// Power law towards the lowest ids.
    Pareto,
    /// Zipf's law over ranks; rank 1 is the lowest id.
    Zipfian,
}

impl RandType {
    /// Every type, in the order the help text lists them.
    pub const ALL: [RandType; 5] = [
        RandType::Uniform,
        RandType::Gaussian,
        RandType::Special,
        RandType::Pareto,
        RandType::Zipfian,
    ];

    /// The spelling sysbench uses on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            RandType::Uniform => "uniform",
            RandType::Gaussian => "gaussian",
            RandType::Special => "special",
            RandType::Pareto => "pareto",
            RandType::Zipfian => "zipfian",
        }
    }
}

impl fmt::Display for RandType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RandType {
    type Err = RandError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RandType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| RandError::UnknownType { given: s.to_owned() })
    }
}

/// Why a `--rand-*` option or a key range was rejected.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RandError {
    /// `--rand-type` is not one of [`RandType::ALL`].
    #[error("unknown --rand-type '{given}'; valid values: {VALID_NAMES}")]
    UnknownType { given: String },
    /// An option value outside its domain.
    #[error("{option} must be {requirement}, got {value}")]
    OutOfRange {
        option: &'static str,
        requirement: &'static str,
        value: String,
    },
    /// A key range whose lower bound is above its upper bound.
    #[error("empty key range [{a}, {b}]: the lower bound is above the upper bound")]
    EmptyRange { a: u32, b: u32 },
}

/// Raw values of the options that shape the distributions, with sysbench's defaults.
///
/// Fields are plain so the CLI can fill them; [`RandParams::new`] and [`Distribution::new`]
/// validate them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandParams {
    /// `--rand-spec-iter`: uniforms averaged per gaussian draw (≥ 1).
    pub spec_iter: u32,
    /// `--rand-spec-pct`: width of `special`'s hot window, in percent of the range (0..=100).
    pub spec_pct: u32,
    /// `--rand-spec-res`: percent of `special`'s draws that go to the hot window (0..=99).
    pub spec_res: u32,
    /// `--rand-pareto-h`: the Pareto skew, in (0, 1); 0.2 gives the 80/20 rule.
    pub pareto_h: f64,
    /// `--rand-zipfian-exp`: the Zipf exponent, finite and ≥ 0; 0 is uniform.
    pub zipfian_exp: f64,
}

impl Default for RandParams {
    fn default() -> Self {
        RandParams {
            spec_iter: 12,
            spec_pct: 1,
            spec_res: 75,
            pareto_h: 0.2,
            zipfian_exp: 0.8,
        }
    }
}

impl RandParams {
    /// Validated parameters. Each error names the offending option.
    pub fn new(
        spec_iter: u32,
        spec_pct: u32,
        spec_res: u32,
        pareto_h: f64,
        zipfian_exp: f64,
    ) -> Result<Self, RandError> {
        let params = RandParams {
            spec_iter,
            spec_pct,
            spec_res,
            pareto_h,
            zipfian_exp,
        };
        params.validate()?;
        Ok(params)
    }

    /// Checks every option against its domain.
    pub fn validate(&self) -> Result<(), RandError> {
        fn out_of_range(option: &'static str, requirement: &'static str, value: impl fmt::Display) -> RandError {
            RandError::OutOfRange {
                option,
                requirement,
                value: value.to_string(),
            }
        }
        if self.spec_iter == 0 {
            return Err(out_of_range("--rand-spec-iter", "at least 1", self.spec_iter));
        }
        if self.spec_pct > 100 {
            return Err(out_of_range("--rand-spec-pct", "in 0..=100", self.spec_pct));
        }
        if self.spec_res >= 100 {
            return Err(out_of_range("--rand-spec-res", "in 0..=99", self.spec_res));
        }
        if !(self.pareto_h > 0.0 && self.pareto_h < 1.0) {
            return Err(out_of_range("--rand-pareto-h", "in (0,1)", self.pareto_h));
        }
        if !(self.zipfian_exp.is_finite() && self.zipfian_exp >= 0.0) {
            return Err(out_of_range("--rand-zipfian-exp", "finite and >= 0", self.zipfian_exp));
        }
        Ok(())
    }
}

/// Range-independent constants of one distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Shape {
    Uniform,
    Gaussian {
        iter: u32,
    },
    Special {
        iter: u32,
        /// `100 / (100 - res)`: stretches the range so that `res` % of draws land past it.
        res_mult: f64,
        /// `pct / 100`
        pct_mult: f64,
        /// `pct / 200`
        pct_half_mult: f64,
    },
    Pareto {
        /// `ln h / ln(1 - h)`
        power: f64,
    },
    Zipfian {
        exp: f64,
    },
}

/// A validated `--rand-type` with its options turned into constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Distribution {
    rand_type: RandType,
    shape: Shape,
}

impl Distribution {
    /// Validates `params` and precomputes what does not depend on the key range.
    pub fn new(rand_type: RandType, params: RandParams) -> Result<Self, RandError> {
        params.validate()?;
        let shape = match rand_type {
            RandType::Uniform => Shape::Uniform,
            RandType::Gaussian => Shape::Gaussian { iter: params.spec_iter },
            RandType::Special => Shape::Special {
                iter: params.spec_iter,
                res_mult: 100.0 / (100.0 - f64::from(params.spec_res)),
                pct_mult: f64::from(params.spec_pct) / 100.0,
                pct_half_mult: f64::from(params.spec_pct) / 200.0,
            },
            RandType::Pareto => Shape::Pareto {
                power: params.pareto_h.ln() / (1.0 - params.pareto_h).ln(),
            },
            RandType::Zipfian => Shape::Zipfian {
                exp: params.zipfian_exp,
            },
        };
        Ok(Distribution { rand_type, shape })
    }

    /// The `--rand-type` this was built from.
    pub fn rand_type(&self) -> RandType {
        self.rand_type
    }

    /// A sampler over `[a, b]` with every range-dependent constant precomputed. Build one
    /// per key range (usually `[1, table_size]`) and keep it for the whole run.
    pub fn sampler(&self, a: u32, b: u32) -> Result<KeySampler, RandError> {
        if a > b {
            return Err(RandError::EmptyRange { a, b });
        }
        Ok(self.sampler_for(a, b))
    }

    /// One draw from `[a, b]`, for ranges that change from call to call.
    ///
    /// Allocation-free, but it redoes the range setup on every call, which for `zipfian`
    /// costs an extra `powf`. Use [`Distribution::sampler`] for a fixed range.
    ///
    /// # Panics
    /// If `a > b`.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R, a: u32, b: u32) -> u32 {
        assert!(a <= b, "empty key range [{a}, {b}]");
        self.sampler_for(a, b).sample(rng)
    }

    #[inline]
    fn sampler_for(&self, a: u32, b: u32) -> KeySampler {
        debug_assert!(a <= b);
        let span = b - a;
        // `n` is the number of ids; `t` is sysbench's `b - a` for `special`.
        let n = f64::from(span) + 1.0;
        let t = f64::from(span);
        let plan = match self.shape {
            Shape::Uniform => Plan::Uniform { n: u64::from(span) + 1 },
            Shape::Gaussian { iter } => Plan::Gaussian {
                iter,
                scale: n / f64::from(iter),
            },
            Shape::Special {
                iter,
                res_mult,
                pct_mult,
                pct_half_mult,
            } => Plan::Special {
                iter,
                t,
                stretched: t * res_mult,
                gauss_scale: t / f64::from(iter),
                window: t * pct_mult + 1.0,
                window_start: t / 2.0 - t * pct_half_mult,
            },
            Shape::Pareto { power } => Plan::Pareto { n, power },
            Shape::Zipfian { exp } => Plan::Zipfian {
                // Validation guarantees exp is finite and >= 0, and n >= 1.
                zipf: Zipf::new(n, exp).expect("validated Zipf parameters"),
            },
        };
        KeySampler { a, span, plan }
    }
}

/// Range-dependent constants of a [`KeySampler`].
#[derive(Clone, Copy, Debug, PartialEq)]
enum Plan {
    Uniform {
        n: u64,
    },
    Gaussian {
        iter: u32,
        /// `n / iter`
        scale: f64,
    },
    Special {
        iter: u32,
        /// `b - a`
        t: f64,
        /// `t * 100 / (100 - res)`
        stretched: f64,
        /// `t / iter`
        gauss_scale: f64,
        /// `t * pct / 100 + 1`
        window: f64,
        /// `t / 2 - t * pct / 200`
        window_start: f64,
    },
    Pareto {
        n: f64,
        power: f64,
    },
    Zipfian {
        zipf: Zipf<f64>,
    },
}

/// Draws ids from one fixed range `[a, b]`. Cheap to copy; give each worker its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeySampler {
    a: u32,
    /// `b - a`
    span: u32,
    plan: Plan,
}

impl KeySampler {
    /// The inclusive range `(a, b)` this samples from.
    pub fn range(&self) -> (u32, u32) {
        (self.a, self.a + self.span)
    }

    /// One id in `[a, b]`.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        let offset = match self.plan {
            Plan::Uniform { n } => uniform_below(rng, n),
            Plan::Gaussian { iter, scale } => (sum_units(rng, iter) * scale) as u32,
            Plan::Special {
                iter,
                t,
                stretched,
                gauss_scale,
                window,
                window_start,
            } => {
                // One uniform decides the branch and, as in sysbench, is reused as the
                // position in the hot window. Only rnd >= 1 - res/100 reaches that branch,
                // so the hot draws cover the upper `res` % of the window, not all of it.
                let rnd = unit_f64(rng);
                if rnd * stretched < t {
                    (sum_units(rng, iter) * gauss_scale) as u32
                } else {
                    (rnd * window + window_start) as u32
                }
            }
            Plan::Pareto { n, power } => (n * unit_f64(rng).powf(power)) as u32,
            Plan::Zipfian { zipf } => (zipf.sample(rng) as u32).saturating_sub(1),
        };
        // Float rounding can reach `n` on the widest ranges; sysbench would return b + 1.
        self.a + offset.min(self.span)
    }
}

/// A uniform id in `[a, b]`: `a + floor(u * (b - a + 1))` with a 64-bit `u`.
///
/// # Panics
/// If `a > b`.
#[inline]
pub fn uniform<R: Rng + ?Sized>(rng: &mut R, a: u32, b: u32) -> u32 {
    assert!(a <= b, "empty range [{a}, {b}]");
    a + uniform_below(rng, u64::from(b - a) + 1)
}

/// `floor(u * n)` for `u = next_u64 / 2^64`: one multiply, bias below `n / 2^64`.
#[inline]
fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u32 {
    debug_assert!((1..=1 << 32).contains(&n));
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u32
}

/// A uniform double in `[0, 1)` with 53 random bits, like sysbench's `sb_rand_uniform_double`.
#[inline]
fn unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    (rng.next_u64() >> 11) as f64 * SCALE
}

/// The sum of `iter` uniforms in `[0, 1)`.
#[inline]
fn sum_units<R: Rng + ?Sized>(rng: &mut R, iter: u32) -> f64 {
    (0..iter).map(|_| unit_f64(rng)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::rand::rngs::SmallRng;
    use ::rand::SeedableRng;
    use std::convert::Infallible;

    fn rng(seed: u64) -> SmallRng {
        SmallRng::seed_from_u64(seed)
    }

    fn dist(t: RandType) -> Distribution {
        Distribution::new(t, RandParams::default()).unwrap()
    }

    /// Always returns the same word: drives the formulas to their extreme `u`.
    struct ConstRng(u64);

    impl ::rand::TryRng for ConstRng {
        type Error = Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Infallible> {
            Ok(self.0 as u32)
        }
        fn try_next_u64(&mut self) -> Result<u64, Infallible> {
            Ok(self.0)
        }
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
            dst.fill(self.0 as u8);
            Ok(())
        }
    }

    /// Fraction of `draws` samples that fall in `[lo, hi]`.
    fn fraction_in(s: &KeySampler, seed: u64, draws: u32, lo: u32, hi: u32) -> f64 {
        let mut r = rng(seed);
        let hits = (0..draws).filter(|_| (lo..=hi).contains(&s.sample(&mut r))).count();
        hits as f64 / f64::from(draws)
    }

    /// Pearson chi-square of observed counts against equal expected counts.
    fn chi_square_uniform(counts: &[u64]) -> f64 {
        let total: u64 = counts.iter().sum();
        let expected = total as f64 / counts.len() as f64;
        counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum()
    }

    #[test]
    fn rand_type_round_trips_and_rejects_unknown_names() {
        for t in RandType::ALL {
            assert_eq!(t.to_string().parse::<RandType>().unwrap(), t);
        }
        assert_eq!("Special".parse::<RandType>().unwrap(), RandType::Special);
        let names: Vec<_> = RandType::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(VALID_NAMES, names.join(", "));
        let err = "unique".parse::<RandType>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown --rand-type 'unique'; valid values: uniform, gaussian, special, pareto, zipfian"
        );
        assert_eq!(RandType::default(), RandType::Uniform);
    }

    #[test]
    fn params_errors_name_the_option() {
        let d = RandParams::default();
        assert_eq!(RandParams::new(12, 1, 75, 0.2, 0.8), Ok(d));
        let cases = [
            (
                RandParams { spec_iter: 0, ..d },
                "--rand-spec-iter must be at least 1, got 0",
            ),
            (
                RandParams { spec_pct: 101, ..d },
                "--rand-spec-pct must be in 0..=100, got 101",
            ),
            (
                RandParams { spec_res: 100, ..d },
                "--rand-spec-res must be in 0..=99, got 100",
            ),
            (
                RandParams { pareto_h: 1.0, ..d },
                "--rand-pareto-h must be in (0,1), got 1",
            ),
            (
                RandParams { pareto_h: 0.0, ..d },
                "--rand-pareto-h must be in (0,1), got 0",
            ),
            (
                RandParams {
                    pareto_h: f64::NAN,
                    ..d
                },
                "--rand-pareto-h must be in (0,1), got NaN",
            ),
            (
                RandParams { zipfian_exp: -0.1, ..d },
                "--rand-zipfian-exp must be finite and >= 0, got -0.1",
            ),
            (
                RandParams {
                    zipfian_exp: f64::INFINITY,
                    ..d
                },
                "--rand-zipfian-exp must be finite and >= 0, got inf",
            ),
        ];
        for (params, message) in cases {
            assert_eq!(params.validate().unwrap_err().to_string(), message);
            let built = Distribution::new(RandType::Uniform, params);
            assert_eq!(built.unwrap_err().to_string(), message);
        }
        let err = dist(RandType::Uniform).sampler(5, 4).unwrap_err();
        assert_eq!(
            err.to_string(),
            "empty key range [5, 4]: the lower bound is above the upper bound"
        );
    }

    #[test]
    fn every_type_stays_in_range() {
        let ranges = [
            (0, 0),
            (7, 7),
            (1, 2),
            (1, 10),
            (1, 1_000_000),
            (1, u32::MAX),
            (0, u32::MAX),
            (u32::MAX - 3, u32::MAX),
            (u32::MAX, u32::MAX),
        ];
        for t in RandType::ALL {
            let d = dist(t);
            for (i, &(a, b)) in ranges.iter().enumerate() {
                let s = d.sampler(a, b).unwrap();
                assert_eq!(s.range(), (a, b));
                let mut r = rng(i as u64);
                let (mut lo, mut hi) = (u32::MAX, 0);
                for _ in 0..20_000 {
                    let x = s.sample(&mut r);
                    assert!(a <= x && x <= b, "{t} drew {x} outside [{a}, {b}]");
                    lo = lo.min(x);
                    hi = hi.max(x);
                }
                if a == b {
                    assert_eq!((lo, hi), (a, a), "{t}");
                } else if b - a < 10 && !matches!(t, RandType::Special | RandType::Gaussian) {
                    // `special` and `gaussian` reach the ends of a short range only with
                    // probability ~1e-8 (Irwin-Hall tails; special's hot window is one id).
                    assert_eq!((lo, hi), (a, b), "{t} missed an end of [{a}, {b}]");
                }
            }
        }
    }

    #[test]
    fn extreme_uniforms_stay_in_range() {
        // u = 0 and u = 1 - 2^-53 on the widest range; zipfian is excluded because a
        // constant stream can make rejection sampling reject forever.
        for t in RandType::ALL.into_iter().filter(|&t| t != RandType::Zipfian) {
            for (a, b) in [(0, u32::MAX), (1, u32::MAX), (3, 3), (1, 1_000_000)] {
                let s = dist(t).sampler(a, b).unwrap();
                assert_eq!(s.sample(&mut ConstRng(0)), a, "{t} with u = 0");
                let x = s.sample(&mut ConstRng(u64::MAX));
                assert!(a <= x && x <= b, "{t} drew {x} outside [{a}, {b}]");
            }
        }
    }

    #[test]
    fn sample_and_sampler_agree() {
        for t in RandType::ALL {
            let d = dist(t);
            let s = d.sampler(10, 5_000).unwrap();
            let (mut r1, mut r2) = (rng(3), rng(3));
            for _ in 0..1_000 {
                assert_eq!(d.sample(&mut r1, 10, 5_000), s.sample(&mut r2));
            }
        }
    }

    #[test]
    fn uniform_passes_chi_square() {
        // 100 buckets over [1, 1e6], 200k draws: chi-square with 99 degrees of freedom has
        // mean 99 and sd 14; 160 is exceeded by chance with p ~ 1e-4.
        let mut r = rng(11);
        let mut counts = [0u64; 100];
        for _ in 0..200_000 {
            counts[((uniform(&mut r, 1, 1_000_000) - 1) / 10_000) as usize] += 1;
        }
        let chi2 = chi_square_uniform(&counts);
        assert!(chi2 < 160.0, "chi-square {chi2}");

        let s = dist(RandType::Uniform).sampler(1, 10).unwrap();
        let mut counts = [0u64; 10];
        for _ in 0..100_000 {
            counts[(s.sample(&mut r) - 1) as usize] += 1;
        }
        // 9 degrees of freedom: 30 is exceeded with p ~ 4e-4.
        let chi2 = chi_square_uniform(&counts);
        assert!(chi2 < 30.0, "chi-square {chi2}");
    }

    #[test]
    fn special_puts_three_quarters_in_the_middle_percent() {
        let s = dist(RandType::Special).sampler(1, 1_000_000).unwrap();
        // Middle 1% of [1, 1e6]: 10,000 ids centred on 500,000.
        let middle = fraction_in(&s, 5, 200_000, 495_001, 505_000);
        // 75% hot draws plus the gaussian quarter's share of the window: 0.25 * P(|Z| <
        // 5000 / (999999 / 12)) = 0.25 * 0.0478 ≈ 0.012. Binomial sd is 0.001.
        assert!((middle - 0.762).abs() < 0.005, "middle 1%: {middle}");
        assert!((middle - 0.75).abs() < 0.015, "middle 1%: {middle}");
        // The reused uniform puts the hot draws in the upper three quarters of the window;
        // the lower quarter only sees gaussian draws (0.25 * 0.012 ≈ 0.003).
        let lower_quarter = fraction_in(&s, 5, 200_000, 495_001, 497_500);
        assert!(lower_quarter < 0.006, "lower quarter of window: {lower_quarter}");
    }

    #[test]
    fn special_options_move_the_hot_spot() {
        let p = RandParams {
            spec_res: 0,
            ..RandParams::default()
        };
        let s = Distribution::new(RandType::Special, p)
            .unwrap()
            .sampler(1, 1_000_000)
            .unwrap();
        let middle = fraction_in(&s, 6, 100_000, 495_001, 505_000);
        assert!((middle - 0.048).abs() < 0.005, "res=0 is pure gaussian: {middle}");
    }

    #[test]
    fn pareto_puts_eighty_percent_in_the_lowest_fifth() {
        let s = dist(RandType::Pareto).sampler(1, 1_000_000).unwrap();
        // P(u^power < 0.2) = 0.2^(1/power) = 0.8 exactly for h = 0.2. Binomial sd 0.0009.
        let low = fraction_in(&s, 7, 200_000, 1, 200_000);
        assert!((low - 0.8).abs() < 0.005, "lowest 20%: {low}");
    }

    #[test]
    fn gaussian_is_irwin_hall() {
        let (a, b) = (1u32, 1_000_000u32);
        let n = f64::from(b - a + 1);
        let s = dist(RandType::Gaussian).sampler(a, b).unwrap();
        let mut r = rng(8);
        let draws = 200_000;
        let xs: Vec<f64> = (0..draws).map(|_| f64::from(s.sample(&mut r))).collect();
        let mean = xs.iter().sum::<f64>() / draws as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (draws - 1) as f64;
        let sd = var.sqrt();
        // Mean of 12 uniforms times n, floored: n/2 - 1/2 above a. Its standard error is
        // sd/sqrt(draws) = 186, so 1000 is a 5-sigma band.
        let expected_mean = f64::from(a) + n / 2.0 - 0.5;
        assert!((mean - expected_mean).abs() < 1_000.0, "mean {mean}");
        // Irwin-Hall: sd = n / sqrt(12 * iter). The estimate's relative error is ~0.16%.
        let expected_sd = n / (12.0f64 * 12.0).sqrt();
        assert!((sd / expected_sd - 1.0).abs() < 0.01, "sd {sd}");
        // And it is not uniform: about 68% within one sd of the middle, not 2 * 1/12 * 100%.
        let within = xs.iter().filter(|&&x| (x - expected_mean).abs() < expected_sd).count() as f64 / draws as f64;
        assert!((within - 0.683).abs() < 0.01, "within 1 sd: {within}");
    }

    #[test]
    fn zipfian_rank_one_wins_by_two_to_the_exponent() {
        let s = dist(RandType::Zipfian).sampler(1, 1_000).unwrap();
        let mut r = rng(9);
        let draws = 500_000;
        let mut counts = vec![0u64; 1_000];
        for _ in 0..draws {
            counts[(s.sample(&mut r) - 1) as usize] += 1;
        }
        let most = (0..counts.len()).max_by_key(|&i| counts[i]).unwrap();
        assert_eq!(most, 0, "the lowest id must be the most frequent");
        // P(1) / P(2) = 2^0.8 = 1.741; with ~32k and ~18k hits the ratio's sd is ~0.016.
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((ratio - 2f64.powf(0.8)).abs() < 0.07, "rank 1/rank 2: {ratio}");
        // P(1) = 1 / H(1000, 0.8).
        let harmonic: f64 = (1..=1_000).map(|k| f64::from(k).powf(-0.8)).sum();
        let p1 = counts[0] as f64 / f64::from(draws);
        assert!((p1 * harmonic - 1.0).abs() < 0.03, "P(1) = {p1}");
    }

    #[test]
    fn zipfian_exponent_zero_is_uniform() {
        let p = RandParams {
            zipfian_exp: 0.0,
            ..RandParams::default()
        };
        let s = Distribution::new(RandType::Zipfian, p).unwrap().sampler(1, 10).unwrap();
        let mut r = rng(10);
        let mut counts = [0u64; 10];
        for _ in 0..100_000 {
            counts[(s.sample(&mut r) - 1) as usize] += 1;
        }
        let chi2 = chi_square_uniform(&counts);
        assert!(chi2 < 30.0, "chi-square {chi2}");
    }

    #[test]
    fn zipfian_exponent_one_works() {
        let p = RandParams {
            zipfian_exp: 1.0,
            ..RandParams::default()
        };
        let s = Distribution::new(RandType::Zipfian, p)
            .unwrap()
            .sampler(1, 100)
            .unwrap();
        let mut r = rng(12);
        let mut counts = [0u64; 100];
        for _ in 0..200_000 {
            counts[(s.sample(&mut r) - 1) as usize] += 1;
        }
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((ratio - 2.0).abs() < 0.08, "rank 1/rank 2: {ratio}");
    }

    /// CPU time of this thread, so the benchmark is not skewed by other load on the host.
    fn thread_cpu() -> std::time::Duration {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// `cargo test --release -p dbperf -- --ignored --nocapture bench_rand`
    #[test]
    #[ignore = "micro-benchmark; run in release"]
    fn bench_rand() {
        use std::hint::black_box;
        const N: u32 = 20_000_000;
        let mut r = rng(1);
        let table_size = black_box(1_000_000);
        let start = thread_cpu();
        let mut acc = 0u64;
        for _ in 0..N {
            acc = acc.wrapping_add(r.next_u64());
        }
        let raw_ns = (thread_cpu() - start).as_nanos() as f64 / f64::from(N);
        black_box(acc);
        println!("baseline SmallRng::next_u64 {raw_ns:6.2} ns");
        for t in RandType::ALL {
            let d = dist(t);
            let s = d.sampler(1, table_size).unwrap();
            let start = thread_cpu();
            let mut acc = 0u32;
            for _ in 0..N {
                acc = acc.wrapping_add(s.sample(&mut r));
            }
            let sampler_ns = (thread_cpu() - start).as_nanos() as f64 / f64::from(N);
            let start = thread_cpu();
            for _ in 0..N {
                acc = acc.wrapping_add(d.sample(&mut r, 1, table_size));
            }
            let sample_ns = (thread_cpu() - start).as_nanos() as f64 / f64::from(N);
            black_box(acc);
            println!("{t:<8} KeySampler::sample {sampler_ns:6.2} ns   Distribution::sample {sample_ns:6.2} ns");
        }
    }
}
