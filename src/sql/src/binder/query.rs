//! Binding a whole query: WITH, set operations, VALUES, ORDER BY and
//! LIMIT/OFFSET.

use ebbflow_common::ErrorKind;
use std::collections::HashMap;

use sqlparser::ast::{self, LimitClause, OrderByKind, SetExpr, SetOperator, SetQuantifier};

use super::expr::{coerce, BExpr};
use super::scope::Scope;
use super::select::{order_options, output_ref};
use super::{Binder, BoundQuery, ExprCtx};
use crate::parser::ident_value;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Field};
use ebbflow_expr::{build_cast, common_type, Expr};
use ebbflow_planner::logical::{LogicalPlan, OrderKey};

impl Binder<'_> {
    /// Bind a query in its own context (a subquery does not see the
    /// aggregation state of the query around it).
    pub(super) fn bind_query(&mut self, q: &ast::Query) -> SqlResult<BoundQuery> {
        let saved = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed here",
            },
        );
        self.ctes.push(HashMap::new());
        let r = self.bind_query_inner(q);
        self.ctes.pop();
        self.ctx = saved;
        r
    }

    fn bind_query_inner(&mut self, q: &ast::Query) -> SqlResult<BoundQuery> {
        // A query over a catalog that is always empty (psql's `\d` reads
        // pg_policy, pg_publication, …) has no rows: its columns are
        // named but not typed, like unknown literals.
        if q.with.is_none() {
            if let Some(names) = self.empty_catalog_query(&q.body) {
                let fields = names
                    .iter()
                    .map(|n| {
                        ebbflow_common::Field::new(n.clone(), ebbflow_common::DataType::Varchar)
                    })
                    .collect();
                return Ok(BoundQuery {
                    plan: LogicalPlan::Values {
                        rows: vec![],
                        fields,
                    },
                    unknown: vec![true; names.len()],
                    names,
                });
            }
        }
        if let Some(with) = &q.with {
            if with.recursive {
                return Err(SqlError::unsupported("WITH RECURSIVE"));
            }
            for cte in &with.cte_tables {
                let name = ident_value(&cte.alias.name.value, cte.alias.name.quote_style);
                let mut bq = self.bind_query(&cte.query)?;
                if cte.alias.columns.len() > bq.names.len() {
                    return Err(SqlError::new(
                        ErrorKind::InvalidColumnReference,
                        format!(
                            "WITH query \"{name}\" has {} columns available but {} columns specified",
                            bq.names.len(),
                            cte.alias.columns.len()
                        ),
                    ));
                }
                for (c, n) in cte.alias.columns.iter().zip(bq.names.iter_mut()) {
                    *n = ident_value(&c.name.value, c.name.quote_style);
                }
                let frame = self
                    .ctes
                    .last_mut()
                    .ok_or_else(|| SqlError::new(ErrorKind::InternalError, "no CTE frame"))?;
                if frame.insert(name.clone(), bq).is_some() {
                    return Err(SqlError::new(
                        ErrorKind::DuplicateAlias,
                        format!("WITH query name \"{name}\" specified more than once"),
                    ));
                }
            }
        }
        if !q.locks.is_empty() {
            return Err(SqlError::unsupported("SELECT ... FOR UPDATE/SHARE"));
        }
        if q.for_clause.is_some()
            || q.settings.is_some()
            || q.format_clause.is_some()
            || !q.pipe_operators.is_empty()
        {
            return Err(SqlError::unsupported(format!("query syntax \"{q}\"")));
        }
        let order_items: &[ast::OrderByExpr] = match &q.order_by {
            None => &[],
            Some(ob) => match &ob.kind {
                OrderByKind::Expressions(v) => v,
                OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
            },
        };
        let (limit, offset) = self.bind_limit(q)?;

        let (mut plan, names, unknown, order, visible) = match q.body.as_ref() {
            SetExpr::Select(s) => {
                let o = self.bind_select(s, order_items)?;
                (o.plan, o.names, o.unknown, o.order, o.visible)
            }
            body => {
                let bq = self.bind_set_expr(body)?;
                let mut order = Vec::with_capacity(order_items.len());
                for ob in order_items {
                    let (desc, nulls_first) = order_options(&ob.options)?;
                    let index = output_ref(&ob.expr, &bq.names)?.ok_or_else(|| {
                        SqlError::unsupported(
                            "ORDER BY on a UNION/VALUES result other than by output column name or position",
                        )
                    })?;
                    order.push(OrderKey {
                        index,
                        desc,
                        nulls_first,
                    });
                }
                let n = bq.names.len();
                (bq.plan, bq.names, bq.unknown, order, n)
            }
        };
        if !order.is_empty() || limit.is_some() || offset > 0 {
            plan = LogicalPlan::TopN {
                input: Box::new(plan),
                order,
                limit,
                offset,
            };
        }
        let fields = plan.fields();
        if fields.len() > visible {
            plan = LogicalPlan::Project {
                input: Box::new(plan),
                exprs: fields[..visible]
                    .iter()
                    .enumerate()
                    .map(|(i, f)| Expr::input_ref(i, f.data_type))
                    .collect(),
                fields: fields[..visible].to_vec(),
            };
        }
        Ok(BoundQuery {
            plan,
            names,
            unknown,
        })
    }

    /// The body of a query without its ORDER BY/LIMIT.
    fn bind_set_expr(&mut self, body: &SetExpr) -> SqlResult<BoundQuery> {
        match body {
            SetExpr::Select(s) => {
                let o = self.bind_select(s, &[])?;
                Ok(BoundQuery {
                    plan: o.plan,
                    names: o.names,
                    unknown: o.unknown,
                })
            }
            SetExpr::Query(q) => self.bind_query(q),
            SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                if *op != SetOperator::Union {
                    return Err(SqlError::unsupported(op.to_string()));
                }
                let all = match set_quantifier {
                    SetQuantifier::All => true,
                    SetQuantifier::Distinct | SetQuantifier::None => false,
                    other => return Err(SqlError::unsupported(format!("UNION {other}"))),
                };
                let l = self.bind_set_expr(left)?;
                let r = self.bind_set_expr(right)?;
                if l.names.len() != r.names.len() {
                    return Err(SqlError::syntax(
                        "each UNION query must have the same number of columns",
                    ));
                }
                let (lt, rt) = (l.plan.types(), r.plan.types());
                let mut targets = Vec::with_capacity(lt.len());
                let mut unknown = Vec::with_capacity(lt.len());
                for i in 0..lt.len() {
                    let (lu, ru) = (l.unknown[i], r.unknown[i]);
                    targets.push(match (lu, ru) {
                        (true, true) => DataType::Varchar,
                        (true, false) => rt[i],
                        (false, true) => lt[i],
                        (false, false) => common_type(lt[i], rt[i]).map_err(|_| {
                            SqlError::new(
                                ErrorKind::DatatypeMismatch,
                                format!("UNION types {} and {} cannot be matched", lt[i], rt[i]),
                            )
                        })?,
                    });
                    unknown.push(lu && ru);
                }
                let lp = cast_columns(l.plan, &targets, &l.unknown)?;
                let rp = cast_columns(r.plan, &targets, &r.unknown)?;
                let mut inputs = match lp {
                    LogicalPlan::Union { inputs } => inputs,
                    other => vec![other],
                };
                inputs.push(rp);
                let mut plan = LogicalPlan::Union { inputs };
                if !all {
                    let fields: Vec<Field> = l
                        .names
                        .iter()
                        .zip(&targets)
                        .map(|(n, t)| Field::new(n.clone(), *t))
                        .collect();
                    plan = LogicalPlan::Aggregate {
                        input: Box::new(plan),
                        group_by: (0..targets.len()).collect(),
                        aggs: vec![],
                        fields,
                    };
                }
                Ok(BoundQuery {
                    plan,
                    names: l.names,
                    unknown,
                })
            }
            SetExpr::Values(v) => self.bind_values(v),
            SetExpr::Table(_) => Err(SqlError::unsupported("TABLE name as a query")),
            _ => Err(SqlError::unsupported(
                "data-modifying statements inside a query",
            )),
        }
    }

    /// `VALUES (...), (...)`: each column gets the common type of its
    /// typed cells (unknown cells take it too; all-unknown is varchar).
    pub(super) fn bind_values(&mut self, v: &ast::Values) -> SqlResult<BoundQuery> {
        let scope = Scope::default();
        let saved = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed in VALUES",
            },
        );
        let rows = self.bind_value_rows(&scope, v);
        self.ctx = saved;
        let rows = rows?;
        let width = rows.first().map(Vec::len).unwrap_or(0);
        let mut types: Vec<Option<DataType>> = vec![None; width];
        for row in &rows {
            for (c, cell) in row.iter().enumerate() {
                if let Some(t) = cell.hint() {
                    types[c] = Some(match types[c] {
                        None => t,
                        Some(prev) => common_type(prev, t).map_err(|_| {
                            SqlError::new(
                                ErrorKind::DatatypeMismatch,
                                format!("VALUES types {prev} and {t} cannot be matched"),
                            )
                        })?,
                    });
                }
            }
        }
        let unknown: Vec<bool> = types.iter().map(Option::is_none).collect();
        let types: Vec<DataType> = types
            .into_iter()
            .map(|t| t.unwrap_or(DataType::Varchar))
            .collect();
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let mut r = Vec::with_capacity(width);
            for (c, cell) in row.into_iter().enumerate() {
                let e = self.resolve(cell, types[c])?;
                r.push(coerce(e, types[c], "VALUES")?);
            }
            out.push(r);
        }
        let names: Vec<String> = (1..=width).map(|i| format!("column{i}")).collect();
        let fields = names
            .iter()
            .zip(&types)
            .map(|(n, t)| Field::new(n.clone(), *t))
            .collect();
        Ok(BoundQuery {
            plan: LogicalPlan::Values { rows: out, fields },
            names,
            unknown,
        })
    }

    /// Bind the cells of VALUES rows (all rows the same length).
    pub(super) fn bind_value_rows(
        &mut self,
        scope: &Scope,
        v: &ast::Values,
    ) -> SqlResult<Vec<Vec<BExpr>>> {
        let mut rows = Vec::with_capacity(v.rows.len());
        for row in &v.rows {
            let cells = row
                .content
                .iter()
                .map(|e| self.bind_expr(scope, e))
                .collect::<SqlResult<Vec<_>>>()?;
            if let Some(first) = rows.first() {
                let first: &Vec<BExpr> = first;
                if first.len() != cells.len() {
                    return Err(SqlError::syntax("VALUES lists must all be the same length"));
                }
            }
            rows.push(cells);
        }
        Ok(rows)
    }

    fn bind_limit(&mut self, q: &ast::Query) -> SqlResult<(Option<u64>, u64)> {
        let (mut limit_e, mut offset_e) = (None, None);
        match &q.limit_clause {
            None => {}
            Some(LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return Err(SqlError::unsupported("LIMIT BY"));
                }
                limit_e = limit.as_ref();
                offset_e = offset.as_ref().map(|o| &o.value);
            }
            Some(LimitClause::OffsetCommaLimit { .. }) => {
                return Err(SqlError::unsupported("LIMIT offset, count"))
            }
        }
        let mut limit = match limit_e {
            Some(e) => self.const_count(e, "LIMIT", ErrorKind::InvalidRowCountInLimitClause)?,
            None => None,
        };
        if let Some(f) = &q.fetch {
            if f.with_ties || f.percent {
                return Err(SqlError::unsupported("FETCH ... WITH TIES/PERCENT"));
            }
            limit = match &f.quantity {
                Some(e) => {
                    self.const_count(e, "FETCH FIRST", ErrorKind::InvalidRowCountInLimitClause)?
                }
                None => Some(1),
            };
        }
        let offset = match offset_e {
            Some(e) => self
                .const_count(e, "OFFSET", ErrorKind::InvalidRowCountInResultOffsetClause)?
                .unwrap_or(0),
            None => 0,
        };
        Ok((limit, offset))
    }

    /// A constant non-negative count (`NULL` = none).
    fn const_count(
        &mut self,
        e: &ast::Expr,
        what: &str,
        kind: ErrorKind,
    ) -> SqlResult<Option<u64>> {
        let b = self.bind_expr(&Scope::default(), e)?;
        let bound = self.resolve(b, DataType::Int64)?;
        let ty = bound.return_type();
        let bound = if ty.is_integer() {
            bound
        } else {
            build_cast(bound, DataType::Int64, false).map_err(|_| {
                SqlError::new(
                    ErrorKind::DatatypeMismatch,
                    format!("argument of {what} must be type bigint, not type {ty}"),
                )
            })?
        };
        match bound {
            Expr::Literal { value: None, .. } => Ok(None),
            Expr::Literal { value: Some(v), .. } => match v.as_i64() {
                Some(n) if n >= 0 => Ok(Some(n as u64)),
                Some(_) => Err(SqlError::new(kind, format!("{what} must not be negative"))),
                None => Err(SqlError::unsupported(format!("non-integer {what}"))),
            },
            _ => Err(SqlError::unsupported(format!("non-constant {what}"))),
        }
    }
}

/// Cast the columns of `plan` to `targets` (unknown-literal columns with an
/// explicit cast, the others with the implicit rules).
fn cast_columns(
    plan: LogicalPlan,
    targets: &[DataType],
    unknown: &[bool],
) -> SqlResult<LogicalPlan> {
    let fields = plan.fields();
    if fields.iter().zip(targets).all(|(f, t)| f.data_type == *t) {
        return Ok(plan);
    }
    let mut exprs = Vec::with_capacity(fields.len());
    let mut out_fields = Vec::with_capacity(fields.len());
    for (i, (f, t)) in fields.iter().zip(targets).enumerate() {
        let input = Expr::input_ref(i, f.data_type);
        let e = if f.data_type == *t {
            input
        } else if unknown[i] {
            build_cast(input, *t, true)?
        } else {
            coerce(input, *t, "UNION")?
        };
        exprs.push(e);
        out_fields.push(Field::new(f.name.clone(), *t));
    }
    Ok(LogicalPlan::Project {
        input: Box::new(plan),
        exprs,
        fields: out_fields,
    })
}
