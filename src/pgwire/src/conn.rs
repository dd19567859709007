//! One connection: its handlers, its session, and the startup handshake.

use ebbflow_common::{ErrorKind, Zone};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider, StartupHandler,
};
use pgwire::api::copy::CopyHandler;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::{
    ClientInfo, PgWireServerHandlers, PidSecretKeyGenerator, RandomPidSecretKeyGenerator,
    METADATA_APPLICATION_NAME, METADATA_DATABASE, METADATA_USER,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use super::extended::Parser;
use ebbflow_frontend::{FrontendError, Session, SessionFactory};

/// What psql and drivers learn about the server at startup.
const SERVER_VERSION: &str = concat!("15.0 (ebbflow ", env!("CARGO_PKG_VERSION"), ")");

/// State shared by every connection of one [`serve`](super::serve) loop.
pub(super) struct Server {
    factory: Arc<dyn SessionFactory>,
    /// Process ids and secret keys for BackendKeyData. Cancel requests are
    /// accepted and ignored, but clients expect the key.
    pids: RandomPidSecretKeyGenerator,
    /// Whether users without a password may connect (loopback listener).
    trust_passwordless: bool,
}

impl Server {
    pub(super) fn new(factory: Arc<dyn SessionFactory>, trust_passwordless: bool) -> Self {
        Server {
            factory,
            pids: RandomPidSecretKeyGenerator::default(),
            trust_passwordless,
        }
    }
}

/// The connection's session, set once the startup packet has named the
/// user and database. pgwire only routes queries after startup, so an
/// empty slot afterwards is a bug, reported as an internal error.
pub(super) type SessionSlot = Arc<OnceLock<Arc<dyn Session>>>;

pub(super) fn session_of(slot: &SessionSlot) -> PgWireResult<Arc<dyn Session>> {
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
            parser: Arc::new(Parser::new(session.clone())),
            session,
            copy: parking_lot::Mutex::new(None),
            scram: parking_lot::Mutex::new(None),
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

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.0.clone()
    }
}

/// One client connection: implements pgwire's startup, simple-query and
/// extended-query handlers (in `simple.rs` and `extended.rs`).
pub(super) struct Connection {
    server: Arc<Server>,
    session: SessionSlot,
    /// Runs Parse: describes the statement through the same session.
    pub(super) parser: Arc<Parser>,
    /// The `COPY … FROM STDIN` waiting for its data, if any.
    pub(super) copy: parking_lot::Mutex<Option<super::copy::PendingCopy>>,
    /// The SCRAM exchange of a user with a password, during startup.
    scram: parking_lot::Mutex<Option<super::auth::Scram>>,
}

impl Connection {
    pub(super) fn session(&self) -> PgWireResult<Arc<dyn Session>> {
        session_of(&self.session)
    }
}

/// The one place a [`FrontendError`] becomes an ErrorResponse.
pub(super) fn error_info(e: FrontendError) -> ErrorInfo {
    let mut info = ErrorInfo::new(
        "ERROR".to_owned(),
        crate::sqlstate::sqlstate(e.kind()).to_owned(),
        e.to_string(),
    );
    info.severity_nonlocalized = Some("ERROR".to_owned());
    info.detail = e.detail().map(str::to_owned);
    info.hint = e.hint().map(str::to_owned);
    info
}

pub(super) fn user_error(e: FrontendError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

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
        let time_zone = meta
            .get("TimeZone")
            .and_then(|tz| Zone::for_setting(tz))
            .map_or_else(|| "UTC".to_owned(), |(_, shown)| shown);
        let params = [
            ("server_version", SERVER_VERSION.to_owned()),
            ("server_encoding", "UTF8".to_owned()),
            ("client_encoding", "UTF8".to_owned()),
            ("DateStyle", "ISO, MDY".to_owned()),
            ("IntervalStyle", "postgres".to_owned()),
            ("TimeZone", time_zone),
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
        let startup = match message {
            PgWireFrontendMessage::Startup(startup) => startup,
            PgWireFrontendMessage::PasswordMessageFamily(m) => {
                let user = client
                    .metadata()
                    .get(METADATA_USER)
                    .cloned()
                    .unwrap_or_default();
                let Some(state) = self.scram.lock().take() else {
                    return Err(super::auth::auth_failed(&user));
                };
                return match super::auth::step(client, &user, state, m).await? {
                    Some(next) => {
                        *self.scram.lock() = Some(next);
                        Ok(())
                    }
                    None => self.open_session(client, user).await,
                };
            }
            _ => return Ok(()),
        };
        protocol_negotiation(client, &startup).await?;
        save_startup_parameters_to_metadata(client, &startup);
        let Some(user) = client.metadata().get(METADATA_USER).cloned() else {
            let mut info = ErrorInfo::new(
                "FATAL".to_owned(),
                crate::sqlstate::sqlstate(ErrorKind::InvalidAuthorizationSpecification).to_owned(),
                "no PostgreSQL user name specified in startup packet".to_owned(),
            );
            info.severity_nonlocalized = Some("FATAL".to_owned());
            return Err(PgWireError::UserError(Box::new(info)));
        };
        match self.server.factory.password_verifier(&user) {
            Some(verifier) => {
                let state = super::auth::start(client, &user, &verifier).await?;
                *self.scram.lock() = Some(state);
                return Ok(());
            }
            None if !self.server.trust_passwordless => {
                return Err(super::auth::auth_failed(&user));
            }
            None => {}
        }
        self.open_session(client, user).await
    }
}

/// Send ParameterStatus `TimeZone` if the statement just run changed it,
/// as PostgreSQL reports the settings clients track.
pub(super) async fn report_time_zone<C>(
    client: &mut C,
    session: &dyn Session,
    before: &str,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let now = session.time_zone_setting();
    if now != before {
        let status = ParameterStatus::new("TimeZone".to_owned(), now);
        client
            .send(PgWireBackendMessage::ParameterStatus(status))
            .await?;
    }
    Ok(())
}

impl Connection {
    /// Authenticated: the session, BackendKeyData, parameters, ready.
    async fn open_session<C>(&self, client: &mut C, user: String) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let database = client
            .metadata()
            .get(METADATA_DATABASE)
            .cloned()
            .unwrap_or_else(|| user.clone());
        let (pid, secret_key) = self.server.pids.generate(&*client);
        client.set_pid_and_secret_key(pid, secret_key);
        // Startup happens once per connection, so the slot is empty here.
        let session = self.server.factory.new_session(&user, &database);
        // A `TimeZone` in the startup packet (pgJDBC sends the JVM's) is
        // the session's, if it is a valid one.
        if let Some(tz) = client.metadata().get("TimeZone").cloned() {
            if Zone::for_setting(&tz).is_some() {
                let _ = session
                    .run_simple(&format!("SET timezone = '{}'", tz.replace('\'', "''")))
                    .await;
            }
        }
        let _ = self.session.set(session);
        finish_authentication(client, &ServerParameters).await
    }
}
