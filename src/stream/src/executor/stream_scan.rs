//! Stream scan: the head of a job reading another table or MV. It forwards
//! the upstream's changes and, while the job is backfilling, merges them
//! with a snapshot of the upstream's rows read in slices, one slice per
//! barrier, so a backfill of any size never makes one giant epoch, survives
//! recovery and can be rescaled while it runs.
//!
//! The upstream dispatches to the scan by the same distribution key its
//! state is keyed by, so each scan actor owns the same vnodes of the
//! upstream's state as of its stream. Per vnode, the backfill progress is
//! `Start`, `After(pk)` (every upstream row with a key up to `pk` has been
//! emitted) or `Done`; it is kept in the job's progress table under that
//! vnode and committed with each epoch, so a new owner of the vnode (after
//! a scale or a recovery) continues where the old one was.
//!
//! The algorithm is RisingWave's backfill: after each barrier (epoch `E`
//! closed), once `E` is committed, read the next slice of each unfinished
//! vnode from the committed state, which is exactly the upstream as of the
//! barrier (the next epoch cannot commit before this actor passes the next
//! barrier), emit it, and advance the vnode's position. Upstream changes
//! are forwarded only for keys at or below their vnode's position: changes
//! above it are not emitted, as the snapshot will contain their effect when
//! it gets there.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;

use super::{Committed, Executor};
use crate::build::BuildStateTable;
use crate::message::Barrier;
use crate::{StreamError, StreamResult};
use ebbflow_common::encoding::vnode_of;
use ebbflow_common::{
    Bitmap, Datum, Op, Row, ScalarValue, StreamChunk, StreamChunkBuilder, VirtualNode, CHUNK_SIZE,
};
use ebbflow_plan::BackfillDesc;
use ebbflow_storage::{StateStore, StateTable};

/// The default of `backfill_rows_per_barrier`.
pub const DEFAULT_BACKFILL_ROWS_PER_BARRIER: usize = 8 * CHUNK_SIZE;

/// Rows of snapshot one scan actor emits per barrier: the system parameter
/// `backfill_rows_per_barrier` (one value per process, which is one
/// cluster).
static ROWS_PER_BARRIER: AtomicUsize = AtomicUsize::new(DEFAULT_BACKFILL_ROWS_PER_BARRIER);

pub fn set_backfill_rows_per_barrier(rows: usize) {
    ROWS_PER_BARRIER.store(rows.max(1), Ordering::Relaxed);
}

pub fn backfill_rows_per_barrier() -> usize {
    ROWS_PER_BARRIER.load(Ordering::Relaxed)
}

/// Where the backfill of one vnode is.
#[derive(Clone, Debug, PartialEq)]
enum Position {
    Start,
    /// Every row with an encoded key up to this one was emitted.
    After(Vec<u8>),
    Done,
}

struct Backfill {
    desc: BackfillDesc,
    upstream: StateTable,
    progress_table: StateTable,
    /// Position of each owned vnode, once loaded.
    positions: Option<BTreeMap<VirtualNode, Position>>,
    /// Every owned vnode is done (the scan only forwards).
    done: bool,
}

pub struct StreamScanExecutor {
    backfill: Option<Backfill>,
    vnodes: Bitmap,
    committed: watch::Receiver<u64>,
}

impl StreamScanExecutor {
    /// A scan that backfills as `backfill` says (`None`: it only forwards,
    /// for jobs created before backfill progress was kept).
    pub fn new(
        backfill: Option<BackfillDesc>,
        vnodes: Bitmap,
        store: Arc<dyn StateStore>,
        committed: watch::Receiver<u64>,
    ) -> Self {
        let backfill = backfill.map(|desc| Backfill {
            upstream: desc.upstream_state.build(store.clone(), Bitmap::full()),
            progress_table: desc.progress.build(store, vnodes.clone()),
            desc,
            positions: None,
            done: false,
        });
        StreamScanExecutor {
            backfill,
            vnodes,
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

impl Backfill {
    /// Load the positions of the owned vnodes from the committed progress.
    async fn load(&mut self, vnodes: &Bitmap) -> StreamResult<()> {
        if self.positions.is_none() {
            let mut positions = BTreeMap::new();
            for v in vnodes.iter() {
                let pos = match self.progress_table.get_at(v, &[]).await? {
                    None => Position::Start,
                    Some(row) if matches!(row.first(), Some(Some(ScalarValue::Boolean(true)))) => {
                        Position::Done
                    }
                    Some(row) => Position::After(self.upstream.encode_pk(&row[1..])),
                };
                positions.insert(v, pos);
            }
            self.done = positions.values().all(|p| *p == Position::Done);
            self.positions = Some(positions);
        }
        Ok(())
    }

    /// Whether an upstream change to `row` is to be forwarded.
    fn forwards(&self, row: &[Datum]) -> bool {
        let Some(positions) = &self.positions else {
            return true;
        };
        let vnode = vnode_of(row, &self.desc.upstream_dist);
        match positions.get(&vnode) {
            Some(Position::Done) | None => true,
            Some(Position::Start) => false,
            Some(Position::After(pos)) => {
                let pk: Vec<Datum> = self
                    .desc
                    .upstream_pk
                    .iter()
                    .map(|&i| row[i].clone())
                    .collect();
                self.upstream.encode_pk(&pk) <= *pos
            }
        }
    }

    /// Keep the changes `forwards` accepts; an update pair cut in half
    /// becomes a plain insert or delete.
    fn filter(&self, chunk: StreamChunk) -> StreamChunk {
        let mut out = StreamChunkBuilder::new();
        let mut rows = chunk.rows().peekable();
        while let Some((op, row)) = rows.next() {
            if op == Op::UpdateDelete {
                if let Some((Op::UpdateInsert, _)) = rows.peek() {
                    if let Some((_, new)) = rows.next() {
                        match (self.forwards(&row), self.forwards(&new)) {
                            (true, true) => {
                                out.push(Op::UpdateDelete, row);
                                out.push(Op::UpdateInsert, new);
                            }
                            (true, false) => out.push(Op::Delete, row),
                            (false, true) => out.push(Op::Insert, new),
                            (false, false) => {}
                        }
                    }
                    continue;
                }
            }
            if self.forwards(&row) {
                out.push(op, row);
            }
        }
        out.take()
    }

    /// Emit the next slice of the snapshot and record the new positions.
    async fn next_slice(
        &mut self,
        vnodes: &Bitmap,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        self.load(vnodes).await?;
        let Some(positions) = self.positions.as_mut() else {
            return Ok(());
        };
        let mut budget = backfill_rows_per_barrier();
        let mut rows: Vec<Row> = Vec::new();
        for (&vnode, pos) in positions.iter_mut() {
            if budget == 0 {
                break;
            }
            let after = match pos {
                Position::Done => continue,
                Position::After(k) => Some(k.as_slice()),
                Position::Start => None,
            };
            let slice = self
                .upstream
                .scan_vnode_committed_after(vnode, after, budget)
                .await?;
            let finished = slice.len() < budget;
            budget -= slice.len();
            let saved = if finished {
                *pos = Position::Done;
                vec![Some(ScalarValue::Boolean(true))]
            } else {
                let Some((key, row)) = slice.last() else {
                    continue;
                };
                let mut saved = vec![Some(ScalarValue::Boolean(false))];
                saved.extend(self.desc.upstream_pk.iter().map(|&i| row[i].clone()));
                *pos = Position::After(key.clone());
                saved
            };
            self.progress_table.put_at(vnode, &[], &saved);
            rows.extend(slice.into_iter().map(|(_, row)| row));
        }
        self.done = positions.values().all(|p| *p == Position::Done);
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            out.push(StreamChunk::inserts(
                rows.by_ref().take(CHUNK_SIZE).collect(),
            ));
        }
        Ok(())
    }
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
        match &mut self.backfill {
            Some(b) if !b.done => {
                b.load(&self.vnodes).await?;
                if !b.done {
                    let kept = b.filter(chunk);
                    if !kept.is_empty() {
                        out.push(kept);
                    }
                    return Ok(());
                }
                out.push(chunk);
            }
            _ => out.push(chunk),
        }
        Ok(())
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        Ok(match &mut self.backfill {
            Some(b) => b
                .progress_table
                .commit(barrier.epoch.prev, barrier.epoch.curr)?,
            // Forwarding only: no progress kept.
            None => Committed::nothing(),
        })
    }

    async fn after_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let Some(b) = &mut self.backfill else {
            return Ok(());
        };
        if b.done {
            return Ok(());
        }
        // The snapshot is the committed state as of this barrier.
        wait_committed(&mut self.committed, barrier.epoch.prev).await?;
        b.next_slice(&self.vnodes, out).await
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        self.vnodes = new.clone();
        if let Some(b) = &mut self.backfill {
            b.progress_table.update_vnodes(new.clone());
            // Positions of gained vnodes are read once the epoch that
            // moved them is committed (before the next message).
            b.positions = None;
            b.done = false;
        }
    }
}
