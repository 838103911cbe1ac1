//! A comparison's warnings ([`crate::warnings`]): each run's own (what `dbperf
//! analyze` found in it, one warning per kind naming every run that has it) and those across
//! the runs: scaling by users (`superlinear_scaling`, `client_bound`), runs that started in
//! different states (`unequal_start_state`), Performance Schema on one side only
//! (`pfs_mismatch`) and other settings that differ (`config_differs`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::variables::VariableDiff;
use super::RunInfo;
use crate::warnings::{self as w, ScalingPoint, Warning, WarningKind};

/// The warnings of a comparison of `runs`; `groups[i]` is the group run `i` may be set against
/// in a users sweep (its column without the users), `columns` the column labels and
/// `variables` the server variables that differ between them.
pub fn of_runs(runs: &[RunInfo], groups: &[String], columns: &[String], variables: &VariableDiff) -> Vec<Warning> {
    let mut out = own_warnings(runs);
    // An open-loop run's throughput is its rate: it says nothing about how it scales.
    let points: Vec<ScalingPoint> = runs
        .iter()
        .zip(groups)
        .filter(|(r, _)| !r.open_loop)
        .map(|(r, g)| ScalingPoint {
            run_id: r.run_id.clone(),
            group: g.clone(),
            users: r.threads,
            tps: r.tps,
            host_idle_pct: r.inside.as_ref().and_then(|i| i.host_idle_pct),
            client_us_per_txn: r.client_us_per_txn,
            client_us_per_query: r.client_us_per_query,
        })
        .collect();
    out.extend(w::scaling(&points));
    let labels: Vec<String> = runs.iter().map(RunInfo::label).collect();
    let starts: Vec<(&str, &dbperf_results::telemetry::StartState)> = runs
        .iter()
        .zip(&labels)
        .filter_map(|(r, l)| Some((l.as_str(), r.inside.as_ref()?.start.as_ref()?)))
        .collect();
    out.extend(w::unequal_start_state(&starts));
    if let Some(pfs) = variables.warnings.iter().find(|v| v.name == "performance_schema") {
        out.extend(w::pfs_mismatch(columns, &pfs.values));
    }
    let mut differ: Vec<(&str, &[String])> = variables
        .warnings
        .iter()
        .map(|v| (v.name.as_str(), v.values.as_slice()))
        .collect();
    // Between server versions the rest differ by the versions' defaults (which the
    // comparison lists on its own): only the ones known to distort are warned then.
    if variables.versions.is_none() {
        differ.extend(
            variables
                .differing
                .iter()
                .map(|v| (v.name.as_str(), v.values.as_slice())),
        );
    }
    out.extend(w::config_differs(columns, &differ));
    out
}

/// Each run's own warnings, one per kind: a kind only one run has names it; one several runs
/// have names them all and gives the first one's message as the example. Runs are named by
/// what varies ([`RunInfo::label`]); their ids are in the evidence.
fn own_warnings(runs: &[RunInfo]) -> Vec<Warning> {
    let mut by_kind: BTreeMap<WarningKind, Vec<(&RunInfo, &Warning)>> = BTreeMap::new();
    for r in runs {
        for warning in r.inside.iter().flat_map(|i| &i.warnings) {
            by_kind.entry(warning.kind).or_default().push((r, warning));
        }
    }
    by_kind
        .into_values()
        .filter_map(|found| {
            let &(first, example) = found.first()?;
            if found.len() == 1 {
                let mut one = example.clone().of_run(&first.run_id);
                one.message = format!("{}: {}", first.label(), example.message);
                return Some(one);
            }
            let ids: Vec<String> = found.iter().map(|(r, _)| r.run_id.clone()).collect();
            let labels: Vec<String> = found.iter().map(|(r, _)| r.label()).collect();
            let each: Vec<Value> = found
                .iter()
                .map(|(r, w)| {
                    let mut e = w.evidence.clone();
                    e.insert("run".to_owned(), r.run_id.clone().into());
                    Value::Object(e.into_iter().collect())
                })
                .collect();
            Some(Warning::new(
                example.kind,
                format!(
                    "{} runs ({}); e.g. {}: {}",
                    if found.len() == runs.len() {
                        format!("all {}", runs.len())
                    } else {
                        format!("{} of {}", found.len(), runs.len())
                    },
                    labels.join("; "),
                    labels[0],
                    example.message
                ),
                [("runs", Value::from(ids)), ("each", Value::Array(each))],
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::inside::RunInside;
    use super::super::tests::{lab_run, run};
    use super::super::{compare_runs, CompareOptions};
    use super::*;
    use crate::format::Format;

    fn with_vars(mut r: RunInfo, vars: &[(&str, &str)]) -> RunInfo {
        r.variables = Some(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        r
    }

    fn kinds(ws: &[Warning]) -> Vec<&'static str> {
        ws.iter().map(|w| w.kind.id()).collect()
    }

    /// dbperf's own switches (the InnoDB monitors its telemetry enables) are no configuration
    /// difference; Performance Schema on one side only is its own kind; a real setting is
    /// `config_differs`.
    #[test]
    fn only_real_configuration_differences_are_warned() {
        let base = [("innodb_monitor_enable", ""), ("performance_schema", "ON")];
        let a = with_vars(run("a", 8, 100.0), &base);
        let b = with_vars(
            run("b", 8, 101.0),
            &[
                ("innodb_monitor_enable", "buffer_flush_sync_total_pages"),
                ("performance_schema", "ON"),
            ],
        );
        let c = compare_runs(&[a.clone(), b], &CompareOptions::default()).unwrap();
        assert_eq!(kinds(&c.warnings), Vec::<&str>::new());
        assert!(!c.render(Format::Text).contains("innodb_monitor_enable"));

        let off = with_vars(
            run("b", 8, 101.0),
            &[("performance_schema", "OFF"), ("innodb_monitor_enable", "")],
        );
        let c = compare_runs(&[a.clone(), off], &CompareOptions::default()).unwrap();
        assert_eq!(kinds(&c.warnings), ["pfs_mismatch"]);
        assert_eq!(
            c.warnings[0].evidence["performance_schema"],
            serde_json::json!(["ON", "OFF"])
        );

        let sort = with_vars(
            run("b", 8, 101.0),
            &[
                ("performance_schema", "ON"),
                ("innodb_monitor_enable", ""),
                ("max_connections", "500"),
            ],
        );
        let c = compare_runs(
            &[
                with_vars(a, &[("performance_schema", "ON"), ("max_connections", "151")]),
                sort,
            ],
            &CompareOptions::default(),
        )
        .unwrap();
        assert_eq!(kinds(&c.warnings), ["config_differs"]);
        let json: serde_json::Value = serde_json::from_str(&c.render(Format::Json)).unwrap();
        assert_eq!(json["warnings"][0]["kind"], "config_differs");
        assert_eq!(
            json["warnings"][0]["evidence"]["variables"]["max_connections"],
            serde_json::json!(["151", "500"])
        );
    }

    /// A users sweep outside the lab is one group: 1 -> 2 users at 297 -> 1,469 TPS is flagged,
    /// in the text as a `warning:` line and in the JSON with its evidence.
    #[test]
    fn a_users_sweep_is_checked_for_superlinear_scaling() {
        let mut one = run("r1", 1, 297.0);
        one.client_us_per_query = Some(52.0);
        let mut two = run("r2", 2, 1469.0);
        two.client_us_per_query = Some(17.0);
        let c = compare_runs(&[one.clone(), two.clone()], &CompareOptions::default()).unwrap();
        assert_eq!(kinds(&c.warnings), ["superlinear_scaling"]);
        // Open loop, the throughput is the rate asked for: not judged.
        let mut paced = two.clone();
        paced.open_loop = true;
        let open = compare_runs(&[one.clone(), paced], &CompareOptions::default()).unwrap();
        assert_eq!(kinds(&open.warnings), Vec::<&str>::new());
        let text = c.render(Format::Text);
        assert!(
            text.contains("warning: 10.11.6-MariaDB: 1 -> 2 users gave 297 -> 1,469 TPS"),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&c.render(Format::Json)).unwrap();
        assert_eq!(json["warnings"][0]["evidence"]["users"], serde_json::json!([1, 2]));
        assert_eq!(
            json["warnings"][0]["evidence"]["client_us_per_query"],
            serde_json::json!([52.0, 17.0])
        );
    }

    /// Each run's own warnings: one run's names it; several runs' are one warning naming them
    /// all, with every run's evidence.
    #[test]
    fn each_runs_own_warnings_are_merged_by_kind() {
        let inside = |n: usize| RunInside {
            stalls: 0,
            tps_cv_pct: 1.0,
            pressure: None,
            host_idle_pct: None,
            intervals: n,
            warnings: crate::warnings::too_few_intervals(n, 1.0).into_iter().collect(),
            start: None,
        };
        let mut runs = vec![run("a", 8, 100.0), run("b", 8, 100.0), run("c", 8, 100.0)];
        runs[0].inside = Some(inside(3));
        runs[1].inside = Some(inside(60));
        let ws = own_warnings(&runs);
        assert_eq!(kinds(&ws), ["too_few_intervals"]);
        assert!(
            ws[0].message.starts_with("oltp_point_select, 8 users (a): 3 measured"),
            "{}",
            ws[0].message
        );
        assert_eq!(ws[0].evidence["run"], "a");
        runs[2].inside = Some(inside(4));
        let ws = own_warnings(&runs);
        assert!(
            ws[0].message.starts_with(
                "2 of 3 runs (oltp_point_select, 8 users (a); oltp_point_select, 8 users (c)); e.g. oltp_point_select, 8 users (a): 3 measured"
            ),
            "{}",
            ws[0].message
        );
        assert_eq!(ws[0].evidence["runs"], serde_json::json!(["a", "c"]));
        assert_eq!(ws[0].evidence["each"][1]["intervals"], 4);
        // A lab run is named by what varies: server, variant, users, repetition.
        let mut lab = lab_run("x", "mariadb-10.11", "flush-2", 8, 2, 100.0);
        lab.inside = Some(inside(3));
        let ws = own_warnings(&[lab]);
        assert!(
            ws[0]
                .message
                .starts_with("mariadb-10.11 · flush-2 · 8 users · rep 2: 3 measured"),
            "{}",
            ws[0].message
        );
    }

    /// MariaDB buffers its redo log in the page cache when innodb_flush_log_at_trx_commit is 2:
    /// that difference is the varied setting's, not another configuration difference.
    #[test]
    fn a_variable_the_server_sets_from_a_varied_one_follows_it() {
        let flush = |id: &str, flush: &str, buffering: &str| {
            let mut r = with_vars(
                lab_run(id, "mariadb", &format!("flush={flush}"), 1, 1, 100.0),
                &[
                    ("innodb_flush_log_at_trx_commit", flush),
                    ("innodb_log_file_buffering", buffering),
                ],
            );
            if let Some(l) = r.lab.as_mut() {
                l.variant_settings
                    .insert("innodb_flush_log_at_trx_commit".into(), flush.into());
            }
            r
        };
        let c = compare_runs(
            &[flush("a", "1", "OFF"), flush("b", "2", "ON")],
            &CompareOptions::default(),
        )
        .unwrap();
        assert_eq!(kinds(&c.warnings), Vec::<&str>::new());
        assert_eq!(c.variables.follow_warnings, ["innodb_log_file_buffering"]);
    }

    /// Pinned to one CPU the server sizes its thread pool to one group, shared to two: that is
    /// the pinning's doing, which the experiment varies, not a configuration difference.
    #[test]
    fn settings_sized_by_the_cpus_follow_the_pinning() {
        let pinned = |id: &str, pinning: &str, pool: &str| {
            let mut r = with_vars(
                lab_run(id, "mariadb", "default", 1, 1, 100.0),
                &[("thread_pool_size", pool)],
            );
            if let Some(l) = r.lab.as_mut() {
                l.pinning = pinning.into();
            }
            r
        };
        let c = compare_runs(
            &[pinned("a", "separate", "1"), pinned("b", "shared", "2")],
            &CompareOptions::default(),
        )
        .unwrap();
        assert_eq!(kinds(&c.warnings), Vec::<&str>::new());
        assert_eq!(c.variables.varied_on_purpose, ["thread_pool_size"]);
        // Without a pinning to explain it, the same difference is a configuration's.
        let c = compare_runs(
            &[pinned("a", "shared", "1"), pinned("b", "shared", "2")],
            &CompareOptions {
                by: Some(super::super::GroupBy::Run),
                ..CompareOptions::default()
            },
        )
        .unwrap();
        assert_eq!(kinds(&c.warnings), ["config_differs"]);
    }
}
