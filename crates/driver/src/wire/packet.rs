//! Packet framing: 3-byte length + sequence id, split payloads of 16 MiB − 1 and more,
//! one reused read buffer and one reused write buffer per connection.
//!
//! A command is built in place in the write buffer ([`PacketConn::command`], then
//! [`PacketConn::send`]); responses are read one packet at a time ([`PacketConn::recv`],
//! then [`PacketConn::payload`]). A payload normally borrows the read buffer; only a
//! payload split over several packets is joined into a separate buffer.

use std::io;

use super::{lost, protocol};
pub(crate) use crate::stream::Stream;
use crate::DbError;

/// The largest payload one packet carries; a payload this long continues in the next.
pub(crate) const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// Read buffer size: one `read` usually takes a whole response.
const READ_BUFFER: usize = 64 * 1024;
/// Buffers grown beyond this by a huge packet are given back after the command.
const KEEP_AT_MOST: usize = 1024 * 1024;

/// A framed connection: the stream plus its buffers and the sequence id.
pub(crate) struct PacketConn {
    stream: Stream,
    /// Received bytes live in `rbuf[rstart..rend]`; `rbuf.len()` is its usable size.
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    /// The current payload: `rbuf[cur.0..cur.1]`, or `joined` when `cur_joined`.
    cur: (usize, usize),
    cur_joined: bool,
    joined: Vec<u8>,
    /// The packet being built: 4 header bytes, then the payload.
    wbuf: Vec<u8>,
    seq: u8,
}

impl PacketConn {
    pub(crate) fn new(stream: Stream) -> PacketConn {
        PacketConn {
            stream,
            rbuf: vec![0; READ_BUFFER],
            rstart: 0,
            rend: 0,
            cur: (0, 0),
            cur_joined: false,
            joined: Vec::new(),
            wbuf: Vec::with_capacity(READ_BUFFER),
            seq: 0,
        }
    }

    pub(crate) fn stream(&self) -> &Stream {
        &self.stream
    }

    /// Starts a new command (sequence id 0) and returns its empty payload to fill.
    pub(crate) fn command(&mut self) -> &mut Vec<u8> {
        self.seq = 0;
        self.shrink();
        self.reply()
    }

    /// Starts the next packet of the current exchange (auth data, LOCAL INFILE data).
    pub(crate) fn reply(&mut self) -> &mut Vec<u8> {
        self.wbuf.clear();
        self.wbuf.extend_from_slice(&[0; 4]);
        &mut self.wbuf
    }

    /// The packet being built, to append to.
    pub(crate) fn building(&mut self) -> &mut Vec<u8> {
        &mut self.wbuf
    }

    /// Bytes of payload in the packet being built.
    pub(crate) fn building_len(&self) -> usize {
        self.wbuf.len() - 4
    }

    /// Sends the packet built since [`command`](Self::command) or [`reply`](Self::reply),
    /// split into several when the payload reaches [`MAX_PAYLOAD`].
    pub(crate) async fn send(&mut self) -> Result<(), DbError> {
        let len = self.wbuf.len() - 4;
        if len < MAX_PAYLOAD {
            let header = self.header(len);
            self.wbuf[..4].copy_from_slice(&header);
            return self.stream.write_all(&self.wbuf).await.map_err(lost);
        }
        let mut off = 4;
        loop {
            let n = MAX_PAYLOAD.min(self.wbuf.len() - off);
            let header = self.header(n);
            self.stream.write_all(&header).await.map_err(lost)?;
            self.stream.write_all(&self.wbuf[off..off + n]).await.map_err(lost)?;
            off += n;
            // A payload that is an exact multiple ends with an empty packet.
            if n < MAX_PAYLOAD {
                return Ok(());
            }
        }
    }

    fn header(&mut self, len: usize) -> [u8; 4] {
        let l = (len as u32).to_le_bytes();
        let h = [l[0], l[1], l[2], self.seq];
        self.seq = self.seq.wrapping_add(1);
        h
    }

    /// Reads the next packet (joining a split payload); see [`payload`](Self::payload).
    pub(crate) async fn recv(&mut self) -> Result<(), DbError> {
        // Most packets of a result are already in the buffer: take them without the
        // nested futures of a read (a large share of a client's CPU in row-heavy results).
        match self.buffered() {
            Some(r) => r,
            None => self.recv_read().await,
        }
    }

    /// [`recv`](Self::recv) without a future when the next packet is whole in the buffer
    /// and not split; `None` when it must be read.
    pub(crate) fn buffered(&mut self) -> Option<Result<(), DbError>> {
        let avail = self.rend - self.rstart;
        if avail < 4 {
            return None;
        }
        let h = &self.rbuf[self.rstart..self.rstart + 4];
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        let seq = h[3];
        if len >= MAX_PAYLOAD || avail < 4 + len {
            return None;
        }
        let start = self.rstart + 4;
        if let Err(e) = self.check_seq(seq, len, start) {
            return Some(Err(e));
        }
        self.rstart += 4 + len;
        self.cur = (start, start + len);
        self.cur_joined = false;
        Some(Ok(()))
    }

    /// [`recv`](Self::recv) when the packet is not whole in the buffer.
    async fn recv_read(&mut self) -> Result<(), DbError> {
        let (start, len) = self.next_raw().await?;
        if len < MAX_PAYLOAD {
            self.cur = (start, start + len);
            self.cur_joined = false;
            return Ok(());
        }
        self.joined.clear();
        self.joined.extend_from_slice(&self.rbuf[start..start + len]);
        loop {
            let (start, len) = self.next_raw().await?;
            self.joined.extend_from_slice(&self.rbuf[start..start + len]);
            if len < MAX_PAYLOAD {
                break;
            }
        }
        self.cur_joined = true;
        Ok(())
    }

    /// The payload of the packet last read by [`recv`](Self::recv).
    pub(crate) fn payload(&self) -> &[u8] {
        if self.cur_joined {
            &self.joined
        } else {
            &self.rbuf[self.cur.0..self.cur.1]
        }
    }

    /// Reads one physical packet; returns where its payload starts in `rbuf` and its length.
    async fn next_raw(&mut self) -> Result<(usize, usize), DbError> {
        self.fill(4).await?;
        let h = &self.rbuf[self.rstart..self.rstart + 4];
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        let seq = h[3];
        self.fill(4 + len).await?;
        let start = self.rstart + 4;
        self.check_seq(seq, len, start)?;
        self.rstart += 4 + len;
        Ok((start, len))
    }

    /// Checks a packet's sequence id `seq` (payload `len` bytes at `start`) and moves on.
    fn check_seq(&mut self, seq: u8, len: usize, start: usize) -> Result<(), DbError> {
        // A server may send an error out of turn (e.g. when it closes an idle connection);
        // anything else out of sequence means we lost track of the conversation.
        if seq != self.seq && !(len > 0 && self.rbuf[start] == 0xFF) {
            return Err(protocol(format!(
                "packet with sequence id {seq} where {} was expected",
                self.seq
            )));
        }
        self.seq = seq.wrapping_add(1);
        Ok(())
    }

    /// Makes at least `need` unread bytes available in `rbuf[rstart..]`.
    async fn fill(&mut self, need: usize) -> Result<(), DbError> {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        }
        while self.rend - self.rstart < need {
            if self.rbuf.len() - self.rstart < need {
                self.rbuf.copy_within(self.rstart..self.rend, 0);
                self.rend -= self.rstart;
                self.rstart = 0;
                if self.rbuf.len() < need {
                    self.rbuf.resize(need.max(READ_BUFFER), 0);
                }
            }
            let n = self.stream.read(&mut self.rbuf[self.rend..]).await.map_err(lost)?;
            if n == 0 {
                return Err(lost(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                )));
            }
            self.rend += n;
        }
        Ok(())
    }

    /// Gives back memory a huge packet made the buffers grow to (between commands only).
    fn shrink(&mut self) {
        if self.wbuf.capacity() > KEEP_AT_MOST {
            self.wbuf = Vec::with_capacity(READ_BUFFER);
        }
        if self.joined.capacity() > KEEP_AT_MOST {
            self.joined = Vec::new();
            self.cur_joined = false;
        }
        if self.rbuf.len() > KEEP_AT_MOST && self.rend - self.rstart <= READ_BUFFER {
            let mut small = vec![0; READ_BUFFER];
            small[..self.rend - self.rstart].copy_from_slice(&self.rbuf[self.rstart..self.rend]);
            self.rend -= self.rstart;
            self.rstart = 0;
            self.cur = (0, 0);
            self.rbuf = small;
        }
    }

    /// Sends COM_QUIT if the socket takes it right now; never waits.
    pub(crate) fn quit_now(&mut self) {
        let _ = self.stream.try_write(&[1, 0, 0, 0, super::COM_QUIT]);
    }
}

/// A cursor over a payload; every read checks bounds and returns `None` past the end.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let b = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(b)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.bytes(1).map(|b| b[0])
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        self.bytes(2).map(|b| u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.bytes(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A length-encoded integer (0xFB, NULL in rows, is not one: callers check first).
    pub(crate) fn lenenc(&mut self) -> Option<u64> {
        let n = match self.u8()? {
            v @ 0..=0xFA => return Some(u64::from(v)),
            0xFC => 2,
            0xFD => 3,
            0xFE => 8,
            _ => return None,
        };
        let b = self.bytes(n)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(b);
        Some(u64::from_le_bytes(v))
    }

    pub(crate) fn lenenc_bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.lenenc()?).ok()?;
        self.bytes(n)
    }

    /// Bytes up to a NUL (consumed, not returned), or to the end when there is none.
    pub(crate) fn nul_terminated(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(i) => {
                self.pos += i + 1;
                &rest[..i]
            }
            None => {
                self.pos = self.buf.len();
                rest
            }
        }
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos..];
        self.pos = self.buf.len();
        rest
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }
}

/// Appends a length-encoded integer.
pub(crate) fn put_lenenc(w: &mut Vec<u8>, v: u64) {
    match v {
        0..=0xFA => w.push(v as u8),
        0xFB..=0xFFFF => {
            w.push(0xFC);
            w.extend_from_slice(&(v as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            w.push(0xFD);
            w.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
        }
        _ => {
            w.push(0xFE);
            w.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// Appends a length-encoded string.
pub(crate) fn put_lenenc_bytes(w: &mut Vec<u8>, b: &[u8]) {
    put_lenenc(w, b.len() as u64);
    w.extend_from_slice(b);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trips_at_every_width() {
        for v in [0, 250, 251, 0xFFFF, 0x1_0000, 0xFF_FFFF, 0x100_0000, u64::MAX] {
            let mut w = Vec::new();
            put_lenenc(&mut w, v);
            let mut r = Reader::new(&w);
            assert_eq!(r.lenenc(), Some(v), "{v:#x}");
            assert_eq!(r.rest(), &[] as &[u8]);
        }
        assert_eq!(Reader::new(&[0xFB]).lenenc(), None);
        assert_eq!(Reader::new(&[0xFC, 1]).lenenc(), None, "truncated");
    }

    #[test]
    fn reader_stops_at_the_end() {
        let mut r = Reader::new(b"ab\0cd");
        assert_eq!(r.nul_terminated(), b"ab");
        assert_eq!(r.u16(), Some(u16::from_le_bytes(*b"cd")));
        assert_eq!(r.u8(), None);
        assert_eq!(r.nul_terminated(), b"");
    }
}
