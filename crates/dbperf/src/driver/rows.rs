//! [`Rows`]: the rows of a prepared statement kept for the caller in reused buffers, for
//! workloads that read what they select (TPC-C). Cells are integers, floats, byte strings
//! or NULL; integer and float accessors also parse text and DECIMAL cells, so a caller
//! need not know whether the server sent a value in binary or as text.

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
}

impl Rows {
    /// Empty rows.
    pub fn new() -> Rows {
        Rows::default()
    }

    /// Empties the rows and sets the column count of the rows to come.
    pub fn reset(&mut self, columns: usize) {
        self.columns = columns;
        self.cells.clear();
        self.data.clear();
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

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.cells.len().checked_div(self.columns).unwrap_or(0)
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
}
