//! `ORDER BY ... [LIMIT n] [OFFSET m]`.
//!
//! The order is PostgreSQL's: values by their type's order, NULLs placed by
//! each key's `nulls_first` (which the binder sets to PostgreSQL's default,
//! last for ASC and first for DESC, unless written). Rows that tie on every
//! key keep their input order (a stable sort), so `ORDER BY` over an
//! ordered input refines rather than shuffles it.

use ebbflow_common::order::compare_rows;

use super::{check_indices, BatchResult};
use ebbflow_common::encoding::encode_datum_ordered;
use ebbflow_common::{Datum, Row, ScalarValue};
use ebbflow_planner::logical::OrderKey;

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
        rows = sort_prefix(rows, order, needed);
    }
    rows.truncate(needed);
    if offset > 0 {
        rows.drain(..offset);
    }
    Ok(rows)
}

/// The rows in sorted order, at least the first `needed` of them (all when
/// `needed` is at least the row count).
///
/// Sorting compares memcomparable keys encoded once per row where the key
/// types allow it, which is several times cheaper than comparing datums on
/// every step; other key types go through [`compare`]. Either way a partial
/// selection replaces the full sort when few rows are needed.
fn sort_prefix(rows: Vec<Row>, order: &[OrderKey], needed: usize) -> Vec<Row> {
    match EncodedKeys::encode(&rows, order) {
        Some(keys) => keys.sort(rows, needed),
        None => sort_by_compare(rows, order, needed),
    }
}

/// The order keys of every row, encoded so that byte order is row order.
struct EncodedKeys {
    /// The keys of all rows, back to back.
    arena: Vec<u8>,
    /// `arena[ends[i - 1]..ends[i]]` is the key of row `i`.
    ends: Vec<usize>,
}

impl EncodedKeys {
    /// `None` if some key value has no encoding whose byte order agrees
    /// exactly with its `Ord` (then ties would not stay in input order).
    fn encode(rows: &[Row], order: &[OrderKey]) -> Option<Self> {
        let mut arena = Vec::with_capacity(rows.len() * 10 * order.len());
        let mut ends = Vec::with_capacity(rows.len());
        for row in rows {
            for key in order {
                if !encode_key(&mut arena, &row[key.index], key) {
                    return None;
                }
            }
            ends.push(arena.len());
        }
        Some(EncodedKeys { arena, ends })
    }

    fn sort(&self, mut rows: Vec<Row>, needed: usize) -> Vec<Row> {
        debug_assert_eq!(rows.len(), self.ends.len());
        // (key, input position): the position breaks ties, so unstable
        // algorithms give the stable order.
        let mut keyed: Vec<(&[u8], usize)> = Vec::with_capacity(rows.len());
        let mut start = 0;
        for (i, &end) in self.ends.iter().enumerate() {
            keyed.push((&self.arena[start..end], i));
            start = end;
        }
        if needed < keyed.len() / 2 {
            keyed.select_nth_unstable(needed - 1);
            keyed.truncate(needed);
        }
        keyed.sort_unstable();
        keyed
            .into_iter()
            .map(|(_, i)| std::mem::take(&mut rows[i]))
            .collect()
    }
}

/// Append the encoding of one key value; false if it has none (see
/// [`EncodedKeys::encode`]).
///
/// The memcomparable value encoding orders values (flipped for DESC); the
/// tag byte in front of it is ours, so that NULLs go first or last as the
/// key says, independently of the direction.
fn encode_key(buf: &mut Vec<u8>, datum: &Datum, key: &OrderKey) -> bool {
    let (null_tag, value_tag) = if key.nulls_first { (0, 1) } else { (1, 0) };
    match datum {
        None => buf.push(null_tag),
        // Their encodings keep the representation after the value (the
        // decimal's scale, the interval's parts), so equal values differ.
        Some(ScalarValue::Decimal(_)) | Some(ScalarValue::Interval(_)) => return false,
        // Encoded in microseconds: finer timestamps would collide.
        Some(ScalarValue::Timestamp(t)) if t.and_utc().timestamp_subsec_nanos() % 1000 != 0 => {
            return false
        }
        Some(_) => {
            let start = buf.len();
            encode_datum_ordered(buf, datum, key.desc);
            buf[start] = value_tag;
        }
    }
    true
}

/// The fallback of [`sort_prefix`] comparing datums.
fn sort_by_compare(mut rows: Vec<Row>, order: &[OrderKey], needed: usize) -> Vec<Row> {
    if needed < rows.len() / 2 {
        smallest(rows, order, needed)
    } else {
        rows.sort_by(|a, b| compare_rows(order, a, b));
        rows
    }
}

/// The first `k` rows in sorted order, in O(n + k log k) instead of a full
/// sort: a selection, then a sort of what was selected. Both are unstable,
/// so ties are broken by input position to keep the result stable.
fn smallest(rows: Vec<Row>, order: &[OrderKey], k: usize) -> Vec<Row> {
    debug_assert!(k > 0 && k < rows.len());
    let mut indexed: Vec<(usize, Row)> = rows.into_iter().enumerate().collect();
    let cmp =
        |a: &(usize, Row), b: &(usize, Row)| compare_rows(order, &a.1, &b.1).then(a.0.cmp(&b.0));
    indexed.select_nth_unstable_by(k - 1, cmp);
    indexed.truncate(k);
    indexed.sort_unstable_by(cmp);
    indexed.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::*;
    use super::*;
    use ebbflow_common::DataType::{self, Int32, Varchar};
    use ebbflow_common::ErrorKind;

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

    /// Rows with many ties, NULLs, NaN and signed zeros in every column.
    fn tricky_rows() -> Vec<Row> {
        use ebbflow_common::ScalarValue as V;
        (0..600i32)
            .map(|i| {
                let h = i.wrapping_mul(7919);
                let int = (h % 13 != 0).then_some(V::Int32(h % 17));
                let float = match h % 7 {
                    0 => None,
                    1 => Some(V::float64(f64::NAN)),
                    2 => Some(V::float64(-0.0)),
                    3 => Some(V::float64(0.0)),
                    4 => Some(V::float64(-1.5)),
                    _ => Some(V::float64((h % 5) as f64)),
                };
                let text = (h % 11 != 0)
                    .then(|| V::varchar(["", "a", "ab", "b", "abcdefghij"][(h % 5) as usize]));
                let dec = (h % 3 != 0).then(|| {
                    V::decimal(rust_decimal::Decimal::new(
                        (h % 4) as i64 * 10,
                        (h % 2) as u32,
                    ))
                });
                vec![int, float, text, dec, Some(V::Int32(i))]
            })
            .collect()
    }

    #[test]
    fn both_sort_paths_match_a_stable_full_sort() {
        let rows = tricky_rows();
        let orders = [
            vec![asc(0)],
            vec![desc(0)],
            vec![key(0, false, true), key(1, true, false)],
            vec![asc(1)],
            vec![desc(1), asc(2)],
            vec![key(2, true, false), key(0, false, true)],
            vec![asc(3)], // decimals: the comparing path
            vec![desc(2), desc(3)],
        ];
        for order in &orders {
            let mut full = rows.clone();
            full.sort_by(|a, b| compare_rows(order, a, b));
            let encoded = EncodedKeys::encode(&rows, order);
            assert_eq!(encoded.is_none(), order.iter().any(|k| k.index == 3));
            for needed in [1, 5, 17, 100, 299, 300, 600] {
                let want = &full[..needed];
                let by_compare = sort_by_compare(rows.clone(), order, needed);
                assert_eq!(&by_compare[..needed], want, "compare {order:?} {needed}");
                if let Some(keys) = &encoded {
                    let by_keys = keys.sort(rows.clone(), needed);
                    assert_eq!(&by_keys[..needed], want, "encoded {order:?} {needed}");
                }
            }
        }
    }

    #[test]
    fn equal_decimals_of_different_scale_stay_in_input_order() {
        let rows = parse_rows("1.00 a\n0.5 b\n1.0 c\n1 d", &[DataType::Decimal, Varchar]);
        let out = execute_top_n(rows.clone(), &[asc(0)], None, 0, 2).unwrap();
        assert_rows_ordered(&out, "0.5 b\n1.00 a\n1.0 c\n1 d");
        let out = execute_top_n(rows, &[desc(0)], Some(2), 0, 2).unwrap();
        assert_rows_ordered(&out, "1.00 a\n1.0 c");
    }

    #[test]
    fn bad_order_index_is_internal_error() {
        let err = execute_top_n(vec![], &[asc(2)], None, 0, 2).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InternalError);
    }
}
