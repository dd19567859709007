//! The COPY sub-protocol: `COPY … FROM STDIN` collects the client's
//! CopyData messages and hands them to the session at CopyDone (the
//! session applies them as one statement); `COPY … TO STDOUT` sends the
//! session's encoded lines as CopyData. Text formats only (`text`, `csv`).

use ebbflow_common::ErrorKind;
use std::fmt::Debug;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse, CopyOutResponse};
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;

use super::conn::{user_error, Connection};
use ebbflow_frontend::{CopyIn, FrontendError};

/// The most data one `COPY FROM STDIN` may send: it is held in memory
/// until CopyDone, to be applied all at once.
const MAX_COPY_BYTES: usize = 1 << 30;

/// A COPY FROM STDIN in progress: where the data goes and what came so far.
pub(super) struct PendingCopy {
    copy: CopyIn,
    data: Vec<u8>,
    /// Set once the data outgrew [`MAX_COPY_BYTES`]: the rest is dropped
    /// and CopyDone reports the error.
    too_large: bool,
}

/// Answer a `COPY … FROM STDIN`: CopyInResponse, and the connection waits
/// for CopyData (`extended`: started by an Execute).
pub(super) async fn start_copy_in<C>(
    conn: &Connection,
    client: &mut C,
    copy: CopyIn,
    extended: bool,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let columns = i16::try_from(copy.columns).unwrap_or(i16::MAX);
    *conn.copy.lock() = Some(PendingCopy {
        copy,
        data: Vec::new(),
        too_large: false,
    });
    let response = CopyInResponse::new(0, columns, vec![0; columns.max(0) as usize]);
    client
        .send(PgWireBackendMessage::CopyInResponse(response))
        .await?;
    client.set_state(PgWireConnectionState::CopyInProgress(extended));
    Ok(())
}

/// Send the output of a `COPY … TO STDOUT`.
pub(super) async fn send_copy_out<C>(
    client: &mut C,
    columns: usize,
    lines: Vec<String>,
    tag: String,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let columns = i16::try_from(columns).unwrap_or(i16::MAX);
    let response = CopyOutResponse::new(0, columns, vec![0; columns.max(0) as usize]);
    client
        .feed(PgWireBackendMessage::CopyOutResponse(response))
        .await?;
    for line in lines {
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(Bytes::from(
                line,
            ))))
            .await?;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    client
        .feed(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            tag,
        )))
        .await?;
    Ok(())
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut pending = self.copy.lock();
        if let Some(p) = pending.as_mut() {
            if p.data.len() + copy_data.data.len() > MAX_COPY_BYTES {
                p.too_large = true;
                p.data = Vec::new();
            }
            if !p.too_large {
                p.data.extend_from_slice(&copy_data.data);
            }
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(pending) = self.copy.lock().take() else {
            return Err(user_error(FrontendError::new(
                ErrorKind::ProtocolViolation,
                "CopyDone without a COPY FROM STDIN in progress",
            )));
        };
        if pending.too_large {
            return Err(user_error(FrontendError::new(
                ErrorKind::ProgramLimitExceeded,
                format!("COPY data exceeds {MAX_COPY_BYTES} bytes: split it into several COPY statements"),
            )));
        }
        let session = self.session()?;
        let result = session
            .copy_in(pending.copy, pending.data)
            .await
            .map_err(user_error)?;
        let tag = match result {
            ebbflow_frontend::StatementResult::Command { tag } => tag,
            _ => "COPY".to_owned(),
        };
        client
            .send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
                tag,
            )))
            .await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.copy.lock().take();
        user_error(FrontendError::new(
            ErrorKind::QueryCanceled,
            format!("COPY from stdin failed: {}", fail.message),
        ))
    }
}
