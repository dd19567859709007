//! Time zones for `timestamp with time zone`: the IANA database
//! (`chrono-tz`, compiled in), fixed offsets, PostgreSQL's default
//! abbreviations and POSIX-style specifications, read the way PostgreSQL
//! reads each context (a `SET TIME ZONE` value, an `AT TIME ZONE` operand,
//! the zone written in a literal), and local time resolved across DST
//! gaps and folds as PostgreSQL resolves it.

use chrono::{DateTime, NaiveDateTime, Offset, TimeDelta, TimeZone};
use chrono_tz::{OffsetName, Tz};

/// A time zone: a fixed offset (seconds east of UTC) or an IANA zone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zone {
    Fixed(i32),
    Named(Tz),
}

/// PostgreSQL's `Default` abbreviation set (the ones in everyday use),
/// each a fixed offset in seconds east of UTC.
const ABBREVIATIONS: &[(&str, i32)] = &[
    ("utc", 0),
    ("ut", 0),
    ("gmt", 0),
    ("z", 0),
    ("zulu", 0),
    ("est", -5 * 3600),
    ("edt", -4 * 3600),
    ("cst", -6 * 3600),
    ("cdt", -5 * 3600),
    ("mst", -7 * 3600),
    ("mdt", -6 * 3600),
    ("pst", -8 * 3600),
    ("pdt", -7 * 3600),
    ("akst", -9 * 3600),
    ("akdt", -8 * 3600),
    ("hst", -10 * 3600),
    ("ast", -4 * 3600),
    ("adt", -3 * 3600),
    ("nst", -(3 * 3600 + 1800)),
    ("ndt", -(2 * 3600 + 1800)),
    ("wet", 0),
    ("west", 3600),
    ("bst", 3600),
    ("cet", 3600),
    ("cest", 2 * 3600),
    ("met", 3600),
    ("mest", 2 * 3600),
    ("eet", 2 * 3600),
    ("eest", 3 * 3600),
    ("msk", 3 * 3600),
    ("ist", 2 * 3600),
    ("hkt", 8 * 3600),
    ("sgt", 8 * 3600),
    ("awst", 8 * 3600),
    ("jst", 9 * 3600),
    ("kst", 9 * 3600),
    ("acst", 9 * 3600 + 1800),
    ("acdt", 10 * 3600 + 1800),
    ("aest", 10 * 3600),
    ("aedt", 11 * 3600),
    ("nzst", 12 * 3600),
    ("nzdt", 13 * 3600),
];

/// The largest offset PostgreSQL accepts (15:59:59).
const MAX_OFFSET: i32 = 15 * 3600 + 59 * 60 + 59;

impl Zone {
    pub const UTC: Zone = Zone::Fixed(0);

    /// A `SET TIME ZONE` / `timezone` setting, with the name `SHOW`
    /// prints: an IANA name (any case; shown as the database spells it),
    /// a number of hours east of UTC (`'+3'`, shown `<+03>-03`), or a
    /// POSIX specification without DST rules (`'UTC+3'`, which is three
    /// hours *west*, shown as written). Abbreviations are not settings.
    pub fn for_setting(s: &str) -> Option<(Zone, String)> {
        let t = s.trim();
        if let Ok(hours) = t.parse::<f64>() {
            let secs = (hours * 3600.0).round();
            if secs.abs() > MAX_OFFSET as f64 {
                return None;
            }
            let secs = secs as i32;
            return Some((
                Zone::Fixed(secs),
                format!("<{}>{}", format_offset(secs), format_offset(-secs)),
            ));
        }
        if let Ok(tz) = Tz::from_str_insensitive(t) {
            return Some((Zone::Named(tz), tz.name().to_string()));
        }
        if t.starts_with(['+', '-']) {
            // `'+05:30'`: POSIX, so west of UTC.
            return iso_offset(t).map(|west| (Zone::Fixed(-west), t.to_string()));
        }
        posix(t).map(|z| (z, t.to_string()))
    }

    /// The zone of `AT TIME ZONE` and `timezone(zone, …)`: an
    /// abbreviation, an IANA name, or a POSIX specification (where a bare
    /// `'+05:30'` is five and a half hours *west*, as PostgreSQL warns).
    pub fn for_at_time_zone(s: &str) -> Option<Zone> {
        let t = s.trim();
        if t.starts_with(['+', '-']) {
            return iso_offset(t).map(|west| Zone::Fixed(-west));
        }
        abbreviation(t)
            .or_else(|| Tz::from_str_insensitive(t).ok().map(Zone::Named))
            .or_else(|| posix(t))
    }

    /// The zone written after the time in a `timestamptz` literal: `Z`,
    /// an ISO offset (`+02`, `-0800`, `+05:30`: east), an abbreviation,
    /// an IANA name or a POSIX specification.
    pub fn for_literal(s: &str) -> Option<Zone> {
        let t = s.trim();
        if t.starts_with(['+', '-']) {
            return iso_offset(t).map(Zone::Fixed);
        }
        Zone::for_at_time_zone(t)
    }

    /// Seconds east of UTC at the UTC instant `utc`.
    pub fn offset_at(&self, utc: &NaiveDateTime) -> i32 {
        match self {
            Zone::Fixed(s) => *s,
            Zone::Named(tz) => tz.offset_from_utc_datetime(utc).fix().local_minus_utc(),
        }
    }

    /// The abbreviation in effect at `utc` (`EST`, `CEST`; a fixed offset
    /// prints as its offset), for `to_char`'s `TZ`.
    pub fn abbreviation_at(&self, utc: &NaiveDateTime) -> String {
        match self {
            Zone::Fixed(s) => format_offset(*s),
            Zone::Named(tz) => {
                let o = tz.offset_from_utc_datetime(utc);
                match o.abbreviation() {
                    Some(a) => a.to_string(),
                    None => format_offset(o.fix().local_minus_utc()),
                }
            }
        }
    }

    /// The local time of the instant `micros` (microseconds since
    /// 1970-01-01 00:00 UTC), and the offset in effect.
    pub fn to_local(&self, micros: i64) -> Option<(NaiveDateTime, i32)> {
        let utc = DateTime::from_timestamp_micros(micros)?.naive_utc();
        let off = self.offset_at(&utc);
        Some((utc.checked_add_signed(TimeDelta::seconds(off as i64))?, off))
    }

    /// The instant of a local time. A time that occurs twice (a fold) or
    /// never (a gap) takes the smaller of the offsets around it, the
    /// later instant, as PostgreSQL does: `01:30` on the night clocks go
    /// back is the second one, and `02:30` on the night they go forward
    /// is read with the offset before the change.
    pub fn from_local(&self, local: &NaiveDateTime) -> Option<i64> {
        let off = match self {
            Zone::Fixed(s) => *s,
            Zone::Named(tz) => match tz.offset_from_local_datetime(local) {
                chrono::LocalResult::Single(o) => o.fix().local_minus_utc(),
                chrono::LocalResult::Ambiguous(a, b) => {
                    a.fix().local_minus_utc().min(b.fix().local_minus_utc())
                }
                chrono::LocalResult::None => {
                    let day = TimeDelta::days(1);
                    let before = local.checked_sub_signed(day)?;
                    let after = local.checked_add_signed(day)?;
                    self.offset_at(&before).min(self.offset_at(&after))
                }
            },
        };
        let utc = local.checked_sub_signed(TimeDelta::seconds(off as i64))?;
        Some(utc.and_utc().timestamp_micros())
    }
}

/// `+05`, `+05:30`, `-04:56:02`: an offset as PostgreSQL prints it.
pub fn format_offset(secs: i32) -> String {
    let sign = if secs < 0 { '-' } else { '+' };
    let a = secs.unsigned_abs();
    let (h, m, s) = (a / 3600, a / 60 % 60, a % 60);
    match (m, s) {
        (0, 0) => format!("{sign}{h:02}"),
        (_, 0) => format!("{sign}{h:02}:{m:02}"),
        _ => format!("{sign}{h:02}:{m:02}:{s:02}"),
    }
}

fn abbreviation(t: &str) -> Option<Zone> {
    ABBREVIATIONS
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(t))
        .map(|(_, s)| Zone::Fixed(*s))
}

/// `+hh`, `+hhmm`, `+hh:mm`, `+hh:mm:ss` (seconds east of UTC).
fn iso_offset(t: &str) -> Option<i32> {
    let (sign, body) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    let parts: Vec<&str> = if body.contains(':') {
        body.split(':').collect()
    } else if body.len() == 4 {
        vec![&body[..2], &body[2..]]
    } else {
        vec![body]
    };
    if parts.is_empty()
        || parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || p.len() > 2 || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    let n = |i: usize| {
        parts
            .get(i)
            .and_then(|p| p.parse::<i32>().ok())
            .unwrap_or(0)
    };
    let (h, m, s) = (n(0), n(1), n(2));
    if m > 59 || s > 59 {
        return None;
    }
    let secs = h * 3600 + m * 60 + s;
    (secs <= MAX_OFFSET).then_some(sign * secs)
}

/// A POSIX zone without DST rules: a name (three or more letters, or
/// `<...>`) and an offset *west* of UTC (`UTC+3` is three hours west).
fn posix(t: &str) -> Option<Zone> {
    let rest = if let Some(inner) = t.strip_prefix('<') {
        let end = inner.find('>')?;
        &inner[end + 1..]
    } else {
        let letters = t.bytes().take_while(|b| b.is_ascii_alphabetic()).count();
        if letters < 3 {
            return None;
        }
        &t[letters..]
    };
    let west = if rest.starts_with(['+', '-']) {
        iso_offset(rest)?
    } else if !rest.is_empty() && rest.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        iso_offset(&format!("+{rest}"))?
    } else {
        return None;
    };
    Some(Zone::Fixed(-west))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn local(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn settings_read_as_postgres_reads_them() {
        let (z, name) = Zone::for_setting("america/new_york").unwrap();
        assert_eq!(name, "America/New_York");
        assert!(matches!(z, Zone::Named(_)));
        assert_eq!(
            Zone::for_setting("+3").unwrap(),
            (Zone::Fixed(3 * 3600), "<+03>-03".to_string())
        );
        assert_eq!(
            Zone::for_setting("UTC+3").unwrap().0,
            Zone::Fixed(-3 * 3600)
        );
        assert_eq!(
            Zone::for_setting("<+05>-05").unwrap().0,
            Zone::Fixed(5 * 3600)
        );
        assert!(Zone::for_setting("PST").is_none());
        assert!(Zone::for_setting("Europe/Nowhere").is_none());
        assert_eq!(Zone::for_at_time_zone("+05:30"), Some(Zone::Fixed(-19800)));
        assert_eq!(Zone::for_at_time_zone("pst"), Some(Zone::Fixed(-8 * 3600)));
        assert_eq!(Zone::for_literal("+05:30"), Some(Zone::Fixed(19800)));
        assert_eq!(Zone::for_literal("-0800"), Some(Zone::Fixed(-8 * 3600)));
        assert_eq!(Zone::for_literal("Z"), Some(Zone::UTC));
    }

    #[test]
    fn gaps_and_folds_take_the_later_instant() {
        let (ny, _) = Zone::for_setting("America/New_York").unwrap();
        let utc = |m: i64| DateTime::from_timestamp_micros(m).unwrap().naive_utc();
        // Fold: 01:30 happens twice; the second (EST, -05) is taken.
        let f = ny.from_local(&local("2024-11-03 01:30:00")).unwrap();
        assert_eq!(utc(f), local("2024-11-03 06:30:00"));
        // Gap: 02:30 never happens; read with the offset before (-05).
        let g = ny.from_local(&local("2024-03-10 02:30:00")).unwrap();
        assert_eq!(utc(g), local("2024-03-10 07:30:00"));
        let (back, off) = ny.to_local(g).unwrap();
        assert_eq!((back, off), (local("2024-03-10 03:30:00"), -4 * 3600));
        // Local mean time before 1883.
        let old = NaiveDate::from_ymd_opt(1800, 1, 1)
            .unwrap()
            .and_hms_opt(12, 0, 0)
            .unwrap();
        let m = ny.from_local(&old).unwrap();
        assert_eq!(format_offset(ny.to_local(m).unwrap().1), "-04:56:02");
    }
}
