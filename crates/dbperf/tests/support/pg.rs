//! A throwaway PostgreSQL 15 for the PostgreSQL integration tests: `initdb` into a
//! temporary directory, the Unix socket in that directory, a free TCP port on 127.0.0.1,
//! `pg_stat_statements` preloaded, role `sb`/`sb` owning database `sbtest`; stopped and
//! removed on drop. PostgreSQL refuses to run as root, so when the tests run as root the
//! server programs run as `nobody` (through `runuser`) in a directory chowned to it.
//!
//! Stand-in until the sandbox helper's PostgreSQL `TempSandbox` lands; the tests use only
//! `url()`, `socket_url()`, `psql()`, and `available()`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The PostgreSQL binaries the fixture uses.
pub const BIN: &str = "/usr/lib/postgresql/15/bin";

/// A running throwaway server.
pub struct TempPg {
    dir: tempfile::TempDir,
    port: u16,
}

/// True when PostgreSQL 15's server programs are installed; tests skip otherwise.
pub fn available() -> bool {
    Path::new(BIN).join("initdb").exists()
}

fn as_server_user(program: &str) -> Command {
    let path = Path::new(BIN).join(program);
    if unsafe { libc::geteuid() } == 0 {
        let mut c = Command::new("runuser");
        c.args(["-u", "nobody", "--"]).arg(path);
        c
    } else {
        Command::new(path)
    }
}

fn ok(c: &mut Command) {
    let out = c.output().unwrap_or_else(|e| panic!("{c:?}: {e}"));
    assert!(
        out.status.success(),
        "{c:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl TempPg {
    /// Starts a server with `extra` postgresql.conf settings (`name=value`).
    pub fn start(extra: &[&str]) -> TempPg {
        let dir = tempfile::Builder::new()
            .prefix("dbperf-pg-")
            .tempdir()
            .expect("tempdir");
        if unsafe { libc::geteuid() } == 0 {
            ok(Command::new("chown").args(["nobody:nogroup"]).arg(dir.path()));
        }
        let data = dir.path().join("data");
        ok(as_server_user("initdb").arg("-D").arg(&data).args([
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--no-instructions",
        ]));
        let port = free_port();
        let mut opts = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c shared_preload_libraries=pg_stat_statements -c max_connections=60",
            dir.path().display()
        );
        for e in extra {
            opts.push_str(" -c ");
            opts.push_str(e);
        }
        ok(as_server_user("pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.path().join("server.log"))
            .args(["-o", &opts, "-w", "-t", "60", "start"]));
        let pg = TempPg { dir, port };
        pg.psql_as("postgres", "postgres", "CREATE ROLE sb LOGIN PASSWORD 'sb'");
        pg.psql_as("postgres", "postgres", "CREATE DATABASE sbtest OWNER sb");
        pg.psql_as("postgres", "sbtest", "CREATE EXTENSION pg_stat_statements");
        pg
    }

    /// The TCP URL for role `sb` on database `sbtest`.
    pub fn url(&self) -> String {
        format!("postgres://sb:sb@127.0.0.1:{}/sbtest", self.port)
    }

    /// The same over the Unix socket directory.
    pub fn socket_url(&self) -> String {
        format!(
            "postgres://sb:sb@localhost:{}/sbtest?host={}",
            self.port,
            self.socket_dir().display()
        )
    }

    /// The directory holding `.s.PGSQL.PORT`.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs SQL as the superuser on `sbtest`; returns unaligned, tab-separated rows.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_as("postgres", "sbtest", sql)
    }

    /// Runs SQL as `user` on `db`.
    pub fn psql_as(&self, user: &str, db: &str, sql: &str) -> String {
        let out = Command::new(Path::new(BIN).join("psql"))
            .args(["-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", user, "-d", db, "-c", sql])
            .output()
            .expect("psql runs");
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }
}

impl Drop for TempPg {
    fn drop(&mut self) {
        let _ = as_server_user("pg_ctl")
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}
