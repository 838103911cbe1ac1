//! LinkBench against a real PostgreSQL 15, as a user runs it: a load checked for
//! consistency (dense node ids, the reference's out-degrees, counttable equal to the visible
//! links, binary payloads intact in `bytea`), then a request run whose per-op counts must fit
//! the configured mix (per-op binomial bounds and a chi-square test), whose statements (from
//! `pg_stat_statements`) are the PostgreSQL dialect's, and after which counttable still
//! equals the visible links and new nodes got ids past the loaded ones; finally a
//! java-compatible load whose tables equal the Java reference's (md5 fingerprints,
//! `support/linkbench_checks.rs`).

use dbperf::workloads::linkbench::config::Op;

#[path = "support/linkbench_checks.rs"]
mod checks;
mod common;
use common::{dbperf, only_run_dir, run_ok};

#[path = "support/pg.rs"]
mod pg;
use pg::TempPg;

const MAXID1: i64 = 2001;

fn num(pg: &TempPg, q: &str) -> i64 {
    let v = pg.psql(q);
    v.trim().parse().unwrap_or_else(|_| panic!("{q} gave {v:?}"))
}

fn linkbench(pg: &TempPg, args: &[&str]) -> std::process::Command {
    let mut c = dbperf();
    c.arg("linkbench").args(args).args(["--target", &pg.url()]);
    c
}

/// The load has the reference's shape and is consistent (`support/linkbench_checks.rs`).
fn assert_loaded_graph(pg: &TempPg) {
    let run = |q: &str| pg.psql(q);
    checks::assert_loaded_graph(
        &checks::Db {
            sql: &run,
            hex: |c| format!("encode({c}, 'hex')"),
        },
        MAXID1,
    );
}

/// counttable equals the visible links.
fn assert_counts_match_links(pg: &TempPg) {
    let run = |q: &str| pg.psql(q);
    checks::assert_counts_match_links(&checks::Db {
        sql: &run,
        hex: |c| format!("encode({c}, 'hex')"),
    });
}

/// Calls of the statements whose text contains every one of `parts` (and none of those
/// written `!part`). pg_stat_statements shows literals as `$n`, as it does parameters.
fn calls(pg: &TempPg, parts: &[&str]) -> f64 {
    let cond: Vec<String> = parts
        .iter()
        .map(|p| match p.strip_prefix('!') {
            Some(p) => format!("query NOT LIKE '%{}%'", p.replace('\'', "''")),
            None => format!("query LIKE '%{}%'", p.replace('\'', "''")),
        })
        .collect();
    num(
        pg,
        &format!(
            "SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements WHERE {}",
            cond.join(" AND ")
        ),
    ) as f64
}

#[test]
fn load_is_consistent_and_requests_follow_the_mix() {
    if !pg::available() {
        return;
    }
    let pg = TempPg::start(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");

    // Bad input is named.
    let out = linkbench(&pg, &["load", "--maxid1", "2001", "--partitions", "4"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not partitioned on PostgreSQL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = run_ok(&mut linkbench(
        &pg,
        &["load", "--maxid1", &MAXID1.to_string(), "--loaders", "2"],
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("LOAD PHASE COMPLETED"), "{text}");
    // Batches went as COPY, not INSERT.
    assert!(
        calls(
            &pg,
            &["COPY linktable (id1, id2, link_type, visibility, data, time, version) FROM STDIN"]
        ) > 0.0
    );
    assert!(calls(&pg, &["COPY nodetable"]) > 0.0 && calls(&pg, &["COPY counttable"]) > 0.0);
    assert_eq!(calls(&pg, &["INSERT INTO linktable"]), 0.0);
    assert_eq!(
        pg.psql(
            "SELECT data_type FROM information_schema.columns WHERE table_name = 'linktable' AND column_name = 'data'"
        ),
        "bytea"
    );
    assert!(pg
        .psql("SELECT indexdef FROM pg_indexes WHERE indexname = 'id1_type'")
        .contains("(id1, link_type, visibility, \"time\", id2, version, data)"));
    assert_loaded_graph(&pg);

    pg.psql("SELECT pg_stat_statements_reset()");
    let requesters = 2u64;
    let per = 4000u64;
    let out = run_ok(
        linkbench(
            &pg,
            &[
                "request",
                "--requesters",
                &requesters.to_string(),
                "--requests-per-requester",
                &per.to_string(),
                "--time",
                "120",
                "--report-interval",
                "1",
                "--seed",
                "424242",
                "--no-telemetry",
            ],
        )
        .arg("--results-dir")
        .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("REQUEST PHASE COMPLETED"), "{text}");
    assert!(text.contains("GET_LINKS_LIST count = "), "{text}");
    let dir = only_run_dir(&results);
    assert!(dir.join("linkbench-csvstats.csv").exists());

    // The op counts fit the mix.
    let counts = checks::op_counts(&dir);
    checks::assert_fits_fb2011(&counts, requesters * per);

    // The PostgreSQL statements, one per op as on MySQL, and a transaction per write op.
    let c = |op: Op| counts[op as usize];
    assert_eq!(
        calls(&pg, &["ON CONFLICT (link_type, id1, id2)", "RETURNING"]),
        c(Op::AddLink) + c(Op::UpdateLink)
    );
    assert_eq!(
        calls(&pg, &["FROM linktable", "ORDER BY time DESC OFFSET"]),
        c(Op::GetLinksList)
    );
    assert_eq!(
        calls(&pg, &["SELECT visibility FROM linktable", "FOR UPDATE"]),
        c(Op::DeleteLink)
    );
    assert_eq!(calls(&pg, &["AND id2 IN ("]), c(Op::MultigetLink));
    assert_eq!(calls(&pg, &["SELECT count FROM counttable"]), c(Op::CountLink));
    assert_eq!(
        calls(&pg, &["SELECT id, type, version, time, data FROM nodetable WHERE id ="]),
        c(Op::GetNode)
    );
    assert_eq!(calls(&pg, &["DELETE FROM nodetable WHERE id ="]), c(Op::DeleteNode));
    assert_eq!(calls(&pg, &["UPDATE nodetable SET version"]), c(Op::UpdateNode));
    let hides = calls(&pg, &["UPDATE linktable SET visibility = $", "!, data"]);
    let decrements = calls(&pg, &["SET count = CASE WHEN counttable.count = $"]);
    assert_eq!(hides, decrements);
    assert!(hides > 0.0 && hides < c(Op::DeleteLink));
    assert!(calls(&pg, &["SET count = counttable.count +"]) > 0.0);
    assert!(calls(&pg, &["UPDATE linktable SET visibility = $1, data"]) > 0.0);
    let writes: f64 = [
        Op::AddLink,
        Op::UpdateLink,
        Op::DeleteLink,
        Op::AddNode,
        Op::UpdateNode,
        Op::DeleteNode,
    ]
    .iter()
    .map(|&o| c(o))
    .sum();
    // Each write op is one transaction, opened by BEGIN (there is no autocommit switch).
    assert_eq!(
        num(
            &pg,
            "SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements WHERE query = 'BEGIN'"
        ) as f64,
        writes
    );
    // (pg_stat_statements counts a prepared COMMIT only once per connection; that the
    // write transactions committed shows in the added nodes below, still there after the
    // requesters disconnected.)

    // Consistent afterwards; new nodes numbered after the loaded ones, all committed.
    assert_counts_match_links(&pg);
    assert!(c(Op::AddNode) > 0.0);
    assert_eq!(
        num(&pg, &format!("SELECT COUNT(*) FROM nodetable WHERE id >= {MAXID1}")) as f64,
        c(Op::AddNode)
    );

    // A java-compatible load (one loader, the reference's seeding) reloads the tables
    // byte for byte as the Java reference loads them on MySQL.
    run_ok(&mut linkbench(&pg, &checks::JAVA_REFERENCE_LOAD));
    let run = |q: &str| pg.psql(q);
    checks::assert_java_reference_load(&checks::Db {
        sql: &run,
        hex: |c| format!("encode({c}, 'hex')"),
    });
}
