//! Writing files where someone else may have planted a symbolic link: every file dbperf writes
//! under a results directory or `$DBPERF_HOME` goes through here, because dbperf often runs as
//! root and a link left in a shared directory must not steer its writes onto another file.
//!
//! A file is either opened with `O_NOFOLLOW` (a link in its place is an error, never followed:
//! [`open`]), or written whole into a fresh temporary file beside it (created with `O_EXCL`
//! under a name nobody can guess in advance) and renamed over it, which replaces a link instead
//! of writing through it ([`write_atomic`], [`write_private`], [`copy`]). A directory dbperf
//! creates is checked to be a directory and not a link to one elsewhere ([`create_dir_all`]).
//! [`regular_or_absent`] is the check for files another library opens (SQLite's catalog).

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How [`open`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// Appends, keeping what is there (`O_APPEND`).
    Append,
    /// Starts the file over.
    Truncate,
    /// Neither: the contents stay and writes start at the beginning (a lock file).
    Keep,
}

/// Opens `path` for writing, creating it (mode 0666 less the umask) if missing, without
/// following a symbolic link in its place (`ELOOP`). Only the last component is protected:
/// the directories above are the caller's (see [`create_dir_all`]).
pub fn open(path: &Path, how: Open) -> io::Result<File> {
    open_mode(path, how, 0o666)
}

/// As [`open`], creating the file readable and writable by its owner only (0600).
pub fn open_private(path: &Path, how: Open) -> io::Result<File> {
    open_mode(path, how, 0o600)
}

fn open_mode(path: &Path, how: Open, mode: u32) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options
        .create(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    match how {
        Open::Append => options.append(true),
        Open::Truncate => options.write(true).truncate(true),
        Open::Keep => options.write(true).truncate(false),
    };
    let file = options.open(path)?;
    // O_NOFOLLOW refuses a link, but a FIFO or device in its place would still open.
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!("{} is not a regular file", path.display())));
    }
    Ok(file)
}

/// Writes `bytes` to `path` atomically (a reader sees the old file or the whole new one) and
/// never through a link: into a fresh temporary file beside it, synced, then renamed over it.
/// The file gets mode 0666 less the umask.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_with(path, 0o666, |f| f.write_all(bytes))
}

/// As [`write_atomic`], the file readable and writable by its owner only (0600) from its
/// first byte: for credentials.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace_with(path, 0o600, |f| f.write_all(bytes))
}

/// Copies the file `from` to `to` as [`write_atomic`] writes (`to` is replaced, never
/// written through); returns the bytes copied.
pub fn copy(from: &Path, to: &Path) -> io::Result<u64> {
    let mut source = File::open(from)?;
    let mut copied = 0;
    replace_with(to, 0o666, |f| {
        copied = io::copy(&mut source, f)?;
        Ok(())
    })?;
    Ok(copied)
}

/// Creates a fresh temporary file beside `path` with `mode`, lets `fill` write it, syncs it
/// and renames it over `path`; the temporary file is removed on any failure.
fn replace_with(path: &Path, mode: u32, fill: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    let (tmp, mut file) = create_temp_beside(path, mode)?;
    let written = fill(&mut file)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// How many names [`create_temp_beside`] tries before giving up.
const TEMP_ATTEMPTS: u32 = 16;

/// A new file `.<name>.<pid>-<unique>.tmp` in `path`'s directory, created with `O_EXCL` (so a
/// link or file already there is never opened) and `mode`.
fn create_temp_beside(path: &Path, mode: u32) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("{} names no file", path.display())))?;
    let mut last = None;
    for _ in 0..TEMP_ATTEMPTS {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed) ^ (u64::from(nanos) << 20);
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{}-{unique:x}.tmp", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists)))
}

/// `std::fs::create_dir_all`, then a check that `path` itself is a directory and not a
/// symbolic link (to a directory elsewhere, where dbperf's files would land).
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    std::fs::create_dir_all(path)?;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.file_type().is_symlink() {
        return Err(io::Error::other(format!(
            "{} is a symbolic link; dbperf writes only into directories, not through links: remove it",
            path.display()
        )));
    }
    if !meta.is_dir() {
        return Err(io::Error::other(format!("{} is not a directory", path.display())));
    }
    Ok(())
}

/// `Ok(true)` if `path` is a regular file, `Ok(false)` if nothing is there, an error naming
/// it if it is a symbolic link or anything else (a FIFO, a device, a directory).
pub fn regular_or_absent(path: &Path) -> io::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => Ok(true),
        Ok(meta) if meta.file_type().is_symlink() => Err(io::Error::other(format!(
            "{} is a symbolic link; dbperf does not open files through links: remove it",
            path.display()
        ))),
        Ok(_) => Err(io::Error::other(format!("{} is not a regular file", path.display()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn planted(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
        let victim = dir.join("victim");
        std::fs::write(&victim, "untouched").unwrap();
        let link = dir.join(name);
        symlink(&victim, &link).unwrap();
        (link, victim)
    }

    #[test]
    fn open_refuses_a_link_in_every_mode() {
        let dir = tempfile::tempdir().unwrap();
        let (link, victim) = planted(dir.path(), "log");
        for how in [Open::Append, Open::Truncate, Open::Keep] {
            let err = open(&link, how).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{how:?}: {err}");
            assert!(open_private(&link, how).is_err());
        }
        assert_eq!(std::fs::read_to_string(victim).unwrap(), "untouched");
        let file = dir.path().join("plain");
        open(&file, Open::Append).unwrap().write_all(b"a").unwrap();
        open(&file, Open::Append).unwrap().write_all(b"b").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "ab");
    }

    #[test]
    fn atomic_writes_replace_a_link_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let (link, victim) = planted(dir.path(), "state.json");
        write_atomic(&link, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "new");

        let (link, victim) = planted(dir.path(), "copy");
        let source = dir.path().join("source");
        std::fs::write(&source, "copied").unwrap();
        assert_eq!(copy(&source, &link).unwrap(), 6);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(std::fs::read_to_string(&link).unwrap(), "copied");
        // Nothing but the files themselves is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn private_files_are_owner_only_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.cnf");
        write_private(&path, b"password=x\n").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn directories_and_regular_files_are_told_from_links() {
        let dir = tempfile::tempdir().unwrap();
        create_dir_all(&dir.path().join("a/b")).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        symlink(&elsewhere, dir.path().join("logs")).unwrap();
        let err = create_dir_all(&dir.path().join("logs")).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");

        assert!(!regular_or_absent(&dir.path().join("none")).unwrap());
        let (link, _) = planted(dir.path(), "catalog.sqlite");
        assert!(regular_or_absent(&link)
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        assert!(regular_or_absent(&dir.path().join("victim")).unwrap());
        assert!(regular_or_absent(&elsewhere).is_err());
    }
}
