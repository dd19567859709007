//! Hash join of two streams with retraction, for INNER, LEFT, RIGHT and FULL
//! equi-joins with an optional residual condition.
//!
//! Each side keeps its rows in a state table keyed `join key | side pk`, so
//! the rows of one key are one prefix scan; a cache holds the keys touched
//! since the actor started. Outer joins keep no degree table: whether a row
//! has partners is recomputed from the other side's rows of the same key,
//! which is exact under any order of changes.
//!
//! # Window joins
//!
//! When both inputs have a watermark on the same join key (the window
//! start of two windowed aggregations, say), no row of a key below the
//! least of the two can come any more, from either side, as an insert or
//! a retraction: such rows can never match again or be retracted. At
//! each barrier where that bound rises the join drops them from state and
//! cache (first reading every owned vnode into the cache once, so the
//! cache holds every stored key), and announces the bound as the
//! watermark of the key's output column(s) that are never NULL-padded.

use std::collections::HashMap;

use async_trait::async_trait;

use super::{ChunkBuilder, Committed, Executor};
use crate::message::{Barrier, Watermark};
use crate::StreamResult;
use ebbflow_common::encoding::vnode_of;
use ebbflow_common::order::JoinKind;
use ebbflow_common::{Bitmap, Datum, FastHashMap, Op, Row, ScalarValue, StreamChunk};
use ebbflow_expr::Expr;
use ebbflow_storage::StateTable;

/// The cached rows of one join key. Past [`INDEX_FROM`] rows, each row's
/// position by its stream key, so a delete does not scan them all (a
/// key with many rows, such as a window of a windowed aggregation, is
/// updated row by row).
#[derive(Default)]
struct KeyRows {
    rows: Vec<Row>,
    index: Option<FastHashMap<Vec<Datum>, usize>>,
}

const INDEX_FROM: usize = 32;

fn pk_of(pk: &[usize], row: &Row) -> Vec<Datum> {
    pk.iter().map(|&i| row[i].clone()).collect()
}

impl KeyRows {
    fn new(rows: Vec<Row>, pk: &[usize]) -> Self {
        let mut k = KeyRows { rows, index: None };
        k.build_index(pk);
        k
    }

    fn build_index(&mut self, pk: &[usize]) {
        if self.index.is_none() && self.rows.len() > INDEX_FROM {
            let index = self
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| (pk_of(pk, r), i))
                .collect();
            self.index = Some(index);
        }
    }

    fn push(&mut self, row: Row, pk: &[usize]) {
        if let Some(index) = &mut self.index {
            index.insert(pk_of(pk, &row), self.rows.len());
        }
        self.rows.push(row);
        self.build_index(pk);
    }

    /// Remove the row with `row`'s stream key; whether there was one.
    fn remove(&mut self, row: &Row, pk: &[usize]) -> bool {
        let pos = match &mut self.index {
            Some(index) => index.remove(&pk_of(pk, row)),
            None => self
                .rows
                .iter()
                .position(|r| pk.iter().all(|&i| r[i] == row[i])),
        };
        let Some(pos) = pos else { return false };
        self.rows.swap_remove(pos);
        if let (Some(index), Some(moved)) = (&mut self.index, self.rows.get(pos)) {
            index.insert(pk_of(pk, moved), pos);
        }
        true
    }
}

/// One input of the join.
pub struct JoinSide {
    pub keys: Vec<usize>,
    /// The side's stream key (unique per row).
    pub pk: Vec<usize>,
    pub width: usize,
    /// Rows keyed `join key ++ pk`.
    pub table: StateTable,
    cache: FastHashMap<Vec<Datum>, KeyRows>,
    /// Owned vnodes whose every stored key is in `cache`: a key of theirs
    /// missing from it has no rows.
    complete: Bitmap,
    /// Whether the side has looked at its table once: found empty, every
    /// owned vnode is complete from the start (a new job reads nothing
    /// back for its new keys).
    checked_empty: bool,
    /// Rows in `cache`, and as last reported to the metrics.
    cached_rows: i64,
    reported_rows: i64,
}

impl JoinSide {
    pub fn new(keys: Vec<usize>, pk: Vec<usize>, width: usize, table: StateTable) -> Self {
        JoinSide {
            keys,
            pk,
            width,
            table,
            cache: HashMap::default(),
            complete: Bitmap::empty(),
            checked_empty: false,
            cached_rows: 0,
            reported_rows: 0,
        }
    }

    pub(super) fn key_of(&self, row: &Row) -> Vec<Datum> {
        self.keys.iter().map(|&i| row[i].clone()).collect()
    }

    fn state_pk(&self, row: &Row) -> Vec<Datum> {
        self.keys
            .iter()
            .chain(self.pk.iter())
            .map(|&i| row[i].clone())
            .collect()
    }

    fn same_pk(&self, a: &Row, b: &Row) -> bool {
        self.pk.iter().all(|&i| a[i] == b[i])
    }

    fn vnode_of_key(&self, key: &[Datum]) -> ebbflow_common::VirtualNode {
        let dist: Vec<usize> = (0..self.keys.len()).collect();
        vnode_of(key, &dist)
    }

    /// Make sure the rows of `key` are cached.
    pub(super) async fn load(&mut self, key: &[Datum]) -> StreamResult<()> {
        if !self.cache.contains_key(key) {
            if !self.checked_empty {
                self.checked_empty = true;
                if self.table.is_empty().await? {
                    self.complete = self.table.vnodes().clone();
                }
            }
            let rows: Vec<Row> = if self.complete.contains(self.vnode_of_key(key)) {
                Vec::new()
            } else {
                self.table
                    .scan_prefix(key)
                    .await?
                    .into_iter()
                    .map(|(_, v)| v)
                    .collect()
            };
            self.cached_rows += rows.len() as i64;
            self.cache
                .insert(key.to_vec(), KeyRows::new(rows, &self.pk));
        }
        Ok(())
    }

    pub(super) fn rows(&self, key: &[Datum]) -> &[Row] {
        self.cache
            .get(key)
            .map(|v| v.rows.as_slice())
            .unwrap_or(&[])
    }

    pub(super) fn insert(&mut self, key: Vec<Datum>, row: Row) {
        let pk = self.state_pk(&row);
        self.table.put(&pk, &row);
        self.cached_rows += 1;
        self.cache.entry(key).or_default().push(row, &self.pk);
    }

    pub(super) fn delete(&mut self, key: &[Datum], row: &Row) {
        let pk = self.state_pk(row);
        self.table.delete(&pk);
        if let Some(rows) = self.cache.get_mut(key) {
            if rows.remove(row, &self.pk) {
                self.cached_rows -= 1;
            }
        }
    }

    /// Read every stored row of the owned vnodes not yet complete into
    /// the cache (keys already cached are newer there).
    async fn load_all(&mut self) -> StreamResult<()> {
        let missing: Vec<_> = self
            .table
            .vnodes()
            .iter()
            .filter(|&v| !self.complete.contains(v))
            .collect();
        let n = self.keys.len();
        for vnode in missing {
            let mut read: HashMap<Vec<Datum>, Vec<Row>> = HashMap::new();
            for (pk, row) in self.table.scan_vnode(vnode).await? {
                let key = pk[..n.min(pk.len())].to_vec();
                if !self.cache.contains_key(&key) {
                    read.entry(key).or_default().push(row);
                }
            }
            for (key, rows) in read {
                self.cached_rows += rows.len() as i64;
                self.cache.insert(key, KeyRows::new(rows, &self.pk));
            }
            self.complete.set(vnode, true);
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    /// Drop from state and cache every row whose join key `k` is below
    /// `bound` (see "Window joins" above).
    async fn clean_below(&mut self, k: usize, bound: &ScalarValue) -> StreamResult<()> {
        self.load_all().await?;
        let below: Vec<Vec<Datum>> = self
            .cache
            .keys()
            .filter(|key| key[k].as_ref().is_some_and(|v| v < bound))
            .cloned()
            .collect();
        for key in below {
            if let Some(rows) = self.cache.remove(&key) {
                self.cached_rows -= rows.rows.len() as i64;
                for row in &rows.rows {
                    let pk = self.state_pk(row);
                    self.table.delete(&pk);
                }
            }
        }
        Ok(())
    }

    /// Commit the side's state at a barrier and report its cache size.
    pub(super) fn commit(&mut self, barrier: &Barrier) -> StreamResult<Committed> {
        let committed = self.table.commit(barrier.epoch.prev, barrier.epoch.curr)?;
        ebbflow_metrics::join_cache_changed(self.cached_rows - self.reported_rows);
        self.reported_rows = self.cached_rows;
        Ok(committed)
    }
}

impl Drop for JoinSide {
    fn drop(&mut self) {
        ebbflow_metrics::join_cache_changed(-self.reported_rows);
    }
}

impl JoinSide {
    /// Take the vnodes of a new bitmap, dropping the cached keys of the
    /// vnodes no longer owned (all of them when `new` brings vnodes in).
    pub(super) fn update_vnodes(&mut self, new: &Bitmap) {
        if super::take_vnodes(&mut self.table, &mut self.cache, self.keys.len(), new) {
            self.complete = Bitmap::from_vnodes(self.complete.iter().filter(|v| new.contains(*v)));
        } else {
            self.complete = Bitmap::empty();
        }
        self.cached_rows = self.cache.values().map(|r| r.rows.len() as i64).sum();
    }
}

pub struct HashJoinExecutor {
    kind: JoinKind,
    sides: [JoinSide; 2],
    /// Over `left ++ right`.
    condition: Option<Expr>,
    actor_id: u32,
    /// Per join key position, the highest watermark each side was given.
    watermarks: HashMap<usize, [Option<ScalarValue>; 2]>,
    /// The bound below which state was last cleaned, per key position.
    cleaned: HashMap<usize, ScalarValue>,
}

impl HashJoinExecutor {
    pub fn new(
        kind: JoinKind,
        left: JoinSide,
        right: JoinSide,
        condition: Option<Expr>,
        actor_id: u32,
    ) -> Self {
        HashJoinExecutor {
            kind,
            sides: [left, right],
            condition,
            actor_id,
            watermarks: HashMap::new(),
            cleaned: HashMap::new(),
        }
    }

    /// Per join key position with a watermark on both sides, the least of
    /// the two: no row of either side comes with that key below it.
    fn key_bounds(&self) -> Vec<(usize, ScalarValue)> {
        let mut out: Vec<(usize, ScalarValue)> = self
            .watermarks
            .iter()
            .filter_map(|(&k, [l, r])| match (l, r) {
                (Some(l), Some(r)) => Some((k, l.min(r).clone())),
                _ => None,
            })
            .collect();
        out.sort_by_key(|(k, _)| *k);
        out
    }

    fn preserved(&self, side: usize) -> bool {
        match self.kind {
            JoinKind::Inner => false,
            // Semi and anti joins run in `semi_join.rs`.
            JoinKind::Left | JoinKind::LeftSemi | JoinKind::LeftAnti => side == 0,
            JoinKind::Right => side == 1,
            JoinKind::Full => true,
        }
    }

    /// `row` from `side` joined with `other` from the other side, as a
    /// `left ++ right` row.
    fn concat(&self, side: usize, row: &Row, other: &Row) -> Row {
        let (l, r) = if side == 0 {
            (row, other)
        } else {
            (other, row)
        };
        let mut out = Vec::with_capacity(l.len() + r.len());
        out.extend(l.iter().cloned());
        out.extend(r.iter().cloned());
        out
    }

    fn padded(&self, side: usize, row: &Row) -> Row {
        let nulls = vec![None; self.sides[1 - side].width];
        if side == 0 {
            let mut out = row.clone();
            out.extend(nulls);
            out
        } else {
            let mut out = nulls;
            out.extend(row.iter().cloned());
            out
        }
    }

    fn matches(&self, joined: &Row) -> bool {
        match &self.condition {
            None => true,
            Some(c) => match c.eval_predicate(joined) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(actor_id = self.actor_id, error = %e, "join condition failed; treated as no match");
                    false
                }
            },
        }
    }

    /// Number of rows on `side` (other than `except`) of `key` that match
    /// `other_row` from the opposite side.
    fn partner_count(
        &self,
        side: usize,
        key: &[Datum],
        other_row: &Row,
        except: Option<&Row>,
    ) -> usize {
        self.sides[side]
            .rows(key)
            .iter()
            .filter(|r| except.is_none_or(|e| !self.sides[side].same_pk(r, e)))
            .filter(|r| self.matches(&self.concat(side, r, other_row)))
            .count()
    }

    async fn apply(
        &mut self,
        side: usize,
        op: Op,
        row: Row,
        b: &mut ChunkBuilder,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let other = 1 - side;
        let key = self.sides[side].key_of(&row);
        let insert = op.is_insert();
        let out_op = if insert { Op::Insert } else { Op::Delete };
        if key.iter().any(|d| d.is_none()) {
            // NULL keys never match; only an outer side shows the row.
            if self.preserved(side) {
                b.push(out_op, self.padded(side, &row), out);
            }
            return Ok(());
        }
        self.sides[side].load(&key).await?;
        self.sides[other].load(&key).await?;
        let partners: Vec<Row> = self.sides[other]
            .rows(&key)
            .iter()
            .filter(|m| self.matches(&self.concat(side, &row, m)))
            .cloned()
            .collect();
        let other_preserved = self.preserved(other);
        if insert {
            for m in &partners {
                if other_preserved && self.partner_count(side, &key, m, Some(&row)) == 0 {
                    b.push(Op::Delete, self.padded(other, m), out);
                }
                b.push(Op::Insert, self.concat(side, &row, m), out);
            }
            if partners.is_empty() && self.preserved(side) {
                b.push(Op::Insert, self.padded(side, &row), out);
            }
            self.sides[side].insert(key, row);
        } else {
            self.sides[side].delete(&key, &row);
            for m in &partners {
                b.push(Op::Delete, self.concat(side, &row, m), out);
                if other_preserved && self.partner_count(side, &key, m, None) == 0 {
                    b.push(Op::Insert, self.padded(other, m), out);
                }
            }
            if partners.is_empty() && self.preserved(side) {
                b.push(Op::Delete, self.padded(side, &row), out);
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Executor for HashJoinExecutor {
    fn name(&self) -> &'static str {
        "HashJoin"
    }

    async fn process_chunk(
        &mut self,
        input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let side = input.min(1);
        let mut b = ChunkBuilder::new();
        for (op, row) in chunk.rows() {
            self.apply(side, op, row, &mut b, out).await?;
        }
        b.finish(out);
        Ok(())
    }

    /// A watermark on the same join key of both inputs bounds that key
    /// (see "Window joins" above); it is the watermark of the key's output
    /// columns on the sides never padded with NULLs.
    async fn process_watermarks(
        &mut self,
        inputs: &[Vec<Watermark>],
    ) -> StreamResult<Vec<Watermark>> {
        for (side, list) in inputs.iter().take(2).enumerate() {
            for w in list {
                for k in 0..self.sides[side].keys.len() {
                    if self.sides[side].keys[k] != w.column {
                        continue;
                    }
                    let slot = &mut self.watermarks.entry(k).or_default()[side];
                    if slot.as_ref().is_none_or(|v| w.value > *v) {
                        *slot = Some(w.value.clone());
                    }
                }
            }
        }
        let left_width = self.sides[0].width;
        let mut out = Vec::new();
        for (k, bound) in self.key_bounds() {
            if !self.preserved(1) {
                out.push(Watermark::new(self.sides[0].keys[k], bound.clone()));
            }
            if !self.preserved(0) {
                out.push(Watermark::new(left_width + self.sides[1].keys[k], bound));
            }
        }
        Ok(out)
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        for (k, bound) in self.key_bounds() {
            if self.cleaned.get(&k).is_some_and(|c| *c >= bound) {
                continue;
            }
            for s in &mut self.sides {
                s.clean_below(k, &bound).await?;
            }
            self.cleaned.insert(k, bound);
        }
        let [left, right] = &mut self.sides;
        let left = left.commit(barrier)?;
        Ok(left.and(right.commit(barrier)?))
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        for s in &mut self.sides {
            s.update_vnodes(new);
        }
        // Vnodes brought in may hold rows below the bounds.
        self.cleaned.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::test_utils::{barrier, store, table};
    use super::*;
    use ebbflow_common::DataType;
    use ebbflow_storage::MemoryStateStore;

    /// Past `INDEX_FROM` rows a key's rows are found by stream key: every
    /// removal takes the right row, in any order, and the positions stay
    /// right as rows move into the holes.
    #[test]
    fn many_rows_of_one_key_remove_by_stream_key() {
        let row = |id: i64| -> Row { vec![Some(ScalarValue::Int64(id)), None] };
        let n = (INDEX_FROM * 3) as i64;
        let mut k = KeyRows::default();
        for id in 0..n {
            k.push(row(id), &[0]);
        }
        assert!(k.index.is_some());
        for id in (0..n).filter(|i| i % 3 != 1).rev() {
            assert!(k.remove(&row(id), &[0]), "row {id}");
        }
        assert!(!k.remove(&row(0), &[0]), "already gone");
        let mut left: Vec<i64> = k
            .rows
            .iter()
            .filter_map(|r| match r[0] {
                Some(ScalarValue::Int64(v)) => Some(v),
                _ => None,
            })
            .collect();
        left.sort_unstable();
        assert_eq!(left, (0..n).filter(|i| i % 3 == 1).collect::<Vec<_>>());
        for id in left {
            assert!(k.remove(&row(id), &[0]));
        }
        assert!(k.rows.is_empty());
    }

    /// A join of two `(pk, key)` sides over `s`.
    fn join_over(s: &Arc<MemoryStateStore>, kind: JoinKind) -> HashJoinExecutor {
        let ty = vec![DataType::Int64, DataType::Int64];
        let side = |id| {
            JoinSide::new(
                vec![1],
                vec![0],
                2,
                table(s, id, ty.clone(), vec![0], Some(ty.clone())),
            )
        };
        HashJoinExecutor::new(kind, side(1), side(2), None, 0)
    }

    fn join(kind: JoinKind) -> HashJoinExecutor {
        join_over(&store(), kind)
    }

    async fn feed(j: &mut HashJoinExecutor, side: usize, text: &str) -> Vec<String> {
        let mut out = vec![];
        let chunk = StreamChunk::from_pretty(text, &[DataType::Int64, DataType::Int64]);
        j.process_chunk(side, chunk, &mut out).await.unwrap();
        super::super::test_utils::pretty(&out)
    }

    #[tokio::test]
    async fn full_outer_join_pads_and_unpads() {
        let mut j = join(JoinKind::Full);
        assert_eq!(feed(&mut j, 0, "+ 1 7").await, vec!["+ 1 7 . ."]);
        assert_eq!(
            feed(&mut j, 1, "+ 10 7").await,
            vec!["- 1 7 . .", "+ 1 7 10 7"]
        );
        assert_eq!(feed(&mut j, 1, "+ 11 8").await, vec!["+ . . 11 8"]);
        assert_eq!(
            feed(&mut j, 0, "- 1 7").await,
            vec!["- 1 7 10 7", "+ . . 10 7"]
        );
        // NULL keys never match
        assert_eq!(feed(&mut j, 0, "+ 2 .").await, vec!["+ 2 . . ."]);
    }

    #[tokio::test]
    async fn inner_join_many_to_many() {
        let mut j = join(JoinKind::Inner);
        assert!(feed(&mut j, 0, "+ 1 7\n+ 2 7").await.is_empty());
        let mut got = feed(&mut j, 1, "+ 10 7").await;
        got.sort();
        assert_eq!(got, vec!["+ 1 7 10 7", "+ 2 7 10 7"]);
        assert_eq!(feed(&mut j, 0, "U- 1 7\nU+ 1 8").await, vec!["- 1 7 10 7"]);
    }

    #[tokio::test]
    async fn a_watermark_on_a_key_of_both_sides_drops_the_rows_below_it() {
        let mut j = join(JoinKind::Inner);
        feed(&mut j, 0, "+ 1 7\n+ 2 8").await;
        feed(&mut j, 1, "+ 10 7\n+ 11 9").await;
        let wm = |v| vec![Watermark::new(1, ScalarValue::Int64(v))];
        // One side alone bounds nothing.
        let out = j.process_watermarks(&[wm(8), vec![]]).await.unwrap();
        assert!(out.is_empty());
        let out = j.process_watermarks(&[vec![], wm(9)]).await.unwrap();
        let both = |v| {
            vec![
                Watermark::new(1, ScalarValue::Int64(v)),
                Watermark::new(3, ScalarValue::Int64(v)),
            ]
        };
        assert_eq!(out, both(8), "the least of the two, kept from before");
        let _ = j.process_barrier(&barrier(2), &mut vec![]).await.unwrap();
        assert_eq!(j.sides[0].cached_rows + j.sides[1].cached_rows, 2);
        for side in &j.sides {
            let key7 = side.table.scan_prefix(&[Some(ScalarValue::Int64(7))]);
            assert!(key7.await.unwrap().is_empty(), "key 7 stays stored");
        }
        assert_eq!(feed(&mut j, 1, "+ 12 8").await, vec!["+ 2 8 12 8"]);
        // A left join announces the left key only.
        let mut l = join(JoinKind::Left);
        let out = l.process_watermarks(&[wm(8), wm(9)]).await.unwrap();
        assert_eq!(out, both(8)[..1]);
    }

    #[tokio::test]
    async fn cleaning_reads_the_rows_stored_before_a_restart() {
        let s = store();
        let mut j = join_over(&s, JoinKind::Inner);
        feed(&mut j, 0, "+ 1 7\n+ 2 8").await;
        feed(&mut j, 1, "+ 10 7").await;
        let _ = j.process_barrier(&barrier(2), &mut vec![]).await.unwrap();
        // A new actor over the same state: nothing cached.
        let mut j = join_over(&s, JoinKind::Inner);
        let wm = vec![Watermark::new(1, ScalarValue::Int64(8))];
        j.process_watermarks(&[wm.clone(), wm]).await.unwrap();
        let _ = j.process_barrier(&barrier(3), &mut vec![]).await.unwrap();
        assert_eq!(j.sides[0].cached_rows, 1, "key 8 read, key 7 dropped");
        let key7 = j.sides[0].table.scan_prefix(&[Some(ScalarValue::Int64(7))]);
        assert!(key7.await.unwrap().is_empty());
        // A new key of a complete vnode is known to have no rows.
        assert_eq!(feed(&mut j, 1, "+ 11 8").await, vec!["+ 2 8 11 8"]);
    }
}
