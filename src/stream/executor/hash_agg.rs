//! Hash aggregation with retraction.
//!
//! Keeps, per group, the row count and one accumulator per call; emits the
//! changed group results once per barrier (a group that appears is an
//! insert, one that changes an update, one whose rows are all retracted a
//! delete). Without GROUP BY there is exactly one group, whose row exists
//! from the first barrier on, as in SQL (`count(*)` of nothing is 0).
//!
//! State: one row per group in the state table, keyed by the group key,
//! holding the row count and every accumulator's saved state. Every group
//! the actor has met stays in memory; each is written to the store once per
//! epoch in which it changed. A group's previous result is not kept: it is
//! computed when the group first changes in an epoch. When the state table
//! is empty as the actor starts (a new job), every group it meets is new and
//! a miss never reads the store; the vnodes it gains in a scale are read on
//! a miss, as after a recovery.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use async_trait::async_trait;

use super::{ChunkBuilder, Executor};
use crate::common::encoding::vnode_of;
use crate::common::{Bitmap, Datum, Op, Row, ScalarValue, StreamChunk};
use crate::expr::{create_accumulator, Accumulator, AggCall};
use crate::storage::StateTable;
use crate::stream::message::Barrier;
use crate::stream::{StreamError, StreamResult};

type GroupKey = Vec<Datum>;

struct GroupState {
    row_count: i64,
    accs: Vec<Box<dyn Accumulator>>,
    /// The group's result is in the output (and its state in the store).
    stored: bool,
    /// Changed in the current epoch (its key is in `HashAggExecutor::dirty`).
    dirty: bool,
}

pub struct HashAggExecutor {
    group_by: Vec<usize>,
    calls: Vec<AggCall>,
    table: StateTable,
    cache: HashMap<GroupKey, GroupState, foldhash::fast::RandomState>,
    /// Groups changed this epoch, with the result they had before it.
    dirty: Vec<(GroupKey, Option<Row>)>,
    /// Vnodes whose every stored group is in `cache`: a miss there is a new
    /// group. `None` until the first chunk looked at the table.
    complete: Option<Bitmap>,
    actor_id: u32,
}

impl HashAggExecutor {
    pub fn new(
        group_by: Vec<usize>,
        calls: Vec<AggCall>,
        table: StateTable,
        actor_id: u32,
    ) -> Self {
        HashAggExecutor {
            group_by,
            calls,
            table,
            cache: HashMap::default(),
            dirty: Vec::new(),
            complete: None,
            actor_id,
        }
    }
}

/// Load a group from the state table (or make an empty one).
async fn load(table: &StateTable, calls: &[AggCall], key: &[Datum]) -> StreamResult<GroupState> {
    let mut state = fresh(calls);
    if let Some(saved) = table.get(key).await? {
        decode_state(&saved, &mut state)?;
        state.stored = true;
    }
    Ok(state)
}

fn fresh(calls: &[AggCall]) -> GroupState {
    GroupState {
        row_count: 0,
        accs: calls.iter().map(create_accumulator).collect(),
        stored: false,
        dirty: false,
    }
}

/// The group's output row (`None` for a group of no rows, unless global).
fn output_of(global: bool, key: &[Datum], state: &GroupState) -> StreamResult<Option<Row>> {
    if state.row_count == 0 && !global {
        return Ok(None);
    }
    let mut row: Row = Vec::with_capacity(key.len() + state.accs.len());
    row.extend_from_slice(key);
    for acc in &state.accs {
        row.push(acc.output()?);
    }
    Ok(Some(row))
}

/// Note the group's first change of the epoch, with the result the
/// downstream holds for it until then.
fn mark_dirty(
    global: bool,
    key: GroupKey,
    state: &mut GroupState,
    dirty: &mut Vec<(GroupKey, Option<Row>)>,
) -> StreamResult<()> {
    let before = if state.stored {
        output_of(global, &key, state)?
    } else {
        None
    };
    state.dirty = true;
    dirty.push((key, before));
    Ok(())
}

fn encode_state(state: &GroupState) -> Row {
    let mut row: Row = vec![Some(ScalarValue::Int64(state.row_count))];
    for acc in &state.accs {
        let saved = acc.save();
        row.push(Some(ScalarValue::Int32(saved.len() as i32)));
        row.extend(saved);
    }
    row
}

fn decode_state(saved: &Row, state: &mut GroupState) -> StreamResult<()> {
    let bad = || StreamError::Internal("corrupt aggregate state".into());
    let mut it = saved.iter();
    state.row_count = it
        .next()
        .and_then(|d| d.as_ref()?.as_i64())
        .ok_or_else(bad)?;
    for acc in &mut state.accs {
        let n = it
            .next()
            .and_then(|d| d.as_ref()?.as_i64())
            .ok_or_else(bad)? as usize;
        let part: Row = it.by_ref().take(n).cloned().collect();
        acc.load(&part)?;
    }
    Ok(())
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
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let global = self.group_by.is_empty();
        if self.complete.is_none() {
            self.complete = Some(if self.table.is_empty().await? {
                self.table.vnodes().clone()
            } else {
                Bitmap::empty()
            });
        }
        for (op, row) in chunk.iter() {
            let key: GroupKey = self.group_by.iter().map(|&i| row[i].clone()).collect();
            let state = match self.cache.entry(key) {
                Entry::Occupied(mut e) => {
                    if !e.get().dirty {
                        let key = e.key().clone();
                        mark_dirty(global, key, e.get_mut(), &mut self.dirty)?;
                    }
                    e.into_mut()
                }
                Entry::Vacant(e) => {
                    let complete = self
                        .complete
                        .as_ref()
                        .is_some_and(|c| c.contains(self.table.vnode_of_pk(e.key())));
                    let mut state = if complete {
                        fresh(&self.calls)
                    } else {
                        load(&self.table, &self.calls, e.key()).await?
                    };
                    mark_dirty(global, e.key().clone(), &mut state, &mut self.dirty)?;
                    e.insert(state)
                }
            };
            let insert = op.is_insert();
            state.row_count += if insert { 1 } else { -1 };
            for (acc, call) in state.accs.iter_mut().zip(&self.calls) {
                let value = match call.arg {
                    Some(i) => &row[i],
                    None => &None,
                };
                if let Err(e) = acc.update(insert, value) {
                    tracing::warn!(actor_id = self.actor_id, error = %e, ?row, "aggregate update failed; row ignored by this aggregate");
                }
            }
        }
        Ok(())
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let global = self.group_by.is_empty();
        if global && !self.cache.contains_key(&Vec::new()) {
            // The global group exists from the first barrier on.
            let mut state = load(&self.table, &self.calls, &[]).await?;
            if !state.stored {
                state.dirty = true;
                self.dirty.push((Vec::new(), None));
            }
            self.cache.insert(Vec::new(), state);
        }
        let mut builder = ChunkBuilder::new();
        for (key, old) in std::mem::take(&mut self.dirty) {
            let Some(state) = self.cache.get_mut(&key) else {
                continue;
            };
            state.dirty = false;
            let new = output_of(global, &key, state)?;
            let gone = state.row_count == 0 && !global;
            if gone {
                self.table.delete(&key);
                self.cache.remove(&key);
            } else {
                self.table.put(&key, &encode_state(state));
                state.stored = true;
            }
            match (old, new) {
                (None, Some(n)) => builder.push(Op::Insert, n, out),
                (Some(o), None) => builder.push(Op::Delete, o, out),
                (Some(o), Some(n)) if o != n => {
                    builder.push(Op::UpdateDelete, o, out);
                    builder.push(Op::UpdateInsert, n, out);
                }
                _ => {}
            }
        }
        builder.finish(out);
        let _committed = self.table.commit(barrier.epoch.prev)?;
        Ok(())
    }

    fn update_vnodes(&mut self, new: &Bitmap) {
        self.table.update_vnodes(new.clone());
        // Groups of the vnodes kept stay cached (this actor alone wrote
        // them); the vnodes gained are read from the store on a miss.
        let dist: Vec<usize> = (0..self.group_by.len()).collect();
        self.cache.retain(|k, _| new.contains(vnode_of(k, &dist)));
        if let Some(c) = &mut self.complete {
            *c = Bitmap::from_vnodes(c.iter().filter(|v| new.contains(*v)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::{barrier, pretty, store, table};
    use super::*;
    use crate::common::DataType;
    use crate::expr::AggKind;

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
        agg.process_barrier(&barrier(2), &mut out).await.unwrap();
        let mut got = pretty(&out);
        got.sort();
        assert_eq!(got, vec!["+ 1 2 30", "+ 2 1 5"]);
        s.commit(1);
        // retract the max of group 1, all of group 2
        out.clear();
        agg.process_chunk(0, StreamChunk::from_pretty("- 1 30\n- 2 5", &ty), &mut out)
            .await
            .unwrap();
        agg.process_barrier(&barrier(3), &mut out).await.unwrap();
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
        agg.process_barrier(&barrier(4), &mut out).await.unwrap();
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
        agg.process_barrier(&barrier(2), &mut out).await.unwrap();
        assert_eq!(pretty(&out), vec!["+ 0 ."]);
        out.clear();
        agg.process_chunk(
            0,
            StreamChunk::from_pretty("+ 4\n+ 6", &[DataType::Int64]),
            &mut out,
        )
        .await
        .unwrap();
        agg.process_barrier(&barrier(3), &mut out).await.unwrap();
        assert_eq!(pretty(&out), vec!["U- 0 .", "U+ 2 10"]);
    }
}
