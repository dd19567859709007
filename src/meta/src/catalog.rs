//! Catalog descriptors: what the binder and the planners know about a
//! relation.

use std::collections::BTreeMap;
use std::sync::Arc;

use ebbflow_common::{DataType, Field};
use ebbflow_plan::{OnConflict, WatermarkDesc};

/// Id of a table, MV, system relation or internal state table.
pub use ebbflow_common::TableId;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum RelationKind {
    Table,
    MaterializedView,
    /// A plain view: no state of its own; its query (`definition`) is
    /// bound in place wherever the view is named.
    View,
    /// `CREATE SOURCE`: columns and connector options, no state of its
    /// own. Every job reading it runs its own source fragment (rows are
    /// not stored; only each split's progress is, per job).
    Source,
    /// A relation of `rw_catalog` (or `pg_catalog`/`information_schema`)
    /// computed from meta on each read.
    System,
}

impl RelationKind {
    pub fn name(self) -> &'static str {
        match self {
            RelationKind::Table => "table",
            RelationKind::MaterializedView => "materialized view",
            RelationKind::View => "view",
            RelationKind::Source => "source",
            RelationKind::System => "system catalog",
        }
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ColumnDesc {
    pub name: String,
    pub data_type: DataType,
    /// Hidden columns (the row id of a table without primary key, stream key
    /// columns an MV carries for maintenance) are not shown by `SELECT *`
    /// nor by `DESCRIBE`.
    pub hidden: bool,
}

impl ColumnDesc {
    pub fn new(name: impl Into<String>, data_type: DataType) -> Self {
        ColumnDesc {
            name: name.into(),
            data_type,
            hidden: false,
        }
    }

    pub fn hidden(name: impl Into<String>, data_type: DataType) -> Self {
        ColumnDesc {
            name: name.into(),
            data_type,
            hidden: true,
        }
    }
}

/// A relation as the binder sees it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RelationDesc {
    pub id: TableId,
    /// Unqualified name, lower case unless it was quoted.
    pub name: String,
    pub kind: RelationKind,
    /// All columns, hidden ones included, in storage order.
    pub columns: Vec<ColumnDesc>,
    /// Indices of the primary key / stream key columns (for a table without
    /// a declared key: its hidden row id column).
    pub pk: Vec<usize>,
    /// Whether `pk` was declared by the user (`PRIMARY KEY`).
    pub user_pk: bool,
    /// The `CREATE MATERIALIZED VIEW` query text, for MVs.
    pub definition: Option<String>,
    /// `WITH (...)` options as given (lower-case keys).
    pub with_options: BTreeMap<String, String>,
    /// `CREATE TABLE … APPEND ONLY`: rows are only ever inserted (UPDATE
    /// and DELETE are refused), so nothing looks a row up by its key.
    #[serde(default)]
    pub append_only: bool,
    /// `WATERMARK FOR col AS expr` (sources and append-only tables).
    #[serde(default)]
    pub watermark: Option<WatermarkDesc>,
    /// `CREATE TABLE … ON CONFLICT …`: what an insert on an existing
    /// primary key does (tables with a declared key only).
    #[serde(default)]
    pub on_conflict: OnConflict,
}

impl RelationDesc {
    pub fn fields(&self) -> Vec<Field> {
        self.columns
            .iter()
            .map(|c| Field::new(c.name.clone(), c.data_type))
            .collect()
    }

    pub fn types(&self) -> Vec<DataType> {
        self.columns.iter().map(|c| c.data_type).collect()
    }

    pub fn visible_columns(&self) -> impl Iterator<Item = (usize, &ColumnDesc)> {
        self.columns.iter().enumerate().filter(|(_, c)| !c.hidden)
    }
}

/// Name resolution for the binder.
pub trait CatalogReader: Send + Sync {
    /// Find a relation by name. `schema` is the qualifier if one was
    /// written (`rw_catalog`, `public`, `pg_catalog`, ...). Unqualified names
    /// resolve to user relations first, then to `rw_catalog`.
    fn relation(&self, schema: Option<&str>, name: &str) -> Option<Arc<RelationDesc>>;

    /// Every relation with its schema (user relations in `public`), for
    /// the functions that map an OID to a relation (`::regclass`,
    /// `pg_get_viewdef`).
    fn relations(&self) -> Vec<(String, Arc<RelationDesc>)> {
        vec![]
    }

    /// The session binding the statement.
    fn session(&self) -> SessionInfo {
        SessionInfo::default()
    }
}

/// What the binder and the `pg_catalog` relations know about the session
/// running a statement (`current_user`, `now()`, `pg_settings`).
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub user: String,
    pub database: String,
    /// The session's settings, sorted by name (as `SHOW ALL` lists them).
    pub settings: Vec<(String, String)>,
    /// The statement's start: what `now()` returns.
    pub statement_time: chrono::NaiveDateTime,
    /// `pg_backend_pid()`: an id of the session, unique in this process.
    pub backend_pid: i32,
}

impl Default for SessionInfo {
    fn default() -> Self {
        SessionInfo {
            user: "root".into(),
            database: "dev".into(),
            settings: vec![],
            statement_time: chrono::DateTime::UNIX_EPOCH.naive_utc(),
            backend_pid: 0,
        }
    }
}
