//! cli (placeholder)

pub mod server;
