//! Type resolution: building function calls and casts with PostgreSQL's
//! implicit-cast rules.
//!
//! Literals of type varchar and NULL literals of any type stand for
//! PostgreSQL's `unknown` literals here: in an operator or a comparison they
//! take the type of the other operand (`date_col > '2024-01-01'`,
//! `int_col = NULL`), and they can be cast to any type (parsed at bind time).

use super::cast::{cast_value, cast_value_in};
use super::func::Func;
use super::{Expr, ExprError, ExprResult};
use ebbflow_common::DataType;
use ebbflow_common::ErrorKind;

/// Rank in PostgreSQL's implicit-cast chain of the numeric category
/// (smallint → integer → bigint → numeric → real → double precision).
fn numeric_rank(t: DataType) -> Option<u8> {
    Some(match t {
        DataType::Int16 => 0,
        DataType::Int32 => 1,
        DataType::Int64 => 2,
        DataType::Decimal => 3,
        DataType::Float32 => 4,
        DataType::Float64 => 5,
        _ => return None,
    })
}

/// The type PostgreSQL's operator resolution picks for a binary arithmetic
/// or comparison operator over two numeric types: the same type, the wider
/// integer (cross-width integer operators exist), numeric for integer and
/// numeric, and double precision as soon as a float meets another type
/// (`int + real` is double precision: float8 is the preferred type).
fn arith_type(a: DataType, b: DataType) -> Option<DataType> {
    let (ra, rb) = (numeric_rank(a)?, numeric_rank(b)?);
    Some(if a == b {
        a
    } else if ra >= 4 || rb >= 4 {
        DataType::Float64
    } else if ra >= rb {
        a
    } else {
        b
    })
}

/// PostgreSQL cast contexts, weakest first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum CastContext {
    Implicit,
    Assignment,
    Explicit,
}

/// The weakest context in which PostgreSQL allows the cast, if at all.
fn cast_context(from: DataType, to: DataType) -> Option<CastContext> {
    use DataType::*;
    if from == to {
        return Some(CastContext::Implicit);
    }
    if let (Some(rf), Some(rt)) = (numeric_rank(from), numeric_rank(to)) {
        return Some(if rf < rt {
            CastContext::Implicit
        } else {
            CastContext::Assignment
        });
    }
    match (from, to) {
        (Array(a), Array(b)) => cast_context(a.data_type(), b.data_type()),
        (_, Varchar) => Some(CastContext::Assignment),
        (Varchar, _) => Some(CastContext::Explicit),
        (Int32, Boolean) | (Boolean, Int32) => Some(CastContext::Explicit),
        (Jsonb, t) if numeric_rank(t).is_some() || t == Boolean => Some(CastContext::Explicit),
        (Date | Timestamp, Timestamp | Timestamptz) | (Time, Interval) => {
            Some(CastContext::Implicit)
        }
        (Timestamp | Timestamptz | Interval, Time) => Some(CastContext::Assignment),
        (Timestamp | Timestamptz, Date) | (Timestamptz, Timestamp) => Some(CastContext::Assignment),
        _ => None,
    }
}

/// Whether the expression plays PostgreSQL's `unknown` literal.
pub(super) fn is_unknown(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Literal { value: None, .. }
            | Expr::Literal {
                ty: DataType::Varchar,
                ..
            }
    )
}

pub(super) fn no_operator(func: Func, types: &[DataType]) -> ExprError {
    let msg = match (func.operator_symbol(), types) {
        (Some(op), [t]) => format!("operator does not exist: {} {}", op, t),
        (Some(op), [a, b]) => format!("operator does not exist: {} {} {}", a, op, b),
        _ => format!(
            "function {}({}) does not exist",
            func.name(),
            types
                .iter()
                .map(|t| t.pg_name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    ExprError::new(ErrorKind::UndefinedFunction, msg)
}

/// Cast to a type chosen by resolution (always an allowed implicit cast or
/// an unknown literal).
pub(super) fn coerce(e: Expr, ty: DataType) -> ExprResult<Expr> {
    build_cast(e, ty, true)
}

fn func_expr(func: Func, args: Vec<Expr>, ty: DataType) -> Expr {
    Expr::Func { func, args, ty }
}

/// Give unknown literals the type of the known arguments: the common type
/// of the known ones, or varchar when all are unknown.
fn resolve_unknowns(args: Vec<Expr>) -> ExprResult<Vec<Expr>> {
    let mut known: Option<DataType> = None;
    for a in args.iter().filter(|a| !is_unknown(a)) {
        let t = a.return_type();
        known = Some(match known {
            None => t,
            Some(k) => common_type(k, t).unwrap_or(k),
        });
    }
    let target = known.unwrap_or(DataType::Varchar);
    args.into_iter()
        .map(|a| {
            if is_unknown(&a) && a.return_type() != target {
                coerce(a, target)
            } else {
                Ok(a)
            }
        })
        .collect()
}

/// Build a call of `func` over `args`, inserting implicit casts and
/// resolving the return type the way PostgreSQL does (e.g. `int + bigint`
/// is bigint, `int / int` is integer division, `int + numeric` is numeric,
/// `varchar || int` is varchar). Unknown combinations fail with undefined_function
/// ("operator does not exist: integer + boolean").
pub fn build_func(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let err = || no_operator(func, &types);
    let arity = |ok: bool| if ok { Ok(()) } else { Err(err()) };
    if func == Func::Concat && types.iter().any(|t| t.is_array()) {
        let f = match (
            types.as_slice(),
            types.first().is_some_and(|t| t.is_array()),
        ) {
            ([a, b], _) if a.is_array() && b.is_array() => Func::ArrayCat,
            (_, true) => Func::ArrayAppend,
            _ => Func::ArrayPrepend,
        };
        return super::array::build(f, args).map_err(|e| {
            if e.kind() == ErrorKind::UndefinedFunction {
                err()
            } else {
                e
            }
        });
    }
    if super::bytea::owns(func, &types) {
        return super::bytea::build(func, args);
    }
    if super::math::owns(func) {
        return super::math::build(func, args);
    }
    if super::text_funcs::owns(func) {
        return super::text_funcs::build(func, args);
    }
    if super::calendar::owns(func) {
        return super::calendar::build(func, args);
    }
    if super::zoned::owns(func, &types) {
        return super::zoned::build(func, args);
    }
    if super::jsonb::owns(func) {
        return super::jsonb::build(func, args);
    }
    if super::split::owns(func) {
        return super::split::build(func, args);
    }
    if func == Func::ToTimestamp {
        return match types.as_slice() {
            [t] if numeric_rank(*t).is_some() || is_unknown(&args[0]) => {
                let a = coerce(args.into_iter().next().ok_or_else(err)?, Float64)?;
                Ok(func_expr(func, vec![a], Timestamptz))
            }
            [_, _] => Err(ExprError::new(
                ErrorKind::FeatureNotSupported,
                "to_timestamp(text, format) is not supported yet",
            )),
            _ => Err(err()),
        };
    }
    if func == Func::GenRandomUuid {
        return if args.is_empty() {
            Ok(func_expr(func, args, Uuid))
        } else {
            Err(err())
        };
    }
    if super::jsonb::takes_operator(func, &types) {
        return super::jsonb::build_operator(func, args);
    }
    match func {
        Func::ArrayConstruct
        | Func::ArraySubscript
        | Func::ArraySlice
        | Func::ArrayLength
        | Func::Cardinality
        | Func::ArrayToString
        | Func::ArrayCat
        | Func::ArrayAppend
        | Func::ArrayPrepend
        | Func::ArrayPosition
        | Func::EqAny
        | Func::RegexpMatch
        | Func::RegexpReplace => super::array::build(func, args),
        Func::Add | Func::Sub | Func::Mul | Func::Div | Func::Mod => {
            arity(args.len() == 2)?;
            build_arith(func, args)
        }
        Func::Neg => {
            arity(args.len() == 1)?;
            let args = if is_unknown(&args[0]) {
                vec![coerce(args.into_iter().next().ok_or_else(err)?, Float64)?]
            } else {
                args
            };
            let t = args[0].return_type();
            if numeric_rank(t).is_some() || t == Interval {
                Ok(func_expr(func, args, t))
            } else {
                Err(err())
            }
        }
        Func::Eq
        | Func::NotEq
        | Func::Lt
        | Func::LtEq
        | Func::Gt
        | Func::GtEq
        | Func::IsDistinctFrom
        | Func::IsNotDistinctFrom => {
            arity(args.len() == 2)?;
            let args = resolve_unknowns(args)?;
            let (a, b) = (args[0].return_type(), args[1].return_type());
            let t = comparison_type(a, b).ok_or_else(|| no_operator(func, &[a, b]))?;
            let args = args
                .into_iter()
                .map(|e| coerce(e, t))
                .collect::<ExprResult<_>>()?;
            Ok(func_expr(func, args, Boolean))
        }
        Func::And
        | Func::Or
        | Func::Not
        | Func::IsTrue
        | Func::IsNotTrue
        | Func::IsFalse
        | Func::IsNotFalse => {
            let n = if matches!(func, Func::And | Func::Or) {
                2
            } else {
                1
            };
            arity(args.len() == n)?;
            let args = args
                .into_iter()
                .map(|e| match e.return_type() {
                    Boolean => Ok(e),
                    _ if is_unknown(&e) => coerce(e, Boolean),
                    t => Err(ExprError::new(
                        ErrorKind::DatatypeMismatch,
                        format!(
                            "argument of {} must be type boolean, not type {}",
                            func_sql(func),
                            t
                        ),
                    )),
                })
                .collect::<ExprResult<_>>()?;
            Ok(func_expr(func, args, Boolean))
        }
        Func::IsNull | Func::IsNotNull => {
            arity(args.len() == 1)?;
            Ok(func_expr(func, args, Boolean))
        }
        Func::Coalesce | Func::Greatest | Func::Least => {
            arity(!args.is_empty())?;
            let args = resolve_unknowns(args)?;
            let mut t = args[0].return_type();
            for a in &args[1..] {
                t = common_type_for(func, t, a.return_type())?;
            }
            let args = args
                .into_iter()
                .map(|e| coerce(e, t))
                .collect::<ExprResult<_>>()?;
            Ok(func_expr(func, args, t))
        }
        Func::NullIf => {
            arity(args.len() == 2)?;
            let args = resolve_unknowns(args)?;
            let (a, b) = (args[0].return_type(), args[1].return_type());
            let t = comparison_type(a, b).ok_or_else(|| no_operator(Func::Eq, &[a, b]))?;
            // The result keeps the first argument's type; eval compares the
            // first value cast to the second argument's type.
            let mut it = args.into_iter();
            let first = it.next().ok_or_else(err)?;
            let second = coerce(it.next().ok_or_else(err)?, t)?;
            Ok(func_expr(func, vec![first, second], a))
        }
        Func::Concat => {
            arity(args.len() == 2)?;
            if !types.contains(&Varchar) && !args.iter().any(is_unknown) {
                return Err(err());
            }
            let args = args
                .into_iter()
                .map(|e| coerce(e, Varchar))
                .collect::<ExprResult<_>>()?;
            Ok(func_expr(func, args, Varchar))
        }
        Func::RegexMatch | Func::RegexNotMatch | Func::RegexIMatch | Func::RegexNotIMatch => {
            arity(types == [Varchar, Varchar])?;
            Ok(func_expr(func, args, Boolean))
        }
        Func::Lower | Func::Upper | Func::QuoteIdent => {
            arity(types == [Varchar])?;
            Ok(func_expr(func, args, Varchar))
        }
        Func::ConcatFn | Func::ConcatWs => {
            arity(!args.is_empty())?;
            let mut out = Vec::with_capacity(args.len());
            for (i, a) in args.into_iter().enumerate() {
                // The separator is text; the rest keep their types (their
                // text output is used, as PostgreSQL does: `t` for true).
                if (i == 0 && func == Func::ConcatWs) || is_unknown(&a) {
                    if a.return_type() != Varchar && !is_unknown(&a) {
                        return Err(err());
                    }
                    out.push(coerce(a, Varchar)?);
                } else {
                    out.push(a);
                }
            }
            Ok(func_expr(func, out, Varchar))
        }
        Func::DateTrunc | Func::Extract | Func::DatePart => {
            arity(args.len() == 2)?;
            let mut it = args.into_iter();
            let (unit, source) = (it.next().ok_or_else(err)?, it.next().ok_or_else(err)?);
            if unit.return_type() != Varchar && !is_unknown(&unit) {
                return Err(err());
            }
            let unit = coerce(unit, Varchar)?;
            let source = match (func, source.return_type()) {
                (_, _) if is_unknown(&source) => coerce(source, Timestamp)?,
                (_, Timestamp) | (Func::Extract, Date) | (_, Interval) => source,
                (Func::Extract | Func::DatePart, Time) => source,
                (_, Date) => build_cast(source, Timestamp, true)?,
                _ => return Err(err()),
            };
            // A constant unit is checked now rather than at the first row.
            if let Expr::Literal { value: Some(v), .. } = &unit {
                if let Some(name) = v.as_str() {
                    let ty = match source.return_type() {
                        Date => "date",
                        Interval => "interval",
                        Time => super::datetime::TIME,
                        _ => super::datetime::TIMESTAMP,
                    };
                    super::datetime::parse_unit(name, ty)?;
                }
            }
            let ret = match func {
                Func::DateTrunc if source.return_type() == Interval => Interval,
                Func::DateTrunc => Timestamp,
                Func::Extract => Decimal,
                _ => Float64,
            };
            Ok(func_expr(func, vec![unit, source], ret))
        }
        Func::JustifyHours | Func::JustifyDays | Func::JustifyInterval => {
            arity(args.len() == 1)?;
            let a = args.into_iter().next().ok_or_else(err)?;
            if a.return_type() != Interval && !is_unknown(&a) {
                return Err(err());
            }
            Ok(func_expr(func, vec![coerce(a, Interval)?], Interval))
        }
        Func::Age => {
            arity(args.len() == 2)?;
            let mut out = Vec::with_capacity(2);
            for a in args {
                out.push(match a.return_type() {
                    _ if is_unknown(&a) => coerce(a, Timestamp)?,
                    Timestamp => a,
                    Date => build_cast(a, Timestamp, true)?,
                    _ => return Err(err()),
                });
            }
            Ok(func_expr(func, out, Interval))
        }
        Func::ToChar => {
            // Only the timestamp form: numbers and intervals are refused
            // as functions that do not exist.
            // `NULL::timestamp` is typed; a bare NULL or string is not.
            let untyped = |e: &Expr| is_unknown(e) && e.return_type() == Varchar;
            let unknown_or = |e: &Expr| {
                if untyped(e) {
                    "unknown"
                } else {
                    e.return_type().pg_name()
                }
            };
            let names: Vec<&str> = args.iter().map(unknown_or).collect();
            let missing = || {
                ExprError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function to_char({}) does not exist", names.join(", ")),
                )
            };
            if args.len() != 2 || !(types[1] == Varchar || is_unknown(&args[1])) {
                return Err(missing());
            }
            let mut it = args.into_iter();
            let (source, template) = (it.next().ok_or_else(err)?, it.next().ok_or_else(err)?);
            let source = match source.return_type() {
                _ if untyped(&source) => {
                    return Err(ExprError::new(
                        ErrorKind::AmbiguousFunction,
                        format!("function to_char({}) is not unique", names.join(", ")),
                    ))
                }
                Timestamp => source,
                Date => build_cast(source, Timestamp, true)?,
                _ => return Err(missing()),
            };
            let template = coerce(template, Varchar)?;
            Ok(func_expr(func, vec![source, template], Varchar))
        }
        Func::TumbleStart => {
            arity((2..=3).contains(&args.len()))?;
            let mut out = Vec::with_capacity(args.len());
            for (i, a) in args.into_iter().enumerate() {
                out.push(match (i, a.return_type()) {
                    (0, Timestamp) => a,
                    (0, Date) => build_cast(a, Timestamp, true)?,
                    (0, _) if is_unknown(&a) => coerce(a, Timestamp)?,
                    (_, Interval) => a,
                    (_, _) if is_unknown(&a) => coerce(a, Interval)?,
                    _ => return Err(err()),
                });
            }
            Ok(func_expr(func, out, Timestamp))
        }
        Func::StringAggInput => {
            arity(types.len() >= 3)?;
            Ok(func_expr(func, args, Varchar))
        }
        Func::ArrayAggInput => {
            arity(types.len() >= 2)?;
            Ok(func_expr(func, args, Varchar))
        }
        Func::ScalarSubquery => {
            arity(types.len() == 2 && types[0] == Int64)?;
            let t = types[1];
            Ok(func_expr(func, args, t))
        }
        Func::Length => {
            arity(types == [Varchar])?;
            Ok(func_expr(func, args, Int32))
        }
        Func::Substr => {
            arity((2..=3).contains(&args.len()) && types[0] == Varchar)?;
            let mut out = Vec::with_capacity(args.len());
            for (i, a) in args.into_iter().enumerate() {
                if i == 0 {
                    out.push(a);
                } else if a.return_type().is_integer() || is_unknown(&a) {
                    out.push(build_cast(a, Int32, true)?);
                } else {
                    return Err(err());
                }
            }
            Ok(func_expr(func, out, Varchar))
        }
        Func::Trim | Func::LTrim | Func::RTrim => {
            arity((1..=2).contains(&args.len()) && types.iter().all(|t| *t == Varchar))?;
            Ok(func_expr(func, args, Varchar))
        }
        Func::Like | Func::NotLike | Func::ILike | Func::NotILike => {
            arity((2..=3).contains(&args.len()))?;
            let args = args
                .into_iter()
                .map(|e| match e.return_type() {
                    Varchar => Ok(e),
                    _ if is_unknown(&e) => coerce(e, Varchar),
                    _ => Err(err()),
                })
                .collect::<ExprResult<_>>()?;
            Ok(func_expr(func, args, Boolean))
        }
        Func::Replace => {
            arity(types.len() == 3 && types.iter().all(|t| *t == Varchar))?;
            Ok(func_expr(func, args, Varchar))
        }
        Func::SplitPart => {
            arity(types.len() == 3 && types[0] == Varchar && types[1] == Varchar)?;
            let mut args = args;
            let n = args.pop().ok_or_else(err)?;
            if !(n.return_type().is_integer() || is_unknown(&n)) {
                return Err(err());
            }
            args.push(build_cast(n, Int32, true)?);
            Ok(func_expr(func, args, Varchar))
        }
        Func::Position => {
            arity(types.len() == 2 && types.iter().all(|t| *t == Varchar))?;
            Ok(func_expr(func, args, Int32))
        }
        Func::Round | Func::Ceil | Func::Floor => {
            let two = func == Func::Round && args.len() == 2;
            arity(args.len() == 1 || two)?;
            let mut it = args.into_iter();
            let x = it.next().ok_or_else(err)?;
            let t = if is_unknown(&x) { Float64 } else { types[0] };
            if two {
                // round(numeric, int): integers widen to numeric; floats do not.
                if !(t.is_integer() || t == Decimal) {
                    return Err(err());
                }
                let d = it.next().ok_or_else(err)?;
                if !(d.return_type().is_integer() || is_unknown(&d)) {
                    return Err(err());
                }
                let args = vec![coerce(x, Decimal)?, build_cast(d, Int32, true)?];
                return Ok(func_expr(func, args, Decimal));
            }
            // One argument: numeric stays numeric, everything else numeric
            // goes to double precision (`round(5)` is double precision).
            let target = match t {
                Decimal => Decimal,
                _ if numeric_rank(t).is_some() => Float64,
                _ => return Err(err()),
            };
            Ok(func_expr(func, vec![coerce(x, target)?], target))
        }
        Func::Abs => {
            arity(args.len() == 1)?;
            let mut it = args.into_iter();
            let x = it.next().ok_or_else(err)?;
            let x = if is_unknown(&x) {
                coerce(x, Float64)?
            } else {
                x
            };
            let t = x.return_type();
            if numeric_rank(t).is_none() {
                return Err(err());
            }
            Ok(func_expr(func, vec![x], t))
        }
        // The functions of `math`, `text_funcs` and `calendar`, built above.
        _ => Err(err()),
    }
}

fn func_sql(func: Func) -> &'static str {
    match func {
        Func::And => "AND",
        Func::Or => "OR",
        Func::Not => "NOT",
        _ => "IS TRUE/FALSE",
    }
}

fn common_type_for(func: Func, a: DataType, b: DataType) -> ExprResult<DataType> {
    common_type(a, b).map_err(|_| {
        ExprError::new(
            ErrorKind::DatatypeMismatch,
            format!(
                "{} types {} and {} cannot be matched",
                func.name().to_uppercase(),
                a,
                b
            ),
        )
    })
}

/// Build `CAST(expr AS ty)`. With `explicit = false` only PostgreSQL's
/// implicit/assignment casts are allowed (used for INSERT and for unifying
/// types); an impossible cast fails with cannot_coerce. Casting a NULL literal or
/// a literal of another type folds into a literal.
///
/// A varchar literal casts to any type (it plays an `unknown` literal and
/// is parsed now, so `'abc'::int` fails at bind time with invalid_text_representation).
pub fn build_cast(expr: Expr, ty: DataType, explicit: bool) -> ExprResult<Expr> {
    let from = expr.return_type();
    if from == ty {
        return Ok(expr);
    }
    let allowed = is_unknown(&expr)
        || match cast_context(from, ty) {
            Some(CastContext::Explicit) => explicit,
            Some(_) => true,
            None => false,
        };
    if !allowed {
        return Err(ExprError::new(
            ErrorKind::CannotCoerce,
            format!("cannot cast type {} to {}", from, ty),
        ));
    }
    let zoned = super::zoned::cast_needs_zone(from, ty);
    if let Expr::Literal { value, .. } = expr {
        let value = match value {
            None => None,
            Some(v) if zoned => Some(cast_value_in(v, ty, &super::zoned::session_zone().0)?),
            Some(v) => Some(cast_value(v, ty)?),
        };
        return Ok(Expr::Literal { value, ty });
    }
    if zoned {
        return Ok(super::zoned::zoned_cast(expr, ty));
    }
    Ok(Expr::Cast {
        expr: Box::new(expr),
        ty,
    })
}

/// The type two values must be cast to for comparison, UNION, CASE or
/// COALESCE (PostgreSQL's `select_common_type`), or datatype_mismatch if none.
pub fn common_type(a: DataType, b: DataType) -> ExprResult<DataType> {
    use DataType::*;
    if a == b {
        return Ok(a);
    }
    if let (Some(ra), Some(rb)) = (numeric_rank(a), numeric_rank(b)) {
        return Ok(if ra >= rb { a } else { b });
    }
    match (a, b) {
        (Date, Timestamp) | (Timestamp, Date) => Ok(Timestamp),
        (Date | Timestamp, Timestamptz) | (Timestamptz, Date | Timestamp) => Ok(Timestamptz),
        (Array(x), Array(y)) => match common_type(x.data_type(), y.data_type()) {
            Ok(t) => Ok(t.array_of()),
            Err(_) => Err(ExprError::new(
                ErrorKind::DatatypeMismatch,
                format!("types {} and {} cannot be matched", a, b),
            )),
        },
        _ => Err(ExprError::new(
            ErrorKind::DatatypeMismatch,
            format!("types {} and {} cannot be matched", a, b),
        )),
    }
}

/// Return type of an aggregate over an argument type (`sum(int)` is bigint,
/// `sum(bigint)` numeric, `avg(int)` numeric, `avg(double)` double,
/// `count` bigint, min/max the argument type), or undefined_function if the aggregate
/// does not take that type.
pub fn agg_return_type(kind: super::AggKind, arg: Option<DataType>) -> ExprResult<DataType> {
    use super::AggKind;
    use DataType::*;
    let name = match kind {
        AggKind::CountStar | AggKind::Count => "count",
        AggKind::Sum => "sum",
        AggKind::Min => "min",
        AggKind::Max => "max",
        AggKind::Avg => "avg",
        AggKind::BoolAnd => "bool_and",
        AggKind::BoolOr => "bool_or",
        AggKind::BitAnd => "bit_and",
        AggKind::BitOr => "bit_or",
        AggKind::BitXor => "bit_xor",
        AggKind::StringAgg => "string_agg",
        AggKind::ArrayAgg => "array_agg",
    };
    let ret = match (kind, arg) {
        (AggKind::CountStar | AggKind::Count, _) => Some(Int64),
        (AggKind::StringAgg, Some(Varchar)) => Some(Varchar),
        // Over its value's type; the binder types the packed input's call.
        (AggKind::ArrayAgg, Some(t)) => (!t.is_array()).then(|| t.array_of()),
        (_, None) => None,
        (AggKind::Sum, Some(t)) => match t {
            Int16 | Int32 => Some(Int64),
            Int64 | Decimal => Some(Decimal),
            Float32 | Float64 | Interval => Some(t),
            _ => None,
        },
        (AggKind::Avg, Some(t)) => match t {
            Int16 | Int32 | Int64 | Decimal => Some(Decimal),
            Float32 | Float64 => Some(Float64),
            Interval => Some(Interval),
            _ => None,
        },
        // PostgreSQL has no min/max over boolean (bool_and/bool_or instead).
        (AggKind::Min | AggKind::Max, Some(t)) => (t != Boolean).then_some(t),
        (AggKind::BoolAnd | AggKind::BoolOr, Some(t)) => (t == Boolean).then_some(t),
        (AggKind::BitAnd | AggKind::BitOr | AggKind::BitXor, Some(t)) => {
            matches!(t, Int16 | Int32 | Int64).then_some(t)
        }
        (AggKind::StringAgg, Some(_)) => None,
    };
    ret.ok_or_else(|| {
        ExprError::new(
            ErrorKind::UndefinedFunction,
            format!(
                "function {}({}) does not exist",
                name,
                arg.map(|t| t.pg_name()).unwrap_or("")
            ),
        )
    })
}

mod arith;
mod signature;
use arith::{build_arith, comparison_type};
pub(super) use signature::fixed_signature;

#[cfg(test)]
mod tests;
