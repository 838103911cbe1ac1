//! Another host, driven through the system `ssh`: the database host of a benchmark whose
//! client runs here.
//!
//! This module owns a host's address (`ssh://USER@HOST[:PORT]`) and the ssh command line that
//! reaches it (`ssh = "ssh -i KEY -o ..."`, split like a shell would), running `dbperf` there
//! (the binary at [`RemoteHost::dbperf`], with `DBPERF_HOME` when one is given) with every word
//! quoted for the remote shell, copying this `dbperf` there ([`RemoteHost::install`]), and
//! telling a lost connection ([`RemoteError::Unreachable`], ssh's own exit status 255) from a
//! command that failed there ([`RemoteError::Failed`]).
//!
//! ssh always runs with `BatchMode=yes` (never a password prompt: nothing here is
//! interactive) and keep-alives every 2 s, so a host that goes away is noticed within about
//! 6 s instead of at the next TCP timeout. Options in the user's `ssh` command come first and
//! win (ssh takes the first value it sees for an option).

use std::io::Read as _;
use std::path::Path;
use std::process::{Command, Stdio};

use sha1::{Digest, Sha1};

/// Where `dbperf remote install` puts the binary, relative to the login's home.
pub const DEFAULT_REMOTE_DBPERF: &str = ".dbperf/bin/dbperf";

/// Options dbperf adds after the user's own.
const SSH_OPTIONS: &[&str] = &[
    "-o",
    "BatchMode=yes",
    "-o",
    "ServerAliveInterval=2",
    "-o",
    "ServerAliveCountMax=3",
    "-o",
    "ConnectTimeout=10",
];

/// ssh's own exit status when it could not connect or lost the connection.
const SSH_FAILED: i32 = 255;

/// Everything that can go wrong with another host.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("host {url:?}: {why}; write it as ssh://USER@HOST[:PORT] (for example ssh://bench@db1.lab:22)")]
    BadUrl { url: String, why: String },

    #[error("ssh command {ssh:?}: {why}; give a command line such as \"ssh -i ~/.ssh/lab_key -o StrictHostKeyChecking=accept-new\"")]
    BadSsh { ssh: String, why: String },

    #[error("cannot reach {host} over ssh ({status}): {stderr}\nCheck that `{command}` works by hand (the key, the host, the port); dbperf never types a password")]
    Unreachable {
        host: String,
        status: String,
        stderr: String,
        command: String,
    },

    #[error("on {host}, `{command}` failed ({status}): {stderr}")]
    Failed {
        host: String,
        command: String,
        status: String,
        stderr: String,
    },

    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}

/// A host reached with ssh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteHost {
    /// `ssh://USER@HOST[:PORT]` as given.
    pub url: String,
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    /// The ssh program and the user's options, split as a shell would.
    ssh: Vec<String>,
    /// The `dbperf` to run there: a path (relative to the login's home, or absolute).
    pub dbperf: String,
    /// `DBPERF_HOME` there; `None` uses the login's default (`~/.dbperf`).
    pub home: Option<String>,
}

/// What [`RemoteHost::install`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Installed {
    /// The same binary was there already.
    AlreadyThere,
    /// Copied (bytes).
    Copied(u64),
}

impl RemoteHost {
    /// Reads `ssh://USER@HOST[:PORT]` and an optional ssh command line (default `ssh`).
    pub fn parse(url: &str, ssh: Option<&str>) -> Result<RemoteHost, RemoteError> {
        let bad = |why: &str| RemoteError::BadUrl {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        let rest = url
            .strip_prefix("ssh://")
            .ok_or_else(|| bad("it does not start with ssh://"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains('/') || rest.contains('?') {
            return Err(bad("a host takes no path or query"));
        }
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let (host, port) = match hostport.strip_prefix('[') {
            // [IPv6]:port
            Some(v6) => {
                let (h, after) = v6
                    .split_once(']')
                    .ok_or_else(|| bad("an IPv6 address needs its closing ]"))?;
                (h, after.strip_prefix(':'))
            }
            None => match hostport.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (hostport, None),
            },
        };
        let word_ok = |s: &str| {
            !s.is_empty()
                && !s.starts_with('-')
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'))
        };
        if !word_ok(host) {
            return Err(bad("the host name is empty or has characters a host name cannot have"));
        }
        if let Some(u) = user {
            if !word_ok(u) || u.contains(':') {
                return Err(bad(
                    "the user name is empty or has characters a login cannot have (a password does not go here)",
                ));
            }
        }
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad("the port is not a number in 1..=65535"))?,
            ),
            None => None,
        };
        let ssh_text = ssh.unwrap_or("ssh");
        let ssh = shlex::split(ssh_text)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| RemoteError::BadSsh {
                ssh: ssh_text.to_owned(),
                why: "it is empty or its quotes do not close".to_owned(),
            })?;
        Ok(RemoteHost {
            url: url.to_owned(),
            user: user.map(str::to_owned),
            host: host.to_owned(),
            port,
            ssh,
            dbperf: DEFAULT_REMOTE_DBPERF.to_owned(),
            home: None,
        })
    }

    /// `USER@HOST` as ssh takes it.
    fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        }
    }

    /// The ssh command that runs `words` on the host, each quoted for its shell.
    pub fn command(&self, words: &[&str]) -> Command {
        let mut cmd = Command::new(&self.ssh[0]);
        cmd.args(&self.ssh[1..]).args(SSH_OPTIONS);
        if let Some(p) = self.port {
            cmd.arg("-p").arg(p.to_string());
        }
        cmd.arg("--").arg(self.destination()).arg(quote_words(words));
        cmd.stdin(Stdio::null());
        cmd
    }

    /// The ssh command that runs `dbperf ARGS` on the host (with its `DBPERF_HOME`).
    pub fn dbperf_command(&self, args: &[&str]) -> Command {
        let mut words: Vec<String> = Vec::new();
        if let Some(home) = &self.home {
            words.push("env".into());
            words.push(format!("DBPERF_HOME={home}"));
        }
        words.push(self.dbperf.clone());
        words.extend(args.iter().map(|a| (*a).to_owned()));
        let refs: Vec<&str> = words.iter().map(String::as_str).collect();
        self.command(&refs)
    }

    /// Runs `dbperf ARGS` there and returns what it printed.
    pub fn dbperf(&self, args: &[&str]) -> Result<String, RemoteError> {
        let shown = format!("dbperf {}", args.join(" "));
        self.output(self.dbperf_command(args), &shown)
    }

    /// Runs `cmd` (an ssh command of this host) and returns its standard output.
    fn output(&self, mut cmd: Command, shown: &str) -> Result<String, RemoteError> {
        let out = cmd.output().map_err(|e| RemoteError::Io {
            action: "cannot run",
            path: self.ssh[0].clone().into(),
            source: e,
        })?;
        self.check(out.status, &out.stderr, shown)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// An error for a finished ssh: unreachable (255) or failed there.
    pub fn check(&self, status: std::process::ExitStatus, stderr: &[u8], shown: &str) -> Result<(), RemoteError> {
        if status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(stderr).trim().to_owned();
        if status.code() == Some(SSH_FAILED) {
            return Err(RemoteError::Unreachable {
                host: self.url.clone(),
                status: status.to_string(),
                stderr,
                command: self.shown_ssh(),
            });
        }
        Err(RemoteError::Failed {
            host: self.url.clone(),
            command: shown.to_owned(),
            status: status.to_string(),
            stderr,
        })
    }

    /// The user's ssh command line as given (quoted again), for a child that reaches the same
    /// host (`--server-host-ssh`).
    pub fn ssh_line(&self) -> String {
        quote_words(&self.ssh.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// How the host sees this connection: (the client's address, the host's own address the
    /// connection arrived at), from `SSH_CONNECTION` there. The host's address is where a
    /// sandbox listens for this client; the client's is the one its account allows.
    pub fn connection(&self) -> Result<(std::net::IpAddr, std::net::IpAddr), RemoteError> {
        let text = self.output(self.command(&["printenv", "SSH_CONNECTION"]), "printenv SSH_CONNECTION")?;
        parse_ssh_connection(&text).ok_or_else(|| RemoteError::Failed {
            host: self.url.clone(),
            command: "printenv SSH_CONNECTION".into(),
            status: "a reply that is not CLIENT_ADDR PORT HOST_ADDR PORT".into(),
            stderr: text.trim().to_owned(),
        })
    }

    /// The ssh command line to try by hand.
    fn shown_ssh(&self) -> String {
        let mut words = self.ssh.clone();
        if let Some(p) = self.port {
            words.push("-p".into());
            words.push(p.to_string());
        }
        words.push(self.destination());
        words.push("true".into());
        quote_words(&words.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Copies `binary` (this dbperf) to [`RemoteHost::dbperf`] on the host unless the same file
    /// is there. The copy is written beside the target under a fresh name that must not exist
    /// (the shell's noclobber: no write through a link planted there), made executable, and
    /// renamed over the target.
    pub fn install(&self, binary: &Path) -> Result<Installed, RemoteError> {
        let io = |action, e| RemoteError::Io {
            action,
            path: binary.to_owned(),
            source: e,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(binary)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| io("cannot read", e))?;
        if self.sha1_there()?.as_deref() == Some(hex(&Sha1::digest(&bytes)).as_str()) {
            return Ok(Installed::AlreadyThere);
        }
        let script = "set -eC; umask 022; t=\"$1\"; tmp=\"$t.tmp-$$\"; mkdir -p -- \"$(dirname -- \"$t\")\"; \
                      cat > \"$tmp\"; chmod 0755 \"$tmp\"; mv -f -- \"$tmp\" \"$t\"";
        let mut cmd = self.command(&["sh", "-c", script, "sh", &self.dbperf]);
        cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| RemoteError::Io {
            action: "cannot run",
            path: self.ssh[0].clone().into(),
            source: e,
        })?;
        let mut stdin = child.stdin.take().expect("piped");
        let written = std::io::Write::write_all(&mut stdin, &bytes);
        drop(stdin);
        let out = child.wait_with_output().map_err(|e| io("cannot copy", e))?;
        self.check(out.status, &out.stderr, &format!("copying dbperf to {}", self.dbperf))?;
        written.map_err(|e| io("cannot copy", e))?;
        Ok(Installed::Copied(bytes.len() as u64))
    }
}

/// `SSH_CONNECTION`'s `CLIENT_ADDR CLIENT_PORT HOST_ADDR HOST_PORT` as (client, host); an
/// IPv6 zone (`fe80::1%eth0`) is dropped.
fn parse_ssh_connection(text: &str) -> Option<(std::net::IpAddr, std::net::IpAddr)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let addr = |w: &str| w.split('%').next()?.parse::<std::net::IpAddr>().ok();
    match words.as_slice() {
        [client, _, host, _] => Some((addr(client)?, addr(host)?)),
        _ => None,
    }
}

impl RemoteHost {
    /// The SHA-1 of [`RemoteHost::dbperf`] there; `None` when there is no such file.
    fn sha1_there(&self) -> Result<Option<String>, RemoteError> {
        let there = self.output(
            self.command(&["sh", "-c", "sha1sum -- \"$1\" 2>/dev/null || true", "sh", &self.dbperf]),
            "sha1sum",
        )?;
        Ok(there.split_whitespace().next().map(str::to_owned))
    }

    /// Whether the `dbperf` there is `binary` (this one), byte for byte: `None` when there is
    /// none there.
    pub fn has_binary(&self, binary: &Path) -> Result<Option<bool>, RemoteError> {
        let Some(there) = self.sha1_there()? else {
            return Ok(None);
        };
        let bytes = std::fs::read(binary).map_err(|e| RemoteError::Io {
            action: "cannot read",
            path: binary.to_owned(),
            source: e,
        })?;
        Ok(Some(there == hex(&Sha1::digest(&bytes))))
    }
}

/// Words as one command line for a POSIX shell, each quoted where it needs it.
pub fn quote_words(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| shlex::try_quote(w).map_or_else(|_| "''".to_owned(), |q| q.into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_urls_read_and_bad_ones_say_why() {
        let h = RemoteHost::parse("ssh://bench@db1.lab:2222", Some("ssh -i '/keys/lab key' -o X=y")).unwrap();
        assert_eq!(
            (h.user.as_deref(), h.host.as_str(), h.port),
            (Some("bench"), "db1.lab", Some(2222))
        );
        assert_eq!(h.ssh, ["ssh", "-i", "/keys/lab key", "-o", "X=y"]);
        let v6 = RemoteHost::parse("ssh://[fe80::1]:22", None).unwrap();
        assert_eq!((v6.host.as_str(), v6.port, v6.user), ("fe80::1", Some(22), None));
        for (url, says) in [
            ("db1", "ssh://"),
            ("ssh://", "host name"),
            ("ssh://-oProxyCommand=x", "host name"),
            ("ssh://u:pw@db1", "password"),
            ("ssh://db1:0", "port"),
            ("ssh://db1:99999", "port"),
            ("ssh://db1/path", "no path"),
        ] {
            let e = RemoteHost::parse(url, None).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
        let e = RemoteHost::parse("ssh://db1", Some("ssh -i 'open"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("quotes do not close"), "{e}");
    }

    #[test]
    fn the_connection_names_both_ends() {
        let (c, h) = parse_ssh_connection("10.0.0.1 51234 10.0.0.2 22\n").unwrap();
        assert_eq!((c.to_string(), h.to_string()), ("10.0.0.1".into(), "10.0.0.2".into()));
        let (c, _) = parse_ssh_connection("fe80::1%eth0 1 fe80::2 22").unwrap();
        assert_eq!(c.to_string(), "fe80::1");
        assert!(parse_ssh_connection("").is_none());
        assert!(parse_ssh_connection("10.0.0.1 1 nothost 22").is_none());
        let h = RemoteHost::parse("ssh://db1", Some("ssh -i '/keys/lab key'")).unwrap();
        assert_eq!(h.ssh_line(), "ssh -i '/keys/lab key'");
    }

    #[test]
    fn remote_words_are_quoted_and_user_options_come_first() {
        let mut h = RemoteHost::parse("ssh://bench@db1:2222", Some("ssh -o BatchMode=no")).unwrap();
        h.home = Some("/srv/dbperf home".into());
        let cmd = h.dbperf_command(&["server", "start", "x; rm -rf /"]);
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(args[..2], ["-o", "BatchMode=no"]);
        assert!(args.contains(&"BatchMode=yes".to_owned()));
        let n = args.len();
        assert_eq!(args[n - 3..n - 1], ["--", "bench@db1"]);
        assert_eq!(
            args[n - 1],
            "env 'DBPERF_HOME=/srv/dbperf home' .dbperf/bin/dbperf server start 'x; rm -rf /'"
        );
        let p = args.iter().position(|a| a == "-p").unwrap();
        assert_eq!(args[p + 1], "2222");
    }
}
