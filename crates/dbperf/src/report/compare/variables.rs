//! The apples-to-apples check: which global server variables differ between compared runs,
//! leaving out the ones that differ between any two server instances and the ones an
//! experiment varies on purpose, and singling out the ones known to distort results.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Column, RunInfo};

/// Variables that differ between any two server instances without changing how they perform,
/// so listing them would bury the ones that matter:
///
/// - where the instance lives: directories, files, socket and ports (a sandbox or a second
///   server always has its own; names ending in `_dir`, `tmpdir`, `_file` or `_path` are
///   covered by rule);
/// - who it is: host name, server id, UUID and MariaDB's `server_uid`;
/// - where its logs have got to: GTID positions, which grow with every write;
/// - per-connection state that `SHOW GLOBAL VARIABLES` may still print (timestamp, seeds);
/// - version strings: the columns already name the servers, and the notes say when versions
///   differ.
pub const ALWAYS_DIFFER: &[&str] = &[
    "basedir",
    "datadir",
    "tmpdir",
    "socket",
    "port",
    "extra_port",
    "mysqlx_port",
    "mysqlx_socket",
    "report_port",
    "report_host",
    "pid_file",
    "log_error",
    "log_basename",
    "log_bin_basename",
    "log_bin_index",
    "relay_log",
    "relay_log_basename",
    "relay_log_index",
    "innodb_buffer_pool_filename",
    "innodb_undo_directory",
    "innodb_log_group_home_dir",
    "innodb_data_home_dir",
    "secure_file_priv",
    "hostname",
    "server_id",
    "server_uuid",
    "server_uid",
    "slave_load_tmpdir",
    "replica_load_tmpdir",
    "gtid_binlog_pos",
    "gtid_binlog_state",
    "gtid_current_pos",
    "gtid_slave_pos",
    "gtid_executed",
    "gtid_purged",
    "timestamp",
    "pseudo_thread_id",
    "rand_seed1",
    "rand_seed2",
    "version",
    "version_comment",
    "version_compile_machine",
    "version_compile_os",
    "version_malloc_library",
    "version_source_revision",
    "version_ssl_library",
    "innodb_version",
    "wsrep_node_name",
    "wsrep_node_address",
];

/// Variables known to change benchmark results, each for a well-understood reason. A
/// difference in one of these is printed first, as a WARNING.
pub const DISTORTING: &[(&str, &str)] = &[
    ("performance_schema", "instrumentation costs CPU on every statement"),
    (
        "sort_buffer_size",
        "allocated per sort; large values slow every ORDER BY",
    ),
    ("join_buffer_size", "allocated per join"),
    (
        "innodb_flush_log_at_trx_commit",
        "whether each commit waits for an fsync",
    ),
    ("sync_binlog", "whether each commit fsyncs the binary log"),
    ("innodb_doublewrite", "every page flush written twice or once"),
    ("innodb_buffer_pool_size", "how much of the data is served from memory"),
    ("innodb_log_file_size", "checkpoint pressure on write workloads"),
    ("innodb_flush_method", "page cache or O_DIRECT for data files"),
    ("character_set_server", "string comparison cost and row size"),
    ("collation_server", "string comparison cost"),
    ("log_bin", "binary logging on or off"),
    ("query_cache_type", "result caching and its global mutex"),
    ("query_cache_size", "result caching and its global mutex"),
];

/// One variable's values per column, in column order: the distinct values among the column's
/// runs, joined with ` | `; `(absent)` where the server does not have it; `?` where no run of
/// the column recorded variables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariableValues {
    /// Variable name.
    pub name: String,
    /// One entry per column.
    pub values: Vec<String>,
}

/// Server variables that differ between the compared runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VariableDiff {
    /// Known to distort results ([`DISTORTING`]) and not varied on purpose.
    pub warnings: Vec<VariableValues>,
    /// Every other differing variable, except [`ALWAYS_DIFFER`] ones.
    pub differing: Vec<VariableValues>,
    /// Present in some runs' servers and absent in others (usually different versions).
    pub only_in_some: Vec<String>,
    /// Differing, but set by the lab variants on purpose (`lab.variant_settings`).
    pub varied_on_purpose: Vec<String>,
    /// Differing along with a warned or deliberately varied variable whose name they extend:
    /// `performance_schema_*` sizes are autosized when `performance_schema` is on and -1 when
    /// it is off. Listed compactly.
    pub follow_warnings: Vec<String>,
}

/// Whether `name` differs between any two instances (see [`ALWAYS_DIFFER`]).
pub fn always_differs(name: &str) -> bool {
    ALWAYS_DIFFER.contains(&name)
        || name.ends_with("_dir")
        || name.ends_with("tmpdir")
        || name.ends_with("_file")
        || name.ends_with("_path")
}

/// Why `name` distorts results, if it is known to ([`DISTORTING`]).
pub fn distortion(name: &str) -> Option<&'static str> {
    DISTORTING.iter().find(|(n, _)| *n == name).map(|(_, why)| *why)
}

fn normalize(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('-', "_")
}

/// Compares the variables of `runs`; `column_of_run[i]` is the label of run `i`'s column.
pub fn diff(runs: &[RunInfo], column_of_run: &[&str], columns: &[Column]) -> VariableDiff {
    let on_purpose: BTreeSet<String> = runs
        .iter()
        .filter_map(|r| r.lab.as_ref())
        .flat_map(|l| l.variant_settings.keys().map(|k| normalize(k)))
        .collect();
    let known: Vec<(usize, &BTreeMap<String, String>)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.variables.as_ref().map(|v| (i, v)))
        .collect();
    let names: BTreeSet<&String> = known.iter().flat_map(|(_, v)| v.keys()).collect();
    let mut out = VariableDiff::default();
    for name in names {
        if always_differs(name) {
            continue;
        }
        let values: Vec<Option<&String>> = known.iter().map(|(_, v)| v.get(name)).collect();
        if values.iter().any(Option::is_none) {
            out.only_in_some.push(name.clone());
            continue;
        }
        if values.iter().collect::<BTreeSet<_>>().len() < 2 {
            continue;
        }
        if on_purpose.contains(name) {
            out.varied_on_purpose.push(name.clone());
            continue;
        }
        let per_column = columns
            .iter()
            .map(|c| {
                let seen: BTreeSet<&str> = known
                    .iter()
                    .filter(|(i, _)| column_of_run[*i] == c.label)
                    .map(|(_, v)| v.get(name).map_or("(absent)", String::as_str))
                    .collect();
                if seen.is_empty() {
                    "?".to_string()
                } else {
                    seen.into_iter().collect::<Vec<_>>().join(" | ")
                }
            })
            .collect();
        let entry = VariableValues {
            name: name.clone(),
            values: per_column,
        };
        if distortion(name).is_some() {
            out.warnings.push(entry);
        } else {
            out.differing.push(entry);
        }
    }
    // A name sorts before its `_`-suffixed relatives, so every cause is known by now.
    let causes: Vec<String> = out
        .warnings
        .iter()
        .map(|w| format!("{}_", w.name))
        .chain(out.varied_on_purpose.iter().map(|n| format!("{n}_")))
        .collect();
    let (follow, rest): (Vec<_>, Vec<_>) = out
        .differing
        .into_iter()
        .partition(|d| causes.iter().any(|c| d.name.starts_with(c.as_str())));
    out.differing = rest;
    out.follow_warnings = follow.into_iter().map(|d| d.name).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{lab_run, run};
    use super::super::{compare_runs, CompareOptions};
    use super::*;

    fn with_vars(mut r: RunInfo, vars: &[(&str, &str)]) -> RunInfo {
        r.variables = Some(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        r
    }

    #[test]
    fn noise_is_filtered_and_distorting_variables_are_warned() {
        let a = with_vars(
            run("a", 1, 100.0),
            &[
                ("pid_file", "/x/a.pid"),
                ("general_log_file", "/x/a.log"),
                ("port", "3306"),
                ("gtid_binlog_pos", "0-1-5"),
                ("version", "10.11.6-MariaDB"),
                ("sort_buffer_size", "2097152"),
                ("performance_schema", "OFF"),
                ("max_connections", "151"),
                ("wait_timeout", "28800"),
                ("aria_pagecache_buffer_size", "1"),
                ("performance_schema_digests_size", "-1"),
                ("slave_load_tmpdir", "/x/tmp"),
                ("server_uid", "x"),
            ],
        );
        let b = with_vars(
            run("b", 1, 100.0),
            &[
                ("pid_file", "/y/b.pid"),
                ("general_log_file", "/y/b.log"),
                ("port", "3307"),
                ("gtid_binlog_pos", "0-1-9"),
                ("version", "10.11.7-MariaDB"),
                ("sort_buffer_size", "4194304"),
                ("performance_schema", "ON"),
                ("max_connections", "500"),
                ("wait_timeout", "28800"),
                ("innodb_new_thing", "1"),
                ("performance_schema_digests_size", "5000"),
                ("slave_load_tmpdir", "/y/tmp"),
                ("server_uid", "y"),
            ],
        );
        let c = compare_runs(&[a, b], &CompareOptions::default()).unwrap();
        let v = &c.variables;
        let names = |l: &[VariableValues]| l.iter().map(|x| x.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&v.warnings), ["performance_schema", "sort_buffer_size"]);
        assert_eq!(v.warnings[0].values, ["OFF", "ON"]);
        assert_eq!(names(&v.differing), ["max_connections"]);
        assert_eq!(v.only_in_some, ["aria_pagecache_buffer_size", "innodb_new_thing"]);
        assert!(v.varied_on_purpose.is_empty());
        assert_eq!(v.follow_warnings, ["performance_schema_digests_size"]);
    }

    #[test]
    fn variant_settings_are_not_warned_and_repetitions_share_a_column() {
        let mk = |id: &str, variant: &str, dw: &str, rep: u32| {
            let mut r = with_vars(
                lab_run(id, "mariadb", variant, 1, rep, 100.0),
                &[
                    ("innodb_doublewrite", dw),
                    ("sync_binlog", if rep == 1 { "0" } else { "1" }),
                ],
            );
            let lab = r.lab.as_mut().unwrap();
            lab.variant_settings.insert("innodb-doublewrite".into(), dw.into());
            r
        };
        let runs = [
            mk("a1", "dw-on", "ON", 1),
            mk("a2", "dw-on", "ON", 2),
            mk("b1", "dw-off", "OFF", 1),
        ];
        let c = compare_runs(&runs, &CompareOptions::default()).unwrap();
        let v = &c.variables;
        assert_eq!(v.varied_on_purpose, ["innodb_doublewrite"]);
        assert_eq!(v.warnings.len(), 1);
        assert_eq!(v.warnings[0].name, "sync_binlog");
        assert_eq!(v.warnings[0].values, ["0 | 1", "0"]);
    }

    #[test]
    fn runs_without_variables_are_left_out() {
        let a = with_vars(run("a", 1, 1.0), &[("sort_buffer_size", "1")]);
        let mut b = run("b", 1, 1.0);
        b.variables = None;
        let c = compare_runs(&[a, b], &CompareOptions::default()).unwrap();
        assert_eq!(c.variables, VariableDiff::default());
        assert!(
            c.notes.iter().any(|n| n.contains("run b has no server variables")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn path_like_names_always_differ() {
        assert!(always_differs("slow_query_log_file"));
        assert!(always_differs("plugin_dir"));
        assert!(always_differs("innodb_data_file_path"));
        assert!(!always_differs("innodb_log_file_size"));
        assert!(distortion("log_bin").is_some() && distortion("max_connections").is_none());
    }
}
