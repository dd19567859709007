//! PostgreSQL text format of values: what psql prints and what a literal or
//! a text-format parameter parses from.
//!
//! CONTRACT (owned by the expr work): `format_datum` must print exactly what
//! PostgreSQL 15 prints for the same value and type (`t`/`f`, numeric scale
//! kept, `1.5`/`Infinity`/`NaN` for floats with shortest round-trip digits,
//! `2024-01-02 03:04:05.123456`, intervals in `postgres` IntervalStyle like
//! `1 year 2 mons 3 days 04:05:06`). `parse_datum` accepts what PostgreSQL's
//! input functions accept for these types.
//!
//! Known differences from PostgreSQL (the value model cannot hold them):
//! date/timestamp `infinity` are rejected;
//! numeric keeps at most 28 fractional digits and 28-29 significant digits
//! (rust_decimal), longer inputs are rounded or rejected as out of range.

mod array;
mod datetime;
mod interval;

use crate::ErrorKind;
use rust_decimal::Decimal;

use super::types::{DataType, Numeric, ScalarValue};
use crate::Zone;

pub use array::{format_array, format_array_in, parse_array, parse_array_in};
pub use datetime::{format_date, format_timestamp, format_timestamptz, parse_timestamptz};
pub use interval::format_interval;

/// Error parsing a value from text; always a data exception.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// E.g. invalid text representation, numeric value out of range,
    /// invalid datetime format, datetime field overflow.
    pub kind: ErrorKind,
    pub message: String,
}

impl ParseError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ParseError {
            kind,
            message: message.into(),
        }
    }

    /// `invalid input syntax for type <ty>: "<s>"`; an invalid datetime format
    /// for datetime types.
    pub fn invalid(ty: DataType, s: &str) -> Self {
        let kind = match ty {
            DataType::Date
            | DataType::Timestamp
            | DataType::Timestamptz
            | DataType::Interval
            | DataType::Time => ErrorKind::InvalidDatetimeFormat,
            _ => ErrorKind::InvalidTextRepresentation,
        };
        let name = match ty {
            DataType::Timestamp => "timestamp",
            DataType::Timestamptz => "timestamp with time zone",
            DataType::Time => "time",
            other => other.pg_name(),
        };
        ParseError::new(
            kind,
            format!("invalid input syntax for type {}: \"{}\"", name, s),
        )
    }
}

/// The text of a value; a `timestamptz` is shown in UTC (see
/// [`format_datum_in`] for the session's zone).
pub fn format_datum(v: &ScalarValue) -> String {
    format_datum_in(v, &Zone::UTC)
}

/// The text of a value, a `timestamptz` shown in `zone`.
pub fn format_datum_in(v: &ScalarValue, zone: &Zone) -> String {
    match v {
        ScalarValue::Int16(x) => x.to_string(),
        ScalarValue::Int32(x) => x.to_string(),
        ScalarValue::Int64(x) => x.to_string(),
        ScalarValue::Float32(x) => format_float(x.0, true),
        ScalarValue::Float64(x) => format_float(x.0, false),
        ScalarValue::Decimal(x) => format_numeric(x),
        ScalarValue::Varchar(s) => s.to_string(),
        ScalarValue::Boolean(b) => if *b { "t" } else { "f" }.to_string(),
        ScalarValue::Date(d) => format_date(d),
        ScalarValue::Timestamp(t) => format_timestamp(t),
        ScalarValue::Interval(i) => format_interval(i),
        ScalarValue::Array(a) => format_array_in(a, zone),
        ScalarValue::Timestamptz(t) => format_timestamptz(*t, zone),
        ScalarValue::Jsonb(j) => j.to_text(),
        ScalarValue::Uuid(u) => format_uuid(*u),
        ScalarValue::Bytea(b) => format_bytea(b),
        ScalarValue::Time(t) => datetime::format_time(*t),
    }
}

/// A numeric as PostgreSQL prints it: `NaN`, `Infinity`, `-Infinity` or
/// the number with its scale.
pub fn format_numeric(x: &Numeric) -> String {
    match x {
        Numeric::Finite(d) => format_decimal(d),
        Numeric::NaN => "NaN".into(),
        Numeric::PosInf => "Infinity".into(),
        Numeric::NegInf => "-Infinity".into(),
    }
}

/// A numeric with its scale kept; never prints `-0`.
pub fn format_decimal(x: &Decimal) -> String {
    let mut x = *x;
    if x.is_zero() {
        x.set_sign_positive(true);
    }
    x.to_string()
}

/// PostgreSQL's `float8out`/`float4out` with `extra_float_digits = 1`: the
/// shortest digits that round-trip, in fixed notation when the decimal
/// exponent is in `-4..15` (`-4..6` for real) and `1.5e+20` style otherwise.
pub fn format_float(v: f64, single: bool) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let (digits, exp) = shortest_digits(v.abs(), single);
    let mut out = String::new();
    if v < 0.0 {
        out.push('-');
    }
    let limit = if single { 6 } else { 15 };
    if exp < -4 || exp >= limit {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    } else if exp >= 0 {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', int_len - digits.len()));
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    } else {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
        out.push_str(&digits);
    }
    out
}

/// Split Rust's `{:e}` output of a positive float into its significant
/// digits (no trailing zeros) and decimal exponent.
fn split_sci(sci: &str) -> (String, i32) {
    let (mant, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let mut digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    (digits, exp.parse().unwrap_or(0))
}

/// The shortest digits that read back as `v` (positive, finite, nonzero),
/// like PostgreSQL's Ryu-based output: Rust's shortest gives the length,
/// then the candidate of that length closest to `v` (ties to even, where
/// Rust's shortest mode may round up) is taken. Unlike Rust's formatter,
/// PostgreSQL never picks a candidate lying exactly halfway to a
/// neighbouring float (`2.2451034397015392e+16`, not
/// `2.245103439701539e+16`), so such a candidate is replaced by the next
/// one towards `v` or a longer one.
fn shortest_digits(v: f64, single: bool) -> (String, i32) {
    let sci = if single {
        format!("{:e}", v as f32)
    } else {
        format!("{:e}", v)
    };
    let (digits, exp) = split_sci(&sci);
    let round_trips = |d: &str, e: i32| {
        let s = format!("{}e{}", d, e - d.len() as i32 + 1);
        if single {
            s.parse::<f32>().ok() == Some(v as f32)
        } else {
            s.parse::<f64>().ok() == Some(v)
        }
    };
    let max = if single { 9 } else { 17 };
    for n in digits.len()..=max {
        // The correctly rounded n-digit candidate; when it sits exactly on
        // a midpoint, its neighbour one unit towards `v` may be inside.
        let sci = if single {
            format!("{:.*e}", n - 1, v as f32)
        } else {
            format!("{:.*e}", n - 1, v)
        };
        let (d, e) = split_sci(&sci);
        let Some(above) = midpoint_side(&d, e, v, single) else {
            if round_trips(&d, e) {
                return (d, e);
            }
            continue;
        };
        let full = format!("{:0<width$}", d, width = n);
        if let Some((d2, e2)) = step_digits(&full, e, !above) {
            if round_trips(&d2, e2) && midpoint_side(&d2, e2, v, single).is_none() {
                return (d2, e2);
            }
        }
    }
    (digits, exp)
}

/// The n-digit decimal one unit in the last place up or down from
/// `digits × 10^(exp - n + 1)`, as (digits without trailing zeros, exp).
fn step_digits(digits: &str, exp: i32, up: bool) -> Option<(String, i32)> {
    let n = digits.len();
    let d: u64 = digits.parse().ok()?;
    let last = exp - n as i32 + 1;
    let stepped = if up { d + 1 } else { d.checked_sub(1)? };
    if stepped == 0 {
        return None;
    }
    let s = stepped.to_string();
    // 999 + 1 = 1000 gains a digit, 1000 - 1 = 999 loses one.
    let exp = last + s.len() as i32 - 1;
    let trimmed = s.trim_end_matches('0');
    Some((trimmed.to_string(), exp))
}

/// Whether `digits × 10^(exp - len + 1)` is exactly halfway between `v`
/// and one of its neighbours (`Some(true)`: the one above), compared
/// exactly through the factors 2 and 5.
fn midpoint_side(digits: &str, exp: i32, v: f64, single: bool) -> Option<bool> {
    let mut d = digits.parse::<u64>().ok()?;
    let e10 = exp - digits.len() as i32 + 1;
    let (m, e2, boundary) = if single {
        let bits = (v as f32).to_bits();
        let (eb, frac) = ((bits >> 23) & 0xff, (bits & 0x7f_ffff) as u64);
        if eb == 0 {
            (frac, -149, false)
        } else {
            (frac | 1 << 23, eb as i32 - 150, frac == 0 && eb > 1)
        }
    } else {
        let bits = v.to_bits();
        let (eb, frac) = ((bits >> 52) & 0x7ff, bits & ((1 << 52) - 1));
        if eb == 0 {
            (frac, -1074, false)
        } else {
            (frac | 1 << 52, eb as i32 - 1075, frac == 0 && eb > 1)
        }
    };
    if d == 0 {
        return None;
    }
    let (mut twos, mut fives) = (0i32, 0i32);
    while d % 2 == 0 {
        d /= 2;
        twos += 1;
    }
    while d % 5 == 0 {
        d /= 5;
        fives += 1;
    }
    // candidate = d · 2^(twos+e10) · 5^(fives+e10), d coprime to 10;
    // a midpoint is odd · 2^p2.
    let equals = |odd: u64, p2: i32| {
        let k = fives + e10;
        twos + e10 == p2
            && (0..=27).contains(&k)
            && (d as u128).checked_mul(5u128.pow(k as u32)) == Some(odd as u128)
    };
    let lower = if boundary {
        equals(4 * m - 1, e2 - 2)
    } else {
        m > 0 && equals(2 * m - 1, e2 - 1)
    };
    if equals(2 * m + 1, e2 - 1) {
        Some(true)
    } else if lower {
        Some(false)
    } else {
        None
    }
}

/// Read a value from its text; a `timestamptz` without a zone is read in
/// UTC (see [`parse_datum_in`]).
pub fn parse_datum(ty: DataType, s: &str) -> Result<ScalarValue, ParseError> {
    parse_datum_in(ty, s, &Zone::UTC)
}

/// Read a value from its text, a `timestamptz` without a zone of its own
/// in `zone`.
pub fn parse_datum_in(ty: DataType, s: &str, zone: &Zone) -> Result<ScalarValue, ParseError> {
    Ok(match ty {
        DataType::Int16 => ScalarValue::Int16(parse_int(ty, s)?),
        DataType::Int32 => ScalarValue::Int32(parse_int(ty, s)?),
        DataType::Int64 => ScalarValue::Int64(parse_int(ty, s)?),
        DataType::Float32 => ScalarValue::Float32(super::F64(parse_float(ty, s)?)),
        DataType::Float64 => ScalarValue::float64(parse_float(ty, s)?),
        DataType::Decimal => ScalarValue::Decimal(parse_numeric(s)?),
        DataType::Varchar => ScalarValue::varchar(s),
        DataType::Boolean => ScalarValue::Boolean(parse_bool(s)?),
        DataType::Date => ScalarValue::Date(datetime::parse_date(s)?),
        DataType::Timestamp => ScalarValue::Timestamp(datetime::parse_timestamp(s)?),
        DataType::Interval => ScalarValue::Interval(interval::parse_interval(s)?),
        DataType::Array(elem) => parse_array_in(elem, s, zone)?,
        DataType::Timestamptz => ScalarValue::Timestamptz(parse_timestamptz(s, zone)?),
        DataType::Jsonb => ScalarValue::Jsonb(std::sync::Arc::new(crate::jsonb::Jsonb::parse(s)?)),
        DataType::Uuid => ScalarValue::Uuid(parse_uuid(s)?),
        DataType::Bytea => ScalarValue::Bytea(parse_bytea(s)?.into()),
        DataType::Time => ScalarValue::Time(datetime::parse_time(s)?),
    })
}

/// `\x0aff`: PostgreSQL's hex output (`bytea_output = hex`).
pub fn format_bytea(b: &[u8]) -> String {
    let mut out = String::with_capacity(2 + 2 * b.len());
    out.push_str("\\x");
    for byte in b {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// PostgreSQL's `byteain`: `\x` and hex digits (blanks between pairs),
/// or the escape form (`\\` a backslash, `\ooo` an octal byte, anything
/// else itself).
pub fn parse_bytea(s: &str) -> Result<Vec<u8>, ParseError> {
    let bad = |msg: String| ParseError::new(ErrorKind::InvalidParameterValue, msg);
    if let Some(hex) = s.strip_prefix("\\x") {
        let mut out = Vec::with_capacity(hex.len() / 2);
        let mut digits = hex
            .chars()
            .filter(|c| !matches!(c, ' ' | '\t' | '\n' | '\r'));
        while let Some(hi) = digits.next() {
            let nibble = |c: char| {
                c.to_digit(16)
                    .ok_or_else(|| bad(format!("invalid hexadecimal digit: \"{c}\"")))
            };
            let h = nibble(hi)?;
            let Some(lo) = digits.next() else {
                return Err(bad("invalid hexadecimal data: odd number of digits".into()));
            };
            out.push((h * 16 + nibble(lo)?) as u8);
        }
        return Ok(out);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else {
            let oct = b.get(i + 1..i + 4).filter(|o| {
                matches!(o[0], b'0'..=b'3') && o[1..].iter().all(|d| matches!(d, b'0'..=b'7'))
            });
            let Some(o) = oct else {
                return Err(ParseError::invalid(DataType::Bytea, s));
            };
            out.push((o[0] - b'0') * 64 + (o[1] - b'0') * 8 + (o[2] - b'0'));
            i += 4;
        }
    }
    Ok(out)
}

/// `a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`.
pub fn format_uuid(u: u128) -> String {
    let h = format!("{u:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// PostgreSQL's `uuid_in`: 32 hex digits in any case, optionally in
/// braces, with a hyphen allowed after any group of four.
pub fn parse_uuid(s: &str) -> Result<u128, ParseError> {
    let bad = || ParseError::invalid(DataType::Uuid, s);
    let t = s
        .strip_prefix('{')
        .map_or(Some(s), |inner| inner.strip_suffix('}'));
    let t = t.ok_or_else(bad)?;
    let mut digits = String::with_capacity(32);
    let mut prev_hyphen = true;
    for c in t.chars() {
        if c == '-' {
            if prev_hyphen || !digits.len().is_multiple_of(4) || digits.len() == 32 {
                return Err(bad());
            }
            prev_hyphen = true;
        } else if c.is_ascii_hexdigit() {
            digits.push(c);
            prev_hyphen = false;
        } else {
            return Err(bad());
        }
    }
    if digits.len() != 32 || prev_hyphen {
        return Err(bad());
    }
    u128::from_str_radix(&digits, 16).map_err(|_| bad())
}

/// PostgreSQL's `isspace`-trimming of input values.
fn pg_trim(s: &str) -> &str {
    s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
}

fn parse_int<T: std::str::FromStr>(ty: DataType, s: &str) -> Result<T, ParseError> {
    let t = pg_trim(s);
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ParseError::invalid(ty, s));
    }
    t.parse().map_err(|_| {
        ParseError::new(
            ErrorKind::NumericValueOutOfRange,
            format!("value \"{}\" is out of range for type {}", s, ty.pg_name()),
        )
    })
}

fn parse_float(ty: DataType, s: &str) -> Result<f64, ParseError> {
    let t = pg_trim(s);
    let lower = t.to_ascii_lowercase();
    let unsigned = lower.strip_prefix(['+', '-']).unwrap_or(&lower);
    let negative = lower.starts_with('-');
    match unsigned {
        "nan" => return Ok(f64::NAN),
        "inf" | "infinity" => {
            return Ok(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        _ => {}
    }
    // Validate the syntax ourselves: Rust's parser is more permissive.
    let (mant, exp) = match unsigned.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (unsigned, None),
    };
    let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
    let all_digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    let mant_ok = all_digits(ip) && all_digits(fp) && !(ip.is_empty() && fp.is_empty());
    let exp_ok = exp.is_none_or(|e| {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        !e.is_empty() && all_digits(e)
    });
    if !mant_ok || !exp_ok {
        return Err(ParseError::invalid(ty, s));
    }
    let out_of_range = || {
        ParseError::new(
            ErrorKind::NumericValueOutOfRange,
            format!("\"{}\" is out of range for type {}", t, ty.pg_name()),
        )
    };
    let nonzero = mant.bytes().any(|b| (b'1'..=b'9').contains(&b));
    let v = if ty == DataType::Float32 {
        t.parse::<f32>().map_err(|_| ParseError::invalid(ty, s))? as f64
    } else {
        t.parse::<f64>().map_err(|_| ParseError::invalid(ty, s))?
    };
    if v.is_infinite() || (v == 0.0 && nonzero) {
        return Err(out_of_range());
    }
    Ok(v)
}

/// PostgreSQL's `numeric_in`: a number as [`parse_decimal`] reads it, or
/// (in any case, surrounded by spaces) `NaN`, `[+-]Infinity` or `[+-]inf`.
pub fn parse_numeric(s: &str) -> Result<Numeric, ParseError> {
    let t = pg_trim(s).to_ascii_lowercase();
    Ok(match t.as_str() {
        "nan" => Numeric::NaN,
        "infinity" | "+infinity" | "inf" | "+inf" => Numeric::PosInf,
        "-infinity" | "-inf" => Numeric::NegInf,
        _ => Numeric::Finite(parse_decimal(s)?),
    })
}

/// Parse a numeric: `[+-]digits[.digits][e[+-]digits]` with the scale kept
/// (`1.50` has scale 2, `1.5e-3` scale 4, `1.5e3` scale 0).
pub fn parse_decimal(s: &str) -> Result<Decimal, ParseError> {
    let bad = || ParseError::invalid(DataType::Decimal, s);
    let overflow = || {
        ParseError::new(
            ErrorKind::NumericValueOutOfRange,
            "value overflows numeric format",
        )
    };
    let t = pg_trim(s);
    let (neg, u) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (mant, exp) = match u.find(['e', 'E']) {
        Some(i) => (&u[..i], Some(&u[i + 1..])),
        None => (u, None),
    };
    let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
    let all_digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(ip) || !all_digits(fp) || (ip.is_empty() && fp.is_empty()) {
        return Err(bad());
    }
    let exp: i64 = match exp {
        None => 0,
        Some(e) => {
            let d = e.strip_prefix(['+', '-']).unwrap_or(e);
            if d.is_empty() || !all_digits(d) {
                return Err(bad());
            }
            if d.len() > 6 {
                return Err(overflow());
            }
            e.parse().map_err(|_| bad())?
        }
    };
    if exp.abs() > 1000 {
        return Err(overflow());
    }
    // Digits without the point, and where the point goes after the exponent.
    let digits = format!("{}{}", ip, fp);
    let point = ip.len() as i64 + exp;
    let scale = (fp.len() as i64 - exp).max(0);
    let mut text = String::new();
    if neg {
        text.push('-');
    }
    if point <= 0 {
        text.push_str("0.");
        text.extend(std::iter::repeat_n('0', (-point) as usize));
        text.push_str(&digits);
    } else if point as usize >= digits.len() {
        text.push_str(&digits);
        text.extend(std::iter::repeat_n('0', point as usize - digits.len()));
    } else {
        text.push_str(&digits[..point as usize]);
        text.push('.');
        text.push_str(&digits[point as usize..]);
    }
    // Drop leading zeros of the integer part, which rust_decimal counts
    // against its precision.
    let int_part_len = text.find('.').unwrap_or(text.len());
    let start = usize::from(neg);
    let lead = text[start..int_part_len]
        .bytes()
        .take_while(|b| *b == b'0')
        .count()
        .min(int_part_len - start - 1);
    text.replace_range(start..start + lead, "");
    // Too many significant digits: round the fraction to what fits.
    let mut value = match Decimal::from_str_exact(&text) {
        Ok(v) => v,
        Err(_) => {
            let int_digits = text[start..].find('.').unwrap_or(text.len() - start);
            if int_digits > 29 {
                return Err(overflow());
            }
            let (whole, frac) = text.split_once('.').unwrap_or((&text, ""));
            let mut keep = frac.len();
            loop {
                if keep == 0 {
                    break whole.parse::<Decimal>().map_err(|_| overflow())?;
                }
                keep -= 1;
                let candidate = format!("{}.{}", whole, &frac[..keep]);
                if let Ok(mut d) = Decimal::from_str_exact(&candidate) {
                    // Round half away from zero on the dropped digits.
                    if frac.as_bytes()[keep] >= b'5' {
                        let ulp = Decimal::new(1, keep as u32);
                        d = if neg {
                            d.checked_sub(ulp)
                        } else {
                            d.checked_add(ulp)
                        }
                        .ok_or_else(overflow)?;
                    }
                    break d;
                }
            }
        }
    };
    if (value.scale() as i64) < scale.min(Decimal::MAX_SCALE as i64) {
        value.rescale(scale.min(Decimal::MAX_SCALE as i64) as u32);
    }
    if value.is_zero() {
        value.set_sign_positive(true);
    }
    Ok(value)
}

/// PostgreSQL's `boolin`: `t`/`true`/`yes`/`on`/`1` and their prefixes.
pub fn parse_bool(s: &str) -> Result<bool, ParseError> {
    let t = pg_trim(s).to_ascii_lowercase();
    let prefix_of = |word: &str, min: usize| t.len() >= min && word.starts_with(t.as_str());
    let r = match t.as_bytes().first() {
        Some(b't') if prefix_of("true", 1) => Some(true),
        Some(b'f') if prefix_of("false", 1) => Some(false),
        Some(b'y') if prefix_of("yes", 1) => Some(true),
        Some(b'n') if prefix_of("no", 1) => Some(false),
        Some(b'o') if prefix_of("on", 2) => Some(true),
        Some(b'o') if prefix_of("off", 2) => Some(false),
        _ if t == "1" => Some(true),
        _ if t == "0" => Some(false),
        _ => None,
    };
    r.ok_or_else(|| ParseError::invalid(DataType::Boolean, s))
}

#[cfg(test)]
mod tests;
