//! server (placeholder)
