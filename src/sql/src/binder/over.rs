//! Window function calls in the select list and ORDER BY.
//!
//! While a SELECT block binds its select list and ORDER BY, each `f(…)
//! OVER (…)` is collected with its arguments, partition and order
//! expressions (bound over the row the select list sees: the FROM row, or
//! the aggregation's output) and stands in the expression as a reference
//! to a placeholder column. Then [`Binder::attach_windows`] computes the
//! expressions in a Project, adds one [`LogicalPlan::OverWindow`] per
//! distinct window, and points the placeholders at their columns.

use ebbflow_common::ErrorKind;
use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};

use super::expr::BExpr;
use super::func::{agg_kind, filtered};
use super::scope::Scope;
use super::select::order_options;
use super::{Binder, ExprCtx};
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Field};
use ebbflow_expr::over::{Frame, FrameBound, WindowCall, WindowFuncKind};
use ebbflow_expr::{agg_return_type, build_cast, AggKind, Expr};
use ebbflow_planner::logical::{LogicalPlan, OrderKey};

/// PostgreSQL's window functions that ebbflow does not have (feature_not_supported).
const UNSUPPORTED: &[&str] = &["ntile", "percent_rank", "cume_dist", "nth_value"];

/// Placeholder columns of window calls start here (far past any real row).
const PLACEHOLDER: usize = usize::MAX / 2;

/// A window call as bound, before its plan exists.
#[derive(Debug)]
pub(super) struct BoundWindow {
    kind: WindowFuncKind,
    name: String,
    /// The value, then lag/lead's default.
    args: Vec<Expr>,
    offset: u64,
    partition: Vec<Expr>,
    order: Vec<(Expr, bool, bool)>,
    frame: Frame,
    return_type: DataType,
}

fn not_allowed() -> SqlError {
    SqlError::new(
        ErrorKind::WindowingError,
        "window functions are not allowed here",
    )
}

fn unsupported_frame(what: &str) -> SqlError {
    SqlError::unsupported(format!("window frames with {what}"))
}

fn constant_offset(e: &ast::Expr, what: &str) -> SqlResult<u64> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse::<u64>().map_err(|_| {
                SqlError::new(
                    ErrorKind::InvalidPrecedingOrFollowingSize,
                    format!("{what} must be a non-negative integer"),
                )
            }),
            _ => Err(SqlError::unsupported(format!(
                "{what} that is not an integer constant"
            ))),
        },
        _ => Err(SqlError::unsupported(format!(
            "{what} that is not an integer constant"
        ))),
    }
}

impl Binder<'_> {
    pub(super) fn bind_window_call(
        &mut self,
        scope: &Scope,
        name: &str,
        f: &ast::Function,
        over: &ast::WindowType,
    ) -> SqlResult<BExpr> {
        if self.windows.is_none() {
            if self.in_aggregate > 0 {
                return Err(SqlError::new(
                    ErrorKind::GroupingError,
                    "aggregate function calls cannot contain window function calls",
                ));
            }
            return Err(not_allowed());
        }
        let ast::WindowType::WindowSpec(spec) = over else {
            return Err(SqlError::unsupported("named windows (OVER name)"));
        };
        if spec.window_name.is_some() {
            return Err(SqlError::unsupported("named windows (OVER name)"));
        }
        if f.null_treatment.is_some() {
            return Err(SqlError::unsupported("IGNORE/RESPECT NULLS"));
        }
        let (distinct, args): (bool, &[FunctionArg]) = match &f.args {
            FunctionArguments::None => (false, &[]),
            FunctionArguments::List(l) => {
                if !l.clauses.is_empty() {
                    return Err(SqlError::unsupported(format!(
                        "clauses in the arguments of {name}()"
                    )));
                }
                (
                    l.duplicate_treatment == Some(ast::DuplicateTreatment::Distinct),
                    &l.args,
                )
            }
            FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("subqueries in expressions"))
            }
        };
        if distinct {
            return Err(SqlError::unsupported("DISTINCT in window functions"));
        }
        let kind = match (WindowFuncKind::from_name(name), agg_kind(name)) {
            (Some(k), _) => k,
            (None, Some(AggKind::StringAgg)) => {
                return Err(SqlError::unsupported("string_agg as a window function"))
            }
            (None, Some(AggKind::ArrayAgg)) => {
                return Err(SqlError::unsupported("array_agg as a window function"))
            }
            (None, Some(a)) => WindowFuncKind::Agg(a),
            (None, None) if UNSUPPORTED.contains(&name) => {
                return Err(SqlError::unsupported(format!("window function {name}")))
            }
            (None, None) => {
                return Err(SqlError::new(
                    ErrorKind::WrongObjectType,
                    format!(
                    "OVER specified, but {name} is not a window function nor an aggregate function"
                ),
                ))
            }
        };
        if f.filter.is_some() && !matches!(kind, WindowFuncKind::Agg(_)) {
            return Err(SqlError::unsupported(format!(
                "FILTER is not implemented for non-aggregate window functions ({name})"
            )));
        }
        // Nested window calls are refused while the parts bind.
        let saved = self.windows.take();
        let parts = self.bind_window_parts(scope, name, kind, args, f.filter.as_deref(), spec);
        self.windows = saved;
        let mut w = parts?;
        let ty = w.return_type;
        let windows = self.windows.get_or_insert_with(Vec::new);
        let idx = PLACEHOLDER + windows.len();
        w.name = name.to_string();
        windows.push(w);
        Ok(BExpr::Typed(Expr::input_ref(idx, ty)))
    }

    fn bind_window_parts(
        &mut self,
        scope: &Scope,
        name: &str,
        kind: WindowFuncKind,
        args: &[FunctionArg],
        filter: Option<&ast::Expr>,
        spec: &ast::WindowSpec,
    ) -> SqlResult<BoundWindow> {
        let arg_exprs: Vec<&ast::Expr> = args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(Some(e)),
                FunctionArg::Unnamed(FunctionArgExpr::Wildcard) => Ok(None),
                _ => Err(SqlError::unsupported(format!("named arguments of {name}"))),
            })
            .collect::<SqlResult<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        let star = args
            .iter()
            .any(|a| matches!(a, FunctionArg::Unnamed(FunctionArgExpr::Wildcard)));
        let arity_err = || {
            SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function {name} with {} arguments does not exist",
                    args.len()
                ),
            )
        };
        let mut offset = 1;
        let (mut bound, return_type) = match kind {
            WindowFuncKind::RowNumber | WindowFuncKind::Rank | WindowFuncKind::DenseRank => {
                if !args.is_empty() {
                    return Err(arity_err());
                }
                (vec![], DataType::Int64)
            }
            WindowFuncKind::FirstValue | WindowFuncKind::LastValue => {
                let [e] = arg_exprs.as_slice() else {
                    return Err(arity_err());
                };
                let v = self.bind_expr(scope, e)?;
                let v = self.finalize(v)?;
                let t = v.return_type();
                (vec![v], t)
            }
            WindowFuncKind::Lag | WindowFuncKind::Lead => {
                if arg_exprs.is_empty() || arg_exprs.len() > 3 || star {
                    return Err(arity_err());
                }
                let v = self.bind_expr(scope, arg_exprs[0])?;
                let v = self.finalize(v)?;
                let t = v.return_type();
                if let Some(o) = arg_exprs.get(1) {
                    offset = constant_offset(o, "the offset of lag/lead")?;
                }
                let mut out = vec![v];
                if let Some(d) = arg_exprs.get(2) {
                    let d = self.bind_expr(scope, d)?;
                    let d = self.cast(d, t)?;
                    out.push(if d.return_type() == t {
                        d
                    } else {
                        build_cast(d, t, false)?
                    });
                }
                (out, t)
            }
            WindowFuncKind::Agg(a) => {
                let (a, arg) = match (star, arg_exprs.as_slice()) {
                    (true, []) if a == AggKind::Count => (AggKind::CountStar, None),
                    (false, [e]) => {
                        let saved = std::mem::replace(
                            &mut self.ctx,
                            ExprCtx::Plain {
                                agg_error: "aggregate function calls cannot be nested",
                            },
                        );
                        let v = self.bind_typed(scope, e);
                        self.ctx = saved;
                        (a, Some(v?))
                    }
                    _ => return Err(arity_err()),
                };
                let (a, arg) = match filter {
                    None => (a, arg),
                    Some(c) => {
                        let c = self.bind_expr(scope, c)?;
                        let c = self.resolve(c, DataType::Boolean)?;
                        let c = super::expr::check_bool(c, "FILTER")?;
                        filtered(a, arg, c)
                    }
                };
                let ret = agg_return_type(a, arg.as_ref().map(Expr::return_type))?;
                return self.finish_window(
                    WindowFuncKind::Agg(a),
                    arg.into_iter().collect(),
                    1,
                    ret,
                    spec,
                    scope,
                );
            }
        };
        bound.shrink_to_fit();
        self.finish_window(kind, bound, offset, return_type, spec, scope)
    }

    fn finish_window(
        &mut self,
        kind: WindowFuncKind,
        args: Vec<Expr>,
        offset: u64,
        return_type: DataType,
        spec: &ast::WindowSpec,
        scope: &Scope,
    ) -> SqlResult<BoundWindow> {
        let mut partition = Vec::with_capacity(spec.partition_by.len());
        for p in &spec.partition_by {
            let e = self.bind_expr(scope, p)?;
            partition.push(self.finalize(e)?);
        }
        let mut order = Vec::with_capacity(spec.order_by.len());
        for o in &spec.order_by {
            let (desc, nulls_first) = order_options(&o.options)?;
            let e = self.bind_expr(scope, &o.expr)?;
            order.push((self.finalize(e)?, desc, nulls_first));
        }
        let frame = match &spec.window_frame {
            None => Frame::DEFAULT,
            Some(f) => frame(f)?,
        };
        Ok(BoundWindow {
            kind,
            name: String::new(),
            args,
            offset,
            partition,
            order,
            frame,
            return_type,
        })
    }

    /// Compute the window calls collected while binding `exprs` over
    /// `plan`, and point their placeholders in `exprs` at the results.
    pub(super) fn attach_windows(
        &mut self,
        plan: LogicalPlan,
        windows: Vec<BoundWindow>,
        exprs: &mut [Expr],
    ) -> SqlResult<LogicalPlan> {
        if windows.is_empty() {
            return Ok(plan);
        }
        let mut fields = plan.fields();
        let base = fields.len();
        let mut pre: Vec<Expr> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| Expr::input_ref(i, f.data_type))
            .collect();
        let col = |e: &Expr, pre: &mut Vec<Expr>, fields: &mut Vec<Field>| -> usize {
            match pre.iter().position(|x| x == e) {
                Some(i) => i,
                None => {
                    pre.push(e.clone());
                    fields.push(Field::new(
                        format!("_window_arg{}", pre.len() - base),
                        e.return_type(),
                    ));
                    pre.len() - 1
                }
            }
        };
        // Columns of every part, then one OverWindow per distinct window.
        struct Planned {
            partition: Vec<usize>,
            order: Vec<OrderKey>,
            call: WindowCall,
            name: String,
        }
        let mut planned = Vec::with_capacity(windows.len());
        for w in windows {
            let partition = w
                .partition
                .iter()
                .map(|e| col(e, &mut pre, &mut fields))
                .collect();
            let order = w
                .order
                .iter()
                .map(|(e, desc, nulls_first)| OrderKey {
                    index: col(e, &mut pre, &mut fields),
                    desc: *desc,
                    nulls_first: *nulls_first,
                })
                .collect();
            let args: Vec<usize> = w
                .args
                .iter()
                .map(|e| col(e, &mut pre, &mut fields))
                .collect();
            let call = WindowCall {
                kind: w.kind,
                arg_type: w.args.first().map(Expr::return_type),
                args,
                offset: w.offset,
                return_type: w.return_type,
                frame: if w.kind.uses_frame() {
                    w.frame
                } else {
                    Frame::DEFAULT
                },
            };
            planned.push(Planned {
                partition,
                order,
                call,
                name: w.name,
            });
        }
        let mut plan = LogicalPlan::Project {
            input: Box::new(plan),
            exprs: pre,
            fields,
        };
        let mut position = vec![0; planned.len()];
        let mut done = vec![false; planned.len()];
        for i in 0..planned.len() {
            if done[i] {
                continue;
            }
            let width = plan.fields().len();
            let mut calls = Vec::new();
            let mut names = Vec::new();
            for j in i..planned.len() {
                if !done[j]
                    && planned[j].partition == planned[i].partition
                    && planned[j].order == planned[i].order
                {
                    done[j] = true;
                    position[j] = width + calls.len();
                    calls.push(planned[j].call.clone());
                    names.push(planned[j].name.clone());
                }
            }
            plan = LogicalPlan::OverWindow {
                input: Box::new(plan),
                partition_by: planned[i].partition.clone(),
                order_by: planned[i].order.clone(),
                calls,
                names,
                limit: None,
            };
        }
        for e in exprs.iter_mut() {
            e.map_input_refs(&mut |i| {
                if i >= PLACEHOLDER {
                    position[i - PLACEHOLDER]
                } else {
                    i
                }
            });
        }
        Ok(plan)
    }
}

fn frame(f: &ast::WindowFrame) -> SqlResult<Frame> {
    let rows = match f.units {
        ast::WindowFrameUnits::Rows => true,
        ast::WindowFrameUnits::Range => false,
        ast::WindowFrameUnits::Groups => return Err(unsupported_frame("GROUPS")),
    };
    let bound = |b: &ast::WindowFrameBound| -> SqlResult<FrameBound> {
        let offset = |e: &ast::Expr| -> SqlResult<u64> {
            if !rows {
                return Err(unsupported_frame("RANGE offsets"));
            }
            match e {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => n.parse::<u64>().map_err(|_| {
                        SqlError::new(
                            ErrorKind::InvalidPrecedingOrFollowingSize,
                            "frame starting or ending offset must not be negative",
                        )
                    }),
                    _ => Err(unsupported_frame("offsets that are not integer constants")),
                },
                _ => Err(unsupported_frame("offsets that are not integer constants")),
            }
        };
        Ok(match b {
            ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
            ast::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(e)?),
            ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
            ast::WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(e)?),
        })
    };
    let start = bound(&f.start_bound)?;
    let end = match &f.end_bound {
        None => FrameBound::CurrentRow,
        Some(b) => bound(b)?,
    };
    if start == FrameBound::UnboundedFollowing {
        return Err(SqlError::new(
            ErrorKind::WindowingError,
            "frame start cannot be UNBOUNDED FOLLOWING",
        ));
    }
    if end == FrameBound::UnboundedPreceding {
        return Err(SqlError::new(
            ErrorKind::WindowingError,
            "frame end cannot be UNBOUNDED PRECEDING",
        ));
    }
    let rank = |b: FrameBound| match b {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(_) => 1,
        FrameBound::CurrentRow => 2,
        FrameBound::Following(_) => 3,
        FrameBound::UnboundedFollowing => 4,
    };
    if rank(start) > rank(end) {
        let msg = match (start, end) {
            (FrameBound::CurrentRow, FrameBound::Preceding(_)) => {
                "frame starting from current row cannot have preceding rows"
            }
            (FrameBound::Following(_), _) => {
                "frame starting from following row cannot have preceding rows"
            }
            _ => "frame start cannot be after its end",
        };
        return Err(SqlError::new(ErrorKind::WindowingError, msg));
    }
    Ok(Frame { rows, start, end })
}
