//! `ORDER BY ... [LIMIT n] [OFFSET m]`.
//!
//! The order is PostgreSQL's: values by their type's order, NULLs placed by
//! each key's `nulls_first` (which the binder sets to PostgreSQL's default,
//! last for ASC and first for DESC, unless written). Rows that tie on every
//! key keep their input order (a stable sort), so `ORDER BY` over an
//! ordered input refines rather than shuffles it.

use std::cmp::Ordering;

use super::{check_indices, BatchResult};
use crate::common::{Datum, Row};
use crate::planner::logical::OrderKey;

/// Sort `rows` (of `width` columns) by `order`, then skip `offset` rows and
/// keep at most `limit`.
pub fn execute_top_n(
    mut rows: Vec<Row>,
    order: &[OrderKey],
    limit: Option<u64>,
    offset: u64,
    width: usize,
) -> BatchResult<Vec<Row>> {
    check_indices("order by", order.iter().map(|k| k.index), width)?;
    let offset = usize::try_from(offset).unwrap_or(usize::MAX);
    // Rows needed from the front of the sorted input.
    let needed = match limit {
        Some(l) => offset.saturating_add(usize::try_from(l).unwrap_or(usize::MAX)),
        None => usize::MAX,
    };
    if needed == 0 || offset >= rows.len() {
        return Ok(Vec::new());
    }
    if !order.is_empty() {
        if needed < rows.len() / 2 {
            rows = smallest(rows, order, needed);
        } else {
            rows.sort_by(|a, b| compare(order, a, b));
        }
    }
    rows.truncate(needed);
    if offset > 0 {
        rows.drain(..offset);
    }
    Ok(rows)
}

/// The first `k` rows in sorted order, in O(n + k log k) instead of a full
/// sort: a selection, then a sort of what was selected. Both are unstable,
/// so ties are broken by input position to keep the result stable.
fn smallest(rows: Vec<Row>, order: &[OrderKey], k: usize) -> Vec<Row> {
    debug_assert!(k > 0 && k < rows.len());
    let mut indexed: Vec<(usize, Row)> = rows.into_iter().enumerate().collect();
    let cmp = |a: &(usize, Row), b: &(usize, Row)| compare(order, &a.1, &b.1).then(a.0.cmp(&b.0));
    indexed.select_nth_unstable_by(k - 1, cmp);
    indexed.truncate(k);
    indexed.sort_unstable_by(cmp);
    indexed.into_iter().map(|(_, r)| r).collect()
}

/// Compare two rows by the order keys.
#[inline]
fn compare(order: &[OrderKey], a: &Row, b: &Row) -> Ordering {
    for key in order {
        let ord = compare_datum(&a[key.index], &b[key.index], key.desc, key.nulls_first);
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// One key's comparison: NULL placement is independent of the direction.
#[inline]
fn compare_datum(a: &Datum, b: &Datum, desc: bool, nulls_first: bool) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) if nulls_first => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) if nulls_first => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) if desc => y.cmp(x),
        (Some(x), Some(y)) => x.cmp(y),
    }
}
