//! Executors: the operators an actor chains between its merge and its
//! dispatchers. One executor per file.
//!
//! Every executor follows the same ritual (STYLE §4): a chunk is applied
//! and may produce output chunks; on a barrier it flushes pending output,
//! commits its state tables at the epoch the barrier closes (returning the
//! [`Committed`] proof, which only a table's commit makes), and the actor
//! forwards the barrier; afterwards `post_barrier` applies a new vnode
//! bitmap. Stateful executors initialise their state lazily (caches start
//! cold) so the first barrier needs no special casing.

pub mod dynamic_filter;
pub mod filter;
pub mod hash_agg;
pub mod hash_join;
pub mod hop_window;
pub mod materialize;
pub mod over_window;
pub mod project;
pub mod semi_join;
pub mod stream_scan;
pub mod top_n;
pub mod union;
pub mod unnest;
pub mod watermark_filter;

#[cfg(test)]
mod equal_keys_tests;

use async_trait::async_trait;

use super::message::{Barrier, Watermark};
use super::StreamResult;
use ebbflow_common::{Bitmap, StreamChunk, StreamChunkBuilder};
pub use ebbflow_storage::state_table::Committed;

#[async_trait]
pub trait Executor: Send {
    fn name(&self) -> &'static str;

    /// Apply a chunk that came from executor input `input` (the index of
    /// the upstream fragment for the first executor of a multi-input actor,
    /// 0 otherwise). Output chunks are appended to `out`.
    async fn process_chunk(
        &mut self,
        input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()>;

    /// The watermarks of the executor's inputs at a barrier (indexed by
    /// input), given just before [`Executor::process_barrier`]; returns
    /// those of its output. The default says nothing about the output,
    /// which is always correct (see "Watermarks" in `message.rs`).
    async fn process_watermarks(
        &mut self,
        inputs: &[Vec<Watermark>],
    ) -> StreamResult<Vec<Watermark>> {
        let _ = inputs;
        Ok(Vec::new())
    }

    /// Flush pending output into `out` and commit every state table at
    /// `barrier.epoch.prev`. Called once per barrier, before it is
    /// forwarded: the actor forwards it only with the [`Committed`] this
    /// returns, which only committing the tables makes. The default is
    /// for executors without state.
    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        let _ = (barrier, out);
        Ok(Committed::nothing())
    }

    /// After the barrier was forwarded and reported: emit output that
    /// belongs after it (a backfill snapshot), into `out`.
    async fn after_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let _ = (barrier, out);
        Ok(())
    }

    /// After the barrier was forwarded: take a new vnode bitmap. Drop cached
    /// state of vnodes no longer owned (all of it if `new` is not a subset
    /// of the old set).
    async fn update_vnodes(&mut self, new: &Bitmap) {
        let _ = new;
    }
}

/// Split rows into chunks of at most [`ebbflow_common::CHUNK_SIZE`] rows.
pub(crate) struct ChunkBuilder {
    current: StreamChunkBuilder,
}

impl ChunkBuilder {
    pub fn new() -> Self {
        ChunkBuilder {
            current: StreamChunkBuilder::new(),
        }
    }

    pub fn push(
        &mut self,
        op: ebbflow_common::Op,
        row: ebbflow_common::Row,
        out: &mut Vec<StreamChunk>,
    ) {
        self.current.push(op, row);
        if self.current.len() >= ebbflow_common::CHUNK_SIZE
            && !matches!(op, ebbflow_common::Op::UpdateDelete)
        {
            out.push(self.current.take());
        }
    }

    pub fn finish(&mut self, out: &mut Vec<StreamChunk>) {
        if !self.current.is_empty() {
            out.push(self.current.take());
        }
    }
}

/// A barrier brought a new vnode bitmap: `table` takes it, and `cache`,
/// keyed by the `width` distribution-key values of its entries, keeps the
/// entries of the vnodes the actor still owns if the new bitmap only
/// drops vnodes, and none otherwise (a vnode brought in may hold state
/// newer than a cached entry of it: say, a scale-out then a scale-in).
/// Returns whether entries were kept. Every executor that caches state by
/// its distribution key goes through here.
pub(crate) fn take_vnodes<V, S>(
    table: &mut ebbflow_storage::StateTable,
    cache: &mut std::collections::HashMap<Vec<ebbflow_common::Datum>, V, S>,
    width: usize,
    new: &Bitmap,
) -> bool {
    let subset = width > 0 && new.is_subset_of(table.vnodes());
    table.update_vnodes(new.clone());
    if subset {
        let dist: Vec<usize> = (0..width).collect();
        cache.retain(|k, _| new.contains(ebbflow_common::vnode_of(k, &dist)));
    } else {
        cache.clear();
    }
    subset
}

/// Helpers for executor unit tests: state tables on a fresh memory store,
/// and a barrier closing an epoch.
#[cfg(test)]
pub(crate) mod test_utils {
    use std::sync::Arc;

    use crate::message::{Barrier, Epoch};
    use ebbflow_common::{Bitmap, DataType};
    use ebbflow_storage::state_table::ValueCodec;
    use ebbflow_storage::{MemoryStateStore, StateStore, StateTable};

    pub fn store() -> Arc<MemoryStateStore> {
        Arc::new(MemoryStateStore::new())
    }

    pub fn table(
        store: &Arc<MemoryStateStore>,
        id: u32,
        pk_types: Vec<DataType>,
        dist_in_pk: Vec<usize>,
        value_types: Option<Vec<DataType>>,
    ) -> StateTable {
        StateTable::new(
            id,
            store.clone() as Arc<dyn StateStore>,
            pk_types,
            vec![],
            dist_in_pk,
            match value_types {
                Some(t) => ValueCodec::Schema(t),
                None => ValueCodec::Tagged,
            },
            Bitmap::full(),
        )
    }

    pub fn barrier(curr: u64) -> Barrier {
        Barrier::new(Epoch {
            curr,
            prev: curr - 1,
        })
    }

    /// Net effect of chunks as sorted `op row` lines.
    pub fn pretty(chunks: &[ebbflow_common::StreamChunk]) -> Vec<String> {
        chunks
            .iter()
            .flat_map(|c| c.to_pretty().lines().map(String::from).collect::<Vec<_>>())
            .collect()
    }
}
