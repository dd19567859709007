//! Arithmetic with PostgreSQL semantics: checked integer operators, float
//! overflow/underflow checks, numeric scale rules, and date/time/interval
//! arithmetic.
//!
//! numeric is rust_decimal (28-29 significant digits, scale <= 28) where
//! PostgreSQL has arbitrary precision: results that need more digits fail
//! with numeric_value_out_of_range (`value overflows numeric format`), and
//! division results whose PostgreSQL scale exceeds 28 are rounded at scale
//! 28. `NaN` and
//! `±Infinity` follow PostgreSQL 15 (`Infinity - Infinity` and `Infinity *
//! 0` are NaN, a number over an infinity is 0, division by zero is division_by_zero
//! unless the dividend is NaN).

use chrono::{Months, NaiveDate, NaiveDateTime, TimeDelta};
use ebbflow_common::ErrorKind;
use rust_decimal::{Decimal, RoundingStrategy};

use super::cast::{int_out_of_range, numeric_overflow};
use super::{ExprError, ExprResult};
use ebbflow_common::{DataType, Interval, Numeric, ScalarValue, F64};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

pub fn division_by_zero() -> ExprError {
    ExprError::new(ErrorKind::DivisionByZero, "division by zero")
}

fn internal(op: ArithOp, a: &ScalarValue, b: &ScalarValue) -> ExprError {
    ExprError::new(
        ErrorKind::InternalError,
        format!("no {:?} for {} and {}", op, a.data_type(), b.data_type()),
    )
}

fn interval_out_of_range() -> ExprError {
    ExprError::new(ErrorKind::DatetimeFieldOverflow, "interval out of range")
}

fn timestamp_out_of_range() -> ExprError {
    ExprError::new(ErrorKind::DatetimeFieldOverflow, "timestamp out of range")
}

fn date_out_of_range() -> ExprError {
    ExprError::new(ErrorKind::DatetimeFieldOverflow, "date out of range")
}

macro_rules! int_arith {
    ($x:expr, $y:expr, $op:expr, $ty:expr) => {{
        let (x, y) = ($x, $y);
        match $op {
            ArithOp::Add => x.checked_add(y).ok_or_else(|| int_out_of_range($ty)),
            ArithOp::Sub => x.checked_sub(y).ok_or_else(|| int_out_of_range($ty)),
            ArithOp::Mul => x.checked_mul(y).ok_or_else(|| int_out_of_range($ty)),
            ArithOp::Div if y == 0 => Err(division_by_zero()),
            ArithOp::Div => x.checked_div(y).ok_or_else(|| int_out_of_range($ty)),
            ArithOp::Mod if y == 0 => Err(division_by_zero()),
            // MIN % -1 is 0 in PostgreSQL, not an overflow.
            ArithOp::Mod if y == -1 => Ok(0),
            ArithOp::Mod => Ok(x % y),
        }
    }};
}

/// float4/float8 arithmetic with PostgreSQL's overflow/underflow checks.
fn float_arith(x: f64, y: f64, op: ArithOp, single: bool) -> ExprResult<f64> {
    let r = if single {
        let (a, b) = (x as f32, y as f32);
        (match op {
            ArithOp::Add => a + b,
            ArithOp::Sub => a - b,
            ArithOp::Mul => a * b,
            ArithOp::Div => {
                if b == 0.0 && !a.is_nan() {
                    return Err(division_by_zero());
                }
                a / b
            }
            ArithOp::Mod => {
                return Err(ExprError::new(
                    ErrorKind::UndefinedFunction,
                    "operator does not exist: real % real",
                ))
            }
        }) as f64
    } else {
        match op {
            ArithOp::Add => x + y,
            ArithOp::Sub => x - y,
            ArithOp::Mul => x * y,
            ArithOp::Div => {
                if y == 0.0 && !x.is_nan() {
                    return Err(division_by_zero());
                }
                x / y
            }
            ArithOp::Mod => {
                return Err(ExprError::new(
                    ErrorKind::UndefinedFunction,
                    "operator does not exist: double precision % double precision",
                ))
            }
        }
    };
    if r.is_infinite() && !x.is_infinite() && !y.is_infinite() {
        return Err(ExprError::new(
            ErrorKind::NumericValueOutOfRange,
            "value out of range: overflow",
        ));
    }
    let underflow = match op {
        ArithOp::Mul => r == 0.0 && x != 0.0 && y != 0.0,
        ArithOp::Div => r == 0.0 && x != 0.0 && !y.is_infinite(),
        _ => false,
    };
    if underflow {
        return Err(ExprError::new(
            ErrorKind::NumericValueOutOfRange,
            "value out of range: underflow",
        ));
    }
    Ok(r)
}

/// PostgreSQL's `select_div_scale`: at least 16 significant digits, and no
/// less than either input's scale.
fn div_scale(a: &Decimal, b: &Decimal) -> u32 {
    let (w1, d1) = base10000_lead(a);
    let (w2, d2) = base10000_lead(b);
    let mut qweight = w1 - w2;
    if d1 <= d2 {
        qweight -= 1;
    }
    let rscale = (16 - qweight * 4)
        .max(a.scale() as i32)
        .max(b.scale() as i32)
        .max(0);
    rscale.min(1000) as u32
}

/// Weight and value of the first nonzero base-10000 digit, as PostgreSQL's
/// numeric stores it; `(0, 0)` for zero.
fn base10000_lead(d: &Decimal) -> (i32, u128) {
    let m = d.mantissa().unsigned_abs();
    if m == 0 {
        return (0, 0);
    }
    let ndigits = m.ilog10() as i32 + 1;
    let exp10 = ndigits - 1 - d.scale() as i32;
    let weight = exp10.div_euclid(4);
    let shift = d.scale() as i32 + 4 * weight;
    let first = if shift >= 0 {
        m / 10u128.pow(shift as u32)
    } else {
        m * 10u128.pow((-shift) as u32)
    };
    (weight, first)
}

/// numeric division with PostgreSQL's result scale, rounded half away from
/// zero (capped at rust_decimal's 28 fractional digits).
pub fn decimal_div(a: Decimal, b: Decimal) -> ExprResult<Decimal> {
    if b.is_zero() {
        return Err(division_by_zero());
    }
    let rscale = div_scale(&a, &b).min(Decimal::MAX_SCALE);
    let q = a.checked_div(b).ok_or_else(numeric_overflow)?;
    let mut r = q.round_dp_with_strategy(rscale, RoundingStrategy::MidpointAwayFromZero);
    r.rescale(rscale);
    Ok(normalize_zero(r))
}

pub fn normalize_zero(mut d: Decimal) -> Decimal {
    if d.is_zero() {
        d.set_sign_positive(true);
    }
    d
}

fn decimal_arith(x: Decimal, y: Decimal, op: ArithOp) -> ExprResult<Decimal> {
    let r = match op {
        ArithOp::Add => x.checked_add(y).ok_or_else(numeric_overflow)?,
        ArithOp::Sub => x.checked_sub(y).ok_or_else(numeric_overflow)?,
        ArithOp::Mul => {
            let r = x.checked_mul(y).ok_or_else(numeric_overflow)?;
            // Keep PostgreSQL's result scale (sum of the scales).
            let want = (x.scale() + y.scale()).min(Decimal::MAX_SCALE);
            let mut r = r;
            if r.scale() < want {
                r.rescale(want);
            }
            r
        }
        ArithOp::Div => return decimal_div(x, y),
        ArithOp::Mod => {
            if y.is_zero() {
                return Err(division_by_zero());
            }
            let r = x.checked_rem(y).ok_or_else(numeric_overflow)?;
            let want = x.scale().max(y.scale());
            let mut r = r;
            if r.scale() < want {
                r.rescale(want);
            }
            r
        }
    };
    Ok(normalize_zero(r))
}

/// PostgreSQL 15's numeric operators over `NaN` and the infinities.
fn numeric_arith(x: Numeric, y: Numeric, op: ArithOp) -> ExprResult<Numeric> {
    use Numeric::{NaN, NegInf, PosInf};
    if let (Numeric::Finite(a), Numeric::Finite(b)) = (x, y) {
        return Ok(Numeric::Finite(decimal_arith(a, b, op)?));
    }
    if x == NaN || y == NaN {
        return Ok(NaN);
    }
    let (sx, sy) = (x.signum(), y.signum());
    let x_inf = x.finite().is_none();
    let y_inf = y.finite().is_none();
    Ok(match op {
        ArithOp::Add => match (x, y) {
            (PosInf, NegInf) | (NegInf, PosInf) => NaN,
            _ if x_inf => x,
            _ => y,
        },
        ArithOp::Sub => match (x, y) {
            (PosInf, PosInf) | (NegInf, NegInf) => NaN,
            _ if x_inf => x,
            _ => Numeric::inf(-sy),
        },
        ArithOp::Mul => {
            if sx == 0 || sy == 0 {
                NaN
            } else {
                Numeric::inf(sx * sy)
            }
        }
        ArithOp::Div => {
            if x_inf && y_inf {
                NaN
            } else if x_inf {
                if sy == 0 {
                    return Err(division_by_zero());
                }
                Numeric::inf(sx * sy)
            } else {
                Numeric::Finite(Decimal::ZERO)
            }
        }
        ArithOp::Mod => {
            if x_inf {
                if sy == 0 {
                    return Err(division_by_zero());
                }
                NaN
            } else {
                x
            }
        }
    })
}

/// `a op b` for two non-null values of the types `build_func` resolved.
pub fn arith(op: ArithOp, a: &ScalarValue, b: &ScalarValue) -> ExprResult<ScalarValue> {
    use ScalarValue as S;
    Ok(match (a, b) {
        (S::Int16(x), S::Int16(y)) => S::Int16(int_arith!(*x, *y, op, DataType::Int16)?),
        (S::Int32(x), S::Int32(y)) => S::Int32(int_arith!(*x, *y, op, DataType::Int32)?),
        (S::Int64(x), S::Int64(y)) => S::Int64(int_arith!(*x, *y, op, DataType::Int64)?),
        (S::Float32(x), S::Float32(y)) => S::Float32(F64(float_arith(x.0, y.0, op, true)?)),
        (S::Float64(x), S::Float64(y)) => S::float64(float_arith(x.0, y.0, op, false)?),
        (S::Decimal(x), S::Decimal(y)) => S::Decimal(numeric_arith(*x, *y, op)?),
        (S::Date(d), S::Int32(n)) if matches!(op, ArithOp::Add | ArithOp::Sub) => {
            let n = if op == ArithOp::Sub {
                -(*n as i64)
            } else {
                *n as i64
            };
            S::Date(date_add_days(*d, n)?)
        }
        (S::Int32(n), S::Date(d)) if op == ArithOp::Add => S::Date(date_add_days(*d, *n as i64)?),
        (S::Date(x), S::Date(y)) if op == ArithOp::Sub => S::Int32(
            i32::try_from((*x - *y).num_days()).map_err(|_| int_out_of_range(DataType::Int32))?,
        ),
        (S::Timestamp(t), S::Interval(i)) if op == ArithOp::Add => {
            S::Timestamp(timestamp_add_interval(*t, i)?)
        }
        (S::Interval(i), S::Timestamp(t)) if op == ArithOp::Add => {
            S::Timestamp(timestamp_add_interval(*t, i)?)
        }
        (S::Timestamp(t), S::Interval(i)) if op == ArithOp::Sub => {
            S::Timestamp(timestamp_add_interval(*t, &interval_neg(i)?)?)
        }
        (S::Timestamp(x), S::Timestamp(y)) if op == ArithOp::Sub => {
            S::Interval(timestamp_diff(*x, *y)?)
        }
        (S::Timestamptz(x), S::Timestamptz(y)) if op == ArithOp::Sub => {
            S::Interval(super::zoned::diff(*x, *y)?)
        }
        // Time of day wraps around midnight; only the interval's time
        // part counts (PostgreSQL's `time_pl_interval`).
        (S::Time(t), S::Interval(i)) if matches!(op, ArithOp::Add | ArithOp::Sub) => {
            let d = if op == ArithOp::Add {
                i.micros
            } else {
                i.micros.wrapping_neg()
            };
            S::Time(t.wrapping_add(d).rem_euclid(Interval::MICROS_PER_DAY))
        }
        (S::Time(x), S::Time(y)) if op == ArithOp::Sub => S::Interval(Interval::new(0, 0, x - y)),
        (S::Date(d), S::Time(t)) if op == ArithOp::Add => S::Timestamp(
            d.and_time(chrono::NaiveTime::MIN)
                .checked_add_signed(chrono::TimeDelta::microseconds(*t))
                .ok_or_else(timestamp_out_of_range)?,
        ),
        (S::Interval(x), S::Interval(y)) if op == ArithOp::Add => S::Interval(interval_add(x, y)?),
        (S::Interval(x), S::Interval(y)) if op == ArithOp::Sub => {
            S::Interval(interval_add(x, &interval_neg(y)?)?)
        }
        (S::Interval(i), S::Float64(f)) if op == ArithOp::Mul => S::Interval(interval_mul(i, f.0)?),
        (S::Float64(f), S::Interval(i)) if op == ArithOp::Mul => S::Interval(interval_mul(i, f.0)?),
        (S::Interval(i), S::Float64(f)) if op == ArithOp::Div => S::Interval(interval_div(i, f.0)?),
        _ => return Err(internal(op, a, b)),
    })
}

/// Unary minus.
pub fn neg(a: &ScalarValue) -> ExprResult<ScalarValue> {
    use ScalarValue as S;
    Ok(match a {
        S::Int16(x) => S::Int16(
            x.checked_neg()
                .ok_or_else(|| int_out_of_range(DataType::Int16))?,
        ),
        S::Int32(x) => S::Int32(
            x.checked_neg()
                .ok_or_else(|| int_out_of_range(DataType::Int32))?,
        ),
        S::Int64(x) => S::Int64(
            x.checked_neg()
                .ok_or_else(|| int_out_of_range(DataType::Int64))?,
        ),
        S::Float32(x) => S::Float32(F64(-x.0)),
        S::Float64(x) => S::float64(-x.0),
        S::Decimal(x) => S::Decimal(match x {
            Numeric::Finite(d) => Numeric::Finite(normalize_zero(-*d)),
            Numeric::PosInf => Numeric::NegInf,
            Numeric::NegInf => Numeric::PosInf,
            Numeric::NaN => Numeric::NaN,
        }),
        S::Interval(i) => S::Interval(interval_neg(i)?),
        other => {
            return Err(ExprError::new(
                ErrorKind::InternalError,
                format!("no unary minus for {}", other.data_type()),
            ))
        }
    })
}

fn date_add_days(d: NaiveDate, n: i64) -> ExprResult<NaiveDate> {
    d.checked_add_signed(TimeDelta::try_days(n).ok_or_else(date_out_of_range)?)
        .ok_or_else(date_out_of_range)
}

/// PostgreSQL's `timestamp_pl_interval`: months first (clamping the day to
/// the month's end), then days, then the time part.
pub fn timestamp_add_interval(t: NaiveDateTime, i: &Interval) -> ExprResult<NaiveDateTime> {
    let mut t = t;
    if i.months != 0 {
        let m = Months::new(i.months.unsigned_abs());
        t = if i.months > 0 {
            t.checked_add_months(m)
        } else {
            t.checked_sub_months(m)
        }
        .ok_or_else(timestamp_out_of_range)?;
    }
    if i.days != 0 {
        t = t
            .checked_add_signed(TimeDelta::days(i.days as i64))
            .ok_or_else(timestamp_out_of_range)?;
    }
    t.checked_add_signed(TimeDelta::microseconds(i.micros))
        .ok_or_else(timestamp_out_of_range)
}

/// `timestamp - timestamp`: the difference in microseconds, with whole
/// days moved to the day field (`justify_hours`).
fn timestamp_diff(x: NaiveDateTime, y: NaiveDateTime) -> ExprResult<Interval> {
    let d = (x - y)
        .num_microseconds()
        .ok_or_else(interval_out_of_range)?;
    Ok(Interval::new(
        0,
        (d / Interval::MICROS_PER_DAY) as i32,
        d % Interval::MICROS_PER_DAY,
    ))
}

pub fn interval_add(x: &Interval, y: &Interval) -> ExprResult<Interval> {
    Ok(Interval::new(
        x.months
            .checked_add(y.months)
            .ok_or_else(interval_out_of_range)?,
        x.days
            .checked_add(y.days)
            .ok_or_else(interval_out_of_range)?,
        x.micros
            .checked_add(y.micros)
            .ok_or_else(interval_out_of_range)?,
    ))
}

pub fn interval_neg(x: &Interval) -> ExprResult<Interval> {
    Ok(Interval::new(
        x.months.checked_neg().ok_or_else(interval_out_of_range)?,
        x.days.checked_neg().ok_or_else(interval_out_of_range)?,
        x.micros.checked_neg().ok_or_else(interval_out_of_range)?,
    ))
}

/// Round to microsecond precision the way PostgreSQL's TSROUND does.
fn tsround(x: f64) -> f64 {
    (x * 1e6).round_ties_even() / 1e6
}

fn fits_i32(x: f64) -> bool {
    !x.is_nan() && (-2_147_483_648.0..2_147_483_648.0).contains(&x)
}

/// Shared tail of PostgreSQL's `interval_mul`/`interval_div`: whole months
/// and days from the scaled fields, fractions cascaded down into days and
/// time (30-day months, 24-hour days), never up.
fn interval_scale(i: &Interval, months: f64, days: f64, micros: f64) -> ExprResult<Interval> {
    if !fits_i32(months) || !fits_i32(days) {
        return Err(interval_out_of_range());
    }
    let rm = months.trunc() as i32;
    let mut rd = days.trunc() as i32;
    let month_remainder_days = tsround((months - rm as f64) * 30.0);
    let mut sec_remainder = tsround(
        (days - rd as f64 + month_remainder_days - month_remainder_days.trunc()) * 86_400.0,
    );
    if sec_remainder.abs() >= 86_400.0 {
        let whole = (sec_remainder / 86_400.0).trunc();
        rd = rd
            .checked_add(whole as i32)
            .ok_or_else(interval_out_of_range)?;
        sec_remainder -= whole * 86_400.0;
    }
    rd = rd
        .checked_add(month_remainder_days.trunc() as i32)
        .ok_or_else(interval_out_of_range)?;
    let t = (micros + sec_remainder * 1e6).round_ties_even();
    if t.is_nan() || !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&t) {
        return Err(interval_out_of_range());
    }
    let _ = i;
    Ok(Interval::new(rm, rd, t as i64))
}

/// `interval * double precision` (PostgreSQL's `interval_mul`).
pub fn interval_mul(i: &Interval, f: f64) -> ExprResult<Interval> {
    interval_scale(
        i,
        i.months as f64 * f,
        i.days as f64 * f,
        i.micros as f64 * f,
    )
}

/// `interval / double precision` (PostgreSQL's `interval_div`).
pub fn interval_div(i: &Interval, f: f64) -> ExprResult<Interval> {
    if f == 0.0 {
        return Err(division_by_zero());
    }
    interval_scale(
        i,
        i.months as f64 / f,
        i.days as f64 / f,
        i.micros as f64 / f,
    )
}
