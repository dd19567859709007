//! The extended query protocol: Parse, Bind, Describe, Execute (Sync,
//! Flush and Close are pgwire's defaults).

use ebbflow_common::{ErrorKind, Zone};
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Sink, SinkExt, StreamExt};
use pgwire::api::portal::{Format as PortalFormat, Portal, PortalExecutionState};
use pgwire::api::query::ExtendedQueryHandler;
use pgwire::api::results::{FieldInfo, Response};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, Type, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::{NoData, ParameterDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Describe, Execute, PortalSuspended, TARGET_TYPE_BYTE_PORTAL,
    TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{CommandComplete, EmptyQueryResponse};
use pgwire::messages::PgWireBackendMessage;

use super::conn::{session_of, user_error, Connection, SessionSlot};
use super::copy::{send_copy_out, start_copy_in};
use super::results::{completion_tag, field_infos, into_response, pg_type, row_description};
use super::value::{decode_param, resolve_formats, Format};
use ebbflow_common::{DataType, Datum, Field};
use ebbflow_frontend::{FrontendError, StatementResult};
use ebbflow_sql::ParamContext;

/// The type a client declared for a parameter in Parse; `None` (OID 0 or
/// `unknown`) lets the binder infer it.
fn declared_type(ty: &Type) -> Result<Option<DataType>, FrontendError> {
    Ok(Some(match ty.oid() {
        0 | 705 => return Ok(None),
        16 => DataType::Boolean,
        20 => DataType::Int64,
        21 => DataType::Int16,
        23 => DataType::Int32,
        700 => DataType::Float32,
        701 => DataType::Float64,
        1700 => DataType::Decimal,
        19 | 25 | 1042 | 1043 => DataType::Varchar,
        1082 => DataType::Date,
        1114 => DataType::Timestamp,
        1184 => DataType::Timestamptz,
        114 | 3802 => DataType::Jsonb,
        2950 => DataType::Uuid,
        17 => DataType::Bytea,
        1083 => DataType::Time,
        1186 => DataType::Interval,
        _ => {
            return Err(FrontendError::new(
                ErrorKind::FeatureNotSupported,
                format!("parameter type {} is not supported", ty.name()),
            ))
        }
    }))
}

/// A statement prepared by Parse.
#[derive(Clone, Debug)]
pub(super) struct Prepared {
    sql: String,
    /// Parameter types declared in Parse (`None`: inferred), handed back to
    /// the session at execution so it binds the statement as it described it.
    declared: Vec<Option<DataType>>,
    /// Every parameter's type, declared or inferred: Bind decodes by these.
    param_types: Vec<DataType>,
    /// Result columns; empty for a command.
    fields: Vec<Field>,
}

/// pgwire's hook for Parse: describes the statement through the session,
/// so an unknown table or a syntax error is reported at Parse as in
/// PostgreSQL, and later Describes need not ask again.
pub(super) struct Parser {
    session: SessionSlot,
}

impl Parser {
    pub(super) fn new(session: SessionSlot) -> Self {
        Parser { session }
    }
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let session = session_of(&self.session)?;
        // OIDs pgwire does not know arrive as `None` and are inferred.
        let declared = types
            .iter()
            .map(|t| t.as_ref().map_or(Ok(None), declared_type))
            .collect::<Result<Vec<_>, _>>()
            .map_err(user_error)?;
        let (param_types, fields) = session.describe(sql, &declared).await.map_err(user_error)?;
        // Clients encode a parameter by the type they declared and Bind
        // decodes it by `param_types`: the session must keep declared types.
        let kept = declared.len() <= param_types.len()
            && declared
                .iter()
                .zip(&param_types)
                .all(|(d, p)| d.is_none_or(|d| d == *p));
        if !kept {
            return Err(user_error(FrontendError::internal(format!(
                "described parameter types {param_types:?} do not keep the declared {declared:?}"
            ))));
        }
        Ok(Some(Prepared {
            sql: sql.to_owned(),
            declared,
            param_types,
            fields,
        }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.param_types.iter().map(|t| pg_type(*t)).collect())
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        column_format: Option<&PortalFormat>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let codes = column_format.map(format_codes).unwrap_or_default();
        let formats = result_formats(&codes, &stmt.fields).map_err(user_error)?;
        Ok(field_infos(&stmt.fields, &formats))
    }
}

/// The format codes a Bind message carried, back from pgwire's summary.
fn format_codes(format: &PortalFormat) -> Vec<i16> {
    match format {
        PortalFormat::UnifiedText => vec![],
        PortalFormat::UnifiedBinary => vec![1],
        PortalFormat::Individual(codes) => codes.clone(),
    }
}

fn result_formats(codes: &[i16], fields: &[Field]) -> Result<Vec<Format>, FrontendError> {
    resolve_formats(codes, fields.len(), || {
        format!(
            "bind message has {} result formats but query has {} columns",
            codes.len(),
            fields.len()
        )
    })
}

/// Check the parameters of a Bind against the statement and decode them.
fn decode_params(
    stmt: &Prepared,
    statement_name: &str,
    codes: &[i16],
    raw: &[Option<Bytes>],
    zone: &Zone,
) -> Result<Vec<Datum>, FrontendError> {
    let expected = stmt.param_types.len();
    if raw.len() != expected {
        return Err(FrontendError::new(
            ErrorKind::ProtocolViolation,
            format!(
                "bind message supplies {} parameters, but prepared statement \"{statement_name}\" requires {expected}",
                raw.len()
            ),
        ));
    }
    let formats = resolve_formats(codes, expected, || {
        format!(
            "bind message has {} parameter formats but {expected} parameters",
            codes.len()
        )
    })?;
    raw.iter()
        .zip(&stmt.param_types)
        .zip(formats)
        .enumerate()
        .map(|(i, ((value, ty), format))| decode_param(*ty, format, value.as_deref(), i, zone))
        .collect()
}

/// The name clients see for a statement or portal: the unnamed one is `""`.
fn display_name(name: &Option<String>) -> &str {
    name.as_deref().unwrap_or("")
}

#[async_trait]
impl ExtendedQueryHandler for Connection {
    type Statement = Prepared;
    type QueryParser = Parser;

    fn query_parser(&self) -> Arc<Parser> {
        self.parser.clone()
    }

    /// Checks and decodes the parameters now, so a bad value is reported
    /// at Bind as in PostgreSQL; Execute decodes them again (cheap) since a
    /// pgwire portal keeps only the raw bytes.
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let statement_name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let shown_name = display_name(&message.statement_name);
        match client.portal_store().get_statement(statement_name) {
            Some(Entry::Value(stmt)) => {
                let prepared = &stmt.statement;
                let zone = self.session()?.time_zone();
                decode_params(
                    prepared,
                    shown_name,
                    &message.parameter_format_codes,
                    &message.parameters,
                    &zone,
                )
                .map_err(user_error)?;
                result_formats(&message.result_column_format_codes, &prepared.fields)
                    .map_err(user_error)?;
                let portal = Portal::try_new(&message, stmt.clone())?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Some(Entry::Empty) => {
                if !message.parameters.is_empty() {
                    return Err(user_error(FrontendError::new(
                        ErrorKind::ProtocolViolation,
                        format!(
                            "bind message supplies {} parameters, but prepared statement \"{shown_name}\" requires 0",
                            message.parameters.len()
                        ),
                    )));
                }
                let portal_name = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
                client.portal_store().put_empty_portal(portal_name);
            }
            None => {
                return Err(user_error(FrontendError::new(
                    ErrorKind::InvalidSqlStatementName,
                    format!("prepared statement \"{shown_name}\" does not exist"),
                )))
            }
        }
        client
            .feed(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    /// Statement: ParameterDescription and RowDescription (text formats, as
    /// none are chosen yet) or NoData. Portal: RowDescription in the formats
    /// Bind chose, or NoData. (pgwire's default sends an empty RowDescription
    /// instead of NoData for a command with parameters.)
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let shown_name = display_name(&message.name);
        let fields = match message.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                let (params, fields) = match client.portal_store().get_statement(name) {
                    Some(Entry::Value(stmt)) => {
                        let prepared = &stmt.statement;
                        let formats = vec![Format::Text; prepared.fields.len()];
                        (
                            prepared.param_types.iter().map(|t| t.oid()).collect(),
                            field_infos(&prepared.fields, &formats),
                        )
                    }
                    Some(Entry::Empty) => (vec![], vec![]),
                    None => {
                        return Err(user_error(FrontendError::new(
                            ErrorKind::InvalidSqlStatementName,
                            format!("prepared statement \"{shown_name}\" does not exist"),
                        )))
                    }
                };
                client
                    .feed(PgWireBackendMessage::ParameterDescription(
                        ParameterDescription::new(params),
                    ))
                    .await?;
                fields
            }
            TARGET_TYPE_BYTE_PORTAL => match client.portal_store().get_portal(name) {
                Some(Entry::Value(portal)) => {
                    let prepared = &portal.statement.statement;
                    let codes = format_codes(&portal.result_column_format);
                    let formats = result_formats(&codes, &prepared.fields).map_err(user_error)?;
                    field_infos(&prepared.fields, &formats)
                }
                Some(Entry::Empty) => vec![],
                None => {
                    return Err(user_error(FrontendError::new(
                        ErrorKind::InvalidCursorName,
                        format!("portal \"{shown_name}\" does not exist"),
                    )))
                }
            },
            other => {
                return Err(user_error(FrontendError::new(
                    ErrorKind::ProtocolViolation,
                    format!("invalid DESCRIBE message subtype {other}"),
                )))
            }
        };
        let message = if fields.is_empty() {
            PgWireBackendMessage::NoData(NoData::new())
        } else {
            PgWireBackendMessage::RowDescription(row_description(&fields))
        };
        client.feed(message).await?;
        Ok(())
    }

    /// Runs the portal once; rows are then sent from the portal, at most
    /// `max_rows` per Execute (0: all), with PortalSuspended between.
    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let portal = match client.portal_store().get_portal(name) {
            Some(Entry::Value(portal)) => portal,
            Some(Entry::Empty) => {
                client
                    .feed(PgWireBackendMessage::EmptyQueryResponse(
                        EmptyQueryResponse::new(),
                    ))
                    .await?;
                return Ok(());
            }
            None => {
                return Err(user_error(FrontendError::new(
                    ErrorKind::InvalidCursorName,
                    format!("portal \"{}\" does not exist", display_name(&message.name)),
                )))
            }
        };
        // Negative limits are as good as none.
        let max_rows = usize::try_from(message.max_rows).unwrap_or(0);
        let state = portal.state();
        let not_started = matches!(*state.lock().await, PortalExecutionState::Initial);
        if not_started {
            client.set_state(PgWireConnectionState::QueryInProgress);
            let session = self.session()?;
            let zone_before = session.time_zone_setting();
            let result = self.run_portal(&portal).await;
            client.set_state(PgWireConnectionState::ReadyForQuery);
            super::conn::report_time_zone(client, &*session, &zone_before).await?;
            let response = match result? {
                StatementResult::CopyIn(c) => {
                    *state.lock().await = PortalExecutionState::Finished;
                    return start_copy_in(self, client, c, true).await;
                }
                StatementResult::CopyOut {
                    columns,
                    lines,
                    tag,
                } => {
                    *state.lock().await = PortalExecutionState::Finished;
                    return send_copy_out(client, columns, lines, tag).await;
                }
                other => into_response(
                    other,
                    &format_codes(&portal.result_column_format),
                    &self.session()?.time_zone(),
                )
                .map_err(user_error)?,
            };
            match response {
                Response::Query(rows) => portal.start(rows).await,
                Response::Execution(tag) => {
                    // Executing the portal again must not repeat the command.
                    *state.lock().await = PortalExecutionState::Finished;
                    client
                        .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                        .await?;
                    return Ok(());
                }
                Response::EmptyQuery => {
                    client
                        .feed(PgWireBackendMessage::EmptyQueryResponse(
                            EmptyQueryResponse::new(),
                        ))
                        .await?;
                    return Ok(());
                }
                other => {
                    return Err(user_error(FrontendError::internal(format!(
                        "unexpected response {other:?}"
                    ))))
                }
            }
        }
        let fetched = portal.fetch(max_rows).await?;
        let mut response = fetched.response;
        let mut rows_sent = 0;
        while let Some(row) = response.data_rows().next().await {
            client.feed(PgWireBackendMessage::DataRow(row?)).await?;
            rows_sent += 1;
        }
        let done = if fetched.suspended {
            PgWireBackendMessage::PortalSuspended(PortalSuspended::new())
        } else {
            let tag = completion_tag(response.command_tag(), rows_sent);
            PgWireBackendMessage::CommandComplete(CommandComplete::new(tag))
        };
        client.feed(done).await?;
        Ok(())
    }

    async fn do_query<C>(
        &self,
        _client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let result = self.run_portal(portal).await?;
        into_response(
            result,
            &format_codes(&portal.result_column_format),
            &self.session()?.time_zone(),
        )
        .map_err(user_error)
    }
}

impl Connection {
    /// Run a bound portal's statement.
    async fn run_portal(&self, portal: &Portal<Prepared>) -> PgWireResult<StatementResult> {
        let session = self.session()?;
        let stmt: &StoredStatement<Prepared> = &portal.statement;
        let prepared = &stmt.statement;
        let values = decode_params(
            prepared,
            &stmt.id,
            &format_codes(&portal.parameter_format),
            &portal.parameters,
            &session.time_zone(),
        )
        .map_err(user_error)?;
        let mut types = prepared.declared.clone();
        types.resize(values.len(), None);
        let params = ParamContext {
            types,
            values: Some(values),
        };
        session
            .run_extended(&prepared.sql, params)
            .await
            .map_err(user_error)
    }
}
