//! `SandboxHome::start`: one start of a sandbox, safe to interrupt at any instant.
//!
//! | step | what holds |
//! |---|---|
//! | lock | `.lock` (flock) keeps two dbperf processes apart |
//! | running check | a server already on this datadir is found by its pid file, by the process dbperf recorded, by any process started with this sandbox's config file, and by the server's own lock on its datadir (InnoDB's `ibdata1`, Aria's `aria_log_control`): a start never launches a second server on a datadir in use; the leftover of a start cut short is stopped first |
//! | lock-down | a datadir whose accounts are not known to be locked down (fresh, or from an older dbperf) is first started with networking off (`skip-networking`, `listen_addresses = ''`), secured over the owner-only socket (root's generated password, extra admins dropped, `sb`'s generated password and privileges), marked ([`LOCKDOWN_MARK`]), and only then restarted with TCP |
//! | state | `state.json` names the spawned pid at once and says `ready` only when the start has finished |
//! | interrupt | for an interruptible start (`dbperf server start`: [`StartRequest::interruptible`]), SIGINT/SIGTERM (the flag of `dbperf_core::interrupt`) ends every wait; whatever this start spawned is stopped again, as after any failure; a second interrupt, which exits at once, kills it ([`kill_unfinished`]) |

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Child;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::config::{render_my_cnf, Config, Network, Setting};
use super::credentials::{self, Secret};
use super::daemon::{self, Binaries, Pending};
use super::home::{choose_port, remove_if_exists, validate_name, write, Paths, MAX_SOCKET_PATH};
use super::options::KnownOptions;
use super::postgres;
use super::process::{self, SandboxLock};
use super::record::{SandboxRecord, StartReport};
use super::{SandboxHome, ServerError, StartRequest};
use dbperf_driver::target::Product;

/// The file in a datadir that says its accounts were locked down by dbperf: no account logs
/// in over TCP without a password dbperf generated. It travels with copies of the datadir
/// (a lab's prepared data sets), so a datadir from an older dbperf, which lacks it, is first
/// started with networking off. The number is the version of the lock-down rules.
pub(crate) const LOCKDOWN_MARK: &str = "dbperf-lockdown";
const LOCKDOWN_VERSION: &str = "2";

/// How long a server gets to shut down between the lock-down start and the TCP start, or when
/// a start is undone, before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// The servers this process spawned whose start has not finished, for [`kill_unfinished`].
static UNFINISHED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// SIGKILLs every server this process is still starting. Registered with
/// `dbperf_core::interrupt::at_immediate_exit`, so a second Ctrl-C, which exits without
/// unwinding, leaves no half-started server behind either.
pub fn kill_unfinished() {
    if let Ok(pids) = UNFINISHED.lock() {
        for &pid in pids.iter() {
            // SAFETY: kill has no memory effects; the pid is a child this process spawned.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

impl SandboxHome {
    /// Initializes (first time only), configures and starts a sandbox, then creates the
    /// benchmark account and database; see the module documentation for what holds at every
    /// instant.
    ///
    /// `--set` keys are checked against the server's own option list first, so a key this
    /// version does not know fails here, before anything is created or started.
    pub fn start(&self, req: &StartRequest) -> Result<StartReport, ServerError> {
        let started = Instant::now();
        validate_name(&req.name)?;
        let bins = self.binaries(req.server)?;
        if !req.settings.is_empty() {
            KnownOptions::load(&bins, &self.dist_dir(req.server))?.check(req.server, &req.settings)?;
        }
        let p = self.paths(&req.name, req.server.product);
        let socket_file = match req.server.product {
            // `.s.PGSQL.65535` inside the socket directory.
            Product::Postgres => p.socket.join(".s.PGSQL.65535"),
            Product::Mariadb | Product::Mysql => p.socket.clone(),
        };
        let socket_len = socket_file.as_os_str().len();
        if socket_len > MAX_SOCKET_PATH {
            return Err(ServerError::SocketPathTooLong {
                path: socket_file,
                len: socket_len,
            });
        }
        dbperf_core::nofollow::create_dir_all(&p.dir)
            .map_err(|e| ServerError::io("cannot create sandbox directory", &p.dir, e))?;
        // Owner only: the socket (and PostgreSQL's trust login over it) is the owner's alone.
        std::fs::set_permissions(&p.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| ServerError::io("cannot make private", &p.dir, e))?;
        let _lock = SandboxLock::acquire(&req.name, p.lock.clone())?;

        let previous = self.load(&req.name)?;
        self.check_not_running(&req.name, &p, previous.as_ref())?;

        // A requested port that is taken, or an address this host does not have, fails now,
        // before the datadir is initialized.
        let addr = req
            .listen
            .as_ref()
            .map_or(std::net::Ipv4Addr::LOCALHOST.into(), |l| l.addr);
        if !req.socket_only && (req.port.is_some() || req.listen.is_some()) {
            choose_port(req.port, None, addr)?;
        }
        for dir in [&p.tmp, &p.files] {
            dbperf_core::nofollow::create_dir_all(dir).map_err(|e| ServerError::io("cannot create", dir, e))?;
        }
        if let Some(account) = &bins.run_as {
            self.hand_over(account, &p)?;
        }
        if let Some(previous) = previous.as_ref().filter(|r| r.server != req.server.id) {
            return Err(ServerError::OtherServer {
                name: req.name.clone(),
                has: previous.server.clone(),
                wanted: req.server.id,
            });
        }
        let postgres = req.server.product == Product::Postgres;
        let initialized = if postgres {
            !p.data.join("PG_VERSION").is_file()
        } else {
            !p.data.join("mysql").is_dir()
        };
        if initialized {
            // A datadir without the `mysql` schema (or PG_VERSION) is a failed earlier init:
            // start over.
            remove_if_exists(&p.data)?;
            let installed = if postgres {
                postgres::install_datadir(&bins, &p.data, &p.install_log)
            } else {
                daemon::install_datadir(&bins, &p.data, &p.tmp, &p.install_log)
            };
            if let Err(e) = installed {
                let _ = std::fs::remove_dir_all(&p.data);
                return Err(e);
            }
            if postgres {
                // initdb gives no role a password, and TCP logins need one.
                mark_locked_down(&p.data)?;
            }
        }

        // The port is chosen only now: a free port found before the initialization (a second
        // for MariaDB, up to 20 s for MySQL) could be taken by someone else in the meantime.
        let previous_port = previous.as_ref().and_then(|r| r.port);
        let network = match &req.listen {
            _ if req.socket_only => Network::SocketOnly,
            Some(l) => Network::Address {
                addr: l.addr,
                port: choose_port(req.port, previous_port, l.addr)?,
            },
            None => Network::Loopback {
                port: choose_port(req.port, previous_port, std::net::Ipv4Addr::LOCALHOST.into())?,
            },
        };
        let bench_socket = (!postgres).then_some(p.socket.as_path());
        let bench = credentials::bench_password(&p.bench_cnf, bench_socket)?;
        let record = SandboxRecord {
            name: req.name.clone(),
            kind: req.server.product,
            server: req.server.id.to_owned(),
            version: previous
                .as_ref()
                .map_or_else(|| "unknown".to_owned(), |r| r.version.clone()),
            port: network.port(),
            listen: req.listen.as_ref().map(|l| l.addr),
            allow_from: req.listen.as_ref().map(|l| l.clients.clone()).unwrap_or_default(),
            socket: p.socket.clone(),
            datadir: p.data.clone(),
            my_cnf: p.my_cnf.clone(),
            error_log: p.error_log.clone(),
            settings: req.settings.iter().map(Setting::to_string).collect(),
            started_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            pid: None,
            ready: false,
            bench_password: Some(bench.clone()),
        };
        let mut run = Starting {
            home: self,
            req,
            bins: &bins,
            p: &p,
            record,
            previous,
            child: None,
        };
        match run.bring_up(network, &bench) {
            Ok(()) => {
                let pid = run.finish()?;
                Ok(StartReport {
                    record: run.record.clone(),
                    pid,
                    initialized,
                    elapsed: started.elapsed(),
                })
            }
            Err(e) => {
                run.undo(&e);
                Err(e)
            }
        }
    }

    /// Refuses to start when a server already runs on this sandbox's datadir; stops the
    /// leftover of a start that was cut short (its record says it never finished).
    fn check_not_running(&self, name: &str, p: &Paths, previous: Option<&SandboxRecord>) -> Result<(), ServerError> {
        if let Some(pid) = self.server_pid(p, previous) {
            let finished = previous.is_none_or(|r| r.ready);
            if finished {
                let url = previous.map_or_else(
                    || format!("sandbox:{name}"),
                    |r| {
                        r.tcp_url()
                            .map_or_else(|| r.socket_url(), |_| format!("sandbox:{name}"))
                    },
                );
                return Err(ServerError::AlreadyRunning {
                    name: name.to_owned(),
                    pid,
                    url,
                });
            }
            eprintln!("note: sandbox {name:?}: stopping pid {pid}, left running by a start that did not finish");
            stop_pid(name, pid, p, STOP_TIMEOUT)?;
        }
        if let Some(pid) = datadir_user(p) {
            return Err(ServerError::DatadirInUse {
                name: name.to_owned(),
                datadir: p.data.clone(),
                pid,
            });
        }
        Ok(())
    }
}

/// A server that holds its own lock on `p`'s datadir, whatever config it was started with:
/// InnoDB's on `ibdata1`, Aria's on `aria_log_control`, or a live `postgres` named by
/// PostgreSQL's `postmaster.pid`.
fn datadir_user(p: &Paths) -> Option<i32> {
    let postmaster = p.data.join("postmaster.pid");
    process::read_pid_file(&postmaster)
        .filter(|pid| process::program_name(*pid).is_some_and(|n| n == "postgres"))
        .or_else(|| {
            ["ibdata1", "aria_log_control"]
                .iter()
                .find_map(|file| process::lock_holder(&p.data.join(file)))
        })
}

/// True if `data` carries this version's [`LOCKDOWN_MARK`].
fn locked_down(data: &Path) -> bool {
    std::fs::read_to_string(data.join(LOCKDOWN_MARK)).is_ok_and(|text| text.trim() == LOCKDOWN_VERSION)
}

/// Writes [`LOCKDOWN_MARK`] into `data` (replacing, never following, whatever is there).
fn mark_locked_down(data: &Path) -> Result<(), ServerError> {
    let path = data.join(LOCKDOWN_MARK);
    dbperf_core::nofollow::write_atomic(&path, format!("{LOCKDOWN_VERSION}\n").as_bytes())
        .map_err(|e| ServerError::io("cannot write", &path, e))
}

/// Stops `pid`, a server of sandbox `name` that is not this process's child (SIGTERM,
/// SIGINT for PostgreSQL's fast shutdown), waiting up to `timeout` before SIGKILL.
fn stop_pid(name: &str, pid: i32, p: &Paths, timeout: Duration) -> Result<(), ServerError> {
    let signal = if p.my_cnf.ends_with("postgresql.conf") {
        libc::SIGINT
    } else {
        libc::SIGTERM
    };
    process::send_signal(name, pid, signal)?;
    if !process::wait_exit(pid, &p.my_cnf, timeout) {
        process::send_signal(name, pid, libc::SIGKILL)?;
        if !process::wait_exit(pid, &p.my_cnf, Duration::from_secs(5)) {
            return Err(ServerError::Unkillable {
                name: name.to_owned(),
                pid,
            });
        }
    }
    if p.my_cnf.ends_with("postgresql.conf") {
        return Ok(());
    }
    remove_if_exists(&p.pid_file)
}

/// One start under way: what it spawned, and the record it keeps up to date.
struct Starting<'a> {
    home: &'a SandboxHome,
    req: &'a StartRequest,
    bins: &'a Binaries,
    p: &'a Paths,
    record: SandboxRecord,
    /// The record of the last start, kept to describe the sandbox if this one fails.
    previous: Option<SandboxRecord>,
    child: Option<Child>,
}

impl Starting<'_> {
    fn postgres(&self) -> bool {
        self.req.server.product == Product::Postgres
    }

    /// Runs the server on `network` with its accounts locked down: at once when the datadir
    /// carries the lock-down mark, else first with networking off, locked down over the
    /// socket, then restarted on `network`.
    fn bring_up(&mut self, network: Network, bench: &Secret) -> Result<(), ServerError> {
        let secured = locked_down(self.p.data.as_path());
        let first = if secured { network } else { Network::SocketOnly };
        self.launch(first)?;
        self.provision(first, bench)?;
        if !secured {
            mark_locked_down(&self.p.data)?;
            if first != network {
                self.interrupted()?;
                self.stop_child()?;
                self.launch(network)?;
            }
        }
        Ok(())
    }

    /// Renders the config for `network`, spawns the server, records its pid and waits until
    /// it answers on its socket.
    fn launch(&mut self, network: Network) -> Result<(), ServerError> {
        self.interrupted()?;
        let p = self.p;
        let config = Config {
            name: self.req.name.clone(),
            server: self.req.server,
            basedir: self.bins.basedir.clone(),
            datadir: p.data.clone(),
            socket: p.socket.clone(),
            pid_file: p.pid_file.clone(),
            log_error: p.error_log.clone(),
            tmpdir: p.tmp.clone(),
            files: p.files.clone(),
            network,
            profile: self.req.profile,
            settings: self.req.settings.clone(),
        };
        let rendered = if self.postgres() {
            postgres::render_postgresql_conf(&config)
        } else {
            render_my_cnf(&config)
        };
        write(&p.my_cnf, &rendered)?;
        // No server runs (checked, or stopped by this start), so these are leftovers.
        // PostgreSQL's postmaster.pid is its own lock, which it checks itself.
        if !self.postgres() {
            remove_if_exists(&p.pid_file)?;
            remove_if_exists(&p.socket)?;
        }
        let log_offset = std::fs::metadata(&p.error_log).map_or(0, |m| m.len());
        let launch = daemon::Launch {
            preload: if self.req.jemalloc {
                Some(daemon::jemalloc_path()?)
            } else {
                None
            },
            cpus: self.req.cpus.clone(),
        };
        let child = if self.postgres() {
            let clients = match (&self.req.listen, network) {
                (Some(l), Network::Address { .. }) => l.clients.as_slice(),
                _ => &[],
            };
            postgres::write_hba(&p.data, clients)?;
            postgres::spawn_server(self.bins, &p.data, &p.my_cnf, &p.error_log, &launch)?
        } else {
            daemon::spawn_server(self.bins, &p.my_cnf, &p.error_log, &launch)?
        };
        let pid = child.id() as i32;
        if self.req.interruptible {
            if let Ok(mut list) = UNFINISHED.lock() {
                list.push(pid);
            }
            dbperf_core::interrupt::at_immediate_exit(kill_unfinished);
        }
        self.child = Some(child);
        // Recorded before waiting, so `list`, `stop` and the next start see a server that
        // hangs in startup or outlives an interrupted start.
        self.record.pid = Some(pid);
        self.home.save(&self.record)?;
        let pending = Pending {
            name: &self.req.name,
            socket: &p.socket,
            error_log: &p.error_log,
            log_offset,
            timeout: self.req.ready_timeout,
            interruptible: self.req.interruptible,
        };
        let postgres = self.postgres();
        let child = self.child.as_mut().expect("spawned above");
        if postgres {
            postgres::wait_ready(child, pg_port(network), &pending)
        } else {
            daemon::wait_ready(self.bins, child, &pending, &p.admin_cnf)
        }
    }

    /// Locks the admin account down and creates (or updates) the benchmark account, over the
    /// socket of the server started on `network`.
    fn provision(&mut self, network: Network, bench: &Secret) -> Result<(), ServerError> {
        self.interrupted()?;
        let p = self.p;
        self.record.version = if self.postgres() {
            postgres::provision(&p.socket, pg_port(network), bench)?
        } else {
            daemon::secure_admin(self.bins, &p.socket, &p.admin_cnf)?;
            self.interrupted()?;
            let clients = self.req.listen.as_ref().map_or(&[][..], |l| l.clients.as_slice());
            daemon::provision(self.bins, &p.socket, &p.admin_cnf, bench, clients)?
        };
        Ok(())
    }

    /// [`ServerError::Interrupted`] once SIGINT or SIGTERM arrived.
    fn interrupted(&self) -> Result<(), ServerError> {
        if self.req.interruptible && dbperf_core::interrupt::interrupted() {
            return Err(ServerError::Interrupted {
                name: self.req.name.clone(),
            });
        }
        Ok(())
    }

    /// Stops the spawned server cleanly (SIGKILL after [`STOP_TIMEOUT`]) between the
    /// lock-down start and the TCP start.
    fn stop_child(&mut self) -> Result<(), ServerError> {
        self.halt(STOP_TIMEOUT);
        self.record.pid = None;
        self.home.save(&self.record)?;
        if self.postgres() {
            return Ok(());
        }
        remove_if_exists(&self.p.pid_file)
    }

    /// Stops the server this start spawned, if it still runs (SIGTERM, SIGINT for
    /// PostgreSQL's fast shutdown; SIGKILL after `patience`), reaps it and forgets it.
    fn halt(&mut self, patience: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id() as i32;
        if matches!(child.try_wait(), Ok(None)) {
            let signal = if self.postgres() { libc::SIGINT } else { libc::SIGTERM };
            let _ = process::send_signal(&self.req.name, pid, signal);
            let deadline = Instant::now() + patience;
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if matches!(child.try_wait(), Ok(None)) {
                let _ = process::send_signal(&self.req.name, pid, libc::SIGKILL);
            }
        }
        let _ = child.wait();
        process::forget(pid);
        if let Ok(mut list) = UNFINISHED.lock() {
            list.retain(|p| *p != pid);
        }
    }

    /// The start finished: the record says so; returns the server's pid.
    #[allow(
        clippy::zombie_processes,
        reason = "the server outlives this start, detached; `process::is_our_server` reaps it if it exits while dbperf runs"
    )]
    fn finish(&mut self) -> Result<i32, ServerError> {
        let child = self.child.take().expect("a finished start has a server");
        let pid = child.id() as i32;
        self.record.ready = true;
        self.home.save(&self.record)?;
        if let Ok(mut list) = UNFINISHED.lock() {
            list.retain(|p| *p != pid);
        }
        // The server runs on, detached; `Child` has no drop behaviour.
        drop(child);
        Ok(pid)
    }

    /// A start that fails or is interrupted stops what it started (SIGTERM, SIGKILL after
    /// 10 s) and leaves the record saying nothing runs: the last start that finished, or
    /// this one, not ready.
    fn undo(&mut self, error: &ServerError) {
        // A server that does not answer gets less time to shut down than a healthy one.
        let patience = match error {
            ServerError::StartTimeout { .. } => Duration::from_secs(10),
            _ => STOP_TIMEOUT,
        };
        self.halt(patience);
        if self.req.server.product != Product::Postgres {
            let _ = remove_if_exists(&self.p.pid_file);
        }
        let mut left = self.previous.clone().unwrap_or_else(|| self.record.clone());
        left.pid = None;
        let _ = self.home.save(&left);
    }
}

/// The PostgreSQL port of a start on `network` (it names the socket file too).
fn pg_port(network: Network) -> u16 {
    match network {
        Network::Loopback { port } | Network::Address { port, .. } => port,
        Network::SocketOnly => postgres::SOCKET_ONLY_PORT,
    }
}
