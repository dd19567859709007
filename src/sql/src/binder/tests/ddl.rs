//! CREATE TABLE, CREATE MATERIALIZED VIEW and DROP.

use super::*;
use ebbflow_common::ErrorKind;

#[test]
fn ddl_create_table() {
    match ok("CREATE TABLE IF NOT EXISTS Foo (id INT PRIMARY KEY, name VARCHAR NOT NULL, \"Amount\" numeric(10,2), f double precision, g float4, ts timestamp without time zone, iv interval, s text, b boolean, sm int2) WITH (connector = 'datagen', Rows_Per_Second = 10)") {
        BoundStatement::CreateTable {
            name,
            columns,
            pk,
            with_options,
            if_not_exists,
            append_only: false,
            watermark: None,
            ..
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
    err("CREATE TABLE p (a int, A int)", ErrorKind::DuplicateColumn);
    // `json` is stored as jsonb.
    match ok("CREATE TABLE p (a json, b jsonb)") {
        BoundStatement::CreateTable { columns, .. } => {
            assert!(columns.iter().all(|c| c.data_type == DataType::Jsonb))
        }
        other => panic!("{other:?}"),
    }
    let e = err("CREATE TABLE p (a xml)", ErrorKind::FeatureNotSupported);
    assert!(e.to_string().contains("xml"), "{}", e.to_string());
    match ok("CREATE TABLE p (a timestamp with time zone, b timestamptz)") {
        BoundStatement::CreateTable { columns, .. } => {
            assert!(columns.iter().all(|c| c.data_type == DataType::Timestamptz))
        }
        other => panic!("{other:?}"),
    }
    err(
        "CREATE TABLE p (a int PRIMARY KEY, b int, PRIMARY KEY (b))",
        ErrorKind::InvalidTableDefinition,
    );
    err(
        "CREATE TABLE p (a int, PRIMARY KEY (z))",
        ErrorKind::UndefinedColumn,
    );
    err("CREATE TABLE p AS SELECT 1", ErrorKind::FeatureNotSupported);
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
            views,
            emit_on_window_close: false,
        } => {
            assert!(views.is_empty());
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
    err(
        "CREATE MATERIALIZED VIEW m AS SELECT a, a FROM t",
        ErrorKind::DuplicateColumn,
    );
    err(
        "CREATE OR ALTER VIEW m AS SELECT a FROM t",
        ErrorKind::FeatureNotSupported,
    );
    assert!(matches!(
        ok("CREATE OR REPLACE VIEW m AS SELECT a FROM t"),
        BoundStatement::CreateView {
            or_replace: true,
            ..
        }
    ));
    match ok("CREATE VIEW m (x) AS SELECT a FROM t") {
        BoundStatement::CreateView {
            columns, upstreams, ..
        } => {
            assert_eq!(columns[0].name, "x");
            assert_eq!(upstreams.len(), 1);
        }
        other => panic!("{other:?}"),
    }
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
    let e = err("DROP TABLE mv", ErrorKind::WrongObjectType);
    assert_eq!(e.to_string(), "\"mv\" is not a table");
    assert!(e.hint().is_some());
    err("DROP MATERIALIZED VIEW t", ErrorKind::WrongObjectType);
    let e = err("DROP TABLE nope", ErrorKind::UndefinedTable);
    assert_eq!(e.to_string(), "table \"nope\" does not exist");
    err("DROP TABLE t, u", ErrorKind::FeatureNotSupported);
    err("DROP INDEX i", ErrorKind::FeatureNotSupported);
}
