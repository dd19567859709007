//! `unnest(array)`: in FROM over a constant array (bound into its rows,
//! like `generate_series`), and as a set-returning function in a select
//! list (the select's filtered input expanded once per element,
//! [`LogicalPlan::Unnest`]). The jsonb set-returning functions are the
//! same expansion over an array made from the value:
//! `jsonb_array_elements(_text)` and `jsonb_object_keys` in both places,
//! `jsonb_each(_text)` (two columns) in FROM.
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
use ebbflow_expr::{build_func, Expr, Func};

fn int_lit(i: i32) -> Expr {
    Expr::literal(Some(ebbflow_common::ScalarValue::Int32(i)), DataType::Int32)
}
use ebbflow_planner::logical::LogicalPlan;

/// The hidden column that carries the element in the expanded input. The
/// separator (U+001F) cannot come from an unquoted identifier.
const ELEMENT_COLUMN: &str = "\u{1f}unnest";

/// The set-returning functions a select list expands by, by name, and
/// what makes their argument an array to unnest.
const SELECT_LIST_SRFS: &[(&str, Option<Func>)] = &[
    ("unnest", None),
    ("jsonb_array_elements", Some(Func::JsonbElements)),
    ("json_array_elements", Some(Func::JsonbElements)),
    ("jsonb_array_elements_text", Some(Func::JsonbElementsText)),
    ("json_array_elements_text", Some(Func::JsonbElementsText)),
    ("jsonb_object_keys", Some(Func::JsonbKeys)),
    ("json_object_keys", Some(Func::JsonbKeys)),
];

/// The argument of a `[pg_catalog.]unnest(arg)` call, or of another
/// select-list set-returning function's (possibly in parentheses).
pub(super) fn unnest_arg(e: &ast::Expr) -> Option<&ast::Expr> {
    srf_call(e).map(|(_, a)| a)
}

/// The name and argument of a select-list set-returning function call.
pub(super) fn srf_call(e: &ast::Expr) -> Option<(&'static str, &ast::Expr)> {
    let f = match e {
        ast::Expr::Nested(inner) => return srf_call(inner),
        ast::Expr::Function(f) => f,
        _ => return None,
    };
    let schema_ok = match f.name.0.as_slice() {
        [_] => true,
        [ast::ObjectNamePart::Identifier(s), _] => s.value.eq_ignore_ascii_case("pg_catalog"),
        _ => false,
    };
    let name = function_name(&f.name);
    let (name, _) = SELECT_LIST_SRFS.iter().find(|(n, _)| *n == name)?;
    if !schema_ok || f.over.is_some() {
        return None;
    }
    match &f.args {
        FunctionArguments::List(l) => match l.args.as_slice() {
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))] => Some((name, arg)),
            _ => None,
        },
        _ => None,
    }
}

/// The array a select-list set-returning function expands: its argument,
/// or for a jsonb one, the array made from it.
fn srf_array(name: &str, arg: Expr) -> SqlResult<Expr> {
    match SELECT_LIST_SRFS.iter().find(|(n, _)| *n == name) {
        Some((_, Some(f))) => Ok(build_func(*f, vec![arg])?),
        _ => Ok(arg),
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

/// Whether a FROM item's function name is `[pg_catalog.]unnest` or a
/// jsonb set-returning function.
pub(super) fn is_unnest(schema: Option<&str>, name: &str) -> bool {
    let srf = SELECT_LIST_SRFS.iter().any(|(n, _)| *n == name)
        || matches!(
            name,
            "jsonb_each" | "jsonb_each_text" | "json_each" | "json_each_text"
        );
    srf && schema.is_none_or(|s| s == "pg_catalog")
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
            return Err(SqlError::unsupported(format!(
                "{name} in FROM with other than one argument"
            )));
        };
        let b = self.bind_expr(&Scope::default(), e)?;
        let each = name.contains("_each");
        let array = if name == "unnest" {
            self.finalize(b)?
        } else {
            let arg = self.resolve(b, DataType::Jsonb)?;
            // Computed now: the argument must be a constant.
            let array = match each {
                true => build_func(Func::JsonbEachPairs, vec![arg])?,
                false => srf_array(name, arg)?,
            };
            let value = match &array {
                Expr::Func { args, .. } if matches!(args.first(), Some(Expr::Literal { .. })) => {
                    array.eval(&Vec::new())?
                }
                _ => {
                    return Err(SqlError::unsupported(format!(
                        "{name} in FROM over a non-constant value"
                    )))
                }
            };
            Expr::literal(value, array.return_type())
        };
        if each {
            return self.bind_each_relation(name, array);
        }
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
        let column = if name == "unnest"
            || name.starts_with("jsonb_array_elements")
            || name.starts_with("json_array_elements")
        {
            // PostgreSQL names these columns `unnest` and `value`.
            if name == "unnest" { "unnest" } else { "value" }.to_string()
        } else {
            name.to_string()
        };
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
        let name = projection
            .iter()
            .find_map(|item| match item {
                ast::SelectItem::UnnamedExpr(e)
                | ast::SelectItem::ExprWithAlias { expr: e, .. } => srf_call(e).map(|(n, _)| n),
                _ => None,
            })
            .unwrap_or("unnest");
        let mixed = projection.iter().any(|item| match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                srf_call(e).is_some_and(|(n, _)| n != name)
            }
            _ => false,
        });
        if mixed {
            return Err(SqlError::unsupported(
                "different set-returning functions in one select list",
            ));
        }
        let b = self.bind_expr(scope, arg)?;
        let array = if name == "unnest" {
            self.finalize(b)?
        } else {
            let arg = self.resolve(b, DataType::Jsonb)?;
            srf_array(name, arg)?
        };
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

    /// `jsonb_each(_text)(constant)` in FROM: columns `key` and `value`.
    fn bind_each_relation(&mut self, name: &str, pairs: Expr) -> SqlResult<(LogicalPlan, Scope)> {
        let text = name.ends_with("_text");
        let value_ty = if text {
            DataType::Varchar
        } else {
            DataType::Jsonb
        };
        let items = match pairs {
            Expr::Literal { value: Some(v), .. } => {
                v.as_array().map(|a| a.items.clone()).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let key = |p: &Expr| build_func(Func::JsonbGetText, vec![p.clone(), int_lit(0)]);
        let mut rows = Vec::with_capacity(items.len());
        for item in items {
            let pair = Expr::literal(item, DataType::Jsonb);
            let f = if text {
                Func::JsonbGetText
            } else {
                Func::JsonbGet
            };
            let k = key(&pair)?.eval(&Vec::new())?;
            let v = build_func(f, vec![pair, int_lit(1)])?.eval(&Vec::new())?;
            rows.push(vec![
                Expr::literal(k, DataType::Varchar),
                Expr::literal(v, value_ty),
            ]);
        }
        let fields = vec![
            Field::new("key", DataType::Varchar),
            Field::new("value", value_ty),
        ];
        let scope = Scope::of_relation(
            Some(name),
            [
                ("key".to_string(), DataType::Varchar, false),
                ("value".to_string(), value_ty, false),
            ],
        );
        Ok((LogicalPlan::Values { rows, fields }, scope))
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
