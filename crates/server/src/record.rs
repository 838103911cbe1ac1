//! The sandbox records and outcomes that [`super::SandboxHome`] reads and returns:
//! `state.json` ([`SandboxRecord`]) with the target URLs it implies (their password comes from
//! the sandbox's `bench.cnf`, never from `state.json`), run state, and the reports of start
//! and stop.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::credentials::{Secret, LEGACY_BENCH_PASSWORD};
use super::{BENCH_DATABASE, BENCH_USER};
use dbperf_driver::target::Product;

/// `state.json`: what a sandbox is, as recorded by its last start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    pub name: String,
    pub kind: Product,
    /// The version id this sandbox runs (`mysql-8.0.31`); state files written before the
    /// version list existed lack it and mean Debian's MariaDB.
    #[serde(default = "default_server_id")]
    pub server: String,
    /// `SELECT VERSION()`, or "unknown" until the first start succeeds.
    pub version: String,
    /// `None` with `--socket-only`.
    pub port: Option<u16>,
    /// The address it listens on when not loopback (`--listen`), for clients on other hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<std::net::IpAddr>,
    /// With `listen`: the client hosts' addresses the benchmark account is for (`--allow-from`),
    /// so a restart (a cold one) serves the same clients.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_from: Vec<std::net::IpAddr>,
    /// MySQL-family: the socket file. PostgreSQL: the directory holding `.s.PGSQL.PORT`.
    pub socket: PathBuf,
    pub datadir: PathBuf,
    /// The rendered config file: `my.cnf`, or `postgresql.conf` for PostgreSQL.
    pub my_cnf: PathBuf,
    pub error_log: PathBuf,
    /// The `--set` items of the last start.
    pub settings: Vec<String>,
    pub started_at: String,
    /// The server process the last start spawned, recorded as soon as it exists (before the
    /// server writes its own pid file), so `list`, `stop` and the next `start` see a server
    /// that is still starting.
    #[serde(default)]
    pub pid: Option<i32>,
    /// True once a start has finished (accounts locked down, TCP open if asked for); false
    /// while one is under way, or after one was cut short by SIGKILL. Records of older
    /// dbperf versions lack it and describe finished starts.
    #[serde(default = "finished")]
    pub ready: bool,
    /// The benchmark account's password, read from `bench.cnf` (never stored here).
    #[serde(skip)]
    pub(crate) bench_password: Option<Secret>,
}

fn finished() -> bool {
    true
}

fn default_server_id() -> String {
    super::versions::default_server().id.to_owned()
}

impl SandboxRecord {
    /// `mysql://sb:PASSWORD@127.0.0.1:PORT/sbtest` (`postgres://...` for PostgreSQL), unless
    /// the sandbox is socket-only. PASSWORD is the sandbox's generated benchmark password.
    pub fn tcp_url(&self) -> Option<String> {
        let scheme = self.scheme();
        let pw = self.password();
        let host = match self.listen {
            Some(std::net::IpAddr::V6(a)) => format!("[{a}]"),
            Some(a) => a.to_string(),
            None => "127.0.0.1".to_owned(),
        };
        self.port
            .map(|port| format!("{scheme}://{BENCH_USER}:{pw}@{host}:{port}/{BENCH_DATABASE}"))
    }

    /// `mysql://sb:PASSWORD@localhost/sbtest?socket=/path/mysqld.sock`, or for PostgreSQL
    /// `postgres://sb:PASSWORD@localhost:PORT/sbtest?host=/sandbox/dir` (the port names the
    /// socket file `.s.PGSQL.PORT`; a socket-only sandbox uses 5432 inside its private
    /// directory).
    pub fn socket_url(&self) -> String {
        let socket = encode_query_value(&self.socket.display().to_string());
        let pw = self.password();
        match self.kind {
            Product::Postgres => format!(
                "postgres://{BENCH_USER}:{pw}@localhost:{}/{BENCH_DATABASE}?host={socket}",
                self.port.unwrap_or(super::postgres::SOCKET_ONLY_PORT)
            ),
            _ => format!("mysql://{BENCH_USER}:{pw}@localhost/{BENCH_DATABASE}?socket={socket}"),
        }
    }

    /// The benchmark password in the URLs (percent-encoded; generated ones are alphanumeric):
    /// the sandbox's own, or the fixed one of a sandbox an older dbperf started and no start
    /// has upgraded yet.
    fn password(&self) -> String {
        let pw = self
            .bench_password
            .as_ref()
            .map_or(LEGACY_BENCH_PASSWORD, Secret::expose);
        encode_query_value(pw)
    }

    /// The benchmark account's password, once a start has generated it (`None` for a
    /// sandbox of an older dbperf that has not been started since).
    pub fn bench_password(&self) -> Option<&Secret> {
        self.bench_password.as_ref()
    }

    /// The URL `--target sandbox:NAME` resolves to: the unix socket for the MySQL family
    /// (the faster transport), TCP on 127.0.0.1 for PostgreSQL (the socket URL when the
    /// sandbox is socket-only).
    pub fn target_url(&self) -> String {
        match self.kind {
            Product::Postgres => self.tcp_url().unwrap_or_else(|| self.socket_url()),
            _ => self.socket_url(),
        }
    }

    fn scheme(&self) -> &'static str {
        match self.kind {
            Product::Postgres => "postgres",
            _ => "mysql",
        }
    }
}

/// Percent-encodes everything except characters that are safe in a URL query value.
fn encode_query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"/._~-".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether a sandbox's server process is alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Started and ready.
    Running {
        pid: i32,
    },
    /// A server runs, but its start has not finished: it is under way, or it was cut short
    /// (SIGKILL) and the next `start` or `stop` will stop that server.
    Starting {
        pid: i32,
    },
    Stopped,
}

/// A sandbox as `dbperf server list` shows it.
#[derive(Debug, Clone)]
pub struct SandboxStatus {
    pub record: SandboxRecord,
    pub state: RunState,
}

/// The result of a successful start.
#[derive(Debug, Clone)]
pub struct StartReport {
    pub record: SandboxRecord,
    pub pid: i32,
    /// True if this start ran mariadb-install-db; false if an existing datadir was reused.
    pub initialized: bool,
    pub elapsed: Duration,
}

/// What `stop` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOutcome {
    /// No live server process (a stale pid file, if any, was removed).
    NotRunning,
    /// Exited cleanly after SIGTERM.
    Terminated { pid: i32, waited: Duration },
    /// Ignored SIGTERM for the whole timeout and was killed; InnoDB will run crash recovery.
    Killed { pid: i32, waited: Duration },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let mut r = SandboxRecord {
            allow_from: Vec::new(),
            name: "t".into(),
            kind: Product::Mariadb,
            server: "mariadb-10.11".into(),
            version: "10.11".into(),
            port: Some(41234),
            listen: None,
            socket: "/h/my dir/mysqld.sock".into(),
            datadir: "/h/servers/t/data".into(),
            my_cnf: "/h/servers/t/my.cnf".into(),
            error_log: "/h/servers/t/error.log".into(),
            settings: vec![],
            started_at: String::new(),
            pid: None,
            ready: true,
            bench_password: None,
        };
        assert_eq!(r.tcp_url().unwrap(), "mysql://sb:sb@127.0.0.1:41234/sbtest");
        assert_eq!(
            r.socket_url(),
            "mysql://sb:sb@localhost/sbtest?socket=/h/my%20dir/mysqld.sock"
        );
        r.bench_password = Some(Secret::new("Gen3rated"));
        assert_eq!(r.tcp_url().unwrap(), "mysql://sb:Gen3rated@127.0.0.1:41234/sbtest");
        assert!(r.socket_url().starts_with("mysql://sb:Gen3rated@localhost/"));
        assert!(!format!("{r:?}").contains("Gen3rated"), "{r:?}");
        assert!(!serde_json::to_string(&r).unwrap().contains("Gen3rated"));
        r.listen = Some("10.1.2.3".parse().unwrap());
        assert_eq!(r.tcp_url().unwrap(), "mysql://sb:Gen3rated@10.1.2.3:41234/sbtest");
        r.listen = Some("fd00::2".parse().unwrap());
        assert_eq!(r.tcp_url().unwrap(), "mysql://sb:Gen3rated@[fd00::2]:41234/sbtest");
        r.port = None;
        assert_eq!(r.tcp_url(), None);
    }

    #[test]
    fn postgres_urls() {
        let mut r = SandboxRecord {
            allow_from: Vec::new(),
            name: "p".into(),
            kind: Product::Postgres,
            server: "postgres-17".into(),
            version: "17.11".into(),
            port: Some(41235),
            listen: None,
            socket: "/h/servers/p".into(),
            datadir: "/h/servers/p/data".into(),
            my_cnf: "/h/servers/p/postgresql.conf".into(),
            error_log: "/h/servers/p/error.log".into(),
            settings: vec![],
            started_at: String::new(),
            pid: None,
            ready: true,
            bench_password: None,
        };
        assert_eq!(r.tcp_url().unwrap(), "postgres://sb:sb@127.0.0.1:41235/sbtest");
        assert_eq!(r.target_url(), "postgres://sb:sb@127.0.0.1:41235/sbtest");
        assert_eq!(
            r.socket_url(),
            "postgres://sb:sb@localhost:41235/sbtest?host=/h/servers/p"
        );
        let target = dbperf_driver::Target::parse(&r.socket_url()).unwrap();
        assert_eq!(target.socket.as_deref(), Some("/h/servers/p"));
        r.port = None;
        assert_eq!(
            r.target_url(),
            "postgres://sb:sb@localhost:5432/sbtest?host=/h/servers/p"
        );
    }

    #[test]
    fn old_state_files_default_to_debian_mariadb() {
        let old = r#"{"name":"a","kind":"mariadb","version":"10.11.19-MariaDB","port":40000,
            "socket":"/s","datadir":"/d","my_cnf":"/c","error_log":"/e","settings":[],"started_at":""}"#;
        let r: SandboxRecord = serde_json::from_str(old).unwrap();
        assert_eq!(r.server, "mariadb-10.11");
        let new = serde_json::to_value(&r).unwrap();
        assert_eq!(new["server"], "mariadb-10.11");
    }
}
