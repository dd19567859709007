//! Which expressions carry a watermark: an expression that never decreases
//! when one input column grows (the others fixed to constants) turns a
//! watermark on that column into one on its own value — `time`,
//! `time - INTERVAL '5' SECOND`, `tumble_start(time, …)`, `date_trunc('hour',
//! time)`, `time::date`.

use super::{Expr, Func};
use ebbflow_common::{DataType, ScalarValue};

impl Expr {
    /// The input column this expression is non-decreasing in, when it is
    /// one of the forms above (every other operand a constant).
    pub fn monotone_input(&self) -> Option<usize> {
        let lit = |e: &Expr| matches!(e, Expr::Literal { .. });
        match self {
            Expr::InputRef { index, .. } => Some(*index),
            Expr::Func { func, args, .. } => match (func, args.as_slice()) {
                (Func::TumbleStart, [x, rest @ ..]) if rest.iter().all(lit) => x.monotone_input(),
                (Func::Add, [x, c]) | (Func::Add, [c, x]) if lit(c) => x.monotone_input(),
                (Func::Sub, [x, c]) if lit(c) => x.monotone_input(),
                (Func::DateTrunc, [unit, x]) if lit(unit) => x.monotone_input(),
                // The same over `timestamptz`, in a fixed zone.
                (Func::Add, [x, c, z]) | (Func::Sub, [x, c, z]) if lit(c) && lit(z) => {
                    x.monotone_input()
                }
                (Func::DateTrunc, [unit, x, z]) if lit(unit) && lit(z) => x.monotone_input(),
                _ => None,
            },
            Expr::Cast { expr, ty } => {
                let widening = matches!(
                    (expr.return_type(), *ty),
                    (DataType::Date, DataType::Timestamp)
                        | (DataType::Timestamp, DataType::Date)
                        | (DataType::Int16, DataType::Int32 | DataType::Int64)
                        | (DataType::Int32, DataType::Int64)
                );
                if widening || expr.return_type() == *ty {
                    expr.monotone_input()
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// This expression's value where its monotone input column is
    /// `value`: the watermark it carries. `None` if it carries none (not
    /// monotone, or the value fails or is NULL).
    pub fn at_watermark(&self, column: usize, value: &ScalarValue) -> Option<ScalarValue> {
        let input = self.monotone_input()?;
        if input != column {
            return None;
        }
        let mut row = vec![None; column + 1];
        row[column] = Some(value.clone());
        self.eval(&row).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build_func;
    use ebbflow_common::Interval;

    fn ts(s: &str) -> ScalarValue {
        ScalarValue::Timestamp(
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").expect("timestamp"),
        )
    }

    fn interval(secs: i64) -> Expr {
        Expr::literal(
            Some(ScalarValue::Interval(Interval::new(0, 0, secs * 1_000_000))),
            DataType::Interval,
        )
    }

    #[test]
    fn shifted_and_windowed_times_carry_the_watermark() {
        let t = Expr::input_ref(1, DataType::Timestamp);
        let shifted = build_func(Func::Sub, vec![t.clone(), interval(5)]).expect("sub");
        assert_eq!(shifted.monotone_input(), Some(1));
        assert_eq!(
            shifted.at_watermark(1, &ts("2026-01-01 00:00:10")),
            Some(ts("2026-01-01 00:00:05"))
        );
        let start = build_func(Func::TumbleStart, vec![t.clone(), interval(60)]).expect("tumble");
        assert_eq!(
            start.at_watermark(1, &ts("2026-01-01 00:01:10")),
            Some(ts("2026-01-01 00:01:00"))
        );
        assert_eq!(start.at_watermark(0, &ts("2026-01-01 00:01:10")), None);
        let n = Expr::input_ref(0, DataType::Int64);
        let ten = Expr::literal(Some(ScalarValue::Int64(10)), DataType::Int64);
        let negated = build_func(Func::Sub, vec![ten, n]).expect("sub");
        assert_eq!(negated.monotone_input(), None);
        let _ = t;
    }
}
