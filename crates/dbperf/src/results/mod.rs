//! results (placeholder)
