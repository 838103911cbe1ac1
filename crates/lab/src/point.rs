//! One point of a lab as a child `dbperf` (the same binary): its command line
//! ([`point_command`], the URL in `DBPERF_TARGET`, never in argv), its run as one process or as
//! shards merged after ([`run_point`]), and what it left: the run directory and its figure
//! ([`finished`]), or why it failed (the child's last error, a server host lost mid-run).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::experiment::{Cold, CpuSet, Kind, Params, TpchTest};
use super::plan::{Data, Group, Plan, Point};
use super::run::{DoneRun, Interrupt};
use super::safe;
use dbperf_core::stats;
use dbperf_results::summary::Summary;
use dbperf_results::{LabPoint, RunDir};

/// A child's log file, started over; a link planted in its place is refused, not followed.
pub(crate) fn create_log(log: &Path) -> Result<std::fs::File> {
    dbperf_core::nofollow::open(log, dbperf_core::nofollow::Open::Truncate)
        .with_context(|| format!("creating {}", log.display()))
}

#[derive(Clone, Copy)]
pub(crate) struct RunPoint<'a> {
    pub(crate) exe: &'a Path,
    pub(crate) url: &'a str,
    pub(crate) sandbox: &'a str,
    pub(crate) plan: &'a Plan,
    pub(crate) group: &'a Group,
    pub(crate) point: &'a Point,
    pub(crate) lab: &'a LabPoint,
    pub(crate) client_cpus: Option<&'a CpuSet>,
    pub(crate) results_dir: &'a Path,
    pub(crate) lab_dir: &'a Path,
    /// The server is not dbperf's (`target`): `--telemetry-sql-only`.
    pub(crate) sql_only_telemetry: bool,
    /// The database host when it is not this one: `--server-host`.
    pub(crate) server_host: Option<&'a dbperf_server::remote::RemoteHost>,
    /// Wait for the server's flushing before measuring, at most this long (`--settle`).
    pub(crate) settle: Option<Duration>,
}

pub(crate) enum PointOutcome {
    Done(DoneRun),
    Interrupted,
    Failed(anyhow::Error),
}

/// A child `dbperf` that connects to `url`, which it gets through `DBPERF_TARGET`: the
/// environment is readable by the same user only, where arguments show in everybody's `ps`.
pub(crate) fn child(exe: &Path, url: &str) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("DBPERF_TARGET", url);
    cmd
}

/// The child command of one point: `dbperf sysbench TEST run`, `tpcc run`, `linkbench
/// request`, `tpch power|throughput` or `pgbench SCRIPT`, writing its summary to
/// `summary_path` (TPC-H writes `tpch.json` in its run directory instead).
pub(crate) fn point_command(r: &RunPoint<'_>, summary_path: &Path) -> Result<Command> {
    let e = &r.plan.experiment;
    let w = &e.workloads[r.point.workload];
    let cold = matches!(&w.params, Params::Tpch(t) if t.cold != Cold::Off);
    // A cold TPC-H run restarts the sandbox itself, so it needs the sandbox, not a URL; on
    // another host, the URL and the sandbox's name there.
    let sandbox_url = format!("sandbox:{}", r.sandbox);
    let here = cold && r.server_host.is_none();
    let mut cmd = child(r.exe, if here { &sandbox_url } else { r.url });
    let duration = e.duration(r.group.variant, r.point.workload);
    let time = format!("--time={}", duration.as_secs());
    let warmup = format!("--warmup-time={}", w.warmup.as_secs());
    let interval = format!("--report-interval={}", e.report_interval.as_secs_f64());
    let results = format!("--results-dir={}", r.results_dir.display());
    let summary = format!("--summary-json={}", summary_path.display());
    let users = r.point.users;
    match (&w.params, &r.group.data.data) {
        (Params::Sysbench(sb), Data::Sysbench { tables, rows }) => {
            cmd.args(["sysbench", sb.test.name(), "run"])
                .arg(format!("--tables={tables}"))
                .arg(format!("--table-size={rows}"))
                .arg(format!("--threads={users}"))
                .args([&time, &warmup, &interval, &results, &summary]);
            for (k, v) in &sb.options {
                cmd.arg(format!("--{k}={v}"));
            }
        }
        // The data set's size: the file's, or what its buffer pool made of `data_vs_buffer_pool`.
        (Params::Tpcc(t), Data::Tpcc { warehouses, .. }) => {
            cmd.args(["tpcc", "run"])
                .arg(format!("--warehouses={warehouses}"))
                .arg(format!("--mode={}", t.mode))
                .arg(format!("--wait-scale={}", t.wait_scale))
                .arg(format!("--schema={}", t.schema));
            if t.mode == "max" {
                cmd.arg(format!("--threads={users}"))
                    .arg(format!("--warehouse-choice={}", t.warehouse_choice));
            }
            cmd.args([&time, &warmup, &interval, &results, &summary]);
        }
        (Params::Linkbench(l), Data::Linkbench { maxid1 }) => {
            cmd.args(["linkbench", "request"])
                .arg(format!("--maxid1={maxid1}"))
                .arg(format!("--requesters={users}"))
                .arg(format!("--mix={}", l.mix))
                .arg(format!("--requests-per-requester={}", l.requests_per_requester))
                .args([&time, &warmup, &interval, &results, &summary]);
        }
        (Params::Tpch(t), _) => {
            cmd.args(["tpch", t.test.name()])
                .arg(format!("--scale-factor={}", t.scale_factor))
                .arg(format!("--seed={}", t.qgen_seed(&e.name)))
                .arg(&results);
            if !t.refresh {
                cmd.arg("--no-refresh");
            }
            match t.test {
                TpchTest::Power => {
                    cmd.arg(format!("--repeat={}", t.repeat));
                    if !t.queries.is_empty() {
                        let list: Vec<String> = t.queries.iter().map(u8::to_string).collect();
                        cmd.arg(format!("--queries={}", list.join(",")));
                    }
                    match t.cold {
                        Cold::Off => {}
                        Cold::Query => {
                            cmd.arg("--cold=query");
                        }
                        Cold::Run => {
                            cmd.arg("--cold=run");
                        }
                    }
                    if cold && !here {
                        cmd.arg(format!("--cold-sandbox={}", r.sandbox));
                    }
                    if let Some(dir) = &e.servers[r.group.server].queries_dir {
                        cmd.arg(format!("--queries-dir={}", dir.display()));
                    }
                }
                TpchTest::Throughput => {
                    cmd.arg(format!("--streams={}", t.streams));
                }
            }
            if let Some(secs) = t.timeout {
                cmd.arg(format!("--timeout={secs}"));
            }
        }
        (Params::Pgbench(p), _) => {
            cmd.arg("pgbench");
            if !p.script.is_empty() {
                cmd.arg(&p.script);
            }
            for f in &p.scripts.files {
                cmd.arg(format!("--file={f}"));
            }
            for b in &p.scripts.builtins {
                cmd.arg(format!("--builtin={b}"));
            }
            for (k, v) in &p.scripts.define {
                cmd.arg(format!("--define={k}={v}"));
            }
            // The lab's own defaults, given explicitly so that `dbperf pgbench`'s pgbench-like
            // ones (-M simple, -j 1) do not change what a point measures.
            cmd.arg(format!(
                "--protocol={}",
                p.scripts.protocol.as_deref().unwrap_or(LAB_PGBENCH_PROTOCOL)
            ))
            .arg(format!(
                "--jobs={}",
                pgbench_jobs(users, e.network.shards, r.client_cpus)
            ));
            cmd.arg(format!("--scale={}", p.scale))
                .arg(format!("--clients={users}"))
                .arg(format!("--time={}", duration.as_secs()))
                .arg(&warmup)
                .arg(format!("--progress={}", e.report_interval.as_secs_f64()))
                .args([&results, &summary]);
        }
        (Params::Lua(l), _) => {
            cmd.arg("lua")
                .arg(&l.script)
                .arg("run")
                .arg(format!("--threads={users}"))
                .args([&time, &warmup, &interval, &results, &summary])
                .args(lua_option_args(l));
        }
        (Params::Sysbench(_) | Params::Tpcc(_) | Params::Linkbench(_), other) => {
            bail!("workload {} on data set {other:?}", w.kind().name())
        }
    }
    if let Some(shaping) = &e.network.netns {
        cmd.arg(format!("--client-netns={shaping}"));
    }
    if r.sql_only_telemetry {
        cmd.arg("--telemetry-sql-only");
    }
    // Shards start together at a set time: a wait in one would leave it behind the others.
    if let (Some(max), 1) = (r.settle, e.network.shards) {
        cmd.arg(format!("--settle={}", max.as_secs()));
    }
    if let (Some(max), 1, false) = (e.warmup_steady, e.network.shards, matches!(w.params, Params::Tpch(_))) {
        cmd.arg(format!("--warmup-steady={}", max.as_secs()));
    }
    if super::run::waits_asked(&e.servers[r.group.server], &e.variants[r.group.variant]) {
        cmd.arg("--pfs-instruments");
    }
    if let Some(h) = r.server_host {
        cmd.arg(format!("--server-host={}", h.url))
            .arg(format!("--server-host-ssh={}", h.ssh_line()))
            .arg(format!("--server-host-dbperf={}", h.dbperf));
        if let Some(home) = &h.home {
            cmd.arg(format!("--server-host-home={home}"));
        }
    }
    cmd.env("DBPERF_LAB_POINT", serde_json::to_string(r.lab)?);
    Ok(cmd)
}

/// The query mode of a lab pgbench point whose experiment names none: prepared, the mode the
/// lab's points always ran in (`dbperf pgbench`'s own default is pgbench's, simple).
pub(crate) const LAB_PGBENCH_PROTOCOL: &str = "prepared";

/// The `--jobs` of a lab pgbench point of `users` clients over `shards` client processes:
/// the client shape of the lab's other kinds (`--client-io auto` without client threads), a
/// thread per client blocking on its replies while a process has at most
/// [`dbperf_run::client::AUTO_BLOCKING_MAX`] of them, else an event loop per client CPU.
pub(crate) fn pgbench_jobs(users: u32, shards: u32, client_cpus: Option<&CpuSet>) -> usize {
    let per_process = users.div_ceil(shards.max(1)) as usize;
    if per_process <= dbperf_run::client::AUTO_BLOCKING_MAX {
        users as usize
    } else {
        client_cpus.map_or_else(dbperf_run::args::cpus, |c| c.cpus.len().max(1))
    }
}

/// A Lua workload's options as `dbperf lua` takes them: dbperf lua's general ones, then the
/// script's own.
pub(crate) fn lua_option_args(l: &super::experiment::Lua) -> Vec<String> {
    l.general
        .iter()
        .chain(&l.options)
        .map(|(k, v)| format!("--{k}={v}"))
        .collect()
}

/// Run directories directly under `root` (names only).
pub(crate) fn run_dirs(root: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.path().join("manifest.json").is_file())
                .map(|e| e.file_name())
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the point (as one child, or as `[network] shards` of them merged after). A run on a
/// server on another host that lost that host mid-run (its OS samples stopped: ssh cut) fails,
/// its run directory kept but not counted.
pub(crate) fn run_point(r: &RunPoint<'_>, interrupt: &Interrupt) -> Result<PointOutcome> {
    let shards = r.plan.experiment.network.shards;
    let outcome = if shards > 1 {
        run_sharded(r, shards, interrupt)?
    } else {
        run_one(r, interrupt)?
    };
    Ok(match outcome {
        PointOutcome::Done(d) if r.server_host.is_some() => match lost_server_host(&d.run_dir) {
            Some(why) => PointOutcome::Failed(anyhow!(
                "{why}; the run is kept at {} but not counted",
                d.run_dir.display()
            )),
            None => PointOutcome::Done(d),
        },
        other => other,
    })
}

fn run_one(r: &RunPoint<'_>, interrupt: &Interrupt) -> Result<PointOutcome> {
    let stem = safe(&r.point.id.replace('/', "~"));
    let log = r.lab_dir.join("logs").join(format!("{stem}.log"));
    let summary_path = r.lab_dir.join("logs").join(format!("{stem}.summary.json"));
    let _ = std::fs::remove_file(&summary_path);
    let w = &r.plan.experiment.workloads[r.point.workload];
    let cmd = point_command(r, &summary_path)?;
    let before = run_dirs(r.results_dir);
    let what = format!("dbperf {}", w.kind().name());
    let mut child = spawn_logged(cmd, &log, r.client_cpus, interrupt, &what)?;
    let status = child.wait();
    interrupt.children.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let status = status.with_context(|| format!("waiting for {what}"))?;
    if status.code() == Some(130) || interrupt.stop.load(Ordering::SeqCst) {
        return Ok(PointOutcome::Interrupted);
    }
    if !status.success() {
        return Ok(PointOutcome::Failed(anyhow!(
            "{what} exited with {status}{}; see {}",
            last_error(&log),
            log.display()
        )));
    }
    finished(r, &before, &summary_path, &log, &what)
}

/// The last `error: ...` line a failed child wrote to `log`, as `: error: ...` to append to
/// what the lab prints, or nothing.
pub(crate) fn last_error(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with("error:"))
        .map(|l| format!(": {}", l.chars().take(300).collect::<String>()))
        .unwrap_or_default()
}

/// Starts `cmd` with its output in `log`, on the client's CPUs, registered for Ctrl-C.
pub(crate) fn spawn_logged(
    mut cmd: Command,
    log: &Path,
    client_cpus: Option<&CpuSet>,
    interrupt: &Interrupt,
    what: &str,
) -> Result<std::process::Child> {
    if let Some(cpus) = client_cpus {
        let cpus = cpus.cpus.clone();
        // SAFETY: only sched_setaffinity (async-signal-safe) runs between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(move || dbperf_core::cpus::restrict(0, &cpus));
        }
    }
    let file = create_log(log)?;
    let err = file.try_clone()?;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    interrupt
        .children
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(child.id() as i32);
    Ok(child)
}

/// A point spread over `shards` client processes: each runs `--shard I/N` with one shared
/// `--start-at` (its run directory under the lab's `shards/`), then `dbperf merge` makes the
/// point's run of them. A shard that fails fails the point (its figure would cover fewer
/// users), naming the shard and its log.
pub(crate) fn run_sharded(r: &RunPoint<'_>, shards: u32, interrupt: &Interrupt) -> Result<PointOutcome> {
    let stem = safe(&r.point.id.replace('/', "~"));
    let w = &r.plan.experiment.workloads[r.point.workload];
    let what = format!("dbperf {}", w.kind().name());
    let shard_root = r.lab_dir.join("shards");
    dbperf_core::nofollow::create_dir_all(&shard_root).with_context(|| format!("creating {}", shard_root.display()))?;
    let start =
        std::time::SystemTime::now() + Duration::from_secs(super::plan::shard_allowance(r.point.users)) + w.warmup;
    let start_at = dbperf_core::clock::unix_ms(start) as f64 / 1000.0;
    let mut running = Vec::new();
    let mut not_started = None;
    for i in 0..shards {
        let log = r.lab_dir.join("logs").join(format!("{stem}.shard{i}.log"));
        let summary_path = r.lab_dir.join("logs").join(format!("{stem}.shard{i}.summary.json"));
        let _ = std::fs::remove_file(&summary_path);
        let shard_point = RunPoint {
            results_dir: &shard_root,
            ..*r
        };
        let started = point_command(&shard_point, &summary_path).and_then(|mut cmd| {
            cmd.arg(format!("--shard={i}/{shards}"))
                .arg(format!("--start-at={start_at:.3}"));
            spawn_logged(cmd, &log, r.client_cpus, interrupt, &what)
        });
        match started {
            Ok(child) => running.push((i, child, log, summary_path)),
            Err(e) => {
                not_started = Some(e);
                break;
            }
        }
    }
    if not_started.is_some() {
        // The shards already started would measure a part of the point: stop them.
        for (_, child, _, _) in &running {
            // SAFETY: kill has no memory preconditions; the child may already be gone.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        }
    }
    // Every shard started is waited for before anything else happens.
    let ended: Vec<_> = running
        .into_iter()
        .map(|(i, mut child, log, summary_path)| (i, child.wait(), log, summary_path))
        .collect();
    interrupt.children.lock().unwrap_or_else(|e| e.into_inner()).clear();
    if let Some(e) = not_started {
        return Err(e);
    }
    let mut failures = Vec::new();
    let mut shard_dirs = Vec::new();
    for (i, status, log, summary_path) in ended {
        let status = status.with_context(|| format!("waiting for {what} shard {i}"))?;
        if !status.success() {
            failures.push(format!(
                "shard {i}/{shards} exited with {status}{}; see {}",
                last_error(&log),
                log.display()
            ));
            continue;
        }
        let summary: Summary = serde_json::from_slice(
            &std::fs::read(&summary_path).with_context(|| format!("reading {}", summary_path.display()))?,
        )
        .with_context(|| format!("reading {}", summary_path.display()))?;
        shard_dirs.push(shard_root.join(&summary.run_id));
    }
    if interrupt.stop.load(Ordering::SeqCst) {
        return Ok(PointOutcome::Interrupted);
    }
    if !failures.is_empty() {
        return Ok(PointOutcome::Failed(anyhow!("{}", failures.join("; "))));
    }
    let log = r.lab_dir.join("logs").join(format!("{stem}.log"));
    let before = run_dirs(r.results_dir);
    let mut merge = Command::new(r.exe);
    merge
        .arg("merge")
        .args(&shard_dirs)
        .arg(format!("--results-dir={}", r.results_dir.display()));
    let status = spawn_logged(merge, &log, None, interrupt, "dbperf merge")?
        .wait()
        .context("waiting for dbperf merge")?;
    interrupt.children.lock().unwrap_or_else(|e| e.into_inner()).clear();
    if !status.success() {
        return Ok(PointOutcome::Failed(anyhow!(
            "dbperf merge of the point's {shards} shards exited with {status}; see {}",
            log.display()
        )));
    }
    let Some(merged) = run_dirs(r.results_dir)
        .into_iter()
        .filter(|d| !before.contains(d))
        .max()
    else {
        return Ok(PointOutcome::Failed(anyhow!(
            "dbperf merge wrote no run directory under {}; see {}",
            r.results_dir.display(),
            log.display()
        )));
    };
    finished(
        r,
        &before,
        &r.results_dir.join(merged).join("summary.json"),
        &log,
        &what,
    )
}

/// The finished point: its run directory (TPC-H: the new one with a `tpch.json`; the others:
/// the one `summary_path` names) and its figure.
pub(crate) fn finished(
    r: &RunPoint<'_>,
    before: &[std::ffi::OsString],
    summary_path: &Path,
    log: &Path,
    what: &str,
) -> Result<PointOutcome> {
    let w = &r.plan.experiment.workloads[r.point.workload];
    let finished_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    if let Params::Tpch(t) = &w.params {
        // TPC-H writes no summary.json: its run is the new run directory with a tpch.json.
        let Some(run_id) = run_dirs(r.results_dir)
            .into_iter()
            .filter(|d| !before.contains(d))
            .filter(|d| r.results_dir.join(d).join(dbperf_results::TPCH_FILE).is_file())
            .max()
        else {
            return Ok(PointOutcome::Failed(anyhow!(
                "{what} wrote no run directory with {} under {}; see {}",
                dbperf_results::TPCH_FILE,
                r.results_dir.display(),
                log.display()
            )));
        };
        let run_dir = r.results_dir.join(&run_id);
        let metric = match t.test {
            TpchTest::Power => "geomean",
            TpchTest::Throughput => "throughput",
        };
        // A run where a query timed out has no geometric mean (nor Power@Size): it is still a
        // finished point, its progress figure 0; the report shows its queries.
        let value = figure(&run_dir, None, metric).unwrap_or(0.0);
        return Ok(PointOutcome::Done(DoneRun {
            run_id: run_id.to_string_lossy().into_owned(),
            run_dir,
            tps: 0.0,
            p95_ms: 0.0,
            finished_at,
            metric: metric.into(),
            value,
        }));
    }
    let summary: Summary = serde_json::from_slice(
        &std::fs::read(summary_path).with_context(|| format!("reading {}", summary_path.display()))?,
    )
    .with_context(|| format!("reading {}", summary_path.display()))?;
    let run_dir = r.results_dir.join(&summary.run_id);
    let tps = summary.transactions.per_sec;
    let metric = match w.kind() {
        Kind::Tpcc => "notpm",
        Kind::Linkbench => "rps",
        _ => "tps",
    };
    let value = figure(&run_dir, Some(&summary), metric)?;
    Ok(PointOutcome::Done(DoneRun {
        run_dir,
        run_id: summary.run_id.clone(),
        tps,
        p95_ms: summary.latency_ms.p95,
        finished_at,
        metric: metric.into(),
        value,
    }))
}

/// Why a run on another host's server lost that host: the first telemetry period with no OS
/// sample from there and the reason (the ssh connection cut: the lab could no longer see,
/// restart or restore that host while the run went on), or `None`.
pub(crate) fn lost_server_host(run_dir: &Path) -> Option<String> {
    let rows = dbperf_results::read_jsonl::<dbperf_results::telemetry::TelemetryRow>(
        &run_dir.join(dbperf_results::TELEMETRY_FILE),
    )
    .ok()?;
    rows.records.iter().filter(|r| r.server_host_lost).find_map(|r| {
        r.server_host_error
            .as_ref()
            .map(|why| format!("the server host was lost {:.0} s into the run: {why}", r.t_s))
    })
}

/// The median of a finished run's figure `name` (`notpm`, `geomean`, ...), read typed from
/// the files its workload wrote ([`dbperf_results::figures`]).
pub(crate) fn figure(run_dir: &Path, summary: Option<&Summary>, name: &str) -> Result<f64> {
    let dir = RunDir::open(run_dir)?;
    let (figures, unreadable) = dbperf_results::figures::read(&dir, summary);
    figures
        .get(name)
        .and_then(|v| stats::median(v))
        .ok_or_else(|| match unreadable.first() {
            Some(e) => anyhow!("{}: no {name}: {e}", run_dir.display()),
            None => anyhow!("{}: the run wrote no {name} figure", run_dir.display()),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::prepare_args;

    #[test]
    fn children_get_the_target_through_the_environment_not_argv() {
        let text = "duration = 30\n[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\ntest = \"oltp_read_only\"\nusers = [4]\noptions = { range_size = 5 }\n";
        let plan = Plan::new(crate::Experiment::parse(text, Path::new("x.toml")).unwrap());
        let (group, point) = (&plan.groups[0], &plan.groups[0].points[0]);
        let url = "mysql://sb:S3cret-pw@127.0.0.1:3306/sbtest";
        let r = RunPoint {
            exe: Path::new("/usr/bin/dbperf"),
            url,
            sandbox: "lab-x-1",
            plan: &plan,
            group,
            point,
            lab: &LabPoint::default(),
            client_cpus: None,
            results_dir: Path::new("/r"),
            lab_dir: Path::new("/l"),
            sql_only_telemetry: false,
            server_host: None,
            settle: None,
        };
        let cmd = point_command(&r, Path::new("/l/s.json")).unwrap();
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(args.iter().all(|a| !a.contains("S3cret")), "password in argv: {args:?}");
        assert!(args.iter().all(|a| !a.starts_with("--target")), "{args:?}");
        for want in ["--threads=4", "--time=30", "--warmup-time=0", "--range_size=5"] {
            assert!(args.iter().any(|a| a == want), "{want} missing: {args:?}");
        }
        let env = |cmd: &Command, key: &str| {
            cmd.get_envs()
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v)
                .map(|v| v.to_string_lossy().into_owned())
        };
        assert_eq!(env(&cmd, "DBPERF_TARGET").as_deref(), Some(url));
        // Prepare and prewarm children are made by the same function.
        let prep = child(Path::new("/usr/bin/dbperf"), url);
        assert_eq!(prep.get_args().count(), 0);
        assert_eq!(env(&prep, "DBPERF_TARGET").as_deref(), Some(url));
    }

    #[test]
    fn a_point_that_settles_asks_its_child_to_wait_unless_it_is_sharded() {
        let text = "[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\ntest = \"oltp_read_write\"\nusers = [4]\n";
        let args = |text: &str, settle| point_args_with(Path::new("/tmp"), text, settle);
        let wait = Some(Duration::from_secs(120));
        assert!(args(text, wait).iter().any(|a| a == "--settle=120"));
        assert!(!args(text, None).iter().any(|a| a.starts_with("--settle")));
        let sharded = format!("[network]\nshards = 2\n{text}");
        assert!(!args(&sharded, wait).iter().any(|a| a.starts_with("--settle")));
        let steady = format!("warmup_steady = \"2m\"\n{text}");
        assert!(args(&steady, None).iter().any(|a| a == "--warmup-steady=120"));
        assert!(!args(text, None).iter().any(|a| a.starts_with("--warmup-steady")));
    }

    /// The arguments of the child command of the first point of `text` (parsed as `dir/x.toml`).
    fn point_args(dir: &Path, text: &str) -> Vec<String> {
        point_args_with(dir, text, None)
    }

    /// [`point_args`] of a point that settles first (`settle`).
    fn point_args_with(dir: &Path, text: &str, settle: Option<Duration>) -> Vec<String> {
        let plan = Plan::new(crate::Experiment::parse(text, &dir.join("x.toml")).unwrap());
        let r = RunPoint {
            exe: Path::new("/usr/bin/dbperf"),
            url: "mysql://sb:sb@127.0.0.1:3306/sbtest",
            sandbox: "lab-x-1",
            plan: &plan,
            group: &plan.groups[0],
            point: &plan.groups[0].points[0],
            lab: &LabPoint::default(),
            client_cpus: None,
            results_dir: Path::new("/r"),
            lab_dir: Path::new("/l"),
            sql_only_telemetry: false,
            server_host: plan.experiment.servers[0].host.as_ref().map(|h| &h.remote),
            settle,
        };
        let cmd = point_command(&r, Path::new("/l/s.json")).unwrap();
        cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn lua_and_pgbench_script_points_pass_their_scripts_and_options() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("mine.lua");
        std::fs::write(
            &script,
            "sysbench.cmdline.options = { rows = {\"Rows\", 10} }\nfunction prepare() end\nfunction event() end\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("q.sql"), "SELECT :n;\n").unwrap();
        let lua = "duration = 7\n[[server]]\nid = \"mariadb-10.11\"\n[[workload]]\nkind = \"lua\"\nscript = \"mine.lua\"\noptions = { rows = 50, rand_type = \"uniform\" }\nusers = [3]\n";
        let args = point_args(dir.path(), lua);
        let script = std::path::absolute(&script).unwrap().display().to_string();
        assert_eq!(args[..3], ["lua", script.as_str(), "run"]);
        for want in [
            "--threads=3",
            "--time=7",
            "--warmup-time=0",
            "--rows=50",
            "--rand-type=uniform",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} missing: {args:?}");
        }
        let plan = Plan::new(crate::Experiment::parse(lua, &dir.path().join("x.toml")).unwrap());
        let prepare = prepare_args(&plan, &plan.datasets[0]);
        assert_eq!(prepare[..3], ["lua", script.as_str(), "prepare"]);
        assert!(prepare.iter().any(|a| a == "--rows=50") && prepare.iter().any(|a| a.starts_with("--threads=")));

        let pg = "[[server]]\nid = \"postgres-17\"\n[[workload]]\nkind = \"pgbench\"\nfiles = [\"q.sql@2\"]\nbuiltins = [\"select-only\"]\ndefine = { n = 5 }\nprotocol = \"simple\"\nusers = [2]\n";
        let args = point_args(dir.path(), pg);
        let file = std::path::absolute(dir.path().join("q.sql"))
            .unwrap()
            .display()
            .to_string();
        assert_eq!(args[0], "pgbench");
        for want in [
            format!("--file={file}@2"),
            "--builtin=select-only@1".into(),
            "--define=n=5".into(),
            "--protocol=simple".into(),
            "--clients=2".into(),
        ] {
            assert!(args.contains(&want), "{want} missing: {args:?}");
        }
        assert!(
            !args[1].starts_with("select"),
            "no built-in command with files: {args:?}"
        );
        let one = pg.replace(
            "files = [\"q.sql@2\"]\nbuiltins = [\"select-only\"]\ndefine = { n = 5 }\nprotocol = \"simple\"\n",
            "script = \"select-only\"\n",
        );
        let args = point_args(dir.path(), &one);
        assert_eq!(args[..2], ["pgbench", "select-only"]);
        assert!(!args.iter().any(|a| a.starts_with("--file")), "{args:?}");
        // The lab's shape, not dbperf pgbench's defaults (-M simple, -j 1): prepared, a
        // thread per client.
        for want in ["--protocol=prepared", "--jobs=2", "--clients=2"] {
            assert!(args.iter().any(|a| a == want), "{want} missing: {args:?}");
        }
        assert_eq!(pgbench_jobs(128, 1, None), 128);
        assert_eq!(pgbench_jobs(256, 2, None), 256, "two processes of 128 clients");
        let four = CpuSet {
            text: "0-3".into(),
            cpus: vec![0, 1, 2, 3],
        };
        assert_eq!(pgbench_jobs(200, 1, Some(&four)), 4);
    }

    #[test]
    fn tpch_points_of_an_experiment_share_one_qgen_seed() {
        let text = "name = \"h\"\n[[server]]\nid = \"mariadb-10.11\"\n[[server]]\nid = \"mysql-8.0.31\"\n[[workload]]\nkind = \"tpch\"\nscale_factor = 0.01\nrefresh = false\n";
        let plan = Plan::new(crate::Experiment::parse(text, Path::new("/tmp/x.toml")).unwrap());
        let seeds: Vec<String> = plan
            .groups
            .iter()
            .map(|g| {
                let r = RunPoint {
                    exe: Path::new("/usr/bin/dbperf"),
                    url: "mysql://sb:sb@127.0.0.1:3306/sbtest",
                    sandbox: "lab-h-1",
                    plan: &plan,
                    group: g,
                    point: &g.points[0],
                    lab: &LabPoint::default(),
                    client_cpus: None,
                    results_dir: Path::new("/r"),
                    lab_dir: Path::new("/l"),
                    sql_only_telemetry: false,
                    server_host: None,
                    settle: None,
                };
                let args: Vec<String> = point_command(&r, Path::new("/l/s.json"))
                    .unwrap()
                    .get_args()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                assert!(args.contains(&"--no-refresh".to_owned()), "{args:?}");
                args.into_iter().find(|a| a.starts_with("--seed=")).unwrap()
            })
            .collect();
        assert_eq!(seeds.len(), 2);
        assert_eq!(seeds[0], seeds[1], "one seed for the experiment");
        let own = point_args(Path::new("/tmp"), &text.replace("refresh = false", "seed = 101000000"));
        assert!(
            own.contains(&"--seed=101000000".to_owned()) && !own.contains(&"--no-refresh".to_owned()),
            "{own:?}"
        );
        let err = crate::Experiment::parse(
            &text.replace("refresh = false", "seed = 2147483647"),
            Path::new("x.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("seed 2147483647 is 0 modulo") && err.contains("x.toml:9:8:"),
            "{err}"
        );
    }

    #[test]
    fn a_point_on_another_host_samples_it_and_restarts_it_there_when_cold() {
        let text = "[[server]]\nid = \"mariadb-10.11\"\nhost = \"ssh://bench@db1:2222\"\nssh = \"ssh -i '/k/lab key'\"\nhome = \"/srv/d\"\n[[workload]]\nkind = \"tpch\"\nscale_factor = 0.01\ncold = \"run\"\n";
        let args = point_args(Path::new("/tmp"), text);
        for want in [
            "--server-host=ssh://bench@db1:2222",
            "--server-host-ssh=ssh -i '/k/lab key'",
            "--server-host-dbperf=.dbperf/bin/dbperf",
            "--server-host-home=/srv/d",
            "--cold=run",
            "--cold-sandbox=lab-x-1",
        ] {
            assert!(args.iter().any(|a| a == want), "{want} missing: {args:?}");
        }
        // Here, the cold run restarts the sandbox through its name.
        let here = point_args(
            Path::new("/tmp"),
            &text.replace(
                "host = \"ssh://bench@db1:2222\"\nssh = \"ssh -i '/k/lab key'\"\nhome = \"/srv/d\"\n",
                "",
            ),
        );
        assert!(
            here.iter()
                .all(|a| !a.starts_with("--server-host") && !a.starts_with("--cold-sandbox")),
            "{here:?}"
        );
    }
}
