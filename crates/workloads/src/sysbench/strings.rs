//! sysbench's random strings: the `c` and `pad` column templates and the filler that
//! expands them (`sysbench.rand.string`).
//!
//! In a template `#` becomes a uniform digit `0`–`9`, `@` a uniform letter `a`–`z`, and every
//! other byte is copied. [`fill_template`] writes into a caller-owned buffer and allocates
//! nothing. Digits come 16 per accepted 64-bit draw (one draw per 11-digit sbtest group),
//! not one draw per character.

use ::rand::Rng;

/// Template of `sbtestN.c` (`CHAR(120)`): 10 groups of 11 digits joined by `-`, 119 bytes.
pub const C_TEMPLATE: &str = "###########-###########-###########-###########-###########-\
###########-###########-###########-###########-###########";

/// Template of `sbtestN.pad` (`CHAR(60)`): 5 groups of 11 digits joined by `-`, 59 bytes.
pub const PAD_TEMPLATE: &str = "###########-###########-###########-###########-###########";

/// Writes a random expansion of `template` into `out`.
///
/// # Panics
/// If `out.len() != template.len()`.
pub fn fill_template<R: Rng + ?Sized>(rng: &mut R, template: &[u8], out: &mut [u8]) {
    assert_eq!(
        template.len(),
        out.len(),
        "output buffer must be exactly as long as the template"
    );
    let mut digits = DigitPool::EMPTY;
    let mut i = 0;
    while i < template.len() {
        // Fast path: eight `#` in a row take one 8-byte copy from the pool.
        if template[i..].starts_with(b"########") {
            out[i..i + 8].copy_from_slice(&digits.next_8(rng));
            i += 8;
            continue;
        }
        out[i] = match template[i] {
            b'#' => digits.next(rng),
            b'@' => b'a' + below(rng, 26),
            literal => literal,
        };
        i += 1;
    }
}

/// `floor(u * n)` for a 64-bit uniform `u`; the bias is below `n / 2^64`.
#[inline]
fn below<R: Rng + ?Sized>(rng: &mut R, n: u8) -> u8 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u8
}

/// `"00" "01" … "99"`: two ASCII digits per value.
const PAIRS: [u8; 200] = {
    let mut table = [0u8; 200];
    let mut v = 0;
    while v < 100 {
        table[2 * v] = b'0' + (v / 10) as u8;
        table[2 * v + 1] = b'0' + (v % 10) as u8;
        v += 1;
    }
    table
};

/// Uniform ASCII digits, drawn 16 at a time.
///
/// A 64-bit draw below `1844 * 10^16` is accepted and reduced mod `10^16`, which makes all
/// 16 digits exactly uniform and independent; 0.04% of draws are rejected.
struct DigitPool {
    digits: [u8; 16],
    /// How many of `digits` have been handed out.
    used: usize,
}

impl DigitPool {
    const EMPTY: DigitPool = DigitPool {
        digits: [0; 16],
        used: 16,
    };
    const MODULUS: u64 = 10u64.pow(16);
    const ACCEPT_BELOW: u64 = (u64::MAX / Self::MODULUS) * Self::MODULUS;

    #[inline]
    fn refill<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        let value = loop {
            let x = rng.next_u64();
            if x < Self::ACCEPT_BELOW {
                break x % Self::MODULUS;
            }
        };
        let (high, low) = self.digits.split_at_mut(8);
        write_8_digits((value / 100_000_000) as u32, high);
        write_8_digits((value % 100_000_000) as u32, low);
        self.used = 0;
    }

    /// The next eight ASCII digits.
    #[inline]
    fn next_8<R: Rng + ?Sized>(&mut self, rng: &mut R) -> [u8; 8] {
        if self.used > self.digits.len() - 8 {
            // Dropping leftover digits keeps the rest independent and uniform.
            self.refill(rng);
        }
        let mut eight = [0u8; 8];
        eight.copy_from_slice(&self.digits[self.used..self.used + 8]);
        self.used += 8;
        eight
    }

    /// The next ASCII digit.
    #[inline]
    fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> u8 {
        if self.used == self.digits.len() {
            self.refill(rng);
        }
        let digit = self.digits[self.used];
        self.used += 1;
        digit
    }
}

/// Writes `value` (below 10^8) as exactly 8 ASCII digits.
#[inline]
fn write_8_digits(value: u32, out: &mut [u8]) {
    let (high, low) = (value / 10_000, value % 10_000);
    for (i, pair) in [high / 100, high % 100, low / 100, low % 100].into_iter().enumerate() {
        let pair = pair as usize;
        out[2 * i..2 * i + 2].copy_from_slice(&PAIRS[2 * pair..2 * pair + 2]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::rand::rngs::SmallRng;
    use ::rand::SeedableRng;

    fn rng(seed: u64) -> SmallRng {
        SmallRng::seed_from_u64(seed)
    }

    /// Pearson chi-square of observed counts against equal expected counts.
    fn chi_square_uniform(counts: &[u64]) -> f64 {
        let total: u64 = counts.iter().sum();
        let expected = total as f64 / counts.len() as f64;
        counts.iter().map(|&c| (c as f64 - expected).powi(2) / expected).sum()
    }

    #[test]
    fn templates_have_sysbench_shape() {
        for (template, groups) in [(C_TEMPLATE, 10), (PAD_TEMPLATE, 5)] {
            assert_eq!(template.len(), groups * 12 - 1);
            let parts: Vec<_> = template.split('-').collect();
            assert_eq!(parts.len(), groups);
            assert!(parts.iter().all(|p| *p == "###########"));
        }
        assert_eq!(C_TEMPLATE.len(), 119);
        assert_eq!(PAD_TEMPLATE.len(), 59);
    }

    #[test]
    fn eight_digit_groups_are_zero_padded() {
        let mut out = [0u8; 8];
        for (value, text) in [
            (0, b"00000000"),
            (7, b"00000007"),
            (12_345_678, b"12345678"),
            (99_999_999, b"99999999"),
        ] {
            write_8_digits(value, &mut out);
            assert_eq!(&out, text);
        }
    }

    #[test]
    fn fill_keeps_literals_and_charsets() {
        let template = b"#@x-##@@###z-@#";
        let mut out = [0u8; 15];
        let mut r = rng(1);
        for _ in 0..1_000 {
            fill_template(&mut r, template, &mut out);
            for (&t, &o) in template.iter().zip(&out) {
                match t {
                    b'#' => assert!(o.is_ascii_digit(), "{o}"),
                    b'@' => assert!(o.is_ascii_lowercase(), "{o}"),
                    literal => assert_eq!(o, literal),
                }
            }
        }
        let mut empty = [];
        fill_template(&mut r, b"", &mut empty);
    }

    #[test]
    fn c_strings_look_like_sysbench() {
        let mut out = [0u8; 119];
        let mut r = rng(2);
        fill_template(&mut r, C_TEMPLATE.as_bytes(), &mut out);
        let s = std::str::from_utf8(&out).unwrap();
        let groups: Vec<_> = s.split('-').collect();
        assert_eq!(groups.len(), 10);
        assert!(groups
            .iter()
            .all(|g| g.len() == 11 && g.bytes().all(|b| b.is_ascii_digit())));
        let mut again = [0u8; 119];
        fill_template(&mut r, C_TEMPLATE.as_bytes(), &mut again);
        assert_ne!(out, again);
    }

    #[test]
    #[should_panic(expected = "exactly as long as the template")]
    fn length_mismatch_panics() {
        fill_template(&mut rng(3), b"###", &mut [0u8; 2]);
    }

    #[test]
    fn digits_are_uniform_per_position_and_in_pairs() {
        let template = C_TEMPLATE.as_bytes();
        let positions: Vec<usize> = (0..template.len()).filter(|&i| template[i] == b'#').collect();
        let mut per_position = vec![[0u64; 10]; positions.len()];
        let mut pairs = [0u64; 100];
        let mut out = [0u8; 119];
        let mut r = rng(4);
        for _ in 0..20_000 {
            fill_template(&mut r, template, &mut out);
            for (slot, &i) in per_position.iter_mut().zip(&positions) {
                slot[(out[i] - b'0') as usize] += 1;
            }
            // Adjacent digits, including those that straddle a refill.
            for w in out.windows(2).filter(|w| w[0] != b'-' && w[1] != b'-') {
                pairs[((w[0] - b'0') * 10 + (w[1] - b'0')) as usize] += 1;
            }
        }
        // 110 positions x 9 degrees of freedom = 990; sd 44.5, so 1210 is ~5 sigma.
        let chi2: f64 = per_position.iter().map(|c| chi_square_uniform(c)).sum();
        assert!(chi2 < 1_210.0, "per-position chi-square {chi2}");
        // 99 degrees of freedom: 160 is exceeded with p ~ 1e-4.
        let chi2 = chi_square_uniform(&pairs);
        assert!(chi2 < 160.0, "pair chi-square {chi2}");
        let total: Vec<u64> = (0..10).map(|d| per_position.iter().map(|c| c[d]).sum()).collect();
        let chi2 = chi_square_uniform(&total);
        assert!(chi2 < 30.0, "digit chi-square {chi2}");
    }

    #[test]
    fn letters_are_uniform() {
        let template = [b'@'; 64];
        let mut out = [0u8; 64];
        let mut counts = [0u64; 26];
        let mut r = rng(5);
        for _ in 0..5_000 {
            fill_template(&mut r, &template, &mut out);
            for &c in &out {
                counts[(c - b'a') as usize] += 1;
            }
        }
        // 25 degrees of freedom: 60 is exceeded with p ~ 1e-4.
        let chi2 = chi_square_uniform(&counts);
        assert!(chi2 < 60.0, "letter chi-square {chi2}");
    }

    /// CPU time of this thread, so the benchmark is not skewed by other load on the host.
    fn thread_cpu() -> std::time::Duration {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// `cargo test --release -p dbperf -- --ignored --nocapture bench_strings`
    #[test]
    #[ignore = "micro-benchmark; run in release"]
    fn bench_strings() {
        use std::hint::black_box;
        const N: u32 = 2_000_000;
        let mut r = rng(1);
        let mut out = [0u8; 119];
        for (name, template) in [("c", C_TEMPLATE), ("pad", PAD_TEMPLATE)] {
            let template = black_box(template.as_bytes());
            let out = &mut out[..template.len()];
            let start = thread_cpu();
            for _ in 0..N {
                fill_template(&mut r, template, out);
                black_box(&mut *out);
            }
            let ns = (thread_cpu() - start).as_nanos() as f64 / f64::from(N);
            // Peer: one 64-bit draw per character, as sysbench does.
            let start = thread_cpu();
            for _ in 0..N {
                for (o, &t) in out.iter_mut().zip(template) {
                    *o = if t == b'#' { b'0' + below(&mut r, 10) } else { t };
                }
                black_box(&mut *out);
            }
            let naive_ns = (thread_cpu() - start).as_nanos() as f64 / f64::from(N);
            println!("{name:<4} fill_template {ns:6.1} ns/string, one draw per digit {naive_ns:6.1} ns");
        }
    }
}
