//! Fragments, actors and their placement; the derivation of what each
//! actor must be built with.

use std::collections::BTreeMap;

use crate::catalog::TableId;
use crate::cluster::UnitId;
use crate::graph::EdgeSpec;
use ebbflow_common::{ActorId, FragmentId};
use ebbflow_common::{Bitmap, VirtualNode, VNODE_COUNT};
use ebbflow_plan::{ActorDesc, NodeDesc, SourceDesc};
use ebbflow_plan::{DispatcherDesc, DispatcherKind};
use ebbflow_stream::compute_node::WorkerId;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ActorInfo {
    pub actor_id: ActorId,
    pub worker: WorkerId,
    pub unit: UnitId,
    pub vnodes: Bitmap,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Fragment {
    pub id: FragmentId,
    /// The table or MV the fragment belongs to.
    pub table_id: TableId,
    pub nodes: Vec<NodeDesc>,
    pub singleton: bool,
    pub source: SourceDesc,
    pub actors: Vec<ActorInfo>,
}

impl Fragment {
    /// vnode → owning actor.
    pub fn mapping(&self) -> Vec<ActorId> {
        let mut m = vec![0; VNODE_COUNT];
        for a in &self.actors {
            for v in a.vnodes.iter() {
                m[v as usize] = a.actor_id;
            }
        }
        m
    }

    pub fn actor_ids(&self) -> Vec<ActorId> {
        self.actors.iter().map(|a| a.actor_id).collect()
    }
}

/// An exchange between two fragments.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Edge {
    pub up: FragmentId,
    pub down: FragmentId,
    pub input_index: usize,
    pub spec: EdgeSpec,
}

/// Balanced contiguous vnode ranges for `n` actors.
pub fn even_bitmaps(n: usize) -> Vec<Bitmap> {
    (0..n)
        .map(|i| {
            Bitmap::from_vnodes(
                (0..VNODE_COUNT)
                    .filter(|v| v * n / VNODE_COUNT == i)
                    .map(|v| v as VirtualNode),
            )
        })
        .collect()
}

/// The build description of one actor of `frag`.
pub fn actor_desc(
    frag: &Fragment,
    actor: &ActorInfo,
    fragments: &BTreeMap<FragmentId, Fragment>,
    edges: &[Edge],
) -> ActorDesc {
    let mut ins: Vec<&Edge> = edges.iter().filter(|e| e.down == frag.id).collect();
    ins.sort_by_key(|e| e.input_index);
    let inputs = ins
        .iter()
        .filter_map(|e| {
            fragments
                .get(&e.up)
                .map(|up| (e.input_index, up.actor_ids()))
        })
        .collect();
    let dispatchers = edges
        .iter()
        .filter(|e| e.up == frag.id)
        .filter_map(|e| fragments.get(&e.down).map(|down| dispatcher_desc(e, down)))
        .collect();
    ActorDesc {
        actor_id: actor.actor_id,
        fragment_id: frag.id,
        nodes: frag.nodes.clone(),
        inputs,
        source: frag.source.clone(),
        dispatchers,
        vnodes: actor.vnodes.clone(),
    }
}

pub fn dispatcher_desc(edge: &Edge, down: &Fragment) -> DispatcherDesc {
    DispatcherDesc {
        downstream_fragment: down.id,
        kind: match &edge.spec {
            EdgeSpec::Hash(k) => DispatcherKind::Hash {
                dist_key: k.clone(),
                mapping: down.mapping(),
            },
            EdgeSpec::Simple => DispatcherKind::Simple,
            EdgeSpec::Broadcast => DispatcherKind::Broadcast,
            EdgeSpec::NoShuffle => DispatcherKind::NoShuffle,
        },
        outputs: down.actor_ids(),
    }
}
