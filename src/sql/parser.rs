//! Parsing: sqlparser's PostgreSQL dialect plus ebbflow's statements that
//! sqlparser does not know (see NOTES.md: recognised by leading keywords on
//! the token stream, everything else handed to `parse_statement`).

use super::{SqlError, SqlResult};

/// A parsed statement.
#[derive(Debug, Clone)]
pub enum Statement {
    /// Anything sqlparser parses.
    Sql(Box<sqlparser::ast::Statement>),
    /// `FLUSH`
    Flush,
    /// `ALTER {TABLE | MATERIALIZED VIEW} name SET PARALLELISM {=|TO} {n | ADAPTIVE | 0}`
    AlterRelationParallelism {
        materialized_view: bool,
        name: String,
        parallelism: super::ParallelismSpec,
    },
    /// `ALTER FRAGMENT id SET PARALLELISM {=|TO} {n | ADAPTIVE}`
    AlterFragmentParallelism {
        fragment_id: u32,
        parallelism: super::ParallelismSpec,
    },
    /// `ALTER SYSTEM RESCHEDULE 'plan' [DRY RUN]`
    Reschedule { plan: String, dry_run: bool },
    /// `ALTER SYSTEM RESCHEDULE DRAIN WORKER id [DRY RUN]`
    DrainWorker { worker_id: u32, dry_run: bool },
    /// `ALTER SYSTEM ADD WORKER [WITH (parallel_units = n)]`
    AddWorker { parallel_units: Option<u32> },
    /// `ALTER SYSTEM REMOVE WORKER id`
    RemoveWorker { worker_id: u32 },
    /// `ALTER SYSTEM SET name {=|TO} value`
    AlterSystemSet { name: String, value: String },
    /// `SHOW CLUSTER`
    ShowCluster,
    /// `SHOW FRAGMENTS [FOR name]`
    ShowFragments { name: Option<String> },
    /// `SHOW ACTORS [FOR name]`
    ShowActors { name: Option<String> },
}

/// Split `sql` into statements and parse each.
pub fn parse(sql: &str) -> SqlResult<Vec<Statement>> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    sqlparser::parser::Parser::parse_sql(&dialect, sql)
        .map(|v| v.into_iter().map(|s| Statement::Sql(Box::new(s))).collect())
        .map_err(|e| SqlError::syntax(e.to_string()))
}
