//! ARCHITECTURE.md's layer table held against the crates' manifests (`cargo metadata`): every
//! workspace crate is in the table with its folder, uses exactly the crates its row lists, and
//! uses (tests included) only crates of lower layers. Shown failing on corrupted copies of the
//! table, so a drift between the page and the code cannot pass unnoticed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One row of the layer table.
#[derive(Debug, Clone)]
struct Row {
    layer: u32,
    folder: String,
    may_use: BTreeSet<String>,
}

/// What `cargo metadata` says of a workspace crate.
#[derive(Debug)]
struct Crate {
    folder: String,
    uses: BTreeSet<String>,
    dev_uses: BTreeSet<String>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The rows of the `## Layers` table: `| layer | crate | folder | may use | owns |`.
fn layer_table(page: &str) -> Result<BTreeMap<String, Row>, String> {
    let section = page
        .split("\n## ")
        .find(|s| s.starts_with("Layers"))
        .ok_or("no `## Layers` section")?;
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let Ok(layer) = cells[0].parse::<u32>() else {
            continue; // the heading and its rule
        };
        if cells.len() < 5 {
            return Err(format!("a row has {} cells, not 5: {line}", cells.len()));
        }
        let name = |c: &str| c.trim().trim_matches('`').to_string();
        let may_use = cells[3].split(',').map(name).filter(|c| !c.is_empty()).collect();
        let row = Row {
            layer,
            folder: name(cells[2]),
            may_use,
        };
        if rows.insert(name(cells[1]), row).is_some() {
            return Err(format!("{} has two rows", name(cells[1])));
        }
    }
    Ok(rows)
}

/// The workspace's crates and the workspace crates each depends on.
fn crates() -> BTreeMap<String, Crate> {
    let root = workspace();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(&root)
        .output()
        .expect("cargo metadata");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: BTreeSet<&str> = packages.iter().map(|p| p["name"].as_str().unwrap()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = |kind: Option<&str>| -> BTreeSet<String> {
                p["dependencies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|d| d["kind"].as_str() == kind)
                    .map(|d| d["name"].as_str().unwrap())
                    .filter(|n| names.contains(n))
                    .map(String::from)
                    .collect()
            };
            let manifest = Path::new(p["manifest_path"].as_str().unwrap());
            let folder = manifest.parent().unwrap().strip_prefix(&root).unwrap();
            (
                p["name"].as_str().unwrap().to_string(),
                Crate {
                    folder: folder.to_string_lossy().into_owned(),
                    uses: deps(None),
                    dev_uses: deps(Some("dev")),
                },
            )
        })
        .collect()
}

/// Every way the table and the manifests disagree, one line each.
fn disagreements(table: &BTreeMap<String, Row>, crates: &BTreeMap<String, Crate>) -> Vec<String> {
    let mut found = Vec::new();
    for name in table.keys().filter(|n| !crates.contains_key(*n)) {
        found.push(format!("{name} is in the table but is no workspace crate"));
    }
    for (name, c) in crates {
        let Some(row) = table.get(name) else {
            found.push(format!("{name} ({}) has no row in the layer table", c.folder));
            continue;
        };
        if row.folder != c.folder {
            found.push(format!("{name} is in {}, the table says {}", c.folder, row.folder));
        }
        for extra in c.uses.difference(&row.may_use) {
            found.push(format!("{name} uses {extra}, which its row does not list"));
        }
        for missing in row.may_use.difference(&c.uses) {
            found.push(format!("{name}'s row lists {missing}, which it does not use"));
        }
        for dep in c.uses.iter().chain(&c.dev_uses) {
            match table.get(dep) {
                Some(d) if d.layer < row.layer => {}
                Some(d) => found.push(format!(
                    "{name} (layer {}) uses {dep} (layer {}): an import that runs up or sideways",
                    row.layer, d.layer
                )),
                None => {}
            }
        }
    }
    found
}

fn page() -> String {
    std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap()
}

#[test]
fn the_layer_table_is_what_the_manifests_say() {
    let table = layer_table(&page()).unwrap();
    let crates = crates();
    assert!(crates.len() >= 12, "{:?}", crates.keys());
    let found = disagreements(&table, &crates);
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md and the crates disagree:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_table_that_drifted_from_the_manifests_is_caught() {
    let page = page();
    let crates = crates();
    // A row that forgot a dependency, one that lists one too many, a layer moved up, a crate missing.
    let dropped = page.replacen(
        "| `dbperf-driver`, `dbperf-engine`, `dbperf-results`, `dbperf-server` |",
        "| `dbperf-driver`, `dbperf-results`, `dbperf-server` |",
        1,
    );
    let found = disagreements(&layer_table(&dropped).unwrap(), &crates);
    assert!(
        found
            .iter()
            .any(|f| f == "dbperf-telemetry uses dbperf-engine, which its row does not list"),
        "{found:?}"
    );
    let moved = page.replacen("| 1 | `dbperf-engine` |", "| 5 | `dbperf-engine` |", 1);
    let found = disagreements(&layer_table(&moved).unwrap(), &crates);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("dbperf-driver (layer 2) uses dbperf-engine (layer 5)")),
        "{found:?}"
    );
    let without: String = page
        .lines()
        .filter(|l| !l.contains("| `dbperf-kube` |"))
        .collect::<Vec<_>>()
        .join("\n");
    let found = disagreements(&layer_table(&without).unwrap(), &crates);
    assert!(
        found
            .iter()
            .any(|f| f.starts_with("dbperf-kube (crates/kube) has no row")),
        "{found:?}"
    );
    let extra = page.replacen(
        "| `crates/kube` | `dbperf-core` |",
        "| `crates/kube` | `dbperf-core`, `dbperf-run` |",
        1,
    );
    let found = disagreements(&layer_table(&extra).unwrap(), &crates);
    assert!(
        found
            .iter()
            .any(|f| f == "dbperf-kube's row lists dbperf-run, which it does not use"),
        "{found:?}"
    );
}
