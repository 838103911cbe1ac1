//! Benchmark definitions, one folder per benchmark: schema per dialect, data
//! generation and loading, transaction mixes and checks.

pub mod linkbench;
pub mod pgbench;
pub mod sysbench;
pub mod tpcc;
pub mod tpch;

/// How a loader sends rows to a MySQL-protocol server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadMethod {
    /// `LOAD DATA LOCAL INFILE` streamed from memory (needs `local_infile` on the server).
    LoadData,
    /// Prepared multi-row INSERTs.
    Insert,
    /// A prepared one-row INSERT executed for many rows per command
    /// (COM_STMT_BULK_EXECUTE, MariaDB only).
    Bulk,
}
