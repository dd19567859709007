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

use super::conn::{error_info, Connection};
use super::results::{into_response, send_rows};

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
