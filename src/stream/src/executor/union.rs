//! Union: passes chunks of every input through. The merge already
//! interleaves the inputs and aligns their barriers; the planner gives each
//! branch a branch id column so the stream key stays unique.

use async_trait::async_trait;

use super::Executor;
use crate::StreamResult;
use ebbflow_common::StreamChunk;

pub struct UnionExecutor;

#[async_trait]
impl Executor for UnionExecutor {
    fn name(&self) -> &'static str {
        "Union"
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        out.push(chunk);
        Ok(())
    }
}
