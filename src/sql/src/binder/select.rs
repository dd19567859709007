//! Binding one `SELECT` block: FROM/WHERE, grouping and aggregates, the
//! select list, HAVING, DISTINCT and the ORDER BY keys.

use ebbflow_common::ErrorKind;
use sqlparser::ast::{self, Distinct, GroupByExpr, OrderByExpr, SelectItem, Value};

use super::expr::BExpr;
use super::from::{and_all, split_and};
use super::func::{contains_aggregate, figure_name};
use super::scope::Scope;
use super::semi::split_semi_terms;
use super::subquery::Applies;
use super::{Binder, ExprCtx};
use crate::parser::ident_value;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Field};
use ebbflow_expr::over::{Frame, WindowCall, WindowFuncKind};
use ebbflow_expr::{AggCall, AggKind, Expr};
use ebbflow_planner::logical::{LogicalPlan, OrderKey};

/// Where the columns of HAVING's scalar subqueries are numbered from while
/// the clause is bound (above any real column).
pub(super) const HAVING_APPLIES_BASE: usize = 1 << 30;

/// What an aggregating SELECT has collected so far: its group keys (over
/// the input row) and the aggregate calls found in the select list, HAVING
/// and ORDER BY.
#[derive(Debug, Default)]
pub(crate) struct AggState {
    pub group_keys: Vec<Expr>,
    /// Aggregate arguments, computed by the Project below the Aggregate
    /// after the group keys.
    pub args: Vec<Expr>,
    pub calls: Vec<AggCall>,
}

impl AggState {
    /// Register a call (deduplicated); returns its column in the
    /// Aggregate's output.
    pub fn add_call(
        &mut self,
        kind: AggKind,
        distinct: bool,
        arg: Option<Expr>,
        return_type: DataType,
    ) -> usize {
        let k = self.group_keys.len();
        let (arg_idx, arg_type) = match arg {
            None => (None, None),
            Some(a) => {
                let t = a.return_type();
                let i = match self.args.iter().position(|x| *x == a) {
                    Some(i) => i,
                    None => {
                        self.args.push(a);
                        self.args.len() - 1
                    }
                };
                (Some(k + i), Some(t))
            }
        };
        let call = AggCall {
            kind,
            arg: arg_idx,
            arg_type,
            return_type,
            distinct: distinct && kind != AggKind::CountStar,
        };
        let j = match self.calls.iter().position(|c| *c == call) {
            Some(j) => j,
            None => {
                self.calls.push(call);
                self.calls.len() - 1
            }
        };
        k + j
    }
}

/// A bound SELECT block before ORDER BY/LIMIT are applied.
pub(super) struct SelectOutput {
    /// Produces the select list, then any ORDER BY helper columns.
    pub plan: LogicalPlan,
    pub names: Vec<String>,
    pub unknown: Vec<bool>,
    pub order: Vec<OrderKey>,
    /// Number of select-list columns (the rest are helpers).
    pub visible: usize,
}

pub(super) fn agg_name(kind: AggKind) -> &'static str {
    match kind {
        AggKind::CountStar | AggKind::Count => "count",
        AggKind::Sum => "sum",
        AggKind::Min => "min",
        AggKind::Max => "max",
        AggKind::Avg => "avg",
        AggKind::BoolAnd => "bool_and",
        AggKind::BoolOr => "bool_or",
        AggKind::BitAnd => "bit_and",
        AggKind::BitOr => "bit_or",
        AggKind::BitXor => "bit_xor",
        AggKind::StringAgg => "string_agg",
        AggKind::ArrayAgg => "array_agg",
    }
}

/// `(desc, nulls_first)` with PostgreSQL's defaults.
pub(super) fn order_options(o: &ast::OrderByOptions) -> SqlResult<(bool, bool)> {
    let desc = match &o.sort {
        None | Some(ast::OrderBySort::Asc) => false,
        Some(ast::OrderBySort::Desc) => true,
        Some(ast::OrderBySort::Using(_)) => return Err(SqlError::unsupported("ORDER BY USING")),
    };
    Ok((desc, o.nulls_first.unwrap_or(desc)))
}

/// An ORDER BY item that names an output column: a position (`ORDER BY 2`)
/// or an output column name.
pub(super) fn output_ref(e: &ast::Expr, names: &[String]) -> SqlResult<Option<usize>> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            Value::Number(n, _) if n.bytes().all(|b| b.is_ascii_digit()) => {
                match n.parse::<usize>() {
                    Ok(p) if p >= 1 && p <= names.len() => Ok(Some(p - 1)),
                    _ => Err(SqlError::new(
                        ErrorKind::InvalidColumnReference,
                        format!("ORDER BY position {n} is not in select list"),
                    )),
                }
            }
            _ => Ok(None),
        },
        ast::Expr::Identifier(i) => {
            let name = ident_value(&i.value, i.quote_style);
            let mut found = names.iter().enumerate().filter(|(_, n)| **n == name);
            match (found.next(), found.next()) {
                (Some((i, _)), None) => Ok(Some(i)),
                (Some(_), Some(_)) => Err(SqlError::new(
                    ErrorKind::AmbiguousColumn,
                    format!("ORDER BY \"{name}\" is ambiguous"),
                )),
                _ => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

fn is_unknown(b: &BExpr) -> bool {
    matches!(b, BExpr::Unknown(_))
}

impl Binder<'_> {
    pub(super) fn bind_select(
        &mut self,
        s: &ast::Select,
        order_by: &[OrderByExpr],
    ) -> SqlResult<SelectOutput> {
        if s.top.is_some() {
            return Err(SqlError::unsupported("TOP"));
        }
        if s.into.is_some() {
            return Err(SqlError::unsupported("SELECT INTO"));
        }
        if !s.lateral_views.is_empty() || !s.connect_by.is_empty() || s.qualify.is_some() {
            return Err(SqlError::unsupported(format!("SELECT syntax \"{s}\"")));
        }
        if !s.named_window.is_empty() {
            return Err(SqlError::unsupported("named windows (WINDOW clause)"));
        }
        // Window calls of an enclosing block are not this block's.
        let outer_windows = self.windows.take();
        let (distinct, distinct_on): (bool, &[ast::Expr]) = match &s.distinct {
            None | Some(Distinct::All) => (false, &[]),
            Some(Distinct::Distinct) => (true, &[]),
            Some(Distinct::On(on)) => (false, on),
        };
        let group_exprs: &[ast::Expr] = match &s.group_by {
            GroupByExpr::Expressions(v, mods) => {
                if !mods.is_empty() {
                    return Err(SqlError::unsupported("GROUP BY modifiers"));
                }
                v
            }
            GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
        };

        // FROM and WHERE.
        let items = self.bind_from_items(&s.from)?;
        let mut scope = Scope::default();
        for (_, sc) in &items {
            scope = scope.concat(sc.clone())?;
        }
        self.ctx = ExprCtx::Plain {
            agg_error: "aggregate functions are not allowed in WHERE",
        };
        // Subqueries are bound while their clause is; `applies` holds
        // those of the current clause (restored for the enclosing query).
        let outer_applies = self.applies.replace(Applies::new(scope.len()));
        // EXISTS / IN (subquery) conjuncts become semi and anti joins of
        // the filtered rows (see `semi.rs`).
        let semis = if self.has_semi_terms(s.selection.as_ref()) {
            split_semi_terms(s.selection.as_ref())
        } else {
            (Vec::new(), s.selection.iter().collect())
        };
        let (semis, rest) = semis;
        let predicate = match rest.as_slice() {
            [] => None,
            [w] => Some(self.bind_bool(&scope, w, "WHERE")?),
            parts => {
                let mut terms = Vec::with_capacity(parts.len());
                for w in parts {
                    terms.push(self.bind_bool(&scope, w, "WHERE")?);
                }
                and_all(terms)?
            }
        };
        let applies = self
            .applies
            .take()
            .unwrap_or_else(|| Applies::new(scope.len()));
        let mut plan = if applies.is_empty() {
            self.build_from(items, predicate)?
        } else {
            // Terms reading a subquery's value filter after its join.
            let base = scope.len();
            let mut terms = Vec::new();
            if let Some(p) = predicate {
                split_and(p, &mut terms);
            }
            let (after, before): (Vec<Expr>, Vec<Expr>) = terms.into_iter().partition(|t| {
                let mut refs = Vec::new();
                t.collect_input_refs(&mut refs);
                refs.iter().any(|&i| i >= base)
            });
            let plan = self.build_from(items, and_all(before)?)?;
            let plan = applies.attach(plan, &mut scope)?;
            match and_all(after)? {
                Some(predicate) => LogicalPlan::Filter {
                    input: Box::new(plan),
                    predicate,
                },
                None => plan,
            }
        };
        for t in &semis {
            plan = self.bind_semi_join(plan, &scope, t)?;
        }

        // Grouping.
        let has_agg = !group_exprs.is_empty()
            || s.having.is_some()
            || s.projection.iter().any(|item| match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    contains_aggregate(e)
                }
                _ => false,
            })
            || order_by.iter().any(|o| contains_aggregate(&o.expr));
        plan = self.expand_select_list(&mut scope, plan, &s.projection, has_agg)?;
        plan = self.expand_unnest(&mut scope, plan, &s.projection, has_agg)?;
        if has_agg {
            self.ctx = ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed in GROUP BY",
            };
            let mut keys: Vec<Expr> = Vec::new();
            for g in group_exprs {
                let k = self.bind_group_key(&scope, g, &s.projection)?;
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
            self.ctx = ExprCtx::Agg(AggState {
                group_keys: keys,
                ..Default::default()
            });
        } else {
            self.ctx = ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed here",
            };
        }

        // Select list (and ORDER BY): scalar subqueries only without
        // aggregation, whose output is not the row they would join to.
        if !has_agg {
            self.applies = Some(Applies::new(scope.len()));
        }
        // Window calls: in the select list and ORDER BY only.
        self.windows = Some(Vec::new());
        let mut exprs = Vec::new();
        let mut names = Vec::new();
        let mut unknown = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }
                    if super::composite::srf_arg(e).is_some() =>
                {
                    let alias = match item {
                        SelectItem::ExprWithAlias { alias, .. } => {
                            Some(ident_value(&alias.value, alias.quote_style))
                        }
                        _ => None,
                    };
                    for (e, name) in self.srf_item(&scope, alias.as_deref())? {
                        exprs.push(e);
                        names.push(name);
                        unknown.push(false);
                    }
                }
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }
                    if super::unnest::unnest_arg(e).is_some() =>
                {
                    exprs.push(self.unnest_item(&scope)?);
                    names.push(match item {
                        SelectItem::ExprWithAlias { alias, .. } => {
                            ident_value(&alias.value, alias.quote_style)
                        }
                        _ => super::unnest::srf_call(e)
                            .map_or("unnest", |(n, _)| n)
                            .to_string(),
                    });
                    unknown.push(false);
                }
                SelectItem::UnnamedExpr(e) => {
                    let b = self.bind_expr(&scope, e)?;
                    unknown.push(is_unknown(&b));
                    exprs.push(self.finalize(b)?);
                    names.push(figure_name(e));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let b = self.bind_expr(&scope, expr)?;
                    unknown.push(is_unknown(&b));
                    exprs.push(self.finalize(b)?);
                    names.push(ident_value(&alias.value, alias.quote_style));
                }
                SelectItem::ExprWithAliases { .. } => {
                    return Err(SqlError::unsupported("multiple aliases for one expression"))
                }
                SelectItem::Wildcard(_) => {
                    if s.from.is_empty() {
                        return Err(SqlError::syntax(
                            "SELECT * with no tables specified is not valid",
                        ));
                    }
                    for &i in &scope.star {
                        exprs.push(self.column_ref(&scope, i)?);
                        names.push(scope.columns[i].name.clone());
                        unknown.push(false);
                    }
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    let ast::SelectItemQualifiedWildcardKind::ObjectName(name) = kind else {
                        return Err(SqlError::unsupported("expression.*"));
                    };
                    let q = match name.0.last() {
                        Some(ast::ObjectNamePart::Identifier(i)) => {
                            ident_value(&i.value, i.quote_style)
                        }
                        _ => return Err(SqlError::syntax(format!("invalid name {name}.*"))),
                    };
                    for i in scope.table_star(&q)? {
                        exprs.push(self.column_ref(&scope, i)?);
                        names.push(scope.columns[i].name.clone());
                        unknown.push(false);
                    }
                }
            }
        }
        let visible = exprs.len();

        let windows_so_far = self.windows.take();
        // Uncorrelated scalar subqueries in HAVING are joined to the
        // Aggregate's output, whose width is known once ORDER BY has added
        // its aggregates: until then their columns are numbered from
        // `HAVING_APPLIES_BASE` (see `attach_having`).
        let saved_applies = self.applies.replace(Applies::new(HAVING_APPLIES_BASE));
        let having = match &s.having {
            Some(h) => Some(self.bind_bool(&scope, h, "HAVING")?),
            None => None,
        };
        let having_applies = std::mem::replace(&mut self.applies, saved_applies);
        self.windows = windows_so_far;

        // ORDER BY keys: output columns, or expressions over the same input
        // as the select list (added as helper columns).
        let mut order = Vec::with_capacity(order_by.len());
        for ob in order_by {
            if ob.with_fill.is_some() {
                return Err(SqlError::unsupported("WITH FILL"));
            }
            let (desc, nulls_first) = order_options(&ob.options)?;
            let index = match output_ref(&ob.expr, &names)? {
                Some(i) => i,
                None => {
                    let e = self.bind_typed(&scope, &ob.expr)?;
                    if let Some(i) = exprs[..visible].iter().position(|x| *x == e) {
                        i
                    } else if distinct {
                        return Err(SqlError::new(
                            ErrorKind::InvalidColumnReference,
                            "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                        ));
                    } else if let Some(i) = exprs.iter().position(|x| *x == e) {
                        i
                    } else {
                        exprs.push(e);
                        exprs.len() - 1
                    }
                }
            };
            order.push(OrderKey {
                index,
                desc,
                nulls_first,
            });
        }

        // DISTINCT ON keys: like ORDER BY keys, output columns or
        // expressions over the input (helper columns).
        let mut on_keys = Vec::with_capacity(distinct_on.len());
        for e in distinct_on {
            let index = match output_ref(e, &names)? {
                Some(i) => i,
                None => {
                    let e = self.bind_typed(&scope, e)?;
                    match exprs.iter().position(|x| *x == e) {
                        Some(i) => i,
                        None => {
                            exprs.push(e);
                            exprs.len() - 1
                        }
                    }
                }
            };
            if !on_keys.contains(&index) {
                on_keys.push(index);
            }
        }
        if !on_keys.is_empty()
            && order
                .iter()
                .take(on_keys.len())
                .any(|o| !on_keys.contains(&o.index))
        {
            return Err(SqlError::new(
                ErrorKind::InvalidColumnReference,
                "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
            ));
        }

        if let Some(applies) = self.applies.take() {
            plan = applies.attach(plan, &mut scope)?;
        }
        self.applies = outer_applies;

        // Build: [Project → Aggregate → Filter(HAVING)] → Project.
        let ctx = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed here",
            },
        );
        if let ExprCtx::Agg(state) = ctx {
            let k = state.group_keys.len();
            let input_fields = plan.fields();
            let name_of = |e: &Expr, i: usize| match e {
                Expr::InputRef { index, .. } => input_fields[*index].name.clone(),
                _ => format!("_expr{i}"),
            };
            let pre_exprs: Vec<Expr> = state
                .group_keys
                .iter()
                .chain(state.args.iter())
                .cloned()
                .collect();
            let pre_fields: Vec<Field> = pre_exprs
                .iter()
                .enumerate()
                .map(|(i, e)| Field::new(name_of(e, i), e.return_type()))
                .collect();
            let mut agg_fields: Vec<Field> = pre_fields[..k].to_vec();
            agg_fields.extend(
                state
                    .calls
                    .iter()
                    .map(|c| Field::new(agg_name(c.kind), c.return_type)),
            );
            plan = LogicalPlan::Aggregate {
                input: Box::new(LogicalPlan::Project {
                    input: Box::new(plan),
                    exprs: pre_exprs,
                    fields: pre_fields,
                }),
                group_by: (0..k).collect(),
                aggs: state.calls,
                fields: agg_fields,
            };
            if let Some(mut h) = having {
                if let Some(applies) = having_applies.filter(|a| !a.is_empty()) {
                    let width = plan.fields().len();
                    h.map_input_refs(&mut |i| {
                        if i >= HAVING_APPLIES_BASE {
                            width + (i - HAVING_APPLIES_BASE)
                        } else {
                            i
                        }
                    });
                    plan = applies.rebase(width).attach(plan, &mut Scope::default())?;
                }
                plan = LogicalPlan::Filter {
                    input: Box::new(plan),
                    predicate: h,
                };
            }
        }
        let windows = std::mem::replace(&mut self.windows, outer_windows).unwrap_or_default();
        plan = self.attach_windows(plan, windows, &mut exprs)?;
        let fields: Vec<Field> = exprs
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let name = names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("_order{}", i - visible));
                Field::new(name, e.return_type())
            })
            .collect();
        plan = LogicalPlan::Project {
            input: Box::new(plan),
            exprs,
            fields,
        };
        if !on_keys.is_empty() {
            // The first row of each DISTINCT ON group in ORDER BY order:
            // a window numbering the group's rows, keeping the first.
            let fields = plan.fields();
            let row_number = WindowCall {
                kind: WindowFuncKind::RowNumber,
                args: vec![],
                arg_type: None,
                offset: 1,
                return_type: DataType::Int64,
                frame: Frame::DEFAULT,
            };
            plan = LogicalPlan::Project {
                input: Box::new(LogicalPlan::OverWindow {
                    input: Box::new(plan),
                    partition_by: on_keys,
                    order_by: order.clone(),
                    calls: vec![row_number],
                    names: vec!["_distinct_on_rn".into()],
                    limit: Some(1),
                }),
                exprs: fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| Expr::input_ref(i, f.data_type))
                    .collect(),
                fields,
            };
        }
        if distinct {
            let fields = plan.fields();
            plan = LogicalPlan::Aggregate {
                input: Box::new(plan),
                group_by: (0..visible).collect(),
                aggs: vec![],
                fields,
            };
        }
        Ok(SelectOutput {
            plan,
            names,
            unknown,
            order,
            visible,
        })
    }

    /// A GROUP BY item: an output position, an input column, an output
    /// alias (in that order of preference, as in PostgreSQL), or an
    /// expression over the input.
    fn bind_group_key(
        &mut self,
        scope: &Scope,
        g: &ast::Expr,
        projection: &[SelectItem],
    ) -> SqlResult<Expr> {
        fn item_expr(item: &SelectItem) -> Option<&ast::Expr> {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
                _ => None,
            }
        }
        match g {
            ast::Expr::Value(v) => {
                if let Value::Number(n, _) = &v.value {
                    if n.bytes().all(|b| b.is_ascii_digit()) {
                        let pos = n.parse::<usize>().ok().filter(|p| *p >= 1);
                        let item = pos.and_then(|p| projection.get(p - 1)).ok_or_else(|| {
                            SqlError::new(
                                ErrorKind::InvalidColumnReference,
                                format!("GROUP BY position {n} is not in select list"),
                            )
                        })?;
                        let e = item_expr(item)
                            .ok_or_else(|| SqlError::unsupported("GROUP BY position of *"))?;
                        return self.bind_typed(scope, e);
                    }
                }
                self.bind_typed(scope, g)
            }
            ast::Expr::Identifier(i) => {
                let name = ident_value(&i.value, i.quote_style);
                match scope.resolve(None, &name) {
                    Ok(idx) => Ok(Expr::input_ref(idx, scope.columns[idx].ty)),
                    Err(e) if e.kind() == ErrorKind::UndefinedColumn => {
                        let aliased = projection.iter().find_map(|item| match item {
                            SelectItem::ExprWithAlias { expr, alias }
                                if ident_value(&alias.value, alias.quote_style) == name =>
                            {
                                Some(expr)
                            }
                            _ => None,
                        });
                        match aliased {
                            Some(expr) => self.bind_typed(scope, expr),
                            None => Err(e),
                        }
                    }
                    Err(e) => Err(e),
                }
            }
            _ => self.bind_typed(scope, g),
        }
    }
}
