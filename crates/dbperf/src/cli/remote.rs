//! `dbperf remote install|check HOST`: a database host reached with ssh. `install` copies this
//! `dbperf` there (what the lab runs on that host); `check` says whether the host answers,
//! whether its `dbperf` is this build, and shows both hosts' facts side by side. The work is
//! [`dbperf_server::remote`]'s.

use clap::{Args, Subcommand};

use dbperf_results::host::HostInfo;
use dbperf_server::remote::{Installed, RemoteHost, DEFAULT_REMOTE_DBPERF};

#[derive(Debug, Args)]
pub struct RemoteArgs {
    #[command(subcommand)]
    pub command: RemoteCommand,
}

#[derive(Debug, Subcommand)]
pub enum RemoteCommand {
    /// Copy this dbperf to the host (skipped when the same build is there).
    Install(HostFlags),
    /// Whether the host answers over ssh, whether its dbperf is this build, and both hosts' facts.
    Check(HostFlags),
}

/// How to reach the host; the same keys as a lab's `[[server]] host` and `ssh`.
#[derive(Debug, Args)]
pub struct HostFlags {
    /// ssh://USER@HOST[:PORT]
    #[arg(value_name = "HOST")]
    pub host: String,
    /// The ssh command line, e.g. "ssh -i ~/.ssh/lab_key -o StrictHostKeyChecking=accept-new".
    #[arg(long, value_name = "COMMAND")]
    pub ssh: Option<String>,
    /// Where dbperf is (or goes) on the host: relative to the login's home, or absolute.
    #[arg(long, value_name = "PATH", default_value = DEFAULT_REMOTE_DBPERF)]
    pub dbperf: String,
}

impl HostFlags {
    fn host(&self) -> anyhow::Result<RemoteHost> {
        let mut h = RemoteHost::parse(&self.host, self.ssh.as_deref())?;
        h.dbperf = self.dbperf.clone();
        Ok(h)
    }
}

pub fn run(a: RemoteArgs) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    match a.command {
        RemoteCommand::Install(f) => {
            let host = f.host()?;
            match host.install(&exe)? {
                Installed::AlreadyThere => println!("{}: {} is this build already", host.url, host.dbperf),
                Installed::Copied(n) => println!(
                    "{}: copied this dbperf to {} ({:.1} MB)",
                    host.url,
                    host.dbperf,
                    n as f64 / 1e6
                ),
            }
            Ok(())
        }
        RemoteCommand::Check(f) => {
            let host = f.host()?;
            let started = std::time::Instant::now();
            let version = host.dbperf(&["--version"]);
            let answered = started.elapsed();
            let there = match &version {
                Ok(v) => {
                    println!(
                        "{}: reachable over ssh ({:.2} s for a command); {} is {}",
                        host.url,
                        answered.as_secs_f64(),
                        host.dbperf,
                        v.trim()
                    );
                    let json = host.dbperf(&["host", "--json"])?;
                    Some(serde_json::from_str::<HostInfo>(json.trim())?)
                }
                Err(dbperf_server::remote::RemoteError::Failed { .. }) => {
                    println!(
                        "{}: reachable over ssh, but {} does not run there: copy this one with `dbperf remote install {}`",
                        host.url, host.dbperf, host.url
                    );
                    None
                }
                Err(_) => return Err(version.unwrap_err().into()),
            };
            let here = dbperf_report::setup::host_facts(&HostInfo::collect());
            let there = there.map(|h| dbperf_report::setup::host_facts(&h)).unwrap_or_default();
            let width = here.iter().map(|(_, v)| v.len()).max().unwrap_or(0).max(4);
            println!("{:<16}{:<width$}  {}", "", "this host (client)", host.host);
            for (name, value) in &here {
                let other = there.iter().find(|(n, _)| n == name).map_or("-", |(_, v)| v.as_str());
                println!("{name:<16}{value:<width$}  {other}");
            }
            Ok(())
        }
    }
}
