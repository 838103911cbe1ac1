//! Running one TPC-H query: its setup and teardown statements, the timed statement with
//! a per-query timeout that cancels it on the server (`KILL QUERY` or
//! `pg_cancel_backend` from a second connection, so the session survives and the next
//! query runs), and its plan (`EXPLAIN FORMAT=JSON`, `EXPLAIN (FORMAT JSON)`).

use std::time::{Duration, Instant};

use super::load::connect;
use super::queries::Rendered;
use super::TpchError;
use dbperf_driver::any::AnySession;
use dbperf_driver::doing;
use dbperf_driver::target::Family;
use dbperf_driver::{Session, Target};
pub use dbperf_results::tpch::Status;

/// One execution of a query.
#[derive(Clone, Debug)]
pub struct Execution {
    /// Seconds from sending the statement to its last row (the timeout when it timed out).
    pub seconds: f64,
    /// How it ended.
    pub status: Status,
    /// The server's error (or, after a timeout, what the cancelled statement returned).
    pub error: Option<String>,
    /// The rows, values as text (NULL as `NULL`).
    pub rows: Vec<Vec<String>>,
}

/// A session that runs queries and can cancel its own statements.
pub struct QueryRunner {
    session: AnySession,
    target: Target,
    connection_id: String,
}

impl QueryRunner {
    /// Connects and learns the connection id (for `KILL QUERY`).
    pub async fn connect(target: &Target) -> Result<QueryRunner, TpchError> {
        let session = connect(target).await?;
        let mut r = QueryRunner {
            session,
            target: target.clone(),
            connection_id: String::new(),
        };
        r.learn_id().await?;
        Ok(r)
    }

    async fn learn_id(&mut self) -> Result<(), TpchError> {
        self.connection_id = self
            .session
            .backend_id()
            .await
            .map_err(doing("reading the connection id"))?;
        Ok(())
    }

    /// Opens a new connection (after a server restart).
    pub async fn reconnect(&mut self) -> Result<(), TpchError> {
        self.session.reconnect().await.map_err(doing("reconnecting"))?;
        self.learn_id().await
    }

    /// The session, for refresh functions and other statements.
    pub fn session(&mut self) -> &mut AnySession {
        &mut self.session
    }

    /// The server's version string.
    pub fn server_version(&self) -> String {
        self.session.server_version()
    }

    /// Runs `q`: teardown leftovers, setup, the timed statement (cancelled after
    /// `timeout`), teardown. Setup and teardown are not timed.
    pub async fn run(&mut self, q: &Rendered, timeout: Option<Duration>) -> Result<Execution, TpchError> {
        self.statements(&q.teardown).await?;
        self.statements(&q.setup).await?;
        let (result, timed_out, elapsed) = {
            let session = &mut self.session;
            let fut = session.query_rows(&q.main);
            tokio::pin!(fut);
            let t0 = Instant::now();
            match timeout {
                None => (fut.await, false, t0.elapsed()),
                Some(limit) => tokio::select! {
                    r = &mut fut => (r, false, t0.elapsed()),
                    _ = tokio::time::sleep(limit) => {
                        kill_query(&self.target, &self.connection_id).await?;
                        (fut.await, true, limit)
                    }
                },
            }
        };
        let exec = match (result, timed_out) {
            (Ok(rows), false) => Execution {
                seconds: elapsed.as_secs_f64(),
                status: Status::Ok,
                error: None,
                rows: rows
                    .into_iter()
                    .map(|r| r.into_iter().map(|v| v.unwrap_or_else(|| "NULL".into())).collect())
                    .collect(),
            },
            (r, true) => {
                // A KILL that arrived just after the statement ended must not hit the next.
                let _ = self.session.query_rows("SELECT 1").await;
                Execution {
                    seconds: elapsed.as_secs_f64(),
                    status: Status::Timeout,
                    error: r.err().map(|e| e.to_string()),
                    rows: Vec::new(),
                }
            }
            (Err(e), false) => Execution {
                seconds: elapsed.as_secs_f64(),
                status: Status::Error,
                error: Some(e.to_string()),
                rows: Vec::new(),
            },
        };
        if !self.session_alive().await {
            self.reconnect().await?;
        }
        self.statements(&q.teardown).await?;
        Ok(exec)
    }

    /// The plan of `q` as JSON (`EXPLAIN FORMAT=JSON`), with its setup run around it.
    pub async fn explain(&mut self, q: &Rendered) -> Result<serde_json::Value, TpchError> {
        self.statements(&q.teardown).await?;
        self.statements(&q.setup).await?;
        let sql = match self.target.family {
            Family::Mysql => format!("EXPLAIN FORMAT=JSON {}", q.main),
            Family::Postgres => format!("EXPLAIN (FORMAT JSON) {}", q.main),
        };
        let r = self.session.query_rows(&sql).await;
        self.statements(&q.teardown).await?;
        let rows = r.map_err(doing(format!("EXPLAIN of Q{}", q.query)))?;
        let text = rows
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .unwrap_or_default();
        Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
    }

    async fn statements(&mut self, sqls: &[String]) -> Result<(), TpchError> {
        for sql in sqls {
            self.session.query(sql).await.map_err(doing(sql.clone()))?;
        }
        Ok(())
    }

    async fn session_alive(&mut self) -> bool {
        self.session.query_rows("SELECT 1").await.is_ok()
    }
}

/// Cancels the statement running on connection `id` from a new connection.
async fn kill_query(target: &Target, id: &str) -> Result<(), TpchError> {
    let mut killer = connect(target).await?;
    let sql = killer.cancel_sql(id);
    killer
        .query(&sql)
        .await
        .map_err(doing(format!("cancelling the query on connection {id}")))?;
    Ok(())
}
