//! Materialize: keeps a table or MV's rows in its state table, keyed by the
//! relation's pk, and forwards the changes downstream.
//!
//! For tables (`handle_conflicts`), the input comes from DML and may not be
//! consistent with the stored rows: an insert on an existing key is
//! resolved by the table's [`OnConflict`] (by default it overwrites the
//! row, emitted as an update), a delete or update names a row by its key
//! and the stored version is the one retracted, and a delete of a missing
//! key is dropped. MVs trust their input and apply it as is.
//!
//! The resolution reads the stored row of the key from the state table,
//! which holds every vnode the actor owns (committed rows and this epoch's
//! writes), so it stays right when a scale hands a vnode to another actor:
//! the new owner reads what the old one committed.

use async_trait::async_trait;

use super::{Committed, Executor};
use crate::message::Barrier;
use crate::StreamResult;
use ebbflow_common::encoding::vnode_of;
use ebbflow_common::{identical, Bitmap, Datum, Op, Row, StreamChunk, StreamChunkBuilder};
use ebbflow_plan::OnConflict;
use ebbflow_storage::StateTable;

/// The row to store for an insert of `new` where `old` is stored under
/// `on_conflict`, or `None` to keep `old` as it is.
fn resolve(on_conflict: OnConflict, old: &Row, new: Row) -> Option<Row> {
    let merged = match on_conflict {
        OnConflict::Overwrite => new,
        OnConflict::Ignore => return None,
        OnConflict::DoUpdateIfNotNull => new
            .into_iter()
            .zip(old)
            .map(|(n, o)| if n.is_some() { n } else { o.clone() })
            .collect(),
    };
    (!identical(&merged, old)).then_some(merged)
}

pub struct MaterializeExecutor {
    table: StateTable,
    pk: Vec<usize>,
    dist_key: Vec<usize>,
    /// Whether the distribution key is inside the pk (then the vnode
    /// follows from the pk alone).
    dist_in_pk: bool,
    handle_conflicts: bool,
    /// How an insert on an existing key is resolved (tables only).
    on_conflict: OnConflict,
    /// Inserts carry fresh keys (hidden row ids): skip the lookup.
    inserts_are_new: bool,
}

impl MaterializeExecutor {
    pub fn new(
        table: StateTable,
        pk: Vec<usize>,
        dist_key: Vec<usize>,
        handle_conflicts: bool,
        inserts_are_new: bool,
    ) -> Self {
        let dist_in_pk = dist_key.iter().all(|d| pk.contains(d));
        MaterializeExecutor {
            table,
            pk,
            dist_key,
            dist_in_pk,
            handle_conflicts,
            on_conflict: OnConflict::Overwrite,
            inserts_are_new,
        }
    }

    /// Resolve inserts on existing keys by `on_conflict` instead of
    /// overwriting.
    pub fn with_on_conflict(mut self, on_conflict: OnConflict) -> Self {
        self.on_conflict = on_conflict;
        self
    }

    fn pk_of(&self, row: &Row) -> Vec<Datum> {
        self.pk.iter().map(|&i| row[i].clone()).collect()
    }

    fn put(&mut self, row: &Row) {
        let pk = self.pk_of(row);
        if self.dist_in_pk {
            self.table.put(&pk, row);
        } else {
            self.table.put_at(vnode_of(row, &self.dist_key), &pk, row);
        }
    }

    fn delete(&mut self, row: &Row) {
        let pk = self.pk_of(row);
        if self.dist_in_pk {
            self.table.delete(&pk);
        } else {
            self.table.delete_at(vnode_of(row, &self.dist_key), &pk);
        }
    }

    async fn current(&self, row: &Row) -> StreamResult<Option<Row>> {
        let pk = self.pk_of(row);
        Ok(if self.dist_in_pk {
            self.table.get(&pk).await?
        } else {
            self.table
                .get_at(vnode_of(row, &self.dist_key), &pk)
                .await?
        })
    }
}

#[async_trait]
impl Executor for MaterializeExecutor {
    fn name(&self) -> &'static str {
        "Materialize"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        if !self.handle_conflicts {
            let rows: Vec<(Op, Row)> = chunk.rows().collect();
            for (i, (op, row)) in rows.iter().enumerate() {
                if op.is_insert() {
                    self.put(row);
                } else if !(*op == Op::UpdateDelete
                    && rows.get(i + 1).is_some_and(|(next_op, next)| {
                        *next_op == Op::UpdateInsert && self.pk.iter().all(|&c| row[c] == next[c])
                    }))
                {
                    // (an update that keeps the pk is one overwrite)
                    self.delete(row);
                }
            }
            out.push(chunk);
            return Ok(());
        }
        let mut result = StreamChunkBuilder::new();
        for (op, row) in chunk.rows() {
            if op.is_insert() {
                let old = if self.inserts_are_new && op == Op::Insert {
                    None
                } else {
                    self.current(&row).await?
                };
                match old {
                    Some(old) => {
                        if let Some(row) = resolve(self.on_conflict, &old, row) {
                            result.push(Op::UpdateDelete, old);
                            self.put(&row);
                            result.push(Op::UpdateInsert, row);
                        }
                    }
                    None => {
                        self.put(&row);
                        result.push(Op::Insert, row);
                    }
                }
            } else if let Some(old) = self.current(&row).await? {
                self.delete(&row);
                result.push(Op::Delete, old);
            }
        }
        // Collapse `- old` followed by `U- old, U+ new` is not needed: a
        // delete+insert pair on one key is a valid change for every consumer.
        if !result.is_empty() {
            out.push(result.take());
        }
        Ok(())
    }

    async fn process_barrier(
        &mut self,
        barrier: &Barrier,
        _out: &mut Vec<StreamChunk>,
    ) -> StreamResult<Committed> {
        Ok(self.table.commit(barrier.epoch.prev, barrier.epoch.curr)?)
    }

    async fn update_vnodes(&mut self, new: &Bitmap) {
        self.table.update_vnodes(new.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::{resolve, OnConflict};
    use ebbflow_common::{Row, ScalarValue};

    fn row(k: i32, v: Option<i32>, w: Option<&str>) -> Row {
        vec![
            Some(ScalarValue::Int32(k)),
            v.map(ScalarValue::Int32),
            w.map(ScalarValue::varchar),
        ]
    }

    #[test]
    fn conflicts_resolve_by_behaviour() {
        let old = row(1, Some(10), Some("a"));
        let new = row(1, Some(11), None);
        assert_eq!(
            resolve(OnConflict::Overwrite, &old, new.clone()),
            Some(new.clone())
        );
        assert_eq!(resolve(OnConflict::Ignore, &old, new.clone()), None);
        assert_eq!(
            resolve(OnConflict::DoUpdateIfNotNull, &old, new),
            Some(row(1, Some(11), Some("a")))
        );
        // Nothing changes: nothing to emit.
        assert_eq!(
            resolve(OnConflict::DoUpdateIfNotNull, &old, row(1, None, Some("a"))),
            None
        );
        assert_eq!(resolve(OnConflict::Overwrite, &old, old.clone()), None);
    }
}
