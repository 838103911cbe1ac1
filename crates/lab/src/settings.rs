//! Server settings as an experiment file gives them: TOML values in the server's option syntax,
//! and the checks that need no server (a size setting is a size, `max_connections` is a count
//! that leaves room for every `users` count). Whether the server knows a setting's name is
//! checked against the server itself (`lab::run::check_servers`).

use dbperf_core::size::parse_size;
use std::ops::Range;

use toml::Value;

use super::experiment::{ExperimentError, ServerSpec, Variant, WorkloadSpec};

/// Connections a run opens besides its users (telemetry, the server facts it records).
const SPARE_CONNECTIONS: u64 = 2;

/// A TOML setting value as the server's option syntax: booleans become ON/OFF.
pub(super) fn setting_value(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) if s.trim().is_empty() => Err("the value is empty".into()),
        Value::String(s) => Ok(s.trim().to_owned()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(if *b { "ON" } else { "OFF" }.into()),
        other => Err(format!(
            "expected a string, number or boolean, got a {}",
            other.type_str()
        )),
    }
}

/// A server setting's value as the server's option syntax, checked as far as it can be without
/// the server: a size setting must be a size, `max_connections` a count.
pub(super) fn setting(key: &str, v: &Value) -> Result<String, String> {
    let value = setting_value(v).map_err(|m| format!("setting {key}: {m}"))?;
    dbperf_server::Setting::parse(&format!("{key}={value}")).map_err(|e| e.to_string())?;
    if is_size_setting(key) && parse_size(&value).is_none() && value.parse::<i64>().is_err() {
        return Err(format!(
            "setting {key}: {value:?} is not a size: give bytes, or a number with K, M, G or T (e.g. \"512M\", \"2G\")"
        ));
    }
    if key.replace('-', "_").eq_ignore_ascii_case("max_connections") && value.parse::<u32>().is_err() {
        return Err(format!("setting {key}: {value:?} is not a number of connections"));
    }
    Ok(value)
}

/// Settings whose value is an amount of memory or disk: MySQL's and MariaDB's `*_size` and
/// `innodb_redo_log_capacity`, PostgreSQL's buffers, `*_mem` and WAL sizes.
pub(super) fn is_size_setting(key: &str) -> bool {
    let k = key.replace('-', "_").to_ascii_lowercase();
    k.ends_with("_size") || k.ends_with("_mem") || k.ends_with("_buffers") || k == "innodb_redo_log_capacity"
}

/// Refuses users that cannot connect: more than `max_connections` (less a few spare) where a
/// server or variant sets it.
pub(super) fn check_max_connections(
    servers: &[ServerSpec],
    variants: &[Variant],
    workloads: &[WorkloadSpec],
    users_spans: &[Range<usize>],
    at: &impl Fn(Range<usize>, String) -> ExperimentError,
) -> Result<(), ExperimentError> {
    let max_connections = |settings: &[(String, String)]| {
        settings
            .iter()
            .rev()
            .find(|(k, _)| k.replace('-', "_").eq_ignore_ascii_case("max_connections"))
            .and_then(|(_, v)| v.parse::<u64>().ok())
    };
    for server in servers {
        for variant in variants {
            let (limit, source) = match (max_connections(&variant.settings), max_connections(&server.settings)) {
                (Some(n), _) => (n, format!("variant {:?}", variant.name)),
                (None, Some(n)) => (n, format!("server {:?}", server.label)),
                (None, None) => continue,
            };
            for (w, span) in workloads.iter().zip(users_spans) {
                let most = w.users.iter().copied().max().map_or(0, u64::from);
                if most + SPARE_CONNECTIONS > limit {
                    return Err(at(
                        span.clone(),
                        format!(
                            "users {most} is more than {source} allows on {}: max_connections = {limit}, and a run opens {SPARE_CONNECTIONS} connections besides its users; raise max_connections to at least {} or lower users",
                            server.label,
                            most + SPARE_CONNECTIONS
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Settings as one line, `key=value key=value`, in their order.
pub(crate) fn settings_text(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Settings that change how a server runs but not the data it writes or how its datadir is
/// laid out: servers whose settings differ only in these share one prepared data set (a
/// buffer pool size, doublewrite, flushing, I/O capacity, connections, instruments). Anything
/// not named here (page size, row format, redo and undo layout, character set, `lower_case_*`,
/// unknown names) is taken to shape the data and gets a data set of its own.
const RUNTIME_ONLY: &[&str] = &[
    "innodb_buffer_pool_size",
    "innodb_buffer_pool_instances",
    "innodb_buffer_pool_chunk_size",
    "innodb_doublewrite",
    "innodb_flush_method",
    "innodb_io_capacity",
    "innodb_io_capacity_max",
    "innodb_max_dirty_pages_pct",
    "innodb_max_dirty_pages_pct_lwm",
    "innodb_flush_neighbors",
    "innodb_adaptive_flushing",
    "innodb_adaptive_flushing_lwm",
    "innodb_adaptive_flushing_method",
    "innodb_adaptive_checkpoint",
    "innodb_checkpoint_age_target",
    "innodb_cleaner_lsn_age_factor",
    "innodb_empty_free_list_algorithm",
    "innodb_foreground_preflush",
    "innodb_flushing_avg_loops",
    "innodb_flush_sync",
    "innodb_lru_scan_depth",
    "innodb_page_cleaners",
    "innodb_flush_log_at_trx_commit",
    "innodb_log_buffer_size",
    "innodb_adaptive_hash_index",
    "innodb_thread_concurrency",
    "innodb_read_io_threads",
    "innodb_write_io_threads",
    "innodb_purge_threads",
    "innodb_spin_wait_delay",
    "innodb_sync_spin_loops",
    "innodb_change_buffering",
    "innodb_old_blocks_time",
    "innodb_read_ahead_threshold",
    "innodb_random_read_ahead",
    "innodb_use_atomic_writes",
    "innodb_use_native_aio",
    "sync_binlog",
    "max_connections",
    "performance_schema",
    "performance_schema_instrument",
    "sort_buffer_size",
    "join_buffer_size",
    "read_buffer_size",
    "read_rnd_buffer_size",
    "key_buffer_size",
    "table_open_cache",
    "table_definition_cache",
    "thread_cache_size",
    "thread_handling",
    "query_cache_size",
    "query_cache_type",
    "optimizer_switch",
    "local_infile",
    "tmp_table_size",
    "max_heap_table_size",
    "shared_buffers",
    "work_mem",
    "maintenance_work_mem",
    "effective_cache_size",
    "effective_io_concurrency",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "max_wal_size",
    "min_wal_size",
    "wal_buffers",
    "synchronous_commit",
    "bgwriter_delay",
    "bgwriter_lru_maxpages",
    "bgwriter_lru_multiplier",
    "random_page_cost",
    "jit",
    "huge_pages",
    "max_parallel_workers_per_gather",
];

/// Whether setting `key` may change the data a prepare writes (see [`RUNTIME_ONLY`]).
pub(crate) fn shapes_data(key: &str) -> bool {
    let k = key.trim().replace('-', "_").to_ascii_lowercase();
    !RUNTIME_ONLY.contains(&k.as_str())
}

/// The settings of `settings` that shape the data, in a stable order: two servers of one
/// version with the same of these share a prepared data set.
pub(crate) fn data_shaping(settings: &[(String, String)]) -> Vec<(String, String)> {
    // By name, the last value given winning, as in the file.
    let by_name: std::collections::BTreeMap<String, String> = settings
        .iter()
        .filter(|(k, _)| shapes_data(k))
        .map(|(k, v)| (k.trim().replace('-', "_").to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    by_name.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512M"), Some(512 << 20));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("1GB"), Some(1 << 30));
        assert_eq!(parse_size("64kB"), Some(64 << 10));
        assert_eq!(parse_size("99999999999999999T"), None);
    }
}
