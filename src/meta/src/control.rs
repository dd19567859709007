//! Meta's side of the control plane: what it sends compute nodes to build,
//! locate and reset actors, through [`ComputeClient`] (in process or over
//! gRPC alike).

use ebbflow_common::ErrorKind;
use std::collections::HashMap;
use std::sync::Arc;

use super::service::Meta;
use super::{MetaError, MetaResult};
use ebbflow_common::ActorId;
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

impl Meta {
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
