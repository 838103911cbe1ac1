//! The LinkBench graph checks both server families share: a loaded graph has the reference's
//! shape (dense node ids, the distribution's out-degrees split per type with the reference's
//! leftover bug, id2 = id1 + j, payload sizes and byte ranges) and counttable equals the
//! visible links; and a java-compatible load equals the Java reference's tables (md5
//! fingerprints taken from the reference itself, research notes C3). Each test file passes
//! its own SQL runner and hex spelling.

#![allow(dead_code)]

use std::path::Path;

use dbperf::workloads::linkbench::config::{mix_props, Op, Workload};
use dbperf::workloads::linkbench::Model;
use md5::{Digest, Md5};

use super::common::read_json;

/// How a test reaches its server: SQL in, tab-separated rows out, and how the server
/// spells "this bytea/blob column as hex".
pub struct Db<'a> {
    pub sql: &'a dyn Fn(&str) -> String,
    pub hex: fn(&str) -> String,
}

impl Db<'_> {
    pub fn num(&self, q: &str) -> i64 {
        let v = (self.sql)(q);
        v.trim().parse().unwrap_or_else(|_| panic!("{q} gave {v:?}"))
    }
}

/// Per-op counts of a request run (index: `Op as usize`), from its `summary.json`.
pub fn op_counts(dir: &Path) -> [f64; 10] {
    let summary = read_json(&dir.join("summary.json"));
    let mut c = [0.0; 10];
    for op in Op::ALL {
        c[op as usize] = summary["per_type"][op.name()]["count"].as_f64().unwrap_or(0.0);
    }
    c
}

/// The op counts of `total` requests fit the fb2011 mix: each within 4.5 binomial standard
/// deviations, and chi-square over the ten ops below the 0.1% critical value for 9 degrees
/// of freedom.
pub fn assert_fits_fb2011(counts: &[f64; 10], total: u64) {
    let n: f64 = counts.iter().sum();
    assert_eq!(n as u64, total, "{counts:?}");
    let mix = Workload::from_props(&mix_props("fb2011").unwrap()).unwrap().mix;
    let mut chi2 = 0.0;
    for op in Op::ALL {
        let p = mix[op as usize] / 100.0;
        let (obs, exp) = (counts[op as usize], n * p);
        let sd = (n * p * (1.0 - p)).sqrt();
        assert!(
            (obs - exp).abs() <= 4.5 * sd + 1.0,
            "{}: {obs} vs {exp:.0} ± {sd:.1}",
            op.name()
        );
        chi2 += (obs - exp).powi(2) / exp;
    }
    assert!(chi2 < 27.88, "chi-square {chi2:.1} over {counts:?}");
}

/// The fb2011 model of a load of `maxid1`.
pub fn model(maxid1: i64) -> Model {
    let mix = Workload::from_props(&mix_props("fb2011").unwrap()).unwrap();
    Model::new(mix, 1, maxid1).unwrap()
}

/// The load has the reference's shape and is consistent.
pub fn assert_loaded_graph(db: &Db<'_>, maxid1: i64) {
    let m = model(maxid1);
    // Nodes: dense ids 1..maxid1-1.
    assert_eq!(db.num("SELECT COUNT(*) FROM nodetable"), maxid1 - 1);
    assert_eq!(
        (db.sql)("SELECT MIN(id), MAX(id) FROM nodetable"),
        format!("1\t{}", maxid1 - 1)
    );
    // Links: exactly the out-degrees of the distribution file, split per type with the
    // reference's leftover bug (so no id1 has exactly 2 links).
    let expected: i64 = (1..maxid1)
        .map(|id| (0..2).map(|t| m.links.of_type(id, t)).sum::<i64>())
        .sum();
    assert_eq!(db.num("SELECT COUNT(*) FROM linktable"), expected);
    assert_eq!(
        db.num("SELECT COUNT(*) FROM (SELECT id1 FROM linktable GROUP BY id1 HAVING COUNT(*) = 2) t"),
        0
    );
    for id in [1, 17, 999, maxid1 - 1] {
        for t in 0..2 {
            let n = db.num(&format!(
                "SELECT COUNT(*) FROM linktable WHERE id1 = {id} AND link_type = {}",
                123456789 + t
            ));
            assert_eq!(n, m.links.of_type(id, t), "id1 {id} type {t}");
        }
    }
    // id2 = id1 + j for the j-th link: per (id1, type) the id2s are id1 .. id1 + n - 1.
    assert_eq!(
        db.num(
            "SELECT COUNT(*) FROM (SELECT id1, link_type FROM linktable GROUP BY id1, link_type \
             HAVING MIN(id2) <> id1 OR MAX(id2) <> id1 + COUNT(*) - 1) t"
        ),
        0
    );
    assert_counts_match_links(db);
    // Payloads: link sizes log-normal with median 8 below 255, bytes 32..100; node sizes
    // median 128, bytes 50..220.
    let median = |q: &str| -> f64 {
        let mut v: Vec<i64> = (db.sql)(q).lines().map(|l| l.parse().unwrap()).collect();
        v.sort_unstable();
        v[v.len() / 2] as f64
    };
    let link_median = median("SELECT LENGTH(data) FROM linktable");
    assert!((6.0..=10.0).contains(&link_median), "link data median {link_median}");
    let node_median = median("SELECT LENGTH(data) FROM nodetable");
    assert!((110.0..=150.0).contains(&node_median), "node data median {node_median}");
    assert!(db.num("SELECT MAX(LENGTH(data)) FROM linktable") < 255);
    let bytes = |q: &str| -> (u8, u8) {
        let hex = (db.sql)(q).replace('\n', "");
        let b: Vec<u8> = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        (*b.iter().min().unwrap(), *b.iter().max().unwrap())
    };
    let (lo, hi) = bytes(&format!("SELECT {} FROM linktable", (db.hex)("data")));
    assert!(lo >= 32 && hi <= 100, "link bytes {lo}..{hi}");
    let (lo, hi) = bytes(&format!("SELECT {} FROM nodetable WHERE id <= 300", (db.hex)("data")));
    assert!(
        lo >= 50 && hi <= 220 && hi > 127,
        "node bytes {lo}..{hi} (bytes above 127 must survive)"
    );
}

/// counttable holds, for every (id1, type) with links, the number of visible links, and
/// nothing else that is not zero.
pub fn assert_counts_match_links(db: &Db<'_>) {
    let bad = db.num(
        "SELECT COUNT(*) FROM counttable c LEFT JOIN \
         (SELECT id1, link_type, COUNT(*) n FROM linktable WHERE visibility = 1 GROUP BY id1, link_type) l \
         ON l.id1 = c.id AND l.link_type = c.link_type WHERE COALESCE(l.n, 0) <> c.count",
    );
    assert_eq!(bad, 0, "counttable rows disagreeing with the visible links");
    let missing = db.num(
        "SELECT COUNT(*) FROM (SELECT id1, link_type FROM linktable WHERE visibility = 1 GROUP BY id1, link_type) l \
         LEFT JOIN counttable c ON l.id1 = c.id AND l.link_type = c.link_type WHERE c.id IS NULL",
    );
    assert_eq!(missing, 0, "visible links without a counttable row");
}

/// The load the Java reference's fingerprints were taken after (`LinkBenchDriver -l` with
/// `maxid1=100001 loaders=1 load_random_seed=12345`).
pub const JAVA_REFERENCE_LOAD: [&str; 6] = ["load", "--maxid1", "100001", "--java-compatible-rng", "--seed", "12345"];

/// The tables equal the Java reference's after [`JAVA_REFERENCE_LOAD`]: the md5s of
/// `mariadb -N -B -e QUERY | md5sum` against the reference's tables (research notes, C3)
/// equal the md5s of the same queries' output here. Link keys and counts depend only on
/// the distribution file and the shufflers; payloads and node data also on the seed.
pub fn assert_java_reference_load(db: &Db<'_>) {
    let fingerprint = |q: &str| format!("{:x}", Md5::digest(format!("{}\n", (db.sql)(q)).as_bytes()));
    let hex = |c: &str| format!("UPPER({})", (db.hex)(c));
    let checks = [
        (
            "link keys",
            // Ordered by id1 first, as the notes' fingerprint was taken.
            "SELECT id1, link_type, id2 FROM linktable ORDER BY id1, link_type, id2".to_string(),
            "adf9e991d27371e28e1a835a9cc00220",
        ),
        (
            "counttable",
            "SELECT id, link_type, count, version FROM counttable ORDER BY id, link_type".to_string(),
            "c20160900882902b8d354b8d51fd7cfd",
        ),
        (
            "links",
            format!(
                "SELECT id1, link_type, id2, visibility, {}, version FROM linktable ORDER BY link_type, id1, id2",
                hex("data")
            ),
            "a1e8e78059f6a3b54d11b5ffa507a0be",
        ),
        (
            "nodetable",
            format!("SELECT id, type, version, {} FROM nodetable ORDER BY id", hex("data")),
            "57be691e5522394ef2cafb0eacfd329c",
        ),
    ];
    for (what, q, reference) in checks {
        assert_eq!(
            fingerprint(&q),
            reference,
            "{what} differ from the Java reference's: {q}"
        );
    }
}
