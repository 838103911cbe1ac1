//! The JSON lines of `dbperf server list --json` ([`SandboxLine`]) and `--available --json`
//! ([`AvailableLine`]): written by the command, read by a dbperf on another host (what is
//! installed there, what a build added there is, whether a sandbox exists) — one shape for both.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::record::SandboxRecord;
use crate::versions::DatadirInit;
use dbperf_driver::target::Product;

/// A catalog entry with its install state (`"type": "available"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AvailableLine {
    /// `available`.
    #[serde(rename = "type")]
    pub kind: String,
    pub id: String,
    pub flavor: Product,
    /// The version as shown (`10.11.5`, `10.11.x (Debian)`).
    pub version: String,
    /// Where it comes from, or what an added build was added from.
    pub source: String,
    pub size: String,
    pub installed: bool,
    /// The installed tree, or where it would go.
    pub path: PathBuf,
    /// How its datadir is initialised, once installed or added.
    pub init: Option<DatadirInit>,
}

/// A sandbox (`"type": "sandbox"`): its record (whose `pid` is the running process's, `null`
/// when stopped), state and target URL.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SandboxLine {
    /// `sandbox`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(flatten)]
    pub record: SandboxRecord,
    /// `running`, `starting` or `stopped`.
    pub state: String,
    pub target: String,
}

/// The `available` lines of `text` (other lines, and lines that are not JSON, left out).
pub fn available_lines(text: &str) -> Vec<AvailableLine> {
    typed_lines(text, "available")
}

/// The `sandbox` lines of `text`.
pub fn sandbox_lines(text: &str) -> Vec<SandboxLine> {
    typed_lines(text, "sandbox")
}

fn typed_lines<T: serde::de::DeserializeOwned>(text: &str, kind: &str) -> Vec<T> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip_and_other_lines_are_left_out() {
        let a = AvailableLine {
            kind: "available".into(),
            id: "mine".into(),
            flavor: Product::Mysql,
            version: "8.0.31".into(),
            source: "added from /opt/mysql".into(),
            size: "-".into(),
            installed: true,
            path: "/opt/mysql".into(),
            init: Some(DatadirInit::InstallDb),
        };
        let text = format!(
            "{}\nnot json\n{{\"type\":\"sandbox\",\"name\":\"x\"}}\n",
            serde_json::to_string(&a).unwrap()
        );
        assert_eq!(available_lines(&text), vec![a]);
        // A sandbox line missing its record's fields is not a sandbox line.
        assert!(sandbox_lines(&text).is_empty());
    }
}
