//! The Kubernetes objects of `dbperf kube job` and `dbperf kube merge-job`, built from a
//! validated plan ([`crate`]) as typed `k8s-openapi` values and written as YAML. This
//! file owns what the manifests say: the Indexed Job's failure policy, the shard arguments
//! Kubernetes expands, the Secret reference, the results volume and the pod spreading.
//!
//! | object | built by |
//! |---|---|
//! | the sharded run: `batch/v1` Job, `completionMode: Indexed` | [`shard_job`] |
//! | the merge of its run directories: a one-pod Job | [`merge_job`] |

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvVar, EnvVarSource, LocalObjectReference, PersistentVolumeClaimVolumeSource,
    PodAffinityTerm, PodAntiAffinity, PodSpec, PodTemplateSpec, ResourceRequirements, SecretKeySelector, Volume,
    VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::{JobPlan, MergePlan, PodPlan, Spread};

/// Where the results volume is mounted in every pod.
pub const RESULTS_MOUNT: &str = "/results";

/// The environment variable Kubernetes sets to the pod's index in an Indexed Job (0 to N-1),
/// written as `$(...)` so that the kubelet substitutes it into the container's arguments.
pub const COMPLETION_INDEX: &str = "$(JOB_COMPLETION_INDEX)";

/// The environment variable every dbperf command reads its target URL from.
const TARGET_ENV: &str = "DBPERF_TARGET";

/// The label every pod and Job of one run carries: the sharded Job's name.
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";

/// The Job that runs `plan.command` as `plan.shards` shards, one pod each.
pub fn shard_job(plan: &JobPlan) -> Job {
    let labels = labels(&plan.name, "shard");
    let mut container = container(&plan.pod, plan.container_args());
    container.command = Some(vec!["dbperf".into()]);
    // The URL with its password stays in the Secret: the pod sees it as an environment
    // variable, which neither the Job's arguments nor the node's process list show.
    container.env = Some(vec![EnvVar {
        name: TARGET_ENV.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: plan.secret.clone(),
                key: plan.secret_key.clone(),
                optional: Some(false),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }]);
    container.resources = resources(plan);
    let mut pod = pod_spec(&plan.pod, container);
    pod.affinity = spread(plan.spread, &labels);
    let shards = i32::try_from(plan.shards).expect("the shard count is bounded by MAX_SHARDS");
    Job {
        metadata: metadata(&plan.name, plan.pod.namespace.as_deref(), &labels),
        spec: Some(JobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(shards),
            parallelism: Some(shards),
            // No shard is ever run twice. A replacement pod would start after the shared
            // start instant, so its users would be missing from the first seconds of the run
            // and its intervals would not line up with the other shards': a retry gives a
            // wrong measurement, not a late right one. `backoffLimitPerIndex: 0` (GA in
            // Kubernetes 1.33) fails just that index and lets the other shards finish; the
            // Job then ends `Failed` and `dbperf merge` names the missing shard. The older
            // `backoffLimit: 0` would instead fail the whole Job at the first failed pod and
            // make Kubernetes kill the healthy shards, losing their results. No
            // `podFailurePolicy` either: its `Ignore` action (for evictions and preemption)
            // would retry a shard, which is exactly what must not happen, and `FailJob` on
            // dbperf's exit 2 (bad arguments) would gain nothing, as every shard gets the same
            // arguments and fails at once anyway. `maxFailedIndexes` stays unset so one lost
            // shard does not stop the others.
            backoff_limit_per_index: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels.clone()),
                    ..Default::default()
                }),
                spec: Some(pod),
            },
            ..Default::default()
        }),
        status: None,
    }
}

/// The one-pod Job that merges the run directories the shards of `plan.name` left on the
/// results volume into one run under `/results/<name>`.
pub fn merge_job(plan: &MergePlan) -> Job {
    let labels = labels(&plan.name, "merge");
    let shard_dirs = format!("{RESULTS_MOUNT}/{}/shard-*/*/", plan.name);
    let mut container = container(&plan.pod, vec!["-c".into(), format!("exec dbperf merge {shard_dirs}")]);
    // A shell expands the glob: the run directories' names (run ids) are known only once the
    // shards have written them.
    container.command = Some(vec!["/bin/sh".into()]);
    container.env = Some(vec![EnvVar {
        name: "DBPERF_RESULTS".into(),
        value: Some(plan.results_root()),
        ..Default::default()
    }]);
    Job {
        metadata: metadata(&plan.job_name(), plan.pod.namespace.as_deref(), &labels),
        spec: Some(JobSpec {
            completions: Some(1),
            parallelism: Some(1),
            // A merge that failed fails the same way again: show the error rather than retry.
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(pod_spec(&plan.pod, container)),
            },
            ..Default::default()
        }),
        status: None,
    }
}

/// The manifest as YAML.
pub fn to_yaml(job: &Job) -> anyhow::Result<String> {
    let mut yaml = serde_norway::to_string(job).map_err(|e| anyhow::anyhow!("writing the Job as YAML: {e}"))?;
    if !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    Ok(yaml)
}

fn labels(name: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "dbperf".to_string()),
        (INSTANCE_LABEL.to_string(), name.to_string()),
        ("app.kubernetes.io/component".to_string(), component.to_string()),
    ])
}

fn metadata(name: &str, namespace: Option<&str>, labels: &BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(labels.clone()),
        ..Default::default()
    }
}

fn container(pod: &PodPlan, args: Vec<String>) -> Container {
    Container {
        name: "dbperf".into(),
        image: Some(pod.image.clone()),
        args: Some(args),
        volume_mounts: Some(vec![VolumeMount {
            name: "results".into(),
            mount_path: RESULTS_MOUNT.into(),
            ..Default::default()
        }]),
        ..Default::default()
    }
}

fn pod_spec(pod: &PodPlan, container: Container) -> PodSpec {
    PodSpec {
        restart_policy: Some("Never".into()),
        containers: vec![container],
        volumes: Some(vec![Volume {
            name: "results".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: pod.results_pvc.clone(),
                read_only: None,
            }),
            ..Default::default()
        }]),
        node_selector: (!pod.node_selector.is_empty()).then(|| pod.node_selector.clone()),
        image_pull_secrets: (!pod.pull_secrets.is_empty()).then(|| {
            pod.pull_secrets
                .iter()
                .map(|name| LocalObjectReference { name: name.clone() })
                .collect()
        }),
        ..Default::default()
    }
}

/// Requests equal to limits: the pod gets the Guaranteed QoS class, which the kubelet's static
/// CPU manager needs to give a whole-CPU client exclusive cores.
fn resources(plan: &JobPlan) -> Option<ResourceRequirements> {
    let mut amounts = BTreeMap::new();
    if let Some(cpu) = &plan.cpu {
        amounts.insert("cpu".to_string(), Quantity(cpu.clone()));
    }
    if let Some(memory) = &plan.memory {
        amounts.insert("memory".to_string(), Quantity(memory.clone()));
    }
    (!amounts.is_empty()).then(|| ResourceRequirements {
        requests: Some(amounts.clone()),
        limits: Some(amounts),
        ..Default::default()
    })
}

/// Keeps the shards on different nodes: a sharded client exists to use several machines.
fn spread(spread: Spread, labels: &BTreeMap<String, String>) -> Option<Affinity> {
    let term = PodAffinityTerm {
        label_selector: Some(LabelSelector {
            match_labels: Some(labels.clone()),
            ..Default::default()
        }),
        topology_key: "kubernetes.io/hostname".into(),
        ..Default::default()
    };
    let anti = match spread {
        Spread::None => return None,
        Spread::Required => PodAntiAffinity {
            required_during_scheduling_ignored_during_execution: Some(vec![term]),
            ..Default::default()
        },
        Spread::Preferred => PodAntiAffinity {
            preferred_during_scheduling_ignored_during_execution: Some(vec![WeightedPodAffinityTerm {
                pod_affinity_term: term,
                weight: 100,
            }]),
            ..Default::default()
        },
    };
    Some(Affinity {
        pod_anti_affinity: Some(anti),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{JobPlan, MergePlan, PodPlan, Spread};
    use chrono::TimeZone as _;

    fn pod() -> PodPlan {
        PodPlan {
            namespace: Some("bench".into()),
            image: "registry.example.com/dbperf:0.1".into(),
            pull_secrets: vec!["registry".into()],
            results_pvc: "results".into(),
            node_selector: BTreeMap::from([("role".into(), "bench".into())]),
        }
    }

    fn plan(spread: Spread) -> JobPlan {
        JobPlan {
            name: "oltp".into(),
            shards: 4,
            start: chrono::Utc.timestamp_opt(1_767_269_100, 0).unwrap(),
            secret: "db".into(),
            secret_key: "url".into(),
            cpu: Some("4".into()),
            memory: None,
            spread,
            pod: pod(),
            command: ["sysbench", "oltp_point_select", "run"].map(String::from).to_vec(),
        }
    }

    /// The manifest as written, read back into the typed Job.
    fn round_trip(job: &Job) -> Job {
        serde_norway::from_str(&to_yaml(job).unwrap()).unwrap()
    }

    #[test]
    fn the_shard_job_is_indexed_and_never_retries_a_shard() {
        let job = round_trip(&shard_job(&plan(Spread::Required)));
        assert_eq!(job.metadata.name.as_deref(), Some("oltp"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("bench"));
        let spec = job.spec.unwrap();
        assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((spec.completions, spec.parallelism), (Some(4), Some(4)));
        assert_eq!(spec.backoff_limit_per_index, Some(0));
        assert_eq!(
            spec.backoff_limit, None,
            "backoffLimit would fail every shard at the first failure"
        );
        assert!(spec.pod_failure_policy.is_none() && spec.max_failed_indexes.is_none());
        let pod = spec.template.spec.unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        let c = &pod.containers[0];
        assert_eq!(c.command.as_deref(), Some(&["dbperf".to_string()][..]));
        let args = c.args.clone().unwrap();
        assert!(
            args.contains(&"--shard=$(JOB_COMPLETION_INDEX)/4".to_string()),
            "{args:?}"
        );
        let limits = c.resources.as_ref().and_then(|r| r.limits.clone()).unwrap();
        assert_eq!(limits["cpu"].0, "4");
        assert_eq!(c.resources.as_ref().and_then(|r| r.requests.clone()).unwrap(), limits);
        assert_eq!(pod.node_selector.unwrap()["role"], "bench");
        assert_eq!(pod.image_pull_secrets.unwrap()[0].name, "registry");
    }

    #[test]
    fn the_target_comes_from_the_secret() {
        let job = shard_job(&plan(Spread::Required));
        let pod = job.spec.unwrap().template.spec.unwrap();
        let env = pod.containers[0].env.clone().unwrap();
        assert_eq!(env.len(), 1);
        assert_eq!(env[0].name, "DBPERF_TARGET");
        assert!(env[0].value.is_none());
        let secret = env[0].value_from.as_ref().unwrap().secret_key_ref.as_ref().unwrap();
        assert_eq!((secret.name.as_str(), secret.key.as_str()), ("db", "url"));
    }

    #[test]
    fn the_results_volume_is_the_claim() {
        let job = shard_job(&plan(Spread::Required));
        let pod = job.spec.unwrap().template.spec.unwrap();
        let volume = &pod.volumes.unwrap()[0];
        assert_eq!(volume.persistent_volume_claim.as_ref().unwrap().claim_name, "results");
        let mount = &pod.containers[0].volume_mounts.as_ref().unwrap()[0];
        assert_eq!(
            (mount.name.as_str(), mount.mount_path.as_str()),
            ("results", RESULTS_MOUNT)
        );
    }

    #[test]
    fn spreading_keeps_shards_of_one_run_apart() {
        let anti = |spread| {
            let pod = shard_job(&plan(spread)).spec.unwrap().template.spec.unwrap();
            pod.affinity.and_then(|a| a.pod_anti_affinity)
        };
        let required = anti(Spread::Required).unwrap();
        let term = &required.required_during_scheduling_ignored_during_execution.unwrap()[0];
        assert_eq!(term.topology_key, "kubernetes.io/hostname");
        let selector = term.label_selector.as_ref().unwrap().match_labels.clone().unwrap();
        assert_eq!(selector[INSTANCE_LABEL], "oltp");
        assert_eq!(selector["app.kubernetes.io/component"], "shard");
        let preferred = anti(Spread::Preferred).unwrap();
        assert!(preferred.required_during_scheduling_ignored_during_execution.is_none());
        assert_eq!(
            preferred
                .preferred_during_scheduling_ignored_during_execution
                .unwrap()
                .len(),
            1
        );
        assert!(anti(Spread::None).is_none());
    }

    #[test]
    fn the_merge_job_reads_every_shard_directory() {
        let job = round_trip(&merge_job(&MergePlan {
            name: "oltp".into(),
            pod: pod(),
        }));
        assert_eq!(job.metadata.name.as_deref(), Some("oltp-merge"));
        let spec = job.spec.unwrap();
        assert_eq!((spec.completions, spec.backoff_limit), (Some(1), Some(0)));
        let c = &spec.template.spec.unwrap().containers[0];
        assert_eq!(
            c.args.as_deref().unwrap(),
            ["-c", "exec dbperf merge /results/oltp/shard-*/*/"].map(String::from)
        );
        assert_eq!(c.env.as_ref().unwrap()[0].value.as_deref(), Some("/results/oltp"));
    }
}
