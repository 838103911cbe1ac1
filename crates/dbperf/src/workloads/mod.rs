//! Benchmark definitions, one folder per benchmark: schema per dialect, data
//! generation and loading, transaction mixes and checks.

pub mod pgbench;
pub mod sysbench;
pub mod tpcc;
pub mod tpch;
