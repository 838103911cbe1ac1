//! `--set KEY=VALUE` parsing and `my.cnf` rendering for a MariaDB sandbox.
//!
//! Stage one ([`Setting::parse`]) checks the shape of each item and refuses keys that would
//! break the sandbox (datadir, socket, port, bind-address, ...). Stage two ([`render_my_cnf`])
//! is a pure function from a [`Config`] to the file text: sandbox layout first, then the
//! profile's defaults, with user settings replacing defaults of the same name.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

use super::ServerError;

/// One validated `--set KEY=VALUE` item. The key keeps the user's spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub key: String,
    pub value: String,
}

/// Keys the sandbox layout owns, with the way to get the effect instead.
const RESERVED: &[(&str, &str)] = &[
    ("datadir", "each sandbox has its own, $DBPERF_HOME/servers/NAME/data"),
    ("socket", "the socket is $DBPERF_HOME/servers/NAME/mysqld.sock"),
    ("pid_file", "the pid file is $DBPERF_HOME/servers/NAME/mysqld.pid"),
    ("log_error", "the error log is $DBPERF_HOME/servers/NAME/error.log"),
    (
        "tmpdir",
        "each sandbox has its own, $DBPERF_HOME/servers/NAME/tmp (a server deletes others' temp files in a shared one at startup)",
    ),
    ("port", "use --port"),
    ("bind_address", "sandboxes listen on 127.0.0.1 only"),
    ("skip_networking", "use --socket-only"),
    ("user", "mariadbd runs as the invoking user"),
];

impl Setting {
    /// Parses and checks one `KEY=VALUE` item from the command line.
    pub fn parse(item: &str) -> Result<Setting, ServerError> {
        let invalid = |reason: &str| ServerError::InvalidSetting {
            item: item.to_owned(),
            reason: reason.to_owned(),
        };
        let (key, value) = item.split_once('=').ok_or_else(|| invalid("there is no `=`"))?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            return Err(invalid("the key before `=` is empty"));
        }
        if !key.starts_with(|c: char| c.is_ascii_alphabetic())
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(invalid(
                "the key must start with a letter and use only letters, digits, `_`, `-` and `.`",
            ));
        }
        if value.is_empty() {
            return Err(invalid("the value after `=` is empty"));
        }
        if value.chars().any(|c| c.is_control() || c == '"') {
            return Err(invalid("the value contains a control character or a double quote"));
        }
        let normalized = normalize(key);
        if let Some((_, hint)) = RESERVED.iter().find(|(k, _)| *k == normalized) {
            return Err(ServerError::ReservedSetting {
                key: key.to_owned(),
                hint,
            });
        }
        Ok(Setting {
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }

    /// The key as MariaDB compares it: lower case, `-` and `_` equivalent.
    pub fn normalized_key(&self) -> String {
        normalize(&self.key)
    }
}

impl FromStr for Setting {
    type Err = ServerError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Setting::parse(s)
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

fn normalize(key: &str) -> String {
    key.to_ascii_lowercase().replace('-', "_")
}

/// How clients reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// `bind-address=127.0.0.1` and this port, plus the unix socket.
    Loopback { port: u16 },
    /// `skip-networking`: unix socket only.
    SocketOnly,
}

/// Which built-in defaults to start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Modest benchmark defaults that fit a small (2-core, 24 GiB) box.
    Benchmark,
    /// Small and quick to start, for integration tests.
    Test,
}

impl Profile {
    /// `(key, value)` pairs; a `None` value renders as a bare flag.
    pub fn defaults(self) -> &'static [(&'static str, Option<&'static str>)] {
        match self {
            Profile::Benchmark => &[
                ("skip_log_bin", None),
                ("skip_name_resolve", Some("ON")),
                ("performance_schema", Some("ON")),
                ("max_connections", Some("512")),
                ("max_prepared_stmt_count", Some("100000")),
                ("innodb_buffer_pool_size", Some("512M")),
                ("innodb_log_file_size", Some("256M")),
                ("innodb_flush_log_at_trx_commit", Some("1")),
            ],
            Profile::Test => &[
                ("skip_log_bin", None),
                ("skip_name_resolve", Some("ON")),
                ("performance_schema", Some("OFF")),
                ("max_connections", Some("200")),
                ("innodb_buffer_pool_size", Some("64M")),
                ("innodb_log_file_size", Some("32M")),
                ("innodb_flush_log_at_trx_commit", Some("2")),
            ],
        }
    }
}

/// Everything [`render_my_cnf`] needs. Paths should be absolute.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub pid_file: PathBuf,
    pub log_error: PathBuf,
    /// Private, because a starting server deletes every `#sql*` file in its tmpdir.
    pub tmpdir: PathBuf,
    pub network: Network,
    pub profile: Profile,
    /// User overrides, in command-line order; a later item wins over an earlier one.
    pub settings: Vec<Setting>,
}

/// Renders the sandbox's `my.cnf`.
///
/// A user setting replaces the default with the same normalized key; setting `X` also drops a
/// default `skip_X` and the other way round (so `--set log_bin=ON` removes `skip-log-bin`).
pub fn render_my_cnf(config: &Config) -> String {
    let mut out = String::new();
    let path = |p: &PathBuf| quote(&p.display().to_string());
    let _ = writeln!(
        out,
        "# Rendered by dbperf for sandbox {:?}; rewritten by every `dbperf server start`.\n\
         [mariadbd]\n\
         # sandbox layout (managed by dbperf)\n\
         datadir={}\ntmpdir={}\nsocket={}\npid-file={}\nlog-error={}",
        config.name,
        path(&config.datadir),
        path(&config.tmpdir),
        path(&config.socket),
        path(&config.pid_file),
        path(&config.log_error),
    );
    match config.network {
        Network::Loopback { port } => {
            let _ = writeln!(out, "bind-address=127.0.0.1\nport={port}");
        }
        Network::SocketOnly => out.push_str("skip-networking\n"),
    }

    // The last user item for each key wins; earlier duplicates are dropped.
    let mut user: Vec<&Setting> = Vec::new();
    for s in config.settings.iter().rev() {
        if !user.iter().any(|u| u.normalized_key() == s.normalized_key()) {
            user.push(s);
        }
    }
    user.reverse();
    let overridden = |key: &str| {
        user.iter().any(|u| {
            let k = u.normalized_key();
            k == key || format!("skip_{k}") == key || format!("skip_{key}") == k
        })
    };

    out.push_str("# defaults (override with --set KEY=VALUE)\n");
    for (key, value) in config.profile.defaults() {
        if overridden(key) {
            continue;
        }
        let key = key.replace('_', "-");
        match value {
            Some(v) => {
                let _ = writeln!(out, "{key}={v}");
            }
            None => {
                let _ = writeln!(out, "{key}");
            }
        }
    }
    if !user.is_empty() {
        out.push_str("# --set\n");
        for s in user {
            let _ = writeln!(out, "{}={}", s.key, quote(&s.value));
        }
    }
    let _ = writeln!(
        out,
        "\n# `mariadb --defaults-file=THIS_FILE` connects as root over the socket\n\
         [client]\nsocket={}\nuser=root",
        path(&config.socket)
    );
    out
}

/// Quotes a value for an option file when it holds spaces, `#` or quotes.
fn quote(value: &str) -> String {
    let escaped = value.replace('\\', "\\\\");
    if value.contains(|c: char| c.is_whitespace() || matches!(c, '#' | '\'' | '"')) {
        format!("\"{}\"", escaped.replace('"', "\\\""))
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(settings: &[&str], network: Network) -> Config {
        Config {
            name: "t".into(),
            datadir: "/h/servers/t/data".into(),
            socket: "/h/servers/t/mysqld.sock".into(),
            pid_file: "/h/servers/t/mysqld.pid".into(),
            log_error: "/h/servers/t/error.log".into(),
            tmpdir: "/h/servers/t/tmp".into(),
            network,
            profile: Profile::Benchmark,
            settings: settings.iter().map(|s| Setting::parse(s).unwrap()).collect(),
        }
    }

    #[test]
    fn parses_key_value() {
        let s = Setting::parse(" innodb_buffer_pool_size = 2G ").unwrap();
        assert_eq!((s.key.as_str(), s.value.as_str()), ("innodb_buffer_pool_size", "2G"));
        let s = Setting::parse("performance-schema-instrument=wait/synch/%=ON").unwrap();
        assert_eq!(s.value, "wait/synch/%=ON");
        assert_eq!(s.normalized_key(), "performance_schema_instrument");
    }

    #[test]
    fn rejects_malformed_items_naming_the_item() {
        for (item, reason) in [
            ("innodb_buffer_pool_size", "no `=`"),
            ("=2G", "key before `=` is empty"),
            ("innodb_buffer_pool_size=", "value after `=` is empty"),
            ("1abc=2", "must start with a letter"),
            ("a b=2", "must start with a letter"),
            ("a=x\ny", "control character"),
        ] {
            let err = Setting::parse(item).unwrap_err().to_string();
            assert!(err.contains(&format!("{item:?}")), "{err}");
            assert!(err.contains(reason), "{err}");
            assert!(err.contains("expected KEY=VALUE"), "{err}");
        }
    }

    #[test]
    fn rejects_reserved_keys_with_a_hint() {
        let err = Setting::parse("bind-address=0.0.0.0").unwrap_err().to_string();
        assert!(err.contains("managed by dbperf") && err.contains("127.0.0.1"), "{err}");
        let err = Setting::parse("PORT=3306").unwrap_err().to_string();
        assert!(err.contains("use --port"), "{err}");
    }

    #[test]
    fn renders_layout_defaults_and_overrides() {
        let cnf = render_my_cnf(&config(
            &["innodb_buffer_pool_size=1G", "innodb-buffer-pool-size=2G", "log_bin=ON"],
            Network::Loopback { port: 41234 },
        ));
        let mariadbd: Vec<&str> = cnf
            .lines()
            .skip_while(|l| *l != "[mariadbd]")
            .take_while(|l| !l.is_empty())
            .filter(|l| !l.starts_with('#'))
            .collect();
        assert_eq!(
            mariadbd,
            [
                "[mariadbd]",
                "datadir=/h/servers/t/data",
                "tmpdir=/h/servers/t/tmp",
                "socket=/h/servers/t/mysqld.sock",
                "pid-file=/h/servers/t/mysqld.pid",
                "log-error=/h/servers/t/error.log",
                "bind-address=127.0.0.1",
                "port=41234",
                "skip-name-resolve=ON",
                "performance-schema=ON",
                "max-connections=512",
                "max-prepared-stmt-count=100000",
                "innodb-log-file-size=256M",
                "innodb-flush-log-at-trx-commit=1",
                "innodb-buffer-pool-size=2G",
                "log_bin=ON",
            ]
        );
        assert!(cnf.contains("[client]\nsocket=/h/servers/t/mysqld.sock\nuser=root"));
    }

    #[test]
    fn socket_only_skips_networking() {
        let cnf = render_my_cnf(&config(&[], Network::SocketOnly));
        assert!(cnf.contains("\nskip-networking\n"));
        assert!(!cnf.contains("port=") && !cnf.contains("bind-address"));
        assert!(cnf.contains("\nskip-log-bin\n"));
    }

    #[test]
    fn quotes_values_with_spaces() {
        assert_eq!(quote("/a b/c"), "\"/a b/c\"");
        assert_eq!(quote("plain"), "plain");
    }
}
