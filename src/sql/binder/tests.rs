//! Binder tests over a small in-memory catalog.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::common::{DataType, ScalarValue};
use crate::expr::{AggKind, Expr};
use crate::meta::catalog::{CatalogReader, ColumnDesc, RelationDesc, RelationKind};
use crate::planner::logical::LogicalPlan;
use crate::sql::bound::ParallelismTarget;
use crate::sql::{bind, describe, parse, BoundStatement, ParallelismSpec, ParamContext, SqlError};

struct MockCatalog {
    relations: Vec<(Option<&'static str>, Arc<RelationDesc>)>,
}

fn rel(
    id: u32,
    name: &str,
    kind: RelationKind,
    columns: Vec<ColumnDesc>,
    pk: Vec<usize>,
) -> Arc<RelationDesc> {
    Arc::new(RelationDesc {
        id,
        name: name.into(),
        kind,
        columns,
        pk,
        user_pk: false,
        definition: None,
        with_options: BTreeMap::new(),
    })
}

impl MockCatalog {
    fn new() -> Self {
        use DataType::*;
        let c = ColumnDesc::new;
        MockCatalog {
            relations: vec![
                (
                    None,
                    rel(
                        1,
                        "t",
                        RelationKind::Table,
                        vec![
                            c("a", Int32),
                            c("b", Varchar),
                            c("c", Int64),
                            c("d", Date),
                            ColumnDesc::hidden("_row_id", Int64),
                        ],
                        vec![4],
                    ),
                ),
                (
                    None,
                    rel(
                        2,
                        "u",
                        RelationKind::Table,
                        vec![c("a", Int32), c("x", Float64), c("k", Int64)],
                        vec![2],
                    ),
                ),
                (
                    None,
                    rel(
                        3,
                        "mv",
                        RelationKind::MaterializedView,
                        vec![c("a", Int32), c("cnt", Int64)],
                        vec![0],
                    ),
                ),
                (
                    Some("rw_catalog"),
                    rel(
                        100,
                        "rw_tables",
                        RelationKind::System,
                        vec![c("id", Int32), c("name", Varchar)],
                        vec![],
                    ),
                ),
                (
                    Some("rw_catalog"),
                    rel(
                        101,
                        "rw_materialized_views",
                        RelationKind::System,
                        vec![c("id", Int32), c("name", Varchar), c("definition", Varchar)],
                        vec![],
                    ),
                ),
            ],
        }
    }
}

impl CatalogReader for MockCatalog {
    fn relation(&self, schema: Option<&str>, name: &str) -> Option<Arc<RelationDesc>> {
        let find = |s: Option<&str>| {
            self.relations
                .iter()
                .find(|(rs, r)| *rs == s && r.name == name)
                .map(|(_, r)| r.clone())
        };
        match schema {
            None => find(None).or_else(|| find(Some("rw_catalog"))),
            Some("public") => find(None),
            Some(s) => find(Some(s)),
        }
    }
}

fn bind_with(sql: &str, params: &ParamContext) -> Result<BoundStatement, SqlError> {
    let stmts = parse(sql)?;
    assert_eq!(stmts.len(), 1, "{sql}");
    bind(&stmts[0], &MockCatalog::new(), params)
}

fn bind_sql(sql: &str) -> Result<BoundStatement, SqlError> {
    bind_with(sql, &ParamContext::default())
}

fn ok(sql: &str) -> BoundStatement {
    bind_sql(sql).unwrap_or_else(|e| panic!("{sql}: {} {}", e.code, e.message))
}

fn query(sql: &str) -> (LogicalPlan, Vec<String>) {
    match ok(sql) {
        BoundStatement::Query { plan, names } => (plan, names),
        other => panic!("{sql}: not a query: {other:?}"),
    }
}

#[track_caller]
fn err(sql: &str, code: &str) -> SqlError {
    match bind_sql(sql) {
        Ok(b) => panic!("{sql}: expected {code}, bound {b:?}"),
        Err(e) => {
            assert_eq!(e.code, code, "{sql}: {}", e.message);
            e
        }
    }
}

/// The plan's node kinds, indented, for shape assertions.
fn shape(plan: &LogicalPlan) -> String {
    fn go(p: &LogicalPlan, depth: usize, out: &mut String) {
        let name = match p {
            LogicalPlan::Scan { relation } => format!("Scan {}", relation.name),
            LogicalPlan::Values { rows, .. } => format!("Values {}", rows.len()),
            LogicalPlan::Project { exprs, .. } => format!("Project {}", exprs.len()),
            LogicalPlan::Filter { .. } => "Filter".into(),
            LogicalPlan::Aggregate { group_by, aggs, .. } => {
                format!("Aggregate {}+{}", group_by.len(), aggs.len())
            }
            LogicalPlan::Join {
                kind,
                on,
                condition,
                ..
            } => format!(
                "Join {kind:?} on={on:?}{}",
                if condition.is_some() { " cond" } else { "" }
            ),
            LogicalPlan::Union { inputs } => format!("Union {}", inputs.len()),
            LogicalPlan::TopN { limit, offset, .. } => format!("TopN {limit:?} {offset}"),
        };
        out.push_str(&"  ".repeat(depth));
        out.push_str(&name);
        out.push('\n');
        for c in p.children() {
            go(c, depth + 1, out);
        }
    }
    let mut s = String::new();
    go(plan, 0, &mut s);
    s
}

/// Whether the expression library is merged (the `expr` branch): tests
/// that type operators and aggregates skip themselves until it is.
fn expr_ready() -> bool {
    let one = || Expr::literal(Some(ScalarValue::Int32(1)), DataType::Int32);
    let ready = crate::expr::build_func(crate::expr::Func::Add, vec![one(), one()]).is_ok();
    if !ready {
        eprintln!("skipped: the expression library is not merged yet");
    }
    ready
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

// ---- names, scopes, errors that do not need the expression library ----

#[test]
fn select_star_and_names() {
    let (plan, n) = query("SELECT * FROM t");
    assert_eq!(n, names(&["a", "b", "c", "d"]));
    assert_eq!(shape(&plan), "Project 4\n  Scan t\n");
    assert_eq!(plan.types().len(), 4);

    let (_, n) = query("SELECT T.a, x.b AS \"B\", c bee FROM t AS x, u AS T");
    assert_eq!(n, names(&["a", "B", "bee"]));

    let (_, n) = query("SELECT u.*, t.a FROM t, u");
    assert_eq!(n, names(&["a", "x", "k", "a"]));
}

#[test]
fn unknown_names() {
    let e = err("SELECT * FROM nope", "42P01");
    assert_eq!(e.message, "relation \"nope\" does not exist");
    let e = err("SELECT zz FROM t", "42703");
    assert_eq!(e.message, "column \"zz\" does not exist");
    err("SELECT t.zz FROM t", "42703");
    err("SELECT q.a FROM t", "42P01");
    let e = err("SELECT a FROM t, u", "42702");
    assert!(e.message.contains("ambiguous"), "{}", e.message);
    // Hidden columns cannot be named.
    err("SELECT _row_id FROM t", "42703");
    err("SELECT * FROM t, t", "42712");
    // Identifier case folding.
    query("SELECT A, \"b\" FROM T");
    err("SELECT \"A\" FROM t", "42703");
    err("SELECT *", "42601");
}

#[test]
fn system_relations_found_unqualified_and_qualified() {
    let (plan, n) = query("SELECT name FROM rw_tables");
    assert_eq!(n, names(&["name"]));
    assert!(shape(&plan).contains("Scan rw_tables"));
    query("SELECT name FROM rw_catalog.rw_tables");
    err("SELECT * FROM rw_catalog.t", "42P01");
}

#[test]
fn derived_tables_and_ctes() {
    let (plan, n) = query("SELECT s.z FROM (SELECT a AS z FROM t) AS s");
    assert_eq!(n, names(&["z"]));
    assert_eq!(shape(&plan), "Project 1\n  Project 1\n    Scan t\n");
    let (_, n) = query("SELECT * FROM (SELECT a, b FROM t) s(p, q)");
    assert_eq!(n, names(&["p", "q"]));
    err("SELECT a FROM (SELECT a AS z FROM t) s", "42703");
    let (_, n) = query("WITH w(v) AS (SELECT a FROM t) SELECT v FROM w");
    assert_eq!(n, names(&["v"]));
    err("WITH RECURSIVE w AS (SELECT 1) SELECT * FROM w", "0A000");
}

#[test]
fn select_without_from() {
    let (plan, n) = query("SELECT 1, 'x' AS s, NULL, true");
    assert_eq!(n, names(&["?column?", "s", "?column?", "bool"]));
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
fn ddl_create_table() {
    match ok("CREATE TABLE IF NOT EXISTS Foo (id INT PRIMARY KEY, name VARCHAR NOT NULL, \"Amount\" numeric(10,2), f double precision, g float4, ts timestamp without time zone, iv interval, s text, b boolean, sm int2) WITH (connector = 'datagen', Rows_Per_Second = 10)") {
        BoundStatement::CreateTable {
            name,
            columns,
            pk,
            with_options,
            if_not_exists,
        } => {
            assert_eq!(name, "foo");
            assert!(if_not_exists);
            assert_eq!(pk, vec![0]);
            let n: Vec<_> = columns.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(
                n,
                ["id", "name", "Amount", "f", "g", "ts", "iv", "s", "b", "sm"]
            );
            use DataType::*;
            let t: Vec<_> = columns.iter().map(|c| c.data_type).collect();
            assert_eq!(
                t,
                [Int32, Varchar, Decimal, Float64, Float32, Timestamp, Interval, Varchar, Boolean, Int16]
            );
            assert_eq!(with_options.get("connector").map(String::as_str), Some("datagen"));
            assert_eq!(with_options.get("rows_per_second").map(String::as_str), Some("10"));
        }
        other => panic!("{other:?}"),
    }
    match ok("CREATE TABLE p (a int, b int, PRIMARY KEY (b, a))") {
        BoundStatement::CreateTable { pk, .. } => assert_eq!(pk, vec![1, 0]),
        other => panic!("{other:?}"),
    }
    match ok("CREATE TABLE p (a int)") {
        BoundStatement::CreateTable { pk, .. } => assert!(pk.is_empty()),
        other => panic!("{other:?}"),
    }
    err("CREATE TABLE p (a int, A int)", "42701");
    let e = err("CREATE TABLE p (a json)", "0A000");
    assert!(e.message.contains("JSON"), "{}", e.message);
    err("CREATE TABLE p (a timestamp with time zone)", "0A000");
    err(
        "CREATE TABLE p (a int PRIMARY KEY, b int, PRIMARY KEY (b))",
        "42P16",
    );
    err("CREATE TABLE p (a int, PRIMARY KEY (z))", "42703");
    err("CREATE TABLE p AS SELECT 1", "0A000");
}

#[test]
fn ddl_create_mv() {
    match ok("CREATE MATERIALIZED VIEW IF NOT EXISTS m WITH (parallelism = 2) AS SELECT a, b AS bee FROM t") {
        BoundStatement::CreateMaterializedView {
            name,
            column_names,
            definition,
            with_options,
            if_not_exists,
            plan,
        } => {
            assert_eq!(name, "m");
            assert_eq!(column_names, names(&["a", "bee"]));
            assert_eq!(definition, "SELECT a, b AS bee FROM t");
            assert_eq!(with_options.get("parallelism").map(String::as_str), Some("2"));
            assert!(if_not_exists);
            assert_eq!(plan.types(), vec![DataType::Int32, DataType::Varchar]);
        }
        other => panic!("{other:?}"),
    }
    match ok("CREATE MATERIALIZED VIEW m (p, q) AS SELECT a, b FROM t") {
        BoundStatement::CreateMaterializedView { column_names, .. } => {
            assert_eq!(column_names, names(&["p", "q"]))
        }
        other => panic!("{other:?}"),
    }
    err("CREATE MATERIALIZED VIEW m AS SELECT a, a FROM t", "42701");
    err("CREATE VIEW m AS SELECT a FROM t", "0A000");
    match ok("EXPLAIN CREATE MATERIALIZED VIEW m AS SELECT a FROM t") {
        BoundStatement::Explain { inner } => {
            assert!(matches!(
                *inner,
                BoundStatement::CreateMaterializedView { .. }
            ))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn ddl_drop() {
    assert!(matches!(
        ok("DROP TABLE t"),
        BoundStatement::Drop {
            kind: RelationKind::Table,
            cascade: false,
            if_exists: false,
            ..
        }
    ));
    assert!(matches!(
        ok("DROP MATERIALIZED VIEW IF EXISTS mv CASCADE"),
        BoundStatement::Drop {
            kind: RelationKind::MaterializedView,
            cascade: true,
            if_exists: true,
            ..
        }
    ));
    assert!(matches!(
        ok("DROP TABLE IF EXISTS nope"),
        BoundStatement::Drop {
            if_exists: true,
            ..
        }
    ));
    let e = err("DROP TABLE mv", "42809");
    assert_eq!(e.message, "\"mv\" is not a table");
    assert!(e.hint.is_some());
    err("DROP MATERIALIZED VIEW t", "42809");
    let e = err("DROP TABLE nope", "42P01");
    assert_eq!(e.message, "table \"nope\" does not exist");
    err("DROP TABLE t, u", "0A000");
    err("DROP INDEX i", "0A000");
}

#[test]
fn dml_errors() {
    err("INSERT INTO nope VALUES (1)", "42P01");
    err("INSERT INTO mv VALUES (1, 2)", "42809");
    err("INSERT INTO t (zz) VALUES (1)", "42703");
    let e = err("INSERT INTO u VALUES (1, 2, 3, 4)", "42601");
    assert_eq!(e.message, "INSERT has more expressions than target columns");
    err("INSERT INTO u (a, x) VALUES (1)", "42601");
    err("INSERT INTO u (a, a) VALUES (1, 1)", "42701");
    err("INSERT INTO u VALUES (1) RETURNING a", "0A000");
    err("UPDATE u SET zz = 1", "42703");
    err("UPDATE mv SET a = 1", "42809");
    err("DELETE FROM t RETURNING a", "0A000");
    err("INSERT INTO t (_row_id) VALUES (1)", "42703");
}

#[test]
fn dml_shapes_without_operators() {
    match ok("INSERT INTO t (b, a) VALUES ('x', 1), (NULL, DEFAULT)") {
        BoundStatement::Insert { table, source } => {
            assert_eq!(table.name, "t");
            let LogicalPlan::Values { rows, fields } = &source else {
                panic!("{source:?}")
            };
            assert_eq!(fields.len(), 4, "visible columns only");
            assert_eq!(rows.len(), 2);
            assert_eq!(
                rows[0][0],
                Expr::literal(Some(ScalarValue::Int32(1)), DataType::Int32)
            );
            assert_eq!(
                rows[0][1],
                Expr::literal(Some(ScalarValue::varchar("x")), DataType::Varchar)
            );
            assert_eq!(rows[0][2], Expr::literal(None, DataType::Int64));
            assert_eq!(rows[1][0], Expr::literal(None, DataType::Int32));
        }
        other => panic!("{other:?}"),
    }
    match ok("INSERT INTO u SELECT a, x, k FROM u") {
        BoundStatement::Insert { source, .. } => {
            assert_eq!(shape(&source), "Project 3\n  Project 3\n    Scan u\n")
        }
        other => panic!("{other:?}"),
    }
    match ok("DELETE FROM t") {
        BoundStatement::Delete { filter: None, .. } => {}
        other => panic!("{other:?}"),
    }
    match ok("UPDATE t SET b = 'y', d = '2024-01-02'") {
        BoundStatement::Update {
            assignments,
            filter: None,
            ..
        } => {
            assert_eq!(assignments.len(), 2);
            assert_eq!(assignments[0].0, 1);
            assert_eq!(assignments[1].0, 3);
            assert_eq!(assignments[1].1.return_type(), DataType::Date);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn session_statements() {
    assert!(matches!(
        ok("SET streaming_parallelism TO 4"),
        BoundStatement::SetVariable { ref name, value: Some(ref v) } if name == "streaming_parallelism" && v == "4"
    ));
    assert!(matches!(
        ok("SET streaming_parallelism = DEFAULT"),
        BoundStatement::SetVariable { value: None, .. }
    ));
    assert!(matches!(
        ok("SET search_path = 'public'"),
        BoundStatement::SetVariable { value: Some(ref v), .. } if v == "public"
    ));
    assert!(matches!(ok("SHOW ALL"), BoundStatement::ShowAll));
    assert!(matches!(
        ok("SHOW Streaming_Parallelism"),
        BoundStatement::ShowVariable { ref name } if name == "streaming_parallelism"
    ));
    for (sql, tag) in [
        ("BEGIN", "BEGIN"),
        ("START TRANSACTION", "START TRANSACTION"),
        ("COMMIT", "COMMIT"),
        ("ROLLBACK", "ROLLBACK"),
    ] {
        match ok(sql) {
            BoundStatement::TransactionControl { tag: t } => assert_eq!(t, tag),
            other => panic!("{other:?}"),
        }
    }
    match ok("DESCRIBE t") {
        BoundStatement::Query { plan, names: n } => {
            assert_eq!(n, names(&["Name", "Type"]));
            let LogicalPlan::Values { rows, .. } = plan else {
                panic!()
            };
            assert_eq!(rows.len(), 4, "hidden column not described");
            assert_eq!(
                rows[3][1],
                Expr::literal(Some(ScalarValue::varchar("date")), DataType::Varchar)
            );
        }
        other => panic!("{other:?}"),
    }
    err("DESCRIBE nope", "42P01");
}

#[test]
fn show_relations_queries() {
    for sql in ["SHOW TABLES", "SHOW MATERIALIZED VIEWS"] {
        match ok(sql) {
            BoundStatement::Query { plan, names: n } => {
                assert_eq!(n, names(&["Name"]));
                assert!(matches!(plan, LogicalPlan::TopN { .. }), "{plan}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn ebbflow_statements() {
    match ok("ALTER MATERIALIZED VIEW mv SET PARALLELISM = 3") {
        BoundStatement::AlterParallelism {
            target: ParallelismTarget::Relation(r),
            parallelism: ParallelismSpec::Fixed(3),
        } => assert_eq!(r.name, "mv"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        ok("ALTER TABLE t SET PARALLELISM TO ADAPTIVE"),
        BoundStatement::AlterParallelism {
            parallelism: ParallelismSpec::Adaptive,
            ..
        }
    ));
    assert!(matches!(
        ok("ALTER FRAGMENT 7 SET PARALLELISM = 1"),
        BoundStatement::AlterParallelism {
            target: ParallelismTarget::Fragment(7),
            ..
        }
    ));
    let e = err("ALTER TABLE mv SET PARALLELISM = 2", "42809");
    assert_eq!(e.message, "\"mv\" is not a table");
    err("ALTER MATERIALIZED VIEW t SET PARALLELISM = 2", "42809");
    err("ALTER MATERIALIZED VIEW nope SET PARALLELISM = 2", "42P01");
    assert!(matches!(ok("FLUSH"), BoundStatement::Flush));
    assert!(matches!(ok("SHOW CLUSTER"), BoundStatement::ShowCluster));
    assert!(matches!(
        ok("SHOW FRAGMENTS FOR mv"),
        BoundStatement::ShowFragments { name: Some(_) }
    ));
    err("SHOW ACTORS FOR nope", "42P01");
    assert!(matches!(
        ok("ALTER SYSTEM RESCHEDULE '1-[0]+[2]' DRY RUN"),
        BoundStatement::Reschedule { dry_run: true, .. }
    ));
    assert!(matches!(
        ok("ALTER SYSTEM RESCHEDULE DRAIN WORKER 1"),
        BoundStatement::DrainWorker { worker_id: 1, .. }
    ));
    assert!(matches!(
        ok("ALTER SYSTEM ADD WORKER WITH (parallel_units = 2)"),
        BoundStatement::AddWorker {
            parallel_units: Some(2)
        }
    ));
    assert!(matches!(
        ok("ALTER SYSTEM REMOVE WORKER 2"),
        BoundStatement::RemoveWorker { worker_id: 2 }
    ));
    assert!(matches!(
        ok("ALTER SYSTEM SET barrier_interval_ms = 100"),
        BoundStatement::AlterSystemSet { .. }
    ));
}

#[test]
fn unsupported_features() {
    for sql in [
        "SELECT a FROM t WHERE a IN (SELECT a FROM u)",
        "SELECT (SELECT 1)",
        "SELECT EXISTS (SELECT 1)",
        "SELECT DISTINCT ON (a) a FROM t",
        "SELECT a FROM t INTERSECT SELECT a FROM u",
        "SELECT a FROM t EXCEPT SELECT a FROM u",
        "SELECT * FROM generate_series(1, 3)",
        "SELECT a FROM t FOR UPDATE",
        "CREATE INDEX i ON t (a)",
        "SELECT ARRAY[1]",
        "SELECT CAST(a AS json) FROM t",
        "SELECT * FROM t, LATERAL (SELECT 1) s",
    ] {
        let e = err(sql, "0A000");
        assert!(
            e.message.ends_with("is not supported"),
            "{sql}: {}",
            e.message
        );
    }
}

#[test]
fn order_by_and_limit_on_columns() {
    let (plan, n) = query("SELECT a, b FROM t ORDER BY 2 DESC, a LIMIT 10 OFFSET 5");
    assert_eq!(n, names(&["a", "b"]));
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
    let (plan, n) = query("SELECT b FROM t ORDER BY c NULLS FIRST");
    assert_eq!(n, names(&["b"]));
    assert_eq!(
        shape(&plan),
        "Project 1\n  TopN None 0\n    Project 2\n      Scan t\n"
    );
    assert_eq!(plan.types(), vec![DataType::Varchar]);

    let (plan, _) = query("SELECT a FROM t LIMIT 3");
    assert!(
        matches!(plan, LogicalPlan::TopN { limit: Some(3), ref order, .. } if order.is_empty())
    );
    err("SELECT a FROM t ORDER BY 3", "42P10");
    err("SELECT a FROM t LIMIT -1", "2201W");
    err("SELECT a, b AS a FROM t ORDER BY a", "42702");
}

#[test]
fn joins_using() {
    if !expr_ready() {
        return;
    }
    let (plan, n) = query("SELECT * FROM t JOIN u USING (a)");
    assert_eq!(n, names(&["a", "b", "c", "d", "x", "k"]));
    assert!(
        shape(&plan).contains("Join Inner on=[(0, 0)]"),
        "{}",
        shape(&plan)
    );
    query("SELECT a, t.a, u.a FROM t JOIN u USING (a)");
    let (plan, n) = query("SELECT * FROM t FULL JOIN u USING (a)");
    assert_eq!(n[0], "a");
    assert!(shape(&plan).contains("Join Full"), "{}", shape(&plan));
    err("SELECT * FROM t JOIN u USING (zz)", "42703");
    let (_, n) = query("SELECT * FROM t NATURAL JOIN u");
    assert_eq!(n, names(&["a", "b", "c", "d", "x", "k"]));
    err("SELECT * FROM t LEFT JOIN u", "42601");
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
    assert_eq!(e.code, "42P02");
}

// ---- tests that need the expression library (build_func & co) ----

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
    err("SELECT a FROM t WHERE a", "42804");
    err("SELECT a FROM t WHERE count(*) > 1", "42803");
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
    err("SELECT a + true FROM t", "42883");
    err("SELECT nosuchfn(a) FROM t", "42883");
    err("SELECT CASE WHEN 1 THEN 2 END", "42804");
    err("SELECT CASE WHEN true THEN 1 ELSE true END", "42804");
}

#[test]
fn aggregates_shape_and_errors() {
    if !expr_ready() {
        return;
    }
    let (plan, n) = query("SELECT b, count(*), sum(a), count(DISTINCT c) FROM t GROUP BY b");
    assert_eq!(n, names(&["b", "count", "sum", "count"]));
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
    let (plan, n) = query(
        "SELECT a + 1 AS k, max(c) FROM t WHERE b <> '' GROUP BY 1 HAVING count(*) > 1 ORDER BY max(c) DESC, k",
    );
    assert_eq!(n, names(&["k", "max"]));
    assert_eq!(
        shape(&plan),
        "TopN None 0\n  Project 2\n    Filter\n      Aggregate 1+2\n        Project 2\n          Filter\n            Scan t\n"
    );
    query("SELECT a + 1 AS k FROM t GROUP BY k");
    query("SELECT a + 1 FROM t GROUP BY a + 1");
    query("SELECT a + 1 FROM t GROUP BY a");
    query("SELECT b, count(*) FROM t GROUP BY b ORDER BY count(*) LIMIT 1");

    let e = err("SELECT a, count(*) FROM t", "42803");
    assert_eq!(
        e.message,
        "column \"t.a\" must appear in the GROUP BY clause or be used in an aggregate function"
    );
    err("SELECT * FROM t GROUP BY a", "42803");
    err("SELECT sum(count(*)) FROM t", "42803");
    err("SELECT a FROM t GROUP BY count(*)", "42803");
    err("SELECT a FROM t GROUP BY 5", "42P10");
    err("SELECT string_agg(b, ',') FROM t", "0A000");
    err("SELECT count(*) OVER () FROM t", "0A000");
}

#[test]
fn distinct_union_values() {
    if !expr_ready() {
        return;
    }
    let (plan, n) = query("SELECT DISTINCT a, b FROM t");
    assert_eq!(n, names(&["a", "b"]));
    assert_eq!(shape(&plan), "Aggregate 2+0\n  Project 2\n    Scan t\n");
    err("SELECT DISTINCT a FROM t ORDER BY b", "42P10");

    let (plan, n) = query("SELECT a FROM t UNION ALL SELECT k FROM u UNION ALL SELECT 1");
    assert_eq!(n, names(&["a"]));
    assert!(shape(&plan).starts_with("Union 3"), "{}", shape(&plan));
    assert_eq!(plan.types(), vec![DataType::Int64]);

    let (plan, _) = query("SELECT a FROM t UNION SELECT NULL ORDER BY 1 LIMIT 2");
    assert!(
        shape(&plan).starts_with("TopN Some(2) 0\n  Aggregate 1+0\n  "),
        "{}",
        shape(&plan)
    );
    assert_eq!(plan.types(), vec![DataType::Int32]);
    err("SELECT a FROM t UNION SELECT a, b FROM t", "42601");
    err("SELECT a FROM t UNION SELECT true", "42804");

    let (plan, n) = query("VALUES (1, 'a'), (2, NULL)");
    assert_eq!(n, names(&["column1", "column2"]));
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
    err("SELECT * FROM t JOIN u ON t.a", "42804");
    err("SELECT * FROM t JOIN u ON count(*) > 1", "42803");
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
