//! Filter: keeps rows whose predicate is TRUE.

use async_trait::async_trait;

use arrow_buffer::BooleanBufferBuilder;

use super::project::log_errors;
use super::Executor;
use crate::message::Watermark;
use crate::StreamResult;
use ebbflow_common::{Op, ScalarRef, StreamChunk};
use ebbflow_expr::Expr;

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
}

#[async_trait]
impl Executor for FilterExecutor {
    fn name(&self) -> &'static str {
        "Filter"
    }

    async fn process_watermarks(
        &mut self,
        inputs: &[Vec<Watermark>],
    ) -> StreamResult<Vec<Watermark>> {
        Ok(inputs.first().cloned().unwrap_or_default())
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let (verdict, errors) = self.predicate.eval_chunk(&chunk);
        // A row whose predicate fails is dropped (its verdict is NULL).
        log_errors(self.actor_id, &chunk, &errors);
        let pass = |i: usize| matches!(verdict.get(i), Some(ScalarRef::Boolean(true)));
        let n = chunk.capacity();
        let mut ops = chunk.ops().to_vec();
        let mut keep = BooleanBufferBuilder::new(n);
        keep.append_n(n, false);
        let rows: Vec<usize> = chunk.visible_indices().collect();
        let mut k = 0;
        while k < rows.len() {
            let i = rows[k];
            k += 1;
            if ops[i] == Op::UpdateDelete {
                if let Some(&j) = rows.get(k).filter(|&&j| ops[j] == Op::UpdateInsert) {
                    k += 1;
                    // An update whose halves pass differently becomes a
                    // plain insert or delete.
                    match (pass(i), pass(j)) {
                        (true, true) => {
                            keep.set_bit(i, true);
                            keep.set_bit(j, true);
                        }
                        (true, false) => {
                            ops[i] = Op::Delete;
                            keep.set_bit(i, true);
                        }
                        (false, true) => {
                            ops[j] = Op::Insert;
                            keep.set_bit(j, true);
                        }
                        (false, false) => {}
                    }
                    continue;
                }
            }
            if pass(i) {
                ops[i] = ops[i].normalize_unpaired();
                keep.set_bit(i, true);
            }
        }
        let result = chunk.with_visibility(ops, keep.finish());
        if !result.is_empty() {
            out.push(result);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebbflow_common::DataType;

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
