//! Aggregate functions with retraction.

use super::ExprResult;
use crate::common::{DataType, Datum, Row};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggKind {
    /// `count(*)`: counts rows, takes no argument.
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
}

/// An aggregate call over columns of its input.
#[derive(Clone, Debug, PartialEq)]
pub struct AggCall {
    pub kind: AggKind,
    /// Input column of the argument; `None` for `count(*)`.
    pub arg: Option<usize>,
    /// Type of the argument column.
    pub arg_type: Option<DataType>,
    pub return_type: DataType,
    /// `agg(DISTINCT x)`.
    pub distinct: bool,
}

/// The running state of one aggregate for one group.
///
/// `update` is called once per input row with the row's argument value
/// (NULL for count(*) rows) and whether the row is added or retracted. The
/// state is exact under any interleaving of adds and retractions (min/max
/// keep a multiset of values, sum keeps the count of non-null inputs so it
/// can return NULL again, distinct keeps per-value counts).
pub trait Accumulator: Send + Sync + std::fmt::Debug {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()>;
    /// The current result (PostgreSQL rules: sum/min/max/avg of no non-null
    /// values is NULL, count is 0).
    fn output(&self) -> ExprResult<Datum>;
    /// Save the whole state as a row of datums (any length).
    fn save(&self) -> Row;
    /// Restore a state saved by `save` of an accumulator of the same call.
    fn load(&mut self, state: &Row) -> ExprResult<()>;
    fn box_clone(&self) -> Box<dyn Accumulator>;
}

/// A fresh accumulator (the state of an empty group) for the call.
pub fn create_accumulator(call: &AggCall) -> Box<dyn Accumulator> {
    let _ = call;
    todo!("create_accumulator")
}
