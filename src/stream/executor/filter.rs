//! Filter: keeps rows whose predicate is TRUE.

use async_trait::async_trait;

use super::Executor;
use crate::common::{Op, StreamChunk};
use crate::expr::Expr;
use crate::stream::StreamResult;

pub struct FilterExecutor {
    predicate: Expr,
    actor_id: u32,
}

impl FilterExecutor {
    pub fn new(predicate: Expr, actor_id: u32) -> Self {
        FilterExecutor {
            predicate,
            actor_id,
        }
    }

    fn pass(&self, row: &crate::common::Row) -> bool {
        match self.predicate.eval_predicate(row) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(actor_id = self.actor_id, error = %e, ?row, "filter failed in a streaming job; dropping the row");
                false
            }
        }
    }
}

#[async_trait]
impl Executor for FilterExecutor {
    fn name(&self) -> &'static str {
        "Filter"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let mut result = StreamChunk::with_capacity(chunk.len());
        let mut rows = chunk.into_iter_rows().peekable();
        while let Some((op, row)) = rows.next() {
            if op == Op::UpdateDelete {
                // An update whose halves pass differently becomes a plain
                // insert or delete.
                if let Some((Op::UpdateInsert, _)) = rows.peek() {
                    let Some((_, new)) = rows.next() else { break };
                    match (self.pass(&row), self.pass(&new)) {
                        (true, true) => {
                            result.push(Op::UpdateDelete, row);
                            result.push(Op::UpdateInsert, new);
                        }
                        (true, false) => result.push(Op::Delete, row),
                        (false, true) => result.push(Op::Insert, new),
                        (false, false) => {}
                    }
                    continue;
                }
            }
            if self.pass(&row) {
                result.push(op.normalize_unpaired(), row);
            }
        }
        if !result.is_empty() {
            out.push(result);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::DataType;

    #[tokio::test]
    async fn update_pairs_split() {
        // predicate: column 1 is TRUE
        let mut f = FilterExecutor::new(Expr::input_ref(1, DataType::Boolean), 0);
        let types = [DataType::Int64, DataType::Boolean];
        let input = StreamChunk::from_pretty(
            "+ 1 t\n+ 2 f\nU- 1 t\nU+ 1 f\nU- 2 f\nU+ 2 t\nU- 3 t\nU+ 3 t",
            &types,
        );
        let mut out = vec![];
        f.process_chunk(0, input, &mut out).await.unwrap();
        let expect = StreamChunk::from_pretty("+ 1 t\n- 1 t\n+ 2 t\nU- 3 t\nU+ 3 t", &types);
        assert_eq!(out, vec![expect]);
    }
}
