//! `unnest(array)`: in FROM over a constant array (bound into its rows,
//! like `generate_series`), and as a set-returning function in a select
//! list (the select's filtered input expanded once per element,
//! [`LogicalPlan::Unnest`]).
//!
//! In a select list every `unnest` call must be a whole select item and
//! have the same argument (PostgreSQL runs several in lock step; feature_not_supported
//! here), and the select must not aggregate. In a materialized view the
//! expansion is a stateless operator (`stream::executor::unnest`) that adds
//! the element's position to the stream key.

use ebbflow_common::ErrorKind;
use sqlparser::ast::{self, FunctionArg, FunctionArgExpr, FunctionArguments};

use super::func::function_name;
use super::scope::{Scope, ScopeColumn};
use super::Binder;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Field};
use ebbflow_expr::Expr;
use ebbflow_planner::logical::LogicalPlan;

/// The hidden column that carries the element in the expanded input. The
/// separator (U+001F) cannot come from an unquoted identifier.
const ELEMENT_COLUMN: &str = "\u{1f}unnest";

/// The argument of a `[pg_catalog.]unnest(arg)` call (possibly in
/// parentheses).
pub(super) fn unnest_arg(e: &ast::Expr) -> Option<&ast::Expr> {
    let f = match e {
        ast::Expr::Nested(inner) => return unnest_arg(inner),
        ast::Expr::Function(f) => f,
        _ => return None,
    };
    let schema_ok = match f.name.0.as_slice() {
        [_] => true,
        [ast::ObjectNamePart::Identifier(s), _] => s.value.eq_ignore_ascii_case("pg_catalog"),
        _ => false,
    };
    if !schema_ok || function_name(&f.name) != "unnest" || f.over.is_some() {
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

/// The arguments of a FROM item's function call, if all are plain.
pub(super) fn plain_args(args: &[FunctionArg]) -> SqlResult<Vec<&ast::Expr>> {
    args.iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Ok(e),
            other => Err(SqlError::unsupported(format!("argument {other} of unnest"))),
        })
        .collect()
}

/// Whether a FROM item's function name is `[pg_catalog.]unnest`.
pub(super) fn is_unnest(schema: Option<&str>, name: &str) -> bool {
    name == "unnest" && schema.is_none_or(|s| s == "pg_catalog")
}

fn not_an_array(ty: DataType) -> SqlError {
    SqlError::new(
        ErrorKind::UndefinedFunction,
        format!("function unnest({}) does not exist", ty.pg_name()),
    )
}

impl Binder<'_> {
    /// `unnest(array)` in FROM: the elements of a constant array as a
    /// relation named `name` with one column `unnest`.
    pub(super) fn bind_unnest_relation(
        &mut self,
        name: &str,
        args: &[&ast::Expr],
    ) -> SqlResult<(LogicalPlan, Scope)> {
        let [e] = args else {
            return Err(SqlError::unsupported(
                "unnest in FROM with other than one argument",
            ));
        };
        let b = self.bind_expr(&Scope::default(), e)?;
        let array = self.finalize(b)?;
        let elem = array
            .return_type()
            .elem()
            .ok_or_else(|| not_an_array(array.return_type()))?;
        let items = match array {
            Expr::Literal { value, .. } => match value {
                Some(v) => v.as_array().map(|a| a.items.clone()).unwrap_or_default(),
                None => Vec::new(),
            },
            _ => {
                return Err(SqlError::unsupported(
                    "unnest in FROM over a non-constant array",
                ))
            }
        };
        let rows = items
            .into_iter()
            .map(|v| vec![Expr::literal(v, elem)])
            .collect();
        let column = "unnest".to_string();
        let plan = LogicalPlan::Values {
            rows,
            fields: vec![Field::new(column.clone(), elem)],
        };
        let scope = Scope::of_relation(Some(name), [(column, elem, false)]);
        Ok((plan, scope))
    }

    /// When the select list calls `unnest`, expand `plan` by its (single)
    /// argument and give `scope` the element column.
    pub(super) fn expand_unnest(
        &mut self,
        scope: &mut Scope,
        plan: LogicalPlan,
        projection: &[ast::SelectItem],
        has_agg: bool,
    ) -> SqlResult<LogicalPlan> {
        let Some(arg) = super::composite::single_srf_arg(projection, has_agg, unnest_arg)? else {
            return Ok(plan);
        };
        let b = self.bind_expr(scope, arg)?;
        let array = self.finalize(b)?;
        let elem = array
            .return_type()
            .elem()
            .ok_or_else(|| not_an_array(array.return_type()))?;
        scope.columns.push(ScopeColumn {
            table: None,
            name: ELEMENT_COLUMN.to_string(),
            ty: elem,
            hidden: true,
            unqualified: true,
        });
        Ok(LogicalPlan::Unnest {
            input: Box::new(plan),
            array,
        })
    }

    /// A select item that is an `unnest(…)` call: the element column.
    pub(super) fn unnest_item(&mut self, scope: &Scope) -> SqlResult<Expr> {
        let i = scope
            .columns
            .iter()
            .rposition(|c| c.name == ELEMENT_COLUMN)
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::InternalError,
                    "unnest without its element column",
                )
            })?;
        self.column_ref(scope, i)
    }
}
