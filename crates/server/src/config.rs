//! `--set KEY=VALUE` parsing and `my.cnf` rendering for a sandbox of any known server version.
//!
//! Stage one ([`Setting::parse`]) checks the shape of each item and refuses keys that would
//! break the sandbox (datadir, socket, port, bind-address, ...); whether the chosen server
//! knows the key is checked later, against its own option list (`options.rs`). Stage two
//! ([`render_my_cnf`]) is a pure function from a [`Config`] to the file text: sandbox layout
//! first, then the profile's defaults as that product and version spell them, with user
//! settings replacing defaults of the same name.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::str::FromStr;

use super::versions::{RedoSizing, ServerSpec, Version};
use super::ServerError;
use dbperf_driver::target::Product;

/// The `--set` item that turns InnoDB's latch instruments on at server startup (MySQL 5.6 and
/// MariaDB 10.1/10.2 register a latch with the Performance Schema only when its instrument is on
/// as InnoDB creates it).
pub const PFS_STARTUP_INSTRUMENTS: &str = "performance-schema-instrument=wait/synch/%/innodb/%=ON";

/// Whether `settings` switch the Performance Schema on (`performance_schema = ON`, `1`, `TRUE`):
/// the user asked for wait events.
pub fn asks_for_waits<'a>(settings: impl IntoIterator<Item = (&'a str, &'a str)>) -> bool {
    settings.into_iter().any(|(k, v)| {
        k.replace('-', "_").eq_ignore_ascii_case("performance_schema")
            && ["ON", "1", "TRUE"].iter().any(|on| v.trim().eq_ignore_ascii_case(on))
    })
}

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
    ("bind_address", "sandboxes listen on 127.0.0.1 only; another host's client is let in with `--listen ADDR --allow-from CLIENT`"),
    ("skip_networking", "use --socket-only"),
    (
        "user",
        "the server runs as the invoking user, or as the unprivileged account dbperf-sandbox when dbperf is root",
    ),
    (
        "secure_file_priv",
        "the server reads and writes files only in $DBPERF_HOME/servers/NAME/files",
    ),
    ("skip_grant_tables", "a sandbox always checks passwords"),
    ("named_pipe", "sandboxes listen on 127.0.0.1 and their owner-only socket only"),
    ("shared_memory", "sandboxes listen on 127.0.0.1 and their owner-only socket only"),
    ("basedir", "each known server version has its own, $DBPERF_HOME/dist/ID/base"),
    // PostgreSQL's layout parameters.
    ("data_directory", "each sandbox has its own, $DBPERF_HOME/servers/NAME/data"),
    ("config_file", "dbperf renders $DBPERF_HOME/servers/NAME/postgresql.conf from --set"),
    ("hba_file", "initdb's pg_hba.conf in the datadir is used (trust over the socket, scram over TCP)"),
    ("ident_file", "initdb's pg_ident.conf in the datadir is used"),
    ("listen_addresses", "sandboxes listen on 127.0.0.1 only (`--listen ADDR --allow-from CLIENT` for another host's client); use --socket-only for none"),
    (
        "unix_socket_directories",
        "the socket is in the sandbox directory, $DBPERF_HOME/servers/NAME",
    ),
    ("external_pid_file", "the pid file is the datadir's postmaster.pid"),
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
        if let Some(hint) = reserved(key) {
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

/// Prefixes the servers' option parser takes in front of an option name: `loose-` (ignore it
/// if unknown), `maximum-` (a session variable's ceiling) and the boolean forms.
const OPTION_PREFIXES: &[&str] = &["loose_", "maximum_", "skip_", "disable_", "enable_"];

/// The hint of the reserved key that `key` names, however it is spelled: any case, `-` or
/// `_`, behind any chain of [`OPTION_PREFIXES`] (`loose-bind-address`, `LOOSE_PORT`,
/// `disable-skip-networking`), or abbreviated (MariaDB's and MySQL's option parser take an
/// unambiguous prefix of a name: `--bind=...` is `--bind-address`).
fn reserved(key: &str) -> Option<&'static str> {
    let mut name = normalize(key);
    loop {
        if let Some((_, hint)) = RESERVED
            .iter()
            .find(|(k, _)| *k == name || (name.len() >= 3 && k.starts_with(name.as_str())))
        {
            return Some(hint);
        }
        match OPTION_PREFIXES.iter().find_map(|p| name.strip_prefix(p)) {
            Some(rest) => name = rest.to_owned(),
            None => return None,
        }
    }
}

/// How clients reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Network {
    /// `bind-address=127.0.0.1` and this port, plus the unix socket.
    Loopback { port: u16 },
    /// `skip-networking`: unix socket only.
    SocketOnly,
    /// `bind-address=ADDR` and this port, plus the unix socket: a database host whose client
    /// runs on another machine (`--listen ADDR --allow-from CLIENT`).
    Address { addr: std::net::IpAddr, port: u16 },
}

impl Network {
    /// The TCP port, if the server takes TCP connections.
    pub fn port(self) -> Option<u16> {
        match self {
            Network::Loopback { port } | Network::Address { port, .. } => Some(port),
            Network::SocketOnly => None,
        }
    }
}

/// Which built-in defaults to start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// Modest benchmark defaults that fit a small (2-core, 24 GiB) box.
    Benchmark,
    /// Small and quick to start, for integration tests.
    Test,
}

/// The redo options; setting any of them replaces the profile's redo default.
const REDO_KEYS: &[&str] = &[
    "innodb_log_file_size",
    "innodb_redo_log_capacity",
    "innodb_log_files_in_group",
];

impl Profile {
    /// `(key, value)` pairs as `server` spells them for `my.cnf`; a `None` value renders as a
    /// bare flag. (PostgreSQL's are `postgres::profile_defaults`.)
    ///
    /// Redo gets the same total size everywhere: MariaDB 10.5+ has one log file
    /// (`innodb_log_file_size`), MySQL 8.0.30+ has `innodb_redo_log_capacity`, and older MySQL
    /// and MariaDB have `innodb_log_files_in_group` (default 2) files of `innodb_log_file_size`
    /// each.
    pub fn defaults(self, server: &ServerSpec) -> Vec<(&'static str, Option<String>)> {
        let (pool, redo_mib, connections, perf_schema, flush) = match self {
            Profile::Benchmark => ("512M", 256, "512", "ON", "1"),
            Profile::Test => ("64M", 32, "200", "OFF", "2"),
        };
        let mut out: Vec<(&'static str, Option<String>)> = vec![
            // MySQL 8 writes a binlog by default; both products take `skip-log-bin`.
            ("skip_log_bin", None),
            ("skip_name_resolve", Some("ON".into())),
            ("performance_schema", Some(perf_schema.into())),
            ("max_connections", Some(connections.into())),
        ];
        if self == Profile::Benchmark {
            out.push(("max_prepared_stmt_count", Some("100000".into())));
        }
        out.push(("innodb_buffer_pool_size", Some(pool.into())));
        // PostgreSQL renders postgresql.conf from `postgres::profile_defaults` instead.
        out.push(match server.redo_sizing() {
            RedoSizing::OneFile => ("innodb_log_file_size", Some(format!("{redo_mib}M"))),
            RedoSizing::Capacity => ("innodb_redo_log_capacity", Some(format!("{redo_mib}M"))),
            RedoSizing::Files => ("innodb_log_file_size", Some(format!("{}M", redo_mib / 2))),
        });
        out.push(("innodb_flush_log_at_trx_commit", Some(flush.into())));
        if server.product == Product::Mysql && server.version >= Version::new(8, 0, 0) {
            // No X plugin port to collide with; root and `sb` log in with the native plugin,
            // which both dbperf's client and Debian's `mariadb` client speak.
            out.push(("mysqlx", Some("OFF".into())));
            out.push(("default_authentication_plugin", Some("mysql_native_password".into())));
        }
        out
    }
}

/// Everything [`render_my_cnf`] needs. Paths should be absolute.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    /// Which server (product and version) the file is for.
    pub server: &'static ServerSpec,
    /// `basedir=` for servers unpacked under `$DBPERF_HOME/dist`; `None` for system packages.
    pub basedir: Option<PathBuf>,
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub pid_file: PathBuf,
    pub log_error: PathBuf,
    /// Private, because a starting server deletes every `#sql*` file in its tmpdir.
    pub tmpdir: PathBuf,
    /// `secure_file_priv`: the one directory server-side file reads and writes may use.
    pub files: PathBuf,
    pub network: Network,
    pub profile: Profile,
    /// User overrides, in command-line order; a later item wins over an earlier one.
    pub settings: Vec<Setting>,
}

/// Renders the sandbox's `my.cnf`.
///
/// A user setting replaces the default with the same normalized key; setting `X` also drops a
/// default `skip_X` (or `disable_X`, `enable_X`) and the other way round (so
/// `--set log_bin=ON` removes `skip-log-bin`), and any redo option replaces the redo default.
pub fn render_my_cnf(config: &Config) -> String {
    let mut out = String::new();
    let path = |p: &PathBuf| quote(&p.display().to_string());
    let _ = writeln!(
        out,
        "# Rendered by dbperf for sandbox {:?}; rewritten by every `dbperf server start`.\n\
         [{}]\n\
         # sandbox layout (managed by dbperf)\n\
         datadir={}\ntmpdir={}\nsocket={}\npid-file={}\nlog-error={}\nsecure-file-priv={}",
        config.name,
        config.server.server_program(),
        path(&config.datadir),
        path(&config.tmpdir),
        path(&config.socket),
        path(&config.pid_file),
        path(&config.log_error),
        path(&config.files),
    );
    if let Some(basedir) = &config.basedir {
        let _ = writeln!(out, "basedir={}", path(basedir));
    }
    match config.network {
        Network::Loopback { port } => {
            let _ = writeln!(out, "bind-address=127.0.0.1\nport={port}");
        }
        Network::Address { addr, port } => {
            let _ = writeln!(out, "bind-address={addr}\nport={port}");
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
            base_option(&k) == base_option(key) || (REDO_KEYS.contains(&key) && REDO_KEYS.contains(&k.as_str()))
        })
    };

    out.push_str("# defaults (override with --set KEY=VALUE)\n");
    for (key, value) in config.profile.defaults(config.server) {
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
        "\n# `mariadb --defaults-file=THIS_FILE -u sb -p` connects over the socket; root logs in\n\
         # with the sandbox's admin.cnf (`mariadb --defaults-file=admin.cnf`)\n\
         [client]\nsocket={}",
        path(&config.socket)
    );
    out
}

/// The option a boolean form refers to: `skip_log_bin` and `disable_log_bin` are `log_bin`.
pub(crate) fn base_option(normalized: &str) -> &str {
    ["skip_", "disable_", "enable_"]
        .iter()
        .find_map(|prefix| normalized.strip_prefix(prefix))
        .unwrap_or(normalized)
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
    use crate::versions::lookup;

    /// The option lines of the server section, without comments.
    fn server_section(cnf: &str) -> Vec<&str> {
        cnf.lines()
            .skip_while(|l| !l.starts_with("[mysqld]") && !l.starts_with("[mariadbd]"))
            .take_while(|l| !l.is_empty())
            .filter(|l| !l.starts_with('#'))
            .collect()
    }

    fn config(settings: &[&str], network: Network) -> Config {
        config_for("mariadb-10.11", settings, network)
    }

    fn config_for(id: &str, settings: &[&str], network: Network) -> Config {
        Config {
            name: "t".into(),
            server: lookup(id).unwrap(),
            basedir: None,
            datadir: "/h/servers/t/data".into(),
            socket: "/h/servers/t/mysqld.sock".into(),
            pid_file: "/h/servers/t/mysqld.pid".into(),
            log_error: "/h/servers/t/error.log".into(),
            tmpdir: "/h/servers/t/tmp".into(),
            files: "/h/servers/t/files".into(),
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

    /// Every spelling the server's option parser maps onto a reserved key is refused.
    #[test]
    fn reserved_keys_are_refused_in_every_spelling() {
        for item in [
            "loose-bind-address=127.0.0.2",
            "loose_bind_address=127.0.0.2",
            "LOOSE-BIND-ADDRESS=127.0.0.2",
            "maximum-port=1",
            "loose-port=3306",
            "skip-networking=0",
            "disable-skip-networking=1",
            "loose-skip-networking=0",
            "enable-skip-networking",
            "socket=/tmp/x.sock",
            "loose-socket=/tmp/x.sock",
            "bind=0.0.0.0",
            "loose-bind-addr=0.0.0.0",
            "secure-file-priv=/tmp",
            "loose_secure_file_priv=/",
            "skip-grant-tables=1",
            "loose-skip-grant-tables",
            "User=root",
            "loose-datadir=/var/lib/mysql",
            "listen_addresses=*",
        ] {
            let item = if item.contains('=') {
                item.to_owned()
            } else {
                format!("{item}=1")
            };
            assert!(
                matches!(Setting::parse(&item), Err(ServerError::ReservedSetting { .. })),
                "{item} was accepted"
            );
        }
        for ok in [
            "skip-name-resolve=ON",
            "port-open-timeout=5",
            "loose-innodb-io-capacity=2000",
            "enable_seqscan=off",
            "log_bin=ON",
        ] {
            assert!(Setting::parse(ok).is_ok(), "{ok} was refused");
        }
    }

    #[test]
    fn renders_layout_defaults_and_overrides() {
        let cnf = render_my_cnf(&config(
            &["innodb_buffer_pool_size=1G", "innodb-buffer-pool-size=2G", "log_bin=ON"],
            Network::Loopback { port: 41234 },
        ));
        assert_eq!(
            server_section(&cnf),
            [
                "[mariadbd]",
                "datadir=/h/servers/t/data",
                "tmpdir=/h/servers/t/tmp",
                "socket=/h/servers/t/mysqld.sock",
                "pid-file=/h/servers/t/mysqld.pid",
                "log-error=/h/servers/t/error.log",
                "secure-file-priv=/h/servers/t/files",
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
        assert!(cnf.contains("[client]\nsocket=/h/servers/t/mysqld.sock\n"));
        assert!(!cnf.contains("user=root"), "my.cnf gives nobody a root login");
    }

    #[test]
    fn socket_only_skips_networking() {
        let cnf = render_my_cnf(&config(&[], Network::SocketOnly));
        assert!(cnf.contains("\nskip-networking\n"));
        assert!(!cnf.contains("port=") && !cnf.contains("bind-address"));
        assert!(cnf.contains("\nskip-log-bin\n"));
    }

    #[test]
    fn renders_mysql_8_0_31_with_redo_capacity() {
        let mut c = config_for("mysql-8.0.31", &[], Network::Loopback { port: 41234 });
        c.basedir = Some("/h/dist/mysql-8.0.31/base".into());
        let cnf = render_my_cnf(&c);
        let lines = server_section(&cnf);
        assert_eq!(lines[0], "[mysqld]");
        assert!(lines.contains(&"basedir=/h/dist/mysql-8.0.31/base"), "{cnf}");
        for want in [
            "skip-log-bin",
            "innodb-redo-log-capacity=256M",
            "mysqlx=OFF",
            "default-authentication-plugin=mysql_native_password",
        ] {
            assert!(lines.contains(&want), "{want} missing:\n{cnf}");
        }
        assert!(!cnf.contains("innodb-log-file-size"), "{cnf}");
    }

    #[test]
    fn renders_mysql_8_0_15_with_two_log_files() {
        let cnf = render_my_cnf(&config_for("mysql-8.0.15", &[], Network::SocketOnly));
        let lines = server_section(&cnf);
        assert!(lines.contains(&"innodb-log-file-size=128M"), "{cnf}");
        assert!(!cnf.contains("redo-log-capacity"), "{cnf}");
        assert!(
            lines.contains(&"skip-log-bin") && lines.contains(&"mysqlx=OFF"),
            "{cnf}"
        );
    }

    #[test]
    fn maven_mariadb_renders_like_debian_plus_basedir() {
        let mut c = config_for("mariadb-11.4.5", &[], Network::SocketOnly);
        c.basedir = Some("/b".into());
        let cnf = render_my_cnf(&c);
        let lines = server_section(&cnf);
        assert_eq!(lines[0], "[mariadbd]");
        assert!(
            lines.contains(&"basedir=/b") && lines.contains(&"innodb-log-file-size=256M"),
            "{cnf}"
        );
        assert!(!cnf.contains("mysqlx") && !cnf.contains("authentication"), "{cnf}");
    }

    /// MySQL 5.6 and MariaDB before 10.5: the `[mysqld]` section, two redo files of half the
    /// profile's redo each, no X plugin or authentication default (5.6 has neither option).
    #[test]
    fn classic_servers_render_mysqld_section_and_two_redo_files() {
        for id in ["mysql-5.6.24", "mariadb-10.1.23", "mariadb-10.2.11"] {
            let cnf = render_my_cnf(&config_for(id, &[], Network::SocketOnly));
            let lines = server_section(&cnf);
            assert_eq!(lines[0], "[mysqld]", "{id}");
            assert!(lines.contains(&"innodb-log-file-size=128M"), "{id}:\n{cnf}");
            assert!(
                !cnf.contains("mysqlx") && !cnf.contains("authentication"),
                "{id}:\n{cnf}"
            );
        }
    }

    #[test]
    fn any_redo_option_replaces_the_redo_default() {
        let cnf = render_my_cnf(&config_for(
            "mysql-8.0.31",
            &["innodb_log_file_size=64M", "disable-log-bin=1"],
            Network::SocketOnly,
        ));
        assert!(!cnf.contains("redo-log-capacity"), "{cnf}");
        assert!(!cnf.contains("skip-log-bin"), "{cnf}");
        assert!(cnf.contains("\ninnodb_log_file_size=64M\n"), "{cnf}");
    }

    #[test]
    fn quotes_values_with_spaces() {
        assert_eq!(quote("/a b/c"), "\"/a b/c\"");
        assert_eq!(quote("plain"), "plain");
    }
}
