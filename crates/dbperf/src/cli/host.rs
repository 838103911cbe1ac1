//! `dbperf host`: this machine's facts as every run records them (CPUs, memory, kernel, OS,
//! virtualisation), as text or as the manifest's JSON (`--json`, which `dbperf remote check`
//! reads from a database host).

use clap::Args;

use dbperf_results::host::HostInfo;

#[derive(Debug, Args)]
pub struct HostArgs {
    /// Print the facts as one JSON object, the `host` of a run's manifest.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &HostArgs) -> anyhow::Result<()> {
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
