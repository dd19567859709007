//! Session and cluster statements: SET/SHOW, DESCRIBE, SHOW TABLES, and
//! ebbflow's own statements.

use ebbflow_common::ErrorKind;
use sqlparser::ast::{self, Set, Value};

use super::ddl::wrong_kind;
use super::Binder;
use crate::bound::ParallelismTarget;
use crate::parser::ident_value;
use crate::{BoundStatement, SqlError, SqlResult, Statement};
use ebbflow_common::{DataType, Field, ScalarValue};
use ebbflow_expr::Expr;
use ebbflow_meta::catalog::{RelationDesc, RelationKind};
use ebbflow_planner::logical::LogicalPlan;

pub(super) fn bind_show_variable(variable: &[ast::Ident]) -> BoundStatement {
    let name = variable
        .iter()
        .map(|i| ident_value(&i.value, i.quote_style))
        .collect::<Vec<_>>()
        .join(" ");
    match name.as_str() {
        "all" => BoundStatement::ShowAll,
        "time zone" => BoundStatement::ShowVariable {
            name: "timezone".into(),
        },
        "transaction isolation level" => BoundStatement::ShowVariable {
            name: "transaction_isolation".into(),
        },
        _ => BoundStatement::ShowVariable { name },
    }
}

/// The text of a SET value as PostgreSQL would store it.
fn set_value_text(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(i) => ident_value(&i.value, i.quote_style),
        ast::Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::Number(s, _) => s.clone(),
            Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
            other => other.to_string(),
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => format!("-{}", set_value_text(expr)),
        other => other.to_string(),
    }
}

/// `ALTER USER name [WITH] PASSWORD {'…' | NULL}` (sqlparser reads ALTER
/// USER as ALTER ROLE); other role options are accepted and ignored.
pub(super) fn bind_alter_user(
    name: &ast::Ident,
    operation: &ast::AlterRoleOperation,
) -> SqlResult<BoundStatement> {
    let ast::AlterRoleOperation::WithOptions { options } = operation else {
        return Err(SqlError::unsupported(format!("ALTER ROLE {operation}")));
    };
    let mut password = None;
    for o in options {
        if let ast::RoleOption::Password(p) = o {
            password = Some(match p {
                ast::Password::NullPassword => None,
                ast::Password::Password(ast::Expr::Value(v)) => match &v.value {
                    Value::SingleQuotedString(s) => Some(s.clone()),
                    other => return Err(SqlError::syntax(format!("invalid password {other}"))),
                },
                ast::Password::Password(other) => {
                    return Err(SqlError::syntax(format!("invalid password {other}")))
                }
            });
        }
    }
    let Some(password) = password else {
        // Only passwords are kept: other options change nothing.
        return Ok(BoundStatement::TransactionControl { tag: "ALTER ROLE" });
    };
    Ok(BoundStatement::AlterUserPassword {
        name: ident_value(&name.value, name.quote_style),
        password,
    })
}

pub(super) fn bind_set(set: &Set) -> SqlResult<BoundStatement> {
    match set {
        Set::SingleAssignment {
            variable, values, ..
        } => {
            let name = crate::parser::object_name_to_string(variable);
            let is_default = matches!(values.as_slice(),
                [ast::Expr::Identifier(i)] if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("default"));
            let value = if is_default {
                None
            } else {
                Some(
                    values
                        .iter()
                        .map(set_value_text)
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            };
            Ok(BoundStatement::SetVariable { name, value })
        }
        Set::SetTimeZone { value, .. } => Ok(BoundStatement::SetVariable {
            name: "timezone".into(),
            value: Some(set_value_text(value)),
        }),
        Set::SetNames { charset_name, .. } => Ok(BoundStatement::SetVariable {
            name: "client_encoding".into(),
            value: Some(charset_name.value.clone()),
        }),
        Set::SetTransaction { .. } => Ok(BoundStatement::TransactionControl { tag: "SET" }),
        other => Err(SqlError::unsupported(format!("{other}"))),
    }
}

/// A short name of a statement kind for "... is not supported".
pub(super) fn statement_kind(stmt: &ast::Statement) -> String {
    let text = stmt.to_string();
    let words: Vec<&str> = text.split_whitespace().take(3).collect();
    let mut kind = words.join(" ");
    if kind.len() > 40 {
        kind.truncate(40);
    }
    format!("statement \"{kind}\"")
}

impl Binder<'_> {
    /// `DESCRIBE t`: one row per visible column: `Name`, `Type`.
    pub(super) fn bind_describe(&mut self, name: &ast::ObjectName) -> SqlResult<BoundStatement> {
        let rel = self.lookup_relation(name)?;
        let text = |s: &str| Expr::literal(Some(ScalarValue::varchar(s)), DataType::Varchar);
        let rows = rel
            .visible_columns()
            .map(|(_, c)| vec![text(&c.name), text(c.data_type.pg_name())])
            .collect();
        let fields = vec![
            Field::new("Name", DataType::Varchar),
            Field::new("Type", DataType::Varchar),
        ];
        Ok(BoundStatement::Query {
            plan: LogicalPlan::Values { rows, fields },
            names: vec!["Name".into(), "Type".into()],
        })
    }

    /// `SHOW TABLES` / `SHOW MATERIALIZED VIEWS`: names from a system
    /// relation, sorted.
    pub(super) fn bind_show_relations(&mut self, system: &str) -> SqlResult<BoundStatement> {
        let sql = format!("SELECT name AS \"Name\" FROM rw_catalog.{system} ORDER BY name");
        let stmts = crate::parse(&sql)?;
        match stmts.as_slice() {
            [Statement::Sql(s)] => self.bind_sql_statement(s),
            _ => Err(SqlError::new(ErrorKind::InternalError, "bad SHOW query")),
        }
    }

    /// A relation named in an ebbflow statement.
    fn named_relation(&self, name: &str) -> SqlResult<std::sync::Arc<RelationDesc>> {
        let (schema, rel) = match name.split_once('.') {
            Some((s, r)) => (Some(s), r),
            None => (None, name),
        };
        self.catalog.relation(schema, rel).ok_or_else(|| {
            SqlError::new(
                ErrorKind::UndefinedTable,
                format!("relation \"{name}\" does not exist"),
            )
        })
    }

    pub(super) fn bind_ebbflow_statement(&mut self, stmt: &Statement) -> SqlResult<BoundStatement> {
        Ok(match stmt {
            Statement::Sql(s) => return self.bind_sql_statement(s),
            Statement::Flush => BoundStatement::Flush,
            Statement::AlterRelationParallelism {
                materialized_view,
                name,
                parallelism,
            } => {
                let rel = self.named_relation(name)?;
                let wanted = if *materialized_view {
                    RelationKind::MaterializedView
                } else {
                    RelationKind::Table
                };
                if rel.kind != wanted {
                    return Err(wrong_kind(&rel.name, wanted, rel.kind, "ALTER"));
                }
                BoundStatement::AlterParallelism {
                    target: ParallelismTarget::Relation(rel),
                    parallelism: *parallelism,
                }
            }
            Statement::AlterFragmentParallelism {
                fragment_id,
                parallelism,
            } => BoundStatement::AlterParallelism {
                target: ParallelismTarget::Fragment(*fragment_id),
                parallelism: *parallelism,
            },
            Statement::Reschedule { plan, dry_run } => BoundStatement::Reschedule {
                plan: plan.clone(),
                dry_run: *dry_run,
            },
            Statement::DrainWorker { worker_id, dry_run } => BoundStatement::DrainWorker {
                worker_id: *worker_id,
                dry_run: *dry_run,
            },
            Statement::AddWorker { parallel_units } => BoundStatement::AddWorker {
                parallel_units: *parallel_units,
            },
            Statement::RemoveWorker { worker_id } => BoundStatement::RemoveWorker {
                worker_id: *worker_id,
            },
            Statement::RestartWorker { worker_id } => BoundStatement::RestartWorker {
                worker_id: *worker_id,
            },
            Statement::AlterSystemSet { name, value } => BoundStatement::AlterSystemSet {
                name: name.clone(),
                value: value.clone(),
            },
            Statement::ShowCluster => BoundStatement::ShowCluster,
            Statement::CreateSource(ct, wm) => return self.bind_create_source(ct, wm.as_ref()),
            Statement::CreateAppendOnlyTable(ct, wm) => {
                return self.bind_create_append_only_table(ct, wm.as_ref())
            }
            Statement::EmitOnWindowClose(stmt) => {
                let ast::Statement::CreateView(cv) = stmt.as_ref() else {
                    return Err(SqlError::syntax(
                        "EMIT ON WINDOW CLOSE ends a CREATE MATERIALIZED VIEW",
                    ));
                };
                let mut bound = self.bind_create_view(cv)?;
                match &mut bound {
                    BoundStatement::CreateMaterializedView {
                        emit_on_window_close,
                        definition,
                        ..
                    } => {
                        *emit_on_window_close = true;
                        definition.push_str(" EMIT ON WINDOW CLOSE");
                    }
                    _ => {
                        return Err(SqlError::syntax(
                            "EMIT ON WINDOW CLOSE ends a CREATE MATERIALIZED VIEW",
                        ))
                    }
                }
                return Ok(bound);
            }
            Statement::CreateTableOnConflict(ct, on_conflict) => {
                return self.bind_create_table_on_conflict(ct, *on_conflict)
            }
            Statement::DropSource {
                name,
                if_exists,
                cascade,
            } => {
                match self.catalog.relation(None, name) {
                    None if *if_exists => {}
                    None => {
                        return Err(SqlError::new(
                            ErrorKind::UndefinedTable,
                            format!("source \"{name}\" does not exist"),
                        ))
                    }
                    Some(r) if r.kind == RelationKind::Source => {}
                    Some(r) => return Err(wrong_kind(name, RelationKind::Source, r.kind, "DROP")),
                }
                BoundStatement::Drop {
                    kind: RelationKind::Source,
                    name: name.clone(),
                    if_exists: *if_exists,
                    cascade: *cascade,
                }
            }
            Statement::AlterSourceParallelism { name, parallelism } => {
                let rel = self.named_relation(name)?;
                if rel.kind != RelationKind::Source {
                    return Err(wrong_kind(
                        &rel.name,
                        RelationKind::Source,
                        rel.kind,
                        "ALTER",
                    ));
                }
                BoundStatement::AlterParallelism {
                    target: ParallelismTarget::Relation(rel),
                    parallelism: *parallelism,
                }
            }
            Statement::CreateUser {
                name,
                password,
                if_not_exists,
            } => BoundStatement::CreateUser {
                name: name.clone(),
                password: password.clone(),
                if_not_exists: *if_not_exists,
            },
            Statement::ShowCreate { kind, name } => {
                let rel = self.named_relation(name)?;
                if rel.kind != *kind {
                    return Err(wrong_kind(&rel.name, *kind, rel.kind, "SHOW CREATE"));
                }
                BoundStatement::ShowCreate {
                    name: rel.name.clone(),
                    sql: super::view::create_sql(&rel),
                }
            }
            Statement::ShowFragments { name } | Statement::ShowActors { name } => {
                if let Some(n) = name {
                    let rel = self.named_relation(n)?;
                    if rel.kind == RelationKind::System {
                        return Err(SqlError::new(
                            ErrorKind::WrongObjectType,
                            format!("\"{n}\" is a system catalog and has no fragments"),
                        ));
                    }
                }
                if matches!(stmt, Statement::ShowFragments { .. }) {
                    BoundStatement::ShowFragments { name: name.clone() }
                } else {
                    BoundStatement::ShowActors { name: name.clone() }
                }
            }
        })
    }
}
