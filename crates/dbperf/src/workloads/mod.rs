//! workloads (placeholder)
