//! Evaluation of [`Expr`] over a row.
//!
//! NULL propagates through every operator and function except the logical
//! ones (three-valued AND/OR/NOT), `IS [NOT] DISTINCT FROM`, the `IS`
//! predicates, COALESCE/GREATEST/LEAST (which skip NULLs) and CASE. AND, OR,
//! COALESCE and CASE evaluate lazily, so an error in a branch that is not
//! needed is not raised (as in PostgreSQL for these constructs).

use ebbflow_common::ErrorKind;
use std::cmp::Ordering;

use rust_decimal::{Decimal, RoundingStrategy};

use super::arith::{arith, neg, normalize_zero, ArithOp};
use super::build::common_type;
use super::cast::{cast_value, int_out_of_range};
use super::func::Func;
use super::string::{self, TrimSide};
use super::{Expr, ExprError, ExprResult};
use ebbflow_common::{DataType, Datum, Numeric, Row, ScalarValue, F64};

impl Expr {
    /// Evaluate over one input row.
    pub fn eval(&self, row: &Row) -> ExprResult<Datum> {
        match self {
            Expr::InputRef { index, .. } => row.get(*index).cloned().ok_or_else(|| {
                ExprError::new(
                    ErrorKind::InternalError,
                    format!("input column {} out of a row of {}", index, row.len()),
                )
            }),
            Expr::Literal { value, .. } => Ok(value.clone()),
            Expr::Cast { expr, ty } => match expr.eval(row)? {
                None => Ok(None),
                Some(v) => Ok(Some(cast_value(v, *ty)?)),
            },
            Expr::Case { whens, else_, .. } => {
                for (cond, result) in whens {
                    if cond.eval_predicate(row)? {
                        return result.eval(row);
                    }
                }
                match else_ {
                    Some(e) => e.eval(row),
                    None => Ok(None),
                }
            }
            Expr::Func { func, args, ty } => eval_func(*func, args, *ty, row),
        }
    }

    /// Evaluate a predicate: true only when the result is TRUE (NULL and
    /// FALSE both reject the row, as in a WHERE clause).
    pub fn eval_predicate(&self, row: &Row) -> ExprResult<bool> {
        Ok(matches!(
            self.eval(row)?,
            Some(ebbflow_common::ScalarValue::Boolean(true))
        ))
    }
}

fn internal(msg: impl Into<String>) -> ExprError {
    ExprError::new(ErrorKind::InternalError, msg)
}

fn as_bool(d: &Datum) -> ExprResult<Option<bool>> {
    match d {
        None => Ok(None),
        Some(ScalarValue::Boolean(b)) => Ok(Some(*b)),
        Some(v) => Err(internal(format!("expected boolean, got {}", v.data_type()))),
    }
}

fn as_str(v: &ScalarValue) -> ExprResult<&str> {
    v.as_str()
        .ok_or_else(|| internal(format!("expected varchar, got {}", v.data_type())))
}

fn as_i32(v: &ScalarValue) -> ExprResult<i32> {
    match v {
        ScalarValue::Int32(x) => Ok(*x),
        other => Err(internal(format!(
            "expected integer, got {}",
            other.data_type()
        ))),
    }
}

/// Compare two non-null values; values of different types (which the
/// builder normally prevents) are compared in their common type.
pub fn compare(a: &ScalarValue, b: &ScalarValue) -> ExprResult<Ordering> {
    let (ta, tb) = (a.data_type(), b.data_type());
    if ta == tb {
        return Ok(a.cmp(b));
    }
    let t = common_type(ta, tb)?;
    let a = cast_value(a.clone(), t)?;
    let b = cast_value(b.clone(), t)?;
    Ok(a.cmp(&b))
}

fn eval_args(args: &[Expr], row: &Row) -> ExprResult<Vec<Datum>> {
    args.iter().map(|a| a.eval(row)).collect()
}

fn arg(vals: &[Datum], i: usize) -> ExprResult<&Datum> {
    vals.get(i)
        .ok_or_else(|| internal(format!("missing argument {}", i + 1)))
}

fn eval_func(func: Func, args: &[Expr], ty: DataType, row: &Row) -> ExprResult<Datum> {
    let first = || {
        args.first()
            .ok_or_else(|| internal(format!("{} without arguments", func.name())))
    };
    // Functions that look at NULLs or evaluate lazily.
    match func {
        Func::And | Func::Or => {
            let stop = func == Func::Or; // the value that decides the result
            let mut saw_null = false;
            for a in args {
                match as_bool(&a.eval(row)?)? {
                    Some(b) if b == stop => return Ok(Some(ScalarValue::Boolean(stop))),
                    Some(_) => {}
                    None => saw_null = true,
                }
            }
            return Ok(if saw_null {
                None
            } else {
                Some(ScalarValue::Boolean(!stop))
            });
        }
        Func::Not => {
            return Ok(as_bool(&first()?.eval(row)?)?.map(|b| ScalarValue::Boolean(!b)));
        }
        Func::IsNull | Func::IsNotNull => {
            let is_null = first()?.eval(row)?.is_none();
            return Ok(Some(ScalarValue::Boolean(
                is_null == (func == Func::IsNull),
            )));
        }
        Func::IsTrue | Func::IsNotTrue | Func::IsFalse | Func::IsNotFalse => {
            let v = as_bool(&first()?.eval(row)?)?;
            let r = match func {
                Func::IsTrue => v == Some(true),
                Func::IsNotTrue => v != Some(true),
                Func::IsFalse => v == Some(false),
                _ => v != Some(false),
            };
            return Ok(Some(ScalarValue::Boolean(r)));
        }
        Func::Coalesce => {
            for a in args {
                if let Some(v) = a.eval(row)? {
                    return Ok(Some(v));
                }
            }
            return Ok(None);
        }
        Func::IsDistinctFrom | Func::IsNotDistinctFrom => {
            let vals = eval_args(args, row)?;
            let same = match (arg(&vals, 0)?, arg(&vals, 1)?) {
                (None, None) => true,
                (Some(a), Some(b)) => compare(a, b)? == Ordering::Equal,
                _ => false,
            };
            return Ok(Some(ScalarValue::Boolean(
                same == (func == Func::IsNotDistinctFrom),
            )));
        }
        f if super::array::is_lenient(f) => {
            let vals = eval_args(args, row)?;
            return super::array::eval_lenient(func, ty, vals);
        }
        f if super::split::reads_nulls(f) => {
            let vals = eval_args(args, row)?;
            return super::split::apply(func, &vals).unwrap_or(Ok(None));
        }
        f if super::jsonb::reads_nulls(f) => {
            let vals = eval_args(args, row)?;
            return super::jsonb::apply(func, &vals).unwrap_or(Ok(None));
        }
        Func::StringAggInput => {
            let vals = eval_args(args, row)?;
            return super::agg::pack_string_agg_input(&vals);
        }
        Func::ArrayAggInput => {
            let vals = eval_args(args, row)?;
            return super::agg::pack_array_agg_input(&vals);
        }
        Func::ConcatFn | Func::ConcatWs => {
            let vals = eval_args(args, row)?;
            let (sep, parts) = match func {
                Func::ConcatWs => match vals.split_first() {
                    Some((Some(sep), rest)) => (as_str(sep)?, rest),
                    _ => return Ok(None),
                },
                _ => ("", vals.as_slice()),
            };
            let mut out = String::new();
            for (i, v) in parts.iter().flatten().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                match v.as_str() {
                    Some(s) => out.push_str(s),
                    None => out.push_str(&ebbflow_common::text::format_datum(v)),
                }
            }
            return Ok(Some(ScalarValue::varchar(out)));
        }
        Func::Greatest | Func::Least => {
            let mut best: Option<ScalarValue> = None;
            for v in eval_args(args, row)?.into_iter().flatten() {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let ord = compare(&v, &b)?;
                        let take = if func == Func::Greatest {
                            ord == Ordering::Greater
                        } else {
                            ord == Ordering::Less
                        };
                        if take {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            return Ok(best);
        }
        Func::ScalarSubquery => {
            let vals = eval_args(args, row)?;
            if let Some(ScalarValue::Int64(n)) = arg(&vals, 0)? {
                if *n > 1 {
                    return Err(ExprError::new(
                        ErrorKind::CardinalityViolation,
                        "more than one row returned by a subquery used as an expression",
                    ));
                }
            }
            return Ok(arg(&vals, 1)?.clone());
        }
        Func::NullIf => {
            let vals = eval_args(args, row)?;
            return Ok(match (arg(&vals, 0)?, arg(&vals, 1)?) {
                (Some(a), Some(b)) if compare(a, b)? == Ordering::Equal => None,
                (a, _) => a.clone(),
            });
        }
        _ => {}
    }
    // Strict functions: NULL in, NULL out.
    let vals = eval_args(args, row)?;
    if vals.iter().any(Option::is_none) {
        return Ok(None);
    }
    apply_strict(func, ty, vals.into_iter().flatten().collect())
}

/// Whether `func` is strict (NULL in, NULL out; all arguments evaluated)
/// and so computed by [`apply_strict`].
pub(super) fn is_strict(func: Func) -> bool {
    !matches!(
        func,
        Func::And
            | Func::Or
            | Func::Not
            | Func::IsNull
            | Func::IsNotNull
            | Func::IsTrue
            | Func::IsNotTrue
            | Func::IsFalse
            | Func::IsNotFalse
            | Func::Coalesce
            | Func::IsDistinctFrom
            | Func::IsNotDistinctFrom
            | Func::Greatest
            | Func::Least
            | Func::ScalarSubquery
            | Func::ConcatFn
            | Func::ConcatWs
            | Func::NullIf
            | Func::StringAggInput
            | Func::ArrayAggInput
    ) && !super::array::is_lenient(func)
        && !super::jsonb::reads_nulls(func)
        && !super::split::reads_nulls(func)
}

/// A strict function of non-NULL arguments.
pub(super) fn apply_strict(func: Func, ty: DataType, vals: Vec<ScalarValue>) -> ExprResult<Datum> {
    let v = |i: usize| {
        vals.get(i)
            .ok_or_else(|| internal(format!("{}: missing argument {}", func.name(), i + 1)))
    };
    let cmp = |want: fn(Ordering) -> bool| -> ExprResult<Datum> {
        Ok(Some(ScalarValue::Boolean(want(compare(v(0)?, v(1)?)?))))
    };
    let text = |s: String| Ok(Some(ScalarValue::varchar(s)));
    if let Some(r) = super::array::apply_strict(func, &vals) {
        return r;
    }
    if let Some(r) = super::bytea::apply_strict(func, &vals) {
        return r;
    }
    if let Some(r) = super::math::apply_strict(func, &vals) {
        return r;
    }
    if let Some(r) = super::text_funcs::apply_strict(func, &vals) {
        return r;
    }
    if let Some(r) = super::calendar::apply_strict(func, &vals) {
        return r;
    }
    if let Some(r) = super::zoned::apply(func, ty, &vals) {
        return r;
    }
    if super::split::owns(func) {
        let vals: Vec<Datum> = vals.into_iter().map(Some).collect();
        return super::split::apply(func, &vals).unwrap_or(Ok(None));
    }
    if let (Func::ToTimestamp, [ScalarValue::Float64(secs)]) = (func, vals.as_slice()) {
        let micros = (secs.0 * 1e6).round();
        if secs.0.is_nan() {
            return Err(ExprError::new(
                ErrorKind::DatetimeFieldOverflow,
                "timestamp cannot be NaN",
            ));
        }
        let in_range = micros.is_finite()
            && micros.abs() < 9.2e18
            && ebbflow_common::Zone::UTC.to_local(micros as i64).is_some();
        if !in_range {
            return Err(ExprError::new(
                ErrorKind::DatetimeFieldOverflow,
                format!(
                    "timestamp out of range: \"{}\"",
                    ebbflow_common::text::format_float(secs.0, false)
                ),
            ));
        }
        return Ok(Some(ScalarValue::Timestamptz(micros as i64)));
    }
    if func == Func::GenRandomUuid {
        // Version 4, variant 1 (RFC 9562), as PostgreSQL's.
        let r: u128 = rand::random();
        let v4 = (r & !(0xf << 76) | (0x4 << 76)) & !(0x3 << 62) | (0x2 << 62);
        return Ok(Some(ScalarValue::Uuid(v4)));
    }
    if super::jsonb::owns(func) {
        let vals: Vec<Datum> = vals.into_iter().map(Some).collect();
        return super::jsonb::apply(func, &vals).unwrap_or(Ok(None));
    }
    match func {
        Func::Add => Ok(Some(arith(ArithOp::Add, v(0)?, v(1)?)?)),
        Func::Sub => Ok(Some(arith(ArithOp::Sub, v(0)?, v(1)?)?)),
        Func::Mul => Ok(Some(arith(ArithOp::Mul, v(0)?, v(1)?)?)),
        Func::Div => Ok(Some(arith(ArithOp::Div, v(0)?, v(1)?)?)),
        Func::Mod => Ok(Some(arith(ArithOp::Mod, v(0)?, v(1)?)?)),
        Func::Neg => Ok(Some(neg(v(0)?)?)),
        Func::Eq => cmp(|o| o == Ordering::Equal),
        Func::NotEq => cmp(|o| o != Ordering::Equal),
        Func::Lt => cmp(|o| o == Ordering::Less),
        Func::LtEq => cmp(|o| o != Ordering::Greater),
        Func::Gt => cmp(|o| o == Ordering::Greater),
        Func::GtEq => cmp(|o| o != Ordering::Less),
        Func::Concat => text(format!("{}{}", as_str(v(0)?)?, as_str(v(1)?)?)),
        Func::Lower => text(as_str(v(0)?)?.to_lowercase()),
        Func::QuoteIdent => text(string::quote_ident(as_str(v(0)?)?)),
        Func::RegexMatch | Func::RegexNotMatch | Func::RegexIMatch | Func::RegexNotIMatch => {
            let ci = matches!(func, Func::RegexIMatch | Func::RegexNotIMatch);
            let m = super::regexp::regex_match(as_str(v(0)?)?, as_str(v(1)?)?, ci)?;
            let negate = matches!(func, Func::RegexNotMatch | Func::RegexNotIMatch);
            Ok(Some(ScalarValue::Boolean(m != negate)))
        }
        Func::Upper => text(as_str(v(0)?)?.to_uppercase()),
        Func::DateTrunc => match v(1)? {
            ScalarValue::Timestamp(t) => Ok(Some(ScalarValue::Timestamp(
                super::datetime::date_trunc(as_str(v(0)?)?, *t)?,
            ))),
            ScalarValue::Interval(i) => Ok(Some(ScalarValue::Interval(
                super::datetime::date_trunc_interval(as_str(v(0)?)?, i)?,
            ))),
            other => Err(internal(format!("date_trunc of {}", other.data_type()))),
        },
        Func::Extract => {
            let unit = as_str(v(0)?)?;
            Ok(Some(ScalarValue::decimal(match v(1)? {
                ScalarValue::Timestamp(t) => super::datetime::extract_timestamp(unit, *t)?,
                ScalarValue::Date(d) => super::datetime::extract_date(unit, *d)?,
                ScalarValue::Time(t) => super::datetime::extract_time(unit, *t)?,
                ScalarValue::Interval(i) => super::datetime::extract_interval(unit, i)?,
                other => return Err(internal(format!("extract from {}", other.data_type()))),
            })))
        }
        Func::ToChar => match (v(0)?, v(1)?) {
            (ScalarValue::Timestamp(t), tpl) => {
                Ok(super::to_char::to_char(*t, as_str(tpl)?).map(ScalarValue::varchar))
            }
            (other, _) => Err(internal(format!("to_char of {}", other.data_type()))),
        },
        Func::TumbleStart => {
            let (ScalarValue::Timestamp(t), ScalarValue::Interval(size)) = (v(0)?, v(1)?) else {
                return Err(internal("tumble_start of a non-timestamp"));
            };
            let offset = match vals.get(2) {
                Some(ScalarValue::Interval(o)) => Some(o),
                _ => None,
            };
            Ok(Some(ScalarValue::Timestamp(super::window::tumble_start(
                *t, size, offset,
            )?)))
        }
        Func::DatePart => match v(1)? {
            ScalarValue::Time(t) => Ok(Some(ScalarValue::float64(super::cast::decimal_to_f64(
                &super::datetime::extract_time(as_str(v(0)?)?, *t)?,
            )))),
            ScalarValue::Timestamp(t) => Ok(Some(ScalarValue::float64(
                super::datetime::date_part(as_str(v(0)?)?, *t)?,
            ))),
            ScalarValue::Interval(i) => {
                use rust_decimal::prelude::ToPrimitive;
                let d = super::datetime::extract_interval(as_str(v(0)?)?, i)?;
                let f = d.to_f64().ok_or_else(|| {
                    ExprError::new(
                        ErrorKind::NumericValueOutOfRange,
                        "value out of range: overflow",
                    )
                })?;
                Ok(Some(ScalarValue::float64(f)))
            }
            other => Err(internal(format!("date_part of {}", other.data_type()))),
        },
        Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval => {
            let ScalarValue::Interval(i) = v(0)? else {
                return Err(internal("justify of a non-interval"));
            };
            Ok(Some(ScalarValue::Interval(match func {
                Func::JustifyHours => super::datetime::justify_hours(i)?,
                Func::JustifyDays => super::datetime::justify_days(i)?,
                _ => super::datetime::justify_interval(i)?,
            })))
        }
        Func::Age => {
            let (ScalarValue::Timestamp(a), ScalarValue::Timestamp(b)) = (v(0)?, v(1)?) else {
                return Err(internal("age of a non-timestamp"));
            };
            Ok(Some(ScalarValue::Interval(super::datetime::age(*a, *b)?)))
        }
        Func::Length => Ok(Some(ScalarValue::Int32(
            i32::try_from(as_str(v(0)?)?.chars().count())
                .map_err(|_| int_out_of_range(DataType::Int32))?,
        ))),
        Func::Substr => {
            let count = match vals.get(2) {
                Some(c) => Some(as_i32(c)?),
                None => None,
            };
            text(string::substr(as_str(v(0)?)?, as_i32(v(1)?)?, count)?)
        }
        Func::Trim | Func::LTrim | Func::RTrim => {
            let side = match func {
                Func::Trim => TrimSide::Both,
                Func::LTrim => TrimSide::Leading,
                _ => TrimSide::Trailing,
            };
            let chars = match vals.get(1) {
                Some(c) => Some(as_str(c)?),
                None => None,
            };
            text(string::trim(as_str(v(0)?)?, chars, side))
        }
        Func::Like | Func::NotLike | Func::ILike | Func::NotILike => {
            let escape = match vals.get(2) {
                Some(e) => Some(as_str(e)?),
                None => None,
            };
            let ci = matches!(func, Func::ILike | Func::NotILike);
            let m = string::like(as_str(v(0)?)?, as_str(v(1)?)?, escape, ci)?;
            let negate = matches!(func, Func::NotLike | Func::NotILike);
            Ok(Some(ScalarValue::Boolean(m != negate)))
        }
        Func::Replace => text(string::replace(
            as_str(v(0)?)?,
            as_str(v(1)?)?,
            as_str(v(2)?)?,
        )),
        Func::SplitPart => text(string::split_part(
            as_str(v(0)?)?,
            as_str(v(1)?)?,
            as_i32(v(2)?)?,
        )?),
        Func::Position => Ok(Some(ScalarValue::Int32(string::position(
            as_str(v(0)?)?,
            as_str(v(1)?)?,
        )))),
        Func::Round | Func::Ceil | Func::Floor => {
            let digits = match vals.get(1) {
                Some(d) => Some(as_i32(d)?),
                None => None,
            };
            Ok(Some(round_like(func, v(0)?, digits)?))
        }
        Func::Abs => Ok(Some(abs(v(0)?)?)),
        _ => Err(internal(format!(
            "{} is not evaluated here (type {})",
            func.name(),
            ty
        ))),
    }
}

fn abs(x: &ScalarValue) -> ExprResult<ScalarValue> {
    use ScalarValue as S;
    Ok(match x {
        S::Int16(v) => S::Int16(
            v.checked_abs()
                .ok_or_else(|| int_out_of_range(DataType::Int16))?,
        ),
        S::Int32(v) => S::Int32(
            v.checked_abs()
                .ok_or_else(|| int_out_of_range(DataType::Int32))?,
        ),
        S::Int64(v) => S::Int64(
            v.checked_abs()
                .ok_or_else(|| int_out_of_range(DataType::Int64))?,
        ),
        S::Float32(v) => S::Float32(F64(v.0.abs())),
        S::Float64(v) => S::float64(v.0.abs()),
        S::Decimal(Numeric::Finite(d)) => S::decimal(d.abs()),
        S::Decimal(Numeric::NegInf) => S::Decimal(Numeric::PosInf),
        S::Decimal(special) => S::Decimal(*special),
        other => return Err(internal(format!("abs of {}", other.data_type()))),
    })
}

/// `round(numeric, s)`: half away from zero at `s` digits (tens, hundreds...
/// when negative); the result has scale `max(s, 0)` (capped at 28).
fn round_decimal(d: Decimal, s: i32) -> Decimal {
    let r = if s >= 0 {
        let s = (s as u32).min(Decimal::MAX_SCALE);
        let mut r = d.round_dp_with_strategy(s, RoundingStrategy::MidpointAwayFromZero);
        r.rescale(s);
        r
    } else if s < -28 {
        Decimal::ZERO
    } else {
        let p = Decimal::from_i128_with_scale(10i128.pow((-s) as u32), 0);
        match (d / p)
            .round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero)
            .checked_mul(p)
        {
            Some(mut r) => {
                r.rescale(0);
                r
            }
            None => d,
        }
    };
    normalize_zero(r)
}

fn round_like(func: Func, x: &ScalarValue, digits: Option<i32>) -> ExprResult<ScalarValue> {
    use ScalarValue as S;
    Ok(match (func, x) {
        // NaN and the infinities round to themselves.
        (Func::Round | Func::Ceil | Func::Floor, S::Decimal(n)) if n.finite().is_none() => {
            S::Decimal(*n)
        }
        (Func::Round, S::Decimal(Numeric::Finite(d))) => {
            S::decimal(round_decimal(*d, digits.unwrap_or(0)))
        }
        (Func::Ceil, S::Decimal(Numeric::Finite(d))) => S::decimal(normalize_zero(d.ceil())),
        (Func::Floor, S::Decimal(Numeric::Finite(d))) => S::decimal(normalize_zero(d.floor())),
        (Func::Round, S::Float64(f)) => S::float64(f.0.round_ties_even()),
        (Func::Ceil, S::Float64(f)) => S::float64(f.0.ceil()),
        (Func::Floor, S::Float64(f)) => S::float64(f.0.floor()),
        (_, other) => {
            return Err(internal(format!(
                "{} of {}",
                func.name(),
                other.data_type()
            )))
        }
    })
}

#[cfg(test)]
mod tests;
