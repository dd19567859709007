//! Binding FROM: relations, subqueries, CTE references and joins.

use ebbflow_common::ErrorKind;
use std::sync::Arc;

use sqlparser::ast::{self, JoinConstraint, JoinOperator, ObjectNamePart, TableFactor};

use super::expr::BExpr;
use super::scope::{Scope, ScopeColumn};
use super::time_window::WindowKind;
use super::{Binder, ExprCtx};
use crate::parser::ident_value;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Field};
use ebbflow_expr::{build_cast, build_func, common_type, Expr, Func};
use ebbflow_meta::catalog::{RelationDesc, RelationKind};
use ebbflow_planner::logical::{JoinKind, LogicalPlan};

/// `(schema, name)` of a possibly qualified relation name.
pub(super) fn relation_name(name: &ast::ObjectName) -> SqlResult<(Option<String>, String)> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Ok(ident_value(&i.value, i.quote_style)),
            ObjectNamePart::Function(_) => Err(SqlError::syntax(format!("invalid name {name}"))),
        })
        .collect::<SqlResult<_>>()?;
    match parts.as_slice() {
        [n] => Ok((None, n.clone())),
        [s, n] | [_, s, n] => Ok((Some(s.clone()), n.clone())),
        _ => Err(SqlError::syntax(format!(
            "improper qualified name (too many dotted names): {name}"
        ))),
    }
}

/// Split a conjunction into its terms.
pub(super) fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Func {
            func: Func::And,
            args,
            ..
        } => args.into_iter().for_each(|a| split_and(a, out)),
        other => out.push(other),
    }
}

/// AND of the terms (`None` when there are none).
pub(super) fn and_all(terms: Vec<Expr>) -> SqlResult<Option<Expr>> {
    let mut acc: Option<Expr> = None;
    for t in terms {
        acc = Some(match acc {
            None => t,
            Some(a) => build_func(Func::And, vec![a, t])?,
        });
    }
    Ok(acc)
}

fn refs(e: &Expr) -> Vec<usize> {
    let mut v = Vec::new();
    e.collect_input_refs(&mut v);
    v
}

/// `plan`'s columns followed by `extra` computed columns.
fn with_extra_columns(plan: LogicalPlan, extra: Vec<Expr>) -> LogicalPlan {
    if extra.is_empty() {
        return plan;
    }
    let mut fields = plan.fields();
    let mut exprs: Vec<Expr> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| Expr::input_ref(i, f.data_type))
        .collect();
    for (i, e) in extra.into_iter().enumerate() {
        fields.push(Field::new(format!("_join_key{i}"), e.return_type()));
        exprs.push(e);
    }
    LogicalPlan::Project {
        input: Box::new(plan),
        exprs,
        fields,
    }
}

/// `plan` filtered by the AND of `terms`.
fn filtered(plan: LogicalPlan, terms: Vec<Expr>) -> SqlResult<LogicalPlan> {
    Ok(match and_all(terms)? {
        Some(predicate) => LogicalPlan::Filter {
            input: Box::new(plan),
            predicate,
        },
        None => plan,
    })
}

/// A join whose equality terms between the two sides become equi-join keys
/// (computed keys and keys of different types get extra Project columns
/// that a Project above the join drops again) and the rest the residual
/// condition. `cond` is over the concatenated row; `nleft` is the width of
/// the left input.
pub(super) fn build_join(
    left: LogicalPlan,
    right: LogicalPlan,
    kind: JoinKind,
    cond: Option<Expr>,
    nleft: usize,
) -> SqlResult<LogicalPlan> {
    let left_fields = left.fields();
    let right_fields = right.fields();
    let nright = right_fields.len();
    let mut terms = Vec::new();
    if let Some(c) = cond {
        split_and(c, &mut terms);
    }
    let mut pairs: Vec<(Expr, Expr)> = Vec::new();
    let mut residual = Vec::new();
    for t in terms {
        if let Expr::Func {
            func: Func::Eq,
            args,
            ..
        } = &t
        {
            if let [a, b] = args.as_slice() {
                let (ra, rb) = (refs(a), refs(b));
                let only_left = |r: &[usize]| !r.is_empty() && r.iter().all(|i| *i < nleft);
                let only_right = |r: &[usize]| !r.is_empty() && r.iter().all(|i| *i >= nleft);
                let pair = if only_left(&ra) && only_right(&rb) {
                    Some((a.clone(), b.clone()))
                } else if only_right(&ra) && only_left(&rb) {
                    Some((b.clone(), a.clone()))
                } else {
                    None
                };
                if let Some((l, mut r)) = pair {
                    r.map_input_refs(&mut |i| i - nleft);
                    pairs.push((l, r));
                    continue;
                }
            }
        }
        residual.push(t);
    }
    // A semi/anti join's terms over the right row alone filter the right
    // input (a right row failing them is nobody's partner); a semi join's
    // terms over the left row alone filter the left input.
    let (right, left) = if kind.left_only() {
        let reads = |t: &Expr, right_side: bool| {
            let r = refs(t);
            !r.is_empty() && r.iter().all(|&i| (i >= nleft) == right_side)
        };
        let (rterms, rest): (Vec<Expr>, Vec<Expr>) =
            residual.into_iter().partition(|t| reads(t, true));
        let (lterms, rest): (Vec<Expr>, Vec<Expr>) = rest
            .into_iter()
            .partition(|t| kind == JoinKind::LeftSemi && reads(t, false));
        residual = rest;
        let mut rterms = rterms;
        for t in &mut rterms {
            t.map_input_refs(&mut |i| i - nleft);
        }
        (filtered(right, rterms)?, filtered(left, lterms)?)
    } else {
        (right, left)
    };
    let mut lextra = Vec::new();
    let mut rextra = Vec::new();
    let mut on = Vec::with_capacity(pairs.len());
    for (mut l, mut r) in pairs {
        let (lt, rt) = (l.return_type(), r.return_type());
        if lt != rt {
            let t = common_type(lt, rt)?;
            if lt != t {
                l = build_cast(l, t, false)?;
            }
            if rt != t {
                r = build_cast(r, t, false)?;
            }
        }
        let li = match l {
            Expr::InputRef { index, .. } => index,
            e => {
                lextra.push(e);
                nleft + lextra.len() - 1
            }
        };
        let ri = match r {
            Expr::InputRef { index, .. } => index,
            e => {
                rextra.push(e);
                nright + rextra.len() - 1
            }
        };
        on.push((li, ri));
    }
    let shift = lextra.len();
    let needs_restore = shift > 0 || !rextra.is_empty();
    let mut condition = and_all(residual)?;
    if let Some(c) = &mut condition {
        c.map_input_refs(&mut |i| if i >= nleft { i + shift } else { i });
    }
    let join = LogicalPlan::Join {
        left: Box::new(with_extra_columns(left, lextra)),
        right: Box::new(with_extra_columns(right, rextra)),
        kind,
        on,
        condition,
    };
    if !needs_restore || (kind.left_only() && shift == 0) {
        return Ok(join);
    }
    let nl2 = nleft + shift;
    let mut exprs = Vec::with_capacity(nleft + nright);
    for (i, f) in left_fields.iter().enumerate() {
        exprs.push(Expr::input_ref(i, f.data_type));
    }
    let mut fields = left_fields;
    if !kind.left_only() {
        for (i, f) in right_fields.iter().enumerate() {
            exprs.push(Expr::input_ref(nl2 + i, f.data_type));
        }
        fields.extend(right_fields);
    }
    Ok(LogicalPlan::Project {
        input: Box::new(join),
        exprs,
        fields,
    })
}

impl Binder<'_> {
    pub(super) fn lookup_relation(&self, name: &ast::ObjectName) -> SqlResult<Arc<RelationDesc>> {
        let (schema, rel) = relation_name(name)?;
        self.catalog
            .relation(schema.as_deref(), &rel)
            .ok_or_else(|| {
                let shown = match &schema {
                    Some(s) => format!("{s}.{rel}"),
                    None => rel.clone(),
                };
                SqlError::new(
                    ErrorKind::UndefinedTable,
                    format!("relation \"{shown}\" does not exist"),
                )
            })
    }

    pub(super) fn bind_from_items(
        &mut self,
        from: &[ast::TableWithJoins],
    ) -> SqlResult<Vec<(LogicalPlan, Scope)>> {
        from.iter().map(|t| self.bind_table_with_joins(t)).collect()
    }

    /// Cross-join the comma-separated FROM items, moving each WHERE term
    /// into the lowest join that sees all its columns (so `FROM a, b WHERE
    /// a.k = b.k` is an equi-join, not a filtered cross product).
    pub(super) fn build_from(
        &mut self,
        items: Vec<(LogicalPlan, Scope)>,
        predicate: Option<Expr>,
    ) -> SqlResult<LogicalPlan> {
        let mut terms = Vec::new();
        if let Some(p) = predicate {
            split_and(p, &mut terms);
        }
        let mut ends = Vec::with_capacity(items.len());
        let mut total = 0;
        for (_, s) in &items {
            total += s.len();
            ends.push(total);
        }
        let mut per_join: Vec<Vec<Expr>> = vec![Vec::new(); items.len()];
        let mut rest = Vec::new();
        for t in terms {
            match refs(&t).into_iter().max() {
                Some(m) => match ends.iter().position(|e| m < *e) {
                    Some(j) if j > 0 => per_join[j].push(t),
                    _ => rest.push(t),
                },
                None => rest.push(t),
            }
        }
        let mut iter = items.into_iter().enumerate();
        let mut plan = match iter.next() {
            Some((_, (p, _))) => p,
            None => LogicalPlan::Values {
                rows: vec![vec![]],
                fields: vec![],
            },
        };
        for (j, (p, _)) in iter {
            let cond = and_all(std::mem::take(&mut per_join[j]))?;
            plan = build_join(plan, p, JoinKind::Inner, cond, ends[j - 1])?;
        }
        if let Some(p) = and_all(rest)? {
            plan = LogicalPlan::Filter {
                input: Box::new(plan),
                predicate: p,
            };
        }
        Ok(plan)
    }

    fn bind_table_with_joins(
        &mut self,
        twj: &ast::TableWithJoins,
    ) -> SqlResult<(LogicalPlan, Scope)> {
        let mut acc = self.bind_table_factor(&twj.relation)?;
        for j in &twj.joins {
            acc = self.bind_join(acc, j)?;
        }
        Ok(acc)
    }

    /// A table, source, view or CTE by name.
    pub(super) fn bind_named_relation(
        &mut self,
        name: &ast::ObjectName,
    ) -> SqlResult<(LogicalPlan, Scope)> {
        let (schema, rel) = relation_name(name)?;
        let cte = if schema.is_none() {
            self.ctes.iter().rev().find_map(|m| m.get(&rel)).cloned()
        } else {
            None
        };
        if let Some(bq) = cte {
            let types = bq.plan.types();
            let scope = Scope::of_relation(
                Some(&rel),
                bq.names
                    .iter()
                    .cloned()
                    .zip(types)
                    .map(|(n, t)| (n, t, false)),
            );
            return Ok((bq.plan, scope));
        }
        let relation = self.lookup_relation(name)?;
        if relation.kind == RelationKind::View {
            return self.bind_view_ref(&relation, &rel);
        }
        let scope = Scope::of_relation(
            Some(&rel),
            relation
                .columns
                .iter()
                .map(|c| (c.name.clone(), c.data_type, c.hidden)),
        );
        Ok((LogicalPlan::Scan { relation }, scope))
    }

    fn bind_table_factor(&mut self, tf: &TableFactor) -> SqlResult<(LogicalPlan, Scope)> {
        match tf {
            TableFactor::Table {
                name, alias, args, ..
            } => {
                let (schema, rel) = relation_name(name)?;
                let (plan, mut scope) = match args {
                    None => self.bind_named_relation(name)?,
                    Some(args)
                        if super::series::is_generate_series(schema.as_deref(), &rel)
                            || super::unnest::is_unnest(schema.as_deref(), &rel) =>
                    {
                        let (plan, mut scope) = if super::unnest::is_unnest(schema.as_deref(), &rel)
                        {
                            let exprs = super::unnest::plain_args(&args.args)?;
                            self.bind_unnest_relation(&rel, &exprs)?
                        } else {
                            self.bind_generate_series(&rel, &args.args)?
                        };
                        // A function of one column: a bare alias names the
                        // column too, as in PostgreSQL.
                        if let Some(a) = alias.as_ref().filter(|a| a.columns.is_empty()) {
                            if let Some(c) = scope.columns.first_mut() {
                                c.name = ident_value(&a.name.value, a.name.quote_style);
                            }
                        }
                        (plan, scope)
                    }
                    Some(args) => match WindowKind::of(schema.as_deref(), &rel) {
                        Some(kind) => self.bind_time_window(kind, &args.args)?,
                        None => {
                            return Err(SqlError::unsupported(format!("table function {name}")))
                        }
                    },
                };
                if let Some(a) = alias {
                    apply_alias(&mut scope, a)?;
                }
                Ok((plan, scope))
            }
            TableFactor::Derived {
                lateral,
                subquery,
                alias,
                ..
            } => {
                if *lateral {
                    return Err(SqlError::unsupported("LATERAL"));
                }
                let bq = self.bind_query(subquery)?;
                let types = bq.plan.types();
                let mut scope = Scope::of_relation(
                    None,
                    bq.names.into_iter().zip(types).map(|(n, t)| (n, t, false)),
                );
                if let Some(a) = alias {
                    apply_alias(&mut scope, a)?;
                }
                Ok((bq.plan, scope))
            }
            TableFactor::NestedJoin {
                table_with_joins,
                alias,
            } => {
                let (plan, mut scope) = self.bind_table_with_joins(table_with_joins)?;
                if let Some(a) = alias {
                    apply_alias(&mut scope, a)?;
                }
                Ok((plan, scope))
            }
            TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_offset_alias: None,
                with_ordinality: false,
            } => {
                let exprs: Vec<&ast::Expr> = array_exprs.iter().collect();
                let (plan, mut scope) = self.bind_unnest_relation("unnest", &exprs)?;
                if let Some(a) = alias.as_ref().filter(|a| a.columns.is_empty()) {
                    if let Some(c) = scope.columns.first_mut() {
                        c.name = ident_value(&a.name.value, a.name.quote_style);
                    }
                }
                if let Some(a) = alias {
                    apply_alias(&mut scope, a)?;
                }
                Ok((plan, scope))
            }
            other => Err(SqlError::unsupported(format!("FROM item \"{other}\""))),
        }
    }

    fn bind_join(
        &mut self,
        (lplan, lscope): (LogicalPlan, Scope),
        join: &ast::Join,
    ) -> SqlResult<(LogicalPlan, Scope)> {
        let (kind, constraint) = match &join.join_operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) | JoinOperator::CrossJoin(c) => {
                (JoinKind::Inner, c)
            }
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (JoinKind::Left, c),
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (JoinKind::Right, c),
            JoinOperator::FullOuter(c) => (JoinKind::Full, c),
            other => {
                let text = format!("{other:?}");
                let name = text.split('(').next().unwrap_or("this").to_uppercase();
                return Err(SqlError::unsupported(format!("{name} join")));
            }
        };
        let (rplan, rscope) = self.bind_table_factor(&join.relation)?;
        let nleft = lscope.len();
        let mut scope = lscope.clone().concat(rscope.clone())?;
        let using: Vec<String> = match constraint {
            JoinConstraint::On(e) => {
                let saved = std::mem::replace(
                    &mut self.ctx,
                    ExprCtx::Plain {
                        agg_error: "aggregate functions are not allowed in JOIN conditions",
                    },
                );
                let cond = self.bind_bool(&scope, e, "JOIN/ON");
                self.ctx = saved;
                let plan = build_join(lplan, rplan, kind, Some(cond?), nleft)?;
                return Ok((plan, scope));
            }
            JoinConstraint::None => {
                if kind != JoinKind::Inner {
                    return Err(SqlError::syntax(
                        "syntax error: an outer join needs an ON or USING condition",
                    ));
                }
                let plan = build_join(lplan, rplan, kind, None, nleft)?;
                return Ok((plan, scope));
            }
            JoinConstraint::Using(cols) => cols
                .iter()
                .map(|c| relation_name(c).map(|(_, n)| n))
                .collect::<SqlResult<_>>()?,
            JoinConstraint::Natural => lscope
                .star
                .iter()
                .map(|&i| lscope.columns[i].name.clone())
                .filter(|n| rscope.star.iter().any(|&j| rscope.columns[j].name == *n))
                .collect(),
            JoinConstraint::UsingAlias(..) => {
                return Err(SqlError::unsupported("JOIN USING ... AS alias"))
            }
        };

        // USING / NATURAL: equality of same-named columns, which then
        // appear once in `*` and can be named unqualified.
        let mut cond_terms = Vec::with_capacity(using.len());
        let mut merged = Vec::with_capacity(using.len());
        for name in &using {
            let li = lscope.resolve(None, name).map_err(|_| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!(
                        "column \"{name}\" specified in USING clause does not exist in left table"
                    ),
                )
            })?;
            let ri = rscope.resolve(None, name).map_err(|_| {
                SqlError::new(
                    ErrorKind::UndefinedColumn,
                    format!(
                        "column \"{name}\" specified in USING clause does not exist in right table"
                    ),
                )
            })?;
            let l = Expr::input_ref(li, lscope.columns[li].ty);
            let r = Expr::input_ref(nleft + ri, rscope.columns[ri].ty);
            cond_terms.push(self.bind_func(
                Func::Eq,
                vec![BExpr::Typed(l.clone()), BExpr::Typed(r.clone())],
            )?);
            merged.push((li, nleft + ri, l, r));
        }
        let mut plan = build_join(lplan, rplan, kind, and_all(cond_terms)?, nleft)?;
        let mut first: Vec<usize> = Vec::new();
        let mut drop_from_star: Vec<usize> = Vec::new();
        let mut coalesced: Vec<(String, Expr)> = Vec::new();
        for (name, (li, ri, l, r)) in using.iter().zip(merged) {
            drop_from_star.push(li);
            drop_from_star.push(ri);
            match kind {
                JoinKind::Inner | JoinKind::Left | JoinKind::LeftSemi | JoinKind::LeftAnti => {
                    scope.columns[ri].unqualified = false;
                    first.push(li);
                }
                JoinKind::Right => {
                    scope.columns[li].unqualified = false;
                    first.push(ri);
                }
                JoinKind::Full => {
                    scope.columns[li].unqualified = false;
                    scope.columns[ri].unqualified = false;
                    let e =
                        self.bind_func(Func::Coalesce, vec![BExpr::Typed(l), BExpr::Typed(r)])?;
                    first.push(scope.len() + coalesced.len());
                    coalesced.push((name.clone(), e));
                }
            }
        }
        if !coalesced.is_empty() {
            let mut fields = plan.fields();
            let mut exprs: Vec<Expr> = fields
                .iter()
                .enumerate()
                .map(|(i, f)| Expr::input_ref(i, f.data_type))
                .collect();
            for (name, e) in coalesced {
                let ty: DataType = e.return_type();
                fields.push(Field::new(name.clone(), ty));
                exprs.push(e);
                scope.columns.push(ScopeColumn {
                    table: None,
                    name,
                    ty,
                    hidden: false,
                    unqualified: true,
                });
            }
            plan = LogicalPlan::Project {
                input: Box::new(plan),
                exprs,
                fields,
            };
        }
        let rest: Vec<usize> = scope
            .star
            .iter()
            .copied()
            .filter(|i| !drop_from_star.contains(i))
            .collect();
        scope.star = first.into_iter().chain(rest).collect();
        Ok((plan, scope))
    }
}

/// `AS alias [(c1, c2, ...)]`: requalify and rename visible columns.
fn apply_alias(scope: &mut Scope, alias: &ast::TableAlias) -> SqlResult<()> {
    let name = ident_value(&alias.name.value, alias.name.quote_style);
    scope.requalify(&name);
    if alias.columns.len() > scope.star.len() {
        return Err(SqlError::new(
            ErrorKind::InvalidColumnReference,
            format!(
                "table \"{name}\" has {} columns available but {} columns specified",
                scope.star.len(),
                alias.columns.len()
            ),
        ));
    }
    for (c, &i) in alias.columns.iter().zip(scope.star.iter()) {
        if c.data_type.is_some() {
            return Err(SqlError::unsupported("column types in a table alias"));
        }
        scope.columns[i].name = ident_value(&c.name.value, c.name.quote_style);
    }
    Ok(())
}
