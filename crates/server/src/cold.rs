//! Cold caches (`dbperf tpch power --cold`, and any run that must start cold): stops the
//! sandbox, drops the OS page cache and starts the sandbox again with the same server, port,
//! listening address and settings (`dbperf server restart NAME --cold`; on another host, that
//! command over ssh). Says so when the cache could not be dropped (it needs root:
//! `/proc/sys/vm/drop_caches`).

use crate::{lookup, SandboxHome, Setting, StartRequest};

/// The cold restart of sandbox `name` under `$DBPERF_HOME`: each call restarts it with the
/// OS page cache dropped, and says what it could not do (the cache needs root), or why the
/// restart failed. Checks now, not in the middle of a run, that the sandbox exists.
pub fn cold_restart(name: &str) -> anyhow::Result<impl Fn() -> Result<String, String> + Send + Sync> {
    let home = SandboxHome::from_env()?;
    home.status(name)?;
    let name = name.to_string();
    Ok(move || restart(&home, &name, true).map_err(|e| format!("cold restart of sandbox {name}: {e:#}")))
}

/// The cold restart of sandbox `name` on another host: `dbperf server restart NAME --cold` run
/// there over ssh, each call. The host is asked now whether the sandbox exists.
pub fn remote_cold_restart(
    host: crate::remote::RemoteHost,
    name: &str,
) -> anyhow::Result<impl Fn() -> Result<String, String> + Send + Sync> {
    host.dbperf(&["server", "list", "--json"])
        .map_err(anyhow::Error::from)
        .and_then(|listed| {
            let known = crate::listing::sandbox_lines(&listed)
                .iter()
                .any(|s| s.record.name == name);
            anyhow::ensure!(known, "no sandbox {name:?} on {}", host.url);
            Ok(())
        })?;
    let name = name.to_string();
    Ok(move || {
        host.dbperf(&["server", "restart", &name, "--cold"])
            .map(|out| {
                // What the restart could not do (the page cache needs root there).
                out.lines()
                    .filter(|l| l.contains("NOT dropped"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .map_err(|e| format!("cold restart of sandbox {name} on {}: {e}", host.url))
    })
}

/// Stops sandbox `name` and starts it again with the same server, port, listening address,
/// clients and settings; with `cold`, the OS page cache is dropped in between. Returns what
/// could not be done (empty when everything was).
pub fn restart(home: &SandboxHome, name: &str, cold: bool) -> anyhow::Result<String> {
    let record = home.status(name)?.record;
    home.stop(name)?;
    let note = if cold { drop_page_cache() } else { String::new() };
    let settings = record
        .settings
        .iter()
        .map(|s| Setting::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let req = StartRequest {
        settings,
        port: record.port,
        socket_only: record.port.is_none(),
        listen: match record.listen {
            Some(addr) => Some(crate::Listen::new(addr, record.allow_from.clone())?),
            None => None,
        },
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
