//! cli (placeholder)
