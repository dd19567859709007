//! Expected values were produced by PostgreSQL 15 (psql).

use crate::{build_cast, build_func, Expr, Func};
use ebbflow_common::text::format_datum;
use ebbflow_common::ErrorKind;
use ebbflow_common::{DataType, ScalarValue};

use DataType::*;

/// A typed literal parsed from PostgreSQL text (`NULL` for NULL).
fn lit(ty: DataType, s: &str) -> Expr {
    if s == "NULL" {
        return Expr::literal(None, ty);
    }
    let v = ebbflow_common::text::parse_datum(ty, s).expect("test literal");
    Expr::literal(Some(v), ty)
}

/// An input column: values are fed through a row so nothing folds.
fn col(i: usize, ty: DataType) -> Expr {
    Expr::input_ref(i, ty)
}

fn show(r: crate::ExprResult<ebbflow_common::Datum>) -> String {
    match r {
        Ok(Some(v)) => format_datum(&v),
        Ok(None) => "NULL".into(),
        Err(e) => format!("ERR {} {}", e.kind(), e),
    }
}

/// Evaluate `func` over typed text values passed as input columns.
fn call(func: Func, args: &[(DataType, &str)]) -> String {
    let row: Vec<_> = args
        .iter()
        .map(|(t, s)| match lit(*t, s) {
            Expr::Literal { value, .. } => value,
            _ => None,
        })
        .collect();
    let exprs = args
        .iter()
        .enumerate()
        .map(|(i, (t, _))| col(i, *t))
        .collect();
    match build_func(func, exprs) {
        Ok(e) => show(e.eval(&row)),
        Err(e) => format!("ERR {} {}", e.kind(), e),
    }
}

fn cast(from: DataType, s: &str, to: DataType) -> String {
    let row = match lit(from, s) {
        Expr::Literal { value, .. } => vec![value],
        _ => vec![],
    };
    match build_cast(col(0, from), to, true) {
        Ok(e) => show(e.eval(&row)),
        Err(e) => format!("ERR {} {}", e.kind(), e),
    }
}

#[test]
fn integer_arithmetic() {
    assert_eq!(call(Func::Div, &[(Int32, "7"), (Int32, "2")]), "3");
    assert_eq!(call(Func::Div, &[(Int32, "-7"), (Int32, "2")]), "-3");
    assert_eq!(call(Func::Mod, &[(Int32, "-7"), (Int32, "2")]), "-1");
    assert_eq!(call(Func::Mod, &[(Int32, "7"), (Int32, "-2")]), "1");
    assert_eq!(call(Func::Div, &[(Int16, "5"), (Int16, "2")]), "2");
    assert_eq!(
        call(Func::Add, &[(Int32, "2147483647"), (Int32, "1")]),
        "ERR numeric_value_out_of_range integer out of range"
    );
    assert_eq!(
        call(Func::Add, &[(Int16, "32767"), (Int16, "1")]),
        "ERR numeric_value_out_of_range smallint out of range"
    );
    assert_eq!(
        call(Func::Add, &[(Int64, "9223372036854775807"), (Int32, "1")]),
        "ERR numeric_value_out_of_range bigint out of range"
    );
    assert_eq!(
        call(Func::Mul, &[(Int32, "2147483647"), (Int32, "2")]),
        "ERR numeric_value_out_of_range integer out of range"
    );
    assert_eq!(
        call(Func::Div, &[(Int32, "-2147483648"), (Int32, "-1")]),
        "ERR numeric_value_out_of_range integer out of range"
    );
    assert_eq!(
        call(Func::Mod, &[(Int32, "-2147483648"), (Int32, "-1")]),
        "0"
    );
    assert_eq!(
        call(Func::Div, &[(Int32, "1"), (Int32, "0")]),
        "ERR division_by_zero division by zero"
    );
    assert_eq!(
        call(Func::Mod, &[(Int32, "5"), (Int32, "0")]),
        "ERR division_by_zero division by zero"
    );
    assert_eq!(
        call(Func::Neg, &[(Int32, "-2147483648")]),
        "ERR numeric_value_out_of_range integer out of range"
    );
    assert_eq!(
        call(Func::Abs, &[(Int32, "-2147483648")]),
        "ERR numeric_value_out_of_range integer out of range"
    );
    assert_eq!(call(Func::Add, &[(Int32, "1"), (Int32, "NULL")]), "NULL");
}

#[test]
fn numeric_and_float_arithmetic() {
    let n = |f: Func, a: &str, b: &str| call(f, &[(Decimal, a), (Decimal, b)]);
    assert_eq!(n(Func::Mod, "7.5", "2"), "1.5");
    assert_eq!(n(Func::Mod, "-7.5", "2"), "-1.5");
    assert_eq!(n(Func::Mod, "1.5", "0.4"), "0.3");
    assert_eq!(n(Func::Mod, "10", "3.00"), "1.00");
    assert_eq!(n(Func::Mul, "1.5", "2.00"), "3.000");
    assert_eq!(n(Func::Mul, "1.0", "0.00"), "0.000");
    assert_eq!(n(Func::Mul, "-0.0", "5"), "0.0");
    assert_eq!(n(Func::Add, "1.10", "2.2"), "3.30");
    assert_eq!(n(Func::Sub, "2.50", "2.50"), "0.00");
    assert_eq!(n(Func::Div, "5", "2.0"), "2.5000000000000000");
    assert_eq!(n(Func::Div, "10", "3"), "3.3333333333333333");
    assert_eq!(n(Func::Div, "1", "3"), "0.33333333333333333333");
    assert_eq!(n(Func::Div, "2", "3.0"), "0.66666666666666666667");
    assert_eq!(
        n(Func::Div, "100000000000000000000", "7"),
        "14285714285714285714"
    );
    assert_eq!(n(Func::Div, "1e15", "7"), "142857142857142.8571");
    assert_eq!(n(Func::Div, "1", "7777777"), "0.000000128571441428572714");
    assert_eq!(n(Func::Div, "123456789", "0.001"), "123456789000.00000000");
    assert_eq!(n(Func::Div, "0.5", "0.25"), "2.0000000000000000");
    assert_eq!(n(Func::Div, "99999", "1"), "99999.000000000000");
    assert_eq!(n(Func::Div, "10000", "3.0"), "3333.3333333333333333");
    assert_eq!(
        n(Func::Div, "1.0", "0"),
        "ERR division_by_zero division by zero"
    );
    // int / numeric is numeric.
    assert_eq!(
        call(Func::Div, &[(Int32, "5"), (Decimal, "2.0")]),
        "2.5000000000000000"
    );
    let f = |fun: Func, a: &str, b: &str| call(fun, &[(Float64, a), (Float64, b)]);
    assert_eq!(f(Func::Div, "1", "3"), "0.3333333333333333");
    assert_eq!(f(Func::Add, "0.1", "0.2"), "0.30000000000000004");
    assert_eq!(
        f(Func::Div, "1", "0"),
        "ERR division_by_zero division by zero"
    );
    assert_eq!(
        f(Func::Mul, "1e308", "10"),
        "ERR numeric_value_out_of_range value out of range: overflow"
    );
    assert_eq!(
        f(Func::Mul, "1e-308", "1e-100"),
        "ERR numeric_value_out_of_range value out of range: underflow"
    );
    assert_eq!(f(Func::Add, "Infinity", "1"), "Infinity");
    let r = |fun: Func, a: &str, b: &str| call(fun, &[(Float32, a), (Float32, b)]);
    assert_eq!(r(Func::Add, "0.1", "0.2"), "0.3");
    assert_eq!(r(Func::Mul, "1.1", "3"), "3.3000002");
    assert_eq!(r(Func::Div, "1", "3"), "0.33333334");
    assert_eq!(
        r(Func::Mul, "1e30", "1e30"),
        "ERR numeric_value_out_of_range value out of range: overflow"
    );
    // real * int is double precision.
    assert_eq!(
        call(Func::Mul, &[(Float32, "1.1"), (Int32, "3")]),
        "3.3000000715255737"
    );
    assert_eq!(
        call(Func::Mod, &[(Float64, "5.5"), (Int32, "2")]),
        "ERR undefined_function operator does not exist: double precision % integer"
    );
}

#[test]
fn casts() {
    assert_eq!(cast(Float64, "2.5", Int32), "2");
    assert_eq!(cast(Float64, "3.5", Int32), "4");
    assert_eq!(cast(Float64, "-2.5", Int32), "-2");
    assert_eq!(cast(Float32, "3.7", Int16), "4");
    assert_eq!(cast(Decimal, "2.5", Int32), "3");
    assert_eq!(cast(Decimal, "-2.5", Int32), "-3");
    assert_eq!(
        cast(Int64, "3000000000", Int32),
        "ERR numeric_value_out_of_range integer out of range"
    );
    assert_eq!(
        cast(Float64, "1e10", Int32),
        "ERR numeric_value_out_of_range integer out of range"
    );
    assert_eq!(
        cast(Float64, "NaN", Int64),
        "ERR numeric_value_out_of_range bigint out of range"
    );
    assert_eq!(cast(Float64, "0.1", Decimal), "0.1");
    assert_eq!(cast(Float64, "0.30000000000000004", Decimal), "0.3");
    assert_eq!(cast(Float32, "0.1", Decimal), "0.1");
    assert_eq!(cast(Float64, "1e20", Decimal), "100000000000000000000");
    assert_eq!(cast(Float64, "1.5e-5", Decimal), "0.000015");
    assert_eq!(cast(Float64, "123.456", Decimal), "123.456");
    assert_eq!(cast(Float32, "1.1", Float64), "1.100000023841858");
    assert_eq!(cast(Decimal, "1.1", Float64), "1.1");
    assert_eq!(
        cast(Float64, "1e300", Float32),
        "ERR numeric_value_out_of_range value out of range: overflow"
    );
    assert_eq!(cast(Boolean, "t", Varchar), "true");
    assert_eq!(cast(Boolean, "t", Int32), "1");
    assert_eq!(cast(Int32, "5", Boolean), "t");
    assert_eq!(cast(Int32, "0", Boolean), "f");
    assert_eq!(
        cast(Boolean, "t", Int64),
        "ERR cannot_coerce cannot cast type boolean to bigint"
    );
    assert_eq!(
        cast(Int64, "1", Boolean),
        "ERR cannot_coerce cannot cast type bigint to boolean"
    );
    assert_eq!(cast(Decimal, "1.50", Varchar), "1.50");
    assert_eq!(
        cast(Varchar, "x", Int32),
        "ERR invalid_text_representation invalid input syntax for type integer: \"x\""
    );
    assert_eq!(cast(Varchar, " 12 ", Int32), "12");
    assert_eq!(cast(Date, "2024-01-02", Timestamp), "2024-01-02 00:00:00");
    assert_eq!(cast(Timestamp, "2024-01-02 03:00", Date), "2024-01-02");
    assert_eq!(cast(Interval, "1 day", Varchar), "1 day");
    assert_eq!(
        cast(Interval, "1 day", Int32),
        "ERR cannot_coerce cannot cast type interval to integer"
    );
}

#[test]
fn cast_contexts_and_folding() {
    // Assignment casts are allowed implicitly, explicit-only ones are not.
    assert!(build_cast(col(0, Int64), Int32, false).is_ok());
    assert!(build_cast(col(0, Float64), Decimal, false).is_ok());
    assert!(build_cast(col(0, Int32), Varchar, false).is_ok());
    assert_eq!(
        build_cast(col(0, Varchar), Int32, false).map_err(|e| e.kind()),
        Err(ErrorKind::CannotCoerce)
    );
    assert_eq!(
        build_cast(col(0, Int32), Boolean, false).map_err(|e| e.kind()),
        Err(ErrorKind::CannotCoerce)
    );
    // A varchar literal is `unknown`: it parses into any type, now.
    assert_eq!(
        build_cast(lit(Varchar, "42"), Int32, false).ok(),
        Some(lit(Int32, "42"))
    );
    assert_eq!(
        build_cast(lit(Varchar, "abc"), Int32, false).map_err(|e| e.kind()),
        Err(ErrorKind::InvalidTextRepresentation)
    );
    assert_eq!(
        build_cast(lit(Boolean, "NULL"), Date, false).ok(),
        Some(Expr::literal(None, Date))
    );
    assert_eq!(
        build_cast(lit(Int32, "3"), Decimal, false).ok(),
        Some(lit(Decimal, "3"))
    );
}

#[test]
fn datetime_arithmetic() {
    assert_eq!(
        call(Func::Add, &[(Date, "2024-01-01"), (Int32, "1")]),
        "2024-01-02"
    );
    assert_eq!(
        call(Func::Add, &[(Int32, "1"), (Date, "2024-01-01")]),
        "2024-01-02"
    );
    assert_eq!(
        call(Func::Sub, &[(Date, "2024-01-01"), (Int32, "1")]),
        "2023-12-31"
    );
    assert_eq!(
        call(Func::Sub, &[(Date, "2024-03-01"), (Date, "2024-01-01")]),
        "60"
    );
    assert_eq!(
        call(
            Func::Sub,
            &[(Timestamp, "2024-01-03"), (Timestamp, "2024-01-01 12:00")]
        ),
        "1 day 12:00:00"
    );
    assert_eq!(
        call(
            Func::Sub,
            &[(Timestamp, "2024-01-01"), (Timestamp, "2024-01-03 12:00")]
        ),
        "-2 days -12:00:00"
    );
    assert_eq!(
        call(Func::Add, &[(Date, "2024-01-31"), (Interval, "1 month")]),
        "2024-02-29 00:00:00"
    );
    assert_eq!(
        call(
            Func::Sub,
            &[(Date, "2024-03-31"), (Interval, "1 month 1 hour")]
        ),
        "2024-02-28 23:00:00"
    );
    assert_eq!(
        call(Func::Mul, &[(Interval, "1 month"), (Decimal, "1.5")]),
        "1 mon 15 days"
    );
    assert_eq!(
        call(Func::Mul, &[(Interval, "-1 mon"), (Decimal, "1.5")]),
        "-1 mons -15 days"
    );
    assert_eq!(
        call(
            Func::Mul,
            &[(Interval, "1 year 1 day 1 second"), (Decimal, "0.3")]
        ),
        "3 mons 18 days 07:12:00.3"
    );
    assert_eq!(
        call(Func::Div, &[(Interval, "1 day"), (Int32, "3")]),
        "08:00:00"
    );
    assert_eq!(
        call(Func::Div, &[(Interval, "1 mon"), (Int32, "7")]),
        "4 days 06:51:25.6896"
    );
    assert_eq!(
        call(Func::Div, &[(Interval, "1 mon"), (Int32, "0")]),
        "ERR division_by_zero division by zero"
    );
    assert_eq!(
        call(Func::Neg, &[(Interval, "1 day 01:00")]),
        "-1 days -01:00:00"
    );
    assert_eq!(
        call(
            Func::Add,
            &[(Interval, "2147483647 days"), (Interval, "1 day")]
        ),
        "ERR datetime_field_overflow interval out of range"
    );
    assert_eq!(
        call(
            Func::Lt,
            &[(Date, "2024-01-01"), (Timestamp, "2024-01-01 00:00:01")]
        ),
        "t"
    );
    assert_eq!(
        call(Func::Eq, &[(Interval, "1 mon"), (Interval, "30 days")]),
        "t"
    );
}

#[test]
fn logic_and_null_handling() {
    let b = |f: Func, a: &str, c: &str| call(f, &[(Boolean, a), (Boolean, c)]);
    assert_eq!(b(Func::And, "NULL", "f"), "f");
    assert_eq!(b(Func::And, "NULL", "t"), "NULL");
    assert_eq!(b(Func::Or, "NULL", "t"), "t");
    assert_eq!(b(Func::Or, "NULL", "f"), "NULL");
    assert_eq!(call(Func::Not, &[(Boolean, "NULL")]), "NULL");
    assert_eq!(call(Func::IsNull, &[(Int32, "NULL")]), "t");
    assert_eq!(call(Func::IsNotTrue, &[(Boolean, "NULL")]), "t");
    assert_eq!(call(Func::IsFalse, &[(Boolean, "NULL")]), "f");
    assert_eq!(
        call(Func::IsDistinctFrom, &[(Int32, "NULL"), (Int32, "1")]),
        "t"
    );
    assert_eq!(
        call(Func::IsNotDistinctFrom, &[(Int32, "NULL"), (Int32, "NULL")]),
        "t"
    );
    assert_eq!(call(Func::Eq, &[(Int32, "NULL"), (Int32, "1")]), "NULL");
    // Short circuit: the division is never evaluated.
    let div0 = build_func(
        Func::Eq,
        vec![
            build_func(Func::Div, vec![lit(Int32, "1"), col(0, Int32)]).expect("div"),
            lit(Int32, "1"),
        ],
    )
    .expect("eq");
    let and = build_func(Func::And, vec![lit(Boolean, "f"), div0]).expect("and");
    assert_eq!(show(and.eval(&vec![Some(ScalarValue::Int32(0))])), "f");
    // NaN equals NaN and sorts above everything.
    assert_eq!(call(Func::Eq, &[(Float64, "NaN"), (Float64, "NaN")]), "t");
    assert_eq!(
        call(Func::Gt, &[(Float64, "NaN"), (Float64, "Infinity")]),
        "t"
    );
    assert_eq!(call(Func::Eq, &[(Int32, "1"), (Float64, "1.0")]), "t");
    assert_eq!(call(Func::Lt, &[(Int16, "1"), (Decimal, "1.5")]), "t");
    assert_eq!(call(Func::Lt, &[(Varchar, "B"), (Varchar, "a")]), "t");
}

#[test]
fn conditionals() {
    assert_eq!(
        call(
            Func::Greatest,
            &[(Int32, "1"), (Decimal, "2.5"), (Int32, "NULL")]
        ),
        "2.5"
    );
    assert_eq!(
        call(Func::Least, &[(Int32, "NULL"), (Int32, "NULL")]),
        "NULL"
    );
    assert_eq!(
        call(
            Func::Coalesce,
            &[(Int32, "NULL"), (Int32, "2"), (Int32, "3")]
        ),
        "2"
    );
    assert_eq!(call(Func::NullIf, &[(Int32, "1"), (Int32, "1")]), "NULL");
    assert_eq!(call(Func::NullIf, &[(Int32, "1"), (Int32, "2")]), "1");
    let e = build_func(Func::NullIf, vec![col(0, Int32), col(1, Decimal)]).expect("nullif");
    assert_eq!(e.return_type(), Int32);
    let e = build_func(Func::Greatest, vec![col(0, Int32), col(1, Float32)]).expect("greatest");
    assert_eq!(e.return_type(), Float32);
    assert_eq!(
        build_func(Func::Coalesce, vec![col(0, Int32), col(1, Boolean)]).map_err(|e| e.kind()),
        Err(ErrorKind::DatatypeMismatch)
    );
    // CASE is lazy and NULL conditions do not match.
    let case = Expr::Case {
        whens: vec![
            (lit(Boolean, "NULL"), lit(Int32, "1")),
            (lit(Boolean, "t"), lit(Int32, "2")),
        ],
        else_: Some(Box::new(
            build_func(Func::Div, vec![lit(Int32, "1"), col(0, Int32)]).expect("div"),
        )),
        ty: Int32,
    };
    assert_eq!(show(case.eval(&vec![Some(ScalarValue::Int32(0))])), "2");
}

#[test]
fn strings() {
    let s = |f: Func, args: &[&str]| {
        let a: Vec<(DataType, &str)> = args.iter().map(|x| (Varchar, *x)).collect();
        call(f, &a)
    };
    assert_eq!(s(Func::Like, &["ab", "a%"]), "t");
    assert_eq!(s(Func::Like, &["a_c", "a\\_c"]), "t");
    assert_eq!(s(Func::Like, &["abc", "a\\_c"]), "f");
    assert_eq!(s(Func::ILike, &["ABC", "a%"]), "t");
    assert_eq!(s(Func::Like, &["a%", "a\\%"]), "t");
    assert_eq!(s(Func::Like, &["abc", "%b%"]), "t");
    assert_eq!(s(Func::Like, &["abc", "a%c%"]), "t");
    assert_eq!(s(Func::Like, &["mississippi", "%iss%ppi"]), "t");
    assert_eq!(s(Func::Like, &["ab", "_"]), "f");
    assert_eq!(s(Func::Like, &["ab", "__"]), "t");
    assert_eq!(s(Func::Like, &["a\\b", "a\\\\b"]), "t");
    assert_eq!(s(Func::NotILike, &["ABC", "abd"]), "t");
    assert_eq!(s(Func::NotLike, &["abc", "%b%"]), "f");
    assert_eq!(s(Func::Like, &["", ""]), "t");
    assert_eq!(s(Func::Like, &["abc", "a%", ""]), "t");
    assert_eq!(s(Func::Like, &["a%c", "a#%c", "#"]), "t");
    assert_eq!(
        s(Func::Like, &["ab", "a\\"]),
        "ERR invalid_escape_sequence LIKE pattern must not end with escape character"
    );
    assert_eq!(
        call(Func::Like, &[(Varchar, "x"), (Varchar, "NULL")]),
        "NULL"
    );
    let sub = |args: &[(DataType, &str)]| call(Func::Substr, args);
    assert_eq!(sub(&[(Varchar, "hello"), (Int32, "2")]), "ello");
    assert_eq!(sub(&[(Varchar, "hello"), (Int32, "0"), (Int32, "3")]), "he");
    assert_eq!(sub(&[(Varchar, "hello"), (Int32, "-1"), (Int32, "3")]), "h");
    assert_eq!(
        sub(&[(Varchar, "hello"), (Int32, "2"), (Int32, "100")]),
        "ello"
    );
    assert_eq!(sub(&[(Varchar, "hello"), (Int32, "10")]), "");
    assert_eq!(
        sub(&[(Varchar, "hello"), (Int32, "1"), (Int32, "-1")]),
        "ERR substring_error negative substring length not allowed"
    );
    assert_eq!(sub(&[(Varchar, "héllo"), (Int64, "2"), (Int16, "2")]), "él");
    assert_eq!(s(Func::Length, &["héllo"]), "5");
    assert_eq!(s(Func::Position, &["l", "hello"]), "3");
    assert_eq!(s(Func::Position, &["z", "hello"]), "0");
    assert_eq!(s(Func::Position, &["", "hello"]), "1");
    assert_eq!(s(Func::Replace, &["abcabc", "b", "X"]), "aXcaXc");
    assert_eq!(s(Func::Replace, &["abc", "", "X"]), "abc");
    assert_eq!(s(Func::Trim, &["  a  "]), "a");
    assert_eq!(s(Func::Trim, &["xxaxx", "x"]), "a");
    assert_eq!(s(Func::Trim, &["xyaxy", "xy"]), "a");
    assert_eq!(s(Func::LTrim, &["xxaxx", "x"]), "axx");
    assert_eq!(s(Func::RTrim, &["xxaxx", "x"]), "xxa");
    assert_eq!(s(Func::Upper, &["abé"]), "ABÉ");
    assert_eq!(s(Func::Lower, &["ÀB"]), "àb");
    assert_eq!(s(Func::QuoteIdent, &["abc_1"]), "abc_1");
    assert_eq!(s(Func::QuoteIdent, &["Abc"]), "\"Abc\"");
    assert_eq!(s(Func::QuoteIdent, &["a\"b"]), "\"a\"\"b\"");
    assert_eq!(s(Func::QuoteIdent, &["table"]), "\"table\"");
    assert_eq!(s(Func::QuoteIdent, &["1a"]), "\"1a\"");
    assert_eq!(s(Func::QuoteIdent, &[""]), "\"\"");
    assert_eq!(s(Func::RegexMatch, &["orders", "^(orders)$"]), "t");
    assert_eq!(s(Func::RegexMatch, &["orders", "rde"]), "t");
    assert_eq!(s(Func::RegexNotMatch, &["pg_toast", "^pg_toast"]), "f");
    assert_eq!(s(Func::RegexIMatch, &["ORDERS", "^ord"]), "t");
    assert_eq!(s(Func::RegexNotIMatch, &["ORDERS", "^ord"]), "f");
    assert!(s(Func::RegexMatch, &["a", "("])
        .starts_with("ERR invalid_regular_expression invalid regular expression"));
    assert_eq!(call(Func::Concat, &[(Varchar, "a"), (Int32, "1")]), "a1");
    assert_eq!(
        call(Func::Concat, &[(Varchar, "a"), (Boolean, "t")]),
        "atrue"
    );
    assert_eq!(call(Func::Concat, &[(Int32, "1"), (Varchar, "x")]), "1x");
    assert_eq!(
        call(Func::Concat, &[(Varchar, "x"), (Varchar, "NULL")]),
        "NULL"
    );
    assert_eq!(
        call(Func::Concat, &[(Int32, "1"), (Int32, "2")]),
        "ERR undefined_function operator does not exist: integer || integer"
    );
    assert_eq!(
        call(Func::Lower, &[(Int32, "1")]),
        "ERR undefined_function function lower(integer) does not exist"
    );
}

#[test]
fn math_functions() {
    assert_eq!(call(Func::Round, &[(Float64, "2.5")]), "2");
    assert_eq!(call(Func::Round, &[(Float64, "-0.4")]), "-0");
    assert_eq!(call(Func::Round, &[(Decimal, "-2.5")]), "-3");
    assert_eq!(call(Func::Round, &[(Decimal, "2.5")]), "3");
    assert_eq!(call(Func::Round, &[(Decimal, "-0.4")]), "0");
    assert_eq!(
        call(Func::Round, &[(Decimal, "1234.5678"), (Int32, "2")]),
        "1234.57"
    );
    assert_eq!(
        call(Func::Round, &[(Decimal, "1234.5678"), (Int32, "-2")]),
        "1200"
    );
    assert_eq!(
        call(Func::Round, &[(Decimal, "1234.5678"), (Int32, "0")]),
        "1235"
    );
    assert_eq!(
        call(Func::Round, &[(Decimal, "0.5"), (Int32, "3")]),
        "0.500"
    );
    assert_eq!(
        call(Func::Round, &[(Decimal, "99.5"), (Int32, "-1")]),
        "100"
    );
    assert_eq!(call(Func::Round, &[(Int32, "-5"), (Int32, "-1")]), "-10");
    let r = build_func(Func::Round, vec![col(0, Int32)]).expect("round");
    assert_eq!(r.return_type(), Float64);
    let r = build_func(Func::Ceil, vec![col(0, Float32)]).expect("ceil");
    assert_eq!(r.return_type(), Float64);
    assert_eq!(call(Func::Ceil, &[(Decimal, "1.2")]), "2");
    assert_eq!(call(Func::Ceil, &[(Decimal, "-0.5")]), "0");
    assert_eq!(call(Func::Floor, &[(Decimal, "-1.2")]), "-2");
    assert_eq!(call(Func::Ceil, &[(Float64, "-0.5")]), "-0");
    assert_eq!(call(Func::Abs, &[(Int16, "-5")]), "5");
    assert_eq!(call(Func::Abs, &[(Decimal, "-1.50")]), "1.50");
    assert_eq!(
        call(Func::Round, &[(Float64, "1.5"), (Int32, "1")]),
        "ERR undefined_function function round(double precision, integer) does not exist"
    );
}
