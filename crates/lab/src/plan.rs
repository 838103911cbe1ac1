//! Expanding an [`Experiment`] into the ordered list of server starts and runs, estimating how
//! long it takes, and printing it (`dbperf lab plan`).
//!
//! A *group* is one server start: a server, a variant, a pinning and a data set. Every run
//! (a *point*: workload x users x repetition) belongs to one group. Each data set is prepared
//! once per server and copied into place for every group that uses it.

use std::fmt::Write as _;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::experiment::{
    parse_size, Cold, DataSize, Experiment, Order, Params, Restore, SettlePolicy, TpchTest, BYTES_PER_ROW,
};
use super::search::Search;
use super::workload::{Scale, MAX_MAXID1, MAX_WAREHOUSES};

/// The buffer pool a sandbox gets when the experiment does not set one (the benchmark profile).
pub const DEFAULT_BUFFER_POOL: u64 = 512 << 20;

/// What a data set holds: a workload kind's tables at its data parameters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Data {
    /// `tables` sysbench tables of `rows` rows.
    Sysbench {
        tables: u32,
        rows: u32,
    },
    Tpcc {
        warehouses: u32,
        schema: String,
    },
    Linkbench {
        maxid1: u64,
    },
    /// The scale factor in thousandths (so the key is exact), the engine (`None`: as loaded).
    Tpch {
        milli_sf: u64,
        engine: Option<String>,
    },
    Pgbench {
        scale: u32,
    },
    /// A Lua script's data: what prepares it (`oltp_common` for sysbench's OLTP scripts, else
    /// the script's path) and the options that shape it, as given.
    Lua {
        by: String,
        options: Vec<(String, String)>,
    },
}

/// A data set, prepared once and copied into every start that uses it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DataSet {
    /// The first server of the file whose prepared data this is: servers of one version on
    /// one host whose settings differ only in ones that do not shape the data
    /// ([`data_home`]) share it.
    pub server: usize,
    pub data: Data,
}

impl DataSet {
    /// `8x100000`, `tpcc-w10`, `linkbench-n100001`, `tpch-sf1-MyISAM`, `pgbench-s10`,
    /// `lua-oltp_common-tables=4-table_size=10000`.
    pub fn key(&self) -> String {
        match &self.data {
            Data::Sysbench { tables, rows } => format!("{tables}x{rows}"),
            Data::Tpcc { warehouses, schema } if schema == "dbperf" => format!("tpcc-w{warehouses}"),
            Data::Tpcc { warehouses, schema } => format!("tpcc-w{warehouses}-{schema}"),
            Data::Linkbench { maxid1 } => format!("linkbench-n{maxid1}"),
            Data::Tpch { milli_sf, engine } => {
                let sf = *milli_sf as f64 / 1000.0;
                match engine {
                    Some(e) => format!("tpch-sf{sf}-{e}"),
                    None => format!("tpch-sf{sf}"),
                }
            }
            Data::Pgbench { scale } => format!("pgbench-s{scale}"),
            Data::Lua { by, options } => {
                let stem = std::path::Path::new(by)
                    .file_stem()
                    .map_or_else(|| by.clone(), |s| s.to_string_lossy().into_owned());
                let mut key = format!("lua-{stem}");
                for (k, v) in options {
                    let _ = write!(key, "-{k}={v}");
                }
                let key = super::name_safe(&key, &['-', '_', '.', '='], '_');
                if key.len() <= 80 {
                    key
                } else {
                    // Long option values: cut, with a hash of the whole so keys stay apart.
                    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                    });
                    format!("{}-{:08x}", &key[..64], hash as u32)
                }
            }
        }
    }

    /// A Lua data set's rows, from its `tables` and `table_size` options where it has them
    /// (sysbench's defaults, 1 x 10,000, otherwise).
    fn lua_rows(options: &[(String, String)]) -> f64 {
        let get = |name: &str, default: f64| {
            options
                .iter()
                .find(|(k, _)| k == name)
                .and_then(|(_, v)| v.parse::<f64>().ok())
                .unwrap_or(default)
        };
        get("tables", 1.0) * get("table_size", 10_000.0)
    }

    /// Bytes the data takes on disk, roughly (for copy and restore estimates).
    pub fn bytes(&self) -> f64 {
        match &self.data {
            Data::Sysbench { tables, rows } => *rows as f64 * *tables as f64 * BYTES_PER_ROW,
            Data::Tpcc { warehouses, .. } => *warehouses as f64 * TPCC_BYTES_PER_WAREHOUSE,
            Data::Linkbench { maxid1 } => *maxid1 as f64 * LINKBENCH_BYTES_PER_NODE,
            Data::Tpch { milli_sf, .. } => *milli_sf as f64 / 1000.0 * TPCH_BYTES_PER_SF,
            Data::Pgbench { scale } => *scale as f64 * PGBENCH_BYTES_PER_SCALE,
            Data::Lua { options, .. } => Self::lua_rows(options) * BYTES_PER_ROW,
        }
    }

    /// Seconds the load takes, roughly (without the server start and the copy).
    fn load_secs(&self) -> f64 {
        match &self.data {
            Data::Sysbench { tables, rows } => *rows as f64 * *tables as f64 / PREPARE_ROWS_PER_S,
            Data::Tpcc { warehouses, .. } => *warehouses as f64 * TPCC_LOAD_S_PER_WAREHOUSE,
            Data::Linkbench { maxid1 } => *maxid1 as f64 / LINKBENCH_LOAD_NODES_PER_S,
            Data::Tpch { milli_sf, .. } => *milli_sf as f64 / 1000.0 * TPCH_LOAD_S_PER_SF,
            Data::Pgbench { scale } => *scale as f64 * PGBENCH_LOAD_S_PER_SCALE,
            Data::Lua { options, .. } => Self::lua_rows(options) / PREPARE_ROWS_PER_S,
        }
    }
}

/// One measured run.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Stable id: `server/variant[/pinning]/workload/tUSERS/rREP`.
    pub id: String,
    /// Index into the experiment's workloads.
    pub workload: usize,
    pub users: u32,
    /// From 1.
    pub rep: u32,
}

/// One server start and the runs made on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub server: usize,
    pub variant: usize,
    pub pinning: usize,
    pub data: DataSet,
    pub points: Vec<Point>,
}

/// The whole expanded plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub experiment: Experiment,
    pub groups: Vec<Group>,
    /// Every data set, in the order first needed.
    pub datasets: Vec<DataSet>,
}

/// Rough costs used for the estimate (seconds, bytes), measured on a 2-vCPU box.
const START_S: f64 = 6.0;
/// TPC-C: `bench/lab-restore` measured 10 warehouses loaded in about 27 s into a 1.2 GB datadir.
const TPCC_BYTES_PER_WAREHOUSE: f64 = 120e6;
const TPCC_LOAD_S_PER_WAREHOUSE: f64 = 3.0;
const LINKBENCH_BYTES_PER_NODE: f64 = 1_000.0;
const LINKBENCH_LOAD_NODES_PER_S: f64 = 20_000.0;
const TPCH_BYTES_PER_SF: f64 = 1.8e9;
const TPCH_LOAD_S_PER_SF: f64 = 400.0;
/// One power test (22 queries and the refreshes) at SF 1.
const TPCH_POWER_S_PER_SF: f64 = 900.0;
const TPCH_POWER_MIN_S: f64 = 5.0;
const PGBENCH_BYTES_PER_SCALE: f64 = 16e6;
const PGBENCH_LOAD_S_PER_SCALE: f64 = 1.0;
const STOP_S: f64 = 3.0;
const RUN_OVERHEAD_S: f64 = 2.0;
const PREPARE_ROWS_PER_S: f64 = 150_000.0;
const COPY_BYTES_PER_S: f64 = 300e6;
/// A freshly initialized datadir (system tables, undo, redo) before any benchmark data.
const EMPTY_DATADIR_BYTES: f64 = 200e6;

/// The server whose prepared data server `si` uses: the first of the file of the same version
/// on the same host with the same data-shaping settings (`settings::data_shaping`: a buffer pool
/// size or doublewrite does not make another data set, a page size does).
pub fn data_home(e: &Experiment, si: usize) -> usize {
    let of = |s: &super::experiment::ServerSpec| {
        (
            s.id.clone(),
            s.host.as_ref().map(|h| h.remote.url.clone()),
            s.running().is_some(),
            super::settings::data_shaping(&s.settings),
        )
    };
    let me = of(&e.servers[si]);
    // A running server's data is its own.
    if me.2 {
        return si;
    }
    (0..si).find(|&sj| of(&e.servers[sj]) == me).unwrap_or(si)
}

/// The data sets of server `si`, each with the workloads that use it, in file order.
fn data_sets(e: &Experiment, si: usize) -> Vec<(DataSet, Vec<usize>)> {
    let home = data_home(e, si);
    let bp = e.servers[si]
        .settings
        .iter()
        .rev()
        .find(|(k, _)| {
            let k = k.replace('-', "_");
            // The buffer pool as each product names it (PostgreSQL: shared_buffers).
            k.eq_ignore_ascii_case("innodb_buffer_pool_size") || k.eq_ignore_ascii_case("shared_buffers")
        })
        .and_then(|(_, v)| parse_size(v))
        .unwrap_or(DEFAULT_BUFFER_POOL);
    let mut sets: Vec<(DataSet, Vec<usize>)> = Vec::new();
    for (wi, w) in e.workloads.iter().enumerate() {
        let data = match &w.params {
            Params::Sysbench(sb) => Data::Sysbench {
                tables: sb.tables,
                rows: match sb.size {
                    DataSize::Rows(r) => r,
                    DataSize::VsBufferPool(x) => {
                        ((bp as f64 * x) / (BYTES_PER_ROW * sb.tables as f64)).round().max(1.0) as u32
                    }
                },
            },
            Params::Tpcc(t) => Data::Tpcc {
                warehouses: match t.warehouses {
                    Scale::Count(n) => n as u32,
                    Scale::VsBufferPool(x) => ((bp as f64 * x) / TPCC_BYTES_PER_WAREHOUSE)
                        .round()
                        .clamp(1.0, f64::from(MAX_WAREHOUSES)) as u32,
                },
                schema: t.schema.clone(),
            },
            Params::Linkbench(l) => Data::Linkbench {
                maxid1: match l.maxid1 {
                    Scale::Count(n) => n,
                    // Ids run from 1 to maxid1 - 1.
                    Scale::VsBufferPool(x) => {
                        ((bp as f64 * x) / LINKBENCH_BYTES_PER_NODE)
                            .round()
                            .clamp(1.0, (MAX_MAXID1 - 1) as f64) as u64
                            + 1
                    }
                },
            },
            Params::Tpch(t) => Data::Tpch {
                milli_sf: (t.scale_factor * 1000.0).round().max(1.0) as u64,
                engine: t.table_engine.clone(),
            },
            Params::Pgbench(p) => Data::Pgbench { scale: p.scale },
            Params::Lua(l) => {
                let (by, options) = l.data();
                Data::Lua { by, options }
            }
        };
        let ds = DataSet { server: home, data };
        match sets.iter_mut().find(|(d, _)| *d == ds) {
            Some((_, ws)) => ws.push(wi),
            None => sets.push((ds, vec![wi])),
        }
    }
    sets
}

/// What a plan adds up to: counts and estimated seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
    pub runs: u64,
    /// Server starts (groups).
    pub starts: u64,
    pub datasets: u64,
    /// Data sets copied back between the points of one server start (`restore = "point"`).
    pub restores: u64,
    pub runs_s: f64,
    pub prepares_s: f64,
    /// Starts, restores and stops.
    pub restarts_s: f64,
}

impl Totals {
    /// The totals of the whole plan of `e`, computed without expanding it (so a plan too large
    /// to list still gets its totals at once).
    pub fn of(e: &Experiment) -> Totals {
        let reps = u64::from(e.repetitions);
        let mut t = Totals {
            runs: e.runs(),
            starts: 0,
            datasets: 0,
            restores: 0,
            runs_s: 0.0,
            prepares_s: 0.0,
            restarts_s: 0.0,
        };
        let mut prepared: Vec<DataSet> = Vec::new();
        for si in 0..e.servers.len() {
            for (ds, ws) in data_sets(e, si) {
                let mut used = false;
                for vi in 0..e.variants.len() {
                    for pi in 0..e.pinnings.len() {
                        // One group (server start) per combination that has points.
                        let included: Vec<usize> =
                            ws.iter().copied().filter(|&wi| e.includes(si, vi, pi, wi)).collect();
                        if included.is_empty() {
                            continue;
                        }
                        used = true;
                        t.starts += 1;
                        t.restarts_s += group_overhead_secs(&ds);
                        let mut restoring = 0u64;
                        for wi in included {
                            let w = &e.workloads[wi];
                            let points = reps * w.users.len() as u64;
                            t.runs_s += points as f64 * point_secs(e, vi, wi);
                            if w.restore == Restore::Point {
                                restoring += points;
                            }
                        }
                        let restores = restoring.saturating_sub(1);
                        t.restores += restores;
                        t.restarts_s += restores as f64 * group_overhead_secs(&ds);
                    }
                }
                if used && !prepared.contains(&ds) {
                    t.datasets += 1;
                    t.prepares_s += prepare_secs(&ds);
                    prepared.push(ds);
                }
            }
        }
        t
    }

    /// Estimated seconds in all.
    pub fn total_s(&self) -> f64 {
        self.runs_s + self.prepares_s + self.restarts_s
    }

    /// The lines `dbperf lab plan` opens with.
    pub fn render(&self, e: &Experiment) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Experiment {} ({})", e.name, e.path.display());
        if let Some(d) = &e.description {
            let _ = writeln!(out, "  {}", d.trim());
        }
        let users: usize = e.workloads.iter().map(|w| w.users.len()).sum();
        let _ = writeln!(
            out,
            "  {} server(s) x {} variant(s) x {} pinning(s), {} workload(s) with {} user count(s) in all, {} repetition(s) = {} runs",
            e.servers.len(),
            e.variants.len(),
            e.pinnings.len(),
            e.workloads.len(),
            users,
            e.repetitions,
            self.runs
        );
        let _ = writeln!(
            out,
            "  order: {}; {} server start(s); {} data set(s) prepared once each and copied in; {} restore(s) between points",
            match e.order {
                Order::Stable => "stable".to_string(),
                Order::Shuffled => format!("shuffled (seed {})", e.seed),
            },
            self.starts,
            self.datasets,
            self.restores
        );
        let _ = writeln!(
            out,
            "  {}{}",
            e.settle.describe(),
            match (e.settle.policy, e.network.shards) {
                (SettlePolicy::Off, _) | (_, 1) => "",
                _ => " (not the sharded points: their client processes start together at a set time)",
            }
        );
        let _ = writeln!(
            out,
            "  estimated time: {} (runs {}, prepares {}, restarts {}; settle waits and warmups until steady not counted)",
            hms(self.total_s()),
            hms(self.runs_s),
            hms(self.prepares_s),
            hms(self.restarts_s)
        );
        out
    }
}

/// Estimated seconds of one point of variant `variant` and workload `workload`.
fn point_secs(e: &Experiment, variant: usize, workload: usize) -> f64 {
    let w = &e.workloads[workload];
    match &w.params {
        Params::Tpch(t) => {
            let power = (t.scale_factor * TPCH_POWER_S_PER_SF).max(TPCH_POWER_MIN_S);
            let restarts = match t.cold {
                Cold::Off => 0.0,
                Cold::Query => 22.0,
                Cold::Run => 1.0,
            } * (START_S + STOP_S);
            match t.test {
                TpchTest::Power => f64::from(t.repeat) * (power + restarts) + RUN_OVERHEAD_S,
                // The streams share the machine.
                TpchTest::Throughput => f64::from(t.streams) * power + RUN_OVERHEAD_S,
            }
        }
        _ => e.duration(variant, workload).as_secs_f64() + w.warmup.as_secs_f64() + RUN_OVERHEAD_S,
    }
}

fn prepare_secs(d: &DataSet) -> f64 {
    START_S + 4.0 + d.load_secs() + STOP_S + copy_secs(d)
}

fn group_overhead_secs(d: &DataSet) -> f64 {
    START_S + STOP_S + copy_secs(d)
}

fn copy_secs(d: &DataSet) -> f64 {
    (EMPTY_DATADIR_BYTES + d.bytes()) / COPY_BYTES_PER_S
}

impl Plan {
    /// Expands `experiment` in its order.
    pub fn new(experiment: Experiment) -> Plan {
        let e = &experiment;
        let labels: Vec<String> = workload_labels(e);
        let mut groups = Vec::new();
        for (si, server) in e.servers.iter().enumerate() {
            let sets = data_sets(e, si);
            for (ds, ws) in &sets {
                for (vi, variant) in e.variants.iter().enumerate() {
                    for (pi, pinning) in e.pinnings.iter().enumerate() {
                        let mut points = Vec::new();
                        for rep in 1..=e.repetitions {
                            for &wi in ws.iter().filter(|&&wi| e.includes(si, vi, pi, wi)) {
                                for &users in &e.workloads[wi].users {
                                    let mut id = format!("{}/{}", server.label, variant.name);
                                    if e.pinnings.len() > 1 {
                                        let _ = write!(id, "/{}", pinning.name);
                                    }
                                    let _ = write!(id, "/{}/t{users}/r{rep}", labels[wi]);
                                    points.push(Point {
                                        id,
                                        workload: wi,
                                        users,
                                        rep,
                                    });
                                }
                            }
                        }
                        if points.is_empty() {
                            // Every workload of this data set is left out here.
                            continue;
                        }
                        groups.push(Group {
                            server: si,
                            variant: vi,
                            pinning: pi,
                            data: ds.clone(),
                            points,
                        });
                    }
                }
            }
        }
        if e.order == Order::Shuffled {
            let mut rng = SmallRng::seed_from_u64(e.seed);
            groups.shuffle(&mut rng);
            for g in &mut groups {
                g.points.shuffle(&mut rng);
            }
        }
        let mut datasets = Vec::new();
        for g in &groups {
            if !datasets.contains(&g.data) {
                datasets.push(g.data.clone());
            }
        }
        Plan {
            experiment,
            groups,
            datasets,
        }
    }

    /// Keeps only the points whose id contains one of `patterns` (all when empty).
    pub fn retain_points(&mut self, patterns: &[String]) {
        if patterns.is_empty() {
            return;
        }
        for g in &mut self.groups {
            g.points
                .retain(|p| patterns.iter().any(|pat| p.id.contains(pat.as_str())));
        }
        self.groups.retain(|g| !g.points.is_empty());
        let mut datasets = Vec::new();
        for g in &self.groups {
            if !datasets.contains(&g.data) {
                datasets.push(g.data.clone());
            }
        }
        self.datasets = datasets;
    }

    /// The workload whose options prepare data set `d`: the first one in the file that uses it
    /// (the same whatever the order of the points).
    pub fn prepare_workload(&self, d: &DataSet) -> usize {
        self.groups
            .iter()
            .filter(|g| g.data == *d)
            .flat_map(|g| g.points.iter().map(|p| p.workload))
            .min()
            .unwrap_or(0)
    }

    /// Number of runs.
    pub fn points(&self) -> usize {
        self.groups.iter().map(|g| g.points.len()).sum()
    }

    /// Estimated seconds for one point.
    pub fn point_estimate(&self, g: &Group, p: &Point) -> f64 {
        let sharded = match self.experiment.network.shards {
            1 => 0.0,
            _ => shard_allowance(p.users) as f64 + 2.0,
        };
        point_secs(&self.experiment, g.variant, p.workload) + sharded
    }

    /// Estimated seconds to prepare a data set (init, start, load, stop, copy).
    pub fn prepare_estimate(&self, d: &DataSet) -> f64 {
        prepare_secs(d)
    }

    /// Estimated seconds for a group's start, restore and stop, without its points.
    pub fn group_overhead_estimate(&self, g: &Group) -> f64 {
        group_overhead_secs(&g.data)
    }

    /// Whether the data is restored before `p` when it is not the first point of its group.
    pub fn restores_before(&self, p: &Point) -> bool {
        self.experiment.workloads[p.workload].restore == Restore::Point
    }

    /// Restores between the points of group `g` (the first point starts on a fresh copy).
    pub fn restores_in(&self, g: &Group) -> u64 {
        (g.points.iter().filter(|p| self.restores_before(p)).count() as u64).saturating_sub(1)
    }

    /// The totals of the plan as it stands (after [`Plan::retain_points`]).
    pub fn totals(&self) -> Totals {
        Totals {
            runs: self.points() as u64,
            starts: self.groups.len() as u64,
            datasets: self.datasets.len() as u64,
            restores: self.groups.iter().map(|g| self.restores_in(g)).sum(),
            runs_s: self
                .groups
                .iter()
                .flat_map(|g| g.points.iter().map(move |p| (g, p)))
                .map(|(g, p)| self.point_estimate(g, p))
                .sum(),
            prepares_s: self.datasets.iter().map(|d| self.prepare_estimate(d)).sum(),
            restarts_s: self
                .groups
                .iter()
                .map(|g| (1 + self.restores_in(g)) as f64 * self.group_overhead_estimate(g))
                .sum(),
        }
    }

    /// Estimated total seconds.
    pub fn estimate(&self) -> f64 {
        self.totals().total_s()
    }

    /// The text `dbperf lab plan` prints.
    pub fn render(&self) -> String {
        let e = &self.experiment;
        if let Some(search) = &e.search {
            return self.render_search(search);
        }
        let mut out = self.totals().render(e);
        let _ = writeln!(out);
        let labels = workload_labels(e);
        let mut table = vec![vec![
            "#".to_string(),
            "server".into(),
            "variant".into(),
            "pinning".into(),
            "data".into(),
            "runs".into(),
            "time".into(),
        ]];
        for (i, g) in self.groups.iter().enumerate() {
            let server = &e.servers[g.server];
            let mut workloads: Vec<String> = Vec::new();
            for (wi, label) in labels.iter().enumerate() {
                let users: Vec<String> = {
                    let mut u: Vec<u32> = g.points.iter().filter(|p| p.workload == wi).map(|p| p.users).collect();
                    u.sort_unstable();
                    u.dedup();
                    u.iter().map(u32::to_string).collect()
                };
                if !users.is_empty() {
                    workloads.push(format!("{label} users {}", users.join(",")));
                }
            }
            let p = &e.pinnings[g.pinning];
            let pin = match (&p.server_cpus, &p.client_cpus) {
                (None, None) => p.name.clone(),
                (s, c) => format!(
                    "{} (server {}, client {})",
                    p.name,
                    s.as_ref().map_or("any", |c| c.text.as_str()),
                    c.as_ref().map_or("any", |c| c.text.as_str())
                ),
            };
            let secs =
                self.group_overhead_estimate(g) + g.points.iter().map(|p| self.point_estimate(g, p)).sum::<f64>();
            table.push(vec![
                (i + 1).to_string(),
                format!(
                    "{}{}{}",
                    server.label,
                    match (server.jemalloc, server.running().is_some()) {
                        (true, _) => " +jemalloc",
                        (_, true) => " (running: SET at run time)",
                        _ => "",
                    },
                    server
                        .host
                        .as_ref()
                        .map(|h| format!(" on {}", h.remote.host))
                        .unwrap_or_default()
                ),
                e.variants[g.variant].name.clone(),
                pin,
                g.data.key(),
                format!("{} ({} x{} reps)", g.points.len(), workloads.join("; "), e.repetitions),
                hms(secs),
            ]);
        }
        out.push_str(&align(&table));
        let servers_with_settings: Vec<String> = e
            .servers
            .iter()
            .filter(|s| !s.settings.is_empty())
            .map(|s| format!("  {}: {}", s.label, super::settings::settings_text(&s.settings)))
            .collect();
        if !servers_with_settings.is_empty() {
            let _ = writeln!(
                out,
                "\nServer settings (every start):\n{}",
                servers_with_settings.join("\n")
            );
        }
        if let Some(line) = network_text(&e.network) {
            let _ = writeln!(out, "\n{line}");
        }
        let labels = workload_labels(e);
        for (w, label) in e.workloads.iter().zip(&labels) {
            if let Params::Tpch(t) = &w.params {
                let _ = writeln!(
                    out,
                    "\n{label}: qgen seed {} ({}), the same query parameters on every server{}",
                    t.qgen_seed(&e.name),
                    if t.seed.is_some() {
                        "the file's"
                    } else {
                        "made from the experiment's name"
                    },
                    if t.refresh {
                        ""
                    } else {
                        "; no refresh functions (refresh = false)"
                    }
                );
            }
        }
        out
    }
}

/// Seconds a shard of a point gets to open its connections before the shared start (which
/// is this plus the warmup after the shards are started).
pub fn shard_allowance(users: u32) -> u64 {
    10 + u64::from(users) / 50
}

/// How the plan's clients reach the server, when `[network]` says anything.
fn network_text(n: &super::experiment::Network) -> Option<String> {
    let client = match n.netns.as_deref() {
        None => None,
        Some("") => {
            Some("each point's client in a network namespace of its own (veth pair, unshaped; root only)".to_string())
        }
        Some(s) => Some(format!(
            "each point's client in a network namespace of its own (veth pair, {s}; root only)"
        )),
    };
    let shards = (n.shards > 1).then(|| {
        format!(
            "each point spread over {} client processes (--shard I/{}), started together and merged into the point's run",
            n.shards, n.shards
        )
    });
    match (client, shards) {
        (None, None) => None,
        (c, s) => Some(format!(
            "Network: {}",
            [c, s].into_iter().flatten().collect::<Vec<_>>().join("; ")
        )),
    }
}

impl Plan {
    /// `lab plan` of a search file: the base every trial shares, the space, the objective and
    /// constraints, and the budget with its estimated time: a trial is a server start with its
    /// settings on a fresh copy of the data and one run; the best is then confirmed against
    /// the defaults, `repetitions` runs each.
    fn render_search(&self, search: &Search) -> String {
        let e = &self.experiment;
        let (Some(g), Some(d)) = (self.groups.first(), self.datasets.first()) else {
            return String::new();
        };
        let Some(p) = g.points.first() else {
            return String::new();
        };
        let trial_s = self.group_overhead_estimate(g) + self.point_estimate(g, p);
        let reps = e.repetitions.max(super::tune::MIN_CONFIRMATIONS);
        let confirm = 2 * u64::from(reps);
        let by_trials = search.trials.map(|t| (u64::from(t) + confirm) as f64 * trial_s);
        let searched_s = match (by_trials, search.time) {
            (Some(t), Some(limit)) => t.min(limit.as_secs_f64()),
            (Some(t), None) => t,
            (None, Some(limit)) => limit.as_secs_f64(),
            (None, None) => 0.0,
        };
        let mut out = String::new();
        let _ = writeln!(out, "Experiment {} ({}): a settings search", e.name, e.path.display());
        if let Some(desc) = &e.description {
            let _ = writeln!(out, "  {}", desc.trim());
        }
        let server = &e.servers[0];
        let label = workload_labels(e).into_iter().next().unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}{} on {}, {} at {} users, data {}",
            search.objective.text(),
            match search.objective {
                super::search::Objective::MinP99 => " (at the workload's fixed rate)",
                _ => "",
            },
            server.label,
            label,
            p.users,
            d.key()
        );
        if !server.settings.is_empty() {
            let _ = writeln!(
                out,
                "  every trial: {}",
                super::settings::settings_text(&server.settings)
            );
        }
        let mut table = vec![vec!["parameter".to_string(), "values".into()]];
        for param in &search.parameters {
            table.push(vec![param.name.clone(), param.domain.to_string()]);
        }
        out.push('\n');
        for line in align(&table).lines() {
            let _ = writeln!(out, "  {line}");
        }
        let _ = writeln!(
            out,
            "  space: {}",
            match search.space_size() {
                Some(n) => format!("{n} settings"),
                None => "continuous (a parameter takes any number in its range)".into(),
            }
        );
        let constraints: Vec<String> = search.constraints.iter().map(|c| c.to_string()).collect();
        let _ = writeln!(
            out,
            "  constraints: {}",
            if constraints.is_empty() {
                "none".to_string()
            } else {
                constraints.join(", ")
            }
        );
        let budget = match (search.trials, search.time) {
            (Some(t), Some(limit)) => format!("{t} trials or {}, whichever ends first", hms(limit.as_secs_f64())),
            (Some(t), None) => format!("{t} trials"),
            (None, Some(limit)) => hms(limit.as_secs_f64()),
            (None, None) => String::new(),
        };
        let _ = writeln!(out, "  budget: {budget}; seed {}", search.seed);
        // The trials the seed fixes before any measurement: the defaults and the design.
        let tuner = super::tuner::Tuner {
            space: super::tuner::Space {
                params: search.parameters.clone(),
            },
            strategy: super::tuner::Strategy::Model,
            seed: search.seed,
            constraints: search.constraints.len(),
            budget: search.trials.map_or_else(
                || (searched_s / trial_s.max(1.0)).floor().max(1.0) as usize,
                |t| t as usize,
            ),
        };
        let _ = writeln!(out, "  first trials (the seed sets them; the model chooses the rest):");
        let _ = writeln!(out, "    trial 1: the server's defaults");
        for k in 0..tuner.design_size() {
            let (x, _) = tuner.propose(&[], k);
            let set = super::settings::settings_text(&tuner.space.settings(&x));
            let _ = writeln!(out, "    trial {}: {set}", k + 2);
        }
        let _ = writeln!(
            out,
            "  a trial: a server start with its settings, the data restored, one run: about {}",
            hms(trial_s)
        );
        let _ = writeln!(
            out,
            "  then the best measured again, and confirmed against the defaults: {reps} run(s) each, interleaved"
        );
        let _ = writeln!(
            out,
            "  estimated time: {} (prepare {}, trials and confirmation {})",
            hms(self.prepare_estimate(d) + searched_s),
            hms(self.prepare_estimate(d)),
            hms(searched_s)
        );
        out
    }
}

/// A label per workload: the sysbench test (`oltp_read_only`), or the kind (`tpcc`,
/// `linkbench`, `tpch-power`, `pgbench-tpcb-like`, `pgbench-mine+select-only` for script
/// files, `lua-oltp_read_write` for a Lua script), with `#N` when one appears more than once.
pub fn workload_labels(e: &Experiment) -> Vec<String> {
    labels_of(&e.workloads)
}

/// [`workload_labels`] of a file's workloads, before its experiment is made.
pub(crate) fn labels_of(workloads: &[super::experiment::WorkloadSpec]) -> Vec<String> {
    let base: Vec<String> = workloads
        .iter()
        .map(|w| match &w.params {
            Params::Sysbench(s) => s.test.name().to_string(),
            Params::Tpch(t) => format!("tpch-{}", t.test.name()),
            Params::Pgbench(p) => format!("pgbench-{}", p.label()),
            Params::Lua(l) => format!("lua-{}", l.name),
            other => other.kind().name().to_string(),
        })
        .collect();
    base.iter()
        .enumerate()
        .map(|(i, b)| {
            if base.iter().filter(|o| *o == b).count() > 1 {
                let nth = base[..i].iter().filter(|o| *o == b).count() + 1;
                format!("{b}#{nth}")
            } else {
                b.clone()
            }
        })
        .collect()
}

/// `1h 02m`, `3m 05s`, `42s`.
pub fn hms(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The width of each column of `rows`, in characters (rows may be ragged).
pub(crate) fn column_widths(rows: &[Vec<String>]) -> Vec<usize> {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// Left-aligned columns separated by two spaces.
fn align(rows: &[Vec<String>]) -> String {
    let widths = column_widths(rows);
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, cell)| format!("{cell:<w$}", w = widths[i]))
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

/// Shortens an estimate for progress lines.
pub fn eta(d: Duration) -> String {
    hms(d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(text: &str) -> Plan {
        Plan::new(Experiment::parse(text, Path::new("x.toml")).unwrap())
    }

    /// Labels of one version whose settings differ only in ones that do not shape the data
    /// share one prepared data set; a page size makes another.
    #[test]
    fn labels_of_one_version_share_a_data_set_unless_a_setting_shapes_the_data() {
        let p = plan(
            r#"
[[server]]
id = "mariadb-10.11"
label = "bp75"
settings = { innodb_buffer_pool_size = "75G", innodb_doublewrite = "ON" }
[[server]]
id = "mariadb-10.11"
label = "bp16"
settings = { innodb_buffer_pool_size = "16G", innodb_doublewrite = "OFF" }
[[server]]
id = "mariadb-10.11"
label = "page4k"
settings = { innodb_buffer_pool_size = "16G", innodb_page_size = "4k" }
[[server]]
id = "mysql-8.0.31"
label = "mysql"
settings = { innodb_buffer_pool_size = "16G" }
[[workload]]
kind = "linkbench"
maxid1 = 100001
users = [8]
"#,
        );
        let homes: Vec<usize> = p.groups.iter().map(|g| g.data.server).collect();
        assert_eq!(
            homes,
            [0, 0, 2, 3],
            "bp16 uses bp75's copy; page4k and mysql have their own"
        );
        assert_eq!(p.datasets.len(), 3);
        let of = Totals::of(&p.experiment);
        assert_eq!((of.datasets, of.starts), (3, 4));
        assert!(
            p.render().contains("3 data set(s) prepared once each"),
            "{}",
            p.render()
        );
    }

    /// TPC-C warehouses and LinkBench ids from each server's own buffer pool.
    #[test]
    fn tpcc_and_linkbench_data_are_sized_from_each_servers_buffer_pool() {
        let p = plan(
            r#"
[[server]]
id = "mariadb-10.11"
settings = { innodb_buffer_pool_size = "1200M" }
[[server]]
id = "mysql-8.0.31"
settings = { innodb_buffer_pool_size = "600M" }
[[workload]]
kind = "tpcc"
data_vs_buffer_pool = 2.0
users = [8]
[[workload]]
kind = "linkbench"
data_vs_buffer_pool = 0.5
users = [8]
"#,
        );
        let keys: Vec<String> = p.datasets.iter().map(DataSet::key).collect();
        // 2 x 1200 MiB / 120 MB per warehouse = 21; 0.5 x 1200 MiB / 1000 bytes per id (+1).
        assert_eq!(
            keys,
            ["tpcc-w21", "linkbench-n629147", "tpcc-w10", "linkbench-n314574"],
            "{keys:?}"
        );
        let args = |i: usize| {
            let g = p.groups.iter().find(|g| g.data == p.datasets[i]).unwrap();
            crate::data::prepare_args(&p, &g.data)
        };
        assert!(args(0).contains(&"--warehouses=21".to_owned()), "{:?}", args(0));
        assert!(args(3).contains(&"--maxid1=314574".to_owned()), "{:?}", args(3));
    }

    const TWO_SERVERS: &str = r#"
repetitions = 2
duration = 10
warmup = 5
[[server]]
id = "mariadb-10.11"
settings = { innodb_buffer_pool_size = "1G" }
[[server]]
id = "mysql-8.0.31"
[variants]
innodb_doublewrite = ["ON", "OFF"]
[[workload]]
test = "oltp_read_only"
tables = 4
data_vs_buffer_pool = 0.5
users = [1, 8]
[[workload]]
test = "oltp_point_select"
tables = 4
data_vs_buffer_pool = 0.5
users = [16]
"#;

    #[test]
    fn expands_servers_variants_users_and_repetitions() {
        let p = plan(TWO_SERVERS);
        // 2 servers x 2 variants, each group: 2 reps x (2 + 1) users.
        assert_eq!(p.groups.len(), 4);
        assert!(p.groups.iter().all(|g| g.points.len() == 6));
        assert_eq!(p.points(), 24);
        // One data set per server, computed from that server's buffer pool.
        assert_eq!(p.datasets.len(), 2);
        let rows = |d: &DataSet| match d.data {
            Data::Sysbench { rows, .. } => rows,
            _ => panic!("{d:?}"),
        };
        assert_eq!(
            rows(&p.datasets[0]),
            ((1u64 << 30) as f64 * 0.5 / 240.0 / 4.0).round() as u32
        );
        assert_eq!(
            rows(&p.datasets[1]),
            (DEFAULT_BUFFER_POOL as f64 * 0.5 / 240.0 / 4.0).round() as u32
        );
        let g = &p.groups[0];
        let ids: Vec<&str> = g.points.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "mariadb-10.11/doublewrite=ON/oltp_read_only/t1/r1",
                "mariadb-10.11/doublewrite=ON/oltp_read_only/t8/r1",
                "mariadb-10.11/doublewrite=ON/oltp_point_select/t16/r1",
                "mariadb-10.11/doublewrite=ON/oltp_read_only/t1/r2",
                "mariadb-10.11/doublewrite=ON/oltp_read_only/t8/r2",
                "mariadb-10.11/doublewrite=ON/oltp_point_select/t16/r2",
            ]
        );
    }

    #[test]
    fn ids_are_unique_and_shuffling_keeps_them() {
        let stable = plan(TWO_SERVERS);
        let shuffled = plan(&format!("order = \"shuffled\"\nseed = 7\n{TWO_SERVERS}"));
        let ids = |p: &Plan| {
            let mut v: Vec<String> = p
                .groups
                .iter()
                .flat_map(|g| g.points.iter().map(|p| p.id.clone()))
                .collect();
            v.sort();
            v
        };
        let a = ids(&stable);
        let mut dedup = a.clone();
        dedup.dedup();
        assert_eq!(a.len(), dedup.len());
        assert_eq!(a, ids(&shuffled));
        let order = |p: &Plan| {
            p.groups
                .iter()
                .flat_map(|g| g.points.iter().map(|p| p.id.clone()))
                .collect::<Vec<_>>()
        };
        assert_ne!(order(&stable), order(&shuffled));
        // The same seed gives the same order.
        let again = plan(&format!("order = \"shuffled\"\nseed = 7\n{TWO_SERVERS}"));
        assert_eq!(order(&shuffled), order(&again));
    }

    #[test]
    fn estimate_counts_every_run() {
        let p = plan(TWO_SERVERS);
        let runs = 24.0 * (10.0 + 5.0 + RUN_OVERHEAD_S);
        assert!(p.estimate() > runs && p.estimate() < runs + 600.0, "{}", p.estimate());
        let text = p.render();
        assert!(text.contains("= 24 runs"), "{text}");
        assert!(text.contains("doublewrite=OFF"), "{text}");
    }

    /// A variant on one server only with its own duration, and two `[[exclude]]`s.
    const RESTRICTED: &str = r#"
duration = 20
[[server]]
id = "mariadb-10.11"
label = "a"
[[server]]
id = "mysql-8.0.31"
label = "b"
[[variant]]
name = "base"
[[variant]]
name = "atomic"
servers = ["a"]
duration = 60
[[pinning]]
name = "p1"
[[pinning]]
name = "p2"
client_cpus = "0"
[[workload]]
test = "oltp_read_only"
tables = 1
table_size = 1000
users = [1, 2]
[[workload]]
kind = "tpcc"
warehouses = 1
users = [4]
[[exclude]]
server = "b"
workload = "tpcc"
[[exclude]]
variant = "base"
pinning = "p2"
"#;

    #[test]
    fn variants_on_named_servers_their_durations_and_excludes_shape_the_plan() {
        let p = plan(RESTRICTED);
        let mut combos: Vec<(String, String, String, usize)> = p
            .groups
            .iter()
            .map(|g| {
                let e = &p.experiment;
                (
                    e.servers[g.server].label.clone(),
                    e.variants[g.variant].name.clone(),
                    e.pinnings[g.pinning].name.clone(),
                    g.points.len(),
                )
            })
            .collect();
        combos.sort();
        let want: Vec<(String, String, String, usize)> = [
            ("a", "atomic", "p1", 1),
            ("a", "atomic", "p1", 2),
            ("a", "atomic", "p2", 1),
            ("a", "atomic", "p2", 2),
            ("a", "base", "p1", 1),
            ("a", "base", "p1", 2),
            ("b", "base", "p1", 2),
        ]
        .iter()
        .map(|(s, v, pi, n)| (s.to_string(), v.to_string(), pi.to_string(), *n))
        .collect();
        assert_eq!(combos, want);
        assert_eq!(p.experiment.runs(), 11);
        assert_eq!(p.datasets.len(), 3, "b's TPC-C data set is never used: not prepared");
        // The atomic points run 60 s, the others the file's 20 s.
        let e = &p.experiment;
        for g in &p.groups {
            let want = if e.variants[g.variant].name == "atomic" { 60 } else { 20 };
            for pt in &g.points {
                assert_eq!(e.duration(g.variant, pt.workload).as_secs(), want);
            }
        }
        assert!(p.render().contains("= 11 runs"), "{}", p.render());
    }

    #[test]
    fn totals_without_expanding_match_the_expanded_plan() {
        for text in [
            RESTRICTED.to_string(),
            TWO_SERVERS.to_string(),
            format!("order = \"shuffled\"\n{TWO_SERVERS}"),
            KINDS.to_string(),
            format!("order = \"shuffled\"\n{KINDS}"),
        ] {
            let p = plan(&text);
            let (of, expanded) = (Totals::of(&p.experiment), p.totals());
            assert_eq!(
                (of.runs, of.starts, of.datasets, of.restores),
                (expanded.runs, expanded.starts, expanded.datasets, expanded.restores)
            );
            for (a, b) in [
                (of.runs_s, expanded.runs_s),
                (of.prepares_s, expanded.prepares_s),
                (of.restarts_s, expanded.restarts_s),
            ] {
                assert!((a - b).abs() < 1e-6, "{a} vs {b}");
            }
            assert_eq!(of.render(&p.experiment), expanded.render(&p.experiment));
        }
    }

    const KINDS: &str = r#"
repetitions = 2
duration = 30
[[server]]
id = "mariadb-10.11"
[[server]]
id = "mysql-8.0.31"
[variants]
innodb_doublewrite = ["ON", "OFF"]
[[workload]]
kind = "tpcc"
warehouses = 10
users = [8, 16]
[[workload]]
kind = "tpch"
scale_factor = 1
cold = true
[[workload]]
kind = "linkbench"
maxid1 = 100001
users = [4]
restore = "variant"
"#;

    #[test]
    fn every_kind_gets_its_data_set_and_restores_are_counted() {
        let p = plan(KINDS);
        // 2 servers x 3 data sets x 2 variants.
        assert_eq!(p.groups.len(), 12);
        let keys: Vec<String> = p.datasets.iter().filter(|d| d.server == 0).map(DataSet::key).collect();
        assert_eq!(keys, ["tpcc-w10", "tpch-sf1", "linkbench-n100001"]);
        let tpcc = p.groups.iter().find(|g| g.data.key() == "tpcc-w10").unwrap();
        // 2 reps x 2 user counts, each from the snapshot: 3 restores after the first.
        assert_eq!((tpcc.points.len(), p.restores_in(tpcc)), (4, 3));
        let tpch = p.groups.iter().find(|g| g.data.key() == "tpch-sf1").unwrap();
        assert_eq!(tpch.points[0].id, "mariadb-10.11/doublewrite=ON/tpch-power/t1/r1");
        assert_eq!(p.restores_in(tpch), 0, "tpch restores once per start");
        let lb = p.groups.iter().find(|g| g.data.key() == "linkbench-n100001").unwrap();
        assert_eq!(p.restores_in(lb), 0, "restore = \"variant\"");
        let t = p.totals();
        assert_eq!(t.restores, 4 * 3);
        // Preparing 10 warehouses costs more than restoring them.
        let tpcc_data = &tpcc.data;
        assert!(p.prepare_estimate(tpcc_data) > 2.0 * group_overhead_secs(tpcc_data));
        // A cold power test at SF 1 counts its 22 restarts.
        assert!(p.point_estimate(tpch, &tpch.points[0]) > TPCH_POWER_S_PER_SF + 22.0 * (START_S + STOP_S) - 1.0);
        assert!(p.render().contains("12 restore(s) between points"), "{}", p.render());
    }

    #[test]
    fn a_ten_thousand_run_plan_is_quick() {
        // 10 repetitions x 10 variants x 100 user counts.
        let users: Vec<String> = (1..=100).map(|u| u.to_string()).collect();
        let text = format!(
            "repetitions = 10\n[[server]]\nid = \"mariadb-10.11\"\n[variants]\ninnodb_io_capacity = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]\n[[workload]]\ntest = \"oltp_read_only\"\nusers = [{}]\n",
            users.join(", ")
        );
        let started = std::time::Instant::now();
        let e = Experiment::parse(&text, Path::new("x.toml")).unwrap();
        assert_eq!(Totals::of(&e).runs, 10_000);
        let p = Plan::new(e);
        assert_eq!(p.points(), 10_000);
        assert!(p.render().contains("= 10000 runs"));
        // Unoptimized test build: the release binary is several times faster.
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
    }

    #[test]
    fn hms_formats() {
        assert_eq!(hms(42.0), "42s");
        assert_eq!(hms(185.0), "3m 05s");
        assert_eq!(hms(3720.0), "1h 02m");
    }
}
