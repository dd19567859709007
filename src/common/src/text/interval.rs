//! Intervals in PostgreSQL's `postgres` IntervalStyle, and the input forms
//! of `interval_in` (`1 day 02:00:00`, `2 hours 30 minutes`, `1.5 months`,
//! `@ 1 hour ago`, ISO 8601 `P1Y2M3DT4H5M6S`, a bare number of seconds).

use super::datetime::push_fraction;
use super::{pg_trim, ParseError};
use crate::ErrorKind;
use crate::{DataType, Interval};

/// `1 year 2 mons 3 days 04:05:06.5`, `-1 days +02:00:00`, `00:00:00`
/// (PostgreSQL's `EncodeInterval` with `INTSTYLE_POSTGRES`).
pub fn format_interval(iv: &Interval) -> String {
    let mut out = String::new();
    let mut is_zero = true;
    let mut is_before = false;
    let mut part = |value: i64, unit: &str| {
        if value == 0 {
            return;
        }
        if !is_zero {
            out.push(' ');
        }
        if is_before && value > 0 {
            out.push('+');
        }
        out.push_str(&format!(
            "{} {}{}",
            value,
            unit,
            if value != 1 { "s" } else { "" }
        ));
        // Each nonzero field sets is_before for the next one only.
        is_before = value < 0;
        is_zero = false;
    };
    part((iv.months / 12) as i64, "year");
    part((iv.months % 12) as i64, "mon");
    part(iv.days as i64, "day");
    if is_zero || iv.micros != 0 {
        let abs = iv.micros.unsigned_abs();
        let hours = abs / 3_600_000_000;
        let mins = abs / 60_000_000 % 60;
        let secs = abs / 1_000_000 % 60;
        if !is_zero {
            out.push(' ');
        }
        if iv.micros < 0 {
            out.push('-');
        } else if is_before {
            out.push('+');
        }
        out.push_str(&format!("{:02}:{:02}:{:02}", hours, mins, secs));
        push_fraction(&mut out, (abs % 1_000_000) as u32);
    }
    out
}

use crate::TimeUnit as Unit;

/// A unit an interval's text may name: not `quarter`, `epoch`, `dow`, ….
fn interval_unit(w: &str) -> Option<Unit> {
    Unit::from_word(w).filter(|u| {
        !matches!(
            u,
            Unit::Quarter
                | Unit::Epoch
                | Unit::Dow
                | Unit::IsoDow
                | Unit::Doy
                | Unit::IsoYear
                | Unit::Julian
        )
    })
}

/// The field bit PostgreSQL uses to reject a unit given twice.
fn unit_bit(u: Unit) -> u32 {
    1 << (u as u32)
}

const TIME_MASK: u32 =
    (1 << Unit::Hour as u32) | (1 << Unit::Minute as u32) | (1 << Unit::Second as u32);

/// Running sums; wide so that range is checked once at the end.
#[derive(Default)]
struct Acc {
    months: i128,
    days: i128,
    micros: i128,
}

impl Acc {
    fn add_days_frac(&mut self, days: f64) {
        self.days += days.trunc() as i128;
        self.micros += (days.fract() * 86_400e6).round_ties_even() as i128;
    }

    fn apply(&mut self, v: f64, unit: Unit) {
        match unit {
            Unit::Microseconds => self.micros += v.round_ties_even() as i128,
            Unit::Milliseconds => self.micros += (v * 1e3).round_ties_even() as i128,
            Unit::Second => self.micros += (v * 1e6).round_ties_even() as i128,
            Unit::Minute => self.micros += (v * 60e6).round_ties_even() as i128,
            Unit::Hour => self.micros += (v * 3600e6).round_ties_even() as i128,
            Unit::Day => self.add_days_frac(v),
            Unit::Week => self.add_days_frac(v * 7.0),
            Unit::Month => {
                self.months += v.trunc() as i128;
                self.add_days_frac(v.fract() * 30.0);
            }
            Unit::Year => self.add_months_of_years(v, 1.0),
            Unit::Decade => self.add_months_of_years(v, 10.0),
            Unit::Century => self.add_months_of_years(v, 100.0),
            Unit::Millennium => self.add_months_of_years(v, 1000.0),
            // Not interval units: `interval_unit` never gives them.
            _ => {}
        }
    }

    fn add_months_of_years(&mut self, v: f64, scale: f64) {
        self.months += (v.trunc() * scale * 12.0) as i128;
        self.months += (v.fract() * scale * 12.0).round_ties_even() as i128;
    }
}

/// A signed decimal number token: `[+-]digits[.digits]` or `[+-].digits`.
fn parse_number(tok: &str) -> Option<f64> {
    let u = tok.strip_prefix(['+', '-']).unwrap_or(tok);
    let (ip, fp) = u.split_once('.').unwrap_or((u, ""));
    let ok = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if !ok(ip) || !ok(fp) || (ip.is_empty() && fp.is_empty()) {
        return None;
    }
    tok.parse().ok()
}

/// A time token `[+-]H:M[:S[.f]]` in microseconds.
fn parse_time(tok: &str) -> Option<i128> {
    let (neg, u) = match tok.as_bytes().first() {
        Some(b'-') => (true, &tok[1..]),
        Some(b'+') => (false, &tok[1..]),
        _ => (false, tok),
    };
    let parts: Vec<&str> = u.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return None;
    }
    let int = |x: &str| -> Option<i128> {
        if x.is_empty() || x.len() > 18 || !x.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        x.parse().ok()
    };
    let h = int(parts[0])?;
    let m = int(parts[1])?;
    let s = match parts.get(2) {
        None => 0,
        Some(p) => {
            let (whole, frac) = p.split_once('.').unwrap_or((p, ""));
            if !frac.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let f: f64 = format!("0.{}0", frac).parse().ok()?;
            int(whole)? * 1_000_000 + (f * 1e6).round_ties_even() as i128
        }
    };
    if m > 59 || s >= 60_000_000 {
        return None;
    }
    let total = (h * 3600 + m * 60) * 1_000_000 + s;
    Some(if neg { -total } else { total })
}

/// Split `1day`/`-3h` into number and word, keep everything else whole.
fn tokenize(t: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in t.split_whitespace() {
        let starts_numeric = word
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.'));
        if starts_numeric && !word.contains(':') {
            let split = word
                .char_indices()
                .skip(1)
                .find(|(_, c)| c.is_ascii_alphabetic())
                .map(|(i, _)| i);
            if let Some(i) = split {
                out.push(word[..i].to_string());
                out.push(word[i..].to_string());
                continue;
            }
        }
        out.push(word.to_string());
    }
    out
}

fn parse_iso8601(s: &str, body: &str) -> Result<Acc, ParseError> {
    let bad = || ParseError::invalid(DataType::Interval, s);
    let mut acc = Acc::default();
    let mut in_time = false;
    let mut num = String::new();
    for c in body.chars() {
        match c {
            't' if num.is_empty() && !in_time => in_time = true,
            '0'..='9' | '.' | '-' | '+' => num.push(c),
            _ => {
                let v = parse_number(&num).ok_or_else(bad)?;
                num.clear();
                let unit = match (c, in_time) {
                    ('y', false) => Unit::Year,
                    ('m', false) => Unit::Month,
                    ('w', false) => Unit::Week,
                    ('d', false) => Unit::Day,
                    ('h', true) => Unit::Hour,
                    ('m', true) => Unit::Minute,
                    ('s', true) => Unit::Second,
                    _ => return Err(bad()),
                };
                acc.apply(v, unit);
            }
        }
    }
    if !num.is_empty() {
        return Err(bad());
    }
    Ok(acc)
}

/// PostgreSQL's `interval_in` for the common forms (see the module doc).
pub fn parse_interval(s: &str) -> Result<Interval, ParseError> {
    let bad = || ParseError::invalid(DataType::Interval, s);
    let t = pg_trim(s).to_ascii_lowercase();
    let acc = if let Some(body) = t.strip_prefix('p') {
        parse_iso8601(s, body)?
    } else {
        let toks = tokenize(&t);
        if toks.is_empty() {
            return Err(bad());
        }
        let mut acc = Acc::default();
        let mut mask = 0u32;
        let mut ago = false;
        let mut i = 0;
        let set = |mask_bits: u32, mask: &mut u32| -> Result<(), ParseError> {
            if *mask & mask_bits != 0 {
                return Err(bad());
            }
            *mask |= mask_bits;
            Ok(())
        };
        while i < toks.len() {
            let tok = toks[i].as_str();
            i += 1;
            if tok == "@" {
                continue;
            }
            if tok == "ago" {
                if i != toks.len() || ago {
                    return Err(bad());
                }
                ago = true;
                continue;
            }
            if tok.contains(':') {
                set(TIME_MASK, &mut mask)?;
                acc.micros += parse_time(tok).ok_or_else(bad)?;
                continue;
            }
            let v = parse_number(tok).ok_or_else(bad)?;
            let next = toks.get(i).map(String::as_str);
            if let Some(unit) = next.and_then(interval_unit) {
                i += 1;
                set(unit_bit(unit), &mut mask)?;
                acc.apply(v, unit);
            } else if next.is_some_and(|n| n.contains(':')) {
                // `1 02:00:00`: a bare number before a time is days.
                set(unit_bit(Unit::Day), &mut mask)?;
                acc.apply(v, Unit::Day);
            } else {
                set(unit_bit(Unit::Second), &mut mask)?;
                acc.apply(v, Unit::Second);
            }
        }
        if ago {
            acc.months = -acc.months;
            acc.days = -acc.days;
            acc.micros = -acc.micros;
        }
        acc
    };
    let range = || {
        ParseError::new(
            ErrorKind::DatetimeFieldOverflow,
            format!("interval field value out of range: \"{}\"", s),
        )
    };
    Ok(Interval::new(
        i32::try_from(acc.months).map_err(|_| range())?,
        i32::try_from(acc.days).map_err(|_| range())?,
        i64::try_from(acc.micros).map_err(|_| range())?,
    ))
}
