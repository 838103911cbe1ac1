//! Every workload on the classic catalog servers (MySQL 5.6.24, MariaDB 10.1.23 with XtraDB,
//! MariaDB 10.2.11), one test per server: sysbench prepare, prewarm and a cleanup that leaves
//! no sbtest table; TPC-C loaded the cheapest way the server offers (bulk execute only where
//! the handshake announces it, 10.2.7 and later; LOAD DATA LOCAL before) with the same rows on
//! every server, a max-mode run and every consistency condition passing; a LinkBench load whose graph is the model's and whose
//! counts match the links before and after a request phase; and on MariaDB 10.1.23 TPC-H SF
//! 0.01 validated against the golden answers, after a TPC-H prepare over TPC-C's `customer`
//! and `orders` was refused (those servers' non-strict sql_mode loaded one into the other
//! silently). A server that is not installed is skipped with a notice, except under CI.

use std::process::Command;

use dbperf::server::testing::TempSandbox;
use dbperf::workloads::linkbench::config::Op;

mod common;
#[path = "support/linkbench_checks.rs"]
mod linkbench_checks;
#[path = "support/tpcc_checks.rs"]
mod tpcc_checks;
#[path = "support/tpch_checks.rs"]
mod tpch_checks;

use common::{available, dbperf, only_run_dir, read_json, run_ok};

/// The same as the other LinkBench tests: the model's per-id checks need ids up to 999.
const MAXID1: i64 = 2001;

/// Rows and the sum of per-row CRC32s (datetime columns aside: they hold the load's time) of
/// `tpcc prepare --warehouses 1` with the default seed; the same on every server and method.
const TPCC_SEED1_CONTENT: [(&str, &str); 4] = [
    ("stock", "100000\t214589167178618"),
    ("customer", "30000\t64011318955816"),
    ("order_line", "300160\t645294037851827"),
    ("history", "30000\t64469183196886"),
];

/// `dbperf WORKLOAD ARGS --target URL`.
fn cmd(sb: &TempSandbox, workload: &str, args: &[&str]) -> Command {
    let mut c = dbperf();
    c.arg(workload).args(args).args(["--target", &sb.url()]);
    c
}

/// Runs `dbperf WORKLOAD ARGS` against the sandbox; its stdout.
fn ok(sb: &TempSandbox, workload: &str, args: &[&str]) -> String {
    String::from_utf8_lossy(&run_ok(&mut cmd(sb, workload, args)).stdout).into_owned()
}

/// `query`'s rows as tab-separated text, as root over the socket.
fn sql(sb: &TempSandbox, query: &str) -> String {
    let out = Command::new("mariadb")
        .arg(format!("--defaults-file={}", sb.admin_cnf().display()))
        .args(["-N", "-B", "-D", "sbtest", "-e", query])
        .output()
        .expect("the mariadb client runs (apt-get install -y mariadb-client)");
    assert!(
        out.status.success(),
        "{query}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

fn sysbench_cleanup_leaves_nothing(sb: &TempSandbox, id: &str) {
    let common = ["--tables", "2", "--table-size", "2000"];
    for step in ["prepare", "prewarm"] {
        let mut args = vec!["oltp_read_write", step];
        args.extend(common);
        run_ok(&mut cmd(sb, "sysbench", &args));
    }
    assert_eq!(sql(sb, "SELECT COUNT(*) FROM sbtest2"), "2000", "{id}");
    run_ok(&mut cmd(
        sb,
        "sysbench",
        &["oltp_read_write", "cleanup", "--tables", "2"],
    ));
    assert_eq!(
        sql(sb, "SHOW TABLES LIKE 'sbtest%'"),
        "",
        "{id}: cleanup left sbtest tables"
    );
}

/// Prepare 1 warehouse (by `method`, as the summary line names it; `--load-method bulk`
/// refused where the server lacks it), a short max-mode run
/// with `--check`, every condition passing, no transaction failing.
fn tpcc_prepare_run_check(sb: &TempSandbox, id: &str, method: &str, results: &std::path::Path) {
    if method != "bulk execute" {
        // The handshake does not announce bulk execute: asking for it is refused up front.
        let out = cmd(sb, "tpcc", &["prepare", "--warehouses", "1", "--load-method", "bulk"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{id}: bulk execute accepted");
        assert!(err.contains("needs MariaDB 10.2.7 or later"), "{id}: {err}");
    }
    let text = ok(sb, "tpcc", &["prepare", "--warehouses", "1", "--threads", "2"]);
    assert!(text.contains(method), "{id} loads by {method}: {text}");
    // The same rows as on every other server, whatever the method: a non-strict sql_mode
    // (5.6, 10.1) would turn a value the table cannot hold into a silent truncation.
    for (table, rows_and_sum) in TPCC_SEED1_CONTENT {
        let cols = sql(
            sb,
            &format!(
                "SELECT GROUP_CONCAT(column_name ORDER BY ordinal_position) FROM information_schema.columns \
                 WHERE table_schema = DATABASE() AND table_name = '{table}' AND data_type <> 'datetime'"
            ),
        );
        let got = sql(
            sb,
            &format!("SELECT COUNT(*), SUM(CRC32(CONCAT_WS('|', {cols}))) FROM {table}"),
        );
        assert_eq!(got, rows_and_sum, "{id}: {table}'s rows");
    }
    let mut run = cmd(
        sb,
        "tpcc",
        &["run", "--warehouses", "1", "--threads", "2", "--time", "3", "--check"],
    );
    let text = String::from_utf8_lossy(&run_ok(run.arg("--results-dir").arg(results)).stdout).into_owned();
    assert!(text.contains("All conditions hold"), "{id}: {text}");
    tpcc_checks::assert_conditions_pass(&text, true);
    let r = read_json(&only_run_dir(results).join("tpcc.json"));
    assert!(r["types"]["new_order"]["count"].as_f64().unwrap() > 0.0, "{id}: {r}");
    assert!(r["types"]["delivery"]["count"].as_f64().unwrap() > 0.0, "{id}: {r}");
    assert!(r["errors"].as_object().unwrap().is_empty(), "{id}: {r}");
}

/// The graph holds the model's nodes and links, counttable agrees with the visible links,
/// and still does after a request phase that wrote some.
fn linkbench_load_request(sb: &TempSandbox, id: &str, results: &std::path::Path) {
    let text = ok(
        sb,
        "linkbench",
        &["load", "--maxid1", &MAXID1.to_string(), "--loaders", "2"],
    );
    assert!(text.contains("LOAD PHASE COMPLETED"), "{id}: {text}");
    let run = |q: &str| sql(sb, q);
    let db = linkbench_checks::Db {
        sql: &run,
        hex: |c| format!("HEX({c})"),
    };
    let m = linkbench_checks::model(MAXID1);
    let links: i64 = (1..MAXID1)
        .map(|i| (0..2).map(|t| m.links.of_type(i, t)).sum::<i64>())
        .sum();
    assert_eq!(db.num("SELECT COUNT(*) FROM nodetable"), MAXID1 - 1, "{id}");
    assert_eq!(db.num("SELECT COUNT(*) FROM linktable"), links, "{id}");
    linkbench_checks::assert_counts_match_links(&db);

    let mut request = cmd(sb, "linkbench", &["request", "--requesters", "2", "--time", "2"]);
    let out = run_ok(request.arg("--results-dir").arg(results));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("REQUEST PHASE COMPLETED"), "{id}: {text}");
    // Requests ran, links among them were written, and none failed.
    let dir = only_run_dir(results);
    let counts = linkbench_checks::op_counts(&dir);
    let written = ["ADD_LINK", "DELETE_LINK", "UPDATE_LINK"]
        .map(|name| counts[Op::ALL.iter().position(|op| op.name() == name).unwrap()]);
    assert!(written.iter().sum::<f64>() > 0.0, "{id}: {counts:?}");
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["errors"]["total"], 0, "{id}: {}", summary["errors"]);
    linkbench_checks::assert_counts_match_links(&db);
}

/// TPC-H over TPC-C's tables is refused (naming TPC-C's cleanup); after that cleanup, SF
/// 0.01 loads with dbgen's row counts, a second TPC-C cleanup keeps TPC-H's tables, and all
/// 22 answers match.
fn tpch_after_tpcc(sb: &TempSandbox, id: &str) {
    let out = cmd(sb, "tpch", &["prepare", "--scale-factor", "0.01"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "{id}: TPC-H loaded over TPC-C's customer and orders"
    );
    assert!(
        err.contains("customer, orders") && err.contains("`dbperf tpcc cleanup`"),
        "{id}: {err}"
    );
    let text = String::from_utf8_lossy(&run_ok(&mut cmd(sb, "tpcc", &["cleanup"])).stderr).into_owned();
    assert!(text.contains("Dropping table 'customer'"), "{id}: {text}");
    let url = sb.url();
    tpch_checks::prepare_sf001(&url, &mut |q| sql(sb, q).parse().unwrap());
    // TPC-C's cleanup now keeps TPC-H's customer and orders, which still answer right.
    let out = run_ok(&mut cmd(sb, "tpcc", &["cleanup"]));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("Keeping table 'customer'"), "{id}: {text}");
    tpch_checks::validate_golden(&url);
}

fn all_workloads(id: &str, tpcc_method: &str, tpch: bool) {
    if !available(id) {
        return;
    }
    let started = std::time::Instant::now();
    let sb = TempSandbox::start_server(
        id,
        &[
            "innodb_buffer_pool_size=256M",
            "local_infile=ON",
            "innodb_log_file_size=128M",
            "innodb_doublewrite=0",
        ],
    )
    .unwrap_or_else(|e| panic!("{id} sandbox: {e}"));
    let tmp = tempfile::tempdir().unwrap();
    // Seconds per step on stderr (`--nocapture`), to keep this file's cost in view.
    let mut t = started;
    let mut lap = |step: &str| {
        eprintln!("{id}: {step} {:.1} s", t.elapsed().as_secs_f64());
        t = std::time::Instant::now();
    };
    lap("start");
    sysbench_cleanup_leaves_nothing(&sb, id);
    lap("sysbench");
    tpcc_prepare_run_check(&sb, id, tpcc_method, &tmp.path().join("tpcc"));
    lap("tpcc");
    if tpch {
        tpch_after_tpcc(&sb, id);
        lap("tpch");
    }
    linkbench_load_request(&sb, id, &tmp.path().join("linkbench"));
    lap("linkbench");
}

#[test]
fn mariadb_10_1_23() {
    all_workloads("mariadb-10.1.23", "LOAD DATA LOCAL", true);
}

#[test]
fn mariadb_10_2_11() {
    all_workloads("mariadb-10.2.11", "bulk execute", false);
}

#[test]
fn mysql_5_6_24() {
    all_workloads("mysql-5.6.24", "LOAD DATA LOCAL", false);
}
