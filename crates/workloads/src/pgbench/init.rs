//! `pgbench -i` (default steps `dtgvp`): drop, create the four tables with pgbench's
//! columns and fillfactor, generate the rows client-side with `COPY ... FROM STDIN` in one
//! transaction (with `FREEZE`, as pgbench 14+ does), `VACUUM ANALYZE` (unless `-n`), then add the
//! primary keys. Unlike pgbench, init drops and cleanup drops only tables dbperf created
//! ([`crate::ddl`]; cleanup `--force` drops them anyway).

use std::time::{Duration, Instant};

use super::{ACCOUNTS_PER_SCALE, BRANCHES_PER_SCALE, TELLERS_PER_SCALE};
use crate::ddl::{self, DdlError};
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::{doing, Failed, Session, Target};

/// From this scale on pgbench declares `aid` as `bigint` (`SCALE_32BIT_THRESHOLD`).
const SCALE_32BIT_THRESHOLD: u32 = 20_000;

/// The tables in pgbench's drop and truncate order.
pub const TABLES: &str = "pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers";
/// The same, one by one.
const NAMES: [&str; 4] = [
    "pgbench_accounts",
    "pgbench_branches",
    "pgbench_history",
    "pgbench_tellers",
];
/// The tables in [`create_tables`]'s order.
const NAMES_IN_CREATE_ORDER: [&str; 4] = [
    "pgbench_history",
    "pgbench_tellers",
    "pgbench_accounts",
    "pgbench_branches",
];

/// What to initialize.
#[derive(Clone, Debug)]
pub struct InitConfig {
    /// Where.
    pub target: Target,
    /// Scale factor (`-s`): 1 branch, 10 tellers and 100,000 accounts per unit.
    pub scale: u32,
    /// `--fillfactor` of accounts, tellers and branches (10..=100, pgbench's default 100).
    pub fillfactor: u32,
    /// `--unlogged-tables`.
    pub unlogged: bool,
    /// `VACUUM ANALYZE` the tables after loading (pgbench's `-n` turns it off).
    pub vacuum: bool,
}

/// What an init did.
#[derive(Clone, Debug)]
pub struct InitReport {
    /// Accounts generated.
    pub accounts: i64,
    /// Time of the data generation step.
    pub generate: Duration,
    /// Time of the whole init.
    pub elapsed: Duration,
}

/// An init or cleanup that failed.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The server refused a statement.
    #[error(transparent)]
    Db(#[from] Failed),
    /// Bad settings.
    #[error("{0}")]
    Invalid(String),
    /// Tables in the way that dbperf did not create.
    #[error(transparent)]
    Ddl(#[from] DdlError),
}

/// `CREATE TABLE` statements exactly as pgbench 15 writes them.
pub fn create_tables(scale: u32, fillfactor: u32, unlogged: bool) -> Vec<String> {
    let big = scale >= SCALE_32BIT_THRESHOLD;
    let aid = if big { "aid bigint" } else { "aid    int" };
    let tables = [
        (
            "pgbench_history",
            format!("tid int,bid int,{aid},delta int,mtime timestamp,filler char(22)"),
            false,
        ),
        (
            "pgbench_tellers",
            "tid int not null,bid int,tbalance int,filler char(84)".to_string(),
            true,
        ),
        (
            "pgbench_accounts",
            format!("{aid} not null,bid int,abalance int,filler char(84)"),
            true,
        ),
        (
            "pgbench_branches",
            "bid int not null,bbalance int,filler char(88)".to_string(),
            true,
        ),
    ];
    tables
        .into_iter()
        .map(|(name, cols, ff)| {
            let mut sql = format!("create{} table {name}({cols})", if unlogged { " unlogged" } else { "" });
            if ff {
                sql.push_str(&format!(" with (fillfactor={fillfactor})"));
            }
            sql
        })
        .collect()
}

/// Rows per COPY data message.
const ROWS_PER_CHUNK: i64 = 4096;

/// COPY text lines `0..count` of a table, `line(i)` writing one; `made(rows)` is told of each
/// chunk as it is made (a progress bar).
fn copy_chunks(count: i64, line: impl Fn(&mut String, i64), made: impl Fn(u64)) -> impl Iterator<Item = bytes::Bytes> {
    let mut next = 0;
    std::iter::from_fn(move || {
        if next >= count {
            return None;
        }
        let end = (next + ROWS_PER_CHUNK).min(count);
        let mut buf = String::with_capacity(((end - next) * 24) as usize);
        for i in next..end {
            line(&mut buf, i);
        }
        made((end - next) as u64);
        next = end;
        Some(bytes::Bytes::from(buf))
    })
}

/// Runs `pgbench -i -s scale` (steps `dtgvp`) on `cfg.target`.
pub async fn init(cfg: &InitConfig) -> Result<InitReport, InitError> {
    use std::fmt::Write;
    if cfg.scale == 0 {
        return Err(InitError::Invalid("--scale must be at least 1".into()));
    }
    if !(10..=100).contains(&cfg.fillfactor) {
        return Err(InitError::Invalid(format!(
            "--fillfactor must be between 10 and 100, got {}",
            cfg.fillfactor
        )));
    }
    let started = Instant::now();
    let mut s = PgWireSession::connect(&cfg.target, IgnoreErrors::Sqlstates(Default::default()))
        .await
        .map_err(doing("connecting"))?;
    // pgbench drops whatever tables have its names; dbperf only those it created, so an
    // init killed at any point is finished by running it again, and the user's are refused.
    let family = cfg.target.family;
    let inv = ddl::inventory(&mut s, family).await?;
    let foreign = inv.foreign(NAMES);
    if !foreign.is_empty() {
        return Err(ddl::refuse_foreign("dbperf pgbench init", &foreign, &cfg.target.database).into());
    }
    eprintln!("dropping old tables...");
    for t in NAMES.into_iter().filter(|t| inv.exists(t)) {
        s.query(&format!("drop table if exists {t}"))
            .await
            .map_err(doing(format!("dropping {t}")))?;
    }
    eprintln!("creating tables...");
    let fresh = ddl::Inventory {
        existing: Vec::new(),
        created: inv.created.clone(),
        workloads: inv.workloads.clone(),
    };
    for (name, sql) in NAMES_IN_CREATE_ORDER
        .into_iter()
        .zip(create_tables(cfg.scale, cfg.fillfactor, cfg.unlogged))
    {
        ddl::create_table(&mut s, family, &fresh, "pgbench", "", name, &sql).await?;
    }
    let scale = cfg.scale as i64;
    let (branches, tellers, accounts) = (
        BRANCHES_PER_SCALE * scale,
        TELLERS_PER_SCALE * scale,
        ACCOUNTS_PER_SCALE * scale,
    );
    eprintln!("generating data (client-side)...");
    let t0 = Instant::now();
    // One transaction, truncate first: the server may then COPY with FREEZE.
    s.query("begin").await.map_err(doing("begin"))?;
    s.query(&format!("truncate table {TABLES}"))
        .await
        .map_err(doing("truncating"))?;
    // The filler of branches and tellers is NULL; accounts get the blank-padded empty string.
    s.copy_in(
        "copy pgbench_branches from stdin with (freeze on)",
        copy_chunks(
            branches,
            |b, i| {
                let _ = writeln!(b, "{}\t0\t\\N", i + 1);
            },
            |_| {},
        ),
    )
    .await
    .map_err(doing("copying pgbench_branches"))?;
    s.copy_in(
        "copy pgbench_tellers from stdin with (freeze on)",
        copy_chunks(
            tellers,
            |b, i| {
                let _ = writeln!(b, "{}\t{}\t0\t\\N", i + 1, i / TELLERS_PER_SCALE + 1);
            },
            |_| {},
        ),
    )
    .await
    .map_err(doing("copying pgbench_tellers"))?;
    // pgbench_accounts is the load: a bar on a terminal, a line every 10 s in a log.
    let bar = crate::load_progress(accounts > 0, accounts as u64, false);
    s.copy_in(
        "copy pgbench_accounts from stdin with (freeze on)",
        copy_chunks(
            accounts,
            |b, i| {
                let _ = writeln!(b, "{}\t{}\t0\t", i + 1, i / ACCOUNTS_PER_SCALE + 1);
            },
            |rows| bar.inc(rows),
        ),
    )
    .await
    .map_err(doing("copying pgbench_accounts"))?;
    bar.finish_and_clear();
    s.query("commit").await.map_err(doing("commit"))?;
    let generate = t0.elapsed();
    if cfg.vacuum {
        eprintln!("vacuuming...");
    }
    for t in [
        "pgbench_branches",
        "pgbench_tellers",
        "pgbench_accounts",
        "pgbench_history",
    ]
    .into_iter()
    .filter(|_| cfg.vacuum)
    {
        s.query(&format!("vacuum analyze {t}"))
            .await
            .map_err(doing(format!("vacuum analyze {t}")))?;
    }
    eprintln!("creating primary keys...");
    for (t, k) in [
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_accounts", "aid"),
    ] {
        let sql = format!("alter table {t} add primary key ({k})");
        s.query(&sql).await.map_err(doing(sql.clone()))?;
    }
    Ok(InitReport {
        accounts,
        generate,
        elapsed: started.elapsed(),
    })
}

/// The scale of initialized tables, as pgbench reads it: the number of branches.
pub async fn scale_of<S: Session>(s: &mut S) -> Result<i64, InitError> {
    let rows = s
        .query_rows("select count(*) from pgbench_branches")
        .await
        .map_err(|e| match e.sqlstate.as_deref() {
            Some("42P01") => InitError::Invalid(
                "pgbench_branches does not exist. Perhaps you need to do initialization: run `dbperf pgbench init --scale N` (same --target) first".into(),
            ),
            _ => doing("reading the scale from pgbench_branches")(e).into(),
        })?;
    let n: i64 = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if n < 1 {
        return Err(InitError::Invalid(
            "pgbench_branches is empty: run `dbperf pgbench init --scale N` first".into(),
        ));
    }
    Ok(n)
}

/// Drops the four pgbench tables, those dbperf created (all four with `force`).
pub async fn cleanup(target: &Target, force: bool) -> Result<(), InitError> {
    let mut s = PgWireSession::connect(target, IgnoreErrors::Sqlstates(Default::default()))
        .await
        .map_err(doing("connecting"))?;
    ddl::drop_created(
        &mut s,
        target.family,
        "pgbench",
        &target.database,
        "dbperf pgbench cleanup",
        &NAMES,
        force,
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_is_pgbench_15s() {
        let t = create_tables(1, 100, false);
        assert_eq!(
            t[0],
            "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))"
        );
        assert_eq!(
            t[2],
            "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)"
        );
        let big = create_tables(20_000, 90, true);
        assert_eq!(
            big[2],
            "create unlogged table pgbench_accounts(aid bigint not null,bid int,abalance int,filler char(84)) with (fillfactor=90)"
        );
    }

    #[test]
    fn copy_lines_cover_every_row_once() {
        let told = std::cell::Cell::new(0);
        let text: String = copy_chunks(
            10_000,
            |b, i| {
                b.push_str(&format!("{}\n", i + 1));
            },
            |rows| told.set(told.get() + rows),
        )
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
        let ids: Vec<i64> = text.lines().map(|l| l.parse().unwrap()).collect();
        assert_eq!(ids, (1..=10_000).collect::<Vec<_>>());
        assert_eq!(told.get(), 10_000, "the progress is told of every row");
    }
}
