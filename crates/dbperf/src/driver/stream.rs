//! The socket under dbperf's own protocol sessions (the MySQL [`wire`](super::wire) and the
//! PostgreSQL [`pgwire`](super::pgwire) sessions): TCP with Nagle off, or a Unix socket,
//! whichever the target names; never switched behind the user's back.

use std::io;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

/// A connected TCP or Unix socket.
pub(crate) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    /// Connects to `host:port` with TCP_NODELAY (a request is one write; nothing to batch).
    pub(crate) async fn tcp(host: &str, port: u16) -> io::Result<Stream> {
        let s = TcpStream::connect((host, port)).await?;
        s.set_nodelay(true)?;
        Ok(Stream::Tcp(s))
    }

    /// Connects to the Unix socket at `path`.
    pub(crate) async fn unix(path: &str) -> io::Result<Stream> {
        Ok(Stream::Unix(UnixStream::connect(path).await?))
    }

    pub(crate) async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf).await,
            Stream::Unix(s) => s.read(buf).await,
        }
    }

    pub(crate) async fn read_buf(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read_buf(buf).await,
            Stream::Unix(s) => s.read_buf(buf).await,
        }
    }

    pub(crate) async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
        }
    }

    /// Writes without waiting (for a goodbye from `Drop`); may write nothing.
    pub(crate) fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_write(buf),
            Stream::Unix(s) => s.try_write(buf),
        }
    }

    pub(crate) fn is_unix(&self) -> bool {
        matches!(self, Stream::Unix(_))
    }
}
