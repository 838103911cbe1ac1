//! A sandbox seen by a hostile local user: for Debian's MariaDB, MySQL 8.0.31 and PostgreSQL
//! 15, the server does not run as OS root, its directory (and so its socket) is its owner's
//! alone, no administrator logs in over TCP without the generated password, the benchmark
//! account has a generated password (`sb`/`sb` is refused) and rights on its own database
//! only (no `SET GLOBAL`, no PROCESS, no other database, no FILE; PostgreSQL: no superuser,
//! no CREATEDB, no CHECKPOINT), and server-side files stay inside the sandbox. A sandbox of an
//! older dbperf (`sb`/`sb` with global privileges) is upgraded by its next start. Also: a
//! start that fails after the server was spawned leaves nothing running, and every spelling
//! of a managed option is refused.
//!
//! The "other local user" is `nobody` (uid 65534), which needs this test to run as root (as
//! CI does); as another user those checks are skipped with a notice.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use dbperf::server::testing::TempSandbox;
use dbperf::server::{lookup, SandboxHome, ServerError, Setting, StartRequest};

mod common;
use common::available;

const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The real uid of a running process, from /proc.
fn process_uid(pid: i32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Runs a program as `nobody`.
fn as_nobody(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .uid(NOBODY)
        .gid(NOBODY)
        .env_remove("PGPASSWORD")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs SQL with Debian's `mariadb` client; `login` are its login arguments.
fn mariadb(login: &[&str], sql: &str) -> Output {
    Command::new("mariadb")
        .args(login)
        .args(["-N", "-B", "-e", sql])
        .output()
        .unwrap()
}

/// What every sandbox must hold whatever its product.
fn check_private(db: &TempSandbox) {
    let dir = db.home().root().join("servers").join(db.name());
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{} is {mode:o}", dir.display());
    let uid = process_uid(db.pid());
    assert_ne!(uid, 0, "the server runs as OS root");
    if is_root() {
        assert_eq!(
            std::fs::metadata(&dir).unwrap().uid(),
            uid,
            "the server account owns its directory"
        );
    }
}

fn check_mysql_family(db: &TempSandbox) {
    check_private(db);
    let admin = db.admin_cnf();
    let meta = std::fs::metadata(&admin).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{}", admin.display());
    assert_eq!(
        meta.uid(),
        unsafe { libc::geteuid() },
        "admin.cnf belongs to the invoking user"
    );
    let admin_arg = format!("--defaults-file={}", admin.display());
    let port = db.port().to_string();

    // The generated password is the only way in for root; no other admin account is left.
    let users = text(&mariadb(
        &[&admin_arg],
        "SELECT CONCAT(User, '@', Host) FROM mysql.user ORDER BY 1",
    ));
    assert!(users.contains("root@localhost"), "{users}");
    for line in users.lines() {
        let user = line.split('@').next().unwrap();
        assert!(
            !["", "mysql"].contains(&user) && (user != "root" || line == "root@localhost"),
            "an extra admin or anonymous account is left: {line} in\n{users}"
        );
    }
    // Old datadirs (MySQL 5.6, MariaDB before 10.5) grant every account all on `test%`.
    let wildcard = text(&mariadb(&[&admin_arg], "SELECT COUNT(*) FROM mysql.db WHERE User = ''"));
    assert_eq!(wildcard.trim(), "0", "database grants to any account are left");
    let no_password = mariadb(
        &["--no-defaults", "-h", "127.0.0.1", "-P", &port, "-u", "root"],
        "SELECT 1",
    );
    assert!(
        !no_password.status.success() && text(&no_password).contains("1045"),
        "{}",
        text(&no_password)
    );

    // sb: its generated password (in bench.cnf, 0600) is the only way in.
    let bench = db.bench_cnf();
    let meta = std::fs::metadata(&bench).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{}", bench.display());
    let bench_arg = format!("--defaults-file={}", bench.display());
    let sb = [bench_arg.as_str(), "-h", "127.0.0.1", "-P", &port, "--protocol=tcp"];
    let fixed = mariadb(
        &["--no-defaults", "-h", "127.0.0.1", "-P", &port, "-u", "sb", "-psb"],
        "SELECT 1",
    );
    assert!(!fixed.status.success(), "sb/sb still logs in: {}", text(&fixed));
    check_bench_rights(&sb);

    // sb: no FILE privilege; root: files only inside the sandbox.
    let outfile = db.home().root().join("servers").join(db.name()).join("files").join("x");
    let denied = mariadb(&sb, &format!("SELECT 'x' INTO OUTFILE '{}'", outfile.display()));
    assert!(
        text(&denied).contains("1227") || text(&denied).contains("1045"),
        "{}",
        text(&denied)
    );
    let priv_dir = text(&mariadb(&[&admin_arg], "SELECT @@secure_file_priv"));
    let files = db.home().root().join("servers").join(db.name()).join("files");
    assert_eq!(priv_dir.trim().trim_end_matches('/'), files.to_str().unwrap());
    let outside = std::env::temp_dir().join(format!("dbperf-outfile-{}", std::process::id()));
    let refused = mariadb(
        &[&admin_arg],
        &format!("SELECT 'x' INTO OUTFILE '{}'", outside.display()),
    );
    assert!(text(&refused).contains("1290"), "{}", text(&refused));
    assert!(!outside.exists());

    if !is_root() {
        eprintln!("skipped: the checks as another local user need root");
        return;
    }
    for user in ["root", "mysql", "", "sb"] {
        let out = as_nobody(
            "mariadb",
            &[
                "--no-defaults",
                "-h",
                "127.0.0.1",
                "-P",
                &port,
                "-u",
                user,
                "-e",
                "SELECT 1",
            ],
        );
        assert!(!out.status.success(), "nobody logged in as {user:?}: {}", text(&out));
    }
    let socket = db.socket().to_str().unwrap();
    let out = as_nobody(
        "mariadb",
        &["--no-defaults", "-S", socket, "-u", "root", "-e", "SELECT 1"],
    );
    assert!(!out.status.success() && text(&out).contains("(13)"), "{}", text(&out));
    let out = as_nobody("cat", &[admin.to_str().unwrap()]);
    assert!(!out.status.success(), "nobody read admin.cnf");
    let out = as_nobody("cat", &[bench.to_str().unwrap()]);
    assert!(!out.status.success(), "nobody read bench.cnf");
    // With the password of an older dbperf.
    let out = as_nobody(
        "mariadb",
        &[
            "--no-defaults",
            "-h",
            "127.0.0.1",
            "-P",
            &port,
            "-u",
            "sb",
            "-psb",
            "-e",
            "SELECT 1",
        ],
    );
    assert!(!out.status.success(), "nobody logged in as sb/sb: {}", text(&out));
}

/// What the benchmark account may do, logged in with `login`: the tables of its database,
/// and nothing that reaches beyond it.
fn check_bench_rights(login: &[&str]) {
    let ok = mariadb(
        login,
        "CREATE TABLE sbtest.sec_t (a INT PRIMARY KEY, b INT); CREATE INDEX b ON sbtest.sec_t (b); \
         ALTER TABLE sbtest.sec_t ADD COLUMN c INT; INSERT INTO sbtest.sec_t VALUES (1, 2, 3); \
         TRUNCATE sbtest.sec_t; DROP TABLE sbtest.sec_t",
    );
    assert!(ok.status.success(), "the benchmark's DDL is refused: {}", text(&ok));
    for (sql, what) in [
        ("SET GLOBAL read_only = 1", "SET GLOBAL"),
        (
            "SET GLOBAL innodb_monitor_enable = 'buffer_flush_batches'",
            "SET GLOBAL",
        ),
        ("SHOW ENGINE INNODB STATUS", "PROCESS"),
        ("SELECT COUNT(*) FROM mysql.user", "the grant tables"),
        ("CREATE DATABASE sec_other", "CREATE DATABASE"),
        ("SHUTDOWN", "SHUTDOWN"),
        ("GRANT ALL ON *.* TO 'sb'@'127.0.0.1'", "GRANT"),
    ] {
        let out = mariadb(login, sql);
        assert!(!out.status.success(), "the benchmark account may {what}: {sql}");
    }
}

#[test]
fn debian_mariadb_sandbox_is_private() {
    let db = TempSandbox::start().expect("a sandboxed MariaDB starts");
    check_mysql_family(&db);
}

#[test]
fn mysql_8_sandbox_is_private() {
    if !available("mysql-8.0.31") {
        return;
    }
    let db = TempSandbox::start_server("mysql-8.0.31", &[]).unwrap();
    check_mysql_family(&db);
}

/// The classic servers' datadirs come with passwordless root and anonymous accounts (MySQL
/// 5.6's is a copy of the one its package ships): the same lock-down holds.
#[test]
fn classic_sandboxes_are_private() {
    for id in ["mysql-5.6.24", "mariadb-10.1.23", "mariadb-10.2.11"] {
        if !available(id) {
            continue;
        }
        let db = TempSandbox::start_server(id, &[]).unwrap_or_else(|e| panic!("{id}: {e}"));
        check_mysql_family(&db);
    }
}

#[test]
fn postgres_sandbox_is_private() {
    if !available("postgres-15") {
        return;
    }
    let db = TempSandbox::start_server("postgres-15", &[]).unwrap();
    check_private(&db);
    let psql = "/usr/lib/postgresql/15/bin/psql";
    let port = db.port().to_string();
    let password = db.bench_password();
    let sb = |sql: &str| {
        Command::new(psql)
            .args(["-h", "127.0.0.1", "-p", &port, "-U", "sb", "-d", "sbtest", "-Atc", sql])
            .env("PGPASSWORD", &password)
            .output()
            .unwrap()
    };
    let roles = text(&sb("SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = 'sb'"));
    assert_eq!(roles.trim(), "f|f");
    let memberships = text(&sb(
        "SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = 'sb'",
    ));
    assert_eq!(
        memberships.trim(),
        "0",
        "sb is granted roles (pg_monitor, pg_checkpoint)"
    );
    let ddl = sb("CREATE TABLE sec_t (a int PRIMARY KEY); CREATE INDEX ON sec_t (a); DROP TABLE sec_t");
    assert!(ddl.status.success(), "{}", text(&ddl));
    for sql in [
        "CREATE DATABASE sec_other",
        "CHECKPOINT",
        "ALTER SYSTEM SET work_mem = '1GB'",
    ] {
        let out = sb(sql);
        assert!(!out.status.success(), "sb may {sql}: {}", text(&out));
    }
    let fixed = Command::new(psql)
        .args([
            "-w",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "sb",
            "-d",
            "sbtest",
            "-c",
            "SELECT 1",
        ])
        .env("PGPASSWORD", "sb")
        .output()
        .unwrap();
    assert!(!fixed.status.success(), "sb/sb still logs in: {}", text(&fixed));
    let outside = std::env::temp_dir().join(format!("dbperf-copy-{}", std::process::id()));
    let copy = sb(&format!("COPY (SELECT 1) TO '{}'", outside.display()));
    assert!(
        !copy.status.success() && text(&copy).contains("pg_write_server_files"),
        "{}",
        text(&copy)
    );
    assert!(!outside.exists());
    // The statistics views stay readable (other backends' details are telemetry's, as the
    // superuser).
    let stats =
        sb("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'checkpointer' AND wait_event IS NOT NULL");
    assert!(stats.status.success(), "{}", text(&stats));

    if !is_root() {
        eprintln!("skipped: the checks as another local user need root");
        return;
    }
    let tcp = as_nobody(
        psql,
        &["-w", "-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-c", "SELECT 1"],
    );
    assert!(
        !tcp.status.success(),
        "nobody logged in as postgres over TCP: {}",
        text(&tcp)
    );
    let fixed = Command::new(psql)
        .args([
            "-w",
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "sb",
            "-d",
            "sbtest",
            "-c",
            "SELECT 1",
        ])
        .env("PGPASSWORD", "sb")
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    assert!(!fixed.status.success(), "nobody logged in as sb/sb: {}", text(&fixed));
    let dir = db.socket().to_str().unwrap();
    let socket = as_nobody(
        psql,
        &["-w", "-h", dir, "-p", &port, "-U", "postgres", "-c", "SELECT 1"],
    );
    assert!(
        !socket.status.success() && text(&socket).contains("ermission denied"),
        "{}",
        text(&socket)
    );
}

/// Makes a running sandbox look as an older dbperf left it (`sb`/`sb`, no `bench.cnf`, no
/// lock-down mark in the datadir), then stops it.
fn make_legacy(db: &TempSandbox, sql: impl FnOnce()) {
    sql();
    db.home().stop_with_timeout(db.name(), Duration::from_secs(30)).unwrap();
    std::fs::remove_file(db.bench_cnf()).unwrap();
    std::fs::remove_file(db.dir().join("data/dbperf-lockdown")).unwrap();
}

/// A sandbox of an older dbperf, whose `sb` logs in with `sb` and holds every privilege but
/// FILE, SHUTDOWN and CREATE USER, gets a generated password and only its database's rights
/// from its next start.
#[test]
fn a_mariadb_sandbox_of_an_older_dbperf_is_upgraded_by_its_next_start() {
    let mut db = TempSandbox::start().expect("a sandboxed MariaDB starts");
    let admin = format!("--defaults-file={}", db.admin_cnf().display());
    make_legacy(&db, || {
        let out = mariadb(
            &[&admin],
            "GRANT ALL PRIVILEGES ON *.* TO 'sb'@'localhost' IDENTIFIED BY 'sb'; \
             GRANT ALL PRIVILEGES ON *.* TO 'sb'@'127.0.0.1' IDENTIFIED BY 'sb'; \
             REVOKE FILE, SHUTDOWN, CREATE USER ON *.* FROM 'sb'@'localhost', 'sb'@'127.0.0.1'",
        );
        assert!(out.status.success(), "{}", text(&out));
    });
    db.restart().unwrap();
    let port = db.port().to_string();
    let fixed = mariadb(
        &["--no-defaults", "-h", "127.0.0.1", "-P", &port, "-u", "sb", "-psb"],
        "SELECT 1",
    );
    assert!(!fixed.status.success(), "sb/sb still logs in: {}", text(&fixed));
    let bench_arg = format!("--defaults-file={}", db.bench_cnf().display());
    check_bench_rights(&[&bench_arg, "-h", "127.0.0.1", "-P", &port, "--protocol=tcp"]);
    assert!(db.url().contains(&db.bench_password()));
}

#[test]
fn a_postgres_sandbox_of_an_older_dbperf_is_upgraded_by_its_next_start() {
    if !available("postgres-15") {
        return;
    }
    let mut db = TempSandbox::start_server("postgres-15", &[]).unwrap();
    let psql = "/usr/lib/postgresql/15/bin/psql";
    let dir = db.socket().to_str().unwrap().to_owned();
    let port = db.port().to_string();
    make_legacy(&db, || {
        let out = Command::new(psql)
            .args(["-h", &dir, "-p", &port, "-U", "postgres", "-d", "sbtest", "-c"])
            .arg("ALTER ROLE sb CREATEDB PASSWORD 'sb'; GRANT pg_monitor TO sb; GRANT pg_checkpoint TO sb")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
    });
    db.restart().unwrap();
    let sb = |password: &str, sql: &str| {
        Command::new(psql)
            .args([
                "-w",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "sb",
                "-d",
                "sbtest",
                "-Atc",
                sql,
            ])
            .env("PGPASSWORD", password)
            .output()
            .unwrap()
    };
    assert!(!sb("sb", "SELECT 1").status.success(), "sb/sb still logs in");
    let password = db.bench_password();
    let roles = sb(
        &password,
        "SELECT rolcreatedb, (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid) \
         FROM pg_roles r WHERE rolname = 'sb'",
    );
    assert_eq!(text(&roles).trim(), "f|0");
    assert!(!sb(&password, "CHECKPOINT").status.success(), "sb may CHECKPOINT");
}

/// A start whose server was spawned but did not become ready (here: a readiness timeout of
/// 1 ms) stops that server again.
#[test]
fn failed_start_leaves_nothing_running() {
    let dir = tempfile::tempdir().unwrap();
    let home = SandboxHome::at(dir.path()).with_dist_root(SandboxHome::from_env().unwrap().dist_root());
    let req = StartRequest {
        ready_timeout: Duration::from_millis(1),
        ..StartRequest::new(lookup("mariadb-10.11").unwrap(), "late")
    };
    let err = home.start(&req).unwrap_err();
    assert!(matches!(err, ServerError::StartTimeout { .. }), "{err}");
    assert!(err.to_string().contains("dbperf stopped it"), "{err}");
    let my_cnf = dir.path().join("servers/late/my.cnf");
    assert!(
        !any_process_mentions(&my_cnf),
        "a server of the failed start is still running"
    );
    let status = home.status("late").unwrap();
    assert!(matches!(status.state, dbperf::server::RunState::Stopped), "{status:?}");
    // The next start with time to spare works on the same datadir.
    let req = StartRequest {
        ready_timeout: Duration::from_secs(60),
        ..req
    };
    home.start(&req).unwrap();
    home.stop("late").unwrap();
}

fn any_process_mentions(marker: &Path) -> bool {
    let marker = marker.as_os_str().as_encoded_bytes();
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            return false;
        };
        cmdline.windows(marker.len()).any(|w| w == marker)
    })
}

/// The loopback guard holds for every spelling the servers' option parser accepts.
#[test]
fn managed_options_are_refused_in_every_spelling() {
    for item in [
        "loose-bind-address=127.0.0.2",
        "loose_port=3307",
        "maximum-socket=/tmp/s",
        "skip-networking=0",
        "skip-grant-tables=1",
        "secure_file_priv=/",
    ] {
        let err = Setting::parse(item).unwrap_err().to_string();
        assert!(err.contains("managed by dbperf"), "{item}: {err}");
    }
}

/// The sandbox directory belongs to the server's account: a symbolic link it plants where
/// dbperf writes (`my.cnf`, rewritten by every start; the error log the server's output is
/// appended to) is not followed, so the server cannot steer a write of dbperf's onto another
/// file.
#[test]
fn planted_symlinks_are_not_followed() {
    let db = TempSandbox::start().expect("a sandboxed MariaDB starts");
    let dir = db.into_stopped_dir().unwrap();
    let sandbox = dir.join("servers/test");
    let victim = dir.join("victim");
    std::fs::write(&victim, "untouched\n").unwrap();
    let home = SandboxHome::at(&dir).with_dist_root(SandboxHome::from_env().unwrap().dist_root());
    let req = StartRequest::new(lookup("mariadb-10.11").unwrap(), "test");
    for planted in ["my.cnf", "error.log"] {
        let link = sandbox.join(planted);
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = home.start(&req).unwrap_err();
        assert!(err.to_string().contains(planted), "{planted}: {err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched\n", "{planted}");
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, "").unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}
