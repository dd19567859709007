//! INSERT, UPDATE and DELETE: changes computed from a committed read, then
//! written to the table's DML path as one statement.

use super::{command, FResult, LocalSession, MetaScan};
use crate::{FrontendError, StatementResult};
use ebbflow_batch as batch;
use ebbflow_common::ErrorKind;
use ebbflow_common::{Op, Row, StreamChunk, StreamChunkBuilder};
use ebbflow_expr::Expr;
use ebbflow_meta::catalog::{RelationDesc, RelationKind};
use ebbflow_planner::logical::LogicalPlan;

impl LocalSession {
    pub(super) async fn insert(
        &self,
        table: &RelationDesc,
        source: &LogicalPlan,
    ) -> FResult<StatementResult> {
        let scan = MetaScan::prefetch(&self.meta, || self.session_info(true), source).await?;
        let rows = batch::execute(source, &scan)?;
        let n = rows.len();
        let full: Vec<Row> = rows.into_iter().map(|r| widen(table, r)).collect();
        self.write(table, StreamChunk::inserts(full)).await?;
        Ok(command(format!("INSERT 0 {n}")))
    }

    pub(super) async fn update(
        &self,
        table: &RelationDesc,
        filter: Option<&Expr>,
        assignments: &[(usize, Expr)],
    ) -> FResult<StatementResult> {
        let mut chunk = StreamChunkBuilder::new();
        let mut n = 0;
        for row in self.committed_rows(table).await? {
            if !passes(filter, &row)? {
                continue;
            }
            let mut new = row.clone();
            for (col, e) in assignments {
                new[*col] = e.eval(&row)?;
            }
            n += 1;
            let same_key = table.pk.iter().all(|&k| new[k] == row[k]);
            if same_key {
                chunk.push(Op::UpdateDelete, row);
                chunk.push(Op::UpdateInsert, new);
            } else {
                chunk.push(Op::Delete, row);
                chunk.push(Op::Insert, new);
            }
        }
        self.write(table, chunk.take()).await?;
        Ok(command(format!("UPDATE {n}")))
    }

    pub(super) async fn delete(
        &self,
        table: &RelationDesc,
        filter: Option<&Expr>,
    ) -> FResult<StatementResult> {
        let mut chunk = StreamChunkBuilder::new();
        for row in self.committed_rows(table).await? {
            if !passes(filter, &row)? {
                continue;
            }
            chunk.push(Op::Delete, row);
        }
        let n = chunk.len();
        self.write(table, chunk.take()).await?;
        Ok(command(format!("DELETE {n}")))
    }

    /// The rows of `table`, read after a FLUSH so that the statement sees
    /// every change acknowledged before it.
    async fn committed_rows(&self, table: &RelationDesc) -> FResult<Vec<Row>> {
        self.meta.flush().await?;
        Ok(self.meta.scan(table).await?)
    }

    pub(super) async fn write(&self, table: &RelationDesc, chunk: StreamChunk) -> FResult<()> {
        if table.kind != RelationKind::Table {
            return Err(FrontendError::new(
                ErrorKind::WrongObjectType,
                format!("cannot change materialized view \"{}\"", table.name),
            ));
        }
        let generation = self
            .meta
            .write_dml_statement(table.id, chunk_parts(chunk))
            .await?;
        if self.vars.lock().implicit_flush {
            self.meta.flush_since(generation).await?;
        } else {
            self.unflushed.lock().get_or_insert(generation);
        }
        Ok(())
    }
}

/// Whether `row` is one a `WHERE filter` (if any) selects.
fn passes(filter: Option<&Expr>, row: &Row) -> FResult<bool> {
    match filter {
        Some(f) => Ok(f.eval_predicate(row)?),
        None => Ok(true),
    }
}

/// A visible-columns row widened to the table's full row (hidden row id
/// left NULL: meta assigns it).
fn widen(table: &RelationDesc, row: Row) -> Row {
    if table.columns.iter().all(|c| !c.hidden) {
        return row;
    }
    let mut vals = row.into_iter();
    table
        .columns
        .iter()
        .map(|c| {
            if c.hidden {
                None
            } else {
                vals.next().flatten()
            }
        })
        .collect()
}

/// Split a large DML chunk into pieces of a bounded size.
fn chunk_parts(chunk: StreamChunk) -> Vec<StreamChunk> {
    const MAX: usize = 4096;
    if chunk.len() <= MAX {
        return vec![chunk];
    }
    let mut parts = Vec::new();
    let mut cur = StreamChunkBuilder::new();
    for (op, row) in chunk.rows() {
        let split_ok = op != Op::UpdateInsert;
        if cur.len() >= MAX && split_ok {
            parts.push(cur.take());
        }
        cur.push(op, row);
    }
    if !cur.is_empty() {
        parts.push(cur.take());
    }
    parts
}
