//! sysbench 1.0.20's OLTP tests, statement for statement (`oltp_common.lua` and the
//! per-test scripts): the same schema, data shape, per-event query mix and options,
//! so sysbench and dbperf can run on each other's tables and their numbers compare.
//!
//! | file | owns |
//! |---|---|
//! | [`options`] | the tests and every `oltp_common.lua` option with sysbench's defaults |
//! | [`schema`] | `CREATE TABLE sbtestN`, the secondary index, cleanup |
//! | [`prepare`] | the parallel loader and `prewarm` |
//! | [`event`] | one event (transaction) of each test, as a [`dbperf_engine::Worker`] |
//! | [`rand`] | `--rand-type` distributions |
//! | [`strings`] | the `c`/`pad` random string templates |

pub mod event;
pub mod options;
pub mod prepare;
pub mod rand;
pub mod report;
pub mod schema;
pub mod strings;

pub use event::{OltpWorker, OltpWorkload};
pub use options::{OltpOptions, Test};
