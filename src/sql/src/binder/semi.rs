//! `EXISTS`, `NOT EXISTS`, `IN (subquery)` and `NOT IN (subquery)` in a
//! WHERE clause, bound as semi and anti joins.
//!
//! A top-level conjunct of WHERE of one of these forms (possibly under
//! `NOT`) becomes a [`JoinKind::LeftSemi`] or [`JoinKind::LeftAnti`] join
//! of the filtered FROM rows with the subquery; the join keeps the outer
//! row's layout, so the rest of the query does not notice it. The
//! subquery is decorrelated as scalar subqueries are (see `subquery.rs`):
//! uncorrelated, it can be any query; correlated, it must be a plain
//! `SELECT … FROM … WHERE …` whose conjuncts naming the outer row are
//! comparisons `inner op outer`. Those become join terms: equalities the
//! join's hash keys, other comparisons its condition.
//!
//! `x IN (SELECT v …)` joins on `x = v`: NULL on either side never matches,
//! which is what a WHERE clause makes of IN's NULL. `x NOT IN (SELECT v …)`
//! is FALSE or NULL as soon as one `x = v` is not FALSE, that is when the
//! subquery has a row with `x = v`, a row with a NULL `v`, or any row for a
//! NULL `x`: three anti joins, one per case, so that the first has `x = v`
//! as hash key and the other two one-sided terms (`v IS NULL` filters the
//! subquery, `x IS NULL` picks the outer rows that can have partners at
//! all). Those two have only the correlation as key: uncorrelated, they
//! run on one actor in an MV, over few rows.
//!
//! Elsewhere (under OR, in a select list) these forms are refused (feature_not_supported).

use ebbflow_common::ErrorKind;
use sqlparser::ast::{self, BinaryOperator, GroupByExpr, SelectItem, SetExpr, UnaryOperator};

use super::expr::BExpr;
use super::from::{and_all, build_join};
use super::scope::Scope;
use super::subquery::conjuncts;
use super::{Binder, ExprCtx};
use crate::{SqlError, SqlResult};
use ebbflow_common::Field;
use ebbflow_expr::{build_cast, build_func, common_type, Expr, Func};
use ebbflow_planner::logical::{JoinKind, LogicalPlan};

/// A WHERE conjunct that is bound as a semi or anti join.
pub(super) struct SemiTerm<'a> {
    subquery: &'a ast::Query,
    /// The tested expression of `IN`; `None` for `EXISTS`.
    tested: Option<&'a ast::Expr>,
    negated: bool,
}

/// Split WHERE into its semi/anti join terms and the other conjuncts
/// (both empty without WHERE).
pub(super) fn split_semi_terms(where_: Option<&ast::Expr>) -> (Vec<SemiTerm<'_>>, Vec<&ast::Expr>) {
    let mut parts = Vec::new();
    if let Some(w) = where_ {
        conjuncts(w, &mut parts);
    }
    let mut semis = Vec::new();
    let mut rest = Vec::new();
    for p in parts {
        match semi_term(p, false) {
            Some(t) => semis.push(t),
            None => rest.push(p),
        }
    }
    (semis, rest)
}

fn semi_term(e: &ast::Expr, negate: bool) -> Option<SemiTerm<'_>> {
    match e {
        ast::Expr::Nested(inner) => semi_term(inner, negate),
        ast::Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => semi_term(expr, !negate),
        ast::Expr::Exists { subquery, negated } => Some(SemiTerm {
            subquery,
            tested: None,
            negated: *negated != negate,
        }),
        ast::Expr::In {
            expr,
            target: ast::InTarget::Subquery(subquery),
            negated,
            ..
        } => Some(SemiTerm {
            subquery,
            tested: Some(expr),
            negated: *negated != negate,
        }),
        _ => None,
    }
}

/// The comparison operators a correlated conjunct may use, and the
/// operator with its operands swapped.
fn comparison(op: &BinaryOperator) -> Option<(Func, Func)> {
    Some(match op {
        BinaryOperator::Eq => (Func::Eq, Func::Eq),
        BinaryOperator::NotEq => (Func::NotEq, Func::NotEq),
        BinaryOperator::Lt => (Func::Lt, Func::Gt),
        BinaryOperator::LtEq => (Func::LtEq, Func::GtEq),
        BinaryOperator::Gt => (Func::Gt, Func::Lt),
        BinaryOperator::GtEq => (Func::GtEq, Func::LtEq),
        _ => return None,
    })
}

impl Binder<'_> {
    /// Whether the WHERE clause `w` has semi/anti join terms (subqueries
    /// over catalogs that are always empty are folded instead).
    pub(super) fn has_semi_terms(&self, w: Option<&ast::Expr>) -> bool {
        split_semi_terms(w)
            .0
            .iter()
            .any(|t| !self.over_empty_catalog(t.subquery))
    }

    /// Join `plan` (the rows of `outer`) with the subquery of `term`,
    /// keeping `plan`'s columns.
    pub(super) fn bind_semi_join(
        &mut self,
        plan: LogicalPlan,
        outer: &Scope,
        term: &SemiTerm<'_>,
    ) -> SqlResult<LogicalPlan> {
        let nleft = plan.fields().len();
        // Scalar subqueries inside are not the enclosing clause's.
        let applies = self.applies.take();
        let ctx = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed here",
            },
        );
        let r = self.semi_subquery(outer, term, nleft);
        self.ctx = ctx;
        self.applies = applies;
        let (right, mut terms, value) = r?;
        let kind = if term.negated {
            JoinKind::LeftAnti
        } else {
            JoinKind::LeftSemi
        };
        let (Some(x), Some(v)) = (term.tested, value) else {
            return build_join(plan, right, kind, and_all(terms)?, nleft);
        };
        let x = self.bind_expr(outer, x)?;
        let eq = self.bind_func(Func::Eq, vec![x, BExpr::Typed(v)])?;
        if !term.negated {
            terms.push(eq);
            return build_join(plan, right, kind, and_all(terms)?, nleft);
        }
        // NOT IN: no partner with `x = v` (a hash key), none with a NULL
        // `v`, and, for a NULL `x`, none at all: three anti joins, whose
        // one-sided terms filter rows before they are stored or compared.
        let Expr::Func { args, .. } = &eq else {
            return Err(SqlError::new(
                ErrorKind::InternalError,
                "IN comparison is not a call",
            ));
        };
        let [xc, vc] = args.as_slice() else {
            return Err(SqlError::new(
                ErrorKind::InternalError,
                "IN comparison is not binary",
            ));
        };
        let null_v = build_func(Func::IsNull, vec![vc.clone()])?;
        let null_x = build_func(Func::IsNull, vec![xc.clone()])?;
        let with = |t: Expr| {
            let mut all = terms.clone();
            all.push(t);
            and_all(all)
        };
        let plan = build_join(plan, right.clone(), kind, with(eq)?, nleft)?;
        let plan = build_join(plan, right.clone(), kind, with(null_v)?, nleft)?;
        build_join(plan, right, kind, with(null_x)?, nleft)
    }

    /// The subquery's plan, the join terms of its correlation and, for
    /// IN, its value, over `outer ++ subquery`.
    fn semi_subquery(
        &mut self,
        outer: &Scope,
        term: &SemiTerm<'_>,
        nleft: usize,
    ) -> SqlResult<(LogicalPlan, Vec<Expr>, Option<Expr>)> {
        let q = term.subquery;
        // Uncorrelated: any query (of one column for IN).
        match self.bind_query(q) {
            Ok(bq) => {
                let mut value = None;
                if term.tested.is_some() {
                    if bq.names.len() != 1 {
                        return Err(too_many_columns(bq.names.len()));
                    }
                    let ty = bq.plan.types().first().copied().ok_or_else(|| {
                        SqlError::new(ErrorKind::InternalError, "subquery without columns")
                    })?;
                    value = Some(Expr::input_ref(nleft, ty));
                }
                return Ok((bq.plan, Vec::new(), value));
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::UndefinedColumn | ErrorKind::UndefinedTable
                ) => {}
            Err(e) => return Err(e),
        }
        let shape = || SqlError::unsupported(format!("correlated subquery \"{q}\""));
        if q.with.is_some() || q.order_by.is_some() || q.limit_clause.is_some() || q.fetch.is_some()
        {
            return Err(shape());
        }
        let SetExpr::Select(s) = q.body.as_ref() else {
            return Err(shape());
        };
        let grouped = !matches!(&s.group_by, GroupByExpr::Expressions(v, _) if v.is_empty());
        if grouped || s.having.is_some() {
            return Err(shape());
        }
        let item = match (term.tested, s.projection.as_slice()) {
            (None, _) => None,
            (Some(_), [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }]) => {
                if super::func::contains_aggregate(e) {
                    return Err(shape());
                }
                Some(e)
            }
            (Some(_), [_]) => return Err(shape()),
            (Some(_), items) => return Err(too_many_columns(items.len())),
        };
        let items = self.bind_from_items(&s.from)?;
        let mut inner = Scope::default();
        for (_, sc) in &items {
            inner = inner.concat(sc.clone())?;
        }
        let mut inner_terms = Vec::new();
        // `(op, outer, inner)`: `outer op inner` over the outer row and a
        // column of the subquery.
        let mut correlated: Vec<(Func, Expr, Expr)> = Vec::new();
        let mut parts = Vec::new();
        if let Some(w) = &s.selection {
            conjuncts(w, &mut parts);
        }
        for c in parts {
            match self.bind_bool(&inner, c, "WHERE") {
                Ok(t) => inner_terms.push(t),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::UndefinedColumn | ErrorKind::UndefinedTable
                    ) =>
                {
                    match self.correlated_comparison(outer, &inner, c)? {
                        Some(t) => correlated.push(t),
                        None => return Err(self.unbound(outer, &inner, c, e, shape())),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let value = match item {
            None => None,
            Some(x) => match self.bind_typed(&inner, x) {
                Ok(v) => Some(v),
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::UndefinedColumn | ErrorKind::UndefinedTable
                    ) =>
                {
                    return Err(self.unbound(outer, &inner, x, e, shape()))
                }
                Err(e) => return Err(e),
            },
        };
        let plan = self.build_from(items, and_all(inner_terms)?)?;
        let mut exprs = Vec::with_capacity(correlated.len() + 1);
        let mut terms = Vec::with_capacity(correlated.len() + 1);
        for (j, (op, o, i)) in correlated.into_iter().enumerate() {
            let r = Expr::input_ref(nleft + j, i.return_type());
            terms.push(build_func(op, vec![o, r])?);
            exprs.push(i);
        }
        let value = value.map(|v| {
            let r = Expr::input_ref(nleft + exprs.len(), v.return_type());
            exprs.push(v);
            r
        });
        let plan = LogicalPlan::Project {
            input: Box::new(plan),
            fields: exprs
                .iter()
                .enumerate()
                .map(|(i, e)| Field::new(format!("_subquery{i}"), e.return_type()))
                .collect(),
            exprs,
        };
        Ok((plan, terms, value))
    }

    /// The error for `e`, which names something the subquery does not
    /// have: `unsupported` if the outer row has it (a correlation of a
    /// form not supported), else the name error (`err` if the scopes
    /// cannot be put side by side).
    fn unbound(
        &mut self,
        outer: &Scope,
        inner: &Scope,
        e: &ast::Expr,
        err: SqlError,
        unsupported: SqlError,
    ) -> SqlError {
        match outer.clone().concat(inner.clone()) {
            Ok(both) => match self.bind_expr(&both, e) {
                Err(x)
                    if matches!(
                        x.kind(),
                        ErrorKind::UndefinedColumn | ErrorKind::UndefinedTable
                    ) =>
                {
                    x
                }
                _ => unsupported,
            },
            Err(_) => err,
        }
    }

    /// `(op, outer, inner)` of a correlated conjunct comparing an
    /// expression of the subquery with one of the outer row (either way
    /// round, normalised to `outer op inner`), both cast to a common type;
    /// `None` when the conjunct has another form.
    pub(super) fn correlated_comparison(
        &mut self,
        outer: &Scope,
        inner: &Scope,
        c: &ast::Expr,
    ) -> SqlResult<Option<(Func, Expr, Expr)>> {
        let ast::Expr::BinaryOp { left, op, right } = c else {
            return Ok(None);
        };
        let Some((func, swapped)) = comparison(op) else {
            return Ok(None);
        };
        for (o, i, f) in [(left, right, func), (right, left, swapped)] {
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
                (None, None) => (
                    ebbflow_common::DataType::Varchar,
                    ebbflow_common::DataType::Varchar,
                ),
            };
            let t = common_type(it, ot).map_err(|_| {
                SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!(
                        "operator does not exist: {} {op} {}",
                        ot.pg_name(),
                        it.pg_name()
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
            return Ok(Some((f, cast(oe)?, cast(ie)?)));
        }
        Ok(None)
    }
}

fn too_many_columns(n: usize) -> SqlError {
    if n == 0 {
        SqlError::syntax("subquery must return only one column")
    } else {
        SqlError::syntax("subquery has too many columns")
    }
}
