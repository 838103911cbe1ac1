//! The operating system's view of an interval: CPU time by state, context switches, memory,
//! disk I/O as `iostat -x` computes it and network traffic, all read from `/proc` and turned
//! into rates by differencing two reads. The parsers are pure functions over the files' text;
//! [`OsSampler`] owns the previous read and the clock.
//!
//! Sources (Linux): `/proc/stat`, `/proc/meminfo`, `/proc/diskstats` (whole disks are the names
//! under `/sys/block`), `/proc/net/dev`. On a system without them every list is empty and every
//! number 0.

use std::fs;
use std::path::Path;
use std::time::Instant;

pub use dbperf_results::telemetry::{CpuUsage, DiskIo, MemInfo, NetIo, OsSample};

/// Takes the OS counters at each call and reports the rates since the previous one.
#[derive(Debug)]
pub struct OsSampler {
    prev: Snapshot,
}

impl OsSampler {
    /// Starts sampling: takes the first snapshot.
    pub fn new() -> OsSampler {
        OsSampler { prev: Snapshot::read() }
    }

    /// Rates since the previous call (or since [`OsSampler::new`]), over the elapsed
    /// `CLOCK_MONOTONIC` time.
    pub fn sample(&mut self) -> OsSample {
        let now = Snapshot::read();
        let sample = now.since(&self.prev);
        self.prev = now;
        sample
    }
}

impl Default for OsSampler {
    fn default() -> OsSampler {
        OsSampler::new()
    }
}

/// Raw counters at one instant.
#[derive(Debug)]
struct Snapshot {
    at: Instant,
    stat: ProcStat,
    mem: MemInfo,
    disks: Vec<DiskCounters>,
    net: Vec<NetCounters>,
}

impl Snapshot {
    fn read() -> Snapshot {
        let text = |path: &str| fs::read_to_string(path).unwrap_or_default();
        let at = Instant::now();
        let stat = parse_stat(&text("/proc/stat"));
        let disks = parse_diskstats(&text("/proc/diskstats"));
        let net = parse_net_dev(&text("/proc/net/dev"));
        let mem = parse_meminfo(&text("/proc/meminfo"));
        Snapshot {
            at,
            stat,
            mem,
            disks,
            net,
        }
    }

    fn since(&self, prev: &Snapshot) -> OsSample {
        let secs = self.at.duration_since(prev.at).as_secs_f64();
        let whole = |name: &str| Path::new("/sys/block").join(name).exists();
        OsSample {
            cpus: cpu_usage(&prev.stat.cpus, &self.stat.cpus),
            ctxt_per_s: per_s(self.stat.ctxt.saturating_sub(prev.stat.ctxt), secs),
            procs_running: self.stat.procs_running,
            procs_blocked: self.stat.procs_blocked,
            mem: self.mem,
            disks: disk_io(&prev.disks, &self.disks, secs, &whole),
            net: net_io(&prev.net, &self.net, secs),
        }
    }
}

fn per_s(delta: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        delta as f64 / secs
    } else {
        0.0
    }
}

/// The parts of `/proc/stat` used here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcStat {
    /// `cpu` (named `all`) then `cpuN`.
    pub cpus: Vec<CpuTimes>,
    /// Context switches since boot.
    pub ctxt: u64,
    /// Runnable tasks now.
    pub procs_running: u64,
    /// Tasks blocked on I/O now.
    pub procs_blocked: u64,
}

/// Cumulative time of one CPU line of `/proc/stat`, in clock ticks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuTimes {
    /// `all` or `cpuN`.
    pub cpu: String,
    /// user, nice, system, idle, iowait, irq, softirq, steal (guest time is already in user).
    pub ticks: [u64; 8],
}

/// Parses `/proc/stat`.
pub fn parse_stat(text: &str) -> ProcStat {
    let mut stat = ProcStat::default();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(key) = fields.next() else { continue };
        let mut next_u64 = || fields.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        match key {
            "ctxt" => stat.ctxt = next_u64(),
            "procs_running" => stat.procs_running = next_u64(),
            "procs_blocked" => stat.procs_blocked = next_u64(),
            k if k.starts_with("cpu") => {
                let mut ticks = [0u64; 8];
                for t in &mut ticks {
                    *t = next_u64();
                }
                let cpu = if k == "cpu" { "all".to_string() } else { k.to_string() };
                stat.cpus.push(CpuTimes { cpu, ticks });
            }
            _ => {}
        }
    }
    stat
}

/// Percent of each CPU's time per state between two reads; a CPU missing from either read
/// (hot-unplugged) is left out.
pub fn cpu_usage(prev: &[CpuTimes], now: &[CpuTimes]) -> Vec<CpuUsage> {
    now.iter()
        .filter_map(|n| {
            let p = prev.iter().find(|p| p.cpu == n.cpu)?;
            let d: Vec<u64> = n
                .ticks
                .iter()
                .zip(&p.ticks)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect();
            let total: u64 = d.iter().sum();
            let pct = |i: usize| {
                if total == 0 {
                    0.0
                } else {
                    d[i] as f64 * 100.0 / total as f64
                }
            };
            Some(CpuUsage {
                cpu: n.cpu.clone(),
                user: pct(0),
                nice: pct(1),
                sys: pct(2),
                idle: pct(3),
                iowait: pct(4),
                irq: pct(5),
                softirq: pct(6),
                steal: pct(7),
            })
        })
        .collect()
}

/// Parses `/proc/meminfo` (values in kB) into bytes.
pub fn parse_meminfo(text: &str) -> MemInfo {
    let mut mem = MemInfo::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let kb: u64 = rest.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
        let bytes = kb * 1024;
        match key {
            "MemTotal" => mem.total_bytes = bytes,
            "MemAvailable" => mem.available_bytes = bytes,
            "MemFree" => mem.free_bytes = bytes,
            "Cached" => mem.cached_bytes = bytes,
            "Dirty" => mem.dirty_bytes = bytes,
            _ => {}
        }
    }
    mem
}

/// The cumulative counters of one `/proc/diskstats` line (see the kernel's
/// `Documentation/admin-guide/iostats.rst`): times in ms, sizes in 512-byte sectors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskCounters {
    /// Device name.
    pub name: String,
    /// Reads completed.
    pub rd_ios: u64,
    /// Reads merged.
    pub rd_merges: u64,
    /// Sectors read.
    pub rd_sectors: u64,
    /// Time spent reading, ms.
    pub rd_ticks: u64,
    /// Writes completed.
    pub wr_ios: u64,
    /// Writes merged.
    pub wr_merges: u64,
    /// Sectors written.
    pub wr_sectors: u64,
    /// Time spent writing, ms.
    pub wr_ticks: u64,
    /// Time with I/O in flight, ms.
    pub io_ticks: u64,
    /// Weighted time with I/O in flight (time × requests), ms.
    pub time_in_queue: u64,
}

/// Parses `/proc/diskstats`; lines with fewer than the 14 classic fields are skipped.
pub fn parse_diskstats(text: &str) -> Vec<DiskCounters> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 14 {
                return None;
            }
            let n = |i: usize| f[i].parse::<u64>().unwrap_or(0);
            Some(DiskCounters {
                name: f[2].to_string(),
                rd_ios: n(3),
                rd_merges: n(4),
                rd_sectors: n(5),
                rd_ticks: n(6),
                wr_ios: n(7),
                wr_merges: n(8),
                wr_sectors: n(9),
                wr_ticks: n(10),
                // f[11] is I/Os currently in flight: a gauge, not used.
                io_ticks: n(12),
                time_in_queue: n(13),
            })
        })
        .collect()
}

/// `iostat -x` figures between two reads over `secs` seconds. Devices kept: whole disks
/// (`is_whole_disk`) other than `loop*` and `ram*`; when there is none, every device that
/// did any I/O in the interval.
pub fn disk_io(
    prev: &[DiskCounters],
    now: &[DiskCounters],
    secs: f64,
    is_whole_disk: &dyn Fn(&str) -> bool,
) -> Vec<DiskIo> {
    let pairs: Vec<(&DiskCounters, &DiskCounters)> = now
        .iter()
        .filter_map(|n| prev.iter().find(|p| p.name == n.name).map(|p| (p, n)))
        .collect();
    let disk = |name: &str| is_whole_disk(name) && !name.starts_with("loop") && !name.starts_with("ram");
    let any_disk = pairs.iter().any(|(_, n)| disk(&n.name));
    pairs
        .into_iter()
        .filter(|(p, n)| if any_disk { disk(&n.name) } else { p != n })
        .map(|(p, n)| disk_rates(p, n, secs))
        .collect()
}

fn disk_rates(p: &DiskCounters, n: &DiskCounters, secs: f64) -> DiskIo {
    let d = |f: fn(&DiskCounters) -> u64| f(n).saturating_sub(f(p));
    let await_ms = |ticks: u64, ios: u64| if ios == 0 { 0.0 } else { ticks as f64 / ios as f64 };
    let (rd_ios, wr_ios) = (d(|c| c.rd_ios), d(|c| c.wr_ios));
    let ms = secs * 1000.0;
    DiskIo {
        name: n.name.clone(),
        r_s: per_s(rd_ios, secs),
        w_s: per_s(wr_ios, secs),
        rrqm_s: per_s(d(|c| c.rd_merges), secs),
        wrqm_s: per_s(d(|c| c.wr_merges), secs),
        rkb_s: per_s(d(|c| c.rd_sectors), secs) / 2.0,
        wkb_s: per_s(d(|c| c.wr_sectors), secs) / 2.0,
        r_await_ms: await_ms(d(|c| c.rd_ticks), rd_ios),
        w_await_ms: await_ms(d(|c| c.wr_ticks), wr_ios),
        aqu_sz: if ms > 0.0 {
            d(|c| c.time_in_queue) as f64 / ms
        } else {
            0.0
        },
        util_pct: if ms > 0.0 {
            (d(|c| c.io_ticks) as f64 * 100.0 / ms).min(100.0)
        } else {
            0.0
        },
    }
}

/// Cumulative counters of one `/proc/net/dev` line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetCounters {
    /// Interface name.
    pub iface: String,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Packets received.
    pub rx_packets: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets sent.
    pub tx_packets: u64,
}

/// Parses `/proc/net/dev` (two header lines, then `iface: 8 receive fields 8 transmit fields`).
pub fn parse_net_dev(text: &str) -> Vec<NetCounters> {
    text.lines()
        .filter_map(|line| {
            let (iface, rest) = line.split_once(':')?;
            let f: Vec<u64> = rest.split_whitespace().map(|v| v.parse().unwrap_or(0)).collect();
            if f.len() < 10 {
                return None;
            }
            Some(NetCounters {
                iface: iface.trim().to_string(),
                rx_bytes: f[0],
                rx_packets: f[1],
                tx_bytes: f[8],
                tx_packets: f[9],
            })
        })
        .collect()
}

/// Network rates between two reads over `secs` seconds.
pub fn net_io(prev: &[NetCounters], now: &[NetCounters], secs: f64) -> Vec<NetIo> {
    now.iter()
        .filter_map(|n| {
            let p = prev.iter().find(|p| p.iface == n.iface)?;
            Some(NetIo {
                iface: n.iface.clone(),
                rx_bytes_s: per_s(n.rx_bytes.saturating_sub(p.rx_bytes), secs),
                tx_bytes_s: per_s(n.tx_bytes.saturating_sub(p.tx_bytes), secs),
                rx_packets_s: per_s(n.rx_packets.saturating_sub(p.rx_packets), secs),
                tx_packets_s: per_s(n.tx_packets.saturating_sub(p.tx_packets), secs),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT_1: &str = "cpu  100 0 50 800 50 0 0 0 0 0
cpu0 60 0 30 400 10 0 0 0 0 0
cpu1 40 0 20 400 40 0 0 0 0 0
intr 12345 0 0
ctxt 1000
btime 1700000000
processes 500
procs_running 3
procs_blocked 1
";
    const STAT_2: &str = "cpu  200 10 100 1500 150 10 20 10 0 0
cpu0 110 10 60 700 50 10 20 40 0 0
cpu1 90 0 40 800 70 0 0 0 0 0
intr 22345 0 0
ctxt 3000
procs_running 5
procs_blocked 2
";

    #[test]
    fn cpu_percentages_and_context_switches() {
        let (a, b) = (parse_stat(STAT_1), parse_stat(STAT_2));
        assert_eq!(b.procs_running, 5);
        assert_eq!(b.procs_blocked, 2);
        assert_eq!(b.ctxt - a.ctxt, 2000);
        let u = cpu_usage(&a.cpus, &b.cpus);
        assert_eq!(
            u.iter().map(|c| c.cpu.as_str()).collect::<Vec<_>>(),
            ["all", "cpu0", "cpu1"]
        );
        // all: deltas user 100 nice 10 sys 50 idle 700 iowait 100 irq 10 softirq 20 steal 10 = 1000
        let all = &u[0];
        assert_eq!((all.user, all.nice, all.sys, all.idle), (10.0, 1.0, 5.0, 70.0));
        assert_eq!((all.iowait, all.irq, all.softirq, all.steal), (10.0, 1.0, 2.0, 1.0));
        let cpu1 = &u[2];
        assert_eq!((cpu1.user, cpu1.sys, cpu1.idle, cpu1.iowait), (10.0, 4.0, 80.0, 6.0));
    }

    #[test]
    fn meminfo_in_bytes() {
        let m = parse_meminfo(
            "MemTotal:       16000000 kB\nMemFree:         2000000 kB\nMemAvailable:    9000000 kB\n\
             Buffers:          100 kB\nCached:          5000000 kB\nSwapCached:  0 kB\nDirty:             1234 kB\n",
        );
        assert_eq!(m.total_bytes, 16_000_000 * 1024);
        assert_eq!(m.free_bytes, 2_000_000 * 1024);
        assert_eq!(m.available_bytes, 9_000_000 * 1024);
        assert_eq!(m.cached_bytes, 5_000_000 * 1024);
        assert_eq!(m.dirty_bytes, 1234 * 1024);
    }

    const DISK_1: &str = "   7       0 loop0 10 0 80 5 0 0 0 0 0 4 5 0 0 0 0 0 0
 254       0 vda 1000 10 80000 2000 5000 100 400000 10000 0 3000 12000 0 0 0 0 100 50
 254       1 vda1 900 10 70000 1900 4900 100 390000 9900 0 2900 11800
";
    const DISK_2: &str = "   7       0 loop0 20 0 160 9 0 0 0 0 0 8 9 0 0 0 0 0 0
 254       0 vda 1100 30 88000 2300 5400 180 416384 11200 2 3500 14000 0 0 0 0 110 55
 254       1 vda1 1000 30 78000 2200 5300 180 406384 11100 2 3400 13800
";

    #[test]
    fn diskstats_as_iostat_computes_them() {
        let whole = |n: &str| n == "vda" || n == "loop0";
        let io = disk_io(&parse_diskstats(DISK_1), &parse_diskstats(DISK_2), 2.0, &whole);
        assert_eq!(io.len(), 1, "{io:?}");
        let d = &io[0];
        assert_eq!(d.name, "vda");
        assert_eq!((d.r_s, d.w_s), (50.0, 200.0));
        assert_eq!((d.rrqm_s, d.wrqm_s), (10.0, 40.0));
        assert_eq!(d.rkb_s, 8000.0 / 2.0 / 2.0);
        assert_eq!(d.wkb_s, 16384.0 / 2.0 / 2.0);
        assert_eq!(d.r_await_ms, 300.0 / 100.0);
        assert_eq!(d.w_await_ms, 1200.0 / 400.0);
        assert_eq!(d.util_pct, 500.0 / 2000.0 * 100.0);
        assert_eq!(d.aqu_sz, 2000.0 / 2000.0);
    }

    #[test]
    fn without_a_whole_disk_active_devices_are_kept() {
        let none = |_: &str| false;
        let io = disk_io(&parse_diskstats(DISK_1), &parse_diskstats(DISK_2), 1.0, &none);
        let names: Vec<&str> = io.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["loop0", "vda", "vda1"]);
    }

    #[test]
    fn net_dev_rates_include_loopback() {
        let head = "Inter-|   Receive                                                |  Transmit\n \
                    face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n";
        let a = format!(
            "{head}    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n  eth0: 500 5 0 0 0 0 0 0 700 7 0 0 0 0 0 0\n"
        );
        let b = format!(
            "{head}    lo: 3000 30 0 0 0 0 0 0 3000 30 0 0 0 0 0 0\n  eth0: 600 6 0 0 0 0 0 0 900 9 0 0 0 0 0 0\n"
        );
        let n = net_io(&parse_net_dev(&a), &parse_net_dev(&b), 2.0);
        assert_eq!(n.len(), 2);
        assert_eq!(n[0].iface, "lo");
        assert_eq!((n[0].rx_bytes_s, n[0].tx_packets_s), (1000.0, 10.0));
        assert_eq!(n[1].iface, "eth0");
        assert_eq!(
            (n[1].rx_bytes_s, n[1].tx_bytes_s, n[1].rx_packets_s),
            (50.0, 100.0, 0.5)
        );
    }

    /// (write ios, sectors written) per device, parsed independently of the module's parser.
    fn written_by_device() -> Vec<(String, u64, u64)> {
        fs::read_to_string("/proc/diskstats")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() >= 14).then(|| (f[2].to_string(), f[7].parse().unwrap(), f[9].parse().unwrap()))
            })
            .collect()
    }

    #[test]
    fn disk_figures_agree_with_diskstats_read_independently() {
        use std::io::Write;
        if !Path::new("/proc/diskstats").exists() {
            eprintln!("skipped: no /proc/diskstats");
            return;
        }
        // Next to the sources: a real disk, where /tmp might be tmpfs.
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        // The two reads of each side are back to back, and the window is long (the write plus
        // half a second), so a few microseconds between them do not matter even while other
        // processes (a parallel build) write to the same disk.
        let mut sampler = OsSampler::new();
        let before = written_by_device();
        let t0 = Instant::now();
        let mut file = fs::File::create(dir.path().join("8mib")).unwrap();
        let chunk = vec![0x5au8; 1 << 20];
        for _ in 0..8 {
            file.write_all(&chunk).unwrap();
        }
        file.sync_all().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        let after = written_by_device();
        let secs = t0.elapsed().as_secs_f64();
        let sample = sampler.sample();

        let mut checked = 0;
        for d in &sample.disks {
            let (Some(b), Some(a)) = (
                before.iter().find(|x| x.0 == d.name),
                after.iter().find(|x| x.0 == d.name),
            ) else {
                continue;
            };
            let kb = (a.2 - b.2) as f64 / 2.0;
            if kb < 8192.0 {
                continue; // not the disk the file is on
            }
            let (wkb_s, w_s) = (kb / secs, (a.1 - b.1) as f64 / secs);
            let close = |x: f64, y: f64| (x - y).abs() <= 0.05 * y.max(1.0);
            assert!(
                close(d.wkb_s, wkb_s),
                "{}: wkB/s {} vs independent {}",
                d.name,
                d.wkb_s,
                wkb_s
            );
            assert!(close(d.w_s, w_s), "{}: w/s {} vs independent {}", d.name, d.w_s, w_s);
            checked += 1;
        }
        if checked == 0 {
            eprintln!("skipped: no listed disk saw the 8 MiB written ({:?})", sample.disks);
        }
    }
}
