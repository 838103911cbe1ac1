//! The sandbox a connection target points at, and its admin login: what telemetry and
//! `--settle` connect with, so that reading `performance_schema`, `INNODB_METRICS` and
//! `pg_stat_*`, `SET GLOBAL` and PostgreSQL's `CHECKPOINT` never need the benchmark account
//! to hold those rights.
//!
//! A target is a sandbox's when its unix socket lies in a sandbox directory
//! (`.../servers/NAME/mysqld.sock`, or that directory for PostgreSQL), or when it is TCP on
//! loopback and the port is the one a sandbox's running server was started on (found from the
//! server processes on this host: a sandbox server's command line names its config file, so
//! this works whatever `$DBPERF_HOME` the sandbox lives in). The sandbox must be running and
//! its server must be the process its files name. The admin login always goes over the
//! sandbox's owner-only socket: root with the password of `admin.cnf` (MySQL family), the
//! superuser `postgres` with the socket's trust login (PostgreSQL). Only the sandbox's owner
//! can read `admin.cnf` and reach that socket, so for anyone else there is no admin target.

use std::path::{Path, PathBuf};

use dbperf_driver::target::Family;
use dbperf_driver::Target;

use super::credentials;
use super::record::RunState;
use super::{SandboxHome, ServerError};
use dbperf_driver::target::Product;

/// The admin login of the dbperf sandbox `target` connects to, on `target`'s database;
/// `None` when the target is not a running sandbox of this host or its admin login cannot be
/// read (another user's sandbox).
pub fn admin_target(target: &Target) -> Option<Target> {
    let dir = match &target.socket {
        Some(socket) => socket_sandbox_dir(target.family, Path::new(socket))?,
        None if is_loopback(&target.host) => listening_sandbox_dir(target.family, target.port)?,
        None => return None,
    };
    admin_of_dir(&dir, target).ok().flatten()
}

/// The sandbox directory a socket path lies in (MySQL family: the socket file's directory;
/// PostgreSQL: the socket directory itself).
fn socket_sandbox_dir(family: Family, socket: &Path) -> Option<PathBuf> {
    let dir = match family {
        Family::Mysql => socket.parent()?,
        Family::Postgres => socket,
    };
    Some(dir.to_owned())
}

fn is_loopback(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "localhost" | "::1" | "[::1]")
}

/// The directory of the sandbox whose running server listens on loopback `port`: among the
/// processes started with a sandbox config file (`--defaults-file=.../servers/NAME/my.cnf`,
/// `config_file=.../servers/NAME/postgresql.conf`), the one whose sandbox record has that
/// port.
fn listening_sandbox_dir(family: Family, port: u16) -> Option<PathBuf> {
    let (prefix, file): (&[u8], &str) = match family {
        Family::Mysql => (b"--defaults-file=", "my.cnf"),
        Family::Postgres => (b"config_file=", "postgresql.conf"),
    };
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        if entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()).is_none() {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        for arg in cmdline.split(|b| *b == 0) {
            let Some(path) = arg.strip_prefix(prefix) else {
                continue;
            };
            let config = Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
            if config.file_name().is_some_and(|n| n == file) {
                let dir = config.parent()?;
                if let Ok(Some((home, name))) = home_and_name(dir) {
                    if home.status(&name).is_ok_and(|s| s.record.port == Some(port)) {
                        return Some(dir.to_owned());
                    }
                }
            }
        }
    }
    None
}

/// The home and name of the sandbox directory `dir` (`HOME/servers/NAME`), if it is one.
fn home_and_name(dir: &Path) -> Result<Option<(SandboxHome, String)>, ServerError> {
    let (Some(name), Some(servers)) = (dir.file_name().and_then(|n| n.to_str()), dir.parent()) else {
        return Ok(None);
    };
    if servers.file_name().is_none_or(|n| n != "servers") {
        return Ok(None);
    }
    let Some(root) = servers.parent() else {
        return Ok(None);
    };
    if !dir.join("state.json").is_file() {
        return Ok(None);
    }
    Ok(Some((SandboxHome::at(root), name.to_owned())))
}

/// The admin login of the sandbox in `dir` when it runs with the family and endpoint of
/// `target`.
fn admin_of_dir(dir: &Path, target: &Target) -> Result<Option<Target>, ServerError> {
    let Some((home, name)) = home_and_name(dir)? else {
        return Ok(None);
    };
    let status = home.status(&name)?;
    let record = status.record;
    if !matches!(status.state, RunState::Running { .. }) {
        return Ok(None);
    }
    let family = match record.kind {
        Product::Postgres => Family::Postgres,
        Product::Mariadb | Product::Mysql => Family::Mysql,
    };
    if family != target.family {
        return Ok(None);
    }
    let socket_matches = target.socket.as_deref().is_none_or(|s| Path::new(s) == record.socket);
    let port_matches = target.socket.is_some() || record.port == Some(target.port);
    if !socket_matches || !port_matches {
        return Ok(None);
    }
    let admin = match record.kind {
        Product::Postgres => Target {
            family: Family::Postgres,
            host: "localhost".into(),
            port: record.port.unwrap_or(super::postgres::SOCKET_ONLY_PORT),
            user: super::postgres::SUPERUSER.into(),
            password: String::new(),
            database: target.database.clone(),
            socket: Some(record.socket.display().to_string()),
        },
        Product::Mariadb | Product::Mysql => {
            let Some(password) = credentials::read_if_present(&home.admin_defaults_file(&name))? else {
                return Ok(None);
            };
            Target {
                family: Family::Mysql,
                host: "localhost".into(),
                port: target.port,
                user: "root".into(),
                password: password.expose().to_owned(),
                database: target.database.clone(),
                socket: Some(record.socket.display().to_string()),
            }
        }
    };
    Ok(Some(admin))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sandbox_directories_are_sandboxes() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = dir.path().join("servers/a");
        std::fs::create_dir_all(&sandbox).unwrap();
        assert!(home_and_name(&sandbox).unwrap().is_none(), "no state.json yet");
        std::fs::write(sandbox.join("state.json"), "{}").unwrap();
        let (home, name) = home_and_name(&sandbox).unwrap().unwrap();
        assert_eq!(name, "a");
        assert_eq!(home.root(), dir.path());
        assert!(home_and_name(dir.path()).unwrap().is_none());
        let elsewhere = Target::parse("mysql://sb:x@10.0.0.1:3306/sbtest").unwrap();
        assert_eq!(admin_target(&elsewhere), None);
        let stray = Target::parse("mysql://sb:x@localhost/sbtest?socket=/tmp/x/mysqld.sock").unwrap();
        assert_eq!(admin_target(&stray), None);
    }
}
