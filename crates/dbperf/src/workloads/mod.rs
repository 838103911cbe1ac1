//! Benchmark definitions, one folder per benchmark: schema per dialect, data
//! generation and loading, transaction mixes and checks.

pub mod linkbench;
pub mod sysbench;
pub mod tpcc;
pub mod tpch;
