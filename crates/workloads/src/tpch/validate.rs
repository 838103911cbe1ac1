//! TPC-H answer validation (clause 2.1.3.5 / DBT-3's validation run): the 22 queries with
//! the validation parameters, each answer compared with the official SF 1 answers or a
//! directory of golden answers, or written as golden answers; and the refusal to compare a
//! directory of answers with itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::answers::{self, compare as compare_answers, kinds};
use super::power::stream_params;
use super::queries::render;
use super::refresh::next_set;
use super::runner::{QueryRunner, Status};
use super::TpchError;
use dbperf_driver::Target;

/// What `tpch validate` runs.
pub struct ValidateConfig {
    /// The server holding the data.
    pub target: Target,
    /// Scale factor of the data.
    pub sf: f64,
    /// Cancel a query after this long.
    pub timeout: Option<Duration>,
    /// Answers to compare with (default at SF 1: the official ones).
    pub answers: Option<PathBuf>,
    /// Write the answers obtained here as `q<N>.out`.
    pub write_answers: Option<PathBuf>,
}

/// Runs the 22 queries with the validation parameters, printing one line per query through
/// `print`; the number of queries whose answer did not match (or that failed).
pub async fn validate(cfg: &ValidateConfig, mut print: impl FnMut(String)) -> Result<u32, TpchError> {
    let params = stream_params(cfg.sf, 0, 0, true);
    let mut failed = 0;
    {
        let mut runner = QueryRunner::connect(&cfg.target).await?;
        let refreshed = next_set(runner.session(), cfg.sf).await? - 1;
        if refreshed > 0 {
            eprintln!(
                "warning: {refreshed} RF1/RF2 pair(s) have run on this data since it was loaded; answers that show order keys (Q3, Q18) can differ. Validate freshly loaded data (`dbperf tpch cleanup` then `prepare`)"
            );
        }
        for p in &params {
            let q = p.query;
            let e = runner.run(&render(cfg.target.family, p, 0), cfg.timeout).await?;
            if let Some(dir) = &cfg.write_answers {
                let header: Vec<String> = kinds(q).iter().map(|k| format!("{k:?}").to_lowercase()).collect();
                let path = dir.join(format!("q{q}.out"));
                std::fs::write(&path, answers::format(&header, &e.rows)).map_err(|source| TpchError::Io {
                    what: "writing",
                    path: path.clone(),
                    source,
                })?;
            }
            let verdict = match e.status {
                Status::Timeout => Err(format!("timed out after {:.1} s", e.seconds)),
                Status::Error => Err(e.error.clone().unwrap_or_default()),
                Status::Ok => {
                    let expected = match (&cfg.answers, &cfg.write_answers) {
                        (Some(dir), _) => Some(answers::read_dir(dir, q)?),
                        (None, _) if cfg.sf == 1.0 => Some(answers::official_sf1(q)),
                        (None, _) => None,
                    };
                    match expected {
                        Some(exp) => compare_answers(q, &exp, &e.rows).map_err(|m| m.to_string()),
                        None => Ok(()),
                    }
                }
            };
            let checked = cfg.answers.is_some() || cfg.sf == 1.0;
            match verdict {
                Ok(()) if !checked => print(format!(
                    "Q{q:<2} DONE  {:>6} rows  {:8.2} s  (no answers to compare with)",
                    e.rows.len(),
                    e.seconds
                )),
                Ok(()) => print(format!("Q{q:<2} PASS  {:>6} rows  {:8.2} s", e.rows.len(), e.seconds)),
                Err(why) => {
                    failed += 1;
                    print(format!(
                        "Q{q:<2} FAIL  {:>6} rows  {:8.2} s  {why}",
                        e.rows.len(),
                        e.seconds
                    ));
                }
            }
        }
    }
    Ok(failed)
}

/// Refuses `--answers READ --write-answers WRITE` when they reach the same files: the
/// answers would be compared with themselves and always pass.
pub fn refuse_self_compare(read: &Path, write: &Path) -> Result<(), TpchError> {
    match same_answer_file(read, write) {
        Some(shared) => Err(TpchError::SameAnswers {
            read: read.to_path_buf(),
            write: write.to_path_buf(),
            shared,
        }),
        None => Ok(()),
    }
}

/// Where `--answers READ` and `--write-answers WRITE` reach the same files: the same
/// directory (also through symbolic links or another mount of it), or any `q<N>.out` of
/// one that is a link to the other's. `None` when every file written is a separate file.
fn same_answer_file(read: &Path, write: &Path) -> Option<PathBuf> {
    let same = |a: &Path, b: &Path| -> bool {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(x), Ok(y)) if x == y => return true,
            _ => {}
        }
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    };
    if same(read, write) {
        return std::fs::canonicalize(write).ok();
    }
    (1..=22)
        .map(|q| (read.join(format!("q{q}.out")), write.join(format!("q{q}.out"))))
        .find(|(r, w)| same(r, w))
        .map(|(_, w)| w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_never_compared_with_themselves() {
        let tmp = tempfile::tempdir().unwrap();
        let golden = tmp.path().join("golden");
        std::fs::create_dir(&golden).unwrap();
        std::fs::write(golden.join("q1.out"), "cnt\n1\n").unwrap();
        // The same directory, spelled differently or through a link.
        assert!(same_answer_file(&golden, &golden).is_some());
        assert!(same_answer_file(&golden, &tmp.path().join("golden/../golden/.")).is_some());
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&golden, &link).unwrap();
        assert!(same_answer_file(&golden, &link).is_some());
        // Another directory whose q1.out is the golden one, by symbolic or hard link.
        let other = tmp.path().join("other");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(same_answer_file(&golden, &other), None);
        std::os::unix::fs::symlink(golden.join("q1.out"), other.join("q1.out")).unwrap();
        assert_eq!(same_answer_file(&golden, &other), Some(other.join("q1.out")));
        let hard = tmp.path().join("hard");
        std::fs::create_dir(&hard).unwrap();
        std::fs::hard_link(golden.join("q1.out"), hard.join("q1.out")).unwrap();
        assert_eq!(same_answer_file(&golden, &hard), Some(hard.join("q1.out")));
        // A directory yet to be written is never the same.
        assert_eq!(same_answer_file(&golden, &tmp.path().join("new")), None);
        // The refusal is typed and names both flags and the way out.
        let err = refuse_self_compare(&golden, &link).unwrap_err();
        assert!(matches!(err, TpchError::SameAnswers { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("--answers") && text.contains("--write-answers /tmp/"),
            "{text}"
        );
        assert!(refuse_self_compare(&golden, &tmp.path().join("new")).is_ok());
    }
}
