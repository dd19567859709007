//! The building of actors from their descriptions (`plan`: what meta sends
//! a compute node). Kept apart from executor logic so tests can build
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
use super::executor::materialize::MaterializeExecutor;
use super::executor::over_window::OverWindowExecutor;
use super::executor::project::ProjectExecutor;
use super::executor::semi_join::{DegreeSide, SemiJoinExecutor};
use super::executor::stream_scan::StreamScanExecutor;
use super::executor::top_n::TopNExecutor;
use super::executor::union::UnionExecutor;
use super::executor::unnest::UnnestExecutor;
use super::executor::watermark_filter::WatermarkFilterExecutor;
use super::executor::Executor;
use super::source::SourceReader;
use ebbflow_common::order::JoinKind;
use ebbflow_common::Bitmap;
use ebbflow_plan::{ActorDesc, NodeDesc, SourceDesc, StateTableDesc};
use ebbflow_storage::state_table::ValueCodec;
use ebbflow_storage::{StateStore, StateTable};

/// A state table from its description, over a compute node's store.
pub trait BuildStateTable {
    fn build(&self, store: Arc<dyn StateStore>, vnodes: Bitmap) -> StateTable;
}

impl BuildStateTable for StateTableDesc {
    fn build(&self, store: Arc<dyn StateStore>, vnodes: Bitmap) -> StateTable {
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
