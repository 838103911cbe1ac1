//! `--client-impl`: which session speaks to the server, checked against the target's
//! family. `wire` is dbperf's own lean session for both families (the default); the
//! driver-crate sessions stay selectable so the difference can be measured.

use crate::driver::target::Scheme;

/// The session a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// MySQL protocol, dbperf's [`crate::driver::wire::WireSession`].
    MysqlWire,
    /// MySQL protocol, [`crate::driver::mysql::MysqlSession`] on `mysql_async`.
    MysqlAsync,
    /// PostgreSQL, dbperf's [`crate::driver::pgwire::PgWireSession`].
    PgWire,
    /// PostgreSQL, [`crate::driver::pg::PgSession`] on `tokio-postgres`.
    TokioPostgres,
}

impl Client {
    /// Validates `--client-impl FLAG` for a target of family `scheme`.
    pub fn choose(flag: &str, scheme: Scheme) -> Result<Client, String> {
        match (flag, scheme) {
            ("wire", Scheme::Mysql) => Ok(Client::MysqlWire),
            ("wire", Scheme::Postgres) => Ok(Client::PgWire),
            ("mysql_async", Scheme::Mysql) => Ok(Client::MysqlAsync),
            ("tokio-postgres", Scheme::Postgres) => Ok(Client::TokioPostgres),
            ("mysql_async", Scheme::Postgres) => Err(
                "--client-impl mysql_async is a MySQL client and the target is PostgreSQL; use wire (default) or tokio-postgres"
                    .into(),
            ),
            ("tokio-postgres", Scheme::Mysql) => Err(
                "--client-impl tokio-postgres is a PostgreSQL client and the target speaks the MySQL protocol; use wire (default) or mysql_async"
                    .into(),
            ),
            (other, _) => Err(format!(
                "--client-impl must be wire (default), mysql_async (MySQL targets) or tokio-postgres (PostgreSQL targets), got {other:?}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_impls_are_checked_against_the_family() {
        assert_eq!(Client::choose("wire", Scheme::Mysql), Ok(Client::MysqlWire));
        assert_eq!(Client::choose("wire", Scheme::Postgres), Ok(Client::PgWire));
        assert_eq!(Client::choose("mysql_async", Scheme::Mysql), Ok(Client::MysqlAsync));
        assert_eq!(
            Client::choose("tokio-postgres", Scheme::Postgres),
            Ok(Client::TokioPostgres)
        );
        let e = Client::choose("mysql_async", Scheme::Postgres).unwrap_err();
        assert!(e.contains("PostgreSQL"), "{e}");
        let e = Client::choose("tokio-postgres", Scheme::Mysql).unwrap_err();
        assert!(e.contains("MySQL protocol"), "{e}");
        assert!(Client::choose("libpq", Scheme::Postgres)
            .unwrap_err()
            .contains("\"libpq\""));
    }
}
