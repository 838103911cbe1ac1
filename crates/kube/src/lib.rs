//! `dbperf kube job` and `dbperf kube merge-job`: a run split over several client machines
//! (`--shard I/N --start-at TIME`) as a Kubernetes Indexed Job, and the Job that merges its
//! shards afterwards. This file owns the flags, their validation into a [`JobPlan`] or a
//! [`MergePlan`] (the rules for names and for the user's command are in
//! [`check`]), the shared start time, and the text printed around the manifest:
//! when the shards start and the steps that follow. The objects themselves are built in
//! [`manifest`]; `docs/cluster.md` walks through the whole flow.
//!
//! | step | where |
//! |---|---|
//! | flags → plan | [`JobPlan::new`], [`MergePlan::new`] |
//! | names, labels, quantities; what the user's command may not hold | [`check`] |
//! | the shared start: `--start-at` or `--start-in` | [`start_time`] |
//! | the manifest with its leading comments | [`job_text`], [`merge_text`] |
//! | the Job objects (typed `k8s-openapi`), their failure policy and spreading | [`manifest`] |

pub mod check;
pub mod manifest;

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context as _};
use chrono::{DateTime, SecondsFormat, TimeZone as _, Utc};
use clap::{Args, Subcommand, ValueEnum};

use check::{check_command, check_image, dns_label, dns_subdomain, node_selector, quantity, secret_key, MAX_LABEL};
use manifest::{COMPLETION_INDEX, RESULTS_MOUNT};

/// The most shards of one Job: Kubernetes refuses more completions for an Indexed Job with a
/// per-index backoff limit.
pub use dbperf_core::bounds::MAX_SHARDS;

/// How long after generation the shards start measuring when `--start-at` is not given.
const DEFAULT_START_IN: &str = "5m";

/// A start closer than this to the generation time gets a warning.
const SHORT_NOTICE_SECS: i64 = 60;

/// Appended to the sharded Job's name to name its merge Job.
const MERGE_SUFFIX: &str = "-merge";

/// `dbperf kube ...`: Kubernetes manifests for a sharded run.
#[derive(Debug, Args)]
pub struct KubeArgs {
    #[command(subcommand)]
    pub command: KubeCommand,
}

#[derive(Debug, Subcommand)]
pub enum KubeCommand {
    /// Print an Indexed Job (YAML) running a measuring command as N shards, one pod each, all
    /// starting to measure at one instant: `dbperf kube job --shards 3 --image IMAGE --target-secret SECRET
    /// --results-pvc PVC -- sysbench oltp_point_select run --threads 48 --time 300 | kubectl apply -f -`
    Job(Box<JobArgs>),
    /// Print the one-pod Job (YAML) that merges the shards' run directories once the Job of
    /// `dbperf kube job` has finished: `dbperf kube merge-job --name NAME --image IMAGE --results-pvc PVC | kubectl apply -f -`
    MergeJob(Box<MergeJobArgs>),
}

/// What both Jobs share: where their pods run and where the results go.
#[derive(Debug, Args)]
pub struct PodArgs {
    /// Namespace of the Job (default: kubectl's current namespace).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Container image with `dbperf` on its PATH (and /bin/sh, for merge-job), e.g. registry.example.com/dbperf:0.1.
    #[arg(long)]
    pub image: String,
    /// A Secret to pull the image with (kubectl create secret docker-registry ...); repeatable.
    #[arg(long, value_name = "SECRET")]
    pub image_pull_secret: Vec<String>,
    /// The PersistentVolumeClaim (ReadWriteMany) mounted at /results in every pod: shard I writes
    /// its run directory under /results/NAME/shard-I, the merge under /results/NAME.
    //
    // Required, with no emptyDir fallback: an emptyDir lives only as long as its pod, and a
    // finished pod's files cannot be fetched either (`kubectl cp` runs tar in a running
    // container), so every shard's results would be lost. Each shard has its own results root
    // (its own catalog.sqlite): SQLite's locking is not to be trusted on network file systems.
    #[arg(long, value_name = "PVC")]
    pub results_pvc: String,
    /// Run the pods only on nodes with this label, e.g. role=bench-client; repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
}

/// `dbperf kube job`'s flags.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// Number of shards (pods), N: shard I of 0..N-1 runs its share of the users.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=MAX_SHARDS as i64))]
    pub shards: u32,
    /// Name of the Job, a DNS-1123 label (default: dbperf-<start time>, e.g. dbperf-20260101-120000).
    #[arg(long)]
    pub name: Option<String>,
    /// When every shard starts measuring: a Unix time in seconds or an RFC 3339 timestamp
    /// (e.g. 2026-01-01T12:00:00Z). Apply the Job early enough for every pod to be running by then.
    #[arg(long, value_name = "TIME", conflicts_with = "start_in")]
    pub start_at: Option<String>,
    /// When every shard starts measuring, counted from now, e.g. 5m, 90s [default: 5m].
    #[arg(long, value_name = "DURATION")]
    pub start_in: Option<String>,
    /// The Secret holding the target URL (mysql://USER:PASS@HOST:PORT/DB or postgres://...),
    /// handed to dbperf as DBPERF_TARGET.
    #[arg(long, value_name = "SECRET")]
    pub target_secret: String,
    /// The key of the URL in --target-secret.
    #[arg(long, value_name = "KEY", default_value = "url")]
    pub target_secret_key: String,
    /// CPU of each shard's pod, request and limit (a Kubernetes quantity: 4, 500m).
    #[arg(long, value_name = "QUANTITY")]
    pub cpu: Option<String>,
    /// Memory of each shard's pod, request and limit (a Kubernetes quantity: 2Gi, 512Mi).
    #[arg(long, value_name = "QUANTITY")]
    pub memory: Option<String>,
    /// Keep the shards on different nodes: required (a shard waits, Pending, until a node is
    /// free of the others), preferred (shards share nodes when there are too few), or none.
    #[arg(long, value_enum, default_value = "required")]
    pub spread: Spread,
    #[command(flatten)]
    pub pod: PodArgs,
    /// The measuring command each shard runs, after `--`: sysbench TEST run, tpcc run,
    /// linkbench request, pgbench ..., lua SCRIPT run or tpch throughput, with its flags but without --target,
    /// --shard, --start-at or --results-dir (the Job sets those).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `dbperf kube merge-job`'s flags.
#[derive(Debug, Args)]
pub struct MergeJobArgs {
    /// Name of the sharded Job (from `dbperf kube job`) whose shards to merge.
    #[arg(long)]
    pub name: String,
    #[command(flatten)]
    pub pod: PodArgs,
}

/// How the shards' pods are kept apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Spread {
    /// On different nodes, or not at all.
    Required,
    /// On different nodes where the cluster has enough.
    Preferred,
    /// Wherever the scheduler puts them.
    None,
}

/// Where the pods of either Job run, validated.
#[derive(Debug, Clone)]
pub struct PodPlan {
    pub namespace: Option<String>,
    pub image: String,
    pub pull_secrets: Vec<String>,
    pub results_pvc: String,
    pub node_selector: BTreeMap<String, String>,
}

impl PodPlan {
    fn new(args: &PodArgs) -> anyhow::Result<PodPlan> {
        if let Some(ns) = &args.namespace {
            dns_label("--namespace", ns)?;
        }
        check_image(&args.image)?;
        for secret in &args.image_pull_secret {
            dns_subdomain("--image-pull-secret", secret)?;
        }
        dns_subdomain("--results-pvc", &args.results_pvc)?;
        let mut selector = BTreeMap::new();
        for pair in &args.node_selector {
            let (key, value) = node_selector(pair)?;
            if selector.insert(key.clone(), value).is_some() {
                bail!("--node-selector: {key} is given twice; give each label key once");
            }
        }
        Ok(PodPlan {
            namespace: args.namespace.clone(),
            image: args.image.clone(),
            pull_secrets: args.image_pull_secret.clone(),
            results_pvc: args.results_pvc.clone(),
            node_selector: selector,
        })
    }

    /// The flags that give the same pods to `dbperf kube merge-job`, for the printed command.
    fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(ns) = &self.namespace {
            flags.extend(["--namespace".into(), ns.clone()]);
        }
        flags.extend(["--image".into(), self.image.clone()]);
        for secret in &self.pull_secrets {
            flags.extend(["--image-pull-secret".into(), secret.clone()]);
        }
        flags.extend(["--results-pvc".into(), self.results_pvc.clone()]);
        for (key, value) in &self.node_selector {
            flags.extend(["--node-selector".into(), format!("{key}={value}")]);
        }
        flags
    }

    /// `kubectl`, with `-n NAMESPACE` when one was given.
    fn kubectl(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("kubectl -n {ns}"),
            None => "kubectl".into(),
        }
    }
}

/// A sharded run, validated: everything the Job manifest says.
#[derive(Debug, Clone)]
pub struct JobPlan {
    pub name: String,
    pub shards: u32,
    /// When every shard starts measuring.
    pub start: DateTime<Utc>,
    pub secret: String,
    pub secret_key: String,
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub spread: Spread,
    pub pod: PodPlan,
    /// The user's command as given (the words after `--`).
    pub command: Vec<String>,
}

impl JobPlan {
    /// Validates `args`; `command` is the user's command as typed (clap's copy has its `_`s
    /// turned into `-`s), `now` the generation time.
    pub fn new(args: &JobArgs, command: &[String], now: DateTime<Utc>) -> anyhow::Result<JobPlan> {
        let start = start_time(args.start_at.as_deref(), args.start_in.as_deref(), now)?;
        let name = match &args.name {
            Some(name) => name.clone(),
            None => format!("dbperf-{}", start.format("%Y%m%d-%H%M%S")),
        };
        dns_label("--name", &name)?;
        check_name_room(&name, args.shards)?;
        dns_subdomain("--target-secret", &args.target_secret)?;
        secret_key(&args.target_secret_key)?;
        if let Some(cpu) = &args.cpu {
            quantity("--cpu", cpu)?;
        }
        if let Some(memory) = &args.memory {
            quantity("--memory", memory)?;
        }
        check_command(command)?;
        Ok(JobPlan {
            name,
            shards: args.shards,
            start,
            secret: args.target_secret.clone(),
            secret_key: args.target_secret_key.clone(),
            cpu: args.cpu.clone(),
            memory: args.memory.clone(),
            spread: args.spread,
            pod: PodPlan::new(&args.pod)?,
            command: command.to_vec(),
        })
    }

    /// The start instant as every shard is given it: RFC 3339 in UTC.
    pub fn start_text(&self) -> String {
        self.start.to_rfc3339_opts(SecondsFormat::AutoSi, true)
    }

    /// Shard I's results directory, with I left for Kubernetes to fill in.
    pub fn results_dir(&self) -> String {
        format!("{RESULTS_MOUNT}/{}/shard-{COMPLETION_INDEX}", self.name)
    }

    /// The arguments of `dbperf` in every pod: the user's command, then the flags that make
    /// it one shard. The kubelet replaces `$(JOB_COMPLETION_INDEX)` with the pod's index; a
    /// `$` of the user's own is doubled, so it reaches dbperf as typed.
    pub fn container_args(&self) -> Vec<String> {
        let mut args: Vec<String> = self.command.iter().map(|a| a.replace('$', "$$")).collect();
        args.push(format!("--shard={COMPLETION_INDEX}/{}", self.shards));
        args.push(format!("--start-at={}", self.start_text()));
        args.push(format!("--results-dir={}", self.results_dir()));
        args
    }

    /// The plan of the Job that merges this run's shards.
    pub fn merge(&self) -> MergePlan {
        MergePlan {
            name: self.name.clone(),
            pod: self.pod.clone(),
        }
    }
}

/// The merge of a finished sharded run, validated.
#[derive(Debug, Clone)]
pub struct MergePlan {
    /// The sharded Job's name.
    pub name: String,
    pub pod: PodPlan,
}

impl MergePlan {
    pub fn new(args: &MergeJobArgs) -> anyhow::Result<MergePlan> {
        dns_label("--name", &args.name)?;
        if args.name.len() + MERGE_SUFFIX.len() > MAX_LABEL {
            bail!(
                "--name {}: the merge Job is called NAME{MERGE_SUFFIX}, which must fit in {MAX_LABEL} characters; \
                 the sharded Job's name has at most {}",
                args.name,
                MAX_LABEL - MERGE_SUFFIX.len()
            );
        }
        Ok(MergePlan {
            name: args.name.clone(),
            pod: PodPlan::new(&args.pod)?,
        })
    }

    /// The merge Job's own name.
    pub fn job_name(&self) -> String {
        format!("{}{MERGE_SUFFIX}", self.name)
    }

    /// Where the merged run goes: the directory above the shards' directories.
    pub fn results_root(&self) -> String {
        format!("{RESULTS_MOUNT}/{}", self.name)
    }
}

/// Runs `dbperf kube ...`: prints the manifest on stdout, the start time on stderr. `argv` is
/// the process's arguments as typed.
pub fn run(args: KubeArgs, argv: &[String]) -> anyhow::Result<ExitCode> {
    match args.command {
        KubeCommand::Job(a) => {
            // The words after `--` as typed: clap's copy went through `normalize`.
            let command = &argv[argv.len().saturating_sub(a.command.len())..];
            let now = Utc::now();
            let plan = JobPlan::new(&a, command, now)?;
            print!("{}", job_text(&plan, now)?);
            eprintln!(
                "dbperf kube job: the {} shards of {} start measuring at {} ({}): apply the Job before then. \
                 The merge step is in the comments at the top of the manifest.",
                plan.shards,
                plan.name,
                plan.start_text(),
                from_now(plan.start, now)
            );
            if plan.start - now < chrono::Duration::seconds(SHORT_NOTICE_SECS) {
                eprintln!(
                    "warning: that leaves under {SHORT_NOTICE_SECS} s to schedule the pods and pull the image; a shard \
                     that is not running by then misses the start (give --start-in 5m or a later --start-at)"
                );
            }
        }
        KubeCommand::MergeJob(a) => print!("{}", merge_text(&MergePlan::new(&a)?)?),
    }
    Ok(ExitCode::SUCCESS)
}

/// The sharded Job's manifest, after comments that say when the shards start and what to run
/// once they have finished.
pub fn job_text(plan: &JobPlan, now: DateTime<Utc>) -> anyhow::Result<String> {
    let job = manifest::to_yaml(&manifest::shard_job(plan))?;
    let kubectl = plan.pod.kubectl();
    let name = &plan.name;
    let merge = plan.merge();
    let mut merge_cmd = vec!["dbperf".to_string(), "kube".into(), "merge-job".into(), "--name".into()];
    merge_cmd.push(name.clone());
    merge_cmd.extend(plan.pod.flags());
    let shard_flags = &plan.container_args()[plan.command.len()..];
    let spread = match plan.spread {
        Spread::Required => "each on its own node (--spread required: a shard stays Pending while no node is free)",
        Spread::Preferred => "on different nodes where there are enough (--spread preferred)",
        Spread::None => "wherever the scheduler puts them (--spread none)",
    };
    let text = format!(
        "\
# dbperf kube job: {shards} shards of
#   dbperf {command}
# each with {shard_flags}
# {spread}.
# The target URL comes from Secret {secret}, key {key}, as DBPERF_TARGET.
#
# Every shard starts measuring at {start} ({from_now} after this was generated).
# Apply the Job before then, leaving time to pull the image and start the pods:
#   dbperf kube job ... | kubectl apply -f -
#   {kubectl} get pods -l app.kubernetes.io/instance={name} -w
# A failed shard is not retried (it would miss the shared start); the other shards go on.
#
# Once every shard has finished (the Job shows {shards}/{shards} completions, or Failed):
#   {kubectl} wait --for=condition=complete job/{name} --timeout=24h
#   {merge_cmd} | kubectl apply -f -
#   {kubectl} logs -f job/{merge_job}
# The merged run is then under {root} on PersistentVolumeClaim {pvc};
# docs/cluster.md shows how to copy it out for `dbperf report`.
{job}",
        shards = plan.shards,
        command = shell_words(&plan.command)?,
        shard_flags = shell_words(shard_flags)?,
        secret = plan.secret,
        key = plan.secret_key,
        start = plan.start_text(),
        from_now = in_words(plan.start - now),
        merge_cmd = shell_words(&merge_cmd)?,
        merge_job = merge.job_name(),
        root = merge.results_root(),
        pvc = plan.pod.results_pvc,
    );
    Ok(text)
}

/// The merge Job's manifest, after a comment saying what it does.
pub fn merge_text(plan: &MergePlan) -> anyhow::Result<String> {
    let job = manifest::to_yaml(&manifest::merge_job(plan))?;
    Ok(format!(
        "\
# dbperf kube merge-job: merges the run directories the shards of Job {name} wrote under
# {root}/shard-*/ (PersistentVolumeClaim {pvc}) into one run under {root}.
# Apply it once every shard has finished, then read its output:
#   {kubectl} logs -f job/{merge_job}
{job}",
        name = plan.name,
        root = plan.results_root(),
        pvc = plan.pod.results_pvc,
        kubectl = plan.pod.kubectl(),
        merge_job = plan.job_name(),
    ))
}

/// The shared start: `--start-at` as given, or `--start-in` (default [`DEFAULT_START_IN`])
/// after `now`, rounded up to a whole second. Refused when not after `now`.
pub fn start_time(start_at: Option<&str>, start_in: Option<&str>, now: DateTime<Utc>) -> anyhow::Result<DateTime<Utc>> {
    let (flag, start) = match start_at {
        Some(text) => (format!("--start-at {text}"), parse_start_at(text)?),
        None => {
            let text = start_in.unwrap_or(DEFAULT_START_IN);
            let wait = dbperf_core::bounds::parse_duration(text).map_err(|e| anyhow!("--start-in: {e}"))?;
            if wait.is_zero() {
                bail!("--start-in {text}: the shards need time to start; give a wait such as 5m");
            }
            let wait = chrono::Duration::from_std(wait).map_err(|e| anyhow!("--start-in {text}: {e}"))?;
            let start = now + wait;
            let whole = start.timestamp() + i64::from(start.timestamp_subsec_nanos() > 0);
            let start = Utc
                .timestamp_opt(whole, 0)
                .single()
                .context("--start-in: out of range")?;
            (format!("--start-in {text}"), start)
        }
    };
    if start <= now {
        bail!(
            "{flag}: the start ({}) is not in the future ({} ago); give a later time, or --start-in 5m",
            start.to_rfc3339_opts(SecondsFormat::AutoSi, true),
            in_words(now - start)
        );
    }
    let max = chrono::Duration::seconds(dbperf_core::bounds::MAX_SECS as i64);
    if start - now > max {
        bail!("{flag}: the start is more than {} from now", in_words(max));
    }
    Ok(start)
}

/// A Unix time in seconds or an RFC 3339 timestamp, read as the shards will read it.
fn parse_start_at(text: &str) -> anyhow::Result<DateTime<Utc>> {
    let at = dbperf_core::clock::parse_start_at(text).map_err(anyhow::Error::msg)?;
    Ok(DateTime::<Utc>::from(at))
}

/// Indexed pods are named and host-named NAME-INDEX, and the merge Job NAME-merge: both must
/// still be DNS-1123 labels.
fn check_name_room(name: &str, shards: u32) -> anyhow::Result<()> {
    let index_digits = (shards.saturating_sub(1)).to_string().len();
    let longest = name.len() + 1 + index_digits.max(MERGE_SUFFIX.len() - 1);
    if longest > MAX_LABEL {
        bail!(
            "--name {name}: too long by {} characters: Kubernetes names the shards' pods NAME-INDEX and the merge \
             Job NAME{MERGE_SUFFIX}, which must fit in {MAX_LABEL} characters; shorten the name",
            longest - MAX_LABEL
        );
    }
    Ok(())
}

/// Words as a shell command line, each quoted where the shell would split or expand it.
fn shell_words(words: &[String]) -> anyhow::Result<String> {
    let quoted: Result<Vec<_>, _> = words.iter().map(|w| shlex::try_quote(w)).collect();
    Ok(quoted.map_err(|e| anyhow!("quoting the command: {e}"))?.join(" "))
}

/// "in 5m 0s" style wording of a duration, for messages.
fn in_words(d: chrono::Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// "in 5m 0s", for the stderr notice.
fn from_now(start: DateTime<Utc>, now: DateTime<Utc>) -> String {
    format!("in {}", in_words(start - now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    /// `dbperf kube`'s subcommands alone, as the binary parses them.
    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        command: KubeCommand,
    }

    /// 2026-01-01T12:00:00.250Z
    fn now() -> DateTime<Utc> {
        Utc.timestamp_opt(1_767_268_800, 250_000_000).unwrap()
    }

    fn job_args(flags: &[&str]) -> JobArgs {
        let argv = ["kube", "job"].iter().chain(flags);
        match Cli::try_parse_from(argv).unwrap().command {
            KubeCommand::Job(a) => *a,
            other => panic!("{other:?}"),
        }
    }

    /// A plan from the usual flags, `extra` added or replacing them.
    fn plan(extra: &[&str]) -> anyhow::Result<JobPlan> {
        let usual = [
            ("--shards", "3"),
            ("--image", "registry.example.com/dbperf:0.1"),
            ("--target-secret", "db"),
            ("--results-pvc", "results"),
        ];
        let mut flags: Vec<&str> = usual
            .iter()
            .filter(|(flag, _)| !extra.contains(flag))
            .flat_map(|(flag, value)| [*flag, *value])
            .collect();
        flags.extend_from_slice(extra);
        if !extra.contains(&"--") {
            flags.extend(["--", "sysbench", "oltp_point_select", "run", "--threads", "48"]);
        }
        let args = job_args(&flags);
        JobPlan::new(&args, &args.command, now())
    }

    #[test]
    fn every_shard_gets_its_index_the_start_and_its_own_results_dir() {
        let p = plan(&["--name", "oltp"]).unwrap();
        let expected = [
            "sysbench",
            "oltp_point_select",
            "run",
            "--threads",
            "48",
            "--shard=$(JOB_COMPLETION_INDEX)/3",
            "--start-at=2026-01-01T12:05:01Z",
            "--results-dir=/results/oltp/shard-$(JOB_COMPLETION_INDEX)",
        ];
        assert_eq!(p.container_args(), expected.map(String::from));
    }

    #[test]
    fn a_dollar_of_the_user_reaches_dbperf_as_typed() {
        let p = plan(&["--", "lua", "x.lua", "run", "--tag=$(HOME)", "--cost=5$"]).unwrap();
        let args = p.container_args();
        // The kubelet turns `$$` into `$` and never expands an escaped reference.
        assert_eq!(args[3], "--tag=$$(HOME)");
        assert_eq!(args[4], "--cost=5$$");
        assert_eq!(args[5], "--shard=$(JOB_COMPLETION_INDEX)/3");
    }

    #[test]
    fn start_in_counts_from_now_and_rounds_up_to_a_second() {
        let start = start_time(None, None, now()).unwrap();
        assert_eq!(start.to_rfc3339(), "2026-01-01T12:05:01+00:00");
        let start = start_time(None, Some("90s"), now()).unwrap();
        assert_eq!(start.timestamp(), 1_767_268_800 + 91);
        let whole = Utc.timestamp_opt(1_767_268_800, 0).unwrap();
        assert_eq!(start_time(None, Some("2m"), whole).unwrap().timestamp(), 1_767_268_920);
        for (bad, says) in [
            ("0", "need time"),
            ("0s", "need time"),
            ("soon", "--start-in"),
            ("87601h", "--start-in"),
            ("11000d", "--start-in"),
        ] {
            let e = start_time(None, Some(bad), now()).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn start_at_takes_unix_seconds_and_rfc3339_in_any_zone() {
        let t = start_time(Some("1767272400"), None, now()).unwrap();
        assert_eq!(t.to_rfc3339_opts(SecondsFormat::AutoSi, true), "2026-01-01T13:00:00Z");
        let t = start_time(Some("2026-01-01T14:00:00+01:00"), None, now()).unwrap();
        assert_eq!(t.timestamp(), 1_767_272_400);
        let p = plan(&["--start-at", "2026-01-01T13:00:00.5+00:00"]).unwrap();
        assert_eq!(p.start_text(), "2026-01-01T13:00:00.500Z");
        for bad in ["tomorrow", "", "-5", "2026-01-01 13:00", "99999999999999999999"] {
            let e = start_time(Some(bad), None, now()).unwrap_err().to_string();
            assert!(e.contains("--start-at") && e.contains("RFC 3339"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn a_start_in_the_past_is_refused() {
        let e = start_time(Some("2026-01-01T11:59:00Z"), None, now())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--start-at") && e.contains("not in the future") && e.contains("1m 0s ago"),
            "{e}"
        );
        assert!(start_time(Some("1767268800"), None, now()).is_err());
        assert!(plan(&["--start-at", "1000"]).is_err());
    }

    #[test]
    fn the_default_name_is_the_start_and_names_are_checked() {
        assert_eq!(plan(&[]).unwrap().name, "dbperf-20260101-120501");
        let e = plan(&["--name", "My_Run"]).unwrap_err().to_string();
        assert!(e.contains("--name") && e.contains("DNS-1123"), "{e}");
        // NAME-merge must fit in 63 characters: 57 for the name.
        plan(&["--name", "x".repeat(57).as_str()]).unwrap();
        let e = plan(&["--name", "x".repeat(58).as_str()]).unwrap_err().to_string();
        assert!(e.contains("too long by 1"), "{e}");
        let e = plan(&["--namespace", "Bench"]).unwrap_err().to_string();
        assert!(e.contains("--namespace"), "{e}");
        let e = plan(&["--target-secret", "db/x"]).unwrap_err().to_string();
        assert!(e.contains("--target-secret"), "{e}");
        let e = plan(&["--cpu", "four"]).unwrap_err().to_string();
        assert!(e.contains("--cpu"), "{e}");
        let e = plan(&["--image", "a b"]).unwrap_err().to_string();
        assert!(e.contains("--image"), "{e}");
        let e = plan(&["--node-selector", "a=1", "--node-selector", "a=2"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("twice"), "{e}");
    }

    #[test]
    fn the_user_command_is_checked() {
        let e = plan(&[
            "--",
            "sysbench",
            "oltp_point_select",
            "run",
            "--target=mysql://sb:S3cret@db/x",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("remove --target") && !e.contains("S3cret"), "{e}");
    }

    #[test]
    fn the_text_says_when_and_what_follows() {
        let p = plan(&["--name", "oltp", "--namespace", "bench"]).unwrap();
        let text = job_text(&p, now()).unwrap();
        assert!(
            text.contains("starts measuring at 2026-01-01T12:05:01Z (5m 0s after"),
            "{text}"
        );
        assert!(
            text.contains(
                "dbperf kube merge-job --name oltp --namespace bench --image registry.example.com/dbperf:0.1 \
                 --results-pvc results | kubectl apply -f -"
            ),
            "{text}"
        );
        assert!(
            text.contains("kubectl -n bench wait --for=condition=complete job/oltp"),
            "{text}"
        );
        // Comments first, then one YAML document.
        let (comments, yaml) = text.split_at(text.find("apiVersion:").unwrap());
        assert!(comments.lines().all(|l| l.starts_with('#')), "{comments}");
        assert!(yaml.ends_with('\n') && !yaml.contains("\n#"), "{yaml}");
    }
}
