//! The aggregates whose result depends on the order of their inputs
//! (`string_agg`, `array_agg`, with an optional `ORDER BY` inside the
//! call). Each takes one packed input per row — the value with its sort
//! keys' memcomparable encoding in front — and keeps a multiset of them, so
//! retraction is exact and the packed values iterate in ORDER BY order.

use std::collections::BTreeMap;

use super::{corrupt, load_multiset, multiset_update, save_multiset, Accumulator};
use crate::ExprResult;
use ebbflow_common::encoding::{decode_datum_tagged, encode_datum_ordered, encode_datum_tagged};
use ebbflow_common::{DataType, Datum, ElemType, Row, ScalarValue};

/// The single input of `string_agg(value, delimiter ORDER BY keys)`, from
/// `[value, delimiter, directions, keys...]` (`directions`: one `a` or `d`
/// per key): NULL when the value is NULL (string_agg skips it), else the
/// text `<keys>|<n>:<delimiter><value>` where `<keys>` is the hex of the
/// keys' memcomparable encoding in their directions and `n` the delimiter's
/// length in bytes (a NULL delimiter is empty, as in PostgreSQL). Text
/// orders byte-wise, and the key encoding is prefix-free, so the packed
/// inputs sort in the call's ORDER BY order: the accumulator keeps them in
/// a multiset (exact under retraction) and concatenates them in order.
pub fn pack_string_agg_input(vals: &[Datum]) -> ExprResult<Datum> {
    let text = |d: Option<&Datum>| -> ExprResult<Option<String>> {
        match d {
            Some(Some(v)) => match v.as_str() {
                Some(s) => Ok(Some(s.to_string())),
                None => Ok(Some(ebbflow_common::text::format_datum(v))),
            },
            _ => Ok(None),
        }
    };
    let Some(value) = text(vals.first())? else {
        return Ok(None);
    };
    let delimiter = text(vals.get(1))?.unwrap_or_default();
    let dirs = text(vals.get(2))?.unwrap_or_default();
    let keys = vals.get(3..).unwrap_or(&[]);
    let mut out = key_prefix(&dirs, keys, delimiter.len() + value.len() + 8);
    out.push_str(&format!("{}:", delimiter.len()));
    out.push_str(&delimiter);
    out.push_str(&value);
    Ok(Some(ScalarValue::varchar(out)))
}

/// The delimiter and value of a packed `string_agg` input.
fn unpack_string_agg_input(packed: &str) -> ExprResult<(&str, &str)> {
    let rest = packed.split_once('|').ok_or_else(corrupt)?.1;
    let (len, rest) = rest.split_once(':').ok_or_else(corrupt)?;
    let len: usize = len.parse().map_err(|_| corrupt())?;
    if len > rest.len() || !rest.is_char_boundary(len) {
        return Err(corrupt());
    }
    Ok(rest.split_at(len))
}

/// `string_agg`: a multiset of the current packed inputs, in ORDER BY
/// order; the output is the first value, then each next value preceded by
/// its own delimiter (PostgreSQL's definition).
#[derive(Clone, Debug, Default)]
pub(super) struct StringAgg {
    values: BTreeMap<ScalarValue, i64>,
}

impl Accumulator for StringAgg {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        if let Some(v) = value {
            multiset_update(&mut self.values, insert, v)?;
        }
        Ok(())
    }
    fn output(&self) -> ExprResult<Datum> {
        if self.values.is_empty() {
            return Ok(None);
        }
        let mut out = String::new();
        let mut first = true;
        for (v, n) in &self.values {
            let (delimiter, value) = unpack_string_agg_input(v.as_str().ok_or_else(corrupt)?)?;
            for _ in 0..*n {
                if !first {
                    out.push_str(delimiter);
                }
                first = false;
                out.push_str(value);
            }
        }
        Ok(Some(ScalarValue::varchar(out)))
    }
    fn save(&self) -> Row {
        let mut row = Vec::with_capacity(self.values.len() * 2);
        save_multiset(&self.values, &mut row);
        row
    }
    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        load_multiset(state, &mut self.values)
    }
    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
}

/// The hex of the memcomparable encoding of ORDER BY `keys` in their
/// directions (`dirs`: one per key, `a` ascending and `d` descending with
/// PostgreSQL's default NULL placement, `A` ascending NULLS FIRST and `D`
/// descending NULLS LAST), and a `|`.
fn key_prefix(dirs: &str, keys: &[Datum], extra: usize) -> String {
    let mut key = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let dir = dirs.as_bytes().get(i).copied().unwrap_or(b'a');
        let desc = dir.eq_ignore_ascii_case(&b'd');
        if dir.is_ascii_uppercase() {
            // The other NULL placement: a leading byte puts NULLs first
            // (ascending) or last (descending), before the value's order.
            let nulls_first = dir == b'A';
            key.push(u8::from(k.is_none() != nulls_first));
        }
        encode_datum_ordered(&mut key, k, desc);
    }
    let mut out = String::with_capacity(key.len() * 2 + extra + 1);
    push_hex(&mut out, &key);
    out.push('|');
    out
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 15) as usize] as char);
    }
}

fn from_hex(s: &str) -> ExprResult<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        _ => Err(corrupt()),
    };
    s.as_bytes()
        .chunks(2)
        .map(|p| match p {
            [h, l] => Ok(digit(*h)? << 4 | digit(*l)?),
            _ => Err(corrupt()),
        })
        .collect()
}

/// The single input of `array_agg(value ORDER BY keys)`, from
/// `[value, directions, keys...]`: never NULL (a NULL value is an element
/// of the result), the text `<keys>|<value>` with the keys as for
/// [`pack_string_agg_input`] and the value's self-describing encoding, both
/// in hex. Only a `FILTER` makes the packed input NULL (not seen).
pub fn pack_array_agg_input(vals: &[Datum]) -> ExprResult<Datum> {
    let value = vals.first().cloned().flatten();
    let dirs = match vals.get(1) {
        Some(Some(ScalarValue::Varchar(d))) => d.to_string(),
        _ => String::new(),
    };
    let mut encoded = Vec::new();
    encode_datum_tagged(&mut encoded, &value);
    let mut out = key_prefix(&dirs, vals.get(2..).unwrap_or(&[]), encoded.len() * 2);
    push_hex(&mut out, &encoded);
    Ok(Some(ScalarValue::varchar(out)))
}

/// `array_agg`: a multiset of the packed inputs, in ORDER BY order; NULL
/// over no rows, as in PostgreSQL.
#[derive(Clone, Debug)]
pub(super) struct ArrayAgg {
    elem: ElemType,
    values: BTreeMap<ScalarValue, i64>,
}

impl ArrayAgg {
    pub(super) fn new(return_type: DataType) -> ArrayAgg {
        let elem = match return_type {
            DataType::Array(e) => e,
            _ => ElemType::Varchar,
        };
        ArrayAgg {
            elem,
            values: BTreeMap::new(),
        }
    }
}

impl Accumulator for ArrayAgg {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        if let Some(v) = value {
            multiset_update(&mut self.values, insert, v)?;
        }
        Ok(())
    }
    fn output(&self) -> ExprResult<Datum> {
        if self.values.is_empty() {
            return Ok(None);
        }
        let mut items = Vec::with_capacity(self.values.len());
        for (v, n) in &self.values {
            let packed = v.as_str().ok_or_else(corrupt)?;
            let (_, value) = packed.split_once('|').ok_or_else(corrupt)?;
            let bytes = from_hex(value)?;
            let item = decode_datum_tagged(&mut bytes.as_slice()).map_err(|_| corrupt())?;
            for _ in 0..*n {
                items.push(item.clone());
            }
        }
        Ok(Some(ScalarValue::array(self.elem, items)))
    }
    fn save(&self) -> Row {
        let mut row = Vec::with_capacity(self.values.len() * 2);
        save_multiset(&self.values, &mut row);
        row
    }
    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        load_multiset(state, &mut self.values)
    }
    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
}
