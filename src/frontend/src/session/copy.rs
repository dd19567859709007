//! COPY: `FROM STDIN` turns the client's data into rows written as one
//! DML statement (every row or none: the data is parsed and checked in
//! full before anything is written); `TO STDOUT` runs the query and
//! encodes its rows.
//!
//! A bad line fails the whole COPY with PostgreSQL's error condition
//! (bad_copy_file_format for a wrong field count or quoting,
//! invalid_text_representation and friends for a bad value) and the place
//! in DETAIL, as PostgreSQL's CONTEXT reads: `COPY t, line 3, column v: "x"`.

use ebbflow_common::ErrorKind;
use std::sync::Arc;

use super::{command, FResult, LocalSession, MetaScan};
use crate::copy::{encode_row, parse};
use crate::{CopyIn, FrontendError, StatementResult};
use ebbflow_batch as batch;
use ebbflow_common::text::{format_datum, parse_datum};
use ebbflow_common::{Row, StreamChunk};
use ebbflow_meta::catalog::RelationDesc;
use ebbflow_planner::logical::LogicalPlan;
use ebbflow_sql::CopyOptions;

/// `e` with where it happened, as PostgreSQL's CONTEXT line has it.
fn at(e: FrontendError, table: &str, line: usize, column: Option<(&str, &str)>) -> FrontendError {
    let mut place = format!("COPY {table}, line {line}");
    if let Some((name, value)) = column {
        let shown: String = value.chars().take(64).collect();
        place.push_str(&format!(", column {name}: \"{shown}\""));
    }
    e.with_detail(place)
}

impl LocalSession {
    pub(super) fn copy_from(
        table: Arc<RelationDesc>,
        targets: Vec<usize>,
        options: CopyOptions,
    ) -> StatementResult {
        StatementResult::CopyIn(CopyIn {
            columns: targets.len(),
            table,
            targets,
            options,
        })
    }

    pub(super) async fn copy_to(
        &self,
        plan: &LogicalPlan,
        names: Vec<String>,
        options: &CopyOptions,
    ) -> FResult<StatementResult> {
        let scan = MetaScan::prefetch(&self.meta, || self.session_info(true), plan).await?;
        let rows = batch::execute(plan, &scan)?;
        let mut lines = Vec::with_capacity(rows.len() + 1);
        if options.header {
            let header: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
            lines.push(encode_row(&header, options));
        }
        for row in &rows {
            let fields: Vec<Option<String>> =
                row.iter().map(|d| d.as_ref().map(format_datum)).collect();
            lines.push(encode_row(&fields, options));
        }
        Ok(StatementResult::CopyOut {
            columns: names.len(),
            lines,
            tag: format!("COPY {}", rows.len()),
        })
    }

    /// Parse all of `data`, then write its rows as one statement.
    pub(super) async fn apply_copy(&self, copy: CopyIn, data: Vec<u8>) -> FResult<StatementResult> {
        let table = &copy.table;
        let records =
            parse(&data, &copy.options).map_err(|(line, e)| at(e, &table.name, line, None))?;
        let mut rows: Vec<Row> = Vec::with_capacity(records.len());
        for rec in records {
            // PostgreSQL takes a lone empty line of a one-column table as
            // one empty (or NULL, in csv) field, which `parse` already did.
            if rec.fields.len() > copy.targets.len() {
                let e = FrontendError::new(
                    ErrorKind::BadCopyFileFormat,
                    "extra data after last expected column",
                );
                return Err(at(e, &table.name, rec.line, None));
            }
            if rec.fields.len() < copy.targets.len() {
                let missing = &table.columns[copy.targets[rec.fields.len()]].name;
                let e = FrontendError::new(
                    ErrorKind::BadCopyFileFormat,
                    format!("missing data for column \"{missing}\""),
                );
                return Err(at(e, &table.name, rec.line, None));
            }
            let mut row: Row = vec![None; table.columns.len()];
            for (field, &col) in rec.fields.into_iter().zip(&copy.targets) {
                let column = &table.columns[col];
                row[col] = match field {
                    None => None,
                    Some(text) => Some(parse_datum(column.data_type, &text).map_err(|e| {
                        at(
                            FrontendError::new(e.kind, e.message),
                            &table.name,
                            rec.line,
                            Some((&column.name, &text)),
                        )
                    })?),
                };
            }
            rows.push(row);
        }
        let n = rows.len();
        if n > 0 {
            self.write(table, StreamChunk::inserts(rows)).await?;
        }
        Ok(command(format!("COPY {n}")))
    }
}
