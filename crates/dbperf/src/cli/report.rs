//! `dbperf report RUN|EXPERIMENT|RUNS... [--html FILE] [--format text|json|csv|markdown]`:
//! resolves what was named (a run directory, a run id, a lab experiment, or several runs; TPC-H
//! runs are recognised by their `tpch.json`), prints its tables (each workload compared by its
//! own figures, [`Metric::own`]), and writes the self-contained HTML report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};

use dbperf_lab::run::load_state;
use dbperf_report::analysis::analyze::{analyze, AnalyzeOptions};
use dbperf_report::analysis::explain::explain;
use dbperf_report::compare::{compare_runs, CompareOptions, Format, Metric, RunInfo, DEFAULT_THRESHOLD_PCT};
use dbperf_report::final_text;
use dbperf_report::html::experiment::experiment_page;
use dbperf_report::html::run::{run_page, RunData};
use dbperf_report::html::tpch::tpch_page;
use dbperf_report::setup::{render_comparison, Setup};
use dbperf_results::interval::IntervalRecord;
use dbperf_results::tpch::{PowerReport, TpchReport};
use dbperf_results::TPCH_FILE;
use dbperf_results::{RunDir, RunRecords};

/// `dbperf report` arguments.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory, a run id under --results-dir, an experiment name (as given to `lab
    /// run`), or several runs to report together.
    #[arg(required = true, value_name = "RUN|EXPERIMENT")]
    pub targets: Vec<String>,
    /// Also write a self-contained HTML report (charts as inline SVG) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Format of what is printed: a run's summary and analysis, or an experiment's tables.
    /// For one run, `csv` prints its intervals and `json` its summary with the analysis.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,
    /// The window of a run's explanation (average and CV of the interval figure): the last
    /// this long of the measured phase (`900`, `15m`); default: its second half.
    #[arg(long, value_name = "DURATION", value_parser = dbperf_core::bounds::secs_flag)]
    pub last: Option<f64>,
    /// Directory holding the run directories and `lab/`.
    #[arg(long, env = "DBPERF_RESULTS", default_value = "dbperf-results")]
    pub results_dir: PathBuf,
}

/// What `dbperf report` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Tables for the terminal.
    Text,
    /// JSON.
    Json,
    /// CSV.
    Csv,
    /// Markdown tables.
    Markdown,
}

/// What the targets named.
enum Subject {
    Run(PathBuf),
    Runs { name: String, dirs: Vec<PathBuf> },
}

fn is_run_dir(p: &Path) -> bool {
    p.join("manifest.json").is_file()
}

fn resolve(args: &ReportArgs) -> Result<Subject> {
    let run_dir = |t: &str| -> Option<PathBuf> {
        let given = PathBuf::from(t);
        if is_run_dir(&given) {
            return Some(given);
        }
        let under = args.results_dir.join(t);
        is_run_dir(&under).then_some(under)
    };
    if let [one] = args.targets.as_slice() {
        if let Some(dir) = run_dir(one) {
            return Ok(Subject::Run(dir));
        }
        if args.results_dir.join("lab").join(one).join("state.json").is_file() {
            let state = load_state(&args.results_dir, one)?;
            if state.done.is_empty() {
                anyhow::bail!("experiment {one:?} has no finished run yet: run `dbperf lab run` first");
            }
            let dirs = state.done.values().map(|d| d.run_dir.clone()).collect();
            return Ok(Subject::Runs {
                name: one.clone(),
                dirs,
            });
        }
        anyhow::bail!(
            "{one:?} is neither a run directory, nor a run id or an experiment under {}: \
             give a path, a run id (`ls {}`), or an experiment name (`ls {}/lab`), or set --results-dir",
            args.results_dir.display(),
            args.results_dir.display(),
            args.results_dir.display()
        );
    }
    let mut dirs = Vec::new();
    for t in &args.targets {
        dirs.push(run_dir(t).with_context(|| {
            format!(
                "run {t:?} not found: give run directories or run ids under {}",
                args.results_dir.display()
            )
        })?);
    }
    Ok(Subject::Runs {
        name: format!("{} runs", dirs.len()),
        dirs,
    })
}

/// Runs `dbperf report`.
pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let (name, dirs) = match resolve(&args)? {
        Subject::Run(dir) => (String::new(), vec![dir]),
        Subject::Runs { name, dirs } => (name, dirs),
    };
    if let Some(power) = power_runs(&dirs)? {
        // TPC-H power runs: the HTML with the bars and plans, the raw reports as JSON/CSV, and
        // for the terminal the comparison by the workload's own figures (queries, geomean).
        if let Some(path) = &args.html {
            write_html(path, &tpch_page(&power)?)?;
        }
        return match args.format {
            ReportFormat::Json | ReportFormat::Csv => report_tpch(&power, args.format),
            ReportFormat::Text | ReportFormat::Markdown => {
                // The comparison's cells hold finished queries only: where a query timed out
                // or failed, the DBT-3 table shows it (>T, failed) first.
                if power
                    .iter()
                    .any(|(_, p)| p.queries.iter().any(|q| q.timeouts > 0 || q.errors > 0))
                {
                    let columns: Vec<dbperf_report::tpch::Column<'_>> = power
                        .iter()
                        .map(|(id, report)| dbperf_report::tpch::Column {
                            label: format!("{} {id}", report.server_version),
                            report,
                        })
                        .collect();
                    println!("Per query, with the queries that timed out (>T) or failed:");
                    print!("{}", dbperf_report::tpch::table(&columns, DEFAULT_THRESHOLD_PCT));
                    println!();
                }
                report_runs(&dirs, &args)
            }
        };
    }
    match dirs.as_slice() {
        [dir] if name.is_empty() && !dir.join(TPCH_FILE).is_file() => report_run(dir, &args),
        _ => {
            if let Some(path) = &args.html {
                write_html(path, &experiment_page(&name, &dirs)?)?;
            }
            report_runs(&dirs, &args)
        }
    }
}

/// Each run's power report when every run is a TPC-H power test; `None` otherwise.
fn power_runs(dirs: &[PathBuf]) -> Result<Option<Vec<(String, PowerReport)>>> {
    let mut runs = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let d = RunDir::open(dir).with_context(|| format!("reading {}", dir.display()))?;
        match TpchReport::read(&d).with_context(|| format!("reading {}", dir.display()))? {
            Some(TpchReport::Power(p)) => runs.push((d.run_id().to_string(), p)),
            _ => return Ok(None),
        }
    }
    Ok((!runs.is_empty()).then_some(runs))
}

/// TPC-H power runs as data: the reports as JSON, else one CSV row per run and query.
fn report_tpch(runs: &[(String, PowerReport)], format: ReportFormat) -> Result<ExitCode> {
    match format {
        ReportFormat::Json => {
            let all: Vec<&PowerReport> = runs.iter().map(|r| &r.1).collect();
            println!("{}", serde_json::to_string_pretty(&all)?);
        }
        _ => {
            let mut w = csv::Writer::from_writer(std::io::stdout().lock());
            w.write_record([
                "run", "server", "query", "median_s", "min_s", "max_s", "timeouts", "errors",
            ])?;
            for (id, r) in runs {
                for q in &r.queries {
                    let f = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
                    w.write_record([
                        id.clone(),
                        r.server_version.clone(),
                        q.query.to_string(),
                        f(q.median),
                        f(q.min),
                        f(q.max),
                        q.timeouts.to_string(),
                        q.errors.to_string(),
                    ])?;
                }
            }
            w.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn write_html(path: &Path, html: &str) -> Result<()> {
    std::fs::write(path, html).with_context(|| format!("writing {}", path.display()))?;
    let charts = html.matches("<div class=\"chart\"").count();
    eprintln!("Wrote {} ({charts} charts, {} KiB)", path.display(), html.len() / 1024);
    Ok(())
}

fn report_run(dir: &Path, args: &ReportArgs) -> Result<ExitCode> {
    // The file first: what is printed may go to a pager or `head` that closes early.
    if let Some(path) = &args.html {
        let data = RunData::read(dir).with_context(|| format!("reading {}", dir.display()))?;
        write_html(path, &run_page(&data)?)?;
        for torn in &data.torn {
            eprintln!("warning: {torn}");
        }
    }
    let records = RunRecords::read(dir).with_context(|| format!("reading {}", dir.display()))?;
    let analysis = analyze(dir, &AnalyzeOptions::default()).ok();
    let explanation = explain(dir, &super::analyze::explain_options(args.last)?).ok();
    match args.format {
        ReportFormat::Text | ReportFormat::Markdown => {
            let md = args.format == ReportFormat::Markdown;
            if md {
                println!("```");
            }
            println!(
                "{}",
                Setup::of_run(records.dir.run_id(), &records.manifest).render_text()
            );
            match &records.summary {
                Some(s) => print!("{}", final_text(s, None)),
                None => println!("No summary.json: the run did not finish."),
            }
            if let Some(a) = &analysis {
                println!();
                print!("{}", a.render_text());
            }
            if let Some(e) = &explanation {
                println!();
                print!("{}", e.render_text());
            }
            if md {
                println!("```");
            }
        }
        ReportFormat::Json => {
            let v = serde_json::json!({
                "run_dir": dir,
                "setup": Setup::of_run(records.dir.run_id(), &records.manifest),
                "summary": records.summary,
                "analysis": analysis,
                "explanation": explanation,
            });
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        ReportFormat::Csv => {
            let read = records.dir.read_intervals::<IntervalRecord>()?;
            if let Some(torn) = &read.torn {
                eprintln!("warning: {torn}");
            }
            let intervals = read.records;
            let mut w = csv::Writer::from_writer(std::io::stdout().lock());
            w.write_record([
                "index",
                "start_s",
                "end_s",
                "warmup",
                "threads",
                "tps",
                "qps",
                "p50_ms",
                "p95_ms",
                "p99_ms",
                "max_ms",
                "errors_per_sec",
            ])?;
            for r in &intervals {
                w.write_record([
                    r.index.to_string(),
                    r.start_s.to_string(),
                    r.end_s.to_string(),
                    r.warmup.to_string(),
                    r.threads.to_string(),
                    r.tps.to_string(),
                    r.qps.to_string(),
                    r.latency_ms.p50.to_string(),
                    r.latency_ms.p95.to_string(),
                    r.latency_ms.p99.to_string(),
                    r.latency_ms.max.to_string(),
                    r.errors_per_sec.to_string(),
                ])?;
            }
            w.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Several runs (or an experiment): per workload, one comparison table per figure the
/// workload is judged by ([`Metric::own`]: NOTPM for TPC-C, requests/s and p99 for LinkBench,
/// the per-query table and geomean for TPC-H power, Throughput@Size for TPC-H throughput, TPS
/// and p99 otherwise).
fn report_runs(dirs: &[PathBuf], args: &ReportArgs) -> Result<ExitCode> {
    let mut by_workload: std::collections::BTreeMap<String, Vec<RunInfo>> = Default::default();
    let mut manifests = std::collections::BTreeMap::new();
    for dir in dirs {
        let records = RunRecords::read(dir).with_context(|| format!("reading {}", dir.display()))?;
        let info = RunInfo::from_records(&records)?;
        manifests.insert(info.run_id.clone(), records.manifest);
        by_workload.entry(info.workload.clone()).or_default().push(info);
    }
    let format = match args.format {
        ReportFormat::Text => Format::Text,
        ReportFormat::Json => Format::Json,
        ReportFormat::Csv => Format::Csv,
        ReportFormat::Markdown => Format::Markdown,
    };
    for (workload, runs) in &by_workload {
        if by_workload.len() > 1 && format == Format::Text {
            println!("## {workload}\n");
        }
        for (i, metric) in Metric::own(workload, runs).into_iter().enumerate() {
            let opts = CompareOptions {
                by: None,
                metric,
                threshold_pct: DEFAULT_THRESHOLD_PCT,
                baseline: None,
            };
            let mut c = compare_runs(runs, &opts)?;
            // The warnings are the runs', whatever the metric: printed once, with the first table.
            if i > 0 && format != Format::Json {
                c.warnings.clear();
            }
            print!(
                "{}",
                render_comparison(&c, &Setup::of_comparison(&c, &manifests), format, i == 0)
            );
            if format == Format::Text {
                println!();
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
