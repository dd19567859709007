//! Dates and timestamps built from their fields, and timestamps binned:
//! `make_date`, `make_timestamp` and `date_bin`, with PostgreSQL 15's
//! results and errors (a field out of range is `datetime_field_overflow`,
//! and the message shows the fields as PostgreSQL prints them).

use chrono::{DateTime, NaiveDate, NaiveDateTime};

use super::func::Func;
use super::window::to_micros;
use super::{Expr, ExprError, ExprResult};
use ebbflow_common::{DataType, Datum, ErrorKind, Interval, ScalarValue};

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Whether `func` is one of this module's.
pub(super) fn owns(func: Func) -> bool {
    matches!(func, Func::MakeDate | Func::MakeTimestamp | Func::DateBin)
}

/// What an argument at `pos` of unknown type is read as.
pub(super) fn unknown_arg_type(func: Func, pos: usize) -> DataType {
    match (func, pos) {
        (Func::MakeTimestamp, 5) => DataType::Float64,
        (Func::DateBin, 0) => DataType::Interval,
        (Func::DateBin, _) => DataType::Timestamp,
        _ => DataType::Int32,
    }
}

/// Type the call: integer fields (seconds in double precision), or an
/// interval and two timestamps.
pub(super) fn build(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use DataType::*;
    let (params, ret): (&[DataType], DataType) = match func {
        Func::MakeDate => (&[Int32, Int32, Int32], Date),
        Func::MakeTimestamp => (&[Int32, Int32, Int32, Int32, Int32, Float64], Timestamp),
        // `date_bin` over instants is the same arithmetic in UTC.
        _ if args.iter().any(|a| a.return_type() == Timestamptz) => {
            (&[Interval, Timestamptz, Timestamptz], Timestamptz)
        }
        _ => (&[Interval, Timestamp, Timestamp], Timestamp),
    };
    super::build::fixed_signature(func, args, params, ret)
}

fn overflow(message: String) -> ExprError {
    ExprError::new(ErrorKind::DatetimeFieldOverflow, message)
}

/// `make_date(year, month, day)`: a negative year is BC; year 0 does not
/// exist.
fn make_date(y: i32, m: i32, d: i32) -> ExprResult<NaiveDate> {
    let bad = || overflow(format!("date field value out of range: {y}-{m:02}-{d:02}"));
    if y == 0 {
        return Err(bad());
    }
    let year = if y > 0 { y } else { y + 1 };
    match (u32::try_from(m), u32::try_from(d)) {
        (Ok(m), Ok(d)) => NaiveDate::from_ymd_opt(year, m, d).ok_or_else(bad),
        _ => Err(bad()),
    }
}

/// C's `%02g`, as PostgreSQL prints a seconds field in its messages.
fn c_g02(x: f64) -> String {
    let trim = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    let s = if x.is_nan() {
        "NaN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string()
    } else if x == 0.0 {
        "0".to_string()
    } else {
        let sci = format!("{x:.5e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        if !(-4..6).contains(&exp) {
            let sign = if exp < 0 { '-' } else { '+' };
            format!(
                "{}e{sign}{:02}",
                trim(mantissa.to_string()),
                exp.unsigned_abs()
            )
        } else {
            trim(format!("{x:.*}", (5 - exp) as usize))
        }
    };
    if s.len() < 2 {
        format!("0{s}")
    } else {
        s
    }
}

/// `make_timestamp(year, month, day, hour, min, sec)`: `24:00:00` and a
/// second of 60 roll over, as PostgreSQL's `float_time_overflows` allows.
fn make_timestamp(f: [i32; 5], sec: f64) -> ExprResult<NaiveDateTime> {
    let [y, mo, d, h, mi] = f;
    let date = make_date(y, mo, d)?;
    let bad = || {
        overflow(format!(
            "time field value out of range: {h}:{mi:02}:{}",
            c_g02(sec)
        ))
    };
    if !(0..=24).contains(&h) || !(0..60).contains(&mi) || sec.is_nan() {
        return Err(bad());
    }
    let sec_us = (sec * 1e6).round_ties_even();
    if !(0.0..=60e6).contains(&sec_us) {
        return Err(bad());
    }
    let time = (i64::from(h) * 60 + i64::from(mi)) * 60_000_000 + sec_us as i64;
    if time > MICROS_PER_DAY {
        return Err(bad());
    }
    let micros = to_micros(date.and_time(chrono::NaiveTime::MIN))
        .checked_add(time)
        .ok_or_else(|| overflow("timestamp out of range".into()))?;
    DateTime::from_timestamp_micros(micros)
        .map(|t| t.naive_utc())
        .ok_or_else(|| overflow("timestamp out of range".into()))
}

/// `date_bin(stride, ts, origin)`: the start of the bin of `stride` (no
/// months) holding `ts`, bins aligned on `origin`.
fn date_bin(
    stride: &Interval,
    ts: NaiveDateTime,
    origin: NaiveDateTime,
) -> ExprResult<NaiveDateTime> {
    if stride.months != 0 {
        return Err(ExprError::new(
            ErrorKind::FeatureNotSupported,
            "timestamps cannot be binned into intervals containing months or years",
        ));
    }
    let interval_range = || overflow("interval out of range".into());
    let stride = i64::from(stride.days)
        .checked_mul(MICROS_PER_DAY)
        .and_then(|d| d.checked_add(stride.micros))
        .ok_or_else(interval_range)?;
    if stride <= 0 {
        return Err(overflow("stride must be greater than zero".into()));
    }
    let (t, o) = (to_micros(ts), to_micros(origin));
    let diff = t.checked_sub(o).ok_or_else(interval_range)?;
    let mut start = o + (diff - diff % stride);
    if diff % stride < 0 {
        start -= stride;
    }
    DateTime::from_timestamp_micros(start)
        .map(|t| t.naive_utc())
        .ok_or_else(|| overflow("timestamp out of range".into()))
}

/// Evaluate one of this module's functions over non-NULL arguments
/// (`None`: not one of them).
pub(super) fn apply_strict(func: Func, vals: &[ScalarValue]) -> Option<ExprResult<Datum>> {
    if !owns(func) {
        return None;
    }
    use ScalarValue as S;
    let internal = || {
        ExprError::new(
            ErrorKind::InternalError,
            format!("{} of unexpected arguments", func.name()),
        )
    };
    let ints = |n: usize| -> ExprResult<Vec<i32>> {
        (0..n)
            .map(|i| match vals.get(i) {
                Some(S::Int32(v)) => Ok(*v),
                _ => Err(internal()),
            })
            .collect()
    };
    let r = (|| match func {
        Func::MakeDate => {
            let f = ints(3)?;
            Ok(S::Date(make_date(f[0], f[1], f[2])?))
        }
        Func::MakeTimestamp => {
            let f = ints(5)?;
            let Some(S::Float64(sec)) = vals.get(5) else {
                return Err(internal());
            };
            Ok(S::Timestamp(make_timestamp(
                [f[0], f[1], f[2], f[3], f[4]],
                sec.0,
            )?))
        }
        _ => match vals {
            [S::Interval(stride), S::Timestamp(ts), S::Timestamp(origin)] => {
                Ok(S::Timestamp(date_bin(stride, *ts, *origin)?))
            }
            [S::Interval(stride), S::Timestamptz(ts), S::Timestamptz(origin)] => {
                let utc = |t: i64| {
                    DateTime::from_timestamp_micros(t)
                        .map(|t| t.naive_utc())
                        .ok_or_else(|| overflow("timestamp out of range".into()))
                };
                let bin = date_bin(stride, utc(*ts)?, utc(*origin)?)?;
                Ok(S::Timestamptz(to_micros(bin)))
            }
            _ => Err(internal()),
        },
    })();
    Some(r.map(Some))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL 15's `%02g` of the seconds field in its messages.
    #[test]
    fn seconds_print_as_postgres() {
        assert_eq!(c_g02(0.0), "00");
        assert_eq!(c_g02(5.0), "05");
        assert_eq!(c_g02(-1.0), "-1");
        assert_eq!(c_g02(0.5), "0.5");
        assert_eq!(c_g02(60.5), "60.5");
        assert_eq!(c_g02(f64::NAN), "NaN");
        assert_eq!(c_g02(1e-7), "1e-07");
        assert_eq!(c_g02(1234567.0), "1.23457e+06");
    }
}
