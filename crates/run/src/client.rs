//! `--client-impl`: which session speaks to the server, checked against the target's
//! family. `wire` is dbperf's own lean session for both families (the default); the
//! driver-crate sessions stay selectable so the difference can be measured.
//! `--client-io`: how client threads wait for replies ([`blocking_io`]).

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

/// Resolves `--client-io FLAG` for a run of `connections` connections: true for a thread
/// per connection blocking in the kernel for each reply (sysbench's model, and the cheapest
/// per query: one `recv` and one wake-up, no event loop), false for `--client-threads`
/// event-loop threads multiplexing the connections (needed by open loop). An explicit
/// `--client-threads` asks for event loops.
pub fn blocking_io(flag: &str, connections: usize, open_loop: bool, client_threads: bool) -> Result<bool, String> {
    match flag {
        "auto" => Ok(!open_loop && !client_threads && connections <= AUTO_BLOCKING_MAX),
        "async" => Ok(false),
        "blocking" if open_loop => Err(
            "--client-io blocking needs the closed loop: with --rate, arrivals queue per client thread; \
             use --client-io async (or auto)"
                .into(),
        ),
        "blocking" if client_threads => Err(
            "--client-threads sets the event-loop threads of --client-io async; with blocking I/O \
             every connection has its own thread"
                .into(),
        ),
        "blocking" => Ok(true),
        other => Err(format!(
            "--client-io must be auto (default), blocking or async, got {other:?}"
        )),
    }
}

/// `--client-io` and `--client-threads` as the engine takes them: whether each connection
/// gets a blocking thread ([`blocking_io`]), and the client threads (one per connection when
/// blocking, else `--client-threads` or `cpus`).
pub fn client_io(
    flag: &str,
    connections: usize,
    open_loop: bool,
    client_threads: Option<usize>,
    cpus: usize,
) -> Result<(bool, usize), String> {
    let blocking = blocking_io(flag, connections, open_loop, client_threads.is_some())?;
    Ok((
        blocking,
        if blocking {
            connections
        } else {
            client_threads.unwrap_or(cpus).max(1)
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_io_auto_blocks_in_closed_loop_up_to_the_limit() {
        assert_eq!(blocking_io("auto", 8, false, false), Ok(true));
        assert_eq!(blocking_io("auto", AUTO_BLOCKING_MAX, false, false), Ok(true));
        assert_eq!(blocking_io("auto", AUTO_BLOCKING_MAX + 1, false, false), Ok(false));
        assert_eq!(blocking_io("auto", 8, true, false), Ok(false));
        assert_eq!(blocking_io("auto", 8, false, true), Ok(false));
        assert_eq!(blocking_io("async", 8, false, false), Ok(false));
        assert_eq!(blocking_io("blocking", 1024, false, false), Ok(true));
        let e = blocking_io("blocking", 8, true, false).unwrap_err();
        assert!(e.contains("--rate") && e.contains("async"), "{e}");
        let e = blocking_io("blocking", 8, false, true).unwrap_err();
        assert!(e.contains("--client-threads"), "{e}");
        assert_eq!(client_io("auto", 8, false, None, 2), Ok((true, 8)));
        assert_eq!(client_io("auto", 8, false, Some(3), 2), Ok((false, 3)));
        assert_eq!(client_io("async", 8, false, None, 2), Ok((false, 2)));
        let e = blocking_io("epoll", 8, false, false).unwrap_err();
        assert!(e.contains("auto (default), blocking or async"), "{e}");
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
