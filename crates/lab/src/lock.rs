//! One `lab run` or `lab tune` of an experiment at a time, and names that stay inside their
//! directories.
//!
//! Two runs of one experiment would share its state file, its sandboxes and its prepared data
//! sets, and both fail half-way. [`ExperimentLock`] is an exclusive `flock` on `.lock` in the
//! experiment's lab directory (`<results-dir>/lab/NAME/`) and in its data directory
//! (`$DBPERF_HOME/lab/NAME/`), held for the whole run; its holder writes its pid, start time
//! and command line into the file, so a second run says who holds it. The kernel drops the
//! lock when the holder exits, however it exits.
//!
//! An experiment's name becomes a directory name in both places, so it must be one path
//! component ([`check_experiment_name`]).

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{bail, Context, Result};

/// The lock file in each directory.
const LOCK_FILE: &str = ".lock";

/// Checks that `name` can name an experiment's directories: one path component of letters,
/// digits, `-`, `_` and `.` (and `=` and `,`, as in variant names), not starting with `.`
/// (so neither `.` nor `..`), at most 200 bytes.
pub fn check_experiment_name(name: &str) -> std::result::Result<(), String> {
    let usable = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '=' | ',');
    if name.is_empty() {
        return Err("an experiment name may not be empty".into());
    }
    if name.starts_with('.') {
        return Err(format!(
            "experiment name {name:?} starts with `.`: it names a directory under <results-dir>/lab/ and \
             $DBPERF_HOME/lab/, so it must be a plain name such as \"checkpoint-study\""
        ));
    }
    if name.len() > 200 || !name.chars().all(usable) {
        return Err(format!(
            "experiment name {name:?} is not a single plain name: use letters, digits, `-`, `_` and `.` only \
             (no `/`), at most 200 characters"
        ));
    }
    Ok(())
}

/// `check_experiment_name` as a clap value parser.
pub fn parse_experiment_name(name: &str) -> std::result::Result<String, String> {
    check_experiment_name(name).map(|()| name.to_owned())
}

/// The held lock of one experiment; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct ExperimentLock {
    _files: Vec<File>,
}

impl ExperimentLock {
    /// Locks experiment `name` in each of `dirs` (created if missing), or fails saying who
    /// holds it.
    pub fn acquire(name: &str, dirs: &[&Path]) -> Result<ExperimentLock> {
        let mut files = Vec::with_capacity(dirs.len());
        for dir in dirs {
            dbperf_core::nofollow::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let path = dir.join(LOCK_FILE);
            let mut file = dbperf_core::nofollow::open(&path, dbperf_core::nofollow::Open::Keep)
                .with_context(|| format!("opening the lock {}", path.display()))?;
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let err = std::io::Error::last_os_error();
                if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    bail!(
                        "experiment {name:?} is already being run by {} (lock {}); wait for it to end, or stop it \
                         (Ctrl-C, or `kill PID`) and rerun to resume",
                        holder(&path),
                        path.display()
                    );
                }
                return Err(err).with_context(|| format!("locking {}", path.display()));
            }
            file.set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(holder_text().as_bytes()))
                .with_context(|| format!("writing {}", path.display()))?;
            files.push(file);
        }
        Ok(ExperimentLock { _files: files })
    }
}

/// What this process writes into a lock it holds: pid, start time, command line.
fn holder_text() -> String {
    let command: Vec<String> = std::env::args().collect();
    format!(
        "pid {}\nstarted {}\ncommand {}\n",
        std::process::id(),
        chrono::Local::now().format("%Y-%m-%d %H:%M:%S %z"),
        command.join(" ")
    )
}

/// Who holds the lock at `path`, as its holder wrote it: "pid N (started ..., `command`)".
fn holder(path: &Path) -> String {
    let mut text = String::new();
    let _ = File::open(path).and_then(|mut f| f.read_to_string(&mut text));
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| "?".into())
    };
    format!(
        "pid {} (started {}, `{}`)",
        field("pid "),
        field("started "),
        field("command ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_single_plain_components() {
        for good in ["exp", "checkpoint-study", "a.b", "v=1,w=2", "x-quick"] {
            assert!(check_experiment_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", ".hidden", "a/b", "../x", "a b", "x\0"] {
            let err = check_experiment_name(bad).unwrap_err();
            assert!(err.contains("experiment name"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn a_second_lock_says_who_holds_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("lab/x"), dir.path().join("data/x"));
        let held = ExperimentLock::acquire("x", &[&a, &b]).unwrap();
        let err = ExperimentLock::acquire("x", &[&a, &b]).unwrap_err().to_string();
        assert!(err.contains(&format!("pid {}", std::process::id())), "{err}");
        assert!(err.contains("already being run"), "{err}");
        assert!(err.contains("started 2"), "{err}");
        drop(held);
        ExperimentLock::acquire("x", &[&a, &b]).unwrap();
    }
}
