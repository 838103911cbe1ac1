//! The initial population (clause 4.3.3.1), generated row by row into reusable batches.
//!
//! Every table of a warehouse draws from its own stream seeded by (seed, table, warehouse),
//! and ITEM from (seed, item): the rows depend only on the seed, never on how many
//! connections loaded them or in which order. Money goes to the server in cents (`?/100`)
//! and rates in 1/10,000 (`?/10000`), so no decimal is formatted on the client. Dates are
//! the load's start time.

use std::io::Write as _;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use super::rand::{a_string, data_string, last_name, n_string, nurand, uniform};
use super::schema::Schema;

/// Items, stock rows per warehouse (clause 4.3.3.1).
pub const ITEMS: i64 = 100_000;
/// Districts per warehouse.
pub const DISTRICTS: i64 = 10;
/// Customers (and initial orders) per district.
pub const CUSTOMERS: i64 = 3_000;
/// Orders 2101..3000 of each district are undelivered (in NEW-ORDER).
pub const FIRST_NEW_ORDER: i64 = 2_101;
/// Rows a warehouse holds after loading, about (order lines average 10 per order).
pub const ROWS_PER_WAREHOUSE: u64 = 1 + 10 + 100_000 + 30_000 * 3 + 9_000 + 300_000;

/// One bound value of a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    /// An integer.
    Int(i64),
    /// Bytes `start..end` of the batch's text.
    Text(u32, u32),
}

/// Rows of one table waiting to be sent as one multi-row INSERT.
#[derive(Debug, Default)]
pub struct Batch {
    /// Values, row after row.
    pub vals: Vec<Val>,
    /// Text of the [`Val::Text`] values.
    pub text: Vec<u8>,
    /// Complete rows.
    pub rows: usize,
}

impl Batch {
    /// Empties the batch, keeping its memory.
    pub fn clear(&mut self) {
        self.vals.clear();
        self.text.clear();
        self.rows = 0;
    }

    /// The values as statement parameters, borrowing the batch's text (one allocation
    /// per batch).
    pub fn params(&self) -> Vec<dbperf_driver::Param<'_>> {
        use dbperf_driver::Param;
        self.vals
            .iter()
            .map(|v| match *v {
                Val::Int(i) => Param::Int(i),
                Val::Text(a, b) => Param::Bytes(&self.text[a as usize..b as usize]),
            })
            .collect()
    }

    fn int(&mut self, v: i64) {
        self.vals.push(Val::Int(v));
    }

    fn text(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        let start = self.text.len() as u32;
        f(&mut self.text);
        self.vals.push(Val::Text(start, self.text.len() as u32));
    }

    fn end_row(&mut self) {
        self.rows += 1;
    }

    /// Appends the rows as `LOAD DATA` reads them by default: fields separated by tabs,
    /// rows ended by newlines, `\` escaping a tab, newline or backslash inside a value.
    pub fn write_tsv(&self, out: &mut Vec<u8>) {
        let per_row = self.vals.len().checked_div(self.rows).unwrap_or(1).max(1);
        for (i, v) in self.vals.iter().enumerate() {
            match *v {
                Val::Int(n) => {
                    let _ = write!(out, "{n}");
                }
                Val::Text(a, b) => {
                    for &c in &self.text[a as usize..b as usize] {
                        match c {
                            b'\t' => out.extend_from_slice(b"\\t"),
                            b'\n' => out.extend_from_slice(b"\\n"),
                            b'\\' => out.extend_from_slice(b"\\\\"),
                            c => out.push(c),
                        }
                    }
                }
            }
            out.push(if (i + 1) % per_row == 0 { b'\n' } else { b'\t' });
        }
    }
}

/// A table's INSERT: column list and one row's value expressions.
#[derive(Clone, Copy, Debug)]
pub struct InsertShape {
    /// The table.
    pub table: &'static str,
    /// `(col, col, ...)`
    pub columns: &'static str,
    /// `(?, ?/100, 'literal', ...)`
    pub row: &'static str,
}

impl InsertShape {
    /// The statement for `rows` rows.
    pub fn sql(&self, rows: usize) -> String {
        let mut s = format!("INSERT INTO {} {} VALUES {}", self.table, self.columns, self.row);
        for _ in 1..rows {
            s.push(',');
            s.push_str(self.row);
        }
        s
    }
}

impl InsertShape {
    /// The `LOAD DATA LOCAL INFILE` statement that takes the values of [`Batch::write_tsv`]
    /// and stores what [`InsertShape::sql`] would: a bare `?` goes straight into its column,
    /// an expression over `?` (`?/100`, `NULLIF(?,0)`) reads the field into a user variable
    /// and SETs the column from it, and a literal is SET as is.
    pub fn load_data_sql(&self) -> String {
        let (columns, exprs) = self.columns_and_values();
        assert_eq!(columns.len(), exprs.len(), "{}: columns and values differ", self.table);
        let (mut fields, mut sets) = (Vec::new(), Vec::new());
        for (i, (col, expr)) in columns.iter().zip(&exprs).enumerate() {
            match (*expr == "?", expr.contains('?')) {
                (true, _) => fields.push(col.to_string()),
                (false, true) => {
                    fields.push(format!("@f{i}"));
                    sets.push(format!("{col} = {}", expr.replace('?', &format!("@f{i}"))));
                }
                (false, false) => sets.push(format!("{col} = {expr}")),
            }
        }
        let mut sql = format!(
            "LOAD DATA LOCAL INFILE 'dbperf-tpcc-{}' INTO TABLE {} CHARACTER SET latin1 ({})",
            self.table,
            self.table,
            fields.join(",")
        );
        if !sets.is_empty() {
            sql.push_str(" SET ");
            sql.push_str(&sets.join(", "));
        }
        sql
    }
}

/// How COPY gets one column of an [`InsertShape`] row: COPY takes values, not
/// expressions, so the client evaluates them.
#[derive(Clone, Debug, PartialEq, Eq)]
enum CopyField {
    /// `?`: the value as is.
    Value,
    /// `?/N`: an integer in 1/N units, written as a decimal.
    Scaled(i64),
    /// `NULLIF(?,0)` / `NULLIF(?,'')`: NULL when the value is 0 or empty.
    NullIfEmpty,
    /// A literal (quotes removed).
    Literal(String),
}

impl InsertShape {
    /// The column names and the row's value expressions, in order.
    fn columns_and_values(&self) -> (Vec<&'static str>, Vec<&'static str>) {
        let columns = self.columns.trim_matches(|c| c == '(' || c == ')').split(',').collect();
        let values = split_top_level(
            self.row
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .unwrap_or(self.row),
        );
        (columns, values)
    }

    fn copy_fields(&self) -> (Vec<&'static str>, Vec<CopyField>) {
        let (columns, exprs) = self.columns_and_values();
        let fields = exprs
            .iter()
            .map(|e| match *e {
                "?" => CopyField::Value,
                e if e.starts_with("NULLIF(?") => CopyField::NullIfEmpty,
                e if e.starts_with("?/") => CopyField::Scaled(e[2..].parse().expect("?/N with a number")),
                e => CopyField::Literal(e.trim_matches('\'').to_string()),
            })
            .collect();
        (columns, fields)
    }

    /// The `COPY ... FROM STDIN` statement that takes [`Batch::write_copy`]'s text.
    pub fn copy_sql(&self) -> String {
        let (columns, _) = self.copy_fields();
        format!("COPY {} ({}) FROM STDIN", self.table, columns.join(","))
    }

    /// Appends `b`'s rows in COPY's text format, with every expression of the row
    /// evaluated: the rows store what [`InsertShape::sql`] would.
    pub fn write_copy(&self, b: &Batch, out: &mut Vec<u8>) {
        let (_, fields) = self.copy_fields();
        let mut vals = b.vals.iter();
        for _ in 0..b.rows {
            for (i, f) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(b'\t');
                }
                if let CopyField::Literal(l) = f {
                    out.extend_from_slice(l.as_bytes());
                    continue;
                }
                let Some(v) = vals.next() else { return };
                match (f, *v) {
                    (CopyField::NullIfEmpty, Val::Int(0)) => out.extend_from_slice(b"\\N"),
                    (CopyField::NullIfEmpty, Val::Text(a, z)) if a == z => out.extend_from_slice(b"\\N"),
                    (CopyField::Scaled(n), Val::Int(x)) => {
                        let digits = n.ilog10() as usize;
                        let sign = if x < 0 { "-" } else { "" };
                        let _ = write!(out, "{sign}{}.{:0digits$}", x.abs() / n, x.abs() % n);
                    }
                    (_, Val::Int(x)) => {
                        let _ = write!(out, "{x}");
                    }
                    (_, Val::Text(a, z)) => {
                        for &c in &b.text[a as usize..z as usize] {
                            match c {
                                b'\t' => out.extend_from_slice(b"\\t"),
                                b'\n' => out.extend_from_slice(b"\\n"),
                                b'\\' => out.extend_from_slice(b"\\\\"),
                                c => out.push(c),
                            }
                        }
                    }
                }
            }
            out.push(b'\n');
        }
    }
}

/// Splits on commas outside parentheses and quotes.
fn split_top_level(s: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut quoted, mut start) = (Vec::new(), 0, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s[start..].trim());
    parts
}

/// The tables in the order a warehouse is loaded, with their INSERT shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Item,
    Warehouse,
    District,
    Stock,
    Customer,
    History,
    Orders,
    NewOrder,
    OrderLine,
}

impl Table {
    /// A warehouse's tables, in load order.
    pub const WAREHOUSE: [Table; 8] = [
        Table::Warehouse,
        Table::District,
        Table::Stock,
        Table::Customer,
        Table::History,
        Table::Orders,
        Table::NewOrder,
        Table::OrderLine,
    ];

    /// Its INSERT.
    pub fn shape(self, schema: &Schema) -> InsertShape {
        match self {
            Table::Item => InsertShape { table: "item", columns: "(i_id,i_im_id,i_name,i_price,i_data)", row: "(?,?,?,?/100,?)" },
            Table::Warehouse => InsertShape {
                table: "warehouse",
                columns: "(w_id,w_name,w_street_1,w_street_2,w_city,w_state,w_zip,w_tax,w_ytd)",
                row: "(?,?,?,?,?,?,?,?/10000,300000.00)",
            },
            Table::District => InsertShape {
                table: "district",
                columns: "(d_id,d_w_id,d_name,d_street_1,d_street_2,d_city,d_state,d_zip,d_tax,d_ytd,d_next_o_id)",
                row: "(?,?,?,?,?,?,?,?,?/10000,30000.00,3001)",
            },
            Table::Stock => InsertShape {
                table: "stock",
                columns: "(s_i_id,s_w_id,s_quantity,s_dist_01,s_dist_02,s_dist_03,s_dist_04,s_dist_05,s_dist_06,s_dist_07,s_dist_08,s_dist_09,s_dist_10,s_ytd,s_order_cnt,s_remote_cnt,s_data)",
                row: "(?,?,?,?,?,?,?,?,?,?,?,?,?,0,0,0,?)",
            },
            Table::Customer => InsertShape {
                table: "customer",
                columns: "(c_id,c_d_id,c_w_id,c_first,c_middle,c_last,c_street_1,c_street_2,c_city,c_state,c_zip,c_phone,c_since,c_credit,c_credit_lim,c_discount,c_balance,c_ytd_payment,c_payment_cnt,c_delivery_cnt,c_data)",
                row: "(?,?,?,?,'OE',?,?,?,?,?,?,?,?,?,50000.00,?/10000,-10.00,10.00,1,0,?)",
            },
            Table::History => InsertShape {
                table: "history",
                columns: "(h_c_id,h_c_d_id,h_c_w_id,h_d_id,h_w_id,h_date,h_amount,h_data)",
                row: "(?,?,?,?,?,?,10.00,?)",
            },
            Table::Orders => InsertShape {
                table: "orders",
                columns: "(o_id,o_d_id,o_w_id,o_c_id,o_entry_d,o_carrier_id,o_ol_cnt,o_all_local)",
                row: "(?,?,?,?,?,NULLIF(?,0),?,1)",
            },
            Table::NewOrder => InsertShape {
                table: schema.new_order(),
                columns: "(no_o_id,no_d_id,no_w_id)",
                row: "(?,?,?)",
            },
            Table::OrderLine => InsertShape {
                table: "order_line",
                columns: "(ol_o_id,ol_d_id,ol_w_id,ol_number,ol_i_id,ol_supply_w_id,ol_delivery_d,ol_quantity,ol_amount,ol_dist_info)",
                row: "(?,?,?,?,?,?,NULLIF(?,''),5,?/100,?)",
            },
        }
    }
}

/// What every generator needs.
#[derive(Clone, Debug)]
pub struct LoadParams {
    /// Seed of the data.
    pub seed: u64,
    /// NURand's C for C_LAST during the load.
    pub c_last: i64,
    /// `YYYY-MM-DD HH:MM:SS` of the load.
    pub now: String,
}

fn stream(seed: u64, table: Table, w: i64) -> SmallRng {
    SmallRng::seed_from_u64(
        seed ^ (table as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (w as u64).wrapping_mul(0xd1b5_4a32_d192_ed03),
    )
}

/// Generates the rows of one table for one warehouse (or ITEM), batch by batch.
pub struct RowGen<'p> {
    table: Table,
    w: i64,
    p: &'p LoadParams,
    rng: SmallRng,
    /// Position: (district, row within district or item id, order line).
    d: i64,
    i: i64,
    line: i64,
    /// Per district: the customer of each order, and each order's line count.
    plan: &'p OrderPlan,
    name: Vec<u8>,
}

/// The random permutation of customers over orders and the line counts, per district,
/// shared by ORDERS and ORDER-LINE.
#[derive(Debug, Default)]
pub struct OrderPlan {
    customer: Vec<u16>,
    lines: Vec<u8>,
}

impl OrderPlan {
    /// The plan of warehouse `w`.
    pub fn new(seed: u64, w: i64) -> OrderPlan {
        let mut rng = stream(seed, Table::Orders, -w);
        let mut plan = OrderPlan::default();
        for _ in 0..DISTRICTS {
            let start = plan.customer.len();
            plan.customer.extend(1..=CUSTOMERS as u16);
            let slice = &mut plan.customer[start..];
            for i in (1..slice.len()).rev() {
                slice.swap(i, uniform(&mut rng, 0, i as i64) as usize);
            }
            plan.lines
                .extend((0..CUSTOMERS).map(|_| uniform(&mut rng, 5, 15) as u8));
        }
        plan
    }

    fn at(&self, d: i64, o: i64) -> usize {
        ((d - 1) * CUSTOMERS + o - 1) as usize
    }

    /// Lines of order `o` of district `d`.
    pub fn lines(&self, d: i64, o: i64) -> i64 {
        self.lines[self.at(d, o)] as i64
    }

    fn customer(&self, d: i64, o: i64) -> i64 {
        self.customer[self.at(d, o)] as i64
    }
}

impl<'p> RowGen<'p> {
    /// Rows of `table` for warehouse `w` (ignored for ITEM).
    pub fn new(table: Table, w: i64, p: &'p LoadParams, plan: &'p OrderPlan) -> RowGen<'p> {
        let first_i = if table == Table::NewOrder { FIRST_NEW_ORDER } else { 1 };
        RowGen {
            table,
            w,
            p,
            rng: stream(p.seed, table, if table == Table::Item { 0 } else { w }),
            d: 1,
            i: first_i,
            line: 1,
            plan,
            name: Vec::with_capacity(16),
        }
    }

    /// Adds rows to `b` until it holds `max` rows or the table is done; false when done.
    pub fn fill(&mut self, b: &mut Batch, max: usize) -> bool {
        while b.rows < max {
            if !self.row(b) {
                return false;
            }
        }
        true
    }

    fn address(&mut self, b: &mut Batch) {
        let r = &mut self.rng;
        b.text(|t| a_string(r, 10, 20, t));
        b.text(|t| a_string(r, 10, 20, t));
        b.text(|t| a_string(r, 10, 20, t));
        b.text(|t| a_string(r, 2, 2, t));
        b.text(|t| {
            n_string(r, 4, t);
            t.extend_from_slice(b"11111");
        });
    }

    /// Appends the next row; false when the table is complete.
    fn row(&mut self, b: &mut Batch) -> bool {
        let w = self.w;
        let (d, i) = (self.d, self.i);
        let per_district = |g: &mut RowGen<'_>, last: i64| {
            if g.i == last {
                g.i = if g.table == Table::NewOrder { FIRST_NEW_ORDER } else { 1 };
                g.d += 1;
            } else {
                g.i += 1;
            }
        };
        match self.table {
            Table::Item => {
                if i > ITEMS {
                    return false;
                }
                let r = &mut self.rng;
                b.int(i);
                b.int(uniform(r, 1, 10_000));
                b.text(|t| a_string(r, 14, 24, t));
                b.int(uniform(r, 100, 10_000));
                b.text(|t| data_string(r, 26, 50, t));
                self.i += 1;
            }
            Table::Warehouse => {
                if i > 1 {
                    return false;
                }
                b.int(w);
                let r = &mut self.rng;
                b.text(|t| a_string(r, 6, 10, t));
                self.address(b);
                b.int(uniform(&mut self.rng, 0, 2000));
                self.i += 1;
            }
            Table::District => {
                if i > DISTRICTS {
                    return false;
                }
                b.int(i);
                b.int(w);
                let r = &mut self.rng;
                b.text(|t| a_string(r, 6, 10, t));
                self.address(b);
                b.int(uniform(&mut self.rng, 0, 2000));
                self.i += 1;
            }
            Table::Stock => {
                if i > ITEMS {
                    return false;
                }
                let r = &mut self.rng;
                b.int(i);
                b.int(w);
                b.int(uniform(r, 10, 100));
                for _ in 0..10 {
                    b.text(|t| a_string(r, 24, 24, t));
                }
                b.text(|t| data_string(r, 26, 50, t));
                self.i += 1;
            }
            Table::Customer => {
                if d > DISTRICTS {
                    return false;
                }
                let r = &mut self.rng;
                b.int(i);
                b.int(d);
                b.int(w);
                b.text(|t| a_string(r, 8, 16, t));
                let n = if i <= 1000 {
                    i - 1
                } else {
                    nurand(r, 255, 0, 999, self.p.c_last)
                };
                last_name(n, &mut self.name);
                let name = &self.name;
                b.text(|t| t.extend_from_slice(name));
                self.address(b);
                let r = &mut self.rng;
                b.text(|t| n_string(r, 16, t));
                let now = self.p.now.as_bytes();
                b.text(|t| t.extend_from_slice(now));
                let credit: &[u8] = if uniform(r, 1, 10) == 1 { b"BC" } else { b"GC" };
                b.text(|t| t.extend_from_slice(credit));
                b.int(uniform(r, 0, 5000));
                b.text(|t| a_string(r, 300, 500, t));
                per_district(self, CUSTOMERS);
            }
            Table::History => {
                if d > DISTRICTS {
                    return false;
                }
                for v in [i, d, w, d, w] {
                    b.int(v);
                }
                let now = self.p.now.as_bytes();
                b.text(|t| t.extend_from_slice(now));
                let r = &mut self.rng;
                b.text(|t| a_string(r, 12, 24, t));
                per_district(self, CUSTOMERS);
            }
            Table::Orders => {
                if d > DISTRICTS {
                    return false;
                }
                for v in [i, d, w, self.plan.customer(d, i)] {
                    b.int(v);
                }
                let now = self.p.now.as_bytes();
                b.text(|t| t.extend_from_slice(now));
                let carrier = if i < FIRST_NEW_ORDER {
                    uniform(&mut self.rng, 1, 10)
                } else {
                    0
                };
                b.int(carrier);
                b.int(self.plan.lines(d, i));
                per_district(self, CUSTOMERS);
            }
            Table::NewOrder => {
                if d > DISTRICTS {
                    return false;
                }
                for v in [i, d, w] {
                    b.int(v);
                }
                per_district(self, CUSTOMERS);
            }
            Table::OrderLine => {
                if d > DISTRICTS {
                    return false;
                }
                let r = &mut self.rng;
                for v in [i, d, w, self.line, uniform(r, 1, ITEMS), w] {
                    b.int(v);
                }
                let delivered = i < FIRST_NEW_ORDER;
                let now: &[u8] = if delivered { self.p.now.as_bytes() } else { b"" };
                b.text(|t| t.extend_from_slice(now));
                b.int(if delivered { 0 } else { uniform(r, 1, 999_999) });
                b.text(|t| a_string(r, 24, 24, t));
                if self.line == self.plan.lines(d, i) {
                    self.line = 1;
                    per_district(self, CUSTOMERS);
                } else {
                    self.line += 1;
                }
            }
        }
        b.end_row();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_data_statements_store_what_the_inserts_store() {
        let schema = Schema {
            kind: super::super::schema::SchemaKind::Dbperf,
            history_pk: false,
            family: dbperf_driver::target::Family::Mysql,
        };
        assert_eq!(
            Table::Orders.shape(&schema).load_data_sql(),
            "LOAD DATA LOCAL INFILE 'dbperf-tpcc-orders' INTO TABLE orders CHARACTER SET latin1 \
             (o_id,o_d_id,o_w_id,o_c_id,o_entry_d,@f5,o_ol_cnt) SET o_carrier_id = NULLIF(@f5,0), o_all_local = 1"
        );
        let item = Table::Item.shape(&schema).load_data_sql();
        assert!(
            item.ends_with("(i_id,i_im_id,i_name,@f3,i_data) SET i_price = @f3/100"),
            "{item}"
        );
        for t in Table::WAREHOUSE {
            let shape = t.shape(&schema);
            let sql = shape.load_data_sql();
            let fields = sql[sql.rfind('(').unwrap()..].matches(',').count();
            assert!(sql.contains(shape.table) && fields > 0, "{sql}");
        }
    }

    #[test]
    fn copy_rows_carry_the_values_the_inserts_compute() {
        let schema = Schema {
            kind: super::super::schema::SchemaKind::Dbperf,
            history_pk: false,
            family: dbperf_driver::target::Family::Postgres,
        };
        let shape = Table::Orders.shape(&schema);
        assert_eq!(
            shape.copy_sql(),
            "COPY orders (o_id,o_d_id,o_w_id,o_c_id,o_entry_d,o_carrier_id,o_ol_cnt,o_all_local) FROM STDIN"
        );
        let mut b = Batch::default();
        for carrier in [0, 7] {
            b.int(5);
            b.int(1);
            b.int(2);
            b.int(9);
            b.text(|t| t.extend_from_slice(b"2026-11-22 10:00:00"));
            b.int(carrier);
            b.int(11);
            b.end_row();
        }
        let mut out = Vec::new();
        shape.write_copy(&b, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "5\t1\t2\t9\t2026-11-22 10:00:00\t\\N\t11\t1\n5\t1\t2\t9\t2026-11-22 10:00:00\t7\t11\t1\n"
        );
        let mut b = Batch::default();
        b.int(3);
        b.int(4);
        b.text(|t| t.extend_from_slice(b"name"));
        b.int(1005);
        b.text(|t| t.extend_from_slice(b"data"));
        b.end_row();
        let mut out = Vec::new();
        Table::Item.shape(&schema).write_copy(&b, &mut out);
        assert_eq!(out, b"3\t4\tname\t10.05\tdata\n");
    }

    #[test]
    fn tsv_rows_escape_what_load_data_would_split_on() {
        let mut b = Batch::default();
        b.int(-7);
        b.text(|t| t.extend_from_slice(b"a\tb\\c\nd"));
        b.end_row();
        b.int(8);
        b.text(|t| t.extend_from_slice(b"plain"));
        b.end_row();
        let mut out = Vec::new();
        b.write_tsv(&mut out);
        assert_eq!(out, b"-7\ta\\tb\\\\c\\nd\n8\tplain\n".to_vec());
    }

    fn all_rows(table: Table, w: i64, p: &LoadParams, plan: &OrderPlan) -> Batch {
        let mut b = Batch::default();
        let mut g = RowGen::new(table, w, p, plan);
        while g.fill(&mut b, usize::MAX) {}
        b
    }

    #[test]
    fn row_counts_and_shapes_match_clause_4_3_3_1() {
        let p = LoadParams {
            seed: 7,
            c_last: 100,
            now: "2026-01-01 00:00:00".into(),
        };
        let plan = OrderPlan::new(p.seed, 3);
        let schema = Schema {
            kind: super::super::schema::SchemaKind::Dbperf,
            history_pk: false,
            family: dbperf_driver::target::Family::Mysql,
        };
        let lines: i64 = (1..=DISTRICTS)
            .flat_map(|d| (1..=CUSTOMERS).map(move |o| (d, o)))
            .map(|(d, o)| plan.lines(d, o))
            .sum();
        for (t, rows) in [
            (Table::Warehouse, 1),
            (Table::District, 10),
            (Table::Customer, 30_000),
            (Table::History, 30_000),
            (Table::Orders, 30_000),
            (Table::NewOrder, 9_000),
            (Table::OrderLine, lines),
        ] {
            let b = all_rows(t, 3, &p, &plan);
            assert_eq!(b.rows as i64, rows, "{t:?}");
            let params = t.shape(&schema).row.matches('?').count();
            assert_eq!(b.vals.len(), b.rows * params, "{t:?}");
        }
        // The same seed gives the same rows.
        let a = all_rows(Table::Customer, 3, &p, &plan);
        let b = all_rows(Table::Customer, 3, &p, &plan);
        assert_eq!((a.vals, a.text), (b.vals, b.text));
    }
}
