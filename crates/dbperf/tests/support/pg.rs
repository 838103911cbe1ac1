//! The PostgreSQL 15 server of the PostgreSQL integration tests: a [`TempSandbox`] of
//! `postgres-15` (private datadir, socket directory and free port, role `sb` with its
//! generated password owning database `sbtest`, stopped and removed on drop) with `pg_stat_statements` preloaded
//! and created in `sbtest`, plus `psql` helpers that run as the superuser over the socket.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use dbperf::server::testing::TempSandbox;

/// Where Debian's PostgreSQL 15 client programs are.
pub const BIN: &str = "/usr/lib/postgresql/15/bin";

/// A running throwaway server.
pub struct TempPg {
    sandbox: TempSandbox,
}

/// True when PostgreSQL 15 is installed (`dbperf server install postgres-15`); otherwise a
/// skip with a notice, or under CI a failure ([`super::common::available`]: every test crate
/// that includes this file also has `mod common`).
pub fn available() -> bool {
    super::common::available("postgres-15")
}

impl TempPg {
    /// Starts a server with `extra` postgresql.conf settings (`name=value`).
    pub fn start(extra: &[&str]) -> TempPg {
        let mut settings = vec!["shared_preload_libraries=pg_stat_statements"];
        settings.extend_from_slice(extra);
        let sandbox = TempSandbox::start_server("postgres-15", &settings)
            .expect("a PostgreSQL 15 sandbox starts (dbperf server install postgres-15)");
        let pg = TempPg { sandbox };
        pg.psql("CREATE EXTENSION pg_stat_statements");
        pg
    }

    /// The TCP URL for role `sb` on database `sbtest`.
    pub fn url(&self) -> String {
        self.sandbox.url()
    }

    /// The generated password of role `sb`.
    pub fn password(&self) -> String {
        self.sandbox.bench_password()
    }

    /// The same over the Unix socket directory.
    pub fn socket_url(&self) -> String {
        self.sandbox.socket_url()
    }

    /// The directory holding `.s.PGSQL.PORT`.
    pub fn socket_dir(&self) -> PathBuf {
        self.sandbox.socket().to_path_buf()
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.sandbox.port()
    }

    /// Runs SQL as the superuser on `sbtest`; returns unaligned, tab-separated rows.
    pub fn psql(&self, sql: &str) -> String {
        self.psql_as("postgres", "sbtest", sql)
    }

    /// Waits (up to 10 s) until no backend of `user` is left. A backend flushes its last
    /// table and database statistics only as it exits, so counters read before that miss them.
    pub fn wait_for_no_backends(&self, user: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let sql = format!("SELECT count(*) FROM pg_stat_activity WHERE usename = '{user}'");
        while self.psql(&sql) != "0" {
            assert!(
                std::time::Instant::now() < deadline,
                "backends of {user} did not exit in 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Runs SQL as `user` on `db`.
    pub fn psql_as(&self, user: &str, db: &str, sql: &str) -> String {
        let out = Command::new(Path::new(BIN).join("psql"))
            .args(["-X", "-q", "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.socket_dir())
            .args(["-p", &self.port().to_string(), "-U", user, "-d", db, "-c", sql])
            .output()
            .expect("psql runs");
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }
}
