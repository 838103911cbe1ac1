//! Each run's own figures by name, read typed from the files its workload wrote: what
//! `dbperf compare --metric` and `dbperf lab report --metric` compare, and what the catalog's
//! `metrics` table holds. Every figure is a list of samples (one per repetition or stream
//! inside the run; one for a whole-run figure), so a cell can give median and min..max.
//!
//! | name | from | workloads |
//! |---|---|---|
//! | `tps`, `qps`, `p95`, `p99` | `summary.json` | every workload that writes it (not TPC-H) |
//! | `p95:TYPE`, `p99:TYPE` | `summary.json` per transaction type / operation | TPC-C, LinkBench, sysbench, pgbench |
//! | `rps` | `summary.json` (requests = transactions) | LinkBench |
//! | `notpm`, `tpmc` | `tpcc.json` (`tpmc` only for a run that qualifies) | TPC-C |
//! | `q1`..`q22` | `tpch.json`: each finished execution's seconds | TPC-H power and throughput |
//! | `geomean` | `tpch.json`: per power repetition, the geometric mean of its query seconds | TPC-H power |
//! | `power` | `tpch.json`: Power@Size per repetition | TPC-H power |
//! | `throughput` | `tpch.json`: Throughput@Size | TPC-H throughput |

use std::collections::BTreeMap;

use super::summary::Summary;
use super::tpcc::{TpccResult, TPCC_FILE};
use super::tpch::{QueryTiming, Status, TpchReport};
use super::{ResultsError, RunDir};
use dbperf_core::stats;

/// A run's figures: name -> samples (never empty).
pub type Figures = BTreeMap<String, Vec<f64>>;

/// The figures of the run in `dir`, from its summary (if it wrote one) and its workload's own
/// result files. A missing file gives no figures; one that cannot be read (malformed, or from a
/// dbperf that wrote another format) gives none either and is returned beside them, so the
/// run's other figures stay usable and a caller can say why a figure is missing.
pub fn read(dir: &RunDir, summary: Option<&Summary>) -> (Figures, Vec<ResultsError>) {
    let mut f = Figures::new();
    let mut unreadable = Vec::new();
    if let Some(s) = summary {
        from_summary(&mut f, s);
    }
    let tpcc = dir.file(TPCC_FILE).and_then(|p| match p.is_file() {
        true => dir.read_json::<TpccResult>(TPCC_FILE).map(Some),
        false => Ok(None),
    });
    match tpcc {
        Ok(Some(t)) => from_tpcc(&mut f, &t),
        Ok(None) => {}
        Err(e) => unreadable.push(e),
    }
    match TpchReport::read(dir) {
        Ok(Some(r)) => from_tpch(&mut f, &r),
        Ok(None) => {}
        Err(e) => unreadable.push(e),
    }
    (f, unreadable)
}

fn put(f: &mut Figures, name: impl Into<String>, values: Vec<f64>) {
    if !values.is_empty() {
        f.insert(name.into(), values);
    }
}

/// `tps`, `qps`, `p95`, `p99`, per type `p95:TYPE`/`p99:TYPE`, and `rps` for LinkBench.
pub fn from_summary(f: &mut Figures, s: &Summary) {
    put(f, "tps", vec![s.transactions.per_sec]);
    put(f, "qps", vec![s.queries.per_sec]);
    put(f, "p95", vec![s.latency_ms.p95]);
    put(f, "p99", vec![s.latency_ms.p99]);
    if s.workload == "linkbench" {
        put(f, "rps", vec![s.transactions.per_sec]);
    }
    for (name, t) in &s.per_type {
        if t.count > 0 {
            put(f, format!("p95:{name}"), vec![t.latency_ms.p95]);
            put(f, format!("p99:{name}"), vec![t.latency_ms.p99]);
        }
    }
}

/// `notpm`, and `tpmc` when the run qualifies for one.
pub fn from_tpcc(f: &mut Figures, t: &TpccResult) {
    put(f, "notpm", vec![t.notpm]);
    if let Some(tpmc) = t.tpmc {
        put(f, "tpmc", vec![tpmc]);
    }
}

/// Per query `qN` (every finished execution), `geomean` and `power` per power repetition,
/// `throughput` for a throughput test.
pub fn from_tpch(f: &mut Figures, r: &TpchReport) {
    let timings: Vec<&QueryTiming> = match r {
        TpchReport::Power(p) => p.runs.iter().flat_map(|run| &run.queries).collect(),
        TpchReport::Throughput(t) => t.streams.iter().flat_map(|s| &s.queries).collect(),
    };
    for q in 1..=22u8 {
        let secs = timings
            .iter()
            .filter(|t| t.query == q && t.status == Status::Ok)
            .map(|t| t.seconds)
            .collect();
        put(f, format!("q{q}"), secs);
    }
    match r {
        TpchReport::Power(p) => {
            // A repetition with a query that did not finish, or cut short by Ctrl-C before
            // its stream's last query, has no geometric mean.
            let geomeans = p
                .runs
                .iter()
                .filter(|run| {
                    !run.queries.is_empty()
                        && run.queries.len() >= p.stream_order.len()
                        && run.queries.iter().all(|t| t.status == Status::Ok)
                })
                .filter_map(|run| stats::geomean(&run.queries.iter().map(|t| t.seconds).collect::<Vec<_>>()))
                .collect();
            put(f, "geomean", geomeans);
            put(f, "power", p.runs.iter().filter_map(|run| run.power_at_size).collect());
        }
        TpchReport::Throughput(t) => {
            put(f, "throughput", t.throughput_at_size.into_iter().collect());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{sample, LatencyBlock, TypeBlock, TypeKind};

    #[test]
    fn linkbench_gets_rps_and_per_operation_percentiles() {
        let mut s = sample("r", "linkbench", 4, 500.0, 2.0);
        let op = |count, p99| TypeBlock {
            kind: TypeKind::Transaction,
            count,
            latency_ms: LatencyBlock {
                p99,
                ..LatencyBlock::default()
            },
            service_time_ms: None,
        };
        s.per_type.insert("ADD_LINK".into(), op(100, 7.5));
        // An operation the mix never ran has no figure.
        s.per_type.insert("DELETE_NODE".into(), op(0, 0.0));
        let mut f = Figures::new();
        from_summary(&mut f, &s);
        assert_eq!(f["rps"], vec![500.0]);
        assert_eq!(f["tps"], vec![500.0]);
        assert_eq!(f["p99:ADD_LINK"], vec![7.5]);
        assert!(!f.contains_key("p99:DELETE_NODE"));
        // Other workloads have no `rps`.
        let mut g = Figures::new();
        from_summary(&mut g, &sample("r", "oltp_read_only", 4, 500.0, 2.0));
        assert!(!g.contains_key("rps") && g.contains_key("tps"));
    }

    #[test]
    fn tpcc_has_a_tpmc_only_when_the_run_qualifies() {
        let json = |tpmc: &str| {
            format!(
                r#"{{"warehouses": 1, "measured_s": 60.0, "notpm": 12.5, "tpmc": {tpmc}, "why_no_tpmc": [],
                    "tpm_total": 28.0, "types": {{}}, "rollbacks": 0, "retries": 0, "errors": {{}},
                    "mix": "holds", "response_times_ok": true, "delivery": "inline"}}"#
            )
        };
        let mut f = Figures::new();
        from_tpcc(&mut f, &serde_json::from_str(&json("null")).unwrap());
        // A malformed tpcc.json: no TPC-C figures, the summary's still there, the file named.
        let root = tempfile::tempdir().unwrap();
        let dir = RunDir::create(root.path(), "tpcc").unwrap();
        std::fs::write(dir.path().join(TPCC_FILE), "{\"notpm\": 1}").unwrap();
        let (g, unreadable) = read(&dir, Some(&sample("r", "tpcc", 1, 5.0, 1.0)));
        assert!(g.contains_key("tps") && !g.contains_key("notpm"));
        assert!(unreadable[0].to_string().contains(TPCC_FILE), "{}", unreadable[0]);
        assert_eq!((f["notpm"].clone(), f.contains_key("tpmc")), (vec![12.5], false));
        from_tpcc(&mut f, &serde_json::from_str(&json("12.5")).unwrap());
        assert_eq!(f["tpmc"], vec![12.5]);
    }

    #[test]
    fn an_interrupted_power_repetition_has_query_figures_but_no_geomean() {
        use crate::tpch::{Cold, PowerReport, PowerRun};
        let order: Vec<u8> = (1..=22).collect();
        let run = |rep, n: usize| PowerRun {
            rep,
            refresh_set: None,
            rf1_seconds: None,
            rf2_seconds: None,
            queries: order[..n]
                .iter()
                .enumerate()
                .map(|(i, &q)| QueryTiming {
                    query: q,
                    position: i + 1,
                    seconds: 2.0,
                    status: Status::Ok,
                    error: None,
                    rows: 1,
                })
                .collect(),
            power_at_size: None,
            cold_notes: Vec::new(),
        };
        let report = PowerReport {
            schema: "dbperf.tpch/1".into(),
            test: "power".into(),
            scale_factor: 0.01,
            seed: 1,
            validation: false,
            server_version: "11.4.5-MariaDB".into(),
            timeout_seconds: None,
            cold: Cold::Off,
            stream_order: order.clone(),
            runs: vec![run(1, 22), run(2, 5)],
            queries: Vec::new(),
            power_at_size: None,
            interrupted: true,
        };
        let mut f = Figures::new();
        from_tpch(&mut f, &TpchReport::Power(report));
        assert_eq!(f["geomean"].len(), 1, "only the whole repetition: {:?}", f["geomean"]);
        assert_eq!(f["q1"].len(), 2, "both executions of Q1 finished");
        assert_eq!(f["q22"].len(), 1);
    }
}
