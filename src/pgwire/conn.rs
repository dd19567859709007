//! One connection's handlers: startup, simple query and extended query, all
//! delegating to the connection's [`Session`].

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::{stream, Sink, SinkExt, StreamExt};
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::portal::{Format as PortalFormat, Portal, PortalExecutionState};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{
    ClientInfo, ClientPortalStore, PgWireConnectionState, PgWireServerHandlers,
    PidSecretKeyGenerator, RandomPidSecretKeyGenerator, Type, DEFAULT_NAME,
    METADATA_APPLICATION_NAME, METADATA_DATABASE, METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::data::{
    DataRow, FieldDescription, NoData, ParameterDescription, RowDescription,
};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Describe, Execute, PortalSuspended, TARGET_TYPE_BYTE_PORTAL,
    TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::simplequery::Query;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::value::{decode_param, encode_value, resolve_formats, type_size, Format};
use crate::common::{DataType, Datum, Field, Row};
use crate::frontend::{FrontendError, Session, SessionFactory, StatementResult};
use crate::sql::ParamContext;

/// What psql and drivers learn about the server at startup.
const SERVER_VERSION: &str = concat!("15.0 (ebbflow ", env!("CARGO_PKG_VERSION"), ")");

/// State shared by every connection of one [`serve`](super::serve) loop.
pub(super) struct Server {
    factory: Arc<dyn SessionFactory>,
    /// Process ids and secret keys for BackendKeyData. Cancel requests are
    /// accepted and ignored, but clients expect the key.
    pids: RandomPidSecretKeyGenerator,
}

impl Server {
    pub(super) fn new(factory: Arc<dyn SessionFactory>) -> Self {
        Server {
            factory,
            pids: RandomPidSecretKeyGenerator::default(),
        }
    }
}

/// The connection's session, set once the startup packet has named the
/// user and database. pgwire only routes queries after startup, so an
/// empty slot afterwards is a bug, reported as an internal error.
type SessionSlot = Arc<OnceLock<Arc<dyn Session>>>;

fn session_of(slot: &SessionSlot) -> PgWireResult<Arc<dyn Session>> {
    slot.get()
        .cloned()
        .ok_or_else(|| user_error(FrontendError::internal("no session before startup")))
}

/// The handlers of one connection, as pgwire's `process_socket` wants them.
pub(super) struct Handlers(Arc<Connection>);

impl Handlers {
    pub(super) fn new(server: Arc<Server>) -> Self {
        let session = SessionSlot::default();
        Handlers(Arc::new(Connection {
            server,
            parser: Arc::new(Parser {
                session: session.clone(),
            }),
            session,
        }))
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.0.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.0.clone()
    }

    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        self.0.clone()
    }
}

pub(super) struct Connection {
    server: Arc<Server>,
    session: SessionSlot,
    /// Runs Parse: describes the statement through the same session.
    parser: Arc<Parser>,
}

impl Connection {
    fn session(&self) -> PgWireResult<Arc<dyn Session>> {
        session_of(&self.session)
    }
}

// ---------------------------------------------------------------- errors

fn error_info(e: FrontendError) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".to_owned(), e.code.to_owned(), e.message);
    info.severity_nonlocalized = Some("ERROR".to_owned());
    info.detail = e.detail;
    info.hint = e.hint;
    info
}

fn user_error(e: FrontendError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

// --------------------------------------------------------------- startup

/// The parameters PostgreSQL reports at startup that clients look at.
struct ServerParameters;

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let meta = client.metadata();
        let user = meta.get(METADATA_USER).cloned().unwrap_or_default();
        let application_name = meta
            .get(METADATA_APPLICATION_NAME)
            .cloned()
            .unwrap_or_default();
        let params = [
            ("server_version", SERVER_VERSION.to_owned()),
            ("server_encoding", "UTF8".to_owned()),
            ("client_encoding", "UTF8".to_owned()),
            ("DateStyle", "ISO, MDY".to_owned()),
            ("IntervalStyle", "postgres".to_owned()),
            ("TimeZone", "UTC".to_owned()),
            ("integer_datetimes", "on".to_owned()),
            ("standard_conforming_strings", "on".to_owned()),
            ("is_superuser", "on".to_owned()),
            ("default_transaction_read_only", "off".to_owned()),
            ("in_hot_standby", "off".to_owned()),
            ("application_name", application_name),
            ("session_authorization", user),
        ];
        Some(params.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }
}

#[async_trait]
impl StartupHandler for Connection {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let PgWireFrontendMessage::Startup(startup) = message else {
            return Ok(());
        };
        protocol_negotiation(client, &startup).await?;
        save_startup_parameters_to_metadata(client, &startup);
        let Some(user) = client.metadata().get(METADATA_USER).cloned() else {
            let mut info = ErrorInfo::new(
                "FATAL".to_owned(),
                "28000".to_owned(),
                "no PostgreSQL user name specified in startup packet".to_owned(),
            );
            info.severity_nonlocalized = Some("FATAL".to_owned());
            return Err(PgWireError::UserError(Box::new(info)));
        };
        let database = client
            .metadata()
            .get(METADATA_DATABASE)
            .cloned()
            .unwrap_or_else(|| user.clone());
        let (pid, secret_key) = self.server.pids.generate(&*client);
        client.set_pid_and_secret_key(pid, secret_key);
        // Startup happens once per connection, so the slot is empty here.
        let _ = self
            .session
            .set(self.server.factory.new_session(&user, &database));
        finish_authentication(client, &ServerParameters).await
    }
}

// --------------------------------------------------------------- results

fn pg_type(ty: DataType) -> Type {
    Type::from_oid(ty.oid()).unwrap_or(Type::UNKNOWN)
}

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
        1186 => DataType::Interval,
        _ => {
            return Err(FrontendError::new(
                "0A000",
                format!("parameter type {} is not supported", ty.name()),
            ))
        }
    }))
}

fn field_infos(fields: &[Field], formats: &[Format]) -> Vec<FieldInfo> {
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

fn row_description(fields: &[FieldInfo]) -> RowDescription {
    RowDescription::new(fields.iter().map(FieldDescription::from).collect())
}

fn encode_row(fields: &[Field], row: &Row, formats: &[Format]) -> Result<DataRow, FrontendError> {
    if row.len() != fields.len() {
        return Err(FrontendError::internal(format!(
            "a row has {} values for {} columns",
            row.len(),
            fields.len()
        )));
    }
    let count = i16::try_from(fields.len())
        .map_err(|_| FrontendError::new("54011", "too many result columns"))?;
    let mut buf = BytesMut::new();
    for ((field, value), format) in fields.iter().zip(row).zip(formats) {
        encode_value(&mut buf, field.data_type, value, *format)?;
    }
    Ok(DataRow::new(buf, count))
}

/// A statement's outcome as pgwire's `Response`, rows encoded in the
/// requested result formats (Bind's format codes; none means text). A
/// row-returning result keeps its exact command tag in the `QueryResponse`.
fn into_response(result: StatementResult, format_codes: &[i16]) -> Result<Response, FrontendError> {
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
                .map(|row| encode_row(&fields, row, &formats).map(Ok))
                .collect::<Result<Vec<PgWireResult<DataRow>>, _>>()?;
            let schema = Arc::new(field_infos(&fields, &formats));
            let mut response = QueryResponse::new(schema, stream::iter(rows));
            response.set_command_tag(&tag);
            Response::Query(response)
        }
        StatementResult::Command { tag } => Response::Execution(Tag::new(&tag)),
        StatementResult::Empty => Response::EmptyQuery,
    })
}

/// The tag closing the rows sent by one Execute: `SELECT n` counts the rows
/// of this Execute (as PostgreSQL does when a row limit splits a portal);
/// other tags (`SHOW`, `INSERT 0 n` with RETURNING) are kept as they are.
fn completion_tag(tag: &str, rows_sent: usize) -> String {
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
async fn send_rows<C>(
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

// ---------------------------------------------------------- simple query

#[async_trait]
impl SimpleQueryHandler for Connection {
    /// pgwire's default appends the row count to every row-returning tag
    /// (`SHOW 1`); this one sends each statement's tag as it is.
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let responses = SimpleQueryHandler::do_query(self, client, &query.query).await;
        client.set_state(PgWireConnectionState::ReadyForQuery);
        for response in responses? {
            match response {
                Response::Query(rows) => send_rows(client, rows, true).await?,
                Response::Execution(tag) => {
                    client
                        .feed(PgWireBackendMessage::CommandComplete(tag.into()))
                        .await?
                }
                Response::EmptyQuery => {
                    client
                        .feed(PgWireBackendMessage::EmptyQueryResponse(
                            EmptyQueryResponse::new(),
                        ))
                        .await?
                }
                Response::Error(info) => {
                    client
                        .feed(PgWireBackendMessage::ErrorResponse((*info).into()))
                        .await?
                }
                other => {
                    tracing::error!(?other, "unexpected response to a simple query");
                }
            }
        }
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                TransactionStatus::Idle,
            )))
            .await?;
        Ok(())
    }

    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let session = self.session()?;
        let (results, mut error) = session.run_simple(query).await;
        let mut responses = Vec::with_capacity(results.len() + 1);
        for result in results {
            match into_response(result, &[]) {
                Ok(response) => responses.push(response),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        // A query string with no statement (only blanks, semicolons or
        // comments) gets EmptyQueryResponse, as in PostgreSQL.
        if responses.is_empty() && error.is_none() {
            responses.push(Response::EmptyQuery);
        }
        if let Some(e) = error {
            responses.push(Response::Error(Box::new(error_info(e))));
        }
        Ok(responses)
    }
}

// -------------------------------------------------------- extended query

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
) -> Result<Vec<Datum>, FrontendError> {
    let expected = stmt.param_types.len();
    if raw.len() != expected {
        return Err(FrontendError::new(
            "08P01",
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
        .map(|(i, ((value, ty), format))| decode_param(*ty, format, value.as_deref(), i))
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
                decode_params(
                    prepared,
                    shown_name,
                    &message.parameter_format_codes,
                    &message.parameters,
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
                        "08P01",
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
                    "26000",
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
                            "26000",
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
                        "34000",
                        format!("portal \"{shown_name}\" does not exist"),
                    )))
                }
            },
            other => {
                return Err(user_error(FrontendError::new(
                    "08P01",
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
                    "34000",
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
            let response = ExtendedQueryHandler::do_query(self, client, &portal, max_rows).await;
            client.set_state(PgWireConnectionState::ReadyForQuery);
            match response? {
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
        let session = self.session()?;
        let stmt: &StoredStatement<Prepared> = &portal.statement;
        let prepared = &stmt.statement;
        let values = decode_params(
            prepared,
            &stmt.id,
            &format_codes(&portal.parameter_format),
            &portal.parameters,
        )
        .map_err(user_error)?;
        let mut types = prepared.declared.clone();
        types.resize(values.len(), None);
        let params = ParamContext {
            types,
            values: Some(values),
        };
        let result = session
            .run_extended(&prepared.sql, params)
            .await
            .map_err(user_error)?;
        into_response(result, &format_codes(&portal.result_column_format)).map_err(user_error)
    }
}
