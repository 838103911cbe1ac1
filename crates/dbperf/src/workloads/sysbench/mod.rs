//! The sysbench OLTP workload family.

pub mod rand;
pub mod strings;
