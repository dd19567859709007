//! Binding: names and types resolved against the catalog, turning a parsed
//! [`Statement`] into a [`BoundStatement`] (queries become a
//! [`LogicalPlan`](ebbflow_planner::logical::LogicalPlan)).
//!
//! Shape of a bound `SELECT` (each bracket only when needed):
//!
//! ```text
//! Scan/Join → Filter(WHERE) → [Project(group keys, agg args) → Aggregate
//!   → Filter(HAVING)] → Project(select list + ORDER BY helpers)
//!   → [Aggregate for DISTINCT] → [TopN] → [Project dropping helpers]
//! ```
//!
//! String literals, `NULL` and undeclared `$n` parameters are PostgreSQL
//! "unknown"-typed values: they take their type from the context they are
//! used in (`WHERE d = '2024-01-01'` parses the literal as a date), and are
//! `varchar` when nothing says otherwise. The context-inferred types of
//! parameters are what [`describe`] reports to the extended protocol.

mod array_expr;
mod composite;
mod copy;
mod ddl;
mod dml;
mod expr;
mod from;
mod func;
mod misc;
mod over;
mod pg_funcs;
mod query;
mod scope;
mod select;
mod semi;
mod series;
mod subquery;
#[cfg(test)]
mod tests;
mod time_window;
mod types;
mod unnest;
mod view;

use std::collections::HashMap;

use ebbflow_common::DataType;
use ebbflow_meta::catalog::CatalogReader;
use ebbflow_planner::logical::LogicalPlan;

use super::{BoundStatement, ParamContext, SqlError, SqlResult, Statement};

pub use copy::{CopyFormat, CopyOptions};
pub use types::data_type_from_ast;

/// Bind one statement. With `params.values` set, `$n` placeholders are
/// replaced by their values; without, they bind as typed NULLs (enough to
/// describe the statement).
pub fn bind(
    stmt: &Statement,
    catalog: &dyn CatalogReader,
    params: &ParamContext,
) -> SqlResult<BoundStatement> {
    let mut binder = Binder::new(catalog, params);
    binder.bind_statement(stmt)
}

/// Bind a statement whose parameter values are not known yet (extended
/// protocol `Describe`). Returns the bound statement (for its result
/// columns) and the type of every parameter: the declared one if given,
/// else the one inferred from context, else `varchar`.
pub fn describe(
    stmt: &Statement,
    catalog: &dyn CatalogReader,
    declared: &[Option<DataType>],
) -> SqlResult<(BoundStatement, Vec<DataType>)> {
    let params = ParamContext {
        types: declared.to_vec(),
        values: None,
    };
    let mut binder = Binder::new(catalog, &params);
    let bound = binder.bind_statement(stmt)?;
    let n = declared.len().max(binder.param_types.len());
    let types = (0..n)
        .map(|i| {
            declared
                .get(i)
                .copied()
                .flatten()
                .or_else(|| binder.param_types.get(i).copied().flatten())
                .unwrap_or(DataType::Varchar)
        })
        .collect();
    Ok((bound, types))
}

/// The parameter types of a statement (see [`describe`]).
pub fn infer_param_types(
    stmt: &Statement,
    catalog: &dyn CatalogReader,
    declared: &[Option<DataType>],
) -> SqlResult<Vec<DataType>> {
    describe(stmt, catalog, declared).map(|(_, t)| t)
}

/// A bound query before it is wrapped into a statement.
#[derive(Clone, Debug)]
pub(super) struct BoundQuery {
    pub plan: LogicalPlan,
    pub names: Vec<String>,
    /// Output columns that are still "unknown"-typed literals (bound as
    /// varchar): a UNION or INSERT may re-type them like PostgreSQL does.
    pub unknown: Vec<bool>,
}

/// Where aggregate calls may appear while binding an expression.
#[derive(Debug)]
pub(super) enum ExprCtx {
    /// Column references are input columns; an aggregate call is an error
    /// with this message (grouping_error).
    Plain { agg_error: &'static str },
    /// Binding over the output of an aggregation: group keys and aggregate
    /// calls become references to the Aggregate's output.
    Agg(select::AggState),
}

pub(super) struct Binder<'a> {
    catalog: &'a dyn CatalogReader,
    params: &'a ParamContext,
    /// Types of `$n` (index n-1) inferred from context so far.
    param_types: Vec<Option<DataType>>,
    /// Visible `WITH` queries, innermost last.
    ctes: Vec<HashMap<String, BoundQuery>>,
    ctx: ExprCtx,
    /// Binding the query of a materialized view: functions whose value
    /// depends on when they run (`now()`) are refused.
    streaming: bool,
    /// Views bound so far (a new view depends on them).
    views_used: Vec<ebbflow_meta::catalog::TableId>,
    /// How many views deep the binder is.
    view_depth: usize,
    /// Scalar subqueries of the clause being bound, when that clause may
    /// have them (see [`subquery`]).
    applies: Option<subquery::Applies>,
    /// Window calls of the select list being bound (`None` where window
    /// functions are not allowed; see [`over`]).
    windows: Option<Vec<over::BoundWindow>>,
    /// How many aggregate calls deep the binder is.
    in_aggregate: usize,
}

impl<'a> Binder<'a> {
    fn new(catalog: &'a dyn CatalogReader, params: &'a ParamContext) -> Self {
        Binder {
            catalog,
            params,
            param_types: Vec::new(),
            ctes: Vec::new(),
            streaming: false,
            views_used: Vec::new(),
            view_depth: 0,
            applies: None,
            windows: None,
            in_aggregate: 0,
            ctx: ExprCtx::Plain {
                agg_error: "aggregate functions are not allowed here",
            },
        }
    }

    fn bind_statement(&mut self, stmt: &Statement) -> SqlResult<BoundStatement> {
        match stmt {
            Statement::Sql(s) => self.bind_sql_statement(s),
            other => self.bind_ebbflow_statement(other),
        }
    }

    fn bind_sql_statement(
        &mut self,
        stmt: &sqlparser::ast::Statement,
    ) -> SqlResult<BoundStatement> {
        use sqlparser::ast::Statement as S;
        match stmt {
            S::Query(q) => {
                let bq = self.bind_query(q)?;
                composite::check_no_records(&bq.names)?;
                Ok(BoundStatement::Query {
                    plan: bq.plan,
                    names: bq.names,
                })
            }
            S::CreateTable(ct) => self.bind_create_table(ct),
            S::CreateView(cv) => self.bind_create_view(cv),
            S::Drop {
                object_type: sqlparser::ast::ObjectType::User | sqlparser::ast::ObjectType::Role,
                if_exists,
                names,
                ..
            } => match names.as_slice() {
                [name] => Ok(BoundStatement::DropUser {
                    name: crate::parser::object_name_to_string(name),
                    if_exists: *if_exists,
                }),
                _ => Err(SqlError::unsupported(
                    "dropping several users in one statement",
                )),
            },
            S::Drop {
                object_type,
                if_exists,
                names,
                cascade,
                ..
            } => self.bind_drop(*object_type, *if_exists, names, *cascade),
            S::Insert(ins) => self.bind_insert(ins),
            S::AlterRole { name, operation } => misc::bind_alter_user(name, operation),
            S::Copy {
                source,
                to,
                target,
                options,
                legacy_options,
                ..
            } => self.bind_copy(source, *to, target, options, legacy_options),
            S::Update(up) => self.bind_update(up),
            S::Delete(del) => self.bind_delete(del),
            S::Explain {
                analyze, statement, ..
            } => {
                if *analyze {
                    return Err(SqlError::unsupported("EXPLAIN ANALYZE"));
                }
                let inner = self.bind_sql_statement(statement)?;
                Ok(BoundStatement::Explain {
                    inner: Box::new(inner),
                })
            }
            S::ExplainTable { table_name, .. } => self.bind_describe(table_name),
            S::ShowTables { .. } => self.bind_show_relations("rw_tables"),
            S::ShowViews {
                materialized: true, ..
            } => self.bind_show_relations("rw_materialized_views"),
            S::ShowVariable { variable } => Ok(misc::bind_show_variable(variable)),
            S::Set(set) => misc::bind_set(set),
            S::StartTransaction { begin, .. } => Ok(BoundStatement::TransactionControl {
                tag: if *begin { "BEGIN" } else { "START TRANSACTION" },
            }),
            S::Commit { .. } => Ok(BoundStatement::TransactionControl { tag: "COMMIT" }),
            S::Deallocate { name, .. } => Ok(BoundStatement::Deallocate {
                all: name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all"),
            }),
            S::Discard { object_type } => match object_type {
                sqlparser::ast::DiscardObject::ALL => {
                    Ok(BoundStatement::ResetAll { tag: "DISCARD ALL" })
                }
                // No plans, sequences or temporary tables are kept.
                sqlparser::ast::DiscardObject::PLANS => Ok(BoundStatement::TransactionControl {
                    tag: "DISCARD PLANS",
                }),
                sqlparser::ast::DiscardObject::SEQUENCES => {
                    Ok(BoundStatement::TransactionControl {
                        tag: "DISCARD SEQUENCES",
                    })
                }
                sqlparser::ast::DiscardObject::TEMP => Ok(BoundStatement::TransactionControl {
                    tag: "DISCARD TEMP",
                }),
            },
            S::Reset(r) => match &r.reset {
                sqlparser::ast::Reset::ALL => Ok(BoundStatement::ResetAll { tag: "RESET" }),
                sqlparser::ast::Reset::ConfigurationParameter(name) => {
                    Ok(BoundStatement::SetVariable {
                        name: crate::parser::object_name_to_string(name),
                        value: None,
                    })
                }
                sqlparser::ast::Reset::SessionAuthorization => {
                    Ok(BoundStatement::TransactionControl { tag: "RESET" })
                }
            },
            S::Rollback { savepoint, .. } => {
                if savepoint.is_some() {
                    return Err(SqlError::unsupported("ROLLBACK TO SAVEPOINT"));
                }
                Ok(BoundStatement::TransactionControl { tag: "ROLLBACK" })
            }
            other => Err(SqlError::unsupported(misc::statement_kind(other))),
        }
    }
}
