//! Meta's side of the control plane: what it sends compute nodes to build,
//! locate and reset actors, through [`ComputeClient`] (in process or over
//! gRPC alike).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{oneshot, RwLockWriteGuard};

use super::barrier::BarrierSpec;
use super::service::{Meta, TableRoute};
use super::{MetaError, MetaResult};
use crate::catalog::TableId;
use ebbflow_common::{ActorId, ErrorKind};
use ebbflow_plan::{ActorDesc, Mutation};
use ebbflow_stream::compute_node::{ActorLocations, ComputeClient, NodeError, WorkerId};

/// A change to the running jobs as plain data, made under the state lock
/// by DDL or a scale: the actors to build idle on their nodes, and what the
/// one barrier that wires them in carries.
pub(super) struct JobChange {
    /// Each new actor with the node it is placed on.
    pub descs: Vec<(WorkerId, ActorDesc)>,
    pub mutation: Mutation,
    pub add_actors: Vec<ActorId>,
    /// New source actors, which the barrier manager injects into.
    pub add_sources: Vec<(WorkerId, ActorId)>,
    pub remove_actors: Vec<ActorId>,
}

/// What a scale holds while its change is applied: DML waits (the routes
/// are write-locked) from before the layout changed until the change's
/// barrier is injected, and the held tables' routes are rebuilt for the
/// new layout.
pub(super) struct DmlHold<'a> {
    pub routes: RwLockWriteGuard<'a, HashMap<TableId, Arc<TableRoute>>>,
    pub tables: Vec<TableId>,
}

/// How [`Meta::apply_change`] went.
pub(super) struct Applied {
    /// Nothing of the change was applied on an error: the old layout stays
    /// committed, and the caller restores its own state.
    pub result: MetaResult<()>,
    /// From the first source or DML stopping to the affected actors being
    /// able to read the epoch the barrier closes (docs/design.md §7).
    pub pause: Duration,
}

impl Meta {
    /// The one executor of a [`JobChange`] planned under the state lock,
    /// for DDL and scaling alike: build the new actors idle on their nodes,
    /// then send the one barrier that carries the mutation, adds and removes
    /// actors and commits the catalog as it now stands; once it is committed
    /// the nodes forget the removed actors.
    ///
    /// With a `hold` (a scale), DML to the held tables waits until the
    /// barrier is injected (new table actors hold what arrives after it
    /// until the previous epoch is readable), and the pause runs from then,
    /// or from the injection if no DML waits (until then the job runs on
    /// while the barrier waits for the one before it to be committed), to
    /// the affected actors reading the epoch: collected when the compute
    /// nodes share one store, else committed.
    pub(super) async fn apply_change(
        &self,
        change: JobChange,
        hold: Option<DmlHold<'_>>,
    ) -> Applied {
        let JobChange {
            descs,
            mutation,
            add_actors,
            add_sources,
            remove_actors,
        } = change;
        if let Err(e) = self.build_actors_on(descs).await {
            return Applied {
                result: Err(e),
                pause: Duration::ZERO,
            };
        }
        let requested = Instant::now();
        let (mut routes, tables) = match hold {
            Some(h) => (Some(h.routes), h.tables),
            None => (None, Vec::new()),
        };
        let mut pause = (!tables.is_empty()).then_some(requested);
        if let Some(routes) = routes.as_mut() {
            for t in &tables {
                routes.remove(t);
            }
        }
        let (injected_tx, injected_rx) = oneshot::channel();
        let (readable_tx, mut readable_rx) = oneshot::channel();
        let barrier = self.barrier_with(BarrierSpec {
            mutation: Some(mutation),
            add_actors,
            add_sources,
            remove_actors: remove_actors.clone(),
            meta_snapshot: Some(self.state.lock().snapshot()),
            injected: Some(injected_tx),
            readable: Some(readable_tx),
        });
        tokio::pin!(barrier);
        let mut resumed = None;
        let result = tokio::select! {
            r = &mut barrier => r,
            _ = injected_rx => {
                let pause = *pause.get_or_insert_with(Instant::now);
                drop(routes.take());
                tokio::select! {
                    biased;
                    Ok(()) = &mut readable_rx => {
                        resumed = Some(pause.elapsed());
                        barrier.await
                    }
                    r = &mut barrier => r,
                }
            }
        };
        drop(routes);
        let pause = resumed.unwrap_or_else(|| pause.unwrap_or(requested).elapsed());
        if result.is_ok() && !remove_actors.is_empty() {
            let st = self.state.lock();
            for w in st.workers.values() {
                w.node.forget_actors(&remove_actors);
            }
        }
        Applied {
            result: result.map(|_| ()),
            pause,
        }
    }

    /// Where every placed actor runs, and each worker's address.
    pub(super) fn actor_locations(&self) -> ActorLocations {
        let st = self.state.lock();
        let mut loc = ActorLocations::default();
        for f in st.fragments.values() {
            for a in &f.actors {
                loc.actors.insert(a.actor_id, a.worker);
            }
        }
        for w in st.workers.values() {
            loc.addresses.insert(w.id, w.host.clone());
        }
        loc
    }

    /// The clients of the nodes meta talks to.
    fn node_clients(&self) -> Vec<(WorkerId, Arc<dyn ComputeClient>)> {
        self.nodes
            .read()
            .iter()
            .map(|(id, n)| (*id, n.clone()))
            .collect()
    }

    /// Tell every node where actors run (after a layout change, before
    /// the barrier that wires new actors in), then build each actor of
    /// `descs` idle on the node it is placed on (DDL, a scale and a
    /// recovery all build through here).
    pub(super) async fn build_actors_on(
        &self,
        descs: Vec<(WorkerId, ActorDesc)>,
    ) -> MetaResult<()> {
        let mut per_worker: HashMap<WorkerId, Vec<ActorDesc>> = HashMap::new();
        for (w, d) in descs {
            per_worker.entry(w).or_default().push(d);
        }
        let locations = Arc::new(self.actor_locations());
        let nodes = self.node_clients();
        let updates = nodes
            .iter()
            .map(|(_, n)| n.update_locations(locations.clone()));
        for r in futures::future::join_all(updates).await {
            r.map_err(|e| {
                MetaError::new(
                    ErrorKind::SystemError,
                    format!("cannot reach a compute node: {e}"),
                )
            })?;
        }
        let builds = per_worker.into_iter().map(|(w, descs)| {
            let node = nodes
                .iter()
                .find(|(id, _)| *id == w)
                .map(|(_, n)| n.clone());
            async move {
                match node {
                    Some(n) => n.build_actors(descs).await,
                    None => Err(NodeError::Down(w)),
                }
            }
        });
        for r in futures::future::join_all(builds).await {
            r.map_err(|e| {
                MetaError::new(ErrorKind::SystemError, format!("cannot build actors: {e}"))
            })?;
        }
        Ok(())
    }

    /// Stop every actor on every node and wait for them to end; nodes with
    /// stores of their own drop their uncommitted writes. A node that does
    /// not answer is left to the failure detector.
    pub(super) async fn reset_nodes(&self) {
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        let resets = self.node_clients().into_iter().map(|(id, n)| async move {
            if let Err(e) = n.reset(generation).await {
                tracing::warn!(worker = id, error = %e, "compute node did not reset");
            }
        });
        futures::future::join_all(resets).await;
    }
}
