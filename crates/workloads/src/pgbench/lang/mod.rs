//! pgbench's script language, for `dbperf pgbench -f FILE[@W] -b NAME[@W]`: scripts are
//! parsed once into commands that know their `FILE:LINE`, then run per transaction.
//!
//! | file | owns |
//! |---|---|
//! | [`parse`] | script text → commands (SQL with `:variables`, meta-commands, `\if` jumps), parse errors |
//! | [`expr`] | the expression language of `\set` and `\if`: values, parser, evaluator |
//! | [`random`] | `random*` distributions, `hash_fnv1a`, `hash_murmur2`, `permute` |
//! | [`exec`] | the [`dbperf_engine::Worker`] running a weighted mix of parsed scripts |
//! | [`per_command`] | `-r`: each command's latency, failures and retries, and pgbench's lines for them |

pub mod exec;
pub mod expr;
pub mod parse;
pub mod per_command;
pub mod random;

use std::collections::HashMap;

/// Variable names and their slots, shared by every script of a run, so a transaction reads
/// and writes variables by index.
#[derive(Clone, Debug)]
pub struct Vars {
    names: Vec<String>,
    index: HashMap<String, u32>,
    /// Slot of `default_seed`, the seed of the hash and permute functions.
    pub default_seed: u32,
}

/// Slot of `scale`.
pub const SCALE: u32 = 0;
/// Slot of `client_id`.
pub const CLIENT_ID: u32 = 1;
/// Slot of `random_seed`.
pub const RANDOM_SEED: u32 = 3;

impl Default for Vars {
    fn default() -> Vars {
        let mut v = Vars {
            names: Vec::new(),
            index: HashMap::new(),
            default_seed: 2,
        };
        for n in ["scale", "client_id", "default_seed", "random_seed"] {
            v.slot(n);
        }
        v
    }
}

impl Vars {
    /// The slot of `name`, made on first use.
    pub fn slot(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    /// The slot of `name` if a script or option uses it.
    pub fn find(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }

    /// The name of `slot`.
    pub fn name(&self, slot: u32) -> &str {
        self.names.get(slot as usize).map_or("?", |s| s.as_str())
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when there are none (never: the automatic variables always have slots).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// A valid variable name for `-D` and `\set`: letters, digits and underscores.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}
