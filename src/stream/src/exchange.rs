//! Moving messages between actors: the channel registry, the merge that
//! aligns barriers over an actor's inputs, and the dispatchers.

use std::collections::HashMap;
use std::future::poll_fn;
use std::task::Poll;

use arrow_buffer::BooleanBuffer;
use parking_lot::Mutex;

use super::channel::{self, Receiver, Sender, CHANNEL_ROWS};
use super::message::{ActorId, Barrier, FragmentId, Message, Watermark};
use super::{StreamError, StreamResult};
use ebbflow_common::encoding::vnodes_of_column_rows;
use ebbflow_common::{Op, StreamChunk};
use ebbflow_plan::{DispatcherDesc, DispatcherKind, Mutation};
use ebbflow_storage::state_table::Committed;

type Channel = (Option<Sender>, Option<Receiver>);

/// The senders of a compute process to actors on other processes (the
/// remote exchange).
pub trait RemoteOutputs: Send + Sync {
    /// A channel from `up` to `down` when `down` runs on another process;
    /// `None` when it runs here.
    fn sender(&self, up: ActorId, down: ActorId) -> Option<Sender>;
}

/// Rendezvous for the two ends of every actor-to-actor channel. The
/// upstream side takes the sender and the downstream side the receiver, in
/// either order; the pair is forgotten once both are taken. In a compute
/// process, a sender to an actor on another process comes from the remote
/// exchange instead.
#[derive(Default)]
pub struct ExchangeRegistry {
    channels: Mutex<HashMap<(ActorId, ActorId), Channel>>,
    remote: parking_lot::RwLock<Option<std::sync::Arc<dyn RemoteOutputs>>>,
    /// The recovery generation the channels belong to (compute processes;
    /// see [`Self::take_sender_in`]).
    generation: std::sync::atomic::AtomicU64,
}

impl ExchangeRegistry {
    /// Route senders to actors on other processes through `remote`.
    pub fn set_remote(&self, remote: std::sync::Arc<dyn RemoteOutputs>) {
        *self.remote.write() = Some(remote);
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Forget every channel and move to `generation` (recovery).
    pub fn reset(&self, generation: u64) {
        let mut chans = self.channels.lock();
        self.generation
            .store(generation, std::sync::atomic::Ordering::SeqCst);
        chans.clear();
    }

    /// The local sender of a pair, for messages that arrived over the
    /// network in `generation`; `None` once the registry moved on (what a
    /// stale stream sends must never reach a rebuilt actor).
    pub fn take_sender_in(&self, generation: u64, up: ActorId, down: ActorId) -> Option<Sender> {
        let mut chans = self.channels.lock();
        if self.generation() != generation {
            return None;
        }
        Some(Self::take_sender_locked(&mut chans, up, down))
    }

    pub fn take_sender(&self, up: ActorId, down: ActorId) -> Sender {
        let remote = self.remote.read().clone();
        if let Some(tx) = remote.and_then(|r| r.sender(up, down)) {
            return tx;
        }
        Self::take_sender_locked(&mut self.channels.lock(), up, down)
    }

    fn take_sender_locked(
        chans: &mut HashMap<(ActorId, ActorId), Channel>,
        up: ActorId,
        down: ActorId,
    ) -> Sender {
        let entry = chans.entry((up, down)).or_insert_with(|| {
            let (tx, rx) = channel::channel(CHANNEL_ROWS);
            (Some(tx), Some(rx))
        });
        let tx = entry.0.take();
        if entry.1.is_none() {
            chans.remove(&(up, down));
        }
        tx.unwrap_or_else(|| {
            // Taken twice (a rebuilt actor): make a fresh pair.
            let (tx, rx) = channel::channel(CHANNEL_ROWS);
            chans.insert((up, down), (None, Some(rx)));
            tx
        })
    }

    pub fn take_receiver(&self, up: ActorId, down: ActorId) -> Receiver {
        let mut chans = self.channels.lock();
        let entry = chans.entry((up, down)).or_insert_with(|| {
            let (tx, rx) = channel::channel(CHANNEL_ROWS);
            (Some(tx), Some(rx))
        });
        let rx = entry.1.take();
        if entry.0.is_none() {
            chans.remove(&(up, down));
        }
        rx.unwrap_or_else(|| {
            let (tx, rx) = channel::channel(CHANNEL_ROWS);
            chans.insert((up, down), (Some(tx), None));
            rx
        })
    }

    /// Forget every channel (recovery rebuilds all actors).
    pub fn clear(&self) {
        self.channels.lock().clear();
    }
}

/// One input of a merge.
pub struct MergeInput {
    /// Which executor input this feeds (the upstream fragment's position
    /// among the actor's inputs), e.g. 0 = left and 1 = right of a join.
    pub input_index: usize,
    /// The upstream actor, or `None` for a source actor's local channel
    /// (barrier injection and DML).
    pub upstream: Option<ActorId>,
    pub rx: Receiver,
}

/// How many messages a merge buffers from an input that already delivered
/// the barrier being aligned, before it stops reading it.
pub const MAX_BUFFERED_PER_INPUT: usize = 64;

/// The head of an actor: reads all inputs fairly and aligns barriers.
///
/// An input that delivered the barrier being aligned is still read, into a
/// buffer replayed after the alignment (up to a bound): leaving a channel
/// unread is what makes bounded channels deadlock in the diamonds that two
/// consecutive shuffles create (the reason Flink's barrier buffer spilled
/// instead of blocking), while an unbounded buffer would take backpressure
/// away from sources faster than the job.
pub struct Merge {
    inputs: Vec<MergeInput>,
    /// Inputs that delivered the barrier being aligned.
    blocked: Vec<bool>,
    /// Messages read from blocked inputs, in order, replayed after the
    /// alignment.
    buffered: Vec<std::collections::VecDeque<Message>>,
    /// Inputs whose channel ended after their barrier (a dropped upstream).
    ended: Vec<bool>,
    /// Inputs added by a scale barrier: their first message must be it.
    joining: Vec<bool>,
    /// The watermarks each blocked input's barrier carried.
    input_watermarks: Vec<Vec<Watermark>>,
    /// The watermarks of the last aligned barrier, per executor input
    /// index (see [`Merge::take_watermarks`]).
    aligned_watermarks: Vec<Vec<Watermark>>,
    pending_barrier: Option<Barrier>,
    next_start: usize,
    /// The owning actor and the registry, to find inputs added by a scale
    /// barrier.
    owner: Option<(ActorId, std::sync::Arc<ExchangeRegistry>)>,
}

impl Merge {
    pub fn new(inputs: Vec<MergeInput>) -> Self {
        let n = inputs.len();
        Merge {
            inputs,
            blocked: vec![false; n],
            buffered: (0..n).map(|_| Default::default()).collect(),
            ended: vec![false; n],
            joining: vec![false; n],
            input_watermarks: vec![Vec::new(); n],
            aligned_watermarks: Vec::new(),
            pending_barrier: None,
            next_start: 0,
            owner: None,
        }
    }

    /// Let the merge admit inputs that scale barriers add for `actor`.
    pub fn with_owner(
        mut self,
        actor: ActorId,
        registry: std::sync::Arc<ExchangeRegistry>,
    ) -> Self {
        self.owner = Some((actor, registry));
        self
    }

    fn push_input(&mut self, input: MergeInput, joining: bool) {
        self.inputs.push(input);
        self.blocked.push(false);
        self.buffered.push(Default::default());
        self.ended.push(false);
        self.joining.push(joining);
        self.input_watermarks.push(Vec::new());
    }

    /// Drop the inputs from these upstream actors (after the barrier that
    /// removes them has been aligned).
    pub fn remove_inputs(&mut self, upstreams: &[ActorId]) {
        let mut i = 0;
        while i < self.inputs.len() {
            if self.inputs[i]
                .upstream
                .is_some_and(|u| upstreams.contains(&u))
            {
                self.inputs.remove(i);
                self.blocked.remove(i);
                self.buffered.remove(i);
                self.ended.remove(i);
                self.joining.remove(i);
                self.input_watermarks.remove(i);
            } else {
                i += 1;
            }
        }
        if self.next_start >= self.inputs.len() {
            self.next_start = 0;
        }
    }

    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// Next raw message: replayed ones of unblocked inputs first, then the
    /// channels (messages of blocked inputs go to their buffer).
    async fn next_raw(&mut self) -> StreamResult<(usize, Message)> {
        loop {
            if let Some(i) =
                (0..self.inputs.len()).find(|&i| !self.blocked[i] && !self.buffered[i].is_empty())
            {
                if let Some(m) = self.buffered[i].pop_front() {
                    return Ok((i, m));
                }
            }
            if self.inputs.is_empty() {
                return Err(StreamError::Internal("actor has no inputs".into()));
            }
            let (idx, msg) = poll_fn(|cx| {
                let n = self.inputs.len();
                for k in 0..n {
                    let i = (self.next_start + k) % n;
                    // Past the bound a blocked input waits again: buffering
                    // must not remove backpressure from a source that is
                    // faster than the job.
                    if self.ended[i]
                        || (self.blocked[i] && self.buffered[i].len() >= MAX_BUFFERED_PER_INPUT)
                    {
                        continue;
                    }
                    match self.inputs[i].rx.poll_recv(cx) {
                        Poll::Ready(Some(m)) => {
                            self.next_start = (i + 1) % n;
                            return Poll::Ready(Ok((i, Some(m))));
                        }
                        Poll::Ready(None) if self.blocked[i] => {
                            return Poll::Ready(Ok((i, None)));
                        }
                        Poll::Ready(None) => {
                            return Poll::Ready(Err(StreamError::ChannelClosed(
                                self.inputs[i].upstream,
                            )))
                        }
                        Poll::Pending => {}
                    }
                }
                Poll::Pending
            })
            .await?;
            match msg {
                None => self.ended[idx] = true,
                Some(m) if self.blocked[idx] => self.buffered[idx].push_back(m),
                Some(m) => return Ok((idx, m)),
            }
        }
    }

    /// The next chunk (with its input index) or the next aligned barrier.
    pub async fn next(&mut self) -> StreamResult<(usize, Message)> {
        loop {
            let (idx, msg) = self.next_raw().await?;
            match msg {
                Message::Chunk(c) => {
                    if self.joining[idx] {
                        return Err(StreamError::Internal(
                            "new input delivered data before its first barrier".into(),
                        ));
                    }
                    return Ok((self.inputs[idx].input_index, Message::Chunk(c)));
                }
                Message::Barrier(b) => {
                    match &self.pending_barrier {
                        Some(p) if p.epoch != b.epoch => {
                            return Err(StreamError::Internal(format!(
                                "misaligned barriers {:?} and {:?}",
                                p.epoch, b.epoch
                            )))
                        }
                        Some(_) => {}
                        None => {
                            self.pending_barrier = Some(b.clone());
                            self.add_joining_inputs(&b);
                        }
                    }
                    self.blocked[idx] = true;
                    self.joining[idx] = false;
                    self.input_watermarks[idx] = b.watermarks.clone();
                    if self.blocked.iter().all(|b| *b) {
                        let mut barrier = self.pending_barrier.take().unwrap_or(b);
                        barrier.watermarks.clear();
                        self.align_watermarks();
                        self.blocked.iter_mut().for_each(|b| *b = false);
                        return Ok((0, Message::Barrier(barrier)));
                    }
                }
            }
        }
    }

    /// Per executor input index, the least watermark of each column over
    /// the inputs of that index; a column some input has none for has none.
    fn align_watermarks(&mut self) {
        let width = self
            .inputs
            .iter()
            .map(|i| i.input_index + 1)
            .max()
            .unwrap_or(0);
        let mut out: Vec<Option<Vec<Watermark>>> = vec![None; width];
        for (input, wms) in self.inputs.iter().zip(&mut self.input_watermarks) {
            let wms = std::mem::take(wms);
            let slot = &mut out[input.input_index];
            *slot = Some(match slot.take() {
                None => wms,
                Some(acc) => acc
                    .into_iter()
                    .filter_map(|w| {
                        let other = Watermark::of(&wms, w.column)?;
                        Some(Watermark::new(w.column, w.value.min(other.clone())))
                    })
                    .collect(),
            });
        }
        self.aligned_watermarks = out.into_iter().map(Option::unwrap_or_default).collect();
    }

    /// The watermarks of the barrier [`Merge::next`] returned last, indexed
    /// by executor input index (empty before any barrier).
    pub fn take_watermarks(&mut self) -> Vec<Vec<Watermark>> {
        std::mem::take(&mut self.aligned_watermarks)
    }

    /// A scale barrier may add upstream actors: their inputs take part in
    /// aligning it (their first message is this barrier).
    fn add_joining_inputs(&mut self, b: &Barrier) {
        let Some((me, reg)) = self.owner.clone() else {
            return;
        };
        if let Some(Mutation::Update(u)) = b.mutation.as_deref() {
            if let Some(mu) = u.merges.get(&me) {
                for &(index, up) in &mu.added_inputs {
                    let rx = reg.take_receiver(up, me);
                    self.push_input(
                        MergeInput {
                            input_index: index as usize,
                            upstream: Some(up),
                            rx,
                        },
                        true,
                    );
                }
            }
        }
    }
}

/// One output channel of a dispatcher.
struct Output {
    actor: ActorId,
    tx: Sender,
}

/// A row that goes to no output of a hash dispatcher (or a vnode whose
/// actor is not one).
const NO_OUTPUT: u32 = u32::MAX;

/// Routes an actor's output to the actors of one downstream fragment.
pub struct Dispatcher {
    pub downstream_fragment: FragmentId,
    kind: DispatcherKind,
    outputs: Vec<Output>,
}

impl Dispatcher {
    pub fn new(desc: &DispatcherDesc, mut sender: impl FnMut(ActorId) -> Sender) -> Self {
        Dispatcher {
            downstream_fragment: desc.downstream_fragment,
            kind: desc.kind.clone(),
            outputs: desc
                .outputs
                .iter()
                .map(|&a| Output {
                    actor: a,
                    tx: sender(a),
                })
                .collect(),
        }
    }

    pub fn output_actors(&self) -> Vec<ActorId> {
        self.outputs.iter().map(|o| o.actor).collect()
    }

    async fn send(tx: &Sender, actor: ActorId, msg: Message) -> StreamResult<()> {
        tx.send(msg)
            .await
            .map_err(|_| StreamError::DownstreamClosed(actor))
    }

    pub async fn dispatch_chunk(&self, chunk: StreamChunk) -> StreamResult<()> {
        if chunk.is_empty() || self.outputs.is_empty() {
            return Ok(());
        }
        match &self.kind {
            DispatcherKind::Simple | DispatcherKind::NoShuffle => {
                let o = &self.outputs[0];
                Self::send(&o.tx, o.actor, Message::Chunk(chunk)).await
            }
            DispatcherKind::Broadcast => {
                for o in &self.outputs {
                    Self::send(&o.tx, o.actor, Message::Chunk(chunk.clone())).await?;
                }
                Ok(())
            }
            DispatcherKind::Hash { .. } if self.outputs.len() == 1 => {
                // Every vnode maps to the one output.
                let o = &self.outputs[0];
                Self::send(&o.tx, o.actor, Message::Chunk(chunk)).await
            }
            DispatcherKind::Hash { dist_key, mapping } => {
                // Every output gets the chunk's columns (shared) and its
                // own rows' visibility. A row belongs to one output, so one
                // ops vector serves them all, even where an update pair is
                // split into a delete and an insert.
                let n = chunk.capacity();
                let mut ops = chunk.ops().to_vec();
                // The output of each vnode, looked up once per chunk.
                let output_of_vnode: Vec<u32> = mapping
                    .iter()
                    .map(|&actor| {
                        self.outputs
                            .iter()
                            .position(|o| o.actor == actor)
                            .map_or(NO_OUTPUT, |t| t as u32)
                    })
                    .collect();
                let rows: Vec<usize> = chunk.visible_indices().collect();
                let vnodes = vnodes_of_column_rows(chunk.columns(), dist_key, &rows);
                // The output of each row (`NO_OUTPUT` for invisible ones).
                let mut target = vec![NO_OUTPUT; n];
                for (&i, &vnode) in rows.iter().zip(&vnodes) {
                    let t = output_of_vnode[vnode as usize];
                    if t == NO_OUTPUT {
                        let actor = mapping[vnode as usize];
                        return Err(StreamError::Internal(format!(
                            "vnode mapped to actor {actor} which is not an output"
                        )));
                    }
                    target[i] = t;
                }
                // An update pair split over two outputs becomes a plain
                // delete and insert.
                if ops.contains(&Op::UpdateDelete) {
                    for w in rows.windows(2) {
                        let (i, j) = (w[0], w[1]);
                        if ops[i] == Op::UpdateDelete
                            && ops[j] == Op::UpdateInsert
                            && target[i] != target[j]
                        {
                            ops[i] = Op::Delete;
                            ops[j] = Op::Insert;
                        }
                    }
                }
                let keep: Vec<BooleanBuffer> = (0..self.outputs.len() as u32)
                    .map(|t| BooleanBuffer::collect_bool(n, |i| target[i] == t))
                    .collect();
                let (_, columns, _) = chunk.into_parts();
                for (o, keep) in self.outputs.iter().zip(keep) {
                    if keep.count_set_bits() > 0 {
                        let c = StreamChunk::new(ops.clone(), columns.clone(), Some(keep));
                        Self::send(&o.tx, o.actor, Message::Chunk(c)).await?;
                    }
                }
                Ok(())
            }
        }
    }

    pub async fn dispatch_barrier(&self, barrier: &Barrier) -> StreamResult<()> {
        for o in &self.outputs {
            Self::send(&o.tx, o.actor, Message::Barrier(barrier.clone())).await?;
        }
        Ok(())
    }
}

/// All dispatchers of an actor, applying barrier mutations around the
/// barrier as the protocol in `message.rs` says.
pub struct DispatchSet {
    pub actor_id: ActorId,
    pub dispatchers: Vec<Dispatcher>,
}

impl DispatchSet {
    pub async fn dispatch_chunk(&self, chunk: StreamChunk) -> StreamResult<()> {
        match self.dispatchers.len() {
            0 => Ok(()),
            1 => self.dispatchers[0].dispatch_chunk(chunk).await,
            _ => {
                for d in &self.dispatchers {
                    d.dispatch_chunk(chunk.clone()).await?;
                }
                Ok(())
            }
        }
    }

    /// Pre-mutation, send, post-mutation: send the barrier on, with the proof that the actor committed its
    /// state at the epoch it closes (see `executor::Executor::process_barrier`).
    pub async fn dispatch_barrier(
        &mut self,
        barrier: &Barrier,
        registry: &ExchangeRegistry,
        committed: Committed,
    ) -> StreamResult<()> {
        let _ = committed;
        let me = self.actor_id;
        match barrier.mutation.as_deref() {
            Some(Mutation::Add { dispatchers, .. }) => {
                if let Some(new) = dispatchers.get(&me) {
                    for desc in new {
                        self.dispatchers
                            .push(Dispatcher::new(desc, |down| registry.take_sender(me, down)));
                    }
                }
            }
            Some(Mutation::Update(u)) => {
                if let Some(updates) = u.dispatchers.get(&me) {
                    for upd in updates {
                        if let Some(d) = self
                            .dispatchers
                            .iter_mut()
                            .find(|d| d.downstream_fragment == upd.downstream_fragment)
                        {
                            for &a in &upd.added_outputs {
                                d.outputs.push(Output {
                                    actor: a,
                                    tx: registry.take_sender(me, a),
                                });
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        for d in &self.dispatchers {
            d.dispatch_barrier(barrier).await?;
        }
        match barrier.mutation.as_deref() {
            Some(Mutation::Stop { actors }) => {
                for d in &mut self.dispatchers {
                    d.outputs.retain(|o| !actors.contains(&o.actor));
                }
                self.dispatchers.retain(|d| !d.outputs.is_empty());
            }
            Some(Mutation::Update(u)) => {
                if let Some(updates) = u.dispatchers.get(&me) {
                    for upd in updates {
                        if let Some(d) = self
                            .dispatchers
                            .iter_mut()
                            .find(|d| d.downstream_fragment == upd.downstream_fragment)
                        {
                            d.outputs
                                .retain(|o| !upd.removed_outputs.contains(&o.actor));
                            if let (Some(m), DispatcherKind::Hash { mapping, .. }) =
                                (&upd.new_mapping, &mut d.kind)
                            {
                                *mapping = m.clone();
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebbflow_common::{vnode_of, DataType, ScalarValue, VNODE_COUNT};

    /// A hash dispatcher gives each output its rows (by vnode), as chunks
    /// sharing the columns; an update pair whose halves go to different
    /// outputs becomes a delete and an insert; rows already invisible stay
    /// out.
    #[tokio::test]
    async fn hash_dispatch_splits_rows_by_vnode() {
        let ty = [DataType::Int64, DataType::Varchar];
        // Vnodes below half go to actor 1, the rest to actor 2.
        let mapping: Vec<ActorId> = (0..VNODE_COUNT)
            .map(|v| 1 + (v >= VNODE_COUNT / 2) as u32)
            .collect();
        let target = |k: i64| mapping[vnode_of(&[Some(ScalarValue::Int64(k))], &[0]) as usize];
        // Two keys on different actors.
        let (a, b) = (1..100)
            .flat_map(|x| (1..100).map(move |y| (x, y)))
            .find(|&(x, y)| target(x) == 1 && target(y) == 2)
            .expect("keys on both actors");
        let text =
            format!("+ {a} x\n+ {b} y\nU- {a} old\nU+ {b} new\nU- {b} p\nU+ {b} q\n- {a} gone");
        let chunk = StreamChunk::from_pretty(&text, &ty);
        let ops = chunk.ops().to_vec();
        let mut keep = vec![true; 7];
        keep[6] = false; // the last row was filtered out upstream
        let chunk = chunk.with_visibility(ops, keep.into());
        let mut rx = HashMap::new();
        let desc = DispatcherDesc {
            downstream_fragment: 1,
            kind: DispatcherKind::Hash {
                dist_key: vec![0],
                mapping,
            },
            outputs: vec![1, 2],
        };
        let d = Dispatcher::new(&desc, |actor| {
            let (tx, r) = channel::channel(CHANNEL_ROWS);
            rx.insert(actor, r);
            tx
        });
        d.dispatch_chunk(chunk).await.expect("dispatches");
        let mut got = |actor: ActorId| match rx.get_mut(&actor).and_then(|r| r.try_recv().ok()) {
            Some(Message::Chunk(c)) => c.to_pretty(),
            other => panic!("{other:?}"),
        };
        assert_eq!(got(1), format!("+ {a} x\n- {a} old\n"));
        assert_eq!(got(2), format!("+ {b} y\n+ {b} new\nU- {b} p\nU+ {b} q\n"));
    }
}
