//! The state directory (`$DBPERF_HOME`, default `~/.dbperf`) and the sandbox operations on it
//! (installed servers under `dist/` are `dist.rs`).
//!
//! Layout of one sandbox. The directory is mode 0700, owned by the account the server runs
//! as: the invoking user, or when dbperf is root the unprivileged server account
//! (`account.rs`), which then also owns what the server writes; the files dbperf writes
//! (`my.cnf`, `state.json`, `admin.cnf`, `.lock`) are the invoking user's.
//!
//! ```text
//! $DBPERF_HOME/servers/NAME/
//!   data/          datadir, created once (mariadb-install-db or mysqld --initialize-insecure)
//!   tmp/           tmpdir (private: a starting server deletes `#sql*` files in its tmpdir)
//!   files/         secure_file_priv: the only place LOAD DATA INFILE / INTO OUTFILE may touch
//!   my.cnf         rendered by every start from that start's flags
//!   admin.cnf      root's generated password, mode 0600 (`mariadb --defaults-file=admin.cnf`)
//!   mysqld.sock  mysqld.pid  error.log  install.log
//!   state.json     the SandboxRecord: catalog id, version, port, socket, settings
//!   .lock          flock held while starting or stopping
//! ```
//!
//! A PostgreSQL sandbox has `data/` (initdb; `data/postmaster.pid` is its pid file),
//! `postgresql.conf` instead of `my.cnf`, and its socket `.s.PGSQL.PORT` in the sandbox
//! directory itself (`unix_socket_directories`); `tmp/` stays empty.

use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::account::ServerAccount;
use super::catalog::{self, ServerSpec};
use super::config::{render_my_cnf, Config, Network, Profile, Setting};
use super::daemon::{self, Pending};
use super::options::KnownOptions;
use super::postgres;
use super::process::{self, SandboxLock};
use super::record::{RunState, SandboxRecord, SandboxStatus, ServerKind, StartReport, StopOutcome};
use super::ServerError;

/// Longest unix socket path the kernel accepts (sun_path is 108 bytes with the NUL).
const MAX_SOCKET_PATH: usize = 107;
/// How long `stop` waits for a clean shutdown before SIGKILL.
pub const DEFAULT_STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// What `dbperf server start` asks for.
#[derive(Debug, Clone)]
pub struct StartRequest {
    /// The catalog server to run (flavor and version).
    pub server: &'static ServerSpec,
    pub name: String,
    /// `None` reuses the previous start's port if it is free, else picks a free one.
    pub port: Option<u16>,
    pub socket_only: bool,
    pub settings: Vec<Setting>,
    pub profile: Profile,
    pub ready_timeout: Duration,
    /// Preload Debian's libjemalloc2 into the server (`LD_PRELOAD`).
    pub jemalloc: bool,
    /// Restrict the server, from its first instruction, to these CPUs.
    pub cpus: Option<Vec<usize>>,
}

impl StartRequest {
    /// A sandbox of Debian's MariaDB with benchmark defaults, a free port and a 60 s
    /// readiness timeout.
    pub fn mariadb(name: impl Into<String>) -> StartRequest {
        StartRequest::new(catalog::default_server(), name)
    }

    /// A sandbox of `server` with benchmark defaults, a free port and a 60 s readiness timeout.
    pub fn new(server: &'static ServerSpec, name: impl Into<String>) -> StartRequest {
        StartRequest {
            server,
            name: name.into(),
            port: None,
            socket_only: false,
            settings: Vec::new(),
            profile: Profile::Benchmark,
            ready_timeout: Duration::from_secs(60),
            jemalloc: false,
            cpus: None,
        }
    }
}

/// Paths of one sandbox's files.
struct Paths {
    dir: PathBuf,
    data: PathBuf,
    tmp: PathBuf,
    files: PathBuf,
    my_cnf: PathBuf,
    admin_cnf: PathBuf,
    socket: PathBuf,
    pid_file: PathBuf,
    error_log: PathBuf,
    install_log: PathBuf,
    state: PathBuf,
    lock: PathBuf,
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
        self.paths(name, ServerKind::Mariadb).data
    }

    /// The `[client]` file with which `mariadb --defaults-file=FILE` logs in to sandbox
    /// `name` as root (mode 0600; it exists once the sandbox has started). PostgreSQL
    /// sandboxes have none: their superuser logs in over the owner-only socket.
    pub fn admin_defaults_file(&self, name: &str) -> PathBuf {
        self.paths(name, ServerKind::Mariadb).admin_cnf
    }

    /// Keeps sandbox `name`'s admin login at `dest` (0600), to go with a copy of its datadir
    /// (the root password lives in the datadir's grant tables). Nothing to keep for a
    /// sandbox without one (PostgreSQL); returns whether a login was kept.
    pub fn save_admin_login(&self, name: &str, dest: &Path) -> Result<bool, ServerError> {
        let src = self.admin_defaults_file(name);
        if !src.is_file() {
            return Ok(false);
        }
        let password = daemon::read_admin_password(&src)?;
        let socket = self.paths(name, ServerKind::Mariadb).socket;
        daemon::write_admin_file(dest, &socket, &password)?;
        Ok(true)
    }

    /// Gives sandbox `name` the admin login kept by [`SandboxHome::save_admin_login`] with the
    /// datadir copy it is about to start on.
    pub fn restore_admin_login(&self, name: &str, src: &Path) -> Result<(), ServerError> {
        let password = daemon::read_admin_password(src)?;
        let p = self.paths(name, ServerKind::Mariadb);
        daemon::write_admin_file(&p.admin_cnf, &p.socket, &password)
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

    fn paths(&self, name: &str, kind: ServerKind) -> Paths {
        let dir = self.root.join("servers").join(name);
        let data = dir.join("data");
        let (my_cnf, socket, pid_file) = match kind {
            ServerKind::Postgres => (dir.join("postgresql.conf"), dir.clone(), data.join("postmaster.pid")),
            ServerKind::Mariadb | ServerKind::Mysql => {
                (dir.join("my.cnf"), dir.join("mysqld.sock"), dir.join("mysqld.pid"))
            }
        };
        Paths {
            data,
            tmp: dir.join("tmp"),
            files: dir.join("files"),
            my_cnf,
            admin_cnf: dir.join("admin.cnf"),
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
    fn paths_of(&self, record: &SandboxRecord) -> Paths {
        self.paths(&record.name, record.kind)
    }

    /// Initializes (first time only), configures and starts a sandbox, then creates `sb`/`sbtest`.
    ///
    /// `--set` keys are checked against the server's own option list first, so a key this
    /// version does not know fails here, before anything is created or started.
    pub fn start(&self, req: &StartRequest) -> Result<StartReport, ServerError> {
        let started = Instant::now();
        validate_name(&req.name)?;
        let bins = self.binaries(req.server)?;
        if !req.settings.is_empty() {
            KnownOptions::load(&bins, &self.dist_dir(req.server))?.check(req.server, &req.settings)?;
        }
        let p = self.paths(&req.name, req.server.flavor);
        let socket_file = match req.server.flavor {
            // `.s.PGSQL.65535` inside the socket directory.
            ServerKind::Postgres => p.socket.join(".s.PGSQL.65535"),
            ServerKind::Mariadb | ServerKind::Mysql => p.socket.clone(),
        };
        let socket_len = socket_file.as_os_str().len();
        if socket_len > MAX_SOCKET_PATH {
            return Err(ServerError::SocketPathTooLong {
                path: socket_file,
                len: socket_len,
            });
        }
        std::fs::create_dir_all(&p.dir).map_err(|e| ServerError::io("cannot create sandbox directory", &p.dir, e))?;
        // Owner only: the socket (and PostgreSQL's trust login over it) is the owner's alone.
        std::fs::set_permissions(&p.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| ServerError::io("cannot make private", &p.dir, e))?;
        let _lock = SandboxLock::acquire(&req.name, p.lock.clone())?;

        let previous = self.load(&req.name)?;
        let running = previous
            .as_ref()
            .and_then(|r| live_pid(&self.paths_of(r)))
            .or_else(|| live_pid(&p));
        if let Some(pid) = running {
            let url = previous.as_ref().map_or_else(
                || format!("sandbox:{}", req.name),
                |r| r.tcp_url().unwrap_or_else(|| r.socket_url()),
            );
            return Err(ServerError::AlreadyRunning {
                name: req.name.clone(),
                pid,
                url,
            });
        }

        // A requested port that is taken fails now, before the datadir is initialized.
        if !req.socket_only && req.port.is_some() {
            choose_port(req.port, None)?;
        }

        for dir in [&p.tmp, &p.files] {
            std::fs::create_dir_all(dir).map_err(|e| ServerError::io("cannot create", dir, e))?;
        }
        if let Some(account) = &bins.run_as {
            self.hand_over(account, &p)?;
        }
        if let Some(previous) = previous.as_ref().filter(|r| r.server != req.server.id) {
            return Err(ServerError::OtherServer {
                name: req.name.clone(),
                has: previous.server.clone(),
                wanted: req.server.id,
            });
        }
        let postgres = req.server.flavor == ServerKind::Postgres;
        let initialized = if postgres {
            !p.data.join("PG_VERSION").is_file()
        } else {
            !p.data.join("mysql").is_dir()
        };
        if initialized {
            // A datadir without the `mysql` schema (or PG_VERSION) is a failed earlier init:
            // start over.
            remove_if_exists(&p.data)?;
            let installed = if postgres {
                postgres::install_datadir(&bins, &p.data, &p.install_log)
            } else {
                daemon::install_datadir(&bins, &p.data, &p.tmp, &p.install_log)
            };
            if let Err(e) = installed {
                let _ = std::fs::remove_dir_all(&p.data);
                return Err(e);
            }
        }

        // The port is chosen only now: a free port found before the initialization (a second
        // for MariaDB, up to 20 s for MySQL) could be taken by someone else in the meantime.
        let network = if req.socket_only {
            Network::SocketOnly
        } else {
            Network::Loopback {
                port: choose_port(req.port, previous.as_ref().and_then(|r| r.port))?,
            }
        };
        let config = Config {
            name: req.name.clone(),
            server: req.server,
            basedir: bins.basedir.clone(),
            datadir: p.data.clone(),
            socket: p.socket.clone(),
            pid_file: p.pid_file.clone(),
            log_error: p.error_log.clone(),
            tmpdir: p.tmp.clone(),
            files: p.files.clone(),
            network,
            profile: req.profile,
            settings: req.settings.clone(),
        };
        let rendered = if postgres {
            postgres::render_postgresql_conf(&config)
        } else {
            render_my_cnf(&config)
        };
        write(&p.my_cnf, &rendered)?;
        // The server is not running (checked above), so these are leftovers of a crash.
        remove_if_exists(&p.pid_file)?;
        if !postgres {
            remove_if_exists(&p.socket)?;
        }

        let mut record = SandboxRecord {
            name: req.name.clone(),
            kind: req.server.flavor,
            server: req.server.id.to_owned(),
            version: previous
                .as_ref()
                .map_or_else(|| "unknown".to_owned(), |r| r.version.clone()),
            port: match network {
                Network::Loopback { port } => Some(port),
                Network::SocketOnly => None,
            },
            socket: p.socket.clone(),
            datadir: p.data.clone(),
            my_cnf: p.my_cnf.clone(),
            error_log: p.error_log.clone(),
            settings: req.settings.iter().map(Setting::to_string).collect(),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        let log_offset = std::fs::metadata(&p.error_log).map_or(0, |m| m.len());
        let launch = daemon::Launch {
            preload: if req.jemalloc {
                Some(daemon::jemalloc_path()?)
            } else {
                None
            },
            cpus: req.cpus.clone(),
        };
        let mut child = if postgres {
            postgres::spawn_server(&bins, &p.data, &p.my_cnf, &p.error_log, &launch)?
        } else {
            daemon::spawn_server(&bins, &p.my_cnf, &p.error_log, &launch)?
        };
        // Recorded before waiting, so `list` and `stop` can see a server that hangs in startup.
        self.save(&record)?;
        let pending = Pending {
            name: &req.name,
            socket: &p.socket,
            error_log: &p.error_log,
            log_offset,
            timeout: req.ready_timeout,
        };
        let pg_port = record.port.unwrap_or(postgres::SOCKET_ONLY_PORT);
        let ready = if postgres {
            postgres::wait_ready(&mut child, pg_port, &pending)
        } else {
            daemon::wait_ready(&bins, &mut child, &pending, &p.admin_cnf)
        };
        if let Err(e) = ready {
            if let (ServerError::StartFailed { .. }, Some(previous)) = (&e, &previous) {
                // The server exited: keep describing the last start that worked.
                self.save(previous)?;
            }
            stop_failed_start(&req.name, &mut child, &p);
            return Err(e);
        }
        let provisioned = if postgres {
            postgres::provision(&p.socket, pg_port)
        } else {
            daemon::secure_admin(&bins, &p.socket, &p.admin_cnf)
                .and_then(|()| daemon::provision(&bins, &p.socket, &p.admin_cnf))
        };
        record.version = match provisioned {
            Ok(version) => version,
            Err(e) => {
                // A start that fails stops what it started.
                stop_failed_start(&req.name, &mut child, &p);
                return Err(e);
            }
        };
        self.save(&record)?;
        Ok(StartReport {
            record,
            pid: child.id() as i32,
            initialized,
            elapsed: started.elapsed(),
        })
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
        let Some(pid) = live_pid(&p) else {
            remove_if_exists(&p.pid_file)?;
            return Ok(StopOutcome::NotRunning);
        };
        let started = Instant::now();
        let signal = match record.kind {
            ServerKind::Postgres => libc::SIGINT,
            ServerKind::Mariadb | ServerKind::Mysql => libc::SIGTERM,
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
        remove_if_exists(&p.pid_file)?;
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
                let state =
                    live_pid(&self.paths_of(&record)).map_or(RunState::Stopped, |pid| RunState::Running { pid });
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
        let state = live_pid(&self.paths_of(&record)).map_or(RunState::Stopped, |pid| RunState::Running { pid });
        Ok(SandboxStatus { record, state })
    }

    /// The URL of a running sandbox, for `--target sandbox:NAME` (see
    /// [`SandboxRecord::target_url`]: the socket for the MySQL family, TCP for PostgreSQL).
    pub fn resolve_target(&self, name: &str) -> Result<String, ServerError> {
        let status = self.status(name)?;
        match status.state {
            RunState::Running { .. } => Ok(status.record.target_url()),
            RunState::Stopped => Err(ServerError::NotRunning {
                name: name.to_owned(),
                server: status.record.server,
            }),
        }
    }

    /// Gives the sandbox directory and what the server writes in it to the server account
    /// (the log files are created first, so the server can append to them).
    fn hand_over(&self, account: &ServerAccount, p: &Paths) -> Result<(), ServerError> {
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

    fn load(&self, name: &str) -> Result<Option<SandboxRecord>, ServerError> {
        let path = self.paths(name, ServerKind::Mariadb).state;
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| ServerError::CorruptState { path, source }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ServerError::io("cannot read", path, e)),
        }
    }

    fn save(&self, record: &SandboxRecord) -> Result<(), ServerError> {
        let path = self.paths_of(record).state;
        let json = serde_json::to_string_pretty(record).expect("a record always serializes");
        let tmp = path.with_extension("json.tmp");
        write(&tmp, &json)?;
        std::fs::rename(&tmp, &path).map_err(|e| ServerError::io("cannot replace", path, e))
    }
}

/// Stops a server whose start failed after it was spawned (SIGTERM, then SIGKILL after
/// 10 s), so a failed `server start` leaves nothing running.
fn stop_failed_start(name: &str, child: &mut std::process::Child, p: &Paths) {
    let pid = child.id() as i32;
    if matches!(child.try_wait(), Ok(None)) {
        let _ = process::send_signal(name, pid, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        if matches!(child.try_wait(), Ok(None)) {
            let _ = process::send_signal(name, pid, libc::SIGKILL);
            let _ = child.wait();
        }
    }
    let _ = remove_if_exists(&p.pid_file);
}

fn live_pid(p: &Paths) -> Option<i32> {
    process::read_pid_file(&p.pid_file).filter(|pid| process::is_our_server(*pid, &p.my_cnf))
}

fn validate_name(name: &str) -> Result<(), ServerError> {
    let ok = (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Ok(())
    } else {
        Err(ServerError::InvalidName { name: name.to_owned() })
    }
}

/// The requested port (which must be free), else the previous one if free, else a free one.
fn choose_port(requested: Option<u16>, previous: Option<u16>) -> Result<u16, ServerError> {
    let free = |port: u16| TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok();
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
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| ServerError::io("cannot bind a free port on", "127.0.0.1:0", e))?;
    let port = listener
        .local_addr()
        .map_err(|e| ServerError::io("cannot read the address of", "127.0.0.1:0", e))?
        .port();
    Ok(port)
}

/// Writes a file of dbperf's in the sandbox directory, never through a symbolic link there.
fn write(path: &Path, contents: &str) -> Result<(), ServerError> {
    use std::io::Write as _;
    process::open_nofollow(path, process::Write::Truncate)
        .and_then(|mut f| f.write_all(contents.as_bytes()))
        .map_err(|e| ServerError::io("cannot write", path, e))
}

fn remove_if_exists(path: &Path) -> Result<(), ServerError> {
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
