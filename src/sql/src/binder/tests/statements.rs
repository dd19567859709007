//! Session statements (SET, SHOW, transactions), `SHOW` of relations,
//! ebbflow's own statements (FLUSH, EXPLAIN, ALTER … PARALLELISM, RESCHEDULE)
//! and unsupported features.

use super::*;
use ebbflow_common::ErrorKind;

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
    err("DESCRIBE nope", ErrorKind::UndefinedTable);
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
    let e = err(
        "ALTER TABLE mv SET PARALLELISM = 2",
        ErrorKind::WrongObjectType,
    );
    assert_eq!(e.to_string(), "\"mv\" is not a table");
    err(
        "ALTER MATERIALIZED VIEW t SET PARALLELISM = 2",
        ErrorKind::WrongObjectType,
    );
    err(
        "ALTER MATERIALIZED VIEW nope SET PARALLELISM = 2",
        ErrorKind::UndefinedTable,
    );
    assert!(matches!(ok("FLUSH"), BoundStatement::Flush));
    assert!(matches!(ok("SHOW CLUSTER"), BoundStatement::ShowCluster));
    assert!(matches!(
        ok("SHOW FRAGMENTS FOR mv"),
        BoundStatement::ShowFragments { name: Some(_) }
    ));
    err("SHOW ACTORS FOR nope", ErrorKind::UndefinedTable);
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
fn exists_and_in_bind_as_semi_and_anti_joins() {
    let (plan, _) = query("SELECT a FROM t WHERE a IN (SELECT a FROM u) AND b = 'x'");
    assert!(
        shape(&plan).contains("Join LeftSemi on=[(0, 0)]\n"),
        "{}",
        shape(&plan)
    );
    // Correlated by equality: a hash key; by another comparison: the
    // condition. `NOT (EXISTS …)` is NOT EXISTS.
    let (plan, _) = query(
        "SELECT a FROM t WHERE NOT (EXISTS (SELECT 1 FROM u WHERE k = t.c AND u.x > t.a AND u.a > 0))",
    );
    let s = shape(&plan);
    assert!(s.contains("Join LeftAnti on=[(2, 0)] cond"), "{s}");
    assert!(s.contains("Filter"), "{s}");
    // NOT IN: an anti join on `(x = v) IS NOT FALSE`, no key.
    let (plan, names) = query("SELECT a, b FROM t WHERE a NOT IN (SELECT a FROM u)");
    assert_eq!(names, ["a", "b"]);
    assert!(
        shape(&plan).contains("Join LeftAnti on=[] cond"),
        "{}",
        shape(&plan)
    );
    err(
        "SELECT a FROM t WHERE a IN (SELECT a, x FROM u)",
        ErrorKind::SyntaxError,
    );
    err(
        "SELECT a FROM t WHERE a IN (SELECT nope FROM u)",
        ErrorKind::UndefinedColumn,
    );
    err(
        "SELECT a FROM t WHERE a IN (SELECT a FROM u WHERE u.a = t.nope)",
        ErrorKind::UndefinedColumn,
    );
    err(
        "SELECT a FROM t WHERE a IN (SELECT b FROM u)",
        ErrorKind::FeatureNotSupported,
    );
    err(
        "SELECT a FROM t WHERE b IN (SELECT a FROM u)",
        ErrorKind::UndefinedFunction,
    );
}

#[test]
fn unsupported_features() {
    for sql in [
        "SELECT a FROM t WHERE a IN (SELECT a FROM u) OR b = 'x'",
        "SELECT a IN (SELECT a FROM u) FROM t",
        "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a GROUP BY u.a)",
        "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a OR u.k = t.c)",
        "SELECT (SELECT max(u.a) FROM u WHERE u.a = t.a) FROM t",
        "SELECT EXISTS (SELECT 1)",
        "SELECT sum(a) OVER (ORDER BY a GROUPS 1 PRECEDING) FROM t",
        "SELECT a FROM t INTERSECT SELECT a FROM u",
        "SELECT a FROM t EXCEPT SELECT a FROM u",
        "SELECT * FROM unnest(ARRAY[1], ARRAY[2])",
        "SELECT unnest(ARRAY[1]) + 1",
        "SELECT a FROM t FOR UPDATE",
        "CREATE INDEX i ON t (a)",
        "SELECT ARRAY[ARRAY[1]]",
        "SELECT CAST(a AS xml) FROM t",
        "SELECT * FROM t, LATERAL (SELECT 1) s",
    ] {
        let e = err(sql, ErrorKind::FeatureNotSupported);
        assert!(e.to_string().ends_with("is not supported"), "{sql}: {}", e);
    }
}
