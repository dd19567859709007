//! Window functions: rows sorted by partition then window order, each
//! partition computed by [`compute_partition`].

use std::cmp::Ordering;

use super::{check_indices, BatchResult};
use ebbflow_common::order::{compare_rows, OrderKey};
use ebbflow_common::Row;
use ebbflow_expr::over::{compute_partition, WindowCall};

pub fn execute_over_window(
    rows: Vec<Row>,
    partition_by: &[usize],
    order_by: &[OrderKey],
    calls: &[WindowCall],
    limit: Option<u64>,
    width: usize,
) -> BatchResult<Vec<Row>> {
    check_indices("PARTITION BY", partition_by.iter().copied(), width)?;
    check_indices("window ORDER BY", order_by.iter().map(|o| o.index), width)?;
    check_indices(
        "window function argument",
        calls.iter().flat_map(|c| c.args.iter().copied()),
        width,
    )?;
    let partition: Vec<OrderKey> = partition_by
        .iter()
        .map(|&index| OrderKey {
            index,
            desc: false,
            nulls_first: false,
        })
        .collect();
    let mut rows = rows;
    rows.sort_by(|a, b| compare_rows(&partition, a, b).then_with(|| compare_rows(order_by, a, b)));
    let mut out = Vec::with_capacity(rows.len());
    let mut start = 0;
    while start < rows.len() {
        let mut end = start + 1;
        while end < rows.len()
            && compare_rows(&partition, &rows[start], &rows[end]) == Ordering::Equal
        {
            end += 1;
        }
        let part: Vec<&Row> = rows[start..end].iter().collect();
        let values = compute_partition(&part, order_by, calls)?;
        let take = limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
        for (row, v) in rows[start..end].iter().zip(values).take(take) {
            let mut r = Vec::with_capacity(width + v.len());
            r.extend(row.iter().cloned());
            r.extend(v);
            out.push(r);
        }
        start = end;
    }
    Ok(out)
}
