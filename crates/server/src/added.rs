//! Your own builds: `dbperf server add NAME --basedir DIR | --tarball FILE` registers a MySQL,
//! Percona Server, MariaDB or PostgreSQL binary tree dbperf did not install, so NAME works
//! wherever a catalog id does (`server start NAME`, `[[server]] id = "NAME"`, reports).
//!
//! This module owns examining a tree (its server program and family, version and
//! `version_comment` from `--version`, how its datadir is made), checking it with one
//! throwaway start (which also reads `innodb_version`: XtraDB and Percona Server name their
//! InnoDB release there), the record under `$DBPERF_HOME/dist/NAME` (the same
//! `dbperf-dist.json` an installed catalog version has), and turning that record back into a
//! [`ServerSpec`] for lookups.
//!
//! A `--basedir` tree stays where it is and is never written to; a `--tarball` is unpacked
//! into `dist/NAME/base`. `server remove NAME` deletes the record and what dbperf unpacked,
//! never a tree it did not make.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dbperf_driver::target::Product;

use super::dist::{ensure_packages, now, package_needs, write_record, DistRecord, RECORD_FILE};
use super::options::KnownOptions;
use super::versions::{DatadirInit, ServerSpec, Source, Version, VERSIONS};
use super::{SandboxHome, ServerError, StartRequest};

/// Where an added build comes from.
#[derive(Debug, Clone)]
pub enum AddFrom {
    /// A tree used in place (`bin/mysqld`, `bin/postgres`, ... below it).
    Basedir(PathBuf),
    /// A release tarball (`.tar.gz`, `.tar.xz`, `.tar.bz2`) unpacked into `dist/NAME/base`.
    Tarball(PathBuf),
}

/// What `server add` did.
#[derive(Debug, Clone)]
pub struct AddReport {
    pub spec: &'static ServerSpec,
    pub record: DistRecord,
    /// `$DBPERF_HOME/dist/NAME`.
    pub dir: PathBuf,
    pub elapsed: Duration,
}

/// The longest name of an added build (it names a directory and appears in sandbox records).
const MAX_NAME: usize = 48;

/// Where a tree's server program may be, in the order to look.
const SERVER_PROGRAMS: &[&str] = &[
    "bin/mariadbd",
    "bin/mysqld",
    "sbin/mariadbd",
    "sbin/mysqld",
    "libexec/mysqld",
    "bin/postgres",
];

/// The first MySQL whose server initialises its own datadir (`--initialize-insecure`).
const MYSQL_INITIALIZE_SINCE: Version = Version::new(5, 7, 6);

/// What `--version` says: `mysqld  Ver 5.7.44-48 for Linux on x86_64 (Percona Server (GPL),
/// Release 48, Revision 497f936a373)`, `mariadbd  Ver 10.11.5-MariaDB for Linux on x86_64
/// (MariaDB Server)`, `postgres (PostgreSQL) 16.4`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionLine {
    pub product: Product,
    pub version: Version,
    /// The version as printed (`10.11.5-MariaDB`, `5.7.44-48`).
    pub text: String,
    /// The parenthesised text at the end (`version_comment`), if any.
    pub comment: Option<String>,
}

/// Reads the first version line of a server's `--version` output.
pub fn parse_version_line(output: &str) -> Option<VersionLine> {
    for line in output.lines() {
        if let Some(rest) = line.split_once("(PostgreSQL)").map(|(_, r)| r) {
            let text = rest.split_whitespace().next()?.to_owned();
            return Some(VersionLine {
                product: Product::Postgres,
                version: parse_version(&text)?,
                text,
                comment: None,
            });
        }
        if let Some((_, rest)) = line.split_once(" Ver ") {
            let text = rest.split_whitespace().next()?.to_owned();
            let after = &rest[text.len()..];
            let comment = match (after.find('('), after.rfind(')')) {
                (Some(open), Some(close)) if open < close => Some(after[open + 1..close].trim().to_owned()),
                _ => None,
            };
            let product = if text.contains("MariaDB") || comment.as_deref().is_some_and(|c| c.contains("MariaDB")) {
                Product::Mariadb
            } else {
                Product::Mysql
            };
            return Some(VersionLine {
                product,
                version: parse_version(&text)?,
                text,
                comment,
            });
        }
    }
    None
}

/// `10.11.5-MariaDB` → 10.11.5, `16.4` → 16.4.0, `5.7.44-48` → 5.7.44.
fn parse_version(text: &str) -> Option<Version> {
    let numeric: String = text.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let mut parts = numeric.split('.').filter(|p| !p.is_empty()).map(str::parse::<u16>);
    let major = parts.next()?.ok()?;
    let minor = parts.next().transpose().ok()?.unwrap_or(0);
    let patch = parts.next().transpose().ok()?.unwrap_or(0);
    Some(Version::new(major, minor, patch))
}

/// The one flavour text: `version_comment`, and the InnoDB release when it is not the server's
/// own (XtraDB in MariaDB before 10.2 and in Percona Server carries Percona's release number,
/// `5.6.35-80.0`).
fn flavour(comment: Option<&str>, innodb_version: Option<&str>) -> Option<String> {
    let xtradb = innodb_version
        .and_then(dbperf_core::innodb::xtradb_release)
        .map(|v| format!("XtraDB {v}"));
    match (comment, xtradb) {
        (Some(c), Some(x)) => Some(format!("{c}; InnoDB: {x}")),
        (Some(c), None) => Some(c.to_owned()),
        (None, x) => x,
    }
}

/// A tree examined: its programs and how it makes a datadir.
struct Examined {
    line: VersionLine,
    server: PathBuf,
    install_db: Option<PathBuf>,
    template: Option<PathBuf>,
    init: DatadirInit,
}

/// Finds the server program of `base`, asks it what it is, and finds what makes its datadir.
fn examine(name: &str, base: &Path) -> Result<Examined, ServerError> {
    let fail = |why: String| ServerError::Add {
        name: name.to_owned(),
        why,
    };
    let server = SERVER_PROGRAMS
        .iter()
        .map(|p| base.join(p))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            fail(format!(
                "{} holds no server program (looked for {}); give the directory that has bin/ in it \
                 (a MySQL, Percona Server or MariaDB build with bin/mysqld or bin/mariadbd, or PostgreSQL with bin/postgres)",
                base.display(),
                SERVER_PROGRAMS.join(", ")
            ))
        })?;
    let postgres = server.ends_with("bin/postgres");
    if !postgres {
        // The MySQL family's libraries (libaio, libnuma) and the admin client, as for the catalog.
        let provisional = ServerSpec {
            id: "",
            product: Product::Mysql,
            version: Version::new(0, 0, 0),
            version_label: "",
            source: Source::Added {
                init: DatadirInit::Initialize,
            },
            size_hint: "",
        };
        ensure_packages(&package_needs(provisional.runtime_packages()))?;
    }
    let out = Command::new(&server)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| fail(format!("cannot run {}: {e}", server.display())))?;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if !out.status.success() {
        let hint = if stderr.contains("error while loading shared libraries") {
            " (a library it links is missing on this machine: install the Debian package that has it, e.g. \
             `apt-get install -y libaio1 libnuma1 libncurses5`)"
        } else {
            ""
        };
        return Err(fail(format!(
            "`{} --version` failed ({}){hint}: {}",
            server.display(),
            out.status,
            stderr.trim()
        )));
    }
    let line = parse_version_line(&stdout).ok_or_else(|| {
        fail(format!(
            "`{} --version` printed no version dbperf understands: {:?}",
            server.display(),
            stdout.trim()
        ))
    })?;
    let too_old = match line.product {
        Product::Mysql | Product::Mariadb => line.version < Version::new(5, 5, 0),
        Product::Postgres => line.version < Version::new(9, 6, 0),
    };
    if too_old {
        return Err(fail(format!(
            "{} {} is older than dbperf supports (MySQL and MariaDB 5.5, PostgreSQL 9.6 and later)",
            line.product, line.text
        )));
    }
    let probe = |init| ServerSpec {
        id: "",
        product: line.product,
        version: line.version,
        version_label: "",
        source: Source::Added { init },
        size_hint: "",
    };
    let find = |spec: &ServerSpec| {
        spec.install_db_candidates()
            .iter()
            .map(|c| base.join(c))
            .find(|p| p.is_file())
    };
    // A shipped datadir holds the `mysql` schema: `data/` in MySQL's own 5.5/5.6 tarballs,
    // `data/mysql/` in some repackagings.
    let shipped = ["data", "data/mysql"]
        .iter()
        .map(|d| base.join(d))
        .find(|d| d.join("mysql/user.frm").is_file());
    let (init, install_db, template) = match line.product {
        Product::Postgres => {
            let initdb = find(&probe(DatadirInit::Initdb))
                .ok_or_else(|| fail(format!("{} has no bin/initdb, which makes its datadir", base.display())))?;
            (DatadirInit::Initdb, Some(initdb), None)
        }
        Product::Mariadb => {
            let spec = probe(DatadirInit::InstallDb);
            let script = find(&spec).ok_or_else(|| {
                fail(format!(
                    "{} has no {}, which makes a MariaDB datadir",
                    base.display(),
                    spec.install_db_candidates().join(" or ")
                ))
            })?;
            (DatadirInit::InstallDb, Some(script), None)
        }
        Product::Mysql if line.version >= MYSQL_INITIALIZE_SINCE => (DatadirInit::Initialize, None, None),
        Product::Mysql => match find(&probe(DatadirInit::InstallDb)) {
            Some(script) => (DatadirInit::InstallDb, Some(script), None),
            None if shipped.is_some() => (DatadirInit::Template, None, shipped),
            None => {
                return Err(fail(format!(
                    "{} {} makes its datadir with scripts/mysql_install_db or ships one (data/ with mysql/user.frm in it); {} has neither",
                    line.product,
                    line.text,
                    base.display()
                )))
            }
        },
    };
    Ok(Examined {
        line,
        server,
        install_db,
        template,
        init,
    })
}

/// Checks the name of an added build: a single directory name, not a catalog id.
fn check_name(name: &str) -> Result<(), ServerError> {
    let fail = |why: String| ServerError::Add {
        name: name.to_owned(),
        why,
    };
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with(['.', '-'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid {
        return Err(fail(format!(
            "a name is 1-{MAX_NAME} characters from [A-Za-z0-9_.-], not starting with `.` or `-` (for example `percona-5.7.44`)"
        )));
    }
    if super::versions::lookup_catalog(name).is_some() {
        return Err(fail(
            "that is a catalog id (`dbperf server list --available`); pick a name of your own".to_owned(),
        ));
    }
    Ok(())
}

/// Specs made from records, one per record and process: lookups hand out `&'static` specs, and
/// a record is only turned into one once (a process sees a handful of added builds).
static SPECS: Mutex<Option<HashMap<PathBuf, (DistRecord, &'static ServerSpec)>>> = Mutex::new(None);

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The spec of an added build's record, or `None` for a record that is not one.
fn spec_of(path: &Path, record: &DistRecord) -> Option<&'static ServerSpec> {
    let init = record.init?;
    let version = parse_version(&record.version)?;
    let mut specs = SPECS.lock().unwrap_or_else(|e| e.into_inner());
    let specs = specs.get_or_insert_with(HashMap::new);
    if let Some((seen, spec)) = specs.get(path) {
        if seen == record {
            return Some(spec);
        }
    }
    let label = match &record.flavour {
        Some(f) => format!("{} ({f})", record.version),
        None => record.version.clone(),
    };
    let spec: &'static ServerSpec = Box::leak(Box::new(ServerSpec {
        id: leak(record.id.clone()),
        product: record.product,
        version,
        version_label: leak(label),
        source: Source::Added { init },
        size_hint: "",
    }));
    specs.insert(path.to_owned(), (record.clone(), spec));
    Some(spec)
}

/// A build added on another host (`dbperf server add` there) that this host does not know:
/// its spec from that host's `dbperf server list --available --json` (product, version, how
/// its datadir is made), so a lab can start it there under its name. One per id and process.
pub fn remote_spec(host: &crate::remote::RemoteHost, id: &str) -> Result<&'static ServerSpec, String> {
    static REMOTE: Mutex<Option<HashMap<(String, String), &'static ServerSpec>>> = Mutex::new(None);
    let key = (host.url.clone(), id.to_owned());
    if let Some(spec) = REMOTE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .get(&key)
    {
        return Ok(spec);
    }
    let listed = host.dbperf(&["server", "list", "--available", "--json"]).map_err(|e| {
        format!(
            "{id:?} is not a server this host knows, and asking {} failed: {e}",
            host.url
        )
    })?;
    let entries = crate::listing::available_lines(&listed);
    let Some(entry) = entries.iter().find(|v| v.id == id) else {
        let known: Vec<&str> = entries.iter().map(|v| v.id.as_str()).collect();
        return Err(format!(
            "unknown server {id:?} here and on {}, which has: {}; add your build there with `dbperf server add {id} --basedir DIR`",
            host.url,
            known.join(", ")
        ));
    };
    let product = entry.flavor;
    let version = parse_version(&entry.version)
        .ok_or_else(|| format!("{id:?} on {}: no version in {:?}", host.url, entry.version))?;
    let init = entry.init.unwrap_or(match product {
        Product::Postgres => DatadirInit::Initdb,
        _ => DatadirInit::InstallDb,
    });
    let spec: &'static ServerSpec = Box::leak(Box::new(ServerSpec {
        id: leak(id.to_owned()),
        product,
        version,
        version_label: leak(entry.version.clone()),
        source: Source::Added { init },
        size_hint: "",
    }));
    REMOTE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(key, spec);
    Ok(spec)
}

impl SandboxHome {
    /// The added build `id`, if this home has one.
    pub fn added_spec(&self, id: &str) -> Option<&'static ServerSpec> {
        if check_name(id).is_err() {
            return None;
        }
        let path = self.dist_root().join(id).join(RECORD_FILE);
        let record: DistRecord = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        (record.id == id).then(|| spec_of(&path, &record)).flatten()
    }

    /// Every added build of this home, by name.
    pub fn added_builds(&self) -> Vec<&'static ServerSpec> {
        let Ok(entries) = std::fs::read_dir(self.dist_root()) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| VERSIONS.iter().all(|v| v.id != n))
            .collect();
        names.sort();
        names.iter().filter_map(|n| self.added_spec(n)).collect()
    }

    /// `dbperf server add NAME`: examines the tree, records it, checks it with one throwaway
    /// start, and records what that start found. Nothing is left behind when a step fails.
    pub fn add(&self, name: &str, from: &AddFrom) -> Result<AddReport, ServerError> {
        let started = Instant::now();
        check_name(name)?;
        let fail = |why: String| ServerError::Add {
            name: name.to_owned(),
            why,
        };
        let dir = self.dist_root().join(name);
        std::fs::create_dir_all(self.dist_root()).map_err(|e| ServerError::io("cannot create", self.dist_root(), e))?;
        if let Err(e) = std::fs::create_dir(&dir) {
            return Err(if e.kind() == std::io::ErrorKind::AlreadyExists {
                fail(format!(
                    "{} exists already; `dbperf server remove {name}` first, or pick another name",
                    dir.display()
                ))
            } else {
                ServerError::io("cannot create", &dir, e)
            });
        }
        let result = self.add_into(name, from, &dir);
        if result.is_err() {
            // Made by this call only (create_dir above refused an existing one).
            let _ = std::fs::remove_dir_all(&dir);
        }
        result.map(|(spec, record)| AddReport {
            spec,
            record,
            dir,
            elapsed: started.elapsed(),
        })
    }

    fn add_into(
        &self,
        name: &str,
        from: &AddFrom,
        dir: &Path,
    ) -> Result<(&'static ServerSpec, DistRecord), ServerError> {
        let fail = |why: String| ServerError::Add {
            name: name.to_owned(),
            why,
        };
        let (base, source) = match from {
            AddFrom::Basedir(d) => {
                let d = std::path::absolute(d).map_err(|e| ServerError::io("cannot resolve", d, e))?;
                if !d.is_dir() {
                    return Err(fail(format!("{} is not a directory", d.display())));
                }
                (d.clone(), format!("basedir:{}", d.display()))
            }
            AddFrom::Tarball(f) => {
                let f = std::path::absolute(f).map_err(|e| ServerError::io("cannot resolve", f, e))?;
                if !f.is_file() {
                    return Err(fail(format!("{} is not a file", f.display())));
                }
                (unpack_tarball(name, &f, dir)?, format!("tarball:{}", f.display()))
            }
        };
        let found = examine(name, &base)?;
        let client = match found.line.product {
            Product::Postgres => found.server.clone(),
            Product::Mariadb | Product::Mysql => super::find_program("mariadb")?,
        };
        let mut record = DistRecord {
            id: name.to_owned(),
            product: found.line.product,
            version: found.line.text.clone(),
            source,
            installed_at: now(),
            basedir: Some(base),
            server: found.server,
            install_db: found.install_db,
            datadir_template: found.template,
            client,
            flavour: found.line.comment.clone(),
            init: Some(found.init),
        };
        write_record(dir, &record)?;
        let path = dir.join(RECORD_FILE);
        let spec = spec_of(&path, &record).ok_or_else(|| fail("its record does not read back".to_owned()))?;
        // Its option names, as for a catalog version (`--set` keys are checked against them).
        KnownOptions::load(&self.binaries(spec)?, dir)?;
        let innodb = self.first_start(name, spec).map_err(|e| {
            fail(format!(
                "the tree was found ({} {}) but a first start of it failed: {e}",
                found.line.product, found.line.text
            ))
        })?;
        record.flavour = flavour(found.line.comment.as_deref(), innodb.as_deref());
        write_record(dir, &record)?;
        let spec = spec_of(&path, &record).ok_or_else(|| fail("its record does not read back".to_owned()))?;
        Ok((spec, record))
    }

    /// Starts the build once in a throwaway sandbox (which proves it initialises, starts and
    /// answers as dbperf's sandboxes must) and reads `innodb_version`; removes the sandbox.
    fn first_start(&self, name: &str, spec: &'static ServerSpec) -> Result<Option<String>, ServerError> {
        let sandbox = format!("add-{}-{:08x}", std::process::id(), rand::random::<u32>());
        let mut req = StartRequest::new(spec, &sandbox);
        req.interruptible = true;
        let started = self.start(&req);
        let answer = started.and_then(|_| {
            let url = self.resolve_target(&sandbox)?;
            innodb_version(&url, spec.product).map_err(|why| ServerError::Add {
                name: name.to_owned(),
                why: format!("the started server did not answer a query: {why}"),
            })
        });
        let _ = self.stop(&sandbox);
        let _ = std::fs::remove_dir_all(self.paths(&sandbox, spec.product).dir);
        answer
    }

    /// `dbperf server remove NAME`: forgets an added build; deletes what dbperf unpacked for
    /// it (a `--tarball`), never a `--basedir` tree. Sandboxes of it keep their datadirs.
    pub fn remove_added(&self, name: &str) -> Result<DistRecord, ServerError> {
        let spec = self.added_spec(name).ok_or_else(|| ServerError::Add {
            name: name.to_owned(),
            why: format!(
                "there is no added build of that name under {} (`dbperf server list --available` lists them)",
                self.dist_root().display()
            ),
        })?;
        let dir = self.dist_root().join(spec.id);
        let path = dir.join(RECORD_FILE);
        let record: DistRecord =
            serde_json::from_slice(&std::fs::read(&path).map_err(|e| ServerError::io("cannot read", &path, e))?)
                .map_err(|source| ServerError::CorruptState {
                    path: path.clone(),
                    source,
                })?;
        // The directory holds the record, the option cache and, for a tarball, `base/`:
        // all of it made by dbperf.
        std::fs::remove_dir_all(&dir).map_err(|e| ServerError::io("cannot remove", &dir, e))?;
        Ok(record)
    }
}

/// `SELECT @@innodb_version` (MySQL family; `None` when the server has no InnoDB variable or
/// for PostgreSQL, which is asked for its version only).
fn innodb_version(url: &str, product: Product) -> Result<Option<String>, String> {
    use dbperf_driver::Session;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let target = dbperf_driver::Target::parse(url).map_err(|e| e.to_string())?;
        let mut s = dbperf_driver::any::AnySession::connect(
            &target,
            dbperf_driver::mysql::IgnoreErrors::Codes(Default::default()),
        )
        .await
        .map_err(|e| e.to_string())?;
        let sql = match product {
            Product::Postgres => "SELECT version()",
            Product::Mariadb | Product::Mysql => "SHOW GLOBAL VARIABLES LIKE 'innodb_version'",
        };
        let rows = s.query_rows(sql).await.map_err(|e| e.to_string())?;
        Ok(match product {
            Product::Postgres => None,
            Product::Mariadb | Product::Mysql => rows.into_iter().next().and_then(|r| r.into_iter().nth(1).flatten()),
        })
    })
}

/// Unpacks `tarball` into `dir/base` (through a scratch directory in `dir`); a tarball with one
/// top directory (as releases are) has that directory as the basedir.
fn unpack_tarball(name: &str, tarball: &Path, dir: &Path) -> Result<PathBuf, ServerError> {
    ensure_packages(&[("tar", Some("tar")), ("xz-utils", Some("xz"))])?;
    let scratch = dir.join(".unpack");
    std::fs::create_dir(&scratch).map_err(|e| ServerError::io("cannot create", &scratch, e))?;
    let out = Command::new("tar")
        .arg("-xf")
        .arg(tarball)
        .arg("-C")
        .arg(&scratch)
        .args(["--no-same-owner", "--no-same-permissions", "--delay-directory-restore"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ServerError::io("cannot run tar for", tarball, e))?;
    if !out.status.success() {
        return Err(ServerError::Add {
            name: name.to_owned(),
            why: format!(
                "`tar -xf {}` failed ({}): {}",
                tarball.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let entries: Vec<PathBuf> = std::fs::read_dir(&scratch)
        .map_err(|e| ServerError::io("cannot read", &scratch, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    let top = match entries.as_slice() {
        [one] if one.is_dir() && !one.is_symlink() => one.clone(),
        _ => scratch.clone(),
    };
    let base = dir.join("base");
    std::fs::rename(&top, &base).map_err(|e| ServerError::io("cannot move the unpacked tree to", &base, e))?;
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_lines_of_each_family_read() {
        let percona = parse_version_line(
            "/opt/ps/bin/mysqld  Ver 5.7.44-48 for Linux on x86_64 (Percona Server (GPL), Release 48, Revision 497f936a373)\n",
        )
        .unwrap();
        assert_eq!(percona.product, Product::Mysql);
        assert_eq!(percona.version, Version::new(5, 7, 44));
        assert_eq!(percona.text, "5.7.44-48");
        assert_eq!(
            percona.comment.as_deref(),
            Some("Percona Server (GPL), Release 48, Revision 497f936a373")
        );
        let maria = parse_version_line("mysqld  Ver 10.1.23-MariaDB for Linux on x86_64 (MariaDB Server)").unwrap();
        assert_eq!(
            (maria.product, maria.version, maria.comment.as_deref()),
            (Product::Mariadb, Version::new(10, 1, 23), Some("MariaDB Server"))
        );
        let mysql =
            parse_version_line("mysqld  Ver 5.5.62 for linux-glibc2.12 on x86_64 (MySQL Community Server (GPL))")
                .unwrap();
        assert_eq!(mysql.product, Product::Mysql);
        assert_eq!(mysql.comment.as_deref(), Some("MySQL Community Server (GPL)"));
        let pg = parse_version_line("postgres (PostgreSQL) 16.4").unwrap();
        assert_eq!((pg.product, pg.version), (Product::Postgres, Version::new(16, 4, 0)));
        assert_eq!(parse_version_line("Usage: mysqld [OPTIONS]"), None);
        assert_eq!(parse_version_line("mysqld  Ver garbage"), None);
    }

    #[test]
    fn flavour_names_xtradb_by_its_release_number() {
        assert_eq!(
            flavour(Some("MariaDB Server"), Some("5.6.35-80.0")).as_deref(),
            Some("MariaDB Server; InnoDB: XtraDB 5.6.35-80.0")
        );
        assert_eq!(
            flavour(Some("MariaDB Server"), Some("10.11.5")).as_deref(),
            Some("MariaDB Server")
        );
        assert_eq!(flavour(None, None), None);
    }

    #[test]
    fn names_are_single_components_and_not_catalog_ids() {
        for bad in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "-x",
            "mysql-8.0.31",
            "mariadb",
            &"x".repeat(49),
        ] {
            let e = check_name(bad).unwrap_err().to_string();
            assert!(e.contains("cannot add"), "{bad}: {e}");
        }
        check_name("percona-5.7.44").unwrap();
    }

    #[test]
    fn a_tree_without_a_server_program_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("bin")).unwrap();
        let e = examine("mine", tmp.path()).err().unwrap().to_string();
        assert!(e.contains("holds no server program") && e.contains("bin/mysqld"), "{e}");
        let home = SandboxHome::at(tmp.path().join("home"));
        let e = home
            .add("mine", &AddFrom::Basedir(tmp.path().to_owned()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no server program"), "{e}");
        assert!(!home.dist_root().join("mine").exists(), "a failed add leaves nothing");
        assert!(home.added_builds().is_empty());
    }
}
