//! The rules of a TPC-C run that are TPC-C's, not the command line's: how many terminals a run
//! has (10 per warehouse in spec mode, clause 4.2.2), which combinations of mode, warehouse
//! choice and rate make sense (spec-mode terminals keep their warehouse and district, clause
//! 2.4.1.1, and pace themselves with keying and think times), the run's NURand constants from
//! the load's (clause 2.1.6.1), the seeds a manifest records, and the options it records.

use dbperf_driver::any::AnySession;
use dbperf_results::options::TpccOptions;

use super::prepare::{self, PrepareError};
use super::rand::NuConstants;
use super::schema::Schema;
use super::{Mode, WarehouseChoice};

/// Terminals per warehouse in spec mode (clause 4.2.2: ten per warehouse, one per district).
pub const TERMINALS_PER_WAREHOUSE: u32 = 10;

/// How Delivery runs: inline, one transaction for the 10 districts on the terminal's own
/// connection (the deferred queue of clause 2.7 is not modelled).
pub const DELIVERY: &str = "inline";

/// The largest keying-and-think-time multiplier: a million times the spec's (a terminal's
/// 12 s mean think time becomes over four months), which no wait overflows.
pub const MAX_WAIT_SCALE: f64 = 1e6;

/// Checks a keying-and-think-time multiplier (`--wait-scale`, an experiment's `wait_scale`).
pub fn check_wait_scale(v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=MAX_WAIT_SCALE).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "wait_scale must be a number from 0 to {MAX_WAIT_SCALE} (1 = the spec's keying and think times), got {v}"
        ))
    }
}

/// Checks that `mode`, `choice` and an open-loop rate go together; the error says why not and
/// what to give instead.
pub fn check_mode(mode: Mode, choice: WarehouseChoice, open_loop: bool) -> Result<(), String> {
    if choice == WarehouseChoice::PerTransaction && mode == Mode::Spec {
        return Err(
            "--warehouse-choice per-transaction is for --mode max; spec mode's terminals each keep \
                    their warehouse and district (clause 2.4.1.1)"
                .into(),
        );
    }
    if open_loop && mode == Mode::Spec {
        return Err("--rate is for --mode max; spec mode paces each terminal with keying and think times".into());
    }
    Ok(())
}

/// The terminals (connections) of a run on `warehouses`: spec mode's 10 per warehouse (a
/// `--threads` other than that is refused), max mode's `threads` or one per warehouse.
pub fn terminals(mode: Mode, warehouses: u32, threads: Option<u32>) -> Result<u32, String> {
    let spec = TERMINALS_PER_WAREHOUSE.saturating_mul(warehouses);
    match (mode, threads) {
        (Mode::Spec, Some(n)) if n != spec => Err(format!(
            "--mode spec runs {TERMINALS_PER_WAREHOUSE} terminals per warehouse ({spec}); drop --threads, or use --mode max for {n} connections"
        )),
        (Mode::Spec, _) => Ok(spec),
        (Mode::Max, t) => Ok(t.unwrap_or(warehouses)),
    }
}

/// Checks that the data of `warehouses` is loaded and counts the run in the bookkeeping (so
/// `check` knows 3.3.2.11 no longer applies); the load's C_LAST constant, `None` (with a note)
/// when no dbperf bookkeeping is there.
pub async fn ready(
    s: &mut AnySession,
    schema: &Schema,
    warehouses: u32,
    database: &str,
) -> Result<Option<i64>, PrepareError> {
    let c_last_load = prepare::ready_for_run(s, schema, warehouses, database).await?;
    if c_last_load.is_none() {
        eprintln!(
            "note: no dbperf bookkeeping in {database}: C_LAST of the load is unknown, so the C-Run/C-Load \
             delta rule (clause 2.1.6.1) is applied against a guess"
        );
    }
    Ok(c_last_load)
}

/// The run's NURand constants: drawn from `seed` within the delta rule of clause 2.1.6.1
/// against the load's C_LAST (the one `seed` would have loaded with, when it is unknown).
pub fn constants(seed: u64, c_last_load: Option<i64>) -> NuConstants {
    let load = c_last_load.unwrap_or_else(|| NuConstants::for_load(seed).c_last);
    NuConstants::for_run(seed, load)
}

/// The seeds a run's manifest records.
pub fn seeds(seed: u64, c_last_load: Option<i64>, c: &NuConstants) -> serde_json::Value {
    serde_json::json!({
        "rand_seed": seed,
        "c_last_load": c_last_load,
        "c_last_run": c.c_last,
        "c_id": c.c_id,
        "ol_i_id": c.ol_i_id,
    })
}

/// The options a run's manifest records.
pub fn options(schema: &Schema, warehouses: u32, mode: Mode, choice: WarehouseChoice, wait_scale: f64) -> TpccOptions {
    TpccOptions {
        warehouses,
        mode: enum_name(&mode),
        warehouse_choice: enum_name(&choice),
        schema: schema.kind.to_string(),
        wait_scale,
        delivery: DELIVERY.into(),
    }
}

/// The serde name of a unit enum (`max`, `per-transaction`).
fn enum_name<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_mode_has_ten_terminals_per_warehouse_and_max_mode_what_is_asked() {
        assert_eq!(terminals(Mode::Spec, 3, None), Ok(30));
        assert_eq!(terminals(Mode::Spec, 3, Some(30)), Ok(30));
        assert!(terminals(Mode::Spec, 3, Some(8))
            .unwrap_err()
            .contains("10 terminals per warehouse (30)"));
        assert_eq!(terminals(Mode::Max, 3, None), Ok(3));
        assert_eq!(terminals(Mode::Max, 3, Some(8)), Ok(8));
        assert!(check_mode(Mode::Spec, WarehouseChoice::PerTransaction, false)
            .unwrap_err()
            .contains("2.4.1.1"));
        assert!(check_mode(Mode::Spec, WarehouseChoice::Fixed, true)
            .unwrap_err()
            .contains("--rate"));
        assert!(check_mode(Mode::Max, WarehouseChoice::PerTransaction, true).is_ok());
    }

    #[test]
    fn the_options_record_names_the_modes_as_the_flags_spell_them() {
        let schema = Schema {
            kind: super::super::schema::SchemaKind::Dbperf,
            history_pk: false,
            family: dbperf_driver::target::Family::Mysql,
        };
        let o = options(&schema, 2, Mode::Max, WarehouseChoice::PerTransaction, 1.0);
        assert_eq!(
            (o.mode.as_str(), o.warehouse_choice.as_str(), o.delivery.as_str()),
            ("max", "per-transaction", "inline")
        );
    }
}
