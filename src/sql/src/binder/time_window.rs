//! `TUMBLE(relation, time, size [, offset])` and `HOP(relation, time,
//! slide, size [, offset])` in FROM: the relation's columns followed by
//! `window_start` and `window_end`, as in RisingWave.
//!
//! A tumbling window is one per row, so `TUMBLE` is a projection computing
//! `tumble_start(time, size, offset)` and that plus the size. `HOP` puts a
//! row in `size / slide` windows: a [`LogicalPlan::HopWindow`]. The sizes
//! are constant intervals without months, checked here (invalid_parameter_value).

use ebbflow_common::ErrorKind;
use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, ObjectNamePart};

use super::scope::{Scope, ScopeColumn};
use super::Binder;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Field, Interval, ScalarValue};
use ebbflow_expr::window::TimeWindow;
use ebbflow_expr::{build_cast, build_func, Expr, Func};
use ebbflow_planner::logical::{LogicalPlan, WINDOW_FIELDS};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum WindowKind {
    Tumble,
    Hop,
}

impl WindowKind {
    /// The window table function `name` names, if any.
    pub(super) fn of(schema: Option<&str>, name: &str) -> Option<WindowKind> {
        if schema.is_some() {
            return None;
        }
        match name {
            "tumble" => Some(WindowKind::Tumble),
            "hop" => Some(WindowKind::Hop),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            WindowKind::Tumble => "tumble",
            WindowKind::Hop => "hop",
        }
    }

    /// Names of the interval arguments, in order; the last is optional.
    fn intervals(self) -> &'static [&'static str] {
        match self {
            WindowKind::Tumble => &["window size", "window offset"],
            WindowKind::Hop => &["window slide", "window size", "window offset"],
        }
    }
}

impl Binder<'_> {
    pub(super) fn bind_time_window(
        &mut self,
        kind: WindowKind,
        args: &[FunctionArg],
    ) -> SqlResult<(LogicalPlan, Scope)> {
        let n = kind.intervals().len();
        if args.len() != n + 1 && args.len() != n + 2 {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function {} with {} arguments does not exist (it takes a relation, a time column and {} or {} intervals)",
                    kind.name(),
                    args.len(),
                    n - 1,
                    n
                ),
            ));
        }
        let exprs = args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
                _ => Err(SqlError::unsupported(format!(
                    "named or wildcard arguments of {}",
                    kind.name()
                ))),
            })
            .collect::<SqlResult<Vec<_>>>()?;
        let relation = match exprs[0] {
            ast::Expr::Identifier(i) => {
                ast::ObjectName(vec![ObjectNamePart::Identifier(i.clone())])
            }
            ast::Expr::CompoundIdentifier(parts) => ast::ObjectName(
                parts
                    .iter()
                    .cloned()
                    .map(ObjectNamePart::Identifier)
                    .collect(),
            ),
            other => {
                return Err(SqlError::new(
                    ErrorKind::SyntaxError,
                    format!(
                        "the first argument of {} must name a table, source or view, not {other}",
                        kind.name()
                    ),
                ))
            }
        };
        let (input, mut scope) = self.bind_named_relation(&relation)?;
        let time = self.bind_expr(&scope, exprs[1])?;
        let time = match time.hint() {
            Some(DataType::Timestamp) => self.resolve(time, DataType::Timestamp)?,
            // Windows over instants are aligned in UTC, as RisingWave does.
            Some(DataType::Timestamptz) => self.resolve(time, DataType::Timestamptz)?,
            Some(DataType::Date) => build_cast(self.finalize(time)?, DataType::Timestamp, true)?,
            None => self.resolve(time, DataType::Timestamp)?,
            Some(t) => {
                return Err(SqlError::new(
                    ErrorKind::DatatypeMismatch,
                    format!(
                    "the time column of {} must be a timestamp, a timestamptz or a date, not {}",
                    kind.name(),
                    t.pg_name()
                ),
                ))
            }
        };
        let time_ty = time.return_type();
        let mut intervals = Vec::with_capacity(n);
        for (e, what) in exprs[2..].iter().zip(kind.intervals()) {
            intervals.push(self.constant_interval(e, what)?);
        }
        let interval_lit =
            |i: &Interval| Expr::literal(Some(ScalarValue::Interval(*i)), DataType::Interval);
        let plan = match kind {
            WindowKind::Tumble => {
                let (size, offset) = (&intervals[0], intervals.get(1));
                // Checked now rather than at the first row.
                TimeWindow::tumble(size, offset)?;
                let mut args = vec![time, interval_lit(size)];
                args.extend(offset.map(interval_lit));
                let start = build_func(Func::TumbleStart, args)?;
                // Over instants the end is exact time after the start (a
                // day-long window is 24 hours in any zone).
                let width = match time_ty {
                    DataType::Timestamptz => Interval::new(0, 0, size.total_micros() as i64),
                    _ => *size,
                };
                let end = build_func(Func::Add, vec![start.clone(), interval_lit(&width)])?;
                let mut fields = input.fields();
                let mut exprs: Vec<Expr> = fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| Expr::input_ref(i, f.data_type))
                    .collect();
                exprs.extend([start, end]);
                fields.extend(WINDOW_FIELDS.map(|f| Field::new(f, time_ty)));
                LogicalPlan::Project {
                    input: Box::new(input),
                    exprs,
                    fields,
                }
            }
            WindowKind::Hop => LogicalPlan::HopWindow {
                input: Box::new(input),
                time_col: time,
                window: TimeWindow::hop(&intervals[0], &intervals[1], intervals.get(2))?,
            },
        };
        let table = scope.tables.first().cloned();
        for name in WINDOW_FIELDS {
            scope.star.push(scope.columns.len());
            scope.columns.push(ScopeColumn {
                table: table.clone(),
                name: name.to_string(),
                ty: time_ty,
                hidden: false,
                unqualified: true,
            });
        }
        Ok((plan, scope))
    }

    /// A window size, slide or offset: a constant, non-NULL interval.
    fn constant_interval(&mut self, e: &ast::Expr, what: &str) -> SqlResult<Interval> {
        let b = self.bind_expr(&Scope::default(), e)?;
        let e = self.cast(b, DataType::Interval)?;
        let mut refs = Vec::new();
        e.collect_input_refs(&mut refs);
        if !refs.is_empty() {
            return Err(SqlError::unsupported(format!(
                "a {what} that is not a constant"
            )));
        }
        match e.eval(&Vec::new())? {
            Some(ScalarValue::Interval(i)) => Ok(i),
            None => Err(SqlError::new(
                ErrorKind::InvalidParameterValue,
                format!("{what} must not be NULL"),
            )),
            Some(other) => Err(SqlError::new(
                ErrorKind::InternalError,
                format!("{what} of type {}", other.data_type()),
            )),
        }
    }
}
