//! The per-query comparison table of TPC-H runs lives in [`dbperf_report::tpch`] (it renders
//! `tpch.json` types only); re-exported here for the TPC-H front-ends.

pub use dbperf_report::tpch::{table, Column};
