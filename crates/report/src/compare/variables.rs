//! The apples-to-apples check: which global server variables differ between compared runs,
//! leaving out the ones that differ between any two server instances and the ones an
//! experiment varies on purpose, and singling out the ones known to distort results. Between
//! server versions ([`VersionDiff`]) it also tells the defaults that changed (set by no
//! recorded setting, one value per version) from what the experiment set on purpose, names
//! the settings only some versions have, and compares the redo log by its total size.

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
///   differ;
/// - InnoDB's monitor switches (`innodb_monitor_enable`, ...): commands more than settings,
///   whose value is the last counter switched, by the telemetry sampler among others.
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
    "innodb_monitor_enable",
    "innodb_monitor_disable",
    "innodb_monitor_reset",
    "innodb_monitor_reset_all",
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

/// Variables that matter only while another is on: not warned when `.1` is `.2` in every run.
/// `sync_binlog` changed its default (0 → 1 in MySQL 5.7.7) but the sandboxes write no binlog.
const INERT_WHEN: &[(&str, &str, &str)] = &[("sync_binlog", "log_bin", "OFF")];

/// Variables whose default the server sizes by the CPUs it may run on: MariaDB's
/// `thread_pool_size` (one group per CPU), MySQL 8.4's InnoDB thread and instance counts. Between
/// runs pinned to different CPUs (lab pinnings) their difference is the pinning's, which the
/// experiment varies on purpose, unless a recorded setting sets them.
const SIZED_BY_CPUS: &[&str] = &[
    "thread_pool_size",
    "innodb_buffer_pool_instances",
    "innodb_page_cleaners",
    "innodb_purge_threads",
    "innodb_parallel_read_threads",
];

/// Variables the server sets itself from another (`.0` follows `.1`): MariaDB 10.8+ puts the
/// redo log in the page cache (`innodb_log_file_buffering = ON`) when
/// `innodb_flush_log_at_trx_commit` is 2, and bypasses it otherwise. Where the cause is varied
/// on purpose or warned, the follower's difference is the cause's.
const SET_BY: &[(&str, &str)] = &[("innodb_log_file_buffering", "innodb_flush_log_at_trx_commit")];

/// The redo log's variables: their meaning changed between versions (a capacity in MySQL
/// 8.0.30+, one file in MariaDB 10.5+, `innodb_log_files_in_group` files before), so they are
/// compared by the total redo size they make.
const REDO: &[&str] = &[
    "innodb_log_file_size",
    "innodb_log_files_in_group",
    "innodb_redo_log_capacity",
];

/// How many names of one list of variables only some versions have are kept for text output
/// (all are in the JSON).
pub const LACKING_SHOWN: usize = 8;

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
    /// Every other differing variable, except [`ALWAYS_DIFFER`] ones (and, between server
    /// versions, the defaults that changed: [`VersionDiff::defaults_changed`]).
    pub differing: Vec<VariableValues>,
    /// Present in some runs' servers and absent in others (usually different versions).
    pub only_in_some: Vec<String>,
    /// Differing, but set by the lab variants on purpose (`lab.variant_settings`).
    pub varied_on_purpose: Vec<String>,
    /// Differing along with a warned or deliberately varied variable whose name they extend:
    /// `performance_schema_*` sizes are autosized when `performance_schema` is on and -1 when
    /// it is off. Listed compactly.
    pub follow_warnings: Vec<String>,
    /// When the runs are on two or more server versions: what the versions explain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<VersionDiff>,
}

/// What differs because the compared runs are on different server versions (or products).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VersionDiff {
    /// The versions, in order of first appearance.
    pub servers: Vec<VersionName>,
    /// Whether every run records the settings it was started with (lab runs: the server's and
    /// the variant's); when false, "set by nobody" means "set by no recorded setting": a
    /// `--set` given to `dbperf server start` is not in a run's manifest.
    pub settings_recorded: bool,
    /// Differing variables no recorded setting names, with one value on every run of a version
    /// and different values between versions: defaults that changed. Their `values` are one per
    /// version, in the order of `servers`. Those known to distort results are also in
    /// [`VariableDiff::warnings`] (by column); the rest are no longer in
    /// [`VariableDiff::differing`].
    pub defaults_changed: Vec<VariableValues>,
    /// Differing variables the experiment's `[[server]]` settings set, differently per server.
    pub set_on_purpose: Vec<String>,
    /// Variables only some versions have, one entry per combination of versions.
    pub lacking: Vec<Lacking>,
    /// The redo log's total size per version, in the order of `servers` (`256 MiB (2 x 128 MiB
    /// files)`), when the redo variables differ between the versions; empty otherwise.
    pub redo: Vec<String>,
    /// The total redo size is the same in every run, so the redo variables that differ only
    /// spell it differently (they are then not warned).
    pub redo_same: bool,
}

/// A server version as the comparison names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VersionName {
    /// The lab's server label(s) of the version, or the version string outside the lab.
    pub name: String,
    /// The version string the server reported.
    pub version: String,
}

impl VersionName {
    /// `mysql-5.6.24`, or `mariadb-10.11 (10.11.6)` when the label does not say the version.
    pub fn display(&self) -> String {
        let number: String = self
            .version
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        if number.is_empty() || self.name.contains(&number) {
            self.name.clone()
        } else {
            format!("{} ({number})", self.name)
        }
    }
}

/// Variables that some versions have and the others lack.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Lacking {
    /// The versions that have them ([`VersionName::display`]).
    pub have: Vec<String>,
    /// The versions that lack them.
    pub lack: Vec<String>,
    /// The variables: those the experiment's settings name first, then those known to distort
    /// results or sizing the redo log, then InnoDB's, then the rest, each part alphabetical.
    pub names: Vec<String>,
    /// How many of the first `names` the experiment's settings name.
    pub set: usize,
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
    let name = name.trim().to_ascii_lowercase().replace('-', "_");
    match name.strip_prefix("loose_") {
        Some(rest) => rest.to_string(),
        None => name,
    }
}

/// A value as compared: versions spell some values differently without a difference in
/// meaning. An empty `innodb_flush_method` is `fsync` (MySQL before 8.0, MariaDB before
/// 10.6), `utf8` is `utf8mb3` (renamed in MySQL 8.0 and MariaDB 10.6), a number is the
/// same number with trailing zeros after its decimal point, and case does not matter
/// (`INNODB` and `innodb`: values are keywords, paths are left out anyway).
fn same_meaning<'a>(name: &str, value: &'a str) -> std::borrow::Cow<'a, str> {
    if name == "innodb_flush_method" && value.is_empty() {
        return "fsync".into();
    }
    // `75` and `75.000000`: MariaDB prints its percentages with six decimals.
    if value.contains('.') && value.parse::<f64>().is_ok() {
        return value.trim_end_matches('0').trim_end_matches('.').to_string().into();
    }
    let value = value.to_ascii_lowercase();
    match value.strip_prefix("utf8mb3") {
        Some(rest) if rest.is_empty() || rest.starts_with('_') => format!("utf8{rest}").into(),
        _ => value.into(),
    }
}

/// Orders names for reading: set by the experiment, known to distort (or sizing the redo
/// log), InnoDB's, the rest.
fn reading_rank(name: &str, set: &BTreeSet<String>) -> (u8, String) {
    let rank = if set.contains(name) {
        0
    } else if distortion(name).is_some() || REDO.contains(&name) {
        1
    } else if name.starts_with("innodb_") {
        2
    } else {
        3
    };
    (rank, name.to_string())
}

/// Total redo in bytes and how it is made, from one run's variables.
fn redo_of(v: &BTreeMap<String, String>) -> Option<(u64, String)> {
    if let Some(capacity) = v.get("innodb_redo_log_capacity").and_then(|c| c.parse::<u64>().ok()) {
        return Some((capacity, "innodb_redo_log_capacity".into()));
    }
    let size: u64 = v.get("innodb_log_file_size")?.parse().ok()?;
    let files: u64 = match v.get("innodb_log_files_in_group") {
        Some(n) => n.parse().ok()?,
        None => 1,
    };
    let how = if files == 1 {
        "one file".to_string()
    } else {
        format!("{files} x {} files", mib(size))
    };
    Some((size.saturating_mul(files), how))
}

fn mib(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Compares the variables of `runs`; `column_of_run[i]` is the label of run `i`'s column.
pub fn diff(runs: &[RunInfo], column_of_run: &[&str], columns: &[Column]) -> VariableDiff {
    let on_purpose: BTreeSet<String> = runs
        .iter()
        .filter_map(|r| r.lab.as_ref())
        .flat_map(|l| l.variant_settings.keys().map(|k| normalize(k)))
        .collect();
    let server_set: BTreeSet<String> = runs
        .iter()
        .filter_map(|r| r.lab.as_ref())
        .flat_map(|l| l.server_settings.keys().map(|k| normalize(k)))
        .collect();
    let set: BTreeSet<String> = on_purpose.union(&server_set).cloned().collect();
    let pinnings_differ = runs
        .iter()
        .map(|r| r.lab.as_ref().map(|l| l.pinning.as_str()))
        .collect::<BTreeSet<_>>()
        .len()
        > 1;
    let known: Vec<(usize, &BTreeMap<String, String>)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.variables.as_ref().map(|v| (i, v)))
        .collect();
    // The versions of the runs with variables, in order of first appearance; `version_of[k]`
    // is the index of `known[k]`'s version.
    let mut servers: Vec<VersionName> = Vec::new();
    let mut version_of: Vec<Option<usize>> = Vec::new();
    for (i, _) in &known {
        let r = &runs[*i];
        let Some(version) = r.server_version.as_deref() else {
            version_of.push(None);
            continue;
        };
        let label = r.lab.as_ref().map_or(version, |l| l.server.as_str());
        let at = match servers.iter().position(|s| s.version == version) {
            Some(at) => at,
            None => {
                servers.push(VersionName {
                    name: String::new(),
                    version: version.to_string(),
                });
                servers.len() - 1
            }
        };
        let names: Vec<&str> = servers[at].name.split(", ").filter(|n| !n.is_empty()).collect();
        if !names.contains(&label) {
            servers[at].name = names.into_iter().chain([label]).collect::<Vec<_>>().join(", ");
        }
        version_of.push(Some(at));
    }
    let across_versions = servers.len() > 1;
    let inert = |name: &str| {
        INERT_WHEN.iter().any(|(n, other, value)| {
            *n == name
                && known
                    .iter()
                    .all(|(_, v)| v.get(*other).is_some_and(|x| x.eq_ignore_ascii_case(value)))
        })
    };
    let totals: Vec<Option<(u64, String)>> = known.iter().map(|(_, v)| redo_of(v)).collect();
    let redo_same = across_versions
        && totals.iter().all(Option::is_some)
        && totals.iter().flatten().map(|t| t.0).collect::<BTreeSet<_>>().len() == 1;

    let names: BTreeSet<&String> = known.iter().flat_map(|(_, v)| v.keys()).collect();
    let mut out = VariableDiff::default();
    let mut versions = VersionDiff {
        settings_recorded: known.iter().all(|(i, _)| runs[*i].lab.is_some()),
        redo_same,
        ..VersionDiff::default()
    };
    let mut lacking: BTreeMap<Vec<usize>, Vec<String>> = BTreeMap::new();
    let mut redo_differs = false;
    for name in names {
        if always_differs(name) {
            continue;
        }
        let values: Vec<Option<&String>> = known.iter().map(|(_, v)| v.get(name)).collect();
        if values.iter().any(Option::is_none) {
            out.only_in_some.push(name.clone());
            if across_versions {
                // Which versions have it: every run of the version, or none (else it is a
                // plugin or a setting of some runs only, not a matter of versions).
                let mut have = vec![(false, false); servers.len()];
                let mut unversioned = false;
                for (k, value) in values.iter().enumerate() {
                    match version_of[k] {
                        Some(at) if value.is_some() => have[at].0 = true,
                        Some(at) => have[at].1 = true,
                        None => unversioned = true,
                    }
                }
                if !unversioned && have.iter().all(|(yes, no)| yes != no) {
                    let key: Vec<usize> = (0..servers.len()).filter(|&at| have[at].0).collect();
                    lacking.entry(key).or_default().push(name.clone());
                }
            }
            redo_differs |= REDO.contains(&name.as_str());
            continue;
        }
        let compared: BTreeSet<std::borrow::Cow<str>> =
            values.iter().flatten().map(|v| same_meaning(name, v)).collect();
        if compared.len() < 2 {
            continue;
        }
        if on_purpose.contains(name)
            || (pinnings_differ && SIZED_BY_CPUS.contains(&name.as_str()) && !set.contains(name))
        {
            out.varied_on_purpose.push(name.clone());
            continue;
        }
        if across_versions && REDO.contains(&name.as_str()) {
            redo_differs = true;
            if redo_same {
                continue;
            }
        }
        let entry = VariableValues {
            name: name.clone(),
            values: per_column(&known, column_of_run, columns, name),
        };
        // A default that changed: nobody set it, one value within each version, and the
        // values differ between versions.
        let default_changed = across_versions && !set.contains(name) && {
            let mut per_version: BTreeMap<Option<usize>, BTreeSet<std::borrow::Cow<str>>> = BTreeMap::new();
            for (k, value) in values.iter().enumerate() {
                if let Some(v) = value {
                    per_version
                        .entry(version_of[k])
                        .or_default()
                        .insert(same_meaning(name, v));
                }
            }
            !per_version.contains_key(&None) && per_version.values().all(|s| s.len() == 1)
        };
        if across_versions && server_set.contains(name) {
            versions.set_on_purpose.push(name.clone());
        }
        // Each version's value (the same on all its runs), in the order of `servers`.
        let by_version = || VariableValues {
            name: name.clone(),
            values: (0..servers.len())
                .map(|at| {
                    let k = version_of.iter().position(|v| *v == Some(at)).unwrap_or_default();
                    values[k].map_or("?", String::as_str).to_string()
                })
                .collect(),
        };
        if distortion(name).is_some() && !inert(name) {
            if default_changed {
                versions.defaults_changed.push(by_version());
            }
            out.warnings.push(entry);
        } else if default_changed {
            versions.defaults_changed.push(by_version());
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
    let follows = |d: &VariableValues| {
        causes.iter().any(|c| d.name.starts_with(c.as_str()))
            || SET_BY.iter().any(|(follower, cause)| {
                d.name == *follower && causes.iter().any(|c| c.strip_suffix('_') == Some(*cause))
            })
    };
    let (follow, rest): (Vec<_>, Vec<_>) = out.differing.into_iter().partition(follows);
    out.differing = rest;
    out.follow_warnings = follow.into_iter().map(|d| d.name).collect();
    if across_versions {
        let warned: BTreeSet<&str> = out.warnings.iter().map(|w| w.name.as_str()).collect();
        let (follow, rest): (Vec<_>, Vec<_>) = versions
            .defaults_changed
            .into_iter()
            .partition(|d| !warned.contains(d.name.as_str()) && follows(d));
        versions.defaults_changed = rest;
        out.follow_warnings.extend(follow.into_iter().map(|d| d.name));
        out.follow_warnings.sort();
        let display: Vec<String> = servers.iter().map(VersionName::display).collect();
        versions.lacking = lacking
            .into_iter()
            .map(|(have, mut names)| {
                names.sort_by_key(|n| reading_rank(n, &set));
                Lacking {
                    lack: (0..servers.len())
                        .filter(|at| !have.contains(at))
                        .map(|at| display[at].clone())
                        .collect(),
                    have: have.iter().map(|&at| display[at].clone()).collect(),
                    set: names.iter().filter(|n| set.contains(*n)).count(),
                    names,
                }
            })
            .collect();
        // Widest first: what most versions lack reads first.
        versions.lacking.sort_by_key(|l| std::cmp::Reverse(l.names.len()));
        if redo_differs {
            versions.redo = (0..servers.len())
                .map(|at| {
                    let seen: BTreeSet<String> = version_of
                        .iter()
                        .zip(&totals)
                        .filter(|(v, _)| **v == Some(at))
                        .map(|(_, t)| match t {
                            Some((bytes, how)) => format!("{} ({how})", mib(*bytes)),
                            None => "?".to_string(),
                        })
                        .collect();
                    if seen.is_empty() {
                        "?".to_string()
                    } else {
                        seen.into_iter().collect::<Vec<_>>().join(" | ")
                    }
                })
                .collect();
        } else {
            versions.redo_same = false;
        }
        versions.servers = servers;
        out.versions = Some(versions);
    }
    out
}

/// `name`'s values per column (see [`VariableValues`]).
fn per_column(
    known: &[(usize, &BTreeMap<String, String>)],
    column_of_run: &[&str],
    columns: &[Column],
    name: &str,
) -> Vec<String> {
    columns
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
        .collect()
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

    /// A lab run of `server` (reporting `version`) with `vars`, the variant setting
    /// doublewrite to `dw` and the server's own `settings`.
    fn versioned(
        id: &str,
        server: &str,
        version: &str,
        dw: &str,
        settings: &[(&str, &str)],
        vars: &[(&str, &str)],
    ) -> RunInfo {
        let mut r = with_vars(
            lab_run(id, server, &format!("dw-{dw}"), 1, 1, 100.0),
            &[vars, &[("innodb_doublewrite", dw)]].concat(),
        );
        r.server_version = Some(version.into());
        let lab = r.lab.as_mut().unwrap();
        lab.variant_settings.insert("innodb_doublewrite".into(), dw.into());
        lab.server_settings = settings.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        r
    }

    const MYSQL56: &[(&str, &str)] = &[
        ("innodb_buffer_pool_instances", "8"),
        ("innodb_flush_neighbors", "1"),
        ("innodb_flush_method", ""),
        ("innodb_log_file_size", "134217728"),
        ("innodb_log_files_in_group", "2"),
        ("character_set_server", "latin1"),
        ("character_set_system", "utf8"),
        ("log_bin", "OFF"),
        ("sync_binlog", "0"),
        ("query_cache_type", "ON"),
        ("performance_schema", "ON"),
        ("performance_schema_max_cond_classes", "80"),
    ];
    const MYSQL80: &[(&str, &str)] = &[
        ("innodb_buffer_pool_instances", "1"),
        ("innodb_flush_neighbors", "0"),
        ("innodb_flush_method", "fsync"),
        ("innodb_log_file_size", "50331648"),
        ("innodb_log_files_in_group", "2"),
        ("innodb_redo_log_capacity", "268435456"),
        ("character_set_server", "utf8mb4"),
        ("character_set_system", "utf8mb3"),
        ("log_bin", "OFF"),
        ("sync_binlog", "1"),
        ("performance_schema", "ON"),
        ("performance_schema_max_cond_classes", "100"),
    ];

    #[test]
    fn across_versions_defaults_that_changed_are_told_from_settings_and_from_what_one_lacks() {
        fn sort(v: &str) -> [(&str, &str); 1] {
            [("sort_buffer_size", v)]
        }
        let runs = [
            versioned(
                "a1",
                "mysql-5.6.24",
                "5.6.24",
                "ON",
                &[("sort-buffer-size", "256K")],
                &[MYSQL56, &sort("262144"), &[("thread_cache_size", "9")]].concat(),
            ),
            versioned(
                "a2",
                "mysql-5.6.24",
                "5.6.24",
                "ON",
                &[("sort-buffer-size", "256K")],
                &[MYSQL56, &sort("262144"), &[("thread_cache_size", "10")]].concat(),
            ),
            versioned(
                "b1",
                "mysql-8.0.31",
                "8.0.31",
                "ON",
                &[("sort_buffer_size", "2M")],
                &[MYSQL80, &sort("2097152"), &[("thread_cache_size", "9")]].concat(),
            ),
        ];
        let c = compare_runs(&runs, &CompareOptions::default()).unwrap();
        let v = &c.variables;
        let names = |l: &[VariableValues]| l.iter().map(|x| x.name.clone()).collect::<Vec<_>>();
        let versions = v.versions.as_ref().expect("two versions");
        let shown: Vec<String> = versions.servers.iter().map(VersionName::display).collect();
        assert_eq!(shown, ["mysql-5.6.24", "mysql-8.0.31"]);
        assert!(versions.settings_recorded);
        // Nobody set them and each version has one value: defaults that changed. The redo
        // sizes are the same total (2 x 128 MiB vs a 256 MiB capacity), an empty flush method
        // is fsync, and utf8 is utf8mb3: none of those is a difference.
        assert_eq!(
            names(&versions.defaults_changed),
            [
                "character_set_server",
                "innodb_buffer_pool_instances",
                "innodb_flush_neighbors",
                "performance_schema_max_cond_classes",
                "sync_binlog"
            ]
        );
        assert_eq!(versions.defaults_changed[2].values, ["1", "0"]);
        // Set on purpose, differently per server: warned, but not a default.
        assert_eq!(names(&v.warnings), ["character_set_server", "sort_buffer_size"]);
        assert_eq!(versions.set_on_purpose, ["sort_buffer_size"]);
        // sync_binlog is not warned: no run writes a binlog.
        assert!(!names(&v.warnings).contains(&"sync_binlog".to_string()));
        // One value per version is needed to blame the version.
        assert_eq!(names(&v.differing), ["thread_cache_size"]);
        assert!(v.varied_on_purpose.is_empty() && v.follow_warnings.is_empty());
        assert!(versions.redo_same);
        assert_eq!(
            versions.redo,
            ["256 MiB (2 x 128 MiB files)", "256 MiB (innodb_redo_log_capacity)"]
        );
        let lacking: Vec<(Vec<String>, Vec<String>, Vec<String>)> = versions
            .lacking
            .iter()
            .map(|l| (l.have.clone(), l.lack.clone(), l.names.clone()))
            .collect();
        assert_eq!(
            lacking,
            [
                (
                    vec!["mysql-5.6.24".to_string()],
                    vec!["mysql-8.0.31".to_string()],
                    vec!["query_cache_type".to_string()]
                ),
                (
                    vec!["mysql-8.0.31".to_string()],
                    vec!["mysql-5.6.24".to_string()],
                    vec!["innodb_redo_log_capacity".to_string()]
                ),
            ]
        );
        assert_eq!(v.only_in_some, ["innodb_redo_log_capacity", "query_cache_type"]);

        let text = c.render(crate::format::Format::Text);
        for line in [
            "character_set_server: latin1 (mysql-5.6.24) vs utf8mb4 (mysql-8.0.31) (string comparison cost and row size) [a default that changed between versions: nobody set it]",
            "sort_buffer_size: 262144 (mysql-5.6.24) vs 2097152 (mysql-8.0.31) (allocated per sort; large values slow every ORDER BY)\n",
            "The runs are on 2 server versions: mysql-5.6.24, mysql-8.0.31.",
            "Defaults that changed between versions (5; no server or variant setting of the experiment sets them):",
            "  innodb_flush_neighbors: 1 (mysql-5.6.24) vs 0 (mysql-8.0.31)\n",
            "  sync_binlog: 0 (mysql-5.6.24) vs 1 (mysql-8.0.31)\n",
            "  Performance Schema sizes, autosized by each version: 1 (performance_schema_max_cond_classes)\n  Warned above as well: character_set_server\n",
            "Redo log size: 256 MiB (2 x 128 MiB files) (mysql-5.6.24) vs 256 MiB (innodb_redo_log_capacity) (mysql-8.0.31) (the same size",
            "Settings only some versions have (2):\n  in mysql-5.6.24, not in mysql-8.0.31 (1): query_cache_type\n  in mysql-8.0.31, not in mysql-5.6.24 (1): innodb_redo_log_capacity\n",
            "Set differently on purpose by the servers' own settings: sort_buffer_size\n",
            "Other server variables that differ (1):\n  thread_cache_size: 10 | 9 (mysql-5.6.24) vs 9 (mysql-8.0.31)\n",
        ] {
            assert!(text.contains(line), "{line:?} in:\n{text}");
        }
        assert!(!text.contains("present in only some"), "{text}");
        let md = c.render(crate::format::Format::Markdown);
        assert!(
            md.contains("Defaults that changed between versions (set by no server or variant setting of the experiment) (5): `innodb_buffer_pool_instances` (mysql-5.6.24: 8, mysql-8.0.31: 1), `innodb_flush_neighbors` (mysql-5.6.24: 1, mysql-8.0.31: 0), `performance_schema_max_cond_classes` (mysql-5.6.24: 80, mysql-8.0.31: 100), `sync_binlog` (mysql-5.6.24: 0, mysql-8.0.31: 1), `character_set_server` (warned above)."),
            "{md}"
        );
        assert!(
            md.contains("- in mysql-8.0.31, not in mysql-5.6.24 (1): innodb_redo_log_capacity"),
            "{md}"
        );
        let json: serde_json::Value = serde_json::from_str(&c.render(crate::format::Format::Json)).unwrap();
        assert_eq!(
            json["variables"]["versions"]["defaults_changed"][2]["name"],
            "innodb_flush_neighbors"
        );
        assert_eq!(json["variables"]["versions"]["lacking"][1]["lack"][0], "mysql-5.6.24");
    }

    #[test]
    fn xtradb_and_a_one_file_redo_log_and_runs_that_record_no_settings() {
        let mk = |id: &str, version: &str, vars: &[(&str, &str)]| {
            let mut r = with_vars(run(id, 1, 100.0), vars);
            r.server_version = Some(version.into());
            r
        };
        let old = mk(
            "old",
            "10.1.23-MariaDB",
            &[
                ("innodb_cleaner_lsn_age_factor", "high_checkpoint"),
                ("innodb_log_file_size", "134217728"),
                ("innodb_log_files_in_group", "2"),
                ("innodb_adaptive_hash_index", "ON"),
                ("performance_schema", "OFF"),
                ("performance_schema_max_cond_classes", "-1"),
            ],
        );
        let new = mk(
            "new",
            "10.11.6-MariaDB-0+deb12u1",
            &[
                ("innodb_log_file_size", "134217728"),
                ("innodb_adaptive_hash_index", "OFF"),
                ("performance_schema", "ON"),
                ("performance_schema_max_cond_classes", "90"),
            ],
        );
        let c = compare_runs(&[old, new], &CompareOptions::default()).unwrap();
        let v = &c.variables;
        let versions = v.versions.as_ref().unwrap();
        assert!(!versions.settings_recorded, "plain runs record no settings");
        let names: Vec<&str> = versions.defaults_changed.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["innodb_adaptive_hash_index", "performance_schema"]);
        assert_eq!(v.warnings.len(), 1);
        // The Performance Schema sizes follow performance_schema, warned above.
        assert_eq!(v.follow_warnings, ["performance_schema_max_cond_classes"]);
        // 2 x 128 MiB against one 128 MiB file: the redo sizes differ and are warned.
        assert!(!versions.redo_same);
        assert_eq!(versions.redo, ["256 MiB (2 x 128 MiB files)", "128 MiB (one file)"]);
        assert_eq!(versions.lacking.len(), 1);
        let l = &versions.lacking[0];
        assert_eq!(l.have, ["10.1.23-MariaDB"]);
        assert_eq!(l.lack, ["10.11.6-MariaDB-0+deb12u1"]);
        assert_eq!(l.names, ["innodb_log_files_in_group", "innodb_cleaner_lsn_age_factor"]);
        let text = c.render(crate::format::Format::Text);
        assert!(
            text.contains("Differ with the server version (2; defaults that changed, unless a `--set` the runs do not record set them):"),
            "{text}"
        );
        assert!(text.contains("Redo log size: 256 MiB (2 x 128 MiB files) (10.1.23-MariaDB) vs 128 MiB (one file) (10.11.6-MariaDB-0+deb12u1)\n"), "{text}");
        let label = VersionName {
            name: "mariadb-10.11".into(),
            version: "10.11.6-MariaDB-0+deb12u1".into(),
        };
        assert_eq!(label.display(), "mariadb-10.11 (10.11.6)");
    }

    #[test]
    fn one_version_has_no_versions_section() {
        let a = with_vars(run("a", 1, 1.0), &[("innodb_flush_method", ""), ("x", "1")]);
        let b = with_vars(run("b", 1, 1.0), &[("innodb_flush_method", "fsync"), ("y", "1")]);
        let c = compare_runs(&[a, b], &CompareOptions::default()).unwrap();
        assert_eq!(c.variables.versions, None);
        assert_eq!(c.variables.only_in_some, ["x", "y"]);
        let text = c.render(crate::format::Format::Text);
        assert!(text.contains("Server variables present in only some of the runs (different versions): 2 (x, y)"));
        assert!(!text.contains("Defaults that changed"), "{text}");
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
