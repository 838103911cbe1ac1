//! [`AnySession`]: one session type for code that serves both server families, chosen at
//! connect time by the target's family.
//!
//! Hot-path workers stay generic over [`Session`] and are monomorphised per driver; this is
//! for loaders, query runners and administration, where one enum match per statement costs
//! nothing and a single code path is worth more. It also owns the one operation whose
//! spelling differs by family but whose meaning does not: streaming rows into a table
//! (`LOAD DATA LOCAL INFILE` on MySQL, `COPY ... FROM STDIN` on PostgreSQL).
//! [`AnySession::Dry`] answers without a server (sysbench's `--mysql-dry-run`): chosen by the
//! caller ([`AnySession::dry`]), never by [`Session::connect`].

use bytes::Bytes;
use futures_util::stream::BoxStream;

use super::dry::DrySession;
use super::mysql::IgnoreErrors;
use super::pgwire::PgWireSession;
use super::target::Family;
use super::wire::WireSession;
use super::{DbError, ExecInfo, Param, Rows, Session, StmtId, Target};

/// A MySQL-protocol or PostgreSQL session.
pub enum AnySession {
    /// MySQL, MariaDB, Percona Server (the lean wire session).
    Mysql(WireSession),
    /// PostgreSQL (the lean wire session).
    Pg(PgWireSession),
    /// No server: every request succeeds at once, with no rows ([`DrySession`]).
    Dry(DrySession),
}

impl AnySession {
    /// A session that stands for a server of `family` without one ([`DrySession`]).
    pub fn dry(family: Family) -> AnySession {
        AnySession::Dry(DrySession::new(family))
    }

    /// The family it talks to (or stands for).
    pub fn family(&self) -> Family {
        match self {
            AnySession::Mysql(_) => Family::Mysql,
            AnySession::Pg(_) => Family::Postgres,
            AnySession::Dry(s) => s.family(),
        }
    }

    /// Streams rows into a table with `sql` (a `LOAD DATA LOCAL INFILE` or a
    /// `COPY ... FROM STDIN`, as the family takes it); returns rows stored.
    pub async fn stream_in(
        &mut self,
        sql: &str,
        data: BoxStream<'static, std::io::Result<Bytes>>,
    ) -> Result<u64, DbError> {
        match self {
            AnySession::Mysql(s) => s.load_data_local(sql, data).await.map(|i| i.affected_rows),
            AnySession::Pg(s) => s.copy_in_stream(sql, data).await,
            AnySession::Dry(_) => Ok(0),
        }
    }

    /// True when [`exec_bulk`](Self::exec_bulk) works: MariaDB (10.2.7 and later).
    pub fn bulk_supported(&self) -> bool {
        matches!(self, AnySession::Mysql(s) if s.bulk_supported())
    }

    /// Executes prepared `stmt` once per row of `params` (`per_row` values each) in one
    /// command; see [`WireSession::exec_bulk`]. Only where [`bulk_supported`](Self::bulk_supported).
    pub async fn exec_bulk(&mut self, stmt: StmtId, params: &[Param<'_>], per_row: usize) -> Result<ExecInfo, DbError> {
        match self {
            AnySession::Mysql(s) => s.exec_bulk(stmt, params, per_row).await,
            AnySession::Dry(_) => Ok(ExecInfo::default()),
            AnySession::Pg(_) => Err(DbError {
                class: dbperf_engine::ErrorClass::Fatal,
                code: None,
                sqlstate: None,
                message: "PostgreSQL has no bulk execute; load with COPY".into(),
            }),
        }
    }

    /// The id another session uses to cancel this one's statement (`CONNECTION_ID()`,
    /// `pg_backend_pid()`).
    pub async fn backend_id(&mut self) -> Result<String, DbError> {
        let sql = match self {
            AnySession::Mysql(_) => "SELECT CONNECTION_ID()",
            // Known from the startup exchange (BackendKeyData).
            AnySession::Pg(s) => return Ok(s.backend_pid().to_string()),
            AnySession::Dry(_) => return Ok("0".into()),
        };
        let rows = self.query_rows(sql).await?;
        Ok(rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .unwrap_or_default())
    }

    /// The statement that cancels the running statement of session `id` (from another
    /// session), leaving that session usable.
    pub fn cancel_sql(&self, id: &str) -> String {
        match self {
            AnySession::Mysql(_) => format!("KILL QUERY {id}"),
            AnySession::Pg(_) => format!("SELECT pg_cancel_backend({id})"),
            AnySession::Dry(_) => format!("-- cancel {id}"),
        }
    }
}

impl Session for AnySession {
    async fn connect(target: &Target, ignore: IgnoreErrors) -> Result<AnySession, DbError> {
        Ok(match target.family {
            Family::Mysql => AnySession::Mysql(WireSession::connect(target, ignore).await?),
            Family::Postgres => AnySession::Pg(PgWireSession::connect(target, ignore).await?),
        })
    }

    fn in_transaction(&self) -> bool {
        match self {
            AnySession::Mysql(s) => s.in_transaction(),
            AnySession::Pg(s) => s.in_transaction(),
            AnySession::Dry(s) => s.in_transaction(),
        }
    }

    fn send_params_as_text(&mut self) {
        match self {
            AnySession::Mysql(s) => s.send_params_as_text(),
            AnySession::Pg(s) => s.send_params_as_text(),
            AnySession::Dry(s) => s.send_params_as_text(),
        }
    }

    async fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        match self {
            AnySession::Mysql(s) => s.prepare(sql).await,
            AnySession::Pg(s) => s.prepare(sql).await,
            AnySession::Dry(s) => s.prepare(sql).await,
        }
    }

    async fn exec(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<ExecInfo, DbError> {
        match self {
            AnySession::Mysql(s) => s.exec(stmt, params).await,
            AnySession::Pg(s) => s.exec(stmt, params).await,
            AnySession::Dry(s) => s.exec(stmt, params).await,
        }
    }

    async fn exec_rows(&mut self, stmt: StmtId, params: &[Param<'_>], rows: &mut Rows) -> Result<ExecInfo, DbError> {
        match self {
            AnySession::Mysql(s) => s.exec_rows(stmt, params, rows).await,
            AnySession::Pg(s) => s.exec_rows(stmt, params, rows).await,
            AnySession::Dry(s) => s.exec_rows(stmt, params, rows).await,
        }
    }

    async fn query(&mut self, sql: &str) -> Result<ExecInfo, DbError> {
        match self {
            AnySession::Mysql(s) => s.query(sql).await,
            AnySession::Pg(s) => s.query(sql).await,
            AnySession::Dry(s) => s.query(sql).await,
        }
    }

    async fn query_rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        match self {
            AnySession::Mysql(s) => s.query_rows(sql).await,
            AnySession::Pg(s) => s.query_rows(sql).await,
            AnySession::Dry(s) => s.query_rows(sql).await,
        }
    }

    async fn reconnect(&mut self) -> Result<(), DbError> {
        match self {
            AnySession::Mysql(s) => s.reconnect().await,
            AnySession::Pg(s) => s.reconnect().await,
            AnySession::Dry(s) => s.reconnect().await,
        }
    }

    /// The version string, naming PostgreSQL (whose `server_version` is bare digits), as
    /// MariaDB's and Percona's already name themselves.
    fn server_version(&self) -> String {
        match self {
            AnySession::Mysql(s) => s.server_version(),
            AnySession::Pg(s) => {
                let v = s.server_version();
                if v.contains("PostgreSQL") {
                    v
                } else {
                    format!("PostgreSQL {v}")
                }
            }
            AnySession::Dry(s) => s.server_version(),
        }
    }
}
