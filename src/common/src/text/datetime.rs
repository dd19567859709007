//! Dates and timestamps in PostgreSQL's ISO `DateStyle`.

use crate::ErrorKind;
use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, TimeDelta, Timelike};

use super::{pg_trim, ParseError};
use crate::zone::format_offset;
use crate::{DataType, Zone};

/// `2024-01-02`, or `0044-03-15 BC` for years before 1 AD.
pub fn format_date(d: &NaiveDate) -> String {
    let (year, bc) = pg_year(d.year());
    format!("{:04}-{:02}-{:02}{}", year, d.month(), d.day(), bc)
}

/// `2024-01-02 03:04:05` with the fraction of a second, if any, printed
/// without trailing zeros (`.123`, `.000001`).
pub fn format_timestamp(t: &NaiveDateTime) -> String {
    let (mut out, bc) = timestamp_body(t);
    out.push_str(bc);
    out
}

/// `2024-01-02 03:04:05+01`: the instant in `zone`, with the offset in
/// effect (`+05:30`, `-04:56:02` when it has minutes or seconds).
pub fn format_timestamptz(micros: i64, zone: &Zone) -> String {
    match zone.to_local(micros) {
        Some((local, off)) => {
            let (mut out, bc) = timestamp_body(&local);
            out.push_str(&format_offset(off));
            out.push_str(bc);
            out
        }
        // Outside chrono's years (never stored: input is checked).
        None => format!("{micros} microseconds since 1970-01-01 00:00:00+00"),
    }
}

/// A timestamp without its era, and the era suffix (` BC` or nothing).
fn timestamp_body(t: &NaiveDateTime) -> (String, &'static str) {
    let (year, bc) = pg_year(t.year());
    let mut out = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        year,
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    push_fraction(&mut out, t.nanosecond().min(999_999_999) / 1000);
    (out, bc)
}

/// Append `.ffffff` without trailing zeros (nothing when zero).
pub(super) fn push_fraction(out: &mut String, micros: u32) {
    if micros != 0 {
        let f = format!(".{:06}", micros);
        out.push_str(f.trim_end_matches('0'));
    }
}

/// chrono's proleptic year 0 is 1 BC.
fn pg_year(y: i32) -> (i32, &'static str) {
    if y <= 0 {
        (1 - y, " BC")
    } else {
        (y, "")
    }
}

fn field_overflow(s: &str) -> ParseError {
    ParseError::new(
        ErrorKind::DatetimeFieldOverflow,
        format!("date/time field value out of range: \"{}\"", s),
    )
}

/// Split `2024-01-02 03:04:05` / `2024-01-02T03:04:05.5+02` into the date
/// and the optional time part, and note a trailing `BC`/`AD`.
fn split_datetime(t: &str) -> (&str, Option<&str>, bool) {
    let mut body = t;
    let mut bc = false;
    for (suffix, is_bc) in [(" bc", true), (" ad", false)] {
        let tail = body.get(body.len().saturating_sub(3)..);
        if tail.is_some_and(|x| x.eq_ignore_ascii_case(suffix)) {
            body = body[..body.len() - 3].trim_end();
            bc = is_bc;
        }
    }
    match body.find([' ', 'T', 't']) {
        Some(i) => (&body[..i], Some(body[i + 1..].trim()), bc),
        None => (body, None, bc),
    }
}

fn parse_date_part(ty: DataType, s: &str, d: &str, bc: bool) -> Result<NaiveDate, ParseError> {
    let bad = || ParseError::invalid(ty, s);
    let nums: Vec<&str> = if d.contains('-') {
        d.split('-').collect()
    } else if d.contains('/') {
        d.split('/').collect()
    } else if d.len() == 8 && d.bytes().all(|b| b.is_ascii_digit()) {
        vec![&d[..4], &d[4..6], &d[6..]]
    } else {
        return Err(bad());
    };
    if nums.len() != 3
        || nums
            .iter()
            .any(|n| n.is_empty() || n.len() > 9 || !n.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(bad());
    }
    let y: i32 = nums[0].parse().map_err(|_| bad())?;
    let m: u32 = nums[1].parse().map_err(|_| bad())?;
    let day: u32 = nums[2].parse().map_err(|_| bad())?;
    if y == 0 && bc {
        return Err(field_overflow(s));
    }
    let year = if bc { 1 - y } else { y };
    NaiveDate::from_ymd_opt(year, m, day).ok_or_else(|| field_overflow(s))
}

/// Parse `HH:MM[:SS[.frac]]` with an optional ignored time-zone suffix;
/// `24:00:00` is allowed and returned as a day carry.
fn parse_time_part(ty: DataType, s: &str, t: &str) -> Result<(NaiveTime, bool), ParseError> {
    let bad = || ParseError::invalid(ty, s);
    // A time zone is ignored for timestamp without time zone, as in PostgreSQL.
    let t = t.trim_end_matches(['z', 'Z']);
    let t = match t.find(['+', '-']) {
        Some(i) => t[..i].trim_end(),
        None => t,
    };
    let parts: Vec<&str> = t.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(bad());
    }
    let int = |x: &str| -> Result<u32, ParseError> {
        if x.is_empty() || x.len() > 2 || !x.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        x.parse().map_err(|_| bad())
    };
    let h = int(parts[0])?;
    let m = int(parts[1])?;
    let (sec, micros) = match parts.get(2) {
        None => (0, 0),
        Some(p) => {
            let (whole, frac) = p.split_once('.').unwrap_or((p, ""));
            let sec = int(whole)?;
            if !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            let f: f64 = format!("0.{}0", frac).parse().map_err(|_| bad())?;
            (sec, (f * 1e6).round_ties_even() as u32)
        }
    };
    if h > 24 || m > 59 || sec > 60 || (h == 24 && (m > 0 || sec > 0 || micros > 0)) {
        return Err(field_overflow(s));
    }
    let total = (h as i64 * 3600 + m as i64 * 60 + sec as i64) * 1_000_000 + micros as i64;
    let day = total >= 86_400_000_000;
    let rem = total % 86_400_000_000;
    let time = NaiveTime::from_num_seconds_from_midnight_opt(
        (rem / 1_000_000) as u32,
        (rem % 1_000_000) as u32 * 1000,
    )
    .ok_or_else(|| field_overflow(s))?;
    Ok((time, day))
}

/// PostgreSQL `date_in` for ISO-style input: `2024-01-02`, `20240102`,
/// `2024/1/2`, with an optional time part (ignored) and `BC`/`AD`.
pub fn parse_date(s: &str) -> Result<NaiveDate, ParseError> {
    let t = pg_trim(s);
    if t.eq_ignore_ascii_case("epoch") {
        return Ok(NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default());
    }
    let (d, time, bc) = split_datetime(t);
    let date = parse_date_part(DataType::Date, s, d, bc)?;
    if let Some(time) = time {
        parse_time_part(DataType::Date, s, time)?;
    }
    Ok(date)
}

/// PostgreSQL `timestamp_in` for ISO-style input: a date, then optionally
/// `T` or spaces and a time; a time zone after it is checked and ignored.
pub fn parse_timestamp(s: &str) -> Result<NaiveDateTime, ParseError> {
    parse_local(DataType::Timestamp, s).map(|(ts, _)| ts)
}

/// PostgreSQL `timestamptz_in`: a timestamp and an optional zone (`Z`,
/// `+02`, `-08:00`, `EST`, `America/New_York`, `UTC+3`); without one the
/// time is read in `zone`. The result is microseconds since 1970 UTC.
pub fn parse_timestamptz(s: &str, zone: &Zone) -> Result<i64, ParseError> {
    let (local, own) = parse_local(DataType::Timestamptz, s)?;
    own.as_ref()
        .unwrap_or(zone)
        .from_local(&local)
        .ok_or_else(|| ParseError::new(ErrorKind::DatetimeFieldOverflow, "timestamp out of range"))
}

/// The local date and time of a timestamp literal, and its zone if one
/// is written after the time.
fn parse_local(ty: DataType, s: &str) -> Result<(NaiveDateTime, Option<Zone>), ParseError> {
    let t = pg_trim(s);
    if t.eq_ignore_ascii_case("epoch") {
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
        return Ok((epoch.and_time(NaiveTime::MIN), Some(Zone::UTC)));
    }
    let (d, rest, bc) = split_datetime(t);
    let date = parse_date_part(ty, s, d, bc)?;
    let (time, zone) = match rest {
        None => ("", None),
        Some(rest) => split_zone(rest),
    };
    let zone = match zone {
        None => None,
        Some(z) => Some(Zone::for_literal(z).ok_or_else(|| {
            let numeric = z.starts_with(['+', '-'])
                && z[1..].bytes().all(|b| b.is_ascii_digit() || b == b':');
            if numeric {
                ParseError::new(
                    ErrorKind::InvalidTimeZoneDisplacementValue,
                    format!("time zone displacement out of range: \"{s}\""),
                )
            } else {
                ParseError::new(
                    ErrorKind::InvalidParameterValue,
                    format!("time zone \"{}\" not recognized", z.to_lowercase()),
                )
            }
        })?),
    };
    if time.is_empty() {
        return Ok((date.and_time(NaiveTime::MIN), zone));
    }
    let (time, carry) = parse_time_part(ty, s, time)?;
    let ts = date.and_time(time);
    if carry {
        let next = ts.checked_add_signed(TimeDelta::days(1)).ok_or_else(|| {
            ParseError::new(ErrorKind::DatetimeFieldOverflow, "timestamp out of range")
        })?;
        Ok((next, zone))
    } else {
        Ok((ts, zone))
    }
}

/// `10:11:12.5`: a time of day (`24:00:00` for the end of the day).
pub fn format_time(micros: i64) -> String {
    let secs = micros.div_euclid(1_000_000);
    let mut out = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    push_fraction(&mut out, micros.rem_euclid(1_000_000) as u32);
    out
}

/// PostgreSQL's `time_in`: `HH:MM[:SS[.frac]]` (`24:00:00` allowed), with
/// an optional date before it and a zone after it, both ignored.
pub fn parse_time(s: &str) -> Result<i64, ParseError> {
    let t = pg_trim(s);
    // A date in front (`2024-01-01 10:00`) is allowed and dropped.
    let rest = match t.find([' ', 'T']) {
        Some(i) if t[..i].contains(['-', '/']) => t[i + 1..].trim(),
        _ => t,
    };
    let (time, _zone) = split_zone(rest);
    if time.is_empty() {
        return Err(ParseError::invalid(DataType::Time, s));
    }
    let (time, carry) = parse_time_part(DataType::Time, s, time)?;
    if carry {
        return Ok(86_400_000_000);
    }
    Ok(time.num_seconds_from_midnight() as i64 * 1_000_000 + (time.nanosecond() / 1000) as i64)
}

/// Split `10:00:00.5+05:30` / `10:00 America/New_York` / `+02` into the
/// time and the zone written after it.
fn split_zone(rest: &str) -> (&str, Option<&str>) {
    match rest.find(|c: char| c == '+' || c == '-' || c.is_ascii_alphabetic() || c == ' ') {
        None => (rest, None),
        Some(i) => {
            let zone = rest[i..].trim();
            (rest[..i].trim(), (!zone.is_empty()).then_some(zone))
        }
    }
}
