//! The OS account a sandbox's server programs run as, and making the sandbox reachable for it.
//!
//! A server never runs as OS root. When dbperf itself runs as another user, the servers run
//! as that user and [`ServerAccount::for_invoker`] is `None`. When dbperf runs as root, the
//! servers (`mariadb-install-db`, `mariadbd`, `mysqld`, `initdb`, `postgres`) run as the
//! unprivileged system account `dbperf-sandbox` (or `$DBPERF_SERVER_USER`), which dbperf
//! creates with `useradd --system` the first time. That account owns the sandbox directory
//! (mode 0700) and what the server writes in it; the files dbperf writes there as root
//! (`my.cnf`, `state.json`, `admin.cnf`) stay root's. Where a directory on the way to the
//! sandbox or to the installed server (`/root` for `~/.dbperf`) does not let the account
//! through, dbperf grants it search permission only (`setfacl -m u:dbperf-sandbox:x DIR`),
//! never read or write, and says so.

use std::ffi::{CStr, CString};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::ServerError;

/// The account servers run as when dbperf is root, unless `$DBPERF_SERVER_USER` names another.
pub const DEFAULT_SERVER_USER: &str = "dbperf-sandbox";

/// An unprivileged OS account (never uid 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerAccount {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// True when this process runs as root.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl ServerAccount {
    /// `None` when dbperf is not root (the servers run as the invoking user); otherwise the
    /// account to drop to, created if it does not exist yet.
    pub fn for_invoker() -> Result<Option<ServerAccount>, ServerError> {
        if !is_root() {
            return Ok(None);
        }
        let name = std::env::var("DBPERF_SERVER_USER")
            .ok()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| DEFAULT_SERVER_USER.to_owned());
        let account = match lookup(&name)? {
            Some(account) => account,
            None if name == DEFAULT_SERVER_USER => {
                create(&name)?;
                lookup(&name)?.ok_or_else(|| account_error(&name, "useradd succeeded but the account is not there"))?
            }
            None => {
                return Err(account_error(
                    &name,
                    "$DBPERF_SERVER_USER names an account that does not exist; create it \
                     (useradd --system NAME) or unset DBPERF_SERVER_USER",
                ))
            }
        };
        if account.uid == 0 {
            return Err(account_error(
                &name,
                "it has uid 0: a sandbox never runs as root; name an unprivileged account",
            ));
        }
        Ok(Some(account))
    }

    /// Makes `cmd` run as this account: its uid, its primary group, no supplementary groups
    /// (std drops them when root changes uid), and so no capabilities.
    pub(crate) fn apply(&self, cmd: &mut Command) {
        cmd.uid(self.uid).gid(self.gid);
    }

    /// Gives every path to `own` (and everything below each directory) to this account,
    /// leaving entries that already belong to it alone; symbolic links are not followed.
    pub(crate) fn chown_tree(&self, own: &Path) -> Result<(), ServerError> {
        let meta = match std::fs::symlink_metadata(own) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(ServerError::io("cannot inspect", own, e)),
        };
        if meta.uid() != self.uid || meta.gid() != self.gid {
            std::os::unix::fs::lchown(own, Some(self.uid), Some(self.gid))
                .map_err(|e| ServerError::io("cannot hand over to the server account", own, e))?;
        }
        if meta.is_dir() {
            let entries = std::fs::read_dir(own).map_err(|e| ServerError::io("cannot read", own, e))?;
            for entry in entries {
                let entry = entry.map_err(|e| ServerError::io("cannot read", own, e))?;
                self.chown_tree(&entry.path())?;
            }
        }
        Ok(())
    }

    /// Lets this account reach `path` (a directory or file): every directory above it that
    /// the account cannot search gets an ACL entry granting search (`x`) only. Returns the
    /// directories it changed, for the caller to mention.
    pub(crate) fn ensure_reachable(&self, path: &Path) -> Result<Vec<PathBuf>, ServerError> {
        let mut granted = Vec::new();
        let mut dirs: Vec<&Path> = path.ancestors().skip(1).collect();
        dirs.reverse();
        for dir in dirs {
            let meta = std::fs::metadata(dir).map_err(|e| ServerError::io("cannot inspect", dir, e))?;
            if self.can_search(&meta) || acl_grants_search(dir, self.uid) {
                continue;
            }
            let out = Command::new("setfacl")
                .arg("-m")
                .arg(format!("u:{}:x", self.uid))
                .arg(dir)
                .stdin(Stdio::null())
                .output();
            let why = match out {
                Ok(out) if out.status.success() => {
                    granted.push(dir.to_owned());
                    continue;
                }
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_owned(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    "setfacl is not installed (apt-get install -y acl)".to_owned()
                }
                Err(e) => format!("cannot run setfacl: {e}"),
            };
            return Err(ServerError::Unreachable {
                account: self.name.clone(),
                dir: dir.to_owned(),
                why,
            });
        }
        Ok(granted)
    }

    fn can_search(&self, meta: &std::fs::Metadata) -> bool {
        let mode = meta.mode();
        if meta.uid() == self.uid {
            mode & 0o100 != 0
        } else if meta.gid() == self.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        }
    }
}

/// True if `dir` has an ACL entry giving `uid` search permission (as `getfacl` shows it).
fn acl_grants_search(dir: &Path, uid: u32) -> bool {
    let Ok(out) = Command::new("getfacl")
        .args(["--numeric", "--omit-header", "--absolute-names"])
        .arg(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mask = text
        .lines()
        .find_map(|l| l.strip_prefix("mask::"))
        .is_none_or(|perms| perms.contains('x'));
    let prefix = format!("user:{uid}:");
    mask && text
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .any(|perms| perms.split_whitespace().next().is_some_and(|p| p.contains('x')))
}

/// The account called `name`, from the password database.
fn lookup(name: &str) -> Result<Option<ServerAccount>, ServerError> {
    let c_name = CString::new(name).map_err(|_| account_error(name, "the name contains a NUL byte"))?;
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0u8; 16 * 1024];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call and `buf` outlives the use of `pwd`'s strings.
    let rc = unsafe {
        libc::getpwnam_r(
            c_name.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 {
        return Err(account_error(
            name,
            &format!(
                "cannot read the password database: {}",
                std::io::Error::from_raw_os_error(rc)
            ),
        ));
    }
    if result.is_null() {
        return Ok(None);
    }
    // SAFETY: pw_name points into `buf`, NUL-terminated, on success.
    let found = unsafe { CStr::from_ptr(pwd.pw_name) }.to_string_lossy().into_owned();
    Ok(Some(ServerAccount {
        name: found,
        uid: pwd.pw_uid,
        gid: pwd.pw_gid,
    }))
}

/// `useradd --system` with its own group, no home directory and no login shell.
fn create(name: &str) -> Result<(), ServerError> {
    let out = Command::new("useradd")
        .args([
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            "--comment",
            "dbperf sandbox servers",
            name,
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| account_error(name, &format!("cannot run useradd: {e} (install the passwd package)")))?;
    // 9: the account was created meanwhile by someone else.
    if out.status.success() || out.status.code() == Some(9) {
        return Ok(());
    }
    Err(account_error(
        name,
        &format!("useradd failed: {}", String::from_utf8_lossy(&out.stderr).trim()),
    ))
}

fn account_error(name: &str, why: &str) -> ServerError {
    ServerError::Account {
        name: name.to_owned(),
        why: why.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_never_a_server_account() {
        let root = lookup("root").unwrap().expect("every system has root");
        assert_eq!(root.uid, 0);
        assert!(lookup("no-such-user-dbperf-test").unwrap().is_none());
    }

    #[test]
    fn search_permission_follows_owner_group_other() {
        let dir = tempfile::tempdir().unwrap();
        let meta = std::fs::metadata(dir.path()).unwrap();
        let owner = ServerAccount {
            name: "x".into(),
            uid: meta.uid(),
            gid: meta.gid(),
        };
        let stranger = ServerAccount {
            name: "y".into(),
            uid: 4_000_000,
            gid: 4_000_000,
        };
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let meta = std::fs::metadata(dir.path()).unwrap();
        assert!(owner.can_search(&meta));
        assert!(!stranger.can_search(&meta));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o701)).unwrap();
        assert!(stranger.can_search(&std::fs::metadata(dir.path()).unwrap()));
    }
}
