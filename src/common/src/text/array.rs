//! The text form of one-dimensional arrays: PostgreSQL's `array_out` and
//! `array_in` (`{1,2,NULL}`, `{"a b","x,y",abc,""}`).
//!
//! Not supported on input: multidimensional arrays (`{{1},{2}}`, feature_not_supported)
//! and explicit bounds (`[0:1]={1,2}`, invalid_text_representation as a malformed literal).

use crate::ErrorKind;
use std::sync::Arc;

use super::{format_datum_in, parse_datum_in, ParseError};
use crate::types::{ArrayValue, Datum, ElemType, ScalarValue};
use crate::Zone;

/// PostgreSQL's `array_isspace`.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

/// `{a,b,NULL}`: elements in their own text form, double-quoted when they
/// are empty, spell `NULL`, or hold a space, a quote, a backslash, a brace
/// or the delimiter; inside quotes `"` and `\` are escaped with `\`.
pub fn format_array(a: &ArrayValue) -> String {
    format_array_in(a, &Zone::UTC)
}

/// [`format_array`] with `timestamptz` elements shown in `zone`.
pub fn format_array_in(a: &ArrayValue, zone: &Zone) -> String {
    let mut out = String::from("{");
    for (i, item) in a.items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(v) => {
                let text = format_datum_in(v, zone);
                let quote = text.is_empty()
                    || text.eq_ignore_ascii_case("null")
                    || text
                        .chars()
                        .any(|c| matches!(c, '"' | '\\' | '{' | '}' | ',') || is_space(c));
                if quote {
                    out.push('"');
                    for c in text.chars() {
                        if c == '"' || c == '\\' {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out.push('"');
                } else {
                    out.push_str(&text);
                }
            }
        }
    }
    out.push('}');
    out
}

fn malformed(s: &str, detail: &str) -> ParseError {
    ParseError::new(
        ErrorKind::InvalidTextRepresentation,
        format!("malformed array literal: \"{s}\" ({detail})"),
    )
}

/// Parse `{…}` into an array of `elem`, each element through the element
/// type's own input function.
pub fn parse_array(elem: ElemType, s: &str) -> Result<ScalarValue, ParseError> {
    parse_array_in(elem, s, &Zone::UTC)
}

/// [`parse_array`] with `timestamptz` elements read in `zone`.
pub fn parse_array_in(elem: ElemType, s: &str, zone: &Zone) -> Result<ScalarValue, ParseError> {
    let body = s.trim_start_matches(is_space);
    let Some(body) = body.strip_prefix('{') else {
        return Err(malformed(
            s,
            if body.starts_with('[') {
                "explicit array bounds are not supported"
            } else {
                "array value must start with \"{\" or dimension information"
            },
        ));
    };
    let mut items: Vec<Datum> = Vec::new();
    let mut chars = body.chars().peekable();
    // Skip leading space; `{}` (with spaces) is the empty array.
    while chars.peek().copied().is_some_and(is_space) {
        chars.next();
    }
    let mut closed = false;
    if chars.peek() == Some(&'}') {
        chars.next();
        closed = true;
    }
    while !closed {
        while chars.peek().copied().is_some_and(is_space) {
            chars.next();
        }
        let mut text = String::new();
        let mut quoted = false;
        // Length of `text` up to its last character that was quoted or
        // escaped: trailing space after it is kept, unquoted space trimmed.
        let mut kept = 0;
        match chars.peek() {
            Some('{') => {
                return Err(ParseError::new(
                    ErrorKind::FeatureNotSupported,
                    "multidimensional arrays are not supported",
                ))
            }
            Some(',') | Some('}') | None => return Err(malformed(s, "unexpected delimiter")),
            _ => {}
        }
        loop {
            let Some(c) = chars.next() else {
                return Err(malformed(s, "unexpected end of input"));
            };
            match c {
                '"' => {
                    if quoted {
                        return Err(malformed(s, "unexpected \"\"\" character"));
                    }
                    quoted = true;
                    loop {
                        match chars.next() {
                            None => return Err(malformed(s, "unexpected end of input")),
                            Some('"') => break,
                            Some('\\') => match chars.next() {
                                Some(e) => text.push(e),
                                None => return Err(malformed(s, "unexpected end of input")),
                            },
                            Some(c) => text.push(c),
                        }
                    }
                    kept = text.len();
                }
                '\\' => match chars.next() {
                    Some(e) => {
                        text.push(e);
                        kept = text.len();
                    }
                    None => return Err(malformed(s, "unexpected end of input")),
                },
                ',' | '}' => {
                    let trimmed_len = kept.max(text.trim_end_matches(is_space).len());
                    text.truncate(trimmed_len);
                    let is_null = !quoted && kept == 0 && text.eq_ignore_ascii_case("null");
                    items.push(if is_null {
                        None
                    } else {
                        Some(parse_datum_in(elem.data_type(), &text, zone)?)
                    });
                    if c == '}' {
                        closed = true;
                    }
                    break;
                }
                '{' => return Err(malformed(s, "unexpected \"{\" character")),
                c => {
                    if quoted && !is_space(c) {
                        return Err(malformed(s, "incorrectly quoted array element"));
                    }
                    if !(quoted && is_space(c)) {
                        text.push(c);
                    }
                }
            }
        }
    }
    if chars.any(|c| !is_space(c)) {
        return Err(malformed(s, "junk after closing right brace"));
    }
    Ok(ScalarValue::Array(Arc::new(ArrayValue::new(elem, items))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(elem: ElemType, s: &str) -> String {
        match parse_array(elem, s) {
            Ok(ScalarValue::Array(a)) => format_array(&a),
            Ok(other) => format!("not an array: {other:?}"),
            Err(e) => format!("{}: {}", e.kind, e.message),
        }
    }

    #[test]
    fn text_round_trips_as_postgres() {
        assert_eq!(round(ElemType::Int32, "{1,2,NULL}"), "{1,2,NULL}");
        assert_eq!(round(ElemType::Int32, " { 1 , 2 } "), "{1,2}");
        assert_eq!(round(ElemType::Int32, "{}"), "{}");
        assert_eq!(
            round(
                ElemType::Varchar,
                r#"{"a b","x,y",abc,"",  c d  ,"NULL",null}"#
            ),
            r#"{"a b","x,y",abc,"","c d","NULL",NULL}"#
        );
        assert_eq!(
            round(ElemType::Varchar, r#"{"q\"uo\\te",a\,b}"#),
            r#"{"q\"uo\\te","a,b"}"#
        );
        assert_eq!(round(ElemType::Boolean, "{true,f}"), "{t,f}");
        assert!(round(ElemType::Int32, "{1,x}")
            .starts_with(ErrorKind::InvalidTextRepresentation.name()));
        assert!(
            round(ElemType::Int32, "{1,}").starts_with(ErrorKind::InvalidTextRepresentation.name())
        );
        assert!(
            round(ElemType::Int32, "1,2").starts_with(ErrorKind::InvalidTextRepresentation.name())
        );
        assert!(round(ElemType::Int32, "{1} x")
            .starts_with(ErrorKind::InvalidTextRepresentation.name()));
        assert!(
            round(ElemType::Int32, "{{1},{2}}").starts_with(ErrorKind::FeatureNotSupported.name())
        );
        assert!(
            round(ElemType::Int32, "{1").starts_with(ErrorKind::InvalidTextRepresentation.name())
        );
    }
}
