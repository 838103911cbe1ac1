//! Figures across an experiment's points that the studies worked out by hand: how the headline
//! figure scaled with the server's CPUs from one pinning to another (study 003: +45% for +50%
//! cores) and each server's wait profile beside the others' (study 000: the index lock on one
//! server against log_sys and fil_system on the other). Rendered as text blocks for `lab report`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::explain::{Explanation, Figure};
use crate::compare::{Metric, RunInfo};
use dbperf_core::cpus::CpuSet;
use dbperf_core::stats::median;

/// Wait events shown per server in [`wait_profiles`].
const EVENTS_PER_SERVER: usize = 4;

/// One line per (server, variant, users) whose runs were pinned to different numbers of server
/// CPUs: the headline figure (`metric`, higher is better) of each pinning against the one with
/// the fewest CPUs, and the efficiency: the gain over the CPUs added (100% is linear). `None`
/// when no two pinnings of a point differ in their server CPUs.
pub fn scaling(metric: &Metric, infos: &[RunInfo]) -> Option<String> {
    if !metric.higher_is_better() {
        return None;
    }
    // (server, variant, threads) -> pinning -> (server CPUs, values)
    type Points<'a> = BTreeMap<(&'a str, &'a str, u32), BTreeMap<&'a str, (usize, Vec<f64>)>>;
    let mut points: Points<'_> = BTreeMap::new();
    for r in infos {
        let Some(lab) = &r.lab else { continue };
        let Some(cpus) = lab
            .server_cpus
            .as_deref()
            .and_then(|c| CpuSet::parse(c, dbperf_core::cpus::MAX_CPUS).ok())
        else {
            continue;
        };
        let Some(v) = metric.of(r).and_then(median) else {
            continue;
        };
        points
            .entry((lab.server.as_str(), lab.variant.as_str(), r.threads))
            .or_default()
            .entry(lab.pinning.as_str())
            .or_insert((cpus.cpus.len(), Vec::new()))
            .1
            .push(v);
    }
    let mut out = String::new();
    for ((server, variant, threads), pinnings) in &points {
        let mut by_cpus: Vec<(&str, usize, f64)> = pinnings
            .iter()
            .filter_map(|(p, (n, values))| Some((*p, *n, median(values)?)))
            .collect();
        by_cpus.sort_by_key(|(_, n, _)| *n);
        let Some(&(base_name, base_cpus, base)) = by_cpus.first() else {
            continue;
        };
        for &(name, cpus, value) in by_cpus.iter().skip(1).filter(|(_, n, _)| *n > base_cpus) {
            if base <= 0.0 {
                continue;
            }
            let gain = (value / base - 1.0) * 100.0;
            let added = (cpus as f64 / base_cpus as f64 - 1.0) * 100.0;
            let _ = writeln!(
                out,
                "  {server} · {variant} · {threads} users: {name} ({cpus} CPUs) against {base_name} ({base_cpus}): \
                 {gain:+.0}% {} for {added:+.0}% CPUs, {:.0}% efficient",
                metric.name(),
                gain / added * 100.0
            );
        }
    }
    (!out.is_empty()).then(|| {
        format!(
            "Scaling across pinnings ({} gained over the server CPUs added; 100% is linear, median of repetitions):\n{out}",
            metric.name()
        )
    })
}

/// Each server's share of the Performance Schema wait time, summed over its points'
/// explanations (`(server label, explanation)`), side by side: one row per event among each
/// server's top [`EVENTS_PER_SERVER`], one column per server. `None` with fewer than two servers
/// that have waits.
pub fn wait_profiles(explained: &[(String, &Explanation)]) -> Option<String> {
    let mut per_server: Vec<(String, BTreeMap<String, f64>)> = Vec::new();
    for (server, e) in explained {
        let Figure::Value(waits) = &e.top_waits else { continue };
        let i = match per_server.iter().position(|(s, _)| s == server) {
            Some(i) => i,
            None => {
                per_server.push((server.clone(), BTreeMap::new()));
                per_server.len() - 1
            }
        };
        for w in waits {
            *per_server[i].1.entry(w.event.clone()).or_default() += w.time_ms;
        }
    }
    if per_server.len() < 2 {
        return None;
    }
    let shares: Vec<BTreeMap<&str, f64>> = per_server
        .iter()
        .map(|(_, waits)| {
            let total: f64 = waits.values().sum();
            waits
                .iter()
                .map(|(e, t)| (e.as_str(), if total > 0.0 { t * 100.0 / total } else { 0.0 }))
                .collect()
        })
        .collect();
    let mut events: Vec<&str> = Vec::new();
    for s in &shares {
        let mut top: Vec<(&str, f64)> = s.iter().map(|(e, v)| (*e, *v)).collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1));
        for (e, _) in top.into_iter().take(EVENTS_PER_SERVER) {
            if !events.contains(&e) {
                events.push(e);
            }
        }
    }
    let mut rows = vec![std::iter::once("wait event".to_string())
        .chain(per_server.iter().map(|(s, _)| s.clone()))
        .collect::<Vec<_>>()];
    for e in &events {
        let mut row = vec![e.trim_start_matches("wait/synch/").to_string()];
        row.extend(
            shares
                .iter()
                .map(|s| s.get(e).map_or("-".into(), |v| format!("{v:.0}%"))),
        );
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::from(
        "Wait profile by server (share of each server's Performance Schema wait time over its points, second half of each run):\n",
    );
    for r in rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(v, w)| format!("{v:<w$}")).collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::explain::WaitShare;
    use super::*;
    use dbperf_results::LabPoint;

    fn run(server: &str, pinning: &str, cpus: &str, tps: f64) -> RunInfo {
        RunInfo {
            run_id: format!("{server}-{pinning}"),
            workload: "oltp_point_select".into(),
            threads: 64,
            server_version: None,
            lab: Some(LabPoint {
                server: server.into(),
                variant: "default".into(),
                pinning: pinning.into(),
                server_cpus: Some(cpus.into()),
                ..LabPoint::default()
            }),
            variables: None,
            tps,
            qps: 0.0,
            p95_ms: 0.0,
            p99_ms: 0.0,
            interrupted: false,
            inside: None,
            figures: [("tps".to_string(), vec![tps])].into(),
            unreadable: Vec::new(),
            client_us_per_txn: None,
            client_us_per_query: None,
            open_loop: false,
        }
    }

    #[test]
    fn scaling_is_the_gain_over_the_cpus_added() {
        // Study 003: 16 to 24 cores (+50%) gave +45%: 90% efficient.
        let runs = [
            run("mysql-5.6", "cores16", "0-15", 100_000.0),
            run("mysql-5.6", "cores24", "0-23", 145_000.0),
        ];
        let text = scaling(&Metric::Tps, &runs).unwrap();
        assert!(
            text.contains("mysql-5.6 · default · 64 users: cores24 (24 CPUs) against cores16 (16): +45% tps for +50% CPUs, 90% efficient"),
            "{text}"
        );
        // One pinning, or a latency (lower is better): nothing to say.
        assert_eq!(scaling(&Metric::Tps, &runs[..1]), None);
        assert_eq!(scaling(&Metric::P99, &runs), None);
    }

    #[test]
    fn wait_profiles_put_servers_side_by_side() {
        let explanation = |waits: &[(&str, f64)]| {
            let mut e = Explanation::blank();
            e.top_waits = Figure::Value(
                waits
                    .iter()
                    .map(|(event, time_ms)| WaitShare {
                        event: event.to_string(),
                        time_ms: *time_ms,
                        share_pct: 0.0,
                    })
                    .collect(),
            );
            e
        };
        let (a1, a2, b) = (
            explanation(&[
                ("wait/synch/sxlock/innodb/index_tree_rw_lock", 60.0),
                ("wait/io/file/innodb/innodb_data_file", 20.0),
            ]),
            explanation(&[("wait/synch/sxlock/innodb/index_tree_rw_lock", 20.0)]),
            explanation(&[
                ("wait/synch/mutex/innodb/log_sys_mutex", 30.0),
                ("wait/synch/mutex/innodb/fil_system_mutex", 10.0),
            ]),
        );
        let text = wait_profiles(&[
            ("mysql-5.7".into(), &a1),
            ("mysql-5.7".into(), &a2),
            ("mariadb-10.1".into(), &b),
        ])
        .unwrap();
        let line = |event: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(event))
                .unwrap()
                .to_string()
        };
        assert!(line("sxlock/innodb/index_tree_rw_lock").contains("80%"), "{text}");
        assert!(line("mutex/innodb/log_sys_mutex").ends_with("75%"), "{text}");
        assert!(line("mutex/innodb/log_sys_mutex").contains(" - "), "{text}");
        assert_eq!(wait_profiles(&[("one".into(), &a1)]), None);
    }
}
