//! `--client-impl`: which session speaks to the server, checked against the target's
//! family. `wire` is dbperf's own lean session for both families (the default); the
//! driver-crate sessions stay selectable so the difference can be measured.
//! `--client-io`: how client threads wait for replies ([`blocking_io`]), and how many there are
//! ([`Threads`], [`client_io`]).

use dbperf_driver::target::Family;

/// The session a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Client {
    /// MySQL protocol, dbperf's [`dbperf_driver::wire::WireSession`].
    MysqlWire,
    /// MySQL protocol, [`dbperf_driver::mysql::MysqlSession`] on `mysql_async`.
    MysqlAsync,
    /// PostgreSQL, dbperf's [`dbperf_driver::pgwire::PgWireSession`].
    PgWire,
    /// PostgreSQL, [`dbperf_driver::pg::PgSession`] on `tokio-postgres`.
    TokioPostgres,
}

impl Client {
    /// dbperf's own session for a target of `family` (`--client-impl wire`).
    pub fn default_for(family: Family) -> Client {
        match family {
            Family::Mysql => Client::MysqlWire,
            Family::Postgres => Client::PgWire,
        }
    }

    /// Validates `--client-impl FLAG` for a target of `family`.
    pub fn choose(flag: &str, family: Family) -> Result<Client, String> {
        match (flag, family) {
            ("wire", Family::Mysql) => Ok(Client::MysqlWire),
            ("wire", Family::Postgres) => Ok(Client::PgWire),
            ("mysql_async", Family::Mysql) => Ok(Client::MysqlAsync),
            ("tokio-postgres", Family::Postgres) => Ok(Client::TokioPostgres),
            ("mysql_async", Family::Postgres) => Err(
                "--client-impl mysql_async is a MySQL client and the target is PostgreSQL; use wire (default) or tokio-postgres"
                    .into(),
            ),
            ("tokio-postgres", Family::Mysql) => Err(
                "--client-impl tokio-postgres is a PostgreSQL client and the target speaks the MySQL protocol; use wire (default) or mysql_async"
                    .into(),
            ),
            (other, _) => Err(format!(
                "--client-impl must be wire (default), mysql_async (MySQL targets) or tokio-postgres (PostgreSQL targets), got {other:?}"
            )),
        }
    }
}

/// Connections up to which `--client-io auto` gives each connection its own blocking
/// thread. Beyond it, a few event-loop threads serve them all: measured on 2 vCPUs against
/// MariaDB point selects, blocking threads cost 16 µs of client CPU per query at 8
/// connections (event loop: 26), 22 at 64 (28), and the same 33 at 256, where their memory
/// (about 1.7 MB each, 440 MB in all) no longer buys anything.
pub const AUTO_BLOCKING_MAX: usize = 128;

/// The client threads a run was asked for: by the user (`--client-threads`, pgbench's `-j`),
/// by the command's own default (pgbench's `-j 1`), or not at all (one per CPU when they
/// are event loops).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// Neither given nor defaulted.
    Unset,
    /// The command's default, not given by the user.
    Default(usize),
    /// Given on the command line.
    Given(usize),
}

impl Threads {
    /// The number asked for, if any.
    pub fn count(self) -> Option<usize> {
        match self {
            Threads::Unset => None,
            Threads::Default(n) | Threads::Given(n) => Some(n),
        }
    }
}

/// Resolves `--client-io FLAG` for a run of `connections` connections: true for a thread
/// per connection blocking in the kernel for each reply (sysbench's model, and the cheapest
/// per query: one `recv` and one wake-up, no event loop), false for event-loop threads
/// multiplexing the connections (needed by open loop). Fewer client threads than
/// connections (given, or pgbench's default of one job) share the connections on event
/// loops; as many or more give each connection a thread of its own, blocking under `auto`.
pub fn blocking_io(flag: &str, connections: usize, open_loop: bool, threads: Threads) -> Result<bool, String> {
    let shared = threads.count().is_some_and(|n| n < connections);
    match flag {
        "auto" => Ok(!open_loop && !shared && connections <= AUTO_BLOCKING_MAX),
        "async" => Ok(false),
        "blocking" if open_loop => Err(
            "--client-io blocking needs the closed loop: with --rate, arrivals queue per client thread; \
             use --client-io async (or auto)"
                .into(),
        ),
        "blocking" if shared && matches!(threads, Threads::Given(_)) => Err(format!(
            "--client-threads {} is fewer than the {connections} connections: threads that share connections \
             are the event loops of --client-io async, while with blocking I/O every connection has its own \
             thread; leave --client-threads out (or give {connections}), or use --client-io async",
            threads.count().unwrap_or_default()
        )),
        "blocking" => Ok(true),
        other => Err(format!(
            "--client-io must be auto (default), blocking or async, got {other:?}"
        )),
    }
}

/// `--client-io` and the client threads as the engine takes them: whether each connection
/// gets a blocking thread ([`blocking_io`]), and the client threads: one per connection when
/// blocking, else the threads asked for or `cpus`, at most one per connection.
pub fn client_io(
    flag: &str,
    connections: usize,
    open_loop: bool,
    threads: Threads,
    cpus: usize,
) -> Result<(bool, usize), String> {
    let blocking = blocking_io(flag, connections, open_loop, threads)?;
    Ok((
        blocking,
        if blocking {
            connections
        } else {
            threads.count().unwrap_or(cpus).min(connections).max(1)
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_io_auto_blocks_in_closed_loop_up_to_the_limit() {
        use Threads::*;
        assert_eq!(blocking_io("auto", 8, false, Unset), Ok(true));
        assert_eq!(blocking_io("auto", AUTO_BLOCKING_MAX, false, Unset), Ok(true));
        assert_eq!(blocking_io("auto", AUTO_BLOCKING_MAX + 1, false, Unset), Ok(false));
        assert_eq!(blocking_io("auto", 8, true, Unset), Ok(false));
        assert_eq!(blocking_io("auto", 8, false, Given(2)), Ok(false));
        assert_eq!(blocking_io("async", 8, false, Unset), Ok(false));
        assert_eq!(blocking_io("blocking", 1024, false, Unset), Ok(true));
        let e = blocking_io("blocking", 8, true, Unset).unwrap_err();
        assert!(e.contains("--rate") && e.contains("async"), "{e}");
        let e = blocking_io("blocking", 8, false, Given(2)).unwrap_err();
        assert!(e.contains("--client-threads 2") && e.contains("8 connections"), "{e}");
        assert_eq!(client_io("auto", 8, false, Unset, 2), Ok((true, 8)));
        assert_eq!(client_io("auto", 8, false, Given(3), 2), Ok((false, 3)));
        assert_eq!(client_io("async", 8, false, Unset, 2), Ok((false, 2)));
        let e = blocking_io("epoll", 8, false, Unset).unwrap_err();
        assert!(e.contains("auto (default), blocking or async"), "{e}");
    }

    #[test]
    fn a_thread_for_every_connection_blocks_and_a_default_never_conflicts() {
        use Threads::*;
        // As many threads as connections: each connection has its own, so auto blocks.
        assert_eq!(client_io("auto", 8, false, Given(8), 2), Ok((true, 8)));
        assert_eq!(client_io("auto", 2, false, Given(16), 2), Ok((true, 2)));
        assert_eq!(client_io("blocking", 8, false, Given(8), 2), Ok((true, 8)));
        // pgbench's one job: event loops shared by the clients, one thread.
        assert_eq!(client_io("auto", 8, false, Default(1), 2), Ok((false, 1)));
        assert_eq!(client_io("auto", 1, false, Default(1), 2), Ok((true, 1)));
        assert_eq!(client_io("auto", 8, true, Default(1), 2), Ok((false, 1)));
        // A default gives way to --client-io blocking.
        assert_eq!(client_io("blocking", 8, false, Default(1), 2), Ok((true, 8)));
        // Event loops are never more than the connections.
        assert_eq!(client_io("async", 2, false, Given(16), 2), Ok((false, 2)));
        assert_eq!(client_io("async", 1, false, Unset, 4), Ok((false, 1)));
    }

    #[test]
    fn client_impls_are_checked_against_the_family() {
        assert_eq!(Client::choose("wire", Family::Mysql), Ok(Client::MysqlWire));
        assert_eq!(Client::choose("wire", Family::Postgres), Ok(Client::PgWire));
        assert_eq!(Client::choose("mysql_async", Family::Mysql), Ok(Client::MysqlAsync));
        assert_eq!(
            Client::choose("tokio-postgres", Family::Postgres),
            Ok(Client::TokioPostgres)
        );
        let e = Client::choose("mysql_async", Family::Postgres).unwrap_err();
        assert!(e.contains("PostgreSQL"), "{e}");
        let e = Client::choose("tokio-postgres", Family::Mysql).unwrap_err();
        assert!(e.contains("MySQL protocol"), "{e}");
        assert!(Client::choose("libpq", Family::Postgres)
            .unwrap_err()
            .contains("\"libpq\""));
    }
}
