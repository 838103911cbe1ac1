//! The arithmetic of a merge: the shards' intervals put side by side on the run's shared clock
//! (each shard's `BaseTime` plus the interval's start, agreeing within
//! [`ALIGNMENT_TOLERANCE_S`]), their histograms added tag by tag, their counts and rates
//! summed; the merged intervals' percentiles and the summary's latency blocks computed from
//! the added histograms, so they are those of every request, never an average of the shards'
//! percentiles. The merged interval log is written here too, one interval at a time.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriter, IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

use super::shards::UsableShard;
use super::MergeError;
use crate::hlog::HLOG_FILE;
use crate::interval::{IntervalRecord, Percentiles};
use crate::summary::{ClientUsage, ErrorCounts, QueryCounts, Throughput, TypeBlock, TypeKind};
use crate::{LatencyBlock, Summary};

/// How far apart (seconds) the shards' starts of one interval may be on the wall clock.
pub const ALIGNMENT_TOLERANCE_S: f64 = 0.050;

/// The merged run: its intervals, its interval log and its summary.
#[derive(Debug)]
pub struct Combined {
    /// One line per interval of `intervals.jsonl`.
    pub intervals: Vec<IntervalRecord>,
    /// `intervals.hlog`: each interval's added histograms, tag by tag in the order the shards'
    /// logs first had each tag, with the first merged shard's `BaseTime`.
    pub hlog: Vec<u8>,
    /// `summary.json` (its `run_id` is set when the run directory exists).
    pub summary: Summary,
    /// The measured intervals' histograms added up, by tag (`response:TYPE`, ...): every
    /// measured request of every shard, for the workloads' own result files.
    pub measured: BTreeMap<String, Histogram<u64>>,
}

/// One merged interval: its counts added up, and where its shards keep theirs.
struct Slot {
    record: IntervalRecord,
    /// The first shard that has the interval, the one the others are compared with.
    reference: (u32, f64),
    /// The shards that have it: position in `shards`, and of the interval in that shard's.
    members: Vec<(usize, usize)>,
    /// How many of them found the server unreachable.
    unreachable: usize,
}

/// Merges the intervals and summaries of `shards` (in index order, at least one). The counts
/// of every interval are added up first (a run's intervals are small); the histograms are
/// then decoded, added and written one interval at a time, since those of a long run would
/// not fit in memory together.
pub fn combine(shards: &[UsableShard]) -> Result<Combined, MergeError> {
    let Some(first) = shards.first() else {
        return Err(MergeError::NothingToMerge {
            count: 0,
            left_out: Vec::new(),
        });
    };
    let base_s = first.base_s;
    let mut tag_order: Vec<&str> = Vec::new();
    let mut slots: BTreeMap<u32, Slot> = BTreeMap::new();
    for (n, shard) in shards.iter().enumerate() {
        for (position, interval) in shard.intervals.iter().enumerate() {
            let r = &interval.record;
            let start = shard.base_s + r.start_s;
            let end_s = shard.base_s + r.end_s - base_s;
            let slot = match slots.get_mut(&r.index) {
                Some(slot) => {
                    check_aligned(shard, r, slot, start)?;
                    add_counts(&mut slot.record, r);
                    slot.record.end_s = slot.record.end_s.max(end_s);
                    slot
                }
                None => slots.entry(r.index).or_insert(Slot {
                    record: IntervalRecord {
                        // A shard whose clock is a little ahead of the first one's may start
                        // the first interval a few milliseconds before the run's time zero.
                        start_s: (start - base_s).max(0.0),
                        end_s,
                        ..r.clone()
                    },
                    reference: (shard.shard.index, start),
                    members: Vec::new(),
                    unreachable: 0,
                }),
            };
            slot.members.push((n, position));
            slot.unreachable += usize::from(r.server_unreachable);
            for (tag, _) in &interval.histograms {
                if !tag_order.contains(&tag.as_str()) {
                    tag_order.push(tag);
                }
            }
        }
    }
    let mut hlog = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut log = begin_log(shards, base_s, &mut hlog, &mut serializer)?;
    let mut intervals = Vec::with_capacity(slots.len());
    let mut measured: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    for (_, mut slot) in slots {
        let mut histograms: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
        for &(n, position) in &slot.members {
            let shard = &shards[n];
            for (tag, logged) in &shard.intervals[position].histograms {
                let h = logged
                    .histogram()
                    .map_err(|e| MergeError::Histogram(format!("{}: {e}", shard.dir.join(HLOG_FILE).display())))?;
                add_tagged(&mut histograms, tag, &h)?;
            }
        }
        let response = merge_tags(&histograms, "response:")?;
        let service = merge_tags(&histograms, "service:")?;
        let r = &mut slot.record;
        r.latency_ms = response.as_ref().map(Percentiles::from_histogram).unwrap_or_default();
        r.service_time_ms = service
            .as_ref()
            .map(Percentiles::from_histogram)
            .unwrap_or(r.latency_ms);
        r.server_unreachable = slot.unreachable == slot.members.len();
        let seconds = |s: f64| {
            Duration::try_from_secs_f64(s.max(0.0))
                .map_err(|e| MergeError::Histogram(format!("interval {}: {s} s: {e}", r.index)))
        };
        let (start, length) = (seconds(r.start_s)?, seconds(r.end_s - r.start_s)?);
        for tag in &tag_order {
            let Some(h) = histograms.get(*tag) else {
                continue;
            };
            let written =
                Tag::new(tag).ok_or_else(|| MergeError::Histogram(format!("the tag {tag:?} cannot be written")))?;
            log.write_histogram(h, start, length, Some(written))
                .map_err(|e| MergeError::Histogram(format!("writing {HLOG_FILE}: {e:?}")))?;
            if !r.warmup {
                add_tagged(&mut measured, tag, h)?;
            }
        }
        intervals.push(slot.record);
    }
    drop(log);
    let summary = summary(first, shards, &intervals, &measured)?;
    Ok(Combined {
        intervals,
        hlog,
        summary,
        measured,
    })
}

/// The merged `intervals.hlog`'s header: what it is, and the run's time zero as `StartTime`
/// and `BaseTime`.
fn begin_log<'a, 'b>(
    shards: &[UsableShard],
    base_s: f64,
    bytes: &'a mut Vec<u8>,
    serializer: &'b mut V2DeflateSerializer,
) -> Result<IntervalLogWriter<'a, 'b, Vec<u8>, V2DeflateSerializer>, MergeError> {
    let base = Duration::try_from_secs_f64(base_s)
        .map(|d| SystemTime::UNIX_EPOCH + d)
        .map_err(|e| MergeError::Histogram(format!("{HLOG_FILE}'s base time {base_s}: {e}")))?;
    let indexes: Vec<String> = shards.iter().map(|s| s.shard.index.to_string()).collect();
    let (workload, count) = shards
        .first()
        .map_or(("", 0), |s| (s.manifest.workload.name.as_str(), s.shard.count));
    IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "dbperf {} {workload} latency in microseconds, merged from shards {} of {count}",
            env!("CARGO_PKG_VERSION"),
            indexes.join(","),
        ))
        .with_start_time(base)
        .with_base_time(base)
        .begin_log_with(bytes, serializer)
        .map_err(|e| MergeError::Histogram(format!("writing {HLOG_FILE}: {e}")))
}

/// Refuses a shard whose interval starts more than [`ALIGNMENT_TOLERANCE_S`] away from the
/// first shard's, or is warmup in one and measured in the other.
fn check_aligned(shard: &UsableShard, r: &IntervalRecord, slot: &Slot, start: f64) -> Result<(), MergeError> {
    let (reference, reference_start) = slot.reference;
    let misaligned = |what: String| MergeError::Misaligned {
        dir: shard.dir.clone(),
        index: shard.shard.index,
        interval: r.index,
        what,
    };
    let apart = start - reference_start;
    if apart.abs() > ALIGNMENT_TOLERANCE_S {
        return Err(misaligned(format!(
            "starts at {} on the wall clock, {:.0} ms {} shard {reference}'s ({}), more than the {:.0} ms allowed",
            wall_clock(start),
            apart.abs() * 1000.0,
            if apart > 0.0 { "after" } else { "before" },
            wall_clock(reference_start),
            ALIGNMENT_TOLERANCE_S * 1000.0,
        )));
    }
    if r.warmup != slot.record.warmup {
        let phase = |warmup: bool| if warmup { "warmup" } else { "measured" };
        return Err(misaligned(format!(
            "is {} there and {} in shard {reference}",
            phase(r.warmup),
            phase(slot.record.warmup)
        )));
    }
    Ok(())
}

/// Seconds since the epoch as an RFC 3339 time with milliseconds.
fn wall_clock(s: f64) -> String {
    chrono::DateTime::from_timestamp_millis((s * 1000.0).round() as i64)
        .map_or_else(|| format!("{s:.3} s since the epoch"), crate::manifest::rfc3339_utc)
}

/// Adds the counts and rates of one shard's interval to the merged one.
fn add_counts(to: &mut IntervalRecord, r: &IntervalRecord) {
    to.threads += r.threads;
    to.transactions += r.transactions;
    to.tps += r.tps;
    to.qps += r.qps;
    for (a, b) in to.rwo_per_sec.iter_mut().zip(r.rwo_per_sec) {
        *a += b;
    }
    for (class, n) in &r.errors {
        *to.errors.entry(class.clone()).or_default() += n;
    }
    to.errors_per_sec += r.errors_per_sec;
    to.reconnects_per_sec += r.reconnects_per_sec;
    to.late_starts += r.late_starts;
    to.backlog += r.backlog;
}

/// An empty histogram of the same precision as `h`, which grows to hold what is added.
fn empty_like(h: &Histogram<u64>) -> Histogram<u64> {
    let mut empty = Histogram::new_from(h);
    empty.auto(true);
    empty
}

/// Adds `h` into `sum` (which grows to hold it).
fn add(sum: &mut Histogram<u64>, h: &Histogram<u64>) -> Result<(), MergeError> {
    sum.add(h).map_err(|e| MergeError::Histogram(format!("{e:?}")))
}

/// Adds `h` into the histogram of `tag` in `sums`.
fn add_tagged(sums: &mut BTreeMap<String, Histogram<u64>>, tag: &str, h: &Histogram<u64>) -> Result<(), MergeError> {
    match sums.get_mut(tag) {
        Some(sum) => add(sum, h),
        None => {
            let mut sum = empty_like(h);
            add(&mut sum, h)?;
            sums.insert(tag.to_string(), sum);
            Ok(())
        }
    }
}

/// Every histogram whose tag starts with `prefix`, added up; `None` when there is none.
fn merge_tags(
    histograms: &BTreeMap<String, Histogram<u64>>,
    prefix: &str,
) -> Result<Option<Histogram<u64>>, MergeError> {
    let mut sum: Option<Histogram<u64>> = None;
    for (_, h) in histograms.iter().filter(|(t, _)| t.starts_with(prefix)) {
        add(sum.get_or_insert_with(|| empty_like(h)), h)?;
    }
    Ok(sum)
}

/// `summary.json` of the merged run: counts summed from the shards' summaries, latencies from
/// the measured intervals' added histograms.
fn summary(
    first: &UsableShard,
    shards: &[UsableShard],
    intervals: &[IntervalRecord],
    measured: &BTreeMap<String, Histogram<u64>>,
) -> Result<Summary, MergeError> {
    let sums = shards.iter().map(|s| &s.summary);
    let duration_s = sums.clone().map(|s| s.duration_s).fold(0.0, f64::max);
    let total = |f: fn(&Summary) -> u64| sums.clone().map(f).sum::<u64>();
    let mut errors = BTreeMap::new();
    for s in sums.clone() {
        for (class, n) in &s.errors.by_class {
            *errors.entry(class.clone()).or_insert(0u64) += n;
        }
    }
    let open = sums.clone().any(|s| s.service_time_ms.is_some());
    let block = |tag: &str| measured.get(tag).map(LatencyBlock::from_histogram).unwrap_or_default();
    let response = merge_tags(measured, "response:")?;
    let service = merge_tags(measured, "service:")?;
    let latency_ms = response.as_ref().map(LatencyBlock::from_histogram).unwrap_or_default();
    // Every name a shard's summary had (transactions even when none completed, as a run's own
    // summary has them), and any the logs add.
    let mut kinds: BTreeMap<String, TypeKind> = sums
        .clone()
        .flat_map(|s| s.per_type.iter().map(|(n, b)| (n.clone(), b.kind)))
        .collect();
    for tag in measured.keys() {
        if let Some(name) = tag.strip_prefix("response:") {
            kinds.entry(name.to_string()).or_insert(TypeKind::Transaction);
        } else if let Some(name) = tag.strip_prefix("statement:") {
            kinds.entry(name.to_string()).or_insert(TypeKind::Statement);
        }
    }
    let per_type = kinds
        .into_iter()
        .filter_map(|(name, kind)| {
            let b = match kind {
                TypeKind::Transaction => TypeBlock {
                    kind,
                    count: measured.get(&format!("response:{name}")).map_or(0, Histogram::len),
                    latency_ms: block(&format!("response:{name}")),
                    service_time_ms: open.then(|| block(&format!("service:{name}"))),
                },
                TypeKind::Statement => TypeBlock {
                    kind,
                    count: measured.get(&format!("statement:{name}")).map_or(0, Histogram::len),
                    latency_ms: block(&format!("statement:{name}")),
                    service_time_ms: None,
                },
            };
            (kind == TypeKind::Transaction || b.count > 0).then_some((name, b))
        })
        .collect();
    let measured_intervals: Vec<&IntervalRecord> = intervals.iter().filter(|r| !r.warmup).collect();
    let unreachable_s = measured_intervals
        .iter()
        .filter(|r| r.server_unreachable)
        .fold(0.0, |total, r| total + (r.end_s - r.start_s));
    let client = sums.clone().fold(ClientUsage::default(), |a, s| ClientUsage {
        cpu_s: a.cpu_s + s.client.cpu_s,
        user_s: a.user_s + s.client.user_s,
        sys_s: a.sys_s + s.client.sys_s,
        max_rss_bytes: a.max_rss_bytes.max(s.client.max_rss_bytes),
    });
    let rates: Vec<f64> = sums.clone().filter_map(|s| s.rate).collect();
    Ok(Summary {
        duration_s,
        warmup_s: sums.clone().map(|s| s.warmup_s).fold(0.0, f64::max),
        threads: sums.clone().map(|s| s.threads).sum(),
        rate: (!rates.is_empty()).then(|| rates.iter().sum()),
        transactions: Throughput::new(total(|s| s.transactions.total), duration_s),
        queries: QueryCounts::new(
            total(|s| s.queries.read),
            total(|s| s.queries.write),
            total(|s| s.queries.other),
            duration_s,
        ),
        errors: ErrorCounts::new(errors),
        retries: total(|s| s.retries),
        retried: total(|s| s.retried),
        failed: total(|s| s.failed),
        skipped: total(|s| s.skipped),
        reconnects: total(|s| s.reconnects),
        latency_ms,
        service_time_ms: open.then(|| service.as_ref().map_or(latency_ms, LatencyBlock::from_histogram)),
        late_starts: total(|s| s.late_starts),
        backlog_at_end: total(|s| s.backlog_at_end),
        per_type,
        client,
        interrupted: false,
        intervals: u32::try_from(measured_intervals.len()).unwrap_or(u32::MAX),
        server_unreachable_s: unreachable_s,
        server_unreachable_at_end: measured_intervals.last().is_some_and(|r| r.server_unreachable),
        server_lost: shards.iter().any(|s| s.summary.server_lost),
        ..first.summary.clone()
    })
}
