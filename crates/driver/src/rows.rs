//! [`Rows`]: the rows of a prepared statement kept for the caller in reused buffers, for
//! workloads that read what they select (TPC-C). Cells are integers, floats, byte strings
//! or NULL; integer and float accessors also parse text and DECIMAL cells, so a caller
//! need not know whether the server sent a value in binary or as text. Rows made with
//! [`Rows::deferred`] may be kept as the server sent them and decoded only when asked
//! ([`Rows::decode`]), as a script's results are: most are never read.

use super::DbError;

/// Decodes rows as their driver received them, with the driver's description of the
/// columns (read once for all the rows), into cells pushed onto the rows.
pub type RowDecoder = fn(&Received<'_>, &mut Rows) -> Result<(), DbError>;

/// Rows kept as a driver received them, handed to its [`RowDecoder`].
pub struct Received<'a> {
    packets: &'a [u8],
    ends: &'a [u32],
    /// The driver's description of the columns, as it gave it to [`Rows::defer`].
    pub columns: &'a [u8],
}

impl<'a> Received<'a> {
    /// Each row's bytes, in order.
    pub fn rows(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let row = &self.packets[start..end as usize];
            start = end as usize;
            row
        })
    }
}

/// One value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    /// SQL NULL.
    Null,
    /// An integer column.
    Int(i64),
    /// A FLOAT or DOUBLE column.
    Float(f64),
    /// Text, DECIMAL, dates: bytes `start..end` of [`Rows`]' data buffer.
    Bytes(u32, u32),
}

/// The rows of one result set; cleared and refilled by every `exec_rows`, so a worker that
/// keeps one allocates nothing in steady state.
#[derive(Clone, Debug, Default)]
pub struct Rows {
    columns: usize,
    cells: Vec<Cell>,
    data: Vec<u8>,
    /// Set by [`Rows::deferred`]: rows the driver may keep undecoded.
    deferred: Option<Box<Undecoded>>,
}

/// Rows as the driver received them, waiting for [`Rows::decode`].
#[derive(Clone, Debug, Default)]
struct Undecoded {
    /// The rows, one after another; row `i` ends at `ends[i]`.
    packets: Vec<u8>,
    ends: Vec<u32>,
    /// The driver's description of the columns, read only by `decoder`.
    columns: Vec<u8>,
    decoder: Option<RowDecoder>,
}

impl Rows {
    /// Empty rows.
    pub fn new() -> Rows {
        Rows::default()
    }

    /// Empty rows that a driver may fill undecoded: call [`decode`](Self::decode) before
    /// reading cells. Drivers that cannot defer decode as usual.
    pub fn deferred() -> Rows {
        Rows {
            deferred: Some(Box::default()),
            ..Rows::default()
        }
    }

    /// Empties the rows and sets the column count of the rows to come.
    pub fn reset(&mut self, columns: usize) {
        self.columns = columns;
        self.cells.clear();
        self.data.clear();
        if let Some(d) = &mut self.deferred {
            d.packets.clear();
            d.ends.clear();
            d.decoder = None;
        }
    }

    /// True when these rows may be kept undecoded ([`Rows::deferred`]).
    pub(crate) fn can_defer(&self) -> bool {
        self.deferred.is_some()
    }

    /// Starts keeping the rows to come undecoded, if these rows allow it: `columns`
    /// describes them to `decoder`. False when the rows must be decoded now.
    pub(crate) fn defer(&mut self, columns: &[u8], decoder: RowDecoder) -> bool {
        let Some(d) = &mut self.deferred else {
            return false;
        };
        d.columns.clear();
        d.columns.extend_from_slice(columns);
        d.decoder = Some(decoder);
        true
    }

    /// Keeps one row as received, after [`defer`](Self::defer) said yes.
    pub(crate) fn push_undecoded(&mut self, row: &[u8]) {
        if let Some(d) = &mut self.deferred {
            d.packets.extend_from_slice(row);
            d.ends.push(d.packets.len() as u32);
        }
    }

    /// Decodes the rows kept undecoded, if any, into cells; the rows read as usual after.
    pub fn decode(&mut self) -> Result<(), DbError> {
        let Some(mut d) = self.deferred.take() else {
            return Ok(());
        };
        let r = match d.decoder.take() {
            Some(decoder) => {
                let received = Received {
                    packets: &d.packets,
                    ends: &d.ends,
                    columns: &d.columns,
                };
                decoder(&received, self)
            }
            None => Ok(()),
        };
        d.packets.clear();
        d.ends.clear();
        self.deferred = Some(d);
        r
    }

    /// Appends an integer cell.
    pub fn push_int(&mut self, v: i64) {
        self.cells.push(Cell::Int(v));
    }

    /// Appends a float cell.
    pub fn push_float(&mut self, v: f64) {
        self.cells.push(Cell::Float(v));
    }

    /// Appends a NULL cell.
    pub fn push_null(&mut self) {
        self.cells.push(Cell::Null);
    }

    /// Appends a byte-string cell.
    pub fn push_bytes(&mut self, b: &[u8]) {
        let start = self.data.len() as u32;
        self.data.extend_from_slice(b);
        self.cells.push(Cell::Bytes(start, self.data.len() as u32));
    }

    /// Number of rows (those not decoded yet too).
    pub fn len(&self) -> usize {
        match &self.deferred {
            Some(d) if d.decoder.is_some() => d.ends.len(),
            _ => self.cells.len().checked_div(self.columns).unwrap_or(0),
        }
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Columns per row.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// The cell at (`row`, `col`), NULL when out of range.
    pub fn cell(&self, row: usize, col: usize) -> Cell {
        debug_assert!(
            self.deferred.as_ref().is_none_or(|d| d.decoder.is_none()),
            "cells read before Rows::decode"
        );
        if col >= self.columns {
            return Cell::Null;
        }
        self.cells.get(row * self.columns + col).copied().unwrap_or(Cell::Null)
    }

    /// The cell as an integer (text and DECIMAL are parsed, fractions truncated).
    pub fn int(&self, row: usize, col: usize) -> Option<i64> {
        match self.cell(row, col) {
            Cell::Int(v) => Some(v),
            Cell::Float(f) => Some(f as i64),
            Cell::Bytes(..) => {
                let b = self.bytes(row, col)?;
                let s = std::str::from_utf8(b).ok()?;
                let whole = s.split('.').next().unwrap_or(s);
                whole.trim().parse().ok()
            }
            Cell::Null => None,
        }
    }

    /// The cell as a float (text and DECIMAL are parsed).
    pub fn float(&self, row: usize, col: usize) -> Option<f64> {
        match self.cell(row, col) {
            Cell::Int(v) => Some(v as f64),
            Cell::Float(f) => Some(f),
            Cell::Bytes(..) => std::str::from_utf8(self.bytes(row, col)?).ok()?.trim().parse().ok(),
            Cell::Null => None,
        }
    }

    /// The cell's bytes, for byte-string cells.
    pub fn bytes(&self, row: usize, col: usize) -> Option<&[u8]> {
        match self.cell(row, col) {
            Cell::Bytes(s, e) => self.data.get(s as usize..e as usize),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_read_back_as_ints_floats_and_bytes() {
        let mut r = Rows::new();
        r.reset(3);
        r.push_int(7);
        r.push_bytes(b"12.50");
        r.push_null();
        r.push_float(1.5);
        r.push_bytes(b"abc");
        r.push_bytes(b"-3");
        assert_eq!(r.len(), 2);
        assert_eq!(r.int(0, 0), Some(7));
        assert_eq!(r.float(0, 1), Some(12.5));
        assert_eq!(r.int(0, 1), Some(12));
        assert_eq!(r.int(0, 2), None);
        assert_eq!(r.float(1, 0), Some(1.5));
        assert_eq!(r.bytes(1, 1), Some(&b"abc"[..]));
        assert_eq!(r.int(1, 2), Some(-3));
        assert_eq!(r.cell(5, 0), Cell::Null);
        r.reset(1);
        assert!(r.is_empty());
    }

    /// A toy driver format: one cell per byte, 0 for NULL, else the byte as an integer.
    fn bytes_as_ints(received: &Received<'_>, rows: &mut Rows) -> Result<(), DbError> {
        let columns = received.columns;
        for row in received.rows() {
            if row.len() != columns.len() {
                return Err(DbError {
                    class: crate::ErrorClass::Fatal,
                    code: None,
                    sqlstate: None,
                    message: format!("row of {} cells, {} columns", row.len(), columns.len()),
                });
            }
            for &b in row {
                if b == 0 {
                    rows.push_null();
                } else {
                    rows.push_int(b.into());
                }
            }
        }
        Ok(())
    }

    #[test]
    fn deferred_rows_count_before_and_read_after_decoding() {
        let mut plain = Rows::new();
        plain.reset(2);
        assert!(!plain.defer(&[0, 0], bytes_as_ints), "plain rows decode now");

        let mut r = Rows::deferred();
        r.reset(2);
        assert!(r.defer(&[0, 0], bytes_as_ints));
        r.push_undecoded(&[1, 2]);
        r.push_undecoded(&[0, 9]);
        assert_eq!((r.len(), r.columns()), (2, 2));
        r.decode().unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r.int(0, 0), r.int(0, 1)), (Some(1), Some(2)));
        assert_eq!((r.int(1, 0), r.int(1, 1)), (None, Some(9)));
        // Decoding twice changes nothing; the next result starts empty.
        r.decode().unwrap();
        assert_eq!(r.int(1, 1), Some(9));
        r.reset(2);
        assert!(r.is_empty());
        assert!(r.defer(&[0, 0], bytes_as_ints));
        r.push_undecoded(&[7]);
        let e = r.decode().unwrap_err();
        assert!(e.message.contains("row of 1 cells, 2 columns"), "{}", e.message);
    }
}
