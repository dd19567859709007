//! Splitting and counting in strings: `string_to_array(s, delimiter [,
//! null_string])`, `regexp_split_to_array(s, pattern [, flags])` and
//! `regexp_count(s, pattern [, start [, flags]])`, as PostgreSQL 15 has
//! them.

use ebbflow_common::{DataType, Datum, ElemType, ErrorKind, ScalarValue};

use super::build::{coerce, is_unknown, no_operator};
use super::func::Func;
use super::{Expr, ExprError, ExprResult};

/// Whether `func` is one of this module's.
pub(super) fn owns(func: Func) -> bool {
    matches!(
        func,
        Func::StringToArray | Func::RegexpSplitToArray | Func::RegexpCount
    )
}

/// What an argument of unknown type is read as.
pub(super) fn unknown_arg_type(func: Func, pos: usize) -> DataType {
    match (func, pos) {
        (Func::RegexpCount, 2) => DataType::Int32,
        _ => DataType::Varchar,
    }
}

/// Type the call.
pub(super) fn build(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let err = || no_operator(func, &types);
    let (params, ret): (&[DataType], DataType) = match (func, types.len()) {
        (Func::StringToArray, 2) => (&[Varchar, Varchar], Varchar.array_of()),
        (Func::StringToArray, 3) => (&[Varchar, Varchar, Varchar], Varchar.array_of()),
        (Func::RegexpSplitToArray, 2) => (&[Varchar, Varchar], Varchar.array_of()),
        (Func::RegexpSplitToArray, 3) => (&[Varchar, Varchar, Varchar], Varchar.array_of()),
        (Func::RegexpCount, 2) => (&[Varchar, Varchar], Int32),
        (Func::RegexpCount, 3) => (&[Varchar, Varchar, Int32], Int32),
        (Func::RegexpCount, 4) => (&[Varchar, Varchar, Int32, Varchar], Int32),
        _ => return Err(err()),
    };
    let args = args
        .into_iter()
        .zip(params)
        .map(|(a, want)| match a.return_type() {
            t if t == *want => Ok(a),
            Int16 if *want == Int32 => coerce(a, Int32),
            _ if is_unknown(&a) => coerce(a, *want),
            _ => Err(err()),
        })
        .collect::<ExprResult<Vec<_>>>()?;
    Ok(Expr::Func {
        func,
        args,
        ty: ret,
    })
}

/// Whether a NULL argument does not simply make the result NULL:
/// `string_to_array` splits into characters on a NULL delimiter.
pub(super) fn reads_nulls(func: Func) -> bool {
    func == Func::StringToArray
}

fn texts(items: Vec<Option<String>>) -> Datum {
    Some(ScalarValue::array(
        ElemType::Varchar,
        items
            .into_iter()
            .map(|s| s.map(ScalarValue::varchar))
            .collect(),
    ))
}

/// Evaluate over the argument values (NULLs included for
/// `string_to_array`, never for the others).
pub(super) fn apply(func: Func, vals: &[Datum]) -> Option<ExprResult<Datum>> {
    if !owns(func) {
        return None;
    }
    let text = |i: usize| {
        vals.get(i)
            .and_then(|v| v.as_ref())
            .and_then(|v| v.as_str())
    };
    if func == Func::StringToArray {
        let Some(s) = text(0) else {
            return Some(Ok(None));
        };
        let null_str = text(2);
        let item = |p: &str| (Some(p) != null_str).then(|| p.to_string());
        let items: Vec<Option<String>> = match text(1) {
            _ if s.is_empty() => Vec::new(),
            None => s.chars().map(|c| item(&c.to_string())).collect(),
            Some("") => vec![item(s)],
            Some(d) => s.split(d).map(item).collect(),
        };
        return Some(Ok(texts(items)));
    }
    if vals.iter().any(Option::is_none) {
        return Some(Ok(None));
    }
    let (Some(s), Some(pattern)) = (text(0), text(1)) else {
        return Some(Err(ExprError::new(
            ErrorKind::InternalError,
            format!("{} of unexpected arguments", func.name()),
        )));
    };
    Some(match func {
        Func::RegexpSplitToArray => super::regexp::regexp_split(s, pattern, text(2).unwrap_or(""))
            .map(|parts| texts(parts.into_iter().map(Some).collect())),
        _ => {
            let start = match vals.get(2) {
                Some(Some(ScalarValue::Int32(n))) => *n,
                _ => 1,
            };
            super::regexp::regexp_count(s, pattern, start, text(3).unwrap_or(""))
                .map(|n| Some(ScalarValue::Int32(n)))
        }
    })
}
