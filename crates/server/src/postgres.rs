//! PostgreSQL sandboxes: the programs (`initdb`, `postgres`) as dbperf drives them, the
//! parameter list of one binary (`postgres --describe-config`), `postgresql.conf` rendering,
//! and admin SQL over the sandbox's unix socket.
//!
//! PostgreSQL refuses to run as root, and a sandbox never does: when dbperf is root, `initdb`
//! and `postgres` run as the sandbox's server account (`account.rs`), which owns the
//! datadir; otherwise as the invoking user. The socket directory is the sandbox directory
//! (mode 0700), so the superuser's `trust` login over the socket is open to its owner only;
//! over TCP every role needs its password, and the superuser has none.
//!
//! The benchmark role `sb` is not a superuser (so it cannot read or write the server's files
//! with `COPY ... TO/FROM 'file'`): it owns `sbtest` and may do there what a benchmark does
//! (create, load, index and drop its tables), nothing more: no CREATEDB, no `pg_monitor`, no
//! `pg_checkpoint`. Telemetry and `--settle`'s `CHECKPOINT` log in as the superuser over the
//! owner-only socket ([`crate::admin_target`]). Its password is generated per sandbox
//! (`credentials.rs`) and reaches the server as a SCRAM verifier, never in clear.
//!
//! A fresh datadir is safe on TCP from its first start: `initdb` gives no role a password and
//! TCP logins need one (`scram-sha-256`), so only an older sandbox's datadir, whose `sb` had
//! the fixed password `sb`, is first started with TCP off (see `start.rs`).
//!
//! Admin SQL (readiness, the benchmark role) uses tokio-postgres as the superuser `postgres`
//! (trust over the socket), on a runtime of its own in a thread of its own, so these functions
//! are synchronous and safe to call from inside a tokio runtime (a `#[tokio::test]`).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::config::{Config, Network, Profile, Setting};
use super::credentials::{self, Secret};
use super::daemon::{Binaries, Launch, Pending};
use super::process::{self, tail};
use super::{ServerError, BENCH_DATABASE, BENCH_USER};

/// The port a socket-only sandbox uses: it only names the socket file `.s.PGSQL.5432`, which
/// lives in the sandbox's private directory, so it never collides with another server.
pub const SOCKET_ONLY_PORT: u16 = 5432;
/// The superuser `initdb` creates; it logs in over the socket without a password.
pub const SUPERUSER: &str = "postgres";
const LOG_TAIL_LINES: usize = 30;

/// Explains a failure to run a PostgreSQL program.
fn run_error(program: &Path, e: std::io::Error) -> ServerError {
    ServerError::io("cannot run", program, e)
}

/// `postgres --describe-config`: every parameter of this binary, lower case.
pub(crate) fn parameter_names(bins: &Binaries) -> Result<BTreeSet<String>, ServerError> {
    let out = bins
        .command(&bins.server)
        .arg("--describe-config")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| run_error(&bins.server, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let names = parse_describe_config(&text);
    if !out.status.success() || names.is_empty() {
        return Err(ServerError::OptionList {
            server: bins.server.clone(),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(names)
}

/// The first tab-separated column of `postgres --describe-config` output, lower case.
pub fn parse_describe_config(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| line.split('\t').next())
        .filter(|name| {
            !name.is_empty()
                && name.starts_with(|c: char| c.is_ascii_alphabetic())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        })
        .map(|name| name.to_ascii_lowercase())
        .collect()
}

/// The key as PostgreSQL compares it: lower case; `-` means `_` (as `postgres -c` takes it).
pub fn normalize_key(key: &str) -> String {
    key.to_ascii_lowercase().replace('-', "_")
}

/// `initdb` into `datadir` (which must not exist yet): superuser `postgres` with trust over the
/// socket, scram-sha-256 over TCP, UTF8 and the C locale. Output goes to `log`.
pub(crate) fn install_datadir(bins: &Binaries, datadir: &Path, log: &Path) -> Result<(), ServerError> {
    let initdb = bins
        .install_db
        .as_ref()
        .expect("PostgreSQL binaries always name initdb");
    let log_file = process::open_nofollow(log, process::Write::Truncate)
        .map_err(|e| ServerError::io("cannot create install log", log, e))?;
    let log_err = log_file
        .try_clone()
        .map_err(|e| ServerError::io("cannot reopen install log", log, e))?;
    let status = bins
        .command(initdb)
        .arg("-D")
        .arg(datadir)
        .args([
            "--username",
            SUPERUSER,
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
        ])
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .status()
        .map_err(|e| run_error(initdb, e))?;
    if status.success() {
        return Ok(());
    }
    let text = std::fs::read(log).map_or_else(|_| String::new(), |b| String::from_utf8_lossy(&b).into_owned());
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    Err(ServerError::InstallFailed {
        program: "initdb".into(),
        status: status.to_string(),
        datadir: datadir.to_owned(),
        log: log.to_owned(),
        output: lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n"),
    })
}

/// Starts `postgres -D DATADIR -c config_file=CONF` in its own session; stdout and stderr are
/// appended to `error_log` (the server logs to stderr). The config path on the command line is
/// how `process::is_our_server` recognises the postmaster.
pub(crate) fn spawn_server(
    bins: &Binaries,
    datadir: &Path,
    conf: &Path,
    error_log: &Path,
    launch: &Launch,
) -> Result<Child, ServerError> {
    let mut cmd = bins.command(&bins.server);
    cmd.arg("-D")
        .arg(datadir)
        .arg("-c")
        .arg(format!("config_file={}", conf.display()));
    process::spawn_detached(cmd, error_log, launch, |e| run_error(&bins.server, e))
}

/// Waits until the server answers `SELECT 1` as the superuser over its socket.
pub(crate) fn wait_ready(child: &mut Child, port: u16, p: &Pending<'_>) -> Result<(), ServerError> {
    let started = Instant::now();
    let socket_file = p.socket.join(format!(".s.PGSQL.{port}"));
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
        if socket_file.exists() && admin_sql(p.socket, port, &["SELECT 1"]).is_ok() {
            return Ok(());
        }
        if started.elapsed() >= p.timeout {
            return Err(ServerError::StartTimeout {
                name: p.name.to_owned(),
                pid: child.id(),
                socket: socket_file,
                waited: p.timeout,
                log: p.error_log.to_owned(),
                log_tail: tail(p.error_log, p.log_offset, LOG_TAIL_LINES),
            });
        }
        sleep(Duration::from_millis(100));
    }
}

/// Creates (or brings up to date) the benchmark role `sb` with `password` (as a SCRAM
/// verifier), not a superuser, without CREATEDB, `pg_monitor` or `pg_checkpoint` (an older
/// sandbox's role loses them), and database `sbtest` owned by it; returns
/// `SHOW server_version`.
pub(crate) fn provision(socket_dir: &Path, port: u16, password: &Secret) -> Result<String, ServerError> {
    let (u, db) = (BENCH_USER, BENCH_DATABASE);
    let fail = |stderr: String| ServerError::AdminSql {
        action: "creating the benchmark role `sb` and database `sbtest`",
        socket: socket_dir.to_owned(),
        stderr,
    };
    let role = format!(
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{u}') THEN \
         CREATE ROLE {u} LOGIN; END IF; END $$"
    );
    let limits = format!(
        "ALTER ROLE {u} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '{}'",
        credentials::scram_verifier(password)
    );
    // Roles an older dbperf granted for telemetry and `--settle`, which now log in as the
    // superuser; revoked only where granted (a REVOKE of a role not held warns).
    let memberships = format!(
        "DO $$ DECLARE r text; BEGIN FOR r IN SELECT g.rolname FROM pg_auth_members m \
         JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles s ON s.oid = m.member \
         WHERE s.rolname = '{u}' LOOP EXECUTE format('REVOKE %I FROM {u}', r); END LOOP; END $$"
    );
    let exists = format!("SELECT count(*) FROM pg_database WHERE datname = '{db}'");
    let out = admin_sql(socket_dir, port, &[&role, &limits, &memberships, &exists]).map_err(fail)?;
    if out.last().map(String::as_str) == Some("0") {
        // CREATE DATABASE cannot run inside a DO block or a transaction.
        admin_sql(socket_dir, port, &[&format!("CREATE DATABASE {db} OWNER {u}")]).map_err(fail)?;
    } else {
        admin_sql(socket_dir, port, &[&format!("ALTER DATABASE {db} OWNER TO {u}")]).map_err(fail)?;
    }
    let version = admin_sql(socket_dir, port, &["SHOW server_version"]).map_err(fail)?;
    Ok(version.last().cloned().unwrap_or_default())
}

/// The lines of `pg_hba.conf` dbperf manages, between these two.
const HBA_BEGIN: &str = "# dbperf: clients on other hosts (--allow-from), rewritten by every start";
const HBA_END: &str = "# dbperf: end";

/// `pg_hba.conf` with dbperf's block for `clients` (the benchmark role into its database only,
/// with its password) in place of the previous one; no block when there are none.
pub fn hba_with_clients(hba: &str, clients: &[std::net::IpAddr]) -> String {
    let mut out = String::new();
    let mut inside = false;
    for line in hba.lines() {
        match line {
            HBA_BEGIN => inside = true,
            HBA_END if inside => inside = false,
            _ if !inside => {
                out.push_str(line);
                out.push('\n');
            }
            _ => {}
        }
    }
    if !clients.is_empty() {
        out.push_str(HBA_BEGIN);
        out.push('\n');
        for c in clients {
            let bits = if c.is_ipv4() { 32 } else { 128 };
            out.push_str(&format!(
                "host {BENCH_DATABASE} {BENCH_USER} {c}/{bits} scram-sha-256\n"
            ));
        }
        out.push_str(HBA_END);
        out.push('\n');
    }
    out
}

/// Rewrites the datadir's `pg_hba.conf` for `clients`, in place (its owner, the server
/// account, keeps it), never through a link.
pub(crate) fn write_hba(datadir: &Path, clients: &[std::net::IpAddr]) -> Result<(), ServerError> {
    use std::io::Write as _;
    let path = datadir.join("pg_hba.conf");
    let text = std::fs::read_to_string(&path).map_err(|e| ServerError::io("cannot read", &path, e))?;
    let new = hba_with_clients(&text, clients);
    if new == text {
        return Ok(());
    }
    process::open_nofollow(&path, process::Write::Truncate)
        .and_then(|mut f| f.write_all(new.as_bytes()))
        .map_err(|e| ServerError::io("cannot write", &path, e))
}

/// Runs each statement as the superuser over the socket in `socket_dir`; returns the first
/// column of every row, in order, or the error text.
pub(crate) fn admin_sql(socket_dir: &Path, port: u16, statements: &[&str]) -> Result<Vec<String>, String> {
    let dir = socket_dir.to_owned();
    let statements: Vec<String> = statements.iter().map(|s| (*s).to_owned()).collect();
    let worker = std::thread::spawn(move || -> Result<Vec<String>, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start a runtime: {e}"))?;
        rt.block_on(async {
            let mut cfg = tokio_postgres::Config::new();
            cfg.host_path(&dir)
                .port(port)
                .user(SUPERUSER)
                .dbname("postgres")
                .application_name("dbperf-admin")
                .connect_timeout(Duration::from_secs(5));
            let (client, connection) = cfg.connect(tokio_postgres::NoTls).await.map_err(|e| e.to_string())?;
            let conn = tokio::spawn(connection);
            let mut out = Vec::new();
            for sql in &statements {
                for msg in client.simple_query(sql).await.map_err(|e| pg_error_text(&e))? {
                    if let tokio_postgres::SimpleQueryMessage::Row(row) = msg {
                        out.push(row.get(0).unwrap_or_default().to_owned());
                    }
                }
            }
            drop(client);
            let _ = conn.await;
            Ok(out)
        })
    });
    worker
        .join()
        .unwrap_or_else(|_| Err("the admin SQL thread panicked".into()))
}

/// The server's message (with its SQLSTATE) rather than tokio-postgres's generic "db error".
fn pg_error_text(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// `(key, value)` defaults of a profile; every value is quoted when rendered.
pub fn profile_defaults(profile: Profile, major: u16) -> Vec<(&'static str, String)> {
    let (buffers, max_wal, connections, sync_commit) = match profile {
        Profile::Benchmark => ("512MB", "1GB", "512", "on"),
        Profile::Test => ("64MB", "256MB", "200", "off"),
    };
    let mut out = vec![
        ("shared_buffers", buffers.to_owned()),
        ("max_connections", connections.to_owned()),
        ("max_wal_size", max_wal.to_owned()),
        ("synchronous_commit", sync_commit.to_owned()),
        // Timing columns of pg_stat_io, pg_stat_database and checkpoint logs.
        ("track_io_timing", "on".to_owned()),
        ("log_checkpoints", "on".to_owned()),
        ("log_line_prefix", "%m [%p] ".to_owned()),
    ];
    if major >= 14 {
        out.push(("track_wal_io_timing", "on".to_owned()));
    }
    out
}

/// Renders the sandbox's `postgresql.conf`: layout first, then the profile's defaults, then
/// the `--set` items (the last item for a key wins; a user key replaces the default).
pub fn render_postgresql_conf(config: &Config) -> String {
    let mut out = String::new();
    let socket_dir = config.socket.display().to_string();
    let _ = writeln!(
        out,
        "# Rendered by dbperf for sandbox {:?} ({}); rewritten by every `dbperf server start`.\n\
         # sandbox layout (managed by dbperf)",
        config.name, config.server.id
    );
    let (listen, port) = match config.network {
        Network::Loopback { port } => ("127.0.0.1".to_owned(), port),
        Network::Address { addr, port } => (addr.to_string(), port),
        Network::SocketOnly => (String::new(), SOCKET_ONLY_PORT),
    };
    let _ = writeln!(out, "listen_addresses = {}", quote(&listen));
    let _ = writeln!(out, "port = {port}");
    let _ = writeln!(out, "unix_socket_directories = {}", quote(&socket_dir));
    out.push_str("logging_collector = off\n");

    let mut user: Vec<(String, &Setting)> = Vec::new();
    for s in config.settings.iter().rev() {
        let key = normalize_key(&s.key);
        if !user.iter().any(|(k, _)| *k == key) {
            user.push((key, s));
        }
    }
    user.reverse();
    out.push_str("# defaults (override with --set KEY=VALUE)\n");
    for (key, value) in profile_defaults(config.profile, config.server.version.major) {
        if !user.iter().any(|(k, _)| k == key) {
            let _ = writeln!(out, "{key} = {}", quote(&value));
        }
    }
    if !user.is_empty() {
        out.push_str("# --set\n");
        for (key, s) in user {
            let _ = writeln!(out, "{key} = {}", quote(&s.value));
        }
    }
    out
}

/// A single-quoted `postgresql.conf` value (`'` doubled, `\` escaped).
fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
}

/// Where Debian's `postgresql-MAJOR` package puts the programs.
pub(crate) fn debian_bindir(major: u16) -> PathBuf {
    PathBuf::from(format!("/usr/lib/postgresql/{major}/bin"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::versions::lookup;

    /// Lines of `postgres --describe-config` (15.18): name, context, group, type, ...
    const DESCRIBE: &str = "\
allow_in_place_tablespaces\tsuperuser\tDeveloper Options\tBOOLEAN\tfalse\t\t\tAllows tablespaces directly inside pg_tblspc, for testing.\t
max_wal_size\tsighup\tWrite-Ahead Log / Checkpoints\tINTEGER\t1024\t2\t2147483647\tSets the WAL size that triggers a checkpoint.\t
shared_buffers\tpostmaster\tResource Usage / Memory\tINTEGER\t1024\t16\t1073741823\tSets the number of shared memory buffers used by the server.\t
checkpoint_timeout\tsighup\tWrite-Ahead Log / Checkpoints\tINTEGER\t300\t30\t86400\tSets the maximum time between automatic WAL checkpoints.\t
";

    #[test]
    fn hba_block_is_replaced_not_stacked_and_goes_with_no_clients() {
        let initdb = "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n";
        let c: Vec<std::net::IpAddr> = vec!["10.0.0.1".parse().unwrap(), "fd00::1".parse().unwrap()];
        let once = hba_with_clients(initdb, &c);
        assert!(once.starts_with(initdb), "{once}");
        assert!(once.contains("host sbtest sb 10.0.0.1/32 scram-sha-256\nhost sbtest sb fd00::1/128 scram-sha-256\n"));
        assert_eq!(hba_with_clients(&once, &c), once, "a second start changes nothing");
        let other = hba_with_clients(&once, &c[..1]);
        assert!(
            !other.contains("fd00::1") && other.matches(HBA_BEGIN).count() == 1,
            "{other}"
        );
        assert_eq!(hba_with_clients(&once, &[]), initdb);
    }

    #[test]
    fn describe_config_gives_the_first_column() {
        let names = parse_describe_config(DESCRIBE);
        let want: BTreeSet<String> = [
            "allow_in_place_tablespaces",
            "checkpoint_timeout",
            "max_wal_size",
            "shared_buffers",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(names, want);
    }

    fn config(id: &str, settings: &[&str], network: Network) -> Config {
        Config {
            name: "p".into(),
            server: lookup(id).unwrap(),
            basedir: None,
            datadir: "/h/servers/p/data".into(),
            socket: "/h/servers/p".into(),
            pid_file: "/h/servers/p/data/postmaster.pid".into(),
            log_error: "/h/servers/p/error.log".into(),
            tmpdir: "/h/servers/p/tmp".into(),
            files: "/h/servers/p/files".into(),
            network,
            profile: Profile::Benchmark,
            settings: settings.iter().map(|s| Setting::parse(s).unwrap()).collect(),
        }
    }

    #[test]
    fn renders_layout_defaults_and_overrides() {
        let conf = render_postgresql_conf(&config(
            "postgres-15",
            &[
                "shared_buffers=1GB",
                "Max-WAL-Size=64MB",
                "max_wal_size=32MB",
                "application_name=it's",
            ],
            Network::Loopback { port: 41234 },
        ));
        let lines: Vec<&str> = conf.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "listen_addresses = '127.0.0.1'",
                "port = 41234",
                "unix_socket_directories = '/h/servers/p'",
                "logging_collector = off",
                "max_connections = '512'",
                "synchronous_commit = 'on'",
                "track_io_timing = 'on'",
                "log_checkpoints = 'on'",
                "log_line_prefix = '%m [%p] '",
                "track_wal_io_timing = 'on'",
                "shared_buffers = '1GB'",
                "max_wal_size = '32MB'",
                "application_name = 'it''s'",
            ]
        );
    }

    #[test]
    fn socket_only_listens_nowhere() {
        let conf = render_postgresql_conf(&config("postgres-17", &[], Network::SocketOnly));
        assert!(conf.contains("listen_addresses = ''\nport = 5432\n"), "{conf}");
    }
}
