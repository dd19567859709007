//! `unnest(array)` in a select list: each row once per element of its
//! array, followed by the element and its 1-based position.
//!
//! Stateless, like Project. For every position `k` up to the longest array
//! of the chunk it emits the input's columns, shared rather than copied,
//! with the element `k` and the position `k`; a row whose array is NULL or
//! shorter is not visible in that output. The position is part of the
//! output's stream key, and an update may change the number of elements,
//! so update pairs become plain deletes and inserts.

use arrow_buffer::BooleanBuffer;
use async_trait::async_trait;

use super::project::log_errors;
use super::Executor;
use crate::{StreamError, StreamResult};
use ebbflow_common::{Column, ColumnBuilder, DataType, Op, ScalarRef, ScalarValue, StreamChunk};
use ebbflow_expr::Expr;

pub struct UnnestExecutor {
    array: Expr,
    actor_id: u32,
}

impl UnnestExecutor {
    pub fn new(array: Expr, actor_id: u32) -> Self {
        UnnestExecutor { array, actor_id }
    }
}

#[async_trait]
impl Executor for UnnestExecutor {
    fn name(&self) -> &'static str {
        "Unnest"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let (arrays, errors) = self.array.eval_chunk(&chunk);
        log_errors(self.actor_id, &chunk, &errors);
        let elem = match self.array.return_type() {
            DataType::Array(e) => e.data_type(),
            other => {
                return Err(StreamError::Internal(format!("unnest of a {other}")));
            }
        };
        let n = chunk.capacity();
        let len = |i: usize| match arrays.get(i) {
            Some(ScalarRef::Array(a)) if chunk.is_visible(i) => a.items.len(),
            _ => 0,
        };
        let longest = (0..n).map(len).max().unwrap_or(0);
        let ops: Vec<Op> = chunk.ops().iter().map(|o| o.normalize()).collect();
        for k in 0..longest {
            let mut elements = ColumnBuilder::new(Some(elem), n);
            let mut positions = ColumnBuilder::new(Some(DataType::Int32), n);
            let position = ScalarValue::Int32(i32::try_from(k + 1).unwrap_or(i32::MAX));
            let mut valid = Vec::with_capacity(n);
            for i in 0..n {
                let item = match arrays.get(i) {
                    Some(ScalarRef::Array(a)) if chunk.is_visible(i) => a.items.get(k),
                    _ => None,
                };
                valid.push(item.is_some());
                elements.push(
                    item.and_then(|d| d.as_ref())
                        .map(ScalarValue::as_scalar_ref),
                );
                positions.push(Some(position.as_scalar_ref()));
            }
            let mut columns: Vec<Column> = chunk.columns().to_vec();
            columns.push(elements.finish());
            columns.push(positions.finish());
            let c = StreamChunk::new(ops.clone(), columns, chunk.visibility().cloned())
                .with_visibility(ops.clone(), BooleanBuffer::from(valid));
            if !c.is_empty() {
                out.push(c);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::pretty;
    use super::*;
    use ebbflow_common::ElemType;

    #[tokio::test]
    async fn each_row_once_per_element() {
        let ty = [DataType::Int64, DataType::Array(ElemType::Int32)];
        let mut u = UnnestExecutor::new(Expr::input_ref(1, ty[1]), 0);
        let mut out = vec![];
        let input =
            StreamChunk::from_pretty("+ 1 {1,2}\n+ 2 .\n- 3 {}\nU- 4 {5}\nU+ 4 {6,NULL}", &ty);
        u.process_chunk(0, input, &mut out).await.expect("unnest");
        assert_eq!(
            pretty(&out),
            [
                "+ 1 {1,2} 1 1",
                "- 4 {5} 5 1",
                "+ 4 {6,NULL} 6 1",
                "+ 1 {1,2} 2 2",
                "+ 4 {6,NULL} . 2",
            ]
        );
    }
}
