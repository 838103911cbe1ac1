//! Reading a command's response: OK, ERR, a LOCAL INFILE request, or result sets
//! (text or binary rows: drained without decoding, decoded into the caller's cells, or
//! kept as received for the caller to decode if it reads them), following
//! `SERVER_MORE_RESULTS_EXISTS` to the last result.

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;

use super::packet::{PacketConn, Reader, MAX_PAYLOAD};
use super::{client_error, protocol, server_error, SERVER_MORE_RESULTS_EXISTS};
use crate::mysql::IgnoreErrors;
use crate::rows::Received;
use crate::{DbError, ExecInfo, Rows};

/// How this connection frames results, as negotiated at login.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Proto {
    /// CLIENT_DEPRECATE_EOF: no EOF after column definitions; results end with an OK.
    pub deprecate_eof: bool,
    /// MARIADB_CLIENT_CACHE_METADATA: column counts carry a "metadata follows" byte.
    pub cache_metadata: bool,
}

/// Text rows, NULL as `None`.
pub(crate) type TextRows = Vec<Vec<Option<String>>>;

/// A column's type code and whether it is UNSIGNED, from its definition packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ColType {
    pub code: u8,
    pub unsigned: bool,
}

/// Where the rows of the first result set go.
pub(crate) enum Sink<'a> {
    /// Drained without decoding.
    Discard,
    /// Decoded as text (setup and inspection).
    Text(&'a mut TextRows),
    /// Into reused cells. Binary rows (an execute's) are decoded with `types`, which is
    /// refreshed whenever the server sends column definitions.
    Cells {
        rows: &'a mut Rows,
        types: &'a mut Vec<ColType>,
        binary: bool,
    },
}

/// LOCAL INFILE data goes out in packets of this size.
const INFILE_PACKET: usize = 512 * 1024;

/// Client error for LOCAL INFILE data that could not be sent (libmysqlclient's code).
const CR_LOAD_DATA_LOCAL_INFILE_REJECTED: u32 = 2068;

/// Reads the whole response to a command. Rows of the first result set with columns go
/// to `sink`; a LOCAL INFILE request is answered from `infile`.
pub(crate) async fn read_response(
    conn: &mut PacketConn,
    proto: Proto,
    ignore: &IgnoreErrors,
    mut sink: Sink<'_>,
    mut infile: Option<BoxStream<'static, std::io::Result<Bytes>>>,
) -> Result<ExecInfo, DbError> {
    let mut info = ExecInfo::default();
    let mut local_failure = None;
    loop {
        conn.recv().await?;
        let p = conn.payload();
        let status = match p.first() {
            Some(0x00) => {
                let (affected, status) = parse_ok(p)?;
                info.affected_rows = affected;
                status
            }
            Some(0xFF) => return Err(server_error(p, ignore)),
            Some(0xFB) => {
                local_failure = send_infile(conn, infile.take()).await?;
                continue;
            }
            Some(_) => {
                let first = std::mem::replace(&mut sink, Sink::Discard);
                let (affected, status) = read_result_set(conn, proto, ignore, first).await?;
                info.affected_rows = affected;
                status
            }
            None => return Err(protocol("empty response packet".into())),
        };
        if status & SERVER_MORE_RESULTS_EXISTS == 0 {
            return match local_failure {
                Some(e) => Err(e),
                None => Ok(info),
            };
        }
    }
}

/// Reads one result set whose column-count packet is the current payload; returns the
/// affected rows and status of its terminator.
async fn read_result_set(
    conn: &mut PacketConn,
    proto: Proto,
    ignore: &IgnoreErrors,
    mut sink: Sink<'_>,
) -> Result<(u64, u16), DbError> {
    let mut r = Reader::new(conn.payload());
    let columns = r
        .lenenc()
        .ok_or_else(|| protocol("bad column count in a result set".into()))?;
    // With cached metadata, MariaDB says whether the column definitions follow.
    let metadata_follows = !proto.cache_metadata || r.u8().is_none_or(|b| b != 0);
    if let Sink::Cells { rows, types, .. } = &mut sink {
        rows.reset(columns as usize);
        if metadata_follows {
            types.clear();
        }
    }
    if metadata_follows {
        for _ in 0..columns {
            conn.recv().await?;
            if let Sink::Cells { types, .. } = &mut sink {
                types.push(column_type(conn.payload())?);
            }
        }
    }
    if !proto.deprecate_eof {
        conn.recv().await?;
        if conn.payload().first() != Some(&0xFE) {
            return Err(protocol("no EOF packet after the column definitions".into()));
        }
    }
    // Rows that allow it are kept as received, and decoded only if they are read.
    let deferred = match &mut sink {
        Sink::Cells {
            rows,
            types,
            binary: true,
        } if rows.can_defer() => {
            let described: smallvec::SmallVec<[u8; 32]> =
                types.iter().flat_map(|t| [t.code, u8::from(t.unsigned)]).collect();
            rows.defer(&described, decode_binary)
        }
        Sink::Cells {
            rows, binary: false, ..
        } => rows.defer(&[], decode_text),
        _ => false,
    };
    // A row may start with 0xFE too (a text value of 16 MiB or more), but then its
    // packet is at least that long.
    let terminator_below = if proto.deprecate_eof { MAX_PAYLOAD } else { 9 };
    loop {
        // Rows usually wait in the buffer: no future for those.
        match conn.buffered() {
            Some(r) => r?,
            None => conn.recv().await?,
        }
        let p = conn.payload();
        match p.first() {
            Some(0xFE) if p.len() < terminator_below => {
                return if proto.deprecate_eof {
                    parse_ok(p)
                } else {
                    let mut r = Reader::new(&p[1..]);
                    r.u16();
                    Ok((0, r.u16().unwrap_or(0)))
                };
            }
            Some(0xFF) => return Err(server_error(p, ignore)),
            _ => match &mut sink {
                Sink::Discard => {}
                Sink::Cells { rows, .. } if deferred => rows.push_undecoded(p),
                Sink::Text(rows) => rows.push(text_row(p, columns)?),
                Sink::Cells {
                    rows, binary: false, ..
                } => text_cells(p, columns, rows)?,
                Sink::Cells { rows, types, .. } => binary_cells(p, types, rows)?,
            },
        }
    }
}

/// Affected rows and status flags of an OK packet (header 0x00, or 0xFE when it ends a
/// result set under CLIENT_DEPRECATE_EOF).
fn parse_ok(p: &[u8]) -> Result<(u64, u16), DbError> {
    let mut r = Reader::new(p);
    r.u8();
    let affected = r.lenenc();
    let _last_insert_id = r.lenenc();
    match (affected, r.u16()) {
        (Some(a), Some(s)) => Ok((a, s)),
        _ => Err(protocol("truncated OK packet".into())),
    }
}

fn text_row(p: &[u8], columns: u64) -> Result<Vec<Option<String>>, DbError> {
    let mut r = Reader::new(p);
    (0..columns)
        .map(|_| {
            if r.peek() == Some(0xFB) {
                r.u8();
                return Ok(None);
            }
            r.lenenc_bytes()
                .map(|b| Some(String::from_utf8_lossy(b).into_owned()))
                .ok_or_else(|| protocol("truncated text row".into()))
        })
        .collect()
}

/// The type of a column from its definition packet (protocol 4.1).
pub(crate) fn column_type(p: &[u8]) -> Result<ColType, DbError> {
    let mut r = Reader::new(p);
    for _ in 0..6 {
        r.lenenc_bytes()
            .ok_or_else(|| protocol("truncated column definition".into()))?;
    }
    r.lenenc();
    let (_charset, _len) = (r.u16(), r.u32());
    match (r.u8(), r.u16()) {
        (Some(code), Some(flags)) => Ok(ColType {
            code,
            unsigned: flags & 0x20 != 0,
        }),
        _ => Err(protocol("truncated column definition".into())),
    }
}

fn text_cells(p: &[u8], columns: u64, rows: &mut Rows) -> Result<(), DbError> {
    let mut r = Reader::new(p);
    for _ in 0..columns {
        if r.peek() == Some(0xFB) {
            r.u8();
            rows.push_null();
            continue;
        }
        let b = r.lenenc_bytes().ok_or_else(|| protocol("truncated text row".into()))?;
        rows.push_bytes(b);
    }
    Ok(())
}

/// [`RowDecoder`](crate::rows::RowDecoder) of text rows (of the rows' column count).
fn decode_text(received: &Received<'_>, rows: &mut Rows) -> Result<(), DbError> {
    let columns = rows.columns() as u64;
    received.rows().try_for_each(|p| text_cells(p, columns, rows))
}

/// [`RowDecoder`](crate::rows::RowDecoder) of binary rows; the description holds
/// each column's type code and UNSIGNED flag.
fn decode_binary(received: &Received<'_>, rows: &mut Rows) -> Result<(), DbError> {
    let types: smallvec::SmallVec<[ColType; 16]> = received
        .columns
        .chunks_exact(2)
        .map(|c| ColType {
            code: c[0],
            unsigned: c[1] != 0,
        })
        .collect();
    received.rows().try_for_each(|p| binary_cells(p, &types, rows))
}

/// Decodes a binary-protocol row: a 0x00 header, a NULL bitmap offset by two bits, then
/// the non-NULL values in their types' encodings.
fn binary_cells(p: &[u8], types: &[ColType], rows: &mut Rows) -> Result<(), DbError> {
    let truncated = || protocol("truncated binary row".into());
    let bitmap_len = (types.len() + 7 + 2) / 8;
    let bitmap = p.get(1..1 + bitmap_len).ok_or_else(truncated)?;
    let mut r = Reader::new(&p[1 + bitmap_len..]);
    for (i, t) in types.iter().enumerate() {
        let bit = i + 2;
        if bitmap[bit / 8] & (1 << (bit % 8)) != 0 {
            rows.push_null();
            continue;
        }
        let int = |b: &[u8]| {
            let mut v = [0u8; 8];
            v[..b.len()].copy_from_slice(b);
            let u = u64::from_le_bytes(v);
            if t.unsigned || b.len() == 8 {
                u as i64
            } else {
                let shift = 64 - 8 * b.len() as u32;
                ((u << shift) as i64) >> shift
            }
        };
        match t.code {
            0x01 => rows.push_int(int(r.bytes(1).ok_or_else(truncated)?)),
            0x02 | 0x0D => rows.push_int(int(r.bytes(2).ok_or_else(truncated)?)),
            0x03 | 0x09 => rows.push_int(int(r.bytes(4).ok_or_else(truncated)?)),
            0x08 => rows.push_int(int(r.bytes(8).ok_or_else(truncated)?)),
            0x04 => {
                let b = r.bytes(4).ok_or_else(truncated)?;
                rows.push_float(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
            }
            0x05 => {
                let b = r.bytes(8).ok_or_else(truncated)?;
                rows.push_float(f64::from_le_bytes(b.try_into().map_err(|_| truncated())?))
            }
            0x06 => rows.push_null(),
            // DATE, DATETIME, TIMESTAMP, TIME: a length byte, then that many bytes.
            0x07 | 0x0A | 0x0B | 0x0C => {
                let n = r.u8().ok_or_else(truncated)?;
                rows.push_bytes(r.bytes(n as usize).ok_or_else(truncated)?)
            }
            _ => rows.push_bytes(r.lenenc_bytes().ok_or_else(truncated)?),
        }
    }
    Ok(())
}

/// Answers the server's LOCAL INFILE request with `data` (or nothing when there is no
/// data), then the empty packet that ends the file. A failure of the data itself is
/// returned as `Ok(Some(..))`: the server's response must still be read.
async fn send_infile(
    conn: &mut PacketConn,
    data: Option<BoxStream<'static, std::io::Result<Bytes>>>,
) -> Result<Option<DbError>, DbError> {
    let Some(mut data) = data else {
        conn.reply();
        conn.send().await?;
        return Ok(Some(client_error(
            CR_LOAD_DATA_LOCAL_INFILE_REJECTED,
            "the server asked for LOCAL INFILE data, but this statement has none (use load_data_local)".into(),
        )));
    };
    let mut failure = None;
    conn.reply();
    while let Some(chunk) = data.next().await {
        let chunk = match chunk {
            Ok(c) => c,
            Err(e) => {
                failure = Some(client_error(
                    CR_LOAD_DATA_LOCAL_INFILE_REJECTED,
                    format!("reading LOCAL INFILE data: {e}"),
                ));
                break;
            }
        };
        let mut rest = &chunk[..];
        while !rest.is_empty() {
            let n = (INFILE_PACKET - conn.building_len()).min(rest.len());
            conn.building().extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if conn.building_len() == INFILE_PACKET {
                conn.send().await?;
                conn.reply();
            }
        }
    }
    if conn.building_len() > 0 {
        conn.send().await?;
        conn.reply();
    }
    conn.send().await?;
    Ok(failure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_rows_decode_nulls_and_lengths() {
        let row = text_row(b"\x011\xfb\x02ab\x00", 4).unwrap();
        assert_eq!(
            row,
            vec![Some("1".into()), None, Some("ab".into()), Some(String::new())]
        );
        assert!(text_row(b"\x05ab", 1).is_err());
    }

    #[test]
    fn binary_rows_decode_by_column_type() {
        let t = |code, unsigned| ColType { code, unsigned };
        let types = [
            t(0x03, false),
            t(0x01, false),
            t(0xF6, false),
            t(0x08, true),
            t(0x0F, false),
        ];
        // header, bitmap (7 columns + 2 bits -> 1 byte; column 4 NULL = bit 6), values.
        let mut p = vec![0x00, 0b0100_0000];
        p.extend_from_slice(&(-5i32).to_le_bytes());
        p.push(0xFF);
        p.extend_from_slice(b"\x0512.34");
        p.extend_from_slice(&42u64.to_le_bytes());
        let mut rows = Rows::new();
        rows.reset(types.len());
        binary_cells(&p, &types, &mut rows).unwrap();
        assert_eq!(rows.int(0, 0), Some(-5));
        assert_eq!(rows.int(0, 1), Some(-1));
        assert_eq!(rows.float(0, 2), Some(12.34));
        assert_eq!(rows.int(0, 3), Some(42));
        assert_eq!(rows.int(0, 4), None);
        assert!(binary_cells(&p[..4], &types, &mut rows).is_err());
    }

    #[test]
    fn ok_packets_give_affected_rows_and_status() {
        assert_eq!(parse_ok(b"\x00\x03\x00\x08\x00\x00\x00").unwrap(), (3, 8));
        assert_eq!(parse_ok(b"\xfe\x00\x00\x02\x00\x00\x00").unwrap(), (0, 2));
        assert!(parse_ok(b"\x00\x03").is_err());
    }
}
