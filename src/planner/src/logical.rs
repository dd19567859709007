//! The logical plan: what a query computes, independent of how it runs.
//!
//! The binder produces it; the batch engine evaluates it directly; the
//! stream planner turns it into a fragment graph.

use std::fmt;
use std::sync::Arc;

pub use ebbflow_common::order::{JoinKind, OrderKey};
use ebbflow_common::{DataType, Field, ScalarValue};
use ebbflow_expr::over::{WindowCall, WindowFuncKind};
use ebbflow_expr::window::TimeWindow;
use ebbflow_expr::{AggCall, Expr, Func};
use ebbflow_meta::catalog::RelationDesc;

#[derive(Clone, Debug, PartialEq)]
pub enum LogicalPlan {
    /// All columns of a relation (hidden ones included), in storage order.
    Scan { relation: Arc<RelationDesc> },
    /// Constant rows (`VALUES`, or `SELECT` without `FROM` as one row).
    Values {
        rows: Vec<Vec<Expr>>,
        fields: Vec<Field>,
    },
    Project {
        input: Box<LogicalPlan>,
        exprs: Vec<Expr>,
        fields: Vec<Field>,
    },
    Filter {
        input: Box<LogicalPlan>,
        predicate: Expr,
    },
    /// Output: the group-by columns, then one column per aggregate call.
    /// With no group-by columns it yields exactly one row (even over empty
    /// input), as in SQL.
    Aggregate {
        input: Box<LogicalPlan>,
        group_by: Vec<usize>,
        aggs: Vec<AggCall>,
        /// Names for the output columns.
        fields: Vec<Field>,
    },
    /// Output: left columns then right columns (left columns only for
    /// semi and anti joins). `on` pairs are equi-join keys (left index,
    /// right index) of the same type; `condition` is an extra predicate
    /// over the concatenated row, left then right, whatever the kind.
    Join {
        left: Box<LogicalPlan>,
        right: Box<LogicalPlan>,
        kind: JoinKind,
        on: Vec<(usize, usize)>,
        condition: Option<Expr>,
    },
    /// `UNION ALL` of inputs with identical column types.
    Union { inputs: Vec<LogicalPlan> },
    /// `ORDER BY ... [LIMIT n] [OFFSET m]`.
    TopN {
        input: Box<LogicalPlan>,
        order: Vec<OrderKey>,
        limit: Option<u64>,
        offset: u64,
    },
    /// Each input row once per element of `vector`, followed by the element
    /// (`x`, `smallint`) and its 1-based position (`n`, `integer`): what the
    /// set-returning `information_schema._pg_expandarray` yields in a
    /// select list. `vector` is a space-separated `int2vector` as ebbflow
    /// stores them in text (`pg_index.indkey`); NULL or empty yields no
    /// row. Batch queries only.
    ExpandVector {
        input: Box<LogicalPlan>,
        vector: Expr,
    },
    /// `unnest(array)` in a select list: each input row once per element
    /// of `array`, followed by the element. A NULL or empty array yields
    /// no row. (A stream plan adds the element's 1-based position, hidden,
    /// to the stream key.)
    Unnest {
        input: Box<LogicalPlan>,
        array: Expr,
    },
    /// `HOP(input, time, slide, size [, offset])`: each input row once per
    /// window holding its time (`time_col`, a timestamp), followed by the
    /// window's bounds ([`WINDOW_FIELDS`]). A NULL time is in no window.
    HopWindow {
        input: Box<LogicalPlan>,
        time_col: Expr,
        window: TimeWindow,
    },
    /// Window functions over one window: the input's columns, then one
    /// column per call, computed over the rows equal on `partition_by`
    /// in `order_by` order. With `limit`, only the first `limit` rows of
    /// each partition come out (a group top-N: see
    /// [`LogicalPlan::push_rank_limits`]).
    OverWindow {
        input: Box<LogicalPlan>,
        partition_by: Vec<usize>,
        order_by: Vec<OrderKey>,
        calls: Vec<WindowCall>,
        /// Output names of the calls.
        names: Vec<String>,
        limit: Option<u64>,
    },
}

/// The columns `TUMBLE` and `HOP` add, both timestamps.
pub const WINDOW_FIELDS: [&str; 2] = ["window_start", "window_end"];

/// The columns [`LogicalPlan::ExpandVector`] adds: the fields of the
/// record `_pg_expandarray` returns.
pub const EXPAND_FIELDS: [(&str, DataType); 2] = [("x", DataType::Int16), ("n", DataType::Int32)];

impl LogicalPlan {
    pub fn fields(&self) -> Vec<Field> {
        match self {
            LogicalPlan::Scan { relation } => relation.fields(),
            LogicalPlan::Values { fields, .. }
            | LogicalPlan::Project { fields, .. }
            | LogicalPlan::Aggregate { fields, .. } => fields.clone(),
            LogicalPlan::Filter { input, .. } | LogicalPlan::TopN { input, .. } => input.fields(),
            LogicalPlan::Join {
                left, right, kind, ..
            } => {
                let mut f = left.fields();
                if !kind.left_only() {
                    f.extend(right.fields());
                }
                f
            }
            LogicalPlan::Union { inputs } => inputs.first().map(|i| i.fields()).unwrap_or_default(),
            LogicalPlan::ExpandVector { input, .. } => {
                let mut f = input.fields();
                f.extend(EXPAND_FIELDS.map(|(n, t)| Field::new(n, t)));
                f
            }
            LogicalPlan::Unnest { input, array } => {
                let mut f = input.fields();
                let elem = array.return_type().elem().unwrap_or(DataType::Varchar);
                f.push(Field::new("unnest", elem));
                f
            }
            LogicalPlan::HopWindow {
                input, time_col, ..
            } => {
                let mut f = input.fields();
                let ty = time_col.return_type();
                f.extend(WINDOW_FIELDS.map(|n| Field::new(n, ty)));
                f
            }
            LogicalPlan::OverWindow {
                input,
                calls,
                names,
                ..
            } => {
                let mut f = input.fields();
                f.extend(
                    calls
                        .iter()
                        .zip(names)
                        .map(|(c, n)| Field::new(n.clone(), c.return_type)),
                );
                f
            }
        }
    }

    pub fn types(&self) -> Vec<DataType> {
        self.fields().into_iter().map(|f| f.data_type).collect()
    }

    fn fmt_indent(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        match self {
            LogicalPlan::Scan { relation } => {
                return writeln!(f, "{pad}Scan {}", relation.name);
            }
            LogicalPlan::Values { rows, .. } => {
                return writeln!(f, "{pad}Values {} rows", rows.len());
            }
            LogicalPlan::Project { exprs, .. } => writeln!(f, "{pad}Project {exprs:?}")?,
            LogicalPlan::Filter { predicate, .. } => writeln!(f, "{pad}Filter {predicate:?}")?,
            LogicalPlan::Aggregate { group_by, aggs, .. } => {
                writeln!(f, "{pad}Aggregate group_by={group_by:?} aggs={aggs:?}")?
            }
            LogicalPlan::Join { kind, on, .. } => writeln!(f, "{pad}Join {kind:?} on={on:?}")?,
            LogicalPlan::Union { .. } => writeln!(f, "{pad}Union")?,
            LogicalPlan::TopN {
                order,
                limit,
                offset,
                ..
            } => writeln!(f, "{pad}TopN {order:?} limit={limit:?} offset={offset}")?,
            LogicalPlan::ExpandVector { vector, .. } => {
                writeln!(f, "{pad}ExpandVector {vector:?}")?
            }
            LogicalPlan::Unnest { array, .. } => writeln!(f, "{pad}Unnest {array:?}")?,
            LogicalPlan::HopWindow {
                time_col, window, ..
            } => writeln!(f, "{pad}HopWindow {time_col:?} {window:?}")?,
            LogicalPlan::OverWindow {
                partition_by,
                order_by,
                calls,
                limit,
                ..
            } => writeln!(
                f,
                "{pad}OverWindow partition_by={partition_by:?} order_by={order_by:?} calls={calls:?} limit={limit:?}"
            )?,
        }
        for c in self.children() {
            c.fmt_indent(f, depth + 1)?;
        }
        Ok(())
    }

    /// The group top-N rewrite: a filter keeping the rows whose
    /// `row_number()` is at most `n` (`rn <= n`, `rn < n + 1`, `rn = 1`)
    /// lets the window itself drop the other rows, so a change deep in a
    /// partition emits nothing. The filter stays.
    pub fn push_rank_limits(&mut self) {
        if let LogicalPlan::Filter { input, predicate } = self {
            let mut terms = Vec::new();
            conjuncts(predicate, &mut terms);
            for (col, n) in terms.iter().filter_map(|t| row_number_bound(t)) {
                let (over, col) = match input.as_mut() {
                    LogicalPlan::Project { input, exprs, .. } => match exprs.get(col) {
                        Some(Expr::InputRef { index, .. }) => (input.as_mut(), *index),
                        _ => continue,
                    },
                    other => (other, col),
                };
                if let LogicalPlan::OverWindow {
                    input,
                    calls,
                    limit,
                    ..
                } = over
                {
                    let width = input.fields().len();
                    let is_row_number = col
                        .checked_sub(width)
                        .and_then(|i| calls.get(i))
                        .is_some_and(|c| c.kind == WindowFuncKind::RowNumber);
                    if is_row_number {
                        *limit = Some(limit.map_or(n, |l| l.min(n)));
                    }
                }
            }
        }
        match self {
            LogicalPlan::Scan { .. } | LogicalPlan::Values { .. } => {}
            LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::TopN { input, .. }
            | LogicalPlan::ExpandVector { input, .. }
            | LogicalPlan::Unnest { input, .. }
            | LogicalPlan::HopWindow { input, .. }
            | LogicalPlan::OverWindow { input, .. } => input.push_rank_limits(),
            LogicalPlan::Join { left, right, .. } => {
                left.push_rank_limits();
                right.push_rank_limits();
            }
            LogicalPlan::Union { inputs } => inputs.iter_mut().for_each(|i| i.push_rank_limits()),
        }
    }

    pub fn children(&self) -> Vec<&LogicalPlan> {
        match self {
            LogicalPlan::Scan { .. } | LogicalPlan::Values { .. } => vec![],
            LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Aggregate { input, .. }
            | LogicalPlan::TopN { input, .. }
            | LogicalPlan::ExpandVector { input, .. }
            | LogicalPlan::Unnest { input, .. }
            | LogicalPlan::HopWindow { input, .. }
            | LogicalPlan::OverWindow { input, .. } => vec![input],
            LogicalPlan::Join { left, right, .. } => vec![left, right],
            LogicalPlan::Union { inputs } => inputs.iter().collect(),
        }
    }
}

fn conjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::Func {
            func: Func::And,
            args,
            ..
        } => args.iter().for_each(|a| conjuncts(a, out)),
        other => out.push(other),
    }
}

/// `(column, n)` for a term keeping rows whose column is at most `n`
/// (`col <= n`, `col < n + 1`, `col = 1`), `n` at least 1.
fn row_number_bound(term: &Expr) -> Option<(usize, u64)> {
    let Expr::Func { func, args, .. } = term else {
        return None;
    };
    let [Expr::InputRef { index, .. }, Expr::Literal { value: Some(v), .. }] = args.as_slice()
    else {
        return None;
    };
    let v = match v {
        ScalarValue::Int16(x) => *x as i64,
        ScalarValue::Int32(x) => *x as i64,
        ScalarValue::Int64(x) => *x,
        _ => return None,
    };
    let n = match func {
        Func::LtEq => v,
        Func::Lt => v - 1,
        Func::Eq if v == 1 => 1,
        _ => return None,
    };
    u64::try_from(n)
        .ok()
        .filter(|&n| n >= 1)
        .map(|n| (*index, n))
}

impl fmt::Display for LogicalPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_indent(f, 0)
    }
}
