//! Window functions (`f(…) OVER (PARTITION BY … ORDER BY … frame)`): the
//! calls, and their values over one partition in window order, with
//! PostgreSQL's semantics. The batch engine and the stream executor both
//! compute a partition through [`compute_partition`].
//!
//! Frames: `ROWS` with offsets, and `RANGE` with `UNBOUNDED` and `CURRENT
//! ROW` bounds, where the current row stands for all its peers (rows equal
//! on the ORDER BY keys; without ORDER BY every row of the partition). The
//! default is `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW`.

use std::cmp::Ordering;

use super::agg::{create_accumulator, Accumulator, AggCall, AggKind};
use super::ExprResult;
use ebbflow_common::order::{compare_rows, OrderKey};
use ebbflow_common::{DataType, Datum, Row, ScalarValue};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum WindowFuncKind {
    RowNumber,
    Rank,
    DenseRank,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    /// An aggregate over the frame.
    Agg(AggKind),
}

impl WindowFuncKind {
    /// The function named `name`, unless it is an aggregate.
    pub fn from_name(name: &str) -> Option<WindowFuncKind> {
        Some(match name {
            "row_number" => WindowFuncKind::RowNumber,
            "rank" => WindowFuncKind::Rank,
            "dense_rank" => WindowFuncKind::DenseRank,
            "lag" => WindowFuncKind::Lag,
            "lead" => WindowFuncKind::Lead,
            "first_value" => WindowFuncKind::FirstValue,
            "last_value" => WindowFuncKind::LastValue,
            _ => return None,
        })
    }

    /// Whether the value depends on the frame (the others ignore it).
    pub fn uses_frame(self) -> bool {
        matches!(
            self,
            WindowFuncKind::FirstValue | WindowFuncKind::LastValue | WindowFuncKind::Agg(_)
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(u64),
    CurrentRow,
    Following(u64),
    UnboundedFollowing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Frame {
    /// `ROWS`; otherwise `RANGE`, whose `CURRENT ROW` is the row's peers.
    pub rows: bool,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl Frame {
    pub const DEFAULT: Frame = Frame {
        rows: false,
        start: FrameBound::UnboundedPreceding,
        end: FrameBound::CurrentRow,
    };
}

/// One window function call over the rows of its input.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WindowCall {
    pub kind: WindowFuncKind,
    /// Input columns of the arguments: the value (none for the ranking
    /// functions and `count(*)`), then `lag`/`lead`'s default.
    pub args: Vec<usize>,
    /// Type of the value argument.
    pub arg_type: Option<DataType>,
    /// `lag`/`lead`'s offset.
    pub offset: u64,
    pub return_type: DataType,
    pub frame: Frame,
}

impl WindowCall {
    fn agg_call(&self, kind: AggKind) -> AggCall {
        AggCall {
            kind,
            arg: self.args.first().copied(),
            arg_type: self.arg_type,
            return_type: self.return_type,
            distinct: false,
        }
    }
}

/// The values of `calls` for each row of one partition, `rows` being in
/// window order (sorted by `order`): one row of values per input row.
pub fn compute_partition(
    rows: &[&Row],
    order: &[OrderKey],
    calls: &[WindowCall],
) -> ExprResult<Vec<Row>> {
    let n = rows.len();
    // Peer groups: [peer_start[i], peer_end[i]) holds row i's peers.
    let mut peer_start = vec![0; n];
    let mut peer_end = vec![n; n];
    let mut group = vec![0u64; n];
    let mut s = 0;
    for i in 1..=n {
        if i == n || compare_rows(order, rows[i - 1], rows[i]) != Ordering::Equal {
            for j in s..i {
                peer_start[j] = s;
                peer_end[j] = i;
            }
            if i < n {
                group[i] = group[i - 1] + 1;
            }
            s = i;
        } else {
            group[i] = group[i - 1];
        }
    }
    let mut out: Vec<Row> = (0..n).map(|_| Vec::with_capacity(calls.len())).collect();
    for call in calls {
        let value = |i: usize| -> Datum { call.args.first().and_then(|&c| rows[i][c].clone()) };
        match call.kind {
            WindowFuncKind::RowNumber => {
                for (i, o) in out.iter_mut().enumerate() {
                    o.push(Some(ScalarValue::Int64(i as i64 + 1)));
                }
            }
            WindowFuncKind::Rank => {
                for (i, o) in out.iter_mut().enumerate() {
                    o.push(Some(ScalarValue::Int64(peer_start[i] as i64 + 1)));
                }
            }
            WindowFuncKind::DenseRank => {
                for (i, o) in out.iter_mut().enumerate() {
                    o.push(Some(ScalarValue::Int64(group[i] as i64 + 1)));
                }
            }
            WindowFuncKind::Lag | WindowFuncKind::Lead => {
                let off = usize::try_from(call.offset).unwrap_or(usize::MAX);
                for (i, o) in out.iter_mut().enumerate() {
                    let j = if call.kind == WindowFuncKind::Lag {
                        i.checked_sub(off)
                    } else {
                        i.checked_add(off).filter(|&j| j < n)
                    };
                    o.push(match j {
                        Some(j) => value(j),
                        None => call.args.get(1).and_then(|&c| rows[i][c].clone()),
                    });
                }
            }
            WindowFuncKind::FirstValue | WindowFuncKind::LastValue => {
                for (i, o) in out.iter_mut().enumerate() {
                    let (lo, hi) = frame_bounds(&call.frame, i, n, &peer_start, &peer_end);
                    o.push(if lo >= hi {
                        None
                    } else if call.kind == WindowFuncKind::FirstValue {
                        value(lo)
                    } else {
                        value(hi - 1)
                    });
                }
            }
            WindowFuncKind::Agg(kind) => {
                let agg = call.agg_call(kind);
                let mut acc: Box<dyn Accumulator> = create_accumulator(&agg);
                // The accumulator holds rows [cur_lo, cur_hi); frames only
                // move forward.
                let (mut cur_lo, mut cur_hi) = (0, 0);
                for (i, o) in out.iter_mut().enumerate() {
                    let (lo, hi) = frame_bounds(&call.frame, i, n, &peer_start, &peer_end);
                    let hi = hi.max(lo);
                    if lo >= cur_hi {
                        acc = create_accumulator(&agg);
                        (cur_lo, cur_hi) = (lo, lo);
                    }
                    while cur_lo < lo {
                        acc.update(false, &value(cur_lo))?;
                        cur_lo += 1;
                    }
                    while cur_hi < hi {
                        acc.update(true, &value(cur_hi))?;
                        cur_hi += 1;
                    }
                    o.push(acc.output()?);
                }
            }
        }
    }
    Ok(out)
}

/// Row `i`'s frame as `[lo, hi)` (empty when `lo >= hi`).
fn frame_bounds(
    frame: &Frame,
    i: usize,
    n: usize,
    peer_start: &[usize],
    peer_end: &[usize],
) -> (usize, usize) {
    let off = |k: u64| usize::try_from(k).unwrap_or(usize::MAX);
    let lo = match frame.start {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(k) => i.saturating_sub(off(k)),
        FrameBound::CurrentRow if frame.rows => i,
        FrameBound::CurrentRow => peer_start[i],
        FrameBound::Following(k) => i.saturating_add(off(k)).min(n),
        FrameBound::UnboundedFollowing => n,
    };
    let hi = match frame.end {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(k) => (i + 1).saturating_sub(off(k)),
        FrameBound::CurrentRow if frame.rows => i + 1,
        FrameBound::CurrentRow => peer_end[i],
        FrameBound::Following(k) => i.saturating_add(off(k)).saturating_add(1).min(n),
        FrameBound::UnboundedFollowing => n,
    };
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(vals: &[(i64, Option<i64>)]) -> Vec<Row> {
        vals.iter()
            .map(|(k, v)| vec![Some(ScalarValue::Int64(*k)), v.map(ScalarValue::Int64)])
            .collect()
    }

    fn call(kind: WindowFuncKind, args: Vec<usize>, frame: Frame) -> WindowCall {
        WindowCall {
            kind,
            args,
            arg_type: Some(DataType::Int64),
            offset: 1,
            return_type: DataType::Int64,
            frame,
        }
    }

    fn show(out: &[Row]) -> Vec<String> {
        out.iter()
            .map(|r| {
                r.iter()
                    .map(|d| d.as_ref().map_or(".".into(), |v| format!("{v:?}")))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn ranks_lag_and_running_sums_over_peers() {
        let data = rows(&[(1, Some(10)), (2, Some(20)), (2, None), (3, Some(5))]);
        let refs: Vec<&Row> = data.iter().collect();
        let order = [OrderKey {
            index: 0,
            desc: false,
            nulls_first: false,
        }];
        let d = Frame::DEFAULT;
        let calls = [
            call(WindowFuncKind::RowNumber, vec![], d),
            call(WindowFuncKind::Rank, vec![], d),
            call(WindowFuncKind::DenseRank, vec![], d),
            call(WindowFuncKind::Lag, vec![1], d),
            call(WindowFuncKind::Agg(AggKind::Sum), vec![1], d),
            call(
                WindowFuncKind::Agg(AggKind::Count),
                vec![1],
                Frame {
                    rows: true,
                    start: FrameBound::Preceding(1),
                    end: FrameBound::Following(1),
                },
            ),
            call(WindowFuncKind::LastValue, vec![1], d),
        ];
        let out = compute_partition(&refs, &order, &calls).expect("computed");
        let text = show(&out);
        assert_eq!(text.len(), 4);
        assert!(
            text[0].starts_with("Int64(1) Int64(1) Int64(1) . "),
            "{}",
            text[0]
        );
        assert!(
            text[1].starts_with("Int64(2) Int64(2) Int64(2) Int64(10) "),
            "{}",
            text[1]
        );
        assert!(
            text[2].starts_with("Int64(3) Int64(2) Int64(2) Int64(20) "),
            "{}",
            text[2]
        );
        assert!(
            text[3].starts_with("Int64(4) Int64(4) Int64(3) . "),
            "{}",
            text[3]
        );
        // Running sums include the peers; the ROWS count slides.
        let tail: Vec<&str> = text
            .iter()
            .map(|t| t.splitn(5, ' ').nth(4).unwrap_or(""))
            .collect();
        assert!(tail[0].starts_with("Int64(10) Int64(2)"), "{}", tail[0]);
        assert!(tail[1].starts_with("Int64(30) Int64(2)"), "{}", tail[1]);
        assert!(tail[2].starts_with("Int64(30) Int64(2)"), "{}", tail[2]);
        assert!(tail[3].starts_with("Int64(35) Int64(1)"), "{}", tail[3]);
    }
}
