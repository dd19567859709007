//! Operator resolution for arithmetic and comparison operators: the type
//! both sides of a comparison take, and `+ - * / %` over numbers, dates,
//! times, timestamps and intervals (PostgreSQL's operator table).

use super::{arith_type, build_cast, coerce, func_expr, is_unknown, no_operator, numeric_rank};
use crate::func::Func;
use crate::{Expr, ExprError, ExprResult};
use ebbflow_common::{DataType, ErrorKind};

/// The type both sides of a comparison are cast to.
pub(super) fn comparison_type(a: DataType, b: DataType) -> Option<DataType> {
    use DataType::*;
    if a == b {
        return Some(a);
    }
    if let Some(t) = arith_type(a, b) {
        return Some(t);
    }
    match (a, b) {
        (Date, Timestamp) | (Timestamp, Date) => Some(Timestamp),
        (Date | Timestamp, Timestamptz) | (Timestamptz, Date | Timestamp) => Some(Timestamptz),
        _ => None,
    }
}

pub(super) fn build_arith(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let mut it = args.into_iter();
    let (Some(mut l), Some(mut r)) = (it.next(), it.next()) else {
        return Err(ExprError::new(
            ErrorKind::InternalError,
            "binary operator needs two arguments",
        ));
    };
    // Unknown operands: an interval next to a date/timestamp/interval,
    // otherwise the other operand's type.
    let temporal = |t: DataType| matches!(t, Date | Timestamp | Interval | Time);
    match (is_unknown(&l), is_unknown(&r)) {
        (true, true) => {
            l = coerce(l, Float64)?;
            r = coerce(r, Float64)?;
        }
        (false, true) => {
            let lt = l.return_type();
            let t = if temporal(lt) && matches!(func, Func::Add | Func::Sub) {
                if func == Func::Sub && lt != Interval {
                    lt
                } else {
                    Interval
                }
            } else if lt == Interval {
                Float64
            } else {
                lt
            };
            r = coerce(r, t)?;
        }
        (true, false) => {
            let rt = r.return_type();
            let t = if temporal(rt) && func == Func::Add {
                Interval
            } else if rt == Interval {
                Float64
            } else {
                rt
            };
            l = coerce(l, t)?;
        }
        (false, false) => {}
    }
    let (lt, rt) = (l.return_type(), r.return_type());
    let err = || no_operator(func, &[lt, rt]);
    if let Some(t) = arith_type(lt, rt) {
        if func == Func::Mod && matches!(t, Float32 | Float64) {
            return Err(err());
        }
        return Ok(func_expr(func, vec![coerce(l, t)?, coerce(r, t)?], t));
    }
    let num = |t: DataType| numeric_rank(t).is_some();
    let (l, r, ty) = match (func, lt, rt) {
        (Func::Add, Date, t) if t.is_integer() => (l, build_cast(r, Int32, false)?, Date),
        (Func::Add, t, Date) if t.is_integer() => (build_cast(l, Int32, false)?, r, Date),
        (Func::Sub, Date, t) if t.is_integer() => (l, build_cast(r, Int32, false)?, Date),
        (Func::Sub, Date, Date) => (l, r, Int32),
        (Func::Add, Date | Timestamp, Interval) | (Func::Sub, Date | Timestamp, Interval) => {
            (coerce(l, Timestamp)?, r, Timestamp)
        }
        (Func::Add, Interval, Date | Timestamp) => (l, coerce(r, Timestamp)?, Timestamp),
        (Func::Sub, Date | Timestamp, Date | Timestamp) => {
            (coerce(l, Timestamp)?, coerce(r, Timestamp)?, Interval)
        }
        (Func::Add | Func::Sub, Interval, Interval) => (l, r, Interval),
        (Func::Add | Func::Sub, Time, Interval) => (l, r, Time),
        (Func::Add, Interval, Time) => (r, l, Time),
        (Func::Sub, Time, Time) => (l, r, Interval),
        (Func::Add, Date, Time) => (l, r, Timestamp),
        (Func::Add, Time, Date) => (r, l, Timestamp),
        (Func::Add | Func::Sub, Timestamp, Time) => (l, coerce(r, Interval)?, Timestamp),
        (Func::Mul | Func::Div, Interval, t) if num(t) => (l, coerce(r, Float64)?, Interval),
        (Func::Mul, t, Interval) if num(t) => (coerce(l, Float64)?, r, Interval),
        _ => return Err(err()),
    };
    Ok(func_expr(func, vec![l, r], ty))
}
