//! Whole plans through [`execute`] with real expression evaluation and
//! accumulators: what a `SELECT` binds to.

use super::test_utils::*;
use super::{execute, BatchResult};
use ebbflow_common::ErrorKind;
use ebbflow_common::{DataType, Field, Row};
use ebbflow_expr::{agg_return_type, build_func, AggCall, AggKind, Expr, Func};
use ebbflow_planner::logical::{JoinKind, LogicalPlan, OrderKey};

use DataType::{Int32, Int64, Varchar};

/// `emp(id, dept, salary, bonus)` and `dept(name, floor)`.
fn source() -> MockSource {
    MockSource::new()
        .with_table(
            "emp",
            &[Int32, Varchar, Int32, Int32],
            "1 eng 100 10
             2 eng 200 .
             3 ops 150 5
             4 .   50  .
             5 .   70  1",
        )
        .with_table(
            "dept",
            &[Varchar, Int32],
            "eng 1
             ops 2
             hr  3
             .   4",
        )
}

fn run(plan: &LogicalPlan) -> BatchResult<Vec<Row>> {
    execute(plan, &source())
}

fn func(f: Func, args: Vec<Expr>) -> Expr {
    build_func(f, args).expect("well-typed test expression")
}

fn call(kind: AggKind, arg: Option<usize>, distinct: bool) -> AggCall {
    let arg_type = arg.map(|_| Int32);
    AggCall {
        kind,
        arg,
        arg_type,
        return_type: agg_return_type(kind, arg_type).expect("aggregate type"),
        distinct,
    }
}

fn aggregate(input: LogicalPlan, group_by: Vec<usize>, aggs: Vec<AggCall>) -> LogicalPlan {
    let types = input.types();
    let fields = group_by
        .iter()
        .map(|&i| Field::new("g", types[i]))
        .chain(aggs.iter().map(|a| Field::new("a", a.return_type)))
        .collect();
    LogicalPlan::Aggregate {
        input: Box::new(input),
        group_by,
        aggs,
        fields,
    }
}

/// `count(*), count(bonus), sum(salary), avg(salary), min(bonus), max(salary)`.
fn all_aggs() -> Vec<AggCall> {
    vec![
        call(AggKind::CountStar, None, false),
        call(AggKind::Count, Some(3), false),
        call(AggKind::Sum, Some(2), false),
        call(AggKind::Avg, Some(2), false),
        call(AggKind::Min, Some(3), false),
        call(AggKind::Max, Some(2), false),
    ]
}

fn emp() -> LogicalPlan {
    source().scan_plan("emp")
}

#[test]
fn group_by_with_every_aggregate() {
    let plan = aggregate(emp(), vec![1], all_aggs());
    assert_rows(
        &run(&plan).unwrap(),
        "eng 2 1 300 150.0000000000000000 10 200
         ops 1 1 150 150.0000000000000000 5  150
         .   2 1 120 60.0000000000000000  1  70",
    );
}

#[test]
fn aggregates_over_empty_input() {
    let nothing = filter(emp(), boolean(Some(false)));
    let plan = aggregate(nothing.clone(), vec![], all_aggs());
    assert_rows(&run(&plan).unwrap(), "0 0 . . . .");
    let grouped = aggregate(nothing, vec![1], all_aggs());
    assert!(run(&grouped).unwrap().is_empty());
}

#[test]
fn distinct_aggregates() {
    // count(DISTINCT dept) ignores NULL; sum(DISTINCT bonus) of 10, 5, 1.
    let mut count = call(AggKind::Count, Some(1), true);
    count.arg_type = Some(Varchar);
    let plan = aggregate(
        emp(),
        vec![],
        vec![count, call(AggKind::Sum, Some(3), true)],
    );
    assert_rows(&run(&plan).unwrap(), "2 16");
    let twice = LogicalPlan::Union {
        inputs: vec![emp(), emp()],
    };
    let plan = aggregate(
        twice,
        vec![],
        vec![
            call(AggKind::Count, Some(2), true),
            call(AggKind::Count, Some(2), false),
        ],
    );
    assert_rows(&run(&plan).unwrap(), "5 10");
}

#[test]
fn filter_with_comparison() {
    let pred = func(Func::Gt, vec![col(2, Int32), int(100)]);
    let plan = project(filter(emp(), pred), vec![col(0, Int32)]);
    assert_rows(&run(&plan).unwrap(), "2\n3");
    // bonus > 1 is NULL for NULL bonuses: rejected.
    let pred = func(Func::Gt, vec![col(3, Int32), int(1)]);
    let plan = project(filter(emp(), pred), vec![col(0, Int32)]);
    assert_rows(&run(&plan).unwrap(), "1\n3");
}

#[test]
fn left_join_with_residual_on_the_right() {
    // emp LEFT JOIN dept ON emp.dept = dept.name AND dept.floor > 1
    let plan = LogicalPlan::Join {
        left: Box::new(emp()),
        right: Box::new(source().scan_plan("dept")),
        kind: JoinKind::Left,
        on: vec![(1, 0)],
        condition: Some(func(Func::Gt, vec![col(5, Int32), int(1)])),
    };
    let plan = project(plan, vec![col(0, Int32), col(4, Varchar), col(5, Int32)]);
    assert_rows(&run(&plan).unwrap(), "1 . .\n2 . .\n3 ops 2\n4 . .\n5 . .");
}

#[test]
fn full_join_then_aggregate() {
    // Departments without employees and employees without departments both
    // survive a FULL join; count(*) per department name counts them.
    let plan = LogicalPlan::Join {
        left: Box::new(emp()),
        right: Box::new(source().scan_plan("dept")),
        kind: JoinKind::Full,
        on: vec![(1, 0)],
        condition: None,
    };
    let plan = aggregate(plan, vec![4], vec![call(AggKind::CountStar, None, false)]);
    assert_rows(&run(&plan).unwrap(), "eng 2\nops 1\nhr 1\n. 3");
}

#[test]
fn theta_join_without_keys() {
    // emp JOIN dept ON emp.id = dept.floor + 2 (no equi key: a nested loop)
    let plus = func(Func::Add, vec![col(5, Int32), int(2)]);
    let plan = LogicalPlan::Join {
        left: Box::new(emp()),
        right: Box::new(source().scan_plan("dept")),
        kind: JoinKind::Inner,
        on: vec![],
        condition: Some(func(Func::Eq, vec![col(0, Int32), plus])),
    };
    let plan = project(plan, vec![col(0, Int32), col(4, Varchar)]);
    assert_rows(&run(&plan).unwrap(), "3 eng\n4 ops\n5 hr");
}

#[test]
fn top_n_over_aggregate() {
    // SELECT dept, sum(salary) FROM emp GROUP BY dept ORDER BY 2 DESC LIMIT 2
    let agg = aggregate(emp(), vec![1], vec![call(AggKind::Sum, Some(2), false)]);
    let plan = LogicalPlan::TopN {
        input: Box::new(agg),
        order: vec![OrderKey {
            index: 1,
            desc: true,
            nulls_first: true,
        }],
        limit: Some(2),
        offset: 0,
    };
    assert_rows_ordered(&run(&plan).unwrap(), "eng 300\nops 150");
}

#[test]
fn values_with_expressions_and_union() {
    let fields = vec![Field::new("x", Int32), Field::new("y", Varchar)];
    let values = |rows| LogicalPlan::Values {
        rows,
        fields: fields.clone(),
    };
    let upper = |s: &str| {
        func(
            Func::Upper,
            vec![lit(Some(ebbflow_common::ScalarValue::varchar(s)), Varchar)],
        )
    };
    let plan = LogicalPlan::Union {
        inputs: vec![
            values(vec![vec![
                func(Func::Add, vec![int(1), int(2)]),
                upper("a"),
            ]]),
            values(vec![vec![int(4), null(Varchar)]]),
        ],
    };
    assert_rows(&run(&plan).unwrap(), "3 A\n4 .");
}

#[test]
fn evaluation_errors_carry_their_sqlstate() {
    // SELECT 1 / (salary - 100) FROM emp: division by zero on row 1.
    let minus = func(Func::Sub, vec![col(2, Int32), int(100)]);
    let plan = project(emp(), vec![func(Func::Div, vec![int(1), minus])]);
    let err = run(&plan).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DivisionByZero);
    assert_eq!(err.to_string(), "division by zero");
    // Overflow inside a filter predicate, and in an aggregate (bigint sum).
    let big = lit(Some(ebbflow_common::ScalarValue::Int32(i32::MAX)), Int32);
    let pred = func(
        Func::Gt,
        vec![func(Func::Add, vec![col(0, Int32), big]), int(0)],
    );
    assert_eq!(
        run(&filter(emp(), pred)).unwrap_err().kind(),
        ErrorKind::NumericValueOutOfRange
    );
    let big = lit(Some(ebbflow_common::ScalarValue::Int64(i64::MAX)), Int64);
    let rows = LogicalPlan::Values {
        rows: vec![vec![big.clone()], vec![big]],
        fields: vec![Field::new("x", Int64)],
    };
    let mut sum = call(AggKind::Sum, Some(0), false);
    sum.arg_type = Some(Int64);
    sum.return_type = agg_return_type(AggKind::Sum, Some(Int64)).expect("type");
    let plan = aggregate(rows, vec![], vec![sum]);
    // sum(bigint) is numeric in PostgreSQL: no overflow.
    assert_rows(&run(&plan).unwrap(), "18446744073709551614");
}
