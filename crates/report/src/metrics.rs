//! Live metrics for Prometheus (`--metrics-addr 127.0.0.1:PORT`): the run's throughput, latency
//! quantiles, errors and telemetry as of its last interval and sample, served at `/metrics` in
//! the OpenMetrics text format while the run goes, so Grafana or PMM can watch it.
//!
//! [`LiveMetrics`] is updated when the run starts (connections open, warmup or not), once per
//! stored interval (every second, whatever the report interval; warmup included, with
//! `dbperf_warmup 1`) and once per telemetry sample (never per query); [`MetricsServer`] serves
//! it from a thread of its own.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;

use dbperf_results::interval::IntervalRecord;
use dbperf_results::telemetry::TelemetryRow;

type Labels = Vec<(String, String)>;
type GaugeF = Gauge<f64, AtomicU64>;
type CounterF = Counter<f64, AtomicU64>;

/// The OpenMetrics content type `/metrics` answers with.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The metrics of one run.
pub struct LiveMetrics {
    registry: Mutex<Registry>,
    info: Family<Labels, GaugeF>,
    threads: GaugeF,
    warmup: GaugeF,
    transactions: CounterF,
    queries: CounterF,
    errors: Family<Labels, CounterF>,
    throughput: Family<Labels, GaugeF>,
    latency: Family<Labels, GaugeF>,
    server: Family<Labels, GaugeF>,
    status_rates: Family<Labels, GaugeF>,
    waits: Family<Labels, GaugeF>,
    cpu: Family<Labels, GaugeF>,
    disk: Family<Labels, GaugeF>,
    client: Family<Labels, GaugeF>,
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

impl LiveMetrics {
    /// Metrics for the run `run_id` of `workload` against `server_version`.
    pub fn new(run_id: &str, workload: &str, server_version: &str) -> Arc<LiveMetrics> {
        let m = LiveMetrics {
            registry: Mutex::new(Registry::default()),
            info: Family::default(),
            threads: GaugeF::default(),
            warmup: GaugeF::default(),
            transactions: CounterF::default(),
            queries: CounterF::default(),
            errors: Family::default(),
            throughput: Family::default(),
            latency: Family::default(),
            server: Family::default(),
            status_rates: Family::default(),
            waits: Family::default(),
            cpu: Family::default(),
            disk: Family::default(),
            client: Family::default(),
        };
        m.info
            .get_or_create(&labels(&[
                ("run_id", run_id),
                ("workload", workload),
                ("server_version", server_version),
            ]))
            .set(1.0);
        {
            let mut r = m.registry.lock().expect("metrics registry");
            r.register("dbperf_run_info", "The run being measured (value 1)", m.info.clone());
            r.register(
                "dbperf_threads",
                "Client connections in the last interval",
                m.threads.clone(),
            );
            r.register("dbperf_warmup", "1 while the run is in its warmup", m.warmup.clone());
            r.register("dbperf_transactions", "Completed transactions", m.transactions.clone());
            r.register("dbperf_queries", "Statements executed", m.queries.clone());
            r.register("dbperf_errors", "Failed attempts by error class", m.errors.clone());
            r.register(
                "dbperf_throughput_per_second",
                "Last interval's rates: kind=transactions|queries|errors|reconnects",
                m.throughput.clone(),
            );
            r.register(
                "dbperf_latency_seconds",
                "Last interval's response time (from the intended start) at a quantile; quantile=1 is the max",
                m.latency.clone(),
            );
            r.register(
                "dbperf_server",
                "Last telemetry sample's server figures (checkpoint age, dirty pages, flushing, ...)",
                m.server.clone(),
            );
            r.register(
                "dbperf_server_status_rate",
                "Per-second rates of the changing SHOW GLOBAL STATUS counters",
                m.status_rates.clone(),
            );
            r.register(
                "dbperf_server_wait_seconds_per_second",
                "Performance Schema top waits: wait time per second of the last sample",
                m.waits.clone(),
            );
            r.register(
                "dbperf_os_cpu_percent",
                "Host CPU time by core and state",
                m.cpu.clone(),
            );
            r.register(
                "dbperf_os_disk",
                "Per-device I/O figures as iostat -x shows them",
                m.disk.clone(),
            );
            r.register(
                "dbperf_client",
                "dbperf's own cost: cpu_percent of one core, rss_bytes",
                m.client.clone(),
            );
        }
        Arc::new(m)
    }

    /// The run started: its connections are open and it is measuring (or warming up).
    pub fn start(&self, connections: usize, warmup: bool) {
        self.threads.set(connections as f64);
        self.warmup.set(if warmup { 1.0 } else { 0.0 });
    }

    /// Takes a finished interval.
    pub fn interval(&self, r: &IntervalRecord) {
        let len = (r.end_s - r.start_s).max(0.0);
        self.threads.set(r.threads as f64);
        self.warmup.set(if r.warmup { 1.0 } else { 0.0 });
        self.transactions.inc_by(r.transactions as f64);
        self.queries.inc_by((r.qps * len).round());
        for (class, n) in &r.errors {
            self.errors
                .get_or_create(&labels(&[("class", class)]))
                .inc_by(*n as f64);
        }
        for (kind, v) in [
            ("transactions", r.tps),
            ("queries", r.qps),
            ("errors", r.errors_per_sec),
            ("reconnects", r.reconnects_per_sec),
        ] {
            self.throughput.get_or_create(&labels(&[("kind", kind)])).set(v);
        }
        let l = &r.latency_ms;
        for (q, ms) in [("0.5", l.p50), ("0.95", l.p95), ("0.99", l.p99), ("1", l.max)] {
            self.latency.get_or_create(&labels(&[("quantile", q)])).set(ms / 1e3);
        }
    }

    /// Takes a telemetry sample (a `telemetry.jsonl` row). Every numeric figure of it is
    /// exported under its field name, so it is walked as JSON.
    pub fn telemetry(&self, row: &TelemetryRow) {
        let Ok(sample) = serde_json::to_value(row) else {
            return;
        };
        if let Some(server) = sample["server"].as_object() {
            for (k, v) in server {
                if let Some(x) = v.as_f64() {
                    self.server.get_or_create(&labels(&[("figure", k)])).set(x);
                }
            }
            self.status_rates.clear();
            for (k, v) in server
                .get("status_rates")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if let Some(x) = v.as_f64() {
                    self.status_rates.get_or_create(&labels(&[("variable", k)])).set(x);
                }
            }
            // The top list changes from sample to sample: an event that left it is gone.
            self.waits.clear();
            let len = server
                .get("interval_s")
                .and_then(Value::as_f64)
                .unwrap_or(1.0)
                .max(1e-3);
            for w in server.get("waits").and_then(Value::as_array).into_iter().flatten() {
                if let (Some(e), Some(ms)) = (w["event"].as_str(), w["time_ms"].as_f64()) {
                    self.waits.get_or_create(&labels(&[("event", e)])).set(ms / 1e3 / len);
                }
            }
        }
        for c in sample["os"]["cpus"].as_array().into_iter().flatten() {
            let Some(cpu) = c["cpu"].as_str() else { continue };
            for (state, v) in c.as_object().into_iter().flatten() {
                if let Some(x) = v.as_f64() {
                    self.cpu
                        .get_or_create(&labels(&[("cpu", cpu), ("state", state)]))
                        .set(x);
                }
            }
        }
        for d in sample["os"]["disks"].as_array().into_iter().flatten() {
            let Some(device) = d["name"].as_str() else { continue };
            for (figure, v) in d.as_object().into_iter().flatten() {
                if let Some(x) = v.as_f64() {
                    self.disk
                        .get_or_create(&labels(&[("device", device), ("figure", figure)]))
                        .set(x);
                }
            }
        }
        for (figure, key) in [("cpu_percent", "cpu_pct"), ("rss_bytes", "rss_bytes")] {
            if let Some(x) = sample["client"][key].as_f64() {
                self.client.get_or_create(&labels(&[("figure", figure)])).set(x);
            }
        }
    }

    /// The OpenMetrics text of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock().expect("metrics registry");
        encode(&mut out, &registry).expect("writing to a String cannot fail");
        out
    }
}

/// Why the metrics endpoint could not start.
#[derive(Debug, thiserror::Error)]
#[error("--metrics-addr {addr}: cannot listen there ({message}); give a free local address such as 127.0.0.1:9187")]
pub struct MetricsError {
    addr: String,
    message: String,
}

/// `/metrics` served from a thread until dropped.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Listens on `addr` and serves `metrics`.
    pub fn start(addr: &str, metrics: Arc<LiveMetrics>) -> Result<MetricsServer, MetricsError> {
        let err = |message: String| MetricsError {
            addr: addr.to_string(),
            message,
        };
        let server = Arc::new(tiny_http::Server::http(addr).map_err(|e| err(e.to_string()))?);
        let bound = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| err("not an IP address".into()))?;
        let serving = Arc::clone(&server);
        let thread = std::thread::Builder::new()
            .name("dbperf-metrics".into())
            .spawn(move || {
                for request in serving.incoming_requests() {
                    let path = request.url().split('?').next().unwrap_or("");
                    let response = if path == "/metrics" {
                        let header =
                            tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE).expect("a valid header");
                        tiny_http::Response::from_string(metrics.encode()).with_header(header)
                    } else {
                        tiny_http::Response::from_string("dbperf serves /metrics\n").with_status_code(404)
                    };
                    // A scraper that hung up is not the run's problem.
                    let _ = request.respond(response);
                }
            })
            .map_err(|e| err(e.to_string()))?;
        Ok(MetricsServer {
            server,
            addr: bound,
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port chosen when `:0` was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_results::interval::Percentiles;
    use std::io::{Read, Write};

    fn interval(tps: f64) -> IntervalRecord {
        IntervalRecord {
            index: 0,
            start_s: 0.0,
            end_s: 1.0,
            warmup: false,
            threads: 8,
            transactions: tps as u64,
            tps,
            qps: tps * 20.0,
            rwo_per_sec: [0.0; 3],
            errors: [("deadlock".to_string(), 3u64)].into_iter().collect(),
            errors_per_sec: 3.0,
            reconnects_per_sec: 0.0,
            latency_ms: Percentiles {
                p50: 2.0,
                p95: 5.0,
                p99: 9.0,
                max: 20.0,
            },
            service_time_ms: Percentiles::default(),
            late_starts: 0,
            backlog: 0,
            server_unreachable: false,
        }
    }

    fn row(v: Value) -> TelemetryRow {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn intervals_and_samples_become_openmetrics() {
        let m = LiveMetrics::new("RUN", "oltp_read_write", "10.11.6-MariaDB");
        m.interval(&interval(1000.0));
        m.interval(&interval(500.0));
        m.telemetry(&row(serde_json::json!({
            "t_s": 1.0,
            "os": {"cpus": [{"cpu": "all", "user": 40.0, "idle": 60.0}], "disks": [{"name": "vda", "w_s": 12.0}]},
            "server": {"interval_s": 0.5, "checkpoint_pct": 97.5, "status_rates": {"Com_select": 3.0},
                       "waits": [{"event": "wait/synch/mutex/innodb/log_sys_mutex", "count": 4, "time_ms": 250.0}]},
            "client": {"cpu_pct": 35.0, "rss_bytes": 1000}
        })));
        let text = m.encode();
        for line in [
            "dbperf_run_info{run_id=\"RUN\",workload=\"oltp_read_write\",server_version=\"10.11.6-MariaDB\"} 1.0",
            "dbperf_transactions_total 1500.0",
            "dbperf_errors_total{class=\"deadlock\"} 6.0",
            "dbperf_throughput_per_second{kind=\"transactions\"} 500.0",
            "dbperf_latency_seconds{quantile=\"0.99\"} 0.009",
            "dbperf_server{figure=\"checkpoint_pct\"} 97.5",
            "dbperf_server_status_rate{variable=\"Com_select\"} 3.0",
            "dbperf_server_wait_seconds_per_second{event=\"wait/synch/mutex/innodb/log_sys_mutex\"} 0.5",
            "dbperf_os_cpu_percent{cpu=\"all\",state=\"user\"} 40.0",
            "dbperf_os_disk{device=\"vda\",figure=\"w_s\"} 12.0",
            "dbperf_client{figure=\"cpu_percent\"} 35.0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
        assert!(text.trim_end().ends_with("# EOF"));
        // A wait that left the top list is gone from the next scrape.
        m.telemetry(&row(serde_json::json!({"t_s": 2.0, "server": {"waits": []}})));
        assert!(!m.encode().contains("log_sys_mutex"));
    }

    #[test]
    fn a_started_run_shows_its_connections_before_its_first_interval() {
        let m = LiveMetrics::new("RUN", "tpcc", "v");
        assert!(m.encode().lines().any(|l| l == "dbperf_threads 0.0"));
        m.start(10, true);
        let text = m.encode();
        assert!(text.lines().any(|l| l == "dbperf_threads 10.0"), "{text}");
        assert!(text.lines().any(|l| l == "dbperf_warmup 1.0"), "{text}");
    }

    #[test]
    fn the_endpoint_serves_metrics_and_its_thread_stops_when_dropped() {
        let m = LiveMetrics::new("RUN", "w", "v");
        m.interval(&interval(10.0));
        let server = MetricsServer::start("127.0.0.1:0", Arc::clone(&m)).unwrap();
        let addr = server.addr();
        let get = |path: &str| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            write!(s, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
            let mut body = String::new();
            s.read_to_string(&mut body).unwrap();
            body
        };
        let ok = get("/metrics");
        assert!(ok.starts_with("HTTP/1.0 200") || ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(ok.contains("application/openmetrics-text") && ok.contains("dbperf_transactions_total 10.0"));
        assert!(get("/").contains(" 404 "));
        // Dropping it stops the serving thread (the drop joins it) without hanging.
        drop(server);
    }

    #[test]
    fn a_busy_address_is_a_clear_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let err = MetricsServer::start(&addr, LiveMetrics::new("r", "w", "v"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("cannot listen there"), "{err}");
    }
}
