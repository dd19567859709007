//! A compute node: hosts actors on its parallel units, injects barriers
//! into its source actors and reports their collection to meta.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::actor::ComputeEvent;
use super::build::{build_actor, ActorDesc, BuildContext, SourceDesc};
use super::exchange::{ExchangeRegistry, CHANNEL_CAPACITY};
use super::message::{ActorId, Barrier, Message};
use crate::storage::StateStore;

pub type WorkerId = u32;

struct ActorHandle {
    join: JoinHandle<()>,
    /// Barrier injection and DML (source actors only).
    local_tx: Option<mpsc::Sender<Message>>,
}

pub struct ComputeNode {
    pub id: WorkerId,
    ctx: BuildContext,
    actors: Mutex<HashMap<ActorId, ActorHandle>>,
}

impl ComputeNode {
    pub fn new(
        id: WorkerId,
        store: Arc<dyn StateStore>,
        registry: Arc<ExchangeRegistry>,
        events: mpsc::UnboundedSender<ComputeEvent>,
        committed: watch::Receiver<u64>,
        fault: Arc<std::sync::atomic::AtomicU32>,
    ) -> Self {
        ComputeNode {
            id,
            ctx: BuildContext {
                store,
                registry,
                events,
                committed,
                fault,
            },
            actors: Mutex::new(HashMap::new()),
        }
    }

    /// Build and start actors; each waits for its first barrier.
    pub fn build_actors(&self, descs: &[ActorDesc]) {
        let mut actors = self.actors.lock();
        for desc in descs {
            let (local_tx, local_rx) = match desc.source {
                SourceDesc::None => (None, None),
                _ => {
                    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
                    (Some(tx), Some(rx))
                }
            };
            let actor = build_actor(desc, &self.ctx, local_rx);
            let join = tokio::spawn(actor.run());
            actors.insert(desc.actor_id, ActorHandle { join, local_tx });
        }
    }

    /// The local channel of a source actor (for DML and barriers).
    pub fn local_sender(&self, actor: ActorId) -> Option<mpsc::Sender<Message>> {
        self.actors
            .lock()
            .get(&actor)
            .and_then(|a| a.local_tx.clone())
    }

    /// Inject `barrier` into the given source actors of this node.
    pub async fn inject_barrier(&self, barrier: &Barrier, actors: &[ActorId]) {
        let senders: Vec<_> = {
            let map = self.actors.lock();
            actors
                .iter()
                .filter_map(|a| map.get(a).and_then(|h| h.local_tx.clone()))
                .collect()
        };
        for tx in senders {
            // A closed channel means the actor failed; meta learns that
            // from its failure event.
            let _ = tx.send(Message::Barrier(barrier.clone())).await;
        }
    }

    /// Forget actors that stopped themselves (dropped by a barrier).
    pub fn forget_actors(&self, ids: &[ActorId]) {
        let mut actors = self.actors.lock();
        for id in ids {
            actors.remove(id);
        }
    }

    /// Stop every actor at once (shutdown).
    pub fn abort_all(&self) {
        for (_, h) in self.actors.lock().drain() {
            h.join.abort();
        }
    }

    /// Stop every actor and wait until all have ended, so no event of the
    /// old actors can arrive after this returns (recovery).
    pub async fn abort_all_and_wait(&self) {
        let handles: Vec<JoinHandle<()>> = self
            .actors
            .lock()
            .drain()
            .map(|(_, h)| {
                h.join.abort();
                h.join
            })
            .collect();
        for h in handles {
            let _ = h.await;
        }
    }

    pub fn actor_count(&self) -> usize {
        self.actors.lock().len()
    }
}
