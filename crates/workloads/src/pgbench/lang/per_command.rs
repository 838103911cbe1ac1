//! pgbench's `-r` (`--report-per-command`): each command of each script (SQL and
//! meta-commands, as pgbench counts them) with its mean latency, its failures and, with
//! `--max-tries` other than 1, its retries; and the lines pgbench prints for them.
//!
//! Every client adds to the same counters (relaxed atomics: the figures are read once the
//! run has ended). A command's latency runs from its start to its end as pgbench times it:
//! an SQL command until its result is read (`\gset` stored), a `\sleep` for its sleep.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::parse::Parsed;

/// One command's figures.
#[derive(Default, Debug)]
struct Slot {
    ns: AtomicU64,
    count: AtomicU64,
    failures: AtomicU64,
    retries: AtomicU64,
}

/// The figures of every command of a run's scripts, with the commands' first lines.
#[derive(Debug)]
pub struct CommandStats {
    /// Per script, per pgbench command (`number - 1`).
    slots: Vec<Vec<Slot>>,
    lines: Vec<Vec<String>>,
}

/// What a failed transaction became, for the command it failed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Run again (`--max-tries`): a retry of that command.
    Retried,
    /// Given up on: a failure of that command.
    Failed,
}

impl CommandStats {
    /// Empty figures for the commands of `parsed`'s scripts.
    pub fn new(parsed: &Parsed) -> CommandStats {
        CommandStats {
            slots: parsed
                .scripts
                .iter()
                .map(|s| s.lines.iter().map(|_| Slot::default()).collect())
                .collect(),
            lines: parsed.scripts.iter().map(|s| s.lines.clone()).collect(),
        }
    }

    fn slot(&self, script: usize, number: u32) -> Option<&Slot> {
        self.slots.get(script)?.get((number as usize).checked_sub(1)?)
    }

    /// Command `number` of `script` took `ns`; `done` when the command ended with it (a
    /// compound SQL command's parts add their time, and count once).
    pub fn add(&self, script: usize, number: u32, ns: u64, done: bool) {
        if let Some(s) = self.slot(script, number) {
            s.ns.fetch_add(ns, Relaxed);
            if done {
                s.count.fetch_add(1, Relaxed);
            }
        }
    }

    /// A transaction of `script` failed in command `number`.
    pub fn failed(&self, script: usize, number: u32, ending: Ending) {
        if let Some(s) = self.slot(script, number) {
            match ending {
                Ending::Retried => s.retries.fetch_add(1, Relaxed),
                Ending::Failed => s.failures.fetch_add(1, Relaxed),
            };
        }
    }

    /// pgbench's lines for `script`: its header (`prefix` is " - " inside a script's block
    /// of several), then a line per command: mean latency in ms, failures, with
    /// `retries` the retries, and the command's first line.
    pub fn text(&self, script: usize, prefix: &str, retries: bool) -> String {
        let mut t = format!(
            "{prefix}statement latencies in milliseconds{}:\n",
            if retries {
                ", failures and retries"
            } else {
                " and failures"
            }
        );
        let (Some(slots), Some(lines)) = (self.slots.get(script), self.lines.get(script)) else {
            return t;
        };
        for (s, line) in slots.iter().zip(lines) {
            let count = s.count.load(Relaxed);
            let mean_ms = if count > 0 {
                s.ns.load(Relaxed) as f64 / count as f64 / 1e6
            } else {
                0.0
            };
            let failures = s.failures.load(Relaxed);
            if retries {
                let _ = writeln!(
                    t,
                    "   {mean_ms:11.3}  {failures:10}  {:10}  {line}",
                    s.retries.load(Relaxed)
                );
            } else {
                let _ = writeln!(t, "   {mean_ms:11.3}  {failures:10}  {line}");
            }
        }
        t
    }

    /// The number of scripts.
    pub fn scripts(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Parsed {
        let mut p = Parsed::default();
        p.add("s.sql", "s.sql", text).unwrap_or_else(|e| panic!("{e}"));
        p
    }

    #[test]
    fn every_command_pgbench_counts_has_its_first_line() {
        let p = parsed(
            "\\set aid random(1, 10)\nBEGIN;\nSELECT 1\n  + 2;\n\\if :aid > 5\nSELECT :aid \\gset\n\\else\nSELECT 2 \\; SELECT 3;\n\\endif\n\\sleep 1 ms\nEND;\n",
        );
        assert_eq!(
            p.scripts[0].lines,
            [
                "\\set aid random(1, 10)",
                "BEGIN;",
                "SELECT 1",
                "\\if :aid > 5",
                "SELECT :aid ",
                "\\else",
                "SELECT 2 ; SELECT 3;",
                "\\endif",
                "\\sleep 1 ms",
                "END;",
            ]
        );
        let numbers: Vec<u32> = p.scripts[0].cmds.iter().map(|c| c.number).collect();
        assert!(numbers
            .iter()
            .all(|&n| n >= 1 && n as usize <= p.scripts[0].lines.len()));
    }

    #[test]
    fn means_failures_and_retries_are_printed_as_pgbench_prints_them() {
        let p = parsed("\\set a 1\nSELECT 1 \\; SELECT 2;\n");
        let s = CommandStats::new(&p);
        s.add(0, 1, 2_000, true);
        s.add(0, 1, 4_000, true);
        // A compound command: two parts, one count.
        s.add(0, 2, 1_000_000, false);
        s.add(0, 2, 500_000, true);
        s.failed(0, 2, Ending::Failed);
        s.failed(0, 2, Ending::Retried);
        s.add(0, 9, 1, true);
        assert_eq!(
            s.text(0, "", false),
            "statement latencies in milliseconds and failures:\n         0.003           0  \\set a 1\n         1.500           1  SELECT 1 ; SELECT 2;\n"
        );
        assert_eq!(
            s.text(0, " - ", true),
            " - statement latencies in milliseconds, failures and retries:\n         0.003           0           0  \\set a 1\n         1.500           1           1  SELECT 1 ; SELECT 2;\n"
        );
    }
}
