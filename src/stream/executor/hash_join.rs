//! Hash join of two streams with retraction, for INNER, LEFT, RIGHT and FULL
//! equi-joins with an optional residual condition.
//!
//! Each side keeps its rows in a state table keyed `join key | side pk`, so
//! the rows of one key are one prefix scan; a cache holds the keys touched
//! since the actor started. Outer joins keep no degree table: whether a row
//! has partners is recomputed from the other side's rows of the same key,
//! which is exact under any order of changes.

use std::collections::HashMap;

use async_trait::async_trait;

use super::{ChunkBuilder, Executor};
use crate::common::encoding::vnode_of;
use crate::common::order::JoinKind;
use crate::common::{Bitmap, Datum, Op, Row, StreamChunk};
use crate::expr::Expr;
use crate::storage::StateTable;
use crate::stream::message::Barrier;
use crate::stream::StreamResult;

/// One input of the join.
pub struct JoinSide {
    pub keys: Vec<usize>,
    /// The side's stream key (unique per row).
    pub pk: Vec<usize>,
    pub width: usize,
    /// Rows keyed `join key ++ pk`.
    pub table: StateTable,
    cache: HashMap<Vec<Datum>, Vec<Row>>,
}

impl JoinSide {
    pub fn new(keys: Vec<usize>, pk: Vec<usize>, width: usize, table: StateTable) -> Self {
        JoinSide {
            keys,
            pk,
            width,
            table,
            cache: HashMap::new(),
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

    /// Make sure the rows of `key` are cached.
    pub(super) async fn load(&mut self, key: &[Datum]) -> StreamResult<()> {
        if !self.cache.contains_key(key) {
            let rows = self
                .table
                .scan_prefix(key)
                .await?
                .into_iter()
                .map(|(_, v)| v)
                .collect();
            self.cache.insert(key.to_vec(), rows);
        }
        Ok(())
    }

    pub(super) fn rows(&self, key: &[Datum]) -> &[Row] {
        self.cache.get(key).map(|v| v.as_slice()).unwrap_or(&[])
    }

    pub(super) fn insert(&mut self, key: Vec<Datum>, row: Row) {
        let pk = self.state_pk(&row);
        self.table.put(&pk, &row);
        self.cache.entry(key).or_default().push(row);
    }

    pub(super) fn delete(&mut self, key: &[Datum], row: &Row) {
        let pk = self.state_pk(row);
        self.table.delete(&pk);
        let pk_cols = self.pk.clone();
        if let Some(rows) = self.cache.get_mut(key) {
            if let Some(pos) = rows
                .iter()
                .position(|r| pk_cols.iter().all(|&i| r[i] == row[i]))
            {
                rows.swap_remove(pos);
            }
        }
    }
}

impl JoinSide {
    /// Take the vnodes of a new bitmap, dropping the cached keys of the
    /// vnodes no longer owned (all of them when `new` brings vnodes in).
    pub(super) fn update_vnodes(&mut self, new: &Bitmap) {
        let subset = new.is_subset_of(self.table.vnodes());
        self.table.update_vnodes(new.clone());
        if subset {
            let dist: Vec<usize> = (0..self.keys.len()).collect();
            self.cache.retain(|k, _| new.contains(vnode_of(k, &dist)));
        } else {
            self.cache.clear();
        }
    }
}

pub struct HashJoinExecutor {
    kind: JoinKind,
    sides: [JoinSide; 2],
    /// Over `left ++ right`.
    condition: Option<Expr>,
    actor_id: u32,
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
        }
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

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        for s in &mut self.sides {
            let _committed = s.table.commit(barrier.epoch.prev, barrier.epoch.curr)?;
        }
        Ok(())
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        for s in &mut self.sides {
            s.update_vnodes(new);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::{store, table};
    use super::*;
    use crate::common::DataType;

    fn join(kind: JoinKind) -> HashJoinExecutor {
        let s = store();
        let ty = vec![DataType::Int64, DataType::Int64];
        let side = |id| {
            JoinSide::new(
                vec![1],
                vec![0],
                2,
                table(&s, id, ty.clone(), vec![0], Some(ty.clone())),
            )
        };
        HashJoinExecutor::new(kind, side(1), side(2), None, 0)
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
}
