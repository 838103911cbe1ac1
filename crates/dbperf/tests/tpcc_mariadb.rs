//! TPC-C against a real sandboxed MariaDB, as a user runs it: prepare, check (passing, failing
//! on corrupted data, refusing missing data), runs in both modes, the statement mix in the
//! general log, the ratios and skew in the data written, a server killed mid-run, an
//! interrupted prepare that resumes (also after SIGKILL at random moments and mid-index-build),
//! a database in tpcc-mysql's schema that dbperf did not load, and tables of the user's that
//! prepare and cleanup leave alone.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dbperf::server::testing::TempSandbox;

mod common;
#[path = "support/tpcc_checks.rs"]
mod tpcc_checks;
use common::{dbperf, kill_after, kill_moments, only_run_dir, read_json, run_ok};

/// The tests take turns: each loads a few hundred thousand rows, and on a 2-core box three
/// servers loading at once would only make each slower and timing-sensitive.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Enough buffer pool and redo that a few warehouses load without thrashing.
fn tpcc_sandbox() -> TempSandbox {
    TempSandbox::start_with(&["innodb_buffer_pool_size=256M", "innodb_log_file_size=128M"])
        .expect("a sandboxed MariaDB starts (apt-get install -y mariadb-server)")
}

fn root_sql(sb: &TempSandbox, sql: &str) -> String {
    try_sql(sb, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Runs SQL as root in `sbtest`: its output, or the client's error.
fn try_sql(sb: &TempSandbox, sql: &str) -> Result<String, String> {
    let out = Command::new("mariadb")
        .arg(format!("--defaults-file={}", sb.admin_cnf().display()))
        .args(["-N", "-B"])
        .args(["-D", "sbtest", "-e", sql])
        .output()
        .expect("mariadb client");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn num(sb: &TempSandbox, sql: &str) -> f64 {
    let v = root_sql(sb, sql);
    v.parse().unwrap_or_else(|_| panic!("{sql} gave {v:?}"))
}

fn tpcc(sb: &TempSandbox, args: &[&str]) -> Command {
    let mut c = dbperf();
    c.arg("tpcc").args(args).args(["--target", &sb.url()]);
    c
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `tpcc check` passes every condition (3.3.2.11 may be skipped after a run).
fn assert_check_passes(sb: &TempSandbox, warehouses: &str) -> String {
    let out = run_ok(&mut tpcc(sb, &["check", "--warehouses", warehouses, "--threads", "2"]));
    let text = stdout(&out);
    tpcc_checks::assert_conditions_pass(&text, true);
    text
}

/// Cards per deck of each type: New-Order, Payment, Order-Status, Delivery, Stock-Level.
const DECK: [f64; 5] = [45.0, 43.0, 4.0, 4.0, 4.0];

/// The mix the decks promise: `terminals` terminals, each dealing whole shuffled decks of 100
/// cards and then one partial deck, complete `counts` of each type within
/// `terminals · c · (1 − c/100)` of `c/100` of the total, for a type of `c` cards (a partial
/// deck is the first cards of a shuffled one: at most that far from its share). `extra`
/// transactions outside the decks (retried attempts, ones cut off at the end) widen it.
fn assert_deck_mix(what: &str, counts: &[f64], terminals: f64, extra: f64) {
    let total: f64 = counts.iter().sum();
    for (i, c) in DECK.iter().enumerate() {
        let slack = terminals * c * (1.0 - c / 100.0) + extra;
        let off = counts[i] - c / 100.0 * total;
        assert!(
            off.abs() <= slack,
            "{what}: type {i} is {off:+.1} off its {c}% of {total}, more than {slack:.1}: {counts:?}"
        );
    }
}

/// The statements of one transaction as the server logged them, and how it ended.
struct LoggedTxn {
    statements: Vec<String>,
    /// The transaction's own ROLLBACK (New-Order's unused item), not an error's.
    rolled_back: bool,
}

/// Splits a MariaDB general log into the complete transactions (BEGIN to COMMIT or
/// ROLLBACK) of each connection. A line is `<time or nothing>\t<id> <Command>\t<argument>`,
/// the time only where it changed (else a second tab). Transactions cut off at the end of the
/// run are left out, and so are those an error ended (the client's text `ROLLBACK`, not the
/// prepared one), which are counted in the second place.
fn logged_transactions(general: &str) -> (Vec<LoggedTxn>, usize) {
    let mut open: std::collections::HashMap<u64, Vec<String>> = Default::default();
    let (mut done, mut aborted) = (Vec::new(), 0);
    for line in general.lines() {
        // The header is the field of exactly two words: a thread id and a command.
        let fields: Vec<&str> = line.split('\t').collect();
        let Some((at, id, command)) = fields.iter().enumerate().find_map(|(i, f)| {
            let mut words = f.split_whitespace();
            let (id, command) = (words.next()?.parse::<u64>().ok()?, words.next()?);
            let is_command = words.next().is_none() && command.chars().all(|c| c.is_ascii_alphabetic());
            is_command.then_some((i, id, command))
        }) else {
            continue;
        };
        let arg = fields[at + 1..].join("\t");
        match (command, arg.trim()) {
            ("Execute", "BEGIN") => {
                open.insert(id, Vec::new());
            }
            ("Execute", end @ ("COMMIT" | "ROLLBACK")) => {
                if let Some(statements) = open.remove(&id) {
                    done.push(LoggedTxn {
                        statements,
                        rolled_back: end == "ROLLBACK",
                    });
                }
            }
            ("Query", "ROLLBACK") => aborted += usize::from(open.remove(&id).is_some()),
            ("Execute", sql) => {
                if let Some(t) = open.get_mut(&id) {
                    t.push(sql.to_string());
                }
            }
            _ => {}
        }
    }
    (done, aborted)
}

/// Each statement `tpcc run` sends, by name and a fragment of its SQL that no other has.
const STATEMENTS: [(&str, &str); 30] = [
    ("no_warehouse", "SELECT w_tax FROM warehouse"),
    ("no_district", "SELECT d_tax, d_next_o_id FROM district"),
    ("no_district_update", "UPDATE district SET d_next_o_id"),
    ("no_customer", "SELECT c_discount, c_last, c_credit FROM customer"),
    ("no_orders", "INSERT INTO orders"),
    ("no_new_order", "INSERT INTO new_order"),
    ("no_item", "SELECT i_price, i_name, i_data FROM item"),
    ("no_stock", "SELECT s_quantity, s_data, s_dist_"),
    ("no_stock_update", "UPDATE stock SET s_quantity"),
    ("no_order_line", "INSERT INTO order_line"),
    ("pay_warehouse_update", "UPDATE warehouse SET w_ytd"),
    ("pay_warehouse", "SELECT w_name, w_street_1"),
    ("pay_district_update", "UPDATE district SET d_ytd"),
    ("pay_district", "SELECT d_name, d_street_1"),
    ("by_name", "SELECT c_id FROM customer"),
    ("pay_customer", "SELECT c_first, c_middle, c_last, c_street_1"),
    ("pay_customer_update", "UPDATE customer SET c_balance = c_balance -"),
    ("pay_history", "INSERT INTO history"),
    (
        "os_customer",
        "SELECT c_balance, c_first, c_middle, c_last FROM customer",
    ),
    ("os_last_order", "ORDER BY o_id DESC LIMIT 1"),
    ("os_lines", "SELECT ol_i_id, ol_supply_w_id, ol_quantity"),
    ("dl_new_order", "SELECT no_o_id FROM new_order"),
    ("dl_new_order_delete", "DELETE FROM new_order"),
    ("dl_orders", "SELECT o_c_id FROM orders"),
    ("dl_orders_update", "UPDATE orders SET o_carrier_id"),
    ("dl_order_line_update", "UPDATE order_line SET ol_delivery_d"),
    ("dl_order_line_sum", "SELECT SUM(ol_amount) FROM order_line"),
    ("dl_customer_update", "UPDATE customer SET c_balance = c_balance +"),
    ("sl_district", "SELECT d_next_o_id FROM district"),
    ("sl_count", "COUNT(DISTINCT s_i_id)"),
];

/// Every complete transaction in the general log does what its profile in clause 2 says,
/// statement by statement, and nothing else; `failed` bounds the transactions an error
/// cut short (retries and errors the run reported).
fn assert_transaction_profiles(general: &str, failed: f64) {
    let (txns, aborted) = logged_transactions(general);
    assert!(
        aborted as f64 <= failed,
        "{aborted} transactions ended by an error, the run reported {failed}"
    );
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    let (mut by_name, mut chosen) = (0, 0);
    for t in &txns {
        let n = |name: &str| {
            let (_, fragment) = STATEMENTS.iter().find(|(k, _)| *k == name).unwrap();
            t.statements.iter().filter(|s| s.contains(fragment)).count()
        };
        let all = t.statements.join("\n");
        let each = |names: &[&'static str], times: usize| -> Vec<(&'static str, usize)> {
            names.iter().map(|k| (*k, times)).collect()
        };
        let (kind, expected): (&str, Vec<(&str, usize)>) = if n("no_warehouse") == 1 {
            // 5 to 15 lines; the unused item ends the transaction at the last one (2.4.2.3).
            let items = n("no_item");
            assert!((5..=15).contains(&items), "New-Order with {items} items:\n{all}");
            let lines = if t.rolled_back {
                assert!(t.statements.last().unwrap().ends_with("i_id = 100001"), "{all}");
                items - 1
            } else {
                let order = t.statements.iter().find(|s| s.contains("INSERT INTO orders")).unwrap();
                assert!(
                    order.contains(&format!("NOW(), {items}, ")),
                    "O_OL_CNT is not {items}: {order}"
                );
                items
            };
            let one = ["no_warehouse", "no_district", "no_district_update", "no_customer"];
            let mut e = each(&one, 1);
            e.extend(each(&["no_orders", "no_new_order"], 1));
            e.extend(each(&["no_stock", "no_stock_update", "no_order_line"], lines));
            e.push(("no_item", items));
            ("New-Order", e)
        } else if n("pay_warehouse_update") == 1 {
            let one = [
                "pay_warehouse_update",
                "pay_warehouse",
                "pay_district_update",
                "pay_district",
            ];
            let mut e = each(&one, 1);
            e.extend(each(&["pay_customer", "pay_customer_update", "pay_history"], 1));
            e.push(("by_name", n("by_name").min(1)));
            ("Payment", e)
        } else if n("os_customer") == 1 {
            let mut e = each(&["os_customer", "os_last_order", "os_lines"], 1);
            e.push(("by_name", n("by_name").min(1)));
            ("Order-Status", e)
        } else if n("dl_new_order") == 10 {
            // Every district with an undelivered order: the same six statements.
            let k = n("dl_new_order_delete");
            let six = [
                "dl_new_order_delete",
                "dl_orders",
                "dl_orders_update",
                "dl_order_line_update",
                "dl_order_line_sum",
                "dl_customer_update",
            ];
            let mut e = each(&["dl_new_order"], 10);
            e.extend(each(&six, k));
            ("Delivery", e)
        } else if n("sl_count") == 1 {
            ("Stock-Level", each(&["sl_district", "sl_count"], 1))
        } else {
            panic!("a transaction of no TPC-C type:\n{all}");
        };
        assert!(!t.rolled_back || kind == "New-Order", "{kind} rolled back:\n{all}");
        for &(name, want) in &expected {
            assert_eq!(n(name), want, "{kind}: {name}:\n{all}");
        }
        let total: usize = expected.iter().map(|(_, c)| c).sum();
        assert_eq!(
            t.statements.len(),
            total,
            "{kind} sent statements of another profile:\n{all}"
        );
        if matches!(kind, "Payment" | "Order-Status") {
            by_name += n("by_name");
            chosen += 1;
        }
        *seen.entry(kind).or_default() += 1;
    }
    eprintln!("logged: {seen:?}, aborted {aborted}, by name {by_name}/{chosen}");
    assert_eq!(seen.len(), 5, "not every type was logged: {seen:?}");
    // Clauses 2.5.1.2 and 2.6.1.2: 60% of customers by last name.
    let share = by_name as f64 / chosen as f64;
    let sigma = (0.6 * 0.4 / chosen as f64).sqrt();
    assert!(
        (share - 0.6).abs() < (4.5 * sigma).max(0.05),
        "{by_name} of {chosen} customers chosen by last name"
    );
}

#[test]
fn prepare_check_runs_mix_and_ratios() {
    let _turn = serial();
    let sb = tpcc_sandbox();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let t0 = Instant::now();
    let out = run_ok(&mut tpcc(&sb, &["prepare", "--warehouses", "2", "--threads", "2"]));
    eprintln!(
        "prepare 2 warehouses: {:.1} s: {}",
        t0.elapsed().as_secs_f64(),
        stdout(&out)
    );
    assert_eq!(num(&sb, "SELECT COUNT(*) FROM stock"), 200_000.0);
    assert_eq!(num(&sb, "SELECT COUNT(*) FROM new_order"), 18_000.0);
    assert!(root_sql(&sb, "SHOW CREATE TABLE customer")
        .contains("KEY `customer_name` (`c_w_id`,`c_d_id`,`c_last`,`c_first`)"));
    // Right after the load every condition holds, 3.3.2.11 included.
    let text = assert_check_passes(&sb, "2");
    assert!(tpcc_checks::condition_line(&text, 11).contains("PASS"), "{text}");

    // Max mode, with the statements of every transaction in the general log.
    // Where the server (not root when dbperf is) may write.
    let log = sb.dir().join("general.log");
    root_sql(
        &sb,
        &format!(
            "SET GLOBAL general_log_file='{}'; SET GLOBAL general_log=ON",
            log.display()
        ),
    );
    let out = run_ok(
        tpcc(
            &sb,
            &[
                "run",
                "--warehouses",
                "2",
                "--threads",
                "4",
                "--time",
                "8",
                "--report-interval",
                "2",
                "--check",
            ],
        )
        .arg("--results-dir")
        .arg(&results),
    );
    root_sql(&sb, "SET GLOBAL general_log=OFF");
    let text = stdout(&out);
    assert!(text.contains("NOTPM"), "{text}");
    assert!(text.contains("All conditions hold"), "{text}");
    let dir = only_run_dir(&results);
    let r = read_json(&dir.join("tpcc.json"));
    let summary = read_json(&dir.join("summary.json"));
    assert_eq!(summary["workload"], "tpcc");
    // 4 connections in closed loop: a blocking thread each.
    let manifest = read_json(&dir.join("manifest.json"));
    assert_eq!(manifest["workload"]["options"]["client_io"], "blocking", "{manifest}");
    let schema_path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/summary.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let errors: Vec<String> = jsonschema::validator_for(&schema)
        .unwrap()
        .iter_errors(&summary)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "summary.json violates the schema: {errors:?}");
    assert!(dir.join("intervals.hlog").exists() && dir.join("telemetry.jsonl").exists());
    let count = |t: &str| r["types"][t]["count"].as_f64().unwrap();
    let counts: Vec<f64> = ["new_order", "payment", "order_status", "delivery", "stock_level"]
        .iter()
        .map(|t| count(t))
        .collect();
    let total: f64 = counts.iter().sum();
    // Past 4 decks' worth a missing 4% type is outside the bound: the check can fail.
    assert!(total > 4.0 * 100.0, "too few transactions to judge the mix: {r}");
    assert_deck_mix("tpcc.json", &counts, 4.0, 0.0);
    assert!(r["notpm"].as_f64().unwrap() > 0.0 && r["tpmc"].is_null());
    assert_eq!(r["mix"], "holds", "{r}");

    // The server's view: one statement that only each transaction type sends.
    let general = std::fs::read_to_string(&log).unwrap();
    let executed = |needle: &str| {
        general
            .lines()
            .filter(|l| l.contains("Execute") && l.contains(needle))
            .count() as f64
    };
    let seen = [
        executed("INSERT INTO orders"),
        executed("INSERT INTO history"),
        executed("ORDER BY o_id DESC LIMIT 1"),
        executed("SELECT no_o_id FROM new_order") / 10.0,
        executed("COUNT(DISTINCT s_i_id)"),
    ];
    let rollbacks = r["rollbacks"].as_f64().unwrap();
    assert!(rollbacks <= counts[0] * 0.04, "{rollbacks} of {}", counts[0]);
    let failed = r["retries"].as_f64().unwrap()
        + r["errors"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum::<f64>();
    // The server ran what the client counted, plus attempts that failed and were retried and
    // at most one transaction per terminal cut off at the end.
    for i in 0..5 {
        assert!(
            seen[i] >= counts[i] && seen[i] <= counts[i] + failed + 4.0,
            "general log, type {i}: {seen:?} against {counts:?}, {failed} failed attempts"
        );
    }
    assert_transaction_profiles(&general, failed);

    // Ratios in the data the max-mode run wrote (its order lines have o_id > 3000; run payments
    // are never exactly the load's 10.00).
    let lines = num(&sb, "SELECT COUNT(*) FROM order_line WHERE ol_o_id > 3000");
    let remote = num(
        &sb,
        "SELECT COUNT(*) FROM order_line WHERE ol_o_id > 3000 AND ol_supply_w_id <> ol_w_id",
    );
    assert!(lines > 3000.0, "{lines}");
    assert!(
        (0.003..0.025).contains(&(remote / lines)),
        "remote supply {remote} of {lines}"
    );
    let pays = num(&sb, "SELECT COUNT(*) FROM history WHERE h_amount <> 10.00");
    let remote_pays = num(
        &sb,
        "SELECT COUNT(*) FROM history WHERE h_amount <> 10.00 AND h_c_w_id <> h_w_id",
    );
    // 15% remote, within 4.5 standard deviations of the binomial (or 6 points, whichever is
    // wider): a false failure about once in 100,000 runs, and never a 0% like sysbench-tpcc's.
    let sigma = (0.15 * 0.85 / pays).sqrt();
    assert!(pays >= 150.0, "too few payments to judge the remote share: {pays}");
    assert!(
        (remote_pays / pays - 0.15).abs() < (4.5 * sigma).max(0.06),
        "remote payments {remote_pays} of {pays}"
    );
    // NURand(8191) sets the low 13 bits of (item - 1 - C) mod 100000 far more often than
    // uniform draws would (about 58% vs 4.6% have 10 or more of them set).
    let manifest = read_json(&dir.join("manifest.json"));
    let c = manifest["seeds"]["ol_i_id"].as_i64().unwrap();
    let hot = num(
        &sb,
        &format!(
            "SELECT AVG(BIT_COUNT(MOD(ol_i_id - 1 - {c} + 200000, 100000) & 8191) >= 10) FROM order_line WHERE ol_o_id > 3000"
        ),
    );
    assert!(hot > 0.3, "NURand skew not visible: {hot}");
    // Spec mode (keying and think times scaled down) on the same data, its terminals
    // sharing event-loop threads.
    let out = run_ok(
        tpcc(
            &sb,
            &[
                "run",
                "--warehouses",
                "2",
                "--client-io",
                "async",
                "--mode",
                "spec",
                "--wait-scale",
                "0.01",
                "--time",
                "5",
                "--report-interval",
                "5",
            ],
        )
        .arg("--results-dir")
        .arg(tmp.path().join("spec")),
    );
    assert!(stdout(&out).contains("20 terminal(s)"), "{}", stdout(&out));

    sharded_run_merges(&sb, tmp.path());
    assert_check_passes(&sb, "2");
}

/// Two shards of one max-mode run, started together as two clients would be, merged by
/// `dbperf merge` into one `tpcc.json`: each type's count is the sum of the shards', the
/// rollbacks too, and each type's p90 that of one histogram of every request in the shards'
/// raw interval logs.
fn sharded_run_merges(sb: &TempSandbox, tmp: &std::path::Path) {
    let run = [
        "run",
        "--warehouses",
        "2",
        "--threads",
        "4",
        "--time",
        "4",
        "--report-interval",
        "1",
    ];
    let shards = common::run_shards(2, &tmp.join("shards"), |_| tpcc(sb, &run));
    let dirs: Vec<std::path::PathBuf> = shards.into_iter().map(|(d, _)| d).collect();
    let (text, merged_dir) = common::merge_ok(&dirs, &tmp.join("merged"));
    assert!(
        text.contains("Merged: tpcc.json") && text.contains("TPC-C results"),
        "{text}"
    );
    let merged = read_json(&merged_dir.join("tpcc.json"));
    let shards: Vec<serde_json::Value> = dirs.iter().map(|d| read_json(&d.join("tpcc.json"))).collect();
    let sum = |f: &dyn Fn(&serde_json::Value) -> u64| shards.iter().map(f).sum::<u64>();
    for t in ["new_order", "payment", "order_status", "delivery", "stock_level"] {
        let count = |r: &serde_json::Value| r["types"][t]["count"].as_u64().unwrap();
        assert_eq!(count(&merged), sum(&count), "{t}: {merged}");
        let mut all = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for d in &dirs {
            all.add(common::measured_histogram(d, 0.0, &format!("response:{t}")))
                .unwrap();
        }
        assert_eq!(all.len(), count(&merged), "{t}: the raw logs hold every request");
        let p90 = all.value_at_quantile(0.9) as f64 / 1000.0;
        assert_eq!(merged["types"][t]["p90_ms"].as_f64().unwrap(), p90, "{t}: {merged}");
    }
    assert_eq!(
        merged["rollbacks"].as_u64().unwrap(),
        sum(&|r| r["rollbacks"].as_u64().unwrap())
    );
    assert!(merged["notpm"].as_f64().unwrap() > 0.0);
    assert_eq!(merged["warehouses"], 2);
}

#[test]
fn consistent_after_the_server_is_killed_mid_run() {
    let _turn = serial();
    let mut sb = tpcc_sandbox();
    let tmp = tempfile::tempdir().unwrap();
    run_ok(&mut tpcc(&sb, &["prepare", "--warehouses", "1", "--threads", "2"]));
    let child = tpcc(
        &sb,
        &[
            "run",
            "--warehouses",
            "1",
            "--threads",
            "4",
            "--time",
            "120",
            "--report-interval",
            "1",
            "--no-telemetry",
        ],
    )
    .arg("--results-dir")
    .arg(tmp.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Let some New-Orders commit, then kill the server without warning.
    let deadline = Instant::now() + Duration::from_secs(60);
    while num(&sb, "SELECT MAX(d_next_o_id) FROM district") < 3050.0 {
        assert!(Instant::now() < deadline, "no New-Order committed");
        std::thread::sleep(Duration::from_millis(200));
    }
    unsafe { libc::kill(sb.pid(), libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(500));
    sb.restart().expect("the sandbox restarts on its datadir");
    // The run reconnects and carries on (New-Orders commit again), however long the crash
    // recovery took; then it is stopped with Ctrl-C.
    let recovered = num(&sb, "SELECT MAX(d_next_o_id) FROM district");
    let deadline = Instant::now() + Duration::from_secs(90);
    while num(&sb, "SELECT MAX(d_next_o_id) FROM district") < recovered + 20.0 {
        assert!(Instant::now() < deadline, "the run did not carry on after the restart");
        std::thread::sleep(Duration::from_millis(200));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let text = stdout(&out);
    // No transaction is half committed.
    assert_eq!(
        out.status.code(),
        Some(130),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = read_json(&only_run_dir(tmp.path()).join("summary.json"));
    assert!(summary["reconnects"].as_u64().unwrap() >= 1, "{summary}");
    assert_check_passes(&sb, "1");
}

/// One connection on two warehouses: with the default fixed home it orders in warehouse 1
/// only; with `--warehouse-choice per-transaction` (the peers' way) in both, and the data
/// stays consistent. Spec mode refuses the per-transaction choice.
#[test]
fn warehouse_choice_per_transaction_spreads_one_connection() {
    let _turn = serial();
    let sb = tpcc_sandbox();
    run_ok(&mut tpcc(&sb, &["prepare", "--warehouses", "2", "--threads", "2"]));
    let next = |w: u32| {
        num(
            &sb,
            &format!("SELECT SUM(d_next_o_id) FROM district WHERE d_w_id = {w}"),
        )
    };
    let run = |choice: &str| {
        let tmp = tempfile::tempdir().unwrap();
        let out = run_ok(
            tpcc(
                &sb,
                &[
                    "run",
                    "--warehouses",
                    "2",
                    "--threads",
                    "1",
                    "--time",
                    "2",
                    "--no-telemetry",
                ],
            )
            .args(["--warehouse-choice", choice])
            .arg("--results-dir")
            .arg(tmp.path()),
        );
        let manifest = read_json(&only_run_dir(tmp.path()).join("manifest.json"));
        assert_eq!(
            manifest["workload"]["options"]["warehouse_choice"],
            choice,
            "{}",
            stdout(&out)
        );
    };
    let before = (next(1), next(2));
    run("fixed");
    let fixed = (next(1), next(2));
    assert!(fixed.0 > before.0, "no New-Order in the home warehouse");
    assert_eq!(fixed.1, before.1, "a fixed-home connection ordered in warehouse 2");
    run("per-transaction");
    let spread = (next(1), next(2));
    assert!(spread.0 > fixed.0 && spread.1 > fixed.1, "{fixed:?} -> {spread:?}");
    assert_check_passes(&sb, "2");
    let out = tpcc(
        &sb,
        &[
            "run",
            "--warehouses",
            "2",
            "--mode",
            "spec",
            "--warehouse-choice",
            "per-transaction",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mode max"));
}

/// A database in tpcc-mysql's schema that dbperf did not load (its bookkeeping tables
/// dropped, as on a database tpcc-mysql's loader filled): runs and checks work on it, and
/// 3.3.2.11 is judged on the load and, once a run has changed the data, skipped with why.
#[test]
fn a_tpcc_mysql_database_runs_and_checks() {
    let _turn = serial();
    let sb = tpcc_sandbox();
    let tmp = tempfile::tempdir().unwrap();
    let with_schema = |args: &[&str]| {
        let mut c = tpcc(&sb, args);
        c.args(["--schema", "tpcc-mysql", "--warehouses", "1"]);
        c
    };
    run_ok(&mut with_schema(&["prepare"]));
    assert_eq!(num(&sb, "SELECT COUNT(*) FROM new_orders"), 9_000.0);
    root_sql(&sb, "DROP TABLE dbperf_tpcc_meta, dbperf_tpcc_loaded");
    let text = stdout(&run_ok(&mut with_schema(&["check"])));
    assert!(text.contains("All conditions hold"), "{text}");
    assert!(tpcc_checks::condition_line(&text, 11).contains("PASS"), "{text}");

    let mut run = with_schema(&["run", "--threads", "2", "--time", "4", "--check"]);
    let text = stdout(&run_ok(run.arg("--results-dir").arg(tmp.path())));
    assert!(text.contains("All conditions hold"), "{text}");
    let line = tpcc_checks::condition_line(&text, 11);
    assert!(
        line.contains("SKIP") && line.contains("dbperf did not load this database"),
        "{line}"
    );
}

/// `tpcc check` on broken data: each corruption fails exactly the conditions it breaks, with
/// exit code 4; an empty or partial database, or a count that is not one, is an error
/// (exit code 1), never a pass.
#[test]
fn check_fails_on_broken_data_and_refuses_missing_data() {
    let _turn = serial();
    let sb = tpcc_sandbox();
    let check = |args: &[&str]| {
        let out = tpcc(&sb, &["check", "--threads", "2"]).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stdout(&out), err)
    };
    let (code, _, err) = check(&[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("run `dbperf tpcc prepare` first"), "{err}");
    run_ok(&mut tpcc(&sb, &["prepare", "--warehouses", "1", "--threads", "2"]));
    assert_check_passes(&sb, "1");

    let fails = |corrupt: &str, restore: &str, failing: &[u32]| {
        root_sql(&sb, corrupt);
        let (code, text, err) = check(&[]);
        assert_eq!(code, Some(4), "{corrupt}: {text}{err}");
        assert!(text.contains("Some conditions FAILED"), "{text}");
        for n in 1..=12 {
            let line = tpcc_checks::condition_line(&text, n);
            let want = if failing.contains(&n) {
                "FAIL (violations by warehouse: w_id 1: 1)"
            } else {
                "PASS"
            };
            assert!(line.contains(want), "{corrupt}: {line}");
        }
        root_sql(&sb, restore);
    };
    fails(
        "UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 1",
        "UPDATE warehouse SET w_ytd = w_ytd - 1 WHERE w_id = 1",
        &[1, 8],
    );
    // A line of order 2500 (undelivered), kept aside to put back.
    let line = "ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id = 2500 AND ol_number = 1";
    fails(
        &format!("CREATE TABLE ol_kept AS SELECT * FROM order_line WHERE {line}; DELETE FROM order_line WHERE {line}"),
        "INSERT INTO order_line SELECT * FROM ol_kept; DROP TABLE ol_kept",
        &[4, 6],
    );
    fails(
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 7",
        "UPDATE district SET d_next_o_id = d_next_o_id - 1 WHERE d_w_id = 1 AND d_id = 7",
        &[2],
    );
    assert_check_passes(&sb, "1");

    // Counts are read strictly: what is not a count is an error naming what was counted.
    let target = dbperf::driver::Target::parse(&sb.url()).unwrap();
    common::block_on(async {
        use dbperf::workloads::tpcc::check::{count, CheckError};
        let mut s = dbperf::workloads::tpcc::prepare::connect(&target).await.unwrap();
        assert_eq!(
            count(&mut s, "SELECT COUNT(*) FROM district", "districts")
                .await
                .unwrap(),
            10
        );
        for sql in [
            "SELECT NULL",
            "SELECT 'none'",
            "SELECT -1",
            "SELECT 1 FROM item WHERE i_id = 0",
        ] {
            match count(&mut s, sql, "the test's count").await {
                Err(e @ CheckError::Unreadable { .. }) => {
                    assert!(
                        e.to_string().starts_with("the test's count: the server answered"),
                        "{e}"
                    )
                }
                other => panic!("{sql}: {other:?}"),
            }
        }
    });

    // Missing rows make conditions compare with nothing: refused, naming the table.
    root_sql(&sb, "DELETE FROM stock WHERE s_w_id = 1 AND s_i_id > 99000");
    let (code, text, err) = check(&[]);
    assert_eq!(code, Some(1), "{text}{err}");
    assert!(
        err.contains("stock in sbtest holds 99000 rows for warehouses 1 to 1, where the load puts 100000"),
        "{err}"
    );
    assert!(!text.contains("PASS"), "{text}");
    root_sql(&sb, "DELETE FROM warehouse");
    let (code, _, err) = check(&[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("sbtest holds no warehouse: there is nothing to check"),
        "{err}"
    );
    let (code, _, err) = check(&["--warehouses", "1"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("sbtest holds 0 of warehouses 1 to 1"), "{err}");
}

#[test]
fn an_interrupted_prepare_resumes() {
    let _turn = serial();
    let sb = tpcc_sandbox();
    let mut child = tpcc(&sb, &["prepare", "--warehouses", "2", "--threads", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // ITEM (unit 0) and warehouse 1 are in; warehouse 2 is loading.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        // The table does not exist until the prepare has created its schema.
        let done = try_sql(&sb, "SELECT COUNT(*) FROM dbperf_tpcc_loaded")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0);
        if done >= 2 {
            break;
        }
        assert!(Instant::now() < deadline, "prepare made no progress");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let done = num(&sb, "SELECT COUNT(*) FROM dbperf_tpcc_loaded");
    assert!(done < 3.0, "prepare finished before it was interrupted");
    // Warehouse 1 is whole, but the load is not finished: check refuses instead of passing.
    let out = tpcc(&sb, &["check", "--warehouses", "1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("has not finished") && err.contains("dbperf tpcc prepare --warehouses 2"),
        "{err}"
    );
    let out = tpcc(&sb, &["prepare", "--warehouses", "2", "--threads", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Resuming"), "{err}");
    assert_eq!(num(&sb, "SELECT COUNT(*) FROM stock"), 200_000.0);
    assert_check_passes(&sb, "2");
    // A different scale is refused, naming the flags to repeat.
    let out = tpcc(&sb, &["prepare", "--warehouses", "3"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--warehouses 2"));
    run_ok(&mut tpcc(&sb, &["cleanup"]));
    assert_eq!(root_sql(&sb, "SHOW TABLES"), "");
}

/// A prepare killed with SIGKILL at ten moments (drawn from a fixed seed, over the first 60% of
/// the time a whole prepare takes), each rerun resuming the one before, finishes to data that passes `tpcc
/// check`. And one killed between its two index builds (the state is made by hand: the
/// second index dropped, the prepare marked unindexed) builds the missing index instead of
/// failing on the existing one ("error 1061 Duplicate key name 'customer_name'" before).
#[test]
fn a_prepare_killed_anywhere_resumes() {
    let _turn = serial();
    let sb = tpcc_sandbox();
    let prepare = || {
        let mut c = tpcc(&sb, &["prepare", "--warehouses", "1", "--threads", "2", "--seed", "7"]);
        c.args(["--fk"]);
        c
    };
    let t0 = Instant::now();
    run_ok(&mut prepare());
    let span = t0.elapsed();

    // As if killed after customer_name was built and before orders_customer was, and with
    // some of the foreign keys in (orders_customer serves fkey_orders_1: that goes first).
    root_sql(
        &sb,
        "DELETE FROM dbperf_tpcc_meta WHERE name IN ('indexes', 'foreign_keys', 'ready')",
    );
    root_sql(&sb, "ALTER TABLE orders DROP FOREIGN KEY fkey_orders_1");
    root_sql(&sb, "ALTER TABLE orders DROP INDEX orders_customer");
    root_sql(&sb, "ALTER TABLE stock DROP FOREIGN KEY fkey_stock_2");
    let out = prepare().output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let indexes = "SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics \
                   WHERE table_schema = 'sbtest' AND index_name IN ('customer_name', 'orders_customer')";
    assert_eq!(num(&sb, indexes), 2.0);
    let fks = "SELECT COUNT(*) FROM information_schema.table_constraints \
               WHERE table_schema = 'sbtest' AND constraint_type = 'FOREIGN KEY'";
    assert_eq!(num(&sb, fks), 10.0);
    assert_check_passes(&sb, "1");

    run_ok(&mut tpcc(&sb, &["cleanup"]));
    // In ascending order, so that the early kills land while the warehouse loads (each
    // rerun starts its transaction over) and a later one after it, among the indexes and
    // foreign keys.
    let mut moments = kill_moments(7, 10, span.mul_f64(0.6));
    moments.sort();
    let killed = moments.iter().filter(|&&m| kill_after(&mut prepare(), m)).count();
    assert!(
        killed >= 5,
        "only {killed} of the kills at {moments:?} landed before the prepare finished"
    );
    let out = prepare().output().unwrap();
    assert!(
        out.status.success(),
        "after kills at {moments:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(num(&sb, "SELECT COUNT(*) FROM stock"), 100_000.0);
    assert_eq!(num(&sb, indexes), 2.0);
    assert_eq!(num(&sb, fks), 10.0);
    assert_check_passes(&sb, "1");
}

/// Tables of the user's with TPC-C and sysbench names: `cleanup` drops none of them (and says
/// `--force` would), `prepare` refuses them without advising `cleanup`, and `cleanup --force`
/// drops them.
#[test]
fn tables_dbperf_did_not_create_are_left_alone() {
    let _turn = serial();
    let sb = tpcc_sandbox();
    let mine = ["sbtest1", "warehouse", "orders", "item", "history"];
    for t in mine {
        root_sql(&sb, &format!("CREATE TABLE {t} (id INT PRIMARY KEY, note VARCHAR(20))"));
        root_sql(&sb, &format!("INSERT INTO {t} VALUES (1, 'mine')"));
    }
    let all_there = || {
        for t in mine {
            assert_eq!(root_sql(&sb, &format!("SELECT note FROM {t}")), "mine", "{t}");
        }
    };
    let sysbench = |command: &str, extra: &[&str]| {
        let mut c = dbperf();
        c.args([
            "sysbench",
            "oltp_read_write",
            command,
            "--tables",
            "1",
            "--table-size",
            "100",
        ])
        .args(["--target", &sb.url()])
        .args(extra);
        c
    };
    common::assert_refuses_foreign_tables(
        vec![tpcc(&sb, &["prepare", "--warehouses", "1"]), sysbench("prepare", &[])],
        vec![tpcc(&sb, &["cleanup"]), sysbench("cleanup", &[])],
        all_there,
    );
    run_ok(&mut tpcc(&sb, &["cleanup", "--force"]));
    run_ok(&mut sysbench("cleanup", &["--force"]));
    assert_eq!(root_sql(&sb, "SHOW TABLES"), "");
}

/// Bulk execute (the default on MariaDB), LOAD DATA and prepared INSERTs store the same rows
/// for the same seed; with `local_infile` off an explicit LOAD DATA says so and falls back to
/// INSERTs, while the default does not need it.
#[test]
fn every_load_method_stores_the_same_rows() {
    let _turn = serial();
    let sb = tpcc_sandbox();
    let dbs = ["sbtest", "tpcc_ld", "tpcc_ins"];
    let prepare = |db: &str, method: &[&str]| {
        let out = dbperf()
            .args([
                "tpcc",
                "prepare",
                "--warehouses",
                "1",
                "--target",
                &sb.url().replace("/sbtest", &format!("/{db}")),
            ])
            .args(method)
            .output()
            .unwrap();
        let (stdout, stderr) = (stdout(&out), String::from_utf8_lossy(&out.stderr).into_owned());
        assert!(out.status.success(), "{stderr}");
        (stdout, stderr)
    };
    // The benchmark account has rights on `sbtest` only: other databases are granted to it.
    for db in ["tpcc_ld", "tpcc_ins"] {
        root_sql(
            &sb,
            &format!("CREATE DATABASE {db}; GRANT ALL ON {db}.* TO 'sb'@'127.0.0.1'"),
        );
    }
    let (out, _) = prepare("tpcc_ld", &["--load-method", "load-data"]);
    assert!(out.contains("LOAD DATA LOCAL"), "{out}");
    root_sql(&sb, "SET GLOBAL local_infile = OFF");
    let (out, err) = prepare("sbtest", &[]);
    assert!(
        out.contains("bulk execute") && !err.contains("local_infile"),
        "{out}{err}"
    );
    let (out, err) = prepare("tpcc_ins", &["--load-method", "load-data"]);
    assert!(err.contains("local_infile=OFF"), "no fallback notice: {err}");
    assert!(out.contains("INSERT"), "{out}");
    // Dates are the load's start time; make them equal before comparing.
    let dates = [
        ("customer", "c_since"),
        ("history", "h_date"),
        ("orders", "o_entry_d"),
        ("order_line", "ol_delivery_d"),
    ];
    for db in dbs {
        for (t, c) in dates {
            root_sql(
                &sb,
                &format!("UPDATE {db}.{t} SET {c} = '2000-01-01' WHERE {c} IS NOT NULL"),
            );
        }
    }
    for t in [
        "warehouse",
        "district",
        "item",
        "stock",
        "customer",
        "history",
        "orders",
        "new_order",
        "order_line",
    ] {
        let sum = |db: &str| {
            let row = root_sql(&sb, &format!("CHECKSUM TABLE {db}.{t}"));
            row.split_whitespace().last().unwrap_or_default().to_string()
        };
        let sums = dbs.map(sum);
        assert!(
            !sums[0].is_empty() && sums[0] != "NULL" && sums[0] != "0",
            "{t}: checksum {sums:?}"
        );
        assert!(
            sums.iter().all(|s| *s == sums[0]),
            "{t}: bulk, LOAD DATA and INSERT stored different rows: {sums:?}"
        );
    }
}
