//! Between the contract's messages and ebbflow's own types.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::pb;
use ebbflow_storage::lsm::Version;
use ebbflow_storage::SstInfo;
use ebbflow_stream::actor::ComputeEvent;
use ebbflow_stream::compute_node::ActorLocations;

pub fn sst_to_pb(f: &SstInfo) -> pb::SstFile {
    pb::SstFile {
        id: f.id,
        level: f.level,
        epoch: f.epoch,
        size: f.size,
        meta_offset: f.meta_offset,
        first_key: f.first_key.clone(),
        last_key: f.last_key.clone(),
        key_count: f.key_count,
        tombstones: f.tombstones,
    }
}

pub fn sst_from_pb(f: pb::SstFile) -> SstInfo {
    SstInfo {
        id: f.id,
        level: f.level,
        epoch: f.epoch,
        size: f.size,
        meta_offset: f.meta_offset,
        first_key: f.first_key,
        last_key: f.last_key,
        key_count: f.key_count,
        tombstones: f.tombstones,
    }
}

pub fn version_to_pb(v: &Version) -> pb::Version {
    pb::Version {
        id: v.id,
        committed_epoch: v.committed_epoch,
        files: v.files().map(|f| sst_to_pb(f)).collect(),
        dropped_tables: v.dropped_tables.iter().copied().collect(),
    }
}

pub fn version_from_pb(v: pb::Version) -> Arc<Version> {
    Arc::new(Version::from_files(
        v.id,
        v.committed_epoch,
        v.files.into_iter().map(sst_from_pb).collect(),
        v.dropped_tables.into_iter().collect::<BTreeSet<_>>(),
    ))
}

pub fn locations_to_pb(l: &ActorLocations, generation: u64) -> pb::Locations {
    pb::Locations {
        actor_workers: l.actors.clone(),
        worker_addresses: l.addresses.clone(),
        generation,
    }
}

pub fn locations_from_pb(l: &pb::Locations) -> ActorLocations {
    ActorLocations {
        actors: l.actor_workers.clone(),
        addresses: l.worker_addresses.clone(),
    }
}

/// An event of a compute process, tagged with its generation (`None` for
/// events meta makes itself).
pub fn event_to_pb(e: &ComputeEvent, generation: u64) -> Option<pb::Event> {
    let kind = match e {
        ComputeEvent::Collected { actor_id, epoch } => pb::event::Kind::Collected(pb::Collected {
            actor_id: *actor_id,
            epoch: *epoch,
        }),
        ComputeEvent::Failed { actor_id, error } => pb::event::Kind::Failed(pb::Failed {
            actor_id: *actor_id,
            error: error.clone(),
        }),
        ComputeEvent::WorkerDown { .. } | ComputeEvent::Recover { .. } => return None,
    };
    Some(pb::Event {
        generation,
        kind: Some(kind),
    })
}

pub fn event_from_pb(e: pb::Event) -> Option<ComputeEvent> {
    match e.kind? {
        pb::event::Kind::Collected(c) => Some(ComputeEvent::Collected {
            actor_id: c.actor_id,
            epoch: c.epoch,
        }),
        pb::event::Kind::Failed(f) => Some(ComputeEvent::Failed {
            actor_id: f.actor_id,
            error: f.error,
        }),
    }
}
