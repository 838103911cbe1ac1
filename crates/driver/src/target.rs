//! Where to connect: `--target` URLs, sandbox names and sysbench's `--mysql-*` options.

use std::fmt;

/// A parsed connection target.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    /// Server family: MySQL protocol or PostgreSQL.
    pub family: Family,
    /// Host name or address (ignored when `socket` is set).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// User name.
    pub user: String,
    /// Password (never printed: see [`Target::redacted`]).
    pub password: String,
    /// Database (schema) to use.
    pub database: String,
    /// Unix socket; when set, the connection uses it instead of TCP. For MySQL the socket
    /// file itself; for PostgreSQL the directory holding `.s.PGSQL.PORT`, as libpq's
    /// `host=/dir` takes it.
    pub socket: Option<String>,
}

/// A server's family: the wire protocol it speaks and the SQL it takes. One type for the
/// idea across dbperf: sessions, DDL, and each workload's SQL spellings match on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// MySQL protocol: MySQL, MariaDB, Percona Server.
    Mysql,
    /// PostgreSQL protocol.
    Postgres,
}

impl Family {
    /// The URL scheme dbperf writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Mysql => "mysql",
            Family::Postgres => "postgres",
        }
    }

    /// The port a URL without one means.
    pub fn default_port(self) -> u16 {
        match self {
            Family::Mysql => 3306,
            Family::Postgres => 5432,
        }
    }
}

/// Which server product: MariaDB, MySQL (Percona Server included) or PostgreSQL. One type
/// for the idea across dbperf: a sandbox's record, the versions dbperf installs and the
/// telemetry sampler's reading of `VERSION()` all name a product with it; the protocol and
/// SQL it takes are its [`Family`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Product {
    Mariadb,
    Mysql,
    Postgres,
}

impl Product {
    /// The family whose protocol and SQL the product takes.
    pub fn family(self) -> Family {
        match self {
            Product::Mariadb | Product::Mysql => Family::Mysql,
            Product::Postgres => Family::Postgres,
        }
    }

    /// The lowercase name files and flags use (`mariadb`, `mysql`, `postgres`).
    pub fn as_str(self) -> &'static str {
        match self {
            Product::Mariadb => "mariadb",
            Product::Mysql => "mysql",
            Product::Postgres => "postgres",
        }
    }
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `--target` that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Not a URL dbperf understands.
    #[error("invalid --target {given:?}: {why}. Expected mysql://USER:PASSWORD@HOST:PORT/DATABASE, mysql://USER:PASSWORD@localhost/DATABASE?socket=/path/to.sock, postgres://USER:PASSWORD@HOST:PORT/DATABASE[?host=/socket/dir], or sandbox:NAME")]
    Invalid {
        /// What the user gave (password redacted).
        given: String,
        /// What is wrong with it.
        why: String,
    },
}

impl Target {
    /// Parses `mysql://user:pass@host:port/db?socket=/path` or
    /// `postgres://user:pass@host:port/db?host=/socket/dir`.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let invalid = |why: &str| TargetError::Invalid {
            given: redact_url(url),
            why: why.to_string(),
        };
        let parsed = url::Url::parse(url).map_err(|e| invalid(&e.to_string()))?;
        let family = match parsed.scheme() {
            "mysql" | "mariadb" => Family::Mysql,
            "postgres" | "postgresql" => Family::Postgres,
            other => return Err(invalid(&format!("unknown scheme {other:?}"))),
        };
        let decode = |s: &str| {
            url::form_urlencoded::parse(format!("x={s}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let mut socket = None;
        for (k, v) in parsed.query_pairs() {
            match k.as_ref() {
                "socket" => socket = Some(v.into_owned()),
                // libpq's spelling: a host that starts with '/' is a socket directory.
                "host" if family == Family::Postgres && v.starts_with('/') => socket = Some(v.into_owned()),
                other => {
                    let allowed = match family {
                        Family::Mysql => "socket=",
                        Family::Postgres => "socket= or host=/socket/dir",
                    };
                    return Err(invalid(&format!(
                        "unknown URL parameter {other:?} (only {allowed} is supported)"
                    )));
                }
            }
        }
        let host = parsed.host_str().unwrap_or("localhost").to_string();
        if host.is_empty() && socket.is_none() {
            return Err(invalid("no host"));
        }
        let database = parsed.path().trim_start_matches('/').to_string();
        if database.contains('/') {
            return Err(invalid("the path must be a single database name"));
        }
        Ok(Target {
            family,
            host,
            port: parsed.port().unwrap_or(family.default_port()),
            user: if parsed.username().is_empty() {
                match family {
                    Family::Mysql => "root".into(),
                    Family::Postgres => "postgres".into(),
                }
            } else {
                decode(parsed.username())
            },
            password: parsed.password().map(decode).unwrap_or_default(),
            database: if database.is_empty() { "sbtest".into() } else { database },
            socket,
        })
    }

    /// The URL with the password replaced by `***`, for logs and manifests.
    pub fn redacted(&self) -> String {
        let mut s = format!(
            "{}://{}:***@{}:{}/{}",
            self.family.as_str(),
            self.user,
            self.host,
            self.port,
            self.database
        );
        if let Some(sock) = &self.socket {
            s.push_str(match self.family {
                Family::Mysql => "?socket=",
                Family::Postgres => "?host=",
            });
            s.push_str(sock);
        }
        s
    }

    /// Where it connects, for messages: the socket path or host:port.
    pub fn endpoint(&self) -> String {
        match &self.socket {
            Some(s) => format!("socket {s}"),
            None => format!("{}:{}", self.host, self.port),
        }
    }
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Hides the password in a connection URL.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// sysbench's connection options, used when `--target` is absent.
#[derive(Clone, Debug, Default)]
pub struct MysqlOptions {
    /// `--mysql-host`
    pub host: Option<String>,
    /// `--mysql-port`
    pub port: Option<u16>,
    /// `--mysql-user`
    pub user: Option<String>,
    /// `--mysql-password`
    pub password: Option<String>,
    /// `--mysql-db`
    pub db: Option<String>,
    /// `--mysql-socket`
    pub socket: Option<String>,
}

impl MysqlOptions {
    /// True when any option was given.
    pub fn any(&self) -> bool {
        self.host.is_some()
            || self.port.is_some()
            || self.user.is_some()
            || self.password.is_some()
            || self.db.is_some()
            || self.socket.is_some()
    }

    /// Applies the options over `base` (sysbench's defaults when `base` is `None`:
    /// localhost:3306, user sbtest, database sbtest).
    pub fn apply(&self, base: Option<Target>) -> Target {
        let mut t = base.unwrap_or(Target {
            family: Family::Mysql,
            host: "localhost".into(),
            port: 3306,
            user: "sbtest".into(),
            password: String::new(),
            database: "sbtest".into(),
            socket: None,
        });
        if let Some(h) = &self.host {
            t.host = h.clone();
            // sysbench connects over TCP when a host is given without a socket.
            t.socket = None;
        }
        if let Some(p) = self.port {
            t.port = p;
        }
        if let Some(u) = &self.user {
            t.user = u.clone();
        }
        if let Some(p) = &self.password {
            t.password = p.clone();
        }
        if let Some(d) = &self.db {
            t.database = d.clone();
        }
        if let Some(s) = &self.socket {
            t.socket = Some(s.clone());
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tcp_and_socket_urls() {
        let t = Target::parse("mysql://sb:s%40cret@127.0.0.1:3307/bench").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.user.as_str(), t.password.as_str()),
            ("127.0.0.1", 3307, "sb", "s@cret")
        );
        assert_eq!(t.database, "bench");
        assert_eq!(t.socket, None);
        assert_eq!(t.redacted(), "mysql://sb:***@127.0.0.1:3307/bench");
        let s = Target::parse("mysql://sb:sb@localhost/sbtest?socket=/tmp/x.sock").unwrap();
        assert_eq!(s.socket.as_deref(), Some("/tmp/x.sock"));
        assert_eq!(s.endpoint(), "socket /tmp/x.sock");
    }

    #[test]
    fn rejects_bad_urls_with_the_expected_form() {
        let e = Target::parse("mysql://u:pw@h/db?sslmode=x").unwrap_err().to_string();
        assert!(e.contains("sslmode") && e.contains("Expected mysql://"), "{e}");
        assert!(!e.contains("pw@"), "password leaked: {e}");
        let e = Target::parse("oracle://h/db").unwrap_err().to_string();
        assert!(e.contains("unknown scheme"), "{e}");
        assert!(Target::parse("127.0.0.1:3306").is_err());
    }

    #[test]
    fn parses_postgres_urls() {
        let t = Target::parse("postgres://bench:pw@127.0.0.1/sbtest").unwrap();
        assert_eq!((t.family, t.port, t.user.as_str()), (Family::Postgres, 5432, "bench"));
        assert_eq!(t.redacted(), "postgres://bench:***@127.0.0.1:5432/sbtest");
        let s = Target::parse("postgresql://u@localhost:5499/db?host=/tmp/pgsock").unwrap();
        assert_eq!((s.socket.as_deref(), s.port), (Some("/tmp/pgsock"), 5499));
        assert_eq!(s.redacted(), "postgres://u:***@localhost:5499/db?host=/tmp/pgsock");
        let e = Target::parse("postgres://u@h/db?sslmode=require")
            .unwrap_err()
            .to_string();
        assert!(e.contains("sslmode") && e.contains("host=/socket/dir"), "{e}");
        assert!(Target::parse("mysql://u@h/db?host=/tmp").is_err());
    }

    #[test]
    fn mysql_options_override_like_sysbench() {
        let o = MysqlOptions {
            host: Some("10.0.0.1".into()),
            password: Some("p".into()),
            ..Default::default()
        };
        let t = o.apply(Some(Target::parse("mysql://sb:sb@localhost/x?socket=/s").unwrap()));
        assert_eq!(
            (
                t.host.as_str(),
                t.socket.clone(),
                t.password.as_str(),
                t.database.as_str()
            ),
            ("10.0.0.1", None, "p", "x")
        );
        let d = MysqlOptions::default().apply(None);
        assert_eq!(
            (d.user.as_str(), d.port, d.database.as_str()),
            ("sbtest", 3306, "sbtest")
        );
    }
}
