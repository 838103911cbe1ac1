//! The command tree: every `dbperf` command and the flags struct it parses into. The measuring
//! commands' flags are [`dbperf_commands`]'s (the lab checks experiment options against the
//! same definitions); each other command's are beside its dispatch in this folder.

use clap::{Parser, Subcommand};

use dbperf_commands::args::SysbenchArgs;

/// dbperf: sysbench-compatible OLTP with honest latency, sandboxed servers, run records.
#[derive(Debug, Parser)]
#[command(name = "dbperf", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a sysbench OLTP test: `dbperf sysbench oltp_read_write run --threads=8 ...`
    Sysbench(Box<SysbenchArgs>),
    /// TPC-C: `dbperf tpcc prepare|run|check|cleanup --warehouses W ...`
    Tpcc(Box<dbperf_commands::tpcc::TpccArgs>),
    /// Manage sandboxed database servers.
    Server(crate::cli::server::ServerArgs),
    /// A database host reached with ssh: `dbperf remote install|check ssh://USER@HOST[:PORT]`
    Remote(crate::cli::remote::RemoteArgs),
    /// This machine's facts as runs record them (CPUs, memory, kernel, OS, virtualisation).
    Host(crate::cli::host::HostArgs),
    /// Experiments: servers x variants x workloads x users from a TOML file.
    Lab(crate::cli::lab::LabArgs),
    /// Compare runs side by side: TPS (or p95, ...) by threads x server, with draws marked.
    Compare(Box<crate::cli::compare::CompareArgs>),
    /// The results catalog: index run directories, query them with SQL.
    Results(crate::cli::results::ResultsArgs),
    /// Stalls in a finished run and what explains them (checkpoint, flushing, waits, disk, client).
    Analyze(crate::cli::analyze::AnalyzeArgs),
    /// A run's or an experiment's tables, and a self-contained HTML report with charts (--html).
    Report(crate::cli::report::ReportArgs),
    /// TPC-H / DBT-3: data identical to dbgen, qgen parameters, answer validation, power test.
    Tpch(Box<dbperf_commands::tpch::TpchArgs>),
    /// pgbench: its built-in workloads and your own script files: `dbperf pgbench init|tpcb-like|simple-update|select-only`, `dbperf pgbench -f FILE[@W]`
    Pgbench(Box<dbperf_commands::pgbench::PgbenchArgs>),
    /// LinkBench (Facebook's social graph): `dbperf linkbench load|request --maxid1 N ...`
    Linkbench(Box<dbperf_commands::linkbench::LinkbenchArgs>),
    /// A sysbench Lua script, unchanged: `dbperf lua oltp_read_write.lua run --threads=8 --tables=4 ...`
    Lua(Box<dbperf_commands::lua::LuaArgs>),
    /// Kubernetes manifests for a run sharded over several client pods: `dbperf kube job --shards 3 ... -- sysbench oltp_point_select run ...`
    Kube(dbperf_kube::KubeArgs),
    /// One run from the run directories of a sharded run (`--shard I/N`): `dbperf merge DIR...`
    Merge(crate::cli::merge::MergeArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_commands::args::{normalize, SysbenchArgs};

    fn parse(args: &[&str]) -> SysbenchArgs {
        let argv = normalize(std::iter::once("dbperf".to_string()).chain(args.iter().map(|s| s.to_string())));
        match Cli::try_parse_from(argv).unwrap().command {
            Command::Sysbench(a) => *a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sysbench_word_order_and_spellings() {
        let a = parse(&[
            "sysbench",
            "oltp_read_write",
            "--tables=8",
            "--table_size=1000",
            "--skip-trx",
            "--range_selects=off",
            "--mysql-host",
            "127.0.0.1",
            "--pgsql_variant=redshift",
            "run",
        ]);
        assert_eq!((a.test.as_str(), a.command.as_str()), ("oltp_read_write", "run"));
        assert_eq!((a.tables, a.table_size), (8, 1000));
        assert!(a.skip_trx && !a.range_selects && a.auto_inc);
        assert_eq!(a.server.mysql_host.as_deref(), Some("127.0.0.1"));
        assert_eq!(a.rand_type, "uniform");
        assert_eq!(a.pgsql_variant.as_deref(), Some("redshift"));
    }

    #[test]
    fn bad_boolean_is_named() {
        let argv = normalize(["dbperf", "sysbench", "oltp_read_only", "run", "--skip_trx=maybe"].map(String::from));
        let e = Cli::try_parse_from(argv).unwrap_err().to_string();
        assert!(e.contains("--skip-trx") && e.contains("on/off"), "{e}");
    }

    fn parse_err(args: &[&str]) -> String {
        let argv = normalize(std::iter::once("dbperf").chain(args.iter().copied()).map(String::from));
        Cli::try_parse_from(argv).unwrap_err().to_string()
    }

    #[test]
    fn huge_durations_and_counts_name_the_flag_and_the_range() {
        for (flag, value) in [
            ("--report-interval", "18446744073709551615"),
            ("--time", "18446744073"),
            ("--warmup-time", "18446744073709551615"),
            ("--shutdown-grace", "1e30"),
        ] {
            let e = parse_err(&["sysbench", "oltp_read_only", "run", &format!("{flag}={value}")]);
            assert!(e.contains(flag) && e.contains("10 years"), "{flag}: {e}");
        }
        let e = parse_err(&["sysbench", "oltp_read_only", "run", "--report-interval=0.000001"]);
        assert!(e.contains("--report-interval") && e.contains("0 or 0.1 to"), "{e}");
        let e = parse_err(&["sysbench", "oltp_read_only", "run", "--threads=100000000"]);
        assert!(e.contains("--threads") && e.contains("1..=100000"), "{e}");
        let e = parse_err(&["tpcc", "run", "--time", "18446744073"]);
        assert!(e.contains("--time") && e.contains("10 years"), "{e}");
        let e = parse_err(&["pgbench", "select-only", "-P", "1e300"]);
        assert!(e.contains("--progress") && e.contains("10 years"), "{e}");
        let a = parse(&[
            "sysbench",
            "oltp_read_only",
            "run",
            "--time=5m",
            "--report-interval=0.5",
        ]);
        assert_eq!((a.run.time, a.run.report_interval), (300, 0.5));
    }

    #[test]
    fn every_target_takes_the_environment_and_a_file_and_hides_the_value() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let mut commands = 0;
        let mut stack: Vec<&clap::Command> = vec![&cli];
        while let Some(c) = stack.pop() {
            stack.extend(c.get_subcommands());
            let Some(target) = c.get_arguments().find(|a| a.get_id() == "target") else {
                continue;
            };
            if target.get_long() != Some("target") {
                continue;
            }
            commands += 1;
            let name = c.get_name();
            assert_eq!(target.get_env(), Some(std::ffi::OsStr::new("DBPERF_TARGET")), "{name}");
            // clap would print the variable's value (the password) in --help.
            assert!(target.is_hide_env_values_set(), "{name}");
            assert!(
                c.get_arguments().any(|a| a.get_long() == Some("target-file")),
                "{name} has --target but no --target-file"
            );
            let help = target.get_long_help().or(target.get_help()).unwrap().to_string();
            assert!(help.contains("visible to other local users"), "{name}: {help}");
        }
        assert!(commands >= 8, "only {commands} commands take --target");
    }

    #[test]
    fn linkbench_gets_the_blocking_io_default_pgbench_its_one_job_and_both_keep_their_spellings() {
        use dbperf_run::RunShape;
        // Every command's arrivals are poisson unless --arrival says otherwise.
        let shape = |connections, _arrival: &str| RunShape {
            connections,
            events: None,
            rate_per_connection: false,
            seed: 1,
        };
        let cli = |args: &[&str]| {
            let argv = normalize(std::iter::once("dbperf").chain(args.iter().copied()).map(String::from));
            Cli::try_parse_from(argv).unwrap().command
        };
        let Command::Linkbench(lb) = cli(&["linkbench", "request"]) else {
            panic!()
        };
        let run = lb.run.config(&shape(lb.requesters as usize, "poisson")).unwrap();
        assert!(
            run.blocking_io,
            "linkbench request runs closed loop: a blocking thread per requester"
        );
        assert_eq!(run.client_threads, 10);
        let Command::Linkbench(lb) = cli(&["linkbench", "request", "--rate", "5", "--requesters", "4"]) else {
            panic!()
        };
        let per_requester = dbperf_run::RunShape {
            rate_per_connection: true,
            ..shape(4, "poisson")
        };
        let run = lb.run.config(&per_requester).unwrap();
        assert!(!run.blocking_io);
        assert_eq!(run.arrival.rate(), Some(20.0));

        let Command::Pgbench(pg) = cli(&["pgbench", "select-only", "-c", "8", "-T", "30", "-P", "2"]) else {
            panic!()
        };
        let run = pg.run.config(&shape(pg.clients as usize, "poisson")).unwrap();
        assert!(!run.blocking_io, "pgbench's -j 1: one event loop for the clients");
        assert_eq!(
            (run.client_threads, run.duration, run.interval.as_secs()),
            (1, Some(std::time::Duration::from_secs(30)), 1),
            "intervals are stored each second"
        );
        assert_eq!(run.report_interval, Some(std::time::Duration::from_secs(2)), "-P 2");
        let Command::Pgbench(pg) = cli(&["pgbench", "select-only", "-c", "8", "-j", "2"]) else {
            panic!()
        };
        let run = pg.run.config(&shape(8, "poisson")).unwrap();
        assert_eq!(
            (run.blocking_io, run.client_threads),
            (false, 2),
            "-j asks for event loops"
        );
        let Command::Pgbench(pg) = cli(&["pgbench", "select-only", "-c", "8", "-j", "8"]) else {
            panic!()
        };
        let run = pg.run.config(&shape(8, "poisson")).unwrap();
        assert_eq!(
            (run.blocking_io, run.client_threads),
            (true, 8),
            "-j = -c: a thread per client"
        );
        let Command::Pgbench(pg) = cli(&["pgbench", "select-only", "--client-io", "blocking"]) else {
            panic!()
        };
        let run = pg.run.config(&shape(8, "poisson")).unwrap();
        assert_eq!(
            (run.blocking_io, run.client_threads),
            (true, 8),
            "the default -j gives way"
        );
        let Command::Pgbench(pg) = cli(&["pgbench", "select-only", "--client-io", "blocking", "-j", "2"]) else {
            panic!()
        };
        let e = pg.run.config(&shape(8, "poisson")).unwrap_err().to_string();
        assert!(e.contains("--jobs 2"), "{e}");
    }
}
