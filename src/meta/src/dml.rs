//! DML routing: a table's changes go to the actor owning each row's vnode,
//! all of one statement inside one epoch.

use ebbflow_common::ErrorKind;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::catalog::TableId;
use super::service::Meta;
use super::{MetaError, MetaResult};
use ebbflow_common::encoding::vnode_of;
use ebbflow_common::{Op, ScalarValue, StreamChunk, StreamChunkBuilder};
use ebbflow_stream::message::{ActorId, Message};

/// How long DML waits for a recovery before giving up.
const RECOVERY_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Where DML for a table goes: the table fragment's vnode mapping and the
/// local channel of each of its actors.
pub struct TableRoute {
    pub pk: Vec<usize>,
    pub mapping: Vec<ActorId>,
    pub senders: HashMap<ActorId, ebbflow_stream::channel::Sender>,
    /// Generates hidden row ids (tables without primary key).
    pub row_id_col: Option<usize>,
}

impl Meta {
    /// The DML route of a table (cached until its layout changes).
    pub async fn route(&self, table_id: TableId) -> MetaResult<Arc<TableRoute>> {
        if let Some(r) = self.routes.read().await.get(&table_id) {
            return Ok(r.clone());
        }
        // Computed under the exclusive lock: a route computed before a
        // reschedule and cached after it would send rows to actors that no
        // longer own their vnodes.
        let mut routes = self.routes.write().await;
        if let Some(r) = routes.get(&table_id) {
            return Ok(r.clone());
        }
        let route = {
            let st = self.state.lock();
            let r = st.relations.get(&table_id).ok_or_else(|| {
                MetaError::new(
                    ErrorKind::UndefinedTable,
                    format!("table with id {table_id} does not exist"),
                )
            })?;
            let frag = st
                .fragments
                .get(&r.materialize_fragment)
                .ok_or_else(|| MetaError::internal("table fragment missing"))?;
            let mut senders = HashMap::new();
            for a in &frag.actors {
                let tx = st
                    .node(a.worker)
                    .and_then(|n| n.local_sender(a.actor_id))
                    .ok_or_else(|| MetaError::internal("table actor is not running"))?;
                senders.insert(a.actor_id, tx);
            }
            let row_id_col = if r.desc.user_pk {
                None
            } else {
                r.desc.pk.first().copied()
            };
            Arc::new(TableRoute {
                pk: r.desc.pk.clone(),
                mapping: frag.mapping(),
                senders,
                row_id_col,
            })
        };
        routes.insert(table_id, route.clone());
        Ok(route)
    }

    /// A fresh hidden row id.
    pub fn next_row_id(&self) -> i64 {
        self.row_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Send DML changes to a table's actors. Inserts into a table without
    /// primary key get fresh row ids. Returns once the actors have them
    /// queued (not yet committed: see `flush`).
    pub async fn write_dml(&self, table_id: TableId, chunk: StreamChunk) -> MetaResult<u64> {
        self.write_dml_statement(table_id, std::iter::once(chunk))
            .await
    }

    /// Send all changes of one statement. They land in one epoch: the
    /// barrier manager injects under the exclusive DML gate, and the
    /// statement holds it shared while it sends. Lock order: routes, then
    /// gate (a reschedule holds the routes exclusively while its barrier is
    /// injected under the gate). While the cluster is failed the statement
    /// waits for the recovery (its rows would reach actors the recovery
    /// discards). Returns the failure generation the rows were sent in:
    /// see [`Meta::flush_since`].
    pub async fn write_dml_statement(
        &self,
        table_id: TableId,
        parts: impl IntoIterator<Item = StreamChunk>,
    ) -> MetaResult<u64> {
        loop {
            if !self.failure_state.wait_running(RECOVERY_WAIT).await {
                return Err(MetaError::new(
                    ErrorKind::InternalError,
                    "the cluster is recovering from a failure; try again",
                ));
            }
            // Hold the route shared while sending: a scale swaps it
            // exclusively, and a route computed before that swap must never
            // be used after it (rows would reach actors that no longer own
            // them).
            let (routes, route) = loop {
                let routes = self.routes.read().await;
                if let Some(r) = routes.get(&table_id).cloned() {
                    break (routes, r);
                }
                drop(routes);
                self.route(table_id).await?;
            };
            let gate = self.dml_gate.read().await;
            let generation = self.failure_state.generation();
            if self.failure_state.is_failed() {
                continue;
            }
            for chunk in parts {
                self.send_dml(&route, chunk).await?;
            }
            drop(gate);
            drop(routes);
            return Ok(generation);
        }
    }

    async fn send_dml(&self, route: &TableRoute, chunk: StreamChunk) -> MetaResult<()> {
        let mut per_actor: HashMap<ActorId, StreamChunkBuilder> = HashMap::new();
        let mut rows = chunk.rows().peekable();
        while let Some((op, mut row)) = rows.next() {
            if let (Some(c), Op::Insert) = (route.row_id_col, op) {
                if row[c].is_none() {
                    row[c] = Some(ScalarValue::Int64(self.next_row_id()));
                }
            }
            let target = route.mapping[vnode_of(&row, &route.pk) as usize];
            if op == Op::UpdateDelete {
                if let Some((Op::UpdateInsert, next)) = rows.peek() {
                    let t2 = route.mapping[vnode_of(next, &route.pk) as usize];
                    if t2 != target {
                        per_actor.entry(target).or_default().push(Op::Delete, row);
                        if let Some((_, next)) = rows.next() {
                            per_actor.entry(t2).or_default().push(Op::Insert, next);
                        }
                        continue;
                    }
                }
            }
            per_actor.entry(target).or_default().push(op, row);
        }
        for (actor, mut c) in per_actor {
            let tx = route
                .senders
                .get(&actor)
                .ok_or_else(|| MetaError::internal("no route to table actor"))?;
            tx.send(Message::Chunk(c.take()))
                .await
                .map_err(|_| MetaError::internal("table actor is gone"))?;
        }
        Ok(())
    }
}
