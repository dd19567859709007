//! The ids every layer shares: of tables (and MVs, indexes of state),
//! fragments, actors, compute nodes (workers) and their parallel units,
//! and a barrier's epochs. Meta allocates them; the store, the executors
//! and the protocol only carry them.

/// A table, an MV, or an internal state table of a job.
pub type TableId = u32;

/// A fragment of a streaming job: the unit of scaling.
pub type FragmentId = u32;

/// One parallel instance of a fragment.
pub type ActorId = u32;

/// A compute node.
pub type WorkerId = u32;

/// A parallel unit of a compute node: a slot for one actor per fragment.
pub type UnitId = u32;

/// A barrier's epochs: data after the barrier is in `curr`; the barrier
/// closes `prev`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Epoch {
    pub curr: u64,
    pub prev: u64,
}
