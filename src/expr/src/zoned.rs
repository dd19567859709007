//! `timestamp with time zone` in expressions, and the session time zone
//! they depend on.
//!
//! PostgreSQL reads the session's `TimeZone` whenever a zone-dependent
//! function runs. Here the zone is fixed when the statement is bound:
//! the binder runs inside [`with_session_zone`], and every cast or
//! function whose result depends on the zone (text ↔ `timestamptz`,
//! `timestamp`/`date` ↔ `timestamptz`, `timestamptz ± interval`,
//! `date_trunc`, `extract`, `date_part`, `to_char`, `age` over
//! `timestamptz`) gets the zone as a trailing text argument. So a
//! materialized view keeps computing in the zone of the session that
//! created it, whatever the zone of the sessions that read it.

use std::cell::RefCell;
use std::sync::Arc;

use chrono::{NaiveDateTime, TimeDelta};
use ebbflow_common::zone::format_offset;
use ebbflow_common::{DataType, ErrorKind, Interval, ScalarValue, Zone};
use rust_decimal::Decimal;

use super::cast::{cast_value_in, timestamp_out_of_range};
use super::datetime;
use super::func::Func;
use super::str_cache::StrCache;
use super::{Expr, ExprError, ExprResult};

/// The type name of `timestamptz` errors.
pub const TIMESTAMPTZ: &str = "timestamp with time zone";

thread_local! {
    /// The zone statements are bound in on this thread, and its name.
    static SESSION: RefCell<Option<(Zone, Arc<str>)>> = const { RefCell::new(None) };
    static ZONES: RefCell<StrCache<Zone>> = RefCell::new(StrCache::default());
}

/// Run `f` (the binding of one statement) with `setting` (a valid
/// `TimeZone` setting; anything else is UTC) as the session zone.
pub fn with_session_zone<R>(setting: &str, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<(Zone, Arc<str>)>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            SESSION.with(|s| *s.borrow_mut() = prev);
        }
    }
    let zone = Zone::for_setting(setting).map_or(Zone::UTC, |(z, _)| z);
    let name: Arc<str> = Arc::from(canonical_name(&zone));
    let prev = SESSION.with(|s| s.borrow_mut().replace((zone, name)));
    let _restore = Restore(prev);
    f()
}

/// The session zone of the statement being bound (UTC outside
/// [`with_session_zone`]), and its name as [`zone_of`] reads it.
pub fn session_zone() -> (Zone, Arc<str>) {
    SESSION
        .with(|s| s.borrow().clone())
        .unwrap_or((Zone::UTC, Arc::from("UTC")))
}

/// A name that [`zone_of`] reads back as `zone`: the IANA name, or a
/// fixed offset in POSIX form (`<+03>-03`).
fn canonical_name(zone: &Zone) -> String {
    match zone {
        Zone::Named(tz) => tz.name().to_string(),
        Zone::Fixed(s) => format!("<{}>{}", format_offset(*s), format_offset(-*s)),
    }
}

/// The session zone as the trailing argument of a zone-dependent call.
pub(crate) fn zone_arg() -> Expr {
    Expr::literal(
        Some(ScalarValue::varchar(session_zone().1)),
        DataType::Varchar,
    )
}

/// The zone named by `AT TIME ZONE`'s operand (or a fixed-in session
/// zone), or PostgreSQL's invalid_parameter_value.
pub(crate) fn zone_of(name: &str) -> ExprResult<Zone> {
    ZONES.with(|c| {
        c.borrow_mut()
            .get_or_try(name, || {
                Zone::for_at_time_zone(name)
                    .map(std::rc::Rc::new)
                    .ok_or_else(|| {
                        ExprError::new(
                            ErrorKind::InvalidParameterValue,
                            format!("time zone \"{name}\" not recognized"),
                        )
                    })
            })
            .map(|z| *z)
    })
}

/// Whether a cast between the two types depends on the time zone.
pub(crate) fn cast_needs_zone(from: DataType, to: DataType) -> bool {
    use DataType::*;
    let elem = |t: DataType| t.elem().unwrap_or(t);
    let (f, t) = (elem(from), elem(to));
    f != t && (f == Timestamptz || t == Timestamptz)
}

/// A zone-dependent cast of a non-literal: `CastInZone(value, zone)`.
pub(crate) fn zoned_cast(expr: Expr, ty: DataType) -> Expr {
    Expr::Func {
        func: Func::CastInZone,
        args: vec![expr, zone_arg()],
        ty,
    }
}

fn local(t: i64, zone: &Zone) -> ExprResult<(NaiveDateTime, i32)> {
    zone.to_local(t).ok_or_else(timestamp_out_of_range)
}

fn instant(l: &NaiveDateTime, zone: &Zone) -> ExprResult<i64> {
    zone.from_local(l).ok_or_else(timestamp_out_of_range)
}

fn micros_of(l: &NaiveDateTime) -> i64 {
    l.and_utc().timestamp_micros()
}

/// `timestamptz + interval` (PostgreSQL's `timestamptz_pl_interval`):
/// months and days move the local date in `zone` (so `+ '1 day'` keeps
/// the wall-clock time across a DST change), the rest is exact time.
pub(crate) fn add_interval(t: i64, i: &Interval, zone: &Zone) -> ExprResult<i64> {
    let mut t = t;
    if i.months != 0 || i.days != 0 {
        let (l, _) = local(t, zone)?;
        let moved = super::arith::timestamp_add_interval(l, &Interval::new(i.months, i.days, 0))?;
        t = instant(&moved, zone)?;
    }
    t.checked_add(i.micros)
        .filter(|t| ebbflow_common::Zone::UTC.to_local(*t).is_some())
        .ok_or_else(timestamp_out_of_range)
}

/// `timestamptz - timestamptz`: exact time, shown in days and hours.
pub(crate) fn diff(a: i64, b: i64) -> ExprResult<Interval> {
    let d = a
        .checked_sub(b)
        .ok_or_else(|| ExprError::new(ErrorKind::DatetimeFieldOverflow, "interval out of range"))?;
    Ok(Interval::new(
        0,
        (d / Interval::MICROS_PER_DAY) as i32,
        d % Interval::MICROS_PER_DAY,
    ))
}

/// `date_trunc(unit, tstz [, zone])`: truncated in `zone`. Units of a day
/// and more find the offset of the truncated local time anew; smaller
/// ones keep the offset the time had (PostgreSQL's rule).
pub(crate) fn date_trunc(unit: &str, t: i64, zone: &Zone) -> ExprResult<i64> {
    let (l, _) = local(t, zone)?;
    let trunc = datetime::date_trunc_as(unit, l, TIMESTAMPTZ)?;
    let below_day = matches!(
        datetime::unit(unit),
        Some(
            ebbflow_common::TimeUnit::Microseconds
                | ebbflow_common::TimeUnit::Milliseconds
                | ebbflow_common::TimeUnit::Second
                | ebbflow_common::TimeUnit::Minute
                | ebbflow_common::TimeUnit::Hour
        )
    );
    if below_day {
        Ok(t - (micros_of(&l) - micros_of(&trunc)))
    } else {
        instant(&trunc, zone)
    }
}

/// `extract(unit FROM tstz)`: the fields of the local time in `zone`;
/// `epoch` is the instant's, `timezone[_hour|_minute]` the offset's.
pub(crate) fn extract(unit: &str, t: i64, zone: &Zone) -> ExprResult<Decimal> {
    let (l, off) = local(t, zone)?;
    match unit.trim().to_ascii_lowercase().as_str() {
        "timezone" => Ok(Decimal::from(off)),
        "timezone_h" | "timezone_hour" => Ok(Decimal::from(off / 3600)),
        "timezone_m" | "timezone_minute" => Ok(Decimal::from(off / 60 % 60)),
        _ if datetime::unit(unit) == Some(ebbflow_common::TimeUnit::Epoch) => {
            Ok(Decimal::new(t, 6))
        }
        _ => datetime::extract_timestamp_as(unit, l, TIMESTAMPTZ),
    }
}

/// `to_char(tstz, template)` in `zone`.
pub(crate) fn to_char(t: i64, template: &str, zone: &Zone) -> ExprResult<Option<String>> {
    let (l, off) = local(t, zone)?;
    let utc = l - TimeDelta::seconds(off as i64);
    let abbr = zone.abbreviation_at(&utc);
    Ok(super::to_char::to_char_in(l, Some((off, &abbr)), template))
}

/// `age(a, b)` over the local times in `zone`.
pub(crate) fn age(a: i64, b: i64, zone: &Zone) -> ExprResult<Interval> {
    datetime::age(local(a, zone)?.0, local(b, zone)?.0)
}

/// `timezone(zone, value)`, `value AT TIME ZONE zone`: a `timestamp` read
/// as local time in the zone gives the instant; a `timestamptz` gives
/// its local time there.
pub(crate) fn at_time_zone(zone: &str, v: &ScalarValue) -> ExprResult<ScalarValue> {
    let z = zone_of(zone)?;
    match v {
        ScalarValue::Timestamp(l) => Ok(ScalarValue::Timestamptz(instant(l, &z)?)),
        ScalarValue::Timestamptz(t) => Ok(ScalarValue::Timestamp(local(*t, &z)?.0)),
        other => Err(ExprError::new(
            ErrorKind::InternalError,
            format!("timezone() of {}", other.data_type()),
        )),
    }
}

/// `CastInZone(value, zone)`.
pub(crate) fn cast(v: ScalarValue, to: DataType, zone: &str) -> ExprResult<ScalarValue> {
    cast_value_in(v, to, &zone_of(zone)?)
}

/// Whether [`build`] builds this call: `timezone` (`AT TIME ZONE`), and
/// the date/time functions and operators given a `timestamptz`.
pub(crate) fn owns(func: Func, types: &[DataType]) -> bool {
    func == Func::Timezone
        || (types.contains(&DataType::Timestamptz)
            && matches!(
                func,
                Func::Add
                    | Func::Sub
                    | Func::DateTrunc
                    | Func::Extract
                    | Func::DatePart
                    | Func::Age
                    | Func::ToChar
                    | Func::TumbleStart
            ))
}

/// Build a call [`owns`] claims, the session zone appended where the
/// result depends on it.
pub(crate) fn build(func: Func, args: Vec<Expr>) -> ExprResult<Expr> {
    use super::build::{coerce, is_unknown, no_operator};
    use DataType::*;
    let types: Vec<DataType> = args.iter().map(Expr::return_type).collect();
    let err = || no_operator(func, &types);
    let call = |args: Vec<Expr>, ty: DataType| Expr::Func { func, args, ty };
    let text = |e: Expr| -> ExprResult<Expr> {
        if e.return_type() == Varchar || is_unknown(&e) {
            coerce(e, Varchar)
        } else {
            Err(err())
        }
    };
    let tstz = |e: Expr| -> ExprResult<Expr> {
        match e.return_type() {
            Timestamptz | Timestamp | Date => coerce(e, Timestamptz),
            _ if is_unknown(&e) => coerce(e, Timestamptz),
            _ => Err(err()),
        }
    };
    let mut it = args.into_iter();
    let mut next = || it.next().ok_or_else(err);
    match (func, types.len()) {
        (Func::Add, 2) => {
            let (a, b) = (next()?, next()?);
            let (t, i) = if a.return_type() == Timestamptz {
                (a, b)
            } else {
                (b, a)
            };
            let i = if is_unknown(&i) {
                coerce(i, Interval)?
            } else {
                i
            };
            if i.return_type() != Interval {
                return Err(err());
            }
            Ok(call(vec![t, i, zone_arg()], Timestamptz))
        }
        (Func::Sub, 2) => {
            let (a, b) = (next()?, next()?);
            if b.return_type() == Interval && a.return_type() == Timestamptz {
                return Ok(call(vec![a, b, zone_arg()], Timestamptz));
            }
            Ok(call(vec![tstz(a)?, tstz(b)?], Interval))
        }
        (Func::DateTrunc | Func::Extract | Func::DatePart, 2 | 3) => {
            let unit = text(next()?)?;
            let source = next()?;
            let zone = match it.next() {
                Some(z) if func == Func::DateTrunc => text(z)?,
                Some(_) => return Err(err()),
                None => zone_arg(),
            };
            if let Expr::Literal { value: Some(v), .. } = &unit {
                let name = v.as_str().unwrap_or_default();
                let zone_field = name.trim().to_ascii_lowercase().starts_with("timezone");
                if func == Func::DateTrunc || !zone_field {
                    datetime::parse_unit(name, TIMESTAMPTZ)?;
                }
            }
            let ty = match func {
                Func::DateTrunc => Timestamptz,
                Func::Extract => Decimal,
                _ => Float64,
            };
            Ok(call(vec![unit, source, zone], ty))
        }
        (Func::Age, 2) => Ok(call(
            vec![tstz(next()?)?, tstz(next()?)?, zone_arg()],
            Interval,
        )),
        (Func::ToChar, 2) => Ok(call(vec![next()?, text(next()?)?, zone_arg()], Varchar)),
        (Func::TumbleStart, 2 | 3) => {
            let mut out = vec![next()?];
            for a in it {
                out.push(match a.return_type() {
                    Interval => a,
                    _ if is_unknown(&a) => coerce(a, Interval)?,
                    _ => return Err(err()),
                });
            }
            Ok(call(out, Timestamptz))
        }
        (Func::Timezone, 2) => {
            let zone = text(next()?)?;
            let v = next()?;
            let (v, ty) = match v.return_type() {
                Timestamp => (v, Timestamptz),
                Timestamptz => (v, Timestamp),
                Date => (coerce(v, Timestamptz)?, Timestamp),
                _ if is_unknown(&v) => (coerce(v, Timestamptz)?, Timestamp),
                _ => return Err(err()),
            };
            Ok(call(vec![zone, v], ty))
        }
        _ => Err(err()),
    }
}

/// Evaluate a call over `timestamptz` built by [`build`] (or a zoned
/// cast); `None` when the call is not one (the caller's own rules).
pub(crate) fn apply(
    func: Func,
    ty: DataType,
    vals: &[ScalarValue],
) -> Option<ExprResult<ebbflow_common::Datum>> {
    use ScalarValue as S;
    let zone = |i: usize| match vals.get(i) {
        Some(S::Varchar(z)) => zone_of(z),
        _ => Err(ExprError::new(
            ErrorKind::InternalError,
            "missing time zone",
        )),
    };
    let unit = || vals.first().and_then(S::as_str).unwrap_or_default();
    let r = match (func, vals) {
        (Func::CastInZone, [v, S::Varchar(z)]) => cast(v.clone(), ty, z),
        (Func::Timezone, [S::Varchar(z), v]) => at_time_zone(z, v),
        (Func::Add, [S::Timestamptz(t), S::Interval(i), _]) => zone(2)
            .and_then(|z| add_interval(*t, i, &z))
            .map(S::Timestamptz),
        (Func::Sub, [S::Timestamptz(t), S::Interval(i), _]) => super::arith::interval_neg(i)
            .and_then(|i| zone(2).and_then(|z| add_interval(*t, &i, &z)))
            .map(S::Timestamptz),
        (Func::DateTrunc, [_, S::Timestamptz(t), _]) => zone(2)
            .and_then(|z| date_trunc(unit(), *t, &z))
            .map(S::Timestamptz),
        (Func::Extract, [_, S::Timestamptz(t), _]) => zone(2)
            .and_then(|z| extract(unit(), *t, &z))
            .map(S::decimal),
        (Func::DatePart, [_, S::Timestamptz(t), _]) => zone(2)
            .and_then(|z| extract(unit(), *t, &z))
            .map(|d| S::float64(super::cast::decimal_to_f64(&d))),
        (Func::Age, [S::Timestamptz(a), S::Timestamptz(b), _]) => {
            zone(2).and_then(|z| age(*a, *b, &z)).map(S::Interval)
        }
        (Func::ToChar, [S::Timestamptz(t), S::Varchar(tpl), _]) => {
            return Some(
                zone(2)
                    .and_then(|z| to_char(*t, tpl, &z))
                    .map(|o| o.map(S::varchar)),
            );
        }
        (Func::TumbleStart, [S::Timestamptz(t), S::Interval(size), rest @ ..]) => {
            let offset = match rest.first() {
                Some(S::Interval(o)) => Some(o),
                _ => None,
            };
            local(*t, &Zone::UTC)
                .and_then(|(l, _)| super::window::tumble_start(l, size, offset))
                .map(|w| S::Timestamptz(micros_of(&w)))
        }
        _ => return None,
    };
    Some(r.map(Some))
}
