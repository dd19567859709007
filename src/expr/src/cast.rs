//! Value casts with PostgreSQL semantics (which casts are *allowed* in which
//! context is decided in `build.rs`).

use ebbflow_common::ErrorKind;
use rust_decimal::{Decimal, RoundingStrategy};

use super::{ExprError, ExprResult};
use ebbflow_common::text::{format_datum_in, format_decimal, parse_datum_in, parse_decimal};
use ebbflow_common::{DataType, Numeric, ScalarValue, Zone, F64};

/// `integer out of range` and friends (numeric_value_out_of_range).
pub fn int_out_of_range(ty: DataType) -> ExprError {
    let name = match ty {
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        _ => "bigint",
    };
    ExprError::new(
        ErrorKind::NumericValueOutOfRange,
        format!("{} out of range", name),
    )
}

pub fn numeric_overflow() -> ExprError {
    ExprError::new(
        ErrorKind::NumericValueOutOfRange,
        "value overflows numeric format",
    )
}

fn from_i64(v: i64, to: DataType) -> ExprResult<ScalarValue> {
    let oor = || int_out_of_range(to);
    Ok(match to {
        DataType::Int16 => ScalarValue::Int16(i16::try_from(v).map_err(|_| oor())?),
        DataType::Int32 => ScalarValue::Int32(i32::try_from(v).map_err(|_| oor())?),
        DataType::Int64 => ScalarValue::Int64(v),
        DataType::Float32 => ScalarValue::float32(v as f32),
        DataType::Float64 => ScalarValue::float64(v as f64),
        DataType::Decimal => ScalarValue::decimal(Decimal::from(v)),
        _ => return Err(cannot_cast(DataType::Int64, to)),
    })
}

fn cannot_cast(from: DataType, to: DataType) -> ExprError {
    ExprError::new(
        ErrorKind::CannotCoerce,
        format!("cannot cast type {} to {}", from, to),
    )
}

/// A float rounded half-to-even (PostgreSQL's `rint`) into an integer type.
fn float_to_int(v: f64, to: DataType) -> ExprResult<ScalarValue> {
    let r = v.round_ties_even();
    // i64::MAX as f64 rounds up to 2^63, hence the strict bound.
    if r.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&r) {
        return Err(int_out_of_range(to));
    }
    from_i64(r as i64, to)
}

/// Numeric rounded half away from zero into an integer type (NaN and the
/// infinities fail with feature_not_supported, as in PostgreSQL 15).
fn decimal_to_int(n: Numeric, to: DataType) -> ExprResult<ScalarValue> {
    let d = match n {
        Numeric::Finite(d) => d,
        special => {
            let name = match to {
                DataType::Int16 => "smallint",
                DataType::Int32 => "integer",
                _ => "bigint",
            };
            let what = if special == Numeric::NaN {
                "NaN"
            } else {
                "infinity"
            };
            return Err(ExprError::new(
                ErrorKind::FeatureNotSupported,
                format!("cannot convert {what} to {name}"),
            ));
        }
    };
    let r = d.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
    let m = r.mantissa() / 10i128.pow(r.scale());
    from_i64(i64::try_from(m).map_err(|_| int_out_of_range(to))?, to)
}

/// PostgreSQL's `float8_numeric`/`float4_numeric`: NaN and the
/// infinities map to numeric's; a number is printed with 15 (6 for real)
/// significant digits, trailing zeros dropped.
pub fn float_to_numeric(v: f64, single: bool) -> ExprResult<Numeric> {
    if v.is_nan() {
        return Ok(Numeric::NaN);
    }
    if v.is_infinite() {
        return Ok(Numeric::inf(if v > 0.0 { 1 } else { -1 }));
    }
    float_to_decimal(v, single).map(Numeric::Finite)
}

/// [`float_to_numeric`] for a finite float.
pub fn float_to_decimal(v: f64, single: bool) -> ExprResult<Decimal> {
    if !v.is_finite() {
        return Err(numeric_overflow());
    }
    let s = if single {
        format!("{:.5e}", v as f32)
    } else {
        format!("{:.14e}", v)
    };
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mant = if mant.contains('.') {
        mant.trim_end_matches('0').trim_end_matches('.')
    } else {
        mant
    };
    parse_decimal(&format!("{}e{}", mant, exp)).map_err(|_| numeric_overflow())
}

/// Exact (correctly rounded) conversion through the decimal text.
pub fn decimal_to_f64(d: &Decimal) -> f64 {
    format_decimal(d).parse().unwrap_or(f64::NAN)
}

/// numeric to float8: NaN and the infinities map to the float's.
pub fn numeric_to_f64(n: &Numeric) -> f64 {
    match n {
        Numeric::Finite(d) => decimal_to_f64(d),
        Numeric::NaN => f64::NAN,
        Numeric::PosInf => f64::INFINITY,
        Numeric::NegInf => f64::NEG_INFINITY,
    }
}

fn f64_to_f32(v: f64) -> ExprResult<f64> {
    let r = v as f32;
    if r.is_infinite() && !v.is_infinite() {
        return Err(ExprError::new(
            ErrorKind::NumericValueOutOfRange,
            "value out of range: overflow",
        ));
    }
    if r == 0.0 && v != 0.0 {
        return Err(ExprError::new(
            ErrorKind::NumericValueOutOfRange,
            "value out of range: underflow",
        ));
    }
    Ok(r as f64)
}

/// Cast a non-null value to `to`, PostgreSQL style. Callers decide whether
/// the cast is allowed in their context; impossible casts fail with
/// cannot_coerce. A cast that depends on the time zone is done in UTC
/// (see [`cast_value_in`]).
pub fn cast_value(v: ScalarValue, to: DataType) -> ExprResult<ScalarValue> {
    cast_value_in(v, to, &Zone::UTC)
}

/// The time of day of a timestamp, in microseconds.
pub fn time_of(t: &chrono::NaiveDateTime) -> i64 {
    use chrono::Timelike;
    t.num_seconds_from_midnight() as i64 * 1_000_000 + (t.nanosecond() / 1000) as i64
}

/// The `timestamp out of range` error (datetime_field_overflow).
pub fn timestamp_out_of_range() -> ExprError {
    ExprError::new(ErrorKind::DatetimeFieldOverflow, "timestamp out of range")
}

/// [`cast_value`] with the casts among `timestamptz`, `timestamp`, `date`
/// and text done in `zone`.
pub fn cast_value_in(v: ScalarValue, to: DataType, zone: &Zone) -> ExprResult<ScalarValue> {
    use ScalarValue as S;
    let local = |t: i64| {
        zone.to_local(t)
            .map(|(l, _)| l)
            .ok_or_else(timestamp_out_of_range)
    };
    let instant = |l: chrono::NaiveDateTime| zone.from_local(&l).ok_or_else(timestamp_out_of_range);
    let from = v.data_type();
    if from == to {
        return Ok(v);
    }
    Ok(match (v, to) {
        // Element by element, NULLs kept (PostgreSQL's `array_map` cast).
        (S::Array(a), DataType::Array(elem)) => {
            let items = a
                .items
                .iter()
                .map(|d| {
                    d.clone()
                        .map(|v| cast_value_in(v, elem.data_type(), zone))
                        .transpose()
                })
                .collect::<ExprResult<Vec<_>>>()?;
            S::array(elem, items)
        }
        (S::Boolean(b), DataType::Varchar) => S::varchar(if b { "true" } else { "false" }),
        (v, DataType::Varchar) => S::varchar(format_datum_in(&v, zone)),
        (S::Varchar(s), to) => parse_datum_in(to, &s, zone)?,
        (S::Jsonb(j), to) => super::jsonb::cast_from(&j, to)?,
        (S::Int16(x), to) => from_i64(x as i64, to)?,
        (S::Int32(x), DataType::Boolean) => S::Boolean(x != 0),
        (S::Int32(x), to) => from_i64(x as i64, to)?,
        (S::Int64(x), to) if to != DataType::Boolean => from_i64(x, to)?,
        (S::Float32(x), DataType::Float64) => S::Float64(x),
        (S::Float64(x), DataType::Float32) => S::Float32(F64(f64_to_f32(x.0)?)),
        (S::Float32(x) | S::Float64(x), DataType::Decimal) => {
            S::Decimal(float_to_numeric(x.0, from == DataType::Float32)?)
        }
        (S::Float32(x) | S::Float64(x), to) if to.is_integer() => {
            // float4 rounds in single precision, as PostgreSQL's ftoi4.
            float_to_int(x.0, to)?
        }
        (S::Decimal(d), DataType::Float64) => S::float64(numeric_to_f64(&d)),
        (S::Decimal(d), DataType::Float32) => S::Float32(F64(f64_to_f32(numeric_to_f64(&d))?)),
        (S::Decimal(d), to) if to.is_integer() => decimal_to_int(d, to)?,
        (S::Boolean(b), DataType::Int32) => S::Int32(b as i32),
        (S::Date(d), DataType::Timestamp) => S::Timestamp(d.and_time(chrono::NaiveTime::MIN)),
        (S::Timestamp(t), DataType::Date) => S::Date(t.date()),
        (S::Timestamptz(t), DataType::Timestamp) => S::Timestamp(local(t)?),
        (S::Timestamptz(t), DataType::Time) => S::Time(time_of(&local(t)?)),
        (S::Timestamp(t), DataType::Time) => S::Time(time_of(&t)),
        (S::Interval(i), DataType::Time) => S::Time(
            i.micros
                .rem_euclid(ebbflow_common::Interval::MICROS_PER_DAY),
        ),
        (S::Time(t), DataType::Interval) => S::Interval(ebbflow_common::Interval::new(0, 0, t)),
        (S::Timestamptz(t), DataType::Date) => S::Date(local(t)?.date()),
        (S::Timestamp(t), DataType::Timestamptz) => S::Timestamptz(instant(t)?),
        (S::Date(d), DataType::Timestamptz) => {
            S::Timestamptz(instant(d.and_time(chrono::NaiveTime::MIN))?)
        }
        (_, to) => return Err(cannot_cast(from, to)),
    })
}
