//! The origin of the watermarks of an append-only table (a source keeps
//! them per split, in its reader, with [`drop_late`]): placed right after
//! the scan of a table declared with `WATERMARK FOR col AS expr`, it
//! announces at each barrier the highest
//! `expr` of the rows it has passed, and drops the rows whose `col` is
//! below the watermark it has announced (late rows), so that nothing
//! downstream ever sees a row below a watermark it was given.
//!
//! The watermark is the relation's, not the actor's: an actor that sees no
//! rows (rows are spread over the actors by key) must not hold the job's
//! watermark back. So each actor saves its watermark whenever it rises,
//! under the first vnode it owns (the state table is keyed by the vnode
//! alone), and at every barrier takes the highest watermark saved by
//! any actor. That is also where an actor that gains vnodes in a scale, or
//! starts after a recovery, resumes.
//!
//! It reads only what the cluster committed. A peer can be a barrier ahead
//! (actors are aligned downstream, not here), and what it saved there comes
//! from rows of the epoch this actor is still in: taking it would make this
//! actor's rows of that same epoch late, rows downstream was never told
//! were late (a statement whose rows went to two actors lost the lower
//! half). The committed watermark may lag what downstream was told; a row
//! below that is dropped downstream, where each executor that keys state
//! by the watermark drops what is below its own.

use arrow_buffer::BooleanBufferBuilder;
use async_trait::async_trait;

use super::project::log_errors;
use super::{Committed, Executor};
use crate::message::{Barrier, Watermark};
use crate::StreamResult;
use ebbflow_common::{Bitmap, Op, ScalarValue, StreamChunk};
use ebbflow_expr::Expr;
use ebbflow_plan::WatermarkDesc;
use ebbflow_storage::StateTable;

pub struct WatermarkFilterExecutor {
    /// The column and the watermark a row sets (`col - INTERVAL …`).
    watermark: WatermarkDesc,
    /// Each actor's announced watermark, under the first vnode it owns.
    table: StateTable,
    /// The watermark announced last; rows below it are late.
    announced: Option<ScalarValue>,
    /// The highest `expr` of the rows passed since.
    highest: Option<ScalarValue>,
    /// Whether `announced` caught up with the table since the actor started.
    loaded: bool,
    actor_id: u32,
}

impl WatermarkFilterExecutor {
    pub fn new(column: usize, expr: Expr, table: StateTable, actor_id: u32) -> Self {
        WatermarkFilterExecutor {
            watermark: WatermarkDesc {
                column,
                expr,
                text: String::new(),
            },
            table,
            announced: None,
            highest: None,
            loaded: false,
            actor_id,
        }
    }

    /// Catch up with the highest watermark any actor saved in a committed
    /// epoch.
    async fn load(&mut self) -> StreamResult<()> {
        for (_, saved) in self.table.scan_all_vnodes_committed().await? {
            if let Some(Some(v)) = saved.into_iter().next() {
                if self.announced.as_ref().is_none_or(|a| v > *a) {
                    self.announced = Some(v);
                }
            }
        }
        self.loaded = true;
        Ok(())
    }
}

/// `chunk` without its rows below `announced` on the watermark column;
/// `highest` rises to the highest watermark the rows kept set. Only inserts
/// come here (sources and append-only tables), so dropping a row never
/// splits an update pair.
pub fn drop_late(
    chunk: StreamChunk,
    watermark: &WatermarkDesc,
    announced: &Option<ScalarValue>,
    highest: &mut Option<ScalarValue>,
    actor_id: u32,
) -> StreamChunk {
    let (marks, errors) = watermark.expr.eval_chunk(&chunk);
    log_errors(actor_id, &chunk, &errors);
    let Some(times) = chunk.columns().get(watermark.column) else {
        return chunk;
    };
    let n = chunk.capacity();
    let mut keep = BooleanBufferBuilder::new(n);
    keep.append_n(n, false);
    let mut kept = 0;
    for i in chunk.visible_indices() {
        let late = match (announced, times.datum(i)) {
            (Some(w), Some(t)) => t < *w,
            _ => false,
        };
        if late {
            continue;
        }
        keep.set_bit(i, true);
        kept += 1;
        if let Some(m) = marks.datum(i) {
            if highest.as_ref().is_none_or(|h| m > *h) {
                *highest = Some(m);
            }
        }
    }
    if kept == chunk.len() {
        return chunk;
    }
    let ops: Vec<Op> = chunk.ops().to_vec();
    chunk.with_visibility(ops, keep.finish())
}

#[async_trait]
impl Executor for WatermarkFilterExecutor {
    fn name(&self) -> &'static str {
        "WatermarkFilter"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        if !self.loaded {
            self.load().await?;
        }
        let chunk = drop_late(
            chunk,
            &self.watermark,
            &self.announced,
            &mut self.highest,
            self.actor_id,
        );
        if !chunk.is_empty() {
            out.push(chunk);
        }
        Ok(())
    }

    async fn process_watermarks(
        &mut self,
        _inputs: &[Vec<Watermark>],
    ) -> StreamResult<Vec<Watermark>> {
        // Every barrier: an actor without rows keeps up with the others.
        self.load().await?;
        if let Some(h) = self.highest.take() {
            if self.announced.as_ref().is_none_or(|a| h > *a) {
                let first = self.table.vnodes().iter().next();
                if let Some(vnode) = first {
                    self.table.put_at(vnode, &[], &[Some(h.clone())]);
                }
                self.announced = Some(h);
            }
        }
        Ok(match &self.announced {
            Some(w) => vec![Watermark::new(self.watermark.column, w.clone())],
            None => Vec::new(),
        })
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        Ok(self.table.commit(barrier.epoch.prev, barrier.epoch.curr)?)
    }

    async fn after_barrier(
        &mut self,
        _barrier: &Barrier,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        // An actor added by a scale may read the state only after the
        // barrier that adds it (it skips the watermarks of that barrier).
        if !self.loaded {
            self.load().await?;
        }
        Ok(())
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        let _ = self.table.update_vnodes(new.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::{barrier, pretty, store, table};
    use super::*;
    use ebbflow_common::DataType;
    use ebbflow_expr::{build_func, Func};

    /// Watermark `v - 10` on column 1 of `(id, v)`.
    fn filter(
        store: &std::sync::Arc<ebbflow_storage::MemoryStateStore>,
    ) -> WatermarkFilterExecutor {
        let v = Expr::input_ref(1, DataType::Int64);
        let ten = Expr::literal(Some(ScalarValue::Int64(10)), DataType::Int64);
        let expr = build_func(Func::Sub, vec![v, ten]).expect("v - 10");
        let t = table(store, 1, vec![], vec![], Some(vec![DataType::Int64]));
        WatermarkFilterExecutor::new(1, expr, t, 0)
    }

    fn chunk(text: &str) -> StreamChunk {
        StreamChunk::from_pretty(text, &[DataType::Int64, DataType::Int64])
    }

    #[tokio::test]
    async fn late_rows_are_dropped_and_the_watermark_survives_a_restart() {
        let s = store();
        let mut f = filter(&s);
        let mut out = Vec::new();
        f.process_chunk(0, chunk("+ 1 50\n+ 2 30"), &mut out)
            .await
            .expect("chunk");
        assert_eq!(pretty(&out).len(), 2, "no watermark yet: nothing is late");
        assert_eq!(
            f.process_watermarks(&[vec![]]).await.expect("watermarks"),
            vec![Watermark::new(1, ScalarValue::Int64(40))]
        );
        let _ = f
            .process_barrier(&barrier(2), &mut out)
            .await
            .expect("barrier");
        let mut out = Vec::new();
        f.process_chunk(0, chunk("+ 3 39\n+ 4 40\n+ 5 45"), &mut out)
            .await
            .expect("chunk");
        assert_eq!(pretty(&out), vec!["+ 4 40", "+ 5 45"]);
        // Nothing higher than announced: the watermark stays.
        assert_eq!(
            f.process_watermarks(&[vec![]]).await.expect("watermarks"),
            vec![Watermark::new(1, ScalarValue::Int64(40))]
        );
        let _ = f
            .process_barrier(&barrier(3), &mut out)
            .await
            .expect("barrier");
        s.commit(2);
        // A new actor on the same vnodes resumes from the saved watermark.
        let mut g = filter(&s);
        g.after_barrier(&barrier(4), &mut Vec::new())
            .await
            .expect("load");
        let mut out = Vec::new();
        g.process_chunk(0, chunk("+ 6 20\n+ 7 41"), &mut out)
            .await
            .expect("chunk");
        assert_eq!(pretty(&out), vec!["+ 7 41"]);
    }

    /// Two actors of one job: the one ahead saved a watermark at a barrier
    /// the other has not reached; the rows the other still has from that
    /// epoch are not late. Once that epoch is committed they would be.
    #[tokio::test]
    async fn a_peer_a_barrier_ahead_does_not_make_this_epochs_rows_late() {
        let s = store();
        let half = |vnodes: std::ops::Range<u16>| {
            let mut f = filter(&s);
            f.table.update_vnodes(Bitmap::from_vnodes(vnodes));
            f
        };
        let mut ahead = half(0..128);
        let mut out = Vec::new();
        ahead
            .process_chunk(0, chunk("+ 1 33"), &mut out)
            .await
            .expect("chunk");
        ahead
            .process_watermarks(&[vec![]])
            .await
            .expect("watermarks");
        let _ = ahead
            .process_barrier(&barrier(2), &mut out)
            .await
            .expect("barrier");
        // The other actor, fresh (after a recovery), is still in epoch 1.
        let mut behind = half(128..256);
        let mut out = Vec::new();
        behind
            .process_chunk(0, chunk("+ 2 19\n+ 3 26"), &mut out)
            .await
            .expect("chunk");
        assert_eq!(pretty(&out), vec!["+ 2 19", "+ 3 26"]);
        assert_eq!(
            behind
                .process_watermarks(&[vec![]])
                .await
                .expect("watermarks"),
            vec![Watermark::new(1, ScalarValue::Int64(16))],
            "its own rows' watermark: the peer's epoch is not committed yet"
        );
        let _ = behind
            .process_barrier(&barrier(2), &mut Vec::new())
            .await
            .expect("barrier");
        s.commit(1);
        // Committed: at the next barrier it takes the peer's watermark.
        assert_eq!(
            behind
                .process_watermarks(&[vec![]])
                .await
                .expect("watermarks"),
            vec![Watermark::new(1, ScalarValue::Int64(23))]
        );
    }
}
