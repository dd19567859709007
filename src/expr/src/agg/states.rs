//! The states of one aggregate call over many groups, packed by column.
//!
//! A hash aggregation keeps every group it has met in memory. A boxed
//! [`Accumulator`] per group and call costs a heap allocation, a virtual
//! call per row and its padding; [`AggStates`] keeps the states of the
//! common calls — `count(*)`, `count(x)`, and `sum`/`avg` of integers — as
//! plain vectors indexed by group number, and boxed accumulators for the
//! rest. A packed state saves, loads and outputs exactly as the boxed
//! accumulator of the same call, so the stored form does not depend on it.

use super::{
    create_accumulator_for, get_i64, int_total, join_i128, split_i128, wrong_type, Accumulator,
    AggCall, AggKind,
};
use std::collections::HashMap;

use crate::ExprResult;
use ebbflow_common::{Column, DataType, Datum, Op, Row, ScalarValue};

/// The states of one aggregate call for groups `0..n`.
pub enum AggStates {
    /// `count(*)` is the group's row count, which the caller keeps: nothing
    /// is stored here.
    CountStar,
    Count(Vec<i64>),
    /// `sum`/`avg` of smallint, integer or bigint: the count of non-null
    /// inputs and their exact total, in `sum` while it fits a bigint (8
    /// bytes a group rather than 16) and in `wide` once it does not.
    IntSum {
        avg: bool,
        return_type: DataType,
        count: Vec<i64>,
        sum: Vec<i64>,
        wide: HashMap<u32, i128>,
    },
    /// Any other call.
    Boxed {
        call: AggCall,
        append_only: bool,
        accs: Vec<Box<dyn Accumulator>>,
    },
}

impl AggStates {
    /// The states of `call`; `append_only`: the input only inserts.
    pub fn new(call: &AggCall, append_only: bool) -> AggStates {
        let int_arg = matches!(
            call.arg_type,
            Some(DataType::Int16 | DataType::Int32 | DataType::Int64)
        );
        match call.kind {
            AggKind::CountStar => AggStates::CountStar,
            AggKind::Count if !call.distinct => AggStates::Count(Vec::new()),
            AggKind::Sum | AggKind::Avg if !call.distinct && int_arg => AggStates::IntSum {
                avg: call.kind == AggKind::Avg,
                return_type: call.return_type,
                count: Vec::new(),
                sum: Vec::new(),
                wide: HashMap::new(),
            },
            _ => AggStates::Boxed {
                call: call.clone(),
                append_only,
                accs: Vec::new(),
            },
        }
    }

    /// Add the state of an empty group at the end.
    pub fn push(&mut self) {
        match self {
            AggStates::CountStar => {}
            AggStates::Count(n) => n.push(0),
            AggStates::IntSum { count, sum, .. } => {
                count.push(0);
                sum.push(0);
            }
            AggStates::Boxed {
                call,
                append_only,
                accs,
            } => accs.push(create_accumulator_for(call, *append_only)),
        }
    }

    /// Remove group `g`, moving the last group into its place.
    pub fn swap_remove(&mut self, g: usize) {
        match self {
            AggStates::CountStar => {}
            AggStates::Count(n) => {
                n.swap_remove(g);
            }
            AggStates::IntSum {
                count, sum, wide, ..
            } => {
                let last = sum.len().saturating_sub(1);
                count.swap_remove(g);
                sum.swap_remove(g);
                if !wide.is_empty() {
                    wide.remove(&(g as u32));
                    if let Some(w) = wide.remove(&(last as u32)) {
                        if g != last {
                            wide.insert(g as u32, w);
                        }
                    }
                }
            }
            AggStates::Boxed { accs, .. } => {
                accs.swap_remove(g);
            }
        }
    }

    /// Add (`insert`) or retract one input value of group `g`.
    pub fn update(&mut self, g: usize, insert: bool, value: &Datum) -> ExprResult<()> {
        match self {
            AggStates::CountStar => {}
            AggStates::Count(n) => {
                if value.is_some() {
                    n[g] += if insert { 1 } else { -1 };
                }
            }
            AggStates::IntSum {
                count, sum, wide, ..
            } => {
                if let Some(v) = value {
                    let x = v.as_i64().ok_or_else(|| wrong_type(v))?;
                    add_total(sum, wide, g, x, insert);
                    count[g] += if insert { 1 } else { -1 };
                }
            }
            AggStates::Boxed { accs, .. } => accs[g].update(insert, value)?,
        }
        Ok(())
    }

    /// Add or retract, for each of `rows`, the value of `arg` there into
    /// group `gs[k]` (insert or retract by `ops`), a column at a time:
    /// `count` and integer `sum`/`avg` over arrays without NULLs, and
    /// `count` with them. False (nothing done) for the other cases, which
    /// go through [`AggStates::update`] row by row.
    pub fn update_column(
        &mut self,
        gs: &[u32],
        rows: &[usize],
        ops: &[Op],
        arg: Option<&Column>,
    ) -> bool {
        let sign = |i: usize| if ops[i].is_insert() { 1i64 } else { -1 };
        match (self, arg) {
            (AggStates::CountStar, _) => {}
            (AggStates::Count(n), Some(c)) => {
                let all_valid = c.null_count() == 0;
                for (&i, &g) in rows.iter().zip(gs) {
                    if all_valid || !c.is_null(i) {
                        n[g as usize] += sign(i);
                    }
                }
            }
            (
                AggStates::IntSum {
                    count, sum, wide, ..
                },
                Some(c),
            ) if c.null_count() == 0 => {
                let mut add_all = |value: &dyn Fn(usize) -> i64| {
                    for (&i, &g) in rows.iter().zip(gs) {
                        let (g, insert) = (g as usize, ops[i].is_insert());
                        add_total(sum, wide, g, value(i), insert);
                        count[g] += if insert { 1 } else { -1 };
                    }
                };
                match c {
                    Column::Int16(a) => add_all(&|i| a.values()[i] as i64),
                    Column::Int32(a) => add_all(&|i| a.values()[i] as i64),
                    Column::Int64(a) => add_all(&|i| a.values()[i]),
                    _ => return false,
                }
            }
            _ => return false,
        }
        true
    }

    /// The result for group `g`, whose row count is `rows`.
    pub fn output(&self, g: usize, rows: i64) -> ExprResult<Datum> {
        Ok(match self {
            AggStates::CountStar => Some(ScalarValue::Int64(rows)),
            AggStates::Count(n) => Some(ScalarValue::Int64(n[g])),
            AggStates::IntSum {
                avg,
                return_type,
                count,
                sum,
                wide,
            } => match count[g] {
                n if n <= 0 => None,
                n => Some(int_total(total(sum, wide, g), n, *avg, *return_type)?),
            },
            AggStates::Boxed { accs, .. } => accs[g].output()?,
        })
    }

    /// Group `g`'s state as the boxed accumulator of the call saves it.
    pub fn save(&self, g: usize, rows: i64) -> Row {
        match self {
            AggStates::CountStar => vec![Some(ScalarValue::Int64(rows))],
            AggStates::Count(n) => vec![Some(ScalarValue::Int64(n[g]))],
            AggStates::IntSum {
                count, sum, wide, ..
            } => {
                let mut row = Vec::with_capacity(3);
                row.push(Some(ScalarValue::Int64(count[g])));
                row.extend(split_i128(total(sum, wide, g)));
                row
            }
            AggStates::Boxed { accs, .. } => accs[g].save(),
        }
    }

    /// Restore group `g` from a state written by [`AggStates::save`] (or by
    /// the boxed accumulator of the same call).
    pub fn load(&mut self, g: usize, state: &[Datum]) -> ExprResult<()> {
        match self {
            AggStates::CountStar => {
                get_i64(state, 0)?;
            }
            AggStates::Count(n) => n[g] = get_i64(state, 0)?,
            AggStates::IntSum {
                count, sum, wide, ..
            } => {
                count[g] = get_i64(state, 0)?;
                let t = join_i128(state, 1)?;
                match i64::try_from(t) {
                    Ok(t) => {
                        sum[g] = t;
                        wide.remove(&(g as u32));
                    }
                    Err(_) => {
                        sum[g] = 0;
                        wide.insert(g as u32, t);
                    }
                }
            }
            AggStates::Boxed { accs, .. } => accs[g].load(state)?,
        }
        Ok(())
    }

    /// Bytes held for the groups' states (a boxed one by the size of the
    /// first, not what it owns).
    pub fn allocated_bytes(&self) -> usize {
        match self {
            AggStates::CountStar => 0,
            AggStates::Count(n) => n.capacity() * 8,
            AggStates::IntSum {
                count, sum, wide, ..
            } => count.capacity() * 8 + sum.capacity() * 8 + wide.capacity() * 24,
            AggStates::Boxed { accs, .. } => {
                let each = accs.first().map_or(0, |a| std::mem::size_of_val(&**a));
                accs.capacity() * std::mem::size_of::<Box<dyn Accumulator>>() + accs.len() * each
            }
        }
    }

    pub fn shrink_to_fit(&mut self) {
        match self {
            AggStates::CountStar => {}
            AggStates::Count(n) => n.shrink_to_fit(),
            AggStates::IntSum {
                count, sum, wide, ..
            } => {
                count.shrink_to_fit();
                sum.shrink_to_fit();
                wide.shrink_to_fit();
            }
            AggStates::Boxed { accs, .. } => accs.shrink_to_fit(),
        }
    }
}

/// Adds (`insert`) or subtracts `x` to group `g`'s total: in `sum` while
/// the total fits a bigint, in `wide` from the first time it does not.
fn add_total(sum: &mut [i64], wide: &mut HashMap<u32, i128>, g: usize, x: i64, insert: bool) {
    if !wide.is_empty() {
        if let Some(w) = wide.get_mut(&(g as u32)) {
            *w += if insert { x as i128 } else { -(x as i128) };
            return;
        }
    }
    let next = if insert {
        sum[g].checked_add(x)
    } else {
        sum[g].checked_sub(x)
    };
    match next {
        Some(t) => sum[g] = t,
        None => {
            let t = sum[g] as i128 + if insert { x as i128 } else { -(x as i128) };
            sum[g] = 0;
            wide.insert(g as u32, t);
        }
    }
}

/// Group `g`'s total.
fn total(sum: &[i64], wide: &HashMap<u32, i128>, g: usize) -> i128 {
    if !wide.is_empty() {
        if let Some(&w) = wide.get(&(g as u32)) {
            return w;
        }
    }
    sum[g] as i128
}

#[cfg(test)]
mod tests {
    use super::super::create_accumulator;
    use super::*;

    fn call(kind: AggKind, arg_type: Option<DataType>, ret: DataType, distinct: bool) -> AggCall {
        AggCall {
            kind,
            arg: arg_type.map(|_| 0),
            arg_type,
            return_type: ret,
            distinct,
        }
    }

    fn int(v: i64) -> Datum {
        Some(ScalarValue::Int64(v))
    }

    /// A total past a bigint stays exact through updates a column at a
    /// time, retractions and the moves of group removals.
    #[test]
    fn totals_past_bigint_stay_exact() {
        let dec = |t: i128| {
            Some(ScalarValue::decimal(
                rust_decimal::Decimal::from_i128_with_scale(t, 0),
            ))
        };
        let c = call(
            AggKind::Sum,
            Some(DataType::Int64),
            DataType::Decimal,
            false,
        );
        let mut s = AggStates::new(&c, false);
        for _ in 0..3 {
            s.push();
        }
        let big = i64::MAX as i128;
        let col = Column::Int64(arrow_array::Int64Array::from(vec![i64::MAX, i64::MAX, 7]));
        assert!(s.update_column(&[1, 1, 2], &[0, 1, 2], &[Op::Insert; 3], Some(&col)));
        assert_eq!(s.output(1, 2).expect("output"), dec(2 * big));
        assert_eq!(s.output(2, 1).expect("output"), dec(7));
        // Group 2 moves into 0, then group 1 (the wide one) into 0.
        s.swap_remove(0);
        assert_eq!(s.output(0, 1).expect("output"), dec(7));
        assert_eq!(s.output(1, 2).expect("output"), dec(2 * big));
        s.swap_remove(0);
        assert_eq!(s.output(0, 2).expect("output"), dec(2 * big));
        s.update(0, false, &int(i64::MAX)).expect("retract");
        assert_eq!(s.output(0, 1).expect("output"), dec(big));
        assert_eq!(s.save(0, 1)[1..], split_i128(big)[..]);
    }

    /// Packed and boxed states of the same call agree on every output and
    /// saved state, and each loads what the other saved.
    #[test]
    fn packed_states_match_boxed_accumulators() {
        let calls = [
            call(AggKind::CountStar, None, DataType::Int64, false),
            call(
                AggKind::Count,
                Some(DataType::Int64),
                DataType::Int64,
                false,
            ),
            call(
                AggKind::Sum,
                Some(DataType::Int64),
                DataType::Decimal,
                false,
            ),
            call(AggKind::Sum, Some(DataType::Int32), DataType::Int64, false),
            call(
                AggKind::Avg,
                Some(DataType::Int16),
                DataType::Decimal,
                false,
            ),
            call(AggKind::Sum, Some(DataType::Int64), DataType::Decimal, true),
        ];
        let inputs = [
            (true, int(5)),
            (true, None),
            (true, int(i64::MAX)),
            (true, int(-7)),
            (false, int(i64::MAX)),
            (false, int(5)),
            (false, int(-7)),
        ];
        for c in &calls {
            let mut packed = AggStates::new(c, false);
            packed.push();
            packed.push();
            let mut boxed = create_accumulator(c);
            let mut rows = 0;
            for (insert, v) in &inputs {
                rows += if *insert { 1 } else { -1 };
                packed.update(1, *insert, v).expect("packed update");
                boxed.update(*insert, v).expect("boxed update");
                // An overflowing result is the same error either way.
                let out = format!("{:?}", boxed.output());
                assert_eq!(format!("{:?}", packed.output(1, rows)), out, "{c:?}");
                let saved = boxed.save();
                assert_eq!(packed.save(1, rows), saved, "{c:?}");
                packed.load(0, &saved).expect("load");
                assert_eq!(format!("{:?}", packed.output(0, rows)), out, "{c:?}");
            }
            packed.swap_remove(0);
            let out = format!("{:?}", boxed.output());
            assert_eq!(format!("{:?}", packed.output(0, rows)), out, "{c:?}");
        }
    }
}
