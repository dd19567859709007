//! Arrays in expressions: `ARRAY[…]` and subscripts `a[i]` / `a[i:j]`,
//! and subscripts of the constant array texts drivers send.

use ebbflow_common::ErrorKind;
use sqlparser::ast;

use super::expr::BExpr;
use super::scope::Scope;
use super::Binder;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, ScalarValue};
use ebbflow_expr::{build_cast, build_func, Expr, Func};

/// The elements of a constant one-dimensional array in its text form
/// (`{a,"b c"}`), or `None` if `text` is not one.
pub(super) fn const_array_elements(text: &str) -> Option<Vec<String>> {
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    Some(
        inner
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.trim_matches('"').to_string())
            .collect(),
    )
}

impl Binder<'_> {
    /// `(constant array text)[n]`, as drivers write over
    /// `current_schemas(true)` (pgJDBC's `getSchemas` and type cache,
    /// whose catalog shortcuts give the array's text form): the element
    /// of a constant `{a,b,…}` text comes back as varchar (NULL when out of
    /// range). A non-constant index picks the element with a CASE.
    pub(super) fn bind_constant_subscript(
        &mut self,
        scope: &Scope,
        whole: &ast::Expr,
        root: BExpr,
        access_chain: &[ast::AccessExpr],
    ) -> SqlResult<BExpr> {
        let unsupported = || SqlError::unsupported(format!("expression \"{whole}\""));
        let [ast::AccessExpr::Subscript(ast::Subscript::Index { index })] = access_chain else {
            return Err(unsupported());
        };
        let index = self.bind_expr(scope, index)?;
        let text = match self.resolve(root, DataType::Varchar)? {
            Expr::Literal {
                value: Some(ScalarValue::Varchar(s)),
                ..
            } => s,
            _ => return Err(unsupported()),
        };
        let elements = const_array_elements(&text).ok_or_else(unsupported)?;
        let index = self.resolve(index, DataType::Int32)?;
        if !index.return_type().is_integer() {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                "array subscript must have type integer",
            ));
        }
        let n = match &index {
            Expr::Literal { value: None, .. } => None,
            Expr::Literal { value: Some(v), .. } => v.as_i64(),
            _ => {
                let mut whens = Vec::with_capacity(elements.len());
                for (i, e) in (1_i32..).zip(elements) {
                    let k = Expr::literal(Some(ScalarValue::Int32(i)), DataType::Int32);
                    let then = Expr::literal(Some(ScalarValue::varchar(e)), DataType::Varchar);
                    whens.push((build_func(Func::Eq, vec![index.clone(), k])?, then));
                }
                if whens.is_empty() {
                    return Ok(BExpr::Typed(Expr::literal(None, DataType::Varchar)));
                }
                return Ok(BExpr::Typed(Expr::Case {
                    whens,
                    else_: None,
                    ty: DataType::Varchar,
                }));
            }
        };
        let element = n
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| elements.into_iter().nth(i));
        let value = element.map(ScalarValue::varchar);
        Ok(BExpr::Typed(Expr::literal(value, DataType::Varchar)))
    }

    /// `ARRAY[e1, e2, …]`: the elements in their common type (text when
    /// all are unknown), folded to a constant when they all are.
    pub(super) fn bind_array(&mut self, scope: &Scope, elems: &[ast::Expr]) -> SqlResult<Expr> {
        let bound = elems
            .iter()
            .map(|e| self.bind_expr(scope, e))
            .collect::<SqlResult<Vec<_>>>()?;
        let mut ty: Option<DataType> = None;
        for t in bound.iter().filter_map(BExpr::hint) {
            ty = Some(match ty {
                None => t,
                Some(k) => ebbflow_expr::common_type(k, t).map_err(|_| {
                    SqlError::new(
                        ErrorKind::DatatypeMismatch,
                        format!("ARRAY types {k} and {t} cannot be matched"),
                    )
                })?,
            });
        }
        let ty = ty.unwrap_or(DataType::Varchar);
        let mut args = Vec::with_capacity(bound.len());
        for b in bound {
            let e = self.resolve(b, ty)?;
            args.push(build_cast(e, ty, false)?);
        }
        if args.iter().all(|a| matches!(a, Expr::Literal { .. })) && !args.is_empty() {
            let items = args
                .into_iter()
                .map(|a| match a {
                    Expr::Literal { value, .. } => value,
                    _ => None,
                })
                .collect();
            let aty = ty.array_of();
            if let DataType::Array(elem) = aty {
                if !ty.is_array() {
                    return Ok(Expr::literal(Some(ScalarValue::array(elem, items)), aty));
                }
            }
            return Err(SqlError::unsupported("multidimensional arrays"));
        }
        Ok(build_func(Func::ArrayConstruct, args)?)
    }

    /// `a[i]` and `a[i:j]` on an array.
    pub(super) fn bind_subscript(
        &mut self,
        scope: &Scope,
        whole: &ast::Expr,
        root: BExpr,
        access_chain: &[ast::AccessExpr],
    ) -> SqlResult<BExpr> {
        let root = self.finalize(root)?;
        let [ast::AccessExpr::Subscript(sub)] = access_chain else {
            return Err(SqlError::unsupported(format!(
                "expression \"{whole}\" (multidimensional arrays)"
            )));
        };
        let mut bound = |e: &ast::Expr| -> SqlResult<Expr> {
            let b = self.bind_expr(scope, e)?;
            self.resolve(b, DataType::Int32)
        };
        let int = |v: i32| Expr::literal(Some(ScalarValue::Int32(v)), DataType::Int32);
        let e = match sub {
            ast::Subscript::Index { index } => {
                build_func(Func::ArraySubscript, vec![root, bound(index)?])?
            }
            ast::Subscript::Slice {
                lower_bound,
                upper_bound,
                stride: None,
            } => {
                let lo = match lower_bound {
                    Some(l) => bound(l)?,
                    None => int(1),
                };
                let hi = match upper_bound {
                    Some(u) => bound(u)?,
                    None => int(i32::MAX),
                };
                build_func(Func::ArraySlice, vec![root, lo, hi])?
            }
            ast::Subscript::Slice { .. } => {
                return Err(SqlError::unsupported("array slices with a stride"))
            }
        };
        Ok(BExpr::Typed(e))
    }
}
