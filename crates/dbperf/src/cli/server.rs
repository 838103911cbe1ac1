//! `dbperf server install|add|remove|create|start|stop|restart|check|list|snapshot`: arguments and the runner that prints results.
//!
//! All the work happens in [`dbperf_server`]; this file only maps flags to a
//! [`StartRequest`] and formats what comes back.

use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use dbperf_driver::target::Product;
use dbperf_server::listing::{AvailableLine, SandboxLine};
use dbperf_server::{
    lookup, InstallOutcome, RunState, SandboxHome, ServerSpec, Setting, StartRequest, StopOutcome, BENCH_DATABASE,
    BENCH_USER, VERSIONS,
};
use dbperf_telemetry::server::PFS_STARTUP_INSTRUMENTS;

/// Sandboxed database servers under $DBPERF_HOME (default ~/.dbperf).
#[derive(Debug, Args)]
pub struct ServerArgs {
    #[command(subcommand)]
    pub command: ServerCommand,
}

#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// Install a server version from the catalog (see `list --available`) into $DBPERF_HOME/dist.
    Install(InstallArgs),
    /// Register a server build of your own (MySQL or MariaDB 5.5 and later, Percona Server,
    /// PostgreSQL 9.6 and later): its version and flavour are read from the build, it is
    /// started once to check it, and NAME then works wherever a catalog id does.
    Add(AddArgs),
    /// Forget a build added with `add` (deletes what dbperf unpacked for it, never a --basedir).
    Remove(RemoveArgs),
    /// Create a new sandbox NAME of a catalog server (`--server postgres-17`), initialize and
    /// start it; prints the --target URLs. Same as `start ID --name NAME` on a new name.
    Create(CreateArgs),
    /// Initialize (first time) and start a private server; prints the --target URLs.
    Start(StartArgs),
    /// Stop a sandbox: SIGTERM, wait for a clean shutdown, SIGKILL after --timeout.
    Stop(StopArgs),
    /// Stop a sandbox and start it again with the same server, port, listening address and
    /// settings; `--cold` drops the OS page cache in between (needs root).
    Restart(RestartArgs),
    /// Check settings against an installed server's own option list, without starting it
    /// (what `start --set` would refuse); exits 0 when every one is known.
    Check(CheckArgs),
    /// Show all sandboxes with their state and target URLs.
    List(ListArgs),
    /// Kept copies of a stopped sandbox's datadir (a data set prepared once): `save NAME DIR`,
    /// `restore NAME DIR`, `ready DIR`; what the lab runs on a database host over ssh.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
}

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Copy the stopped sandbox's datadir (and its admin login) to DIR, replacing what is there.
    Save { name: String, dir: std::path::PathBuf },
    /// Replace the stopped sandbox's datadir with a copy of DIR.
    Restore { name: String, dir: std::path::PathBuf },
    /// Exit 0 if DIR holds a complete snapshot, 1 if not.
    Ready { dir: std::path::PathBuf },
}

/// A catalog id (`mysql-8.0.31`) or the alias `mariadb`, checked while parsing.
fn parse_server(id: &str) -> Result<&'static ServerSpec, String> {
    lookup(id).map_err(|e| e.to_string())
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Catalog id, for example mysql-8.0.31 (`dbperf server list --available` shows them all).
    #[arg(value_name = "ID", value_parser = parse_server)]
    pub server: &'static ServerSpec,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("build").required(true).args(["basedir", "tarball"])))]
pub struct AddArgs {
    /// The name to use for it (`server start NAME`, `[[server]] id = "NAME"`), e.g. percona-5.7.44.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The build's directory (the one with bin/ in it), used in place and never written to.
    #[arg(long, value_name = "DIR")]
    pub basedir: Option<std::path::PathBuf>,
    /// A release tarball (.tar.gz, .tar.xz), unpacked into $DBPERF_HOME/dist/NAME/base.
    #[arg(long, value_name = "FILE")]
    pub tarball: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The name given to `dbperf server add`.
    #[arg(value_name = "NAME")]
    pub name: String,
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// Catalog id (mariadb-10.11 alias mariadb, mariadb-11.4.5, mysql-8.0.31, postgres-15, ...).
    #[arg(value_name = "ID", value_parser = parse_server)]
    pub server: &'static ServerSpec,
    /// Sandbox name ([A-Za-z0-9_-]); its files live in $DBPERF_HOME/servers/NAME.
    #[arg(long)]
    pub name: String,
    #[command(flatten)]
    pub launch: LaunchArgs,
    /// Start on a new datadir: the stopped sandbox's old one is removed first.
    #[arg(long)]
    pub fresh: bool,
    /// Print one JSON object (name, server, version, pid, target URLs with the generated
    /// password, datadir) instead of text: what a lab driving this host over ssh reads.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RestartArgs {
    /// Sandbox name.
    pub name: String,
    /// Drop the OS page cache between the stop and the start.
    #[arg(long)]
    pub cold: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Catalog id or added build.
    #[arg(value_name = "ID", value_parser = parse_server)]
    pub server: &'static ServerSpec,
    /// A setting to check (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<Setting>,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Sandbox name ([A-Za-z0-9_-]); its files live in $DBPERF_HOME/servers/NAME.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Catalog id (postgres-15, postgres-17, mariadb-10.11, mysql-8.0.31, ...).
    #[arg(long, value_name = "ID", value_parser = parse_server)]
    pub server: &'static ServerSpec,
    #[command(flatten)]
    pub launch: LaunchArgs,
}

/// How a sandbox is started, shared by `create` and `start`.
#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// TCP port on 127.0.0.1 [default: the previous port if free, else a free one].
    #[arg(long, conflicts_with = "socket_only")]
    pub port: Option<u16>,
    /// Listen on the unix socket only (skip-networking).
    #[arg(long)]
    pub socket_only: bool,
    /// Listen on this address of the host instead of 127.0.0.1, for a client on another host
    /// (the database host of a two-machine benchmark); needs --allow-from.
    #[arg(long, value_name = "ADDR", conflicts_with = "socket_only", requires = "allow_from")]
    pub listen: Option<std::net::IpAddr>,
    /// A client host's address the benchmark account may log in from (repeatable); no other
    /// address gets an account.
    #[arg(long, value_name = "ADDR", requires = "listen")]
    pub allow_from: Vec<std::net::IpAddr>,
    /// Server option for my.cnf (postgresql.conf for PostgreSQL), overriding dbperf's
    /// defaults; checked against that server version's own option list; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<Setting>,
    /// Seconds to wait for the server to accept connections.
    #[arg(value_parser = dbperf_core::bounds::whole_secs_flag, long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
    /// Run the server with Debian's libjemalloc2 preloaded (LD_PRELOAD).
    #[arg(long)]
    pub jemalloc: bool,
    /// Restrict the server to these CPUs from its start, as `taskset -c` writes them
    /// (`0`, `0-3`, `0,2`).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Performance Schema on, with InnoDB's mutex and rw-lock instruments on from startup
    /// (`--set performance_schema=ON --set performance-schema-instrument=wait/synch/%/innodb/%=ON`):
    /// MySQL 5.6 and MariaDB 10.1/10.2 time those latches only when they are on at startup, so
    /// a run's `--pfs-instruments` can show their waits. Later `--set` items win.
    #[arg(long)]
    pub pfs_instruments: bool,
}

#[derive(Debug, Args)]
pub struct StopArgs {
    /// Sandbox name.
    pub name: String,
    /// Seconds to wait for a clean shutdown before SIGKILL.
    #[arg(value_parser = dbperf_core::bounds::whole_secs_flag, long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
    /// A sandbox of that name that does not exist is not an error (nothing to stop).
    #[arg(long)]
    pub missing_ok: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON lines (one object per sandbox) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also show the catalog: every installable server version and whether it is installed.
    #[arg(long)]
    pub available: bool,
}

pub fn run(args: ServerArgs) -> anyhow::Result<()> {
    let home = SandboxHome::from_env()?;
    match args.command {
        ServerCommand::Install(a) => install(&home, a.server),
        ServerCommand::Add(a) => add(&home, &a),
        ServerCommand::Remove(a) => {
            let record = home.remove_added(&a.name)?;
            println!(
                "{} forgotten ({}); sandboxes made from it keep their datadirs but cannot start until it is added again",
                record.id, record.source
            );
            Ok(())
        }
        ServerCommand::Create(a) => {
            if let Ok(existing) = home.status(&a.name) {
                anyhow::bail!(
                    "sandbox {:?} already exists ({}); start it with `dbperf server start {} --name {}`, or pick another name",
                    a.name,
                    existing.record.server,
                    existing.record.server,
                    a.name
                );
            }
            start(&home, a.server, a.name, a.launch, false)
        }
        ServerCommand::Start(a) => {
            if a.fresh {
                home.discard_datadir(&a.name)
                    .with_context(|| format!("--fresh: sandbox {:?}", a.name))?;
            }
            start(&home, a.server, a.name, a.launch, a.json)
        }
        ServerCommand::Stop(a) => stop(&home, &a),
        ServerCommand::Restart(a) => {
            let note = dbperf_server::cold::restart(&home, &a.name, a.cold)
                .with_context(|| format!("restarting sandbox {:?}", a.name))?;
            match (a.cold, note.is_empty()) {
                (true, true) => println!("sandbox {:?} restarted with the OS page cache dropped", a.name),
                (true, false) => println!("sandbox {:?} restarted; {note}", a.name),
                (false, _) => println!("sandbox {:?} restarted", a.name),
            }
            Ok(())
        }
        ServerCommand::Check(a) => {
            if home.installed(a.server).is_none() {
                anyhow::bail!(
                    "{} is not installed on this host: `dbperf server install {}`",
                    a.server.id,
                    a.server.id
                );
            }
            home.check_settings(a.server, &a.settings)
                .with_context(|| format!("settings of {}", a.server.id))?;
            println!("{}: {} setting(s) known to this server", a.server.id, a.settings.len());
            Ok(())
        }
        ServerCommand::List(a) => list(&home, &a),
        ServerCommand::Snapshot(SnapshotCommand::Save { name, dir }) => {
            home.save_snapshot(&name, &dir)?;
            println!("sandbox {name:?}: datadir saved to {}", dir.display());
            Ok(())
        }
        ServerCommand::Snapshot(SnapshotCommand::Restore { name, dir }) => {
            home.restore_snapshot(&name, &dir)?;
            println!("sandbox {name:?}: datadir restored from {}", dir.display());
            Ok(())
        }
        ServerCommand::Snapshot(SnapshotCommand::Ready { dir }) => {
            if dbperf_server::snapshot::is_ready(&dir) {
                println!("{}: a complete snapshot", dir.display());
                Ok(())
            } else {
                anyhow::bail!("{}: not a complete snapshot", dir.display())
            }
        }
    }
}

fn install(home: &SandboxHome, server: &'static ServerSpec) -> anyhow::Result<()> {
    let report = home
        .install(server)
        .with_context(|| format!("installing {}", server.id))?;
    let r = &report.record;
    match report.outcome {
        InstallOutcome::AlreadyInstalled => println!("{} is already installed ({})", r.id, r.server.display()),
        InstallOutcome::Installed { elapsed } => println!(
            "{} {} installed in {:.1} s from {}",
            r.id,
            r.version,
            elapsed.as_secs_f64(),
            r.source
        ),
    }
    println!("  server   {}", r.server.display());
    println!("  record   {}", report.dir.join("dbperf-dist.json").display());
    println!("  start it with `dbperf server start {} --name NAME`", r.id);
    Ok(())
}

fn add(home: &SandboxHome, a: &AddArgs) -> anyhow::Result<()> {
    let from = match (&a.basedir, &a.tarball) {
        (Some(dir), _) => dbperf_server::AddFrom::Basedir(dir.clone()),
        (None, Some(file)) => dbperf_server::AddFrom::Tarball(file.clone()),
        (None, None) => anyhow::bail!("give the build with --basedir DIR or --tarball FILE"),
    };
    // SIGINT/SIGTERM end the checking start, which stops the server it launched.
    dbperf_core::interrupt::on_interrupt(
        "Interrupted: stopping the server this check launched",
        "exiting, the starting server killed",
        || {},
    );
    let report = home.add(&a.name, &from)?;
    let r = &report.record;
    println!(
        "{}: {} {}{} added in {:.1} s (started once to check it)",
        r.id,
        r.product,
        r.version,
        r.flavour.as_deref().map(|f| format!(" ({f})")).unwrap_or_default(),
        report.elapsed.as_secs_f64()
    );
    println!("  server   {}", r.server.display());
    if let Some(init) = &r.install_db {
        println!("  datadir  made by {}", init.display());
    } else if let Some(template) = &r.datadir_template {
        println!("  datadir  copied from {}", template.display());
    } else {
        println!("  datadir  made by {} --initialize-insecure", r.server.display());
    }
    println!("  record   {}", report.dir.join("dbperf-dist.json").display());
    println!(
        "  use it as a catalog id: `dbperf server start {} --name NAME`, or `id = \"{}\"` in a lab's [[server]]",
        r.id, r.id
    );
    Ok(())
}

fn start(
    home: &SandboxHome,
    server: &'static ServerSpec,
    name: String,
    a: LaunchArgs,
    json: bool,
) -> anyhow::Result<()> {
    let available = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpus = match &a.cpus {
        Some(list) => Some(
            dbperf_core::cpus::CpuSet::parse(list, available)
                .map_err(|e| anyhow::anyhow!("--cpus {list}: {e}"))?
                .cpus,
        ),
        None => None,
    };
    let mut settings = Vec::new();
    if a.pfs_instruments {
        if server.product == Product::Postgres {
            anyhow::bail!(
                "--pfs-instruments: PostgreSQL has no Performance Schema; its wait events are sampled \
                 from pg_stat_activity without it"
            );
        }
        for item in ["performance_schema=ON", PFS_STARTUP_INSTRUMENTS] {
            settings.push(Setting::parse(item).expect("a valid built-in setting"));
        }
    }
    settings.extend(a.settings);
    let request = StartRequest {
        jemalloc: a.jemalloc,
        cpus,
        port: a.port,
        socket_only: a.socket_only,
        listen: match a.listen {
            Some(addr) => Some(dbperf_server::Listen::new(addr, a.allow_from.clone())?),
            None => None,
        },
        settings,
        ready_timeout: Duration::from_secs(a.timeout),
        interruptible: true,
        ..StartRequest::new(server, name)
    };
    // SIGINT/SIGTERM end the start's waits; it then stops the server it started. A second
    // one exits at once and kills that server (`kill_unfinished`).
    dbperf_core::interrupt::on_interrupt(
        "Interrupted: stopping the server this start launched",
        "exiting, the starting server killed",
        || {},
    );
    let report = match home.start(&request) {
        Ok(report) => report,
        Err(e @ dbperf_server::ServerError::Interrupted { .. }) => {
            eprintln!("{e}");
            std::process::exit(i32::from(dbperf_core::exit::INTERRUPTED));
        }
        Err(e) => return Err(e).with_context(|| format!("starting sandbox {:?}", request.name)),
    };
    let r = &report.record;
    if json {
        let v = serde_json::json!({
            "name": r.name,
            "server": r.server,
            "version": r.version,
            "pid": report.pid,
            "initialized": report.initialized,
            "target": r.tcp_url().unwrap_or_else(|| r.socket_url()),
            "socket_target": r.socket_url(),
            "datadir": r.datadir,
        });
        println!("{v}");
        return Ok(());
    }
    let how = if report.initialized {
        "initialized and started"
    } else {
        "started (existing datadir reused)"
    };
    println!(
        "sandbox {:?}: {} ({}) {how} in {:.1} s (pid {})",
        r.name,
        r.server,
        r.version,
        report.elapsed.as_secs_f64(),
        report.pid
    );
    println!("  datadir  {}", r.datadir.display());
    println!("  config   {}", r.my_cnf.display());
    println!("  log      {}", r.error_log.display());
    match r.kind {
        Product::Postgres => println!(
            "  admin    psql -h {} -p {} -U postgres (over the owner-only socket)",
            r.socket.display(),
            r.port.unwrap_or(dbperf_server::SOCKET_ONLY_PORT)
        ),
        Product::Mariadb | Product::Mysql => println!(
            "  admin    mariadb --defaults-file={} (root's generated password; the file is 0600)",
            r.my_cnf.with_file_name("admin.cnf").display()
        ),
    }
    println!(
        "  user {BENCH_USER} (its generated password is in {}), database {BENCH_DATABASE}; use one of:",
        r.my_cnf.with_file_name("bench.cnf").display()
    );
    if let Some(url) = r.tcp_url() {
        println!("  --target {url}");
    }
    println!("  --target {}", r.socket_url());
    println!("  --target sandbox:{}", r.name);
    Ok(())
}

fn stop(home: &SandboxHome, a: &StopArgs) -> anyhow::Result<()> {
    if a.missing_ok
        && matches!(
            home.status(&a.name),
            Err(dbperf_server::ServerError::UnknownSandbox { .. })
        )
    {
        println!("no sandbox {:?}: nothing to stop", a.name);
        return Ok(());
    }
    let outcome = home
        .stop_with_timeout(&a.name, Duration::from_secs(a.timeout))
        .with_context(|| format!("stopping sandbox {:?}", a.name))?;
    match outcome {
        StopOutcome::NotRunning => println!("sandbox {:?} was not running", a.name),
        StopOutcome::Terminated { pid, waited } => println!(
            "sandbox {:?} stopped cleanly (pid {pid}, {:.1} s after the shutdown signal); data kept",
            a.name,
            waited.as_secs_f64()
        ),
        StopOutcome::Killed { pid, waited } => println!(
            "sandbox {:?} ignored its shutdown signal for {:.0} s and was killed (pid {pid}); \
             the server will run crash recovery on the next start",
            a.name,
            waited.as_secs_f64()
        ),
    }
    Ok(())
}

fn list(home: &SandboxHome, a: &ListArgs) -> anyhow::Result<()> {
    if a.available {
        list_available(home, a.json)?;
        if !a.json {
            println!();
        }
    }
    let sandboxes = home.list()?;
    if a.json {
        for s in &sandboxes {
            let mut record = s.record.clone();
            record.pid = match s.state {
                RunState::Running { pid } | RunState::Starting { pid } => Some(pid),
                RunState::Stopped => None,
            };
            let line = SandboxLine {
                kind: "sandbox".into(),
                record,
                state: state_word(s.state).into(),
                target: s.record.target_url(),
            };
            println!("{}", serde_json::to_string(&line)?);
        }
        return Ok(());
    }
    if sandboxes.is_empty() {
        println!(
            "no sandboxes under {}; create one with `dbperf server start mariadb --name NAME`",
            home.root().display()
        );
        return Ok(());
    }
    let mut rows = vec![[
        "NAME".to_owned(),
        "SERVER".to_owned(),
        "STATE".to_owned(),
        "PORT".to_owned(),
        "SOCKET".to_owned(),
        "TARGET".to_owned(),
    ]];
    for s in &sandboxes {
        let r = &s.record;
        rows.push([
            r.name.clone(),
            format!("{} ({})", r.server, r.version),
            state_word(s.state).to_owned(),
            r.port.map_or_else(|| "-".to_owned(), |p| p.to_string()),
            r.socket.display().to_string(),
            // A table is for the screen: the password stays in bench.cnf (and `--json`).
            dbperf_driver::target::redact_url(&r.tcp_url().unwrap_or_else(|| r.socket_url())),
        ]);
    }
    print_table(&rows);
    Ok(())
}

/// The catalog with install state: a table, or JSON lines with `"type": "available"`.
fn list_available(home: &SandboxHome, json: bool) -> anyhow::Result<()> {
    let mut rows = vec![["ID", "FLAVOR", "VERSION", "SOURCE", "SIZE", "INSTALLED", "PATH"].map(str::to_owned)];
    let added = home.added_builds();
    for server in VERSIONS.iter().chain(added.iter().copied()) {
        let installed = home.installed(server);
        let path = match &installed {
            Some(r) => r.basedir.clone().unwrap_or_else(|| r.server.clone()),
            None => home.dist_dir(server),
        };
        if json {
            let line = AvailableLine {
                kind: "available".into(),
                id: server.id.into(),
                flavor: server.product,
                version: server.version_label.into(),
                source: source(server, installed.as_ref()),
                size: server.size_hint.into(),
                installed: installed.is_some(),
                path,
                init: installed.as_ref().and_then(|r| r.init),
            };
            println!("{}", serde_json::to_string(&line)?);
            continue;
        }
        rows.push([
            server.id.to_owned(),
            server.product.to_string(),
            server.version_label.to_owned(),
            source(server, installed.as_ref()),
            server.size_hint.to_owned(),
            if installed.is_some() { "yes" } else { "no" }.to_owned(),
            path.display().to_string(),
        ]);
    }
    if !json {
        print_table(&rows);
        println!("install one with `dbperf server install ID`; add a build of your own with `dbperf server add NAME --basedir DIR`");
    }
    Ok(())
}

/// The SOURCE column: where a catalog version comes from, or what an added build was added from.
fn source(server: &ServerSpec, installed: Option<&dbperf_server::DistRecord>) -> String {
    match (server.source, installed) {
        (dbperf_server::Source::Added { .. }, Some(r)) => r.source.clone(),
        _ => server.source_label(),
    }
}

fn print_table<const N: usize>(rows: &[[String; N]]) {
    let widths: Vec<usize> = (0..N)
        .map(|i| rows.iter().map(|row| row[i].len()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        println!("{}", line.join("  ").trim_end());
    }
}

fn state_word(state: RunState) -> &'static str {
    match state {
        RunState::Running { .. } => "running",
        RunState::Starting { .. } => "starting",
        RunState::Stopped => "stopped",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        server: ServerArgs,
    }

    fn parse(args: &[&str]) -> Result<ServerCommand, String> {
        Cli::try_parse_from(std::iter::once("server").chain(args.iter().copied()))
            .map(|cli| cli.server.command)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn start_flags() {
        let cmd = parse(&[
            "start",
            "mariadb",
            "--name",
            "b1",
            "--port",
            "40001",
            "--set",
            "innodb_buffer_pool_size=2G",
            "--set",
            "max_connections=64",
        ])
        .unwrap();
        let ServerCommand::Start(a) = cmd else {
            panic!("{cmd:?}")
        };
        assert_eq!((a.name.as_str(), a.launch.port), ("b1", Some(40001)));
        let settings: Vec<String> = a.launch.settings.iter().map(Setting::to_string).collect();
        assert_eq!(settings, ["innodb_buffer_pool_size=2G", "max_connections=64"]);
        assert_eq!(a.server.id, "mariadb-10.11", "`mariadb` is an alias");
    }

    #[test]
    fn start_and_install_take_catalog_ids() {
        let ServerCommand::Start(a) = parse(&["start", "mysql-8.0.31", "--name", "m"]).unwrap() else {
            panic!()
        };
        assert_eq!(a.server.id, "mysql-8.0.31");
        let ServerCommand::Install(a) = parse(&["install", "mariadb-11.4.5"]).unwrap() else {
            panic!()
        };
        assert_eq!(a.server.id, "mariadb-11.4.5");
        let err = parse(&["install", "mysql-5.7"]).unwrap_err();
        assert!(
            err.contains("unknown server \"mysql-5.7\"") && err.contains("mysql-8.0.15"),
            "{err}"
        );
        let ServerCommand::List(a) = parse(&["list", "--available"]).unwrap() else {
            panic!()
        };
        assert!(a.available);
    }

    #[test]
    fn create_takes_a_name_and_a_server() {
        let cmd = parse(&[
            "create",
            "pg",
            "--server",
            "postgres-17",
            "--set",
            "shared_buffers=1GB",
            "--set",
            "max_wal_size=64MB",
        ])
        .unwrap();
        let ServerCommand::Create(a) = cmd else {
            panic!("{cmd:?}")
        };
        assert_eq!((a.name.as_str(), a.server.id), ("pg", "postgres-17"));
        assert_eq!(a.launch.settings.len(), 2);
        let err = parse(&["create", "pg", "--server", "postgres-9"]).unwrap_err();
        assert!(err.contains("postgres-15"), "{err}");
    }

    #[test]
    fn malformed_set_names_the_flag_and_item() {
        let err = parse(&["start", "mariadb", "--name", "b", "--set", "innodb_buffer_pool_size"]).unwrap_err();
        assert!(err.contains("--set <KEY=VALUE>"), "{err}");
        assert!(err.contains("\"innodb_buffer_pool_size\""), "{err}");
        assert!(err.contains("expected KEY=VALUE"), "{err}");
    }

    #[test]
    fn socket_only_conflicts_with_port() {
        let err = parse(&["start", "mariadb", "--name", "b", "--port", "1", "--socket-only"]).unwrap_err();
        assert!(err.contains("cannot be used with"), "{err}");
    }
}
