//! What meta sends a compute node: the actors to build, where their
//! output goes, and the changes a barrier carries.

use std::collections::{HashMap, HashSet};

use ebbflow_common::{ActorId, Bitmap, DataType, FragmentId, TableId};
use serde::{Deserialize, Serialize};

use crate::node::{NodeDesc, StateTableDesc};
use crate::source::{progress_types, DatagenDesc, SplitSourceDesc};

/// What feeds a source actor besides its upstreams.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum SourceDesc {
    /// Not a source: barriers arrive from upstream actors.
    None,
    /// A table actor: barriers are injected and DML arrives through its
    /// local channel.
    Table,
    /// A datagen actor of a table created before splits existed: a
    /// singleton with its offset under the empty key.
    Datagen {
        desc: DatagenDesc,
        state: StateTableDesc,
    },
    /// A connector read in splits (see `stream::source`); `state` keeps
    /// each split's progress under the split's vnode.
    Splits {
        desc: SplitSourceDesc,
        state: StateTableDesc,
    },
}

impl SourceDesc {
    /// The progress table of a split source: key split id, value
    /// [`progress_types`].
    pub fn split_state(table_id: TableId) -> StateTableDesc {
        StateTableDesc {
            table_id,
            pk_types: vec![DataType::Int32],
            pk_desc: vec![],
            dist_in_pk: vec![],
            value_types: Some(progress_types()),
        }
    }
}

/// Everything a compute node needs to build one actor.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ActorDesc {
    pub actor_id: ActorId,
    pub fragment_id: FragmentId,
    pub nodes: Vec<NodeDesc>,
    /// `(executor input index, upstream actors)`.
    pub inputs: Vec<(usize, Vec<ActorId>)>,
    pub source: SourceDesc,
    pub dispatchers: Vec<DispatcherDesc>,
    pub vnodes: Bitmap,
}

/// How an actor routes its output to one downstream fragment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum DispatcherKind {
    /// By vnode of `dist_key` through `mapping` (vnode → actor).
    Hash {
        dist_key: Vec<usize>,
        mapping: Vec<ActorId>,
    },
    /// Every row to every output.
    Broadcast,
    /// Everything to the single downstream actor.
    Simple,
    /// 1:1 to the downstream actor that owns the same vnodes.
    NoShuffle,
}

/// One dispatcher of an actor: where its output goes for one downstream
/// fragment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DispatcherDesc {
    pub downstream_fragment: FragmentId,
    pub kind: DispatcherKind,
    pub outputs: Vec<ActorId>,
}

/// A change to one dispatcher of one actor (scaling).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DispatcherUpdate {
    pub downstream_fragment: FragmentId,
    /// Outputs added before the barrier is forwarded.
    pub added_outputs: Vec<ActorId>,
    /// Outputs removed after the barrier is forwarded.
    pub removed_outputs: Vec<ActorId>,
    /// The new vnode mapping (hash dispatchers), switched to after the
    /// barrier is forwarded.
    pub new_mapping: Option<Vec<ActorId>>,
}

/// A change to the inputs of one actor's merge (scaling): inputs from added
/// upstream actors are admitted once they deliver this barrier; inputs from
/// removed ones end after it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct MergeUpdate {
    /// `(executor input index, upstream actor)` pairs added.
    pub added_inputs: Vec<(u32, ActorId)>,
    pub removed_inputs: Vec<ActorId>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct UpdateMutation {
    pub dispatchers: HashMap<ActorId, Vec<DispatcherUpdate>>,
    pub merges: HashMap<ActorId, MergeUpdate>,
    pub vnode_bitmaps: HashMap<ActorId, Bitmap>,
    pub dropped_actors: HashSet<ActorId>,
    pub added_actors: HashSet<ActorId>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Mutation {
    /// New dispatchers for existing upstream actors (keyed by upstream
    /// actor); `added_actors` start at this barrier.
    Add {
        dispatchers: HashMap<ActorId, Vec<DispatcherDesc>>,
        added_actors: HashSet<ActorId>,
    },
    Stop {
        actors: HashSet<ActorId>,
    },
    Update(UpdateMutation),
    Pause,
    Resume,
}
