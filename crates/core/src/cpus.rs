//! CPU lists as `taskset -c` writes them (`0`, `0-3`, `0,2,4-5`) and restricting a process
//! or thread to one: used to pin sandboxed servers (from their first instruction) and the
//! lab's client runs.

/// A set of CPUs written as `taskset -c` does: `0`, `0-3`, `0,2,4-5`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet {
    pub text: String,
    pub cpus: Vec<usize>,
}

/// The most CPUs a Linux kernel supports (`NR_CPUS` at its largest): the bound of a CPU list
/// for another host, whose own start checks it against what that host has.
pub const MAX_CPUS: usize = 8192;

impl CpuSet {
    /// Parses a CPU list; every CPU must exist on this machine (`available` of them).
    pub fn parse(text: &str, available: usize) -> Result<CpuSet, String> {
        let mut cpus = Vec::new();
        for part in text.split(',').map(str::trim) {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let parse = |s: &str| {
                s.parse::<usize>()
                    .map_err(|_| format!("expected a CPU list like \"0\", \"0-3\" or \"0,2\", got {text:?}"))
            };
            let (lo, hi) = (parse(lo)?, parse(hi)?);
            if lo > hi {
                return Err(format!("CPU range {part:?} runs backwards"));
            }
            for c in lo..=hi {
                if c >= available {
                    return Err(format!(
                        "CPU {c} does not exist: this machine has CPUs 0-{}",
                        available.saturating_sub(1)
                    ));
                }
                if !cpus.contains(&c) {
                    cpus.push(c);
                }
            }
        }
        cpus.sort_unstable();
        Ok(CpuSet {
            text: text.to_owned(),
            cpus,
        })
    }
}

/// Restricts thread or process `tid` (0: the caller) to `cpus`. It allocates nothing, so it
/// may run between `fork` and `exec` (`Command::pre_exec`).
pub fn restrict(tid: i32, cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it; sched_setaffinity reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_sets() {
        assert_eq!(CpuSet::parse("0-2,5", 8).unwrap().cpus, vec![0, 1, 2, 5]);
        assert!(CpuSet::parse("9", 8).unwrap_err().contains("does not exist"));
        assert!(CpuSet::parse("3-1", 8).is_err());
        assert!(CpuSet::parse("x", 8).is_err());
    }
}
