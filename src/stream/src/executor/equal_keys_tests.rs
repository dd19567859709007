//! Equal values are one key everywhere (issue 34): for random values of
//! every type and a second way of writing each (`1.0` as `1.00`, `0` as
//! `-0.000`, `'1 day'` as `'24 hours'`, `0.0` as `-0.0`, NaN with another
//! payload), the key encoding, the vnode (by row and by column) and every
//! in-memory table keyed by values (aggregation and DISTINCT groups, join
//! and over-window caches, top-N and over-window sort keys, the dedup of
//! `count(DISTINCT …)`) treat the two as one, while unequal values stay
//! apart and a value's exact encoding still round-trips as written.

use std::hash::BuildHasher;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rust_decimal::Decimal;

use super::hash_agg::groups::Groups;
use ebbflow_common::encoding::{
    canonical, decode_row, encode_datum_exact_ref, encode_datum_ordered, encode_key_row,
    is_canonical, vnodes_of_column_rows,
};
use ebbflow_common::order::{encode_sort_key, OrderKey};
use ebbflow_common::{
    datum_ref, identical, vnode_of, ColumnBuilder, DataType, Datum, ElemType, FastHashMap,
    Interval, Numeric, ScalarValue, F64,
};
use ebbflow_expr::{create_accumulator, AggCall, AggKind};

fn random_decimal(rng: &mut StdRng) -> Decimal {
    match rng.gen_range(0..6) {
        0 => Decimal::ZERO,
        1 => Decimal::new(rng.gen_range(-5..5), rng.gen_range(0..3)),
        2 => Decimal::from_i128_with_scale(
            rng.gen_range(-(1i128 << 90)..(1i128 << 90)),
            rng.gen_range(0..29),
        ),
        _ => Decimal::new(rng.gen_range(-1_000_000..1_000_000), rng.gen_range(0..8)),
    }
}

fn random_interval(rng: &mut StdRng) -> Interval {
    let day = Interval::MICROS_PER_DAY;
    match rng.gen_range(0..4) {
        0 => Interval::new(
            rng.gen_range(-3..3),
            rng.gen_range(-40..40),
            rng.gen_range(-3..3) * day / 2,
        ),
        1 => Interval::new(0, 0, rng.gen_range(-100 * day..100 * day)),
        2 => Interval::new(
            rng.gen_range(i32::MIN..=i32::MAX),
            rng.gen_range(i32::MIN..=i32::MAX),
            rng.gen(),
        ),
        _ => Interval::new(rng.gen_range(-20..20), rng.gen_range(-20..20), 0),
    }
}

fn random_float(rng: &mut StdRng) -> f64 {
    match rng.gen_range(0..6) {
        0 => 0.0,
        1 => f64::NAN,
        2 => f64::INFINITY,
        3 => f64::NEG_INFINITY,
        _ => rng.gen_range(-1000.0..1000.0_f64).round() / 4.0,
    }
}

/// A random non-null value of `ty` (small domains, so equal values meet).
fn random_value(rng: &mut StdRng, ty: DataType) -> ScalarValue {
    match ty {
        DataType::Int16 => ScalarValue::Int16(rng.gen_range(-3..3)),
        DataType::Int32 => ScalarValue::Int32(rng.gen_range(-3..3)),
        DataType::Int64 => ScalarValue::Int64(rng.gen_range(-3..3)),
        DataType::Float32 => ScalarValue::Float32(F64(random_float(rng) as f32 as f64)),
        DataType::Float64 => ScalarValue::float64(random_float(rng)),
        DataType::Decimal => ScalarValue::Decimal(match rng.gen_range(0..10) {
            0 => Numeric::NaN,
            1 => Numeric::PosInf,
            2 => Numeric::NegInf,
            _ => Numeric::Finite(random_decimal(rng)),
        }),
        DataType::Varchar => {
            ScalarValue::varchar(["", "a", "ab", "abcdefghij"][rng.gen_range(0..4)])
        }
        DataType::Boolean => ScalarValue::Boolean(rng.gen()),
        DataType::Date => ScalarValue::Date(
            chrono::NaiveDate::from_ymd_opt(2024, 1, rng.gen_range(1..4)).expect("valid date"),
        ),
        DataType::Timestamp => ScalarValue::Timestamp(
            chrono::DateTime::from_timestamp_micros(rng.gen_range(-3..3) * 1_000_000)
                .expect("valid timestamp")
                .naive_utc(),
        ),
        DataType::Interval => ScalarValue::Interval(random_interval(rng)),
        DataType::Timestamptz => ScalarValue::Timestamptz(rng.gen_range(-3..3) * 1_000_000),
        DataType::Uuid => ScalarValue::Uuid(rng.gen_range(0..3)),
        DataType::Time => ScalarValue::Time(rng.gen_range(0..3) * 1_000_000),
        DataType::Bytea => {
            ScalarValue::Bytea([b"".as_slice(), b"\x00", b"ab"][rng.gen_range(0..3)].into())
        }
        DataType::Jsonb => {
            // Equal values written differently: `1` and `1.0` in a key.
            let text = ["{\"a\": 1}", "{\"a\": 1.0}", "[1, \"x\"]", "null"][rng.gen_range(0..4)];
            ScalarValue::Jsonb(std::sync::Arc::new(
                ebbflow_common::jsonb::Jsonb::parse(text).expect("json"),
            ))
        }
        DataType::Array(e) => {
            let n = rng.gen_range(0..3);
            ScalarValue::array(
                e,
                (0..n)
                    .map(|_| (!rng.gen_bool(0.2)).then(|| random_value(rng, e.data_type())))
                    .collect(),
            )
        }
    }
}

/// Another way of writing `v`, equal to it under PostgreSQL's equality.
fn rewrite(rng: &mut StdRng, v: &ScalarValue) -> ScalarValue {
    match v {
        ScalarValue::Decimal(Numeric::Finite(d)) => {
            let mut d = d.normalize();
            // A longer scale where the mantissa has room.
            let extra = rng.gen_range(0..4);
            for _ in 0..extra {
                if let Some(x) = d.mantissa().checked_mul(10) {
                    if d.scale() < 28 && x.unsigned_abs() < (1u128 << 95) {
                        d = Decimal::from_i128_with_scale(x, d.scale() + 1);
                    }
                }
            }
            if d.is_zero() && rng.gen_bool(0.5) {
                d.set_sign_negative(true);
            }
            ScalarValue::decimal(d)
        }
        ScalarValue::Interval(i) => {
            // Move whole months into days and whole days into micros.
            let mut j = *i;
            if rng.gen_bool(0.5) {
                if let Ok(days) = (j.months as i64 * 30 + j.days as i64).try_into() {
                    j = Interval::new(0, days, j.micros);
                }
            }
            if rng.gen_bool(0.5) {
                if let Some(m) = (j.days as i64)
                    .checked_mul(Interval::MICROS_PER_DAY)
                    .and_then(|x| x.checked_add(j.micros))
                {
                    j = Interval::new(j.months, 0, m);
                }
            }
            ScalarValue::Interval(j)
        }
        ScalarValue::Float64(x) | ScalarValue::Float32(x) => {
            let y = if x.0 == 0.0 {
                -x.0
            } else if x.0.is_nan() {
                f64::from_bits(0xfff8_0000_0000_0001)
            } else {
                x.0
            };
            match v {
                ScalarValue::Float32(_) => ScalarValue::Float32(F64(y)),
                _ => ScalarValue::float64(y),
            }
        }
        ScalarValue::Array(a) => ScalarValue::array(
            a.elem,
            a.items
                .iter()
                .map(|d| d.as_ref().map(|x| rewrite(rng, x)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn every_type() -> Vec<DataType> {
    let mut types: Vec<DataType> = ElemType::ALL.iter().map(|e| e.data_type()).collect();
    types.extend(ElemType::ALL.iter().map(|e| DataType::Array(*e)));
    types
}

fn key_bytes(row: &[Datum]) -> Vec<u8> {
    let mut b = Vec::new();
    encode_key_row(&mut b, row);
    b
}

fn column_of(ty: DataType, values: &[Datum]) -> ebbflow_common::Column {
    let mut b = ColumnBuilder::new(Some(ty), values.len());
    for v in values {
        b.push(datum_ref(v));
    }
    b.finish()
}

#[test]
fn equal_values_are_one_key_everywhere() {
    let mut rng = StdRng::seed_from_u64(34);
    let mut rewritten = 0;
    for ty in every_type() {
        for _ in 0..400 {
            let a = random_value(&mut rng, ty);
            let b = rewrite(&mut rng, &a);
            let c = random_value(&mut rng, ty);
            assert_eq!(a, b, "{ty}: a rewrite is equal");
            if !identical(&[Some(a.clone())], &[Some(b.clone())]) {
                rewritten += 1;
            }
            let (ra, rb, rc) = (
                vec![Some(a.clone())],
                vec![Some(b.clone())],
                vec![Some(c.clone())],
            );

            // The key encoding, both directions: equal iff the values are.
            assert_eq!(key_bytes(&ra), key_bytes(&rb), "{ty}: {a:?} / {b:?}");
            assert_eq!(
                key_bytes(&ra) == key_bytes(&rc),
                a == c,
                "{ty}: {a:?} / {c:?}"
            );
            for desc in [false, true] {
                let enc = |d: &Datum| {
                    let mut buf = Vec::new();
                    encode_datum_ordered(&mut buf, d, desc);
                    buf
                };
                assert_eq!(enc(&ra[0]), enc(&rb[0]));
                // Order agrees with the values'.
                let want = if desc { c.cmp(&a) } else { a.cmp(&c) };
                assert_eq!(enc(&ra[0]).cmp(&enc(&rc[0])), want, "{ty}: {a:?} vs {c:?}");
                // A key decodes to the canonical representative.
                let back = decode_row(&enc(&rb[0]), &[ty], &[desc]).expect("decodes");
                assert_eq!(back[0], Some(canonical(&b)));
                assert!(identical(&back, &[Some(canonical(&a))]), "{ty}: {back:?}");
            }
            assert!(is_canonical(&canonical(&b)), "{ty}: {b:?}");

            // An exact encoding gives back the value as written.
            let mut exact = Vec::new();
            encode_datum_exact_ref(&mut exact, datum_ref(&rb[0]));
            let back = decode_row(&exact, &[ty], &[]).expect("decodes");
            assert!(
                identical(&back, &rb)
                    || matches!(&b, ScalarValue::Float32(x) | ScalarValue::Float64(x) if x.0.is_nan()),
                "{ty}: {b:?} came back as {back:?}"
            );

            // The vnode, by row and by column, in a key of two columns.
            let rows = [
                vec![Some(a.clone()), Some(ScalarValue::Int32(1))],
                vec![Some(b.clone()), Some(ScalarValue::Int32(1))],
            ];
            assert_eq!(vnode_of(&rows[0], &[0, 1]), vnode_of(&rows[1], &[0, 1]));
            let columns = [
                column_of(ty, &[ra[0].clone(), rb[0].clone()]),
                column_of(
                    DataType::Int32,
                    &[Some(ScalarValue::Int32(1)), Some(ScalarValue::Int32(1))],
                ),
            ];
            let vnodes = vnodes_of_column_rows(&columns, &[0, 1], &[0, 1]);
            assert_eq!(vnodes[0], vnodes[1]);
            assert_eq!(vnodes[0], vnode_of(&rows[0], &[0, 1]));

            // Aggregation and DISTINCT groups: by row and by column.
            let mut groups = Groups::new(2, &[], false);
            let h = groups.hash_row(&rows[0], &[0, 1]);
            let g = groups.insert(h, rows[0].clone());
            let hb = groups.hash_row(&rows[1], &[0, 1]);
            assert_eq!(h, hb, "{ty}: group hash of {a:?} / {b:?}");
            assert_eq!(groups.find_row(hb, &rows[1]), Some(g));
            let by_column = groups.hash_rows(&columns, &[0, 1], &[0, 1]);
            assert_eq!(by_column, vec![h, h]);
            assert_eq!(groups.find_at(by_column[1], &columns, &[0, 1], 1), Some(g));

            // Join and over-window caches (keyed by the datums).
            let mut cache: FastHashMap<Vec<Datum>, u32> = FastHashMap::default();
            cache.insert(rows[0].clone(), 1);
            assert_eq!(cache.get(&rows[1]), Some(&1));
            let s = cache.hasher();
            assert_eq!(s.hash_one(&rows[0]), s.hash_one(&rows[1]));

            // Top-N and over-window sort keys: order columns, then the pk.
            let order = [OrderKey {
                index: 0,
                desc: rng.gen(),
                nulls_first: rng.gen(),
            }];
            let sort_key = |row: &[Datum]| {
                let mut k = Vec::new();
                encode_sort_key(&mut k, &order, row);
                encode_key_row(&mut k, row);
                k
            };
            assert_eq!(sort_key(&rows[0]), sort_key(&rows[1]));

            // The dedup of count(DISTINCT …).
            let mut acc = create_accumulator(&AggCall {
                kind: AggKind::Count,
                arg: Some(0),
                arg_type: Some(ty),
                return_type: DataType::Int64,
                distinct: true,
            });
            acc.update(true, &ra[0]).expect("update");
            acc.update(true, &rb[0]).expect("update");
            assert_eq!(acc.output().expect("output"), Some(ScalarValue::Int64(1)));
            acc.update(false, &ra[0]).expect("update");
            assert_eq!(acc.output().expect("output"), Some(ScalarValue::Int64(1)));
            acc.update(false, &rb[0]).expect("update");
            assert_eq!(acc.output().expect("output"), Some(ScalarValue::Int64(0)));
        }
    }
    assert!(
        rewritten > 500,
        "only {rewritten} values were written another way"
    );
}

/// The canonical interval has the same total, and its parts one sign.
#[test]
fn canonical_intervals() {
    let day = Interval::MICROS_PER_DAY;
    let c = Interval::new(0, 0, 24 * 3600 * 1_000_000).canonical();
    assert_eq!((c.months, c.days, c.micros), (0, 1, 0));
    let c = Interval::new(0, 30, 0).canonical();
    assert_eq!((c.months, c.days, c.micros), (1, 0, 0));
    let c = Interval::new(0, -1, 2 * 3600 * 1_000_000).canonical();
    assert_eq!((c.months, c.days, c.micros), (0, 0, -22 * 3600 * 1_000_000));
    let big = Interval::new(i32::MAX, i32::MAX, i64::MAX);
    let c = big.canonical();
    assert_eq!(c.total_micros(), big.total_micros());
    let small = Interval::new(i32::MIN, i32::MIN, i64::MIN + day);
    assert_eq!(small.canonical().total_micros(), small.total_micros());
}
