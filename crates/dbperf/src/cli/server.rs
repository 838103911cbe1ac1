//! `dbperf server start|stop|list`: arguments and the runner that prints results.
//!
//! All the work happens in [`crate::server`]; this file only maps flags to a
//! [`StartRequest`] and formats what comes back.

use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand, ValueEnum};

use crate::server::{
    RunState, SandboxHome, ServerKind, Setting, StartRequest, StopOutcome, BENCH_DATABASE, BENCH_USER,
};

/// Sandboxed database servers under $DBPERF_HOME (default ~/.dbperf).
#[derive(Debug, Args)]
pub struct ServerArgs {
    #[command(subcommand)]
    pub command: ServerCommand,
}

#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// Initialize (first time) and start a private server; prints the --target URLs.
    Start(StartArgs),
    /// Stop a sandbox: SIGTERM, wait for a clean shutdown, SIGKILL after --timeout.
    Stop(StopArgs),
    /// Show all sandboxes with their state and target URLs.
    List(ListArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KindArg {
    /// MariaDB from the system packages (mariadbd, mariadb-install-db).
    Mariadb,
}

#[derive(Debug, Args)]
pub struct StartArgs {
    /// Server kind.
    #[arg(value_enum)]
    pub kind: KindArg,
    /// Sandbox name ([A-Za-z0-9_-]); its files live in $DBPERF_HOME/servers/NAME.
    #[arg(long)]
    pub name: String,
    /// TCP port on 127.0.0.1 [default: the previous port if free, else a free one].
    #[arg(long, conflicts_with = "socket_only")]
    pub port: Option<u16>,
    /// Listen on the unix socket only (skip-networking).
    #[arg(long)]
    pub socket_only: bool,
    /// Server option for my.cnf, overriding dbperf's defaults; repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<Setting>,
    /// Seconds to wait for the server to accept connections.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct StopArgs {
    /// Sandbox name.
    pub name: String,
    /// Seconds to wait for a clean shutdown before SIGKILL.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub timeout: u64,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON lines (one object per sandbox) instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ServerArgs) -> anyhow::Result<()> {
    let home = SandboxHome::from_env()?;
    match args.command {
        ServerCommand::Start(a) => start(&home, a),
        ServerCommand::Stop(a) => stop(&home, &a),
        ServerCommand::List(a) => list(&home, &a),
    }
}

fn start(home: &SandboxHome, a: StartArgs) -> anyhow::Result<()> {
    let request = StartRequest {
        kind: match a.kind {
            KindArg::Mariadb => ServerKind::Mariadb,
        },
        port: a.port,
        socket_only: a.socket_only,
        settings: a.settings,
        ready_timeout: Duration::from_secs(a.timeout),
        ..StartRequest::mariadb(a.name)
    };
    let report = home
        .start(&request)
        .with_context(|| format!("starting sandbox {:?}", request.name))?;
    let r = &report.record;
    let how = if report.initialized {
        "initialized and started"
    } else {
        "started (existing datadir reused)"
    };
    println!(
        "sandbox {:?}: {} {} {how} in {:.1} s (pid {})",
        r.name,
        r.kind,
        r.version,
        report.elapsed.as_secs_f64(),
        report.pid
    );
    println!("  datadir  {}", r.datadir.display());
    println!("  config   {}", r.my_cnf.display());
    println!("  log      {}", r.error_log.display());
    println!("  user {BENCH_USER}, database {BENCH_DATABASE}; use one of:");
    if let Some(url) = r.tcp_url() {
        println!("  --target {url}");
    }
    println!("  --target {}", r.socket_url());
    println!("  --target sandbox:{}", r.name);
    Ok(())
}

fn stop(home: &SandboxHome, a: &StopArgs) -> anyhow::Result<()> {
    let outcome = home
        .stop_with_timeout(&a.name, Duration::from_secs(a.timeout))
        .with_context(|| format!("stopping sandbox {:?}", a.name))?;
    match outcome {
        StopOutcome::NotRunning => println!("sandbox {:?} was not running", a.name),
        StopOutcome::Terminated { pid, waited } => println!(
            "sandbox {:?} stopped cleanly (pid {pid}, {:.1} s after SIGTERM); data kept",
            a.name,
            waited.as_secs_f64()
        ),
        StopOutcome::Killed { pid, waited } => println!(
            "sandbox {:?} ignored SIGTERM for {:.0} s and was killed (pid {pid}); \
             InnoDB will run crash recovery on the next start",
            a.name,
            waited.as_secs_f64()
        ),
    }
    Ok(())
}

fn list(home: &SandboxHome, a: &ListArgs) -> anyhow::Result<()> {
    let sandboxes = home.list()?;
    if a.json {
        for s in &sandboxes {
            let mut v = serde_json::to_value(&s.record)?;
            v["state"] = state_word(s.state).into();
            v["pid"] = match s.state {
                RunState::Running { pid } => pid.into(),
                RunState::Stopped => serde_json::Value::Null,
            };
            v["target"] = s.record.socket_url().into();
            println!("{v}");
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
        "KIND".to_owned(),
        "STATE".to_owned(),
        "PORT".to_owned(),
        "SOCKET".to_owned(),
        "TARGET".to_owned(),
    ]];
    for s in &sandboxes {
        let r = &s.record;
        rows.push([
            r.name.clone(),
            format!("{} {}", r.kind, r.version),
            state_word(s.state).to_owned(),
            r.port.map_or_else(|| "-".to_owned(), |p| p.to_string()),
            r.socket.display().to_string(),
            r.tcp_url().unwrap_or_else(|| r.socket_url()),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|i| rows.iter().map(|row| row[i].len()).max().unwrap_or(0))
        .collect();
    for row in &rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        println!("{}", line.join("  ").trim_end());
    }
    Ok(())
}

fn state_word(state: RunState) -> &'static str {
    match state {
        RunState::Running { .. } => "running",
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
        assert_eq!((a.name.as_str(), a.port), ("b1", Some(40001)));
        let settings: Vec<String> = a.settings.iter().map(Setting::to_string).collect();
        assert_eq!(settings, ["innodb_buffer_pool_size=2G", "max_connections=64"]);
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
