//! INSERT, UPDATE and DELETE.

use super::*;
use ebbflow_common::ErrorKind;

#[test]
fn dml_errors() {
    err("INSERT INTO nope VALUES (1)", ErrorKind::UndefinedTable);
    err("INSERT INTO mv VALUES (1, 2)", ErrorKind::WrongObjectType);
    err("INSERT INTO t (zz) VALUES (1)", ErrorKind::UndefinedColumn);
    let e = err("INSERT INTO u VALUES (1, 2, 3, 4)", ErrorKind::SyntaxError);
    assert_eq!(
        e.to_string(),
        "INSERT has more expressions than target columns"
    );
    err("INSERT INTO u (a, x) VALUES (1)", ErrorKind::SyntaxError);
    err(
        "INSERT INTO u (a, a) VALUES (1, 1)",
        ErrorKind::DuplicateColumn,
    );
    err(
        "INSERT INTO u VALUES (1) RETURNING a",
        ErrorKind::FeatureNotSupported,
    );
    err("UPDATE u SET zz = 1", ErrorKind::UndefinedColumn);
    err("UPDATE mv SET a = 1", ErrorKind::WrongObjectType);
    err("DELETE FROM t RETURNING a", ErrorKind::FeatureNotSupported);
    err(
        "INSERT INTO t (_row_id) VALUES (1)",
        ErrorKind::UndefinedColumn,
    );
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
