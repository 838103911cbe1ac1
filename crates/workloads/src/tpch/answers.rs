//! Answer sets and the spec's comparison rules (§2.1.3.5, with the column kinds of the
//! reference kit's `colprecision.txt`, kept here as data):
//!
//! | kind | rule |
//! |---|---|
//! | `str` | equal after trimming spaces |
//! | `int`, `cnt` | equal as numbers |
//! | `num` | equal to the cent (a singleton money value) |
//! | `sum` | within ±100 |
//! | `avg`, `rat` | `0.99·v ≤ round(r, 2) ≤ 1.01·v` (`v` rounded to 2 decimals too) |
//!
//! Answer files are dbgen's `q<N>.out`: a header line, then rows of `|`-separated,
//! space-padded values. The official SF 1 answers (dbgen's `answers/`, identical in 2.14
//! and 2.17.3) are compiled in ([`official_sf1`]); `--answers DIR` reads others (such as
//! small-SF golden answers) from files. `tpchgen` also ships SF 1 answers, but its Q11
//! answer has truncated part keys (`1297` for `129760`), so they are not used.

use std::path::Path;

use super::TpchError;

/// `colprecision.txt`: one line per query, the kind of each column.
const COLPRECISION: &str = include_str!("colprecision.txt");

/// A column's comparison rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Str,
    Int,
    Cnt,
    Num,
    Sum,
    Avg,
    Rat,
}

/// The column kinds of query `q`.
pub fn kinds(q: u8) -> Vec<Kind> {
    let line = COLPRECISION.lines().nth(usize::from(q) - 1).unwrap_or("");
    line.split_whitespace()
        .map(|w| match w {
            "int" => Kind::Int,
            "cnt" => Kind::Cnt,
            "num" => Kind::Num,
            "sum" => Kind::Sum,
            "avg" => Kind::Avg,
            "rat" => Kind::Rat,
            _ => Kind::Str,
        })
        .collect()
}

/// Rows of an answer file (the header dropped), values trimmed.
pub fn parse(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .skip(1)
        .map(|l| l.split('|').map(|v| v.trim().to_string()).collect())
        .collect()
}

/// The official SF 1 answers, `q1.out` .. `q22.out`.
const OFFICIAL_SF1: [&str; 22] = [
    include_str!("answers_sf1/q1.out"),
    include_str!("answers_sf1/q2.out"),
    include_str!("answers_sf1/q3.out"),
    include_str!("answers_sf1/q4.out"),
    include_str!("answers_sf1/q5.out"),
    include_str!("answers_sf1/q6.out"),
    include_str!("answers_sf1/q7.out"),
    include_str!("answers_sf1/q8.out"),
    include_str!("answers_sf1/q9.out"),
    include_str!("answers_sf1/q10.out"),
    include_str!("answers_sf1/q11.out"),
    include_str!("answers_sf1/q12.out"),
    include_str!("answers_sf1/q13.out"),
    include_str!("answers_sf1/q14.out"),
    include_str!("answers_sf1/q15.out"),
    include_str!("answers_sf1/q16.out"),
    include_str!("answers_sf1/q17.out"),
    include_str!("answers_sf1/q18.out"),
    include_str!("answers_sf1/q19.out"),
    include_str!("answers_sf1/q20.out"),
    include_str!("answers_sf1/q21.out"),
    include_str!("answers_sf1/q22.out"),
];

/// The official SF 1 answer of query `q` (1..=22).
pub fn official_sf1(q: u8) -> Vec<Vec<String>> {
    parse(OFFICIAL_SF1[usize::from(q) - 1])
}

/// Reads `dir/q<q>.out`.
pub fn read_dir(dir: &Path, q: u8) -> Result<Vec<Vec<String>>, TpchError> {
    let path = dir.join(format!("q{q}.out"));
    std::fs::read_to_string(&path)
        .map(|t| parse(&t))
        .map_err(|source| TpchError::Io {
            what: "cannot read the answer file",
            path,
            source,
        })
}

/// Writes rows as an answer file (header, then `|`-separated rows), for golden answers.
pub fn format(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = header.join("|");
    out.push('\n');
    for r in rows {
        out.push_str(&r.join("|"));
        out.push('\n');
    }
    out
}

/// Why an answer did not match.
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    /// Different numbers of rows.
    RowCount { expected: usize, got: usize },
    /// Row `row` (from 1) differs first in column `column` (from 1).
    Value {
        row: usize,
        column: usize,
        expected: Vec<String>,
        got: Vec<String>,
    },
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::RowCount { expected, got } => write!(f, "{got} rows, expected {expected}"),
            Mismatch::Value {
                row,
                column,
                expected,
                got,
            } => write!(
                f,
                "row {row} column {column}: got [{}], expected [{}]",
                got.join("|"),
                expected.join("|")
            ),
        }
    }
}

/// Compares `got` with `expected` under query `q`'s rules; the first difference.
pub fn compare(q: u8, expected: &[Vec<String>], got: &[Vec<String>]) -> Result<(), Mismatch> {
    let kinds = kinds(q);
    for (i, (e, g)) in expected.iter().zip(got).enumerate() {
        let columns = e.len().max(g.len());
        for c in 0..columns {
            let kind = kinds.get(c).copied().unwrap_or(Kind::Str);
            let ok = match (e.get(c), g.get(c)) {
                (Some(ev), Some(gv)) => value_matches(kind, ev, gv),
                _ => false,
            };
            if !ok {
                return Err(Mismatch::Value {
                    row: i + 1,
                    column: c + 1,
                    expected: e.clone(),
                    got: g.clone(),
                });
            }
        }
    }
    if expected.len() != got.len() {
        return Err(Mismatch::RowCount {
            expected: expected.len(),
            got: got.len(),
        });
    }
    Ok(())
}

fn value_matches(kind: Kind, expected: &str, got: &str) -> bool {
    if kind == Kind::Str {
        return expected.trim() == got.trim();
    }
    let (Ok(v), Ok(r)) = (expected.trim().parse::<f64>(), got.trim().parse::<f64>()) else {
        return expected.trim() == got.trim();
    };
    match kind {
        Kind::Str => unreachable!(),
        Kind::Int | Kind::Cnt => v == r,
        Kind::Num => (v - r).abs() < 0.005,
        Kind::Sum => (v - r).abs() <= 100.0,
        Kind::Avg | Kind::Rat => {
            // The official answers carry 2 decimals; golden answers may carry more.
            let (r, v) = ((r * 100.0).round() / 100.0, (v * 100.0).round() / 100.0);
            let (lo, hi) = if v >= 0.0 {
                (0.99 * v, 1.01 * v)
            } else {
                (1.01 * v, 0.99 * v)
            };
            // A cent of slack for values stored in binary floating point.
            lo - 1e-9 <= r && r <= hi + 1e-9
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_follow_the_spec() {
        assert_eq!(kinds(1)[..3], [Kind::Str, Kind::Str, Kind::Sum]);
        assert_eq!(kinds(22), vec![Kind::Num, Kind::Cnt, Kind::Sum]);
        let e = parse("a|b|sum_qty|x|y|z|avg_qty|p|avg_disc|count_order\nA|F|100.00|1|1|1|25.52|1|0.05|10\n");
        let mut g = e.clone();
        g[0][2] = "199.99".into();
        g[0][6] = "25.3".into();
        g[0][8] = "0.049985".into();
        assert_eq!(compare(1, &e, &g), Ok(()));
        g[0][9] = "11".into();
        assert!(matches!(
            compare(1, &e, &g),
            Err(Mismatch::Value { row: 1, column: 10, .. })
        ));
        assert!(matches!(
            compare(1, &e, &[]),
            Err(Mismatch::RowCount { expected: 1, got: 0 })
        ));
        assert_eq!(official_sf1(15)[0][0], "8449");
        assert_eq!(official_sf1(1).len(), 4);
        assert_eq!(
            official_sf1(11)[0],
            vec!["129760".to_string(), "17538456.86".to_string()]
        );
        assert_eq!(official_sf1(16).len(), 18314);
    }
}
