//! Projection: evaluates expressions per row.

use async_trait::async_trait;

use super::Executor;
use crate::common::StreamChunk;
use crate::expr::Expr;
use crate::stream::StreamResult;

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

/// Evaluate `expr`; on a data error (overflow, division by zero...) log it
/// and yield NULL, so a bad row never stops a running job (as RisingWave
/// does). Deterministic, so a later retraction of the row matches.
pub(crate) fn eval_or_null(
    expr: &Expr,
    row: &crate::common::Row,
    actor_id: u32,
) -> crate::common::Datum {
    match expr.eval(row) {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(actor_id, error = %e, ?row, "expression failed in a streaming job; using NULL");
            None
        }
    }
}

#[async_trait]
impl Executor for ProjectExecutor {
    fn name(&self) -> &'static str {
        "Project"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let mut result = StreamChunk::with_capacity(chunk.len());
        for (op, row) in chunk.iter() {
            let new_row = self
                .exprs
                .iter()
                .map(|e| eval_or_null(e, row, self.actor_id))
                .collect();
            result.push(op, new_row);
        }
        out.push(result);
        Ok(())
    }
}
