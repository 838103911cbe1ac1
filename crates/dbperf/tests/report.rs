//! `dbperf report` on real runs: the HTML report of a telemetry run (its charts' data read back
//! from the page and checked against `summary.json` and `intervals.jsonl`), the text, JSON and
//! CSV exports, the report of a lab experiment, a clear error for an unknown target, the
//! Prometheus endpoint scraped during a run, and each study's charts: NOTPM panels with dirty
//! pages and checkpoint age for a TPC-C run set, relative per-query bars with whiskers and the
//! draw band for a TPC-H power set; each set's comparison table in its workload's own figures
//! (NOTPM for TPC-C, the per-query table and geomean for TPC-H power), in the text and the HTML.

use std::path::Path;

use dbperf::server::testing::TempSandbox;
use serde_json::Value;

mod common;
use common::{dbperf, http_get, only_run_dir, read_json, run_ok};

/// The JSON islands of one class (`chart-data`: each chart's data; `chart-figure`: the
/// plotly figure drawn from it), in page order.
fn islands(html: &str, class: &str) -> Vec<Value> {
    let open = format!("class=\"{class}\"");
    html.split("<script type=\"application/json\" ")
        .skip(1)
        .filter(|s| s.starts_with(&open))
        .map(|s| {
            let body = &s[s.find('>').unwrap() + 1..s.find("</script>").unwrap()];
            serde_json::from_str(&body.replace("<\\/", "</")).unwrap()
        })
        .collect()
}

/// The JSON islands holding each chart's data, by title.
fn charts(html: &str) -> Vec<Value> {
    islands(html, "chart-data")
}

/// The plotly figure of the chart whose title starts with `title_starts`.
fn figure(html: &str, title_starts: &str) -> Value {
    let at = charts(html)
        .iter()
        .position(|c| c["title"].as_str().unwrap().starts_with(title_starts))
        .unwrap_or_else(|| panic!("no chart titled {title_starts:?}"));
    islands(html, "chart-figure").swap_remove(at)
}

/// A self-contained page: plotly.js inlined exactly once, a figure for every chart, nothing
/// fetched from the network, under the size a report stays under.
fn assert_self_contained(html: &str) {
    assert_eq!(html.matches("* plotly.js").count(), 1, "plotly.js inlined once");
    assert!(
        html.len() < dbperf::report::html::page::MAX_REPORT_BYTES,
        "{} bytes",
        html.len()
    );
    assert_eq!(islands(html, "chart-figure").len(), charts(html).len());
    // plotly.js holds map-tile addresses that only map traces use; the page around it refers
    // to nothing outside itself.
    let (start, end) = (
        html.find("<script>").unwrap(),
        html.find("</script>\n<script>").unwrap(),
    );
    let page = format!("{}{}", &html[..start], &html[end..]);
    for fetch in ["http://", "https://", "@import", "<link", "<iframe"] {
        assert!(!page.contains(fetch), "{fetch} in the page");
    }
}

/// Tick values of a figure's axis (`yaxis`, `xaxis2`).
fn ticks(figure: &Value, axis: &str) -> Vec<f64> {
    figure["layout"][axis]["tickvals"]
        .as_array()
        .unwrap_or_else(|| panic!("{axis} has no fixed ticks: {}", figure["layout"]))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

fn chart<'a>(charts: &'a [Value], title_starts: &str) -> &'a Value {
    charts
        .iter()
        .find(|c| c["title"].as_str().unwrap().starts_with(title_starts))
        .unwrap_or_else(|| panic!("no chart titled {title_starts:?}"))
}

fn series(chart: &Value, name: &str) -> Vec<(f64, f64)> {
    chart["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no series {name:?} in {}", chart["title"]))["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
        .collect()
}

fn lines(dir: &Path, file: &str) -> Vec<Value> {
    std::fs::read_to_string(dir.join(file))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_html_report_of_a_telemetry_run_shows_what_summary_and_intervals_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = TempSandbox::start_with(&["performance_schema=ON"]).expect("sandbox starts");
    let url = sb.url();
    let common = ["--tables=2", "--table-size=5000"];
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_read_write", "prepare", "--target", &url])
            .args(common),
    );
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_read_write", "run", "--target", &url])
            .args([
                "--threads=4",
                "--time=5",
                "--warmup-time=1",
                "--report-interval=1",
                "--pfs-instruments",
            ])
            .arg("--results-dir")
            .arg(tmp.path())
            .args(common),
    );
    drop(sb);
    let dir = only_run_dir(tmp.path());
    let html_path = tmp.path().join("report.html");
    let out = run_ok(dbperf().arg("report").arg(&dir).arg("--html").arg(&html_path));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("SQL statistics") && text.contains("stability:"), "{text}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert_self_contained(&html);
    let charts = charts(&html);
    // Every time chart of the run is drawn over the same span.
    let time_charts = [
        "Throughput",
        "Response time per",
        "Checkpoint",
        "I/O",
        "CPU",
        "Top waits",
    ];
    let spans: Vec<Value> = time_charts
        .iter()
        .map(|t| figure(&html, t)["layout"]["xaxis"]["range"].clone())
        .collect();
    assert!(spans.iter().all(|s| *s == spans[0] && s[0] == 0.0), "{spans:?}");

    let summary = read_json(&dir.join("summary.json"));
    let intervals = lines(&dir, "intervals.jsonl");
    let tps = chart(&charts, "Throughput per interval");
    assert_eq!(tps["x_label"], "time since start (s)");
    assert_eq!(tps["y_label"], "transactions/s");
    let points = series(tps, "TPS");
    assert_eq!(points.len(), intervals.len());
    // TPS x interval length over the measured intervals adds up to the summary's total.
    let mut measured_trx = 0.0;
    for (p, i) in points.iter().zip(&intervals) {
        let (start, end) = (i["start_s"].as_f64().unwrap(), i["end_s"].as_f64().unwrap());
        assert!(
            (p.0 - (start + end) / 2.0).abs() < 1e-9,
            "drawn at the interval's middle"
        );
        assert_eq!(p.1, i["tps"].as_f64().unwrap());
        if !i["warmup"].as_bool().unwrap() {
            measured_trx += p.1 * (end - start);
        }
    }
    let total = summary["transactions"]["total"].as_f64().unwrap();
    assert!((measured_trx - total).abs() <= 1.0, "{measured_trx} vs {total}");
    // The warmup is shaded.
    let warmup = tps["bands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == "warmup")
        .unwrap();
    assert_eq!((warmup["from"].as_f64(), warmup["to"].as_f64()), (Some(0.0), Some(1.0)));

    let p99 = series(chart(&charts, "Response time per interval"), "p99");
    let from_file: Vec<f64> = intervals
        .iter()
        .map(|i| i["latency_ms"]["p99"].as_f64().unwrap())
        .collect();
    assert_eq!(p99.iter().map(|p| p.1).collect::<Vec<_>>(), from_file);

    // Checkpoint age in MiB, with its maximum as a limit line.
    let ckpt = chart(&charts, "Checkpoint age and dirty pages");
    let telemetry = lines(&dir, "telemetry.jsonl");
    let max = telemetry
        .iter()
        .filter_map(|s| s["server"]["checkpoint_max_bytes"].as_f64())
        .fold(0.0, f64::max);
    let limit = ckpt["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"].as_str().unwrap().starts_with("max checkpoint age"))
        .unwrap();
    assert!((limit["y"].as_f64().unwrap() - max / 1048576.0).abs() < 1e-9);
    assert_eq!(series(ckpt, "checkpoint age").len(), telemetry.len());
    assert!(ckpt["y2_label"].as_str().unwrap().contains("dirty pages"));
    // Dirty pages in their own panel on a fixed 0-100% axis, not scaled to their maximum.
    let ckpt_figure = figure(&html, "Checkpoint age and dirty pages");
    assert_eq!(
        ckpt_figure["layout"]["yaxis2"]["range"],
        serde_json::json!([0.0, 100.0])
    );
    assert_eq!(ckpt_figure["layout"]["xaxis2"]["matches"], "x");
    let dirty = ckpt_figure["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "dirty pages (% of data + free pages, InnoDB's ratio)")
        .unwrap();
    assert_eq!(dirty["yaxis"], "y2");
    // The buffer pool's page rates: read, freed (counted, or the free list's balance where the
    // counter never moved) and LRU flushes.
    let pool = chart(&charts, "Buffer pool: pages read, freed and flushed from the LRU");
    let names: Vec<&str> = pool["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "{pool}");
    assert!(names[1].starts_with("pages freed/s"), "{pool}");
    for title in ["I/O", "CPU", "Top waits"] {
        chart(&charts, title);
    }
    // An InnoDB wait is drawn over time.
    let waits = chart(&charts, "Top waits");
    assert!(
        waits["series"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"].as_str().unwrap().contains("innodb")),
        "{waits}"
    );

    // The spectrum's 99th percentile is the summary's, from the same histograms.
    let spectrum = series(
        chart(&charts, "Response time by percentile"),
        dir.file_name().unwrap().to_str().unwrap(),
    );
    let at_99 = spectrum.iter().find(|p| (p.0 - 100.0).abs() < 1e-6).unwrap().1;
    // The log axis is numbered at or below the fastest response and at or above the slowest.
    let spectrum_figure = figure(&html, "Response time by percentile");
    let y = ticks(&spectrum_figure, "yaxis");
    let (fastest, slowest) = spectrum
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), p| (a.min(p.1), b.max(p.1)));
    assert!(
        y[0] <= fastest && *y.last().unwrap() >= slowest,
        "{y:?} for {fastest}..{slowest}"
    );
    let p99_summary = summary["latency_ms"]["p99"].as_f64().unwrap();
    assert!(
        (at_99 - p99_summary).abs() <= p99_summary * 0.01,
        "{at_99} vs {p99_summary}"
    );
    assert!(html.contains("Server variables (") && html.contains("innodb_buffer_pool_size"));
    // The setup block: the host's CPUs and the server's buffer pool, from the manifest.
    let setup = &html[html.find("<table class=\"setup\">").expect("a setup table")..];
    let setup = &setup[..setup.find("</table>").unwrap()];
    let cpus = read_json(&dir.join("manifest.json"))["host"]["logical_cpus"].clone();
    assert!(setup.contains(&format!("{cpus} logical")), "{setup}");
    assert!(setup.contains("<td>innodb_buffer_pool_size</td>"), "{setup}");

    // Exports.
    let csv = run_ok(dbperf().arg("report").arg(&dir).args(["--format", "csv"]));
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(csv.starts_with("index,start_s,end_s,warmup,threads,tps,"));
    assert_eq!(csv.lines().count(), intervals.len() + 1);
    let json = run_ok(dbperf().arg("report").arg(&dir).args(["--format", "json"]));
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        json["summary"]["transactions"]["total"],
        summary["transactions"]["total"]
    );
    assert!(json["analysis"]["stability"]["tps_cv_pct"].is_number());
}

#[test]
fn an_experiment_report_has_the_users_sweep_charts_and_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, results) = (tmp.path().join("home"), tmp.path().join("results"));
    let file = tmp.path().join("sweep.toml");
    std::fs::write(
        &file,
        r#"
name = "sweep"
duration = "2s"
report_interval = "1s"
[[server]]
id = "mariadb-10.11"
settings = { innodb_buffer_pool_size = "128M" }
[variants]
innodb_doublewrite = ["ON", "OFF"]
[[workload]]
test = "oltp_point_select"
tables = 1
table_size = 1000
users = [1, 2, 4]
"#,
    )
    .unwrap();
    run_ok(
        dbperf()
            .env("DBPERF_HOME", &home)
            .args(["lab", "run"])
            .arg(&file)
            .arg("--results-dir")
            .arg(&results),
    );
    let html_path = tmp.path().join("sweep.html");
    let out = run_ok(
        dbperf()
            .args(["report", "sweep", "--html"])
            .arg(&html_path)
            .arg("--results-dir")
            .arg(&results),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("doublewrite=OFF") && text.contains("Inside the server"),
        "{text}"
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert_self_contained(&html);
    let charts = charts(&html);
    let by_users = chart(&charts, "oltp_point_select: throughput by users");
    let p99 = chart(&charts, "oltp_point_select: 99th percentile response time by users");
    assert_eq!(
        (p99["x_scale"].as_str(), p99["y_scale"].as_str()),
        (Some("log2"), Some("log"))
    );
    for c in [by_users, p99] {
        let names: Vec<&str> = c["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "one line per variant: {names:?}");
        for s in c["series"].as_array().unwrap() {
            let users: Vec<f64> = s["points"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[0].as_f64().unwrap())
                .collect();
            assert_eq!(users, [1.0, 2.0, 4.0]);
        }
    }
    chart(&charts, "oltp_point_select: response time by percentile at 4 users");
    // Log axes carry 1-2-5 numbers enclosing every p99 drawn; users at powers of two.
    let p99_figure = figure(&html, "oltp_point_select: 99th percentile response time by users");
    let y = ticks(&p99_figure, "yaxis");
    let p99s: Vec<f64> = p99["series"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["points"].as_array().unwrap().iter().map(|p| p[1].as_f64().unwrap()))
        .collect();
    let (lo, hi) = p99s
        .iter()
        .fold((f64::INFINITY, 0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    // A labelled tick at or below the lowest and at or above the highest, within a step of them.
    assert!(
        y[0] <= lo && y[0] >= lo / 2.6 && *y.last().unwrap() >= hi && *y.last().unwrap() <= hi * 2.6,
        "{y:?} for {lo}..{hi}"
    );
    let range: Vec<f64> = p99_figure["layout"]["yaxis"]["range"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| 10f64.powf(v.as_f64().unwrap()))
        .collect();
    assert!(range[0] <= lo && range[1] >= hi, "{range:?} holds {lo}..{hi}");
    assert_eq!(ticks(&p99_figure, "xaxis"), [1.0, 2.0, 4.0]);
    assert!(html.contains("Inside the server") && html.contains("Runs (6)"));
}

#[test]
fn an_unknown_target_is_named_with_what_to_give_instead() {
    let tmp = tempfile::tempdir().unwrap();
    let out = dbperf()
        .args(["report", "no-such-thing", "--results-dir"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"no-such-thing\" is neither a run directory") && err.contains("/lab`)"),
        "{err}"
    );
}

#[test]
fn the_metrics_endpoint_is_scraped_during_a_run() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let sb = TempSandbox::start().expect("sandbox starts");
    let url = sb.url();
    let common = ["--tables=1", "--table-size=1000"];
    run_ok(
        dbperf()
            .args(["sysbench", "oltp_point_select", "prepare", "--target", &url])
            .args(common),
    );
    let mut child = dbperf()
        .args(["sysbench", "oltp_point_select", "run", "--target", &url])
        .args([
            "--threads=2",
            "--time=6",
            "--report-interval=1",
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .arg("--results-dir")
        .arg(tmp.path())
        .args(common)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("a Metrics: line before the run ends").unwrap();
        if let Some(rest) = line.strip_prefix("Metrics: http://") {
            break rest.trim_end_matches("/metrics").to_string();
        }
    };
    // Wait for a few intervals, then scrape as Prometheus would.
    let mut seen = 0;
    while seen < 3 {
        let line = lines.next().expect("interval lines").unwrap();
        if line.starts_with("[ ") {
            seen += 1;
        }
    }
    let scrape = http_get(&addr, "/metrics");
    assert!(scrape.contains("application/openmetrics-text"), "{scrape}");
    let value = |prefix: &str| -> f64 {
        scrape
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{scrape}"))
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(value("dbperf_transactions_total ") > 0.0);
    assert!(value("dbperf_throughput_per_second{kind=\"transactions\"}") > 0.0);
    assert!(value("dbperf_latency_seconds{quantile=\"0.99\"}") > 0.0);
    assert!(value("dbperf_server{figure=\"checkpoint_max_bytes\"}") > 0.0);
    assert!(value("dbperf_os_cpu_percent{cpu=\"all\",state=\"user\"}") >= 0.0);
    assert!(scrape.contains("dbperf_run_info{run_id=\""));
    for _ in lines.by_ref() {}
    assert!(child.wait().unwrap().success());
}

/// Runs SQL as root on the sandbox.
fn root_sql(sb: &TempSandbox, sql: &str) {
    let out = std::process::Command::new("mariadb")
        .arg(format!("--defaults-file={}", sb.admin_cnf().display()))
        .args(["-e", sql])
        .output()
        .expect("mariadb client");
    assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_tpcc_run_set_has_notpm_panels_with_dirty_pages_and_checkpoint_age_and_the_explanations() {
    let sb = TempSandbox::start_with(&["innodb_log_file_size=8M", "innodb_buffer_pool_size=64M"])
        .expect("a sandboxed MariaDB starts");
    let url = sb.url();
    run_ok(dbperf().args([
        "tpcc",
        "prepare",
        "--warehouses",
        "1",
        "--threads",
        "2",
        "--target",
        &url,
    ]));
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    // Two columns: the same server with innodb_max_dirty_pages_pct at 30, then at 60.
    for (i, pct) in ["30", "60"].iter().enumerate() {
        root_sql(&sb, &format!("SET GLOBAL innodb_max_dirty_pages_pct = {pct}"));
        let results = tmp.path().join(format!("r{i}"));
        run_ok(
            dbperf()
                .args(["tpcc", "run", "--warehouses", "1", "--threads", "2", "--time", "6"])
                .args(["--report-interval", "1", "--target", &url, "--results-dir"])
                .arg(&results),
        );
        dirs.push(only_run_dir(&results));
    }
    let html_path = tmp.path().join("tpcc.html");
    let out = run_ok(dbperf().arg("report").args(&dirs).arg("--html").arg(&html_path));
    // The comparison is in TPC-C's own figure, NOTPM, not TPS.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tpcc: notpm (New-Orders/min"), "{text}");
    assert!(!text.contains("tpcc: tps"), "{text}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("tpcc: notpm (New-Orders/min") && !html.contains("tpcc: tps ("));
    let charts = charts(&html);
    let titled = |start: &str| -> Vec<&Value> {
        charts
            .iter()
            .filter(|c| c["title"].as_str().unwrap().starts_with(start))
            .collect()
    };
    // The figure over time at each user count, a line per column (NOTPM per interval for a run
    // under a minute; New-Order per 10 s for longer ones); per column, as the studies draw
    // them, checkpoint age in MiB with dirty pages by InnoDB's ratio against the column's
    // limit, and the buffer pool's page rates.
    let panels = titled("tpcc: NOTPM per interval at 2 users");
    let checkpoints = titled("tpcc: checkpoint age and dirty pages, ");
    let pools = titled("tpcc: pages read, freed and LRU-flushed, ");
    assert_eq!(
        (panels.len(), checkpoints.len(), pools.len()),
        (1, 2, 2),
        "one chart per user count, a panel of each per column"
    );
    let lines = panels[0]["series"].as_array().unwrap();
    assert_eq!(lines.len(), 2, "a line per column");
    for (i, (dir, pct)) in dirs.iter().zip([30.0, 60.0]).enumerate() {
        // NOTPM per interval: New-Order count per interval from intervals.hlog, which over the
        // run adds up to tpcc.json's NOTPM.
        let notpm: Vec<(f64, f64)> = lines[i]["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_f64().unwrap(), p[1].as_f64().unwrap()))
            .collect();
        assert!(notpm.len() >= 5, "{notpm:?}");
        let mean = notpm.iter().map(|p| p.1).sum::<f64>() / notpm.len() as f64;
        let whole = read_json(&dir.join("tpcc.json"))["notpm"].as_f64().unwrap();
        assert!((mean - whole).abs() <= 0.15 * whole, "{mean} vs {whole}");
        let panel = checkpoints[i];
        let dirty = series(panel, "dirty pages (% of data + free pages, InnoDB's ratio)");
        let ckpt = series(panel, "checkpoint age");
        assert!(!dirty.is_empty() && ckpt.iter().any(|p| p.1 > 0.0), "{panel}");
        let limits = panel["limits"].as_array().unwrap();
        let limit = limits.iter().find(|l| l["secondary"] == true).unwrap();
        assert_eq!(limit["y"].as_f64(), Some(pct), "the column's own limit: {panel}");
        assert!(
            limits.iter().any(|l| l["label"] == "max checkpoint age (sync flush)"),
            "{panel}"
        );
        assert!(!series(pools[i], "pages read/s").is_empty(), "{}", pools[i]);
    }
    assert!(
        html.contains("Each run&#39;s explanation") || html.contains("Each run's explanation"),
        "the explanations table"
    );
    assert!(html.contains("redo needed (+25%)") && html.contains("limit 30%") && html.contains("limit 60%"));
}

#[test]
fn a_tpch_power_set_has_relative_bars_with_whiskers_and_the_draw_band() {
    let sb = TempSandbox::start().expect("a sandboxed MariaDB starts");
    let url = sb.url();
    run_ok(dbperf().args(["tpch", "prepare", "--sf", "0.01", "--threads", "2", "--target", &url]));
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for i in 0..2 {
        let results = tmp.path().join(format!("r{i}"));
        run_ok(
            dbperf()
                .args([
                    "tpch",
                    "power",
                    "--seed",
                    "101000000",
                    "--target",
                    &url,
                    "--results-dir",
                ])
                .arg(&results),
        );
        dirs.push(only_run_dir(&results));
    }
    // The experiment page chooses the TPC-H chart by the runs' kind (the lab's report calls it).
    let html = dbperf::report::html::experiment::experiment_page("power", &dirs).unwrap();
    let bars = charts(&html)
        .into_iter()
        .find(|c| {
            c["title"]
                .as_str()
                .unwrap()
                .starts_with("TPC-H power test: query time relative to")
        })
        .expect("the relative per-query bars");
    assert_eq!(bars["band"], serde_json::json!([0.95, 1.05]), "the ±5% draw band");
    assert_eq!(bars["categories"].as_array().unwrap().len(), 22);
    let series = bars["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    // The baseline is 1 for every query it finished; the other run's whiskers hold its median.
    for b in series[0]["bars"].as_array().unwrap().iter().filter(|b| !b.is_null()) {
        assert!((b["value"].as_f64().unwrap() - 1.0).abs() < 1e-9, "{b}");
    }
    for b in series[1]["bars"].as_array().unwrap().iter().filter(|b| !b.is_null()) {
        let (v, lo, hi) = (
            b["value"].as_f64().unwrap(),
            b["low"].as_f64().unwrap(),
            b["high"].as_f64().unwrap(),
        );
        assert!(lo <= v && v <= hi && v > 0.0, "{b}");
    }
    // The zoomed view of the same bars (the studies' second chart), on a fixed 0.5-1.5 axis.
    let zoomed = charts(&html)
        .into_iter()
        .find(|c| c["title"].as_str().unwrap().ends_with("zoomed to 0.5-1.5"))
        .expect("the zoomed bars");
    assert_eq!(zoomed["zoom"], serde_json::json!([0.5, 1.5]));
    assert_eq!(zoomed["series"], bars["series"]);
    // `dbperf report` on the same runs draws the same chart.
    let html_path = tmp.path().join("tpch.html");
    let out = run_ok(dbperf().arg("report").args(&dirs).arg("--html").arg(&html_path));
    assert!(std::fs::read_to_string(&html_path)
        .unwrap()
        .contains("TPC-H power test: query time relative to"));
    // The comparison is TPC-H's own: one row per query and the geometric mean, in seconds
    // (lower is better), and Power@Size; no TPS.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tpch-power: queries (s, lower is better) by query"),
        "{text}"
    );
    let rows: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split('|').nth(1))
        .map(str::trim)
        .collect();
    assert!(
        rows.contains(&"Q1") && rows.contains(&"Q22") && rows.contains(&"geomean"),
        "{text}"
    );
    assert!(text.contains("tpch-power: power ("), "{text}");
    assert!(!text.contains("tps"), "{text}");
    // The experiment page shows the same tables above its bars.
    assert!(
        html.contains("tpch-power: queries (s, lower is better)"),
        "the per-query table"
    );
}
