//! More of PostgreSQL's string functions: `left right lpad rpad repeat
//! reverse initcap starts_with strpos translate chr ascii to_hex
//! quote_literal md5`, with PostgreSQL 15's results and errors (characters,
//! not bytes, count everywhere; a result PostgreSQL could not allocate is
//! `program_limit_exceeded`).

use super::cast::cast_value;
use super::func::Func;
use super::{Expr, ExprError, ExprResult};
use ebbflow_common::{DataType, Datum, ErrorKind, ScalarValue};

/// PostgreSQL's `MaxAllocSize`: no value is larger.
const MAX_ALLOC: u64 = 0x3fff_ffff;
/// The bytes of a varlena header.
const HEADER: u64 = 4;

/// Whether `func` is one of this module's.
pub(super) fn owns(func: Func) -> bool {
    matches!(
        func,
        Func::Left
            | Func::Right
            | Func::LPad
            | Func::RPad
            | Func::Repeat
            | Func::Reverse
            | Func::InitCap
            | Func::StartsWith
            | Func::StrPos
            | Func::Translate
            | Func::Chr
            | Func::Ascii
            | Func::ToHex
            | Func::QuoteLiteral
            | Func::Md5
    )
}

/// What an argument of unknown type (a quoted literal, NULL) is read as.
pub(super) fn unknown_arg_type(func: Func, pos: usize) -> DataType {
    match (func, pos) {
        (Func::Left | Func::Right | Func::LPad | Func::RPad | Func::Repeat, 1) | (Func::Chr, 0) => {
            DataType::Int32
        }
        (Func::ToHex, 0) => DataType::Int64,
        _ => DataType::Varchar,
    }
}

/// Type the call: each argument is text or an integer, by position.
pub(super) fn build(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let (params, ret): (&[DataType], DataType) = match func {
        Func::Left | Func::Right | Func::Repeat => (&[Varchar, Int32], Varchar),
        Func::LPad | Func::RPad if types.len() == 2 => (&[Varchar, Int32], Varchar),
        Func::LPad | Func::RPad => (&[Varchar, Int32, Varchar], Varchar),
        Func::Reverse | Func::InitCap | Func::Md5 => (&[Varchar], Varchar),
        Func::StartsWith => (&[Varchar, Varchar], Boolean),
        Func::StrPos => (&[Varchar, Varchar], Int32),
        Func::Translate => (&[Varchar, Varchar, Varchar], Varchar),
        Func::Chr => (&[Int32], Varchar),
        Func::Ascii => (&[Varchar], Int32),
        Func::ToHex if types.first() == Some(&Int64) => (&[Int64], Varchar),
        Func::ToHex => (&[Int32], Varchar),
        Func::QuoteLiteral => {
            // quote_literal(anyelement): the value's text form, quoted.
            let [arg] =
                <[Expr; 1]>::try_from(args).map_err(|_| super::build::no_operator(func, &types))?;
            let text = if arg.return_type() == Varchar {
                arg
            } else {
                super::build::build_cast(arg, Varchar, false)?
            };
            return Ok(Expr::Func {
                func,
                args: vec![text],
                ty: Varchar,
            });
        }
        _ => return Err(super::build::no_operator(func, &types)),
    };
    super::build::fixed_signature(func, args, params, ret)
}

fn too_large() -> ExprError {
    ExprError::new(
        ErrorKind::ProgramLimitExceeded,
        "requested length too large",
    )
}

/// `lpad`/`rpad`: to `len` characters, cut on the right if longer, else
/// filled with `fill` repeated (on the left for `lpad`).
fn pad(s: &str, len: i32, fill: &str, left: bool) -> ExprResult<String> {
    let Ok(len) = usize::try_from(len) else {
        return Ok(String::new());
    };
    if len as u64 * 4 + HEADER > MAX_ALLOC {
        return Err(too_large());
    }
    let have = s.chars().count();
    if have >= len || fill.is_empty() {
        return Ok(s.chars().take(len).collect());
    }
    let padding: String = fill.chars().cycle().take(len - have).collect();
    Ok(if left {
        padding + s
    } else {
        format!("{s}{padding}")
    })
}

/// `left(s, n)` / `right(s, n)`: the first / last `n` characters; a
/// negative `n` drops that many from the other end.
fn left_right(s: &str, n: i32, left: bool) -> String {
    let count = s.chars().count() as i64;
    let n = i64::from(n);
    let keep = if n >= 0 {
        n.min(count)
    } else {
        (count + n).max(0)
    };
    if left {
        s.chars().take(keep as usize).collect()
    } else {
        s.chars().skip((count - keep) as usize).collect()
    }
}

fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
    out
}

fn translate(s: &str, from: &str, to: &str) -> String {
    let from: Vec<char> = from.chars().collect();
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.iter().position(|f| *f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

fn chr(code: i32) -> ExprResult<String> {
    if code < 0 {
        return Err(ExprError::new(
            ErrorKind::InvalidParameterValue,
            "character number must be positive",
        ));
    }
    if code == 0 {
        return Err(ExprError::new(
            ErrorKind::ProgramLimitExceeded,
            "null character not permitted",
        ));
    }
    if code > 0x10FFFF {
        return Err(ExprError::new(
            ErrorKind::ProgramLimitExceeded,
            format!("requested character too large for encoding: {code}"),
        ));
    }
    char::from_u32(code as u32)
        .map(String::from)
        .ok_or_else(|| {
            ExprError::new(
                ErrorKind::ProgramLimitExceeded,
                format!("requested character not valid for encoding: {code}"),
            )
        })
}

/// `quote_literal`: in single quotes, quotes doubled; with backslashes
/// doubled too and an `E` prefix when the text has any.
fn quote_literal(s: &str) -> String {
    let escape = s.contains('\\');
    let mut out = String::with_capacity(s.len() + 3);
    if escape {
        out.push('E');
    }
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || (escape && c == '\\') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// Evaluate one of this module's functions over non-NULL arguments
/// (`None`: not one of them).
pub(super) fn apply_strict(func: Func, vals: &[ScalarValue]) -> Option<ExprResult<Datum>> {
    if !owns(func) {
        return None;
    }
    let r = (|| -> ExprResult<ScalarValue> {
        let arg = |i: usize| {
            vals.get(i).ok_or_else(|| {
                ExprError::new(
                    ErrorKind::InternalError,
                    format!("{}: missing argument {}", func.name(), i + 1),
                )
            })
        };
        let text = |i: usize| {
            arg(i)?.as_str().ok_or_else(|| {
                ExprError::new(
                    ErrorKind::InternalError,
                    format!("{}: argument {} is not text", func.name(), i + 1),
                )
            })
        };
        let int = |i: usize| match arg(i)? {
            ScalarValue::Int32(n) => Ok(*n),
            other => match cast_value(other.clone(), DataType::Int32)? {
                ScalarValue::Int32(n) => Ok(n),
                _ => Err(ExprError::new(
                    ErrorKind::InternalError,
                    format!("{}: argument {} is not an integer", func.name(), i + 1),
                )),
            },
        };
        let s = |v: String| Ok(ScalarValue::varchar(v));
        match func {
            Func::Left => s(left_right(text(0)?, int(1)?, true)),
            Func::Right => s(left_right(text(0)?, int(1)?, false)),
            Func::LPad | Func::RPad => {
                let fill = if vals.len() > 2 { text(2)? } else { " " };
                s(pad(text(0)?, int(1)?, fill, func == Func::LPad)?)
            }
            Func::Repeat => {
                let t = text(0)?;
                let n = u64::try_from(int(1)?).unwrap_or(0);
                if n * t.len() as u64 + HEADER > MAX_ALLOC {
                    return Err(too_large());
                }
                s(t.repeat(n as usize))
            }
            Func::Reverse => s(text(0)?.chars().rev().collect()),
            Func::InitCap => s(initcap(text(0)?)),
            Func::StartsWith => Ok(ScalarValue::Boolean(text(0)?.starts_with(text(1)?))),
            Func::StrPos => {
                let (hay, needle) = (text(0)?, text(1)?);
                let pos = hay
                    .find(needle)
                    .map(|b| hay[..b].chars().count() as i32 + 1)
                    .unwrap_or(0);
                Ok(ScalarValue::Int32(pos))
            }
            Func::Translate => s(translate(text(0)?, text(1)?, text(2)?)),
            Func::Chr => s(chr(int(0)?)?),
            Func::Ascii => Ok(ScalarValue::Int32(
                text(0)?.chars().next().map(|c| c as i32).unwrap_or(0),
            )),
            Func::ToHex => s(match arg(0)? {
                ScalarValue::Int64(n) => format!("{:x}", *n as u64),
                _ => format!("{:x}", int(0)? as u32),
            }),
            Func::QuoteLiteral => s(quote_literal(text(0)?)),
            _ => {
                use md5::Digest;
                let digest = md5::Md5::digest(text(0)?.as_bytes());
                s(digest.iter().map(|b| format!("{b:02x}")).collect())
            }
        }
    })();
    Some(r.map(Some))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values from PostgreSQL 15.
    #[test]
    fn as_postgres() {
        assert_eq!(left_right("abcde", 2, true), "ab");
        assert_eq!(left_right("abcde", -2, true), "abc");
        assert_eq!(left_right("abcde", 2, false), "de");
        assert_eq!(left_right("abcde", -2, false), "cde");
        assert_eq!(left_right("ab", 5, true), "ab");
        assert_eq!(pad("hi", 5, "xy", true).ok().as_deref(), Some("xyxhi"));
        assert_eq!(pad("hello", 3, " ", true).ok().as_deref(), Some("hel"));
        assert_eq!(pad("hi", 5, "", true).ok().as_deref(), Some("hi"));
        assert_eq!(pad("hi", 5, "xy", false).ok().as_deref(), Some("hixyx"));
        assert_eq!(pad("hi", -1, " ", false).ok().as_deref(), Some(""));
        assert_eq!(
            initcap("hello wORLD foo_bar 3rd"),
            "Hello World Foo_Bar 3rd"
        );
        assert_eq!(initcap("a-b c'd éa"), "A-B C'D Éa");
        assert_eq!(translate("12345", "143", "ax"), "a2x5");
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(quote_literal("a\\b"), "E'a\\\\b'");
        assert_eq!(chr(233).ok().as_deref(), Some("é"));
        assert!(chr(0).is_err() && chr(-1).is_err() && chr(0xD800).is_err());
    }
}
