//! The setup block every report starts with: what the numbers were measured on and how. Built
//! from the runs' manifests ([`Setup`]): the host (CPUs, memory, kernel, virtualisation), the
//! server (product, version and the settings that move results most), the data set, duration
//! and warmup, repetitions, CPU pinning and the client. A fact that is the same in every
//! column is shown once; one that differs is shown per column, and one that differs between
//! the runs of a column reads `varies: a / b`.
//!
//! Rendered by each format's exporter ([`crate::export`]: text and Markdown blocks, `setup` in
//! the JSON outputs) and as HTML in [`super::html::setup`].

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::compare::Comparison;
use dbperf_results::manifest::Manifest;
use dbperf_results::options::{LuaOptions, RecordedOptions, TpchPowerOptions, TpchThroughputOptions, WorkloadOptions};

/// A value for a fact no run recorded.
pub const NOT_RECORDED: &str = "not recorded";

/// The setup of one run or of the columns of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setup {
    /// Column labels, in the comparison's order (one, the run id, for a single run).
    pub columns: Vec<String>,
    /// Runs in each column.
    pub runs: Vec<usize>,
    /// The facts, host first, client last.
    pub fields: Vec<SetupField>,
}

/// One fact of the setup.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SetupField {
    /// `host`, `server`, `data`, `run` or `client`.
    pub group: &'static str,
    /// What it is: `CPUs`, `memory`, ... or a server variable's name.
    pub name: String,
    /// The value, when every column has the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// One value per column, when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
}

impl SetupField {
    /// Whether the columns differ in this fact.
    pub fn differs(&self) -> bool {
        self.values.is_some()
    }

    /// The value of column `i`.
    pub fn value_of(&self, i: usize) -> &str {
        match (&self.value, &self.values) {
            (Some(v), _) => v,
            (None, Some(vs)) => vs.get(i).map_or("-", String::as_str),
            (None, None) => "-",
        }
    }
}

/// The facts of one run, in the block's order: `(group, name, value)`.
type Facts = Vec<(&'static str, String, String)>;

impl Setup {
    /// The setup of one run.
    pub fn of_run(run_id: &str, m: &Manifest) -> Setup {
        Setup::of_columns(&[(run_id.to_string(), vec![m])])
    }

    /// The setup of a comparison's columns, each from the manifests of its runs (`manifests`
    /// by run id; a run without one is left out).
    pub fn of_comparison(c: &Comparison, manifests: &BTreeMap<String, Manifest>) -> Setup {
        let columns: Vec<(String, Vec<&Manifest>)> = c
            .columns
            .iter()
            .map(|col| {
                (
                    col.label.clone(),
                    col.runs.iter().filter_map(|r| manifests.get(r)).collect(),
                )
            })
            .collect();
        Setup::of_columns(&columns)
    }

    /// The setup of lab runs with one column per server (the lab's label), in the order of
    /// `servers` (others after them), as the TPC-H tables of `lab report` put them.
    pub fn by_lab_server(manifests: &[Manifest], servers: &[String]) -> Setup {
        let mut columns: Vec<(String, Vec<&Manifest>)> = Vec::new();
        for m in manifests {
            let label = m.lab.as_ref().map_or("-", |l| l.server.as_str());
            match columns.iter_mut().find(|(l, _)| l == label) {
                Some((_, runs)) => runs.push(m),
                None => columns.push((label.to_string(), vec![m])),
            }
        }
        columns.sort_by_key(|(l, _)| servers.iter().position(|s| s == l).unwrap_or(usize::MAX));
        Setup::of_columns(&columns)
    }

    /// The setup of columns of runs: `(label, the runs' manifests)`.
    pub fn of_columns(columns: &[(String, Vec<&Manifest>)]) -> Setup {
        // Every fact any run has, in the order of first appearance.
        let per_run: Vec<Vec<Facts>> = columns
            .iter()
            .map(|(_, runs)| runs.iter().map(|m| facts(m)).collect())
            .collect();
        let mut order: Vec<(&'static str, String)> = Vec::new();
        for (group, name, _) in per_run.iter().flatten().flatten() {
            if !order.iter().any(|(_, n)| n == name) {
                order.push((group, name.clone()));
            }
        }
        let mut fields = Vec::new();
        for (group, name) in order {
            let values: Vec<String> = per_run
                .iter()
                .map(|runs| {
                    let of_runs = runs.iter().map(|facts| {
                        facts
                            .iter()
                            .find(|(_, n, _)| *n == name)
                            .map_or("-".to_string(), |(_, _, v)| v.clone())
                    });
                    if name == CONNECTIONS {
                        connections_list(of_runs)
                    } else {
                        one_or_varies(of_runs)
                    }
                })
                .collect();
            fields.push(field(group, name, values));
        }
        // Repetitions: runs per connection count in each column.
        let reps: Vec<String> = columns.iter().map(|(_, runs)| repetitions(runs)).collect();
        let at = fields.iter().position(|f| f.group == "client").unwrap_or(fields.len());
        fields.insert(at, field("run", "repetitions".into(), reps));
        Setup {
            columns: columns.iter().map(|(l, _)| l.clone()).collect(),
            runs: columns.iter().map(|(_, r)| r.len()).collect(),
            fields,
        }
    }

    /// Whether every column has a single run per point (no spread to show).
    pub fn one_repetition(&self) -> bool {
        self.fields
            .iter()
            .find(|f| f.name == "repetitions")
            .is_some_and(|f| (0..self.columns.len()).all(|i| f.value_of(i) == "1"))
    }

    /// `Setup (N runs, ...)`, saying whether the columns differ.
    pub fn heading(&self) -> String {
        let runs: usize = self.runs.iter().sum();
        match (self.columns.len(), self.fields.iter().any(SetupField::differs)) {
            (1, _) if runs == 1 => "Setup:".to_string(),
            (1, _) => format!("Setup ({runs} runs):"),
            (_, false) => format!("Setup ({runs} runs, the same in every column):"),
            (_, true) => format!("Setup ({runs} runs; shown per column where the columns differ):"),
        }
    }

    /// The setup in one line, for a caption over the results (the block follows them): the
    /// facts that move results most, `name value` joined by `; `.
    pub fn caption(&self) -> String {
        CAPTION
            .iter()
            .filter_map(|name| self.fields.iter().find(|f| f.name == *name))
            .map(|f| format!("{} {}", f.name, self.line(f)))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The value of `f` as one line: the value, or each column's with its label.
    pub(crate) fn line(&self, f: &SetupField) -> String {
        match &f.values {
            None => f.value.clone().unwrap_or_default(),
            Some(vs) => vs
                .iter()
                .zip(&self.columns)
                .map(|(v, c)| format!("{v} ({c})"))
                .collect::<Vec<_>>()
                .join(" vs "),
        }
    }
}

const CONNECTIONS: &str = "connections";

/// The facts of the one-line caption ([`Setup::caption`]), in its order.
const CAPTION: [&str; 6] = ["server", "CPUs", "data", "duration", CONNECTIONS, "repetitions"];

/// A field with one value when every column has the same, else one per column.
fn field(group: &'static str, name: String, values: Vec<String>) -> SetupField {
    let same = values.windows(2).all(|w| w[0] == w[1]);
    match (same, values.first()) {
        (true, Some(v)) => SetupField {
            group,
            name,
            value: Some(v.clone()),
            values: None,
        },
        _ => SetupField {
            group,
            name,
            value: None,
            values: Some(values),
        },
    }
}

/// The value the runs of a column share, or `varies: a / b` (in order of first appearance).
fn one_or_varies(values: impl Iterator<Item = String>) -> String {
    let mut distinct: Vec<String> = Vec::new();
    for v in values {
        if !distinct.contains(&v) {
            distinct.push(v);
        }
    }
    match distinct.len() {
        0 => "-".into(),
        1 => distinct.remove(0),
        _ => format!("varies: {}", distinct.join(" / ")),
    }
}

/// The connection counts of a column's runs, in increasing order (a users sweep lists each).
fn connections_list(values: impl Iterator<Item = String>) -> String {
    let mut distinct: Vec<String> = Vec::new();
    for v in values {
        if !distinct.contains(&v) {
            distinct.push(v);
        }
    }
    distinct.sort_by_key(|v| (v.parse::<u64>().unwrap_or(u64::MAX), v.clone()));
    distinct.join(", ")
}

/// Runs per point of a column: per connection count (and lab point without its repetition),
/// `N` when every point has N, else `A-B`.
fn repetitions(runs: &[&Manifest]) -> String {
    let mut per_point: BTreeMap<String, usize> = BTreeMap::new();
    for m in runs {
        let key = match &m.lab {
            Some(l) => l.point.rsplit_once('/').map_or(l.point.clone(), |(p, _)| p.to_string()),
            None => format!("{}/{}", m.workload.name, connections(m).unwrap_or_default()),
        };
        *per_point.entry(key).or_default() += 1;
    }
    let lo = per_point.values().min().copied().unwrap_or(0);
    let hi = per_point.values().max().copied().unwrap_or(0);
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    }
}

/// Client connections of a run: the lab's, else what the manifest records.
fn connections(m: &Manifest) -> Option<String> {
    if let Some(l) = &m.lab {
        return Some(l.threads.to_string());
    }
    m.workload.options.connections().map(|n| n.to_string())
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A count with thousands separators: `100,000`.
fn count(n: f64) -> String {
    if n.fract() != 0.0 || n.abs() >= 1e18 {
        return format!("{n}");
    }
    let digits = format!("{}", n.abs() as u64);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// A size in bytes as KiB, MiB or GiB (whole when it divides, else one decimal).
pub fn bytes(n: u64) -> String {
    for (unit, name) in [
        (1u64 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ] {
        if n >= unit {
            return if n.is_multiple_of(unit) {
                format!("{} {name}", n / unit)
            } else {
                format!("{:.1} {name}", n as f64 / unit as f64)
            };
        }
    }
    format!("{n} bytes")
}

/// Seconds as `10 s`, `15 min` or `2 h` (whole units only; else seconds).
fn secs(s: f64) -> String {
    if s >= 3600.0 && s % 3600.0 == 0.0 {
        format!("{} h", s / 3600.0)
    } else if s >= 60.0 && s % 60.0 == 0.0 {
        format!("{} min", s / 60.0)
    } else {
        format!("{s} s")
    }
}

/// What the block says about a host (CPUs, memory, OS, virtualisation, hostname), in order:
/// the client's from its manifest, a database host's as `dbperf remote check` shows it.
pub fn host_facts(h: &dbperf_results::host::HostInfo) -> Vec<(&'static str, String)> {
    let mut f = Vec::new();
    let cpus = match (h.logical_cpus, &h.cpu_model) {
        (Some(n), Some(model)) => format!("{n} logical, {model}"),
        (Some(n), None) => format!("{n} logical"),
        (None, Some(model)) => model.clone(),
        (None, None) => NOT_RECORDED.into(),
    };
    let governor = h
        .cpu_governor
        .as_ref()
        .map_or(String::new(), |g| format!(" (governor {g})"));
    f.push(("CPUs", format!("{cpus}{governor}")));
    f.push(("memory", h.mem_total_bytes.map_or(NOT_RECORDED.into(), bytes)));
    let mut os = Vec::new();
    if let Some(k) = &h.kernel_release {
        os.push(match &h.arch {
            Some(a) => format!("Linux {k} {a}"),
            None => format!("Linux {k}"),
        });
    }
    os.extend(h.os.clone());
    f.push((
        "OS",
        if os.is_empty() {
            NOT_RECORDED.into()
        } else {
            os.join(", ")
        },
    ));
    f.push(("virtualisation", virtualisation(h)));
    if let Some(name) = &h.hostname {
        f.push(("hostname", name.clone()));
    }
    f
}

/// Everything the block says about one run.
fn facts(m: &Manifest) -> Facts {
    let mut f: Facts = Vec::new();
    let mut push = |group: &'static str, name: &str, value: String| f.push((group, name.to_string(), value));
    for (name, value) in host_facts(&m.host) {
        push("host", name, value);
    }
    if let Some(route) = m.network.as_ref().and_then(|n| n.route.as_ref()) {
        push("host", "network path", route.text());
    }
    if let Some(sh) = &m.server_host {
        push("server host", "server host", sh.url.clone());
        for (name, value) in host_facts(&sh.host) {
            push("server host", &format!("server {name}"), value);
        }
    }

    match &m.server {
        Some(s) => {
            push("server", "server", product_version(&s.version, &s.variables));
            for (name, value) in key_settings(&s.variables) {
                push("server", name, value);
            }
        }
        None => push("server", "server", NOT_RECORDED.into()),
    }

    push("data", "data", data(m));
    push("run", "duration", duration(&m.workload.options));
    push("run", "pinning", pinning(m));

    push(
        "client",
        CONNECTIONS,
        connections(m).unwrap_or_else(|| NOT_RECORDED.into()),
    );
    let Some(o) = &m.workload.options.run else {
        return f;
    };
    if let Some(n) = o.client_threads {
        let io = o.client_io.as_ref().map_or(String::new(), |io| format!(" ({io} I/O)"));
        // A users sweep with a thread per connection reads the same at every point.
        let threads = match connections(m).and_then(|c| c.parse::<usize>().ok()) {
            Some(c) if c == n => "one per connection".to_string(),
            _ => n.to_string(),
        };
        push("client", "client threads", format!("{threads}{io}"));
    }
    let arrival = match (o.arrival.as_deref(), o.rate) {
        (Some("closed"), _) | (None, None) => None,
        (Some(a), Some(r)) if r > 0.0 => Some(format!("open loop, {a} arrivals at {r}/s")),
        (Some(a), _) => Some(a.to_string()),
        (None, Some(r)) => Some(format!("open loop at {r}/s")),
    };
    push("client", "arrival", arrival.unwrap_or_else(|| "closed loop".into()));
    // Older manifests have only `interval_s`: then the stored and the printed interval were one.
    match (o.interval_s, o.report_interval_s) {
        (Some(i), None) => push("client", "intervals", format!("every {}", secs(i))),
        (Some(i), Some(r)) => push(
            "client",
            "intervals",
            match r {
                Some(r) => format!("stored every {}, printed every {}", secs(i), secs(r)),
                None => format!("stored every {}, not printed", secs(i)),
            },
        ),
        (None, _) => {}
    }
    if let Some(t) = o.telemetry_interval_s {
        push(
            "client",
            "telemetry",
            match t {
                None => "off".into(),
                Some(s) if o.telemetry_sql_only => format!("every {}, SQL only (no OS samples)", secs(s)),
                Some(s) => format!("every {}", secs(s)),
            },
        );
    }
    f
}

fn virtualisation(h: &dbperf_results::host::HostInfo) -> String {
    let vm = match h.virtualization.as_deref() {
        None => None,
        Some("none") => Some("bare metal".to_string()),
        Some("unknown") => Some("a virtual machine (hypervisor not named)".to_string()),
        Some(kind) => Some(format!("{kind} virtual machine")),
    };
    let container = match h.container.as_deref() {
        None | Some("none") => None,
        Some(kind) => Some(format!("in a {kind} container")),
    };
    match (vm, container) {
        (None, None) if h.container.is_none() => NOT_RECORDED.into(),
        (None, None) => "no container; hypervisor not recorded".into(),
        (Some(v), None) => v,
        (None, Some(c)) => format!("{c}; hypervisor not recorded"),
        (Some(v), Some(c)) => format!("{v}, {c}"),
    }
}

/// `MariaDB 10.11.19`, `MySQL 8.0.31`, `Percona Server 8.0.36`, `PostgreSQL 16.1`,
/// `MariaDB 10.1.23 with XtraDB 5.6.35-80.0`.
fn product_version(version: &str, vars: &BTreeMap<String, String>) -> String {
    let number: String = version
        .trim_start_matches("PostgreSQL ")
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let comment = vars.get("version_comment").map_or("", String::as_str);
    let product = if version.contains("MariaDB") {
        "MariaDB"
    } else if version.starts_with("PostgreSQL") || vars.contains_key("shared_buffers") {
        "PostgreSQL"
    } else if comment.contains("Percona") {
        "Percona Server"
    } else {
        "MySQL"
    };
    let xtradb = vars
        .get("innodb_version")
        .and_then(|v| dbperf_core::innodb::xtradb_release(v))
        .map(|v| format!(" with XtraDB {v}"))
        .unwrap_or_default();
    match number.is_empty() {
        true => version.to_string(),
        false => format!("{product} {number}{xtradb}"),
    }
}

/// The settings that move results most, when the server has them: `(name, value)`.
fn key_settings(v: &BTreeMap<String, String>) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let get = |k: &str| v.get(k).map(String::as_str);
    let size = |k: &str| get(k).map(|s| s.parse::<u64>().map_or(s.to_string(), bytes));
    if let Some(b) = size("innodb_buffer_pool_size") {
        out.push(("innodb_buffer_pool_size", b));
    }
    if let Some(redo) = redo(v) {
        out.push(("redo log", redo));
    }
    let plain = [
        "innodb_flush_method",
        "innodb_doublewrite",
        "innodb_flush_log_at_trx_commit",
        "innodb_max_dirty_pages_pct",
    ];
    for k in plain {
        match get(k) {
            // Empty is the server's own default: fsync (MySQL 5.x, MariaDB before 10.6 on Linux).
            Some("") if k == "innodb_flush_method" => out.push((k, "fsync (the default: empty)".into())),
            Some(s) => out.push((k, trim_decimals(s))),
            None => {}
        }
    }
    if let Some(io) = get("innodb_io_capacity") {
        let max = get("innodb_io_capacity_max").map_or(String::new(), |m| format!(" (max {m})"));
        out.push(("innodb_io_capacity", format!("{io}{max}")));
    }
    match (get("log_bin"), get("sync_binlog")) {
        (Some("OFF" | "0"), _) => out.push(("binary log", "off".into())),
        (Some(_), Some(sync)) => out.push(("binary log", format!("on, sync_binlog {sync}"))),
        _ => {}
    }
    // PostgreSQL's `pg_settings.setting` is in the setting's own unit: blocks, MB, seconds.
    let block: u64 = get("block_size").and_then(|b| b.parse().ok()).unwrap_or(8192);
    if let Some(sb) = get("shared_buffers") {
        out.push((
            "shared_buffers",
            sb.parse::<u64>().map_or(sb.to_string(), |n| bytes(n * block)),
        ));
    }
    if let Some(w) = get("max_wal_size") {
        out.push((
            "max_wal_size",
            w.parse::<u64>().map_or(w.to_string(), |mb| bytes(mb << 20)),
        ));
    }
    if let Some(t) = get("checkpoint_timeout") {
        out.push(("checkpoint_timeout", t.parse::<f64>().map_or(t.to_string(), secs)));
    }
    for k in ["synchronous_commit", "full_page_writes", "fsync"] {
        if let Some(s) = get(k) {
            out.push((k, s.to_string()));
        }
    }
    if let Some(ps) = get("performance_schema") {
        out.push(("performance_schema", ps.to_string()));
    }
    out
}

/// `90.000000` → `90`.
fn trim_decimals(s: &str) -> String {
    match s.split_once('.') {
        Some((int, frac)) if frac.chars().all(|c| c == '0') && !int.is_empty() => int.to_string(),
        _ => s.to_string(),
    }
}

/// The redo log's total size and how it is made.
fn redo(v: &BTreeMap<String, String>) -> Option<String> {
    if let Some(c) = v.get("innodb_redo_log_capacity").and_then(|c| c.parse::<u64>().ok()) {
        return Some(format!("{} (innodb_redo_log_capacity)", bytes(c)));
    }
    let size: u64 = v.get("innodb_log_file_size")?.parse().ok()?;
    match v.get("innodb_log_files_in_group").and_then(|n| n.parse::<u64>().ok()) {
        Some(n) if n > 1 => Some(format!("{} ({n} x {} files)", bytes(size * n), bytes(size))),
        _ => Some(format!("{} (one file)", bytes(size))),
    }
}

/// The data set: tables x rows, warehouses, scale factor, LinkBench's node ids; for a Lua
/// script ([`lua_data`]) the script and its size options.
fn data(m: &Manifest) -> String {
    let part = match &m.workload.options.workload {
        WorkloadOptions::Sysbench(o) => format!(
            "{} tables x {} rows",
            count(o.oltp.tables.into()),
            count(o.oltp.table_size.into())
        ),
        WorkloadOptions::Tpcc(o) => format!("{} warehouses", count(o.warehouses.into())),
        WorkloadOptions::TpchPower(TpchPowerOptions { scale_factor, .. })
        | WorkloadOptions::TpchThroughput(TpchThroughputOptions { scale_factor, .. }) => {
            format!("scale factor {scale_factor}")
        }
        WorkloadOptions::Pgbench(o) => format!("scale {}", count(o.scale as f64)),
        WorkloadOptions::Linkbench(o) => format!("maxid1 {}", count(o.maxid1 as f64)),
        WorkloadOptions::Lua(o) => lua_data(o),
        WorkloadOptions::Other(_) => NOT_RECORDED.into(),
    };
    match m.lab.as_ref().and_then(|l| l.snapshot.as_deref()) {
        Some(s) if s.starts_with(dbperf_results::manifest::NOT_RESTORED) => {
            format!("{part}, not restored between points (a server dbperf did not start)")
        }
        _ => part,
    }
}

/// A `dbperf lua` run's data set, from what its manifest records (the script and the values of
/// its own options): the script's file name and, where it declares them as sysbench's oltp
/// scripts do, `tables` x `table_size` rows.
fn lua_data(o: &LuaOptions) -> String {
    let file = o
        .script
        .rsplit('/')
        .next()
        .filter(|f| !f.is_empty())
        .unwrap_or("the script");
    let n = |k: &str| o.script_options.get(k).and_then(number);
    let size = match (n("tables"), n("table_size")) {
        (Some(t), Some(rows)) => format!("{} tables x {} rows", count(t), count(rows)),
        (Some(t), None) => format!("{} tables", count(t)),
        (None, Some(rows)) => format!("{} rows per table", count(rows)),
        (None, None) => "size not recorded (the script has no tables or table_size option)".into(),
    };
    format!("{file}, {size}")
}

/// Measured time and warmup (or what else ends the run).
fn duration(o: &RecordedOptions) -> String {
    let run = o.run.as_ref();
    let warmup = match run.and_then(|r| r.warmup_s) {
        Some(w) if w > 0 => format!("warmup {}", secs(w as f64)),
        Some(_) => "no warmup".into(),
        None => "warmup not recorded".into(),
    };
    let events = match &o.workload {
        WorkloadOptions::Sysbench(s) => s.events,
        WorkloadOptions::Lua(l) => l.events,
        _ => 0,
    };
    match (run.and_then(|r| r.time_s), &o.workload) {
        (Some(t), _) if t > 0 => format!("{} measured, {warmup}", secs(t as f64)),
        _ if events > 0 => format!("until {} events, {warmup}", count(events as f64)),
        (_, WorkloadOptions::TpchPower(p)) => format!("each query {} time(s)", count(p.repeat.into())),
        (_, WorkloadOptions::TpchThroughput(_)) => "until every stream finishes".into(),
        _ => NOT_RECORDED.into(),
    }
}

/// The lab's CPU pinning: its name and CPU lists; outside the lab, the CPUs the client was
/// allowed (the server's are not known there).
fn pinning(m: &Manifest) -> String {
    let Some(l) = &m.lab else {
        return match (&m.host.client_cpus, m.host.logical_cpus) {
            (None, _) => "not recorded (run outside the lab)".into(),
            (Some(c), Some(n)) if *c == all_cpus(n) => {
                format!("client unpinned (may use all {n} CPUs); server not recorded")
            }
            (Some(c), _) => format!("client CPUs {c}; server not recorded"),
        };
    };
    let cpus = |who: &str, c: &Option<String>| c.as_ref().map(|c| format!("{who} CPUs {c}"));
    let lists: Vec<String> = [cpus("server", &l.server_cpus), cpus("client", &l.client_cpus)]
        .into_iter()
        .flatten()
        .collect();
    match (l.pinning.as_str(), lists.is_empty()) {
        ("" | "unpinned", true) => "none (unpinned)".into(),
        (name, true) => name.to_string(),
        ("", false) => lists.join(", "),
        (name, false) => format!("{name}: {}", lists.join(", ")),
    }
}

/// The CPU list that names every one of `n` CPUs, as the kernel writes it.
fn all_cpus(n: u32) -> String {
    match n {
        0 | 1 => "0".into(),
        n => format!("0-{}", n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_results::manifest::{LabPoint, ServerFacts, WorkloadInfo};
    use dbperf_results::HostInfo;
    use serde_json::Map;

    /// `m` with its workload named `name` and its options (as stored) changed by `f`.
    fn edit(m: &mut Manifest, name: &str, f: impl FnOnce(&mut Map<String, Value>)) {
        let mut options = m.workload.options.to_map();
        f(&mut options);
        m.workload = WorkloadInfo::from_map(name, &options);
    }

    fn manifest(threads: u32, pool: &str, virt: Option<&str>) -> Manifest {
        let options: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "tables": 8, "table_size": 100000, "connections": threads, "client_threads": 1,
            "client_io": "blocking", "arrival": "closed", "rate": null, "time_s": 60,
            "warmup_s": 10, "interval_s": 5.0, "telemetry_interval_s": 1.0
        }))
        .unwrap();
        Manifest {
            schema: "dbperf.manifest/1".into(),
            dbperf_version: "0".into(),
            command_line: vec![],
            started_at: String::new(),
            seeds: Value::Null,
            workload: WorkloadInfo::from_map("oltp_read_only", &options),
            server: Some(ServerFacts {
                version: "10.11.6-MariaDB".into(),
                variables: [
                    ("innodb_buffer_pool_size", pool),
                    ("innodb_log_file_size", "100663296"),
                    ("innodb_doublewrite", "ON"),
                    ("innodb_max_dirty_pages_pct", "90.000000"),
                    ("performance_schema", "OFF"),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            }),
            host: HostInfo {
                cpu_model: Some("Xeon".into()),
                logical_cpus: Some(16),
                mem_total_bytes: Some(64 << 30),
                kernel_release: Some("6.1.0".into()),
                arch: Some("x86_64".into()),
                hostname: Some("db1".into()),
                os: Some("Debian 12".into()),
                cpu_governor: None,
                virtualization: virt.map(String::from),
                container: virt.map(|_| "none".to_string()),
                client_cpus: None,
            },
            target: String::new(),
            lab: None,
            network: None,
            shard: None,
            merged: None,
            server_host: None,
            start_state: None,
        }
    }

    fn value<'a>(s: &'a Setup, name: &str) -> &'a SetupField {
        s.fields
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name}: {s:?}"))
    }

    #[test]
    fn one_run_shows_host_server_data_and_client() {
        let m = manifest(8, "1073741824", Some("kvm"));
        let s = Setup::of_run("r1", &m);
        let text = crate::export::text::setup_block(&s);
        assert!(text.starts_with("Setup:\n"), "{text}");
        for line in [
            "CPUs                     16 logical, Xeon",
            "memory                   64 GiB",
            "virtualisation           kvm virtual machine",
            "server                   MariaDB 10.11.6",
            "innodb_buffer_pool_size  1 GiB",
            "redo log                 96 MiB (one file)",
            "innodb_max_dirty_pages_pct  90",
            "data                     8 tables x 100,000 rows",
            "duration                 1 min measured, warmup 10 s",
            "repetitions              1",
            "connections              8",
            "client threads           1 (blocking I/O)",
            "intervals                every 5 s",
        ] {
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            let flat: Vec<String> = text
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            assert!(flat.contains(&line), "{line:?} in\n{text}");
        }
        assert!(s.one_repetition());
        assert_eq!(
            s.caption(),
            "server MariaDB 10.11.6; CPUs 16 logical, Xeon; data 8 tables x 100,000 rows; \
             duration 1 min measured, warmup 10 s; connections 8; repetitions 1"
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["fields"][0]["name"], "CPUs");
        assert_eq!(json["fields"][0]["value"], "16 logical, Xeon");
        assert!(json["fields"][0].get("values").is_none());
    }

    #[test]
    fn a_lua_run_shows_its_script_and_the_tables_it_declares() {
        use serde_json::{json, Value};
        // As `dbperf lua` records them: `script`, and every option the script declares at its value.
        let lua_run = |values: &[(&str, Value)]| {
            let mut m = manifest(4, "1073741824", None);
            edit(&mut m, "lua_oltp_read_write", |options| {
                options.remove("tables");
                options.remove("table_size");
                options.insert("script".into(), "/usr/share/sysbench/oltp_read_write.lua".into());
                let script_options: Map<String, Value> =
                    values.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
                options.insert("script_options".into(), script_options.into());
            });
            value(&Setup::of_run("r", &m), "data").value.clone().unwrap()
        };
        let oltp = [
            ("tables", json!(4.0)),
            ("table_size", json!(20_000.0)),
            ("skip_trx", json!(false)),
        ];
        assert_eq!(lua_run(&oltp), "oltp_read_write.lua, 4 tables x 20,000 rows");
        assert_eq!(lua_run(&oltp[1..]), "oltp_read_write.lua, 20,000 rows per table");
        let own = lua_run(&[("rows", json!(500.0))]);
        assert!(own.starts_with("oltp_read_write.lua, size not recorded"), "{own}");
        // Other runs that record a `script` (pgbench's) keep their own description.
        let mut m = manifest(4, "1073741824", None);
        edit(&mut m, "oltp_read_only", |o| {
            o.insert("script".into(), "tpcb-like".into());
        });
        assert_eq!(
            value(&Setup::of_run("r", &m), "data").value.as_deref(),
            Some("8 tables x 100,000 rows")
        );
    }

    #[test]
    fn stored_and_printed_intervals_are_told_apart_when_recorded() {
        let with = |report: serde_json::Value| {
            let mut m = manifest(8, "1073741824", None);
            edit(&mut m, "oltp_read_only", |o| {
                o.insert("interval_s".into(), 1.0.into());
                o.insert("report_interval_s".into(), report);
            });
            m
        };
        let intervals = |m: &Manifest| value(&Setup::of_run("r", m), "intervals").value.clone();
        assert_eq!(
            intervals(&with(5.0.into())).as_deref(),
            Some("stored every 1 s, printed every 5 s")
        );
        assert_eq!(
            intervals(&with(serde_json::Value::Null)).as_deref(),
            Some("stored every 1 s, not printed")
        );
    }

    #[test]
    fn what_differs_is_per_column_and_the_rest_once() {
        let (a, b) = (manifest(8, "1073741824", None), manifest(8, "4294967296", None));
        let (a2, b2) = (manifest(16, "1073741824", None), manifest(16, "4294967296", None));
        let s = Setup::of_columns(&[("small".into(), vec![&a, &a2]), ("big".into(), vec![&b, &b2])]);
        let pool = value(&s, "innodb_buffer_pool_size");
        assert_eq!(
            pool.values.as_deref(),
            Some(&["1 GiB".to_string(), "4 GiB".to_string()][..])
        );
        assert_eq!(value(&s, "connections").value.as_deref(), Some("8, 16"));
        assert_eq!(value(&s, "CPUs").value.as_deref(), Some("16 logical, Xeon"));
        let text = crate::export::text::setup_block(&s);
        assert!(
            text.starts_with("Setup (4 runs; shown per column where the columns differ):"),
            "{text}"
        );
        assert!(text.contains("1 GiB (small) vs 4 GiB (big)"), "{text}");
        // A column whose runs differ says so.
        let odd = Setup::of_columns(&[("mixed".into(), vec![&a, &b])]);
        assert_eq!(
            value(&odd, "innodb_buffer_pool_size").value.as_deref(),
            Some("varies: 1 GiB / 4 GiB")
        );
        let md = crate::export::markdown::setup_block(&s);
        assert!(
            md.contains("| innodb_buffer_pool_size | 1 GiB (small) vs 4 GiB (big) |"),
            "{md}"
        );
    }

    #[test]
    fn an_old_manifest_without_virtualisation_says_not_recorded() {
        let old = manifest(1, "134217728", None);
        let s = Setup::of_run("r", &old);
        assert_eq!(value(&s, "virtualisation").value.as_deref(), Some(NOT_RECORDED));
        let mut docker = manifest(1, "134217728", Some("kvm"));
        docker.host.container = Some("docker".into());
        assert_eq!(
            value(&Setup::of_run("r", &docker), "virtualisation").value.as_deref(),
            Some("kvm virtual machine, in a docker container")
        );
        let mut metal = manifest(1, "134217728", Some("none"));
        metal.server = None;
        let s = Setup::of_run("r", &metal);
        assert_eq!(value(&s, "virtualisation").value.as_deref(), Some("bare metal"));
        assert_eq!(value(&s, "server").value.as_deref(), Some(NOT_RECORDED));
    }

    #[test]
    fn repetitions_count_runs_per_point_and_pinning_names_the_cpus() {
        let lab = |rep: u32, pinning: &str| {
            let mut m = manifest(4, "134217728", None);
            m.lab = Some(LabPoint {
                point: format!("mariadb/default/oltp_read_only/t4/r{rep}"),
                threads: 4,
                rep,
                pinning: pinning.into(),
                server_cpus: (pinning != "unpinned").then(|| "0-3".into()),
                client_cpus: (pinning != "unpinned").then(|| "4-7".into()),
                ..LabPoint::default()
            });
            m
        };
        let (r1, r2, r3) = (lab(1, "split"), lab(2, "split"), lab(3, "split"));
        let one = lab(1, "unpinned");
        let s = Setup::of_columns(&[("split".into(), vec![&r1, &r2, &r3]), ("free".into(), vec![&one])]);
        assert_eq!(
            value(&s, "repetitions").values.as_deref(),
            Some(&["3".to_string(), "1".to_string()][..])
        );
        assert!(!s.one_repetition());
        assert_eq!(
            value(&s, "pinning").values.as_ref().unwrap()[0],
            "split: server CPUs 0-3, client CPUs 4-7"
        );
        assert_eq!(value(&s, "pinning").values.as_ref().unwrap()[1], "none (unpinned)");
    }

    #[test]
    fn outside_the_lab_pinning_is_the_clients_allowed_cpus() {
        let run = |cpus: Option<&str>| {
            let mut m = manifest(4, "134217728", None);
            m.host.logical_cpus = Some(8);
            m.host.client_cpus = cpus.map(String::from);
            m
        };
        let pinning = |m: &Manifest| pinning(m);
        assert_eq!(pinning(&run(None)), "not recorded (run outside the lab)");
        assert_eq!(
            pinning(&run(Some("0-7"))),
            "client unpinned (may use all 8 CPUs); server not recorded"
        );
        assert_eq!(pinning(&run(Some("6-7"))), "client CPUs 6-7; server not recorded");
    }

    #[test]
    fn lab_runs_by_server_follow_the_file_order() {
        let on = |server: &str, version: &str| {
            let mut m = manifest(1, "134217728", None);
            m.lab = Some(LabPoint {
                server: server.into(),
                point: format!("{server}/default/tpch/t1/r1"),
                ..LabPoint::default()
            });
            m.server.as_mut().unwrap().version = version.into();
            m
        };
        let runs = [on("mysql-8.0", "8.0.31"), on("mariadb-10.11", "10.11.6-MariaDB")];
        let s = Setup::by_lab_server(&runs, &["mariadb-10.11".into(), "mysql-8.0".into()]);
        assert_eq!(s.columns, ["mariadb-10.11", "mysql-8.0"]);
        assert_eq!(
            value(&s, "server").values.as_deref(),
            Some(&["MariaDB 10.11.6".to_string(), "MySQL 8.0.31".to_string()][..])
        );
    }

    #[test]
    fn postgres_settings_are_read_in_their_units() {
        let vars: BTreeMap<String, String> = [
            ("shared_buffers", "16384"),
            ("max_wal_size", "1024"),
            ("checkpoint_timeout", "300"),
            ("synchronous_commit", "on"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let got = key_settings(&vars);
        assert!(got.contains(&("shared_buffers", "128 MiB".into())), "{got:?}");
        assert!(got.contains(&("max_wal_size", "1 GiB".into())), "{got:?}");
        assert!(got.contains(&("checkpoint_timeout", "5 min".into())), "{got:?}");
        assert_eq!(
            product_version("PostgreSQL 16.1 (Debian 16.1-1)", &vars),
            "PostgreSQL 16.1"
        );
        assert_eq!(product_version("8.0.31", &BTreeMap::new()), "MySQL 8.0.31");
        let xtradb: BTreeMap<String, String> =
            [("innodb_version", "5.6.35-80.0"), ("version_comment", "MariaDB Server")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert_eq!(
            product_version("10.1.23-MariaDB", &xtradb),
            "MariaDB 10.1.23 with XtraDB 5.6.35-80.0"
        );
    }
}
