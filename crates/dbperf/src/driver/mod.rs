//! driver (placeholder)
