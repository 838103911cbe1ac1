//! The socket under dbperf's own protocol sessions (the MySQL [`wire`](super::wire) and the
//! PostgreSQL [`pgwire`](super::pgwire) sessions): TCP with Nagle off, or a Unix socket,
//! whichever the target names; never switched behind the user's back.
//!
//! A socket opened on an engine client thread in blocking-I/O mode
//! ([`dbperf_engine::blocking_io`]) is a [`Blocking`] one: that thread owns one connection and
//! nothing else, so a read sleeps in the kernel until the reply arrives instead of going
//! through the runtime's event loop (one system call and one wake-up per reply, no epoll).
//! Reads and writes time out every [`dbperf_engine::BLOCKING_SLICE`]; the future then yields
//! once, so timers, the interval ticker and the bounded shutdown still run while a server
//! hangs, and dropping the future abandons the wait.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

/// A connected TCP or Unix socket.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Blocking(Blocking),
}

/// A socket in blocking mode with read and write timeouts of one slice.
pub(crate) enum Blocking {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Blocking {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Blocking::Tcp(s) => s.read(buf),
            Blocking::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Blocking::Tcp(s) => s.write(buf),
            Blocking::Unix(s) => s.write(buf),
        }
    }

    fn fd(&self) -> i32 {
        match self {
            Blocking::Tcp(s) => s.as_raw_fd(),
            Blocking::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// Runs `op` until it succeeds or fails for real. A timed-out or interrupted call yields to
/// the runtime first: `yield_now` lets the runtime poll its timers and other tasks before
/// this one runs again (a plain self-wake would not: the scheduler looks at its timers only
/// every few dozen polls, seconds apart at one slice per poll).
async fn blocking<T>(mut op: impl FnMut() -> io::Result<Option<T>>) -> io::Result<T> {
    loop {
        match op() {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                ) =>
            {
                tokio::task::yield_now().await
            }
            Err(e) => return Err(e),
        }
    }
}

impl Stream {
    /// Connects to `host:port` with TCP_NODELAY (a request is one write; nothing to batch).
    /// (A blocking socket on a blocking-I/O engine thread; the connect itself is async, so
    /// the connect timeout applies as always.)
    pub(crate) async fn tcp(host: &str, port: u16) -> io::Result<Stream> {
        let s = TcpStream::connect((host, port)).await?;
        s.set_nodelay(true)?;
        if dbperf_engine::blocking_io() {
            let s = s.into_std()?;
            s.set_nonblocking(false)?;
            s.set_read_timeout(Some(dbperf_engine::BLOCKING_SLICE))?;
            s.set_write_timeout(Some(dbperf_engine::BLOCKING_SLICE))?;
            return Ok(Stream::Blocking(Blocking::Tcp(s)));
        }
        Ok(Stream::Tcp(s))
    }

    /// Connects to the Unix socket at `path` (blocking on a blocking-I/O engine thread).
    pub(crate) async fn unix(path: &str) -> io::Result<Stream> {
        let s = UnixStream::connect(path).await?;
        if dbperf_engine::blocking_io() {
            let s = s.into_std()?;
            s.set_nonblocking(false)?;
            s.set_read_timeout(Some(dbperf_engine::BLOCKING_SLICE))?;
            s.set_write_timeout(Some(dbperf_engine::BLOCKING_SLICE))?;
            return Ok(Stream::Blocking(Blocking::Unix(s)));
        }
        Ok(Stream::Unix(s))
    }

    pub(crate) async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf).await,
            Stream::Unix(s) => s.read(buf).await,
            Stream::Blocking(s) => blocking(|| s.read(buf).map(Some)).await,
        }
    }

    pub(crate) async fn read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read_buf(buf).await,
            Stream::Unix(s) => s.read_buf(buf).await,
            Stream::Blocking(s) => {
                if buf.capacity() - buf.len() < 4096 {
                    buf.reserve(16 * 1024);
                }
                let fd = s.fd();
                blocking(|| {
                    let spare = buf.spare_capacity_mut();
                    // SAFETY: `recv` writes at most `spare.len()` bytes into the spare
                    // capacity, and `set_len` then covers exactly the bytes it wrote.
                    let n = unsafe { libc::recv(fd, spare.as_mut_ptr().cast(), spare.len(), 0) };
                    if n < 0 {
                        return Err(io::Error::last_os_error());
                    }
                    unsafe { buf.set_len(buf.len() + n as usize) };
                    Ok(Some(n as usize))
                })
                .await
            }
        }
    }

    pub(crate) async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
            Stream::Blocking(s) => {
                let mut off = 0;
                blocking(|| {
                    if off == buf.len() {
                        return Ok(Some(()));
                    }
                    match s.write(&buf[off..])? {
                        0 => Err(io::ErrorKind::WriteZero.into()),
                        n => {
                            off += n;
                            Ok(None)
                        }
                    }
                })
                .await
            }
        }
    }

    /// Writes without waiting (for a goodbye from `Drop`); may write nothing.
    pub(crate) fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_write(buf),
            Stream::Unix(s) => s.try_write(buf),
            Stream::Blocking(s) => {
                let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
                // SAFETY: `buf` is valid for `buf.len()` bytes and the descriptor is open.
                let n = unsafe { libc::send(s.fd(), buf.as_ptr().cast(), buf.len(), flags) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            }
        }
    }

    pub(crate) fn is_unix(&self) -> bool {
        matches!(self, Stream::Unix(_) | Stream::Blocking(Blocking::Unix(_)))
    }
}
