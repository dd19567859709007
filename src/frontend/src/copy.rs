//! The data formats of `COPY … FROM STDIN` and `COPY … TO STDOUT`:
//! PostgreSQL's `text` and `csv`, split into records and fields here and
//! turned into rows by the session (`session/copy.rs`).
//!
//! - text: one record a line (`\n`, `\r\n` or `\r`), fields split on the
//!   delimiter (tab), backslash escapes (`\t`, `\n`, `\\`, octal `\123`,
//!   hex `\x41`, …), `\N` for NULL (compared before unescaping, as in
//!   PostgreSQL), a `\.` line ends the data.
//! - csv: fields split on the delimiter (`,`), `"`-quoted fields may hold
//!   delimiters, quotes (doubled, or preceded by ESCAPE) and newlines; an
//!   unquoted empty field is NULL (a quoted one is the empty string).
//!
//! Errors carry the 1-based line the bad record starts on.

use crate::FrontendError;
use ebbflow_common::ErrorKind;
use ebbflow_sql::{CopyFormat, CopyOptions};

/// One record: the line it starts on and its fields (`None` = NULL).
#[derive(Debug, PartialEq, Eq)]
pub struct Record {
    pub line: usize,
    pub fields: Vec<Option<String>>,
}

fn bad_format(line: usize, message: impl Into<String>) -> (usize, FrontendError) {
    (
        line,
        FrontendError::new(ErrorKind::BadCopyFileFormat, message),
    )
}

/// Split COPY data into records (the header line, if any, skipped).
/// Errors come with the line they were found on.
pub fn parse(data: &[u8], opts: &CopyOptions) -> Result<Vec<Record>, (usize, FrontendError)> {
    let text = std::str::from_utf8(data).map_err(|e| {
        let line = 1 + data[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        let bad = &data[e.valid_up_to()..];
        let shown: Vec<String> = bad.iter().take(2).map(|b| format!("0x{b:02x}")).collect();
        (
            line,
            FrontendError::new(
                ErrorKind::CharacterNotInRepertoire,
                format!(
                    "invalid byte sequence for encoding \"UTF8\": {}",
                    shown.join(" ")
                ),
            ),
        )
    })?;
    let mut records = match opts.format {
        CopyFormat::Text => parse_text(text, opts)?,
        CopyFormat::Csv => parse_csv(text, opts)?,
    };
    if opts.header && !records.is_empty() {
        records.remove(0);
    }
    Ok(records)
}

/// Lines with their 1-based numbers, any of `\n`, `\r\n`, `\r` ending
/// them; stops at a `\.` line.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text;
    let mut n = 0;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        n += 1;
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        let line = &rest[..end];
        let after = &rest[end..];
        rest = after
            .strip_prefix("\r\n")
            .or_else(|| after.strip_prefix('\n'))
            .or_else(|| after.strip_prefix('\r'))
            .unwrap_or(after);
        Some((n, line))
    })
    .take_while(|(_, l)| *l != "\\.")
}

fn parse_text(text: &str, opts: &CopyOptions) -> Result<Vec<Record>, (usize, FrontendError)> {
    let mut out = Vec::new();
    for (line, raw) in lines(text) {
        let fields = raw
            .split(opts.delimiter)
            .map(|f| {
                if f == opts.null {
                    Ok(None)
                } else {
                    unescape_text(f).map(Some).map_err(|m| bad_format(line, m))
                }
            })
            .collect::<Result<_, _>>()?;
        out.push(Record { line, fields });
    }
    Ok(out)
}

/// The backslash escapes of the text format.
fn unescape_text(f: &str) -> Result<String, String> {
    if !f.contains('\\') {
        return Ok(f.to_owned());
    }
    let mut out = String::with_capacity(f.len());
    let mut chars = f.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            // A trailing lone backslash is kept, as PostgreSQL does.
            out.push('\\');
            break;
        };
        match e {
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '0'..='7' => {
                let mut v = e as u32 - '0' as u32;
                for _ in 0..2 {
                    match chars.peek() {
                        Some(&d @ '0'..='7') => {
                            v = v * 8 + (d as u32 - '0' as u32);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                push_byte(&mut out, v)?;
            }
            'x' if chars.peek().is_some_and(char::is_ascii_hexdigit) => {
                let mut v = 0;
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(16)) {
                        Some(d) => {
                            v = v * 16 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                push_byte(&mut out, v)?;
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// An escaped byte: only ASCII makes valid UTF-8 on its own.
fn push_byte(out: &mut String, v: u32) -> Result<(), String> {
    match u8::try_from(v) {
        Ok(b) if b.is_ascii() && b != 0 => {
            out.push(b as char);
            Ok(())
        }
        Ok(0) => Err("invalid byte sequence for encoding \"UTF8\": 0x00".into()),
        _ => Err(format!(
            "invalid byte sequence for encoding \"UTF8\": 0x{:02x}",
            v & 0xff
        )),
    }
}

fn parse_csv(text: &str, opts: &CopyOptions) -> Result<Vec<Record>, (usize, FrontendError)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    loop {
        if chars.peek().is_none() {
            break;
        }
        let start = line;
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        // The record's unquoted text, to recognise a `\.` line.
        let mut raw = String::new();
        loop {
            let Some(c) = chars.next() else {
                fields.push(csv_field(field, quoted, opts));
                break;
            };
            if c == opts.quote {
                quoted = true;
                // A quoted run, up to the closing quote.
                loop {
                    let Some(q) = chars.next() else {
                        return Err(bad_format(start, "unterminated CSV quoted field"));
                    };
                    if q == '\n' {
                        line += 1;
                    }
                    if q == opts.escape
                        && chars
                            .peek()
                            .is_some_and(|&n| n == opts.quote || n == opts.escape)
                    {
                        if let Some(n) = chars.next() {
                            field.push(n);
                        }
                    } else if q == opts.quote {
                        break;
                    } else {
                        field.push(q);
                    }
                }
                raw.push('"');
            } else if c == opts.delimiter {
                fields.push(csv_field(std::mem::take(&mut field), quoted, opts));
                quoted = false;
                raw.push(c);
            } else if c == '\n' || c == '\r' {
                if c == '\r' && chars.peek() == Some(&'\n') {
                    chars.next();
                }
                line += 1;
                fields.push(csv_field(field, quoted, opts));
                break;
            } else {
                field.push(c);
                raw.push(c);
            }
        }
        if raw == "\\." && fields.len() == 1 {
            break;
        }
        out.push(Record {
            line: start,
            fields,
        });
    }
    Ok(out)
}

fn csv_field(field: String, quoted: bool, opts: &CopyOptions) -> Option<String> {
    if !quoted && field == opts.null {
        None
    } else {
        Some(field)
    }
}

/// One row of COPY TO output, with its line ending.
pub fn encode_row(fields: &[Option<String>], opts: &CopyOptions) -> String {
    let mut out = String::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(opts.delimiter);
        }
        match (f, opts.format) {
            (None, _) => out.push_str(&opts.null),
            (Some(v), CopyFormat::Text) => escape_text(&mut out, v, opts.delimiter),
            (Some(v), CopyFormat::Csv) => escape_csv(&mut out, v, opts),
        }
    }
    out.push('\n');
    out
}

fn escape_text(out: &mut String, v: &str, delimiter: char) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' if delimiter == '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if c == delimiter => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
}

fn escape_csv(out: &mut String, v: &str, opts: &CopyOptions) {
    let needs_quotes = v == opts.null
        || v == "\\."
        || v.chars()
            .any(|c| c == opts.delimiter || c == opts.quote || c == '\n' || c == '\r');
    if !needs_quotes {
        out.push_str(v);
        return;
    }
    out.push(opts.quote);
    for c in v.chars() {
        if c == opts.quote || c == opts.escape {
            out.push(opts.escape);
        }
        out.push(c);
    }
    out.push(opts.quote);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(data: &str, opts: &CopyOptions) -> Vec<Vec<Option<String>>> {
        parse(data.as_bytes(), opts)
            .unwrap()
            .into_iter()
            .map(|r| r.fields)
            .collect()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn text_fields_escapes_and_nulls() {
        let opts = CopyOptions::new(CopyFormat::Text);
        assert_eq!(
            fields(
                "1\ta\\tb\t\\N\n2\t\\x41\\101\\\\\t\r\n\\.\nignored\n",
                &opts
            ),
            vec![
                vec![s("1"), s("a\tb"), None],
                vec![s("2"), s("AA\\"), s("")],
            ]
        );
        assert!(parse(b"1\t\\0\n", &opts).is_err());
    }

    #[test]
    fn csv_quotes_newlines_and_header() {
        let mut opts = CopyOptions::new(CopyFormat::Csv);
        opts.header = true;
        let recs = parse(b"k,v\n1,\"a,\"\"b\"\"\nc\"\n2,\n3,\"\"\n", &opts).unwrap();
        assert_eq!(
            recs.iter().map(|r| r.line).collect::<Vec<_>>(),
            vec![2, 4, 5]
        );
        assert_eq!(recs[0].fields, vec![s("1"), s("a,\"b\"\nc")]);
        assert_eq!(recs[1].fields, vec![s("2"), None]);
        assert_eq!(recs[2].fields, vec![s("3"), s("")]);
        let err = parse(b"1,\"open\n", &CopyOptions::new(CopyFormat::Csv)).unwrap_err();
        assert_eq!(err.0, 1);
        assert_eq!(err.1.kind(), ErrorKind::BadCopyFileFormat);
    }

    #[test]
    fn bad_utf8_names_its_line() {
        let err = parse(b"1\n2\xff\n", &CopyOptions::new(CopyFormat::Text)).unwrap_err();
        assert_eq!(
            (err.0, err.1.kind()),
            (2, ErrorKind::CharacterNotInRepertoire)
        );
    }

    #[test]
    fn encode_round_trips() {
        for format in [CopyFormat::Text, CopyFormat::Csv] {
            let opts = CopyOptions::new(format);
            let row = vec![s("a\tb,\"c\"\nd\\"), None, s(""), s("\\.")];
            let line = encode_row(&row, &opts);
            assert_eq!(fields(&line, &opts), vec![row], "{format:?}: {line:?}");
        }
    }
}
