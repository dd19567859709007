//! The set-returning `information_schema._pg_expandarray(vector)` in a
//! select list, and field access `(record).field` on the `(x, n)` records
//! it returns.
//!
//! PostgreSQL runs the set-returning functions of one select list in lock
//! step. pgJDBC's `getPrimaryKeys` writes the same call twice
//! (`(_pg_expandarray(i.indkey)).n AS key_seq` and
//! `_pg_expandarray(i.indkey) AS keys`) and reads `(result.keys).x` one
//! level up. Here every call in a select list must have the same argument
//! (else feature_not_supported): the select's filtered input is expanded once
//! ([`LogicalPlan::ExpandVector`]) and each call names the two columns that
//! adds.
//!
//! ebbflow has no composite type: a record-valued column is carried as one
//! column per field, named [`field_column`]`(column, field)`. Such columns
//! are reached only by field access and left out of `*`, and a query's
//! result cannot hold one (feature_not_supported).

use ebbflow_common::ErrorKind;
use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};

use super::expr::BExpr;
use super::func::function_name;
use super::scope::{Scope, ScopeColumn};
use super::Binder;
use crate::parser::ident_value;
use crate::{SqlError, SqlResult};
use ebbflow_expr::Expr;
use ebbflow_planner::logical::{LogicalPlan, EXPAND_FIELDS};

/// The one set-returning function of select lists.
const SRF: &str = "_pg_expandarray";

/// The name of the column carrying field `field` of record column `column`.
/// The separator (U+001F) cannot come from an unquoted identifier.
pub(super) fn field_column(column: &str, field: &str) -> String {
    format!("{column}\u{1f}{field}")
}

/// Whether `name` is a field of a record column (see [`field_column`]).
pub(super) fn is_field_column(name: &str) -> bool {
    name.contains('\u{1f}')
}

/// The record column a field column belongs to, for messages.
fn record_name(name: &str) -> &str {
    name.split('\u{1f}').next().unwrap_or(name)
}

/// A query result holding a record column is refused: clients would need
/// PostgreSQL's record text, which ebbflow does not produce.
pub(super) fn check_no_records(names: &[String]) -> SqlResult<()> {
    match names.iter().find(|n| is_field_column(n)) {
        Some(n) => Err(SqlError::unsupported(format!(
            "a record value (column \"{}\") in a query result; select its fields as ({0}).x",
            record_name(n)
        ))),
        None => Ok(()),
    }
}

/// The argument of a `[information_schema.]_pg_expandarray(arg)` call
/// (possibly in parentheses).
pub(super) fn srf_arg(e: &ast::Expr) -> Option<&ast::Expr> {
    let f = match e {
        ast::Expr::Nested(inner) => return srf_arg(inner),
        ast::Expr::Function(f) => f,
        _ => return None,
    };
    let schema_ok = match f.name.0.as_slice() {
        [_] => true,
        [ast::ObjectNamePart::Identifier(s), _] => {
            s.value.eq_ignore_ascii_case("information_schema")
        }
        _ => false,
    };
    if !schema_ok || function_name(&f.name) != SRF {
        return None;
    }
    match &f.args {
        FunctionArguments::List(l) => match l.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] => Some(arg),
            _ => None,
        },
        _ => None,
    }
}

/// The `_pg_expandarray` argument of a select item: the call itself or the
/// root of a field access on it.
fn item_srf_arg(e: &ast::Expr) -> Option<&ast::Expr> {
    match e {
        ast::Expr::CompoundFieldAccess { root, .. } => srf_arg(root),
        ast::Expr::Nested(inner) => item_srf_arg(inner),
        other => srf_arg(other),
    }
}

/// The one argument the select list's calls of a set-returning function
/// (found by `arg_of` in each item) expand by; `None` without a call.
/// Calls over different arguments, or with aggregation, are refused.
pub(super) fn single_srf_arg(
    projection: &[ast::SelectItem],
    has_agg: bool,
    arg_of: fn(&ast::Expr) -> Option<&ast::Expr>,
) -> SqlResult<Option<&ast::Expr>> {
    let mut arg: Option<&ast::Expr> = None;
    for item in projection {
        let e = match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => continue,
        };
        let Some(a) = arg_of(e) else { continue };
        match arg {
            Some(prev) if prev != a => {
                return Err(SqlError::unsupported(
                    "set-returning functions with different arguments in one select list",
                ))
            }
            _ => arg = Some(a),
        }
    }
    if arg.is_some() && has_agg {
        return Err(SqlError::unsupported(
            "set-returning functions together with aggregates",
        ));
    }
    Ok(arg)
}

impl Binder<'_> {
    /// When the select list calls `_pg_expandarray`, expand `plan` by its
    /// (single) argument and give `scope` the two columns that adds.
    pub(super) fn expand_select_list(
        &mut self,
        scope: &mut Scope,
        plan: LogicalPlan,
        projection: &[ast::SelectItem],
        has_agg: bool,
    ) -> SqlResult<LogicalPlan> {
        let Some(arg) = single_srf_arg(projection, has_agg, item_srf_arg)? else {
            return Ok(plan);
        };
        let vector = self.bind_expr(scope, arg)?;
        let vector = self.resolve(vector, ebbflow_common::DataType::Varchar)?;
        if vector.return_type() != ebbflow_common::DataType::Varchar {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function {SRF}({}) does not exist",
                    vector.return_type().pg_name()
                ),
            ));
        }
        for (field, ty) in EXPAND_FIELDS {
            scope.columns.push(ScopeColumn {
                table: None,
                name: field_column(SRF, field),
                ty,
                hidden: true,
                unqualified: true,
            });
        }
        Ok(LogicalPlan::ExpandVector {
            input: Box::new(plan),
            vector,
        })
    }

    /// A select item that is a bare `_pg_expandarray(…)` call: the record's
    /// field columns, named after `name`.
    pub(super) fn srf_item(
        &mut self,
        scope: &Scope,
        name: Option<&str>,
    ) -> SqlResult<Vec<(Expr, String)>> {
        let name = name.unwrap_or(SRF);
        let mut out = Vec::with_capacity(EXPAND_FIELDS.len());
        for (field, _) in EXPAND_FIELDS {
            let i = self.srf_column(scope, field)?;
            out.push((self.column_ref(scope, i)?, field_column(name, field)));
        }
        Ok(out)
    }

    fn srf_column(&self, scope: &Scope, field: &str) -> SqlResult<usize> {
        scope.resolve_field(None, SRF, field).map_err(|e| {
            if e.kind() == ErrorKind::UndefinedColumn && !scope.has_field_columns(SRF) {
                SqlError::unsupported(format!(
                    "set-returning function {SRF} outside a select list"
                ))
            } else {
                e
            }
        })
    }

    /// `(record).field`: `record` is a column of a record type or a
    /// `_pg_expandarray` call of the select list.
    pub(super) fn bind_field_access(
        &mut self,
        scope: &Scope,
        whole: &ast::Expr,
        root: &ast::Expr,
        field: &ast::Ident,
    ) -> SqlResult<BExpr> {
        let field = ident_value(&field.value, field.quote_style);
        let root = match root {
            ast::Expr::Nested(inner) => inner.as_ref(),
            other => other,
        };
        let idx = if srf_arg(root).is_some() {
            self.srf_column(scope, &field)?
        } else {
            let (q, c) = match root {
                ast::Expr::Identifier(i) => (None, ident_value(&i.value, i.quote_style)),
                ast::Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                    [.., t, c] => (
                        Some(ident_value(&t.value, t.quote_style)),
                        ident_value(&c.value, c.quote_style),
                    ),
                    _ => return Err(SqlError::unsupported(format!("expression \"{whole}\""))),
                },
                _ => return Err(SqlError::unsupported(format!("expression \"{whole}\""))),
            };
            scope.resolve_field(q.as_deref(), &c, &field)?
        };
        Ok(BExpr::Typed(self.column_ref(scope, idx)?))
    }
}
