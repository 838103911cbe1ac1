//! The state directory (`$DBPERF_HOME`, default `~/.dbperf`) and the sandbox operations on it
//! (installed servers under `dist/` are `dist.rs`).
//!
//! Layout of one sandbox. The directory is mode 0700, owned by the account the server runs
//! as: the invoking user, or when dbperf is root the unprivileged server account
//! (`account.rs`), which then also owns what the server writes; the files dbperf writes
//! (`my.cnf`, `state.json`, `admin.cnf`, `bench.cnf`, `.lock`) are the invoking user's, and
//! none of them is ever written through a link planted in its place.
//!
//! ```text
//! $DBPERF_HOME/servers/NAME/
//!   data/          datadir, created once (mariadb-install-db or mysqld --initialize-insecure)
//!   tmp/           tmpdir (private: a starting server deletes `#sql*` files in its tmpdir)
//!   files/         secure_file_priv: the only place LOAD DATA INFILE / INTO OUTFILE may touch
//!   my.cnf         rendered by every start from that start's flags
//!   admin.cnf      root's generated password, mode 0600 (`mariadb --defaults-file=admin.cnf`)
//!   bench.cnf      the benchmark account's generated password, mode 0600 (`credentials.rs`)
//!   mysqld.sock  mysqld.pid  error.log  install.log
//!   state.json     the SandboxRecord: version id, version, port, socket, settings, the pid
//!                  the last start spawned and whether that start finished (`ready`)
//!   .lock          flock held while starting or stopping
//! ```
//!
//! A PostgreSQL sandbox has `data/` (initdb; `data/postmaster.pid` is its pid file),
//! `postgresql.conf` instead of `my.cnf`, and its socket `.s.PGSQL.PORT` in the sandbox
//! directory itself (`unix_socket_directories`); `tmp/` stays empty. Every datadir whose
//! accounts dbperf locked down holds the mark `data/dbperf-lockdown` (`start.rs`).
//!
//! Starting is `start.rs`; what runs on a sandbox ([`SandboxHome::status`]) is decided by the
//! server's own pid file, the pid its start recorded, and any process started with the
//! sandbox's config file, so a server still starting or left by an interrupted start is seen.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::account::ServerAccount;
use super::config::{Profile, Setting};
use super::credentials::{self, Login};
use super::options::KnownOptions;
use super::process::{self, SandboxLock};
use super::record::{RunState, SandboxRecord, SandboxStatus, StopOutcome};
use super::versions::{self, ServerSpec};
use super::ServerError;
use dbperf_driver::target::Product;

/// Longest unix socket path the kernel accepts (sun_path is 108 bytes with the NUL).
pub(crate) const MAX_SOCKET_PATH: usize = 107;
/// How long `stop` waits for a clean shutdown before SIGKILL.
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// What `dbperf server start` asks for.
#[derive(Debug, Clone)]
pub struct StartRequest {
    /// The known server version to run (product and version).
    pub server: &'static ServerSpec,
    pub name: String,
    /// `None` reuses the previous start's port if it is free, else picks a free one.
    pub port: Option<u16>,
    pub socket_only: bool,
    /// Listen on this host's address instead of loopback, for clients on other hosts.
    pub listen: Option<Listen>,
    pub settings: Vec<Setting>,
    pub profile: Profile,
    pub ready_timeout: Duration,
    /// Preload Debian's libjemalloc2 into the server (`LD_PRELOAD`).
    pub jemalloc: bool,
    /// Restrict the server, from its first instruction, to these CPUs.
    pub cpus: Option<Vec<usize>>,
    /// SIGINT/SIGTERM (the flag of `dbperf_core::interrupt`) end the start, which stops the
    /// server it launched (`dbperf server start`). False for a start inside a longer command
    /// (a lab, a cold restart), which finishes the start and leaves stopping to that command.
    pub interruptible: bool,
}

impl StartRequest {
    /// A sandbox of Debian's MariaDB with benchmark defaults, a free port and a 60 s
    /// readiness timeout.
    pub fn mariadb(name: impl Into<String>) -> StartRequest {
        StartRequest::new(versions::default_server(), name)
    }

    /// A sandbox of `server` with benchmark defaults, a free port and a 60 s readiness timeout.
    pub fn new(server: &'static ServerSpec, name: impl Into<String>) -> StartRequest {
        StartRequest {
            server,
            name: name.into(),
            port: None,
            socket_only: false,
            listen: None,
            settings: Vec::new(),
            profile: Profile::Benchmark,
            ready_timeout: Duration::from_secs(60),
            jemalloc: false,
            cpus: None,
            interruptible: false,
        }
    }
}

/// A sandbox on a database host whose client runs elsewhere: the address it listens on and
/// the client addresses the benchmark account may log in from (none else: the account exists
/// for exactly these, beside the socket and loopback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listen {
    pub addr: std::net::IpAddr,
    pub clients: Vec<std::net::IpAddr>,
}

impl Listen {
    /// Checks a `--listen` / `--allow-from` pair: a client list is required, and neither may
    /// be a wildcard.
    pub fn new(addr: std::net::IpAddr, clients: Vec<std::net::IpAddr>) -> Result<Listen, ServerError> {
        let why = if addr.is_unspecified() {
            Some(format!(
                "--listen {addr} would listen on every address of the host: give the one address the client reaches"
            ))
        } else if clients.is_empty() {
            Some("--listen needs --allow-from CLIENT (the client host's address, repeatable): the benchmark account is created for those addresses only".to_owned())
        } else {
            clients
                .iter()
                .find(|c| c.is_unspecified())
                .map(|c| format!("--allow-from {c} is every address: give the client host's own"))
        };
        match why {
            Some(why) => Err(ServerError::InvalidListen { why }),
            None => Ok(Listen { addr, clients }),
        }
    }
}

/// Paths of one sandbox's files.
pub(crate) struct Paths {
    pub dir: PathBuf,
    pub data: PathBuf,
    pub tmp: PathBuf,
    pub files: PathBuf,
    pub my_cnf: PathBuf,
    pub admin_cnf: PathBuf,
    pub bench_cnf: PathBuf,
    pub socket: PathBuf,
    pub pid_file: PathBuf,
    pub error_log: PathBuf,
    pub install_log: PathBuf,
    pub state: PathBuf,
    pub lock: PathBuf,
}

/// dbperf's state directory; all sandbox operations go through it.
#[derive(Debug, Clone)]
pub struct SandboxHome {
    root: PathBuf,
    /// Installed servers; `ROOT/dist` unless set with [`SandboxHome::with_dist_root`].
    dist: PathBuf,
}

impl SandboxHome {
    /// `$DBPERF_HOME`, or `~/.dbperf` when it is unset or empty; installed servers in
    /// `$DBPERF_DIST` when it is set (to share one set of installs between homes), else in
    /// the home's `dist/`.
    pub fn from_env() -> Result<SandboxHome, ServerError> {
        let root = match std::env::var_os("DBPERF_HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home),
            None => {
                let home = std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .ok_or(ServerError::NoHome)?;
                PathBuf::from(home).join(".dbperf")
            }
        };
        let home = SandboxHome::at(root);
        Ok(match std::env::var_os("DBPERF_DIST").filter(|v| !v.is_empty()) {
            Some(dist) => home.with_dist_root(std::path::absolute(PathBuf::from(&dist)).unwrap_or(dist.into())),
            None => home,
        })
    }

    /// A state directory at `root` (made absolute against the current directory).
    pub fn at(root: impl Into<PathBuf>) -> SandboxHome {
        let root = root.into();
        let root = std::path::absolute(&root).unwrap_or(root);
        SandboxHome {
            dist: root.join("dist"),
            root,
        }
    }

    /// Uses the servers installed under `dist` (another home's `dist/`), for example so that a
    /// throwaway home in a test runs the servers `dbperf server install` put in `~/.dbperf`.
    pub fn with_dist_root(mut self, dist: impl Into<PathBuf>) -> SandboxHome {
        self.dist = dist.into();
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The datadir sandbox `name` uses (it may not exist yet). Replace it only while the
    /// sandbox is stopped.
    pub fn datadir(&self, name: &str) -> PathBuf {
        self.paths(name, Product::Mariadb).data
    }

    /// The `[client]` file with which `mariadb --defaults-file=FILE` logs in to sandbox
    /// `name` as root (mode 0600; it exists once the sandbox has started). PostgreSQL
    /// sandboxes have none: their superuser logs in over the owner-only socket.
    pub fn admin_defaults_file(&self, name: &str) -> PathBuf {
        self.paths(name, Product::Mariadb).admin_cnf
    }

    /// Keeps sandbox `name`'s admin login at `dest` (0600), to go with a copy of its datadir
    /// (the root password lives in the datadir's grant tables). Nothing to keep for a
    /// sandbox without one (PostgreSQL); returns whether a login was kept.
    pub fn save_admin_login(&self, name: &str, dest: &Path) -> Result<bool, ServerError> {
        let src = self.admin_defaults_file(name);
        if !src.is_file() {
            return Ok(false);
        }
        let password = credentials::read(&src)?;
        let socket = self.paths(name, Product::Mariadb).socket;
        credentials::write(dest, Login::Admin, Some(&socket), &password)?;
        Ok(true)
    }

    /// Gives sandbox `name` the admin login kept by [`SandboxHome::save_admin_login`] with the
    /// datadir copy it is about to start on.
    pub fn restore_admin_login(&self, name: &str, src: &Path) -> Result<(), ServerError> {
        let password = credentials::read(src)?;
        let p = self.paths(name, Product::Mariadb);
        credentials::write(&p.admin_cnf, Login::Admin, Some(&p.socket), &password)
    }

    /// Checks `settings` against the option list of `server` (which must be installed), as
    /// `start` does before it creates anything.
    pub fn check_settings(&self, server: &'static ServerSpec, settings: &[Setting]) -> Result<(), ServerError> {
        let bins = self.binaries(server)?;
        KnownOptions::load(&bins, &self.dist_dir(server))?.check(server, settings)
    }

    /// Where installed servers live (`$DBPERF_HOME/dist`).
    pub fn dist_root(&self) -> &Path {
        &self.dist
    }

    pub(crate) fn paths(&self, name: &str, kind: Product) -> Paths {
        let dir = self.root.join("servers").join(name);
        let data = dir.join("data");
        let (my_cnf, socket, pid_file) = match kind {
            Product::Postgres => (dir.join("postgresql.conf"), dir.clone(), data.join("postmaster.pid")),
            Product::Mariadb | Product::Mysql => (dir.join("my.cnf"), dir.join("mysqld.sock"), dir.join("mysqld.pid")),
        };
        Paths {
            data,
            tmp: dir.join("tmp"),
            files: dir.join("files"),
            my_cnf,
            admin_cnf: dir.join("admin.cnf"),
            bench_cnf: dir.join("bench.cnf"),
            socket,
            pid_file,
            error_log: dir.join("error.log"),
            install_log: dir.join("install.log"),
            state: dir.join("state.json"),
            lock: dir.join(".lock"),
            dir,
        }
    }

    /// The paths of an existing sandbox, as its record says it was started.
    pub(crate) fn paths_of(&self, record: &SandboxRecord) -> Paths {
        self.paths(&record.name, record.kind)
    }

    /// SIGTERM, wait up to 60 s for a clean shutdown, then SIGKILL.
    pub fn stop(&self, name: &str) -> Result<StopOutcome, ServerError> {
        self.stop_with_timeout(name, DEFAULT_STOP_TIMEOUT)
    }

    /// Like [`SandboxHome::stop`] with a chosen clean-shutdown timeout.
    ///
    /// PostgreSQL gets SIGINT (its "fast" shutdown: SIGTERM would wait for every client to
    /// disconnect).
    pub fn stop_with_timeout(&self, name: &str, timeout: Duration) -> Result<StopOutcome, ServerError> {
        let record = self.status(name)?.record;
        let p = self.paths_of(&record);
        let _lock = SandboxLock::acquire(name, p.lock.clone())?;
        let Some(pid) = self.server_pid(&p, Some(&record)) else {
            if record.kind != Product::Postgres {
                // PostgreSQL's own postmaster.pid is left to PostgreSQL, which checks it.
                remove_if_exists(&p.pid_file)?;
            }
            return Ok(StopOutcome::NotRunning);
        };
        let started = Instant::now();
        let signal = match record.kind {
            Product::Postgres => libc::SIGINT,
            Product::Mariadb | Product::Mysql => libc::SIGTERM,
        };
        process::send_signal(name, pid, signal)?;
        if process::wait_exit(pid, &p.my_cnf, timeout) {
            return Ok(StopOutcome::Terminated {
                pid,
                waited: started.elapsed(),
            });
        }
        process::send_signal(name, pid, libc::SIGKILL)?;
        if !process::wait_exit(pid, &p.my_cnf, Duration::from_secs(5)) {
            return Err(ServerError::Unkillable {
                name: name.to_owned(),
                pid,
            });
        }
        if record.kind != Product::Postgres {
            remove_if_exists(&p.pid_file)?;
        }
        Ok(StopOutcome::Killed {
            pid,
            waited: started.elapsed(),
        })
    }

    /// Every sandbox with a `state.json`, sorted by name.
    pub fn list(&self) -> Result<Vec<SandboxStatus>, ServerError> {
        let mut out = Vec::new();
        for name in self.names()? {
            if let Some(record) = self.load(&name)? {
                let state = self.run_state(&record);
                out.push(SandboxStatus { record, state });
            }
        }
        Ok(out)
    }

    /// One sandbox's record and run state; unknown names list the known ones.
    pub fn status(&self, name: &str) -> Result<SandboxStatus, ServerError> {
        validate_name(name)?;
        let Some(record) = self.load(name)? else {
            return Err(ServerError::UnknownSandbox {
                name: name.to_owned(),
                home: self.root.clone(),
                known: self.names()?,
            });
        };
        let state = self.run_state(&record);
        Ok(SandboxStatus { record, state })
    }

    /// Running when a server runs and its start finished; starting when one runs but its
    /// start did not finish (under way, or cut short); else stopped.
    fn run_state(&self, record: &SandboxRecord) -> RunState {
        match self.server_pid(&self.paths_of(record), Some(record)) {
            Some(pid) if record.ready => RunState::Running { pid },
            Some(pid) => RunState::Starting { pid },
            None => RunState::Stopped,
        }
    }

    /// The pid of the server running for this sandbox, if any: the server's own pid file,
    /// the pid its last start recorded, or any process started with the sandbox's config
    /// file (a server that has not written its pid file yet), each checked to be alive and
    /// started with that config file.
    pub(crate) fn server_pid(&self, p: &Paths, record: Option<&SandboxRecord>) -> Option<i32> {
        let ours = |pid: &i32| process::is_our_server(*pid, &p.my_cnf);
        process::read_pid_file(&p.pid_file)
            .filter(ours)
            .or_else(|| record.and_then(|r| r.pid).filter(ours))
            .or_else(|| process::processes_naming(&p.my_cnf).first().copied())
    }

    /// The URL of a running sandbox, for `--target sandbox:NAME` (see
    /// [`SandboxRecord::target_url`]: the socket for the MySQL family, TCP for PostgreSQL).
    pub fn resolve_target(&self, name: &str) -> Result<String, ServerError> {
        let status = self.status(name)?;
        match status.state {
            RunState::Running { .. } => Ok(status.record.target_url()),
            RunState::Starting { pid } => Err(ServerError::NotReady {
                name: name.to_owned(),
                pid,
                server: status.record.server,
            }),
            RunState::Stopped => Err(ServerError::NotRunning {
                name: name.to_owned(),
                server: status.record.server,
            }),
        }
    }

    /// Gives the sandbox directory and what the server writes in it to the server account
    /// (the log files are created first, so the server can append to them).
    pub(crate) fn hand_over(&self, account: &ServerAccount, p: &Paths) -> Result<(), ServerError> {
        for granted in account.ensure_reachable(&p.dir)? {
            eprintln!(
                "note: granted the server account `{}` search permission (x) on {} so it can reach the sandbox",
                account.name,
                granted.display()
            );
        }
        for log in [&p.error_log, &p.install_log] {
            process::open_nofollow(log, process::Write::Append)
                .map_err(|e| ServerError::io("cannot create", log, e))?;
        }
        for path in [&p.dir, &p.tmp, &p.files, &p.error_log, &p.install_log] {
            std::os::unix::fs::lchown(path, Some(account.uid), Some(account.gid))
                .map_err(|e| ServerError::io("cannot hand over to the server account", path, e))?;
        }
        // A datadir copied in by `lab run` or left by an older dbperf is root's.
        account.chown_tree(&p.data)
    }

    fn names(&self) -> Result<Vec<String>, ServerError> {
        let dir = self.root.join("servers");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ServerError::io("cannot read", dir, e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("state.json").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        Ok(names)
    }

    pub(crate) fn load(&self, name: &str) -> Result<Option<SandboxRecord>, ServerError> {
        let p = self.paths(name, Product::Mariadb);
        let path = p.state;
        let mut record: SandboxRecord = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| ServerError::CorruptState { path, source })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ServerError::io("cannot read", path, e)),
        };
        // Readable by the sandbox's owner only; anyone else sees the record without it.
        record.bench_password = credentials::read_if_present(&p.bench_cnf).ok().flatten();
        Ok(Some(record))
    }

    /// Replaces `state.json` atomically (a link in its place is replaced, not followed).
    pub(crate) fn save(&self, record: &SandboxRecord) -> Result<(), ServerError> {
        let path = self.paths_of(record).state;
        let json = serde_json::to_string_pretty(record).expect("a record always serializes");
        dbperf_core::nofollow::write_atomic(&path, json.as_bytes())
            .map_err(|e| ServerError::io("cannot replace", path, e))
    }
}

pub(crate) fn validate_name(name: &str) -> Result<(), ServerError> {
    let ok = (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ServerError::InvalidName { name: name.to_owned() })
    }
}

/// The requested port (which must be free), else the previous one if free, else a free one.
pub(crate) fn choose_port(
    requested: Option<u16>,
    previous: Option<u16>,
    addr: std::net::IpAddr,
) -> Result<u16, ServerError> {
    let free = |port: u16| TcpListener::bind((addr, port)).is_ok();
    if let Some(port) = requested {
        return if port != 0 && free(port) {
            Ok(port)
        } else {
            Err(ServerError::PortInUse { port })
        };
    }
    if let Some(port) = previous.filter(|p| free(*p)) {
        return Ok(port);
    }
    let listener = TcpListener::bind((addr, 0)).map_err(|e| ServerError::Listen {
        addr,
        why: e.to_string(),
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| ServerError::io("cannot read the address of", addr.to_string(), e))?
        .port();
    Ok(port)
}

/// Writes a file of dbperf's in the sandbox directory, never through a symbolic link there.
pub(crate) fn write(path: &Path, contents: &str) -> Result<(), ServerError> {
    use std::io::Write as _;
    process::open_nofollow(path, process::Write::Truncate)
        .and_then(|mut f| f.write_all(contents.as_bytes()))
        .map_err(|e| ServerError::io("cannot write", path, e))
}

pub(crate) fn remove_if_exists(path: &Path) -> Result<(), ServerError> {
    let result = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match result {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ServerError::io("cannot remove", path, e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_needs_clients_and_no_wildcards() {
        let a = |s: &str| s.parse::<std::net::IpAddr>().unwrap();
        Listen::new(a("10.0.0.2"), vec![a("10.0.0.1")]).unwrap();
        for (addr, clients, says) in [
            ("0.0.0.0", vec![a("10.0.0.1")], "every address of the host"),
            ("10.0.0.2", vec![], "needs --allow-from"),
            ("10.0.0.2", vec![a("::")], "is every address"),
        ] {
            let e = Listen::new(a(addr), clients).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn names_are_checked() {
        assert!(validate_name("bench-1_a").is_ok());
        for bad in ["", "a/b", "..", "a b", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn unknown_sandbox_lists_known_names() {
        let dir = tempfile::tempdir().unwrap();
        let home = SandboxHome::at(dir.path());
        let err = home.resolve_target("nope").unwrap_err().to_string();
        assert!(err.contains("known sandboxes: (none)"), "{err}");
        assert!(err.contains("dbperf server start mariadb --name nope"), "{err}");
    }
}
