//! Workload definitions: schema, loaders and transaction mixes.

pub mod sysbench;
