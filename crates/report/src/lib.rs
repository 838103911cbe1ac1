//! What a person reads: the live interval line and the final summary, formatted from
//! the records in [`dbperf_results`] (never from the engine directly); and side-by-side
//! comparisons of runs ([`compare`]) and the TPC-H per-query table ([`tpch`]), judged by the
//! one statistics module ([`dbperf_core::stats`]: median, min..max, mean and CV, geometric mean, the draw
//! rule). The commands that report go through one pipeline ([`publish`]), which assembles
//! [`document`]s that one exporter per [`format`] writes out ([`export`]). Nothing here imports
//! a workload or a sampler: it reads the types of `results`.

pub mod analysis;
pub mod compare;
pub mod document;
pub mod export;
pub mod format;
pub mod html;
pub mod metrics;
pub mod publish;
pub mod setup;
pub mod tpch;
pub mod warnings;

use std::fmt::Write;

use dbperf_engine::IntervalReport;
use dbperf_results::interval::IntervalRecord;
use dbperf_results::summary::{LatencyBlock, Summary, TypeKind};

/// A sysbench-style interval line, with p50/p95/p99 and errors by class:
///
/// `[ 10s ] thds: 8 tps: 1054.05 qps: 21081.00 (r/w/o: 14757.70/4216.20/2107.10) lat (ms,p50/p95/p99): 5.10/9.10/12.30 err/s: 0.00 reconn/s: 0.00`
///
/// In open loop a second line gives service time, late starts and the backlog.
pub fn interval_line(r: &IntervalRecord, open_loop: bool) -> String {
    let mut s = String::with_capacity(200);
    let phase = if r.warmup { " warmup" } else { "" };
    let _ = write!(
        s,
        "[ {}s{phase} ] thds: {} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,p50/p95/p99): {:.2}/{:.2}/{:.2} err/s: {:.2} reconn/s: {:.2}",
        fmt_secs(r.end_s),
        r.threads,
        r.tps,
        r.qps,
        r.rwo_per_sec[0],
        r.rwo_per_sec[1],
        r.rwo_per_sec[2],
        r.latency_ms.p50,
        r.latency_ms.p95,
        r.latency_ms.p99,
        r.errors_per_sec,
        r.reconnects_per_sec,
    );
    if !r.errors.is_empty() {
        let parts: Vec<String> = r.errors.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = write!(s, " ({})", parts.join(", "));
    }
    if open_loop {
        let _ = write!(
            s,
            "\n[ {}s{phase} ] service (ms,p50/p95/p99): {:.2}/{:.2}/{:.2} late starts: {} backlog: {}",
            fmt_secs(r.end_s),
            r.service_time_ms.p50,
            r.service_time_ms.p95,
            r.service_time_ms.p99,
            r.late_starts,
            r.backlog
        );
    }
    s
}

fn fmt_secs(s: f64) -> String {
    if (s - s.round()).abs() < 0.005 {
        format!("{}", s.round() as u64)
    } else {
        format!("{s:.1}")
    }
}

/// The end-of-run report: sysbench's sections, with more percentiles, service time
/// beside response time in open loop, and a per-type table.
pub fn final_text(sum: &Summary, extra_percentile: Option<(f64, f64)>) -> String {
    let mut s = String::new();
    let d = sum.duration_s.max(1e-9);
    let _ = writeln!(s, "SQL statistics:");
    let _ = writeln!(s, "    queries performed:");
    let _ = writeln!(s, "        read:                            {}", sum.queries.read);
    let _ = writeln!(s, "        write:                           {}", sum.queries.write);
    let _ = writeln!(s, "        other:                           {}", sum.queries.other);
    let _ = writeln!(s, "        total:                           {}", sum.queries.total);
    let _ = writeln!(
        s,
        "    transactions:                        {:<8} ({:.2} per sec.)",
        sum.transactions.total, sum.transactions.per_sec
    );
    let _ = writeln!(
        s,
        "    queries:                             {:<8} ({:.2} per sec.)",
        sum.queries.total, sum.queries.per_sec
    );
    let _ = writeln!(
        s,
        "    errors (retried):                    {:<8} ({:.2} per sec.)",
        sum.errors.total,
        sum.errors.total as f64 / d
    );
    for (class, n) in &sum.errors.by_class {
        let _ = writeln!(s, "        {class:<32} {n}");
    }
    let _ = writeln!(
        s,
        "    reconnects:                          {:<8} ({:.2} per sec.)",
        sum.reconnects,
        sum.reconnects as f64 / d
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "General statistics:");
    let _ = writeln!(
        s,
        "    workload:                            {} (--rand-type={})",
        sum.workload, sum.rand_type
    );
    let _ = writeln!(s, "    total time:                          {:.4}s", sum.duration_s);
    if sum.warmup_s > 0.0 {
        let _ = writeln!(s, "    warmup (not counted):                {:.4}s", sum.warmup_s);
    }
    let _ = writeln!(s, "    total number of events:              {}", sum.transactions.total);
    match (sum.rate, sum.arrival) {
        (Some(rate), Some(arr)) => {
            let _ = writeln!(
                s,
                "    load:                                open loop, {rate} trx/s, {arr:?} arrivals, {} connections",
                sum.threads
            );
            let _ = writeln!(s, "    late starts:                         {}", sum.late_starts);
            let _ = writeln!(s, "    backlog at end (never started):      {}", sum.backlog_at_end);
        }
        _ => {
            let _ = writeln!(
                s,
                "    load:                                closed loop, {} connections",
                sum.threads
            );
        }
    }
    let _ = writeln!(s);
    let title = if sum.rate.is_some() {
        "Response time from intended start (ms):"
    } else {
        "Latency (ms):"
    };
    latency_section(&mut s, title, &sum.latency_ms, extra_percentile);
    if let Some(svc) = &sum.service_time_ms {
        latency_section(&mut s, "Service time from actual start (ms):", svc, None);
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "Per type (ms):");
    let _ = writeln!(
        s,
        "    {:<22} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "type", "count", "mean", "p50", "p95", "p99", "p99.9", "max"
    );
    let mut rows: Vec<_> = sum.per_type.iter().filter(|(_, t)| t.count > 0).collect();
    rows.sort_by_key(|(_, t)| t.kind != TypeKind::Transaction);
    for (name, t) in rows {
        let l = &t.latency_ms;
        let _ = writeln!(
            s,
            "    {:<22} {:>10} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            name, t.count, l.mean, l.p50, l.p95, l.p99, l.p999, l.max
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Client: {:.2} CPU s ({:.1} us per query, {:.0}% of a core), peak RSS {:.1} MiB",
        sum.client.cpu_s,
        if sum.queries.total > 0 {
            sum.client.cpu_s * 1e6 / sum.queries.total as f64
        } else {
            0.0
        },
        100.0 * sum.client.cpu_s / d,
        sum.client.max_rss_bytes as f64 / (1024.0 * 1024.0)
    );
    if sum.client.cpu_s / d > 0.9 {
        let _ = writeln!(
            s,
            "WARNING: the client used more than 90% of a core: results may be client-bound."
        );
    }
    s
}

fn latency_section(s: &mut String, title: &str, l: &LatencyBlock, extra: Option<(f64, f64)>) {
    let _ = writeln!(s, "{title}");
    let _ = writeln!(s, "         min:                            {:.3}", l.min);
    let _ = writeln!(s, "         avg:                            {:.3}", l.mean);
    let _ = writeln!(s, "         p50:                            {:.3}", l.p50);
    let _ = writeln!(s, "         p90:                            {:.3}", l.p90);
    let _ = writeln!(s, "         p95:                            {:.3}", l.p95);
    let _ = writeln!(s, "         p99:                            {:.3}", l.p99);
    let _ = writeln!(s, "         p99.9:                          {:.3}", l.p999);
    if let Some((p, v)) = extra {
        let _ = writeln!(s, "         p{p}:{:>width$.3}", v, width = 36 - format!("{p}").len());
    }
    let _ = writeln!(s, "         max:                            {:.3}", l.max);
}

/// A warning when dbperf itself was the bottleneck: its client threads were busy at least 90%
/// of the measured time, so the server may have been waiting for the client.
pub fn client_bound_warning(s: &dbperf_results::Summary, client_threads: usize) -> Option<String> {
    if s.duration_s <= 0.0 || client_threads == 0 {
        return None;
    }
    let cores = s.client.cpu_s / s.duration_s;
    let per_thread = cores / client_threads as f64;
    (per_thread >= 0.9).then(|| {
        format!(
            "WARNING: the client used {:.0}% of each of its {client_threads} thread(s) ({cores:.2} cores): \
             results are client-bound; give it more CPUs (--client-threads, pinning) or fewer connections",
            per_thread * 100.0
        )
    })
}

/// The live line of an interval: sysbench's, or one a workload formats itself (TPC-C's
/// NOTPM line) from the merged interval.
pub enum LiveLine {
    /// [`interval_line`].
    Standard,
    /// A workload's own.
    Custom(Box<dyn Fn(&IntervalReport<'_>) -> String>),
}

#[cfg(test)]
mod client_bound_tests {
    use super::client_bound_warning;
    use dbperf_results::summary;

    #[test]
    fn a_busy_client_is_called_out() {
        let mut s = summary::sample("r", "oltp_point_select", 8, 10.0, 1.0);
        s.duration_s = 10.0;
        s.client.cpu_s = 19.0;
        let w = client_bound_warning(&s, 2).unwrap();
        assert!(w.contains("95%") && w.contains("client-bound"), "{w}");
        s.client.cpu_s = 5.0;
        assert_eq!(client_bound_warning(&s, 2), None);
    }
}
