//! `dbperf kube job` and `dbperf kube merge-job` print manifests the Kubernetes API schema
//! accepts, checked by PyPI's `kubernetes-validate` (the API's JSON schemas, bundled per
//! Kubernetes version, in strict mode: an unknown field fails). `make deps` installs it into
//! its own virtualenv; the test finds it through `DBPERF_KUBE_VALIDATE`, that virtualenv, or
//! the PATH, and fails under CI when it is missing. The validator is shown to reject
//! corrupted copies of the same manifest, so a pass means something. The YAML examples of
//! `docs/cluster.md` go through it too.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

mod common;
use common::{dbperf, present_or_skip, run_ok};

/// The validator's program (PyPI package kubernetes-validate; version: Makefile KUBE_VALIDATE_VERSION).
const VALIDATOR: &str = "kubernetes-validate";

/// The oldest Kubernetes the manifests are written for (k8s-openapi's `v1_33`: the first with
/// `backoffLimitPerIndex` generally available) and the newest the validator knows.
const VERSIONS: &[&str] = &["1.33.0", "1.37.0"];

/// The validator, or `None` (after a notice) outside CI when it is not installed.
fn validator() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("DBPERF_KUBE_VALIDATE").map(PathBuf::from),
        std::env::var_os("HOME").map(|h| {
            PathBuf::from(h)
                .join(".cache/dbperf/kubernetes-validate/bin")
                .join(VALIDATOR)
        }),
        Some(PathBuf::from(VALIDATOR)),
    ];
    let found = candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    present_or_skip(
        found.is_some(),
        "kubernetes-validate is not installed: run `make deps` (it installs the PyPI package into \
         ~/.cache/dbperf/kubernetes-validate), or set DBPERF_KUBE_VALIDATE to its program",
    )
    .then(|| found.unwrap())
}

/// Validates one YAML document strictly against Kubernetes `version`: Ok if the validator
/// checked a resource and passed it, Err with its output otherwise (a kind it has no schema
/// for is only a warning to it, so "passed" must be in its answer).
fn validate(validator: &PathBuf, yaml: &str, version: &str) -> Result<(), String> {
    let mut child = Command::new(validator)
        .args(["--strict", "--kubernetes-version", version, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the validator starts");
    child.stdin.take().unwrap().write_all(yaml.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && text.contains(" passed for resource ") {
        Ok(())
    } else {
        Err(text)
    }
}

fn assert_valid(validator: &PathBuf, yaml: &str) {
    for version in VERSIONS {
        if let Err(e) = validate(validator, yaml, version) {
            panic!("the manifest is not a valid Kubernetes {version} object:\n{e}\n{yaml}");
        }
    }
}

/// `dbperf kube ARGS...`'s stdout and stderr.
fn kube(args: &[&str]) -> (String, String) {
    let out = run_ok(dbperf().arg("kube").args(args));
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const SHARDED: &[&str] = &[
    "job",
    "--shards",
    "3",
    "--image",
    "registry.example.com/dbperf:0.1",
    "--target-secret",
    "db",
    "--results-pvc",
    "dbperf-results",
    "--",
    "sysbench",
    "oltp_point_select",
    "run",
    "--threads",
    "48",
    "--time",
    "300",
];

#[test]
fn the_sharded_job_is_a_valid_kubernetes_job() {
    let Some(validator) = validator() else { return };
    let (yaml, stderr) = kube(SHARDED);
    assert!(yaml.contains("--shard=$(JOB_COMPLETION_INDEX)/3"), "{yaml}");
    assert!(yaml.contains("completionMode: Indexed"), "{yaml}");
    assert!(stderr.contains("start measuring at"), "{stderr}");
    assert_valid(&validator, &yaml);
}

#[test]
fn every_option_gives_a_valid_job() {
    let Some(validator) = validator() else { return };
    let mut args = vec![
        "job",
        "--name",
        "oltp-48",
        "--namespace",
        "bench",
        "--start-in",
        "10m",
        "--target-secret-key",
        "mysql-url",
        "--cpu",
        "4",
        "--memory",
        "2Gi",
        "--node-selector",
        "role=bench-client",
        "--node-selector",
        "topology.kubernetes.io/zone=eu-1a",
        "--image-pull-secret",
        "registry",
    ];
    args.extend_from_slice(&SHARDED[1..]);
    for spread in ["required", "preferred", "none"] {
        let mut with_spread = args.clone();
        with_spread.splice(1..1, ["--spread", spread]);
        let (yaml, _) = kube(&with_spread);
        assert!(yaml.contains("namespace: bench"), "{yaml}");
        assert_valid(&validator, &yaml);
    }
}

#[test]
fn the_merge_job_is_a_valid_kubernetes_job() {
    let Some(validator) = validator() else { return };
    let (yaml, _) = kube(&[
        "merge-job",
        "--name",
        "oltp-48",
        "--namespace",
        "bench",
        "--image",
        "registry.example.com/dbperf:0.1",
        "--results-pvc",
        "dbperf-results",
    ]);
    assert!(yaml.contains("name: oltp-48-merge"), "{yaml}");
    assert_valid(&validator, &yaml);
}

/// The validator fails a manifest with an unknown field, a wrong type, a missing required
/// field or an unknown kind: the passes above are not the validator passing everything.
#[test]
fn the_validator_rejects_a_corrupted_manifest() {
    let Some(validator) = validator() else { return };
    let (yaml, _) = kube(SHARDED);
    let corrupt = |from: &str, to: &str| -> String {
        assert!(yaml.contains(from), "the manifest has no {from:?} to corrupt:\n{yaml}");
        yaml.replacen(from, to, 1)
    };
    let without_line = |field: &str| -> String {
        assert!(yaml.contains(field), "the manifest has no {field:?} to remove:\n{yaml}");
        yaml.lines()
            .filter(|l| !l.contains(field))
            .map(|l| format!("{l}\n"))
            .collect()
    };
    let cases = [
        (
            "a misspelt field",
            corrupt("backoffLimitPerIndex: 0", "backoffLimitPerIndx: 0"),
        ),
        (
            "an unknown field in the pod",
            corrupt(
                "restartPolicy: Never",
                "restartPolicy: Never\n      restartPolicies: Never",
            ),
        ),
        ("a string for a number", corrupt("parallelism: 3", "parallelism: three")),
        (
            "a list for a string",
            corrupt("restartPolicy: Never", "restartPolicy: [Never]"),
        ),
        ("a missing required field", without_line("topologyKey:")),
        ("an unknown kind", corrupt("kind: Job", "kind: Jobb")),
    ];
    for (what, bad) in cases {
        assert!(
            validate(&validator, &bad, VERSIONS[0]).is_err(),
            "the validator passed a manifest with {what}:\n{bad}"
        );
    }
}

/// The YAML examples of docs/cluster.md are valid objects too.
#[test]
fn the_cluster_docs_yaml_examples_are_valid() {
    let Some(validator) = validator() else { return };
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cluster.md")).unwrap();
    let blocks: Vec<&str> = doc
        .split("```yaml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert!(!blocks.is_empty(), "docs/cluster.md has no ```yaml example");
    for block in blocks {
        assert_valid(&validator, block);
    }
}

/// A password in the user's command is refused before anything is printed, and the message
/// does not repeat it.
#[test]
fn a_password_in_the_command_is_refused_without_printing_it() {
    let mut args: Vec<&str> = SHARDED.to_vec();
    args.push("--target=mysql://sb:S3cret@db:3306/sbtest");
    let out = dbperf().arg("kube").args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        stderr.contains("--target") && stderr.contains("--target-secret"),
        "{stderr}"
    );
    assert!(!stderr.contains("S3cret"), "{stderr}");
}
