//! Date/time fields as PostgreSQL computes them: `date_trunc(unit, ts)`,
//! `extract(unit FROM ts | date)` (numeric) and `date_part(unit, ts)`
//! (double precision). Years follow PostgreSQL's numbering (no year 0:
//! 1 BC is -1) in the decade/century/millennium rules.

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use rust_decimal::Decimal;

use super::{ExprError, ExprResult};

use crate::common::TimeUnit as Unit;

/// A unit by any of PostgreSQL's spellings (case-insensitive).
pub fn unit(name: &str) -> Option<Unit> {
    Unit::from_word(&name.trim().to_ascii_lowercase())
}

/// The type name PostgreSQL's unit errors give for `timestamp`.
pub const TIMESTAMP: &str = "timestamp without time zone";

/// The unit named `name`, or PostgreSQL's error for a name it does not
/// know (`22023`).
pub fn parse_unit(name: &str, ty: &str) -> ExprResult<Unit> {
    unit(name).ok_or_else(|| {
        ExprError::new(
            "22023",
            format!(
                "unit \"{}\" not recognized for type {ty}",
                name.to_lowercase()
            ),
        )
    })
}

fn not_supported(name: &str, ty: &str) -> ExprError {
    ExprError::new(
        "0A000",
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
    ExprError::new("22008", "timestamp out of range")
}

/// `date_trunc(unit, ts)`.
pub fn date_trunc(name: &str, ts: NaiveDateTime) -> ExprResult<NaiveDateTime> {
    use Unit::*;
    let u = parse_unit(name, TIMESTAMP)?;
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
                "22023",
                format!(
                    "unit \"{}\" not recognized for type {TIMESTAMP}",
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
    use Unit::*;
    let u = parse_unit(name, TIMESTAMP)?;
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
        Julian => return Err(not_supported(name, TIMESTAMP)),
        _ => Decimal::from(date_field(u, ts.date()).ok_or_else(|| not_supported(name, TIMESTAMP))?),
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
    d.to_f64()
        .ok_or_else(|| ExprError::new("22003", "value out of range: overflow"))
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
        assert_eq!(e.code, "22023");
        let e = extract_timestamp("fortnight", t).expect_err("unknown");
        assert_eq!(e.code, "22023");
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
            extract_date("hour", d).expect_err("time unit").code,
            "0A000"
        );
    }
}
