//! `dbperf host`: this machine's facts as every run records them (CPUs, memory, kernel, OS,
//! virtualisation), as text or as the manifest's JSON (`--json`, which `dbperf remote check`
//! and `--server-host` read from a database host); `--stream SECONDS` prints its OS sample
//! (CPU, memory, disks, network, as telemetry has them) every SECONDS as JSON lines, until
//! whoever reads them goes (what a run's `--server-host` telemetry reads through ssh).

use clap::Args;

use dbperf_results::host::HostInfo;

#[derive(Debug, Args)]
pub struct HostArgs {
    /// Print the facts as one JSON object, the `host` of a run's manifest.
    #[arg(long, conflicts_with = "stream")]
    pub json: bool,
    /// Print an OS sample every SECONDS as a JSON line until the reader goes away.
    #[arg(long, value_name = "SECONDS", value_parser = dbperf_core::bounds::period_flag)]
    pub stream: Option<f64>,
}

pub fn run(a: &HostArgs) -> anyhow::Result<()> {
    if let Some(secs) = a.stream {
        return stream(std::time::Duration::from_secs_f64(secs));
    }
    let facts = HostInfo::collect();
    if a.json {
        println!("{}", serde_json::to_string(&facts)?);
        return Ok(());
    }
    for (name, value) in dbperf_report::setup::host_facts(&facts) {
        println!("{name:<16}{value}");
    }
    Ok(())
}

/// One OS sample per `period` on standard output; returns when standard output is closed.
fn stream(period: std::time::Duration) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut os = dbperf_telemetry::os::OsSampler::new();
    let mut out = std::io::stdout().lock();
    // The first sample comes early (rates over a quarter second), so a reader that started
    // with the run has one for its first period.
    let mut wait = period.min(std::time::Duration::from_millis(250));
    loop {
        std::thread::sleep(wait);
        wait = period;
        let line = serde_json::to_string(&os.sample())?;
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            // The reader (a run's telemetry, over ssh) went away: that is the end.
            return Ok(());
        }
    }
}
