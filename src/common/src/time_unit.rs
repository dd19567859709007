//! The units of dates, times and intervals, by any of PostgreSQL's
//! spellings: shared by interval input (`'2 hours'`) and the date/time
//! functions (`date_trunc`, `extract`).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    Epoch,
    Dow,
    IsoDow,
    Doy,
    IsoYear,
    Julian,
}

impl TimeUnit {
    /// The unit a lower-case word names.
    pub fn from_word(w: &str) -> Option<TimeUnit> {
        use TimeUnit::*;
        Some(match w {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => Microseconds,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => Milliseconds,
            "second" | "seconds" | "s" | "sec" | "secs" => Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Hour,
            "day" | "days" | "d" => Day,
            "week" | "weeks" | "w" => Week,
            "month" | "months" | "mon" | "mons" => Month,
            "quarter" | "qtr" => Quarter,
            "year" | "years" | "y" | "yr" | "yrs" => Year,
            "decade" | "decades" | "dec" | "decs" => Decade,
            "century" | "centuries" | "c" | "cent" => Century,
            "millennium" | "millennia" | "mil" | "mils" => Millennium,
            "epoch" => Epoch,
            "dow" => Dow,
            "isodow" => IsoDow,
            "doy" => Doy,
            "isoyear" => IsoYear,
            "julian" | "j" => Julian,
            _ => return None,
        })
    }
}
