//! PostgreSQL's POSIX regular expressions (`~`, `~*`, `regexp_match`,
//! `regexp_replace`) on the `regex` crate.
//!
//! What is supported is the `regex` crate's syntax, which agrees with
//! PostgreSQL's ARE for the common forms (classes, `[^…]`, groups,
//! alternation, `*?` lazy quantifiers, `{m,n}`, `\d \s \w`, `(?:…)`,
//! `^`/`$`). Known differences: back-references (`\1`) and look-around
//! (`(?=…)`) are rejected as invalid (invalid_regular_expression); ARE-only escapes (`\m`, `\M`,
//! `\y`, `[[:<:]]`) are not recognised; matching is leftmost-first (Perl),
//! where PostgreSQL's engine picks the longest match for some patterns
//! without lazy quantifiers; a `regex`-crate extension (`\p{…}`, named
//! groups) is accepted where PostgreSQL might refuse it.
//!
//! As in PostgreSQL, and unlike the crate's default, `.` and `[^…]` match
//! a newline unless the `n` flag asks for newline-sensitive matching.
//! Flags: `i` (case-insensitive), `c` (case-sensitive), `n`/`m`
//! (newline-sensitive), `s` (not), `x` (expanded syntax), `g` (every
//! match, `regexp_replace` only).

use ebbflow_common::ErrorKind;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use regex::{Regex, RegexBuilder};

use super::str_cache::StrCache;
use super::{ExprError, ExprResult};

/// The options a flags string selects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Flags {
    case_insensitive: bool,
    newline_sensitive: bool,
    expanded: bool,
    global: bool,
}

fn parse_flags(flags: &str) -> ExprResult<Flags> {
    let mut f = Flags::default();
    for c in flags.chars() {
        match c {
            'i' => f.case_insensitive = true,
            'c' => f.case_insensitive = false,
            'n' | 'm' => f.newline_sensitive = true,
            's' => f.newline_sensitive = false,
            'x' => f.expanded = true,
            't' => f.expanded = false,
            'g' => f.global = true,
            other => {
                return Err(ExprError::new(
                    ErrorKind::InvalidParameterValue,
                    format!("invalid regular expression option: \"{other}\""),
                ))
            }
        }
    }
    Ok(f)
}

thread_local! {
    /// Compiled patterns by flags, then pattern: shared, not cloned (a
    /// clone of a `Regex` starts with empty matching caches, which it
    /// would rebuild on every row).
    static CACHE: RefCell<HashMap<Flags, StrCache<Regex>>> = RefCell::new(HashMap::new());
}

fn compile(pattern: &str, flags: Flags) -> ExprResult<Rc<Regex>> {
    let flags = Flags {
        global: false,
        ..flags
    };
    CACHE.with(|c| {
        c.borrow_mut()
            .entry(flags)
            .or_default()
            .get_or_try(pattern, || {
                RegexBuilder::new(pattern)
                    .case_insensitive(flags.case_insensitive)
                    .dot_matches_new_line(!flags.newline_sensitive)
                    .multi_line(flags.newline_sensitive)
                    .ignore_whitespace(flags.expanded)
                    .build()
                    .map(Rc::new)
                    .map_err(|e| {
                        ExprError::new(
                            ErrorKind::InvalidRegularExpression,
                            format!(
                                "invalid regular expression: {}",
                                e.to_string().lines().last().unwrap_or("").trim()
                            ),
                        )
                    })
            })
    })
}

/// `s ~ pattern` (`~*` with `case_insensitive`): whether it matches
/// anywhere in `s`.
pub fn regex_match(s: &str, pattern: &str, case_insensitive: bool) -> ExprResult<bool> {
    let flags = Flags {
        case_insensitive,
        ..Flags::default()
    };
    Ok(compile(pattern, flags)?.is_match(s))
}

/// `regexp_match(s, pattern, flags)`: the capture groups of the first
/// match (the whole match when the pattern has none), a group that took no
/// part being NULL; `None` when nothing matches.
pub fn regexp_match(
    s: &str,
    pattern: &str,
    flags: &str,
) -> ExprResult<Option<Vec<Option<String>>>> {
    let flags = parse_flags(flags)?;
    if flags.global {
        return Err(ExprError::new(
            ErrorKind::InvalidParameterValue,
            "regexp_match() does not support the \"global\" option",
        ));
    }
    let re = compile(pattern, flags)?;
    let Some(caps) = re.captures(s) else {
        return Ok(None);
    };
    let groups: Vec<Option<String>> = if caps.len() == 1 {
        vec![caps.get(0).map(|m| m.as_str().to_string())]
    } else {
        (1..caps.len())
            .map(|i| caps.get(i).map(|m| m.as_str().to_string()))
            .collect()
    };
    Ok(Some(groups))
}

/// `regexp_split_to_array(s, pattern, flags)`: the pieces between
/// matches, ignoring (as PostgreSQL does) a zero-length match at either
/// end of `s` or right after the previous match.
pub fn regexp_split(s: &str, pattern: &str, flags: &str) -> ExprResult<Vec<String>> {
    let flags = parse_flags(flags)?;
    if flags.global {
        return Err(ExprError::new(
            ErrorKind::InvalidParameterValue,
            "regexp_split_to_array() does not support the \"global\" option",
        ));
    }
    let re = compile(pattern, flags)?;
    let mut out = Vec::new();
    let mut last = 0;
    for m in re.find_iter(s) {
        if m.start() == m.end() && (m.start() == 0 || m.start() == s.len() || m.start() == last) {
            continue;
        }
        out.push(s[last..m.start()].to_string());
        last = m.end();
    }
    out.push(s[last..].to_string());
    Ok(out)
}

/// `regexp_count(s, pattern, start, flags)`: the matches from character
/// `start` (1-based) on.
pub fn regexp_count(s: &str, pattern: &str, start: i32, flags: &str) -> ExprResult<i32> {
    if start <= 0 {
        return Err(ExprError::new(
            ErrorKind::InvalidParameterValue,
            format!("invalid value for parameter \"start\": {start}"),
        ));
    }
    let flags = parse_flags(flags)?;
    let re = compile(pattern, flags)?;
    let from = s
        .char_indices()
        .nth(start as usize - 1)
        .map_or(s.len(), |(i, _)| i);
    // PostgreSQL's scan: after a match go on from its end (one character
    // further after an empty one), so an empty match right after a
    // non-empty one counts too.
    let mut count = 0;
    let mut at = from;
    while at <= s.len() {
        let Some(m) = re.find_at(s, at) else { break };
        count += 1;
        at = if m.is_empty() {
            match s[m.end()..].chars().next() {
                Some(c) => m.end() + c.len_utf8(),
                None => break,
            }
        } else {
            m.end()
        };
    }
    Ok(count)
}

/// `regexp_replace(s, pattern, replacement, flags)`: the first match (each
/// with `g`) replaced. In the replacement `\1`…`\9` stand for a group, `\&`
/// for the whole match and `\\` for a backslash; any other character is
/// itself.
pub fn regexp_replace(
    s: &str,
    pattern: &str,
    replacement: &str,
    flags: &str,
) -> ExprResult<String> {
    let flags = parse_flags(flags)?;
    let re = compile(pattern, flags)?;
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for caps in re.captures_iter(s) {
        let Some(whole) = caps.get(0) else { break };
        out.push_str(&s[last..whole.start()]);
        let mut chars = replacement.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.peek().copied() {
                Some(d @ '1'..='9') => {
                    chars.next();
                    let i = d as usize - '0' as usize;
                    if let Some(m) = caps.get(i) {
                        out.push_str(m.as_str());
                    }
                }
                Some('&') => {
                    chars.next();
                    out.push_str(whole.as_str());
                }
                Some('\\') => {
                    chars.next();
                    out.push('\\');
                }
                _ => out.push('\\'),
            }
        }
        last = whole.end();
        if !flags.global {
            break;
        }
    }
    out.push_str(&s[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str, p: &str, f: &str) -> Option<Vec<Option<String>>> {
        regexp_match(s, p, f).unwrap()
    }

    #[test]
    fn matches_as_postgres() {
        let q21 = "(&|^)channel_id=([^&]*)";
        assert_eq!(
            m("a=1&channel_id=99&b", q21, ""),
            Some(vec![Some("&".into()), Some("99".into())])
        );
        assert_eq!(m("x=1", q21, ""), None);
        assert_eq!(m("foobar", "o+", ""), Some(vec![Some("oo".into())]));
        assert_eq!(m("ab", "(a)|(b)", ""), Some(vec![Some("a".into()), None]));
        assert_eq!(m("ABC", "b", "i"), Some(vec![Some("B".into())]));
        assert_eq!(m("a\nb", "a.b", ""), Some(vec![Some("a\nb".into())]));
        assert_eq!(m("a\nb", "a.b", "n"), None);
        assert_eq!(
            regexp_match("a", "(", "").unwrap_err().kind(),
            ErrorKind::InvalidRegularExpression
        );
        assert_eq!(
            regexp_match("a", "a", "z").unwrap_err().kind(),
            ErrorKind::InvalidParameterValue
        );
        assert_eq!(
            regexp_match("a", "a", "g").unwrap_err().kind(),
            ErrorKind::InvalidParameterValue
        );
        assert_eq!(
            regexp_replace("foobarbaz", "b(..)", "X\\1Y", "").unwrap(),
            "fooXarYbaz"
        );
        assert_eq!(
            regexp_replace("foobarbaz", "b(..)", "X\\1Y", "g").unwrap(),
            "fooXarYXazY"
        );
        assert_eq!(
            regexp_replace("abc", "b", "[\\&]\\\\", "").unwrap(),
            "a[b]\\c"
        );
    }
}
