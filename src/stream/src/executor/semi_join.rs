//! Semi and anti joins of two streams with retraction (`EXISTS`, `IN`,
//! `NOT EXISTS`, `NOT IN`): left rows come out, once, while they have at
//! least one partner (semi) or none (anti).
//!
//! A pair of rows are partners when their join keys are equal and non-NULL
//! and the condition over `left ++ right` is TRUE. Each left row is kept
//! with its **degree**, its number of partners, in a state table keyed
//! `join key | left pk` (the degree is the last value column); right rows
//! are kept as in the hash join ([`JoinSide`]). A right insert raises the
//! degree of its partners and a right delete lowers it: a degree moving
//! between 0 and 1 flips the left row in or out. A left row's degree is
//! counted from the right rows of its key when it arrives, and the output
//! of its delete is decided by its stored degree, so what is retracted is
//! what was emitted. Left rows with a NULL key, or failing a term of the
//! condition that reads the left row alone (`x IS NULL` of a NOT IN), have
//! no partner and are not kept.
//!
//! Without join keys every row has the empty key: one vnode, so one actor
//! does the work (a nested loop per change), which is how an uncorrelated
//! `NOT IN` runs.

use std::collections::HashMap;

use async_trait::async_trait;

use super::hash_join::JoinSide;
use super::{ChunkBuilder, Committed, Executor};
use crate::message::Barrier;
use crate::StreamResult;
use ebbflow_common::{Bitmap, Datum, FastHashMap, Op, Row, ScalarValue, StreamChunk};
use ebbflow_expr::Expr;
use ebbflow_storage::StateTable;

/// The left input: its rows with their degrees.
pub struct DegreeSide {
    keys: Vec<usize>,
    /// The side's stream key (unique per row).
    pk: Vec<usize>,
    /// Rows keyed `join key ++ pk`, valued `row ++ [degree]` (bigint).
    table: StateTable,
    /// The rows and degrees of the keys touched since the actor started.
    cache: FastHashMap<Vec<Datum>, Vec<(Row, i64)>>,
    /// `None` until the first load looked at the table; `Some(true)`: it
    /// was empty, so a key missing from the cache has no rows (until a
    /// scale brings in vnodes).
    all_cached: Option<bool>,
}

impl DegreeSide {
    pub fn new(keys: Vec<usize>, pk: Vec<usize>, table: StateTable) -> Self {
        DegreeSide {
            keys,
            pk,
            table,
            cache: HashMap::default(),
            all_cached: None,
        }
    }

    fn key_of(&self, row: &Row) -> Vec<Datum> {
        self.keys.iter().map(|&i| row[i].clone()).collect()
    }

    fn state_pk(&self, row: &Row) -> Vec<Datum> {
        self.keys
            .iter()
            .chain(self.pk.iter())
            .map(|&i| row[i].clone())
            .collect()
    }

    async fn load(&mut self, key: &[Datum]) -> StreamResult<()> {
        if !self.cache.contains_key(key) {
            if self.all_cached.is_none() {
                self.all_cached = Some(self.table.is_empty().await?);
            }
            let stored = if self.all_cached == Some(true) {
                Vec::new()
            } else {
                self.table.scan_prefix(key).await?
            };
            let rows = stored
                .into_iter()
                .map(|(_, mut v)| {
                    let degree = match v.pop() {
                        Some(Some(ScalarValue::Int64(d))) => d,
                        _ => 0,
                    };
                    (v, degree)
                })
                .collect();
            self.cache.insert(key.to_vec(), rows);
        }
        Ok(())
    }

    /// Write `row` with `degree` to the state table.
    fn write(table: &mut StateTable, pk: &[Datum], row: &Row, degree: i64) {
        let mut value = Vec::with_capacity(row.len() + 1);
        value.extend(row.iter().cloned());
        value.push(Some(ScalarValue::Int64(degree)));
        table.put(pk, &value);
    }

    fn update_vnodes(&mut self, new: &Bitmap) {
        let kept = super::take_vnodes(&mut self.table, &mut self.cache, self.keys.len(), new);
        if !kept && self.all_cached.is_some() {
            self.all_cached = Some(false);
        }
    }
}

pub struct SemiJoinExecutor {
    /// Semi (emit rows with partners) or anti (rows without).
    semi: bool,
    left: DegreeSide,
    right: JoinSide,
    /// The terms of the condition over the left row alone.
    left_terms: Vec<Expr>,
    /// The other terms, over `left ++ right`.
    condition: Vec<Expr>,
    actor_id: u32,
}

/// Whether every term holds over `row` (an error counts as not).
fn holds(terms: &[Expr], actor_id: u32, row: &Row) -> bool {
    terms.iter().all(|t| match t.eval_predicate(row) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(actor_id, error = %e, "join condition failed; treated as no match");
            false
        }
    })
}

/// Whether `left` and `right` (of the same key) are partners.
fn partners(condition: &[Expr], actor_id: u32, left: &Row, right: &Row) -> bool {
    if condition.is_empty() {
        return true;
    }
    let mut joined = Vec::with_capacity(left.len() + right.len());
    joined.extend(left.iter().cloned());
    joined.extend(right.iter().cloned());
    holds(condition, actor_id, &joined)
}

impl SemiJoinExecutor {
    /// `condition` is over `left ++ right`, the left row `left_width`
    /// wide.
    pub fn new(
        semi: bool,
        left: DegreeSide,
        right: JoinSide,
        left_width: usize,
        condition: Option<Expr>,
        actor_id: u32,
    ) -> Self {
        let (left_terms, condition) = condition
            .map(|c| c.split_conjuncts_below(left_width))
            .unwrap_or_default();
        SemiJoinExecutor {
            semi,
            left,
            right,
            left_terms,
            condition,
            actor_id,
        }
    }

    /// Whether a left row of `degree` is in the output.
    fn visible(&self, degree: i64) -> bool {
        (degree > 0) == self.semi
    }

    async fn apply_left(
        &mut self,
        op: Op,
        row: Row,
        b: &mut ChunkBuilder,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let out_op = if op.is_insert() {
            Op::Insert
        } else {
            Op::Delete
        };
        let key = self.left.key_of(&row);
        if key.iter().any(|d| d.is_none()) || !holds(&self.left_terms, self.actor_id, &row) {
            // No partner, ever: nothing to keep.
            if self.visible(0) {
                b.push(out_op, row, out);
            }
            return Ok(());
        }
        self.left.load(&key).await?;
        self.right.load(&key).await?;
        let pk = self.left.state_pk(&row);
        let degree = if op.is_insert() {
            let degree = self
                .right
                .rows(&key)
                .iter()
                .filter(|r| partners(&self.condition, self.actor_id, &row, r))
                .count() as i64;
            DegreeSide::write(&mut self.left.table, &pk, &row, degree);
            self.left
                .cache
                .entry(key)
                .or_default()
                .push((row.clone(), degree));
            degree
        } else {
            self.left.table.delete(&pk);
            let pk_cols = &self.left.pk;
            let rows = self.left.cache.entry(key).or_default();
            match rows
                .iter()
                .position(|(r, _)| pk_cols.iter().all(|&i| r[i] == row[i]))
            {
                Some(pos) => rows.swap_remove(pos).1,
                None => {
                    tracing::warn!(
                        actor_id = self.actor_id,
                        "semi join: delete of a row it does not have"
                    );
                    return Ok(());
                }
            }
        };
        if self.visible(degree) {
            b.push(out_op, row, out);
        }
        Ok(())
    }

    async fn apply_right(
        &mut self,
        op: Op,
        row: Row,
        b: &mut ChunkBuilder,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let key = self.right.key_of(&row);
        if key.iter().any(|d| d.is_none()) {
            return Ok(());
        }
        self.left.load(&key).await?;
        self.right.load(&key).await?;
        let insert = op.is_insert();
        // The degree at which a left row flips: 0 → 1 on insert, 1 → 0 on
        // delete; a flip emits the row for semi on insert, anti on delete.
        let (step, flip_at) = if insert { (1, 1) } else { (-1, 0) };
        let flip_op = if insert == self.semi {
            Op::Insert
        } else {
            Op::Delete
        };
        let SemiJoinExecutor {
            left,
            condition,
            actor_id,
            ..
        } = self;
        let pk_cols = &left.pk;
        let keys = &left.keys;
        if let Some(rows) = left.cache.get_mut(&key) {
            for (l, degree) in rows.iter_mut() {
                if !partners(condition, *actor_id, l, &row) {
                    continue;
                }
                debug_assert!(insert || *degree > 0, "degree below zero");
                *degree = (*degree + step).max(0);
                let pk: Vec<Datum> = keys.iter().chain(pk_cols).map(|&i| l[i].clone()).collect();
                DegreeSide::write(&mut left.table, &pk, l, *degree);
                if *degree == flip_at {
                    b.push(flip_op, l.clone(), out);
                }
            }
        }
        if insert {
            self.right.insert(key, row);
        } else {
            self.right.delete(&key, &row);
        }
        Ok(())
    }
}

#[async_trait]
impl Executor for SemiJoinExecutor {
    fn name(&self) -> &'static str {
        "SemiJoin"
    }

    async fn process_chunk(
        &mut self,
        input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let mut b = ChunkBuilder::new();
        for (op, row) in chunk.rows() {
            if input == 0 {
                self.apply_left(op, row, &mut b, out).await?;
            } else {
                self.apply_right(op, row, &mut b, out).await?;
            }
        }
        b.finish(out);
        Ok(())
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        let left = self
            .left
            .table
            .commit(barrier.epoch.prev, barrier.epoch.curr)?;
        Ok(left.and(self.right.commit(barrier)?))
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        self.left.update_vnodes(new);
        self.right.update_vnodes(new);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::{barrier, pretty, store, table};
    use super::*;
    use ebbflow_common::DataType;
    use ebbflow_expr::{build_func, Func};

    const TY: [DataType; 2] = [DataType::Int64, DataType::Int64];

    /// Rows `(id, k)` on both sides, joined on `k`; with `cond`, also
    /// `left.id < right.id`.
    fn join(
        s: &std::sync::Arc<ebbflow_storage::MemoryStateStore>,
        semi: bool,
        keyed: bool,
        cond: bool,
    ) -> SemiJoinExecutor {
        let keys = if keyed { vec![1] } else { vec![] };
        let ty = TY.to_vec();
        let pk_types = |extra: usize| -> Vec<DataType> {
            let mut t = vec![DataType::Int64; extra];
            t.push(DataType::Int64);
            t
        };
        let nk = keys.len();
        let mut lvalue = ty.clone();
        lvalue.push(DataType::Int64);
        let left = DegreeSide::new(
            keys.clone(),
            vec![0],
            table(s, 1, pk_types(nk), (0..nk).collect(), Some(lvalue)),
        );
        let right = JoinSide::new(
            keys,
            vec![0],
            2,
            table(s, 2, pk_types(nk), (0..nk).collect(), Some(ty)),
        );
        let condition = cond.then(|| {
            build_func(
                Func::Lt,
                vec![
                    Expr::input_ref(0, DataType::Int64),
                    Expr::input_ref(2, DataType::Int64),
                ],
            )
            .unwrap()
        });
        SemiJoinExecutor::new(semi, left, right, 2, condition, 0)
    }

    async fn feed(j: &mut SemiJoinExecutor, side: usize, text: &str) -> Vec<String> {
        let mut out = vec![];
        let chunk = StreamChunk::from_pretty(text, &TY);
        j.process_chunk(side, chunk, &mut out).await.unwrap();
        pretty(&out)
    }

    #[tokio::test]
    async fn semi_join_flips_on_first_and_last_partner() {
        let s = store();
        let mut j = join(&s, true, true, false);
        assert!(feed(&mut j, 0, "+ 1 7\n+ 2 8\n+ 3 .").await.is_empty());
        assert_eq!(feed(&mut j, 1, "+ 10 7").await, vec!["+ 1 7"]);
        // A second partner changes nothing.
        assert!(feed(&mut j, 1, "+ 11 7").await.is_empty());
        assert!(feed(&mut j, 1, "- 10 7").await.is_empty());
        assert_eq!(feed(&mut j, 1, "- 11 7").await, vec!["- 1 7"]);
        // A left row arriving with partners comes out at once, and its
        // delete retracts it.
        assert_eq!(feed(&mut j, 1, "+ 12 8\n+ 13 .").await, vec!["+ 2 8"]);
        assert_eq!(feed(&mut j, 0, "+ 4 8").await, vec!["+ 4 8"]);
        assert_eq!(feed(&mut j, 0, "U- 2 8\nU+ 2 7").await, vec!["- 2 8"]);
    }

    #[tokio::test]
    async fn anti_join_with_condition_and_no_key() {
        let s = store();
        let mut j = join(&s, false, false, true);
        // NULL join columns do not matter without keys.
        assert_eq!(
            feed(&mut j, 0, "+ 1 7\n+ 5 .").await,
            vec!["+ 1 7", "+ 5 ."]
        );
        // Right id 3 passes `left.id < 3` for left 1 only.
        assert_eq!(feed(&mut j, 1, "+ 3 9").await, vec!["- 1 7"]);
        assert_eq!(feed(&mut j, 1, "+ 9 9").await, vec!["- 5 ."]);
        assert_eq!(feed(&mut j, 1, "- 3 9").await, Vec::<String>::new());
        assert_eq!(feed(&mut j, 1, "- 9 9").await, vec!["+ 1 7", "+ 5 ."]);
    }

    #[tokio::test]
    async fn degrees_survive_a_restart() {
        let s = store();
        let mut j = join(&s, true, true, false);
        assert!(feed(&mut j, 0, "+ 1 7").await.is_empty());
        assert_eq!(feed(&mut j, 1, "+ 10 7\n+ 11 7").await, vec!["+ 1 7"]);
        let mut out = vec![];
        let _ = j.process_barrier(&barrier(2), &mut out).await.unwrap();
        // A new executor over the same state: cold caches, stored degrees.
        let mut j = join(&s, true, true, false);
        assert!(feed(&mut j, 1, "- 10 7").await.is_empty());
        assert_eq!(feed(&mut j, 1, "- 11 7").await, vec!["- 1 7"]);
    }
}
