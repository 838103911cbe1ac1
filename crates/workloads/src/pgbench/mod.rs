//! pgbench's built-in workloads (PostgreSQL 15's `pgbench`), statement for statement, so
//! `pgbench` and dbperf run on each other's tables and their numbers compare.
//!
//! | file | owns |
//! |---|---|
//! | [`init`] | `pgbench -i`: the four tables, fillfactor, the client-side COPY load, vacuum, primary keys |
//! | [`script`] | the `tpcb-like`, `simple-update` and `select-only` scripts as a [`dbperf_engine::Worker`] |
//! | [`lang`] | pgbench's script language: users' `-f` files and weighted mixes with the built-ins |
//! | [`log`] | `-l`: the per-transaction and aggregated log files |
//! | [`report`] | the final report in pgbench's lines, then dbperf's |

pub mod init;
pub mod lang;
pub mod log;
pub mod report;
pub mod script;

pub use init::{InitConfig, InitError};
pub use script::{PgbenchWorkload, Script};

/// Accounts per unit of scale (`naccounts` in pgbench).
pub const ACCOUNTS_PER_SCALE: i64 = 100_000;
/// Tellers per unit of scale (`ntellers`).
pub const TELLERS_PER_SCALE: i64 = 10;
/// Branches per unit of scale (`nbranches`).
pub const BRANCHES_PER_SCALE: i64 = 1;
