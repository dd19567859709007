//! Hash aggregation with retraction.
//!
//! Keeps, per group, the row count and one accumulator per call; emits the
//! changed group results once per barrier, or earlier once
//! [`EARLY_FLUSH_GROUPS`] groups changed (a group that appears is an
//! insert, one that changes an update, one whose rows are all retracted a
//! delete). Without GROUP BY there is exactly one group, whose row exists
//! from the first barrier on, as in SQL (`count(*)` of nothing is 0).
//!
//! State: one row per group in the state table, keyed by the group key,
//! holding the row count and every accumulator's saved state. Every group
//! the actor has met stays in memory, packed ([`groups`]); each is written
//! to the store once per epoch in which it changed. A group's previous result is not kept: it is
//! computed when the group first changes in an epoch. When the state table
//! is empty as the actor starts (a new job), every group it meets is new and
//! a miss never reads the store. A vnode it gains in a scale (or every
//! vnode, after a recovery) is read whole, in one scan, at its first miss.
//!
//! With a watermark on a grouping key (`window_start` of a time window
//! over a relation with `WATERMARK FOR`), the groups below it are closed:
//! at the barrier that brings the watermark they leave memory and the
//! state table, and later rows for them (late rows) are dropped, so state
//! stays as large as the open windows. Under `EMIT ON WINDOW CLOSE` a
//! group's changes are not emitted as they happen: its final row is
//! inserted once, when it closes.

pub(crate) mod groups;

use async_trait::async_trait;

use self::groups::{Groups, DIRTY, STORED};
use super::{ChunkBuilder, Committed, Executor};
use crate::message::{Barrier, Watermark};
use crate::{StreamError, StreamResult};
use ebbflow_common::encoding::{canonical, is_canonical, vnode_of};
use ebbflow_common::{identical, Bitmap, Datum, Op, Row, ScalarValue, StreamChunk};
use ebbflow_expr::AggCall;
use ebbflow_storage::StateTable;

/// Dirty groups that are flushed before the barrier comes: their state is
/// written and their changes emitted mid-epoch, so that the barrier finds
/// at most this many left to flush. A workload with fewer groups flushes
/// once per epoch, and one with many more groups changes each about once
/// per epoch anyway, so the early flush adds little output.
const EARLY_FLUSH_GROUPS: usize = 4096;

/// Groups looked at between two yields when a scale drops those of the
/// vnodes given away.
const RETAIN_SLICE: usize = 16 * 1024;

pub struct HashAggExecutor {
    group_by: Vec<usize>,
    calls: Vec<AggCall>,
    table: StateTable,
    groups: Groups,
    /// Groups changed this epoch, with the result they had before it.
    dirty: Vec<(u32, Option<Row>)>,
    /// Vnodes whose every stored group is in `groups`: a miss there is a
    /// new group. `None` until the first chunk looked at the table.
    complete: Option<Bitmap>,
    actor_id: u32,
    /// Bytes and groups last added to the process's cache metrics.
    reported: (i64, i64),
    /// Emit a group's row only when it closes.
    emit_on_window_close: bool,
    /// The highest watermark on a grouping key: (key position, value).
    watermark: Option<(usize, ScalarValue)>,
}

impl HashAggExecutor {
    pub fn new(
        group_by: Vec<usize>,
        calls: Vec<AggCall>,
        table: StateTable,
        actor_id: u32,
    ) -> Self {
        HashAggExecutor {
            groups: Groups::new(group_by.len(), &calls, false),
            group_by,
            calls,
            table,
            dirty: Vec::new(),
            complete: None,
            actor_id,
            reported: (0, 0),
            emit_on_window_close: false,
            watermark: None,
        }
    }

    /// The input only inserts: `min`/`max` keep one value, not a multiset.
    pub fn append_only_input(mut self, yes: bool) -> Self {
        self.groups = Groups::new(self.group_by.len(), &self.calls, yes);
        self
    }

    /// Emit each group once, when the watermark closes it.
    pub fn emit_on_window_close(mut self, yes: bool) -> Self {
        self.emit_on_window_close = yes;
        self
    }

    /// At the first chunk (or watermark): if the state table is empty,
    /// every vnode is complete in memory.
    async fn init_complete(&mut self) -> StreamResult<()> {
        if self.complete.is_none() {
            self.complete = Some(if self.table.is_empty().await? {
                self.table.vnodes().clone()
            } else {
                Bitmap::empty()
            });
        }
        Ok(())
    }

    /// Whether row `i` of `columns` is for a group the watermark closed.
    fn is_late(&self, columns: &[ebbflow_common::Column], i: usize) -> bool {
        let Some((k, w)) = &self.watermark else {
            return false;
        };
        columns[self.group_by[*k]].datum(i).is_some_and(|v| v < *w)
    }

    /// Drop the groups below the watermark from memory and the state
    /// table; under `EMIT ON WINDOW CLOSE` emit their rows first. Stored
    /// groups not in memory yet (of vnodes gained in a scale, or after a
    /// recovery) are read first: they may be closed too.
    async fn close_groups(&mut self, out: &mut Vec<StreamChunk>) -> StreamResult<()> {
        let Some((k, w)) = self.watermark.clone() else {
            return Ok(());
        };
        self.init_complete().await?;
        let missing: Vec<_> = self
            .table
            .vnodes()
            .iter()
            .filter(|v| !self.complete.as_ref().is_some_and(|c| c.contains(*v)))
            .collect();
        for vnode in missing {
            self.load_vnode(vnode).await?;
        }
        let mut closed: Vec<usize> = (0..self.groups.len())
            .filter(|&g| self.groups.key(g)[k].as_ref().is_some_and(|v| *v < w))
            .collect();
        if closed.is_empty() {
            return Ok(());
        }
        let mut builder = ChunkBuilder::new();
        for &g in &closed {
            if self.emit_on_window_close {
                if let Some(row) = output_of(false, &self.groups, g)? {
                    builder.push(Op::Insert, row, out);
                }
            }
            if self.groups.flags[g] & STORED != 0 {
                self.table.delete(&self.groups.key(g));
            }
        }
        builder.finish(out);
        // Highest number first: a removal moves the last group down.
        closed.sort_unstable_by(|a, b| b.cmp(a));
        for g in closed {
            self.groups.remove(g);
        }
        Ok(())
    }

    /// Bring the process's cache metrics up to date with this actor.
    fn report_cache(&mut self, bytes: i64, groups: i64) {
        ebbflow_metrics::agg_cache_changed(bytes - self.reported.0, groups - self.reported.1);
        self.reported = (bytes, groups);
    }

    fn global(&self) -> bool {
        self.group_by.is_empty()
    }

    /// Add the group of `key`, from its stored state if it has one.
    async fn add_group(&mut self, hash: u64, key: Row) -> StreamResult<usize> {
        let saved = self.table.get(&key).await?;
        // A stored group keeps the key it was shown with (`1.0`, though
        // this row says `1.00`): saved beside its state, or else the
        // canonical one its state key holds.
        let key = match &saved {
            Some(saved) => match saved_key(saved, self.groups.states.len())? {
                Some(shown) => shown,
                None if key.iter().flatten().all(is_canonical) => key,
                None => key.iter().map(|d| d.as_ref().map(canonical)).collect(),
            },
            None => key,
        };
        let g = self.groups.insert(hash, key);
        if let Some(saved) = saved {
            decode_state(&saved, &mut self.groups, g)?;
            self.groups.flags[g] |= STORED;
        }
        Ok(g)
    }

    /// Read every stored group of `vnode` into memory: at the first miss
    /// there after a scale gave the vnode to this actor, or after a
    /// recovery. One scan costs far less than a point read per group, and
    /// afterwards a miss in the vnode is a new group.
    async fn load_vnode(&mut self, vnode: ebbflow_common::VirtualNode) -> StreamResult<()> {
        let cols: Vec<usize> = (0..self.group_by.len()).collect();
        for (key, saved) in self.table.scan_vnode(vnode).await? {
            let hash = self.groups.hash_row(&key, &cols);
            if self.groups.find_row(hash, &key).is_some() {
                continue;
            }
            // The stored key is the canonical one (`1`): the group shows
            // the value it was created with (`1.0`), saved beside it.
            let key = saved_key(&saved, self.groups.states.len())?.unwrap_or(key);
            let g = self.groups.insert(hash, key);
            decode_state(&saved, &mut self.groups, g)?;
            self.groups.flags[g] |= STORED;
        }
        if let Some(c) = &mut self.complete {
            c.set(vnode, true);
        }
        Ok(())
    }

    /// Note group `g`'s first change of the epoch, with the result the
    /// downstream holds for it until then.
    fn mark_dirty(&mut self, g: usize) -> StreamResult<()> {
        let before = if self.groups.flags[g] & STORED != 0 {
            output_of(self.global(), &self.groups, g)?
        } else {
            None
        };
        self.groups.flags[g] |= DIRTY;
        self.dirty.push((g as u32, before));
        Ok(())
    }

    /// Write the dirty groups' state and emit their changes.
    fn flush_dirty(&mut self, out: &mut Vec<StreamChunk>) -> StreamResult<()> {
        let global = self.global();
        let mut builder = ChunkBuilder::new();
        let mut gone = Vec::new();
        for (g, old) in std::mem::take(&mut self.dirty) {
            let g = g as usize;
            self.groups.flags[g] &= !DIRTY;
            let new = output_of(global, &self.groups, g)?;
            if self.groups.row_counts[g] == 0 && !global {
                self.table.delete(&self.groups.key(g));
                gone.push(g);
            } else {
                self.table
                    .put(&self.groups.key(g), &encode_state(&self.groups, g));
                self.groups.flags[g] |= STORED;
            }
            if self.emit_on_window_close {
                continue;
            }
            match (old, new) {
                (None, Some(n)) => builder.push(Op::Insert, n, out),
                (Some(o), None) => builder.push(Op::Delete, o, out),
                (Some(o), Some(n)) if !identical(&o, &n) => {
                    builder.push(Op::UpdateDelete, o, out);
                    builder.push(Op::UpdateInsert, n, out);
                }
                _ => {}
            }
        }
        // Highest number first: a removal moves the last group down.
        gone.sort_unstable_by(|a, b| b.cmp(a));
        for g in gone {
            self.groups.remove(g);
        }
        builder.finish(out);
        Ok(())
    }
}

/// Group `g`'s output row (`None` for a group of no rows, unless global).
fn output_of(global: bool, groups: &Groups, g: usize) -> StreamResult<Option<Row>> {
    let rows = groups.row_counts[g];
    if rows == 0 && !global {
        return Ok(None);
    }
    let key = groups.key(g);
    let mut row: Row = Vec::with_capacity(key.len() + groups.states.len());
    row.extend_from_slice(&key);
    for s in &groups.states {
        row.push(s.output(g, rows)?);
    }
    Ok(Some(row))
}

/// The stored state of group `g`: its row count, then per call the length
/// of the call's state and the state.
/// A group's stored state: its row count, then per call the length of
/// its state and the state; then, only if the group's key is not written
/// as its canonical representative (`1.0`, whose state key decodes as
/// `1`), the key as the group shows it.
fn encode_state(groups: &Groups, g: usize) -> Row {
    let rows = groups.row_counts[g];
    let mut row: Row = vec![Some(ScalarValue::Int64(rows))];
    for s in &groups.states {
        let saved = s.save(g, rows);
        row.push(Some(ScalarValue::Int32(saved.len() as i32)));
        row.extend(saved);
    }
    let key = groups.key(g);
    if !key.iter().flatten().all(is_canonical) {
        row.extend(key.iter().cloned());
    }
    row
}

fn corrupt() -> StreamError {
    StreamError::Internal("corrupt aggregate state".into())
}

fn state_int(d: Option<&Datum>) -> StreamResult<usize> {
    d.and_then(|d| usize::try_from(d.as_ref()?.as_i64()?).ok())
        .ok_or_else(corrupt)
}

/// Where the calls' states end in a stored state of `calls` calls.
fn states_end(saved: &[Datum], calls: usize) -> StreamResult<usize> {
    let mut at = 1;
    for _ in 0..calls {
        at += 1 + state_int(saved.get(at))?;
    }
    Ok(at)
}

/// The key a stored group shows, if it was saved beside its state (see
/// [`encode_state`]).
fn saved_key(saved: &[Datum], calls: usize) -> StreamResult<Option<Row>> {
    let end = states_end(saved, calls)?;
    Ok(saved
        .get(end..)
        .filter(|k| !k.is_empty())
        .map(<[Datum]>::to_vec))
}

fn decode_state(saved: &[Datum], groups: &mut Groups, g: usize) -> StreamResult<()> {
    let int = |d: Option<&Datum>| d.and_then(|d| d.as_ref()?.as_i64()).ok_or_else(corrupt);
    groups.row_counts[g] = int(saved.first())?;
    let mut at = 1;
    for s in &mut groups.states {
        let n = state_int(saved.get(at))?;
        let part = saved.get(at + 1..at + 1 + n).ok_or_else(corrupt)?;
        s.load(g, part)?;
        at += 1 + n;
    }
    Ok(())
}

impl Drop for HashAggExecutor {
    fn drop(&mut self) {
        self.report_cache(0, 0);
    }
}

#[async_trait]
impl Executor for HashAggExecutor {
    fn name(&self) -> &'static str {
        "HashAgg"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        self.init_complete().await?;
        let columns = chunk.columns();
        let rows: Vec<usize> = chunk
            .visible_indices()
            .filter(|&i| !self.is_late(columns, i))
            .collect();
        let hashes = self.groups.hash_rows(columns, &self.group_by, &rows);
        // 1. each row's group, found or added, and marked dirty before
        // the chunk changes it (its result before the epoch is kept)
        let mut gs: Vec<u32> = Vec::with_capacity(rows.len());
        for (&i, &hash) in rows.iter().zip(&hashes) {
            let g = match self.groups.find_at(hash, columns, &self.group_by, i) {
                Some(g) => {
                    if self.groups.flags[g] & DIRTY == 0 {
                        self.mark_dirty(g)?;
                    }
                    g
                }
                None => {
                    let key: Row = self.group_by.iter().map(|&c| columns[c].datum(i)).collect();
                    let vnode = self.table.vnode_of_pk(&key);
                    if !self.complete.as_ref().is_some_and(|c| c.contains(vnode)) {
                        self.load_vnode(vnode).await?;
                    }
                    let g = match self.groups.find_at(hash, columns, &self.group_by, i) {
                        Some(g) => g,
                        None => self.groups.insert(hash, key),
                    };
                    self.mark_dirty(g)?;
                    g
                }
            };
            gs.push(g as u32);
        }
        // 2. row counts, then each call a column at a time
        let ops = chunk.ops();
        for (&i, &g) in rows.iter().zip(&gs) {
            self.groups.row_counts[g as usize] += if ops[i].is_insert() { 1 } else { -1 };
        }
        for (states, call) in self.groups.states.iter_mut().zip(&self.calls) {
            let arg = call.arg.map(|c| &columns[c]);
            if states.update_column(&gs, &rows, ops, arg) {
                continue;
            }
            for (&i, &g) in rows.iter().zip(&gs) {
                let value = arg.and_then(|c| c.datum(i));
                if let Err(e) = states.update(g as usize, ops[i].is_insert(), &value) {
                    let row = chunk.row(i);
                    tracing::warn!(actor_id = self.actor_id, error = %e, ?row, "aggregate update failed; row ignored by this aggregate");
                }
            }
        }
        if self.dirty.len() >= EARLY_FLUSH_GROUPS {
            self.flush_dirty(out)?;
        }
        Ok(())
    }

    /// A watermark on a grouping key closes the groups below it (at the
    /// barrier) and is the watermark of that key in the output.
    async fn process_watermarks(
        &mut self,
        inputs: &[Vec<Watermark>],
    ) -> StreamResult<Vec<Watermark>> {
        let mut out = Vec::new();
        for w in inputs.first().map(Vec::as_slice).unwrap_or_default() {
            let Some(k) = self.group_by.iter().position(|&c| c == w.column) else {
                continue;
            };
            match &mut self.watermark {
                Some((at, v)) if *at == k => {
                    if w.value > *v {
                        *v = w.value.clone();
                    }
                }
                Some(_) => {}
                None => self.watermark = Some((k, w.value.clone())),
            }
            out.push(Watermark::new(k, w.value.clone()));
        }
        Ok(out)
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        let global = self.global();
        if global && self.groups.len() == 0 {
            // The global group exists from the first barrier on.
            let hash = self.groups.hash_row(&[], &[]);
            let g = self.add_group(hash, Vec::new()).await?;
            if self.groups.flags[g] & STORED == 0 {
                self.groups.flags[g] |= DIRTY;
                self.dirty.push((g as u32, None));
            }
        }
        self.flush_dirty(out)?;
        self.close_groups(out).await?;
        let committed = self.table.commit(barrier.epoch.prev, barrier.epoch.curr)?;
        let (bytes, groups) = (self.groups.allocated_bytes(), self.groups.len());
        self.report_cache(bytes as i64, groups as i64);
        Ok(committed)
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        self.table.update_vnodes(new.clone());
        // Groups of the vnodes kept stay cached (this actor alone wrote
        // them); the vnodes gained are read from the store on a miss.
        debug_assert!(self.dirty.is_empty(), "a scale comes after a barrier");
        // In slices, letting the other actors run in between: until the
        // new actors have the barrier the job is paused, and on a small
        // machine this actor's slices and theirs share the cores.
        let dist: Vec<usize> = (0..self.group_by.len()).collect();
        let mut below = self.groups.len();
        while below > 0 {
            below = self
                .groups
                .retain_below(below, RETAIN_SLICE, |k| new.contains(vnode_of(k, &dist)));
            tokio::task::yield_now().await;
        }
        self.groups.shrink_if_sparse();
        if let Some(c) = &mut self.complete {
            *c = Bitmap::from_vnodes(c.iter().filter(|v| new.contains(*v)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::{barrier, pretty, store, table};
    use super::*;
    use ebbflow_common::DataType;
    use ebbflow_expr::AggKind;

    fn call(kind: AggKind, arg: Option<usize>, ret: DataType) -> AggCall {
        AggCall {
            kind,
            arg,
            arg_type: arg.map(|_| DataType::Int64),
            return_type: ret,
            distinct: false,
        }
    }

    #[tokio::test]
    async fn the_watermark_closes_groups_and_drops_late_rows() {
        for eowc in [false, true] {
            let s = store();
            let calls = vec![call(AggKind::CountStar, None, DataType::Int64)];
            let t = table(&s, 1, vec![DataType::Int64], vec![0], None);
            let mut agg = HashAggExecutor::new(vec![0], calls, t, 0).emit_on_window_close(eowc);
            let ty = [DataType::Int64, DataType::Int64];
            let mut out = vec![];
            agg.process_chunk(
                0,
                StreamChunk::from_pretty(
                    "+ 1 0
+ 1 0
+ 2 0
+ 3 0",
                    &ty,
                ),
                &mut out,
            )
            .await
            .expect("chunk");
            let wm = |v| vec![vec![Watermark::new(0, ScalarValue::Int64(v))]];
            let passed = agg.process_watermarks(&wm(2)).await.expect("watermarks");
            assert_eq!(passed, vec![Watermark::new(0, ScalarValue::Int64(2))]);
            let _ = agg
                .process_barrier(&barrier(2), &mut out)
                .await
                .expect("barrier");
            let mut got = pretty(&out);
            got.sort();
            let want: &[&str] = if eowc {
                &["+ 1 2"]
            } else {
                &["+ 1 2", "+ 2 1", "+ 3 1"]
            };
            assert_eq!(got, want, "eowc {eowc}");
            assert_eq!(agg.groups.len(), 2, "group 1 is closed");
            s.commit(1);
            // A late row of group 1 is dropped; group 2 still changes.
            out.clear();
            agg.process_chunk(
                0,
                StreamChunk::from_pretty(
                    "+ 1 0
+ 2 0",
                    &ty,
                ),
                &mut out,
            )
            .await
            .expect("chunk");
            agg.process_watermarks(&wm(3)).await.expect("watermarks");
            let _ = agg
                .process_barrier(&barrier(3), &mut out)
                .await
                .expect("barrier");
            let want: &[&str] = if eowc {
                &["+ 2 2"]
            } else {
                &["U- 2 1", "U+ 2 2"]
            };
            assert_eq!(pretty(&out), want, "eowc {eowc}");
            s.commit(2);
            let left: Vec<_> = agg.table.scan_all_vnodes().await.expect("scan");
            assert_eq!(left.len(), 1, "only group 3 is stored");
        }
    }

    #[tokio::test]
    async fn groups_appear_change_and_vanish() {
        let s = store();
        let calls = vec![
            call(AggKind::CountStar, None, DataType::Int64),
            call(AggKind::Max, Some(1), DataType::Int64),
        ];
        let t = table(&s, 1, vec![DataType::Int64], vec![0], None);
        let mut agg = HashAggExecutor::new(vec![0], calls.clone(), t, 0);
        let ty = [DataType::Int64, DataType::Int64];
        let mut out = vec![];
        agg.process_chunk(
            0,
            StreamChunk::from_pretty("+ 1 10\n+ 1 30\n+ 2 5", &ty),
            &mut out,
        )
        .await
        .unwrap();
        assert!(out.is_empty(), "output waits for the barrier");
        let _ = agg.process_barrier(&barrier(2), &mut out).await.unwrap();
        let mut got = pretty(&out);
        got.sort();
        assert_eq!(got, vec!["+ 1 2 30", "+ 2 1 5"]);
        s.commit(1);
        // retract the max of group 1, all of group 2
        out.clear();
        agg.process_chunk(0, StreamChunk::from_pretty("- 1 30\n- 2 5", &ty), &mut out)
            .await
            .unwrap();
        let _ = agg.process_barrier(&barrier(3), &mut out).await.unwrap();
        let mut got = pretty(&out);
        got.sort();
        assert_eq!(got, vec!["- 2 1 5", "U+ 1 1 10", "U- 1 2 30"]);
        s.commit(2);
        // a new executor over the same state (recovery) continues exactly
        let t = table(&s, 1, vec![DataType::Int64], vec![0], None);
        let mut agg = HashAggExecutor::new(vec![0], calls, t, 0);
        out.clear();
        agg.process_chunk(0, StreamChunk::from_pretty("+ 1 50", &ty), &mut out)
            .await
            .unwrap();
        let _ = agg.process_barrier(&barrier(4), &mut out).await.unwrap();
        assert_eq!(pretty(&out), vec!["U- 1 1 10", "U+ 1 2 50"]);
    }

    #[tokio::test]
    async fn global_aggregate_has_a_row_from_the_start() {
        let s = store();
        let t = table(&s, 1, vec![], vec![], None);
        let mut agg = HashAggExecutor::new(
            vec![],
            vec![
                call(AggKind::CountStar, None, DataType::Int64),
                call(AggKind::Sum, Some(0), DataType::Decimal),
            ],
            t,
            0,
        );
        let mut out = vec![];
        let _ = agg.process_barrier(&barrier(2), &mut out).await.unwrap();
        assert_eq!(pretty(&out), vec!["+ 0 ."]);
        out.clear();
        agg.process_chunk(
            0,
            StreamChunk::from_pretty("+ 4\n+ 6", &[DataType::Int64]),
            &mut out,
        )
        .await
        .unwrap();
        let _ = agg.process_barrier(&barrier(3), &mut out).await.unwrap();
        assert_eq!(pretty(&out), vec!["U- 0 .", "U+ 2 10"]);
    }

    fn count_star() -> Vec<AggCall> {
        vec![call(AggKind::CountStar, None, DataType::Int64)]
    }

    fn keys(ks: impl Iterator<Item = i64>) -> StreamChunk {
        StreamChunk::inserts(ks.map(|k| vec![Some(ScalarValue::Int64(k))]).collect())
    }

    #[tokio::test]
    async fn many_changed_groups_are_flushed_before_the_barrier() {
        let s = store();
        let t = table(&s, 1, vec![DataType::Int64], vec![0], None);
        let mut agg = HashAggExecutor::new(vec![0], count_star(), t, 0);
        let n = EARLY_FLUSH_GROUPS as i64 + 100;
        let mut out = vec![];
        agg.process_chunk(0, keys(0..100), &mut out).await.unwrap();
        assert!(out.is_empty());
        // The chunk that takes the changed groups past the bound flushes.
        agg.process_chunk(0, keys(100..n), &mut out).await.unwrap();
        let early: usize = out.iter().map(StreamChunk::len).sum();
        assert_eq!(early, n as usize);
        let _ = agg.process_barrier(&barrier(2), &mut out).await.unwrap();
        let all = pretty(&out);
        assert_eq!(all.len(), n as usize);
        assert!(all.iter().all(|l| l.starts_with("+ ") && l.ends_with(" 1")));
        // A group changed again after its early flush: an update of the
        // result emitted earlier in the same epoch.
        s.commit(1);
        out.clear();
        agg.process_chunk(0, keys(0..n), &mut out).await.unwrap();
        agg.process_chunk(0, keys(0..1), &mut out).await.unwrap();
        let _ = agg.process_barrier(&barrier(3), &mut out).await.unwrap();
        let got = pretty(&out);
        assert!(got.contains(&"U- 0 1".to_string()));
        assert!(got.contains(&"U+ 0 2".to_string()) && got.contains(&"U+ 0 3".to_string()));
        assert_eq!(got.len(), 2 * n as usize + 2);
    }

    #[tokio::test]
    async fn a_vnode_is_read_whole_at_its_first_miss() {
        let s = store();
        let t = table(&s, 1, vec![DataType::Int64], vec![0], None);
        let mut agg = HashAggExecutor::new(vec![0], count_star(), t, 0);
        let mut out = vec![];
        agg.process_chunk(0, keys(0..1000), &mut out).await.unwrap();
        let _ = agg.process_barrier(&barrier(2), &mut out).await.unwrap();
        s.commit(1);
        // A new executor over the stored groups (a recovery, or a scale
        // that gave it every vnode).
        let t = table(&s, 1, vec![DataType::Int64], vec![0], None);
        let in_vnode = (0..1000)
            .filter(|&k| {
                t.vnode_of_pk(&[Some(ScalarValue::Int64(k))])
                    == t.vnode_of_pk(&[Some(ScalarValue::Int64(7))])
            })
            .count();
        assert!(in_vnode > 1);
        let mut agg = HashAggExecutor::new(vec![0], count_star(), t, 0);
        out.clear();
        agg.process_chunk(0, keys(7..8), &mut out).await.unwrap();
        assert_eq!(agg.groups.len(), in_vnode);
        agg.process_chunk(0, keys(1000..1001), &mut out)
            .await
            .unwrap();
        let _ = agg.process_barrier(&barrier(3), &mut out).await.unwrap();
        let mut got = pretty(&out);
        got.sort();
        assert_eq!(got, vec!["+ 1000 1", "U+ 7 2", "U- 7 1"]);
    }
}
