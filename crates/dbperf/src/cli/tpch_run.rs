//! `dbperf tpch validate`, `power` and `compare`: running queries against loaded data,
//! checking answers, writing the power test's run directory, and the comparison table.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};

use super::tpch::{runtime, ConnArgs};
use crate::driver::{Session, Target};
use crate::results::manifest::{Manifest, ServerFacts, WorkloadInfo};
use crate::results::RunDir;
use crate::workloads::tpch::answers::{self, compare as compare_answers, kinds};
use crate::workloads::tpch::compare::{table, Column};
use crate::workloads::tpch::power::{self, stream_params, Cold, PowerConfig, PowerReport, TPCH_FILE};
use crate::workloads::tpch::qgen::check_seed;
use crate::workloads::tpch::queries::render;
use crate::workloads::tpch::refresh::next_set;
use crate::workloads::tpch::runner::{QueryRunner, Status};
use crate::workloads::tpch::{check_scale_factor, load};

/// `dbperf tpch validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Scale factor of the loaded data (default: read from the supplier table).
    #[arg(long, visible_alias = "sf")]
    pub scale_factor: Option<f64>,
    /// Directory of answer files q1.out..q22.out (default at SF 1: the official answers).
    #[arg(long, value_name = "DIR")]
    pub answers: Option<PathBuf>,
    /// Write the answers obtained into DIR as q<N>.out (golden answers for other scale factors).
    #[arg(long, value_name = "DIR")]
    pub write_answers: Option<PathBuf>,
    /// Cancel a query after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `--cold`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColdArg {
    /// Restart the server and drop the OS page cache before each query.
    Query,
    /// ... before each run (repetition).
    Run,
}

/// `dbperf tpch power`.
#[derive(Debug, Args)]
pub struct PowerArgs {
    /// Scale factor of the loaded data (default: read from the supplier table).
    #[arg(long, visible_alias = "sf")]
    pub scale_factor: Option<f64>,
    /// qgen seed (default, as DBT-3: the current time as MMDDhhmmss).
    #[arg(long)]
    pub seed: Option<i64>,
    /// Use the spec's validation parameters instead of generated ones.
    #[arg(long)]
    pub validation: bool,
    /// Cancel a query on the server after this many seconds and record it as timed out.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Run the whole test N times; per-query median, min and max.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Restart the sandbox and drop the OS page cache before each query or each run (needs --target sandbox:NAME).
    #[arg(long, value_enum)]
    pub cold: Option<ColdArg>,
    /// Skip RF1/RF2 (Power@Size is then not computed).
    #[arg(long)]
    pub no_refresh: bool,
    /// Do not store the plans (EXPLAIN FORMAT=JSON).
    #[arg(long)]
    pub no_explain: bool,
    /// Directory for run directories.
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `dbperf tpch compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Runs (directories, or run ids under --results-dir); the first is the baseline.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<String>,
    /// Differences up to this many percent of the baseline are draws (as in `dbperf compare`).
    #[arg(long, value_name = "PERCENT", default_value_t = crate::report::stats::DEFAULT_THRESHOLD_PCT)]
    pub threshold: f64,
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

pub(crate) fn timeout(secs: Option<f64>) -> Result<Option<Duration>> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => bail!("--timeout {s}: give a positive number of seconds, e.g. --timeout 7200"),
    }
}

/// The scale factor of the loaded data (supplier rows / 10,000), checked against `given`.
pub(crate) async fn data_scale_factor(target: &Target, given: Option<f64>) -> Result<f64> {
    let mut s = load::connect(target).await?;
    let rows = s.query_rows("SELECT COUNT(*) FROM supplier").await.map_err(|e| {
        anyhow::anyhow!(
            "{e}: no TPC-H data in {}? Run `dbperf tpch prepare --scale-factor SF` with the same --target first",
            target.database
        )
    })?;
    let n: f64 = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let found = n / 10_000.0;
    match given {
        Some(sf) => {
            check_scale_factor(sf)?;
            if (sf - found).abs() > 1e-9 {
                bail!("--scale-factor {sf} does not match the loaded data (supplier has {n} rows: SF {found}); give --scale-factor {found} or reload");
            }
            Ok(sf)
        }
        None if n > 0.0 => Ok(found),
        None => bail!("the supplier table is empty: run `dbperf tpch prepare --scale-factor SF` first"),
    }
}

/// Runs `dbperf tpch validate`.
pub fn validate(a: ValidateArgs) -> Result<ExitCode> {
    if let (Some(read), Some(write)) = (&a.answers, &a.write_answers) {
        if let Some(shared) = same_answer_file(read, write) {
            bail!(
                "--answers {} and --write-answers {} are the same answer files ({}): the answers would be compared with themselves and always PASS. Write into another directory (e.g. --write-answers /tmp/tpch-answers-new) and compare that with --answers",
                read.display(),
                write.display(),
                shared.display()
            );
        }
    }
    let target = a.conn.target()?;
    let dialect = a.conn.dialect()?;
    let limit = timeout(a.timeout)?;
    let rt = runtime()?;
    let sf = rt.block_on(data_scale_factor(&target, a.scale_factor))?;
    if a.answers.is_none() && sf != 1.0 && a.write_answers.is_none() {
        bail!("the official answers are for SF 1 and the data is SF {sf}: give --answers DIR with answers for SF {sf} (e.g. golden answers written with --write-answers)");
    }
    if let Some(dir) = &a.write_answers {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let params = stream_params(sf, 0, 0, true);
    let mut failed = 0;
    rt.block_on(async {
        let mut runner = QueryRunner::connect(&target, dialect).await?;
        let refreshed = next_set(runner.session(), sf).await? - 1;
        if refreshed > 0 {
            eprintln!(
                "warning: {refreshed} RF1/RF2 pair(s) have run on this data since it was loaded; answers that show order keys (Q3, Q18) can differ. Validate freshly loaded data (`dbperf tpch cleanup` then `prepare`)"
            );
        }
        for p in &params {
            let q = p.query;
            let e = runner.run(&render(dialect, p, 0), limit).await?;
            if let Some(dir) = &a.write_answers {
                let header: Vec<String> = kinds(q).iter().map(|k| format!("{k:?}").to_lowercase()).collect();
                let path = dir.join(format!("q{q}.out"));
                std::fs::write(&path, answers::format(&header, &e.rows))
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            let verdict = match e.status {
                Status::Timeout => Err(format!("timed out after {:.1} s", e.seconds)),
                Status::Error => Err(e.error.clone().unwrap_or_default()),
                Status::Ok => {
                    let expected = match (&a.answers, &a.write_answers) {
                        (Some(dir), _) => Some(answers::read_dir(dir, q)?),
                        (None, _) if sf == 1.0 => Some(answers::official_sf1(q)),
                        (None, _) => None,
                    };
                    match expected {
                        Some(exp) => compare_answers(q, &exp, &e.rows).map_err(|m| m.to_string()),
                        None => Ok(()),
                    }
                }
            };
            let checked = a.answers.is_some() || sf == 1.0;
            match verdict {
                Ok(()) if !checked => println!(
                    "Q{q:<2} DONE  {:>6} rows  {:8.2} s  (no answers to compare with)",
                    e.rows.len(),
                    e.seconds
                ),
                Ok(()) => println!("Q{q:<2} PASS  {:>6} rows  {:8.2} s", e.rows.len(), e.seconds),
                Err(why) => {
                    failed += 1;
                    println!("Q{q:<2} FAIL  {:>6} rows  {:8.2} s  {why}", e.rows.len(), e.seconds);
                }
            }
        }
        anyhow::Ok(())
    })?;
    if failed > 0 {
        eprintln!("{failed} of 22 queries did not match the answers");
        return Ok(ExitCode::FAILURE);
    }
    if a.answers.is_some() || sf == 1.0 {
        println!("all 22 queries match (SF {sf})");
    }
    Ok(ExitCode::SUCCESS)
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

/// DBT-3's default seed: the time as MMDDhhmmss.
pub(crate) fn time_seed() -> i64 {
    chrono::Utc::now().format("%m%d%H%M%S").to_string().parse().unwrap_or(1)
}

/// Runs `dbperf tpch power`; `argv` goes into the manifest.
pub fn power(a: PowerArgs, argv: &[String]) -> Result<ExitCode> {
    let target = a.conn.target()?;
    if a.repeat == 0 {
        bail!("--repeat 0: give at least 1 run");
    }
    let cold_start = match (a.cold, a.conn.sandbox()) {
        (None, _) => None,
        (Some(_), Some(name)) => Some(super::tpch_cold::cold_start(&name)?),
        (Some(_), None) => bail!(
            "--cold restarts the server, which dbperf can only do for its own sandboxes: use --target sandbox:NAME"
        ),
    };
    let rt = runtime()?;
    let sf = rt.block_on(data_scale_factor(&target, a.scale_factor))?;
    let seed = a.seed.unwrap_or_else(time_seed);
    check_seed(seed)?;
    let cfg = PowerConfig {
        target: target.clone(),
        dialect: a.conn.dialect()?,
        sf,
        seed,
        validation: a.validation,
        timeout: timeout(a.timeout)?,
        repeat: a.repeat,
        refresh: !a.no_refresh,
        explain: !a.no_explain,
        cold: match a.cold {
            None => Cold::Off,
            Some(ColdArg::Query) => Cold::Query,
            Some(ColdArg::Run) => Cold::Run,
        },
        cold_start,
    };
    let facts = rt.block_on(server_facts(&target))?;
    let dir = RunDir::create(&a.results_dir, "tpch-power")?;
    let mut options = serde_json::Map::new();
    options.insert("scale_factor".into(), sf.into());
    options.insert("validation".into(), a.validation.into());
    options.insert("timeout_seconds".into(), a.timeout.into());
    options.insert("repeat".into(), a.repeat.into());
    options.insert("cold".into(), format!("{:?}", cfg.cold).to_lowercase().into());
    options.insert("refresh".into(), cfg.refresh.into());
    let mut manifest = Manifest::new(
        argv,
        WorkloadInfo {
            name: "tpch-power".into(),
            options,
        },
        &target.redacted(),
    );
    manifest.seeds = serde_json::json!({ "qgen": seed });
    manifest.server = Some(facts);
    dir.write_json("manifest.json", &manifest)?;
    eprintln!(
        "TPC-H power test: SF {sf}, seed {seed}{}, run directory {}",
        if a.validation { " (validation parameters)" } else { "" },
        dir.path().display()
    );
    let report = rt.block_on(power::run(&cfg, |line| eprintln!("{line}")))?;
    dir.write_json(TPCH_FILE, &report)?;
    super::results::record_in_catalog(&a.results_dir, &dir, super::results::RunDirState::Complete);
    print!("{}", summary_text(&report));
    println!("run directory: {}", dir.path().display());
    Ok(ExitCode::SUCCESS)
}

fn summary_text(r: &PowerReport) -> String {
    let mut out = format!(
        "TPC-H power test  SF {}  seed {}{}  server {}  runs {}{}\n",
        r.scale_factor,
        r.seed,
        if r.validation { " (validation parameters)" } else { "" },
        r.server_version,
        r.runs.len(),
        match r.cold {
            Cold::Off => String::new(),
            c => format!("  cold per {c:?}").to_lowercase(),
        }
    );
    out.push_str(&table(
        &[Column {
            label: "median".into(),
            report: r,
        }],
        crate::report::stats::DEFAULT_THRESHOLD_PCT,
    ));
    for run in &r.runs {
        if let (Some(a), Some(b)) = (run.rf1_seconds, run.rf2_seconds) {
            out.push_str(&format!("run {}: RF1 {a:.2} s, RF2 {b:.2} s\n", run.rep));
        }
        for n in &run.cold_notes {
            out.push_str(&format!("run {}: {n}\n", run.rep));
        }
    }
    if r.power_at_size.is_none() {
        out.push_str("Power@Size not computed (a query timed out or failed, or refreshes were skipped)\n");
    }
    out
}

pub(crate) async fn server_facts(target: &Target) -> Result<ServerFacts> {
    let mut s = load::connect(target).await?;
    super::measure::server_facts(&mut s, target.scheme).await
}

/// Runs `dbperf tpch compare`.
pub fn compare(a: CompareArgs) -> Result<ExitCode> {
    if !(a.threshold >= 0.0 && a.threshold.is_finite()) {
        bail!(
            "--threshold {} is not a percentage: give a number >= 0, e.g. 5",
            a.threshold
        );
    }
    let mut reports = Vec::new();
    for run in &a.runs {
        let given = PathBuf::from(run);
        let path = if given.is_dir() { given } else { a.results_dir.join(run) };
        let dir = RunDir::open(&path)
            .with_context(|| format!("run {run:?}: give a run directory or a run id under --results-dir"))?;
        let report: PowerReport = dir
            .read_json(TPCH_FILE)
            .with_context(|| format!("{} is not a TPC-H power run", path.display()))?;
        reports.push((dir.run_id().to_string(), report));
    }
    let columns: Vec<Column<'_>> = reports
        .iter()
        .map(|(id, r)| Column {
            label: format!("{} {}", r.server_version, id),
            report: r,
        })
        .collect();
    print!("{}", table(&columns, a.threshold));
    Ok(ExitCode::SUCCESS)
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

        // The command refuses before it connects anywhere.
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            v: ValidateArgs,
        }
        let argv: Vec<std::ffi::OsString> = vec![
            "validate".into(),
            "--answers".into(),
            golden.clone().into(),
            "--write-answers".into(),
            link.into(),
            "--target".into(),
            "mysql://sb:sb@127.0.0.1:1/none".into(),
        ];
        let args = <Cli as clap::Parser>::try_parse_from(argv).unwrap().v;
        let err = validate(args).unwrap_err().to_string();
        assert!(
            err.contains("--answers") && err.contains("--write-answers") && err.contains("compared with themselves"),
            "{err}"
        );
    }
}
