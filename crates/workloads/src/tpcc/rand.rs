//! TPC-C's random functions (clause 2.1.6, 4.3.2): uniform draws, NURand with its C
//! constants chosen once per run under the C-Load/C-Run rule, customer last names from
//! syllables, a- and n-strings, and the per-terminal card deck of transaction types.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A uniform integer in `[a, b]`.
#[inline]
pub fn uniform<R: Rng + ?Sized>(rng: &mut R, a: i64, b: i64) -> i64 {
    debug_assert!(a <= b);
    let n = (b - a + 1) as u64;
    a + ((rng.next_u64() as u128 * n as u128) >> 64) as i64
}

/// A uniform float in `[0, 1)`.
#[inline]
pub fn unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The C constants of NURand for one run (clause 2.1.6): for C_LAST (A=255), C_ID
/// (A=1023) and OL_I_ID (A=8191).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NuConstants {
    /// C for customer last names (A = 255).
    pub c_last: i64,
    /// C for customer ids (A = 1023).
    pub c_id: i64,
    /// C for item ids (A = 8191).
    pub ol_i_id: i64,
}

impl NuConstants {
    /// Constants for loading, drawn from `seed`.
    pub fn for_load(seed: u64) -> NuConstants {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x10ad_c0de);
        NuConstants {
            c_last: uniform(&mut rng, 0, 255),
            c_id: uniform(&mut rng, 0, 1023),
            ol_i_id: uniform(&mut rng, 0, 8191),
        }
    }

    /// Constants for a run against data loaded with `c_last_load` (clause 2.1.6.1): C_LAST's
    /// run value differs from the load value by a delta in [65, 119], never 96 or 112.
    pub fn for_run(seed: u64, c_last_load: i64) -> NuConstants {
        let mut rng = SmallRng::seed_from_u64(seed ^ 0x0c0f_fee5);
        let c_last = loop {
            let c = uniform(&mut rng, 0, 255);
            if valid_run_delta(c, c_last_load) {
                break c;
            }
        };
        NuConstants {
            c_last,
            c_id: uniform(&mut rng, 0, 1023),
            ol_i_id: uniform(&mut rng, 0, 8191),
        }
    }
}

/// Clause 2.1.6.1: `|C_run - C_load|` in [65, 119] and not 96 or 112.
pub fn valid_run_delta(c_run: i64, c_load: i64) -> bool {
    let delta = (c_run - c_load).abs();
    (65..=119).contains(&delta) && delta != 96 && delta != 112
}

/// `NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x`.
#[inline]
pub fn nurand<R: Rng + ?Sized>(rng: &mut R, a: i64, x: i64, y: i64, c: i64) -> i64 {
    (((uniform(rng, 0, a) | uniform(rng, x, y)) + c) % (y - x + 1)) + x
}

const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// The last name for `n` in [0, 999] (clause 4.3.2.3), written into `out` (cleared first).
pub fn last_name(n: i64, out: &mut Vec<u8>) {
    out.clear();
    for digit in [n / 100, (n / 10) % 10, n % 10] {
        out.extend_from_slice(SYLLABLES[digit as usize].as_bytes());
    }
}

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Appends a random a-string of `min..=max` characters.
pub fn a_string<R: Rng + ?Sized>(rng: &mut R, min: i64, max: i64, out: &mut Vec<u8>) {
    let n = uniform(rng, min, max);
    for _ in 0..n {
        out.push(ALNUM[uniform(rng, 0, ALNUM.len() as i64 - 1) as usize]);
    }
}

/// Appends a random n-string (digits) of `n` characters.
pub fn n_string<R: Rng + ?Sized>(rng: &mut R, n: usize, out: &mut Vec<u8>) {
    for _ in 0..n {
        out.push(b'0' + uniform(rng, 0, 9) as u8);
    }
}

/// Appends an a-string of `min..=max` characters that contains "ORIGINAL" at a random
/// position in 10% of calls (clause 4.3.3.1 for I_DATA and S_DATA).
pub fn data_string<R: Rng + ?Sized>(rng: &mut R, min: i64, max: i64, out: &mut Vec<u8>) {
    let start = out.len();
    a_string(rng, min, max, out);
    if uniform(rng, 1, 10) == 1 {
        let len = out.len() - start;
        let at = start + uniform(rng, 0, len as i64 - 8) as usize;
        out[at..at + 8].copy_from_slice(b"ORIGINAL");
    }
}

/// The five transaction types, in [`crate::tpcc::TXN_NAMES`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum TxnType {
    /// Clause 2.4.
    NewOrder = 0,
    /// Clause 2.5.
    Payment = 1,
    /// Clause 2.6.
    OrderStatus = 2,
    /// Clause 2.7.
    Delivery = 3,
    /// Clause 2.8.
    StockLevel = 4,
}

impl TxnType {
    /// All types, by index.
    pub const ALL: [TxnType; 5] = [
        TxnType::NewOrder,
        TxnType::Payment,
        TxnType::OrderStatus,
        TxnType::Delivery,
        TxnType::StockLevel,
    ];

    /// Mean keying time in seconds (clause 5.2.5.7).
    pub fn keying_s(self) -> f64 {
        match self {
            TxnType::NewOrder => 18.0,
            TxnType::Payment => 3.0,
            _ => 2.0,
        }
    }

    /// Mean think time in seconds (clause 5.2.5.7).
    pub fn think_s(self) -> f64 {
        match self {
            TxnType::NewOrder | TxnType::Payment => 12.0,
            TxnType::OrderStatus => 10.0,
            _ => 5.0,
        }
    }

    /// The 90th-percentile response-time limit in seconds (clause 5.2.5.3).
    pub fn limit_s(self) -> f64 {
        match self {
            TxnType::Delivery => 80.0,
            TxnType::StockLevel => 20.0,
            _ => 5.0,
        }
    }

    /// The minimum share of the mix (clause 5.2.3); New-Order has none of its own.
    pub fn min_share(self) -> f64 {
        match self {
            TxnType::NewOrder => 0.0,
            TxnType::Payment => 0.43,
            _ => 0.04,
        }
    }
}

/// Cards per deck: 45 New-Order, 43 Payment, 4 of each other type.
pub const DECK: [(TxnType, usize); 5] = [
    (TxnType::NewOrder, 45),
    (TxnType::Payment, 43),
    (TxnType::OrderStatus, 4),
    (TxnType::Delivery, 4),
    (TxnType::StockLevel, 4),
];

/// A terminal's card deck (clause 5.2.4.2): the 100 cards are dealt in a random order, and
/// the deck is reshuffled when empty, so every 100 transactions hold the exact mix.
#[derive(Clone, Debug)]
pub struct Deck {
    cards: [TxnType; 100],
    next: usize,
}

impl Default for Deck {
    fn default() -> Deck {
        let mut cards = [TxnType::NewOrder; 100];
        let mut i = 0;
        for (t, n) in DECK {
            for _ in 0..n {
                cards[i] = t;
                i += 1;
            }
        }
        Deck { cards, next: 100 }
    }
}

impl Deck {
    /// The next card.
    pub fn deal<R: Rng + ?Sized>(&mut self, rng: &mut R) -> TxnType {
        if self.next == self.cards.len() {
            // Fisher-Yates.
            for i in (1..self.cards.len()).rev() {
                let j = uniform(rng, 0, i as i64) as usize;
                self.cards.swap(i, j);
            }
            self.next = 0;
        }
        self.next += 1;
        self.cards[self.next - 1]
    }
}

/// A negative-exponential think time with mean `mean_s`, truncated at 10 times the mean
/// (clause 5.2.5.4), in seconds.
pub fn think_time<R: Rng + ?Sized>(rng: &mut R, mean_s: f64) -> f64 {
    let u = unit(rng).max(f64::MIN_POSITIVE);
    (-u.ln() * mean_s).min(10.0 * mean_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_follow_the_syllable_table() {
        let mut s = Vec::new();
        last_name(371, &mut s);
        assert_eq!(s, b"PRICALLYOUGHT");
        last_name(0, &mut s);
        assert_eq!(s, b"BARBARBAR");
        last_name(999, &mut s);
        assert_eq!(s, b"EINGEINGEING");
    }

    #[test]
    fn run_constants_obey_the_delta_rule() {
        for seed in 0..500 {
            let load = NuConstants::for_load(seed);
            let run = NuConstants::for_run(seed * 7 + 1, load.c_last);
            assert!(valid_run_delta(run.c_last, load.c_last), "{load:?} {run:?}");
            assert!((0..=1023).contains(&run.c_id) && (0..=8191).contains(&run.ol_i_id));
        }
        assert!(!valid_run_delta(196, 100) && !valid_run_delta(212, 100));
        assert!(valid_run_delta(165, 100) && !valid_run_delta(164 + 56, 100));
    }

    #[test]
    fn nurand_stays_in_range_and_is_skewed() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = vec![0u32; 3001];
        for _ in 0..300_000 {
            let v = nurand(&mut rng, 1023, 1, 3000, 259);
            assert!((1..=3000).contains(&v));
            counts[v as usize] += 1;
        }
        // Uniform would give each id ~100; NURand's hottest ids get several times that.
        let max = *counts.iter().max().unwrap();
        assert!(max > 300, "max {max}");
        // And the same C gives the same hot ids: C is fixed for the run, not redrawn.
        let hot = counts.iter().enumerate().max_by_key(|(_, c)| **c).unwrap().0;
        let mut again = vec![0u32; 3001];
        for _ in 0..300_000 {
            again[nurand(&mut rng, 1023, 1, 3000, 259) as usize] += 1;
        }
        assert!(again[hot] > 250, "{}", again[hot]);
    }

    #[test]
    fn the_deck_deals_the_exact_mix_per_hundred_cards() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut deck = Deck::default();
        for _ in 0..3 {
            let mut n = [0usize; 5];
            for _ in 0..100 {
                n[deck.deal(&mut rng) as usize] += 1;
            }
            assert_eq!(n, [45, 43, 4, 4, 4]);
        }
        for (t, cards) in DECK {
            assert!(cards as f64 / 100.0 >= t.min_share());
        }
    }

    #[test]
    fn think_times_are_truncated_at_ten_means() {
        let mut rng = SmallRng::seed_from_u64(5);
        let n = 200_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let t = think_time(&mut rng, 12.0);
            assert!((0.0..=120.0).contains(&t));
            sum += t;
        }
        let mean = sum / n as f64;
        assert!((mean - 12.0).abs() < 0.3, "{mean}");
    }

    #[test]
    fn data_strings_sometimes_hold_original() {
        let mut rng = SmallRng::seed_from_u64(9);
        let mut hits = 0;
        for _ in 0..10_000 {
            let mut s = Vec::new();
            data_string(&mut rng, 26, 50, &mut s);
            assert!((26..=50).contains(&s.len()));
            hits += s.windows(8).any(|w| w == b"ORIGINAL") as u32;
        }
        assert!((800..1200).contains(&hits), "{hits}");
    }
}
