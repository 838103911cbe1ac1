//! Servers that are already running (`[[server]] target = "mysql://USER@HOST:PORT/DB"`): the
//! lab never starts, stops or copies them, so what it would do to a sandbox it does here in SQL.
//!
//! | what | rule |
//! |---|---|
//! | the URL | `target` in the file never holds a password (the file is copied into the results); the password comes from `target_file` (a 0600 file holding the whole URL, read as `--target-file` reads it) or from `DBPERF_TARGET` (the whole URL, as every measuring command takes it), either naming the same server as `target` |
//! | what the lab may not do | anything that needs the server's process: `jemalloc`, `server_cpus`, TPC-H `cold` restarts, a `[search]` (its trials are server starts), restoring a writing workload's data (`restore = "none"` is required) |
//! | settings | server and variant `settings` are applied before every point (`SET GLOBAL`; PostgreSQL `ALTER SYSTEM SET` and `pg_reload_conf()`) and put back as found after each group, on error and after Ctrl-C ([`Applied`]) |
//! | a lab killed with settings changed | the values found are written to `RESULTS/lab/NAME/found-LABEL.json` before the first change and removed once put back; the next `lab run` takes the values found from that file, not from the server (which still has the lab's), and puts them back |
//! | a setting that needs a restart | refused by `lab plan`, asking the server: MariaDB `information_schema.SYSTEM_VARIABLES.READ_ONLY`; MySQL `SET GLOBAL name = @@GLOBAL.name` failing with error 1238; PostgreSQL `pg_settings.context` `postmaster` or `internal` |
//! | "as found" | MySQL family: the global value read before the first change (`SET GLOBAL` changes no file, so a restart of the server also ends the change). PostgreSQL: what `postgresql.auto.conf` said for the name: a value that came from it is set again with `ALTER SYSTEM SET`, any other (default, `postgresql.conf`, command line) is removed again with `ALTER SYSTEM RESET` |
//! | data | the workload's prepare runs against the URL's database; it creates only tables it records in `dbperf_created` and refuses tables of its names that it did not record (`dbperf_workloads::ddl`), and the lab never runs a cleanup there |
//! | telemetry | SQL only: the children run with `--telemetry-sql-only`, so no sample of this machine's OS is taken as if it were the server's |

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};

use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::target::Family;
use dbperf_driver::{Session, Target};

/// `[[server]] target = ...`: a server the lab does not start.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningServer {
    /// The URL as the file gives it (no password).
    pub shown: String,
    /// `host:port` or `socket PATH`: the default label.
    pub endpoint: String,
    pub family: Family,
    /// `target_file`: a file holding the whole URL, password included.
    pub target_file: Option<PathBuf>,
}

impl RunningServer {
    /// Checks `target` (a URL without password) and remembers `target_file`.
    pub fn parse(url: &str, target_file: Option<PathBuf>) -> Result<RunningServer, String> {
        let url = url.trim();
        if url.starts_with("sandbox:") {
            return Err(format!(
                "target = {url:?}: a sandbox is named with `id = \"...\"`; `target` is a server that is already running"
            ));
        }
        let t = Target::parse(url).map_err(|e| format!("target: {e}"))?;
        if !t.password.is_empty() {
            return Err(
                "target holds a password, and the experiment file is copied into the results: write the URL without \
                 it here, and the whole URL in a file only you can read (chmod 600), named by target_file = \"PATH\", \
                 or in the environment variable DBPERF_TARGET"
                    .into(),
            );
        }
        Ok(RunningServer {
            shown: url.to_owned(),
            endpoint: t.endpoint().trim_start_matches("socket ").to_owned(),
            family: t.family,
            target_file,
        })
    }

    /// The URL to connect with, password included: `target_file`'s, else `DBPERF_TARGET`
    /// when it names the same server, else `target` as written. Never printed.
    pub fn url(&self) -> Result<String> {
        let shown = Target::parse(&self.shown)?;
        let same = |url: &str| {
            Target::parse(url)
                .is_ok_and(|t| t.family == shown.family && t.endpoint() == shown.endpoint() && t.user == shown.user)
        };
        if let Some(file) = &self.target_file {
            let url = dbperf_commands::args::TargetUrl {
                target: None,
                target_file: Some(file.clone()),
            }
            .url()?
            .unwrap_or_default();
            if !same(&url) {
                bail!(
                    "target_file {} names {}, not the server's target {}: make them name the same user and server",
                    file.display(),
                    Target::parse(&url).map_or_else(|_| "no valid URL".to_owned(), |t| t.redacted()),
                    self.shown
                );
            }
            return Ok(url);
        }
        match std::env::var("DBPERF_TARGET") {
            Ok(url) if same(&url) => Ok(url),
            _ => Ok(self.shown.clone()),
        }
    }

    /// The URL parsed, password included.
    pub fn target(&self) -> Result<Target> {
        Ok(Target::parse(&self.url()?)?)
    }
}

use super::block_on;

async fn connect(target: &Target, label: &str) -> Result<AnySession> {
    AnySession::connect(target, IgnoreErrors::Codes(Default::default()))
        .await
        .with_context(|| format!("connecting to server {label:?} ({})", target.endpoint()))
}

/// When the session's server process last read the configuration files (PostgreSQL), as text.
async fn conf_load_time(s: &mut AnySession) -> Result<String> {
    s.query_rows("SELECT pg_conf_load_time()::text")
        .await?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .context("SELECT pg_conf_load_time() returned nothing")
}

/// A setting's name as the server's SQL takes it: `-` as `_`, lowercase; letters, digits,
/// `_` and `.` (PostgreSQL's `extension.name`) only, since it is written into statements.
fn sql_name(name: &str) -> Result<String> {
    let n = name.trim().replace('-', "_").to_ascii_lowercase();
    if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') {
        bail!("setting {name:?}: a server variable's name has letters, digits, `_` and `.` only");
    }
    Ok(n)
}

/// `'text'` with quotes and backslashes escaped (both families' standard strings).
fn quoted(text: &str, family: Family) -> String {
    match family {
        Family::Mysql => format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''")),
        Family::Postgres => format!("'{}'", text.replace('\'', "''")),
    }
}

/// A value as `SET GLOBAL` takes it: numbers and ON/OFF bare, sizes (`512M`) in bytes, the
/// rest quoted.
fn mysql_value(name: &str, value: &str) -> String {
    let v = value.trim();
    if v.parse::<i64>().is_ok() || v.parse::<f64>().is_ok() {
        return v.to_owned();
    }
    if ["ON", "OFF", "TRUE", "FALSE"].iter().any(|k| v.eq_ignore_ascii_case(k)) {
        return v.to_ascii_uppercase();
    }
    if super::settings::is_size_setting(name) {
        if let Some(bytes) = dbperf_core::size::parse_size(v) {
            return bytes.to_string();
        }
    }
    quoted(v, Family::Mysql)
}

/// Why a setting of a running server cannot be changed there, asking the server (the rule per
/// family is in the module's table); `None` when it can.
async fn refusal(s: &mut AnySession, family: Family, mariadb: bool, name: &str) -> Result<Option<String>> {
    let rows = |r: Vec<Vec<Option<String>>>| r.into_iter().next().map(|row| row.into_iter().next().flatten());
    match family {
        Family::Postgres => {
            let context = s
                .query_rows(&format!(
                    "SELECT context FROM pg_settings WHERE name = {}",
                    quoted(name, family)
                ))
                .await
                .with_context(|| format!("reading pg_settings for {name}"))?;
            Ok(match rows(context) {
                None => Some("the server has no such setting (pg_settings)".into()),
                Some(Some(c)) if c == "postmaster" => {
                    Some("it takes effect only when the server restarts (pg_settings.context = postmaster)".into())
                }
                Some(Some(c)) if c == "internal" => {
                    Some("it cannot be changed at all (pg_settings.context = internal)".into())
                }
                Some(_) => None,
            })
        }
        Family::Mysql if mariadb => {
            let found = s
                .query_rows(&format!(
                    "SELECT READ_ONLY, VARIABLE_SCOPE FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = {}",
                    quoted(&name.to_ascii_uppercase(), family)
                ))
                .await
                .with_context(|| format!("reading information_schema.SYSTEM_VARIABLES for {name}"))?;
            let Some(row) = found.into_iter().next() else {
                return Ok(Some("the server has no such variable".into()));
            };
            let read_only = row.first().cloned().flatten().unwrap_or_default();
            let scope = row.get(1).cloned().flatten().unwrap_or_default();
            Ok(if read_only.eq_ignore_ascii_case("YES") {
                Some("it is read-only while the server runs (SYSTEM_VARIABLES.READ_ONLY = YES): set it in the server's configuration and restart it yourself".into())
            } else if scope.eq_ignore_ascii_case("SESSION ONLY") {
                Some("it is a session variable only, which SET GLOBAL cannot change".into())
            } else {
                None
            })
        }
        Family::Mysql => {
            if let Err(e) = s.query_rows(&format!("SELECT @@GLOBAL.{name}")).await {
                return Ok(Some(match e.code {
                    Some(1193) => "the server has no such variable".into(),
                    Some(1238) => "it is a session variable only, which SET GLOBAL cannot change".into(),
                    _ => format!("reading it failed: {e}"),
                }));
            }
            // Setting it to its own value changes nothing, and tells a read-only one.
            match s.query(&format!("SET GLOBAL {name} = @@GLOBAL.{name}")).await {
                Ok(_) => Ok(None),
                Err(e) if e.code == Some(1238) => Ok(Some(
                    "it is read-only while the server runs (SET GLOBAL: error 1238): set it in the server's configuration and restart it yourself".into(),
                )),
                Err(e) => Ok(Some(format!(
                    "SET GLOBAL {name} = @@GLOBAL.{name} failed: {e} (the lab's user needs SYSTEM_VARIABLES_ADMIN or SUPER)"
                ))),
            }
        }
    }
}

async fn is_mariadb(s: &mut AnySession, family: Family) -> Result<bool> {
    if family != Family::Mysql {
        return Ok(false);
    }
    let v = s
        .query_rows("SELECT VERSION()")
        .await
        .context("reading the server's version")?;
    Ok(v.into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .is_some_and(|v| v.contains("MariaDB")))
}

/// `lab plan`'s check of a running server: it answers, and every setting the experiment
/// changes on it (its own and every variant's) exists and can change while it runs. The error
/// names each refused setting, why, and where the file sets it.
pub fn check_settings(label: &str, server: &RunningServer, names: &[(String, String)]) -> Result<()> {
    let target = server.target()?;
    block_on(async {
        let mut s = connect(&target, label).await?;
        let mariadb = is_mariadb(&mut s, server.family).await?;
        let mut refused = Vec::new();
        for (name, whence) in names {
            let n = sql_name(name)?;
            if let Some(why) = refusal(&mut s, server.family, mariadb, &n).await? {
                refused.push(format!("  {name} ({whence}): {why}"));
            }
        }
        if !refused.is_empty() {
            bail!(
                "server {label:?} is already running (target), so the lab changes its settings while it runs, and these cannot change so:\n{}\nremove them from the experiment, or give the server a sandbox of its own (`id = ...`)",
                refused.join("\n")
            );
        }
        Ok(())
    })
}

/// One setting's value before the lab changed it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Found {
    /// MySQL family: the global value.
    Global(String),
    /// PostgreSQL: a value `postgresql.auto.conf` gave (set again as found).
    AutoConf(String),
    /// PostgreSQL: not from `postgresql.auto.conf` (`ALTER SYSTEM RESET` puts it back).
    NotAltered,
}

/// Settings applied to a running server, put back as found when dropped (the end of a group,
/// an error, Ctrl-C: every way out of the group).
pub struct Applied {
    target: Target,
    label: String,
    found: Vec<(String, Found)>,
    /// Where the values found are kept until they are put back (a killed lab's next run puts
    /// them back from there).
    record: PathBuf,
}

impl Applied {
    /// Reads the values of `settings`' names as found, before anything is changed, and keeps
    /// them in `record` (`lab_dir/found-LABEL.json`). Values a killed run left there are taken
    /// from it: the server still has the lab's.
    pub fn read(
        label: &str,
        server: &RunningServer,
        settings: &[(String, String)],
        lab_dir: &std::path::Path,
    ) -> Result<Applied> {
        let target = server.target()?;
        let family = target.family;
        let record = lab_dir.join(format!("found-{}.json", super::name_safe(label, &['-', '.'], '_')));
        let mut kept: Vec<(String, Found)> = Vec::new();
        if dbperf_core::nofollow::regular_or_absent(&record).with_context(|| format!("reading {}", record.display()))? {
            let text = std::fs::read(&record).with_context(|| format!("reading {}", record.display()))?;
            kept = serde_json::from_slice(&text).with_context(|| format!("reading {}", record.display()))?;
            println!(
                "   an earlier lab run on {label} ended without putting its settings back: the values found then ({}) are put back at the end",
                record.display()
            );
        }
        let mut names: Vec<String> = Vec::new();
        for (k, _) in settings {
            let n = sql_name(k)?;
            if !names.contains(&n) && !kept.iter().any(|(k, _)| *k == n) {
                names.push(n);
            }
        }
        let found = block_on(async {
            let mut s = connect(&target, label).await?;
            let mut found = Vec::new();
            for n in names {
                let value = match family {
                    Family::Mysql => {
                        let rows = s
                            .query_rows(&format!("SELECT @@GLOBAL.{n}"))
                            .await
                            .with_context(|| format!("reading {n} as found on {label:?}"))?;
                        let v = rows.into_iter().next().and_then(|r| r.into_iter().next().flatten());
                        Found::Global(v.ok_or_else(|| {
                            anyhow!("{n} is NULL on {label:?}, which SET GLOBAL cannot put back: leave it out of the experiment")
                        })?)
                    }
                    Family::Postgres => {
                        let rows = s
                            .query_rows(&format!(
                                "SELECT current_setting(name), source, sourcefile FROM pg_settings WHERE name = {}",
                                quoted(&n, family)
                            ))
                            .await
                            .with_context(|| format!("reading {n} as found on {label:?}"))?;
                        let row = rows
                            .into_iter()
                            .next()
                            .ok_or_else(|| anyhow!("{label:?} has no setting {n}"))?;
                        let value = row.first().cloned().flatten().unwrap_or_default();
                        let source = row.get(1).cloned().flatten().unwrap_or_default();
                        match (source.as_str(), row.get(2).cloned().flatten()) {
                            ("configuration file", Some(file)) if file.ends_with("postgresql.auto.conf") => Found::AutoConf(value),
                            ("configuration file", None) => bail!(
                                "cannot tell whether {n} on {label:?} comes from postgresql.auto.conf, to put it back as found: \
                                 pg_settings.sourcefile is hidden from the lab's role (grant it pg_read_all_settings)"
                            ),
                            _ => Found::NotAltered,
                        }
                    }
                };
                found.push((n, value));
            }
            Ok(found)
        })?;
        kept.extend(found);
        dbperf_core::nofollow::write_atomic(&record, &serde_json::to_vec_pretty(&kept)?)
            .with_context(|| format!("writing {}", record.display()))?;
        Ok(Applied {
            target,
            label: label.to_owned(),
            found: kept,
            record,
        })
    }

    /// Sets `settings` (later ones win), as before every point of a variant.
    pub fn apply(&self, settings: &[(String, String)]) -> Result<()> {
        let family = self.target.family;
        let statements: Vec<String> = settings
            .iter()
            .map(|(k, v)| {
                let n = sql_name(k)?;
                Ok(match family {
                    Family::Mysql => format!("SET GLOBAL {n} = {}", mysql_value(&n, v)),
                    Family::Postgres => format!("ALTER SYSTEM SET {n} = {}", quoted(v, family)),
                })
            })
            .collect::<Result<_>>()?;
        self.run(&statements, "setting")
    }

    /// Puts every setting back as found.
    pub fn put_back(&self) -> Result<()> {
        let family = self.target.family;
        let statements: Vec<String> = self
            .found
            .iter()
            .map(|(n, f)| match f {
                Found::Global(v) => format!("SET GLOBAL {n} = {}", mysql_value(n, v)),
                Found::AutoConf(v) => format!("ALTER SYSTEM SET {n} = {}", quoted(v, family)),
                Found::NotAltered => format!("ALTER SYSTEM RESET {n}"),
            })
            .collect();
        self.run(&statements, "putting back")
    }

    fn run(&self, statements: &[String], doing: &str) -> Result<()> {
        if statements.is_empty() {
            return Ok(());
        }
        let family = self.target.family;
        block_on(async {
            let mut s = connect(&self.target, &self.label).await?;
            let loaded = if family == Family::Postgres {
                Some(conf_load_time(&mut s).await?)
            } else {
                None
            };
            for st in statements {
                s.query(st)
                    .await
                    .with_context(|| format!("{doing} on {:?}: {st}", self.label))?;
            }
            if let Some(before) = loaded {
                s.query("SELECT pg_reload_conf()")
                    .await
                    .with_context(|| format!("SELECT pg_reload_conf() on {:?}", self.label))?;
                self.reloaded(&before).await?;
            }
            Ok(())
        })
    }

    /// Waits until the postmaster has read its configuration again after `pg_reload_conf()`
    /// (which only signals it): a new session, forked from it, reports a later
    /// `pg_conf_load_time()` than `before`. Points connect afresh, so they see the values.
    async fn reloaded(&self, before: &str) -> Result<()> {
        const PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);
        let started = std::time::Instant::now();
        loop {
            let mut s = connect(&self.target, &self.label).await?;
            if conf_load_time(&mut s).await? != before {
                return Ok(());
            }
            if started.elapsed() > PATIENCE {
                bail!(
                    "server {:?} did not read its configuration again within {} s of pg_reload_conf() \
                     (pg_conf_load_time() still {before}): see its log",
                    self.label,
                    PATIENCE.as_secs()
                );
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        match self.put_back() {
            Ok(()) => {
                let _ = std::fs::remove_file(&self.record);
                if !self.found.is_empty() {
                    let names: Vec<&str> = self.found.iter().map(|(n, _)| n.as_str()).collect();
                    println!("   put back as found on {}: {}", self.label, names.join(", "));
                }
            }
            Err(e) => eprintln!(
                "error: the settings of {:?} could not be put back as found ({e:#}); the next `lab run` puts them back \
                 from {}; the values found were: {}",
                self.label,
                self.record.display(),
                self.found
                    .iter()
                    .map(|(n, f)| match f {
                        Found::Global(v) | Found::AutoConf(v) => format!("{n}={v}"),
                        Found::NotAltered => format!("{n} (ALTER SYSTEM RESET)"),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_written_as_set_global_takes_them() {
        assert_eq!(mysql_value("innodb_io_capacity", "2000"), "2000");
        assert_eq!(mysql_value("innodb_adaptive_hash_index", "off"), "OFF");
        assert_eq!(
            mysql_value("innodb_buffer_pool_size", "512M"),
            (512u64 << 20).to_string()
        );
        assert_eq!(mysql_value("innodb_flush_method", "O_DIRECT"), "'O_DIRECT'");
        assert_eq!(mysql_value("x", "it's"), "'it''s'");
        assert!(sql_name("innodb-io-capacity").is_ok_and(|n| n == "innodb_io_capacity"));
        assert!(sql_name("x; DROP TABLE t").is_err());
    }

    #[test]
    fn a_target_never_holds_a_password() {
        let err = RunningServer::parse("mysql://u:secret@db1:3306/bench", None).unwrap_err();
        assert!(
            err.contains("target holds a password") && !err.contains("secret"),
            "{err}"
        );
        let r = RunningServer::parse("mysql://u@db1:3307/bench", None).unwrap();
        assert_eq!((r.endpoint.as_str(), r.family), ("db1:3307", Family::Mysql));
        assert!(RunningServer::parse("sandbox:x", None).unwrap_err().contains("id = "));
    }
}
