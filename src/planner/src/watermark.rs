//! Which columns of a logical plan carry a watermark, known when the plan
//! is made (the executors derive the values at run time, by the same
//! rules; see "Watermarks" in `stream::message`), where `EMIT ON
//! WINDOW CLOSE` applies, and whether a plan's stream is append-only.

use super::logical::{JoinKind, LogicalPlan};
use super::PlanError;
use ebbflow_meta::catalog::RelationKind;

impl LogicalPlan {
    /// Whether the plan's stream only ever inserts: a source, an `APPEND
    /// ONLY` table or constants, through operators that never retract
    /// what they emitted (projections, filters, time windows, `unnest`,
    /// `UNION ALL`, inner joins of two append-only inputs). An aggregation
    /// over such a stream keeps `min`/`max` as one value.
    pub fn append_only(&self) -> bool {
        match self {
            LogicalPlan::Scan { relation } => {
                relation.kind == RelationKind::Source
                    || (relation.kind == RelationKind::Table && relation.append_only)
            }
            LogicalPlan::Values { .. } => true,
            LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Unnest { input, .. }
            | LogicalPlan::HopWindow { input, .. } => input.append_only(),
            LogicalPlan::Union { inputs } => inputs.iter().all(LogicalPlan::append_only),
            LogicalPlan::Join {
                left, right, kind, ..
            } => *kind == JoinKind::Inner && left.append_only() && right.append_only(),
            _ => false,
        }
    }

    /// The output columns with a watermark: a relation's `WATERMARK FOR`
    /// column, carried through filters, monotone projections (`time -
    /// INTERVAL …`, `tumble_start`), time windows (to `window_start` and
    /// `window_end`), grouping keys, and equi-join keys with a watermark on
    /// both sides (on the sides never padded with NULLs).
    pub fn watermark_columns(&self) -> Vec<usize> {
        match self {
            LogicalPlan::Scan { relation } => relation.watermark.iter().map(|w| w.column).collect(),
            LogicalPlan::Filter { input, .. } => input.watermark_columns(),
            LogicalPlan::Project { input, exprs, .. } => {
                let inner = input.watermark_columns();
                (0..exprs.len())
                    .filter(|&i| {
                        exprs[i]
                            .monotone_input()
                            .is_some_and(|c| inner.contains(&c))
                    })
                    .collect()
            }
            LogicalPlan::HopWindow {
                input, time_col, ..
            } => {
                let mut cols = input.watermark_columns();
                if time_col.monotone_input().is_some_and(|c| cols.contains(&c)) {
                    let n = input.fields().len();
                    cols.extend([n, n + 1]);
                }
                cols
            }
            LogicalPlan::Aggregate {
                input, group_by, ..
            } => {
                let inner = input.watermark_columns();
                (0..group_by.len())
                    .filter(|&k| inner.contains(&group_by[k]))
                    .collect()
            }
            LogicalPlan::Join {
                left,
                right,
                kind,
                on,
                ..
            } if !kind.left_only() => {
                let (l, r) = (left.watermark_columns(), right.watermark_columns());
                let n = left.fields().len();
                let mut cols = Vec::new();
                for &(a, b) in on.iter().filter(|(a, b)| l.contains(a) && r.contains(b)) {
                    if matches!(kind, JoinKind::Inner | JoinKind::Left) {
                        cols.push(a);
                    }
                    if matches!(kind, JoinKind::Inner | JoinKind::Right) {
                        cols.push(n + b);
                    }
                }
                cols
            }
            _ => Vec::new(),
        }
    }

    /// The aggregation an `EMIT ON WINDOW CLOSE` view emits from: under
    /// projections and filters at the top of the plan, grouped by a column
    /// with a watermark.
    pub fn window_close_aggregate(&self) -> Result<&LogicalPlan, PlanError> {
        let refuse = || {
            PlanError::Unsupported(
                "EMIT ON WINDOW CLOSE needs a GROUP BY over a column with a watermark \
                 (such as window_start of a TUMBLE or HOP over a relation with WATERMARK FOR)"
                    .into(),
            )
        };
        match self {
            LogicalPlan::Project { input, .. } | LogicalPlan::Filter { input, .. } => {
                input.window_close_aggregate()
            }
            LogicalPlan::Aggregate {
                input, group_by, ..
            } => {
                let inner = input.watermark_columns();
                if group_by.iter().any(|c| inner.contains(c)) {
                    Ok(self)
                } else {
                    Err(refuse())
                }
            }
            _ => Err(refuse()),
        }
    }
}
