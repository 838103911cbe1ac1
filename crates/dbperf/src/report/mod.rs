//! report (placeholder)
