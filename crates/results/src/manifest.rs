//! `manifest.json`: how to reproduce a run — tool version, the full command line with secrets
//! redacted, seeds, workload options, server version and variables, host facts and the target.
//!
//! The redaction rule lives here too ([`redact_args`], [`redact_text`]), because every string
//! that reaches a run directory from the command line or a connection URL passes through it.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::host::HostInfo;
use super::options::{RecordedOptions, WorkloadOptions};

/// Value of the manifest's `schema` key; bumped when a key changes meaning or disappears.
pub const MANIFEST_SCHEMA: &str = "dbperf.manifest/2";

fn manifest_schema<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    crate::version::schema(d, MANIFEST_SCHEMA)
}

/// What replaces a secret.
pub const REDACTED: &str = "***";

/// The contents of `manifest.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_SCHEMA`] when written; read up to it ([`crate::version`]).
    #[serde(deserialize_with = "manifest_schema")]
    pub schema: String,
    /// Version of the dbperf binary that ran.
    pub dbperf_version: String,
    /// `argv`, with passwords replaced by `***` (see [`redact_args`]).
    pub command_line: Vec<String>,
    /// When the run started, RFC 3339 in UTC (`2024-03-09T07:05:01.123Z`).
    pub started_at: String,
    /// Every seed the run used, keyed by stream (`null` until set).
    pub seeds: Value,
    /// The workload and its resolved options.
    pub workload: WorkloadInfo,
    /// The server, when it could be queried.
    pub server: Option<ServerFacts>,
    /// The client host.
    pub host: HostInfo,
    /// Where the run connected, with any password in it redacted.
    pub target: String,
    /// Set when `dbperf lab run` made this run: which point of which experiment it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<LabPoint>,
    /// The path between client and server: a Unix socket, loopback, another host, or a network
    /// namespace of its own (`--client-netns`); `null` in manifests written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkRecord>,
    /// Set when the run is one shard of a run spread over several clients (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// Set on the run directory `dbperf merge` wrote from shards: which shards it covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeRecord>,
    /// The database host, when it is not the client's (`--server-host`): its address and its
    /// facts, read there at the start of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_host: Option<ServerHostRecord>,
    /// The server's levels just before the workload started (after `--settle`): checkpoint
    /// age, dirty pages, history list. The start a comparison holds its runs to
    /// ([`crate::telemetry::StartState::of_run`]); `None` without server telemetry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_state: Option<crate::telemetry::StartState>,
}

/// The host the server ran on, apart from the client's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerHostRecord {
    /// `ssh://USER@HOST[:PORT]`, as the run reached it.
    pub url: String,
    pub host: HostInfo,
}

/// How the client reached the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetworkRecord {
    /// `unix-socket`, `loopback`, `tcp` (another host) or `netns` (the client in a network
    /// namespace of its own, over a veth pair).
    pub path: String,
    /// Where the client connected (`host:port` or the socket's path).
    pub address: String,
    /// `netns` only: the namespace, the pair's two ends and what the host end forwards to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<NetnsRecord>,
    /// `tcp` only: how this host reaches the server's address, where it could be found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteRecord>,
}

/// The way from the client's host to a server on another (`ip route get ADDRESS`): the
/// interface the packets leave by, the client's address on it, the gateway when there is one,
/// and the interface's MTU and link speed as the kernel reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouteRecord {
    /// The server's address the route was looked up for.
    pub server_address: String,
    pub interface: String,
    /// The client's (source) address on that interface.
    pub client_address: String,
    /// The next hop, when the server is not on the interface's own network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Link speed, Mbit/s (`/sys/class/net/IF/speed`; absent where the driver has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
}

impl RouteRecord {
    /// `10.0.0.1 → 10.0.0.2 via eth0 (MTU 1500, 10000 Mbit/s)`, with the gateway when there is one.
    pub fn text(&self) -> String {
        let mut link = Vec::new();
        if let Some(m) = self.mtu {
            link.push(format!("MTU {m}"));
        }
        if let Some(s) = self.speed_mbps {
            link.push(format!("{s} Mbit/s"));
        }
        format!(
            "{} → {} via {}{}{}",
            self.client_address,
            self.server_address,
            self.interface,
            self.gateway.as_ref().map(|g| format!(" and {g}")).unwrap_or_default(),
            if link.is_empty() {
                String::new()
            } else {
                format!(" ({})", link.join(", "))
            }
        )
    }
}

/// The client's network namespace (`--client-netns`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetnsRecord {
    /// Namespace name (`ip netns list`).
    pub namespace: String,
    /// The veth end in the namespace, and its address (`dbp1234c`, `198.18.0.2/30`).
    pub client_interface: String,
    pub client_address: String,
    /// The veth end on the host, and its address, which the client connects to.
    pub host_interface: String,
    pub host_address: String,
    /// Where the kernel forwards what reaches the host end (the server's loopback port).
    pub forwards_to: String,
    /// Shaping as given (`rate=1gbit`), empty when none.
    pub shaping: BTreeMap<String, String>,
    /// The queueing disciplines installed, as `tc qdisc show` printed them, per interface.
    pub qdiscs: BTreeMap<String, String>,
    /// MTU of the pair.
    pub mtu: u32,
}

/// One shard of a run spread over several clients (`--shard I/N --start-at TIME`). Every
/// shard's measured phase starts at `start_at`; its `intervals.hlog` has `start_at` minus the
/// warmup as its base time, so interval K of every shard covers the same wall-clock second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// This shard, from 0 (as Kubernetes' `JOB_COMPLETION_INDEX` counts).
    pub index: u32,
    /// Shards in the run.
    pub count: u32,
    /// When every shard's measured phase starts, RFC 3339 UTC with milliseconds.
    pub start_at: String,
    /// The same instant, milliseconds since the Unix epoch.
    pub start_at_unix_ms: i64,
    /// The run's users (connections) over all shards.
    pub users_total: u64,
    /// This shard's users: global connection numbers `first_user .. first_user + users`.
    pub first_user: u64,
    pub users: u64,
    /// The run's `--rate` over all shards (`null`: closed loop); this shard runs its users'
    /// share of it.
    pub rate_total: Option<f64>,
    /// The seed of this shard's open-loop arrivals, derived from the run's seed and `index`.
    pub schedule_seed: u64,
}

/// What a merged run directory was made from (`dbperf merge`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MergeRecord {
    /// Shards the run was split into.
    pub count: u32,
    /// The shards merged: index and run id, in index order.
    pub shards: Vec<MergedShard>,
    /// Shards missing or failed, each with the reason (not merged).
    pub left_out: Vec<MergedShard>,
    /// Users (connections) of the shards merged (0 in records written before it was kept).
    #[serde(default)]
    pub users: u64,
    /// Users of the whole run, every shard's.
    #[serde(default)]
    pub users_total: u64,
}

/// One shard as the merge saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// Shard index, from 0.
    pub index: u32,
    /// Its run id (empty when missing).
    pub run_id: String,
    /// Why it was left out (empty when merged).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// How [`LabPoint::snapshot`] starts when the point's data was not restored: it ran on a server
/// the lab did not start (`target`), on whatever data the points before it left.
pub const NOT_RESTORED: &str = "not restored: ";

/// The coordinates of one lab run inside its experiment, for grouping and comparing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabPoint {
    /// The experiment's name (its file stem unless the file names it).
    pub experiment: String,
    /// Stable id of the point, e.g. `mariadb-10.11/dw-off/oltp_read_only/t8/r1`.
    pub point: String,
    /// The server (catalog id, e.g. `mysql-8.0.31`, or the experiment's label for it).
    pub server: String,
    /// The configuration variant's name (`default` when the experiment has none).
    pub variant: String,
    /// The settings the variant changes on purpose, as given (`innodb_doublewrite` → `OFF`).
    pub variant_settings: BTreeMap<String, String>,
    /// The settings of the experiment's `[[server]]` entry, given at every start of that server
    /// (empty in older manifests): set on purpose, not the server's defaults.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_settings: BTreeMap<String, String>,
    /// The CPU pinning's name (`unpinned` when the experiment has none).
    #[serde(default)]
    pub pinning: String,
    /// CPUs the server and the client were restricted to (`null`: any).
    #[serde(default)]
    pub server_cpus: Option<String>,
    #[serde(default)]
    pub client_cpus: Option<String>,
    /// The workload name.
    pub workload: String,
    /// The workload kind: `sysbench`, `tpcc`, `linkbench`, `tpch` or `pgbench` (empty in
    /// manifests written before kinds existed: those are sysbench).
    #[serde(default)]
    pub kind: String,
    /// Client connections.
    pub threads: u32,
    /// Repetition, from 1.
    pub rep: u32,
    /// The prepared data set (golden copy) the point's datadir came from, as
    /// `SERVER/DATA-FINGERPRINT`, and `+N` when N earlier points ran on it since it was
    /// restored (`restore = "variant"`); on a server the lab did not start (`target`), whose
    /// data it never restores, [`NOT_RESTORED`] then `SERVER/DATA+N`; `null` in older manifests.
    #[serde(default)]
    pub snapshot: Option<String>,
    /// Checksum of every table just before the point ran (`checksum = true` in the
    /// experiment's workload): equal checksums mean equal starting data.
    #[serde(default)]
    pub data_checksum: Option<String>,
}

/// A workload's name and every option it ran with (defaults included), typed; on disk one
/// JSON object (`{"kind": "sysbench", "tables": 8, "table_size": 100000, ...}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WorkloadInfo {
    /// Workload name, e.g. `oltp_read_write` or `tpcc`.
    pub name: String,
    /// Resolved options.
    pub options: RecordedOptions,
}

impl WorkloadInfo {
    /// Workload `name` with the options of the flat object `options`, read as a manifest's are.
    pub fn from_map(name: &str, options: &Map<String, Value>) -> WorkloadInfo {
        WorkloadInfo {
            name: name.to_string(),
            options: WorkloadOptions::read(name, options),
        }
    }
}

impl<'de> Deserialize<'de> for WorkloadInfo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<WorkloadInfo, D::Error> {
        #[derive(Deserialize)]
        struct Stored {
            name: String,
            #[serde(default)]
            options: Map<String, Value>,
        }
        let stored = Stored::deserialize(d)?;
        Ok(WorkloadInfo {
            options: WorkloadOptions::read(&stored.name, &stored.options),
            name: stored.name,
        })
    }
}

/// What the server said about itself at the start of the run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFacts {
    /// `SELECT VERSION()` / `SHOW server_version`.
    pub version: String,
    /// All global variables (`SHOW GLOBAL VARIABLES` / `pg_settings`), by name.
    pub variables: BTreeMap<String, String>,
}

impl Manifest {
    /// A manifest started now on this host: redacts `command_line` and `target`, collects
    /// [`HostInfo`]. `seeds` starts as `null` and `server` as `None`; set them before writing.
    pub fn new(command_line: &[String], workload: WorkloadInfo, target: &str) -> Manifest {
        Manifest {
            schema: MANIFEST_SCHEMA.to_string(),
            dbperf_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line: redact_args(command_line),
            started_at: rfc3339_utc(Utc::now()),
            seeds: Value::Null,
            workload,
            server: None,
            host: HostInfo::collect(),
            target: redact_text(target),
            lab: None,
            network: None,
            shard: None,
            merged: None,
            server_host: None,
            start_state: None,
        }
    }
}

/// Formats a time as RFC 3339 in UTC with milliseconds and a `Z` suffix.
pub fn rfc3339_utc(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Hides passwords in a command line, replacing each with `***`.
///
/// - An option whose name is a password name (see below) loses its value: `--mysql-password=X`
///   becomes `--mysql-password=***`, and in `--mysql-password X` the next argument becomes
///   `***`, whatever it is.
/// - Every argument then goes through [`redact_text`], which covers URLs and `key=value` pairs
///   anywhere inside it.
///
/// A password name, after dropping leading dashes, lowercasing and reading `-` as `_`, ends in
/// `password` or `passwd`, or is `pwd` or ends in `_pwd`: `--password`, `--mysql-password`,
/// `--mysql_password`, `--pgsql-password`, `PGPASSWORD`, `MYSQL_PWD`. When unsure it redacts
/// more, never less. Short options (`-p`) are not recognised.
pub fn redact_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut hide_next = false;
    for arg in args {
        if hide_next {
            out.push(REDACTED.to_string());
            hide_next = false;
            continue;
        }
        if arg.starts_with('-') {
            match arg.split_once('=') {
                Some((name, _)) if is_password_name(name) => {
                    out.push(format!("{name}={REDACTED}"));
                    continue;
                }
                None if is_password_name(arg) => {
                    out.push(arg.clone());
                    hide_next = true;
                    continue;
                }
                _ => {}
            }
        }
        out.push(redact_text(arg));
    }
    out
}

/// Hides passwords anywhere in one string, replacing each with `***`:
///
/// - the password of a URL's user info: `mysql://user:PASS@host` → `mysql://user:***@host`
///   (any scheme; the user info ends at the last `@` before the host's `/`, `?` or `#`);
/// - the value of `key=value` where `key` is a password name (see [`redact_args`]), as in
///   `?password=PASS&ssl=1`, libpq's `host=h password=PASS` or `Password=PASS;`. A value in
///   quotes (`password='a b'`) is hidden up to the closing quote; otherwise it ends at
///   whitespace, and also at `&`/`#` after `?` or `&`, and at `;` after `;`.
pub fn redact_text(text: &str) -> String {
    redact_key_values(&redact_url_passwords(text))
}

fn is_password_name(name: &str) -> bool {
    let name = name.trim_start_matches('-').to_ascii_lowercase().replace('-', "_");
    name.ends_with("password") || name.ends_with("passwd") || name == "pwd" || name.ends_with("_pwd")
}

fn redact_url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0; // bytes of `text` already in `out`
    let mut search = 0;
    while let Some(found) = text[search..].find("://") {
        let start = search + found + 3;
        let end = text[start..]
            .find(|c: char| matches!(c, '/' | '?' | '#' | '"' | '\'') || c.is_whitespace())
            .map_or(text.len(), |i| start + i);
        let authority = &text[start..end];
        if let Some(at) = authority.rfind('@') {
            if let Some(colon) = authority[..at].find(':') {
                if colon + 1 < at {
                    out.push_str(&text[copied..start + colon + 1]);
                    out.push_str(REDACTED);
                    copied = start + at;
                }
            }
        }
        search = end;
    }
    out.push_str(&text[copied..]);
    out
}

fn redact_key_values(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut pos = 0;
    while let Some(found) = text[pos..].find('=') {
        let eq = pos + found;
        let key_start = text[..eq]
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let key = &text[key_start..eq];
        pos = eq + 1;
        if key.is_empty() || !is_password_name(key) {
            continue;
        }
        let before = key_start.checked_sub(1).map(|i| bytes[i]);
        let value_start = eq + 1;
        let (hide_start, hide_end) = match bytes.get(value_start) {
            Some(&q @ (b'\'' | b'"')) => {
                let close = closing_quote(text, value_start + 1, q);
                (value_start + 1, close)
            }
            _ => {
                let ends_at = |c: char| {
                    c.is_whitespace()
                        || (matches!(before, Some(b'?' | b'&')) && matches!(c, '&' | '#'))
                        || (before == Some(b';') && c == ';')
                };
                let end = text[value_start..]
                    .find(ends_at)
                    .map_or(text.len(), |i| value_start + i);
                (value_start, end)
            }
        };
        if hide_end > hide_start {
            out.push_str(&text[copied..hide_start]);
            out.push_str(REDACTED);
            copied = hide_end;
        }
        pos = hide_end.max(pos);
    }
    out.push_str(&text[copied..]);
    out
}

/// Index of the quote `q` that closes a value starting at `from` (backslash escapes honoured),
/// or the end of `text` if it is never closed.
fn closing_quote(text: &str, from: usize, q: u8) -> usize {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b if b == q => return i,
            _ => i += 1,
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn redacted(list: &[&str]) -> Vec<String> {
        redact_args(&args(list))
    }

    #[test]
    fn password_options_with_equals() {
        for flag in [
            "--mysql-password",
            "--mysql_password",
            "--pgsql-password",
            "--pgsql_password",
            "--password",
            "--PASSWORD",
            "--db-passwd",
        ] {
            let got = redacted(&["dbperf", &format!("{flag}=s3cr=et"), "run"]);
            assert_eq!(got, args(&["dbperf", &format!("{flag}=***"), "run"]), "{flag}");
        }
    }

    #[test]
    fn password_options_with_separate_value() {
        assert_eq!(
            redacted(&["dbperf", "--mysql-password", "s3cret", "--threads", "8"]),
            args(&["dbperf", "--mysql-password", "***", "--threads", "8"])
        );
        assert_eq!(
            redacted(&["--pgsql_password", "-starts-with-dash", "run"]),
            args(&["--pgsql_password", "***", "run"])
        );
        assert_eq!(redacted(&["--password"]), args(&["--password"]));
    }

    #[test]
    fn empty_password_is_still_marked() {
        assert_eq!(redacted(&["--password="]), args(&["--password=***"]));
    }

    #[test]
    fn other_options_are_untouched() {
        let plain = [
            "dbperf",
            "oltp_read_write",
            "--mysql-user=sbtest",
            "--mysql-host",
            "127.0.0.1",
            "--password-file=/etc/dbperf/pw",
            "--tables=8",
            "--rate=100",
            "run",
        ];
        assert_eq!(redacted(&plain), args(&plain));
    }

    #[test]
    fn url_passwords_anywhere_in_an_argument() {
        assert_eq!(
            redacted(&["--target=mysql://root:hunter2@db1:3306/sbtest"]),
            args(&["--target=mysql://root:***@db1:3306/sbtest"])
        );
        assert_eq!(
            redacted(&["postgres://bench:p%40ss@localhost/postgres?sslmode=disable"]),
            args(&["postgres://bench:***@localhost/postgres?sslmode=disable"])
        );
        assert_eq!(
            redact_text("compare mysql://a:x@h1 postgresql://b:y@h2:5432"),
            "compare mysql://a:***@h1 postgresql://b:***@h2:5432"
        );
    }

    #[test]
    fn url_password_with_raw_at_sign_is_hidden_whole() {
        assert_eq!(redact_text("mysql://root:p@ss:w@rd@db1/x"), "mysql://root:***@db1/x");
    }

    #[test]
    fn urls_without_password_are_untouched() {
        for text in [
            "mysql://root@db1:3306/sbtest",
            "postgres://localhost/db",
            "mysql://db1:3306",
            "http://example.com/a@b",
            "mysql://root:@db1",
        ] {
            assert_eq!(redact_text(text), text);
        }
    }

    #[test]
    fn password_query_parameters_are_hidden() {
        assert_eq!(
            redact_text("postgres://u@h/db?password=secret&sslmode=require#x"),
            "postgres://u@h/db?password=***&sslmode=require#x"
        );
        assert_eq!(
            redact_text("mysql://h/db?ssl=1&Password=a%26b"),
            "mysql://h/db?ssl=1&Password=***"
        );
    }

    #[test]
    fn conninfo_and_semicolon_strings_are_hidden() {
        assert_eq!(
            redact_text("host=h user=u password=secret dbname=d"),
            "host=h user=u password=*** dbname=d"
        );
        assert_eq!(
            redact_text("host=h password='with space' dbname=d"),
            "host=h password='***' dbname=d"
        );
        assert_eq!(
            redact_text("Server=h;Password=x;Database=d"),
            "Server=h;Password=***;Database=d"
        );
        assert_eq!(
            redact_text("PGPASSWORD=pw MYSQL_PWD=pw2"),
            "PGPASSWORD=*** MYSQL_PWD=***"
        );
    }

    #[test]
    fn flags_inside_a_quoted_command_are_hidden() {
        assert_eq!(
            redacted(&["--prepare-cmd=sysbench --mysql-password=pw oltp run"]),
            args(&["--prepare-cmd=sysbench --mysql-password=*** oltp run"])
        );
    }

    #[test]
    fn value_of_a_non_password_flag_is_scanned() {
        assert_eq!(
            redacted(&["--pgsql-dsn", "host=h password=pw"]),
            args(&["--pgsql-dsn", "host=h password=***"])
        );
    }

    #[test]
    fn unicode_is_preserved() {
        assert_eq!(
            redact_text("naïve=ü mysql://ü:päss@hôst/ß password=ñ"),
            "naïve=ü mysql://ü:***@hôst/ß password=***"
        );
    }

    #[test]
    fn a_manifest_of_a_newer_format_is_refused_naming_both_versions() {
        let m = Manifest::new(
            &args(&["dbperf"]),
            WorkloadInfo::from_map("oltp_read_only", &Map::new()),
            "sandbox:a",
        );
        let mut v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            serde_json::from_value::<Manifest>(v.clone()).unwrap().schema,
            MANIFEST_SCHEMA
        );
        v["schema"] = "dbperf.manifest/1".into();
        assert!(serde_json::from_value::<Manifest>(v.clone()).is_ok());
        v["schema"] = "dbperf.manifest/999".into();
        let e = serde_json::from_value::<Manifest>(v).unwrap_err().to_string();
        assert!(
            e.contains("dbperf.manifest/999") && e.contains(MANIFEST_SCHEMA) && e.contains("newer"),
            "{e}"
        );
    }

    #[test]
    fn manifest_new_redacts_and_fills_facts() {
        let m = Manifest::new(
            &args(&["dbperf", "--mysql-password", "pw"]),
            WorkloadInfo::from_map("oltp_read_only", &Map::new()),
            "mysql://root:pw@127.0.0.1:3306",
        );
        assert_eq!(m.schema, MANIFEST_SCHEMA);
        assert_eq!(m.command_line[2], "***");
        assert_eq!(m.target, "mysql://root:***@127.0.0.1:3306");
        assert!(m.started_at.ends_with('Z'));
        assert!(DateTime::parse_from_rfc3339(&m.started_at).is_ok());
        let json = serde_json::to_string(&m).unwrap();
        assert!(!json.contains("\"pw\""), "{json}");
        let back: Manifest = serde_json::from_str(&json).unwrap();
        assert_eq!(back, m);
    }
}
