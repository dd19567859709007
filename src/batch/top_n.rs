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

#[cfg(test)]
mod tests {
    use super::super::test_utils::*;
    use super::*;
    use crate::common::DataType::{self, Int32, Varchar};

    const T: &[DataType] = &[Int32, Varchar];
    const ROWS: &str = "3 a\n. b\n1 c\n3 d\n. e\n2 f";

    fn key(index: usize, desc: bool, nulls_first: bool) -> OrderKey {
        OrderKey {
            index,
            desc,
            nulls_first,
        }
    }

    /// PostgreSQL's default NULL placement for the direction.
    fn asc(index: usize) -> OrderKey {
        key(index, false, false)
    }

    fn desc(index: usize) -> OrderKey {
        key(index, true, true)
    }

    fn run(order: &[OrderKey], limit: Option<u64>, offset: u64) -> Vec<Row> {
        execute_top_n(parse_rows(ROWS, T), order, limit, offset, 2).unwrap()
    }

    #[test]
    fn asc_nulls_last_and_stable() {
        assert_rows_ordered(&run(&[asc(0)], None, 0), "1 c\n2 f\n3 a\n3 d\n. b\n. e");
    }

    #[test]
    fn desc_nulls_first_and_stable() {
        assert_rows_ordered(&run(&[desc(0)], None, 0), ". b\n. e\n3 a\n3 d\n2 f\n1 c");
    }

    #[test]
    fn explicit_null_placement() {
        let asc_first = key(0, false, true);
        assert_rows_ordered(&run(&[asc_first], None, 0), ". b\n. e\n1 c\n2 f\n3 a\n3 d");
        let desc_last = key(0, true, false);
        assert_rows_ordered(&run(&[desc_last], None, 0), "3 a\n3 d\n2 f\n1 c\n. b\n. e");
    }

    #[test]
    fn second_key_breaks_ties() {
        let out = run(&[desc(0), key(1, true, true)], None, 0);
        assert_rows_ordered(&out, ". e\n. b\n3 d\n3 a\n2 f\n1 c");
    }

    #[test]
    fn limit_and_offset() {
        assert_rows_ordered(&run(&[asc(0)], Some(2), 0), "1 c\n2 f");
        assert_rows_ordered(&run(&[asc(0)], Some(2), 1), "2 f\n3 a");
        assert_rows_ordered(&run(&[asc(0)], None, 4), ". b\n. e");
        assert_rows_ordered(&run(&[asc(0)], Some(100), 5), ". e");
        assert!(run(&[asc(0)], Some(0), 0).is_empty());
        assert!(run(&[asc(0)], None, 6).is_empty());
        assert!(run(&[asc(0)], Some(u64::MAX), u64::MAX).is_empty());
        assert_eq!(run(&[asc(0)], Some(u64::MAX), 0).len(), 6);
    }

    #[test]
    fn limit_without_order_keeps_input_order() {
        assert_rows_ordered(&run(&[], Some(2), 1), ". b\n1 c");
    }

    #[test]
    fn small_limit_selection_matches_full_sort() {
        // Many ties and NULLs, so stability is exercised on the selection path.
        let rows: Vec<Row> = (0..500i32)
            .map(|i| {
                let k = (i.wrapping_mul(7919) % 13 != 0).then_some(i * 31 % 17);
                vec![
                    k.map(crate::common::ScalarValue::Int32),
                    Some(crate::common::ScalarValue::Int32(i)),
                ]
            })
            .collect();
        for order in [vec![asc(0)], vec![desc(0)], vec![key(0, false, true)]] {
            let mut full = rows.clone();
            full.sort_by(|a, b| compare(&order, a, b));
            for (limit, offset) in [(1, 0), (5, 0), (10, 3), (100, 20), (249, 0)] {
                let out = execute_top_n(rows.clone(), &order, Some(limit), offset, 2).unwrap();
                let want: Vec<Row> = full
                    .iter()
                    .skip(offset as usize)
                    .take(limit as usize)
                    .cloned()
                    .collect();
                assert_eq!(out, want, "order {order:?} limit {limit} offset {offset}");
            }
        }
    }

    #[test]
    fn bad_order_index_is_internal_error() {
        let err = execute_top_n(vec![], &[asc(2)], None, 0, 2).unwrap_err();
        assert_eq!(err.code, "XX000");
    }
}
