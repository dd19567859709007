//! Statement results as protocol messages: row descriptions, data rows in
//! the requested formats, and command tags.

use ebbflow_common::ErrorKind;
use std::fmt::Debug;
use std::sync::Arc;

use bytes::BytesMut;
use futures::{stream, Sink, SinkExt, StreamExt};
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::Type;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;

use super::value::{encode_value, resolve_formats, type_size, Format};
use ebbflow_common::{DataType, Field, Row, Zone};
use ebbflow_frontend::{FrontendError, StatementResult};

pub(super) fn pg_type(ty: DataType) -> Type {
    Type::from_oid(ty.oid()).unwrap_or(Type::UNKNOWN)
}

pub(super) fn field_infos(fields: &[Field], formats: &[Format]) -> Vec<FieldInfo> {
    fields
        .iter()
        .zip(formats)
        .map(|(f, fmt)| {
            let format = match fmt {
                Format::Text => FieldFormat::Text,
                Format::Binary => FieldFormat::Binary,
            };
            FieldInfo::new(f.name.clone(), None, None, pg_type(f.data_type), format)
                .with_type_size(type_size(f.data_type))
        })
        .collect()
}

pub(super) fn row_description(fields: &[FieldInfo]) -> RowDescription {
    RowDescription::new(fields.iter().map(FieldDescription::from).collect())
}

fn encode_row(
    fields: &[Field],
    row: &Row,
    formats: &[Format],
    zone: &Zone,
) -> Result<DataRow, FrontendError> {
    if row.len() != fields.len() {
        return Err(FrontendError::internal(format!(
            "a row has {} values for {} columns",
            row.len(),
            fields.len()
        )));
    }
    let count = i16::try_from(fields.len())
        .map_err(|_| FrontendError::new(ErrorKind::TooManyColumns, "too many result columns"))?;
    let mut buf = BytesMut::new();
    for ((field, value), format) in fields.iter().zip(row).zip(formats) {
        encode_value(&mut buf, field.data_type, value, *format, zone)?;
    }
    Ok(DataRow::new(buf, count))
}

/// A statement's outcome as pgwire's `Response`, rows encoded in the
/// requested result formats (Bind's format codes; none means text). A
/// row-returning result keeps its exact command tag in the `QueryResponse`.
pub(super) fn into_response(
    result: StatementResult,
    format_codes: &[i16],
    zone: &Zone,
) -> Result<Response, FrontendError> {
    Ok(match result {
        StatementResult::Rows { fields, rows, tag } => {
            let formats = resolve_formats(format_codes, fields.len(), || {
                format!(
                    "bind message has {} result formats but query has {} columns",
                    format_codes.len(),
                    fields.len()
                )
            })?;
            let rows = rows
                .iter()
                .map(|row| encode_row(&fields, row, &formats, zone).map(Ok))
                .collect::<Result<Vec<PgWireResult<DataRow>>, _>>()?;
            let schema = Arc::new(field_infos(&fields, &formats));
            let mut response = QueryResponse::new(schema, stream::iter(rows));
            response.set_command_tag(&tag);
            Response::Query(response)
        }
        StatementResult::Command { tag } => Response::Execution(Tag::new(&tag)),
        StatementResult::Empty => Response::EmptyQuery,
        // The protocol handlers answer COPY themselves (`copy.rs`).
        StatementResult::CopyIn(_) | StatementResult::CopyOut { .. } => {
            return Err(FrontendError::internal("COPY reached the row encoder"))
        }
    })
}

/// The tag closing the rows sent by one Execute: `SELECT n` counts the rows
/// of this Execute (as PostgreSQL does when a row limit splits a portal);
/// other tags (`SHOW`, `INSERT 0 n` with RETURNING) are kept as they are.
pub(super) fn completion_tag(tag: &str, rows_sent: usize) -> String {
    let counted_select = tag == "SELECT"
        || tag
            .strip_prefix("SELECT ")
            .is_some_and(|n| n.parse::<u64>().is_ok());
    if counted_select {
        format!("SELECT {rows_sent}")
    } else {
        tag.to_owned()
    }
}

/// Send a row-returning response: optionally its RowDescription, its rows
/// and its CommandComplete with the statement's own tag.
pub(super) async fn send_rows<C>(
    client: &mut C,
    mut response: QueryResponse,
    describe: bool,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if describe {
        let description = row_description(&response.row_schema());
        client
            .feed(PgWireBackendMessage::RowDescription(description))
            .await?;
    }
    while let Some(row) = response.data_rows().next().await {
        client.feed(PgWireBackendMessage::DataRow(row?)).await?;
    }
    let tag = response.command_tag().to_owned();
    client
        .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            tag,
        )))
        .await?;
    Ok(())
}
