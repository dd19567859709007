//! Projection: evaluates expressions a column at a time; an input column
//! is passed on without a copy.

use async_trait::async_trait;

use super::Executor;
use crate::message::Watermark;
use crate::StreamResult;
use ebbflow_common::StreamChunk;
use ebbflow_expr::{Expr, ExprError};

pub struct ProjectExecutor {
    exprs: Vec<Expr>,
    /// Identifies the job in the log line of a row whose evaluation failed.
    actor_id: u32,
}

impl ProjectExecutor {
    pub fn new(exprs: Vec<Expr>, actor_id: u32) -> Self {
        ProjectExecutor { exprs, actor_id }
    }
}

#[async_trait]
impl Executor for ProjectExecutor {
    fn name(&self) -> &'static str {
        "Project"
    }

    async fn process_watermarks(
        &mut self,
        inputs: &[Vec<Watermark>],
    ) -> StreamResult<Vec<Watermark>> {
        let Some(input) = inputs.first() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (i, e) in self.exprs.iter().enumerate() {
            let derived = input
                .iter()
                .find_map(|w| e.at_watermark(w.column, &w.value));
            if let Some(value) = derived {
                out.push(Watermark::new(i, value));
            }
        }
        Ok(out)
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        // A column of the input is shared, not copied; other expressions
        // are evaluated a column at a time.
        let columns = self
            .exprs
            .iter()
            .map(|e| {
                let (column, errors) = e.eval_chunk(&chunk);
                log_errors(self.actor_id, &chunk, &errors);
                column
            })
            .collect();
        out.push(chunk.with_columns(columns));
        Ok(())
    }
}

/// Log the rows whose expression failed: a data error (overflow, division
/// by zero...) yields NULL, so a bad row never stops a running job (as in
/// RisingWave); it is deterministic, so a later retraction of the row
/// matches. The first few of a chunk are logged, and how many failed.
pub(crate) fn log_errors(actor_id: u32, chunk: &StreamChunk, errors: &[(usize, ExprError)]) {
    for (i, e) in errors.iter().take(3) {
        let row = chunk.row(*i);
        tracing::warn!(actor_id, error = %e, ?row, "expression failed in a streaming job; using NULL");
    }
    if errors.len() > 3 {
        tracing::warn!(
            actor_id,
            failed = errors.len(),
            "more rows of the chunk failed the same way"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::pretty;
    use super::*;
    use ebbflow_common::DataType;
    use ebbflow_expr::{build_func, Func};

    fn col(index: usize) -> Expr {
        Expr::InputRef {
            index,
            ty: DataType::Int64,
        }
    }

    async fn project(exprs: Vec<Expr>, input: &str) -> Vec<String> {
        let ty = [DataType::Int64; 3];
        let mut p = ProjectExecutor::new(exprs, 0);
        let mut out = vec![];
        p.process_chunk(0, StreamChunk::from_pretty(input, &ty), &mut out)
            .await
            .expect("project");
        pretty(&out)
    }

    #[tokio::test]
    async fn columns_in_any_order_and_expressions() {
        let input = "+ 1 2 3\nU- 4 . 6\nU+ 4 5 6";
        assert_eq!(
            project(vec![col(1), col(2)], input).await,
            ["+ 2 3", "U- . 6", "U+ 5 6"]
        );
        assert_eq!(
            project(vec![col(2), col(0), col(0)], input).await,
            ["+ 3 1 1", "U- 6 4 4", "U+ 6 4 4"]
        );
        let sum = build_func(Func::Add, vec![col(0), col(2)]).expect("a + c");
        assert_eq!(
            project(vec![sum, col(1)], input).await,
            ["+ 4 2", "U- 10 .", "U+ 10 5"]
        );
        // A column past the row's end is an evaluation error: NULL.
        assert_eq!(project(vec![col(1), col(7)], "+ 1 2 3").await, ["+ 2 ."]);
    }
}
