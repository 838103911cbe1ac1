//! The power test (spec §5.3.3): RF1, the 22 queries in stream 0's order on one session,
//! RF2; repeated `repeat` times, optionally cold (server restarted and the OS page cache
//! dropped before each query or each run). What it measured goes into `tpch.json`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::answers;
use super::metrics::power_at_size;
use super::qgen::{stream_order, validation_params, Qgen, QueryParams};
use super::queries::{render, QueryTexts};
use super::refresh::{next_set, RefreshSet};
use super::runner::QueryRunner;
use super::TpchError;
use dbperf_core::stats::Spread;
use dbperf_driver::Target;
pub use dbperf_results::tpch::{Cold, OwnText, PowerReport, PowerRun, QuerySummary, QueryTiming, Status};

/// Restarts the server and drops the OS page cache; returns what it could do (e.g. "page
/// cache not dropped: permission denied"), or an error message.
pub type ColdStart = Box<dyn Fn() -> Result<String, String> + Send + Sync>;

/// What to run.
pub struct PowerConfig {
    /// Where.
    pub target: Target,
    /// Scale factor of the loaded data.
    pub sf: f64,
    /// qgen seed (stream 0 uses it as is).
    pub seed: i64,
    /// Use the validation parameters instead of generated ones.
    pub validation: bool,
    /// Cancel a query after this long.
    pub timeout: Option<Duration>,
    /// Runs of the whole test.
    pub repeat: u32,
    /// The queries to run, in stream 0's order (1..=22; all 22 for a full power test: Power@Size
    /// needs every query).
    pub queries: Vec<u8>,
    /// Run RF1 and RF2 around the queries.
    pub refresh: bool,
    /// Capture each query's plan (once, before the first run).
    pub explain: bool,
    /// Texts of its own for some queries (`--queries-dir`); their answers are compared with
    /// the standard texts' once after the measured runs.
    pub texts: QueryTexts,
    /// When to make the caches cold.
    pub cold: Cold,
    /// How to make the caches cold (required unless `cold` is `Off`).
    pub cold_start: Option<ColdStart>,
    /// Set (by Ctrl-C) to stop after the query in progress: RF2 still runs when RF1 did, so
    /// the data is as before, and the report keeps the finished queries.
    pub stop: Arc<AtomicBool>,
    /// When to start, on the wall clock (`--start-at`; a time already past: at once).
    pub start_at: Option<std::time::SystemTime>,
}

pub use dbperf_results::tpch::TPCH_SCHEMA;
/// The file name in the run directory.
pub use dbperf_results::TPCH_FILE;

/// The parameters of every query (index `q - 1`) for stream `stream`.
pub fn stream_params(sf: f64, seed: i64, stream: u32, validation: bool) -> Vec<QueryParams> {
    if validation {
        (1..=22).map(|q| validation_params(q, sf)).collect()
    } else {
        let mut g = Qgen::new(seed + i64::from(stream), sf);
        (1..=22).map(|q| g.params(q)).collect()
    }
}

/// Runs the power test; `progress` gets one line per step.
pub async fn run(cfg: &PowerConfig, mut progress: impl FnMut(&str)) -> Result<PowerReport, TpchError> {
    if cfg.cold != Cold::Off && cfg.cold_start.is_none() {
        return Err(TpchError::Invalid(
            "--cold needs a sandbox dbperf can restart: use --target sandbox:NAME".into(),
        ));
    }
    let params = stream_params(cfg.sf, cfg.seed, 0, cfg.validation);
    let order = stream_order(0);
    let mut runner = QueryRunner::connect(&cfg.target).await?;
    if let Some(at) = cfg.start_at {
        if let Ok(ahead) = at.duration_since(std::time::SystemTime::now()) {
            progress(&format!("waiting {:.1} s for --start-at", ahead.as_secs_f64()));
        }
        // A start already past starts at once, as without --start-at.
        let _ = super::wait_until(at, &cfg.stop).await;
    }
    let order: Vec<u8> = order.iter().copied().filter(|q| cfg.queries.contains(q)).collect();
    if order.is_empty() {
        return Err(TpchError::Invalid(
            "no query selected: give query numbers from 1 to 22".into(),
        ));
    }
    let mut summaries: Vec<QuerySummary> = params
        .iter()
        .filter(|p| order.contains(&p.query))
        .map(|p| QuerySummary {
            query: p.query,
            params: p.values.clone(),
            median: None,
            min: None,
            max: None,
            timeouts: 0,
            errors: 0,
            plan: None,
            text: cfg.texts.file(p.query).map(|f| OwnText {
                file: f.display().to_string(),
                same_answer: None,
                check: "not compared: no run of it finished".into(),
            }),
        })
        .collect();
    if cfg.explain {
        for s in &mut summaries {
            let q = cfg
                .texts
                .render(cfg.target.family, &params[usize::from(s.query) - 1], 0);
            s.plan = Some(runner.explain(&q).await?);
        }
    }
    let mut runs = Vec::new();
    let stopped = || cfg.stop.load(Ordering::Relaxed);
    let mut cut = false;
    // The last answer of each query run with its own text, for the check after the runs.
    let mut own_answers: std::collections::BTreeMap<u8, Vec<Vec<String>>> = Default::default();
    for rep in 1..=cfg.repeat.max(1) {
        if stopped() {
            cut = true;
            break;
        }
        let mut run = PowerRun {
            rep,
            refresh_set: None,
            rf1_seconds: None,
            rf2_seconds: None,
            queries: Vec::new(),
            power_at_size: None,
            cold_notes: Vec::new(),
        };
        let set = if cfg.refresh {
            let n = next_set(runner.session(), cfg.sf).await?;
            run.refresh_set = Some(n);
            Some(RefreshSet::generate(cfg.sf, n)?)
        } else {
            None
        };
        if cfg.cold == Cold::Run {
            cold(cfg, &mut runner, &mut run.cold_notes).await?;
        }
        if let Some(set) = &set {
            let t0 = Instant::now();
            set.rf1(runner.session(), cfg.target.family).await?;
            run.rf1_seconds = Some(t0.elapsed().as_secs_f64());
            progress(&format!(
                "run {rep}: RF1 (set {}) {:.2} s",
                set.n,
                t0.elapsed().as_secs_f64()
            ));
        }
        for (i, &q) in order.iter().enumerate() {
            if stopped() {
                cut = true;
                break;
            }
            if cfg.cold == Cold::Query {
                cold(cfg, &mut runner, &mut run.cold_notes).await?;
            }
            let rendered = cfg.texts.render(cfg.target.family, &params[usize::from(q) - 1], 0);
            let mut e = runner.run(&rendered, cfg.timeout).await?;
            let rows = e.rows.len();
            if e.status == Status::Ok && cfg.texts.file(q).is_some() {
                own_answers.insert(q, std::mem::take(&mut e.rows));
            }
            progress(&format!(
                "run {rep}: Q{q} {} {}",
                match e.status {
                    Status::Ok => format!("{:.2} s", e.seconds),
                    Status::Timeout => format!(">{:.1} s (timed out, cancelled on the server)", e.seconds),
                    Status::Error => "failed".into(),
                },
                e.error.as_deref().unwrap_or("")
            ));
            run.queries.push(QueryTiming {
                query: q,
                position: i + 1,
                seconds: e.seconds,
                status: e.status,
                error: e.error,
                rows,
            });
        }
        if let Some(set) = &set {
            let t0 = Instant::now();
            set.rf2(runner.session()).await?;
            run.rf2_seconds = Some(t0.elapsed().as_secs_f64());
            progress(&format!("run {rep}: RF2 {:.2} s", t0.elapsed().as_secs_f64()));
        }
        run.power_at_size = run_power(cfg.sf, &run);
        if !run.queries.is_empty() || run.rf1_seconds.is_some() {
            runs.push(run);
        }
    }
    for s in &mut summaries {
        let mut times = Vec::new();
        for r in &runs {
            for t in r.queries.iter().filter(|t| t.query == s.query) {
                match t.status {
                    Status::Ok => times.push(t.seconds),
                    Status::Timeout => s.timeouts += 1,
                    Status::Error => s.errors += 1,
                }
            }
        }
        (s.median, s.min, s.max) = spread(&times);
    }
    if !cut {
        check_own_texts(cfg, &mut runner, &params, &own_answers, &mut summaries, &mut progress).await?;
    }
    let powers: Vec<f64> = runs.iter().filter_map(|r| r.power_at_size).collect();
    Ok(PowerReport {
        schema: TPCH_SCHEMA.into(),
        test: "power".into(),
        scale_factor: cfg.sf,
        seed: cfg.seed,
        validation: cfg.validation,
        server_version: runner.server_version(),
        timeout_seconds: cfg.timeout.map(|t| t.as_secs_f64()),
        cold: cfg.cold,
        stream_order: order.to_vec(),
        runs,
        queries: summaries,
        power_at_size: spread(&powers).0,
        interrupted: cut,
    })
}

/// Power@Size of a run in which every query finished and both refreshes ran.
fn run_power(sf: f64, run: &PowerRun) -> Option<f64> {
    if run.queries.len() != 22 || run.queries.iter().any(|q| q.status != Status::Ok) {
        return None;
    }
    let mut by_query = run.queries.clone();
    by_query.sort_by_key(|q| q.query);
    let times: Vec<f64> = by_query.iter().map(|q| q.seconds).collect();
    power_at_size(sf, &times, &[run.rf1_seconds?, run.rf2_seconds?])
}

/// (median, min, max) of `v` ([`dbperf_core::stats::Spread`]).
pub fn spread(v: &[f64]) -> (Option<f64>, Option<f64>, Option<f64>) {
    match Spread::of(v) {
        Some(s) => (Some(s.median), Some(s.min), Some(s.max)),
        None => (None, None, None),
    }
}

/// Runs the standard text of each query that ran with its own, once, and compares the
/// answers by the spec's rules ([`answers::compare`]): a hinted text must not change what a
/// query returns, or its time is not comparable.
async fn check_own_texts(
    cfg: &PowerConfig,
    runner: &mut QueryRunner,
    params: &[QueryParams],
    own_answers: &std::collections::BTreeMap<u8, Vec<Vec<String>>>,
    summaries: &mut [QuerySummary],
    progress: &mut impl FnMut(&str),
) -> Result<(), TpchError> {
    for s in summaries.iter_mut() {
        let (Some(text), Some(own)) = (s.text.as_mut(), own_answers.get(&s.query)) else {
            continue;
        };
        let standard = render(cfg.target.family, &params[usize::from(s.query) - 1], 0);
        let e = runner.run(&standard, cfg.timeout).await?;
        (text.same_answer, text.check) = match e.status {
            Status::Ok => match answers::compare(s.query, &e.rows, own) {
                Ok(()) => (Some(true), format!("{} rows, as the standard text's", own.len())),
                Err(m) => (Some(false), format!("another answer than the standard text's: {m}")),
            },
            Status::Timeout => (
                None,
                format!("not compared: the standard text timed out after {:.0} s", e.seconds),
            ),
            Status::Error => (
                None,
                format!(
                    "not compared: the standard text failed: {}",
                    e.error.as_deref().unwrap_or("")
                ),
            ),
        };
        progress(&format!("Q{} from {}: {}", s.query, text.file, text.check));
    }
    Ok(())
}

async fn cold(cfg: &PowerConfig, runner: &mut QueryRunner, notes: &mut Vec<String>) -> Result<(), TpchError> {
    let Some(start) = &cfg.cold_start else { return Ok(()) };
    // Blocking is fine: this session is the only thing running on the runtime.
    let note = start().map_err(TpchError::Invalid)?;
    if !note.is_empty() && !notes.contains(&note) {
        notes.push(note);
    }
    runner.reconnect().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_gives_median_min_max() {
        assert_eq!(spread(&[3.0, 1.0, 2.0]), (Some(2.0), Some(1.0), Some(3.0)));
        assert_eq!(spread(&[4.0, 1.0]), (Some(2.5), Some(1.0), Some(4.0)));
        assert_eq!(spread(&[]), (None, None, None));
        let p = stream_params(1.0, 0, 0, true);
        assert_eq!(p[13].values, vec!["1995-09-01".to_string()]);
    }
}
