//! A lab's data sets: each prepared once by the workload's own prepare ([`prepare_args`]),
//! either on a new datadir of the group's server and then kept as a snapshot to copy back
//! ([`prepare_data_set`], kept where [`golden_dir`] says), or into a server that is already
//! running ([`prepare_on_running`]); the settings a workload needs from the server
//! ([`workload_settings`]); TPC-H tables converted to another engine; a point's tables
//! checksummed before it; buffer pools prewarmed after a start.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::experiment::Params;
use super::host::Sandboxes;
use super::plan::{Data, DataSet, Group, Plan};
use super::point::{child, create_log, lua_option_args};
use super::{block_on, safe};
use dbperf_driver::any::AnySession;
use dbperf_driver::mysql::IgnoreErrors;
use dbperf_driver::{Session, Target};

/// Prepares `group`'s data set on a server that is already running, into its URL's database:
/// the workload's own prepare, which resumes the tables dbperf recorded creating there and
/// refuses tables of its names that it did not (`dbperf_workloads::ddl`).
pub(crate) fn prepare_on_running(plan: &Plan, group: &Group, url: &str, exe: &Path, lab_dir: &Path) -> Result<()> {
    let e = &plan.experiment;
    let server = &e.servers[group.server];
    let data = &group.data;
    println!(
        "== preparing data set {} on {} (a server already running: into its database, once per lab run; tables dbperf \
         did not create are refused, never dropped)",
        data.key(),
        server.label
    );
    let log = lab_dir
        .join("logs")
        .join(format!("prepare-{}-{}.log", safe(&server.label), data.key()));
    let mut cmd = child(exe, url);
    cmd.args(prepare_args(plan, data));
    let t0 = Instant::now();
    let status = run_logged(&mut cmd, &log)?;
    if !status.success() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "preparing the data on {:?} failed ({status}):\n{}\n(the whole output: {})",
            server.label,
            tail.join("\n"),
            log.display()
        );
    }
    if let Data::Tpch {
        engine: Some(engine), ..
    } = &data.data
    {
        convert_tpch_tables(url, engine)?;
    }
    println!("   prepared in {:.1} s", t0.elapsed().as_secs_f64());
    Ok(())
}

/// Where a prepared data set is kept: per server and data set, with a fingerprint of
/// everything that shapes the prepared datadir (server id, its settings, the table options),
/// so editing those in the file prepares afresh instead of reusing stale tables.
pub(crate) fn golden_dir(root: &Path, plan: &Plan, group: &Group) -> PathBuf {
    let e = &plan.experiment;
    // The data set's own server (the first of the labels sharing it) and only the settings that
    // shape the data: every label and variant that can use the copy finds it.
    let server = &e.servers[group.data.server];
    let mut print = format!("{}|{:?}", server.id, super::settings::data_shaping(&server.settings));
    let w = &e.workloads[plan.prepare_workload(&group.data)];
    match &w.params {
        // As before kinds existed, so sysbench data sets prepared then are still found.
        Params::Sysbench(sb) => print.push_str(&format!("|{}|{:?}", sb.test.name(), sb.options)),
        // Who prepares the data and the options that shape it (not the run's other options).
        Params::Lua(_) => print.push_str(&format!("|lua|{:?}", group.data.data)),
        other => print.push_str(&format!("|{}", other.kind().name())),
    }
    // FNV-1a: stable across builds, unlike std's hasher.
    let hash = print.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    root.join("lab")
        .join(&e.name)
        .join("data")
        .join(safe(&server.label))
        .join(format!("{}-{:08x}", group.data.key(), hash as u32))
}

/// Settings a workload needs from the server beyond the experiment's: TPC-H's load and its
/// refresh functions stream `LOAD DATA LOCAL`, which MySQL refuses by default (MariaDB takes
/// it), so TPC-H on MySQL gets `local_infile = ON` unless the file sets it.
pub(crate) fn workload_settings(server: &super::experiment::ServerSpec, data: &DataSet) -> Vec<(String, String)> {
    let set = |key: &str| {
        server
            .settings
            .iter()
            .any(|(k, _)| k.replace('-', "_").eq_ignore_ascii_case(key))
    };
    if matches!(data.data, Data::Tpch { .. })
        && server.product() == Some(dbperf_driver::target::Product::Mysql)
        && !set("local_infile")
    {
        vec![("local_infile".into(), "ON".into())]
    } else {
        Vec::new()
    }
}

/// The `dbperf ...` arguments that load data set `data` (the first workload of the file on it
/// decides the table options).
pub(crate) fn prepare_args(plan: &Plan, data: &DataSet) -> Vec<String> {
    let e = &plan.experiment;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2) * 2;
    let w = &e.workloads[plan.prepare_workload(data)];
    let mut args: Vec<String> = Vec::new();
    match (&data.data, &w.params) {
        (Data::Sysbench { tables, rows }, Params::Sysbench(sb)) => {
            args.extend(["sysbench".into(), sb.test.name().into(), "prepare".into()]);
            args.push(format!("--tables={tables}"));
            args.push(format!("--table-size={rows}"));
            args.push(format!("--threads={threads}"));
            for (k, v) in &sb.options {
                args.push(format!("--{k}={v}"));
            }
        }
        (Data::Tpcc { warehouses, schema }, _) => {
            args.extend(["tpcc".into(), "prepare".into()]);
            args.push(format!("--warehouses={warehouses}"));
            args.push(format!("--schema={schema}"));
        }
        (Data::Linkbench { maxid1 }, _) => {
            args.extend(["linkbench".into(), "load".into()]);
            args.push(format!("--maxid1={maxid1}"));
        }
        (Data::Tpch { milli_sf, .. }, _) => {
            args.extend(["tpch".into(), "prepare".into()]);
            args.push(format!("--scale-factor={}", *milli_sf as f64 / 1000.0));
        }
        (Data::Pgbench { scale }, _) => {
            args.extend(["pgbench".into(), "init".into()]);
            args.push(format!("--scale={scale}"));
        }
        // The script's own prepare (sysbench's OLTP scripts: oltp_common's, one table per
        // thread), with the script's options; --threads is the parallelism of a prepare the
        // script marks parallel. No `cleanup` is run: a data set is a datadir of its own,
        // replaced whole by the next copy, so there is nothing to drop.
        (Data::Lua { .. }, Params::Lua(l)) => {
            args.extend(["lua".into(), l.script.display().to_string(), "prepare".into()]);
            args.push(format!("--threads={threads}"));
            args.extend(lua_option_args(l));
        }
        (Data::Sysbench { .. }, _) => unreachable!("a sysbench data set is prepared by a sysbench workload"),
        (Data::Lua { .. }, _) => unreachable!("a lua data set is prepared by a lua workload"),
    }
    args
}

/// Starts the server on a fresh datadir, prepares the data set, stops it and keeps a copy of
/// the datadir at `golden`.
pub(crate) fn prepare_data_set(
    plan: &Plan,
    group: &Group,
    sandboxes: &Sandboxes,
    sandbox: &str,
    golden: &Path,
    exe: &Path,
    lab_dir: &Path,
) -> Result<()> {
    let e = &plan.experiment;
    let server = &e.servers[group.server];
    let data = &group.data;
    println!(
        "== preparing data set {} on {} (once; later starts copy it)",
        data.key(),
        server.label
    );
    sandboxes.stop_quietly(sandbox);
    let mut settings = server.settings.clone();
    settings.extend(workload_settings(server, data));
    let url = sandboxes.start(sandbox, server, &settings, None, true)?;
    let log = lab_dir
        .join("logs")
        .join(format!("prepare-{}-{}.log", safe(&server.label), data.key()));
    let mut cmd = child(exe, &url);
    cmd.args(prepare_args(plan, data));
    let t0 = Instant::now();
    let status = run_logged(&mut cmd, &log)?;
    if !status.success() {
        sandboxes.stop_quietly(sandbox);
        bail!("preparing the data failed ({status}); see {}", log.display());
    }
    if let Data::Tpch {
        engine: Some(engine), ..
    } = &data.data
    {
        if let Err(err) = convert_tpch_tables(&url, engine) {
            sandboxes.stop_quietly(sandbox);
            return Err(err);
        }
    }
    sandboxes.stop_quietly(sandbox);
    sandboxes.save_snapshot(sandbox, golden)?;
    println!(
        "   prepared in {:.1} s, kept at {}",
        t0.elapsed().as_secs_f64(),
        golden.display()
    );
    Ok(())
}

/// The 8 TPC-H tables.
pub(crate) const TPCH_TABLES: &[&str] = &[
    "region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

/// `ALTER TABLE ... ENGINE=engine` for every TPC-H table (`table_engine`).
pub(crate) fn convert_tpch_tables(url: &str, engine: &str) -> Result<()> {
    println!("   converting the TPC-H tables to {engine}");
    block_on(async {
        let target = Target::parse(url)?;
        let mut s = AnySession::connect(&target, IgnoreErrors::Codes(Default::default()))
            .await
            .context("connecting to convert the TPC-H tables")?;
        for t in TPCH_TABLES {
            s.query(&format!("ALTER TABLE {t} ENGINE={engine}"))
                .await
                .with_context(|| {
                    format!("ALTER TABLE {t} ENGINE={engine} (table_engine): does the server have {engine}?")
                })?;
        }
        Ok(())
    })
}

/// `CHECKSUM TABLE` of every base table of the target's database, as one text:
/// `table=checksum` joined by spaces, in table name order.
pub(crate) fn checksum_tables(url: &str) -> Result<String> {
    block_on(async {
        let target = Target::parse(url)?;
        let mut s = AnySession::connect(&target, IgnoreErrors::Codes(Default::default()))
            .await
            .context("connecting to checksum the tables")?;
        let mut tables: Vec<String> = s
            .query_rows("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'")
            .await?
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect();
        tables.sort();
        let mut out = Vec::new();
        for chunk in tables.chunks(50) {
            let list: Vec<String> = chunk.iter().map(|t| format!("`{}`", t.replace('`', "``"))).collect();
            for row in s.query_rows(&format!("CHECKSUM TABLE {}", list.join(", "))).await? {
                let name = row.first().cloned().flatten().unwrap_or_default();
                let sum = row.get(1).cloned().flatten().unwrap_or_else(|| "NULL".into());
                // `db.table` → `table`.
                let name = name.rsplit('.').next().unwrap_or_default().to_owned();
                out.push(format!("{name}={sum}"));
            }
        }
        Ok(out.join(" "))
    })
}

/// `dbperf sysbench prewarm` after a start, so runs do not begin on a cold buffer pool
/// (sysbench data sets; the other kinds warm up with their own `warmup`).
pub(crate) fn prewarm(exe: &Path, url: &str, group: &Group, plan: &Plan, lab_dir: &Path) -> Result<()> {
    let e = &plan.experiment;
    let server = &e.servers[group.server];
    let w = &e.workloads[plan.prepare_workload(&group.data)];
    if let Params::Lua(l) = &w.params {
        return prewarm_lua(exe, url, group, plan, l, lab_dir);
    }
    let (Data::Sysbench { tables, rows }, Params::Sysbench(sb)) = (&group.data.data, &w.params) else {
        return Ok(());
    };
    let log = lab_dir
        .join("logs")
        .join(format!("prewarm-{}-{}.log", safe(&server.label), group.data.key()));
    let mut cmd = child(exe, url);
    cmd.args(["sysbench", sb.test.name(), "prewarm"])
        .arg(format!("--tables={tables}"))
        .arg(format!("--table-size={rows}"))
        .arg(format!("--threads={}", (*tables).min(4)));
    let status = run_logged(&mut cmd, &log)?;
    if !status.success() {
        bail!("prewarm failed ({status}); see {}", log.display());
    }
    Ok(())
}

pub(crate) fn run_logged(cmd: &mut Command, log: &Path) -> Result<std::process::ExitStatus> {
    let file = create_log(log)?;
    let err = file.try_clone()?;
    cmd.stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        .status()
        .with_context(|| format!("running {:?}", cmd.get_program()))
}

/// A Lua script's own `prewarm` after a start, where it has one (sysbench's OLTP scripts: MySQL
/// family only, so not on PostgreSQL). A failed prewarm is a warning: the run still measures,
/// only from a colder start.
pub(crate) fn prewarm_lua(
    exe: &Path,
    url: &str,
    group: &Group,
    plan: &Plan,
    l: &super::experiment::Lua,
    lab_dir: &Path,
) -> Result<()> {
    let server = &plan.experiment.servers[group.server];
    if !l.prewarm || (l.oltp_common && server.family() == dbperf_driver::target::Family::Postgres) {
        return Ok(());
    }
    let log = lab_dir
        .join("logs")
        .join(format!("prewarm-{}-{}.log", safe(&server.label), group.data.key()));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2);
    let mut cmd = child(exe, url);
    cmd.arg("lua")
        .arg(&l.script)
        .arg("prewarm")
        .arg(format!("--threads={threads}"))
        .args(lua_option_args(l));
    let status = run_logged(&mut cmd, &log)?;
    if !status.success() {
        eprintln!(
            "warning: {} prewarm failed ({status}); the runs start colder. See {}",
            l.script.display(),
            log.display()
        );
    }
    Ok(())
}
