//! An actor: a merge (or a source), a chain of executors and a set of
//! dispatchers, run as one tokio task. See `message.rs` for the barrier
//! protocol it follows.

use std::sync::Arc;

use tokio::sync::{mpsc, watch};
use tokio::time::sleep_until;

use super::exchange::{DispatchSet, ExchangeRegistry, Merge, MergeInput};
use super::executor::stream_scan::wait_committed;
use super::executor::{Committed, Executor};
use super::message::{ActorId, Barrier, FragmentId, Message};
use super::source::SourceReader;
use super::{StreamError, StreamResult};
use ebbflow_common::StreamChunk;
use ebbflow_plan::Mutation;

/// What a compute node reports to meta.
#[derive(Debug, Clone)]
pub enum ComputeEvent {
    /// The actor passed the barrier of epoch `curr`.
    Collected { actor_id: ActorId, epoch: u64 },
    /// The actor stopped with an error it cannot recover from.
    Failed { actor_id: ActorId, error: String },
    /// Meta's failure detector found a compute node down.
    WorkerDown {
        worker: super::compute_node::WorkerId,
    },
    /// Meta needs every job rebuilt (a compute process came back after a
    /// restart, meta itself restarted).
    Recover { reason: String },
}

/// What an actor reads from.
pub enum ActorInput {
    Merge(Merge),
    /// A source connector: barriers come through the merge (its local
    /// channel), data from the reader's splits in between.
    Source {
        merge: Merge,
        reader: Box<SourceReader>,
    },
}

/// How long an actor works through ready input before it lets other tasks
/// run on its worker thread.
const TIME_SLICE: std::time::Duration = std::time::Duration::from_millis(1);

pub struct Actor {
    pub actor_id: ActorId,
    pub fragment_id: FragmentId,
    pub input: ActorInput,
    pub executors: Vec<Box<dyn Executor>>,
    pub dispatch: DispatchSet,
    pub registry: Arc<ExchangeRegistry>,
    pub events: mpsc::UnboundedSender<ComputeEvent>,
    pub committed: watch::Receiver<u64>,
    /// The last epoch whose writes by every actor this actor can read (see
    /// `NodeServices::readable`).
    pub readable: watch::Receiver<u64>,
    /// Fault injection (off when 0): the next chunk an actor of this
    /// fragment processes fails the actor, which makes meta recover.
    pub fault: Arc<std::sync::atomic::AtomicU32>,
    /// Set when the actor's compute node is made to panic (a test fault):
    /// the actor panics at the next message it handles.
    pub panic: Arc<std::sync::atomic::AtomicBool>,
}

impl Actor {
    pub async fn run(mut self) {
        use futures::FutureExt;
        let id = self.actor_id;
        let events = self.events.clone();
        // A panicking executor must not leave meta waiting for a barrier
        // forever: it is reported like any other failure.
        let result = std::panic::AssertUnwindSafe(self.run_inner())
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(StreamError::Internal(format!("actor panicked: {msg}")))
            });
        match result {
            Ok(()) => tracing::debug!(actor_id = id, "actor stopped"),
            Err(e) => {
                tracing::error!(actor_id = id, error = %e, "actor failed");
                let _ = events.send(ComputeEvent::Failed {
                    actor_id: id,
                    error: e.to_string(),
                });
            }
        }
    }

    async fn next_input(&mut self) -> StreamResult<(usize, Message)> {
        match &mut self.input {
            ActorInput::Merge(m) => m.next().await,
            ActorInput::Source { merge, reader } => loop {
                if !reader.is_active() {
                    return merge.next().await;
                }
                if reader.throttled(*self.committed.borrow_and_update()) {
                    // Wait for the commit of the previous epoch (or a
                    // barrier); see `SourceReader`'s throttle.
                    tokio::select! {
                        biased;
                        msg = merge.next() => return msg,
                        changed = self.committed.changed() => {
                            if changed.is_err() {
                                return merge.next().await;
                            }
                            continue;
                        }
                    }
                }
                let due = reader.next_due();
                // A chunk already due skips the timer: tokio rounds a
                // deadline up to the next millisecond tick and fires it
                // only when a worker turns its timer wheel.
                let now = tokio::time::Instant::now();
                return tokio::select! {
                    biased;
                    msg = merge.next() => msg,
                    _ = std::future::ready(()), if due <= now => {
                        Ok((0, Message::Chunk(reader.next_chunk())))
                    }
                    _ = sleep_until(due), if due > now => {
                        Ok((0, Message::Chunk(reader.next_chunk())))
                    }
                };
            },
        }
    }

    async fn run_inner(&mut self) -> StreamResult<()> {
        let mut slice = std::time::Instant::now();
        loop {
            let (input, msg) = self.next_input().await?;
            if self.panic.load(std::sync::atomic::Ordering::Relaxed) {
                panic!("actor {}: its compute node panicked", self.actor_id);
            }
            match msg {
                Message::Chunk(chunk) => {
                    self.push(0, input, vec![chunk]).await?;
                    // An actor whose input is always ready would keep its
                    // worker thread until tokio's budget of 128 channel
                    // reads runs out (tens of ms of work): other actors,
                    // and the barrier they pass on, wait that long. Give
                    // the thread up after each time slice instead.
                    if slice.elapsed() >= TIME_SLICE {
                        tokio::task::yield_now().await;
                        slice = std::time::Instant::now();
                    }
                }
                Message::Barrier(barrier) => {
                    if self.handle_barrier(barrier).await? {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Run chunks through executors `start..` and dispatch the result.
    async fn push(
        &mut self,
        start: usize,
        input: usize,
        chunks: Vec<StreamChunk>,
    ) -> StreamResult<()> {
        self.take_fault()?;
        if start == 0 {
            ebbflow_metrics::rows_in(self.fragment_id, chunks.iter().map(StreamChunk::len).sum());
        }
        let mut cur = chunks;
        let mut inp = input;
        for ex in &mut self.executors[start..] {
            let mut next = Vec::new();
            for c in cur {
                if !c.is_empty() {
                    ex.process_chunk(inp, c, &mut next).await?;
                }
            }
            cur = next;
            inp = 0;
            if cur.is_empty() {
                return Ok(());
            }
        }
        for c in cur {
            let (rows, sent) = (c.len(), std::time::Instant::now());
            self.dispatch.dispatch_chunk(c).await?;
            ebbflow_metrics::chunk_sent(self.fragment_id, rows, sent);
        }
        Ok(())
    }

    /// Fails once if the test fault names this actor's fragment.
    fn take_fault(&self) -> StreamResult<()> {
        use std::sync::atomic::Ordering;
        if self.fault.load(Ordering::Relaxed) == self.fragment_id
            && self
                .fault
                .compare_exchange(self.fragment_id, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            return Err(StreamError::Internal("injected actor failure".into()));
        }
        Ok(())
    }

    /// Returns whether the actor must stop.
    async fn handle_barrier(&mut self, barrier: Barrier) -> StreamResult<bool> {
        let me = self.actor_id;
        // 1. merge input changes: admit new upstreams at this barrier
        if let (Some(Mutation::Update(u)), ActorInput::Merge(m)) =
            (barrier.mutation.as_deref(), &mut self.input)
        {
            if let Some(mu) = u.merges.get(&me) {
                m.remove_inputs(&mu.removed_inputs);
            }
        }
        // An actor added by a scale barrier takes over state (a source
        // offset, groups, join rows) its previous owner wrote up to this
        // barrier: it reads nothing until that epoch is readable (every
        // actor has handed it to the shared store, or it is committed).
        let newly_added = matches!(barrier.mutation.as_deref(),
            Some(Mutation::Update(u)) if u.added_actors.contains(&me));
        if newly_added {
            // The test fault also fails a new actor at its first barrier:
            // a scale that fails mid-way.
            self.take_fault()?;
        }
        // What the actor committed at this barrier: it forwards the barrier
        // only with this proof (nothing to commit for a newly added actor).
        let mut committed = Committed::nothing();
        // 2. sources: offset commit, pause/resume
        if let ActorInput::Source { reader, .. } = &mut self.input {
            if barrier.is_pause() {
                reader.set_paused(true);
            } else if barrier.is_resume() {
                reader.set_paused(false);
            }
            if !newly_added {
                reader.load().await?;
                committed = reader.commit(barrier.epoch.prev, barrier.epoch.curr)?;
            }
        }
        // 3. executors flush and commit, in chain order. An actor added by
        // this barrier has processed nothing yet and must not read state
        // (a global aggregate or top-N loads its state at a barrier) before
        // the previous owner's last epoch is readable: it skips this step.
        let flush_started = std::time::Instant::now();
        let mut watermarks = match &mut self.input {
            ActorInput::Merge(m) => m.take_watermarks(),
            // Barriers come from meta: the watermarks are the reader's.
            ActorInput::Source { reader, .. } if !newly_added => vec![reader.watermarks().await?],
            ActorInput::Source { .. } => Vec::new(),
        };
        for i in 0..self.executors.len() {
            if newly_added {
                watermarks.clear();
                break;
            }
            watermarks = vec![self.executors[i].process_watermarks(&watermarks).await?];
            let mut out = Vec::new();
            let done = self.executors[i]
                .process_barrier(&barrier, &mut out)
                .await?;
            committed = committed.and(done);
            if !out.is_empty() {
                self.push(i + 1, 0, out).await?;
            }
        }
        // How long the barrier's own work held it here (state flushes and
        // the changes they emit): part of every barrier's collection time.
        tracing::debug!(
            actor_id = me,
            epoch = barrier.epoch.curr,
            flush_ms = flush_started.elapsed().as_secs_f64() * 1000.0,
            "barrier flushed"
        );
        // 4. forward, with the output's watermarks
        let mut barrier = barrier;
        barrier.watermarks = match watermarks.len() {
            1 => watermarks.pop().unwrap_or_default(),
            // No executor between several inputs and the output.
            _ => Vec::new(),
        };
        self.dispatch
            .dispatch_barrier(&barrier, &self.registry, committed)
            .await?;
        let _ = self.events.send(ComputeEvent::Collected {
            actor_id: me,
            epoch: barrier.epoch.curr,
        });
        if barrier.stops(me) {
            return Ok(true);
        }
        // 5. new vnodes: their state was last written by another actor
        if let Some(bitmap) = barrier.new_bitmap(me) {
            for ex in &mut self.executors {
                ex.update_vnodes(bitmap).await;
            }
            wait_committed(&mut self.readable, barrier.epoch.prev).await?;
            if let ActorInput::Source { reader, .. } = &mut self.input {
                reader.update_vnodes(bitmap.clone());
                reader.load().await?;
            }
        } else if newly_added {
            wait_committed(&mut self.readable, barrier.epoch.prev).await?;
            if let ActorInput::Source { reader, .. } = &mut self.input {
                reader.load().await?;
            }
        }
        for i in 0..self.executors.len() {
            let mut out = Vec::new();
            self.executors[i].after_barrier(&barrier, &mut out).await?;
            if !out.is_empty() {
                self.push(i + 1, 0, out).await?;
            }
        }
        Ok(false)
    }
}

/// A merge input from `registry` for each upstream actor.
pub fn merge_inputs(
    registry: &ExchangeRegistry,
    me: ActorId,
    inputs: &[(usize, Vec<ActorId>)],
) -> Vec<MergeInput> {
    inputs
        .iter()
        .flat_map(|(index, ups)| {
            ups.iter().map(move |&up| MergeInput {
                input_index: *index,
                upstream: Some(up),
                rx: registry.take_receiver(up, me),
            })
        })
        .collect()
}

impl From<tokio::sync::mpsc::error::SendError<Message>> for StreamError {
    fn from(_: tokio::sync::mpsc::error::SendError<Message>) -> Self {
        StreamError::Internal("channel closed".into())
    }
}
