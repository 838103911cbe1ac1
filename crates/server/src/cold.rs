//! Cold caches (`dbperf tpch power --cold`, and any run that must start cold): stops the
//! sandbox, drops the OS page cache and starts the sandbox again with the same server, port
//! and settings. Says so when the cache could not be dropped (it needs root:
//! `/proc/sys/vm/drop_caches`).

use crate::{lookup, SandboxHome, Setting, StartRequest};

/// The cold restart of sandbox `name` under `$DBPERF_HOME`: each call restarts it with the
/// OS page cache dropped, and says what it could not do (the cache needs root), or why the
/// restart failed. Checks now, not in the middle of a run, that the sandbox exists.
pub fn cold_restart(name: &str) -> anyhow::Result<impl Fn() -> Result<String, String> + Send + Sync> {
    let home = SandboxHome::from_env()?;
    home.status(name)?;
    let name = name.to_string();
    Ok(move || restart(&home, &name).map_err(|e| format!("cold restart of sandbox {name}: {e:#}")))
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
