//! A second host for tests: a network namespace with its own address, running Debian's
//! `sshd` on a free port with a host key and a client key generated for the test. Everything
//! it made (the namespace, its veth pair, the sshd) goes when it is dropped.

// Each test binary uses its own subset.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const SSHD: &str = "/usr/sbin/sshd";

/// Whether this machine can make one: root (namespaces), `ip`, `sshd` and `ssh-keygen`.
pub fn possible() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("a network namespace needs root".into());
    }
    for (program, package) in [
        ("ip", "iproute2"),
        (SSHD, "openssh-server"),
        ("ssh-keygen", "openssh-client"),
    ] {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {program}"))
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Err(format!("{program} is not installed (apt-get install -y {package})"));
        }
    }
    Ok(())
}

pub struct SshHost {
    pub ns: String,
    pub veth: String,
    /// The namespace's address (the "database host").
    pub addr: Ipv4Addr,
    /// This side's address on the link (the "client host", as the database host sees it).
    pub here: Ipv4Addr,
    pub port: u16,
    pub dir: PathBuf,
    sshd: Option<Child>,
}

fn run(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl SshHost {
    /// Makes the namespace and starts sshd in it; `dir` holds the keys and its config.
    pub fn start(dir: &Path) -> SshHost {
        // One base per process (its id and start), then one step per host: two tests of one
        // binary run at once, and hosts drawn from nearby moments got the same /30 (both veths
        // then route it, and one sshd is never reached).
        static BASE: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let base = *BASE.get_or_init(|| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            // splitmix-style mixing, so every bit of pid and time moves every bit of the base.
            let mut z = (u64::from(std::process::id()) << 32 | u64::from(nanos)).wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u32
        });
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = base.wrapping_add(n.wrapping_mul(0x0001_0407));
        let tag = format!("{:05}", seed % 100_000);
        let (ns, veth, peer) = (format!("dbperf-ssh-{tag}"), format!("dbs{tag}h"), format!("dbs{tag}c"));
        // The /30: 10.a.b.0, b stepping by 4 per host of this process.
        let (a, b) = (
            (base >> 8) as u8 % 50 + 200,
            ((base >> 16) as u8 & 0xfc).wrapping_add((n as u8) << 2),
        );
        let here = Ipv4Addr::new(10, a, b, 1);
        let addr = Ipv4Addr::new(10, a, b, 2);
        for key in ["host_key", "client_key"] {
            run(&[
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-f",
                dir.join(key).to_str().unwrap(),
            ]);
        }
        std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).unwrap();
        run(&["ip", "netns", "add", &ns]);
        let mut host = SshHost {
            ns: ns.clone(),
            veth: veth.clone(),
            addr,
            here,
            port: 20_000 + (seed >> 3) as u16 % 20_000,
            dir: dir.to_owned(),
            sshd: None,
        };
        run(&[
            "ip", "link", "add", &veth, "type", "veth", "peer", "name", &peer, "netns", &ns,
        ]);
        run(&["ip", "addr", "add", &format!("{here}/30"), "dev", &veth]);
        run(&["ip", "link", "set", &veth, "up"]);
        run(&["ip", "-n", &ns, "addr", "add", &format!("{addr}/30"), "dev", &peer]);
        run(&["ip", "-n", &ns, "link", "set", &peer, "up"]);
        run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        // sshd's privilege separation directory.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {}\nListenAddress {addr}\nHostKey {}\nPidFile {}\nAuthorizedKeysFile {}\n\
                 StrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitRootLogin prohibit-password\nUsePAM no\nClientAliveInterval 2\n",
                host.port,
                dir.join("host_key").display(),
                dir.join("sshd.pid").display(),
                dir.join("authorized_keys").display()
            ),
        )
        .unwrap();
        host.spawn_sshd();
        host
    }

    /// Starts sshd (again) in the namespace and waits until it answers.
    fn spawn_sshd(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("sshd.log"))
            .unwrap();
        self.sshd = Some(
            Command::new("ip")
                .args(["netns", "exec", &self.ns, SSHD, "-D", "-e", "-f"])
                .arg(self.dir.join("sshd_config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
        let deadline = Instant::now() + Duration::from_secs(45);
        loop {
            let mut probe = Command::new("sh");
            probe
                .arg("-c")
                .arg(format!("{} -p {} {} true", self.ssh(), self.port, self.destination()));
            let out = probe.output().unwrap();
            if out.status.success() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "sshd in {} did not answer: {}; the last ssh said: {}",
                self.ns,
                std::fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Cuts every ssh connection and stops answering new ones (sshd and each connection's
    /// sshd killed), leaving what else runs on the host (its database server) running: the
    /// network path to ssh lost, the host itself fine.
    pub fn cut_ssh(&mut self) {
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &self.ns]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
                if comm.trim() == "sshd" {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
        }
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// sshd back after [`SshHost::cut_ssh`].
    pub fn restore_ssh(&mut self) {
        assert!(self.sshd.is_none(), "sshd runs already");
        self.spawn_sshd();
    }

    /// The ssh command line for a lab's `ssh` key or `--ssh`.
    pub fn ssh(&self) -> String {
        format!(
            "ssh -i {} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
            self.dir.join("client_key").display()
        )
    }

    /// Runs `words` on the host through ssh (a shell command line there); returns stdout.
    pub fn run(&self, words: &str) -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "{} -p {} {} {}",
                self.ssh(),
                self.port,
                self.destination(),
                words
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "on the host: {words}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn destination(&self) -> String {
        format!("root@{}", self.addr)
    }

    /// `ssh://root@ADDR:PORT`.
    pub fn url(&self) -> String {
        format!("ssh://root@{}:{}", self.addr, self.port)
    }

    /// Kills sshd and every process of the namespace (each connection's sshd, what runs there):
    /// the host goes away as a crashed or unplugged one does.
    pub fn kill_sshd(&mut self) {
        if let Ok(out) = Command::new("ip").args(["netns", "pids", &self.ns]).output() {
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", pid]).status();
            }
        }
        if let Some(mut c) = self.sshd.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        self.kill_sshd();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
        // Gone with the namespace as a rule; deleted here if it outlived it.
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .stderr(Stdio::null())
            .status();
    }
}
