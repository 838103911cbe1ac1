//! The lab on a server that is already running (`[[server]] target = ...`): a MariaDB started
//! here by hand (`mariadb-install-db` and `mariadbd`, none of dbperf's sandbox code), a user
//! with a random password in a 0600 target file; a lab run of two variants whose settings
//! are back as found afterwards, and again after Ctrl-C; manifests that say the data was not
//! restored and the telemetry was SQL only; the password in no file the lab wrote; and `lab
//! plan` refusing a read-only variable by name.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{program_available, read_json, run_dirs, run_ok};

/// A MariaDB started by hand in a temporary directory, killed on drop.
struct HandServer {
    child: Child,
    socket: PathBuf,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for HandServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HandServer {
    fn start() -> HandServer {
        let dir = tempfile::tempdir().unwrap();
        // The server's account must reach its files (mariadbd refuses to run as root).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let account = dbperf::server::ServerAccount::for_invoker().unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        let mut user_arg = Vec::new();
        if let Some(a) = &account {
            std::os::unix::fs::chown(&run, Some(a.uid), Some(a.gid)).unwrap();
            user_arg.push(format!("--user={}", a.name));
        }
        let data = dir.path().join("data");
        let out = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg("--auth-root-authentication-method=normal")
            .arg("--skip-test-db")
            .args(&user_arg)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "mariadb-install-db: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let socket = run.join("s.sock");
        let child = Command::new("mariadbd")
            .arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg(format!("--pid-file={}", run.join("m.pid").display()))
            .arg(format!("--log-error={}", run.join("error.log").display()))
            .arg("--innodb-buffer-pool-size=64M")
            .arg("--innodb-log-file-size=16M")
            .args(&user_arg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let server = HandServer {
            child,
            socket,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while server.sql("SELECT 1").is_err() {
            assert!(
                Instant::now() < deadline,
                "the hand-started mariadbd did not answer within 60 s"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        server
    }

    /// Runs `sql` as root over the socket; the output's rows, tab-separated.
    fn sql(&self, sql: &str) -> Result<String, String> {
        let out = Command::new("mariadb")
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .args(["-uroot", "-N", "-B", "-e", sql])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    fn globals(&self, names: &[&str]) -> Vec<String> {
        names
            .iter()
            .map(|n| self.sql(&format!("SELECT @@GLOBAL.{n}")).unwrap())
            .collect()
    }
}

/// A password nobody guesses: the clock and the pid through std's random hasher.
fn random_password() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    format!("Pw{:016x}", h.finish())
}

const SETTINGS: [&str; 3] = ["innodb_io_capacity", "max_connections", "innodb_adaptive_hash_index"];

fn experiment(dir: &Path, name: &str, server: &str, duration: u32, extra: &str) -> PathBuf {
    let f = dir.join(format!("{name}.toml"));
    std::fs::write(
        &f,
        format!(
            r#"name = "{name}"
duration = {duration}
report_interval = 1
prewarm = false
{server}
[[variant]]
name = "low"
settings = {{ innodb_io_capacity = 300, max_connections = 60 }}
[[variant]]
name = "high"
settings = {{ innodb_io_capacity = 4000, innodb_adaptive_hash_index = "ON" }}
{extra}
[[workload]]
test = "oltp_read_only"
tables = 1
table_size = 1000
users = [1]
"#
        ),
    )
    .unwrap();
    f
}

/// Every file under `root` that holds `needle`.
fn files_holding(root: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(p) = stack.pop() {
        if p.is_symlink() {
            continue;
        }
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else if std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes())) {
            found.push(p);
        }
    }
    found
}

#[test]
fn the_lab_runs_on_a_running_server_and_puts_its_settings_back_as_found() {
    if !program_available("mariadbd", "mariadb-server") || !program_available("mariadb", "mariadb-client") {
        return;
    }
    let server = HandServer::start();
    let password = random_password();
    server
        .sql(&format!(
            "CREATE DATABASE bench; CREATE USER 'lab'@'127.0.0.1' IDENTIFIED BY '{password}'; \
             GRANT ALL ON bench.* TO 'lab'@'127.0.0.1'; GRANT SUPER, PROCESS ON *.* TO 'lab'@'127.0.0.1'; \
             CREATE TABLE bench.users_own (id INT PRIMARY KEY)"
        ))
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let target_file = tmp.path().join("target");
    std::fs::write(
        &target_file,
        format!("mysql://lab:{password}@127.0.0.1:{}/bench\n", server.port),
    )
    .unwrap();
    std::fs::set_permissions(&target_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server_toml = format!(
        "[[server]]\ntarget = \"mysql://lab@127.0.0.1:{}/bench\"\ntarget_file = \"{}\"",
        server.port,
        target_file.display()
    );
    let dbperf = || {
        let mut c = common::dbperf();
        c.env("DBPERF_HOME", &home).env_remove("DBPERF_TARGET");
        c
    };
    let found = server.globals(&SETTINGS);

    // A read-only variable is refused by `lab plan`, by name, before anything runs.
    let bad = experiment(
        tmp.path(),
        "static",
        &server_toml,
        2,
        "[[variant]]\nname = \"pages\"\nsettings = { innodb_page_size = \"16K\" }",
    );
    let out = dbperf().args(["lab", "plan"]).arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "lab plan took a read-only variable");
    assert!(
        err.contains("innodb_page_size") && err.contains("read-only") && err.contains("variant \"pages\""),
        "{err}"
    );
    assert!(!err.contains(&password), "{err}");

    // Two variants, two points; then every setting is as it was found.
    let file = experiment(tmp.path(), "running", &server_toml, 2, "");
    let out = run_ok(dbperf().args(["lab", "plan"]).arg(&file));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("127.0.0.1:{}", server.port)), "{text}");
    let out = run_ok(
        dbperf()
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("put back as found"), "{text}");
    assert_eq!(server.globals(&SETTINGS), found, "settings not back as found\n{text}");
    // The lab's tables are in the database beside the user's own, which is untouched.
    let tables = server.sql("SHOW TABLES FROM bench").unwrap();
    assert!(tables.contains("sbtest1") && tables.contains("users_own"), "{tables}");
    let dirs = run_dirs(&results);
    let runs: Vec<&PathBuf> = dirs.iter().filter(|d| d.join("manifest.json").is_file()).collect();
    assert_eq!(runs.len(), 2, "{dirs:?}");
    for d in &runs {
        let m = read_json(&d.join("manifest.json"));
        let snapshot = m["lab"]["snapshot"].as_str().unwrap_or_default().to_owned();
        assert!(snapshot.starts_with("not restored: "), "{snapshot}");
        let text = std::fs::read_to_string(d.join("manifest.json")).unwrap();
        assert!(
            text.contains("\"telemetry_sql_only\": true") || text.contains("\"telemetry_sql_only\":true"),
            "{text}"
        );
        let telemetry = std::fs::read_to_string(d.join("telemetry.jsonl")).unwrap();
        let rows: Vec<serde_json::Value> = telemetry.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        assert!(
            !rows.is_empty() && rows.iter().all(|r| r["os"].is_null()),
            "{telemetry}"
        );
        assert!(
            rows.iter().any(|r| !r["server"].is_null()),
            "no server sample: {telemetry}"
        );
    }
    for root in [&results, &home] {
        let leaked = files_holding(root, &password);
        assert!(leaked.is_empty(), "the password is in {leaked:?}");
    }

    // Ctrl-C in the middle of a point: the settings are put back on that path too.
    let file = experiment(tmp.path(), "interrupted", &server_toml, 60, "");
    let results2 = tmp.path().join("results2");
    let mut lab = dbperf()
        .args(["lab", "run"])
        .arg(&file)
        .arg("--results-dir")
        .arg(&results2)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let measuring = run_dirs(&results2)
            .iter()
            .any(|d| std::fs::read_to_string(d.join("intervals.jsonl")).is_ok_and(|t| t.lines().count() >= 2));
        if measuring {
            break;
        }
        assert!(Instant::now() < deadline, "the interrupted lab never measured");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_ne!(
        server.globals(&SETTINGS),
        found,
        "the variant's settings are not applied during its point"
    );
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(lab.id() as i32, libc::SIGINT) };
    let status = lab.wait().unwrap();
    let mut stdout = String::new();
    std::io::Read::read_to_string(lab.stdout.as_mut().unwrap(), &mut stdout).unwrap();
    assert!(!status.success(), "{stdout}");
    assert_eq!(
        server.globals(&SETTINGS),
        found,
        "settings not back after Ctrl-C\n{stdout}"
    );

    // kill -9 in the middle of a point leaves the lab's values on the server; the next run
    // takes the values found from the file the killed one kept, and puts those back.
    let mut lab = spawn_and_wait_until_measuring(
        dbperf()
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results2),
        &results2,
        3,
    );
    let pid = lab.id() as i32;
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    lab.kill().unwrap();
    lab.wait().unwrap();
    for child in children.split_whitespace().filter_map(|c| c.parse::<i32>().ok()) {
        // SAFETY: kill has no memory preconditions; the point child is the killed lab's.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
    assert_ne!(server.globals(&SETTINGS), found, "a killed lab put its settings back?");
    let file = experiment(tmp.path(), "interrupted", &server_toml, 2, "");
    let out = run_ok(
        dbperf()
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results2),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ended without putting its settings back"), "{text}");
    assert_eq!(
        server.globals(&SETTINGS),
        found,
        "settings not back after a killed run\n{text}"
    );
    let kept: Vec<PathBuf> = std::fs::read_dir(results2.join("lab/interrupted"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("found-")))
        .collect();
    assert!(kept.is_empty(), "{kept:?}");
}

/// Spawns `cmd` and returns once a run under `results` that was not there before stored `n`
/// intervals.
fn spawn_and_wait_until_measuring(cmd: &mut Command, results: &Path, n: usize) -> Child {
    let before = run_dirs(results);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !run_dirs(results)
        .iter()
        .filter(|d| !before.contains(d))
        .any(|d| std::fs::read_to_string(d.join("intervals.jsonl")).is_ok_and(|t| t.lines().count() >= n))
    {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the lab never measured");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child
}

#[path = "support/pg.rs"]
mod pg;

/// `(value, source)` of each PostgreSQL setting, as `pg_settings` says.
fn pg_settings(server: &pg::TempPg, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|n| {
            server.psql(&format!(
                "SELECT current_setting(name) || ' ' || source FROM pg_settings WHERE name = '{n}'"
            ))
        })
        .collect()
}

/// PostgreSQL: `ALTER SYSTEM SET` and `pg_reload_conf()` at run time; put back as found is
/// `ALTER SYSTEM SET` for a value postgresql.auto.conf held, `ALTER SYSTEM RESET` for the rest;
/// a setting that needs a restart (`shared_buffers`) refused by `lab plan`. (A server dbperf
/// started, used as a running server through a superuser role of its own.)
#[test]
fn on_postgresql_settings_go_through_alter_system_and_come_back_as_found() {
    if !pg::available() {
        return;
    }
    let server = pg::TempPg::start(&[]);
    let password = random_password();
    server.psql(&format!("CREATE ROLE labsu LOGIN SUPERUSER PASSWORD '{password}'"));
    // One setting held by postgresql.auto.conf (set again as found), one from the defaults
    // (reset as found).
    server.psql("ALTER SYSTEM SET work_mem = '8MB'");
    server.psql("SELECT pg_reload_conf()");
    std::thread::sleep(Duration::from_millis(500));
    let names = ["work_mem", "checkpoint_completion_target"];
    let found = pg_settings(&server, &names);
    assert!(found[0].starts_with("8MB configuration file"), "{found:?}");

    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let target_file = tmp.path().join("target");
    std::fs::write(
        &target_file,
        format!("postgres://labsu:{password}@127.0.0.1:{}/sbtest\n", server.port()),
    )
    .unwrap();
    std::fs::set_permissions(&target_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let write = |name: &str, variant: &str| {
        let f = tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &f,
            format!(
                r#"name = "{name}"
duration = 2
report_interval = 1
prewarm = false
[[server]]
target = "postgres://labsu@127.0.0.1:{port}/sbtest"
target_file = "{file}"
[[variant]]
name = "a"
settings = {{ {variant} }}
[[workload]]
test = "oltp_read_only"
tables = 1
table_size = 1000
users = [1]
"#,
                port = server.port(),
                file = target_file.display()
            ),
        )
        .unwrap();
        f
    };
    let dbperf = || {
        let mut c = common::dbperf();
        c.env("DBPERF_HOME", &home).env_remove("DBPERF_TARGET");
        c
    };
    let out = dbperf()
        .args(["lab", "plan"])
        .arg(write("pg-static", "shared_buffers = \"256MB\""))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("shared_buffers") && err.contains("postmaster"),
        "{err}"
    );

    let file = write("pg-running", "work_mem = \"32MB\", checkpoint_completion_target = 0.7");
    let out = run_ok(
        dbperf()
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("put back as found"), "{text}");
    // The point ran with the variant's values: the lab waits for the reload to be done
    // (pg_conf_load_time), and again for the values put back, so no sleep is needed here.
    let run = common::run_dirs(&results)
        .into_iter()
        .find(|d| d.join("manifest.json").is_file())
        .unwrap();
    let m = read_json(&run.join("manifest.json"));
    let vars = &m["server"]["variables"];
    // pg_settings' own unit for work_mem: kB.
    assert_eq!(
        (&vars["work_mem"], &vars["checkpoint_completion_target"]),
        (&serde_json::Value::from("32768"), &serde_json::Value::from("0.7"))
    );
    assert_eq!(pg_settings(&server, &names), found, "not back as found\n{text}");
    let auto =
        server.psql("SELECT name FROM pg_file_settings WHERE sourcefile LIKE '%postgresql.auto.conf' ORDER BY name");
    assert_eq!(auto, "work_mem", "postgresql.auto.conf holds more than it did");
    for root in [&results, &home] {
        let leaked = files_holding(root, &password);
        assert!(leaked.is_empty(), "the password is in {leaked:?}");
    }
}

/// Oracle MySQL as a running server: its read-only variables are told by `SET GLOBAL x =
/// @@GLOBAL.x` failing with error 1238 (`lab plan` refuses one, naming it), and the variants'
/// `SET GLOBAL` values are back as found after the run. (A MySQL 8.0.31 dbperf started, used
/// through an account of its own with global rights.)
#[test]
fn on_mysql_a_read_only_variable_is_refused_and_globals_come_back_as_found() {
    if !common::available("mysql-8.0.31") {
        return;
    }
    use mysql_async::prelude::Queryable as _;
    let sandbox = dbperf::server::testing::TempSandbox::start_server("mysql-8.0.31", &[]).unwrap();
    let password = random_password();
    let admin = sandbox.admin_url();
    let globals = |names: &[&str]| -> Vec<String> {
        common::block_on(async {
            let mut c = mysql_async::Conn::from_url(admin.as_str()).await.unwrap();
            let mut out = Vec::new();
            for n in names {
                let v: Option<String> = c.query_first(format!("SELECT @@GLOBAL.{n}")).await.unwrap();
                out.push(v.unwrap_or_default());
            }
            c.disconnect().await.unwrap();
            out
        })
    };
    common::block_on(async {
        let mut c = mysql_async::Conn::from_url(admin.as_str()).await.unwrap();
        c.query_drop(format!(
            "CREATE USER 'labsu'@'127.0.0.1' IDENTIFIED WITH mysql_native_password BY '{password}'"
        ))
        .await
        .unwrap();
        c.query_drop("GRANT ALL ON *.* TO 'labsu'@'127.0.0.1'").await.unwrap();
        c.disconnect().await.unwrap();
    });
    let found = globals(&SETTINGS);

    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let target_file = tmp.path().join("target");
    std::fs::write(
        &target_file,
        format!("mysql://labsu:{password}@127.0.0.1:{}/sbtest\n", sandbox.port()),
    )
    .unwrap();
    std::fs::set_permissions(&target_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server_toml = format!(
        "[[server]]\ntarget = \"mysql://labsu@127.0.0.1:{}/sbtest\"\ntarget_file = \"{}\"",
        sandbox.port(),
        target_file.display()
    );
    let dbperf = || {
        let mut c = common::dbperf();
        c.env("DBPERF_HOME", &home).env_remove("DBPERF_TARGET");
        c
    };
    let bad = experiment(
        tmp.path(),
        "mysql-static",
        &server_toml,
        2,
        "[[variant]]\nname = \"redo\"\nsettings = { innodb_log_file_size = \"512M\" }",
    );
    let out = dbperf().args(["lab", "plan"]).arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("innodb_log_file_size") && err.contains("error 1238"),
        "{err}"
    );

    let file = experiment(tmp.path(), "mysql-running", &server_toml, 2, "");
    let out = run_ok(
        dbperf()
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("complete: 2 run(s)"), "{text}");
    assert_eq!(globals(&SETTINGS), found, "not back as found\n{text}");
    for root in [&results, &home] {
        let leaked = files_holding(root, &password);
        assert!(leaked.is_empty(), "the password is in {leaked:?}");
    }
}
