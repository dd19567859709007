//! The functions and casts PostgreSQL clients send (psql, JDBC, BI
//! tools): session facts (`current_user`, `now()`), catalog lookups
//! (`format_type`, `pg_get_indexdef`, `::regclass`) and privilege checks.
//!
//! Everything here is folded at bind time: session facts become
//! literals, and a lookup by OID becomes a `CASE` over the catalog as it
//! is when the statement is bound, so the executors need no catalog
//! access and the catalog is never copied.

use ebbflow_common::ErrorKind;
use std::sync::Arc;

use sqlparser::ast;

use super::expr::{BExpr, Unknown};
use super::Binder;
use crate::{SqlError, SqlResult};
use ebbflow_common::{DataType, ScalarValue};
use ebbflow_expr::{build_cast, build_func, Expr, Func};
use ebbflow_meta::catalog::RelationKind;
use ebbflow_meta::pg_catalog::{
    index_def, index_oid, relation_oid, ALWAYS_EMPTY, PG_CATALOG_IDS, PG_TYPES, USER_OID_BASE,
};

fn text(s: impl Into<Arc<str>>) -> Expr {
    Expr::literal(Some(ScalarValue::Varchar(s.into())), DataType::Varchar)
}

fn null_text() -> Expr {
    Expr::literal(None, DataType::Varchar)
}

fn boolean(b: bool) -> Expr {
    Expr::literal(Some(ScalarValue::Boolean(b)), DataType::Boolean)
}

fn int(v: i64) -> Expr {
    match i32::try_from(v) {
        Ok(v) => Expr::literal(Some(ScalarValue::Int32(v)), DataType::Int32),
        Err(_) => Expr::literal(Some(ScalarValue::Int64(v)), DataType::Int64),
    }
}

/// `CASE x WHEN k1 THEN v1 … ELSE otherwise END` over an OID.
fn oid_case(x: Expr, pairs: Vec<(i64, String)>, otherwise: Expr) -> SqlResult<Expr> {
    let mut whens = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        whens.push((build_func(Func::Eq, vec![x.clone(), int(k)])?, text(v)));
    }
    if whens.is_empty() {
        return Ok(otherwise);
    }
    Ok(Expr::Case {
        whens,
        else_: Some(Box::new(otherwise)),
        ty: DataType::Varchar,
    })
}

/// The PostgreSQL type a name as written in `'…'::regtype` or a cast
/// means: `(oid, format_type name)`.
fn type_by_name(name: &str) -> Option<(i32, &'static str)> {
    let n = name.trim().trim_start_matches("pg_catalog.").to_lowercase();
    let alias = match n.as_str() {
        "int" | "integer" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "character varying" => "varchar",
        "decimal" => "numeric",
        "timestamp without time zone" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        other => other,
    };
    PG_TYPES.iter().find(|t| t.1 == alias).map(|t| (t.0, t.2))
}

/// Whether a cast target is one of the OID types this module handles.
pub(super) fn oid_type(name: &str) -> Option<&'static str> {
    match name.trim_start_matches("pg_catalog.") {
        "oid" => Some("oid"),
        "regclass" => Some("regclass"),
        "regtype" => Some("regtype"),
        "regproc" | "regprocedure" => Some("regproc"),
        "regnamespace" | "regrole" => Some("oid"),
        _ => None,
    }
}

/// Array-typed columns of the catalogs, always NULL in ebbflow.
const NULL_ARRAY_COLUMNS: &[&str] = &[
    "reloptions",
    "relacl",
    "attoptions",
    "attacl",
    "datacl",
    "nspacl",
    "typacl",
    "polroles",
];

impl Binder<'_> {
    /// Whether `q` reads, in an inner position of its top-level FROM (a
    /// FROM item or the right side of an inner or cross join), a
    /// `pg_catalog` relation that is always empty in ebbflow, so that its
    /// FROM yields no rows. A user relation of that name wins.
    /// An aggregation over it still yields a row, so it must not group
    /// (see [`Self::empty_catalog_query`]).
    pub(super) fn over_empty_catalog(&self, q: &ast::Query) -> bool {
        q.with.is_none() && self.empty_catalog_query(&q.body).is_some()
    }

    fn select_over_empty_catalog(&self, select: &ast::Select) -> bool {
        let empty = |f: &ast::TableFactor| {
            let name = match f {
                ast::TableFactor::Table {
                    name, args: None, ..
                } => name,
                // `unnest(c.reloptions)`: the catalogs' array columns are
                // always NULL in ebbflow, so this yields no rows.
                ast::TableFactor::Table {
                    name,
                    args: Some(args),
                    ..
                } => {
                    let func = crate::parser::object_name_to_string(name).to_lowercase();
                    return matches!(func.as_str(), "unnest" | "pg_catalog.unnest")
                        && args.args.iter().all(|a| {
                            matches!(a, ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(
                                ast::Expr::CompoundIdentifier(parts))) if parts.last().is_some_and(|p| NULL_ARRAY_COLUMNS.contains(&p.value.as_str())))
                        });
                }
                _ => return false,
            };
            let full = crate::parser::object_name_to_string(name).to_lowercase();
            let (schema, rel) = match full.rsplit_once('.') {
                Some((s, r)) => (Some(s), r),
                None => (None, full.as_str()),
            };
            matches!(schema, None | Some("pg_catalog"))
                && ALWAYS_EMPTY.contains(&rel)
                && self
                    .catalog
                    .relation(schema, rel)
                    .is_none_or(|r| r.kind == RelationKind::System)
        };
        select.from.iter().any(|t| {
            empty(&t.relation)
                || t.joins.iter().any(|j| {
                    matches!(
                        j.join_operator,
                        ast::JoinOperator::Join(_)
                            | ast::JoinOperator::Inner(_)
                            | ast::JoinOperator::CrossJoin(_)
                    ) && empty(&j.relation)
                })
        })
    }

    /// The output names of a query known to return no rows (see
    /// [`Self::over_empty_catalog`]): no aggregation (whose empty input
    /// still yields a row), every branch of a UNION empty, and named
    /// output columns. `None` when the query must be bound normally.
    pub(super) fn empty_catalog_query(&self, body: &ast::SetExpr) -> Option<Vec<String>> {
        match body {
            ast::SetExpr::Select(select) => {
                let grouped = !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty())
                    || select.having.is_some();
                if grouped || !self.select_over_empty_catalog(select) {
                    return None;
                }
                select
                    .projection
                    .iter()
                    .map(|item| match item {
                        ast::SelectItem::UnnamedExpr(e) if !super::func::contains_aggregate(e) => {
                            Some(super::func::figure_name(e))
                        }
                        ast::SelectItem::ExprWithAlias { expr, alias }
                            if !super::func::contains_aggregate(expr) =>
                        {
                            Some(crate::parser::ident_value(&alias.value, alias.quote_style))
                        }
                        _ => None,
                    })
                    .collect()
            }
            ast::SetExpr::SetOperation { left, right, .. } => {
                let names = self.empty_catalog_query(left)?;
                self.empty_catalog_query(right)?;
                Some(names)
            }
            ast::SetExpr::Query(q) => self.empty_catalog_query(&q.body),
            _ => None,
        }
    }

    /// An argument as an OID-valued (integer) expression.
    fn oid_arg(&mut self, b: BExpr) -> SqlResult<Expr> {
        let e = self.resolve(b, DataType::Int32)?;
        match e.return_type() {
            t if t.is_integer() => Ok(e),
            DataType::Varchar => Ok(build_cast(e, DataType::Int64, true)?),
            t => Err(SqlError::new(
                ErrorKind::CannotCoerce,
                format!("cannot cast type {t} to oid"),
            )),
        }
    }

    /// `(oid, name)` of every relation, qualified unless it is visible
    /// unqualified (as `::regclass` prints it).
    fn relation_names(&self) -> Vec<(i64, String)> {
        self.catalog
            .relations()
            .into_iter()
            .map(|(schema, r)| {
                let name = if schema == "public" || schema == "pg_catalog" {
                    r.name.clone()
                } else {
                    format!("{schema}.{}", r.name)
                };
                (relation_oid(&r), name)
            })
            .collect()
    }

    /// `expr::regclass`, `expr::regtype`, `expr::regproc`, `expr::oid`.
    pub(super) fn bind_oid_cast(&mut self, inner: BExpr, target: &str) -> SqlResult<Expr> {
        match (target, inner) {
            ("regclass", BExpr::Unknown(Unknown::Str(name))) => {
                let parts: Vec<String> = name
                    .split('.')
                    .map(|p| {
                        if p.starts_with('"') && p.ends_with('"') && p.len() >= 2 {
                            p[1..p.len() - 1].replace("\"\"", "\"")
                        } else {
                            p.to_lowercase()
                        }
                    })
                    .collect();
                let found = match parts.as_slice() {
                    [n] => self.catalog.relation(None, n),
                    [s, n] => self.catalog.relation(Some(s), n),
                    [_, s, n] => self.catalog.relation(Some(s), n),
                    _ => None,
                };
                match found {
                    Some(r) => Ok(int(relation_oid(&r))),
                    None => Err(SqlError::new(
                        ErrorKind::UndefinedTable,
                        format!("relation \"{name}\" does not exist"),
                    )),
                }
            }
            ("regtype", BExpr::Unknown(Unknown::Str(name))) => match type_by_name(&name) {
                Some((oid, _)) => Ok(int(oid.into())),
                None => Err(SqlError::new(
                    ErrorKind::UndefinedObject,
                    format!("type \"{name}\" does not exist"),
                )),
            },
            ("regclass", b) => {
                let x = self.oid_arg(b)?;
                let names = self.relation_names();
                let otherwise = build_cast(x.clone(), DataType::Varchar, true)?;
                oid_case(x, names, otherwise)
            }
            ("regtype", b) => {
                let x = self.oid_arg(b)?;
                let names = PG_TYPES
                    .iter()
                    .map(|t| (i64::from(t.0), t.2.to_string()))
                    .collect();
                let otherwise = build_cast(x.clone(), DataType::Varchar, true)?;
                oid_case(x, names, otherwise)
            }
            // The catalogs name functions (`pg_type.typinput`) rather than
            // give them OIDs: a function name literal stays its name.
            ("regproc", BExpr::Unknown(Unknown::Str(name))) => {
                let name = name.trim();
                Ok(text(name.strip_prefix("pg_catalog.").unwrap_or(name)))
            }
            (_, b) => self.oid_arg(b),
        }
    }

    /// Bind one of this module's functions; `None` if `name` is not one.
    pub(super) fn bind_pg_function(
        &mut self,
        name: &str,
        mut args: Vec<BExpr>,
    ) -> SqlResult<Option<Expr>> {
        let session = self.catalog.session();
        let n = args.len();
        let arity = |ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(SqlError::new(
                    ErrorKind::UndefinedFunction,
                    format!("function {name} with {n} arguments does not exist"),
                ))
            }
        };
        let name = name.strip_prefix("pg_catalog.").unwrap_or(name);
        let e = match name {
            "version" => {
                arity(n == 0)?;
                text(format!(
                    "PostgreSQL 15.0 (ebbflow {}) on {}, a streaming database",
                    env!("CARGO_PKG_VERSION"),
                    std::env::consts::ARCH
                ))
            }
            "current_database" | "current_catalog" => {
                arity(n == 0)?;
                text(session.database.as_str())
            }
            "current_user" | "session_user" | "user" | "current_role" | "getpgusername" => {
                arity(n == 0)?;
                text(session.user.as_str())
            }
            "current_schema" => {
                arity(n == 0)?;
                text(self.search_path().first().map_or("public", String::as_str))
            }
            "current_schemas" => {
                arity(n == 1)?;
                let implicit = match args.pop().map(|a| self.resolve(a, DataType::Boolean)) {
                    Some(Ok(Expr::Literal { value, .. })) => {
                        value != Some(ScalarValue::Boolean(false))
                    }
                    Some(Err(e)) => return Err(e),
                    _ => true,
                };
                let mut path = self.search_path();
                if implicit && !path.iter().any(|s| s == "pg_catalog") {
                    path.insert(0, "pg_catalog".into());
                }
                text(format!("{{{}}}", path.join(",")))
            }
            // Real arrays go to the array functions; these serve the
            // catalogs' text-typed array columns.
            "array_upper" | "array_length" | "array_to_string"
                if args
                    .first()
                    .and_then(BExpr::hint)
                    .is_some_and(|t| t != DataType::Varchar) =>
            {
                return Ok(None)
            }
            "array_upper" | "array_length" => {
                arity(n == 2)?;
                let (Some(dim), Some(array)) = (args.pop(), args.pop()) else {
                    return Err(SqlError::new(ErrorKind::InternalError, "missing arguments"));
                };
                let constant = |e: Expr| match e {
                    Expr::Literal { value, .. } => Ok(value),
                    _ => Err(SqlError::unsupported(format!(
                        "{name} of a non-constant array"
                    ))),
                };
                let array = constant(self.resolve(array, DataType::Varchar)?)?;
                let dim = constant(self.resolve(dim, DataType::Int32)?)?;
                let elements = match &array {
                    Some(ScalarValue::Varchar(s)) => super::array_expr::const_array_elements(s)
                        .ok_or_else(|| {
                            SqlError::new(
                                ErrorKind::InvalidTextRepresentation,
                                format!("malformed array literal: \"{s}\""),
                            )
                        })?,
                    _ => Vec::new(),
                };
                match dim.and_then(|d| d.as_i64()) {
                    Some(1) if !elements.is_empty() => int(elements.len() as i64),
                    _ => Expr::literal(None, DataType::Int32),
                }
            }
            "now"
            | "current_timestamp"
            | "localtimestamp"
            | "transaction_timestamp"
            | "statement_timestamp"
            | "current_date" => {
                if self.streaming {
                    return Err(SqlError::new(
                        ErrorKind::FeatureNotSupported,
                        format!(
                            "{name}() is not supported in a materialized view: \
                             its value would differ between the initial snapshot and later changes"
                        ),
                    ));
                }
                // `current_timestamp(p)` / `localtimestamp(p)` take a precision.
                arity(n <= 1)?;
                // The statement's instant; `localtimestamp` and
                // `current_date` are its local time in the session zone.
                let instant = session.statement_time.and_utc().timestamp_micros();
                let zone = ebbflow_expr::zoned::session_zone().0;
                let local = zone
                    .to_local(instant)
                    .map_or(session.statement_time, |(l, _)| l);
                match name {
                    "current_date" => {
                        Expr::literal(Some(ScalarValue::Date(local.date())), DataType::Date)
                    }
                    "localtimestamp" => {
                        Expr::literal(Some(ScalarValue::Timestamp(local)), DataType::Timestamp)
                    }
                    _ => Expr::literal(
                        Some(ScalarValue::Timestamptz(instant)),
                        DataType::Timestamptz,
                    ),
                }
            }
            // `age(ts)`: from midnight of the statement's date (in the
            // session zone); refused in an MV as `now()` is.
            "age" if n == 1 => {
                if self.streaming {
                    return Err(SqlError::new(
                        ErrorKind::FeatureNotSupported,
                        "age() of one argument is not supported in a materialized view: \
                         it depends on the current date",
                    ));
                }
                let instant = session.statement_time.and_utc().timestamp_micros();
                let zone = ebbflow_expr::zoned::session_zone().0;
                let local = zone
                    .to_local(instant)
                    .map_or(session.statement_time, |(l, _)| l);
                let midnight = local.date().and_hms_opt(0, 0, 0).unwrap_or(local);
                let arg = args
                    .pop()
                    .map_or(Ok(Expr::literal(None, DataType::Timestamp)), |a| {
                        self.resolve(a, DataType::Timestamp)
                    })?;
                let today =
                    Expr::literal(Some(ScalarValue::Timestamp(midnight)), DataType::Timestamp);
                build_func(Func::Age, vec![today, arg])?
            }
            "pg_typeof" => {
                arity(n == 1)?;
                match args.pop().and_then(|a| a.hint()) {
                    Some(t) => text(t.pg_name()),
                    None => text("unknown"),
                }
            }
            "format_type" => {
                arity(n == 2)?;
                args.truncate(1);
                let x = self.oid_arg(args.remove(0))?;
                let names = PG_TYPES
                    .iter()
                    .map(|t| (i64::from(t.0), t.2.to_string()))
                    .collect();
                let null = build_func(Func::IsNull, vec![x.clone()])?;
                let unknown = Expr::Case {
                    whens: vec![(null, null_text())],
                    else_: Some(Box::new(text("???"))),
                    ty: DataType::Varchar,
                };
                oid_case(x, names, unknown)?
            }
            "pg_get_userbyid" => {
                arity(n == 1)?;
                text(session.user.as_str())
            }
            "pg_table_is_visible" => {
                // User relations and pg_catalog are on the search path;
                // rw_catalog and information_schema are not listed by
                // psql's `\d`.
                arity(n == 1)?;
                let x = self.oid_arg(args.remove(0))?;
                let user = build_func(Func::GtEq, vec![x.clone(), int(USER_OID_BASE)])?;
                let lo = build_func(
                    Func::GtEq,
                    vec![x.clone(), int(PG_CATALOG_IDS.start.into())],
                )?;
                let hi = build_func(Func::Lt, vec![x, int(PG_CATALOG_IDS.end.into())])?;
                let pg = build_func(Func::And, vec![lo, hi])?;
                build_func(Func::Or, vec![user, pg])?
            }
            "obj_description" | "col_description" | "shobj_description" | "pg_get_expr" => {
                arity((1..=3).contains(&n))?;
                null_text()
            }
            "has_table_privilege"
            | "has_schema_privilege"
            | "has_database_privilege"
            | "has_column_privilege"
            | "has_any_column_privilege"
            | "has_function_privilege"
            | "pg_has_role" => {
                arity((2..=4).contains(&n))?;
                boolean(true)
            }
            "pg_backend_pid" => {
                arity(n == 0)?;
                int(session.backend_pid.into())
            }
            "pg_encoding_to_char" => {
                arity(n == 1)?;
                let x = self.oid_arg(args.remove(0))?;
                oid_case(
                    x,
                    vec![(0, "SQL_ASCII".into()), (6, "UTF8".into())],
                    text(""),
                )?
            }
            "pg_get_indexdef" => {
                arity((1..=3).contains(&n))?;
                args.truncate(1);
                let x = self.oid_arg(args.remove(0))?;
                let defs = self
                    .catalog
                    .relations()
                    .into_iter()
                    .filter_map(|(_, r)| Some((index_oid(&r)?, index_def(&r))))
                    .collect();
                oid_case(x, defs, null_text())?
            }
            "pg_get_constraintdef" => {
                arity((1..=2).contains(&n))?;
                args.truncate(1);
                let x = self.oid_arg(args.remove(0))?;
                let defs = self
                    .catalog
                    .relations()
                    .into_iter()
                    .filter_map(|(_, r)| {
                        let cols: Vec<&str> =
                            r.pk.iter()
                                .filter_map(|i| r.columns.get(*i))
                                .map(|c| c.name.as_str())
                                .collect();
                        // The constraint's OID is its index's plus one.
                        Some((
                            index_oid(&r)? + 1,
                            format!("PRIMARY KEY ({})", cols.join(", ")),
                        ))
                    })
                    .collect();
                oid_case(x, defs, null_text())?
            }
            "pg_get_viewdef" => {
                arity((1..=2).contains(&n))?;
                args.truncate(1);
                let defs: Vec<(i64, String)> = self
                    .catalog
                    .relations()
                    .into_iter()
                    .filter(|(_, r)| {
                        matches!(r.kind, RelationKind::MaterializedView | RelationKind::View)
                    })
                    .map(|(_, r)| {
                        let def = r.definition.clone().unwrap_or_default();
                        (relation_oid(&r), format!(" {def};"))
                    })
                    .collect();
                let x = match args.remove(0) {
                    BExpr::Unknown(Unknown::Str(s)) => {
                        self.bind_oid_cast(BExpr::Unknown(Unknown::Str(s)), "regclass")?
                    }
                    b => self.oid_arg(b)?,
                };
                oid_case(x, defs, null_text())?
            }
            "pg_function_is_visible" => {
                // Every function is built in, in pg_catalog.
                arity(n == 1)?;
                boolean(true)
            }
            "pg_get_function_result" => {
                arity(n == 1)?;
                let x = self.oid_arg(args.remove(0))?;
                oid_case(x, ebbflow_meta::pg_catalog::proc_results(), null_text())?
            }
            "pg_get_function_arguments" | "pg_get_function_identity_arguments" => {
                arity(n == 1)?;
                null_text()
            }
            "pg_table_size" | "pg_relation_size" | "pg_total_relation_size" | "pg_indexes_size" => {
                // Sizes are not tracked per relation (state lives in shared
                // files); NULL rather than a made-up number.
                arity((1..=2).contains(&n))?;
                Expr::literal(None, DataType::Int64)
            }
            "pg_size_pretty" => {
                arity(n == 1)?;
                let x = self.resolve(args.remove(0), DataType::Int64)?;
                let text_x = build_cast(x, DataType::Varchar, true)?;
                build_func(Func::Concat, vec![text_x, text(" bytes")])?
            }
            "array_to_string" => {
                // Only over the catalogs' array columns, which are NULL
                // or text already (`\l` reads `datacl` this way).
                arity((2..=3).contains(&n))?;
                let x = self.resolve(args.remove(0), DataType::Varchar)?;
                build_cast(x, DataType::Varchar, true)?
            }
            _ => return Ok(None),
        };
        Ok(Some(e))
    }

    /// The session's `search_path` as a list of schemas.
    fn search_path(&self) -> Vec<String> {
        let session = self.catalog.session();
        let path = session
            .settings
            .iter()
            .find(|(k, _)| k == "search_path")
            .map_or("public", |(_, v)| v.as_str())
            .to_string();
        path.split(',')
            .map(|s| s.trim().trim_matches('"').to_string())
            .filter(|s| !s.is_empty() && s != "$user")
            .collect()
    }
}
