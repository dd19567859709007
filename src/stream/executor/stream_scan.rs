//! Stream scan: the head of a job reading another table or MV. It forwards
//! the upstream's changes, and when the job is created it first emits a
//! snapshot of the upstream's rows (backfill).
//!
//! The snapshot is the upstream's state at the epoch the job's first
//! barrier closes: the scan forwards that barrier, waits until the epoch is
//! committed (it cannot commit further without this actor), reads the
//! committed rows of the vnodes it owns, and emits them before any change
//! that came after the barrier. The upstream dispatches to the scan by the
//! same distribution key its state is keyed by, so the vnodes match.

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;

use super::Executor;
use crate::common::{Bitmap, DataType, StreamChunk, CHUNK_SIZE};
use crate::meta::catalog::TableId;
use crate::storage::state_table::scan_table_committed;
use crate::storage::StateStore;
use crate::stream::message::{Barrier, Mutation};
use crate::stream::{StreamError, StreamResult};

pub struct StreamScanExecutor {
    actor_id: u32,
    upstream_table: TableId,
    upstream_types: Vec<DataType>,
    /// Whether this actor still has to emit the snapshot (only when the job
    /// is being created, not when an actor is rebuilt or added by scaling).
    backfill: bool,
    vnodes: Bitmap,
    store: Arc<dyn StateStore>,
    committed: watch::Receiver<u64>,
}

impl StreamScanExecutor {
    pub fn new(
        actor_id: u32,
        upstream_table: TableId,
        upstream_types: Vec<DataType>,
        backfill: bool,
        vnodes: Bitmap,
        store: Arc<dyn StateStore>,
        committed: watch::Receiver<u64>,
    ) -> Self {
        StreamScanExecutor {
            actor_id,
            upstream_table,
            upstream_types,
            backfill,
            vnodes,
            store,
            committed,
        }
    }
}

/// Wait until `epoch` is committed.
pub async fn wait_committed(rx: &mut watch::Receiver<u64>, epoch: u64) -> StreamResult<()> {
    rx.wait_for(|c| *c >= epoch)
        .await
        .map(|_| ())
        .map_err(|_| StreamError::Internal("meta is gone".into()))
}

#[async_trait]
impl Executor for StreamScanExecutor {
    fn name(&self) -> &'static str {
        "StreamScan"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        out.push(chunk);
        Ok(())
    }

    async fn after_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        if !self.backfill {
            return Ok(());
        }
        self.backfill = false;
        let starts_here = matches!(barrier.mutation.as_deref(),
            Some(Mutation::Add { added_actors, .. }) if added_actors.contains(&self.actor_id));
        if !starts_here {
            return Ok(());
        }
        wait_committed(&mut self.committed, barrier.epoch.prev).await?;
        let rows = scan_table_committed(
            &*self.store,
            self.upstream_table,
            &self.upstream_types,
            Some(&self.vnodes),
        )?;
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            out.push(StreamChunk::inserts(
                rows.by_ref().take(CHUNK_SIZE).collect(),
            ));
        }
        Ok(())
    }

    fn update_vnodes(&mut self, new: &Bitmap) {
        self.vnodes = new.clone();
    }
}
