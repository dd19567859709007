//! Tests of the row encodings: vnodes by column and by row, key order,
//! key and value round trips, and the self-describing encoding.

use super::*;
use crate::types::cmp_datum_nulls_last;

/// The column-at-a-time vnodes equal [`vnode_of`] the rows (what DML
/// routing and state tables use), for the
/// integer fast paths (with and without NULLs) and the general path.
#[test]
fn vnodes_of_columns_match_rows() {
    use crate::column::ColumnBuilder;
    let n = 300usize;
    let build = |ty: DataType, f: &dyn Fn(usize) -> Datum| {
        let mut b = ColumnBuilder::new(Some(ty), n);
        for i in 0..n {
            b.push(datum_ref(&f(i)));
        }
        b.finish()
    };
    let columns = vec![
        build(DataType::Int32, &|i| {
            Some(ScalarValue::Int32(i as i32 * 7919 - 1000))
        }),
        build(DataType::Int64, &|i| {
            Some(ScalarValue::Int64(-(i as i64) << 40))
        }),
        build(DataType::Int32, &|i| {
            (i % 3 != 0).then_some(ScalarValue::Int32(i as i32))
        }),
        build(DataType::Varchar, &|i| {
            Some(ScalarValue::Varchar(format!("k{i}").into()))
        }),
    ];
    let rows: Vec<usize> = (0..n).filter(|i| i % 5 != 1).collect();
    for key in [
        vec![0],
        vec![1],
        vec![2],
        vec![3],
        vec![0, 3, 1],
        vec![2, 0],
        vec![],
    ] {
        let want: Vec<VirtualNode> = rows
            .iter()
            .map(|&i| {
                let row: Vec<Datum> = columns.iter().map(|c| c.datum(i)).collect();
                vnode_of(&row, &key)
            })
            .collect();
        assert_eq!(
            vnodes_of_column_rows(&columns, &key, &rows),
            want,
            "key {key:?}"
        );
    }
    assert!(matches!(columns[0], Column::Int32(_)));
    assert!(matches!(columns[1], Column::Int64(_)));
}

fn enc(d: Datum) -> Vec<u8> {
    let mut b = Vec::new();
    encode_datum(&mut b, &d);
    b
}

#[test]
fn order_matches_values() {
    let vals: Vec<Datum> = vec![
        Some(ScalarValue::Int64(-5)),
        Some(ScalarValue::Int64(0)),
        Some(ScalarValue::Int64(7)),
        None,
    ];
    let encs: Vec<_> = vals.iter().cloned().map(enc).collect();
    assert!(encs.windows(2).all(|w| w[0] < w[1]));
    let ds: Vec<Numeric> = [
        "-Infinity",
        "-100.5",
        "-2",
        "-1.99",
        "0",
        "0.001",
        "1",
        "1.5",
        "10",
        "99.9",
        "Infinity",
        "NaN",
    ]
    .iter()
    .map(|s| crate::text::parse_numeric(s).unwrap())
    .collect();
    assert!(ds.windows(2).all(|w| w[0] < w[1]), "{ds:?}");
    let encs: Vec<_> = ds
        .iter()
        .map(|d| enc(Some(ScalarValue::Decimal(*d))))
        .collect();
    assert!(encs.windows(2).all(|w| w[0] < w[1]), "{ds:?}");
    let ss = ["", "a", "ab", "abcdefgh", "abcdefghi", "b"];
    let encs: Vec<_> = ss
        .iter()
        .map(|s| enc(Some(ScalarValue::varchar(*s))))
        .collect();
    assert!(encs.windows(2).all(|w| w[0] < w[1]));
    let fs = [f64::NEG_INFINITY, -1.5, 0.0, 2.0, f64::INFINITY, f64::NAN];
    let encs: Vec<_> = fs
        .iter()
        .map(|f| enc(Some(ScalarValue::float64(*f))))
        .collect();
    assert!(encs.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn round_trip() {
    let types = [
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Float64,
        DataType::Decimal,
        DataType::Varchar,
        DataType::Boolean,
        DataType::Interval,
        DataType::Decimal,
        DataType::Decimal,
        DataType::Decimal,
    ];
    let row: Row = vec![
        Some(ScalarValue::Int16(-3)),
        None,
        Some(ScalarValue::Int64(i64::MIN)),
        Some(ScalarValue::float64(-2.5)),
        Some(ScalarValue::decimal("-12.3400".parse().unwrap())),
        Some(ScalarValue::varchar("hello, world!")),
        Some(ScalarValue::Boolean(true)),
        Some(ScalarValue::Interval(Interval::new(1, -2, 3))),
        Some(ScalarValue::decimal("100".parse().unwrap())),
        Some(ScalarValue::Decimal(Numeric::NaN)),
        Some(ScalarValue::Decimal(Numeric::NegInf)),
    ];
    let scale = |r: &Row| match &r[4] {
        Some(ScalarValue::Decimal(Numeric::Finite(d))) => d.scale(),
        _ => u32::MAX,
    };
    // A key comes back equal, as the canonical representative.
    for desc in [false, true] {
        let dirs = vec![desc; types.len()];
        let mut buf = Vec::new();
        encode_key_ordered(&mut buf, &row, &dirs);
        let back = decode_row(&buf, &types, &dirs).unwrap();
        assert_eq!(back, row);
        assert_eq!(scale(&back), 2);
    }
    // A value comes back as written.
    let mut buf = Vec::new();
    encode_value_row(&mut buf, &row);
    let back = decode_row(&buf, &types, &[]).unwrap();
    assert!(crate::identical(&back, &row));
    assert_eq!(scale(&back), 4);
}

// The self-describing encoding and arrays.

/// Arrays order as PostgreSQL's `array_cmp` (a prefix first, NULL
/// elements last), in values and in their key encoding alike, both
/// directions, and round-trip through both encodings.
#[test]
fn arrays_order_and_round_trip() {
    let arr = |items: &[Option<i32>]| {
        Some(ScalarValue::array(
            ElemType::Int32,
            items.iter().map(|v| v.map(ScalarValue::Int32)).collect(),
        ))
    };
    let sorted: Vec<Datum> = vec![
        arr(&[]),
        arr(&[Some(-1)]),
        arr(&[Some(1)]),
        arr(&[Some(1), Some(2)]),
        arr(&[Some(1), Some(2), Some(0)]),
        arr(&[Some(1), None]),
        arr(&[Some(2)]),
        arr(&[None]),
        arr(&[None, None]),
        None,
    ];
    for w in sorted.windows(2) {
        assert_eq!(cmp_datum_nulls_last(&w[0], &w[1]), std::cmp::Ordering::Less);
    }
    for desc in [false, true] {
        let encs: Vec<Vec<u8>> = sorted
            .iter()
            .map(|d| {
                let mut b = Vec::new();
                encode_datum_ordered(&mut b, d, desc);
                b
            })
            .collect();
        assert!(encs
            .windows(2)
            .all(|w| if desc { w[0] > w[1] } else { w[0] < w[1] }));
        let ty = DataType::Array(ElemType::Int32);
        for (e, d) in encs.iter().zip(&sorted) {
            assert_eq!(&decode_row(e, &[ty], &[desc]).unwrap()[0], d);
        }
    }
    let row: Row = sorted;
    let mut buf = Vec::new();
    encode_row_tagged(&mut buf, &row);
    assert_eq!(decode_row_tagged(&buf).unwrap(), row);
}

#[test]
fn tagged_round_trip() {
    let row: Row = vec![
        Some(ScalarValue::Int32(5)),
        None,
        Some(ScalarValue::varchar("abcdefghijk")),
        Some(ScalarValue::decimal("3.140".parse().unwrap())),
    ];
    let mut buf = Vec::new();
    encode_row_tagged(&mut buf, &row);
    assert_eq!(decode_row_tagged(&buf).unwrap(), row);
}
