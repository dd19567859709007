//! String functions and LIKE with PostgreSQL semantics (character, not
//! byte, positions; the database encoding is UTF-8).

use super::{ExprError, ExprResult};
use ebbflow_common::ErrorKind;

/// `substr(s, from [, count])`: 1-based; positions before the start still
/// count towards `count` (`substr('hello', 0, 3)` is `he`).
pub fn substr(s: &str, from: i32, count: Option<i32>) -> ExprResult<String> {
    let start = from as i64;
    let end = match count {
        Some(c) if c < 0 => {
            return Err(ExprError::new(
                ErrorKind::SubstringError,
                "negative substring length not allowed",
            ))
        }
        Some(c) => start + c as i64,
        None => i64::MAX,
    };
    let s1 = start.max(1);
    if end <= s1 {
        return Ok(String::new());
    }
    Ok(s.chars()
        .skip((s1 - 1) as usize)
        .take(usize::try_from(end - s1).unwrap_or(usize::MAX))
        .collect())
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TrimSide {
    Both,
    Leading,
    Trailing,
}

/// `btrim`/`ltrim`/`rtrim`: strip any of `chars` (default a space).
pub fn trim(s: &str, chars: Option<&str>, side: TrimSide) -> String {
    let set: Vec<char> = chars.unwrap_or(" ").chars().collect();
    let is_trimmed = |c: char| set.contains(&c);
    match side {
        TrimSide::Both => s.trim_matches(is_trimmed),
        TrimSide::Leading => s.trim_start_matches(is_trimmed),
        TrimSide::Trailing => s.trim_end_matches(is_trimmed),
    }
    .to_string()
}

/// `replace(s, from, to)`; an empty `from` leaves `s` unchanged.
pub fn replace(s: &str, from: &str, to: &str) -> String {
    if from.is_empty() {
        s.to_string()
    } else {
        s.replace(from, to)
    }
}

/// PostgreSQL's `split_part(s, delimiter, n)`: the `n`th field (from the
/// end when negative), `''` past the last; `n = 0` is invalid_parameter_value.
pub fn split_part(s: &str, delimiter: &str, n: i32) -> ExprResult<String> {
    if n == 0 {
        return Err(ExprError::new(
            ErrorKind::InvalidParameterValue,
            "field position must not be zero",
        ));
    }
    if s.is_empty() {
        return Ok(String::new());
    }
    if delimiter.is_empty() {
        // The whole string is the one field.
        return Ok(if n == 1 || n == -1 {
            s.to_string()
        } else {
            String::new()
        });
    }
    let fields: Vec<&str> = s.split(delimiter).collect();
    let index = if n > 0 {
        usize::try_from(n - 1).ok()
    } else {
        fields.len().checked_sub(n.unsigned_abs() as usize)
    };
    Ok(index
        .and_then(|i| fields.get(i))
        .map_or(String::new(), |f| f.to_string()))
}

/// `POSITION(sub IN s)`: 1-based character position, 0 when absent.
pub fn position(sub: &str, s: &str) -> i32 {
    match s.find(sub) {
        Some(byte) => s[..byte].chars().count() as i32 + 1,
        None => 0,
    }
}

#[derive(Debug, PartialEq)]
enum Tok {
    Lit(char),
    One,
    Any,
}

fn compile(pattern: &str, escape: Option<char>) -> ExprResult<Vec<Tok>> {
    let mut out = Vec::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        if Some(c) == escape {
            match it.next() {
                Some(n) => out.push(Tok::Lit(n)),
                None => {
                    return Err(ExprError::new(
                        ErrorKind::InvalidEscapeSequence,
                        "LIKE pattern must not end with escape character",
                    ))
                }
            }
        } else if c == '%' {
            if out.last() != Some(&Tok::Any) {
                out.push(Tok::Any);
            }
        } else if c == '_' {
            out.push(Tok::One);
        } else {
            out.push(Tok::Lit(c));
        }
    }
    Ok(out)
}

/// `s LIKE pattern [ESCAPE e]` (`\` by default; an empty escape disables
/// escaping). `case_insensitive` is ILIKE.
pub fn like(
    s: &str,
    pattern: &str,
    escape: Option<&str>,
    case_insensitive: bool,
) -> ExprResult<bool> {
    let escape = match escape {
        None => Some('\\'),
        Some(e) => {
            let mut cs = e.chars();
            match (cs.next(), cs.next()) {
                (None, _) => None,
                (Some(c), None) => Some(c),
                _ => {
                    return Err(ExprError::new(
                        ErrorKind::InvalidEscapeCharacter,
                        "invalid escape string",
                    ))
                }
            }
        }
    };
    let (s, pattern) = if case_insensitive {
        (s.to_lowercase(), pattern.to_lowercase())
    } else {
        (s.to_string(), pattern.to_string())
    };
    let toks = compile(&pattern, escape)?;
    let text: Vec<char> = s.chars().collect();
    // Greedy match with backtracking to the last `%`: linear in practice.
    let (mut ti, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < text.len() {
        match toks.get(pi) {
            Some(Tok::Any) => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(Tok::One) => {
                ti += 1;
                pi += 1;
            }
            Some(Tok::Lit(c)) if *c == text[ti] => {
                ti += 1;
                pi += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return Ok(false),
            },
        }
    }
    Ok(toks[pi..].iter().all(|t| *t == Tok::Any))
}

/// `quote_ident`: `s` as an SQL identifier, quoted only when needed.
pub fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        && !RESERVED.contains(&s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// PostgreSQL's reserved key words (those `quote_ident` must quote).
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "column",
    "constraint",
    "create",
    "current_catalog",
    "current_date",
    "current_role",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "from",
    "grant",
    "group",
    "having",
    "in",
    "initially",
    "intersect",
    "into",
    "lateral",
    "leading",
    "limit",
    "localtime",
    "localtimestamp",
    "not",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "placing",
    "primary",
    "references",
    "returning",
    "select",
    "session_user",
    "some",
    "symmetric",
    "table",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "when",
    "where",
    "window",
    "with",
];

#[cfg(test)]
mod split_part_tests {
    use super::split_part;
    use ebbflow_common::ErrorKind;

    /// Expected values from PostgreSQL 15.
    #[test]
    fn fields_from_either_end() {
        let f = |s, d, n| split_part(s, d, n).expect("split_part");
        assert_eq!(f("a/b/c", "/", 2), "b");
        assert_eq!(f("a/b/c", "/", 4), "");
        assert_eq!(f("a/b/c", "/", -1), "c");
        assert_eq!(f("a/b/c", "/", -4), "");
        assert_eq!(f("a//b", "/", 2), "");
        assert_eq!(f("abc", "", 1), "abc");
        assert_eq!(f("abc", "", -2), "");
        assert_eq!(f("", "/", 1), "");
        assert_eq!(f("é~~ü", "~~", -1), "ü");
        assert_eq!(
            split_part("a", "/", 0).map_err(|e| e.kind()),
            Err(ErrorKind::InvalidParameterValue)
        );
    }
}
