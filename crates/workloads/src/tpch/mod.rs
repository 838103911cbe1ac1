//! TPC-H (and DBT-3) on MySQL/MariaDB: data byte-identical to dbgen 2.17.3, the 22 queries
//! with qgen 2.17.3 parameters, the official SF 1 answer check, and the power test.
//!
//! | file | owns |
//! |---|---|
//! | [`table`] | the eight tables: names, base row counts, the `.tbl` rows from `tpchgen` |
//! | [`schema`] | `CREATE TABLE` / indexes / `DROP` per server family ([`schema::TpchSql`]) |
//! | [`load`] | parallel streaming load (LOAD DATA LOCAL from memory), `--write-tbl`, cleanup |
//! | `insert` | the alternative loader: prepared 1,000-row INSERTs with string parameters |
//! | [`dists`] | `dists.dss` (the reference kit's distributions, kept as data) |
//! | [`qgen`] | qgen 2.17.3's RNG streams and parameter substitution, validation parameters |
//! | [`queries`] | the 22 query texts per server family and how parameters go into them |
//! | [`answers`] | answer files and the spec's comparison rules (`colprecision.txt`) |
//! | [`updates`] | dbgen's update sets (`-U n`): RF1's rows and RF2's keys, in memory |
//! | [`refresh`] | RF1 (new sales) and RF2 (old sales) as transactions; the next unused set |
//! | [`metrics`] | Power@Size, Throughput@Size, QphH@Size |
//! | [`runner`] | one query: setup/teardown, a timeout that cancels it on the server, its plan |
//! | [`power`] | the power test: RF1, 22 queries, RF2, repetitions, cold runs, `tpch.json` |
//! | [`throughput`] | the throughput test: concurrent query streams and the refresh stream, or a shard's share of them |
//! | [`merge`] | the shards of a throughput test spread over several clients, made one test (`dbperf merge`) |
//! | [`compare`] | the per-query comparison table across runs |
//! | [`report`] | the power and throughput tests' final report text |
//! | [`validate`] | `tpch validate`: the 22 answers checked (or written), the self-compare refusal |

pub mod answers;
pub mod compare;
pub mod dists;
mod insert;
pub mod load;
pub mod merge;
pub mod metrics;
pub mod power;
pub mod qgen;
pub mod queries;
pub mod refresh;
pub mod report;
pub mod runner;
pub mod schema;
pub mod table;
pub mod throughput;
pub mod updates;
pub mod validate;

pub use table::Table;

use dbperf_driver::Failed;

/// Something TPC-H work could not do.
#[derive(Debug, thiserror::Error)]
pub enum TpchError {
    /// A bad option value, naming the flag and the fix.
    #[error("{0}")]
    Invalid(String),
    /// `--answers` and `--write-answers` reach the same files: every answer would PASS.
    #[error(
        "--answers {} and --write-answers {} are the same answer files ({}): the answers would be compared with \
         themselves and always PASS. Write into another directory (e.g. --write-answers /tmp/tpch-answers-new) and \
         compare that with --answers",
        read.display(),
        write.display(),
        shared.display()
    )]
    SameAnswers {
        /// `--answers`.
        read: std::path::PathBuf,
        /// `--write-answers`.
        write: std::path::PathBuf,
        /// The file (or directory) both reach.
        shared: std::path::PathBuf,
    },
    /// The database does not hold the TPC-H data the command needs, and how to load it.
    #[error("{0}")]
    NoData(String),
    /// Tables in the way that dbperf did not create, or a refused cleanup.
    #[error(transparent)]
    Ddl(#[from] crate::ddl::DdlError),
    /// The server refused a statement.
    #[error(transparent)]
    Db(#[from] Failed),
    /// A file could not be read or written.
    #[error("{what} {path}: {source}")]
    Io {
        /// What dbperf was doing.
        what: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Checks a scale factor: positive, and one dbgen accepts (below 1 it uses
/// `(int)(1000·SF)/1000`, so it must be a multiple of 0.001).
pub fn check_scale_factor(sf: f64) -> Result<(), TpchError> {
    if !(sf.is_finite() && sf >= 0.001) {
        return Err(TpchError::Invalid(format!(
            "--scale-factor {sf} is not valid: give a positive number of at least 0.001 (e.g. 0.01, 0.1, 1, 10)"
        )));
    }
    if sf < 1.0 && ((sf * 1000.0).round() - sf * 1000.0).abs() > 1e-9 {
        return Err(TpchError::Invalid(format!(
            "--scale-factor {sf}: below 1 the reference dbgen only knows multiples of 0.001; use e.g. 0.01 or 0.1"
        )));
    }
    Ok(())
}

/// Waits until `at` on the wall clock (`--start-at`), in steps of at most 100 ms so that
/// `stop` (Ctrl-C) ends the wait. `Err` says how long ago `at` had passed when it already had.
pub async fn wait_until(
    at: std::time::SystemTime,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<(), std::time::Duration> {
    if let Err(late) = at.duration_since(std::time::SystemTime::now()) {
        return Err(late.duration());
    }
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let Ok(left) = at.duration_since(std::time::SystemTime::now()) else {
            break;
        };
        tokio::time::sleep(left.min(std::time::Duration::from_millis(100))).await;
    }
    Ok(())
}
