//! Binding function calls, operators with unknown-typed arguments, CASE,
//! and aggregate calls; the AST walks that look for aggregates and name
//! output columns.

use ebbflow_common::ErrorKind;
use sqlparser::ast::{
    self, DuplicateTreatment, FunctionArg, FunctionArgExpr, FunctionArguments, ObjectNamePart,
    TrimWhereField, Value,
};

use super::expr::{coerce, BExpr};
use super::scope::Scope;
use super::types::{data_type_from_ast, internal_type_name};
use super::{Binder, ExprCtx};
use crate::parser::ident_value;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, ScalarValue};
use ebbflow_expr::{agg_return_type, build_cast, build_func, common_type, AggKind, Expr, Func};

/// Aggregate functions we support, by name.
pub(super) fn agg_kind(name: &str) -> Option<AggKind> {
    Some(match name {
        "count" => AggKind::Count,
        "sum" => AggKind::Sum,
        "min" => AggKind::Min,
        "max" => AggKind::Max,
        "avg" => AggKind::Avg,
        "bool_and" | "every" => AggKind::BoolAnd,
        "bool_or" => AggKind::BoolOr,
        "bit_and" => AggKind::BitAnd,
        "bit_or" => AggKind::BitOr,
        "bit_xor" => AggKind::BitXor,
        "string_agg" => AggKind::StringAgg,
        "array_agg" => AggKind::ArrayAgg,
        // An array_agg of jsonb values, made one jsonb at the end.
        "jsonb_agg" | "json_agg" | "jsonb_object_agg" | "json_object_agg" => AggKind::ArrayAgg,
        _ => return None,
    })
}

/// Aggregates users may expect that we do not have (feature_not_supported
/// rather than undefined_function).
const UNSUPPORTED_AGGREGATES: &[&str] = &[
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "percentile_cont",
    "percentile_disc",
    "mode",
    "approx_count_distinct",
];

pub(super) fn function_name(name: &ast::ObjectName) -> String {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(i)) => ident_value(&i.value, i.quote_style),
        Some(ObjectNamePart::Function(f)) => f.name.value.to_lowercase(),
        None => String::new(),
    }
}

impl Binder<'_> {
    /// Build a call, first giving unknown arguments the type PostgreSQL's
    /// operator resolution would pick for them.
    pub(super) fn bind_func(&mut self, func: Func, args: Vec<BExpr>) -> SqlResult<Expr> {
        let typed: Vec<DataType> = args.iter().filter_map(BExpr::hint).collect();
        let first = typed.first().copied();
        let common = || {
            let mut t = first?;
            for x in &typed[1..] {
                t = common_type(t, *x).unwrap_or(t);
            }
            Some(t)
        };
        use Func as F;
        // The first array among the typed arguments, for unknowns next to it.
        let array = typed.iter().copied().find(|t| t.is_array());
        let mut exprs = Vec::with_capacity(args.len());
        for (pos, a) in args.into_iter().enumerate() {
            let ty = match func {
                F::Concat | F::ArrayCat if array.is_some() => array.unwrap_or(DataType::Varchar),
                F::ArrayAppend | F::ArrayPrepend | F::ArrayPosition => {
                    array.and_then(DataType::elem).unwrap_or(DataType::Varchar)
                }
                F::ArrayLength if pos == 1 => DataType::Int32,
                F::Eq
                | F::NotEq
                | F::Lt
                | F::LtEq
                | F::Gt
                | F::GtEq
                | F::IsDistinctFrom
                | F::IsNotDistinctFrom
                | F::Coalesce
                | F::NullIf
                | F::Greatest
                | F::Least => common().unwrap_or(DataType::Varchar),
                F::Add | F::Sub => match first {
                    Some(DataType::Date | DataType::Timestamp | DataType::Timestamptz) => {
                        DataType::Interval
                    }
                    // `jsonb - 'key'`: the key is text.
                    Some(DataType::Jsonb) => DataType::Varchar,
                    Some(t) => t,
                    None => DataType::Varchar,
                },
                F::Mul | F::Div | F::Mod => match first {
                    Some(DataType::Interval) => DataType::Float64,
                    Some(t) => t,
                    None => DataType::Varchar,
                },
                F::Neg | F::Abs | F::Ceil | F::Floor => DataType::Decimal,
                F::Gcd | F::Lcm => common().unwrap_or(DataType::Int32),
                F::Round if pos == 0 => DataType::Decimal,
                F::Round => DataType::Int32,
                F::Substr if pos > 0 => DataType::Int32,
                F::SplitPart if pos == 2 => DataType::Int32,
                F::And | F::Or | F::Not | F::IsTrue | F::IsNotTrue | F::IsFalse | F::IsNotFalse => {
                    DataType::Boolean
                }
                f => f.unknown_arg_type(pos).unwrap_or(DataType::Varchar),
            };
            exprs.push(self.resolve(a, ty)?);
        }
        Ok(build_func(func, exprs)?)
    }

    pub(super) fn bind_case(
        &mut self,
        scope: &Scope,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        else_result: Option<&ast::Expr>,
    ) -> SqlResult<Expr> {
        let operand = match operand {
            Some(o) => Some(self.bind_expr(scope, o)?),
            None => None,
        };
        let mut conds = Vec::with_capacity(conditions.len());
        let mut results = Vec::with_capacity(conditions.len() + 1);
        for w in conditions {
            let c = match &operand {
                Some(x) => {
                    let v = self.bind_expr(scope, &w.condition)?;
                    self.bind_func(Func::Eq, vec![x.clone(), v])?
                }
                None => self.bind_bool(scope, &w.condition, "CASE/WHEN")?,
            };
            conds.push(c);
            results.push(self.bind_expr(scope, &w.result)?);
        }
        let has_else = else_result.is_some();
        if let Some(e) = else_result {
            results.push(self.bind_expr(scope, e)?);
        }
        let mut ty: Option<DataType> = None;
        for t in results.iter().filter_map(BExpr::hint) {
            ty = Some(match ty {
                None => t,
                Some(prev) => common_type(prev, t).map_err(|_| {
                    SqlError::new(
                        ErrorKind::DatatypeMismatch,
                        format!("CASE types {prev} and {t} cannot be matched"),
                    )
                })?,
            });
        }
        let ty = ty.unwrap_or(DataType::Varchar);
        let mut bound = Vec::with_capacity(results.len());
        for r in results {
            let e = self.resolve(r, ty)?;
            bound.push(coerce(e, ty, "CASE")?);
        }
        let else_ = if has_else {
            bound.pop().map(Box::new)
        } else {
            None
        };
        Ok(Expr::Case {
            whens: conds.into_iter().zip(bound).collect(),
            else_,
            ty,
        })
    }

    /// One shape of window function drivers send over the catalogs, bound
    /// without a window: pgJDBC's `getColumns` numbers columns with
    /// `row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum)`.
    /// ebbflow's `pg_attribute` numbers each relation's columns 1..n
    /// without gaps (nothing is ever dropped), so that row number is
    /// `attnum` itself, as bigint.
    fn bind_attnum_row_number(
        &mut self,
        scope: &Scope,
        name: &str,
        f: &ast::Function,
        over: &ast::WindowType,
    ) -> SqlResult<Option<BExpr>> {
        let ends_with = |e: &ast::Expr, col: &str| match e {
            ast::Expr::Identifier(i) => i.value.eq_ignore_ascii_case(col),
            ast::Expr::CompoundIdentifier(parts) => parts
                .last()
                .is_some_and(|i| i.value.eq_ignore_ascii_case(col)),
            _ => false,
        };
        let no_args = match &f.args {
            FunctionArguments::None => true,
            FunctionArguments::List(l) => l.args.is_empty(),
            FunctionArguments::Subquery(_) => false,
        };
        if let ast::WindowType::WindowSpec(spec) = over {
            if name == "row_number"
                && no_args
                && spec.window_frame.is_none()
                && matches!(spec.partition_by.as_slice(), [p] if ends_with(p, "attrelid"))
                && matches!(spec.order_by.as_slice(), [o] if ends_with(&o.expr, "attnum")
                    && matches!(o.options.sort, None | Some(ast::OrderBySort::Asc)))
            {
                let attnum = self.bind_expr(scope, &spec.order_by[0].expr)?;
                let attnum = self.resolve(attnum, DataType::Int16)?;
                return Ok(Some(BExpr::Typed(ebbflow_expr::build_cast(
                    attnum,
                    DataType::Int64,
                    true,
                )?)));
            }
        }
        Ok(None)
    }

    pub(super) fn bind_function(&mut self, scope: &Scope, f: &ast::Function) -> SqlResult<BExpr> {
        let name = function_name(&f.name);
        if let Some(over) = &f.over {
            if let Some(e) = self.bind_attnum_row_number(scope, &name, f, over)? {
                return Ok(e);
            }
            return self.bind_window_call(scope, &name, f, over);
        }
        if !f.within_group.is_empty() {
            return Err(SqlError::unsupported("WITHIN GROUP"));
        }
        let mut order_by: &[ast::OrderByExpr] = &[];
        let (distinct, args): (bool, &[FunctionArg]) = match &f.args {
            FunctionArguments::None => (false, &[]),
            // `ARRAY(SELECT …)` over an always-empty catalog (psql's `\d+`
            // reads `unnest(reloptions)`) is the empty array.
            FunctionArguments::Subquery(q) if name == "array" && self.over_empty_catalog(q) => {
                return Ok(BExpr::Unknown(super::expr::Unknown::Str("{}".into())))
            }
            FunctionArguments::Subquery(_) => {
                return Err(SqlError::unsupported("subqueries in expressions"))
            }
            FunctionArguments::List(l) => {
                match l.clauses.as_slice() {
                    [] => {}
                    [ast::FunctionArgumentClause::OrderBy(o)]
                        if name == "string_agg" || name.ends_with("_agg") =>
                    {
                        order_by = o;
                    }
                    _ => {
                        return Err(SqlError::unsupported(format!(
                            "clauses in the arguments of {name}()"
                        )))
                    }
                }
                (
                    l.duplicate_treatment == Some(DuplicateTreatment::Distinct),
                    &l.args,
                )
            }
        };
        if let Some(kind) = agg_kind(&name) {
            let call = AggCallAst {
                name: &name,
                kind,
                distinct,
                args,
                order_by,
                filter: f.filter.as_deref(),
            };
            return self.bind_aggregate(scope, call);
        }
        if f.filter.is_some() {
            return Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!("FILTER specified, but {name} is not an aggregate function"),
            ));
        }
        if name == "unnest" {
            return Err(SqlError::unsupported(
                "unnest other than as a whole select list item or in FROM",
            ));
        }
        if UNSUPPORTED_AGGREGATES.contains(&name.as_str()) {
            return Err(SqlError::unsupported(format!("aggregate function {name}")));
        }
        if distinct {
            return Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!("DISTINCT specified, but {name} is not an aggregate function"),
            ));
        }
        let mut bound = Vec::with_capacity(args.len());
        for a in args {
            match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                    bound.push(self.bind_expr(scope, e)?)
                }
                other => {
                    return Err(SqlError::unsupported(format!(
                        "argument {other} of function {name}"
                    )))
                }
            }
        }
        let bound = match self.bind_pg_function(&name, bound.clone())? {
            Some(e) => return Ok(BExpr::Typed(e)),
            None => bound,
        };
        if name == "gen_random_uuid" && self.streaming {
            let mut e = SqlError::new(
                ErrorKind::FeatureNotSupported,
                "gen_random_uuid() is not supported in a materialized view: \
                 its value would differ between the initial snapshot and later changes",
            );
            e.set_hint(Some(
                "Generate the value where the row is written: INSERT … VALUES (gen_random_uuid(), …)."
                    .into(),
            ));
            return Err(e);
        }
        match Func::from_name(&name) {
            Some(func) => Ok(BExpr::Typed(self.bind_func(func, bound)?)),
            None => {
                let types: Vec<&str> = bound
                    .iter()
                    .map(|b| b.hint().map(|t| t.pg_name()).unwrap_or("unknown"))
                    .collect();
                Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function {name}({}) does not exist", types.join(", ")),
                ))
            }
        }
    }

    fn bind_aggregate(&mut self, scope: &Scope, call: AggCallAst<'_>) -> SqlResult<BExpr> {
        if let ExprCtx::Plain { agg_error } = &self.ctx {
            return Err(SqlError::new(ErrorKind::GroupingError, *agg_error));
        }
        // No window calls inside an aggregate's argument or FILTER.
        let windows = self.windows.take();
        self.in_aggregate += 1;
        let bound = self.bind_aggregate_call(scope, call);
        self.in_aggregate -= 1;
        self.windows = windows;
        bound
    }

    /// The arguments of `string_agg(value, delimiter [ORDER BY …])` as the
    /// one packed input its accumulator takes (`Func::StringAggInput`).
    fn bind_string_agg_input(
        &mut self,
        scope: &Scope,
        distinct: bool,
        args: &[FunctionArg],
        order_by: &[ast::OrderByExpr],
    ) -> SqlResult<Expr> {
        let [FunctionArg::Unnamed(FunctionArgExpr::Expr(v)), FunctionArg::Unnamed(FunctionArgExpr::Expr(d))] =
            args
        else {
            return Err(SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function string_agg with {} arguments does not exist",
                    args.len()
                ),
            ));
        };
        let mut text = |e: &ast::Expr| -> SqlResult<Expr> {
            let b = self.bind_expr(scope, e)?;
            let e = self.resolve(b, DataType::Varchar)?;
            if e.return_type() != DataType::Varchar {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!(
                        "function string_agg({}, text) does not exist",
                        e.return_type().pg_name()
                    ),
                ));
            }
            Ok(e)
        };
        let value = text(v)?;
        let delimiter = text(d)?;
        let (dirs, keys) =
            self.bind_agg_order_by(scope, distinct, &[&value, &delimiter], order_by)?;
        let mut packed = vec![value, delimiter, dirs];
        packed.extend(keys);
        Ok(Expr::Func {
            func: Func::StringAggInput,
            args: packed,
            ty: DataType::Varchar,
        })
    }

    /// The `ORDER BY` inside an ordered aggregate's call: a literal of one
    /// `a`/`d` per key, and the keys.
    fn bind_agg_order_by(
        &mut self,
        scope: &Scope,
        distinct: bool,
        args: &[&Expr],
        order_by: &[ast::OrderByExpr],
    ) -> SqlResult<(Expr, Vec<Expr>)> {
        let mut dirs = String::new();
        let mut keys = Vec::with_capacity(order_by.len());
        for o in order_by {
            let (desc, nulls_first) = super::select::order_options(&o.options)?;
            let b = self.bind_expr(scope, &o.expr)?;
            let k = self.resolve(b, DataType::Varchar)?;
            if distinct && !args.contains(&&k) {
                return Err(SqlError::new(
                    ErrorKind::InvalidColumnReference,
                    "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                ));
            }
            // Lower case: the default NULL placement (last ascending,
            // first descending); upper case the other.
            dirs.push(match (desc, nulls_first == desc) {
                (false, true) => 'a',
                (true, true) => 'd',
                (false, false) => 'A',
                (true, false) => 'D',
            });
            keys.push(k);
        }
        let dirs = Expr::literal(Some(ScalarValue::varchar(dirs)), DataType::Varchar);
        Ok((dirs, keys))
    }

    /// The argument of `array_agg(value [ORDER BY …])` as the one packed
    /// input its accumulator takes (`Func::ArrayAggInput`), and the
    /// call's result type.
    fn bind_array_agg_input(
        &mut self,
        scope: &Scope,
        name: &str,
        distinct: bool,
        args: &[FunctionArg],
        order_by: &[ast::OrderByExpr],
    ) -> SqlResult<(Expr, DataType)> {
        let wrong = || {
            SqlError::new(
                ErrorKind::UndefinedFunction,
                format!(
                    "function {name} with {} arguments does not exist",
                    args.len()
                ),
            )
        };
        let value = match (name, args) {
            ("array_agg", [FunctionArg::Unnamed(FunctionArgExpr::Expr(v))]) => {
                self.bind_typed(scope, v)?
            }
            // jsonb_agg: each value as jsonb.
            (_, [FunctionArg::Unnamed(FunctionArgExpr::Expr(v))]) if !name.contains("object") => {
                let v = self.bind_expr(scope, v)?;
                let v = self.resolve(v, DataType::Varchar)?;
                build_func(Func::ToJsonb, vec![v])?
            }
            // jsonb_object_agg: each pair as `[key as text, value]`.
            (
                _,
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(k)), FunctionArg::Unnamed(FunctionArgExpr::Expr(v))],
            ) if name.contains("object") => {
                let k = self.bind_expr(scope, k)?;
                let k = build_cast(self.resolve(k, DataType::Varchar)?, DataType::Varchar, true)?;
                let v = self.bind_expr(scope, v)?;
                let v = self.resolve(v, DataType::Varchar)?;
                build_func(Func::JsonbBuildArray, vec![k, v])?
            }
            _ => return Err(wrong()),
        };
        let ty = value.return_type();
        if ty.is_array() {
            return Err(SqlError::unsupported(
                "array_agg of arrays (multidimensional arrays)",
            ));
        }
        let (dirs, keys) = self.bind_agg_order_by(scope, distinct, &[&value], order_by)?;
        let mut packed = vec![value, dirs];
        packed.extend(keys);
        let e = Expr::Func {
            func: Func::ArrayAggInput,
            args: packed,
            ty: DataType::Varchar,
        };
        Ok((e, ty.array_of()))
    }

    fn bind_aggregate_call(&mut self, scope: &Scope, call: AggCallAst<'_>) -> SqlResult<BExpr> {
        let AggCallAst {
            name,
            kind,
            distinct,
            args,
            order_by,
            filter,
        } = call;
        let saved = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate function calls cannot be nested",
            },
        );
        let string_agg = match kind {
            AggKind::StringAgg => Some(
                self.bind_string_agg_input(scope, distinct, args, order_by)
                    .map(|e| (e, None)),
            ),
            AggKind::ArrayAgg => Some(
                self.bind_array_agg_input(scope, name, distinct, args, order_by)
                    .map(|(e, t)| (e, Some(t))),
            ),
            _ => None,
        };
        self.ctx = saved;
        // An ordered aggregate's packed input, and its result type when
        // the packed input's type does not tell it.
        let (string_agg, packed_ret) = match string_agg.transpose()? {
            Some((e, t)) => (Some(e), t),
            None => (None, None),
        };
        let arg_ast = match args {
            _ if string_agg.is_some() => None,
            [FunctionArg::Unnamed(FunctionArgExpr::Wildcard)] if kind == AggKind::Count => {
                if distinct {
                    return Err(SqlError::syntax("syntax error at or near \"*\""));
                }
                None
            }
            [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] => Some(e),
            _ => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!(
                        "function {name} with {} arguments does not exist",
                        args.len()
                    ),
                ))
            }
        };
        let (kind, arg) = match arg_ast {
            None if string_agg.is_some() => (kind, string_agg),
            None => (AggKind::CountStar, None),
            Some(e) => {
                let saved = std::mem::replace(
                    &mut self.ctx,
                    ExprCtx::Plain {
                        agg_error: "aggregate function calls cannot be nested",
                    },
                );
                let arg = self.bind_typed(scope, e);
                self.ctx = saved;
                (kind, Some(arg?))
            }
        };
        let (kind, arg) = match filter {
            None => (kind, arg),
            Some(cond) => {
                let saved = std::mem::replace(
                    &mut self.ctx,
                    ExprCtx::Plain {
                        agg_error: "aggregate functions are not allowed in FILTER",
                    },
                );
                let cond = self
                    .bind_expr(scope, cond)
                    .and_then(|c| self.resolve(c, DataType::Boolean));
                self.ctx = saved;
                let cond = super::expr::check_bool(cond?, "FILTER")?;
                filtered(kind, arg, cond)
            }
        };
        let ret = match packed_ret {
            Some(t) => t,
            None => agg_return_type(kind, arg.as_ref().map(Expr::return_type))?,
        };
        let ExprCtx::Agg(state) = &mut self.ctx else {
            return Err(SqlError::new(
                ErrorKind::InternalError,
                "aggregate outside of an aggregation",
            ));
        };
        let idx = state.add_call(kind, distinct, arg, ret);
        let result = Expr::input_ref(idx, ret);
        Ok(BExpr::Typed(match name {
            "jsonb_agg" | "json_agg" => build_func(Func::ToJsonb, vec![result])?,
            "jsonb_object_agg" | "json_object_agg" => {
                build_func(Func::JsonbObjectFromPairs, vec![result])?
            }
            _ => result,
        }))
    }
}

/// An aggregate call as written.
struct AggCallAst<'a> {
    name: &'a str,
    kind: AggKind,
    distinct: bool,
    args: &'a [FunctionArg],
    /// `ORDER BY` inside the parentheses (string_agg only).
    order_by: &'a [ast::OrderByExpr],
    filter: Option<&'a ast::Expr>,
}

/// Whether an expression contains an aggregate call (outside subqueries).
pub(super) fn contains_aggregate(e: &ast::Expr) -> bool {
    use ast::Expr as E;
    match e {
        E::Function(f) => {
            if f.over.is_none() && agg_kind(&function_name(&f.name)).is_some() {
                return true;
            }
            match &f.args {
                FunctionArguments::List(l) => l.args.iter().any(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e))
                    | FunctionArg::Named {
                        arg: FunctionArgExpr::Expr(e),
                        ..
                    } => contains_aggregate(e),
                    _ => false,
                }),
                _ => false,
            }
        }
        E::BinaryOp { left, right, .. } => contains_aggregate(left) || contains_aggregate(right),
        E::IsDistinctFrom(a, b) | E::IsNotDistinctFrom(a, b) => {
            contains_aggregate(a) || contains_aggregate(b)
        }
        E::UnaryOp { expr, .. }
        | E::Nested(expr)
        | E::IsNull(expr)
        | E::IsNotNull(expr)
        | E::IsTrue(expr)
        | E::IsNotTrue(expr)
        | E::IsFalse(expr)
        | E::IsNotFalse(expr)
        | E::Cast { expr, .. }
        | E::Ceil { expr, .. }
        | E::Floor { expr, .. } => contains_aggregate(expr),
        E::Between {
            expr, low, high, ..
        } => contains_aggregate(expr) || contains_aggregate(low) || contains_aggregate(high),
        E::In {
            expr,
            target: ast::InTarget::List(list),
            ..
        } => contains_aggregate(expr) || list.iter().any(contains_aggregate),
        E::Like { expr, pattern, .. } | E::ILike { expr, pattern, .. } => {
            contains_aggregate(expr) || contains_aggregate(pattern)
        }
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            operand.as_deref().is_some_and(contains_aggregate)
                || conditions
                    .iter()
                    .any(|w| contains_aggregate(&w.condition) || contains_aggregate(&w.result))
                || else_result.as_deref().is_some_and(contains_aggregate)
        }
        E::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            contains_aggregate(expr)
                || substring_from.as_deref().is_some_and(contains_aggregate)
                || substring_for.as_deref().is_some_and(contains_aggregate)
        }
        E::Position { expr, r#in } => contains_aggregate(expr) || contains_aggregate(r#in),
        E::Trim {
            expr, trim_what, ..
        } => contains_aggregate(expr) || trim_what.as_deref().is_some_and(contains_aggregate),
        _ => false,
    }
}

/// The output column name PostgreSQL gives an unaliased select item.
pub(super) fn figure_name(e: &ast::Expr) -> String {
    use ast::Expr as E;
    match e {
        E::Identifier(i) => ident_value(&i.value, i.quote_style),
        E::CompoundIdentifier(parts) => parts
            .last()
            .map(|i| ident_value(&i.value, i.quote_style))
            .unwrap_or_else(|| "?column?".into()),
        E::Function(f) => function_name(&f.name),
        E::Extract { .. } => "extract".into(),
        E::Nested(inner) => figure_name(inner),
        E::Cast {
            expr, data_type, ..
        } => {
            let inner = figure_name(expr);
            if inner != "?column?" {
                inner
            } else {
                match data_type_from_ast(data_type) {
                    Ok(t) => internal_type_name(t).to_string(),
                    Err(_) => inner,
                }
            }
        }
        E::TypedString(ts) => match data_type_from_ast(&ts.data_type) {
            Ok(t) => internal_type_name(t).to_string(),
            Err(_) => "?column?".into(),
        },
        E::Value(v) if matches!(v.value, Value::Boolean(_)) => "bool".into(),
        E::Interval(_) => "interval".into(),
        E::Case { .. } => "case".into(),
        E::Substring { .. } => "substring".into(),
        E::Position { .. } => "position".into(),
        E::Trim { trim_where, .. } => match trim_where {
            Some(TrimWhereField::Leading) => "ltrim".into(),
            Some(TrimWhereField::Trailing) => "rtrim".into(),
            _ => "btrim".into(),
        },
        E::Ceil { .. } => "ceil".into(),
        E::Floor { .. } => "floor".into(),
        _ => "?column?".into(),
    }
}

/// `agg(x) FILTER (WHERE c)` as `agg(CASE WHEN c THEN x END)`, and
/// `count(*) FILTER (WHERE c)` as `count(CASE WHEN c THEN 1 END)`: every
/// aggregate ebbflow has ignores NULL inputs, so a row the filter does not
/// pass (false or NULL) is one the call does not see, in streaming and
/// batch alike. (An aggregate that keeps NULLs, like `array_agg`, will
/// need the filter as a column of its own.)
pub(super) fn filtered(kind: AggKind, arg: Option<Expr>, cond: Expr) -> (AggKind, Option<Expr>) {
    let (kind, then) = match arg {
        Some(a) => (kind, a),
        None => (
            AggKind::Count,
            Expr::literal(Some(ebbflow_common::ScalarValue::Int32(1)), DataType::Int32),
        ),
    };
    let ty = then.return_type();
    let case = Expr::Case {
        whens: vec![(cond, then)],
        else_: None,
        ty,
    };
    (kind, Some(case))
}
