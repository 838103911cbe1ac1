//! `pgbench -i` and its steps (`-I`, default `dtgvp`): `d` drop, `t` create the four tables
//! with pgbench's columns and fillfactor, `g` generate the rows client-side with `COPY ... FROM
//! STDIN` in one transaction (with `FREEZE`, as pgbench 14+ does) or `G` server-side with
//! `generate_series`, `v` `VACUUM ANALYZE` (`-n` drops it), `p` the primary keys, `f` the
//! foreign keys (`--foreign-keys` adds it). Unlike pgbench, init drops and cleanup drops only tables dbperf created
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
    /// The steps, in order ([`init_steps`]).
    pub steps: String,
    /// `--partitions` of pgbench_accounts (0: a plain table) and `--partition-method`.
    pub partitions: u32,
    pub partition_method: PartitionMethod,
    /// `--tablespace`: where the tables go (step t).
    pub tablespace: Option<String>,
    /// `--index-tablespace`: where the primary keys' indexes go (step p).
    pub index_tablespace: Option<String>,
}

/// ` tablespace "NAME"` (or ` using index tablespace "NAME"` with `index`) for a
/// statement, as pgbench appends it; nothing without a tablespace.
pub fn tablespace_clause(tablespace: Option<&str>, index: bool) -> String {
    match tablespace {
        None => String::new(),
        Some(t) => format!(
            "{} tablespace \"{}\"",
            if index { " using index" } else { "" },
            t.replace('"', "\"\"")
        ),
    }
}

/// pgbench's `--partition-method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionMethod {
    Range,
    Hash,
}

impl PartitionMethod {
    /// `--partition-method`'s value, with pgbench's words when it is neither.
    pub fn parse(s: &str) -> Result<PartitionMethod, String> {
        match s {
            "range" => Ok(PartitionMethod::Range),
            "hash" => Ok(PartitionMethod::Hash),
            other => Err(format!(
                "invalid partition method, expecting \"range\" or \"hash\", got: \"{other}\""
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            PartitionMethod::Range => "range",
            PartitionMethod::Hash => "hash",
        }
    }
}

/// The `CREATE TABLE ... PARTITION OF pgbench_accounts` statements of `partitions` parts, as
/// pgbench 15 writes them (range: equal spans of the aids, open at both ends).
pub fn create_partitions(
    scale: u32,
    fillfactor: u32,
    unlogged: bool,
    partitions: u32,
    method: PartitionMethod,
) -> Vec<String> {
    let n = i64::from(partitions);
    let accounts = ACCOUNTS_PER_SCALE * i64::from(scale);
    let part = (accounts + n - 1) / n;
    (1..=n)
        .map(|p| {
            let bounds = match method {
                PartitionMethod::Range => {
                    let from = if p == 1 { "minvalue".to_string() } else { ((p - 1) * part + 1).to_string() };
                    let to = if p < n { (p * part + 1).to_string() } else { "maxvalue".to_string() };
                    format!("for values from ({from}) to ({to})")
                }
                PartitionMethod::Hash => format!("for values with (modulus {n}, remainder {})", p - 1),
            };
            format!(
                "create{} table pgbench_accounts_{p}\n  partition of pgbench_accounts\n  {bounds} with (fillfactor={fillfactor})",
                if unlogged { " unlogged" } else { "" }
            )
        })
        .collect()
}

/// pgbench's init step letters.
pub const STEPS: &str = "dtgGvpf";

/// The steps `-I` (default `dtgvp`) gives, without `v` under `-n`, with `f` under
/// `--foreign-keys` (when `-I` has none): pgbench's rules and words.
pub fn init_steps(given: Option<&str>, no_vacuum: bool, foreign_keys: bool) -> Result<String, String> {
    let mut steps: String = given
        .unwrap_or("dtgvp")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if let Some(bad) = steps.chars().find(|c| !STEPS.contains(*c)) {
        return Err(format!(
            "unrecognized initialization step \"{bad}\"\nAllowed step characters are: \"{STEPS}\"."
        ));
    }
    if no_vacuum {
        steps.retain(|c| c != 'v');
    }
    if foreign_keys && !steps.contains('f') {
        steps.push('f');
    }
    Ok(steps)
}

/// What an init did.
#[derive(Clone, Debug)]
pub struct InitReport {
    /// Accounts generated.
    pub accounts: i64,
    /// Each step's name as pgbench's last line gives it ("client-side generate") and time.
    pub steps: Vec<(&'static str, Duration)>,
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
pub fn create_tables(scale: u32, fillfactor: u32, unlogged: bool, partitioned: Option<PartitionMethod>) -> Vec<String> {
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
            match partitioned {
                // The fillfactor goes to the partitions.
                Some(m) if name == "pgbench_accounts" => sql.push_str(&format!(" partition by {} (aid)", m.name())),
                _ if ff => sql.push_str(&format!(" with (fillfactor={fillfactor})")),
                _ => {}
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

/// Runs `pgbench -i -s scale` with `cfg.steps` on `cfg.target`.
pub async fn init(cfg: &InitConfig) -> Result<InitReport, InitError> {
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
    let partitioned = (cfg.partitions > 0).then_some(cfg.partition_method);
    let mut report = InitReport {
        accounts: 0,
        steps: Vec::new(),
        elapsed: Duration::ZERO,
    };
    for step in cfg.steps.chars() {
        let t0 = Instant::now();
        let name = match step {
            'd' => {
                eprintln!("dropping old tables...");
                // In one statement, as pgbench: the foreign keys (step f) join them.
                let ours: Vec<&str> = NAMES.into_iter().filter(|t| inv.exists(t)).collect();
                if !ours.is_empty() {
                    let sql = format!("drop table if exists {}", ours.join(", "));
                    s.query(&sql).await.map_err(doing(sql.clone()))?;
                }
                "drop tables"
            }
            't' => {
                eprintln!("creating tables...");
                let fresh = ddl::Inventory {
                    existing: Vec::new(),
                    created: inv.created.clone(),
                    workloads: inv.workloads.clone(),
                };
                for (name, sql) in NAMES_IN_CREATE_ORDER.into_iter().zip(create_tables(
                    cfg.scale,
                    cfg.fillfactor,
                    cfg.unlogged,
                    partitioned,
                )) {
                    let sql = sql + &tablespace_clause(cfg.tablespace.as_deref(), false);
                    ddl::create_table(&mut s, family, &fresh, "pgbench", "", name, &sql).await?;
                }
                if cfg.partitions > 0 {
                    eprintln!("creating {} partitions...", cfg.partitions);
                    for sql in create_partitions(
                        cfg.scale,
                        cfg.fillfactor,
                        cfg.unlogged,
                        cfg.partitions,
                        cfg.partition_method,
                    ) {
                        s.query(&sql).await.map_err(doing(sql.clone()))?;
                    }
                }
                "create tables"
            }
            'g' => {
                eprintln!("generating data (client-side)...");
                report.accounts = generate_client_side(&mut s, cfg.scale, partitioned.is_none()).await?;
                "client-side generate"
            }
            'G' => {
                eprintln!("generating data (server-side)...");
                report.accounts = generate_server_side(&mut s, cfg.scale).await?;
                "server-side generate"
            }
            'v' => {
                eprintln!("vacuuming...");
                for t in [
                    "pgbench_branches",
                    "pgbench_tellers",
                    "pgbench_accounts",
                    "pgbench_history",
                ] {
                    s.query(&format!("vacuum analyze {t}"))
                        .await
                        .map_err(doing(format!("vacuum analyze {t}")))?;
                }
                "vacuum"
            }
            'p' => {
                eprintln!("creating primary keys...");
                for (t, k) in [
                    ("pgbench_branches", "bid"),
                    ("pgbench_tellers", "tid"),
                    ("pgbench_accounts", "aid"),
                ] {
                    let sql = format!(
                        "alter table {t} add primary key ({k}){}",
                        tablespace_clause(cfg.index_tablespace.as_deref(), true)
                    );
                    s.query(&sql).await.map_err(doing(sql.clone()))?;
                }
                "primary keys"
            }
            'f' => {
                eprintln!("creating foreign keys...");
                for sql in FOREIGN_KEYS {
                    s.query(sql).await.map_err(doing(sql))?;
                }
                "foreign keys"
            }
            other => {
                return Err(InitError::Invalid(format!(
                    "unrecognized initialization step \"{other}\"\nAllowed step characters are: \"{STEPS}\"."
                )))
            }
        };
        report.steps.push((name, t0.elapsed()));
    }
    report.elapsed = started.elapsed();
    Ok(report)
}

/// pgbench 15's foreign keys (`f`).
const FOREIGN_KEYS: [&str; 5] = [
    "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
    "alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
];

/// `g`: the rows sent with COPY in one transaction that truncates first (so the server may
/// COPY with FREEZE); the accounts made.
async fn generate_client_side(s: &mut PgWireSession, scale: u32, freeze: bool) -> Result<i64, InitError> {
    use std::fmt::Write;
    let scale = scale as i64;
    let (branches, tellers, accounts) = (
        BRANCHES_PER_SCALE * scale,
        TELLERS_PER_SCALE * scale,
        ACCOUNTS_PER_SCALE * scale,
    );
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
    // A partitioned table cannot be copied with FREEZE (pgbench leaves it out too).
    let accounts_copy = match freeze {
        true => "copy pgbench_accounts from stdin with (freeze on)",
        false => "copy pgbench_accounts from stdin",
    };
    s.copy_in(
        accounts_copy,
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
    Ok(accounts)
}

/// `G`: the same rows made by the server (`generate_series`), as pgbench's server-side step.
async fn generate_server_side(s: &mut PgWireSession, scale: u32) -> Result<i64, InitError> {
    let scale = scale as i64;
    let statements = [
        "begin".to_string(),
        format!("truncate table {TABLES}"),
        format!(
            "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {}) as bid",
            BRANCHES_PER_SCALE * scale
        ),
        format!(
            "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / {TELLERS_PER_SCALE} + 1, 0 \
             from generate_series(1, {}) as tid",
            TELLERS_PER_SCALE * scale
        ),
        format!(
            "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / {ACCOUNTS_PER_SCALE} + 1, 0, '' \
             from generate_series(1, {}) as aid",
            ACCOUNTS_PER_SCALE * scale
        ),
        "commit".to_string(),
    ];
    for sql in &statements {
        s.query(sql).await.map_err(doing(sql.clone()))?;
    }
    Ok(ACCOUNTS_PER_SCALE * scale)
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

/// pgbench's vacuum before a run (without `-n`): `vacuum` of branches and tellers and
/// `truncate` of history, then with `all` (`-v`) `vacuum analyze` of accounts, said on
/// stderr as pgbench says it. A statement that fails is reported and passed over, as pgbench
/// does (a script's run on other tables goes on).
pub async fn vacuum_before_run<S: Session>(s: &mut S, all: bool) {
    async fn attempt<S: Session>(s: &mut S, sql: &str) {
        if let Err(e) = s.query(sql).await {
            eprintln!("pgbench: error: {}", dbperf_driver::pg::libpq_text(&e));
            eprintln!("pgbench: detail: (ignoring this error and continuing anyway)");
        }
    }
    eprint!("starting vacuum...");
    for sql in [
        "vacuum pgbench_branches",
        "vacuum pgbench_tellers",
        "truncate pgbench_history",
    ] {
        attempt(s, sql).await;
    }
    eprintln!("end.");
    if all {
        eprint!("starting vacuum pgbench_accounts...");
        attempt(s, "vacuum analyze pgbench_accounts").await;
        eprintln!("end.");
    }
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
    fn tablespaces_are_quoted_as_identifiers() {
        assert_eq!(tablespace_clause(None, false), "");
        assert_eq!(tablespace_clause(Some("ts"), false), " tablespace \"ts\"");
        assert_eq!(
            tablespace_clause(Some("a\"b"), true),
            " using index tablespace \"a\"\"b\""
        );
    }

    #[test]
    fn ddl_is_pgbench_15s() {
        let t = create_tables(1, 100, false, None);
        assert_eq!(
            t[0],
            "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))"
        );
        assert_eq!(
            t[2],
            "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)"
        );
        let big = create_tables(20_000, 90, true, None);
        assert_eq!(
            big[2],
            "create unlogged table pgbench_accounts(aid bigint not null,bid int,abalance int,filler char(84)) with (fillfactor=90)"
        );
    }

    #[test]
    fn partitions_are_pgbench_15s() {
        let t = create_tables(1, 90, false, Some(PartitionMethod::Range));
        assert_eq!(
            t[2],
            "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) partition by range (aid)"
        );
        let p = create_partitions(1, 90, false, 3, PartitionMethod::Range);
        assert_eq!(
            p,
            [
                "create table pgbench_accounts_1\n  partition of pgbench_accounts\n  for values from (minvalue) to (33335) with (fillfactor=90)",
                "create table pgbench_accounts_2\n  partition of pgbench_accounts\n  for values from (33335) to (66669) with (fillfactor=90)",
                "create table pgbench_accounts_3\n  partition of pgbench_accounts\n  for values from (66669) to (maxvalue) with (fillfactor=90)",
            ]
        );
        let h = create_partitions(1, 100, true, 2, PartitionMethod::Hash);
        assert!(
            h[1].ends_with("for values with (modulus 2, remainder 1) with (fillfactor=100)"),
            "{}",
            h[1]
        );
        assert!(h[1].starts_with("create unlogged table pgbench_accounts_2"));
        assert!(PartitionMethod::parse("BAD")
            .unwrap_err()
            .contains("\"range\" or \"hash\", got: \"BAD\""));
    }

    #[test]
    fn init_steps_follow_pgbenchs_rules() {
        assert_eq!(init_steps(None, false, false).unwrap(), "dtgvp");
        assert_eq!(init_steps(None, true, true).unwrap(), "dtgpf");
        // 001_pgbench_with_server.pl's "--init-steps=dtpvGvv --no-vacuum --foreign-keys".
        assert_eq!(init_steps(Some("dtpvGvv"), true, true).unwrap(), "dtpGf");
        let e = init_steps(Some("dta"), false, false).unwrap_err();
        assert!(e.contains("unrecognized initialization step \"a\""), "{e}");
        assert!(e.contains("Allowed step characters are"), "{e}");
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
