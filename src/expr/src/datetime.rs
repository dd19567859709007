//! Date/time fields as PostgreSQL computes them: `date_trunc(unit, ts |
//! interval)`, `extract(unit FROM ts | date | interval)` (numeric) and
//! `date_part(unit, ts | interval)` (double precision); `justify_hours`,
//! `justify_days`, `justify_interval` and `age`. Years follow PostgreSQL's numbering (no year 0:
//! 1 BC is -1) in the decade/century/millennium rules.

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use ebbflow_common::ErrorKind;
use rust_decimal::Decimal;

use super::{ExprError, ExprResult};

use ebbflow_common::Interval;
use ebbflow_common::TimeUnit as Unit;

/// A unit by any of PostgreSQL's spellings (case-insensitive).
pub fn unit(name: &str) -> Option<Unit> {
    Unit::from_word(&name.trim().to_ascii_lowercase())
}

/// The type name PostgreSQL's unit errors give for `timestamp`.
pub const TIMESTAMP: &str = "timestamp without time zone";

/// The unit named `name`, or PostgreSQL's error for a name it does not
/// know (invalid_parameter_value).
pub fn parse_unit(name: &str, ty: &str) -> ExprResult<Unit> {
    unit(name).ok_or_else(|| {
        ExprError::new(
            ErrorKind::InvalidParameterValue,
            format!(
                "unit \"{}\" not recognized for type {ty}",
                name.to_lowercase()
            ),
        )
    })
}

fn not_supported(name: &str, ty: &str) -> ExprError {
    ExprError::new(
        ErrorKind::FeatureNotSupported,
        format!(
            "unit \"{}\" not supported for type {ty}",
            name.to_lowercase()
        ),
    )
}

/// chrono's year (0 = 1 BC) as PostgreSQL numbers it.
fn pg_year(y: i32) -> i64 {
    if y > 0 {
        y as i64
    } else {
        y as i64 - 1
    }
}

fn chrono_year(y: i64) -> Option<i32> {
    i32::try_from(if y > 0 { y } else { y + 1 }).ok()
}

fn out_of_range() -> ExprError {
    ExprError::new(ErrorKind::DatetimeFieldOverflow, "timestamp out of range")
}

/// `date_trunc(unit, ts)`.
pub fn date_trunc(name: &str, ts: NaiveDateTime) -> ExprResult<NaiveDateTime> {
    date_trunc_as(name, ts, TIMESTAMP)
}

/// [`date_trunc`] with errors naming the type `ty`.
pub fn date_trunc_as(name: &str, ts: NaiveDateTime, ty: &str) -> ExprResult<NaiveDateTime> {
    use Unit::*;
    let u = parse_unit(name, ty)?;
    let (date, time) = (ts.date(), ts.time());
    let midnight = |d: NaiveDate| d.and_hms_opt(0, 0, 0).ok_or_else(out_of_range);
    let first_of = |y: i64, m: u32| {
        chrono_year(y)
            .and_then(|y| NaiveDate::from_ymd_opt(y, m, 1))
            .ok_or_else(out_of_range)
            .and_then(midnight)
    };
    let year = pg_year(date.year());
    let at = |h: u32, m: u32, s: u32, nano: u32| {
        date.and_hms_nano_opt(h, m, s, nano)
            .ok_or_else(out_of_range)
    };
    Ok(match u {
        Microseconds => ts,
        Milliseconds => at(
            time.hour(),
            time.minute(),
            time.second(),
            time.nanosecond() / 1_000_000 * 1_000_000,
        )?,
        Second => at(time.hour(), time.minute(), time.second(), 0)?,
        Minute => at(time.hour(), time.minute(), 0, 0)?,
        Hour => at(time.hour(), 0, 0, 0)?,
        Day => midnight(date)?,
        Week => {
            let back = chrono::Days::new(date.weekday().num_days_from_monday() as u64);
            midnight(date.checked_sub_days(back).ok_or_else(out_of_range)?)?
        }
        Month => first_of(year, date.month())?,
        Quarter => first_of(year, (date.month() - 1) / 3 * 3 + 1)?,
        Year => first_of(year, 1)?,
        Decade => first_of(
            if year > 0 {
                year / 10 * 10
            } else {
                -((8 - (year - 1)) / 10) * 10
            },
            1,
        )?,
        Century => first_of(
            if year > 0 {
                (year + 99) / 100 * 100 - 99
            } else {
                -((99 - (year - 1)) / 100) * 100 + 1
            },
            1,
        )?,
        Millennium => first_of(
            if year > 0 {
                (year + 999) / 1000 * 1000 - 999
            } else {
                -((999 - (year - 1)) / 1000) * 1000 + 1
            },
            1,
        )?,
        // Not units date_trunc takes: PostgreSQL says "not recognized".
        Epoch | Dow | IsoDow | Doy | IsoYear | Julian => {
            return Err(ExprError::new(
                ErrorKind::InvalidParameterValue,
                format!(
                    "unit \"{}\" not recognized for type {ty}",
                    name.to_lowercase()
                ),
            ))
        }
    })
}

/// The fields of a date, as integers.
fn date_field(u: Unit, date: NaiveDate) -> Option<i64> {
    use Unit::*;
    let year = pg_year(date.year());
    Some(match u {
        Day => date.day() as i64,
        Week => date.iso_week().week() as i64,
        Month => date.month() as i64,
        Quarter => ((date.month() - 1) / 3 + 1) as i64,
        Year => year,
        Decade => {
            if year >= 0 {
                year / 10
            } else {
                -((8 - (year - 1)) / 10)
            }
        }
        Century => {
            if year > 0 {
                (year + 99) / 100
            } else {
                -((99 - (year - 1)) / 100)
            }
        }
        Millennium => {
            if year > 0 {
                (year + 999) / 1000
            } else {
                -((999 - (year - 1)) / 1000)
            }
        }
        Dow => date.weekday().num_days_from_sunday() as i64,
        IsoDow => date.weekday().number_from_monday() as i64,
        Doy => date.ordinal() as i64,
        IsoYear => {
            let y = date.iso_week().year();
            pg_year(y)
        }
        // Days since 4714-11-24 BC (0001-01-01 is day 1721426).
        Julian => date.num_days_from_ce() as i64 + 1_721_425,
        _ => return None,
    })
}

/// `extract(unit FROM ts)`: a numeric, with PostgreSQL's scales (6 for
/// seconds and epoch, 3 for milliseconds, 0 for the rest).
pub fn extract_timestamp(name: &str, ts: NaiveDateTime) -> ExprResult<Decimal> {
    extract_timestamp_as(name, ts, TIMESTAMP)
}

/// [`extract_timestamp`] with errors naming the type `ty`.
pub fn extract_timestamp_as(name: &str, ts: NaiveDateTime, ty: &str) -> ExprResult<Decimal> {
    use Unit::*;
    let u = parse_unit(name, ty)?;
    let time = ts.time();
    let micros_of_minute = time.second() as i64 * 1_000_000 + (time.nanosecond() / 1000) as i64;
    Ok(match u {
        Microseconds => Decimal::from(micros_of_minute),
        Milliseconds => Decimal::new(micros_of_minute, 3),
        Second => Decimal::new(micros_of_minute, 6),
        Minute => Decimal::from(time.minute()),
        Hour => Decimal::from(time.hour()),
        Epoch => Decimal::new(ts.and_utc().timestamp_micros(), 6),
        // PostgreSQL's result has up to 35 digits (the day and a fraction
        // of up to 28 places), more than our numeric holds.
        Julian => return Err(not_supported(name, ty)),
        _ => Decimal::from(date_field(u, ts.date()).ok_or_else(|| not_supported(name, ty))?),
    })
}

/// The type name of `time` unit errors.
pub const TIME: &str = "time without time zone";

/// `extract(unit FROM time)`: the time-of-day units and `epoch` (seconds
/// since midnight); date units are refused, as in PostgreSQL.
pub fn extract_time(name: &str, micros: i64) -> ExprResult<Decimal> {
    use Unit::*;
    let u = parse_unit(name, TIME)?;
    let of_minute = micros % 60_000_000;
    Ok(match u {
        Microseconds => Decimal::from(of_minute),
        Milliseconds => Decimal::new(of_minute, 3),
        Second => Decimal::new(of_minute, 6),
        Minute => Decimal::from(micros / 60_000_000 % 60),
        Hour => Decimal::from(micros / 3_600_000_000),
        Epoch => Decimal::new(micros, 6),
        _ => return Err(not_supported(name, TIME)),
    })
}

/// `extract(unit FROM date)`: integers; time-of-day units are refused, as
/// in PostgreSQL.
pub fn extract_date(name: &str, date: NaiveDate) -> ExprResult<Decimal> {
    use Unit::*;
    let u = parse_unit(name, "date")?;
    match u {
        Epoch => {
            let midnight = date.and_hms_opt(0, 0, 0).ok_or_else(out_of_range)?;
            Ok(Decimal::from(midnight.and_utc().timestamp()))
        }
        Microseconds | Milliseconds | Second | Minute | Hour => Err(not_supported(name, "date")),
        _ => Ok(Decimal::from(
            date_field(u, date).ok_or_else(|| not_supported(name, "date"))?,
        )),
    }
}

/// `date_part(unit, ts)`: the same value as `extract`, as a double.
pub fn date_part(name: &str, ts: NaiveDateTime) -> ExprResult<f64> {
    use rust_decimal::prelude::ToPrimitive;
    let d = extract_timestamp(name, ts)?;
    d.to_f64().ok_or_else(|| {
        ExprError::new(
            ErrorKind::NumericValueOutOfRange,
            "value out of range: overflow",
        )
    })
}

/// The type name of interval unit errors.
const INTERVAL: &str = "interval";
const MICROS_PER_HOUR: i64 = 3_600_000_000;
const MICROS_PER_MINUTE: i64 = 60_000_000;

fn interval_overflow() -> ExprError {
    ExprError::new(ErrorKind::DatetimeFieldOverflow, "interval out of range")
}

/// `extract(unit FROM interval)`, PostgreSQL's fields of an interval: the
/// time part gives hours (not wrapped at 24), minutes and seconds; the
/// month part years and months (`quarter` is `month / 3 + 1`); `epoch`
/// counts a year as 365.25 days and a month as 30. Fields truncate towards
/// zero, so a negative interval has negative fields.
pub fn extract_interval(name: &str, iv: &Interval) -> ExprResult<Decimal> {
    use Unit::*;
    let u = parse_unit(name, INTERVAL)?;
    let (years, months) = (iv.months / 12, iv.months % 12);
    let micros_of_minute = iv.micros % MICROS_PER_MINUTE;
    Ok(match u {
        Microseconds => Decimal::from(micros_of_minute),
        Milliseconds => Decimal::new(micros_of_minute, 3),
        Second => Decimal::new(micros_of_minute, 6),
        Minute => Decimal::from(iv.micros % MICROS_PER_HOUR / MICROS_PER_MINUTE),
        Hour => Decimal::from(iv.micros / MICROS_PER_HOUR),
        Day => Decimal::from(iv.days),
        Month => Decimal::from(months),
        Quarter => Decimal::from(months / 3 + 1),
        Year => Decimal::from(years),
        Decade => Decimal::from(years / 10),
        Century => Decimal::from(years / 100),
        Millennium => Decimal::from(years / 1000),
        Epoch => {
            // 365.25 days a year: in quarter days, to stay integral.
            let quarter_days = years as i128 * 1461 + (months as i128 * 30 + iv.days as i128) * 4;
            let micros = quarter_days * (Interval::MICROS_PER_DAY as i128 / 4) + iv.micros as i128;
            let micros = i64::try_from(micros).map_err(|_| interval_overflow())?;
            Decimal::new(micros, 6)
        }
        Week | Dow | IsoDow | Doy | IsoYear | Julian => return Err(not_supported(name, INTERVAL)),
    })
}

/// `date_trunc(unit, interval)`: the fields below `unit` zeroed.
pub fn date_trunc_interval(name: &str, iv: &Interval) -> ExprResult<Interval> {
    use Unit::*;
    let u = parse_unit(name, INTERVAL)?;
    let (years, months) = (iv.months / 12, iv.months % 12);
    let keep_years = |step: i32| Interval::new(years / step * step * 12, 0, 0);
    let keep_micros = |step: i64| Interval::new(iv.months, iv.days, iv.micros / step * step);
    Ok(match u {
        Microseconds => *iv,
        Milliseconds => keep_micros(1_000),
        Second => keep_micros(1_000_000),
        Minute => keep_micros(MICROS_PER_MINUTE),
        Hour => keep_micros(MICROS_PER_HOUR),
        Day => Interval::new(iv.months, iv.days, 0),
        Month => Interval::new(iv.months, 0, 0),
        Quarter => Interval::new(years * 12 + months / 3 * 3, 0, 0),
        Year => keep_years(1),
        Decade => keep_years(10),
        Century => keep_years(100),
        Millennium => keep_years(1000),
        Week => {
            return Err(ExprError::new(
                ErrorKind::FeatureNotSupported,
                "unit \"week\" not supported for type interval",
            ))
        }
        Epoch | Dow | IsoDow | Doy | IsoYear | Julian => {
            return Err(ExprError::new(
                ErrorKind::InvalidParameterValue,
                format!(
                    "unit \"{}\" not recognized for type interval",
                    name.to_lowercase()
                ),
            ))
        }
    })
}

/// `justify_hours(interval)`: whole days of the time part move to days,
/// the two parts left with the same sign.
pub fn justify_hours(iv: &Interval) -> ExprResult<Interval> {
    let day = Interval::MICROS_PER_DAY;
    let days = iv
        .days
        .checked_add(i32::try_from(iv.micros / day).map_err(|_| interval_overflow())?)
        .ok_or_else(interval_overflow)?;
    let (mut days, mut micros) = (days as i64, iv.micros % day);
    // Moving one unit back towards zero stays in range.
    same_sign(&mut days, &mut micros, day);
    Ok(Interval::new(iv.months, days as i32, micros))
}

/// Give `low` (a remainder below one `unit` of `high`) the sign of
/// `high`, borrowing one unit.
fn same_sign(high: &mut i64, low: &mut i64, unit: i64) {
    if *high > 0 && *low < 0 {
        *low += unit;
        *high -= 1;
    } else if *high < 0 && *low > 0 {
        *low -= unit;
        *high += 1;
    }
}

/// `justify_days(interval)`: whole 30-day periods move to months, the two
/// parts left with the same sign.
pub fn justify_days(iv: &Interval) -> ExprResult<Interval> {
    let months = iv
        .months
        .checked_add(iv.days / 30)
        .ok_or_else(interval_overflow)?;
    let (mut months, mut days) = (months as i64, (iv.days % 30) as i64);
    // Moving one unit back towards zero stays in range.
    same_sign(&mut months, &mut days, 30);
    Ok(Interval::new(months as i32, days as i32, iv.micros))
}

/// `justify_interval(interval)`: both of the above, every part left with
/// one sign (PostgreSQL's order of adjustments).
pub fn justify_interval(iv: &Interval) -> ExprResult<Interval> {
    let day = Interval::MICROS_PER_DAY;
    let mut micros = iv.micros % day;
    let days = iv.days as i64 + iv.micros / day;
    let mut months = iv.months as i64 + days / 30;
    let mut days = days % 30;
    if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
        days += 30;
        months -= 1;
    } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
        days -= 30;
        months += 1;
    }
    same_sign(&mut days, &mut micros, day);
    Ok(Interval::new(
        i32::try_from(months).map_err(|_| interval_overflow())?,
        i32::try_from(days).map_err(|_| interval_overflow())?,
        micros,
    ))
}

/// `age(a, b)`: `a - b` in years, months and days as a calendar counts
/// them (PostgreSQL's field-by-field subtraction, borrowing the days of
/// the earlier time's month), not as days and hours.
pub fn age(a: NaiveDateTime, b: NaiveDateTime) -> ExprResult<Interval> {
    let negative = a < b;
    let (late, early) = if negative { (b, a) } else { (a, b) };
    let field = |t: NaiveDateTime| {
        [
            pg_year(t.year()),
            t.month() as i64,
            t.day() as i64,
            t.hour() as i64,
            t.minute() as i64,
            t.second() as i64,
            (t.nanosecond() / 1000) as i64,
        ]
    };
    let (l, e) = (field(late), field(early));
    let [mut year, mut mon, mut mday, mut hour, mut min, mut sec, mut usec] =
        std::array::from_fn(|i| l[i] - e[i]);
    if usec < 0 {
        usec += 1_000_000;
        sec -= 1;
    }
    if sec < 0 {
        sec += 60;
        min -= 1;
    }
    if min < 0 {
        min += 60;
        hour -= 1;
    }
    if hour < 0 {
        hour += 24;
        mday -= 1;
    }
    // A borrowed month is as long as the earlier time's month.
    let month_days = month_length(early.year(), early.month());
    while mday < 0 {
        mday += month_days;
        mon -= 1;
    }
    while mon < 0 {
        mon += 12;
        year -= 1;
    }
    let sign = if negative { -1 } else { 1 };
    let months = i32::try_from(sign * (year * 12 + mon)).map_err(|_| interval_overflow())?;
    let micros = sign * ((((hour * 60) + min) * 60 + sec) * 1_000_000 + usec);
    Ok(Interval::new(months, (sign * mday) as i32, micros))
}

fn month_length(year: i32, month: u32) -> i64 {
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    match (
        NaiveDate::from_ymd_opt(year, month, 1),
        NaiveDate::from_ymd_opt(ny, nm, 1),
    ) {
        (Some(a), Some(b)) => (b - a).num_days(),
        _ => 30,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").expect("test timestamp")
    }

    // Expected values from PostgreSQL 15.
    #[test]
    fn trunc_and_extract_match_postgres() {
        let t = ts("2020-05-17 10:20:30.123456");
        let trunc = |u| date_trunc(u, t).expect("unit").to_string();
        assert_eq!(trunc("millisecond"), "2020-05-17 10:20:30.123");
        assert_eq!(trunc("MINUTE"), "2020-05-17 10:20:00");
        assert_eq!(trunc("week"), "2020-05-11 00:00:00");
        assert_eq!(trunc("quarter"), "2020-04-01 00:00:00");
        assert_eq!(trunc("decade"), "2020-01-01 00:00:00");
        assert_eq!(trunc("century"), "2001-01-01 00:00:00");
        assert_eq!(trunc("millennium"), "2001-01-01 00:00:00");
        let ex = |u| extract_timestamp(u, t).expect("unit").to_string();
        assert_eq!(ex("second"), "30.123456");
        assert_eq!(ex("milliseconds"), "30123.456");
        assert_eq!(ex("microseconds"), "30123456");
        assert_eq!(ex("epoch"), "1589710830.123456");
        assert_eq!(ex("dow"), "0");
        assert_eq!(ex("isodow"), "7");
        assert_eq!(ex("doy"), "138");
        assert_eq!(ex("week"), "20");
        assert_eq!(ex("century"), "21");
        assert_eq!(date_part("second", t).expect("unit"), 30.123456);
        let e = date_trunc("dow", t).expect_err("not for date_trunc");
        assert_eq!(e.kind(), ErrorKind::InvalidParameterValue);
        let e = extract_timestamp("fortnight", t).expect_err("unknown");
        assert_eq!(e.kind(), ErrorKind::InvalidParameterValue);
        let d = NaiveDate::from_ymd_opt(2021, 1, 1).expect("date");
        assert_eq!(
            extract_date("isoyear", d).expect("unit").to_string(),
            "2020"
        );
        assert_eq!(
            extract_date("epoch", d).expect("unit").to_string(),
            "1609459200"
        );
        assert_eq!(
            extract_date("hour", d).expect_err("time unit").kind(),
            ErrorKind::FeatureNotSupported
        );
    }
}
