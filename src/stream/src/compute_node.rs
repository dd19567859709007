//! A compute node: hosts actors on its parallel units, injects barriers
//! into its source actors and reports their collection to meta.
//!
//! Meta drives compute nodes through [`ComputeClient`], the Rust face of
//! the meta ↔ compute contract (`src/rpc/proto/ebbflow/cluster.proto`): the
//! playground's nodes implement it in process ([`ComputeNode`]), a
//! compute process is reached through its gRPC client
//! (`rpc::compute::RemoteCompute` in the binary crate).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;

use super::actor::ComputeEvent;
use super::build::{build_actor, BuildContext};
use super::channel::{self, Sender, CHANNEL_ROWS};
use super::exchange::ExchangeRegistry;
use super::message::{ActorId, Barrier, Message};
use ebbflow_plan::{ActorDesc, SourceDesc};
use ebbflow_storage::{SstInfo, StateStore, StorageResult};

pub use ebbflow_common::WorkerId;

/// How often a compute node's heartbeat task beats.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(100);

/// The services every compute node of a cluster shares.
#[derive(Clone)]
pub struct NodeServices {
    pub store: Arc<dyn StateStore>,
    pub registry: Arc<ExchangeRegistry>,
    pub events: mpsc::UnboundedSender<ComputeEvent>,
    pub committed: watch::Receiver<u64>,
    /// The last epoch whose writes every actor can read from `store`:
    /// collected, when every compute node shares the store (the
    /// playground), else committed. An actor that takes over state at a
    /// scale waits for it.
    pub readable: watch::Receiver<u64>,
    pub fault: Arc<std::sync::atomic::AtomicU32>,
}

/// Why a compute node did not do what meta asked.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The node is down (killed, or its process stopped answering).
    #[error("compute node {0} is down")]
    Down(WorkerId),
    /// The node's process has not registered with meta yet (after meta
    /// restarted).
    #[error("the compute process has not registered yet")]
    NotRegistered,
    /// The node's process cannot be reached at the address it gave.
    #[error("cannot reach compute node {worker}: {message}")]
    Unreachable { worker: WorkerId, message: String },
    /// A call to the node's process failed.
    #[error("{what} on compute node {worker} ({address}): {message}")]
    Call {
        worker: WorkerId,
        address: String,
        what: &'static str,
        message: String,
    },
    /// An actor's description could not be encoded for the node.
    #[error("actor description: {0}")]
    Encode(String),
}

pub type NodeResult<T> = Result<T, NodeError>;

/// What meta asks of a compute node. Every call is one message of the
/// contract; a node that is gone answers with an error or not at all, and
/// meta learns it is down from its heartbeat.
#[async_trait]
pub trait ComputeClient: Send + Sync + 'static {
    /// Whether the node is up: it beat within `timeout` and was not killed.
    fn is_alive(&self, timeout: Duration) -> bool;
    /// Stop using the node: its actors are aborted (in process) or it is
    /// disconnected and fenced (a process). Nothing more is sent to it.
    fn kill(&self);
    /// Test fault: every task of the node panics.
    fn inject_panic(&self);
    /// Where every actor of the cluster runs (for the remote exchange);
    /// sent before the barrier that wires new actors in.
    async fn update_locations(&self, _locations: Arc<ActorLocations>) -> NodeResult<()> {
        Ok(())
    }
    /// Build and start actors; each waits for its first barrier.
    async fn build_actors(&self, descs: Vec<ActorDesc>) -> NodeResult<()>;
    /// The channel of a source actor (DML and barriers), kept in order.
    fn local_sender(&self, actor: ActorId) -> Option<Sender>;
    /// Inject `barrier` into the given source actors of this node.
    async fn inject_barrier(&self, barrier: &Barrier, actors: &[ActorId]) {
        let senders: Vec<_> = actors
            .iter()
            .filter_map(|a| self.local_sender(*a))
            .collect();
        for tx in senders {
            // A closed channel means the actor failed; meta learns that
            // from its failure event.
            let _ = tx.send(Message::Barrier(barrier.clone())).await;
        }
    }
    /// Forget actors that stopped themselves (dropped by a barrier).
    fn forget_actors(&self, ids: &[ActorId]);
    /// Stop every actor at once (shutdown).
    fn abort_all(&self);
    /// Stop every actor and wait until all have ended, so no event of the
    /// old actors arrives after this returns; a node with a store of its
    /// own drops its uncommitted writes and moves to recovery `generation`
    /// (what was sent in an older one is refused).
    async fn reset(&self, generation: u64) -> NodeResult<()>;
    /// A heartbeat from the node's process arrived; false if meta does not
    /// take heartbeats for it (it must register again).
    fn heartbeat(&self) -> bool {
        false
    }
    /// Make the node's writes of epochs `<= epoch` durable and return its
    /// files; `None` for a node that shares meta's store (the playground),
    /// which meta syncs itself.
    async fn sync(&self, _epoch: u64) -> Option<StorageResult<Vec<SstInfo>>> {
        None
    }
    /// Actors the node runs.
    fn actor_count(&self) -> usize;
}

/// Where actors run: the worker of each actor and the RPC address of each
/// worker. A compute process uses it to reach the downstream actors of its
/// dispatchers on other processes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ActorLocations {
    pub actors: HashMap<ActorId, WorkerId>,
    pub addresses: HashMap<WorkerId, String>,
}

struct ActorHandle {
    join: JoinHandle<()>,
    /// Barrier injection and DML (source actors only).
    local_tx: Option<Sender>,
}

pub struct ComputeNode {
    pub id: WorkerId,
    ctx: BuildContext,
    actors: Mutex<HashMap<ActorId, ActorHandle>>,
    /// Beats every [`HEARTBEAT_INTERVAL`]; a node whose heartbeat task
    /// ended (killed, panicked) or stopped beating is down.
    heartbeat: Mutex<Option<JoinHandle<()>>>,
    last_beat: Arc<Mutex<Instant>>,
    /// Test fault: every task of the node panics (see [`Self::inject_panic`]).
    panic: Arc<AtomicBool>,
    wake: Arc<Notify>,
    killed: AtomicBool,
}

impl ComputeNode {
    /// Start a node (and its heartbeat). Must run inside the runtime.
    pub fn new(id: WorkerId, services: &NodeServices) -> Self {
        let panic = Arc::new(AtomicBool::new(false));
        let wake = Arc::new(Notify::new());
        let last_beat = Arc::new(Mutex::new(Instant::now()));
        let heartbeat = tokio::spawn(heartbeat(
            id,
            last_beat.clone(),
            panic.clone(),
            wake.clone(),
        ));
        ComputeNode {
            id,
            ctx: BuildContext {
                store: services.store.clone(),
                registry: services.registry.clone(),
                events: services.events.clone(),
                committed: services.committed.clone(),
                readable: services.readable.clone(),
                fault: services.fault.clone(),
                panic: panic.clone(),
            },
            actors: Mutex::new(HashMap::new()),
            heartbeat: Mutex::new(Some(heartbeat)),
            last_beat,
            panic,
            wake,
            killed: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl ComputeClient for ComputeNode {
    /// Whether the node is up: not killed, its heartbeat task still runs
    /// and beat within `timeout`.
    fn is_alive(&self, timeout: Duration) -> bool {
        !self.killed.load(Ordering::SeqCst)
            && self
                .heartbeat
                .lock()
                .as_ref()
                .is_some_and(|h| !h.is_finished())
            && self.last_beat.lock().elapsed() < timeout
    }

    /// Test fault: stop the node abruptly. Its actors and heartbeat are
    /// aborted; nothing is reported to meta, which notices the silence.
    /// The actors' handles stay: the recovery waits for every aborted actor
    /// to end (an actor caught mid-poll could otherwise still write state
    /// after the recovery discarded the uncommitted epochs).
    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(h) = self.heartbeat.lock().take() {
            h.abort();
        }
        for h in self.actors.lock().values() {
            h.join.abort();
        }
    }

    /// Test fault: every task of the node panics — the heartbeat at once,
    /// each actor at the next message it handles.
    fn inject_panic(&self) {
        self.panic.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Build and start actors; each waits for its first barrier. A node
    /// that is down builds nothing.
    async fn build_actors(&self, descs: Vec<ActorDesc>) -> NodeResult<()> {
        if self.killed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut actors = self.actors.lock();
        for desc in &descs {
            let (local_tx, local_rx) = match desc.source {
                SourceDesc::None => (None, None),
                _ => {
                    let (tx, rx) = channel::channel(CHANNEL_ROWS);
                    (Some(tx), Some(rx))
                }
            };
            let actor = build_actor(desc, &self.ctx, local_rx);
            let join = tokio::spawn(actor.run());
            actors.insert(desc.actor_id, ActorHandle { join, local_tx });
        }
        Ok(())
    }

    /// The local channel of a source actor (for DML and barriers).
    fn local_sender(&self, actor: ActorId) -> Option<Sender> {
        self.actors
            .lock()
            .get(&actor)
            .and_then(|a| a.local_tx.clone())
    }

    /// Forget actors that stopped themselves (dropped by a barrier).
    fn forget_actors(&self, ids: &[ActorId]) {
        let mut actors = self.actors.lock();
        for id in ids {
            actors.remove(id);
        }
    }

    /// Stop every actor at once (shutdown).
    fn abort_all(&self) {
        for (_, h) in self.actors.lock().drain() {
            h.join.abort();
        }
    }

    /// Stop every actor and wait until all have ended, so no event of the
    /// old actors can arrive after this returns (recovery).
    async fn reset(&self, _generation: u64) -> NodeResult<()> {
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
        Ok(())
    }

    fn actor_count(&self) -> usize {
        self.actors.lock().len()
    }
}

async fn heartbeat(
    id: WorkerId,
    last_beat: Arc<Mutex<Instant>>,
    panic: Arc<AtomicBool>,
    wake: Arc<Notify>,
) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(HEARTBEAT_INTERVAL) => {}
            _ = wake.notified() => {}
        }
        if panic.load(Ordering::SeqCst) {
            panic!("compute node {id}: injected panic");
        }
        *last_beat.lock() = Instant::now();
    }
}
