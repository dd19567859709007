//! Join kinds and sort keys, shared by the planners and the executors.

use std::cmp::Ordering;

use super::encoding::encode_datum_ordered;
use super::Datum;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// The left rows with at least one partner (`EXISTS`, `IN`); only
    /// left columns come out.
    LeftSemi,
    /// The left rows without a partner (`NOT EXISTS`, `NOT IN`); only left
    /// columns come out.
    LeftAnti,
}

impl JoinKind {
    /// Whether only the left columns come out (semi and anti joins).
    pub fn left_only(self) -> bool {
        matches!(self, JoinKind::LeftSemi | JoinKind::LeftAnti)
    }
}

/// One `ORDER BY` item over an input column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OrderKey {
    pub index: usize,
    pub desc: bool,
    /// PostgreSQL default: NULLS LAST for ASC, NULLS FIRST for DESC.
    pub nulls_first: bool,
}

/// Compare two rows by the order keys, as ORDER BY sorts them (NULL
/// placement independent of the direction).
#[inline]
pub fn compare_rows(order: &[OrderKey], a: &[Datum], b: &[Datum]) -> Ordering {
    for key in order {
        let ord = match (&a[key.index], &b[key.index]) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) if key.nulls_first => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) if key.nulls_first => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) if key.desc => y.cmp(x),
            (Some(x), Some(y)) => x.cmp(y),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// Append bytes that sort as `compare_rows` sorts `row`: per key, a byte
/// placing NULLs, then the value's order-preserving encoding.
pub fn encode_sort_key(buf: &mut Vec<u8>, order: &[OrderKey], row: &[Datum]) {
    for o in order {
        let d = &row[o.index];
        buf.push(if d.is_none() == o.nulls_first { 0 } else { 1 });
        encode_datum_ordered(buf, d, o.desc);
    }
}
