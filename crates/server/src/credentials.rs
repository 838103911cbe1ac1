//! A sandbox's two logins and where their passwords live: root's (`admin.cnf`, MySQL family)
//! and the benchmark account's (`bench.cnf`, every product). Both are generated per sandbox,
//! kept only in these `[client]` files (mode 0600, the invoking user's, replaced atomically
//! and never written through a link: `dbperf_core::nofollow`), and reach the server only as
//! hashes: a `mysql_native_password` hash ([`native_password_hash`]) or a SCRAM-SHA-256
//! verifier ([`scram_verifier`]), so no statement, log or process list ever holds one.
//!
//! | file | who | how it is used |
//! |---|---|---|
//! | `admin.cnf` | `root@localhost` | `mariadb --defaults-file=admin.cnf`; telemetry and `--settle` ([`crate::admin_target`]) |
//! | `bench.cnf` | `sb` | the password of `--target sandbox:NAME` and of the URLs `server start` prints |

use std::fmt;
use std::path::Path;

use super::ServerError;

/// Length of a generated password (alphanumeric: about 143 bits).
const PASSWORD_LEN: usize = 24;

/// The password of the benchmark account in sandboxes made before passwords were generated;
/// a running sandbox of that kind keeps it until its next start replaces it.
pub(crate) const LEGACY_BENCH_PASSWORD: &str = "sb";

/// A password that never shows in `Debug` output (`***`).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub(crate) fn new(text: impl Into<String>) -> Secret {
        Secret(text.into())
    }

    /// A fresh random password.
    pub(crate) fn generate() -> Secret {
        use rand::distr::{Alphanumeric, SampleString};
        Secret(Alphanumeric.sample_string(&mut rand::rng(), PASSWORD_LEN))
    }

    /// The password itself, for a connection URL or a login.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Who a `[client]` file logs in as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Login {
    /// `root@localhost`: `admin.cnf`.
    Admin,
    /// The benchmark account: `bench.cnf`.
    Bench,
}

impl Login {
    fn header(self) -> &'static str {
        match self {
            Login::Admin => {
                "# The sandbox's admin login, written by dbperf: `mariadb --defaults-file=THIS_FILE`.\n\
                 # Keep it private (mode 0600): it holds the root password of this sandbox only.\n"
            }
            Login::Bench => {
                "# The sandbox's benchmark login, written by dbperf (`--target sandbox:NAME` uses it).\n\
                 # Keep it private (mode 0600): it holds the benchmark account's password of this sandbox only.\n"
            }
        }
    }

    fn user(self) -> &'static str {
        match self {
            Login::Admin => "root",
            Login::Bench => super::BENCH_USER,
        }
    }
}

/// Writes the `[client]` file of `login` at `path`: mode 0600 from its first byte, replaced
/// atomically, a link in its place replaced rather than followed. `socket` is the MySQL-family
/// socket file (`None` for PostgreSQL, whose programs do not read the file).
pub(crate) fn write(path: &Path, login: Login, socket: Option<&Path>, password: &Secret) -> Result<(), ServerError> {
    let mut text = format!(
        "{}[client]\nuser={}\npassword={}\n",
        login.header(),
        login.user(),
        password.expose()
    );
    if let Some(socket) = socket {
        text.push_str(&format!("socket={}\nprotocol=socket\n", socket.display()));
    }
    dbperf_core::nofollow::write_private(path, text.as_bytes()).map_err(|e| ServerError::io("cannot write", path, e))
}

/// The password in a `[client]` file written by [`write`].
pub(crate) fn read(path: &Path) -> Result<Secret, ServerError> {
    let text = std::fs::read_to_string(path).map_err(|e| ServerError::io("cannot read", path, e))?;
    text.lines()
        .find_map(|l| l.strip_prefix("password="))
        .map(Secret::new)
        .ok_or_else(|| {
            ServerError::io(
                "no password= line in",
                path,
                std::io::Error::from(std::io::ErrorKind::InvalidData),
            )
        })
}

/// The password in `path`, or `None` when there is no such file.
pub(crate) fn read_if_present(path: &Path) -> Result<Option<Secret>, ServerError> {
    match dbperf_core::nofollow::regular_or_absent(path) {
        Ok(false) => Ok(None),
        Ok(true) => read(path).map(Some),
        Err(e) => Err(ServerError::io("cannot read", path, e)),
    }
}

/// The benchmark password kept in `path`, or a new one written there (so every start of a
/// sandbox gives its benchmark account the same password).
pub(crate) fn bench_password(path: &Path, socket: Option<&Path>) -> Result<Secret, ServerError> {
    if let Some(kept) = read_if_present(path)? {
        return Ok(kept);
    }
    let fresh = Secret::generate();
    write(path, Login::Bench, socket, &fresh)?;
    Ok(fresh)
}

/// `mysql_native_password`'s stored form: `*` and the upper-case hex of SHA1(SHA1(password)),
/// as `IDENTIFIED BY PASSWORD '...'` (or `... AS '...'`) takes it.
pub(crate) fn native_password_hash(password: &Secret) -> String {
    use sha1::{Digest, Sha1};
    let stage1 = Sha1::digest(password.expose().as_bytes());
    let stage2 = Sha1::digest(stage1);
    let hex: String = stage2.iter().map(|b| format!("{b:02X}")).collect();
    format!("*{hex}")
}

/// A SCRAM-SHA-256 verifier of `password` with a random salt, as `ALTER ROLE ... PASSWORD
/// '...'` stores it without ever seeing the password.
pub(crate) fn scram_verifier(password: &Secret) -> String {
    postgres_protocol::password::scram_sha_256(password.expose().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn native_hash_matches_the_servers() {
        // SELECT PASSWORD('sb') on MariaDB 10.11.
        assert_eq!(
            native_password_hash(&Secret::new("sb")),
            "*7FC8780EC04AEA87C347D8E65C24F9DEB598A68F"
        );
    }

    #[test]
    fn secrets_do_not_print() {
        let s = Secret::generate();
        assert_eq!(s.expose().len(), PASSWORD_LEN);
        assert_eq!(format!("{s:?}"), "***");
        assert_ne!(Secret::generate(), s);
    }

    #[test]
    fn the_bench_password_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.cnf");
        let first = bench_password(&path, None).unwrap();
        assert_eq!(bench_password(&path, None).unwrap(), first);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("user=sb\n"), "{text}");
        assert!(scram_verifier(&first).starts_with("SCRAM-SHA-256$4096:"));
    }
}
