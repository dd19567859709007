//! `HOP` (and any time window with more than one window per row): each row
//! once per window holding its time, followed by the window's start and end.
//!
//! Stateless. For every window position `k` it emits the input's columns,
//! shared rather than copied, with two new timestamp columns. A row whose
//! time is NULL (or whose window falls outside the timestamp range) is in
//! no window: it is not visible in the output. The window start is part of
//! the output's stream key, and an update may move a row to other windows,
//! so update pairs become plain deletes and inserts.

use arrow_array::{Array, TimestampMicrosecondArray};
use async_trait::async_trait;
use chrono::NaiveDateTime;

use super::project::log_errors;
use super::Executor;
use crate::message::Watermark;
use crate::{StreamError, StreamResult};
use ebbflow_common::{Column, Op, ScalarValue, StreamChunk};
use ebbflow_expr::window::{to_micros, TimeWindow};
use ebbflow_expr::Expr;

pub struct HopWindowExecutor {
    time_col: Expr,
    window: TimeWindow,
    actor_id: u32,
    /// The range of timestamps, in microseconds.
    range: (i64, i64),
    /// Columns of the input, if known: the window bounds follow them.
    input_width: Option<usize>,
}

impl HopWindowExecutor {
    pub fn new(time_col: Expr, window: TimeWindow, actor_id: u32) -> Self {
        HopWindowExecutor {
            time_col,
            window,
            actor_id,
            range: (to_micros(NaiveDateTime::MIN), to_micros(NaiveDateTime::MAX)),
            input_width: None,
        }
    }

    /// Place watermarks on the window bounds, after `width` input columns.
    pub fn with_input_width(mut self, width: Option<usize>) -> Self {
        self.input_width = width;
        self
    }

    /// Window `k` of time `t`, in microseconds, if it is in range.
    fn bounds(&self, t: i64, k: i64) -> Option<(i64, i64)> {
        let (start, end) = self.window.bounds(t, k)?;
        (start >= self.range.0 && end <= self.range.1).then_some((start, end))
    }
}

#[async_trait]
impl Executor for HopWindowExecutor {
    fn name(&self) -> &'static str {
        "HopWindow"
    }

    /// The input's watermarks pass; a watermark `w` on the time makes the
    /// start of the earliest window holding `w` that of `window_start`
    /// (no later row is in an earlier window), and its end `window_end`'s.
    async fn process_watermarks(
        &mut self,
        inputs: &[Vec<Watermark>],
    ) -> StreamResult<Vec<Watermark>> {
        let Some(input) = inputs.first() else {
            return Ok(Vec::new());
        };
        let mut out = input.clone();
        let Some(width) = self.input_width else {
            return Ok(out);
        };
        let time = input
            .iter()
            .find_map(|w| self.time_col.at_watermark(w.column, &w.value));
        let oldest = self.window.count() - 1;
        match time {
            Some(ScalarValue::Timestamp(t)) => {
                if let Some((start, end)) = self.window.window(to_micros(t), oldest) {
                    out.push(Watermark::new(width, ScalarValue::Timestamp(start)));
                    out.push(Watermark::new(width + 1, ScalarValue::Timestamp(end)));
                }
            }
            Some(ScalarValue::Timestamptz(t)) => {
                if let Some((start, end)) = self.window.window(t, oldest) {
                    let (start, end) = (to_micros(start), to_micros(end));
                    out.push(Watermark::new(width, ScalarValue::Timestamptz(start)));
                    out.push(Watermark::new(width + 1, ScalarValue::Timestamptz(end)));
                }
            }
            _ => {}
        }
        Ok(out)
    }

    async fn process_chunk(
        &mut self,
        _input: usize,
        chunk: StreamChunk,
        out: &mut Vec<StreamChunk>,
    ) -> StreamResult<()> {
        let (time, errors) = self.time_col.eval_chunk(&chunk);
        log_errors(self.actor_id, &chunk, &errors);
        let instants = matches!(time, Column::Timestamptz(_));
        let times = match &time {
            Column::Timestamp(a) | Column::Timestamptz(a) => a,
            // Only NULL times: no row is in any window.
            Column::Null(_) => return Ok(()),
            other => {
                return Err(StreamError::Internal(format!(
                    "window time column of type {:?}",
                    other.data_type()
                )))
            }
        };
        let ops: Vec<Op> = chunk.ops().iter().map(|o| o.normalize()).collect();
        for k in 0..self.window.count() {
            let mut starts = Vec::with_capacity(times.len());
            let mut ends = Vec::with_capacity(times.len());
            for t in times.iter() {
                let b = t.and_then(|t| self.bounds(t, k));
                starts.push(b.map(|b| b.0));
                ends.push(b.map(|b| b.1));
            }
            let starts = TimestampMicrosecondArray::from(starts);
            let ends = TimestampMicrosecondArray::from(ends);
            let valid = starts.nulls().map(|n| n.inner().clone());
            let mut columns = chunk.columns().to_vec();
            if instants {
                columns.push(Column::Timestamptz(starts));
                columns.push(Column::Timestamptz(ends));
            } else {
                columns.push(Column::Timestamp(starts));
                columns.push(Column::Timestamp(ends));
            }
            let mut c = StreamChunk::new(ops.clone(), columns, chunk.visibility().cloned());
            if let Some(v) = valid {
                c = c.with_visibility(ops.clone(), v);
            }
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
    use ebbflow_common::{DataType, Interval};

    fn secs(n: i64) -> Interval {
        Interval::new(0, 0, n * 1_000_000)
    }

    async fn hop(input: &str) -> Vec<String> {
        let ty = [DataType::Int64, DataType::Timestamp];
        let window = TimeWindow::hop(&secs(2), &secs(6), None).expect("window");
        let mut h = HopWindowExecutor::new(Expr::input_ref(1, DataType::Timestamp), window, 0);
        let mut out = vec![];
        h.process_chunk(0, StreamChunk::from_pretty(input, &ty), &mut out)
            .await
            .expect("hop");
        pretty(&out)
    }

    #[tokio::test]
    async fn each_row_in_each_of_its_windows() {
        let out = hop(
            "+ 1 2023-01-01T00:00:03\n+ 2 .\nU- 3 2023-01-01T00:00:04\nU+ 3 2023-01-01T00:00:07",
        )
        .await;
        assert_eq!(
            out,
            [
                "+ 1 2023-01-01 00:00:03 2023-01-01 00:00:02 2023-01-01 00:00:08",
                "- 3 2023-01-01 00:00:04 2023-01-01 00:00:04 2023-01-01 00:00:10",
                "+ 3 2023-01-01 00:00:07 2023-01-01 00:00:06 2023-01-01 00:00:12",
                "+ 1 2023-01-01 00:00:03 2023-01-01 00:00:00 2023-01-01 00:00:06",
                "- 3 2023-01-01 00:00:04 2023-01-01 00:00:02 2023-01-01 00:00:08",
                "+ 3 2023-01-01 00:00:07 2023-01-01 00:00:04 2023-01-01 00:00:10",
                "+ 1 2023-01-01 00:00:03 2022-12-31 23:59:58 2023-01-01 00:00:04",
                "- 3 2023-01-01 00:00:04 2023-01-01 00:00:00 2023-01-01 00:00:06",
                "+ 3 2023-01-01 00:00:07 2023-01-01 00:00:02 2023-01-01 00:00:08",
            ]
        );
    }
}
