//! The flags every measuring command shares, and the one place they become the engine's
//! [`RunConfig`].
//!
//! [`RunArgs`] is flattened into `sysbench run`, `tpcc run`, `linkbench request` and
//! `pgbench`: run time, warmup, rate, report interval, client threads and client I/O, and
//! [`RunOutputArgs`] (results directory, summary copy, live metrics, telemetry). Each command
//! keeps the spellings, defaults and help its users know (pgbench's `-T`, `-R`, `-P`, `-j`;
//! sysbench's headings) through a [`RunFlags`] type; the values mean the same everywhere.
//! [`RunArgs::config`] (through [`run_config`]) is the only code that builds a [`RunConfig`]
//! from flags: every workload gets the same arrival rules and the same `--client-io auto`
//! (a blocking thread per connection in closed loop up to
//! [`super::client::AUTO_BLOCKING_MAX`] connections).

use std::marker::PhantomData;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use dbperf_engine::{Arrival, RunConfig};

use super::client;
use super::network::NetSpec;
use super::place::{apply_shard, seed_from_start, ClientPath, Shard};
use dbperf_driver::Target;
use dbperf_results::manifest::ShardRecord;
use dbperf_results::options::RunOptions;
use dbperf_results::ServerFacts;
use dbperf_telemetry::sampler::TelemetryConfig;

/// A command's spellings, defaults and help texts of the shared run flags.
pub trait RunFlags: Clone + std::fmt::Debug + Send + Sync + 'static {
    /// Help heading of the load flags (`None`: the command's options).
    const HEADING: Option<&'static str> = None;
    /// Help heading of the report interval.
    const REPORT_HEADING: Option<&'static str> = None;
    /// `-T` and the like.
    const TIME_SHORT: Option<char> = None;
    /// `--time`'s default (seconds).
    const TIME_DEFAULT: &'static str;
    /// `--time`'s help.
    const TIME_HELP: &'static str;
    /// `--warmup-time`'s help.
    const WARMUP_HELP: &'static str;
    /// `--rate`'s short flag.
    const RATE_SHORT: Option<char> = None;
    /// `--rate`'s help.
    const RATE_HELP: &'static str;
    /// The report interval's long flag (`report-interval`, pgbench's `progress`).
    const INTERVAL_LONG: &'static str = "report-interval";
    /// Its value name in the help.
    const INTERVAL_VALUE: &'static str = "REPORT_INTERVAL";
    /// Its short flag.
    const INTERVAL_SHORT: Option<char> = None;
    /// Its default (seconds; 0 = no live lines). Intervals are stored each second whatever it
    /// is (see [`stored_interval`]).
    const INTERVAL_DEFAULT: &'static str;
    /// Its help.
    const INTERVAL_HELP: &'static str;
    /// The client threads' long flag (`client-threads`, pgbench's `jobs`).
    const THREADS_LONG: &'static str = "client-threads";
    /// Its value name in the help.
    const THREADS_VALUE: &'static str = "CLIENT_THREADS";
    /// Its short flag.
    const THREADS_SHORT: Option<char> = None;
    /// The client threads when the flag is not given: `None` for one event loop per CPU (and a
    /// blocking thread per connection under `--client-io auto`), pgbench's `Some(1)` for its
    /// `-j 1` (see [`client::blocking_io`]).
    const THREADS_DEFAULT: Option<usize> = None;
    /// Its help.
    const THREADS_HELP: &'static str;
    /// `--client-io`'s help.
    const IO_HELP: &'static str;
    /// `--client-impl`'s help.
    const IMPL_HELP: &'static str =
        "Client: wire (dbperf's lean session, default), mysql_async (MySQL) or tokio-postgres (PostgreSQL)";
    /// `--shutdown-grace`'s default (seconds).
    const GRACE_DEFAULT: &'static str = "5";
}

/// The shared run flags, spelled as `F` says.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs<F: RunFlags> {
    // Measured run time in seconds.
    #[arg(
        value_parser = dbperf_core::bounds::whole_secs_flag,
        long,
        short = F::TIME_SHORT,
        default_value = F::TIME_DEFAULT,
        help = F::TIME_HELP,
        help_heading = F::HEADING
    )]
    pub time: u64,
    // Open loop: total transactions per second (0 = closed loop).
    #[arg(long, short = F::RATE_SHORT, default_value = "0", help = F::RATE_HELP, help_heading = F::HEADING)]
    pub rate: f64,
    // Seconds to run before measuring.
    #[arg(
        value_parser = dbperf_core::bounds::whole_secs_flag,
        long,
        default_value = "0",
        help = F::WARMUP_HELP,
        help_heading = F::HEADING
    )]
    pub warmup_time: u64,
    /// Before the warmup, run the workload unmeasured until it is past its start-up transient:
    /// the checkpoint age has ended its first cycle (or holds level for 10 s) and throughput has
    /// stopped trending (the last 5 s within 10% of the 5 s before); at most SECONDS (default
    /// 300). Its length and why it ended are in the summary (`steady_warmup`).
    #[arg(
        long,
        value_name = "SECONDS",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "300",
        value_parser = dbperf_core::bounds::whole_secs_flag,
        help_heading = F::HEADING
    )]
    pub warmup_steady: Option<u64>,
    // Client threads of the event loops (`--client-io async`).
    #[arg(
        long = F::THREADS_LONG,
        short = F::THREADS_SHORT,
        value_name = F::THREADS_VALUE,
        help = F::THREADS_HELP,
        help_heading = F::HEADING
    )]
    pub client_threads: Option<usize>,
    // How the client waits for replies: auto, blocking or async.
    #[arg(long, default_value = "auto", help = F::IO_HELP, help_heading = F::HEADING)]
    pub client_io: String,
    // Seconds between live lines (intervals are stored each second, or finer: stored_interval).
    #[arg(
        value_parser = dbperf_core::bounds::interval_flag,
        long = F::INTERVAL_LONG,
        short = F::INTERVAL_SHORT,
        value_name = F::INTERVAL_VALUE,
        default_value = F::INTERVAL_DEFAULT,
        help = F::INTERVAL_HELP,
        help_heading = F::REPORT_HEADING
    )]
    pub report_interval: f64,
    // The session implementation: wire, mysql_async or tokio-postgres.
    #[arg(long, default_value = "wire", help = F::IMPL_HELP, help_heading = F::HEADING)]
    pub client_impl: String,
    /// Open-loop arrivals: poisson (sysbench's, pgbench's -R, LinkBench's) or fixed.
    #[arg(long, default_value = "poisson", help_heading = F::HEADING)]
    pub arrival: String,
    // Seconds in-flight transactions may take to finish after --time.
    #[arg(
        value_parser = dbperf_core::bounds::secs_flag,
        long,
        default_value = F::GRACE_DEFAULT,
        help = "Seconds in-flight transactions may take to finish after --time",
        help_heading = F::HEADING
    )]
    pub shutdown_grace: f64,
    /// Pin the client (dbperf and every thread it starts) to these CPUs, as `taskset -c` writes
    /// them (4-7, 0,2): the manifest's `host.client_cpus` records them and reports show them.
    #[arg(long, value_name = "CPUS", help_heading = F::HEADING)]
    pub client_cpus: Option<String>,
    /// Where the client stands: --shard, --start-at, --client-netns.
    #[command(flatten)]
    pub place: PlaceArgs,
    /// Run directory, summary, live metrics and telemetry.
    #[command(flatten)]
    pub out: RunOutputArgs,
    #[arg(skip)]
    #[doc(hidden)]
    pub flags: PhantomData<F>,
}

/// Where a run's client stands, shared by every measuring command (TPC-H's tests too): one
/// shard of a run spread over several clients, the instant the measured phase starts, and
/// the client's network namespace.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PlaceArgs {
    /// Run one shard of a run spread over several clients: I/N, this shard's index from 0 and
    /// the number of shards. The shard runs its share of the users (and of --rate and
    /// --events; TPC-H throughput: of the query streams) and writes an ordinary run directory;
    /// `dbperf merge` makes one run of them. Needs --start-at.
    #[arg(long, value_name = "I/N", requires = "start_at", help_heading = "Several clients")]
    pub shard: Option<Shard>,
    /// When the measured phase starts (the warmup runs before it): a Unix time in seconds or an
    /// RFC 3339 timestamp. Every shard of a run gets the same.
    #[arg(long, value_name = "TIME", value_parser = dbperf_core::clock::parse_start_at, help_heading = "Several clients")]
    pub start_at: Option<SystemTime>,
    /// Run the client in a network namespace of its own, over a veth pair to the server on
    /// this machine (root only), optionally shaped: rate=10gbit (tbf), delay=200us and loss=0.1
    /// (netem, where the kernel has it), burst=, queue=. Removed after the run.
    #[arg(
        long,
        value_name = "SHAPING",
        num_args = 0..=1,
        default_missing_value = "",
        help_heading = "Network"
    )]
    pub client_netns: Option<NetSpec>,
}

impl PlaceArgs {
    /// `--start-at`, refused when it is further ahead than any run may wait.
    pub fn start_at(&self) -> anyhow::Result<Option<SystemTime>> {
        if let Some(at) = self.start_at {
            let ahead = at.duration_since(SystemTime::now()).unwrap_or_default();
            if ahead > Duration::from_secs(dbperf_core::bounds::MAX_SECS) {
                anyhow::bail!(
                    "--start-at is {:.0} days from now; a start at most {} from now is accepted",
                    ahead.as_secs_f64() / 86_400.0,
                    dbperf_core::bounds::secs_range().trim_start_matches("0 to ")
                );
            }
        }
        Ok(self.start_at)
    }

    /// The run's seed when its seed option is left to the clock: from `--start-at` when
    /// given (so every shard has the same), else from the clock.
    pub fn default_seed(&self) -> u64 {
        match self.start_at {
            Some(at) => seed_from_start(at),
            None => dbperf_core::clock::clock_seed(),
        }
    }
}

/// Where a run's client stands ([`RunArgs::place`]): its path to the server and its shard.
#[derive(Debug)]
pub struct Placement {
    /// The target the workload connects to, the path's record, the namespace.
    pub path: ClientPath,
    /// The shard's record for the manifest.
    pub shard: Option<ShardRecord>,
}

/// What a workload adds to the shared flags to make its engine run.
#[derive(Debug, Clone, Copy)]
pub struct RunShape {
    /// Connections (workers) the engine opens.
    pub connections: usize,
    /// Total transactions to start (`None`: until the time is up).
    pub events: Option<u64>,
    /// `--rate` counts per connection (LinkBench's requestrate): the total is this many times it.
    pub rate_per_connection: bool,
    /// Seed of the open-loop schedules.
    pub seed: u64,
}

impl<F: RunFlags> RunArgs<F> {
    /// The engine's configuration for a run shaped as `shape` (see [`run_config`]).
    pub fn config(&self, shape: &RunShape) -> anyhow::Result<RunConfig> {
        if let Some(set) = self.client_cpus()? {
            // The client's CPUs come first: its default thread count follows from them. This
            // thread runs the measured run, and the threads it starts inherit its mask.
            dbperf_core::cpus::restrict(0, &set.cpus)
                .map_err(|e| anyhow::anyhow!("--client-cpus {}: {e}", set.text))?;
        }
        run_config(
            &RunValues {
                arrival: &self.arrival,
                shutdown_grace: self.shutdown_grace,
                time: self.time,
                rate: self.rate,
                warmup_time: self.warmup_time,
                client_threads: self.client_threads,
                threads_default: F::THREADS_DEFAULT,
                client_io: &self.client_io,
                report_interval: self.report_interval,
                interval_flag: F::INTERVAL_LONG,
                threads_flag: F::THREADS_LONG,
                terminal: stdout_is_terminal(),
            },
            shape,
            cpus(),
        )
        .map_err(anyhow::Error::msg)
    }

    /// Where this run's client stands, once the server's facts are known: the path to the
    /// server (`--client-netns` sets up the namespace here; it is removed when the
    /// [`Placement`] is dropped) and, with `--shard`, `run` (built for the whole run by
    /// [`RunArgs::config`]) cut down to this shard's users, rate and events, starting at
    /// `--start-at`.
    pub fn place(&self, target: &Target, facts: &ServerFacts, run: &mut RunConfig) -> anyhow::Result<Placement> {
        let p = &self.place;
        let shard = match (p.shard, p.start_at()?) {
            (Some(s), Some(at)) => Some(apply_shard(run, s, at).map_err(anyhow::Error::msg)?),
            (None, at) => {
                run.start_at = at;
                None
            }
            (Some(_), None) => anyhow::bail!("--shard needs --start-at: the instant every shard starts measuring"),
        };
        let path = ClientPath::open(target, p.client_netns.as_ref(), facts)?;
        run.client_netns = path.netns_path();
        Ok(Placement { path, shard })
    }

    /// The manifest's record of the shared options of a run configured as `run` (before
    /// [`RunArgs::place`] cuts a shard's share out of it).
    pub fn record(&self, run: &RunConfig) -> RunOptions {
        let mut r = RunOptions {
            connections: run.connections as u64,
            time_s: Some(self.time),
            warmup_s: Some(self.warmup_time),
            interval_s: Some(run.interval.as_secs_f64()),
            report_interval_s: Some(run.report_interval.map(|d| d.as_secs_f64())),
            client_threads: Some(run.client_threads),
            client_io: Some(if run.blocking_io { "blocking" } else { "async" }.into()),
            arrival: Some(run.arrival.name().into()),
            rate: run.arrival.rate(),
            client_impl: Some(self.client_impl.clone()),
            warmup_steady_max_s: self.warmup_steady,
            ..RunOptions::default()
        };
        self.out.record(&mut r);
        r
    }

    /// `--client-cpus`, checked against this machine's CPUs.
    fn client_cpus(&self) -> anyhow::Result<Option<dbperf_core::cpus::CpuSet>> {
        self.client_cpus
            .as_deref()
            .map(|list| {
                dbperf_core::cpus::CpuSet::parse(list, cpus()).map_err(|e| anyhow::anyhow!("--client-cpus {list}: {e}"))
            })
            .transpose()
    }

    /// The run's seed when its seed option is left to the clock (see
    /// [`PlaceArgs::default_seed`]).
    pub fn default_seed(&self) -> u64 {
        self.place.default_seed()
    }

    /// Live lines printed every this many live reports: 1 (every report) with a report
    /// interval, or without one when stdout is a pipe or file (reports of [`PIPED_EVERY`] s
    /// then, see [`run_config`]), so logs show the run is alive; 0 (none) without one on a
    /// terminal, whose progress bar shows the run.
    pub fn print_every(&self) -> u32 {
        print_every(self.report_interval, stdout_is_terminal())
    }
}

fn stdout_is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}

/// Seconds between live lines of a run with `--report-interval 0` whose output is not a
/// terminal (each line's figures cover those seconds).
pub const PIPED_EVERY: u32 = 10;

fn print_every(report_interval: f64, terminal: bool) -> u32 {
    u32::from(report_interval > 0.0 || !terminal)
}

/// The length of a stored interval (an `intervals.jsonl` row, a set of `intervals.hlog`
/// histograms, a live-metrics update) for a report interval: 1 s, or the report interval
/// when it is shorter (and not 0). A report interval longer than a second is made of 1 s
/// intervals, merged for its live line; one that is not a whole number of seconds (2.5 s)
/// prints its line at the first whole second past each multiple of it (at 3, 5, 8, 10 s), so
/// the lines keep its pace on average and each covers exactly the seconds since the last.
pub fn stored_interval(report_interval: f64) -> Duration {
    if report_interval > 0.0 && report_interval < 1.0 {
        Duration::from_secs_f64(report_interval)
    } else {
        Duration::from_secs(1)
    }
}

/// The flag values [`run_config`] reads.
#[derive(Debug, Clone)]
pub struct RunValues<'a> {
    /// `--arrival`: `poisson` or `fixed`.
    pub arrival: &'a str,
    /// `--shutdown-grace`, seconds.
    pub shutdown_grace: f64,
    /// `--time` (0 = no limit).
    pub time: u64,
    /// `--rate` (0 = closed loop).
    pub rate: f64,
    /// `--warmup-time`.
    pub warmup_time: u64,
    /// `--client-threads` (pgbench's `--jobs`), when given.
    pub client_threads: Option<usize>,
    /// The client threads when not given ([`RunFlags::THREADS_DEFAULT`]).
    pub threads_default: Option<usize>,
    /// `--client-io`.
    pub client_io: &'a str,
    /// The report interval (0 = no live lines; one-second intervals are stored).
    pub report_interval: f64,
    /// The report interval's flag name, for errors.
    pub interval_flag: &'a str,
    /// The client threads' flag name, for errors.
    pub threads_flag: &'a str,
    /// Stdout is a terminal: without a report interval no live line is printed (a pipe gets
    /// one every [`PIPED_EVERY`] s).
    pub terminal: bool,
}

/// The CPUs the client may use.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// The engine's configuration from the shared flags: the one place a [`RunConfig`] is built
/// from what a user gave. An error names the flag and what to give instead.
pub fn run_config(v: &RunValues<'_>, shape: &RunShape, cpus: usize) -> Result<RunConfig, String> {
    if !(v.rate.is_finite() && v.rate >= 0.0) {
        return Err(format!(
            "--rate must be 0 (closed loop) or a positive rate, got {}",
            v.rate
        ));
    }
    if !(v.report_interval.is_finite() && v.report_interval >= 0.0) {
        return Err(format!(
            "--{} must be 0 (no live lines) or a positive number of seconds",
            v.interval_flag
        ));
    }
    if v.client_threads == Some(0) {
        return Err(format!("--{} must be at least 1", v.threads_flag));
    }
    let total_rate = if shape.rate_per_connection {
        v.rate * shape.connections as f64
    } else {
        v.rate
    };
    let arrival = match (v.rate, v.arrival) {
        (0.0, _) => Arrival::Closed,
        (_, "poisson") => Arrival::Poisson { rate: total_rate },
        (_, "fixed") => Arrival::Fixed { rate: total_rate },
        (_, other) => return Err(format!("--arrival must be poisson or fixed, got {other:?}")),
    };
    let mut run = RunConfig::new(shape.connections, (v.time > 0).then(|| Duration::from_secs(v.time)));
    run.arrival = arrival;
    run.events = shape.events;
    run.warmup = Duration::from_secs(v.warmup_time);
    run.interval = stored_interval(v.report_interval);
    run.report_interval = match (v.report_interval > 0.0, v.terminal) {
        (true, _) => Some(Duration::try_from_secs_f64(v.report_interval).map_err(|_| {
            format!(
                "--{} must be at most {} seconds, got {}",
                v.interval_flag,
                dbperf_core::bounds::MAX_SECS,
                v.report_interval
            )
        })?),
        (false, false) => Some(Duration::from_secs(u64::from(PIPED_EVERY))),
        (false, true) => None,
    };
    run.shutdown_grace = Duration::from_secs_f64(v.shutdown_grace.clamp(0.0, 3600.0));
    let threads = match (v.client_threads, v.threads_default) {
        (Some(n), _) => client::Threads::Given(n),
        (None, Some(n)) => client::Threads::Default(n),
        (None, None) => client::Threads::Unset,
    };
    let io = client::client_io(v.client_io, shape.connections, v.rate > 0.0, threads, cpus);
    (run.blocking_io, run.client_threads) =
        io.map_err(|e| e.replace("--client-threads", &format!("--{}", v.threads_flag)))?;
    run.seed = shape.seed;
    Ok(run)
}

/// Where a measured run's results go and what it samples: the options every run command
/// (tpcc, pgbench, linkbench) shares, flattened into each one's arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct RunOutputArgs {
    /// Directory for run directories.
    #[arg(
        long,
        env = "DBPERF_RESULTS",
        default_value = "dbperf-results",
        help_heading = "Reporting"
    )]
    pub results_dir: PathBuf,
    /// Also write summary.json here.
    #[arg(long, help_heading = "Reporting")]
    pub summary_json: Option<PathBuf>,
    /// Serve live metrics for Prometheus at http://ADDR/metrics during the run (throughput,
    /// latency quantiles, errors, telemetry), e.g. 127.0.0.1:9187.
    #[arg(long, value_name = "ADDR", help_heading = "Reporting")]
    pub metrics_addr: Option<String>,
    /// Do not sample the server, the OS and the client during the run (telemetry.jsonl).
    #[arg(long, help_heading = "Telemetry")]
    pub no_telemetry: bool,
    /// Sample the server through SQL only, not this machine's OS: for a server on another host
    /// or one dbperf did not start (the lab sets it for its `target` servers). The manifest
    /// records it.
    #[arg(long, help_heading = "Telemetry")]
    pub telemetry_sql_only: bool,
    /// Seconds between telemetry samples (on the run's clock).
    #[arg(value_parser = dbperf_core::bounds::interval_flag, long, default_value_t = 1.0, value_name = "SECONDS", help_heading = "Telemetry")]
    pub telemetry_interval: f64,
    /// Enable the InnoDB metrics that are off by default (`log%`, `buffer_flush%`) for the run
    /// (`buffer_flush_sync_total_pages`, which tells sync flushing, is enabled regardless).
    #[arg(long, help_heading = "Telemetry")]
    pub innodb_metrics: bool,
    /// Enable the InnoDB mutex and rw-lock instruments of the Performance Schema at run start
    /// (when performance_schema is ON), so the top waits include them.
    #[arg(long, help_heading = "Telemetry")]
    pub pfs_instruments: bool,
    /// Wait events kept per telemetry sample (by time waited).
    #[arg(long, default_value_t = 5, value_name = "N", help_heading = "Telemetry")]
    pub top_waits: usize,
    /// The database host, when it is not this one: ssh://USER@HOST[:PORT]. Its facts go into
    /// the manifest and its OS (CPU, disks, memory, network) into telemetry, read there by its
    /// `dbperf` (`dbperf remote install` puts this one there).
    #[arg(long, value_name = "SSH_URL", help_heading = "Telemetry")]
    pub server_host: Option<String>,
    /// The ssh command line for --server-host, e.g. "ssh -i ~/.ssh/lab_key".
    #[arg(long, value_name = "COMMAND", requires = "server_host", help_heading = "Telemetry")]
    pub server_host_ssh: Option<String>,
    /// Where dbperf is on the --server-host (relative to the login's home, or absolute).
    #[arg(long, value_name = "PATH", requires = "server_host", default_value = dbperf_server::remote::DEFAULT_REMOTE_DBPERF, help_heading = "Telemetry")]
    pub server_host_dbperf: String,
    /// DBPERF_HOME on the --server-host, where its sandboxes are [default: its own default].
    #[arg(long, value_name = "DIR", requires = "server_host", help_heading = "Telemetry")]
    pub server_host_home: Option<String>,
    /// Before measuring, wait up to SECONDS (300 when given alone) for the server to finish
    /// flushing what earlier work (a load) left: InnoDB checkpoint age at most 10% of its
    /// maximum and dirty pages at most 5%, or no page written for 3 s. PostgreSQL: a CHECKPOINT.
    #[arg(
        long,
        value_name = "SECONDS",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "300",
        value_parser = dbperf_core::bounds::whole_secs_flag,
        help_heading = "Reporting"
    )]
    pub settle: Option<u64>,
}

impl RunOutputArgs {
    /// The telemetry of a run against `target` (`None` with `--no-telemetry`).
    pub fn telemetry(&self, target: &Target) -> Option<TelemetryConfig> {
        let mut cfg = telemetry_config(
            self.no_telemetry,
            self.telemetry_interval,
            !self.telemetry_sql_only,
            target,
            dbperf_telemetry::server::ServerTelemetryOptions {
                innodb_metrics: self.innodb_metrics,
                pfs_instruments: self.pfs_instruments,
                top_waits: self.top_waits,
            },
        )?;
        cfg.server_host = self.server_host().ok().flatten();
        Some(cfg)
    }

    /// The database host of `--server-host`, checked (`None` without it).
    pub fn server_host(&self) -> Result<Option<dbperf_server::remote::RemoteHost>> {
        let Some(url) = &self.server_host else {
            return Ok(None);
        };
        let mut host = dbperf_server::remote::RemoteHost::parse(url, self.server_host_ssh.as_deref())
            .map_err(|e| anyhow::anyhow!("--server-host: {e}"))?;
        host.dbperf = self.server_host_dbperf.clone();
        host.home = self.server_host_home.clone();
        Ok(Some(host))
    }

    /// The facts of the `--server-host`, read there with its `dbperf host --json`.
    pub fn server_host_record(&self) -> Result<Option<dbperf_results::manifest::ServerHostRecord>> {
        let Some(host) = self.server_host()? else {
            return Ok(None);
        };
        let json = host.dbperf(&["host", "--json"]).map_err(|e| {
            anyhow::anyhow!(
                "--server-host: {e}\n(the database host needs this dbperf: `dbperf remote install {}`)",
                host.url
            )
        })?;
        let facts = serde_json::from_str(json.trim())
            .map_err(|e| anyhow::anyhow!("--server-host {}: its `dbperf host --json` printed no host facts ({e}); is it an older dbperf? `dbperf remote install {}`", host.url, host.url))?;
        Ok(Some(dbperf_results::manifest::ServerHostRecord {
            url: host.url,
            host: facts,
        }))
    }

    /// Records the telemetry and settle settings in the run's options.
    pub fn record(&self, r: &mut RunOptions) {
        r.telemetry_interval_s = Some((!self.no_telemetry).then_some(self.telemetry_interval));
        r.innodb_metrics = self.innodb_metrics;
        r.pfs_instruments = self.pfs_instruments;
        r.telemetry_sql_only = self.telemetry_sql_only && !self.no_telemetry;
        r.settle_max_s = self.settle;
    }

    /// How long to wait for the server to settle before measuring (`--settle`).
    pub fn settle(&self) -> Option<Duration> {
        self.settle.map(Duration::from_secs)
    }
}

/// A telemetry configuration from the common flags (`None` when `off`).
pub fn telemetry_config(
    off: bool,
    interval_s: f64,
    os: bool,
    target: &Target,
    server: dbperf_telemetry::server::ServerTelemetryOptions,
) -> Option<TelemetryConfig> {
    (!off).then(|| TelemetryConfig {
        period: Duration::from_secs_f64(interval_s.max(0.1)),
        target: Some(target.clone()),
        os,
        server,
        server_host: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a report interval a terminal shows the progress bar, a pipe a line every 10 s
    /// (over those 10 s).
    #[test]
    fn piped_runs_without_a_report_interval_still_print_every_ten_seconds() {
        assert_eq!(print_every(5.0, true), 1);
        assert_eq!(print_every(5.0, false), 1);
        assert_eq!(print_every(0.0, true), 0);
        assert_eq!(print_every(0.0, false), 1);
        let piped = run_config(
            &RunValues {
                terminal: false,
                ..values("auto")
            },
            &shape(1),
            2,
        )
        .unwrap();
        assert_eq!(piped.interval, Duration::from_secs(1));
        assert_eq!(piped.report_interval, Some(Duration::from_secs(u64::from(PIPED_EVERY))));
        let terminal = run_config(&values("auto"), &shape(1), 2).unwrap();
        assert_eq!(terminal.report_interval, None);
    }

    /// Intervals are stored each second whatever the report interval, finer when it is.
    #[test]
    fn intervals_are_stored_each_second_or_at_a_finer_report_interval() {
        for (report, stored, live) in [
            (5.0, 1000, Some(5000)),
            (10.0, 1000, Some(10_000)),
            (2.5, 1000, Some(2500)),
            (1.0, 1000, Some(1000)),
            (0.5, 500, Some(500)),
            (0.0, 1000, None),
        ] {
            let run = run_config(
                &RunValues {
                    report_interval: report,
                    ..values("auto")
                },
                &shape(1),
                2,
            )
            .unwrap();
            assert_eq!(run.interval, Duration::from_millis(stored), "{report}");
            assert_eq!(run.report_interval, live.map(Duration::from_millis), "{report}");
        }
    }

    fn values(client_io: &str) -> RunValues<'_> {
        RunValues {
            arrival: "poisson",
            shutdown_grace: 5.0,
            time: 10,
            rate: 0.0,
            warmup_time: 0,
            client_threads: None,
            threads_default: None,
            client_io,
            report_interval: 0.0,
            interval_flag: "report-interval",
            threads_flag: "client-threads",
            terminal: true,
        }
    }

    fn shape(connections: usize) -> RunShape {
        RunShape {
            connections,
            events: None,
            rate_per_connection: false,
            seed: 1,
        }
    }

    #[test]
    fn closed_loop_runs_get_a_blocking_thread_per_connection_by_default() {
        let run = run_config(&values("auto"), &shape(10), 2).unwrap();
        assert!(run.blocking_io);
        assert_eq!(run.client_threads, 10);
        assert_eq!(run.interval, Duration::from_secs(1));
        // Open loop, explicit event loops, or very many connections: event loops.
        let open = RunValues {
            rate: 100.0,
            ..values("auto")
        };
        let run = run_config(&open, &shape(10), 2).unwrap();
        assert!(!run.blocking_io);
        assert_eq!((run.client_threads, run.arrival.rate()), (2, Some(100.0)));
        let jobs = RunValues {
            client_threads: Some(3),
            threads_flag: "jobs",
            ..values("auto")
        };
        assert_eq!(run_config(&jobs, &shape(10), 2).unwrap().client_threads, 3);
        assert!(!run_config(&values("auto"), &shape(129), 2).unwrap().blocking_io);
        let e = run_config(
            &RunValues {
                rate: 5.0,
                ..values("blocking")
            },
            &shape(4),
            2,
        )
        .unwrap_err();
        assert!(e.contains("--client-io async"), "{e}");
        let e = run_config(
            &RunValues {
                client_threads: Some(2),
                ..jobs
            },
            &shape(4),
            2,
        );
        assert!(e.is_ok());
        let e = run_config(
            &RunValues {
                client_threads: Some(2),
                threads_flag: "jobs",
                ..values("blocking")
            },
            &shape(4),
            2,
        )
        .unwrap_err();
        assert!(e.contains("--jobs") && !e.contains("--client-threads"), "{e}");
    }

    #[test]
    fn a_rate_per_connection_is_multiplied_and_bad_values_are_named() {
        let per = RunShape {
            rate_per_connection: true,
            ..shape(4)
        };
        let run = run_config(
            &RunValues {
                rate: 2.5,
                ..values("auto")
            },
            &per,
            2,
        )
        .unwrap();
        assert_eq!(run.arrival.rate(), Some(10.0));
        let run = run_config(
            &RunValues {
                rate: 7.0,
                arrival: "fixed",
                ..values("auto")
            },
            &shape(4),
            2,
        )
        .unwrap();
        assert_eq!(run.arrival.name(), "fixed");
        let e = run_config(
            &RunValues {
                rate: -1.0,
                ..values("auto")
            },
            &shape(1),
            2,
        )
        .unwrap_err();
        assert!(e.contains("--rate"), "{e}");
        let e = run_config(
            &RunValues {
                rate: 1.0,
                arrival: "burst",
                ..values("auto")
            },
            &shape(1),
            2,
        )
        .unwrap_err();
        assert!(e.contains("--arrival"), "{e}");
        let e = run_config(
            &RunValues {
                report_interval: f64::NAN,
                interval_flag: "progress",
                ..values("auto")
            },
            &shape(1),
            2,
        )
        .unwrap_err();
        assert!(e.contains("--progress"), "{e}");
    }
}
