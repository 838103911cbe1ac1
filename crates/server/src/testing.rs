//! [`TempSandbox`]: a throwaway server of any version id for integration tests, in its own
//! temporary `DBPERF_HOME`, stopped and deleted on drop.
//!
//! ```no_run
//! use dbperf_server::testing::TempSandbox;
//! let db = TempSandbox::start()?; // Debian's MariaDB
//! let url = db.url(); // mysql://sb:PASSWORD@127.0.0.1:PORT/sbtest
//! let mysql = TempSandbox::start_server("mysql-8.0.31", &["innodb_buffer_pool_size=128M"])?;
//! // PostgreSQL: url() is postgres://sb:PASSWORD@127.0.0.1:PORT/sbtest, socket() the
//! // directory holding .s.PGSQL.PORT (libpq's host=/dir).
//! let pg = TempSandbox::start_server("postgres-15", &["max_wal_size=32MB"])?;
//! # Ok::<(), dbperf_server::ServerError>(())
//! ```
//!
//! Servers other than Debian's MariaDB come from the real `$DBPERF_HOME/dist` (default
//! `~/.dbperf/dist`), where `dbperf server install ID` (`make deps-servers`) puts them;
//! [`installed`] tells a test whether to run or skip.
//!
//! Each sandbox uses [`Profile::Test`] (64M buffer pool, 32M redo, performance_schema off;
//! for PostgreSQL 64MB shared_buffers, 256MB max_wal_size, synchronous_commit off) and
//! is ready in well under a second after a ~1 s datadir init. It does not read or change the
//! `DBPERF_HOME` environment variable, so tests may run in parallel. Keep the value in scope
//! for the test's duration: a `TempSandbox` in a `static` is never dropped and leaks its server.
//! Set `DBPERF_KEEP_TEST_SANDBOX=1` to leave the server running and its directory in place
//! after the test, for inspection (`mariadb --defaults-file=DIR/servers/test/admin.cnf`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::{lookup, Profile, SandboxHome, SandboxRecord, ServerError, ServerSpec, Setting, StartRequest};

const NAME: &str = "test";

/// A running sandbox that is stopped (SIGTERM, then SIGKILL after 10 s) and whose
/// directory is removed when dropped.
#[derive(Debug)]
pub struct TempSandbox {
    home: SandboxHome,
    record: SandboxRecord,
    pid: i32,
    keep: bool,
    server: &'static ServerSpec,
    settings: Vec<Setting>,
}

impl TempSandbox {
    /// Starts a sandbox under a fresh directory in the system temp dir.
    pub fn start() -> Result<TempSandbox, ServerError> {
        TempSandbox::start_with(&[])
    }

    /// Starts a sandbox with extra `KEY=VALUE` settings (same rules as `--set`).
    pub fn start_with(settings: &[&str]) -> Result<TempSandbox, ServerError> {
        TempSandbox::start_server("mariadb-10.11", settings)
    }

    /// Starts a sandbox of the known server version `id` (installed in the real `$DBPERF_HOME`)
    /// with extra `KEY=VALUE` settings.
    pub fn start_server(id: &str, settings: &[&str]) -> Result<TempSandbox, ServerError> {
        let server = lookup(id)?;
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        // Short, so the socket path stays far below the 107-byte limit.
        let dir = std::env::temp_dir().join(format!(
            "dbperf-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| ServerError::io("cannot create test sandbox directory", &dir, e))?;
        TempSandbox::start_in_for(server, &dir, settings).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&dir);
        })
    }

    /// Starts a Debian MariaDB sandbox with `dir` as its DBPERF_HOME; `dir` is removed on drop.
    pub fn start_in(dir: &Path, settings: &[&str]) -> Result<TempSandbox, ServerError> {
        TempSandbox::start_in_for(lookup("mariadb-10.11")?, dir, settings)
    }

    /// Starts a sandbox of `server` with `dir` as its DBPERF_HOME (servers from the real
    /// `$DBPERF_HOME/dist`); `dir` is removed on drop.
    pub fn start_in_for(
        server: &'static ServerSpec,
        dir: &Path,
        settings: &[&str],
    ) -> Result<TempSandbox, ServerError> {
        let settings = settings
            .iter()
            .map(|s| Setting::parse(s))
            .collect::<Result<Vec<_>, _>>()?;
        let home = SandboxHome::at(dir).with_dist_root(SandboxHome::from_env()?.dist_root());
        let report = home.start(&test_request(server, &settings))?;
        Ok(TempSandbox {
            home,
            record: report.record,
            pid: report.pid,
            keep: std::env::var_os("DBPERF_KEEP_TEST_SANDBOX").is_some(),
            server,
            settings,
        })
    }

    /// Starts the server again on the same datadir, port and settings, after it stopped or
    /// was killed (crash recovery runs as on any restart).
    pub fn restart(&mut self) -> Result<(), ServerError> {
        let report = self.home.start(&test_request(self.server, &self.settings))?;
        self.record = report.record;
        self.pid = report.pid;
        Ok(())
    }

    /// `mysql://sb:PASSWORD@127.0.0.1:PORT/sbtest` (`postgres://...` for PostgreSQL), with
    /// the sandbox's generated benchmark password.
    pub fn url(&self) -> String {
        self.record.tcp_url().expect("test sandboxes listen on TCP")
    }

    /// `mysql://sb:PASSWORD@localhost/sbtest?socket=...`, or for PostgreSQL
    /// `postgres://sb:PASSWORD@localhost:PORT/sbtest?host=/socket/dir`.
    pub fn socket_url(&self) -> String {
        self.record.socket_url()
    }

    pub fn port(&self) -> u16 {
        self.record.port.expect("test sandboxes listen on TCP")
    }

    /// The socket file (MySQL family) or the socket directory (PostgreSQL).
    pub fn socket(&self) -> &Path {
        &self.record.socket
    }

    /// The `[client]` file (mode 0600) with which `mariadb --defaults-file=FILE` logs in as
    /// root over the socket (MySQL family; PostgreSQL's superuser uses the socket alone).
    pub fn admin_cnf(&self) -> PathBuf {
        self.home.admin_defaults_file(NAME)
    }

    /// The `[client]` file (mode 0600) holding the benchmark account's generated password
    /// (`mariadb --defaults-file=FILE -h 127.0.0.1 -P PORT` logs in as `sb`).
    pub fn bench_cnf(&self) -> PathBuf {
        self.dir().join("bench.cnf")
    }

    /// The admin login as a URL: `mysql://root:PASSWORD@localhost/sbtest?socket=...` (root's
    /// generated password) or `postgres://postgres@localhost:PORT/sbtest?host=/socket/dir`
    /// (the superuser's trust login over the owner-only socket): for tests that change what
    /// the benchmark account may not (`SET GLOBAL`, `performance_schema` setup).
    pub fn admin_url(&self) -> String {
        let socket = self.record.socket.display();
        match self.record.kind {
            dbperf_driver::target::Product::Postgres => {
                format!("postgres://postgres@localhost:{}/sbtest?host={socket}", self.port())
            }
            _ => {
                let password = super::credentials::read(&self.admin_cnf()).expect("a started sandbox has admin.cnf");
                format!("mysql://root:{}@localhost/sbtest?socket={socket}", password.expose())
            }
        }
    }

    /// The benchmark account's generated password.
    pub fn bench_password(&self) -> String {
        self.record
            .bench_password()
            .map(|s| s.expose().to_owned())
            .expect("a started sandbox has a benchmark password")
    }

    /// The sandbox directory (`servers/test` in its home), which the server's own account
    /// owns: the place for files the server writes, such as a `general_log_file`.
    pub fn dir(&self) -> PathBuf {
        self.home.root().join("servers").join(NAME)
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The state directory (this sandbox's DBPERF_HOME).
    pub fn home(&self) -> &SandboxHome {
        &self.home
    }

    pub fn record(&self) -> &SandboxRecord {
        &self.record
    }

    /// The sandbox name inside [`TempSandbox::home`].
    pub fn name(&self) -> &str {
        NAME
    }

    /// Stops the server now and returns its directory, which is no longer removed on drop.
    pub fn into_stopped_dir(mut self) -> Result<PathBuf, ServerError> {
        self.keep = true;
        self.home.stop_with_timeout(NAME, Duration::from_secs(10))?;
        Ok(self.home.root().to_owned())
    }
}

fn test_request(server: &'static ServerSpec, settings: &[Setting]) -> StartRequest {
    StartRequest {
        settings: settings.to_vec(),
        profile: Profile::Test,
        // A first MySQL/MariaDB 11 start on a loaded 2-core box can take ~20 s.
        ready_timeout: Duration::from_secs(60),
        ..StartRequest::new(server, NAME)
    }
}

/// True if known server version `id` can be started by [`TempSandbox::start_server`] on this machine
/// (installed in the real `$DBPERF_HOME`, or Debian's MariaDB present).
pub fn installed(id: &str) -> bool {
    match (lookup(id), SandboxHome::from_env()) {
        (Ok(server), Ok(home)) => home.installed(server).is_some(),
        _ => false,
    }
}

impl Drop for TempSandbox {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Err(e) = self.home.stop_with_timeout(NAME, Duration::from_secs(10)) {
            eprintln!("TempSandbox: stopping {}: {e}", self.home.root().display());
        }
        let _ = std::fs::remove_dir_all(self.home.root());
    }
}
