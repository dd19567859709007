//! Names, scopes, derived tables, literals, ORDER BY/LIMIT and parameters:
//! what binds without the expression library.

use super::*;
use ebbflow_common::ErrorKind;

#[test]
fn select_star_and_names() {
    let plan = query_named("SELECT * FROM t", &["a", "b", "c", "d"]);
    assert_eq!(shape(&plan), "Project 4\n  Scan t\n");
    assert_eq!(plan.types().len(), 4);

    query_named(
        "SELECT T.a, x.b AS \"B\", c bee FROM t AS x, u AS T",
        &["a", "B", "bee"],
    );

    query_named("SELECT u.*, t.a FROM t, u", &["a", "x", "k", "a"]);
}

#[test]
fn unknown_names() {
    let e = err("SELECT * FROM nope", ErrorKind::UndefinedTable);
    assert_eq!(e.to_string(), "relation \"nope\" does not exist");
    let e = err("SELECT zz FROM t", ErrorKind::UndefinedColumn);
    assert_eq!(e.to_string(), "column \"zz\" does not exist");
    err("SELECT t.zz FROM t", ErrorKind::UndefinedColumn);
    err("SELECT q.a FROM t", ErrorKind::UndefinedTable);
    let e = err("SELECT a FROM t, u", ErrorKind::AmbiguousColumn);
    assert!(e.to_string().contains("ambiguous"), "{}", e.to_string());
    // Hidden columns cannot be named.
    err("SELECT _row_id FROM t", ErrorKind::UndefinedColumn);
    err("SELECT * FROM t, t", ErrorKind::DuplicateAlias);
    // Identifier case folding.
    query("SELECT A, \"b\" FROM T");
    err("SELECT \"A\" FROM t", ErrorKind::UndefinedColumn);
    err("SELECT *", ErrorKind::SyntaxError);
}

#[test]
fn system_relations_found_unqualified_and_qualified() {
    let plan = query_named("SELECT name FROM rw_tables", &["name"]);
    assert!(shape(&plan).contains("Scan rw_tables"));
    query("SELECT name FROM rw_catalog.rw_tables");
    err("SELECT * FROM rw_catalog.t", ErrorKind::UndefinedTable);
}

#[test]
fn derived_tables_and_ctes() {
    let plan = query_named("SELECT s.z FROM (SELECT a AS z FROM t) AS s", &["z"]);
    assert_eq!(shape(&plan), "Project 1\n  Project 1\n    Scan t\n");
    query_named("SELECT * FROM (SELECT a, b FROM t) s(p, q)", &["p", "q"]);
    err(
        "SELECT a FROM (SELECT a AS z FROM t) s",
        ErrorKind::UndefinedColumn,
    );
    query_named("WITH w(v) AS (SELECT a FROM t) SELECT v FROM w", &["v"]);
    err(
        "WITH RECURSIVE w AS (SELECT 1) SELECT * FROM w",
        ErrorKind::FeatureNotSupported,
    );
}

#[test]
fn select_without_from() {
    let plan = query_named(
        "SELECT 1, 'x' AS s, NULL, true",
        &["?column?", "s", "?column?", "bool"],
    );
    assert_eq!(shape(&plan), "Project 4\n  Values 1\n");
    assert_eq!(
        plan.types(),
        vec![
            DataType::Int32,
            DataType::Varchar,
            DataType::Varchar,
            DataType::Boolean
        ]
    );
}

#[test]
fn number_literals() {
    let (plan, _) = query("SELECT 1, 3000000000, 100000000000000000000, 1.5, 1e3, -2147483648");
    assert_eq!(
        plan.types(),
        vec![
            DataType::Int32,
            DataType::Int64,
            DataType::Decimal,
            DataType::Decimal,
            DataType::Decimal,
            DataType::Int32
        ]
    );
}

#[test]
fn order_by_and_limit_on_columns() {
    let plan = query_named(
        "SELECT a, b FROM t ORDER BY 2 DESC, a LIMIT 10 OFFSET 5",
        &["a", "b"],
    );
    let LogicalPlan::TopN {
        order,
        limit,
        offset,
        ..
    } = &plan
    else {
        panic!("{plan}")
    };
    assert_eq!(*limit, Some(10));
    assert_eq!(*offset, 5);
    assert_eq!(order.len(), 2);
    assert!(order[0].desc && order[0].nulls_first);
    assert!(!order[1].desc && !order[1].nulls_first && order[1].index == 0);

    // An ORDER BY column not in the select list is a helper column,
    // dropped by a final Project.
    let plan = query_named("SELECT b FROM t ORDER BY c NULLS FIRST", &["b"]);
    assert_eq!(
        shape(&plan),
        "Project 1\n  TopN None 0\n    Project 2\n      Scan t\n"
    );
    assert_eq!(plan.types(), vec![DataType::Varchar]);

    let (plan, _) = query("SELECT a FROM t LIMIT 3");
    assert!(
        matches!(plan, LogicalPlan::TopN { limit: Some(3), ref order, .. } if order.is_empty())
    );
    err(
        "SELECT a FROM t ORDER BY 3",
        ErrorKind::InvalidColumnReference,
    );
    err(
        "SELECT a FROM t LIMIT -1",
        ErrorKind::InvalidRowCountInLimitClause,
    );
    err(
        "SELECT a, b AS a FROM t ORDER BY a",
        ErrorKind::AmbiguousColumn,
    );
}

#[test]
fn params_declared_and_default() {
    let stmts = parse("SELECT $1, $2").unwrap();
    let (_, types) = describe(&stmts[0], &MockCatalog::new(), &[Some(DataType::Int64)]).unwrap();
    assert_eq!(types, vec![DataType::Int64, DataType::Varchar]);
    let stmts = parse("INSERT INTO t (a, d) VALUES ($1, $2)").unwrap();
    let (_, types) = describe(&stmts[0], &MockCatalog::new(), &[]).unwrap();
    assert_eq!(types, vec![DataType::Int32, DataType::Date]);

    let params = ParamContext {
        types: vec![None, None],
        values: Some(vec![
            Some(ScalarValue::varchar("7")),
            Some(ScalarValue::varchar("hello")),
        ]),
    };
    match bind_with("INSERT INTO t (a, b) VALUES ($1, $2)", &params).unwrap() {
        BoundStatement::Insert { source, .. } => {
            let LogicalPlan::Values { rows, .. } = source else {
                panic!()
            };
            assert_eq!(
                rows[0][0],
                Expr::literal(Some(ScalarValue::Int32(7)), DataType::Int32)
            );
        }
        other => panic!("{other:?}"),
    }
    let e = bind_with("SELECT $3", &params).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UndefinedParameter);
}

#[test]
fn client_functions_and_oid_casts() {
    // now() is the statement's time in a query, refused in an MV.
    query("SELECT now(), current_timestamp, localtimestamp, current_user");
    let e = err(
        "CREATE MATERIALIZED VIEW v AS SELECT a, now() FROM t",
        ErrorKind::FeatureNotSupported,
    );
    assert!(e.to_string().contains("now()"), "{}", e.to_string());
    // A name cast to regclass is resolved while binding.
    let e = err("SELECT 'nope'::regclass", ErrorKind::UndefinedTable);
    assert_eq!(e.to_string(), "relation \"nope\" does not exist");
    err("SELECT 'nosuchtype'::regtype", ErrorKind::UndefinedObject);
    query("SELECT 't'::regclass, 23::regtype, '5'::oid, format_type(23, -1)");
    err("SELECT version(1)", ErrorKind::UndefinedFunction);
    // Subqueries over always-empty catalogs fold; others are refused.
    query("SELECT exists(SELECT 1 FROM pg_catalog.pg_trigger)");
    err(
        "SELECT (SELECT count(*) FROM pg_catalog.pg_inherits)",
        ErrorKind::FeatureNotSupported,
    );
}
