//! The MariaDB binaries as dbperf drives them: finding `mariadbd`, `mariadb-install-db` and the
//! `mariadb` client, initializing a datadir, spawning the server detached, waiting until it
//! answers `SELECT 1` on its socket, and running admin SQL as root over that socket.
//!
//! Admin SQL goes through the `mariadb` client rather than a driver so that this code is
//! synchronous and safe to call from inside a tokio runtime (for example a `#[tokio::test]`).

use std::fs::OpenOptions;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::process::tail;
use super::{ServerError, BENCH_DATABASE, BENCH_PASSWORD, BENCH_USER};

const SEARCH_DIRS: &[&str] = &["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"];
const LOG_TAIL_LINES: usize = 30;

/// Absolute paths of the three MariaDB programs dbperf runs.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    pub server: PathBuf,
    pub install_db: PathBuf,
    pub client: PathBuf,
}

impl Binaries {
    pub(crate) fn locate() -> Result<Binaries, ServerError> {
        Ok(Binaries {
            server: find("mariadbd")?,
            install_db: find("mariadb-install-db")?,
            client: find("mariadb")?,
        })
    }
}

fn find(binary: &'static str) -> Result<PathBuf, ServerError> {
    let path_dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_dirs)
        .chain(SEARCH_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(binary))
        .find(|candidate| candidate.is_file())
        .ok_or(ServerError::MissingBinary { binary })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `mariadb-install-db` into `datadir` (which must not exist yet); output goes to `log`.
/// `tmpdir` must be private: a bootstrapping server deletes every `#sql*` file in its tmpdir,
/// so parallel installs sharing /tmp break each other ("Unknown table 'mysql.tmp_user_sys'").
pub(crate) fn install_datadir(bins: &Binaries, datadir: &Path, tmpdir: &Path, log: &Path) -> Result<(), ServerError> {
    let log_file = std::fs::File::create(log).map_err(|e| ServerError::io("cannot create install log", log, e))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| ServerError::io("cannot reopen install log", log, e))?;
    let mut cmd = Command::new(&bins.install_db);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", datadir.display()))
        .arg("--auth-root-authentication-method=normal")
        .arg("--skip-test-db")
        .arg(format!("--tmpdir={}", tmpdir.display()));
    if is_root() {
        cmd.arg("--user=root");
    }
    let status = cmd
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .status()
        .map_err(|e| ServerError::io("cannot run", &bins.install_db, e))?;
    if status.success() {
        return Ok(());
    }
    Err(ServerError::InstallFailed {
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

/// Starts `mariadbd --defaults-file=my_cnf` in its own session, detached from our terminal.
/// Its stdout and stderr are appended to `error_log` (errors before log-error opens land there).
pub(crate) fn spawn_server(bins: &Binaries, my_cnf: &Path, error_log: &Path) -> Result<Child, ServerError> {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(error_log)
        .map_err(|e| ServerError::io("cannot open error log", error_log, e))?;
    let log_err = log
        .try_clone()
        .map_err(|e| ServerError::io("cannot reopen error log", error_log, e))?;
    let mut cmd = Command::new(&bins.server);
    // --defaults-file must be the first argument.
    cmd.arg(format!("--defaults-file={}", my_cnf.display()));
    if is_root() {
        cmd.arg("--user=root");
    }
    cmd.stdin(Stdio::null()).stdout(log).stderr(log_err);
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(|e| ServerError::io("cannot start", &bins.server, e))
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
        .args(["--user=root", "--batch", "--skip-column-names", "--execute", sql])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", bins.client.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}
