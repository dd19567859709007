//! `to_char(timestamp, text)` with PostgreSQL's template patterns
//! (`formatting.c`): the template is cut into patterns and literal text
//! the way PostgreSQL's parser does it, then each pattern is formatted from
//! the timestamp.
//!
//! Cutting, as PostgreSQL does: at each position an optional prefix (`FM`
//! fill mode, `TM` translation mode; `fm`, `tm`), then the first pattern of
//! [`PATTERNS`] (in PostgreSQL's order: longest first among those sharing a
//! first letter, case-sensitive, so `Month`, `MONTH` and `month` differ and
//! `Yyyy` is `Y` then `yyy`) that the text starts with, then an optional
//! suffix (`TH`/`th` ordinal, `SP` ignored). Anything else is copied:
//! double-quoted text as is (a backslash in it quotes the next character),
//! `\"` outside quotes as `"`, every other character unchanged.
//!
//! Years follow PostgreSQL: `YYYY` of 44 BC is `0044` (with `BC` to say
//! so), `CC` of 1 BC is `-01`. A timestamp has no time zone, so `TZ`/`tz`
//! print nothing and `TZH`, `TZM`, `OF` a zero offset; a `timestamptz`
//! prints its zone's abbreviation and offset. Names are English
//! (the C locale; `TM` only drops the padding).

use std::cell::RefCell;
use std::rc::Rc;

use chrono::{Datelike, NaiveDateTime, Timelike};

use super::str_cache::StrCache;

/// A pattern's output, with the case of letters where it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    /// `AM`/`PM` (upper, dots): both spellings print the time's own.
    Meridiem(Letters, bool),
    /// `AD`/`BC` (upper, dots).
    Era(Letters, bool),
    MonthName(Letters),
    MonthAbbr(Letters),
    DayName(Letters),
    DayAbbr(Letters),
    /// `RM`/`rm`: the month in Roman numerals.
    RomanMonth(bool),
    /// Time-zone name (`TZ`, `tz`): none for a timestamp.
    /// Upper case (`TZ`) or lower (`tz`).
    TzName(bool),
    Tzh,
    Tzm,
    Of,
    /// `FX`: a `to_timestamp` option; prints nothing.
    Fx,
    Num(Num),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Letters {
    Upper,
    Title,
    Lower,
}

/// The numeric patterns (these take `TH`/`th`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    Hh12,
    Hh24,
    Mi,
    Ss,
    /// `FF1`..`FF6`, `MS` (= FF3), `US` (= FF6): digits of the fraction.
    Frac(u32),
    /// Seconds past midnight (`SSSS`, `SSSSS`).
    Ssss,
    Mm,
    Ddd,
    Iddd,
    Dd,
    D,
    Id,
    Ww,
    Iw,
    Q,
    Cc,
    YCommaYyy,
    /// The last n digits of the year (4 = all of it), Gregorian or ISO.
    Year(u32, bool),
    J,
    W,
}

use Key::*;
use Letters::*;

/// PostgreSQL's `DCH_keywords`, in its order (the first that matches wins).
const PATTERNS: &[(&str, Key)] = &[
    ("A.D.", Era(Upper, true)),
    ("A.M.", Meridiem(Upper, true)),
    ("AD", Era(Upper, false)),
    ("AM", Meridiem(Upper, false)),
    ("B.C.", Era(Upper, true)),
    ("BC", Era(Upper, false)),
    ("CC", Num(Num::Cc)),
    ("DAY", DayName(Upper)),
    ("DDD", Num(Num::Ddd)),
    ("DD", Num(Num::Dd)),
    ("DY", DayAbbr(Upper)),
    ("Day", DayName(Title)),
    ("Dy", DayAbbr(Title)),
    ("D", Num(Num::D)),
    ("FF1", Num(Num::Frac(1))),
    ("FF2", Num(Num::Frac(2))),
    ("FF3", Num(Num::Frac(3))),
    ("FF4", Num(Num::Frac(4))),
    ("FF5", Num(Num::Frac(5))),
    ("FF6", Num(Num::Frac(6))),
    ("FX", Fx),
    ("HH24", Num(Num::Hh24)),
    ("HH12", Num(Num::Hh12)),
    ("HH", Num(Num::Hh12)),
    ("IDDD", Num(Num::Iddd)),
    ("ID", Num(Num::Id)),
    ("IW", Num(Num::Iw)),
    ("IYYY", Num(Num::Year(4, true))),
    ("IYY", Num(Num::Year(3, true))),
    ("IY", Num(Num::Year(2, true))),
    ("I", Num(Num::Year(1, true))),
    ("J", Num(Num::J)),
    ("MI", Num(Num::Mi)),
    ("MM", Num(Num::Mm)),
    ("MONTH", MonthName(Upper)),
    ("MON", MonthAbbr(Upper)),
    ("MS", Num(Num::Frac(3))),
    ("Month", MonthName(Title)),
    ("Mon", MonthAbbr(Title)),
    ("OF", Of),
    ("P.M.", Meridiem(Upper, true)),
    ("PM", Meridiem(Upper, false)),
    ("Q", Num(Num::Q)),
    ("RM", RomanMonth(true)),
    ("SSSSS", Num(Num::Ssss)),
    ("SSSS", Num(Num::Ssss)),
    ("SS", Num(Num::Ss)),
    ("TZH", Tzh),
    ("TZM", Tzm),
    ("TZ", TzName(true)),
    ("US", Num(Num::Frac(6))),
    ("WW", Num(Num::Ww)),
    ("W", Num(Num::W)),
    ("Y,YYY", Num(Num::YCommaYyy)),
    ("YYYY", Num(Num::Year(4, false))),
    ("YYY", Num(Num::Year(3, false))),
    ("YY", Num(Num::Year(2, false))),
    ("Y", Num(Num::Year(1, false))),
    ("a.d.", Era(Lower, true)),
    ("a.m.", Meridiem(Lower, true)),
    ("ad", Era(Lower, false)),
    ("am", Meridiem(Lower, false)),
    ("b.c.", Era(Lower, true)),
    ("bc", Era(Lower, false)),
    ("cc", Num(Num::Cc)),
    ("day", DayName(Lower)),
    ("ddd", Num(Num::Ddd)),
    ("dd", Num(Num::Dd)),
    ("dy", DayAbbr(Lower)),
    ("d", Num(Num::D)),
    ("ff1", Num(Num::Frac(1))),
    ("ff2", Num(Num::Frac(2))),
    ("ff3", Num(Num::Frac(3))),
    ("ff4", Num(Num::Frac(4))),
    ("ff5", Num(Num::Frac(5))),
    ("ff6", Num(Num::Frac(6))),
    ("fx", Fx),
    ("hh24", Num(Num::Hh24)),
    ("hh12", Num(Num::Hh12)),
    ("hh", Num(Num::Hh12)),
    ("iddd", Num(Num::Iddd)),
    ("id", Num(Num::Id)),
    ("iw", Num(Num::Iw)),
    ("iyyy", Num(Num::Year(4, true))),
    ("iyy", Num(Num::Year(3, true))),
    ("iy", Num(Num::Year(2, true))),
    ("i", Num(Num::Year(1, true))),
    ("j", Num(Num::J)),
    ("mi", Num(Num::Mi)),
    ("mm", Num(Num::Mm)),
    ("month", MonthName(Lower)),
    ("mon", MonthAbbr(Lower)),
    ("ms", Num(Num::Frac(3))),
    ("of", Of),
    ("p.m.", Meridiem(Lower, true)),
    ("pm", Meridiem(Lower, false)),
    ("q", Num(Num::Q)),
    ("rm", RomanMonth(false)),
    ("sssss", Num(Num::Ssss)),
    ("ssss", Num(Num::Ssss)),
    ("ss", Num(Num::Ss)),
    ("tzh", Tzh),
    ("tzm", Tzm),
    ("tz", TzName(false)),
    ("us", Num(Num::Frac(6))),
    ("ww", Num(Num::Ww)),
    ("w", Num(Num::W)),
    ("y,yyy", Num(Num::YCommaYyy)),
    ("yyyy", Num(Num::Year(4, false))),
    ("yyy", Num(Num::Year(3, false))),
    ("yy", Num(Num::Year(2, false))),
    ("y", Num(Num::Year(1, false))),
];

/// One piece of a cut template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    Text(String),
    Pattern {
        key: Key,
        /// `FM`: no padding.
        fill: bool,
        /// `TM`: localized names, unpadded.
        tm: bool,
        /// `TH` (upper) or `th` (lower): an ordinal suffix on a number.
        th: Option<bool>,
    },
}

thread_local! {
    static CACHE: RefCell<StrCache<[Node]>> = RefCell::new(StrCache::default());
}

/// [`parse`], cut once per thread and template rather than per row.
fn parse_cached(template: &str) -> Rc<[Node]> {
    CACHE.with(|c| {
        c.borrow_mut()
            .get_or_insert_with(template, || parse(template).into())
    })
}

/// Cuts a template as PostgreSQL's `parse_format` does.
fn parse(template: &str) -> Vec<Node> {
    let mut out = Vec::new();
    let mut rest = template;
    let push_char = |out: &mut Vec<Node>, c: char| match out.last_mut() {
        Some(Node::Text(t)) => t.push(c),
        _ => out.push(Node::Text(c.to_string())),
    };
    while !rest.is_empty() {
        let (mut fill, mut tm) = (false, false);
        for (p, is_fill) in [("FM", true), ("fm", true), ("TM", false), ("tm", false)] {
            if let Some(r) = rest.strip_prefix(p) {
                if is_fill {
                    fill = true;
                } else {
                    tm = true;
                }
                rest = r;
                break;
            }
        }
        if rest.is_empty() {
            break;
        }
        if let Some((name, key)) = PATTERNS.iter().find(|(n, _)| rest.starts_with(n)) {
            rest = &rest[name.len()..];
            let mut th = None;
            for (s, upper) in [("TH", Some(true)), ("th", Some(false)), ("SP", None)] {
                if let Some(r) = rest.strip_prefix(s) {
                    th = upper;
                    rest = r;
                    break;
                }
            }
            out.push(Node::Pattern {
                key: *key,
                fill,
                tm,
                th,
            });
            continue;
        }
        let mut chars = rest.chars();
        let Some(c) = chars.next() else { break };
        if c == '"' {
            // Quoted text up to the closing quote (or the end).
            loop {
                match chars.next() {
                    None | Some('"') => break,
                    Some('\\') => {
                        let after = chars.clone().next();
                        match after {
                            Some(q) => {
                                chars.next();
                                push_char(&mut out, q);
                            }
                            None => push_char(&mut out, '\\'),
                        }
                    }
                    Some(x) => push_char(&mut out, x),
                }
            }
        } else if c == '\\' && chars.clone().next() == Some('"') {
            chars.next();
            push_char(&mut out, '"');
        } else {
            push_char(&mut out, c);
        }
        rest = chars.as_str();
    }
    out
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ROMAN: [&str; 12] = [
    "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
];

fn letters(s: &str, case: Letters) -> String {
    match case {
        Upper => s.to_ascii_uppercase(),
        Lower => s.to_ascii_lowercase(),
        Title => s.to_string(),
    }
}

/// `%0*d`: zero-padded to `width` unless fill mode.
fn padded(v: i64, width: usize, fill: bool) -> String {
    if fill {
        v.to_string()
    } else {
        format!("{v:0width$}")
    }
}

/// PostgreSQL's `get_th`: the ordinal suffix of a number's last digit
/// (`th` for 11-13).
fn ordinal(digits: &str, upper: bool) -> &'static str {
    let b = digits.as_bytes();
    let last = b.last().copied().unwrap_or(b'0');
    let teen = b.len() > 1 && b[b.len() - 2] == b'1';
    let s = match last {
        b'1' if !teen => "st",
        b'2' if !teen => "nd",
        b'3' if !teen => "rd",
        _ => "th",
    };
    if upper {
        match s {
            "st" => "ST",
            "nd" => "ND",
            "rd" => "RD",
            _ => "TH",
        }
    } else {
        s
    }
}

/// The year as PostgreSQL prints it: 1 BC is 1 (chrono's 0).
fn adjust_year(astronomical: i32) -> i64 {
    let y = i64::from(astronomical);
    if y <= 0 {
        1 - y
    } else {
        y
    }
}

fn number(n: Num, ts: &NaiveDateTime, fill: bool) -> String {
    let (date, hour) = (ts.date(), i64::from(ts.hour()));
    let micros = i64::from(ts.nanosecond() / 1000 % 1_000_000);
    match n {
        Num::Hh12 => padded(if hour % 12 == 0 { 12 } else { hour % 12 }, 2, fill),
        Num::Hh24 => padded(hour, 2, fill),
        Num::Mi => padded(i64::from(ts.minute()), 2, fill),
        Num::Ss => padded(i64::from(ts.second()), 2, fill),
        // Fill mode does not shorten fractions in PostgreSQL.
        Num::Frac(d) => padded(micros / 10i64.pow(6 - d), d as usize, false),
        Num::Ssss => i64::from(ts.num_seconds_from_midnight()).to_string(),
        Num::Mm => padded(i64::from(date.month()), 2, fill),
        Num::Ddd => padded(i64::from(date.ordinal()), 3, fill),
        Num::Iddd => {
            let w = date.iso_week();
            let day =
                (i64::from(w.week()) - 1) * 7 + i64::from(date.weekday().number_from_monday());
            padded(day, 3, fill)
        }
        Num::Dd => padded(i64::from(date.day()), 2, fill),
        Num::D => (date.weekday().num_days_from_sunday() + 1).to_string(),
        Num::Id => date.weekday().number_from_monday().to_string(),
        Num::Ww => padded((i64::from(date.ordinal()) - 1) / 7 + 1, 2, fill),
        Num::Iw => padded(i64::from(date.iso_week().week()), 2, fill),
        Num::Q => ((date.month() - 1) / 3 + 1).to_string(),
        Num::Cc => {
            let y = i64::from(date.year());
            // C division truncates toward zero, as `/` here.
            let c = if y > 0 {
                (y - 1) / 100 + 1
            } else {
                y / 100 - 1
            };
            if (-99..=99).contains(&c) {
                padded(c, if c >= 0 { 2 } else { 3 }, fill)
            } else {
                c.to_string()
            }
        }
        Num::YCommaYyy => {
            let y = adjust_year(date.year());
            format!("{},{:03}", y / 1000, y % 1000)
        }
        Num::Year(digits, iso) => {
            let y = adjust_year(if iso {
                date.iso_week().year()
            } else {
                date.year()
            });
            match digits {
                4 => padded(y, 4, fill),
                1 => (y % 10).to_string(),
                d => padded(y % 10i64.pow(d), d as usize, fill),
            }
        }
        // Julian day: 0001-01-01 (proleptic Gregorian) is day 1721426.
        Num::J => (i64::from(date.num_days_from_ce()) + 1_721_425).to_string(),
        Num::W => ((date.day() - 1) / 7 + 1).to_string(),
    }
}

/// A name, space-padded to 9 unless fill or translation mode.
fn name(s: &str, case: Letters, pad: bool) -> String {
    let s = letters(s, case);
    if pad {
        format!("{s:<9}")
    } else {
        s
    }
}

/// `to_char(ts, template)`; `None` for an empty template, as PostgreSQL.
pub fn to_char(ts: NaiveDateTime, template: &str) -> Option<String> {
    to_char_in(ts, None, template)
}

/// `to_char` of a local time with its zone: the offset in effect
/// (seconds east) and the zone's abbreviation (`TZ`, `TZH`, `TZM`, `OF`).
pub fn to_char_in(ts: NaiveDateTime, zone: Option<(i32, &str)>, template: &str) -> Option<String> {
    if template.is_empty() {
        return None;
    }
    let mut out = String::new();
    let date = ts.date();
    let month = date.month0() as usize;
    let wday = date.weekday().num_days_from_sunday() as usize;
    for node in parse_cached(template).iter() {
        let (key, fill, tm, th) = match node {
            Node::Text(t) => {
                out.push_str(t);
                continue;
            }
            Node::Pattern { key, fill, tm, th } => (*key, *fill, *tm, *th),
        };
        let pad = !fill && !tm;
        match key {
            Meridiem(case, dots) => {
                let s = match (ts.hour() >= 12, dots) {
                    (false, false) => "AM",
                    (false, true) => "A.M.",
                    (true, false) => "PM",
                    (true, true) => "P.M.",
                };
                out.push_str(&letters(s, case));
            }
            Era(case, dots) => {
                let s = match (date.year() <= 0, dots) {
                    (false, false) => "AD",
                    (false, true) => "A.D.",
                    (true, false) => "BC",
                    (true, true) => "B.C.",
                };
                out.push_str(&letters(s, case));
            }
            MonthName(case) => out.push_str(&name(MONTHS[month], case, pad)),
            MonthAbbr(case) => out.push_str(&letters(&MONTHS[month][..3], case)),
            DayName(case) => out.push_str(&name(DAYS[wday], case, pad)),
            DayAbbr(case) => out.push_str(&letters(&DAYS[wday][..3], case)),
            RomanMonth(upper) => {
                let r = ROMAN[month];
                let r = if upper {
                    r.to_string()
                } else {
                    r.to_ascii_lowercase()
                };
                out.push_str(&if fill { r } else { format!("{r:<4}") });
            }
            Fx => {}
            TzName(upper) => {
                if let Some((_, abbr)) = zone {
                    out.push_str(&if upper {
                        abbr.to_uppercase()
                    } else {
                        abbr.to_lowercase()
                    });
                }
            }
            Tzh | Tzm | Of => {
                let off = zone.map_or(0, |(o, _)| o);
                let sign = if off < 0 { '-' } else { '+' };
                let (h, m) = (off.unsigned_abs() / 3600, off.unsigned_abs() / 60 % 60);
                match key {
                    Tzh => out.push_str(&format!("{sign}{h:02}")),
                    Tzm => out.push_str(&format!("{m:02}")),
                    _ if fill => out.push_str(&format!("{sign}{h}")),
                    _ => out.push_str(&format!("{sign}{h:02}")),
                }
                if key == Of && m != 0 {
                    out.push_str(&format!(":{m:02}"));
                }
            }
            Num(n) => {
                let digits = number(n, &ts, fill);
                out.push_str(&digits);
                if let Some(upper) = th {
                    out.push_str(ordinal(&digits, upper));
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;

    fn ts(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, us: u32) -> NaiveDateTime {
        NaiveDate::from_ymd_opt(y, mo, d)
            .and_then(|d| d.and_hms_micro_opt(h, mi, s, us))
            .expect("valid test timestamp")
    }

    fn f(t: NaiveDateTime, template: &str) -> String {
        to_char(t, template).unwrap_or_else(|| "<null>".into())
    }

    #[test]
    fn nexmark_patterns() {
        let t = ts(2023, 11, 14, 22, 13, 27, 123_456);
        assert_eq!(f(t, "YYYY-MM-DD"), "2023-11-14");
        assert_eq!(f(t, "HH:MI"), "10:13");
        assert_eq!(f(t, "HH24:MI:SS.MS.US"), "22:13:27.123.123456");
        assert_eq!(f(t, "yyyy"), "2023");
    }

    #[test]
    fn names_case_and_padding() {
        let t = ts(2023, 5, 7, 9, 5, 0, 0); // a Sunday
        assert_eq!(f(t, "Month|MONTH|month"), "May      |MAY      |may      ");
        assert_eq!(f(t, "FMMonth|Mon|MON|mon"), "May|May|MAY|may");
        assert_eq!(f(t, "Day|DY|Dy|dy|FMday"), "Sunday   |SUN|Sun|sun|sunday");
        assert_eq!(f(t, "AM am A.M. p.m. PM"), "AM am A.M. a.m. AM");
        assert_eq!(f(t, "D ID"), "1 7");
        assert_eq!(f(t, "RM|FMrm"), "V   |v");
    }

    #[test]
    fn numbers_fill_and_ordinals() {
        let t = ts(2023, 1, 2, 0, 7, 3, 0);
        assert_eq!(f(t, "HH|HH12|FMHH24|FMMI|SS"), "12|12|0|7|03");
        assert_eq!(f(t, "DDTH ddth FMDDth"), "02ND 02nd 2nd");
        assert_eq!(f(t, "DDD IDDD IW WW W Q J"), "002 001 01 01 1 1 2459947");
        assert_eq!(f(ts(2023, 1, 11, 0, 0, 0, 0), "FMDDth"), "11th");
        assert_eq!(f(t, "SSSS"), "423");
        assert_eq!(f(t, "CCth Y,YYY YYY YY Y"), "21st 2,023 023 23 3");
    }

    #[test]
    fn iso_year_and_bc() {
        // 2021-01-01 is in ISO week 53 of 2020.
        let t = ts(2021, 1, 1, 0, 0, 0, 0);
        assert_eq!(f(t, "IYYY-IW-ID IYY IY I"), "2020-53-5 020 20 0");
        // chrono year -43 is 44 BC.
        let bc = ts(-43, 3, 15, 0, 0, 0, 0);
        assert_eq!(f(bc, "YYYY BC B.C. ad CC"), "0044 BC B.C. bc -01");
        assert_eq!(
            f(ts(987, 1, 1, 0, 0, 0, 0), "YYYY FMYYYY Y,YYY"),
            "0987 987 0,987"
        );
    }

    #[test]
    fn literals_and_escapes() {
        let t = ts(2023, 11, 14, 22, 13, 27, 0);
        assert_eq!(f(t, "\"YYYY is\" YYYY"), "YYYY is 2023");
        assert_eq!(f(t, "\"a\\\"b\""), "a\"b");
        assert_eq!(f(t, "\\\"YYYY"), "\"2023");
        assert_eq!(f(t, "\\YYYY"), "\\2023");
        assert_eq!(f(t, "Yyyy"), "3023");
        assert_eq!(f(t, "xyz!"), "x3z!");
        assert_eq!(f(t, "FM"), "");
        assert_eq!(f(t, ""), "<null>");
        assert_eq!(f(t, "TZ|tz|TZH:TZM|OF"), "||+00:00|+00");
    }
}
