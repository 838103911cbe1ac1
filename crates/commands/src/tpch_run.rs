//! `dbperf tpch validate`, `power` and `compare`: their arguments and plans. The answer
//! checks are in [`dbperf_workloads::tpch::validate`]; the power test is a measured run of
//! its own ([`MeasuredRun`] with [`Drive::Own`]); cold restarts come from [`dbperf_server::cold`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use dbperf_engine::RunConfig;

use super::tpch::{runtime, ConnArgs};
use dbperf_driver::any::AnySession;
use dbperf_driver::Session;
use dbperf_results::options::{TpchPowerOptions, WorkloadOptions};
use dbperf_results::RunDir;
use dbperf_run::args::{PlaceArgs, RunOutputArgs};
use dbperf_run::measured::Measured;
use dbperf_run::{measured_run, Description, Drive, MeasuredRun, Measurer, OwnOutcome, Shared};
use dbperf_workloads::tpch::compare::{table, Column};
use dbperf_workloads::tpch::load::{data_scale_factor, data_scale_factor_on};
use dbperf_workloads::tpch::power::{self, Cold, ColdStart, PowerConfig, PowerReport, TPCH_FILE};
use dbperf_workloads::tpch::qgen::{check_seed, seed_at, time_seed};
use dbperf_workloads::tpch::queries::QueryTexts;
use dbperf_workloads::tpch::validate as tpch_validate;
use dbperf_workloads::ReportFile;

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
    #[arg(long, value_name = "SECONDS", value_parser = dbperf_core::bounds::secs_flag)]
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
    #[arg(long, value_name = "SECONDS", value_parser = dbperf_core::bounds::secs_flag)]
    pub timeout: Option<f64>,
    /// Run the whole test N times; per-query median, min and max.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Run only these queries (1 to 22, comma-separated), in the power test's order; Power@Size
    /// needs all 22 [default: all].
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub queries: Vec<u8>,
    /// Restart the sandbox and drop the OS page cache before each query or each run (needs
    /// --target sandbox:NAME, or --cold-sandbox NAME on the --server-host).
    #[arg(long, value_enum)]
    pub cold: Option<ColdArg>,
    /// The sandbox on --server-host that the target URL reaches: --cold restarts it there
    /// over ssh (`dbperf server restart NAME --cold`).
    #[arg(long, value_name = "NAME", requires_all = ["cold", "server_host"])]
    pub cold_sandbox: Option<String>,
    /// Skip RF1/RF2 (Power@Size is then not computed).
    #[arg(long)]
    pub no_refresh: bool,
    /// Do not store the plans (EXPLAIN FORMAT=JSON).
    #[arg(long)]
    pub no_explain: bool,
    /// Run the queries that have a file in DIR (`N.sql` or `qN.sql`, in the standard texts'
    /// tags: `dbperf tpch qgen --template N`) with that text, e.g. one hinted with
    /// straight_join; after the measured runs each one's standard text runs once and their
    /// answers must match (exit 4 otherwise, the run kept).
    #[arg(long, value_name = "DIR")]
    pub queries_dir: Option<PathBuf>,
    /// Results directory, summary copy (of `tpch.json`), telemetry and settle.
    #[command(flatten)]
    pub out: RunOutputArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Where the client stands (--shard is refused: the power test is one stream).
    #[command(flatten)]
    pub place: PlaceArgs,
}

/// `dbperf tpch compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Runs (directories, or run ids under --results-dir); the first is the baseline.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<String>,
    /// Differences up to this many percent of the baseline are draws (as in `dbperf compare`).
    #[arg(long, value_name = "PERCENT", default_value_t = dbperf_core::stats::DEFAULT_THRESHOLD_PCT)]
    pub threshold: f64,
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

pub(crate) fn timeout(secs: Option<f64>) -> Result<Option<Duration>> {
    match secs {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Some(
            dbperf_core::bounds::secs(s).map_err(|e| anyhow::anyhow!("--timeout: {e}"))?,
        )),
        Some(s) => bail!("--timeout {s}: give a positive number of seconds, e.g. --timeout 7200"),
    }
}

/// Runs `dbperf tpch validate`.
pub fn validate(a: ValidateArgs) -> Result<ExitCode> {
    if let (Some(read), Some(write)) = (&a.answers, &a.write_answers) {
        tpch_validate::refuse_self_compare(read, write)?;
    }
    let target = a.conn.target()?;
    let limit = timeout(a.timeout)?;
    let rt = runtime()?;
    let sf = rt.block_on(data_scale_factor(&target, a.scale_factor))?;
    if a.answers.is_none() && sf != 1.0 && a.write_answers.is_none() {
        bail!("the official answers are for SF 1 and the data is SF {sf}: give --answers DIR with answers for SF {sf} (e.g. golden answers written with --write-answers)");
    }
    if let Some(dir) = &a.write_answers {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let cfg = tpch_validate::ValidateConfig {
        target,
        sf,
        timeout: limit,
        answers: a.answers,
        write_answers: a.write_answers,
    };
    let failed = rt.block_on(tpch_validate::validate(&cfg, |line| println!("{line}")))?;
    if failed > 0 {
        eprintln!("{failed} of 22 queries did not match the answers");
        return Ok(ExitCode::FAILURE);
    }
    if cfg.answers.is_some() || sf == 1.0 {
        println!("all 22 queries match (SF {sf})");
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `dbperf tpch power`; `argv` goes into the manifest.
pub fn power(a: PowerArgs, argv: &[String]) -> Result<ExitCode> {
    let target = a.conn.target()?;
    if let Some(s) = a.place.shard {
        bail!(
            "--shard {}/{}: the power test is one query stream on one connection, which cannot be spread over \
             clients; spread the throughput test instead (dbperf tpch throughput --shard I/N --start-at TIME)",
            s.index,
            s.count
        );
    }
    if a.cold.is_some() && a.place.client_netns.is_some() {
        bail!(
            "--cold restarts the server from the client, which --client-netns puts in a network namespace of its \
             own: the restarted server would listen inside it. Run cold tests without --client-netns"
        );
    }
    if a.repeat == 0 {
        bail!("--repeat 0: give at least 1 run");
    }
    let cold_start = match (a.cold, a.conn.sandbox(), &a.cold_sandbox) {
        (None, _, _) => None,
        (Some(_), Some(name), None) => Some(Box::new(dbperf_server::cold::cold_restart(&name)?) as ColdStart),
        (Some(_), None, Some(name)) => {
            let host = a.out.server_host()?.context("--cold-sandbox needs --server-host")?;
            Some(Box::new(dbperf_server::cold::remote_cold_restart(host, name)?) as ColdStart)
        }
        (Some(_), Some(_), Some(_)) => {
            bail!("--cold-sandbox names a sandbox on --server-host; the target sandbox:NAME is one here: give one of them")
        }
        (Some(_), None, None) => bail!(
            "--cold restarts the server, which dbperf can only do for its own sandboxes: use --target sandbox:NAME \
             (or, for a sandbox on another host, --server-host ssh://... --cold-sandbox NAME)"
        ),
    };
    let start_at = a.place.start_at()?;
    let seed = a.seed.unwrap_or_else(|| start_at.map_or_else(time_seed, seed_at));
    check_seed(seed)?;
    let texts = match &a.queries_dir {
        Some(dir) => QueryTexts::load(dir)?,
        None => QueryTexts::default(),
    };
    let mut plan = PowerRun {
        texts,
        queries: selected_queries(&a.queries)?,
        timeout: timeout(a.timeout)?,
        cold: match a.cold {
            None => Cold::Off,
            Some(ColdArg::Query) => Cold::Query,
            Some(ColdArg::Run) => Cold::Run,
        },
        cold_start,
        start_at,
        seed,
        database: target.database.clone(),
        sf: 0.0,
        args: a,
    };
    let (out, place) = (plan.args.out.clone(), plan.args.place.clone());
    measured_run(
        &mut plan,
        Shared::Own {
            out: &out,
            place: &place,
        },
        &target,
        argv,
    )
}

/// A validated `dbperf tpch power`.
struct PowerRun {
    /// `--queries-dir`'s texts.
    texts: QueryTexts,
    queries: Vec<u8>,
    timeout: Option<Duration>,
    cold: Cold,
    cold_start: Option<ColdStart>,
    start_at: Option<std::time::SystemTime>,
    seed: i64,
    /// The database holding the data.
    database: String,
    /// The loaded data's scale factor, read before the test.
    sf: f64,
    args: PowerArgs,
}

/// The power test: the data's scale factor read, stream 0 and the refresh functions on one
/// connection, `tpch.json` and the per-query report.
impl MeasuredRun for PowerRun {
    fn name(&self) -> String {
        "tpch-power".into()
    }

    async fn before(&mut self, admin: &mut AnySession) -> Result<()> {
        self.sf = data_scale_factor_on(admin, &self.database, self.args.scale_factor).await?;
        Ok(())
    }

    fn drive(&self) -> Drive {
        Drive::Own {
            users: 1,
            unit: "query streams",
        }
    }

    fn options(&self, _run: Option<&RunConfig>) -> WorkloadOptions {
        WorkloadOptions::TpchPower(TpchPowerOptions {
            scale_factor: self.sf,
            validation: self.args.validation,
            timeout_seconds: self.args.timeout,
            repeat: self.args.repeat,
            cold: format!("{:?}", self.cold).to_lowercase(),
            refresh: !self.args.no_refresh,
            queries_dir: self.args.queries_dir.as_ref().map(|d| d.display().to_string()),
        })
    }

    fn seeds(&self) -> serde_json::Value {
        serde_json::json!({ "qgen": self.seed })
    }

    fn describe(&self) -> Description {
        Description {
            what: format!(
                "TPC-H power test, SF {}, seed {}{}",
                self.sf,
                self.seed,
                if self.args.validation {
                    " (validation parameters)"
                } else {
                    ""
                }
            ),
            users: "stream",
            rate_of: "queries",
            rand_type: String::new(),
            detail: String::new(),
        }
    }

    fn measure<S: Session + 'static>(&mut self, m: Measurer<'_>) -> Result<Measured> {
        let a = &self.args;
        let mut cfg = PowerConfig {
            target: m.target().clone(),
            sf: self.sf,
            seed: self.seed,
            validation: a.validation,
            timeout: self.timeout,
            repeat: a.repeat,
            queries: self.queries.clone(),
            refresh: !a.no_refresh,
            explain: !a.no_explain,
            texts: self.texts.clone(),
            cold: self.cold,
            cold_start: self.cold_start.take(),
            stop: Arc::new(AtomicBool::new(false)),
            start_at: self.start_at,
        };
        m.own(
            "Stopping after the query in progress (and RF2, when RF1 ran); the finished queries are kept",
            move |_target, stop| {
                cfg.stop = stop;
                // The query runtime starts inside the client's namespace, so its threads are too.
                let report = runtime()?.block_on(power::run(&cfg, |line| eprintln!("{line}")))?;
                Ok(OwnOutcome {
                    text: dbperf_workloads::tpch::report::power_text(&report),
                    files: vec![ReportFile::json(TPCH_FILE, &report)],
                    interrupted: report.interrupted,
                    check_failed: report
                        .queries
                        .iter()
                        .any(|q| q.text.as_ref().is_some_and(|t| t.same_answer == Some(false))),
                })
            },
        )
    }
}

/// `--queries`: each 1 to 22, no repeats; none given means all 22.
fn selected_queries(given: &[u8]) -> Result<Vec<u8>> {
    if given.is_empty() {
        return Ok((1..=22).collect());
    }
    let mut out: Vec<u8> = Vec::with_capacity(given.len());
    for &q in given {
        if !(1..=22).contains(&q) {
            anyhow::bail!("--queries: {q} is not a TPC-H query: give numbers from 1 to 22, e.g. --queries 1,3,18");
        }
        if out.contains(&q) {
            anyhow::bail!("--queries: query {q} is given twice: give each query once");
        }
        out.push(q);
    }
    Ok(out)
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
    fn queries_are_1_to_22_once_each_and_default_to_all() {
        assert_eq!(selected_queries(&[]).unwrap(), (1..=22).collect::<Vec<u8>>());
        assert_eq!(selected_queries(&[18, 1]).unwrap(), vec![18, 1]);
        let err = selected_queries(&[0]).unwrap_err().to_string();
        assert!(err.contains("0 is not a TPC-H query"), "{err}");
        let err = selected_queries(&[23]).unwrap_err().to_string();
        assert!(err.contains("23 is not a TPC-H query"), "{err}");
        let err = selected_queries(&[5, 5]).unwrap_err().to_string();
        assert!(err.contains("query 5 is given twice"), "{err}");
    }

    #[test]
    fn answers_are_never_compared_with_themselves() {
        let tmp = tempfile::tempdir().unwrap();
        let golden = tmp.path().join("golden");
        std::fs::create_dir(&golden).unwrap();
        std::fs::write(golden.join("q1.out"), "cnt\n1\n").unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&golden, &link).unwrap();
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
