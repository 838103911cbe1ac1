//! The sandbox records and outcomes that [`super::SandboxHome`] reads and returns:
//! `state.json` ([`SandboxRecord`]) with the target URLs it implies, run state, and the
//! reports of start and stop.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{BENCH_DATABASE, BENCH_PASSWORD, BENCH_USER};

/// Which server a sandbox runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    Mariadb,
    Mysql,
}

impl std::fmt::Display for ServerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ServerKind::Mariadb => "mariadb",
            ServerKind::Mysql => "mysql",
        })
    }
}

/// `state.json`: what a sandbox is, as recorded by its last start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    pub name: String,
    pub kind: ServerKind,
    /// The catalog id this sandbox runs (`mysql-8.0.31`); state files written before the
    /// catalog existed lack it and mean Debian's MariaDB.
    #[serde(default = "default_server_id")]
    pub server: String,
    /// `SELECT VERSION()`, or "unknown" until the first start succeeds.
    pub version: String,
    /// `None` with `--socket-only`.
    pub port: Option<u16>,
    pub socket: PathBuf,
    pub datadir: PathBuf,
    pub my_cnf: PathBuf,
    pub error_log: PathBuf,
    /// The `--set` items of the last start.
    pub settings: Vec<String>,
    pub started_at: String,
}

fn default_server_id() -> String {
    super::catalog::default_server().id.to_owned()
}

impl SandboxRecord {
    /// `mysql://sb:sb@127.0.0.1:PORT/sbtest`, unless the sandbox is socket-only.
    pub fn tcp_url(&self) -> Option<String> {
        self.port
            .map(|port| format!("mysql://{BENCH_USER}:{BENCH_PASSWORD}@127.0.0.1:{port}/{BENCH_DATABASE}"))
    }

    /// `mysql://sb:sb@localhost/sbtest?socket=/path/mysqld.sock`.
    pub fn socket_url(&self) -> String {
        format!(
            "mysql://{BENCH_USER}:{BENCH_PASSWORD}@localhost/{BENCH_DATABASE}?socket={}",
            encode_query_value(&self.socket.display().to_string())
        )
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
    Running { pid: i32 },
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
            name: "t".into(),
            kind: ServerKind::Mariadb,
            server: "mariadb-10.11".into(),
            version: "10.11".into(),
            port: Some(41234),
            socket: "/h/my dir/mysqld.sock".into(),
            datadir: "/h/servers/t/data".into(),
            my_cnf: "/h/servers/t/my.cnf".into(),
            error_log: "/h/servers/t/error.log".into(),
            settings: vec![],
            started_at: String::new(),
        };
        assert_eq!(r.tcp_url().unwrap(), "mysql://sb:sb@127.0.0.1:41234/sbtest");
        assert_eq!(
            r.socket_url(),
            "mysql://sb:sb@localhost/sbtest?socket=/h/my%20dir/mysqld.sock"
        );
        r.port = None;
        assert_eq!(r.tcp_url(), None);
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
