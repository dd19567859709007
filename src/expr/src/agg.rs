//! Aggregate functions with retraction.
//!
//! Every accumulator is exact under any interleaving of inserts and
//! retractions, except float sums/averages, whose running f64 total can
//! differ in the last bits from a fresh computation (PostgreSQL's own float
//! sums depend on input order too). Infinities and NaN are counted apart so
//! that retracting them is exact.

use ebbflow_common::ErrorKind;
use std::collections::BTreeMap;

use rust_decimal::Decimal;

use super::arith::{decimal_div, interval_div};
use super::cast::{int_out_of_range, numeric_overflow};
use super::{ExprError, ExprResult};
use ebbflow_common::{DataType, Datum, Interval, Numeric, Row, ScalarValue, F64};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum AggKind {
    /// `count(*)`: counts rows, takes no argument.
    CountStar,
    Count,
    Sum,
    Min,
    Max,
    Avg,
    /// `bool_and(x)` (also `every(x)`).
    BoolAnd,
    BoolOr,
    BitAnd,
    BitOr,
    BitXor,
    /// `string_agg(value, delimiter [ORDER BY …])`, over the packed input
    /// of [`pack_string_agg_input`].
    StringAgg,
    /// `array_agg(value [ORDER BY …])`, over the packed input of
    /// [`pack_array_agg_input`]; NULL values are elements too.
    ArrayAgg,
}

/// An aggregate call over columns of its input.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
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
    fn load(&mut self, state: &[Datum]) -> ExprResult<()>;
    fn box_clone(&self) -> Box<dyn Accumulator>;
}

/// A fresh accumulator for `call` over a stream that only inserts
/// (`append_only`): `min`/`max` (`DISTINCT` or not) keep the one extreme
/// value; other calls are as [`create_accumulator`] makes them.
pub fn create_accumulator_for(call: &AggCall, append_only: bool) -> Box<dyn Accumulator> {
    match call.kind {
        AggKind::Min | AggKind::Max if append_only => Box::new(Extreme {
            max: call.kind == AggKind::Max,
            value: None,
        }),
        _ => create_accumulator(call),
    }
}

/// A fresh accumulator (the state of an empty group) for the call.
pub fn create_accumulator(call: &AggCall) -> Box<dyn Accumulator> {
    let arg_type = call.arg_type.unwrap_or(call.return_type);
    let inner: Box<dyn Accumulator> = match call.kind {
        AggKind::CountStar => Box::new(Count { star: true, n: 0 }),
        AggKind::Count => Box::new(Count { star: false, n: 0 }),
        AggKind::Sum | AggKind::Avg => Box::new(SumAvg {
            avg: call.kind == AggKind::Avg,
            return_type: call.return_type,
            count: 0,
            state: SumState::new(arg_type),
        }),
        AggKind::Min | AggKind::Max => Box::new(MinMax {
            max: call.kind == AggKind::Max,
            values: BTreeMap::new(),
        }),
        AggKind::StringAgg => Box::new(StringAgg::default()),
        AggKind::ArrayAgg => Box::new(ArrayAgg::new(call.return_type)),
        AggKind::BoolAnd | AggKind::BoolOr => Box::new(bits::BoolAndOr::new(call.kind)),
        AggKind::BitAnd | AggKind::BitOr | AggKind::BitXor => {
            Box::new(bits::Bits::new(call.kind, call.return_type))
        }
    };
    if call.distinct && call.kind != AggKind::CountStar {
        Box::new(Distinct {
            inner,
            counts: BTreeMap::new(),
        })
    } else {
        inner
    }
}

fn corrupt() -> ExprError {
    ExprError::new(ErrorKind::InternalError, "corrupt aggregate state")
}

fn retract_missing() -> ExprError {
    ExprError::new(
        ErrorKind::InternalError,
        "aggregate retraction of a value that was never added",
    )
}

fn get_i64(state: &[Datum], i: usize) -> ExprResult<i64> {
    match state.get(i) {
        Some(Some(ScalarValue::Int64(v))) => Ok(*v),
        _ => Err(corrupt()),
    }
}

fn split_i128(v: i128) -> [Datum; 2] {
    [
        Some(ScalarValue::Int64((v >> 64) as i64)),
        Some(ScalarValue::Int64(v as u64 as i64)),
    ]
}

fn join_i128(state: &[Datum], i: usize) -> ExprResult<i128> {
    let hi = get_i64(state, i)? as i128;
    let lo = get_i64(state, i + 1)? as u64 as i128;
    Ok((hi << 64) | lo)
}

/// `count(*)` and `count(x)`.
#[derive(Clone, Debug)]
struct Count {
    star: bool,
    n: i64,
}

impl Accumulator for Count {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        if self.star || value.is_some() {
            self.n += if insert { 1 } else { -1 };
        }
        Ok(())
    }
    fn output(&self) -> ExprResult<Datum> {
        Ok(Some(ScalarValue::Int64(self.n)))
    }
    fn save(&self) -> Row {
        vec![Some(ScalarValue::Int64(self.n))]
    }
    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        self.n = get_i64(state, 0)?;
        Ok(())
    }
    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
}

/// The running total of sum/avg, by argument type.
#[derive(Clone, Debug)]
enum SumState {
    /// smallint/integer/bigint: exact in i128, range-checked on output.
    Int(i128),
    /// numeric, with how many current inputs have each scale: the result
    /// keeps the largest scale among the current inputs, as in PostgreSQL.
    /// `specials` counts the current `NaN`, `Infinity` and `-Infinity`
    /// inputs (kept out of `sum`), so retracting them is exact too.
    Decimal {
        sum: Decimal,
        scales: BTreeMap<u32, i64>,
        specials: [i64; 3],
    },
    /// real/double precision: finite values summed, specials counted.
    Float {
        sum: f64,
        finite: i64,
        pos_inf: i64,
        neg_inf: i64,
        nan: i64,
    },
    Interval {
        months: i64,
        days: i64,
        micros: i128,
    },
}

impl SumState {
    fn new(arg: DataType) -> SumState {
        match arg {
            DataType::Decimal => SumState::Decimal {
                sum: Decimal::ZERO,
                scales: BTreeMap::new(),
                specials: [0; 3],
            },
            DataType::Float32 | DataType::Float64 => SumState::Float {
                sum: 0.0,
                finite: 0,
                pos_inf: 0,
                neg_inf: 0,
                nan: 0,
            },
            DataType::Interval => SumState::Interval {
                months: 0,
                days: 0,
                micros: 0,
            },
            _ => SumState::Int(0),
        }
    }
}

/// `sum(x)` and `avg(x)`: a total plus the count of non-null inputs.
#[derive(Clone, Debug)]
struct SumAvg {
    avg: bool,
    return_type: DataType,
    count: i64,
    state: SumState,
}

fn wrong_type(v: &ScalarValue) -> ExprError {
    ExprError::new(
        ErrorKind::InternalError,
        format!("unexpected {} input to sum/avg", v.data_type()),
    )
}

impl SumAvg {
    fn decimal_total(sum: Decimal, scales: &BTreeMap<u32, i64>) -> Decimal {
        let scale = scales
            .iter()
            .rev()
            .find(|(_, n)| **n > 0)
            .map_or(0, |(s, _)| *s);
        let mut out = sum;
        out.rescale(scale);
        super::arith::normalize_zero(out)
    }

    fn interval_total(months: i64, days: i64, micros: i128) -> ExprResult<Interval> {
        let range = || ExprError::new(ErrorKind::DatetimeFieldOverflow, "interval out of range");
        Ok(Interval::new(
            i32::try_from(months).map_err(|_| range())?,
            i32::try_from(days).map_err(|_| range())?,
            i64::try_from(micros).map_err(|_| range())?,
        ))
    }
}

/// The result of sum/avg over `n > 0` integer inputs totalling `sum`.
fn int_total(sum: i128, n: i64, avg: bool, return_type: DataType) -> ExprResult<ScalarValue> {
    let numeric = || Decimal::try_from_i128_with_scale(sum, 0).map_err(|_| numeric_overflow());
    Ok(if avg {
        ScalarValue::decimal(decimal_div(numeric()?, Decimal::from(n))?)
    } else if return_type == DataType::Int64 {
        ScalarValue::Int64(i64::try_from(sum).map_err(|_| int_out_of_range(DataType::Int64))?)
    } else {
        ScalarValue::decimal(numeric()?)
    })
}

impl Accumulator for SumAvg {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        let Some(v) = value else {
            return Ok(());
        };
        let sign: i64 = if insert { 1 } else { -1 };
        match &mut self.state {
            SumState::Int(sum) => {
                *sum += v.as_i64().ok_or_else(|| wrong_type(v))? as i128 * sign as i128;
            }
            SumState::Decimal {
                sum,
                scales,
                specials,
            } => {
                let ScalarValue::Decimal(n) = v else {
                    return Err(wrong_type(v));
                };
                let d = match n {
                    Numeric::Finite(d) => d,
                    Numeric::NaN => {
                        specials[0] += sign;
                        self.count += sign;
                        return Ok(());
                    }
                    Numeric::PosInf => {
                        specials[1] += sign;
                        self.count += sign;
                        return Ok(());
                    }
                    Numeric::NegInf => {
                        specials[2] += sign;
                        self.count += sign;
                        return Ok(());
                    }
                };
                *sum = if insert {
                    sum.checked_add(*d)
                } else {
                    sum.checked_sub(*d)
                }
                .ok_or_else(numeric_overflow)?;
                *scales.entry(d.scale()).or_insert(0) += sign;
            }
            SumState::Float {
                sum,
                finite,
                pos_inf,
                neg_inf,
                nan,
            } => {
                let f = match v {
                    ScalarValue::Float32(f) | ScalarValue::Float64(f) => f.0,
                    _ => return Err(wrong_type(v)),
                };
                if f.is_nan() {
                    *nan += sign;
                } else if f == f64::INFINITY {
                    *pos_inf += sign;
                } else if f == f64::NEG_INFINITY {
                    *neg_inf += sign;
                } else {
                    *finite += sign;
                    // Back to no finite inputs: drop accumulated rounding.
                    *sum = if *finite == 0 {
                        0.0
                    } else {
                        *sum + f * sign as f64
                    };
                }
            }
            SumState::Interval {
                months,
                days,
                micros,
            } => {
                let ScalarValue::Interval(i) = v else {
                    return Err(wrong_type(v));
                };
                *months += i.months as i64 * sign;
                *days += i.days as i64 * sign;
                *micros += i.micros as i128 * sign as i128;
            }
        }
        self.count += sign;
        Ok(())
    }

    fn output(&self) -> ExprResult<Datum> {
        if self.count <= 0 {
            return Ok(None);
        }
        let n = self.count;
        Ok(Some(match &self.state {
            SumState::Int(sum) => int_total(*sum, n, self.avg, self.return_type)?,
            SumState::Decimal {
                sum,
                scales,
                specials: [nan, pos_inf, neg_inf],
            } => {
                // PostgreSQL's numeric_avg/sum: NaN wins, then the infinities.
                if *nan > 0 || (*pos_inf > 0 && *neg_inf > 0) {
                    ScalarValue::Decimal(Numeric::NaN)
                } else if *pos_inf > 0 {
                    ScalarValue::Decimal(Numeric::PosInf)
                } else if *neg_inf > 0 {
                    ScalarValue::Decimal(Numeric::NegInf)
                } else {
                    let total = Self::decimal_total(*sum, scales);
                    if self.avg {
                        ScalarValue::decimal(decimal_div(total, Decimal::from(n))?)
                    } else {
                        ScalarValue::decimal(total)
                    }
                }
            }
            SumState::Float {
                sum,
                pos_inf,
                neg_inf,
                nan,
                ..
            } => {
                let total = if *nan > 0 || (*pos_inf > 0 && *neg_inf > 0) {
                    f64::NAN
                } else if *pos_inf > 0 {
                    f64::INFINITY
                } else if *neg_inf > 0 {
                    f64::NEG_INFINITY
                } else {
                    *sum
                };
                let single = self.return_type == DataType::Float32;
                let out = if self.avg { total / n as f64 } else { total };
                let out = if single { out as f32 as f64 } else { out };
                if out.is_infinite() && *pos_inf == 0 && *neg_inf == 0 {
                    return Err(ExprError::new(
                        ErrorKind::NumericValueOutOfRange,
                        "value out of range: overflow",
                    ));
                }
                if single {
                    ScalarValue::Float32(F64(out))
                } else {
                    ScalarValue::float64(out)
                }
            }
            SumState::Interval {
                months,
                days,
                micros,
            } => {
                let total = Self::interval_total(*months, *days, *micros)?;
                if self.avg {
                    ScalarValue::Interval(interval_div(&total, n as f64)?)
                } else {
                    ScalarValue::Interval(total)
                }
            }
        }))
    }

    fn save(&self) -> Row {
        let mut row = vec![Some(ScalarValue::Int64(self.count))];
        match &self.state {
            SumState::Int(sum) => row.extend(split_i128(*sum)),
            SumState::Decimal {
                sum,
                scales,
                specials,
            } => {
                row.push(Some(ScalarValue::decimal(*sum)));
                for (s, n) in scales.iter().filter(|(_, n)| **n != 0) {
                    row.push(Some(ScalarValue::Int64(*s as i64)));
                    row.push(Some(ScalarValue::Int64(*n)));
                }
                // The special counts as pairs under "scales" -1, -2, -3.
                for (i, n) in specials.iter().enumerate().filter(|(_, n)| **n != 0) {
                    row.push(Some(ScalarValue::Int64(-1 - i as i64)));
                    row.push(Some(ScalarValue::Int64(*n)));
                }
            }
            SumState::Float {
                sum,
                finite,
                pos_inf,
                neg_inf,
                nan,
            } => {
                row.push(Some(ScalarValue::float64(*sum)));
                for n in [finite, pos_inf, neg_inf, nan] {
                    row.push(Some(ScalarValue::Int64(*n)));
                }
            }
            SumState::Interval {
                months,
                days,
                micros,
            } => {
                row.push(Some(ScalarValue::Int64(*months)));
                row.push(Some(ScalarValue::Int64(*days)));
                row.extend(split_i128(*micros));
            }
        }
        row
    }

    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        self.count = get_i64(state, 0)?;
        match &mut self.state {
            SumState::Int(sum) => *sum = join_i128(state, 1)?,
            SumState::Decimal {
                sum,
                scales,
                specials,
            } => {
                *sum = match state.get(1) {
                    Some(Some(ScalarValue::Decimal(Numeric::Finite(d)))) => *d,
                    _ => return Err(corrupt()),
                };
                scales.clear();
                *specials = [0; 3];
                let mut i = 2;
                while i < state.len() {
                    let s = get_i64(state, i)?;
                    let n = get_i64(state, i + 1)?;
                    match s {
                        -3..=-1 => specials[(-1 - s) as usize] = n,
                        _ => {
                            scales.insert(u32::try_from(s).map_err(|_| corrupt())?, n);
                        }
                    }
                    i += 2;
                }
            }
            SumState::Float {
                sum,
                finite,
                pos_inf,
                neg_inf,
                nan,
            } => {
                *sum = match state.get(1) {
                    Some(Some(ScalarValue::Float64(f))) => f.0,
                    _ => return Err(corrupt()),
                };
                *finite = get_i64(state, 2)?;
                *pos_inf = get_i64(state, 3)?;
                *neg_inf = get_i64(state, 4)?;
                *nan = get_i64(state, 5)?;
            }
            SumState::Interval {
                months,
                days,
                micros,
            } => {
                *months = get_i64(state, 1)?;
                *days = get_i64(state, 2)?;
                *micros = join_i128(state, 3)?;
            }
        }
        Ok(())
    }

    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
}

/// `min(x)`/`max(x)`: a multiset of the current non-null values.
#[derive(Clone, Debug)]
struct MinMax {
    max: bool,
    values: BTreeMap<ScalarValue, i64>,
}

/// Add or remove one occurrence in a value → count multiset; true when the
/// value appeared (0 → 1) or disappeared (1 → 0).
fn multiset_update(
    map: &mut BTreeMap<ScalarValue, i64>,
    insert: bool,
    v: &ScalarValue,
) -> ExprResult<bool> {
    if insert {
        let n = map.entry(v.clone()).or_insert(0);
        *n += 1;
        Ok(*n == 1)
    } else {
        let n = map.get_mut(v).ok_or_else(retract_missing)?;
        *n -= 1;
        if *n == 0 {
            map.remove(v);
            Ok(true)
        } else {
            Ok(false)
        }
    }
}

fn save_multiset(map: &BTreeMap<ScalarValue, i64>, row: &mut Row) {
    for (v, n) in map {
        row.push(Some(v.clone()));
        row.push(Some(ScalarValue::Int64(*n)));
    }
}

fn load_multiset(state: &[Datum], map: &mut BTreeMap<ScalarValue, i64>) -> ExprResult<()> {
    map.clear();
    if !state.len().is_multiple_of(2) {
        return Err(corrupt());
    }
    for pair in state.chunks(2) {
        match (&pair[0], &pair[1]) {
            (Some(v), Some(ScalarValue::Int64(n))) => {
                map.insert(v.clone(), *n);
            }
            _ => return Err(corrupt()),
        }
    }
    Ok(())
}

impl Accumulator for MinMax {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        if let Some(v) = value {
            multiset_update(&mut self.values, insert, v)?;
        }
        Ok(())
    }
    fn output(&self) -> ExprResult<Datum> {
        let kv = if self.max {
            self.values.last_key_value()
        } else {
            self.values.first_key_value()
        };
        Ok(kv.map(|(v, _)| v.clone()))
    }
    fn save(&self) -> Row {
        let mut row = Vec::with_capacity(self.values.len() * 2);
        save_multiset(&self.values, &mut row);
        row
    }
    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        load_multiset(state, &mut self.values)
    }
    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
}

/// `min(x)`/`max(x)` over a stream that only inserts: the extreme so far,
/// saved as one datum (nothing while there is none).
#[derive(Clone, Debug)]
struct Extreme {
    max: bool,
    value: Option<ScalarValue>,
}

impl Accumulator for Extreme {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        if !insert {
            return Err(ExprError::new(
                ErrorKind::InternalError,
                "retraction reached a min/max planned for an append-only input",
            ));
        }
        if let Some(v) = value {
            let better = match &self.value {
                None => true,
                Some(cur) if self.max => v > cur,
                Some(cur) => v < cur,
            };
            if better {
                self.value = Some(v.clone());
            }
        }
        Ok(())
    }
    fn output(&self) -> ExprResult<Datum> {
        Ok(self.value.clone())
    }
    fn save(&self) -> Row {
        self.value.iter().map(|v| Some(v.clone())).collect()
    }
    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        self.value = match state {
            [] => None,
            [Some(v)] => Some(v.clone()),
            _ => return Err(corrupt()),
        };
        Ok(())
    }
    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
}

/// `agg(DISTINCT x)`: per-value counts; the inner aggregate sees a value
/// only when it appears (0 → 1) or disappears (1 → 0). NULLs are ignored.
#[derive(Debug)]
struct Distinct {
    inner: Box<dyn Accumulator>,
    counts: BTreeMap<ScalarValue, i64>,
}

impl Accumulator for Distinct {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        if let Some(v) = value {
            if multiset_update(&mut self.counts, insert, v)? {
                self.inner.update(insert, value)?;
            }
        }
        Ok(())
    }
    fn output(&self) -> ExprResult<Datum> {
        self.inner.output()
    }
    /// `[inner state length, inner state..., (value, count)...]`.
    fn save(&self) -> Row {
        let inner = self.inner.save();
        let mut row = Vec::with_capacity(1 + inner.len() + self.counts.len() * 2);
        row.push(Some(ScalarValue::Int64(inner.len() as i64)));
        row.extend(inner);
        save_multiset(&self.counts, &mut row);
        row
    }
    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        let n = usize::try_from(get_i64(state, 0)?).map_err(|_| corrupt())?;
        let inner = state.get(1..1 + n).ok_or_else(corrupt)?;
        self.inner.load(inner)?;
        load_multiset(&state[1 + n..], &mut self.counts)
    }
    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(Distinct {
            inner: self.inner.box_clone(),
            counts: self.counts.clone(),
        })
    }
}

mod bits;
mod ordered;
mod states;
#[cfg(test)]
mod tests;

pub use ordered::{pack_array_agg_input, pack_string_agg_input};
use ordered::{ArrayAgg, StringAgg};
pub use states::AggStates;
