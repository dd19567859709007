//! The PostgreSQL wire protocol: accepts connections and serves each with
//! its own [`Session`](ebbflow_frontend::Session).
//!
//! The protocol itself (framing, SSL refusal, startup, the extended-query
//! state machine that discards messages until Sync after an error) is the
//! `pgwire` library's; this crate supplies the handlers:
//!
//! - startup: SCRAM-SHA-256 for a user with a password, trust for others
//!   on a loopback listener (`auth.rs`); the session is created from the
//!   startup packet's `user` and `database` (defaulting to the user, as in
//!   PostgreSQL), and the server parameters psql and drivers expect are
//!   reported (`server_version`, `DateStyle`, `TimeZone`, ...).
//! - simple query: [`Session::run_simple`](ebbflow_frontend::Session::run_simple),
//!   every result with its exact command tag, then the error if any, then
//!   ReadyForQuery.
//! - extended query: Parse calls
//!   [`Session::describe`](ebbflow_frontend::Session::describe) (so errors
//!   surface at Parse, as in PostgreSQL) and keeps the inferred parameter
//!   types and result columns; Bind checks and decodes the parameters in
//!   text or binary; Execute runs
//!   [`Session::run_extended`](ebbflow_frontend::Session::run_extended) and
//!   encodes rows in the formats Bind asked for, honouring Execute's row
//!   limit with PortalSuspended.
//!
//! Errors become ErrorResponses here and only here (STYLE §7): a
//! [`FrontendError`](ebbflow_frontend::FrontendError) keeps its message,
//! detail and hint, and its kind becomes the SQLSTATE in
//! [`sqlstate`](crate::sqlstate), the one table from kinds to codes. A connection's task only ever ends its own
//! connection; the accept loop outlives any client. A frame that cannot be
//! decoded ends its connection with a FATAL `08P01` and one log line
//! (`frames.rs`).
//!
//! It knows only sessions (`frontend`), values and types (`common`) and
//! the parameter types of a statement (`sql`): not meta, the runtime or
//! the store (`ci/layers`).

pub mod auth;
mod conn;
mod copy;
mod extended;
mod frames;
mod results;
mod simple;
pub mod sqlstate;
mod value;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::net::TcpListener;

use ebbflow_frontend::SessionFactory;

/// Accept PostgreSQL connections on `listener` until `shutdown` completes.
///
/// Each connection runs in its own task with a session from `factory`. When
/// `shutdown` resolves the listener stops accepting and `serve` returns;
/// connections already open keep running until their clients disconnect
/// (or the runtime stops). Accept errors (such as running out of file
/// descriptors) are logged and retried after a short pause.
pub async fn serve(
    listener: TcpListener,
    factory: Arc<dyn SessionFactory>,
    shutdown: impl Future<Output = ()>,
) {
    frames::install_quiet_hook();
    // See `auth`: passwordless users are trusted only on loopback.
    let trust = listener.local_addr().is_ok_and(|a| a.ip().is_loopback());
    let server = Arc::new(conn::Server::new(factory, trust));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((socket, peer)) => {
                    let handlers = conn::Handlers::new(server.clone());
                    tokio::spawn(async move {
                        let _session = ebbflow_metrics::session_opened();
                        // Bad frames are handled in `frames`; this catches a
                        // panic in a handler, which must end this connection
                        // only.
                        let connection = frames::serve_connection(socket, peer, handlers);
                        if AssertUnwindSafe(connection).catch_unwind().await.is_err() {
                            tracing::error!(%peer, "a connection's handler panicked");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    // Errors like EMFILE persist for a while: do not spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}
