//! Sandboxed database servers under `$DBPERF_HOME/servers/NAME/`, and the server versions they
//! run, installed under `$DBPERF_HOME/dist/ID/`.
//!
//! This module owns the whole life of a private MariaDB, MySQL or PostgreSQL: installing the
//! chosen known version, checking `--set` keys against that version's own option list,
//! initializing its datadir, rendering its `my.cnf` (or `postgresql.conf`), starting the server
//! detached, waiting until it answers, creating the benchmark account (`sb` with a password
//! generated per sandbox, database `sbtest`), stopping it cleanly, resolving `--target
//! sandbox:NAME` to a `mysql://` or `postgres://` URL, and finding the admin login of the
//! sandbox a target points at ([`admin_target`], for telemetry and `--settle`). It never
//! touches `/var/lib/mysql`, the system service or a fixed well-known port: servers listen on
//! loopback only, on a free port, unless a start names the one address to listen on and the
//! client hosts let in (`--listen ADDR --allow-from CLIENT`, [`Listen`]: a database host whose
//! client runs on another machine).
//!
//! | file | owns |
//! |---|---|
//! | `versions.rs` | the server versions dbperf knows ([`VERSIONS`], [`lookup`]) |
//! | `added.rs` | your own builds (`server add`): a tree examined, checked by one start, recorded like an install |
//! | `dist.rs` | `$DBPERF_HOME/dist/ID`: install (apt-get, mvn + unpack), [`DistRecord`] |
//! | `options.rs` | option names from `--verbose --help`, the unknown-`--set`-key check |
//! | `config.rs` | `--set KEY=VALUE` parsing and per-version `my.cnf` rendering ([`render_my_cnf`]) |
//! | `home.rs` | the state directory: layout, stop/list/status, what runs ([`SandboxHome`]) |
//! | `start.rs` | one start, safe to interrupt: the running check, the lock-down with networking off, the TCP restart |
//! | `credentials.rs` | `admin.cnf` and `bench.cnf`: generated passwords, kept owner-only, sent only as hashes ([`Secret`]) |
//! | `locate.rs` | the sandbox a target points at and its admin login ([`admin_target`]) |
//! | `snapshot.rs` | kept copies of a stopped sandbox's datadir with their admin login: saved, restored, complete or not |
//! | `remote.rs` | another host through the system `ssh`: its address, `dbperf` run there, `remote install`, a lost connection told from a failure |
//! | `listing.rs` | the JSON lines of `server list --json` and `--available --json`, written and read as one shape |
//! | `record.rs` | `state.json` ([`SandboxRecord`]), target URLs, start/stop reports |
//! | `daemon.rs` | running the server programs: datadir init, spawn, readiness, admin SQL |
//! | `postgres.rs` | PostgreSQL: initdb, spawn, readiness, admin SQL, `postgresql.conf`, `--describe-config` |
//! | `process.rs` | pid files, liveness, signals, the per-sandbox lock |
//! | `account.rs` | the OS account servers run as when dbperf is root, ACL search grants |
//! | `cold.rs` | cold caches: a sandbox restarted with the OS page cache dropped ([`cold::cold_restart`]) |
//! | `testing.rs` | [`testing::TempSandbox`], a throwaway server for integration tests |
//!
//! A server never runs as OS root: it runs as the invoking user, or, when that user is root,
//! as the unprivileged account `dbperf-sandbox` (`account.rs`). The sandbox directory is
//! mode 0700, so its socket is its owner's alone; root's password is generated and kept in
//! the sandbox's `admin.cnf` (0600), the benchmark account's in `bench.cnf` (0600); the
//! benchmark account has rights on its own database only (PostgreSQL: no superuser, no
//! CREATEDB, owner of `sbtest`); `secure_file_priv` is the sandbox's `files/`. A server takes
//! TCP connections only once its accounts are locked down; a start that fails or is
//! interrupted after the server was spawned stops it again; a start never launches a second
//! server on a datadir in use.

mod account;
mod added;
pub mod cold;
mod config;
mod credentials;
mod daemon;
mod dist;
pub mod listing;
mod versions;
pub use dist::find_program;
mod home;
mod locate;
mod options;
mod postgres;
mod process;
mod record;
pub mod remote;
pub mod snapshot;
mod start;
pub mod testing;

use std::path::PathBuf;
use std::time::Duration;

pub use account::{ServerAccount, DEFAULT_SERVER_USER};
pub use added::{parse_version_line, remote_spec, AddFrom, AddReport, VersionLine};
pub use config::{asks_for_waits, render_my_cnf, Config, Network, Profile, Setting, PFS_STARTUP_INSTRUMENTS};
pub use credentials::Secret;
pub use dist::{DistRecord, InstallOutcome, InstallReport};
pub use home::{Listen, SandboxHome, StartRequest, DEFAULT_STOP_TIMEOUT};
pub use locate::admin_target;
pub use options::{parse_help, KnownOptions};
pub use postgres::{parse_describe_config, render_postgresql_conf, SOCKET_ONLY_PORT};
pub use record::{RunState, SandboxRecord, SandboxStatus, StartReport, StopOutcome};
pub use versions::{default_server, lookup, JarLayout, ServerSpec, Source, Version, VERSIONS};

/// The benchmark account created in every sandbox (for both `localhost` and `127.0.0.1`);
/// its password is generated per sandbox and kept in the sandbox's `bench.cnf`.
pub const BENCH_USER: &str = "sb";
/// The database created in every sandbox.
pub const BENCH_DATABASE: &str = "sbtest";

/// Resolves `--target sandbox:NAME` using `$DBPERF_HOME` (default `~/.dbperf`).
///
/// Returns the unix-socket URL (`mysql://sb:PASSWORD@localhost/sbtest?socket=...`) for the
/// MySQL family because it is the faster transport, TCP for PostgreSQL; PASSWORD is the
/// sandbox's generated benchmark password. Fails with [`ServerError::NotRunning`] if the
/// sandbox is stopped.
pub fn resolve_sandbox_target(name: &str) -> Result<String, ServerError> {
    SandboxHome::from_env()?.resolve_target(name)
}

/// Everything that can go wrong with a sandbox. Each message says what is wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(
        "`{binary}` was not found (searched $PATH, /usr/sbin, /usr/bin, /usr/local/sbin, \
         /usr/local/bin). Install MariaDB with `apt-get install -y mariadb-server`; dbperf runs \
         its own private server, so the system `mariadb` service does not need to be running \
         (`systemctl disable --now mariadb` is fine)"
    )]
    MissingBinary { binary: &'static str },

    #[error("jemalloc was asked for, but libjemalloc.so.2 is not installed: `apt-get install -y libjemalloc2`")]
    MissingJemalloc,

    #[error(
        "cannot find dbperf's state directory: neither $DBPERF_HOME nor $HOME is set. \
         Set DBPERF_HOME=/some/dir"
    )]
    NoHome,

    #[error(
        "invalid sandbox name {name:?}: use 1-64 characters from [A-Za-z0-9_-] \
         (for example `--name bench1`)"
    )]
    InvalidName { name: String },

    #[error(
        "invalid --set item {item:?}: {reason}; expected KEY=VALUE, for example `--set innodb_buffer_pool_size=2G`"
    )]
    InvalidSetting { item: String, reason: String },

    #[error("--set {key} is managed by dbperf and cannot be overridden: {hint}")]
    ReservedSetting { key: String, hint: &'static str },

    #[error(
        "unix socket path {path} is {len} bytes, over the 107-byte limit; \
         use a shorter DBPERF_HOME or sandbox name"
    )]
    SocketPathTooLong { path: PathBuf, len: usize },

    #[error(
        "port {port} on 127.0.0.1 is already in use; pick another --port, or omit --port to \
         let dbperf choose a free one"
    )]
    PortInUse { port: u16 },

    #[error(
        "sandbox {name:?} is already running (pid {pid}); connect with --target {url}. \
         To change its settings, stop it first: `dbperf server stop {name}`"
    )]
    AlreadyRunning { name: String, pid: i32, url: String },

    #[error("no sandbox named {name:?} under {home}; known sandboxes: {}. Create one with `dbperf server start mariadb --name {name}`", known_list(.known))]
    UnknownSandbox {
        name: String,
        home: PathBuf,
        known: Vec<String>,
    },

    #[error("sandbox {name:?} holds a datadir of {has}, not {wanted}; start it with `dbperf server start {has} --name {name}`, or pick another --name for {wanted}")]
    OtherServer {
        name: String,
        has: String,
        wanted: &'static str,
    },

    #[error("sandbox {name:?} is not running; start it with `dbperf server start {server} --name {name}`")]
    NotRunning { name: String, server: String },

    #[error("sandbox {name:?} has a server (pid {pid}) whose start has not finished: wait for it, or, if that start was killed, run `dbperf server start {server} --name {name}` again (it stops that server first)")]
    NotReady { name: String, pid: i32, server: String },

    #[error("the datadir {} of sandbox {name:?} is in use by process {pid}, which dbperf did not start for this sandbox; stop that process (`ps -p {pid}`) before starting the sandbox", datadir.display())]
    DatadirInUse { name: String, datadir: PathBuf, pid: i32 },

    #[error("the start of sandbox {name:?} was interrupted; the server it started was stopped again")]
    Interrupted { name: String },

    #[error("another dbperf process is starting or stopping sandbox {name:?} (lock {}); wait for it and retry", path.display())]
    Busy { name: String, path: PathBuf },

    #[error("unknown server {id:?}; dbperf knows: {known} (see `dbperf server list --available`; a build of your own is added with `dbperf server add NAME --basedir DIR`)")]
    UnknownServer { id: String, known: String },

    #[error("the build {id:?} added with `dbperf server add` is gone (its record in {} names a server program that no longer exists); add it again: `dbperf server remove {id}`, then `dbperf server add {id} --basedir DIR`", dir.display())]
    AddedMissing { id: String, dir: PathBuf },

    #[error(
        "cannot listen on {addr}: {why}; --listen takes an address of this host's own interfaces (`ip -brief address`)"
    )]
    Listen { addr: std::net::IpAddr, why: String },

    #[error("{why}")]
    InvalidListen { why: String },

    #[error("snapshot: {why}")]
    Snapshot { why: String },

    #[error("cannot add {name:?}: {why}")]
    Add { name: String, why: String },

    #[error("{id} is not installed (no {}); install it with `dbperf server install {id}`", dir.display())]
    NotInstalled { id: &'static str, dir: PathBuf },

    #[error("cannot install the Debian packages {packages}: {output}\nInstall them by hand (`apt-get install -y {packages}`) and retry")]
    PackageInstall { packages: String, output: String },

    #[error("installing a server failed at {step}: {output}")]
    InstallStep { step: &'static str, output: String },

    #[error("cannot list the options of {}: `--verbose --help` failed ({status}): {stderr}", server.display())]
    OptionList {
        server: PathBuf,
        status: String,
        stderr: String,
    },

    #[error("--set {key}: {key} is not a setting of {server}; {suggestion} Nothing was started ({hint})")]
    UnknownSetting {
        key: String,
        server: &'static str,
        suggestion: String,
        hint: String,
    },

    #[error("{program} failed ({status}) for {}; the end of its output (all of it is in {}):\n{output}\nFix the cause above and retry; the partial datadir was removed", datadir.display(), log.display())]
    InstallFailed {
        program: String,
        status: String,
        datadir: PathBuf,
        log: PathBuf,
        output: String,
    },

    #[error("the server of sandbox {name:?} exited during startup ({status}); what this start logged in {}:\n{log_tail}", log.display())]
    StartFailed {
        name: String,
        status: String,
        log: PathBuf,
        log_tail: String,
    },

    #[error("the server of sandbox {name:?} (pid {pid}) did not answer on {} within {waited:?}, so dbperf stopped it; give it more time with `--timeout SECONDS`. What this start logged in {}:\n{log_tail}", socket.display(), log.display())]
    StartTimeout {
        name: String,
        pid: u32,
        socket: PathBuf,
        waited: Duration,
        log: PathBuf,
        log_tail: String,
    },

    #[error("admin SQL on {} failed while {action}: {stderr}", socket.display())]
    AdminSql {
        action: &'static str,
        socket: PathBuf,
        stderr: String,
    },

    #[error("cannot signal server pid {pid} of sandbox {name:?}: {source}. If it runs as another user, stop it as that user")]
    Signal {
        name: String,
        pid: i32,
        source: std::io::Error,
    },

    #[error("server pid {pid} of sandbox {name:?} survived SIGKILL for 5 s; inspect it with `ps -p {pid}`")]
    Unkillable { name: String, pid: i32 },

    #[error("{} is not valid sandbox state ({source}); remove that file and run `dbperf server start` again", path.display())]
    CorruptState { path: PathBuf, source: serde_json::Error },

    #[error("the sandbox's server account {name:?}: {why}")]
    Account { name: String, why: String },

    #[error("the sandbox server runs as the unprivileged account {account:?} (dbperf is root), which cannot enter {}: granting it search permission failed: {why}. Grant it by hand (`setfacl -m u:{account}:x {}`), or set DBPERF_HOME (and DBPERF_DIST) to a directory that account can reach, e.g. /var/lib/dbperf", dir.display(), dir.display())]
    Unreachable { account: String, dir: PathBuf, why: String },

    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ServerError {
    fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        ServerError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "(none)".to_owned()
    } else {
        known.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_binary_says_how_to_install() {
        let msg = ServerError::MissingBinary { binary: "mariadbd" }.to_string();
        assert!(msg.contains("`mariadbd` was not found"), "{msg}");
        assert!(msg.contains("apt-get install -y mariadb-server"), "{msg}");
        assert!(msg.contains("does not need to be running"), "{msg}");
    }
}
