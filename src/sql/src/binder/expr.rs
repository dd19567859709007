//! Binding scalar expressions.

use ebbflow_common::ErrorKind;
use sqlparser::ast::{
    self, BinaryOperator, CeilFloorKind, DateTimeField, TrimWhereField, UnaryOperator, Value,
};

use super::scope::Scope;
use super::types::{data_type_from_ast, number_literal, text_literal};
use super::{Binder, ExprCtx};
use crate::parser::ident_value;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, Datum, ScalarValue};
use ebbflow_expr::{build_cast, build_func, Expr, Func};

/// A bound expression whose type may still depend on its context.
#[derive(Clone, Debug)]
pub(super) enum BExpr {
    Typed(Expr),
    Unknown(Unknown),
}

/// PostgreSQL's "unknown" type: a value whose type the context decides.
#[derive(Clone, Debug)]
pub(super) enum Unknown {
    /// A string literal.
    Str(String),
    Null,
    /// `$n` (0-based) with no declared type.
    Param(usize),
}

impl BExpr {
    pub fn hint(&self) -> Option<DataType> {
        match self {
            BExpr::Typed(e) => Some(e.return_type()),
            BExpr::Unknown(_) => None,
        }
    }
}

/// `(qualifier, column)` of a column reference.
fn column_ref_parts(parts: &[ast::Ident]) -> SqlResult<(Option<String>, String)> {
    let norm = |i: &ast::Ident| ident_value(&i.value, i.quote_style);
    match parts {
        [c] => Ok((None, norm(c))),
        // `schema.table.column` and `db.schema.table.column`: the table
        // qualifier is what the FROM clause named.
        [.., t, c] if parts.len() <= 4 => Ok((Some(norm(t)), norm(c))),
        _ => Err(SqlError::syntax(format!(
            "improper qualified name (too many dotted names): {}",
            parts
                .iter()
                .map(|p| p.value.as_str())
                .collect::<Vec<_>>()
                .join(".")
        ))),
    }
}

impl Binder<'_> {
    /// Bind `e`; unknown-typed values stay unknown.
    pub(super) fn bind_expr(&mut self, scope: &Scope, e: &ast::Expr) -> SqlResult<BExpr> {
        if let Some(r) = self.try_group_key(scope, e) {
            return Ok(BExpr::Typed(r));
        }
        self.bind_expr_inner(scope, e)
    }

    /// Bind `e`, giving unknowns their default type (varchar).
    pub(super) fn bind_typed(&mut self, scope: &Scope, e: &ast::Expr) -> SqlResult<Expr> {
        let b = self.bind_expr(scope, e)?;
        self.finalize(b)
    }

    /// Bind a condition (`WHERE`, `ON`, `HAVING`, `CASE WHEN`, `AND`...).
    pub(super) fn bind_bool(
        &mut self,
        scope: &Scope,
        e: &ast::Expr,
        what: &str,
    ) -> SqlResult<Expr> {
        let b = self.bind_expr(scope, e)?;
        let e = self.resolve(b, DataType::Boolean)?;
        check_bool(e, what)
    }

    /// In an aggregating context, an expression equal to a GROUP BY key is a
    /// reference to that key (so `SELECT a + 1 ... GROUP BY a + 1` works).
    fn try_group_key(&mut self, scope: &Scope, e: &ast::Expr) -> Option<Expr> {
        let ExprCtx::Agg(state) = &self.ctx else {
            return None;
        };
        if state.group_keys.is_empty() || matches!(e, ast::Expr::Value(_)) {
            return None;
        }
        let saved = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed in GROUP BY",
            },
        );
        // Without the clause's subqueries: binding one here would join it
        // a second time (a group key never holds a subquery).
        let applies = self.applies.take();
        let r = self.bind_expr_inner(scope, e);
        self.ctx = saved;
        self.applies = applies;
        let Ok(BExpr::Typed(x)) = r else {
            return None;
        };
        let ExprCtx::Agg(state) = &self.ctx else {
            return None;
        };
        state
            .group_keys
            .iter()
            .position(|k| *k == x)
            .map(|i| Expr::input_ref(i, x.return_type()))
    }

    /// A reference to column `idx` of `scope` in the current context.
    pub(super) fn column_ref(&self, scope: &Scope, idx: usize) -> SqlResult<Expr> {
        let ty = scope.columns[idx].ty;
        let input = Expr::input_ref(idx, ty);
        match &self.ctx {
            ExprCtx::Plain { .. } => Ok(input),
            ExprCtx::Agg(state) => match state.group_keys.iter().position(|k| *k == input) {
                Some(i) => Ok(Expr::input_ref(i, ty)),
                None => Err(SqlError::new(
                    ErrorKind::GroupingError,
                    format!(
                        "column \"{}\" must appear in the GROUP BY clause or be used in an aggregate function",
                        scope.display_name(idx)
                    ),
                )),
            },
        }
    }

    fn bind_expr_inner(&mut self, scope: &Scope, e: &ast::Expr) -> SqlResult<BExpr> {
        use ast::Expr as E;
        let typed = |e: Expr| Ok(BExpr::Typed(e));
        match e {
            E::Identifier(i) => {
                let idx = scope.resolve(None, &ident_value(&i.value, i.quote_style))?;
                typed(self.column_ref(scope, idx)?)
            }
            E::CompoundIdentifier(parts) => {
                let (q, c) = column_ref_parts(parts)?;
                let idx = scope.resolve(q.as_deref(), &c)?;
                typed(self.column_ref(scope, idx)?)
            }
            E::Value(v) => self.bind_value(&v.value),
            E::TypedString(ts) => {
                let ty = data_type_from_ast(&ts.data_type)?;
                match &ts.value.value {
                    Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => {
                        typed(text_literal(s, ty)?)
                    }
                    other => Err(SqlError::syntax(format!(
                        "expected a string after type name, found {other}"
                    ))),
                }
            }
            E::Interval(iv) => typed(interval_literal(iv)?),
            E::Nested(inner) => self.bind_expr(scope, inner),
            E::CompoundFieldAccess { root, access_chain } => match access_chain.as_slice() {
                [ast::AccessExpr::Dot(E::Identifier(field))] => {
                    self.bind_field_access(scope, e, root, field)
                }
                _ => {
                    let root = self.bind_expr(scope, root)?;
                    if root.hint().is_some_and(DataType::is_array) {
                        self.bind_subscript(scope, e, root, access_chain)
                    } else {
                        self.bind_constant_subscript(scope, e, root, access_chain)
                    }
                }
            },
            E::UnaryOp { op, expr } => match op {
                UnaryOperator::Minus => {
                    if let E::Value(v) = expr.as_ref() {
                        if let Value::Number(n, _) = &v.value {
                            return typed(number_literal(&format!("-{n}"))?);
                        }
                    }
                    let arg = self.bind_expr(scope, expr)?;
                    typed(self.bind_func(Func::Neg, vec![arg])?)
                }
                UnaryOperator::Plus => {
                    let arg = self.bind_expr(scope, expr)?;
                    match arg.hint() {
                        Some(t) if !t.is_numeric() && t != DataType::Interval => {
                            Err(SqlError::new(
                                ErrorKind::UndefinedFunction,
                                format!("operator does not exist: + {t}"),
                            ))
                        }
                        _ => Ok(arg),
                    }
                }
                UnaryOperator::Not => {
                    let arg = self.bind_bool(scope, expr, "NOT")?;
                    typed(build_func(Func::Not, vec![arg])?)
                }
                other => Err(SqlError::unsupported(format!("operator {other}"))),
            },
            E::BinaryOp { left, op, right } => {
                let func = match op {
                    BinaryOperator::And | BinaryOperator::Or => {
                        let what = if *op == BinaryOperator::And {
                            "AND"
                        } else {
                            "OR"
                        };
                        let l = self.bind_bool(scope, left, what)?;
                        let r = self.bind_bool(scope, right, what)?;
                        let f = if *op == BinaryOperator::And {
                            Func::And
                        } else {
                            Func::Or
                        };
                        return typed(build_func(f, vec![l, r])?);
                    }
                    BinaryOperator::Plus => Func::Add,
                    BinaryOperator::Minus => Func::Sub,
                    BinaryOperator::Multiply => Func::Mul,
                    BinaryOperator::Divide => Func::Div,
                    BinaryOperator::Modulo => Func::Mod,
                    BinaryOperator::StringConcat => Func::Concat,
                    BinaryOperator::Eq => Func::Eq,
                    BinaryOperator::NotEq => Func::NotEq,
                    BinaryOperator::Lt => Func::Lt,
                    BinaryOperator::LtEq => Func::LtEq,
                    BinaryOperator::Gt => Func::Gt,
                    BinaryOperator::GtEq => Func::GtEq,
                    BinaryOperator::PGRegexMatch => Func::RegexMatch,
                    BinaryOperator::PGRegexNotMatch => Func::RegexNotMatch,
                    BinaryOperator::PGRegexIMatch => Func::RegexIMatch,
                    BinaryOperator::PGRegexNotIMatch => Func::RegexNotIMatch,
                    BinaryOperator::Arrow => Func::JsonbGet,
                    BinaryOperator::LongArrow => Func::JsonbGetText,
                    BinaryOperator::HashArrow => Func::JsonbGetPath,
                    BinaryOperator::HashLongArrow => Func::JsonbGetPathText,
                    BinaryOperator::AtArrow => Func::JsonbContains,
                    BinaryOperator::ArrowAt => Func::JsonbContainedBy,
                    BinaryOperator::Question => Func::JsonbExists,
                    BinaryOperator::QuestionPipe => Func::JsonbExistsAny,
                    BinaryOperator::QuestionAnd => Func::JsonbExistsAll,
                    BinaryOperator::HashMinus => Func::JsonbDeletePath,
                    // psql writes `OPERATOR(pg_catalog.~)`.
                    BinaryOperator::PGCustomBinaryOperator(parts)
                        if parts.len() <= 2 && (parts.len() == 1 || parts[0] == "pg_catalog") =>
                    {
                        match parts.last().map(String::as_str) {
                            Some("~") => Func::RegexMatch,
                            Some("!~") => Func::RegexNotMatch,
                            Some("~*") => Func::RegexIMatch,
                            Some("!~*") => Func::RegexNotIMatch,
                            Some("=") => Func::Eq,
                            Some("<>") => Func::NotEq,
                            _ => return Err(SqlError::unsupported(format!("operator {op}"))),
                        }
                    }
                    other => return Err(SqlError::unsupported(format!("operator {other}"))),
                };
                let l = self.bind_expr(scope, left)?;
                let r = self.bind_expr(scope, right)?;
                typed(self.bind_func(func, vec![l, r])?)
            }
            E::IsNull(x) | E::IsNotNull(x) => {
                let f = if matches!(e, E::IsNull(_)) {
                    Func::IsNull
                } else {
                    Func::IsNotNull
                };
                let arg = self.bind_expr(scope, x)?;
                typed(self.bind_func(f, vec![arg])?)
            }
            E::IsTrue(x) | E::IsNotTrue(x) | E::IsFalse(x) | E::IsNotFalse(x) => {
                let (f, what) = match e {
                    E::IsTrue(_) => (Func::IsTrue, "IS TRUE"),
                    E::IsNotTrue(_) => (Func::IsNotTrue, "IS NOT TRUE"),
                    E::IsFalse(_) => (Func::IsFalse, "IS FALSE"),
                    _ => (Func::IsNotFalse, "IS NOT FALSE"),
                };
                let arg = self.bind_bool(scope, x, what)?;
                typed(build_func(f, vec![arg])?)
            }
            E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
                let f = if matches!(e, E::IsDistinctFrom(..)) {
                    Func::IsDistinctFrom
                } else {
                    Func::IsNotDistinctFrom
                };
                let a = self.bind_expr(scope, a)?;
                let b = self.bind_expr(scope, b)?;
                typed(self.bind_func(f, vec![a, b])?)
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.bind_expr(scope, expr)?;
                let lo = self.bind_expr(scope, low)?;
                let hi = self.bind_expr(scope, high)?;
                let (f1, f2, join) = if *negated {
                    (Func::Lt, Func::Gt, Func::Or)
                } else {
                    (Func::GtEq, Func::LtEq, Func::And)
                };
                let a = self.bind_func(f1, vec![x.clone(), lo])?;
                let b = self.bind_func(f2, vec![x, hi])?;
                typed(build_func(join, vec![a, b])?)
            }
            E::In {
                expr,
                target,
                negated,
                ..
            } => {
                let list = match target {
                    ast::InTarget::List(list) => list,
                    ast::InTarget::Subquery(q) if self.over_empty_catalog(q) => {
                        // `x IN (empty)` is false, `x NOT IN (empty)` true.
                        return typed(Expr::literal(
                            Some(ScalarValue::Boolean(*negated)),
                            DataType::Boolean,
                        ));
                    }
                    _ => return Err(SqlError::unsupported("subqueries in expressions")),
                };
                let x = self.bind_expr(scope, expr)?;
                let mut acc: Option<Expr> = None;
                for item in list {
                    let v = self.bind_expr(scope, item)?;
                    let eq = self.bind_func(Func::Eq, vec![x.clone(), v])?;
                    acc = Some(match acc {
                        None => eq,
                        Some(a) => build_func(Func::Or, vec![a, eq])?,
                    });
                }
                let Some(mut out) = acc else {
                    return Err(SqlError::syntax("syntax error at or near \")\""));
                };
                if *negated {
                    out = build_func(Func::Not, vec![out])?;
                }
                typed(out)
            }
            E::Like {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            }
            | E::ILike {
                negated,
                any,
                expr,
                pattern,
                escape_char,
            } => {
                if *any {
                    return Err(SqlError::unsupported("LIKE ANY"));
                }
                let f = match (matches!(e, E::ILike { .. }), negated) {
                    (false, false) => Func::Like,
                    (false, true) => Func::NotLike,
                    (true, false) => Func::ILike,
                    (true, true) => Func::NotILike,
                };
                let x = self.bind_expr(scope, expr)?;
                let p = self.bind_expr(scope, pattern)?;
                let mut args = vec![x, p];
                if let Some(esc) = escape_char {
                    args.push(self.bind_expr(scope, esc)?);
                }
                typed(self.bind_func(f, args)?)
            }
            E::Cast {
                kind,
                expr,
                data_type,
                format,
            } => {
                if !matches!(kind, ast::CastKind::Cast | ast::CastKind::DoubleColon) {
                    return Err(SqlError::unsupported(format!("{kind:?}")));
                }
                if format.is_some() {
                    return Err(SqlError::unsupported("CAST ... FORMAT"));
                }
                if matches!(data_type, ast::DataType::Regclass) {
                    let inner = self.bind_expr(scope, expr)?;
                    return typed(self.bind_oid_cast(inner, "regclass")?);
                }
                if let ast::DataType::Custom(name, mods) = data_type {
                    let n = crate::parser::object_name_to_string(name).to_lowercase();
                    if let (Some(target), true) = (super::pg_funcs::oid_type(&n), mods.is_empty()) {
                        let inner = self.bind_expr(scope, expr)?;
                        return typed(self.bind_oid_cast(inner, target)?);
                    }
                }
                let ty = data_type_from_ast(data_type)?;
                if let (E::Array(a), true) = (expr.as_ref(), ty.is_array()) {
                    if a.elem.is_empty() {
                        // `ARRAY[]::int[]`: the cast gives the empty array its type.
                        return typed(Expr::literal(Some(ScalarValue::array_empty(ty)), ty));
                    }
                }
                let inner = self.bind_expr(scope, expr)?;
                typed(self.cast(inner, ty)?)
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => typed(self.bind_case(
                scope,
                operand.as_deref(),
                conditions,
                else_result.as_deref(),
            )?),
            E::Function(f) => self.bind_function(scope, f),
            // Strings compare byte-wise whatever the collation; psql writes
            // `COLLATE pg_catalog.default`.
            E::Collate { expr, .. } => self.bind_expr(scope, expr),
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let mut args = vec![self.bind_expr(scope, expr)?];
                match substring_from {
                    Some(from) => args.push(self.bind_expr(scope, from)?),
                    None => args.push(BExpr::Typed(Expr::literal(
                        Some(ScalarValue::Int32(1)),
                        DataType::Int32,
                    ))),
                }
                if let Some(len) = substring_for {
                    args.push(self.bind_expr(scope, len)?);
                }
                typed(self.bind_func(Func::Substr, args)?)
            }
            E::Position { expr, r#in } => {
                let a = self.bind_expr(scope, expr)?;
                let b = self.bind_expr(scope, r#in)?;
                typed(self.bind_func(Func::Position, vec![a, b])?)
            }
            E::Trim {
                trim_where,
                trim_what,
                expr,
                trim_characters,
            } => {
                let func = match trim_where {
                    None | Some(TrimWhereField::Both) => Func::Trim,
                    Some(w) => {
                        let name = if matches!(w, TrimWhereField::Leading) {
                            "ltrim"
                        } else {
                            "rtrim"
                        };
                        Func::from_name(name)
                            .ok_or_else(|| SqlError::unsupported(format!("TRIM({w} ...)")))?
                    }
                };
                let mut args = vec![self.bind_expr(scope, expr)?];
                if let Some(what) = trim_what {
                    args.push(self.bind_expr(scope, what)?);
                }
                for c in trim_characters.iter().flatten() {
                    args.push(self.bind_expr(scope, c)?);
                }
                typed(self.bind_func(func, args)?)
            }
            E::Ceil { expr, field } | E::Floor { expr, field } => {
                let func = if matches!(e, E::Ceil { .. }) {
                    Func::Ceil
                } else {
                    Func::Floor
                };
                if !matches!(
                    field,
                    CeilFloorKind::DateTimeField(DateTimeField::NoDateTime)
                ) {
                    return Err(SqlError::unsupported(format!("{e}")));
                }
                let arg = self.bind_expr(scope, expr)?;
                typed(self.bind_func(func, vec![arg])?)
            }
            // Subqueries are folded only when they read a catalog that is
            // always empty in ebbflow (psql's `\d` asks pg_attrdef,
            // pg_inherits, pg_trigger, …): their result is then known.
            E::Exists { subquery, negated } if self.over_empty_catalog(subquery) => typed(
                Expr::literal(Some(ScalarValue::Boolean(*negated)), DataType::Boolean),
            ),
            E::Subquery(q) if self.over_empty_catalog(q) => Ok(BExpr::Unknown(Unknown::Null)),
            E::Subquery(q) => self.bind_scalar_subquery(scope, q),
            E::Exists { .. } => Err(SqlError::unsupported("EXISTS subqueries")),
            E::Tuple(_) => Err(SqlError::unsupported("row constructors")),
            E::Array(a) => typed(self.bind_array(scope, &a.elem)?),
            E::AnyOp {
                left,
                compare_op: BinaryOperator::Eq,
                right,
                ..
            } if !matches!(right.as_ref(), E::Subquery(_)) => {
                let x = self.bind_expr(scope, left)?;
                let a = self.bind_expr(scope, right)?;
                let a = match a.hint() {
                    Some(_) => self.finalize(a)?,
                    // `x = ANY('{1,2}')`: the literal is an array of x's type.
                    None => {
                        let t = x.hint().unwrap_or(DataType::Varchar).array_of();
                        self.resolve(a, t)?
                    }
                };
                let elem = a.return_type().elem().unwrap_or(DataType::Varchar);
                let x = self.resolve(x, elem)?;
                typed(build_func(Func::EqAny, vec![x, a])?)
            }
            E::Extract { field, expr, .. } => {
                let unit = Expr::literal(
                    Some(ScalarValue::varchar(field.to_string().to_lowercase())),
                    DataType::Varchar,
                );
                let source = self.bind_expr(scope, expr)?;
                let source = self.resolve(source, DataType::Timestamp)?;
                Ok(BExpr::Typed(build_func(Func::Extract, vec![unit, source])?))
            }
            E::AtTimeZone {
                timestamp,
                time_zone,
            } => {
                let source = self.bind_expr(scope, timestamp)?;
                let source = self.resolve(source, DataType::Timestamptz)?;
                let zone = self.bind_expr(scope, time_zone)?;
                let zone = self.resolve(zone, DataType::Varchar)?;
                Ok(BExpr::Typed(build_func(
                    Func::Timezone,
                    vec![zone, source],
                )?))
            }
            E::AnyOp { .. } | E::AllOp { .. } => Err(SqlError::unsupported("ANY/ALL")),
            other => Err(SqlError::unsupported(format!("expression \"{other}\""))),
        }
    }

    fn bind_value(&mut self, v: &Value) -> SqlResult<BExpr> {
        Ok(match v {
            Value::Number(n, _) => BExpr::Typed(number_literal(n)?),
            Value::SingleQuotedString(s)
            | Value::EscapedStringLiteral(s)
            | Value::UnicodeStringLiteral(s)
            | Value::NationalStringLiteral(s) => BExpr::Unknown(Unknown::Str(s.clone())),
            Value::DollarQuotedString(d) => BExpr::Unknown(Unknown::Str(d.value.clone())),
            Value::Boolean(b) => BExpr::Typed(Expr::literal(
                Some(ScalarValue::Boolean(*b)),
                DataType::Boolean,
            )),
            Value::Null => BExpr::Unknown(Unknown::Null),
            Value::Placeholder(p) => self.bind_param(p)?,
            other => return Err(SqlError::unsupported(format!("literal {other}"))),
        })
    }

    fn bind_param(&mut self, p: &str) -> SqlResult<BExpr> {
        let n = p
            .strip_prefix('$')
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedParameter,
                    format!("there is no parameter {p}"),
                )
            })?;
        let i = n - 1;
        if self.param_types.len() < n {
            self.param_types.resize(n, None);
        }
        let value: Option<Datum> = match &self.params.values {
            None => None,
            Some(values) => Some(values.get(i).cloned().ok_or_else(|| {
                SqlError::new(
                    ErrorKind::UndefinedParameter,
                    format!("there is no parameter {p}"),
                )
            })?),
        };
        if let Some(ty) = self.params.types.get(i).copied().flatten() {
            self.param_types[i] = Some(ty);
            return Ok(BExpr::Typed(match value {
                None => Expr::literal(None, ty),
                Some(v) => typed_value(v, ty)?,
            }));
        }
        match value {
            Some(Some(v)) if v.data_type() != DataType::Varchar => {
                let ty = v.data_type();
                self.param_types[i] = Some(ty);
                Ok(BExpr::Typed(Expr::literal(Some(v), ty)))
            }
            _ => Ok(BExpr::Unknown(Unknown::Param(i))),
        }
    }

    /// Give an unknown value the type `ty` (typed expressions are returned
    /// unchanged: the caller casts them if it needs to).
    pub(super) fn resolve(&mut self, b: BExpr, ty: DataType) -> SqlResult<Expr> {
        match b {
            BExpr::Typed(e) => Ok(e),
            BExpr::Unknown(Unknown::Null) => Ok(Expr::literal(None, ty)),
            BExpr::Unknown(Unknown::Str(s)) => text_literal(&s, ty),
            BExpr::Unknown(Unknown::Param(i)) => {
                if let Some(slot) = self.param_types.get_mut(i) {
                    slot.get_or_insert(ty);
                }
                match self.params.values.as_ref().and_then(|v| v.get(i)) {
                    None | Some(None) => Ok(Expr::literal(None, ty)),
                    Some(Some(v)) => typed_value(Some(v.clone()), ty),
                }
            }
        }
    }

    /// An unknown value with nothing to say its type: varchar.
    pub(super) fn finalize(&mut self, b: BExpr) -> SqlResult<Expr> {
        self.resolve(b, DataType::Varchar)
    }

    /// `CAST(b AS ty)`: unknowns are read directly as `ty`.
    pub(super) fn cast(&mut self, b: BExpr, ty: DataType) -> SqlResult<Expr> {
        match b {
            BExpr::Typed(e) if e.return_type() == ty => Ok(e),
            BExpr::Typed(e) => Ok(build_cast(e, ty, true)?),
            unknown => self.resolve(unknown, ty),
        }
    }
}

/// The value of a parameter as a literal of type `ty`.
fn typed_value(v: Datum, ty: DataType) -> SqlResult<Expr> {
    match v {
        None => Ok(Expr::literal(None, ty)),
        Some(sv) if sv.data_type() == ty => Ok(Expr::literal(Some(sv), ty)),
        Some(ScalarValue::Varchar(s)) => text_literal(&s, ty),
        Some(sv) => {
            let t = sv.data_type();
            Ok(build_cast(Expr::literal(Some(sv), t), ty, true)?)
        }
    }
}

/// `INTERVAL '1' MINUTE`, `INTERVAL '1 day'`.
fn interval_literal(iv: &ast::Interval) -> SqlResult<Expr> {
    let text = match iv.value.as_ref() {
        ast::Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::Number(s, _) => s.clone(),
            other => return Err(SqlError::unsupported(format!("INTERVAL {other}"))),
        },
        other => return Err(SqlError::unsupported(format!("INTERVAL {other}"))),
    };
    let text = match (&iv.leading_field, &iv.last_field) {
        (Some(f), None) if text.trim().parse::<f64>().is_ok() => {
            format!("{} {}", text.trim(), f.to_string().to_lowercase())
        }
        _ => text,
    };
    text_literal(&text, DataType::Interval)
}

pub(super) fn check_bool(e: Expr, what: &str) -> SqlResult<Expr> {
    let t = e.return_type();
    if t == DataType::Boolean {
        Ok(e)
    } else {
        Err(SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!("argument of {what} must be type boolean, not type {t}"),
        ))
    }
}

/// Cast `e` to `ty` with the implicit rules (UNION, CASE, VALUES branches).
pub(super) fn coerce(e: Expr, ty: DataType, what: &str) -> SqlResult<Expr> {
    let from = e.return_type();
    if from == ty {
        return Ok(e);
    }
    build_cast(e, ty, false).map_err(|_| {
        SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!("{what} types {from} and {ty} cannot be matched"),
        )
    })
}
