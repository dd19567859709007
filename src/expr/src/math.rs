//! PostgreSQL's mathematical functions: `sqrt cbrt exp ln log log10 power
//! sign trunc div gcd lcm pi degrees radians` and the trigonometric ones
//! (`sin cos tan cot asin acos atan atan2`).
//!
//! The double precision forms follow PostgreSQL 15's `float.c`: an input
//! outside the domain is `invalid_argument_for_power_function` (square
//! roots, powers), `invalid_argument_for_logarithm` (logarithms) or
//! `numeric_value_out_of_range` ("input is out of range": trigonometry), and
//! a finite input whose result overflows or underflows is
//! `numeric_value_out_of_range` ("value out of range: overflow" /
//! "underflow"). Integers and unknown literals are read as double precision,
//! as PostgreSQL's function resolution prefers it.
//!
//! `sign`, `trunc`, `div`, `gcd` and `lcm` also take numeric, exactly.
//! Not yet: the numeric forms of `sqrt exp ln log log10 power` (PostgreSQL
//! computes them to a precision of its own); they are refused with
//! `feature_not_supported` and a hint to cast to double precision.

use rust_decimal::Decimal;

use super::cast::int_out_of_range;
use super::func::Func;
use super::{Expr, ExprError, ExprResult};
use ebbflow_common::{DataType, Datum, ErrorKind, Numeric, ScalarValue};

/// PostgreSQL's `RADIANS_PER_DEGREE`.
const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295;

/// Whether `func` is one of this module's.
pub(super) fn owns(func: Func) -> bool {
    matches!(
        func,
        Func::Sqrt
            | Func::Cbrt
            | Func::Exp
            | Func::Ln
            | Func::Log
            | Func::Log10
            | Func::Power
            | Func::Sign
            | Func::Trunc
            | Func::DivTrunc
            | Func::Gcd
            | Func::Lcm
            | Func::Pi
            | Func::Degrees
            | Func::Radians
            | Func::Sin
            | Func::Cos
            | Func::Tan
            | Func::Cot
            | Func::Asin
            | Func::Acos
            | Func::Atan
            | Func::Atan2
    )
}

fn no_function(func: Func, args: &[Expr]) -> ExprError {
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    super::build::no_operator(func, &types)
}

fn numeric_not_yet(func: Func) -> ExprError {
    ExprError::new(
        ErrorKind::FeatureNotSupported,
        format!(
            "{}(numeric) is not supported yet; cast the argument to double precision",
            func.name()
        ),
    )
}

fn is_number(t: DataType) -> bool {
    matches!(
        t,
        DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Decimal
            | DataType::Float32
            | DataType::Float64
    )
}

/// Type the call: which form of the function the arguments select.
pub(super) fn build(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let arity = match func {
        Func::Pi => 0,
        Func::Power | Func::DivTrunc | Func::Gcd | Func::Lcm | Func::Atan2 => 2,
        Func::Trunc | Func::Log => types.len().clamp(1, 2),
        _ => 1,
    };
    if types.len() != arity || !types.iter().all(|t| is_number(*t)) {
        return Err(no_function(func, &args));
    }
    let call = |func, args, ty| Ok(Expr::Func { func, args, ty });
    let to = |ty: DataType, args: Vec<Expr>| -> ExprResult<Vec<Expr>> {
        args.into_iter()
            .map(|a| super::build::build_cast(a, ty, true))
            .collect()
    };
    let any_numeric = types.contains(&Decimal);
    match func {
        Func::Log if types.len() == 2 => Err(ExprError::new(
            ErrorKind::FeatureNotSupported,
            "log(numeric, numeric) is not supported yet; use ln(x) / ln(b)",
        )),
        Func::Log => build(Func::Log10, args),
        Func::Sign | Func::Trunc if types[0] == Decimal => {
            let mut args = args;
            if args.len() == 2 {
                let digits = args.pop().ok_or_else(|| no_function(func, &[]))?;
                if !digits.return_type().is_integer() {
                    return Err(no_function(func, &[]));
                }
                let digits = super::build::build_cast(digits, Int32, true)?;
                args.push(digits);
            }
            call(func, args, Decimal)
        }
        Func::Trunc if types.len() == 2 => {
            // trunc(numeric, int) is the only two-argument form.
            if !types[1].is_integer() || types[0] == Float32 || types[0] == Float64 {
                return Err(no_function(func, &args));
            }
            let mut it = args.into_iter();
            let (x, d) = match (it.next(), it.next()) {
                (Some(x), Some(d)) => (x, d),
                _ => return Err(no_function(func, &[])),
            };
            let x = super::build::build_cast(x, Decimal, true)?;
            let d = super::build::build_cast(d, Int32, true)?;
            call(func, vec![x, d], Decimal)
        }
        Func::DivTrunc => {
            if types.iter().any(|t| matches!(t, Float32 | Float64)) {
                return Err(no_function(func, &args));
            }
            call(func, to(Decimal, args)?, Decimal)
        }
        Func::Gcd | Func::Lcm => {
            if types.iter().any(|t| matches!(t, Float32 | Float64)) {
                return Err(no_function(func, &args));
            }
            let ty = if any_numeric {
                Decimal
            } else if types.contains(&Int64) {
                Int64
            } else {
                Int32
            };
            call(func, to(ty, args)?, ty)
        }
        Func::Sqrt | Func::Exp | Func::Ln | Func::Log10 | Func::Power if any_numeric => {
            Err(numeric_not_yet(func))
        }
        _ => call(func, to(Float64, args)?, Float64),
    }
}

fn overflow() -> ExprError {
    ExprError::new(
        ErrorKind::NumericValueOutOfRange,
        "value out of range: overflow",
    )
}

fn underflow() -> ExprError {
    ExprError::new(
        ErrorKind::NumericValueOutOfRange,
        "value out of range: underflow",
    )
}

fn out_of_range() -> ExprError {
    ExprError::new(ErrorKind::NumericValueOutOfRange, "input is out of range")
}

/// PostgreSQL's `check_float8_val`: an infinite result is an overflow
/// unless an infinity was valid here, a zero one an underflow unless zero
/// was.
fn checked(r: f64, inf_ok: bool, zero_ok: bool) -> ExprResult<f64> {
    if r.is_infinite() && !inf_ok {
        Err(overflow())
    } else if r == 0.0 && !zero_ok {
        Err(underflow())
    } else {
        Ok(r)
    }
}

fn log_domain(x: f64) -> ExprResult<()> {
    let why = if x == 0.0 {
        "cannot take logarithm of zero"
    } else if x < 0.0 {
        "cannot take logarithm of a negative number"
    } else {
        return Ok(());
    };
    Err(ExprError::new(ErrorKind::InvalidArgumentForLogarithm, why))
}

fn power_error(why: &str) -> ExprError {
    ExprError::new(ErrorKind::InvalidArgumentForPowerFunction, why)
}

/// `power(x, y)` over double precision, as PostgreSQL's `dpow`.
fn power(x: f64, y: f64) -> ExprResult<f64> {
    if x.is_nan() {
        return Ok(if y.is_nan() || y != 0.0 { x } else { 1.0 });
    }
    if y.is_nan() {
        return Ok(if x != 1.0 { y } else { 1.0 });
    }
    if x == 0.0 && y < 0.0 {
        return Err(power_error("zero raised to a negative power is undefined"));
    }
    if x < 0.0 && y.floor() != y {
        return Err(power_error(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if y.is_infinite() {
        let ax = x.abs();
        return Ok(if ax == 1.0 {
            1.0
        } else if (y > 0.0) == (ax > 1.0) {
            f64::INFINITY
        } else {
            0.0
        });
    }
    if x.is_infinite() {
        if y == 0.0 {
            return Ok(1.0);
        }
        if x > 0.0 {
            return Ok(if y > 0.0 { x } else { 0.0 });
        }
        let half = y / 2.0;
        let odd = half.floor() != half;
        return Ok(match (y > 0.0, odd) {
            (true, true) => x,
            (true, false) => -x,
            (false, true) => -0.0,
            (false, false) => 0.0,
        });
    }
    let r = x.powf(y);
    if r.is_nan() {
        return Err(power_error(
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if r.is_infinite() {
        return Err(overflow());
    }
    if r == 0.0 && x != 0.0 {
        return Err(underflow());
    }
    Ok(r)
}

/// A trigonometric function of double precision, as PostgreSQL's `dsin`
/// and friends: NaN in, NaN out; an infinity is out of range.
fn trig(func: Func, x: f64) -> ExprResult<f64> {
    if x.is_nan() {
        return Ok(x);
    }
    match func {
        Func::Asin | Func::Acos if !(-1.0..=1.0).contains(&x) => Err(out_of_range()),
        Func::Asin => checked(x.asin(), false, true),
        Func::Acos => checked(x.acos(), false, true),
        Func::Atan => checked(x.atan(), false, true),
        _ if x.is_infinite() => Err(out_of_range()),
        Func::Sin => checked(x.sin(), false, true),
        Func::Cos => checked(x.cos(), false, true),
        // tan(pi/2) may be infinite; so may cot(0).
        Func::Tan => checked(x.tan(), true, true),
        _ => checked(1.0 / x.tan(), true, true),
    }
}

fn float(func: Func, a: f64, b: Option<f64>) -> ExprResult<f64> {
    match func {
        Func::Sqrt => {
            if a < 0.0 {
                return Err(power_error("cannot take square root of a negative number"));
            }
            checked(a.sqrt(), a.is_infinite(), a == 0.0)
        }
        Func::Cbrt => checked(a.cbrt(), a.is_infinite(), a == 0.0),
        Func::Exp => {
            if a.is_nan() {
                Ok(a)
            } else if a.is_infinite() {
                Ok(if a > 0.0 { a } else { 0.0 })
            } else {
                checked(a.exp(), false, false)
            }
        }
        Func::Ln | Func::Log10 => {
            log_domain(a)?;
            let r = if func == Func::Ln { a.ln() } else { a.log10() };
            checked(r, a.is_infinite(), a == 1.0)
        }
        Func::Power => power(a, b.unwrap_or(f64::NAN)),
        Func::Sign => Ok(if a > 0.0 {
            1.0
        } else if a < 0.0 {
            -1.0
        } else {
            0.0
        }),
        Func::Trunc => Ok(a.trunc()),
        Func::Degrees => div_checked(a, RADIANS_PER_DEGREE),
        Func::Radians => mul_checked(a, RADIANS_PER_DEGREE),
        Func::Atan2 => {
            let b = b.unwrap_or(f64::NAN);
            if a.is_nan() || b.is_nan() {
                return Ok(f64::NAN);
            }
            checked(a.atan2(b), false, true)
        }
        _ => trig(func, a),
    }
}

/// PostgreSQL's `float8_div`.
fn div_checked(a: f64, b: f64) -> ExprResult<f64> {
    let r = a / b;
    checked(
        r,
        a.is_infinite() || b.is_infinite(),
        a == 0.0 || b.is_infinite(),
    )
}

/// PostgreSQL's `float8_mul`.
fn mul_checked(a: f64, b: f64) -> ExprResult<f64> {
    let r = a * b;
    checked(r, a.is_infinite() || b.is_infinite(), a == 0.0 || b == 0.0)
}

fn gcd_u128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `gcd`/`lcm` of two integers, as i128 (the caller checks its type's
/// range): `gcd` is never negative, `lcm` of zero is zero.
fn gcd_lcm(func: Func, a: i128, b: i128) -> Option<i128> {
    let g = gcd_u128(a.unsigned_abs(), b.unsigned_abs());
    let r = if func == Func::Gcd {
        g
    } else if a == 0 || b == 0 {
        0
    } else {
        (a.unsigned_abs() / g).checked_mul(b.unsigned_abs())?
    };
    i128::try_from(r).ok()
}

fn numeric_gcd_lcm(func: Func, a: Decimal, b: Decimal) -> ExprResult<ScalarValue> {
    // Same scale for both: then the mantissas are integers.
    let scale = a.scale().max(b.scale());
    let (mut a, mut b) = (a, b);
    a.rescale(scale);
    b.rescale(scale);
    let r = gcd_lcm(func, a.mantissa(), b.mantissa())
        .and_then(|m| Decimal::try_from_i128_with_scale(m, scale).ok())
        .ok_or_else(|| {
            ExprError::new(
                ErrorKind::NumericValueOutOfRange,
                "value overflows numeric format",
            )
        })?;
    Ok(ScalarValue::decimal(r))
}

/// `trunc(numeric, s)`: towards zero at `s` digits (tens, hundreds... when
/// negative); the result has scale `max(s, 0)`, capped at 28.
fn trunc_decimal(d: Decimal, s: i32) -> Decimal {
    let r = if s >= 0 {
        let s = (s as u32).min(Decimal::MAX_SCALE);
        let mut r = d.trunc_with_scale(s);
        r.rescale(s);
        r
    } else if s < -28 {
        Decimal::ZERO
    } else {
        let p = Decimal::from_i128_with_scale(10i128.pow(s.unsigned_abs()), 0);
        match (d / p).trunc().checked_mul(p) {
            Some(mut r) => {
                r.rescale(0);
                r
            }
            None => d,
        }
    };
    super::arith::normalize_zero(r)
}

fn numeric(func: Func, vals: &[ScalarValue]) -> ExprResult<ScalarValue> {
    use ScalarValue as S;
    let arg = |i: usize| match vals.get(i) {
        Some(S::Decimal(n)) => Ok(*n),
        _ => Err(ExprError::new(
            ErrorKind::InternalError,
            format!("{}: expected numeric", func.name()),
        )),
    };
    let a = arg(0)?;
    Ok(match func {
        Func::Sign => match a {
            Numeric::NaN => S::Decimal(Numeric::NaN),
            Numeric::PosInf => S::decimal(Decimal::ONE),
            Numeric::NegInf => S::decimal(Decimal::NEGATIVE_ONE),
            Numeric::Finite(d) => S::decimal(if d.is_zero() {
                Decimal::ZERO
            } else if d.is_sign_negative() {
                Decimal::NEGATIVE_ONE
            } else {
                Decimal::ONE
            }),
        },
        Func::Trunc => match a {
            Numeric::Finite(d) => {
                let s = match vals.get(1) {
                    Some(S::Int32(s)) => *s,
                    _ => 0,
                };
                S::decimal(trunc_decimal(d, s))
            }
            special => S::Decimal(special),
        },
        Func::DivTrunc => {
            let b = arg(1)?;
            match (a, b) {
                (Numeric::NaN, _) | (_, Numeric::NaN) => S::Decimal(Numeric::NaN),
                (Numeric::PosInf | Numeric::NegInf, Numeric::PosInf | Numeric::NegInf) => {
                    S::Decimal(Numeric::NaN)
                }
                (Numeric::PosInf | Numeric::NegInf, Numeric::Finite(d)) => {
                    if d.is_zero() {
                        return Err(division_by_zero());
                    }
                    let positive = (a == Numeric::PosInf) != d.is_sign_negative();
                    S::Decimal(if positive {
                        Numeric::PosInf
                    } else {
                        Numeric::NegInf
                    })
                }
                (Numeric::Finite(_), Numeric::PosInf | Numeric::NegInf) => {
                    S::decimal(Decimal::ZERO)
                }
                (Numeric::Finite(x), Numeric::Finite(y)) => {
                    if y.is_zero() {
                        return Err(division_by_zero());
                    }
                    let q = x.checked_div(y).ok_or_else(|| {
                        ExprError::new(
                            ErrorKind::NumericValueOutOfRange,
                            "value overflows numeric format",
                        )
                    })?;
                    let mut q = q.trunc();
                    q.rescale(0);
                    S::decimal(super::arith::normalize_zero(q))
                }
            }
        }
        Func::Gcd | Func::Lcm => match (a, arg(1)?) {
            (Numeric::Finite(x), Numeric::Finite(y)) => numeric_gcd_lcm(func, x, y)?,
            _ => S::Decimal(Numeric::NaN),
        },
        _ => {
            return Err(ExprError::new(
                ErrorKind::InternalError,
                format!("{} of numeric", func.name()),
            ))
        }
    })
}

fn division_by_zero() -> ExprError {
    ExprError::new(ErrorKind::DivisionByZero, "division by zero")
}

/// Evaluate one of this module's functions over non-NULL arguments
/// (`None`: not one of them).
pub(super) fn apply_strict(func: Func, vals: &[ScalarValue]) -> Option<ExprResult<Datum>> {
    if !owns(func) {
        return None;
    }
    use ScalarValue as S;
    let r = (|| -> ExprResult<ScalarValue> {
        if func == Func::Pi {
            return Ok(S::float64(std::f64::consts::PI));
        }
        match vals {
            [S::Float64(a)] => Ok(S::float64(float(func, a.0, None)?)),
            [S::Float64(a), S::Float64(b)] => Ok(S::float64(float(func, a.0, Some(b.0))?)),
            [S::Decimal(_), ..] => numeric(func, vals),
            [S::Int32(a), S::Int32(b)] => {
                let r = gcd_lcm(func, (*a).into(), (*b).into());
                r.and_then(|r| i32::try_from(r).ok())
                    .map(S::Int32)
                    .ok_or_else(|| int_out_of_range(DataType::Int32))
            }
            [S::Int64(a), S::Int64(b)] => {
                let r = gcd_lcm(func, (*a).into(), (*b).into());
                r.and_then(|r| i64::try_from(r).ok())
                    .map(S::Int64)
                    .ok_or_else(|| int_out_of_range(DataType::Int64))
            }
            _ => Err(ExprError::new(
                ErrorKind::InternalError,
                format!("{} of unexpected arguments", func.name()),
            )),
        }
    })();
    Some(r.map(Some))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(func: Func, a: f64) -> Result<f64, ErrorKind> {
        float(func, a, None).map_err(|e| e.kind())
    }

    /// Expected values and errors from PostgreSQL 15.
    #[test]
    fn double_precision_domains_and_ranges() {
        assert_eq!(f(Func::Sqrt, 2.0), Ok(std::f64::consts::SQRT_2));
        assert_eq!(
            f(Func::Sqrt, -1.0),
            Err(ErrorKind::InvalidArgumentForPowerFunction)
        );
        assert_eq!(
            f(Func::Ln, 0.0),
            Err(ErrorKind::InvalidArgumentForLogarithm)
        );
        assert_eq!(f(Func::Log10, 1000.0), Ok(3.0));
        assert_eq!(f(Func::Exp, 1000.0), Err(ErrorKind::NumericValueOutOfRange));
        assert_eq!(f(Func::Exp, f64::NEG_INFINITY), Ok(0.0));
        assert_eq!(f(Func::Cbrt, -8.0), Ok(-2.0));
        assert_eq!(f(Func::Asin, 2.0), Err(ErrorKind::NumericValueOutOfRange));
        assert_eq!(
            f(Func::Sin, f64::INFINITY),
            Err(ErrorKind::NumericValueOutOfRange)
        );
        assert_eq!(f(Func::Cot, 0.0), Ok(f64::INFINITY));
        assert_eq!(f(Func::Degrees, std::f64::consts::PI), Ok(180.0));
        assert_eq!(
            f(Func::Degrees, 1e308),
            Err(ErrorKind::NumericValueOutOfRange)
        );
        assert_eq!(power(f64::NAN, 0.0).ok(), Some(1.0));
        assert_eq!(power(f64::NEG_INFINITY, 3.0).ok(), Some(f64::NEG_INFINITY));
        assert_eq!(power(f64::NEG_INFINITY, 2.0).ok(), Some(f64::INFINITY));
        assert!(power(0.0, -1.0).is_err());
        assert!(power(-8.0, 1.0 / 3.0).is_err());
        assert!(power(10.0, -400.0).is_err());
    }

    #[test]
    fn exact_forms() {
        assert_eq!(gcd_lcm(Func::Gcd, -4, 6), Some(2));
        assert_eq!(gcd_lcm(Func::Lcm, -4, 6), Some(12));
        assert_eq!(gcd_lcm(Func::Lcm, 0, 5), Some(0));
        let d = |s: &str| s.parse::<Decimal>().expect("decimal");
        let text = |v: ScalarValue| match v {
            ScalarValue::Decimal(Numeric::Finite(d)) => d.to_string(),
            other => format!("{other:?}"),
        };
        assert_eq!(
            text(numeric_gcd_lcm(Func::Lcm, d("1.5"), d("0.25")).expect("lcm")),
            "1.50"
        );
        assert_eq!(trunc_decimal(d("42.4382"), 2).to_string(), "42.43");
        assert_eq!(trunc_decimal(d("1234.5"), -2).to_string(), "1200");
        assert_eq!(trunc_decimal(d("-0.5"), 0).to_string(), "0");
    }
}
