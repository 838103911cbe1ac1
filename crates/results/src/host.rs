//! Facts about the machine that ran the client, for the manifest: CPU model and count, memory,
//! kernel, hostname, OS release, CPU frequency governor, and whether it is a virtual machine or
//! a container (asked once per boot: see `VirtCache`). Collecting never fails; a fact that
//! cannot be read is `None`.

use std::ffi::CStr;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
    /// The hypervisor the host runs under: `none` on bare metal, else its kind as
    /// `systemd-detect-virt --vm` names it (`kvm`, `vmware`, `microsoft`, `xen`, `amazon`, ...),
    /// or from the DMI vendor and product, or `unknown` when only the CPU's `hypervisor` flag
    /// tells. `None`: not found out, or a manifest written before it was recorded.
    #[serde(default)]
    pub virtualization: Option<String>,
    /// The container the client ran in (`docker`, `podman`, `lxc`, ...), `none` when it ran in
    /// none; `None` when not found out (or an older manifest).
    #[serde(default)]
    pub container: Option<String>,
    /// The CPUs dbperf itself may run on (`Cpus_allowed_list` of `/proc/self/status`): narrower
    /// than all CPUs when the client was pinned (`taskset`, a cgroup's cpuset). `None` when not
    /// read (an older manifest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpus: Option<String>,
}

impl HostInfo {
    /// Reads the facts of the current host.
    pub fn collect() -> HostInfo {
        let read = |path: &str| fs::read_to_string(path).ok();
        let cpuinfo = read("/proc/cpuinfo").map(|t| parse_cpuinfo(&t));
        let uname = Uname::read();
        let virt = Virtualization::detect_cached(cpuinfo.as_ref().is_some_and(|c| c.hypervisor_flag));
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
            virtualization: virt.vm,
            container: virt.container,
            client_cpus: read("/proc/self/status").and_then(|t| parse_cpus_allowed(&t)),
        }
    }
}

/// `Cpus_allowed_list` of a `/proc/PID/status` text.
fn parse_cpus_allowed(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|v| non_empty(v.trim()))
}

/// What the host runs under, found by `systemd-detect-virt` when it is installed, else by DMI
/// and `/proc/cpuinfo` (VM) and the marker files container engines leave (container).
struct Virtualization {
    vm: Option<String>,
    container: Option<String>,
}

impl Virtualization {
    /// [`Virtualization::detect`]'s answer, from this boot's cache when it has one: asking
    /// `systemd-detect-virt` starts two processes (about 12 ms of CPU, in every run's client
    /// CPU), and the answer cannot change before the next boot.
    fn detect_cached(hypervisor_flag: bool) -> Virtualization {
        let cache = VirtCache::locate();
        if let Some(v) = cache.as_ref().and_then(VirtCache::load) {
            return v;
        }
        let v = Virtualization::detect(hypervisor_flag);
        if let Some(c) = &cache {
            c.store(&v);
        }
        v
    }

    fn detect(hypervisor_flag: bool) -> Virtualization {
        let read = |path: &str| fs::read_to_string(path).ok().and_then(|t| non_empty(t.trim()));
        let vm = detect_virt("--vm").or_else(|| {
            vm_from_dmi(
                read("/sys/class/dmi/id/sys_vendor").as_deref(),
                read("/sys/class/dmi/id/product_name").as_deref(),
                hypervisor_flag,
            )
        });
        let container = detect_virt("--container").or_else(|| {
            if std::path::Path::new("/.dockerenv").exists() {
                Some("docker".into())
            } else if std::path::Path::new("/run/.containerenv").exists() {
                Some("podman".into())
            } else {
                None
            }
        });
        Virtualization { vm, container }
    }
}

/// Where this boot's [`Virtualization`] is kept: a file in the owner-only, per-boot runtime
/// directory (`$XDG_RUNTIME_DIR`, or `/run/dbperf` for root; nothing is cached otherwise), its
/// first line naming the boot (the kernel's boot id) and the root directory (device and inode:
/// a container has its own), so an answer is never taken for another boot or container.
struct VirtCache {
    path: PathBuf,
    key: String,
}

impl VirtCache {
    const FILE: &'static str = "dbperf-host-virtualization";

    fn locate() -> Option<VirtCache> {
        let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d),
            // SAFETY: geteuid has no preconditions and cannot fail.
            None if unsafe { libc::geteuid() } == 0 => {
                let d = PathBuf::from("/run/dbperf");
                match fs::DirBuilder::new().mode(0o700).create(&d) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(_) => return None,
                }
                d
            }
            None => return None,
        };
        VirtCache::at(&dir)
    }

    fn at(dir: &Path) -> Option<VirtCache> {
        let boot = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let root = fs::metadata("/").ok()?;
        Some(VirtCache {
            path: dir.join(Self::FILE),
            key: format!("{} {}:{}", boot.trim(), root.dev(), root.ino()),
        })
    }

    /// The cached answer, if the file is this user's own, writable by nobody else, and names
    /// this boot and root.
    fn load(&self) -> Option<Virtualization> {
        let meta = fs::symlink_metadata(&self.path).ok()?;
        // SAFETY: as above.
        let mine = meta.uid() == unsafe { libc::geteuid() };
        if !meta.is_file() || !mine || meta.mode() & 0o022 != 0 {
            return None;
        }
        let text = fs::read_to_string(&self.path).ok()?;
        let mut lines = text.lines();
        if lines.next()? != self.key {
            return None;
        }
        let field = |l: Option<&str>| l.map(|v| (v != "-").then(|| v.to_string()));
        Some(Virtualization {
            vm: field(lines.next())?,
            container: field(lines.next())?,
        })
    }

    /// Writes the answer (a temporary file renamed into place, owner-only); a failure only
    /// means the next run asks again.
    fn store(&self, v: &Virtualization) {
        let text = format!(
            "{}\n{}\n{}\n",
            self.key,
            v.vm.as_deref().unwrap_or("-"),
            v.container.as_deref().unwrap_or("-")
        );
        let _ = dbperf_core::nofollow::write_private(&self.path, text.as_bytes());
    }
}

/// `systemd-detect-virt FLAG`'s answer (`none` included); `None` when it is not installed or
/// says nothing.
fn detect_virt(flag: &str) -> Option<String> {
    let out = Command::new("systemd-detect-virt")
        .arg(flag)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    // It exits non-zero when it prints `none`.
    non_empty(String::from_utf8_lossy(&out.stdout).trim())
}

/// The hypervisor told by the DMI vendor and product name, or by the CPU's `hypervisor` flag
/// alone (`unknown`); `none` when DMI names real hardware and the flag is absent; `None` when
/// nothing can be read.
fn vm_from_dmi(vendor: Option<&str>, product: Option<&str>, hypervisor_flag: bool) -> Option<String> {
    let text = format!("{} {}", vendor.unwrap_or(""), product.unwrap_or("")).to_ascii_lowercase();
    let known = [
        ("qemu", "qemu"),
        ("kvm", "kvm"),
        ("vmware", "vmware"),
        ("virtualbox", "oracle"),
        ("innotek", "oracle"),
        ("xen", "xen"),
        ("amazon ec2", "amazon"),
        ("google compute engine", "google"),
        ("bochs", "bochs"),
        ("parallels", "parallels"),
        ("cloud hypervisor", "cloud-hypervisor"),
        ("firecracker", "firecracker"),
    ];
    if let Some((_, kind)) = known.iter().find(|(needle, _)| text.contains(needle)) {
        return Some(kind.to_string());
    }
    if text.contains("microsoft") && text.contains("virtual") {
        return Some("microsoft".into());
    }
    if hypervisor_flag {
        return Some("unknown".into());
    }
    (vendor.is_some() || product.is_some()).then(|| "none".to_string())
}

struct CpuInfo {
    model: Option<String>,
    logical_cpus: Option<u32>,
    /// The first CPU's flags include `hypervisor`: the kernel runs under one.
    hypervisor_flag: bool,
}

fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut model = None;
    let mut processors = 0u32;
    let mut hypervisor_flag = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => processors += 1,
            "model name" if model.is_none() => model = non_empty(value.trim()),
            "flags" if processors <= 1 => {
                hypervisor_flag |= value.split_whitespace().any(|f| f == "hypervisor");
            }
            _ => {}
        }
    }
    CpuInfo {
        model,
        logical_cpus: (processors > 0).then_some(processors),
        hypervisor_flag,
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

    #[test]
    fn the_clients_allowed_cpus_come_from_its_status() {
        let status = "Name:\tdbperf\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed:\t1\n";
        assert_eq!(parse_cpus_allowed(status).as_deref(), Some("0-1"));
        assert_eq!(parse_cpus_allowed("Name:\tx\n"), None);
    }

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
    fn the_hypervisor_flag_and_dmi_tell_a_virtual_machine() {
        assert!(!parse_cpuinfo(CPUINFO).hypervisor_flag);
        let vm = parse_cpuinfo("processor : 0\nflags : fpu vme hypervisor lahf_lm\n");
        assert!(vm.hypervisor_flag);
        assert_eq!(
            vm_from_dmi(Some("QEMU"), Some("Standard PC (Q35 + ICH9, 2009)"), true).as_deref(),
            Some("qemu")
        );
        assert_eq!(
            vm_from_dmi(Some("Microsoft Corporation"), Some("Virtual Machine"), true).as_deref(),
            Some("microsoft")
        );
        assert_eq!(vm_from_dmi(None, None, true).as_deref(), Some("unknown"));
        assert_eq!(
            vm_from_dmi(Some("Dell Inc."), Some("PowerEdge R740"), false).as_deref(),
            Some("none")
        );
        assert_eq!(vm_from_dmi(None, None, false), None);
    }

    #[test]
    fn the_virtualization_cache_answers_only_for_its_own_boot_and_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let cache = VirtCache::at(dir.path()).unwrap();
        assert!(cache.load().is_none(), "nothing cached yet");
        let v = Virtualization {
            vm: Some("kvm".into()),
            container: None,
        };
        cache.store(&v);
        let got = cache.load().unwrap();
        assert_eq!((got.vm.as_deref(), got.container), (Some("kvm"), None));
        // Another boot (or another container's root) has another key.
        let other = VirtCache {
            path: cache.path.clone(),
            key: "another-boot 1:2".into(),
        };
        assert!(other.load().is_none());
        // A file others may write is not believed.
        fs::set_permissions(&cache.path, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(cache.load().is_none());
        // A truncated file neither.
        fs::write(&cache.path, format!("{}\nkvm\n", cache.key)).unwrap();
        fs::set_permissions(&cache.path, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(cache.load().is_none());
    }

    #[test]
    fn a_manifest_host_without_virtualization_still_reads() {
        let old = r#"{"cpu_model":"x","logical_cpus":4,"mem_total_bytes":1,"kernel_release":"6.1",
            "arch":"x86_64","hostname":"h","os":"Debian","cpu_governor":null}"#;
        let host: HostInfo = serde_json::from_str(old).unwrap();
        assert_eq!(
            (host.logical_cpus, host.virtualization, host.container),
            (Some(4), None, None)
        );
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
