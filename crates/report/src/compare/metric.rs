//! `--metric` of `dbperf compare` and `dbperf lab report`: which of the runs' own figures
//! ([`dbperf_results::figures`]) fills the cells, its unit and direction, parsed from and
//! printed as the name the catalog's `metrics` table uses; and [`Metric::own`], the figures a
//! workload is judged by (what `dbperf report` and the HTML experiment report compare).

use serde::Serialize;

use super::RunInfo;

/// The number compared: the run's own figures ([`dbperf_results::figures`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    /// Transactions per second (higher is better).
    Tps,
    /// Statements per second (higher is better).
    Qps,
    /// 95th percentile response time, ms (lower is better).
    P95,
    /// 99th percentile response time, ms (lower is better).
    P99,
    /// LinkBench requests per second.
    Rps,
    /// TPC-C New-Order transactions per minute.
    Notpm,
    /// TPC-C tpmC (a spec-mode run that qualifies).
    Tpmc,
    /// One transaction type's (LinkBench operation's) percentile, ms: `p99:ADD_LINK`.
    TypeLatency {
        /// 95 or 99.
        pct: u8,
        /// The type as `summary.json` names it.
        name: String,
    },
    /// TPC-H query seconds, 1..=22.
    Query(u8),
    /// Every TPC-H query's seconds, one row per query, and the geometric mean: the DBT-3 table.
    Queries,
    /// TPC-H power: geometric mean of the query seconds of a repetition.
    Geomean,
    /// TPC-H Power@Size.
    Power,
    /// TPC-H Throughput@Size.
    Throughput,
}

/// The forms `--metric` accepts, for messages and `--help`.
pub const METRIC_FORMS: &str = "tps, qps, p95, p99 (every workload but TPC-H); p95:TYPE, p99:TYPE (a transaction \
type or LinkBench operation, e.g. p99:ADD_LINK); rps (LinkBench); notpm, tpmc (TPC-C); q1..q22, geomean, power \
(TPC-H power), q1..q22, throughput (TPC-H throughput); queries (TPC-H: one row per query and the geomean)";

impl std::str::FromStr for Metric {
    type Err = String;

    fn from_str(given: &str) -> Result<Metric, String> {
        let lower = given.to_ascii_lowercase();
        let m = match lower.as_str() {
            "tps" => Metric::Tps,
            "qps" => Metric::Qps,
            "p95" => Metric::P95,
            "p99" => Metric::P99,
            "rps" => Metric::Rps,
            "notpm" => Metric::Notpm,
            "tpmc" => Metric::Tpmc,
            "geomean" => Metric::Geomean,
            "power" => Metric::Power,
            "throughput" => Metric::Throughput,
            "queries" => Metric::Queries,
            _ => {
                if let Some(n) = lower.strip_prefix('q').and_then(|n| n.parse::<u8>().ok()) {
                    if (1..=22).contains(&n) {
                        return Ok(Metric::Query(n));
                    }
                }
                let typed = ["p95:", "p99:"].iter().find(|p| lower.starts_with(*p));
                match typed {
                    Some(p) if given.len() > p.len() => Metric::TypeLatency {
                        pct: if *p == "p95:" { 95 } else { 99 },
                        name: given[p.len()..].to_string(),
                    },
                    _ => return Err(format!("unknown metric {given:?}: give one of {METRIC_FORMS}")),
                }
            }
        };
        Ok(m)
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Metric::TypeLatency { pct, name } => write!(f, "p{pct}:{name}"),
            Metric::Query(n) => write!(f, "q{n}"),
            other => f.write_str(match other {
                Metric::Tps => "tps",
                Metric::Qps => "qps",
                Metric::P95 => "p95",
                Metric::P99 => "p99",
                Metric::Rps => "rps",
                Metric::Notpm => "notpm",
                Metric::Tpmc => "tpmc",
                Metric::Geomean => "geomean",
                Metric::Power => "power",
                Metric::Queries => "queries",
                _ => "throughput",
            }),
        }
    }
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Metric {
    /// The name, as `--metric` takes it and the catalog's `metrics` table stores it.
    pub fn name(&self) -> String {
        self.to_string()
    }

    /// Unit of the cells.
    pub fn unit(&self) -> &'static str {
        match self {
            Metric::Tps => "trx/s",
            Metric::Qps => "statements/s",
            Metric::P95 | Metric::P99 | Metric::TypeLatency { .. } => "ms",
            Metric::Rps => "requests/s",
            Metric::Notpm | Metric::Tpmc => "New-Orders/min",
            Metric::Query(_) | Metric::Geomean | Metric::Queries => "s",
            Metric::Power | Metric::Throughput => "queries/h x SF",
        }
    }

    /// Throughput: higher is better; latency and seconds: lower is better.
    pub fn higher_is_better(&self) -> bool {
        matches!(
            self,
            Metric::Tps | Metric::Qps | Metric::Rps | Metric::Notpm | Metric::Tpmc | Metric::Power | Metric::Throughput
        )
    }

    /// The metric's samples in one run; `None` when the run does not have it (always for
    /// [`Metric::Queries`], which is one row per query).
    pub fn of<'a>(&self, r: &'a RunInfo) -> Option<&'a [f64]> {
        r.figures.get(&self.name()).map(Vec::as_slice)
    }

    /// Whether the run has the metric (for [`Metric::Queries`]: any query's seconds).
    pub(super) fn in_run(&self, r: &RunInfo) -> bool {
        match self {
            Metric::Queries => (1..=22).any(|q| r.figures.contains_key(&format!("q{q}"))),
            m => m.of(r).is_some(),
        }
    }

    /// The figures runs of `workload` are compared by, the headline first: NOTPM (and tpmC
    /// when every run qualified) for TPC-C; requests/s and p99 for LinkBench; the per-query
    /// table with its geometric mean and Power@Size (each when every run has it) for a TPC-H power
    /// test; Throughput@Size for a TPC-H throughput test; TPS and p99 otherwise (sysbench,
    /// pgbench). `runs` are the runs of that workload.
    pub fn own(workload: &str, runs: &[RunInfo]) -> Vec<Metric> {
        let every = |m: &Metric| !runs.is_empty() && runs.iter().all(|r| m.in_run(r));
        let (mut metrics, optional) = match workload {
            "tpcc" => (vec![Metric::Notpm], vec![Metric::Tpmc]),
            "linkbench" => (vec![Metric::Rps, Metric::P99], vec![]),
            w if w.starts_with("tpch") => {
                if w == "tpch-throughput" || runs.iter().any(|r| Metric::Throughput.in_run(r)) {
                    (vec![Metric::Throughput], vec![])
                } else {
                    // Both only where every run has them: a run whose queries all timed
                    // out has no query seconds (the DBT-3 table shows it as >T).
                    (vec![], vec![Metric::Queries, Metric::Power])
                }
            }
            _ => (vec![Metric::Tps, Metric::P99], vec![]),
        };
        metrics.extend(optional.into_iter().filter(every));
        metrics
    }

    /// The rows' header: `query` for [`Metric::Queries`], else `threads`.
    pub fn row_header(&self) -> &'static str {
        match self {
            Metric::Queries => "query",
            _ => "threads",
        }
    }
}
