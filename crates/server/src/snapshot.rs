//! Kept copies of a stopped sandbox's datadir: a data set prepared once and copied back in
//! before the points that need it (the lab's `restore`), on this host or, through
//! `dbperf server snapshot` run over ssh, on a database host.
//!
//! A snapshot is a directory (the datadir, copied with `cp -a --reflink=auto`: modes, sparse
//! files and block clones kept) and beside it `DIR.admin.cnf`, the admin login that goes with
//! it (the root password lives in the copy's grant tables); [`READY_MARK`] inside it says the
//! copy is whole. Saving replaces a previous snapshot at the same place; restoring replaces the
//! sandbox's datadir. Both refuse a running sandbox.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::record::RunState;
use super::{SandboxHome, ServerError};

/// The file inside a snapshot that says it is complete (written last).
pub const READY_MARK: &str = ".dbperf-prepared";

/// The admin login kept beside snapshot `dir`.
pub fn admin_login_of(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_owned();
    name.push(".admin.cnf");
    dir.with_file_name(name)
}

/// Whether `dir` holds a complete snapshot.
pub fn is_ready(dir: &Path) -> bool {
    dir.join(READY_MARK).is_file()
}

impl SandboxHome {
    /// Refuses a name that is not a sandbox name (its datadir path is built from it) and a
    /// sandbox that runs.
    fn refuse_running(&self, sandbox: &str, what: &str) -> Result<(), ServerError> {
        super::home::validate_name(sandbox)?;
        match self.status(sandbox) {
            Ok(s) if !matches!(s.state, RunState::Stopped) => Err(ServerError::Snapshot {
                why: format!("sandbox {sandbox:?} is running: stop it before {what} (`dbperf server stop {sandbox}`)"),
            }),
            _ => Ok(()),
        }
    }

    /// Copies the stopped sandbox's datadir to `dir` (replacing what was there) with its admin
    /// login beside it, and marks it complete.
    pub fn save_snapshot(&self, sandbox: &str, dir: &Path) -> Result<(), ServerError> {
        self.refuse_running(sandbox, "saving its datadir")?;
        let datadir = self.datadir(sandbox);
        if !datadir.is_dir() {
            return Err(ServerError::Snapshot {
                why: format!("sandbox {sandbox:?} has no datadir ({}) to save", datadir.display()),
            });
        }
        super::home::remove_if_exists(dir)?;
        copy_tree(&datadir, dir)?;
        let login = admin_login_of(dir);
        super::home::remove_if_exists(&login)?;
        self.save_admin_login(sandbox, &login)?;
        dbperf_core::nofollow::write_atomic(
            &dir.join(READY_MARK),
            format!("{}\n", chrono::Utc::now().to_rfc3339()).as_bytes(),
        )
        .map_err(|e| ServerError::io("cannot write", dir.join(READY_MARK), e))
    }

    /// Removes the stopped sandbox's datadir, so that its next start initializes a new one (a
    /// data set prepared from nothing). The sandbox keeps its name, port and passwords.
    pub fn discard_datadir(&self, sandbox: &str) -> Result<(), ServerError> {
        self.refuse_running(sandbox, "discarding its datadir")?;
        super::home::remove_if_exists(&self.datadir(sandbox))
    }

    /// Replaces the stopped sandbox's datadir with a copy of snapshot `dir` and gives it the
    /// admin login kept with it.
    pub fn restore_snapshot(&self, sandbox: &str, dir: &Path) -> Result<(), ServerError> {
        self.refuse_running(sandbox, "replacing its datadir")?;
        if !is_ready(dir) {
            return Err(ServerError::Snapshot {
                why: format!(
                    "{} is not a complete snapshot (no {READY_MARK} in it): save one first",
                    dir.display()
                ),
            });
        }
        let datadir = self.datadir(sandbox);
        super::home::remove_if_exists(&datadir)?;
        copy_tree(dir, &datadir)?;
        super::home::remove_if_exists(&datadir.join(READY_MARK))?;
        let login = admin_login_of(dir);
        if login.is_file() {
            self.restore_admin_login(sandbox, &login)?;
        }
        Ok(())
    }
}

/// `cp -a --reflink=auto FROM TO` (`TO` must not exist; its parent is made).
fn copy_tree(from: &Path, to: &Path) -> Result<(), ServerError> {
    if let Some(parent) = to.parent() {
        dbperf_core::nofollow::create_dir_all(parent).map_err(|e| ServerError::io("cannot create", parent, e))?;
    }
    let out = Command::new("cp")
        .arg("-a")
        .arg("--reflink=auto")
        .arg(from)
        .arg(to)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ServerError::io("cannot run cp for", from, e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(ServerError::Snapshot {
        why: format!(
            "copying {} to {} failed: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_sits_beside_the_copy() {
        assert_eq!(
            admin_login_of(Path::new("/h/lab/e/data/s/1x100-ab")),
            Path::new("/h/lab/e/data/s/1x100-ab.admin.cnf")
        );
    }

    #[test]
    fn a_snapshot_round_trips_and_an_incomplete_one_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let home = SandboxHome::at(tmp.path().join("home"));
        let data = home.datadir("s");
        std::fs::create_dir_all(data.join("mysql")).unwrap();
        std::fs::write(data.join("mysql/user.frm"), "rows").unwrap();
        let snap = tmp.path().join("kept/one");
        home.save_snapshot("s", &snap).unwrap();
        assert!(is_ready(&snap));
        std::fs::write(data.join("mysql/user.frm"), "changed").unwrap();
        home.restore_snapshot("s", &snap).unwrap();
        assert_eq!(std::fs::read_to_string(data.join("mysql/user.frm")).unwrap(), "rows");
        assert!(!data.join(READY_MARK).exists());
        std::fs::remove_file(snap.join(READY_MARK)).unwrap();
        let e = home.restore_snapshot("s", &snap).unwrap_err().to_string();
        assert!(e.contains("not a complete snapshot"), "{e}");
        // A name that is not a sandbox name never reaches a path.
        for bad in ["../s", "", "a/b"] {
            let e = home.restore_snapshot(bad, &snap).unwrap_err().to_string();
            assert!(e.contains("invalid sandbox name"), "{bad:?}: {e}");
            assert!(home.save_snapshot(bad, &snap).is_err());
        }
        assert!(data.is_dir(), "nothing was removed");
    }
}
