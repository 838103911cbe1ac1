//! The transport and the startup exchange: [`Conn`] is the socket with its reused read
//! and write buffers; [`connect`] opens one and logs in (cleartext, md5 or SCRAM-SHA-256
//! as the server asks); [`CancelToken`] cancels a running statement from elsewhere.
//! The hot path reads messages in place ([`Conn::recv_frame`]): a header, a body borrowed
//! from the read buffer, then [`Conn::consume`], with no per-message allocation or
//! reference counting.

use std::io;

use bytes::{Buf, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use super::{lost, misuse, protocol, server_error};
use crate::mysql::IgnoreErrors;
use crate::stream::Stream;
use crate::{DbError, Target};

/// Read buffer size: one `read` usually takes a whole response.
const READ_BUFFER: usize = 64 * 1024;
/// Buffers grown beyond this (a huge row, a COPY batch) are given back after the request.
const KEEP_AT_MOST: usize = 1024 * 1024;

/// Opens the socket `target` names: PostgreSQL's `.s.PGSQL.<port>` in its socket directory,
/// or TCP.
async fn open(target: &Target) -> Result<Stream, DbError> {
    match &target.socket {
        Some(dir) => {
            let path = format!("{}/.s.PGSQL.{}", dir.trim_end_matches('/'), target.port);
            Stream::unix(&path).await
        }
        None => Stream::tcp(&target.host, target.port).await,
    }
    .map_err(|e| crate::cannot_connect(target, &e))
}

/// A connection: the stream and its buffers. Requests are appended to [`Conn::out`] and
/// sent with [`Conn::send`]; responses come one message at a time from [`Conn::recv`].
pub(crate) struct Conn {
    stream: Stream,
    rbuf: BytesMut,
    wbuf: BytesMut,
    /// The last ReadyForQuery said a transaction block is open (status `T` or `E`).
    pub(crate) in_transaction: bool,
}

impl Conn {
    /// The request being built.
    pub(crate) fn out(&mut self) -> &mut BytesMut {
        &mut self.wbuf
    }

    /// Bytes of the request built so far.
    pub(crate) fn pending(&self) -> usize {
        self.wbuf.len()
    }

    /// Sends what was built, in one write: tried at once (a socket is nearly always
    /// writable), waiting for the socket only for what that left.
    pub(crate) async fn send(&mut self) -> Result<(), DbError> {
        let sent = match self.stream.try_write(&self.wbuf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => 0,
            Err(e) => {
                self.wbuf.clear();
                return Err(lost(e));
            }
        };
        let r = match sent < self.wbuf.len() {
            true => self.stream.write_all(&self.wbuf[sent..]).await.map_err(lost),
            false => Ok(()),
        };
        self.wbuf.clear();
        r
    }

    /// Discards a request half built (a parameter that would not encode).
    pub(crate) fn discard(&mut self) {
        self.wbuf.clear();
    }

    /// The next message of the response, skipping the ones that may come at any time
    /// (notices, parameter changes, notifications).
    pub(crate) async fn recv(&mut self) -> Result<Message, DbError> {
        loop {
            match self.recv_any().await? {
                Message::NoticeResponse(_) | Message::ParameterStatus(_) | Message::NotificationResponse(_) => {}
                m => return Ok(m),
            }
        }
    }

    /// The next message of the response, read in place: its type byte and body length;
    /// the body is [`Conn::body`] until [`Conn::consume`] drops it. Notices, parameter
    /// changes and notifications are skipped, as [`Conn::recv`] skips them.
    pub(crate) async fn recv_frame(&mut self) -> Result<(u8, usize), DbError> {
        loop {
            if self.rbuf.len() >= 5 {
                let b = &self.rbuf[..5];
                let len = i32::from_be_bytes([b[1], b[2], b[3], b[4]]);
                if len < 4 {
                    return Err(protocol(format!(
                        "message length {len} in a {:?} message",
                        b[0] as char
                    )));
                }
                let whole = 1 + len as usize;
                if self.rbuf.len() >= whole {
                    match self.rbuf[0] {
                        b'N' | b'S' | b'A' => self.rbuf.advance(whole),
                        tag => return Ok((tag, whole - 5)),
                    }
                    continue;
                }
                if self.rbuf.capacity() < whole {
                    self.rbuf.reserve(whole - self.rbuf.len());
                }
            }
            if self.rbuf.capacity() - self.rbuf.len() < READ_BUFFER / 4 {
                self.rbuf.reserve(READ_BUFFER);
            }
            if self.stream.read_buf(&mut self.rbuf).await.map_err(lost)? == 0 {
                return Err(lost(io::ErrorKind::UnexpectedEof.into()));
            }
        }
    }

    /// The body of the message [`Conn::recv_frame`] returned (`len` bytes).
    pub(crate) fn body(&self, len: usize) -> &[u8] {
        &self.rbuf[5..5 + len]
    }

    /// Drops the message [`Conn::recv_frame`] returned.
    pub(crate) fn consume(&mut self, len: usize) {
        self.rbuf.advance(5 + len);
    }

    /// The message [`Conn::recv_frame`] returned, parsed (for the rare ones: errors).
    pub(crate) fn take_message(&mut self) -> Result<Message, DbError> {
        Message::parse(&mut self.rbuf)
            .map_err(|e| protocol(e.to_string()))?
            .ok_or_else(|| protocol("a message cut short".into()))
    }

    async fn recv_any(&mut self) -> Result<Message, DbError> {
        loop {
            if let Some(m) = Message::parse(&mut self.rbuf).map_err(|e| protocol(e.to_string()))? {
                return Ok(m);
            }
            if self.rbuf.capacity() - self.rbuf.len() < READ_BUFFER / 4 {
                self.rbuf.reserve(READ_BUFFER);
            }
            if self.stream.read_buf(&mut self.rbuf).await.map_err(lost)? == 0 {
                return Err(lost(io::ErrorKind::UnexpectedEof.into()));
            }
        }
    }

    /// Gives back buffer space a huge message made it take.
    pub(crate) fn shrink(&mut self) {
        if self.wbuf.capacity() > KEEP_AT_MOST {
            self.wbuf = BytesMut::with_capacity(READ_BUFFER);
        }
        if self.rbuf.capacity() > KEEP_AT_MOST && self.rbuf.is_empty() {
            self.rbuf = BytesMut::with_capacity(READ_BUFFER);
        }
    }

    /// Says goodbye if that needs no waiting (from `Drop` or before a reconnect).
    pub(crate) fn terminate_now(&mut self) {
        let mut buf = BytesMut::with_capacity(5);
        frontend::terminate(&mut buf);
        let _ = self.stream.try_write(&buf);
    }
}

/// What the startup exchange told us.
pub(crate) struct Startup {
    /// `server_version` as the server reports it.
    pub(crate) version: String,
    /// The backend's process id and cancel key.
    pub(crate) cancel: CancelToken,
}

/// What another task needs to cancel this session's running statement: the backend's
/// process id and secret key, sent in a CancelRequest on a new connection.
#[derive(Clone)]
pub struct CancelToken {
    target: Target,
    /// The backend's process id (`pg_backend_pid()`).
    pub pid: i32,
    secret: i32,
}

impl CancelToken {
    /// Asks the server to cancel the statement the session is running, if any; returns
    /// once the server has taken the request (it answers by closing the connection).
    pub async fn cancel(&self) -> Result<(), DbError> {
        let mut stream = open(&self.target).await?;
        let mut buf = BytesMut::with_capacity(16);
        frontend::cancel_request(self.pid, self.secret, &mut buf);
        stream.write_all(&buf).await.map_err(lost)?;
        let mut rest = BytesMut::with_capacity(16);
        // The server closes without a word; an error here means the same.
        let _ = stream.read_buf(&mut rest).await;
        Ok(())
    }
}

/// Opens a connection to `target` and logs in.
pub(crate) async fn connect(target: &Target, ignore: &IgnoreErrors) -> Result<(Conn, Startup), DbError> {
    let mut conn = Conn {
        stream: open(target).await?,
        rbuf: BytesMut::with_capacity(READ_BUFFER),
        wbuf: BytesMut::with_capacity(READ_BUFFER),
        in_transaction: false,
    };
    let mut params = vec![("client_encoding", "UTF8"), ("user", target.user.as_str())];
    if !target.database.is_empty() {
        params.push(("database", target.database.as_str()));
    }
    params.push(("application_name", "dbperf"));
    // Server options from PGOPTIONS (`-c name=value ...`), as libpq sends them.
    let options = std::env::var("PGOPTIONS").ok().filter(|o| !o.trim().is_empty());
    if let Some(o) = &options {
        params.push(("options", o.as_str()));
    }
    frontend::startup_message(params, conn.out()).map_err(|e| misuse(e.to_string()))?;
    conn.send().await?;
    authenticate(&mut conn, target, ignore).await?;
    let mut version = String::new();
    let mut key = None;
    loop {
        match conn.recv_any().await? {
            Message::ParameterStatus(p) => {
                if p.name().map_err(|e| protocol(e.to_string()))? == "server_version" {
                    version = p.value().map_err(|e| protocol(e.to_string()))?.to_owned();
                }
            }
            Message::BackendKeyData(k) => key = Some((k.process_id(), k.secret_key())),
            Message::NoticeResponse(_) => {}
            Message::ReadyForQuery(_) => break,
            Message::ErrorResponse(b) => return Err(server_error(&b, ignore, None)),
            _ => return Err(protocol("unexpected message after authentication".into())),
        }
    }
    let (pid, secret) = key.unwrap_or_default();
    Ok((
        conn,
        Startup {
            version,
            cancel: CancelToken {
                target: target.clone(),
                pid,
                secret,
            },
        },
    ))
}

/// Answers the server's authentication requests until AuthenticationOk.
async fn authenticate(conn: &mut Conn, target: &Target, ignore: &IgnoreErrors) -> Result<(), DbError> {
    let password = || -> Result<&[u8], DbError> {
        if target.password.is_empty() {
            Err(misuse(format!(
                "the server asks user {} for a password and the target gives none",
                target.user
            )))
        } else {
            Ok(target.password.as_bytes())
        }
    };
    let mut scram: Option<sasl::ScramSha256> = None;
    loop {
        match conn.recv().await? {
            Message::AuthenticationOk => return Ok(()),
            Message::AuthenticationCleartextPassword => {
                frontend::password_message(password()?, conn.out()).map_err(|e| misuse(e.to_string()))?;
            }
            Message::AuthenticationMd5Password(b) => {
                let hash = md5_hash(target.user.as_bytes(), password()?, b.salt());
                frontend::password_message(hash.as_bytes(), conn.out()).map_err(|e| misuse(e.to_string()))?;
            }
            Message::AuthenticationSasl(b) => {
                let mut mechanisms = b.mechanisms();
                let mut offered = Vec::new();
                while let Some(m) = mechanisms.next().map_err(|e| protocol(e.to_string()))? {
                    offered.push(m.to_owned());
                }
                if !offered.iter().any(|m| m == sasl::SCRAM_SHA_256) {
                    return Err(misuse(format!(
                        "the server offers SASL mechanisms {offered:?}; dbperf speaks only {} (without TLS)",
                        sasl::SCRAM_SHA_256
                    )));
                }
                let s = sasl::ScramSha256::new(password()?, sasl::ChannelBinding::unsupported());
                frontend::sasl_initial_response(sasl::SCRAM_SHA_256, s.message(), conn.out())
                    .map_err(|e| misuse(e.to_string()))?;
                scram = Some(s);
            }
            Message::AuthenticationSaslContinue(b) => {
                let s = scram
                    .as_mut()
                    .ok_or_else(|| protocol("SASL continue without a SASL start".into()))?;
                s.update(b.data())
                    .map_err(|e| misuse(format!("SCRAM authentication failed: {e}")))?;
                frontend::sasl_response(s.message(), conn.out()).map_err(|e| misuse(e.to_string()))?;
            }
            Message::AuthenticationSaslFinal(b) => {
                let s = scram
                    .as_mut()
                    .ok_or_else(|| protocol("SASL final without a SASL start".into()))?;
                s.finish(b.data())
                    .map_err(|e| misuse(format!("SCRAM authentication failed: {e}")))?;
                continue;
            }
            Message::ErrorResponse(b) => return Err(server_error(&b, ignore, None)),
            _ => {
                return Err(misuse(
                    "the server asks for an authentication method dbperf does not speak (GSS, SSPI, Kerberos); \
                     use password, md5 or scram-sha-256 in pg_hba.conf"
                        .into(),
                ))
            }
        }
        conn.send().await?;
    }
}
