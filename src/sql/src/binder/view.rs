//! Plain views: `CREATE VIEW` keeps the query's text; naming a view in a
//! FROM clause binds that text in place, as a subquery under the view's
//! name and column names. A view in a materialized view's query is thus
//! inlined: the MV reads the view's base relations.

use ebbflow_common::ErrorKind;
use std::sync::Arc;

use sqlparser::ast;

use super::ddl::view_column_names;
use super::scope::Scope;
use super::Binder;
use crate::{BoundStatement, SqlError, SqlResult};
use ebbflow_meta::catalog::{ColumnDesc, RelationDesc, RelationKind, TableId};
use ebbflow_planner::logical::LogicalPlan;

/// Views naming views: deeper than this is refused (meta refuses a
/// `CREATE OR REPLACE VIEW` that would make a cycle, but a corrupt catalog
/// must not overflow the stack).
const MAX_VIEW_DEPTH: usize = 32;

/// The relations a plan scans (views are already inlined into theirs).
fn scanned(plan: &LogicalPlan, out: &mut Vec<TableId>) {
    if let LogicalPlan::Scan { relation } = plan {
        if relation.kind != RelationKind::System && !out.contains(&relation.id) {
            out.push(relation.id);
        }
    }
    for c in plan.children() {
        scanned(c, out);
    }
}

impl Binder<'_> {
    pub(super) fn bind_plain_view(&mut self, cv: &ast::CreateView) -> SqlResult<BoundStatement> {
        if cv.or_alter {
            return Err(SqlError::unsupported("CREATE OR ALTER VIEW"));
        }
        if cv.or_replace && cv.if_not_exists {
            return Err(SqlError::syntax(
                "syntax error: OR REPLACE and IF NOT EXISTS cannot be combined",
            ));
        }
        if cv.temporary {
            return Err(SqlError::unsupported("temporary views"));
        }
        if !cv.options.to_string().is_empty() {
            return Err(SqlError::unsupported("CREATE VIEW ... WITH (...)"));
        }
        let name = super::ddl::create_name(&cv.name)?;
        let views_before = self.views_used.len();
        let bq = self.bind_query(&cv.query)?;
        let names = view_column_names(cv, bq.names, "CREATE VIEW")?;
        let columns = names
            .into_iter()
            .zip(bq.plan.types())
            .map(|(n, t)| ColumnDesc::new(n, t))
            .collect();
        let mut upstreams = Vec::new();
        scanned(&bq.plan, &mut upstreams);
        for v in self.views_used.drain(views_before..) {
            if !upstreams.contains(&v) {
                upstreams.push(v);
            }
        }
        Ok(BoundStatement::CreateView {
            name,
            columns,
            definition: cv.query.to_string(),
            upstreams,
            if_not_exists: cv.if_not_exists,
            or_replace: cv.or_replace,
        })
    }

    /// A view named in FROM: its query, bound with none of the naming
    /// query's CTEs in sight, its columns under the view's names.
    pub(super) fn bind_view_ref(
        &mut self,
        view: &Arc<RelationDesc>,
        name: &str,
    ) -> SqlResult<(LogicalPlan, Scope)> {
        if self.view_depth >= MAX_VIEW_DEPTH {
            return Err(SqlError::new(
                ErrorKind::StatementTooComplex,
                format!("views nested too deeply at \"{}\"", view.name),
            ));
        }
        let definition = view.definition.as_deref().unwrap_or_default();
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let query = match sqlparser::parser::Parser::parse_sql(&dialect, definition)
            .map_err(|e| SqlError::internal_view(&view.name, &e.to_string()))?
            .pop()
        {
            Some(ast::Statement::Query(q)) => q,
            _ => return Err(SqlError::internal_view(&view.name, "not a query")),
        };
        let ctes = std::mem::take(&mut self.ctes);
        self.view_depth += 1;
        let bound = self.bind_query(&query);
        self.view_depth -= 1;
        self.ctes = ctes;
        let bq = bound?;
        if bq.plan.types() != view.types() {
            return Err(SqlError::internal_view(
                &view.name,
                "its query no longer yields the view's column types",
            ));
        }
        if !self.views_used.contains(&view.id) {
            self.views_used.push(view.id);
        }
        let scope = Scope::of_relation(
            Some(name),
            view.columns
                .iter()
                .map(|c| (c.name.clone(), c.data_type, false)),
        );
        Ok((bq.plan, scope))
    }
}

/// `WATERMARK FOR col AS expr`, if `rel` has one.
fn watermark_sql(rel: &RelationDesc) -> Option<String> {
    let wm = rel.watermark.as_ref()?;
    let column = ebbflow_expr::quote_ident(&rel.columns.get(wm.column)?.name);
    Some(format!("WATERMARK FOR {column} AS {}", wm.text))
}

/// A statement that creates `rel` as it is now (`SHOW CREATE`).
pub(super) fn create_sql(rel: &RelationDesc) -> String {
    use ebbflow_expr::quote_ident;
    let name = quote_ident(&rel.name);
    let definition = rel.definition.as_deref().unwrap_or_default();
    let with = if rel.with_options.is_empty() {
        String::new()
    } else {
        let opts: Vec<String> = rel
            .with_options
            .iter()
            .map(|(k, v)| format!("{k} = '{}'", v.replace('\'', "''")))
            .collect();
        format!(" WITH ({})", opts.join(", "))
    };
    match rel.kind {
        RelationKind::Table => {
            let mut items: Vec<String> = rel
                .visible_columns()
                .map(|(_, c)| format!("{} {}", quote_ident(&c.name), c.data_type.pg_name()))
                .collect();
            if rel.user_pk {
                let pk: Vec<String> = rel
                    .pk
                    .iter()
                    .map(|&i| quote_ident(&rel.columns[i].name))
                    .collect();
                items.push(format!("PRIMARY KEY ({})", pk.join(", ")));
            }
            items.extend(watermark_sql(rel));
            let append_only = if rel.append_only { " APPEND ONLY" } else { "" };
            let on_conflict = rel
                .on_conflict
                .clause()
                .map_or(String::new(), |c| format!(" {c}"));
            format!(
                "CREATE TABLE {name} ({}){append_only}{on_conflict}{with}",
                items.join(", ")
            )
        }
        RelationKind::MaterializedView => {
            format!("CREATE MATERIALIZED VIEW {name}{with} AS {definition}")
        }
        RelationKind::View => {
            let cols: Vec<String> = rel.columns.iter().map(|c| quote_ident(&c.name)).collect();
            format!("CREATE VIEW {name} ({}) AS {definition}", cols.join(", "))
        }
        RelationKind::Source => {
            let items: Vec<String> = rel
                .visible_columns()
                .map(|(_, c)| format!("{} {}", quote_ident(&c.name), c.data_type.pg_name()))
                .chain(watermark_sql(rel))
                .collect();
            format!("CREATE SOURCE {name} ({}){with}", items.join(", "))
        }
        RelationKind::System => format!("-- {name} is a system catalog"),
    }
}

impl SqlError {
    fn internal_view(view: &str, why: &str) -> SqlError {
        SqlError::new(
            ErrorKind::InternalError,
            format!("cannot use view \"{view}\": {why}"),
        )
    }
}
