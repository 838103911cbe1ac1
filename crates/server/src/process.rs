//! Process plumbing for sandboxes: starting a server detached from dbperf, pid files, "is
//! this pid still our mariadbd", the servers started with a given config file, who holds a
//! server's own lock on its datadir, signals with a deadline, and the per-sandbox lock that
//! keeps two dbperf processes from racing.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::daemon::Launch;
use super::ServerError;

const POLL: Duration = Duration::from_millis(50);

/// The servers this process spawned and has not reaped yet. Only these are ever reaped with
/// `waitpid` here: a pid read from a pid file may by now be another child of this process
/// (a client program, a lab's point), whose own wait would then fail with ECHILD. A pid in
/// this list cannot have been reused, since it stays taken until it is reaped.
static SPAWNED: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Says that the server `pid` was reaped by its `Child` (a wait, a `try_wait` that saw it end).
pub(crate) fn forget(pid: i32) {
    if let Ok(mut list) = SPAWNED.lock() {
        list.retain(|p| *p != pid);
    }
}

/// Reaps `pid` if it is a server this process spawned and it has ended; true if it did.
fn reap_if_spawned(pid: i32) -> bool {
    let Ok(mut list) = SPAWNED.lock() else {
        return false;
    };
    if !list.contains(&pid) {
        return false;
    }
    // SAFETY: waitpid with WNOHANG and a null status pointer has no memory effects.
    let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
    let gone = r > 0 || (r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD));
    if gone {
        list.retain(|p| *p != pid);
    }
    r > 0
}

pub(crate) use dbperf_core::nofollow::Open as Write;

/// Opens (creating) a file in a sandbox directory for writing without following a symbolic
/// link in its place: the directory belongs to the server's account, which must not be able
/// to steer a write of dbperf's (as root) onto another file.
pub(crate) fn open_nofollow(path: &Path, how: Write) -> std::io::Result<File> {
    dbperf_core::nofollow::open(path, how)
}

/// Spawns a server `cmd` in a session of its own (so dbperf's Ctrl-C does not reach it),
/// stdin closed, stdout and stderr appended to `log`, with `launch`'s preload library and
/// CPU set applied before it runs so every server thread inherits them. `on_spawn` turns a
/// failed spawn into the caller's error.
pub(crate) fn spawn_detached(
    mut cmd: Command,
    log: &Path,
    launch: &Launch,
    on_spawn: impl FnOnce(std::io::Error) -> ServerError,
) -> Result<Child, ServerError> {
    let out = open_nofollow(log, Write::Append).map_err(|e| ServerError::io("cannot open error log", log, e))?;
    let err = out
        .try_clone()
        .map_err(|e| ServerError::io("cannot reopen error log", log, e))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    if let Some(lib) = &launch.preload {
        cmd.env("LD_PRELOAD", lib);
    }
    let cpus = launch.cpus.clone();
    // SAFETY: setsid and sched_setaffinity are async-signal-safe, and nothing here allocates.
    // A wrapper that execs the server in place (`unshare`) keeps the pid and the affinity.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(cpus) = &cpus {
                dbperf_core::cpus::restrict(0, cpus)?;
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(on_spawn)?;
    if let Ok(mut list) = SPAWNED.lock() {
        list.push(child.id() as i32);
    }
    Ok(child)
}

/// Reads a pid file (the pid is its first line: PostgreSQL's `postmaster.pid` has more); a
/// missing or garbled file means "no pid".
pub(crate) fn read_pid_file(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
        .filter(|pid| *pid > 0)
}

/// True if `pid` is a live (non-zombie) process whose command line mentions `marker`
/// (the sandbox's my.cnf path), so a stale pid file reused by another process reads as dead.
pub(crate) fn is_our_server(pid: i32, marker: &Path) -> bool {
    let state = proc_state(pid);
    if matches!(state, Some('Z' | 'X') | None) {
        // Reap it if it is a server this process spawned (SandboxHome::start spawns mariadbd
        // in-process, as TempSandbox does), never another child of ours.
        reap_if_spawned(pid);
        return false;
    }
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let marker = marker.as_os_str().as_encoded_bytes();
    cmdline.windows(marker.len()).any(|w| w == marker)
}

/// Every live process whose command line mentions `marker` (a sandbox's config file): the
/// servers started for that sandbox, including one that has not written its pid file yet.
pub(crate) fn processes_naming(marker: &Path) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id() as i32;
    let mut pids: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me && is_our_server(*pid, marker))
        .collect();
    // A server's child caught between fork and renaming itself (a PostgreSQL backend)
    // still shows its parent's command line: only the parent counts.
    let found = pids.clone();
    pids.retain(|pid| parent_pid(*pid).is_none_or(|parent| !found.contains(&parent)));
    pids.sort_unstable();
    pids
}

/// The process holding a POSIX write lock on `path` (InnoDB locks `ibdata1`, Aria its
/// `aria_log_control`, for as long as the server runs), if any: the server's own record of
/// using a datadir, whatever config it was started with.
pub(crate) fn lock_holder(path: &Path) -> Option<i32> {
    let file = File::open(path).ok()?;
    // SAFETY: a zeroed flock is a valid argument; F_GETLK only writes into it.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: fcntl(F_GETLK) on a descriptor we own with a valid flock pointer.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut lock) } != 0 {
        return None;
    }
    (lock.l_type != libc::F_UNLCK as libc::c_short && lock.l_pid > 0).then_some(lock.l_pid)
}

/// The program name of a live process (`/proc/PID/comm`), `None` once it is gone or a zombie.
pub(crate) fn program_name(pid: i32) -> Option<String> {
    if matches!(proc_state(pid), Some('Z' | 'X') | None) {
        return None;
    }
    Some(
        std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .ok()?
            .trim()
            .to_owned(),
    )
}

/// Sends `signal` to `pid`; ESRCH (already gone) is success.
pub(crate) fn send_signal(name: &str, pid: i32, signal: libc::c_int) -> Result<(), ServerError> {
    // SAFETY: kill(2) has no memory effects.
    if unsafe { libc::kill(pid, signal) } == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        return Ok(());
    }
    Err(ServerError::Signal {
        name: name.to_owned(),
        pid,
        source: err,
    })
}

/// Polls until `pid` is no longer our server or `timeout` passes; true if it exited.
pub(crate) fn wait_exit(pid: i32, marker: &Path, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if !is_our_server(pid, marker) {
            await_gone(pid);
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep(POLL);
    }
}

/// Waits (up to 5 s) until an exiting `pid` is really gone, and reaps it if it is our own
/// child (SandboxHome::start spawns the server in-process, as TempSandbox does).
///
/// The kernel frees a process's memory (its command line reads empty) before the process
/// turns into a zombie, so "no longer our server" can be seen while it still runs its exit;
/// a stop that returned then would leave a live process behind. A pid whose command line is
/// not empty belongs to someone else by now, and is not waited for.
fn await_gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if reap_if_spawned(pid) {
            return;
        }
        let exiting = match proc_state(pid) {
            // It may have turned into a zombie since the reap above: reap it now if it is a
            // server this process spawned.
            Some('Z') => {
                reap_if_spawned(pid);
                // A leader thread that has exited shows Z while the process's other threads
                // still run their shutdown (MySQL 5.6 ends its main thread first).
                other_threads_run(pid)
            }
            None | Some('X') => false,
            Some(_) => std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.is_empty()),
        };
        if !exiting || Instant::now() >= deadline {
            return;
        }
        sleep(Duration::from_millis(10));
    }
}

/// True if a thread of `pid` other than an exited (zombie or dead) one is still there.
fn other_threads_run(pid: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read_to_string(task.path().join("stat"))
            .ok()
            .and_then(|stat| state_letter(&stat))
            .is_some_and(|state| !matches!(state, 'Z' | 'X'))
    })
}

/// The parent of a live process (field 4 of `/proc/PID/stat`).
fn parent_pid(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// The state letter of `/proc/PID/stat` (R, S, D, Z, X, ...), `None` once the pid is gone.
fn proc_state(pid: i32) -> Option<char> {
    state_letter(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Field 3 of a `stat` file, after the parenthesized command name (which may hold spaces).
fn state_letter(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// An exclusive, non-blocking `flock` on a sandbox's lock file, released on drop.
pub(crate) struct SandboxLock {
    _file: File,
}

impl SandboxLock {
    pub(crate) fn acquire(name: &str, path: PathBuf) -> Result<SandboxLock, ServerError> {
        let file = open_nofollow(&path, Write::Keep).map_err(|e| ServerError::io("cannot open lock file", &path, e))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(ServerError::Busy {
                    name: name.to_owned(),
                    path,
                });
            }
            return Err(ServerError::io("cannot lock", &path, err));
        }
        Ok(SandboxLock { _file: file })
    }
}

/// The last `n` lines written to a log file after byte `from` (where this start began), or a
/// note saying why there are none.
pub(crate) fn tail(path: &Path, from: u64, n: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let from = usize::try_from(from).unwrap_or(0).min(bytes.len());
            let text = String::from_utf8_lossy(&bytes[from..]);
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(n);
            let tail = lines[start..].join("\n");
            if tail.is_empty() {
                "(nothing was logged)".to_owned()
            } else {
                tail
            }
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_only_with_matching_marker() {
        let me = std::process::id() as i32;
        let exe = std::env::current_exe().unwrap();
        assert!(is_our_server(me, &exe));
        assert!(!is_our_server(me, Path::new("/nonexistent/my.cnf")));
        assert!(!is_our_server(i32::MAX, &exe));
    }

    #[test]
    #[allow(clippy::zombie_processes, reason = "wait_exit reaps it: that is what is tested")]
    fn wait_exit_returns_only_once_the_process_is_gone() {
        let child = Command::new("sleep").arg("3737").spawn().unwrap();
        let pid = child.id() as i32;
        // As spawn_detached records the servers it starts.
        SPAWNED.lock().unwrap().push(pid);
        // Between fork and exec the child still shows the test binary's command line.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !is_our_server(pid, Path::new("3737")) {
            assert!(Instant::now() < deadline, "sleep 3737 never showed up as pid {pid}");
            sleep(Duration::from_millis(5));
        }
        send_signal("test", pid, libc::SIGTERM).unwrap();
        assert!(wait_exit(pid, Path::new("3737"), Duration::from_secs(5)));
        // Our child, so it was reaped too: no zombie, no exiting process.
        assert_eq!(proc_state(pid), None);
    }

    /// A child that is not a server this process spawned (a client program, a lab's point)
    /// is never reaped here, even when a stale pid file names its pid: its own wait must see
    /// its exit, not ECHILD.
    #[test]
    fn other_children_are_left_to_their_own_wait() {
        let mut child = Command::new("sleep").arg("3739").spawn().unwrap();
        let pid = child.id() as i32;
        child.kill().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while proc_state(pid) != Some('Z') {
            assert!(Instant::now() < deadline, "sleep 3739 never became a zombie");
            sleep(Duration::from_millis(5));
        }
        assert!(!is_our_server(pid, Path::new("3739")));
        assert_eq!(proc_state(pid), Some('Z'), "left for its own wait");
        assert!(child.wait().is_ok(), "the child's own wait still sees it");
    }

    #[test]
    fn tail_reads_only_after_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("error.log");
        std::fs::write(&p, "old 1\nold 2\nnew 1\nnew 2\nnew 3\n").unwrap();
        assert_eq!(tail(&p, 12, 2), "new 2\nnew 3");
        assert_eq!(tail(&p, 12, 10), "new 1\nnew 2\nnew 3");
        assert_eq!(tail(&p, 1000, 10), "(nothing was logged)");
    }

    #[test]
    #[allow(clippy::zombie_processes, reason = "wait_exit reaps it")]
    fn processes_are_found_by_the_file_they_were_started_with() {
        let child = Command::new("sleep").arg("3738").spawn().unwrap();
        let pid = child.id() as i32;
        SPAWNED.lock().unwrap().push(pid);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !processes_naming(Path::new("3738")).contains(&pid) {
            assert!(Instant::now() < deadline, "sleep 3738 was not found");
            sleep(Duration::from_millis(5));
        }
        assert!(processes_naming(Path::new("/nonexistent/my.cnf")).is_empty());
        send_signal("test", pid, libc::SIGKILL).unwrap();
        assert!(wait_exit(pid, Path::new("3738"), Duration::from_secs(5)));
    }

    #[test]
    fn a_lock_is_seen_with_its_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ibdata1");
        std::fs::write(&path, "x").unwrap();
        assert_eq!(lock_holder(&path), None);
        assert_eq!(lock_holder(&dir.path().join("missing")), None);
        // flock(1) takes a BSD lock, which F_GETLK does not see: lock with fcntl through
        // Python instead, in a process of its own.
        let Ok(mut child) = Command::new("python3")
            .args([
                "-c",
                "import fcntl,sys,time; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(30)",
            ])
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
        else {
            eprintln!("skipped: no python3");
            return;
        };
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        assert_eq!(lock_holder(&path), Some(child.id() as i32));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn pid_file_parsing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.pid");
        assert_eq!(read_pid_file(&p), None);
        std::fs::write(&p, "1234\n").unwrap();
        assert_eq!(read_pid_file(&p), Some(1234));
        std::fs::write(&p, "junk").unwrap();
        assert_eq!(read_pid_file(&p), None);
    }
}
