//! Bound statements: the binder's output, consumed by the frontend.

use std::collections::BTreeMap;
use std::sync::Arc;

use ebbflow_common::{DataType, Datum};
use ebbflow_expr::Expr;
use ebbflow_meta::catalog::{ColumnDesc, RelationDesc, RelationKind, TableId};
use ebbflow_plan::{OnConflict, WatermarkDesc};
use ebbflow_planner::logical::LogicalPlan;

/// A parallelism a user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParallelismSpec {
    Fixed(u32),
    /// `ADAPTIVE` or `0`: every parallel unit of the cluster.
    Adaptive,
}

// The binder's parallelism maps onto meta's.
impl From<ParallelismSpec> for ebbflow_meta::service::Parallelism {
    fn from(p: ParallelismSpec) -> Self {
        match p {
            ParallelismSpec::Fixed(n) => Self::Fixed(n),
            ParallelismSpec::Adaptive => Self::Adaptive,
        }
    }
}

/// Values and types of `$n` parameters (extended protocol).
#[derive(Clone, Debug, Default)]
pub struct ParamContext {
    /// Types the client declared (`None` = let the binder infer).
    pub types: Vec<Option<DataType>>,
    /// The values, once bound; `None` while only describing a statement.
    pub values: Option<Vec<Datum>>,
}

#[derive(Clone, Debug)]
pub enum BoundStatement {
    /// A query returning rows. `names` label the output columns of `plan`.
    Query {
        plan: LogicalPlan,
        names: Vec<String>,
    },
    CreateTable {
        name: String,
        /// Declared columns (no hidden row id; meta adds it when `pk` is empty).
        columns: Vec<ColumnDesc>,
        pk: Vec<usize>,
        with_options: BTreeMap<String, String>,
        if_not_exists: bool,
        /// `APPEND ONLY`: no primary key, UPDATE and DELETE refused.
        append_only: bool,
        /// `WATERMARK FOR` (append-only tables only).
        watermark: Option<WatermarkDesc>,
        /// `ON CONFLICT …` (a declared primary key is required).
        on_conflict: OnConflict,
    },
    /// `CREATE SOURCE`: columns and connector options (checked by the
    /// connector when the source is created).
    CreateSource {
        name: String,
        columns: Vec<ColumnDesc>,
        with_options: BTreeMap<String, String>,
        if_not_exists: bool,
        watermark: Option<WatermarkDesc>,
    },
    CreateMaterializedView {
        name: String,
        /// Produces the visible columns, named by `column_names`.
        plan: LogicalPlan,
        column_names: Vec<String>,
        /// The query text after `AS`.
        definition: String,
        with_options: BTreeMap<String, String>,
        if_not_exists: bool,
        /// Plain views the query named (inlined into `plan`): the MV
        /// depends on them.
        views: Vec<TableId>,
        /// `EMIT ON WINDOW CLOSE`: each window's row once, when the
        /// watermark closes it.
        emit_on_window_close: bool,
    },
    /// `CREATE [OR REPLACE] VIEW name [(cols)] AS query`: stored as its
    /// query text.
    CreateView {
        name: String,
        columns: Vec<ColumnDesc>,
        definition: String,
        /// Relations the query names directly (tables, MVs, views): a view
        /// depends on them.
        upstreams: Vec<TableId>,
        if_not_exists: bool,
        /// `OR REPLACE`: an existing view's columns must stay a prefix of
        /// the new ones (checked by meta, invalid_table_definition).
        or_replace: bool,
    },
    Drop {
        kind: RelationKind,
        name: String,
        if_exists: bool,
        cascade: bool,
    },
    /// `INSERT INTO table ...`: `source` yields rows of the table's visible
    /// columns in table order, already cast to the column types (columns not
    /// listed are NULL).
    Insert {
        table: Arc<RelationDesc>,
        source: LogicalPlan,
    },
    /// `UPDATE table SET col = expr ... WHERE filter`: expressions are over
    /// the table's full row (hidden columns included), cast to the column type.
    Update {
        table: Arc<RelationDesc>,
        filter: Option<Expr>,
        assignments: Vec<(usize, Expr)>,
    },
    Delete {
        table: Arc<RelationDesc>,
        filter: Option<Expr>,
    },
    /// `COPY table [(cols)] FROM STDIN`: `columns` are the table columns
    /// the fields of each line go to.
    CopyFrom {
        table: Arc<RelationDesc>,
        columns: Vec<usize>,
        options: super::CopyOptions,
    },
    /// `COPY {table | (query)} TO STDOUT`.
    CopyTo {
        plan: LogicalPlan,
        names: Vec<String>,
        options: super::CopyOptions,
    },
    Flush,
    /// `SET name = value` / `SET name TO DEFAULT` (`value: None`).
    SetVariable {
        name: String,
        value: Option<String>,
    },
    ShowVariable {
        name: String,
    },
    ShowAll,
    /// `CREATE USER`; the password in plaintext only until meta hashes it.
    CreateUser {
        name: String,
        password: Option<String>,
        if_not_exists: bool,
    },
    /// `ALTER USER name [WITH] PASSWORD {'…' | NULL}`.
    AlterUserPassword {
        name: String,
        password: Option<String>,
    },
    DropUser {
        name: String,
        if_exists: bool,
    },
    /// `SHOW CREATE …`: the relation's name and a statement creating it.
    ShowCreate {
        name: String,
        sql: String,
    },
    ShowCluster,
    ShowFragments {
        name: Option<String>,
    },
    ShowActors {
        name: Option<String>,
    },
    /// `EXPLAIN CREATE MATERIALIZED VIEW ...` (and `EXPLAIN SELECT`).
    Explain {
        inner: Box<BoundStatement>,
    },
    AlterParallelism {
        target: ParallelismTarget,
        parallelism: ParallelismSpec,
    },
    Reschedule {
        plan: String,
        dry_run: bool,
    },
    DrainWorker {
        worker_id: u32,
        dry_run: bool,
    },
    AddWorker {
        parallel_units: Option<u32>,
    },
    RemoveWorker {
        worker_id: u32,
    },
    RestartWorker {
        worker_id: u32,
    },
    AlterSystemSet {
        name: String,
        value: String,
    },
    /// `BEGIN`, `COMMIT`, `ROLLBACK`, `START TRANSACTION`: accepted and
    /// ignored (every statement is its own transaction), so BI tools work.
    TransactionControl {
        tag: &'static str,
    },
    /// `DEALLOCATE [PREPARE] name | ALL`: prepared statements live in the
    /// protocol layer (the extended protocol's named statements), so the
    /// session only acknowledges it; drivers (psycopg) send it after DDL.
    Deallocate {
        all: bool,
    },
    /// `RESET ALL` and `DISCARD ALL`: every session variable back to its
    /// default. `tag` is the command tag to answer with.
    ResetAll {
        tag: &'static str,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParallelismTarget {
    Relation(Arc<RelationDesc>),
    Fragment(u32),
}
