//! `dbperf tpch power --cold`: stops the sandbox, drops the OS page cache and starts the
//! sandbox again with the same server, port and settings. Says so when the cache could
//! not be dropped (it needs root: `/proc/sys/vm/drop_caches`).

use crate::server::{lookup, SandboxHome, Setting, StartRequest};
use crate::workloads::tpch::power::ColdStart;

/// The restart for sandbox `name` under `$DBPERF_HOME`.
pub fn cold_start(name: &str) -> anyhow::Result<ColdStart> {
    let home = SandboxHome::from_env()?;
    // Fail now, not in the middle of a run, if the sandbox is unknown.
    home.status(name)?;
    let name = name.to_string();
    Ok(Box::new(move || {
        restart(&home, &name).map_err(|e| format!("cold restart of sandbox {name}: {e:#}"))
    }))
}

fn restart(home: &SandboxHome, name: &str) -> anyhow::Result<String> {
    let record = home.status(name)?.record;
    home.stop(name)?;
    let note = drop_page_cache();
    let settings = record
        .settings
        .iter()
        .map(|s| Setting::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let req = StartRequest {
        settings,
        port: record.port,
        socket_only: record.port.is_none(),
        ..StartRequest::new(lookup(&record.server)?, name)
    };
    home.start(&req)?;
    Ok(note)
}

/// `sync`, then `echo 3 > /proc/sys/vm/drop_caches`; empty when done, else why not.
fn drop_page_cache() -> String {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    match std::fs::write("/proc/sys/vm/drop_caches", "3\n") {
        Ok(()) => String::new(),
        Err(e) => format!(
            "OS page cache NOT dropped ({e}; needs root): the server was restarted, but files may still be cached"
        ),
    }
}
