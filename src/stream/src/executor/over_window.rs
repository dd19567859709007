//! Window functions over a changing input (`f(…) OVER (PARTITION BY …
//! ORDER BY …)` in an MV), retractable.
//!
//! The input arrives hashed by the partition key (or in a singleton
//! fragment without one). Every row is kept in the state table under
//! `partition key ++ stream key`, so the state of a partition lives in the
//! vnode of its key and moves with it on a scale. A partition touched by a
//! chunk is loaded into memory whole, in window order; on the barrier
//! each changed partition is recomputed ([`compute_partition`]) and only
//! the output rows whose values changed are emitted (an update pair per
//! changed row, keyed by the input's stream key). What was emitted before
//! is never stored: it is what the committed rows compute to, recomputed
//! when a partition is loaded. So a partition can leave memory at any
//! barrier: past [`MAX_CACHED_PARTITIONS`] the least recently touched
//! ones do, and are read again from the state table when next touched.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::{ChunkBuilder, Committed, Executor};
use crate::message::Barrier;
use crate::StreamResult;
use ebbflow_common::encoding::encode_key_row;
use ebbflow_common::order::{encode_sort_key, OrderKey};
use ebbflow_common::{identical, Bitmap, Datum, FastHashMap, FastHashSet, Op, Row, StreamChunk};
use ebbflow_expr::over::{compute_partition, WindowCall, WindowFuncKind};
use ebbflow_storage::StateTable;

/// Partitions held in memory per actor at a barrier, at most; past it
/// the least recently touched half leaves.
pub const MAX_CACHED_PARTITIONS: usize = 4096;

#[derive(Default)]
struct Partition {
    /// The barrier count when the partition was last loaded or changed.
    touched: u64,
    /// sort key ++ stream key (bytes) → input row.
    rows: BTreeMap<Vec<u8>, Row>,
    /// stream key → its key in `rows`.
    index: HashMap<Vec<Datum>, Vec<u8>>,
    /// stream key → the output row last emitted.
    emitted: HashMap<Vec<Datum>, Row>,
    dirty: bool,
}

pub struct OverWindowExecutor {
    partition_by: Vec<usize>,
    order_by: Vec<OrderKey>,
    calls: Vec<WindowCall>,
    /// Only the first rows of each partition come out.
    limit: Option<usize>,
    /// The values of the first rows do not depend on the rows after them,
    /// so only the rows that come out are computed.
    prefix_only: bool,
    /// The input's stream key.
    pk: Vec<usize>,
    table: StateTable,
    partitions: FastHashMap<Vec<Datum>, Partition>,
    /// What a partition missing from `partitions` holds.
    known: Known,
    /// Barriers seen (the clock of `Partition::touched`).
    barriers: u64,
    actor_id: u32,
}

/// What the executor knows of the partitions not in memory.
enum Known {
    /// Not looked at the table yet.
    Unchecked,
    /// They may have stored rows: read them.
    Stored,
    /// The table was empty when first looked at: only the partitions
    /// evicted since then have stored rows (a new job reads nothing back
    /// for its new partitions). Past [`MAX_EVICTED_KEYS`], `Stored`.
    EmptyBut(FastHashSet<Vec<Datum>>),
}

/// The most evicted partition keys [`Known::EmptyBut`] remembers.
const MAX_EVICTED_KEYS: usize = 1 << 20;

impl OverWindowExecutor {
    pub fn new(
        partition_by: Vec<usize>,
        order_by: Vec<OrderKey>,
        calls: Vec<WindowCall>,
        limit: Option<u64>,
        pk: Vec<usize>,
        table: StateTable,
        actor_id: u32,
    ) -> Self {
        let prefix_only = calls.iter().all(|c| {
            matches!(
                c.kind,
                WindowFuncKind::RowNumber
                    | WindowFuncKind::Rank
                    | WindowFuncKind::DenseRank
                    | WindowFuncKind::Lag
            )
        });
        OverWindowExecutor {
            partition_by,
            order_by,
            limit: limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
            prefix_only,
            calls,
            pk,
            table,
            partitions: HashMap::default(),
            known: Known::Unchecked,
            barriers: 0,
            actor_id,
        }
    }

    fn sort_key(&self, row: &Row, pk: &[Datum]) -> Vec<u8> {
        let mut k = Vec::with_capacity(32);
        encode_sort_key(&mut k, &self.order_by, row);
        encode_key_row(&mut k, pk);
        k
    }

    /// The output rows of a partition, by stream key.
    fn outputs(&self, p: &Partition) -> HashMap<Vec<Datum>, Row> {
        let take = self.limit.unwrap_or(usize::MAX);
        let computed = if self.prefix_only { take } else { usize::MAX };
        let rows: Vec<&Row> = p.rows.values().take(computed).collect();
        let values = match compute_partition(&rows, &self.order_by, &self.calls) {
            Ok(v) => v,
            Err(e) => {
                // A data error (an overflowing sum) gives NULL rather than
                // stopping the job, as for scalar expressions.
                tracing::warn!(actor_id = self.actor_id, error = %e, "window function failed in a streaming job; using NULL");
                rows.iter().map(|_| vec![None; self.calls.len()]).collect()
            }
        };
        rows.into_iter()
            .zip(values)
            .take(take)
            .map(|(r, v)| {
                let pk = self.pk.iter().map(|&i| r[i].clone()).collect();
                let mut out = Vec::with_capacity(r.len() + v.len());
                out.extend(r.iter().cloned());
                out.extend(v);
                (pk, out)
            })
            .collect()
    }

    /// Past [`MAX_CACHED_PARTITIONS`], drop the least recently touched
    /// half of the partitions (all clean after a barrier).
    fn evict(&mut self) {
        if self.partitions.len() <= MAX_CACHED_PARTITIONS {
            return;
        }
        let mut ages: Vec<(u64, &Vec<Datum>)> = self
            .partitions
            .iter()
            .map(|(k, p)| (p.touched, k))
            .collect();
        let cut = ages.len() - MAX_CACHED_PARTITIONS / 2;
        ages.select_nth_unstable_by_key(cut, |(t, _)| *t);
        let gone: Vec<Vec<Datum>> = ages[..cut].iter().map(|(_, k)| (*k).clone()).collect();
        for k in gone {
            self.partitions.remove(&k);
            if let Known::EmptyBut(evicted) = &mut self.known {
                evicted.insert(k);
            }
        }
        if matches!(&self.known, Known::EmptyBut(e) if e.len() > MAX_EVICTED_KEYS) {
            self.known = Known::Stored;
        }
    }

    async fn load(&mut self, key: &[Datum]) -> StreamResult<()> {
        if self.partitions.contains_key(key) {
            return Ok(());
        }
        if matches!(self.known, Known::Unchecked) {
            self.known = if self.table.is_empty().await? {
                Known::EmptyBut(FastHashSet::default())
            } else {
                Known::Stored
            };
        }
        let none_stored = match &mut self.known {
            Known::EmptyBut(evicted) => !evicted.remove(key),
            _ => false,
        };
        let stored = if none_stored {
            Vec::new()
        } else {
            self.table.scan_prefix(key).await?
        };
        let mut p = Partition::default();
        for (_, row) in stored {
            let pk: Vec<Datum> = self.pk.iter().map(|&i| row[i].clone()).collect();
            let k = self.sort_key(&row, &pk);
            p.index.insert(pk, k.clone());
            p.rows.insert(k, row);
        }
        p.emitted = self.outputs(&p);
        p.touched = self.barriers;
        self.partitions.insert(key.to_vec(), p);
        Ok(())
    }
}

#[async_trait]
impl Executor for OverWindowExecutor {
    fn name(&self) -> &'static str {
        "OverWindow"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        for (op, row) in chunk.rows() {
            let key: Vec<Datum> = self.partition_by.iter().map(|&i| row[i].clone()).collect();
            self.load(&key).await?;
            let pk: Vec<Datum> = self.pk.iter().map(|&i| row[i].clone()).collect();
            let mut state_pk = key.clone();
            state_pk.extend(pk.iter().cloned());
            let sort_key = op.is_insert().then(|| self.sort_key(&row, &pk));
            if op.is_insert() {
                self.table.put(&state_pk, &row);
            } else {
                self.table.delete(&state_pk);
            }
            let Some(p) = self.partitions.get_mut(&key) else {
                continue;
            };
            if let Some(k) = p.index.remove(&pk) {
                p.rows.remove(&k);
            }
            if let Some(k) = sort_key {
                p.index.insert(pk, k.clone());
                p.rows.insert(k, row);
            }
            p.dirty = true;
            p.touched = self.barriers;
        }
        Ok(())
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        let dirty: Vec<Vec<Datum>> = self
            .partitions
            .iter()
            .filter(|(_, p)| p.dirty)
            .map(|(k, _)| k.clone())
            .collect();
        let mut b = ChunkBuilder::new();
        for key in dirty {
            let Some(p) = self.partitions.get(&key) else {
                continue;
            };
            let new = self.outputs(p);
            for (pk, old) in &p.emitted {
                match new.get(pk) {
                    None => b.push(Op::Delete, old.clone(), out),
                    Some(row) if !identical(row, old) => {
                        b.push(Op::UpdateDelete, old.clone(), out);
                        b.push(Op::UpdateInsert, row.clone(), out);
                    }
                    Some(_) => {}
                }
            }
            for (pk, row) in &new {
                if !p.emitted.contains_key(pk) {
                    b.push(Op::Insert, row.clone(), out);
                }
            }
            if new.is_empty() {
                self.partitions.remove(&key);
            } else if let Some(p) = self.partitions.get_mut(&key) {
                p.emitted = new;
                p.dirty = false;
            }
        }
        b.finish(out);
        let committed = self.table.commit(barrier.epoch.prev, barrier.epoch.curr)?;
        self.barriers += 1;
        self.evict();
        Ok(committed)
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        let width = self.partition_by.len();
        let kept = super::take_vnodes(&mut self.table, &mut self.partitions, width, new);
        if !kept && !matches!(self.known, Known::Unchecked) {
            self.known = Known::Stored;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::{barrier, pretty, store, table};
    use super::*;
    use ebbflow_common::DataType;
    use ebbflow_expr::over::Frame;

    #[tokio::test]
    async fn row_numbers_follow_inserts_and_deletes() {
        let s = store();
        // (id, g, v): stream key id, partition g, order v.
        let ty = [DataType::Int64; 3];
        let t = table(&s, 1, vec![DataType::Int64; 2], vec![0], Some(ty.to_vec()));
        let call = WindowCall {
            kind: WindowFuncKind::RowNumber,
            args: vec![],
            arg_type: None,
            offset: 1,
            return_type: DataType::Int64,
            frame: Frame::DEFAULT,
        };
        let order = vec![OrderKey {
            index: 2,
            desc: false,
            nulls_first: false,
        }];
        let mut w = OverWindowExecutor::new(vec![1], order, vec![call], None, vec![0], t, 0);
        let mut out = vec![];
        w.process_chunk(
            0,
            StreamChunk::from_pretty("+ 1 1 30\n+ 2 1 10\n+ 3 2 5", &ty),
            &mut out,
        )
        .await
        .expect("chunk");
        let _ = w
            .process_barrier(&barrier(2), &mut out)
            .await
            .expect("barrier");
        let mut got = pretty(&out);
        got.sort();
        assert_eq!(got, ["+ 1 1 30 2", "+ 2 1 10 1", "+ 3 2 5 1"]);
        out.clear();
        // A new first row renumbers the partition; the other is untouched.
        w.process_chunk(
            0,
            StreamChunk::from_pretty("+ 4 1 1\n- 3 2 5", &ty),
            &mut out,
        )
        .await
        .expect("chunk");
        let _ = w
            .process_barrier(&barrier(3), &mut out)
            .await
            .expect("barrier");
        let mut got = pretty(&out);
        got.sort();
        assert_eq!(
            got,
            [
                "+ 4 1 1 1",
                "- 3 2 5 1",
                "U+ 1 1 30 3",
                "U+ 2 1 10 2",
                "U- 1 1 30 2",
                "U- 2 1 10 1"
            ]
        );
    }

    #[tokio::test]
    async fn evicted_partitions_are_read_again() {
        let s = store();
        let ty = [DataType::Int64; 3];
        let t = table(&s, 1, vec![DataType::Int64; 2], vec![0], Some(ty.to_vec()));
        let call = WindowCall {
            kind: WindowFuncKind::RowNumber,
            args: vec![],
            arg_type: None,
            offset: 1,
            return_type: DataType::Int64,
            frame: Frame::DEFAULT,
        };
        let order = vec![OrderKey {
            index: 2,
            desc: false,
            nulls_first: false,
        }];
        let mut w = OverWindowExecutor::new(vec![1], order, vec![call], None, vec![0], t, 0);
        let n = MAX_CACHED_PARTITIONS as i64 + 10;
        let rows: Vec<String> = (0..n).map(|i| format!("+ {i} {i} 10")).collect();
        let mut out = vec![];
        w.process_chunk(0, StreamChunk::from_pretty(&rows.join("\n"), &ty), &mut out)
            .await
            .expect("chunk");
        let _ = w
            .process_barrier(&barrier(2), &mut out)
            .await
            .expect("barrier");
        assert_eq!(pretty(&out).len(), n as usize);
        assert_eq!(w.partitions.len(), MAX_CACHED_PARTITIONS / 2);
        // Every partition, held or not, renumbers from what is stored.
        out.clear();
        let more: Vec<String> = (0..n).map(|i| format!("+ {} {i} 1", n + i)).collect();
        w.process_chunk(0, StreamChunk::from_pretty(&more.join("\n"), &ty), &mut out)
            .await
            .expect("chunk");
        let _ = w
            .process_barrier(&barrier(3), &mut out)
            .await
            .expect("barrier");
        let got = pretty(&out);
        assert_eq!(
            got.len(),
            3 * n as usize,
            "an insert and an update per partition"
        );
        assert!(got
            .iter()
            .filter(|l| l.starts_with("U+"))
            .all(|l| l.ends_with(" 10 2")));
    }
}
