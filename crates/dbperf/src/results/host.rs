//! Facts about the machine that ran the client, for the manifest: CPU model and count, memory,
//! kernel, hostname, OS release and CPU frequency governor. Collecting never fails; a fact that
//! cannot be read is `None`.

use std::ffi::CStr;
use std::fs;

use serde::{Deserialize, Serialize};

/// The client host, as recorded in `manifest.json` under `host`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// `model name` from `/proc/cpuinfo` (first CPU).
    pub cpu_model: Option<String>,
    /// Logical CPUs listed in `/proc/cpuinfo` (not limited by affinity or cgroups).
    pub logical_cpus: Option<u32>,
    /// `MemTotal` from `/proc/meminfo`, in bytes.
    pub mem_total_bytes: Option<u64>,
    /// Kernel release (`uname -r`).
    pub kernel_release: Option<String>,
    /// Machine architecture (`uname -m`).
    pub arch: Option<String>,
    /// Host name (`uname -n`).
    pub hostname: Option<String>,
    /// `PRETTY_NAME` from `/etc/os-release`.
    pub os: Option<String>,
    /// `scaling_governor` of cpu0, when cpufreq is exposed.
    pub cpu_governor: Option<String>,
}

impl HostInfo {
    /// Reads the facts of the current host.
    pub fn collect() -> HostInfo {
        let read = |path: &str| fs::read_to_string(path).ok();
        let cpuinfo = read("/proc/cpuinfo").map(|t| parse_cpuinfo(&t));
        let uname = Uname::read();
        HostInfo {
            cpu_model: cpuinfo.as_ref().and_then(|c| c.model.clone()),
            logical_cpus: cpuinfo.and_then(|c| c.logical_cpus),
            mem_total_bytes: read("/proc/meminfo").and_then(|t| parse_mem_total(&t)),
            kernel_release: uname.as_ref().and_then(|u| u.release.clone()),
            arch: uname.as_ref().and_then(|u| u.machine.clone()),
            hostname: uname.and_then(|u| u.nodename),
            os: read("/etc/os-release")
                .or_else(|| read("/usr/lib/os-release"))
                .and_then(|t| parse_os_release_pretty_name(&t)),
            cpu_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .and_then(|t| non_empty(t.trim())),
        }
    }
}

struct CpuInfo {
    model: Option<String>,
    logical_cpus: Option<u32>,
}

fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut model = None;
    let mut processors = 0u32;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => processors += 1,
            "model name" if model.is_none() => model = non_empty(value.trim()),
            _ => {}
        }
    }
    CpuInfo {
        model,
        logical_cpus: (processors > 0).then_some(processors),
    }
}

fn parse_mem_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut fields = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") | Some("KB") | Some("kb") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

fn parse_os_release_pretty_name(text: &str) -> Option<String> {
    let line = text.lines().find_map(|l| l.trim().strip_prefix("PRETTY_NAME="))?;
    non_empty(&unquote_shell(line.trim()))
}

/// Undoes the shell-style quoting that os-release(5) allows: `"..."` with backslash escapes,
/// `'...'` taken literally, or a bare word.
fn unquote_shell(value: &str) -> String {
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return inner.to_string();
    }
    let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) else {
        return value.to_string();
    };
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

struct Uname {
    release: Option<String>,
    machine: Option<String>,
    nodename: Option<String>,
}

impl Uname {
    fn read() -> Option<Uname> {
        // SAFETY: `utsname` is plain old data; zeroed is a valid value, and `uname` only writes
        // NUL-terminated strings into its fixed-size fields.
        let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
        if unsafe { libc::uname(&mut uts) } != 0 {
            return None;
        }
        let field = |chars: &[libc::c_char]| {
            // SAFETY: the field is NUL-terminated (zeroed above, and filled by uname); the
            // slice outlives the borrow.
            let s = unsafe { CStr::from_ptr(chars.as_ptr()) };
            non_empty(&s.to_string_lossy())
        };
        Some(Uname {
            release: field(&uts.release),
            machine: field(&uts.machine),
            nodename: field(&uts.nodename),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUINFO: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\n\
        model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz\nflags\t\t: fpu vme\n\n\
        processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz\n";

    #[test]
    fn cpuinfo_gives_model_and_count() {
        let info = parse_cpuinfo(CPUINFO);
        assert_eq!(info.model.as_deref(), Some("Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz"));
        assert_eq!(info.logical_cpus, Some(2));
    }

    #[test]
    fn cpuinfo_without_model_name_still_counts() {
        let info = parse_cpuinfo("processor : 0\nBogoMIPS : 50.00\nprocessor : 1\n");
        assert_eq!(info.model, None);
        assert_eq!(info.logical_cpus, Some(2));
        assert_eq!(parse_cpuinfo("").logical_cpus, None);
    }

    #[test]
    fn meminfo_total_is_in_bytes() {
        let text = "MemTotal:       16314468 kB\nMemFree:         1000000 kB\n";
        assert_eq!(parse_mem_total(text), Some(16_314_468 * 1024));
        assert_eq!(parse_mem_total("MemFree: 1 kB\n"), None);
        assert_eq!(parse_mem_total("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn os_release_pretty_name_is_unquoted() {
        let text = "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\n";
        assert_eq!(
            parse_os_release_pretty_name(text).as_deref(),
            Some("Ubuntu 24.04.1 LTS")
        );
        assert_eq!(
            parse_os_release_pretty_name("PRETTY_NAME='Arch Linux'\n").as_deref(),
            Some("Arch Linux")
        );
        assert_eq!(
            parse_os_release_pretty_name("PRETTY_NAME=\"Say \\\"hi\\\"\"\n").as_deref(),
            Some("Say \"hi\"")
        );
        assert_eq!(
            parse_os_release_pretty_name("PRETTY_NAME=Gentoo\n").as_deref(),
            Some("Gentoo")
        );
        assert_eq!(parse_os_release_pretty_name("NAME=x\n"), None);
        assert_eq!(parse_os_release_pretty_name("PRETTY_NAME=\"\"\n"), None);
    }

    #[test]
    fn collect_on_this_host_finds_the_kernel() {
        let host = HostInfo::collect();
        // uname always works on Linux; the rest depends on the machine.
        assert!(host.kernel_release.is_some());
        assert!(host.hostname.is_some());
        if let Some(n) = host.logical_cpus {
            assert!(n > 0);
        }
    }
}
