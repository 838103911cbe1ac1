//! The per-query comparison table of TPC-H runs lives in [`crate::report::tpch`] (it renders
//! `tpch.json` types only); re-exported here for the TPC-H front-ends.

pub use crate::report::tpch::{table, Column};
