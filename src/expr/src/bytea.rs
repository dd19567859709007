//! `bytea` functions as PostgreSQL 15 has them: `length`, `md5`,
//! `sha256`, `encode(bytes, 'hex' | 'base64' | 'escape')`,
//! `decode(text, …)` and `||`.

use base64::Engine;
use md5::Digest;

use ebbflow_common::text::parse_bytea;
use ebbflow_common::{DataType, Datum, ErrorKind, ScalarValue};

use super::build::{coerce, is_unknown, no_operator};
use super::func::Func;
use super::{Expr, ExprError, ExprResult};

/// Whether this module builds the call: the bytea forms of `length`,
/// `md5` and `||`, and `sha256`, `encode`, `decode`.
pub(super) fn owns(func: Func, types: &[DataType]) -> bool {
    matches!(func, Func::Sha256 | Func::Encode | Func::Decode)
        || (types.contains(&DataType::Bytea)
            && matches!(func, Func::Length | Func::Md5 | Func::Concat))
}

/// Type the call.
pub(super) fn build(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let err = || no_operator(func, &types);
    let (params, ret): (&[DataType], DataType) = match (func, types.len()) {
        (Func::Length, 1) => (&[Bytea], Int32),
        (Func::Md5, 1) => (&[Bytea], Varchar),
        (Func::Sha256, 1) => (&[Bytea], Bytea),
        (Func::Concat, 2) => (&[Bytea, Bytea], Bytea),
        (Func::Encode, 2) => (&[Bytea, Varchar], Varchar),
        (Func::Decode, 2) => (&[Varchar, Varchar], Bytea),
        _ => return Err(err()),
    };
    let args = args
        .into_iter()
        .zip(params)
        .map(|(a, want)| {
            if a.return_type() == *want {
                Ok(a)
            } else if is_unknown(&a) {
                coerce(a, *want)
            } else {
                Err(err())
            }
        })
        .collect::<ExprResult<Vec<_>>>()?;
    Ok(Expr::Func {
        func,
        args,
        ty: ret,
    })
}

fn invalid(message: String) -> ExprError {
    ExprError::new(ErrorKind::InvalidParameterValue, message)
}

/// PostgreSQL's `escape` encoding: a backslash doubled, a zero byte or a
/// byte with the high bit set as `\ooo`.
fn encode_escape(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            0 | 0x80..=0xff => out.push_str(&format!("\\{c:03o}")),
            c => out.push(c as char),
        }
    }
    out
}

/// PostgreSQL's base64: lines of 76 characters.
fn encode_base64(b: &[u8]) -> String {
    let flat = base64::engine::general_purpose::STANDARD.encode(b);
    let mut out = String::with_capacity(flat.len() + flat.len() / 76);
    for (i, chunk) in flat.as_bytes().chunks(76).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&String::from_utf8_lossy(chunk));
    }
    out
}

fn decode_base64(s: &str) -> ExprResult<Vec<u8>> {
    let clean: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if let Some(c) = clean
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=')))
    {
        return Err(invalid(format!(
            "invalid symbol \"{c}\" found while decoding base64 sequence"
        )));
    }
    base64::engine::general_purpose::STANDARD
        .decode(clean.as_bytes())
        .map_err(|_| invalid("invalid base64 end sequence".into()))
}

/// Evaluate a call [`build`] made, over non-NULL values; `None` when the
/// call is not one of them.
pub(super) fn apply_strict(func: Func, vals: &[ScalarValue]) -> Option<ExprResult<Datum>> {
    use ScalarValue as S;
    let r = match (func, vals) {
        (Func::Length, [S::Bytea(b)]) => Ok(S::Int32(b.len() as i32)),
        (Func::Md5, [S::Bytea(b)]) => Ok(S::varchar(format!("{:x}", md5::Md5::digest(b)))),
        (Func::Sha256, [S::Bytea(b)]) => Ok(S::Bytea(sha2::Sha256::digest(b).to_vec().into())),
        (Func::Concat, [S::Bytea(a), S::Bytea(b)]) => {
            Ok(S::Bytea([&a[..], &b[..]].concat().into()))
        }
        (Func::Encode, [S::Bytea(b), S::Varchar(f)]) => match f.to_ascii_lowercase().as_str() {
            "hex" => Ok(S::varchar(
                b.iter().map(|c| format!("{c:02x}")).collect::<String>(),
            )),
            "base64" => Ok(S::varchar(encode_base64(b))),
            "escape" => Ok(S::varchar(encode_escape(b))),
            _ => Err(invalid(format!("unrecognized encoding: \"{f}\""))),
        },
        (Func::Decode, [S::Varchar(s), S::Varchar(f)]) => match f.to_ascii_lowercase().as_str() {
            "hex" => parse_bytea(&format!("\\x{s}")).map_err(Into::into),
            "base64" => decode_base64(s),
            "escape" => parse_bytea(s).map_err(Into::into),
            _ => Err(invalid(format!("unrecognized encoding: \"{f}\""))),
        }
        .map(|b| S::Bytea(b.into())),
        _ => return None,
    };
    Some(r.map(Some))
}
