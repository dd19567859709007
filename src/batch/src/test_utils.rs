//! Test fixtures: a mock [`ScanSource`] over rows written as text, and small
//! plan and expression builders.
//!
//! Rows are written one per line, values separated by whitespace, `.` for
//! NULL (the chunk fixture format without the op column).

use ebbflow_common::ErrorKind;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{BatchError, ScanSource};
use ebbflow_common::text::{format_datum, parse_datum};
use ebbflow_common::{DataType, Datum, Field, Row, ScalarValue};
use ebbflow_expr::Expr;
use ebbflow_meta::catalog::{ColumnDesc, RelationDesc, RelationKind};
use ebbflow_planner::logical::LogicalPlan;

/// Relations by name, each with its rows.
#[derive(Default)]
pub struct MockSource {
    pub tables: HashMap<String, (Arc<RelationDesc>, Vec<Row>)>,
}

impl MockSource {
    pub fn new() -> Self {
        MockSource::default()
    }

    /// Add relation `name` with columns `c0, c1, ...` of `types`.
    pub fn with_table(mut self, name: &str, types: &[DataType], rows: &str) -> Self {
        let desc = RelationDesc {
            id: self.tables.len() as u32 + 1,
            name: name.to_string(),
            kind: RelationKind::Table,
            columns: types
                .iter()
                .enumerate()
                .map(|(i, t)| ColumnDesc::new(format!("c{i}"), *t))
                .collect(),
            pk: vec![],
            user_pk: false,
            definition: None,
            with_options: BTreeMap::new(),
            append_only: false,
            watermark: None,
            on_conflict: Default::default(),
        };
        self.tables
            .insert(name.to_string(), (Arc::new(desc), parse_rows(rows, types)));
        self
    }

    pub fn scan_plan(&self, name: &str) -> LogicalPlan {
        LogicalPlan::Scan {
            relation: self.tables[name].0.clone(),
        }
    }
}

impl ScanSource for MockSource {
    fn scan(&self, relation: &RelationDesc) -> Result<Vec<Row>, BatchError> {
        self.tables
            .get(&relation.name)
            .map(|(_, rows)| rows.clone())
            .ok_or_else(|| {
                BatchError::new(
                    ErrorKind::UndefinedTable,
                    format!("no relation {}", relation.name),
                )
            })
    }
}

pub fn parse_rows(text: &str, types: &[DataType]) -> Vec<Row> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|line| {
            let row: Row = line
                .split_whitespace()
                .zip(types)
                .map(|(s, ty)| {
                    (s != ".").then(|| {
                        parse_datum(*ty, s).unwrap_or_else(|e| panic!("bad value {s:?}: {e}"))
                    })
                })
                .collect();
            assert_eq!(row.len(), types.len(), "wrong arity in {line:?}");
            row
        })
        .collect()
}

pub fn format_row(row: &[Datum]) -> String {
    row.iter()
        .map(|d| d.as_ref().map(format_datum).unwrap_or_else(|| ".".into()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn normalize(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

/// Compare as multisets (row order unspecified).
pub fn assert_rows(rows: &[Row], expected: &str) {
    let mut got: Vec<String> = rows.iter().map(|r| format_row(r)).collect();
    let mut want = normalize(expected);
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

/// Compare in order.
pub fn assert_rows_ordered(rows: &[Row], expected: &str) {
    let got: Vec<String> = rows.iter().map(|r| format_row(r)).collect();
    assert_eq!(got, normalize(expected));
}

pub fn col(index: usize, ty: DataType) -> Expr {
    Expr::input_ref(index, ty)
}

pub fn lit(value: Datum, ty: DataType) -> Expr {
    Expr::literal(value, ty)
}

pub fn int(v: i32) -> Expr {
    lit(Some(ScalarValue::Int32(v)), DataType::Int32)
}

pub fn null(ty: DataType) -> Expr {
    lit(None, ty)
}

pub fn boolean(v: Option<bool>) -> Expr {
    lit(v.map(ScalarValue::Boolean), DataType::Boolean)
}

pub fn project(input: LogicalPlan, exprs: Vec<Expr>) -> LogicalPlan {
    let fields = exprs
        .iter()
        .enumerate()
        .map(|(i, e)| Field::new(format!("p{i}"), e.return_type()))
        .collect();
    LogicalPlan::Project {
        input: Box::new(input),
        exprs,
        fields,
    }
}

pub fn filter(input: LogicalPlan, predicate: Expr) -> LogicalPlan {
    LogicalPlan::Filter {
        input: Box::new(input),
        predicate,
    }
}
