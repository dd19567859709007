//! Who may connect: SCRAM-SHA-256 for users with a password, trust for
//! the rest only while the server listens on a loopback address.
//!
//! The rules, precisely:
//! - a user with a password (`CREATE USER … WITH PASSWORD`, `ALTER USER …
//!   PASSWORD`) always authenticates with SCRAM-SHA-256 against the stored
//!   verifier, whatever the listen address;
//! - any other user name (including the default `root`) is trusted when
//!   the listener is on a loopback address, and refused (`28P01`) when it
//!   is not;
//! - the server refuses to start on a non-loopback address while no user
//!   has a password ([`check_listen`]): set one first over loopback.

use ebbflow_common::ErrorKind;
use std::net::SocketAddr;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use futures::{Sink, SinkExt};
use pgwire::api::auth::sasl::scram::{
    ScramSecret, ScramServerAuth, ScramServerAuthWaitingForClientFinal,
};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::{Authentication, PasswordMessageFamily};
use pgwire::messages::PgWireBackendMessage;

const SCRAM_SHA_256: &str = "SCRAM-SHA-256";

/// Refuse to serve on a non-loopback address without any password: every
/// login would be refused, or (before this check existed) trusted.
pub fn check_listen(listen: SocketAddr, any_password: bool) -> anyhow::Result<()> {
    if listen.ip().is_loopback() || any_password {
        return Ok(());
    }
    anyhow::bail!(
        "refusing to listen on {listen}: no user has a password, so anyone who can reach this \
         address could connect. Start on a loopback address (e.g. --listen 127.0.0.1:{}), run \
         CREATE USER name WITH PASSWORD '…' (or ALTER USER root WITH PASSWORD '…'), then restart \
         on {listen}",
        listen.port()
    )
}

/// Where one connection's SCRAM exchange stands.
pub(super) enum Scram {
    /// AuthenticationSASL sent; waiting for the client-first message.
    Started(pgwire::api::auth::sasl::scram::ScramSecret),
    /// server-first sent; waiting for the client-final message.
    Waiting(Box<ScramServerAuthWaitingForClientFinal>),
}

pub(super) fn auth_failed(user: &str) -> PgWireError {
    let mut info = ErrorInfo::new(
        "FATAL".to_owned(),
        crate::sqlstate::sqlstate(ErrorKind::InvalidPassword).to_owned(),
        format!("password authentication failed for user \"{user}\""),
    );
    info.severity_nonlocalized = Some("FATAL".to_owned());
    PgWireError::UserError(Box::new(info))
}

/// A stored verifier, in PostgreSQL's text form
/// (`SCRAM-SHA-256$<iterations>:<salt>:<StoredKey>:<ServerKey>`, base64
/// fields, as meta writes it), as pgwire's SCRAM secret; `None` if
/// malformed.
fn parse_verifier(v: &str) -> Option<ScramSecret> {
    let rest = v.strip_prefix("SCRAM-SHA-256$")?;
    let (iterations, keys) = rest.split_once(':')?;
    let mut parts = keys.split(':');
    let salt = STANDARD.decode(parts.next()?).ok()?;
    let stored_key = STANDARD.decode(parts.next()?).ok()?;
    let server_key = STANDARD.decode(parts.next()?).ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some(ScramSecret::Verifier {
        salt,
        iterations: iterations.parse().ok()?,
        stored_key,
        server_key,
    })
}

/// Start SCRAM for a user whose verifier is `verifier`.
pub(super) async fn start<C>(client: &mut C, user: &str, verifier: &str) -> PgWireResult<Scram>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: std::fmt::Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let Some(secret) = parse_verifier(verifier) else {
        tracing::warn!(user, "stored password verifier is malformed");
        return Err(auth_failed(user));
    };
    client.set_state(PgWireConnectionState::AuthenticationInProgress);
    client
        .send(PgWireBackendMessage::Authentication(Authentication::SASL(
            vec![SCRAM_SHA_256.to_owned()],
        )))
        .await?;
    Ok(Scram::Started(secret))
}

/// One SCRAM step. `Ok(None)`: authenticated (SASLFinal sent).
pub(super) async fn step<C>(
    client: &mut C,
    user: &str,
    state: Scram,
    message: PasswordMessageFamily,
) -> PgWireResult<Option<Scram>>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: std::fmt::Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    match state {
        Scram::Started(secret) => {
            let initial = message.into_sasl_initial_response()?;
            if initial.auth_method != SCRAM_SHA_256 {
                return Err(PgWireError::UnsupportedSASLAuthMethod(initial.auth_method));
            }
            let data = initial.data.unwrap_or_default();
            let (server_first, waiting) = ScramServerAuth::new()
                .on_client_first_message_with_secret(&data, secret)
                .map_err(|_| auth_failed(user))?;
            client
                .send(PgWireBackendMessage::Authentication(
                    Authentication::SASLContinue(Bytes::from(server_first)),
                ))
                .await?;
            Ok(Some(Scram::Waiting(Box::new(waiting))))
        }
        Scram::Waiting(waiting) => {
            let response = message.into_sasl_response()?;
            let server_final = waiting
                .on_client_final_message(&response.data)
                .map_err(|_| auth_failed(user))?;
            client
                .feed(PgWireBackendMessage::Authentication(
                    Authentication::SASLFinal(Bytes::from(server_final)),
                ))
                .await?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_loopback_needs_a_password() {
        let lo: SocketAddr = "127.0.0.1:4566".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:4566".parse().unwrap();
        assert!(check_listen(lo, false).is_ok());
        assert!(check_listen(any, true).is_ok());
        let e = check_listen(any, false).unwrap_err().to_string();
        assert!(e.contains("no user has a password"), "{e}");
    }

    #[test]
    fn verifiers_parse_in_postgresql_form_only() {
        let salt = STANDARD.encode([1u8; 16]);
        let key = STANDARD.encode([2u8; 32]);
        let v = format!("SCRAM-SHA-256$4096:{salt}:{key}:{key}");
        assert!(matches!(
            parse_verifier(&v),
            Some(ScramSecret::Verifier {
                iterations: 4096,
                ..
            })
        ));
        assert!(parse_verifier("md5abc").is_none());
        assert!(parse_verifier(&format!("{v}:{key}")).is_none());
        assert!(parse_verifier("SCRAM-SHA-256$4096:!!:x:y").is_none());
    }
}
