//! Time windows as `TUMBLE` and `HOP` cut them, aligned as RisingWave
//! aligns them: windows start at multiples of the slide counted from the
//! Unix epoch (shifted by the optional offset), so a window never depends
//! on which rows came first. A tumbling window is a hopping one whose slide
//! is its size.

use chrono::{DateTime, NaiveDateTime};
use ebbflow_common::ErrorKind;

use super::{ExprError, ExprResult};
use ebbflow_common::Interval;

/// A window shape, in microseconds: every `slide` a window of `size`
/// starts; windows start at `offset` modulo `slide`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TimeWindow {
    pub slide: i64,
    pub size: i64,
    pub offset: i64,
}

fn invalid(message: String) -> ExprError {
    ExprError::new(ErrorKind::InvalidParameterValue, message)
}

/// A fixed length of time: an interval without months (whose length in
/// time depends on the month), a day being 24 hours.
fn micros(what: &str, i: &Interval) -> ExprResult<i64> {
    if i.months != 0 {
        return Err(invalid(format!(
            "{what} must not contain months or years: a window is a fixed length of time"
        )));
    }
    i64::try_from(i.total_micros()).map_err(|_| invalid(format!("{what} is out of range")))
}

fn positive(what: &str, i: &Interval) -> ExprResult<i64> {
    let m = micros(what, i)?;
    if m <= 0 {
        return Err(invalid(format!("{what} must be positive")));
    }
    Ok(m)
}

impl TimeWindow {
    /// `TUMBLE(…, size [, offset])`.
    pub fn tumble(size: &Interval, offset: Option<&Interval>) -> ExprResult<TimeWindow> {
        let size = positive("window size", size)?;
        Ok(TimeWindow {
            slide: size,
            size,
            offset: offset.map_or(Ok(0), |o| micros("window offset", o))?,
        })
    }

    /// `HOP(…, slide, size [, offset])`: the size must be a whole number
    /// of slides, so every time is in the same number of windows.
    pub fn hop(slide: &Interval, size: &Interval, offset: Option<&Interval>) -> ExprResult<Self> {
        let slide = positive("window slide", slide)?;
        let size = positive("window size", size)?;
        if size % slide != 0 {
            return Err(invalid(
                "window size must be a multiple of the window slide".to_string(),
            ));
        }
        Ok(TimeWindow {
            slide,
            size,
            offset: offset.map_or(Ok(0), |o| micros("window offset", o))?,
        })
    }

    /// How many windows hold each time.
    pub fn count(&self) -> i64 {
        self.size / self.slide
    }

    /// The start of the latest window holding `t`, or `None` past the
    /// range of timestamps.
    pub fn last_start(&self, t: i64) -> Option<i64> {
        let rem = (t as i128 - self.offset as i128).rem_euclid(self.slide as i128);
        i64::try_from(t as i128 - rem).ok()
    }

    /// The start and end of the `k`-th window holding `t` (0 the latest),
    /// in microseconds; `None` past the range of `i64`.
    pub fn bounds(&self, t: i64, k: i64) -> Option<(i64, i64)> {
        let start = self
            .last_start(t)?
            .checked_sub(k.checked_mul(self.slide)?)?;
        Some((start, start.checked_add(self.size)?))
    }

    /// [`Self::bounds`] as timestamps; `None` when either falls outside
    /// the range of timestamps.
    pub fn window(&self, t: i64, k: i64) -> Option<(NaiveDateTime, NaiveDateTime)> {
        let (start, end) = self.bounds(t, k)?;
        Some((to_timestamp(start)?, to_timestamp(end)?))
    }
}

pub fn to_micros(t: NaiveDateTime) -> i64 {
    t.and_utc().timestamp_micros()
}

fn to_timestamp(micros: i64) -> Option<NaiveDateTime> {
    DateTime::from_timestamp_micros(micros).map(|t| t.naive_utc())
}

/// `tumble_start(t, size [, offset])`: the start of the tumbling window
/// holding `t`.
pub fn tumble_start(
    t: NaiveDateTime,
    size: &Interval,
    offset: Option<&Interval>,
) -> ExprResult<NaiveDateTime> {
    let w = TimeWindow::tumble(size, offset)?;
    w.window(to_micros(t), 0)
        .map(|(start, _)| start)
        .ok_or_else(|| ExprError::new(ErrorKind::DatetimeFieldOverflow, "timestamp out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").expect("timestamp")
    }

    fn secs(n: i64) -> Interval {
        Interval::new(0, 0, n * 1_000_000)
    }

    #[test]
    fn tumble_aligns_to_the_epoch_and_offset() {
        let t = ts("2023-11-14 22:13:27");
        assert_eq!(
            tumble_start(t, &secs(10), None).expect("tumble"),
            ts("2023-11-14 22:13:20")
        );
        assert_eq!(
            tumble_start(t, &secs(10), Some(&secs(3))).expect("tumble"),
            ts("2023-11-14 22:13:23")
        );
        assert_eq!(
            tumble_start(t, &Interval::new(0, 1, 0), None).expect("day"),
            ts("2023-11-14 00:00:00")
        );
        // Before the epoch windows still start at multiples of the size.
        assert_eq!(
            tumble_start(ts("1969-12-31 23:59:55"), &secs(10), None).expect("tumble"),
            ts("1969-12-31 23:59:50")
        );
    }

    #[test]
    fn hop_windows_hold_the_time() {
        let w = TimeWindow::hop(&secs(2), &secs(10), None).expect("hop");
        assert_eq!(w.count(), 5);
        let t = ts("2023-11-14 22:13:27");
        let starts: Vec<_> = (0..w.count())
            .map(|k| w.window(to_micros(t), k).expect("window").0)
            .collect();
        assert_eq!(
            starts,
            [
                ts("2023-11-14 22:13:26"),
                ts("2023-11-14 22:13:24"),
                ts("2023-11-14 22:13:22"),
                ts("2023-11-14 22:13:20"),
                ts("2023-11-14 22:13:18"),
            ]
        );
        for k in 0..w.count() {
            let (s, e) = w.window(to_micros(t), k).expect("window");
            assert!(s <= t && t < e);
        }
    }

    #[test]
    fn bad_shapes_are_22023() {
        let month = Interval::new(1, 0, 0);
        for e in [
            TimeWindow::tumble(&secs(0), None),
            TimeWindow::tumble(&secs(-5), None),
            TimeWindow::tumble(&month, None),
            TimeWindow::hop(&secs(3), &secs(10), None),
            TimeWindow::hop(&secs(0), &secs(10), None),
        ] {
            assert_eq!(
                e.expect_err("refused").kind(),
                ErrorKind::InvalidParameterValue
            );
        }
    }
}
