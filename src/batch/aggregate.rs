//! Hash aggregation.
//!
//! Groups are keyed by the group-by values compared with SQL grouping
//! semantics: NULL equals NULL (all NULL keys form one group), and values
//! compare by [`ScalarValue`](crate::common::ScalarValue)'s `Eq`, which
//! already follows PostgreSQL (`-0.0 = 0.0`, `NaN = NaN`, `'1 mon' = '30
//! days'`). Each group holds one [`Accumulator`] per call; `DISTINCT` is the
//! accumulator's business, not ours.

use super::hash::FastMap;
use super::{check_indices, BatchError, BatchResult};
use crate::common::{Datum, Row};
use crate::expr::{create_accumulator, Accumulator, AggCall, AggKind};

/// Aggregate `rows` (of `width` columns) by the `group_by` columns.
///
/// Output: the group-by values, then one value per call, one row per group
/// in order of first appearance. With no group-by columns the output is
/// exactly one row, also over empty input (`count(*)` of nothing is 0).
pub fn execute_aggregate(
    rows: Vec<Row>,
    group_by: &[usize],
    aggs: &[AggCall],
    width: usize,
) -> BatchResult<Vec<Row>> {
    check_indices("group by", group_by.iter().copied(), width)?;
    for call in aggs {
        match (call.kind, call.arg) {
            (AggKind::CountStar, _) => {}
            (_, Some(i)) => check_indices("aggregate argument", [i], width)?,
            (kind, None) => {
                return Err(BatchError::internal(format!(
                    "aggregate {kind:?} without an argument"
                )))
            }
        }
    }
    // count(*) sees NULL for every row: it counts rows, not values.
    let args: Vec<Option<usize>> = aggs
        .iter()
        .map(|c| match c.kind {
            AggKind::CountStar => None,
            _ => c.arg,
        })
        .collect();
    let prototypes: Vec<Box<dyn Accumulator>> = aggs.iter().map(create_accumulator).collect();
    aggregate_with(rows, group_by, &args, &prototypes)
}

/// The aggregation proper, over given fresh accumulators (`args[i]` is the
/// argument column of `prototypes[i]`, `None` to feed it NULLs), so tests
/// can drive it with accumulators of their own.
fn aggregate_with(
    rows: Vec<Row>,
    group_by: &[usize],
    args: &[Option<usize>],
    prototypes: &[Box<dyn Accumulator>],
) -> BatchResult<Vec<Row>> {
    debug_assert_eq!(args.len(), prototypes.len());
    if group_by.is_empty() {
        let mut accs = fresh(prototypes);
        for row in &rows {
            update(&mut accs, args, row)?;
        }
        return Ok(vec![output(Vec::with_capacity(accs.len()), &accs)?]);
    }

    // `index[key]` is the group's number; its accumulators are
    // `accs[n * aggs.len()..(n + 1) * aggs.len()]` (one allocation for all
    // groups instead of one per group).
    let mut index: FastMap<Vec<Datum>, usize> = FastMap::default();
    let mut accs: Vec<Box<dyn Accumulator>> = Vec::new();
    let n_aggs = prototypes.len();
    let mut key: Vec<Datum> = Vec::with_capacity(group_by.len());
    for row in rows {
        key.clear();
        key.extend(group_by.iter().map(|&i| row[i].clone()));
        // Look up by slice so that only a new group allocates its key.
        let group = match index.get(key.as_slice()) {
            Some(&g) => g,
            None => {
                let g = index.len();
                index.insert(key.clone(), g);
                accs.extend(fresh(prototypes));
                g
            }
        };
        update(&mut accs[group * n_aggs..(group + 1) * n_aggs], args, &row)?;
    }

    let mut keys: Vec<Row> = vec![Vec::new(); index.len()];
    for (k, g) in index {
        keys[g] = k;
    }
    let mut out = Vec::with_capacity(keys.len());
    for (g, mut key) in keys.into_iter().enumerate() {
        key.reserve(n_aggs);
        out.push(output(key, &accs[g * n_aggs..(g + 1) * n_aggs])?);
    }
    Ok(out)
}

fn fresh(prototypes: &[Box<dyn Accumulator>]) -> Vec<Box<dyn Accumulator>> {
    prototypes.iter().map(|a| a.box_clone()).collect()
}

const NULL: Datum = None;

fn update(accs: &mut [Box<dyn Accumulator>], args: &[Option<usize>], row: &Row) -> BatchResult<()> {
    for (acc, arg) in accs.iter_mut().zip(args) {
        let value = match arg {
            Some(i) => &row[*i],
            None => &NULL,
        };
        acc.update(true, value)?;
    }
    Ok(())
}

/// Append the accumulators' results to `row`.
fn output(mut row: Row, accs: &[Box<dyn Accumulator>]) -> BatchResult<Row> {
    for acc in accs {
        row.push(acc.output()?);
    }
    Ok(row)
}
