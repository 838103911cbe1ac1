//! The flags the measuring commands share (first stage): where to connect ([`TargetUrl`],
//! [`TargetArgs`]), sysbench's random-number options ([`RandArgs`]), `dbperf sysbench`'s own
//! ([`SysbenchArgs`], mirroring sysbench's spellings), and the normalisation that lets
//! `--table_size` and `--table-size`, or `--skip-trx=on` and `--skip-trx`, mean the same thing.

use clap::Args;

use dbperf_run::{RunArgs, RunFlags};
use dbperf_workloads::sysbench::rand::RAND_TYPE_HELP;

/// `dbperf sysbench`'s spellings of the shared run flags.
#[derive(Debug, Clone)]
pub struct SysbenchFlags;

impl RunFlags for SysbenchFlags {
    const HEADING: Option<&'static str> = Some("Load");
    const REPORT_HEADING: Option<&'static str> = Some("Reporting");
    const TIME_DEFAULT: &'static str = "10";
    const TIME_HELP: &'static str = "Measured run time in seconds (0 = no limit; then --events is needed)";
    const WARMUP_HELP: &'static str = "Seconds to run before measuring; its samples are not counted";
    const RATE_HELP: &'static str = "Open loop: total transactions per second (0 = closed loop)";
    const INTERVAL_DEFAULT: &'static str = "0";
    const INTERVAL_HELP: &'static str =
        "Seconds between live interval lines, each over the whole interval (0 = none; intervals are stored each \
        second, finer when this is under 1 s)";
    const THREADS_HELP: &'static str = "Event-loop threads sharing the connections, with --client-io async or, when \
        fewer than the connections, auto (default: one per CPU, at most one per connection; as many as the \
        connections: each has its own, blocking under auto)";
    const IO_HELP: &'static str = "How the client waits for replies: blocking (a thread per connection sleeping in the \
        kernel until its reply arrives, as sysbench does: the least CPU per query), async (--client-threads event loops \
        sharing the connections: needed by --rate, lighter for very many connections), or auto (blocking in closed loop \
        up to 128 connections, unless --client-threads is fewer than the connections)";
    const GRACE_DEFAULT: &'static str = "2";
}

/// Where to connect, as a URL or `sandbox:NAME`: `--target`, the `DBPERF_TARGET` environment
/// variable, or `--target-file` (a file only its owner may read). Every command that talks to
/// a server takes these three; the lab hands its runs their target through `DBPERF_TARGET`,
/// so no password shows in the process list.
#[derive(Debug, Clone, Default, Args)]
pub struct TargetUrl {
    /// Where to connect: mysql://USER:PASS@HOST:PORT/DB, mysql://USER:PASS@localhost/DB?socket=PATH, postgres://USER:PASS@HOST:PORT/DB[?host=/socket/dir], or sandbox:NAME. A password on the command line is visible to other local users (ps, /proc/PID/cmdline): put the URL in DBPERF_TARGET or in --target-file instead.
    #[arg(long, env = "DBPERF_TARGET", hide_env_values = true, help_heading = "Connection")]
    pub target: Option<String>,
    /// A file holding the --target URL (e.g. ~/.dbperf/target), readable by its owner only (chmod 600).
    #[arg(long, value_name = "FILE", help_heading = "Connection")]
    pub target_file: Option<std::path::PathBuf>,
}

impl TargetUrl {
    /// The URL (or `sandbox:NAME`) given, if any: `--target`, else the first line of
    /// `--target-file` that is neither empty nor a `#` comment, else `DBPERF_TARGET`.
    pub fn url(&self) -> anyhow::Result<Option<String>> {
        match (&self.target, &self.target_file) {
            // A flag beats the environment.
            (Some(t), Some(file)) if std::env::var("DBPERF_TARGET").is_ok_and(|env| env == *t) => {
                read_target_file(file).map(Some)
            }
            (Some(_), Some(_)) => anyhow::bail!("give --target or --target-file, not both"),
            (Some(t), None) => Ok(Some(t.clone())),
            (None, Some(file)) => read_target_file(file).map(Some),
            (None, None) => Ok(None),
        }
    }

    /// The sandbox name when the target is `sandbox:NAME`.
    pub fn sandbox(&self) -> Option<String> {
        self.url().ok().flatten()?.strip_prefix("sandbox:").map(str::to_owned)
    }

    /// The target, `sandbox:NAME` looked up; `None` when none was given.
    pub fn resolve(&self) -> anyhow::Result<Option<dbperf_driver::Target>> {
        use dbperf_driver::Target;
        Ok(match self.url()? {
            Some(t) if t.starts_with("sandbox:") => {
                let url = dbperf_server::resolve_sandbox_target(&t["sandbox:".len()..])?;
                Some(Target::parse(&url)?)
            }
            Some(t) => Some(Target::parse(&t)?),
            None => None,
        })
    }
}

/// Reads `--target-file`, refusing a file that others than its owner may read.
fn read_target_file(file: &std::path::Path) -> anyhow::Result<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).map_err(|e| anyhow::anyhow!("--target-file {}: {e}", file.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        anyhow::bail!(
            "--target-file {}: the file may hold a password and is readable by others (mode {mode:04o}): chmod 600 {}",
            file.display(),
            file.display()
        );
    }
    let text = std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("--target-file {}: {e}", file.display()))?;
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--target-file {}: no URL in it; write one line such as mysql://USER:PASS@HOST:PORT/DB",
                file.display()
            )
        })
}

/// Where to connect: `--target` (a URL or `sandbox:NAME`, also `DBPERF_TARGET` and
/// `--target-file`) and sysbench's `--mysql-*` spellings of its parts, shared by every command
/// that talks to a server.
#[derive(Debug, Clone, Default, Args)]
pub struct TargetArgs {
    /// The URL or sandbox.
    #[command(flatten)]
    pub url: TargetUrl,
    /// MySQL server host (an alias of --target's parts; connects over TCP).
    #[arg(long, help_heading = "Connection")]
    pub mysql_host: Option<String>,
    /// MySQL server port.
    #[arg(long, help_heading = "Connection")]
    pub mysql_port: Option<u16>,
    /// MySQL user.
    #[arg(long, help_heading = "Connection")]
    pub mysql_user: Option<String>,
    /// MySQL password. Visible to other local users in the process list: prefer DBPERF_TARGET or --target-file.
    #[arg(long, help_heading = "Connection")]
    pub mysql_password: Option<String>,
    /// MySQL database.
    #[arg(long, help_heading = "Connection")]
    pub mysql_db: Option<String>,
    /// MySQL Unix socket.
    #[arg(long, help_heading = "Connection")]
    pub mysql_socket: Option<String>,
}

impl TargetArgs {
    /// The target: `sandbox:NAME` looked up, a URL parsed, then any `--mysql-*` part applied.
    pub fn resolve(&self) -> anyhow::Result<dbperf_driver::Target> {
        use dbperf_driver::target::MysqlOptions;
        let base = self.url.resolve()?;
        let mysql = MysqlOptions {
            host: self.mysql_host.clone(),
            port: self.mysql_port,
            user: self.mysql_user.clone(),
            password: self.mysql_password.clone(),
            db: self.mysql_db.clone(),
            // An empty --mysql-socket= resets it, as sysbench reads it.
            socket: self.mysql_socket.clone().filter(|s| !s.is_empty()),
        };
        if base.is_none() && !mysql.any() {
            anyhow::bail!(
                "no server given: use --target mysql://USER:PASS@HOST:PORT/DB (or sandbox:NAME, see `dbperf server start`), \
                 or sysbench's --mysql-host/--mysql-port/--mysql-user/--mysql-password/--mysql-db/--mysql-socket"
            );
        }
        Ok(mysql.apply(base))
    }

    /// The sandbox name when the target is `sandbox:NAME`.
    pub fn sandbox(&self) -> Option<String> {
        self.url.sandbox()
    }
}

/// sysbench's random-number options beside `--rand-type`, shared by `dbperf sysbench` and
/// `dbperf lua`.
#[derive(Debug, Clone, Args)]
pub struct RandArgs {
    /// Seed for every random stream (0 = from the clock; the manifest records it).
    #[arg(long, default_value_t = 0, help_heading = "Random numbers")]
    pub rand_seed: u64,
    /// Uniforms per gaussian/special draw.
    #[arg(long, default_value_t = 12, help_heading = "Random numbers")]
    pub rand_spec_iter: u32,
    /// special: percent of the range that is hot.
    #[arg(long, default_value_t = 1, help_heading = "Random numbers")]
    pub rand_spec_pct: u32,
    /// special: percent of draws that go to the hot part.
    #[arg(long, default_value_t = 75, help_heading = "Random numbers")]
    pub rand_spec_res: u32,
    /// pareto: h.
    #[arg(long, default_value_t = 0.2, help_heading = "Random numbers")]
    pub rand_pareto_h: f64,
    /// zipfian: exponent.
    #[arg(long, default_value_t = 0.8, help_heading = "Random numbers")]
    pub rand_zipfian_exp: f64,
}

impl RandArgs {
    /// The distributions' parameters, checked.
    pub fn params(
        &self,
    ) -> Result<dbperf_workloads::sysbench::rand::RandParams, dbperf_workloads::sysbench::rand::RandError> {
        dbperf_workloads::sysbench::rand::RandParams::new(
            self.rand_spec_iter,
            self.rand_spec_pct,
            self.rand_spec_res,
            self.rand_pareto_h,
            self.rand_zipfian_exp,
        )
    }
}

/// Checks that `dbperf sysbench TEST run --KEY=VALUE` would accept the option (an experiment's
/// workload `options`); the error names the option and what is wrong with it.
pub fn check_sysbench_option(test: &str, key: &str, value: &str) -> Result<(), String> {
    let argv = normalize([test, "run", &format!("--{key}={value}")].into_iter().map(String::from));
    let command = SysbenchArgs::augment_args(clap::Command::new("sysbench").no_binary_name(true));
    match command.try_get_matches_from(argv) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == clap::error::ErrorKind::UnknownArgument => Err(format!(
            "{key:?} is not a sysbench option dbperf knows: `dbperf sysbench {test} run --help` lists them"
        )),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            Err(format!(
                "option {key} = {value:?}: {}",
                first.strip_prefix("error: ").unwrap_or(first)
            ))
        }
    }
}

/// Parses a sysbench boolean: on/off, true/false, yes/no, 1/0.
pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("expected on/off (or true/false, yes/no, 1/0), got {s:?}")),
    }
}

/// A sysbench OLTP test invocation. Options may come before or after the test and
/// command, with `_` or `-` in their names, exactly as sysbench accepts them.
#[derive(Debug, Args)]
#[command(after_long_help = RAND_TYPE_HELP)]
pub struct SysbenchArgs {
    /// Test: oltp_read_only, oltp_read_write, oltp_write_only, oltp_point_select,
    /// oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete,
    /// select_random_points, select_random_ranges.
    pub test: String,
    /// Command: prepare, run, cleanup, prewarm (alias warmup).
    pub command: String,

    /// The server.
    #[command(flatten)]
    pub server: TargetArgs,
    /// Server error numbers to retry (with a rollback first), or 'all'.
    #[arg(long, default_value = "1213,1020,1205", help_heading = "Connection")]
    pub mysql_ignore_errors: String,
    /// PostgreSQL SQLSTATEs to retry (with a rollback first), 'none' or 'all'.
    #[arg(long, default_value = "40P01,40001,23505", help_heading = "Connection")]
    pub pgsql_ignore_errors: String,
    /// Database driver: mysql, or pgsql (then --target must be postgres://).
    #[arg(long, default_value = "mysql", help_heading = "Connection")]
    pub db_driver: String,
    /// Prepared statements: auto (use them).
    #[arg(long, default_value = "auto", help_heading = "Connection")]
    pub db_ps_mode: String,

    /// cleanup: also drop sbtestN tables that dbperf did not create (by default cleanup
    /// drops only the tables dbperf's prepare created).
    #[arg(long, help_heading = "Connection")]
    pub force: bool,

    /// Connections (sysbench's threads). prepare defaults to the number of CPUs.
    #[arg(value_parser = clap::value_parser!(u32).range(1..=dbperf_core::bounds::MAX_CONNECTIONS as i64), long, help_heading = "Load")]
    pub threads: Option<u32>,
    /// Time, rate, warmup, client I/O, report interval, results directory and telemetry.
    #[command(flatten)]
    pub run: RunArgs<SysbenchFlags>,
    /// Total transactions to start (0 = no limit).
    #[arg(long, default_value_t = 0, help_heading = "Load")]
    pub events: u64,
    /// sysbench's forced shutdown; dbperf always shuts down within --shutdown-grace.
    #[arg(long, help_heading = "Load", hide = true)]
    pub forced_shutdown: Option<String>,

    /// Extra percentile shown in the final report (p50/p90/p95/p99/p99.9 always are).
    #[arg(long, default_value_t = 95.0, help_heading = "Reporting")]
    pub percentile: f64,
    /// Print the latency histogram in the final report.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on", default_value = "off", help_heading = "Reporting")]
    pub histogram: bool,
    /// sysbench's verbosity (accepted for compatibility).
    #[arg(long, default_value_t = 3, help_heading = "Reporting", hide = true)]
    pub verbosity: u32,

    /// Key distribution: uniform, gaussian, special, pareto, zipfian (see below).
    #[arg(long, default_value = "uniform", help_heading = "Random numbers")]
    pub rand_type: String,
    /// The seed and the distributions' parameters.
    #[command(flatten)]
    pub rand: RandArgs,

    /// Number of tables.
    #[arg(long, default_value_t = 1, help_heading = "OLTP")]
    pub tables: u32,
    /// Rows per table.
    #[arg(long, default_value_t = 10000, help_heading = "OLTP")]
    pub table_size: u32,
    /// Rows per range SELECT.
    #[arg(long, default_value_t = 100, help_heading = "OLTP")]
    pub range_size: u32,
    /// Point SELECTs per transaction.
    #[arg(long, default_value_t = 10, help_heading = "OLTP")]
    pub point_selects: u32,
    /// Simple range SELECTs per transaction.
    #[arg(long, default_value_t = 1, help_heading = "OLTP")]
    pub simple_ranges: u32,
    /// SELECT SUM() ranges per transaction.
    #[arg(long, default_value_t = 1, help_heading = "OLTP")]
    pub sum_ranges: u32,
    /// SELECT ... ORDER BY ranges per transaction.
    #[arg(long, default_value_t = 1, help_heading = "OLTP")]
    pub order_ranges: u32,
    /// SELECT DISTINCT ranges per transaction.
    #[arg(long, default_value_t = 1, help_heading = "OLTP")]
    pub distinct_ranges: u32,
    /// UPDATE index statements per transaction.
    #[arg(long, default_value_t = 1, help_heading = "OLTP")]
    pub index_updates: u32,
    /// UPDATE non-index statements per transaction.
    #[arg(long, default_value_t = 1, help_heading = "OLTP")]
    pub non_index_updates: u32,
    /// DELETE/INSERT pairs per transaction.
    #[arg(long, default_value_t = 1, help_heading = "OLTP")]
    pub delete_inserts: u32,
    /// Enable the range SELECTs.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on", default_value = "on", help_heading = "OLTP")]
    pub range_selects: bool,
    /// AUTO_INCREMENT ids (off: client-generated).
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on", default_value = "on", help_heading = "OLTP")]
    pub auto_inc: bool,
    /// No BEGIN/COMMIT: every statement autocommits.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on", default_value = "off", help_heading = "OLTP")]
    pub skip_trx: bool,
    /// A secondary index on id instead of the PRIMARY KEY.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on", default_value = "off", help_heading = "OLTP")]
    pub secondary: bool,
    /// Create the index on k after loading.
    #[arg(long, value_parser = parse_bool, num_args = 0..=1, default_missing_value = "on", default_value = "on", help_heading = "OLTP")]
    pub create_secondary: bool,
    /// Storage engine.
    #[arg(long, default_value = "innodb", help_heading = "OLTP")]
    pub mysql_storage_engine: String,
    /// Extra CREATE TABLE options.
    #[arg(long, default_value = "", help_heading = "OLTP")]
    pub create_table_options: String,
    /// sysbench's PostgreSQL variant (it documents `redshift`). Accepted, and changes
    /// nothing, as in sysbench 1.0.20: its oltp_common.lua reads an unset global instead of
    /// the option, so neither the table nor create_secondary/delete_inserts change there.
    #[arg(long, value_name = "VARIANT", help_heading = "OLTP")]
    pub pgsql_variant: Option<String>,
    /// Reconnect every N events (0 = never).
    #[arg(long, default_value_t = 0, help_heading = "OLTP")]
    pub reconnect: u32,
    /// select_random_points: values in the IN() list.
    #[arg(long, default_value_t = 10, help_heading = "OLTP")]
    pub random_points: u32,
    /// select_random_ranges: BETWEEN ranges per SELECT.
    #[arg(long, default_value_t = 10, help_heading = "OLTP")]
    pub number_of_ranges: u32,
    /// select_random_ranges: width of each range.
    #[arg(long, default_value_t = 5, help_heading = "OLTP")]
    pub delta: u32,
}

/// Rewrites sysbench spellings into the ones clap knows: `--table_size=5` becomes
/// `--table-size=5`. Values are left alone.
pub fn normalize(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|a| {
            if !a.starts_with("--") {
                return a;
            }
            match a.split_once('=') {
                Some((name, value)) => format!("{}={value}", name.replace('_', "-")),
                None => a.replace('_', "-"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_file_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("target");
        std::fs::write(&file, "# the bench box\n\nmysql://sb:S3cret@127.0.0.1:3306/sbtest\n").unwrap();
        let url = |mode: u32| {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            TargetUrl {
                target: None,
                target_file: Some(file.clone()),
            }
            .url()
        };
        let e = url(0o644).unwrap_err().to_string();
        assert!(
            e.contains("--target-file") && e.contains("chmod 600") && e.contains("0644"),
            "{e}"
        );
        assert!(!e.contains("S3cret"), "{e}");
        assert!(url(0o640).is_err());
        assert_eq!(
            url(0o600).unwrap().as_deref(),
            Some("mysql://sb:S3cret@127.0.0.1:3306/sbtest")
        );
        let both = TargetUrl {
            target: Some("mysql://a@b/c".into()),
            target_file: Some(file.clone()),
        };
        assert!(both.url().unwrap_err().to_string().contains("not both"));
    }

    #[test]
    fn normalize_leaves_values_alone() {
        let v = normalize(["--mysql_password=a_b".to_string(), "x_y".to_string()]);
        assert_eq!(v, vec!["--mysql-password=a_b", "x_y"]);
    }
}
