//! Array functions and operators: their type resolution and evaluation
//! (one-dimensional arrays with lower bound 1, see
//! [`ArrayValue`](ebbflow_common::ArrayValue)).

use ebbflow_common::ErrorKind;
use std::cmp::Ordering;
use std::sync::Arc;

use super::build::{build_cast, common_type};
use super::eval::compare;
use super::func::Func;
use super::{Expr, ExprError, ExprResult};
use ebbflow_common::text::format_datum;
use ebbflow_common::{ArrayValue, DataType, Datum, ElemType, ScalarValue};

fn internal(msg: impl Into<String>) -> ExprError {
    ExprError::new(ErrorKind::InternalError, msg)
}

fn no_function(func: Func, types: &[DataType]) -> ExprError {
    ExprError::new(
        ErrorKind::UndefinedFunction,
        format!(
            "function {}({}) does not exist",
            func.name(),
            types
                .iter()
                .map(|t| t.pg_name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

/// Whether `func` is one of this module's non-strict functions (a NULL
/// argument does not make the result NULL), evaluated by [`eval_lenient`].
pub(super) fn is_lenient(func: Func) -> bool {
    matches!(
        func,
        Func::ArrayConstruct
            | Func::ArrayCat
            | Func::ArrayAppend
            | Func::ArrayPrepend
            | Func::ArrayPosition
            | Func::EqAny
    )
}

/// A call of one of this module's functions, with the implicit casts of
/// its arguments and its result type.
pub(super) fn build(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let err = || no_function(func, &types);
    let int = |e: Expr| {
        if e.return_type().is_integer() {
            build_cast(e, Int32, true)
        } else {
            Err(ExprError::new(
                ErrorKind::DatatypeMismatch,
                "array subscript must have type integer",
            ))
        }
    };
    let elem_of = |t: DataType| t.elem().ok_or_else(err);
    let out = |args: Vec<Expr>, ty: DataType| Ok(Expr::Func { func, args, ty });
    match func {
        Func::ArrayConstruct => {
            let Some(&first) = types.first() else {
                return Err(ExprError::new(
                    ErrorKind::IndeterminateDatatype,
                    "cannot determine type of empty array",
                ));
            };
            if first.is_array() {
                return Err(ExprError::new(
                    ErrorKind::FeatureNotSupported,
                    "multidimensional arrays are not supported",
                ));
            }
            if types.iter().any(|t| *t != first) {
                return Err(internal("ARRAY[] elements of different types"));
            }
            out(args, first.array_of())
        }
        Func::ArraySubscript | Func::ArraySlice => {
            let mut it = args.into_iter();
            let a = it.next().ok_or_else(err)?;
            let elem = elem_of(a.return_type())?;
            let mut out_args = vec![a];
            for i in it {
                out_args.push(int(i)?);
            }
            let ty = if func == Func::ArraySubscript {
                elem
            } else {
                elem.array_of()
            };
            out(out_args, ty)
        }
        Func::ArrayLength => {
            let [a, d] = <[Expr; 2]>::try_from(args).map_err(|_| err())?;
            elem_of(a.return_type())?;
            if !d.return_type().is_integer() {
                return Err(err());
            }
            out(vec![a, build_cast(d, Int32, true)?], Int32)
        }
        Func::Cardinality => {
            if types.len() != 1 {
                return Err(err());
            }
            elem_of(types[0])?;
            out(args, Int32)
        }
        Func::ArrayToString => {
            if !(2..=3).contains(&types.len())
                || !types[0].is_array()
                || types[1..].iter().any(|t| *t != Varchar)
            {
                return Err(err());
            }
            out(args, Varchar)
        }
        Func::ArrayCat => {
            let [a, b] = <[Expr; 2]>::try_from(args).map_err(|_| err())?;
            let (ta, tb) = (a.return_type(), b.return_type());
            if !ta.is_array() || !tb.is_array() {
                return Err(err());
            }
            let t = common_type(ta, tb).map_err(|_| err())?;
            out(vec![build_cast(a, t, false)?, build_cast(b, t, false)?], t)
        }
        Func::ArrayAppend | Func::ArrayPosition => {
            let [a, x] = <[Expr; 2]>::try_from(args).map_err(|_| err())?;
            let elem = elem_of(a.return_type())?;
            let x = build_cast(x, elem, false).map_err(|_| err())?;
            let ty = if func == Func::ArrayAppend {
                elem.array_of()
            } else {
                Int32
            };
            out(vec![a, x], ty)
        }
        Func::ArrayPrepend => {
            let [x, a] = <[Expr; 2]>::try_from(args).map_err(|_| err())?;
            let elem = elem_of(a.return_type())?;
            let x = build_cast(x, elem, false).map_err(|_| err())?;
            out(vec![x, a], elem.array_of())
        }
        Func::EqAny => {
            let [x, a] = <[Expr; 2]>::try_from(args).map_err(|_| err())?;
            let (tx, ta) = (x.return_type(), a.return_type());
            let no_op = || {
                ExprError::new(
                    ErrorKind::UndefinedFunction,
                    format!("operator does not exist: {tx} = {ta}"),
                )
            };
            let elem = ta.elem().ok_or_else(|| {
                ExprError::new(
                    ErrorKind::WrongObjectType,
                    "op ANY/ALL (array) requires array on right side",
                )
            })?;
            let t = common_type(tx, elem).map_err(|_| no_op())?;
            let x = build_cast(x, t, false).map_err(|_| no_op())?;
            let a = build_cast(a, t.array_of(), false).map_err(|_| no_op())?;
            out(vec![x, a], Boolean)
        }
        Func::RegexpMatch | Func::RegexpReplace => {
            let n = if func == Func::RegexpMatch { 2 } else { 3 };
            if !(n..=n + 1).contains(&types.len()) || types.iter().any(|t| *t != Varchar) {
                return Err(err());
            }
            let ty = if func == Func::RegexpMatch {
                Varchar.array_of()
            } else {
                Varchar
            };
            out(args, ty)
        }
        _ => Err(internal("not an array function")),
    }
}

fn array_arg(v: &ScalarValue) -> ExprResult<&ArrayValue> {
    v.as_array()
        .ok_or_else(|| internal(format!("expected an array, got {}", v.data_type())))
}

fn elem_type(ty: DataType) -> ExprResult<ElemType> {
    match ty {
        DataType::Array(e) => Ok(e),
        other => Err(internal(format!("array function returning {other}"))),
    }
}

fn array(elem: ElemType, items: Vec<Datum>) -> Datum {
    Some(ScalarValue::Array(Arc::new(ArrayValue::new(elem, items))))
}

/// A non-strict array function over its evaluated arguments.
pub(super) fn eval_lenient(func: Func, ty: DataType, vals: Vec<Datum>) -> ExprResult<Datum> {
    let mut vals = vals.into_iter();
    let mut next = || {
        vals.next()
            .ok_or_else(|| internal(format!("{}: missing argument", func.name())))
    };
    match func {
        Func::ArrayConstruct => {
            let mut items = Vec::new();
            while let Ok(v) = next() {
                items.push(v);
            }
            Ok(array(elem_type(ty)?, items))
        }
        Func::ArrayCat => match (next()?, next()?) {
            (None, b) => Ok(b),
            (a, None) => Ok(a),
            (Some(a), Some(b)) => {
                let (a, b) = (array_arg(&a)?, array_arg(&b)?);
                let items = a.items.iter().chain(&b.items).cloned().collect();
                Ok(array(elem_type(ty)?, items))
            }
        },
        Func::ArrayAppend | Func::ArrayPrepend => {
            let (a, x) = if func == Func::ArrayAppend {
                let a = next()?;
                (a, next()?)
            } else {
                let x = next()?;
                (next()?, x)
            };
            let mut items = match &a {
                Some(a) => array_arg(a)?.items.clone(),
                None => Vec::new(),
            };
            if func == Func::ArrayAppend {
                items.push(x);
            } else {
                items.insert(0, x);
            }
            Ok(array(elem_type(ty)?, items))
        }
        Func::ArrayPosition => {
            let (a, x) = (next()?, next()?);
            let Some(a) = a else { return Ok(None) };
            for (i, item) in (1_i32..).zip(&array_arg(&a)?.items) {
                let same = match (item, &x) {
                    (None, None) => true,
                    (Some(v), Some(x)) => compare(v, x)? == Ordering::Equal,
                    _ => false,
                };
                if same {
                    return Ok(Some(ScalarValue::Int32(i)));
                }
            }
            Ok(None)
        }
        Func::EqAny => {
            let (x, a) = (next()?, next()?);
            let Some(a) = a else { return Ok(None) };
            let a = array_arg(&a)?;
            if a.items.is_empty() {
                return Ok(Some(ScalarValue::Boolean(false)));
            }
            let Some(x) = x else { return Ok(None) };
            let mut saw_null = false;
            for item in &a.items {
                match item {
                    None => saw_null = true,
                    Some(v) if compare(v, &x)? == Ordering::Equal => {
                        return Ok(Some(ScalarValue::Boolean(true)))
                    }
                    Some(_) => {}
                }
            }
            Ok((!saw_null).then_some(ScalarValue::Boolean(false)))
        }
        other => Err(internal(format!(
            "{} is not a lenient function",
            other.name()
        ))),
    }
}

/// A strict array or regexp function over non-NULL arguments; `None` if
/// `func` is not one.
pub(super) fn apply_strict(func: Func, vals: &[ScalarValue]) -> Option<ExprResult<Datum>> {
    let v = |i: usize| {
        vals.get(i)
            .ok_or_else(|| internal(format!("{}: missing argument {}", func.name(), i + 1)))
    };
    let int = |i: usize| match v(i)? {
        ScalarValue::Int32(x) => Ok(*x),
        other => Err(internal(format!(
            "expected integer, got {}",
            other.data_type()
        ))),
    };
    let text = |i: usize| {
        v(i)?
            .as_str()
            .ok_or_else(|| internal(format!("{}: expected text", func.name())))
    };
    let len = |a: &ArrayValue| i32::try_from(a.items.len()).unwrap_or(i32::MAX);
    let result = (|| match func {
        Func::ArraySubscript => {
            let a = array_arg(v(0)?)?;
            let i = int(1)?;
            Ok(usize::try_from(i)
                .ok()
                .and_then(|i| i.checked_sub(1))
                .and_then(|i| a.items.get(i).cloned())
                .flatten())
        }
        Func::ArraySlice => {
            let a = array_arg(v(0)?)?;
            let lo = int(1)?.max(1);
            let hi = int(2)?.min(len(a));
            let items = if lo > hi {
                Vec::new()
            } else {
                a.items[(lo - 1) as usize..hi as usize].to_vec()
            };
            Ok(array(a.elem, items))
        }
        Func::ArrayLength => {
            let a = array_arg(v(0)?)?;
            Ok((int(1)? == 1 && !a.items.is_empty()).then(|| ScalarValue::Int32(len(a))))
        }
        Func::Cardinality => Ok(Some(ScalarValue::Int32(len(array_arg(v(0)?)?)))),
        Func::ArrayToString => {
            let a = array_arg(v(0)?)?;
            let sep = text(1)?;
            let null = vals.get(2).and_then(ScalarValue::as_str);
            let mut out = String::new();
            let mut first = true;
            for item in &a.items {
                let s = match item {
                    Some(v) => match v.as_str() {
                        Some(s) => s.to_string(),
                        None => format_datum(v),
                    },
                    None => match null {
                        Some(n) => n.to_string(),
                        None => continue,
                    },
                };
                if !first {
                    out.push_str(sep);
                }
                first = false;
                out.push_str(&s);
            }
            Ok(Some(ScalarValue::varchar(out)))
        }
        Func::RegexpMatch => {
            let flags = if vals.len() > 2 { text(2)? } else { "" };
            Ok(
                super::regexp::regexp_match(text(0)?, text(1)?, flags)?.map(|groups| {
                    ScalarValue::array(
                        ElemType::Varchar,
                        groups
                            .into_iter()
                            .map(|g| g.map(ScalarValue::varchar))
                            .collect(),
                    )
                }),
            )
        }
        Func::RegexpReplace => {
            let flags = if vals.len() > 3 { text(3)? } else { "" };
            Ok(Some(ScalarValue::varchar(super::regexp::regexp_replace(
                text(0)?,
                text(1)?,
                text(2)?,
                flags,
            )?)))
        }
        _ => Err(internal("not a strict array function")),
    })();
    match func {
        Func::ArraySubscript
        | Func::ArraySlice
        | Func::ArrayLength
        | Func::Cardinality
        | Func::ArrayToString
        | Func::RegexpMatch
        | Func::RegexpReplace => Some(result),
        _ => None,
    }
}
