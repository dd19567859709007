//! The executors of a fragment and the state they keep, as data.

use ebbflow_common::order::{JoinKind, OrderKey};
use ebbflow_common::{DataType, TableId};
use ebbflow_expr::over::WindowCall;
use ebbflow_expr::window::TimeWindow;
use ebbflow_expr::{AggCall, Expr, Func};

/// A state table's layout.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StateTableDesc {
    pub table_id: TableId,
    pub pk_types: Vec<DataType>,
    pub pk_desc: Vec<bool>,
    /// Positions of the distribution key within the pk.
    pub dist_in_pk: Vec<usize>,
    /// Value schema (`None`: self-describing rows).
    pub value_types: Option<Vec<DataType>>,
}

/// One executor of a fragment.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum NodeDesc {
    Project {
        exprs: Vec<Expr>,
    },
    Filter {
        predicate: Expr,
    },
    /// `unnest(array)` in a select list: the element and its position
    /// follow the input's columns.
    Unnest {
        array: Expr,
    },
    HopWindow {
        time_col: Expr,
        window: TimeWindow,
        /// Columns of the input (where the window bounds go), to place
        /// their watermarks; `None` in jobs planned before watermarks.
        #[serde(default)]
        input_width: Option<usize>,
    },
    Materialize {
        table: StateTableDesc,
        pk: Vec<usize>,
        dist_key: Vec<usize>,
        handle_conflicts: bool,
        inserts_are_new: bool,
        /// A table's `ON CONFLICT` behaviour (with `handle_conflicts`).
        #[serde(default)]
        on_conflict: OnConflict,
    },
    HashAgg {
        group_by: Vec<usize>,
        calls: Vec<AggCall>,
        table: StateTableDesc,
        /// Emit each group once, when the watermark on a grouping key
        /// passes it (`EMIT ON WINDOW CLOSE`).
        #[serde(default)]
        emit_on_window_close: bool,
        /// The input only inserts (see `LogicalPlan::append_only`).
        #[serde(default)]
        append_only_input: bool,
    },
    HashJoin {
        kind: JoinKind,
        left_keys: Vec<usize>,
        right_keys: Vec<usize>,
        left_pk: Vec<usize>,
        right_pk: Vec<usize>,
        left_width: usize,
        right_width: usize,
        condition: Option<Expr>,
        left_table: StateTableDesc,
        right_table: StateTableDesc,
    },
    /// Left rows whose `key` compares (`cmp`) with `bound` over the
    /// one-row right input (broadcast to every actor).
    DynamicFilter {
        key: Expr,
        cmp: Func,
        bound: Expr,
        left_pk: Vec<usize>,
        left_table: StateTableDesc,
        right_table: StateTableDesc,
    },
    OverWindow {
        partition_by: Vec<usize>,
        order_by: Vec<OrderKey>,
        calls: Vec<WindowCall>,
        /// Only the first rows of each partition come out (group top-N).
        #[serde(default)]
        limit: Option<u64>,
        pk: Vec<usize>,
        table: StateTableDesc,
    },
    TopN {
        order: Vec<OrderKey>,
        limit: Option<u64>,
        offset: u64,
        pk: Vec<usize>,
        table: StateTableDesc,
    },
    Union,
    /// The watermark of a relation with `WATERMARK FOR`: on column
    /// `column`, the highest `expr` seen; `table` holds it per vnode.
    WatermarkFilter {
        column: usize,
        expr: Expr,
        table: StateTableDesc,
    },
    StreamScan {
        upstream_table: TableId,
        upstream_types: Vec<DataType>,
        /// `None` for jobs created before backfill progress was kept.
        #[serde(default)]
        backfill: Option<BackfillDesc>,
    },
}

impl NodeDesc {
    pub fn name(&self) -> &'static str {
        match self {
            NodeDesc::Project { .. } => "Project",
            NodeDesc::Filter { .. } => "Filter",
            NodeDesc::HopWindow { .. } => "HopWindow",
            NodeDesc::Unnest { .. } => "Unnest",
            NodeDesc::Materialize { .. } => "Materialize",
            NodeDesc::HashAgg { .. } => "HashAgg",
            NodeDesc::HashJoin { .. } => "HashJoin",
            NodeDesc::DynamicFilter { .. } => "DynamicFilter",
            NodeDesc::OverWindow { .. } => "OverWindow",
            NodeDesc::TopN { .. } => "TopN",
            NodeDesc::Union => "Union",
            NodeDesc::WatermarkFilter { .. } => "WatermarkFilter",
            NodeDesc::StreamScan { .. } => "StreamScan",
        }
    }

    /// The state tables the executor owns.
    pub fn state_tables(&self) -> Vec<TableId> {
        self.state_table_descs()
            .iter()
            .map(|t| t.table_id)
            .collect()
    }

    /// The descriptions of the state tables the executor owns.
    pub fn state_table_descs(&self) -> Vec<&StateTableDesc> {
        match self {
            NodeDesc::Materialize { table, .. }
            | NodeDesc::HashAgg { table, .. }
            | NodeDesc::TopN { table, .. }
            | NodeDesc::OverWindow { table, .. }
            | NodeDesc::WatermarkFilter { table, .. } => vec![table],
            NodeDesc::HashJoin {
                left_table,
                right_table,
                ..
            }
            | NodeDesc::DynamicFilter {
                left_table,
                right_table,
                ..
            } => vec![left_table, right_table],
            NodeDesc::StreamScan {
                backfill: Some(b), ..
            } => vec![&b.progress],
            _ => vec![],
        }
    }
}

/// How a scan reads its upstream's state for backfill.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BackfillDesc {
    /// The upstream's key columns (in its rows).
    pub upstream_pk: Vec<usize>,
    /// The upstream's distribution key (empty: a singleton upstream).
    pub upstream_dist: Vec<usize>,
    /// The upstream's materialized state.
    pub upstream_state: StateTableDesc,
    /// This job's progress, one row per vnode: `[done, pk...]`.
    pub progress: StateTableDesc,
}

/// What an insert on a table's existing primary key does: `CREATE TABLE …
/// ON CONFLICT {OVERWRITE | IGNORE | DO UPDATE IF NOT NULL}` (RisingWave's
/// syntax; `DO UPDATE FULL` is OVERWRITE and `DO NOTHING` is IGNORE).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum OnConflict {
    /// The new row replaces the old one (downstream sees an update).
    #[default]
    Overwrite,
    /// The old row stays; the insert is dropped.
    Ignore,
    /// Each non-NULL column of the new row overwrites the old value; NULL
    /// columns keep it.
    DoUpdateIfNotNull,
}

impl OnConflict {
    /// The clause as `SHOW CREATE TABLE` prints it (`None` for the default).
    pub fn clause(self) -> Option<&'static str> {
        match self {
            OnConflict::Overwrite => None,
            OnConflict::Ignore => Some("ON CONFLICT IGNORE"),
            OnConflict::DoUpdateIfNotNull => Some("ON CONFLICT DO UPDATE IF NOT NULL"),
        }
    }
}

/// A relation's watermark: rows may come late by what `expr` takes off
/// `column` (the stream side drops the rows below it).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WatermarkDesc {
    pub column: usize,
    /// Over the relation's row, of the column's type.
    pub expr: Expr,
    /// `expr` as written, for `SHOW CREATE`.
    pub text: String,
}
