//! Top-N (`ORDER BY ... LIMIT n OFFSET m`) over the whole input, in a
//! singleton fragment.
//!
//! All input rows are kept in the state table keyed by the input's stream
//! key and, once loaded, in memory ordered by the sort key; on each barrier
//! the rows ranked `[offset, offset + limit)` are compared with what was
//! emitted before and the difference is emitted.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::{ChunkBuilder, Committed, Executor};
use crate::message::Barrier;
use crate::StreamResult;
use ebbflow_common::encoding::encode_key_row;
use ebbflow_common::order::{encode_sort_key, OrderKey};
use ebbflow_common::{Datum, Op, Row, StreamChunk};
use ebbflow_storage::StateTable;

pub struct TopNExecutor {
    order: Vec<OrderKey>,
    limit: Option<u64>,
    offset: u64,
    pk: Vec<usize>,
    table: StateTable,
    loaded: bool,
    /// sort key ++ pk (bytes) → row.
    rows: BTreeMap<Vec<u8>, Row>,
    /// pk → its key in `rows`.
    index: HashMap<Vec<Datum>, Vec<u8>>,
    emitted: HashMap<Vec<Datum>, Row>,
    dirty: bool,
}

impl TopNExecutor {
    pub fn new(
        order: Vec<OrderKey>,
        limit: Option<u64>,
        offset: u64,
        pk: Vec<usize>,
        table: StateTable,
    ) -> Self {
        TopNExecutor {
            order,
            limit,
            offset,
            pk,
            table,
            loaded: false,
            rows: BTreeMap::new(),
            index: HashMap::new(),
            emitted: HashMap::new(),
            dirty: true,
        }
    }

    fn sort_key(&self, row: &Row) -> Vec<u8> {
        let mut k = Vec::with_capacity(32);
        encode_sort_key(&mut k, &self.order, row);
        let pk: Row = self.pk.iter().map(|&i| row[i].clone()).collect();
        encode_key_row(&mut k, &pk);
        k
    }

    fn pk_of(&self, row: &Row) -> Vec<Datum> {
        self.pk.iter().map(|&i| row[i].clone()).collect()
    }

    async fn ensure_loaded(&mut self) -> StreamResult<()> {
        if self.loaded {
            return Ok(());
        }
        self.loaded = true;
        for (_, row) in self.table.scan_vnode(0).await? {
            self.add(row);
        }
        // What was emitted before a restart is exactly the top range of the
        // stored rows.
        self.emitted = self.top();
        Ok(())
    }

    fn add(&mut self, row: Row) {
        let k = self.sort_key(&row);
        self.index.insert(self.pk_of(&row), k.clone());
        self.rows.insert(k, row);
    }

    fn top(&self) -> HashMap<Vec<Datum>, Row> {
        let take = self.limit.map(|l| l as usize).unwrap_or(usize::MAX);
        self.rows
            .values()
            .skip(self.offset as usize)
            .take(take)
            .map(|r| (self.pk_of(r), r.clone()))
            .collect()
    }
}

#[async_trait]
impl Executor for TopNExecutor {
    fn name(&self) -> &'static str {
        "TopN"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        self.ensure_loaded().await?;
        for (op, row) in chunk.rows() {
            let pk = self.pk_of(&row);
            if let Some(k) = self.index.remove(&pk) {
                self.rows.remove(&k);
            }
            if op.is_insert() {
                self.table.put(&pk, &row);
                self.add(row);
            } else {
                self.table.delete(&pk);
            }
        }
        self.dirty = true;
        Ok(())
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        self.ensure_loaded().await?;
        if self.dirty {
            self.dirty = false;
            let new = self.top();
            let mut b = ChunkBuilder::new();
            for (pk, old) in &self.emitted {
                if new.get(pk) != Some(old) {
                    b.push(Op::Delete, old.clone(), out);
                }
            }
            for (pk, row) in &new {
                if self.emitted.get(pk) != Some(row) {
                    b.push(Op::Insert, row.clone(), out);
                }
            }
            b.finish(out);
            self.emitted = new;
        }
        Ok(self.table.commit(barrier.epoch.prev, barrier.epoch.curr)?)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::{barrier, pretty, store, table};
    use super::*;
    use ebbflow_common::DataType;

    #[tokio::test]
    async fn top_two_desc_with_deletes_and_ties_broken_by_key() {
        let s = store();
        let ty = [DataType::Int64, DataType::Int64];
        let t = table(&s, 1, vec![DataType::Int64], vec![], Some(ty.to_vec()));
        let order = vec![OrderKey {
            index: 1,
            desc: true,
            nulls_first: true,
        }];
        let mut top = TopNExecutor::new(order, Some(2), 0, vec![0], t);
        let mut out = vec![];
        top.process_chunk(
            0,
            StreamChunk::from_pretty("+ 1 10\n+ 2 30\n+ 3 20\n+ 4 .", &ty),
            &mut out,
        )
        .await
        .unwrap();
        let _ = top.process_barrier(&barrier(2), &mut out).await.unwrap();
        let mut got = pretty(&out);
        got.sort();
        // NULLS FIRST for DESC, as in PostgreSQL
        assert_eq!(got, vec!["+ 2 30", "+ 4 ."]);
        out.clear();
        top.process_chunk(0, StreamChunk::from_pretty("- 4 .", &ty), &mut out)
            .await
            .unwrap();
        let _ = top.process_barrier(&barrier(3), &mut out).await.unwrap();
        assert_eq!(pretty(&out), vec!["- 4 .", "+ 3 20"]);
    }
}
