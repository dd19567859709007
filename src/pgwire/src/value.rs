//! Datums on the wire: result values in text or binary format, and bound
//! parameters decoded from either.
//!
//! Text is PostgreSQL's text format (`common::text`). Binary is PostgreSQL's
//! `send`/`recv` format for each built-in type: big-endian integers and
//! floats, `date` as days and `timestamp` as microseconds since 2000-01-01,
//! `interval` as (microseconds, days, months), and `numeric` as base-10000
//! digit groups. Every function here is fed by the network, so each failure
//! is an error for the client, never a panic.

use bytes::{BufMut, BytesMut};
use chrono::{NaiveDate, NaiveDateTime, TimeDelta};
use ebbflow_common::ErrorKind;
use rust_decimal::Decimal;

use ebbflow_common::text::{format_datum_in, parse_datum_in};
use ebbflow_common::{DataType, Datum, ElemType, Interval, Numeric, ScalarValue, Zone};
use ebbflow_frontend::FrontendError;

/// The wire format of one value, chosen per column by the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Format {
    Text,
    Binary,
}

/// Expand the format codes of a Bind message to one format per value: no
/// code means all text, one code applies to all, otherwise one per value.
pub(super) fn resolve_formats(
    codes: &[i16],
    count: usize,
    mismatch: impl FnOnce() -> String,
) -> Result<Vec<Format>, FrontendError> {
    let one = |code: i16| match code {
        0 => Ok(Format::Text),
        1 => Ok(Format::Binary),
        _ => Err(FrontendError::new(
            ErrorKind::InvalidParameterValue,
            format!("unsupported format code: {code}"),
        )),
    };
    match codes {
        [] => Ok(vec![Format::Text; count]),
        [code] => Ok(vec![one(*code)?; count]),
        _ if codes.len() == count => codes.iter().map(|c| one(*c)).collect(),
        _ => Err(FrontendError::new(ErrorKind::ProtocolViolation, mismatch())),
    }
}

/// PostgreSQL's `pg_type.typlen`, reported in RowDescription.
pub(super) fn type_size(ty: DataType) -> i16 {
    match ty {
        DataType::Boolean => 1,
        DataType::Int16 => 2,
        DataType::Int32 | DataType::Float32 | DataType::Date => 4,
        DataType::Int64
        | DataType::Float64
        | DataType::Timestamp
        | DataType::Timestamptz
        | DataType::Time => 8,
        DataType::Interval | DataType::Uuid => 16,
        DataType::Decimal
        | DataType::Varchar
        | DataType::Array(_)
        | DataType::Jsonb
        | DataType::Bytea => -1,
    }
}

/// Append one DataRow column (length word and bytes, or -1 for NULL) for a
/// value of a column of type `ty`.
pub(super) fn encode_value(
    buf: &mut BytesMut,
    ty: DataType,
    value: &Datum,
    format: Format,
    zone: &Zone,
) -> Result<(), FrontendError> {
    let Some(value) = value else {
        buf.put_i32(-1);
        return Ok(());
    };
    let len_at = buf.len();
    buf.put_i32(0);
    match format {
        Format::Text => buf.put_slice(format_datum_in(value, zone).as_bytes()),
        Format::Binary => encode_binary(buf, ty, value)?,
    }
    let len = i32::try_from(buf.len() - len_at - 4).map_err(|_| {
        FrontendError::new(ErrorKind::ProgramLimitExceeded, "result value is too large")
    })?;
    buf[len_at..len_at + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

/// 2000-01-01 00:00 UTC in microseconds since 1970.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

fn pg_epoch_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(2000, 1, 1).unwrap_or_default()
}

fn pg_epoch() -> NaiveDateTime {
    pg_epoch_date().and_hms_opt(0, 0, 0).unwrap_or_default()
}

/// Binary `send` format of `value` for a column of type `ty`. Values are
/// expected to have the column's type; integer and float widths and
/// integer-to-numeric are coerced so a slightly loose executor never sends
/// bytes of the wrong length.
fn encode_binary(
    buf: &mut BytesMut,
    ty: DataType,
    value: &ScalarValue,
) -> Result<(), FrontendError> {
    let mismatch = || {
        FrontendError::internal(format!(
            "cannot send a {} value in a column of type {}",
            value.data_type(),
            ty
        ))
    };
    let out_of_range = || {
        FrontendError::new(
            ErrorKind::NumericValueOutOfRange,
            format!("{ty} out of range"),
        )
    };
    match ty {
        DataType::Array(elem) => {
            // `array_send`: dimensions (0 for an empty array), a has-NULLs
            // flag, the element OID, per dimension its length and lower
            // bound, then each element as a length word and its own send
            // format (-1 for NULL).
            let a = value.as_array().ok_or_else(mismatch)?;
            let n = i32::try_from(a.items.len()).map_err(|_| {
                FrontendError::new(ErrorKind::ProgramLimitExceeded, "array is too large")
            })?;
            buf.put_i32(if n == 0 { 0 } else { 1 });
            buf.put_i32(i32::from(a.items.iter().any(Option::is_none)));
            buf.put_u32(elem.data_type().oid());
            if n > 0 {
                buf.put_i32(n);
                buf.put_i32(1);
            }
            for item in &a.items {
                encode_value(buf, elem.data_type(), item, Format::Binary, &Zone::UTC)?;
            }
        }
        DataType::Int16 => {
            let v = value.as_i64().ok_or_else(mismatch)?;
            buf.put_i16(i16::try_from(v).map_err(|_| out_of_range())?);
        }
        DataType::Int32 => {
            let v = value.as_i64().ok_or_else(mismatch)?;
            buf.put_i32(i32::try_from(v).map_err(|_| out_of_range())?);
        }
        DataType::Int64 => buf.put_i64(value.as_i64().ok_or_else(mismatch)?),
        DataType::Float32 | DataType::Float64 => {
            let v = match value {
                ScalarValue::Float32(f) | ScalarValue::Float64(f) => f.0,
                _ => return Err(mismatch()),
            };
            if ty == DataType::Float32 {
                buf.put_f32(v as f32);
            } else {
                buf.put_f64(v);
            }
        }
        DataType::Decimal => {
            let d = match value {
                ScalarValue::Decimal(Numeric::Finite(d)) => *d,
                ScalarValue::Decimal(special) => {
                    // No digits, weight 0, the special's sign word, dscale 0.
                    buf.put_i16(0);
                    buf.put_i16(0);
                    buf.put_u16(match special {
                        Numeric::PosInf => NUMERIC_PINF,
                        Numeric::NegInf => NUMERIC_NINF,
                        _ => NUMERIC_NAN,
                    });
                    buf.put_u16(0);
                    return Ok(());
                }
                v => Decimal::from(v.as_i64().ok_or_else(mismatch)?),
            };
            encode_numeric(buf, &d);
        }
        DataType::Varchar => buf.put_slice(value.as_str().ok_or_else(mismatch)?.as_bytes()),
        DataType::Time => {
            let ScalarValue::Time(t) = value else {
                return Err(mismatch());
            };
            buf.put_i64(*t);
        }
        DataType::Bytea => {
            let ScalarValue::Bytea(b) = value else {
                return Err(mismatch());
            };
            buf.put_slice(b);
        }
        DataType::Uuid => {
            let ScalarValue::Uuid(u) = value else {
                return Err(mismatch());
            };
            buf.put_slice(&u.to_be_bytes());
        }
        // `jsonb_send`: a version byte (1), then the text form.
        DataType::Jsonb => {
            let ScalarValue::Jsonb(j) = value else {
                return Err(mismatch());
            };
            buf.put_u8(1);
            buf.put_slice(j.to_text().as_bytes());
        }
        DataType::Boolean => buf.put_u8(u8::from(value.as_bool().ok_or_else(mismatch)?)),
        DataType::Date => {
            let ScalarValue::Date(d) = value else {
                return Err(mismatch());
            };
            let days = d.signed_duration_since(pg_epoch_date()).num_days();
            buf.put_i32(i32::try_from(days).map_err(|_| out_of_range())?);
        }
        DataType::Timestamp => {
            let ScalarValue::Timestamp(t) = value else {
                return Err(mismatch());
            };
            let micros = t
                .signed_duration_since(pg_epoch())
                .num_microseconds()
                .ok_or_else(out_of_range)?;
            buf.put_i64(micros);
        }
        DataType::Timestamptz => {
            let ScalarValue::Timestamptz(t) = value else {
                return Err(mismatch());
            };
            buf.put_i64(t.checked_sub(PG_EPOCH_MICROS).ok_or_else(out_of_range)?);
        }
        DataType::Interval => {
            let ScalarValue::Interval(i) = value else {
                return Err(mismatch());
            };
            buf.put_i64(i.micros);
            buf.put_i32(i.days);
            buf.put_i32(i.months);
        }
    }
    Ok(())
}

const NUMERIC_POS: u16 = 0x0000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;

/// PostgreSQL's binary numeric: `ndigits`, `weight` (of the first group, in
/// powers of 10000), `sign`, `dscale` (decimal digits after the point), then
/// the base-10000 groups with leading and trailing zero groups stripped.
fn encode_numeric(buf: &mut BytesMut, d: &Decimal) {
    let scale = d.scale() as usize;
    let mantissa = d.mantissa().unsigned_abs();
    let digits = mantissa.to_string();
    // Split the decimal digits at the point, then pad both sides to whole
    // groups of four so the groups line up with the point.
    let (int_part, frac_part) = if digits.len() > scale {
        let (i, f) = digits.split_at(digits.len() - scale);
        (i.to_string(), f.to_string())
    } else {
        (String::new(), format!("{digits:0>scale$}"))
    };
    let int_width = int_part.len().div_ceil(4) * 4;
    let frac_width = frac_part.len().div_ceil(4) * 4;
    let aligned = format!("{int_part:0>int_width$}{frac_part:0<frac_width$}");
    let mut groups: Vec<i16> = aligned
        .as_bytes()
        .chunks(4)
        .map(|c| c.iter().fold(0i16, |acc, b| acc * 10 + i16::from(b - b'0')))
        .collect();
    let mut weight = (int_width / 4) as i32 - 1;
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i32;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let sign = if d.is_sign_negative() && mantissa != 0 {
        NUMERIC_NEG
    } else {
        NUMERIC_POS
    };
    // A Decimal has at most 29 digits and scale 28: every field fits.
    buf.put_i16(groups.len() as i16);
    buf.put_i16(weight as i16);
    buf.put_u16(sign);
    buf.put_u16(scale as u16);
    for g in groups {
        buf.put_i16(g);
    }
}

/// Decode bound parameter number `index` (0-based) of type `ty`.
pub(super) fn decode_param(
    ty: DataType,
    format: Format,
    raw: Option<&[u8]>,
    index: usize,
    zone: &Zone,
) -> Result<Datum, FrontendError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let value = match format {
        Format::Text => {
            let s = std::str::from_utf8(raw).map_err(|_| {
                FrontendError::new(
                    ErrorKind::CharacterNotInRepertoire,
                    "invalid byte sequence for encoding \"UTF8\"",
                )
            })?;
            parse_datum_in(ty, s, zone)?
        }
        Format::Binary => decode_binary(ty, raw).ok_or_else(|| {
            FrontendError::new(
                ErrorKind::InvalidBinaryRepresentation,
                format!(
                    "incorrect binary data format in bind parameter {}",
                    index + 1
                ),
            )
        })?,
    };
    Ok(Some(value))
}

fn be<const N: usize>(raw: &[u8]) -> Option<[u8; N]> {
    raw.try_into().ok()
}

/// An integer of any width: clients pick the width of the value they hold
/// (tokio-postgres sends an `i64` for an `int8` and so on), so accept 2, 4 or
/// 8 bytes and range-check into the parameter's type.
fn decode_int(raw: &[u8]) -> Option<i64> {
    match raw.len() {
        2 => Some(i16::from_be_bytes(be(raw)?).into()),
        4 => Some(i32::from_be_bytes(be(raw)?).into()),
        8 => Some(i64::from_be_bytes(be(raw)?)),
        _ => None,
    }
}

fn decode_float(raw: &[u8]) -> Option<f64> {
    match raw.len() {
        4 => Some(f32::from_be_bytes(be(raw)?).into()),
        8 => Some(f64::from_be_bytes(be(raw)?)),
        _ => None,
    }
}

/// `array_recv` of a one-dimensional array (lower bound ignored, as a
/// value here always starts at 1).
fn decode_binary_array(elem: ElemType, mut raw: &[u8]) -> Option<ScalarValue> {
    fn word(raw: &mut &[u8]) -> Option<i32> {
        let (head, rest) = raw.split_first_chunk::<4>()?;
        *raw = rest;
        Some(i32::from_be_bytes(*head))
    }
    let ndim = word(&mut raw)?;
    let _has_nulls = word(&mut raw)?;
    let oid = word(&mut raw)?;
    if oid as u32 != elem.data_type().oid() {
        return None;
    }
    let n = match ndim {
        0 => 0,
        1 => {
            let n = usize::try_from(word(&mut raw)?).ok()?;
            let _lower = word(&mut raw)?;
            n
        }
        _ => return None,
    };
    // Every element takes at least its length word.
    let mut items = Vec::with_capacity(n.min(raw.len() / 4));
    for _ in 0..n {
        let len = word(&mut raw)?;
        if len < 0 {
            items.push(None);
            continue;
        }
        let len = usize::try_from(len).ok()?;
        if len > raw.len() {
            return None;
        }
        let (value, rest) = raw.split_at(len);
        raw = rest;
        items.push(Some(decode_binary(elem.data_type(), value)?));
    }
    raw.is_empty().then(|| ScalarValue::array(elem, items))
}

/// `None` when the bytes are not a valid binary value of the type.
fn decode_binary(ty: DataType, raw: &[u8]) -> Option<ScalarValue> {
    Some(match ty {
        DataType::Array(elem) => return decode_binary_array(elem, raw),
        DataType::Int16 => ScalarValue::Int16(decode_int(raw)?.try_into().ok()?),
        DataType::Int32 => ScalarValue::Int32(decode_int(raw)?.try_into().ok()?),
        DataType::Int64 => ScalarValue::Int64(decode_int(raw)?),
        DataType::Float32 => ScalarValue::float32(decode_float(raw)? as f32),
        DataType::Float64 => ScalarValue::float64(decode_float(raw)?),
        DataType::Decimal => ScalarValue::Decimal(decode_numeric_value(raw)?),
        DataType::Varchar => ScalarValue::varchar(std::str::from_utf8(raw).ok()?),
        DataType::Uuid => ScalarValue::Uuid(u128::from_be_bytes(be(raw)?)),
        DataType::Bytea => ScalarValue::Bytea(raw.into()),
        DataType::Time => {
            let t = i64::from_be_bytes(be(raw)?);
            if !(0..=86_400_000_000).contains(&t) {
                return None;
            }
            ScalarValue::Time(t)
        }
        DataType::Jsonb => match raw.split_first() {
            Some((1, text)) => {
                let j =
                    ebbflow_common::jsonb::Jsonb::parse(std::str::from_utf8(text).ok()?).ok()?;
                ScalarValue::Jsonb(std::sync::Arc::new(j))
            }
            _ => return None,
        },
        DataType::Boolean => match raw {
            [b] => ScalarValue::Boolean(*b != 0),
            _ => return None,
        },
        DataType::Date => {
            let days = i32::from_be_bytes(be(raw)?);
            let date = pg_epoch_date().checked_add_signed(TimeDelta::try_days(days.into())?)?;
            ScalarValue::Date(date)
        }
        DataType::Timestamp => {
            let micros = i64::from_be_bytes(be(raw)?);
            ScalarValue::Timestamp(pg_epoch().checked_add_signed(TimeDelta::microseconds(micros))?)
        }
        DataType::Timestamptz => {
            let t = i64::from_be_bytes(be(raw)?).checked_add(PG_EPOCH_MICROS)?;
            // Only instants chrono can show are values.
            Zone::UTC.to_local(t)?;
            ScalarValue::Timestamptz(t)
        }
        DataType::Interval => {
            let raw: [u8; 16] = be(raw)?;
            let micros = i64::from_be_bytes(be(&raw[0..8])?);
            let days = i32::from_be_bytes(be(&raw[8..12])?);
            let months = i32::from_be_bytes(be(&raw[12..16])?);
            ScalarValue::Interval(Interval::new(months, days, micros))
        }
    })
}

/// A binary numeric parameter: NaN, an infinity or a number.
fn decode_numeric_value(raw: &[u8]) -> Option<Numeric> {
    let special = match raw {
        [0, 0, _, _, a, b, _, _] => match u16::from_be_bytes([*a, *b]) {
            NUMERIC_NAN => Some(Numeric::NaN),
            NUMERIC_PINF => Some(Numeric::PosInf),
            NUMERIC_NINF => Some(Numeric::NegInf),
            _ => None,
        },
        _ => None,
    };
    special.or_else(|| decode_numeric(raw).map(Numeric::Finite))
}

/// Inverse of [`encode_numeric`]. NaN and infinities (signs `0xC000`,
/// `0xD000`, `0xF000`) and values beyond `Decimal`'s 28 digits are rejected.
fn decode_numeric(raw: &[u8]) -> Option<Decimal> {
    let word = |i: usize| -> Option<u16> { Some(u16::from_be_bytes(be(raw.get(i..i + 2)?)?)) };
    let ndigits = usize::from(word(0)?);
    let weight = i32::from(word(2)? as i16);
    let sign = word(4)?;
    let dscale = usize::from(word(6)?);
    if raw.len() != 8 + 2 * ndigits || !(sign == NUMERIC_POS || sign == NUMERIC_NEG) {
        return None;
    }
    let groups = (0..ndigits)
        .map(|i| word(8 + 2 * i).filter(|g| *g < 10_000))
        .collect::<Option<Vec<u16>>>()?;
    // The group at position i has weight `weight - i`; build the digits
    // before and after the point and let Decimal parse them.
    let group_at = |w: i32| -> u16 {
        usize::try_from(weight - w)
            .ok()
            .and_then(|i| groups.get(i).copied())
            .unwrap_or(0)
    };
    let mut text = String::new();
    if sign == NUMERIC_NEG {
        text.push('-');
    }
    if weight >= 0 {
        text.push_str(&group_at(weight).to_string());
        for w in (0..weight).rev() {
            text.push_str(&format!("{:04}", group_at(w)));
        }
    } else {
        text.push('0');
    }
    let mut frac = String::new();
    let mut w = -1;
    while frac.len() < dscale {
        frac.push_str(&format!("{:04}", group_at(w)));
        w -= 1;
    }
    frac.truncate(dscale);
    if !frac.is_empty() {
        text.push('.');
        text.push_str(&frac);
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn numeric_bytes(s: &str) -> Vec<u8> {
        let mut buf = BytesMut::new();
        encode_numeric(&mut buf, &Decimal::from_str(s).unwrap());
        buf.to_vec()
    }

    fn words(v: &[i16]) -> Vec<u8> {
        v.iter().flat_map(|w| w.to_be_bytes()).collect()
    }

    #[test]
    fn numeric_binary_matches_postgres() {
        // ndigits, weight, sign, dscale, groups... as PostgreSQL 15 sends them.
        assert_eq!(numeric_bytes("0"), words(&[0, 0, 0, 0]));
        assert_eq!(numeric_bytes("0.00"), words(&[0, 0, 0, 2]));
        assert_eq!(numeric_bytes("0.5"), words(&[1, -1, 0, 1, 5000]));
        assert_eq!(
            numeric_bytes("12345.678"),
            words(&[3, 1, 0, 3, 1, 2345, 6780])
        );
        assert_eq!(numeric_bytes("-0.00001"), words(&[1, -2, 0x4000, 5, 1000]));
        assert_eq!(numeric_bytes("10000"), words(&[1, 1, 0, 0, 1]));
        assert_eq!(numeric_bytes("1.10"), words(&[2, 0, 0, 2, 1, 1000]));
    }

    #[test]
    fn arrays_in_postgres_binary_format() {
        let ty = DataType::Array(ElemType::Int32);
        let v = ScalarValue::array(ElemType::Int32, vec![Some(ScalarValue::Int32(1)), None]);
        let mut buf = BytesMut::new();
        encode_binary(&mut buf, ty, &v).unwrap();
        let want: Vec<i32> = vec![1, 1, 23, 2, 1, 4, 1, -1];
        let want: Vec<u8> = want.iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(&buf[..], &want[..]);
        assert_eq!(decode_binary(ty, &buf), Some(v));
        let empty = ScalarValue::array(ElemType::Varchar, vec![]);
        let vty = DataType::Array(ElemType::Varchar);
        let mut buf = BytesMut::new();
        encode_binary(&mut buf, vty, &empty).unwrap();
        assert_eq!(buf.len(), 12);
        assert_eq!(decode_binary(vty, &buf), Some(empty));
        // Truncated, a wrong element type, two dimensions: errors.
        assert!(decode_binary(ty, &want[..want.len() - 2]).is_none());
        assert!(decode_binary(vty, &want).is_none());
        let mut two = want.clone();
        two[3] = 2;
        assert!(decode_binary(ty, &two).is_none());
    }

    #[test]
    fn numeric_binary_round_trips() {
        for s in [
            "0",
            "0.00",
            "1",
            "-1",
            "0.5",
            "12345.678",
            "-0.00001",
            "10000",
            "99999999.99990000",
            "79228162514264337593543950335",
            "-7.9228162514264337593543950335",
        ] {
            let d = Decimal::from_str(s).unwrap();
            let back = decode_numeric(&numeric_bytes(s)).unwrap();
            assert_eq!(back, d, "{s}");
            assert_eq!(back.scale(), d.scale(), "{s}");
        }
    }

    #[test]
    fn bad_binary_params_are_errors() {
        assert!(decode_binary(DataType::Int32, &[1, 2, 3]).is_none());
        assert!(decode_binary(DataType::Int16, &100_000i32.to_be_bytes()).is_none());
        assert!(decode_binary(DataType::Boolean, &[]).is_none());
        assert!(decode_binary(DataType::Varchar, &[0xff, 0xfe]).is_none());
        assert!(decode_numeric(&words(&[1, 0, 0xC000u16 as i16, 0])).is_none());
        assert!(decode_numeric(&words(&[2, 0, 0, 0, 1])).is_none());
        assert!(decode_numeric(&[0, 1]).is_none());
        assert!(decode_binary(DataType::Date, &i32::MAX.to_be_bytes()).is_none());
        assert!(decode_binary(DataType::Timestamp, &i64::MIN.to_be_bytes()).is_none());
        let err =
            decode_param(DataType::Int32, Format::Binary, Some(&[1]), 1, &Zone::UTC).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidBinaryRepresentation);
        assert_eq!(
            err.to_string(),
            "incorrect binary data format in bind parameter 2"
        );
    }

    #[test]
    fn dates_and_timestamps_count_from_2000() {
        let d = NaiveDate::from_ymd_opt(1999, 12, 31).unwrap();
        let mut buf = BytesMut::new();
        encode_binary(&mut buf, DataType::Date, &ScalarValue::Date(d)).unwrap();
        assert_eq!(&buf[..], &(-1i32).to_be_bytes());
        assert_eq!(
            decode_binary(DataType::Date, &buf),
            Some(ScalarValue::Date(d))
        );
        let t = NaiveDate::from_ymd_opt(2000, 1, 2)
            .unwrap()
            .and_hms_micro_opt(0, 0, 1, 5)
            .unwrap();
        let mut buf = BytesMut::new();
        encode_binary(&mut buf, DataType::Timestamp, &ScalarValue::Timestamp(t)).unwrap();
        assert_eq!(&buf[..], &86_401_000_005i64.to_be_bytes());
        assert_eq!(
            decode_binary(DataType::Timestamp, &buf),
            Some(ScalarValue::Timestamp(t))
        );
        // timestamptz: the instant, from 2000-01-01 00:00 UTC, in any zone.
        let tz = ScalarValue::Timestamptz(t.and_utc().timestamp_micros());
        let mut buf = BytesMut::new();
        encode_binary(&mut buf, DataType::Timestamptz, &tz).unwrap();
        assert_eq!(&buf[..], &86_401_000_005i64.to_be_bytes());
        assert_eq!(decode_binary(DataType::Timestamptz, &buf), Some(tz));
    }

    #[test]
    fn format_codes() {
        let msg = || "mismatch".to_owned();
        assert_eq!(resolve_formats(&[], 2, msg).unwrap(), vec![Format::Text; 2]);
        assert_eq!(
            resolve_formats(&[1], 3, msg).unwrap(),
            vec![Format::Binary; 3]
        );
        assert_eq!(
            resolve_formats(&[0, 1], 2, msg).unwrap(),
            vec![Format::Text, Format::Binary]
        );
        assert_eq!(
            resolve_formats(&[0, 1], 3, msg).unwrap_err().kind(),
            ErrorKind::ProtocolViolation
        );
        assert_eq!(
            resolve_formats(&[2], 1, msg).unwrap_err().kind(),
            ErrorKind::InvalidParameterValue
        );
    }
}
