//! TPC-C against sandboxed MySQL 8.0 servers from the catalog (8.0.31 and 8.0.15): the load
//! goes by LOAD DATA LOCAL INFILE (MySQL has no bulk execute, and asking for it is refused
//! with the way out), every consistency condition holds after the load and after a max-mode
//! run, and the run's mix is the deck's.

use dbperf::server::testing::TempSandbox;

mod common;
#[path = "support/tpcc_checks.rs"]
mod tpcc_checks;
use common::{available, dbperf, only_run_dir, read_json, run_ok};

fn tpcc(sb: &TempSandbox, args: &[&str]) -> std::process::Command {
    let mut c = dbperf();
    c.arg("tpcc").args(args).args(["--target", &sb.url()]);
    c
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `tpcc check` on 2 warehouses: every condition passes (3.3.2.11 only right after the load).
fn assert_check_passes(sb: &TempSandbox, after_load: bool) {
    let text = stdout(&run_ok(&mut tpcc(sb, &["check", "--warehouses", "2"])));
    tpcc_checks::assert_conditions_pass(&text, !after_load);
}

fn prepare_run_check(id: &str) {
    if !available(id) {
        return;
    }
    let sb = TempSandbox::start_server(id, &["innodb_buffer_pool_size=256M", "local_infile=ON"])
        .unwrap_or_else(|e| panic!("{id} sandbox: {e}"));
    let tmp = tempfile::tempdir().unwrap();

    let out = tpcc(&sb, &["prepare", "--warehouses", "2", "--load-method", "bulk"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "bulk execute on {id}?");
    assert!(
        err.contains("needs MariaDB") && err.contains("--load-method auto"),
        "{err}"
    );

    let out = run_ok(&mut tpcc(&sb, &["prepare", "--warehouses", "2", "--threads", "2"]));
    let text = stdout(&out);
    assert!(text.contains("LOAD DATA"), "{id}: {text}");
    assert_check_passes(&sb, true);

    let results = tmp.path().join("results");
    let out = run_ok(
        tpcc(
            &sb,
            &["run", "--warehouses", "2", "--threads", "4", "--time", "6", "--check"],
        )
        .arg("--results-dir")
        .arg(&results),
    );
    let text = stdout(&out);
    assert!(text.contains("All conditions hold"), "{id}: {text}");
    let r = read_json(&only_run_dir(&results).join("tpcc.json"));
    let counts: Vec<f64> = ["new_order", "payment", "order_status", "delivery", "stock_level"]
        .iter()
        .map(|t| r["types"][t]["count"].as_f64().unwrap())
        .collect();
    let total: f64 = counts.iter().sum();
    assert!(total >= 400.0, "{id}: too few transactions to judge the mix: {r}");
    assert_eq!(r["mix"], "holds", "{id}: {r}");
    assert!(r["errors"].as_object().unwrap().is_empty(), "{id}: {r}");
    assert_check_passes(&sb, false);
}

#[test]
fn mysql_8_0_31() {
    prepare_run_check("mysql-8.0.31");
}

#[test]
fn mysql_8_0_15() {
    prepare_run_check("mysql-8.0.15");
}
