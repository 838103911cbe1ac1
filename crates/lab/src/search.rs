//! The `[search]` section of an experiment file, for `dbperf lab tune`: the server settings to
//! search and their ranges, the figure to optimise (the objective), what every trial must
//! satisfy (the constraints) and what the search may spend (the budget). Parsed and checked
//! here without a server, with `file:line:column` errors; rendered for `lab plan`.
//!
//! ```toml
//! [search]
//! objective = "max tps"            # "max notpm" (tpcc), "max rps" (linkbench), "min p99" (at a fixed rate)
//! trials = 24                      # and/or time = "2h"
//! seed = 7                         # the same seed, the same trial sequence
//! constraints = ["cv <= 5%", "stalls == 0", "sync_flush <= 1%"]
//! [search.parameters]
//! innodb_buffer_pool_size = { log_range = ["128M", "8G"] }
//! innodb_max_dirty_pages_pct = { range = [10, 90] }
//! innodb_flush_neighbors = { choice = [0, 1, 2] }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::time::Duration;

use serde::Deserialize;
use toml::{Spanned, Value};

use super::experiment::{ExperimentError, Pinning, Secs, ServerSpec, Variant, WorkloadSpec};
use super::settings::{setting, setting_value};
use super::workload::{Kind, Params};
use dbperf_core::bounds;
use dbperf_core::size::parse_size;

/// The most trials a search may ask for.
pub const MAX_TRIALS: u32 = 1_000;
/// The most parameters one search may vary.
pub const MAX_PARAMETERS: usize = 20;
/// The most values of one `choice`.
const MAX_CHOICES: usize = 100;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSearch {
    objective: Option<Spanned<String>>,
    trials: Option<Spanned<i64>>,
    time: Option<Spanned<Secs>>,
    seed: Option<u64>,
    #[serde(default)]
    constraints: Vec<Spanned<String>>,
    #[serde(default)]
    parameters: BTreeMap<String, Spanned<RawParameter>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawParameter {
    range: Option<Spanned<Vec<Value>>>,
    log_range: Option<Spanned<Vec<Value>>>,
    choice: Option<Spanned<Vec<Value>>>,
}

/// A checked `[search]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    pub objective: Objective,
    pub constraints: Vec<Constraint>,
    /// The parameters, in name order (which fixes the trial sequence of a seed).
    pub parameters: Vec<Parameter>,
    /// At most this many trials; `None`: as many as `time` allows.
    pub trials: Option<u32>,
    /// At most this long in all; `None`: as long as `trials` take.
    pub time: Option<Duration>,
    pub seed: u64,
}

/// One searched setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub name: String,
    pub domain: Domain,
}

/// The values a parameter may take.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// Whole numbers `lo..=hi`; `size`: written as sizes (`128M`).
    Int { lo: i64, hi: i64, size: bool },
    /// Whole numbers `lo..=hi` searched on a log scale; `size`: written as sizes (`128M`).
    LogInt { lo: u64, hi: u64, size: bool },
    /// Numbers `lo..=hi`.
    Float { lo: f64, hi: f64 },
    /// One of these values, in the server's option syntax.
    Choice(Vec<String>),
}

/// What the search optimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objective {
    /// Transactions per second (sysbench, Lua, pgbench).
    MaxTps,
    /// New-order transactions per minute (TPC-C).
    MaxNotpm,
    /// Requests per second (LinkBench).
    MaxRps,
    /// The 99th percentile of response time, at the workload's fixed rate.
    MinP99,
}

/// A condition a trial must meet to count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constraint {
    pub metric: Metric,
    pub op: Op,
    /// In the metric's unit: percent, a count, or milliseconds.
    pub bound: f64,
}

/// What a constraint bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Coefficient of variation of the objective's per-interval figure, in percent.
    Cv,
    /// Stalls the analysis finds (intervals far below the run's median).
    Stalls,
    /// Share of the run's intervals in which InnoDB flushed synchronously, in percent.
    SyncFlush,
    /// 95th percentile response time, ms.
    P95,
    /// 99th percentile response time, ms.
    P99,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Le,
    Lt,
    Eq,
}

impl Objective {
    const ALL: [(&'static str, Objective); 4] = [
        ("max tps", Objective::MaxTps),
        ("max notpm", Objective::MaxNotpm),
        ("max rps", Objective::MaxRps),
        ("min p99", Objective::MinP99),
    ];

    pub fn text(self) -> &'static str {
        Self::ALL.iter().find(|(_, o)| *o == self).map_or("?", |(t, _)| t)
    }

    /// The objective that fits a workload of `kind` best, for messages.
    fn suggested(kind: Kind) -> &'static str {
        match kind {
            Kind::Tpcc => "max notpm",
            Kind::Linkbench => "max rps",
            _ => "max tps",
        }
    }
}

impl Metric {
    const ALL: [(&'static str, Metric, &'static str); 5] = [
        ("cv", Metric::Cv, "%"),
        ("stalls", Metric::Stalls, ""),
        ("sync_flush", Metric::SyncFlush, "%"),
        ("p95", Metric::P95, "ms"),
        ("p99", Metric::P99, "ms"),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(_, m, _)| *m == self).map_or("?", |(n, _, _)| n)
    }

    fn unit(self) -> &'static str {
        Self::ALL.iter().find(|(_, m, _)| *m == self).map_or("", |(_, _, u)| u)
    }
}

impl fmt::Display for Constraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Eq => "==",
        };
        write!(f, "{} {op} {}{}", self.metric.name(), self.bound, self.metric.unit())
    }
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Domain::Int { lo, hi, size: true } => {
                write!(f, "{} .. {}", size_text(*lo as u64), size_text(*hi as u64))
            }
            Domain::Int { lo, hi, .. } => write!(f, "{lo} .. {hi}, whole numbers"),
            Domain::LogInt { lo, hi, size: true } => write!(f, "{} .. {}, log scale", size_text(*lo), size_text(*hi)),
            Domain::LogInt { lo, hi, size: false } => write!(f, "{lo} .. {hi}, whole numbers, log scale"),
            Domain::Float { lo, hi } => write!(f, "{lo} .. {hi}"),
            Domain::Choice(values) => write!(f, "one of {}", values.join(", ")),
        }
    }
}

impl Domain {
    /// The low end (a choice's first value), as the server's option syntax.
    pub fn first_value(&self) -> String {
        match self {
            Domain::Int { lo, size: true, .. } => size_text(*lo as u64),
            Domain::Int { lo, .. } => lo.to_string(),
            Domain::LogInt { lo, size: true, .. } => size_text(*lo),
            Domain::LogInt { lo, .. } => lo.to_string(),
            Domain::Float { lo, .. } => lo.to_string(),
            Domain::Choice(values) => values.first().cloned().unwrap_or_default(),
        }
    }
}

/// Bytes in the largest unit that writes them exactly (`134217728` -> `128M`).
pub fn size_text(bytes: u64) -> String {
    for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
        if bytes != 0 && bytes.is_multiple_of(1u64 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

impl Search {
    /// How many distinct settings the space holds; `None` when a parameter is continuous or
    /// the count passes `u64`.
    pub fn space_size(&self) -> Option<u64> {
        self.parameters.iter().try_fold(1u64, |n, p| {
            let values = match &p.domain {
                Domain::Int { lo, hi, .. } => hi.abs_diff(*lo).checked_add(1)?,
                Domain::LogInt { lo, hi, .. } => (hi - lo).checked_add(1)?,
                Domain::Float { .. } => return None,
                Domain::Choice(v) => v.len() as u64,
            };
            n.checked_mul(values)
        })
    }
}

/// Checks `raw` against the experiment it belongs to: one server, one workload at one user
/// count, no variants (the search makes its own), settings not fixed elsewhere.
pub(super) fn parse(
    raw: &Spanned<RawSearch>,
    servers: &[ServerSpec],
    variants: &[Variant],
    pinnings: &[Pinning],
    workloads: &[WorkloadSpec],
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Search, ExperimentError> {
    let span = raw.span();
    let r = raw.get_ref();
    let at_search = |m: String| at(span.clone(), m);
    if servers.len() != 1 {
        return Err(at_search(format!(
            "a [search] tunes one server, and this file has {} [[server]]s: keep one (a file per server)",
            servers.len()
        )));
    }
    if variants.len() != 1 || variants[0].name != "default" || !variants[0].settings.is_empty() {
        return Err(at_search(
            "a [search] makes its own variants (one per trial): remove [variants] and [[variant]], and put \
             settings every trial shares in the [[server]]'s `settings`"
                .into(),
        ));
    }
    if pinnings.len() > 1 {
        return Err(at_search(format!(
            "a [search] runs its trials one way, and this file has {} [[pinning]]s: keep one",
            pinnings.len()
        )));
    }
    let workload = match workloads {
        [w] if w.users.len() == 1 => w,
        [w] => {
            return Err(at_search(format!(
                "a [search] measures at one user count, and the workload lists {}: keep one, e.g. users = [{}]",
                w.users.len(),
                w.users.last().copied().unwrap_or(16)
            )))
        }
        _ => {
            return Err(at_search(format!(
                "a [search] tunes for one workload, and this file has {}: keep one [[workload]]",
                workloads.len()
            )))
        }
    };
    let kind = workload.kind();

    let objective = match &r.objective {
        None => {
            return Err(at_search(format!(
                "[search] needs an `objective`, e.g. objective = \"{}\"",
                Objective::suggested(kind)
            )))
        }
        Some(o) => {
            let text = o
                .get_ref()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_lowercase();
            let objective = Objective::ALL
                .iter()
                .find(|(t, _)| *t == text)
                .map(|(_, o)| *o)
                .ok_or_else(|| {
                    let known: Vec<&str> = Objective::ALL.iter().map(|(t, _)| *t).collect();
                    at(
                        o.span(),
                        format!("unknown objective {:?}: use one of {}", o.get_ref(), known.join(", ")),
                    )
                })?;
            check_objective(objective, kind, workload).map_err(|m| at(o.span(), m))?;
            objective
        }
    };

    let constraints = r
        .constraints
        .iter()
        .map(|c| parse_constraint(c.get_ref()).map_err(|m| at(c.span(), m)))
        .collect::<Result<Vec<_>, _>>()?;

    if r.parameters.is_empty() {
        return Err(at_search(
            "[search] has no parameters: add [search.parameters], e.g.\n  [search.parameters]\n  \
             innodb_buffer_pool_size = { log_range = [\"128M\", \"8G\"] }"
                .into(),
        ));
    }
    if r.parameters.len() > MAX_PARAMETERS {
        return Err(at_search(format!(
            "[search] varies {} parameters; at most {MAX_PARAMETERS} can be searched in one file",
            r.parameters.len()
        )));
    }
    let server = &servers[0];
    let mut parameters = Vec::new();
    for (name, p) in &r.parameters {
        if let Some((k, v)) = server.settings.iter().find(|(k, _)| same_setting(k, name)) {
            return Err(at(
                p.span(),
                format!("{name} is searched, but the [[server]] sets {k} = {v} for every start: remove one of the two"),
            ));
        }
        parameters.push(Parameter {
            name: name.clone(),
            domain: parse_domain(name, p, at)?,
        });
    }

    let trials = match &r.trials {
        Some(t) if !(1..=i64::from(MAX_TRIALS)).contains(t.get_ref()) => {
            return Err(at(
                t.span(),
                format!("trials must be 1 to {MAX_TRIALS}, got {}", t.get_ref()),
            ))
        }
        Some(t) => Some(*t.get_ref() as u32),
        None => None,
    };
    let time = match &r.time {
        Some(t) if t.get_ref().0 < Duration::from_secs(60) => {
            return Err(at(
                t.span(),
                format!(
                    "time is the whole search's budget, at least a minute (e.g. \"2h\"), got {:?}",
                    t.get_ref().0
                ),
            ))
        }
        Some(t) => Some(t.get_ref().0),
        None => None,
    };
    if trials.is_none() && time.is_none() {
        return Err(at_search(
            "[search] needs a budget: `trials` (e.g. trials = 24), `time` (e.g. time = \"2h\"), or both".into(),
        ));
    }
    Ok(Search {
        objective,
        constraints,
        parameters,
        trials,
        time,
        seed: r.seed.unwrap_or(1),
    })
}

/// Whether two setting names are the same option (`-` and `_` alike, case aside).
fn same_setting(a: &str, b: &str) -> bool {
    a.replace('-', "_").eq_ignore_ascii_case(&b.replace('-', "_"))
}

/// The objective must be a figure the workload reports, and `min p99` needs a fixed rate.
fn check_objective(objective: Objective, kind: Kind, w: &WorkloadSpec) -> Result<(), String> {
    let fits = match objective {
        Objective::MaxTps => matches!(kind, Kind::Sysbench | Kind::Lua | Kind::Pgbench),
        Objective::MaxNotpm => kind == Kind::Tpcc,
        Objective::MaxRps => kind == Kind::Linkbench,
        Objective::MinP99 => kind != Kind::Tpch,
    };
    if kind == Kind::Tpch {
        return Err(
            "a tpch workload has no figure per interval to search on: search with sysbench, lua, pgbench, tpcc \
             or linkbench"
                .into(),
        );
    }
    if !fits {
        return Err(format!(
            "a {} workload does not report {}: use objective = \"{}\" (or \"min p99\" at a fixed rate)",
            kind.name(),
            &objective.text()[4..],
            Objective::suggested(kind)
        ));
    }
    if objective == Objective::MinP99 && !fixed_rate(w) {
        return Err(match kind {
            Kind::Tpcc => "min p99 needs a fixed arrival rate: TPC-C paces its terminals with mode = \"spec\"".into(),
            Kind::Sysbench | Kind::Lua => "min p99 needs a fixed arrival rate: give the workload one, e.g. \
                                           options = { rate = 2000 } (at the maximum rate p99 measures the queue)"
                .into(),
            _ => format!(
                "min p99 needs a fixed arrival rate, which the lab cannot give a {} workload: use \"{}\"",
                kind.name(),
                Objective::suggested(kind)
            ),
        });
    }
    Ok(())
}

/// The workload runs at a fixed arrival rate (`rate` > 0, or TPC-C's paced terminals).
fn fixed_rate(w: &WorkloadSpec) -> bool {
    let rate = |opts: &[(String, String)]| {
        opts.iter()
            .any(|(k, v)| k == "rate" && v.parse::<f64>().is_ok_and(|r| r > 0.0))
    };
    match &w.params {
        Params::Sysbench(s) => rate(&s.options),
        Params::Lua(l) => rate(&l.general) || rate(&l.options),
        Params::Tpcc(t) => t.mode == "spec",
        _ => false,
    }
}

/// `NAME OP VALUE`: `cv <= 5%`, `stalls == 0`, `sync_flush <= 1%`, `p99 <= 20ms`.
fn parse_constraint(text: &str) -> Result<Constraint, String> {
    let examples = "e.g. \"cv <= 5%\", \"stalls == 0\", \"sync_flush <= 1%\", \"p99 <= 20ms\"";
    let t = text.trim();
    let (name, op, value) = ["<=", "==", "<"]
        .iter()
        .find_map(|op| t.split_once(op).map(|(a, b)| (a.trim(), *op, b.trim())))
        .ok_or_else(|| format!("constraint {text:?} has no <=, < or ==: {examples}"))?;
    let metric = Metric::ALL
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, m, _)| *m)
        .ok_or_else(|| {
            let known: Vec<&str> = Metric::ALL.iter().map(|(n, _, _)| *n).collect();
            format!(
                "constraint {text:?}: unknown measure {name:?}, use one of {}",
                known.join(", ")
            )
        })?;
    let op = match op {
        "<=" => Op::Le,
        "<" => Op::Lt,
        _ => Op::Eq,
    };
    let bad = |why: &str| format!("constraint {text:?}: {why}");
    let bound = match metric {
        Metric::Cv | Metric::SyncFlush => {
            let n = value.strip_suffix('%').unwrap_or(value).trim();
            let v: f64 = n.parse().map_err(|_| bad("the bound is a percentage, e.g. 5%"))?;
            if !(0.0..=100.0).contains(&v) {
                return Err(bad("the bound is a percentage from 0% to 100%"));
            }
            v
        }
        Metric::Stalls => {
            let v: u32 = value
                .parse()
                .map_err(|_| bad("the bound is a count of stalls, e.g. 0"))?;
            f64::from(v)
        }
        Metric::P95 | Metric::P99 => {
            let d = bounds::parse_duration(value)
                .ok()
                .filter(|_| value.ends_with(|c: char| c.is_ascii_alphabetic()))
                .ok_or_else(|| bad("the bound is a time with its unit, e.g. 20ms or 1.5s"))?;
            if d.is_zero() {
                return Err(bad("the bound must be above zero"));
            }
            d.as_secs_f64() * 1e3
        }
    };
    if op == Op::Eq && metric != Metric::Stalls {
        return Err(bad("== is for counts (stalls == 0); bound this measure with <= or <"));
    }
    Ok(Constraint { metric, op, bound })
}

/// A parameter's domain: exactly one of `range`, `log_range` or `choice`, its values valid
/// for the setting.
fn parse_domain(
    name: &str,
    p: &Spanned<RawParameter>,
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<Domain, ExperimentError> {
    let r = p.get_ref();
    let given = [r.range.is_some(), r.log_range.is_some(), r.choice.is_some()]
        .iter()
        .filter(|g| **g)
        .count();
    if given != 1 {
        return Err(at(
            p.span(),
            format!(
                "{name}: give exactly one of range = [LOW, HIGH], log_range = [LOW, HIGH] (sizes such as \
                 [\"128M\", \"8G\"]) or choice = [VALUES]"
            ),
        ));
    }
    // Every value must be one the setting accepts (a size for a size setting, ...).
    let check = |values: &Spanned<Vec<Value>>| -> Result<Vec<String>, ExperimentError> {
        values
            .get_ref()
            .iter()
            .map(|v| setting(name, v).map_err(|m| at(values.span(), m)))
            .collect()
    };
    if let Some(values) = &r.choice {
        let texts = check(values)?;
        if texts.len() < 2 || texts.len() > MAX_CHOICES {
            return Err(at(
                values.span(),
                format!("{name}: a choice lists 2 to {MAX_CHOICES} values, got {}", texts.len()),
            ));
        }
        if let Some((_, twice)) = texts.iter().enumerate().find(|(i, t)| texts[..*i].contains(t)) {
            return Err(at(values.span(), format!("{name}: the choice lists {twice} twice")));
        }
        return Ok(Domain::Choice(texts));
    }
    let (values, log) = match (&r.range, &r.log_range) {
        (Some(v), _) => (v, false),
        (_, Some(v)) => (v, true),
        _ => unreachable!("exactly one of the three is given"),
    };
    let pair = |why: &str| at(values.span(), format!("{name}: {why}"));
    let [lo, hi] = values.get_ref().as_slice() else {
        return Err(pair("a range is two values, [LOW, HIGH]"));
    };
    check(values)?;
    // Sizes (`"128M"`), whole numbers, or (`range` only) any numbers.
    let bytes = |v: &Value| match v {
        Value::String(s) => parse_size(s),
        Value::Integer(i) => u64::try_from(*i).ok(),
        _ => None,
    };
    let sizes = matches!(lo, Value::String(_)) || matches!(hi, Value::String(_));
    if sizes || log {
        let (Some(l), Some(h)) = (bytes(lo), bytes(hi)) else {
            return Err(pair(if log {
                "a log_range is two whole numbers or sizes above zero, e.g. [\"128M\", \"8G\"] or [8, 4096]"
            } else {
                "a range of sizes is two sizes, e.g. [\"128M\", \"8G\"]"
            }));
        };
        if l >= h {
            return Err(pair(&format!(
                "the range's low end must be below its high end, got {} and {}",
                setting_text(lo),
                setting_text(hi)
            )));
        }
        if log {
            if l == 0 {
                return Err(pair("a log_range starts above zero"));
            }
            return Ok(Domain::LogInt {
                lo: l,
                hi: h,
                size: sizes,
            });
        }
        let (Ok(l), Ok(h)) = (i64::try_from(l), i64::try_from(h)) else {
            return Err(pair("the range is too large"));
        };
        return Ok(Domain::Int {
            lo: l,
            hi: h,
            size: true,
        });
    }
    match (lo, hi) {
        (Value::Integer(l), Value::Integer(h)) if l < h => Ok(Domain::Int {
            lo: *l,
            hi: *h,
            size: false,
        }),
        (Value::Integer(_) | Value::Float(_), Value::Integer(_) | Value::Float(_)) => {
            let f = |v: &Value| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap_or(f64::NAN);
            let (l, h) = (f(lo), f(hi));
            if !(l.is_finite() && h.is_finite() && l < h) {
                return Err(pair(&format!(
                    "the range's low end must be below its high end, got {} and {}",
                    setting_text(lo),
                    setting_text(hi)
                )));
            }
            Ok(Domain::Float { lo: l, hi: h })
        }
        _ => Err(pair(
            "a range is two numbers or two sizes, e.g. [10, 90] or [\"64M\", \"2G\"]",
        )),
    }
}

fn setting_text(v: &Value) -> String {
    setting_value(v).unwrap_or_else(|_| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_read_as_written_and_bad_ones_say_why() {
        let c = parse_constraint("cv <= 5%").unwrap();
        assert_eq!((c.metric, c.op, c.bound), (Metric::Cv, Op::Le, 5.0));
        assert_eq!(c.to_string(), "cv <= 5%");
        assert_eq!(parse_constraint(" stalls == 0 ").unwrap().to_string(), "stalls == 0");
        assert_eq!(parse_constraint("p99 < 1.5s").unwrap().to_string(), "p99 < 1500ms");
        assert_eq!(parse_constraint("sync_flush<=1").unwrap().bound, 1.0);
        for (bad, why) in [
            ("cv 5%", "has no <="),
            ("jitter <= 5%", "unknown measure \"jitter\", use one of cv, stalls"),
            ("cv <= 150%", "from 0% to 100%"),
            ("p99 <= 20", "a time with its unit"),
            ("cv == 5%", "== is for counts"),
            ("stalls <= many", "a count of stalls"),
        ] {
            let e = parse_constraint(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn sizes_are_written_in_their_largest_exact_unit() {
        assert_eq!(size_text(128 << 20), "128M");
        assert_eq!(size_text(8 << 30), "8G");
        assert_eq!(size_text(1536 << 20), "1536M");
        assert_eq!(size_text(1000), "1000");
    }
}

#[cfg(test)]
mod file_tests {
    use std::path::Path;

    use super::*;
    use crate::{Experiment, Plan};

    const BASE: &str = r#"
[[server]]
id = "mariadb-10.11"
settings = { innodb_log_file_size = "256M" }

[[workload]]
test = "oltp_read_write"
tables = 2
table_size = 10000
users = [16]
"#;

    const SEARCH: &str = r#"
[search]
objective = "max tps"
trials = 24
seed = 7
constraints = ["cv <= 5%", "stalls == 0", "sync_flush <= 1%"]
[search.parameters]
innodb_buffer_pool_size = { log_range = ["128M", "8G"] }
innodb_max_dirty_pages_pct = { range = [10, 90] }
innodb_flush_neighbors = { choice = [0, 1, 2] }
"#;

    fn parse(text: &str) -> Result<Experiment, String> {
        Experiment::parse(text, Path::new("tune.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn the_documented_search_reads_as_written_and_plans() {
        let e = parse(&format!("{BASE}{SEARCH}")).unwrap();
        let s = e.search.as_ref().unwrap();
        assert_eq!(s.objective, Objective::MaxTps);
        assert_eq!((s.trials, s.time, s.seed), (Some(24), None, 7));
        let constraints: Vec<String> = s.constraints.iter().map(|c| c.to_string()).collect();
        assert_eq!(constraints, ["cv <= 5%", "stalls == 0", "sync_flush <= 1%"]);
        let domains: Vec<(&str, &Domain)> = s.parameters.iter().map(|p| (p.name.as_str(), &p.domain)).collect();
        assert_eq!(
            domains,
            [
                (
                    "innodb_buffer_pool_size",
                    &Domain::LogInt {
                        lo: 128 << 20,
                        hi: 8 << 30,
                        size: true
                    }
                ),
                (
                    "innodb_flush_neighbors",
                    &Domain::Choice(vec!["0".into(), "1".into(), "2".into()])
                ),
                (
                    "innodb_max_dirty_pages_pct",
                    &Domain::Int {
                        lo: 10,
                        hi: 90,
                        size: false
                    }
                ),
            ]
        );
        assert_eq!(s.space_size(), Some(((8u64 << 30) - (128 << 20) + 1) * 3 * 81));
        let text = Plan::new(e).render();
        for line in [
            "a settings search",
            "max tps on mariadb-10.11, oltp_read_write at 16 users",
            "every trial: innodb_log_file_size=256M",
            "innodb_buffer_pool_size",
            "128M .. 8G, log scale",
            "one of 0, 1, 2",
            "10 .. 90, whole numbers",
            "constraints: cv <= 5%, stalls == 0, sync_flush <= 1%",
            "budget: 24 trials; seed 7",
            "confirmed against the defaults: 3 run(s) each, interleaved",
            "trial 1: the server's defaults",
            "estimated time:",
        ] {
            assert!(text.contains(line), "{line:?} missing from\n{text}");
        }
    }

    #[test]
    fn a_range_of_sizes_stays_in_sizes() {
        let text = format!("{BASE}{}", SEARCH.replace("log_range = [\"128M\"", "range = [\"128M\""));
        let e = parse(&text).unwrap();
        let pool = &e.search.as_ref().unwrap().parameters[0];
        assert_eq!(pool.domain.to_string(), "128M .. 8G");
        assert_eq!(pool.domain.first_value(), "128M");
    }

    #[test]
    fn a_time_budget_caps_the_estimate() {
        let text = format!("{BASE}{}", SEARCH.replace("trials = 24", "trials = 500\ntime = \"2h\""));
        let plan = Plan::new(parse(&text).unwrap()).render();
        assert!(
            plan.contains("budget: 500 trials or 2h 00m, whichever ends first"),
            "{plan}"
        );
        assert!(plan.contains("trials and confirmation 2h 00m"), "{plan}");
    }

    /// Each edit of the documented file, and where and why it is refused.
    #[test]
    fn mistakes_are_refused_at_their_place_with_what_to_do() {
        let cases: &[(&str, &str, &str, &str)] = &[
            (
                "objective = \"max tps\"",
                "objective = \"fastest\"",
                "tune.toml:3:",
                "unknown objective \"fastest\": use one of max tps, max notpm",
            ),
            (
                "objective = \"max tps\"",
                "objective = \"max notpm\"",
                "tune.toml:3:",
                "a sysbench workload does not report notpm: use objective = \"max tps\"",
            ),
            (
                "objective = \"max tps\"",
                "objective = \"min p99\"",
                "tune.toml:3:",
                "min p99 needs a fixed arrival rate: give the workload one, e.g. options = { rate = 2000 }",
            ),
            (
                "objective = \"max tps\"\n",
                "",
                "tune.toml:2:",
                "[search] needs an `objective`, e.g. objective = \"max tps\"",
            ),
            ("trials = 24\n", "", "tune.toml:2:", "[search] needs a budget"),
            (
                "trials = 24",
                "trials = 0",
                "tune.toml:4:",
                "trials must be 1 to 1000, got 0",
            ),
            (
                "trials = 24",
                "time = \"10s\"",
                "tune.toml:4:",
                "time is the whole search's budget, at least a minute",
            ),
            (
                "\"cv <= 5%\"",
                "\"cv is low\"",
                "tune.toml:6:",
                "constraint \"cv is low\" has no <=, < or ==",
            ),
            (
                "[\"128M\", \"8G\"]",
                "[\"8G\", \"128M\"]",
                "tune.toml:8:",
                "innodb_buffer_pool_size: the range's low end must be below its high end, got 8G and 128M",
            ),
            (
                "[\"128M\", \"8G\"]",
                "[\"lots\", \"8G\"]",
                "tune.toml:8:",
                "setting innodb_buffer_pool_size: \"lots\" is not a size",
            ),
            (
                "{ range = [10, 90] }",
                "{ range = [10, 90], choice = [1, 2] }",
                "tune.toml:9:",
                "innodb_max_dirty_pages_pct: give exactly one of range",
            ),
            (
                "{ range = [10, 90] }",
                "{ range = [10] }",
                "tune.toml:9:",
                "a range is two values, [LOW, HIGH]",
            ),
            (
                "{ range = [10, 90] }",
                "{ log_range = [0, 90] }",
                "tune.toml:9:",
                "a log_range starts above zero",
            ),
            (
                "choice = [0, 1, 2]",
                "choice = [0, 1, 1]",
                "tune.toml:10:",
                "the choice lists 1 twice",
            ),
            (
                "choice = [0, 1, 2]",
                "choice = [0]",
                "tune.toml:10:",
                "a choice lists 2 to 100 values, got 1",
            ),
            (
                "{ choice = [0, 1, 2] }",
                "{ steps = 3 }",
                "tune.toml:10:",
                "unknown field `steps`",
            ),
        ];
        for (from, to, place, message) in cases {
            assert!(SEARCH.contains(from), "{from}");
            // Line numbers count from the [search] line: the base is appended after it.
            let text = format!("{}{BASE}", SEARCH.replacen(from, to, 1));
            let err = parse(&text).unwrap_err();
            assert!(err.contains(place) && err.contains(message), "{from} -> {to}: {err}");
        }
    }

    #[test]
    fn a_search_tunes_one_server_for_one_workload_at_one_user_count() {
        let base_cases: &[(&str, &str, &str)] = &[
            (
                "users = [16]",
                "users = [1, 16]",
                "a [search] measures at one user count, and the workload lists 2",
            ),
            (
                "id = \"mariadb-10.11\"",
                "id = \"mariadb-10.11\"\n[[server]]\nid = \"mysql-8.0.31\"",
                "a [search] tunes one server",
            ),
            (
                "settings = { innodb_log_file_size = \"256M\" }",
                "settings = { innodb_max_dirty_pages_pct = 75 }",
                "innodb_max_dirty_pages_pct is searched, but the [[server]] sets innodb_max_dirty_pages_pct = 75",
            ),
            (
                "users = [16]",
                "users = [16]\n[variants]\ninnodb_doublewrite = [\"ON\", \"OFF\"]",
                "a [search] makes its own variants",
            ),
        ];
        for (from, to, message) in base_cases {
            let text = format!("{}{SEARCH}", BASE.replacen(from, to, 1));
            let err = parse(&text).unwrap_err();
            assert!(err.contains(message), "{from} -> {to}: {err}");
        }
        // TPC-C: notpm fits; p99 only with paced terminals.
        let tpcc = "[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"tpcc\"\nwarehouses = 2\nusers = [8]\n";
        let search = SEARCH.replace("max tps", "max notpm");
        assert_eq!(
            parse(&format!("{tpcc}{search}")).unwrap().search.unwrap().objective,
            Objective::MaxNotpm
        );
        let err = parse(&format!("{tpcc}{}", SEARCH.replace("max tps", "min p99"))).unwrap_err();
        assert!(err.contains("TPC-C paces its terminals with mode = \"spec\""), "{err}");
        // A fixed rate makes min p99 possible.
        let rated = BASE.replace("users = [16]", "users = [16]\noptions = { rate = 500 }");
        let e = parse(&format!("{rated}{}", SEARCH.replace("max tps", "min p99"))).unwrap();
        assert_eq!(e.search.unwrap().objective, Objective::MinP99);
    }
}
