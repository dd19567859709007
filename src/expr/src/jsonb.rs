//! `jsonb` operators and functions, as PostgreSQL 15 has them: `-> ->>
//! #> #>> @> <@ ? ?| ?& || - #-`, `jsonb_typeof jsonb_array_length
//! jsonb_build_object jsonb_build_array to_jsonb jsonb_strip_nulls
//! jsonb_set jsonb_extract_path(_text) jsonb_pretty`, and the value of any
//! SQL value as jsonb.

use std::sync::Arc;

use ebbflow_common::jsonb::Jsonb;
use ebbflow_common::text::format_datum;
use ebbflow_common::{DataType, Datum, ElemType, ErrorKind, Numeric, ScalarValue};

use super::build::{coerce, is_unknown, no_operator};
use super::func::Func;
use super::{Expr, ExprError, ExprResult};

/// Whether `func` is one of this module's.
pub(super) fn owns(func: Func) -> bool {
    is_operator(func)
        || matches!(
            func,
            Func::JsonbTypeof
                | Func::JsonbArrayLength
                | Func::JsonbBuildObject
                | Func::JsonbBuildArray
                | Func::ToJsonb
                | Func::JsonbStripNulls
                | Func::JsonbSet
                | Func::JsonbExtractPath
                | Func::JsonbExtractPathText
                | Func::JsonbPretty
                | Func::JsonbObjectFromPairs
                | Func::JsonbElements
                | Func::JsonbElementsText
                | Func::JsonbKeys
                | Func::JsonbEachPairs
        )
}

/// Whether `func` is one of jsonb's operators (named by its symbol).
pub(super) fn is_operator(func: Func) -> bool {
    matches!(
        func,
        Func::JsonbGet
            | Func::JsonbGetText
            | Func::JsonbGetPath
            | Func::JsonbGetPathText
            | Func::JsonbContains
            | Func::JsonbContainedBy
            | Func::JsonbExists
            | Func::JsonbExistsAny
            | Func::JsonbExistsAll
            | Func::JsonbConcat
            | Func::JsonbDelete
            | Func::JsonbDeletePath
    )
}

/// Whether a `||` or `-` over these types is jsonb's.
pub(super) fn takes_operator(func: Func, types: &[DataType]) -> bool {
    match func {
        Func::Concat => types.contains(&DataType::Jsonb),
        Func::Sub => types.first() == Some(&DataType::Jsonb),
        _ => false,
    }
}

/// What an argument of unknown type (a quoted literal, NULL) is read as.
pub(super) fn unknown_arg_type(func: Func, pos: usize) -> DataType {
    use DataType::*;
    match (func, pos) {
        (_, 0) if func != Func::JsonbBuildObject && func != Func::JsonbBuildArray => Jsonb,
        (Func::JsonbGetPath | Func::JsonbGetPathText | Func::JsonbDeletePath, _) => {
            Array(ElemType::Varchar)
        }
        (Func::JsonbExistsAny | Func::JsonbExistsAll | Func::JsonbSet, 1) => {
            Array(ElemType::Varchar)
        }
        (Func::JsonbSet, 3) => Boolean,
        (Func::JsonbContains | Func::JsonbContainedBy | Func::JsonbSet, _) => Jsonb,
        _ => Varchar,
    }
}

fn call(func: Func, args: Vec<Expr>, ty: DataType) -> Expr {
    Expr::Func { func, args, ty }
}

/// Type the call.
pub(super) fn build(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let err = || no_operator(func, &types);
    let as_type = |e: Expr, t: DataType| -> ExprResult<Expr> {
        if e.return_type() == t {
            Ok(e)
        } else if is_unknown(&e) {
            coerce(e, t)
        } else {
            Err(err())
        }
    };
    let text_array = Array(ElemType::Varchar);
    let n = args.len();
    let mut it = args.into_iter();
    let mut next = || it.next().ok_or_else(err);
    match func {
        Func::JsonbBuildObject | Func::JsonbBuildArray => {
            let args: Vec<Expr> = std::iter::from_fn(|| next().ok())
                .map(|a| {
                    if is_unknown(&a) {
                        coerce(a, Varchar)
                    } else {
                        Ok(a)
                    }
                })
                .collect::<ExprResult<_>>()?;
            if func == Func::JsonbBuildObject && !args.len().is_multiple_of(2) {
                return Err(ExprError::new(
                    ErrorKind::InvalidParameterValue,
                    "argument list must have even number of elements",
                ));
            }
            Ok(call(func, args, Jsonb))
        }
        Func::JsonbObjectFromPairs if types == [Array(ElemType::Jsonb)] => {
            Ok(call(func, vec![next()?], Jsonb))
        }
        Func::ToJsonb if n == 1 => {
            let a = next()?;
            let a = if is_unknown(&a) {
                coerce(a, Varchar)?
            } else {
                a
            };
            Ok(call(func, vec![a], Jsonb))
        }
        Func::JsonbExtractPath | Func::JsonbExtractPathText if n >= 1 => {
            let mut out = vec![as_type(next()?, Jsonb)?];
            for _ in 1..n {
                out.push(as_type(next()?, Varchar)?);
            }
            let ty = if func == Func::JsonbExtractPath {
                Jsonb
            } else {
                Varchar
            };
            Ok(call(func, out, ty))
        }
        _ => {
            let first = as_type(next()?, Jsonb)?;
            let (params, ret): (Vec<DataType>, DataType) = match (func, &types[1..]) {
                (Func::JsonbGet | Func::JsonbGetText, [t]) => {
                    let key = if t.is_integer() { Int32 } else { Varchar };
                    let ret = if func == Func::JsonbGet {
                        Jsonb
                    } else {
                        Varchar
                    };
                    (vec![key], ret)
                }
                (Func::JsonbGetPath, [_]) => (vec![text_array], Jsonb),
                (Func::JsonbGetPathText, [_]) => (vec![text_array], Varchar),
                (Func::JsonbContains | Func::JsonbContainedBy, [_]) => (vec![Jsonb], Boolean),
                (Func::JsonbExists, [_]) => (vec![Varchar], Boolean),
                (Func::JsonbExistsAny | Func::JsonbExistsAll, [_]) => (vec![text_array], Boolean),
                (Func::JsonbConcat, [_]) => (vec![Jsonb], Jsonb),
                (Func::JsonbDelete, [t]) => {
                    let key = match t {
                        t if t.is_integer() => Int32,
                        Array(_) => text_array,
                        _ => Varchar,
                    };
                    (vec![key], Jsonb)
                }
                (Func::JsonbDeletePath, [_]) => (vec![text_array], Jsonb),
                (Func::JsonbTypeof, []) => (vec![], Varchar),
                (Func::JsonbElements | Func::JsonbEachPairs, []) => {
                    (vec![], Array(ElemType::Jsonb))
                }
                (Func::JsonbElementsText | Func::JsonbKeys, []) => (vec![], text_array),
                (Func::JsonbArrayLength, []) => (vec![], Int32),
                (Func::JsonbStripNulls | Func::JsonbPretty, []) => (vec![], Jsonb),
                (Func::JsonbSet, [_, _]) => (vec![text_array, Jsonb], Jsonb),
                (Func::JsonbSet, [_, _, _]) => (vec![text_array, Jsonb, Boolean], Jsonb),
                _ => return Err(err()),
            };
            let ret = if func == Func::JsonbPretty {
                Varchar
            } else {
                ret
            };
            let mut out = vec![first];
            for p in params {
                let a = next()?;
                let a = match (a.return_type(), p) {
                    (t, Int32) if t.is_integer() => coerce(a, Int32)?,
                    _ => as_type(a, p)?,
                };
                out.push(a);
            }
            Ok(call(func, out, ret))
        }
    }
}

/// Build `a || b` or `a - b` over jsonb.
pub(super) fn build_operator(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    let f = if func == Func::Concat {
        Func::JsonbConcat
    } else {
        Func::JsonbDelete
    };
    let args = if f == Func::JsonbConcat {
        args.into_iter()
            .map(|a| {
                if is_unknown(&a) {
                    coerce(a, DataType::Jsonb)
                } else {
                    Ok(a)
                }
            })
            .collect::<ExprResult<Vec<_>>>()?
    } else {
        args
    };
    build(f, args)
}

fn invalid(message: impl Into<String>) -> ExprError {
    ExprError::new(ErrorKind::InvalidParameterValue, message)
}

fn internal(func: Func) -> ExprError {
    ExprError::new(
        ErrorKind::InternalError,
        format!("{} of unexpected arguments", func.name()),
    )
}

/// The element `i` of an array, counting from the end when negative.
fn index(items: &[Jsonb], i: i64) -> Option<usize> {
    let n = items.len() as i64;
    let i = if i < 0 { n + i } else { i };
    (0..n).contains(&i).then_some(i as usize)
}

/// One step of a path: a key of an object, an index of an array.
fn step<'a>(j: &'a Jsonb, key: &str) -> Option<&'a Jsonb> {
    match j {
        Jsonb::Object(_) => j.get(key),
        Jsonb::Array(items) => index(items, key.trim().parse().ok()?).map(|i| &items[i]),
        _ => None,
    }
}

fn path<'a>(j: &'a Jsonb, keys: &[Datum]) -> Option<&'a Jsonb> {
    keys.iter().try_fold(j, |j, k| match k {
        Some(ScalarValue::Varchar(k)) => step(j, k),
        _ => None,
    })
}

/// `->>`: a string's text, a JSON null as SQL NULL, the rest as jsonb text.
fn as_text(j: Option<&Jsonb>) -> Datum {
    match j? {
        Jsonb::Null => None,
        Jsonb::String(s) => Some(ScalarValue::varchar(s.as_str())),
        other => Some(ScalarValue::varchar(other.to_text())),
    }
}

fn value(j: Jsonb) -> Datum {
    Some(ScalarValue::Jsonb(Arc::new(j)))
}

/// PostgreSQL's `@>`: every key of an object with a contained value,
/// every element of an array contained in some element; a top-level
/// array contains a scalar among its elements.
pub fn contains(a: &Jsonb, b: &Jsonb, top: bool) -> bool {
    match (a, b) {
        (Jsonb::Object(_), Jsonb::Object(y)) => y
            .iter()
            .all(|(k, vb)| a.get(k).is_some_and(|va| contains(va, vb, false))),
        (Jsonb::Array(x), Jsonb::Array(y)) => y
            .iter()
            .all(|vb| x.iter().any(|va| contains(va, vb, false))),
        (Jsonb::Array(x), scalar) if top && !matches!(scalar, Jsonb::Object(_)) => {
            x.iter().any(|va| va == scalar)
        }
        (Jsonb::Array(_) | Jsonb::Object(_), _) | (_, Jsonb::Array(_) | Jsonb::Object(_)) => false,
        _ => a == b,
    }
}

fn has_key(j: &Jsonb, key: &str) -> bool {
    match j {
        Jsonb::Object(_) => j.get(key).is_some(),
        Jsonb::Array(items) => items
            .iter()
            .any(|v| matches!(v, Jsonb::String(s) if s == key)),
        Jsonb::String(s) => s == key,
        _ => false,
    }
}

fn concat(a: &Jsonb, b: &Jsonb) -> Jsonb {
    match (a, b) {
        (Jsonb::Object(x), Jsonb::Object(y)) => Jsonb::object(x.iter().chain(y).cloned().collect()),
        _ => {
            let items = |j: &Jsonb| match j {
                Jsonb::Array(v) => v.clone(),
                other => vec![other.clone()],
            };
            let mut out = items(a);
            out.extend(items(b));
            Jsonb::Array(out)
        }
    }
}

fn delete_key(j: &Jsonb, key: &str) -> ExprResult<Jsonb> {
    Ok(match j {
        Jsonb::Object(pairs) => {
            Jsonb::Object(pairs.iter().filter(|(k, _)| k != key).cloned().collect())
        }
        Jsonb::Array(items) => Jsonb::Array(
            items
                .iter()
                .filter(|v| !matches!(v, Jsonb::String(s) if s == key))
                .cloned()
                .collect(),
        ),
        _ => return Err(invalid("cannot delete from scalar")),
    })
}

fn delete_index(j: &Jsonb, i: i64) -> ExprResult<Jsonb> {
    match j {
        Jsonb::Array(items) => {
            let mut items = items.clone();
            if let Some(i) = index(&items, i) {
                items.remove(i);
            }
            Ok(Jsonb::Array(items))
        }
        Jsonb::Object(_) => Err(invalid("cannot delete from object using integer index")),
        _ => Err(invalid("cannot delete from scalar")),
    }
}

/// `#-`: the value without the element at the end of the path.
fn delete_path(j: &Jsonb, keys: &[&str]) -> ExprResult<Jsonb> {
    let Some((first, rest)) = keys.split_first() else {
        return Ok(j.clone());
    };
    match j {
        Jsonb::Object(pairs) => Ok(Jsonb::Object(
            pairs
                .iter()
                .filter_map(|(k, v)| match (k == first, rest.is_empty()) {
                    (true, true) => None,
                    (true, false) => Some(delete_path(v, rest).map(|v| (k.clone(), v))),
                    _ => Some(Ok((k.clone(), v.clone()))),
                })
                .collect::<ExprResult<_>>()?,
        )),
        Jsonb::Array(items) => {
            let Ok(i) = first.trim().parse::<i64>() else {
                return Err(invalid(format!(
                    "path element at position {} is not an integer: \"{first}\"",
                    1
                )));
            };
            let mut items = items.clone();
            if let Some(i) = index(&items, i) {
                if rest.is_empty() {
                    items.remove(i);
                } else {
                    items[i] = delete_path(&items[i], rest)?;
                }
            }
            Ok(Jsonb::Array(items))
        }
        _ => Err(invalid("cannot delete path in scalar")),
    }
}

/// `jsonb_set(target, path, new, create_missing)`.
fn set(j: &Jsonb, keys: &[&str], new: &Jsonb, create: bool, pos: usize) -> ExprResult<Jsonb> {
    let Some((first, rest)) = keys.split_first() else {
        return Ok(new.clone());
    };
    match j {
        Jsonb::Object(pairs) => {
            let mut pairs = pairs.clone();
            match pairs.iter().position(|(k, _)| k == first) {
                Some(i) => pairs[i].1 = set(&pairs[i].1, rest, new, create, pos + 1)?,
                None if rest.is_empty() && create => pairs.push((first.to_string(), new.clone())),
                None => {}
            }
            Ok(Jsonb::object(pairs))
        }
        Jsonb::Array(items) => {
            let i: i64 = first.trim().parse().map_err(|_| {
                invalid(format!(
                    "path element at position {pos} is not an integer: \"{first}\""
                ))
            })?;
            let mut items = items.clone();
            match index(&items, i) {
                Some(i) => items[i] = set(&items[i], rest, new, create, pos + 1)?,
                None if rest.is_empty() && create => {
                    if i < 0 {
                        items.insert(0, new.clone());
                    } else {
                        items.push(new.clone());
                    }
                }
                None => {}
            }
            Ok(Jsonb::Array(items))
        }
        _ => Err(invalid("cannot set path in scalar")),
    }
}

fn strip_nulls(j: &Jsonb) -> Jsonb {
    match j {
        Jsonb::Object(pairs) => Jsonb::Object(
            pairs
                .iter()
                .filter(|(_, v)| *v != Jsonb::Null)
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Jsonb::Array(items) => Jsonb::Array(items.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// `to_jsonb(value)`: numbers and booleans as themselves, text as a
/// string, dates and timestamps in ISO 8601 (`2024-01-02T03:04:05`),
/// arrays element by element, other values as their text.
pub fn to_jsonb(v: &Datum) -> Jsonb {
    let Some(v) = v else { return Jsonb::Null };
    match v {
        ScalarValue::Jsonb(j) => (**j).clone(),
        ScalarValue::Boolean(b) => Jsonb::Bool(*b),
        ScalarValue::Int16(_) | ScalarValue::Int32(_) | ScalarValue::Int64(_) => {
            v.as_i64().map_or(Jsonb::Null, |i| {
                Jsonb::Number(rust_decimal::Decimal::from(i))
            })
        }
        ScalarValue::Decimal(Numeric::Finite(d)) => Jsonb::Number(*d),
        ScalarValue::Float32(f) | ScalarValue::Float64(f) if f.0.is_finite() => {
            match ebbflow_common::text::parse_decimal(&format_datum(v)) {
                Ok(d) => Jsonb::Number(d),
                Err(_) => Jsonb::String(format_datum(v)),
            }
        }
        ScalarValue::Timestamp(_) | ScalarValue::Timestamptz(_) => Jsonb::String(
            format_datum(v)
                .replacen(' ', "T", 1)
                .replace("+00", "+00:00"),
        ),
        ScalarValue::Array(a) => Jsonb::Array(a.items.iter().map(to_jsonb).collect()),
        other => Jsonb::String(format_datum(other)),
    }
}

fn texts(v: &ScalarValue) -> Vec<&str> {
    match v {
        ScalarValue::Array(a) => a
            .items
            .iter()
            .filter_map(|d| d.as_ref()?.as_str())
            .collect(),
        _ => Vec::new(),
    }
}

/// Evaluate a call of this module's functions over `vals` (NULLs and all:
/// the `jsonb_build_*` functions read NULLs); `None` when `func` is not one
/// of them.
pub(super) fn apply(func: Func, vals: &[Datum]) -> Option<ExprResult<Datum>> {
    if !owns(func) {
        return None;
    }
    Some(eval(func, vals))
}

/// Whether a NULL argument does not simply make the result NULL.
pub(super) fn reads_nulls(func: Func) -> bool {
    matches!(func, Func::JsonbBuildObject | Func::JsonbBuildArray)
}

fn eval(func: Func, vals: &[Datum]) -> ExprResult<Datum> {
    use ScalarValue as S;
    match func {
        Func::JsonbBuildArray => {
            return Ok(value(Jsonb::Array(vals.iter().map(to_jsonb).collect())))
        }
        Func::ToJsonb => return Ok(value(to_jsonb(vals.first().unwrap_or(&None)))),
        Func::JsonbObjectFromPairs => {
            let Some(Some(S::Array(pairs))) = vals.first() else {
                return Ok(None);
            };
            let mut out = Vec::with_capacity(pairs.items.len());
            for p in &pairs.items {
                match p.as_ref() {
                    Some(S::Jsonb(p)) => match &**p {
                        Jsonb::Array(kv) => match kv.as_slice() {
                            [Jsonb::String(k), v] => out.push((k.clone(), v.clone())),
                            _ => return Err(invalid("field name must not be null")),
                        },
                        _ => return Err(internal(func)),
                    },
                    _ => return Err(internal(func)),
                }
            }
            return Ok(value(Jsonb::object(out)));
        }
        Func::JsonbBuildObject => {
            let mut pairs = Vec::with_capacity(vals.len() / 2);
            for (i, kv) in vals.chunks(2).enumerate() {
                let key = match &kv[0] {
                    None => {
                        return Err(invalid(format!(
                            "argument {}: key must not be null",
                            2 * i + 1
                        )))
                    }
                    Some(S::Varchar(s)) => s.to_string(),
                    Some(other) => format_datum(other),
                };
                pairs.push((key, to_jsonb(kv.get(1).unwrap_or(&None))));
            }
            return Ok(value(Jsonb::object(pairs)));
        }
        _ => {}
    }
    if vals.iter().any(Option::is_none) {
        return Ok(None);
    }
    let v = |i: usize| {
        vals.get(i)
            .and_then(Option::as_ref)
            .ok_or_else(|| internal(func))
    };
    let Some(S::Jsonb(j)) = vals.first().and_then(Option::as_ref) else {
        return Err(internal(func));
    };
    let j: &Jsonb = j;
    let bool_ = |b: bool| Ok(Some(S::Boolean(b)));
    match (func, v(1).ok()) {
        (Func::JsonbGet | Func::JsonbGetText, Some(key)) => {
            let got = match key {
                S::Int32(i) => match j {
                    Jsonb::Array(items) => index(items, *i as i64).map(|i| &items[i]),
                    _ => None,
                },
                S::Varchar(k) => j.get(k),
                _ => return Err(internal(func)),
            };
            Ok(if func == Func::JsonbGet {
                got.cloned().and_then(value)
            } else {
                as_text(got)
            })
        }
        (Func::JsonbGetPath | Func::JsonbGetPathText, Some(S::Array(keys))) => {
            let got = path(j, &keys.items);
            Ok(if func == Func::JsonbGetPath {
                got.cloned().and_then(value)
            } else {
                as_text(got)
            })
        }
        (Func::JsonbExtractPath | Func::JsonbExtractPathText, _) => {
            let got = path(j, &vals[1..]);
            Ok(if func == Func::JsonbExtractPath {
                got.cloned().and_then(value)
            } else {
                as_text(got)
            })
        }
        (Func::JsonbContains, Some(S::Jsonb(b))) => bool_(contains(j, b, true)),
        (Func::JsonbContainedBy, Some(S::Jsonb(b))) => bool_(contains(b, j, true)),
        (Func::JsonbExists, Some(S::Varchar(k))) => bool_(has_key(j, k)),
        (Func::JsonbExistsAny, Some(keys)) => bool_(texts(keys).iter().any(|k| has_key(j, k))),
        (Func::JsonbExistsAll, Some(keys)) => bool_(texts(keys).iter().all(|k| has_key(j, k))),
        (Func::JsonbConcat, Some(S::Jsonb(b))) => Ok(value(concat(j, b))),
        (Func::JsonbDelete, Some(S::Varchar(k))) => delete_key(j, k).map(value),
        (Func::JsonbDelete, Some(S::Int32(i))) => delete_index(j, *i as i64).map(value),
        (Func::JsonbDelete, Some(keys @ S::Array(_))) => {
            let mut out = j.clone();
            for k in texts(keys) {
                out = delete_key(&out, k)?;
            }
            Ok(value(out))
        }
        (Func::JsonbDeletePath, Some(keys)) => delete_path(j, &texts(keys)).map(value),
        (Func::JsonbTypeof, _) => Ok(Some(S::varchar(j.type_name()))),
        (Func::JsonbElements | Func::JsonbElementsText, _) => {
            let items = match j {
                Jsonb::Array(items) => items,
                Jsonb::Object(_) => return Err(invalid("cannot extract elements from an object")),
                _ => return Err(invalid("cannot extract elements from a scalar")),
            };
            Ok(Some(if func == Func::JsonbElements {
                S::array(
                    ElemType::Jsonb,
                    items.iter().map(|v| value(v.clone())).collect(),
                )
            } else {
                S::array(
                    ElemType::Varchar,
                    items.iter().map(|v| as_text(Some(v))).collect(),
                )
            }))
        }
        (Func::JsonbKeys | Func::JsonbEachPairs, _) => {
            let Jsonb::Object(pairs) = j else {
                return Err(invalid(match (func, j) {
                    (Func::JsonbKeys, Jsonb::Array(_)) => {
                        "cannot call jsonb_object_keys on an array".to_string()
                    }
                    (Func::JsonbKeys, _) => "cannot call jsonb_object_keys on a scalar".into(),
                    _ => "cannot call jsonb_each on a non-object".into(),
                }));
            };
            Ok(Some(if func == Func::JsonbKeys {
                S::array(
                    ElemType::Varchar,
                    pairs
                        .iter()
                        .map(|(k, _)| Some(S::varchar(k.as_str())))
                        .collect(),
                )
            } else {
                S::array(
                    ElemType::Jsonb,
                    pairs
                        .iter()
                        .map(|(k, v)| {
                            value(Jsonb::Array(vec![Jsonb::String(k.clone()), v.clone()]))
                        })
                        .collect(),
                )
            }))
        }
        (Func::JsonbArrayLength, _) => match j {
            Jsonb::Array(items) => Ok(Some(S::Int32(items.len() as i32))),
            Jsonb::Object(_) => Err(invalid("cannot get array length of a non-array")),
            _ => Err(invalid("cannot get array length of a scalar")),
        },
        (Func::JsonbStripNulls, _) => Ok(value(strip_nulls(j))),
        (Func::JsonbPretty, _) => Ok(Some(S::varchar(j.to_pretty()))),
        (Func::JsonbSet, Some(keys)) => {
            let Some(S::Jsonb(new)) = vals.get(2).and_then(Option::as_ref) else {
                return Err(internal(func));
            };
            let create = !matches!(vals.get(3), Some(Some(S::Boolean(false))));
            set(j, &texts(keys), new, create, 1).map(value)
        }
        _ => Err(internal(func)),
    }
}

/// `jsonb::type` for numbers and booleans: PostgreSQL's casts from a
/// jsonb holding one.
pub fn cast_from(j: &Jsonb, to: DataType) -> ExprResult<ScalarValue> {
    let wrong = || {
        invalid(format!(
            "cannot cast jsonb {} to type {}",
            j.type_name(),
            to.pg_name()
        ))
    };
    match (j, to) {
        (Jsonb::Bool(b), DataType::Boolean) => Ok(ScalarValue::Boolean(*b)),
        (Jsonb::Number(d), t) if t.is_numeric() => {
            super::cast::cast_value(ScalarValue::decimal(*d), t)
        }
        _ => Err(wrong()),
    }
}
