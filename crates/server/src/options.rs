//! The option names a server binary knows, and the check of `--set` keys against them.
//!
//! Names come from the server itself: `mariadbd|mysqld --no-defaults --verbose --help` lists
//! every option (`  --innodb-log-file-size=#`) and a variables table (`innodb-log-file-size
//! 100663296`); [`parse_help`] takes the union of both. The list is cached as
//! `options.json` in the server's dist directory and rebuilt when the binary changes.
//! [`KnownOptions::check`] refuses a key the server does not know before anything starts,
//! naming the key, the server id and the nearest known names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::config::{base_option, Setting};
use super::daemon::Binaries;
use super::versions::ServerSpec;
use super::ServerError;
use dbperf_driver::target::Product;

const CACHE_FILE: &str = "options.json";
/// How many near names an unknown-key error suggests.
const SUGGESTIONS: usize = 3;

/// Names that moved between versions or products: `(unknown key, what to use instead)`.
const RENAMED: &[(&str, &str)] = &[
    (
        "innodb_redo_log_capacity",
        "innodb_log_file_size (before MySQL 8.0.30 and in MariaDB, redo is sized per file)",
    ),
    (
        "innodb_log_files_in_group",
        "innodb_log_file_size (MariaDB has a single redo file)",
    ),
    ("log_slave_updates", "log_replica_updates"),
    (
        "checkpoint_segments",
        "max_wal_size (checkpoint_segments was removed in PostgreSQL 9.5)",
    ),
    ("wal_keep_segments", "wal_keep_size (renamed in PostgreSQL 13)"),
];

/// The normalized (`_`, lower case) option names one server binary accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KnownOptions {
    /// The binary the list came from, and its modification time (seconds), to detect upgrades.
    pub server: PathBuf,
    pub server_mtime: u64,
    pub names: BTreeSet<String>,
}

impl KnownOptions {
    /// The cached list in `cache_dir`, or a fresh one from `--verbose --help` (then cached).
    pub(crate) fn load(bins: &Binaries, cache_dir: &Path) -> Result<KnownOptions, ServerError> {
        let cache = cache_dir.join(CACHE_FILE);
        let mtime = mtime_secs(&bins.server);
        if let Ok(bytes) = std::fs::read(&cache) {
            if let Ok(known) = serde_json::from_slice::<KnownOptions>(&bytes) {
                if known.server == bins.server && known.server_mtime == mtime && !known.names.is_empty() {
                    return Ok(known);
                }
            }
        }
        let names = match bins.product {
            Product::Postgres => super::postgres::parameter_names(bins)?,
            Product::Mariadb | Product::Mysql => parse_help(&run_help(bins)?),
        };
        let known = KnownOptions {
            server: bins.server.clone(),
            server_mtime: mtime,
            names,
        };
        std::fs::create_dir_all(cache_dir).map_err(|e| ServerError::io("cannot create", cache_dir, e))?;
        let json = serde_json::to_string(&known).expect("option lists always serialize");
        dbperf_core::nofollow::write_atomic(&cache, json.as_bytes())
            .map_err(|e| ServerError::io("cannot replace", &cache, e))?;
        Ok(known)
    }

    /// True if the server accepts `key` (any spelling of `-`/`_` and case), including the
    /// `loose-` prefix (never checked, as the server does) and `skip-`/`disable-`/`enable-`
    /// forms of a known option.
    pub fn accepts(&self, key: &str) -> bool {
        let key = key.to_ascii_lowercase().replace('-', "_");
        key.starts_with("loose_") || self.names.contains(&key) || self.names.contains(base_option(&key))
    }

    /// True if PostgreSQL accepts parameter `key` (case-insensitive, `-` as `_`): a parameter
    /// of this binary, or a `prefix.name` custom parameter (extensions; not checked, as the
    /// server does not check them either).
    pub fn accepts_postgres(&self, key: &str) -> bool {
        let key = super::postgres::normalize_key(key);
        self.names.contains(&key) || key.contains('.')
    }

    /// Fails on the first setting the server does not know.
    pub fn check(&self, server: &ServerSpec, settings: &[Setting]) -> Result<(), ServerError> {
        let accepts = |key: &str| match server.product {
            Product::Postgres => self.accepts_postgres(key),
            Product::Mariadb | Product::Mysql => self.accepts(key),
        };
        match settings.iter().find(|s| !accepts(&s.key)) {
            None => Ok(()),
            Some(s) => Err(ServerError::UnknownSetting {
                key: s.key.clone(),
                server: server.id,
                suggestion: self.suggest(&s.normalized_key()),
                hint: match server.product {
                    Product::Postgres => "`postgres --describe-config` lists them all".to_owned(),
                    Product::Mariadb | Product::Mysql => {
                        format!("`--set loose-{}=...` would pass it on unchecked", s.key)
                    }
                },
            }),
        }
    }

    /// "did you mean ..." text: a known rename if there is one, else the nearest names.
    fn suggest(&self, key: &str) -> String {
        let renamed = RENAMED
            .iter()
            .find(|(from, to)| *from == key && self.accepts(to.split(' ').next().unwrap_or(to)));
        if let Some((_, to)) = renamed {
            return format!("did you mean {to}?");
        }
        let mut scored: Vec<(usize, &String)> = self
            .names
            .iter()
            .map(|name| (strsim::levenshtein(key, name), name))
            .collect();
        scored.sort();
        let near: Vec<&str> = scored.iter().take(SUGGESTIONS).map(|(_, n)| n.as_str()).collect();
        format!("the nearest known names are {}.", near.join(", "))
    }
}

/// Runs `SERVER --no-defaults [--basedir=B] --verbose --help` (as the server account when
/// dbperf is root) and returns stdout.
fn run_help(bins: &Binaries) -> Result<String, ServerError> {
    let mut cmd = Command::new(&bins.server);
    cmd.arg("--no-defaults");
    if let Some(basedir) = &bins.basedir {
        cmd.arg(format!("--basedir={}", basedir.display()));
    }
    if let Some(account) = &bins.run_as {
        account.apply(&mut cmd);
    }
    let out = cmd
        .args(["--verbose", "--help"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ServerError::io("cannot run", &bins.server, e))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || !text.contains("Variables (--variable-name=value)") {
        return Err(ServerError::OptionList {
            server: bins.server.clone(),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(text)
}

/// The option names in `--verbose --help` output, normalized to `_` and lower case: every
/// `  --name` (or `  -x, --name`) line of the option list, and every row of the variables table.
pub fn parse_help(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut lines = text.lines();
    for line in lines.by_ref() {
        if line.starts_with("Variables (--variable-name=value)") {
            break;
        }
        let Some(rest) = line.strip_prefix("  ") else {
            continue;
        };
        let rest = match rest.as_bytes() {
            [b'-', c, b',', b' ', ..] if c.is_ascii_alphanumeric() => &rest[4..],
            _ => rest,
        };
        if let Some(option) = rest.strip_prefix("--") {
            insert_name(&mut names, option);
        }
    }
    // The variables table: a header line, a line of dashes, then `name  value` rows until a
    // blank line.
    let mut rows = lines.skip_while(|l| !l.starts_with("---"));
    rows.next();
    for row in rows.take_while(|l| !l.trim().is_empty()) {
        insert_name(&mut names, row);
    }
    names
}

/// Adds the option name at the start of `text` (up to `=`, `[` or whitespace).
fn insert_name(names: &mut BTreeSet<String>, text: &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(text.len());
    let name = &text[..end];
    if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        names.insert(name.to_ascii_lowercase().replace('-', "_"));
    }
}

fn mtime_secs(path: &Path) -> u64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::versions::lookup;

    /// Excerpts of `mariadbd --no-defaults --verbose --help` (Debian 10.11.19).
    const MARIADB_HELP: &str = "\
/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)
Usage: /usr/sbin/mariadbd [OPTIONS]
The following options may be given as the first argument:
--print-defaults          Print the program argument list and exit.
--no-defaults             Don't read default options from any option file.

  --allow-suspicious-udfs 
                      Allows use of user-defined functions consisting of only
  -a, --ansi          Use ANSI SQL syntax instead of MySQL syntax. This mode
  --innodb-buffer-pool-size=# 
                      The size of the memory buffer InnoDB uses to cache data
                      (Defaults to on; use --skip-innodb-buffer-pool-load-at-startup to disable.)
  --innodb-log-file-size=# 
  --log-bin[=name]    Log update queries in binary format. Optional argument
  --performance-schema-instrument[=name] 

Variables (--variable-name=value)
and boolean options {FALSE|TRUE}                             Value (after reading options)
------------------------------------------------------------ -------------
allow-suspicious-udfs                                        FALSE
innodb-buffer-pool-size                                      134217728
innodb-log-file-size                                         100663296
max-connections                                              151
performance-schema-instrument                                
wsrep-trx-fragment-unit                                      bytes

To see what variables a running server is using, type
'SELECT * FROM INFORMATION_SCHEMA.GLOBAL_VARIABLES' instead of 'mysqld --verbose --help' or 'mariadbd --verbose --help'.
";

    /// Excerpts of `mysqld --no-defaults --basedir=B --user=root --verbose --help` (8.0.15).
    const MYSQL_8_0_15_HELP: &str = "\
mysqld  Ver 8.0.15 for linux-glibc2.12 on x86_64 (MySQL Community Server - GPL)
Usage: mysqld [OPTIONS]

  -b, --basedir=name  Path to installation directory. All paths are usually
  --default-authentication-plugin=name 
  --innodb-log-file-size=# 
  --log-bin[=name]    Configures the name prefix to use for binary log files.
                      --log-bin=name. To disable binary logging, use the
  --mysqlx[=name]     Enable or disable mysqlx plugin. Possible values are ON,

Variables (--variable-name=value)
and boolean options {FALSE|TRUE}                             Value (after reading options)
------------------------------------------------------------ -------------
abort-slave-event-count                                      0
innodb-buffer-pool-size                                      134217728
innodb-log-file-size                                         50331648
innodb-log-files-in-group                                    2
max-connections                                              151
windowing-use-high-precision                                 TRUE

To see what values a running MySQL server is using, type
'mysqladmin variables' instead of 'mysqld --verbose --help'.
";

    fn known(text: &str) -> KnownOptions {
        KnownOptions {
            server: "/x".into(),
            server_mtime: 0,
            names: parse_help(text),
        }
    }

    #[test]
    fn parses_option_lines_and_the_variables_table() {
        let names = parse_help(MARIADB_HELP);
        for want in [
            "allow_suspicious_udfs",
            "ansi",
            "innodb_buffer_pool_size",
            "innodb_log_file_size",
            "log_bin",
            "performance_schema_instrument",
            "max_connections",
            "wsrep_trx_fragment_unit",
        ] {
            assert!(names.contains(want), "{want} missing from {names:?}");
        }
        // Text inside descriptions and the header lines are not options.
        for not in [
            "skip_innodb_buffer_pool_load_at_startup",
            "print_defaults",
            "to",
            "and",
            "mysqld",
        ] {
            assert!(!names.contains(not), "{not} in {names:?}");
        }
        let names = parse_help(MYSQL_8_0_15_HELP);
        for want in [
            "basedir",
            "mysqlx",
            "default_authentication_plugin",
            "innodb_log_files_in_group",
        ] {
            assert!(names.contains(want), "{want} missing from {names:?}");
        }
        assert!(!names.contains("innodb_redo_log_capacity"));
    }

    #[test]
    fn accepts_spellings_prefixes_and_boolean_forms() {
        let k = known(MARIADB_HELP);
        for ok in [
            "innodb_buffer_pool_size",
            "innodb-buffer-pool-size",
            "INNODB_Buffer_Pool_Size",
            "loose-anything-at-all",
            "skip-log-bin",
            "disable_log_bin",
            "enable-log-bin",
        ] {
            assert!(k.accepts(ok), "{ok}");
        }
        for bad in ["innodb_buffer_pool", "skip_nothing", "innodb_redo_log_capacity"] {
            assert!(!k.accepts(bad), "{bad}");
        }
    }

    #[test]
    fn unknown_key_names_key_server_and_nearest_names() {
        let server = lookup("mysql-8.0.15").unwrap();
        let k = known(MYSQL_8_0_15_HELP);
        let set = |s: &str| vec![Setting::parse(s).unwrap()];
        assert!(k.check(server, &set("innodb_log_file_size=64M")).is_ok());

        let err = k
            .check(server, &set("innodb_redo_log_capacity=1G"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("innodb_redo_log_capacity is not a setting of mysql-8.0.15"),
            "{err}"
        );
        assert!(err.contains("did you mean innodb_log_file_size"), "{err}");

        let err = k.check(server, &set("max_conections=10")).unwrap_err().to_string();
        assert!(err.contains("max_conections is not a setting of mysql-8.0.15"), "{err}");
        assert!(err.contains("nearest known names are max_connections"), "{err}");
    }
}
