//! The batch engine: runs a [`LogicalPlan`] to completion over one
//! consistent snapshot and returns every row.
//!
//! It serves ad-hoc `SELECT` over tables, materialized views and system
//! catalogs, `INSERT ... SELECT`, and the row selection of `UPDATE` and
//! `DELETE`. The frontend hands it a plan and a [`ScanSource`] pinned to
//! the last committed epoch (or to a system-catalog snapshot), so every scan
//! in one plan sees the same state.
//!
//! ```text
//!   execute(plan)
//!     ├─ Scan ──────────▶ ScanSource::scan(relation)  (full rows, hidden cols too)
//!     ├─ Values          exprs evaluated over an empty row
//!     ├─ Project/Filter  row by row (relational.rs)
//!     ├─ Aggregate       hash aggregation over accumulators (aggregate.rs)
//!     ├─ Join            hash join on `on` keys, nested loop without (join.rs)
//!     ├─ Union           concatenation
//!     ├─ ExpandVector    one row per vector element (relational.rs)
//!     ├─ HopWindow       one row per time window holding the row (relational.rs)
//!     ├─ OverWindow      window functions, partition by partition (over_window.rs)
//!     └─ TopN            stable sort, then OFFSET / LIMIT (top_n.rs)
//! ```
//!
//! Operators are materializing: each one takes its input's `Vec<Row>` by
//! value and returns a new one, moving rows instead of cloning them where
//! the operator does not need to keep them.
//!
//! Every column index a plan uses is checked against its input before any
//! row is touched, so a plan that does not fit its input (a binder or
//! planner bug) is an internal error, never a panic. Evaluation errors keep
//! the kind the expression gave them. `perf_tests.rs` times each
//! operator over a million rows (`cargo test -p ebbflow-batch --lib perf
//! -- --ignored --nocapture`).
//!
//! It owns how a logical plan is evaluated to completion; it reads
//! relations through [`ScanSource`] and must not know SQL, sessions, the
//! stream runtime or the store's files (`ci/layers`).

mod aggregate;
mod hash;
mod join;
mod over_window;
mod relational;
mod top_n;

#[cfg(test)]
mod perf_tests;
#[cfg(test)]
mod test_utils;
#[cfg(test)]
mod tests;

use ebbflow_common::ErrorKind;
use ebbflow_common::Row;
use ebbflow_expr::ExprError;
use ebbflow_meta::catalog::RelationDesc;
use ebbflow_planner::logical::LogicalPlan;

pub use aggregate::execute_aggregate;
pub use join::execute_join;
pub use relational::{
    execute_expand_vector, execute_filter, execute_hop_window, execute_project, execute_values,
};
pub use top_n::execute_top_n;

/// An error raised while executing a batch plan.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BatchError {
    /// An expression failed on a row.
    #[error(transparent)]
    Expr(#[from] ExprError),
    /// A scan failed (the source's kind), or a plan does not fit its input
    /// (an internal error: a bug upstream, reported instead of a panic).
    #[error("{message}")]
    Exec { kind: ErrorKind, message: String },
}

impl BatchError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        BatchError::Exec {
            kind,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            BatchError::Expr(e) => e.kind(),
            BatchError::Exec { kind, .. } => *kind,
        }
    }

    /// An internal error: the plan or the source broke a contract.
    pub fn internal(message: impl Into<String>) -> Self {
        BatchError::new(ErrorKind::InternalError, message)
    }
}

pub type BatchResult<T> = Result<T, BatchError>;

/// Where scans read their rows: the state store at a committed epoch, or
/// the system catalogs.
///
/// CONTRACT: `scan` returns every row of the relation as of the snapshot the
/// source is pinned to, each row with all of `relation.columns` (hidden
/// ones included) in their storage order. Row order is unspecified.
pub trait ScanSource: Send + Sync {
    fn scan(&self, relation: &RelationDesc) -> Result<Vec<Row>, BatchError>;
}

/// Run `plan` to completion over `source` and return all its rows, each
/// with the columns of `plan.fields()`.
///
/// Row order is unspecified unless the root is a `TopN` (possibly under
/// `Project`/`Filter`, which keep the order of their input).
pub fn execute(plan: &LogicalPlan, source: &dyn ScanSource) -> BatchResult<Vec<Row>> {
    match plan {
        LogicalPlan::Scan { relation } => {
            let rows = source.scan(relation)?;
            let width = relation.columns.len();
            // Expressions index rows without bounds checks of their own, so
            // a short row from a broken source must stop here, not panic there.
            if let Some(bad) = rows.iter().find(|r| r.len() != width) {
                return Err(BatchError::internal(format!(
                    "scan of \"{}\" returned a row of {} columns, expected {width}",
                    relation.name,
                    bad.len()
                )));
            }
            Ok(rows)
        }
        LogicalPlan::Values { rows, fields } => execute_values(rows, fields.len()),
        LogicalPlan::Project {
            input,
            exprs,
            fields,
        } => {
            if exprs.len() != fields.len() {
                return Err(BatchError::internal(format!(
                    "project of {} expressions named by {} fields",
                    exprs.len(),
                    fields.len()
                )));
            }
            let width = input_width(input);
            execute_project(execute(input, source)?, exprs, width)
        }
        LogicalPlan::Filter { input, predicate } => {
            let width = input_width(input);
            execute_filter(execute(input, source)?, predicate, width)
        }
        LogicalPlan::Aggregate {
            input,
            group_by,
            aggs,
            fields,
        } => {
            if group_by.len() + aggs.len() != fields.len() {
                return Err(BatchError::internal(format!(
                    "aggregate of {} columns named by {} fields",
                    group_by.len() + aggs.len(),
                    fields.len()
                )));
            }
            let width = input_width(input);
            execute_aggregate(execute(input, source)?, group_by, aggs, width)
        }
        LogicalPlan::Join {
            left,
            right,
            kind,
            on,
            condition,
        } => {
            let (lw, rw) = (input_width(left), input_width(right));
            // Keys of different types never compare equal (`Int32(1)` is not
            // `Int64(1)`): a missing cast would silently drop every match.
            let (lt, rt) = (left.types(), right.types());
            for &(l, r) in on {
                if let (Some(a), Some(b)) = (lt.get(l), rt.get(r)) {
                    if a != b {
                        return Err(BatchError::internal(format!(
                            "join key of types {a} and {b}"
                        )));
                    }
                }
            }
            let l = execute(left, source)?;
            let r = execute(right, source)?;
            execute_join(l, r, (lw, rw), *kind, on, condition.as_ref())
        }
        LogicalPlan::Union { inputs } => {
            let types = plan.types();
            let mut out = Vec::new();
            for input in inputs {
                if input.types() != types {
                    return Err(BatchError::internal(format!(
                        "union of inputs of types {:?} and {types:?}",
                        input.types()
                    )));
                }
                let rows = execute(input, source)?;
                if out.is_empty() {
                    out = rows;
                } else {
                    out.extend(rows);
                }
            }
            Ok(out)
        }
        LogicalPlan::TopN {
            input,
            order,
            limit,
            offset,
        } => {
            let width = input_width(input);
            execute_top_n(execute(input, source)?, order, *limit, *offset, width)
        }
        LogicalPlan::ExpandVector { input, vector } => {
            let width = input_width(input);
            execute_expand_vector(execute(input, source)?, vector, width)
        }
        LogicalPlan::Unnest { input, array } => {
            let width = input_width(input);
            relational::execute_unnest(execute(input, source)?, array, width)
        }
        LogicalPlan::HopWindow {
            input,
            time_col,
            window,
        } => {
            let width = input_width(input);
            execute_hop_window(execute(input, source)?, time_col, window, width)
        }
        LogicalPlan::OverWindow {
            input,
            partition_by,
            order_by,
            calls,
            limit,
            ..
        } => {
            let width = input_width(input);
            let rows = execute(input, source)?;
            over_window::execute_over_window(rows, partition_by, order_by, calls, *limit, width)
        }
    }
}

/// The number of columns `plan` produces (what operators check their
/// column indices against before touching rows).
fn input_width(plan: &LogicalPlan) -> usize {
    match plan {
        LogicalPlan::Scan { relation } => relation.columns.len(),
        LogicalPlan::Values { fields, .. }
        | LogicalPlan::Project { fields, .. }
        | LogicalPlan::Aggregate { fields, .. } => fields.len(),
        LogicalPlan::Filter { input, .. } | LogicalPlan::TopN { input, .. } => input_width(input),
        LogicalPlan::Join { left, kind, .. } if kind.left_only() => input_width(left),
        LogicalPlan::Join { left, right, .. } => input_width(left) + input_width(right),
        LogicalPlan::Union { inputs } => inputs.first().map(input_width).unwrap_or(0),
        LogicalPlan::ExpandVector { input, .. } => {
            input_width(input) + ebbflow_planner::logical::EXPAND_FIELDS.len()
        }
        LogicalPlan::Unnest { input, .. } => input_width(input) + 1,
        LogicalPlan::HopWindow { input, .. } => {
            input_width(input) + ebbflow_planner::logical::WINDOW_FIELDS.len()
        }
        LogicalPlan::OverWindow { input, calls, .. } => input_width(input) + calls.len(),
    }
}

/// Check that every column index an operator uses exists in its input.
fn check_indices(
    what: &str,
    indices: impl IntoIterator<Item = usize>,
    width: usize,
) -> BatchResult<()> {
    for i in indices {
        if i >= width {
            return Err(BatchError::internal(format!(
                "{what} refers to column {i} of an input with {width} columns"
            )));
        }
    }
    Ok(())
}

/// Check every `InputRef` of `expr` against the input width.
fn check_expr(what: &str, expr: &ebbflow_expr::Expr, width: usize) -> BatchResult<()> {
    let mut refs = Vec::new();
    expr.collect_input_refs(&mut refs);
    check_indices(what, refs, width)
}
