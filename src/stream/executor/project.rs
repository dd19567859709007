//! Projection: evaluates expressions per row; a projection of input
//! columns alone moves them.

use async_trait::async_trait;

use super::Executor;
use crate::common::{Row, StreamChunk};
use crate::expr::Expr;
use crate::stream::StreamResult;

pub struct ProjectExecutor {
    exprs: Vec<Expr>,
    /// The input columns, when every expression is one.
    columns: Option<Vec<usize>>,
    /// Those columns are in increasing order (a row is projected in place).
    in_order: bool,
    /// Identifies the job in the log line of a row whose evaluation failed.
    actor_id: u32,
}

impl ProjectExecutor {
    pub fn new(exprs: Vec<Expr>, actor_id: u32) -> Self {
        let columns = exprs
            .iter()
            .map(|e| match e {
                Expr::InputRef { index, .. } => Some(*index),
                _ => None,
            })
            .collect::<Option<Vec<usize>>>();
        let in_order = columns
            .as_ref()
            .is_some_and(|c| c.windows(2).all(|w| w[0] < w[1]));
        ProjectExecutor {
            exprs,
            columns,
            in_order,
            actor_id,
        }
    }
}

/// Turn `row` into its columns `cols` (all within the row), moving the
/// values, and keeping the row's allocation when the columns are in
/// increasing order (`in_order`).
fn select_columns(row: &mut Row, cols: &[usize], in_order: bool) {
    if in_order {
        // Column j comes from i >= j, and no later column reads a slot
        // below its own source: filling slot j destroys nothing needed.
        for (j, &i) in cols.iter().enumerate() {
            if i != j {
                row[j] = row[i].take();
            }
        }
        row.truncate(cols.len());
    } else {
        *row = cols.iter().map(|&i| row[i].clone()).collect();
    }
}

/// Evaluate `expr`; on a data error (overflow, division by zero...) log it
/// and yield NULL, so a bad row never stops a running job (as RisingWave
/// does). Deterministic, so a later retraction of the row matches.
pub(crate) fn eval_or_null(expr: &Expr, row: &Row, actor_id: u32) -> crate::common::Datum {
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
        if let Some(cols) = &self.columns {
            // (A row shorter than the plan says is evaluated below, which
            // reports it.)
            if chunk.rows.iter().all(|r| cols.iter().all(|&i| i < r.len())) {
                let StreamChunk { ops, mut rows } = chunk;
                for row in &mut rows {
                    select_columns(row, cols, self.in_order);
                }
                out.push(StreamChunk::new(ops, rows));
                return Ok(());
            }
        }
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

#[cfg(test)]
mod tests {
    use super::super::test_utils::pretty;
    use super::*;
    use crate::common::DataType;
    use crate::expr::{build_func, Func};

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
