//! A precise async sleep for open-loop arrivals, built on `timerfd`.
//!
//! tokio's timer wheel has a 1 ms tick, which would add up to a millisecond of
//! artificial delay to every scheduled start. A per-worker timerfd armed with an
//! absolute CLOCK_MONOTONIC deadline wakes the task within the kernel's timer slack
//! (set to 1 µs for client threads in [`set_thread_timer_slack`]).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use tokio::io::unix::AsyncFd;

pub(crate) struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    pub(crate) fn new() -> io::Result<PreciseTimer> {
        // SAFETY: plain syscall; the returned fd is owned below.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a fresh fd that nothing else owns.
        let owned = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the OwnedFd moves into the AsyncFd, which deregisters it before the
        // fd is closed; nothing else holds the descriptor.
        let fd = unsafe { AsyncFd::register(owned) }.map_err(|e| e.into_parts().1)?;
        Ok(PreciseTimer { fd })
    }

    /// Sleeps until `deadline_ns` on the engine clock; returns at once if it has passed.
    pub(crate) async fn sleep_until(&self, deadline_ns: u64) -> io::Result<()> {
        if deadline_ns <= crate::clock::now_ns() {
            return Ok(());
        }
        arm(self.fd.as_raw_fd(), deadline_ns)?;
        loop {
            let mut guard = self.fd.readable().await?;
            let mut buf = [0u8; 8];
            // SAFETY: reading 8 bytes into a local buffer from our own fd.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
            if n == 8 {
                return Ok(());
            }
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::WouldBlock {
                guard.clear_ready();
                continue;
            }
            return Err(err);
        }
    }
}

fn arm(fd: RawFd, deadline_ns: u64) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec {
            tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
        },
    };
    // SAFETY: fd is a timerfd we own; spec lives across the call.
    let rc = unsafe { libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Lowers the calling thread's timer slack from the default 50 µs to 1 µs.
pub(crate) fn set_thread_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK only affects the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}
