//! `summary.json` as written by `dbperf::results` must satisfy `docs/summary.schema.json`, and the
//! schema must reject what breaks the contract.

use std::collections::BTreeMap;

use dbperf::results::summary::{
    client_usage, Arrival, ErrorCounts, LatencyBlock, QueryCounts, ServerSummary, Summary, Throughput, TypeBlock,
    TypeKind, SUMMARY_FILE, SUMMARY_SCHEMA,
};
use dbperf::results::RunDir;
use hdrhistogram::Histogram;
use serde_json::Value;

const SCHEMA_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/summary.schema.json");

fn schema() -> Value {
    let text = std::fs::read_to_string(SCHEMA_PATH).expect("read docs/summary.schema.json");
    serde_json::from_str(&text).expect("schema is JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema()).expect("schema compiles")
}

fn errors(instance: &Value) -> Vec<String> {
    validator()
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// A histogram of microseconds shaped like real OLTP latency: most fast, a slow tail.
fn histogram(base_us: u64, n: u64) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for i in 0..n {
        let tail = if i % 100 == 0 { 40 } else { 1 };
        h.record(base_us * tail + (i * 37) % base_us).unwrap();
    }
    h
}

fn open_loop_summary() -> Summary {
    let duration_s = 60.0;
    let response = histogram(2_000, 10_000);
    let service = histogram(1_500, 10_000);
    let per_type = BTreeMap::from([
        (
            "new_order".to_string(),
            TypeBlock {
                kind: TypeKind::Transaction,
                count: 4_500,
                latency_ms: LatencyBlock::from_histogram(&histogram(3_000, 4_500)),
                service_time_ms: Some(LatencyBlock::from_histogram(&histogram(2_500, 4_500))),
            },
        ),
        (
            "payment".to_string(),
            TypeBlock {
                kind: TypeKind::Transaction,
                count: 4_300,
                latency_ms: LatencyBlock::from_histogram(&histogram(1_000, 4_300)),
                service_time_ms: Some(LatencyBlock::from_histogram(&histogram(800, 4_300))),
            },
        ),
        (
            "stock_level".to_string(),
            TypeBlock {
                kind: TypeKind::Statement,
                count: 0,
                latency_ms: LatencyBlock::from_histogram(&Histogram::new(3).unwrap()),
                service_time_ms: None,
            },
        ),
    ]);
    Summary {
        schema: SUMMARY_SCHEMA.to_string(),
        workload: "tpcc".to_string(),
        run_id: "20240309-070501-tpcc-3f9a".to_string(),
        duration_s,
        warmup_s: 10.0,
        threads: 16,
        rate: Some(200.0),
        arrival: Some(Arrival::Poisson),
        rand_type: "uniform".to_string(),
        transactions: Throughput::new(10_000, duration_s),
        queries: QueryCounts::new(120_000, 80_000, 20_000, duration_s),
        errors: ErrorCounts::new(BTreeMap::from([
            ("deadlock".to_string(), 12),
            ("lock_wait_timeout".to_string(), 3),
            ("ignored".to_string(), 95),
        ])),
        retries: 15,
        retried: 12,
        failed: 2,
        skipped: 7,
        reconnects: 0,
        latency_ms: LatencyBlock::from_histogram(&response),
        service_time_ms: Some(LatencyBlock::from_histogram(&service)),
        late_starts: 42,
        backlog_at_end: 1,
        per_type,
        client: client_usage(),
        server: ServerSummary {
            version: Some("11.4.2-MariaDB".to_string()),
        },
        interrupted: false,
        intervals: 60,
        server_unreachable_s: 0.0,
        server_unreachable_at_end: false,
        server_lost: false,
        steady_warmup: None,
    }
}

fn closed_loop_summary() -> Summary {
    Summary {
        rate: None,
        arrival: None,
        service_time_ms: None,
        late_starts: 0,
        backlog_at_end: 0,
        server: ServerSummary { version: None },
        interrupted: true,
        ..open_loop_summary()
    }
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    jsonschema::meta::validate(&schema()).expect("schema passes the meta-schema");
}

#[test]
fn open_loop_summary_is_valid() {
    let json = serde_json::to_value(open_loop_summary()).unwrap();
    assert_eq!(errors(&json), Vec::<String>::new());
    assert_eq!(json["arrival"], "poisson");
    assert_eq!(json["per_type"]["new_order"]["kind"], "transaction");
    let latency = &json["latency_ms"];
    assert!(latency["p99"].as_f64() >= latency["p50"].as_f64());
    assert_eq!(latency["count"], 10_000);
}

#[test]
fn closed_loop_summary_with_nulls_is_valid() {
    let json = serde_json::to_value(closed_loop_summary()).unwrap();
    assert!(json["rate"].is_null() && json["arrival"].is_null());
    assert!(json["service_time_ms"].is_null() && json["server"]["version"].is_null());
    assert_eq!(errors(&json), Vec::<String>::new());
}

#[test]
fn summary_written_to_a_run_directory_is_valid_and_reads_back() {
    let root = tempfile::tempdir().unwrap();
    let dir = RunDir::create(root.path(), "tpcc").unwrap();
    let summary = Summary {
        run_id: dir.run_id().to_string(),
        ..open_loop_summary()
    };
    dir.write_json(SUMMARY_FILE, &summary).unwrap();
    let on_disk: Value = dir.read_json(SUMMARY_FILE).unwrap();
    assert_eq!(errors(&on_disk), Vec::<String>::new());
    let back: Summary = dir.read_json(SUMMARY_FILE).unwrap();
    assert_eq!(back, summary);
}

#[test]
fn schema_requires_exactly_the_keys_the_summary_writes() {
    let json = serde_json::to_value(open_loop_summary()).unwrap();
    let mut written: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    let schema = schema();
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    written.sort_unstable();
    required.sort_unstable();
    assert_eq!(written, required);
}

#[test]
fn missing_latency_is_rejected() {
    let mut json = serde_json::to_value(open_loop_summary()).unwrap();
    json.as_object_mut().unwrap().remove("latency_ms");
    let errs = errors(&json);
    assert!(errs.iter().any(|e| e.contains("latency_ms")), "{errs:?}");
}

#[test]
fn string_threads_is_rejected() {
    let mut json = serde_json::to_value(open_loop_summary()).unwrap();
    json["threads"] = Value::String("16".to_string());
    let errs = errors(&json);
    assert!(errs.iter().any(|e| e.contains("/threads")), "{errs:?}");
}

/// A description and a change that must make a valid summary invalid.
type Breakage = (&'static str, fn(&mut Value));

#[test]
fn other_contract_breaks_are_rejected() {
    let base = serde_json::to_value(open_loop_summary()).unwrap();
    let broken: [Breakage; 6] = [
        ("wrong schema version", |j| j["schema"] = "dbperf.summary/2".into()),
        ("unknown arrival", |j| j["arrival"] = "bursty".into()),
        ("negative count", |j| j["transactions"]["total"] = (-1).into()),
        ("fractional count", |j| j["latency_ms"]["count"] = 1.5.into()),
        ("bad kind", |j| j["per_type"]["payment"]["kind"] = "query".into()),
        ("missing p999", |j| {
            j["service_time_ms"].as_object_mut().unwrap().remove("p999");
        }),
    ];
    let validator = validator();
    for (what, breaks) in broken {
        let mut json = base.clone();
        breaks(&mut json);
        assert!(!validator.is_valid(&json), "{what} should be rejected");
    }
}
