//! Where a lab's sandbox runs: this machine's sandbox home, or a database host's, reached with
//! ssh (`[[server]] host = "ssh://..."`) and driven by running `dbperf server ...` there.
//!
//! This module owns the operations the lab's run code asks of a server host (start on a data
//! set's copy, stop, save and restore datadir snapshots, install and check settings) and does
//! them the same way on both kinds: [`Sandboxes::Local`] calls the server crate directly,
//! [`Sandboxes::Remote`] runs the same commands over ssh (`dbperf server start --json`,
//! `server stop --missing-ok`, `server snapshot save|restore|ready`, `server install`,
//! `server check`). A remote sandbox listens on the host's address the ssh connection arrives
//! at and lets in only the address it comes from (or the `listen` and `allow_from` the file
//! gives): the client talks to the server directly, never through the ssh connection.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};

use super::experiment::{CpuSet, ServerHost, ServerSpec};
use dbperf_server::remote::{RemoteError, RemoteHost};
use dbperf_server::{SandboxHome, Setting, StartRequest};

/// A server host of the lab.
pub(crate) enum Sandboxes<'a> {
    Local(&'a SandboxHome),
    Remote {
        host: &'a RemoteHost,
        /// Where the sandbox listens there.
        listen: IpAddr,
        /// Who may log in (this machine as the host sees it).
        allow_from: Vec<IpAddr>,
    },
}

impl<'a> Sandboxes<'a> {
    /// The host of `server`: this machine's `home`, or its `host`, asked over ssh where this
    /// connection arrives and comes from unless the file says.
    pub(crate) fn of(server: &'a ServerSpec, home: &'a SandboxHome) -> Result<Sandboxes<'a>> {
        let Some(ServerHost {
            remote,
            listen,
            allow_from,
        }) = &server.host
        else {
            return Ok(Sandboxes::Local(home));
        };
        let (listen, allow_from) = match (listen, allow_from.is_empty()) {
            (Some(l), false) => (*l, allow_from.clone()),
            _ => {
                let (client, arrived) = remote.connection().with_context(|| {
                    format!("server {:?}: finding the addresses of the ssh connection", server.label)
                })?;
                (
                    listen.unwrap_or(arrived),
                    if allow_from.is_empty() {
                        vec![client]
                    } else {
                        allow_from.clone()
                    },
                )
            }
        };
        Ok(Sandboxes::Remote {
            host: remote,
            listen,
            allow_from,
        })
    }

    /// The sandbox home's directory on its host (the lab keeps its data sets under it);
    /// for a remote host, as that host's `dbperf` reads it (relative: under the login's home).
    pub(crate) fn root(&self) -> PathBuf {
        match self {
            Sandboxes::Local(home) => home.root().to_owned(),
            Sandboxes::Remote { host, .. } => PathBuf::from(host.home.as_deref().unwrap_or(".dbperf")),
        }
    }

    /// Stops `sandbox` if it runs; a failure is a warning (the next start stops it again).
    pub(crate) fn stop_quietly(&self, sandbox: &str) {
        match self {
            Sandboxes::Local(home) => {
                if home.status(sandbox).is_ok() {
                    if let Err(e) = home.stop(sandbox) {
                        eprintln!("warning: stopping sandbox {sandbox}: {e}");
                    }
                }
            }
            Sandboxes::Remote { host, .. } => {
                if let Err(e) = host.dbperf(&["server", "stop", sandbox, "--missing-ok"]) {
                    eprintln!("warning: stopping sandbox {sandbox} on {}: {e}", host.url);
                }
            }
        }
    }

    /// Starts `sandbox` of `server` with `settings` (on `cpus`), on a new datadir when
    /// `fresh`; returns the URL the client connects to.
    pub(crate) fn start(
        &self,
        sandbox: &str,
        server: &ServerSpec,
        settings: &[(String, String)],
        cpus: Option<&CpuSet>,
        fresh: bool,
    ) -> Result<String> {
        let spec = server.sandbox().ok_or_else(|| {
            anyhow!(
                "server {:?} is already running (target): the lab does not start it",
                server.label
            )
        })?;
        let what = || format!("starting {} as sandbox {sandbox}", server.label);
        match self {
            Sandboxes::Local(home) => {
                if fresh {
                    home.discard_datadir(sandbox)?;
                }
                let req = StartRequest {
                    settings: parse_settings(settings)?,
                    jemalloc: server.jemalloc,
                    cpus: cpus.map(|c| c.cpus.clone()),
                    ..StartRequest::new(spec, sandbox)
                };
                let report = home.start(&req).with_context(what)?;
                Ok(report.record.tcp_url().unwrap_or_else(|| report.record.socket_url()))
            }
            Sandboxes::Remote {
                host,
                listen,
                allow_from,
            } => {
                let mut args: Vec<String> = ["server", "start", spec.id, "--name", sandbox, "--json"]
                    .map(str::to_owned)
                    .to_vec();
                args.extend(["--listen".to_owned(), listen.to_string()]);
                for a in allow_from {
                    args.extend(["--allow-from".to_owned(), a.to_string()]);
                }
                for (k, v) in settings {
                    args.extend(["--set".to_owned(), format!("{k}={v}")]);
                }
                if let Some(c) = cpus {
                    args.extend(["--cpus".to_owned(), c.text.clone()]);
                }
                if server.jemalloc {
                    args.push("--jemalloc".into());
                }
                if fresh {
                    args.push("--fresh".into());
                }
                let out = dbperf_there(host, &args).with_context(|| format!("{} on {}", what(), host.url))?;
                started_target(&out).with_context(|| format!("{} on {}", what(), host.url))
            }
        }
    }

    /// Whether `dir` (a path under [`Sandboxes::root`]) holds a complete snapshot.
    pub(crate) fn snapshot_ready(&self, dir: &Path) -> Result<bool> {
        match self {
            Sandboxes::Local(_) => Ok(dbperf_server::snapshot::is_ready(dir)),
            Sandboxes::Remote { host, .. } => {
                match dbperf_there(
                    host,
                    &["server".into(), "snapshot".into(), "ready".into(), path_word(dir)],
                ) {
                    Ok(_) => Ok(true),
                    Err(e) if matches!(e.downcast_ref(), Some(RemoteError::Failed { .. })) => Ok(false),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Copies the stopped sandbox's datadir to `dir`.
    pub(crate) fn save_snapshot(&self, sandbox: &str, dir: &Path) -> Result<()> {
        match self {
            Sandboxes::Local(home) => Ok(home.save_snapshot(sandbox, dir)?),
            Sandboxes::Remote { host, .. } => snapshot_there(host, "save", sandbox, dir),
        }
    }

    /// Replaces the stopped sandbox's datadir with a copy of `dir`.
    pub(crate) fn restore_snapshot(&self, sandbox: &str, dir: &Path) -> Result<()> {
        match self {
            Sandboxes::Local(home) => Ok(home.restore_snapshot(sandbox, dir)?),
            Sandboxes::Remote { host, .. } => snapshot_there(host, "restore", sandbox, dir),
        }
    }
}

/// `dbperf server snapshot save|restore SANDBOX DIR` on `host`.
fn snapshot_there(host: &RemoteHost, what: &str, sandbox: &str, dir: &Path) -> Result<()> {
    let args = ["server", "snapshot", what, sandbox].map(str::to_owned);
    dbperf_there(host, &[&args[..], &[path_word(dir)]].concat()).map(drop)
}

/// Installs `server` on its remote host when it is missing there (`install`; otherwise a note
/// says so) and checks the settings the experiment gives it there, with that host's own copy
/// of the server's option list.
pub(crate) fn check_remote(
    server: &ServerSpec,
    host: &RemoteHost,
    settings: &[(String, String)],
    install: bool,
) -> Result<Option<String>> {
    let Some(spec) = server.sandbox() else {
        return Ok(None);
    };
    let listed = match this_dbperf_there(host).and_then(|()| {
        dbperf_there(
            host,
            &["server".into(), "list".into(), "--available".into(), "--json".into()],
        )
    }) {
        // A plan is a preview: a host out of reach now is a note, checked again when the lab runs.
        Err(err) if !install && unreachable(&err) => {
            return Ok(Some(format!(
            "server {:?}: {} cannot be reached now, so its settings were not checked there (lab run checks them): {}",
            server.label,
            host.url,
            err.to_string().lines().map(str::trim).collect::<Vec<_>>().join(" ")
        )))
        }
        other => {
            other.with_context(|| format!("server {:?}: asking {} what it has installed", server.label, host.url))?
        }
    };
    let installed = dbperf_server::listing::available_lines(&listed)
        .iter()
        .any(|v| v.id == spec.id && v.installed);
    if !installed {
        if !install {
            return Ok(Some(format!(
                "{} is not installed on {}: `dbperf server install {}` there (lab run installs it)",
                spec.id, host.url, spec.id
            )));
        }
        println!("Installing {} on {} ...", spec.id, host.url);
        dbperf_there(host, &["server".into(), "install".into(), spec.id.into()])
            .with_context(|| format!("installing {} on {}", spec.id, host.url))?;
    }
    let mut args: Vec<String> = vec!["server".into(), "check".into(), spec.id.into()];
    for (k, v) in settings {
        args.extend(["--set".to_owned(), format!("{k}={v}")]);
    }
    dbperf_there(host, &args).with_context(|| format!("settings of server {:?} on {}", server.label, host.url))?;
    Ok(None)
}

/// Refuses a host without its `dbperf` (saying how to copy this one there) and warns when the
/// one there is another build: the lab runs this build's commands and flags there.
fn this_dbperf_there(host: &RemoteHost) -> Result<()> {
    let me = std::env::current_exe().context("finding the dbperf binary")?;
    match host.has_binary(&me)? {
        Some(true) => Ok(()),
        Some(false) => {
            eprintln!(
                "warning: {} on {} is not this dbperf build; if a command fails there, copy this one: \
                 `{}`",
                host.dbperf,
                host.url,
                install_command(host)
            );
            Ok(())
        }
        None => Err(anyhow!(
            "{} has no dbperf at {} (the lab runs its sandbox there with it): copy this one with `{}`",
            host.url,
            host.dbperf,
            install_command(host)
        )),
    }
}

/// `dbperf remote install HOST [--ssh ...] [--dbperf ...]` for `host`.
fn install_command(host: &RemoteHost) -> String {
    let mut words = vec!["dbperf".to_owned(), "remote".into(), "install".into(), host.url.clone()];
    if host.ssh_line() != "ssh" {
        words.extend(["--ssh".into(), host.ssh_line()]);
    }
    if host.dbperf != dbperf_server::remote::DEFAULT_REMOTE_DBPERF {
        words.extend(["--dbperf".into(), host.dbperf.clone()]);
    }
    dbperf_server::remote::quote_words(&words.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Runs `dbperf ARGS` on `host`; the error is the [`RemoteError`] (a lost connection or a
/// command that failed there, with its output).
fn dbperf_there(host: &RemoteHost, args: &[String]) -> Result<String> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    host.dbperf(&words).map_err(anyhow::Error::from)
}

/// A path as the remote `dbperf` takes it.
fn path_word(dir: &Path) -> String {
    dir.to_string_lossy().into_owned()
}

/// The URL in `server start --json`'s output.
fn started_target(out: &str) -> Result<String> {
    out.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v["target"].as_str().map(str::to_owned))
        .ok_or_else(|| anyhow!("`dbperf server start --json` printed no target: {:?}", out.trim()))
}

pub(crate) fn parse_settings(settings: &[(String, String)]) -> Result<Vec<Setting>> {
    let mut parsed = Vec::with_capacity(settings.len());
    for (k, v) in settings {
        parsed.push(Setting::parse(&format!("{k}={v}"))?);
    }
    Ok(parsed)
}

/// Whether `err` is ssh losing or never reaching the host (not a command failing there).
pub(crate) fn unreachable(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| matches!(e.downcast_ref::<RemoteError>(), Some(RemoteError::Unreachable { .. })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_read_from_the_json_line() {
        let out = "warning: something\n{\"name\":\"s\",\"target\":\"mysql://sb:pw@10.0.0.2:4000/sbtest\"}\n";
        assert_eq!(started_target(out).unwrap(), "mysql://sb:pw@10.0.0.2:4000/sbtest");
        let e = started_target("sandbox started\n").unwrap_err().to_string();
        assert!(e.contains("printed no target"), "{e}");
    }
}
