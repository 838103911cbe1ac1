//! The database host's OS, when it is not the client's: `dbperf host --stream SECONDS` run
//! there through ssh ([`dbperf_server::remote`]) prints one [`OsSample`] per period as a JSON
//! line; [`RemoteOs`] reads them on a thread of its own and hands the sampler the newest. The
//! stream ending (the host gone, ssh cut) is kept as the reason its samples stop.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dbperf_server::remote::RemoteHost;

use super::os::OsSample;

#[derive(Default)]
struct Shared {
    latest: Option<OsSample>,
    ended: Option<String>,
}

/// A running `dbperf host --stream` on another host.
pub struct RemoteOs {
    child: Child,
    shared: Arc<Mutex<Shared>>,
}

impl RemoteOs {
    /// Starts the stream with `period` between samples.
    pub fn start(host: &RemoteHost, period: Duration) -> std::io::Result<RemoteOs> {
        let secs = format!("{}", period.as_secs_f64().max(0.1));
        let mut cmd = host.dbperf_command(&["host", "--stream", &secs]);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn()?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let reader = shared.clone();
        let url = host.url.clone();
        std::thread::Builder::new()
            .name("dbperf-remote-os".into())
            .spawn(move || {
                let mut lines = 0u64;
                if let Some(out) = stdout {
                    for line in BufReader::new(out).lines() {
                        let Ok(line) = line else { break };
                        if let Ok(sample) = serde_json::from_str::<OsSample>(&line) {
                            lines += 1;
                            if let Ok(mut s) = reader.lock() {
                                s.latest = Some(sample);
                            }
                        }
                    }
                }
                let mut why = String::new();
                if let Some(mut err) = stderr {
                    let _ = std::io::Read::read_to_string(&mut err, &mut why);
                }
                let why = why.trim();
                let text = match (lines, why.is_empty()) {
                    (0, true) => format!("the OS samples of {url} never came"),
                    (0, false) => format!("the OS samples of {url} never came: {why}"),
                    (_, true) => format!("the OS samples of {url} stopped: the connection ended"),
                    (_, false) => format!("the OS samples of {url} stopped: {why}"),
                };
                if let Ok(mut s) = reader.lock() {
                    s.ended = Some(text);
                    s.latest = None;
                }
            })?;
        Ok(RemoteOs { child, shared })
    }

    /// The newest sample not taken yet, or why there is none (`Ok(None)`: none arrived since
    /// the last take, the stream still running).
    pub fn take(&self) -> Result<Option<OsSample>, String> {
        let mut s = self
            .shared
            .lock()
            .map_err(|_| "the remote OS reader crashed".to_owned())?;
        match s.latest.take() {
            Some(sample) => Ok(Some(sample)),
            None => s.ended.clone().map_or(Ok(None), Err),
        }
    }
}

impl Drop for RemoteOs {
    fn drop(&mut self) {
        // Ends the ssh session, and with it the stream there.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
