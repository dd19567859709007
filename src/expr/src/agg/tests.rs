//! Expected values were produced by PostgreSQL 15 (psql).

use super::*;
use crate::agg_return_type;
use ebbflow_common::text::{format_datum, parse_datum};
use ebbflow_common::ErrorKind;

fn call(kind: AggKind, arg: Option<DataType>, distinct: bool) -> AggCall {
    AggCall {
        kind,
        arg: arg.map(|_| 0),
        arg_type: arg,
        return_type: agg_return_type(kind, arg).expect("aggregate type"),
        distinct,
    }
}

fn val(ty: DataType, s: &str) -> Datum {
    if s == "NULL" {
        None
    } else {
        Some(parse_datum(ty, s).expect("test value"))
    }
}

fn out(acc: &dyn Accumulator) -> String {
    match acc.output() {
        Ok(Some(v)) => format_datum(&v),
        Ok(None) => "NULL".into(),
        Err(e) => format!("ERR {} {}", e.kind(), e),
    }
}

/// Feed `v` (insert) / `~v` (retract) updates and return the output; also checks that a
/// save/load round trip and a clone give the same output.
fn run(kind: AggKind, ty: DataType, distinct: bool, updates: &[&str]) -> String {
    let c = call(kind, Some(ty), distinct);
    let mut acc = create_accumulator(&c);
    for u in updates {
        let (insert, v) = match u.strip_prefix('~') {
            Some(v) => (false, v),
            None => (true, *u),
        };
        acc.update(insert, &val(ty, v)).expect("update");
    }
    let result = out(acc.as_ref());
    let mut restored = create_accumulator(&c);
    restored.load(&acc.save()).expect("load");
    assert_eq!(out(restored.as_ref()), result, "save/load");
    assert_eq!(out(acc.box_clone().as_ref()), result, "clone");
    result
}

use DataType::*;

#[test]
fn avg_matches_postgres_scale() {
    assert_eq!(
        run(AggKind::Avg, Int32, false, &["1", "2", "3", "4"]),
        "2.5000000000000000"
    );
    assert_eq!(
        run(AggKind::Avg, Int32, false, &["1", "2", "2"]),
        "1.6666666666666667"
    );
    assert_eq!(
        run(AggKind::Avg, Int32, false, &["100000", "200000", "200000"]),
        "166666.666666666667"
    );
    assert_eq!(
        run(AggKind::Avg, Decimal, false, &["1.5", "2.25"]),
        "1.8750000000000000"
    );
    assert_eq!(
        run(AggKind::Avg, Int64, false, &["1", "2"]),
        "1.5000000000000000"
    );
    assert_eq!(run(AggKind::Avg, Float32, false, &["1", "2"]), "1.5");
    assert_eq!(
        run(AggKind::Avg, Interval, false, &["1", "2"]),
        "00:00:01.5"
    );
    assert_eq!(run(AggKind::Avg, Int32, false, &[]), "NULL");
}

#[test]
fn sums() {
    assert_eq!(run(AggKind::Sum, Decimal, false, &["1.5", "2.25"]), "3.75");
    assert_eq!(run(AggKind::Sum, Int16, false, &["1", "2"]), "3");
    assert_eq!(run(AggKind::Sum, Int64, false, &["1", "2"]), "3");
    assert_eq!(run(AggKind::Sum, Float32, false, &["1", "2"]), "3");
    assert_eq!(run(AggKind::Sum, Interval, false, &["1", "2"]), "00:00:03");
    // sum(int) does not overflow the accumulator; sum(bigint) is numeric.
    assert_eq!(
        run(AggKind::Sum, Int32, false, &["2147483647", "2147483647"]),
        "4294967294"
    );
    assert_eq!(
        run(
            AggKind::Sum,
            Int64,
            false,
            &["9223372036854775807", "9223372036854775807"]
        ),
        "18446744073709551614"
    );
    // Back to no inputs: NULL, not 0.
    assert_eq!(run(AggKind::Sum, Int32, false, &["1", "~1"]), "NULL");
    assert_eq!(run(AggKind::Sum, Int32, false, &["1", "NULL"]), "1");
    // The scale follows the current inputs only.
    assert_eq!(
        run(AggKind::Sum, Decimal, false, &["1.500", "2", "~1.500"]),
        "2"
    );
    assert_eq!(
        run(AggKind::Sum, Decimal, false, &["1.5", "2.25", "~1.5"]),
        "2.25"
    );
    // Specials retract exactly.
    assert_eq!(
        run(
            AggKind::Sum,
            Float64,
            false,
            &["Infinity", "1", "~Infinity"]
        ),
        "1"
    );
    assert_eq!(
        run(AggKind::Sum, Float64, false, &["Infinity", "-Infinity"]),
        "NaN"
    );
    assert_eq!(run(AggKind::Sum, Float64, false, &["NaN", "1"]), "NaN");
    assert_eq!(
        run(
            AggKind::Sum,
            Float64,
            false,
            &["0.1", "0.2", "~0.1", "~0.2", "5"]
        ),
        "5"
    );
}

#[test]
fn count_min_max() {
    let c = call(AggKind::CountStar, None, false);
    let mut acc = create_accumulator(&c);
    assert_eq!(out(acc.as_ref()), "0");
    acc.update(true, &None).expect("update");
    acc.update(true, &None).expect("update");
    acc.update(false, &None).expect("update");
    assert_eq!(out(acc.as_ref()), "1");
    assert_eq!(run(AggKind::Count, Int32, false, &["1", "NULL", "2"]), "2");
    assert_eq!(run(AggKind::Count, Int32, false, &[]), "0");
    assert_eq!(run(AggKind::Min, Int32, false, &["3", "1", "2", "~1"]), "2");
    assert_eq!(
        run(AggKind::Max, Varchar, false, &["a", "c", "b", "c", "~c"]),
        "c"
    );
    assert_eq!(
        run(AggKind::Max, Varchar, false, &["a", "c", "b", "~c"]),
        "b"
    );
    assert_eq!(run(AggKind::Min, Int32, false, &["1", "~1"]), "NULL");
    assert_eq!(run(AggKind::Max, Float64, false, &["1", "NaN"]), "NaN");
    let mut acc = create_accumulator(&call(AggKind::Min, Some(Int32), false));
    let e = acc
        .update(false, &val(Int32, "1"))
        .expect_err("retract missing");
    assert_eq!(e.kind(), ErrorKind::InternalError);
}

#[test]
fn distinct_aggregates() {
    assert_eq!(
        run(AggKind::Count, Int32, true, &["1", "1", "2", "NULL"]),
        "2"
    );
    assert_eq!(
        run(AggKind::Count, Int32, true, &["1", "1", "2", "~1"]),
        "2"
    );
    assert_eq!(
        run(AggKind::Count, Int32, true, &["1", "1", "2", "~1", "~1"]),
        "1"
    );
    assert_eq!(run(AggKind::Sum, Int32, true, &["1", "1", "2"]), "3");
    assert_eq!(
        run(AggKind::Avg, Int32, true, &["1", "1", "2"]),
        "1.5000000000000000"
    );
    assert_eq!(run(AggKind::Max, Int32, true, &["5", "5", "~5"]), "5");
}

#[test]
fn corrupt_state_is_an_error() {
    let mut acc = create_accumulator(&call(AggKind::Sum, Some(Int32), false));
    assert!(acc.load(&[Some(ScalarValue::Boolean(true))]).is_err());
    let mut acc = create_accumulator(&call(AggKind::Count, Some(Int32), true));
    assert!(acc.load(&[Some(ScalarValue::Int64(5))]).is_err());
}

#[test]
fn bool_and_or_retract_exactly() {
    let and = |u: &[&str]| run(AggKind::BoolAnd, Boolean, false, u);
    let or = |u: &[&str]| run(AggKind::BoolOr, Boolean, false, u);
    assert_eq!(and(&["true", "false", "NULL"]), "f");
    assert_eq!(and(&["true", "false", "~false"]), "t");
    assert_eq!(and(&["NULL"]), "NULL");
    assert_eq!(and(&["false", "~false"]), "NULL");
    assert_eq!(or(&["false", "true", "true", "~true"]), "t");
    assert_eq!(or(&["false", "true", "~true"]), "f");
}

#[test]
fn bit_aggregates_retract_exactly() {
    let bits = |kind, ty, u: &[&str]| run(kind, ty, false, u);
    assert_eq!(bits(AggKind::BitAnd, Int32, &["12", "10"]), "8");
    // A retracted input's missing bits come back.
    assert_eq!(bits(AggKind::BitAnd, Int32, &["12", "10", "~10"]), "12");
    assert_eq!(bits(AggKind::BitOr, Int32, &["12", "10", "~10"]), "12");
    assert_eq!(bits(AggKind::BitXor, Int32, &["12", "10", "~10"]), "12");
    // Negative inputs: all 64 bits counted, the result narrowed back.
    assert_eq!(bits(AggKind::BitAnd, Int16, &["-1", "-6"]), "-6");
    assert_eq!(
        bits(AggKind::BitOr, Int64, &["-9223372036854775808", "1"]),
        "-9223372036854775807"
    );
    assert_eq!(bits(AggKind::BitXor, Int64, &["-1", "5"]), "-6");
    assert_eq!(bits(AggKind::BitOr, Int32, &["NULL"]), "NULL");
    assert_eq!(bits(AggKind::BitAnd, Int32, &["3", "~3"]), "NULL");
    assert_eq!(run(AggKind::BitXor, Int32, true, &["5", "5", "3"]), "6");
}

#[test]
fn numeric_sums_count_specials() {
    // PostgreSQL 15: NaN wins, +Infinity and -Infinity together are NaN.
    assert_eq!(
        run(AggKind::Sum, Decimal, false, &["1.5", "Infinity"]),
        "Infinity"
    );
    assert_eq!(
        run(AggKind::Avg, Decimal, false, &["1", "-Infinity"]),
        "-Infinity"
    );
    assert_eq!(
        run(AggKind::Sum, Decimal, false, &["Infinity", "-Infinity"]),
        "NaN"
    );
    assert_eq!(run(AggKind::Sum, Decimal, false, &["NaN", "2"]), "NaN");
    // Retracting the specials gives the finite total back, with its scale.
    assert_eq!(
        run(
            AggKind::Sum,
            Decimal,
            false,
            &["1.50", "NaN", "Infinity", "~NaN", "~Infinity"]
        ),
        "1.50"
    );
    assert_eq!(
        run(AggKind::Max, Decimal, false, &["Infinity", "NaN", "1"]),
        "NaN"
    );
    assert_eq!(
        run(AggKind::Min, Decimal, false, &["Infinity", "-Infinity"]),
        "-Infinity"
    );
}

/// `string_agg` over packed inputs `[value, delimiter, directions, keys…]`.
fn string_agg(inputs: &[(bool, &str, &str, i32)], desc: bool) -> String {
    let c = AggCall {
        kind: AggKind::StringAgg,
        arg: Some(0),
        arg_type: Some(Varchar),
        return_type: Varchar,
        distinct: false,
    };
    let mut acc = create_accumulator(&c);
    for (insert, value, delimiter, key) in inputs {
        let packed = pack_string_agg_input(&[
            Some(ScalarValue::varchar(*value)),
            Some(ScalarValue::varchar(*delimiter)),
            Some(ScalarValue::varchar(if desc { "d" } else { "a" })),
            Some(ScalarValue::Int32(*key)),
        ])
        .expect("pack");
        acc.update(*insert, &packed).expect("update");
    }
    let result = out(acc.as_ref());
    let mut restored = create_accumulator(&c);
    restored.load(&acc.save()).expect("load");
    assert_eq!(out(restored.as_ref()), result, "save/load");
    result
}

#[test]
fn string_agg_orders_and_retracts() {
    let rows = [
        (true, "b", ",", 2),
        (true, "a|", "--", 1),
        (true, "c", ";", 10),
        (true, "b", ",", 2),
    ];
    assert_eq!(string_agg(&rows, false), "a|,b,b;c");
    assert_eq!(string_agg(&rows, true), "c,b,b--a|");
    let mut retracted = rows.to_vec();
    retracted.push((false, "b", ",", 2));
    retracted.push((false, "a|", "--", 1));
    assert_eq!(string_agg(&retracted, false), "b;c");
    retracted.push((false, "b", ",", 2));
    retracted.push((false, "c", ";", 10));
    assert_eq!(string_agg(&retracted, false), "NULL");
    // A NULL value is skipped; a NULL delimiter is empty.
    let packed = pack_string_agg_input(&[None, Some(ScalarValue::varchar(","))]).expect("pack");
    assert_eq!(packed, None);
    let packed = pack_string_agg_input(&[Some(ScalarValue::varchar("x")), None]).expect("pack");
    assert_eq!(packed, Some(ScalarValue::varchar("|0:x")));
}

/// Over an append-only input, min/max keep the one extreme value: the
/// same results as the multiset, one datum of state, and a retraction is
/// an internal error rather than a wrong answer.
#[test]
fn append_only_min_max_keep_one_value() {
    for (kind, want) in [(AggKind::Max, "9"), (AggKind::Min, "-3")] {
        for distinct in [false, true] {
            let c = call(kind, Some(DataType::Int32), distinct);
            let mut acc = create_accumulator_for(&c, true);
            assert_eq!(out(acc.as_ref()), "NULL");
            assert_eq!(acc.save(), Vec::<Datum>::new());
            for v in ["4", "NULL", "9", "-3", "9", "0"] {
                acc.update(true, &val(DataType::Int32, v)).expect("insert");
            }
            assert_eq!(out(acc.as_ref()), want);
            let saved = acc.save();
            assert_eq!(saved.len(), 1);
            let mut back = create_accumulator_for(&c, true);
            back.load(&saved).expect("load");
            assert_eq!(out(back.as_ref()), want);
            let err = acc
                .update(false, &val(DataType::Int32, "9"))
                .expect_err("retraction");
            assert_eq!(err.kind(), ErrorKind::InternalError);
        }
    }
}
