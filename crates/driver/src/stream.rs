//! The socket under dbperf's own protocol sessions (the MySQL [`wire`](super::wire) and the
//! PostgreSQL [`pgwire`](super::pgwire) sessions): TCP with Nagle off, or a Unix socket,
//! whichever the target names; never switched behind the user's back.
//!
//! A socket opened on an engine client thread in blocking-I/O mode
//! ([`dbperf_engine::blocking_io`]) is a [`Blocking`] one: that thread owns one connection and
//! nothing else, so a read sleeps in the kernel until the reply arrives instead of going
//! through the runtime's event loop (one system call and one wake-up per reply, no epoll).
//! It is opened blocking too (no reactor involved), so a session can be opened from code that
//! cannot await, such as a Lua script's plain call on that thread.
//! Reads and writes time out every [`dbperf_engine::BLOCKING_SLICE`]; the future then yields
//! once, so timers, the interval ticker and the bounded shutdown still run while a server
//! hangs, and dropping the future abandons the wait.
//!
//! Opening a socket retries while the server's listen queue is full (`EAGAIN`: a Unix socket
//! whose `back_log` hundreds of connections opened at once have filled), with short, jittered
//! pauses for up to [`BUSY_RETRY_FOR`], so any number of connections that the server accepts
//! can be opened at once. A refused connection is not retried: nothing listens there.

use std::future::Future;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

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

/// How long opening a socket keeps retrying a full listen queue (`EAGAIN`).
pub(crate) const BUSY_RETRY_FOR: Duration = Duration::from_secs(20);

/// Runs `connect` until it does not fail with `EAGAIN` or [`BUSY_RETRY_FOR`] has passed,
/// pausing 1 ms, then twice as long up to 100 ms, each pause jittered so that the many
/// connections that met a full queue together do not all come back together.
async fn retry_busy<T, F: Future<Output = io::Result<T>>>(mut connect: impl FnMut() -> F) -> io::Result<T> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match connect().await {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && started.elapsed() < BUSY_RETRY_FOR => {
                let jitter = dbperf_engine::clock::now_ns() % pause.as_nanos() as u64;
                tokio::time::sleep(pause / 2 + Duration::from_nanos(jitter)).await;
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            r => return r,
        }
    }
}

/// How long a blocking TCP connect waits for the server (the engine's connect timeout, which
/// cannot interrupt a blocking call).
const BLOCKING_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// [`retry_busy`] for a blocking connect: the pauses are slept.
fn retry_busy_blocking<T>(mut connect: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match connect() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && started.elapsed() < BUSY_RETRY_FOR => {
                let jitter = dbperf_engine::clock::now_ns() % pause.as_nanos() as u64;
                std::thread::sleep(pause / 2 + Duration::from_nanos(jitter));
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            r => return r,
        }
    }
}

/// A blocking TCP connect to the first address of `host:port` that answers.
fn tcp_blocking(host: &str, port: u16) -> io::Result<std::net::TcpStream> {
    use std::net::ToSocketAddrs;
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{host}: no address"));
    for addr in (host, port).to_socket_addrs()? {
        match std::net::TcpStream::connect_timeout(&addr, BLOCKING_CONNECT_TIMEOUT) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl Stream {
    /// Connects to `host:port` with TCP_NODELAY (a request is one write; nothing to batch).
    /// (A blocking socket, connected blocking, on a blocking-I/O engine thread.)
    pub(crate) async fn tcp(host: &str, port: u16) -> io::Result<Stream> {
        if dbperf_engine::blocking_io() {
            let s = retry_busy_blocking(|| tcp_blocking(host, port))?;
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(dbperf_engine::BLOCKING_SLICE))?;
            s.set_write_timeout(Some(dbperf_engine::BLOCKING_SLICE))?;
            return Ok(Stream::Blocking(Blocking::Tcp(s)));
        }
        let s = retry_busy(|| TcpStream::connect((host, port))).await?;
        s.set_nodelay(true)?;
        Ok(Stream::Tcp(s))
    }

    /// Connects to the Unix socket at `path` (blocking on a blocking-I/O engine thread).
    pub(crate) async fn unix(path: &str) -> io::Result<Stream> {
        if dbperf_engine::blocking_io() {
            let s = retry_busy_blocking(|| std::os::unix::net::UnixStream::connect(path))?;
            s.set_read_timeout(Some(dbperf_engine::BLOCKING_SLICE))?;
            s.set_write_timeout(Some(dbperf_engine::BLOCKING_SLICE))?;
            return Ok(Stream::Blocking(Blocking::Unix(s)));
        }
        let s = retry_busy(|| UnixStream::connect(path)).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_listen_queue_is_retried_until_it_drains() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        // A backlog of 1 that nobody accepts from fills after a connection or two.
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        // SAFETY: listening again on a socket this test owns only shortens its queue.
        assert_eq!(unsafe { libc::listen(listener.as_raw_fd(), 1) }, 0);
        let path = path.to_str().unwrap().to_string();
        let mut held = Vec::new();
        let full = loop {
            match UnixStream::connect(&path).await {
                Ok(s) => held.push(s),
                Err(e) => break e,
            }
            assert!(held.len() < 100, "the backlog never filled");
        };
        assert_eq!(full.kind(), io::ErrorKind::WouldBlock, "{full}");
        // Accepting later drains the queue: the connect waits for it instead of failing.
        let acceptor = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            let mut accepted = Vec::new();
            for _ in 0..held.len() + 1 {
                accepted.push(listener.accept().unwrap());
            }
            accepted.len()
        });
        let started = Instant::now();
        let s = Stream::unix(&path).await.unwrap();
        assert!(s.is_unix());
        assert!(started.elapsed() >= Duration::from_millis(250));
        assert!(acceptor.join().unwrap() >= 1);
    }

    #[tokio::test]
    async fn a_refused_connection_is_not_retried() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("none");
        let started = Instant::now();
        let e = Stream::unix(path.to_str().unwrap()).await.err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert!(started.elapsed() < Duration::from_millis(100));
    }
}
