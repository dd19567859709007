//! The barrier manager: injects a barrier into every source actor every
//! `barrier_interval`, or at once when asked (FLUSH, DDL, scaling), collects
//! it from every actor, and commits the epoch it closes.
//!
//! One barrier is in flight at a time. The set of actors to collect and of
//! source actors to inject into is owned here and changed only by the
//! commands that carry the corresponding mutation, so a periodic barrier
//! never waits for an actor that is not wired in yet.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot, watch};

use crate::storage::StateStore;
use crate::stream::actor::ComputeEvent;
use crate::stream::compute_node::{ComputeNode, WorkerId};
use crate::stream::message::{ActorId, Barrier, Epoch, Mutation};

/// A request for a barrier now.
pub struct BarrierCommand {
    pub mutation: Option<Mutation>,
    /// Actors that start collecting from this barrier on.
    pub add_actors: Vec<ActorId>,
    /// Source actors to inject into from this barrier on, by worker.
    pub add_sources: Vec<(WorkerId, ActorId)>,
    /// Actors that stop after this barrier.
    pub remove_actors: Vec<ActorId>,
    /// Answered with the epoch the barrier closed, once it is committed.
    pub done: oneshot::Sender<Result<u64, String>>,
}

pub struct BarrierManager {
    store: Arc<dyn StateStore>,
    nodes: Arc<RwLock<HashMap<WorkerId, Arc<ComputeNode>>>>,
    events: mpsc::UnboundedReceiver<ComputeEvent>,
    commands: mpsc::UnboundedReceiver<BarrierCommand>,
    committed: watch::Sender<u64>,
    interval: Duration,
    epoch: u64,
    actors: HashSet<ActorId>,
    sources: HashMap<ActorId, WorkerId>,
}

impl BarrierManager {
    pub fn new(
        store: Arc<dyn StateStore>,
        nodes: Arc<RwLock<HashMap<WorkerId, Arc<ComputeNode>>>>,
        events: mpsc::UnboundedReceiver<ComputeEvent>,
        commands: mpsc::UnboundedReceiver<BarrierCommand>,
        committed: watch::Sender<u64>,
        interval: Duration,
    ) -> Self {
        let epoch = store.committed_epoch();
        BarrierManager {
            store,
            nodes,
            events,
            commands,
            committed,
            interval,
            epoch,
            actors: HashSet::new(),
            sources: HashMap::new(),
        }
    }

    pub async fn run(mut self) {
        let mut ticker = tokio::time::interval(self.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let cmd = tokio::select! {
                c = self.commands.recv() => match c {
                    Some(c) => Some(c),
                    None => return,
                },
                _ = ticker.tick() => None,
            };
            // Batch every waiting plain flush onto one barrier.
            let mut waiters = Vec::new();
            let mut cmd = cmd;
            if cmd.as_ref().is_some_and(is_plain) || cmd.is_none() {
                if let Some(c) = cmd.take() {
                    waiters.push(c.done);
                }
                while let Ok(c) = self.commands.try_recv() {
                    if is_plain(&c) {
                        waiters.push(c.done);
                    } else {
                        cmd = Some(c);
                        break;
                    }
                }
            }
            // A plain barrier first if a mutation was queued behind flushes.
            if !waiters.is_empty() || cmd.is_none() {
                let r = self.one_barrier(None, &[], &[], &[]).await;
                for w in waiters.drain(..) {
                    let _ = w.send(r.clone());
                }
            }
            if let Some(c) = cmd {
                let r = self
                    .one_barrier(c.mutation, &c.add_actors, &c.add_sources, &c.remove_actors)
                    .await;
                let _ = c.done.send(r);
            }
        }
    }

    async fn one_barrier(
        &mut self,
        mutation: Option<Mutation>,
        add_actors: &[ActorId],
        add_sources: &[(WorkerId, ActorId)],
        remove_actors: &[ActorId],
    ) -> Result<u64, String> {
        let prev = self.epoch;
        let curr = prev + 1;
        self.epoch = curr;
        let barrier = match mutation {
            Some(m) => Barrier::with_mutation(Epoch { curr, prev }, m),
            None => Barrier::new(Epoch { curr, prev }),
        };
        self.actors.extend(add_actors.iter().copied());
        for (w, a) in add_sources {
            self.sources.insert(*a, *w);
        }
        let mut pending: HashSet<ActorId> = self.actors.clone();
        // inject
        let mut by_worker: HashMap<WorkerId, Vec<ActorId>> = HashMap::new();
        for (a, w) in &self.sources {
            by_worker.entry(*w).or_default().push(*a);
        }
        let nodes: Vec<(Arc<ComputeNode>, Vec<ActorId>)> = {
            let n = self.nodes.read();
            by_worker
                .into_iter()
                .filter_map(|(w, actors)| n.get(&w).map(|node| (node.clone(), actors)))
                .collect()
        };
        for (node, actors) in nodes {
            node.inject_barrier(&barrier, &actors).await;
        }
        // collect
        let mut failure = None;
        while !pending.is_empty() {
            match self.events.recv().await {
                Some(ComputeEvent::Collected { actor_id, epoch }) => {
                    if epoch == curr {
                        pending.remove(&actor_id);
                    }
                }
                Some(ComputeEvent::Failed { actor_id, error }) => {
                    tracing::error!(actor_id, %error, "actor failed; barrier cannot complete");
                    failure = Some(format!("actor {actor_id} failed: {error}"));
                    break;
                }
                None => return Err("compute nodes are gone".into()),
            }
        }
        for a in remove_actors {
            self.actors.remove(a);
            self.sources.remove(a);
        }
        if let Some(f) = failure {
            return Err(f);
        }
        let store = self.store.clone();
        let commit = tokio::task::spawn_blocking(move || store.commit(prev)).await;
        match commit {
            Ok(Ok(())) => {
                let _ = self.committed.send(prev);
                Ok(prev)
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn is_plain(c: &BarrierCommand) -> bool {
    c.mutation.is_none()
        && c.add_actors.is_empty()
        && c.add_sources.is_empty()
        && c.remove_actors.is_empty()
}
