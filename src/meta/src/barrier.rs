//! The barrier manager: injects a barrier into every source actor every
//! `barrier_interval`, or at once when asked (FLUSH, DDL, scaling), collects
//! it from every actor, and commits the epoch it closes.
//!
//! One barrier is in flight at a time. The set of actors to collect and of
//! source actors to inject into is owned here and changed only by the
//! commands that carry the corresponding mutation, so a periodic barrier
//! never waits for an actor that is not wired in yet.

use ebbflow_common::ErrorKind;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot, watch};

use ebbflow_plan::Mutation;
use ebbflow_storage::{EpochCommitter, SstInfo, StateStore};
use ebbflow_stream::actor::ComputeEvent;
use ebbflow_stream::compute_node::{ComputeClient, WorkerId};
use ebbflow_stream::message::{ActorId, Barrier, Epoch};

/// Whether the cluster is failed — from a failure until the first barrier
/// of the recovery is injected — and how many failures there were. DML
/// waits while it is failed (its rows would reach actors the recovery
/// discards), and a flush reports a failure that happened after the rows
/// it vouches for were sent.
pub struct FailureState {
    failed: watch::Sender<bool>,
    generation: std::sync::atomic::AtomicU64,
}

impl Default for FailureState {
    fn default() -> Self {
        FailureState {
            failed: watch::Sender::new(false),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl FailureState {
    fn fail(&self) {
        // Failed first, then the generation: a writer that read the new
        // generation then sees the cluster failed.
        self.failed.send_replace(true);
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn clear(&self) {
        self.failed.send_replace(false);
    }

    pub fn is_failed(&self) -> bool {
        *self.failed.borrow()
    }

    /// Failures so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Wait until the cluster is not failed; false after `limit`.
    pub async fn wait_running(&self, limit: Duration) -> bool {
        let mut rx = self.failed.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|f| !*f))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// What one barrier carries and changes.
#[derive(Default)]
pub struct BarrierSpec {
    pub mutation: Option<Mutation>,
    /// Actors that start collecting from this barrier on.
    pub add_actors: Vec<ActorId>,
    /// Source actors to inject into from this barrier on, by worker.
    pub add_sources: Vec<(WorkerId, ActorId)>,
    /// Actors that stop after this barrier.
    pub remove_actors: Vec<ActorId>,
    /// The serialized catalog to commit with this barrier's new epoch.
    pub meta_snapshot: Option<bytes::Bytes>,
    /// Told once the barrier is injected into every source (before it is
    /// collected and committed).
    pub injected: Option<oneshot::Sender<()>>,
    /// Told once the epoch the barrier closes is readable by the actors
    /// that take over state at it (see `NodeServices::readable`).
    pub readable: Option<oneshot::Sender<()>>,
}

impl BarrierSpec {
    fn is_plain(&self) -> bool {
        self.mutation.is_none()
            && self.meta_snapshot.is_none()
            && self.add_actors.is_empty()
            && self.add_sources.is_empty()
            && self.remove_actors.is_empty()
            && self.injected.is_none()
            && self.readable.is_none()
    }
}

/// Why a barrier did not commit (every waiter of the barrier gets a
/// copy). [`BarrierError::kind`] says what a client sees.
#[derive(Clone, Debug, thiserror::Error)]
pub enum BarrierError {
    /// An actor of a job failed: an internal error of that job.
    #[error("actor {actor_id} failed: {error}")]
    ActorFailed { actor_id: ActorId, error: String },
    /// A compute node went down while the barrier was in flight.
    #[error("compute node {0} is down")]
    WorkerDown(WorkerId),
    /// A recovery began while the barrier was in flight.
    #[error("{0}")]
    Interrupted(String),
    /// The cluster is recovering; only plain flushes wait for it.
    #[error("the cluster is recovering from a failure; try again")]
    Recovering,
    /// The compute nodes' event channel closed: the process is stopping.
    #[error("compute nodes are gone")]
    ComputeGone,
    /// Meta's own writes (a state key migration) could not be staged.
    #[error("state migration failed: {0}")]
    StateMigration(String),
    /// The epoch's writes could not be made durable (object store).
    #[error("sync of epoch {epoch} failed: {error}")]
    Sync { epoch: u64, error: String },
    /// The epoch could not be committed (meta store).
    #[error("commit of epoch {epoch} failed: {error}")]
    Commit { epoch: u64, error: String },
}

impl BarrierError {
    /// What a statement that waited on this barrier fails with: a job's
    /// internal failure is an internal error; a node that died is a system
    /// error; a recovery under way means try again (PostgreSQL's "cannot
    /// connect now"); the stores failing is an I/O error; a stopping
    /// process is an admin shutdown. Nothing a barrier does was applied
    /// when it fails: the old layout stays committed.
    pub fn kind(&self) -> ErrorKind {
        match self {
            BarrierError::ActorFailed { .. } => ErrorKind::InternalError,
            BarrierError::WorkerDown(_) => ErrorKind::SystemError,
            BarrierError::Interrupted(_) | BarrierError::Recovering => ErrorKind::CannotConnectNow,
            BarrierError::ComputeGone => ErrorKind::AdminShutdown,
            BarrierError::StateMigration(_)
            | BarrierError::Sync { .. }
            | BarrierError::Commit { .. } => ErrorKind::IoError,
        }
    }
}

/// A request for a barrier now.
pub struct BarrierCommand {
    pub spec: BarrierSpec,
    /// After a recovery: the complete sets of actors and sources of the
    /// rebuilt cluster, replacing the old ones.
    pub reset: Option<ResetInfo>,
    /// Answered with the epoch the barrier closed, once it is committed.
    pub done: oneshot::Sender<Result<u64, BarrierError>>,
}

/// The rebuilt cluster after a recovery.
pub struct ResetInfo {
    pub actors: Vec<ActorId>,
    pub sources: Vec<(WorkerId, ActorId)>,
    /// Writes of meta's own to commit with the reset barrier's epoch,
    /// before any actor runs (a state key migration).
    pub writes: Vec<ebbflow_storage::KeyedWrite>,
}

pub struct BarrierManager {
    /// The compute nodes' store: synced for each epoch before it commits.
    store: Arc<dyn StateStore>,
    committer: Arc<dyn EpochCommitter>,
    nodes: Arc<RwLock<HashMap<WorkerId, Arc<dyn ComputeClient>>>>,
    events: mpsc::UnboundedReceiver<ComputeEvent>,
    commands: mpsc::UnboundedReceiver<BarrierCommand>,
    committed: watch::Sender<u64>,
    /// With compute nodes that share `store` (the playground): the last
    /// epoch every actor has collected, so its writes are in the store.
    /// `None`: each node has its own store, and an epoch is readable by
    /// other nodes once committed.
    readable: Option<watch::Sender<u64>>,
    interval: Duration,
    epoch: u64,
    actors: HashSet<ActorId>,
    sources: HashMap<ActorId, WorkerId>,
    /// Told when a barrier fails: meta then rebuilds every actor from the
    /// last committed epoch and sends a `reset` command.
    recovery: mpsc::UnboundedSender<String>,
    /// Set from a failure until the reset: no barrier is injected, plain
    /// flushes wait, mutations are refused.
    failed: bool,
    deferred: Vec<BarrierCommand>,
    /// Held exclusively while a barrier is injected, shared by each DML
    /// statement while it sends: a statement never straddles two epochs.
    dml_gate: Arc<tokio::sync::RwLock<()>>,
    failure_state: Arc<FailureState>,
    /// Set by a reset: the failure ends once the reset's barrier is
    /// injected.
    clear_on_inject: bool,
}

impl BarrierManager {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Arc<dyn StateStore>,
        committer: Arc<dyn EpochCommitter>,
        nodes: Arc<RwLock<HashMap<WorkerId, Arc<dyn ComputeClient>>>>,
        events: mpsc::UnboundedReceiver<ComputeEvent>,
        commands: mpsc::UnboundedReceiver<BarrierCommand>,
        committed: watch::Sender<u64>,
        readable: Option<watch::Sender<u64>>,
        interval: Duration,
        recovery: mpsc::UnboundedSender<String>,
        dml_gate: Arc<tokio::sync::RwLock<()>>,
        failure_state: Arc<FailureState>,
    ) -> Self {
        // The first barrier closes an epoch after the committed one (see
        // `while_failed`).
        let epoch = committer.committed_epoch() + 1;
        BarrierManager {
            store,
            committer,
            nodes,
            events,
            commands,
            committed,
            readable,
            interval,
            epoch,
            actors: HashSet::new(),
            sources: HashMap::new(),
            recovery,
            failed: false,
            deferred: Vec::new(),
            dml_gate,
            failure_state,
            clear_on_inject: false,
        }
    }

    /// While failed: handle one command without injecting anything.
    /// Returns a command to run normally (after a reset).
    async fn while_failed(&mut self, c: BarrierCommand) {
        if let Some(reset) = c.reset {
            // Events of the aborted actors are meaningless now.
            while self.events.try_recv().is_ok() {}
            self.actors = reset.actors.into_iter().collect();
            self.sources = reset.sources.into_iter().map(|(w, a)| (a, w)).collect();
            // The recovery barrier closes an epoch after the committed
            // one: what actors write before it must not share an epoch
            // with committed files, or reads could not order the two.
            self.epoch = self.epoch.max(self.committer.committed_epoch() + 1);
            // Meta's writes belong to the epoch this barrier closes.
            if !reset.writes.is_empty() {
                if let Err(e) = self.store.ingest(self.epoch, reset.writes) {
                    let _ = c
                        .done
                        .send(Err(BarrierError::StateMigration(e.to_string())));
                    return;
                }
            }
            self.failed = false;
            self.clear_on_inject = true;
            let r = self.one_barrier(c.spec).await;
            let _ = c.done.send(r.clone());
            for d in std::mem::take(&mut self.deferred) {
                let _ = d.done.send(r.clone());
            }
        } else if is_plain(&c) {
            self.deferred.push(c);
        } else {
            let _ = c.done.send(Err(BarrierError::Recovering));
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
                // Between barriers: a failure starts the recovery at once.
                e = self.events.recv(), if !self.failed => {
                    match e {
                        Some(ComputeEvent::Failed { actor_id, error }) => {
                            tracing::error!(actor_id, %error, "actor failed between barriers");
                            self.fail(&format!("actor {actor_id} failed: {error}"));
                        }
                        Some(ComputeEvent::WorkerDown { worker }) => {
                            self.fail(&format!("compute node {worker} is down"));
                        }
                        Some(ComputeEvent::Recover { reason }) => self.fail(&reason),
                        Some(ComputeEvent::Collected { .. }) => {}
                        None => return,
                    }
                    continue;
                }
            };
            if self.failed {
                if let Some(c) = cmd {
                    self.while_failed(c).await;
                }
                continue;
            }
            if cmd.as_ref().is_some_and(|c| c.reset.is_some()) {
                if let Some(c) = cmd {
                    self.while_failed(c).await;
                }
                continue;
            }
            // Batch every waiting plain flush onto one barrier.
            let mut waiters = Vec::new();
            let mut cmd = cmd;
            if cmd.as_ref().is_some_and(is_plain) || cmd.is_none() {
                if let Some(c) = cmd.take() {
                    waiters.push(c.done);
                }
                while let Ok(c) = self.commands.try_recv() {
                    if is_plain(&c) && c.reset.is_none() {
                        waiters.push(c.done);
                    } else {
                        cmd = Some(c);
                        break;
                    }
                }
            }
            // A plain barrier first if a mutation was queued behind flushes.
            if !waiters.is_empty() || cmd.is_none() {
                let r = self.one_barrier(BarrierSpec::default()).await;
                for w in waiters.drain(..) {
                    let _ = w.send(r.clone());
                }
            }
            if let Some(c) = cmd.take_if(|c| c.reset.is_some()) {
                // A reset drained behind flushes (restart or recovery).
                self.while_failed(c).await;
            }
            if let Some(c) = cmd {
                let r = self.one_barrier(c.spec).await;
                let _ = c.done.send(r);
            }
        }
    }

    async fn one_barrier(&mut self, spec: BarrierSpec) -> Result<u64, BarrierError> {
        let BarrierSpec {
            mutation,
            add_actors,
            add_sources,
            remove_actors,
            meta_snapshot,
            injected,
            mut readable,
        } = spec;
        let prev = self.epoch;
        let curr = prev + 1;
        self.epoch = curr;
        let barrier = match mutation {
            Some(m) => Barrier::with_mutation(Epoch { curr, prev }, m),
            None => Barrier::new(Epoch { curr, prev }),
        };
        self.actors.extend(add_actors.iter().copied());
        for (w, a) in add_sources {
            self.sources.insert(a, w);
        }
        let started = std::time::Instant::now();
        let mut pending: HashSet<ActorId> = self.actors.clone();
        // inject
        let mut by_worker: HashMap<WorkerId, Vec<ActorId>> = HashMap::new();
        for (a, w) in &self.sources {
            by_worker.entry(*w).or_default().push(*a);
        }
        let nodes: Vec<(Arc<dyn ComputeClient>, Vec<ActorId>)> = {
            let n = self.nodes.read();
            by_worker
                .into_iter()
                .filter_map(|(w, actors)| n.get(&w).map(|node| (node.clone(), actors)))
                .collect()
        };
        {
            let _gate = self.dml_gate.write().await;
            for (node, actors) in nodes {
                node.inject_barrier(&barrier, &actors).await;
            }
            if std::mem::take(&mut self.clear_on_inject) {
                self.failure_state.clear();
            }
        }
        if let Some(tx) = injected {
            let _ = tx.send(());
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
                    failure = Some(BarrierError::ActorFailed { actor_id, error });
                    break;
                }
                Some(ComputeEvent::WorkerDown { worker }) => {
                    failure = Some(BarrierError::WorkerDown(worker));
                    break;
                }
                Some(ComputeEvent::Recover { reason }) => {
                    failure = Some(BarrierError::Interrupted(reason));
                    break;
                }
                None => return Err(BarrierError::ComputeGone),
            }
        }
        for a in &remove_actors {
            self.actors.remove(a);
            self.sources.remove(a);
        }
        if let Some(f) = failure {
            self.fail(&f.to_string());
            return Err(f);
        }
        if let Some(shared) = &self.readable {
            shared.send_replace(prev);
            if let Some(tx) = readable.take() {
                let _ = tx.send(());
            }
        }
        // Every actor has handed its writes of `prev` to the store: make
        // them durable, then commit them. The catalog after this barrier's
        // change is committed with the epoch the barrier closes: recovering
        // from that epoch rebuilds the new layout, whose actors read the
        // state committed up to it (as they do when the barrier passes),
        // and a failed barrier leaves the old catalog committed. Both steps
        // retry transient faults of the object and meta stores themselves,
        // so an error here is final for this epoch.
        let collected = started.elapsed();
        let files = match self.sync_all(prev).await {
            Ok(files) => files,
            Err(e) => {
                let e = BarrierError::Sync {
                    epoch: prev,
                    error: e.to_string(),
                };
                self.fail(&e.to_string());
                return Err(e);
            }
        };
        self.committer.write_stall().await;
        let synced = started.elapsed();
        let file_count = files.len();
        match self
            .committer
            .commit_epoch(prev, files, meta_snapshot)
            .await
        {
            Ok(()) => {
                tracing::debug!(
                    epoch = prev,
                    collect_ms = collected.as_millis() as u64,
                    sync_ms = (synced - collected).as_millis() as u64,
                    commit_ms = (started.elapsed() - synced).as_millis() as u64,
                    files = file_count,
                    "barrier committed"
                );
                let _ = self.committed.send(prev);
                if let Some(tx) = readable.take() {
                    let _ = tx.send(());
                }
                ebbflow_metrics::barrier_committed(prev, started.elapsed());
                Ok(prev)
            }
            Err(e) => {
                let e = BarrierError::Commit {
                    epoch: prev,
                    error: e.to_string(),
                };
                self.fail(&e.to_string());
                Err(e)
            }
        }
    }

    /// Sync epoch `prev` everywhere it was written: meta's store (which
    /// the playground's nodes share) and each node with a store of its own.
    async fn sync_all(&self, prev: u64) -> ebbflow_storage::StorageResult<Vec<SstInfo>> {
        let nodes: Vec<Arc<dyn ComputeClient>> = self.nodes.read().values().cloned().collect();
        let (shared, own) = tokio::join!(
            self.store.sync(prev),
            futures::future::join_all(nodes.iter().map(|n| n.sync(prev)))
        );
        let mut files = shared?;
        for r in own.into_iter().flatten() {
            files.extend(r?);
        }
        Ok(files)
    }

    fn fail(&mut self, reason: &str) {
        self.failed = true;
        self.failure_state.fail();
        let _ = self.recovery.send(reason.to_string());
    }
}

fn is_plain(c: &BarrierCommand) -> bool {
    c.reset.is_none() && c.spec.is_plain()
}
