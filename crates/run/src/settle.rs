//! Waiting for the server to settle before a measured run (`--settle[=SECONDS]`): a run that
//! starts right after a load measures the load's flushing (InnoDB writing back the dirty pages
//! and advancing the checkpoint while the workload runs). On MariaDB and MySQL this samples the
//! checkpoint age, dirty pages and pages written every second until they are low or the
//! writing has stopped, or the limit is reached; on PostgreSQL it asks for a `CHECKPOINT`.
//! MariaDB 10.5+ stops flushing an idle server with dirty pages well under its limit (the
//! page cleaner only works towards `innodb_max_dirty_pages_pct`): when the writing stops short
//! of the settled levels, the wait lowers that limit to 0 so the page cleaner writes the rest
//! back, and puts the value it found back when it ends, however it ends.
//! It owns only the wait; the run that follows is measured as usual.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use dbperf_engine::StopSignal;

use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::pgwire::PgWireSession;
use dbperf_driver::target::Family;
use dbperf_driver::wire::WireSession;
use dbperf_driver::{Session, Target};
use dbperf_results::telemetry::ServerSample;
use dbperf_telemetry::server::{ServerSampler, ServerTelemetryOptions};

/// The wait when `--settle` is given without a value.
pub const DEFAULT_SETTLE_SECS: u64 = 300;
/// Checkpoint age, in percent of the age where InnoDB starts flushing synchronously, low enough
/// to leave the run's own writes their full room.
pub const SETTLED_CHECKPOINT_PCT: f64 = 10.0;
/// Dirty pages, in percent of the buffer pool, low enough that the run does not inherit the
/// load's write-back.
pub const SETTLED_DIRTY_PCT: f64 = 5.0;
/// Consecutive one-second samples with no page written after which the server has stopped
/// flushing on its own: waiting longer changes nothing.
pub const QUIET_SAMPLES: usize = 3;
/// Seconds between progress lines while waiting.
const PRINT_EVERY: u64 = 10;

/// How the wait ended.
#[derive(Debug, Clone, PartialEq)]
pub enum SettleEnd {
    /// Checkpoint age and dirty pages were below the settled levels.
    Low,
    /// The server stopped writing pages for [`QUIET_SAMPLES`] seconds.
    Quiet,
    /// The limit was reached first.
    Limit,
    /// Ctrl-C.
    Stopped,
    /// PostgreSQL: a `CHECKPOINT` wrote back the dirty buffers.
    Checkpoint,
    /// PostgreSQL: the run's role may not `CHECKPOINT` (why); measured without waiting.
    Refused(String),
    /// MariaDB/MySQL: the server's flushing cannot be watched as this user (why: a server on
    /// another host or not dbperf's, whose user lacks `PROCESS`); measured without waiting.
    Unavailable(String),
}

/// What the wait found at its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Settled {
    /// How it ended.
    pub end: SettleEnd,
    /// Time spent waiting.
    pub waited: Duration,
    /// The last checkpoint age, in percent of its maximum (MariaDB/MySQL).
    pub checkpoint_pct: Option<f64>,
    /// The last dirty pages, in percent of the buffer pool (MariaDB/MySQL).
    pub dirty_pct: Option<f64>,
}

impl Settled {
    /// One line for the run's output.
    pub fn line(&self) -> String {
        let state = state_text(self.checkpoint_pct, self.dirty_pct, None);
        let secs = self.waited.as_secs_f64();
        match &self.end {
            SettleEnd::Low => format!("settle: settled after {secs:.0} s: {state}"),
            SettleEnd::Quiet => format!("settle: the server stopped writing pages after {secs:.0} s: {state}"),
            SettleEnd::Limit => format!(
                "settle: still flushing after {secs:.0} s (the limit): {state}; measuring anyway \
                 (a longer --settle=SECONDS waits longer)"
            ),
            SettleEnd::Stopped => format!("settle: interrupted after {secs:.0} s"),
            SettleEnd::Checkpoint => format!("settle: CHECKPOINT done in {secs:.1} s"),
            SettleEnd::Unavailable(why) => format!(
                "settle: cannot watch the server's flushing ({why}): measuring without waiting; grant the run's \
                 user PROCESS to let it wait, and the run's start state shows what it inherited"
            ),
            SettleEnd::Refused(why) => format!(
                "settle: CHECKPOINT was refused ({why}): measuring without it; grant the role pg_checkpoint \
                 (PostgreSQL 15+) or superuser to the run's user, and the run's start state shows what it inherited"
            ),
        }
    }
}

fn state_text(checkpoint: Option<f64>, dirty: Option<f64>, written: Option<f64>) -> String {
    let mut parts = Vec::new();
    if let Some(c) = checkpoint {
        parts.push(format!("checkpoint age {c:.1}% of max"));
    }
    if let Some(d) = dirty {
        parts.push(format!("dirty pages {d:.1}%"));
    }
    if let Some(w) = written {
        parts.push(format!("writing {w:.0} pages/s"));
    }
    if parts.is_empty() {
        "the server shows no checkpoint age or dirty pages".into()
    } else {
        parts.join(", ")
    }
}

/// What one sample says about the wait: done (and how), or not yet.
fn judge(sample: &ServerSample, quiet: &mut usize) -> Option<SettleEnd> {
    let low = sample.checkpoint_pct.is_none_or(|c| c <= SETTLED_CHECKPOINT_PCT)
        && sample.dirty_pages_pct.is_none_or(|d| d <= SETTLED_DIRTY_PCT);
    if low {
        return Some(SettleEnd::Low);
    }
    match sample.pages_written_s {
        Some(w) if w < 1.0 => *quiet += 1,
        Some(_) => *quiet = 0,
        None => {}
    }
    (*quiet >= QUIET_SAMPLES).then_some(SettleEnd::Quiet)
}

/// Waits up to `limit` for the server behind `target` to settle, printing a progress line
/// every [`PRINT_EVERY`] seconds and the outcome. Ctrl-C (`stop`) ends the wait.
pub fn settle(target: &Target, limit: Duration, stop: &StopSignal) -> anyhow::Result<Settled> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let started = Instant::now();
    let settled = match target.family {
        Family::Postgres => Settled {
            end: rt.block_on(checkpoint(target))?,
            waited: started.elapsed(),
            checkpoint_pct: None,
            dirty_pct: None,
        },
        Family::Mysql => rt.block_on(wait_for_innodb(target, limit, stop, started))?,
    };
    println!("{}", settled.line());
    Ok(settled)
}

/// A `CHECKPOINT`, or why the role may not ask for one (the run goes on: nothing is lost by
/// measuring, and its start state records what it inherited).
async fn checkpoint(target: &Target) -> anyhow::Result<SettleEnd> {
    // On a dbperf sandbox as its superuser: the benchmark role may not CHECKPOINT.
    let admin = dbperf_server::admin_target(target);
    let target = admin.as_ref().unwrap_or(target);
    let mut session = PgWireSession::connect(target, IgnoreErrors::Codes(BTreeSet::new())).await?;
    Ok(match session.query("CHECKPOINT").await {
        Ok(_) => SettleEnd::Checkpoint,
        Err(e) => SettleEnd::Refused(e.to_string()),
    })
}

async fn wait_for_innodb(
    target: &Target,
    limit: Duration,
    stop: &StopSignal,
    started: Instant,
) -> anyhow::Result<Settled> {
    let mut sampler = match ServerSampler::connect(target, &ServerTelemetryOptions::default()).await {
        Ok(s) => s,
        // Nothing is lost by measuring: the run's start state records what it inherited.
        Err(e) => {
            return Ok(Settled {
                end: SettleEnd::Unavailable(e.to_string()),
                waited: started.elapsed(),
                checkpoint_pct: None,
                dirty_pct: None,
            })
        }
    };
    let mut quiet = 0;
    let mut next_print = PRINT_EVERY;
    // The session that lowered innodb_max_dirty_pages_pct, and the value it found.
    let mut pushed: Option<(WireSession, String)> = None;
    let result = loop {
        // An error ends the wait too, after the limit is put back below.
        let sample = match sampler.sample().await {
            Ok(sample) => sample,
            Err(e) => break Err(anyhow::Error::from(e)),
        };
        let waited = started.elapsed();
        let settled = |end| Settled {
            end,
            waited,
            checkpoint_pct: sample.checkpoint_pct,
            dirty_pct: sample.dirty_pages_pct,
        };
        match judge(&sample, &mut quiet) {
            Some(SettleEnd::Quiet) if pushed.is_none() => match push_flushing(target).await {
                Ok(p) => {
                    println!(
                        "settle: the server stopped writing pages with {}; lowering innodb_max_dirty_pages_pct \
                         from {} to 0 while waiting, so the page cleaner writes them back",
                        state_text(sample.checkpoint_pct, sample.dirty_pages_pct, None),
                        p.1
                    );
                    pushed = Some(p);
                    quiet = 0;
                }
                Err(e) => {
                    println!("settle: could not lower innodb_max_dirty_pages_pct to flush the rest ({e})");
                    break Ok(settled(SettleEnd::Quiet));
                }
            },
            Some(end) => break Ok(settled(end)),
            None => {}
        }
        if stop.is_stopped() {
            break Ok(settled(SettleEnd::Stopped));
        }
        if waited >= limit {
            break Ok(settled(SettleEnd::Limit));
        }
        if waited.as_secs() >= next_print {
            next_print += PRINT_EVERY;
            println!(
                "settle: waiting for flushing ({:.0} s): {}",
                waited.as_secs_f64(),
                state_text(sample.checkpoint_pct, sample.dirty_pages_pct, sample.pages_written_s)
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    // The sampler enables a flushing counter or two, the wait may have lowered the dirty-page
    // limit: give them back before the run's own telemetry starts.
    let _ = tokio::time::timeout(Duration::from_secs(3), sampler.restore()).await;
    if let Some((mut session, was)) = pushed {
        let put_back = format!("SET GLOBAL innodb_max_dirty_pages_pct = {was}");
        match tokio::time::timeout(Duration::from_secs(10), session.query(&put_back)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => anyhow::bail!("settle: could not put innodb_max_dirty_pages_pct back to {was}: {e}"),
            Err(_) => anyhow::bail!("settle: putting innodb_max_dirty_pages_pct back to {was} timed out"),
        }
    }
    result
}

/// Lowers `innodb_max_dirty_pages_pct` to 0 (the page cleaner then writes every dirty page
/// back), on a session of its own as [`ServerSampler`] logs in; returns the session and the
/// value found, to be put back.
async fn push_flushing(target: &Target) -> anyhow::Result<(WireSession, String)> {
    let admin = dbperf_server::admin_target(target);
    let target = admin.as_ref().unwrap_or(target);
    let mut session = WireSession::connect(target, IgnoreErrors::Codes(BTreeSet::new())).await?;
    let was = session
        .query_rows("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
        .await?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
        .filter(|v| v.parse::<f64>().is_ok())
        .ok_or_else(|| anyhow::anyhow!("the server has no numeric innodb_max_dirty_pages_pct"))?;
    session.query("SET GLOBAL innodb_max_dirty_pages_pct = 0").await?;
    Ok((session, was))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(checkpoint: Option<f64>, dirty: Option<f64>, written: Option<f64>) -> ServerSample {
        ServerSample {
            checkpoint_pct: checkpoint,
            dirty_pages_pct: dirty,
            pages_written_s: written,
            ..ServerSample::default()
        }
    }

    #[test]
    fn low_checkpoint_age_and_dirty_pages_are_settled_at_once() {
        let mut quiet = 0;
        assert_eq!(
            judge(&sample(Some(4.0), Some(1.0), Some(300.0)), &mut quiet),
            Some(SettleEnd::Low)
        );
        // A server without the figures (nothing to wait for) is settled too.
        assert_eq!(judge(&sample(None, None, None), &mut quiet), Some(SettleEnd::Low));
    }

    #[test]
    fn flushing_is_waited_for_until_it_stops_for_three_samples() {
        let mut quiet = 0;
        let busy = sample(Some(60.0), Some(30.0), Some(200.0));
        let idle = sample(Some(40.0), Some(12.0), Some(0.0));
        assert_eq!(judge(&busy, &mut quiet), None);
        assert_eq!(judge(&idle, &mut quiet), None);
        assert_eq!(judge(&idle, &mut quiet), None);
        assert_eq!(judge(&busy, &mut quiet), None, "writing again resets the count");
        assert_eq!(judge(&idle, &mut quiet), None);
        assert_eq!(judge(&idle, &mut quiet), None);
        assert_eq!(judge(&idle, &mut quiet), Some(SettleEnd::Quiet));
        // High dirty pages alone keep the wait going while pages are written.
        let mut quiet = 0;
        assert_eq!(judge(&sample(Some(2.0), Some(20.0), Some(50.0)), &mut quiet), None);
    }

    #[test]
    fn the_outcome_line_says_what_was_found() {
        let s = Settled {
            end: SettleEnd::Limit,
            waited: Duration::from_secs(300),
            checkpoint_pct: Some(55.0),
            dirty_pct: Some(20.5),
        };
        let line = s.line();
        assert!(
            line.contains("300 s") && line.contains("checkpoint age 55.0%") && line.contains("--settle="),
            "{line}"
        );
    }
}
