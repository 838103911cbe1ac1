//! Turning what the engine measured into run-directory files as the run goes: one
//! `intervals.jsonl` line, one set of `intervals.hlog` histograms and one live-metrics update
//! per stored interval (1 s, see [`super::args::stored_interval`]), the live line on stdout per
//! report interval (the engine's merge of the stored intervals it spans), and `summary.json`
//! at the end.

use dbperf_report::LiveLine;
use std::collections::BTreeMap;

use dbperf_engine::stats::OpTable;
use dbperf_engine::{ErrorClass, IntervalReport, Observer, RunOutcome, StatementNames, Stats, StopReason};
use hdrhistogram::serialization::interval_log::{IntervalLogWriter, IntervalLogWriterError, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;

use std::path::PathBuf;

use std::sync::Arc;

use indicatif::ProgressBar;

use dbperf_report as report;
use dbperf_report::metrics::LiveMetrics;
use dbperf_results::interval::{IntervalRecord, Percentiles};
use dbperf_results::summary::{ClientUsage, ErrorCounts, QueryCounts, ServerSummary, Throughput, TypeBlock, TypeKind};
use dbperf_results::{client_usage, AppendFile, IntervalWriter, LatencyBlock, ResultsError, Summary};
use dbperf_telemetry::sampler::{live_suffix, Telemetry, TelemetryConfig};

/// Writes each stored interval to the run directory and prints each report's line.
pub struct Recorder<'a, 'b> {
    /// `intervals.jsonl`
    pub jsonl: IntervalWriter,
    /// `intervals.hlog`
    pub hlog: IntervalLogWriter<'a, 'b, AppendFile, V2DeflateSerializer>,
    /// Workload names for histogram tags.
    pub ops: OpTable,
    /// Statement kinds the workload names as it runs (after `ops.statements`).
    pub names: Option<Arc<StatementNames>>,
    /// Print a live line every this many reports (0 = never).
    pub print_every: u32,
    /// Open loop: print service time and backlog too.
    pub open_loop: bool,
    /// CPU used before measuring started, subtracted from the summary's client CPU.
    pub cpu_at_start: ClientUsage,
    /// The first error other than a full disk (whose losses the files count and the end of
    /// the run reports), reported at the end (the run goes on).
    pub error: Option<String>,
    /// Telemetry to start when the run starts (on its clock), and where it writes.
    pub telemetry_cfg: Option<(TelemetryConfig, PathBuf)>,
    /// The running telemetry thread.
    pub telemetry: Option<Telemetry>,
    /// Which live line to print.
    pub live: LiveLine,
    /// Print none of dbperf's own lines (a custom live line is still called: it prints the
    /// workload's own output).
    pub quiet: bool,
    /// Printed when measuring starts, quiet or not, in place of dbperf's `Threads started!` line.
    pub started: Option<String>,
    /// Live metrics served to Prometheus (`--metrics-addr`).
    pub metrics: Option<Arc<LiveMetrics>>,
    /// Elapsed time and ETA at the bottom of a terminal (hidden when stderr is not one).
    pub progress: Option<ProgressBar>,
    /// The run starts with a warmup (for the metrics until its first interval ends).
    pub warmup: bool,
    /// The workload's own use of each stored interval ([`super::measured::Measurer::on_each_interval`]).
    pub each_interval: Option<dbperf_engine::EachInterval>,
}

impl Observer for Recorder<'_, '_> {
    fn on_start(&mut self, connections: usize, t0_ns: u64) {
        self.cpu_at_start = client_usage();
        if let Some((cfg, path)) = self.telemetry_cfg.take() {
            match Telemetry::start(cfg, &path, t0_ns) {
                Ok(t) => self.telemetry = Some(t),
                Err(e) => {
                    self.error.get_or_insert(format!("telemetry is off: {e}"));
                }
            }
        }
        if let Some(m) = &self.metrics {
            m.start(connections, self.warmup);
        }
        if self.started.is_none() && self.print_every > 0 && !self.quiet {
            println!("Threads started! ({connections} connections)\n");
        }
    }

    fn on_ready(&mut self) {
        if let Some(line) = &self.started {
            print!("{line}");
        }
    }

    fn on_interval(&mut self, r: &IntervalReport<'_>) {
        // The client's CPU is counted over the measured phase, as its queries are: from the
        // end of the last warmup interval (delivered as it ends).
        if r.warmup {
            self.cpu_at_start = client_usage();
        }
        let rec = interval_record(r);
        match self.jsonl.append(&rec) {
            Ok(()) | Err(ResultsError::Write { .. }) => {}
            Err(e) => {
                self.error.get_or_insert(format!("writing intervals.jsonl: {e}"));
            }
        }
        if let Err(e) = self.write_hlog(r) {
            self.error.get_or_insert(format!("writing intervals.hlog: {e}"));
        }
        if let Some(m) = &self.metrics {
            m.interval(&rec);
            if let Some(s) = self.telemetry.as_ref().and_then(Telemetry::latest) {
                m.telemetry(&s);
            }
        }
        if let Some(p) = &self.progress {
            p.set_position(r.end_s as u64);
        }
        if let Some(f) = &mut self.each_interval {
            f(r);
        }
    }

    fn on_report(&mut self, r: &IntervalReport<'_>) {
        if self.print_every > 0 && ((r.index + 1).is_multiple_of(self.print_every) || r.last) && r.len_s() > 0.05 {
            let sample = self.telemetry.as_ref().and_then(Telemetry::latest);
            let rec = interval_record(r);
            let mut line = match &self.live {
                LiveLine::Standard if self.quiet => return,
                LiveLine::Standard => report::interval_line(&rec, self.open_loop),
                LiveLine::Custom(f) => f(r),
            };
            if line.is_empty() {
                // A custom line with nothing to add (a script's report hook, which printed
                // its own output, byte for byte).
                return;
            }
            if rec.server_unreachable {
                line.push_str(" | server unreachable, reconnecting");
            }
            if let Some(sample) = &sample {
                line.push_str(" | ");
                line.push_str(&live_suffix(sample));
            }
            match &self.progress {
                // The bar is cleared, the line printed above it, the bar drawn again.
                Some(p) => p.suspend(|| println!("{line}")),
                None => println!("{line}"),
            }
        }
    }
}

impl Recorder<'_, '_> {
    /// Writes the interval's histograms; a failed write (a full disk) is counted by the
    /// [`AppendFile`] under the log and not an error here.
    fn write_hlog(&mut self, r: &IntervalReport<'_>) -> Result<(), String> {
        // With a BaseTime header, interval timestamps are seconds since that base.
        let start = std::time::Duration::from_secs_f64(r.start_s);
        let len = std::time::Duration::from_secs_f64(r.len_s());
        let s = r.stats;
        let mut put = |name: &str, h: &hdrhistogram::Histogram<u64>| -> Result<(), String> {
            if h.is_empty() {
                return Ok(());
            }
            match self.hlog.write_histogram(h, start, len, Tag::new(name)) {
                Ok(()) | Err(IntervalLogWriterError::IoError(_)) => Ok(()),
                Err(e) => Err(e.to_string()),
            }
        };
        for (name, (response, service)) in self.ops.transactions.iter().zip(s.per_type()) {
            put(&format!("response:{name}"), response)?;
            if self.open_loop {
                put(&format!("service:{name}"), service)?;
            }
        }
        for (i, h) in s.per_stmt.iter().enumerate() {
            let name = match self.ops.statements.get(i) {
                Some(n) => n.clone(),
                None => self
                    .names
                    .as_ref()
                    .and_then(|n| n.name(i))
                    .unwrap_or_else(|| format!("statement{i}")),
            };
            put(&format!("statement:{name}"), h)?;
        }
        Ok(())
    }
}

fn errors_by_class(s: &Stats) -> BTreeMap<String, u64> {
    ErrorClass::ALL
        .iter()
        .filter(|c| s.errors[c.index()] > 0)
        .map(|c| (c.name().to_string(), s.errors[c.index()]))
        .collect()
}

/// The `intervals.jsonl` line for one merged interval.
pub fn interval_record(r: &IntervalReport<'_>) -> IntervalRecord {
    let s = r.stats;
    let d = r.len_s();
    IntervalRecord {
        index: r.index,
        start_s: r.start_s,
        end_s: r.end_s,
        warmup: r.warmup,
        threads: r.connections as u32,
        transactions: s.transactions,
        tps: s.transactions as f64 / d,
        qps: s.total_queries() as f64 / d,
        rwo_per_sec: [
            s.queries[0] as f64 / d,
            s.queries[1] as f64 / d,
            s.queries[2] as f64 / d,
        ],
        errors: errors_by_class(s),
        errors_per_sec: s.total_errors() as f64 / d,
        reconnects_per_sec: s.reconnects as f64 / d,
        latency_ms: Percentiles::from_histogram(&s.response),
        service_time_ms: Percentiles::from_histogram(&s.service),
        late_starts: s.late_starts,
        backlog: r.backlog,
        server_unreachable: s.server_unreachable(),
    }
}

/// Facts about the run that the engine does not know.
pub struct SummaryContext<'a> {
    /// Workload name.
    pub workload: &'a str,
    /// Run id (directory name).
    pub run_id: &'a str,
    /// Connections.
    pub threads: u32,
    /// The arrival process.
    pub arrival: dbperf_engine::Arrival,
    /// `--rand-type`.
    pub rand_type: &'a str,
    /// Server version.
    pub server_version: Option<String>,
    /// CPU used before the measurement started.
    pub cpu_at_start: ClientUsage,
}

/// `summary.json` from the engine's totals.
pub fn summary(out: &RunOutcome, ops: &OpTable, cx: &SummaryContext<'_>) -> Summary {
    let t = &out.total;
    let d = out.measured_s;
    let open = cx.arrival.rate().is_some();
    let mut per_type = BTreeMap::new();
    for (name, (response, service)) in ops.transactions.iter().zip(t.per_type()) {
        per_type.insert(
            name.clone(),
            TypeBlock {
                kind: TypeKind::Transaction,
                count: response.len(),
                latency_ms: LatencyBlock::from_histogram(response),
                service_time_ms: open.then(|| LatencyBlock::from_histogram(service)),
            },
        );
    }
    for (i, h) in t.per_stmt.iter().enumerate() {
        if h.is_empty() {
            continue;
        }
        per_type.insert(
            ops.statements
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("statement{i}")),
            TypeBlock {
                kind: TypeKind::Statement,
                count: h.len(),
                latency_ms: LatencyBlock::from_histogram(h),
                service_time_ms: None,
            },
        );
    }
    let now = client_usage();
    let client = ClientUsage {
        cpu_s: now.cpu_s - cx.cpu_at_start.cpu_s,
        user_s: now.user_s - cx.cpu_at_start.user_s,
        sys_s: now.sys_s - cx.cpu_at_start.sys_s,
        max_rss_bytes: now.max_rss_bytes,
    };
    Summary {
        schema: dbperf_results::summary::SUMMARY_SCHEMA.to_string(),
        workload: cx.workload.to_string(),
        run_id: cx.run_id.to_string(),
        duration_s: d,
        warmup_s: out.warmup_s,
        threads: cx.threads,
        rate: cx.arrival.rate(),
        arrival: match cx.arrival {
            dbperf_engine::Arrival::Closed => None,
            dbperf_engine::Arrival::Fixed { .. } => Some(dbperf_results::summary::Arrival::Fixed),
            dbperf_engine::Arrival::Poisson { .. } => Some(dbperf_results::summary::Arrival::Poisson),
        },
        rand_type: cx.rand_type.to_string(),
        transactions: Throughput::new(t.transactions, d),
        queries: QueryCounts::new(t.queries[0], t.queries[1], t.queries[2], d),
        errors: ErrorCounts::new(errors_by_class(t)),
        retries: t.retries,
        retried: t.retried,
        failed: t.failed,
        skipped: t.skipped,
        reconnects: t.reconnects,
        latency_ms: LatencyBlock::from_histogram(&t.response),
        service_time_ms: open.then(|| LatencyBlock::from_histogram(&t.service)),
        late_starts: t.late_starts,
        backlog_at_end: out.backlog_at_end,
        per_type,
        client,
        server: ServerSummary {
            version: cx.server_version.clone(),
        },
        interrupted: out.reason != StopReason::Completed,
        intervals: out.intervals,
        server_unreachable_s: out.unreachable_s,
        server_unreachable_at_end: out.unreachable_at_end,
        // Killed connections that came straight back are not a lost server; a reconnect the
        // server refused is.
        server_lost: out.unreachable_at_end || out.unreachable_s > 0.0 || t.reconnect_failures > 0,
        steady_warmup: None,
    }
}
