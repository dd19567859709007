//! Hash aggregation.
//!
//! Groups are keyed by the group-by values compared with SQL grouping
//! semantics: NULL equals NULL (all NULL keys form one group), and values
//! compare by [`ScalarValue`](ebbflow_common::ScalarValue)'s `Eq`, which
//! already follows PostgreSQL (`-0.0 = 0.0`, `NaN = NaN`, `'1 mon' = '30
//! days'`). Each group holds one [`Accumulator`] per call; `DISTINCT` is the
//! accumulator's business, not ours.

use super::hash::FastMap;
use super::{check_indices, BatchError, BatchResult};
use ebbflow_common::ErrorKind;
use ebbflow_common::{Datum, Row};
use ebbflow_expr::{create_accumulator, Accumulator, AggCall, AggKind, ExprError, ExprResult};

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
    let prototypes: Vec<Box<dyn Accumulator>> = aggs.iter().map(batch_accumulator).collect();
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

    match group_by {
        &[col] => {
            let index = SingleKey {
                col,
                map: FastMap::default(),
            };
            group(rows, index, args, prototypes)
        }
        cols => {
            let index = MultiKey {
                cols,
                map: FastMap::default(),
                buf: Vec::with_capacity(cols.len()),
            };
            group(rows, index, args, prototypes)
        }
    }
}

fn group(
    rows: Vec<Row>,
    mut index: impl GroupIndex,
    args: &[Option<usize>],
    prototypes: &[Box<dyn Accumulator>],
) -> BatchResult<Vec<Row>> {
    // Group `g`'s accumulators are `accs[g * n_aggs..(g + 1) * n_aggs]`:
    // one allocation for all groups instead of one per group.
    let n_aggs = prototypes.len();
    let mut accs: Vec<Box<dyn Accumulator>> = Vec::new();
    let mut n_groups = 0;
    for row in rows {
        let g = index.group_of(&row);
        if g == n_groups {
            accs.extend(fresh(prototypes));
            n_groups += 1;
        }
        update(&mut accs[g * n_aggs..(g + 1) * n_aggs], args, &row)?;
    }
    let mut out = Vec::with_capacity(n_groups);
    for (g, key) in index.into_keys(n_aggs).into_iter().enumerate() {
        out.push(output(key, &accs[g * n_aggs..(g + 1) * n_aggs])?);
    }
    Ok(out)
}

/// Numbers groups by key, in order of first appearance.
trait GroupIndex {
    /// The group of `row`: a new one, numbered with the count of groups so
    /// far, if its key was not seen before.
    fn group_of(&mut self, row: &Row) -> usize;
    /// Every group's key, in group order, each with room for `extra` more
    /// values.
    fn into_keys(self, extra: usize) -> Vec<Row>;
}

/// One group-by column (the common case): keyed by the value itself, looked
/// up by reference, so only a new group clones its key.
struct SingleKey {
    col: usize,
    map: FastMap<Datum, usize>,
}

impl GroupIndex for SingleKey {
    fn group_of(&mut self, row: &Row) -> usize {
        let key = &row[self.col];
        match self.map.get(key) {
            Some(&g) => g,
            None => {
                let g = self.map.len();
                self.map.insert(key.clone(), g);
                g
            }
        }
    }

    fn into_keys(self, extra: usize) -> Vec<Row> {
        let mut keys = vec![Vec::new(); self.map.len()];
        for (k, g) in self.map {
            let mut key = Vec::with_capacity(1 + extra);
            key.push(k);
            keys[g] = key;
        }
        keys
    }
}

struct MultiKey<'a> {
    cols: &'a [usize],
    map: FastMap<Vec<Datum>, usize>,
    /// The current row's key, to look up by slice so that only a new group
    /// allocates its key.
    buf: Vec<Datum>,
}

impl GroupIndex for MultiKey<'_> {
    fn group_of(&mut self, row: &Row) -> usize {
        self.buf.clear();
        self.buf.extend(self.cols.iter().map(|&i| row[i].clone()));
        match self.map.get(self.buf.as_slice()) {
            Some(&g) => g,
            None => {
                let g = self.map.len();
                self.map.insert(self.buf.clone(), g);
                g
            }
        }
    }

    fn into_keys(self, extra: usize) -> Vec<Row> {
        let mut keys = vec![Vec::new(); self.map.len()];
        for (mut k, g) in self.map {
            k.reserve_exact(extra);
            keys[g] = k;
        }
        keys
    }
}

/// The accumulator for `call` over insert-only input.
///
/// The shared accumulators must survive retractions, so min/max keep a
/// multiset of every value seen: over a million rows that is most of the
/// cost of the query. Batch input never retracts, so min/max here keep just
/// the best value (`DISTINCT` changes neither). Everything else is the
/// shared implementation.
fn batch_accumulator(call: &AggCall) -> Box<dyn Accumulator> {
    match call.kind {
        AggKind::Min | AggKind::Max => Box::new(InsertOnlyMinMax {
            max: call.kind == AggKind::Max,
            best: None,
        }),
        _ => create_accumulator(call),
    }
}

/// `min`/`max` that cannot retract. On ties the later value wins, as in
/// PostgreSQL's `numeric_smaller`/`interval_larger` (visible only for
/// equal values of different representation, like `1.0` and `1.00`).
#[derive(Clone, Debug)]
struct InsertOnlyMinMax {
    max: bool,
    best: Datum,
}

impl Accumulator for InsertOnlyMinMax {
    fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
        if !insert {
            return Err(ExprError::new(
                ErrorKind::InternalError,
                "batch min/max cannot retract",
            ));
        }
        if let Some(v) = value {
            let better = match &self.best {
                None => true,
                Some(best) if self.max => v >= best,
                Some(best) => v <= best,
            };
            if better {
                self.best = Some(v.clone());
            }
        }
        Ok(())
    }

    fn output(&self) -> ExprResult<Datum> {
        Ok(self.best.clone())
    }

    fn save(&self) -> Row {
        vec![self.best.clone()]
    }

    fn load(&mut self, state: &[Datum]) -> ExprResult<()> {
        match state {
            [best] => {
                self.best = best.clone();
                Ok(())
            }
            _ => Err(ExprError::new(
                ErrorKind::InternalError,
                "corrupt min/max state",
            )),
        }
    }

    fn box_clone(&self) -> Box<dyn Accumulator> {
        Box::new(self.clone())
    }
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

#[cfg(test)]
mod tests {
    use super::super::test_utils::*;
    use super::*;
    use ebbflow_common::DataType::{self, Float64, Int32, Varchar};
    use ebbflow_common::ScalarValue;

    /// A stand-in for the real accumulators: counts non-NULL inputs (all
    /// inputs with `rows`) or sums integers (NULL over no values), so the
    /// engine's grouping is tested apart from the aggregate functions.
    #[derive(Clone, Debug)]
    struct MockAcc {
        sum: bool,
        n: i64,
        total: i64,
    }

    impl Accumulator for MockAcc {
        fn update(&mut self, insert: bool, value: &Datum) -> ExprResult<()> {
            assert!(insert, "batch aggregation only inserts");
            if !self.sum {
                self.n += 1;
            } else if let Some(v) = value {
                self.n += 1;
                self.total += v.as_i64().expect("integer");
            }
            Ok(())
        }
        fn output(&self) -> ExprResult<Datum> {
            Ok(match (self.sum, self.n) {
                (true, 0) => None,
                (true, _) => Some(ScalarValue::Int64(self.total)),
                (false, n) => Some(ScalarValue::Int64(n)),
            })
        }
        fn save(&self) -> Row {
            vec![]
        }
        fn load(&mut self, _: &[Datum]) -> ExprResult<()> {
            Ok(())
        }
        fn box_clone(&self) -> Box<dyn Accumulator> {
            Box::new(self.clone())
        }
    }

    fn count_star() -> (Option<usize>, Box<dyn Accumulator>) {
        let acc = MockAcc {
            sum: false,
            n: 0,
            total: 0,
        };
        (None, Box::new(acc))
    }

    fn sum(col: usize) -> (Option<usize>, Box<dyn Accumulator>) {
        let acc = MockAcc {
            sum: true,
            n: 0,
            total: 0,
        };
        (Some(col), Box::new(acc))
    }

    fn run(
        rows: &str,
        types: &[DataType],
        group_by: &[usize],
        calls: Vec<(Option<usize>, Box<dyn Accumulator>)>,
    ) -> Vec<Row> {
        let (args, protos): (Vec<_>, Vec<_>) = calls.into_iter().unzip();
        aggregate_with(parse_rows(rows, types), group_by, &args, &protos).unwrap()
    }

    const T: &[DataType] = &[Varchar, Int32];
    const ROWS: &str = "a 1\n. 2\nb .\na 3\n. 4\nb 5";

    #[test]
    fn groups_with_nulls_together() {
        let out = run(ROWS, T, &[0], vec![count_star(), sum(1)]);
        assert_rows(&out, "a 2 4\n. 2 6\nb 2 5");
    }

    #[test]
    fn groups_come_out_in_first_appearance_order() {
        let out = run(ROWS, T, &[0], vec![count_star()]);
        assert_rows_ordered(&out, "a 2\n. 2\nb 2");
    }

    #[test]
    fn group_by_without_aggregates_is_distinct() {
        let out = run(
            "1 x\n1 x\n1 .\n. .\n1 .\n. .",
            &[Int32, Varchar],
            &[0, 1],
            vec![],
        );
        assert_rows(&out, "1 x\n1 .\n. .");
    }

    #[test]
    fn group_key_order_matters() {
        let out = run(
            "1 2\n2 1\n1 2",
            &[Int32, Int32],
            &[1, 0],
            vec![count_star()],
        );
        assert_rows(&out, "2 1 2\n1 2 1");
    }

    #[test]
    fn float_zeros_and_nans_group_together() {
        let out = run(
            "0 1\n-0 2\nNaN 3\nNaN 4",
            &[Float64, Int32],
            &[0],
            vec![sum(1)],
        );
        assert_eq!(out.len(), 2);
        let sums: Vec<_> = out.iter().map(|r| r[1].clone()).collect();
        assert_eq!(
            sums,
            vec![Some(ScalarValue::Int64(3)), Some(ScalarValue::Int64(7))]
        );
    }

    #[test]
    fn no_group_by_over_empty_input_is_one_row() {
        let out = run("", T, &[], vec![count_star(), sum(1)]);
        assert_rows(&out, "0 .");
        // Even with no aggregate at all (`SELECT 1 FROM t HAVING true`).
        let out = run("", T, &[], vec![]);
        assert_eq!(out, vec![Vec::<Datum>::new()]);
    }

    #[test]
    fn no_group_by_over_rows() {
        let out = run(ROWS, T, &[], vec![count_star(), sum(1)]);
        assert_rows(&out, "6 15");
    }

    #[test]
    fn group_by_over_empty_input_is_empty() {
        assert!(run("", T, &[0], vec![count_star()]).is_empty());
    }

    #[test]
    fn bad_indices_are_internal_errors() {
        let call = |kind, arg| AggCall {
            kind,
            arg,
            arg_type: Some(Int32),
            return_type: DataType::Int64,
            distinct: false,
        };
        let err = execute_aggregate(vec![], &[2], &[], 2).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InternalError);
        let err = execute_aggregate(vec![], &[], &[call(AggKind::Sum, Some(2))], 2).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InternalError);
        let err = execute_aggregate(vec![], &[], &[call(AggKind::Sum, None)], 2).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InternalError);
    }

    /// The batch min/max agree with the shared accumulator on every input
    /// (ties of equal-but-different values aside).
    #[test]
    fn insert_only_min_max_matches_shared_accumulator() {
        let inputs = [
            (Int32, "3\n.\n-7\n12\n12\n."),
            (Float64, "1.5\nNaN\n-0\n.\n-Infinity"),
            (Varchar, "b\nab\n.\nB\nabc"),
            (Int32, ".\n."),
            (Int32, ""),
        ];
        for (ty, values) in inputs {
            let rows = parse_rows(values, &[ty]);
            for kind in [AggKind::Min, AggKind::Max] {
                for distinct in [false, true] {
                    let call = AggCall {
                        kind,
                        arg: Some(0),
                        arg_type: Some(ty),
                        return_type: ty,
                        distinct,
                    };
                    let (mut ours, mut shared) =
                        (batch_accumulator(&call), create_accumulator(&call));
                    for row in &rows {
                        ours.update(true, &row[0]).unwrap();
                        shared.update(true, &row[0]).unwrap();
                    }
                    assert_eq!(
                        ours.output().unwrap(),
                        shared.output().unwrap(),
                        "{kind:?} {values:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn insert_only_min_max_keeps_the_later_of_equal_values() {
        let call = |kind| AggCall {
            kind,
            arg: Some(0),
            arg_type: Some(DataType::Decimal),
            return_type: DataType::Decimal,
            distinct: false,
        };
        let rows = parse_rows("1.0\n2\n1.00\n2.000", &[DataType::Decimal]);
        let out = aggregate_with(
            rows,
            &[],
            &[Some(0), Some(0)],
            &[
                batch_accumulator(&call(AggKind::Min)),
                batch_accumulator(&call(AggKind::Max)),
            ],
        )
        .unwrap();
        assert_rows(&out, "1.00 2.000");
    }
}
