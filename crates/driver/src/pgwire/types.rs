//! Values between dbperf and PostgreSQL's binary format, shared by both PostgreSQL
//! sessions: a [`Param`] encoded for the type the server inferred for its placeholder,
//! and a result cell pushed into [`Rows`] (integers and floats as numbers, `numeric` as
//! its decimal text, anything else as the bytes the server sent).

use bytes::{BufMut, BytesMut};
use postgres_types::{IsNull, Type};

use crate::{Param, Rows};

/// Why a parameter could not be encoded.
pub(crate) type EncodeError = Box<dyn std::error::Error + Sync + Send>;

/// A parameter that is not NULL.
#[derive(Clone, Copy)]
enum Given<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

/// Encodes `p` in the binary format of `ty`: an `Int` bound to a `text` placeholder goes
/// as its digits, `Bytes` bound to an `int4` as the parsed number. `Null` writes nothing
/// and answers [`IsNull::Yes`] (the message then says length -1), whatever the type.
pub(crate) fn encode_param(ty: &Type, p: Param<'_>, out: &mut BytesMut) -> Result<IsNull, EncodeError> {
    let p = match p {
        Param::Null => return Ok(IsNull::Yes),
        Param::Int(i) => Given::Int(i),
        Param::Bytes(b) => Given::Bytes(b),
    };
    let int = |p: Given<'_>| -> Result<i64, EncodeError> {
        match p {
            Given::Int(i) => Ok(i),
            Given::Bytes(b) => Ok(std::str::from_utf8(b)?.trim().parse()?),
        }
    };
    match *ty {
        Type::INT2 => out.put_i16(i16::try_from(int(p)?)?),
        Type::INT4 => out.put_i32(i32::try_from(int(p)?)?),
        Type::INT8 => out.put_i64(int(p)?),
        Type::OID => out.put_u32(u32::try_from(int(p)?)?),
        Type::FLOAT8 => out.put_f64(match p {
            Given::Int(i) => i as f64,
            Given::Bytes(b) => std::str::from_utf8(b)?.trim().parse()?,
        }),
        Type::FLOAT4 => out.put_f32(match p {
            Given::Int(i) => i as f32,
            Given::Bytes(b) => std::str::from_utf8(b)?.trim().parse()?,
        }),
        Type::NUMERIC => numeric_from_int(int(p)?, out),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN | Type::BYTEA => match p {
            Given::Int(i) => {
                use std::fmt::Write as _;
                write!(out, "{i}")?
            }
            Given::Bytes(b) => out.put_slice(b),
        },
        ref other => {
            return Err(format!(
                "dbperf cannot bind a parameter of type {other} yet; cast the placeholder (CAST(? AS TEXT)) in the statement"
            )
            .into())
        }
    }
    Ok(IsNull::No)
}

/// Pushes one binary result cell of type `ty` (`None` is NULL) into `rows`.
pub(crate) fn push_cell(rows: &mut Rows, ty: &Type, v: Option<&[u8]>) {
    let Some(v) = v else {
        rows.push_null();
        return;
    };
    let be = |n: usize| v.get(..n).map(|b| b.iter().fold(0i64, |a, &x| (a << 8) | x as i64));
    match *ty {
        Type::INT2 => rows.push_int(be(2).unwrap_or(0) as i16 as i64),
        Type::INT4 => rows.push_int(be(4).unwrap_or(0) as i32 as i64),
        Type::INT8 => rows.push_int(be(8).unwrap_or(0)),
        Type::OID => rows.push_int(be(4).unwrap_or(0) as u32 as i64),
        Type::BOOL => rows.push_int(v.first().map_or(0, |&b| b as i64)),
        Type::FLOAT4 => rows.push_float(
            v.get(..4)
                .map_or(f32::NAN, |b| f32::from_be_bytes([b[0], b[1], b[2], b[3]])) as f64,
        ),
        Type::FLOAT8 => rows.push_float(v.get(..8).map_or(f64::NAN, |b| {
            f64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
        })),
        Type::NUMERIC => rows.push_bytes(numeric_text(v).unwrap_or_default().as_bytes()),
        _ => rows.push_bytes(v),
    }
}

/// Encodes an integer as a binary `numeric`: digit count, weight, sign, display scale,
/// then base-10,000 digits, most significant first.
pub(crate) fn numeric_from_int(v: i64, out: &mut BytesMut) {
    let mut rest = v.unsigned_abs();
    let mut digits = Vec::new();
    while rest > 0 {
        digits.push((rest % 10_000) as i16);
        rest /= 10_000;
    }
    digits.reverse();
    let weight = digits.len() as i16 - 1;
    // Trailing zero groups are implied by the weight.
    while digits.last() == Some(&0) {
        digits.pop();
    }
    out.put_i16(digits.len() as i16);
    out.put_i16(weight.max(0));
    out.put_u16(if v < 0 { 0x4000 } else { 0 });
    out.put_i16(0);
    for d in digits {
        out.put_i16(d);
    }
}

/// Decodes a binary `numeric` into its decimal text.
pub(crate) fn numeric_text(raw: &[u8]) -> Option<String> {
    let word = |i: usize| raw.get(2 * i..2 * i + 2).map(|w| i16::from_be_bytes([w[0], w[1]]));
    let (ndigits, weight, sign, dscale) = (word(0)?, word(1)?, word(2)? as u16, word(3)?);
    if sign == 0xC000 {
        return Some("NaN".into());
    }
    let digits: Vec<i16> = (0..ndigits as usize).map(|i| word(4 + i)).collect::<Option<_>>()?;
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    }
    for w in 0..=weight.max(-1) {
        let d = digits.get(w as usize).copied().unwrap_or(0);
        if w == 0 {
            s.push_str(&d.to_string());
        } else if w > 0 {
            s.push_str(&format!("{d:04}"));
        }
    }
    if dscale > 0 {
        let mut frac = String::new();
        let mut w = weight as i32 + 1;
        while (frac.len() as i32) < dscale as i32 {
            let d = if w < 0 {
                0
            } else {
                digits.get(w as usize).copied().unwrap_or(0)
            };
            frac.push_str(&format!("{d:04}"));
            w += 1;
        }
        frac.truncate(dscale as usize);
        s.push('.');
        s.push_str(&frac);
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cell;

    #[test]
    fn integers_encode_as_numeric_and_decode_back() {
        for v in [0i64, 7, 9_999, 10_000, 10_001, 123_456_789, -42, 100_000_000, i64::MAX] {
            let mut out = BytesMut::new();
            numeric_from_int(v, &mut out);
            assert_eq!(numeric_text(&out).as_deref(), Some(v.to_string().as_str()), "{v}");
        }
    }

    #[test]
    fn numerics_decode_to_decimal_text() {
        let enc = |ndigits: i16, weight: i16, sign: u16, dscale: i16, d: &[i16]| {
            let mut v = Vec::new();
            for w in [ndigits, weight, sign as i16, dscale].iter().chain(d) {
                v.extend_from_slice(&w.to_be_bytes());
            }
            v
        };
        assert_eq!(numeric_text(&enc(2, 1, 0, 0, &[12, 3456])).unwrap(), "123456");
        assert_eq!(numeric_text(&enc(2, 0, 0x4000, 2, &[5, 2500])).unwrap(), "-5.25");
        assert_eq!(numeric_text(&enc(0, 0, 0, 0, &[])).unwrap(), "0");
        assert_eq!(numeric_text(&enc(1, -1, 0, 4, &[1200])).unwrap(), "0.1200");
        assert_eq!(numeric_text(&enc(1, -2, 0, 8, &[12])).unwrap(), "0.00000012");
        assert_eq!(numeric_text(&enc(1, 2, 0, 0, &[7])).unwrap(), "700000000");
    }

    #[test]
    fn params_encode_for_the_inferred_type() {
        let enc = |ty: &Type, p: Param<'_>| {
            let mut out = BytesMut::new();
            encode_param(ty, p, &mut out).map(|null| {
                assert!(matches!(null, IsNull::No));
                out.to_vec()
            })
        };
        assert_eq!(enc(&Type::INT4, Param::Bytes(b" 42 ")).unwrap(), 42i32.to_be_bytes());
        assert_eq!(enc(&Type::INT2, Param::Int(-3)).unwrap(), (-3i16).to_be_bytes());
        assert_eq!(
            enc(&Type::INT8, Param::Int(1 << 40)).unwrap(),
            (1i64 << 40).to_be_bytes()
        );
        assert_eq!(enc(&Type::TEXT, Param::Int(-17)).unwrap(), b"-17");
        assert_eq!(enc(&Type::FLOAT8, Param::Bytes(b"2.5")).unwrap(), 2.5f64.to_be_bytes());
        assert!(enc(&Type::INT2, Param::Int(70_000)).is_err());
        assert!(enc(&Type::INT4, Param::Bytes(b"x")).is_err());
        let e = enc(&Type::TIMESTAMP, Param::Int(0)).unwrap_err().to_string();
        assert!(e.contains("CAST(? AS TEXT)"), "{e}");
        // NULL is NULL of any type, even one dbperf cannot encode a value of.
        for ty in [Type::INT4, Type::TEXT, Type::TIMESTAMP] {
            let mut out = BytesMut::new();
            assert!(
                matches!(encode_param(&ty, Param::Null, &mut out), Ok(IsNull::Yes)),
                "{ty}"
            );
            assert!(out.is_empty());
        }
    }

    #[test]
    fn cells_decode_by_column_type() {
        let mut rows = Rows::new();
        rows.reset(6);
        push_cell(&mut rows, &Type::INT2, Some(&(-2i16).to_be_bytes()));
        push_cell(&mut rows, &Type::INT8, Some(&(1i64 << 50).to_be_bytes()));
        push_cell(&mut rows, &Type::FLOAT4, Some(&1.5f32.to_be_bytes()));
        push_cell(&mut rows, &Type::BOOL, Some(&[1]));
        push_cell(&mut rows, &Type::TEXT, Some(b"abc"));
        push_cell(&mut rows, &Type::INT4, None);
        assert_eq!(rows.int(0, 0), Some(-2));
        assert_eq!(rows.int(0, 1), Some(1 << 50));
        assert_eq!(rows.float(0, 2), Some(1.5));
        assert_eq!(rows.int(0, 3), Some(1));
        assert_eq!(rows.bytes(0, 4), Some(&b"abc"[..]));
        assert_eq!(rows.cell(0, 5), Cell::Null);
    }
}
