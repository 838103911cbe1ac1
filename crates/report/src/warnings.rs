//! Artifacts of the measurement, found and named: the [`Warning`] type (a stable snake_case
//! [`WarningKind`], a message that says what was found and what to do, the evidence figures by
//! name) and the rules that raise each kind, with their thresholds. `dbperf analyze` raises the
//! single-run kinds ([`too_few_intervals`], [`leftover_flushing`], [`client_bound`], [`server_lost`]); comparisons
//! (`dbperf compare`, `dbperf report` of several runs, `dbperf lab report`) add the kinds that
//! need several runs ([`scaling`], [`variable_warnings`]). Text output prints one `warning:`
//! line each; JSON carries `warnings: [{kind, message, evidence}]`; the HTML renders them in
//! `html/notes.rs`.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::analysis::pressure::CLIENT_SATURATED_PCT;
use dbperf_core::stats::median;
use dbperf_results::telemetry::{StartState, TelemetryRow};

/// An artifact of the measurement, for people (`message`) and machines (`kind`, `evidence`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warning {
    pub kind: WarningKind,
    /// What was found and what to do about it.
    pub message: String,
    /// The figures it rests on, by name.
    pub evidence: BTreeMap<String, Value>,
}

/// Stable ids of [`Warning`]s (serialized in snake_case: `too_few_intervals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// Fewer than [`MIN_INTERVALS_TO_JUDGE`] measured intervals: stability is not judged.
    TooFewIntervals,
    /// Throughput grew faster than the users between two runs of one workload.
    SuperlinearScaling,
    /// The client (dbperf) was the bottleneck, or spent far more CPU per transaction than at
    /// the neighbouring user counts.
    ClientBound,
    /// The run started with checkpoint age or dirty pages left over from an earlier load and
    /// measured their flushing.
    LeftoverFlushing,
    /// Performance Schema on for some compared runs and off for others.
    PfsMismatch,
    /// Other server settings differ between the compared runs.
    ConfigDiffers,
    /// The server was lost during the measured phase (`summary.json`'s `server_lost`): the
    /// run's figures include time the server did not serve.
    ServerLost,
    /// The compared runs started in states far enough apart (checkpoint age, dirty pages,
    /// pages being written) to bias the comparison.
    UnequalStartState,
    /// The run started from a settled server and its measured phase began before the
    /// workload's own checkpoint age reached its working level (after a restart: before its
    /// first checkpoint cycle ended).
    StartupTransient,
}

impl WarningKind {
    /// The snake_case id, as in the JSON.
    pub fn id(self) -> &'static str {
        match self {
            WarningKind::TooFewIntervals => "too_few_intervals",
            WarningKind::SuperlinearScaling => "superlinear_scaling",
            WarningKind::ClientBound => "client_bound",
            WarningKind::LeftoverFlushing => "leftover_flushing",
            WarningKind::PfsMismatch => "pfs_mismatch",
            WarningKind::ConfigDiffers => "config_differs",
            WarningKind::ServerLost => "server_lost",
            WarningKind::UnequalStartState => "unequal_start_state",
            WarningKind::StartupTransient => "startup_transient",
        }
    }
}

impl Warning {
    /// A warning of `kind` with `message` and the named `evidence`.
    pub fn new<'a>(
        kind: WarningKind,
        message: String,
        evidence: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> Warning {
        Warning {
            kind,
            message,
            evidence: evidence.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
        }
    }

    /// The same warning about run `run_id` (of a comparison): the message names it and the
    /// evidence holds it as `run`.
    pub fn of_run(mut self, run_id: &str) -> Warning {
        self.message = format!("run {run_id}: {}", self.message);
        self.evidence.insert("run".to_owned(), run_id.into());
        self
    }

    /// The text line: `warning: MESSAGE`.
    pub fn line(&self) -> String {
        format!("warning: {}", self.message)
    }
}

/// The `warning:` lines of `warnings`, one per line.
pub fn render_text(warnings: &[Warning]) -> String {
    warnings.iter().map(|w| w.line() + "\n").collect()
}

/// Measured intervals below which no stability verdict is given: a CV of two or three values
/// says nothing about how steady a run was.
pub const MIN_INTERVALS_TO_JUDGE: usize = 10;

/// Throughput ratio, as a multiple of the users ratio, above which scaling is superlinear.
/// Doubling the users can at best double the throughput when each user is a closed loop and
/// the server's cost per transaction is fixed; 15% above that is beyond the run-to-run noise
/// of short runs (a few percent) and of the draw threshold (5%) several times over.
pub const SUPERLINEAR_FACTOR: f64 = 1.15;

/// Client CPU per transaction at one user count, as a multiple of the median of its
/// neighbouring user counts, from which the client is named: a client that does the same work
/// per transaction costs the same CPU per transaction whatever the users, within some tens of
/// percent (batching of wakeups); twice as much is a client doing something else (waking up
/// alone for every round trip, retrying, reconnecting).
pub const CLIENT_PER_TXN_FACTOR: f64 = 2.0;

/// Checkpoint age at the first measured sample, percent of its maximum (the sync flush point),
/// from which the start counts as high: half the way to the sync point, most of the way to
/// the asynchronous flush point (87.5%); a run that starts from an idle server starts near 0.
pub const LEFTOVER_CHECKPOINT_PCT: f64 = 50.0;
/// Dirty pages at the first measured sample, percent of the buffer pool, from which the start
/// counts as high: InnoDB's adaptive flushing starts from 10% (innodb_max_dirty_pages_pct_lwm
/// is 0 by default, but flushing ahead of the checkpoint keeps an idle server well below it).
pub const LEFTOVER_DIRTY_PCT: f64 = 10.0;
/// How far (percentage points) the level must fall by the run's last sample, never to come back
/// to the start: a run flushing its own writes holds its level or climbs; one working off an
/// earlier load's backlog falls steadily.
pub const LEFTOVER_FALL_POINTS: f64 = 3.0;
/// Samples needed before a fall counts: over two or three samples a saw-tooth of the
/// checkpoint age under a write load can read as a fall.
pub const LEFTOVER_MIN_SAMPLES: usize = 5;
/// Redo written per second below which a run wrote nothing (read-only): any page flushing
/// during it is an earlier load's.
const NO_REDO_BYTES_S: f64 = 1024.0;

/// `too_few_intervals`: `intervals` measured intervals of `interval_s`, fewer than
/// [`MIN_INTERVALS_TO_JUDGE`].
pub fn too_few_intervals(intervals: usize, interval_s: f64) -> Option<Warning> {
    (intervals < MIN_INTERVALS_TO_JUDGE).then(|| {
        Warning::new(
            WarningKind::TooFewIntervals,
            format!(
                "{intervals} measured interval(s) of {} s: too few to judge how steady the run was \
                 ({MIN_INTERVALS_TO_JUDGE} or more needed); run longer (dbperf stores an interval each second)",
                fmt_num(interval_s)
            ),
            [
                ("intervals", intervals.into()),
                ("interval_s", round2(interval_s).into()),
                ("needed", MIN_INTERVALS_TO_JUDGE.into()),
            ],
        )
    })
}

/// `server_lost`: the run's summary says the server was lost during its measured phase (a
/// reconnect it refused, an unreachable interval, or no answer right after the run; the run
/// exited with status 5).
pub fn server_lost(lost: bool) -> Option<Warning> {
    lost.then(|| {
        Warning::new(
            WarningKind::ServerLost,
            "the server was lost during the measured phase (summary.json: server_lost): its figures \
             include time the server did not serve; find why in the server's log and measure again"
                .to_owned(),
            [("server_lost", true.into())],
        )
    })
}

/// `leftover_flushing`: the measured phase's telemetry `rows` (in time order) start with a
/// checkpoint age of at least [`LEFTOVER_CHECKPOINT_PCT`] or dirty pages of at least
/// [`LEFTOVER_DIRTY_PCT`], and that level falls by [`LEFTOVER_FALL_POINTS`] by the end without
/// coming back (or the run wrote no redo while pages were flushed): the run measured the
/// flushing of an earlier load. PostgreSQL rows are not judged (no such levels). A run whose
/// very first sample (`start`, before its warmup) was low built that level itself: that is its
/// start-up transient ([`startup_transient`]), not an earlier load's.
pub fn leftover_flushing(rows: &[&TelemetryRow], start: Option<&StartState>) -> Option<Warning> {
    if rows.len() < 3 || rows.iter().any(|r| r.is_postgres()) {
        return None;
    }
    if start.is_some_and(|s| {
        s.checkpoint_pct.is_some_and(|c| c <= TRANSIENT_START_MAX_PCT)
            && s.dirty_pct.is_none_or(|d| d < LEFTOVER_DIRTY_PCT)
    }) {
        return None;
    }
    let ckpt = |r: &&TelemetryRow| r.checkpoint_pct();
    let dirty = |r: &&TelemetryRow| r.server.as_ref()?.dirty_pages_pct;
    // A level that started high and fell away: (first, last), when it did.
    let fell = |f: &dyn Fn(&&TelemetryRow) -> Option<f64>, high: f64| -> Option<(f64, f64)> {
        let values: Vec<f64> = rows.iter().filter_map(f).collect();
        if values.len() < LEFTOVER_MIN_SAMPLES {
            return None;
        }
        let (&first, &last) = (values.first()?, values.last()?);
        let later = &values[values.len().div_ceil(3)..];
        let never_back = later.iter().all(|v| *v < first);
        (first >= high && never_back && last <= first - LEFTOVER_FALL_POINTS).then_some((first, last))
    };
    let redo = median(
        &rows
            .iter()
            .filter_map(|r| r.server.as_ref()?.redo_written_bytes_s)
            .collect::<Vec<_>>(),
    );
    let flushed = median(
        &rows
            .iter()
            .filter_map(|r| r.server.as_ref()?.pages_written_s)
            .collect::<Vec<_>>(),
    );
    let first_ckpt = rows.iter().find_map(ckpt);
    let first_dirty = rows.iter().find_map(dirty);
    let (last_ckpt, last_dirty) = (rows.iter().rev().find_map(ckpt), rows.iter().rev().find_map(dirty));
    let ckpt_fell = fell(&ckpt, LEFTOVER_CHECKPOINT_PCT);
    let dirty_fell = fell(&dirty, LEFTOVER_DIRTY_PCT);
    // Read-only: pages flushed while nothing was written can only be an earlier load's.
    let read_only_flushing = redo.is_some_and(|r| r < NO_REDO_BYTES_S)
        && flushed.is_some_and(|f| f >= 1.0)
        && (first_ckpt.is_some_and(|c| c >= LEFTOVER_CHECKPOINT_PCT)
            || first_dirty.is_some_and(|d| d >= LEFTOVER_DIRTY_PCT));
    if ckpt_fell.is_none() && dirty_fell.is_none() && !read_only_flushing {
        return None;
    }
    let mut found = Vec::new();
    if let (Some(a), Some(b)) = (first_ckpt, last_ckpt) {
        found.push(format!("checkpoint age {a:.0}% -> {b:.0}% of its maximum"));
    }
    if let (Some(a), Some(b)) = (first_dirty, last_dirty) {
        found.push(format!("dirty pages {a:.0}% -> {b:.0}% of the buffer pool"));
    }
    if let Some(f) = flushed {
        found.push(format!("{f:.0} pages flushed/s"));
    }
    let why = if read_only_flushing {
        " while the run itself wrote no redo"
    } else {
        ", falling throughout"
    };
    let opt = |v: Option<f64>| v.map_or(Value::Null, |v| round1(v).into());
    Some(Warning::new(
        WarningKind::LeftoverFlushing,
        format!(
            "the run started with pages left dirty by an earlier load ({}{why}): it measured the server \
             flushing that load, which takes I/O and CPU from the workload; wait for flushing before measuring \
             (--settle waits for checkpoint age and dirty pages to drop before the warmup), or give a longer --warmup-time",
            found.join(", ")
        ),
        [
            ("checkpoint_pct_first", opt(first_ckpt)),
            ("checkpoint_pct_last", opt(last_ckpt)),
            ("dirty_pct_first", opt(first_dirty)),
            ("dirty_pct_last", opt(last_dirty)),
            ("pages_flushed_s", opt(flushed)),
            ("redo_written_bytes_s", opt(redo)),
            ("samples", rows.len().into()),
        ],
    ))
}

/// Checkpoint age (points of its maximum) between the compared runs' starts from which they
/// did not start alike.
pub const START_CHECKPOINT_SPREAD: f64 = 20.0;
/// Dirty pages (points) between the compared runs' starts from which they did not start alike.
pub const START_DIRTY_SPREAD: f64 = 10.0;
/// Pages written per second at a run's start from which it was still flushing (against a run
/// that started writing under a tenth of that).
pub const START_WRITES_S: f64 = 500.0;

/// `unequal_start_state`: the runs of one comparison (`(run id, start)`) started in states
/// apart by at least [`START_CHECKPOINT_SPREAD`] points of checkpoint age or
/// [`START_DIRTY_SPREAD`] of dirty pages, or one was writing [`START_WRITES_S`] pages/s while
/// another wrote under a tenth of that: each carried a different amount of flushing into its
/// measurement. Names the first and the furthest, and the fix.
pub fn unequal_start_state(runs: &[(&str, &dbperf_results::telemetry::StartState)]) -> Option<Warning> {
    type Get = fn(&dbperf_results::telemetry::StartState) -> Option<f64>;
    type Ends<'a> = ((&'a str, f64), (&'a str, f64));
    let spread = |get: Get| -> Option<Ends<'_>> {
        let values: Vec<(&str, f64)> = runs.iter().filter_map(|(id, s)| Some((*id, get(s)?))).collect();
        let lo = values.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
        let hi = values.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
        Some((lo, hi))
    };
    let ckpt = spread(|s| s.checkpoint_pct).filter(|(lo, hi)| hi.1 - lo.1 >= START_CHECKPOINT_SPREAD);
    let dirty = spread(|s| s.dirty_pct).filter(|(lo, hi)| hi.1 - lo.1 >= START_DIRTY_SPREAD);
    let writes = spread(|s| s.pages_written_s).filter(|(lo, hi)| hi.1 >= START_WRITES_S && lo.1 < hi.1 / 10.0);
    // PostgreSQL: some runs began while a checkpoint was being written, others not.
    let checkpointing: Vec<&str> = runs
        .iter()
        .filter(|(_, s)| s.checkpoint_in_progress == Some(true))
        .map(|(id, _)| *id)
        .collect();
    let idle = runs
        .iter()
        .filter(|(_, s)| s.checkpoint_in_progress == Some(false))
        .count();
    let checkpoint_split = !checkpointing.is_empty() && idle > 0;
    if ckpt.is_none() && dirty.is_none() && writes.is_none() && !checkpoint_split {
        return None;
    }
    let mut found = Vec::new();
    let mut evidence: Vec<(&str, Value)> = Vec::new();
    if checkpoint_split {
        found.push(format!(
            "a checkpoint was being written when {} began, not when the other {idle} did",
            checkpointing.join(", ")
        ));
        evidence.push(("checkpoint_in_progress", Value::from(checkpointing.clone())));
    }
    if let Some(((lo_id, lo), (hi_id, hi))) = ckpt {
        found.push(format!(
            "checkpoint age {lo:.0}% ({lo_id}) to {hi:.0}% ({hi_id}) of its maximum"
        ));
        evidence.extend([
            ("checkpoint_pct_min", round1(lo).into()),
            ("checkpoint_pct_max", round1(hi).into()),
        ]);
    }
    if let Some(((lo_id, lo), (hi_id, hi))) = dirty {
        found.push(format!("dirty pages {lo:.0}% ({lo_id}) to {hi:.0}% ({hi_id})"));
        evidence.extend([
            ("dirty_pct_min", round1(lo).into()),
            ("dirty_pct_max", round1(hi).into()),
        ]);
    }
    if let Some(((lo_id, lo), (hi_id, hi))) = writes {
        found.push(format!("{lo:.0} ({lo_id}) to {hi:.0} ({hi_id}) pages written/s"));
        evidence.extend([
            ("pages_written_s_min", round1(lo).into()),
            ("pages_written_s_max", round1(hi).into()),
        ]);
    }
    evidence.push(("runs", runs.len().into()));
    Some(Warning::new(
        WarningKind::UnequalStartState,
        format!(
            "the compared runs started in different states ({}): each measured a different amount of flushing \
             left by what ran before it, which biases the comparison; let the server settle before every run \
             (`--settle` waits for checkpoint age and dirty pages to drop; a lab file's `settle = \"each\"`, its \
             default), or restore the same data before each",
            found.join("; ")
        ),
        evidence,
    ))
}

/// `client_bound` within one run: dbperf's CPU per client thread at or above
/// [`CLIENT_SATURATED_PCT`] of a core in at least a quarter of the telemetry `rows` (as
/// [`crate::analysis::pressure::Pressure::client_bound`] counts).
pub fn client_bound(rows: &[&TelemetryRow], client_threads: Option<usize>) -> Option<Warning> {
    let threads = client_threads.unwrap_or(1).max(1);
    let cpus: Vec<f64> = rows.iter().filter_map(|r| r.client_cpu()).collect();
    let per_thread: Vec<f64> = cpus.iter().map(|c| c / threads as f64).collect();
    let saturated = per_thread.iter().filter(|c| **c >= CLIENT_SATURATED_PCT).count();
    if saturated == 0 || saturated * 4 < per_thread.len() {
        return None;
    }
    let med = median(&cpus).unwrap_or(0.0);
    Some(Warning::new(
        WarningKind::ClientBound,
        format!(
            "the client (dbperf) used {:.0}% of a core per client thread ({threads} thread(s), median {med:.0}% \
             in all) and was saturated in {saturated} of {} samples: the results measure the client, not the \
             server; give the client more threads or CPUs (--client-threads, pinning), or use fewer connections",
            med / threads as f64,
            per_thread.len()
        ),
        [
            ("client_cpu_pct_median", round1(med).into()),
            ("client_threads", threads.into()),
            ("saturated_samples", saturated.into()),
            ("samples", per_thread.len().into()),
        ],
    ))
}

/// One run of a users sweep, as [`scaling`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalingPoint {
    /// The run's id.
    pub run_id: String,
    /// Which runs it may be set against: the workload and the comparison's column.
    pub group: String,
    /// Users (client connections).
    pub users: u32,
    /// Throughput, transactions per second.
    pub tps: f64,
    /// Median share of the host's CPU time idle over the measured phase, percent.
    pub host_idle_pct: Option<f64>,
    /// Client CPU per transaction, microseconds.
    pub client_us_per_txn: Option<f64>,
    /// Client CPU per query, microseconds.
    pub client_us_per_query: Option<f64>,
}

/// The warnings across runs of one workload at different user counts: `superlinear_scaling`
/// between neighbouring user counts of a group whose throughput ratio exceeds
/// [`SUPERLINEAR_FACTOR`] times the users ratio, and `client_bound` for a user count whose
/// client CPU per transaction is [`CLIENT_PER_TXN_FACTOR`] times its neighbours' (unless that
/// run is already named by a superlinear warning, which explains it). Repetitions at one user
/// count are taken by their median.
pub fn scaling(points: &[ScalingPoint]) -> Vec<Warning> {
    let mut groups: BTreeMap<&str, BTreeMap<u32, Vec<&ScalingPoint>>> = BTreeMap::new();
    for p in points.iter().filter(|p| p.tps > 0.0 && p.users > 0) {
        groups.entry(&p.group).or_default().entry(p.users).or_default().push(p);
    }
    let mut out = Vec::new();
    for (group, by_users) in groups {
        // One representative per user count: the run with the median throughput.
        let steps: Vec<&ScalingPoint> = by_users
            .values()
            .map(|runs| {
                let mut runs = runs.clone();
                runs.sort_by(|a, b| a.tps.total_cmp(&b.tps));
                runs[runs.len() / 2]
            })
            .collect();
        let mut named: Vec<&str> = Vec::new();
        for pair in steps.windows(2) {
            let (lo, hi) = (pair[0], pair[1]);
            let users_ratio = hi.users as f64 / lo.users as f64;
            let tps_ratio = hi.tps / lo.tps;
            if tps_ratio <= SUPERLINEAR_FACTOR * users_ratio {
                continue;
            }
            named.push(&lo.run_id);
            let mut why = String::new();
            if let Some(idle) = lo.host_idle_pct {
                why.push_str(&format!(
                    "; the host was {idle:.0}% idle during the {}-user run",
                    lo.users
                ));
            }
            if let (Some(a), Some(b)) = (lo.client_us_per_query, hi.client_us_per_query) {
                why.push_str(&format!(
                    "; the client spent {a:.0} us of CPU per query at {} user(s) against {b:.0} us at {}",
                    lo.users, hi.users
                ));
            }
            let opt = |v: Option<f64>| v.map_or(Value::Null, |v| round1(v).into());
            out.push(Warning::new(
                WarningKind::SuperlinearScaling,
                format!(
                    "{group}: {} -> {} users gave {} -> {} TPS, {tps_ratio:.1}x for {users_ratio:.1}x the users{why}: \
                     with few connections every round trip waits for an idle CPU to wake up (an idle host, more \
                     client CPU per query), so the low-user figure is too low; pin the server and the client to CPUs \
                     (dbperf lab pinning, see examples/pinning.toml) or compare from 2 or more users",
                    lo.users,
                    hi.users,
                    fmt_num(lo.tps),
                    fmt_num(hi.tps),
                ),
                [
                    ("group", group.into()),
                    ("runs", Value::from(vec![lo.run_id.clone(), hi.run_id.clone()])),
                    ("users", Value::from(vec![lo.users, hi.users])),
                    ("tps", Value::from(vec![round1(lo.tps), round1(hi.tps)])),
                    ("tps_ratio", round2(tps_ratio).into()),
                    ("users_ratio", round2(users_ratio).into()),
                    ("host_idle_pct_low", opt(lo.host_idle_pct)),
                    (
                        "client_us_per_query",
                        Value::from(vec![opt(lo.client_us_per_query), opt(hi.client_us_per_query)]),
                    ),
                    (
                        "client_us_per_txn",
                        Value::from(vec![opt(lo.client_us_per_txn), opt(hi.client_us_per_txn)]),
                    ),
                ],
            ));
        }
        for (i, p) in steps.iter().enumerate() {
            let Some(own) = p.client_us_per_txn else { continue };
            if named.contains(&p.run_id.as_str()) {
                continue;
            }
            let neighbours: Vec<f64> = [i.checked_sub(1), Some(i + 1)]
                .into_iter()
                .flatten()
                .filter_map(|j| steps.get(j)?.client_us_per_txn)
                .collect();
            let Some(usual) = median(&neighbours) else { continue };
            if usual <= 0.0 || own < CLIENT_PER_TXN_FACTOR * usual {
                continue;
            }
            out.push(Warning::new(
                WarningKind::ClientBound,
                format!(
                    "{group}: at {} users the client spent {own:.0} us of CPU per transaction, {:.1}x the {usual:.0} us \
                     at the neighbouring user counts: the client did more than drive the workload there (woke up per \
                     round trip, retried, reconnected); check its errors and reconnects, pin it, and repeat that point",
                    p.users,
                    own / usual
                ),
                [
                    ("group", group.into()),
                    ("run", p.run_id.clone().into()),
                    ("users", p.users.into()),
                    ("client_us_per_txn", round1(own).into()),
                    ("neighbours_us_per_txn", round1(usual).into()),
                ],
            ));
        }
    }
    out
}

/// Performance Schema (`values`, one per column: `ON`, `OFF`, or several joined with ` | `)
/// differing between the `columns` of a comparison: `pfs_mismatch`.
pub fn pfs_mismatch(columns: &[String], values: &[String]) -> Option<Warning> {
    let on = |v: &str| v.split(" | ").any(|x| x.eq_ignore_ascii_case("ON") || x == "1");
    let off = |v: &str| v.split(" | ").any(|x| x.eq_ignore_ascii_case("OFF") || x == "0");
    if !(values.iter().any(|v| on(v)) && values.iter().any(|v| off(v))) {
        return None;
    }
    let pairs: Vec<String> = columns.iter().zip(values).map(|(c, v)| format!("{c}: {v}")).collect();
    Some(Warning::new(
        WarningKind::PfsMismatch,
        format!(
            "Performance Schema is on for some runs and off for others ({}): its instrumentation costs CPU on \
             every statement, so the difference measures it as much as what was compared; run every side with \
             the same performance_schema (or vary it on purpose as a lab variant)",
            pairs.join("; ")
        ),
        [
            ("columns", Value::from(columns.to_vec())),
            ("performance_schema", Value::from(values.to_vec())),
        ],
    ))
}

/// `config_differs`: server variables (`name`, values per column) that differ between the
/// columns without being what the experiment varies, Performance Schema left to
/// [`pfs_mismatch`]. dbperf's own switches (InnoDB monitors, the Performance Schema consumers
/// and instruments its telemetry enables) are never among them: the variable check leaves them
/// out ([`crate::compare::variables::ALWAYS_DIFFER`]) or they are not variables.
pub fn config_differs(columns: &[String], vars: &[(&str, &[String])]) -> Option<Warning> {
    let vars: Vec<&(&str, &[String])> = vars.iter().filter(|(n, _)| *n != "performance_schema").collect();
    if vars.is_empty() {
        return None;
    }
    let names: Vec<&str> = vars.iter().map(|(n, _)| *n).collect();
    const SHOWN: usize = 6;
    let mut list = names.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
    if names.len() > SHOWN {
        list.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    Some(Warning::new(
        WarningKind::ConfigDiffers,
        format!(
            "{} server setting(s) differ between the compared runs without being what is compared ({list}): \
             the comparison is not apples to apples; start every side with the same settings (--set, the \
             experiment's [[server]] settings) or make the difference a lab variant",
            names.len()
        ),
        [
            ("columns", Value::from(columns.to_vec())),
            (
                "variables",
                Value::Object(
                    vars.iter()
                        .map(|(n, v)| (n.to_string(), Value::from(v.to_vec())))
                        .collect(),
                ),
            ),
        ],
    ))
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// `1,469` above 100, else one decimal.
fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 {
        let s = format!("{:.0}", v.abs());
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 {
            out.insert(0, '-');
        }
        out
    } else if (v - v.round()).abs() < 0.05 {
        format!("{}", v.round())
    } else {
        format!("{v:.1}")
    }
}

/// Checkpoint age at a run's first sample, percent of its maximum, up to which the run started
/// from a settled server (the settle wait stops at 10%; idle flushing leaves a little more):
/// any higher level later is the run's own.
pub const TRANSIENT_START_MAX_PCT: f64 = 20.0;
/// Points of checkpoint age between the start and the working level from which the climb is
/// a transient worth naming: less is the noise of a read-only run's few writes.
pub const TRANSIENT_RISE_POINTS: f64 = 15.0;
/// Points above the working level a first peak must reach to be a first checkpoint cycle of
/// its own (the flush storm that ends it), rather than the working level's own saw-tooth.
pub const TRANSIENT_OVERSHOOT_POINTS: f64 = 10.0;

/// `startup_transient`: the run (`rows`, all of them, warmup included, in time order; the
/// measured phase from `measured_from_s`; `start` its start state) started from a settled server, and its checkpoint
/// age reached its working level (the median over the second half of the measured phase) only
/// after measuring began, or first overshot it and came back (the first checkpoint cycle,
/// after a restart) after measuring began: the figures include the climb, which a steady
/// state does not have. Says the warmup that would have passed it.
pub fn startup_transient(
    rows: &[&TelemetryRow],
    start: Option<&StartState>,
    measured_from_s: f64,
    step_s: f64,
) -> Option<Warning> {
    if rows.iter().any(|r| r.is_postgres()) {
        return None;
    }
    let series: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| Some((r.mid_s(step_s), r.checkpoint_pct()?)))
        .collect();
    if series.len() < LEFTOVER_MIN_SAMPLES {
        return None;
    }
    // The level sampled before the workload began, else the first row's.
    let start = start.and_then(|s| s.checkpoint_pct).unwrap_or(series[0].1);
    let measured: Vec<f64> = series
        .iter()
        .filter(|(t, _)| *t >= measured_from_s)
        .map(|(_, v)| *v)
        .collect();
    let level = median(&measured[measured.len() / 2..])?;
    if start > TRANSIENT_START_MAX_PCT || level - start < TRANSIENT_RISE_POINTS {
        return None;
    }
    let reached = series.iter().position(|(_, v)| *v >= level)?;
    let (peak_at, &(t_peak, peak)) = series
        .iter()
        .enumerate()
        .skip(reached)
        .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))?;
    let overshoot = peak - level >= TRANSIENT_OVERSHOOT_POINTS;
    // The end of the transient: back near the level after the first peak, or the level reached.
    let end = if overshoot {
        series[peak_at..]
            .iter()
            .find(|(_, v)| *v <= level + TRANSIENT_OVERSHOOT_POINTS / 2.0)
            .map(|(t, _)| *t)
    } else {
        Some(series[reached].0)
    };
    if end.is_some_and(|e| e <= measured_from_s + step_s) {
        return None;
    }
    let last = series.last().map_or(0.0, |(t, _)| *t);
    // Seconds since the run started, to the end of the interval the transient ended in.
    let warmup_needed = end.map(|e| (e + step_s / 2.0).ceil());
    let climb = format!(
        "its checkpoint age rose from {start:.0}% of its maximum at the start to its working level of {level:.0}% \
         only {:.0} s into the run",
        series[reached].0
    );
    let cycle = match (overshoot, end) {
        (true, Some(e)) => format!(
            ", overshot to {peak:.0}% at {:.0} s and came back at {:.0} s (its first checkpoint cycle)",
            t_peak, e
        ),
        (true, None) => format!(
            ", overshot to {peak:.0}% at {:.0} s and had not come back by the end ({:.0} s)",
            t_peak, last
        ),
        (false, _) => String::new(),
    };
    let advice = match warmup_needed {
        Some(w) => format!(
            "warm up for at least {w:.0} s (--warmup-time={w:.0}, or `warmup` in a lab file) so that measuring starts \
             past it"
        ),
        None => format!(
            "run longer than {:.0} s and warm up past the first checkpoint cycle before measuring",
            last
        ),
    };
    let opt = |v: Option<f64>| v.map_or(Value::Null, |v| round1(v).into());
    Some(Warning::new(
        WarningKind::StartupTransient,
        format!(
            "the run measured its own start-up transient, not flushing left by earlier work: it started settled, {climb}{cycle}, \
             while measuring began at {:.0} s; {advice}",
            measured_from_s
        ),
        [
            ("checkpoint_pct_start", round1(start).into()),
            ("checkpoint_pct_level", round1(level).into()),
            ("checkpoint_pct_peak", round1(peak).into()),
            ("transient_end_s", opt(end)),
            ("measured_from_s", round1(measured_from_s).into()),
            ("warmup_needed_s", opt(warmup_needed)),
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_results::telemetry::{ClientSample, ServerSample};

    /// A sample at `t` s with checkpoint age and dirty pages (percent), pages flushed and redo
    /// written per second, and client CPU (percent of a core).
    fn row(t: f64, ckpt: f64, dirty: f64, flushed: f64, redo: f64, client: f64) -> TelemetryRow {
        TelemetryRow {
            t_s: t,
            interval_s: Some(1.0),
            server: Some(ServerSample {
                checkpoint_pct: Some(ckpt),
                dirty_pages_pct: Some(dirty),
                pages_written_s: Some(flushed),
                redo_written_bytes_s: Some(redo),
                ..ServerSample::default()
            }),
            client: Some(ClientSample {
                cpu_pct: client,
                rss_bytes: 0,
            }),
            ..TelemetryRow::default()
        }
    }

    fn rows(levels: &[(f64, f64)], redo: f64) -> Vec<TelemetryRow> {
        levels
            .iter()
            .enumerate()
            .map(|(i, (c, d))| row(i as f64 + 1.0, *c, *d, 120.0, redo, 30.0))
            .collect()
    }

    fn refs(rows: &[TelemetryRow]) -> Vec<&TelemetryRow> {
        rows.iter().collect()
    }

    #[test]
    fn too_few_intervals_below_ten_only() {
        let w = too_few_intervals(5, 1.0).unwrap();
        assert_eq!(w.kind.id(), "too_few_intervals");
        assert_eq!(w.evidence["intervals"], 5);
        assert!(w.message.contains("run longer"), "{}", w.message);
        assert_eq!(too_few_intervals(10, 1.0), None);
        assert_eq!(server_lost(false), None);
        let lost = server_lost(true).unwrap();
        assert_eq!(lost.kind.id(), "server_lost");
        assert!(lost.message.contains("measure again"), "{}", lost.message);
    }

    /// A read/write run that starts where an earlier load left the checkpoint age and falls
    /// away is flagged; one that builds its own age (rising), one that oscillates at a steady
    /// level, and one that starts from a quiet server are not.
    #[test]
    fn leftover_flushing_is_a_high_start_that_falls_away() {
        let falling = rows(
            &[
                (80.0, 30.0),
                (78.0, 29.0),
                (76.0, 28.5),
                (74.0, 28.0),
                (72.0, 27.0),
                (70.0, 26.0),
            ],
            5e6,
        );
        let w = leftover_flushing(&refs(&falling), None).unwrap();
        assert_eq!(w.kind, WarningKind::LeftoverFlushing);
        assert_eq!(w.evidence["checkpoint_pct_first"], 80.0);
        assert_eq!(w.evidence["checkpoint_pct_last"], 70.0);
        assert_eq!(w.evidence["dirty_pct_first"], 30.0);
        assert_eq!(w.evidence["pages_flushed_s"], 120.0);
        assert!(
            w.message.contains("--settle") && w.message.contains("80% -> 70%"),
            "{}",
            w.message
        );

        let rising = rows(
            &[(50.0, 24.0), (52.0, 26.0), (55.0, 28.0), (57.0, 30.0), (60.0, 36.0)],
            5e6,
        );
        assert_eq!(leftover_flushing(&refs(&rising), None), None);
        // Steady state under a write load: the first sample high, later ones back up to it.
        let steady = rows(
            &[
                (85.0, 30.0),
                (70.0, 28.0),
                (88.0, 31.0),
                (72.0, 29.0),
                (86.0, 30.0),
                (75.0, 28.0),
            ],
            5e6,
        );
        assert_eq!(leftover_flushing(&refs(&steady), None), None);
        let quiet = rows(&[(20.0, 5.0), (15.0, 4.0), (10.0, 3.0), (5.0, 1.0)], 5e6);
        assert_eq!(leftover_flushing(&refs(&quiet), None), None);
        // Too few samples to tell a fall from a saw-tooth.
        let short = rows(&[(80.0, 30.0), (76.0, 28.0), (72.0, 27.0), (70.0, 26.0)], 5e6);
        assert_eq!(leftover_flushing(&refs(&short), None), None);
        let quiet = rows(&[(20.0, 5.0), (15.0, 4.0), (10.0, 3.0), (8.0, 2.0), (5.0, 1.0)], 5e6);
        assert_eq!(leftover_flushing(&refs(&quiet), None), None);
    }

    /// A read-only run (no redo) that flushes pages from a high start was flushing an earlier
    /// load even when the level barely moved; the same without a high start is not flagged.
    #[test]
    fn leftover_flushing_in_a_read_only_run_needs_no_fall() {
        let flat = rows(&[(86.9, 33.2), (86.5, 33.0), (86.0, 32.9), (85.9, 32.8)], 0.0);
        let w = leftover_flushing(&refs(&flat), None).unwrap();
        assert!(w.message.contains("wrote no redo"), "{}", w.message);
        let low = rows(&[(30.0, 5.0), (29.5, 4.9), (29.0, 4.8), (28.9, 4.8)], 0.0);
        assert_eq!(leftover_flushing(&refs(&low), None), None);
    }

    /// The TPC-C study's transient after a restart: checkpoint age from ~0 to 95% in ~20 s, a
    /// flush storm back to the working level. Measured from 10 s it is named with the warmup it
    /// needs; measured from 40 s, or started high (an earlier load's), it is not.
    #[test]
    fn a_start_up_transient_is_named_with_the_warmup_it_needs_not_as_leftover_flushing() {
        let mut levels: Vec<(f64, f64)> = (0..20)
            .map(|i| (f64::from(i) * 5.0, 3.0 + f64::from(i) * 3.5))
            .collect();
        levels.extend([(80.0, 60.0), (65.0, 50.0), (58.0, 45.0)]);
        levels.extend((0..30).map(|i| (if i % 2 == 0 { 52.0 } else { 62.0 }, 40.0)));
        let all = rows(&levels, 5e6);
        let w = startup_transient(&refs(&all), None, 10.0, 1.0).unwrap();
        assert_eq!(w.kind.id(), "startup_transient");
        assert_eq!(w.evidence["checkpoint_pct_start"], 0.0);
        assert_eq!(w.evidence["checkpoint_pct_peak"], 95.0);
        assert_eq!(w.evidence["warmup_needed_s"], 23.0, "{w:?}");
        assert!(
            w.message.contains("start-up transient") && w.message.contains("--warmup-time=23"),
            "{}",
            w.message
        );
        // The same run measured from past the cycle is steady; leftover_flushing does not call
        // the fall in the measured phase an earlier load's when the run started settled.
        assert_eq!(startup_transient(&refs(&all), None, 30.0, 1.0), None);
        let measured: Vec<&TelemetryRow> = all.iter().skip(20).collect();
        let start = StartState::of(&all).unwrap();
        assert!(leftover_flushing(&measured, None).is_some());
        assert_eq!(leftover_flushing(&measured, Some(&start)), None);
        // A run that started high is an earlier load's, not its own transient.
        let high: Vec<TelemetryRow> = rows(&levels[19..], 5e6);
        assert_eq!(startup_transient(&refs(&high), None, 5.0, 1.0), None);
        // A climb that never reached a level within the run says to run longer.
        let climbing = rows(&(0..12).map(|i| (f64::from(i) * 6.0, 10.0)).collect::<Vec<_>>(), 5e6);
        let w = startup_transient(&refs(&climbing), None, 3.0, 1.0).unwrap();
        assert!(w.message.contains("working level"), "{}", w.message);
    }

    #[test]
    fn runs_that_began_during_a_checkpoint_and_others_not_are_named() {
        let pg = |c: f64, writing: bool| StartState {
            checkpoint_pct: Some(c),
            checkpoint_in_progress: Some(writing),
            ..StartState::default()
        };
        let (a, b) = (pg(30.0, true), pg(32.0, false));
        let w = unequal_start_state(&[("c=1", &a), ("c=8", &b)]).unwrap();
        assert!(
            w.message
                .contains("a checkpoint was being written when c=1 began, not when the other 1 did"),
            "{}",
            w.message
        );
        assert_eq!(unequal_start_state(&[("c=1", &b), ("c=8", &b)]), None);
    }

    #[test]
    fn runs_that_started_apart_are_named_with_their_states() {
        use dbperf_results::telemetry::StartState;
        let state = |c: f64, d: f64, w: f64| StartState {
            checkpoint_pct: Some(c),
            dirty_pct: Some(d),
            pages_written_s: Some(w),
            history_list_length: None,
            checkpoint_in_progress: None,
        };
        // The demo's sweep: each point started where the previous one left its flushing.
        let (a, b, c) = (
            state(17.0, 5.0, 10.0),
            state(60.0, 9.0, 900.0),
            state(93.0, 12.0, 3500.0),
        );
        let w = unequal_start_state(&[("t1", &a), ("t4", &b), ("t16", &c)]).unwrap();
        assert_eq!(w.kind.id(), "unequal_start_state");
        assert!(
            w.message
                .contains("checkpoint age 17% (t1) to 93% (t16) of its maximum")
                && w.message.contains("10 (t1) to 3500 (t16) pages written/s")
                && !w.message.contains("dirty pages 5%")
                && w.message.contains("--settle"),
            "{}",
            w.message
        );
        assert_eq!(w.evidence["checkpoint_pct_max"], 93.0);
        // Settled points start alike: nothing to say.
        let (x, y) = (state(3.0, 1.0, 0.0), state(8.0, 2.0, 40.0));
        assert_eq!(unequal_start_state(&[("a", &x), ("b", &y)]), None);
        assert_eq!(unequal_start_state(&[("a", &x)]), None);
    }

    #[test]
    fn client_bound_counts_per_client_thread() {
        let busy: Vec<TelemetryRow> = (0..8).map(|i| row(i as f64, 0.0, 0.0, 0.0, 0.0, 190.0)).collect();
        let w = client_bound(&refs(&busy), Some(2)).unwrap();
        assert_eq!(w.evidence["client_threads"], 2);
        assert_eq!(w.evidence["saturated_samples"], 8);
        assert!(w.message.contains("95% of a core per client thread"), "{}", w.message);
        // The same CPU spread over 4 threads is under half a core each.
        assert_eq!(client_bound(&refs(&busy), Some(4)), None);
        // One busy sample in eight is a blip, not a bound.
        let mut blip: Vec<TelemetryRow> = (0..8).map(|i| row(i as f64, 0.0, 0.0, 0.0, 0.0, 40.0)).collect();
        blip[3] = row(3.0, 0.0, 0.0, 0.0, 0.0, 99.0);
        assert_eq!(client_bound(&refs(&blip), Some(1)), None);
    }

    fn point(id: &str, users: u32, tps: f64, idle: f64, us_query: f64) -> ScalingPoint {
        ScalingPoint {
            run_id: id.into(),
            group: "mariadb".into(),
            users,
            tps,
            host_idle_pct: Some(idle),
            client_us_per_txn: Some(us_query * 16.0),
            client_us_per_query: Some(us_query),
        }
    }

    /// The example measured on a 2-vCPU VM: 1 -> 2 connections gave 297 -> 1,469 TPS with the
    /// host 53% idle and 52 us client CPU per query against 17 us.
    #[test]
    fn superlinear_scaling_from_one_to_two_users() {
        let sweep = [
            point("r1", 1, 297.0, 53.0, 52.0),
            point("r2", 2, 1469.0, 5.0, 17.0),
            point("r4", 4, 2500.0, 0.0, 16.0),
        ];
        let ws = scaling(&sweep);
        assert_eq!(ws.len(), 1, "{ws:?}");
        let w = &ws[0];
        assert_eq!(w.kind.id(), "superlinear_scaling");
        assert_eq!(w.evidence["users"], serde_json::json!([1, 2]));
        assert_eq!(w.evidence["tps"], serde_json::json!([297.0, 1469.0]));
        assert_eq!(w.evidence["tps_ratio"], 4.95);
        assert_eq!(w.evidence["host_idle_pct_low"], 53.0);
        assert_eq!(w.evidence["client_us_per_query"], serde_json::json!([52.0, 17.0]));
        assert!(
            w.message.contains("297 -> 1,469 TPS")
                && w.message.contains("53% idle")
                && w.message.contains("examples/pinning.toml")
                && w.message.contains("2 or more users"),
            "{}",
            w.message
        );
        // The 1-user run's higher client CPU per transaction is explained, not warned again.
        assert!(ws.iter().all(|w| w.kind != WarningKind::ClientBound));
    }

    #[test]
    fn ordinary_scaling_is_not_flagged() {
        // Nearly linear (1.9x for 2x), flat, and falling past saturation.
        let sweep = [
            point("r1", 1, 1000.0, 10.0, 17.0),
            point("r2", 2, 1900.0, 2.0, 17.0),
            point("r4", 4, 2200.0, 0.0, 16.0),
            point("r8", 8, 2100.0, 0.0, 16.0),
        ];
        assert_eq!(scaling(&sweep), []);
        // Different groups (servers) are never set against each other.
        let mut other = point("m2", 2, 5000.0, 0.0, 17.0);
        other.group = "mysql".into();
        assert_eq!(scaling(&[point("r1", 1, 1000.0, 10.0, 17.0), other]), []);
        // Repetitions are taken by their median: one fast repetition at 2 users is not enough.
        let reps = [
            point("a1", 1, 1000.0, 10.0, 17.0),
            point("a2", 1, 1010.0, 10.0, 17.0),
            point("b1", 2, 1900.0, 2.0, 17.0),
            point("b2", 2, 2600.0, 2.0, 17.0),
            point("b3", 2, 1950.0, 2.0, 17.0),
        ];
        assert_eq!(scaling(&reps), []);
    }

    #[test]
    fn client_cpu_per_transaction_far_above_its_neighbours_is_client_bound() {
        let sweep = [
            point("r1", 1, 1000.0, 10.0, 17.0),
            point("r2", 2, 1900.0, 2.0, 17.0),
            point("r4", 4, 2000.0, 0.0, 60.0),
            point("r8", 8, 2100.0, 0.0, 18.0),
        ];
        let ws = scaling(&sweep);
        assert_eq!(ws.len(), 1, "{ws:?}");
        assert_eq!(ws[0].kind, WarningKind::ClientBound);
        assert_eq!(ws[0].evidence["run"], "r4");
        assert_eq!(ws[0].evidence["users"], 4);
        assert!(ws[0].message.contains("at 4 users"), "{}", ws[0].message);
    }

    #[test]
    fn pfs_mismatch_needs_on_and_off() {
        let cols = vec!["a".to_string(), "b".to_string()];
        let w = pfs_mismatch(&cols, &["ON".into(), "OFF".into()]).unwrap();
        assert_eq!(w.kind.id(), "pfs_mismatch");
        assert_eq!(w.evidence["performance_schema"], serde_json::json!(["ON", "OFF"]));
        assert!(w.message.contains("a: ON; b: OFF"), "{}", w.message);
        assert_eq!(pfs_mismatch(&cols, &["ON".into(), "ON".into()]), None);
        assert_eq!(pfs_mismatch(&cols, &["OFF".into(), "?".into()]), None);
    }

    #[test]
    fn config_differs_leaves_performance_schema_to_its_own_kind() {
        let cols = vec!["a".to_string(), "b".to_string()];
        let pfs = vec!["ON".to_string(), "OFF".to_string()];
        let sort = vec!["2097152".to_string(), "4194304".to_string()];
        assert_eq!(config_differs(&cols, &[("performance_schema", &pfs)]), None);
        let w = config_differs(&cols, &[("performance_schema", &pfs), ("sort_buffer_size", &sort)]).unwrap();
        assert_eq!(w.kind.id(), "config_differs");
        assert_eq!(
            w.evidence["variables"],
            serde_json::json!({"sort_buffer_size": ["2097152", "4194304"]})
        );
        assert!(w.message.starts_with("1 server setting(s) differ") && w.message.contains("(sort_buffer_size)"));
    }

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(fmt_num(1469.4), "1,469");
        assert_eq!(fmt_num(297.0), "297");
        assert_eq!(fmt_num(12.34), "12.3");
        assert_eq!(fmt_num(5.0), "5");
    }
}
