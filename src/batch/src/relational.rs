//! Row-at-a-time operators: `Values`, `Project`, `Filter`, `ExpandVector`,
//! `HopWindow`.

use super::{check_expr, BatchError, BatchResult};
use ebbflow_common::ErrorKind;
use ebbflow_common::{Row, ScalarValue};
use ebbflow_expr::window::{to_micros, TimeWindow};
use ebbflow_expr::Expr;

/// Evaluate constant rows. Each expression sees an empty input row, so a
/// column reference in `VALUES` is a planner bug and reported as such.
pub fn execute_values(rows: &[Vec<Expr>], width: usize) -> BatchResult<Vec<Row>> {
    let empty: Row = Vec::new();
    let mut out = Vec::with_capacity(rows.len());
    for exprs in rows {
        if exprs.len() != width {
            return Err(BatchError::internal(format!(
                "VALUES row of {} expressions for {width} columns",
                exprs.len()
            )));
        }
        let mut row = Vec::with_capacity(width);
        for e in exprs {
            check_expr("VALUES expression", e, 0)?;
            row.push(e.eval(&empty)?);
        }
        out.push(row);
    }
    Ok(out)
}

/// Evaluate `exprs` over every row.
pub fn execute_project(rows: Vec<Row>, exprs: &[Expr], width: usize) -> BatchResult<Vec<Row>> {
    for e in exprs {
        check_expr("projection", e, width)?;
    }
    // The common shape of a projection is pure column selection (hidden
    // columns dropped, columns reordered): then each value can be moved out
    // of its input row instead of cloned, provided no column is taken twice.
    if let Some(cols) = distinct_column_selection(exprs, width) {
        return Ok(rows
            .into_iter()
            .map(|mut row| cols.iter().map(|&i| row[i].take()).collect())
            .collect());
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut new = Vec::with_capacity(exprs.len());
        for e in exprs {
            new.push(e.eval(row)?);
        }
        out.push(new);
    }
    Ok(out)
}

/// The selected columns if every expression is a column reference and no
/// column is referenced twice.
fn distinct_column_selection(exprs: &[Expr], width: usize) -> Option<Vec<usize>> {
    let mut seen = vec![false; width];
    let mut cols = Vec::with_capacity(exprs.len());
    for e in exprs {
        match e {
            Expr::InputRef { index, .. } if !seen[*index] => {
                seen[*index] = true;
                cols.push(*index);
            }
            _ => return None,
        }
    }
    Some(cols)
}

/// Keep the rows where `predicate` is TRUE (NULL rejects, as in `WHERE`).
pub fn execute_filter(rows: Vec<Row>, predicate: &Expr, width: usize) -> BatchResult<Vec<Row>> {
    check_expr("filter predicate", predicate, width)?;
    // A constant predicate (`WHERE false` after folding, `WHERE 1 = 1`)
    // decides for every row at once.
    if let Expr::Literal { .. } = predicate {
        let keep = predicate.eval_predicate(&Vec::new())?;
        return Ok(if keep { rows } else { Vec::new() });
    }
    // In place: kept rows move down, no second vector.
    let mut rows = rows;
    let mut error = None;
    rows.retain(|row| {
        if error.is_some() {
            return false;
        }
        predicate.eval_predicate(row).unwrap_or_else(|e| {
            error = Some(e);
            false
        })
    });
    match error {
        Some(e) => Err(e.into()),
        None => Ok(rows),
    }
}

/// One output row per element of the `int2vector` text `vector` evaluates
/// to: the input row, the element and its 1-based position (see
/// [`LogicalPlan::ExpandVector`](ebbflow_planner::logical::LogicalPlan)).
pub fn execute_expand_vector(rows: Vec<Row>, vector: &Expr, width: usize) -> BatchResult<Vec<Row>> {
    check_expr("vector", vector, width)?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let text = match vector.eval(&row)? {
            None => continue,
            Some(ScalarValue::Varchar(s)) => s,
            Some(other) => {
                return Err(BatchError::internal(format!(
                    "vector of type {} to expand",
                    other.data_type()
                )))
            }
        };
        for (n, elem) in text.split_ascii_whitespace().enumerate() {
            let x: i16 = elem.parse().map_err(|_| {
                BatchError::new(
                    ErrorKind::InvalidTextRepresentation,
                    format!("invalid input syntax for type smallint: \"{elem}\""),
                )
            })?;
            let n = i32::try_from(n + 1).map_err(|_| {
                BatchError::new(
                    ErrorKind::ProgramLimitExceeded,
                    "vector has too many elements",
                )
            })?;
            let mut r = Vec::with_capacity(width + 2);
            r.extend(row.iter().cloned());
            r.push(Some(ScalarValue::Int16(x)));
            r.push(Some(ScalarValue::Int32(n)));
            out.push(r);
        }
    }
    Ok(out)
}

/// One output row per element of the array `array` evaluates to: the
/// input row and the element (see
/// [`LogicalPlan::Unnest`](ebbflow_planner::logical::LogicalPlan)).
pub fn execute_unnest(rows: Vec<Row>, array: &Expr, width: usize) -> BatchResult<Vec<Row>> {
    check_expr("unnest", array, width)?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let a = match array.eval(&row)? {
            None => continue,
            Some(ScalarValue::Array(a)) => a,
            Some(other) => {
                return Err(BatchError::internal(format!(
                    "unnest of a {}",
                    other.data_type()
                )))
            }
        };
        for item in &a.items {
            let mut r = Vec::with_capacity(width + 1);
            r.extend(row.iter().cloned());
            r.push(item.clone());
            out.push(r);
        }
    }
    Ok(out)
}

/// Each row once per window holding its time, with the window's start and
/// end (see [`LogicalPlan::HopWindow`](ebbflow_planner::logical::LogicalPlan)).
pub fn execute_hop_window(
    rows: Vec<Row>,
    time_col: &Expr,
    window: &TimeWindow,
    width: usize,
) -> BatchResult<Vec<Row>> {
    check_expr("window time", time_col, width)?;
    let count = window.count();
    let mut out = Vec::with_capacity(rows.len() * count.clamp(0, 64) as usize);
    for row in rows {
        let t = match time_col.eval(&row)? {
            None => continue,
            Some(ScalarValue::Timestamp(t)) => to_micros(t),
            Some(other) => {
                return Err(BatchError::internal(format!(
                    "window time of type {}",
                    other.data_type()
                )))
            }
        };
        for k in 0..count {
            let (start, end) = window.window(t, k).ok_or_else(|| {
                BatchError::new(ErrorKind::DatetimeFieldOverflow, "timestamp out of range")
            })?;
            let mut r = Vec::with_capacity(width + 2);
            r.extend(row.iter().cloned());
            r.push(Some(ScalarValue::Timestamp(start)));
            r.push(Some(ScalarValue::Timestamp(end)));
            out.push(r);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::test_utils::*;
    use super::super::{execute, BatchError};
    use ebbflow_common::ErrorKind;
    use ebbflow_common::{DataType, Field, ScalarValue};
    use ebbflow_planner::logical::LogicalPlan;

    const T: &[DataType] = &[DataType::Int32, DataType::Varchar, DataType::Boolean];

    fn source() -> MockSource {
        MockSource::new().with_table(
            "t",
            T,
            "1 a t
             2 . f
             3 c .",
        )
    }

    fn expand(input: LogicalPlan, vector: ebbflow_expr::Expr) -> LogicalPlan {
        LogicalPlan::ExpandVector {
            input: Box::new(input),
            vector,
        }
    }

    #[test]
    fn expand_vector_repeats_rows_per_element() {
        let src = source();
        let vector = lit(Some(ScalarValue::varchar("3 1")), DataType::Varchar);
        let plan = project(
            expand(src.scan_plan("t"), vector),
            vec![
                col(0, DataType::Int32),
                col(3, DataType::Int16),
                col(4, DataType::Int32),
            ],
        );
        assert_rows(
            &execute(&plan, &src).unwrap(),
            "1 3 1\n1 1 2\n2 3 1\n2 1 2\n3 3 1\n3 1 2",
        );
    }

    #[test]
    fn expand_vector_skips_null_and_rejects_non_integers() {
        let src =
            MockSource::new().with_table("v", &[DataType::Int32, DataType::Varchar], "1 7\n2 .");
        let plan = expand(src.scan_plan("v"), col(1, DataType::Varchar));
        assert_rows(&execute(&plan, &src).unwrap(), "1 7 7 1");
        let src = MockSource::new().with_table("v", &[DataType::Int32, DataType::Varchar], "1 x");
        let plan = expand(src.scan_plan("v"), col(1, DataType::Varchar));
        assert_eq!(
            execute(&plan, &src).unwrap_err().kind(),
            ErrorKind::InvalidTextRepresentation
        );
    }

    #[test]
    fn scan_returns_all_rows() {
        let src = source();
        let out = execute(&src.scan_plan("t"), &src).unwrap();
        assert_rows(&out, "1 a t\n2 . f\n3 c .");
    }

    #[test]
    fn scan_rejects_short_rows() {
        let mut src = source();
        src.tables.get_mut("t").unwrap().1.push(vec![None]);
        let err: BatchError = execute(&src.scan_plan("t"), &src).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InternalError);
    }

    #[test]
    fn values_evaluate_over_empty_row() {
        let src = MockSource::new();
        let plan = LogicalPlan::Values {
            rows: vec![
                vec![
                    int(1),
                    lit(Some(ScalarValue::varchar("x")), DataType::Varchar),
                ],
                vec![int(2), null(DataType::Varchar)],
            ],
            fields: vec![
                Field::new("a", DataType::Int32),
                Field::new("b", DataType::Varchar),
            ],
        };
        assert_rows(&execute(&plan, &src).unwrap(), "1 x\n2 .");
    }

    #[test]
    fn values_with_column_reference_is_internal_error() {
        let src = MockSource::new();
        let plan = LogicalPlan::Values {
            rows: vec![vec![col(0, DataType::Int32)]],
            fields: vec![Field::new("a", DataType::Int32)],
        };
        assert_eq!(
            execute(&plan, &src).unwrap_err().kind(),
            ErrorKind::InternalError
        );
    }

    #[test]
    fn project_selects_and_reorders() {
        let src = source();
        let plan = project(
            src.scan_plan("t"),
            vec![col(1, DataType::Varchar), col(0, DataType::Int32)],
        );
        assert_rows(&execute(&plan, &src).unwrap(), "a 1\n. 2\nc 3");
    }

    #[test]
    fn project_duplicates_and_literals() {
        let src = source();
        let plan = project(
            src.scan_plan("t"),
            vec![col(0, DataType::Int32), col(0, DataType::Int32), int(7)],
        );
        assert_rows(&execute(&plan, &src).unwrap(), "1 1 7\n2 2 7\n3 3 7");
    }

    #[test]
    fn project_out_of_range_is_internal_error() {
        let src = source();
        let plan = project(src.scan_plan("t"), vec![col(5, DataType::Int32)]);
        assert_eq!(
            execute(&plan, &src).unwrap_err().kind(),
            ErrorKind::InternalError
        );
    }

    #[test]
    fn filter_keeps_only_true() {
        // Column 2 is TRUE, FALSE, NULL: only the TRUE row passes.
        let src = source();
        let plan = filter(src.scan_plan("t"), col(2, DataType::Boolean));
        assert_rows(&execute(&plan, &src).unwrap(), "1 a t");
    }

    #[test]
    fn filter_constant_predicates() {
        let src = source();
        let yes = filter(src.scan_plan("t"), boolean(Some(true)));
        assert_eq!(execute(&yes, &src).unwrap().len(), 3);
        let no = filter(src.scan_plan("t"), boolean(Some(false)));
        assert!(execute(&no, &src).unwrap().is_empty());
        let null = filter(src.scan_plan("t"), boolean(None));
        assert!(execute(&null, &src).unwrap().is_empty());
    }

    #[test]
    fn union_concatenates() {
        let src = source();
        let plan = LogicalPlan::Union {
            inputs: vec![src.scan_plan("t"), src.scan_plan("t")],
        };
        assert_eq!(execute(&plan, &src).unwrap().len(), 6);
        let empty = LogicalPlan::Union { inputs: vec![] };
        assert!(execute(&empty, &src).unwrap().is_empty());
    }

    #[test]
    fn union_width_mismatch_is_internal_error() {
        let src = source();
        let plan = LogicalPlan::Union {
            inputs: vec![
                src.scan_plan("t"),
                project(src.scan_plan("t"), vec![col(0, DataType::Int32)]),
            ],
        };
        assert_eq!(
            execute(&plan, &src).unwrap_err().kind(),
            ErrorKind::InternalError
        );
    }

    #[test]
    fn filter_then_project_pipeline() {
        let src = source();
        let plan = project(
            filter(src.scan_plan("t"), col(2, DataType::Boolean)),
            vec![col(1, DataType::Varchar)],
        );
        assert_rows(&execute(&plan, &src).unwrap(), "a");
    }
}
