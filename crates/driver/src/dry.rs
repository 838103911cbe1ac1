//! [`DrySession`]: a session that answers every request at once, successfully, without a
//! server, as sysbench's `--mysql-dry-run` makes its MySQL driver pretend ("all MySQL client
//! API calls are successful without executing them"). Connecting opens nothing; statements
//! prepare, execute and query without being sent; no statement returns rows or changes any.
//! What is left to measure is the client's own cost: the script, its parameters, its
//! statement log, the engine's bookkeeping.

use super::mysql::IgnoreErrors;
use super::target::Family;
use super::{DbError, ExecInfo, Param, Rows, Session, StmtId, Target};

/// A session with no server behind it.
#[derive(Debug)]
pub struct DrySession {
    /// The family it stands for (what a script's `sysbench.sql.driver()` is told).
    family: Family,
    /// Statements prepared, for their ids.
    prepared: u32,
}

impl DrySession {
    /// A session standing for a server of `family`.
    pub fn new(family: Family) -> DrySession {
        DrySession { family, prepared: 0 }
    }

    /// The family it stands for.
    pub fn family(&self) -> Family {
        self.family
    }
}

impl Session for DrySession {
    /// Opens nothing: `target` gives only its family.
    async fn connect(target: &Target, _ignore: IgnoreErrors) -> Result<DrySession, DbError> {
        Ok(DrySession::new(target.family))
    }

    async fn prepare(&mut self, _sql: &str) -> Result<StmtId, DbError> {
        let id = StmtId(self.prepared);
        self.prepared = self.prepared.wrapping_add(1);
        Ok(id)
    }

    async fn exec(&mut self, _stmt: StmtId, _params: &[Param<'_>]) -> Result<ExecInfo, DbError> {
        Ok(ExecInfo::default())
    }

    async fn exec_rows(&mut self, _stmt: StmtId, _params: &[Param<'_>], rows: &mut Rows) -> Result<ExecInfo, DbError> {
        rows.reset(0);
        Ok(ExecInfo::default())
    }

    async fn query(&mut self, _sql: &str) -> Result<ExecInfo, DbError> {
        Ok(ExecInfo::default())
    }

    async fn query_rows(&mut self, _sql: &str) -> Result<Vec<Vec<Option<String>>>, DbError> {
        Ok(Vec::new())
    }

    async fn reconnect(&mut self) -> Result<(), DbError> {
        self.prepared = 0;
        Ok(())
    }

    fn server_version(&self) -> String {
        "dry run (no server)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_succeeds_at_once_with_no_rows() {
        let target = Target::parse("mysql://sb:sb@127.0.0.1:1/sbtest").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            // Port 1: nothing listens there, and nothing is asked.
            let mut s = DrySession::connect(&target, IgnoreErrors::sysbench_default())
                .await
                .unwrap();
            assert_eq!(s.family(), Family::Mysql);
            let a = s.prepare("SELECT c FROM sbtest1 WHERE id=?").await.unwrap();
            let b = s.prepare("UPDATE sbtest1 SET k=k+1 WHERE id=?").await.unwrap();
            assert_ne!(a, b);
            let mut rows = Rows::new();
            rows.reset(1);
            rows.push_int(7);
            let info = s.exec_rows(a, &[Param::Int(1)], &mut rows).await.unwrap();
            assert_eq!((info.affected_rows, rows.len()), (0, 0));
            assert_eq!(s.exec(b, &[Param::Int(1)]).await.unwrap().affected_rows, 0);
            assert!(s.query_rows("SELECT 1").await.unwrap().is_empty());
            s.query("BEGIN").await.unwrap();
            s.reconnect().await.unwrap();
        });
    }
}
