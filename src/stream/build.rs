//! Actor descriptions (what meta sends a compute node) and the building of
//! actors from them. Kept apart from executor logic so tests can build
//! executors directly.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};

use super::actor::{merge_inputs, Actor, ActorInput, ComputeEvent};
use super::exchange::{DispatchSet, Dispatcher, ExchangeRegistry, Merge, MergeInput};
use super::executor::dynamic_filter::DynamicFilterExecutor;
use super::executor::filter::FilterExecutor;
use super::executor::hash_agg::HashAggExecutor;
use super::executor::hash_join::{HashJoinExecutor, JoinSide};
use super::executor::hop_window::HopWindowExecutor;
use super::executor::materialize::{MaterializeExecutor, OnConflict};
use super::executor::over_window::OverWindowExecutor;
use super::executor::project::ProjectExecutor;
use super::executor::semi_join::{DegreeSide, SemiJoinExecutor};
use super::executor::stream_scan::{BackfillDesc, StreamScanExecutor};
use super::executor::top_n::TopNExecutor;
use super::executor::union::UnionExecutor;
use super::executor::unnest::UnnestExecutor;
use super::executor::watermark_filter::WatermarkFilterExecutor;
use super::executor::Executor;
use super::message::{ActorId, DispatcherDesc, FragmentId};
use super::source::datagen::DatagenDesc;
use super::source::{progress_types, SourceReader, SplitSourceDesc};
use crate::common::order::{JoinKind, OrderKey};
use crate::common::TableId;
use crate::common::{Bitmap, DataType};
use crate::expr::over::WindowCall;
use crate::expr::window::TimeWindow;
use crate::expr::{AggCall, Expr, Func};
use crate::storage::state_table::ValueCodec;
use crate::storage::{StateStore, StateTable};

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

impl StateTableDesc {
    pub fn build(&self, store: Arc<dyn StateStore>, vnodes: Bitmap) -> StateTable {
        StateTable::new(
            self.table_id,
            store,
            self.pk_types.clone(),
            self.pk_desc.clone(),
            self.dist_in_pk.clone(),
            match &self.value_types {
                Some(t) => ValueCodec::Schema(t.clone()),
                None => ValueCodec::Tagged,
            },
            vnodes,
        )
    }
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

/// What feeds a source actor besides its upstreams.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum SourceDesc {
    /// Not a source: barriers arrive from upstream actors.
    None,
    /// A table actor: barriers are injected and DML arrives through its
    /// local channel.
    Table,
    /// A datagen actor of a table created before splits existed: a
    /// singleton with its offset under the empty key.
    Datagen {
        desc: DatagenDesc,
        state: StateTableDesc,
    },
    /// A connector read in splits (see `stream::source`); `state` keeps
    /// each split's progress under the split's vnode.
    Splits {
        desc: SplitSourceDesc,
        state: StateTableDesc,
    },
}

impl SourceDesc {
    /// The progress table of a split source: key split id, value
    /// [`progress_types`].
    pub fn split_state(table_id: TableId) -> StateTableDesc {
        StateTableDesc {
            table_id,
            pk_types: vec![DataType::Int32],
            pk_desc: vec![],
            dist_in_pk: vec![],
            value_types: Some(progress_types()),
        }
    }
}

/// Everything a compute node needs to build one actor.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ActorDesc {
    pub actor_id: ActorId,
    pub fragment_id: FragmentId,
    pub nodes: Vec<NodeDesc>,
    /// `(executor input index, upstream actors)`.
    pub inputs: Vec<(usize, Vec<ActorId>)>,
    pub source: SourceDesc,
    pub dispatchers: Vec<DispatcherDesc>,
    pub vnodes: Bitmap,
}

/// Shared services an actor is built with.
pub struct BuildContext {
    pub store: Arc<dyn StateStore>,
    pub registry: Arc<ExchangeRegistry>,
    pub events: mpsc::UnboundedSender<ComputeEvent>,
    pub committed: watch::Receiver<u64>,
    /// See [`NodeServices::readable`](super::compute_node::NodeServices).
    pub readable: watch::Receiver<u64>,
    /// See [`Actor::fault`].
    pub fault: Arc<std::sync::atomic::AtomicU32>,
    /// See [`Actor::panic`].
    pub panic: Arc<std::sync::atomic::AtomicBool>,
}

/// Build an actor. For source actors, the local channel's receiver is
/// given; its sender is how barriers and DML reach the actor.
pub fn build_actor(
    desc: &ActorDesc,
    ctx: &BuildContext,
    local_rx: Option<super::channel::Receiver>,
) -> Actor {
    let me = desc.actor_id;
    let mut inputs = merge_inputs(&ctx.registry, me, &desc.inputs);
    if let Some(rx) = local_rx {
        inputs.push(MergeInput {
            input_index: 0,
            upstream: None,
            rx,
        });
    }
    let merge = Merge::new(inputs).with_owner(me, ctx.registry.clone());
    let input = match &desc.source {
        SourceDesc::Datagen { desc: g, state } => ActorInput::Source {
            merge,
            reader: Box::new(SourceReader::single(
                g.clone(),
                state.table_id,
                state.build(ctx.store.clone(), Bitmap::full()),
            )),
        },
        SourceDesc::Splits { desc: d, state } => ActorInput::Source {
            merge,
            reader: Box::new(SourceReader::new(
                d.clone(),
                state.build(ctx.store.clone(), desc.vnodes.clone()),
            )),
        },
        _ => ActorInput::Merge(merge),
    };
    let executors = desc
        .nodes
        .iter()
        .map(|n| build_executor(n, desc, ctx))
        .collect();
    let dispatchers = desc
        .dispatchers
        .iter()
        .map(|d| Dispatcher::new(d, |down| ctx.registry.take_sender(me, down)))
        .collect();
    Actor {
        actor_id: me,
        fragment_id: desc.fragment_id,
        input,
        executors,
        dispatch: DispatchSet {
            actor_id: me,
            dispatchers,
        },
        registry: ctx.registry.clone(),
        events: ctx.events.clone(),
        committed: ctx.committed.clone(),
        readable: ctx.readable.clone(),
        fault: ctx.fault.clone(),
        panic: ctx.panic.clone(),
    }
}

fn build_executor(node: &NodeDesc, actor: &ActorDesc, ctx: &BuildContext) -> Box<dyn Executor> {
    let vnodes = actor.vnodes.clone();
    let store = ctx.store.clone();
    let id = actor.actor_id;
    match node {
        NodeDesc::Project { exprs } => Box::new(ProjectExecutor::new(exprs.clone(), id)),
        NodeDesc::HopWindow {
            time_col,
            window,
            input_width,
        } => Box::new(
            HopWindowExecutor::new(time_col.clone(), *window, id).with_input_width(*input_width),
        ),
        NodeDesc::Unnest { array } => Box::new(UnnestExecutor::new(array.clone(), id)),
        NodeDesc::Filter { predicate } => Box::new(FilterExecutor::new(predicate.clone(), id)),
        NodeDesc::WatermarkFilter {
            column,
            expr,
            table,
        } => Box::new(WatermarkFilterExecutor::new(
            *column,
            expr.clone(),
            table.build(store, vnodes),
            id,
        )),
        NodeDesc::Materialize {
            table,
            pk,
            dist_key,
            handle_conflicts,
            inserts_are_new,
            on_conflict,
        } => Box::new(
            MaterializeExecutor::new(
                if *handle_conflicts {
                    table.build(store, vnodes)
                } else {
                    // An MV reads nothing back: its writes are logged.
                    table.build(store, vnodes).log_writes()
                },
                pk.clone(),
                dist_key.clone(),
                *handle_conflicts,
                *inserts_are_new,
            )
            .with_on_conflict(*on_conflict),
        ),
        NodeDesc::HashAgg {
            group_by,
            calls,
            table,
            emit_on_window_close,
            append_only_input,
        } => Box::new(
            HashAggExecutor::new(
                group_by.clone(),
                calls.clone(),
                // Groups are written at the barrier, once each.
                table.build(store, vnodes).log_writes(),
                id,
            )
            .emit_on_window_close(*emit_on_window_close)
            .append_only_input(*append_only_input),
        ),
        NodeDesc::DynamicFilter {
            key,
            cmp,
            bound,
            left_pk,
            left_table,
            right_table,
        } => Box::new(DynamicFilterExecutor::new(
            key.clone(),
            *cmp,
            bound.clone(),
            left_pk.clone(),
            left_table.build(store.clone(), vnodes.clone()),
            right_table.build(store, vnodes),
            id,
        )),
        // Semi and anti joins: only left rows come out, with a degree.
        NodeDesc::HashJoin {
            kind,
            left_keys,
            right_keys,
            left_pk,
            right_pk,
            left_width,
            right_width,
            condition,
            left_table,
            right_table,
        } if kind.left_only() => Box::new(SemiJoinExecutor::new(
            *kind == JoinKind::LeftSemi,
            DegreeSide::new(
                left_keys.clone(),
                left_pk.clone(),
                left_table.build(store.clone(), vnodes.clone()),
            ),
            JoinSide::new(
                right_keys.clone(),
                right_pk.clone(),
                *right_width,
                right_table.build(store, vnodes),
            ),
            *left_width,
            condition.clone(),
            id,
        )),
        NodeDesc::HashJoin {
            kind,
            left_keys,
            right_keys,
            left_pk,
            right_pk,
            left_width,
            right_width,
            condition,
            left_table,
            right_table,
        } => Box::new(HashJoinExecutor::new(
            *kind,
            JoinSide::new(
                left_keys.clone(),
                left_pk.clone(),
                *left_width,
                left_table.build(store.clone(), vnodes.clone()),
            ),
            JoinSide::new(
                right_keys.clone(),
                right_pk.clone(),
                *right_width,
                right_table.build(store, vnodes),
            ),
            condition.clone(),
            id,
        )),
        NodeDesc::TopN {
            order,
            limit,
            offset,
            pk,
            table,
        } => Box::new(TopNExecutor::new(
            order.clone(),
            *limit,
            *offset,
            pk.clone(),
            table.build(store, vnodes),
        )),
        NodeDesc::OverWindow {
            partition_by,
            order_by,
            calls,
            limit,
            pk,
            table,
        } => Box::new(OverWindowExecutor::new(
            partition_by.clone(),
            order_by.clone(),
            calls.clone(),
            *limit,
            pk.clone(),
            table.build(store, vnodes),
            id,
        )),
        NodeDesc::Union => Box::new(UnionExecutor),
        NodeDesc::StreamScan { backfill, .. } => Box::new(StreamScanExecutor::new(
            backfill.clone(),
            vnodes,
            store,
            ctx.committed.clone(),
        )),
    }
}
