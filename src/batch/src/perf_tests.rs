//! Timings over a million rows, for comparing changes to the operators.
//! Ignored by default: `cargo test -p ebbflow-batch --lib perf -- --ignored --nocapture`.

use std::time::Instant;

use super::test_utils::*;
use super::{execute, ScanSource};
use ebbflow_common::{DataType, Field, Row, ScalarValue};
use ebbflow_expr::{agg_return_type, AggCall, AggKind};
use ebbflow_planner::logical::{JoinKind, LogicalPlan, OrderKey};

const N: i64 = 1_000_000;

fn source() -> MockSource {
    let types = [
        DataType::Int64,
        DataType::Int64,
        DataType::Varchar,
        DataType::Boolean,
    ];
    let mut src = MockSource::new()
        .with_table("big", &types, "")
        .with_table("dim", &types, "");
    let row = |i: i64, modulo: i64| -> Row {
        vec![
            Some(ScalarValue::Int64(i)),
            Some(ScalarValue::Int64(i.wrapping_mul(2_654_435_761) % modulo)),
            Some(ScalarValue::varchar(format!("name-{}", i % 1000))),
            Some(ScalarValue::Boolean(i % 3 == 0)),
        ]
    };
    if let Some(t) = src.tables.get_mut("big") {
        t.1 = (0..N).map(|i| row(i, 100_000)).collect();
    }
    if let Some(t) = src.tables.get_mut("dim") {
        t.1 = (0..N / 10).map(|i| row(i, 7)).collect();
    }
    src
}

/// CPU time of this thread in ns (Linux), which the other processes on a
/// busy machine disturb less than wall time.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn time(name: &str, plan: &LogicalPlan, src: &dyn ScanSource) {
    let (start, cpu) = (Instant::now(), cpu_ns());
    let rows = execute(plan, src).map(|r| r.len());
    println!(
        "{name:<32} {:>8.1} ms wall {:>8.1} ms cpu  {rows:?}",
        start.elapsed().as_secs_f64() * 1e3,
        (cpu_ns() - cpu) as f64 / 1e6
    );
}

#[test]
#[ignore]
fn perf_million_rows() {
    let src = source();
    let big = || Box::new(src.scan_plan("big"));
    time("scan", &src.scan_plan("big"), &src);
    time(
        "filter",
        &filter(src.scan_plan("big"), col(3, DataType::Boolean)),
        &src,
    );
    time(
        "project",
        &project(
            src.scan_plan("big"),
            vec![col(2, DataType::Varchar), col(0, DataType::Int64)],
        ),
        &src,
    );
    let distinct = |k: usize| LogicalPlan::Aggregate {
        input: big(),
        group_by: vec![k],
        aggs: vec![],
        fields: src.scan_plan("big").fields()[k..k + 1].to_vec(),
    };
    time("group by int (100k groups)", &distinct(1), &src);
    time("group by varchar (1k groups)", &distinct(2), &src);
    time("group by unique int (1M)", &distinct(0), &src);
    let call = |kind, arg: Option<usize>| AggCall {
        kind,
        arg,
        arg_type: arg.map(|_| DataType::Int64),
        return_type: agg_return_type(kind, arg.map(|_| DataType::Int64)).expect("type"),
        distinct: false,
    };
    let aggs = |group_by: Vec<usize>, aggs: Vec<AggCall>| LogicalPlan::Aggregate {
        input: big(),
        fields: (0..group_by.len() + aggs.len())
            .map(|i| Field::new(format!("f{i}"), DataType::Int64))
            .collect(),
        group_by,
        aggs,
    };
    time(
        "count(*), sum (no group by)",
        &aggs(
            vec![],
            vec![call(AggKind::CountStar, None), call(AggKind::Sum, Some(0))],
        ),
        &src,
    );
    time(
        "min, max (no group by)",
        &aggs(
            vec![],
            vec![call(AggKind::Min, Some(0)), call(AggKind::Max, Some(0))],
        ),
        &src,
    );
    time(
        "count, sum, min by 100k groups",
        &aggs(
            vec![1],
            vec![
                call(AggKind::Count, Some(0)),
                call(AggKind::Sum, Some(0)),
                call(AggKind::Min, Some(0)),
            ],
        ),
        &src,
    );
    let join = |kind| LogicalPlan::Join {
        left: big(),
        right: Box::new(src.scan_plan("dim")),
        kind,
        on: vec![(1, 0)],
        condition: None,
    };
    time("join 1M x 100k inner", &join(JoinKind::Inner), &src);
    time("join 1M x 100k full", &join(JoinKind::Full), &src);
    let sort = |limit| LogicalPlan::TopN {
        input: big(),
        order: vec![
            OrderKey {
                index: 2,
                desc: false,
                nulls_first: false,
            },
            OrderKey {
                index: 1,
                desc: true,
                nulls_first: true,
            },
        ],
        limit,
        offset: 0,
    };
    time("sort 1M by varchar, int", &sort(None), &src);
    time("top 10 of 1M", &sort(Some(10)), &src);
}
