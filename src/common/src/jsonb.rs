//! `jsonb` values: PostgreSQL's model, text form and order.
//!
//! A value is a tree whose numbers are numerics (kept as written, `1.0`
//! stays `1.0`, and equal by value: `1.0 = 1`) and whose objects hold each
//! key once (the last one written wins), sorted as PostgreSQL stores them:
//! shorter keys first, then by bytes. The order is PostgreSQL's jsonb
//! btree order: `null < string < number < boolean < array < object`;
//! arrays by length and then element by element, objects by the number of
//! pairs and then pair by pair.
//!
//! The parser is our own rather than `serde_json`: it keeps each number's
//! digits exactly (serde_json does that only with a workspace-wide feature)
//! and rejects what PostgreSQL's json parser rejects (`\u0000`, lone
//! surrogates), with PostgreSQL's messages.

use std::cmp::Ordering;
use std::fmt::Write;

use rust_decimal::Decimal;

use crate::text::{format_decimal, parse_decimal, ParseError};
use crate::ErrorKind;

/// A `jsonb` value.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Jsonb {
    Null,
    String(String),
    Number(Decimal),
    Bool(bool),
    Array(Vec<Jsonb>),
    /// Pairs with unique keys, in [`key_order`].
    Object(Vec<(String, Jsonb)>),
}

/// PostgreSQL's order of object keys: by length, then by bytes.
pub fn key_order(a: &str, b: &str) -> Ordering {
    a.len()
        .cmp(&b.len())
        .then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

impl Jsonb {
    /// The rank of the value's kind in PostgreSQL's order.
    pub fn rank(&self) -> u8 {
        match self {
            Jsonb::Null => 0,
            Jsonb::String(_) => 1,
            Jsonb::Number(_) => 2,
            Jsonb::Bool(_) => 3,
            Jsonb::Array(_) => 4,
            Jsonb::Object(_) => 5,
        }
    }

    /// `jsonb_typeof`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::String(_) => "string",
            Jsonb::Number(_) => "number",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }

    /// An object from pairs in any order: keys sorted, the last of equal
    /// keys kept.
    pub fn object(mut pairs: Vec<(String, Jsonb)>) -> Jsonb {
        // A stable sort keeps equal keys in the order written.
        pairs.sort_by(|a, b| key_order(&a.0, &b.0));
        let mut out: Vec<(String, Jsonb)> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        Jsonb::Object(out)
    }

    /// The value of `key`, for an object.
    pub fn get(&self, key: &str) -> Option<&Jsonb> {
        match self {
            Jsonb::Object(pairs) => pairs
                .binary_search_by(|(k, _)| key_order(k, key))
                .ok()
                .map(|i| &pairs[i].1),
            _ => None,
        }
    }

    /// Whether every number is written in its normalized form (`1`, not
    /// `1.0`): the value is its equality class's key representative.
    pub fn is_normalized(&self) -> bool {
        match self {
            Jsonb::Number(d) => d.serialize() == d.normalize().serialize(),
            Jsonb::Array(items) => items.iter().all(Jsonb::is_normalized),
            Jsonb::Object(pairs) => pairs.iter().all(|(_, v)| v.is_normalized()),
            _ => true,
        }
    }

    /// For two equal values: whether they are also written alike (`1.0`
    /// and `1` are equal, not alike).
    pub fn written_alike(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (Jsonb::Number(a), Jsonb::Number(b)) => a.serialize() == b.serialize(),
            (Jsonb::Array(a), Jsonb::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.written_alike(y))
            }
            (Jsonb::Object(a), Jsonb::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((ka, va), (kb, vb))| ka == kb && va.written_alike(vb))
            }
            (a, b) => a == b,
        }
    }

    /// PostgreSQL's text form: `{"a": 1, "b": [true, null]}`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, None, 0);
        out
    }

    /// `jsonb_pretty`: four spaces per level, one element per line.
    pub fn to_pretty(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Some(4), 0);
        out
    }

    fn write(&self, out: &mut String, indent: Option<usize>, level: usize) {
        let newline = |out: &mut String, level: usize| {
            if let Some(n) = indent {
                out.push('\n');
                out.push_str(&" ".repeat(n * level));
            }
        };
        match self {
            Jsonb::Null => out.push_str("null"),
            Jsonb::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Jsonb::Number(d) => out.push_str(&format_decimal(d)),
            Jsonb::String(s) => write_string(out, s),
            Jsonb::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                        if indent.is_none() {
                            out.push(' ');
                        }
                    }
                    newline(out, level + 1);
                    v.write(out, indent, level + 1);
                }
                // PostgreSQL's pretty form breaks even an empty array.
                newline(out, level);
                out.push(']');
            }
            Jsonb::Object(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                        if indent.is_none() {
                            out.push(' ');
                        }
                    }
                    newline(out, level + 1);
                    write_string(out, k);
                    out.push_str(": ");
                    v.write(out, indent, level + 1);
                }
                newline(out, level);
                out.push('}');
            }
        }
    }

    /// PostgreSQL's `jsonb_in`.
    pub fn parse(s: &str) -> Result<Jsonb, ParseError> {
        let mut p = Parser { s, at: 0 };
        p.space();
        let v = p.value(0)?;
        p.space();
        if p.at < s.len() {
            return Err(p.token_error());
        }
        Ok(v)
    }
}

impl PartialOrd for Jsonb {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// PostgreSQL's order of two values. At the top level a scalar is a
/// one-element array to an array: it sorts after `[]` and before every
/// other array (nested, kinds compare by rank).
impl Ord for Jsonb {
    fn cmp(&self, other: &Self) -> Ordering {
        let scalar = |j: &Jsonb| !matches!(j, Jsonb::Array(_) | Jsonb::Object(_));
        match (self, other) {
            (a, Jsonb::Array(items)) if scalar(a) => 1.cmp(&items.len()).then(Ordering::Less),
            (Jsonb::Array(items), b) if scalar(b) => items.len().cmp(&1).then(Ordering::Greater),
            _ => self.cmp_nested(other),
        }
    }
}

impl Jsonb {
    fn cmp_nested(&self, other: &Self) -> Ordering {
        let all = |a: &[Jsonb], b: &[Jsonb]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.cmp_nested(y))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        };
        match (self, other) {
            (Jsonb::String(a), Jsonb::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Jsonb::Number(a), Jsonb::Number(b)) => a.cmp(b),
            (Jsonb::Bool(a), Jsonb::Bool(b)) => a.cmp(b),
            (Jsonb::Array(a), Jsonb::Array(b)) => a.len().cmp(&b.len()).then_with(|| all(a, b)),
            (Jsonb::Object(a), Jsonb::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                for ((ka, va), (kb, vb)) in a.iter().zip(b) {
                    let o = key_order(ka, kb).then_with(|| va.cmp_nested(vb));
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            }),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// A JSON string literal with PostgreSQL's escapes.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// How deep arrays and objects may nest (PostgreSQL's stack-depth limit
/// is of the same order).
const MAX_DEPTH: usize = 6400;

struct Parser<'a> {
    s: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn invalid(&self) -> ParseError {
        ParseError::new(
            ErrorKind::InvalidTextRepresentation,
            "invalid input syntax for type json",
        )
    }

    /// The error at the current token (PostgreSQL names it in a detail).
    fn token_error(&self) -> ParseError {
        self.invalid()
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), ParseError> {
        self.space();
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.token_error())
        }
    }

    fn value(&mut self, depth: usize) -> Result<Jsonb, ParseError> {
        if depth > MAX_DEPTH {
            return Err(ParseError::new(
                ErrorKind::ProgramLimitExceeded,
                "stack depth limit exceeded",
            ));
        }
        self.space();
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut pairs = Vec::new();
                self.space();
                if self.peek() == Some(b'}') {
                    self.at += 1;
                    return Ok(Jsonb::Object(pairs));
                }
                loop {
                    self.space();
                    if self.peek() != Some(b'"') {
                        return Err(self.token_error());
                    }
                    let k = self.string()?;
                    self.expect(b':')?;
                    let v = self.value(depth + 1)?;
                    pairs.push((k, v));
                    self.space();
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Jsonb::object(pairs));
                        }
                        _ => return Err(self.token_error()),
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                self.space();
                if self.peek() == Some(b']') {
                    self.at += 1;
                    return Ok(Jsonb::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.space();
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Jsonb::Array(items));
                        }
                        _ => return Err(self.token_error()),
                    }
                }
            }
            Some(b'"') => Ok(Jsonb::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't' | b'f' | b'n') => {
                let rest = &self.s[self.at..];
                let word_len = rest
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    .count();
                let v = match &rest[..word_len] {
                    "true" => Jsonb::Bool(true),
                    "false" => Jsonb::Bool(false),
                    "null" => Jsonb::Null,
                    _ => return Err(self.token_error()),
                };
                self.at += word_len;
                Ok(v)
            }
            _ => Err(self.token_error()),
        }
    }

    /// A JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn number(&mut self) -> Result<Jsonb, ParseError> {
        let b = self.s.as_bytes();
        let start = self.at;
        let mut i = start;
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i - from
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        let int = digits(&mut i);
        if int == 0 || (int > 1 && b[i - int] == b'0') {
            return Err(self.token_error());
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if digits(&mut i) == 0 {
                return Err(self.token_error());
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if digits(&mut i) == 0 {
                return Err(self.token_error());
            }
        }
        if b.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
            return Err(self.token_error());
        }
        self.at = i;
        let d = parse_decimal(&self.s[start..i]).map_err(|e| {
            ParseError::new(
                ErrorKind::NumericValueOutOfRange,
                format!("{} in jsonb", e.message),
            )
        })?;
        Ok(Jsonb::Number(d))
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let h = self
            .s
            .get(self.at..self.at + 4)
            .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
            .ok_or_else(|| self.invalid())?;
        self.at += 4;
        u32::from_str_radix(h, 16).map_err(|_| self.invalid())
    }

    /// A string literal, the opening quote at `self.at`.
    fn string(&mut self) -> Result<String, ParseError> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let rest = &self.s[self.at..];
            let Some(c) = rest.chars().next() else {
                return Err(self.invalid());
            };
            self.at += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let e = self.peek().ok_or_else(|| self.invalid())?;
                    self.at += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) {
                                if self.s.get(self.at..self.at + 2) != Some("\\u") {
                                    return Err(unicode_error());
                                }
                                self.at += 2;
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return Err(unicode_error());
                                }
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                            } else if (0xDC00..0xE000).contains(&cp) || cp == 0 {
                                return Err(unicode_error());
                            }
                            out.push(char::from_u32(cp).ok_or_else(unicode_error)?);
                        }
                        _ => return Err(self.invalid()),
                    }
                }
                c if (c as u32) < 0x20 => return Err(self.invalid()),
                c => out.push(c),
            }
        }
    }
}

fn unicode_error() -> ParseError {
    ParseError::new(
        ErrorKind::UntranslatableCharacter,
        "unsupported Unicode escape sequence",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Jsonb {
        Jsonb::parse(s).unwrap()
    }

    #[test]
    fn text_form_and_key_order_are_postgres() {
        assert_eq!(
            j(r#" {"bb": 1.0, "a": [true, null, "x\ny"], "bb": 2, "c": {}} "#).to_text(),
            r#"{"a": [true, null, "x\ny"], "c": {}, "bb": 2}"#
        );
        assert_eq!(j("1e2").to_text(), "100");
        assert_eq!(j(r#""\u00e9\ud83d\ude00""#).to_text(), "\"é😀\"");
        for bad in [
            "",
            "01",
            "[1,]",
            "{\"a\" 1}",
            "tru",
            "1.",
            "\"\\u0000\"",
            "[1] x",
        ] {
            assert!(Jsonb::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            j("[1, {\"a\": 2}, {}]").to_pretty(),
            "[\n    1,\n    {\n        \"a\": 2\n    },\n    {\n    }\n]"
        );
    }

    #[test]
    fn order_and_equality_are_postgres() {
        assert_eq!(j("1.0"), j("1"));
        let sorted = [
            "[]",
            "null",
            "\"a\"",
            "1",
            "false",
            "true",
            "[9]",
            "[1, 2]",
            "{\"z\": 1}",
            "{\"a\": 1, \"b\": 1}",
        ];
        for w in sorted.windows(2) {
            assert!(j(w[0]) < j(w[1]), "{} < {}", w[0], w[1]);
        }
    }
}
