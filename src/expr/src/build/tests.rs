use super::*;
use crate::AggKind;
use ebbflow_common::ErrorKind;
use DataType::*;

fn col(i: usize, ty: DataType) -> Expr {
    Expr::input_ref(i, ty)
}

fn ty_of(func: Func, types: &[DataType]) -> Result<DataType, String> {
    let args = types.iter().enumerate().map(|(i, t)| col(i, *t)).collect();
    build_func(func, args)
        .map(|e| e.return_type())
        .map_err(|e| format!("{} {}", e.kind(), e))
}

#[test]
fn arithmetic_types_follow_postgres() {
    // pg_typeof results from PostgreSQL 15.
    assert_eq!(ty_of(Func::Add, &[Int16, Int16]), Ok(Int16));
    assert_eq!(ty_of(Func::Add, &[Int16, Int32]), Ok(Int32));
    assert_eq!(ty_of(Func::Add, &[Int32, Int64]), Ok(Int64));
    assert_eq!(ty_of(Func::Add, &[Int32, Decimal]), Ok(Decimal));
    assert_eq!(ty_of(Func::Add, &[Int32, Float32]), Ok(Float64));
    assert_eq!(ty_of(Func::Add, &[Decimal, Float32]), Ok(Float64));
    assert_eq!(ty_of(Func::Add, &[Float32, Float64]), Ok(Float64));
    assert_eq!(ty_of(Func::Add, &[Float32, Float32]), Ok(Float32));
    assert_eq!(ty_of(Func::Add, &[Int64, Float32]), Ok(Float64));
    assert_eq!(ty_of(Func::Div, &[Int32, Int32]), Ok(Int32));
    assert_eq!(ty_of(Func::Add, &[Date, Int32]), Ok(Date));
    assert_eq!(ty_of(Func::Sub, &[Date, Date]), Ok(Int32));
    assert_eq!(ty_of(Func::Add, &[Date, Interval]), Ok(Timestamp));
    assert_eq!(ty_of(Func::Sub, &[Timestamp, Timestamp]), Ok(Interval));
    assert_eq!(ty_of(Func::Mul, &[Int32, Interval]), Ok(Interval));
    assert_eq!(ty_of(Func::Neg, &[Interval]), Ok(Interval));
    assert_eq!(
        ty_of(Func::Add, &[Int32, Boolean]),
        Err("undefined_function operator does not exist: integer + boolean".into())
    );
    assert_eq!(
        ty_of(Func::Neg, &[Boolean]),
        Err("undefined_function operator does not exist: - boolean".into())
    );
    assert_eq!(
        ty_of(Func::Eq, &[Int32, Varchar]),
        Err("undefined_function operator does not exist: integer = character varying".into())
    );
    assert_eq!(ty_of(Func::Eq, &[Date, Timestamp]), Ok(Boolean));
    assert_eq!(ty_of(Func::Concat, &[Varchar, Date]), Ok(Varchar));
    assert_eq!(ty_of(Func::Round, &[Int32]), Ok(Float64));
    assert_eq!(ty_of(Func::Round, &[Decimal, Int32]), Ok(Decimal));
    assert_eq!(ty_of(Func::Abs, &[Int16]), Ok(Int16));
    assert_eq!(ty_of(Func::Length, &[Varchar]), Ok(Int32));
    assert!(ty_of(Func::And, &[Int32, Boolean]).is_err());
}

#[test]
fn unknown_literals_take_the_other_type() {
    let unknown = |s: &str| Expr::literal(Some(ebbflow_common::ScalarValue::varchar(s)), Varchar);
    let e = build_func(Func::Gt, vec![col(0, Date), unknown("2024-01-01")]).expect("date > '...'");
    match &e {
        Expr::Func { args, .. } => assert_eq!(args[1].return_type(), Date),
        _ => panic!("not a call"),
    }
    let e =
        build_func(Func::Add, vec![col(0, Timestamp), unknown("1 hour")]).expect("ts + '1 hour'");
    assert_eq!(e.return_type(), Timestamp);
    let null = Expr::literal(None, Boolean);
    let e = build_func(Func::Eq, vec![col(0, Int32), null]).expect("int = NULL");
    assert_eq!(e.return_type(), Boolean);
    assert_eq!(
        build_func(Func::Eq, vec![col(0, Int32), unknown("x")]).map_err(|e| e.kind()),
        Err(ErrorKind::InvalidTextRepresentation)
    );
}

#[test]
fn common_types() {
    assert_eq!(common_type(Int32, Float32).ok(), Some(Float32));
    assert_eq!(common_type(Int64, Decimal).ok(), Some(Decimal));
    assert_eq!(common_type(Decimal, Float64).ok(), Some(Float64));
    assert_eq!(common_type(Date, Timestamp).ok(), Some(Timestamp));
    assert_eq!(common_type(Varchar, Varchar).ok(), Some(Varchar));
    assert_eq!(
        common_type(Int32, Boolean).map_err(|e| e.kind()),
        Err(ErrorKind::DatatypeMismatch)
    );
}

#[test]
fn aggregate_types() {
    assert_eq!(agg_return_type(AggKind::CountStar, None).ok(), Some(Int64));
    assert_eq!(
        agg_return_type(AggKind::Count, Some(Boolean)).ok(),
        Some(Int64)
    );
    assert_eq!(agg_return_type(AggKind::Sum, Some(Int16)).ok(), Some(Int64));
    assert_eq!(agg_return_type(AggKind::Sum, Some(Int32)).ok(), Some(Int64));
    assert_eq!(
        agg_return_type(AggKind::Sum, Some(Int64)).ok(),
        Some(Decimal)
    );
    assert_eq!(
        agg_return_type(AggKind::Sum, Some(Float32)).ok(),
        Some(Float32)
    );
    assert_eq!(
        agg_return_type(AggKind::Sum, Some(Interval)).ok(),
        Some(Interval)
    );
    assert_eq!(
        agg_return_type(AggKind::Avg, Some(Int32)).ok(),
        Some(Decimal)
    );
    assert_eq!(
        agg_return_type(AggKind::Avg, Some(Float32)).ok(),
        Some(Float64)
    );
    assert_eq!(
        agg_return_type(AggKind::Avg, Some(Interval)).ok(),
        Some(Interval)
    );
    assert_eq!(
        agg_return_type(AggKind::Max, Some(Varchar)).ok(),
        Some(Varchar)
    );
    assert_eq!(agg_return_type(AggKind::Min, Some(Date)).ok(), Some(Date));
    let e = agg_return_type(AggKind::Sum, Some(Boolean)).expect_err("sum(bool)");
    assert_eq!(
        (e.kind(), e.to_string().as_str()),
        (
            ErrorKind::UndefinedFunction,
            "function sum(boolean) does not exist"
        )
    );
    let e = agg_return_type(AggKind::Avg, Some(Varchar)).expect_err("avg(text)");
    assert_eq!(
        e.to_string(),
        "function avg(character varying) does not exist"
    );
    assert!(agg_return_type(AggKind::Max, Some(Boolean)).is_err());
}

#[test]
fn function_names() {
    assert_eq!(Func::from_name("substring"), Some(Func::Substr));
    assert_eq!(Func::from_name("char_length"), Some(Func::Length));
    assert_eq!(Func::from_name("ceiling"), Some(Func::Ceil));
    assert_eq!(Func::from_name("btrim"), Some(Func::Trim));
    assert_eq!(Func::from_name("nope"), None);
}
