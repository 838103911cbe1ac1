//! Where a run's client stands: which path it takes to the server (a Unix socket, loopback,
//! another host, or a network namespace of its own: [`super::network`]), and which share of a
//! run spread over several clients it runs (`--shard I/N --start-at TIME`).
//!
//! A shard runs connections `first .. first + users` of the run's numbering (the engine's
//! [`dbperf_engine::RunConfig::worker_offset`]), so every connection keeps the random stream
//! it would have in the unsharded run (the workloads seed each connection from the run's seed
//! and its number); its open-loop arrivals, the run's `--rate` times its share of the users,
//! get a seed derived from the run's seed and the shard's index. Every shard's measured phase
//! starts at the same wall-clock instant, so the shards' intervals share their boundaries and
//! `dbperf merge` adds them up exactly. Without `--rand-seed` (or the workload's seed option),
//! the run's seed comes from the start time: the same in every shard.

use std::net::{IpAddr, Ipv4Addr, SocketAddrV4};
use std::time::SystemTime;

use dbperf_core::bounds::MAX_SHARDS;
use dbperf_core::clock::unix_ms;

use anyhow::{bail, Result};
use dbperf_engine::RunConfig;

use super::network::{ClientNet, NetSpec};
use dbperf_driver::Target;
use dbperf_results::manifest::{NetworkRecord, RouteRecord, ShardRecord};
use dbperf_results::ServerFacts;

/// `--shard I/N`: shard `index` (from 0) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// From 0, as Kubernetes' `JOB_COMPLETION_INDEX`.
    pub index: u32,
    /// Shards in the run.
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!("--shard takes I/N, this shard's index from 0 and the number of shards (0/3, 1/3, 2/3), got {s:?}")
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || count > MAX_SHARDS {
            return Err(format!("--shard {s}: a run has 1 to {MAX_SHARDS} shards"));
        }
        if index >= count {
            return Err(format!(
                "--shard {s}: the index counts from 0, so the shards of {count} are 0/{count} to {}/{count}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

/// The run's seed every shard derives when none is given: from the shared start time.
pub fn seed_from_start(at: SystemTime) -> u64 {
    mix(unix_ms(at) as u64 ^ 0x6462_7065_7266_0001)
}

/// SplitMix64's finaliser: a seed per shard from the run's seed and the index.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Connections `first .. first + n` of `total` for shard `s`: shares that differ by at most one.
pub fn share(total: u64, s: Shard) -> (u64, u64) {
    let (i, n) = (u64::from(s.index), u64::from(s.count));
    let first = total * i / n;
    (first, total * (i + 1) / n - first)
}

/// Makes `run` (built for the whole run: every user, the whole rate and event count) the
/// run of shard `s`, starting its measured phase at `start_at`; returns what the manifest
/// records.
pub fn apply_shard(run: &mut RunConfig, s: Shard, start_at: SystemTime) -> Result<ShardRecord, String> {
    let total = run.connections as u64;
    let mut record = shard_record(total, s, start_at, "users (connections)")?;
    let part = record.users as f64 / total as f64;
    record.rate_total = run.arrival.rate();
    run.arrival = match run.arrival {
        dbperf_engine::Arrival::Closed => dbperf_engine::Arrival::Closed,
        dbperf_engine::Arrival::Fixed { rate } => dbperf_engine::Arrival::Fixed { rate: rate * part },
        dbperf_engine::Arrival::Poisson { rate } => dbperf_engine::Arrival::Poisson { rate: rate * part },
    };
    run.events = run.events.map(|e| {
        let (i, n) = (u64::from(s.index), u64::from(s.count));
        e * (i + 1) / n - e * i / n
    });
    run.connections = record.users as usize;
    run.client_threads = run.client_threads.min(run.connections).max(1);
    run.worker_offset = record.first_user as usize;
    run.seed = mix(run.seed ^ (u64::from(s.index) + 1).wrapping_mul(0x5851_f42d_4c95_7f2d));
    run.start_at = Some(start_at);
    record.schedule_seed = run.seed;
    Ok(record)
}

/// The manifest's record of shard `s` of a run of `total` users (`what` they are, for the
/// error: "users (connections)", "query streams"), starting at `start_at`: its share of them
/// ([`share`]). Refused when there are fewer users than shards.
pub fn shard_record(total: u64, s: Shard, start_at: SystemTime, what: &str) -> Result<ShardRecord, String> {
    if total < u64::from(s.count) {
        return Err(format!(
            "--shard {}/{}: the run has {total} {what}, too few for {} shards; give at most {total} shards",
            s.index, s.count, s.count
        ));
    }
    let (first, users) = share(total, s);
    Ok(ShardRecord {
        index: s.index,
        count: s.count,
        start_at: dbperf_results::manifest::rfc3339_utc(chrono::DateTime::<chrono::Utc>::from(start_at)),
        start_at_unix_ms: unix_ms(start_at),
        users_total: total,
        first_user: first,
        users,
        rate_total: None,
        schedule_seed: 0,
    })
}

/// The client's path to the server for one run: the target the workload connects to, the
/// namespace when there is one (removed when this is dropped), and the manifest's record.
#[derive(Debug)]
pub struct ClientPath {
    /// What the workload's connections use.
    pub target: Target,
    /// The manifest's `network`.
    pub record: NetworkRecord,
    net: Option<ClientNet>,
}

impl ClientPath {
    /// The path to `target` as it is (`netns` absent), or through a namespace of its own
    /// shaped as `netns` says. The server's TCP port for a Unix-socket target comes from its
    /// variables (`port`, and `skip_networking` / `listen_addresses`).
    pub fn open(target: &Target, netns: Option<&NetSpec>, facts: &ServerFacts) -> Result<ClientPath> {
        let Some(spec) = netns else {
            return Ok(ClientPath::direct(target));
        };
        let server = loopback_listener(target, facts)?;
        let net = ClientNet::create(spec, server)?;
        let mut client = target.clone();
        client.socket = None;
        client.host = net.client_endpoint().ip().to_string();
        client.port = net.client_endpoint().port();
        let record = NetworkRecord {
            path: "netns".into(),
            address: net.client_endpoint().to_string(),
            netns: Some(net.record().clone()),
            route: None,
        };
        Ok(ClientPath {
            target: client,
            record,
            net: Some(net),
        })
    }

    /// The path to `target` as it is.
    pub fn direct(target: &Target) -> ClientPath {
        ClientPath {
            target: target.clone(),
            record: direct_record(target),
            net: None,
        }
    }

    /// The namespace the engine's client threads join.
    pub fn netns_path(&self) -> Option<std::path::PathBuf> {
        self.net.as_ref().map(ClientNet::netns_path)
    }

    /// Runs `f` on a thread of its own inside the client's namespace, or on this thread when
    /// there is none. The threads `f` starts (a Tokio runtime's workers) are in the namespace
    /// too, and so is any process they start: `f` must not start the server. For the clients
    /// the engine does not run (TPC-H's query streams).
    pub fn run_inside<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        let Some(ns) = self.netns_path() else {
            return Ok(f());
        };
        let joined = std::thread::scope(|scope| {
            let client = std::thread::Builder::new()
                .name("dbperf-netns-client".into())
                .spawn_scoped(scope, || dbperf_engine::join_netns(&ns).map(|()| f()))?;
            Ok::<_, std::io::Error>(client.join())
        })?;
        match joined {
            Ok(result) => result.map_err(anyhow::Error::msg),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// One line for the banner: how the client reaches the server.
    pub fn describe(&self) -> String {
        match &self.record.netns {
            Some(n) => {
                let shaping: Vec<String> = n.shaping.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!(
                    "client in network namespace {} ({} → {}{}), forwarded to {}",
                    n.namespace,
                    n.client_address,
                    self.record.address,
                    match shaping.is_empty() {
                        true => String::new(),
                        false => format!(", {}", shaping.join(",")),
                    },
                    n.forwards_to
                )
            }
            None => format!("{} {}", self.record.path, self.record.address),
        }
    }
}

/// The record of a run that connects as the target says.
fn direct_record(target: &Target) -> NetworkRecord {
    match &target.socket {
        Some(s) => NetworkRecord {
            path: "unix-socket".into(),
            address: s.clone(),
            netns: None,
            route: None,
        },
        None => {
            let loopback = target.host == "localhost" || target.host.parse::<IpAddr>().is_ok_and(|a| a.is_loopback());
            NetworkRecord {
                path: if loopback { "loopback" } else { "tcp" }.into(),
                address: format!("{}:{}", target.host, target.port),
                netns: None,
                route: if loopback {
                    None
                } else {
                    route_to(&target.host, target.port)
                },
            }
        }
    }
}

/// How this host reaches `host`: `ip -o route get ADDRESS` (its `dev`, `src` and `via`) and
/// the interface's MTU and speed from `/sys/class/net`; `None` when the name does not
/// resolve or `ip` is missing (the run goes on, the manifest lacks the route).
fn route_to(host: &str, port: u16) -> Option<RouteRecord> {
    use std::net::ToSocketAddrs as _;
    let addr = (host, port).to_socket_addrs().ok()?.next()?.ip();
    let out = std::process::Command::new("ip")
        .args(["-o", "route", "get", &addr.to_string()])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut route = parse_route_get(&String::from_utf8_lossy(&out.stdout))?;
    route.server_address = addr.to_string();
    let sys = |file: &str| std::fs::read_to_string(format!("/sys/class/net/{}/{file}", route.interface)).ok();
    route.mtu = sys("mtu").and_then(|t| t.trim().parse().ok());
    // Virtual and down links report -1 or fail to read.
    route.speed_mbps = sys("speed")
        .and_then(|t| t.trim().parse::<i64>().ok())
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0);
    Some(route)
}

/// `10.0.0.2 via 10.0.0.254 dev eth0 src 10.0.0.1 uid 0 \    cache` → interface, source and gateway.
fn parse_route_get(text: &str) -> Option<RouteRecord> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let after = |key: &str| {
        words
            .iter()
            .position(|w| *w == key)
            .and_then(|i| words.get(i + 1))
            .map(|w| (*w).to_owned())
    };
    Some(RouteRecord {
        interface: after("dev")?,
        client_address: after("src")?,
        gateway: after("via"),
        ..RouteRecord::default()
    })
}

/// The loopback address and port the server listens on, for the namespace's forwarding.
fn loopback_listener(target: &Target, facts: &ServerFacts) -> Result<SocketAddrV4> {
    let var = |k: &str| facts.variables.get(k).map(|v| v.trim().to_string());
    if target.socket.is_none() {
        let ip = match target.host.as_str() {
            "localhost" => Ipv4Addr::LOCALHOST,
            h => match h.parse::<IpAddr>() {
                Ok(IpAddr::V4(a)) if a.is_loopback() => a,
                _ => bail!(
                    "--client-netns forwards to a server on this machine's loopback; the target {h} is not one (a server on another host is already across a network)"
                ),
            },
        };
        return Ok(SocketAddrV4::new(ip, target.port));
    }
    let no_tcp = var("skip_networking").is_some_and(|v| v.eq_ignore_ascii_case("ON"))
        || var("listen_addresses").is_some_and(|v| v.is_empty());
    let port = var("port").and_then(|p| p.parse::<u16>().ok()).filter(|p| *p > 0);
    match (no_tcp, port) {
        (false, Some(port)) => {
            let bind = var("bind_address").or_else(|| var("listen_addresses")).unwrap_or_default();
            let ip = bind
                .split(',')
                .filter_map(|a| a.trim().parse::<Ipv4Addr>().ok())
                .find(Ipv4Addr::is_loopback)
                .unwrap_or(Ipv4Addr::LOCALHOST);
            Ok(SocketAddrV4::new(ip, port))
        }
        _ => bail!(
            "--client-netns needs the server to listen on TCP on loopback, and this one listens on its Unix socket only; start the sandbox without --socket-only"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbperf_core::clock::parse_start_at;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_route_names_its_interface_source_and_gateway() {
        let r = parse_route_get("10.0.0.2 dev eth0 src 10.0.0.1 uid 0 \\    cache \n").unwrap();
        assert_eq!(
            (r.interface.as_str(), r.client_address.as_str(), r.gateway),
            ("eth0", "10.0.0.1", None)
        );
        let r = parse_route_get("192.0.2.7 via 10.0.0.254 dev ens3 src 10.0.0.1 uid 0").unwrap();
        assert_eq!(r.gateway.as_deref(), Some("10.0.0.254"));
        assert!(parse_route_get("RTNETLINK answers: Network is unreachable").is_none());
        let shown = RouteRecord {
            server_address: "192.0.2.7".into(),
            mtu: Some(1500),
            speed_mbps: Some(10_000),
            ..r
        }
        .text();
        assert_eq!(
            shown,
            "10.0.0.1 → 192.0.2.7 via ens3 and 10.0.0.254 (MTU 1500, 10000 Mbit/s)"
        );
    }

    #[test]
    fn shards_split_users_rate_and_events_and_name_bad_values() {
        let s = |t: &str| t.parse::<Shard>();
        assert_eq!(s("1/3").unwrap(), Shard { index: 1, count: 3 });
        assert!(s("3/3").unwrap_err().contains("0/3 to 2/3"));
        assert!(s("0/0").unwrap_err().contains("1 to"));
        assert!(s("a/3").unwrap_err().contains("I/N"));
        assert!(s("2").unwrap_err().contains("I/N"));
        let shares: Vec<_> = (0..3).map(|i| share(10, Shard { index: i, count: 3 })).collect();
        assert_eq!(shares, [(0, 3), (3, 3), (6, 4)]);
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let mut seeds = std::collections::BTreeSet::new();
        let mut rate = 0.0;
        let mut events = 0;
        for i in 0..3 {
            let mut run = RunConfig::new(10, Some(Duration::from_secs(5)));
            run.arrival = dbperf_engine::Arrival::Poisson { rate: 1000.0 };
            run.events = Some(100);
            run.client_threads = 8;
            run.seed = 42;
            let rec = apply_shard(&mut run, Shard { index: i, count: 3 }, at).unwrap();
            assert_eq!((run.worker_offset as u64, run.connections as u64), shares[i as usize]);
            assert_eq!(
                (rec.first_user, rec.users, rec.users_total),
                (shares[i as usize].0, shares[i as usize].1, 10)
            );
            assert_eq!(rec.rate_total, Some(1000.0));
            assert_eq!(rec.start_at, "2027-01-15T08:00:00.000Z");
            assert!(run.client_threads <= run.connections);
            rate += run.arrival.rate().unwrap();
            events += run.events.unwrap();
            seeds.insert(run.seed);
        }
        assert!((rate - 1000.0).abs() < 1e-9 && events == 100 && seeds.len() == 3);
        let mut run = RunConfig::new(2, None);
        let e = apply_shard(&mut run, Shard { index: 2, count: 3 }, at).unwrap_err();
        assert!(e.contains("at most 2 shards"), "{e}");
    }

    #[test]
    fn start_times_are_unix_seconds_or_rfc3339() {
        let t = parse_start_at("1800000000").unwrap();
        assert_eq!(t, parse_start_at("2027-01-15T08:00:00Z").unwrap());
        assert_eq!(t, parse_start_at("2027-01-15T09:00:00+01:00").unwrap());
        assert_eq!(unix_ms(parse_start_at("1800000000.25").unwrap()), 1_800_000_000_250);
        assert!(parse_start_at("tomorrow").unwrap_err().contains("RFC 3339"));
        assert!(parse_start_at("-5").unwrap_err().contains("0 to"));
        assert_eq!(
            seed_from_start(t),
            seed_from_start(parse_start_at("2027-01-15T08:00:00Z").unwrap())
        );
    }

    #[test]
    fn the_path_is_recorded_as_the_target_gives_it() {
        let t = |url: &str| Target::parse(url).unwrap();
        let facts = ServerFacts::default();
        let p = ClientPath::open(&t("mysql://u:p@127.0.0.1:3307/db"), None, &facts).unwrap();
        assert_eq!(
            (p.record.path.as_str(), p.record.address.as_str()),
            ("loopback", "127.0.0.1:3307")
        );
        let p = ClientPath::open(&t("mysql://u:p@db.example:3306/db"), None, &facts).unwrap();
        assert_eq!(p.record.path, "tcp");
        let p = ClientPath::open(&t("mysql://u:p@localhost/db?socket=/tmp/m.sock"), None, &facts).unwrap();
        assert_eq!(
            (p.record.path.as_str(), p.record.address.as_str()),
            ("unix-socket", "/tmp/m.sock")
        );
        // The forwarding target of a namespace: the target's loopback port, or the socket
        // server's TCP port; a remote host or a socket-only server is refused.
        let addr = loopback_listener(&t("mysql://u:p@127.0.0.1:3307/db"), &facts).unwrap();
        assert_eq!(addr.to_string(), "127.0.0.1:3307");
        let e = loopback_listener(&t("mysql://u:p@10.1.2.3:3306/db"), &facts).unwrap_err();
        assert!(e.to_string().contains("not one"), "{e}");
        let mut vars = ServerFacts::default();
        vars.variables.insert("port".into(), "3310".into());
        vars.variables.insert("bind_address".into(), "127.0.0.1".into());
        let sock = t("mysql://u:p@localhost/db?socket=/tmp/m.sock");
        assert_eq!(loopback_listener(&sock, &vars).unwrap().to_string(), "127.0.0.1:3310");
        vars.variables.insert("skip_networking".into(), "ON".into());
        let e = loopback_listener(&sock, &vars).unwrap_err();
        assert!(e.to_string().contains("--socket-only"), "{e}");
    }
}
