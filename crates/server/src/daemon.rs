//! The server programs as dbperf drives them, for the MySQL family: initializing a datadir
//! (`mariadb-install-db`, `mysqld --initialize-insecure`, or for MySQL 5.6 a copy of the
//! package's initialised datadir), spawning the server detached
//! (as the sandbox's server account when dbperf is root, never as root), waiting until it
//! answers on its socket, locking the admin account down, and running admin SQL as root
//! over that socket. Where the programs are is [`Binaries`] (found by `dist.rs`).
//!
//! The admin account: a fresh datadir has `root@localhost` (and on MariaDB more root and
//! anonymous accounts) without a password. The first start, with networking off, gives
//! `root@localhost` a generated password, kept only in the sandbox's `admin.cnf`
//! (`credentials.rs`), and drops every other root, anonymous and `mysql` account, so that no
//! local user can log in as an administrator over TCP. The benchmark account `sb` gets its
//! own generated password (`bench.cnf`) and only the privileges of its database:
//! `ALL PRIVILEGES ON sbtest.*`, nothing global (no FILE, PROCESS, SUPER or SET GLOBAL);
//! telemetry and `--settle` log in as root. Passwords reach the server as
//! `mysql_native_password` hashes, never in clear.
//!
//! Admin SQL goes through Debian's `mariadb` client for every product (it logs in to MySQL 8
//! with mysql_native_password) rather than a driver, so that this code is synchronous and safe
//! to call from inside a tokio runtime (for example a `#[tokio::test]`). The SQL goes in on
//! the client's standard input, never its command line, so a password in it stays out of the
//! process list.

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::account::ServerAccount;
use super::credentials::{self, Secret};
use super::home::remove_if_exists;
use super::process::{self, tail};
use super::versions::{DatadirInit, ServerSpec, Version};
use super::{ServerError, BENCH_DATABASE, BENCH_USER};

const LOG_TAIL_LINES: usize = 30;

/// Absolute paths of the programs dbperf runs for one known server version.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    pub product: dbperf_driver::target::Product,
    /// The version entry, for what differs between versions (initialisation, account SQL).
    pub spec: &'static ServerSpec,
    /// `mariadbd`, `mysqld` or `postgres`.
    pub server: PathBuf,
    /// `mariadb-install-db` (MariaDB; MySQL initializes with `mysqld --initialize-insecure`),
    /// or `initdb` (PostgreSQL).
    pub install_db: Option<PathBuf>,
    /// The initialised datadir a fresh sandbox copies (MySQL 5.6).
    pub datadir_template: Option<PathBuf>,
    /// Debian's `mariadb` client, for MySQL-family admin SQL; for PostgreSQL the `postgres`
    /// binary again (its admin SQL goes through tokio-postgres, see `postgres.rs`).
    pub client: PathBuf,
    /// `--basedir` of a server unpacked under `$DBPERF_HOME/dist`; `None` for system packages.
    pub basedir: Option<PathBuf>,
    /// The account the server programs run as; `None` runs them as the invoking user (who
    /// is not root).
    pub run_as: Option<ServerAccount>,
}

impl Binaries {
    /// A command for one of the server programs, as the server account when there is one.
    pub(crate) fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        if let Some(account) = &self.run_as {
            account.apply(&mut cmd);
        }
        cmd
    }
}

/// Initializes `datadir` (which must not exist yet) with the product's tool; output goes to `log`.
/// `tmpdir` must be private: a bootstrapping server deletes every `#sql*` file in its tmpdir,
/// so parallel installs sharing /tmp break each other ("Unknown table 'mysql.tmp_user_sys'").
pub(crate) fn install_datadir(bins: &Binaries, datadir: &Path, tmpdir: &Path, log: &Path) -> Result<(), ServerError> {
    if bins.spec.datadir_init() == DatadirInit::Template {
        return copy_template(bins, datadir);
    }
    let kept = kept_install(bins);
    if let Some(kept) = kept.as_deref().filter(|k| k.join("mysql").is_dir()) {
        copy_tree(kept, datadir)?;
        if let Some(account) = &bins.run_as {
            account.chown_tree(datadir)?;
        }
        return Ok(());
    }
    let log_file = process::open_nofollow(log, process::Write::Truncate)
        .map_err(|e| ServerError::io("cannot create install log", log, e))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| ServerError::io("cannot reopen install log", log, e))?;
    let mut cmd = match &bins.install_db {
        Some(install_db) => {
            let mut cmd = bins.command(install_db);
            cmd.arg("--no-defaults");
            if let Some(basedir) = &bins.basedir {
                cmd.arg(format!("--basedir={}", basedir.display()));
            }
            if bins.product == dbperf_driver::target::Product::Mysql {
                // MySQL's own `mysql_install_db` (5.5, 5.6): it passes options it does not know
                // to the bootstrapping server, so only its own; root gets no password (locked
                // down by `secure_admin` on the first start).
                cmd.arg("--force");
            } else {
                cmd.arg("--auth-root-authentication-method=normal");
                if bins.spec.version >= Version::new(10, 5, 0) {
                    cmd.arg("--skip-test-db");
                } else {
                    // Before 10.5 its `resolveip` check of this host's name fails without --force.
                    cmd.arg("--force");
                }
            }
            cmd
        }
        None => {
            // MySQL: root@localhost with an empty password (locked down by `secure_admin` on
            // the first start), on the plugin our clients speak.
            let mut cmd = bins.command(&bins.server);
            cmd.arg("--no-defaults").arg("--initialize-insecure");
            if let Some(basedir) = &bins.basedir {
                cmd.arg(format!("--basedir={}", basedir.display()));
            }
            cmd.arg("--default-authentication-plugin=mysql_native_password");
            cmd
        }
    };
    cmd.arg(format!("--datadir={}", datadir.display()))
        .arg(format!("--tmpdir={}", tmpdir.display()));
    let program = bins.install_db.as_ref().unwrap_or(&bins.server);
    let status = cmd
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .status()
        .map_err(|e| ServerError::io("cannot run", program, e))?;
    if status.success() {
        if let Some(kept) = kept {
            keep_install(datadir, &kept);
        }
        return Ok(());
    }
    Err(ServerError::InstallFailed {
        program: program
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        status: status.to_string(),
        datadir: datadir.to_owned(),
        log: log.to_owned(),
        output: install_failure_lines(log),
    })
}

/// Where a server whose `mysql_install_db` is slow (MariaDB before 10.5: about 10 s, most of it
/// filling the help tables) keeps its first fresh datadir, to copy for later sandboxes: the
/// unpacked basedir of a known server version, which never changes. `None` for the others.
fn kept_install(bins: &Binaries) -> Option<PathBuf> {
    let slow =
        bins.spec.product == dbperf_driver::target::Product::Mariadb && bins.spec.version < Version::new(10, 5, 0);
    slow.then(|| bins.basedir.as_ref().map(|b| b.join(super::dist::TEMPLATE_DIR)))
        .flatten()
}

/// Copies a datadir `mysql_install_db` just made (and no server has started on) to `kept`,
/// through a temporary directory renamed into place. Best effort: without the rights to write
/// there, or if another install got there first, later sandboxes run the installer again.
fn keep_install(datadir: &Path, kept: &Path) {
    // Unique per call: two sandboxes of one process may be initialised at once.
    let tmp = kept.with_extension(format!("tmp-{}-{:016x}", std::process::id(), rand::random::<u64>()));
    if copy_tree(datadir, &tmp).is_err() || std::fs::rename(&tmp, kept).is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
}

/// A fresh datadir as a copy of the package's initialised one (MySQL 5.6), handed to the
/// server account when there is one. The copy's root and anonymous accounts have no password:
/// the first start locks them down as for every other server (`secure_admin`).
fn copy_template(bins: &Binaries, datadir: &Path) -> Result<(), ServerError> {
    let template = bins
        .datadir_template
        .as_deref()
        .ok_or_else(|| ServerError::InstallStep {
            step: "initialise datadir",
            output: format!(
                "the install record of {} names no initial datadir: run `dbperf server install {}` again",
                bins.spec.id, bins.spec.id
            ),
        })?;
    copy_tree(template, datadir)?;
    // A shipped datadir a server has run on holds that server's UUID: each sandbox makes its own.
    remove_if_exists(&datadir.join("auto.cnf"))?;
    if let Some(account) = &bins.run_as {
        account.chown_tree(datadir)?;
    }
    Ok(())
}

/// Copies a directory tree of regular files (owner read/write; directories 0750).
fn copy_tree(from: &Path, to: &Path) -> Result<(), ServerError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o750)
        .create(to)
        .map_err(|e| ServerError::io("cannot create", to, e))?;
    let entries = std::fs::read_dir(from).map_err(|e| ServerError::io("cannot read", from, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| ServerError::io("cannot read", from, e))?;
        let (src, dest) = (entry.path(), to.join(entry.file_name()));
        let kind = entry
            .file_type()
            .map_err(|e| ServerError::io("cannot inspect", &src, e))?;
        if kind.is_dir() {
            copy_tree(&src, &dest)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dest).map_err(|e| ServerError::io("cannot copy", &src, e))?;
            std::fs::set_permissions(&dest, std::os::unix::fs::PermissionsExt::from_mode(0o640))
                .map_err(|e| ServerError::io("cannot chmod", &dest, e))?;
        }
    }
    Ok(())
}

/// The lines before install-db's generic "Installation of system tables failed!" advice,
/// which is where the server's actual complaint is.
fn install_failure_lines(log: &Path) -> String {
    let text = match std::fs::read(log) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => return format!("(cannot read {}: {e})", log.display()),
    };
    let before = text
        .split("Installation of system tables failed!")
        .next()
        .unwrap_or_default();
    let lines: Vec<&str> = before.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Starts `mariadbd|mysqld --defaults-file=my_cnf` in its own session, detached from our terminal.
/// Its stdout and stderr are appended to `error_log` (errors before log-error opens land there).
/// How the server process is launched beyond its my.cnf.
#[derive(Debug, Default)]
pub(crate) struct Launch {
    /// A library for `LD_PRELOAD` (jemalloc).
    pub preload: Option<PathBuf>,
    /// CPUs the server is restricted to before it runs, so every thread inherits them.
    pub cpus: Option<Vec<usize>>,
}

/// Where Debian's libjemalloc2 puts the library.
const JEMALLOC_PATHS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
    "/usr/lib/libjemalloc.so.2",
];

/// The jemalloc shared library, or how to install it.
pub(crate) fn jemalloc_path() -> Result<PathBuf, ServerError> {
    JEMALLOC_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or(ServerError::MissingJemalloc)
}

pub(crate) fn spawn_server(
    bins: &Binaries,
    my_cnf: &Path,
    error_log: &Path,
    launch: &Launch,
) -> Result<Child, ServerError> {
    let mut cmd = bins.command(&bins.server);
    // --defaults-file must be the first argument.
    cmd.arg(format!("--defaults-file={}", my_cnf.display()));
    process::spawn_detached(cmd, error_log, launch, |e| {
        ServerError::io("cannot start", &bins.server, e)
    })
}

/// What [`wait_ready`] needs to know about the server it waits for.
pub(crate) struct Pending<'a> {
    pub name: &'a str,
    pub socket: &'a Path,
    pub error_log: &'a Path,
    /// Size of the error log before this start, so errors show only this start's lines.
    pub log_offset: u64,
    pub timeout: Duration,
    /// Whether an interrupt ends the wait ([`super::StartRequest::interruptible`]).
    pub interruptible: bool,
}

impl Pending<'_> {
    /// [`ServerError::Interrupted`] once the process got SIGINT or SIGTERM (the handler of
    /// `server start` sets the flag): the wait ends and the caller stops the server.
    pub(crate) fn check_interrupt(&self) -> Result<(), ServerError> {
        if self.interruptible && dbperf_core::interrupt::interrupted() {
            return Err(ServerError::Interrupted {
                name: self.name.to_owned(),
            });
        }
        Ok(())
    }
}

/// Waits until the server accepts a socket connection and answers a login as root (with
/// the sandbox's admin password, or refusing it: either way the server is up).
pub(crate) fn wait_ready(bins: &Binaries, child: &mut Child, p: &Pending<'_>, admin: &Path) -> Result<(), ServerError> {
    let started = Instant::now();
    loop {
        p.check_interrupt()?;
        if let Ok(Some(status)) = child.try_wait() {
            process::forget(child.id() as i32);
            return Err(ServerError::StartFailed {
                name: p.name.to_owned(),
                status: status.to_string(),
                log: p.error_log.to_owned(),
                log_tail: tail(p.error_log, p.log_offset, LOG_TAIL_LINES),
            });
        }
        if UnixStream::connect(p.socket).is_ok() {
            match admin_sql_as(bins, p.socket, Login::for_file(admin), "SELECT 1") {
                Ok(_) => return Ok(()),
                Err(e) if access_denied(&e) => return Ok(()),
                Err(_) => {}
            }
        }
        if started.elapsed() >= p.timeout {
            return Err(ServerError::StartTimeout {
                name: p.name.to_owned(),
                pid: child.id(),
                socket: p.socket.to_owned(),
                waited: p.timeout,
                log: p.error_log.to_owned(),
                log_tail: tail(p.error_log, p.log_offset, LOG_TAIL_LINES),
            });
        }
        sleep(Duration::from_millis(50));
    }
}

/// How the admin client logs in as root.
#[derive(Clone, Copy)]
enum Login<'a> {
    /// With the `[client]` file holding the generated password.
    File(&'a Path),
    /// Without a password (a datadir that was never locked down).
    NoPassword,
}

impl<'a> Login<'a> {
    fn for_file(path: &'a Path) -> Login<'a> {
        if path.is_file() {
            Login::File(path)
        } else {
            Login::NoPassword
        }
    }
}

/// True if the client's error says the login was refused (1045, or 1698 for a socket
/// account): the server is up and checks passwords.
fn access_denied(stderr: &str) -> bool {
    stderr.contains("1045") || stderr.contains("1698")
}

/// Lists, as `DROP USER` statements, every root account but `root@localhost`, every
/// anonymous account and MariaDB's `mysql@localhost`.
const LIST_EXTRA_ADMINS: &str = "SELECT CONCAT('DROP USER ''', User, '''@''', Host, ''';') FROM mysql.user \
     WHERE User IN ('root', '', 'mysql') AND NOT (User = 'root' AND Host = 'localhost')";

/// Gives `root@localhost` a generated password kept in `admin` (0600), unless the file's
/// password already works, and drops every other root, anonymous and `mysql` account.
pub(crate) fn secure_admin(bins: &Binaries, socket: &Path, admin: &Path) -> Result<(), ServerError> {
    let fail = |stderr: String| ServerError::AdminSql {
        action: "locking the admin account down",
        socket: socket.to_owned(),
        stderr,
    };
    let works = admin.is_file() && admin_sql_as(bins, socket, Login::File(admin), "SELECT 1").is_ok();
    if !works {
        // Root must still have no password: a sandbox whose password is lost stays locked.
        admin_sql_as(bins, socket, Login::NoPassword, "SELECT 1").map_err(|e| {
            fail(format!(
                "root logs in neither with the password in {} nor without one ({e}); the admin \
                 password of this sandbox is lost: remove the sandbox directory and start it again",
                admin.display()
            ))
        })?;
        let password = Secret::generate();
        credentials::write(admin, credentials::Login::Admin, Some(socket), &password)?;
        admin_sql_as(
            bins,
            socket,
            Login::NoPassword,
            &set_password(bins.spec, "root", "localhost", &password),
        )
        .map_err(fail)?;
    }
    let listed = admin_sql_as(bins, socket, Login::File(admin), LIST_EXTRA_ADMINS).map_err(fail)?;
    if !listed.trim().is_empty() {
        admin_sql_as(bins, socket, Login::File(admin), &listed).map_err(fail)?;
    }
    {
        // Before MariaDB 10.5 and MySQL 5.7 a fresh datadir grants every account (User '') all
        // on the `test` and `test_%` databases; such rows outlive the anonymous accounts.
        let wildcard = admin_sql_as(
            bins,
            socket,
            Login::File(admin),
            "SELECT COUNT(*) FROM mysql.db WHERE User = ''",
        )
        .map_err(fail)?;
        if wildcard.trim() != "0" {
            admin_sql_as(
                bins,
                socket,
                Login::File(admin),
                "DELETE FROM mysql.db WHERE User = ''; FLUSH PRIVILEGES",
            )
            .map_err(fail)?;
        }
    }
    Ok(())
}

/// The statement that gives `user@host` `password`, as the version spells it, with the
/// password as its `mysql_native_password` hash.
fn set_password(spec: &ServerSpec, user: &str, host: &str, password: &Secret) -> String {
    let hash = credentials::native_password_hash(password);
    match spec.product {
        _ if !spec.has_alter_user() => format!("SET PASSWORD FOR '{user}'@'{host}' = '{hash}'"),
        dbperf_driver::target::Product::Mysql => {
            format!("ALTER USER '{user}'@'{host}' IDENTIFIED WITH mysql_native_password AS '{hash}'")
        }
        _ => format!("ALTER USER '{user}'@'{host}' IDENTIFIED BY PASSWORD '{hash}'"),
    }
}

/// The statement that creates `user@host` with `password` unless it exists.
fn create_user(spec: &ServerSpec, user: &str, host: &str, password: &Secret) -> String {
    let hash = credentials::native_password_hash(password);
    match spec.product {
        // Before MySQL 5.7 / MariaDB 10.2 there is no CREATE USER IF NOT EXISTS; GRANT USAGE
        // ... IDENTIFIED BY PASSWORD creates the account or resets its password.
        _ if !spec.has_alter_user() => {
            format!("GRANT USAGE ON *.* TO '{user}'@'{host}' IDENTIFIED BY PASSWORD '{hash}'")
        }
        dbperf_driver::target::Product::Mysql => {
            format!("CREATE USER IF NOT EXISTS '{user}'@'{host}' IDENTIFIED WITH mysql_native_password AS '{hash}'")
        }
        _ => format!("CREATE USER IF NOT EXISTS '{user}'@'{host}' IDENTIFIED BY PASSWORD '{hash}'"),
    }
}

/// The hosts the benchmark account is always created for: the socket and loopback TCP.
const BENCH_HOSTS: [&str; 2] = ["localhost", "127.0.0.1"];

/// Creates (or brings up to date) the benchmark account and database and returns the server
/// version: `sb` gets `password` and, of every privilege it had, only `ALL ON sbtest.*`
/// (idempotent; an account of an older sandbox with `sb`/`sb` and global privileges is
/// upgraded).
pub(crate) fn provision(
    bins: &Binaries,
    socket: &Path,
    admin: &Path,
    password: &Secret,
    clients: &[std::net::IpAddr],
) -> Result<String, ServerError> {
    let (u, db) = (BENCH_USER, BENCH_DATABASE);
    let fail = |stderr| ServerError::AdminSql {
        action: "creating the benchmark user `sb` and database `sbtest`",
        socket: socket.to_owned(),
        stderr,
    };
    let clients: Vec<String> = clients.iter().map(ToString::to_string).collect();
    let hosts: Vec<&str> = BENCH_HOSTS
        .iter()
        .copied()
        .chain(clients.iter().map(String::as_str))
        .collect();
    // Clients of an earlier start that this one does not allow lose their account.
    let existing = admin_sql_as(
        bins,
        socket,
        Login::File(admin),
        &format!("SELECT Host FROM mysql.user WHERE User = '{u}'"),
    )
    .map_err(fail)?;
    let mut sql = format!("CREATE DATABASE IF NOT EXISTS `{db}`;");
    for stale in existing
        .lines()
        .map(str::trim)
        .filter(|h| !h.is_empty() && !hosts.contains(h))
    {
        sql.push_str(&format!("DROP USER '{u}'@'{}';", stale.replace('\'', "")));
    }
    for host in &hosts {
        sql.push_str(&create_user(bins.spec, u, host, password));
        sql.push(';');
        if bins.spec.has_alter_user() {
            sql.push_str(&set_password(bins.spec, u, host, password));
            sql.push(';');
        }
    }
    let accounts = hosts
        .iter()
        .map(|h| format!("'{u}'@'{h}'"))
        .collect::<Vec<_>>()
        .join(", ");
    sql.push_str(&format!(
        "REVOKE ALL PRIVILEGES, GRANT OPTION FROM {accounts};\
         GRANT ALL PRIVILEGES ON `{db}`.* TO {accounts};\
         SELECT VERSION();"
    ));
    admin_sql_as(bins, socket, Login::File(admin), &sql)
        .map(|out| out.trim().to_owned())
        .map_err(fail)
}

/// Runs SQL as root over the socket; returns stdout (batch mode, no column names) or stderr.
/// The SQL goes through standard input.
fn admin_sql_as(bins: &Binaries, socket: &Path, login: Login<'_>, sql: &str) -> Result<String, String> {
    let mut cmd = Command::new(&bins.client);
    match login {
        Login::File(path) => cmd.arg(format!("--defaults-file={}", path.display())),
        Login::NoPassword => cmd.arg("--no-defaults").arg("--user=root"),
    };
    let mut child = cmd
        .arg(format!("--socket={}", socket.display()))
        .args(["--protocol=socket", "--batch", "--skip-column-names"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bins.client.display()))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // A client that dies early closes its end; its stderr says why.
    let _ = stdin.write_all(sql.as_bytes()).and_then(|()| stdin.write_all(b";\n"));
    drop(stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| format!("cannot run {}: {e}", bins.client.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}
