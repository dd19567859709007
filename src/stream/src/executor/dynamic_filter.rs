//! Dynamic filter: the rows of the left input whose `key` compares with
//! the value of a one-row right input (`WHERE t.v > (SELECT max(v) FROM
//! u)`, `FROM t, (SELECT max(v) AS m FROM u) s WHERE t.v > s.m`, Nexmark
//! q102's HAVING), maintained incrementally and in parallel.
//!
//! The left input is spread over the actors by its stream key; the right
//! one (at most one row: a global aggregate) is broadcast to every actor.
//! Each actor keeps its left rows ordered by `key` (a rows with a NULL key
//! never passes and is not kept) and the bound it last applied. A left
//! change passes if its key compares with that bound. A new right value is
//! applied at the barrier: only the rows whose key lies between the old
//! bound and the new one change sides, found by a range of the ordered
//! rows, so a moving bound costs the rows it crosses, not the whole input.
//!
//! State: the left rows in a table keyed by the left stream key (the
//! vnodes of the exchange), read whole per vnode into memory the first
//! time the actor needs them; the right row, saved whenever it changes
//! under the first vnode the actor owns with the epoch it was saved at, so
//! an actor that starts after a recovery or gains vnodes in a scale takes
//! the latest any actor saved.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use async_trait::async_trait;

use super::{ChunkBuilder, Committed, Executor};
use crate::message::Barrier;
use crate::StreamResult;
use ebbflow_common::{Bitmap, Datum, Op, Row, ScalarValue, StreamChunk};
use ebbflow_expr::{Expr, Func};
use ebbflow_storage::StateTable;

pub struct DynamicFilterExecutor {
    /// Over a left row.
    key: Expr,
    /// `key cmp bound` keeps a row: `<`, `<=`, `>` or `>=`.
    cmp: Func,
    /// Over the right row: the bound.
    bound_expr: Expr,
    /// The left stream key.
    pk: Vec<usize>,
    /// Left rows keyed by `pk`.
    left: StateTable,
    /// The right row and the epoch it was saved at, per saving actor.
    right: StateTable,
    /// The owned vnodes' left rows with a non-NULL key, by key.
    rows: BTreeMap<ScalarValue, Vec<Row>>,
    /// Owned vnodes whose rows are in `rows`.
    loaded: Bitmap,
    /// The right row as of the last change seen, and whether it changed
    /// since the last barrier.
    right_row: Option<Row>,
    right_changed: bool,
    right_loaded: bool,
    /// The bound the output follows (`None`: no row passes).
    applied: Option<ScalarValue>,
    actor_id: u32,
}

impl DynamicFilterExecutor {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        key: Expr,
        cmp: Func,
        bound_expr: Expr,
        pk: Vec<usize>,
        left: StateTable,
        right: StateTable,
        actor_id: u32,
    ) -> Self {
        DynamicFilterExecutor {
            key,
            cmp,
            bound_expr,
            pk,
            left,
            right,
            rows: BTreeMap::new(),
            loaded: Bitmap::empty(),
            right_row: None,
            right_changed: false,
            right_loaded: false,
            applied: None,
            actor_id,
        }
    }

    /// Whether a row with key `k` passes under `bound`.
    fn passes(&self, k: &ScalarValue, bound: &Option<ScalarValue>) -> bool {
        let Some(b) = bound else {
            return false;
        };
        match self.cmp {
            Func::Lt => k < b,
            Func::LtEq => k <= b,
            Func::Gt => k > b,
            _ => k >= b,
        }
    }

    fn key_of(&self, row: &Row) -> Option<ScalarValue> {
        match self.key.eval(row) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(actor_id = self.actor_id, error = %e, ?row, "dynamic filter key failed; row treated as NULL");
                None
            }
        }
    }

    fn bound_of(&self, right: &Option<Row>) -> Option<ScalarValue> {
        let row = right.as_ref()?;
        match self.bound_expr.eval(row) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(actor_id = self.actor_id, error = %e, ?row, "dynamic filter bound failed; treated as NULL");
                None
            }
        }
    }

    fn state_pk(&self, row: &Row) -> Vec<Datum> {
        self.pk.iter().map(|&i| row[i].clone()).collect()
    }

    /// Read the rows of the owned vnodes not in memory yet, and the right
    /// row the first time.
    async fn load(&mut self) -> StreamResult<()> {
        if !self.right_loaded {
            let mut latest: Option<(i64, Row)> = None;
            for (_, mut saved) in self.right.scan_all_vnodes().await? {
                let Some(Some(ScalarValue::Int64(epoch))) = saved.pop() else {
                    continue;
                };
                if latest.as_ref().is_none_or(|(e, _)| epoch > *e) {
                    latest = Some((epoch, saved));
                }
            }
            // An empty saved row is "no right row".
            self.right_row = latest.map(|(_, r)| r).filter(|r| !r.is_empty());
            self.applied = self.bound_of(&self.right_row);
            self.right_loaded = true;
        }
        let missing: Vec<_> = self
            .left
            .vnodes()
            .iter()
            .filter(|&v| !self.loaded.contains(v))
            .collect();
        for vnode in missing {
            for (_, row) in self.left.scan_vnode(vnode).await? {
                if let Some(k) = self.key_of(&row) {
                    self.rows.entry(k).or_default().push(row);
                }
            }
            self.loaded.set(vnode, true);
        }
        Ok(())
    }

    fn remove_row(&mut self, k: &ScalarValue, row: &Row) {
        let pk = &self.pk;
        if let Some(rows) = self.rows.get_mut(k) {
            if let Some(pos) = rows.iter().position(|r| pk.iter().all(|&i| r[i] == row[i])) {
                rows.swap_remove(pos);
            }
            if rows.is_empty() {
                self.rows.remove(k);
            }
        }
    }

    /// Emit the rows that change sides when the bound moves from
    /// `applied` to `new`.
    fn move_bound(&mut self, new: Option<ScalarValue>, out: &mut Vec<StreamChunk>) {
        let old = std::mem::replace(&mut self.applied, new);
        let new = self.applied.clone();
        let range: (Bound<&ScalarValue>, Bound<&ScalarValue>) = match (&old, &new) {
            (Some(a), Some(b)) => {
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                (Bound::Included(lo), Bound::Included(hi))
            }
            // From or to "nothing passes": every row passing the other.
            _ => (Bound::Unbounded, Bound::Unbounded),
        };
        let mut b = ChunkBuilder::new();
        for (k, rows) in self.rows.range::<ScalarValue, _>(range) {
            let (was, is) = (self.passes(k, &old), self.passes(k, &new));
            if was == is {
                continue;
            }
            let op = if is { Op::Insert } else { Op::Delete };
            for row in rows {
                b.push(op, row.clone(), out);
            }
        }
        b.finish(out);
    }
}

#[async_trait]
impl Executor for DynamicFilterExecutor {
    fn name(&self) -> &'static str {
        "DynamicFilter"
    }

    async fn process_chunk(
        &mut self,
        input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        self.load().await?;
        if input > 0 {
            for (op, row) in chunk.rows() {
                self.right_row = op.is_insert().then_some(row);
                self.right_changed = true;
            }
            return Ok(());
        }
        let mut b = ChunkBuilder::new();
        for (op, row) in chunk.rows() {
            let Some(k) = self.key_of(&row) else {
                continue;
            };
            let pass = self.passes(&k, &self.applied);
            let pk = self.state_pk(&row);
            if op.is_insert() {
                self.left.put(&pk, &row);
                if pass {
                    b.push(Op::Insert, row.clone(), out);
                }
                self.rows.entry(k).or_default().push(row);
            } else {
                self.left.delete(&pk);
                self.remove_row(&k, &row);
                if pass {
                    b.push(Op::Delete, row, out);
                }
            }
        }
        b.finish(out);
        Ok(())
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        self.load().await?;
        if self.right_changed {
            self.right_changed = false;
            let new = self.bound_of(&self.right_row);
            if new != self.applied {
                self.move_bound(new, out);
            }
            let first = self.right.vnodes().iter().next();
            if let Some(vnode) = first {
                let mut saved = self.right_row.clone().unwrap_or_default();
                saved.push(Some(ScalarValue::Int64(barrier.epoch.prev as i64)));
                self.right.put_at(vnode, &[], &saved);
            }
        }
        let left = self.left.commit(barrier.epoch.prev, barrier.epoch.curr)?;
        Ok(left.and(self.right.commit(barrier.epoch.prev, barrier.epoch.curr)?))
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        self.left.update_vnodes(new.clone());
        self.right.update_vnodes(new.clone());
        // Keep the rows of the vnodes still owned; read the new ones later.
        let left = &self.left;
        let pk = &self.pk;
        let mut kept: HashMap<ScalarValue, Vec<Row>> = HashMap::new();
        for (k, rows) in std::mem::take(&mut self.rows) {
            let rows: Vec<Row> = rows
                .into_iter()
                .filter(|r| {
                    let key: Vec<Datum> = pk.iter().map(|&i| r[i].clone()).collect();
                    new.contains(left.vnode_of_pk(&key))
                })
                .collect();
            if !rows.is_empty() {
                kept.insert(k, rows);
            }
        }
        self.rows = kept.into_iter().collect();
        self.loaded = Bitmap::from_vnodes(self.loaded.iter().filter(|v| new.contains(*v)));
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::{barrier, pretty, store, table};
    use super::*;
    use ebbflow_common::DataType;

    fn filter(s: &std::sync::Arc<ebbflow_storage::MemoryStateStore>) -> DynamicFilterExecutor {
        let ty = vec![DataType::Int64, DataType::Int64];
        DynamicFilterExecutor::new(
            Expr::input_ref(1, DataType::Int64),
            Func::Gt,
            Expr::input_ref(0, DataType::Int64),
            vec![0],
            table(s, 1, vec![DataType::Int64], vec![0], Some(ty)),
            table(s, 2, vec![], vec![], None),
            0,
        )
    }

    async fn feed(f: &mut DynamicFilterExecutor, input: usize, text: &str) -> Vec<String> {
        let types: &[DataType] = if input == 0 {
            &[DataType::Int64, DataType::Int64]
        } else {
            &[DataType::Int64]
        };
        let mut out = vec![];
        let chunk = StreamChunk::from_pretty(text, types);
        f.process_chunk(input, chunk, &mut out).await.unwrap();
        pretty(&out)
    }

    async fn at_barrier(f: &mut DynamicFilterExecutor, epoch: u64) -> Vec<String> {
        let mut out = vec![];
        let _ = f.process_barrier(&barrier(epoch), &mut out).await.unwrap();
        let mut got = pretty(&out);
        got.sort();
        got
    }

    #[tokio::test]
    async fn a_moving_bound_emits_the_rows_it_crosses() {
        let s = store();
        let mut f = filter(&s);
        // No bound yet: nothing passes.
        assert!(feed(&mut f, 0, "+ 1 10\n+ 2 20\n+ 3 30\n+ 4 .")
            .await
            .is_empty());
        assert!(feed(&mut f, 1, "+ 15").await.is_empty());
        assert_eq!(at_barrier(&mut f, 2).await, vec!["+ 2 20", "+ 3 30"]);
        assert_eq!(feed(&mut f, 0, "+ 5 16\n+ 6 15").await, vec!["+ 5 16"]);
        // 15 -> 25: 16 and 20 leave.
        feed(&mut f, 1, "U- 15\nU+ 25").await;
        assert_eq!(at_barrier(&mut f, 3).await, vec!["- 2 20", "- 5 16"]);
        // 25 -> 5: 10, 15, 16, 20 come in.
        feed(&mut f, 1, "U- 25\nU+ 5").await;
        assert_eq!(
            at_barrier(&mut f, 4).await,
            vec!["+ 1 10", "+ 2 20", "+ 5 16", "+ 6 15"]
        );
        assert_eq!(feed(&mut f, 0, "- 1 10").await, vec!["- 1 10"]);
        assert!(at_barrier(&mut f, 5).await.is_empty());
        // A new actor over the same state resumes at the bound 5.
        let mut g = filter(&s);
        assert_eq!(feed(&mut g, 0, "+ 7 6").await, vec!["+ 7 6"]);
        // The right row goes: every passing row leaves.
        feed(&mut g, 1, "- 5").await;
        assert_eq!(
            at_barrier(&mut g, 6).await,
            vec!["- 2 20", "- 3 30", "- 5 16", "- 6 15", "- 7 6"]
        );
    }
}
