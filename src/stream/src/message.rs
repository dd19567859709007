//! The message vocabulary of the streaming runtime, and the barrier
//! protocol. This is the one place the protocol is written down.
//!
//! # Barriers
//!
//! Meta injects a [`Barrier`] with epoch `{curr, prev}` into every source
//! actor (table and datagen actors) at once. Data an actor emits after
//! passing the barrier belongs to epoch `curr`. An actor:
//!
//! 1. aligns: with several inputs it passes barrier `e` on only after it has
//!    read `e` from every input, blocking each input that already delivered
//!    it (data after `e` on one input must not overtake data before `e` on
//!    another);
//! 2. lets every executor flush and hand its state writes of epoch `prev`
//!    to the store (commit), in chain order;
//! 3. applies the *pre* half of the mutation to its dispatchers (add new
//!    outputs), sends the barrier to every output, applies the *post* half
//!    (switch vnode mappings, drop outputs of dropped actors);
//! 4. reports the barrier collected to its compute node, which reports to
//!    meta;
//! 5. applies a new vnode bitmap to its executors (they drop cached state of
//!    vnodes they lost — of all vnodes when the new set is not a subset of
//!    the old, see RisingWave #5567), waits until epoch `prev` is committed
//!    if it gained vnodes (their state was written by another actor), and
//!    exits if the mutation stops it.
//!
//! Meta commits epoch `prev` once every actor has reported the barrier.
//!
//! # Mutations
//!
//! * `Add`: a new job's actors start at this barrier; upstream actors add
//!   dispatchers towards them before forwarding it.
//! * `Stop`: the listed actors forward the barrier and exit; upstream
//!   actors drop their outputs towards them after forwarding it.
//! * `Update`: the scale/reschedule change (docs/design.md §5): new dispatcher
//!   outputs and vnode mappings, merge input changes, new bitmaps, actors to
//!   drop and actors that start here.
//! * `Pause` / `Resume`: sources stop / restart emitting data.
//!
//! # Watermarks
//!
//! A [`Watermark`] on column `c` of an edge says: no row after this point
//! of the stream has `c` below `value`. Watermarks ride on barriers: the
//! barrier an actor sends carries the watermarks of its output at that
//! point (`Barrier::watermarks`), so they advance once per barrier and
//! never overtake data. Between the merge and the dispatchers:
//!
//! 1. the merge, aligning a barrier, takes per executor input and column
//!    the least watermark of the inputs (a column some input has no
//!    watermark for has none);
//! 2. before `process_barrier`, each executor in chain order gets the
//!    watermarks of its inputs (`Executor::process_watermarks`) and
//!    returns those of its output — an executor that cannot say anything
//!    about its output returns none, which is always correct;
//! 3. the barrier is forwarded with the last executor's watermarks.
//!
//! Watermarks start at the `WatermarkFilter` placed after a relation with
//! `WATERMARK FOR`, which drops the rows below the watermark it has
//! announced (late rows). Executors keep the highest watermark they were
//! given: none at one barrier (an actor just added by a scale) is no news,
//! not a step back. An actor added by a scale barrier sends that barrier
//! without watermarks.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use ebbflow_common::{Bitmap, ScalarValue, StreamChunk};
use ebbflow_plan::Mutation;

pub use ebbflow_common::{ActorId, Epoch, FragmentId};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Barrier {
    pub epoch: Epoch,
    pub mutation: Option<Arc<Mutation>>,
    /// The sending actor's output watermarks at this barrier (see
    /// "Watermarks" above); meta injects barriers without any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watermarks: Vec<Watermark>,
}

/// No row after the barrier carrying it has column `column` below `value`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermark {
    pub column: usize,
    pub value: ScalarValue,
}

impl Watermark {
    pub fn new(column: usize, value: ScalarValue) -> Self {
        Watermark { column, value }
    }

    /// The watermark of `column` in `list`, if it has one.
    pub fn of(list: &[Watermark], column: usize) -> Option<&ScalarValue> {
        list.iter().find(|w| w.column == column).map(|w| &w.value)
    }
}

impl Barrier {
    pub fn new(epoch: Epoch) -> Self {
        Barrier {
            epoch,
            mutation: None,
            watermarks: Vec::new(),
        }
    }

    pub fn with_mutation(epoch: Epoch, mutation: Mutation) -> Self {
        Barrier {
            epoch,
            mutation: Some(Arc::new(mutation)),
            watermarks: Vec::new(),
        }
    }

    /// Whether this barrier stops (drops) the actor.
    pub fn stops(&self, actor: ActorId) -> bool {
        match self.mutation.as_deref() {
            Some(Mutation::Stop { actors }) => actors.contains(&actor),
            Some(Mutation::Update(u)) => u.dropped_actors.contains(&actor),
            _ => false,
        }
    }

    /// The new vnode bitmap for `actor`, if this barrier changes it.
    pub fn new_bitmap(&self, actor: ActorId) -> Option<&Bitmap> {
        match self.mutation.as_deref() {
            Some(Mutation::Update(u)) => u.vnode_bitmaps.get(&actor),
            _ => None,
        }
    }

    pub fn is_pause(&self) -> bool {
        matches!(self.mutation.as_deref(), Some(Mutation::Pause))
    }

    pub fn is_resume(&self) -> bool {
        matches!(self.mutation.as_deref(), Some(Mutation::Resume))
    }
}

/// What flows on an edge between two actors.
#[derive(Clone, Debug)]
pub enum Message {
    Chunk(StreamChunk),
    Barrier(Barrier),
}
