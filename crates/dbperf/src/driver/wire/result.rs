//! Reading a command's response: OK, ERR, a LOCAL INFILE request, or result sets
//! (text or binary rows, drained without decoding unless the caller wants them as text),
//! following `SERVER_MORE_RESULTS_EXISTS` to the last result.

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;

use super::packet::{PacketConn, Reader, MAX_PAYLOAD};
use super::{client_error, protocol, server_error, SERVER_MORE_RESULTS_EXISTS};
use crate::driver::mysql::IgnoreErrors;
use crate::driver::{DbError, ExecInfo};

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

/// LOCAL INFILE data goes out in packets of this size.
const INFILE_PACKET: usize = 512 * 1024;

/// Client error for LOCAL INFILE data that could not be sent (libmysqlclient's code).
const CR_LOAD_DATA_LOCAL_INFILE_REJECTED: u32 = 2068;

/// Reads the whole response to a command. Rows of the first result set with columns go
/// to `rows` when given; a LOCAL INFILE request is answered from `infile`.
pub(crate) async fn read_response(
    conn: &mut PacketConn,
    proto: Proto,
    ignore: &IgnoreErrors,
    mut rows: Option<&mut TextRows>,
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
                let (affected, status) = read_result_set(conn, proto, ignore, rows.take()).await?;
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
    mut rows: Option<&mut TextRows>,
) -> Result<(u64, u16), DbError> {
    let mut r = Reader::new(conn.payload());
    let columns = r
        .lenenc()
        .ok_or_else(|| protocol("bad column count in a result set".into()))?;
    // With cached metadata, MariaDB says whether the column definitions follow.
    let metadata_follows = !proto.cache_metadata || r.u8().is_none_or(|b| b != 0);
    if metadata_follows {
        for _ in 0..columns {
            conn.recv().await?;
        }
    }
    if !proto.deprecate_eof {
        conn.recv().await?;
        if conn.payload().first() != Some(&0xFE) {
            return Err(protocol("no EOF packet after the column definitions".into()));
        }
    }
    // A row may start with 0xFE too (a text value of 16 MiB or more), but then its
    // packet is at least that long.
    let terminator_below = if proto.deprecate_eof { MAX_PAYLOAD } else { 9 };
    loop {
        conn.recv().await?;
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
            _ => {
                if let Some(rows) = rows.as_deref_mut() {
                    rows.push(text_row(p, columns)?);
                }
            }
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
    fn ok_packets_give_affected_rows_and_status() {
        assert_eq!(parse_ok(b"\x00\x03\x00\x08\x00\x00\x00").unwrap(), (3, 8));
        assert_eq!(parse_ok(b"\xfe\x00\x00\x02\x00\x00\x00").unwrap(), (0, 2));
        assert!(parse_ok(b"\x00\x03").is_err());
    }
}
