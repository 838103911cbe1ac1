//! TPC-C (specification 5.11): schema in two spellings, the initial population and its
//! resumable parallel loader, the five transactions (one file each), terminals in `max`
//! or `spec` mode, and the consistency conditions of clause 3.3.2.
//!
//! Files: `schema` (tables, indexes, foreign keys), `rand` (NURand, last names, deck, think
//! times), `load` (row generation), `prepare` (loading, resume, cleanup), `worker` (a
//! terminal and its statements), `new_order`, `payment`, `order_status`, `delivery`,
//! `stock_level`, `check`, `report` (the live line, the mix judgement, `tpcc.json` and the
//! final report), `run` (a run's rules: terminals per warehouse, the modes' combinations, the
//! run's NURand constants and seeds, its manifest options).

pub mod check;
pub mod delivery;
pub mod load;
pub mod new_order;
pub mod order_status;
pub mod payment;
pub mod prepare;
pub mod rand;
pub mod report;
pub mod run;
pub mod schema;
pub mod stock_level;
pub mod worker;

use ::rand::rngs::SmallRng;
use ::rand::SeedableRng;
use dbperf_engine::{OpTable, TxnError, Workload};

use self::rand::{NuConstants, TxnType};
use self::schema::Schema;
use self::worker::{Terminal, TpccWorker, STATEMENT_NAMES};
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::{Session, Target};

/// Transaction type names, in [`TxnType`] order.
pub const TXN_NAMES: [&str; 5] = ["new_order", "payment", "order_status", "delivery", "stock_level"];

/// How terminals behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// No keying or think times; N connections, each with a home warehouse.
    Max,
    /// 10 terminals per warehouse, each bound to a warehouse and district, with keying and
    /// think times (clause 5.2.5).
    Spec,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Mode, String> {
        match s {
            "max" => Ok(Mode::Max),
            "spec" => Ok(Mode::Spec),
            other => Err(format!("--mode must be max or spec, got {other:?}")),
        }
    }
}

/// How a terminal picks the warehouse (and district) of its transactions in `max` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WarehouseChoice {
    /// Each connection keeps one home warehouse and district (round-robin; clause 2.4.1.1).
    Fixed,
    /// A uniformly drawn warehouse and district for every transaction, as tpcc-mysql and
    /// sysbench-tpcc draw them: connections then contend for the same warehouses' hot rows.
    PerTransaction,
}

impl std::str::FromStr for WarehouseChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<WarehouseChoice, String> {
        match s {
            "fixed" => Ok(WarehouseChoice::Fixed),
            "per-transaction" => Ok(WarehouseChoice::PerTransaction),
            other => Err(format!(
                "--warehouse-choice must be fixed or per-transaction, got {other:?}"
            )),
        }
    }
}

/// A TPC-C run's shared definition, on sessions of type `S`.
pub struct TpccWorkload<S> {
    /// Where.
    pub target: Target,
    /// Errors to retry.
    pub ignore: IgnoreErrors,
    /// Schema spelling.
    pub schema: Schema,
    /// Warehouses used.
    pub warehouses: u32,
    /// Terminal behaviour.
    pub mode: Mode,
    /// Home warehouse per connection or per transaction (`max` mode only).
    pub warehouse_choice: WarehouseChoice,
    /// Multiplies keying and think times (1 = the spec's).
    pub wait_scale: f64,
    /// NURand constants of the run.
    pub constants: NuConstants,
    /// Seed of the terminals' random streams.
    pub seed: u64,
    /// Phantom session type.
    pub session: std::marker::PhantomData<fn() -> S>,
}

impl<S: Session + 'static> TpccWorkload<S> {
    /// The warehouse and district of terminal `i`: in `spec` mode terminals 10(w-1)..10w-1
    /// belong to warehouse w, one per district; in `max` mode connections go round-robin
    /// over warehouses, then districts.
    pub fn terminal(&self, i: usize) -> Terminal {
        let w = self.warehouses as usize;
        let (home, district) = match self.mode {
            Mode::Spec => (i / 10 % w + 1, i % 10 + 1),
            Mode::Max => (i % w + 1, (i / w) % 10 + 1),
        };
        Terminal {
            w: home as i64,
            d: district as i64,
            warehouses: self.warehouses as i64,
            c: self.constants,
        }
    }
}

impl<S: Session + 'static> Workload for TpccWorkload<S> {
    type Worker = TpccWorker<S>;

    fn ops(&self) -> OpTable {
        OpTable {
            transactions: TXN_NAMES.iter().map(|s| s.to_string()).collect(),
            statements: STATEMENT_NAMES.iter().map(|s| s.to_string()).collect(),
        }
    }

    async fn connect(&self, worker: usize) -> Result<TpccWorker<S>, TxnError> {
        let session = S::connect(&self.target, self.ignore.clone()).await?;
        let rng = SmallRng::seed_from_u64(
            self.seed
                .wrapping_add(0x5851_f42d_4c95_7f2d_u64.wrapping_mul(worker as u64 + 1)),
        );
        let w = TpccWorker::new(
            session,
            self.schema,
            self.terminal(worker),
            self.mode,
            self.wait_scale,
            rng,
        )
        .await?
        .with_warehouse_choice(self.warehouse_choice);
        Ok(w)
    }
}

/// Every transaction type with its name.
pub fn txn_types() -> impl Iterator<Item = (TxnType, &'static str)> {
    TxnType::ALL.into_iter().zip(TXN_NAMES)
}
