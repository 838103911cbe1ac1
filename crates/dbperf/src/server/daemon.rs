//! The server programs as dbperf drives them, for every flavor: initializing a datadir
//! (`mariadb-install-db`, or `mysqld --initialize-insecure`), spawning the server detached,
//! waiting until it answers `SELECT 1` on its socket, and running admin SQL as root over that
//! socket. Where the programs are is [`Binaries`] (found by `dist.rs`).
//!
//! Admin SQL goes through Debian's `mariadb` client for every flavor (it logs in to MySQL 8
//! with mysql_native_password) rather than a driver, so that this code is synchronous and safe
//! to call from inside a tokio runtime (for example a `#[tokio::test]`).

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::process::{self, tail};
use super::{ServerError, BENCH_DATABASE, BENCH_PASSWORD, BENCH_USER};

const LOG_TAIL_LINES: usize = 30;

/// Absolute paths of the programs dbperf runs for one catalog server.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    pub flavor: super::ServerKind,
    /// `mariadbd`, `mysqld` or `postgres`.
    pub server: PathBuf,
    /// `mariadb-install-db` (MariaDB; MySQL initializes with `mysqld --initialize-insecure`),
    /// or `initdb` (PostgreSQL).
    pub install_db: Option<PathBuf>,
    /// Debian's `mariadb` client, for MySQL-family admin SQL; for PostgreSQL the `postgres`
    /// binary again (its admin SQL goes through tokio-postgres, see `postgres.rs`).
    pub client: PathBuf,
    /// `--basedir` of a server unpacked under `$DBPERF_HOME/dist`; `None` for system packages.
    pub basedir: Option<PathBuf>,
}

pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Initializes `datadir` (which must not exist yet) with the flavor's tool; output goes to `log`.
/// `tmpdir` must be private: a bootstrapping server deletes every `#sql*` file in its tmpdir,
/// so parallel installs sharing /tmp break each other ("Unknown table 'mysql.tmp_user_sys'").
pub(crate) fn install_datadir(bins: &Binaries, datadir: &Path, tmpdir: &Path, log: &Path) -> Result<(), ServerError> {
    let log_file = std::fs::File::create(log).map_err(|e| ServerError::io("cannot create install log", log, e))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| ServerError::io("cannot reopen install log", log, e))?;
    let mut cmd = match &bins.install_db {
        Some(install_db) => {
            let mut cmd = Command::new(install_db);
            cmd.arg("--no-defaults");
            if let Some(basedir) = &bins.basedir {
                cmd.arg(format!("--basedir={}", basedir.display()));
            }
            cmd.arg("--auth-root-authentication-method=normal")
                .arg("--skip-test-db");
            cmd
        }
        None => {
            // MySQL: root@localhost with an empty password, on the plugin our clients speak.
            let mut cmd = Command::new(&bins.server);
            cmd.arg("--no-defaults").arg("--initialize-insecure");
            if let Some(basedir) = &bins.basedir {
                cmd.arg(format!("--basedir={}", basedir.display()));
            }
            cmd.arg("--default-authentication-plugin=mysql_native_password");
            cmd
        }
    };
    cmd.arg(format!("--datadir={}", datadir.display()))
        .arg(format!("--tmpdir={}", tmpdir.display()));
    if is_root() {
        cmd.arg("--user=root");
    }
    let program = bins.install_db.as_ref().unwrap_or(&bins.server);
    let status = cmd
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .status()
        .map_err(|e| ServerError::io("cannot run", program, e))?;
    if status.success() {
        return Ok(());
    }
    Err(ServerError::InstallFailed {
        program: program
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        status: status.to_string(),
        datadir: datadir.to_owned(),
        log: log.to_owned(),
        output: install_failure_lines(log),
    })
}

/// The lines before install-db's generic "Installation of system tables failed!" advice,
/// which is where the server's actual complaint is.
fn install_failure_lines(log: &Path) -> String {
    let text = match std::fs::read(log) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => return format!("(cannot read {}: {e})", log.display()),
    };
    let before = text
        .split("Installation of system tables failed!")
        .next()
        .unwrap_or_default();
    let lines: Vec<&str> = before.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Starts `mariadbd|mysqld --defaults-file=my_cnf` in its own session, detached from our terminal.
/// Its stdout and stderr are appended to `error_log` (errors before log-error opens land there).
/// How the server process is launched beyond its my.cnf.
#[derive(Debug, Default)]
pub(crate) struct Launch {
    /// A library for `LD_PRELOAD` (jemalloc).
    pub preload: Option<PathBuf>,
    /// CPUs the server is restricted to before it runs, so every thread inherits them.
    pub cpus: Option<Vec<usize>>,
}

/// Where Debian's libjemalloc2 puts the library.
const JEMALLOC_PATHS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/libjemalloc.so.2",
];

/// The jemalloc shared library, or how to install it.
pub(crate) fn jemalloc_path() -> Result<PathBuf, ServerError> {
    JEMALLOC_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or(ServerError::MissingJemalloc)
}

pub(crate) fn spawn_server(
    bins: &Binaries,
    my_cnf: &Path,
    error_log: &Path,
    launch: &Launch,
) -> Result<Child, ServerError> {
    let mut cmd = Command::new(&bins.server);
    // --defaults-file must be the first argument.
    cmd.arg(format!("--defaults-file={}", my_cnf.display()));
    if is_root() {
        cmd.arg("--user=root");
    }
    process::spawn_detached(cmd, error_log, launch, |e| {
        ServerError::io("cannot start", &bins.server, e)
    })
}

/// What [`wait_ready`] needs to know about the server it waits for.
pub(crate) struct Pending<'a> {
    pub name: &'a str,
    pub socket: &'a Path,
    pub error_log: &'a Path,
    /// Size of the error log before this start, so errors show only this start's lines.
    pub log_offset: u64,
    pub timeout: Duration,
}

/// Waits until the server accepts a socket connection and answers `SELECT 1` as root.
pub(crate) fn wait_ready(bins: &Binaries, child: &mut Child, p: &Pending<'_>) -> Result<(), ServerError> {
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(ServerError::StartFailed {
                name: p.name.to_owned(),
                status: status.to_string(),
                log: p.error_log.to_owned(),
                log_tail: tail(p.error_log, p.log_offset, LOG_TAIL_LINES),
            });
        }
        if UnixStream::connect(p.socket).is_ok() && admin_sql(bins, p.socket, "SELECT 1").is_ok() {
            return Ok(());
        }
        if started.elapsed() >= p.timeout {
            return Err(ServerError::StartTimeout {
                name: p.name.to_owned(),
                pid: child.id(),
                socket: p.socket.to_owned(),
                waited: p.timeout,
                log: p.error_log.to_owned(),
                log_tail: tail(p.error_log, p.log_offset, LOG_TAIL_LINES),
            });
        }
        sleep(Duration::from_millis(50));
    }
}

/// Creates the benchmark account and database (idempotent) and returns the server version.
pub(crate) fn provision(bins: &Binaries, socket: &Path) -> Result<String, ServerError> {
    let (u, pw, db) = (BENCH_USER, BENCH_PASSWORD, BENCH_DATABASE);
    let sql = format!(
        "CREATE DATABASE IF NOT EXISTS `{db}`;\
         CREATE USER IF NOT EXISTS '{u}'@'localhost' IDENTIFIED BY '{pw}';\
         CREATE USER IF NOT EXISTS '{u}'@'127.0.0.1' IDENTIFIED BY '{pw}';\
         GRANT ALL PRIVILEGES ON *.* TO '{u}'@'localhost', '{u}'@'127.0.0.1';\
         SELECT VERSION();"
    );
    admin_sql(bins, socket, &sql)
        .map(|out| out.trim().to_owned())
        .map_err(|stderr| ServerError::AdminSql {
            action: "creating the benchmark user `sb` and database `sbtest`",
            socket: socket.to_owned(),
            stderr,
        })
}

/// Runs SQL as root over the socket; returns stdout (batch mode, no column names) or stderr.
fn admin_sql(bins: &Binaries, socket: &Path, sql: &str) -> Result<String, String> {
    let out = Command::new(&bins.client)
        .arg("--no-defaults")
        .arg(format!("--socket={}", socket.display()))
        .args([
            "--protocol=socket",
            "--user=root",
            "--batch",
            "--skip-column-names",
            "--execute",
            sql,
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bins.client.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}
