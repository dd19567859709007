//! INSERT, UPDATE, DELETE.

use ebbflow_common::ErrorKind;
use std::sync::Arc;

use sqlparser::ast::{self, AssignmentTarget, FromTable, SetExpr, TableFactor, TableObject};

use super::expr::BExpr;
use super::scope::Scope;
use super::{Binder, ExprCtx};
use crate::parser::ident_value;
use crate::{BoundStatement, SqlError, SqlResult};
use ebbflow_common::{DataType, Field};
use ebbflow_expr::{build_cast, Expr};
use ebbflow_meta::catalog::{RelationDesc, RelationKind};
use ebbflow_planner::logical::LogicalPlan;

/// Cast a value for storing into column `col` (PostgreSQL's assignment
/// rules).
fn assignment_cast(e: Expr, col: &str, ty: DataType) -> SqlResult<Expr> {
    let from = e.return_type();
    if from == ty {
        return Ok(e);
    }
    build_cast(e, ty, false).map_err(|e| {
        if e.kind() != ErrorKind::CannotCoerce {
            // a data error folding a literal (e.g. a numeric value out of range)
            return SqlError::from(e);
        }
        let mut err = SqlError::new(
            ErrorKind::DatatypeMismatch,
            format!("column \"{col}\" is of type {ty} but expression is of type {from}"),
        );
        err.set_hint(Some(
            "You will need to rewrite or cast the expression.".into(),
        ));
        err
    })
}

/// `DEFAULT` written as a value (we have no column defaults: NULL).
fn is_default(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"))
}

impl Binder<'_> {
    /// The target of INSERT/UPDATE/DELETE: must be a table.
    fn dml_target(&self, name: &ast::ObjectName) -> SqlResult<Arc<RelationDesc>> {
        let rel = self.lookup_relation(name)?;
        match rel.kind {
            RelationKind::Table => Ok(rel),
            RelationKind::MaterializedView => Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!("cannot change materialized view \"{}\"", rel.name),
            )),
            RelationKind::View => Err(SqlError::new(
                ErrorKind::ObjectNotInPrerequisiteState,
                format!("cannot change view \"{}\"", rel.name),
            )),
            RelationKind::System => Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!("cannot change system catalog \"{}\"", rel.name),
            )),
            RelationKind::Source => Err(SqlError::new(
                ErrorKind::WrongObjectType,
                format!("cannot change source \"{}\"", rel.name),
            )),
        }
    }

    /// UPDATE and DELETE of an APPEND ONLY table.
    fn refuse_append_only(table: &RelationDesc, verb: &str) -> SqlResult<()> {
        if table.append_only {
            let mut e = SqlError::new(
                ErrorKind::FeatureNotSupported,
                format!("cannot {verb} append-only table \"{}\"", table.name),
            );
            e.set_hint(Some(
                "An APPEND ONLY table only takes INSERT and COPY.".into(),
            ));
            return Err(e);
        }
        Ok(())
    }

    /// The scope of a DML target (hidden columns present, not nameable).
    fn table_scope(rel: &RelationDesc, alias: Option<&ast::TableAlias>) -> Scope {
        let name = match alias {
            Some(a) => ident_value(&a.name.value, a.name.quote_style),
            None => rel.name.clone(),
        };
        Scope::of_relation(
            Some(&name),
            rel.columns
                .iter()
                .map(|c| (c.name.clone(), c.data_type, c.hidden)),
        )
    }

    pub(super) fn bind_insert(&mut self, ins: &ast::Insert) -> SqlResult<BoundStatement> {
        if ins.returning.is_some() {
            return Err(SqlError::unsupported("INSERT ... RETURNING"));
        }
        if ins.on.is_some() {
            return Err(SqlError::unsupported("INSERT ... ON CONFLICT"));
        }
        if !ins.assignments.is_empty() {
            return Err(SqlError::unsupported("INSERT ... SET"));
        }
        let TableObject::TableName(name) = &ins.table else {
            return Err(SqlError::unsupported("INSERT INTO a table function"));
        };
        let table = self.dml_target(name)?;
        let visible: Vec<usize> = table.visible_columns().map(|(i, _)| i).collect();

        // Target columns, as indices into `visible`.
        let explicit = !ins.columns.is_empty();
        let targets: Vec<usize> = if explicit {
            let mut t = Vec::with_capacity(ins.columns.len());
            for c in &ins.columns {
                let cname = crate::parser::object_name_to_string(c);
                let pos = visible
                    .iter()
                    .position(|&i| table.columns[i].name == cname)
                    .ok_or_else(|| {
                        SqlError::new(
                            ErrorKind::UndefinedColumn,
                            format!(
                                "column \"{cname}\" of relation \"{}\" does not exist",
                                table.name
                            ),
                        )
                    })?;
                if t.contains(&pos) {
                    return Err(SqlError::new(
                        ErrorKind::DuplicateColumn,
                        format!("column \"{cname}\" specified more than once"),
                    ));
                }
                t.push(pos);
            }
            t
        } else {
            (0..visible.len()).collect()
        };
        let check_width = |n: usize| -> SqlResult<()> {
            if n > targets.len() {
                Err(SqlError::syntax(
                    "INSERT has more expressions than target columns",
                ))
            } else if explicit && n < targets.len() {
                Err(SqlError::syntax(
                    "INSERT has more target columns than expressions",
                ))
            } else {
                Ok(())
            }
        };
        let fields: Vec<Field> = visible
            .iter()
            .map(|&i| Field::new(table.columns[i].name.clone(), table.columns[i].data_type))
            .collect();
        let Some(source) = &ins.source else {
            return Err(SqlError::unsupported("INSERT ... DEFAULT VALUES"));
        };

        // Plain VALUES: each cell is typed by its target column directly.
        let plain_values = match source.body.as_ref() {
            SetExpr::Values(v)
                if source.with.is_none()
                    && source.order_by.is_none()
                    && source.limit_clause.is_none() =>
            {
                Some(v)
            }
            _ => None,
        };
        let plan = if let Some(values) = plain_values {
            let saved = std::mem::replace(
                &mut self.ctx,
                ExprCtx::Plain {
                    agg_error: "aggregate functions are not allowed in VALUES",
                },
            );
            let r =
                self.bind_insert_values(values, &targets, &table, &visible, &check_width, &fields);
            self.ctx = saved;
            r?
        } else {
            let bq = self.bind_query(source)?;
            check_width(bq.names.len())?;
            let in_types = bq.plan.types();
            let mut exprs = Vec::with_capacity(visible.len());
            for (pos, f) in fields.iter().enumerate() {
                let e = match targets.iter().position(|&t| t == pos) {
                    Some(k) => {
                        let input = Expr::input_ref(k, in_types[k]);
                        if bq.unknown[k] && in_types[k] != f.data_type {
                            build_cast(input, f.data_type, true)?
                        } else {
                            assignment_cast(input, &f.name, f.data_type)?
                        }
                    }
                    None => Expr::literal(None, f.data_type),
                };
                exprs.push(e);
            }
            LogicalPlan::Project {
                input: Box::new(bq.plan),
                exprs,
                fields,
            }
        };
        Ok(BoundStatement::Insert {
            table,
            source: plan,
        })
    }

    fn bind_insert_values(
        &mut self,
        values: &ast::Values,
        targets: &[usize],
        table: &RelationDesc,
        visible: &[usize],
        check_width: &dyn Fn(usize) -> SqlResult<()>,
        fields: &[Field],
    ) -> SqlResult<LogicalPlan> {
        let scope = Scope::default();
        let mut rows = Vec::with_capacity(values.rows.len());
        for row in &values.rows {
            check_width(row.content.len())?;
            let mut out: Vec<Expr> = fields
                .iter()
                .map(|f| Expr::literal(None, f.data_type))
                .collect();
            for (cell, &pos) in row.content.iter().zip(targets) {
                let c = &table.columns[visible[pos]];
                if is_default(cell) {
                    continue;
                }
                let b: BExpr = self.bind_expr(&scope, cell)?;
                let e = self.resolve(b, c.data_type)?;
                out[pos] = assignment_cast(e, &c.name, c.data_type)?;
            }
            rows.push(out);
        }
        Ok(LogicalPlan::Values {
            rows,
            fields: fields.to_vec(),
        })
    }

    pub(super) fn bind_update(&mut self, up: &ast::Update) -> SqlResult<BoundStatement> {
        if up.returning.is_some() {
            return Err(SqlError::unsupported("UPDATE ... RETURNING"));
        }
        if up.from.is_some() {
            return Err(SqlError::unsupported("UPDATE ... FROM"));
        }
        if !up.order_by.is_empty() || up.limit.is_some() {
            return Err(SqlError::unsupported("UPDATE ... ORDER BY/LIMIT"));
        }
        let TableFactor::Table { name, alias, .. } = &up.table.relation else {
            return Err(SqlError::unsupported("UPDATE of a non-table"));
        };
        if !up.table.joins.is_empty() {
            return Err(SqlError::unsupported("UPDATE with joins"));
        }
        let table = self.dml_target(name)?;
        Self::refuse_append_only(&table, "UPDATE")?;
        let scope = Self::table_scope(&table, alias.as_ref());
        let saved = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed in UPDATE",
            },
        );
        let r = self.bind_update_inner(up, &table, &scope);
        self.ctx = saved;
        let (filter, assignments) = r?;
        Ok(BoundStatement::Update {
            table,
            filter,
            assignments,
        })
    }

    #[allow(clippy::type_complexity)]
    fn bind_update_inner(
        &mut self,
        up: &ast::Update,
        table: &RelationDesc,
        scope: &Scope,
    ) -> SqlResult<(Option<Expr>, Vec<(usize, Expr)>)> {
        let mut assignments: Vec<(usize, Expr)> = Vec::with_capacity(up.assignments.len());
        for a in &up.assignments {
            let AssignmentTarget::ColumnName(cname) = &a.target else {
                return Err(SqlError::unsupported("UPDATE SET (a, b) = ..."));
            };
            let (_, cname) = super::from::relation_name(cname)?;
            let idx = table
                .columns
                .iter()
                .position(|c| !c.hidden && c.name == cname)
                .ok_or_else(|| {
                    SqlError::new(
                        ErrorKind::UndefinedColumn,
                        format!(
                            "column \"{cname}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    )
                })?;
            if assignments.iter().any(|(i, _)| *i == idx) {
                return Err(SqlError::syntax(format!(
                    "multiple assignments to same column \"{cname}\""
                )));
            }
            let c = &table.columns[idx];
            let e = if is_default(&a.value) {
                Expr::literal(None, c.data_type)
            } else {
                let b = self.bind_expr(scope, &a.value)?;
                let e = self.resolve(b, c.data_type)?;
                assignment_cast(e, &c.name, c.data_type)?
            };
            assignments.push((idx, e));
        }
        let filter = match &up.selection {
            Some(w) => Some(self.bind_bool(scope, w, "WHERE")?),
            None => None,
        };
        Ok((filter, assignments))
    }

    pub(super) fn bind_delete(&mut self, del: &ast::Delete) -> SqlResult<BoundStatement> {
        if del.returning.is_some() {
            return Err(SqlError::unsupported("DELETE ... RETURNING"));
        }
        if del.using.is_some() || !del.tables.is_empty() {
            return Err(SqlError::unsupported("DELETE ... USING"));
        }
        if !del.order_by.is_empty() || del.limit.is_some() {
            return Err(SqlError::unsupported("DELETE ... ORDER BY/LIMIT"));
        }
        let from = match &del.from {
            FromTable::WithFromKeyword(v) | FromTable::WithoutKeyword(v) => v,
        };
        let [twj] = from.as_slice() else {
            return Err(SqlError::unsupported("DELETE from several tables"));
        };
        let TableFactor::Table { name, alias, .. } = &twj.relation else {
            return Err(SqlError::unsupported("DELETE from a non-table"));
        };
        if !twj.joins.is_empty() {
            return Err(SqlError::unsupported("DELETE with joins"));
        }
        let table = self.dml_target(name)?;
        Self::refuse_append_only(&table, "DELETE")?;
        let scope = Self::table_scope(&table, alias.as_ref());
        let saved = std::mem::replace(
            &mut self.ctx,
            ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed in WHERE",
            },
        );
        let filter = match &del.selection {
            Some(w) => self.bind_bool(&scope, w, "WHERE").map(Some),
            None => Ok(None),
        };
        self.ctx = saved;
        Ok(BoundStatement::Delete {
            table,
            filter: filter?,
        })
    }
}
