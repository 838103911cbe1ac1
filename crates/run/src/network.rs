//! The client on "another host" on this machine (`--client-netns`): a network namespace of its
//! own for the run's client threads, a veth pair to the host, optional shaping, and the
//! forwarding that lets the client reach a server that listens on loopback only — created
//! before the run, removed after it (and, when a run was killed, by the next one).
//!
//! The pair gets a /30 of 198.18.0.0/15, the block set aside for benchmarking networks
//! (RFC 2544); the namespace has no other interface and no default route, so its traffic
//! stays inside the pair. The server keeps listening where it did: the kernel (nftables nat on
//! the host end) delivers what the client sends to the host end's address and the server's
//! port to the server's loopback port, with the source rewritten to loopback, so the server
//! needs no restart, no new listen address and no account for a new host. Shaping: `rate=`
//! through `tbf` on both ends; `delay=` and `loss=` through `netem` (with its own rate), where
//! the kernel has it.
//!
//! Everything is done with iproute2 (`ip`, `tc`) and `nft`, as an administrator would: the
//! kernel interfaces behind tc qdiscs and nftables have no well-kept Rust crate covering
//! `tbf`, `netem` and nat. Names carry the process id (`dbperf-PID`, `dbpPIDh`/`dbpPIDc`,
//! table `ip dbperf_PID`), which is how leftovers of a process that is gone are recognised.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dbperf_results::manifest::NetnsRecord;

/// What `--client-netns` asks for: the shaping of the pair (none: the veth at full speed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetSpec {
    /// Bandwidth each way, bits per second (`rate=10gbit`).
    pub rate: Option<u64>,
    /// Bytes the token bucket may send at once (`burst=64k`; default: 1 ms at the rate, at
    /// least 16 KiB).
    pub burst: Option<u64>,
    /// The longest a packet may wait in the shaper's queue before it is dropped (`queue=50ms`).
    pub queue: Option<Duration>,
    /// Added one-way delay, each direction (`delay=200us`): needs netem.
    pub delay: Option<Duration>,
    /// Packets lost, percent, each direction (`loss=0.1`): needs netem.
    pub loss: Option<f64>,
    /// The keys as given, for the manifest.
    pub given: BTreeMap<String, String>,
}

/// The shaper's queue limit when `queue=` is not given.
pub const DEFAULT_QUEUE: Duration = Duration::from_millis(50);

impl std::str::FromStr for NetSpec {
    type Err = String;

    /// `rate=1gbit,delay=200us,loss=0,burst=64k,queue=50ms`; empty: no shaping.
    fn from_str(s: &str) -> Result<NetSpec, String> {
        let mut spec = NetSpec::default();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!(
                    "--client-netns takes KEY=VALUE items separated by commas (rate=1gbit,delay=200us,loss=0.1), got {item:?}"
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            let bad = |what: &str| format!("--client-netns {key}={value}: {what}");
            match key {
                "rate" => spec.rate = Some(parse_rate(value).map_err(|e| bad(&e))?),
                "burst" => {
                    spec.burst = Some(
                        dbperf_core::size::parse_size(value)
                            .filter(|b| *b > 0)
                            .ok_or_else(|| bad("expected a size in bytes such as 64k or 1m"))?,
                    )
                }
                "queue" => spec.queue = Some(dbperf_core::bounds::parse_duration(value).map_err(|e| bad(&e))?),
                "delay" => spec.delay = Some(dbperf_core::bounds::parse_duration(value).map_err(|e| bad(&e))?),
                "loss" => {
                    let p: f64 = value
                        .trim_end_matches('%')
                        .parse()
                        .map_err(|_| bad("expected a percentage such as 0.1 or 1%"))?;
                    if !(0.0..=100.0).contains(&p) {
                        return Err(bad("a loss is 0 to 100 percent"));
                    }
                    spec.loss = Some(p);
                }
                _ => {
                    return Err(format!(
                        "--client-netns: unknown key {key:?}; the keys are rate, burst, queue, delay and loss"
                    ))
                }
            }
            spec.given.insert(key.to_string(), value.to_string());
        }
        if spec.rate.is_none() && (spec.burst.is_some() || spec.queue.is_some()) {
            return Err("--client-netns: burst= and queue= shape a rate: give rate= too".into());
        }
        Ok(spec)
    }
}

/// `10gbit`, `100mbit`, `500kbit`, `1000000bit` (tc's spellings, decimal) to bits per second.
fn parse_rate(value: &str) -> Result<u64, String> {
    let split = value.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(value.len());
    let (num, unit) = value.split_at(split);
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("expected a rate such as 10gbit, 100mbit or 500kbit, got {value:?}"))?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        u => {
            return Err(format!(
                "unknown rate unit {u:?} (use bit, kbit, mbit, gbit or tbit: bits per second, as tc writes them)"
            ))
        }
    };
    let bits = n * scale;
    if !(bits.is_finite() && (8000.0..=1e13).contains(&bits)) {
        return Err(format!("a rate must be 8kbit to 10tbit, got {value:?}"));
    }
    Ok(bits as u64)
}

impl NetSpec {
    /// True when delay or loss is asked for (netem).
    pub fn needs_netem(&self) -> bool {
        self.delay.is_some() || self.loss.is_some()
    }

    /// The token bucket's burst: as given, else 1 ms at the rate, at least 16 KiB.
    fn burst_bytes(&self, rate: u64) -> u64 {
        self.burst.unwrap_or((rate / 8 / 1000).max(16 * 1024))
    }

    /// The `tc qdisc add` arguments after `root` for one end.
    fn qdisc_args(&self) -> Option<Vec<String>> {
        if self.needs_netem() {
            let mut a = vec!["netem".to_string()];
            if let Some(d) = self.delay {
                a.extend(["delay".into(), format!("{}us", d.as_micros())]);
            }
            if let Some(l) = self.loss {
                a.extend(["loss".into(), format!("{l}%")]);
            }
            if let Some(r) = self.rate {
                a.extend(["rate".into(), format!("{r}bit")]);
            }
            return Some(a);
        }
        let rate = self.rate?;
        Some(vec![
            "tbf".into(),
            "rate".into(),
            format!("{rate}bit"),
            "burst".into(),
            self.burst_bytes(rate).to_string(),
            "latency".into(),
            format!("{}us", self.queue.unwrap_or(DEFAULT_QUEUE).as_micros()),
        ])
    }
}

/// Why the client's network could not be set up.
#[derive(Debug)]
pub struct NetError(pub String);

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NetError {}

/// The client's namespace, its veth pair, shaping and forwarding: removed when dropped.
#[derive(Debug)]
pub struct ClientNet {
    id: u32,
    host_addr: Ipv4Addr,
    client_addr: Ipv4Addr,
    port: u16,
    record: NetnsRecord,
}

/// The base of the pairs' addresses: 198.18.0.0/15 holds 32768 /30s.
const BASE: u32 = u32::from_be_bytes([198, 18, 0, 0]);
const PAIRS: u32 = 1 << 15;

impl ClientNet {
    /// Sets up the client's network for a server listening on `server` (a loopback address),
    /// after removing what killed runs left behind. Needs root (or CAP_NET_ADMIN and
    /// CAP_SYS_ADMIN) and iproute2 and nftables.
    pub fn create(spec: &NetSpec, server: SocketAddrV4) -> Result<ClientNet, NetError> {
        check_privileges()?;
        for tool in [("ip", "iproute2"), ("tc", "iproute2"), ("nft", "nftables")] {
            if dbperf_server::find_program(tool.0).is_err() {
                return Err(NetError(format!(
                    "--client-netns needs `{}` (Debian package {}): apt-get install {}",
                    tool.0, tool.1, tool.1
                )));
            }
        }
        if !server.ip().is_loopback() {
            return Err(NetError(format!(
                "--client-netns puts the client in a namespace on this machine and forwards to a server listening on loopback; {server} is not a loopback address"
            )));
        }
        remove_leftovers();
        let id = std::process::id();
        let (host_addr, client_addr) = free_pair(id)?;
        let mut net = ClientNet {
            id,
            host_addr,
            client_addr,
            port: server.port(),
            record: NetnsRecord {
                namespace: namespace_name(id),
                client_interface: format!("dbp{id}c"),
                client_address: format!("{client_addr}/30"),
                host_interface: format!("dbp{id}h"),
                host_address: format!("{host_addr}/30"),
                forwards_to: server.to_string(),
                shaping: spec.given.clone(),
                qdiscs: BTreeMap::new(),
                mtu: 0,
            },
        };
        // Dropping `net` on an error removes whatever part was made.
        CREATED.store(true, Ordering::SeqCst);
        dbperf_core::interrupt::at_immediate_exit(remove_own);
        net.build(spec, server)?;
        Ok(net)
    }

    fn build(&mut self, spec: &NetSpec, server: SocketAddrV4) -> Result<(), NetError> {
        let (ns, host, client) = (
            self.record.namespace.clone(),
            self.record.host_interface.clone(),
            self.record.client_interface.clone(),
        );
        run("ip", &["netns", "add", &ns])?;
        run(
            "ip",
            &[
                "link", "add", &host, "type", "veth", "peer", "name", &client, "netns", &ns,
            ],
        )?;
        run("ip", &["addr", "add", &self.record.host_address, "dev", &host])?;
        run("ip", &["link", "set", &host, "up"])?;
        run(
            "ip",
            &["-n", &ns, "addr", "add", &self.record.client_address, "dev", &client],
        )?;
        run("ip", &["-n", &ns, "link", "set", &client, "up"])?;
        run("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        // Packets to a loopback address may arrive on the host end (after the nat below).
        let sysctl = format!("/proc/sys/net/ipv4/conf/{host}/route_localnet");
        std::fs::write(&sysctl, "1").map_err(|e| NetError(format!("cannot write {sysctl}: {e}")))?;
        let rules = format!(
            "table ip {table} {{\n\
             \tchain prerouting {{ type nat hook prerouting priority -100; iifname \"{host}\" ip daddr {addr} tcp dport {port} dnat to {server}; }}\n\
             \tchain input {{ type nat hook input priority 100; iifname \"{host}\" ip daddr {sip} tcp dport {port} snat to {sip}; }}\n\
             }}\n",
            table = table_name(self.id),
            addr = self.host_addr,
            port = self.port,
            sip = server.ip(),
        );
        run_with_input("nft", &["-f", "-"], &rules)?;
        if let Some(args) = spec.qdisc_args() {
            for (dev, netns) in [(&host, None), (&client, Some(ns.as_str()))] {
                let mut a: Vec<&str> = Vec::new();
                if let Some(n) = netns {
                    a.extend(["-n", n]);
                }
                a.extend(["qdisc", "add", "dev", dev.as_str(), "root"]);
                a.extend(args.iter().map(String::as_str));
                run("tc", &a).map_err(|e| match spec.needs_netem() && e.0.contains("qdisc kind is unknown") {
                    true => NetError(format!(
                        "--client-netns delay= and loss= need the kernel's netem queueing discipline (sch_netem), which this kernel does not have ({}); shape with rate= alone (tbf), or run on a kernel with netem",
                        e.0.lines().last().unwrap_or_default().trim()
                    )),
                    false => e,
                })?;
            }
        }
        for (dev, netns) in [(&host, None), (&client, Some(ns.as_str()))] {
            let mut a: Vec<&str> = Vec::new();
            if let Some(n) = netns {
                a.extend(["-n", n]);
            }
            a.extend(["qdisc", "show", "dev", dev.as_str()]);
            let shown = output("tc", &a).unwrap_or_default();
            self.record.qdiscs.insert(dev.clone(), shown.trim().to_string());
        }
        self.record.mtu = std::fs::read_to_string(format!("/sys/class/net/{host}/mtu"))
            .ok()
            .and_then(|m| m.trim().parse().ok())
            .unwrap_or(0);
        Ok(())
    }

    /// The namespace's file, for the engine's client threads to join.
    pub fn netns_path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.record.namespace)
    }

    /// Where the client connects: the host end of the pair, the server's port.
    pub fn client_endpoint(&self) -> SocketAddrV4 {
        SocketAddrV4::new(self.host_addr, self.port)
    }

    /// The address of the client's end.
    pub fn client_address(&self) -> Ipv4Addr {
        self.client_addr
    }

    /// What the manifest records.
    pub fn record(&self) -> &NetnsRecord {
        &self.record
    }
}

impl Drop for ClientNet {
    fn drop(&mut self) {
        remove(self.id);
        CREATED.store(false, Ordering::SeqCst);
    }
}

/// Set while this process has a client network (for [`remove_own`]).
static CREATED: AtomicBool = AtomicBool::new(false);

/// Removes this process's client network, if it has one: for an exit that skips destructors
/// (a second Ctrl-C).
pub fn remove_own() {
    if CREATED.swap(false, Ordering::SeqCst) {
        remove(std::process::id());
    }
}

/// `dbperf-PID`.
fn namespace_name(id: u32) -> String {
    format!("dbperf-{id}")
}

/// `dbperf_PID` (nft table names take no dash).
fn table_name(id: u32) -> String {
    format!("dbperf_{id}")
}

/// Removes the namespace (its veth end and so the pair go with it), the host end if it is
/// still there, and the nat table of process `id`. Errors are ignored: each part may be gone.
fn remove(id: u32) {
    let quiet = |prog: &str, args: &[&str]| {
        let _ = Command::new(prog)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    };
    quiet("ip", &["netns", "del", &namespace_name(id)]);
    quiet("ip", &["link", "del", &format!("dbp{id}h")]);
    quiet("nft", &["delete", "table", "ip", &table_name(id)]);
}

/// Removes every namespace, host veth end and nat table a dbperf process that is gone left
/// (a run killed with SIGKILL cannot clean up); returns the process ids cleaned up after.
pub fn remove_leftovers() -> Vec<u32> {
    let mut ids = std::collections::BTreeSet::new();
    if let Some(list) = output("ip", &["netns", "list"]) {
        ids.extend(list.lines().filter_map(|l| {
            l.split_whitespace()
                .next()?
                .strip_prefix("dbperf-")?
                .parse::<u32>()
                .ok()
        }));
    }
    if let Some(links) = output("ip", &["-o", "link", "show"]) {
        ids.extend(links.lines().filter_map(|l| {
            let name = l.split(':').nth(1)?.trim().split('@').next()?;
            name.strip_prefix("dbp")?.strip_suffix('h')?.parse::<u32>().ok()
        }));
    }
    if let Some(tables) = output("nft", &["list", "tables"]) {
        ids.extend(
            tables
                .lines()
                .filter_map(|l| l.trim().strip_prefix("table ip dbperf_")?.parse::<u32>().ok()),
        );
    }
    let gone: Vec<u32> = ids.into_iter().filter(|id| !dbperf_alive(*id)).collect();
    for id in &gone {
        remove(*id);
    }
    gone
}

/// Whether process `id` is a running dbperf (its name starts with `dbperf`, as the binary's
/// and its test binaries' do).
fn dbperf_alive(id: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{id}/comm")).is_ok_and(|c| c.starts_with("dbperf"))
}

/// The pair's addresses: the /30 numbered by the process id, or the next free one.
fn free_pair(id: u32) -> Result<(Ipv4Addr, Ipv4Addr), NetError> {
    let used = output("ip", &["-o", "-4", "addr", "show"]).unwrap_or_default();
    for k in 0..PAIRS {
        let net = BASE + ((id + k) % PAIRS) * 4;
        let (host, client) = (Ipv4Addr::from(net + 1), Ipv4Addr::from(net + 2));
        if !used.contains(&format!(" {host}/")) && !used.contains(&format!(" {client}/")) {
            return Ok((host, client));
        }
    }
    Err(NetError("every /30 of 198.18.0.0/15 is in use on this machine".into()))
}

/// Root, or the capabilities the set-up needs (CAP_NET_ADMIN for links, qdiscs and nft;
/// CAP_SYS_ADMIN for the namespace's mount and for joining it).
pub fn check_privileges() -> Result<(), NetError> {
    let eff = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .unwrap_or(0);
    const NET_ADMIN: u64 = 1 << 12;
    const SYS_ADMIN: u64 = 1 << 21;
    if eff & NET_ADMIN != 0 && eff & SYS_ADMIN != 0 {
        return Ok(());
    }
    Err(NetError(
        "--client-netns needs root (or the capabilities CAP_NET_ADMIN and CAP_SYS_ADMIN): it creates a network namespace, a veth pair, queueing disciplines and nftables rules; run as root, or drop --client-netns".into(),
    ))
}

/// Runs `prog args`; an error carries the command and what it printed.
fn run(prog: &str, args: &[&str]) -> Result<(), NetError> {
    run_with_input(prog, args, "")
}

fn run_with_input(prog: &str, args: &[&str], input: &str) -> Result<(), NetError> {
    let cmd = format!("{prog} {}", args.join(" "));
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| NetError(format!("cannot run `{cmd}`: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| NetError(format!("cannot run `{cmd}`: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(NetError(format!(
        "setting up the client's network: `{cmd}` failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// What `prog args` printed, if it succeeded.
fn output(prog: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(prog).args(args).stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shaping_is_parsed_as_tc_writes_it_and_bad_items_are_named() {
        let s: NetSpec = "rate=10gbit, delay=200us,loss=0.5%".parse().unwrap();
        assert_eq!(s.rate, Some(10_000_000_000));
        assert_eq!(s.delay, Some(Duration::from_micros(200)));
        assert_eq!(s.loss, Some(0.5));
        assert!(s.needs_netem());
        assert_eq!(
            s.qdisc_args().unwrap().join(" "),
            "netem delay 200us loss 0.5% rate 10000000000bit"
        );
        let t: NetSpec = "rate=100mbit".parse().unwrap();
        assert_eq!(
            t.qdisc_args().unwrap().join(" "),
            "tbf rate 100000000bit burst 16384 latency 50000us"
        );
        let g: NetSpec = "rate=10gbit,burst=2m,queue=5ms".parse().unwrap();
        assert_eq!(
            g.qdisc_args().unwrap().join(" "),
            "tbf rate 10000000000bit burst 2097152 latency 5000us"
        );
        assert_eq!("".parse::<NetSpec>().unwrap(), NetSpec::default());
        assert!(NetSpec::default().qdisc_args().is_none());
        for (bad, says) in [
            ("rate=10gbps", "unknown rate unit"),
            ("rate=fast", "expected a rate"),
            ("rate=1bit", "8kbit to 10tbit"),
            ("delay=soon", "delay=soon"),
            ("loss=120", "0 to 100"),
            ("jitter=1ms", "unknown key \"jitter\""),
            ("rate", "KEY=VALUE"),
            ("burst=64k", "give rate= too"),
        ] {
            let e = bad.parse::<NetSpec>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
