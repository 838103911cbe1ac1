//! The alternative to LOAD DATA (`--load-method insert`): each part's rows split into
//! fields and sent as prepared 1,000-row INSERTs whose parameters are the field strings
//! (the server converts numbers and dates), in the caller's transaction (one per part). Kept to measure
//! against LOAD DATA (README, "TPC-H"); it needs no `local_infile`.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use indicatif::ProgressBar;

use super::schema::column_count;
use super::table::Table;
use dbperf_driver::wire::WireSession;
use dbperf_driver::{DbError, ExecInfo, Param, Session, StmtId};

/// Rows per INSERT (16,000 parameters for lineitem; the protocol allows 65,535).
const ROWS_PER_INSERT: usize = 1000;

/// Inserts the `\n`-terminated, `|`-separated rows arriving on `rx` into `t`.
pub(super) async fn insert_blocks(
    s: &mut WireSession,
    t: Table,
    mut rx: tokio::sync::mpsc::Receiver<Bytes>,
    bar: &ProgressBar,
    sent: &AtomicU64,
) -> Result<ExecInfo, DbError> {
    let columns = column_count(t);
    let mut prepared: Vec<(usize, StmtId)> = Vec::new();
    let mut rows: Vec<Vec<u8>> = Vec::with_capacity(ROWS_PER_INSERT);
    let mut affected = 0;
    loop {
        let block = rx.recv().await;
        if let Some(b) = &block {
            sent.fetch_add(b.len() as u64, Ordering::Relaxed);
            rows.extend(b.split(|&c| c == b'\n').filter(|l| !l.is_empty()).map(<[u8]>::to_vec));
        }
        while rows.len() >= ROWS_PER_INSERT || (block.is_none() && !rows.is_empty()) {
            let n = rows.len().min(ROWS_PER_INSERT);
            let batch: Vec<Vec<u8>> = rows.drain(..n).collect();
            let stmt = match prepared.iter().find(|(k, _)| *k == n) {
                Some(&(_, id)) => id,
                None => {
                    let row = format!("({})", vec!["?"; columns].join(","));
                    let sql = format!("INSERT INTO {} VALUES {}", t.name(), vec![row; n].join(","));
                    let id = s.prepare(&sql).await?;
                    prepared.push((n, id));
                    id
                }
            };
            let params: Vec<Param<'_>> = batch
                .iter()
                .flat_map(|r| r.split(|&c| c == b'|').map(Param::Bytes))
                .collect();
            affected += s.exec(stmt, &params).await?.affected_rows;
            bar.inc(n as u64);
        }
        if block.is_none() {
            break;
        }
    }
    Ok(ExecInfo {
        affected_rows: affected,
    })
}
