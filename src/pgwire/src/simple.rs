//! The simple query protocol: one Query message, any number of statements.

use std::fmt::Debug;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::query::SimpleQueryHandler;
use pgwire::api::results::Response;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::{EmptyQueryResponse, ReadyForQuery, TransactionStatus};
use pgwire::messages::simplequery::Query;
use pgwire::messages::PgWireBackendMessage;

use super::conn::{error_info, user_error, Connection};
use super::copy::{send_copy_out, start_copy_in};
use super::results::{into_response, send_rows};
use ebbflow_frontend::{FrontendError, StatementResult};

#[async_trait]
impl SimpleQueryHandler for Connection {
    /// pgwire's default appends the row count to every row-returning tag
    /// (`SHOW 1`); this one sends each statement's tag as it is, and
    /// answers COPY itself.
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
        let session = self.session()?;
        let zone_before = session.time_zone_setting();
        let (results, error) = session.run_simple(&query.query).await;
        client.set_state(PgWireConnectionState::ReadyForQuery);
        super::conn::report_time_zone(client, &*session, &zone_before).await?;
        // A query string with no statement (only blanks, semicolons or
        // comments) gets EmptyQueryResponse, as in PostgreSQL.
        if results.is_empty() && error.is_none() {
            send_response(client, Response::EmptyQuery).await?;
        }
        for result in results {
            match result {
                StatementResult::CopyOut {
                    columns,
                    lines,
                    tag,
                } => send_copy_out(client, columns, lines, tag).await?,
                // Always the last result (`run_simple` sees to it), and
                // never with an error. ReadyForQuery comes after CopyDone
                // (pgwire's loop sends it).
                StatementResult::CopyIn(c) => return start_copy_in(self, client, c, false).await,
                other => {
                    let response = match into_response(other, &[], &session.time_zone()) {
                        Ok(r) => r,
                        Err(e) => Response::Error(Box::new(error_info(e))),
                    };
                    let failed = matches!(response, Response::Error(_));
                    send_response(client, response).await?;
                    if failed {
                        return ready(client).await;
                    }
                }
            }
        }
        if let Some(e) = error {
            send_response(client, Response::Error(Box::new(error_info(e)))).await?;
        }
        ready(client).await
    }

    async fn do_query<C>(&self, _client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        // Only pgwire's default `on_query` calls this, and ours replaces it.
        let _ = query;
        Err(user_error(FrontendError::internal(
            "the simple query protocol runs through on_query",
        )))
    }
}

async fn ready<C>(client: &mut C) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    client
        .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
            TransactionStatus::Idle,
        )))
        .await?;
    Ok(())
}

async fn send_response<C>(client: &mut C, response: Response) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
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
    Ok(())
}
