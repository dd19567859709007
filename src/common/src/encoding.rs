//! Byte encodings of rows: memcomparable keys, plain values, and the vnode
//! hash.
//!
//! The memcomparable encoding sorts byte-wise in the same order as the
//! datums (NULLs last for ascending columns, first for descending ones, as in
//! PostgreSQL), so ordered state (min/max, top-N) is an ordered range scan.
//! It is also decodable given the column types, so the same encoding serves
//! for values.

use arrow_array::Array;
use chrono::{NaiveDate, NaiveDateTime};

use super::column::{datum_ref, Column, DatumRef, ScalarRef};
use super::jsonb::Jsonb;
use super::types::{DataType, Datum, ElemType, Interval, Numeric, Row, ScalarValue, F64};

/// Number of virtual nodes; see docs/design.md §3.
pub const VNODE_COUNT: usize = 256;

/// A virtual node id, `0..VNODE_COUNT`.
pub type VirtualNode = u16;

#[derive(Debug, Clone, thiserror::Error)]
#[error("corrupt encoded row: {0}")]
pub struct DecodeError(pub &'static str);

const NULL_TAG_ASC: u8 = 0x01; // non-null sorts before null when ascending
const VALUE_TAG_ASC: u8 = 0x00;

/// Which of a value's representations an encoding keeps.
///
/// Some types have values that are equal under PostgreSQL's equality but
/// written differently: `1.0` and `1.00` (numeric scale), `-0` and `0`,
/// `'1 day'` and `'24 hours'`, `-0.0` and `0.0`. A key must not tell them
/// apart (state keys, vnodes and every hash table would split one group
/// into several), while a stored value must come back as it was written.
/// Both forms have one layout and one decoder: a key decodes to the
/// class's canonical representative (see [`canonical`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    /// Equal values give equal bytes: keys, vnode hashes, in-memory keys.
    Key,
    /// The value exactly as written: stored values, the exchange wire.
    Exact,
}

/// Append the memcomparable key encoding of `datum` (ascending, NULLs
/// last). Values equal under PostgreSQL's equality encode to the same
/// bytes; decoding gives the canonical representative.
pub fn encode_datum(buf: &mut Vec<u8>, datum: &Datum) {
    encode_datum_ref(buf, datum_ref(datum));
}

/// [`encode_datum`] of a borrowed value.
pub fn encode_datum_ref(buf: &mut Vec<u8>, datum: DatumRef<'_>) {
    encode_datum_form(buf, datum, Form::Key);
}

/// The exact encoding of a value (it decodes to the value as written,
/// `1.50` with its scale): for stored values and the exchange wire, never
/// for keys.
pub fn encode_datum_exact_ref(buf: &mut Vec<u8>, datum: DatumRef<'_>) {
    encode_datum_form(buf, datum, Form::Exact);
}

fn encode_datum_form(buf: &mut Vec<u8>, datum: DatumRef<'_>, form: Form) {
    match datum {
        None => buf.push(NULL_TAG_ASC),
        Some(v) => {
            buf.push(VALUE_TAG_ASC);
            encode_value(buf, v, form);
        }
    }
}

/// The canonical representative of `v`'s class under PostgreSQL's
/// equality (what its key encoding decodes to): numerics without trailing
/// zeros and with `-0` as `0`, intervals in whole 30-day months, days and
/// microseconds of one sign, floats with `-0.0` as `0.0`. Every other
/// value is its own representative.
pub fn canonical(v: &ScalarValue) -> ScalarValue {
    match v {
        ScalarValue::Decimal(Numeric::Finite(d)) => ScalarValue::decimal(d.normalize()),
        ScalarValue::Interval(i) => ScalarValue::Interval(i.canonical()),
        ScalarValue::Float32(x) if x.0 == 0.0 => ScalarValue::Float32(F64(0.0)),
        ScalarValue::Float64(x) if x.0 == 0.0 => ScalarValue::Float64(F64(0.0)),
        ScalarValue::Array(a) => ScalarValue::array(
            a.elem,
            a.items.iter().map(|d| d.as_ref().map(canonical)).collect(),
        ),
        ScalarValue::Jsonb(j) => ScalarValue::Jsonb(std::sync::Arc::new(canonical_jsonb(j))),
        other => other.clone(),
    }
}

/// A jsonb value with its numbers normalized (`1.0` is `1`).
fn canonical_jsonb(j: &Jsonb) -> Jsonb {
    match j {
        Jsonb::Number(d) => Jsonb::Number(d.normalize()),
        Jsonb::Array(items) => Jsonb::Array(items.iter().map(canonical_jsonb).collect()),
        Jsonb::Object(pairs) => Jsonb::Object(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), canonical_jsonb(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether `v` is written as its class's canonical representative, i.e.
/// its key encoding decodes back to exactly `v`.
pub fn is_canonical(v: &ScalarValue) -> bool {
    match v {
        ScalarValue::Decimal(Numeric::Finite(d)) => d.serialize() == d.normalize().serialize(),
        ScalarValue::Interval(i) => {
            let c = i.canonical();
            (c.months, c.days, c.micros) == (i.months, i.days, i.micros)
        }
        ScalarValue::Float32(x) | ScalarValue::Float64(x) => {
            !(x.0 == 0.0 && x.0.is_sign_negative())
        }
        ScalarValue::Array(a) => a.items.iter().flatten().all(is_canonical),
        ScalarValue::Jsonb(j) => j.is_normalized(),
        _ => true,
    }
}

/// Append the encoding of `datum` in the given direction. Descending flips
/// every byte, which reverses the order (and puts NULLs first).
/// (A key encoding, as [`encode_datum`].)
pub fn encode_datum_ordered(buf: &mut Vec<u8>, datum: &Datum, desc: bool) {
    let start = buf.len();
    encode_datum(buf, datum);
    if desc {
        for b in &mut buf[start..] {
            *b = !*b;
        }
    }
}

/// The order-preserving bytes of an `int4` (sign bit flipped, big-endian).
#[inline]
fn int32_bytes(x: i32) -> [u8; 4] {
    ((x as u32) ^ 0x8000_0000).to_be_bytes()
}

/// The order-preserving bytes of an `int8`.
#[inline]
fn int64_bytes(x: i64) -> [u8; 8] {
    (x as u64 ^ (1 << 63)).to_be_bytes()
}

fn encode_value(buf: &mut Vec<u8>, v: ScalarRef<'_>, form: Form) {
    match v {
        ScalarRef::Int16(x) => buf.extend_from_slice(&((x as u16) ^ 0x8000).to_be_bytes()),
        ScalarRef::Int32(x) => buf.extend_from_slice(&int32_bytes(x)),
        ScalarRef::Int64(x) => buf.extend_from_slice(&int64_bytes(x)),
        ScalarRef::Float32(x) | ScalarRef::Float64(x) => encode_f64(buf, x, form),
        ScalarRef::Decimal(d) => encode_decimal(buf, &d, form),
        ScalarRef::Varchar(s) => encode_bytes(buf, s.as_bytes()),
        ScalarRef::Boolean(b) => buf.push(b as u8),
        ScalarRef::Date(d) => {
            let days = (d - NaiveDate::default()).num_days();
            buf.extend_from_slice(&(days as u64 ^ (1 << 63)).to_be_bytes())
        }
        ScalarRef::Timestamp(t) => {
            let micros = t.and_utc().timestamp_micros();
            buf.extend_from_slice(&(micros as u64 ^ (1 << 63)).to_be_bytes())
        }
        ScalarRef::Timestamptz(micros) => buf.extend_from_slice(&int64_bytes(micros)),
        ScalarRef::Jsonb(j) => encode_jsonb_top(buf, j, form),
        ScalarRef::Uuid(u) => buf.extend_from_slice(&u.to_be_bytes()),
        ScalarRef::Bytea(b) => encode_bytes(buf, b),
        ScalarRef::Time(t) => buf.extend_from_slice(&int64_bytes(t)),
        ScalarRef::Interval(i) => {
            // Order by total, then the parts so the value round-trips: a
            // key's are the canonical ones, so equal totals give equal
            // bytes ('1 day' = '24 hours').
            let total = i.total_micros();
            let parts = match form {
                Form::Key => i.canonical(),
                Form::Exact => i,
            };
            buf.extend_from_slice(&((total as u128) ^ (1 << 127)).to_be_bytes());
            buf.extend_from_slice(&parts.months.to_be_bytes());
            buf.extend_from_slice(&parts.days.to_be_bytes());
        }
        ScalarRef::Array(a) => {
            // Each element behind a continuation byte, then an end byte that
            // sorts below it: a proper prefix comes first, and elements
            // compare by their own encoding (NULL last), as `array_cmp`.
            for item in &a.items {
                buf.push(ARRAY_MORE);
                encode_datum_form(buf, datum_ref(item), form);
            }
            buf.push(ARRAY_END);
        }
    }
}

const ARRAY_END: u8 = 0x00;
const ARRAY_MORE: u8 = 0x01;

/// Floats: NaN as one value above every number; `-0.0` as `0.0` in a
/// key (in a value it keeps its sign, which PostgreSQL prints).
fn encode_f64(buf: &mut Vec<u8>, x: F64, form: Form) {
    let v = if x.0.is_nan() {
        f64::NAN
    } else if x.0 == 0.0 && form == Form::Key {
        0.0
    } else {
        x.0
    };
    let bits = v.to_bits();
    let key = if v.is_sign_negative() {
        !bits
    } else {
        bits | (1 << 63)
    };
    buf.extend_from_slice(&key.to_be_bytes());
}

/// Strings: groups of 8 bytes, each followed by a marker byte telling how
/// many of them are real (9 = more groups follow).
fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let mut chunks = s.chunks(8).peekable();
    if s.is_empty() {
        buf.extend_from_slice(&[0; 8]);
        buf.push(0);
        return;
    }
    while let Some(c) = chunks.next() {
        buf.extend_from_slice(c);
        buf.extend(std::iter::repeat_n(0u8, 8 - c.len()));
        if chunks.peek().is_some() {
            buf.push(9);
        } else {
            buf.push(c.len() as u8);
        }
    }
}

/// Numerics: a class in PostgreSQL's order (`-Infinity` 0, negative 1,
/// zero 2, positive 3, `Infinity` 4, `NaN` 5), then for non-zero numbers
/// the decimal exponent of the leading digit and the digits, all flipped
/// for negatives. Then the value ([`Numeric::to_bytes`]: mantissa and
/// scale): in a value the exact one, so it round-trips with its scale; in
/// a key the normalized one (`1.0`, `1.00` and `1` are one key, and `-0`
/// is `0`). Keys written before keys were canonical carry the exact value
/// here too; the same decoder reads both.
fn encode_decimal(buf: &mut Vec<u8>, v: &Numeric, form: Form) {
    let d = match v {
        Numeric::Finite(d) => d,
        special => {
            buf.push(match special {
                Numeric::NegInf => 0,
                Numeric::PosInf => 4,
                _ => 5,
            });
            buf.extend_from_slice(&special.to_bytes());
            return;
        }
    };
    let n = d.normalize();
    if n.is_zero() {
        buf.push(2);
    } else {
        let neg = n.is_sign_negative();
        let digits = n.mantissa().unsigned_abs().to_string();
        // value = 0.d1d2d3... × 10^exp
        let exp = digits.len() as i32 - n.scale() as i32;
        let mut body = Vec::with_capacity(digits.len() + 6);
        body.extend_from_slice(&((exp as u32) ^ 0x8000_0000).to_be_bytes());
        body.extend(digits.trim_end_matches('0').bytes().map(|b| b - b'0' + 1));
        body.push(0);
        if neg {
            buf.push(1);
            body.iter_mut().for_each(|b| *b = !*b);
        } else {
            buf.push(3);
        }
        buf.extend_from_slice(&body);
    }
    buf.extend_from_slice(&match form {
        Form::Key => n.serialize(),
        Form::Exact => d.serialize(),
    });
}

/// The key encoding of a row (all ascending): equal rows, equal bytes.
pub fn encode_key_row(buf: &mut Vec<u8>, row: &[Datum]) {
    for d in row {
        encode_datum(buf, d);
    }
}

/// The exact encoding of a row, for stored values (decoded by
/// [`decode_row`] with the row's types).
pub fn encode_value_row(buf: &mut Vec<u8>, row: &[Datum]) {
    for d in row {
        encode_datum_exact_ref(buf, datum_ref(d));
    }
}

/// Encode a key with a direction per column.
pub fn encode_key_ordered(buf: &mut Vec<u8>, row: &[Datum], desc: &[bool]) {
    for (i, d) in row.iter().enumerate() {
        encode_datum_ordered(buf, d, desc.get(i).copied().unwrap_or(false));
    }
}

/// Decode a row written by [`encode_key_row`] or [`encode_value_row`]
/// (all ascending) or [`encode_key_ordered`] with the same directions.
pub fn decode_row(mut data: &[u8], types: &[DataType], desc: &[bool]) -> Result<Row, DecodeError> {
    let mut row = Vec::with_capacity(types.len());
    for (i, ty) in types.iter().enumerate() {
        // A row written before trailing columns were added to its schema
        // (a source's progress gained its watermark) ends early: they are
        // NULL.
        if data.is_empty() && i > 0 {
            row.push(None);
            continue;
        }
        let d = desc.get(i).copied().unwrap_or(false);
        row.push(decode_datum_ordered(&mut data, *ty, d)?);
    }
    Ok(row)
}

struct Reader<'a, 'b> {
    data: &'a mut &'b [u8],
    flip: bool,
}

impl Reader<'_, '_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        if self.data.len() < N {
            return Err(DecodeError("unexpected end"));
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.data[..N]);
        *self.data = &self.data[N..];
        if self.flip {
            out.iter_mut().for_each(|b| *b = !*b);
        }
        Ok(out)
    }
    fn byte(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take::<1>()?[0])
    }
}

/// Reads one ascending datum of type `ty` written by [`encode_datum`],
/// advancing `data`.
pub fn decode_datum(data: &mut &[u8], ty: DataType) -> Result<Datum, DecodeError> {
    decode_datum_ordered(data, ty, false)
}

fn decode_datum_ordered(data: &mut &[u8], ty: DataType, desc: bool) -> Result<Datum, DecodeError> {
    let mut r = Reader { data, flip: desc };
    let tag = r.byte()?;
    if tag == NULL_TAG_ASC {
        return Ok(None);
    }
    if tag != VALUE_TAG_ASC {
        return Err(DecodeError("bad null tag"));
    }
    decode_value(&mut r, ty).map(Some)
}

/// Decodes a value body (what follows the null tag) of type `ty`.
fn decode_value(r: &mut Reader, ty: DataType) -> Result<ScalarValue, DecodeError> {
    let v = match ty {
        DataType::Int16 => ScalarValue::Int16((u16::from_be_bytes(r.take()?) ^ 0x8000) as i16),
        DataType::Int32 => ScalarValue::Int32((u32::from_be_bytes(r.take()?) ^ 0x8000_0000) as i32),
        DataType::Int64 => ScalarValue::Int64((u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64),
        DataType::Float32 => ScalarValue::Float32(decode_f64(r)?),
        DataType::Float64 => ScalarValue::Float64(decode_f64(r)?),
        DataType::Decimal => {
            let class = r.byte()?;
            if class == 1 || class == 3 {
                // skip the order-preserving exponent and digits
                let _exp: [u8; 4] = r.take()?;
                loop {
                    let b = r.byte()?;
                    let b = if class == 1 { !b } else { b };
                    if b == 0 {
                        break;
                    }
                }
            }
            let raw: [u8; 16] = r.take()?;
            ScalarValue::Decimal(Numeric::from_bytes(raw))
        }
        DataType::Varchar => ScalarValue::varchar(
            String::from_utf8(decode_bytes(r)?).map_err(|_| DecodeError("invalid utf-8"))?,
        ),
        DataType::Boolean => ScalarValue::Boolean(r.byte()? != 0),
        DataType::Date => {
            let days = (u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64;
            ScalarValue::Date(
                chrono::Duration::try_days(days)
                    .and_then(|d| NaiveDate::default().checked_add_signed(d))
                    .ok_or(DecodeError("date out of range"))?,
            )
        }
        DataType::Timestamp => {
            let micros = (u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64;
            ScalarValue::Timestamp(
                chrono::DateTime::from_timestamp_micros(micros)
                    .map(|t| t.naive_utc())
                    .unwrap_or(NaiveDateTime::MIN),
            )
        }
        DataType::Timestamptz => {
            ScalarValue::Timestamptz((u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64)
        }
        DataType::Interval => {
            let total = (u128::from_be_bytes(r.take()?) ^ (1 << 127)) as i128;
            let months = i32::from_be_bytes(r.take()?);
            let days = i32::from_be_bytes(r.take()?);
            let micros = total
                .checked_sub(
                    (months as i128 * 30 + days as i128) * Interval::MICROS_PER_DAY as i128,
                )
                .and_then(|m| i64::try_from(m).ok())
                .ok_or(DecodeError("interval out of range"))?;
            ScalarValue::Interval(Interval::new(months, days, micros))
        }
        DataType::Jsonb => ScalarValue::Jsonb(std::sync::Arc::new(decode_jsonb_top(r)?)),
        DataType::Uuid => ScalarValue::Uuid(u128::from_be_bytes(r.take()?)),
        DataType::Bytea => ScalarValue::Bytea(decode_bytes(r)?.into()),
        DataType::Time => ScalarValue::Time((u64::from_be_bytes(r.take()?) ^ (1 << 63)) as i64),
        DataType::Array(elem) => {
            let mut items = Vec::new();
            loop {
                match r.byte()? {
                    ARRAY_END => break,
                    ARRAY_MORE => {}
                    _ => return Err(DecodeError("bad array marker")),
                }
                items.push(match r.byte()? {
                    NULL_TAG_ASC => None,
                    VALUE_TAG_ASC => Some(decode_value(r, elem.data_type())?),
                    _ => return Err(DecodeError("bad null tag")),
                });
            }
            ScalarValue::array(elem, items)
        }
    };
    Ok(v)
}

/// A whole jsonb value in PostgreSQL's order, where a top-level scalar is
/// a one-element array to an array: objects after everything else (1),
/// the rest (0) by element count, then a scalar before an array.
fn encode_jsonb_top(buf: &mut Vec<u8>, j: &Jsonb, form: Form) {
    match j {
        Jsonb::Object(_) => {
            buf.push(1);
            encode_jsonb(buf, j, form);
        }
        Jsonb::Array(items) => {
            buf.push(0);
            buf.extend_from_slice(&(items.len() as u32).to_be_bytes());
            buf.push(1);
            for v in items {
                encode_jsonb(buf, v, form);
            }
        }
        scalar => {
            buf.push(0);
            buf.extend_from_slice(&1u32.to_be_bytes());
            buf.push(0);
            encode_jsonb(buf, scalar, form);
        }
    }
}

fn decode_jsonb_top(r: &mut Reader) -> Result<Jsonb, DecodeError> {
    if r.byte()? == 1 {
        return decode_jsonb(r, 0);
    }
    let n = u32::from_be_bytes(r.take()?) as usize;
    if r.byte()? == 0 {
        return decode_jsonb(r, 0);
    }
    let mut items = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        items.push(decode_jsonb(r, 1)?);
    }
    Ok(Jsonb::Array(items))
}

/// jsonb in PostgreSQL's order: the kind's rank; a string's bytes; a
/// number as a numeric; an array's length and its elements; an object's
/// pair count, then each key (its length first, as keys sort) and value.
fn encode_jsonb(buf: &mut Vec<u8>, j: &Jsonb, form: Form) {
    buf.push(j.rank());
    match j {
        Jsonb::Null => {}
        Jsonb::Bool(b) => buf.push(u8::from(*b)),
        Jsonb::String(s) => encode_bytes(buf, s.as_bytes()),
        Jsonb::Number(d) => encode_decimal(buf, &Numeric::Finite(*d), form),
        Jsonb::Array(items) => {
            buf.extend_from_slice(&(items.len() as u32).to_be_bytes());
            for v in items {
                encode_jsonb(buf, v, form);
            }
        }
        Jsonb::Object(pairs) => {
            buf.extend_from_slice(&(pairs.len() as u32).to_be_bytes());
            for (k, v) in pairs {
                buf.extend_from_slice(&(k.len() as u32).to_be_bytes());
                encode_bytes(buf, k.as_bytes());
                encode_jsonb(buf, v, form);
            }
        }
    }
}

fn decode_jsonb(r: &mut Reader, depth: usize) -> Result<Jsonb, DecodeError> {
    if depth > 10_000 {
        return Err(DecodeError("jsonb nested too deep"));
    }
    let string = |r: &mut Reader| match decode_value(r, DataType::Varchar)? {
        ScalarValue::Varchar(s) => Ok(s.to_string()),
        _ => Err(DecodeError("bad jsonb string")),
    };
    Ok(match r.byte()? {
        0 => Jsonb::Null,
        1 => Jsonb::String(string(r)?),
        2 => match decode_value(r, DataType::Decimal)? {
            ScalarValue::Decimal(Numeric::Finite(d)) => Jsonb::Number(d),
            _ => return Err(DecodeError("bad jsonb number")),
        },
        3 => Jsonb::Bool(r.byte()? != 0),
        4 => {
            let n = u32::from_be_bytes(r.take()?) as usize;
            let mut items = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                items.push(decode_jsonb(r, depth + 1)?);
            }
            Jsonb::Array(items)
        }
        5 => {
            let n = u32::from_be_bytes(r.take()?) as usize;
            let mut pairs = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                let _len: [u8; 4] = r.take()?;
                let k = string(r)?;
                pairs.push((k, decode_jsonb(r, depth + 1)?));
            }
            Jsonb::Object(pairs)
        }
        _ => return Err(DecodeError("bad jsonb kind")),
    })
}

/// The bytes [`encode_bytes`] wrote.
fn decode_bytes(r: &mut Reader) -> Result<Vec<u8>, DecodeError> {
    let mut bytes = Vec::new();
    loop {
        let group: [u8; 8] = r.take()?;
        let marker = r.byte()?;
        if marker == 9 {
            bytes.extend_from_slice(&group);
        } else if marker <= 8 {
            bytes.extend_from_slice(&group[..marker as usize]);
            return Ok(bytes);
        } else {
            return Err(DecodeError("bad string marker"));
        }
    }
}

fn decode_f64(r: &mut Reader) -> Result<F64, DecodeError> {
    let key = u64::from_be_bytes(r.take()?);
    let bits = if key & (1 << 63) != 0 {
        key & !(1 << 63)
    } else {
        !key
    };
    Ok(F64(f64::from_bits(bits)))
}

/// The one stable hash of a distribution key, shared by dispatchers, state
/// tables and batch scans (FNV-1a over the memcomparable encoding).
pub fn hash_key(key: &[Datum]) -> u64 {
    hash_datums(key.iter().map(datum_ref))
}

/// The vnode of a row, given the indices of its distribution key.
pub fn vnode_of(row: &[Datum], dist_key: &[usize]) -> VirtualNode {
    if dist_key.is_empty() {
        return 0;
    }
    (hash_datums(dist_key.iter().map(|&i| datum_ref(&row[i]))) % VNODE_COUNT as u64) as VirtualNode
}

thread_local! {
    /// The encoding buffer of [`hash_datums`], reused: a hash per row must
    /// not allocate.
    static HASH_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `bytes`, continuing from `h`.
#[inline]
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The final avalanche, so that consecutive integers spread over vnodes.
#[inline]
fn avalanche(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h
}

/// [`vnode_of`] each row in `rows` of these columns, computed a column at
/// a time: integer keys without NULLs hash straight from their arrays.
pub fn vnodes_of_column_rows(
    columns: &[Column],
    dist_key: &[usize],
    rows: &[usize],
) -> Vec<VirtualNode> {
    if dist_key.is_empty() {
        return vec![0; rows.len()];
    }
    let mut hashes = vec![FNV_OFFSET; rows.len()];
    let mut buf = Vec::with_capacity(32);
    for &c in dist_key {
        let column = &columns[c];
        match column {
            Column::Int32(a) if a.null_count() == 0 => {
                let values = a.values();
                for (h, &i) in hashes.iter_mut().zip(rows) {
                    *h = fnv(fnv(*h, &[VALUE_TAG_ASC]), &int32_bytes(values[i]));
                }
            }
            Column::Int64(a) if a.null_count() == 0 => {
                let values = a.values();
                for (h, &i) in hashes.iter_mut().zip(rows) {
                    *h = fnv(fnv(*h, &[VALUE_TAG_ASC]), &int64_bytes(values[i]));
                }
            }
            _ => {
                for (h, &i) in hashes.iter_mut().zip(rows) {
                    buf.clear();
                    encode_datum_ref(&mut buf, column.get(i));
                    *h = fnv(*h, &buf);
                }
            }
        }
    }
    hashes
        .into_iter()
        .map(|h| (avalanche(h) % VNODE_COUNT as u64) as VirtualNode)
        .collect()
}

fn hash_datums<'a>(key: impl Iterator<Item = DatumRef<'a>>) -> u64 {
    let fnv_of_encoding = |buf: &mut Vec<u8>| {
        for d in key {
            encode_datum_ref(buf, d);
        }
        fnv(FNV_OFFSET, buf)
    };
    let h = HASH_BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let h = fnv_of_encoding(&mut buf);
            if buf.capacity() > 4096 {
                *buf = Vec::new();
            }
            h
        }
        // Only if a datum's encoding hashed a key itself: a fresh buffer.
        Err(_) => fnv_of_encoding(&mut Vec::with_capacity(32)),
    });
    avalanche(h)
}

/// Self-describing value encoding: a type tag per datum, then its
/// memcomparable body. Used for state values whose schema the reader may
/// not know (aggregate states).
pub fn encode_row_tagged(buf: &mut Vec<u8>, row: &[Datum]) {
    buf.extend_from_slice(&(row.len() as u32).to_le_bytes());
    for d in row {
        encode_datum_tagged(buf, d);
    }
}

pub fn decode_row_tagged(mut data: &[u8]) -> Result<Row, DecodeError> {
    if data.len() < 4 {
        return Err(DecodeError("unexpected end"));
    }
    let n = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
    data = &data[4..];
    // Every datum takes at least one byte: bound the allocation by that.
    let mut row = Vec::with_capacity(n.min(data.len()));
    for _ in 0..n {
        row.push(decode_datum_tagged(&mut data)?);
    }
    Ok(row)
}

/// One datum of the self-describing encoding: `0xff` for NULL, else the
/// type tag and the value body (exact: these are stored values).
pub fn encode_datum_tagged(buf: &mut Vec<u8>, datum: &Datum) {
    match datum {
        None => buf.push(0xff),
        Some(v) => {
            buf.push(type_tag(v.data_type()));
            encode_value(buf, v.as_scalar_ref(), Form::Exact);
        }
    }
}

/// Reads one datum written by [`encode_datum_tagged`], advancing `data`.
pub fn decode_datum_tagged(data: &mut &[u8]) -> Result<Datum, DecodeError> {
    let (&tag, rest) = data.split_first().ok_or(DecodeError("unexpected end"))?;
    *data = rest;
    if tag == 0xff {
        return Ok(None);
    }
    let ty = tag_type(tag)?;
    decode_value(&mut Reader { data, flip: false }, ty).map(Some)
}

const ALL_TYPES: [DataType; 16] = [
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::Float32,
    DataType::Float64,
    DataType::Decimal,
    DataType::Varchar,
    DataType::Boolean,
    DataType::Date,
    DataType::Timestamp,
    DataType::Interval,
    DataType::Timestamptz,
    DataType::Jsonb,
    DataType::Uuid,
    DataType::Bytea,
    DataType::Time,
];

/// The tag of an array type is this plus its element type's position.
const ARRAY_TAG_BASE: u8 = 0x40;

/// The one-byte tag of a type in self-describing encodings.
pub fn type_tag(ty: DataType) -> u8 {
    match ty {
        DataType::Array(e) => {
            ARRAY_TAG_BASE + ElemType::ALL.iter().position(|t| *t == e).unwrap_or(0) as u8
        }
        _ => ALL_TYPES.iter().position(|t| *t == ty).unwrap_or(0) as u8,
    }
}

/// The type of a [`type_tag`].
pub fn tag_type(tag: u8) -> Result<DataType, DecodeError> {
    if let Some(i) = tag.checked_sub(ARRAY_TAG_BASE) {
        return ElemType::ALL
            .get(i as usize)
            .map(|e| DataType::Array(*e))
            .ok_or(DecodeError("bad type tag"));
    }
    ALL_TYPES
        .get(tag as usize)
        .copied()
        .ok_or(DecodeError("bad type tag"))
}

#[cfg(test)]
mod tests;
