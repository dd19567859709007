//! Tests that need the expression library (operators, functions,
//! aggregates, joins on expressions, parameter inference): each skips
//! itself until `expr_ready()`.

use super::*;
use ebbflow_common::ErrorKind;

#[test]
fn joins_using() {
    if !expr_ready() {
        return;
    }
    let plan = query_named(
        "SELECT * FROM t JOIN u USING (a)",
        &["a", "b", "c", "d", "x", "k"],
    );
    assert!(
        shape(&plan).contains("Join Inner on=[(0, 0)]"),
        "{}",
        shape(&plan)
    );
    query("SELECT a, t.a, u.a FROM t JOIN u USING (a)");
    let (plan, n) = query("SELECT * FROM t FULL JOIN u USING (a)");
    assert_eq!(n[0], "a");
    assert!(shape(&plan).contains("Join Full"), "{}", shape(&plan));
    err(
        "SELECT * FROM t JOIN u USING (zz)",
        ErrorKind::UndefinedColumn,
    );
    query_named(
        "SELECT * FROM t NATURAL JOIN u",
        &["a", "b", "c", "d", "x", "k"],
    );
    err("SELECT * FROM t LEFT JOIN u", ErrorKind::SyntaxError);
}

#[test]
fn where_filter_and_literal_typing() {
    if !expr_ready() {
        return;
    }
    let (plan, _) = query("SELECT a FROM t WHERE d = '2024-01-01' AND b LIKE 'x%'");
    assert_eq!(shape(&plan), "Project 1\n  Filter\n    Scan t\n");
    let LogicalPlan::Project { input, .. } = &plan else {
        panic!()
    };
    let LogicalPlan::Filter { predicate, .. } = input.as_ref() else {
        panic!()
    };
    let mut s = format!("{predicate:?}");
    s.retain(|c| !c.is_whitespace());
    assert!(s.contains("Date(2024-01-01)"), "{s}");
    err("SELECT a FROM t WHERE a", ErrorKind::DatatypeMismatch);
    err(
        "SELECT a FROM t WHERE count(*) > 1",
        ErrorKind::GroupingError,
    );
}

#[test]
fn expressions_bind() {
    if !expr_ready() {
        return;
    }
    let (plan, n) = query(
        "SELECT a + 1, -a, a::bigint, CAST(b AS int), '1'::int, \
         CASE WHEN a > 1 THEN 'x' ELSE b END, CASE a WHEN 1 THEN 10 END, \
         COALESCE(c, a), NULLIF(a, 0), GREATEST(a, c), LEAST(a, 2), \
         a BETWEEN 1 AND 3, a NOT IN (1, 2), b NOT LIKE 'x', b ILIKE 'y', \
         a IS NULL, a IS NOT DISTINCT FROM c, (a > 1) IS TRUE, \
         substring(b FROM 1 FOR 2), position('a' IN b), trim(b), lower(b), \
         INTERVAL '1' MINUTE, INTERVAL '1 day', DATE '2024-01-01', b || a, abs(a) \
         FROM t",
    );
    assert_eq!(
        n,
        names(&[
            "?column?",
            "?column?",
            "a",
            "b",
            "int4",
            "case",
            "case",
            "coalesce",
            "nullif",
            "greatest",
            "least",
            "?column?",
            "?column?",
            "?column?",
            "?column?",
            "?column?",
            "?column?",
            "?column?",
            "substring",
            "position",
            "btrim",
            "lower",
            "interval",
            "interval",
            "date",
            "?column?",
            "abs"
        ])
    );
    use DataType::*;
    let t = plan.types();
    assert_eq!(t[0], Int32);
    assert_eq!(t[2], Int64);
    assert_eq!(t[3], Int32);
    assert_eq!(t[4], Int32);
    assert_eq!(t[5], Varchar);
    assert_eq!(t[6], Int32);
    assert_eq!(t[7], Int64);
    assert_eq!(t[9], Int64);
    assert_eq!(t[11], Boolean);
    assert_eq!(t[22], Interval);
    assert_eq!(t[23], Interval);
    assert_eq!(t[24], Date);
    assert_eq!(t[25], Varchar);
    err("SELECT a + true FROM t", ErrorKind::UndefinedFunction);
    err("SELECT nosuchfn(a) FROM t", ErrorKind::UndefinedFunction);
    err("SELECT CASE WHEN 1 THEN 2 END", ErrorKind::DatatypeMismatch);
    err(
        "SELECT CASE WHEN true THEN 1 ELSE true END",
        ErrorKind::DatatypeMismatch,
    );
}

#[test]
fn aggregates_shape_and_errors() {
    if !expr_ready() {
        return;
    }
    let plan = query_named(
        "SELECT b, count(*), sum(a), count(DISTINCT c) FROM t GROUP BY b",
        &["b", "count", "sum", "count"],
    );
    assert_eq!(
        shape(&plan),
        "Project 4\n  Aggregate 1+3\n    Project 3\n      Scan t\n"
    );
    let LogicalPlan::Project { input, .. } = &plan else {
        panic!()
    };
    let LogicalPlan::Aggregate { aggs, .. } = input.as_ref() else {
        panic!()
    };
    assert_eq!(aggs[0].kind, AggKind::CountStar);
    assert_eq!(aggs[1].kind, AggKind::Sum);
    assert_eq!(aggs[1].return_type, DataType::Int64);
    assert_eq!(aggs[1].arg, Some(1));
    assert!(aggs[2].distinct);
    assert_eq!(aggs[2].arg, Some(2));

    let (plan, _) = query("SELECT count(*) FROM t");
    assert_eq!(
        shape(&plan),
        "Project 1\n  Aggregate 0+1\n    Project 0\n      Scan t\n"
    );

    // GROUP BY position, alias and expression; HAVING; ORDER BY aggregate.
    let plan = query_named(
        "SELECT a + 1 AS k, max(c) FROM t WHERE b <> '' GROUP BY 1 HAVING count(*) > 1 ORDER BY max(c) DESC, k",
        &["k", "max"],
    );
    assert_eq!(
        shape(&plan),
        "TopN None 0\n  Project 2\n    Filter\n      Aggregate 1+2\n        Project 2\n          Filter\n            Scan t\n"
    );
    query("SELECT a + 1 AS k FROM t GROUP BY k");
    query("SELECT a + 1 FROM t GROUP BY a + 1");
    query("SELECT a + 1 FROM t GROUP BY a");
    query("SELECT b, count(*) FROM t GROUP BY b ORDER BY count(*) LIMIT 1");

    let e = err("SELECT a, count(*) FROM t", ErrorKind::GroupingError);
    assert_eq!(
        e.to_string(),
        "column \"t.a\" must appear in the GROUP BY clause or be used in an aggregate function"
    );
    err("SELECT * FROM t GROUP BY a", ErrorKind::GroupingError);
    err("SELECT sum(count(*)) FROM t", ErrorKind::GroupingError);
    err(
        "SELECT a FROM t GROUP BY count(*)",
        ErrorKind::GroupingError,
    );
    err(
        "SELECT a FROM t GROUP BY 5",
        ErrorKind::InvalidColumnReference,
    );
    query("SELECT array_agg(b ORDER BY a DESC) FILTER (WHERE a > 1) FROM t");
    err(
        "SELECT array_agg(ARRAY[a]) FROM t",
        ErrorKind::FeatureNotSupported,
    );
    err(
        "SELECT array_agg(DISTINCT b ORDER BY a) FROM t",
        ErrorKind::InvalidColumnReference,
    );
    query("SELECT a, string_agg(b, ',' ORDER BY b DESC) FILTER (WHERE a > 1) FROM t GROUP BY a");
    err(
        "SELECT ntile(2) OVER () FROM t",
        ErrorKind::FeatureNotSupported,
    );
    err(
        "SELECT a FROM t WHERE count(*) OVER () > 1",
        ErrorKind::WindowingError,
    );
    err(
        "SELECT sum(count(*) OVER ()) FROM t",
        ErrorKind::GroupingError,
    );
}

#[test]
fn distinct_union_values() {
    if !expr_ready() {
        return;
    }
    let plan = query_named("SELECT DISTINCT a, b FROM t", &["a", "b"]);
    assert_eq!(shape(&plan), "Aggregate 2+0\n  Project 2\n    Scan t\n");
    err(
        "SELECT DISTINCT a FROM t ORDER BY b",
        ErrorKind::InvalidColumnReference,
    );

    let plan = query_named(
        "SELECT a FROM t UNION ALL SELECT k FROM u UNION ALL SELECT 1",
        &["a"],
    );
    assert!(shape(&plan).starts_with("Union 3"), "{}", shape(&plan));
    assert_eq!(plan.types(), vec![DataType::Int64]);

    let (plan, _) = query("SELECT a FROM t UNION SELECT NULL ORDER BY 1 LIMIT 2");
    assert!(
        shape(&plan).starts_with("TopN Some(2) 0\n  Aggregate 1+0\n  "),
        "{}",
        shape(&plan)
    );
    assert_eq!(plan.types(), vec![DataType::Int32]);
    err(
        "SELECT a FROM t UNION SELECT a, b FROM t",
        ErrorKind::SyntaxError,
    );
    err(
        "SELECT a FROM t UNION SELECT true",
        ErrorKind::DatatypeMismatch,
    );

    let plan = query_named("VALUES (1, 'a'), (2, NULL)", &["column1", "column2"]);
    assert_eq!(plan.types(), vec![DataType::Int32, DataType::Varchar]);
    query("SELECT * FROM (VALUES (1), (2.5)) v(x) WHERE x > 1");
}

#[test]
fn joins_on_split_keys() {
    if !expr_ready() {
        return;
    }
    let (plan, _) = query("SELECT t.b, u.x FROM t JOIN u ON t.a = u.a AND u.x > 1.0");
    let s = shape(&plan);
    assert!(s.contains("Join Inner on=[(0, 0)] cond"), "{s}");
    // Keys of different types get a common type through extra columns.
    let (plan, _) = query("SELECT * FROM t LEFT JOIN u ON u.k = t.a");
    let s = shape(&plan);
    assert!(s.contains("Join Left on=[(5, 2)]"), "{s}");
    assert!(s.starts_with("Project 7\n  Project 8\n    Join"), "{s}");
    // Comma joins take their keys from WHERE.
    let (plan, _) = query("SELECT * FROM t, u WHERE t.a = u.a AND t.b = 'x'");
    let s = shape(&plan);
    assert!(s.contains("Filter\n    Join Inner on=[(0, 0)]"), "{s}");
    query("SELECT * FROM t RIGHT JOIN u ON t.a = u.a FULL OUTER JOIN mv ON mv.a = u.a");
    err("SELECT * FROM t JOIN u ON t.a", ErrorKind::DatatypeMismatch);
    err(
        "SELECT * FROM t JOIN u ON count(*) > 1",
        ErrorKind::GroupingError,
    );
}

#[test]
fn param_inference_from_context() {
    if !expr_ready() {
        return;
    }
    let infer = |sql: &str| {
        let stmts = parse(sql).unwrap();
        describe(&stmts[0], &MockCatalog::new(), &[]).unwrap().1
    };
    use DataType::*;
    assert_eq!(infer("SELECT * FROM t WHERE a = $1"), vec![Int32]);
    assert_eq!(
        infer("SELECT * FROM t WHERE d > $2 AND c = $1"),
        vec![Int64, Date]
    );
    assert_eq!(infer("SELECT $1 + c FROM t"), vec![Int64]);
    assert_eq!(infer("SELECT $1::date"), vec![Date]);
    assert_eq!(infer("SELECT a FROM t LIMIT $1"), vec![Int64]);
    assert_eq!(
        infer("UPDATE t SET c = $1 WHERE b = $2"),
        vec![Int64, Varchar]
    );
}
