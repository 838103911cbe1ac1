//! Where `dbperf pgbench` connects, as pgbench (libpq) finds it: `-h/--host` (a host, or a
//! socket directory when it starts with `/`), `-p/--port`, `-U/--username`, `-d/--dbname` (or
//! the database named after the command, pgbench's last word), the `PGHOST`, `PGPORT`,
//! `PGUSER` and `PGDATABASE` environment, and the password from `PGPASSWORD` or the password
//! file (`PGPASSFILE`, else `~/.pgpass`), composed with `--target` ([`PgLogin::target`]).
//! A password is never taken from the command line, and never printed.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use clap::Args;

use super::args::TargetUrl;
use dbperf_driver::target::Family;
use dbperf_driver::Target;

/// The socket directories looked in when no host is given: Debian's, then PostgreSQL's own.
pub const SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// pgbench's connection flags.
#[derive(Debug, Clone, Default, Args)]
pub struct PgLogin {
    /// Database server host or socket directory (a path starting with /), as pgbench's -h. Without --target, -h and PGHOST: the local socket (.s.PGSQL.PORT in /var/run/postgresql or /tmp), else localhost.
    #[arg(short = 'h', long = "host", value_name = "HOSTNAME", help_heading = "Connection")]
    pub host: Option<String>,
    /// Database server port, as pgbench's -p [default: PGPORT, else 5432].
    #[arg(short = 'p', long = "port", value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..), help_heading = "Connection")]
    pub port: Option<u16>,
    /// Database user, as pgbench's -U [default: PGUSER, else the OS user].
    #[arg(short = 'U', long = "username", value_name = "USERNAME", help_heading = "Connection")]
    pub username: Option<String>,
    /// Database name, as pgbench's last word (pgbench's own -d is --debug, which dbperf does not have) [default: PGDATABASE, else the user].
    /// `-d` with no value (followed by an option or nothing) is pgbench's `-d`, `--debug`.
    #[arg(
        short = 'd',
        long = "dbname",
        value_name = "DBNAME",
        num_args = 0..=1,
        default_missing_value = "",
        help_heading = "Connection"
    )]
    pub dbname: Option<String>,
}

/// What the environment says of the login, read once so that [`PgLogin::compose`] is a
/// function of its inputs.
#[derive(Debug, Clone, Default)]
pub struct PgEnv {
    /// `PGHOST`
    pub host: Option<String>,
    /// `PGPORT`
    pub port: Option<String>,
    /// `PGUSER`
    pub user: Option<String>,
    /// `PGDATABASE`
    pub database: Option<String>,
    /// `PGPASSWORD`
    pub password: Option<String>,
    /// `PGPASSFILE`, else `$HOME/.pgpass`.
    pub passfile: Option<PathBuf>,
    /// The user this process runs as (libpq's default user), if it has a name.
    pub os_user: Option<String>,
    /// Where to look for the local socket `.s.PGSQL.PORT` when no host is given.
    pub socket_dirs: Vec<PathBuf>,
}

impl PgEnv {
    /// The process's environment.
    pub fn from_process() -> PgEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        PgEnv {
            host: var("PGHOST"),
            port: var("PGPORT"),
            user: var("PGUSER"),
            database: var("PGDATABASE"),
            password: var("PGPASSWORD"),
            passfile: var("PGPASSFILE")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pgpass"))),
            os_user: os_user(),
            socket_dirs: SOCKET_DIRS.iter().map(PathBuf::from).collect(),
        }
    }
}

/// The name of the effective user, as libpq takes it (not `$USER`).
fn os_user() -> Option<String> {
    let mut buf = vec![0_u8; 16 * 1024];
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is to a live local of the size given; getpwuid_r writes the
    // strings into `buf` and `found` is null or `&mut pwd`.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::geteuid(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name points into `buf`, NUL-terminated by getpwuid_r.
    let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
    Some(name.to_string_lossy().into_owned())
}

impl PgLogin {
    /// The flags given, by name, for messages.
    fn given(&self) -> Vec<&'static str> {
        [
            (self.host.is_some(), "-h"),
            (self.port.is_some(), "-p"),
            (self.username.is_some(), "-U"),
            (self.dbname.is_some(), "-d"),
        ]
        .into_iter()
        .filter_map(|(g, name)| g.then_some(name))
        .collect()
    }

    /// Where to connect: `url` (`--target`, `--target-file` or `DBPERF_TARGET`) with the parts
    /// -h/-p/-U/-d give replaced, or, without a target, pgbench's defaults (see
    /// [`PgLogin::compose`]).
    pub fn target(&self, url: &TargetUrl) -> Result<Target> {
        let given = url.url()?;
        match given.as_deref() {
            Some(u) if u.starts_with("sandbox:") => {
                let flags = self.given();
                if !flags.is_empty() {
                    bail!(
                        "{} and --target {u} both say where to connect (a sandbox's login is its own): \
                         drop {}, or give a postgres:// --target instead of the sandbox",
                        flags.join("/"),
                        flags.join("/")
                    );
                }
                url.resolve()?.ok_or_else(|| anyhow!("--target {u}: no such sandbox"))
            }
            _ => {
                let env = PgEnv::from_process();
                let target = self.compose(given.as_deref(), &env)?;
                let nothing_given = given.is_none()
                    && self.given().is_empty()
                    && [&env.host, &env.port, &env.user, &env.database]
                        .iter()
                        .all(|v| v.is_none());
                if nothing_given {
                    eprintln!(
                        "no --target, -h/-p/-U/-d or PGHOST/PGPORT/PGUSER/PGDATABASE: connecting as pgbench would, to {} as {}, database {}",
                        target.endpoint(),
                        target.user,
                        target.database
                    );
                }
                Ok(target)
            }
        }
    }

    /// The target from `url` (a postgres:// or mysql:// URL, if any) and the flags, in
    /// `env`. With a URL, each flag given replaces that part of it, and the rest is the URL's.
    /// Without one, each part is the flag's, else the environment's (`PGHOST`, `PGPORT`,
    /// `PGUSER`, `PGDATABASE`), else pgbench's default: the local socket (else localhost),
    /// 5432, the OS user, a database named as the user. A password missing from the URL is
    /// `PGPASSWORD`'s, else the password file's line for this host, port, database and user.
    pub fn compose(&self, url: Option<&str>, env: &PgEnv) -> Result<Target> {
        let mut target = match url {
            Some(u) => {
                let t = Target::parse(u)?;
                if t.family != Family::Postgres && !self.given().is_empty() {
                    bail!(
                        "{} are PostgreSQL's (pgbench's) connection flags and the target is {}: drop them, \
                         or give a postgres:// --target",
                        self.given().join("/"),
                        t.redacted()
                    );
                }
                t
            }
            None => self.defaults(env)?,
        };
        if url.is_some() {
            if let Some(h) = &self.host {
                set_host(&mut target, h, "-h")?;
            }
            if let Some(p) = self.port {
                target.port = p;
            }
            if let Some(u) = &self.username {
                target.user = u.clone();
            }
            if let Some(d) = &self.dbname {
                target.database = d.clone();
            }
        }
        if target.family == Family::Postgres && target.password.is_empty() {
            target.password = match &env.password {
                Some(p) => p.clone(),
                None => env
                    .passfile
                    .as_deref()
                    .and_then(|f| passfile_password(f, &target))
                    .unwrap_or_default(),
            };
        }
        Ok(target)
    }

    /// pgbench's target when no URL is given.
    fn defaults(&self, env: &PgEnv) -> Result<Target> {
        let port = match (self.port, &env.port) {
            (Some(p), _) => p,
            (None, Some(p)) => p.trim().parse().ok().filter(|&p: &u16| p > 0).ok_or_else(|| {
                anyhow!(
                    "PGPORT={p:?} is not a port number: set it to the server's port (1 to 65535) or unset it (5432)"
                )
            })?,
            (None, None) => Family::Postgres.default_port(),
        };
        let user = match (&self.username, &env.user, &env.os_user) {
            (Some(u), _, _) | (None, Some(u), _) | (None, None, Some(u)) => u.clone(),
            (None, None, None) => {
                bail!("no database user: this process's user id has no name; give -U USERNAME (or set PGUSER)")
            }
        };
        let mut target = Target {
            family: Family::Postgres,
            host: "localhost".into(),
            port,
            database: self
                .dbname
                .clone()
                .or_else(|| env.database.clone())
                .unwrap_or_else(|| user.clone()),
            user,
            password: String::new(),
            socket: None,
        };
        match (&self.host, &env.host) {
            (Some(h), _) => set_host(&mut target, h, "-h")?,
            (None, Some(h)) => set_host(&mut target, h, "PGHOST")?,
            (None, None) => {
                target.socket = env
                    .socket_dirs
                    .iter()
                    .find(|d| d.join(format!(".s.PGSQL.{port}")).exists())
                    .map(|d| d.display().to_string());
            }
        }
        Ok(target)
    }
}

/// `-h HOST` (or `PGHOST`, named `from`): a host name or address, or a socket directory.
fn set_host(target: &mut Target, host: &str, from: &str) -> Result<()> {
    if host.is_empty() {
        bail!("{from} is empty: give a host name, an address or a socket directory (/var/run/postgresql)");
    }
    if host.contains(',') {
        bail!("{from} {host}: dbperf connects to one host; give one (pgbench's list of hosts is libpq's failover, not supported)");
    }
    if host.starts_with('/') {
        target.socket = Some(host.to_string());
        target.host = "localhost".into();
    } else {
        target.socket = None;
        target.host = host.to_string();
    }
    Ok(())
}

/// The password of the first line of the password file `file` that matches `target`
/// (`hostname:port:database:username:password`, `*` matching anything, `\` escaping `:` and
/// `\`; a socket connection matches `localhost`). A file that others may read is skipped
/// with a warning, as libpq does.
fn passfile_password(file: &Path, target: &Target) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        eprintln!(
            "WARNING: password file {} is readable by others and is not used: chmod 600 {}",
            file.display(),
            file.display()
        );
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let host = if target.socket.is_some() {
        "localhost"
    } else {
        target.host.as_str()
    };
    let port = target.port.to_string();
    let want = [host, port.as_str(), target.database.as_str(), target.user.as_str()];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(passfile_fields)
        .find(|f| f[..4].iter().zip(want).all(|(f, w)| f == "*" || f == w))
        .map(|f| f[4].clone())
}

/// A password-file line's five fields, unescaped; `None` for a line with fewer.
fn passfile_fields(line: &str) -> Option<[String; 5]> {
    let mut fields: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => fields.last_mut()?.push(chars.next().unwrap_or('\\')),
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    fields.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn login(h: Option<&str>, p: Option<u16>, u: Option<&str>, d: Option<&str>) -> PgLogin {
        PgLogin {
            host: h.map(str::to_owned),
            port: p,
            username: u.map(str::to_owned),
            dbname: d.map(str::to_owned),
        }
    }

    fn bare() -> PgEnv {
        PgEnv {
            os_user: Some("alice".into()),
            ..PgEnv::default()
        }
    }

    #[test]
    fn without_a_target_the_flags_then_the_environment_then_pgbenchs_defaults() {
        let t = login(Some("127.0.0.1"), Some(5544), Some("sb"), Some("sbtest"))
            .compose(None, &bare())
            .unwrap();
        assert_eq!(t.redacted(), "postgres://sb:***@127.0.0.1:5544/sbtest");
        // Nothing given: the OS user, a database of its name, 5432, localhost (no socket here).
        let t = PgLogin::default().compose(None, &bare()).unwrap();
        assert_eq!(t.redacted(), "postgres://alice:***@localhost:5432/alice");
        let env = PgEnv {
            host: Some("db.example".into()),
            port: Some("6543".into()),
            user: Some("bob".into()),
            database: Some("bench".into()),
            password: Some("pw".into()),
            ..bare()
        };
        let t = PgLogin::default().compose(None, &env).unwrap();
        assert_eq!(t.redacted(), "postgres://bob:***@db.example:6543/bench");
        assert_eq!(t.password, "pw");
        // A flag beats its variable.
        let t = login(None, Some(1), None, Some("other")).compose(None, &env).unwrap();
        assert_eq!((t.port, t.database.as_str()), (1, "other"));
        // A socket directory.
        let t = login(Some("/run/pg"), None, None, None).compose(None, &bare()).unwrap();
        assert_eq!(t.socket.as_deref(), Some("/run/pg"));
        // The local socket, when one is there.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".s.PGSQL.5432"), "").unwrap();
        let env = PgEnv {
            socket_dirs: vec!["/nonexistent".into(), dir.path().to_path_buf()],
            ..bare()
        };
        let t = PgLogin::default().compose(None, &env).unwrap();
        assert_eq!(t.socket, Some(dir.path().display().to_string()));
    }

    #[test]
    fn flags_replace_the_parts_of_a_target_url() {
        let url = "postgres://sb:secret@10.0.0.1:5432/sbtest";
        let t = login(Some("127.0.0.1"), Some(6000), None, Some("other"))
            .compose(Some(url), &bare())
            .unwrap();
        assert_eq!(t.redacted(), "postgres://sb:***@127.0.0.1:6000/other");
        assert_eq!(t.password, "secret", "the URL's password stays");
        // -h with a TCP host leaves the URL's socket directory.
        let t = login(Some("db"), None, None, None)
            .compose(Some("postgres://sb@x/db?host=/run/pg"), &bare())
            .unwrap();
        assert_eq!((t.host.as_str(), t.socket.as_deref()), ("db", None));
        // The environment's parts do not override a URL; its password fills a missing one.
        let env = PgEnv {
            host: Some("elsewhere".into()),
            password: Some("pw".into()),
            ..bare()
        };
        let t = PgLogin::default().compose(Some("postgres://sb@h/db"), &env).unwrap();
        assert_eq!((t.host.as_str(), t.password.as_str()), ("h", "pw"));
        let e = login(Some("h"), None, None, None)
            .compose(Some("mysql://root:pw@h/db"), &bare())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("-h") && e.contains("postgres://") && !e.contains("pw@"),
            "{e}"
        );
    }

    #[test]
    fn bad_logins_are_named_with_their_fix() {
        let e = |l: PgLogin, env: PgEnv| l.compose(None, &env).unwrap_err().to_string();
        let env = PgEnv {
            port: Some("54x".into()),
            ..bare()
        };
        assert!(e(PgLogin::default(), env).contains("PGPORT=\"54x\""));
        assert!(e(login(Some("a,b"), None, None, None), bare()).contains("one host"));
        assert!(e(login(Some(""), None, None, None), bare()).contains("-h is empty"));
        let nameless = PgEnv {
            os_user: None,
            ..bare()
        };
        assert!(e(PgLogin::default(), nameless).contains("-U USERNAME"));
    }

    #[test]
    fn the_password_file_matches_host_port_database_and_user() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\nother:*:*:*:no\n127.0.0.1:5544:sbtest:sb:s\\:e\\\\cret\n*:*:*:sb:fallback\nshort:line\n",
        )
        .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let env = PgEnv {
            passfile: Some(file.clone()),
            ..bare()
        };
        let pw = |l: PgLogin| l.compose(None, &env).unwrap().password;
        assert_eq!(
            pw(login(Some("127.0.0.1"), Some(5544), Some("sb"), Some("sbtest"))),
            "s:e\\cret"
        );
        assert_eq!(pw(login(Some("127.0.0.1"), Some(1), Some("sb"), None)), "fallback");
        assert_eq!(pw(login(Some("127.0.0.1"), Some(1), Some("x"), None)), "");
        // PGPASSWORD comes first.
        let env = PgEnv {
            password: Some("env".into()),
            ..env
        };
        assert_eq!(
            login(None, None, Some("sb"), None)
                .compose(None, &env)
                .unwrap()
                .password,
            "env"
        );
        // A file others may read is not used.
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let env = PgEnv { password: None, ..env };
        assert_eq!(
            login(None, None, Some("sb"), None)
                .compose(None, &env)
                .unwrap()
                .password,
            ""
        );
    }
}
