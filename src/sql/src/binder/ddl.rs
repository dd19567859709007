//! CREATE TABLE, CREATE MATERIALIZED VIEW, DROP.

use ebbflow_common::ErrorKind;
use std::collections::BTreeMap;

use sqlparser::ast::{
    self, ColumnOption, CreateTableOptions, ObjectType, SqlOption, TableConstraint, Value,
};

use super::from::relation_name;
use super::scope::Scope;
use super::types::data_type_from_ast;
use super::{Binder, ExprCtx};
use crate::parser::{ident_value, object_name_to_string, WatermarkSpec};
use crate::{BoundStatement, SqlError, SqlResult};
use ebbflow_common::DataType;
use ebbflow_meta::catalog::{ColumnDesc, RelationKind};
use ebbflow_plan::{OnConflict, WatermarkDesc};

/// The unqualified name of a relation being created (only the default
/// schema exists).
pub(super) fn create_name(name: &ast::ObjectName) -> SqlResult<String> {
    let (schema, rel) = relation_name(name)?;
    match schema.as_deref() {
        None | Some("public") => Ok(rel),
        Some(s) => Err(SqlError::new(
            ErrorKind::InvalidSchemaName,
            format!("schema \"{s}\" does not exist"),
        )),
    }
}

/// `WITH (k = v, ...)` as lower-case keys and string values.
pub(super) fn with_options(opts: &CreateTableOptions) -> SqlResult<BTreeMap<String, String>> {
    let list: &[SqlOption] = match opts {
        CreateTableOptions::None => return Ok(BTreeMap::new()),
        CreateTableOptions::With(v) => v,
        _ => return Err(SqlError::unsupported(format!("table options {opts}"))),
    };
    let mut out = BTreeMap::new();
    for o in list {
        let SqlOption::KeyValue { key, value } = o else {
            return Err(SqlError::unsupported(format!("option {o}")));
        };
        let k = object_name_to_string(key).to_lowercase();
        let v = match value {
            ast::Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) | Value::Number(s, _) => s.clone(),
                Value::Boolean(b) => b.to_string(),
                other => other.to_string(),
            },
            ast::Expr::Identifier(i) => i.value.clone(),
            ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Minus,
                expr,
            } => format!("-{expr}"),
            other => other.to_string(),
        };
        if out.insert(k.clone(), v).is_some() {
            return Err(SqlError::syntax(format!(
                "option \"{k}\" specified more than once"
            )));
        }
    }
    Ok(out)
}

impl Binder<'_> {
    pub(super) fn bind_create_table(&mut self, ct: &ast::CreateTable) -> SqlResult<BoundStatement> {
        if ct.query.is_some() {
            return Err(SqlError::unsupported("CREATE TABLE AS"));
        }
        if ct.or_replace {
            return Err(SqlError::unsupported("CREATE OR REPLACE TABLE"));
        }
        if ct.temporary {
            return Err(SqlError::unsupported("temporary tables"));
        }
        if ct.like.is_some() || ct.clone.is_some() {
            return Err(SqlError::unsupported("CREATE TABLE LIKE/CLONE"));
        }
        let name = create_name(&ct.name)?;
        let mut columns: Vec<ColumnDesc> = Vec::with_capacity(ct.columns.len());
        let mut pk: Option<Vec<usize>> = None;
        let multiple_pk = || {
            SqlError::new(
                ErrorKind::InvalidTableDefinition,
                format!("multiple primary keys for table \"{name}\" are not allowed"),
            )
        };
        for (i, c) in ct.columns.iter().enumerate() {
            let cname = ident_value(&c.name.value, c.name.quote_style);
            if columns.iter().any(|x| x.name == cname) {
                return Err(SqlError::new(
                    ErrorKind::DuplicateColumn,
                    format!("column \"{cname}\" specified more than once"),
                ));
            }
            let ty = data_type_from_ast(&c.data_type)?;
            for opt in &c.options {
                match &opt.option {
                    ColumnOption::Null | ColumnOption::NotNull => {}
                    ColumnOption::PrimaryKey(_) => {
                        if pk.is_some() {
                            return Err(multiple_pk());
                        }
                        pk = Some(vec![i]);
                    }
                    ColumnOption::Default(_) => {
                        return Err(SqlError::unsupported("column DEFAULT"))
                    }
                    other => return Err(SqlError::unsupported(format!("column option {other}"))),
                }
            }
            columns.push(ColumnDesc::new(cname, ty));
        }
        for constraint in &ct.constraints {
            match constraint {
                TableConstraint::PrimaryKey(p) => {
                    if pk.is_some() {
                        return Err(multiple_pk());
                    }
                    let mut key = Vec::with_capacity(p.columns.len());
                    for ic in &p.columns {
                        let ast::Expr::Identifier(id) = &ic.column.expr else {
                            return Err(SqlError::unsupported("expressions in PRIMARY KEY"));
                        };
                        let cname = ident_value(&id.value, id.quote_style);
                        let idx =
                            columns
                                .iter()
                                .position(|c| c.name == cname)
                                .ok_or_else(|| {
                                    SqlError::new(
                                        ErrorKind::UndefinedColumn,
                                        format!("column \"{cname}\" named in key does not exist"),
                                    )
                                })?;
                        if !key.contains(&idx) {
                            key.push(idx);
                        }
                    }
                    pk = Some(key);
                }
                other => return Err(SqlError::unsupported(format!("constraint {other}"))),
            }
        }
        if columns.is_empty() {
            return Err(SqlError::unsupported("tables without columns"));
        }
        Ok(BoundStatement::CreateTable {
            name,
            columns,
            pk: pk.unwrap_or_default(),
            with_options: with_options(&ct.table_options)?,
            if_not_exists: ct.if_not_exists,
            append_only: false,
            watermark: None,
            on_conflict: OnConflict::default(),
        })
    }

    /// `WATERMARK FOR col AS expr` over `columns`: `expr` has the column's
    /// type.
    fn bind_watermark(
        &mut self,
        columns: &[ColumnDesc],
        spec: &WatermarkSpec,
    ) -> SqlResult<WatermarkDesc> {
        let name = ident_value(&spec.column.value, spec.column.quote_style);
        let column = columns.iter().position(|c| c.name == name).ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedColumn,
                format!("column \"{name}\" named in WATERMARK does not exist"),
            )
        })?;
        let ty = columns[column].data_type;
        if !matches!(
            ty,
            DataType::Timestamp
                | DataType::Timestamptz
                | DataType::Date
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
        ) {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!(
                    "a watermark column must be a timestamp, timestamptz, date or integer, not {}",
                    ty.pg_name()
                ),
            ));
        }
        let scope = Scope::of_relation(
            None,
            columns.iter().map(|c| (c.name.clone(), c.data_type, false)),
        );
        let saved = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed in WATERMARK",
            },
        );
        let bound = self.bind_expr(&scope, &spec.expr);
        self.ctx = saved;
        let bound = bound?;
        let expr = self.resolve(bound, ty)?;
        if expr.monotone_input() != Some(column) {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                format!(
                    "the watermark expression must be \"{name}\" or \"{name}\" minus a constant"
                ),
            ));
        }
        if expr.return_type() != ty {
            return Err(SqlError::new(
                ErrorKind::DatatypeMismatch,
                format!(
                    "the watermark expression must be of the column's type {}, not {}",
                    ty.pg_name(),
                    expr.return_type().pg_name()
                ),
            ));
        }
        Ok(WatermarkDesc {
            column,
            expr,
            text: spec.expr.to_string(),
        })
    }

    /// `CREATE TABLE … ON CONFLICT …`: a table with a primary key whose
    /// inserts on an existing key are resolved by `behaviour`.
    pub(super) fn bind_create_table_on_conflict(
        &mut self,
        ct: &ast::CreateTable,
        behaviour: OnConflict,
    ) -> SqlResult<BoundStatement> {
        let mut bound = self.bind_create_table(ct)?;
        if let BoundStatement::CreateTable {
            pk, on_conflict, ..
        } = &mut bound
        {
            if pk.is_empty() {
                return Err(SqlError::new(
                    ErrorKind::FeatureNotSupported,
                    "ON CONFLICT is only supported on a table with a primary key",
                ));
            }
            *on_conflict = behaviour;
        }
        Ok(bound)
    }

    /// `CREATE TABLE … APPEND ONLY`: a table without a primary key whose
    /// rows are only inserted.
    pub(super) fn bind_create_append_only_table(
        &mut self,
        ct: &ast::CreateTable,
        wm: Option<&WatermarkSpec>,
    ) -> SqlResult<BoundStatement> {
        let mut bound = self.bind_create_table(ct)?;
        if let BoundStatement::CreateTable {
            pk,
            append_only,
            columns,
            watermark,
            ..
        } = &mut bound
        {
            if let Some(wm) = wm {
                *watermark = Some(self.bind_watermark(columns, wm)?);
            }
            if !pk.is_empty() {
                return Err(SqlError::new(
                    ErrorKind::FeatureNotSupported,
                    "an APPEND ONLY table cannot have a primary key",
                ));
            }
            *append_only = true;
        }
        Ok(bound)
    }

    /// `CREATE SOURCE name (columns) WITH (connector = …)`.
    pub(super) fn bind_create_source(
        &mut self,
        ct: &ast::CreateTable,
        wm: Option<&WatermarkSpec>,
    ) -> SqlResult<BoundStatement> {
        let BoundStatement::CreateTable {
            name,
            columns,
            pk,
            with_options,
            if_not_exists,
            ..
        } = self.bind_create_table(ct)?
        else {
            return Err(SqlError::new(
                ErrorKind::InternalError,
                "CREATE SOURCE did not bind as a table",
            ));
        };
        if !pk.is_empty() {
            return Err(SqlError::new(
                ErrorKind::FeatureNotSupported,
                "a source has no primary key (rows are identified by a hidden _row_id)",
            ));
        }
        if !with_options.contains_key("connector") {
            return Err(SqlError::new(
                ErrorKind::SyntaxError,
                "CREATE SOURCE needs WITH (connector = 'datagen' | 'nexmark', …)",
            ));
        }
        let watermark = match wm {
            Some(wm) => Some(self.bind_watermark(&columns, wm)?),
            None => None,
        };
        Ok(BoundStatement::CreateSource {
            name,
            columns,
            with_options,
            if_not_exists,
            watermark,
        })
    }

    pub(super) fn bind_create_view(&mut self, cv: &ast::CreateView) -> SqlResult<BoundStatement> {
        if !cv.materialized {
            return self.bind_plain_view(cv);
        }
        if cv.or_replace || cv.or_alter {
            return Err(SqlError::unsupported("CREATE OR REPLACE MATERIALIZED VIEW"));
        }
        if cv.temporary {
            return Err(SqlError::unsupported("temporary materialized views"));
        }
        let name = create_name(&cv.name)?;
        self.streaming = true;
        let views_before = self.views_used.len();
        let bq = self.bind_query(&cv.query);
        self.streaming = false;
        let bq = bq?;
        let views = self.views_used.drain(views_before..).collect();
        let column_names = view_column_names(cv, bq.names, "CREATE MATERIALIZED VIEW")?;
        Ok(BoundStatement::CreateMaterializedView {
            name,
            plan: bq.plan,
            column_names,
            definition: cv.query.to_string(),
            with_options: with_options(&cv.options)?,
            if_not_exists: cv.if_not_exists,
            views,
            emit_on_window_close: false,
        })
    }

    pub(super) fn bind_drop(
        &mut self,
        object_type: ObjectType,
        if_exists: bool,
        names: &[ast::ObjectName],
        cascade: bool,
    ) -> SqlResult<BoundStatement> {
        let kind = match object_type {
            ObjectType::Table => RelationKind::Table,
            ObjectType::MaterializedView => RelationKind::MaterializedView,
            ObjectType::View => RelationKind::View,
            other => return Err(SqlError::unsupported(format!("DROP {other}"))),
        };
        let [name] = names else {
            return Err(SqlError::unsupported(
                "dropping several relations in one statement",
            ));
        };
        let (schema, rel) = relation_name(name)?;
        match self.catalog.relation(schema.as_deref(), &rel) {
            None if if_exists => {}
            None => {
                return Err(SqlError::new(
                    ErrorKind::UndefinedTable,
                    format!("{} \"{rel}\" does not exist", kind.name()),
                ))
            }
            Some(r) if r.kind == kind => {}
            Some(r) => return Err(wrong_kind(&rel, kind, r.kind, "DROP")),
        }
        Ok(BoundStatement::Drop {
            kind,
            name: rel,
            if_exists,
            cascade,
        })
    }
}

/// The column names of a (materialized) view: the query's, renamed by the
/// list after the view's name, all distinct.
pub(super) fn view_column_names(
    cv: &ast::CreateView,
    mut column_names: Vec<String>,
    what: &str,
) -> SqlResult<Vec<String>> {
    if cv.columns.len() > column_names.len() {
        return Err(SqlError::syntax(format!(
            "{what} specifies more column names than columns"
        )));
    }
    for (c, n) in cv.columns.iter().zip(column_names.iter_mut()) {
        if c.data_type.is_some() {
            return Err(SqlError::unsupported(format!("column types in {what}")));
        }
        *n = ident_value(&c.name.value, c.name.quote_style);
    }
    for (i, n) in column_names.iter().enumerate() {
        if column_names[..i].contains(n) {
            return Err(SqlError::new(
                ErrorKind::DuplicateColumn,
                format!("column \"{n}\" specified more than once"),
            ));
        }
    }
    Ok(column_names)
}

/// `"x" is not a table` (wrong_object_type), with PostgreSQL's hint on what to use.
pub(super) fn wrong_kind(
    name: &str,
    wanted: RelationKind,
    found: RelationKind,
    verb: &str,
) -> SqlError {
    let mut e = SqlError::new(
        ErrorKind::WrongObjectType,
        format!("\"{name}\" is not a {}", wanted.name()),
    );
    e.set_hint(match found {
        RelationKind::Table => Some(format!("Use {verb} TABLE to remove a table.")),
        RelationKind::MaterializedView => Some(format!(
            "Use {verb} MATERIALIZED VIEW to remove a materialized view."
        )),
        RelationKind::View => Some(format!("Use {verb} VIEW to remove a view.")),
        RelationKind::Source => Some(format!("Use {verb} SOURCE to remove a source.")),
        RelationKind::System => None,
    });
    if verb != "DROP" {
        e.set_hint(None);
    }
    e
}
