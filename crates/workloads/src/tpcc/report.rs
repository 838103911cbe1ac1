//! TPC-C's own numbers: the live interval line (NOTPM, TPM, p90 per type, rollbacks,
//! retries, errors), and at the end ([`TpccReport`]) `tpcc.json` ([`TpccResult`]) and the
//! final text with the mix judged against the spec's minimum shares and each type's 90th
//! percentile against its limit in seconds.

use std::collections::BTreeMap;
use std::fmt::Write;

use dbperf_engine::{ErrorClass, IntervalReport, RunOutcome};

use crate::tpcc::rand::TxnType;
use crate::tpcc::txn_types;
pub use dbperf_results::tpcc::{Mix, TpccResult, TypeResult};

/// How many of a type's transactions partial decks alone can leave missing: a terminal's
/// measured transactions are whole decks plus at most two partial ones (cut by the start and
/// the end of the measurement), and a partial deck of a type with a share p of the 100 cards
/// holds at most 100 p (1 - p) cards fewer than p times its length (when it is the other
/// types' 100 (1 - p) cards).
fn partial_deck_slack(min_share: f64, terminals: usize) -> f64 {
    2.0 * terminals as f64 * 100.0 * min_share * (1.0 - min_share)
}

/// The mix of `count`s (per type, with its minimum share, which for every type but New-Order
/// is also its share of the deck's cards) dealt by `terminals` decks.
fn judge_mix(types: &BTreeMap<String, TypeResult>, terminals: usize) -> Mix {
    let total: u64 = types.values().map(|t| t.count).sum();
    if total < 100 * terminals as u64 {
        return Mix::TooShort;
    }
    let explained =
        |t: &TypeResult| t.count as f64 + partial_deck_slack(t.min_share, terminals) >= t.min_share * total as f64;
    if types.values().all(explained) {
        Mix::Holds
    } else {
        Mix::Below
    }
}

/// The shortest measurement interval TPC-C (revision 5.0 on) accepts for a tpmC: 2 hours.
const MIN_MEASUREMENT_S: f64 = 7200.0;

/// Short labels for the live line.
const SHORT: [&str; 5] = ["NO", "P", "OS", "D", "SL"];

/// One interval's line: `[ 10s ] NOTPM 1234 TPM 2750 | p90 ms NO 4.1 P 2.0 ... | rb 3 retry 0 err 0`.
pub fn interval_line(r: &IntervalReport<'_>) -> String {
    let s = r.stats;
    let per_min = 60.0 / r.len_s();
    let no = s.per_txn.first().map_or(0, |t| t.response.len());
    let mut line = format!(
        "[ {:.0}s ] NOTPM {:.0} TPM {:.0} | p90 ms",
        r.end_s,
        no as f64 * per_min,
        s.transactions as f64 * per_min
    );
    for (t, label) in s.per_txn.iter().zip(SHORT) {
        if t.response.is_empty() {
            let _ = write!(line, " {label} -");
        } else {
            let _ = write!(
                line,
                " {label} {:.1}",
                t.response.value_at_quantile(0.9) as f64 / 1000.0
            );
        }
    }
    let _ = write!(
        line,
        " | rb {} retry {} err {}",
        s.expected_rollbacks,
        s.retries,
        s.total_errors()
    );
    if r.warmup {
        line.push_str(" (warmup)");
    }
    line
}

/// Why a run without spec mode's keying and think times has no tpmC (one of `why_no_tpmc`).
const NO_SPEC_WAITS: &str = "no keying/think times at the spec's values";

/// What [`result_from_parts`] is made from: a run's (or a merged run's) totals.
pub struct TpccTotals<'a> {
    /// Each type's response-time histogram (microseconds), in [`txn_types`] order.
    pub per_type: [Option<&'a hdrhistogram::Histogram<u64>>; 5],
    /// Measured seconds.
    pub measured_s: f64,
    /// Completed transactions of every type.
    pub transactions: u64,
    /// New-Orders rolled back on the unused item.
    pub rollbacks: u64,
    /// Attempts retried.
    pub retries: u64,
    /// Failed attempts by class name.
    pub errors: BTreeMap<String, u64>,
}

// `tpcc.json`'s type is `dbperf_results::tpcc::TpccResult`; these build it.

/// The run's totals in TPC-C's terms.
///
/// `spec_waits`: the run had spec mode's keying and think times at full scale; without
/// them, or with the mix or a p90 out of bounds, its NOTPM is not a tpmC.
pub fn result_from_outcome(out: &RunOutcome, warehouses: u32, terminals: usize, spec_waits: bool) -> TpccResult {
    let t = &out.total;
    let mut per_type = [None; 5];
    for (slot, s) in per_type.iter_mut().zip(&t.per_txn) {
        *slot = Some(&s.response);
    }
    let totals = TpccTotals {
        per_type,
        measured_s: out.measured_s,
        transactions: t.transactions,
        rollbacks: t.expected_rollbacks,
        retries: t.retries,
        errors: ErrorClass::ALL
            .iter()
            .filter(|c| t.errors[c.index()] > 0)
            .map(|c| (c.name().to_string(), t.errors[c.index()]))
            .collect(),
    };
    result_from_parts(&totals, warehouses, terminals, spec_waits)
}

/// The totals of `terminals` terminals on `warehouses` warehouses in TPC-C's terms (see
/// [`result_from_outcome`]).
pub fn result_from_parts(t: &TpccTotals<'_>, warehouses: u32, terminals: usize, spec_waits: bool) -> TpccResult {
    let minutes = (t.measured_s / 60.0).max(1e-9);
    let total = t.transactions.max(1) as f64;
    let ms =
        |h: Option<&hdrhistogram::Histogram<u64>>, q: f64| h.map_or(0.0, |h| h.value_at_quantile(q) as f64 / 1000.0);
    let mut types = BTreeMap::new();
    for ((ty, name), h) in txn_types().zip(t.per_type) {
        let count = h.map_or(0, |h| h.len());
        let p90 = ms(h, 0.9);
        types.insert(
            name.to_string(),
            TypeResult {
                count,
                share: count as f64 / total,
                min_share: ty.min_share(),
                p50_ms: ms(h, 0.5),
                p90_ms: p90,
                p95_ms: ms(h, 0.95),
                p99_ms: ms(h, 0.99),
                max_ms: h.map_or(0.0, |h| h.max() as f64 / 1000.0),
                limit_s: ty.limit_s(),
                within_limit: p90 / 1000.0 <= ty.limit_s(),
            },
        );
    }
    let no = t.per_type[0].map_or(0, |h| h.len());
    let notpm = no as f64 / minutes;
    let mix = judge_mix(&types, terminals);
    let response_times_ok = types.values().all(|r| r.within_limit);
    let why_no_tpmc: Vec<String> = [
        (!spec_waits, NO_SPEC_WAITS),
        (mix == Mix::Below, "the mix is below a minimum share"),
        (mix == Mix::TooShort, "too few transactions to judge the mix"),
        (!response_times_ok, "a p90 exceeds its limit"),
    ]
    .into_iter()
    .filter(|(applies, _)| *applies)
    .map(|(_, why)| why.to_string())
    .collect();
    TpccResult {
        warehouses,
        measured_s: t.measured_s,
        notpm,
        tpmc: why_no_tpmc.is_empty().then_some(notpm),
        why_no_tpmc,
        tpm_total: t.transactions as f64 / minutes,
        mix,
        response_times_ok,
        types,
        rollbacks: t.rollbacks,
        retries: t.retries,
        errors: t.errors.clone(),
        delivery: "inline (one transaction for the 10 districts, on the terminal's connection)".into(),
    }
}

/// The `tpcc.json` of a sharded run merged: the shards' own `tpcc.json` (`shards`, at
/// least one; they ran on the same warehouses for the same time) for the counts the
/// histograms do not hold (rollbacks, retries, errors, whether spec mode's waits were on),
/// and the merged run's per-type response histograms (`histogram(name)`, every request of
/// every shard) for the counts, shares and percentiles, judged for `terminals`, all the
/// shards' terminals together. `Err` names what keeps the shards from being merged.
pub fn merged_result<'a>(
    shards: &[TpccResult],
    histogram: impl Fn(&str) -> Option<&'a hdrhistogram::Histogram<u64>>,
    terminals: usize,
) -> Result<TpccResult, String> {
    let Some(first) = shards.first() else {
        return Err("no shard has tpcc.json".into());
    };
    if let Some(other) = shards.iter().find(|s| s.warehouses != first.warehouses) {
        return Err(format!(
            "the shards ran on different warehouse counts ({} and {})",
            first.warehouses, other.warehouses
        ));
    }
    let mut per_type = [None; 5];
    for (slot, (_, name)) in per_type.iter_mut().zip(txn_types()) {
        *slot = histogram(name);
    }
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    for (class, n) in shards.iter().flat_map(|s| &s.errors) {
        *errors.entry(class.clone()).or_default() += n;
    }
    let totals = TpccTotals {
        transactions: per_type.iter().flatten().map(|h| h.len()).sum(),
        per_type,
        measured_s: shards.iter().map(|s| s.measured_s).fold(0.0, f64::max),
        rollbacks: shards.iter().map(|s| s.rollbacks).sum(),
        retries: shards.iter().map(|s| s.retries).sum(),
        errors,
    };
    let spec_waits = shards.iter().all(|s| !s.why_no_tpmc.iter().any(|w| w == NO_SPEC_WAITS));
    let mut merged = result_from_parts(&totals, first.warehouses, terminals, spec_waits);
    merged.delivery = first.delivery.clone();
    Ok(merged)
}

/// The final report.
pub fn final_text(r: &TpccResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "TPC-C results ({} warehouse(s), {:.1} s measured)",
        r.warehouses, r.measured_s
    );
    match r.tpmc {
        Some(tpmc) => {
            let _ = writeln!(
                s,
                "  tpmC:  {tpmc:.1}  ({:.1}% of the 12.86 per warehouse ceiling){}",
                100.0 * tpmc / (12.86 * r.warehouses as f64),
                if r.measured_s < MIN_MEASUREMENT_S {
                    "; measured for less than the 2 hours TPC-C 5.x requires"
                } else {
                    ""
                }
            );
        }
        None => {
            let _ = writeln!(s, "  NOTPM: {:.1}  (not a tpmC: {})", r.notpm, r.why_no_tpmc.join("; "));
        }
    }
    let _ = writeln!(s, "  TPM (all types): {:.1}", r.tpm_total);
    let _ = writeln!(
        s,
        "\n  {:<13} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}   90th percentile limit",
        "type", "count", "share", "min", "p50 ms", "p90 ms", "p95 ms", "p99 ms", "max ms"
    );
    for (ty, name) in txn_types() {
        let t = &r.types[name];
        let _ = writeln!(
            s,
            "  {:<13} {:>9} {:>6.2}% {:>6.1}% {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2}   {:>2} s {}",
            name,
            t.count,
            100.0 * t.share,
            100.0 * t.min_share,
            t.p50_ms,
            t.p90_ms,
            t.p95_ms,
            t.p99_ms,
            t.max_ms,
            t.limit_s,
            if t.within_limit { "OK" } else { "EXCEEDED" }
        );
        if ty == TxnType::Delivery {
            let _ = writeln!(s, "  {:<13} delivery runs {}", "", r.delivery);
        }
    }
    let _ = writeln!(
        s,
        "\n  mix: {}   response times: {}",
        match r.mix {
            Mix::Holds =>
                "the deck's 45/43/4/4/4 (partial decks at the start and end may sit a little under a minimum)",
            Mix::Below => "BELOW a minimum share by more than partial decks explain (see min)",
            Mix::TooShort => "not judged: fewer than 100 transactions (one deck) per terminal",
        },
        if r.response_times_ok {
            "every p90 within its limit"
        } else {
            "a p90 EXCEEDS its limit"
        }
    );
    let errors = if r.errors.is_empty() {
        "none".to_string()
    } else {
        r.errors
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        s,
        "  New-Order rollbacks (expected, 1%): {}   retries: {}   errors: {errors}",
        r.rollbacks, r.retries
    );
    s
}

/// The end of a `tpcc run`: `tpcc.json` and [`final_text`].
pub struct TpccReport {
    /// Warehouses run on.
    pub warehouses: u32,
    /// Terminals (connections).
    pub terminals: usize,
    /// Spec mode at the spec's keying and think times (a tpmC may be reported).
    pub spec_waits: bool,
}

impl crate::FinalReport for TpccReport {
    fn final_report(&self, outcome: &RunOutcome, _: &dbperf_results::Summary) -> (String, Vec<crate::ReportFile>) {
        let result = result_from_outcome(outcome, self.warehouses, self.terminals, self.spec_waits);
        (final_text(&result), vec![crate::ReportFile::json("tpcc.json", &result)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(counts: [u64; 5]) -> BTreeMap<String, TypeResult> {
        let total: u64 = counts.iter().sum();
        txn_types()
            .zip(counts)
            .map(|((ty, name), count)| {
                let t = TypeResult {
                    count,
                    share: count as f64 / total as f64,
                    min_share: ty.min_share(),
                    p50_ms: 0.0,
                    p90_ms: 0.0,
                    p95_ms: 0.0,
                    p99_ms: 0.0,
                    max_ms: 0.0,
                    limit_s: ty.limit_s(),
                    within_limit: true,
                };
                (name.to_string(), t)
            })
            .collect()
    }

    #[test]
    fn a_tpmc_says_when_its_measurement_was_too_short() {
        let result = |measured_s| TpccResult {
            warehouses: 1,
            measured_s,
            notpm: 12.0,
            tpmc: Some(12.0),
            why_no_tpmc: Vec::new(),
            tpm_total: 26.7,
            types: types([450, 430, 40, 40, 40]),
            rollbacks: 4,
            retries: 0,
            errors: BTreeMap::new(),
            mix: Mix::Holds,
            response_times_ok: true,
            delivery: "inline".into(),
        };
        let short = final_text(&result(600.0));
        assert!(short.contains("tpmC:  12.0  (93.3% of the 12.86"), "{short}");
        assert!(short.contains("less than the 2 hours"), "{short}");
        assert!(!final_text(&result(7200.0)).contains("2 hours"));
    }

    /// A spec-mode outcome of one terminal: `counts` per type, each answered in `p90_s[type]`.
    fn outcome(counts: [u64; 5], p90_s: [f64; 5]) -> RunOutcome {
        let ops = dbperf_engine::OpTable {
            transactions: txn_types().map(|(_, name)| name.to_string()).collect(),
            statements: Vec::new(),
        };
        let mut total = dbperf_engine::Stats::new(&ops);
        for (kind, (n, secs)) in counts.into_iter().zip(p90_s).enumerate() {
            for _ in 0..n {
                let ns = (secs * 1e9) as u64;
                total.record_txn(kind as u16, ns, ns, false);
            }
        }
        RunOutcome {
            total,
            measured_s: 3600.0,
            warmup_s: 0.0,
            intervals: 360,
            reason: dbperf_engine::StopReason::Completed,
            fatal: None,
            backlog_at_end: 0,
            abandoned: 0,
            crash: None,
            unreachable_s: 0.0,
            unreachable_at_end: false,
            per_connection: Vec::new(),
        }
    }

    #[test]
    fn a_tpmc_needs_the_spec_waits_the_mix_and_every_p90_within_its_limit() {
        let deck = [450, 430, 40, 40, 40];
        let fast = [0.5; 5];
        let ok = result_from_outcome(&outcome(deck, fast), 1, 1, true);
        assert_eq!(ok.tpmc, Some(7.5), "{:?}", ok.why_no_tpmc);
        assert!(final_text(&ok).contains("tpmC:  7.5"), "{}", final_text(&ok));

        let cases: [(&str, RunOutcome, bool, &str); 4] = [
            ("max mode", outcome(deck, fast), false, "no keying/think times"),
            // Stock-Level's limit is 20 s.
            (
                "slow",
                outcome(deck, [0.5, 0.5, 0.5, 0.5, 25.0]),
                true,
                "a p90 exceeds its limit",
            ),
            (
                "no Stock-Level",
                outcome([450, 430, 40, 40, 0], fast),
                true,
                "below a minimum",
            ),
            (
                "under a deck",
                outcome([40, 38, 4, 4, 4], fast),
                true,
                "too few transactions",
            ),
        ];
        for (case, out, spec_waits, why) in cases {
            let r = result_from_outcome(&out, 1, 1, spec_waits);
            assert_eq!(r.tpmc, None, "{case}");
            let text = final_text(&r);
            assert!(!text.contains("  tpmC: "), "{case}: {text}");
            assert!(
                text.contains(&format!("NOTPM: {:.1}", r.notpm)) && text.contains(why),
                "{case}: {text}"
            );
            let json = serde_json::to_value(&r).unwrap();
            assert!(
                json["tpmc"].is_null() && json["why_no_tpmc"].to_string().contains(why),
                "{case}: {json}"
            );
        }
    }

    #[test]
    fn partial_decks_excuse_only_what_they_can_hide() {
        // Exact decks hold.
        assert_eq!(judge_mix(&types([450, 430, 40, 40, 40]), 2), Mix::Holds);
        // Each terminal's two partial decks may hide 2 x 24.51 of its Payments (43 cards).
        assert_eq!(judge_mix(&types([548, 332, 40, 40, 40]), 2), Mix::Holds);
        assert_eq!(judge_mix(&types([550, 330, 40, 40, 40]), 2), Mix::Below);
        assert_eq!(judge_mix(&types([499, 381, 40, 40, 40]), 1), Mix::Holds);
        assert_eq!(judge_mix(&types([500, 380, 40, 40, 40]), 1), Mix::Below);
        // New-Order has no minimum (clause 5.2.3).
        assert_eq!(judge_mix(&types([0, 860, 40, 50, 50]), 1), Mix::Holds);
        // A type that never ran in 10 decks is not a partial deck's doing.
        assert_eq!(judge_mix(&types([470, 450, 40, 40, 0]), 1), Mix::Below);
        // 40 terminals that dealt a couple of cards each: nothing to judge.
        assert_eq!(judge_mix(&types([24, 39, 4, 2, 4]), 40), Mix::TooShort);
    }

    /// Response times (µs) in ascending order, `n` of them from `from` in steps of `step`.
    fn histogram(from: u64, step: u64, n: u64) -> hdrhistogram::Histogram<u64> {
        let mut h = hdrhistogram::Histogram::new(3).unwrap();
        for k in 0..n {
            h.record(from + k * step).unwrap();
        }
        h
    }

    #[test]
    fn merged_shards_count_every_request_and_judge_all_terminals_together() {
        // Two shards of 2 terminals each: one fast, one slow; both dealt whole decks.
        let fast: Vec<_> = [450, 430, 40, 40, 40].map(|n| histogram(1_000, 1, n)).into();
        let slow: Vec<_> = [450, 430, 40, 40, 40].map(|n| histogram(9_000, 10, n)).into();
        let shard = |per_type: &[hdrhistogram::Histogram<u64>], rollbacks, errors: &[(&str, u64)], spec| {
            let mut refs = [None; 5];
            for (r, h) in refs.iter_mut().zip(per_type) {
                *r = Some(h);
            }
            let totals = TpccTotals {
                per_type: refs,
                measured_s: 60.0,
                transactions: per_type.iter().map(|h| h.len()).sum(),
                rollbacks,
                retries: 1,
                errors: errors.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
            };
            result_from_parts(&totals, 4, 2, spec)
        };
        let a = shard(&fast, 4, &[("deadlock", 1)], true);
        let b = shard(&slow, 5, &[("deadlock", 2), ("lock_wait_timeout", 1)], true);
        let all: Vec<_> = fast
            .iter()
            .zip(&slow)
            .map(|(f, s)| {
                let mut h = f.clone();
                h.add(s).unwrap();
                h
            })
            .collect();
        let by_name: BTreeMap<&str, &hdrhistogram::Histogram<u64>> =
            txn_types().map(|(_, name)| name).zip(&all).collect();
        let m = merged_result(&[a.clone(), b.clone()], |name| by_name.get(name).copied(), 4).unwrap();
        assert_eq!(m.types["new_order"].count, 900);
        assert_eq!(m.types["payment"].count, 860);
        // The p90 of every request: in the slow shard's range, not a mean of the two p90s.
        assert_eq!(
            m.types["new_order"].p90_ms,
            all[0].value_at_quantile(0.9) as f64 / 1000.0
        );
        let mean_of_p90s = (a.types["new_order"].p90_ms + b.types["new_order"].p90_ms) / 2.0;
        assert!(m.types["new_order"].p90_ms >= 9.0 && mean_of_p90s < 9.0, "{m:?}");
        assert_eq!(m.notpm, 900.0);
        assert_eq!(m.tpm_total, 2000.0);
        assert_eq!((m.rollbacks, m.retries), (9, 2));
        assert_eq!(
            m.errors,
            BTreeMap::from([("deadlock".into(), 3), ("lock_wait_timeout".into(), 1)])
        );
        assert_eq!(m.mix, Mix::Holds);
        assert_eq!(m.tpmc, Some(900.0));
        // A shard without spec mode's waits keeps the merged run from a tpmC, saying why.
        let c = shard(&slow, 5, &[], false);
        let m = merged_result(&[a.clone(), c], |name| by_name.get(name).copied(), 4).unwrap();
        assert!(
            m.tpmc.is_none() && m.why_no_tpmc.iter().any(|w| w == NO_SPEC_WAITS),
            "{m:?}"
        );
        // Shards on different warehouse counts are not one run.
        let mut other = b.clone();
        other.warehouses = 8;
        let err = merged_result(&[a, other], |name| by_name.get(name).copied(), 4).unwrap_err();
        assert!(err.contains("different warehouse counts (4 and 8)"), "{err}");
    }
}
