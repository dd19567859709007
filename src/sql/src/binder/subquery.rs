//! Scalar subqueries `(SELECT …)` in a WHERE clause or select list,
//! decorrelated into a LEFT JOIN with a grouped aggregate.
//!
//! An uncorrelated subquery can be any query of one column: it is
//! aggregated into one row (its row count and value) and joined without a
//! key. A correlated one must be a plain `SELECT expr FROM … WHERE …`: the
//! subquery's WHERE conjuncts that name only its own FROM stay inside
//! it; a conjunct that fails to bind there because it names the outer row
//! must be an equality `inner = outer` and becomes a group key. So
//!
//! ```text
//! SELECT … FROM t WHERE (SELECT c.relkind = 'c' FROM pg_class c WHERE c.oid = t.typrelid)
//! ```
//!
//! binds as `t LEFT JOIN (SELECT oid, count(*), min(relkind = 'c') FROM
//! pg_class GROUP BY oid) s ON s.oid = t.typrelid`, and the subquery's value
//! is `min` when `count` is at most 1 and error cardinality_violation when the subquery had
//! more than one row for that outer row, as in PostgreSQL. (An unmatched
//! outer row gets NULL from the LEFT JOIN, as an empty subquery does.)
//!
//! In HAVING, uncorrelated subqueries only: they are joined, without a
//! key, to the Aggregate's output (Nexmark q102's `HAVING count(*) >=
//! (SELECT count(*) / count(DISTINCT auction) FROM bid)`).
//!
//! Refused (feature_not_supported): correlated subqueries with aggregates, GROUP BY,
//! DISTINCT, ORDER BY, LIMIT or set operations, correlation other than by
//! equality, correlated subqueries in HAVING, subqueries in other clauses
//! (the select list of an aggregating select included) and, in a
//! materialized view, any but an uncorrelated aggregate without GROUP BY
//! or HAVING (always one row: the view joins it without a key).

use ebbflow_common::ErrorKind;
use sqlparser::ast::{self, BinaryOperator, GroupByExpr, SelectItem, SetExpr};

use super::expr::BExpr;
use super::from::{and_all, build_join};
use super::func::contains_aggregate;
use super::scope::{Scope, ScopeColumn};
use super::select::HAVING_APPLIES_BASE;
use super::{Binder, ExprCtx};
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Field};
use ebbflow_expr::{build_cast, build_func, common_type, AggCall, AggKind, Expr, Func};
use ebbflow_planner::logical::{JoinKind, LogicalPlan};

/// Scalar subqueries of one clause, joined to the clause's input before
/// the clause's expressions are evaluated.
#[derive(Debug)]
pub(super) struct Applies {
    /// Width of the input row the subqueries are joined to.
    base: usize,
    joins: Vec<Apply>,
}

/// One decorrelated subquery: `plan` yields its keys, then the row count,
/// then the value.
#[derive(Debug)]
struct Apply {
    plan: LogicalPlan,
    /// Over the outer row, one per key of `plan`, same types.
    outer_keys: Vec<Expr>,
}

impl Applies {
    pub fn new(base: usize) -> Self {
        Applies {
            base,
            joins: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.joins.is_empty()
    }

    /// The same subqueries, joined to a row `base` wide.
    pub fn rebase(self, base: usize) -> Self {
        Applies { base, ..self }
    }

    /// The width of the row once the subqueries so far are joined.
    fn width(&self) -> usize {
        self.base
            + self
                .joins
                .iter()
                .map(|a| a.outer_keys.len() + 2)
                .sum::<usize>()
    }

    /// Join every subquery to `plan` (whose row is `base` wide) and give
    /// `scope` hidden columns for what they add, so later columns line up.
    pub fn attach(self, mut plan: LogicalPlan, scope: &mut Scope) -> SqlResult<LogicalPlan> {
        let mut width = self.base;
        for a in self.joins {
            let mut terms = Vec::with_capacity(a.outer_keys.len());
            for (i, k) in a.outer_keys.into_iter().enumerate() {
                let ty = k.return_type();
                terms.push(build_func(
                    Func::Eq,
                    vec![k, Expr::input_ref(width + i, ty)],
                )?);
            }
            for f in a.plan.fields() {
                scope.columns.push(ScopeColumn {
                    table: None,
                    name: f.name,
                    ty: f.data_type,
                    hidden: true,
                    unqualified: false,
                });
            }
            let added = a.plan.fields().len();
            plan = build_join(plan, a.plan, JoinKind::Left, and_all(terms)?, width)?;
            width += added;
        }
        Ok(plan)
    }
}

/// Group `plan` (keys, then one value column) by its keys into keys, row
/// count and value (`min`: a group of one row has that row's value; larger
/// groups are an error where the value is used).
fn single_value(plan: LogicalPlan) -> SqlResult<LogicalPlan> {
    let fields = plan.fields();
    let Some((value, keys)) = fields.split_last() else {
        return Err(SqlError::new(
            ErrorKind::InternalError,
            "subquery without columns",
        ));
    };
    let k = keys.len();
    let vt = value.data_type;
    let mut agg_fields = keys.to_vec();
    agg_fields.push(Field::new("count", DataType::Int64));
    agg_fields.push(Field::new("value", vt));
    Ok(LogicalPlan::Aggregate {
        input: Box::new(plan),
        group_by: (0..k).collect(),
        aggs: vec![
            AggCall {
                kind: AggKind::CountStar,
                arg: None,
                arg_type: None,
                return_type: DataType::Int64,
                distinct: false,
            },
            // `min` takes any type, booleans included.
            AggCall {
                kind: AggKind::Min,
                arg: Some(k),
                arg_type: Some(vt),
                return_type: vt,
                distinct: false,
            },
        ],
        fields: agg_fields,
    })
}

/// Whether the subquery under [`single_value`]'s aggregate is an
/// aggregate without GROUP BY or HAVING (under projections).
fn always_one_row(plan: &LogicalPlan) -> bool {
    fn one(p: &LogicalPlan) -> bool {
        match p {
            LogicalPlan::Aggregate { group_by, .. } => group_by.is_empty(),
            LogicalPlan::Project { input, .. } => one(input),
            _ => false,
        }
    }
    matches!(plan, LogicalPlan::Aggregate { input, .. } if one(input))
}

/// The conjuncts of an AND chain.
pub(super) fn conjuncts<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    match e {
        ast::Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        ast::Expr::Nested(inner) => conjuncts(inner, out),
        other => out.push(other),
    }
}

impl Binder<'_> {
    /// A scalar subquery met while binding an expression over `outer`.
    pub(super) fn bind_scalar_subquery(
        &mut self,
        outer: &Scope,
        q: &ast::Query,
    ) -> SqlResult<BExpr> {
        let in_mv = || SqlError::unsupported("subqueries in a materialized view");
        let Some(mut applies) = self.applies.take() else {
            if self.streaming {
                return Err(in_mv());
            }
            return Err(SqlError::unsupported(
                "subqueries outside the WHERE clause and select list of a non-aggregating SELECT",
            ));
        };
        let saved = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed here",
            },
        );
        let r = self.decorrelate(outer, q);
        self.ctx = saved;
        let (plan, outer_keys) = r?;
        if applies.base == HAVING_APPLIES_BASE && !outer_keys.is_empty() {
            // The outer row of HAVING is a group: a correlation would be
            // over its keys and aggregates, which `decorrelate` does not
            // bind.
            return Err(SqlError::unsupported("correlated subqueries in HAVING"));
        }
        // In an MV, only a subquery that is one row whatever the data: an
        // uncorrelated aggregate without GROUP BY or HAVING (the dynamic
        // filter `WHERE t.v > (SELECT max(v) FROM u)`), so that the error
        // of a second row cannot arise while the view is maintained.
        if self.streaming && !(outer_keys.is_empty() && always_one_row(&plan)) {
            return Err(in_mv());
        }
        let at = applies.width() + outer_keys.len();
        let ty = plan
            .types()
            .get(outer_keys.len() + 1)
            .copied()
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::InternalError,
                    "subquery plan without a value column",
                )
            })?;
        applies.joins.push(Apply { plan, outer_keys });
        self.applies = Some(applies);
        let value = build_func(
            Func::ScalarSubquery,
            vec![
                Expr::input_ref(at, DataType::Int64),
                Expr::input_ref(at + 1, ty),
            ],
        )?;
        Ok(BExpr::Typed(value))
    }

    /// The grouped plan of a subquery and the outer expressions its keys
    /// are matched with.
    fn decorrelate(
        &mut self,
        outer: &Scope,
        q: &ast::Query,
    ) -> SqlResult<(LogicalPlan, Vec<Expr>)> {
        // Uncorrelated: any query of one column.
        match self.bind_query(q) {
            Ok(bq) => {
                if bq.names.len() != 1 {
                    return Err(SqlError::syntax("subquery must return only one column"));
                }
                return Ok((single_value(bq.plan)?, Vec::new()));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::UndefinedColumn | ErrorKind::UndefinedTable
                ) => {}
            Err(e) => return Err(e),
        }
        let shape = || SqlError::unsupported(format!("subquery \"{q}\""));
        if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some()
        {
            return Err(shape());
        }
        let SetExpr::Select(s) = q.body.as_ref() else {
            return Err(shape());
        };
        let item = match s.projection.as_slice() {
            [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }] => e,
            [_] => return Err(shape()),
            _ => {
                return Err(SqlError::syntax("subquery must return only one column"));
            }
        };
        let grouped = !matches!(&s.group_by, GroupByExpr::Expressions(v, _) if v.is_empty());
        if grouped || s.having.is_some() || s.distinct.is_some() || contains_aggregate(item) {
            return Err(shape());
        }
        let items = self.bind_from_items(&s.from)?;
        let mut inner = Scope::default();
        for (_, sc) in &items {
            inner = inner.concat(sc.clone())?;
        }
        let mut terms = Vec::new();
        let mut keys: Vec<(Expr, Expr)> = Vec::new();
        let mut parts = Vec::new();
        if let Some(w) = &s.selection {
            conjuncts(w, &mut parts);
        }
        for c in parts {
            match self.bind_bool(&inner, c, "WHERE") {
                Ok(t) => terms.push(t),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::UndefinedColumn | ErrorKind::UndefinedTable
                    ) =>
                {
                    match self.correlation(outer, &inner, c)? {
                        Some(pair) => keys.push(pair),
                        None => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let value = self.bind_typed(&inner, item)?;
        let plan = self.build_from(items, and_all(terms)?)?;
        let (outer_keys, mut exprs): (Vec<Expr>, Vec<Expr>) = keys.into_iter().unzip();
        exprs.push(value);
        let plan = LogicalPlan::Project {
            input: Box::new(plan),
            fields: exprs
                .iter()
                .enumerate()
                .map(|(i, e)| Field::new(format!("_subquery{i}"), e.return_type()))
                .collect(),
            exprs,
        };
        Ok((single_value(plan)?, outer_keys))
    }

    /// `(outer, inner)` key expressions of a correlated conjunct
    /// `inner = outer` (either way round), cast to a common type; `None`
    /// when the conjunct has another form.
    fn correlation(
        &mut self,
        outer: &Scope,
        inner: &Scope,
        c: &ast::Expr,
    ) -> SqlResult<Option<(Expr, Expr)>> {
        let ast::Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = c
        else {
            return Ok(None);
        };
        for (i, o) in [(left, right), (right, left)] {
            let Ok(ie) = self.bind_expr(inner, i) else {
                continue;
            };
            let Ok(oe) = self.bind_expr(outer, o) else {
                continue;
            };
            let (it, ot) = match (ie.hint(), oe.hint()) {
                (Some(a), Some(b)) => (a, b),
                (Some(a), None) => (a, a),
                (None, Some(b)) => (b, b),
                (None, None) => (DataType::Varchar, DataType::Varchar),
            };
            let t = common_type(it, ot).map_err(|_| {
                SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!(
                        "operator does not exist: {} = {}",
                        it.pg_name(),
                        ot.pg_name()
                    ),
                )
            })?;
            let ie = self.resolve(ie, t)?;
            let oe = self.resolve(oe, t)?;
            let cast = |e: Expr| {
                if e.return_type() == t {
                    Ok(e)
                } else {
                    build_cast(e, t, false)
                }
            };
            return Ok(Some((cast(oe)?, cast(ie)?)));
        }
        Ok(None)
    }
}
