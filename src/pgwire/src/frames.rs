//! One connection's message loop, and how it survives bad frames.
//!
//! This is pgwire's `process_socket` loop with one difference: a frame
//! the decoder cannot read ends *that* connection with a FATAL
//! `08P01 protocol_violation` ErrorResponse and one log line, never a
//! backtrace. pgwire's loop closes silently on a decode error, and some of
//! its decoders panic on truncated bodies (a Bind shorter than its counts
//! say); both become the same protocol error here.
//!
//! Panics inside the decoder are caught around the poll that decodes, and
//! the process-wide panic hook stays silent for them: [`QuietPoll`] marks
//! the thread while it polls the decoder, and [`install_quiet_hook`]'s hook
//! keeps the message for our one log line instead of printing it. Every
//! other panic (anywhere else, on any thread) goes to the previous hook.

use ebbflow_common::ErrorKind;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::api::{ClientInfo, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::net::TcpStream;

/// How long a client has to finish startup (pgwire's own limit).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

thread_local! {
    /// Set while this thread polls a connection's decoder.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// The message of the last panic the hook kept quiet on this thread.
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Install (once per process) the panic hook that keeps decoder panics
/// quiet; see the module doc.
pub(super) fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                let payload = info.payload();
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "malformed message".to_owned());
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(msg));
            } else {
                previous(info);
            }
        }));
    });
}

/// Polls `F` with the thread marked quiet. The mark is cleared by a drop
/// guard, so an unwinding poll clears it too.
struct QuietPoll<F>(F);

impl<F: Future + Unpin> Future for QuietPoll<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        struct Reset(bool);
        impl Drop for Reset {
            fn drop(&mut self) {
                QUIET.with(|q| q.set(self.0));
            }
        }
        let _reset = Reset(QUIET.with(|q| q.replace(true)));
        Pin::new(&mut self.0).poll(cx)
    }
}

/// What reading the next frame gave.
enum Next<M> {
    Message(M),
    /// The client hung up (or the startup timer ran out).
    Closed,
    /// A frame that is not a valid message: why.
    Bad(String),
}

/// Serve one TCP connection with `handlers` until the client leaves or
/// sends a frame that cannot be decoded.
pub(super) async fn serve_connection<H: PgWireServerHandlers>(
    tcp: TcpStream,
    peer: SocketAddr,
    handlers: H,
) {
    let startup = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup);
    // The SSLRequest (refused: no TLS) is decoded here too.
    let negotiated = tokio::select! {
        () = &mut startup => return,
        n = AssertUnwindSafe(QuietPoll(Box::pin(negotiate_tls(tcp, None)))).catch_unwind() => n,
    };
    let mut socket = match negotiated {
        Ok(Ok(Some(socket))) => socket,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "connection closed during SSL negotiation");
            return;
        }
        Err(_) => {
            let why = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_default();
            tracing::warn!(%peer, %why, "closed a connection that sent a malformed first packet");
            return;
        }
    };

    let startup_handler = handlers.startup_handler();
    let simple_query_handler = handlers.simple_query_handler();
    let extended_query_handler = handlers.extended_query_handler();
    let copy_handler = handlers.copy_handler();
    let cancel_handler = handlers.cancel_handler();

    loop {
        let in_startup = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let read = AssertUnwindSafe(QuietPoll(socket.next())).catch_unwind();
        let next = if in_startup {
            tokio::select! {
                () = &mut startup => Ok(None),
                n = read => n,
            }
        } else {
            read.await
        };
        let next = match next {
            Ok(Some(Ok(msg))) => Next::Message(msg),
            Ok(None) => Next::Closed,
            Ok(Some(Err(PgWireError::IoError(e)))) => {
                tracing::debug!(%peer, error = %e, "connection closed");
                Next::Closed
            }
            Ok(Some(Err(e))) => Next::Bad(e.to_string()),
            Err(_) => Next::Bad(
                LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_else(|| "malformed message".to_owned()),
            ),
        };
        let msg = match next {
            Next::Message(msg) => msg,
            Next::Closed => return,
            Next::Bad(why) => {
                tracing::warn!(%peer, %why, "closed a connection that sent an invalid message");
                let mut info = ErrorInfo::new(
                    "FATAL".to_owned(),
                    crate::sqlstate::sqlstate(ErrorKind::ProtocolViolation).to_owned(),
                    "invalid frontend message".to_owned(),
                );
                info.severity_nonlocalized = Some("FATAL".to_owned());
                info.detail = Some(why);
                // The client may be gone already: nothing to do about it.
                let _ = socket
                    .send(PgWireBackendMessage::ErrorResponse(info.into()))
                    .await;
                let _ = socket.close().await;
                return;
            }
        };
        if matches!(msg, PgWireFrontendMessage::Terminate(_)) {
            return;
        }
        let is_extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(is_extended_query) => is_extended_query,
            _ => msg.is_extended_query(),
        };
        let is_cancel_request = matches!(msg, PgWireFrontendMessage::CancelRequest(_));
        if let Err(e) = process_message(
            msg,
            &mut socket,
            startup_handler.clone(),
            simple_query_handler.clone(),
            extended_query_handler.clone(),
            copy_handler.clone(),
            cancel_handler.clone(),
        )
        .await
        {
            let is_fatal = e.is_fatal();
            if let Err(e) = process_error(&mut socket, e, is_extended_query).await {
                tracing::debug!(%peer, error = %e, "connection closed while sending an error");
                return;
            }
            if is_fatal {
                return;
            }
        }
        if is_cancel_request {
            return;
        }
    }
}
